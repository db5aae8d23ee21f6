"""ringbloom.scrapy - RingbloomDupeFilter: a Scrapy duplicate-request
filter shared by every crawler process of a host, in ringbloomd.

settings.py:
    DUPEFILTER_CLASS = "ringbloom.scrapy.RingbloomDupeFilter"
    RINGBLOOM_INSTANCE = "default"          # the daemon's instance
    RINGBLOOM_FILTER = "scrapy-requests"    # the filter's name
    RINGBLOOM_SOCKET = None                 # None: the instance's socket
    RINGBLOOM_CAPACITY = 10_000_000         # reserved by open() if missing
    RINGBLOOM_ERROR_RATE = 1e-6

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
from scrapy.utils.request import RequestFingerprinter, referer_str

from ._errors import ReplyError
from ._ringbloom import Filter
from .client import Client

__all__ = ["RingbloomDupeFilter"]


class RingbloomDupeFilter(BaseDupeFilter):
    """RingbloomDupeFilter(instance="default", filter="scrapy-requests",
    socket=None, capacity=10**7, error_rate=1e-6, debug=False,
    fingerprinter=None)."""

    def __init__(self, instance="default", filter="scrapy-requests", socket=None,
                 capacity=10_000_000, error_rate=1e-6, debug=False, *, fingerprinter=None):
        self.instance = instance
        self.filter_name = filter
        self.socket = socket
        self.capacity = int(capacity)
        self.error_rate = float(error_rate)
        self.debug = debug
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
                   fingerprinter=fingerprinter)

    @classmethod
    def from_crawler(cls, crawler):
        return cls.from_settings(crawler.settings,
                                 fingerprinter=getattr(crawler, "request_fingerprinter", None))

    def open(self):
        """Connects to the daemon, reserves the filter if it does not
        exist yet (another process may win that race: fine) and attaches
        the segment."""
        self.client = Client(self.instance, socket=self.socket)
        try:
            self.client.bf_reserve(self.filter_name, self.error_rate, self.capacity)
        except ReplyError as e:
            if "exists" not in e.reply:
                raise
        self.filter = Filter(self.instance, self.filter_name,
                             socket=self.socket)

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
        if self.filter is not None:
            self.filter.close()
            self.filter = None
        if self.client is not None:
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
