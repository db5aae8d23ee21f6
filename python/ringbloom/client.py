"""ringbloom.client - Client: a small blocking RESP2 client of ringbloomd
over its Unix socket, for the writes (readers use the shared memory).

Any Redis client works as well (the daemon speaks RESP2 with RedisBloom's
command names); this one needs nothing beyond the standard library and
finds the instance's socket as the C library's rb_conn_open does: the
instance's default socket, else its system one (/run/ringbloom), the
directory judged by rb_daemon_uid's trust rule first.

Replies: integers as int, simple and bulk strings as bytes (simple "OK"
included), nil as None, arrays as lists; an error reply raises
ReplyError (.reply holds its text; "NOPERM ..." raises PermissionDenied).
A broken, closed or timed-out connection raises DaemonError and is
closed (a change sent may have been applied).  One thread at a time per
Client: calls take a lock, so sharing one is safe but serialised.
"""

import socket
import threading

from . import _ringbloom
from ._errors import from_code

__all__ = ["Client", "encode_command", "RespParser"]

RB_EDAEMON, RB_EPROTO, RB_EREPLY, RB_EPERM, RB_ETIMEDOUT = -20, -21, -22, -23, -25


def _arg(a):
    if isinstance(a, bytes):
        return a
    if isinstance(a, str):
        return a.encode("utf-8")
    if isinstance(a, (bytearray, memoryview)):
        return bytes(a)
    if isinstance(a, bool):
        raise TypeError("a command argument must be str, bytes or a number, not bool")
    if isinstance(a, (int, float)):
        return repr(a).encode("ascii")
    raise TypeError("a command argument must be str, bytes or a number, not %s"
                    % type(a).__name__)


def encode_command(*args):
    """The RESP2 encoding of one command (an array of bulk strings);
    str arguments are sent as UTF-8, numbers in decimal."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = _arg(a)
        parts.append(b"$%d\r\n" % len(b))
        parts.append(b)
        parts.append(b"\r\n")
    return b"".join(parts)


class _ErrorReply:
    """An error reply inside a parsed reply (raised by the Client)."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


class RespParser:
    """Incremental RESP2 reply parser: feed(bytes), then get() returns
    one complete reply, or the sentinel RespParser.NEED while the bytes
    fed do not hold a whole one yet (nothing is consumed then).  Error
    replies come back as _ErrorReply objects; a malformed reply raises
    ValueError.  Bulk strings are limited to MAX_BULK bytes and arrays
    to MAX_DEPTH levels of nesting."""

    NEED = object()
    MAX_BULK = 512 * 1024 * 1024
    MAX_DEPTH = 32

    def __init__(self):
        self._buf = bytearray()
        self._pos = 0

    def feed(self, data):
        if self._pos > 65536 and self._pos * 2 > len(self._buf):
            del self._buf[:self._pos]
            self._pos = 0
        self._buf += data

    def get(self):
        try:
            value, pos = self._parse(self._pos, 0)
        except _Short:
            return self.NEED
        self._pos = pos
        return value

    def _line(self, pos):
        end = self._buf.find(b"\r\n", pos)
        if end < 0:
            raise _Short()
        return bytes(self._buf[pos:end]), end + 2

    def _int(self, raw):
        try:
            return int(raw)
        except ValueError:
            raise ValueError("bad RESP integer %r" % raw[:40]) from None

    def _parse(self, pos, depth):
        if pos >= len(self._buf):
            raise _Short()
        t = self._buf[pos]
        line, nxt = self._line(pos + 1)
        if t == 0x2B:  # +
            return line, nxt
        if t == 0x2D:  # -
            return _ErrorReply(line.decode("utf-8", "replace")), nxt
        if t == 0x3A:  # :
            return self._int(line), nxt
        if t == 0x24:  # $
            n = self._int(line)
            if n == -1:
                return None, nxt
            if n < 0 or n > self.MAX_BULK:
                raise ValueError("bad RESP bulk length %d" % n)
            if len(self._buf) < nxt + n + 2:
                raise _Short()
            if self._buf[nxt + n:nxt + n + 2] != b"\r\n":
                raise ValueError("RESP bulk string not followed by CRLF")
            return bytes(self._buf[nxt:nxt + n]), nxt + n + 2
        if t == 0x2A:  # *
            n = self._int(line)
            if n == -1:
                return None, nxt
            if n < 0 or depth >= self.MAX_DEPTH:
                raise ValueError("bad RESP array (length %d, depth %d)" % (n, depth))
            items = []
            for _ in range(n):
                v, nxt = self._parse(nxt, depth + 1)
                items.append(v)
            return items, nxt
        raise ValueError("bad RESP type byte %r" % bytes([t]))


