"""test_scrapy_crawls.py - the Scrapy dupefilter between crawls, each crawl
a Scrapy process of its own (`python3 -m scrapy runspider`) against a
private ringbloomd: run by tests/python/python.sh (INSTANCE SOCKET CLI),
not alone.

A site of PAGES pages on a loopback HTTP server this test runs (every page
links to every other, so a crawl meets each link many times) is crawled
by successive processes sharing one filter, and the server counts the
pages each crawl fetched (start URLs bypass every dupefilter, as
Scrapy's own; only the linked pages count):
  - by default (RINGBLOOM_PERSIST) a second process fetches none of what
    the first fetched, and logs how many requests the filter held;
  - RINGBLOOM_FLUSH_ON_START = True fetches everything again;
  - RINGBLOOM_PERSIST = False leaves the filter empty at its close (the
    CLI's count), so the next default crawl fetches everything again;
  - two processes crawling at once with the default fetch each page once
    between them;
  - a setting that is no boolean stops the crawl naming it, and a flush of
    a name holding a sketch is refused, the sketch left as it was.
Prints each crawl's count and "Checks: N, Failures: F, Errors: 0".
"""

import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pychecks import check, finish

INST, SOCK, CLI = sys.argv[1], sys.argv[2], sys.argv[3]
PAGES = 25
FILTER = "crawls"



class Site(BaseHTTPRequestHandler):
    """/ and /p/0 .. /p/PAGES-1, each linking to every page; counts fetches."""
    hits = {}
    lock = threading.Lock()

    def do_GET(self):
        with Site.lock:
            Site.hits[self.path] = Site.hits.get(self.path, 0) + 1
        links = "".join('<a href="/p/%d">%d</a>' % (i, i) for i in range(PAGES))
        body = ("<html><body>%s</body></html>" % links).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def pages_fetched():
    """{page: fetches} of the linked pages since the last call; resets."""
    with Site.lock:
        got = {p: n for p, n in Site.hits.items() if p.startswith("/p/")}
        Site.hits.clear()
    return got


SPIDER = '''
import scrapy

class Site(scrapy.Spider):
    name = "site"

    def __init__(self, start=None, **kw):
        super().__init__(**kw)
        self.start_urls = [start]

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''


def crawl(tmp, url, **settings):
    """Starts one Scrapy process crawling url with the dupefilter and
    settings; returns the Popen (stderr holds Scrapy's log)."""
    base = {"DUPEFILTER_CLASS": "ringbloom.scrapy.RingbloomDupeFilter",
            "RINGBLOOM_INSTANCE": INST, "RINGBLOOM_SOCKET": SOCK, "RINGBLOOM_FILTER": FILTER,
            "RINGBLOOM_CAPACITY": 10000, "LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False,
            "ROBOTSTXT_OBEY": False, "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7"}
    base.update(settings)
    argv = [sys.executable, "-m", "scrapy", "runspider", os.path.join(tmp, "spider.py"),
            "-a", "start=" + url]
    for k, v in base.items():
        argv += ["-s", "%s=%s" % (k, v)]
    return subprocess.Popen(argv, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def run(tmp, url, what, **settings):
    """One crawl to its end (at most 120 s); returns (exit status, log,
    pages fetched)."""
    p = crawl(tmp, url, **settings)
    try:
        _, log = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        _, log = p.communicate()
    got = pages_fetched()
    print("%-48s exit %s, %d of %d pages fetched (%d fetches)"
          % (what, p.returncode, len(got), PAGES, sum(got.values())))
    return p.returncode, log, got


def card():
    p = subprocess.run(["redis-cli", "-s", SOCK, "BF.CARD", FILTER], capture_output=True,
                       text=True)
    return p.stdout.strip()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    every = {"/p/%d" % i: 1 for i in range(PAGES)}
    with tempfile.TemporaryDirectory(prefix="rbscrapy.") as tmp:
        with open(os.path.join(tmp, "spider.py"), "w") as f:
            f.write(SPIDER)
        rc, log, got = run(tmp, url, "crawl 1 (default)")
        check(rc == 0 and got == every, "the first crawl fetches every page once")
        rc, log, got = run(tmp, url, "crawl 2 (default: RINGBLOOM_PERSIST)")
        check(rc == 0 and got == {}, "a second process fetches none of them (the filter kept)")
        check("holds about %d requests already" % PAGES in log,
              "its log says how many requests the filter held")
        rc, log, got = run(tmp, url, "crawl 3 (RINGBLOOM_FLUSH_ON_START = True)",
                           RINGBLOOM_FLUSH_ON_START=True)
        check(rc == 0 and got == every, "RINGBLOOM_FLUSH_ON_START = True fetches every page again")
        check("filter 'crawls' cleared (RINGBLOOM_FLUSH_ON_START)" in log,
              "its log says the filter was cleared")
        rc, log, got = run(tmp, url, "crawl 4 (RINGBLOOM_PERSIST = False)",
                           RINGBLOOM_PERSIST=False)
        check(rc == 0 and got == {} and card() == "0",
              "RINGBLOOM_PERSIST = False: nothing new fetched, the filter empty at the close "
              "(BF.CARD %s)" % card())
        rc, log, got = run(tmp, url, "crawl 5 (default, after a cleared one)")
        check(rc == 0 and got == every, "the crawl after it fetches every page again")
        subprocess.run(["redis-cli", "-s", SOCK, "BF.RESET", FILTER], capture_output=True)
        pages_fetched()
        both = [crawl(tmp, url), crawl(tmp, url)]
        rcs = [p.wait(timeout=120) for p in both]
        for p in both:
            p.communicate()
        got = pages_fetched()
        print("%-48s exit %s, %d of %d pages fetched (%d fetches)"
              % ("crawls 6 and 7 at once (default)", rcs, len(got), PAGES, sum(got.values())))
        check(rcs == [0, 0] and got == every, "two processes at once fetch each page once")
        rc, log, got = run(tmp, url, "RINGBLOOM_PERSIST = maybe", RINGBLOOM_PERSIST="maybe")
        check(got == {} and "RINGBLOOM_PERSIST: Supported values" in log,
              "a setting that is no boolean stops the crawl, naming it")
        subprocess.run([CLI, "-i", INST, "-s", SOCK, "delete", FILTER], capture_output=True)
        subprocess.run(["redis-cli", "-s", SOCK, "CMS.INITBYDIM", FILTER, "64", "4"],
                       capture_output=True)
        subprocess.run(["redis-cli", "-s", SOCK, "CMS.INCRBY", FILTER, "k", "7"],
                       capture_output=True)
        rc, log, got = run(tmp, url, "RINGBLOOM_FLUSH_ON_START on a sketch's name",
                           RINGBLOOM_FLUSH_ON_START=True)
        left = subprocess.run(["redis-cli", "-s", SOCK, "CMS.QUERY", FILTER, "k"],
                              capture_output=True, text=True).stdout.split()
        check(got == {} and "holds another kind than a Bloom filter" in log and left == ["7"],
              "a flush of a name holding a sketch is refused, the sketch unchanged (%s)" % left)
    server.shutdown()
    finish()


main()
