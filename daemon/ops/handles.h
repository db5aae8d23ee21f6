/*
 * handles.h - the daemon's open Bloom filter handles, hashed by name
 * (handles.c), and the set of aging filters among them, which the aging
 * tick (filters.c) visits instead of every name.
 *
 * Lower than ops.c: ops.c tells the cache what its ops made and deleted
 * (rbd_filters_made, rbd_filters_forget); nothing here calls an op.
 */
#ifndef RBD_HANDLES_H
#define RBD_HANDLES_H

#include <stddef.h>
#include <stdint.h>

#include "ringbloom.h"

typedef struct rbd_filter_ref rbd_filter_ref_t;

/* Handles into one segment: closed (rbd_filters_close) before it is.
 * Zeroed is empty and valid.
 *
 * Invariant (A): while aging_known is 1, the aging list holds exactly the
 * filters of the segment that age on a window (RB_BLOOM_AGING, window >
 * 0).  Every way a Bloom filter appears in a served segment while the
 * cache is open passes through rbd_filters_made (BF.RESERVE, ADMIT.RESERVE's
 * doorkeeper, BF.LOADCHUNK's header chunk, live and replayed), every way
 * one goes through rbd_filters_forget (DEL of any kind, so a name
 * remembered as another kind is asked again once it could be a Bloom
 * filter); a segment
 * replaced under the cache (restore, adoption, republish) closes it,
 * which clears aging_known, and the next rbd_filters_aging finds the set
 * again with one walk of the names. */
typedef struct rbd_filters {
    rbd_filter_ref_t **bucket;   /* chains by hash, nbuckets a power of 2 */
    size_t nbuckets, n;
    rbd_filter_ref_t *aging;     /* the aging list (A) */
    int aging_known;
} rbd_filters_t;

/* The open handle of filter name in seg, opened on first use, or NULL
 * (*rc: RB_ENOENT, RB_EWRONGTYPE: a filter of another kind, or an error).
 * Cost: O(1) for a name asked before (a hash: a name of another kind is
 * remembered as such until it is forgotten), one directory walk the first
 * time (rb_bloom_open). */
rb_bloom_t *rbd_filters_get(rbd_filters_t *f, const rb_segment_t *seg, const char *name,
                            size_t len, int *rc);

/* Closes every handle; the cache is empty (and aging_known 0) after. */
void rbd_filters_close(rbd_filters_t *f);

/* After an op made a filter called name (of any kind): keeps the aging
 * list true (A).  Nothing while aging_known is 0. */
void rbd_filters_made(rbd_filters_t *f, const rb_segment_t *seg, const char *name, size_t len);

/* Closes and drops the handle of filter name, if one is open: after the
 * filter is deleted, the next rbd_filters_get of the name opens whatever
 * holds it then (nothing, or a filter made since).  O(1). */
void rbd_filters_forget(rbd_filters_t *f, const char *name, size_t len);

/* Calls fn on each aging filter of seg (A), first finding them if
 * aging_known is 0 (one walk of the directory with each slot's kind: a
 * Bloom filter is opened, a name of another kind only remembered).  fn may
 * forget the filter it is given, no other. */
void rbd_filters_aging(rbd_filters_t *f, const rb_segment_t *seg,
                       void (*fn)(const char *name, size_t len, rb_bloom_t *bf, void *arg),
                       void *arg);

#endif /* RBD_HANDLES_H */
