#!/bin/sh
# The nginx module's admits (nginx/), end to end with the packaged nginx
# (one worker, so one admit connection and one set of victims): builds the
# module (or takes RB_NGINX_MODULE), then
#   1. replies read by hiredis's reader (issue 42, item 15): a scripted
#      daemon on the admit socket answers the admits with an integer, an
#      error, a bulk string whose text begins with "-", an array holding
#      an error and a status: $ringbloom_admit_errors counts 1 (the
#      hand-written scanner counted every line beginning with "-": 3);
#      bytes that are not RESP, an array of 1000 elements and a bulk string
#      of 100000 bytes each make the worker log the reply it refused and
#      connect again; nginx keeps serving;
#   2. TinyLFU mode (issue 42, item 5) with a private ringbloomd and a
#      python3 backend counting its fetches: "ringbloom_admit PAIR KEY
#      tinylfu" sends ADMIT.TOUCH for every request, hits too (the
#      daemon's counts); ringbloom_tinylfu's $var in proxy_no_cache stores
#      while the worker keeps fewer than victims= keys, then refuses a key
#      new to the cache (its second request fetches again) until its
#      estimate reaches the victim's, the least recently used key it keeps,
#      and stores it then (HIT after); a cache hit makes a kept key the
#      most recent, so the victim is another;
#      a missing pair gives the fallback "0" (logged once); with the
#      daemon stopped requests are still served at once; configuration
#      errors (victims= out of range or not a number, a pair name too long,
#      a mode other than tinylfu) are refused by nginx -t with the reason.
# Needs nginx, nginx-dev (unless RB_NGINX_MODULE), python3 and redis-cli;
# skipped (77) without them.  Ends with "Checks: N, Failures: F".
# shellcheck disable=SC2317  # functions called through check / wait_for / trap
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/nginx.sh"
ngx_sh_skip "the test's HTTP client, backend and scripted daemon"
command -v redis-cli >/dev/null 2>&1 || { echo "SKIP: redis-cli not found (redis-tools)"; exit 77; }
ngx_sh_setup admits "adm$$"
ngx_sh_module

cat > "$dir/helper.py" <<'PY'
# get PORT PATH: one request; prints "STATUS<TAB>X-Cache-Status<TAB>BODY".
# fake SOCKET LOG: a scripted daemon on SOCKET; per connection, one reply
#   per command read (LOG gets "conn N" and "cmd N COMMAND..." lines):
#   connection 1: :1, -ERR one, $6 "-ERR x", *2 [:1, -ERR nested], +OK,
#   then "hello" (not RESP); connection 2: *1000 (past the element bound);
#   connection 3: a bulk string of 100000 bytes; then :1 to everything.
# many PORT PREFIX N: N requests of /c/?k=PREFIX-i, one connection each;
#   prints "OK SECONDS" if every one got 200, else "FAILED SECONDS".
# backend PORT: an HTTP server answering "fetched KEY N" (the Nth fetch of
#   ?k=KEY) with Cache-Control max-age=600.
import http.server, os, socket, sys, time, urllib.parse
sys.path.insert(0, os.environ["RB_HARNESS"])
from http_get import get

def commands(f):
    """RESP arrays of bulk strings from file f, as lists of str; ends at EOF."""
    while True:
        line = f.readline()
        if not line.startswith(b"*"):
            return
        args = []
        for _ in range(int(line[1:])):
            n = int(f.readline()[1:])
            args.append(f.read(n + 2)[:n].decode("utf-8", "replace"))
        yield args

SCRIPT = {1: [b":1\r\n", b"-ERR one\r\n", b"$6\r\n-ERR x\r\n", b"*2\r\n:1\r\n-ERR nested\r\n",
              b"+OK\r\n", b"hello\r\n"],
          2: [b"*1000\r\n"],
          3: [b"$100000\r\n" + b"a" * 100000 + b"\r\n"]}

def fake(path, log):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    os.chmod(path, 0o666)
    s.listen(8)
    out = open(log, "a", buffering=1)
    conn = 0
    while True:
        c, _ = s.accept()
        conn += 1
        out.write("conn %d\n" % conn)
        replies = list(SCRIPT.get(conn, []))
        f = c.makefile("rb")
        try:
            for args in commands(f):
                out.write("cmd %d %s\n" % (conn, " ".join(args)))
                c.sendall(replies.pop(0) if replies else b":1\r\n")
        except (OSError, ValueError):
            pass
        c.close()

class Backend(http.server.BaseHTTPRequestHandler):
    fetches = {}

    def do_GET(self):
        key = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).get("k", [""])[0]
        Backend.fetches[key] = Backend.fetches.get(key, 0) + 1
        body = ("fetched %s %d" % (key, Backend.fetches[key])).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=600")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass

