/*
 * ngx_http_ringbloom_reader.c - the worker's read side: the segment
 * attached in the worker and the filters opened in it, and the $var of
 * ringbloom_node (the ring node owning KEY) and ringbloom_seen (whether KEY
 * is maybe in FILTER), answered lock-free with no system call.
 *
 *   - the segment is attached in init_process; if that fails (daemon not
 *     running) variables give their fallback values, the failure is logged
 *     once, and attaching is retried at most once a second on demand;
 *   - only the daemon's user's segment is attached (ringbloom_owner, else
 *     the owner of the socket's directory, which rb_daemon_uid judges
 *     first): /dev/shm is writable by all, and while the daemon is down
 *     another user could put a segment of their own under its name;
 *   - once attached the handle stays; the library moves it to a restarted
 *     daemon's segment (on use, at most once a second, this file asks it
 *     to look, since its own check runs only every 1024 lookups).
 */

#include "ngx_http_ringbloom.h"


static ngx_str_t  ngx_http_ringbloom_one = ngx_string("1");
static ngx_str_t  ngx_http_ringbloom_zero = ngx_string("0");


/*
 * Logs why variables give their fallback values: once per condition
 * (*failing: attach, ring, or one filter) until it clears, so an outage
 * costs a worker one line, not one per request.  filter may be NULL.
 */
void
ngx_http_ringbloom_fail(ngx_http_ringbloom_worker_t *w, ngx_uint_t *failing,
    ngx_log_t *log, const char *what, ngx_str_t *filter, const char *reason)
{
    if (*failing) {
        return;
    }

    *failing = 1;

    if (filter == NULL) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "ringbloom: %s on instance \"%V\": %s; fallback "
                      "values until it works (logged once)",
                      what, &w->conf->instance, reason);
        return;
    }

    ngx_log_error(NGX_LOG_WARN, log, 0,
                  "ringbloom: %s \"%V\" on instance \"%V\": %s; fallback "
                  "values until it works (logged once)",
                  what, filter, &w->conf->instance, reason);
}


/* Clears a condition ngx_http_ringbloom_fail() logged, and says so. */
void
ngx_http_ringbloom_cleared(ngx_http_ringbloom_worker_t *w,
    ngx_uint_t *failing, ngx_log_t *log, const char *what, ngx_str_t *filter)
{
    if (!*failing) {
        return;
    }

    *failing = 0;

    if (filter == NULL) {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "ringbloom: %s on instance \"%V\" works again",
                      what, &w->conf->instance);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "ringbloom: %s \"%V\" on instance \"%V\" works again",
                  what, filter, &w->conf->instance);
}


/*
 * The daemon's user: ringbloom_owner, else the owner of the socket's
 * directory once rb_daemon_uid found it trustworthy (a daemon listens only
 * in a directory of its own user or root).  (uid_t) -1 if it is unknown
 * (logged as an attach failure).
 */
static uid_t
ngx_http_ringbloom_daemon_uid(ngx_http_ringbloom_worker_t *w, ngx_log_t *log)
{
    int      rc;
    char     why[512];
    u_char   reason[600], *end;
    uid_t    owner;

    if (w->conf->owner != (uid_t) -1) {
        return w->conf->owner;
    }

    rc = rb_daemon_uid(NULL, (char *) w->conf->socket.data, (uid_t) -1,
                       &owner, why, sizeof(why));
    if (rc != RB_OK) {
        end = ngx_snprintf(reason, sizeof(reason) - 1,
                           "the daemon's user is unknown (%s; "
                           "ringbloom_owner names it)", why);
        *end = '\0';
        ngx_http_ringbloom_fail(w, &w->attach_failing, log, "cannot attach",
                                NULL, (char *) reason);
        return (uid_t) -1;
    }

    return owner;
}


/*
 * The attached segment, or NULL (then at most one attach attempt a
 * second).  Asks the library, at most once a second, whether the daemon
 * restarted onto a new segment, so a quiet worker follows it too.
 * Attaches only a segment of the daemon's user
 * (ngx_http_ringbloom_daemon_uid).
 */
rb_segment_t *
ngx_http_ringbloom_segment(ngx_http_ringbloom_worker_t *w, ngx_log_t *log)
{
    int           rc;
    u_char        reason[600], *end;
    uid_t         owner;
    time_t        now;
    ngx_uint_t    level;
    rb_segment_t *segment;

    now = ngx_time();

    if (w->segment != NULL) {
        if (now != w->last_refresh) {
            w->last_refresh = now;

            if (rb_segment_refresh(w->segment) == 1) {
                ngx_log_error(NGX_LOG_INFO, log, 0,
                              "ringbloom: followed instance \"%V\" to its "
                              "new segment", &w->conf->instance);
            }
        }

        return w->segment;
    }

    if (now < w->next_attach) {
        return NULL;
    }

    w->next_attach = now + NGX_HTTP_RINGBLOOM_RETRY;

    owner = ngx_http_ringbloom_daemon_uid(w, log);
    if (owner == (uid_t) -1) {
        return NULL;
    }

    /* STALE_OK: a daemon that died leaves its last table to serve. */
    rc = rb_segment_attach_owned((char *) w->conf->instance.data,
                                 RB_ATTACH_STALE_OK, owner, &segment);
    if (rc != RB_OK) {
        end = ngx_snprintf(reason, sizeof(reason) - 1,
                           "%s (the daemon's user is uid %uD)",
                           rb_strerror(rc), (uint32_t) owner);
        *end = '\0';
        ngx_http_ringbloom_fail(w, &w->attach_failing, log, "cannot attach",
                                NULL, (char *) reason);
        return NULL;
    }

    level = w->attach_failing ? NGX_LOG_NOTICE : NGX_LOG_INFO;

    ngx_log_error(level, log, 0,
                  "ringbloom: attached instance \"%V\"", &w->conf->instance);

    w->attach_failing = 0;

    w->segment = segment;
    w->last_refresh = now;

    return segment;
}


