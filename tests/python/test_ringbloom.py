"""test_ringbloom.py - the Python package against a private ringbloomd:
run by tests/python/python.sh (which builds the package, starts the daemon
and passes INSTANCE SOCKET CLI), not alone.

Checks, each counted: Ring.lookup / lookup_n equal `ringbloom lookup`;
Filter.contains, `in` and contains_many equal `ringbloom exists` (and no
added key is ever missed); CuckooFilter, CountMinSketch and HyperLogLog
answer as CF.MEXISTS / CF.COUNT, CMS.QUERY and PFCOUNT do, and a reader on
another kind's name raises WrongType; str and bytes (and bytearray, memoryview) keys
are one key; the library's errors arrive as ringbloom.Error subclasses
with the RB_E* code and rb_strerror's text; contains_many releases the
GIL (another thread runs during it) and close() refuses meanwhile; the
Client's writes, reply types and error texts (the daemon's and a scripted
server's: whole error texts, NOPERM, nil, nested arrays, a reply in pieces,
a timeout, a closed or garbled connection), its lock; Admission; the Scrapy dupefilter,
built by Scrapy's own scheduler from DUPEFILTER_CLASS.  Prints
"Checks: N, Failures: F, Errors: 0" (tests/summarize.sh counts it).
"""

import os
import re
import socket as _socket
import subprocess
import sys
import threading
import time

import ringbloom as rb
from pychecks import check, finish, raises
import redis
from redis.connection import HiredisParser, PythonParser
from redis.utils import HIREDIS_AVAILABLE

INST, SOCK, CLI = sys.argv[1], sys.argv[2], sys.argv[3]



def cli(*args, stdin=None):
    """Runs the CLI on the instance; returns (exit status, stdout bytes)."""
    p = subprocess.run([CLI, "-i", INST, "-s", SOCK] + [a if isinstance(a, bytes) else a.encode()
                                                          for a in args],
                       input=stdin, capture_output=True)
    return p.returncode, p.stdout



client = rb.Client(INST, socket=SOCK)

# ---- the ring -------------------------------------------------------------------
for name, w in (("cache-a:11211", 1), ("cache-b:11211", 2), ("cache-c:11211", 1),
                ("cache-d:11211", 3)):
    client.ring_add(name, w)
ring = rb.Ring(INST, socket=SOCK)
check(sorted(ring.nodes()) == [("cache-a:11211", 1), ("cache-b:11211", 2),
                               ("cache-c:11211", 1), ("cache-d:11211", 3)], "Ring.nodes")
check(ring.stat()["nodes"] == 4 and ring.stat()["mode"] == "xxh3", "Ring.stat")
keys = [("key-%d" % i).encode() for i in range(3000)] + \
    ["é", "日本語", "", "https://example.org/?q=1&r=2"] + [b"\xff\xfe bytes not utf-8"]
rc, out = cli("lookup", "-",
              stdin=b"\n".join(k if isinstance(k, bytes) else k.encode() for k in keys) + b"\n")
lines = out.split(b"\n")[:-1]
check(rc == 0 and len(lines) == len(keys), "ringbloom lookup - answered every key")
want = [ln.rsplit(b"\t", 1)[1].decode() for ln in lines]
got = [ring.lookup(k) for k in keys]
check(got == want, "Ring.lookup equals ringbloom lookup for %d keys" % len(keys))
for k in ("key-1", "é", "https://example.org/?q=1&r=2"):
    rc, out = cli("lookup", k, "-n", "3")
    check(ring.lookup_n(k, 3) == out.decode().split(), "lookup_n(%r, 3) equals lookup -n 3" % k)
check(len(ring.lookup_n("key-1", 10)) == 4 and ring.lookup_n("key-1", 1) == [ring.lookup("key-1")],
      "lookup_n: at most the owners, and n=1 is lookup")
check(ring.lookup("é") == ring.lookup("é".encode()) == ring.lookup(bytearray("é".encode()))
      == ring.lookup(memoryview("é".encode())), "ring: str is its UTF-8 bytes")
check(ring.lookup("a\0b") == ring.lookup(b"a\0b"), "ring: a NUL inside a key")

