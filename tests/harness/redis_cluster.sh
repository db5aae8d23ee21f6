# tests/harness/redis_cluster.sh - sourced by the shell tests that need a
# real Redis Cluster (redis_cluster.sh): rc_start N starts N masters
# (redis-server, cluster-enabled, no persistence) on 127.0.0.1 at free
# ports python3 picks ($rc_ports, bus ports $rc_bus), each in its own
# directory of a temporary one ($rc_dir, logs $rc_dir/PORT.log), joins
# them with redis-cli --cluster create and waits until every node says
# cluster_state:ok and all give the same CLUSTER SLOTS; rc_start_one, a
# cluster of one master holding every slot.  rc_add_master
# adds a master without slots (its port appended).  rc_reshard FROM
# TO N moves N slots from master port FROM to master port TO (redis-cli
# --cluster reshard) and waits for that agreement again.  rc_id PORT is a
# node's id.  An EXIT trap kills every redis-server it started and removes
# $rc_dir, and also runs rbd_sh_cleanup when private_daemon.sh's daemon
# was started first (start it first: its rbd_sh_start sets its own trap).
# Free ports come from ports.sh.  Every wait is bounded; a failure prints
# why and exits 1 with a Check-style count.  Needs redis-server, redis-cli
# and python3: sourcing it exits 77 (skipped) when redis-server is
# missing.
if ! command -v redis-server >/dev/null 2>&1; then
    echo "SKIP: redis-server not found (Debian package redis-server)"
    exit 77
