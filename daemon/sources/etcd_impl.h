/*
 * etcd_impl.h - what the etcd client's files share (daemon/sources/etcd.c: the
 * client, its transport and JSON helpers; etcd_kv.c: range and txn;
 * etcd_watch.c: the watch stream).  Not for the rest of the daemon.
 */
#ifndef RBD_ETCD_IMPL_H
#define RBD_ETCD_IMPL_H

#include <curl/curl.h>
#include <json-c/json.h>

#include "etcd.h"

struct rbd_etcd {
    char **ep;               /* endpoints, without a trailing '/' */
    CURL **h;                /* one handle per endpoint, reused */
    size_t n_ep, cur;        /* cur: the endpoint tried first */
    char *prefix;
    size_t prefix_len;
    char *user, *password;
    char *token;             /* NULL until authenticated */
    long connect_ms, request_ms;
    size_t max_reply, page_limit;
    char err[1024];
};

/* A reply body being received: at most max bytes (too_big once more came). */
typedef struct etcd_buf {
    char *p;
    size_t len, cap, max;
    int too_big;
} etcd_buf_t;

/* Sets e->err (printf-style) and returns code. */
int etcd_fail(rbd_etcd_t *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The Authorization header list for e (NULL when no token), the caller
 * frees it with curl_slist_free_all; *ok 0 when memory ran out. */
struct curl_slist *etcd_headers(rbd_etcd_t *e, int *ok);

/* Sets the options every request of handle h shares (timeouts, body). */
void etcd_setup(rbd_etcd_t *e, CURL *h, const char *url, const char *body,
                struct curl_slist *hdrs);

/* POSTs req (a JSON object, not consumed) to path ("/v3/kv/range") with
 * failover and authentication; 0 and *reply (the caller puts it), or an
 * error with e->err set.  An etcd error reply maps to its code. */
int etcd_call(rbd_etcd_t *e, const char *path, json_object *req, json_object **reply);

/* Maps etcd's error (grpc code, message) to a code, e->err set. */
int etcd_error(rbd_etcd_t *e, const char *ep, int code, const char *msg);

/* The full key (prefix + rel), base64 in a new JSON string; NULL: ENOMEM. */
json_object *etcd_key(rbd_etcd_t *e, const char *rel, size_t rel_len);
/* The end of the range of every key starting with prefix + rel. */
json_object *etcd_range_end(rbd_etcd_t *e, const char *rel);
/* Bytes as base64 in a new JSON string; NULL: ENOMEM. */
json_object *etcd_b64(const void *data, size_t len);
/* Decodes the base64 string field k of o into a new NUL-terminated buffer
 * (*len bytes before the NUL); an absent field is "".  NULL: not base64
 * or no memory. */
char *etcd_unb64(json_object *o, const char *k, size_t *len);
/* An int64 field (the gateway writes them as strings); absent: 0. */
int64_t etcd_int(json_object *o, const char *k);
/* A new JSON string of v in decimal. */
json_object *etcd_int_str(int64_t v);
/* header.revision of a reply. */
int64_t etcd_revision(json_object *reply);
/* The key of kv without the prefix: *len bytes (a NUL among them is
 * kept) and a NUL, in a new buffer; NULL: not base64, not under the
 * prefix, or no memory. */
char *etcd_rel_key(rbd_etcd_t *e, json_object *kv, size_t *len);

#endif /* RBD_ETCD_IMPL_H */
