# tests/python/python_env.sh - sourced by the Python package's shell tests
# (python.sh, venv.sh) once $daemon and $srcdir are set: the tree under
# test and the interpreter, or a skip.
#   $builddir: the build tree holding the daemon under test;
#   $py: Debian's python3, the one python3-dev and the python3-* packages
#     are for (a python3 earlier on PATH, as pyenv's, may have neither);
#   exits 77 (skipped) when $py has no Python.h (python3-dev) or the
#   library is a sanitizer build (.ci/run's ASan/TSan trees), whose
#   extension the uninstrumented python3 cannot load (as nginx_module.sh's
#   module);
#   py_needs MODULE PACKAGE: fails (rbd_sh_fail) naming the Debian package
#     if $py cannot import MODULE.
builddir=$(cd "$(dirname "$daemon")/.." && pwd)
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
if [ -z "$inc" ] || [ ! -f "$inc/Python.h" ]; then
    echo "SKIP: $py has no Python.h (Debian package python3-dev)"
    exit 77
fi
if nm "$builddir/lib/.libs/librbcore.a" 2>/dev/null | grep -q '__[at]san_'; then
    echo "SKIP: the library is built with a sanitizer; python3 cannot load an extension made from it"
    exit 77
fi
py_needs() {
    "$py" -c "import $1" 2>/dev/null || rbd_sh_fail "$py cannot import $1 (Debian package $2)"
}
