/*
 * ops_cbf.c - the counting Bloom filter's ops (CBF_RESERVE, CBF_ADD,
 * CBF_DEL, CBF_LOADCHUNK): their rows (ops_def.h) and how they apply
 * through the library's writer (lib/cbf*.c), live or replayed alike.
 */
#include "config.h"

#include "cbf_impl.h"   /* lib: rbi_cbf_load_header / load_chunk */
#include "ops_def.h"

/* Live, the caller chose the secret (op->secret), so the log can replay
 * it. */
static int cbf_reserve(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cbf_params_t p = op->cbf;

    (void)live;
    p.secret = op->secret;
    return rb_cbf_reserve(st->seg, op->name, op->len, &p);
}

/* The keys in order, stopping at the first failure (RB_EFULL: capacity
 * keys present): live, op->nkeys becomes the count added, which is what
 * is logged (RBD_OP_PARTIAL); replayed, a record holds only keys that were
 * added, so each is added again. */
static int cbf_add(rbd_state_t *st, rbd_op_t *op, int live)
{
    for (size_t i = 0; i < op->nkeys; i++) {
        int rc = rb_cbf_add(st->seg, op->name, op->len, op->keys[i].ptr, op->keys[i].len);
        if (rc < 0) {
            if (live)
                op->nkeys = i;
            return rc;
        }
    }
    return RB_OK;
}

/* Live: op->noop if the delete was refused (a counter of the key is 0:
 * nothing changed, nothing to log).  Replayed: a record is only logged
 * for a delete done live. */
static int cbf_del(rbd_state_t *st, rbd_op_t *op, int live)
{
    int rc;

    if (op->nkeys != 1)
        return RB_EINVAL;
    rc = rb_cbf_del(st->seg, op->name, op->len, op->keys[0].ptr, op->keys[0].len);
    if (rc < 0)
        return rc;
    op->noop = live && rc == 0;
    return RB_OK;
}

/* CBF.LOADCHUNK: a header (iter 1, no such filter) creates the filter; a
 * data chunk stores its bytes at the position its iterator names. */
static int cbf_loadchunk(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cbf_t *h;
    int rc;

    (void)live;
    rc = rb_cbf_open(st->seg, op->name, op->len, &h);
    if (rc == RB_ENOENT && op->iter == 1)
        return rbi_cbf_load_header(st->seg, op->name, op->len, op->data, op->dlen, &op->why);
    if (rc != RB_OK)
        return rc;
    rb_cbf_close(h);
    return rbi_cbf_load_chunk(st->seg, op->name, op->len, op->iter, op->data, op->dlen,
                              &op->why);
}

/* Counting Bloom filters resolve their names (no Bloom handle). */
const rbd_op_def_t rbd_ops_cbf[] = {
    { RBD_OP_CBF_RESERVE, "CBF.RESERVE", RBD_NAMES_NOTHING, RBD_OP_SYNC, cbf_reserve,
      { RBD_NAME, RBD_U64(cbf.capacity), RBD_F64(cbf.error_rate), RBD_U32(cbf.counter_bits),
        RBD_SECRET } },
    { RBD_OP_CBF_ADD, "CBF.ADD", RBD_NAMES_NOTHING, RBD_OP_PARTIAL, cbf_add,
      { RBD_NAME, RBD_KEYS } },
    { RBD_OP_CBF_DEL, "CBF.DEL", RBD_NAMES_NOTHING, 0, cbf_del, { RBD_NAME, RBD_KEYS } },
    { RBD_OP_CBF_LOADCHUNK, "CBF.LOADCHUNK", RBD_NAMES_NOTHING, RBD_OP_SYNC, cbf_loadchunk,
      { RBD_NAME, RBD_U64(iter), RBD_BLOB } },
    RBD_OP_END,
};
