#!/usr/bin/python3
"""bench_client.py - ringbloom.Client's writes, before and after it moved
onto redis-py, side by side in one run.

What: one daemon, one Bloom filter per method and repetition (so every
add is new), and these clients doing the same adds:
  - ringbloom.Client (redis-py underneath: hiredis's parser when
    python3-hiredis is installed, and again with redis-py's pure-Python
    parser);
  - the old hand-written client (--old: a copy of the former
    python/ringbloom/client.py, e.g. `git show 3e82e8d:python/ringbloom/client.py`),
    if given;
  - plain redis.Redis(unix_socket_path=...).execute_command and its
    pipeline(transaction=False), for reference.
Each does --adds single BF.ADD calls (a round trip each), the same keys
as BF.ADD pipelined 100 per round trip, and BF.MADD of 1,000 keys,
pipelined 10 per round trip (Client.bf_madd).  Every method is run
--repeats times, the methods interleaved within a repetition so load on
the machine hits them alike; reported as calls/s (or keys/s): median and
min-max, and the ratio of each median to the old client's (else to
ringbloom.Client's).  Every answer is checked (all True: every key new).

Usage (from the build tree; not part of make check):
  /usr/bin/python3 python/bench_client.py [--daemon ./daemon/ringbloomd]
      [--adds 20000] [--repeats 5] [--old OLD_CLIENT.py]
The package must be importable (pip install ./python, or PYTHONPATH).
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time

from bench import start_daemon, stop_daemon  # also drops python/ from sys.path

import ringbloom  # noqa: E402
import ringbloom._redispy  # noqa: E402
import redis  # noqa: E402
from redis.connection import PythonParser  # noqa: E402


def load_old(path):
    """The former client.py as module ringbloom._old_client (its relative
    imports resolve in the installed package)."""
    spec = importlib.util.spec_from_file_location("ringbloom._old_client", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


class PurePythonParser(PythonParser):
    """redis-py's pure-Python parser with ringbloom.Client's parse_error."""
    parse_error = ringbloom._redispy._Parser.parse_error


def python_parser_client(inst, sock):
    c = ringbloom.Client(inst, socket=sock)
    c.close()
    c._redis = redis.Redis(connection_pool=redis.ConnectionPool(
        connection_class=ringbloom._redispy._Connection, parser_class=PurePythonParser,
        path=sock, socket_timeout=c.timeout, max_connections=1))
    c._conn = c._redis.connection_pool.get_connection("PING")
    return c


class PlainRedis:
    """redis.Redis itself, in the Client's interface."""

    def __init__(self, sock):
        self.r = redis.Redis(unix_socket_path=sock)

    def execute(self, *args):
        return self.r.execute_command(*args)

    def pipeline(self, commands):
        p = self.r.pipeline(transaction=False)
        for c in commands:
            p.execute_command(*c)
        return p.execute()

    def bf_madd(self, name, keys, batch=1000):
        out = []
        for i in range(0, len(keys), batch * 10):
            part = keys[i:i + batch * 10]
            for r in self.pipeline([("BF.MADD", name, *part[j:j + batch])
                                    for j in range(0, len(part), batch)]):
                out.extend(x == 1 for x in r)
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--daemon", default="./daemon/ringbloomd")
    ap.add_argument("--adds", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--old")
    a = ap.parse_args()
    inst, sock, proc, d = start_daemon(a.daemon)
    try:
        run(inst, sock, a)
    finally:
        stop_daemon(inst, proc, d)


def run(inst, sock, a):
    from redis.utils import HIREDIS_AVAILABLE
    clients = []
    if a.old:
        old = load_old(a.old)
        clients.append(("old hand-written client", old.Client(inst, socket=sock)))
    clients.append(("Client (redis-py, %s parser)" % ("hiredis" if HIREDIS_AVAILABLE
                                                       else "Python"),
                    ringbloom.Client(inst, socket=sock)))
    if HIREDIS_AVAILABLE:
        clients.append(("Client (redis-py, Python parser)", python_parser_client(inst, sock)))
    clients.append(("plain redis.Redis", PlainRedis(sock)))
    n = a.adds
    keys = ["https://example.org/item/%d?ref=%d" % (i, i * 7919 % 1000) for i in range(n)]
    madd_keys = keys * 5  # MADD moves more keys per second: give it more

    def single(c, name):
        return [c.execute("BF.ADD", name, k) == 1 for k in keys]

    def piped(c, name):
        out = []
        for i in range(0, n, 100):
            out += [x == 1 for x in c.pipeline([("BF.ADD", name, k) for k in keys[i:i + 100]])]
        return out

    def madd(c, name):
        out = []
        for i in range(0, len(madd_keys), 10000):
            out += c.bf_madd(name, madd_keys[i:i + 10000], batch=1000)
        return out

    tests = [("BF.ADD, one call each (calls/s)", single, n),
             ("BF.ADD, pipelined 100 per trip (calls/s)", piped, n),
             ("BF.MADD 1000 keys, 10 per trip (keys/s)", madd, len(madd_keys))]
    rates = {}
    seq = 0
    for rep in range(a.repeats):
        for tlabel, fn, count in tests:
            for clabel, c in clients:
                seq += 1
                name = "cb-%d-%d" % (os.getpid(), seq)
                c.execute("BF.RESERVE", name, "0.0001", str(len(madd_keys) * 2), "NONSCALING")
                t0 = time.perf_counter()
                ans = fn(c, name)
                dt = time.perf_counter() - t0
                if fn is madd:
                    want = len(set(madd_keys))
                    ok = sum(ans) == want and len(ans) == len(madd_keys)
                else:
                    ok = ans == [True] * n
                if not ok:
                    sys.exit("bench_client.py: %s / %s answered wrongly" % (tlabel, clabel))
                c.execute("DEL", name)
                rates.setdefault((tlabel, clabel), []).append(count / dt)
    print("ringbloom %s, Python %s, redis-py %s, hiredis %s; %d adds, %d repeats, "
          "median (min-max), ratio to the first row's median"
          % (ringbloom.version(), sys.version.split()[0], redis.__version__,
             __import__("hiredis").__version__ if HIREDIS_AVAILABLE else "absent",
             n, a.repeats))
    for tlabel, _, _ in tests:
        print(tlabel)
        base = statistics.median(rates[(tlabel, clients[0][0])])
        for clabel, _ in clients:
            r = rates[(tlabel, clabel)]
            med = statistics.median(r)
            print("  %-36s %10s  (%s-%s)  %5.2fx (%.2f-%.2f)"
                  % (clabel, "{:,.0f}".format(med), "{:,.0f}".format(min(r)),
                     "{:,.0f}".format(max(r)), med / base, min(r) / base, max(r) / base))


if __name__ == "__main__":
    main()
