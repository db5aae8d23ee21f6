/*
 * etcd.c - the etcd client's core (daemon/sources/etcd.h): options, one CURL
 * handle per endpoint, a request POSTed with failover across endpoints,
 * authentication (token in the Authorization header, renewed when etcd
 * calls it invalid), etcd's error replies mapped to RBD_ETCD_* codes, and
 * the JSON gateway's encodings (base64 keys and values through libcrypto,
 * int64 as strings).
 * Range and txn are in etcd_kv.c, the watch stream in etcd_watch.c.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "etcd_impl.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

int etcd_fail(rbd_etcd_t *e, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(e->err, sizeof(e->err), fmt, ap);
    va_end(ap);
    return code;
}

const char *rbd_etcd_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case RBD_ETCD_EUNREACH: return "etcd unreachable (no endpoint answered)";
    case RBD_ETCD_ENOQUORUM: return "etcd unavailable (no quorum or request timed out)";
    case RBD_ETCD_EAUTH: return "etcd authentication failed";
    case RBD_ETCD_ECOMPACTED: return "etcd revision compacted";
    case RBD_ETCD_ECONFLICT: return "etcd transaction conflict (changed concurrently)";
    case RBD_ETCD_EPROTO: return "etcd protocol error (unexpected reply)";
    case RBD_ETCD_ETOOBIG: return "etcd reply too large";
    case RBD_ETCD_ENOMEM: return "out of memory";
    case RBD_ETCD_EREFUSED: return "etcd refused the request";
    case RBD_ETCD_ECLOSED: return "etcd watch stream ended";
    case RBD_ETCD_EINVAL: return "invalid etcd options or arguments";
    default: return "unknown etcd error";
    }
}

const char *rbd_etcd_errmsg(const rbd_etcd_t *e)
{
    return e->err;
}

const char *rbd_etcd_endpoint(const rbd_etcd_t *e)
{
    return e->ep[e->cur];
}

static char *dup_or_null(const char *s, int *bad)
{
    char *d;

    if (!s)
        return NULL;
    d = strdup(s);
    if (!d)
        *bad = 1;
    return d;
}

/* TLS and the options that never change, once per handle. */
static int setup_handle(CURL *h, const rbd_etcd_opts_t *o)
{
    int rc = 0;

    rc |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    rc |= curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    if (o->ca_file)
        rc |= curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_file);
    if (o->cert_file)
        rc |= curl_easy_setopt(h, CURLOPT_SSLCERT, o->cert_file);
    if (o->key_file)
        rc |= curl_easy_setopt(h, CURLOPT_SSLKEY, o->key_file);
    return rc == 0 ? 0 : -1;
}

static int check_opts(const rbd_etcd_opts_t *o)
{
    if (!o || !o->endpoints || o->n_endpoints == 0 || o->n_endpoints > 64)
        return -1;
    if ((o->user == NULL) != (o->password == NULL) || (!o->cert_file != !o->key_file))
        return -1;
    for (size_t i = 0; i < o->n_endpoints; i++)
        if (!o->endpoints[i] || (strncmp(o->endpoints[i], "http://", 7) != 0 &&
                                 strncmp(o->endpoints[i], "https://", 8) != 0))
            return -1;
    return 0;
}

rbd_etcd_t *rbd_etcd_open(const rbd_etcd_opts_t *o, int *err)
{
    rbd_etcd_t *e;
    int bad = 0;

    *err = RBD_ETCD_EINVAL;
    if (check_opts(o) != 0)
        return NULL;
    *err = RBD_ETCD_ENOMEM;
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != 0 || !(e = calloc(1, sizeof(*e))))
        return NULL;
    e->n_ep = o->n_endpoints;
    e->ep = calloc(e->n_ep, sizeof(*e->ep));
    e->h = calloc(e->n_ep, sizeof(*e->h));
    e->prefix = strdup(o->prefix ? o->prefix : "");
    e->user = dup_or_null(o->user, &bad);
    e->password = dup_or_null(o->password, &bad);
    if (!e->ep || !e->h || !e->prefix || bad)
        goto fail;
    for (size_t i = 0; i < e->n_ep; i++) {
        size_t l = strlen(o->endpoints[i]);
        while (l > 0 && o->endpoints[i][l - 1] == '/')
            l--;
        if (!(e->ep[i] = strndup(o->endpoints[i], l)) || !(e->h[i] = curl_easy_init()))
            goto fail;
        if (setup_handle(e->h[i], o) != 0) {
            *err = RBD_ETCD_EINVAL;
            goto fail;
        }
    }
    e->prefix_len = strlen(e->prefix);
    e->connect_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 2000;
    e->request_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms : 5000;
    /* json-c parses at most INT_MAX bytes at once: 1 GiB at most. */
    e->max_reply = o->max_reply > 0 ? o->max_reply : (size_t)64 << 20;
    if (e->max_reply > (size_t)1 << 30)
        e->max_reply = (size_t)1 << 30;
    e->page_limit = o->page_limit > 0 ? o->page_limit : 1000;
    *err = 0;
    return e;
