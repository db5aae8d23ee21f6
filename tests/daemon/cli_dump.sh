#!/bin/sh
# `ringbloom dump` and `ringbloom restore` against a private daemon: a
# Bloom filter (ours, and LAYOUT redisbloom dumped --format redisbloom), a
# cuckoo filter and a counting Bloom filter each dumped to a file and
# restored under another name answer exactly as the original for the keys
# added and a sample of others; a dump piped into a restore (stdout,
# stdin); a restore onto a name that exists refused, then done with
# --replace; a corrupt, a truncated, a cut-at-a-record and a wrong-kind
# file refused with the partial filter gone, and a file whose chunk the
# daemon refuses half-way too, and one whose connection the daemon closes
# half-way (a chunk past its max-request-bytes); a count-min sketch, an
# HLL and a missing filter refused by dump; NOPERM said and exit 4; the
# progress bar on a terminal (script(1)).  RedisBloom's recorded chunks
# (tests/golden/redisbloom) restore and dump back byte for byte.  The
# file's CRCs are checked against python's zlib.crc32 when a file is forged.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/private_daemon.sh"
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
checks=0
fail() { echo "FAIL: $1"; echo "Checks: $checks, Failures: 1, Errors: 0"; exit 1; }
ok() { checks=$((checks + 1)); }
rbd_sh_start dump "dump$$"
R() { redis-cli -s "$dir/s.sock" "$@"; }
C() { "$cli" -i "$inst" -s "$dir/s.sock" "$@"; }

# expect CODE PATTERN CMD...: CMD exits CODE and its stderr holds PATTERN.
expect() {
    code=$1 pat=$2
    shift 2
    "$@" > "$dir/out" 2> "$dir/err"
    rc=$?
    [ "$rc" -eq "$code" ] || { cat "$dir/err"; fail "$* exited $rc, not $code"; }
    grep -q -- "$pat" "$dir/err" || { cat "$dir/err"; fail "$*: no '$pat' on stderr"; }
    ok
}
gone() { [ "$(R EXISTS "$1")" = 0 ] || fail "the partial filter '$1' is still there"; ok; }

# keys k1..kN added, x1..x2000 a sample of others
seq 1 3000 | sed 's/^/k/' > "$dir/added"
seq 1 2000 | sed 's/^/x/' > "$dir/others"
# same PREFIX A B: PREFIX.MEXISTS of A and of B agree on every key, and A
# has every added key.
same() {
    for f in added others; do
        xargs -n 500 redis-cli -s "$dir/s.sock" "$1.MEXISTS" "$2" < "$dir/$f" > "$dir/a.$f"
        xargs -n 500 redis-cli -s "$dir/s.sock" "$1.MEXISTS" "$3" < "$dir/$f" > "$dir/b.$f"
        cmp -s "$dir/a.$f" "$dir/b.$f" || fail "$3 answers unlike $2 for the $f keys"
    done
    [ "$(grep -c '^1$' "$dir/b.added")" -eq 3000 ] || fail "$3 lost added keys"
    [ "$(grep -c '^0$' "$dir/b.others")" -gt 1500 ] || fail "$3 holds most of the others"
    ok
}
add_all() { xargs -n 500 redis-cli -s "$dir/s.sock" "$1" "$2" < "$dir/added" > /dev/null; }

{
    R BF.RESERVE bf 0.01 1000 && R BF.RESERVE rbf 0.01 5000 LAYOUT redisbloom &&
    R CF.RESERVE cf 8000 && R CBF.RESERVE cbf 0.01 5000 && R CMS.INITBYDIM cms 100 4 &&
    R PFADD hll a
} > "$dir/setup.out" 2>&1 || { cat "$dir/setup.out"; fail "setting up failed"; }
add_all BF.MADD bf       # past its capacity: a second layer
add_all BF.MADD rbf
xargs -n 500 redis-cli -s "$dir/s.sock" CF.INSERT cf ITEMS < "$dir/added" > /dev/null
add_all CBF.MADD cbf
[ "$(R BF.INFO bf | sed -n 6p)" -ge 2 ] || fail "bf did not grow a second layer"

