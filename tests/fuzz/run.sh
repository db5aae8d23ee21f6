#!/bin/sh
# run.sh SECONDS FUZZDIR WORKDIR TARGET...: runs each libFuzzer target for
# SECONDS (-max_total_time) on a fresh copy of its seed corpus
# (FUZZDIR/corpus/<name>/), in WORKDIR/<name>/ (corpus/ grows there; crash,
# leak and timeout inputs are written there too, never into the source
# tree).  FUZZ_JOBS targets run at once (default: the number of online
# CPUs), each single-threaded, so a run takes about SECONDS times the
# targets over FUZZ_JOBS.  Prints one line of figures per target, in the
# order given, and exits 1 if any target failed.  Used by `make fuzz`; see
# tests/fuzz/README.md.
set -u
seconds=$1 fuzzdir=$2 work=$3
shift 3
jobs=${FUZZ_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1

# one TARGET: runs it; its summary lines go to WORKDIR/<name>/summary and
# its exit status to WORKDIR/<name>/status.
one() {
    target=$1
    name=$(basename "$target")
    dir="$work/$name"
    dict=
    [ -f "$fuzzdir/$name.dict" ] && dict="-dict=$fuzzdir/$name.dict"
    "$target" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/" $dict "$dir/corpus" > "$dir/log" 2>&1 &
    pid=$!
    wait $pid
    status=$?
    # fuzz_attach names its shm object after its pid; a crash leaves it.
    rm -f "/dev/shm/ringbloom.fuzz-attach.$pid"
    rm -rf "/tmp/fuzz_txn.$pid".* "/tmp/fuzz_config.$pid".*   # their directories, after a crash
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
    cov=$(grep -E '^#[0-9]+' "$dir/log" | tail -n 1 | sed -n 's/.*\(cov: [0-9]* ft: [0-9]*\).*/\1/p')
    {
        if [ $status -eq 0 ]; then
            echo "fuzz: $name ok: ${runs:-?} runs, ${cov:-no coverage line}"
        else
            echo "fuzz: $name FAILED (exit $status) after ${runs:-?} runs; inputs:" \
                "$(ls "$dir" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | tr '\n' ' ')"
            grep -E 'ERROR|SUMMARY|invariant|differ' "$dir/log" | head -n 5
        fi
    } > "$dir/summary"
    echo $status > "$dir/status"
}

running=0
for target in "$@"; do
    name=$(basename "$target")
    dir="$work/$name"
    rm -rf "$dir"
    mkdir -p "$dir/corpus"
    cp "$fuzzdir/corpus/$name/"* "$dir/corpus/"
    chmod u+w "$dir/corpus/"*      # a distcheck source tree is read-only
    echo "fuzz: $name for $seconds s (log: $dir/log)"
    one "$target" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then
        wait
        running=0
    fi
done
wait
failed=
for target in "$@"; do
    name=$(basename "$target")
    cat "$work/$name/summary" 2>/dev/null || echo "fuzz: $name FAILED (no summary)"
    [ "$(cat "$work/$name/status" 2>/dev/null)" = 0 ] || failed="$failed $name"
done
if [ -n "$failed" ]; then
    echo "fuzz: failed:$failed"
    exit 1
fi
exit 0
