/*
 * ngx_http_ringbloom_admit.c - ringbloom_admit: after the response, queues
 * "BF.ADD FILTER KEY" for the daemon in the worker's bounded buffer
 * (ringbloom_admit_buffer, 1m), unless the filter already holds the key;
 * in TinyLFU mode (ringbloom_admit PAIR KEY tinylfu) "ADMIT.TOUCH PAIR KEY"
 * for every request, since TinyLFU counts every access;
 * ngx_http_ringbloom_admit_conn.c takes it from there.  ringbloom_hash's
 * reports (RING.DOWN / RING.UP) take the same buffer and connection.  When the buffer
 * is full the key is dropped and counted ($ringbloom_admit_drops; the
 * first drop is logged, then at most one a minute).  Admits are at most
 * once: a heuristic that routing never waits for.
 */

#include "ngx_http_ringbloom.h"

#include <resp_enc.h>


/*
 * Whether need more bytes fit after last, compacting first if that frees
 * the room and moves no more bytes than were sent since the last
 * compaction, so copying costs at most one byte per byte sent.
 */
static ngx_uint_t
ngx_http_ringbloom_admit_room(ngx_http_ringbloom_worker_t *w, size_t need)
{
    size_t  live, done;

    if ((size_t) (w->end - w->last) >= need) {
        return 1;
    }

    live = (size_t) (w->last - w->pos);
    done = (size_t) (w->pos - w->start);

    if (done < live || done + (size_t) (w->end - w->last) < need) {
        return 0;
    }

    ngx_memmove(w->start, w->pos, live);
    w->sent = w->start + (w->sent - w->pos);
    w->pos = w->start;
    w->last = w->start + live;

    return 1;
}


/*
 * Queues one command (argc bulk strings); drops (and counts) it if there
 * is no room.
 */
static void
ngx_http_ringbloom_admit_enqueue(ngx_http_ringbloom_worker_t *w, int argc,
    const char **argv, const size_t *argl, ngx_log_t *log)
{
    /* Encoded by the project's one RESP encoder (lib/conn/resp_enc.h). */
    if (!ngx_http_ringbloom_admit_room(w, rbi_resp_command_size(argc, argl))) {
        w->drops++;

        if (ngx_http_ringbloom_admit_log_due(w->drops, &w->drops_logged)) {
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "ringbloom: admit buffer full (%uz bytes "
                          "waiting for \"%V\"), %s dropped (%uL dropped "
                          "so far)", (size_t) (w->last - w->pos),
                          &w->conf->socket, argv[0], w->drops);
        }

        return;
    }

    w->last = (u_char *) rbi_resp_command_put((char *) w->last, argc, argv,
                                              argl);
}


/*
 * Queues a command for the daemon on the admits' buffer and connection
 * (ringbloom_hash's RING.DOWN / RING.UP reports) and moves it on without
 * waiting; at most once, as admits.
 */
void
ngx_http_ringbloom_admit_command(ngx_http_ringbloom_worker_t *w, int argc,
    const char **argv, const size_t *argl, ngx_log_t *log)
{
    if (w->start == NULL) {
        return;     /* no buffer: nothing in this configuration sends */
    }

    ngx_http_ringbloom_admit_enqueue(w, argc, argv, argl, log);
    ngx_http_ringbloom_admit_kick(w, log);
}


/*
 * Whether an add of a key filter f already holds may still change it (an
 * aging filter's refresh); looked up at most once a second, since a filter
 * may be re-created with other flags.  Unknown counts as yes.
 */
static ngx_uint_t
ngx_http_ringbloom_refreshes(ngx_http_ringbloom_filter_t *f)
{
    time_t           now;
    rb_bloom_stat_t  st;

    now = ngx_time();

    if (f->checked != now) {
        f->checked = now;
        f->refreshes = rb_bloom_info(f->bloom, &st) != RB_OK
                       || (st.flags & RB_BLOOM_AGING);
    }

    return f->refreshes;
}


