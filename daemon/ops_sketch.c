/*
 * ops_sketch.c - how the ops of the filter kinds other than the Bloom
 * filter apply (HyperLogLog, count-min sketch, cuckoo filter): each calls
 * its kind's library writer, live or replayed alike.  The table that
 * names them, their record layouts and the logging are ops.c's.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cuckoo_impl.h"   /* lib: rbi_cuckoo_load_header / load_chunk */
#include "ops_apply.h"

/* ---- HyperLogLog ops ---------------------------------------------------------------- */

/* PFADD: live, a PFADD that created nothing and raised no register is a
 * no-op (logged as nothing: its replay would change nothing either). */
int rbd_apply_pf_add(rbd_state_t *st, rbd_op_t *op, int live)
{
    int rc = rb_hll_add(st->seg, op->name, op->len, op->keys, op->nkeys);

    if (rc < 0)
        return rc;
    op->noop = live && rc == 0;
    return RB_OK;
}

int rbd_apply_pf_merge(rbd_state_t *st, rbd_op_t *op, int live)
{
    (void)live;
    return rb_hll_merge(st->seg, op->name, op->len, op->keys, op->nkeys);
}

/* ---- count-min sketch ops --------------------------------------------------------- */

size_t rbd_cms_pair(unsigned char *buf, uint64_t v, const void *p, size_t len)
{
    for (int b = 0; b < 8; b++)
        buf[b] = (unsigned char)(v >> (8 * b));
    memcpy(buf + RBD_CMS_PAIR_HDR, p, len);
    return RBD_CMS_PAIR_HDR + len;
}

/* Splits op's pairs into values and the bytes after them (keys[i] then
 * names the item or source).  RB_EINVAL for a pair without its value. */
static int cms_pairs(const rbd_op_t *op, rb_key_t *keys, uint64_t *v)
{
    for (size_t i = 0; i < op->nkeys; i++) {
        const unsigned char *k = op->keys[i].ptr;
        if (op->keys[i].len < RBD_CMS_PAIR_HDR)
            return RB_EINVAL;
        v[i] = rbd_get_u64(k);
        keys[i].ptr = k + RBD_CMS_PAIR_HDR;
        keys[i].len = op->keys[i].len - RBD_CMS_PAIR_HDR;
    }
    return RB_OK;
}

int rbd_apply_cms_init(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cms_params_t p = op->cms;

    (void)live;   /* live, the caller chose the secret, so the log can replay it */
    p.secret = op->params.secret;
    return rb_cms_create(st->seg, op->name, op->len, &p);
}

/* The increments all apply or none does (rb_cms_incrby fails only before
 * its first change). */
int rbd_apply_cms_incrby(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_key_t *keys = malloc((op->nkeys ? op->nkeys : 1) * sizeof(*keys));
    uint64_t *v = malloc((op->nkeys ? op->nkeys : 1) * sizeof(*v));
    int rc = keys == NULL || v == NULL ? RB_ENOMEM : cms_pairs(op, keys, v);

    if (rc == RB_OK)
        rc = rb_cms_incrby(st->seg, op->name, op->len, keys, v, op->nkeys,
                           live ? op->est : NULL);
    free(keys);
    free(v);
    return rc;
}

int rbd_apply_cms_merge(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_key_t *keys = malloc((op->nkeys ? op->nkeys : 1) * sizeof(*keys));
    uint64_t *w = malloc((op->nkeys ? op->nkeys : 1) * sizeof(*w));
    const char **src = malloc((op->nkeys ? op->nkeys : 1) * sizeof(*src));
    size_t *slen = malloc((op->nkeys ? op->nkeys : 1) * sizeof(*slen));
    int rc = keys == NULL || w == NULL || src == NULL || slen == NULL ? RB_ENOMEM
             : cms_pairs(op, keys, w);

    (void)live;
    for (size_t i = 0; rc == RB_OK && i < op->nkeys; i++) {
        src[i] = keys[i].ptr;
        slen[i] = keys[i].len;
    }
    if (rc == RB_OK)
        rc = rb_cms_merge(st->seg, op->name, op->len, src, slen, op->nkeys, w);
    free(keys);
    free(w);
    free(src);
    free(slen);
    return rc;
}/* ---- cuckoo filter ops ------------------------------------------------------------- */

/* Live, the caller chose the secret (op->params.secret), so the log can
 * replay it. */
int rbd_apply_cf_reserve(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cuckoo_params_t p = op->cf;

    (void)live;
    p.secret = op->params.secret;
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
 * the keys added before it stay, and are logged (OP_PARTIAL).  Replayed:
 * the logged keys are added again in order onto the filter as it was, so
 * each lands where it landed live (rb_cuckoo_add is deterministic); any
 * refusal is an error of the log. */
int rbd_apply_cf_add(rbd_state_t *st, rbd_op_t *op, int live)
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
int rbd_apply_cf_del(rbd_state_t *st, rbd_op_t *op, int live)
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
int rbd_apply_cf_loadchunk(rbd_state_t *st, rbd_op_t *op, int live)
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

/* ---- DEL of another kind ---------------------------------------------------------- */

int rbd_apply_delete_other(rbd_state_t *st, rbd_op_t *op)
{
    static int (*const del[])(rb_segment_t *, const char *, size_t) = {
        rb_hll_delete, rb_cms_delete, rb_cuckoo_delete, rb_cbf_delete,
    };

    for (size_t i = 0; i < sizeof(del) / sizeof(del[0]); i++) {
        int rc = del[i](st->seg, op->name, op->len);
        if (rc != RB_ENOENT && rc != RB_EWRONGTYPE)
            return rc;
    }
    return RB_ENOENT;
}
