/*
 * ops.c - every mutation of the served state, applied and logged in one
 * place, and replayed from the log through the same code.
 *
 * One table, a row per op: its type (the log record's type byte), its name
 * for messages, what its name names, whether its record must be fsync'd
 * before the reply (P2, aof.c), its payload's fields in order, and how it
 * applies.  The fields drive one encoder (put_field, after a live apply)
 * and one decoder (rbd_op_decode, for the replay), so a record's layout is
 * written down once; the table is docs/design.md's table of record types.
 *
 * Live (rbd_op_run: a command handler, the aging tick): apply; a ring op
 * then publishes the model, and undoes its change if the publish fails;
 * then the record is appended (P4: in the same step as the change).
 * Replay (rbd_op_replay, replay.c): the same apply on the decoded op,
 * without publishing (start-up publishes once, at the end) or logging.
 * Replayed onto the state it was logged from, a record finds what its op
 * found live (P4), so the apply's errors (a missing node, a filter that
 * already exists) are the log's corruption there.
 *
 * Adding an op: an rbd_op_type_t value (a new type byte), the fields it
 * logs in rbd_op_t if they are new, a row, an apply function; its command
 * handler fills an rbd_op_t and calls rbd_op_run.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "bloom.h"   /* lib: the dump formats (bloom_dump.c) */
#include "bytes.h"
#include "ops.h"
#include "ops_apply.h"
#include "rbd_log.h"
#include "seg_txn.h"

typedef enum field_kind {
    F_END = 0,
    F_U32,          /* u32 at off */
    F_U64,          /* u64 at off */
    F_F64,          /* double at off, its IEEE-754 bits as a u64 */
    F_NAME,         /* u16 length, bytes: op->name, op->len */
    F_SECRET,       /* RB_BLOOM_SECRET_BYTES bytes: op->params.secret */
    F_KEYS,         /* u32 count, count x (u32 length, bytes): op->keys, op->nkeys */
    F_BLOB,         /* u32 length, bytes: op->data, op->dlen */
} field_kind_t;

typedef struct field {
    uint8_t kind;
    uint16_t off;   /* F_U32, F_U64, F_F64: the member of rbd_op_t */
} field_t;

/* What undoing a ring op needs: the node's weight and the mode before it. */
typedef struct ring_prev {
    uint32_t weight, mode, replicas, state;
} ring_prev_t;

#define OP_SYNC    0x1u   /* its record is fsync'd before the reply (P2) */
#define OP_PARTIAL 0x2u   /* a failure may leave a prefix applied: that is logged */

typedef struct op_def {
    const char *name;
    rbd_names_t names;
    unsigned flags;
    /* A filter op's apply (live or replay), or a ring op's change of the
     * model (undo: back to what undo says; published by ring_apply). */
    int (*apply)(rbd_state_t *st, rbd_op_t *op, int live);
    int (*ring)(rb_ring_t *ring, rbd_op_t *op, const ring_prev_t *undo);
    field_t fields[10];   /* ended by F_END */
} op_def_t;

/* ---- ring ops --------------------------------------------------------------------- */

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
    int table = mode == RB_RING_MAGLEV || mode == RB_RING_SLOTS;   /* replicas: M */
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
    if (rc == RB_OK && live && (rc = rb_ring_publish(r, st->seg)) == RB_OK)
        st->ring_changes++;
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
    return op->type == RBD_OP_RING_SLOTS || (prev->mode == RB_RING_SLOTS && prev->replicas != 0);
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

/* A ring op: the model changes; live, it is published, and on a failed
 * publish the change is undone (readers never saw it) and the error is the
 * publish's (op->publish_failed). */
static int ring_apply(rbd_state_t *st, const op_def_t *d, rbd_op_t *op, int live)
{
    ring_prev_t prev = { 0, (uint32_t)rb_ring_mode(st->ring), rb_ring_replicas(st->ring), 0 };
    int rc;

    if (!live)
        return d->ring(st->ring, op, NULL);
    if (op->type == RBD_OP_RING_REMOVE || op->type == RBD_OP_RING_WEIGHT)
        prev.weight = node_weight(st->seg, op->name, op->len);
    if (op->type == RBD_OP_RING_STATE) {
        int was = rb_ring_state(st->ring, op->name, op->len);
        prev.state = was >= 0 ? (uint32_t)was : RB_NODE_UP;
    }
    rc = d->ring(st->ring, op, NULL);
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
    if ((undo_by_reload(op, &prev) ? reload(st) : d->ring(st->ring, op, &prev)) != RB_OK)
        rbd_log(LOG_WARNING, "ring model and segment diverged after a failed publish");
    op->publish_failed = 1;
    return rc;
}

