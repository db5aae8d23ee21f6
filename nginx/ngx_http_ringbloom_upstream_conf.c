/*
 * ngx_http_ringbloom_upstream_conf.c - ringbloom_hash's configuration: the
 * directive's parameters, the upstream's peers (nginx's round robin sets
 * them up) and the shared zone that balance_factor and report need, kept
 * across a reload while the upstream keeps its number of peers
 * (ngx_http_ringbloom_upstream.c uses them per request).  Calls no other
 * file of the module.
 */

#include "ngx_http_ringbloom.h"


/* The zone's tag: the same in every configuration, so a reload keeps it. */
static ngx_uint_t  ngx_http_ringbloom_zone_tag;


/*
 * report_status=CODE[,CODE...]: the response statuses (400..599) that
 * count as a report's failures, into ucf->report_status.  NGX_OK, or
 * NGX_ERROR for a bad list.
 */
static ngx_int_t
ngx_http_ringbloom_report_status(ngx_http_ringbloom_upstream_conf_t *ucf,
    u_char *p, u_char *last)
{
    u_char     *comma;
    ngx_int_t   code;

    for ( ;; ) {
        comma = ngx_strlchr(p, last, ',');
        if (comma == NULL) {
            comma = last;
        }

        code = ngx_atoi(p, comma - p);
        if (code < 400 || code > 599) {
            return NGX_ERROR;
        }

        ucf->report_status[code / 64] |= (uint64_t) 1 << (code % 64);

        if (comma == last) {
            return NGX_OK;
        }

        p = comma + 1;
    }
}


/*
 * ringbloom_hash KEY [balance_factor=C] [report=N] [report_timeout=TIME]
 * [hold_down=TIME] [report_status=CODE,...] in an upstream {}: C >= 1 (up
 * to three decimals), N >= 1, the last three only with report=.  Fills
 * ucf (the upstream's), marks rmcf used, and makes init the upstream's
 * init_upstream.
 */
char *
ngx_http_ringbloom_upstream_directive(ngx_conf_t *cf,
    ngx_http_ringbloom_upstream_conf_t *ucf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_http_upstream_init_pt init)
{
    ngx_int_t                          n;
    ngx_str_t                         *value, s;
    ngx_uint_t                         i, status;
    ngx_http_upstream_srv_conf_t      *uscf;
    ngx_http_compile_complex_value_t   ccv;

    if (ucf->conf != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    status = 0;

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = &ucf->key;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    for (i = 2; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "balance_factor=", 15) == 0) {
            n = ngx_atofp(value[i].data + 15, value[i].len - 15, 3);
            if (n == NGX_ERROR || n < 1000) {
                goto invalid;
            }

            ucf->balance = (ngx_uint_t) n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "report=", 7) == 0) {
            n = ngx_atoi(value[i].data + 7, value[i].len - 7);
            if (n == NGX_ERROR || n < 1) {
                goto invalid;
            }

            ucf->report = (ngx_uint_t) n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "report_timeout=", 15) == 0) {
            s.data = value[i].data + 15;
            s.len = value[i].len - 15;

            n = ngx_parse_time(&s, 1);
            if (n == NGX_ERROR || n < 1) {
                goto invalid;
            }

            ucf->report_timeout = (time_t) n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "hold_down=", 10) == 0) {
            s.data = value[i].data + 10;
            s.len = value[i].len - 10;

            n = ngx_parse_time(&s, 1);
            if (n == NGX_ERROR || n < 1) {
                goto invalid;
            }

            ucf->hold_down = (time_t) n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "report_status=", 14) == 0) {
            if (ngx_http_ringbloom_report_status(ucf, value[i].data + 14,
                                                 value[i].data + value[i].len)
                != NGX_OK)
            {
                goto invalid;
            }

            status = 1;
            continue;
        }

        goto invalid;
    }

    if ((ucf->report_timeout || ucf->hold_down || status) && !ucf->report) {
        return "takes report_timeout=, hold_down= and report_status= only "
               "with report=";
    }

    if (ucf->hold_down == 0) {
        ucf->hold_down = NGX_HTTP_RINGBLOOM_HOLD_DOWN;
    }

    ucf->conf = rmcf;
    rmcf->used = 1;

    if (ucf->report) {
        rmcf->report_used = 1;
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    uscf->peer.init_upstream = init;
    uscf->flags = NGX_HTTP_UPSTREAM_CREATE
                  |NGX_HTTP_UPSTREAM_WEIGHT
                  |NGX_HTTP_UPSTREAM_MAX_CONNS
                  |NGX_HTTP_UPSTREAM_MAX_FAILS
                  |NGX_HTTP_UPSTREAM_FAIL_TIMEOUT
                  |NGX_HTTP_UPSTREAM_DOWN;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "ringbloom_hash: invalid parameter \"%V\"", &value[i]);
    return NGX_CONF_ERROR;
}