# ---- filters: contains against the CLI ------------------------------------------------
client.bf_reserve("urls", 0.01, 2000)
added = ["https://example.org/page/%d" % i for i in range(2000)]
new = client.bf_madd("urls", added)
check(new.count(True) >= 1990 and len(new) == 2000, "bf_madd: the keys were new")
f = rb.Filter(INST, "urls", socket=SOCK)
check(f.name == "urls" and f.info()["items"] == new.count(True), "Filter.info items")
probe = added[:1000] + ["https://example.net/other/%d" % i for i in range(1000)]
rc, out = cli("exists", "urls", *probe)
want = [ln.split(b"\t", 1)[0] == b"present" for ln in out.split(b"\n")[:-1]]
check(len(want) == len(probe), "ringbloom exists answered every key")
check([f.contains(k) for k in probe] == want, "Filter.contains equals ringbloom exists")
check([k in f for k in probe] == want, "`in` equals ringbloom exists")
check(f.contains_many(probe) == want, "contains_many equals ringbloom exists")
check(f.contains_many(iter(probe)) == want, "contains_many takes any iterable")
check(all(f.contains_many(added)), "no added key is missed")
check(sum(want[1000:]) < 60, "false positives within reason (%d of 1000)" % sum(want[1000:]))
check(f.contains_many([]) == [], "contains_many of nothing")
client.bf_add("urls", "é")
client.bf_add("urls", b"\xff\x00raw")
check(f.contains("é") and f.contains("é".encode()) and bytearray("é".encode()) in f,
      "filter: str is its UTF-8 bytes")
check(f.contains_many([b"\xff\x00raw", memoryview(b"\xff\x00raw"), "é"]) == [True] * 3,
      "contains_many: bytes, memoryview, str")
check(client.bf_exists("urls", "é") and client.bf_mexists("urls", ["é", "zz-never"])[0],
      "BF.EXISTS / BF.MEXISTS through the Client agree")
seg = rb.Segment(INST, socket=SOCK)
check("urls" in seg.filters() and seg.info()["writer_pid"] > 0, "Segment.filters / info")
f2 = rb.Filter(seg, "urls")
# Against f now, not `want`: the two adds above may have made a probe a
# false positive since `want` was read.
check(f2.segment is seg and f2.contains_many(probe) == f.contains_many(probe),
      "a Filter on a shared Segment")

client.execute("BF.RESERVE", b"bin\xffary", "0.01", "100")
client.bf_add(b"bin\xffary", "k")
fb = rb.Filter(INST, b"bin\xffary", socket=SOCK)
check(fb.name == "bin\udcffary" and fb.contains("k") and not fb.contains("other") and
      fb.name in seg.filters(), "a filter name that is not UTF-8: bytes in, surrogates out")

# ---- errors --------------------------------------------------------------------------------
e = raises(rb.NotFound, rb.Filter, INST, "no-such-filter", socket=SOCK)
check(e is not None and e.code == rb._ringbloom.RB_ENOENT == -3 and e.name == "RB_ENOENT" and
      e.message == rb.strerror(-3) == "no such instance, filter or node" and
      isinstance(e, rb.Error) and isinstance(e, LookupError) and "no-such-filter" in str(e),
      "a missing filter: NotFound, RB_ENOENT, rb_strerror's text (%s)" % e)
e = raises(rb.NotFound, rb.Segment, "no-such-instance-%d" % os.getpid(), owner=os.getuid())
check(e is not None and e.code == -3, "a missing instance: NotFound")
e = raises(rb.PermissionDenied, rb.Segment, INST, owner=os.getuid() + 4242)
check(e is not None and e.code == -24 and e.message == rb.strerror(-24),
      "a segment of another owner: PermissionDenied, RB_EOWNER")
# An owner past the last uid is an OverflowError, never cut to uid_t's 32
# bits (2**40 pinned uid 0, root); a negative one a ValueError.  Ring and
# Filter pass it on.  strerror's code is an int: 2**32 - 3 is not -3.
for big in (2**32 - 1, 2**32, 2**32 + os.getuid(), 2**40, 2**63, 2**64, 2**100):
    check(raises(OverflowError, rb.Segment, INST, owner=big, socket=SOCK) is not None and
          raises(OverflowError, rb.Ring, INST, owner=big, socket=SOCK) is not None and
          raises(OverflowError, rb.Filter, INST, "f", owner=big, socket=SOCK) is not None,
          "owner=%d: OverflowError (Segment, Ring, Filter)" % big)
for neg in (-1, -2**32, -2**70):
    check(raises(ValueError, rb.Segment, INST, owner=neg, socket=SOCK) is not None,
          "owner=%d: ValueError" % neg)