# Each kind: a file, restored under another name, answers alike.
for f in "bf BF" "rbf BF --format redisbloom" "cf CF" "cbf CBF"; do
    set -- $f
    name=$1 prefix=$2
    shift 2
    C dump "$name" "$dir/$name.dump" "$@" > "$dir/out" 2> "$dir/err" ||
        { cat "$dir/err"; fail "dump $name failed"; }
    grep -q "^dumped '$name' ([A-Za-z-]*): [0-9]* bytes in [0-9]* chunks, " "$dir/out" ||
        fail "dump $name: no summary line: $(cat "$dir/out")"
    C restore "$name.copy" "$dir/$name.dump" > "$dir/out" 2> "$dir/err" ||
        { cat "$dir/err"; fail "restore $name failed"; }
    grep -q "^restored '$name.copy'" "$dir/out" || fail "restore $name: no summary line"
    same "$prefix" "$name" "$name.copy"
done
[ "$(sed -n 3p "$dir/rbf.dump")" = redisbloom ] && [ "$(sed -n 3p "$dir/bf.dump")" = ringbloom ] &&
    [ "$(sed -n 2p "$dir/cf.dump")" = MBbloomCF ] || fail "the files' kind and format lines"
ok
# A redisbloom dump is RedisBloom's own format: its header is 20 + 53 * layers bytes.
"$py" - "$dir/rbf.dump" <<'PY' || fail "the redisbloom header chunk"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
head = b.split(b"\n", 3)
it, n = struct.unpack_from("<QQ", head[3])
assert it == 1 and n == 20 + 53 * struct.unpack_from("<I", head[3], 16 + 8)[0], (it, n)
assert struct.unpack_from("<I", head[3], 16 + n)[0] == zlib.crc32(head[3][:16 + n])
PY
ok

# RedisBloom's own chunks (tests/golden/redisbloom, recorded from RedisBloom
# 2.6.28) in a dump file: restored, each filter answers every added key and
# exactly RedisBloom's false positives among its probes, and dumped again
# --format redisbloom its records are RedisBloom's chunks byte for byte.
"$py" - "$srcdir/tests/golden/redisbloom" "$dir" <<'PY' || fail "files of RedisBloom's chunks"
import json, struct, sys, zlib
g, d = sys.argv[1], sys.argv[2]
for c in json.load(open(g + "/manifest.json"))["cases"]:
    out = b"ringbloom-dump 1\nMBbloom--\nredisbloom\n"
    for ch in c["chunks"] + [{"iterator": 0, "file": None}]:
        data = open(g + "/" + ch["file"], "rb").read() if ch["file"] else b""
        rec = struct.pack("<QQ", ch["iterator"], len(data)) + data
        out += rec + struct.pack("<I", zlib.crc32(rec))
    open("%s/golden.%s" % (d, c["key"]), "wb").write(out)
PY
for g in plain scaling nonscaling implicit; do
    C restore "rb.$g" "$dir/golden.$g" > /dev/null || fail "restoring RedisBloom's $g failed"
    C dump "rb.$g" "$dir/again.$g" --format redisbloom > /dev/null || fail "dumping rb.$g failed"
    cmp -s "$dir/golden.$g" "$dir/again.$g" || fail "rb.$g dumps unlike RedisBloom's chunks"
done
"$py" - "$srcdir/tests/golden/redisbloom" "$dir/s.sock" <<'PY' || fail "RedisBloom's answers"
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[2]); f = s.makefile("rb")
def mexists(name, keys):
    cmd = [b"BF.MEXISTS", name.encode()] + [k.encode() for k in keys]
    s.sendall(b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in cmd))
    n = int(f.readline()[1:])
    return [int(f.readline()[1:]) for _ in range(n)]
for c in json.load(open(sys.argv[1] + "/manifest.json"))["cases"]:
    k, name = c["key"], "rb." + c["key"]
    n = int(c["added"].split("..")[1].rsplit(":", 1)[1]) + 1
    assert all(mexists(name, ["%s:key:%d" % (k, i) for i in range(n)])), name
    got = mexists(name, ["%s:probe:%d" % (k, i) for i in range(20000)])
    assert [i for i, v in enumerate(got) if v] == c["probe_indexes_answering_1"], name
PY
ok

