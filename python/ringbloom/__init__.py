"""ringbloom - Python bindings of libringbloom: the consistent-hash ring,
the filters and the sketches ringbloomd keeps in POSIX shared memory.

Reads are in-process and lock-free (the C extension, on the library's
public API): Ring(instance).lookup(key) / lookup_n(key, n),
Filter(instance, name).contains(key) / contains_many(keys) / ``key in f``
(Bloom), CuckooFilter and CountingBloomFilter (the same, and count(key)),
CountMinSketch (query(key)), HyperLogLog (count()) and TinyLFU
(admit(candidate, victim): TinyLFU's admission test on an ADMIT.RESERVE
pair).
Writes go to the daemon: Client (redis-py on its socket, with the
daemon's replies and errors as ringbloom's types; redis-py is imported by
the first Client, so the readers work without it) or any Redis client.
Admission is a cache's admission policy: "cache on the second hit" on a
Bloom filter, TinyLFU on a pair; ringbloom.scrapy holds a Scrapy
dupefilter.  Errors are ringbloom.Error
(with .code, an RB_E* code, and rb_strerror's text) and its subclasses.
"""

# _errors first: the extension imports ringbloom._errors at its own import.
from ._errors import (Error, NotFound, Empty, Busy, Gone, PermissionDenied,  # noqa: F401
                      DaemonError, ReplyError, Full, WrongType)
from ._ringbloom import (Segment, Ring, Filter, CuckooFilter, CountMinSketch,  # noqa: F401
                         HyperLogLog, CountingBloomFilter, TinyLFU, strerror, version,
                         socket_path, daemon_uid)
from .client import Client  # noqa: F401
from .admission import Admission  # noqa: F401

__version__ = "0.1.0"

__all__ = ["Segment", "Ring", "Filter", "CuckooFilter", "CountMinSketch", "HyperLogLog",
           "CountingBloomFilter", "TinyLFU",
           "Client", "Admission", "strerror", "version", "socket_path", "daemon_uid", "Error",
           "NotFound", "Empty", "Busy", "Gone", "PermissionDenied", "DaemonError", "ReplyError",
           "Full", "WrongType"]
