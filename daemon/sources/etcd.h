/*
 * etcd.h - a blocking client of etcd 3.4's v3 JSON gateway (HTTP POSTs
 * to /v3/..., libcurl and json-c), the groundwork of issue 17: the ring's
 * membership kept in etcd, read (range), changed (txn) and followed
 * (watch) by the daemon from one dedicated thread.
 *
 * One rbd_etcd_t is used by one thread at a time (nothing in it is
 * shared; libcurl's global init is done once by rbd_etcd_open).  Every
 * call blocks for at most about (number of endpoints) x request timeout,
 * except rbd_etcd_watch, which runs until told to stop.
 *
 * Keys.  Every key given or returned is relative to opts.prefix: "nodes/a"
 * with prefix "/ringbloom/prod/" is "/ringbloom/prod/nodes/a" in etcd.
 * Keys given are NUL-free text; keys and values returned are bytes (key,
 * key_len; value, value_len; a NUL is added after them for convenience,
 * not counted): another tool may put any bytes in a key under the
 * prefix, a NUL among them, and the caller decides what it can use.
 *
 * Endpoints and failover.  A request goes to the current endpoint; when
 * it cannot connect, times out, or gets a 5xx meaning "unavailable" (no
 * leader, request timed out), the next endpoint is tried (round robin),
 * each at most once per call; the one that answered becomes current.
 * After all failed the call returns RBD_ETCD_EUNREACH when none could be
 * reached at all, RBD_ETCD_ENOQUORUM when at least one was reached but
 * did not answer in time or said it is unavailable (no quorum); either
 * way rbd_etcd_errmsg names each endpoint and why it failed.  The client
 * never sleeps: backing off between failed calls is the caller's (see
 * docs/design.md).  One CURL handle per endpoint is kept, so connections
 * are reused.
 *
 * Writes and the revision guard.  etcd's revision is global to the
 * cluster; the daemon needs "fail if anything under the prefix changed
 * since the revision I have seen".  etcd 3.4 has no compare on a prefix,
 * so every write the daemon makes goes through rbd_etcd_guarded: one
 * transaction that compares the mod_revision of the fixed guard key
 * (RBD_ETCD_GUARD_KEY under the prefix) with the revision the caller last
 * saw of it, applies the caller's puts and deletes, and puts the guard key
 * too.  So the guard key's mod_revision is the revision of the last write
 * made this way, two writers that saw the same state conflict (the second
 * gets RBD_ETCD_ECONFLICT and the guard's current mod_revision), and the
 * watch tells each daemon the guard's new revision along with the change.
 * rbd_etcd_txn is the general form (any one key compared).  A txn retried
 * on another endpoint after a timeout may have committed on the first:
 * its retry then reports RBD_ETCD_ECONFLICT; the caller re-reads (its own
 * change is then there) rather than assuming it lost.
 *
 * Memory: a reply (or one object of a watch stream) larger than
 * opts.max_reply (default 64 MiB) is refused with RBD_ETCD_ETOOBIG.
 */
#ifndef RBD_ETCD_H
#define RBD_ETCD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Errors: negative, named by rbd_etcd_strerror; details (which endpoint,
 * etcd's own message) in rbd_etcd_errmsg. */
#define RBD_ETCD_EUNREACH   (-1)  /* no endpoint could be reached */
#define RBD_ETCD_ENOQUORUM  (-2)  /* reached, but no answer in time / unavailable */
#define RBD_ETCD_EAUTH      (-3)  /* authentication failed or permission denied */
#define RBD_ETCD_ECOMPACTED (-4)  /* the revision asked for was compacted */
#define RBD_ETCD_ECONFLICT  (-5)  /* the txn's compare failed: nothing written */
#define RBD_ETCD_EPROTO     (-6)  /* a reply that is not what the gateway sends */
#define RBD_ETCD_ETOOBIG    (-7)  /* a reply above opts.max_reply */
#define RBD_ETCD_ENOMEM     (-8)
#define RBD_ETCD_EREFUSED   (-9)  /* etcd refused the request (its message in errmsg) */
#define RBD_ETCD_ECLOSED    (-10) /* the watch stream ended or went idle */
#define RBD_ETCD_EINVAL     (-11) /* bad options or arguments */

/* The guard key (relative to the prefix) of rbd_etcd_guarded. */
#define RBD_ETCD_GUARD_KEY "rev"

typedef struct rbd_etcd_opts {
    const char *const *endpoints;  /* "http://127.0.0.1:2379", "https://..." */
    size_t n_endpoints;            /* at least 1 */
    const char *prefix;            /* prepended to every key; NULL: "" */
    const char *ca_file;           /* TLS: CA bundle (NULL: the system's) */
    const char *cert_file;         /* TLS client certificate (NULL: none) */
    const char *key_file;          /* its key */
    const char *user;              /* NULL: no authentication */
    const char *password;
    long connect_timeout_ms;       /* 0: 2000 */
    long request_timeout_ms;       /* per endpoint tried; 0: 5000 */
    size_t max_reply;              /* bytes; 0: 64 MiB */
    size_t page_limit;             /* keys per range request; 0: 1000 */
} rbd_etcd_opts_t;

typedef struct rbd_etcd rbd_etcd_t;

/* A client (no connection made yet), or NULL with *err set (EINVAL for a
 * bad option, ENOMEM).  Strings of opts are copied. */
