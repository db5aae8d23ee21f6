#!/bin/sh
# HyperLogLog against Redis: the same PFADD / PFCOUNT / PFMERGE stream sent
# to redis-server (a private one, on a Unix socket in a temporary
# directory, no persistence) and to a private ringbloomd must get the same
# replies, every one: PFADD's 1 / 0, PFCOUNT of one key and of several
# (the union), PFMERGE then PFCOUNT.  Counters of 1, 100, 10^4 and 10^6
# distinct elements, several keys, duplicates.  Then the daemon is killed,
# its segment removed, and restarted: the log's PFADD / PFMERGE records
# (types 14, 15) replayed after its snapshot must give the same counts.  Also TYPE
# ("string", as Redis), EXISTS, KEYS, SCAN TYPE, DEL, and WRONGTYPE both
# ways.
# Prints each count beside the true number, with the relative error and
# Redis's documented standard error (0.81%).
# Exit 77 without redis-server (Debian package redis-server) or python3's
# redis (python3-redis).
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
srcdir=${srcdir:-$(dirname "$0")/../..}
if ! command -v redis-server >/dev/null 2>&1; then
    echo "SKIP: redis-server not found (Debian package redis-server)"
    exit 77
fi
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if ! "$py" -c 'import redis' 2>/dev/null; then
    echo "SKIP: python3's redis not found (Debian package python3-redis)"
    exit 77
fi
. "$srcdir/tests/harness/private_daemon.sh"
rbd_sh_start hll "hll$$"
rpid=
cleanup() {
    [ -n "$rpid" ] && kill -9 "$rpid" 2>/dev/null
    rbd_sh_cleanup
}
trap cleanup EXIT
redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log" &
rpid=$!
i=0
while ! redis-cli -s "$dir/redis.sock" PING >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 200 ] && rbd_sh_fail "redis-server did not start"
    sleep 0.05
done

# The stream, with both replies compared; the counts kept for phase 2.
timeout 50 "$py" - "$dir/redis.sock" "$dir/s.sock" "$dir/counts" <<'PY' ||
import sys, redis
R = redis.Redis(unix_socket_path=sys.argv[1], socket_timeout=30)
D = redis.Redis(unix_socket_path=sys.argv[2], socket_timeout=30)
bad = []

def both(*cmd):
    try:
        a = R.execute_command(*cmd)
    except redis.ResponseError as e:
        a = "ERR:" + str(e)
    try:
        b = D.execute_command(*cmd)
    except redis.ResponseError as e:
        b = "ERR:" + str(e)
    if a != b:
        bad.append((cmd[:3], a, b))
    return a, b

def feed(key, elems, batch=1000):
    outs = []
    for c in (R, D):
        p = c.pipeline(transaction=False)
        for i in range(0, len(elems), batch):
            p.execute_command("PFADD", key, *elems[i:i + batch])
        outs.append(p.execute())
    if outs[0] != outs[1]:
        bad.append((("PFADD", key), "...", "replies differ"))

sizes = {"hll:1": 1, "hll:100": 100, "hll:1e4": 10**4, "hll:1e6": 10**6}
for k, n in sizes.items():
    feed(k, [b"%s-%d" % (k.encode(), i) for i in range(n)])
