/*
 * ngx_http_ringbloom_upstream.c - ringbloom_hash: an upstream balancer that
 * sends a request to the first live peer of its key's preference list on
 * the instance's ring, optionally with bounded loads and with failures
 * reported to the daemon.
 *
 *   - the preference list is rb_ring_lookup_n(KEY): the first distinct ring
 *     nodes clockwise from the key, at most min(peers + 8, 64) of them; a
 *     ring node names a peer when its name equals the peer's server string
 *     (as written on its "server" line) or its address ("127.0.0.1:8081");
 *     nodes that name no peer are passed over;
 *   - a peer is live as nginx's round robin judges it (down, max_fails /
 *     fail_timeout: peer->fails, checked; max_conns) and not tried yet by
 *     this request (the round robin's tried bitmap), so proxy_next_upstream
 *     moves on to the next distinct node of the key's list; a failed peer
 *     is skipped in this nginx only: the shared ring is not touched unless
 *     "report" says so;
 *   - with balance_factor=c (bounded loads, Mirrokni, Thorup, Zadimoghaddam
 *     2018), a peer is passed over while its requests in flight plus this
 *     one would exceed ceil(c * (total in flight + 1) / live peers), live
 *     being those neither down nor failed; the counts are shared by all
 *     workers (this upstream's zone); if every usable peer of the list is
 *     over the bound, the first usable one is used;
 *   - with report=N, the Nth consecutive failure of a peer (counted in the
 *     zone across all workers, reset by a success) queues "RING.DOWN
 *     <server>" on the admits' connection to the daemon, which then leaves
 *     the node out of every lookup (unless that would leave more than its
 *     ring-down-max-percent of the nodes not up: then it refuses);
 *     a failure is a try that got no response (connection refused or
 *     reset, timeout, no valid status line) or one whose status
 *     report_status= lists; any other response is a success, whatever its
 *     status (an application's 5xx proves the server reachable);
 *   - a peer reported down stays down for hold_down (default 30 s): no
 *     probe and no RING.UP before, so a server failing and answering in
 *     turn changes the ring at most once per hold_down; then one request
 *     per report_timeout (default: the peer's fail_timeout), of any key
 *     and worker, tries the peer first (a probe: on failure
 *     proxy_next_upstream goes on to the key's list), and the first
 *     success queues "RING.UP <server>"; a failed probe of a peer the ring
 *     still has up (the daemon refused the report, or someone brought it
 *     up) queues RING.DOWN again;
 *   - without the segment (daemon never seen), when a lookup fails, for an
 *     empty key or a single peer, or when no node of the list is a usable
 *     peer, the request goes to nginx's round robin over the same peers
 *     (its counts and reports kept as above).
 *
 * Cost per try: one rb_ring_lookup_n (points walked * list length) and a
 * walk of the peer list per node of the list, under the peers' read lock.
 */

#include "ngx_http_ringbloom.h"


/* Longest preference list asked of the ring. */
#define NGX_HTTP_RINGBLOOM_PREFS_MAX  64


/* A request's balancer state; nginx's round robin data comes first. */
typedef struct {
    ngx_http_upstream_rr_peer_data_t     rrp;
    ngx_http_ringbloom_upstream_conf_t  *ucf;
    ngx_http_ringbloom_worker_t         *w;
    ngx_str_t                            key;
    ngx_http_ringbloom_slot_t           *counted; /* incremented by the
                                                     current try, or NULL */
    ngx_http_ringbloom_slot_t           *slot;    /* the current try's */
    ngx_str_t                           *server;  /* the current try's */
    ngx_http_request_t                  *request;
    ngx_uint_t                           probing; /* the current try is a
                                                     probe */
} ngx_http_ringbloom_peer_data_t;


/* What a try tells a report (ngx_http_ringbloom_outcome). */
enum {
    NGX_HTTP_RINGBLOOM_NEITHER = 0,
    NGX_HTTP_RINGBLOOM_SUCCESS,
    NGX_HTTP_RINGBLOOM_FAILURE
};


/* The preference list of the try being chosen (workers: one thread). */
static rb_node_t   ngx_http_ringbloom_prefs[NGX_HTTP_RINGBLOOM_PREFS_MAX];

/* A failed lookup was logged; cleared (and said) when one works again. */
static ngx_uint_t  ngx_http_ringbloom_lookup_failing;

