#!/bin/sh
# `make demo` and a plain `ringbloomd` as root on a host where the Debian
# package is installed: /run/ringbloom is the service user's (systemd's
# RuntimeDirectory=, mode 0750).  In a private mount namespace (unshare
# -m) /run is a fresh tmpfs holding such a directory, of nobody's, so the
# host's /run is never touched.  A plain `ringbloomd` must refuse it (the
# refusal's safety stays) saying what to do: run it as that user, or
# choose another directory (the setting named); examples/demo.sh must run
# to its end there, and leave nothing behind (its temporary directory,
# its segment).  Needs root and unshare(1); skips (77) otherwise.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
daemon=$(cd "$(dirname "$daemon")" && pwd)/$(basename "$daemon")
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
demo=$(cd "$srcdir" && pwd)/examples/demo.sh
fail() { echo "$1"; echo "Checks: 1, Failures: 1, Errors: 0"; exit 1; }

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root (a run directory of another user, a mount namespace)"
    exit 77
fi
if ! command -v unshare >/dev/null 2>&1 || ! unshare -m --propagation private true 2>/dev/null; then
    echo "SKIP: no private mount namespace (unshare -m)"
    exit 77
fi
nobody=$(id -u nobody 2>/dev/null) || fail "no user nobody"
out=$(mktemp -d /tmp/rbtest.demo.XXXXXX) || fail "mktemp failed"
trap 'rm -rf "$out"' EXIT
ls /dev/shm > "$out/shm.before"

# In the namespace: /run as the package leaves it, then the two runs.
RB_DAEMON=$daemon RB_CLI=$cli timeout 120 unshare -m --propagation private sh -c '
    mount -t tmpfs -o mode=0755 ringbloom-test /run || exit 90
    mkdir -m 0750 /run/ringbloom && chown nobody /run/ringbloom || exit 91
    timeout 20 "$RB_DAEMON" -f > "$1/plain.out" 2>&1
    echo $? > "$1/plain.rc"
    timeout 60 sh "$2" > "$1/demo.out" 2>&1
    echo $? > "$1/demo.rc"
' sh "$out" "$demo"
rc=$?
[ $rc -eq 0 ] || fail "the mount namespace could not be set up (exit $rc)"

checks=0
check() {
    checks=$((checks + 1))
    eval "$1" || { cat "$out/plain.out" "$out/demo.out"; fail "FAILED: $2"; }
}
check '[ "$(cat "$out/plain.rc")" = 1 ]' "plain ringbloomd exited $(cat "$out/plain.rc"), not 1 (a refusal)"
check 'grep -q "directory /run/ringbloom belongs to uid $nobody" "$out/plain.out"' \
    "the refusal names /run/ringbloom and its owner"
check 'grep -q "run ringbloomd as nobody (sudo -u nobody ringbloomd" "$out/plain.out"' \
    "the refusal says to run ringbloomd as the directory's user"
check 'grep -q "the setting pidfile (-o pidfile=PATH)" "$out/plain.out"' \
    "the refusal names the setting that chooses another directory"
check '[ "$(cat "$out/demo.rc")" = 0 ]' "the demo exited $(cat "$out/demo.rc"), not 0"
check 'grep -q "10000 new, 10000 already present" "$out/demo.out" && grep -q "^  stopped\.$" "$out/demo.out"' \
    "the demo ran to its end"
tmpdir=$(sed -n "s|.*socket \(/.*\)/run/demo-[0-9]*\.sock)\$|\1|p" "$out/demo.out")
check '[ -n "$tmpdir" ] && [ ! -e "$tmpdir" ]' "the demo removed its directory ($tmpdir)"
ls /dev/shm > "$out/shm.after"
check 'cmp -s "$out/shm.before" "$out/shm.after" || ! diff "$out/shm.before" "$out/shm.after" | grep -q "^> ringbloom\.\(demo-\|default$\)"' \
    "the demo and the refused start left no segment"
sed -n 's/^ringbloomd: /  refusal: /p' "$out/plain.out"
echo "Checks: $checks, Failures: 0, Errors: 0"
exit 0
