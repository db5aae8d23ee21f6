#!/bin/sh
# make-corpus.sh [OUTDIR]: regenerates the seed corpora of the fuzz targets
# (tests/fuzz/corpus/ by default) from a real ringbloomd driven by redis-cli:
#   fuzz_persist/  the start-up snapshot (empty state) + the log of a session;
#                  a snapshot taken by SAVE + the log written after it; the
#                  first log alone (the seed of a refusal: every log
#                  continues a snapshot).  Each is byte 0 flags (see
#                  fuzz_persist.c), u32 LE snapshot length, snapshot, log;
#                  the snapshots are trimmed of their zero tail (flag 8 pads
#                  them back).
#   fuzz_attach/   the daemon's live segment, copied from /dev/shm, trimmed
#                  of its zero tail (fuzz_attach pads it back).
#   fuzz_resp/     requests as clients send them (written here by hand).
#   fuzz_txn/      sessions with MULTI / EXEC (written here by hand): the
#                  BGSAVE inside a transaction of issue 25, and every command
#                  of the table queued by index.
#   fuzz_config/   configuration files, overrides and CONFIG SET pairs
#                  (written here by hand; the settings' rows read from
#                  daemon/server/config_table.c): the shipped sample, and
#                  issue 41's hostile values.
#   fuzz_stream/   stream messages (written here by hand, in fuzz_stream.c's
#                  format): a reserve and adds inside nats-filters, an add
#                  and a reserve outside them, a reserve past
#                  max-command-bytes, a newer Rb-Format and NATS.SKIP's
#                  record, a snapshot's part, a gap, a sequence gone back,
#                  a damaged record.
# Run from the build directory after make (RB_DAEMON overrides the daemon).
# Needs redis-cli (Debian package redis-tools).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/corpus}
daemon=${RB_DAEMON:-./daemon/ringbloomd}
command -v redis-cli >/dev/null || { echo "make-corpus.sh needs redis-cli (redis-tools)"; exit 1; }
[ -x "$daemon" ] || { echo "make-corpus.sh: no daemon at $daemon (run make first)"; exit 1; }

dir=$(mktemp -d /tmp/rbfuzz.corpus.XXXXXX)
inst="fzcorpus$$"
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    rm -f "/dev/shm/ringbloom.$inst"
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# Small on purpose: few filter slots, few ring points, small filters.
cat > "$dir/conf" <<CONF
instance $inst
socket $dir/s.sock
dir $dir/state
pidfile $dir/pid
ring-replicas 4
max-filters 4
max-memory 1mb
appendfsync always
CONF
"$daemon" -f -c "$dir/conf" 2>"$dir/daemon.log" &
pid=$!
i=0
while ! redis-cli -s "$dir/s.sock" PING >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -le 200 ] || { echo "daemon did not start"; cat "$dir/daemon.log"; exit 1; }
    sleep 0.05
done
R() { redis-cli -s "$dir/s.sock" "$@" >/dev/null; }

# Bytes of the file without its trailing zeros.
nonzero_len() {
    od -An -v -tx1 "$1" | tr -s ' ' '\n' | awk 'NF { n++; if ($1 != "00") last = n } END { print last + 0 }'
}
le32() {
    printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($1 & 255)) $(($1 >> 8 & 255)) \
        $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"
}
# persist_seed NAME FLAGS SNAPSHOT|- LOG|-
persist_seed() {
    f="$out/fuzz_persist/$2-$1"
    if [ "$3" = - ]; then n=0; else n=$(nonzero_len "$3"); fi
    { printf "$(printf '\\%03o' "$2")"; le32 "$n"
      [ "$3" = - ] || head -c "$n" "$3"
      [ "$4" = - ] || cat "$4"; } > "$f"
}

mkdir -p "$out/fuzz_persist" "$out/fuzz_attach" "$out/fuzz_resp" "$out/fuzz_txn" "$out/fuzz_config" \
    "$out/fuzz_stream"
cp "$dir/state/snapshot.rbs" "$dir/snap0"

