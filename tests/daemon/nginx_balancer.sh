#!/bin/sh
# End-to-end test of the nginx module's upstream balancer (ringbloom_hash,
# nginx/ngx_http_ringbloom_upstream.c): with tests/harness/nginx.sh, as
# nginx_module.sh, builds the module (or takes RB_NGINX_MODULE), runs a
# private ringbloomd, three python3 HTTP backends on loopback (each
# answers its own ring node name, sleeps d ms if asked, and counts its
# requests and its most requests in flight at once) and the packaged nginx
# in front, then checks that
#   (a) every key goes to the ring's first choice; with one backend killed
#       while requests flow none fails (proxy_next_upstream), the keys of
#       the live backends stay where they were, the dead one's keys go to
#       the second node of their preference list ("ringbloom lookup KEY -n
#       3"), and they return to it once it is back (after fail_timeout);
#       the ring itself is not touched;
#   (c) report=2: killed again, the backend's node is marked down on the
#       ring (RING.DOWN; "ringbloom nodes" says so, "ringbloom lookup" moves
#       its keys to their second node, and nginx follows), and once it is
#       back a probe after hold_down and report_timeout marks it up
#       (RING.UP);
#   (b) bounded loads: a Zipf trace (2000 requests over 200 keys, s = 1.1,
#       seed 1) sent by 32 concurrent clients to 30 ms backends, once
#       without and once with balance_factor=1.25: prints max / mean
#       in-flight and requests per backend and the share of requests that
#       left their first choice; the bounded run's max in flight stays
#       within ceil(c * clients / backends) + 1 (one more for the other
#       worker's race) and below the unbounded run's.
# Timing decides nothing but those in-flight figures.  Needs nginx,
# nginx-dev (unless RB_NGINX_MODULE) and python3; skipped (77) without
# them.  Ends with "Checks: N, Failures: F".
# shellcheck disable=SC2317  # functions called through check / wait_for / trap
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/nginx.sh"
ngx_sh_skip "the test's backends and clients"
ngx_sh_setup nginxlb "ngxlb$$"
ngx_sh_module

# ---- helpers --------------------------------------------------------------------
cat > "$dir/lb.py" <<'PY'
# backend PORT NAME: serves until killed.  GET /stats: "COUNT MAXINFLIGHT";
#   GET /reset: zeroes them; anything else: sleeps d ms (query d=) and
#   answers NAME, counted.
# keys PORT PATH: for each key on stdin one GET PATH?k=KEY; prints
#   "KEY<TAB>BODY" (BODY "ERROR <status>" if it was not a 200).
# loop PORT PATH STOPFILE PROGRESS: GETs the first 50 keys of stdin round
#   and round until STOPFILE exists, writing the requests done so far into
#   PROGRESS after each round; prints "REQUESTS FAILED".
# zipf N S SEED: N keys of stdin drawn with P(rank r) ~ 1 / r^S (the first
#   line is rank 1), one per line.
# load PORT PATH CLIENTS: the keys of stdin sent by CLIENTS concurrent
#   clients (each one request at a time); prints "KEY<TAB>BODY" per request.
# bounded FIRST RESULTS CLIENTS BACKENDS STATS...: the figures of a load
#   run (FIRST: "KEY<TAB>NODE" per key; STATS: "COUNT MAX" per backend);
#   prints "MAXINFLIGHT MAXMEAN COUNTMAXMEAN LEFTFIRST".
import http.client, http.server, os, random, socketserver, sys
import threading, time, urllib.parse

def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
        return r.status, body
    except (OSError, http.client.HTTPException):
        return 0, "ERROR"
    finally:
        c.close()

def answer(port, path, key):
    status, body = get(port, path + "?k=" + urllib.parse.quote(key) + "&d=" + os.environ.get("D", "0"))
    return body if status == 200 else "ERROR %d" % status

