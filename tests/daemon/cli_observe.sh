#!/bin/sh
# The CLI's observability outputs, read by real parsers against a private
# daemon: `--json info` through python3's json module (sections are
# objects, integers are numbers, names stay strings: the instance is named
# with digits only), `metrics` through prometheus_client's parser (the
# Debian package python3-prometheus-client: every family's type, the
# per-filter series against `--json filters`, escaped labels read back,
# the ring, the memory figures against INFO's after a SAVE), `--json lookup -` against `--json lookup KEY`, and `metrics`
# printing nothing when the daemon is gone.  Filters and nodes with odd
# names (NULs, bytes that are not UTF-8 beside the text that escapes them,
# backslashes, quotes, control bytes, overlong and surrogate forms): every
# name gets a label value and a JSON string of its own, the same escaped
# text in both (out.c's cli_escape), read by prometheus_client's parser
# and by json from strict UTF-8.
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/harness/private_daemon.sh"
fail() { rbd_sh_fail "$1"; }
# Debian's python3: the one python3-prometheus-client installs for (a
# python3 earlier on PATH, as pyenv's, may not see it).
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" -c 'import prometheus_client.parser' 2>/dev/null ||
    fail "python3's prometheus_client not found (Debian package python3-prometheus-client)"
# digits only: INFO's instance must still be a JSON string
rbd_sh_start obs "$$"
C() { "$cli" -i "$inst" -s "$dir/s.sock" "$@"; }
# A quote, a backslash and a newline: escaped in a label, read back as they are.
weird=$(printf 'q"uo\\te\nx')
{
    C node add cache-a:11211 && C node add cache-b:11211 2 && C node add cache-c:11211 &&
    C node drain cache-c:11211 &&
    C reserve urls 0.001 1000 && C reserve "$weird" 0.01 100 --nonscaling &&
    C reserve recent 0.01 500 --aging 3600 --generations 3 &&
    C add urls u1 u2 u3 && C add "$weird" w1 && C add recent r1 r2
} > "$dir/setup.out" 2>&1 || { cat "$dir/setup.out"; fail "setting up failed"; }
# A name that is not UTF-8: its byte reads back as the text \xff.
# A SAVE, so INFO has a last snapshot's file size.
printf 'BF.RESERVE "bin\\xffary" 0.01 100\nBF.ADD "bin\\xffary" b1\nSAVE\n' |
    redis-cli -s "$dir/s.sock" > /dev/null || fail "BF.RESERVE bin\\xffary or SAVE failed"

C --json info > "$dir/info.json" && C --json info server > "$dir/server.json" &&
    C metrics > "$dir/metrics.txt" && C --json filters > "$dir/filters.json" ||
    fail "info, metrics or filters failed"
printf 'u1\nhttps://example.org/\n\nk"ey\n' > "$dir/keys"
C --json lookup - < "$dir/keys" > "$dir/stream.json" || fail "--json lookup - failed"
while IFS= read -r k; do C --json lookup "$k"; done < "$dir/keys" > "$dir/single.json"

# Odd names, made over RESP by python (a name holds any bytes), once the
# outputs above are taken: metrics, --json filters and --json nodes again.
"$py" - "$dir" <<'PY' || fail "making the odd names failed"
import socket, sys
NAMES = [b"nul\x00a", b"nul\x00b", b"nul", b"\x00", b"\\x00", b"\xff\xfe", b"\\xff\\xfe",
         b"back\\slash", b"back\\\\slash", b'q"uote', b"new\nline", b"new\\nline",
         b"tab\tx", b"cr\rx", b"del\x7f", b"caf\xc3\xa9", b"c1\xc2\x80", b"emoji\xf0\x9f\x98\x80",
         b"overlong\xc0\xaf", b"cut\xe2\x82", b"cut\xe2\x82end", b"surrogate\xed\xa0\x80",
         b"big\xf4\x90\x80\x80", b"lone\x80"]
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1] + "/s.sock")
f = s.makefile("rb")
for n in NAMES:
    # a node name may hold any byte but NUL
    for cmd in [[b"BF.RESERVE", n, b"0.01", b"100"], [b"BF.ADD", n, b"k"]] + \
            [[b"RING.ADD", b"odd:" + n, b"1"]] * (b"\x00" not in n):
        s.sendall(b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in cmd))
        line = f.readline()
        if line[:1] == b"-":
            sys.exit("%r: %r" % (cmd, line))