# Duplicates: all of them again (PFADD answers 0), and a few overlapping keys.
feed("hll:100", [b"hll:100-%d" % i for i in range(100)])
both("PFADD", "hll:100", "hll:100-7")
both("PFADD", "hll:empty")
both("PFADD", "hll:empty")
feed("hll:mix", [b"hll:1e4-%d" % i for i in range(5000)] + [b"x%d" % i for i in range(5000)])
feed("hll:bin", [bytes([i % 256, i // 256, 0, 255]) for i in range(3000)] + [b""])

truth = dict(sizes)
truth.update({"hll:empty": 0, "hll:mix": 10**4, "hll:bin": 3001})
rows = []
for k, n in truth.items():
    a, b = both("PFCOUNT", k)
    rows.append((k, n, a, b))
unions = [("hll:100", "hll:1e4"), ("hll:1e4", "hll:mix"), ("hll:1", "hll:100", "hll:1e4", "hll:1e6"),
          ("hll:1e4", "nosuchkey")]
utruth = [10100, 15000, 1010101, 10**4]
for ks, n in zip(unions, utruth):
    a, b = both("PFCOUNT", *ks)
    rows.append(("+".join(ks), n, a, b))
both("PFMERGE", "hll:m", "hll:100", "hll:1e4", "nosuchkey")
both("PFMERGE", "hll:m", "hll:mix")
both("PFMERGE", "hll:m2")
a, b = both("PFCOUNT", "hll:m")
rows.append(("PFMERGE hll:m", 15100, a, b))
both("PFCOUNT", "hll:m2")
both("PFCOUNT", "hll:m", "hll:1e6")
# The kept count (H2): a count after each add, twice in a row now and then
# (the second from the kept count), after an add that raises nothing and
# after a merge into a counted key: each as Redis answers.
for i in range(400):
    both("PFADD", "hll:inter", *[b"i-%d" % j for j in range(i * 7, i * 7 + (i % 13))])
    both("PFCOUNT", "hll:inter")
    if i % 50 == 0:
        both("PFCOUNT", "hll:inter")
        both("PFADD", "hll:inter", b"i-0")
        both("PFCOUNT", "hll:inter")
both("PFMERGE", "hll:inter", "hll:1e4")
both("PFCOUNT", "hll:inter")
both("PFCOUNT", "hll:inter", "hll:1")
both("DEL", "hll:inter")
both("TYPE", "hll:m")
both("EXISTS", "hll:m", "hll:1", "nosuchkey")

print("%-34s %9s %9s %9s %8s" % ("key(s)", "true", "redis", "ringbloom", "error"))
for k, n, a, b in rows:
    err = "" if n == 0 else "%+.2f%%" % (100.0 * (b - n) / n) if isinstance(b, int) else "?"
    print("%-34s %9d %9s %9s %8s" % (k, n, a, b, err))
print("Redis documents a standard error of 0.81% (1.04/sqrt(16384)); 1.3% would be "
      "1.04/sqrt(6400), fewer registers than Redis has.")
with open(sys.argv[3], "w") as f:
    for k, n, a, b in rows:
        if "+" not in k and " " not in k:
            f.write("%s %s\n" % (k, b))

# Ours only: the other kind of value.
D.execute_command("BF.RESERVE", "bf:x", "0.01", "100")
for cmd in (("PFADD", "bf:x", "a"), ("PFCOUNT", "hll:1", "bf:x"), ("PFMERGE", "hll:m", "bf:x"),
            ("PFMERGE", "bf:x", "hll:1"), ("BF.ADD", "hll:1", "a"), ("BF.EXISTS", "hll:1", "a")):
    try:
        D.execute_command(*cmd)
        bad.append((cmd, "WRONGTYPE", "no error"))
    except redis.ResponseError as e:
        if not str(e).startswith("WRONGTYPE Operation against a key holding the wrong kind"):
            bad.append((cmd, "WRONGTYPE", str(e)))
if D.type("hll:1") != b"string" or D.type("bf:x") != b"MBbloom--":
    bad.append(("TYPE", "string / MBbloom--", (D.type("hll:1"), D.type("bf:x"))))
keys = sorted(D.keys("hll:*"))
if keys != sorted(k.encode() for k in list(truth) + ["hll:m", "hll:m2"]):
    bad.append(("KEYS", "every counter", keys))
for t, want in (("string", sorted(k.encode() for k in list(truth) + ["hll:m", "hll:m2"])),
                ("MBbloom--", [b"bf:x"]), ("list", [])):
    got = sorted(D.execute_command("SCAN", 0, "COUNT", 1000, "TYPE", t)[1])
    if got != want:
        bad.append(("SCAN TYPE " + t, want, got))
if D.delete("hll:m2", "bf:x") != 2 or D.exists("hll:m2") != 0 or D.pfcount("hll:m2") != 0:
    bad.append(("DEL", 2, "counter not deleted"))
for b in bad:
    print("MISMATCH %r: redis %r, ringbloom %r" % b)
sys.exit(1 if bad else 0)
PY
    rbd_sh_fail "ringbloomd's replies differ from redis-server's"

# Phase 2: restart.  A snapshot (SAVE) holds the counters as the segment
# did; a PFADD and a PFMERGE after it are only in the log.  The segment
# goes with the daemon, so the counts come back from the snapshot and the
# log's records 14 and 15.
R() { redis-cli -s "$dir/s.sock" "$@"; }
[ "$(R SAVE)" = OK ] || rbd_sh_fail "SAVE failed"
[ "$(R PFADD hll:late a b c)" = 1 ] || rbd_sh_fail "PFADD hll:late did not answer 1"
[ "$(R PFMERGE hll:late hll:100)" = OK ] || rbd_sh_fail "PFMERGE hll:late failed"
echo "hll:late $(R PFCOUNT hll:late)" >> "$dir/counts"
kill -9 "$pid"
wait "$pid" 2>/dev/null
rm -f "/dev/shm/ringbloom.$inst"
"$daemon" -f -c "$dir/conf" 2>>"$dir/daemon.log" &
pid=$!
i=0
while ! redis-cli -s "$dir/s.sock" PING >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -gt 400 ] && { cat "$dir/daemon.log"; rbd_sh_fail "daemon did not restart"; }
    sleep 0.05
done
while read -r key want; do
    got=$(redis-cli -s "$dir/s.sock" PFCOUNT "$key")
    [ "$got" = "$want" ] || rbd_sh_fail "after replay PFCOUNT $key is $got, was $want"
done < "$dir/counts"
[ "$(redis-cli -s "$dir/s.sock" EXISTS hll:m2)" = 0 ] || rbd_sh_fail "DEL of a counter not replayed"
echo "restart: $(wc -l < "$dir/counts") counts equal after a restart from the snapshot and log"
echo "Checks: 1, Failures: 0, Errors: 0"
