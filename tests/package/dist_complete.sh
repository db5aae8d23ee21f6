#!/bin/sh
# dist_complete.sh TARBALL - every file git tracks is in the release
# tarball (make dist), except the few listed below that a release must not
# or need not ship.  .ci/run runs it after `make distcheck`, whose suite is
# a subset: this is what keeps a test's data file, a script or a header
# from being left out of EXTRA_DIST unnoticed.  Run from the git tree.
# Lists the files missing, prints "Checks: 1, Failures: 0" (or 1), and
# exits non-zero if any is missing.
set -u
tarball=${1:?usage: dist_complete.sh TARBALL}
top=$(tar -tzf "$tarball" | head -n 1 | cut -d/ -f1)
[ -n "$top" ] || { echo "dist_complete: $tarball lists nothing"; exit 1; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT
tar -tzf "$tarball" | sed "s|^$top/||" | sort > "$list"
# Not shipped: git's own files, an empty directory's placeholder, and the
# two units the build makes from their .in (tracked for readers browsing
# the repository; the tarball ships the .in).
missing=$(git ls-files | sort | comm -23 - "$list" |
          grep -Ev '(^|/)\.gitignore$|^m4/\.gitkeep$|^service/ringbloomd(@)?\.service$')
n=$(printf '%s' "$missing" | grep -c . || true)
[ -z "$missing" ] || printf 'missing from %s: %s\n' "$tarball" $missing
[ "$n" -eq 0 ] && echo "Checks: 1, Failures: 0" || { echo "Checks: 1, Failures: 1"; exit 1; }
