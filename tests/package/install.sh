#!/bin/bash
# tests/package/install.sh DEBDIR - installs the Debian packages built from
# this tree (dpkg-buildpackage -b puts them in DEBDIR) on this machine and
# uses them as an administrator would, without systemd (CI machines have
# none running), then purges them.  Checks that
#   - the packages install with apt (dependencies resolved, the nginx ABI
#     among them), create the user and group ringbloom (sysusers.d), the
#     run and state directories (tmpfiles.d), and enable the nginx module;
#   - systemd-analyze verify accepts both units, and the manual pages are
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
#     loader, no ldconfig by hand);
#   - nginx/README.md's example, extracted from that file (its reserve
#     command and its configuration; only ports and the cache directory are
#     replaced), runs on the packaged nginx with www-data workers added to
#     the group: routing by the ring, and caching on the second request;
#   - purging removes the packages' files.
# Everything it creates (the users and groups, www-data's membership,
# processes, /dev/shm/ringbloom.default, directories) is removed at the
# end, even on failure.  Refuses to run where ringbloom is installed or a
# user ringbloom exists already.  Needs root.  Prints "Checks: N, Failures: F".
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
cleanup() {
    [ -n "$npid" ] && kill -TERM "$npid" 2>/dev/null
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
        libnginx-mod-http-ringbloom > "$tmp/purge.log" 2>&1
    # Debian leaves system users on purge; this one was the test's.
    userdel ringbloom 2>/dev/null
    groupdel ringbloom 2>/dev/null
    rm -rf /run/ringbloom /var/lib/ringbloom /dev/shm/ringbloom.default "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- install -------------------------------------------------------------
debs=()
for p in ringbloom libringbloom1 libringbloom-dev libnginx-mod-http-ringbloom; do
    f=$(ls "$debdir/${p}_"*.deb 2>/dev/null | head -n 1)
    if [ -z "$f" ]; then
        echo "install.sh: no ${p}_*.deb in $debdir" >&2
        exit 1
    fi
    debs+=("$f")
done
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${debs[@]}" > "$tmp/install.log" 2>&1; then
    ok "apt-get installs the four packages"
else
    bad "apt-get installs the four packages"
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
for u in "$unit" "$(dirname "$unit")/ringbloomd@ci.service"; do
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

# ---- nginx/README.md's example on the packaged nginx -------------------------
# The README's reserve command (the first line starting "ringbloom reserve"
# in its Example) and its configuration (the ```nginx block there).
readme=$srcdir/nginx/README.md
example=$(sed -n '/^## Example/,/^## /p' "$readme")
reserve=$(printf '%s\n' "$example" | grep -m1 '^ringbloom reserve ')
conf=$(printf '%s\n' "$example" | sed -n '/^```nginx/,/^```/p' | sed '1d;$d')
if [ -z "$reserve" ] || [ -z "$conf" ]; then
    bad "nginx/README.md's Example has a 'ringbloom reserve' line and an nginx block"
else
    usermod -a -G ringbloom www-data && wwwdata_added=1
    # Two backends that answer their own address; the README's ports and
    # cache directory are replaced by free ones of the test's.
    ports=$(python3 -c 'import socket
ss=[socket.socket() for _ in range(3)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))')
    read -r p_ngx p_b1 p_b2 <<< "$ports"
    for p in "$p_b1" "$p_b2"; do
        python3 - "$p" > /dev/null 2>&1 <<'EOF' &
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
    done
    mkdir -p "$tmp/conf.d" "$tmp/cache"
    chown www-data "$tmp/cache"
    printf '%s\n' "$conf" | sed -e "s/listen 8080;/listen 127.0.0.1:$p_ngx;/" \
        -e "s|/var/lib/nginx/ringbloom|$tmp/cache|" \
        -e "s/127\.0\.0\.1:8081/127.0.0.1:$p_b1/g" > "$tmp/conf.d/example.conf"
    # Debian's nginx.conf, reduced to what the example needs: the packaged
    # modules, www-data workers, conf.d included inside http.
    cat > "$tmp/nginx.conf" <<EOF
user www-data;
worker_processes 2;
pid $tmp/nginx.pid;
error_log $tmp/error.log;
include /etc/nginx/modules-enabled/*.conf;
events { worker_connections 64; }
http {
    access_log off;
    include $tmp/conf.d/*.conf;
}
EOF
    # shellcheck disable=SC2086
    (cd / && eval "$reserve") > "$tmp/reserve.log" 2>&1
    check "the README's reserve command works ($reserve)" test $? -eq 0
    check "it made an aging filter" grep -q '"name":"urls","kind":"aging"' \
        <(ringbloom --json filters)
    ringbloom node remove 127.0.0.1:1 > /dev/null
    ringbloom node add "127.0.0.1:$p_b1" > /dev/null
    ringbloom node add "127.0.0.1:$p_b2" > /dev/null
    if /usr/sbin/nginx -c "$tmp/nginx.conf" 2> "$tmp/nginx.start"; then
        npid=$(cat "$tmp/nginx.pid" 2>/dev/null)
        ok "nginx starts with the README's configuration"
    else
        bad "nginx starts with the README's configuration: $(cat "$tmp/nginx.start")"
    fi
    get() {   # get PATH: "<status> <X-Cache-Status> <body>"
        python3 - "$p_ngx" "$1" <<'EOF'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
c.request("GET", sys.argv[2])
r = c.getresponse()
print(r.status, r.getheader("X-Cache-Status") or "-", r.read().decode().strip())
EOF
    }
    sleep 0.5
    routed=0
    for i in $(seq 20); do
        node=$(ringbloom lookup "/r$i")
        [ "$(get "/r$i")" = "200 BYPASS $node" ] && routed=$((routed + 1))
    done
    check "nginx routes 20 keys to the ring's node (got $routed)" test $routed -eq 20
    # The admit of a request goes to the daemon after its response: the
    # second request finds the key seen (and stores), the third hits.
    first=$(get /c)
    for _ in $(seq 50); do
        ringbloom exists urls "http127.0.0.1/c" > /dev/null 2>&1 && break
        sleep 0.1
    done
    second=$(get /c)
    third=$(get /c)
    node=$(ringbloom lookup /c)
    check "cache on the second request: BYPASS, MISS, HIT (got $first / $second / $third)" \
        test "$first|$second|$third" = "200 BYPASS $node|200 MISS $node|200 HIT $node"
    if grep -q "ringbloom" "$tmp/error.log" 2>/dev/null; then
        bad "nginx's error log has no ringbloom complaint: $(grep ringbloom "$tmp/error.log" | head -n 3)"
    else
        ok "nginx's error log has no ringbloom complaint"
    fi
    kill -TERM "$npid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
    npid=
fi

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