# Pipes: dump to stdout, restore from stdin; the summary goes to stderr then.
C dump cf - 2> "$dir/err" | C restore cf.pipe - > "$dir/out" ||
    { cat "$dir/err"; fail "dump - | restore - failed"; }
grep -q "^dumped 'cf'" "$dir/err" || fail "dump -: no summary on stderr"
same CF cf cf.pipe
C --json dump bf - 2> /dev/null | C --json restore bf.pipe - > "$dir/out" ||
    fail "--json dump - | restore - failed"
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["filter"]=="bf.pipe" and \
d["kind"]=="MBbloom--" and d["chunks"]>=2 and d["bytes"]>0, d' "$dir/out" || fail "--json summary"
same BF bf bf.pipe

# On a terminal (script(1) gives one): the progress bar, full at the end,
# then the summary; a terminal as the file is refused.
if command -v script > /dev/null 2>&1; then
    script -qec "'$cli' -s '$dir/s.sock' restore bf.tty '$dir/bf.dump'" /dev/null \
        > "$dir/tty" 2>&1 || { cat "$dir/tty"; fail "restore on a terminal failed"; }
    grep -q '\[##############################\] [0-9]* bytes, [0-9]* chunks 100%' "$dir/tty" &&
        grep -q "restored 'bf.tty'" "$dir/tty" || { cat "$dir/tty"; fail "no progress bar on a TTY"; }
    same BF bf bf.tty
    script -qec "'$cli' -s '$dir/s.sock' dump bf -" /dev/null > "$dir/tty" 2>&1
    [ $? -eq 2 ] && grep -q "standard output is a terminal" "$dir/tty" || fail "dump to a TTY"
    ok
fi

# A name that exists: refused (exit 4, the filter untouched), then --replace.
expect 4 "the filter exists (--replace replaces it)" C restore cf.copy "$dir/bf.dump"
[ "$(R TYPE cf.copy)" = MBbloomCF ] || fail "a refused restore changed the filter"
C restore cf.copy "$dir/bf.dump" --replace > /dev/null || fail "restore --replace failed"
[ "$(R TYPE cf.copy)" = MBbloom-- ] || fail "--replace did not replace"
same BF bf cf.copy

# Damaged files: refused, exit 5, no filter left behind.  bf.dump's records:
# the header chunk, then the bits (the first record is made, the second is
# where the damage is found).
size=$(wc -c < "$dir/bf.dump")
"$py" - "$dir/bf.dump" "$dir" <<'PY' || fail "forging files failed"
import struct, sys, zlib
src, d = sys.argv[1], sys.argv[2]
b = bytearray(open(src, "rb").read())
at = len(b"".join(b.split(b"\n", 3)[:3])) + 3          # after the three lines
n1 = struct.unpack_from("<Q", b, at + 8)[0]
second = at + 16 + n1 + 4                               # the bits' record
c = bytearray(b); c[second + 16 + 100] ^= 0x40          # a flipped bit
open(d + "/corrupt", "wb").write(c)
open(d + "/cut", "wb").write(b[:second + 16 + 1000])    # inside the bits
open(d + "/noend", "wb").write(b[:-20])                 # the end record gone
open(d + "/tail", "wb").write(b + b"x")                 # bytes after the end
kind = len(b"ringbloom-dump 1\n")                       # the kind line, 9 bytes
k = bytearray(b); k[kind:kind + 9] = b"MBbloomCF"       # it says cuckoo
open(d + "/kind", "wb").write(k)
w = bytearray(b); w[kind:kind + 9] = b"CMSk-TYPE"
open(d + "/wrongkind", "wb").write(w)
# the last data record at an iterator past the filter, CRC made good:
# the daemon refuses it after taking the header
last, at2 = second, second
while struct.unpack_from("<Q", b, at2)[0] != 0:
    last, at2 = at2, at2 + 16 + struct.unpack_from("<Q", b, at2 + 8)[0] + 4
