#!/bin/sh
# The slots ring against a real Redis Cluster (3 masters of redis-server
# on loopback, tests/harness/redis_cluster.sh):
#   1. keyslot: for 20,000 keys (random bytes, and hash tags: "{user123}.a",
#      "x{tag}y", "{}", "a{b", ...) `ringbloom keyslot -` gives the slot the
#      live cluster's CLUSTER KEYSLOT gives;
#   2. import-cluster's refusals: a node not in cluster mode, a port with
#      nobody, and a fake node (python3) whose replies are a Redis 6 node's
#      (no CLUSTER SHARDS: CLUSTER SLOTS read instead), a map with holes
#      (refused, the holes named) and malformed RESP (refused, said), and
#      a daemon with ring-source etcd (refused at once, nothing changed);
#   3. end to end: import-cluster into a private ringbloomd, then for
#      20,000 keys the node `ringbloom lookup -` names is the one that
#      takes the key without -MOVED (EXISTS, pipelined with redis-py to
#      each node); 1000 slots resharded from one master to another,
#      imported again, all agree again; a fourth master (no slots, then
#      1000 from another) likewise; after each import the nodes are
#      the masters (a member that was none removed) and the daemon's
#      RING.SLOTS lists what CLUSTER SLOTS does.
# Exit 77 without redis-server (Debian package redis-server).
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/redis_cluster.sh"   # exits 77 without redis-server
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rc_fail "$1"; }
# Debian's python3: the one python3-redis installs for.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" -c 'import redis' 2>/dev/null || fail "python3's redis not found (Debian package python3-redis)"
start=$(date +%s)
# The daemon first: rc_start's trap then cleans up both.
rbd_sh_start cluster "cl$$"
rc_start 3
set -- $rc_ports
A=$1 B=$2
C() { "$cli" -i "$inst" -s "$dir/s.sock" "$@"; }

# ---- 1. keyslot against CLUSTER KEYSLOT -------------------------------------
"$py" - "$dir/keys" <<'PY' || fail "writing the keys failed"
import random, sys
rnd = random.Random(15)
keys = [b"{user123}.a", b"x{tag}y", b"{}", b"a{b", b"{}{x}", b"{{a}}", b"a}b{c}", b"{a}{b}",
        b"", b"{", b"}", b"{user1000}.following", b"{user1000}.followers", b"foo{}{bar}"]
alphabet = bytes(b for b in range(1, 256) if b not in (10, 13))
while len(keys) < 20000:
    n = rnd.randrange(0, 40)
    k = bytes(rnd.choice(alphabet) for _ in range(n))
    if rnd.random() < 0.3:   # a hash tag somewhere in it
        i = rnd.randrange(0, n + 1)
        k = k[:i] + b"{" + k[i:i + rnd.randrange(0, 6)] + b"}" + k[i:]
    keys.append(k)
open(sys.argv[1], "wb").write(b"".join(k + b"\n" for k in keys))
PY
"$cli" keyslot - < "$dir/keys" > "$dir/keyslot.out" || fail "ringbloom keyslot - failed"
"$py" - "$dir/keys" "$dir/keyslot.out" "$A" <<'PY' || fail "keyslot disagrees with CLUSTER KEYSLOT"
import sys, redis
keys = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
ours = [int(l.rsplit(b"\t", 1)[1]) for l in open(sys.argv[2], "rb").read().split(b"\n")[:-1]]
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[3]), socket_timeout=10)
p = r.pipeline(transaction=False)
for k in keys:
    p.execute_command("CLUSTER", "KEYSLOT", k)
theirs = p.execute()
bad = [(k, o, t) for k, o, t in zip(keys, ours, theirs) if o != t]
print("keyslot: %d keys checked, %d agree with CLUSTER KEYSLOT" % (len(keys), len(keys) - len(bad)))
for k, o, t in bad[:5]:
    print("  %r: ours %d, CLUSTER KEYSLOT %d" % (k, o, t))
sys.exit(1 if bad or len(ours) != len(keys) or len(keys) != 20000 else 0)
PY