/* The ring's nodes, read to see a reported peer's state (workers: one
 * thread); at most NGX_HTTP_RINGBLOOM_STATES_MAX of them. */
#define NGX_HTTP_RINGBLOOM_STATES_MAX  1024
static rb_node_t  *ngx_http_ringbloom_nodes;


static ngx_int_t ngx_http_ringbloom_get_peer(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_ringbloom_free_peer(ngx_peer_connection_t *pc,
    void *data, ngx_uint_t state);


/* A request's peer.init: the key, nginx's round robin state, our hooks. */
ngx_int_t
ngx_http_ringbloom_upstream_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us, ngx_http_ringbloom_upstream_conf_t *ucf)
{
    ngx_http_ringbloom_peer_data_t  *rp;

    rp = ngx_pcalloc(r->pool, sizeof(ngx_http_ringbloom_peer_data_t));
    if (rp == NULL) {
        return NGX_ERROR;
    }

    r->upstream->peer.data = &rp->rrp;

    if (ngx_http_upstream_init_round_robin_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    r->upstream->peer.get = ngx_http_ringbloom_get_peer;
    r->upstream->peer.free = ngx_http_ringbloom_free_peer;

    rp->ucf = ucf;
    rp->request = r;

    if (ngx_http_complex_value(r, &ucf->key, &rp->key) != NGX_OK) {
        return NGX_ERROR;
    }

    rp->w = ngx_http_ringbloom_worker_get(ucf->conf, r->connection->log);

    return NGX_OK;
}


/* ---- choosing a peer ------------------------------------------------------ */

/* Whether nginx's round robin would pass peer p (index i) over now. */
static ngx_uint_t
ngx_http_ringbloom_unusable(ngx_http_ringbloom_peer_data_t *rp,
    ngx_http_upstream_rr_peer_t *peer, ngx_uint_t i, time_t now)
{
    uintptr_t  m;

    m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));

    if (rp->rrp.tried[i / (8 * sizeof(uintptr_t))] & m) {
        return 1;
    }

    if (peer->down) {
        return 1;
    }

    if (peer->max_fails
        && peer->fails >= peer->max_fails
        && now - peer->checked <= peer->fail_timeout)
    {
        return 1;
    }

    return peer->max_conns && peer->conns >= peer->max_conns;
}


/* Whether a ring node names the peer: its server string or address. */
static ngx_uint_t
ngx_http_ringbloom_names(ngx_http_upstream_rr_peer_t *peer, rb_node_t *node)
{
    size_t  len;

    len = node->name_len;

    return (peer->server.len == len
            && ngx_memcmp(peer->server.data, node->name, len) == 0)
           || (peer->name.len == len
               && ngx_memcmp(peer->name.data, node->name, len) == 0);
}


/* The peer a ring node names, and its index; NULL if none. */
static ngx_http_upstream_rr_peer_t *
ngx_http_ringbloom_named_peer(ngx_http_upstream_rr_peers_t *peers,
    rb_node_t *node, ngx_uint_t *index)
{
    ngx_uint_t                    i;
    ngx_http_upstream_rr_peer_t  *peer;

    for (peer = peers->peer, i = 0; peer != NULL; peer = peer->next, i++) {
        if (ngx_http_ringbloom_names(peer, node)) {
            *index = i;
            return peer;
        }
    }

    return NULL;
}


/*
 * A peer reported down whose probe is due (claimed for this request, so
 * all workers together send one probe per report_timeout), or NULL.
 */
static ngx_http_upstream_rr_peer_t *
ngx_http_ringbloom_probe(ngx_http_ringbloom_peer_data_t *rp, time_t now,
    ngx_uint_t *index)
{
    time_t                        timeout;
    ngx_uint_t                    i;
    ngx_atomic_uint_t             due;
    ngx_http_ringbloom_slot_t    *slot;
    ngx_http_upstream_rr_peer_t  *peer;

    for (peer = rp->rrp.peers->peer, i = 0;
         peer != NULL && i < rp->ucf->shm->npeers;
         peer = peer->next, i++)
    {
        slot = &rp->ucf->shm->slot[i];
        due = slot->probe;

        if (slot->down == 0 || (time_t) due > now
            || ngx_http_ringbloom_unusable(rp, peer, i, now))
        {
            continue;
        }

        timeout = rp->ucf->report_timeout ? rp->ucf->report_timeout
                                          : peer->fail_timeout;

        if (ngx_atomic_cmp_set(&slot->probe, due,
                               (ngx_atomic_uint_t) (now + timeout)))
        {
            *index = i;
            return peer;
        }
    }

    return NULL;
}