R RING.ADD cache-a.example:11211
R RING.ADD cache-b.example:11211 2
R RING.ADD cache-c.example:11211
R BF.RESERVE urls 0.01 40
R BF.RESERVE seen 0.01 8 LAYOUT blocked EXPANSION 2
R BF.RESERVE recent 0.05 6 AGING 60 GENERATIONS 3
R BF.MADD urls https://a.example/1 https://a.example/2 https://a.example/3
R BF.MADD seen s1 s2 s3 s4 s5 s6 s7 s8 s9 s10 s11 s12
R BF.MADD recent r1 r2 r3 r4 r5 r6 r7 r8
R RING.WEIGHT cache-a.example:11211 3
R RING.REMOVE cache-c.example:11211
R BF.RESET urls
R BF.ADD urls https://a.example/4
cp "$dir/state/appendonly.rbl" "$dir/log0"

R SAVE
R RING.ADD cache-d.example:11211
R BF.ADD recent r9
R RING.MODE ketama
cp "$dir/state/snapshot.rbs" "$dir/snap1"
cp "$dir/state/appendonly.rbl" "$dir/log1"
cp "/dev/shm/ringbloom.$inst" "$dir/segment"

# flags: 1 snapshot, 2 log, 4 load-truncated, 8 fix checksums (and pad)
persist_seed startup-snapshot-and-log 15 "$dir/snap0" "$dir/log0"
persist_seed saved-snapshot-and-log 15 "$dir/snap1" "$dir/log1"
persist_seed log-only 6 - "$dir/log0"
n=$(nonzero_len "$dir/segment")
head -c "$n" "$dir/segment" > "$out/fuzz_attach/live-segment"

# fuzz_resp: byte 0 picks max-request-bytes, byte 1 the number of chunk-size
# bytes that follow, then the stream.
resp_seed() {
    f="$out/fuzz_resp/$1"; shift
    printf "$@" > "$f"
}
resp_seed ping '\001\003\005\001\002*1\r\n$4\r\nPING\r\n'
resp_seed inline '\000\001\007PING\r\nBF.ADD urls "a b\\n" '"'"'c'"'"'\r\n'
# redis-server's inline quoting (sdssplitargs): \xHH, \b, \a, only \' in '...',
# a quote opening mid-argument, one closing before a non-blank.
resp_seed inline-quotes '\000\001\011PING "a\\x41b" '"'"'it\\'"'"'s'"'"' a"b c" "\\n\\b\\a"\r\nECHO "x"y\r\n'
resp_seed pipeline '\001\002\011\003*3\r\n$6\r\nBF.ADD\r\n$4\r\nurls\r\n$3\r\nk:1\r\n*2\r\n$8\r\nRING.GET\r\n$3\r\nk:2\r\n'
resp_seed madd '\002\000*6\r\n$7\r\nBF.MADD\r\n$4\r\nurls\r\n$1\r\na\r\n$0\r\n\r\n$2\r\n\000\377\r\n$3\r\nxyz\r\n'
resp_seed empty-and-null '\003\001\004*0\r\n*-1\r\n\r\n*1\r\n$4\r\nPING\r\n'
resp_seed bad-length '\001\000*1\r\n$-5\r\n'
# A bulk of exactly max-request-bytes (1024): the request around it is larger.
{ printf '\000\002\100\077*1\r\n$1024\r\n'; head -c 1024 /dev/zero | tr '\000' x; printf '\r\n'; } \
    > "$out/fuzz_resp/max-bulk"
