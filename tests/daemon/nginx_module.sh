#!/bin/sh
# End-to-end test of the nginx module (nginx/): builds it against Debian's
# nginx-dev (or takes RB_NGINX_MODULE), runs the packaged nginx with it in
# front of loopback backends that answer their own names, and a private
# ringbloomd, then checks that
#   - with no daemon, nginx serves the fallback value (logged once), and
#     starts answering from the segment once the daemon is up;
#   - (as root) a segment another user made under the instance's name while
#     the daemon was down is not used: the fallback, not the squatter's node;
#   - requests go to the node "ringbloom lookup KEY" names (200 keys);
#   - a node removed through the CLI takes effect without a reload;
#   - proxy_no_cache/proxy_cache_bypass driven by ringbloom_seen cache an
#     object on its second request (BYPASS, MISS, HIT), ringbloom_admit
#     recording the first;
#   - admits never block: with the daemon stopped (SIGSTOP) requests are
#     still served at once and overflowing admits are dropped and counted;
#   - after the daemon shuts down nginx keeps serving, queued admits reach
#     the restarted daemon, and nginx follows its new segment.
# Needs nginx, nginx-dev (unless RB_NGINX_MODULE) and python3 (the HTTP
# client); skipped (77) without them.  Ends with "Checks: N, Failures: F".
# shellcheck disable=SC2317  # functions called through check / wait_for / trap
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/nginx.sh"
ngx_sh_skip "the test's HTTP client"
ngx_sh_setup nginx "ngx$$"
spid=
ngx_sh_module

# ---- helpers --------------------------------------------------------------------
cat > "$dir/httpc.py" <<'PY'
# get PORT PATH: one request; prints "STATUS<TAB>X-Cache-Status<TAB>BODY".
# keys PORT: for each key on stdin, GET /?k=KEY on a new connection;
#   prints "KEY<TAB>BODY" (BODY "ERROR" if the request failed).
# flood PORT N LEN: N requests to /admit/?k=<LEN-byte key> and then /drops,
#   on one keep-alive connection (one worker); prints "OK SECONDS DROPS" if
#   every request got 200.
import http.client, os, sys, time
sys.path.insert(0, os.environ["RB_HARNESS"])
from http_get import get

cmd = sys.argv[1]
if cmd == "get":
    print("%d\t%s\t%s" % get(int(sys.argv[2]), sys.argv[3]))
elif cmd == "keys":
    for line in sys.stdin:
        key = line.rstrip("\n")
        status, _, body = get(int(sys.argv[2]), "/?k=" + key)
        print("%s\t%s" % (key, body if status == 200 else "ERROR"))
elif cmd == "flood":
    port, n, size = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    t0 = time.time()
    ok = True
    for i in range(n):
        key = ("flood-%d-" % i).ljust(size, "x")
        status, _, _ = get(port, "/admit/?k=" + key, c)
        ok = ok and status == 200
    seconds = time.time() - t0
    status, _, drops = get(port, "/drops", c)
    print("%s %.2f %s" % ("OK" if ok and status == 200 else "FAILED", seconds, drops))
PY
http() { python3 "$dir/httpc.py" "$@"; }

keys="$dir/keys"
ngx_sh_keys .example > "$keys"

# Every key answered by nginx as by the CLI (and no request failed).
route_agrees() {
    http keys "$front" < "$keys" > "$dir/nginx.out"
    C lookup - < "$keys" > "$dir/cli.out" || return 1
    cmp -s "$dir/nginx.out" "$dir/cli.out"
}

ngx_sh_ports 6
# shellcheck disable=SC2086  # six words
set -- $ports
front=$1
b1=$2
b2=$3
b3=$4
fb=$5
sq=$6