check(raises(OverflowError, rb.strerror, 2**32 - 3) is not None and
      raises(OverflowError, rb.strerror, -2**40) is not None and
      raises(OverflowError, rb.strerror, 2**64) is not None and rb.strerror(-3) != "",
      "strerror of a code past an int: OverflowError")
e = raises(rb.Error, rb.Segment, "bad/name", owner=os.getuid())
check(e is not None and e.code == -2, "a bad instance name: RB_EINVAL")
check(raises(TypeError, f.contains, 42) is not None and
      raises(TypeError, f.contains_many, ["ok", 42]) is not None and
      raises(TypeError, ring.lookup, None) is not None, "a key of another type: TypeError")
check(raises(ValueError, ring.lookup_n, "k", 0) is not None, "lookup_n(k, 0): ValueError")
e = raises(rb.ReplyError, client.bf_reserve, "urls", 0.01, 10)
check(e is not None and e.code == -22 and "exists" in e.reply, "BF.RESERVE twice: ReplyError")
e = raises(rb.ReplyError, client.execute, "NO.SUCH.COMMAND")
check(e is not None and e.reply.startswith("ERR"), "an unknown command: ReplyError")
check(client.ping(), "the connection survives error replies")
e = raises(rb.DaemonError, rb.Client, INST, socket=SOCK + ".nobody")
check(e is not None and e.code == -20 and isinstance(e, ConnectionError),
      "nobody listening: DaemonError, RB_EDAEMON")
with rb.Filter(INST, "urls", socket=SOCK) as g:
    pass
check(raises(ValueError, g.contains, "x") is not None, "a closed Filter: ValueError")

# ---- the other kinds: cuckoo filter, count-min sketch, HyperLogLog ------------------------------
# Each reader answers what the daemon answers for the same name (CF.MEXISTS,
# CF.COUNT, CMS.QUERY, PFCOUNT), read lock-free from shared memory.
client.execute("CF.RESERVE", "cf", "4000")
cf_added = ["cf-key-%d" % i for i in range(1500)]
client.pipeline([("CF.ADD", "cf", k) for k in cf_added])
cf = rb.CuckooFilter(INST, "cf", socket=SOCK)
cf_probe = cf_added[:700] + ["cf-other-%d" % i for i in range(700)]
want = [r == 1 for r in client.execute("CF.MEXISTS", "cf", *cf_probe)]
check(len(want) == len(cf_probe) and all(want[:700]), "CF.MEXISTS answered every key")
check([cf.contains(k) for k in cf_probe] == want, "CuckooFilter.contains equals CF.MEXISTS")
check([k in cf for k in cf_probe] == want, "cuckoo `in` equals CF.MEXISTS")
check(cf.contains_many(cf_probe) == want and cf.contains_many(iter(cf_probe)) == want,
      "CuckooFilter.contains_many equals CF.MEXISTS")
check(all(cf.contains_many(cf_added)) and cf.contains_many([]) == [],
      "no added key is missed by the cuckoo filter")
client.execute("CF.ADD", "cf", "twice")
client.execute("CF.ADD", "cf", "twice")
check([cf.count(k) for k in ("twice", "cf-key-1", "cf-never")] ==
      [client.execute("CF.COUNT", "cf", k) for k in ("twice", "cf-key-1", "cf-never")] and
      cf.count("twice") >= 2, "CuckooFilter.count equals CF.COUNT")
client.execute("CF.DEL", "cf", "cf-key-1")
check(cf.contains("cf-key-1") == (client.execute("CF.EXISTS", "cf", "cf-key-1") == 1),
      "a delete is seen by the reader as by CF.EXISTS")
info = cf.info()
check(info["items"] == len(cf_added) + 2 - 1 and info["deletes"] == 1 and info["fp_bits"] == 8,
      "CuckooFilter.info: items, deletes, fp_bits (%r)" % info)
client.execute("CF.ADD", "cf", "é")
check(cf.contains("é") and cf.contains("é".encode()) and
      cf.contains_many([bytearray("é".encode()), memoryview("é".encode())]) == [True, True],
      "cuckoo: str is its UTF-8 bytes")
check(rb.CuckooFilter(seg, "cf").segment is seg, "a CuckooFilter on a shared Segment")

client.execute("CMS.INITBYDIM", "sk", "2000", "5")
incr = [("sk-%d" % (i % 300), i % 7 + 1) for i in range(3000)]
for i in range(0, len(incr), 500):
    client.execute("CMS.INCRBY", "sk", *[x for kv in incr[i:i + 500] for x in kv])
