/*
 * ops_ring.c - the ring's ops (RING.ADD, REMOVE, WEIGHT, MODE, STATE,
 * SLOTS, and the etcd source's RING.SYNC): their rows (ops_def.h) and how
 * they apply.  A ring op changes the writer's model; live, the model is
 * published, and on a failed publish the change is undone (readers never
 * saw it).  Replayed, only the model changes (start-up publishes once).
 * A revision of the etcd source applied live is logged here, "by etcd"
 * (a client's own change is logged by cmd_ring.c, with its uid and pid).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "bytes.h"
#include "ops_def.h"
#include "rbd_log.h"
#include "ring_mode.h"   /* lib: the mode table's facts (is it a table mode) */

/* What undoing a ring op needs: the node's weight and the mode before it. */
typedef struct ring_prev {
    uint32_t weight, mode, replicas, state;
} ring_prev_t;

static int ring_add(rb_ring_t *r, rbd_op_t *op, const ring_prev_t *undo)
{
    return undo ? rb_ring_remove(r, op->name, op->len)
                : rb_ring_add(r, op->name, op->len, op->weight);
}

static int ring_remove(rb_ring_t *r, rbd_op_t *op, const ring_prev_t *undo)
{
    return undo ? rb_ring_add(r, op->name, op->len, undo->weight)
                : rb_ring_remove(r, op->name, op->len);
}

static int ring_weight(rb_ring_t *r, rbd_op_t *op, const ring_prev_t *undo)
{
    return rb_ring_set_weight(r, op->name, op->len, undo ? undo->weight : op->weight);
}

static int ring_mode(rb_ring_t *r, rbd_op_t *op, const ring_prev_t *undo)
{
    int rc;

    if (undo)
        return rb_ring_set_mode(r, (rb_ring_mode_t)undo->mode, undo->replicas);
    rc = rb_ring_set_mode(r, (rb_ring_mode_t)op->mode, op->replicas);
    if (rc == RB_OK)
        op->replicas = rb_ring_replicas(r);   /* 0 kept the count: log the one in force */
    return rc;
}

static int ring_state(rb_ring_t *r, rbd_op_t *op, const ring_prev_t *undo)
{
    return rb_ring_set_state(r, op->name, op->len,
                             (rb_node_state_t)(undo ? undo->state : op->state));
}

size_t rbd_slots_range(unsigned char *buf, uint32_t start, uint32_t end, const char *name,
                       size_t len)
{
    buf[0] = (unsigned char)start;
    buf[1] = (unsigned char)(start >> 8);
    buf[2] = (unsigned char)end;
    buf[3] = (unsigned char)(end >> 8);
    memcpy(buf + RBD_SLOTS_RANGE_HDR, name, len);
    return RBD_SLOTS_RANGE_HDR + len;
}

/* Assigns each range in turn, or with none balances the slots.  Its undo
 * (and a failure part-way) is ring_apply's reload of the published ring. */
static int ring_slots(rb_ring_t *r, rbd_op_t *op, const ring_prev_t *undo)
{
    if (undo)
        return RB_EINVAL;
    if (op->nkeys == 0)
        return rb_ring_balance_slots(r);
    for (size_t i = 0; i < op->nkeys; i++) {
        const unsigned char *k = op->keys[i].ptr;
        int rc;
        if (op->keys[i].len <= RBD_SLOTS_RANGE_HDR)
            return RB_EINVAL;
        rc = rb_ring_set_slots(r, k[0] | (uint32_t)k[1] << 8, k[2] | (uint32_t)k[3] << 8,
                               (const char *)k + RBD_SLOTS_RANGE_HDR,
                               op->keys[i].len - RBD_SLOTS_RANGE_HDR);
        if (rc != RB_OK)
            return rc;
    }
    return RB_OK;
}

/* RING_SYNC (ring-source etcd, ring_source.c): the model becomes the
 * membership the op lists as of op->revision, rebuilt from nothing with
 * the nodes added in the op's order (etcd's key order, the same on every
 * host), so that every host that applies one revision publishes the same
 * table, the revision in it.  A node that does not fit (RB_ERANGE: more
 * nodes or points than a ring holds, a membership another tool wrote) is
 * left out, as on every host, with a warning: it must not keep every
 * later revision from being applied.  Live, it is published; a failed
 * publish leaves the model and table as they were (nothing is logged). */
