#!/bin/sh
# Every CLI command with --socket alone, no --instance (issue 42, 1): the
# socket names the daemon and the daemon names its instance, so each
# command reaches a daemon of a non-default instance and its segment, and
# nothing of an instance 'default' (which may exist on the host: each
# answer is checked for this daemon's node, filter or instance name).
#   1. The commands come from the CLI's own table: `ringbloom --help`
#      prints every row (main.c's commands[]), and a command without a
#      row in EXAMPLES below fails the test, so a command added later is
#      covered.  Each runs with --socket alone; its exit status and a word
#      of its output are checked.  import-cluster reads a real one-master
#      Redis Cluster (redis-server) started here.
#   2. Refusals: a socket nobody listens on (exit 3, the hint to name the
#      instance, no 'default'), and a fake daemon (python3 on a socket in
#      a private directory) whose INFO names a bad instance ("../x", one
#      of 200 bytes, one with an escape sequence, none): exit 3, the
#      answer escaped in the message, no segment attached.
# Exit 77 without redis-server (Debian package redis-server).
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/redis_cluster.sh"   # exits 77 without redis-server
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rc_fail "$1"; }
# The daemon first: rc_start_one's trap then cleans up both (and the fake
# daemon, a process of rc_pids).
rbd_sh_start clisock "clisock$$"
rc_start_one
port=$rc_ports
sock=$dir/s.sock
printf 'k1\nk2\nk3\n' > "$dir/keys"
printf 'n-%s 1\n' "$inst" > "$dir/nodes"

# name|arguments|standard input|exit status|a word of the output
# ($dir, $inst and $port stand for their values; nothing else is expanded)
EXAMPLES='node|node add n-$inst||0|OK
nodes|nodes||0|n-$inst
lookup|lookup k1||0|n-$inst
reserve|reserve f-$inst 0.01 1000||0|OK
add|add f-$inst k1||0|new
load|load f-$inst $dir/keys||0|loaded 3 keys
exists|exists f-$inst k1||0|present
filters|filters||0|f-$inst
dump|dump f-$inst $dir/f.dump||0|dumped
restore|restore g-$inst $dir/f.dump||0|restored
reset|reset g-$inst||0|OK
delete|delete g-$inst||0|deleted
info|info server||0|instance:$inst
metrics|metrics||0|filter="f-$inst"
ring|ring --mode xxh3 --nodes $dir/nodes|$dir/keys|0|n-$inst
keyslot|keyslot foo||0|12182
import-cluster|import-cluster 127.0.0.1 $port||0|imported 127.0.0.1:$port
shutdown|shutdown||0|'

# ---- 1. every command of the CLI's table, with --socket alone ---------------
"$cli" --help > "$dir/help" || fail "ringbloom --help failed"
sed -n 's/^  \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p' "$dir/help" | sort -u > "$dir/commands"
[ "$(wc -l < "$dir/commands")" -ge 15 ] ||
    fail "found only $(wc -l < "$dir/commands") commands in ringbloom --help: $(cat "$dir/commands")"
while read -r name; do
    printf '%s\n' "$EXAMPLES" | grep -q "^$name|" ||
        fail "command '$name' (ringbloom --help) has no example in cli_socket.sh's EXAMPLES: add one"
done < "$dir/commands"
ran=0
printf '%s\n' "$EXAMPLES" | sed "s|\\\$dir|$dir|g; s|\\\$inst|$inst|g; s|\\\$port|$port|g" \
    > "$dir/examples"
while IFS='|' read -r name args input want word; do
    # shellcheck disable=SC2086 # the arguments are words
    "$cli" --socket "$sock" $args < "${input:-/dev/null}" > "$dir/out" 2>&1
    got=$?
    [ "$got" -eq "$want" ] ||
        fail "ringbloom --socket SOCK $args: exit $got, not $want: $(head -c 2000 "$dir/out")"
    [ -z "$word" ] || grep -qF -- "$word" "$dir/out" ||
        fail "ringbloom --socket SOCK $args: no '$word' in: $(head -c 2000 "$dir/out")"
    ! grep -q "ringbloom\.default" "$dir/out" ||
        fail "ringbloom --socket SOCK $args looked at instance 'default': $(cat "$dir/out")"
    echo "ok: $name ($args): exit $got"
    ran=$((ran + 1))
done < "$dir/examples"
[ "$ran" -eq "$(printf '%s\n' "$EXAMPLES" | wc -l)" ] || fail "ran $ran examples"
# shutdown's daemon goes away (bounded wait for the event).
i=0
while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 200 ] && fail "the daemon did not stop after 'ringbloom --socket SOCK shutdown'"
    sleep 0.05
done
pid=

# ---- 2. refusals ---------------------------------------------------------------
"$cli" --socket "$dir/none.sock" nodes > "$dir/out" 2>&1
got=$?
[ "$got" -eq 3 ] && grep -q -- "--instance NAME" "$dir/out" && ! grep -q "'default'" "$dir/out" ||
    fail "a socket nobody listens on: exit $got: $(cat "$dir/out")"
echo "ok: no daemon: exit 3, names --instance"
# A fake daemon whose INFO names what it likes (python3: any will do).
fake() {
    python3 - "$dir/fake.sock" "$1" <<'PY' &
import os, socket, sys
path, inst = sys.argv[1], bytes.fromhex(sys.argv[2])
body = b"# Server\r\n" + (b"instance:" + inst + b"\r\n" if inst != b"-" else b"") + b"\r\n"
s = socket.socket(socket.AF_UNIX)
s.bind(path + ".tmp")
os.rename(path + ".tmp", path)
s.listen(4)
c, _ = s.accept()
c.recv(4096)
c.sendall(b"$%d\r\n%s\r\n" % (len(body), body))
c.close()
PY
    rc_pids="$rc_pids $!"
    fpid=$!
    i=0
    while [ ! -S "$dir/fake.sock" ]; do
        i=$((i + 1))
        [ $i -gt 200 ] && fail "the fake daemon did not listen"
        sleep 0.05
    done
}
for hex in 2e2e2f78 "$(printf "%0400d" 0 | tr 0 6)" 611b5b33316d 2d; do
    rm -f "$dir/fake.sock"
    fake "$hex"
    "$cli" --socket "$dir/fake.sock" nodes > "$dir/out" 2>&1
    got=$?
    wait "$fpid" 2>/dev/null
    [ "$got" -eq 3 ] && grep -q "named no valid instance" "$dir/out" &&
        ! grep -q "$(printf '\033')" "$dir/out" && ! grep -q "cannot attach" "$dir/out" ||
        fail "a daemon naming instance hex $hex: exit $got: $(cat "$dir/out")"
    echo "ok: INFO's instance (hex $hex) refused: $(cat "$dir/out")"
done
echo "Checks: $((ran + 5)), Failures: 0, Errors: 0"
