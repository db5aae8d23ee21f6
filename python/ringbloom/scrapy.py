"""ringbloom.scrapy - RingbloomDupeFilter: a Scrapy duplicate-request
filter shared by every crawler process of a host, in ringbloomd.

settings.py:
    DUPEFILTER_CLASS = "ringbloom.scrapy.RingbloomDupeFilter"
    RINGBLOOM_INSTANCE = "default"          # the daemon's instance
    RINGBLOOM_FILTER = "scrapy-requests"    # the filter's name
    RINGBLOOM_SOCKET = None                 # None: the instance's socket
    RINGBLOOM_CAPACITY = 10_000_000         # reserved by open() if missing
    RINGBLOOM_ERROR_RATE = 1e-6
    RINGBLOOM_PERSIST = True                # False: clear the filter when the crawl closes
    RINGBLOOM_FLUSH_ON_START = False        # True: clear the filter when the crawl opens

Between crawls (scrapy-redis's SCHEDULER_PERSIST and
SCHEDULER_FLUSH_ON_START): by default the filter outlives a crawl, so the
next crawl skips every request an earlier one saw (open() logs how many
the filter holds); that is what several processes sharing one filter,
and a crawl resumed later, need.  RINGBLOOM_PERSIST = False clears the
filter (BF.RESET) when the crawl closes, so the next one starts empty;
RINGBLOOM_FLUSH_ON_START = True clears it when the crawl opens.  Either
clears what every process sharing the filter recorded: with several
processes at once, set them in none (clear it with `ringbloom reset
FILTER` between runs) or only in the one that starts first.  Only a Bloom
filter is cleared: a name that holds another kind is refused.

It has RFPDupeFilter's interface (from_settings, from_crawler,
request_seen, request_fingerprint, open, close, log) and its fingerprints
(the crawler's request fingerprinter, as hex).  request_seen first asks
the filter in shared memory (no round trip: most links of a crawl are
duplicates); a fingerprint it has not seen goes to the daemon as BF.ADD,
an atomic test-and-add, and its answer decides: of several processes
racing on one request exactly one is told it is new.  A Bloom filter errs
only towards "seen": with probability about RINGBLOOM_ERROR_RATE a new
request is dropped, never one fetched twice.
"""

import logging

from scrapy.dupefilters import BaseDupeFilter
from scrapy.exceptions import NotConfigured
from scrapy.utils.request import RequestFingerprinter, referer_str

from ._errors import ReplyError
from ._ringbloom import Filter
from .client import Client

__all__ = ["RingbloomDupeFilter"]

_BLOOM_TYPE = b"MBbloom--"   # TYPE of a Bloom filter (RedisBloom's name)


def _setting_bool(settings, name, default):
    """settings.getbool, its ValueError naming the setting (Scrapy's names
    none)."""
    try:
        return settings.getbool(name, default)
    except ValueError as e:
        raise ValueError("%s: %s" % (name, e)) from None


