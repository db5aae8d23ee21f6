/*
 * ops_hll.c - the HyperLogLog counter's ops (PFADD, PFMERGE): their rows
 * (ops_def.h) and how they apply through the library's writer, live or
 * replayed alike.
 */
#include "config.h"

#include "ops_def.h"

/* PFADD: live, a PFADD that created nothing and raised no register is a
 * no-op (logged as nothing: its replay would change nothing either). */
static int pf_add(rbd_state_t *st, rbd_op_t *op, int live)
{
    int rc = rb_hll_add(st->seg, op->name, op->len, op->keys, op->nkeys);

    if (rc < 0)
        return rc;
    op->noop = live && rc == 0;
    return RB_OK;
}

static int pf_merge(rbd_state_t *st, rbd_op_t *op, int live)
{
    (void)live;
    return rb_hll_merge(st->seg, op->name, op->len, op->keys, op->nkeys);
}

/* Both create their counter if missing, so they name nothing to resolve;
 * a counter is no rb_bloom_t. */
const rbd_op_def_t rbd_ops_hll[] = {
    { RBD_OP_PFADD, "PFADD", RBD_NAMES_NOTHING, 0, pf_add, { RBD_NAME, RBD_KEYS } },
    { RBD_OP_PFMERGE, "PFMERGE", RBD_NAMES_NOTHING, 0, pf_merge, { RBD_NAME, RBD_KEYS } },
    RBD_OP_END,
};