sk = rb.CountMinSketch(INST, "sk", socket=SOCK)
sk_probe = ["sk-%d" % i for i in range(300)] + ["sk-never-%d" % i for i in range(50)]
want = client.execute("CMS.QUERY", "sk", *sk_probe)
check([sk.query(k) for k in sk_probe] == want, "CountMinSketch.query equals CMS.QUERY")
truth = {}
for k, n in incr:
    truth[k] = truth.get(k, 0) + n
check(all(sk.query(k) >= n for k, n in truth.items()), "a sketch never counts below the truth")
info = sk.info()
check(info["width"] == 2000 and info["depth"] == 5 and info["count"] == sum(truth.values()) and
      info["small"] is False, "CountMinSketch.info (%r)" % info)

els = ["hll-%d" % i for i in range(20000)]
for i in range(0, len(els), 2000):
    client.execute("PFADD", "hl", *els[i:i + 2000])
hl = rb.HyperLogLog(INST, "hl", socket=SOCK)
n = hl.count()
check(n == client.execute("PFCOUNT", "hl") and abs(n - 20000) < 20000 * 0.05,
      "HyperLogLog.count equals PFCOUNT (%d)" % n)
client.execute("PFADD", "hl2", *els[10000:12000], *["hl2-only-%d" % i for i in range(3000)])
check(hl.count("hl2") == client.execute("PFCOUNT", "hl", "hl2") and
      hl.count("hl2", b"hl-missing") == hl.count("hl2") and hl.count() == n,
      "HyperLogLog.count(*others) equals PFCOUNT of the union")
e = raises(rb.WrongType, hl.count, "cf")
check(e is not None and e.code == -29, "a union with a cuckoo filter's name: WrongType")
regs = hl.registers()
check(len(regs) == 16384 and max(regs) <= 51 and 10000 < sum(1 for r in regs if r) < 13000,
      "HyperLogLog.registers: 16384 registers of 0..51")
client.execute("DEL", "hl")
check(hl.count() == 0 and hl.registers() == bytes(16384),
      "a deleted counter counts 0 through its handle")
client.execute("PFADD", "hl", "a", "b", "c")
check(hl.count() == client.execute("PFCOUNT", "hl") == 3,
      "the handle follows a counter made again under its name")

# CountingBloomFilter: the CBF.* filter read from shared memory, as the daemon answers.
client.execute("CBF.RESERVE", "cb", "0.01", "5000")
added = ["cb-%d" % i for i in range(3000)]
for i in range(0, len(added), 500):
    client.execute("CBF.MADD", "cb", *added[i:i + 500])
client.execute("CBF.ADD", "cb", "cb-7")     # twice: its counters 2
cb = rb.CountingBloomFilter(INST, "cb", socket=SOCK)
probe = added[:200] + ["cb-absent-%d" % i for i in range(800)]
want = [bool(x) for x in client.execute("CBF.MEXISTS", "cb", *probe)]
check(cb.contains_many(probe) == want and [cb.contains(k) for k in probe] == want and
      all(k in cb for k in added), "CountingBloomFilter.contains / contains_many / in equal "
      "CBF.MEXISTS, no false negative")
check(cb.count("cb-7") == client.execute("CBF.COUNT", "cb", "cb-7") >= 2,
      "CountingBloomFilter.count equals CBF.COUNT")
client.execute("CBF.DEL", "cb", "cb-7")
check(cb.count("cb-7") == client.execute("CBF.COUNT", "cb", "cb-7") >= 1,
      "a CBF.DEL lowers the key's counters, seen through the handle")
info = cb.info()
check(info["capacity"] == 5000 and info["items"] == 3000 and info["deletes"] == 1 and
      info["counter_bits"] == 4, "CountingBloomFilter.info (%r)" % info)
e = raises(rb.WrongType, rb.CountingBloomFilter, INST, "urls", socket=SOCK)
check(e is not None and e.code == -29, "a CountingBloomFilter on a Bloom filter: WrongType")
e = raises(rb.WrongType, rb.Filter, INST, "cb", socket=SOCK)
check(e is not None and e.code == -29, "a Filter on a counting Bloom filter: WrongType")
check(seg.kind("cb") == "cbf", "Segment.kind of a counting Bloom filter")