/* The crc32 of the peers' server strings, in order. */
static uint32_t
ngx_http_ringbloom_names_crc(ngx_http_upstream_rr_peers_t *peers)
{
    uint32_t                      crc;
    ngx_http_upstream_rr_peer_t  *peer;

    ngx_crc32_init(crc);

    for (peer = peers->peer; peer != NULL; peer = peer->next) {
        ngx_crc32_update(&crc, peer->server.data, peer->server.len);
        ngx_crc32_update(&crc, (u_char *) "", 1);
    }

    ngx_crc32_final(crc);

    return crc;
}


/* Sets the zone up: the previous configuration's slots if they fit. */
static ngx_int_t
ngx_http_ringbloom_zone_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_http_ringbloom_upstream_conf_t *ucf = zone->data;
    ngx_http_ringbloom_upstream_conf_t *old = data;

    size_t                     size;
    ngx_uint_t                 i;
    ngx_slab_pool_t           *shpool;
    ngx_http_ringbloom_shm_t  *shm;

    if (old != NULL && old->shm != NULL
        && old->shm->npeers == ucf->npeers)
    {
        shm = old->shm;

        if (shm->names != ucf->names) {
            for (i = 0; i < shm->npeers; i++) {
                shm->slot[i].fails = 0;
                shm->slot[i].down = 0;
                shm->slot[i].probe = 0;
            }

            shm->names = ucf->names;
        }

        ucf->shm = shm;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) zone->shm.addr;
    size = offsetof(ngx_http_ringbloom_shm_t, slot)
           + ucf->npeers * sizeof(ngx_http_ringbloom_slot_t);

    shm = ngx_slab_calloc(shpool, size);
    if (shm == NULL) {
        return NGX_ERROR;
    }

    shm->npeers = ucf->npeers;
    shm->names = ucf->names;
    ucf->shm = shm;

    return NGX_OK;
}


/*
 * init_upstream of an upstream with ringbloom_hash (at configuration):
 * nginx's round robin peers, then the zone if balance_factor or report
 * needs one.  The caller sets us->peer.init.
 */
ngx_int_t
ngx_http_ringbloom_upstream_init(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_ringbloom_upstream_conf_t *ucf)
{
    size_t                         size;
    ngx_str_t                      name;
    ngx_http_upstream_rr_peers_t  *peers;

    if (ngx_http_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    peers = us->peer.data;
    ucf->npeers = peers->number;
    ucf->names = ngx_http_ringbloom_names_crc(peers);

    if (ucf->balance == 0 && ucf->report == 0) {
        return NGX_OK;
    }

    name.len = sizeof("ringbloom_hash:") - 1 + us->host.len;
    name.data = ngx_pnalloc(cf->pool, name.len);
    if (name.data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(name.data, "ringbloom_hash:%V", &us->host);

    /* The slab pool's own pages, then the slots (the size names the count). */
    size = 8 * ngx_pagesize + offsetof(ngx_http_ringbloom_shm_t, slot)
           + ucf->npeers * sizeof(ngx_http_ringbloom_slot_t);

    ucf->zone = ngx_shared_memory_add(cf, &name, size,
                                      &ngx_http_ringbloom_zone_tag);
    if (ucf->zone == NULL) {
        return NGX_ERROR;
    }

    if (ucf->zone->data != NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "ringbloom_hash: zone \"%V\" is already in use",
                           &name);
        return NGX_ERROR;
    }

    ucf->zone->init = ngx_http_ringbloom_zone_init;
    ucf->zone->data = ucf;

    return NGX_OK;
}
