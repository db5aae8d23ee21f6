/*
 * ring_mode.h - a ring mode is one table of operations: where a key sits
 * on the 64-bit ring, how many points a node gets and where, and how equal
 * positions are ordered.  Each mode is one file (ring_mode_<name>.c)
 * defining one rbi_ring_mode_ops_t; ring_mode.c lists them by their
 * rb_ring_mode_t value.  The model (ring.c) and the readers (ring_read.c)
 * know no mode by name, nor does the daemon (RING.MODE's argument, RING_SYNC,
 * the etcd source ask the fields and the accessors below): every
 * difference between modes is a field here.
 *
 * Adding a mode: its value in rb_ring_mode_t (ringbloom/ring.h), its file, its
 * extern below and its entry in ring_mode.c's table (and the file in
 * Makefile.am).  Positions are part of what compatible clients compute, so
 * a mode never changes once published.
 *
 * Table modes (maglev, slots: `table` set) publish a table of M slots as
 * the copy's points: point i sits at position i << RBI_RING_TABLE_SHIFT
 * and is owned by table[i]; a key sits at (key_pos(key) mod M) <<
 * RBI_RING_TABLE_SHIFT.  Their points are not per node: fill makes the
 * whole table from the membership at once, on every change.
 */
#ifndef RBI_RING_MODE_H
#define RBI_RING_MODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ringbloom.h"

/* A node as the model keeps it (ring_model.h) and a table mode's fill
 * reads it. */
typedef struct rbi_ring_node {
    char    *name;
    uint32_t len;
    uint32_t weight;
    uint32_t seq;    /* order of addition: the "server list" order */
    uint32_t fresh;  /* added (or re-weighted) since the points were last
                        settled: none of the model's points is its */
    uint8_t state;   /* rb_node_state_t; 0 (up) for a node just added */
    uint8_t owns;    /* owned >= 1 point at the last full publish */
} rbi_ring_node_t;

/* A table mode's slot i is the point at position i << RBI_RING_TABLE_SHIFT
 * (M <= 2^24 = RB_RING_MAX_POINTS slots, so positions fit in 64 bits). */
#define RBI_RING_TABLE_SHIFT 40

/* One point of the model: a position and its owner. */
typedef struct rbi_ring_point {
    uint64_t pos;
    uint32_t node;   /* index into the model's nodes (sorted by name) */
    uint32_t tie;    /* order among equal positions: the node index, or its
                        seq where the mode's tie_by_seq */
} rbi_ring_point_t;

typedef struct rbi_ring_mode_ops {
    const char *name;    /* rb_ring_mode_name, rb_ring_mode_parse */
    /* A key's position.  Modes with 32-bit hashes use the top half
     * (p32 << 32), where the lower bound is the same.  Called once per
     * lookup through this table. */
    uint64_t (*key_pos)(const void *key, size_t len);
    /* Points of a node of `weight`, given the ring's replicas per unit of
     * weight and, for a mode that sizes nodes by their share, the
     * membership's total weight and node count. */
    uint64_t (*points)(uint32_t weight, uint32_t replicas, uint64_t total_weight,
                       size_t nnodes);
    /* An upper bound on the points of a membership of nnodes nodes
     * weighing total_weight together: the point limit is checked against
     * it before anything changes. */
    uint64_t (*points_bound)(uint64_t total_weight, size_t nnodes, uint32_t replicas);
    /* Stores the positions of the `count` points of node `name` (len
     * bytes) in out[i].pos; `mode` is this table. */
    void (*place)(const struct rbi_ring_mode_ops *mode, const char *name, size_t len,
                  size_t count, rbi_ring_point_t *out);
    /* Modes that place vnodes "name#r" (place = rbi_ring_place_vnodes):
     * the position of vnode r, s being its n bytes. */
    uint64_t (*vnode_hash)(const void *s, size_t n, uint64_t r);
    /* Equal positions are ordered by the order nodes were added (their
     * seq: the other side's server list) instead of by node name. */
    int tie_by_seq;
    /* A membership change re-sizes every node (shares of a fixed total):
     * the model marks its points stale and rebuilds them all when next
     * needed, instead of merging or dropping one node's points. */
    int resize_all;
    /* A table mode (maglev, slots): its points are the M slots of a table
     * (point i at i << RBI_RING_TABLE_SHIFT), a key's position is
     * (key_pos(key) mod M) << RBI_RING_TABLE_SHIFT, and a reader finds the
     * key's point as pos >> RBI_RING_TABLE_SHIFT without a search.  Such a
     * mode also sets resize_all, leaves points/place/vnode_hash NULL and
     * sets the three members below. */
    int table;
    /* Table modes: the largest value of the mode's parameter, which the
     * copy's replicas word carries instead of a replica count (maglev: the
     * table size asked for, 0 automatic; slots: 1 if the slot map was set
     * explicitly, 0 if it is balanced by weight). */
    uint32_t param_max;
    /* Table modes: M, the table's size, for a membership of nnodes nodes
     * and the mode's parameter (already checked by param_ok); 0 for no
     * nodes.  At most RB_RING_MAX_POINTS. */
    uint64_t (*table_size)(uint32_t param, size_t nnodes);
    /* Table modes: whether param is one the writer may set (maglev: 0 or
     * a prime table size). */
    int (*param_ok)(uint32_t param);
    /* Table modes: table[0 .. m) = the owner (an index into nodes[], which
     * is sorted by name) of each slot, made from the names, weights and
     * seqs of the n >= 1 nodes alone, so that the same membership always
     * gives the same table whatever the order of its changes.  RB_OK,
     * RB_ENOMEM. */
    int (*fill)(const rbi_ring_node_t *nodes, size_t n, uint64_t m, uint32_t *table);
    /* Table modes: the table may also be set slot by slot
     * (rb_ring_set_slots): the model then keeps it as an explicit map,
     * which membership changes edit instead of refilling (ring_table.c),
     * and its parameter is 1. */
    int map_settable;
    /* Table modes whose parameter is the table size M asked for (maglev):
     * what a size must be besides lying in [2, param_max], as RING.MODE's
     * refusal words it ("a prime"; param_ok decides).  NULL: the mode's
     * parameter is no size, and RING.MODE takes none (slots: RING.SLOTS
     * sets it). */
    const char *size_rule;
} rbi_ring_mode_ops_t;

