/*
 * ring.h - the ring inside the library: the reader's view of a published
 * copy, shared by the readers (ring_read.c) and the writer's load
 * (ring.c), and what a writer adopting a segment needs (adopt.c).
 */
#ifndef RBI_RING_H
#define RBI_RING_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "heap.h"
#include "ring_mode.h"
#include "segment.h"

/* The header of one published copy as a read section read and checked it
 * (ring_read.c): every section lies inside `words`. */
typedef struct rbi_ring_view {
    const _Atomic uint64_t *d;     /* word 0 of the copy */
    uint64_t (*key_pos)(const void *key, size_t len);  /* the copy's mode's */
    uint64_t version, mode, replicas, nnodes, npoints, bits, words, names_bytes, owners;
    int table;                     /* a table mode's copy (ring_mode.h) */
    uint64_t nodes_w, names_w, points_w, index_w;
    uint64_t states_w;             /* 0: no states (every node up) */
    uint64_t source_rev;           /* the copy's source_rev word */
} rbi_ring_view_t;

/* What a read section's function returns when the node states changed
 * under it (their in-place sequence moved, latch.h Q1): rbi_ring_read runs
 * it again, as when the latch moved.  Never returned to a caller. */
#define RBI_RING_RETRY 1

/* The states of view v's nodes, 2 bits each as the copy holds them
 * (format.h), into out[(nnodes + 31) / 32] with the counts word in *counts
 * (down | up_owners << 32), inside their sequence: RB_OK (no states: all
 * zero, counts 0 | owners << 32) or RBI_RING_RETRY. */
int rbi_ring_view_states(const rbi_ring_view_t *v, uint64_t *out, uint64_t *counts);

static inline rb_ring_copy_shm_t *rbi_ring_copy_at(const rbi_map_t *m, uint64_t off)
{
    return (rb_ring_copy_shm_t *)(void *)rbi_word_at(m, off);
}

/* Copy `which` of m as segment layout 1 wrote it (owners in an array of
 * their own, points without them), opened for its membership only: mode,
 * replicas, node records and names, bounds-checked by the same code as
 * view_open checks them with; nothing else of the view may be read.  What
 * a restore of a layout-1 dump carries over (adopt.c).  RB_OK (a view with d == NULL if
 * the copy was never published), RB_ECORRUPT.  Writer, no section: the
 * segment is the caller's alone. */
int rbi_ring_view_open_layout1(const rbi_map_t *m, unsigned which, rbi_ring_view_t *v);

/* Node idx of the view, its name copied out; RB_ECORRUPT if its record
 * fails the checks. */
int rbi_ring_view_node(const rbi_ring_view_t *v, uint64_t idx, rb_node_t *out);

/* The seq word of node idx's record (the order it was added). */
static inline uint32_t rbi_ring_view_seq(const rbi_ring_view_t *v, uint64_t idx)
{
    return (uint32_t)(rbi_ld(&v->d[v->nodes_w + RBI_NODE_WORDS * idx + 1]) >> 32);
}

/* The owner of point i < npoints of view v: the low b bits of its word
 * (format.h); the caller checks it against nnodes. */
static inline uint64_t rbi_ring_view_owner(const rbi_ring_view_t *v, uint64_t i)
{
    return rbi_ld(&v->d[v->points_w + i]) & ((1ULL << v->bits) - 1);
}

/* A writer's model of view v's membership (mode, replicas, nodes with
 * their weights, in their order of addition; a table mode's parameter and
 * explicit map): what rb_ring_load makes of
 * the active copy.  RB_OK, RB_ECORRUPT, RB_ENOMEM. */
int rbi_ring_from_view(const rbi_ring_view_t *v, rb_ring_t **out);

/* Runs fn on the active copy of m inside a read section (latch.h),
 * retried while the writer overtakes it: fn's result, or RB_EBUSY past
 * RBI_READ_RETRIES. */
typedef int (*rbi_ring_fn)(const rbi_ring_view_t *v, void *arg);
int rbi_ring_read(const rbi_map_t *m, rbi_ring_fn fn, void *arg);

/* The ring copies' heap extents (at most 2), for rbi_heap_rebuild. */
void rbi_ring_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n);

/* A writer taking over: if the dead writer stopped inside a state change
 * of the active copy (its sequence odd, latch.h Q1), each state word holds
 * either its old or its new value (one 64-bit store each), so the states
 * as they are stand: their counts are recomputed from them and the points
 * and the sequence made even, which ends the readers' retries.  RB_OK,
 * RB_ECORRUPT, RB_ENOMEM.  After rbi_ring_validate. */
int rbi_ring_repair_states(rb_segment_t *seg);

/* RB_OK if the active ring copy of seg is sound (RB_ECORRUPT otherwise). */
int rbi_ring_validate(const rb_segment_t *seg);

/* The model's points in table order: by position, then tie (ring_sort.c;
 * the comparison is the same order, for qsort and merges). */
int rbi_ring_point_cmp(const void *a, const void *b);
void rbi_ring_sort_points(rbi_ring_point_t *p, size_t n);

/* Retries the calling thread's last ring read section needed (tests and
 * benchmarks report the maximum). */
extern _Thread_local uint32_t rbi_ring_last_retries;

#endif /* RBI_RING_H */
