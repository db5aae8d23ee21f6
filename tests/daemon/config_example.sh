#!/bin/sh
# The shipped example configuration parses and gives the documented
# defaults; a bad setting is refused with its file and line.
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
daemon=${RB_DAEMON:-../daemon/ringbloomd}
fail=0
checks=0
check() {   # check DESCRIPTION COMMAND...
    checks=$((checks + 1))
    d=$1; shift
    if "$@"; then echo "ok: $d"; else echo "FAILED: $d"; fail=$((fail + 1)); fi
}
out=$("$daemon" -t -c "$srcdir/daemon/ringbloomd.conf")
check "example config parses" test $? -eq 0
check "appendfsync default" sh -c "echo '$out' | grep -qx 'appendfsync everysec'"
check "socket mode default" sh -c "echo '$out' | grep -qx 'socket-mode 0660'"
check "segment mode default" sh -c "echo '$out' | grep -qx 'segment-mode 0640'"
check "max-key-bytes default" sh -c "echo '$out' | grep -qx 'max-key-bytes 65536'"
check "max-ring-points default" sh -c "echo '$out' | grep -qx 'max-ring-points 1048576'"
check "max-command-bytes default" sh -c "echo '$out' | grep -qx 'max-command-bytes 67108864'"
check "huge-pages default" sh -c "echo '$out' | grep -qx 'huge-pages no'"
check "logfile default (none, quoted as the file would say it)" sh -c "echo '$out' | grep -qx 'logfile \"\"'"
check "syslog defaults" sh -c "echo '$out' | grep -qx 'syslog-enabled yes' && echo '$out' | grep -qx 'syslog-ident ringbloomd' && echo '$out' | grep -qx 'syslog-facility daemon'"
bad=$(mktemp)
printf 'instance x\n# comment\nmax-clients lots\n' > "$bad"
msg=$("$daemon" -t -c "$bad" 2>&1)
check "bad value refused with exit 2" test $? -eq 2
check "error names file and line" sh -c "echo \"$msg\" | grep -q \"$bad:3: max-clients\""
printf 'no-such-setting 1\n' > "$bad"
msg=$("$daemon" -t -c "$bad" 2>&1)
check "unknown setting refused" sh -c "echo \"$msg\" | grep -q \"unknown setting 'no-such-setting'\""
msg=$("$daemon" -t -o appendfsync=always 2>&1)
check "-o overrides" sh -c "echo \"$msg\" | grep -qx 'appendfsync always'"
msg=$("$daemon" -t -o loglevel=loud 2>&1)
check "a bad loglevel lists every level taken" sh -c "echo \"$msg\" | grep -q 'debug, verbose, info, notice or warning'"
rm -f "$bad"
echo "Checks: $checks, Failures: $fail, Errors: 0"
[ $fail -eq 0 ]