cmd = sys.argv[1]
if cmd == "get":
    print("%d\t%s\t%s" % get(int(sys.argv[2]), sys.argv[3]))
elif cmd == "many":
    t0 = time.time()
    ok = all(get(int(sys.argv[2]), "/c/?k=%s-%d" % (sys.argv[3], i))[0] == 200
             for i in range(int(sys.argv[4])))
    print("%s %.2f" % ("OK" if ok else "FAILED", time.time() - t0))
elif cmd == "fake":
    fake(sys.argv[2], sys.argv[3])
elif cmd == "backend":
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Backend).serve_forever()
PY
http() { python3 "$dir/helper.py" "$@"; }
R() { redis-cli -s "$sock" "$@"; }

ngx_sh_ports 2
# shellcheck disable=SC2086  # two words
set -- $ports
front=$1
bport=$2
ngx_sh_backend "$dir/helper.py" "$bport" || die "the backend did not start"

one_worker() { ngx_sh_conf_head "$1" | sed 's/^worker_processes 2;/worker_processes 1;/'; }
stop_nginx() {
    kill -TERM "$npid" 2>/dev/null
    wait_for 50 sh -c "! kill -0 $npid 2>/dev/null" || kill -KILL "$npid" 2>/dev/null
    npid=
}
nginx_answers() { [ "$(http get "$front" /ping | cut -f1)" = 200 ]; }

# ---- 1. replies through hiredis's reader, from a scripted daemon ------------------
fake=$dir/fake.sock
python3 "$dir/helper.py" fake "$fake" "$dir/fake.log" 2>>"$dir/fake.err" &
ngx_pids="$ngx_pids $!"
wait_for 50 test -S "$fake" || die "the scripted daemon did not start"
one_worker info | sed "s|^    ringbloom_socket .*|    ringbloom_socket $fake;|" > "$dir/nginx.conf"
cat >> "$dir/nginx.conf" <<CONF
    server {
        listen 127.0.0.1:$front;
        location = /ping { return 200 "pong"; }
        location /admit/ { ringbloom_admit f \$arg_k; return 200 "queued"; }
        location = /errors { return 200 "\$ringbloom_admit_errors"; }
    }
}
CONF
start_nginx
commands_seen() { [ "$(grep -c "^cmd $1 " "$dir/fake.log" 2>/dev/null)" -ge "$2" ]; }
errors_are() { [ "$(http get "$front" /errors | cut -f3)" = "$1" ]; }
for k in 1 2 3 4 5; do http get "$front" "/admit/?k=r$k" > /dev/null; done
wait_for 100 commands_seen 1 5 || die "the scripted daemon did not get 5 admits: $(cat "$dir/fake.log")"
check "5 replies (:1, -ERR, a bulk string beginning with -, an array holding an error, +OK): 1 error counted ($(http get "$front" /errors | cut -f3))" \
    wait_for 50 errors_are 1
check "the error reply is logged whole" grep -q 'refused an admit or report: "ERR one" (1 refused so far)' "$dir/error.log"
refused() { grep -q "sent a reply that does not parse ($1); reconnecting" "$dir/error.log"; }
# Each refused reply drops the connection; the next admit (at most once a
# second) connects again and gets the next connection's script.
next_conn() {   # next_conn N: admits until the scripted daemon saw connection N's first command
    i=0
    while ! commands_seen "$1" 1; do
        i=$((i + 1))
        [ $i -gt 60 ] && return 1
        http get "$front" "/admit/?k=c$1-$i" > /dev/null
        sleep 0.1
    done
}
http get "$front" "/admit/?k=r6" > /dev/null
check "bytes that are not RESP: refused and logged" wait_for 50 refused "Protocol error.*"
check "... and the worker connects again" next_conn 2
check "an array of 1000 elements: refused (more than 16 elements)" wait_for 50 refused "more than 16 elements"
check "... and the worker connects again" next_conn 3
check "a bulk string of 100000 bytes: refused (an element longer than 4096 bytes)" \
    wait_for 50 refused "an element longer than 4096 bytes"
check "... and the worker connects again" next_conn 4
check "nginx serves all along" nginx_answers
stop_nginx

