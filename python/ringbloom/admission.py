"""ringbloom.admission - Admission: the admission policy of a cache shared
by many processes, by what its name holds in the instance.

A Bloom filter (BF.RESERVE): "cache on the second hit".  A key is admitted
(worth caching) when the filter says it was requested before; a first
request is only recorded.  The common case, a key seen before, is
answered from shared memory (no round trip); a key not seen is recorded
with BF.ADD through the daemon, whose test-and-add is atomic, so when
several processes race on a new key exactly one records it and the others
are told it is known: those admit it, since it has now been requested more
than once.  Use an aging filter (BF.RESERVE ... AGING, or ``ringbloom
reserve F P N --aging SECONDS``) so the memory of first hits rolls over
instead of filling up; with refresh=True a hit also re-adds the key (a
BF.ADD round trip), which copies it into the current generation of an
aging filter so popular keys never age out.

A TinyLFU pair (ADMIT.RESERVE: an aging count-min sketch and its
doorkeeper): every access is recorded through the daemon (ADMIT.TOUCH:
touch() on a hit, admit() on a miss), and a miss is admitted while the
cache has room (no victim), else iff TinyLFU's estimate of the key beats
the victim's, the item the cache would evict (read from shared memory:
ringbloom.TinyLFU).  It keeps popular items against a stream of new ones
and, with the sketch's aging, forgets old favourites.
"""

from ._errors import from_code
from ._ringbloom import Filter, Segment, TinyLFU
from .client import Client

__all__ = ["Admission"]

RB_EWRONGTYPE = -29
_DOORKEEPER = ":dk"   # RB_TINYLFU_DOORKEEPER_SUFFIX


class Admission:
    """Admission(instance, name, client=None, refresh=False, owner=None,
    socket=None): admit(key, victim=None) -> bool, touch(key).  instance:
    a name or a Segment; name: a Bloom filter (policy "second-hit") or a
    TinyLFU pair (policy "tinylfu"); anything else raises WrongType.
    client: a ringbloom.Client (or anything with bf_add(filter, key) ->
    bool and admit_touch(pair, key)); default: a Client of the instance
    (socket as given).  refresh: second-hit only (above)."""

    def __init__(self, instance, name, client=None, refresh=False, owner=None, socket=None):
        seg = instance if isinstance(instance, Segment) else Segment(instance, owner=owner,
                                                                   socket=socket)
        self.name = name
        if seg.kind(name) == "cms":
            if name + _DOORKEEPER not in seg.filters():
                raise from_code(RB_EWRONGTYPE, None,
                                "%r is a count-min sketch without its doorkeeper %r: not a "
                                "TinyLFU pair (ADMIT.RESERVE makes one)"
                                % (name, name + _DOORKEEPER))
            self.policy = "tinylfu"
            self.reader = TinyLFU(seg, name)
        else:
            self.policy = "second-hit"
            self.reader = Filter(seg, name)   # WrongType for any other kind
        self.client = client if client is not None else Client(seg.instance, socket=socket)
        self.refresh = refresh

    def admit(self, key, victim=None):
        """On a miss: whether to cache key now.  Second hit: True if key
        was seen before, False for a first request (recorded through the
        daemon).  TinyLFU: records the access, then True if victim is None
        (the cache has room) or TinyLFU admits key over victim."""
        if self.policy == "tinylfu":
            self.client.admit_touch(self.name, key)
            return victim is None or self.reader.admit(key, victim)
        if key in self.reader:
            if self.refresh:
                self.client.bf_add(self.name, key)
            return True
        # New to the daemon: a first hit.  Not new: another process
        # recorded it since our read, so this is its second request.
        return not self.client.bf_add(self.name, key)

    def touch(self, key):
        """On a hit: TinyLFU records the access (the frequencies count
        hits too); second hit: re-adds key with refresh=True, else
        nothing."""
        if self.policy == "tinylfu":
            self.client.admit_touch(self.name, key)
        elif self.refresh:
            self.client.bf_add(self.name, key)

    def close(self):
        self.reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