{ ngx_sh_conf_head info; cat <<CONF; } > "$dir/nginx.conf"
    proxy_cache_path $dir/cache keys_zone=rbtest:1m;
    ringbloom_admit_buffer 64k;
    ringbloom_node \$rb_node \$arg_k 127.0.0.1:$fb;
    ringbloom_seen \$rb_seen seen \$arg_k;
    map \$rb_seen \$rb_unseen { "1" ""; default "1"; }

    server {
        listen 127.0.0.1:$front;
        location / {
            proxy_pass http://\$rb_node;
        }
        location /cache/ {
            proxy_pass http://\$rb_node;
            proxy_cache rbtest;
            proxy_cache_key \$arg_k;
            proxy_cache_valid 200 10m;
            proxy_no_cache \$rb_unseen;
            proxy_cache_bypass \$rb_unseen;
            add_header X-Cache-Status \$upstream_cache_status always;
            ringbloom_admit seen \$arg_k;
        }
        location /admit/ {
            ringbloom_admit seen \$arg_k;
            return 200 "queued";
        }
        location = /drops {
            return 200 "\$ringbloom_admit_drops";
        }
    }
    server { listen 127.0.0.1:$b1; location / { return 200 "127.0.0.1:$b1"; } }
    server { listen 127.0.0.1:$b2; location / { return 200 "127.0.0.1:$b2"; } }
    server { listen 127.0.0.1:$b3; location / { return 200 "127.0.0.1:$b3"; } }
    server { listen 127.0.0.1:$fb; location / { return 200 "fallback"; } }
    server { listen 127.0.0.1:$sq; location / { return 200 "squatter"; } }
}
CONF

# ---- configuration: ringbloom_owner takes a user name or a uid -----------------
owner_conf_ok() {   # owner_conf_ok VALUE: nginx -t accepts "ringbloom_owner VALUE;"
    sed -e "s|^    ringbloom_instance .*|&\\n    ringbloom_owner $1;|" \
        -e "s|^error_log .*|error_log $dir/owner.log info;|" "$dir/nginx.conf" > "$dir/owner.conf"
    "$nginx" -t -p "$dir/" -c "$dir/owner.conf" > "$dir/owner.out" 2>&1
}
owner_conf_refused() {
    ! owner_conf_ok "$1" && grep -q "ringbloom_owner: no user \"$1\"" "$dir/owner.out"
}
check "ringbloom_owner: a user name is accepted" owner_conf_ok nobody
check "ringbloom_owner: a uid is accepted" owner_conf_ok "$(id -u nobody)"
check "ringbloom_owner: an unknown user is a configuration error" \
    owner_conf_refused no-such-user-rb

# ---- 0. a squatter: another user's segment under the instance's name --------
# While the real daemon is down, uid nobody runs a ringbloomd of its own on
# the instance (the segment is a valid one, mode 0644, with a node of the
# squatter's choosing) and leaves its segment behind.  nginx must not use it.
squatted=
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    squat="$dir/squat"
    mkdir "$squat" && chown nobody "$squat" || die "cannot make $squat"
    cat > "$squat/ringbloomd.conf" <<CONF
instance $inst
socket $squat/s.sock
dir $squat/state
pidfile $squat/ringbloomd.pid
segment-mode 0644
keep-segment yes
CONF
    setpriv --reuid "$(id -u nobody)" --regid "$(id -g nobody)" --clear-groups \
        "$daemon" -f -c "$squat/ringbloomd.conf" 2>>"$dir/squatter.log" &
    spid=$!
    ngx_pids=$spid
    S() { "$cli" -i "$inst" -s "$squat/s.sock" --owner nobody "$@"; }
    wait_for 100 S info >/dev/null 2>&1 || { cat "$dir/squatter.log"; die "the squatter's ringbloomd did not start"; }
    S node add "127.0.0.1:$sq" >/dev/null || die "squatter: node add failed"
    kill -TERM "$spid"
    wait "$spid" 2>/dev/null
    spid=
    ngx_pids=
    [ -f "/dev/shm/ringbloom.$inst" ] || die "the squatter's segment did not stay"
    squatted=yes
fi

# ---- 1. no daemon: the fallback, logged once, then recovery ------------------
nginx_answers() { [ "$(http get "$front" /?k=probe | cut -f1)" = 200 ]; }
start_nginx

fallback_ok() {
    for k in a b c d e f g h i j; do
        [ "$(http get "$front" "/?k=$k" | cut -f3)" = fallback ] || return 1
    done
}
check "no daemon: nginx serves the fallback node (10 requests)" fallback_ok
sleep 1.2
check "no daemon: still the fallback a second later" fallback_ok
attach_logs=$(grep -c 'ringbloom: cannot attach' "$dir/error.log")
check "no daemon: 'cannot attach' logged once per worker ($attach_logs lines, 2 workers)" \
    test "$attach_logs" -ge 1 -a "$attach_logs" -le 2
