/*
 * filter_source_start.c - `filter-source nats`, its life (filter_source.h
 * says what the source is): the settings checked, the start guard (a
 * segment that never applied the stream must hold no local filter the
 * pattern matches), the NATS thread started (filter_source.c) and
 * stopped, the source freed, and its status for INFO.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "filter_source_impl.h"
#include "seg_repl.h"

typedef struct guard {          /* the local filters a first start would shadow */
    const char *glob;
    size_t n;
    char first[RB_FILTER_NAME_MAX + 1];
} guard_t;

static int guard_one(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    guard_t *g = arg;

    (void)kind;
    if (rbd_fsource_matches(g->glob, name, len) && g->n++ == 0)
        snprintf(g->first, sizeof(g->first), "%.*s", (int)len, name);
    return 0;
}

/* A segment that never applied a stream message holds only local
 * filters: one whose name nats-filters matches would take this host's
 * writes of that name while the stream's reserve of it fails here alone
 * (N2 broken), so the start is refused, naming it.  0 or -1 with err. */
static int guard_local(const rbd_fsource_t *s, const rb_segment_t *seg, char *err,
                       size_t errlen)
{
    guard_t g = { .glob = s->glob, .n = 0 };
    uint64_t cursor = 0;

    if (s->stream0 != 0)
        return 0;
    (void)rb_filter_scan(seg, &cursor, SIZE_MAX, guard_one, &g);
    if (g.n == 0)
        return 0;
    snprintf(err, errlen, "filter-source nats: %zu local filter(s) match nats-filters '%s' "
             "(the first: '%s'): replicated, each host would hold another filter under that "
             "name; delete or rename them, or narrow nats-filters, then start again", g.n,
             s->glob, g.first);
    return -1;
}

static int split_servers(rbd_fsource_t *s, const char *list, char *err, size_t errlen)
{
    char buf[sizeof(s->server_list)], *save = NULL;
    size_t w = 0;

    snprintf(buf, sizeof(buf), "%s", list);
    for (char *t = strtok_r(buf, " ,\t", &save); t != NULL; t = strtok_r(NULL, " ,\t", &save)) {
        if (s->nservers == FS_MAX_SERVERS) {
            snprintf(err, errlen, "nats-servers: more than %d servers", FS_MAX_SERVERS);
            return -1;
        }
        if ((s->servers[s->nservers] = strdup(t)) == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        w += (size_t)snprintf(s->server_list + w, sizeof(s->server_list) - w, "%s%s",
                              s->nservers > 0 ? "," : "", t);
        if (w >= sizeof(s->server_list))
            w = sizeof(s->server_list) - 1;
        s->nservers++;
    }
    if (s->nservers == 0) {
        snprintf(err, errlen, "nats-servers: no server given");
        return -1;
    }
    return 0;
}

static int stream_name_ok(const char *n)
{
    size_t i = 0;

    for (; n[i] != '\0'; i++)
        if (!((n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= 'a' && n[i] <= 'z') ||
              (n[i] >= '0' && n[i] <= '9') || n[i] == '_' || n[i] == '-'))
            return 0;
    return i > 0 && i <= 48;
}

int rbd_fsource_start(rbd_fsource_t **out, const rbd_config_t *cfg, rbd_state_t *st, char *err,
                      size_t errlen)
{
    rbd_fsource_t *s = calloc(1, sizeof(*s));

    *out = NULL;
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->efd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->rx_cv, NULL);
    if (split_servers(s, cfg->nats_servers, err, errlen) != 0)
        goto fail;
    if (!stream_name_ok(cfg->nats_stream)) {
        snprintf(err, errlen, "nats-stream: '%s' is not a stream name (1 to 48 of A-Z a-z 0-9 _ "
                 "-)", cfg->nats_stream);
        goto fail;
    }
    if ((cfg->nats_cert[0] == '\0') != (cfg->nats_key[0] == '\0')) {
        snprintf(err, errlen, "nats-cert and nats-key go together: give both or neither");
        goto fail;
    }
    snprintf(s->stream, sizeof(s->stream), "%s", cfg->nats_stream);
    snprintf(s->subject, sizeof(s->subject), "%s.ops", cfg->nats_stream);
    snprintf(s->snap_stream, sizeof(s->snap_stream), "%s_SNAP", cfg->nats_stream);
    s->snap_every = cfg->nats_snapshot_every;
    snprintf(s->glob, sizeof(s->glob), "%s", cfg->nats_filters);
    snprintf(s->creds, sizeof(s->creds), "%s", cfg->nats_creds);
    snprintf(s->cacert, sizeof(s->cacert), "%s", cfg->nats_cacert);
    snprintf(s->cert, sizeof(s->cert), "%s", cfg->nats_cert);
    snprintf(s->key, sizeof(s->key), "%s", cfg->nats_key);
    s->timeout_ms = cfg->nats_timeout;
    s->max_bytes = cfg->nats_max_bytes;
    while (s->origin == 0)
        arc4random_buf(&s->origin, sizeof(s->origin));
    rbi_segment_repl_get(st->seg, &s->applied0, &s->stream0);
    s->applied = s->applied0;
    s->loop_applied = s->applied0;
    s->followed = s->stream0;
    s->cfg = cfg;
    if (guard_local(s, st->seg, err, errlen) != 0)
        goto fail;
    s->st = st;
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->efd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        goto fail;
    }
    if (pthread_create(&s->th, NULL, rbd_fsource_thread, s) != 0) {
        snprintf(err, errlen, "cannot start the NATS thread");
        goto fail;
    }
    s->started = 1;
    *out = s;
    return 0;
