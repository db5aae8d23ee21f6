/*
 * ring_source_loop.c - `ring-source etcd`, the event loop's side
 * (ring_source.h): publishing each membership the source thread read (a
 * RING_SYNC op), and the source's op-sink row: RING.* changes taken from
 * the op stream, handed to the writer thread, and their tickets completed
 * once this host applied them.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "bytes.h"
#include "rbd_log.h"
#include "ring_mode.h"   /* lib: the mode table's facts (is it a table mode) */
#include "ring_source_impl.h"

/* ---- the event loop's side ----------------------------------------------------- */

/* Member m as a RING_SYNC record's key: u32 weight, u32 state, the name. */
static size_t sync_key(unsigned char *buf, const member_t *m)
{
    rbd_put_u32(buf, m->weight);
    rbd_put_u32(buf + 4, m->state);
    memcpy(buf + 8, m->name, m->len);
    return 8 + m->len;
}

/* Publishes view v through a RING_SYNC op (logged).  RB_OK or its error. */
static int apply_view(rbd_state_t *st, const view_t *v)
{
    rb_key_t *keys = calloc(v->n ? v->n : 1, sizeof(*keys));
    unsigned char *buf;
    size_t bytes = 0, at = 0;
    rbd_op_t op = { .type = RBD_OP_RING_SYNC, .revision = (uint64_t)v->revision,
                    .mode = (uint32_t)v->mode, .replicas = v->replicas };
    int rc;

    for (size_t i = 0; i < v->n; i++)
        bytes += 8 + v->m[i].len;
    if (keys == NULL || (buf = malloc(bytes ? bytes : 1)) == NULL) {
        free(keys);
        return RB_ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        size_t len = sync_key(buf + at, &v->m[i]);
        keys[i] = (rb_key_t){ buf + at, len };
        at += len;
    }
    op.keys = keys;
    op.nkeys = v->n;
    rc = rbd_op_run(st, NULL, &op);
    free(buf);
    free(keys);
    return rc;
}

/* 1 if the view that was applied already left out node m (same name,
 * same mod_revision): it was said then. */
static int was_left_out(const rbd_source_t *s, const member_t *m)
{
    const view_t *a = s->applied;

    for (size_t i = 0; a != NULL && i < a->nbad; i++)
        if (a->bad[i].len == m->len && a->bad[i].mod_rev == m->mod_rev &&
            memcmp(a->bad[i].name, m->name, m->len) == 0)
            return 1;
    return 0;
}


/* ring-down-max-percent over view v's nodes, as a local RING.DOWN is
 * judged (cmd_ring.c): in key order, a node down in etcd that would make
 * more than that share of the nodes down or draining is published up
 * (Envoy's healthy panic threshold: reports never empty the ring), counted
 * in v->skipped and said when its key changed since the view applied. */
static void limit_down(rbd_source_t *s, const rbd_state_t *st, view_t *v)
{
    uint32_t pct = st->limits.ring_down_max_percent;
    int64_t since = s->applied != NULL ? s->applied->revision : 0;
    uint64_t not_up = 0;
    char why[200], key[RB_NODE_NAME_MAX + 8];

    for (size_t i = 0; pct < 100 && i < v->n; i++) {
        member_t *m = &v->m[i];
        if (m->state == RB_NODE_UP)
            continue;
        if (m->state != RB_NODE_DOWN || (not_up + 1) * 100 <= (uint64_t)pct * v->n) {
            not_up++;
            continue;
        }
        snprintf(why, sizeof(why), "down would make %llu of %zu nodes down or draining, past "
                 "ring-down-max-percent (%u%%); published up", (unsigned long long)not_up + 1,
                 v->n, pct);
        snprintf(key, sizeof(key), "node/%.*s", (int)m->len, m->name);
        rbd_source_note_skipped(s, key, m->len + 5, m->mod_rev, why, m->mod_rev > since);
        m->state = RB_NODE_UP;
        v->skipped++;
    }
}

