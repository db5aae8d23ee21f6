/*
 * etcd_watch.c - the etcd client's watch (daemon/sources/etcd.h): one streaming
 * POST to /v3/watch with a create_request; the gateway answers a chunked
 * stream of JSON objects {"result": WatchResponse} (or {"error": ...}),
 * each parsed as it completes by json-c's incremental tokener in curl's
 * write callback, and handed to the caller's function per batch.  Stop
 * flag, time limit and idle limit are checked in curl's progress
 * callback, which libcurl calls at least once a second while idle.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_impl.h"

typedef struct wstate {
    rbd_etcd_t *e;
    const rbd_etcd_watch_t *w;
    json_tokener *tok;
    size_t obj_bytes;        /* of the object being parsed */
    long long start_ms, last_ms;
    int created, got_bytes;
    int rc, done;            /* done: rc is the watch's result */
    int64_t compact;
} wstate_t;

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void finish(wstate_t *s, int rc)
{
    if (!s->done) {
        s->done = 1;
        s->rc = rc;
    }
}

/* The events of one result, handed to w->fn. */
static int deliver(wstate_t *s, json_object *evs)
{
    size_t n = json_object_array_length(evs), k = 0;
    rbd_etcd_event_t *ev = calloc(n ? n : 1, sizeof(*ev));
    int rc = 0, bad = 0;

    if (!ev)
        return RBD_ETCD_ENOMEM;
    for (; k < n && !bad; k++) {
        json_object *x = json_object_array_get_idx(evs, k), *kv, *t;
        if (!json_object_object_get_ex(x, "kv", &kv)) {
            bad = 1;
            break;
        }
        /* PUT is 0, left out of the JSON; DELETE is named. */
        ev[k].type = json_object_object_get_ex(x, "type", &t) &&
                     strcmp(json_object_get_string(t), "DELETE") == 0 ? RBD_ETCD_DELETE : RBD_ETCD_PUT;
        ev[k].key = etcd_rel_key(s->e, kv, &ev[k].key_len);
        ev[k].value = etcd_unb64(kv, "value", &ev[k].value_len);
        ev[k].mod_revision = etcd_int(kv, "mod_revision");
        bad = !ev[k].key || !ev[k].value;
    }
    if (bad)
        rc = etcd_fail(s->e, RBD_ETCD_EPROTO, "watch: an event with a bad kv");
    else if (n && s->w->fn(s->w->arg, ev[n - 1].mod_revision, ev, n) != 0)
        rc = 1;
    for (size_t i = 0; i < k; i++) {
        free((char *)ev[i].key);
        free((char *)ev[i].value);
    }
    free(ev);
    return rc;
}

/* One object of the stream. */
static void handle(wstate_t *s, json_object *o)
{
    json_object *r, *x, *evs;

    if (json_object_object_get_ex(o, "error", &x)) {
        /* In the stream: {"error": {"grpc_code", "message", ...}}; as the
         * whole reply of a failed request: {"error", "message", "code"}. */
        json_object *m = NULL, *c = NULL, *in = json_object_is_type(x, json_type_object) ? x : o;
        json_object_object_get_ex(in, "message", &m);
        json_object_object_get_ex(in, in == x ? "grpc_code" : "code", &c);
        finish(s, etcd_error(s->e, s->e->ep[s->e->cur], c ? json_object_get_int(c) : -1,
                             m ? json_object_get_string(m) : "watch stream error"));
        return;
    }
    if (!json_object_object_get_ex(o, "result", &r) || !json_object_is_type(r, json_type_object)) {
        finish(s, etcd_fail(s->e, RBD_ETCD_EPROTO, "watch: an object without \"result\""));
        return;
    }
    if (json_object_object_get_ex(r, "canceled", &x) && json_object_get_boolean(x)) {
        const char *why = json_object_object_get_ex(r, "cancel_reason", &x) ? json_object_get_string(x) : "";
        s->compact = etcd_int(r, "compact_revision");
        if (s->compact > 0)
            finish(s, etcd_fail(s->e, RBD_ETCD_ECOMPACTED, "watch: revision %lld compacted (oldest kept %lld)",
                                (long long)s->w->start_revision, (long long)s->compact));
        else
            finish(s, etcd_error(s->e, s->e->ep[s->e->cur], strstr(why, "auth") ? 16 : -1, why));
        return;
    }
    if (json_object_object_get_ex(r, "created", &x) && json_object_get_boolean(x)) {
        s->created = 1;
        return;
    }
    if (json_object_object_get_ex(r, "events", &evs) && json_object_array_length(evs) > 0) {
        int rc = deliver(s, evs);
        if (rc != 0)
            finish(s, rc > 0 ? 0 : rc);
    } else if (s->w->fn(s->w->arg, etcd_revision(r), NULL, 0) != 0) {
        finish(s, 0);   /* a progress notification */
    }
}

static size_t stream_write(char *data, size_t size, size_t n, void *arg)
{
    wstate_t *s = arg;
    size_t len = size * n, left = len;

    s->last_ms = now_ms();
    s->got_bytes = 1;
    while (left > 0 && !s->done) {
        /* json-c takes an int length: feed at most 1 GiB at a time. */
        int chunk = left > (1u << 30) ? 1 << 30 : (int)left;
        json_object *o = json_tokener_parse_ex(s->tok, data, chunk);
        enum json_tokener_error err = json_tokener_get_error(s->tok);
        if (err == json_tokener_continue) {
            s->obj_bytes += (size_t)chunk;
            if (s->obj_bytes > s->e->max_reply)
                finish(s, etcd_fail(s->e, RBD_ETCD_ETOOBIG, "watch: an object above %zu bytes",
                                    s->e->max_reply));
            data += chunk;
            left -= (size_t)chunk;
            continue;
        }
        if (err != json_tokener_success || !o) {
            finish(s, etcd_fail(s->e, RBD_ETCD_EPROTO, "watch: bad JSON in the stream (%s)",
                                json_tokener_error_desc(err)));
            break;
        }
        size_t used = json_tokener_get_parse_end(s->tok);
        s->obj_bytes = 0;
        data += used;
        left -= used;
        handle(s, o);
        json_object_put(o);
    }
    return s->done ? 0 : len;   /* 0 ends the transfer */
}

