#!/bin/sh
# The client matrix (issue 14): the Redis clients people use, each connected
# to a private ringbloomd with its own defaults, running BF.RESERVE / ADD /
# MADD / EXISTS / MEXISTS / INFO, a transaction or pipeline and DEL, every
# answer checked exactly:
#   redis-cli (redis-tools) in RESP2 and with -3 (HELLO 3's map, shape
#     and types), BF.* and MULTI/EXEC, their typed output (--no-raw);
#   redis-py (python3-redis, Debian's /usr/bin/python3): redis_py.py;
#   node-redis and ioredis from the npm registry at the versions of
#     package-lock.json (nodejs, npm): clients.mjs, installed with `npm ci`
#     into tests/clients/npm/ of the build tree (its cache beside it in
#     npm-cache/), never into the source tree;
#   hiredis (libhiredis-dev): hiredis_client, built by make check.
# A missing client is a failure naming its Debian package, not a skip.
# Prints one line per client and "Checks: N, Failures: F, Errors: 0".
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
srcdir=${srcdir:-$(dirname "$0")/../..}
srcdir=$(cd "$srcdir" && pwd)
# The build tree: the one holding the daemon under test.
builddir=$(cd "$(dirname "$daemon")/.." && pwd)
. "$srcdir/tests/harness/private_daemon.sh"
rbd_sh_start matrix "matrix$$"
sock=$dir/s.sock
checks=0
failures=0

# report NAME CHECKS FAILURES: one client's line, added to the totals.
report() {
    checks=$((checks + $2))
    failures=$((failures + $3))
    if [ "$3" -eq 0 ]; then
        echo "ok   $1: $2 checks"
    else
        echo "FAIL $1: $3 of $2 checks failed"
    fi
}
# missing NAME WHY: a client that could not run, one failed check.
missing() { report "$1 ($2)" 1 1; }
# run_results NAME CMD...: runs a client program that prints "FAIL ..."
# lines and "RESULT <checks> <failures> <client>" lines; reports each
# client, and a failure if it printed no RESULT or exited non-zero
# without a failed check.
run_results() {
    _name=$1
    shift
    "$@" > "$dir/out" 2>&1
    _rc=$?
    grep -v '^RESULT ' "$dir/out"
    _seen=0
    _bad=0
    while read -r _tag _n _f _client; do
        [ "$_tag" = RESULT ] || continue
        report "$_client" "$_n" "$_f"
        _seen=1
        _bad=$((_bad + _f))
    done < "$dir/out"
    if [ $_seen -eq 0 ] || { [ $_rc -ne 0 ] && [ $_bad -eq 0 ]; }; then
        missing "$_name" "exited $_rc"
    fi
}

# ---- redis-cli: typed output (--no-raw), RESP2 and -3 -------------------
# cli_case WHAT WANT ARGS...: one check of redis-cli's output (stdin empty);
# Size's value is the filter's bytes, which the test does not fix.
n=0
f=0
cli_case() {
    _what=$1
    _want=$2
    shift 2
    n=$((n + 1))
    _got=$(redis-cli --no-raw -s "$sock" "$@" < /dev/null 2>&1 |
           sed -e 's/\(Size => (integer) \)[0-9][0-9]*$/\1N/' \
               -e '/) Size$/{n;s/(integer) [0-9][0-9]*$/(integer) N/;}')
    if [ "$_got" != "$_want" ]; then
        f=$((f + 1))
        printf 'FAIL redis-cli: %s\n--- got:\n%s\n--- want:\n%s\n' "$_what" "$_got" "$_want"
    fi
}
# cli_txn WHAT WANT PROTO-ARGS: a transaction given on stdin.
cli_txn() {
    n=$((n + 1))
    _got=$(printf 'MULTI\nBF.ADD rc %s\nBF.MEXISTS rc %s zz\nEXEC\n' "$3" "$3" |
           redis-cli --no-raw -s "$sock" $4 2>&1)
    if [ "$_got" != "$2" ]; then
        f=$((f + 1))
        printf 'FAIL redis-cli: %s\n--- got:\n%s\n--- want:\n%s\n' "$1" "$_got" "$2"
    fi
}
version=$("$daemon" --version 2>/dev/null | awk '{ print $NF; exit }')
cli_case "BF.RESERVE" "OK" BF.RESERVE rc 0.01 100
cli_case "BF.RESERVE again" "(error) ERR item exists" BF.RESERVE rc 0.01 100
cli_case "BF.ADD" "(integer) 1" BF.ADD rc a
cli_case "BF.MADD" "$(printf '1) (integer) 0\n2) (integer) 1')" BF.MADD rc a b
cli_case "BF.EXISTS" "(integer) 1" BF.EXISTS rc b
cli_case "BF.MEXISTS" "$(printf '1) (integer) 1\n2) (integer) 0')" BF.MEXISTS rc a zz
cli_case "BF.INFO" "$(printf ' 1) Capacity\n 2) (integer) 100\n 3) Size\n 4) (integer) N
 5) Number of filters\n 6) (integer) 1\n 7) Number of items inserted\n 8) (integer) 2
 9) Expansion rate\n10) (integer) 2')" BF.INFO rc
