"""ringbloom - Python bindings of libringbloom: the consistent-hash ring
and Bloom filters ringbloomd keeps in POSIX shared memory.

Reads are in-process and lock-free (the C extension, on the library's
public API): Ring(instance).lookup(key) / lookup_n(key, n),
Filter(instance, name).contains(key) / contains_many(keys) / ``key in f``.
Writes go to the daemon: Client (a small RESP2 client of its socket) or
any Redis client.  Admission is the "cache on the second hit" helper;
ringbloom.scrapy holds a Scrapy dupefilter.  Errors are ringbloom.Error
(with .code, an RB_E* code, and rb_strerror's text) and its subclasses.
"""

# _errors first: the extension imports ringbloom._errors at its own import.
from ._errors import (Error, NotFound, Empty, Busy, Gone, PermissionDenied,  # noqa: F401
                      DaemonError, ReplyError, Full)
from ._ringbloom import Segment, Ring, Filter, strerror, version, socket_path, daemon_uid  # noqa: F401
from .client import Client  # noqa: F401
from .admission import Admission  # noqa: F401

__version__ = "0.1.0"

__all__ = ["Segment", "Ring", "Filter", "Client", "Admission", "strerror", "version",
           "socket_path", "daemon_uid", "Error", "NotFound", "Empty", "Busy", "Gone",
           "PermissionDenied", "DaemonError", "ReplyError", "Full"]
