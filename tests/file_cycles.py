#!/usr/bin/env python3
"""file_cycles.py - fails if two source files depend on each other in a circle,
or if a file depends on one the design keeps it from (FORBIDDEN below: the
clients of the daemon format their requests with hiredis, never with the
server's own encoder).

The dependency graph is read from the object files `make` built, not from
the sources: file A depends on file B when A's object has an undefined
symbol that B's object defines (nm).  A call through a static inline
function of a header compiles into the caller and leaves no symbol, so
those edges are read from the sources: a static inline function defined
in header X.h belongs to the file X.c beside it (the header alone, X.h,
when there is no X.c), and a source or header that calls it (its name
followed by "(", outside comments and literals) depends on that file.
The library is below everything
else and, inside lib/ and daemon/, lower files never call upward: any
strongly connected component of more than one file is a cycle, printed
with the symbols that make each of its edges.

Objects read (in the build directory), in every folder below: lib/**/.libs/*.o
(or lib/**/*.o), daemon/**/*.o, client/, examples/ and tests/harness/ (the launcher
the examples are built with, and the rest of the tests' harness); test
programs' copies of daemon sources (daemon/tests_*) are skipped, and so
is an object whose source is gone (left over from an earlier build).  An object maps to its source by
dropping automake's "<target>-" prefix when the source is named without it.

    file_cycles.py [--builddir DIR] [--srcdir DIR]   check the build
    file_cycles.py --self-test                       check the checker

Exit status 0: no cycle and no forbidden edge; 1: cycles or forbidden
edges (listed); 2: nothing to read.
"""
import glob
import os
import re
import subprocess
import sys


