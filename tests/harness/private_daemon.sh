# tests/harness/private_daemon.sh - sourced by the shell tests that drive a
# private ringbloomd (cli_golden.sh, cli_observe.sh, redis_tools.sh, node_exporter.sh...): rbd_sh_start PREFIX
# INST [CONF_LINES] makes a temporary directory ($dir), writes a
# configuration for instance INST with its socket ($dir/s.sock), state and
# pidfile there plus CONF_LINES, starts "$daemon" -f ($pid, its log in
# $dir/daemon.log) and waits until redis-cli PINGs it; on failure it prints
# why and exits 1 with a Check-style count.  An EXIT trap kills the daemon
# and removes its shm object and $dir.  Needs $daemon and redis-cli.
rbd_sh_fail() { echo "$1"; echo "Checks: 1, Failures: 1, Errors: 0"; exit 1; }
rbd_sh_cleanup() {
    [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null
    [ -n "${inst:-}" ] && rm -f "/dev/shm/ringbloom.$inst"
    [ -n "${dir:-}" ] && rm -rf "$dir"
}
rbd_sh_start() {
    command -v redis-cli >/dev/null 2>&1 ||
        rbd_sh_fail "redis-cli not found (Debian package redis-tools)"
    dir=$(mktemp -d "/tmp/rbtest.$1.XXXXXX") || rbd_sh_fail "mktemp failed"
    inst=$2
    pid=
    trap rbd_sh_cleanup EXIT
    trap 'exit 1' INT TERM
    printf 'instance %s\nsocket %s/s.sock\ndir %s/state\npidfile %s/pid\n%s\n' \
        "$inst" "$dir" "$dir" "$dir" "${3:-}" > "$dir/conf"
    "$daemon" -f -c "$dir/conf" 2>"$dir/daemon.log" &
    pid=$!
    _i=0
    while ! redis-cli -s "$dir/s.sock" PING >/dev/null 2>&1; do
        _i=$((_i + 1))
        [ $_i -gt 200 ] && { cat "$dir/daemon.log"; rbd_sh_fail "daemon did not start"; }
        sleep 0.05
    done
}
# rbd_sh_scrape URL OUT LOG: waits (<= 10 s) until an HTTP server started
# in the background (its output in LOG) answers URL, its page in OUT.
rbd_sh_scrape() {
    _i=0
    while ! curl -sf "$1" > "$2"; do
        _i=$((_i + 1))
        [ $_i -gt 100 ] && rbd_sh_fail "nothing answered $1: $(cat "$3")"
        sleep 0.1
    done
}
