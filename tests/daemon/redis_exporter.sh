#!/bin/sh
# INFO under redis-server's names, read by Debian's
# prometheus-redis-exporter (issue 42, item 9): a real redis-server 7.0,
# started here on a Unix socket, and a private ringbloomd answer INFO
# with the same fields in the same sections (Stats' counters, CPU,
# Commandstats' and Errorstats' line formats, the persistence fields
# that mean the same), the exporter derives the same series from both
# (redis_commands_total, redis_errors_total, redis_cpu_*, redis_rdb_*,
# redis_keyspace_*, redis_config_max*...), and ringbloomd's figures are
# measured: the calls, refusals and failures of the commands sent, the
# keyspace hits and misses of the reads sent, the CPU a 48 MB reserve
# burns, the changes since a SAVE and its time, aof_enabled following
# CONFIG SET appendonly, instantaneous_ops_per_sec during a
# redis-benchmark load and back down after it.  Skipped with its reason
# where redis-server, redis-benchmark, the exporter or curl is missing.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rbd_sh_fail "$1"; }
for p in redis-server redis-benchmark prometheus-redis-exporter curl; do
    command -v "$p" > /dev/null 2>&1 || { echo "$p not installed: skipped"; exit 77; }
done
checks=0
ok() { checks=$((checks + 1)); }
rbd_sh_start exporter "rbexp$$" "appendonly yes"
redis= exp= bench=
cleanup_more() {
    for p in $redis $exp $bench; do kill "$p" 2>/dev/null; done
    rbd_sh_cleanup
}
trap cleanup_more EXIT
R() { redis-cli -s "$dir/s.sock" "$@"; }
S() { redis-cli -s "$dir/redis.sock" "$@"; }
redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' --appendonly no \
    --dir "$dir" --loglevel warning > "$dir/redis.log" 2>&1 &
redis=$!
i=0
until S PING > /dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "redis-server did not start: $(cat "$dir/redis.log")"
    sleep 0.05
done
# field NAME FILE: its value in INFO text FILE; section NAME FILE: the
# lines of one INFO section.
field() { tr -d '\r' < "$2" | sed -n "s/^$1://p"; }
section() { tr -d '\r' < "$2" | sed -n "/^# $1\$/,/^\$/p"; }
info() { R INFO everything > "$dir/rb.info" || fail "INFO failed"; }

# The same requests to both: calls, an unknown command (ERR), a wrong
# arity (a refused call), CONFIG GET.
for srv in R S; do
    $srv PING > /dev/null; $srv PING > /dev/null
    $srv CONFIG GET maxmemory > /dev/null
    $srv NOSUCHCMD > /dev/null
    $srv ECHO > /dev/null
done
# ringbloomd's own: 4 adds and one refused (arity), 3 reads that hit and
# 3 that miss (BF.INFO's among them, which fails).
R BF.RESERVE f 0.01 1000 > /dev/null
for k in a b c d; do R BF.ADD f "$k" > /dev/null; done
R BF.ADD f > /dev/null
for k in a b c; do R BF.EXISTS f "$k" > /dev/null; done
R BF.EXISTS nof x > /dev/null; R BF.EXISTS nof y > /dev/null
R BF.INFO nosuch > /dev/null
info
S INFO everything > "$dir/redis.info"