/* ---- filter ops -------------------------------------------------------------------- */

static int bf_reserve(rbd_state_t *st, rbd_op_t *op, int live)
{
    (void)live;   /* live, the caller chose the secret, so the log can replay it */
    return rb_bloom_reserve(st->seg, op->name, op->len, &op->params);
}

/* Live, the keys before a failure stay added and are what is logged; the
 * replay of a record takes a full non-scaling filter as it found it (its
 * keys are already there or cannot be added, live and replayed alike). */
static int bf_add(rbd_state_t *st, rbd_op_t *op, int live)
{
    int64_t rc = rb_bloom_add_many(op->bf, op->keys, op->nkeys, op->fresh);
    size_t done = 0;

    if (!live)
        return rc < 0 && rc != RB_EFULL ? (int)rc : RB_OK;
    if (rc >= 0) {
        st->bf_adds += (uint64_t)rc;
        return RB_OK;
    }
    for (; done < op->nkeys && op->fresh[done] != RB_BLOOM_NOT_ADDED; done++)
        st->bf_adds += op->fresh[done];
    op->nkeys = done;
    return (int)rc;
}

/* Live: if the window passed at op->now (else a no-op); replayed: the
 * rotation that was logged. */
static int bf_rotate(rbd_state_t *st, rbd_op_t *op, int live)
{
    int rc;

    (void)st;
    if (!live)
        return rb_bloom_rotate(op->bf);
    rc = rb_bloom_rotate_due(op->bf, op->now);
    op->noop = rc == 0;
    return rc < 0 ? rc : RB_OK;
}

static int bf_reset(rbd_state_t *st, rbd_op_t *op, int live)
{
    (void)st;
    (void)live;
    return rb_bloom_reset(op->bf);
}

/* The filter's slot and arrays are freed (rb_bloom_delete) and its handle
 * dropped; op->bf is not used after.  op->bf NULL: the name holds a
 * filter of another kind (it resolved to RB_EWRONGTYPE), freed by its
 * kind's delete (ops_sketch.c). */
static int bf_delete(rbd_state_t *st, rbd_op_t *op, int live)
{
    int rc;

    (void)live;
    if (op->bf == NULL)
        return rbd_apply_delete_other(st, op);
    rc = rb_bloom_delete(st->seg, op->name, op->len);
    if (rc == RB_OK)
        rbd_filters_forget(&st->filters, op->name, op->len);
    return rc;
}

/* A header chunk (iter 1, no such filter) creates the filter, live at
 * once with zeroed arrays; a data chunk stores its bytes into the arrays
 * (bloom_dump.c).  Which a record needs depends on its iterator, so the
 * filter is opened here (a handle of its own, closed after), not by the
 * replay's name resolution. */
static int bf_loadchunk(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_bloom_t *bf;
    int rc;

    (void)live;
    rc = rb_bloom_open(st->seg, op->name, op->len, &bf);
    if (rc == RB_ENOENT && op->iter == 1)
        return rbi_bloom_load_header(st->seg, op->name, op->len, op->data, op->dlen, &op->why);
    if (rc != RB_OK)
        return rc;
    rc = rbi_bloom_load_chunk(bf, op->iter, op->data, op->dlen, &op->why);
    rb_bloom_close(bf);
    return rc;
}


/* ---- the table ---------------------------------------------------------------------- */

#define U32(m) { F_U32, offsetof(rbd_op_t, m) }
#define U64(m) { F_U64, offsetof(rbd_op_t, m) }
#define F64(m) { F_F64, offsetof(rbd_op_t, m) }
#define NAME   { F_NAME, 0 }
#define SECRET { F_SECRET, 0 }
#define KEYS   { F_KEYS, 0 }
#define BLOB   { F_BLOB, 0 }

_Static_assert(sizeof(rb_bloom_layout_t) == sizeof(uint32_t), "layout is logged as a u32");
_Static_assert(sizeof(int) == sizeof(uint32_t), "cms.small is logged as a u32");

