/*
 * handles.h - the daemon's open Bloom filter handles, hashed by name
 * (handles.c), and the set of aging filters among them, which the aging
 * tick (filters.c) visits instead of every name; and the handles of the
 * last cuckoo filters read (rbd_filters_cf).
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
typedef struct rbd_cf_ref rbd_cf_ref_t;

/* How many cuckoo filter handles are kept (direct-mapped by name hash). */
#define RBD_CF_HANDLES 16

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
    rbd_cf_ref_t *cf[RBD_CF_HANDLES]; /* rbd_filters_cf's handles, by hash (NULL: never
                                     used; an entry's memory is kept for the next name) */
} rbd_filters_t;

/* The open handle of filter name in seg, opened on first use, or NULL
 * (*rc: RB_ENOENT, RB_EWRONGTYPE: a filter of another kind, or an error).
 * Cost: O(1) for a name asked before (a hash: a name of another kind is
 * remembered as such until it is forgotten), one directory walk the first
 * time (rb_bloom_open). */
rb_bloom_t *rbd_filters_get(rbd_filters_t *f, const rb_segment_t *seg, const char *name,
                            size_t len, int *rc);

/* An open handle of cuckoo filter name in seg for reads (rb_cuckoo_contains
 * ...), kept between commands so that the cuckoo reads (CF.EXISTS,
 * CF.MEXISTS, CF.COUNT, CF.INFO, CF.SCANDUMP, cmd_cf.c's check of what a
 * name holds) neither allocate a handle nor resolve the name each time
 * (issue 29, item 4), or NULL (*rc: RB_ENOENT, RB_EWRONGTYPE, RB_ENOMEM,
 * an error).  The handle holds the filter's slot and incarnation: when
 * the name is deleted and made again (any kind, any shape) its next read
 * binds the name afresh (rbi_named_read), so a kept handle never reads a
 * filter that is gone, and what the name holds now is what a read through
 * it answers (not that a handle is kept); rbd_filters_forget drops it
 * anyway.  Cost: a hash and a compare for a name among the last
 * RBD_CF_HANDLES used (by hash slot); rb_cuckoo_open (a directory walk, a
 * malloc) otherwise.  Valid until the next call, forget or close. */
rb_cuckoo_t *rbd_filters_cf(rbd_filters_t *f, const rb_segment_t *seg, const char *name,
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