class _Short(Exception):
    pass


def _reply_error(text, context):
    """The exception of an error reply: PermissionDenied for NOPERM,
    else ReplyError; .reply holds the text."""
    code = RB_EPERM if text.startswith("NOPERM") else RB_EREPLY
    exc = from_code(code, None, context)
    exc.reply = text
    return exc


class Client:
    """Client(instance="default", socket=None, timeout=10.0): a connection
    to the instance's daemon.  socket: a path to use as given (your
    configuration); else the instance's socket is looked up and its
    directory checked (rb_daemon_uid: PermissionDenied if another user
    could have made it).  timeout bounds every send and receive."""

    def __init__(self, instance="default", socket=None, timeout=10.0):
        self.instance = instance
        if socket is None:
            socket = _ringbloom.socket_path(instance)
            _ringbloom.daemon_uid(instance, socket)  # the trust rule, or raises
        self.socket_path = socket
        self.timeout = timeout
        self._lock = threading.Lock()
        self._sock = None
        self._parser = None
        self._connect()

    # -- the connection -------------------------------------------------
    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.socket_path)
        except OSError as e:
            s.close()
            raise self._daemon_error(RB_EDAEMON, "connect %s: %s" % (self.socket_path, e))
        self._sock = s
        self._parser = RespParser()

    def _daemon_error(self, code, context):
        self.close()
        return from_code(code, None, context)

    def close(self):
        """Closes the connection (idempotent)."""
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _roundtrip(self, payload, count):
        """Sends payload (count commands) and returns their replies, error
        replies as _ErrorReply."""
        if self._sock is None:
            raise from_code(RB_EDAEMON, None, "the connection is closed")
        try:
            self._sock.sendall(payload)
            replies = []
            while len(replies) < count:
                r = self._parser.get()
                if r is RespParser.NEED:
                    data = self._sock.recv(262144)
                    if not data:
                        raise self._daemon_error(RB_EDAEMON, "the daemon closed the connection")
                    self._parser.feed(data)
                    continue
                replies.append(r)
            return replies
        except socket.timeout:
            raise self._daemon_error(RB_ETIMEDOUT, "no answer within %gs" % self.timeout)
        except ValueError as e:
            raise self._daemon_error(RB_EPROTO, str(e))
        except OSError as e:
            raise self._daemon_error(RB_EDAEMON, str(e))

    # -- commands ----------------------------------------------------------
    def execute(self, *args):
        """Sends one command, returns its reply (see the module's note)."""
        with self._lock:
            (r,) = self._roundtrip(encode_command(*args), 1)
        if isinstance(r, _ErrorReply):
            raise _reply_error(r.text, str(_arg(args[0]), "utf-8", "replace") if args else "")
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
        payload = b"".join(encode_command(*c) for c in commands)
        with self._lock:
            replies = self._roundtrip(payload, len(commands))
        for i, r in enumerate(replies):
            if isinstance(r, _ErrorReply):
                e = _reply_error(r.text, str(_arg(commands[i][0]), "utf-8", "replace"))
                if raise_on_error:
                    raise e
                replies[i] = e
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
