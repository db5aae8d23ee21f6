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

import redis
from redis.connection import DefaultParser, Encoder, UnixDomainSocketConnection

from . import _ringbloom
from ._errors import PermissionDenied, ReplyError, from_code

__all__ = ["Client"]

RB_EDAEMON, RB_EPROTO, RB_EREPLY, RB_EPERM, RB_ETIMEDOUT = -20, -21, -22, -23, -25


def _reply_error(text, context=""):
    """The exception of an error reply: PermissionDenied for NOPERM,
    else ReplyError; .reply holds the text."""
    code = RB_EPERM if text.startswith("NOPERM") else RB_EREPLY
    exc = from_code(code, None, context)
    exc.reply = text
    return exc


class _Parser(DefaultParser):
    """redis-py's reply parser (hiredis's when python3-hiredis is
    installed, else its pure-Python one), with error replies made into
    ringbloom's exceptions holding the daemon's whole text: redis-py's
    parse_error would strip a known prefix ("NOPERM ", "LOADING ") and
    raise some (LOADING) as connection errors.  The objects returned are
    not redis.ResponseError, so redis-py's Connection.read_response
    returns them instead of raising: Client._check raises a top-level one."""

    def parse_error(self, response):
        return _reply_error(response)


class _Encoder(Encoder):
    """redis-py's encoder taking what ringbloom.Client always took:
    bytes, bytearray and memoryview as their bytes, str as UTF-8, numbers
    in decimal (repr); bool and anything else raise TypeError (redis-py
    raises its DataError and sends a memoryview's elements, not bytes)."""

    def encode(self, value):
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        if isinstance(value, bool):
            raise TypeError("a command argument must be str, bytes or a number, not bool")
        if isinstance(value, (int, float)):
            return repr(value).encode("ascii")
        raise TypeError("a command argument must be str, bytes or a number, not %s"
                        % type(value).__name__)


class _Connection(UnixDomainSocketConnection):
    """redis-py's Unix-socket connection with _Encoder."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.encoder = _Encoder(self.encoder.encoding, self.encoder.encoding_errors,
                                self.encoder.decode_responses)


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
        self.instance = instance
        if socket is None:
            socket = _ringbloom.socket_path(instance)
            _ringbloom.daemon_uid(instance, socket)  # the trust rule, or raises
        self.socket_path = socket
        self.timeout = timeout
        self._lock = threading.Lock()
        # redis.Redis(unix_socket_path=...) with the two classes above: its
        # pool makes the one connection this Client holds (retry=None and
        # retry_on_timeout=False: a failed call is never sent again).
        self._redis = redis.Redis(connection_pool=redis.ConnectionPool(
            connection_class=_Connection, parser_class=_Parser, path=socket,
            socket_timeout=timeout, max_connections=1))
        self._conn = None
        try:
            self._conn = self._redis.connection_pool.get_connection("PING")
        except redis.RedisError as e:
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
        conn = self._conn
        if conn is None:
            raise from_code(RB_EDAEMON, None, "the connection is closed")
        try:
            conn.send_packed_command(payload, False)
            if count == 1:
                return [conn.read_response()]
            return [conn.read_response() for _ in range(count)]
        except redis.TimeoutError:
            raise self._daemon_error(RB_ETIMEDOUT, "no answer within %gs" % self.timeout) \
                from None
        except redis.exceptions.InvalidResponse as e:
            raise self._daemon_error(RB_EPROTO, str(e)) from None
        except (redis.RedisError, OSError) as e:
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

    def ring_add(self, node, weight=1):
        """RING.ADD node weight."""
        self.execute("RING.ADD", node, int(weight))

    def ring_remove(self, node):
        """RING.REMOVE node."""
        self.execute("RING.REMOVE", node)

    def ring_weight(self, node, weight):
        """RING.WEIGHT node weight."""
        self.execute("RING.WEIGHT", node, int(weight))



# The classes _reply_error makes (a reply's class is looked up, not
# isinstance-checked: an int or bytes reply costs one set lookup).
_ERRORS = frozenset((ReplyError, PermissionDenied))
