#!/usr/bin/python3
"""bench.py - the Python package's reads beside redis-py's, in one run.

What: one filter in one ringbloomd, queried for the same keys (half of
them added) by
  - ringbloom: Filter.contains in a Python loop, `key in filter`,
    contains_many of the whole list and of 100-key batches, and
    Ring.lookup in a loop (all from shared memory, no round trip);
  - redis-py over the daemon's socket: BF.EXISTS one round trip per key,
    BF.EXISTS pipelined 100 commands per round trip, BF.MEXISTS of 100
    keys per round trip, and BF.MEXISTS of 100 keys pipelined 10 commands
    per round trip.
Each is repeated (--repeats) and reported as keys/s: median and spread
(min-max); the answers of every method are checked equal.  Last line:
contains_many against the best 100-key BF.MEXISTS figure, against the
issue's target (20x).

Usage (from the build tree; not part of make check):
  /usr/bin/python3 python/bench.py [--daemon ./daemon/ringbloomd]
      [--keys 200000] [--repeats 5] [--capacity N]
  /usr/bin/python3 python/bench.py --instance NAME --socket PATH   (a running daemon)
Without --instance it starts a private daemon (a temporary directory,
removed at the end).  The package must be importable (pip install
./python, or PYTHONPATH=its build/lib.* directory); redis-py is Debian's
python3-redis.
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

# Not the sources beside this file (python/ringbloom has no built
# extension): the installed package, or the one PYTHONPATH names.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import ringbloom  # noqa: E402

try:
    import redis  # noqa: E402
except ImportError:
    sys.exit("bench.py: redis-py not found (Debian package python3-redis)")


def start_daemon(path):
    """A private ringbloomd: (instance, socket, process, directory)."""
    d = tempfile.mkdtemp(prefix="rbpybench.")
    inst = "pybench%d" % os.getpid()
    sock = os.path.join(d, "s.sock")
    with open(os.path.join(d, "conf"), "w") as f:
        f.write("instance %s\nsocket %s\ndir %s/state\npidfile %s/pid\n" % (inst, sock, d, d))
    proc = subprocess.Popen([path, "-f", "-c", os.path.join(d, "conf")],
                            stderr=open(os.path.join(d, "daemon.log"), "w"))
    for _ in range(400):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            s.close()
            return inst, sock, proc, d
        except OSError:
            time.sleep(0.025)
    proc.kill()
    sys.exit("bench.py: the daemon did not start; see %s/daemon.log" % d)


def stop_daemon(inst, proc, d):
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    try:
        os.unlink("/dev/shm/ringbloom." + inst)
    except OSError:
        pass
    shutil.rmtree(d, ignore_errors=True)


def measure(fn, nkeys, repeats):
    """fn() over nkeys keys, repeats times: (median, min, max) keys/s and
    fn's last answer."""
    rates = []
    ans = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        ans = fn()
        rates.append(nkeys / (time.perf_counter() - t0))
    return (statistics.median(rates), min(rates), max(rates)), ans