/*
 * Filter i with its handle open (f->bloom), or NULL (then opening is
 * retried at most once a second).
 */
ngx_http_ringbloom_filter_t *
ngx_http_ringbloom_filter(ngx_http_ringbloom_worker_t *w, ngx_uint_t i,
    ngx_log_t *log)
{
    int                           rc;
    time_t                        now;
    rb_segment_t                 *segment;
    ngx_http_ringbloom_filter_t  *f;

    /* First, so the once-a-second refresh runs for filter-only use too. */
    segment = ngx_http_ringbloom_segment(w, log);
    if (segment == NULL) {
        return NULL;
    }

    f = &w->filters[i];

    if (f->bloom != NULL) {
        return f;
    }

    now = ngx_time();

    if (now < f->next_open) {
        return NULL;
    }

    f->next_open = now + NGX_HTTP_RINGBLOOM_RETRY;

    rc = rb_bloom_open(segment, (char *) f->name->data, f->name->len,
                       &f->bloom);
    if (rc != RB_OK) {
        f->bloom = NULL;
        ngx_http_ringbloom_fail(w, &f->failing, log, "cannot open filter",
                                f->name, rb_strerror(rc));
        return NULL;
    }

    return f;
}


/* ---- variables ----------------------------------------------------------- */

/*
 * Sets a variable's value for the request (nginx marks it not cacheable if
 * the variable is NGX_HTTP_VAR_NOCACHEABLE); returns NGX_OK.
 */
ngx_int_t
ngx_http_ringbloom_set_value(ngx_http_variable_value_t *v, u_char *data,
    size_t len)
{
    v->data = data;
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/* The variable's fallback, or dflt if it has none (NULL: not found). */
ngx_int_t
ngx_http_ringbloom_fallback(ngx_http_request_t *r,
    ngx_http_ringbloom_key_t *rk, ngx_http_variable_value_t *v,
    ngx_str_t *dflt)
{
    ngx_str_t  value;

    if (rk->fallback != NULL) {
        if (ngx_http_complex_value(r, rk->fallback, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        return ngx_http_ringbloom_set_value(v, value.data, value.len);
    }

    if (dflt != NULL) {
        return ngx_http_ringbloom_set_value(v, dflt->data, dflt->len);
    }

    v->not_found = 1;

    return NGX_OK;
}


/* ringbloom_node's $var: the node owning the key, a copy in r->pool. */
ngx_int_t
ngx_http_ringbloom_node_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_ringbloom_key_t *rk = (ngx_http_ringbloom_key_t *) data;

    int                           rc;
    u_char                       *p;
    rb_node_t                     node;
    ngx_str_t                     key;
    rb_segment_t                 *segment;
    ngx_http_ringbloom_worker_t  *w;

    if (ngx_http_ringbloom_worker_key(r, rk, &w, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    segment = ngx_http_ringbloom_segment(w, r->connection->log);
    if (segment == NULL) {
        return ngx_http_ringbloom_fallback(r, rk, v, NULL);
    }

    rc = rb_ring_lookup(segment, key.data, key.len, &node);
    if (rc != RB_OK) {
        ngx_http_ringbloom_fail(w, &w->ring_failing, r->connection->log,
                                "ring lookup failed", NULL, rb_strerror(rc));
        return ngx_http_ringbloom_fallback(r, rk, v, NULL);
    }

    ngx_http_ringbloom_cleared(w, &w->ring_failing, r->connection->log,
                               "the ring", NULL);

    p = ngx_pnalloc(r->pool, node.name_len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, node.name, node.name_len);

    return ngx_http_ringbloom_set_value(v, p, node.name_len);
}


/* ringbloom_seen's $var: "1" if the key is maybe in the filter, else "0". */
ngx_int_t
ngx_http_ringbloom_seen_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_ringbloom_key_t *rk = (ngx_http_ringbloom_key_t *) data;

    int                           rc;
    ngx_str_t                     key, *answer;
    ngx_http_ringbloom_filter_t  *f;
    ngx_http_ringbloom_worker_t  *w;

    if (ngx_http_ringbloom_worker_key(r, rk, &w, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    f = ngx_http_ringbloom_filter(w, rk->filter, r->connection->log);
    if (f == NULL) {
        return ngx_http_ringbloom_fallback(r, rk, v, &ngx_http_ringbloom_zero);
    }

    rc = rb_bloom_contains(f->bloom, key.data, key.len);
    if (rc < 0) {
        ngx_http_ringbloom_fail(w, &f->failing, r->connection->log,
                                "query failed in filter", f->name,
                                rb_strerror(rc));
        return ngx_http_ringbloom_fallback(r, rk, v, &ngx_http_ringbloom_zero);
    }

    ngx_http_ringbloom_cleared(w, &f->failing, r->connection->log,
                               "filter", f->name);

    answer = rc ? &ngx_http_ringbloom_one : &ngx_http_ringbloom_zero;

    return ngx_http_ringbloom_set_value(v, answer->data, answer->len);
}
