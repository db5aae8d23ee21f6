#!/bin/sh
# tests/bench/nginx_admit.sh - part of `make bench` (not make check): the
# hit ratio of nginx's own proxy cache under three admission policies, on
# one trace, through a real nginx (the module built with nginx/build.sh,
# or RB_NGINX_MODULE), a private ringbloomd and a python3 backend:
#   - every miss stored (nginx's default);
#   - the second hit: ringbloom_seen / ringbloom_admit on an aging Bloom
#     filter (4 generations of 3 x the cache's objects), as nginx/README.md's
#     example;
#   - TinyLFU: ringbloom_tinylfu / ringbloom_admit ... tinylfu on
#     ADMIT.RESERVE's pair for the cache's objects, victims= the cache's
#     objects (one worker).
# Each policy has its own cache of CACHE objects (max_size, 4 KiB blocks of
# 1 KiB answers; nginx's cache manager evicts the least recently used).
# The trace (seeded, the same for all): REQUESTS requests, Zipf s = 0.8
# over OBJECTS objects plus 10% one-hit wonders; then the same with the
# popularity shifted half-way (each rank another object from then on).
# Prints each policy's hit ratio (X-Cache-Status HIT over all requests) and
# the backend's fetches.  Environment: REQUESTS (30000), OBJECTS (20000),
# CACHE (500), RB_NGINX_MODULE.  Exits 77 (skipped) without nginx,
# nginx-dev or python3.
# shellcheck disable=SC2317  # functions called through check / wait_for / trap
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
srcdir=$(cd "$srcdir" && pwd)
. "$srcdir/tests/harness/nginx.sh"
ngx_sh_skip "the benchmark's client and backend"
ngx_sh_setup bench-admit "bad$$"
requests=${REQUESTS:-30000}
objects=${OBJECTS:-20000}
cache=${CACHE:-500}
ngx_sh_module

cat > "$dir/trace.py" <<'PY'
# trace N OBJECTS SHIFT: the keys of N requests, one a line (seeded).
# run PORT PREFIX: GETs PREFIX?k=KEY for each key on stdin on one
#   keep-alive connection; prints "HITS REQUESTS".
# backend PORT: 1 KiB answers, max-age=3600, threaded; /fetches: the count.
import bisect, http.client, http.server, random, socketserver, sys

def trace(n, objects, shift):
    rnd = random.Random(42)
    weights = [1.0 / (r + 1) ** 0.8 for r in range(objects)]
    cum, t = [], 0.0
    for w in weights:
        t += w
        cum.append(t)
    remap = list(range(objects))
    random.Random(7).shuffle(remap)
    for i in range(n):
        if rnd.random() < 0.1:
            print("once-%d" % i)
            continue
        r = bisect.bisect_left(cum, rnd.random() * t)
        if shift and i >= n // 2:
            r = remap[r]
        print("obj-%d" % r)

def run(port, prefix):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    hits = n = 0
    for line in sys.stdin:
        c.request("GET", prefix + "?k=" + line.strip())
        r = c.getresponse()
        r.read()
        n += 1
        hits += r.getheader("X-Cache-Status") == "HIT"
    print(hits, n)

class Backend(http.server.BaseHTTPRequestHandler):
    fetches = 0
    body = b"x" * 1024

    def do_GET(self):
        if self.path == "/fetches":
            body = str(Backend.fetches).encode()
        else:
            Backend.fetches += 1
            body = Backend.body
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=3600")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

