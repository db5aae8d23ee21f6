"""setup.py - the C extension of the Python package `ringbloom`:
ringbloom._ringbloom (ringbloom/_*.c, on libringbloom's public header).
The package's metadata and modules are pyproject.toml's (PEP 517/518,
setuptools as the backend, which runs this file for the extension).

Which libringbloom the extension links, first match wins:
  1. RINGBLOOM_BUILDDIR=<a configured and built ringbloom tree>: that
     tree's lib/.libs/librbcore.a, linked statically (the objects of
     libringbloom, as the `ringbloom` CLI links them), with the libraries
     its lib/librbcore.la names; headers from RINGBLOOM_SRCDIR/lib
     (default: this file's parent, the checkout).  `make check` uses
     this, so it needs no installed library.
  2. pkg-config ringbloom (an installed libringbloom-dev or `make
     install`): -lringbloom, the shared library.
  3. This checkout's own build (../lib/.libs/librbcore.a beside this
     file, after `make`), statically as in 1.
Otherwise it stops and says what to install.

  pip install --no-build-isolation ./python  (from the repository root;
                                             offline, with the installed setuptools)
  python3 -m build --no-isolation python     (sdist and wheel; python3-build)
  /usr/bin/python3 -m pip install --no-build-isolation --no-deps --target DIR ./python
                                             (what tests/python/python.sh does)
Run it from this directory (pip does): the paths below are relative to it.
"""

import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _la_deps(la):
    """The dependency_libs of a libtool archive: ['-lbsd', ...]."""
    with open(la) as f:
        for line in f:
            if line.startswith("dependency_libs="):
                return shlex.split(line.split("=", 1)[1].strip().strip("'"))
    return []


def _from_build_tree(builddir, srcdir):
    a = os.path.join(builddir, "lib", ".libs", "librbcore.a")
    la = os.path.join(builddir, "lib", "librbcore.la")
    if not (os.path.exists(a) and os.path.exists(la)):
        sys.exit("setup.py: %s has no lib/.libs/librbcore.a: run make there first" % builddir)
    return dict(include_dirs=[os.path.join(srcdir, "lib")],
                extra_objects=[a],
                extra_link_args=_la_deps(la))


def _from_pkg_config():
    try:
        cflags = subprocess.run(["pkg-config", "--cflags", "ringbloom"], check=True,
                                capture_output=True, text=True).stdout
        libs = subprocess.run(["pkg-config", "--libs", "ringbloom"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return dict(extra_compile_args=shlex.split(cflags), extra_link_args=shlex.split(libs))


def _library():
    builddir = os.environ.get("RINGBLOOM_BUILDDIR")
    srcdir = os.environ.get("RINGBLOOM_SRCDIR") or os.path.dirname(HERE)
    if builddir:
        return _from_build_tree(builddir, srcdir)
    found = _from_pkg_config()
    if found is not None:
        return found
    if os.path.exists(os.path.join(os.path.dirname(HERE), "lib", ".libs", "librbcore.a")):
        return _from_build_tree(os.path.dirname(HERE), os.path.dirname(HERE))
    sys.exit("setup.py: libringbloom not found: install libringbloom-dev (or `make install` "
             "ringbloom), or build this checkout first (make), or set RINGBLOOM_BUILDDIR")


# The extension's files: the module, then one file per type (_ringbloom.h
# says what each holds).  Hidden visibility: only PyInit__ringbloom leaves
# the shared object, not the rbpy_* names the files share.
SOURCES = ["ringbloom/%s.c" % f for f in ("_ringbloom", "_keys", "_segment", "_named", "_ring",
                                          "_filter", "_cuckoo", "_cms", "_hll", "_cbf",
                                          "_tinylfu")]

lib = _library()
ext = Extension("ringbloom._ringbloom", sources=SOURCES, depends=["ringbloom/_ringbloom.h"],
                include_dirs=lib.get("include_dirs", []),
                extra_objects=lib.get("extra_objects", []),
                extra_compile_args=["-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                    "-Wno-missing-field-initializers", "-fvisibility=hidden"]
                + lib.get("extra_compile_args", []),
                extra_link_args=lib.get("extra_link_args", []))

# Name, version and extras are pyproject.toml's [project]; the extension's
# C files are not installed beside the modules.
setup(packages=["ringbloom"], include_package_data=False, ext_modules=[ext])
