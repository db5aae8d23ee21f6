/*
 * kind.h - a filter kind: one row of the kind table (kind.c), all that the
 * kind-blind code needs from a kind: its names (ringbloom/filter.h), the
 * layout values it claims, its heap extents and bytes (adopt.c,
 * rb_segment_info, and the one delete of every kind), its repair and its
 * summary.  A kind's reader and writer paths do not go through it: they
 * bind to their own slots (the directory, dir.h) and keep their loops
 * specialised.
 *
 * A new kind: its own folder (reader, writer, dump), its row defined there
 * in its reader's file or a file of its own above the reader (it names
 * the reader's functions; never in the writer's file, which calls this
 * file's delete), and its row declared and listed in kind.c's table: one
 * place.
 */
#ifndef RBI_KIND_H
#define RBI_KIND_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "heap.h"
#include "segment.h"

/* The most heap extents one slot may hold (a Bloom filter: one per layer). */
#define RBI_KIND_MAX_EXTENTS RB_BLOOM_MAX_LAYERS

typedef struct rbi_kind {
    /* First, so that a row is its public description (ringbloom/filter.h). */
    rb_kind_desc_t desc;
    /* The values of the slot's `layout` word that are this kind's. */
    uint64_t layout_first, layout_last;
    /* Stores the heap extents of live slot f in out[0 .. *n) (at most
     * RBI_KIND_MAX_EXTENTS), after checking that each is one a reader of
     * the kind would accept within `size` committed bytes: RB_ECORRUPT
     * otherwise.  A slot reads as it was last published (writer, or a
     * segment nobody writes). */
    int (*extents)(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n);
    /* Heap bytes live slot f holds (its arrays, in whole RBI_ALIGN units). */
    uint64_t (*heap_bytes)(const rb_filter_shm_t *f);
    /* NULL, or: makes live slot f (extents already checked) readable again
     * after a writer died in the middle of one of its changes (the cuckoo
     * filter: a move left its sequence odd, C3).  Writer adopting the
     * segment, before its first change.  RB_OK or RB_ECORRUPT. */
    int (*repair)(rb_filter_shm_t *f);
    /* Reader: the summary of live filter name of this kind, out->kind set
     * by the caller (rb_filter_summary). */
    int (*summary)(const rb_segment_t *seg, const char *name, size_t len,
                   rb_filter_summary_t *out);
} rbi_kind_t;


/* The kind whose layout values hold `layout`, or NULL. */
const rbi_kind_t *rbi_kind_of(uint64_t layout);

/* For a writer adopting m: the heap extents of every live slot in out
 * (room for dir_slots * RBI_KIND_MAX_EXTENTS), checked by its kind.
 * RB_ECORRUPT for a live slot of no known kind, or as the kind says. */
int rbi_kind_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n);

/* Writer: deletes live filter name, of a layout of_kind accepts (a kind's
 * test, as rbi_writer_find; NULL: any kind), for
 * every kind the same way: its slot is freed first (R1, rbi_dir_free: a
 * reader inside it retries and misses), then the heap extents the kind
 * reports.  RB_OK, RB_EINVAL, RB_EROFS, RB_ENOENT, RB_EWRONGTYPE (another
 * kind holds name), RB_ECORRUPT (its words fail the kind's check). */
int rbi_kind_delete(rb_segment_t *seg, const char *name, size_t len,
                    int (*of_kind)(uint64_t layout));

/* For a writer adopting m, after rbi_kind_extents succeeded: runs the
 * repair of every live slot whose kind has one.  RB_OK, or the first
 * repair's error. */
int rbi_kind_repair(rbi_map_t *m);

#endif /* RBI_KIND_H */
