#!/bin/bash
# tests/package/install.sh DEBDIR - installs the Debian packages built from
# this tree (dpkg-buildpackage -b puts them in DEBDIR) on this machine and
# uses them as an administrator would, without systemd (CI machines have
# none running), then purges them.  Every fenced block of README.md and
# nginx/README.md carries a marker comment (tests/package/blocks.py): the
# test fails on a block without one, runs each "run" block, installs each
# "file" block, compiles each "compile" block, and fails if one of them
# was not used.  Checks that
#   - the packages install with apt by README's install command, run as
#     written from a directory beside the .debs (dependencies resolved,
#     the nginx ABI among them), create the user and group ringbloom
#     (sysusers.d), the run and state directories (tmpfiles.d), and enable
#     the nginx module;
#   - systemd-analyze verify accepts the units, and the manual pages are
#     found by man;
#   - the daemon started as the unit starts it (its ExecStart line, User=,
#     Group=, UMask=, read from the installed unit) serves, with the
#     socket and segment the packaged configuration gives the group
#     ringbloom;
#   - a second, unprivileged user in the group ringbloom adds and looks up
#     by instance name alone (the CLI finds /run/ringbloom), and a user
#     outside the group is refused with the paths it tried;
#   - a program built against libringbloom-dev with pkg-config reads the
#     same answers from shared memory (the shared library found by the
#     loader, no ldconfig by hand), and README's library example compiles;
#   - python3-ringbloom: Debian's python3 imports it from dist-packages (its
#     extension linked with libringbloom.so.1), the member reads the ring
#     and the filter from shared memory with it and writes through its
#     Client (python3-redis, which the package recommends);
#   - README's metrics timer (its service's command) and cron line write
#     their files into Debian's node-exporter textfile directory;
#   - README's offline ring command prints a node for every key;
#   - nginx/README.md's example, as written, runs on the packaged nginx
#     with www-data workers added to the group: the sed lowers the error
#     log of Debian's nginx.conf to notice, where a "cannot attach" warning
#     (workers not yet in the group) and the upstream example's RING.DOWN
#     notice (a dead backend) and RING.UP notice (back, after hold_down)
#     appear; the cache path under /var/lib/nginx is made; routing by the
#     ring; caching on the second request; the admitted key is the one the
#     README names; its ACL rule for report= alone gives what it says;
#   - purging removes the packages' files.
# What a CI machine must have instead of what the READMEs say (the only
# replacements made in their blocks):
#   - ports: 8080 (nginx) and 8081-8083 (backends) become free ones;
#   - nginx runs from a copy of Debian's /etc/nginx/nginx.conf (the sed of
#     the example is run on that copy), with its pid file, error and access
#     logs and conf.d in the test's directory and no sites-enabled (the
#     default site would take port 80); the example's configurations go
#     into that conf.d (the upstream example beside the cache example);
#   - systemctl: `systemctl enable --now ringbloom-metrics@INST.timer` runs
#     the metrics service's ExecStart once, as the timer would;
#     `systemctl reload ringbloomd` runs the unit's ExecReload with
#     $MAINPID the daemon's pid;
#   - README's offline ring command runs in a directory with a
#     servers.txt and a keys.txt of the test's;
#   - README's library example is compiled inside a main() that defines
#     url, url_len, key and key_len (not run: it would create a segment).
# Everything it creates (the users and groups, www-data's membership,
# processes, /dev/shm/ringbloom.default, directories, the .prom files and
# nginx's cache directory) is removed at the end, even on failure.
# Refuses to run where ringbloom is installed or a user ringbloom exists
# already.  Needs root.  Prints "Checks: N, Failures: F".
set -u
debdir=${1:?usage: install.sh DEBDIR}
debdir=$(cd "$debdir" && pwd) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$here/../.." && pwd)

# shellcheck source=tests/package/checks.sh
. "$here/checks.sh"

if [ "$(id -u)" != 0 ]; then
    echo "install.sh: needs root" >&2
    exit 1
fi
if dpkg-query -W -f='${Status}\n' ringbloom 2>/dev/null | grep -q installed ||
   getent passwd ringbloom > /dev/null || getent group ringbloom > /dev/null; then
    echo "install.sh: ringbloom (the package, or its user or group) is already on this machine;" \
         "the test installs and removes its own" >&2
    exit 1
fi