cli_txn "MULTI/EXEC" "$(printf 'OK\nQUEUED\nQUEUED\n1) (integer) 1\n2) 1) (integer) 1\n   2) (integer) 0')" c ""
# -3: HELLO 3 on connect, then the command's reply in RESP3.
n=$((n + 1))
hello=$(redis-cli --no-raw -3 -s "$sock" HELLO 3 < /dev/null 2>&1)
# version: the Redis version answered as (INFO's redis_version); the
# product's is ringbloom_version (INFO's too).
want=$(printf '1# "server" => "ringbloom"\n2# "version" => "7.0.15"\n3# "ringbloom_version" => "%s"
4# "proto" => (integer) 3\n5# "id" => (integer) ID\n6# "mode" => "standalone"
7# "role" => "master"\n8# "modules" => (empty array)' "$version")
if [ "$(printf '%s\n' "$hello" | sed 's/^\(5# "id" => (integer) \)[0-9][0-9]*$/\1ID/')" != "$want" ]; then
    f=$((f + 1))
    printf 'FAIL redis-cli: -3 HELLO 3 is not the map\n--- got:\n%s\n--- want:\n%s\n' "$hello" "$want"
fi
cli_case "-3 BF.ADD" "(false)" -3 BF.ADD rc a
cli_case "-3 BF.MADD" "$(printf '1) (false)\n2) (true)')" -3 BF.MADD rc b x
cli_case "-3 BF.EXISTS" "(false)" -3 BF.EXISTS rc zz
cli_case "-3 BF.MEXISTS" "$(printf '1) (true)\n2) (false)')" -3 BF.MEXISTS rc x zz
cli_case "-3 BF.INFO" "$(printf '1# Capacity => (integer) 100\n2# Size => (integer) N
3# Number of filters => (integer) 1\n4# Number of items inserted => (integer) 4
5# Expansion rate => (integer) 2')" -3 BF.INFO rc
cli_txn "-3 MULTI/EXEC" "$(printf 'OK\nQUEUED\nQUEUED\n1) (true)\n2) 1) (true)\n   2) (false)')" d -3
cli_case "TYPE" "MBbloom--" TYPE rc
cli_case "DEL" "(integer) 1" DEL rc
cli_case "-3 EXISTS after DEL" "(integer) 0" -3 EXISTS rc
report "redis-cli $(redis-cli --version | awk '{ print $2 }') (RESP2 and -3)" $n $f

# ---- redis-py ------------------------------------------------------------
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if "$py" -c 'import redis' 2>/dev/null; then
    run_results redis-py "$py" "$srcdir/tests/clients/redis_py.py" "$sock"
else
    missing redis-py "$py cannot import redis: Debian package python3-redis"
fi

# ---- node-redis and ioredis ----------------------------------------------
node=$(command -v node || command -v nodejs)
if [ -z "$node" ]; then
    missing "node-redis and ioredis" "no node: Debian package nodejs"
elif ! command -v npm > /dev/null 2>&1; then
    missing "node-redis and ioredis" "no npm: Debian package npm"
else
    npmdir=$builddir/tests/clients/npm
    mkdir -p "$npmdir" &&
        cp "$srcdir/tests/clients/package.json" "$srcdir/tests/clients/package-lock.json" \
           "$srcdir/tests/clients/clients.mjs" "$npmdir/" &&
        chmod u+w "$npmdir"/* &&
        (cd "$npmdir" && npm ci --no-audit --no-fund --prefer-offline \
             --cache "$builddir/tests/clients/npm-cache") > "$dir/npm.log" 2>&1
    if [ $? -ne 0 ]; then
        cat "$dir/npm.log"
        missing "node-redis and ioredis" "npm ci of tests/clients/package-lock.json failed"
    else
        echo "node $("$node" --version), npm $(npm --version)"
        run_results "node-redis and ioredis" "$node" "$npmdir/clients.mjs" "$sock"
    fi
fi

# ---- hiredis -------------------------------------------------------------
hc=$builddir/tests/clients/hiredis_client
if [ -x "$hc" ]; then
    run_results hiredis "$hc" "$sock"
else
    missing hiredis "not built: configure found no hiredis (Debian package libhiredis-dev)"
fi

kill "$pid" 2>/dev/null && wait "$pid"
st=$?
pid=
[ $st -eq 0 ] || { failures=$((failures + 1)); echo "FAIL daemon exit status $st after the clients"; cat "$dir/daemon.log"; }
checks=$((checks + 1))
echo "Checks: $checks, Failures: $failures, Errors: 0"
[ $failures -eq 0 ]