# The kind table: Segment.kind names each kind, as TYPE does through the daemon.
kinds = {n: seg.kind(n) for n in ("urls", "cf", "sk", "hl")}
check(kinds == {"urls": "bloom", "cf": "cuckoo", "sk": "cms", "hl": "hyperloglog"} and
      all(n in seg.filters() for n in kinds), "Segment.kind of every kind (%r)" % kinds)
check(raises(rb.NotFound, seg.kind, "no-such-name") is not None, "Segment.kind of a missing name")

# RB_EWRONGTYPE: a reader of one kind on another kind's name.
for cls, name in ((rb.Filter, "cf"), (rb.Filter, "sk"), (rb.CuckooFilter, "urls"),
                  (rb.CuckooFilter, "hl"), (rb.CountMinSketch, "cf"), (rb.HyperLogLog, "urls"),
                  (rb.HyperLogLog, "sk")):
    e = raises(rb.WrongType, cls, INST, name, socket=SOCK)
    check(e is not None and e.code == rb._ringbloom.RB_EWRONGTYPE == -29 and
          e.name == "RB_EWRONGTYPE" and e.message == rb.strerror(-29) and
          isinstance(e, rb.Error) and name in str(e),
          "%s on %r: WrongType, RB_EWRONGTYPE (%s)" % (cls.__name__, name, e))
for cls in (rb.CuckooFilter, rb.CountMinSketch, rb.HyperLogLog):
    e = raises(rb.NotFound, cls, INST, "no-such-name", socket=SOCK)
    check(e is not None and e.code == -3, "%s of a missing name: NotFound" % cls.__name__)
    with cls(INST, {rb.CuckooFilter: "cf", rb.CountMinSketch: "sk",
                    rb.HyperLogLog: "hl"}[cls], socket=SOCK) as g:
        pass
    check(g.segment is None and raises(ValueError, g.info if hasattr(g, "info") else g.count)
          is not None, "a closed %s: ValueError" % cls.__name__)
client.execute("DEL", "sk")
e = raises(rb.NotFound, sk.query, "sk-1")
check(e is not None and "sk" in str(e), "a deleted sketch: NotFound")
check(raises(TypeError, cf.contains, 42) is not None and raises(TypeError, sk.query, 4.2)
      is not None and raises(TypeError, cf.contains_many, ["ok", 42]) is not None,
      "a key of another type: TypeError (cuckoo, sketch)")

# ---- the GIL ---------------------------------------------------------------------------------
big = ["gil-key-%d" % i for i in range(400000)] * 4
count = 0
stop = False


def counter():
    global count
    while not stop:
        count += 1


t = threading.Thread(target=counter)
old = sys.getswitchinterval()
t.start()
time.sleep(0.05)
# The other thread gets the GIL only when it is released or after a
# second's switch interval: it advances during the call only if
# contains_many released it.
sys.setswitchinterval(1.0)
time.sleep(0.01)
before = count
t0 = time.perf_counter()
res = f.contains_many(big)
spent = time.perf_counter() - t0
after = count
sys.setswitchinterval(old)
stop = True
t.join()
check(len(res) == len(big), "the long contains_many answered")
check(after > before, "another thread ran during contains_many (%d steps in %.0f ms)"
      % (after - before, spent * 1e3))

started = threading.Event()
busy_seen = []


def long_call():
    started.set()
    f2.contains_many(big)


sys.setswitchinterval(1.0)
t = threading.Thread(target=long_call)
t.start()
started.wait()
e = raises(rb.Busy, f2.close)
sys.setswitchinterval(old)
t.join()
check(e is not None and e.code == -11, "close() during another thread's contains_many: Busy")
f2.close()
check(f2.segment is None, "close() afterwards works")

# ---- the Client: redis-py underneath, ringbloom's replies and errors on top ---------------------
print("Client: redis-py %s, %s parser" % (redis.__version__,
                                          "hiredis" if HIREDIS_AVAILABLE else "pure-Python"))
check(issubclass(rb._redispy._Parser, HiredisParser if HIREDIS_AVAILABLE else PythonParser) and
      isinstance(client._conn._parser, rb._redispy._Parser),
      "the Client parses with redis-py's parser (hiredis's when installed)")
# A scripted server on a Unix socket: on each connection it reads what the
# client sends and answers with what `script` gives for it (bytes, sent in
# pieces of `step` bytes; b"": read more first), None: closes without
# answering, or "hang": says nothing.