/*
 * The bound on a peer's requests in flight with this one: ceil(c * (total
 * + 1) / live), live being the peers neither down nor failed; 0: no
 * bound.
 */
static ngx_uint_t
ngx_http_ringbloom_bound(ngx_http_ringbloom_peer_data_t *rp, time_t now)
{
    ngx_uint_t                    live, total;
    ngx_http_upstream_rr_peer_t  *peer;

    if (rp->ucf->balance == 0 || rp->ucf->shm == NULL) {
        return 0;
    }

    live = 0;

    for (peer = rp->rrp.peers->peer; peer != NULL; peer = peer->next) {
        if (!peer->down
            && !(peer->max_fails && peer->fails >= peer->max_fails
                 && now - peer->checked <= peer->fail_timeout))
        {
            live++;
        }
    }

    if (live == 0) {
        return 0;
    }

    total = (ngx_uint_t) rp->ucf->shm->total;

    /* balance is c in thousandths */
    return (rp->ucf->balance * (total + 1) + 1000 * live - 1) / (1000 * live);
}


/*
 * The first usable peer of the key's preference list within the bound (or
 * the first usable one if none is within it), its index in *index; NULL
 * if no node of the list is a usable peer or the list cannot be had.
 */
static ngx_http_upstream_rr_peer_t *
ngx_http_ringbloom_preferred(ngx_http_ringbloom_peer_data_t *rp,
    ngx_peer_connection_t *pc, time_t now, ngx_uint_t *index)
{
    int                           n, j;
    ngx_uint_t                    i, first_i, bound;
    rb_segment_t                 *seg;
    ngx_http_upstream_rr_peer_t  *peer, *first;

    seg = ngx_http_ringbloom_segment(rp->w, pc->log);
    if (seg == NULL) {
        return NULL;
    }

    n = rb_ring_lookup_n(seg, rp->key.data, rp->key.len,
                         ngx_http_ringbloom_prefs,
                         ngx_min(rp->rrp.peers->number + 8,
                                 NGX_HTTP_RINGBLOOM_PREFS_MAX));
    if (n < 0) {
        if (!ngx_http_ringbloom_lookup_failing) {
            ngx_http_ringbloom_lookup_failing = 1;
            ngx_log_error(NGX_LOG_WARN, pc->log, 0,
                          "ringbloom_hash: ring lookup failed on instance "
                          "\"%V\": %s; round robin until it works (logged "
                          "once)", &rp->w->conf->instance, rb_strerror(n));
        }

        return NULL;
    }

    if (ngx_http_ringbloom_lookup_failing) {
        ngx_http_ringbloom_lookup_failing = 0;
        ngx_log_error(NGX_LOG_NOTICE, pc->log, 0,
                      "ringbloom_hash: ring lookups on instance \"%V\" "
                      "work again", &rp->w->conf->instance);
    }

    bound = ngx_http_ringbloom_bound(rp, now);
    first = NULL;
    first_i = 0;

    for (j = 0; j < n; j++) {
        peer = ngx_http_ringbloom_named_peer(rp->rrp.peers,
                                             &ngx_http_ringbloom_prefs[j], &i);

        if (peer == NULL || ngx_http_ringbloom_unusable(rp, peer, i, now)) {
            continue;
        }

        if (bound == 0 || rp->ucf->shm->slot[i].inflight + 1 <= bound) {
            *index = i;
            return peer;
        }

        if (first == NULL) {
            first = peer;
            first_i = i;
        }
    }

    *index = first_i;

    return first;
}


/* Counts the current try in its slot (zone), and remembers it. */
static void
ngx_http_ringbloom_count(ngx_http_ringbloom_peer_data_t *rp, ngx_uint_t i)
{
    ngx_http_ringbloom_shm_t  *shm;

    rp->slot = NULL;
    rp->server = &rp->rrp.current->server;

    shm = rp->ucf->shm;

    if (shm == NULL || i >= shm->npeers) {
        return;
    }

    rp->slot = &shm->slot[i];

    if (rp->ucf->balance) {
        (void) ngx_atomic_fetch_add(&rp->slot->inflight, 1);
        (void) ngx_atomic_fetch_add(&shm->total, 1);
        rp->counted = rp->slot;
    }
}


