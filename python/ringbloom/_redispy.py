"""ringbloom._redispy - the redis-py classes ringbloom.Client speaks
through: one Unix-socket connection with an encoder that keeps the
Client's argument types, and a reply parser (hiredis's when
python3-hiredis is installed) that keeps error replies whole, as
ringbloom's exceptions.  Imported by the first Client (client.py's
_redispy), never by `import ringbloom`: redis-py is needed only to write.
"""

import redis
from redis.connection import DefaultParser, Encoder, UnixDomainSocketConnection

from ._errors import from_code

__all__ = ["connect", "redis"]

RB_EREPLY, RB_EPERM = -22, -23


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


def connect(socket, timeout):
    """A redis.Redis on socket whose pool makes the one connection a
    Client holds, with the classes above (retry=None and
    retry_on_timeout=False, redis-py's defaults: a failed call is never
    sent again)."""
    return redis.Redis(connection_pool=redis.ConnectionPool(
        connection_class=_Connection, parser_class=_Parser, path=socket,
        socket_timeout=timeout, max_connections=1))