open(sys.argv[1] + "/names", "wb").write(b"\n".join(n.hex().encode() for n in NAMES))
PY
C metrics > "$dir/odd.txt" && C --json filters > "$dir/odd-filters.json" &&
    C --json nodes > "$dir/odd-nodes.json" && C filters > "$dir/odd-filters.txt" &&
    C nodes > "$dir/odd-nodes.txt" || fail "metrics, filters or nodes on odd names failed"
"$py" - "$dir" "$inst" "$pid" "$weird" <<'PY' || fail "a check failed"
import json, sys
from prometheus_client.parser import text_string_to_metric_families

d, inst, pid, weird = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


info = json.load(open(d + "/info.json"))
check(isinstance(info, dict), "info is an object")
for s in ("server", "clients", "memory", "persistence", "stats", "ring", "bloom"):
    check(isinstance(info.get(s), dict), "section %s is an object" % s)
srv = info["server"]
check(type(srv["process_id"]) is int and srv["process_id"] == pid, "process_id is the daemon's pid")
check(type(srv["uptime_in_seconds"]) is int, "uptime is an int")
check(srv["instance"] == inst and type(srv["instance"]) is str, "a numeric-looking instance is a string")
check(type(srv["ringbloom_version"]) is str, "the version is a string")
check(type(info["clients"]["connected_clients"]) is int, "connected_clients is an int")
check(info["bloom"]["filters"] == 4, "bloom.filters is 4")
check(type(info["bloom"]["filter_0"]) is str, "a filter line is a string")
check(info["persistence"]["rdb_last_bgsave_status"] in ("ok", "err"), "rdb_last_bgsave_status is a string")
check(type(info["stats"]["total_commands_processed"]) is int, "commands processed is an int")
check(json.load(open(d + "/server.json")).keys() == {"server"}, "info server: only that section")

fams = {f.name: f for f in text_string_to_metric_families(open(d + "/metrics.txt").read())}
types = {
    "ringbloom_commands_processed": "counter", "ringbloom_protocol_errors": "counter",
    "ringbloom_denied_commands": "counter", "ringbloom_rejected_connections": "counter",
    "ringbloom_connected_clients": "gauge", "ringbloom_log_bytes": "gauge",
    "ringbloom_log_fsyncs": "counter", "ringbloom_log_write_errors": "counter",
    "ringbloom_snapshots": "counter", "ringbloom_last_snapshot_duration_seconds": "gauge",
    "ringbloom_segment_used_bytes": "gauge", "ringbloom_uptime_seconds": "gauge",
    "ringbloom_segment_committed_bytes": "gauge", "ringbloom_segment_resident_bytes": "gauge",
    "ringbloom_segment_fragmentation_ratio": "gauge", "ringbloom_segment_free_bytes": "gauge",
    "ringbloom_segment_unreleased_bytes": "gauge", "ringbloom_last_snapshot_file_bytes": "gauge",
    "ringbloom_build_info": "gauge", "ringbloom_log_fsync_policy": "gauge",
    "ringbloom_log_enabled": "gauge",
    "ringbloom_ring_nodes": "gauge", "ringbloom_ring_points": "gauge",
    "ringbloom_ring_nodes_not_up": "gauge",
    "ringbloom_ring_mode": "gauge", "ringbloom_filters": "gauge",
    "ringbloom_filter_items": "gauge", "ringbloom_filter_capacity": "gauge",
    "ringbloom_filter_bytes": "gauge", "ringbloom_filter_layers": "gauge",
    "ringbloom_filter_fill_ratio": "gauge",
    "ringbloom_filter_estimated_false_positive_ratio": "gauge",
    "ringbloom_filter_rotations": "counter", "ringbloom_filter_info": "gauge",
}
for name, t in types.items():
    check(name in fams and fams[name].type == t, "%s is a %s" % (name, t))
