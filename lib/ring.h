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
 * (ring_read.c, rbi_ring_view_open): every section lies inside `words`. */
typedef struct rbi_ring_view {
    const rb_ring_copy_shm_t *c;
    const _Atomic uint64_t *d;     /* word 0 of the copy */
    const rbi_ring_mode_ops_t *ops;/* the copy's mode */
    uint64_t version, mode, replicas, nnodes, npoints, bits, words, names_bytes, owners;
    uint64_t nodes_w, names_w, points_w, owners_w, index_w;
} rbi_ring_view_t;

static inline rb_ring_copy_shm_t *rbi_ring_copy_at(const rbi_map_t *m, uint64_t off)
{
    return (rb_ring_copy_shm_t *)(void *)rbi_word_at(m, off);
}

/* Reads and bounds-checks the header of copy `which` of m; a ring never
 * published reads as an empty view.  Inside a read section a failure may
 * be a torn read; the section's retry decides.  RB_OK, RB_ECORRUPT. */
int rbi_ring_view_open(const rbi_map_t *m, unsigned which, rbi_ring_view_t *v);

/* Node idx of the view, its name copied out; RB_ECORRUPT if its record
 * fails the checks. */
int rbi_ring_view_node(const rbi_ring_view_t *v, uint64_t idx, rb_node_t *out);

/* The seq word of node idx's record (the order it was added). */
static inline uint32_t rbi_ring_view_seq(const rbi_ring_view_t *v, uint64_t idx)
{
    return (uint32_t)(rbi_ld(&v->d[v->nodes_w + RBI_NODE_WORDS * idx + 1]) >> 32);
}

/* Runs fn on the active copy of m inside a read section (latch.h),
 * retried while the writer overtakes it: fn's result, or RB_EBUSY past
 * RBI_READ_RETRIES. */
typedef int (*rbi_ring_fn)(const rbi_ring_view_t *v, void *arg);
int rbi_ring_read(const rbi_map_t *m, rbi_ring_fn fn, void *arg);

/* The ring copies' heap extents (at most 2), for rbi_heap_rebuild. */
void rbi_ring_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n);

/* RB_OK if the active ring copy of seg is sound (RB_ECORRUPT otherwise). */
int rbi_ring_validate(const rb_segment_t *seg);

/* Retries the calling thread's last ring read section needed (tests and
 * benchmarks report the maximum). */
extern _Thread_local uint32_t rbi_ring_last_retries;

#endif /* RBI_RING_H */