fail:
    rbd_fsource_stop(s);
    return -1;
}


void rbd_fsource_stop(rbd_fsource_t *s)
{
    if (s == NULL)
        return;
    if (s->started) {
        atomic_store(&s->stop, 1);
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->cv);
        pthread_cond_broadcast(&s->rx_cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th, NULL);
    }
    if (s->sub != NULL) {
        (void)natsSubscription_Unsubscribe(s->sub);
        natsSubscription_Destroy(s->sub);
    }
    jsCtx_Destroy(s->js);
    if (s->nc != NULL) {
        natsConnection_Destroy(s->nc);
        nats_CloseAndWait(2000);   /* the library's threads, before the process goes on */
    }
    /* The thread is gone: every batch queued is on s->sent (todo and done
     * hold some of them too). */
    while (s->sent != NULL) {
        fs_batch_t *next = s->sent->snext;

        rbd_fsource_batch_free(s->sent);
        s->sent = next;
    }
    rbd_fsource_batch_free(s->building);
    while (s->rx != NULL) {
        fs_rx_t *next = s->rx->next;

        free(s->rx);
        s->rx = next;
    }
    while (s->consumers != NULL) {
        fs_consumer_t *next = s->consumers->next;

        free(s->consumers);
        s->consumers = next;
    }
    rbd_fsource_snap_free(s->snap_out);
    free(s->keys.v);
    for (int i = 0; i < s->nservers; i++)
        free(s->servers[i]);
    if (s->efd >= 0)
        close(s->efd);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->rx_cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int rbd_fsource_fd(const rbd_fsource_t *s)
{
    return s->efd;
}

void rbd_fsource_status(rbd_fsource_t *s, rbd_fsource_status_t *out)
{
    uint64_t inflight = 0;

    memset(out, 0, sizeof(*out));
    for (const fs_batch_t *b = s->sent; b != NULL; b = b->snext)
        if (!b->answered)
            inflight += b->n;
    pthread_mutex_lock(&s->mu);
    out->connected = s->connected;
    out->ready = s->ready;
    out->healthy = s->healthy;
    out->stream_id = s->stream_id;
    out->last_seq = s->last_seq;
    out->last_ack_ms = s->last_ack_ms;
    out->last_contact_ms = s->last_contact_ms;
    out->published = s->published;
    out->acked = s->acked;
    out->first_seq = s->first_seq;
    out->snap_seq = s->snap_seq;
    out->snaps_published = s->snaps_published;
    out->boot_seq = s->boot_seq;
    snprintf(out->server, sizeof(out->server), "%s", s->server);
    snprintf(out->error, sizeof(out->error), "%s", s->error);
    pthread_mutex_unlock(&s->mu);
    out->halted = s->halted != 0;
    snprintf(out->halt_why, sizeof(out->halt_why), "%s", s->halt_why);
    out->applied = s->applied;
    out->refused = s->refused;
    out->skipped = s->skipped;
    out->outside = s->outside;
    out->snaps_taken = s->snaps_taken;
    out->inflight = inflight;
    snprintf(out->skipped_last, sizeof(out->skipped_last), "%s", s->skipped_last);
}