class Scripted:
    def __init__(self, path, script, step=0):
        self.path, self.script, self.step = path, script, step
        self.srv = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(4)
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.serve, daemon=True)
        self.t.start()

    def serve(self):
        self.srv.settimeout(0.1)
        while not self.stop.is_set():
            try:
                c, _ = self.srv.accept()
            except OSError:
                continue
            with c:
                c.settimeout(5)
                buf = b""
                try:
                    while not self.stop.is_set():
                        data = c.recv(65536)
                        if not data:
                            break
                        buf += data
                        answer = self.script(buf)
                        if answer == b"":  # a command not whole yet
                            continue
                        if answer is None:
                            break
                        if answer == "hang":
                            self.stop.wait(3)
                            break
                        buf = b""
                        n = self.step or len(answer)
                        for i in range(0, len(answer), n):
                            c.sendall(answer[i:i + n])
                            if self.step:
                                time.sleep(0.001)
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.t.join()
        self.srv.close()
        os.unlink(self.path)


fake = os.path.join(os.path.dirname(SOCK), "fake.sock")
typed = (b"+OK\r\n", b":42\r\n", b"$4\r\na\r\nb\r\n", b"$-1\r\n",
         b"*3\r\n:1\r\n*1\r\n$0\r\n\r\n*-1\r\n", b"*0\r\n", b":-7\r\n", b"$0\r\n\r\n")
texts = ["NOPERM this user has no permissions to run the 'shutdown' command",
         "ERR unknown command 'X'", "WRONGTYPE Operation against a key holding the wrong kind",
         "LOADING the daemon is loading", "EXECABORT Transaction discarded",
         "ERR max number of clients reached", "BUSYKEY Target key name already exists.",
         "ERR", "weird text \xc3\xa9"]
# (texts are sent as their latin-1 bytes: the last one is "é" in UTF-8.)
answers = list(typed) + [b"-" + t.encode("latin-1") + b"\r\n" for t in texts]
answers.append(b"*2\r\n:1\r\n-NOPERM inner refusal\r\n")


def by_index(buf):
    """Answers every command "GET i" read with answers[i], in order."""
    idx = re.findall(rb"\*2\r\n\$3\r\nGET\r\n\$\d+\r\n(\d+)\r\n", buf)
    if len(idx) != buf.count(b"*"):
        return b""
    return b"".join(answers[int(i)] for i in idx)


for step in (0, 1):  # whole, then a byte at a time (every split point of every reply)
    srv = Scripted(fake, by_index, step)
    c = rb.Client(INST, socket=fake, timeout=5)
    got = [c.execute("GET", i) for i in range(len(typed))]
    check(got == [b"OK", 42, b"a\r\nb", None, [1, [b""], None], [], -7, b""],
          "reply types: ints, bytes, None, lists (step %d: %r)" % (step, got))
    errs = []
    for i in range(len(typed), len(typed) + len(texts)):
        try:
            c.execute("GET", i)
            errs.append(None)
        except rb.Error as e:
            errs.append(e)
    want = [t.encode("latin-1").decode("utf-8", "replace") for t in texts]
    check([getattr(e, "reply", None) for e in errs] == want,
          "error replies keep the daemon's whole text (step %d: %r)" %
          (step, [getattr(e, "reply", e) for e in errs]))
    check(isinstance(errs[0], rb.PermissionDenied) and errs[0].code == -23 and
          all(type(e) is rb.ReplyError and e.code == -22 for e in errs[1:]),
          "NOPERM: PermissionDenied; every other error: ReplyError (step %d)" % step)
    check(errs[1].context == "GET" and str(errs[1]).endswith(": ERR unknown command 'X'"),
          "a ReplyError names the command and ends with the text (%s)" % errs[1])
    nested = c.execute("GET", len(answers) - 1)
    check(nested[0] == 1 and isinstance(nested[1], rb.PermissionDenied) and
          nested[1].reply == "NOPERM inner refusal",
          "an error inside an array: an object in the list")
    r = c.pipeline([("GET", 0), ("GET", len(typed) + 1), ("GET", 1)], raise_on_error=False)
    check(r[0] == b"OK" and isinstance(r[1], rb.ReplyError) and
          r[1].reply == "ERR unknown command 'X'" and r[2] == 42,
          "pipeline through the scripted server: replies in order, the error whole")
    c.close()
    srv.close()

