#!/bin/sh
# Redis's own tools against a private daemon, as a redis-server user runs
# them (issue 28): `redis-cli --stat` for 2 s prints the key count, memory,
# clients and 0 blocked (not -9223372036854775808); `redis-cli --latency`
# prints figures; SLOWLOG GET / LEN / RESET with slowlog-log-slower-than
# set by CONFIG SET (and CONFIG GET reading it back; a restart-only setting
# refused; CONFIG REWRITE writing it into the file, comments kept); LATENCY LATEST / HISTORY / RESET with latency-monitor-threshold
# (a snapshot's freeze and loop turns as events) and DOCTOR's report; MONITOR printing other
# clients' commands as redis-server does, quoted; CLIENT LIST, KILL, PAUSE
# WRITE (a write waits, a read does not) and UNPAUSE;
# MEMORY USAGE; INFO's keyspace, clients
# and memory fields; and Debian's prometheus-redis-exporter scraping the
# socket without an error line, as the prometheus user under the ACL rule
# the README gives it (skipped with its reason where it is not installed).
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rbd_sh_fail "$1"; }
checks=0
ok() { checks=$((checks + 1)); }
# The exporter's user (Debian's package makes "prometheus") gets what
# redis_exporter's docs ask of an ACL user, and no more.
acl=
id prometheus > /dev/null 2>&1 &&
    acl="acl-user prometheus +@read +ping +client|setname +config|get +slowlog +latency"
rbd_sh_start tools "rbtools$$" "socket-mode 0666
$acl"
chmod 755 "$dir"
R() { redis-cli -s "$dir/s.sock" "$@"; }
mon=
exporter=
cleanup_more() {
    [ -n "$mon" ] && kill "$mon" 2>/dev/null
    [ -n "$exporter" ] && kill "$exporter" 2>/dev/null
    rbd_sh_cleanup
}
trap cleanup_more EXIT

R BF.RESERVE a 0.01 1000 > /dev/null && R BF.ADD a x > /dev/null && R PFADD h e1 > /dev/null &&
    R CMS.INITBYDIM c 100 4 > /dev/null || fail "setting up failed"

# INFO: Redis's fields the tools read.
R INFO > "$dir/info.txt" || fail "INFO failed"
for f in 'redis_version:' 'used_memory:' 'connected_clients:' 'blocked_clients:0' \
         'total_commands_processed:' 'db0:keys=3,expires=0,avg_ttl=0' 'role:master'; do
    grep -q "^$f" "$dir/info.txt" || fail "INFO has no $f"
done
ok

# redis-cli --stat (it prints only to a terminal: script(1) gives it one).
timeout 3 script -qc "redis-cli -s $dir/s.sock --stat -i 1" /dev/null > "$dir/stat.txt" 2>&1
tr -d '\r' < "$dir/stat.txt" > "$dir/stat2.txt"
grep -q -- '-9223372036854775808' "$dir/stat2.txt" && fail "--stat printed LONG_MIN: $(cat "$dir/stat2.txt")"
grep -Eq '^3 +[0-9.]+[KMG] +[0-9]+ +0 +[0-9]+' "$dir/stat2.txt" ||
    fail "--stat: no line with 3 keys, memory, clients and 0 blocked: $(cat "$dir/stat2.txt")"
ok
timeout 3 script -qc "redis-cli -s $dir/s.sock --latency" /dev/null > "$dir/lat.txt" 2>&1
tr -d '\r' < "$dir/lat.txt" | grep -Eq 'min: [0-9]+, max: [0-9]+, avg: [0-9.]+' ||
    fail "--latency printed no figures: $(cat "$dir/lat.txt")"
ok

# CONFIG SET / GET, and what CONFIG SET refuses.
[ "$(R CONFIG SET slowlog-log-slower-than 0 slowlog-max-len 3)" = OK ] ||
    fail "CONFIG SET slowlog-log-slower-than 0 slowlog-max-len 3 failed"
[ "$(R CONFIG GET slowlog-max-len | tail -n 1)" = 3 ] || fail "CONFIG GET slowlog-max-len is not 3"
R CONFIG SET max-memory 2gb | grep -q "can't set immutable config" ||
    fail "CONFIG SET of a restart-only setting was not refused"
R CONFIG SET slowlog-max-len 3 nosuch 1 | grep -q "nosuch" || fail "CONFIG SET nosuch accepted"
[ "$(R CONFIG SET slowlog-log-slower-than -2)" != OK ] || fail "slowlog-log-slower-than -2 accepted"
# CONFIG REWRITE: the file gets what CONFIG SET put in force, its own lines
# (a comment, the instance) stay, a setting absent from it is appended.
printf '# the operator'"'"'s comment\nslowlog-max-len 100\n' >> "$dir/conf"
[ "$(R CONFIG REWRITE)" = OK ] || fail "CONFIG REWRITE failed: $(R CONFIG REWRITE)"
grep -qx '# the operator'"'"'s comment' "$dir/conf" || fail "CONFIG REWRITE lost a comment"
grep -qx 'slowlog-max-len 3' "$dir/conf" || fail "CONFIG REWRITE: $(cat "$dir/conf")"
grep -qx 'slowlog-log-slower-than 0' "$dir/conf" || fail "CONFIG REWRITE did not append"
grep -qx "instance $inst" "$dir/conf" || fail "CONFIG REWRITE lost the instance line"
[ "$(grep -c '^slowlog-max-len' "$dir/conf")" = 1 ] || fail "CONFIG REWRITE left a second line"
ok

