#!/bin/sh
# The Python package (python/) end to end: builds it with Debian's
# /usr/bin/python3 and setuptools against this build tree's library
# (RINGBLOOM_BUILDDIR: lib/.libs/librbcore.a, so nothing need be
# installed) into a temporary directory, starts a private daemon and runs
# tests/python/test_ringbloom.py on it (its checks are listed there).
# Skips (77) only without python3-dev (Python.h); fails, naming the Debian
# package, without python3-setuptools or python3-scrapy.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
srcdir=$(cd "$srcdir" && pwd)
# The build tree: the one holding the daemon under test.
builddir=$(cd "$(dirname "$daemon")/.." && pwd)
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rbd_sh_fail "$1"; }
# Debian's python3, the one python3-dev and the python3-* packages are
# for (a python3 earlier on PATH, as pyenv's, may have neither).
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
if [ -z "$inc" ] || [ ! -f "$inc/Python.h" ]; then
    echo "SKIP: $py has no Python.h (Debian package python3-dev)"
    exit 77
fi
# A sanitizer build (.ci/run's ASan/TSan trees) makes an extension the
# uninstrumented python3 cannot load (as nginx_module.sh's module).
if nm "$builddir/lib/.libs/librbcore.a" 2>/dev/null | grep -q '__[at]san_'; then
    echo "SKIP: the library is built with a sanitizer; python3 cannot load an extension made from it"
    exit 77
fi
"$py" -c 'import setuptools' 2>/dev/null ||
    fail "$py cannot import setuptools (Debian package python3-setuptools)"
"$py" -c 'import scrapy' 2>/dev/null ||
    fail "$py cannot import scrapy (Debian package python3-scrapy)"

rbd_sh_start py "py$$"
# setup.py runs in the (possibly read-only) source directory and writes
# only under --build-base.
(cd "$srcdir/python" && RINGBLOOM_BUILDDIR="$builddir" RINGBLOOM_SRCDIR="$srcdir" \
    PYTHONDONTWRITEBYTECODE=1 "$py" setup.py -q build --build-base "$dir/build") \
    > "$dir/build.log" 2>&1 || { cat "$dir/build.log"; fail "building the package failed"; }
grep -i 'warning:' "$dir/build.log" | grep -v 'byte-compiling is disabled' &&
    fail "the extension compiled with warnings"
lib=$(ls -d "$dir"/build/lib.*) || fail "no build/lib.* directory"
PYTHONPATH=$lib PYTHONDONTWRITEBYTECODE=1 "$py" -u "$srcdir/tests/python/test_ringbloom.py" \
    "$inst" "$dir/s.sock" "$cli"
