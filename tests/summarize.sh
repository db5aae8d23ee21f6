#!/bin/sh
# Sums the results of every test that automake ran under DIR (default: the
# build tree): Check suites print "Checks: N, Failures: F, Errors: E" into
# their .log; a test whose .log has no such line counts as one check, passed
# or failed by its .trs result (a skipped one counts as neither).  Prints
# one line: "N passed, N failed".
dir=${1:-.}
find "$dir" -name '*.trs' | sort | while read -r trs; do
    log=${trs%.trs}.log
    if [ -f "$log" ] && grep -q 'Checks: [0-9]*, Failures: [0-9]*, Errors: [0-9]*' "$log"; then
        grep -o 'Checks: [0-9]*, Failures: [0-9]*, Errors: [0-9]*' "$log" |
            awk -F'[:,] *' '{ print $2 - $4 - $6, $4 + $6 }'
    elif grep -q "^:test-result: SKIP" "$trs"; then
        echo "0 0"
    elif grep -q "^:test-result: PASS" "$trs"; then
        echo "1 0"
    else
        echo "0 1"
    fi
done | awk '{ p += $1; f += $2 } END { printf "%d passed, %d failed\n", p, f }'
