/*
 * ringbloom/cms.h - count-min sketches in the shared segment: created and
 * counted by the writer (ringbloomd), queried lock-free by any reader.
 *
 * A part of ringbloom.h (include <ringbloom.h>); its conventions (return
 * codes, who may call, keys) hold here.  A sketch is a filter-directory
 * entry like a Bloom filter: its name is in the same name space (a name
 * holds a Bloom filter or a sketch, never both), and the Bloom calls on a
 * sketch's name (or these on a Bloom filter's) answer RB_EWRONGTYPE.
 *
 * A sketch has depth rows of width counters; an item's count is the
 * minimum of its depth counters (one per row, chosen by a keyed hash with
 * the sketch's own secret), never below the true count of what was added
 * since the last aging step, and above it by at most error * N with
 * probability at least 1 - probability (N: the sum of the increments), for
 * a sketch sized by rb_cms_dims.
 */
#ifndef RINGBLOOM_CMS_H
#define RINGBLOOM_CMS_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "segment.h"

#define RB_CMS_MAX_DEPTH  32u          /* rows, at most */
#define RB_CMS_MAX_WIDTH  (1u << 30)   /* counters per row, at most */

/* The doorkeeper Bloom filter of TinyLFU pair "name" is "name" followed
 * by this (ADMIT.RESERVE makes both; rb_tinylfu_admit reads both). */
#define RB_TINYLFU_DOORKEEPER_SUFFIX ":dk"

/* Counter widths (rb_cms_params_t.small). */
#define RB_CMS_COUNTER_MAX       0xFFFFFFFFu   /* 32-bit counters saturate here */
#define RB_CMS_SMALL_COUNTER_MAX 15u           /* 4-bit counters (TinyLFU's) */

typedef struct rb_cms_params {
    uint32_t width, depth;     /* 1..RB_CMS_MAX_WIDTH, 1..RB_CMS_MAX_DEPTH */
    int small;                 /* nonzero: 4-bit counters, 16 to a word */
    uint64_t aging;            /* 0, or W: after every W counted increments
                                  (the sum of the increments) every counter
                                  and the count are halved (TinyLFU's reset) */
    const unsigned char *secret; /* RB_BLOOM_SECRET_BYTES, or NULL: random */
} rb_cms_params_t;

/* What rb_cms_info reports. */
typedef struct rb_cms_info {
    uint32_t width, depth;
    int small;
    uint64_t count;            /* N: sum of the increments (halved by aging) */
    uint64_t aging;            /* W, 0: none */
    uint64_t since_aging;      /* increments counted since the last halving */
    uint64_t agings;           /* halvings so far */
    uint64_t bytes;            /* the counter array */
} rb_cms_info_t;

/* Any process.  RedisBloom's CMS.INITBYPROB sizing: width = ceil(2 /
 * error), depth = ceil(log(probability) / log(1/2)), for 0 < error < 1 and
 * 0 < probability < 1.  RB_EINVAL, RB_ERANGE (past the maxima above). */
RB_EXPORT RB_WUR int rb_cms_dims(double error, double probability, uint32_t *width,
                                 uint32_t *depth);

/* Writer.  Creates sketch name with zero counters.  RB_EINVAL, RB_EROFS,
 * RB_EEXIST (the name holds a filter or a sketch), RB_ESLOTS, RB_ENOSPC,
 * RB_ENOMEM (nothing allocated on any error). */
RB_EXPORT RB_WUR int rb_cms_create(rb_segment_t *seg, const char *name, size_t len,
                                   const rb_cms_params_t *params);

/* Writer.  Adds incr[i] to the count of keys[i] for i < n (each counter
 * saturates at its maximum), then, if the sketch ages and its window is
 * reached, halves it (in a fresh array published whole: readers see the
 * counters before the halving or after it, never a mix).  est (if not
 * NULL) gets each key's estimate after its increment.  Deterministic: the
 * same calls on the same sketch give the same counters (replay relies on
 * it; a halving put off for want of memory is retried at the next
 * increment).  RB_EINVAL, RB_EROFS, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT
 * (nothing changed on any error). */
RB_EXPORT RB_WUR int rb_cms_incrby(rb_segment_t *seg, const char *name, size_t len,
                                   const rb_key_t *keys, const uint64_t *incr, size_t n,
                                   uint64_t *est);

/* Writer.  dest's counters become sum over i of weights[i] x src i's
 * (weights NULL: all 1; each counter saturates), its count the same sum of
 * counts; all must have dest's width, depth and counter size (dest may be
 * among the sources), and the sources one secret (counters of sketches
 * keyed differently do not line up: create them with the same
 * rb_cms_params_t.secret, the daemon's LIKE).  dest takes the sources'
 * secret.  Published whole, as an aging step.  RB_EINVAL (shapes differ,
 * n == 0), RB_EPERM (the sources' secrets differ), RB_ENOENT,
 * RB_EWRONGTYPE, RB_ECORRUPT, RB_ENOSPC, RB_ENOMEM, RB_EROFS (nothing
 * changed on any error). */