f = bytearray(b); struct.pack_into("<Q", f, last, 1 << 40)
n2 = struct.unpack_from("<Q", f, last + 8)[0]
struct.pack_into("<I", f, last + 16 + n2, zlib.crc32(bytes(f[last:last + 16 + n2])))
open(d + "/refused", "wb").write(f)
# issue 41, 14: the header chunk and the end record alone (every CRC good:
# it made an empty filter and exited 0), and a kind line with a NUL byte
# after a kind that restores (it was read as that kind)
open(d + "/headonly", "wb").write(b[:second] + b[at2:])
z = bytearray(b); z[kind + 9:kind + 9] = b"\0junk"
open(d + "/nulkind", "wb").write(z)
PY
expect 5 "the file is corrupt (record 2 fails its checksum)" C restore c1 "$dir/corrupt"
grep -q "the partial filter it made was deleted" "$dir/err" || fail "no word of the deletion"
gone c1
expect 5 "the file is truncated (it ends inside record 2)" C restore c2 "$dir/cut"
gone c2
expect 5 "the file is truncated (it ends inside the header of record " C restore c3 "$dir/noend"
gone c3
expect 5 "bytes after its end record" C restore c4 "$dir/tail"
gone c4
head -c $((size / 2)) "$dir/bf.dump" > "$dir/half"
expect 5 "truncated" sh -c "cat '$dir/half' | '$cli' -s '$dir/s.sock' restore c5 -"
gone c5
expect 5 "the file's kind 'CMSk-TYPE' is none that restores" C restore c6 "$dir/wrongkind"
gone c6
expect 4 "CF.LOADCHUNK: ERR" C restore c7 "$dir/kind"
gone c7
expect 4 "BF.LOADCHUNK: " C restore c8 "$dir/refused"
grep -q "the partial filter it made was deleted" "$dir/err" || fail "no word of the deletion"
gone c8
expect 5 "the file is corrupt (its header chunk and no data chunk" C restore c11 "$dir/headonly"
grep -q "the partial filter it made was deleted" "$dir/err" || fail "no word of the deletion"
gone c11
expect 5 "truncated or corrupt (in its header lines" C restore c12 "$dir/nulkind"
gone c12
printf 'hello\n' > "$dir/text"
expect 5 "not a ringbloom dump" C restore c9 "$dir/text"
expect 5 "No such file or directory" C restore c10 "$dir/no-such-file"
expect 5 "No such file or directory" C dump bf "$dir/no-such-dir/x"
[ -z "$(ls "$dir" | grep '\.dump\.')" ] || fail "a failed dump left its temporary file"
ok

# What does not dump.
expect 5 "a count-min sketch that does not dump" C dump cms "$dir/x"
expect 5 "a HyperLogLog (TYPE string) that does not dump" C dump hll "$dir/x"
expect 1 "no such filter" C dump nosuch "$dir/x"
expect 5 "--format is for Bloom filters" C dump cf "$dir/x" --format redisbloom
expect 4 "only LAYOUT redisbloom filters dump in RedisBloom's format" \
    C dump bf "$dir/x" --format redisbloom
[ ! -e "$dir/x" ] || fail "a refused dump left a file"
ok
expect 2 "options: --replace" C restore a "$dir/bf.dump" --bogus

# A daemon that takes smaller requests than the file's chunks: it answers
# the big chunk with an error and closes the connection; the filter the
# header chunk made is deleted over a new one.
printf 'max-request-bytes 4096\n' >> "$dir/conf"
kill -HUP "$pid"
i=0
until [ "$(R CONFIG GET max-request-bytes | sed -n 2p)" = 4096 ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the reload did not take"; sleep 0.05
done
expect 4 "CF.LOADCHUNK: ERR" C restore c12 "$dir/cf.dump"
grep -q "the partial filter it made was deleted" "$dir/err" || fail "no word of the deletion"
gone c12

# No permission to write: NOPERM, exit 4, and nothing made.  (The daemon's
# own user may do everything unless a rule of its own says otherwise.)
printf 'acl-user %s -@all +@read +@connection\n' "$(id -u)" >> "$dir/conf"
kill -HUP "$pid"
i=0
until R BF.ADD bf zz | grep -q NOPERM; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the reload did not take"; sleep 0.05
done
expect 4 "BF.LOADCHUNK: NOPERM" C restore c11 "$dir/bf.dump"
gone c11
C dump bf "$dir/ro.dump" > /dev/null 2>&1 || fail "a dump (a read) needs no write permission"
cmp -s "$dir/ro.dump" "$dir/bf.dump" || fail "two dumps of one filter differ"
ok
echo "Checks: $checks, Failures: 0, Errors: 0"
