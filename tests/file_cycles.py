#!/usr/bin/env python3
"""file_cycles.py - fails if two source files depend on each other in a circle.

The dependency graph is read from the object files `make` built, not from
the sources: file A depends on file B when A's object has an undefined
symbol that B's object defines (nm).  So a call through a static inline
function of a header is no edge (it compiles into A), and a call to a
function defined in another .c is one.  The library is below everything
else and, inside lib/ and daemon/, lower files never call upward: any
strongly connected component of more than one file is a cycle, printed
with the symbols that make each of its edges.

Objects read (in the build directory): lib/.libs/*.o (or lib/*.o),
daemon/*.o, client/*.o, examples/*.o and tests/harness/*.o (the launcher
the examples are built with, and the rest of the tests' harness); test
programs' copies of daemon sources (daemon/tests_*) are skipped, and so
is an object whose source is gone (left over from an earlier build).  An object maps to its source by
dropping automake's "<target>-" prefix when the source is named without it.

    file_cycles.py [--builddir DIR] [--srcdir DIR]   check the build
    file_cycles.py --self-test                       check the checker

Exit status 0: no cycle; 1: cycles (listed); 2: nothing to read.
"""
import glob
import os
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


def cycles(edges):
    """The components of more than one node: the file-level cycles."""
    return [c for c in sccs(edges) if len(c) > 1]


def nm(obj, flags):
    out = subprocess.run(["nm", "-P"] + flags + [obj], capture_output=True, text=True,
                         check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def source_of(obj, builddir, srcdir):
    """lib/.libs/librbcore_la-ring.o -> lib/ring.c (relative to srcdir), or
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


def objects(builddir):
    libs = glob.glob(os.path.join(builddir, "lib", ".libs", "*.o"))
    objs = libs or glob.glob(os.path.join(builddir, "lib", "*.o"))
    for d in ("daemon", "client", "examples", os.path.join("tests", "harness")):
        objs += [o for o in glob.glob(os.path.join(builddir, d, "*.o"))
                 if not os.path.basename(o).startswith("tests_")]
    return sorted(objs)


def graph(builddir, srcdir):
    """{file: {file: [symbols]}} from the objects' symbol tables."""
    defined, undefined = {}, {}
    for obj in objects(builddir):
        src = source_of(obj, builddir, srcdir)
        if src is None:
            continue
        for sym in nm(obj, ["--defined-only", "-g"]):
            defined.setdefault(sym, set()).add(src)
        undefined.setdefault(src, set()).update(nm(obj, ["-u"]))
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
    """The checker finds a planted cycle and passes a layered graph."""
    layered = {"a": {"b"}, "b": {"c"}, "c": set(), "d": {"a", "c"}}
    ring = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    two = {"x": {"y"}, "y": {"x"}, "p": {"q"}, "q": {"p", "x"}}
    ok = (cycles(layered) == [] and cycles(ring) == [["a", "b", "c"]] and
          sorted(cycles(two)) == [["p", "q"], ["x", "y"]])
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
    print("%d object files, %d file-level dependencies, %d cycle(s)" % (len(objs), edges,
                                                                          len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
