"""test_tinylfu.py - TinyLFU admission from Python against a private
ringbloomd: run by tests/python/python.sh (INSTANCE SOCKET CLI), not alone.

Checks, each counted: ringbloom.TinyLFU's admit(candidate, victim) equals
the daemon's ADMIT.QUERY for every pair of 40 keys touched 0 to 7 times
(str, bytes and buffers alike), and follows more touches; it takes
owner= and socket= as every reader does, or a Segment, and works as a
context manager; a Bloom filter's name raises WrongType, a missing name
NotFound, a closed reader ValueError, a key of another type TypeError;
Client.admit_reserve / admit_touch / admit_query; Admission on a pair
(policy "tinylfu") records every access (touch on hits, admit on misses)
and admits while there is room, a popular key over a rare victim and not
the reverse, and refuses a sketch without its doorkeeper; Admission on a
Bloom filter is still the second hit.  Prints "Checks: N, Failures: F,
Errors: 0".
"""

import os
import subprocess
import sys

import ringbloom as rb
from pychecks import check, finish, raises

INST, SOCK, CLI = sys.argv[1], sys.argv[2], sys.argv[3]




client = rb.Client(INST, socket=SOCK)
client.admit_reserve("lfu", 100)
check(raises(rb.ReplyError, client.admit_reserve, "lfu", 100) is not None,
      "admit_reserve of a taken name: ReplyError")
keys = ["k%d" % i for i in range(40)]
for i, k in enumerate(keys):
    for _ in range(i % 8):
        client.admit_touch("lfu", k)

t = rb.TinyLFU(INST, "lfu", owner=os.getuid(), socket=SOCK)
pairs = [(c, v) for c in keys for v in keys[::3]]
want = client.pipeline([("ADMIT.QUERY", "lfu", c, v) for c, v in pairs])
got = [t.admit(c, v) for c, v in pairs]
check(got == [w == 1 for w in want] and any(got) and not all(got),
      "TinyLFU.admit equals ADMIT.QUERY for %d pairs (%d admitted)" % (len(pairs), sum(got)))
check(t.admit(b"k7", "k1") is True and t.admit(bytearray(b"k1"), memoryview(b"k7")) is False,
      "bytes and buffers are the same keys as str")
check(client.admit_query("lfu", "k7", "k1") is True, "Client.admit_query")
for _ in range(12):
    client.admit_touch("lfu", "k1")
check(t.admit("k1", "k7") is True, "more touches change the answer (k1 now beats k7)")
check(repr(t).startswith("<ringbloom.TinyLFU 'lfu'") and t.name == "lfu", "repr and name")
seg = rb.Segment(INST, socket=SOCK)
with rb.TinyLFU(seg, "lfu") as t2:
    check(t2.segment is seg and t2.admit("k1", "k0") is True, "TinyLFU on a Segment, with")
check(raises(ValueError, t2.admit, "a", "b") is not None, "a closed TinyLFU raises ValueError")
check(raises(TypeError, t.admit, 5, "a") is not None and
      raises(TypeError, t.admit, "a") is not None, "a key of another type, or one key: TypeError")
client.bf_reserve("lfu-bloom", 0.01, 1000)
e = raises(rb.WrongType, rb.TinyLFU, seg, "lfu-bloom")
check(e is not None and "TinyLFU pair 'lfu-bloom'" in str(e),
      "TinyLFU on a Bloom filter's name: WrongType (%s)" % e)
check(raises(rb.NotFound, rb.TinyLFU, seg, "nope") is not None, "a missing pair: NotFound")
t.close()

# ---- Admission on a pair -----------------------------------------------------------------------
client.admit_reserve("cache", 100)
adm = rb.Admission(seg, "cache", client=client)
check(adm.policy == "tinylfu", "Admission on a pair: policy tinylfu")
check(adm.admit("new") is True, "with room (no victim) a miss is admitted")
for _ in range(5):
    adm.touch("hot")
check(adm.admit("cold", victim="hot") is False and adm.admit("hot", victim="cold") is True,
      "a rare key is refused over a popular victim, a popular one admitted over a rare one")
est = client.execute("ADMIT.TOUCH", "cache", "hot")
check(est == 7, "touch and admit recorded every access of 'hot' (estimate %r, 7 with this)" % est)
client.execute("CMS.INITBYDIM", "plain", "64", "4")
e = raises(rb.WrongType, rb.Admission, seg, "plain", client=client)
check(e is not None and "without its doorkeeper" in str(e),
      "Admission on a sketch without a doorkeeper: WrongType (%s)" % e)
adm.close()
client.bf_reserve("second", 0.01, 1000)
with rb.Admission(INST, "second", socket=SOCK) as adm2:
    check(adm2.policy == "second-hit" and [adm2.admit("x"), adm2.admit("x")] == [False, True],
          "Admission on a Bloom filter: the second hit (instance and socket= given)")
rc = subprocess.run([CLI, "-i", INST, "-s", SOCK, "delete", "lfu", "lfu:dk", "lfu-bloom", "cache",
                     "cache:dk", "plain", "second"], capture_output=True).returncode
check(rc == 0, "the test's structures deleted")
client.close()
finish()
