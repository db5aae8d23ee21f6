#!/bin/sh
# Golden-output test of the ringbloom CLI and of ringbloomd driven by the
# real redis-cli: runs a fixed session against a private daemon and compares
# everything printed (and every exit status) with tests/golden/cli.out.
# Regenerate after an intended change with: RB_GOLDEN_UPDATE=1 make check
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
golden="$srcdir/tests/golden/cli.out"
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
. "$srcdir/tests/harness/private_daemon.sh"
rbd_sh_start cli "cli$$" "ring-replicas 160"

out="$dir/out"
run() {   # run WORDS...: prints the command, its output and exit status
    printf '$ %s\n' "$*" | sed "s|$dir|DIR|g; s|$inst|INST|g"
    "$@" 2>&1 | sed "s|$dir|DIR|g; s|$inst|INST|g"
    echo "[exit $(cat "$dir/rc")]"
}
C() { "$cli" -i "$inst" -s "$dir/s.sock" "$@"; echo $? > "$dir/rc"; }
R() { redis-cli -s "$dir/s.sock" "$@"; echo $? > "$dir/rc"; }
# RQ 'COMMAND "quoted\targs"': redis-cli reads the line and decodes its escapes.
RQ() { printf '%s\n' "$1" | redis-cli -s "$dir/s.sock"; echo $? > "$dir/rc"; }
CIN() { f=$1; shift; "$cli" -i "$inst" -s "$dir/s.sock" "$@" < "$f"; echo $? > "$dir/rc"; }
{
    run C node add cache-a.example:11211
    run C node add cache-b.example:11211 2
    run C node add cache-c.example:11211
    run C node add cache-b.example:11211
    run C nodes
    run C --json nodes
    run C lookup https://example.org/index.html
    run C lookup https://example.org/index.html -n 3
    run C --json lookup user:1001 -n 2
    run C node down cache-b.example:11211
    run C node drain cache-x.example:11211
    run C node sideways cache-a.example:11211
    run C nodes
    run C --json nodes
    run C lookup https://example.org/index.html -n 3
    run C node up cache-b.example:11211
    run C node weight cache-a.example:11211 3
    run C node remove cache-c.example:11211
    run C node remove cache-c.example:11211
    run C lookup https://example.org/index.html -n 3
    run C reserve urls 0.0001 1000
    run C reserve recent 0.01 500 --aging 3600 --generations 3
    run C reserve rb 0.01 1000 --layout redisbloom
    run C reserve bad 0.01 500 --layout bloom
    run C reserve bad 0.01 500 --agin 3
    run C reserve bad 0.01 500 --aging
    run C reserve bad 0.01 500 --aging 60 --nonscaling
    run C reserve bad 0.01 500 --generations 3
    run C reserve bad 2 500
    run C add urls https://a.example/1 https://a.example/2 https://a.example/1
    run C --json add urls https://a.example/2 https://a.example/3
    run C exists urls https://a.example/1 https://a.example/3
    # A key with a tab and a newline echoes escaped: it cannot forge a line.
    run C add urls "$(printf 'k\tx\npresent\tforged')"
    run C exists urls https://a.example/1 https://z.example/none
    run C --json exists urls https://z.example/none
    printf 'https://b.example/1\nhttps://b.example/2\nhttps://a.example/1\n\nhttps://b.example/1\n' > "$dir/list"
    run C load urls "$dir/list"
    run C filters
    run C --json filters
    run C reset recent
    run C reset nosuch
    # A delete frees the filter: its name is absent then, and free to reuse.
    run C reserve scratch 0.01 100
    run C delete scratch nosuch
    run C --json delete scratch
    run C exists scratch k
    run C filters
    printf 'user:1\nuser:2\nhttps://example.org/index.html\n' > "$dir/keys"
    run CIN "$dir/keys" lookup -
    run CIN "$dir/keys" --json lookup -
    # Offline rings (no daemon).  The ketama lines are libmemcached's own
    # answers for these servers (memcached_generate_hash, KETAMA_WEIGHTED).
    printf '127.0.0.1:11211 1\n127.0.0.1:11212 2\n# a comment\n127.0.0.1:11213 3\n' > "$dir/nodes"
    printf 'key0\nkey1\nkey2\nkey3\nkey4\nkey5\nkey6\nkey7\nkey8\nkey9\n' > "$dir/k10"
    run CIN "$dir/k10" ring --mode ketama --nodes "$dir/nodes"
    run CIN "$dir/k10" ring --mode nginx --nodes "$dir/nodes"
    run CIN "$dir/k10" ring --mode seed --nodes "$dir/nodes" --replicas 100
    run CIN "$dir/k10" ring --mode xxh3 --nodes "$dir/nodes"
    run CIN "$dir/k10" --json ring --mode xxh3 --nodes "$dir/nodes"
    printf 'a b c\n' > "$dir/badnodes"
    run CIN "$dir/k10" ring --mode nginx --nodes "$dir/badnodes"
    run CIN "$dir/k10" ring --mode murmur --nodes "$dir/nodes"
    run C exists nosuch key
    run C lookup
    run C frobnicate
    run R PING
    run R RING.NODES
    run R RING.GET https://example.org/index.html
    run R BF.RESERVE seen 0.0001 100 NONSCALING
    run R BF.MADD seen one two one
    run R BF.EXISTS seen two
    run R BF.EXISTS seen three
    run R BF.INFO seen
    run R BF.INFO seen ITEMS
    run R BF.CARD seen
    run R BF.RESERVE seen 0.01 100
    run R BF.RESERVE bad 2 100
    run R BF.ADD seen
    run R NOSUCH x
    # The daemon's ring in ketama mode answers as the offline tool (and
    # libmemcached) did above.
    run R RING.REMOVE cache-a.example:11211
    run R RING.REMOVE cache-b.example:11211
    run R RING.MODE ketama
    run R RING.ADD 127.0.0.1:11211 1
    run R RING.ADD 127.0.0.1:11212 2
    run R RING.ADD 127.0.0.1:11213 3
    run CIN "$dir/k10" lookup -
    run R RING.INFO
    # A node name with control bytes prints escaped, never as raw lines.
    run RQ 'RING.ADD "name\twith\ttabs\nand a newline:11211" 1'
    run C nodes
    run C --json nodes
    run C lookup key5 -n 4
    run C --json info nosuch
    run C shutdown
    run C info
    run C --json info
    run C metrics
} > "$out"

if [ "${RB_GOLDEN_UPDATE:-0}" = 1 ]; then
    cp "$out" "$golden"
    echo "golden file updated: $golden"
fi
i=0   # the session ends with a shutdown; give the daemon 5 s to exit
while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
kill -0 "$pid" 2>/dev/null || pid=
if diff -u "$golden" "$out"; then
    echo "CLI golden output: $(grep -c '^\$ ' "$out") commands match"
    echo "Checks: 1, Failures: 0, Errors: 0"
    exit 0
fi
echo "Checks: 1, Failures: 1, Errors: 0"
exit 1
