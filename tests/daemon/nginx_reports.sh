#!/bin/sh
# End-to-end test of what ringbloom_hash's reports may do to the shared
# ring (issue 25, item 6: two requests to a URL that answers 502 took 2 of
# 3 nodes down, alternating requests made them flap, and with every backend
# down every node went down and other readers got an empty ring).  With
# tests/harness/nginx.sh, as nginx_balancer.sh: the module, a private
# ringbloomd (default ring-down-max-percent, 50), three python3 backends on
# loopback that answer 502 to every path under /bad/ and their own name to
# the others, and the packaged nginx with proxy_next_upstream error timeout
# http_502 in front; then checks, reading the ring's node states with
# "ringbloom nodes" after each step, that
#   (b) an application's 502 is not a failure for report=2 as the README
#       writes it: 2 requests to a 502 URL, then 40 alternating 502 / 200
#       requests over 4 s, leave every node up and send no RING.DOWN nor
#       RING.UP;
#       with report_status=502 the same 502s count;
#   (a) however many servers fail, reports take at most half of the nodes
#       down (1 of 3): the 502s counted by report_status=502, then every
#       backend killed (connections refused); readers keep a ring
#       ("ringbloom lookup" answers), the daemon's refusals are logged;
#   (c) a node reported down stays down for hold_down (5 s here) though its
#       backend is back at once and requests keep coming, then a probe
#       brings it up within report_timeout (1 s) plus slack; and a report
#       the daemon refused is sent again by a failed probe once the share
#       allows it.
# Needs nginx, nginx-dev (unless RB_NGINX_MODULE) and python3; skipped
# (77) without them.  Ends with "Checks: N, Failures: F".
# shellcheck disable=SC2317  # functions called through check / wait_for / trap
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/nginx.sh"
ngx_sh_skip "the test's backends and clients"
ngx_sh_setup nginxrep "ngxrep$$"
ngx_sh_module

cat > "$dir/rep.py" <<'PY'
# backend PORT NAME: serves until killed: 502 to a path under /bad/, else
#   200 and NAME.
# get PORT PATH...: one GET each, PACE seconds apart (environment, default
#   0); prints "STATUS BODY" per request (status 0: no answer).
import http.client, http.server, os, socketserver, sys, time