static int ring_sync(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_ring_mode_t mode = (rb_ring_mode_t)op->mode;
    int table = rbi_ring_mode_is_table(mode);   /* replicas: the table's parameter */
    rb_ring_t *r;
    size_t left_out = 0;
    int rc = rb_ring_new(mode, table ? 0 : op->replicas, &r);

    if (rc == RB_OK && table && op->replicas != 0)
        rc = rb_ring_set_mode(r, mode, op->replicas);
    for (size_t i = 0; rc == RB_OK && i < op->nkeys; i++) {
        const unsigned char *k = op->keys[i].ptr;
        uint32_t state;
        if (op->keys[i].len <= 8)
            rc = RB_EINVAL;
        else if ((rc = rb_ring_add(r, (const char *)k + 8, op->keys[i].len - 8,
                                   rbd_get_u32(k))) == RB_OK &&
                 (state = rbd_get_u32(k + 4)) != RB_NODE_UP)
            rc = rb_ring_set_state(r, (const char *)k + 8, op->keys[i].len - 8,
                                   (rb_node_state_t)state);
        else if (rc == RB_ERANGE)
            left_out++, rc = RB_OK;
    }
    if (rc == RB_OK && left_out > 0)
        rbd_log(LOG_WARNING, "ring source: revision %llu: %zu of %zu nodes left out, the "
                "ring cannot hold them (at most %u nodes, %u points)",
                (unsigned long long)op->revision, left_out, op->nkeys,
                (unsigned)RB_RING_MAX_NODES, (unsigned)RB_RING_MAX_POINTS);
    if (rc == RB_OK)
        rc = rb_ring_set_source_revision(r, op->revision);
    if (rc == RB_OK && live && (rc = rb_ring_publish(r, st->seg)) == RB_OK) {
        st->ring_changes++;
        rbd_log(LOG_NOTICE, "ring change by etcd: revision %llu applied, %zu nodes, mode %s",
                (unsigned long long)op->revision, op->nkeys - left_out,
                rb_ring_mode_name(mode));
    }
    if (rc != RB_OK) {
        rb_ring_free(r);
        return rc;
    }
    rb_ring_free(st->ring);
    st->ring = r;
    return RB_OK;
}

/* Whether undoing op on a model in prev's mode takes a reload of the
 * published ring: a RING.SLOTS, or any change to an explicit slot map (a
 * removed node's slots, a switch away from it) that the op alone cannot
 * put back. */
static int undo_by_reload(const rbd_op_t *op, const ring_prev_t *prev)
{
    return op->type == RBD_OP_RING_SLOTS ||
           (rbi_ring_mode_map_settable(prev->mode) && prev->replicas != 0);
}

/* The model back to the published ring (which the failed change never
 * reached); RB_OK or rb_ring_load's error (the model then stays). */
static int reload(rbd_state_t *st)
{
    rb_ring_t *back;
    int rc = rb_ring_load(st->seg, &back);

    if (rc == RB_OK) {
        rb_ring_free(st->ring);
        st->ring = back;
    }
    return rc;
}

/* Weight of a node in the published ring (the model before the change),
 * or 0. */
static uint32_t node_weight(const rb_segment_t *seg, const char *name, size_t len)
{
    rb_ring_stat_t st;
    rb_node_t *nodes;
    size_t count = 0;
    uint32_t w = 0;

    if (rb_ring_stat(seg, &st) != RB_OK || st.nodes == 0)
        return 0;
    nodes = malloc(st.nodes * sizeof(*nodes));
    if (nodes != NULL && rb_ring_nodes(seg, nodes, st.nodes, &count) == RB_OK)
        for (size_t i = 0; i < count && i < st.nodes; i++)
            if (nodes[i].name_len == len && memcmp(nodes[i].name, name, len) == 0)
                w = nodes[i].weight;
    free(nodes);
    return w;
}

