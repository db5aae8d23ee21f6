#!/bin/sh
# The main job: start ringbloomd with no configuration at all (instance
# "default"), drive a short demo through the ringbloom CLI - ring nodes,
# lookups from shared memory, what moves when a node joins, crawler-style
# URL dedup - and stop the daemon cleanly.
#
# If the default instance had no state before, the demo removes what it
# created (state directory and segment) at the end; an existing instance is
# left as it was found, apart from the demo's nodes and filter.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
daemon="$top/daemon/ringbloomd"
cli="$top/client/ringbloom"

# Where the default instance lives, as the daemon itself derives it.
setting() { "$daemon" -t | sed -n "s/^$1 //p"; }
state_dir=$(setting dir)
socket=$(setting socket)
if "$cli" info server >/dev/null 2>&1; then
    echo "demo: a ringbloomd for instance 'default' is already running; stop it first" >&2
    exit 1
fi
fresh=no
[ -e "$state_dir" ] || [ -e /dev/shm/ringbloom.default ] || fresh=yes
tmp=$(mktemp -d)
cleanup() {
    "$cli" shutdown >/dev/null 2>&1 || true
    if [ "$fresh" = yes ]; then
        rm -rf "$state_dir"
        rm -f /dev/shm/ringbloom.default
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

echo "== starting ringbloomd (no configuration: instance 'default', socket $socket)"
"$daemon"
i=0
until "$cli" info server >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "demo: ringbloomd did not come up (see syslog)" >&2; exit 1; }
    sleep 0.05
done

echo
echo "== a ring of three cache nodes, one with twice the weight"
for n in cache-a.example:11211 cache-b.example:11211; do
    "$cli" node add "$n" >/dev/null 2>&1 || true
done
"$cli" node add cache-c.example:11211 2 >/dev/null 2>&1 || "$cli" node weight cache-c.example:11211 2
"$cli" node remove cache-d.example:11211 >/dev/null 2>&1 || true
"$cli" nodes

echo
echo "== lookups, answered from shared memory (no round trip to the daemon)"
for k in /index.html /img/logo.png "user:1001" "session:8f3a" /api/v2/items?page=7; do
    printf '  %-26s -> %s\n' "$k" "$("$cli" lookup "$k")"
done
printf '  replicas of %s: %s\n' "user:1001" "$("$cli" lookup user:1001 -n 3 | tr '\n' ' ')"

echo
echo "== cache-d joins: only the keys it takes over move"
i=0
while [ $i -lt 10000 ]; do echo "https://shop.example/item/$i"; i=$((i + 1)); done > "$tmp/keys"
"$cli" lookup - < "$tmp/keys" > "$tmp/before"
"$cli" node add cache-d.example:11211 >/dev/null
"$cli" lookup - < "$tmp/keys" > "$tmp/after"
moved=$(paste "$tmp/before" "$tmp/after" | awk -F'\t' '$2 != $4 { m++ } END { print m + 0 }')
to_d=$(paste "$tmp/before" "$tmp/after" | awk -F'\t' '$2 != $4 && $4 == "cache-d.example:11211" { m++ } END { print m + 0 }')
echo "  $moved of 10000 keys moved ($(awk "BEGIN { printf \"%.1f\", $moved / 100 }")%), $to_d of them to the new node"
echo "  (4 -> 5 units of weight: the ideal is 1/5 = 20%; hash % N would move about 80%)"

echo
echo "== crawler dedup: 20000 URLs, every one seen twice, in one filter"
"$cli" reserve "demo-urls-$$" 0.001 50000 >/dev/null
i=0
while [ $i -lt 10000 ]; do echo "https://news.example/story/$i"; i=$((i + 1)); done > "$tmp/urls"
cat "$tmp/urls" "$tmp/urls" > "$tmp/frontier"
printf '  '
"$cli" load "demo-urls-$$" "$tmp/frontier"
printf '  '
"$cli" exists "demo-urls-$$" https://news.example/story/42 https://news.example/never-seen | tr '\n' ' '
echo
"$cli" info bloom | grep "demo-urls-$$" | sed 's/^/  /'

echo
echo "== stopping ringbloomd (snapshot + clean exit)"
"$cli" shutdown
i=0
while [ -e "$socket" ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
echo "  stopped."
