#!/bin/sh
# appendonly.sh - pipelined write throughput of ringbloomd with
# `appendonly no` against `appendonly yes` (appendfsync everysec), in one
# run: BF.ADD, CF.ADD and CMS.INCRBY through redis-benchmark, 32 commands
# in flight per client, 1 and 8 clients, REPS repetitions alternating the
# two settings; prints each figure's median and spread and the ratio.
# Not part of make check (a measurement, not a test); run by hand:
#   tests/bench/appendonly.sh [./daemon/ringbloomd]   (REPS=3 N=200000)
set -eu

DAEMON=${1:-./daemon/ringbloomd}
REPS=${REPS:-3}
N=${N:-200000}
command -v redis-benchmark >/dev/null || { echo "appendonly.sh: needs redis-benchmark" >&2; exit 77; }
[ -x "$DAEMON" ] || { echo "appendonly.sh: no daemon at $DAEMON" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/rb-aofbench.XXXXXX")
INST="aofbench$$"
PID=
cleanup() {
    if [ -n "$PID" ]; then kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    rm -f "/dev/shm/ringbloom.$INST"
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

start() {   # $1: yes|no
    rm -rf "$TMP/state"
    cat >"$TMP/conf" <<EOF
instance $INST
socket $TMP/sock
dir $TMP/state
pidfile $TMP/pid
keep-segment no
max-memory 2gb
appendfsync everysec
appendonly $1
EOF
    "$DAEMON" -f -c "$TMP/conf" >>"$TMP/log" 2>&1 &
    PID=$!
    i=0
    until [ -S "$TMP/sock" ] && redis-cli -s "$TMP/sock" PING >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -lt 200 ] || { cat "$TMP/log" >&2; exit 1; }
        sleep 0.05
    done
    redis-cli -s "$TMP/sock" BF.RESERVE bf 0.01 20000000 >/dev/null
    redis-cli -s "$TMP/sock" CF.RESERVE cf 8000000 >/dev/null
    redis-cli -s "$TMP/sock" CMS.INITBYDIM cms 100000 5 >/dev/null
}

stop() {
    kill -TERM "$PID"; wait "$PID" || true; PID=
}

rps() {   # $1 clients, then the command: requests per second
    c=$1; shift
    redis-benchmark -s "$TMP/sock" -P 32 -c "$c" -n "$N" -r 4000000 -q "$@" 2>/dev/null |
        tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}

for rep in $(seq 1 "$REPS"); do
    for mode in yes no; do
        start "$mode"
        for c in 1 8; do
            echo "$mode $c BF.ADD $(rps $c BF.ADD bf k:__rand_int__)"
            echo "$mode $c CF.ADD $(rps $c CF.ADD cf k:__rand_int__)"
            echo "$mode $c CMS.INCRBY $(rps $c CMS.INCRBY cms k:__rand_int__ 1)"
        done >>"$TMP/results"
        stop
    done
done

/usr/bin/python3 - "$TMP/results" "$REPS" "$N" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 4]
fig = {}
for mode, c, cmd, v in rows:
    fig.setdefault((cmd, c, mode), []).append(float(v))
print("appendonly no vs yes (everysec), redis-benchmark -P 32, %s reps of %s requests; "
      "requests/s median [min-max]" % (sys.argv[2], sys.argv[3]))
print("%-11s %7s %28s %28s %6s" % ("command", "clients", "appendonly yes", "appendonly no", "no/yes"))
for cmd in ("BF.ADD", "CF.ADD", "CMS.INCRBY"):
    for c in ("1", "8"):
        y, n = fig[(cmd, c, "yes")], fig[(cmd, c, "no")]
        f = lambda v: "%9.0f [%.0f-%.0f]" % (statistics.median(v), min(v), max(v))
        print("%-11s %7s %28s %28s %5.2fx" % (cmd, c, f(y), f(n),
                                             statistics.median(n) / statistics.median(y)))
EOF
