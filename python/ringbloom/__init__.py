"""ringbloom - Python bindings of libringbloom: the consistent-hash ring,
the filters and the sketches ringbloomd keeps in POSIX shared memory.

Reads are in-process and lock-free (the C extension, on the library's
public API): Ring(instance).lookup(key) / lookup_n(key, n),
Filter(instance, name).contains(key) / contains_many(keys) / ``key in f``
(Bloom), CuckooFilter and CountingBloomFilter (the same, and count(key)),
CountMinSketch (query(key)) and HyperLogLog (count()).
Writes go to the daemon: Client (redis-py on its socket, with the
daemon's replies and errors as ringbloom's types) or any Redis client.  Admission is the "cache on the second hit" helper;
ringbloom.scrapy holds a Scrapy dupefilter.  Errors are ringbloom.Error
(with .code, an RB_E* code, and rb_strerror's text) and its subclasses.
"""

# _errors first: the extension imports ringbloom._errors at its own import.
from ._errors import (Error, NotFound, Empty, Busy, Gone, PermissionDenied,  # noqa: F401
                      DaemonError, ReplyError, Full, WrongType)
from ._ringbloom import (Segment, Ring, Filter, CuckooFilter, CountMinSketch,  # noqa: F401
                         HyperLogLog, CountingBloomFilter, strerror, version, socket_path,
                         daemon_uid)
from .client import Client  # noqa: F401
from .admission import Admission  # noqa: F401

__version__ = "0.1.0"

__all__ = ["Segment", "Ring", "Filter", "CuckooFilter", "CountMinSketch", "HyperLogLog",
           "CountingBloomFilter",
           "Client", "Admission", "strerror", "version", "socket_path", "daemon_uid", "Error",
           "NotFound", "Empty", "Busy", "Gone", "PermissionDenied", "DaemonError", "ReplyError",
           "Full", "WrongType"]