# A server that never answers: DaemonError RB_ETIMEDOUT within the timeout,
# and the Client is closed afterwards (nothing is sent again).
srv = Scripted(fake, lambda buf: "hang")
c = rb.Client(INST, socket=fake, timeout=0.3)
t0 = time.monotonic()
e = raises(rb.DaemonError, c.execute, "BF.ADD", "f", "k")
spent = time.monotonic() - t0
check(e is not None and e.code == -25 and 0.25 <= spent < 2.5,
      "no answer: DaemonError RB_ETIMEDOUT after the timeout (%.2fs, %r)" % (spent, e))
e = raises(rb.DaemonError, c.execute, "PING")
check(e is not None and e.code == -20 and "closed" in str(e),
      "after a timeout the connection is closed (%r)" % e)
c.close()
srv.close()
# A server that closes the connection: RB_EDAEMON.
srv = Scripted(fake, lambda buf: None)
c = rb.Client(INST, socket=fake, timeout=5)
e = raises(rb.DaemonError, c.execute, "PING")
check(e is not None and e.code == -20 and isinstance(e, ConnectionError),
      "the daemon closed the connection: DaemonError RB_EDAEMON (%r)" % e)
check(raises(rb.DaemonError, c.pipeline, [("PING",)]) is not None, "and it stays closed")
srv.close()
# A reply that is not RESP: RB_EPROTO, connection closed.
srv = Scripted(fake, lambda buf: b"?garbage\r\n")
c = rb.Client(INST, socket=fake, timeout=5)
e = raises(rb.DaemonError, c.execute, "PING")
check(e is not None and e.code == -21,
      "a reply that does not parse: DaemonError RB_EPROTO (%r)" % e)
check(raises(rb.DaemonError, c.execute, "PING") is not None, "and the connection is closed")
srv.close()

# Arguments: str as UTF-8, bytes-likes as their bytes, numbers in decimal;
# bool and other types are refused before anything is sent.
e = raises(TypeError, client.execute, "BF.ADD", "f", True)
check(e is not None and "bool" in str(e), "a bool argument: TypeError")
check(raises(TypeError, client.execute, "BF.ADD", "f", None) is not None and client.ping(),
      "a None argument: TypeError, the connection still in step")
client.execute("BF.RESERVE", "args", "0.001", "100")
check(client.execute("BF.MADD", "args", "é", bytearray(b"ba"), memoryview(b"mv"), 7, 1.5) ==
      [1, 1, 1, 1, 1] and
      client.execute("BF.MEXISTS", "args", b"\xc3\xa9", b"ba", b"mv", b"7", b"1.5") ==
      [1, 1, 1, 1, 1], "arguments: str as UTF-8, bytearray, memoryview, int, float")
# The daemon's own error texts arrive whole: the same bytes a raw socket
# reads (python.sh's daemon refuses SHUTDOWN to this user: NOPERM).
for cmd, exc in ((b"NO.SUCH.CMD", rb.ReplyError), (b"SHUTDOWN", rb.PermissionDenied)):
    raw = _socket.socket(_socket.AF_UNIX)
    raw.connect(SOCK)
    raw.sendall(b"*2\r\n$%d\r\n%s\r\n$1\r\nx\r\n" % (len(cmd), cmd))
    line = raw.recv(4096)
    raw.close()
    e = raises(exc, client.execute, cmd, "x")
    check(e is not None and line.startswith(b"-") and
          e.reply.encode() == line[1:].rstrip(b"\r\n"),
          "the daemon's error text is .reply, byte for byte (%r, %r)" % (line, e and e.reply))
check(line.startswith(b"-NOPERM ") and client.ping(), "SHUTDOWN refused: NOPERM, daemon up")
# The lock: threads sharing one Client each get their own replies.
client.execute("BF.RESERVE", "thr", "0.0001", "10000")
results = {}


def adder(t):
    results[t] = [client.bf_add("thr", "t%d-%d" % (t, i)) for i in range(300)] + \
        client.bf_madd("thr", ["t%d-%d" % (t, i) for i in range(250, 350)], batch=7)


def guarded_adder(t):
    try:
        adder(t)
    except Exception as e:  # what an unlocked Client would do
        results[t] = e