# ---- 2. TinyLFU mode, a real daemon ------------------------------------------------
start_daemon
R ADMIT.RESERVE lfu 1000 > /dev/null || die "ADMIT.RESERVE failed"
conf_body() {   # conf_body TINYLFU_LINE: the server and the cache around it
    cat <<CONF
    proxy_cache_path $dir/cache keys_zone=lfu:1m;
    $1
    ringbloom_tinylfu \$rb_nopair nopair \$arg_k;
    map \$rb_admit \$rb_refuse { "1" ""; default "1"; }
    server {
        listen 127.0.0.1:$front;
        location = /ping { return 200 "pong"; }
        location /c/ {
            proxy_pass http://127.0.0.1:$bport;
            proxy_cache lfu;
            proxy_cache_key \$arg_k;
            proxy_no_cache \$rb_refuse;
            add_header X-Cache-Status \$upstream_cache_status always;
            ringbloom_admit lfu \$arg_k tinylfu;
        }
        location /nopair/ { return 200 "\$rb_nopair"; }
    }
}
CONF
}
# nginx -t on a configuration with LINE: refused, saying WHY.
conf_refused() {
    { one_worker info; conf_body "$1"; } > "$dir/bad.conf"
    ! "$nginx" -t -p "$dir/" -c "$dir/bad.conf" > "$dir/bad.out" 2>&1 && grep -q "$2" "$dir/bad.out"
}
long=$(python3 -c 'print("p" * 253)')
check "victims=0 refused" conf_refused 'ringbloom_tinylfu $rb_admit lfu $arg_k victims=0;' 'victims= takes 1 to 1000000'
check "victims=x refused" conf_refused 'ringbloom_tinylfu $rb_admit lfu $arg_k victims=x;' 'victims= takes 1 to 1000000'
check "victims=1000001 refused" conf_refused 'ringbloom_tinylfu $rb_admit lfu $arg_k victims=1000001;' 'victims= takes 1 to 1000000'
check "a pair name of 253 bytes refused (its doorkeeper's would pass 255)" \
    conf_refused "ringbloom_tinylfu \$rb_admit $long \$arg_k;" 'invalid ringbloom TinyLFU pair name'
check "ringbloom_admit PAIR KEY with another mode than tinylfu refused" \
    conf_refused 'ringbloom_tinylfu $rb_admit lfu $arg_k; ringbloom_admit lfu $arg_k lfu;' 'takes FILTER KEY, PAIR KEY tinylfu, or off'
{ one_worker info; conf_body 'ringbloom_tinylfu $rb_admit lfu $arg_k victims=2;'; } > "$dir/nginx.conf"
start_nginx

touches() {     # touches KEY: the pair's estimate of KEY (the daemon's count of its touches)
    c=$(R CMS.QUERY lfu "$1" | head -n 1)
    d=$(R BF.EXISTS lfu:dk "$1")
    echo $((c + d))
}
touched() { [ "$(touches "$1")" -ge "$2" ]; }
# get KEY: one request of KEY, then until its touch arrived; prints X-Cache-Status.
n_of() { eval "echo \${n_$1:-0}"; }
get() {
    out=$(http get "$front" "/c/?k=$1")
    eval "n_$1=$(( $(n_of "$1") + 1 ))"
    wait_for 50 touched "$1" "$(n_of "$1")" || echo "(touch $(n_of "$1") of $1 did not arrive)" >&2
    echo "$out" | cut -f2
}
seq_of() {      # seq_of KEY N: X-Cache-Status of N requests of KEY
    s=
    i=0
    while [ $i -lt "$2" ]; do s="$s$(get "$1") "; i=$((i + 1)); done
    echo "${s% }"
}
a=$(seq_of a 2)
b=$(seq_of b 2)
check "victims=2: the first two keys are stored while there is room (a: $a, b: $b)" \
    test "$a $b" = "MISS HIT MISS HIT"
n=$(seq_of n 4)
check "a new key is refused until its estimate reaches the victim's (a, 2): n: $n" \
    test "$n" = "MISS MISS MISS HIT"
fetches=$(http get "$bport" "/?k=n" | cut -f3)
check "the backend fetched n 3 times, then nginx's cache answered ($fetches: this is the 4th)" \
    test "$fetches" = "fetched n 4"
check "every request was touched, hits too (a: $(touches a), n: $(touches n))" \
    test "$(touches a) $(touches n)" = "2 4"
b3=$(seq_of b 1)
m=$(seq_of m 6)
check "a hit ($b3) makes b the most recent: the victim is n (4), so m is stored at its 5th request: $m" \
    test "$b3 $m" = "HIT MISS MISS MISS MISS MISS HIT"
check "a missing pair: the fallback 0" test "$(http get "$front" /nopair/?k=x | cut -f3)" = 0
http get "$front" /nopair/?k=y > /dev/null
check "a missing pair: logged once" \
    test "$(grep -c 'cannot open TinyLFU pair "nopair"' "$dir/error.log")" = 1
kill -STOP "$dpid"
# shellcheck disable=SC2046  # "OK SECONDS", or the defaults after it
set -- $(http many "$front" stopped 50) FAILED 99
check "daemon stopped: 50 requests with their touches all served, in $2 s (< 10)" \
    sh -c "[ '$1' = OK ] && awk 'BEGIN { exit !($2 < 10) }'"
kill -CONT "$dpid"
ngx_sh_no_crashes

finish