fail:
    rbd_etcd_close(e);
    return NULL;
}

void rbd_etcd_close(rbd_etcd_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n_ep; i++) {
        if (e->h && e->h[i])
            curl_easy_cleanup(e->h[i]);
        if (e->ep)
            free(e->ep[i]);
    }
    free(e->h);
    free(e->ep);
    free(e->prefix);
    free(e->user);
    if (e->password)
        explicit_bzero(e->password, strlen(e->password));
    free(e->password);
    free(e->token);
    free(e);
}

static size_t buf_write(char *data, size_t size, size_t n, void *arg)
{
    etcd_buf_t *b = arg;
    size_t len = size * n;

    if (len > b->max - b->len) {
        b->too_big = 1;
        return 0;
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
    return len;
}

struct curl_slist *etcd_headers(rbd_etcd_t *e, int *ok)
{
    struct curl_slist *l, *n;
    char *auth;

    *ok = 0;
    if (!(l = curl_slist_append(NULL, "Content-Type: application/json")))
        return NULL;
    if (e->token) {
        if (asprintf(&auth, "Authorization: %s", e->token) < 0) {
            curl_slist_free_all(l);
            return NULL;
        }
        n = curl_slist_append(l, auth);
        free(auth);
        if (!n) {
            curl_slist_free_all(l);
            return NULL;
        }
        l = n;
    }
    *ok = 1;
    return l;
}

void etcd_setup(rbd_etcd_t *e, CURL *h, const char *url, const char *body,
                struct curl_slist *hdrs)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, e->connect_ms);
}

/* How one endpoint's attempt ended. */
enum { TRY_OK, TRY_DOWN, TRY_BUSY, TRY_FINAL };

/* grpc codes that mean "this member cannot serve now": Unavailable (no
 * leader, request timed out), DeadlineExceeded. */
static int unavailable(int code)
{
    return code == 14 || code == 4;
}