old = sys.getswitchinterval()
sys.setswitchinterval(1e-6)  # switch threads as often as possible
threads = [threading.Thread(target=guarded_adder, args=(t,)) for t in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sys.setswitchinterval(old)
check(all(results[t] == [True] * 300 + [False] * 50 + [True] * 50 for t in range(4)),
      "four threads sharing one Client: every reply reaches its caller")
client.bf_reserve("cl", 0.001, 100, nonscaling=True)
check(client.bf_add("cl", "a") is True and client.bf_add("cl", "a") is False, "bf_add: new, then not")
check(client.bf_madd("cl", ["a", "b", "b"], batch=2) == [False, True, False], "bf_madd in batches")
r = client.pipeline([("BF.ADD", "cl", "c"), ("NO.SUCH",), ("BF.EXISTS", "cl", "c")],
                    raise_on_error=False)
check(r[0] == 1 and isinstance(r[1], rb.ReplyError) and r[2] == 1,
      "pipeline: replies in order, an error among them")
check(raises(rb.ReplyError, client.pipeline, [("PING",), ("NO.SUCH",)]) is not None and
      client.ping(), "pipeline raises after reading every reply")
check(rb.Filter(INST, "cl", socket=SOCK).contains_many(["a", "b", "c", "d"]) ==
      [True, True, True, False], "the Client's adds are in shared memory")
default_client = rb.socket_path(INST)
check(isinstance(default_client, str) and default_client.endswith(INST + ".sock"),
      "socket_path: the instance's default socket")

# ---- Admission ---------------------------------------------------------------------------------
client.execute("BF.RESERVE", "adm", "0.01", "1000", "AGING", "0", "GENERATIONS", "2")
adm = rb.Admission(seg, "adm", client=client)
check([adm.admit("obj-1"), adm.admit("obj-1"), adm.admit("obj-1"), adm.admit("obj-2")] ==
      [False, True, True, False], "Admission: the second hit is admitted")


class RacedClient:
    """A client whose add always finds the key present (another process
    recorded it between our read and our add)."""

    def bf_add(self, filter, key):
        return False


check(rb.Admission(seg, "adm", client=RacedClient()).admit("obj-3") is True,
      "Admission: a key another process just recorded is admitted")

# ---- the Scrapy dupefilter -----------------------------------------------------------------------
from scrapy import Request, Spider  # noqa: E402
from scrapy.core.scheduler import Scheduler  # noqa: E402
from scrapy.dupefilters import RFPDupeFilter  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from ringbloom.scrapy import RingbloomDupeFilter  # noqa: E402

settings = {"DUPEFILTER_CLASS": "ringbloom.scrapy.RingbloomDupeFilter",
            "RINGBLOOM_INSTANCE": INST, "RINGBLOOM_SOCKET": SOCK,
            "RINGBLOOM_FILTER": "scrapy-requests", "RINGBLOOM_CAPACITY": 10000,
            "RINGBLOOM_ERROR_RATE": 1e-5, "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7"}
crawler = get_crawler(Spider, settings)
spider = crawler._create_spider("t")
sched = Scheduler.from_crawler(crawler)
check(isinstance(sched.df, RingbloomDupeFilter), "Scrapy's scheduler builds the dupefilter")
sched.open(spider)
urls = ["https://example.org/a", "https://example.org/b", "https://example.org/a",
        "https://example.org/c?x=1&y=2", "https://example.org/c?y=2&x=1"]
queued = [sched.enqueue_request(Request(u)) for u in urls]
check(queued == [True, True, False, True, False], "the scheduler drops duplicates (%r)" % queued)
check(crawler.stats.get_value("dupefilter/filtered") == 2, "dupefilter/filtered counted")
df = sched.df
ref = RFPDupeFilter.from_crawler(crawler)
check(df.request_fingerprint(Request(urls[0])) == ref.request_fingerprint(Request(urls[0])),
      "fingerprints are RFPDupeFilter's")
rc, out = cli("exists", "scrapy-requests", df.request_fingerprint(Request(urls[1])))
check(rc == 0 and out.startswith(b"present"), "the fingerprint is in the daemon's filter")
other = RingbloomDupeFilter.from_crawler(get_crawler(Spider, settings))  # another process
other.open()
check(other.request_seen(Request(urls[1])) is True and
      other.request_seen(Request("https://example.org/d")) is False and
      df.request_seen(Request("https://example.org/d")) is True,
      "two dupefilters share what they have seen")
sched.close("finished")
other.close("finished")
check(df.filter is None and df.client is None, "close() releases the filter and connection")

# ---- an empty ring -----------------------------------------------------------------------------
for name, _ in ring.nodes():
    client.ring_remove(name)
e = raises(rb.Empty, ring.lookup, "k")
check(e is not None and e.code == -13 and e.message == rb.strerror(-13),
      "a ring without nodes: Empty, RB_EEMPTY")

finish()
