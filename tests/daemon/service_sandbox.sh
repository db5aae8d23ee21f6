#!/bin/sh
# The packaged unit (service/ringbloomd@.service as built), sandbox and all,
# run by systemd itself against every documented setting (issue 42, item
# 8: with RestrictAddressFamilies=AF_UNIX, `ring-source etcd` and
# `filter-source nats`, which the README offers for the service, could
# not connect).
#
# PID 1 here is no systemd, so the test runs Debian's systemd 252 as a
# service manager of its own: `systemd --user` as root, which applies a
# unit's User=, namespaces (ProtectSystem=, PrivateTmp=, PrivateDevices=,
# ProtectHome=...), seccomp filters (RestrictAddressFamilies=,
# SystemCallFilter=, MemoryDenyWriteExecute=...), NoNewPrivileges= and
# capability bounds exactly as the system manager does.  It runs in a
# private mount namespace that stands for the host: tmpfs on /run and
# /var, overlays on /etc and /usr (systemd-sysusers makes the service's
# user from service/sysusers.d there; the built ringbloomd and the
# packaged ringbloomd.conf go where the unit's ExecStart= names them),
# and in a cgroup of its own, so that the manager never touches another
# process.  Two things differ from a system manager, both set to what
# the system manager does: a user manager's RuntimeDirectory=,
# StateDirectory= and LogsDirectory= live under XDG_RUNTIME_DIR (/run
# here) and XDG_CONFIG_HOME (/var/lib, with /var/log a link to
# /var/lib/log), and its notify socket is made writable by the service's
# user as the system manager's is.  The unit file itself is used as it
# is; a drop-in only sends the daemon's output to a file the test reads.
#
# Every setting `ringbloomd -t` lists is classified below: those that
# need something of the sandbox (a TCP connection, a file or directory,
# a device, the user database) each have a scenario run under the unit;
# the rest are numbers, words and names the sandbox cannot affect.  A
# setting added later fails the test until it is classified.  Servers
# are real and on loopback: etcd (plain and TLS with client
# certificates), a NATS JetStream server.  The daemon's own sandbox is
# printed (NoNewPrivs, Seccomp, CapBnd) as evidence.
#
# Skipped (77) with its reason without root, systemd, unshare, overlayfs,
# a writable cgroup hierarchy, etcd, nats-server or openssl, or where PID
# 1 is systemd (use the host's: systemd-run -p ... there).
set -u
daemon=${RB_DAEMON:-../daemon/ringbloomd}
cli=${RB_CLI:-../client/ringbloom}
srcdir=$(cd "${srcdir:-$(dirname "$0")/../..}" && pwd)
builddir=$(cd "$(dirname "$daemon")/.." && pwd)
daemon=$(cd "$(dirname "$daemon")" && pwd)/$(basename "$daemon")
cli=$(cd "$(dirname "$cli")" && pwd)/$(basename "$cli")
unit="$builddir/service/ringbloomd@.service"
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
. "$srcdir/tests/harness/ports.sh"
skip() { echo "SKIP: $1"; exit 77; }
fail() { echo "FAIL: $1"; echo "Checks: ${checks:-0}, Failures: 1, Errors: 0"; exit 1; }