/* Keeps view v within this host's limits, as a local RING.ADD or
 * RING.MODE is kept (issue 41, 10: a node of weight 65535 put in etcd
 * made every host rebuild ten times max-ring-points on its loop): a table
 * mode's size over max-ring-points gives way to the daemon's mode; then,
 * in key order, a node that would give the ring more than max-nodes nodes
 * or more than max-ring-points points is left out, joins v->bad (RING.ADD
 * replaces it, RING.REMOVE deletes it) and is counted in v->skipped, each
 * said once; then ring-down-max-percent (limit_down).  Hosts with the
 * same limits leave out the same nodes, and the RING_SYNC record logs
 * what was kept, so a replay needs no limits. */
static void limit_view(rbd_source_t *s, const rbd_state_t *st, view_t *v)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops(v->mode);
    uint32_t max_points = st->limits.max_ring_points;
    uint64_t w = 0;
    size_t keep = 0, parsed = v->skipped;
    char why[200];

    if (v->limited)
        return;
    v->limited = 1;
    if (ops->table && ops->size_rule != NULL && v->replicas > max_points) {
        snprintf(why, sizeof(why), "a table of %u slots is more than max-ring-points (%u); "
                 "the ring keeps ring-mode %s", v->replicas, max_points,
                 rb_ring_mode_name(s->dmode));
        rbd_source_note_skipped(s, "mode", 4, v->mode_rev, why,
                                s->applied == NULL || s->applied->skipped_mode != v->mode_rev);
        v->skipped_mode = v->mode_rev;
        v->mode = s->dmode;
        v->replicas = s->dreplicas;
        v->skipped++;
        ops = rbi_ring_mode_ops(v->mode);
    }
    for (size_t i = 0; i < v->n; i++) {
        member_t *m = &v->m[i];
        uint64_t points = ops->table ? ops->table_size(v->replicas, keep + 1)
                          : ops->points_bound(w + m->weight, keep + 1,
                                              v->replicas ? v->replicas
                                                          : RB_RING_DEFAULT_REPLICAS);
        char key[RB_NODE_NAME_MAX + 8];
        if (keep + 1 <= st->limits.max_nodes && points <= max_points) {
            w += m->weight;
            v->m[keep++] = *m;
            continue;
        }
        if (keep + 1 > st->limits.max_nodes)
            snprintf(why, sizeof(why), "more than max-nodes (%u) nodes", st->limits.max_nodes);
        else
            snprintf(why, sizeof(why), "weight %u would give the ring up to %llu points, more "
                     "than max-ring-points (%u)", m->weight, (unsigned long long)points,
                     max_points);
        snprintf(key, sizeof(key), "node/%.*s", (int)m->len, m->name);
        rbd_source_note_skipped(s, key, m->len + 5, m->mod_rev, why, !was_left_out(s, m));
        v->bad[v->nbad++] = *m;   /* v->bad has room for every key of the map */
        v->skipped++;
    }
    v->n = keep;
    limit_down(s, st, v);
    pthread_mutex_lock(&s->mu);
    s->over_limit = v->skipped - parsed;
    pthread_mutex_unlock(&s->mu);
}

int rbd_source_sync(rbd_source_t *s, rbd_state_t *st)
{
    uint64_t drain;
    view_t *v;
    int rc;

    if (read(s->efd, &drain, sizeof(drain)) < 0 && errno != EAGAIN)
        rbd_log(LOG_WARNING, "ring source: eventfd: %s", strerror(errno));
    pthread_mutex_lock(&s->mu);
    v = s->latest;
    s->latest = NULL;
    pthread_mutex_unlock(&s->mu);
    if (v == NULL)
        return RB_OK;
    if (s->applied != NULL && s->applied->revision == v->revision) {
        rbd_source_view_free(v);
        return RB_OK;
    }
    limit_view(s, st, v);
    if ((rc = apply_view(st, v)) != RB_OK) {
        /* Readers keep the table they have; the next view (or this one,
         * put back unless a newer came) is tried at the next sync. */
        rbd_log(LOG_WARNING, "ring source: cannot publish revision %lld: %s",
                (long long)v->revision, rb_strerror(rc));
        pthread_mutex_lock(&s->mu);
        if (s->latest == NULL)
            s->latest = v, v = NULL;
        pthread_mutex_unlock(&s->mu);
        rbd_source_view_free(v);
        return rc;
    }
    rbd_source_view_free(s->applied);
    s->applied = v;
    pthread_mutex_lock(&s->mu);
    s->st.applied = v->revision;
    pthread_mutex_unlock(&s->mu);
    return RB_OK;
}

