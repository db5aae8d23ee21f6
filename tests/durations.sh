#!/bin/sh
# durations.sh DIR [N]: the N (default 12) slowest tests automake ran under
# DIR, in seconds from the creation of each test's .log to its last write
# (the harness creates the log when the test starts and writes it until the
# test ends), slowest first, one "SECONDS PATH" line each.  Prints nothing
# where the file system does not record creation times.  .ci/run prints
# these after each stage, so that a run's log shows where its time went.
dir=${1:-.}
n=${2:-12}
find "$dir" -name '*.trs' | while read -r trs; do
    log=${trs%.trs}.log
    born=$(stat -c %W "$log" 2>/dev/null) || continue
    [ "$born" -gt 0 ] || continue
    echo "$(($(stat -c %Y "$log") - born)) ${log#"$dir"/}"
done | sort -rn | head -n "$n"
