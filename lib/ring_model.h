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

typedef struct ring_node {
    char    *name;
    uint32_t len;
    uint32_t weight;
    uint32_t seq;    /* order of addition: the "server list" order */
    uint32_t fresh;  /* added (or re-weighted) since the points were last
                        settled: none of pts[] is its */
    uint8_t state;   /* rb_node_state_t; 0 (up) for a node just added */
    uint8_t owns;    /* owned >= 1 point at the last full publish */
} ring_node_t;

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
    /* What a publish needs to write the states alone (ring_copy.c): the
     * active copy of pub_map (a mapping id) is the one this model wrote
     * at version pub_version, when `changes` was pub_changes. */
    uint64_t changes;      /* bumped by every change a copy shows besides
                              the states: nodes, weights, mode, points */
    uint64_t pub_changes, pub_version, pub_map;
};

/* Binary search by name: 1 and *at = index if found, else 0 and *at =
 * the insertion point. */
int rbi_ring_node_find(const rb_ring_t *r, const char *name, size_t len, size_t *at);

/* The points, brought up to date: a mode that re-sizes every node
 * rebuilds them, the others settle the fresh nodes.  RB_OK, RB_ENOMEM. */
int rbi_ring_fresh_points(rb_ring_t *r);

#endif /* RBI_RING_MODEL_H */