# SLOWLOG: every command now (0 us), the newest 3 kept, newest first.
R SLOWLOG RESET > /dev/null
R BF.ADD a y > /dev/null; R BF.EXISTS a y > /dev/null; R PFCOUNT h > /dev/null
R BF.ADD a z > /dev/null
[ "$(R SLOWLOG LEN)" = 3 ] || fail "SLOWLOG LEN is $(R SLOWLOG LEN), not 3"
R SLOWLOG GET 1 > "$dir/slow.txt"
# id, time, us, the arguments, the peer, the name: SLOWLOG LEN was the newest
sed -n 4p "$dir/slow.txt" | grep -qx 'SLOWLOG' || fail "SLOWLOG GET 1: $(cat "$dir/slow.txt")"
R SLOWLOG GET -1 | grep -qx 'BF.ADD' || fail "SLOWLOG GET -1 lost BF.ADD"
R CONFIG SET slowlog-log-slower-than -1 > /dev/null
R SLOWLOG RESET > /dev/null
R BF.ADD a w > /dev/null
[ "$(R SLOWLOG LEN)" = 0 ] || fail "slowlog-log-slower-than -1 still logs"
ok

# LATENCY: off by default; with a 1 ms threshold a snapshot's freeze or a
# loop turn of a big reserve passes it.  LATENCY DOCTOR (issue 42, item
# 11) says the monitor is off, then that nothing passed, then reads each
# event's spikes with what bounds its cost.
[ -z "$(R LATENCY LATEST)" ] || fail "LATENCY LATEST not empty with the monitor off"
R LATENCY DOCTOR | grep -q 'latency monitor is off.*CONFIG SET latency-monitor-threshold' ||
    fail "LATENCY DOCTOR with the monitor off: $(R LATENCY DOCTOR)"
R CONFIG SET latency-monitor-threshold 100000 > /dev/null
R LATENCY DOCTOR | grep -q '^No latency spike of 100000 ms or more' ||
    fail "LATENCY DOCTOR with nothing past the threshold: $(R LATENCY DOCTOR)"
R CONFIG SET latency-monitor-threshold 1 > /dev/null
R BF.RESERVE big 0.0001 20000000 > /dev/null
R SAVE > /dev/null
R LATENCY LATEST > "$dir/latest.txt"
grep -Eqx 'eventloop|command|snapshot-freeze' "$dir/latest.txt" ||
    fail "LATENCY LATEST has no event after a 48 MB reserve and a SAVE: $(cat "$dir/latest.txt")"
ev=$(grep -Ex 'eventloop|command|snapshot-freeze' "$dir/latest.txt" | head -n 1)
[ -n "$(R LATENCY HISTORY "$ev")" ] || fail "LATENCY HISTORY $ev is empty"
R LATENCY DOCTOR > "$dir/doctor.txt"
grep -Eq "^[0-9]\. $ev: [0-9]+ latency spikes \(average [0-9]+ms, mean deviation [0-9]+ms, period [0-9.]+ sec\)\. Worst all time event [0-9]+ms\.$" "$dir/doctor.txt" ||
    fail "LATENCY DOCTOR does not read the $ev spikes: $(cat "$dir/doctor.txt")"
echo "LATENCY DOCTOR: $(grep -c 'latency spikes' "$dir/doctor.txt") event(s); $(sed -n 1p "$dir/doctor.txt")"
R CONFIG SET latency-monitor-threshold 0 > /dev/null   # no new sample after the reset
[ "$(R LATENCY RESET)" -ge 1 ] || fail "LATENCY RESET reset nothing"
[ -z "$(R LATENCY LATEST)" ] || fail "LATENCY LATEST not empty after RESET"
ok

# MEMORY USAGE: the arrays' bytes (a's: 1000 keys at 1%, ~1.2 kB).
m=$(R MEMORY USAGE a)
[ "$m" -ge 1000 ] && [ "$m" -le 4096 ] || fail "MEMORY USAGE a is $m"
[ -z "$(R MEMORY USAGE nosuch)" ] || fail "MEMORY USAGE of a missing key is not nil"
ok

# CLIENT PAUSE WRITE: a write waits, a read does not; UNPAUSE runs it.
[ "$(R CLIENT PAUSE 60000 WRITE)" = OK ] || fail "CLIENT PAUSE failed"
R BF.ADD a held > "$dir/held.txt" 2>&1 &
held=$!
# The write is held once the daemon has read it: its connection's input
# then holds it unrun (qbuf > 0), however slow the machine.
i=0
until R CLIENT LIST | grep -q 'qbuf=[1-9].*cmd=NULL'; do
    i=$((i + 1)); [ $i -gt 600 ] && fail "the held write never reached the daemon"; sleep 0.05