/* The index of the round robin's current peer. */
static ngx_uint_t
ngx_http_ringbloom_current_index(ngx_http_ringbloom_peer_data_t *rp)
{
    ngx_uint_t                    i;
    ngx_http_upstream_rr_peer_t  *peer;

    for (peer = rp->rrp.peers->peer, i = 0; peer != NULL;
         peer = peer->next, i++)
    {
        if (peer == rp->rrp.current) {
            return i;
        }
    }

    return (ngx_uint_t) -1;   /* a backup peer: not counted */
}


static ngx_int_t
ngx_http_ringbloom_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_ringbloom_peer_data_t *rp = data;

    time_t                        now;
    ngx_int_t                     rc;
    ngx_uint_t                    i;
    uintptr_t                     m;
    ngx_http_upstream_rr_peer_t  *peer;

    peer = NULL;
    i = 0;
    rp->probing = 0;

    if (rp->w != NULL && rp->key.len > 0 && rp->rrp.peers->number > 1) {
        now = ngx_time();

        ngx_http_upstream_rr_peers_rlock(rp->rrp.peers);

        if (rp->ucf->report && rp->ucf->shm != NULL) {
            peer = ngx_http_ringbloom_probe(rp, now, &i);
            rp->probing = (peer != NULL);
        }

        if (peer == NULL) {
            peer = ngx_http_ringbloom_preferred(rp, pc, now, &i);
        }

        if (peer != NULL) {
            ngx_http_upstream_rr_peer_lock(rp->rrp.peers, peer);

            rp->rrp.current = peer;

            pc->sockaddr = peer->sockaddr;
            pc->socklen = peer->socklen;
            pc->name = &peer->name;
            pc->cached = 0;
            pc->connection = NULL;

            peer->conns++;

            if (now - peer->checked > peer->fail_timeout) {
                peer->checked = now;
            }

            ngx_http_upstream_rr_peer_unlock(rp->rrp.peers, peer);

            m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));
            rp->rrp.tried[i / (8 * sizeof(uintptr_t))] |= m;
        }

        ngx_http_upstream_rr_peers_unlock(rp->rrp.peers);
    }

    if (peer == NULL) {
        rc = ngx_http_upstream_get_round_robin_peer(pc, &rp->rrp);
        if (rc != NGX_OK) {
            return rc;
        }

        i = ngx_http_ringbloom_current_index(rp);
    }

    ngx_http_ringbloom_count(rp, i);

    return NGX_OK;
}


/* ---- after a try ------------------------------------------------------------ */

/* Queues "RING.DOWN server" or "RING.UP server" for the daemon. */
static void
ngx_http_ringbloom_report(ngx_http_ringbloom_peer_data_t *rp,
    const char *verb, ngx_log_t *log)
{
    size_t       argl[2];
    const char  *argv[2];

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "ringbloom_hash: %s %V", verb, rp->server);

    if (rp->w == NULL) {
        return;
    }

    argv[0] = verb;
    argl[0] = ngx_strlen(verb);
    argv[1] = (const char *) rp->server->data;
    argl[1] = rp->server->len;

    ngx_http_ringbloom_admit_command(rp->w, 2, argv, argl, log);
}


/*
 * A try's outcome for reports: a response is a failure if report_status=
 * lists its status, else a success; a try without one (status_n 0: nginx
 * clears the upstream's headers before every new try) is a failure if
 * nginx says so (refused, reset, timed out, no valid status line), else
 * neither (the client went away first).
 */
static ngx_uint_t
ngx_http_ringbloom_outcome(ngx_http_ringbloom_peer_data_t *rp,
    ngx_uint_t state)
{
    ngx_uint_t  status;

    status = rp->request->upstream->headers_in.status_n;

    if (status != 0) {
        if (status < 64 * 10
            && (rp->ucf->report_status[status / 64] >> (status % 64)) & 1)
        {
            return NGX_HTTP_RINGBLOOM_FAILURE;
        }

        return NGX_HTTP_RINGBLOOM_SUCCESS;
    }

    return (state & NGX_PEER_FAILED) ? NGX_HTTP_RINGBLOOM_FAILURE
                                     : NGX_HTTP_RINGBLOOM_NEITHER;
}