/* Parses a whole reply; NULL if it is not one JSON object. */
static json_object *parse_reply(const etcd_buf_t *b)
{
    json_tokener *tok;
    json_object *o;

    if (!b->p || !(tok = json_tokener_new()))
        return NULL;
    o = json_tokener_parse_ex(tok, b->p, (int)b->len);
    if (o && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    return o;
}

/* An HTTP error reply {"error", "message", "code"}: its result. */
static int http_error(rbd_etcd_t *e, size_t i, long status, json_object *o, int *rc)
{
    json_object *m = NULL, *c = NULL;
    int code = -1;

    if (o && json_object_object_get_ex(o, "code", &c))
        code = json_object_get_int(c);
    if (o)
        json_object_object_get_ex(o, "message", &m);
    if (status >= 500 && (code < 0 || unavailable(code))) {
        etcd_fail(e, 0, "%s: HTTP %ld %s", e->ep[i], status, m ? json_object_get_string(m) : "");
        return TRY_BUSY;
    }
    if (code < 0) {
        *rc = etcd_fail(e, RBD_ETCD_EPROTO, "%s: HTTP %ld without an etcd error", e->ep[i], status);
        return TRY_FINAL;
    }
    *rc = etcd_error(e, e->ep[i], code, m ? json_object_get_string(m) : "");
    return TRY_FINAL;
}

/* One POST to endpoint i: TRY_OK with *reply, TRY_DOWN / TRY_BUSY (e->err
 * says why), or TRY_FINAL with *rc. */
static int try_post(rbd_etcd_t *e, size_t i, const char *path, const char *body,
                    json_object **reply, int *rc)
{
    etcd_buf_t b = { .max = e->max_reply };
    struct curl_slist *hdrs;
    char url[1024];
    long status = 0;
    CURLcode cc;
    int ok, r;

    if (!(hdrs = etcd_headers(e, &ok))) {
        *rc = RBD_ETCD_ENOMEM;
        return TRY_FINAL;
    }
    snprintf(url, sizeof(url), "%s%s", e->ep[i], path);
    etcd_setup(e, e->h[i], url, body, hdrs);
    curl_easy_setopt(e->h[i], CURLOPT_TIMEOUT_MS, e->request_ms);
    curl_easy_setopt(e->h[i], CURLOPT_WRITEFUNCTION, buf_write);
    curl_easy_setopt(e->h[i], CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e->h[i], CURLOPT_NOPROGRESS, 1L);
    cc = curl_easy_perform(e->h[i]);
    curl_slist_free_all(hdrs);
    curl_easy_getinfo(e->h[i], CURLINFO_RESPONSE_CODE, &status);
    *reply = NULL;
    if (b.too_big) {
        r = TRY_FINAL;
        *rc = etcd_fail(e, RBD_ETCD_ETOOBIG, "%s: reply above %zu bytes", e->ep[i], e->max_reply);
    } else if (cc == CURLE_WRITE_ERROR) {
        r = TRY_FINAL;   /* buf_write: no memory for the reply */
        *rc = etcd_fail(e, RBD_ETCD_ENOMEM, "%s: no memory for the reply", e->ep[i]);
    } else if (cc == CURLE_OPERATION_TIMEDOUT) {
        r = TRY_BUSY;
        etcd_fail(e, 0, "%s: no reply within %ld ms", e->ep[i], e->request_ms);
    } else if (cc != CURLE_OK) {
        r = TRY_DOWN;
        etcd_fail(e, 0, "%s: %s", e->ep[i], curl_easy_strerror(cc));
    } else {
        json_object *o = parse_reply(&b);
        if (status == 200 && o) {
            *reply = o;
            o = NULL;
            r = TRY_OK;
        } else if (status == 200) {
            r = TRY_FINAL;
            *rc = etcd_fail(e, RBD_ETCD_EPROTO, "%s: reply is not a JSON object", e->ep[i]);
        } else {
            r = http_error(e, i, status, o, rc);
        }
        json_object_put(o);
    }
    free(b.p);
    return r;
}

/* etcd_call without authentication: every endpoint at most once. */
static int call_once(rbd_etcd_t *e, const char *path, const char *body, json_object **reply)
{
    char why[sizeof(e->err)] = "";
    size_t wl = 0;
    int busy = 0, rc = 0;

    for (size_t k = 0; k < e->n_ep; k++) {
        size_t i = (e->cur + k) % e->n_ep;
        int r = try_post(e, i, path, body, reply, &rc);
        if (r == TRY_OK || r == TRY_FINAL) {
            e->cur = i;
            if (r == TRY_OK)
                e->err[0] = '\0';
            return r == TRY_OK ? 0 : rc;
        }
        busy |= r == TRY_BUSY;
        if (wl < sizeof(why) - 1)
            wl += (size_t)snprintf(why + wl, sizeof(why) - wl, "%s%s", wl ? "; " : "", e->err);
    }
    e->cur = (e->cur + 1) % e->n_ep;
    return etcd_fail(e, busy ? RBD_ETCD_ENOQUORUM : RBD_ETCD_EUNREACH, "all %zu endpoints failed: %s",
                     e->n_ep, why);
}

/* Gets a token for user / password (POST /v3/auth/authenticate). */
static int authenticate(rbd_etcd_t *e)
{
    json_object *req = json_object_new_object(), *reply = NULL, *t;
    int rc = RBD_ETCD_ENOMEM;

    free(e->token);
    e->token = NULL;
    if (req && json_object_object_add(req, "name", json_object_new_string(e->user)) == 0 &&
        json_object_object_add(req, "password", json_object_new_string(e->password)) == 0) {
        rc = call_once(e, "/v3/auth/authenticate",
                       json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), &reply);
        if (rc == 0 && json_object_object_get_ex(reply, "token", &t) &&
            json_object_is_type(t, json_type_string))
            rc = (e->token = strdup(json_object_get_string(t))) ? 0 : RBD_ETCD_ENOMEM;
        else if (rc == 0)
            rc = etcd_fail(e, RBD_ETCD_EPROTO, "authenticate: no token in the reply");
    }
    json_object_put(req);
    json_object_put(reply);
    return rc;
}

int etcd_call(rbd_etcd_t *e, const char *path, json_object *req, json_object **reply)
{
    const char *body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
    int rc;

    *reply = NULL;
    if (!body)
        return RBD_ETCD_ENOMEM;
    if (e->user && !e->token && (rc = authenticate(e)) != 0)
        return rc;
    rc = call_once(e, path, body, reply);
    /* A token expires (--auth-token-ttl) or dies with a restart: once more. */
    if (rc == RBD_ETCD_EAUTH && e->user && strstr(e->err, "invalid auth token")) {
        if ((rc = authenticate(e)) == 0)
            rc = call_once(e, path, body, reply);
    }
    return rc;
}