fi
. "$srcdir/tests/harness/ports.sh"
rc_fail() { echo "$1"; echo "Checks: 1, Failures: 1, Errors: 0"; exit 1; }
rc_cleanup() {
    for _p in ${rc_pids:-}; do kill -9 "$_p" 2>/dev/null; done
    for _p in ${rc_pids:-}; do wait "$_p" 2>/dev/null; done
    [ -n "${rc_dir:-}" ] && rm -rf "$rc_dir"
    if type rbd_sh_cleanup >/dev/null 2>&1; then rbd_sh_cleanup; fi
}
# rc_cli PORT ARGS...: redis-cli to one node, bounded in time.
rc_cli() { _port=$1; shift; timeout 10 redis-cli -h 127.0.0.1 -p "$_port" "$@"; }
rc_id() { rc_cli "$1" CLUSTER MYID; }
# Until every node is ok and answers the same slot map (at most ~20 s).
rc_wait_agree() {
    _i=0
    while :; do
        _ok=1 _first=
        for _port in $rc_ports; do
            rc_cli "$_port" CLUSTER INFO 2>/dev/null | grep -q '^cluster_state:ok' || _ok=0
            _map=$(rc_cli "$_port" CLUSTER SLOTS 2>/dev/null | tr -d '\r' | md5sum)
            [ -z "$_first" ] && _first=$_map
            [ "$_map" = "$_first" ] || _ok=0
        done
        [ $_ok -eq 1 ] && return 0
        _i=$((_i + 1))
        [ $_i -gt 200 ] && rc_fail "the cluster's nodes did not agree on the slot map within 20 s"
        sleep 0.1
    done
}
# rc_wait_ping PORT: until the node on PORT answers PING (at most ~5 s).
rc_wait_ping() {
    _i=0
    while ! rc_cli "$1" PING >/dev/null 2>&1; do
        _i=$((_i + 1))
        [ $_i -gt 100 ] && { cat "$rc_dir/$1.log"; rc_fail "redis-server on $1 did not start"; }
        sleep 0.05
    done
}
# The bus port is given (cluster-port), so no port+10000 need be free.
rc_start_node() {
    mkdir -p "$rc_dir/$1" || rc_fail "mkdir failed"
    redis-server --bind 127.0.0.1 --port "$1" --cluster-enabled yes --cluster-port "$2" \
        --cluster-config-file "$rc_dir/$1/nodes.conf" --cluster-node-timeout 5000 \
        --dir "$rc_dir/$1" --appendonly no --save "" --daemonize no \
        --logfile "$rc_dir/$1.log" --protected-mode no &
    rc_pids="$rc_pids $!"
}
# rc_init: the tools checked, $rc_dir made, the EXIT trap set.
rc_init() {
    command -v redis-cli >/dev/null 2>&1 || rc_fail "redis-cli not found (Debian package redis-tools)"
    command -v python3 >/dev/null 2>&1 || rc_fail "python3 not found"
    rc_dir=$(mktemp -d /tmp/rbtest.cluster.XXXXXX) || rc_fail "mktemp failed"
    rc_pids=
    trap rc_cleanup EXIT
    trap 'exit 1' INT TERM
}
rc_start() {
    rc_init
    # Another process may take a port before redis-server binds it: then
    # its start fails, said by rc_wait_ping.
    _ports=$(rb_free_ports $((2 * $1))) || rc_fail "no free ports"
    rc_ports= rc_bus= _addrs= _i=0
    for _port in $_ports; do
        if [ $_i -lt "$1" ]; then
            rc_ports="$rc_ports $_port"
            _addrs="$_addrs 127.0.0.1:$_port"
        else
            rc_bus="$rc_bus $_port"
        fi
        _i=$((_i + 1))
    done
    set -- $rc_bus
    for _port in $rc_ports; do
        rc_start_node "$_port" "$1"
        shift
    done
    for _port in $rc_ports; do
        rc_wait_ping "$_port"
    done
    timeout 30 redis-cli --cluster create $_addrs --cluster-replicas 0 --cluster-yes \
        > "$rc_dir/create.log" 2>&1 || { cat "$rc_dir/create.log"; rc_fail "redis-cli --cluster create failed"; }
    rc_wait_agree
}
# rc_start_one: a cluster of one master that owns every slot (CLUSTER
# ADDSLOTSRANGE 0 16383: no --cluster create, which wants three), its port
# in $rc_ports; waits until it says cluster_state:ok.
rc_start_one() {
    rc_init
    _ports=$(rb_free_ports 2) || rc_fail "no free ports"
    set -- $_ports
    rc_ports=$1 rc_bus=$2
    rc_start_node "$1" "$2"
    rc_wait_ping "$1"
    rc_cli "$1" CLUSTER ADDSLOTSRANGE 0 16383 > /dev/null || rc_fail "CLUSTER ADDSLOTSRANGE failed"
    rc_wait_agree
}
# rc_add_master: one more master, with no slots (redis-cli --cluster
# add-node), its port appended to $rc_ports; waits until every node knows
# every other.
rc_add_master() {
    _ports=$(rb_free_ports 2) || rc_fail "no free ports"
    set -- $_ports
    rc_start_node "$1" "$2"
    rc_wait_ping "$1"
    set -- "$1" $rc_ports
    timeout 30 redis-cli --cluster add-node "127.0.0.1:$1" "127.0.0.1:$2" \
        > "$rc_dir/add-node.log" 2>&1 || { cat "$rc_dir/add-node.log"; rc_fail "redis-cli --cluster add-node failed"; }
    rc_ports="$rc_ports $1"
    _n=$(echo $rc_ports | wc -w)
    _i=0
    for _port in $rc_ports; do
        while [ "$(rc_cli "$_port" CLUSTER NODES 2>/dev/null | grep -c 'master')" -ne "$_n" ]; do
            _i=$((_i + 1))
            [ $_i -gt 200 ] && rc_fail "the nodes did not all learn of the new master within 20 s"
            sleep 0.1
        done
    done
    rc_wait_agree
}
# rc_reshard FROM_PORT TO_PORT N
rc_reshard() {
    timeout 60 redis-cli --cluster reshard "127.0.0.1:$1" --cluster-from "$(rc_id "$1")" \
        --cluster-to "$(rc_id "$2")" --cluster-slots "$3" --cluster-yes \
        > "$rc_dir/reshard.log" 2>&1 || { tail -n 20 "$rc_dir/reshard.log"; rc_fail "reshard failed"; }
    rc_wait_agree
}
