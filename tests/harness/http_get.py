"""http_get.py - the one HTTP request the nginx tests' Python helpers make
(nginx_module.sh, nginx_admits.sh import it: tests/harness/nginx.sh exports
its directory as RB_HARNESS).

get(port, path, conn=None): GET path from 127.0.0.1:port (on conn, kept
open, if given; else a connection of its own, closed after), timeout 10 s;
returns (status, X-Cache-Status or "-", body as text), or (0, "-", "ERROR")
if the request failed.
"""
import http.client


def get(port, path, conn=None):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode("utf-8", "replace")
        return r.status, r.getheader("X-Cache-Status") or "-", body
    except (OSError, http.client.HTTPException):
        return 0, "-", "ERROR"
    finally:
        if conn is None:
            c.close()
