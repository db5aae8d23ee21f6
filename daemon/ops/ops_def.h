/*
 * ops_def.h - an op's row: what ops.c needs to log, replay and run an op
 * of any family, declared here so that each family defines its rows beside
 * its apply functions (ops_ring.c, ops_bloom.c, ops_hll.c, ops_cms.c,
 * ops_cf.c, ops_cbf.c; DEL and TXN in ops.c) and ops.c assembles the table
 * from the families (its families[], where each is declared), as cmd.c
 * assembles the command tables.
 *
 * A row: its type (the log record's type byte, rbd_op_type_t in ops.h:
 * claimed there once, never reused), its name for messages, what its name
 * names (the replay resolves a Bloom filter's handle by it), its flags,
 * its apply (live or replayed, the same code) and its payload's fields in
 * order (they drive the one encoder and the one decoder in ops.c).
 */
#ifndef RBD_OPS_DEF_H
#define RBD_OPS_DEF_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

typedef enum rbd_field_kind {
    F_END = 0,
    F_U32,          /* u32 at off */
    F_U64,          /* u64 at off */
    F_F64,          /* double at off, its IEEE-754 bits as a u64 */
    F_NAME,         /* u16 length, bytes: op->name, op->len */
    F_SECRET,       /* RB_BLOOM_SECRET_BYTES bytes: op->secret (a new filter's, any kind) */
    F_KEYS,         /* u32 count, count x (u32 length, bytes): op->keys, op->nkeys */
    F_BLOB,         /* u32 length, bytes: op->data, op->dlen */
} rbd_field_kind_t;

typedef struct rbd_field {
    uint8_t kind;
    uint16_t off;   /* F_U32, F_U64, F_F64: the member of rbd_op_t */
} rbd_field_t;

#define RBD_OP_SYNC    0x1u   /* its record is fsync'd before the reply (P2) */
#define RBD_OP_PARTIAL 0x2u   /* a failure may leave a prefix applied: that is logged */
#define RBD_OP_RING    0x4u   /* a change of the ring's membership a ring source takes
                                 (rbd_op_changes_ring) */

typedef struct rbd_op_def {
    rbd_op_type_t type;   /* 0: the end of a family's rows */
    const char *name;
    rbd_names_t names;
    unsigned flags;
    int (*apply)(rbd_state_t *st, rbd_op_t *op, int live);
    rbd_field_t fields[10];   /* ended by F_END */
} rbd_op_def_t;

#define RBD_U32(m) { F_U32, offsetof(rbd_op_t, m) }
#define RBD_U64(m) { F_U64, offsetof(rbd_op_t, m) }
#define RBD_F64(m) { F_F64, offsetof(rbd_op_t, m) }
#define RBD_NAME   { F_NAME, 0 }
#define RBD_SECRET { F_SECRET, 0 }
#define RBD_KEYS   { F_KEYS, 0 }
#define RBD_BLOB   { F_BLOB, 0 }
#define RBD_OP_END { 0, NULL, RBD_NAMES_NOTHING, 0, NULL, { { F_END, 0 } } }

#endif /* RBD_OPS_DEF_H */