# fuzz_txn: per request a byte argc - 1, then per argument a length byte and
# the bytes (see fuzz_txn.c); "@N" is the command of the table at index N.
txn_req() {
    printf "\\$(printf %03o $(($# - 1)))"
    for w; do
        case $w in
        @*) printf "\\377\\$(printf %03o "${w#@}")" ;;
        *) printf "\\$(printf %03o ${#w})%s" "$w" ;;
        esac
    done
}
{ txn_req CMS.INITBYDIM c 100 4; txn_req CF.RESERVE cf 100; txn_req MULTI
  txn_req CMS.INCRBY c a 10; txn_req BGSAVE; txn_req CMS.INCRBY c a 100
  txn_req CF.ADD cf x; txn_req BF.ADD bf k1; txn_req EXEC; } > "$out/fuzz_txn/bgsave-inside"
{ txn_req MULTI; txn_req BGSAVE; txn_req CF.ADD cf x; txn_req BF.ADD bf k1; txn_req EXEC
  txn_req MULTI; txn_req BGSAVE; txn_req EXEC; } > "$out/fuzz_txn/bgsave-first"
{ txn_req BF.ADD bf k; txn_req MULTI; txn_req BF.RESERVE r 0.01 10; txn_req RING.ADD n1 2
  txn_req PFADD h a b; txn_req CMS.INITBYPROB p 0.01 0.01; txn_req ADMIT.RESERVE adm 100
  txn_req ADMIT.TOUCH adm x; txn_req DEL h; txn_req BF.RESET bf; txn_req EXEC
  txn_req MULTI; txn_req RING.ADD n2; txn_req SAVE; txn_req EXEC
  txn_req MULTI; txn_req RING.ADD n3; txn_req DISCARD; } > "$out/fuzz_txn/kinds"
{ txn_req CBF.RESERVE cb 0.01 4 COUNTERBITS 4; txn_req MULTI; txn_req CBF.ADD cb a
  txn_req CBF.MADD cb b c d e f; txn_req CBF.DEL cb a; txn_req CBF.DEL cb zz; txn_req EXEC
  txn_req CBF.SCANDUMP cb 0; txn_req CBF.LOADCHUNK cb 1 x; txn_req DEL cb; } > "$out/fuzz_txn/cbf"
{ txn_req MULTI; k=0
  while [ $k -lt 112 ]; do txn_req "@$k" x; k=$((k + 1)); done
  txn_req EXEC; } > "$out/fuzz_txn/every-command"
# fuzz_config: byte 0 the number of overrides, u16 LE the file's length,
# the file, then per pair the setting's row, a length byte and the value.
table="$here/../../daemon/server/config_table.c"
row() {
    awk -v want="$1" '/^const setting_t rbd_settings/ { on = 1; next } on && /^};/ { exit }
        on && /^ *\{ "/ { split($0, f, "\""); if (f[2] == want) { print n; exit } n++ }' "$table"
}
cfg_pair() {   # cfg_pair SETTING VALUE (printf escapes in VALUE)
    v=$(printf %b "$2"; printf x); v=${v%x}
    printf "\\$(printf %03o "$(row "$1")")\\$(printf %03o ${#v})"; printf '%s' "$v"
}
cfg_seed() {   # cfg_seed NAME OVERRIDES FILE (then the pairs on stdin)
    n=$(wc -c < "$3")
    { printf "\\$(printf %03o "$2")\\$(printf %03o $((n & 255)))\\$(printf %03o $((n >> 8)))"
      cat "$3"; cat; } > "$out/fuzz_config/$1"
}
cfg_seed sample 0 "$here/../../daemon/ringbloomd.conf" < /dev/null
printf '# the operator file\r\nunixsocketperm 0660\nsyslog-ident "a \\"b\\" \\\\ #c "\nloglevel notice\nLOGLEVEL warning\nacl-user 0 +@all\nlogfile rel.log\n' \
    > "$dir/cfg"
{ cfg_pair timeout 5; cfg_pair syslog-ident 'rb\nacl-user 65534 +@all'
  cfg_pair syslog-ident ' "q" #x\\ '; cfg_pair logfile 'd.log'
  cfg_pair loglevel debug; cfg_pair slowlog-log-slower-than -1; } | cfg_seed hostile 1 "$dir/cfg"
# fuzz_stream: byte 0 the max-command-bytes choice, then messages: a header
# byte (format, flip, sequence, part bits), a record count, the records
# (type, name and fields by index: see fuzz_stream.c).
# reserve r:a (capacity 100, 1 %, blocked, expansion 2) and add abc, z to it
st_inside='\001\002\000\000\144\000\000\001\010\000\002\001\000\002\003abc\001z'
# add "forged" to local:x; reserve r:big of 16 M keys (past 1 MiB)
st_outside='\001\001\001\003\001\006forged\001\001\000\002\377\377\377\001\010\000\002'
printf "\000$st_inside$st_outside" > "$out/fuzz_stream/inside-outside"
# a newer Rb-Format (halts), then NATS.SKIP's record of it, then an add
printf "\002$st_inside\002\000\001\001\002\000\003\001\001\001\000\001\001b" \
    > "$out/fuzz_stream/newer-format-skipped"
# a snapshot's part with a header chunk of r:b, a gap, a sequence gone
# back, a damaged add
printf "\001$st_inside\041\001\003\001\001\012RBLMDUMP00\011\000\021\000\005\007\001\001\000\002\003abc\001z" \
    > "$out/fuzz_stream/part-gap-back-damaged"
echo "seed corpora written to $out"