# ---- 2. import-cluster's refusals ---------------------------------------------
# expect STATUS PATTERN COMMAND...: the exit status and a line of stderr.
expect() {
    _want=$1 _pat=$2
    shift 2
    "$@" > "$dir/out" 2> "$dir/err"
    _got=$?
    [ $_got -eq "$_want" ] && grep -q -- "$_pat" "$dir/err" && return 0
    cat "$dir/out" "$dir/err"
    fail "$*: exit $_got (wanted $_want and '$_pat' on stderr)"
}
plain=$(rb_free_ports 1)
redis-server --bind 127.0.0.1 --port "$plain" --save "" --appendonly no --dir "$rc_dir" \
    --logfile "$rc_dir/plain.log" --daemonize no &
rc_pids="$rc_pids $!"
_i=0
while ! rc_cli "$plain" PING >/dev/null 2>&1; do
    _i=$((_i + 1)); [ $_i -gt 100 ] && fail "the non-cluster redis-server did not start"; sleep 0.05
done
expect 4 "is not a Redis Cluster node" C import-cluster 127.0.0.1 "$plain" --dry-run
rc_cli "$plain" SHUTDOWN NOSAVE >/dev/null 2>&1
expect 3 "127.0.0.1:$plain: cannot connect" C import-cluster 127.0.0.1 "$plain" --dry-run
# A fake node: one connection per scenario, in order; it answers every
# command of the connection with the scenario's next reply.
"$py" - "$rc_dir/fake.port" <<'PY' &
import socket, sys
def bulk(s): return b"$%d\r\n%s\r\n" % (len(s), s)
def node(ip, port): return b"*3\r\n" + bulk(ip) + b":%d\r\n" % port + bulk(b"id")
def entry(a, b, ip, port): return b"*3\r\n:%d\r\n:%d\r\n" % (a, b) + node(ip, port)
unknown = b"-ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.\r\n"
scenarios = [
    # Redis 6: SLOTS after SHARDS; "" is the node asked
    [unknown, b"*2\r\n" + entry(0, 8191, b"10.0.0.1", 7000) + entry(8192, 16383, b"", 7001)],
    # holes: 100-199 and 16000-16383
    [unknown, b"*2\r\n" + entry(0, 99, b"10.0.0.1", 7000) + entry(200, 15999, b"10.0.0.2", 7000)],
    [b"*1\r\n%bogus\r\n"],
    [b"*1\r\n$99999999\r\n" + b"x" * (1300 << 10)],
    [b"*1\r\n" * 20 + b":1\r\n"],
    # hostile counts: hiredis allocates an array's slots when it reads
    # the header, so these must be refused before (2 * 10^9 slots; and a
    # budget spent across levels: 3 + 1048575 > 2^20)
    [b"*2000000000\r\n"],
    [b"*2\r\n*1048575\r\n"],
    [b"+" + b"y" * 70000 + b"\r\n"],
    [b"*1\r\n$1100000\r\n" + b"z" * 1100000 + b"\r\n"],
    [unknown, b"*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$1\r\n?\r\n:7000\r\n"],
]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
srv.settimeout(30)
open(sys.argv[1] + ".tmp", "w").write(str(srv.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
for replies in scenarios:
    c, _ = srv.accept()
    c.settimeout(10)
    for rep in replies:
        if not c.recv(65536):
            break
        try:
            c.sendall(rep)
        except OSError:
            break   # the client refused the reply midway
    c.close()
PY
rc_pids="$rc_pids $!"
_i=0
while [ ! -s "$rc_dir/fake.port" ]; do
    _i=$((_i + 1)); [ $_i -gt 100 ] && fail "the fake node did not start"; sleep 0.05
done
fake=$(cat "$rc_dir/fake.port")
C import-cluster 127.0.0.1 "$fake" --dry-run > "$dir/out" 2>/dev/null || fail "import-cluster from CLUSTER SLOTS failed"
printf 'MULTI\nRING.MODE slots\nRING.ADD 10.0.0.1:7000\nRING.ADD 127.0.0.1:7001\nRING.SLOTS 0 8191 10.0.0.1:7000 8192 16383 127.0.0.1:7001\nEXEC\n' > "$dir/want"
grep -v '^RING.REMOVE' "$dir/out" | diff "$dir/want" - || fail "import-cluster from CLUSTER SLOTS: not the commands wanted"
expect 5 "slots 100-199, 16000-16383 (484 of 16384 slots) are assigned to no master" \
    C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 'malformed reply: Protocol error, got "%" as reply type byte' C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 "malformed reply: an element longer than 1114112 bytes" C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 "malformed reply: No support for nested multi bulk replies with depth > 7" C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 "malformed reply: more than 1048576 elements" C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 "malformed reply: more than 1048576 elements" C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 "malformed reply: a line longer than 65536 bytes" C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 "malformed reply: a bulk string of 1100000 bytes (at most 1048576)" C import-cluster 127.0.0.1 "$fake" --dry-run
expect 5 "the master of slots 0-16383 has no known address" C import-cluster 127.0.0.1 "$fake" --dry-run
echo "import-cluster: 12 refusals checked"
# Into a daemon whose ring comes from etcd (ring-source etcd; no etcd need
# run, it starts without one): refused before anything is sent, the same
# way every time, nothing changed, never "run import-cluster again".
einst="cle$$"
mkdir "$dir/e" || fail "mkdir failed"
printf 'instance %s\nsocket %s/e/s.sock\ndir %s/e/state\npidfile %s/e/pid\n' \
    "$einst" "$dir" "$dir" "$dir" > "$dir/e/conf"
printf 'ring-source etcd\netcd-endpoints http://127.0.0.1:%s\n' "$(rb_free_ports 1)" >> "$dir/e/conf"
"$daemon" -f -c "$dir/e/conf" 2>"$dir/e/daemon.log" &
epid=$!
estop() { kill -9 "$epid" 2>/dev/null; wait "$epid" 2>/dev/null; rm -f "/dev/shm/ringbloom.$einst"; }
efail() { cat "$dir/e/daemon.log" "$dir/err" 2>/dev/null; estop; fail "$1"; }
_i=0
while ! redis-cli -s "$dir/e/s.sock" PING >/dev/null 2>&1; do
    _i=$((_i + 1)); [ $_i -gt 200 ] && efail "the ring-source etcd daemon did not start"; sleep 0.05
done
E() { "$cli" -i "$einst" -s "$dir/e/s.sock" "$@"; }
for run in 1 2; do
    E import-cluster 127.0.0.1 "$A" > "$dir/out" 2> "$dir/err"
    _got=$?
    [ $_got -eq 4 ] && grep -q "takes its ring from etcd (ring-source etcd)" "$dir/err" &&
        grep -q "nothing was changed" "$dir/err" && ! grep -q "run import-cluster again" "$dir/err" ||
        efail "import-cluster into a ring-source etcd daemon (run $run): exit $_got"
done
[ -z "$(E nodes)" ] || efail "import-cluster changed the ring of a ring-source etcd daemon"
sed -n 1p "$dir/err"
estop

# ---- 3. end to end: the ring's node takes the key -----------------------------
# A member that is no master: the import removes it.
C node add cache-old:11211 > /dev/null || fail "node add failed"
C import-cluster 127.0.0.1 "$A" --dry-run > "$dir/out" 2>&1 || fail "import-cluster --dry-run failed"
[ "$(grep -c '^RING.ADD 127.0.0.1:' "$dir/out")" -eq 3 ] && grep -q '^RING.REMOVE cache-old:11211$' "$dir/out" ||
    { cat "$dir/out"; fail "import-cluster --dry-run: not 3 masters added and cache-old removed"; }
C import-cluster 127.0.0.1 "$A" > "$dir/import.out" 2>&1 || { cat "$dir/import.out"; fail "import-cluster failed"; }
cat "$dir/import.out"
[ "$(C nodes | cut -f1 | sort)" = "$(for p in $rc_ports; do echo "127.0.0.1:$p"; done | sort)" ] ||
    { C nodes; fail "after import the ring's nodes are not the 3 masters"; }
# same LABEL: the daemon's RING.SLOTS lists the cluster's CLUSTER SLOTS.
same() {
    "$py" - "$dir/s.sock" "$A" "$1" <<'PY' || fail "$1: RING.SLOTS differs from CLUSTER SLOTS"
import sys, redis
ours = redis.Redis(unix_socket_path=sys.argv[1], socket_timeout=10).execute_command("RING.SLOTS")
ours = [(a, b, n.decode()) for a, b, n in ours]
theirs = redis.Redis(host="127.0.0.1", port=int(sys.argv[2]), socket_timeout=10).execute_command("CLUSTER", "SLOTS")
theirs = sorted((e[0], e[1], "%s:%d" % (e[2][0].decode(), e[2][1])) for e in theirs)
print("%s: RING.SLOTS %s" % (sys.argv[3], "the same as CLUSTER SLOTS" if ours == theirs else "differs"))
if ours != theirs:
    print("  ours  ", ours)
    print("  theirs", theirs)
sys.exit(ours != theirs)
PY
}
same "after import"
# check LABEL: every key's ring node takes it (EXISTS without -MOVED).
check() {
    C lookup - < "$dir/keys" > "$dir/lookup.out" || fail "$1: lookup - failed"
    "$py" - "$dir/keys" "$dir/lookup.out" "$1" <<'PY' || fail "$1: a key's ring node is not its master"
import sys, redis
keys = open(sys.argv[1], "rb").read().split(b"\n")[:-1]
nodes = [l.rsplit(b"\t", 1)[1].decode() for l in open(sys.argv[2], "rb").read().split(b"\n")[:-1]]
by_node = {}
for k, n in zip(keys, nodes):
    by_node.setdefault(n, []).append(k)
agreed, moved = 0, []
for n, ks in by_node.items():
    host, port = n.rsplit(":", 1)
    p = redis.Redis(host=host, port=int(port), socket_timeout=10).pipeline(transaction=False)
    for k in ks:
        p.exists(k)
    for k, res in zip(ks, p.execute(raise_on_error=False)):
        if isinstance(res, Exception):
            moved.append((k, n, str(res)))
        else:
            agreed += 1
print("%s: %d keys checked, %d taken by their ring node, %d not (over %d nodes)"
      % (sys.argv[3], len(keys), agreed, len(moved), len(by_node)))
for k, n, e in moved[:5]:
    print("  %r: ring says %s, which answers %s" % (k, n, e))
sys.exit(1 if moved or len(nodes) != len(keys) else 0)
PY
}
check "after import"
rc_reshard "$A" "$B" 1000
echo "resharded 1000 slots from 127.0.0.1:$A to 127.0.0.1:$B"
C import-cluster 127.0.0.1 "$B" > "$dir/import.out" 2>&1 || { cat "$dir/import.out"; fail "the second import failed"; }
cat "$dir/import.out"
check "after reshard"
same "after reshard"
# A fourth master: it joins the ring with no slots, then takes 1000.
rc_add_master
D=$(echo $rc_ports | cut -d' ' -f4)
C import-cluster 127.0.0.1 "$A" > "$dir/import.out" 2>&1 || { cat "$dir/import.out"; fail "the import with 4 masters failed"; }
cat "$dir/import.out"
[ "$(C nodes | wc -l)" -eq 4 ] || { C nodes; fail "the new master did not join the ring"; }
check "with a master without slots"
rc_reshard "$B" "$D" 1000
echo "resharded 1000 slots from 127.0.0.1:$B to 127.0.0.1:$D"
C import-cluster 127.0.0.1 "$D" > "$dir/import.out" 2>&1 || { cat "$dir/import.out"; fail "the fourth import failed"; }
cat "$dir/import.out"
check "after the second reshard"
same "after the second reshard"
C nodes
echo "redis_cluster: done in $(( $(date +%s) - start )) s"
echo "Checks: 1, Failures: 0, Errors: 0"