def sccs(edges):
    """Strongly connected components of a graph {node: set(node)} (Tarjan,
    iterative).  Returns a list of sorted lists."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    nodes = set(edges) | {m for ns in edges.values() for m in ns}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                out.append(sorted(comp))
    return out


# (files, file, why): no file matching `files` may depend on `file`.
FORBIDDEN = [
    (r"^(lib/conn/conn\.c|lib/conn/resp_read\.c|client/.*)$", "lib/conn/resp_enc.c",
     "a client of the daemon formats its requests with hiredis (resp_read.c's "
     "rbi_request_format); resp_enc.c is the server's encoder (and the nginx module's)"),
]


def forbidden(deps, rules=FORBIDDEN):
    """[(file, file, why, symbols)]: the edges of deps the rules forbid."""
    out = []
    for pattern, target, why in rules:
        for src in sorted(deps):
            if re.match(pattern, src) and target in deps[src]:
                out.append((src, target, why, sorted(deps[src][target])))
    return out


def cycles(edges):
    """The components of more than one node: the file-level cycles."""
    return [c for c in sccs(edges) if len(c) > 1]


def nm(objs, flags):
    """{object: [symbol, ...]} for every object of objs, from one nm per
    few hundred objects (one per object cost seconds on a busy machine)."""
    out = {obj: [] for obj in objs}
    for i in range(0, len(objs), 200):
        text = subprocess.run(["nm", "-P", "-A"] + flags + objs[i:i + 200], capture_output=True,
                              text=True, check=True).stdout
        for line in text.splitlines():
            obj, sep, rest = line.partition(": ")
            if sep and rest.strip() and obj in out:
                out[obj].append(rest.split()[0])
    return out


def source_of(obj, builddir, srcdir):
    """lib/.libs/librbcore_la-ring.o -> lib/ring/ring.c (relative to srcdir), or
    None if no such source exists (a stale object of a removed file)."""
    rel = os.path.relpath(obj, builddir)
    d = os.path.dirname(rel)
    if os.path.basename(d) == ".libs":
        d = os.path.dirname(d)
    base = os.path.basename(rel)[:-2]
    candidates = [base] + [base[i + 1:] for i, ch in enumerate(base) if ch == "-"]
    for cand in candidates:
        if os.path.exists(os.path.join(srcdir, d, cand + ".c")):
            return os.path.join(d, cand + ".c")
    return None


# A static inline function's definition: its name is the identifier before
# the first "(" after "static inline" (either order, __inline__ too).
INLINE_DEF = re.compile(r"^[ \t]*(?:static\s+(?:__)?inline(?:__)?|(?:__)?inline(?:__)?\s+static)"
                        r"\b[^;{}()]*?\b([A-Za-z_]\w*)\s*\(", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def strip_c(text):
    """text with its comments, string and character literals and
    __attribute__((...)) blanked (line breaks kept), so a name in them is
    no call and an attribute is no function name."""
    blank = lambda t: re.sub(r"[^\n]", " ", t)  # noqa: E731
    code = NOISE.sub(lambda m: blank(m.group(0)), text)
    out, pos = [], 0
    for m in re.finditer(r"\b__attribute__\s*\(", code):
        if m.start() < pos:
            continue
        i, depth = m.end(), 1
        while i < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[i], 0)
            i += 1
        out += [code[pos:m.start()], blank(code[m.start():i])]
        pos = i
    return "".join(out) + code[pos:]


def inline_defs(headers):
    """{name: [header, ...]}: the static inline functions that headers
    ({path: text}) define; a declaration without a body defines none."""
    out = {}
    for path, text in headers.items():
        code = strip_c(text)
        for m in INLINE_DEF.finditer(code):
            i, depth = m.end(), 1
            while i < len(code) and depth:
                depth += {"(": 1, ")": -1}.get(code[i], 0)
                i += 1
            body = re.match(r"[^;{]*([;{]?)", code[i:]).group(1)
            if body == "{":
                out.setdefault(m.group(1), []).append(path)
    return out


def pair_of(header, exists):
    """The file a header's inline functions belong to: X.h -> X.c when
    exists(X.c), else the header itself."""
    c = header[:-2] + ".c"
    return c if exists(c) else header


def inline_deps(files, defs, exists):
    """{file: {file: [name (inline)]}}: for every source or header of files
    ({path: text}; a header stands for its pair_of), the files owning the
    inline functions it calls.  A name defined in several headers (never
    included together) is the one of the caller's directory, else lib/'s."""
    deps = {}
    for path, text in files.items():
        me = pair_of(path, exists) if path.endswith(".h") else path
        for name in sorted(set(CALL.findall(strip_c(text)))):
            homes = defs.get(name, [])
            if len(homes) > 1:
                here = [h for h in homes if os.path.dirname(h) == os.path.dirname(path)]
                homes = here or [h for h in homes if h.startswith("lib/")] or homes
            for home in homes:
                owner = pair_of(home, exists)
                if owner != me:
                    deps.setdefault(me, {}).setdefault(owner, []).append(name + " (inline)")
    return deps


def read_tree(srcdir, sources):
    """{path: text} of the sources and of the headers beside them (and the
    public headers, lib/ringbloom/), relative to srcdir."""
    dirs = {os.path.dirname(s) for s in sources} | {os.path.join("lib", "ringbloom")}
    paths = set(sources)
    for d in dirs:
        paths.update(os.path.relpath(h, srcdir)
                     for h in glob.glob(os.path.join(srcdir, d, "*.h")))
    out = {}
    for rel in sorted(paths):
        with open(os.path.join(srcdir, rel), errors="replace") as f:
            out[rel] = f.read()
    return out


def objects(builddir):
    libs = glob.glob(os.path.join(builddir, "lib", "**", ".libs", "*.o"), recursive=True)
    objs = libs or glob.glob(os.path.join(builddir, "lib", "**", "*.o"), recursive=True)
    for d in ("daemon", "client", "examples", os.path.join("tests", "harness")):
        objs += [o for o in glob.glob(os.path.join(builddir, d, "**", "*.o"), recursive=True)
                 if not os.path.basename(o).startswith("tests_")]
    return sorted(objs)


def graph(builddir, srcdir):
    """{file: {file: [symbols]}} from the objects' symbol tables, and the
    static inline calls read from the sources."""
    defined, undefined = {}, {}
    srcs = {obj: source_of(obj, builddir, srcdir) for obj in objects(builddir)}
    objs = [obj for obj, src in srcs.items() if src is not None]
    exported, needed = nm(objs, ["--defined-only", "-g"]), nm(objs, ["-u"])
    for obj in objs:
        for sym in exported[obj]:
            defined.setdefault(sym, set()).add(srcs[obj])
        undefined.setdefault(srcs[obj], set()).update(needed[obj])
    deps = {}
    for src, syms in undefined.items():
        for sym in syms:
            owners = defined.get(sym, set()) - {src}
            if len(owners) > 1:
                # The same name in several programs (never linked together):
                # the one in src's own directory, else the library's.
                here = {o for o in owners if os.path.dirname(o) == os.path.dirname(src)}
                owners = here or {o for o in owners if o.startswith("lib/")} or owners
            for owner in owners:
                deps.setdefault(src, {}).setdefault(owner, []).append(sym)
    files = read_tree(srcdir, sorted(undefined))
    exists = lambda rel: os.path.exists(os.path.join(srcdir, rel))  # noqa: E731
    for src, owners in inline_deps(files, inline_defs(files), exists).items():
        for owner, names in owners.items():
            deps.setdefault(src, {}).setdefault(owner, []).extend(names)
    return deps


def report(deps):
    found = cycles({a: set(bs) for a, bs in deps.items()})
    for comp in found:
        print("cycle: " + " <-> ".join(comp))
        members = set(comp)
        for a in comp:
            for b in sorted(set(deps.get(a, {})) & members):
                print("  %s -> %s: %s" % (a, b, ", ".join(sorted(deps[a][b])[:6])))
    return found


def self_test():
    """The checker finds a planted cycle and passes a layered graph, and
    reads static inline calls as edges."""
    layered = {"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    two = {"x": {"y"}, "y": {"x"}, "p": {"q"}, "q": {"p", "x"}}
    ok = (cycles(layered) == [] and cycles(ring) == [["a", "b", "c"]] and
          sorted(cycles(two)) == [["p", "q"], ["x", "y"]])
    # Static inline calls: up.c's object calls low.c (an nm edge); low.c
    # calls up.h's inline, so the two are a cycle nm alone cannot see.  A
    # name in a comment or a string, or a declaration without a body, is
    # no edge; a header without a .c is its own file.
    files = {
        "lib/low.h": "/* low_get(x) is cheap */\nstatic inline int low_get(int x)\n{\n"
                     "    return x;\n}\nstatic inline int low_decl(int x);\n",
        "lib/up.h": "static inline __attribute__((unused)) int\nup_peek(void) { return 1; }\n",
        "lib/solo.h": "inline static void solo(void)\n{\n}\n",
        "lib/low.c": '#include "low.h"\nint low_fn(void) { return up_peek(); }\n',
        "lib/up.c": "int up_fn(void) { return low_fn(); }\n",
        "lib/mid.c": 'const char *s = "low_get(1)";\nint mid(void) { return low_decl(1); }\n',
        "lib/top.c": "int top(void) { solo(); return low_get (2); }\n",
    }
    defs = inline_defs(files)
    deps = inline_deps(files, defs, lambda rel: rel in files)
    graph_ = {a: set(bs) for a, bs in deps.items()}
    graph_.setdefault("lib/up.c", set()).add("lib/low.c")
    ok = ok and (defs == {"low_get": ["lib/low.h"], "up_peek": ["lib/up.h"],
                          "solo": ["lib/solo.h"]} and
                 deps == {"lib/low.c": {"lib/up.c": ["up_peek (inline)"]},
                          "lib/top.c": {"lib/low.c": ["low_get (inline)"],
                                        "lib/solo.h": ["solo (inline)"]}} and
                 cycles(graph_) == [["lib/low.c", "lib/up.c"]])
    # A forbidden edge is found, an allowed one is not.
    rules = [(r"^client/.*$", "lib/enc.c", "why")]
    ok = ok and (forbidden({"client/a.c": {"lib/enc.c": ["e"]}, "daemon/b.c": {"lib/enc.c": ["e"]},
                            "client/c.c": {"lib/read.c": ["r"]}}, rules) ==
                 [("client/a.c", "lib/enc.c", "why", ["e"])])
    print("self-test: %s" % ("ok" if ok else "FAILED"))
    return ok


def main(argv):
    builddir, srcdir = ".", os.environ.get("srcdir", ".")
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--self-test":
            return 0 if self_test() else 1
        if a == "--builddir" and args:
            builddir = args.pop(0)
        elif a == "--srcdir" and args:
            srcdir = args.pop(0)
        else:
            print(__doc__)
            return 2
    if not self_test():
        return 1
    objs = objects(builddir)
    if not objs:
        print("no object files under %s: build first" % builddir)
        return 2
    deps = graph(builddir, srcdir)
    edges = sum(len(bs) for bs in deps.values())
    found = report(deps)
    banned = forbidden(deps)
    for src, target, why, syms in banned:
        print("forbidden: %s -> %s (%s): %s" % (src, target, ", ".join(syms[:6]), why))
    print("%d object files, %d file-level dependencies, %d cycle(s), %d forbidden "
          "edge(s)" % (len(objs), edges, len(found), len(banned)))
    return 1 if found or banned else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