static int stream_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    wstate_t *s = arg;
    long long t = now_ms();

    (void)dt, (void)dn, (void)ut, (void)un;
    if (s->w->stop && atomic_load(s->w->stop))
        finish(s, 0);
    else if (s->w->max_ms > 0 && t - s->start_ms >= s->w->max_ms)
        finish(s, 0);
    else if (s->w->idle_ms > 0 && t - s->last_ms >= s->w->idle_ms)
        finish(s, etcd_fail(s->e, RBD_ETCD_ECLOSED, "watch: nothing from %s for %ld ms",
                            s->e->ep[s->e->cur], s->w->idle_ms));
    return s->done;
}

/* The create_request body, or NULL. */
static char *watch_body(rbd_etcd_t *e, const rbd_etcd_watch_t *w)
{
    json_object *req = json_object_new_object(), *c = json_object_new_object();
    const char *sub = w->sub ? w->sub : "";
    char *body = NULL;

    if (req && c) {
        json_object_object_add(c, "key", etcd_key(e, sub, strlen(sub)));
        json_object_object_add(c, "range_end", etcd_range_end(e, sub));
        json_object_object_add(c, "start_revision", etcd_int_str(w->start_revision));
        json_object_object_add(c, "progress_notify", json_object_new_boolean(1));
        json_object_object_add(req, "create_request", c);
        c = NULL;
        body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
    }
    json_object_put(c);
    json_object_put(req);
    return body;
}

/* One stream on the current endpoint: 1 when it could not be opened there
 * (e->err says why; try the next), else the watch's result. */
static int watch_on(rbd_etcd_t *e, const rbd_etcd_watch_t *w, const char *body, int64_t *compact)
{
    wstate_t s = { .e = e, .w = w };
    struct curl_slist *hdrs;
    CURL *h = e->h[e->cur];
    char url[1024];
    long status = 0;
    CURLcode cc;
    int ok;

    if (!(s.tok = json_tokener_new()) || !(hdrs = etcd_headers(e, &ok))) {
        json_tokener_free(s.tok);
        return RBD_ETCD_ENOMEM;
    }
    snprintf(url, sizeof(url), "%s/v3/watch", e->ep[e->cur]);
    etcd_setup(e, h, url, body, hdrs);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 0L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, stream_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, stream_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s);
    s.start_ms = s.last_ms = now_ms();
    cc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
    curl_slist_free_all(hdrs);
    json_tokener_free(s.tok);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    *compact = s.compact;
    if (s.done)
        return s.rc;
    /* Nothing received (refused, reset, timed out connecting): next one. */
    if (!s.got_bytes && cc != CURLE_OK) {
        etcd_fail(e, 0, "%s: %s", e->ep[e->cur], curl_easy_strerror(cc));
        return 1;
    }
    if (status != 200 && status != 0)
        return etcd_fail(e, status >= 500 ? RBD_ETCD_ENOQUORUM : RBD_ETCD_EREFUSED,
                         "watch: %s: HTTP %ld", e->ep[e->cur], status);
    return etcd_fail(e, RBD_ETCD_ECLOSED, "watch: %s: the stream ended (%s)", e->ep[e->cur],
                     cc == CURLE_OK ? "closed by etcd" : curl_easy_strerror(cc));
}

int rbd_etcd_watch(rbd_etcd_t *e, const rbd_etcd_watch_t *w, int64_t *compact_revision)
{
    char why[sizeof(e->err)] = "";
    size_t wl = 0;
    char *body;
    int rc = 1, reauth = 1;

    *compact_revision = 0;
    if (!w || !w->fn || w->start_revision < 1)
        return etcd_fail(e, RBD_ETCD_EINVAL, "watch: bad arguments");
    if (e->user && !e->token) {
        /* A cheap authenticated call gets the token (etcd_call does it). */
        rbd_etcd_kvs_t none;
        if ((rc = rbd_etcd_range(e, RBD_ETCD_GUARD_KEY, 0, &none)) != 0)
            return rc;
        rbd_etcd_kvs_free(&none);
    }
    if (!(body = watch_body(e, w)))
        return RBD_ETCD_ENOMEM;
    for (size_t k = 0; k < e->n_ep; k++) {
        rc = watch_on(e, w, body, compact_revision);
        if (rc == RBD_ETCD_EAUTH && e->user && reauth && strstr(e->err, "invalid auth token")) {
            /* An expired token: a range renews it, then once more. */
            rbd_etcd_kvs_t none;
            reauth = 0;
            free(e->token);
            e->token = NULL;
            if ((rc = rbd_etcd_range(e, RBD_ETCD_GUARD_KEY, 0, &none)) == 0) {
                rbd_etcd_kvs_free(&none);
                k--;
                continue;
            }
        }
        if (rc != 1)
            break;
        if (wl < sizeof(why) - 1)
            wl += (size_t)snprintf(why + wl, sizeof(why) - wl, "%s%s", wl ? "; " : "", e->err);
        e->cur = (e->cur + 1) % e->n_ep;
    }
    free(body);
    if (rc == 0)
        e->err[0] = '\0';
    if (rc == 1)
        return etcd_fail(e, RBD_ETCD_EUNREACH, "watch: all %zu endpoints failed: %s", e->n_ep, why);
    return rc;
}