static const member_t *member(const member_t *m, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].len == len && memcmp(m[i].name, name, len) == 0)
            return &m[i];
    return NULL;
}

/* The etcd write that makes op: key, value (NULL: delete) into val, and
 * the mod_revision compared (what this host saw of the key).  RB_OK, or
 * RB_EEXIST / RB_ENOENT (as a local change would answer), or
 * RBD_SINK_REPLY with why; 1: a delete (val unused). */
static int etcd_write_of(const rbd_source_t *s, const rbd_op_t *op, char *key, char *val,
                         int64_t *cmp, char *why, size_t cap)
{
    const view_t *v = s->applied;
    const member_t *m = NULL, *bad;
    uint32_t state = RB_NODE_UP, weight = 0;

    if (op->type == RBD_OP_RING_MODE) {
        rb_ring_mode_t was = v != NULL ? v->mode : s->dmode;
        /* 0 keeps the vnode count from one vnode mode to another, as a
         * local RING.MODE does; a table mode's 0 is its automatic size. */
        uint32_t replicas = op->replicas;
        if (replicas == 0 && !rbi_ring_mode_is_table(op->mode) && !rbi_ring_mode_is_table(was))
            replicas = v != NULL ? v->replicas : s->dreplicas;
        strcpy(key, "mode");
        snprintf(val, 64, "%s %u", rb_ring_mode_name((rb_ring_mode_t)op->mode), replicas);
        *cmp = v != NULL ? v->mode_rev : 0;
        return RB_OK;
    }
    if (op->type == RBD_OP_RING_SLOTS) {
        snprintf(why, cap, "ERR RING.SLOTS is not available with ring-source etcd (the "
                 "slot map is not kept in etcd); use RING.MODE slots, balanced by weight");
        return RBD_SINK_REPLY;
    }
    if (memchr(op->name, '\0', op->len) != NULL) {
        snprintf(why, cap, "ERR ring-source etcd: a node name with a NUL byte cannot be an "
                 "etcd key");
        return RBD_SINK_REPLY;
    }
    m = v != NULL ? member(v->m, v->n, op->name, op->len) : NULL;
    /* A node key skipped for its value: RING.ADD replaces it and
     * RING.REMOVE deletes it (the node is absent otherwise). */
    bad = v != NULL && m == NULL ? member(v->bad, v->nbad, op->name, op->len) : NULL;
    if (bad != NULL && op->type != RBD_OP_RING_ADD && op->type != RBD_OP_RING_REMOVE)
        bad = NULL;
    if ((op->type == RBD_OP_RING_ADD) != (m == NULL) && bad == NULL)
        return m == NULL ? RB_ENOENT : RB_EEXIST;
    snprintf(key, RB_NODE_NAME_MAX + 8, "node/%.*s", (int)op->len, op->name);
    *cmp = m != NULL ? m->mod_rev : bad != NULL ? bad->mod_rev : 0;
    if (m != NULL)
        state = m->state, weight = m->weight;
    if (op->type == RBD_OP_RING_REMOVE) {
        val[0] = '\0';
        return 1;   /* a delete */
    }
    if (op->type == RBD_OP_RING_ADD || op->type == RBD_OP_RING_WEIGHT)
        weight = op->weight;
    if (op->type == RBD_OP_RING_STATE)
        state = op->state;
    snprintf(val, 64, "%u %s", weight, rb_node_state_name((rb_node_state_t)state));
    return RB_OK;
}