RB_EXPORT RB_WUR int rb_cms_merge(rb_segment_t *seg, const char *dest, size_t dlen,
                                  const char *const *src, const size_t *slen, size_t n,
                                  const uint64_t *weights);

/* Writer.  Deletes sketch name and frees its counters (readers that hold
 * a query in flight retry and find it gone).  RB_EINVAL, RB_EROFS,
 * RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_cms_delete(rb_segment_t *seg, const char *name, size_t len);

/* A reader's handle on one sketch (rb_cms_open): it remembers the
 * sketch's slot and incarnation, so a call costs no directory scan and no
 * allocation; if the sketch is deleted (and perhaps made again under its
 * name) the next call rebinds by name once (a scan), as the Bloom and
 * cuckoo handles do.  A handle may be shared by threads. */
typedef struct rb_cms rb_cms_t;

/* Any process.  Opens a handle on sketch name (one directory scan).
 * RB_EINVAL, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY, RB_ENOMEM.
 * rb_cms_close frees it (NULL is a no-op). */
RB_EXPORT RB_WUR int rb_cms_open(const rb_segment_t *seg, const char *name, size_t len,
                                 rb_cms_t **out);
RB_EXPORT void rb_cms_close(rb_cms_t *h);

/* Any process, lock-free, wait-free but for a bounded retry if the sketch
 * is replaced meanwhile (aging, merge, delete).  *out = the estimate of
 * key in h's sketch, read inside one generation section (never counters
 * of two arrays, nor of two sketches).  No scan, no allocation, unless the
 * sketch was deleted since (then one rebind by name).  RB_EINVAL,
 * RB_ENOENT (deleted, none made again), RB_EWRONGTYPE (the name now holds
 * another kind), RB_ECORRUPT, RB_EBUSY. */
RB_EXPORT RB_WUR int rb_cms_estimate(const rb_cms_t *h, const void *key, size_t klen,
                                     uint64_t *out);

/* Any process.  rb_cms_estimate of sketch name, found by name at each call
 * (a scan of the directory: max_filters slots; keep a handle on a hot
 * path).  RB_EINVAL, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY. */
RB_EXPORT RB_WUR int rb_cms_query(const rb_segment_t *seg, const char *name, size_t len,
                                  const void *key, size_t klen, uint64_t *out);

/* Any process.  The figures of sketch name (one consistent reading).
 * RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY. */
RB_EXPORT RB_WUR int rb_cms_info(const rb_segment_t *seg, const char *name, size_t len,
                                 rb_cms_info_t *out);

/* A reader's handle on a TinyLFU pair (rb_tinylfu_open): a handle on its
 * sketch and one on its doorkeeper, for the admission test of a cache's
 * every miss. */
typedef struct rb_tinylfu rb_tinylfu_t;

/* Any process.  Opens the pair made by the daemon's ADMIT.RESERVE name:
 * sketch "name" and its doorkeeper Bloom filter "name"
 * RB_TINYLFU_DOORKEEPER_SUFFIX (none then: every doorkeeper bit is 0 for
 * this handle's life).  Two directory scans.  Errors as rb_cms_open, and
 * the doorkeeper's (rb_bloom_open) but RB_ENOENT.  rb_tinylfu_close frees
 * it (NULL is a no-op). */
RB_EXPORT RB_WUR int rb_tinylfu_open(const rb_segment_t *seg, const char *name, size_t len,
                                     rb_tinylfu_t **out);
RB_EXPORT void rb_tinylfu_close(rb_tinylfu_t *t);

/* Any process, lock-free.  TinyLFU's admission test: estimate(k) = the
 * sketch's estimate, + 1 if the doorkeeper holds k; *admit = 1 iff
 * estimate(candidate) > estimate(victim).  Both sketch estimates come
 * from one section (one reading of the counters); the doorkeeper is
 * probed only where its bits can change the answer (the sketch's
 * estimates equal, or the candidate's one above), a deleted doorkeeper
 * holding nothing.  No directory scan and no allocation while both are
 * the ones opened (a deleted or remade sketch is rebound by name, as
 * rb_cms_estimate).  Errors as rb_cms_estimate and rb_bloom_contains (but
 * RB_ENOENT of the doorkeeper). */
RB_EXPORT RB_WUR int rb_tinylfu_admit_h(const rb_tinylfu_t *t, const void *candidate,
                                        size_t clen, const void *victim, size_t vlen,
                                        int *admit);

/* Any process.  rb_tinylfu_admit_h on the pair name, opened and closed
 * around it (two directory scans and the handles' allocations a call:
 * keep an rb_tinylfu_t on a hot path).  Errors as rb_tinylfu_open and
 * rb_tinylfu_admit_h. */
RB_EXPORT RB_WUR int rb_tinylfu_admit(const rb_segment_t *seg, const char *name, size_t len,
                                      const void *candidate, size_t clen, const void *victim,
                                      size_t vlen, int *admit);

#endif /* RINGBLOOM_CMS_H */