class RingbloomDupeFilter(BaseDupeFilter):
    """RingbloomDupeFilter(instance="default", filter="scrapy-requests",
    socket=None, capacity=10**7, error_rate=1e-6, debug=False,
    fingerprinter=None, persist=True, flush_on_start=False)."""

    def __init__(self, instance="default", filter="scrapy-requests", socket=None,
                 capacity=10_000_000, error_rate=1e-6, debug=False, *, fingerprinter=None,
                 persist=True, flush_on_start=False):
        self.instance = instance
        self.filter_name = filter
        self.socket = socket
        self.capacity = int(capacity)
        self.error_rate = float(error_rate)
        self.debug = debug
        self.persist = bool(persist)
        self.flush_on_start = bool(flush_on_start)
        self.fingerprinter = fingerprinter or RequestFingerprinter()
        self.logdupes = True
        self.logger = logging.getLogger(__name__)
        self.client = None
        self.filter = None

    @classmethod
    def from_settings(cls, settings, *, fingerprinter=None):
        return cls(instance=settings.get("RINGBLOOM_INSTANCE", "default"),
                   filter=settings.get("RINGBLOOM_FILTER", "scrapy-requests"),
                   socket=settings.get("RINGBLOOM_SOCKET"),
                   capacity=settings.getint("RINGBLOOM_CAPACITY", 10_000_000),
                   error_rate=settings.getfloat("RINGBLOOM_ERROR_RATE", 1e-6),
                   debug=settings.getbool("DUPEFILTER_DEBUG"),
                   fingerprinter=fingerprinter,
                   persist=_setting_bool(settings, "RINGBLOOM_PERSIST", True),
                   flush_on_start=_setting_bool(settings, "RINGBLOOM_FLUSH_ON_START", False))

    @classmethod
    def from_crawler(cls, crawler):
        return cls.from_settings(crawler.settings,
                                 fingerprinter=getattr(crawler, "request_fingerprinter", None))

    def open(self):
        """Connects to the daemon, clears the filter first with
        flush_on_start, reserves it if it does not exist yet (another
        process may win that race: fine) and attaches the segment.  A
        filter kept from earlier crawls is logged with its count."""
        self.client = Client(self.instance, socket=self.socket)
        if self.flush_on_start:
            self._flush("RINGBLOOM_FLUSH_ON_START")
        try:
            self.client.bf_reserve(self.filter_name, self.error_rate, self.capacity)
            kept = 0
        except ReplyError as e:
            if "exists" not in e.reply:
                raise
            kept = self.client.execute("BF.CARD", self.filter_name)
        self.filter = Filter(self.instance, self.filter_name,
                             socket=self.socket)
        if kept:
            self.logger.info("RingbloomDupeFilter: filter %r holds about %d requests "
                             "already (earlier crawls', or other processes'), which this "
                             "crawl skips (RINGBLOOM_PERSIST; RINGBLOOM_FLUSH_ON_START = "
                             "True starts afresh)", self.filter_name, kept)

    def _flush(self, why):
        """Clears the filter with BF.RESET: one step for every process
        (readers see it whole; it never disappears, so no racing BF.ADD
        makes a default one meanwhile), its reservation kept; no filter yet
        is fine.  A name that holds another kind raises NotConfigured."""
        try:
            self.client.execute("BF.RESET", self.filter_name)
        except ReplyError as e:
            if e.reply == "ERR not found":
                return
            if e.reply.startswith("WRONGTYPE"):
                raise NotConfigured("RINGBLOOM_FILTER %r holds another kind than a Bloom "
                                    "filter: %s clears only the dupefilter's own"
                                    % (self.filter_name, why)) from None
            raise
        self.logger.info("RingbloomDupeFilter: filter %r cleared (%s)", self.filter_name, why)

    def request_fingerprint(self, request):
        return self.fingerprinter.fingerprint(request).hex()

    def request_seen(self, request):
        """True if the request was seen (by any process), else records it
        and returns False."""
        if self.filter is None:
            self.open()
        fp = self.request_fingerprint(request)
        if fp in self.filter:
            return True
        return not self.client.bf_add(self.filter_name, fp)

    def close(self, reason):
        """Releases the filter and the connection; with persist False
        clears the filter first (the next crawl starts empty)."""
        if self.filter is not None:
            self.filter.close()
            self.filter = None
        if self.client is not None:
            try:
                if not self.persist:
                    self._flush("RINGBLOOM_PERSIST = False")
            finally:
                self.client.close()
                self.client = None

    def log(self, request, spider):
        if self.debug:
            self.logger.debug("Filtered duplicate request: %(request)s (referer: %(referer)s)",
                              {"request": request, "referer": referer_str(request)},
                              extra={"spider": spider})
        elif self.logdupes:
            self.logger.debug("Filtered duplicate request: %(request)s - no more duplicates "
                              "will be shown (see DUPEFILTER_DEBUG to show all duplicates)",
                              {"request": request}, extra={"spider": spider})
            self.logdupes = False
        spider.crawler.stats.inc_value("dupefilter/filtered", spider=spider)
