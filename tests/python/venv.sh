#!/bin/sh
# tests/python/venv.sh - README's "Python" install lines, as written, on a
# machine without network: the README block whose marker names this test
# (a virtual environment of Debian's /usr/bin/python3 with its system
# packages, `pip install --no-build-isolation ./python`, an import) runs in
# a directory holding a copy of python/, with the package index
# unreachable (PIP_NO_INDEX=1; no pip configuration, no find-links, no
# cache, HOME in the test's directory) against this build tree's library
# (RINGBLOOM_BUILDDIR).  Then, in that environment:
#   - `import ringbloom` works without redis-py (import made to fail),
#     its readers answer from a private daemon's segment, and a Client
#     raises ImportError naming python3-redis;
#   - README's Scrapy line, the venv's `python -m scrapy`, runs a spider
#     with ringbloom's dupefilter (the venv's package: Debian's
#     /usr/bin/scrapy runs /usr/bin/python3, which has none): the spider's
#     data: request is recorded in the daemon, its repeat filtered.
# Skips (77) without python3-dev (Python.h) or in a sanitizer build (as
# python.sh); fails, naming the Debian package, without python3-venv or
# python3-scrapy.  Everything it makes is under its temporary directory,
# removed at exit with the daemon and its segment.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
srcdir=$(cd "$srcdir" && pwd)
. "$srcdir/tests/harness/private_daemon.sh"
. "$srcdir/tests/python/python_env.sh"
checks=0
fails=0
check() {
    what=$1
    shift
    checks=$((checks + 1))
    if "$@"; then echo "ok: $what"; else fails=$((fails + 1)); echo "FAILED: $what"; fi
}
[ "$py" = /usr/bin/python3 ] || rbd_sh_fail "no /usr/bin/python3 (Debian package python3)"
py_needs ensurepip python3-venv
py_needs scrapy python3-scrapy

rbd_sh_start venv "venv$$"
redis-cli -s "$dir/s.sock" BF.ADD seen present-key > /dev/null || rbd_sh_fail "BF.ADD failed"

# The block, found by its marker (tests/package/blocks.py parses them).
block=$("$py" -c '
import sys
sys.path.insert(0, sys.argv[1])
import blocks
found = [b["text"] for b in blocks.parse(sys.argv[2])[0]
         if "tests/python/venv.sh" in (b["reason"] or "")]
sys.exit("README.md has no block whose marker names tests/python/venv.sh") if not found else \
    print(found[0], end="")' "$srcdir/tests/package" "$srcdir/README.md") || rbd_sh_fail "$block"
echo "README's lines:"
echo "$block" | sed 's/^/    /'

# A machine without network, and nothing of this one's pip setup.
for v in $(env | sed -n 's/^\(PIP_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 HOME="$dir" \
    PYTHONDONTWRITEBYTECODE=1 RINGBLOOM_BUILDDIR="$builddir" RINGBLOOM_SRCDIR="$srcdir"
unset PYTHONPATH
mkdir "$dir/tree" && cp -R "$srcdir/python" "$dir/tree/python" && chmod -R u+w "$dir/tree" ||
    rbd_sh_fail "copying python/ failed"
(cd "$dir/tree" && sh -e -x -c "$block") > "$dir/block.log" 2>&1
rc=$?
check "README's lines run offline (PIP_NO_INDEX=1), exit $rc" test "$rc" = 0
[ "$rc" = 0 ] || tail -n 30 "$dir/block.log"
venvpy=$dir/tree/venv/bin/python
[ -x "$venvpy" ] || rbd_sh_fail "no venv/bin/python: $(tail -n 5 "$dir/block.log")"

# Without redis-py: a None in sys.modules makes `import redis` fail.
out=$("$venvpy" -c '
import sys
sys.modules["redis"] = None
import ringbloom
print(ringbloom.Filter(sys.argv[1], "seen", socket=sys.argv[2]).contains("present-key"))
try:
    ringbloom.Client(sys.argv[1], socket=sys.argv[2])
except ImportError as e:
    print("ImportError:", e)' "$inst" "$dir/s.sock" 2>&1)
echo "$out" | sed 's/^/    /'
check "import ringbloom without redis-py; its reader answers" \
    test "$(echo "$out" | head -n 1)" = True
check "a Client without redis-py raises ImportError naming python3-redis" \
    sh -c 'echo "$1" | grep -q "^ImportError: .*python3-redis"' sh "$out"

# README's Scrapy line, and a spider run by it.
check "README says to run Scrapy as the venv's python -m scrapy" \
    grep -q 'venv/bin/python -m scrapy' "$srcdir/README.md"
cat > "$dir/spider.py" <<'EOF'
import scrapy

class Once(scrapy.Spider):
    name = "once"

    def start_requests(self):
        yield scrapy.Request("data:,page", dont_filter=False)

    def parse(self, response):
        yield scrapy.Request("data:,page", dont_filter=False, callback=self.again)

    def again(self, response):
        raise AssertionError("the repeat was not filtered")
EOF
(cd "$dir" && "$venvpy" -m scrapy runspider spider.py -s LOG_LEVEL=INFO \
    -s DUPEFILTER_CLASS=ringbloom.scrapy.RingbloomDupeFilter -s RINGBLOOM_INSTANCE="$inst" \
    -s RINGBLOOM_SOCKET="$dir/s.sock" -s RINGBLOOM_FILTER=crawl -s TELNETCONSOLE_ENABLED=0 \
    -s REQUEST_FINGERPRINTER_IMPLEMENTATION=2.7) > "$dir/scrapy.log" 2>&1
rc=$?
card=$(redis-cli -s "$dir/s.sock" BF.CARD crawl)
echo "    python -m scrapy: exit $rc, the filter holds $card request(s), $(grep -c 'dupefilter/filtered' "$dir/scrapy.log") filtered-count line(s)"
check "python -m scrapy ran the spider with the venv's dupefilter (1 request recorded, the repeat filtered)" \
    sh -c 'test "$1" = 0 && test "$2" = 1 && grep -q "dupefilter/filtered.: 1" "$3" &&
           ! grep -q "was not filtered" "$3"' sh "$rc" "$card" "$dir/scrapy.log"
[ "$fails" = 0 ] || tail -n 20 "$dir/scrapy.log"
echo "Checks: $checks, Failures: $fails, Errors: 0"
[ "$fails" = 0 ]