for f in fams.values():
    check(f.name.startswith("ringbloom_"), "%s is ringbloom_*" % f.name)
    check(f.documentation != "", "%s has a HELP" % f.name)
    for s in f.samples:
        check(s.labels.get("ringbloom_instance") == inst, "%s is labelled with the instance" % s.name)
        check(f.type != "counter" or s.name.endswith("_total"), "counter %s ends in _total" % s.name)


def value(fam, **labels):
    got = [s.value for s in fams[fam].samples
           if all(s.labels.get(k) == v for k, v in labels.items())]
    check(len(got) == 1, "one %s sample for %s" % (fam, labels))
    return got[0]


check(value("ringbloom_commands_processed") >= 10, "commands processed counted")
check(value("ringbloom_connected_clients") >= 1, "this connection is counted")
check(value("ringbloom_ring_nodes") == 3, "3 nodes")
check(value("ringbloom_ring_nodes_not_up") == 1, "1 node draining")
check(info["ring"]["ring_nodes_not_up"] == 1, "ring.ring_nodes_not_up is 1")
check(value("ringbloom_ring_points") > 0, "the ring has points")
check(value("ringbloom_ring_mode", mode="xxh3") == 1, "the ring's mode is a label")
check(value("ringbloom_filters") == 4, "4 filters")
# The memory figures, each INFO's own (the daemon is idle between the two)
# and consistent with each other within one INFO.
mem, per = info["memory"], info["persistence"]
used, rss = value("ringbloom_segment_used_bytes"), value("ringbloom_segment_resident_bytes")
check(used == mem["used_memory"] and rss == mem["used_memory_rss"] and rss > 0,
      "used %r and resident %r bytes are INFO's" % (used, rss))
check(value("ringbloom_segment_committed_bytes") == mem["ringbloom_segment_bytes"],
      "the segment's bytes are INFO's")
check(abs(value("ringbloom_segment_fragmentation_ratio") - rss / used) <= 0.0051 and
      value("ringbloom_segment_fragmentation_ratio") == mem["mem_fragmentation_ratio"],
      "the fragmentation ratio is resident / used")
check(value("ringbloom_segment_free_bytes") == mem["ringbloom_free_bytes"] ==
      value("ringbloom_segment_committed_bytes") - used, "free bytes are committed - used")
check(value("ringbloom_segment_unreleased_bytes") == mem["ringbloom_unreleased_bytes"] == 0,
      "nothing waits for a release")
check(value("ringbloom_log_enabled") == per["aof_enabled"] == 1, "the log is on, as INFO says")
check(0 < value("ringbloom_last_snapshot_file_bytes") == per["last_snapshot_file_bytes"],
      "the SAVE's file bytes are INFO's")
# --json filters and metrics give a name as one escaped text (a byte that
# is not UTF-8 as the text \xNN, the backslash as \\, control bytes as C
# escapes): the JSON name is the label value.
filters = json.loads(open(d + "/filters.json", "rb").read().decode("utf-8"))
check(len(filters) == 4, "4 filters listed")
for f in filters:
    n = f["name"]
    for key in ("items", "capacity", "bytes", "layers"):
        check(value("ringbloom_filter_" + key, filter=n) == f[key], "%s of %r" % (key, n))
    check(value("ringbloom_filter_info", filter=n, kind=f["kind"], layout=f["layout"]) == 1,
          "kind and layout of %r" % n)
    fill = value("ringbloom_filter_fill_ratio", filter=n)
    fpr = value("ringbloom_filter_estimated_false_positive_ratio", filter=n)
    check(0 < fill < 1 and 0 <= fpr < 1, "fill and FPR of %r are ratios" % n)
check(value("ringbloom_filter_items", filter='q"uo\\\\te\\nx') == 1 and
      weird == 'q"uo\\te\nx', "a quote, a backslash and a newline read back escaped")
