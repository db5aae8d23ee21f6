/*
 * ops_apply.h - the apply functions of the ops of the filter kinds other
 * than the Bloom filter (ops_sketch.c; the counting Bloom filter's: ops_cbf.c), for ops.c's table.  Each has the
 * table's apply contract: live (a command, after which ops.c logs the op
 * as it then stands) or replayed (the decoded record), the same code.
 */
#ifndef RBD_OPS_APPLY_H
#define RBD_OPS_APPLY_H

#include "ops.h"
#include "state.h"

/* HyperLogLog (records 14, 15). */
int rbd_apply_pf_add(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_pf_merge(rbd_state_t *st, rbd_op_t *op, int live);

/* Count-min sketch (records 16-18). */
int rbd_apply_cms_init(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cms_incrby(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cms_merge(rbd_state_t *st, rbd_op_t *op, int live);

/* Cuckoo filter (records 19-22). */
int rbd_apply_cf_reserve(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cf_add(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cf_del(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cf_loadchunk(rbd_state_t *st, rbd_op_t *op, int live);

/* Counting Bloom filter (records 24-27, ops_cbf.c). */
int rbd_apply_cbf_reserve(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cbf_add(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cbf_del(rbd_state_t *st, rbd_op_t *op, int live);
int rbd_apply_cbf_loadchunk(rbd_state_t *st, rbd_op_t *op, int live);

/* DEL of a name that holds a filter of a kind other than the Bloom
 * filter: its kind's delete.  RB_ENOENT if no such kind holds it. */
int rbd_apply_delete_other(rbd_state_t *st, rbd_op_t *op);

#endif /* RBD_OPS_APPLY_H */