typedef int (*ring_change_fn)(rb_ring_t *ring, rbd_op_t *op, const ring_prev_t *undo);

/* The change of the model a ring op of type t makes (undo: back to what
 * undo says), or NULL. */
static ring_change_fn change_of(rbd_op_type_t t)
{
    switch (t) {
    case RBD_OP_RING_ADD:    return ring_add;
    case RBD_OP_RING_REMOVE: return ring_remove;
    case RBD_OP_RING_WEIGHT: return ring_weight;
    case RBD_OP_RING_MODE:   return ring_mode;
    case RBD_OP_RING_STATE:  return ring_state;
    case RBD_OP_RING_SLOTS:  return ring_slots;
    default:                 return NULL;
    }
}

/* A ring op: the model changes; live, it is published, and on a failed
 * publish the change is undone (readers never saw it) and the error is the
 * publish's (op->publish_failed). */
static int ring_apply(rbd_state_t *st, rbd_op_t *op, int live)
{
    ring_change_fn change = change_of(op->type);
    ring_prev_t prev = { 0, (uint32_t)rb_ring_mode(st->ring), rb_ring_replicas(st->ring), 0 };
    int rc;

    if (!live)
        return change(st->ring, op, NULL);
    if (op->type == RBD_OP_RING_REMOVE || op->type == RBD_OP_RING_WEIGHT)
        prev.weight = node_weight(st->seg, op->name, op->len);
    if (op->type == RBD_OP_RING_STATE) {
        int was = rb_ring_state(st->ring, op->name, op->len);
        prev.state = was >= 0 ? (uint32_t)was : RB_NODE_UP;
    }
    rc = change(st->ring, op, NULL);
    if (rc != RB_OK) {
        if (op->type == RBD_OP_RING_SLOTS && reload(st) != RB_OK)   /* failed part-way */
            rbd_log(LOG_WARNING, "ring model and segment diverged after a failed RING.SLOTS");
        return rc;
    }
    rc = rb_ring_publish(st->ring, st->seg);
    if (rc == RB_OK) {
        st->ring_changes++;
        return RB_OK;
    }
    if ((undo_by_reload(op, &prev) ? reload(st) : change(st->ring, op, &prev)) != RB_OK)
        rbd_log(LOG_WARNING, "ring model and segment diverged after a failed publish");
    op->publish_failed = 1;
    return rc;
}

/* ---- the rows ---------------------------------------------------------------------- */

const rbd_op_def_t rbd_ops_ring[] = {
    { RBD_OP_RING_ADD, "RING.ADD", RBD_NAMES_NODE, RBD_OP_SYNC | RBD_OP_RING, ring_apply,
      { RBD_U32(weight), RBD_NAME } },
    { RBD_OP_RING_REMOVE, "RING.REMOVE", RBD_NAMES_NODE, RBD_OP_SYNC | RBD_OP_RING, ring_apply,
      { RBD_NAME } },
    { RBD_OP_RING_WEIGHT, "RING.WEIGHT", RBD_NAMES_NODE, RBD_OP_SYNC | RBD_OP_RING, ring_apply,
      { RBD_U32(weight), RBD_NAME } },
    { RBD_OP_RING_MODE, "RING.MODE", RBD_NAMES_NOTHING, RBD_OP_SYNC | RBD_OP_RING, ring_apply,
      { RBD_U32(mode), RBD_U32(replicas) } },
    { RBD_OP_RING_STATE, "RING.STATE", RBD_NAMES_NODE, RBD_OP_SYNC | RBD_OP_RING, ring_apply,
      { RBD_U32(state), RBD_NAME } },
    { RBD_OP_RING_SLOTS, "RING.SLOTS", RBD_NAMES_NOTHING, RBD_OP_SYNC | RBD_OP_RING, ring_apply,
      { RBD_KEYS } },
    /* The etcd source's own: no ring source takes it. */
    { RBD_OP_RING_SYNC, "RING.SYNC", RBD_NAMES_NOTHING, RBD_OP_SYNC, ring_sync,
      { RBD_U64(revision), RBD_U32(mode), RBD_U32(replicas), RBD_KEYS } },
    RBD_OP_END,
};
