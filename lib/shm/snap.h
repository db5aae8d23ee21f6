/*
 * snap.h - a consistent dump of a segment taken while its writer goes on
 * (snap.c): the writer's half, the copy-on-write hook every heap store
 * passes through.
 *
 * rb_segment_snap_begin freezes the state of one instant, between two
 * changes: it copies the header page and the directory then and there
 * (small, and the words most changes touch), and marks every heap page of
 * [heap_offset, size) "not dumped yet".  Until rb_segment_snap_end the
 * writer calls rbi_snap_touch before it stores into the heap: the first
 * store into a page the dump has not reached saves the page's frozen bytes
 * first.  The dumping thread takes each page as it is (claiming it first,
 * so a writer that wants it waits for one 4 KiB copy) or, if the writer
 * got there first, from the saved copy.  So the dump is the segment at
 * begin, byte for byte, however the writer goes on, but for the holes:
 * the heap pages wholly inside free space at begin, which the dump never
 * reads and passes as zeros or to its hole callback (snap.c), and for
 * which the writer saves nothing.
 *
 * Invariant S1: between begin and end, every store of the writer into the
 * heap is preceded by rbi_snap_touch of its bytes.  The stores are: bits
 * (bloom_write.c, set_layer), a new or replacing array's zeroing
 * (layer_create, swap_fresh) and a ring copy's words (ring.c,
 * write_copy).  Stores into the header page or the directory need none
 * (copied at begin), nor stores past the committed size at begin (not in
 * the dump).  check_segment's snapshot tests compare a dump taken while
 * every kind of change goes on with the bytes at begin.
 */
#ifndef RBI_SNAP_H
#define RBI_SNAP_H

#include <stddef.h>

#include "segment.h"

/* Writer: saves the frozen bytes of every page of [p, p + len) the dump
 * has not taken yet (slow path of rbi_snap_touch). */
void rbi_snap_save(rb_segment_snap_t *s, const void *p, size_t len);

/* The writer's saves so far that took a page from the pool (snap.c), not
 * malloc: for tests and benchmarks.  Ask before rb_segment_snap_end. */
uint64_t rbi_snap_pooled(const rb_segment_snap_t *s);

/* Writer, before storing into [p, p + len) of the heap. */
static inline void rbi_snap_touch(rb_segment_t *seg, const void *p, size_t len)
{
    if (__builtin_expect(seg->snap != NULL, 0))
        rbi_snap_save(seg->snap, p, len);
}

/* Writer: stores src[0 .. n) at byte off of the heap array of words arr
 * (a dump's data chunk, rbi_words_get_bytes's inverse): whole words, each
 * merged with the bytes it keeps (a chunk may start or end inside one),
 * each touched first (S1) and stored once: readers see every word before
 * or after. */
static inline void rbi_snap_store_bytes(rb_segment_t *seg, _Atomic uint64_t *arr, uint64_t off,
                                        const unsigned char *src, size_t n)
{
    for (size_t i = 0; i < n;) {
        _Atomic uint64_t *w = &arr[(off + i) / 8];
        uint64_t x = rbi_ld(w);
        rbi_snap_touch(seg, w, 8);
        do {
            unsigned sh = (unsigned)(8 * ((off + i) % 8));
            x = (x & ~(0xFFULL << sh)) | ((uint64_t)src[i] << sh);
            i++;
        } while (i < n && (off + i) % 8 != 0);
        rbi_st(w, x);
    }
}

#endif /* RBI_SNAP_H */