/* The refusal of a change while etcd cannot be reached. */
static int refuse_down(rbd_source_t *s, char *why, size_t cap)
{
    rbd_source_status_t ss;

    rbd_source_status(s, &ss);
    if (ss.connected)
        return 0;
    snprintf(why, cap, "ERR ring-source etcd: no working connection to etcd (%s); ring "
             "changes are refused, readers keep the table of revision %lld",
             ss.error[0] ? ss.error : "not reached yet", (long long)ss.applied);
    return RBD_SINK_REPLY;
}

/* ---- changes handed to the writer thread: the op-sink row ------------------------ */

static int source_accept(void *self, rbd_state_t *st, const rbd_op_t *op, uint64_t ticket,
                         char *why, size_t cap)
{
    rbd_source_t *s = self;
    job_t *j, **tail;
    int rc;

    if (!rbd_op_changes_ring(op->type))
        return RBD_SINK_APPLY;
    if (ticket == 0) {   /* cmd.c keeps ring changes out of EXEC; else no memory */
        snprintf(why, cap, "ERR ring-source etcd: this ring change cannot wait for etcd's "
                 "answer here");
        return RBD_SINK_REPLY;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return RB_ENOMEM;
    (void)rbd_source_sync(s, st);
    if ((rc = refuse_down(s, why, cap)) != 0 ||
        (rc = etcd_write_of(s, op, j->key, j->val, &j->cmp, why, cap)) < 0 ||
        rc == RBD_SINK_REPLY) {
        free(j);
        return rc;
    }
    j->del = rc == 1;
    j->ticket = ticket;
    pthread_mutex_lock(&s->mu);
    for (tail = &s->todo; *tail != NULL; tail = &(*tail)->next)
        ;
    *tail = j;
    pthread_cond_signal(&s->wcv);
    pthread_mutex_unlock(&s->mu);
    return RBD_SINK_DEFERRED;
}

/* The answer to job j now (its ticket completed in sinks), or 0: not yet. */
static int answer(rbd_source_t *s, job_t *j, rbd_sinks_t *sinks)
{
    char line[1024];

    if (j->rc == RBD_ETCD_ECONFLICT) {
        snprintf(line, sizeof(line), "CONFLICT '%s' was changed in etcd by another host (its "
                 "revision is %lld, this host had read %lld): nothing was changed; read it "
                 "again", j->key, (long long)j->cur, (long long)j->cmp);
        rbd_sinks_complete(sinks, j->ticket, line);
        return 1;
    }
    if (j->rc != 0) {
        snprintf(line, sizeof(line), "ERR ring-source etcd: %s", j->err);
        rbd_sinks_complete(sinks, j->ticket, line);
        return 1;
    }
    if ((s->applied == NULL || s->applied->revision < j->rev) &&
        rbd_mono_ms() - j->done_ms < APPLY_WAIT_MS)
        return 0;
    rbd_sinks_complete(sinks, j->ticket, NULL);
    return 1;
}

/* poll and tick: publishes what the thread read, then answers each
 * submitted change that is done. */
static void source_finish(void *self, rbd_state_t *st)
{
    rbd_source_t *s = self;
    job_t *j, **at;

    (void)rbd_source_sync(s, st);
    pthread_mutex_lock(&s->mu);
    j = s->done;
    s->done = NULL;
    pthread_mutex_unlock(&s->mu);
    while (j != NULL) {   /* the done ones join the waiting */
        job_t *next = j->next;
        j->next = s->waiting;
        s->waiting = j;
        j = next;
    }
    for (at = &s->waiting; *at != NULL;) {
        j = *at;
        if (!answer(s, j, &st->sinks)) {
            at = &j->next;
            continue;
        }
        *at = j->next;
        free(j);
    }
}

/* The sinks' tick comes every 100 ms (sink.h): this source's, a failed
 * publish's retry among it, once a second. */
static void source_tick(void *self, rbd_state_t *st)
{
    rbd_source_t *s = self;
    uint64_t now = rbd_mono_ms();

    if (now - s->tick_ms < 1000)
        return;
    s->tick_ms = now;
    source_finish(self, st);
}

const rbd_sink_ops_t rbd_source_sink = {
    .name = "etcd",
    .accept = source_accept,
    .poll = source_finish,
    .tick = source_tick,
};