if [ -n "$squatted" ]; then
    check "squatted segment: refused as not the daemon's user's (uid 0, the socket directory's owner)" \
        grep -q 'cannot attach on instance.*not to be trusted.*the daemon.s user is uid 0' "$dir/error.log"
    rm -f "/dev/shm/ringbloom.$inst"    # root clears it away before starting the daemon
fi

start_daemon
C reserve seen 0.01 100000 >/dev/null || die "reserve failed"
for b in $b1 $b2 $b3; do
    C node add "127.0.0.1:$b" >/dev/null || die "node add failed"
done
t0=$(date +%s)
check "daemon started: nginx answers from the segment within 5 s" wait_for 50 route_agrees
echo "     (recovered in about $(($(date +%s) - t0)) s)"

# ---- 2. routing: nginx and the CLI agree ---------------------------------------
check "200 keys: the backend that answered is the node the CLI names" route_agrees
nodes_used=$(cut -f2 "$dir/nginx.out" | sort -u | wc -l)
check "200 keys spread over all 3 nodes ($nodes_used used)" test "$nodes_used" -eq 3

# ---- 3. membership change through the CLI, no reload ---------------------------
cp "$dir/cli.out" "$dir/before.out"
C node remove "127.0.0.1:$b1" >/dev/null || die "node remove failed"
moved=$(grep -c "	127.0.0.1:$b1\$" "$dir/before.out")
check "node removed: the $moved keys it owned and all others follow the CLI" wait_for 20 route_agrees
check "node removed: no request goes to it any more" \
    sh -c "! grep -q '	127.0.0.1:$b1\$' '$dir/nginx.out'"
check "node removed: it owned keys before ($moved)" test "$moved" -gt 0

# ---- 4. cache on the second request --------------------------------------------
seen() { C exists seen "$1" >/dev/null 2>&1; }
for obj in obj-1 obj-2 obj-3; do
    r1=$(http get "$front" "/cache/?k=$obj")
    wait_for 30 seen "$obj"
    r2=$(http get "$front" "/cache/?k=$obj")
    r3=$(http get "$front" "/cache/?k=$obj")
    owner=$(C lookup "$obj")
    got="$(echo "$r1" | cut -f2) $(echo "$r2" | cut -f2) $(echo "$r3" | cut -f2)"
    check "$obj: X-Cache-Status BYPASS MISS HIT ($got)" test "$got" = "BYPASS MISS HIT"
    check "$obj: every answer from its node $owner" \
        test "$(echo "$r1" | cut -f3) $(echo "$r2" | cut -f3) $(echo "$r3" | cut -f3)" = \
        "$owner $owner $owner"
done

# ---- 5. admits never block: daemon stopped ---------------------------------------
kill -STOP "$dpid"
# shellcheck disable=SC2046  # "OK SECONDS DROPS", or the defaults after it
set -- $(http flood "$front" 500 3000) FAILED 99 0
check "daemon stopped: 500 admitting requests (3000-byte keys) all served ($2 s)" \
    sh -c "[ '$1' = OK ] && awk 'BEGIN { exit !($2 < 10) }'"
check "daemon stopped: overflowing admits dropped and counted (\$ringbloom_admit_drops = $3)" \
    test "${3:-0}" -gt 0 2>/dev/null
check "daemon stopped: routing still answers from the segment" route_agrees
check "daemon stopped: the drops are logged" grep -q 'ringbloom: admit buffer full' "$dir/error.log"
kill -CONT "$dpid"

# ---- 6. daemon shut down and restarted -------------------------------------------
C shutdown >/dev/null 2>&1
i=0
while kill -0 "$dpid" 2>/dev/null && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
kill -0 "$dpid" 2>/dev/null && die "ringbloomd did not shut down"
wait "$dpid" 2>/dev/null
dpid=
check "daemon down: nginx still serves every key from the last table" \
    sh -c "python3 '$dir/httpc.py' keys $front < '$keys' | cmp -s - '$dir/cli.out'"
check "daemon down: an admitting request is served at once" \
    test "$(http get "$front" /admit/?k=while-down | cut -f1,3)" = "200	queued"
start_daemon
check "daemon restarted: the admit queued while it was down arrives" wait_for 50 seen while-down
C node add "127.0.0.1:$b1" >/dev/null || die "node add failed"
t0=$(date +%s)
check "daemon restarted: nginx follows its new segment (node added back)" wait_for 100 route_agrees
echo "     (followed in about $(($(date +%s) - t0)) s)"

ngx_sh_no_crashes

finish
