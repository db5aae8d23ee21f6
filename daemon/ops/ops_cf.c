/*
 * ops_cf.c - the cuckoo filter's ops (CF.RESERVE, CF.ADD and its
 * variants, CF.DEL, CF.LOADCHUNK): their rows (ops_def.h) and how they
 * apply through the library's writer, live or replayed alike.
 */
#include "config.h"

#include "cuckoo_impl.h"   /* lib: rbi_cuckoo_load_header / load_chunk */
#include "ops_def.h"

/* Live, the caller chose the secret (op->secret), so the log can replay
 * it. */
static int cf_reserve(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cuckoo_params_t p = op->cf;

    (void)live;
    p.secret = op->secret;
    return rb_cuckoo_reserve(st->seg, op->name, op->len, &p);
}

/* An add's refusal that leaves the filter as it was and lets the next
 * key be tried (RedisBloom's -1 of CF.INSERT): no room. */
static int no_room(int rc)
{
    return rc == RB_EFULL || rc == RB_ELAYERS || rc == RB_ENOSPC;
}

/* Live: each key of op->keys is added (with op->nx only if the filter
 * may not hold it yet), op->cf_res[i] its outcome (1 added, 0 held
 * already, or the no_room code); then op->keys are the added ones alone
 * (in op->cf_added), which is what is logged.  Another error stops there:
 * the keys added before it stay, and are logged (RBD_OP_PARTIAL).  Replayed:
 * the logged keys are added again in order onto the filter as it was, so
 * each lands where it landed live (rb_cuckoo_add is deterministic); any
 * refusal is an error of the log. */
static int cf_add(rbd_state_t *st, rbd_op_t *op, int live)
{
    size_t k = 0;
    int rc = RB_OK;

    for (size_t i = 0; i < op->nkeys; i++) {
        rc = rb_cuckoo_add(st->seg, op->name, op->len, op->keys[i].ptr, op->keys[i].len,
                           live && op->nx);
        if (!live) {
            if (rc != 1)
                return rc < 0 ? rc : RB_ECORRUPT;
            continue;
        }
        if (rc < 0 && !no_room(rc))
            break;
        op->cf_res[i] = rc;
        if (rc == 1)
            op->cf_added[k++] = op->keys[i];
    }
    if (!live)
        return RB_OK;
    op->keys = op->cf_added;
    op->nkeys = k;
    op->noop = k == 0;
    return rc < 0 && !no_room(rc) ? rc : RB_OK;
}

/* Live: op->noop if the key's fingerprint was not found (nothing to
 * log).  Replayed: a record is only logged for a key found live. */
static int cf_del(rbd_state_t *st, rbd_op_t *op, int live)
{
    int rc;

    if (op->nkeys != 1)
        return RB_EINVAL;
    rc = rb_cuckoo_del(st->seg, op->name, op->len, op->keys[0].ptr, op->keys[0].len);
    if (rc < 0)
        return rc;
    op->noop = live && rc == 0;
    return RB_OK;
}

/* CF.LOADCHUNK: a header (iter 1, no such filter) creates the filter; a
 * data chunk stores its bytes at the position its iterator names. */
static int cf_loadchunk(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cuckoo_t *h;
    int rc;

    (void)live;
    rc = rb_cuckoo_open(st->seg, op->name, op->len, &h);
    if (rc == RB_ENOENT && op->iter == 1)
        return rbi_cuckoo_load_header(st->seg, op->name, op->len, op->data, op->dlen, &op->why);
    if (rc != RB_OK)
        return rc;
    rb_cuckoo_close(h);
    return rbi_cuckoo_load_chunk(st->seg, op->name, op->len, op->iter, op->data, op->dlen,
                                 &op->why);
}

/* Cuckoo filters resolve their names too; CF_ADD logs the keys added. */
const rbd_op_def_t rbd_ops_cf[] = {
    { RBD_OP_CF_RESERVE, "CF.RESERVE", RBD_NAMES_NOTHING, RBD_OP_SYNC, cf_reserve,
      { RBD_NAME, RBD_U64(cf.capacity), RBD_U32(cf.bucket_size), RBD_U32(cf.max_iterations),
        RBD_U32(cf.expansion), RBD_U32(cf.fp_bits), RBD_SECRET } },
    { RBD_OP_CF_ADD, "CF.ADD", RBD_NAMES_NOTHING, RBD_OP_PARTIAL, cf_add, { RBD_NAME, RBD_KEYS } },
    { RBD_OP_CF_DEL, "CF.DEL", RBD_NAMES_NOTHING, 0, cf_del, { RBD_NAME, RBD_KEYS } },
    { RBD_OP_CF_LOADCHUNK, "CF.LOADCHUNK", RBD_NAMES_NOTHING, RBD_OP_SYNC, cf_loadchunk,
      { RBD_NAME, RBD_U64(iter), RBD_BLOB } },
    RBD_OP_END,
};
