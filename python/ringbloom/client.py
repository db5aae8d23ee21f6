"""ringbloom.client - Client: a blocking client of ringbloomd's Unix socket
for the writes (readers use the shared memory), a thin layer over redis-py
(Debian's python3-redis; with python3-hiredis installed, redis-py parses
replies with hiredis).

Any Redis client works as well (the daemon speaks RESP2 with RedisBloom's
command names); this one finds the instance's socket as the C library's
rb_conn_open does: the instance's default socket, else its system one
(/run/ringbloom), the directory judged by rb_daemon_uid's trust rule
first.  Commands are encoded by redis-py (str as UTF-8, numbers in
decimal; a first argument holding spaces, "CONFIG GET", is split into
words as redis-py does); replies are parsed by redis-py's parser with one
change: an error reply is kept whole (redis-py's own parsers strip
prefixes such as "NOPERM " and map them to classes of their own).
redis-py is imported by the first Client (ringbloom._redispy), not by
`import ringbloom`: without it a Client raises ImportError naming the
package to install, and the readers work.

Replies: integers as int, simple and bulk strings as bytes (simple "OK"
included), nil as None, arrays as lists (an error inside an array, as in
EXEC's, is a ReplyError object in the list); an error reply raises
ReplyError (.reply holds the daemon's text, whole; "NOPERM ..." raises
PermissionDenied).  A broken, closed or timed-out connection raises
DaemonError and is closed (a change sent may have been applied; nothing
is sent again); later calls raise DaemonError too.  One thread at a time
per Client: calls take a lock, so sharing one is safe but serialised.
"""

import threading

from . import _ringbloom
from ._errors import PermissionDenied, ReplyError, from_code

__all__ = ["Client"]

RB_EDAEMON, RB_EPROTO, RB_ETIMEDOUT = -20, -21, -25


def _redispy():
    """ringbloom._redispy (redis-py's classes as the Client uses them),
    imported at the first Client: readers of shared memory never need
    redis-py, so `import ringbloom` works without it.  ImportError naming
    the package to install if redis-py is missing."""
    try:
        from . import _redispy as rp
    except ImportError as e:
        raise ImportError("ringbloom.Client talks to the daemon through redis-py, which is "
                          "not installed (Debian: apt install python3-redis; pip: pip "
                          "install 'ringbloom[client]'): %s" % e, name="redis") from None
    return rp


def _name(args):
    a = args[0] if args else ""
    return a if isinstance(a, str) else str(bytes(a), "utf-8", "replace")