cmd = sys.argv[1]
if cmd == "backend":
    port, name = int(sys.argv[2]), sys.argv[3].encode()
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass
        def do_GET(self):
            bad = self.path.split("?")[0].split("/")[2:3] == ["bad"]
            body = b"bad gateway" if bad else name
            self.send_response(502 if bad else 200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
    S(("127.0.0.1", port), H).serve_forever()
elif cmd == "get":
    port = int(sys.argv[2])
    for path in sys.argv[3:]:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        try:
            c.request("GET", path)
            r = c.getresponse()
            print(r.status, r.read().decode("utf-8", "replace"))
        except (OSError, http.client.HTTPException):
            print(0, "ERROR")
        finally:
            c.close()
        time.sleep(float(os.environ.get("PACE", "0")))
PY
rep() { python3 "$dir/rep.py" "$@"; }

ngx_sh_ports 4
# shellcheck disable=SC2086  # four words
set -- $ports
front=$1
b1=$2
b2=$3
b3=$4

start_backend() { ngx_sh_backend "$dir/rep.py" "$1"; }  # named 127.0.0.1:PORT
port_closed() { ! port_open "$1"; }
kill_backend() {    # kill_backend PORT: killed, its port refusing
    eval "kill -KILL \$bpid_$1"
    wait_for 20 port_closed "$1"
}

servers="server 127.0.0.1:$b1 max_fails=1 fail_timeout=1s;
        server 127.0.0.1:$b2 max_fails=1 fail_timeout=1s;
        server 127.0.0.1:$b3 max_fails=1 fail_timeout=1s;"
{ ngx_sh_conf_head notice; cat <<CONF; } > "$dir/nginx.conf"

    upstream readme {
        ringbloom_hash \$arg_k report=2;
        $servers
    }
    upstream status {
        ringbloom_hash \$arg_k report=2 report_timeout=1s report_status=502;
        $servers
    }
    upstream hold {
        ringbloom_hash \$arg_k report=2 report_timeout=1s hold_down=5s;
        $servers
    }
    server {
        listen 127.0.0.1:$front;
        proxy_next_upstream error timeout http_502;
        proxy_connect_timeout 2s;
        location /readme/ { proxy_pass http://readme; }
        location /status/ { proxy_pass http://status; }
        location /hold/ { proxy_pass http://hold; }
    }
}
CONF

start_daemon
ngx_sh_ring "$dir/rep.py" "$b1" "$b2" "$b3"
nginx_answers() { rep get "$front" /readme/ok?k=probe | grep -q '^200 127'; }
start_nginx

ndown() { C nodes | grep -c 'down$'; }
node_is_down() { C nodes | grep -q "^127.0.0.1:$1	.*down$"; }
all_up() {
    for b in $b1 $b2 $b3; do
        C node up "127.0.0.1:$b" > /dev/null || return 1
    done
}
reports() {     # reports VERB: the module's reports logged so far
    grep -c "ringbloom_hash: $1 " "$dir/error.log"
}
key_on() {      # key_on PORT: a key whose first node is 127.0.0.1:PORT
    i=0
    while [ $i -lt 200 ]; do
        [ "$(C lookup "k$i")" = "127.0.0.1:$1" ] && { echo "k$i"; return 0; }
        i=$((i + 1))
    done
    return 1
}

# ---- (b) an application's 502 is no failure unless report_status= says so ---------
rep get "$front" /readme/bad/x?k=a /readme/bad/x?k=b > "$dir/b0"
sleep 0.3
d0=$(ndown)
paths=
i=0
while [ $i -lt 20 ]; do
    paths="$paths /readme/bad/x?k=f$i /readme/ok?k=f$i"
    i=$((i + 1))
done
# shellcheck disable=SC2086  # 40 paths, over 4 s
PACE=0.1 rep get "$front" $paths > "$dir/b1"
sleep 0.3
d1=$(ndown)
echo "     report=2: 2 requests to a 502 URL -> $d0 node(s) down; 40 alternating 502/200 -> $d1 down," \
    "$(reports RING.DOWN) RING.DOWN and $(reports RING.UP) RING.UP sent" \
    "($(grep -c '^200 127' "$dir/b1") of the 20 200s answered: nginx's own max_fails=1 takes the rest)"
check "(b) 2 requests whose every backend answers 502: the 502 reaches the client" \
    test "$(grep -c '^502 ' "$dir/b0")" -eq 2
check "(b) report=2 counts no 502: no node down after 2 requests ($d0) nor after 40 alternating ($d1)" \
    test "$d0" -eq 0 -a "$d1" -eq 0
check "(b) no RING.DOWN nor RING.UP sent ($(reports RING.DOWN), $(reports RING.UP))" \
    test "$(reports RING.DOWN)" -eq 0 -a "$(reports RING.UP)" -eq 0

# ---- (a) at most half of the nodes down, whatever fails ---------------------------
# Requests until each server was reported once (nginx's own max_fails=1
# leaves a failed server alone for fail_timeout=1s, so this takes ~1 s).
three_reports() {   # three_reports BASE PATH: 3 more RING.DOWN than BASE
    rep get "$front" "$2?k=q$(date +%N)" > /dev/null
    sleep 0.1
    [ "$(reports RING.DOWN)" -ge $(($1 + 3)) ]
}
wait_for 100 three_reports 0 /status/bad/x
sleep 0.3
d2=$(ndown)
check "(b) report_status=502: the same 502s are failures (RING.DOWN sent $(reports RING.DOWN) times)" \
    test "$(reports RING.DOWN)" -ge 3
check "(a) every backend answering 502 (counted): 1 of 3 nodes down, not more ($d2)" test "$d2" -eq 1
check "(a) the daemon's refusal is logged (ring-down-max-percent)" \
    grep -q 'refused an admit or report: "ERR RING.DOWN refused: 2 of 3 nodes would be down or draining' \
    "$dir/error.log"
C lookup some-key > "$dir/a0.lookup" 2>&1
check "(a) readers keep a ring ($(cat "$dir/a0.lookup"))" grep -q '^127.0.0.1:' "$dir/a0.lookup"

all_up || die "node up failed"
for b in $b1 $b2 $b3; do
    kill_backend "$b"
done
downs0=$(reports RING.DOWN)
wait_for 100 three_reports "$downs0" /readme/ok
sleep 0.3
d3=$(ndown)
echo "     every backend refusing connections, each reported through report=2" \
    "($(($(reports RING.DOWN) - downs0)) RING.DOWN sent): $d3 of 3 nodes down"
check "(a) every backend refusing connections, each reported: 1 of 3 nodes down, not more ($d3)" \
    test "$(reports RING.DOWN)" -ge $((downs0 + 3)) -a "$d3" -eq 1
C lookup some-key > "$dir/a1.lookup" 2>&1
check "(a) readers keep a ring ($(cat "$dir/a1.lookup"))" grep -q '^127.0.0.1:' "$dir/a1.lookup"

# ---- (c) hold-down: no probe, no RING.UP for hold_down=5s ---------------------------
all_up || die "node up failed"
for b in $b1 $b2 $b3; do
    start_backend "$b" || die "backend $b did not restart"
done
kill_backend "$b1"
k1=$(key_on "$b1") || die "no key on 127.0.0.1:$b1"
hold_reported() {
    rep get "$front" "/hold/ok?k=$k1" > /dev/null
    node_is_down "$b1"
}
check "(c) backend $b1 refusing connections: report=2 marks its node down" wait_for 50 hold_reported
t0=$(date +%s%N)
start_backend "$b1" || die "backend $b1 did not restart"
ups0=$(reports RING.UP)
# Requests keep coming (one per 0.1 s, the node's own key among them) while
# the state is sampled; the node must stay down until 3 s after it was seen
# down (hold_down=5s counts from the report, a moment before: 2 s to spare).
stayed=1
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 3000 ]; do
    rep get "$front" "/hold/ok?k=$k1" "/hold/ok?k=x$(date +%N)" > /dev/null
    node_is_down "$b1" || { stayed=0; break; }
    sleep 0.1
done
held=$(( ($(date +%s%N) - t0) / 1000000 ))
check "(c) backend back at once, requests flowing: the node stays down for 3 s at least (${held} ms)" \
    test "$stayed" -eq 1
hold_up() {
    rep get "$front" "/hold/ok?k=y$(date +%N)" > /dev/null
    ! node_is_down "$b1"
}
wait_for 80 hold_up
up_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "     hold_down=5s: the node came up ${up_ms} ms after it was seen down"
check "(c) after hold_down a probe brings it up, within 5 s + report_timeout + 3 s (${up_ms} ms)" \
    sh -c "! '$cli' -i '$inst' -s '$sock' nodes | grep -q '^127.0.0.1:$b1	.*down$' && [ $up_ms -ge 3000 ] && [ $up_ms -le 9000 ]"
check "(c) one RING.UP for it ($(($(reports RING.UP) - ups0)))" test "$(($(reports RING.UP) - ups0))" -eq 1

# A refused report is sent again: b2 and b3 die; one node goes down, the
# other's RING.DOWN is refused (2 of 3).  The first one's backend comes
# back: after hold_down a probe brings its node up, and the next failed
# probe of the other sends its RING.DOWN again, which the daemon now takes.
downs0=$(reports RING.DOWN)
kill_backend "$b2"
kill_backend "$b3"
k2=$(key_on "$b2") || die "no key on 127.0.0.1:$b2"
k3=$(key_on "$b3") || die "no key on 127.0.0.1:$b3"
both_reported() {
    rep get "$front" "/hold/ok?k=$k2" "/hold/ok?k=$k3" > /dev/null
    [ "$(reports RING.DOWN)" -ge $((downs0 + 2)) ]
}
wait_for 80 both_reported
check "(c) two backends dead, both reported: one node down, the other's report refused ($(ndown) down)" \
    test "$(reports RING.DOWN)" -ge $((downs0 + 2)) -a "$(ndown)" -eq 1
first=$b2
node_is_down "$b2" || first=$b3
other=$b2
[ "$first" = "$b2" ] && other=$b3
start_backend "$first" || die "backend $first did not restart"
again() {
    rep get "$front" "/hold/ok?k=$k2" "/hold/ok?k=$k3" "/hold/ok?k=z$(date +%N)" > /dev/null
    node_is_down "$other" && ! node_is_down "$first"
}
check "(c) $first back: up after hold_down, and the refused $other reported again, now taken" \
    wait_for 150 again
check "(c) 1 of 3 nodes down ($(ndown))" test "$(ndown)" -eq 1

ngx_sh_no_crashes

finish
