/*
 * ops_cms.c - the count-min sketch's ops (CMS.INIT*, CMS.INCRBY, CMS.MERGE;
 * ADMIT.* logs through them): their rows (ops_def.h), the (value, bytes)
 * pairs their records carry, and how they apply through the library's
 * writer, live or replayed alike.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "ops_def.h"
#include "scratch.h"

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

static int cms_init(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_cms_params_t p = op->cms;

    (void)live;   /* live, the caller chose the secret, so the log can replay it */
    p.secret = op->secret;
    return rb_cms_create(st->seg, op->name, op->len, &p);
}

/* The increments all apply or none does (rb_cms_incrby fails only before
 * its first change). */
static int cms_incrby(rbd_state_t *st, rbd_op_t *op, int live)
{
    rb_key_t keys_s[RBD_SCRATCH_SMALL];
    uint64_t v_s[RBD_SCRATCH_SMALL];
    rb_key_t *keys = rbd_scratch(keys_s, sizeof(keys_s), op->nkeys, sizeof(*keys));
    uint64_t *v = rbd_scratch(v_s, sizeof(v_s), op->nkeys, sizeof(*v));
    int rc = keys == NULL || v == NULL ? RB_ENOMEM : cms_pairs(op, keys, v);

    if (rc == RB_OK)
        rc = rb_cms_incrby(st->seg, op->name, op->len, keys, v, op->nkeys,
                           live ? op->est : NULL);
    rbd_scratch_free(keys, keys_s);
    rbd_scratch_free(v, v_s);
    return rc;
}

static int cms_merge(rbd_state_t *st, rbd_op_t *op, int live)
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
}

_Static_assert(sizeof(int) == sizeof(uint32_t), "cms.small is logged as a u32");

/* Sketches are not Bloom handles: their ops resolve their names. */
const rbd_op_def_t rbd_ops_cms[] = {
    { RBD_OP_CMS_INIT, "CMS.INIT", RBD_NAMES_NOTHING, RBD_OP_SYNC, cms_init,
      { RBD_NAME, RBD_U32(cms.width), RBD_U32(cms.depth), RBD_U32(cms.small),
        RBD_U64(cms.aging), RBD_SECRET } },
    { RBD_OP_CMS_INCRBY, "CMS.INCRBY", RBD_NAMES_NOTHING, 0, cms_incrby, { RBD_NAME, RBD_KEYS } },
    { RBD_OP_CMS_MERGE, "CMS.MERGE", RBD_NAMES_NOTHING, RBD_OP_SYNC, cms_merge,
      { RBD_NAME, RBD_KEYS } },
    RBD_OP_END,
};
