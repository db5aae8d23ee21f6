/*
 * ngx_http_ringbloom_worker.c - the worker's state: the one a worker
 * process has (nginx workers are single-threaded), set up for a
 * configuration on first use and released at exit.
 *
 * The state belongs to the configuration whose generation it records; a
 * worker that re-reads its configuration without a new process
 * (master_process off) rebuilds it on first use.  Setting up allocates the
 * filter and pair tables and the admit buffer and opens nothing: the reader attaches
 * and the admits connect on demand.  Releasing closes what they opened.
 * Request handlers get the state here, with the request's key
 * (ngx_http_ringbloom_worker_key).  Calls no other file of the module.
 */

#include "ngx_http_ringbloom.h"

#include <resp_read.h>


static ngx_http_ringbloom_worker_t  ngx_http_ringbloom_worker;


/* Closes a TinyLFU pair's handle and frees the keys it keeps. */
static void
ngx_http_ringbloom_worker_close_pair(ngx_http_ringbloom_pair_t *p)
{
    ngx_queue_t  *q;

    rb_tinylfu_close(p->h);

    while (!ngx_queue_empty(&p->lru)) {
        q = ngx_queue_head(&p->lru);
        ngx_queue_remove(q);
        ngx_free(ngx_queue_data(q, ngx_http_ringbloom_kept_t, queue));
    }
}


/*
 * Releases what w holds (retry timer, connection and its reply reader,
 * admit buffer, filter and pair handles, the pairs' kept keys, segment)
 * and leaves it unset.
 */
void
ngx_http_ringbloom_worker_close(ngx_http_ringbloom_worker_t *w)
{
    ngx_uint_t  i;

    if (w->retry.timer_set) {
        ngx_del_timer(&w->retry);
    }

    if (w->connection != NULL) {
        ngx_close_connection(w->connection);
        w->connection = NULL;
    }

    rbi_reader_free(w->replies);

    if (w->start != NULL) {
        ngx_free(w->start);
    }

    if (w->filters != NULL) {
        /* Filter handles must be closed before their segment. */
        for (i = 0; i < w->nfilters; i++) {
            rb_bloom_close(w->filters[i].bloom);
        }

        ngx_free(w->filters);
    }

    if (w->pairs != NULL) {
        for (i = 0; i < w->npairs; i++) {
            ngx_http_ringbloom_worker_close_pair(&w->pairs[i]);
        }

        ngx_free(w->pairs);
    }

    rb_segment_close(w->segment);

    ngx_memzero(w, sizeof(ngx_http_ringbloom_worker_t));
}


/*
 * Sets w up for rmcf: filter table and admit buffer, nothing attached yet.
 * On failure w stays unset (generation 0) and is tried again on next use.
 */
static ngx_int_t
ngx_http_ringbloom_worker_init(ngx_http_ringbloom_worker_t *w,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_log_t *log)
{
    ngx_str_t                       *names;
    ngx_uint_t                       i;
    ngx_http_ringbloom_pair_conf_t  *pairs;

    if (w->generation != 0) {
        ngx_http_ringbloom_worker_close(w);
    }

    w->conf = rmcf;

    if (rmcf->filters.nelts > 0) {
        w->filters = ngx_calloc(rmcf->filters.nelts
                                * sizeof(ngx_http_ringbloom_filter_t), log);
        if (w->filters == NULL) {
            goto failed;
        }

        w->nfilters = rmcf->filters.nelts;
        names = rmcf->filters.elts;

        for (i = 0; i < w->nfilters; i++) {
            w->filters[i].name = &names[i];
        }
    }

    if (rmcf->pairs.nelts > 0) {
        w->pairs = ngx_calloc(rmcf->pairs.nelts
                              * sizeof(ngx_http_ringbloom_pair_t), log);
        if (w->pairs == NULL) {
            goto failed;
        }

        w->npairs = rmcf->pairs.nelts;
        pairs = rmcf->pairs.elts;

        for (i = 0; i < w->npairs; i++) {
            w->pairs[i].conf = &pairs[i];
            ngx_rbtree_init(&w->pairs[i].kept, &w->pairs[i].sentinel,
                            ngx_str_rbtree_insert_value);
            ngx_queue_init(&w->pairs[i].lru);
        }
    }

    if (rmcf->admit_used || rmcf->report_used) {
        w->start = ngx_alloc(rmcf->admit_buffer, log);
        if (w->start == NULL) {
            goto failed;
        }

        w->end = w->start + rmcf->admit_buffer;
        w->pos = w->start;
        w->sent = w->start;
        w->last = w->start;
    }

    w->generation = rmcf->generation;

    return NGX_OK;

failed:

    ngx_http_ringbloom_worker_close(w);
    return NGX_ERROR;
}


/* The worker's state for rmcf (set up now if it was not), or NULL. */
ngx_http_ringbloom_worker_t *
ngx_http_ringbloom_worker_get(ngx_http_ringbloom_main_conf_t *rmcf,
    ngx_log_t *log)
{
    ngx_http_ringbloom_worker_t  *w;

    w = &ngx_http_ringbloom_worker;

    if (w->generation != rmcf->generation
        && ngx_http_ringbloom_worker_init(w, rmcf, log) != NGX_OK)
    {
        return NULL;
    }

    return w;
}


/*
 * What a request's handler starts with: *w, the worker's state for rk's
 * configuration, and *key, the value of rk's key (its data never NULL: ""
 * when empty).  NGX_OK, or NGX_ERROR.
 */
ngx_int_t
ngx_http_ringbloom_worker_key(ngx_http_request_t *r,
    ngx_http_ringbloom_key_t *rk, ngx_http_ringbloom_worker_t **w,
    ngx_str_t *key)
{
    *w = ngx_http_ringbloom_worker_get(rk->conf, r->connection->log);
    if (*w == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_complex_value(r, &rk->key, key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (key->len == 0) {
        key->data = (u_char *) "";
    }

    return NGX_OK;
}


/* The worker's state if it is set up, else NULL (nothing to release). */
ngx_http_ringbloom_worker_t *
ngx_http_ringbloom_worker_active(void)
{
    if (ngx_http_ringbloom_worker.generation == 0) {
        return NULL;
    }

    return &ngx_http_ringbloom_worker;
}