cmd = sys.argv[1]
if cmd == "backend":
    port, name = int(sys.argv[2]), sys.argv[3]
    lock = threading.Lock()
    state = {"count": 0, "now": 0, "max": 0}
    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass
        def reply(self, text):
            data = text.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def do_GET(self):
            u = urllib.parse.urlsplit(self.path)
            if u.path == "/stats":
                with lock:
                    self.reply("%d %d" % (state["count"], state["max"]))
                return
            if u.path == "/reset":
                with lock:
                    state["count"] = state["max"] = 0
                self.reply("reset")
                return
            d = int(urllib.parse.parse_qs(u.query).get("d", ["0"])[0])
            with lock:
                state["count"] += 1
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
            try:
                time.sleep(d / 1000.0)
                self.reply(name)
            finally:
                with lock:
                    state["now"] -= 1
    class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        request_queue_size = 256
        allow_reuse_address = True
    S(("127.0.0.1", port), H).serve_forever()
elif cmd == "keys":
    port, path = int(sys.argv[2]), sys.argv[3]
    for line in sys.stdin:
        key = line.rstrip("\n")
        print("%s\t%s" % (key, answer(port, path, key)))
elif cmd == "loop":
    port, path, stop, progress = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    keys = [l.rstrip("\n") for l in sys.stdin]
    n = bad = 0
    while not os.path.exists(stop):
        for key in keys[:50]:
            n += 1
            if answer(port, path, key).startswith("ERROR"):
                bad += 1
        with open(progress + ".tmp", "w") as f:
            f.write("%d\n" % n)
        os.rename(progress + ".tmp", progress)
    print(n, bad)
elif cmd == "zipf":
    n, s, seed = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    keys = [l.rstrip("\n") for l in sys.stdin]
    rng = random.Random(seed)
    weights = [1.0 / (r ** s) for r in range(1, len(keys) + 1)]
    for key in rng.choices(keys, weights, k=n):
        print(key)
elif cmd == "load":
    port, path, clients = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    trace = [l.rstrip("\n") for l in sys.stdin]
    out = [None] * len(trace)
    nxt = [0]
    lock = threading.Lock()
    def client():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= len(trace):
                return
            out[i] = answer(port, path, trace[i])
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key, body in zip(trace, out):
        print("%s\t%s" % (key, body))
elif cmd == "bounded":
    first = dict(l.rstrip("\n").split("\t")[:2] for l in open(sys.argv[2]))
    results = [l.rstrip("\n").split("\t") for l in open(sys.argv[3])]
    clients, backends = int(sys.argv[4]), int(sys.argv[5])
    stats = [tuple(map(int, s.split())) for s in sys.argv[6:]]
    counts = [c for c, _ in stats]
    maxin = max(m for _, m in stats)
    left = sum(1 for k, b in results if first.get(k) != b) / float(len(results))
    print("%d %.3f %.3f %.3f" % (maxin, maxin / (clients / float(backends)),
                                 max(counts) / (sum(counts) / float(len(counts))), left))
PY
lb() { python3 "$dir/lb.py" "$@"; }

ngx_sh_ports 4
# shellcheck disable=SC2086  # four words
set -- $ports
front=$1
b1=$2
b2=$3
b3=$4

start_backend() { ngx_sh_backend "$dir/lb.py" "$1"; }   # named 127.0.0.1:PORT

keys="$dir/keys"
ngx_sh_keys "" > "$keys"