# 1. The fields, under redis-server's names and in its sections.
for sf in Stats:total_commands_processed Stats:instantaneous_ops_per_sec \
          Stats:total_net_input_bytes Stats:total_net_output_bytes Stats:keyspace_hits \
          Stats:keyspace_misses Stats:total_error_replies Stats:rejected_connections \
          Stats:expired_keys Stats:evicted_keys Stats:instantaneous_input_kbps \
          Stats:instantaneous_output_kbps \
          Persistence:loading Persistence:rdb_changes_since_last_save \
          Persistence:rdb_bgsave_in_progress Persistence:rdb_last_save_time \
          Persistence:rdb_last_bgsave_status Persistence:aof_enabled \
          Memory:maxmemory Memory:maxmemory_human Memory:maxmemory_policy \
          CPU:used_cpu_sys CPU:used_cpu_user CPU:used_cpu_sys_children \
          CPU:used_cpu_user_children CPU:used_cpu_sys_main_thread CPU:used_cpu_user_main_thread; do
    sec=${sf%%:*} f=${sf#*:}
    section "$sec" "$dir/redis.info" | grep -q "^$f:" ||
        fail "redis-server has no $f in # $sec (the test's list is wrong)"
    section "$sec" "$dir/rb.info" | grep -q "^$f:" || fail "INFO has no $f in # $sec"
done
for f in redis rb; do
    section Commandstats "$dir/$f.info" |
        grep -Eq '^cmdstat_config\|get:calls=1,usec=[0-9]+,usec_per_call=[0-9]+\.[0-9]{2},rejected_calls=0,failed_calls=0$' ||
        fail "$f: Commandstats has no config|get line: $(section Commandstats "$dir/$f.info")"
    section Commandstats "$dir/$f.info" | grep -Eq '^cmdstat_echo:calls=0,.*,rejected_calls=1,failed_calls=0$' ||
        fail "$f: ECHO without its argument is no refused call: $(section Commandstats "$dir/$f.info")"
    section Errorstats "$dir/$f.info" | grep -Eq '^errorstat_ERR:count=[0-9]+$' ||
        fail "$f: Errorstats has no ERR line: $(section Errorstats "$dir/$f.info")"
done
R INFO | grep -q '^# Commandstats' && fail "INFO without a section lists commandstats (Redis leaves it out)"
R INFO | grep -q '^# CPU' || fail "INFO without a section has no CPU section"
echo "INFO: redis-server 7.0's fields in its sections (Stats, Persistence, Memory, CPU), Commandstats and Errorstats lines alike"
ok

# 2. Measured: each command's calls, refusals and failures, the keyspace,
# the error replies.
cmdline() { section Commandstats "$dir/rb.info" | grep "^cmdstat_$1:"; }
cmdline 'bf\.add' | grep -Eq ':calls=4,usec=[0-9]+,usec_per_call=[0-9.]+,rejected_calls=1,failed_calls=0$' ||
    fail "BF.ADD: not 4 calls and 1 refused: $(cmdline 'bf\.add')"
cmdline 'bf\.exists' | grep -Eq ':calls=5,.*,rejected_calls=0,failed_calls=0$' ||
    fail "BF.EXISTS: not 5 calls: $(cmdline 'bf\.exists')"
cmdline 'bf\.info' | grep -Eq ':calls=1,.*,rejected_calls=0,failed_calls=1$' ||
    fail "BF.INFO of a missing filter: not 1 failed call: $(cmdline 'bf\.info')"
hits=$(field keyspace_hits "$dir/rb.info") misses=$(field keyspace_misses "$dir/rb.info")
[ "$hits" = 3 ] && [ "$misses" = 3 ] ||
    fail "keyspace_hits $hits, misses $misses (want 3 and 3: BF.EXISTS f x3; BF.EXISTS nof x2, BF.INFO nosuch)"
errs=$(section Errorstats "$dir/rb.info" | sed -n 's/^errorstat_ERR:count=//p')
[ "$errs" = 4 ] && [ "$(field total_error_replies "$dir/rb.info")" = 4 ] ||
    fail "ERR replies: errorstat $errs, total $(field total_error_replies "$dir/rb.info") (want 4: NOSUCHCMD, ECHO, BF.ADD f, BF.INFO nosuch)"
echo "commandstats: bf.add 4 calls + 1 refused, bf.exists 5, bf.info 1 failed; keyspace $hits hits, $misses misses; $errs ERR replies"
ok

# 3. CPU: a 48 MB reserve zeroes its pages in the event loop.
c0=$(field used_cpu_sys_main_thread "$dir/rb.info") u0=$(field used_cpu_user_main_thread "$dir/rb.info")
R BF.RESERVE big 0.0001 20000000 > /dev/null || fail "BF.RESERVE big failed"
info
c1=$(field used_cpu_sys_main_thread "$dir/rb.info") u1=$(field used_cpu_user_main_thread "$dir/rb.info")
burn=$(echo "$c0 $u0 $c1 $u1" | awk '{ printf "%d", ($3 + $4 - $1 - $2) * 1000 }')
[ "$burn" -ge 1 ] || fail "the main thread's CPU did not grow with a 48 MB reserve: $c0+$u0 -> $c1+$u1"
# The process's sys + user against its main thread's (read before it):
# the kernel splits each task's time into sys and user by estimate, so a
# process's sys alone may be below a thread's (seen under ASan);
# 2 us: each figure is cut to the microsecond.
awk -v a="$(field used_cpu_sys "$dir/rb.info")" -v b="$(field used_cpu_user "$dir/rb.info")" \
    -v c="$c1" -v d="$u1" 'BEGIN { exit !(a + b + 0.000002 >= c + d) }' ||
    fail "the process's used_cpu_sys + used_cpu_user is below its main thread's"
echo "CPU: the reserve took $burn ms of the main thread (sys $c0 -> $c1, user $u0 -> $u1)"
ok

# 4. Persistence: changes since a SAVE, its time and status, aof_enabled.
t0=$(date +%s)
[ "$(R SAVE)" = OK ] || fail "SAVE failed"
info
[ "$(field rdb_changes_since_last_save "$dir/rb.info")" = 0 ] ||
    fail "rdb_changes_since_last_save after SAVE: $(field rdb_changes_since_last_save "$dir/rb.info")"
ts=$(field rdb_last_save_time "$dir/rb.info")
[ "$ts" -ge "$t0" ] && [ "$ts" -le "$(date +%s)" ] || fail "rdb_last_save_time $ts is not the SAVE's ($t0)"
for k in 1 2 3; do R BF.ADD f "n$k" > /dev/null; done
info
[ "$(field rdb_changes_since_last_save "$dir/rb.info")" = 3 ] ||
    fail "rdb_changes_since_last_save after 3 adds: $(field rdb_changes_since_last_save "$dir/rb.info")"
[ "$(field rdb_last_bgsave_status "$dir/rb.info")" = ok ] && [ "$(field rdb_bgsave_in_progress "$dir/rb.info")" = 0 ] ||
    fail "rdb_last_bgsave_status / rdb_bgsave_in_progress: $(section Persistence "$dir/rb.info")"
[ "$(field aof_enabled "$dir/rb.info")" = 1 ] || fail "aof_enabled is not 1 with appendonly yes"
echo "persistence: 0 changes after SAVE at $ts, 3 after 3 adds"
ok

# 5. The exporter: the same series from redis-server and from ringbloomd
# (appendonly switched off first: redis_aof_enabled must follow).
[ "$(R CONFIG SET appendonly no)" = OK ] || fail "CONFIG SET appendonly no failed"
scrape() {   # scrape SOCKET OUT
    port=$((20000 + ($$ + $3) % 20000))
    prometheus-redis-exporter -redis.addr "unix://$1" -web.listen-address "127.0.0.1:$port" \
        > "$dir/exporter.log" 2>&1 &
    exp=$!
    rbd_sh_scrape "http://127.0.0.1:$port/metrics" "$2" "$dir/exporter.log"
    kill "$exp"; wait "$exp" 2>/dev/null; exp=
}
scrape "$dir/redis.sock" "$dir/redis.prom" 1
scrape "$dir/s.sock" "$dir/rb.prom" 2
for m in redis_commands_total redis_commands_duration_seconds_total \
         redis_commands_rejected_calls_total redis_commands_failed_calls_total redis_errors_total \
         redis_commands_processed_total \
         redis_net_input_bytes_total redis_net_output_bytes_total \
         redis_keyspace_hits_total redis_keyspace_misses_total \
         redis_cpu_sys_seconds_total redis_cpu_user_seconds_total \
         redis_cpu_sys_children_seconds_total redis_cpu_user_children_seconds_total \
         redis_cpu_sys_main_thread_seconds_total redis_cpu_user_main_thread_seconds_total \
         redis_rdb_changes_since_last_save redis_rdb_bgsave_in_progress \
         redis_rdb_last_save_timestamp_seconds redis_rdb_last_bgsave_status redis_aof_enabled \
         redis_memory_max_bytes redis_config_maxmemory redis_config_maxclients; do
    grep -Eq "^$m[{ ]" "$dir/redis.prom" || fail "the exporter gives redis-server no $m (the test's list is wrong)"
    grep -Eq "^$m[{ ]" "$dir/rb.prom" || fail "the exporter gives ringbloomd no $m"
done
grep -qx 'redis_commands_total{cmd="bf.add"} 7' "$dir/rb.prom" ||   # 4, then 3 in part 4
    fail "exporter: $(grep 'redis_commands_total{cmd="bf.add"}' "$dir/rb.prom")"
grep -qx 'redis_commands_rejected_calls_total{cmd="bf.add"} 1' "$dir/rb.prom" ||
    fail "exporter: $(grep 'rejected_calls_total{cmd="bf.add"}' "$dir/rb.prom")"
grep -qx 'redis_commands_failed_calls_total{cmd="bf.info"} 1' "$dir/rb.prom" ||
    fail "exporter: $(grep 'failed_calls_total{cmd="bf.info"}' "$dir/rb.prom")"
grep -Eq '^redis_errors_total\{err="ERR"\} [0-9]+$' "$dir/rb.prom" || fail "exporter: no redis_errors_total{err=\"ERR\"}"
grep -qx 'redis_keyspace_hits_total 3' "$dir/rb.prom" || fail "exporter: $(grep keyspace_hits "$dir/rb.prom")"
grep -qx 'redis_aof_enabled 0' "$dir/rb.prom" || fail "exporter: redis_aof_enabled is not 0 after appendonly no"
grep -qx 'redis_rdb_changes_since_last_save 3' "$dir/rb.prom" ||
    fail "exporter: $(grep rdb_changes_since_last_save "$dir/rb.prom")"
grep -qx 'redis_rdb_last_bgsave_status 1' "$dir/rb.prom" || fail "exporter: rdb_last_bgsave_status is not 1"
maxmem=$(R CONFIG GET max-memory | tail -n 1)
[ "$(sed -n 's/^redis_memory_max_bytes //p' "$dir/rb.prom" | awk '{ printf "%d", $1 }')" = "$maxmem" ] ||
    fail "exporter: redis_memory_max_bytes is not max-memory ($maxmem)"
grep -Eq 'level=(error|warning)' "$dir/exporter.log" &&
    fail "exporter logged: $(grep -E 'level=(error|warning)' "$dir/exporter.log")"
echo "exporter: $(grep -vc '^#' "$dir/rb.prom") samples from ringbloomd ($(grep -vc '^#' "$dir/redis.prom") from redis-server), every named series in both"
ok

# 6. instantaneous_ops_per_sec: during a redis-benchmark load, and down
# to this loop's own INFO requests (at most 20 a second) after it.
redis-benchmark -s "$dir/s.sock" -t ping -n 10000000 -c 4 -q > "$dir/bench.txt" 2>&1 &
bench=$!
i=0 ops=0
while [ "$ops" -lt 1000 ]; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "instantaneous_ops_per_sec stayed $ops under a PING load"
    sleep 0.05
    ops=$(R INFO stats | tr -d '\r' | sed -n 's/^instantaneous_ops_per_sec://p')
done
kill "$bench"; wait "$bench" 2>/dev/null; bench=
i=0 after=$ops
while [ "$after" -gt 20 ]; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "instantaneous_ops_per_sec stayed $after after the load"
    sleep 0.05
    after=$(R INFO stats | tr -d '\r' | sed -n 's/^instantaneous_ops_per_sec://p')
done
echo "instantaneous_ops_per_sec: $ops under redis-benchmark PING, $after (this loop's INFO) once it stopped"
ok
echo "Checks: $checks, Failures: 0, Errors: 0"
exit 0
