#!/bin/sh
# The shipped metrics unit (service/ringbloom-metrics@.service) against
# Debian's prometheus-node-exporter: its ExecStart, run as the unit would
# (the instance and the textfile directory put in, @bindir@ a directory
# whose `ringbloom` is the built CLI aimed at a private daemon), writes
# ringbloom-INST.prom atomically (no .tmp left), twice in a row, and
# node_exporter's textfile collector serves it: ringbloom_* series with
# the instance's label, and node_textfile_scrape_error 0 (a file it could
# not parse would make it 1).  Also: the timer's unit names the service's
# period.  Skipped with its reason where prometheus-node-exporter or curl
# is not installed.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rbd_sh_fail "$1"; }
ne=$(command -v prometheus-node-exporter || true)
if [ -z "$ne" ] || ! command -v curl > /dev/null 2>&1; then
    echo "prometheus-node-exporter or curl not installed: skipped"
    exit 77
fi
rbd_sh_start nodeexp "rbne$$"
exporter=
cleanup_more() { [ -n "$exporter" ] && kill "$exporter" 2>/dev/null; rbd_sh_cleanup; }
trap cleanup_more EXIT
redis-cli -s "$dir/s.sock" BF.RESERVE urls 0.01 1000 > /dev/null || fail "BF.RESERVE failed"

# @bindir@: a ringbloom that is the built CLI with this daemon's socket.
mkdir "$dir/bin" "$dir/textfile"
cli_abs=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
printf '#!/bin/sh\nexec "%s" -s "%s" "$@"\n' "$cli_abs" "$dir/s.sock" > "$dir/bin/ringbloom"
chmod +x "$dir/bin/ringbloom"
unit="$srcdir/service/ringbloom-metrics@.service.in"
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ -n "$exec_start" ] || fail "no ExecStart in $unit"
cmd=$(printf '%s' "$exec_start" | sed -e "s|@bindir@|$dir/bin|g" -e "s|%i|$inst|g" \
      -e "s|/var/lib/prometheus/node-exporter|$dir/textfile|g")
for run in 1 2; do
    eval "$cmd" || fail "ExecStart failed (run $run): $cmd"
done
prom="$dir/textfile/ringbloom-$inst.prom"
[ -s "$prom" ] || fail "no $prom"
ls "$dir/textfile" | grep -q '\.tmp$' && fail "a .tmp file was left: $(ls "$dir/textfile")"
grep -q "^ringbloom_connected_clients{ringbloom_instance=\"$inst\"}" "$prom" ||
    fail "the file has no connected_clients: $(head -5 "$prom")"

port=$((30000 + $$ % 20000))
"$ne" --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$dir/textfile" \
    --web.listen-address="127.0.0.1:$port" > "$dir/ne.log" 2>&1 &
exporter=$!
rbd_sh_scrape "http://127.0.0.1:$port/metrics" "$dir/metrics.txt" "$dir/ne.log"
grep -q "^node_textfile_scrape_error 0" "$dir/metrics.txt" ||
    fail "node_exporter could not read the file: $(grep textfile "$dir/metrics.txt" | head -5)"
grep -q "^ringbloom_filters{ringbloom_instance=\"$inst\"} 1" "$dir/metrics.txt" ||
    fail "node_exporter serves no ringbloom_filters 1: $(grep '^ringbloom_filters' "$dir/metrics.txt")"
grep -q "^OnUnitActiveSec=1min" "$srcdir/service/ringbloom-metrics@.timer" ||
    fail "the timer does not run the unit every minute"
echo "Checks: 1, Failures: 0, Errors: 0"
exit 0
