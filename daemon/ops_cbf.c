/*
 * ops_cbf.c - how the counting Bloom filter's ops apply (CBF_RESERVE,
 * CBF_ADD, CBF_DEL, CBF_LOADCHUNK): each calls the library's writer
 * (lib/cbf*.c), live or replayed alike.  The table that names them, their
 * record layouts and the logging are ops.c's.
 */
#include "config.h"

#include "cbf_impl.h"   /* lib: rbi_cbf_load_header / load_chunk */
#include "ops_apply.h"

/* Live, the caller chose the secret (op->params.secret), so the log can
 * replay it. */
int rbd_apply_cbf_reserve(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cbf_params_t p = op->cbf;

    (void)live;
    p.secret = op->params.secret;
    return rb_cbf_reserve(st->seg, op->name, op->len, &p);
}

/* The keys in order, stopping at the first failure (RB_EFULL: capacity
 * keys present): live, op->nkeys becomes the count added, which is what
 * is logged (OP_PARTIAL); replayed, a record holds only keys that were
 * added, so each is added again. */
int rbd_apply_cbf_add(rbd_state_t *st, rbd_op_t *op, int live)
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
int rbd_apply_cbf_del(rbd_state_t *st, rbd_op_t *op, int live)
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
int rbd_apply_cbf_loadchunk(rbd_state_t *st, rbd_op_t *op, int live)
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