extern const rbi_ring_mode_ops_t rbi_ring_mode_xxh3;    /* ring_mode_xxh3.c */
extern const rbi_ring_mode_ops_t rbi_ring_mode_ketama;  /* ring_mode_ketama.c */
extern const rbi_ring_mode_ops_t rbi_ring_mode_nginx;   /* ring_mode_nginx.c */
extern const rbi_ring_mode_ops_t rbi_ring_mode_seed;    /* ring_mode_seed.c */
extern const rbi_ring_mode_ops_t rbi_ring_mode_maglev;  /* ring_mode_maglev.c */
extern const rbi_ring_mode_ops_t rbi_ring_mode_slots;   /* ring_mode_slots.c */

/* The operations of mode value `mode` (a model's, or a published copy's
 * mode word), or NULL if there is no such mode. */
const rbi_ring_mode_ops_t *rbi_ring_mode_ops(uint64_t mode);

/* The facts the daemon asks of a mode value (a command's, a record's, an
 * etcd key's): 0 for a value that is no mode. */
static inline int rbi_ring_mode_is_table(uint64_t mode)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops(mode);

    return ops != NULL && ops->table;
}

static inline int rbi_ring_mode_map_settable(uint64_t mode)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops(mode);

    return ops != NULL && ops->map_settable;
}

/* ---- what several modes share ------------------------------------------ */

/* A place operation: `count` vnodes "name#r", r = 0 .. count - 1, at
 * mode->vnode_hash(vnode, r), the scheme of the xxh3 and seed modes. */
static inline void rbi_ring_place_vnodes(const struct rbi_ring_mode_ops *mode, const char *name,
                                         size_t len, size_t count, rbi_ring_point_t *out)
{
    char buf[RB_NODE_NAME_MAX + 24];

    memcpy(buf, name, len);
    for (size_t r = 0; r < count; r++) {
        int k = snprintf(buf + len, sizeof(buf) - len, "#%zu", r);
        out[r].pos = mode->vnode_hash(buf, len + (size_t)k, r);
    }
}

/* replicas x weight points per node: the rule of the xxh3 and seed modes. */
static inline uint64_t rbi_ring_points_by_replicas(uint32_t weight, uint32_t replicas,
                                                   uint64_t total_weight, size_t nnodes)
{
    (void)total_weight;
    (void)nnodes;
    return (uint64_t)replicas * weight;
}

static inline uint64_t rbi_ring_bound_by_replicas(uint64_t total_weight, size_t nnodes,
                                                  uint32_t replicas)
{
    (void)nnodes;
    return (uint64_t)replicas * total_weight;
}

/* "host:port" -> host and port as nginx splits a server string: the port
 * is the run of digits after the last ':' (nothing inserted when there is
 * none); a "unix:" prefix means no port (ring_mode_nginx.c).  ketama reads
 * its node names the same way. */
void rbi_ring_split_hostport(const char *name, size_t len, size_t *hostlen, const char **port,
                             size_t *portlen);

#endif /* RBI_RING_MODE_H */
