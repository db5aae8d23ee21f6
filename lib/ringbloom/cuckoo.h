/*
 * ringbloom/cuckoo.h - cuckoo filters in the shared segment: membership
 * that deletes.  Filled and emptied by the writer (ringbloomd), probed
 * lock-free by any reader.
 *
 * A part of ringbloom.h (include <ringbloom.h>); its conventions (return
 * codes, who may call, keys) hold here.  A cuckoo filter is a
 * filter-directory entry like a Bloom filter: its name is in the same name
 * space, and the calls of another kind on its name (or these on another
 * kind's) answer RB_EWRONGTYPE.
 *
 * A filter is up to RB_BLOOM_MAX_LAYERS layers (RedisBloom's sub-filters),
 * each a power of two of buckets of bucket_size fingerprints of fp_bits
 * bits (8 as RedisBloom; 12 or 16 for lower false positive rates: about
 * 2 x bucket_size / 2^fp_bits).  A key has a fingerprint and two buckets
 * per layer (partial-key cuckoo hashing: the second bucket is the first
 * xor a hash of the fingerprint), all from a keyed hash with the filter's
 * own secret.  An add that finds both buckets full moves fingerprints to
 * their other buckets (along a path found within max_iterations x
 * bucket_size buckets); when that fails the filter grows by a layer of
 * expansion x the newest one's buckets, or answers RB_EFULL.
 *
 * Readers never miss a present key because of a move in progress: a move
 * copies a fingerprint into its other bucket before it overwrites the
 * first copy, inside the filter's in-place sequence (latch.h, Q1), and a
 * reader that found nothing re-checks the sequence and probes again
 * (docs/design.md, "Cuckoo filter slots", C1-C4).  Deletes never take the last
 * copy another present key is found by (C4: layers nest, and a delete
 * takes the newest layer's copy).
 */
#ifndef RINGBLOOM_CUCKOO_H
#define RINGBLOOM_CUCKOO_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "segment.h"

#define RB_CUCKOO_MAX_BUCKET      255u     /* fingerprints per bucket, at most */
#define RB_CUCKOO_MAX_ITERATIONS  65535u   /* bounds an add's search for moves */
#define RB_CUCKOO_MAX_EXPANSION   32768u
#define RB_CUCKOO_MAX_CAPACITY    (1ull << 40)

/* RedisBloom's defaults (CF.RESERVE without options, CF.ADD's create). */
#define RB_CUCKOO_DEFAULT_CAPACITY   1024u
#define RB_CUCKOO_DEFAULT_BUCKET     2u
#define RB_CUCKOO_DEFAULT_ITERATIONS 20u
#define RB_CUCKOO_DEFAULT_EXPANSION  1u
#define RB_CUCKOO_DEFAULT_FP_BITS    8u

typedef struct rb_cuckoo_params {
    uint64_t capacity;         /* 1..RB_CUCKOO_MAX_CAPACITY: the first layer
                                  has the power of two of buckets at or above
                                  capacity / bucket_size */
    uint32_t bucket_size;      /* 1..RB_CUCKOO_MAX_BUCKET */
    uint32_t max_iterations;   /* 1..RB_CUCKOO_MAX_ITERATIONS */
    uint32_t expansion;        /* 0: never grows (a full filter answers
                                  RB_EFULL); 1..RB_CUCKOO_MAX_EXPANSION,
                                  rounded up to a power of two */
    uint32_t fp_bits;          /* 8, 12 or 16 */
    const unsigned char *secret; /* RB_BLOOM_SECRET_BYTES, or NULL: random */
} rb_cuckoo_params_t;

/* What rb_cuckoo_info reports (one consistent reading). */
typedef struct rb_cuckoo_info {
    uint64_t bytes;            /* the fingerprint arrays, all layers */
    uint64_t buckets;          /* all layers */
    uint32_t layers;           /* RedisBloom's "Number of filters" */
    uint64_t items;            /* fingerprints stored: adds - deletes */
    uint64_t deletes;          /* fingerprints deleted */
    uint64_t moves;            /* fingerprints moved to their other bucket, all adds
                                  (not kept by a dump) */
    uint64_t capacity;         /* as reserved */
    uint32_t bucket_size, max_iterations, expansion, fp_bits;
} rb_cuckoo_info_t;

/* A reader's handle on one filter (rb_cuckoo_open). */
typedef struct rb_cuckoo rb_cuckoo_t;

/* Any process.  The false positive rate the formula gives for a filter
 * whose buckets hold load x bucket_size fingerprints on average (0 < load
 * <= 1): 1 - (1 - 1/(2^fp_bits - 1))^(2 x bucket_size x load), per layer
 * probed.  NaN for bad arguments. */
