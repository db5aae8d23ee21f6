# tests/harness/nginx.sh - sourced by the end-to-end tests of the nginx
# module (nginx_module.sh, nginx_balancer.sh) once they have set $srcdir:
# what both do around their own checks.
#   ngx_sh_skip WHY: exits 77 without nginx ($RB_NGINX, /usr/sbin/nginx),
#     nginx-dev (unless $RB_NGINX_MODULE) or python3 (WHY: what the test
#     uses it for), or when the library is a sanitizer build the packaged
#     nginx cannot load a module from.
#   ngx_sh_setup PREFIX INST: RB_HARNESS exported (this directory: the
#     tests' Python helpers import http_get.py from it), a temporary
#     directory ($dir, mode 755 for
#     the workers), instance INST with its socket $sock, $dir/ringbloomd.conf
#     for a private daemon that nginx's user may write to ($user_line for
#     nginx.conf), and an EXIT trap that stops nginx ($npid, its process
#     group), the daemon ($dpid) and the pids in $ngx_pids, then removes
#     the shm object and $dir.
#   ngx_sh_module: the module ($module): $RB_NGINX_MODULE, or built with
#     nginx/build.sh into $dir.
#   ngx_sh_conf_head LEVEL: the first lines of an nginx.conf loading it
#     (error_log at LEVEL), up to ringbloom_socket inside http { }.
#   ngx_sh_backend SCRIPT PORT: python3 SCRIPT backend PORT 127.0.0.1:PORT
#     in the background (its pid in $ngx_pids and $bpid_PORT), waiting
#     until PORT takes connections; port_open PORT.
#   ngx_sh_ring SCRIPT PORT...: for each PORT a ring node 127.0.0.1:PORT
#     and its backend (ngx_sh_backend), or die.
#   start_daemon, start_nginx (its wait asks the test's nginx_answers),
#     ngx_sh_ports N ($ports: N free loopback ports, ports.sh),
#     ngx_sh_keys SUFFIX (200 keys), C (the CLI on the instance),
#     wait_for TENTHS COMMAND...,
#     check DESCRIPTION COMMAND..., die MESSAGE, ngx_sh_no_crashes (the
#     last check: nothing alarming in error.log) and finish (prints
#     "Checks: N, Failures: F" and exits).
# shellcheck disable=SC2317  # functions called through check / wait_for / trap
. "$srcdir/tests/harness/ports.sh"
daemon=${RB_DAEMON:-./daemon/ringbloomd}
cli=${RB_CLI:-./client/ringbloom}
nginx=${RB_NGINX:-/usr/sbin/nginx}

ngx_sh_skip() {
    if [ ! -x "$nginx" ]; then
        echo "SKIP: nginx is not installed ($nginx; Debian package nginx)"
        exit 77
    fi
    if [ -z "${RB_NGINX_MODULE:-}" ] && [ ! -f /usr/share/nginx/src/conf_flags ]; then
        echo "SKIP: nginx-dev is not installed (/usr/share/nginx/src/conf_flags; Debian package nginx-dev)"
        exit 77
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        echo "SKIP: python3 not found ($1)"
        exit 77
    fi
    # A sanitizer build (.ci/run's ASan/TSan trees) makes a module the
    # packaged, uninstrumented nginx cannot load.
    rbcore="$(dirname "$daemon")/../lib/.libs/librbcore.a"
    if [ -z "${RB_NGINX_MODULE:-}" ] && nm "$rbcore" 2>/dev/null | grep -q '__[at]san_'; then
        echo "SKIP: the library is built with a sanitizer; nginx cannot load a module made from it"
        exit 77
    fi
}

ngx_sh_cleanup() {
    if [ -n "$npid" ]; then
        # nginx runs in its own session (setsid): its process group holds
        # the master, the workers and the cache helpers.
        kill -TERM "$npid" "-$npid" 2>/dev/null
        i=0
        while { kill -0 "$npid" || kill -0 "-$npid"; } 2>/dev/null && [ "$i" -lt 30 ]; do
            i=$((i + 1))
            sleep 0.1
        done
        kill -KILL "$npid" "-$npid" 2>/dev/null
    fi
    if [ -n "$dpid" ]; then
        kill -CONT "$dpid" 2>/dev/null
        kill -KILL "$dpid" 2>/dev/null
    fi
    for p in $ngx_pids; do
        kill -KILL "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -f "/dev/shm/ringbloom.$inst"
    rm -rf "$dir"
}

ngx_sh_setup() {
    # http_get.py for the tests' helpers, imported without writing
    # __pycache__ into the source tree (distcheck's is read-only)
    export RB_HARNESS="$srcdir/tests/harness" PYTHONDONTWRITEBYTECODE=1
    dir=$(mktemp -d "/tmp/rbtest.$1.XXXXXX") || exit 1
    chmod 755 "$dir"    # nginx workers (nobody) reach the socket through it
    inst=$2
    sock="$dir/s.sock"
    dpid=
    npid=
    ngx_pids=
    trap ngx_sh_cleanup EXIT
    trap 'exit 1' INT TERM
    if [ "$(id -u)" -eq 0 ]; then
        user_line="user nobody nogroup;"
        writers="0 $(id -u nobody)"
    else
        user_line=
        writers=$(id -u)
    fi
    cat > "$dir/ringbloomd.conf" <<CONF
instance $inst
socket $sock
dir $dir/state
pidfile $dir/ringbloomd.pid
keep-segment no
socket-mode 0666
segment-mode 0644
allow-write-uid $writers
CONF
}

