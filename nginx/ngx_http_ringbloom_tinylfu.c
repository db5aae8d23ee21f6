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
 *     entries, kept by an MD5 of their key in its zone).  So each worker
 *     keeps a model of it: the last victims= keys it admitted, least
 *     recently used last, a hit moving a key first (the log phase of
 *     "ringbloom_admit PAIR KEY tinylfu" reports nginx's cache hits:
 *     ngx_http_ringbloom_tinylfu_hit), and takes the last as the victim.
 *     While fewer are kept (the cache filling) every candidate is
 *     admitted; an admitted candidate evicts the victim from the model.  A
 *     candidate the model holds already (nginx dropped it: expired, or
 *     evicted sooner) is admitted and made first.  A key longer than
 *     NGX_HTTP_RINGBLOOM_VICTIM_LEN is decided but not kept; memory is at
 *     most victims= keys of that length and their nodes.
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
 * Pair i with its handle open, or NULL (then opening is retried at most
 * once a second).
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


/* The kept key equal to key (hash: its crc32), or NULL. */
static ngx_http_ringbloom_kept_t *
ngx_http_ringbloom_kept(ngx_http_ringbloom_pair_t *p, ngx_str_t *key,
    uint32_t hash)
{
    /* sn is the first member: the node found is the kept key. */
    return (ngx_http_ringbloom_kept_t *) ngx_str_rbtree_lookup(&p->kept, key,
                                                               hash);
}


/* Makes k the most recently used. */
static void
ngx_http_ringbloom_kept_first(ngx_http_ringbloom_pair_t *p,
    ngx_http_ringbloom_kept_t *k)
{
    ngx_queue_remove(&k->queue);
    ngx_queue_insert_head(&p->lru, &k->queue);
}


/*
 * A cache hit of key (the log phase of ringbloom_admit ... tinylfu): a key
 * the model keeps becomes its most recently used, as in nginx's cache.
 */
void
ngx_http_ringbloom_tinylfu_hit(ngx_http_ringbloom_pair_t *p, ngx_str_t *key)
{
    ngx_http_ringbloom_kept_t  *k;

    if (p->count == 0) {
        return;
    }

    k = ngx_http_ringbloom_kept(p, key, ngx_crc32_long(key->data, key->len));
    if (k != NULL) {
        ngx_http_ringbloom_kept_first(p, k);
    }
}


/*
 * The decision for key: 1 (admit), 0 (not), or an RB_E* code.  An
 * admitted key is kept, the most recently used, in the victim's place once
 * victims= are kept.
 */
static int
ngx_http_ringbloom_tinylfu_decide(ngx_http_ringbloom_pair_t *p,
    ngx_str_t *key, ngx_log_t *log)
{
    int                         rc, beaten;
    uint32_t                    hash;
    ngx_http_ringbloom_kept_t  *k, *victim;

    hash = ngx_crc32_long(key->data, key->len);

    k = ngx_http_ringbloom_kept(p, key, hash);
    if (k != NULL) {
        ngx_http_ringbloom_kept_first(p, k);
        return 1;
    }

    if (p->count >= p->conf->victims) {
        victim = ngx_queue_data(ngx_queue_last(&p->lru),
                                ngx_http_ringbloom_kept_t, queue);

        rc = rb_tinylfu_admit_h(p->h, victim->sn.str.data, victim->sn.str.len,
                                key->data, key->len, &beaten);
        if (rc != RB_OK) {
            return rc;
        }

        if (beaten) {
            return 0;
        }

        ngx_rbtree_delete(&p->kept, &victim->sn.node);
        ngx_queue_remove(&victim->queue);
        ngx_free(victim);
        p->count--;
    }

    if (key->len > NGX_HTTP_RINGBLOOM_VICTIM_LEN) {
        return 1;
    }

    k = ngx_alloc(sizeof(ngx_http_ringbloom_kept_t) + key->len, log);
    if (k == NULL) {
        return 1;   /* admitted, not kept */
    }

    k->sn.node.key = hash;
    k->sn.str.len = key->len;
    k->sn.str.data = (u_char *) (k + 1);
    ngx_memcpy(k->sn.str.data, key->data, key->len);

    ngx_rbtree_insert(&p->kept, &k->sn.node);
    ngx_queue_insert_head(&p->lru, &k->queue);
    p->count++;

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