servers="server 127.0.0.1:$b1 max_fails=1 fail_timeout=2s;
        server 127.0.0.1:$b2 max_fails=1 fail_timeout=2s;
        server 127.0.0.1:$b3 max_fails=1 fail_timeout=2s;"
{ ngx_sh_conf_head notice; cat <<CONF; } > "$dir/nginx.conf"

    upstream ring {
        ringbloom_hash \$arg_k;
        $servers
    }
    upstream bounded {
        ringbloom_hash \$arg_k balance_factor=1.25;
        $servers
    }
    upstream reported {
        ringbloom_hash \$arg_k report=2 report_timeout=2s hold_down=2s;
        $servers
    }
    server {
        listen 127.0.0.1:$front;
        proxy_next_upstream error timeout http_502;
        proxy_connect_timeout 2s;
        location /ring/ { proxy_pass http://ring; }
        location /bounded/ { proxy_pass http://bounded; }
        location /reported/ { proxy_pass http://reported; }
    }
}
CONF

# ---- start: daemon with the three nodes, backends, nginx ------------------------
start_daemon
ngx_sh_ring "$dir/lb.py" "$b1" "$b2" "$b3"

nginx_answers() { echo probe | lb keys "$front" /ring/ | grep -q '	127'; }
start_nginx

# Each key's preference list: KEY<TAB>FIRST<TAB>SECOND<TAB>THIRD.
while read -r k; do
    printf '%s\t%s\n' "$k" "$(C lookup "$k" -n 3 | paste -s -)"
done < "$keys" > "$dir/prefs"
cut -f1,2 "$dir/prefs" > "$dir/first"

# ---- (a) a backend killed and brought back ----------------------------------------
lb keys "$front" /ring/ < "$keys" > "$dir/a0"
check "(a) 200 keys: each answered by its first node on the ring" cmp -s "$dir/a0" "$dir/first"
used=$(cut -f2 "$dir/a0" | sort -u | wc -l)
check "(a) the keys spread over the 3 backends ($used)" test "$used" -eq 3

# The requests flow before the kill and go on after it for as many again,
# however slow the machine (each step waits for the loop's progress).
loop_done() { cat "$dir/progress" 2>/dev/null || echo 0; }
loop_reached() { [ "$(loop_done)" -ge "$1" ]; }
wait_progress() {   # wait_progress N: until the loop has done N requests (<= 120 s)
    wait_for 1200 loop_reached "$1" ||
        { touch "$dir/stop"; die "(a) the request loop did $(loop_done) of $1 requests in 120 s"; }
}
lb loop "$front" /ring/ "$dir/stop" "$dir/progress" < "$keys" > "$dir/loop.out" &
lpid=$!
wait_progress 100
eval "kill -KILL \$bpid_$b2"
killed_at=$(loop_done)
wait_progress $((killed_at + 200))
touch "$dir/stop"
wait "$lpid"
# shellcheck disable=SC2046  # "REQUESTS FAILED"
set -- $(cat "$dir/loop.out") 0 -1
check "(a) backend $b2 killed while requests flow: none failed ($2 of $1)" test "$1" -gt 0 -a "$2" -eq 0

lb keys "$front" /ring/ < "$keys" > "$dir/a1"
awk -F'\t' -v dead="127.0.0.1:$b2" '
    NR == FNR { want[$1] = ($2 == dead) ? $3 : $2; next }
    { n++; if ($2 != want[$1]) { bad++; if (bad <= 5) print "  " $1 ": " $2 " (wanted " want[$1] ")" } }
    END { print n + 0, bad + 0 > "/dev/stderr" }' "$dir/prefs" "$dir/a1" 2> "$dir/a1.sum"
# shellcheck disable=SC2046  # "KEYS WRONG"
set -- $(cat "$dir/a1.sum")
moved=$(awk -F'\t' -v dead="127.0.0.1:$b2" '$2 == dead' "$dir/first" | wc -l)
check "(a) backend down: 200 keys answered, the $moved keys of the dead one by their second node, the others unmoved ($2 wrong)" \
    test "$1" -eq 200 -a "$2" -eq 0
check "(a) the dead backend owned keys ($moved)" test "$moved" -gt 0
check "(a) without report= the ring is not touched: no node down" \
    sh -c "! '$cli' -i '$inst' -s '$sock' nodes | grep -q down"

start_backend "$b2" || die "backend $b2 did not restart"
sleep 2.2   # fail_timeout=2s
back() {
    lb keys "$front" /ring/ < "$keys" > "$dir/a2"
    cmp -s "$dir/a2" "$dir/first"
}
check "(a) backend back: after fail_timeout its keys return to it (every key on its first node)" wait_for 50 back

# ---- (c) report=2: RING.DOWN after two failures, RING.UP after a probe ------------
eval "kill -KILL \$bpid_$b2"
node_down() {   # node_down PORT: "ringbloom nodes" says it is down
    C nodes | grep -q "^127.0.0.1:$1	.*down"
}
reported_down() {
    lb keys "$front" /reported/ < "$keys" > "$dir/c0"
    node_down "$b2"
}
check "(c) backend $b2 killed: report=2 marks its node down on the ring" wait_for 100 reported_down
check "(c) the worker logged it: ringbloom_hash: RING.DOWN 127.0.0.1:$b2" \
    grep -q "ringbloom_hash: RING.DOWN 127.0.0.1:$b2" "$dir/error.log"
check "(c) no request failed on the way ($(grep -c ERROR "$dir/c0"))" \
    sh -c "! grep -q ERROR '$dir/c0'"
ring_moved() {  # nginx (an upstream without report) and the CLI agree
    lb keys "$front" /ring/ < "$keys" > "$dir/c1"
    C lookup - < "$keys" > "$dir/c1.cli"
    cmp -s "$dir/c1" "$dir/c1.cli"
}
check "(c) node down: every key where the ring now puts it (nginx = ringbloom lookup)" wait_for 30 ring_moved
check "(c) node down: the ring gives its keys to their second node" \
    sh -c "awk -F'\t' -v dead=127.0.0.1:$b2 '{ print \$1 \"\t\" ((\$2 == dead) ? \$3 : \$2) }' '$dir/prefs' | cmp -s - '$dir/c1.cli'"
start_backend "$b2" || die "backend $b2 did not restart"
reported_up() {
    lb keys "$front" /reported/ < "$keys" > /dev/null
    ! node_down "$b2"
}
check "(c) backend back: a probe after report_timeout marks its node up (RING.UP)" wait_for 100 reported_up
check "(c) the worker logged it: ringbloom_hash: RING.UP 127.0.0.1:$b2" \
    grep -q "ringbloom_hash: RING.UP 127.0.0.1:$b2" "$dir/error.log"
check "(c) node up: every key on its first node again" wait_for 50 back
check "(c) the daemon refused no report" \
    sh -c "! grep -q 'refused an admit or report' '$dir/error.log'"

# ---- (b) bounded loads --------------------------------------------------------------
lb zipf 2000 1.1 1 < "$keys" > "$dir/trace"
run_load() {    # run_load PATH OUT: prints the figures of one run
    for b in $b1 $b2 $b3; do
        echo x | lb keys "$b" /reset > /dev/null
    done
    D=30 lb load "$front" "$1" 32 < "$dir/trace" > "$2"
    stats=
    for b in $b1 $b2 $b3; do
        stats="$stats '$(python3 -c "
import http.client
c = http.client.HTTPConnection('127.0.0.1', $b, timeout=10)
c.request('GET', '/stats')
print(c.getresponse().read().decode())")'"
    done
    eval "lb bounded '$dir/first' '$2' 32 3 $stats"
}
# shellcheck disable=SC2046  # "MAXINFLIGHT MAXMEAN COUNTMAXMEAN LEFTFIRST"
set -- $(run_load /ring/ "$dir/b0")
u_max=$1 u_ratio=$2 u_count=$3 u_left=$4
# shellcheck disable=SC2046
set -- $(run_load /bounded/ "$dir/b1")
c_max=$1 c_ratio=$2 c_count=$3 c_left=$4
echo "     zipf 2000 requests, 200 keys, s=1.1, 32 clients, 3 backends (mean 10.67 in flight each):"
echo "     without bound:       max in flight $u_max, max/mean $u_ratio; requests max/mean $u_count; left first choice $u_left"
echo "     balance_factor=1.25: max in flight $c_max, max/mean $c_ratio; requests max/mean $c_count; left first choice $c_left"
errors=$(cat "$dir/b0" "$dir/b1" | grep -c 'ERROR')
check "(b) 4000 requests answered ($errors failed)" test "$errors" -eq 0
# ceil(1.25 * 32 / 3) = 14, plus one for the other worker's race: 15,
# i.e. max/mean <= 1.25 + 0.16.
check "(b) balance_factor=1.25: max in flight $c_max <= 15 (max/mean $c_ratio <= 1.25 + 0.16)" \
    test "$c_max" -le 15
check "(b) bounded max in flight ($c_max) below the unbounded one ($u_max)" test "$c_max" -lt "$u_max"
check "(b) without the bound every request went to its first choice ($u_left)" \
    awk "BEGIN { exit !($u_left == 0) }"

ngx_sh_no_crashes

finish
