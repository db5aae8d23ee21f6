# tests/package/checks.sh - sourced by destdir.sh and install.sh: their
# count of checks.  ok DESC / bad DESC record one (printing "ok: " or
# "FAIL: "); check DESC CMD... records whether CMD succeeds; quiet CMD...
# runs CMD without its output.  $checks and $fails feed the
# "Checks: N, Failures: F" line each script ends with.
checks=0
fails=0
ok() { checks=$((checks + 1)); echo "ok: $1"; }
bad() { checks=$((checks + 1)); fails=$((fails + 1)); echo "FAIL: $1"; }
check() { local desc=$1; shift; if "$@"; then ok "$desc"; else bad "$desc"; fi; }
quiet() { "$@" > /dev/null 2>&1; }
