/*
 * ops_bloom.c - the Bloom filter's ops (BF.RESERVE, BF.ADD, the aging
 * rotation, BF.RESET, BF.LOADCHUNK): their rows (ops_def.h) and how they
 * apply, live or replayed alike.  DEL of any kind is ops.c's.
 */
#include "config.h"

#include "bloom.h"   /* lib: the dump formats (bloom_dump.c) */
#include "ops_def.h"

/* The new filter is told to the handle cache (an aging one is ticked). */
static int bf_reserve(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_bloom_params_t p = op->params;
    int rc;

    (void)live;   /* live, the caller chose the secret, so the log can replay it */
    p.secret = op->secret;
    rc = rb_bloom_reserve(st->seg, op->name, op->len, &p);
    if (rc == RB_OK)
        rbd_filters_made(&st->filters, st->seg, op->name, op->len);
    return rc;
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
    if (rc == RB_ENOENT && op->iter == 1) {
        rc = rbi_bloom_load_header(st->seg, op->name, op->len, op->data, op->dlen, &op->why);
        if (rc == RB_OK)
            rbd_filters_made(&st->filters, st->seg, op->name, op->len);
        return rc;
    }
    if (rc != RB_OK)
        return rc;
    rc = rbi_bloom_load_chunk(bf, op->iter, op->data, op->dlen, &op->why);
    rb_bloom_close(bf);
    return rc;
}

uint64_t rbd_bf_reserve_bytes(const rb_bloom_params_t *p)
{
    uint32_t layers = 1;
    double rate = p->error_rate;
    rb_bloom_sizing_t sz;

    if (p->flags & RB_BLOOM_AGING) {
        layers = p->generations != 0 ? p->generations : 2;
        rate /= layers;
    } else if (!(p->flags & RB_BLOOM_NONSCALING)) {
        rate /= 2;
    }
    if (rb_bloom_size(p->capacity, rate, p->layout, &sz) != RB_OK)
        return 0;
    return sz.bytes > UINT64_MAX / layers ? UINT64_MAX : sz.bytes * layers;
}

/* ---- the rows ---------------------------------------------------------------------- */

_Static_assert(sizeof(rb_bloom_layout_t) == sizeof(uint32_t), "layout is logged as a u32");

const rbd_op_def_t rbd_ops_bloom[] = {
    { RBD_OP_BF_RESERVE, "BF.RESERVE", RBD_NAMES_NEW_FILTER, RBD_OP_SYNC, bf_reserve,
      { RBD_NAME, RBD_U64(params.capacity), RBD_F64(params.error_rate), RBD_U32(params.layout),
        RBD_U32(params.flags), RBD_U32(params.expansion), RBD_U32(params.generations),
        RBD_U32(params.window), RBD_SECRET } },
    { RBD_OP_BF_ADD, "BF.ADD", RBD_NAMES_FILTER, RBD_OP_PARTIAL, bf_add, { RBD_NAME, RBD_KEYS } },
    { RBD_OP_BF_ROTATE, "BF.ROTATE", RBD_NAMES_FILTER, 0, bf_rotate, { RBD_NAME } },
    { RBD_OP_BF_RESET, "BF.RESET", RBD_NAMES_FILTER, RBD_OP_SYNC, bf_reset, { RBD_NAME } },
    { RBD_OP_BF_LOADCHUNK, "BF.LOADCHUNK", RBD_NAMES_NOTHING, RBD_OP_SYNC, bf_loadchunk,
      { RBD_NAME, RBD_U64(iter), RBD_BLOB } },
    RBD_OP_END,
};
