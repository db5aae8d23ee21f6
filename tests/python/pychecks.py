"""pychecks.py - what the Python package's test scripts share (run by
tests/python/python.sh, which puts this directory first on sys.path):
counted checks, a call expected to raise, and the closing line.

    check(cond, what)       one check; prints "FAILED: what" if cond is false
    raises(exc, fn, *a)     the exception fn(*a) raised if it is an exc (else
                            None, saying what it raised instead)
    finish()                prints "Checks: N, Failures: F, Errors: 0" and
                            exits 1 if a check failed
"""

import sys

_counts = {"checks": 0, "failures": 0}


def check(cond, what):
    _counts["checks"] += 1
    if not cond:
        _counts["failures"] += 1
        print("FAILED:", what)


def raises(exc_type, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc_type as e:
        return e
    except Exception as e:  # the wrong kind
        print("  raised %r instead of %s" % (e, exc_type.__name__))
    return None


def finish():
    print("Checks: %d, Failures: %d, Errors: 0" % (_counts["checks"], _counts["failures"]))
    sys.exit(1 if _counts["failures"] else 0)