done
[ "$(R BF.EXISTS a x)" = 1 ] || fail "a read waited in a WRITE pause"
kill -0 "$held" 2>/dev/null || fail "a write ran in a WRITE pause: $(cat "$dir/held.txt")"
[ "$(R BF.EXISTS a held)" = 0 ] || fail "the held write was applied"
[ "$(R CLIENT UNPAUSE)" = OK ] || fail "CLIENT UNPAUSE failed"
wait "$held"
[ "$(cat "$dir/held.txt")" = 1 ] || fail "the held write answered $(cat "$dir/held.txt")"
[ "$(R BF.EXISTS a held)" = 1 ] || fail "the held write was lost"
ok

# MONITOR: another client's commands, as redis-server prints them.
R MONITOR > "$dir/mon.txt" 2>&1 &
mon=$!
i=0
while [ "$(R INFO clients | tr -d '\r' | sed -n 's/^monitor_clients://p')" != 1 ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "MONITOR did not start"; sleep 0.05
done
R BF.ADD a 'q"uote' > /dev/null
i=0
while ! grep -q '"BF.ADD" "a" "q\\"uote"' "$dir/mon.txt"; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "MONITOR printed no BF.ADD line: $(cat "$dir/mon.txt")"; sleep 0.05
done
grep -Eq '^[0-9]+\.[0-9]{6} \[0 unix:' "$dir/mon.txt" || fail "MONITOR's line format: $(cat "$dir/mon.txt")"
# CLIENT LIST shows it (flags O) and CLIENT KILL ID closes it.
R CLIENT LIST > "$dir/list.txt"
[ "$(grep -c '^id=' "$dir/list.txt")" = 2 ] || fail "CLIENT LIST: $(cat "$dir/list.txt")"
mid=$(sed -n 's/^id=\([0-9]*\) .* flags=O .*/\1/p' "$dir/list.txt")
[ -n "$mid" ] || fail "CLIENT LIST shows no monitor (flags=O): $(cat "$dir/list.txt")"
grep -q "cmd=client|list user=$(id -un) " "$dir/list.txt" || fail "CLIENT LIST: no cmd= or user="
[ "$(R CLIENT KILL ID "$mid")" = 1 ] || fail "CLIENT KILL ID $mid did not close one"
i=0
while kill -0 "$mon" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the MONITOR client was not closed"; sleep 0.05
done
mon=
[ "$(R CLIENT KILL ID "$mid")" = 0 ] || fail "CLIENT KILL of a closed client counted one"
ok

# prometheus-redis-exporter (Debian's), scraping the socket.
if command -v prometheus-redis-exporter > /dev/null 2>&1 && command -v curl > /dev/null 2>&1; then
    port=$((20000 + $$ % 20000))
    as=
    [ "$(id -u)" = 0 ] && [ -n "$acl" ] && as="runuser -u prometheus --"
    $as prometheus-redis-exporter -redis.addr "unix://$dir/s.sock" \
        -web.listen-address "127.0.0.1:$port" > "$dir/exporter.log" 2>&1 &
    exporter=$!
    rbd_sh_scrape "http://127.0.0.1:$port/metrics" "$dir/metrics.txt" "$dir/exporter.log"
    grep -qx 'redis_up 1' "$dir/metrics.txt" || fail "exporter: redis_up is not 1"
    grep -q '^redis_db_keys{db="db0"} 4$' "$dir/metrics.txt" ||
        fail "exporter: db0 keys: $(grep db_keys.*db0 "$dir/metrics.txt")"
    grep -q '^redis_memory_used_bytes [1-9]' "$dir/metrics.txt" || fail "exporter: no used memory"
    grep -q '^redis_exporter_last_scrape_error{err=""} 0' "$dir/metrics.txt" ||
        fail "exporter: scrape error $(grep last_scrape_error "$dir/metrics.txt")"
    grep -Eq 'level=(error|warning)' "$dir/exporter.log" &&
        fail "exporter logged: $(grep -E 'level=(error|warning)' "$dir/exporter.log")"
    kill "$exporter"; exporter=
    if [ -n "$as" ]; then   # the rule lets it read, not write
        $as redis-cli -s "$dir/s.sock" BF.ADD a p | grep -q NOPERM ||
            fail "the exporter's user could BF.ADD"
        $as redis-cli -s "$dir/s.sock" CONFIG SET slowlog-max-len 1 | grep -q NOPERM ||
            fail "the exporter's user could CONFIG SET"
        $as redis-cli -s "$dir/s.sock" CLIENT KILL ID 1 | grep -q NOPERM ||
            fail "the exporter's user could CLIENT KILL"
    else
        echo "not root or no prometheus user: the exporter ran as $(id -un)"
    fi
    ok
else
    echo "prometheus-redis-exporter or curl not installed: its scrape is skipped"
fi
echo "Checks: $checks, Failures: 0, Errors: 0"
exit 0
