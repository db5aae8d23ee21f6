#!/bin/sh
# The Python package (python/) end to end: builds it with Debian's
# /usr/bin/python3, pip and setuptools (through pyproject.toml, as `pip
# install ./python` does) against this build tree's library
# (RINGBLOOM_BUILDDIR: lib/.libs/librbcore.a, so nothing need be
# installed) into a temporary directory, starts a private daemon and runs
# tests/python/test_ringbloom.py (the package's calls), test_tinylfu.py
# (TinyLFU's reader and Admission on a pair) and test_scrapy_crawls.py
# (the dupefilter between crawls of Scrapy processes) on it (their checks
# are listed there).
# Skips (77) only without python3-dev (Python.h); fails, naming the Debian
# package, without python3-setuptools, python3-pip, python3-build,
# python3-scrapy or python3-redis (the Client is redis-py underneath;
# python3-hiredis, when installed, is its parser: the test says which).  Also builds an sdist and a wheel from it with
# `python3 -m build`.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
srcdir=$(cd "$srcdir" && pwd)
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rbd_sh_fail "$1"; }
. "$srcdir/tests/python/python_env.sh"
py_needs setuptools python3-setuptools
py_needs scrapy python3-scrapy
py_needs redis python3-redis

"$py" -m pip --version > /dev/null 2>&1 ||
    fail "$py has no pip (Debian package python3-pip)"
py_needs build python3-build

# The test's own user may do everything but SHUTDOWN: the daemon's NOPERM
# reply is checked to arrive whole as PermissionDenied's .reply.
rbd_sh_start py "py$$" "acl-user $(id -u) +@all -shutdown"
# Built as `pip install ./python` builds it: through pyproject.toml's
# PEP 517 backend (setuptools, which runs setup.py for the extension),
# with Debian's setuptools (no build isolation, nothing downloaded), into
# a target directory.  pip builds in the tree it is given, so it gets a
# copy: the source directory may be read-only.  -v shows the compiler's
# lines, so a warning fails the test.
cp -R "$srcdir/python" "$dir/src" && chmod -R u+w "$dir/src" || fail "copying python/ failed"
RINGBLOOM_BUILDDIR="$builddir" RINGBLOOM_SRCDIR="$srcdir" PYTHONDONTWRITEBYTECODE=1 \
    "$py" -m pip install -v --no-build-isolation --no-deps --no-compile --no-cache-dir \
    --no-index --disable-pip-version-check --root-user-action=ignore \
    --target "$dir/lib" "$dir/src" > "$dir/build.log" 2>&1 ||
    { cat "$dir/build.log"; fail "building the package failed"; }
grep -q 'Building wheel for ringbloom (pyproject.toml)' "$dir/build.log" ||
    { cat "$dir/build.log"; fail "pip did not build through pyproject.toml"; }
grep -i 'warning' "$dir/build.log" | grep -v 'byte-compiling is disabled' &&
    fail "building the package gave warnings"
[ ! -e "$dir/lib/ringbloom/_ringbloom.c" ] || fail "the extension's C files were installed"
# `python3 -m build` (Debian's python3-build, no isolation): an sdist, and
# a wheel built from that sdist, so the sdist must hold every file the
# extension needs (MANIFEST.in: _ringbloom.h).
cp -R "$srcdir/python" "$dir/src2" && chmod -R u+w "$dir/src2" || fail "copying python/ failed"
RINGBLOOM_BUILDDIR="$builddir" RINGBLOOM_SRCDIR="$srcdir" PYTHONDONTWRITEBYTECODE=1 \
    "$py" -m build --no-isolation --outdir "$dir/dist" "$dir/src2" > "$dir/dist.log" 2>&1 ||
    { cat "$dir/dist.log"; fail "python3 -m build failed"; }
tar tzf "$dir"/dist/ringbloom-*.tar.gz | grep -q '/ringbloom/_ringbloom\.h$' ||
    fail "the sdist has no ringbloom/_ringbloom.h"
"$py" -c 'import sys, zipfile; n = zipfile.ZipFile(sys.argv[1]).namelist(); sys.exit(not any(f.startswith("ringbloom/_ringbloom.") and f.endswith(".so") for f in n))' \
    "$(ls "$dir"/dist/ringbloom-*.whl)" || fail "the wheel has no extension"
# The checks, one script after the other on the same daemon: every one
# runs, each prints its "Checks:" line, and any failure fails the test.
lib=$dir/lib
status=0
for t in test_ringbloom.py test_tinylfu.py test_scrapy_crawls.py; do
    echo "== $t"
    PYTHONPATH=$lib PYTHONDONTWRITEBYTECODE=1 "$py" -u "$srcdir/tests/python/$t" \
        "$inst" "$dir/s.sock" "$cli" || status=1
done
exit $status
