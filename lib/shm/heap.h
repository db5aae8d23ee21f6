/*
 * heap.h - the writer's allocator over the segment heap (heap.c).
 *
 * Free space is known only to the writer, in its handle: a sorted,
 * coalesced list of free extents in [header.heap_offset, header.size).
 * Every live extent is named by the header (ring copies) or the directory
 * (filter arrays), so a writer that adopts a segment rebuilds the list from
 * them (rbi_heap_rebuild, adopt.c) and nothing about free space has to be
 * kept consistent in shared memory.  A created segment's list is built at
 * its first allocation.  Free pages go back to the system (holes punched
 * in the object); rb_segment_trim (ringbloom/segment.h) is defined here.
 * The list's storage (rbi_heap_t) is a member of the segment handle,
 * declared in segment.h below this file, so segment.c frees it with the
 * handle without calling up into the allocator.
 */
#ifndef RBI_HEAP_H
#define RBI_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "ringbloom.h"
#include "segment.h"   /* rbi_extent_t, rbi_heap_t: the list's storage */

/* Writer.  An extent of at least `bytes` (rounded up to RBI_ALIGN) at *off,
 * growing the object (rbi_segment_grow) when nothing fits; pages of it
 * that were given back are allocated again first.  RB_EROFS, RB_ENOSPC
 * (reservation or /dev/shm full), RB_ENOMEM. */
int rbi_heap_alloc(rb_segment_t *seg, uint64_t bytes, uint64_t *off);

/* Writer.  Returns an extent rbi_heap_alloc gave (same bytes), which no
 * reader can reach any more (R1, the ring's latch), and gives the whole
 * pages of its merged free run back to the system (heap.c) for at most
 * 10 ms, leaving the rest, and all of it during a snapshot (S1), pending
 * for rb_segment_trim. */
void rbi_heap_free(rb_segment_t *seg, uint64_t off, uint64_t bytes);

/* Writer.  Replaces the free list with the complement of the `nlive` live
 * extents (sorted here) in the heap; RB_ECORRUPT if they overlap, are
 * misaligned or leave the committed size (nothing changes then). */
int rbi_heap_rebuild(rb_segment_t *seg, rbi_extent_t *live, size_t nlive);

#endif /* RBI_HEAP_H */