# ---- the settings, classified ---------------------------------------------------------
# setting  scenario   why (a scenario: what it needs of the sandbox;
#                     "-": nothing of it)
settings_table() {
    cat <<'EOF'
instance                 base      the unit's -i
socket                   base      the unit's -s, in RuntimeDirectory=
pidfile                  base      the unit's -o pidfile=, in RuntimeDirectory=
dir                      base      the unit's -d, in StateDirectory=
socket-mode              base      the packaged configuration's
unixsocketgroup          base      the group ringbloom (sysusers.d), from the user database
segment-mode             base      /dev/shm, kept by PrivateDevices=
segment-group            base      the group ringbloom
huge-pages               huge      /dev/hugepages and madvise under PrivateDevices=
segment-shrink-bytes     -         a size
max-memory               -         a size
max-filters              -         a number
max-nodes                -         a number
max-ring-points          -         a number
max-command-bytes        -         a size
ring-down-max-percent    -         a number
max-clients              base      raises RLIMIT_NOFILE (no capability needed)
reserved-writer-clients  -         a number
max-key-bytes            -         a size
max-request-bytes        -         a size
client-output-soft-limit -         a size
client-output-hard-limit -         a size
max-client-memory        -         a size
timeout                  -         a number
appendfsync              base      fsync of the log in StateDirectory=
save-seconds             -         a number
save-log-bytes           -         a size
save-log-percent         -         a number
ring-mode                -         a word
ring-replicas            -         a number
ring-source              etcd      TCP to etcd (RestrictAddressFamilies=)
etcd-endpoints           etcd      TCP to etcd, by address and by name (/etc/hosts)
etcd-prefix              etcd      a key prefix
etcd-cacert              etcdtls   a file under /etc, read by the service's user
etcd-cert                etcdtls   a file under /etc
etcd-key                 etcdtls   a file under /etc, group ringbloom only
etcd-user                -         a name (etcd's authentication: sent over the connection)
etcd-password            -         a secret, sent over the connection
etcd-timeout             -         a number
filter-source            nats      TCP to NATS (RestrictAddressFamilies=)
nats-servers             nats      TCP to NATS
nats-stream              nats      a name
nats-filters             nats      a pattern
nats-creds               natscreds a file under /etc, read when the server asks for a signature
nats-cacert              natstls   a file under /etc, read by libnats
nats-cert                natstls   a file under /etc
nats-key                 natstls   a file under /etc, group ringbloom only
nats-timeout             -         a number
nats-max-bytes           -         a size
nats-snapshot-every      -         a number
bf-default-layout        -         a word
allow-write-uid          acl       names from the user database
allow-write-gid          acl       names from the user database
loglevel                 -         a word
keep-segment             base      the segment left in /dev/shm on stop, found again on start
load-truncated           -         a word
slowlog-log-slower-than  -         a number
slowlog-max-len          -         a number
latency-monitor-threshold -        a number
logfile                  logfile   a file in LogsDirectory=; CONFIG SET logfile elsewhere refused
syslog-enabled           -         -f (the unit's) logs to the journal: syslog is for a detached daemon
syslog-ident             -         as syslog-enabled
syslog-facility          -         as syslog-enabled
acl-user                 acl       a user name from the user database
acl-group                base      the packaged configuration's acl-group ringbloom
appendonly               base      the log in StateDirectory=
EOF
}

# ---- outside: preflight, a cgroup of our own, a private mount namespace ------------------
outside() {
    [ "$(id -u)" = 0 ] || skip "needs root (a private mount namespace, a service user)"
    [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] &&
        skip "PID 1 is systemd: this test runs a manager of its own where there is none"
    for p in unshare systemctl systemd-sysusers etcd etcdctl nats-server openssl redis-cli; do
        command -v "$p" > /dev/null 2>&1 || skip "$p not installed"
    done
    [ -x /lib/systemd/systemd ] || skip "/lib/systemd/systemd not installed (Debian package systemd)"
    grep -qw overlay /proc/filesystems || skip "no overlayfs in this kernel"
    [ -f "$unit" ] || fail "no built unit at $unit (make builds it)"
    # .ci/run's ASan tree: an instrumented daemon did not start under the
    # unit's restrictions (its sanitizer runtime, not the unit, is what
    # differs); the unit is what this tests, with the daemon the test
    # command built.
    nm "$daemon" 2>/dev/null | grep -q '__[at]san_init' &&
        skip "the daemon is built with a sanitizer; the unit is tested with the uninstrumented one"
    case $(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit") in
    /usr/*) ;;
    *) skip "the unit's ExecStart is not under /usr (configure --prefix): it cannot be put in place here" ;;
    esac
    # The cgroups systemd uses: name=systemd (v1, hybrid) and the v2 tree.
    cgdirs=
    if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
        cgdirs=/sys/fs/cgroup
    else
        [ -d /sys/fs/cgroup/systemd ] && cgdirs=/sys/fs/cgroup/systemd
        [ -d /sys/fs/cgroup/unified ] && cgdirs="$cgdirs /sys/fs/cgroup/unified"
    fi
    [ -n "$cgdirs" ] || skip "no systemd cgroup hierarchy mounted"
    pid1=$(cat /proc/1/cgroup)
    tmp=$(mktemp -d /tmp/rbtest.sandbox.XXXXXX) || fail "mktemp failed"
    chmod 755 "$tmp"
    cg="rbtest-sandbox.$$"
    made=
    trap outside_cleanup EXIT
    trap 'exit 1' INT TERM
    for h in $cgdirs; do
        here=$(awk -F: -v v2="$([ "$h" = /sys/fs/cgroup/systemd ] && echo 0 || echo 1)" \
            '(v2 && $1 == "0") || (!v2 && $2 == "name=systemd") { print $3 }' /proc/self/cgroup)
        mkdir "$h$here/$cg" 2>/dev/null || skip "cannot make a cgroup in $h$here (read-only?)"
        made="$made $h$here/$cg"
        echo $$ > "$h$here/$cg/cgroup.procs" || skip "cannot move into a cgroup of $h"
    done
    unshare -m --propagation private "$self" --inside "$tmp"
    rc=$?
    [ "$(cat /proc/1/cgroup)" = "$pid1" ] ||
        fail "the manager moved PID 1 into another cgroup: $(cat /proc/1/cgroup)"
    exit $rc
}

# Kills what is left in our cgroups (the test's own shell excepted), moves
# back and removes them, deepest first; then the directory.
outside_cleanup() {
    for c in $made; do
        for i in 1 2 3 4 5; do
            left=$(find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null | grep -vx "$$")
            [ -z "$left" ] && break
            kill -9 $left 2>/dev/null
            sleep 0.1
        done
        echo $$ > "$(dirname "$c")/cgroup.procs" 2>/dev/null
        find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    [ -n "${RB_KEEP:-}" ] && { echo "kept $tmp"; return; }
    rm -rf "$tmp"
}

# ---- inside: the host this test stands up ----------------------------------------------
# Mounts, the service's user, ringbloomd and its configuration where the
# unit names them, the unit where a user manager finds it, the manager.
host_up() {
    mount -t tmpfs -o mode=0755 tmpfs /run || fail "tmpfs on /run"
    mkdir -p /run/systemd/system                   # "booted with systemd"
    mount -t tmpfs -o mode=0755 tmpfs /var || fail "tmpfs on /var"
    mkdir -p /var/lib/systemd/user/ringbloomd@.service.d /var/tmp /var/cache
    chmod 1777 /var/tmp
    ln -s lib/log /var/log
    ln -s ../run /var/run
    for d in etc usr; do
        mkdir -p "$tmp/$d.up" "$tmp/$d.work"
        mount -t overlay overlay -o "lowerdir=/$d,upperdir=$tmp/$d.up,workdir=$tmp/$d.work" "/$d" ||
            fail "overlay on /$d"
    done
    systemd-sysusers "$srcdir/service/sysusers.d/ringbloom.conf" > "$tmp/sysusers.log" 2>&1 ||
        fail "systemd-sysusers: $(cat "$tmp/sysusers.log")"
    exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
    conf=$(sed -n 's/^ExecStart=.* -c \([^ ]*\).*/\1/p' "$unit")
    [ -n "$conf" ] || fail "no -c in the unit's ExecStart"
    mkdir -p "$(dirname "$exe")" "$(dirname "$conf")"
    cp "$daemon" "$exe"
    cp "$unit" /var/lib/systemd/user/
    printf '[Service]\nStandardOutput=append:%s/daemon.out\nStandardError=append:%s/daemon.out\n' \
        "$tmp" "$tmp" > /var/lib/systemd/user/ringbloomd@.service.d/test-output.conf
    XDG_RUNTIME_DIR=/run XDG_CONFIG_HOME=/var/lib XDG_STATE_HOME=/var/lib XDG_CACHE_HOME=/var/cache
    export XDG_RUNTIME_DIR XDG_CONFIG_HOME XDG_STATE_HOME XDG_CACHE_HOME
    SYSTEMD_LOG_TARGET=console /lib/systemd/systemd --user > "$tmp/manager.log" 2>&1 &
    manager=$!
    i=0
    until systemctl --user is-system-running > /dev/null 2>&1; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the service manager did not start: $(tail "$tmp/manager.log")"
        sleep 0.05
    done
    chmod 0777 /run/systemd/notify   # as the system manager's: a service of any user notifies
}

# etcd (plain, and TLS with client certificates) and a NATS JetStream
# server on loopback; the TLS files under the configuration's directory,
# the key readable by the group ringbloom only.
servers_up() {
    set -- $(rb_free_ports 7)
    etcd_port=$1 etcd_peer=$2 tls_port=$3 tls_peer=$4 nats_port=$5 natstls_port=$6
    natscreds_port=$7
    etcd --name m --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
        --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-cluster "m=http://127.0.0.1:$etcd_peer" --log-level warn > "$tmp/etcd.log" 2>&1 &
    etcd_pid=$!
    certs=$(dirname "$conf")/tls
    mkdir -p "$certs"
    ( cd "$certs" &&
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=rbtest-ca &&
      printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > ext &&
      for who in server client; do
          openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who &&
          openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
              -out $who.pem -days 2 -extfile ext || exit 1
      done ) > "$tmp/certs.log" 2>&1 || fail "openssl: $(tail -5 "$tmp/certs.log")"
    chgrp ringbloom "$certs/client.key" && chmod 0640 "$certs/client.key"
    etcd --name t --data-dir "$tmp/etcd-tls" --listen-client-urls "https://127.0.0.1:$tls_port" \
        --advertise-client-urls "https://127.0.0.1:$tls_port" \
        --listen-peer-urls "http://127.0.0.1:$tls_peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$tls_peer" \
        --initial-cluster "t=http://127.0.0.1:$tls_peer" --cert-file "$certs/server.pem" \
        --key-file "$certs/server.key" --trusted-ca-file "$certs/ca.pem" --client-cert-auth \
        --log-level warn > "$tmp/etcd-tls.log" 2>&1 &
    etcd_tls_pid=$!
    printf 'server_name: sbx\nlisten: 127.0.0.1:%s\njetstream { store_dir: "%s/js" }\n' \
        "$nats_port" "$tmp" > "$tmp/nats.conf"
    nats-server -c "$tmp/nats.conf" -l "$tmp/nats.log" &
    nats_pid=$!
    printf 'server_name: sbxt\nlisten: 127.0.0.1:%s\njetstream { store_dir: "%s/jst" }\n%s\n' \
        "$natstls_port" "$tmp" "tls { cert_file: \"$certs/server.pem\", key_file: \"$certs/server.key\", ca_file: \"$certs/ca.pem\", verify: true }" \
        > "$tmp/natstls.conf"
    nats-server -c "$tmp/natstls.conf" -l "$tmp/natstls.log" &
    natstls_pid=$!
    nkeys > "$tmp/nkeys" || fail "nkeys: no user key made (python3-cryptography)"
    printf 'server_name: sbxc\nlisten: 127.0.0.1:%s\nauthorization { users = [ { nkey: %s } ] }\n' \
        "$natscreds_port" "$(sed -n 1p "$tmp/nkeys")" > "$tmp/natscreds.conf"
    nats-server -c "$tmp/natscreds.conf" -l "$tmp/natscreds.log" &
    natscreds_pid=$!
    printf -- '-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n' \
        'eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln' "$(sed -n 2p "$tmp/nkeys")" \
        > "$(dirname "$conf")/sbx.creds"
    chgrp ringbloom "$(dirname "$conf")/sbx.creds" && chmod 0640 "$(dirname "$conf")/sbx.creds"
    i=0
    until etcdctl --endpoints "127.0.0.1:$etcd_port" endpoint health > /dev/null 2>&1 &&
          etcdctl --endpoints "127.0.0.1:$tls_port" --cacert "$certs/ca.pem" \
              --cert "$certs/client.pem" --key "$certs/client.key" endpoint health > /dev/null 2>&1 &&
          grep -q 'Server is ready' "$tmp/nats.log" 2>/dev/null &&
          grep -q 'Server is ready' "$tmp/natstls.log" 2>/dev/null &&
          grep -q 'Server is ready' "$tmp/natscreds.log" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "etcd or nats-server did not start: $(tail -3 "$tmp/etcd.log" "$tmp/etcd-tls.log" "$tmp/nats.log")"
        sleep 0.05
    done
}

# An nkey user's public key and its seed (nkeys' encoding: a prefix
# byte, the key, a CRC-16 little-endian, base32 without padding).
nkeys() {
    /usr/bin/python3 - <<'EOF'
import base64, os, struct
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc

def encode(prefix, raw):
    data = bytes(prefix) + raw
    return base64.b32encode(data + struct.pack("<H", crc16(data))).decode().rstrip("=")

seed = os.urandom(32)
public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
    Encoding.Raw, PublicFormat.Raw)
user = 20 << 3
print(encode([user], public))
print(encode([(18 << 3) | (user >> 5), (user & 31) << 3], seed))
EOF
}

inside_cleanup() {
    [ -n "${manager:-}" ] && timeout 30 systemctl --user stop "ringbloomd@$inst.service" > /dev/null 2>&1
    for p in ${manager:-} ${etcd_pid:-} ${etcd_tls_pid:-} ${nats_pid:-} ${natstls_pid:-} \
             ${natscreds_pid:-}; do
        kill "$p" 2>/dev/null
    done
    wait 2>/dev/null
    rm -f "/dev/shm/ringbloom.$inst"
}

# ---- the scenarios ----------------------------------------------------------------------
R() { redis-cli -s "/run/ringbloom/$inst.sock" "$@"; }

# start SCENARIO LINES: the packaged configuration with LINES after it,
# the unit started afresh (stopped, its state directory and segment
# removed: a host replicated from one NATS stream halts, rightly, when
# named another); it must report READY (Type=notify).
start() {
    timeout 60 systemctl --user stop "ringbloomd@$inst.service" > /dev/null 2>&1
    rm -rf "/var/lib/ringbloom/$inst" "/dev/shm/ringbloom.$inst"
    { cat "$srcdir/service/ringbloomd.conf"; printf '\n# scenario %s\n%s\n' "$1" "$2"; } > "$conf"
    chmod 0644 "$conf"
    : > "$tmp/daemon.out"
    # (a test restarts more often than the unit's start limit allows)
    systemctl --user reset-failed "ringbloomd@$inst.service" > /dev/null 2>&1
    timeout 60 systemctl --user start "ringbloomd@$inst.service" ||
        fail "$1: the unit did not start: $(cat "$tmp/daemon.out")"
    R PING | grep -qx PONG || fail "$1: no PONG: $(cat "$tmp/daemon.out")"
}

# waits (<= 10 s) until INFO SECTION has FIELD:VALUE
await_info() {
    i=0
    until R INFO "$2" | tr -d '\r' | grep -qx "$3"; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "$1: INFO $2 never showed $3: $(R INFO "$2" | tr -d '\r' | tr '\n' ' '); $(tail -5 "$tmp/daemon.out")"
        sleep 0.05
    done
}

scenario_base() {
    start base ""
    pid=$(cat "/run/ringbloom/$inst.pid")
    sandbox=$(grep -E '^(Uid|NoNewPrivs|Seccomp|CapBnd):' "/proc/$pid/status" | tr -s '\t ' ' ' | tr '\n' ';')
    grep -q '^NoNewPrivs:.1' "/proc/$pid/status" && grep -q '^Seccomp:.2' "/proc/$pid/status" &&
        grep -q '^CapBnd:.0000000000000000' "/proc/$pid/status" ||
        fail "base: the daemon runs outside the unit's sandbox: $sandbox"
    [ "$(stat -c '%U %G %a' "/run/ringbloom/$inst.sock")" = "ringbloom ringbloom 660" ] ||
        fail "base: the socket is $(stat -c '%U %G %a' "/run/ringbloom/$inst.sock")"
    [ "$(stat -c '%U %G %a' "/dev/shm/ringbloom.$inst")" = "ringbloom ringbloom 640" ] ||
        fail "base: the segment is $(stat -c '%U %G %a' "/dev/shm/ringbloom.$inst")"
    R BF.ADD urls https://example.org/a | grep -qx 1 || fail "base: BF.ADD"
    "$cli" -i "$inst" exists urls https://example.org/a > /dev/null ||
        fail "base: a reader outside the unit does not see the add through /dev/shm"
    # What the unit keeps read-only, refused with why: the file (CONFIG
    # REWRITE), a log outside LogsDirectory= (CONFIG SET logfile).
    R CONFIG REWRITE | grep -q "^ERR Rewriting config file: .*$conf" ||
        fail "base: CONFIG REWRITE under ProtectSystem=strict: $(R CONFIG REWRITE)"
    R CONFIG SET logfile /var/lib/elsewhere.log | grep -q 'Read-only file system' ||
        fail "base: CONFIG SET logfile outside LogsDirectory=: $(R CONFIG SET logfile /var/lib/elsewhere.log)"
    timeout 60 systemctl --user restart "ringbloomd@$inst.service" || fail "base: restart"
    R BF.EXISTS urls https://example.org/a | grep -qx 1 ||
        fail "base: the restarted unit lost the filter: $(cat "$tmp/daemon.out")"
    echo "base: served by the user ringbloom in the sandbox ($sandbox); readers outside see its adds; restarted, it kept them"
}

scenario_etcd() {
    start etcd "ring-source etcd
etcd-endpoints http://127.0.0.1:$etcd_port http://localhost:$etcd_port
etcd-prefix /sbx/"
    await_info etcd ring etcd_connected:1
    got=$(R RING.ADD n1)
    [ "$got" = OK ] || fail "etcd: RING.ADD: $got; $(tail -5 "$tmp/daemon.out")"
    etcdctl --endpoints "127.0.0.1:$etcd_port" get /sbx/node/n1 | grep -q . ||
        fail "etcd: /sbx/node/n1 is not in etcd"
    echo "etcd: ring-source etcd under the unit: RING.ADD committed to etcd, etcd_connected:1"
}

scenario_etcdtls() {
    start etcdtls "ring-source etcd
etcd-endpoints https://127.0.0.1:$tls_port
etcd-prefix /sbx/
etcd-cacert $certs/ca.pem
etcd-cert $certs/client.pem
etcd-key $certs/client.key"
    await_info etcdtls ring etcd_connected:1
    got=$(R RING.ADD t1)
    [ "$got" = OK ] || fail "etcdtls: RING.ADD: $got; $(tail -5 "$tmp/daemon.out")"
    echo "etcdtls: over TLS with a client certificate (files under $(dirname "$conf"), the key group ringbloom 0640): RING.ADD committed"
}

scenario_nats() {
    start nats "filter-source nats
nats-servers nats://127.0.0.1:$nats_port
nats-stream SBX$$
nats-filters r:*"
    i=0
    until [ "$(R BF.ADD r:seen https://example.org/a 2>&1)" = 1 ]; do   # the stream is made first
        i=$((i + 1)); [ $i -gt 200 ] && fail "nats: BF.ADD r:seen: $(R BF.ADD r:seen https://example.org/b); $(tail -5 "$tmp/daemon.out")"
        sleep 0.05
    done
    await_info nats replication nats_healthy:1
    echo "nats: filter-source nats under the unit: a replicated add through the stream, nats_healthy:1"
}

scenario_natstls() {
    start natstls "filter-source nats
nats-servers tls://127.0.0.1:$natstls_port
nats-stream SBXT$$
nats-filters t:*
nats-cacert $certs/ca.pem
nats-cert $certs/client.pem
nats-key $certs/client.key"
    i=0
    until [ "$(R BF.ADD t:seen https://example.org/a 2>&1)" = 1 ]; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "natstls: BF.ADD t:seen: $(R BF.ADD t:seen https://example.org/b); $(tail -5 "$tmp/daemon.out")"
        sleep 0.05
    done
    echo "natstls: over TLS with a client certificate (the server verifies it): a replicated add"
}

scenario_natscreds() {
    # libnats reads a credentials file when the server asks for a
    # signature (its nkey authentication): only a client that read the
    # file and signed sends its CONNECT, which this server, without
    # accounts, then refuses ("authentication error"); a file the unit
    # kept from the daemon ends the attempt before, and the server logs
    # nothing (tried: mode 0600, root's).
    start natscreds "filter-source nats
nats-servers nats://127.0.0.1:$natscreds_port
nats-stream SBXC$$
nats-filters c:*
nats-creds $(dirname "$conf")/sbx.creds"
    i=0
    until grep -q 'authentication error' "$tmp/natscreds.log"; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "natscreds: no signed CONNECT reached the server: $(R INFO replication | tr -d '\r' | grep nats_last_error); $(tail -3 "$tmp/natscreds.log")"
        sleep 0.05
    done
    echo "natscreds: the credentials file read and its seed used under the unit (the server then refused the user: $(grep -m1 -o 'authentication error.*' "$tmp/natscreds.log"))"
}

scenario_logfile() {
    start logfile "logfile /var/log/ringbloom/$inst.log"
    i=0
    until grep -q ' ready: instance' "/var/log/ringbloom/$inst.log" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "logfile: /var/log/ringbloom/$inst.log has no ready line"
        sleep 0.05
    done
    [ "$(stat -c %U "/var/log/ringbloom/$inst.log")" = ringbloom ] || fail "logfile: not the service user's"
    echo "logfile: /var/log/ringbloom/$inst.log written (LogsDirectory=)"
}

scenario_huge() {
    start huge "huge-pages yes"
    R INFO memory | tr -d '\r' | grep -qx 'segment_huge_pages:yes' ||
        fail "huge: INFO memory: $(R INFO memory | tr -d '\r' | grep huge)"
    echo "huge: huge-pages yes served ($(R INFO memory | tr -d '\r' | sed -n 's/^segment_huge_problem://p'))"
}

scenario_acl() {
    start acl "acl-user ringbloom +@all
allow-write-uid ringbloom
allow-write-gid ringbloom"
    R ACL LIST | grep -q ringbloom || fail "acl: ACL LIST: $(R ACL LIST)"
    echo "acl: user and group names resolved under the unit"
}

inside() {
    tmp=$1
    inst="sbx$$"
    checks=0
    trap inside_cleanup EXIT
    trap 'exit 1' INT TERM
    host_up
    servers_up
    # Every setting classified, every scenario run.
    printf '' > "$tmp/empty.conf"
    "$daemon" -t -c "$tmp/empty.conf" 2>&1 | awk 'NF && $1 !~ /^#/ { print $1 }' | sort -u > "$tmp/settings"
    [ -s "$tmp/settings" ] || fail "ringbloomd -t listed no setting"
    settings_table | awk '{ print $1 }' | sort -u > "$tmp/classified"
    missing=$(comm -23 "$tmp/settings" "$tmp/classified" | tr '\n' ' ')
    [ -z "$missing" ] || fail "settings not classified in service_sandbox.sh: $missing"
    for s in $(settings_table | awk '$2 != "-" { print $2 }' | sort -u); do
        "scenario_$s"
        checks=$((checks + 1))
    done
    echo "settings: $(wc -l < "$tmp/settings") listed by ringbloomd -t, $(settings_table | awk '$2 != "-"' | wc -l) of them run under the unit in $checks scenarios"
    echo "Checks: $checks, Failures: 0, Errors: 0"
}

if [ "${1:-}" = --inside ]; then
    inside "$2"
else
    outside
fi
