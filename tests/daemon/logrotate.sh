#!/bin/bash
# The shipped logrotate file (service/logrotate.d/ringbloom, the package's
# /etc/logrotate.d/ringbloom) against a detached ringbloomd with a
# logfile: the file's paths and users moved to a temp dir and this user,
# `logrotate -f` renames the log, its postrotate sends SIGHUP through the
# pidfile, and the daemon's next lines land in a new file at the path
# while the renamed one keeps the old lines.  Skipped (77) without
# logrotate.
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
daemon=${RB_DAEMON:-daemon/ringbloomd}
cli=${RB_CLI:-client/ringbloom}
if ! command -v logrotate > /dev/null; then
    echo "skip: logrotate is not installed (apt-get install logrotate)"
    exit 77
fi
fail=0
checks=0
check() {   # check DESCRIPTION COMMAND...
    checks=$((checks + 1))
    d=$1; shift
    if "$@"; then echo "ok: $d"; else echo "FAILED: $d"; fail=$((fail + 1)); fi
}
tmp=$(mktemp -d /tmp/rblogrotate.XXXXXX)
inst=rblr$$
pidfile=$tmp/run/$inst.pid
log=$tmp/log/$inst.log
cleanup() {
    if [ -s "$pidfile" ]; then
        pid=$(cat "$pidfile")
        kill -TERM "$pid" 2> /dev/null
        for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2> /dev/null
    fi
    rm -f "/dev/shm/ringbloom.$inst"
    rm -rf "$tmp"
}
trap cleanup EXIT
# wait_for FILE TEXT: up to 5 s for a line of FILE with TEXT.
wait_for() {
    for _ in $(seq 50); do grep -qF -- "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done
    return 1
}
mkdir "$tmp/log" "$tmp/run"

# Detached (no -f), no syslog: the logfile is the only place lines go.
"$daemon" -i "$inst" -s "$tmp/run/$inst.sock" -d "$tmp/state" -o "pidfile=$pidfile" \
    -o "logfile=$log" -o syslog-enabled=no -o keep-segment=no
check "ringbloomd starts detached with a logfile" test $? -eq 0
check "its ready line is in the logfile, in Redis's format" \
    grep -qE '^[0-9]+:M [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3} \* ringbloomd .* ready' "$log"
"$cli" --socket "$tmp/run/$inst.sock" node add before-rotate > /dev/null
wait_for "$log" "RING.ADD before-rotate"
check "a ring change is logged with the client's uid and pid" \
    grep -qE "\\* ring change made: RING.ADD before-rotate( [0-9]+)? \\(uid $(id -u), pid [0-9]+\\)$" "$log"

me=$(id -un)
grp=$(id -gn)
sed -e "s|/var/log/ringbloom|$tmp/log|g" -e "s|/run/ringbloom|$tmp/run|g" \
    -e "s|ringbloom ringbloom|$me $grp|g" "$srcdir/service/logrotate.d/ringbloom" > "$tmp/logrotate.conf"
check "the logrotate file names the package's paths" grep -q "^$tmp/log/\*\.log {" "$tmp/logrotate.conf"
out=$(logrotate -f -s "$tmp/logrotate.state" "$tmp/logrotate.conf" 2>&1)
check "logrotate -f runs it without a complaint ($out)" test -z "$out"
check "the old lines are in the rotated file" grep -q "ring change made: RING.ADD before-rotate" "$log.1"
check "SIGHUP from postrotate: the daemon reopened its logfile at the path" \
    wait_for "$log" "configuration reloaded"
"$cli" --socket "$tmp/run/$inst.sock" node add after-rotate > /dev/null
check "later lines go to the new file" wait_for "$log" "ring change made: RING.ADD after-rotate"
check "... and not to the rotated one" sh -c "! grep -q after-rotate '$log.1'"
check "the new file is the one logrotate created (mode 0640)" \
    test "$(stat -c %a "$log")" = 640
echo "Checks: $checks, Failures: $fail, Errors: 0"
[ $fail -eq 0 ]