checks=0
failures=0
check() {   # check DESCRIPTION COMMAND...: one check, passed if COMMAND succeeds
    desc=$1
    shift
    checks=$((checks + 1))
    if "$@"; then
        echo "ok   $desc"
    else
        failures=$((failures + 1))
        echo "FAIL $desc"
    fi
}
finish() {
    if [ "$failures" -ne 0 ] && [ -f "$dir/error.log" ]; then
        echo "--- nginx error.log (last 30 lines)"
        tail -n 30 "$dir/error.log"
    fi
    echo "Checks: $checks, Failures: $failures, Errors: 0"
    [ "$failures" -eq 0 ] && exit 0
    exit 1
}
die() {     # die MESSAGE: the test cannot go on; counts as a failed check
    echo "FAIL $*"
    checks=$((checks + 1))
    failures=$((failures + 1))
    finish
}
ngx_sh_no_crashes() {
    crashes=$(grep -c -E '\[(alert|emerg|crit)\]|exited on signal' "$dir/error.log")
    check "nginx error.log: no alert, crit or crashed worker ($crashes)" test "$crashes" -eq 0
}

ngx_sh_module() {
    if [ -n "${RB_NGINX_MODULE:-}" ]; then
        module=$RB_NGINX_MODULE
        return
    fi
    module=$dir/ngx_http_ringbloom_module.so
    builddir=$(cd "$(dirname "$daemon")/.." && pwd)
    t0=$(date +%s)
    if ! RINGBLOOM_SRCDIR="$srcdir" RINGBLOOM_BUILDDIR="$builddir" \
            bash "$srcdir/nginx/build.sh" "$module" > "$dir/build.log" 2>&1; then
        cat "$dir/build.log"
        die "nginx/build.sh could not build the module"
    fi
    echo "module built with nginx/build.sh in $(($(date +%s) - t0)) s"
}

ngx_sh_conf_head() {
    cat <<CONF
load_module $module;
daemon off;
master_process on;
worker_processes 2;
$user_line
error_log $dir/error.log $1;
pid $dir/nginx.pid;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $dir/tmp-body;
    proxy_temp_path $dir/tmp-proxy;
    fastcgi_temp_path $dir/tmp-fastcgi;
    uwsgi_temp_path $dir/tmp-uwsgi;
    scgi_temp_path $dir/tmp-scgi;

    ringbloom_instance $inst;
    ringbloom_socket $sock;
CONF
}

port_open() {
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$1" 2>/dev/null
}
ngx_sh_backend() {
    # python3 itself, not a function's subshell: $! is the backend.
    python3 "$1" backend "$2" "127.0.0.1:$2" 2>>"$dir/backend.log" &
    ngx_pids="$ngx_pids $!"
    eval "bpid_$2=$!"
    wait_for 50 port_open "$2"
}

ngx_sh_ring() {
    script=$1
    shift
    for p in "$@"; do
        C node add "127.0.0.1:$p" >/dev/null || die "node add failed"
        ngx_sh_backend "$script" "$p" || die "backend $p did not start"
    done
}

ngx_sh_ports() {
    ports=$(rb_free_ports "$1")
    [ "$(echo "$ports" | wc -w)" -eq "$1" ] || die "no free loopback ports ($ports)"
}

ngx_sh_keys() {
    i=0
    while [ $i -lt 200 ]; do
        echo "key-$i-$(( (i * 2654435761) % 1000003 ))$1"
        i=$((i + 1))
    done
}

C() { "$cli" -i "$inst" -s "$sock" "$@"; }

wait_for() {    # wait_for TENTHS COMMAND...: until COMMAND succeeds
    n=$1
    shift
    i=0
    while ! "$@"; do
        i=$((i + 1))
        [ $i -ge "$n" ] && return 1
        sleep 0.1
    done
    return 0
}

daemon_up() { C info >/dev/null 2>&1; }
start_daemon() {
    "$daemon" -f -c "$dir/ringbloomd.conf" 2>>"$dir/daemon.log" &
    dpid=$!
    wait_for 100 daemon_up || { cat "$dir/daemon.log"; die "ringbloomd did not start"; }
}

nginx_up() {    # up, or gone (then the wait ends at once)
    kill -0 "$npid" 2>/dev/null || return 0
    nginx_answers
}
start_nginx() {
    if command -v setsid >/dev/null 2>&1; then
        setsid "$nginx" -p "$dir/" -c "$dir/nginx.conf" 2>"$dir/nginx.stderr" &
    else
        "$nginx" -p "$dir/" -c "$dir/nginx.conf" 2>"$dir/nginx.stderr" &
    fi
    npid=$!
    wait_for 100 nginx_up
    if ! kill -0 "$npid" 2>/dev/null || ! nginx_answers; then
        cat "$dir/nginx.stderr"
        die "nginx did not come up"
    fi
    [ -s "$dir/nginx.pid" ] && npid=$(cat "$dir/nginx.pid")
}
