/*
 * ring_model.h - the writer's ring model as its two files see it: ring.c
 * keeps the membership and its points, ring_copy.c serialises them into
 * a published copy and loads a model back from one.  Internal.
 */
#ifndef RBI_RING_MODEL_H
#define RBI_RING_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "ring_mode.h"

typedef rbi_ring_node_t ring_node_t;

typedef rbi_ring_point_t ring_point_t;

struct rb_ring {
    rb_ring_mode_t mode;
    const rbi_ring_mode_ops_t *ops;   /* mode's operations */
    uint32_t replicas;
    uint32_t next_seq;
    int stale;             /* pts[] predate a membership change (a mode
                              that re-sizes every node: ops->resize_all) */
    ring_node_t *nodes;    /* sorted by name (bytewise, shorter first) */
    size_t nnodes, ncap;
    size_t nfresh;         /* nodes marked fresh */
    uint64_t weights;      /* the nodes' total weight */
    ring_point_t *pts;     /* sorted by (pos, tie); pts[].node (and a tie
                              by name) index the settled nodes, i.e. the
                              nodes that are not fresh, in name order */
    size_t npts, pcap;
    /* Table modes (ops->table): the mode's parameter, published in the
     * copy's replicas word (ring_mode.h: maglev's table size asked for, 0
     * automatic; slots: 1 while `map` is set, else 0).  `replicas` stays
     * the vnode count for a later switch to another mode. */
    uint32_t tparam;
    /* An explicit table (ops->map_settable, rb_ring_set_slots): the owner
     * of each of its nmap slots, an index into nodes[]; NULL while the
     * mode's fill makes the table.  Set only in a map_settable mode, every
     * entry < nnodes. */
    uint32_t *map;
    size_t nmap;
    /* What a publish needs to write the states alone (ring_copy.c): the
     * active copy of pub_map (a mapping id) is the one this model wrote
     * at version pub_version, when `changes` was pub_changes. */
    uint64_t changes;      /* bumped by every change a copy shows besides
                              the states: nodes, weights, mode, slot map */
    uint64_t pub_changes, pub_version, pub_map;
    uint64_t source_rev;   /* published in the copy's source_rev word */
};

/* Binary search by name: 1 and *at = index if found, else 0 and *at =
 * the insertion point. */
int rbi_ring_node_find(const rb_ring_t *r, const char *name, size_t len, size_t *at);

/* An upper bound on r's points under mode ops (NULL: r's) if node name
 * (len bytes) weighed `weight`, added if missing (name NULL: the
 * membership as it is), with `replicas` per unit of weight (0: r's); for
 * a table mode, the size of its table (replicas: the mode's parameter
 * when ops is given, r's when not).  What the daemon checks its
 * max-ring-points against before a change is made or logged. */
uint64_t rbi_ring_points_with(const rb_ring_t *r, const rbi_ring_mode_ops_t *ops, const char *name,
                              size_t len, uint32_t weight, uint32_t replicas);

/* The points, brought up to date: a mode that re-sizes every node
 * rebuilds them, the others settle the fresh nodes.  RB_OK, RB_ENOMEM. */
int rbi_ring_fresh_points(rb_ring_t *r);

/* ---- table modes (ring_table.c) -------------------------------------- */

/* The points of r's membership under table mode ops with parameter param:
 * slot i at i << RBI_RING_TABLE_SHIFT, owned by r->map[i] if r has an
 * explicit map, else by the mode's fill; in a new array (*n of them, 0
 * for no nodes).  RB_OK, RB_ENOMEM. */
int rbi_ring_table_points(const rb_ring_t *r, const rbi_ring_mode_ops_t *ops, uint32_t param,
                          ring_point_t **out, size_t *n);

/* Makes r's table (its mode's fill: r has nodes) its explicit map, if it
 * has none yet.  RB_OK, RB_ENOMEM. */
int rbi_ring_table_make_explicit(rb_ring_t *r);

/* Keeps r's explicit map (if any) pointing at the same nodes: a node was
 * inserted at index at (it owns no slot), or node at is about to be
 * removed (its slots pass to the owner of the first slot clockwise it did
 * not own; if it owned them all, the map is dropped: balanced again). */
void rbi_ring_table_node_added(rb_ring_t *r, size_t at);
void rbi_ring_table_node_removing(rb_ring_t *r, size_t at);

#endif /* RBI_RING_MODEL_H */