rbd_etcd_t *rbd_etcd_open(const rbd_etcd_opts_t *opts, int *err);
void rbd_etcd_close(rbd_etcd_t *e);

const char *rbd_etcd_strerror(int err);
/* What the last failed call said in detail ("" after a success). */
const char *rbd_etcd_errmsg(const rbd_etcd_t *e);
/* The endpoint requests go to now (the last that answered). */
const char *rbd_etcd_endpoint(const rbd_etcd_t *e);

typedef struct rbd_etcd_kv {
    char *key;          /* relative to the prefix: key_len bytes, then a NUL */
    size_t key_len;
    char *value;        /* value_len bytes, then a NUL */
    size_t value_len;
    int64_t create_revision, mod_revision;
} rbd_etcd_kv_t;

typedef struct rbd_etcd_kvs {
    rbd_etcd_kv_t *kv;  /* in key order */
    size_t n;
    int64_t revision;   /* the store's revision the view is of */
} rbd_etcd_kvs_t;

/* Every key starting with `sub` (relative; "" for the whole prefix) as of
 * revision at_revision (0: the latest), fetched in pages of
 * opts.page_limit keys (a page above max_reply asked again with half
 * the keys, down to one: only a single kv above it fails with ETOOBIG),
 * every page at the first page's revision (one consistent view).  0,
 * or an error (ECOMPACTED: at_revision is older than the last
 * compaction; *out is then empty).  Free with rbd_etcd_kvs_free. */
int rbd_etcd_range(rbd_etcd_t *e, const char *sub, int64_t at_revision, rbd_etcd_kvs_t *out);
void rbd_etcd_kvs_free(rbd_etcd_kvs_t *kvs);

/* One operation of a txn: put key=value, or delete key (value NULL). */
typedef struct rbd_etcd_op {
    const char *key;
    const char *value;
    size_t value_len;
} rbd_etcd_op_t;

/* If cmp_key's mod_revision equals cmp_mod_revision (0: cmp_key must not
 * exist, compared as create_revision == 0), applies ops[0..n_ops) in one
 * transaction.  0 and *revision = the revision it made; or ECONFLICT
 * (nothing written), *revision = the store's revision and *current =
 * cmp_key's mod_revision then (0: absent); or another error.  current may
 * be NULL. */
int rbd_etcd_txn(rbd_etcd_t *e, const char *cmp_key, int64_t cmp_mod_revision,
                 const rbd_etcd_op_t *ops, size_t n_ops, int64_t *revision, int64_t *current);

/* rbd_etcd_txn on the guard key: ops applied only if the guard's
 * mod_revision is still seen_revision (0: no guarded write was ever
 * made), the guard key put along with them (its value: the decimal
 * seen_revision, for humans). */
int rbd_etcd_guarded(rbd_etcd_t *e, int64_t seen_revision, const rbd_etcd_op_t *ops,
                     size_t n_ops, int64_t *revision, int64_t *current);

/* Compacts the store's history up to revision (etcd's /v3/kv/compaction):
 * range and watch from before it then fail with ECOMPACTED. */
int rbd_etcd_compact(rbd_etcd_t *e, int64_t revision);

#define RBD_ETCD_PUT 0
#define RBD_ETCD_DELETE 1

typedef struct rbd_etcd_event {
    int type;           /* RBD_ETCD_PUT or RBD_ETCD_DELETE */
    const char *key;    /* relative to the prefix: key_len bytes, then a NUL */
    size_t key_len;
    const char *value;  /* put: value_len bytes then a NUL; delete: "" */
    size_t value_len;
    int64_t mod_revision;
} rbd_etcd_event_t;

/* Called for each batch, in revision order.  n > 0: events (valid during
 * the call only), `revision` the last one's mod_revision; n == 0: a
 * progress notification, every event up to `revision` was delivered.
 * Returns 0 to go on, nonzero to end the watch (rbd_etcd_watch returns 0). */
typedef int (*rbd_etcd_watch_fn)(void *arg, int64_t revision, const rbd_etcd_event_t *ev,
                                 size_t n);

typedef struct rbd_etcd_watch {
    const char *sub;           /* keys starting with it, relative; NULL: "" */
    int64_t start_revision;    /* first revision delivered (>= 1) */
    rbd_etcd_watch_fn fn;
    void *arg;
    const atomic_int *stop;    /* nonzero: end (checked at least once a second); may be NULL */
    long max_ms;               /* 0: no limit; else end (0) after this long */
    long idle_ms;              /* 0: none; else ECLOSED when nothing arrives this long */
} rbd_etcd_watch_t;

/* Follows the keys from w->start_revision, calling w->fn per batch.
 * Returns 0 when stopped (stop flag, max_ms, fn's nonzero), ECOMPACTED
 * with *compact_revision set (the oldest revision still there: reload
 * with a range, then watch from its revision + 1), ECLOSED when the
 * stream ended or idled (watch again from the last revision + 1), or an
 * error (connection ones after every endpoint was tried).  A member cut
 * from the quorum keeps a watch open and silent: the caller learns of it
 * from a periodic rbd_etcd_range (which fails with ENOQUORUM). */
int rbd_etcd_watch(rbd_etcd_t *e, const rbd_etcd_watch_t *w, int64_t *compact_revision);

#endif /* RBD_ETCD_H */
