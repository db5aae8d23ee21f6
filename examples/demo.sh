#!/bin/sh
# The main job: start ringbloomd, drive a short demo through the ringbloom
# CLI - ring nodes, lookups from shared memory, what moves when a node
# joins, crawler-style URL dedup - and stop the daemon cleanly.
#
# The daemon runs with no configuration file, on an instance of its own
# (demo-<pid>) whose socket, pidfile and state are in a temporary
# directory: so the demo works beside an installed ringbloomd service
# (whose /run/ringbloom and /var/lib/ringbloom belong to its user, and
# which a daemon run as root refuses to use) and leaves nothing behind -
# the temporary directory and the instance's segment are removed at the
# end.  RB_DAEMON and RB_CLI name other binaries than this tree's.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
daemon=${RB_DAEMON:-$top/daemon/ringbloomd}
cli=${RB_CLI:-$top/client/ringbloom}

inst=demo-$$
tmp=$(mktemp -d)
run=$tmp/run
socket=$run/$inst.sock
cleanup() {
    "$cli" -i "$inst" -s "$socket" shutdown >/dev/null 2>&1 || true
    i=0
    while [ -e "$run/$inst.pid" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
    rm -f "/dev/shm/ringbloom.$inst"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cli() { "$cli" -i "$inst" -s "$socket" "$@"; }

echo "== starting ringbloomd (no configuration file: instance '$inst', socket $socket)"
"$daemon" -i "$inst" -s "$socket" -d "$tmp/state" -o "pidfile=$run/$inst.pid"
i=0
until cli info server >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "demo: ringbloomd did not come up (see syslog)" >&2; exit 1; }
    sleep 0.05
done

echo
echo "== a ring of three cache nodes, one with twice the weight"
cli node add cache-a.example:11211 >/dev/null
cli node add cache-b.example:11211 >/dev/null
cli node add cache-c.example:11211 2 >/dev/null
cli nodes

echo
echo "== lookups, answered from shared memory (no round trip to the daemon)"
for k in /index.html /img/logo.png "user:1001" "session:8f3a" /api/v2/items?page=7; do
    printf '  %-26s -> %s\n' "$k" "$(cli lookup "$k")"
done
printf '  replicas of %s: %s\n' "user:1001" "$(cli lookup user:1001 -n 3 | tr '\n' ' ')"

echo
echo "== cache-d joins: only the keys it takes over move"
i=0
while [ $i -lt 10000 ]; do echo "https://shop.example/item/$i"; i=$((i + 1)); done > "$tmp/keys"
cli lookup - < "$tmp/keys" > "$tmp/before"
cli node add cache-d.example:11211 >/dev/null
cli lookup - < "$tmp/keys" > "$tmp/after"
moved=$(paste "$tmp/before" "$tmp/after" | awk -F'\t' '$2 != $4 { m++ } END { print m + 0 }')
to_d=$(paste "$tmp/before" "$tmp/after" | awk -F'\t' '$2 != $4 && $4 == "cache-d.example:11211" { m++ } END { print m + 0 }')
echo "  $moved of 10000 keys moved ($(awk "BEGIN { printf \"%.1f\", $moved / 100 }")%), $to_d of them to the new node"
echo "  (4 -> 5 units of weight: the ideal is 1/5 = 20%; hash % N would move about 80%)"

echo
echo "== crawler dedup: 20000 URLs, every one seen twice, in one filter"
cli reserve demo-urls 0.001 50000 >/dev/null
i=0
while [ $i -lt 10000 ]; do echo "https://news.example/story/$i"; i=$((i + 1)); done > "$tmp/urls"
cat "$tmp/urls" "$tmp/urls" > "$tmp/frontier"
printf '  '
cli load demo-urls "$tmp/frontier"
printf '  '
cli exists demo-urls https://news.example/story/42 https://news.example/never-seen | tr '\n' ' '
echo
cli info bloom | grep demo-urls | sed 's/^/  /'

echo
echo "== stopping ringbloomd (snapshot + clean exit)"
cli shutdown
i=0
while [ -e "$socket" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
echo "  stopped."