RB_EXPORT double rb_cuckoo_fpr_formula(uint32_t fp_bits, uint32_t bucket_size, double load);

/* Writer.  Creates filter name, empty (one layer).  RB_EINVAL (a bad
 * name or parameter), RB_EROFS, RB_EEXIST (the name holds a filter of any
 * kind), RB_ESLOTS, RB_ENOSPC, RB_ENOMEM (nothing allocated on any
 * error). */
RB_EXPORT RB_WUR int rb_cuckoo_reserve(rb_segment_t *seg, const char *name, size_t len,
                                       const rb_cuckoo_params_t *params);

/* Writer.  Adds key's fingerprint: 1 added; with nx, 0 if the key may be
 * present already (rb_cuckoo_contains would say 1: nothing added).  The
 * newest layer with room in one of the key's buckets takes it; else the
 * newest layer moves fingerprints along the shortest path of moves to a
 * free slot that a breadth-first search through at most 2 +
 * max_iterations x bucket_size of its buckets finds (none if it finds
 * none); else the filter grows and the new layer takes it.
 * Deterministic: the same calls on the same filter give the same arrays
 * (replay relies on it).  RB_EINVAL, RB_EROFS, RB_ENOENT, RB_EWRONGTYPE,
 * RB_ECORRUPT, RB_EFULL (no room and expansion 0), RB_ELAYERS (no room
 * and RB_BLOOM_MAX_LAYERS layers), RB_ENOSPC, RB_ENOMEM (nothing changed
 * on any error). */
RB_EXPORT RB_WUR int rb_cuckoo_add(rb_segment_t *seg, const char *name, size_t len,
                                   const void *key, size_t klen, int nx);

/* Writer.  Removes one copy of key's fingerprint from one of its buckets
 * (the newest layer holding one): 1 removed, 0 none found.  A key never
 * added may remove another key's copy when the two share fingerprint and
 * buckets: delete only what was added.  RB_EINVAL, RB_EROFS, RB_ENOENT,
 * RB_EWRONGTYPE, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_cuckoo_del(rb_segment_t *seg, const char *name, size_t len,
                                   const void *key, size_t klen);

/* Writer.  Deletes filter name and frees its arrays (readers with a probe
 * in flight retry and find it gone, R1).  RB_EINVAL, RB_EROFS, RB_ENOENT,
 * RB_EWRONGTYPE, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_cuckoo_delete(rb_segment_t *seg, const char *name, size_t len);

/* Any process.  A handle on filter name (a directory scan, once); it
 * rebinds by name if the filter is deleted and made again.  RB_EINVAL,
 * RB_ENOMEM, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY. */
RB_EXPORT RB_WUR int rb_cuckoo_open(const rb_segment_t *seg, const char *name, size_t len,
                                    rb_cuckoo_t **out);
RB_EXPORT void rb_cuckoo_close(rb_cuckoo_t *h);

/* Reader, lock-free: 1 if key may be present, 0 if it is not.  Never 0
 * for a key added and not deleted, whatever the writer does meanwhile.
 * Retries (bounded) only when it found nothing while a move happened, or
 * when the filter was deleted meanwhile (then RB_ENOENT, or the new
 * filter of that name).  RB_EINVAL, RB_ENOENT (filter deleted),
 * RB_EWRONGTYPE (the name now holds another kind), RB_ECORRUPT, RB_EBUSY
 * (a writer died inside a move and nobody took over yet, or a
 * pathological writer). */
RB_EXPORT RB_WUR int rb_cuckoo_contains(const rb_cuckoo_t *h, const void *key, size_t klen);

/* Reader.  rb_cuckoo_contains for n keys at once: hashes a batch,
 * prefetches both buckets of each key in each layer, then probes.
 * out[i] = 1/0.  The number of keys that may be present, or an error as
 * rb_cuckoo_contains. */
RB_EXPORT RB_WUR int64_t rb_cuckoo_contains_many(const rb_cuckoo_t *h, const rb_key_t *keys,
                                                 size_t n, uint8_t *out);

/* Reader.  *count = the copies of key's fingerprint in its buckets, all
 * layers (RedisBloom's CF.COUNT: at least the times key was added and not
 * deleted, more when other keys share its fingerprint and a bucket).
 * Errors as rb_cuckoo_contains. */
RB_EXPORT RB_WUR int rb_cuckoo_count(const rb_cuckoo_t *h, const void *key, size_t klen,
                                     uint64_t *count);

/* Any process.  The filter's figures, read in one section (shape and
 * layers of one filter; each counter as last stored).  Errors as
 * rb_cuckoo_contains. */
RB_EXPORT RB_WUR int rb_cuckoo_info(const rb_cuckoo_t *h, rb_cuckoo_info_t *out);

#endif /* RINGBLOOM_CUCKOO_H */
