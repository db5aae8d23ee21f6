/*
 * ngx_http_ringbloom_tinylfu.c - TinyLFU admission in the worker: the
 * pairs (ADMIT.RESERVE PAIR: the sketch PAIR and its doorkeeper PAIR:dk)
 * opened on first use, and ringbloom_tinylfu's $var: "1" if TinyLFU
 * admits KEY into the cache, "0" if not, read from shared memory without a
 * round trip or an allocation (rb_tinylfu_admit_h).  The accesses it
 * counts are recorded by "ringbloom_admit PAIR KEY tinylfu" (ADMIT.TOUCH,
 * ngx_http_ringbloom_admit.c).
 *
 *   - The victim.  TinyLFU admits a candidate iff it is requested more
 *     often than the entry the cache would evict for it; nginx's cache
 *     does not say which that is (it evicts its least recently used
 *     entries, by an MD5 of their key).  So each worker keeps the last
 *     victims= keys it admitted, oldest first, and takes the oldest as the
 *     victim: the entry admitted longest ago, which an LRU cache of that
 *     many entries per worker evicts first unless it was hit since.  While
 *     fewer are kept (the cache filling) every candidate is admitted; an
 *     admitted candidate takes the victim's place.  A key longer than
 *     NGX_HTTP_RINGBLOOM_VICTIM_LEN is decided but not kept; memory is at
 *     most victims= keys of that length.
 *   - The request's own access is recorded after the response (log
 *     phase), so the estimates read now lack it: a candidate is admitted
 *     iff its estimate + 1 beats the victim's, that is unless the
 *     victim's beats the candidate's (rb_tinylfu_admit_h with the two
 *     swapped).
 *   - Once per request: nginx keeps a variable's value for the request,
 *     so the decision (and the victim's replacement) happens at its first
 *     use; proxy_no_cache asks once per response fetched.
 *   - Without the segment, or when the pair cannot be opened or read, the
 *     FALLBACK (default "0": nothing stored while blind), the reason
 *     logged once per condition, opening retried at most once a second.
 */

#include "ngx_http_ringbloom.h"


static ngx_str_t  ngx_http_ringbloom_tinylfu_yes = ngx_string("1");
static ngx_str_t  ngx_http_ringbloom_tinylfu_no = ngx_string("0");


/*
 * Pair i with its handle open (and its victims' slots, if a variable
 * names it), or NULL (then opening is retried at most once a second).
 */
static ngx_http_ringbloom_pair_t *
ngx_http_ringbloom_pair(ngx_http_ringbloom_worker_t *w, ngx_uint_t i,
    ngx_log_t *log)
{
    int                         rc;
    time_t                      now;
    rb_segment_t               *segment;
    ngx_http_ringbloom_pair_t  *p;

    segment = ngx_http_ringbloom_segment(w, log);
    if (segment == NULL) {
        return NULL;
    }

    p = &w->pairs[i];

    if (p->h != NULL) {
        return p;
    }

    now = ngx_time();

    if (now < p->next_open) {
        return NULL;
    }

    p->next_open = now + NGX_HTTP_RINGBLOOM_RETRY;

    if (p->victims == NULL && p->conf->victims > 0) {
        p->victims = ngx_calloc(p->conf->victims * sizeof(ngx_str_t), log);
        if (p->victims == NULL) {
            return NULL;
        }
    }

    rc = rb_tinylfu_open(segment, (char *) p->conf->name.data,
                         p->conf->name.len, &p->h);
    if (rc != RB_OK) {
        p->h = NULL;
        ngx_http_ringbloom_fail(w, &p->failing, log,
                                "cannot open TinyLFU pair", &p->conf->name,
                                rb_strerror(rc));
        return NULL;
    }

    return p;
}


/*
 * The decision for key: 1 (admit), 0 (not), or an RB_E* code.  An
 * admitted key is kept as a victim, in the oldest's place once victims=
 * are kept.
 */
static int
ngx_http_ringbloom_tinylfu_decide(ngx_http_ringbloom_pair_t *p,
    ngx_str_t *key, ngx_log_t *log)
{
    int         rc, beaten;
    u_char     *copy;
    ngx_str_t  *victim;

    if (p->count < p->conf->victims) {
        victim = NULL;

    } else {
        victim = &p->victims[p->head];

        rc = rb_tinylfu_admit_h(p->h, victim->data, victim->len, key->data,
                                key->len, &beaten);
        if (rc != RB_OK) {
            return rc;
        }

        if (beaten) {
            return 0;
        }
    }

    if (key->len > NGX_HTTP_RINGBLOOM_VICTIM_LEN) {
        return 1;
    }

    copy = ngx_alloc(key->len ? key->len : 1, log);
    if (copy == NULL) {
        return 1;   /* admitted, not kept */
    }

    ngx_memcpy(copy, key->data, key->len);

    if (victim == NULL) {
        victim = &p->victims[(p->head + p->count) % p->conf->victims];
        p->count++;

    } else {
        ngx_free(victim->data);
        p->head = (p->head + 1) % p->conf->victims;
    }

    victim->data = copy;
    victim->len = key->len;

    return 1;
}


/* ringbloom_tinylfu's $var: "1" if TinyLFU admits the key, else "0". */
ngx_int_t
ngx_http_ringbloom_tinylfu_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_ringbloom_key_t *rk = (ngx_http_ringbloom_key_t *) data;

    int                           rc;
    ngx_str_t                     key, *answer;
    ngx_http_ringbloom_pair_t    *p;
    ngx_http_ringbloom_worker_t  *w;

    if (ngx_http_ringbloom_worker_key(r, rk, &w, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (key.len == 0) {
        /* Never recorded (the daemon refuses empty keys): never admitted. */
        return ngx_http_ringbloom_set_value(v, ngx_http_ringbloom_tinylfu_no.data,
                                            ngx_http_ringbloom_tinylfu_no.len);
    }

    p = ngx_http_ringbloom_pair(w, rk->filter, r->connection->log);
    if (p == NULL) {
        return ngx_http_ringbloom_fallback(r, rk, v,
                                           &ngx_http_ringbloom_tinylfu_no);
    }

    rc = ngx_http_ringbloom_tinylfu_decide(p, &key, r->connection->log);
    if (rc < 0) {
        ngx_http_ringbloom_fail(w, &p->failing, r->connection->log,
                                "admission failed in TinyLFU pair",
                                &p->conf->name, rb_strerror(rc));
        return ngx_http_ringbloom_fallback(r, rk, v,
                                           &ngx_http_ringbloom_tinylfu_no);
    }

    ngx_http_ringbloom_cleared(w, &p->failing, r->connection->log,
                               "TinyLFU pair", &p->conf->name);

    answer = rc ? &ngx_http_ringbloom_tinylfu_yes
                : &ngx_http_ringbloom_tinylfu_no;

    return ngx_http_ringbloom_set_value(v, answer->data, answer->len);
}
