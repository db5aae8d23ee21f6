# tests/harness/ports.sh - sourced by the shell harnesses that start
# servers on loopback (nginx.sh, redis_cluster.sh) once $srcdir is set:
# rb_free_ports N prints N loopback ports the kernel gave out free at once
# (python3 binds them all, then lets them go); another process may take
# one before the server binds it, which its start then reports.
rb_free_ports() {
    python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}