check(value("ringbloom_filter_items", filter="urls") == 3, "urls has 3 items")
check(value("ringbloom_filter_items", filter="bin\\xffary") == 1, "a byte not UTF-8 reads back as \\xff")

stream = open(d + "/stream.json").read().splitlines()
single = open(d + "/single.json").read().splitlines()
check(len(stream) == 4 and stream == single, "lookup - prints what lookup KEY prints, per key")
check([json.loads(l)["key"] for l in stream] == ["u1", "https://example.org/", "", 'k"ey'],
      "lookup - keys read back")

# ---- odd names: one escaping, injective, valid UTF-8 everywhere ----------------
names = [bytes.fromhex(h) for h in open(d + "/names").read().split()]


def T(b):
    """The escaped text of bytes b, as the README says (a reference, on
    python's own strict UTF-8 decoder)."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef else 4 if 0xf0 <= c <= 0xf4 else 0
        try:
            u = b[i:i + n].decode("utf-8") if c >= 0x80 and n and i + n <= len(b) else None
        except UnicodeDecodeError:
            u = None
        if c == 0x5c:
            out.append("\\\\")
        elif c in (9, 10, 13):
            out.append({9: "\\t", 10: "\\n", 13: "\\r"}[c])
        elif c < 0x20 or c == 0x7f or (c >= 0x80 and u is None):
            out.append("\\x%02x" % c)
        elif c >= 0x80:
            out.append(u)
            i += n
            continue
        else:
            out.append(chr(c))
        i += 1
    return "".join(out)


want = {T(n) for n in names}
check(len(want) == len(names), "the reference gives %d names %d texts" % (len(names), len(want)))
fams = {f.name: f for f in text_string_to_metric_families(open(d + "/odd.txt", encoding="utf-8").read())}
for fam in ("ringbloom_filter_items", "ringbloom_filter_info", "ringbloom_filter_bytes"):
    got = [s.labels["filter"] for s in fams[fam].samples]
    series = {tuple(sorted(s.labels.items())) for s in fams[fam].samples}
    check(len(series) == len(fams[fam].samples), "%s: no two series alike" % fam)
    check(want <= set(got), "%s: every odd name has its own label value (missing %r)"
          % (fam, sorted(want - set(got))))
filters = json.loads(open(d + "/odd-filters.json", "rb").read().decode("utf-8"))
jn = [f["name"] for f in filters]
check(len(jn) == len(set(jn)) and want <= set(jn),
      "--json filters: one string per name, the label's text (missing %r)" % sorted(want - set(jn)))
nodes = json.loads(open(d + "/odd-nodes.json", "rb").read().decode("utf-8"))["nodes"]
nn = [n["name"] for n in nodes]
wn = {T(b"odd:" + n) for n in names if b"\x00" not in n}
check(len(nn) == len(set(nn)) and wn <= set(nn),
      "--json nodes: one string per name (missing %r)" % sorted(wn - set(nn)))
for what, w in (("filters", want), ("nodes", wn)):
    text = open(d + "/odd-%s.txt" % what, "rb").read().decode("utf-8").splitlines()
    check(w <= {l.split("\t")[0] for l in text}, "%s: the same text, one line each" % what)
print("odd names: %d filters and %d nodes, %d distinct label values" %
      (len(names), len(wn), len(set(got))))
print("%d checks passed" % checks)
PY

C shutdown || fail "shutdown failed"
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
kill -0 "$pid" 2>/dev/null || pid=
C metrics > "$dir/gone.txt" 2> "$dir/gone.err"
rc=$?
[ $rc -eq 3 ] || fail "metrics with no daemon: exit $rc, not 3"
[ -s "$dir/gone.txt" ] && fail "metrics with no daemon printed to stdout"
grep -q 'ringbloom: ' "$dir/gone.err" || fail "metrics with no daemon did not say why"
echo "Checks: 1, Failures: 0, Errors: 0"
exit 0