/*
 * Whether the ring the worker reads has the current try's peer up (a node
 * named by its server string or address); 0 if it is not up, not there,
 * or the ring cannot be read or holds more than
 * NGX_HTTP_RINGBLOOM_STATES_MAX nodes.  Cost: one copy of the node list.
 */
static ngx_uint_t
ngx_http_ringbloom_ring_has_up(ngx_http_ringbloom_peer_data_t *rp,
    ngx_log_t *log)
{
    size_t           i, count;
    rb_segment_t    *seg;
    rb_ring_stat_t   st;

    seg = ngx_http_ringbloom_segment(rp->w, log);

    if (seg == NULL || rb_ring_stat(seg, &st) != RB_OK
        || st.nodes > NGX_HTTP_RINGBLOOM_STATES_MAX)
    {
        return 0;
    }

    if (ngx_http_ringbloom_nodes == NULL) {
        ngx_http_ringbloom_nodes = ngx_alloc(NGX_HTTP_RINGBLOOM_STATES_MAX
                                             * sizeof(rb_node_t), log);
        if (ngx_http_ringbloom_nodes == NULL) {
            return 0;
        }
    }

    if (rb_ring_nodes(seg, ngx_http_ringbloom_nodes,
                      NGX_HTTP_RINGBLOOM_STATES_MAX, &count) != RB_OK)
    {
        return 0;
    }

    for (i = 0; i < count && i < NGX_HTTP_RINGBLOOM_STATES_MAX; i++) {
        if (ngx_http_ringbloom_names(rp->rrp.current,
                                     &ngx_http_ringbloom_nodes[i]))
        {
            return ngx_http_ringbloom_nodes[i].state == RB_NODE_UP;
        }
    }

    return 0;
}


/*
 * report: the Nth consecutive failure queues RING.DOWN (once, by whichever
 * worker sets down first) and holds the peer down for hold_down; a
 * failed probe of a peer the ring has up queues it again; a success
 * clears the count and, if the peer was reported down at least hold_down
 * ago, queues RING.UP (once).
 */
static void
ngx_http_ringbloom_track(ngx_http_ringbloom_peer_data_t *rp,
    ngx_uint_t state, ngx_log_t *log)
{
    time_t                      now, timeout;
    ngx_uint_t                  outcome;
    ngx_atomic_uint_t           fails, down;
    ngx_http_ringbloom_slot_t  *slot;

    slot = rp->slot;
    outcome = ngx_http_ringbloom_outcome(rp, state);
    now = ngx_time();

    if (outcome == NGX_HTTP_RINGBLOOM_FAILURE) {
        fails = ngx_atomic_fetch_add(&slot->fails, 1) + 1;

        if (fails >= rp->ucf->report
            && ngx_atomic_cmp_set(&slot->down, 0, (ngx_atomic_uint_t) now))
        {
            timeout = rp->ucf->report_timeout
                      ? rp->ucf->report_timeout
                      : rp->rrp.current->fail_timeout;
            slot->probe = (ngx_atomic_uint_t)
                              (now + ngx_max(timeout, rp->ucf->hold_down));

            ngx_http_ringbloom_report(rp, "RING.DOWN", log);

        } else if (rp->probing && slot->down != 0
                   && ngx_http_ringbloom_ring_has_up(rp, log))
        {
            ngx_http_ringbloom_report(rp, "RING.DOWN", log);
        }

        return;
    }

    if (outcome == NGX_HTTP_RINGBLOOM_NEITHER) {
        return;
    }

    if (slot->fails != 0) {
        slot->fails = 0;
    }

    down = slot->down;

    if (down != 0 && now - (time_t) down >= rp->ucf->hold_down
        && ngx_atomic_cmp_set(&slot->down, down, 0))
    {
        ngx_http_ringbloom_report(rp, "RING.UP", log);
    }
}


static void
ngx_http_ringbloom_free_peer(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    ngx_http_ringbloom_peer_data_t *rp = data;

    if (rp->counted != NULL) {
        (void) ngx_atomic_fetch_add(&rp->counted->inflight, -1);
        (void) ngx_atomic_fetch_add(&rp->ucf->shm->total, -1);
        rp->counted = NULL;
    }

    if (rp->slot != NULL && rp->ucf->report) {
        ngx_http_ringbloom_track(rp, state, pc->log);
    }

    rp->slot = NULL;

    ngx_http_upstream_free_round_robin_peer(pc, &rp->rrp, state);
}
