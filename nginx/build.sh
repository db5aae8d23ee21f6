#!/bin/bash
# Builds ngx_http_ringbloom_module.so, a dynamic module for the nginx that
# Debian packages, from its nginx-dev sources:
#
#   nginx/build.sh OUTPUT.so
#
# Copies the nginx sources (NGINX_SRC, default /usr/share/nginx/src) to a
# temporary directory, runs nginx's configure with the packaged nginx's
# flags (conf_flags: --with-compat ... so the module loads into it) plus
# --add-dynamic-module=nginx/, runs "make modules" and copies the module to
# OUTPUT.  Warnings are errors (-Wall -Wextra -Werror).
#
# Environment: RINGBLOOM_SRCDIR (ringbloom's source tree, default: the
# directory above this script), RINGBLOOM_BUILDDIR (its built tree, holding
# lib/.libs/librbcore.a; default: the current directory if it has one, else
# RINGBLOOM_SRCDIR), NGINX_SRC, RB_NGINX_KEEP=1 (keep the build directory).
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTPUT.so" >&2
    exit 2
fi
case $1 in
    /*) out=$1 ;;
    *) out=$PWD/$1 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
RINGBLOOM_SRCDIR=$(cd "${RINGBLOOM_SRCDIR:-$here/..}" && pwd)
if [ -z "${RINGBLOOM_BUILDDIR:-}" ]; then
    if [ -f lib/.libs/librbcore.a ]; then
        RINGBLOOM_BUILDDIR=$PWD
    else
        RINGBLOOM_BUILDDIR=$RINGBLOOM_SRCDIR
    fi
fi
RINGBLOOM_BUILDDIR=$(cd "$RINGBLOOM_BUILDDIR" && pwd)
export RINGBLOOM_SRCDIR RINGBLOOM_BUILDDIR
nginx_src=${NGINX_SRC:-/usr/share/nginx/src}

if [ ! -f "$nginx_src/conf_flags" ] || [ ! -x "$nginx_src/configure" ]; then
    echo "$0: no nginx sources in $nginx_src (Debian package nginx-dev)" >&2
    exit 1
fi
if [ ! -f "$RINGBLOOM_BUILDDIR/lib/.libs/librbcore.a" ]; then
    echo "$0: $RINGBLOOM_BUILDDIR/lib/.libs/librbcore.a not found: build ringbloom first" >&2
    exit 1
fi

# conf_flags is a bash array assignment (NGX_CONF_FLAGS=( ... )) in
# Debian 12; a plain list of words is accepted too.
if grep -q '^ *NGX_CONF_FLAGS=(' "$nginx_src/conf_flags"; then
    # shellcheck disable=SC1090,SC1091
    . "$nginx_src/conf_flags"
else
    read -r -a NGX_CONF_FLAGS < <(tr '\n' ' ' < "$nginx_src/conf_flags")
fi

build=$(mktemp -d "${TMPDIR:-/tmp}/rbnginx-build.XXXXXX")
cleanup() {
    if [ "${RB_NGINX_KEEP:-0}" = 1 ]; then
        echo "build directory kept: $build"
    else
        rm -rf "$build"
    fi
}
trap cleanup EXIT

cp -R "$nginx_src/." "$build/"
cd "$build"
if ! ./configure "${NGX_CONF_FLAGS[@]}" \
        --with-cc-opt="-g -O2 -fPIC -fstack-protector-strong -D_FORTIFY_SOURCE=2 -Wall -Wextra -Wunused-parameter" \
        --with-ld-opt="-Wl,-z,relro -Wl,-z,now -fPIC" \
        --add-dynamic-module="$RINGBLOOM_SRCDIR/nginx" > configure.log 2>&1; then
    tail -n 30 configure.log >&2
    echo "$0: nginx configure failed (log above)" >&2
    exit 1
fi
# Debian's configure writes no top-level Makefile: use objs/Makefile.
makefile=Makefile
[ -f Makefile ] || makefile=objs/Makefile
# A fresh make, not a sub-make of whatever ran this script (its jobserver
# flags would only add warnings of make's own).
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
        make -f "$makefile" -j"${RB_NGINX_JOBS:-2}" modules > make.log 2>&1; then
    cat make.log >&2
    echo "$0: make modules failed (log above)" >&2
    exit 1
fi
if grep -v '^make' make.log | grep -q 'warning:'; then
    grep -B2 -A6 'warning:' make.log >&2
    echo "$0: the module compiles with warnings" >&2
    exit 1
fi
cp objs/ngx_http_ringbloom_module.so "$out"
echo "built $out"