class Client:
    """Client(instance="default", socket=None, timeout=10.0): a connection
    to the instance's daemon.  socket: a path to use as given (your
    configuration); else the instance's socket is looked up and its
    directory checked (rb_daemon_uid: PermissionDenied if another user
    could have made it).  timeout bounds every connect, send and receive.
    The connection is made here (DaemonError if nobody answers)."""

    def __init__(self, instance="default", socket=None, timeout=10.0):
        rp = _redispy()
        self.instance = instance
        if socket is None:
            socket = _ringbloom.socket_path(instance)
            _ringbloom.daemon_uid(instance, socket)  # the trust rule, or raises
        self.socket_path = socket
        self.timeout = timeout
        self._lock = threading.Lock()
        self._rx = rp.redis.exceptions
        self._redis = rp.connect(socket, timeout)
        self._conn = None
        try:
            self._conn = self._redis.connection_pool.get_connection("PING")
        except self._rx.RedisError as e:
            raise self._daemon_error(RB_EDAEMON, "connect %s: %s" % (socket, e)) from None

    # -- the connection -------------------------------------------------
    def _daemon_error(self, code, context):
        self.close()
        return from_code(code, None, context)

    def close(self):
        """Closes the connection (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.disconnect()
        self._redis.connection_pool.disconnect()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _roundtrip(self, payload, count):
        """Sends payload (count commands, packed by redis-py) and returns
        their replies, error replies as exception objects.  redis-py
        disconnects on any failure; this closes the Client too."""
        conn, rx = self._conn, self._rx
        if conn is None:
            raise from_code(RB_EDAEMON, None, "the connection is closed")
        try:
            conn.send_packed_command(payload, False)
            if count == 1:
                return [conn.read_response()]
            return [conn.read_response() for _ in range(count)]
        except rx.TimeoutError:
            raise self._daemon_error(RB_ETIMEDOUT, "no answer within %gs" % self.timeout) \
                from None
        except rx.InvalidResponse as e:
            raise self._daemon_error(RB_EPROTO, str(e)) from None
        except (rx.RedisError, OSError) as e:
            raise self._daemon_error(RB_EDAEMON, str(e)) from None
        except BaseException:
            self.close()  # interrupted mid-reply: out of step
            raise

    # -- commands ----------------------------------------------------------
    def execute(self, *args):
        """Sends one command, returns its reply (see the module's note)."""
        with self._lock:
            conn = self._conn
            # TypeError before anything is sent
            payload = conn.pack_command(*args) if conn is not None else None
            (r,) = self._roundtrip(payload, 1)
        if r.__class__ in _ERRORS:
            r.context = _name(args)
            raise r
        return r

    def pipeline(self, commands, raise_on_error=True):
        """Sends every command (a sequence of argument tuples) at once and
        returns the list of replies.  raise_on_error: the first error
        reply raises (after all replies were read, so the connection stays
        in step); else error replies are left in the list as exception
        objects (ReplyError or PermissionDenied)."""
        commands = list(commands)
        if not commands:
            return []
        with self._lock:
            conn = self._conn
            payload = conn.pack_commands(commands) if conn is not None else None
            replies = self._roundtrip(payload, len(commands))
        for i, r in enumerate(replies):
            if r.__class__ in _ERRORS:
                r.context = _name(commands[i])
                if raise_on_error:
                    raise r
        return replies

    def ping(self):
        return self.execute("PING") == b"PONG"

    def bf_reserve(self, filter, error_rate, capacity, expansion=None, nonscaling=False):
        """BF.RESERVE filter error_rate capacity [EXPANSION n | NONSCALING].
        Raises ReplyError ("ERR item exists") if the filter exists."""
        args = ["BF.RESERVE", filter, repr(float(error_rate)), int(capacity)]
        if nonscaling:
            args.append("NONSCALING")
        elif expansion is not None:
            args += ["EXPANSION", int(expansion)]
        self.execute(*args)

    def bf_add(self, filter, key):
        """BF.ADD: True if key was new (this caller added it: the daemon's
        test-and-add is atomic), False if it was (maybe) present."""
        return self.execute("BF.ADD", filter, key) == 1

    def bf_madd(self, filter, keys, batch=1000):
        """BF.MADD in batches of `batch` keys, pipelined: list[bool], True
        for each key that was new."""
        keys = list(keys)
        cmds = [("BF.MADD", filter, *keys[i:i + batch]) for i in range(0, len(keys), batch)]
        out = []
        for r in self.pipeline(cmds):
            out.extend(x == 1 for x in r)
        return out

    def bf_exists(self, filter, key):
        """BF.EXISTS through the daemon (Filter.contains reads the same
        answer from shared memory without a round trip)."""
        return self.execute("BF.EXISTS", filter, key) == 1

    def bf_mexists(self, filter, keys):
        """BF.MEXISTS through the daemon."""
        return [x == 1 for x in self.execute("BF.MEXISTS", filter, *keys)]

    def admit_reserve(self, pair, capacity, error_rate=None, window=None):
        """ADMIT.RESERVE pair capacity [error_rate] [WINDOW window]: a TinyLFU
        pair for a cache of `capacity` items (ringbloom.TinyLFU reads it).
        Raises ReplyError ("ERR item exists") if the name is taken."""
        args = ["ADMIT.RESERVE", pair, int(capacity)]
        if error_rate is not None:
            args.append(repr(float(error_rate)))
        if window is not None:
            args += ["WINDOW", int(window)]
        self.execute(*args)

    def admit_touch(self, pair, key):
        """ADMIT.TOUCH: records one access to key in the TinyLFU pair."""
        self.execute("ADMIT.TOUCH", pair, key)

    def admit_query(self, pair, candidate, victim):
        """ADMIT.QUERY through the daemon (TinyLFU.admit reads the same
        answer from shared memory without a round trip)."""
        return self.execute("ADMIT.QUERY", pair, candidate, victim) == 1

    def ring_add(self, node, weight=1):
        """RING.ADD node weight."""
        self.execute("RING.ADD", node, int(weight))

    def ring_remove(self, node):
        """RING.REMOVE node."""
        self.execute("RING.REMOVE", node)

    def ring_weight(self, node, weight):
        """RING.WEIGHT node weight."""
        self.execute("RING.WEIGHT", node, int(weight))



# The classes _redispy's parser makes (a reply's class is looked up, not
# isinstance-checked: an int or bytes reply costs one set lookup).
_ERRORS = frozenset((ReplyError, PermissionDenied))