def chunks(seq, n):
    return [seq[i:i + n] for i in range(0, len(seq), n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--daemon", default="./daemon/ringbloomd")
    ap.add_argument("--instance")
    ap.add_argument("--socket")
    ap.add_argument("--keys", type=int, default=200000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--capacity", type=int, default=0,
                    help="the filter's capacity (default: --keys); a large one makes "
                         "the filter outgrow the caches")
    a = ap.parse_args()

    own = a.instance is None
    if own:
        inst, sock, proc, d = start_daemon(a.daemon)
    else:
        inst, sock = a.instance, a.socket or ringbloom.socket_path(a.instance)
    try:
        run(inst, sock, a.keys, a.repeats, a.capacity or a.keys)
    finally:
        if own:
            stop_daemon(inst, proc, d)


def run(inst, sock, nkeys, repeats, capacity):
    name = "pybench-%d" % os.getpid()
    cl = ringbloom.Client(inst, socket=sock)
    cl.bf_reserve(name, 0.01, capacity)
    keys = ["https://example.org/item/%d?ref=%d" % (i, i * 7919 % 1000) for i in range(nkeys)]
    cl.bf_madd(name, keys[::2])
    for n in ("bench-a", "bench-b", "bench-c"):
        try:
            cl.ring_add(n)
        except ringbloom.ReplyError:
            pass
    f = ringbloom.Filter(inst, name, socket=sock)
    ring = ringbloom.Ring(f.segment)
    r = redis.Redis(unix_socket_path=sock)
    # The round-trip-per-key method gets fewer keys: it is ~10x slower.
    few = keys[:max(1000, nkeys // 10)]

    def py_contains():
        c = f.contains
        return [c(k) for k in keys]

    def py_in():
        return [k in f for k in keys]

    def many():
        return f.contains_many(keys)

    def many100():
        out = []
        for c in chunks(keys, 100):
            out += f.contains_many(c)
        return out

    def lookup():
        lk = ring.lookup
        return [lk(k) for k in keys]

    def exists1():
        return [r.execute_command("BF.EXISTS", name, k) == 1 for k in few]

    def exists_pipe():
        out = []
        for c in chunks(keys, 100):
            p = r.pipeline(transaction=False)
            for k in c:
                p.execute_command("BF.EXISTS", name, k)
            out += [x == 1 for x in p.execute()]
        return out

    def mexists():
        out = []
        for c in chunks(keys, 100):
            out += [x == 1 for x in r.execute_command("BF.MEXISTS", name, *c)]
        return out

    def mexists_pipe():
        out = []
        for cc in chunks(chunks(keys, 100), 10):
            p = r.pipeline(transaction=False)
            for c in cc:
                p.execute_command("BF.MEXISTS", name, *c)
            for res in p.execute():
                out += [x == 1 for x in res]
        return out

    rows = [
        ("ringbloom Filter.contains (Python loop)", py_contains, nkeys),
        ("ringbloom `key in filter` (Python loop)", py_in, nkeys),
        ("ringbloom contains_many (all keys)", many, nkeys),
        ("ringbloom contains_many (100-key calls)", many100, nkeys),
        ("ringbloom Ring.lookup (Python loop)", lookup, nkeys),
        ("redis-py BF.EXISTS (a round trip per key)", exists1, len(few)),
        ("redis-py BF.EXISTS pipeline (100 per trip)", exists_pipe, nkeys),
        ("redis-py BF.MEXISTS (100 keys per trip)", mexists, nkeys),
        ("redis-py BF.MEXISTS pipeline (10 x 100 keys)", mexists_pipe, nkeys),
    ]
    results = {}
    answers = {}
    for label, fn, n in rows:
        results[label], answers[label] = measure(fn, n, repeats)
    ref = answers["ringbloom contains_many (all keys)"]
    for label, ans in answers.items():
        if "lookup" in label:
            continue
        want = ref[:len(ans)]
        if ans != want:
            sys.exit("bench.py: %s answered differently from contains_many" % label)
    present = sum(ref)
    print("ringbloom %s (Python %s), %d keys (%d present), filter of %d bytes, %d repeats; "
          "keys/s median (min-max)" % (ringbloom.version(), sys.version.split()[0], nkeys,
                                       present, f.info()["bytes"], repeats))
    base = results["ringbloom contains_many (all keys)"][0]
    for label, _, n in rows:
        med, lo, hi = results[label]
        print("  %-46s %12s  (%s-%s)  contains_many / this: %6.1fx"
              % (label, "{:,.0f}".format(med), "{:,.0f}".format(lo), "{:,.0f}".format(hi),
                 base / med))
    best = max(results["redis-py BF.MEXISTS (100 keys per trip)"][0],
               results["redis-py BF.MEXISTS pipeline (10 x 100 keys)"][0])
    ratio = base / best
    print("contains_many is %.1fx the best 100-key BF.MEXISTS figure per key (target 20x): %s"
          % (ratio, "met" if ratio >= 20 else "NOT met"))


if __name__ == "__main__":
    main()
