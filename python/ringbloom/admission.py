"""ringbloom.admission - Admission: "cache on the second hit", the
admission policy of a cache shared by many processes.

A key is admitted (worth caching) when the filter says it was requested
before; a first request is only recorded.  The common case, a key seen
before, is answered from shared memory (no round trip); a key not seen
is recorded with BF.ADD through the daemon, whose test-and-add is atomic,
so when several processes race on a new key exactly one records it and
the others are told it is known: those admit it, since it has now been
requested more than once.  Use an aging filter (BF.RESERVE ... AGING, or
``ringbloom reserve F P N --aging SECONDS``) so the memory of first hits
rolls over instead of filling up; with refresh=True a hit also re-adds
the key (a BF.ADD round trip), which copies it into the current
generation of an aging filter so popular keys never age out.
"""

from ._ringbloom import Filter, Segment
from .client import Client

__all__ = ["Admission"]


class Admission:
    """Admission(instance, filter, client=None, refresh=False):
    admit(key) -> bool.  client: a ringbloom.Client (or anything with
    bf_add(filter, key) -> bool); default: a Client of the instance."""

    def __init__(self, instance, filter, client=None, refresh=False):
        seg = instance if isinstance(instance, Segment) else Segment(instance)
        self.filter = Filter(seg, filter)
        self.name = filter
        self.client = client if client is not None else Client(seg.instance)
        self.refresh = refresh

    def admit(self, key):
        """True if key was seen before (cache it now), False for a first
        request (recorded through the daemon)."""
        if key in self.filter:
            if self.refresh:
                self.client.bf_add(self.name, key)
            return True
        # New to the daemon: a first hit.  Not new: another process
        # recorded it since our read, so this is its second request.
        return not self.client.bf_add(self.name, key)

    def close(self):
        self.filter.close()