static const op_def_t ops[] = {
    [RBD_OP_RING_ADD] = { "RING.ADD", RBD_NAMES_NODE, OP_SYNC, NULL, ring_add,
                          { U32(weight), NAME } },
    [RBD_OP_RING_REMOVE] = { "RING.REMOVE", RBD_NAMES_NODE, OP_SYNC, NULL, ring_remove,
                             { NAME } },
    [RBD_OP_RING_WEIGHT] = { "RING.WEIGHT", RBD_NAMES_NODE, OP_SYNC, NULL, ring_weight,
                             { U32(weight), NAME } },
    [RBD_OP_RING_MODE] = { "RING.MODE", RBD_NAMES_NOTHING, OP_SYNC, NULL, ring_mode,
                           { U32(mode), U32(replicas) } },
    [RBD_OP_BF_RESERVE] = { "BF.RESERVE", RBD_NAMES_NEW_FILTER, OP_SYNC, bf_reserve, NULL,
                            { NAME, U64(params.capacity), F64(params.error_rate),
                              U32(params.layout), U32(params.flags), U32(params.expansion),
                              U32(params.generations), U32(params.window), SECRET } },
    [RBD_OP_BF_ADD] = { "BF.ADD", RBD_NAMES_FILTER, OP_PARTIAL, bf_add, NULL, { NAME, KEYS } },
    [RBD_OP_BF_ROTATE] = { "BF.ROTATE", RBD_NAMES_FILTER, 0, bf_rotate, NULL, { NAME } },
    [RBD_OP_BF_RESET] = { "BF.RESET", RBD_NAMES_FILTER, OP_SYNC, bf_reset, NULL, { NAME } },
    /* Not an op: the frame of a transaction's records (rbd_op_txn_begin);
     * replay.c replays its members. */
    [RBD_OP_TXN] = { "TXN", RBD_NAMES_NOTHING, 0, NULL, NULL, { { F_END, 0 } } },
    [RBD_OP_BF_DELETE] = { "DEL", RBD_NAMES_FILTER, OP_SYNC, bf_delete, NULL, { NAME } },
    [RBD_OP_BF_LOADCHUNK] = { "BF.LOADCHUNK", RBD_NAMES_NOTHING, OP_SYNC, bf_loadchunk, NULL,
                              { NAME, U64(iter), BLOB } },
    [RBD_OP_RING_STATE] = { "RING.STATE", RBD_NAMES_NODE, OP_SYNC, NULL, ring_state,
                            { U32(state), NAME } },
    [RBD_OP_RING_SLOTS] = { "RING.SLOTS", RBD_NAMES_NOTHING, OP_SYNC, NULL, ring_slots,
                            { KEYS } },
    /* Both create their counter if missing, so they name nothing to
     * resolve; a counter is no rb_bloom_t. */
    [RBD_OP_PFADD] = { "PFADD", RBD_NAMES_NOTHING, 0, rbd_apply_pf_add, NULL, { NAME, KEYS } },
    [RBD_OP_PFMERGE] = { "PFMERGE", RBD_NAMES_NOTHING, 0, rbd_apply_pf_merge, NULL, { NAME, KEYS } },
    /* Sketches are not Bloom handles: their ops resolve their names. */
    [RBD_OP_CMS_INIT] = { "CMS.INIT", RBD_NAMES_NOTHING, OP_SYNC, rbd_apply_cms_init, NULL,
                          { NAME, U32(cms.width), U32(cms.depth), U32(cms.small),
                            U64(cms.aging), SECRET } },
    [RBD_OP_CMS_INCRBY] = { "CMS.INCRBY", RBD_NAMES_NOTHING, 0, rbd_apply_cms_incrby, NULL,
                            { NAME, KEYS } },
    [RBD_OP_CMS_MERGE] = { "CMS.MERGE", RBD_NAMES_NOTHING, OP_SYNC, rbd_apply_cms_merge, NULL,
                           { NAME, KEYS } },
    /* Cuckoo filters resolve their names too; CF_ADD logs the keys added. */
    [RBD_OP_CF_RESERVE] = { "CF.RESERVE", RBD_NAMES_NOTHING, OP_SYNC, rbd_apply_cf_reserve, NULL,
                            { NAME, U64(cf.capacity), U32(cf.bucket_size),
                              U32(cf.max_iterations), U32(cf.expansion), U32(cf.fp_bits),
                              SECRET } },
    [RBD_OP_CF_ADD] = { "CF.ADD", RBD_NAMES_NOTHING, OP_PARTIAL, rbd_apply_cf_add, NULL,
                        { NAME, KEYS } },
    [RBD_OP_CF_DEL] = { "CF.DEL", RBD_NAMES_NOTHING, 0, rbd_apply_cf_del, NULL, { NAME, KEYS } },
    [RBD_OP_CF_LOADCHUNK] = { "CF.LOADCHUNK", RBD_NAMES_NOTHING, OP_SYNC, rbd_apply_cf_loadchunk,
                              NULL, { NAME, U64(iter), BLOB } },
    [RBD_OP_RING_SYNC] = { "RING.SYNC", RBD_NAMES_NOTHING, OP_SYNC, ring_sync, NULL,
                           { U64(revision), U32(mode), U32(replicas), KEYS } },
    /* Counting Bloom filters resolve their names too (ops_cbf.c). */
    [RBD_OP_CBF_RESERVE] = { "CBF.RESERVE", RBD_NAMES_NOTHING, OP_SYNC, rbd_apply_cbf_reserve,
                             NULL, { NAME, U64(cbf.capacity), F64(cbf.error_rate),
                                     U32(cbf.counter_bits), SECRET } },
    [RBD_OP_CBF_ADD] = { "CBF.ADD", RBD_NAMES_NOTHING, OP_PARTIAL, rbd_apply_cbf_add, NULL,
                         { NAME, KEYS } },
    [RBD_OP_CBF_DEL] = { "CBF.DEL", RBD_NAMES_NOTHING, 0, rbd_apply_cbf_del, NULL, { NAME, KEYS } },
    [RBD_OP_CBF_LOADCHUNK] = { "CBF.LOADCHUNK", RBD_NAMES_NOTHING, OP_SYNC,
                               rbd_apply_cbf_loadchunk, NULL, { NAME, U64(iter), BLOB } },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

const char *rbd_op_name(unsigned type)
{
    return type < NOPS ? ops[type].name : NULL;
}

rbd_names_t rbd_op_names(unsigned type)
{
    return type < NOPS ? ops[type].names : RBD_NAMES_NOTHING;
}

static int apply(rbd_state_t *st, const op_def_t *d, rbd_op_t *op, int live)
{
    return d->ring != NULL ? ring_apply(st, d, op, live) : d->apply(st, op, live);
}

/* ---- the encoder --------------------------------------------------------------------- */

/* u32 count, then each key's u32 length and bytes: gathered in a chunk on
 * the stack and appended a chunk at a time (two appends per key were a
 * tenth of a bulk load's time); a key longer than the chunk goes alone. */
static void put_keys(rbd_aof_t *aof, const rbd_op_t *op)
{
    unsigned char chunk[8192];
    size_t at = 4;

    rbd_put_u32(chunk, (uint32_t)op->nkeys);
    for (size_t i = 0; i < op->nkeys; i++) {
        size_t len = op->keys[i].len;
        if (at + 4 + len > sizeof(chunk)) {
            rbd_aof_put(aof, chunk, at);
            at = 0;
        }
        rbd_put_u32(chunk + at, (uint32_t)len);
        at += 4;
        if (len > sizeof(chunk) - 4) {
            rbd_aof_put(aof, chunk, at);
            rbd_aof_put(aof, op->keys[i].ptr, len);
            at = 0;
            continue;
        }
        memcpy(chunk + at, op->keys[i].ptr, len);
        at += len;
    }
    rbd_aof_put(aof, chunk, at);
}

/* A u32 (width 4) or u64 / f64 (width 8) member m, little-endian. */
static void put_int(rbd_aof_t *aof, const char *m, size_t width)
{
    unsigned char b[8];
    uint32_t u32;
    uint64_t v;

    if (width == 4) {
        memcpy(&u32, m, 4);
        v = u32;
    } else {
        memcpy(&v, m, 8);
    }
    for (size_t i = 0; i < width; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    rbd_aof_put(aof, b, width);
}

static void put_field(rbd_aof_t *aof, const field_t *f, const rbd_op_t *op)
{
    unsigned char b[2];

    switch ((field_kind_t)f->kind) {
    case F_U32:
        put_int(aof, (const char *)op + f->off, 4);
        break;
    case F_U64:
    case F_F64:
        put_int(aof, (const char *)op + f->off, 8);
        break;
    case F_NAME:
        b[0] = (unsigned char)op->len;
        b[1] = (unsigned char)(op->len >> 8);
        rbd_aof_put(aof, b, 2);
        rbd_aof_put(aof, op->name, op->len);
        break;
    case F_SECRET:
        rbd_aof_put(aof, op->params.secret, RB_BLOOM_SECRET_BYTES);
        break;
    case F_KEYS:
        put_keys(aof, op);
        break;
    case F_BLOB:
        put_int(aof, (const char *)&(uint32_t){ (uint32_t)op->dlen }, 4);
        rbd_aof_put(aof, op->data, op->dlen);
        break;
    case F_END:
        break;
    }
}

int rbd_op_run(rbd_state_t *st, rbd_aof_t *aof, rbd_op_t *op)
{
    const op_def_t *d = &ops[op->type];
    int rc = apply(st, d, op, 1);
    size_t start;

    if (rc == RB_OK ? op->noop : !(d->flags & OP_PARTIAL) || op->nkeys == 0)
        return rc;
    start = rbd_aof_record_begin(aof, (uint8_t)op->type);
    for (const field_t *f = d->fields; f->kind != F_END; f++)
        put_field(aof, f, op);
    rbd_aof_record_end(aof, start, (d->flags & OP_SYNC) != 0);
    return rc;
}

size_t rbd_op_txn_begin(rbd_state_t *st, rbd_aof_t *aof)
{
    rbi_segment_txn_begin(st->seg);
    return rbd_aof_record_begin(aof, RBD_OP_TXN);
}

void rbd_op_txn_end(rbd_state_t *st, rbd_aof_t *aof, size_t start)
{
    rbi_segment_txn_end(st->seg);
    /* Each member asked for its own fsync (P2) as it was appended. */
    if (aof->pending.len == start + RBD_REC_HDR)
        rbd_aof_record_drop(aof, start);
    else
        rbd_aof_record_end(aof, start, 0);
}

int rbd_op_replay(rbd_state_t *st, rbd_op_t *op)
{
    return apply(st, &ops[op->type], op, 0);
}

/* ---- the decoder --------------------------------------------------------------------- */

static int get_keys(const unsigned char *p, size_t n, size_t *i, rbd_op_t *op,
                    rbd_keys_t *scratch)
{
    uint32_t count = rbd_get_u32(p + *i);

    *i += 4;
    if (count > (n - *i) / 4)
        return RB_ETRUNC;   /* each key takes 4 bytes at least */
    if (count > scratch->cap) {
        rb_key_t *v = realloc(scratch->v, count * sizeof(*v));
        if (v == NULL)
            return RB_ENOMEM;
        scratch->v = v;
        scratch->cap = count;
    }
    for (uint32_t k = 0; k < count; k++) {
        uint32_t len;
        if (n - *i < 4)
            return RB_ETRUNC;
        len = rbd_get_u32(p + *i);
        *i += 4;
        if (n - *i < len)
            return RB_ETRUNC;
        scratch->v[k].ptr = p + *i;
        scratch->v[k].len = len;
        *i += len;
    }
    op->keys = scratch->v;
    op->nkeys = count;
    return RB_OK;
}

static int get_field(const field_t *f, const unsigned char *p, size_t n, size_t *i,
                     rbd_op_t *op, rbd_keys_t *scratch)
{
    static const size_t fixed[] = { [F_U32] = 4, [F_U64] = 8, [F_F64] = 8, [F_NAME] = 2,
                                    [F_SECRET] = RB_BLOOM_SECRET_BYTES, [F_KEYS] = 4,
                                    [F_BLOB] = 4 };
    char *m = (char *)op + f->off;
    uint32_t u32;
    uint64_t u64;

    if (n - *i < fixed[f->kind])
        return RB_ETRUNC;
    switch ((field_kind_t)f->kind) {
    case F_U32:
        u32 = rbd_get_u32(p + *i);
        memcpy(m, &u32, 4);
        break;
    case F_U64:
    case F_F64:
        u64 = rbd_get_u64(p + *i);
        memcpy(m, &u64, 8);
        break;
    case F_NAME:
        op->len = rbd_get_u16(p + *i);
        if (n - *i - 2 < op->len)
            return RB_ETRUNC;
        op->name = (const char *)p + *i + 2;
        *i += op->len;
        break;
    case F_SECRET:
        op->params.secret = p + *i;
        break;
    case F_KEYS:
        return get_keys(p, n, i, op, scratch);
    case F_BLOB:
        op->dlen = rbd_get_u32(p + *i);
        if (n - *i - 4 < op->dlen)
            return RB_ETRUNC;
        op->data = p + *i + 4;
        *i += op->dlen;
        break;
    case F_END:
        break;
    }
    *i += fixed[f->kind];
    return RB_OK;
}

int rbd_op_decode(unsigned type, const unsigned char *p, size_t n, rbd_op_t *op,
                  rbd_keys_t *scratch)
{
    size_t i = 0;
    int rc;

    memset(op, 0, sizeof(*op));
    op->type = (rbd_op_type_t)type;
    for (const field_t *f = ops[type].fields; f->kind != F_END; f++)
        if ((rc = get_field(f, p, n, &i, op, scratch)) != RB_OK)
            return rc;
    return RB_OK;
}