int etcd_error(rbd_etcd_t *e, const char *ep, int code, const char *msg)
{
    int rc = RBD_ETCD_EREFUSED;

    if (strstr(msg, "required revision has been compacted"))
        rc = RBD_ETCD_ECOMPACTED;
    else if (code == 16 || code == 7 || strstr(msg, "authentication failed") ||
             strstr(msg, "user name is empty") || strstr(msg, "permission denied"))
        rc = RBD_ETCD_EAUTH;
    else if (unavailable(code))
        rc = RBD_ETCD_ENOQUORUM;
    return etcd_fail(e, rc, "%s: %s (grpc code %d)", ep, msg, code);
}

/* Base64 is OpenSSL's (EVP_EncodeBlock / EVP_DecodeBlock, libcrypto).
 * EVP_DecodeBlock alone is laxer than etcd's encoder: it skips leading
 * blanks and trailing blanks, line ends and '-', and reads '=' as a zero
 * sextet wherever it stands, counting the zero bytes of the padding in
 * its result.  So the text is checked to be canonical first (length a
 * multiple of 4, only the alphabet, '=' only as one or two final
 * characters) and the padding's bytes are taken off the result. */
static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

json_object *etcd_b64(const void *data, size_t len)
{
    size_t n = 4 * ((len + 2) / 3);
    unsigned char *out;
    json_object *j;

    if (len > (size_t)INT_MAX / 4 * 3 - 3 || !(out = malloc(n + 1)))
        return NULL;
    if ((size_t)EVP_EncodeBlock(out, data, (int)len) != n) {
        free(out);
        return NULL;
    }
    j = json_object_new_string_len((const char *)out, (int)n);
    free(out);
    return j;
}

char *etcd_unb64(json_object *o, const char *k, size_t *len)
{
    json_object *f;
    const char *s = "";
    size_t n, pad = 0;
    int m;
    unsigned char *out;

    if (json_object_object_get_ex(o, k, &f)) {
        if (!json_object_is_type(f, json_type_string))
            return NULL;
        s = json_object_get_string(f);
    }
    n = strlen(s);
    if (n % 4 != 0 || n > (size_t)INT_MAX)
        return NULL;
    while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
        pad++;
    if (strspn(s, b64_alphabet) != n - pad || !(out = malloc(n / 4 * 3 + 1)))
        return NULL;
    m = n ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)n) : 0;
    if (m < 0 || (size_t)m != n / 4 * 3) {
        free(out);
        return NULL;
    }
    m -= (int)pad;
    out[m] = '\0';
    *len = (size_t)m;
    return (char *)out;
}

int64_t etcd_int(json_object *o, const char *k)
{
    json_object *f;

    if (!o || !json_object_object_get_ex(o, k, &f))
        return 0;
    if (json_object_is_type(f, json_type_string))
        return strtoll(json_object_get_string(f), NULL, 10);
    return json_object_get_int64(f);
}

json_object *etcd_int_str(int64_t v)
{
    char s[24];

    snprintf(s, sizeof(s), "%lld", (long long)v);
    return json_object_new_string(s);
}

int64_t etcd_revision(json_object *reply)
{
    json_object *h;

    return json_object_object_get_ex(reply, "header", &h) ? etcd_int(h, "revision") : 0;
}

json_object *etcd_key(rbd_etcd_t *e, const char *rel, size_t rel_len)
{
    char *full = malloc(e->prefix_len + rel_len + 1);
    json_object *j;

    if (!full)
        return NULL;
    memcpy(full, e->prefix, e->prefix_len);
    memcpy(full + e->prefix_len, rel, rel_len);
    j = etcd_b64(full, e->prefix_len + rel_len);
    free(full);
    return j;
}

json_object *etcd_range_end(rbd_etcd_t *e, const char *rel)
{
    size_t rl = strlen(rel), n = e->prefix_len + rl;
    unsigned char *k = malloc(n + 1);
    json_object *j;

    if (!k)
        return NULL;
    memcpy(k, e->prefix, e->prefix_len);
    memcpy(k + e->prefix_len, rel, rl);
    /* The first key after every key starting with k: its last byte below
     * 0xff plus one; none ("\0": to the end of the keyspace) if all are. */
    while (n > 0 && k[n - 1] == 0xff)
        n--;
    if (n == 0)
        j = etcd_b64("", 1);
    else {
        k[n - 1]++;
        j = etcd_b64(k, n);
    }
    free(k);
    return j;
}

char *etcd_rel_key(rbd_etcd_t *e, json_object *kv, size_t *len)
{
    size_t n;
    char *k = etcd_unb64(kv, "key", &n), *r;

    if (!k || n < e->prefix_len || memcmp(k, e->prefix, e->prefix_len) != 0) {
        free(k);
        return NULL;
    }
    memmove(k, k + e->prefix_len, n - e->prefix_len + 1);
    *len = n - e->prefix_len;
    r = realloc(k, *len + 1);
    return r ? r : k;
}