/* Whether nginx's cache answered r (a hit, stale, updating, revalidated). */
static ngx_uint_t
ngx_http_ringbloom_cache_hit(ngx_http_request_t *r)
{
#if (NGX_HTTP_CACHE)
    if (r->upstream != NULL) {
        switch (r->upstream->cache_status) {
        case NGX_HTTP_CACHE_HIT:
        case NGX_HTTP_CACHE_STALE:
        case NGX_HTTP_CACHE_UPDATING:
        case NGX_HTTP_CACHE_REVALIDATED:
            return 1;
        default:
            break;
        }
    }
#else
    (void) r;
#endif

    return 0;
}


/*
 * The log phase's work for a location with ringbloom_admit: records the
 * key after the response, so $seen (or TinyLFU's answer) computed for
 * this request never depends on its own admit.  TinyLFU mode sends
 * ADMIT.TOUCH always.  A key the filter already (maybe) holds is not
 * sent, unless the filter is an aging one: there an add copies a key held
 * only by an older generation into the current one, which keeps a
 * requested key seen.
 */
ngx_int_t
ngx_http_ringbloom_admit_request(ngx_http_request_t *r,
    ngx_http_ringbloom_key_t *admit)
{
    size_t                        argl[3];
    ngx_str_t                     key, *name;
    const char                   *argv[3];
    ngx_http_ringbloom_filter_t  *f;
    ngx_http_ringbloom_worker_t  *w;

    if (ngx_http_ringbloom_worker_key(r, admit, &w, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (key.len == 0) {
        /* The daemon refuses empty keys. */
        return NGX_OK;
    }

    if (admit->tinylfu) {
        /* Every access counts, so every one is sent; a cache hit also
         * tells the worker's model of the cache. */
        argv[0] = "ADMIT.TOUCH";
        name = &w->pairs[admit->filter].conf->name;

        if (ngx_http_ringbloom_cache_hit(r)) {
            ngx_http_ringbloom_tinylfu_hit(&w->pairs[admit->filter], &key);
        }

    } else {
        f = ngx_http_ringbloom_filter(w, admit->filter, r->connection->log);

        if (f != NULL
            && !ngx_http_ringbloom_refreshes(f)
            && rb_bloom_contains(f->bloom, key.data, key.len) == 1)
        {
            return NGX_OK;
        }

        argv[0] = "BF.ADD";
        name = w->filters[admit->filter].name;
    }

    argl[0] = ngx_strlen(argv[0]);
    argv[1] = (const char *) name->data;
    argl[1] = name->len;
    argv[2] = (const char *) key.data;
    argl[2] = key.len;

    ngx_http_ringbloom_admit_command(w, 3, argv, argl, r->connection->log);

    return NGX_OK;
}


/* ---- $ringbloom_admit_drops, $ringbloom_admit_errors --------------------- */

/* This worker's count of drops or of error replies; data: the main conf. */
static ngx_int_t
ngx_http_ringbloom_count_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data, ngx_uint_t errors)
{
    u_char                       *p, *last;
    ngx_http_ringbloom_worker_t  *w;

    w = ngx_http_ringbloom_worker_get((ngx_http_ringbloom_main_conf_t *) data,
                                      r->connection->log);
    if (w == NULL) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    last = ngx_sprintf(p, "%uL", errors ? w->errors : w->drops);

    return ngx_http_ringbloom_set_value(v, p, last - p);
}


static ngx_int_t
ngx_http_ringbloom_drops_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    return ngx_http_ringbloom_count_variable(r, v, data, 0);
}


static ngx_int_t
ngx_http_ringbloom_errors_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    return ngx_http_ringbloom_count_variable(r, v, data, 1);
}


static ngx_http_variable_t  ngx_http_ringbloom_admit_vars[] = {

    { ngx_string("ringbloom_admit_drops"), NULL,
      ngx_http_ringbloom_drops_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("ringbloom_admit_errors"), NULL,
      ngx_http_ringbloom_errors_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


/*
 * Adds $ringbloom_admit_drops and $ringbloom_admit_errors, which every
 * configuration has (preconfiguration); their data is rmcf.
 */
ngx_int_t
ngx_http_ringbloom_admit_variables(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_ringbloom_admit_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = (uintptr_t) rmcf;
    }

    return NGX_OK;
}