if sys.argv[1] == "trace":
    trace(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
elif sys.argv[1] == "run":
    run(int(sys.argv[2]), sys.argv[3])
elif sys.argv[1] == "backend":
    Server(("127.0.0.1", int(sys.argv[2])), Backend).serve_forever()
PY

ngx_sh_ports 2
# shellcheck disable=SC2086  # two words
set -- $ports
front=$1
bport=$2
ngx_sh_backend "$dir/trace.py" "$bport" || die "the backend did not start"
start_daemon
fetches() { python3 -c 'import http.client, sys; c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1])); c.request("GET", "/fetches"); print(c.getresponse().read().decode())' "$bport"; }
nginx_answers() { python3 -c 'import http.client, sys; c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=2); c.request("GET", "/ping"); sys.exit(c.getresponse().status != 200)' "$front" 2>/dev/null; }
msize=$((cache * 4))k

# policy NAME: one cache (and, for the ringbloom policies, its filter or
# pair made afresh) per run, nginx restarted on it.
run_policy() {  # run_policy POLICY TRACE: prints "HITS REQUESTS FETCHES"
    rm -rf "$dir/cache"
    C delete seen lfu lfu:dk >/dev/null 2>&1
    C reserve seen 0.01 $((cache * 3)) --aging 86400 --generations 4 >/dev/null || die "reserve failed"
    redis-cli -s "$sock" ADMIT.RESERVE lfu "$cache" >/dev/null || die "ADMIT.RESERVE failed"
    case $1 in
        all) store='' ; admit='' ;;
        second) store='proxy_no_cache $rb_unseen; proxy_cache_bypass $rb_unseen;'
                admit='ringbloom_admit seen $arg_k;' ;;
        tinylfu) store='proxy_no_cache $rb_refuse;'
                 admit='ringbloom_admit lfu $arg_k tinylfu;' ;;
    esac
    { ngx_sh_conf_head warn | sed 's/^worker_processes 2;/worker_processes 1;/'; cat <<CONF; } > "$dir/nginx.conf"
    proxy_cache_path $dir/cache keys_zone=bench:4m max_size=$msize manager_sleep=10ms;
    ringbloom_seen \$rb_seen seen \$arg_k;
    map \$rb_seen \$rb_unseen { "1" ""; default "1"; }
    ringbloom_tinylfu \$rb_admit lfu \$arg_k victims=$cache;
    map \$rb_admit \$rb_refuse { "1" ""; default "1"; }
    server {
        listen 127.0.0.1:$front;
        keepalive_requests 1000000;
        location = /ping { return 200; }
        location / {
            proxy_pass http://127.0.0.1:$bport;
            proxy_cache bench;
            proxy_cache_key \$arg_k;
            $store
            $admit
            add_header X-Cache-Status \$upstream_cache_status always;
        }
    }
}
CONF
    start_nginx
    f0=$(fetches)
    # shellcheck disable=SC2046  # two words
    set -- $(python3 "$dir/trace.py" run "$front" / < "$2")
    if [ $# -ne 2 ]; then
        # the run broke off: say why (nginx's log) rather than a figure
        grep -E '\[(alert|crit|emerg)\]|signal' "$dir/error.log" | tail -n 5 >&2
        return 1
    fi
    echo "$1 $2 $(($(fetches) - f0))"
    kill -TERM "$npid" 2>/dev/null
    wait_for 50 sh -c "! kill -0 $npid 2>/dev/null"
    npid=
}

echo "nginx_admit: $requests requests, Zipf 0.8 over $objects objects + 10% one-hit wonders,"
echo "  caches of $cache objects (max_size=$msize), one worker"
for shift in 0 1; do
    python3 "$dir/trace.py" trace "$requests" "$objects" "$shift" > "$dir/trace"
    [ "$shift" = 1 ] && echo "the same, popularity shifted half-way:"
    for policy in all second tinylfu; do
        out=$(run_policy "$policy" "$dir/trace") || die "the $policy run broke off"
        # shellcheck disable=SC2086  # three words
        set -- $out
        awk -v p="$policy" -v h="$1" -v n="$2" -v f="$3" 'BEGIN {
            name = p == "all" ? "every miss stored" : p == "second" ? "second hit (Bloom)" : "TinyLFU"
            printf "  %-20s hit ratio %5.1f%%  (%d of %d), %d fetched\n", name, 100 * h / n, h, n, f }'
    done
done
finish
