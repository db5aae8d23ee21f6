/*
 * ring.h - what the rest of the library needs from the ring: its heap
 * extents and validation for a writer adopting a segment (adopt.c).
 */
#ifndef RBI_RING_H
#define RBI_RING_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"
#include "segment.h"

/* The ring copies' heap extents (at most 2), for rbi_heap_rebuild. */
void rbi_ring_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n);

/* RB_OK if the active ring copy of seg is sound (RB_ECORRUPT otherwise). */
int rbi_ring_validate(const rb_segment_t *seg);

/* Retries the calling thread's last ring read section needed (tests and
 * benchmarks report the maximum). */
extern _Thread_local uint32_t rbi_ring_last_retries;

#endif /* RBI_RING_H */
