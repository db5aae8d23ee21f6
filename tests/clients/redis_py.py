"""tests/clients/redis_py.py - the client matrix's redis-py (Debian's
python3-redis) against a running ringbloomd, connected with its defaults
(redis.Redis(unix_socket_path=...): RESP2, no HELLO): plain BF.* commands,
the r.bf() helpers (create, which is BF.RESERVE, and add / madd / exists /
mexists / info), the default pipeline() (a MULTI/EXEC transaction), a
pipeline(transaction=False), CLIENT INFO through its parser, DEL and
EXISTS, every answer compared exactly, types included.  RESP3
(protocol=3) is run too when the installed redis-py has it (5.0 and
later); with an older one (Debian 12 has 4.3.4) a line says it was not.
Usage: /usr/bin/python3 redis_py.py SOCKET.  Prints "FAIL ..." for each
failed check and one line per client: "RESULT <checks> <failures> <client>".
"""
import sys

import redis

SOCK = sys.argv[1]
state = {"name": "", "checks": 0, "failures": 0}


def eq(got, want, what):
    """One check: GOT equals WANT and has its type (1 is not True)."""
    state["checks"] += 1
    same = type(got) is type(want) and got == want
    if same and isinstance(got, (list, tuple)):
        same = all(type(a) is type(b) for a, b in zip(got, want))
    if not same:
        state["failures"] += 1
        print("FAIL %s: %s: got %r, want %r" % (state["name"], what, got, want))


def run(r, resp3):
    """The checks on client R (RESP3 if resp3)."""
    k = "redis-py-%d" % (3 if resp3 else 2)
    t = (lambda v: bool(v)) if resp3 else (lambda v: v)  # RESP3 answers booleans
    info = r.client_info()
    eq((info["resp"], info["lib-name"], info["multi"]), ("3" if resp3 else "2", "", -1),
       "client_info() parses CLIENT INFO")
    # Plain commands first: r.bf() installs its reply callbacks on r.
    eq(r.delete(k), 0, "DEL of a missing key")
    eq(r.execute_command("BF.RESERVE", k, "0.01", "100"), b"OK", "BF.RESERVE")
    try:
        r.execute_command("BF.RESERVE", k, "0.01", "100")
        eq("no error", "ResponseError", "BF.RESERVE of an existing filter")
    except redis.ResponseError as e:
        eq(str(e), "item exists", "BF.RESERVE of an existing filter")
    eq(r.execute_command("BF.ADD", k, "a"), t(1), "BF.ADD")
    eq(r.execute_command("BF.MADD", k, "a", "b"), [t(0), t(1)], "BF.MADD")
    eq(r.execute_command("BF.EXISTS", k, "b"), t(1), "BF.EXISTS")
    eq(r.execute_command("BF.MEXISTS", k, "b", "zz"), [t(1), t(0)], "BF.MEXISTS")
    eq(r.execute_command("BF.INFO", k, "ITEMS"), [2], "BF.INFO ITEMS")
    eq(r.delete(k), 1, "DEL")
    bf = r.bf()
    eq(bf.create(k, 0.01, 100), True, "bf().create (BF.RESERVE)")
    eq(bf.add(k, "a"), t(1), "bf().add new")
    eq(bf.add(k, "a"), t(0), "bf().add again")
    eq(bf.madd(k, "a", "b"), [t(0), t(1)], "bf().madd")
    eq(bf.exists(k, "b"), t(1), "bf().exists present")
    eq(bf.exists(k, "zz"), t(0), "bf().exists absent")
    eq(bf.mexists(k, "a", "zz", "b"), [t(1), t(0), t(1)], "bf().mexists")
    bi = bf.info(k)
    eq((bi.capacity, bi.filterNum, bi.insertedNum, bi.expansionRate), (100, 1, 2, 2),
       "bf().info")
    eq(type(bi.size) is int and bi.size > 0, True, "bf().info size is a positive int")
    p = r.pipeline()
    p.execute_command("BF.ADD", k, "c").execute_command("BF.EXISTS", k, "c")
    p.execute_command("BF.MEXISTS", k, "c", "zz").exists(k).type(k)
    eq(p.execute(), [t(1), t(1), [t(1), t(0)], 1, b"MBbloom--"],
       "pipeline() (MULTI/EXEC)")
    p = r.pipeline(transaction=False)
    p.execute_command("BF.ADD", k, "d").execute_command("BF.EXISTS", k, "zz")
    eq(p.execute(), [t(1), t(0)], "pipeline(transaction=False)")
    p = r.pipeline()
    p.execute_command("BF.ADD", k, "e").execute_command("BF.RESERVE", k, "0.01", "100")
    try:
        p.execute()
        eq("no error", "ResponseError", "pipeline() with a failing member")
    except redis.ResponseError as e:
        eq("item exists" in str(e), True, "pipeline() with a failing member: %s" % e)
    eq(bf.exists(k, "e"), t(1), "the transaction's other member ran")
    eq(bf.info(k).insertedNum, 5, "bf().info after the pipelines")
    eq(r.delete(k), 1, "DEL")
    eq(r.exists(k), 0, "EXISTS after DEL")


def main():
    variants = [("redis-py %s (defaults: RESP2)" % redis.__version__, {}, False)]
    if int(redis.__version__.split(".")[0]) >= 5:
        variants.append(("redis-py %s (protocol=3)" % redis.__version__, {"protocol": 3}, True))
    else:
        print("NOTE: redis-py %s has no RESP3 (protocol=3 needs 5.0): RESP3 not run"
              % redis.__version__)
    bad = 0
    for name, kw, resp3 in variants:
        state.update(name=name, checks=0, failures=0)
        r = redis.Redis(unix_socket_path=SOCK, **kw)
        try:
            run(r, resp3)
        except Exception as e:  # a check that raised: one failure, the rest skipped
            state["checks"] += 1
            state["failures"] += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e))
        finally:
            r.close()
        print("RESULT %d %d %s" % (state["checks"], state["failures"], name))
        bad += state["failures"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