tmp=$(mktemp -d /tmp/rbpkg.XXXXXX) || exit 1
chmod 755 "$tmp"
member=rbm$$
outsider=rbo$$
dpid=
npid=
bpids=
wwwdata_added=
made=     # files and directories outside $tmp the READMEs' blocks made
readme=$srcdir/README.md
ngxreadme=$srcdir/nginx/README.md
textdir=/var/lib/prometheus/node-exporter
stop_nginx() {
    [ -n "$npid" ] || return 0
    kill -TERM "$npid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$npid" 2>/dev/null
    npid=
}
cleanup() {
    stop_nginx
    # shellcheck disable=SC2086
    [ -n "$bpids" ] && kill $bpids 2>/dev/null
    if [ -n "$dpid" ]; then
        kill -TERM "$dpid" 2>/dev/null
        for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$dpid" 2>/dev/null
    fi
    [ -n "$wwwdata_added" ] && gpasswd -d www-data ringbloom > /dev/null 2>&1
    userdel "$member" 2>/dev/null
    userdel "$outsider" 2>/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ringbloom libringbloom1 libringbloom-dev \
        libnginx-mod-http-ringbloom python3-ringbloom > "$tmp/purge.log" 2>&1
    # Debian leaves system users on purge; this one was the test's.
    userdel ringbloom 2>/dev/null
    groupdel ringbloom 2>/dev/null
    # shellcheck disable=SC2086
    [ -n "$made" ] && rm -rf $made
    rm -rf /run/ringbloom /var/lib/ringbloom /dev/shm/ringbloom.default "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the READMEs' blocks ----------------------------------------------------
# block FILE NAME: the text of the block marked NAME in FILE, noted as used.
block() {
    echo "${1#"$srcdir"/} $2" >> "$tmp/used"
    /usr/bin/python3 "$here/blocks.py" get "$1" "$2"
}
# made PATH: PATH is removed at the end unless it was there before.
made() { [ -e "$1" ] || made="$made $1"; }
if out=$(/usr/bin/python3 "$here/blocks.py" check "$readme" "$ngxreadme" 2>&1); then
    ok "every fenced block of README.md and nginx/README.md has a package-test marker"
else
    bad "every fenced block of README.md and nginx/README.md has a package-test marker: $out"
fi

# ---- install, by README's command ------------------------------------------
# Run as written from a directory whose parent holds the .debs (links).
mkdir -p "$tmp/debs/src"
for p in ringbloom libringbloom1 libringbloom-dev libnginx-mod-http-ringbloom python3-ringbloom; do
    f=$(ls "$debdir/${p}_"*.deb 2>/dev/null | head -n 1)
    if [ -z "$f" ]; then
        echo "install.sh: no ${p}_*.deb in $debdir" >&2
        exit 1
    fi
    ln -s "$f" "$tmp/debs/"
done
cmd=$(block "$readme" install-debs)
if (cd "$tmp/debs/src" && DEBIAN_FRONTEND=noninteractive bash -e -c "$cmd") > "$tmp/install.log" 2>&1 &&
   dpkg-query -W -f='${Status}\n' ringbloom libringbloom1 libringbloom-dev libnginx-mod-http-ringbloom \
       python3-ringbloom | grep -c 'install ok installed' | grep -qx 5; then
    ok "README's install command installs the five packages ($cmd)"
else
    bad "README's install command installs the five packages ($cmd)"
    tail -n 30 "$tmp/install.log"
    echo "Checks: $checks, Failures: $fails"
    exit 1
fi
check "user ringbloom exists (sysusers.d)" quiet getent passwd ringbloom
check "group ringbloom exists" quiet getent group ringbloom
check "/run/ringbloom is ringbloom:ringbloom 750 (tmpfiles.d)" \
    test "$(stat -c '%U:%G %a' /run/ringbloom 2>&1)" = "ringbloom:ringbloom 750"
check "/var/lib/ringbloom is ringbloom:ringbloom 750" \
    test "$(stat -c '%U:%G %a' /var/lib/ringbloom 2>&1)" = "ringbloom:ringbloom 750"
check "the nginx module is enabled (modules-enabled link)" \
    test -e /etc/nginx/modules-enabled/50-mod-http-ringbloom.conf
check "/etc/ringbloom/ringbloomd.conf is a conffile" \
    grep -qx /etc/ringbloom/ringbloomd.conf /var/lib/dpkg/info/ringbloom.conffiles
unit=/lib/systemd/system/ringbloomd.service
[ -f "$unit" ] || unit=/usr/lib/systemd/system/ringbloomd.service
units=$(dirname "$unit")
for u in "$unit" "$units/ringbloomd@ci.service" "$units/ringbloom-metrics@default.service" \
         "$units/ringbloom-metrics@default.timer"; do
    if out=$(systemd-analyze verify "$u" 2>&1) && [ -z "$out" ]; then
        ok "systemd-analyze verify $(basename "$u")"
    else
        bad "systemd-analyze verify $(basename "$u"): $out"
    fi
done
for page in ringbloomd.8 ringbloomd.conf.5 ringbloom.1 libringbloom.3 rb_segment_attach.3; do
    check "man finds $page" quiet man -w "${page%.*}"
done

# ---- the daemon, as its unit starts it -------------------------------------
unitval() { sed -n "s/^$1=//p" "$unit" | tail -n 1; }
exec_start=$(unitval ExecStart)
user=$(unitval User)
group=$(unitval Group)
umask_=$(unitval UMask)
check "the unit runs ringbloomd -f as ringbloom" \
    test "$user:$group" = ringbloom:ringbloom -a -n "$exec_start"
# The unit's line is split into words as systemd splits it (no quotes in
# it: checked), then run with the unit's user, group, supplementary
# groups and umask.
case $exec_start in *[\"\'\\\$]*) bad "ExecStart has quoting this test does not expand: $exec_start" ;; esac
read -r -a argv <<< "$exec_start"
(umask "$umask_" && exec setpriv --reuid="$user" --regid="$group" --init-groups -- \
    "${argv[@]}") > "$tmp/daemon.log" 2>&1 &
dpid=$!
as() { local u=$1; shift; runuser -u "$u" -- "$@"; }
up=
for _ in $(seq 100); do
    if as "$user" ringbloom info server > /dev/null 2>&1; then up=1; break; fi
    kill -0 "$dpid" 2>/dev/null || break
    sleep 0.1
done
if [ -n "$up" ]; then ok "ringbloomd serves as the unit starts it"; else
    bad "ringbloomd serves as the unit starts it"; cat "$tmp/daemon.log"; fi
check "the socket is ringbloom:ringbloom 660" \
    test "$(stat -c '%U:%G %a' /run/ringbloom/default.sock 2>&1)" = "ringbloom:ringbloom 660"
check "the segment is ringbloom:ringbloom 640" \
    test "$(stat -c '%U:%G %a' /dev/shm/ringbloom.default 2>&1)" = "ringbloom:ringbloom 640"

# ---- users ----------------------------------------------------------------
useradd -M -N -s /usr/sbin/nologin -G ringbloom "$member" || exit 1
useradd -M -N -s /usr/sbin/nologin "$outsider" || exit 1
expect() {   # expect DESC WANTED USER CMD...: CMD's stdout is WANTED
    local d=$1 want=$2 u=$3 got
    shift 3
    got=$(cd / && as "$u" env -u XDG_RUNTIME_DIR "$@" 2>&1)
    if [ "$got" = "$want" ]; then ok "$d"; else bad "$d: got '$got', wanted '$want'"; fi
}
expect "a member adds a node by instance name" "OK" "$member" ringbloom --instance default node add 127.0.0.1:1
expect "a member reserves a filter" "OK" "$member" ringbloom --instance default \
    reserve seen 0.01 1000
expect "a member adds to a filter" "new	http://a/" "$member" ringbloom add seen http://a/
expect "a member reads the filter from shared memory" "present	http://a/" "$member" \
    ringbloom exists seen http://a/
expect "a member looks a key up in shared memory" "127.0.0.1:1" "$member" ringbloom lookup k1
out=$(cd / && as "$outsider" ringbloom exists seen http://a/ 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 1 ] && printf '%s' "$out" | grep -q "/run/ringbloom/default.sock"; then
    ok "a user outside the group is refused, and told the paths tried"
else
    bad "a user outside the group is refused, and told the paths tried: exit $rc, '$out'"
fi
out=$(cd / && as "$outsider" ringbloom add seen http://b/ 2>&1)
if [ $? -ne 0 ]; then ok "a user outside the group cannot add"; else
    bad "a user outside the group cannot add: '$out'"; fi

# ---- a program built against libringbloom-dev --------------------------------
# shellcheck disable=SC2046
if cc -o "$tmp/reader" "$here/reader.c" $(pkg-config --cflags --libs ringbloom) 2> "$tmp/cc.log"; then
    ok "a program builds with pkg-config ringbloom"
    expect "it reads the ring and filter as the member" "127.0.0.1:1 1" "$member" \
        "$tmp/reader" default k1 seen http://a/
else
    bad "a program builds with pkg-config ringbloom"
    cat "$tmp/cc.log"
fi

# ---- the Python package --------------------------------------------------------
pyreads='import ringbloom
f = ringbloom.Filter("default", "seen")
print(ringbloom.__file__, ringbloom.Ring("default").lookup("k1"), f.contains("http://a/"),
      "http://nope/" in f)'
expect "python3-ringbloom: the member imports it from dist-packages and reads the ring and the filter" \
    "/usr/lib/python3/dist-packages/ringbloom/__init__.py 127.0.0.1:1 True False" "$member" \
    /usr/bin/python3 -c "$pyreads"
pywrites='import ringbloom
with ringbloom.Client("default") as c:
    print(c.bf_add("seen", "http://py/"), ringbloom.Filter("default", "seen").contains("http://py/"))'
expect "python3-ringbloom: the member writes through its Client (python3-redis)" "True True" \
    "$member" /usr/bin/python3 -c "$pywrites"
ext=$(ls /usr/lib/python3/dist-packages/ringbloom/_ringbloom.*.so 2>/dev/null | head -n 1)
check "python3-ringbloom's extension is linked with libringbloom.so.1 ($ext)" \
    sh -c "ldd '$ext' | grep -q 'libringbloom\.so\.1 => /'"

# ---- README's library example, compiled --------------------------------------
# Its #include lines at the top, the rest inside a main() that defines the
# names it leaves to the reader; built and linked, not run.
src=$(block "$readme" library-c)
{
    printf '%s\n' "$src" | grep '^#include'
    echo '#include <stddef.h>'
    echo 'int main(void) {'
    echo 'const char *url = "http://a/", *key = "k1"; size_t url_len = 9, key_len = 2;'
    printf '%s\n' "$src" | grep -v '^#include'
    echo 'return 0; }'
} > "$tmp/readme_lib.c"
# shellcheck disable=SC2046
if cc -o "$tmp/readme_lib" "$tmp/readme_lib.c" $(pkg-config --cflags --libs ringbloom) \
      > "$tmp/cc2.log" 2>&1; then
    ok "README's library example compiles and links with pkg-config ringbloom"
else
    bad "README's library example compiles and links with pkg-config ringbloom: $(head -n 5 "$tmp/cc2.log")"
fi

# ---- README's offline ring ---------------------------------------------------
mkdir "$tmp/ring"
printf 'cache-a:11211\ncache-b:11211 2\ncache-c:11211\n' > "$tmp/ring/servers.txt"
seq -f 'key%g' 100 > "$tmp/ring/keys.txt"
cmd=$(block "$readme" ring-offline)
out=$(cd "$tmp/ring" && bash -e -c "$cmd" 2>&1)
n=$(printf '%s\n' "$out" | grep -cE '^key[0-9]+	cache-[abc]:11211$')
check "README's offline ring command prints KEY<TAB>NODE for 100 keys (got $n)" test "$n" -eq 100

# ---- README's three hosts replicating a filter through NATS JetStream ----------
cmd=$(block "$readme" nats-fleet)
out=$(cd / && timeout 180 bash -e -c "$cmd" 2>&1)
rc=$?
pkill -KILL -f '^ringbloomd -i host[123] ' 2>/dev/null
pkill -KILL -f '^nats-server -c /tmp/tmp\.[^ ]*/n[123]\.conf' 2>/dev/null
if [ $rc -ne 0 ]; then   # a start that hung: what it left
    rm -f /dev/shm/ringbloom.host1 /dev/shm/ringbloom.host2 /dev/shm/ringbloom.host3
fi
seen=no
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^present	https://example.org/a$' &&
   printf '%s\n' "$out" | grep -q '^absent	https://example.org/b$' &&
   printf '%s\n' "$out" | grep -q '^nats_healthy:1' &&
   printf '%s\n' "$out" | grep -q '^nats_applied_seq:[1-9]'; then
    seen=yes
fi
check "README's NATS example: host 3 reads host 1's key from its shared memory, host 2 is healthy (status $rc: $(printf '%s' "$out" | tail -n 5 | tr '\n' '|'))" \
    test "$seen" = yes

# ---- README's metrics for node_exporter's textfile collector -------------------
if [ -d "$textdir" ]; then
    ok "$textdir exists (prometheus-node-exporter)"
else
    bad "$textdir exists: install prometheus-node-exporter (README's test command does)"
fi
cmd=$(block "$readme" metrics-timer)
inst=$(printf '%s\n' "$cmd" |
       sed -n 's/^systemctl enable --now ringbloom-metrics@\([a-z0-9]*\)\.timer$/\1/p')
munit=$units/ringbloom-metrics@.service
if [ -z "$inst" ] || [ ! -f "$units/ringbloom-metrics@.timer" ] || [ ! -f "$munit" ]; then
    bad "README's metrics command enables a shipped timer: '$cmd'"
else
    # The timer's service, once: its ExecStart with %i filled in, as root (no User=).
    mexec=$(sed -n 's/^ExecStart=//p' "$munit" | tail -n 1 | sed "s/%i/$inst/g")
    made "$textdir/ringbloom-$inst.prom"
    if (cd / && eval "$mexec") > "$tmp/metrics.log" 2>&1; then
        ok "the metrics service's command succeeds"
    else
        bad "the metrics service's command succeeds: $(tail -n 3 "$tmp/metrics.log")"
    fi
    check "it writes $textdir/ringbloom-$inst.prom" \
        grep -q "^ringbloom_build_info{ringbloom_instance=\"$inst\"" "$textdir/ringbloom-$inst.prom"
    check "and leaves no temporary file" test ! -e "$textdir/ringbloom-$inst.prom.tmp"
fi
cmd=$(block "$readme" metrics-cron)
made "$textdir/ringbloom.prom"
out=$(cd / && bash -e -c "$cmd" 2>&1)
check "README's cron line writes $textdir/ringbloom.prom${out:+: $out}" \
    grep -q '^ringbloom_build_info{ringbloom_instance="default"' "$textdir/ringbloom.prom"

# ---- nginx/README.md's example on the packaged nginx -------------------------
# Its commands (with the ports replaced, and the sed run on a copy of
# Debian's nginx.conf), its configuration and the upstream example, in an
# nginx running from that copy (the header says what differs).
ports=$(python3 -c 'import socket
ss=[socket.socket() for _ in range(5)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))')
read -r p_ngx p_up p_b1 p_b2 p_b3 <<< "$ports"
ports() { sed -e "s/8080/$p_ngx/g" -e "s/8081/$p_b1/g" -e "s/8082/$p_b2/g" -e "s/8083/$p_b3/g"; }
# Two backends that answer their own address; nothing listens on $p_b3.
backend() {   # backend PORT: an HTTP server answering its address, in the background
    python3 - "$1" > /dev/null 2>&1 <<'EOF' &
import http.server, sys
port = int(sys.argv[1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("127.0.0.1:%d\n" % port).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
EOF
    bpids="$bpids $!"
}
backend "$p_b1"
backend "$p_b2"
cp /etc/nginx/nginx.conf "$tmp/nginx.debian.conf"
ringbloom node remove 127.0.0.1:1 > /dev/null    # the member's, above
wwwdata_added=1
cmd=$(block "$ngxreadme" example-setup | ports |
      sed "s|/etc/nginx/nginx.conf|$tmp/nginx.debian.conf|g")
if (cd / && bash -e -c "$cmd") > "$tmp/setup.log" 2>&1; then
    ok "nginx/README.md's commands run as root"
else
    bad "nginx/README.md's commands run as root: $(tail -n 3 "$tmp/setup.log")"
fi
check "www-data is in the group ringbloom" sh -c 'id -nG www-data | grep -qw ringbloom'
check "the reserve made an aging filter" grep -q '"name":"urls","kind":"aging"' \
    <(ringbloom --json filters)
check "the ring has the two backends" \
    test "$(ringbloom nodes | cut -f1 | sort | tr '\n' ' ')" = \
    "$(printf '127.0.0.1:%s\n' "$p_b1" "$p_b2" | sort | tr '\n' ' ')"
check "the sed sets Debian's error_log to notice" \
    grep -qx 'error_log /var/log/nginx/error.log notice;' "$tmp/nginx.debian.conf"
# The copy, run from the test's directory.
mkdir -p "$tmp/conf.d"
sed -e "s|^pid .*|pid $tmp/nginx.pid;|" \
    -e "s|/var/log/nginx/|$tmp/|" \
    -e "s|/etc/nginx/conf.d/|$tmp/conf.d/|" \
    -e '\|/etc/nginx/sites-enabled/|d' "$tmp/nginx.debian.conf" > "$tmp/nginx.conf"
block "$ngxreadme" example-conf | ports > "$tmp/conf.d/ringbloom-cache.conf"
cachedir=$(sed -n 's/^proxy_cache_path \([^ ]*\) .*/\1/p' "$tmp/conf.d/ringbloom-cache.conf")
made "$cachedir"
block "$ngxreadme" upstream-example | ports | sed "s/listen $p_ngx;/listen $p_up;/" \
    > "$tmp/conf.d/upstream.conf"
start_nginx() {
    if /usr/sbin/nginx -c "$tmp/nginx.conf" 2> "$tmp/nginx.start"; then
        for _ in $(seq 50); do [ -s "$tmp/nginx.pid" ] && break; sleep 0.1; done
        npid=$(cat "$tmp/nginx.pid" 2>/dev/null)
        return 0
    fi
    cat "$tmp/nginx.start"
    return 1
}
waitlog() {   # waitlog FILE PATTERN: up to 15 s for an extended regex in FILE
    for _ in $(seq 150); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
# Workers outside the group (as before the adduser) cannot attach: the
# warning reaches the error log at the README's level.
gpasswd -d www-data ringbloom > /dev/null
start_nginx
check "nginx starts with the README's configuration" test -n "$npid"
check "a worker outside the group logs \"cannot attach\" at warn" \
    waitlog "$tmp/error.log" '\[warn\] .*cannot attach'
stop_nginx
mv "$tmp/error.log" "$tmp/error.attach.log" 2>/dev/null
usermod -a -G ringbloom www-data
start_nginx
check "nginx restarts with www-data in the group" test -n "$npid"
check "proxy_cache_path $cachedir is made for www-data" \
    test "$(stat -c %U "$cachedir" 2>&1)" = www-data
get() {   # get PORT PATH: "<status> <X-Cache-Status> <body>", or "no answer: why"
    python3 - "$1" "$2" <<'EOF'
import http.client, sys
try:
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
    c.request("GET", sys.argv[2])
    r = c.getresponse()
    print(r.status, r.getheader("X-Cache-Status") or "-", r.read().decode().strip())
except Exception as e:
    print("no answer:", e)
EOF
}
sleep 0.5
routed=0
for i in $(seq 20); do
    node=$(ringbloom lookup "/r$i" 2>/dev/null)
    [ "$(get "$p_ngx" "/r$i")" = "200 BYPASS $node" ] && routed=$((routed + 1))
done
check "nginx routes 20 keys to the ring's node (got $routed)" test $routed -eq 20
# The admit of a request goes to the daemon after its response: the
# second request finds the key seen (and stores), the third hits.  The
# key admitted is the one nginx/README.md names.
key=$(tr '\n' ' ' < "$ngxreadme" | grep -o 'admitted as `[^`]*`' | sed 's/.*`\(.*\)`/\1/')
path=/${key#http://127.0.0.1/}
first=$(get "$p_ngx" "$path")
for _ in $(seq 50); do
    ringbloom exists urls "$key" > /dev/null 2>&1 && break
    sleep 0.1
done
check "the key admitted is '$key', as nginx/README.md says" \
    quiet ringbloom exists urls "${key:-(none)}"
second=$(get "$p_ngx" "$path")
third=$(get "$p_ngx" "$path")
node=$(ringbloom lookup "$path")
check "cache on the second request: BYPASS, MISS, HIT (got $first / $second / $third)" \
    test "$first|$second|$third" = "200 BYPASS $node|200 MISS $node|200 HIT $node"
complaints=$(grep -sE '\[(warn|error|crit|alert|emerg)\]' "$tmp/error.log" | grep ringbloom)
check "nginx's error log has no ringbloom complaint${complaints:+: $complaints}" \
    test -z "$complaints"
# The upstream example: its third server is named in the ring and does
# not answer; its third failure (report=3) takes it down, with a notice.
ringbloom node add "127.0.0.1:$p_b3" > /dev/null
for _ in $(seq 100); do
    for j in $(seq 20); do
        [ "$(ringbloom lookup "/u$j" 2>/dev/null)" = "127.0.0.1:$p_b3" ] && get "$p_up" "/u$j" > /dev/null
    done
    grep -qs "ringbloom_hash: RING.DOWN 127.0.0.1:$p_b3" "$tmp/error.log" && break
    sleep 0.3
done
check "the upstream example's report=3 logs a RING.DOWN notice" \
    grep -q "\[notice\] .*ringbloom_hash: RING.DOWN 127.0.0.1:$p_b3" "$tmp/error.log"
check "and the ring has the node down" \
    sh -c "ringbloom nodes | grep '^127.0.0.1:$p_b3' | grep -qw down"
# Its backend back: after hold_down (30 s) and report_timeout (its
# fail_timeout, 10 s) a request probes it, and RING.UP follows, noticed.
backend "$p_b3"
for _ in $(seq 150); do
    get "$p_up" /probe > /dev/null
    grep -qs "ringbloom_hash: RING.UP 127.0.0.1:$p_b3" "$tmp/error.log" && break
    sleep 0.5
done
check "a probe after hold_down logs a RING.UP notice" \
    grep -q "\[notice\] .*ringbloom_hash: RING.UP 127.0.0.1:$p_b3" "$tmp/error.log"
for _ in $(seq 50); do   # the report is sent after the notice; an up node has no third column
    ringbloom nodes | grep -qx "127.0.0.1:$p_b3	1" && break
    sleep 0.1
done
check "and the ring has the node up again" \
    sh -c "ringbloom nodes | grep -qx '127.0.0.1:$p_b3	1'"
stop_nginx

# ---- nginx/README.md's ACL rule for report= alone --------------------------------
reload=$(unitval ExecReload | sed "s/\\\$MAINPID/$dpid/")
cmd=$(block "$ngxreadme" acl-rule | sed "s|^systemctl reload ringbloomd$|$reload|")
if (cd / && bash -e -c "$cmd") > "$tmp/acl.log" 2>&1; then
    ok "nginx/README.md's ACL rule is added and the daemon reloaded"
else
    bad "nginx/README.md's ACL rule is added and the daemon reloaded: $(tail -n 3 "$tmp/acl.log")"
fi
cmd=$(block "$ngxreadme" acl-dryrun)
refusal=$(tr '\n' ' ' < "$ngxreadme" | grep -o '(`User www-data has no permissions[^`]*`)' |
          sed 's/^(`//; s/`)$//')
want=$(printf 'OK\n%s' "$refusal")
for _ in $(seq 50); do
    got=$(cd / && bash -c "$cmd" 2>&1)
    [ "$got" = "$want" ] && break
    sleep 0.1
done
check "ACL DRYRUN answers as nginx/README.md says (got '$got', wanted '$want')" \
    test -n "$refusal" -a "$got" = "$want"

# ---- every block marked to run was used -----------------------------------------
unused=$(for f in "$readme" "$ngxreadme"; do
             /usr/bin/python3 "$here/blocks.py" list "$f" |
                 sed "s|^[a-z]* |${f#"$srcdir"/} |"
         done | sort -u | comm -23 - <(sort -u "$tmp/used"))
check "every block marked run, file or compile was used${unused:+; not: $unused}" test -z "$unused"

# ---- stop and purge ---------------------------------------------------------
kill -TERM "$dpid"
for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
check "ringbloomd stops on SIGTERM" sh -c "! kill -0 $dpid 2>/dev/null"
wait "$dpid" 2>/dev/null
dpid=
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ringbloom libringbloom1 libringbloom-dev \
    libnginx-mod-http-ringbloom > "$tmp/purge.log" 2>&1
check "apt-get purge removes the packages" test $? -eq 0
left=$(ls /usr/sbin/ringbloomd /usr/bin/ringbloom /etc/ringbloom/ringbloomd.conf \
    /usr/lib/nginx/modules/ngx_http_ringbloom_module.so \
    /etc/nginx/modules-enabled/50-mod-http-ringbloom.conf 2>/dev/null)
check "no package file is left after purge${left:+: $left}" test -z "$left"
echo "Checks: $checks, Failures: $fails"
[ $fails -eq 0 ]
