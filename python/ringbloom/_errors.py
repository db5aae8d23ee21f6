"""ringbloom._errors - the package's exceptions: libringbloom's negative
RB_E* codes as Python exceptions carrying the code and rb_strerror's text.

Every error the library reports is a ``ringbloom.Error`` (``.code`` the
negative RB_E* code, ``.name`` its macro name, ``.message`` rb_strerror's
text, ``.context`` what was being done); the common codes get a subclass so
they can be caught alone.  The C extension raises them through from_code(),
which it imports once; the pure-Python Client raises them too, for the
codes its C counterpart (rb_conn_*) would return.
"""

__all__ = ["Error", "NotFound", "Empty", "Busy", "Gone", "PermissionDenied",
           "DaemonError", "ReplyError", "Full", "WrongType", "from_code"]

# The codes of lib/ringbloom/core.h (the extension checks nothing against
# these: it passes its own code and text; these name them in Python).
_NAMES = {
    -1: "RB_ENOMEM", -2: "RB_EINVAL", -3: "RB_ENOENT", -4: "RB_EEXIST",
    -5: "RB_ENOTOURS", -6: "RB_EENDIAN", -7: "RB_EVERSION", -8: "RB_ETRUNC",
    -9: "RB_ERETIRED", -10: "RB_EGONE", -11: "RB_EBUSY", -12: "RB_ENOSPC",
    -13: "RB_EEMPTY", -14: "RB_ECORRUPT", -15: "RB_ESYS", -16: "RB_EACCES",
    -17: "RB_ERANGE", -18: "RB_EROFS", -19: "RB_EFULL", -20: "RB_EDAEMON",
    -21: "RB_EPROTO", -22: "RB_EREPLY", -23: "RB_EPERM", -24: "RB_EOWNER",
    -25: "RB_ETIMEDOUT", -26: "RB_ELAYERS", -27: "RB_EPRECISION", -28: "RB_ESLOTS",
    -29: "RB_EWRONGTYPE",
}


class Error(Exception):
    """A libringbloom error: ``code`` (negative RB_E*), ``name``
    ("RB_ENOENT"), ``message`` (rb_strerror's text), ``context`` (what was
    being done, e.g. "filter 'urls'"; may be "").  str() is
    "context: message (RB_NAME)"."""

    def __init__(self, code, message, context=""):
        self.code = code
        self.name = _NAMES.get(code, "RB_E?")
        self.message = message
        self.context = context
        super().__init__(code, message, context)

    def __str__(self):
        head = self.context + ": " if self.context else ""
        return "%s%s (%s)" % (head, self.message, self.name)


class NotFound(Error, LookupError):
    """RB_ENOENT: no such instance (no segment: the daemon never ran or
    removed it), filter or node."""


class Empty(Error, LookupError):
    """RB_EEMPTY: the ring has no nodes."""


class Busy(Error):
    """RB_EBUSY: the segment is still being created, or a read kept
    racing the writer past the retry bound; or close() while another
    thread's contains_many uses the filter.  Retrying is reasonable."""


class Gone(Error):
    """RB_EGONE, RB_ERETIRED: the daemon that owned the segment stopped,
    or moved to a newer segment."""


class PermissionDenied(Error, PermissionError):
    """RB_EACCES, RB_EOWNER, RB_EPERM: the segment or socket may not be
    used by this user, is not the daemon's, or the daemon refused the
    change (NOPERM)."""


class DaemonError(Error, ConnectionError):
    """RB_EDAEMON, RB_ETIMEDOUT, RB_EPROTO: the daemon cannot be reached,
    did not answer in time (a change sent may have been applied), or its
    reply does not parse.  The connection is closed."""


class ReplyError(Error):
    """RB_EREPLY: the daemon answered a command with an error;
    ``reply`` is its text (e.g. "ERR item exists")."""

    def __init__(self, code, message, context="", reply=""):
        super().__init__(code, message, context)
        self.reply = reply

    def __str__(self):
        return "%s: %s" % (Error.__str__(self), self.reply) if self.reply else Error.__str__(self)


class Full(Error):
    """RB_EFULL, RB_ENOSPC, RB_ELAYERS: a filter or the segment cannot
    take more."""


class WrongType(Error, TypeError):
    """RB_EWRONGTYPE: the name holds a structure of another kind (a
    Filter opened on a cuckoo filter's or a sketch's name, say): the
    readers' counterpart of the daemon's WRONGTYPE reply."""


_CLASSES = {
    -3: NotFound, -13: Empty, -11: Busy, -10: Gone, -9: Gone,
    -16: PermissionDenied, -24: PermissionDenied, -23: PermissionDenied,
    -20: DaemonError, -25: DaemonError, -21: DaemonError, -22: ReplyError,
    -19: Full, -12: Full, -26: Full, -29: WrongType,
}


def from_code(code, message=None, context=""):
    """The exception (not raised) for RB_E* ``code``; message defaults
    to rb_strerror's text."""
    if message is None:
        from ._ringbloom import strerror
        message = strerror(code)
    return _CLASSES.get(code, Error)(code, message, context)
