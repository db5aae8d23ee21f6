#!/usr/bin/env python3
"""code_shape.py - fails if the sources outgrow the sizes the design allows.

Two rules (docs/design.md, "Where to change what"):
  - no function in lib/ or daemon/ longer than 80 lines (from the line of
    its opening brace to the line of its closing one), unless the comment
    just above it says why, with a line containing "Long:";
  - no source file (.c, .h, .py, .sh) of lib/, daemon/, client/, nginx/,
    examples/ or python/ (the package: its C extension and its modules)
    longer than 700 lines (tests are exempt).

Functions are found the way this project writes them (and nginx, whose
style the module follows): the body opens with a "{" alone at the start of
a line and closes with a "}" alone at the start of a line; the name is the
identifier before the first "(" of the lines above the "{".

    code_shape.py [--srcdir DIR]    check the tree (default: $srcdir or .)
    code_shape.py --self-test       check the checker

Exit status 0: within the rules; 1: a rule broken (each case listed).
"""
import os
import re
import subprocess
import sys
import tempfile

MAX_FUNCTION = 80
MAX_FILE = 700
FUNCTION_DIRS = ("lib", "daemon")
FILE_DIRS = ("lib", "daemon", "client", "nginx", "examples", "python")
SOURCE = re.compile(r"\.(c|h|py|sh)$")


def functions(lines):
    """(name, first line, length, preceding comment) of each function body."""
    out = []
    for i, line in enumerate(lines):
        if line.rstrip("\n") != "{":
            continue
        j = i - 1
        while j >= 0 and "(" not in lines[j] and lines[j].strip():
            j -= 1
        m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", lines[j]) if j >= 0 else None
        end = i + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        comment = []
        k = j - 1
        while k >= 0 and lines[k].strip() and not lines[k].startswith("}"):
            comment.append(lines[k])
            k -= 1
        out.append((m.group(1) if m else "?", i + 1, end - i + 1, "".join(comment)))
    return out


def long_functions(path, lines):
    return ["%s:%d: %s is %d lines (max %d; say why in a comment with 'Long:')"
            % (path, first, name, length, MAX_FUNCTION)
            for name, first, length, comment in functions(lines)
            if length > MAX_FUNCTION and "long:" not in comment.lower()]


def tracked(srcdir):
    """The files git tracks, or every file below srcdir (a release tarball)."""
    try:
        out = subprocess.run(["git", "-C", srcdir, "ls-files"], capture_output=True,
                             text=True, check=True).stdout.split()
        if out:
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for root, _, files in os.walk(srcdir):
        for f in files:
            found.append(os.path.relpath(os.path.join(root, f), srcdir))
    return found


def check(srcdir):
    problems = []
    for rel in sorted(tracked(srcdir)):
        if not SOURCE.search(rel) or rel.split("/")[0] not in FILE_DIRS:
            continue
        path = os.path.join(srcdir, rel)
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as f:
            lines = f.readlines()
        if len(lines) > MAX_FILE:
            problems.append("%s: %d lines (max %d)" % (rel, len(lines), MAX_FILE))
        if rel.endswith(".c") and rel.split("/")[0] in FUNCTION_DIRS:
            problems += long_functions(rel, lines)
    return problems


def self_test():
    """A planted long function is found, a short one and a justified one not."""
    body = ["    x++;\n"] * (MAX_FUNCTION + 5)
    src = (["/* short */\n", "static int f(void)\n", "{\n", "    return 0;\n", "}\n", "\n",
            "/* too long */\n", "static int g(int a,\n", "             int b)\n", "{\n"] + body +
           ["}\n", "\n", "/* Long: one loop the compiler keeps in registers. */\n",
            "int h(void)\n", "{\n"] + body + ["}\n"])
    found = long_functions("t.c", src)
    ok = len(found) == 1 and " g is " in found[0]
    # The file rule: a planted long file of the Python package (C and .py)
    # and of lib/ is found, a short one and a test not.
    with tempfile.TemporaryDirectory() as tree:
        for rel, n in (("lib/short.c", 10), ("lib/long.h", MAX_FILE + 1),
                       ("python/ringbloom/_long.c", MAX_FILE + 1),
                       ("python/ringbloom/long.py", MAX_FILE + 1), ("python/setup.py", MAX_FILE),
                       ("tests/check_long.c", MAX_FILE + 1)):
            os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
            with open(os.path.join(tree, rel), "w") as f:
                f.write("x\n" * n)
        files = sorted(p.split(":")[0] for p in check(tree))
    ok = ok and files == ["lib/long.h", "python/ringbloom/_long.c", "python/ringbloom/long.py"]
    print("self-test: %s" % ("ok" if ok else "FAILED: %s %s" % (found, files)))
    return ok


def main(argv):
    srcdir = os.environ.get("srcdir", ".")
    if argv[:1] == ["--self-test"]:
        return 0 if self_test() else 1
    if argv[:1] == ["--srcdir"] and len(argv) > 1:
        srcdir = argv[1]
    elif argv:
        print(__doc__)
        return 2
    if not self_test():
        return 1
    problems = check(srcdir)
    for p in problems:
        print(p)
    print("%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
