/*
 * ringbloom/cbf.h - counting Bloom filters in the shared segment: the
 * Bloom filter's membership, with deletion.  Filled and emptied by the
 * writer (ringbloomd), probed lock-free by any reader.
 *
 * A part of ringbloom.h (include <ringbloom.h>); its conventions (return
 * codes, who may call, keys) hold here.  A counting Bloom filter is a
 * filter-directory entry like the other kinds: its name is in the same
 * name space, and the calls of another kind on its name (or these on
 * another kind's) answer RB_EWRONGTYPE.
 *
 * A filter is m counters of 4 or 8 bits (counter_bits), packed 16 or 8 to
 * a 64-bit word, sized for capacity keys at error_rate as a standard Bloom
 * filter (m = capacity x -ln p / ln^2 2, k = ceil(log2(1/p)) probes; one
 * array, no layers).  A key's k counters come from a keyed 128-bit hash
 * with the filter's own secret, by double hashing over the whole array
 * (a probe that repeats an earlier one of the same key is skipped, so a
 * key raises each of its counters by one).  An add raises them, a delete
 * lowers them; a key is present when all of its counters are > 0.
 *
 * Saturation: a counter stops at its maximum (15 or 255) and a saturated
 * counter is never lowered again, by any delete: the keys it counted
 * stay found (no false negative), at the cost of false positives (the
 * counter stays > 0 after those keys are deleted).  rb_cbf_info counts
 * them.  With 4 bits a counter saturates only when 15 adds (of one key,
 * or of keys sharing it) are present at once: at the sized load a
 * counter's expected value is ln 2, so a fraction of about 10^-15 of them.
 *
 * Delete: a delete of a key one of whose counters is 0 (a key certainly
 * not in the filter) is refused: rb_cbf_del answers 0 and changes
 * nothing.  A key never added whose counters are all > 0 (a false
 * positive, at most the error rate) would be deleted, taking one from
 * other keys' counters: delete only what was added, as with any counting
 * Bloom filter.
 *
 * Readers never see a torn answer: each counter changes by one aligned
 * 64-bit store of its word, a key added and not deleted keeps each of its
 * counters > 0 at every instant, so a reader loading them in any order
 * while the writer adds and deletes other keys finds it (never a false
 * negative); a deleted filter is noticed through its slot's generation
 * (docs/design.md, "Counting Bloom filter slots").
 */
#ifndef RINGBLOOM_CBF_H
#define RINGBLOOM_CBF_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "segment.h"

#define RB_CBF_MAX_CAPACITY (1ull << 32)   /* keys a filter may be sized for */
#define RB_CBF_MAX_COUNTERS (1ull << 40)   /* m, at most */
#define RB_CBF_MAX_K        32u            /* probes per key, at most */

typedef struct rb_cbf_params {
    uint64_t capacity;         /* 1..RB_CBF_MAX_CAPACITY: keys present at once;
                                  an add past it is RB_EFULL */
    double error_rate;         /* (0, 1): the false positive rate at capacity */
    uint32_t counter_bits;     /* 4 or 8 */
    const unsigned char *secret; /* RB_BLOOM_SECRET_BYTES, or NULL: random */
} rb_cbf_params_t;

/* What rb_cbf_info reports (one consistent reading). */
typedef struct rb_cbf_info {
    uint64_t bytes;            /* the counter array */
    uint64_t counters;         /* m */
    uint32_t k;                /* probes per key */
    uint32_t counter_bits;     /* 4 or 8 */
    uint64_t capacity;         /* as reserved */
    double error_rate;         /* as reserved */
    uint64_t items;            /* keys present: adds - deletes */
    uint64_t deletes;          /* deletes done (refused ones not counted) */
    uint64_t saturated;        /* counters that reached their maximum (never
                                  lowered again) */
} rb_cbf_info_t;

/* A reader's handle on one filter (rb_cbf_open). */
typedef struct rb_cbf rb_cbf_t;

/* Any process.  The sizing of a filter of capacity keys at error_rate:
 * *counters (a multiple of the counters per word of counter_bits) and *k.
 * RB_OK, or RB_EINVAL (bad parameters, or more than RB_CBF_MAX_COUNTERS). */
RB_EXPORT RB_WUR int rb_cbf_size(uint64_t capacity, double error_rate, uint32_t counter_bits,
                                 uint64_t *counters, uint32_t *k);

/* Any process.  The false positive rate the formula gives with n keys
 * present in m counters and k probes: (1 - e^(-k n / m))^k (saturation
 * aside).  NaN for bad arguments. */
RB_EXPORT double rb_cbf_fpr_formula(uint64_t m, uint32_t k, uint64_t n);

/* Writer.  Creates filter name, every counter 0.  RB_EINVAL (a bad name
 * or parameter), RB_EROFS, RB_EEXIST (the name holds a filter of any
 * kind), RB_ESLOTS, RB_ENOSPC (nothing allocated on any error). */
RB_EXPORT RB_WUR int rb_cbf_reserve(rb_segment_t *seg, const char *name, size_t len,
                                    const rb_cbf_params_t *params);

/* Writer.  Adds key once: each of its counters goes up by one (a
 * saturated one stays).  1 added; RB_EFULL (capacity keys present:
 * nothing changed), RB_EINVAL, RB_EROFS, RB_ENOENT, RB_EWRONGTYPE,
 * RB_ECORRUPT.  Adding a key twice counts it twice (two deletes take it
 * out). */
RB_EXPORT RB_WUR int rb_cbf_add(rb_segment_t *seg, const char *name, size_t len,
                                const void *key, size_t klen);

/* Writer.  Deletes key once: 1 each of its counters went down by one (a
 * saturated one stays); 0 refused, one of them is 0 (the key is not in
 * the filter: nothing changed).  RB_EINVAL, RB_EROFS, RB_ENOENT,
 * RB_EWRONGTYPE, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_cbf_del(rb_segment_t *seg, const char *name, size_t len,
                                const void *key, size_t klen);

/* Writer.  Deletes filter name and frees its array (readers with a probe
 * in flight retry and find it gone, R1).  RB_EINVAL, RB_EROFS, RB_ENOENT,
 * RB_EWRONGTYPE, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_cbf_delete(rb_segment_t *seg, const char *name, size_t len);

/* Any process.  A handle on filter name (a directory scan, once); it
 * rebinds by name if the filter is deleted and made again.  RB_EINVAL,
 * RB_ENOMEM, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY. */
RB_EXPORT RB_WUR int rb_cbf_open(const rb_segment_t *seg, const char *name, size_t len,
                                 rb_cbf_t **out);
RB_EXPORT void rb_cbf_close(rb_cbf_t *h);

/* Reader, lock-free: 1 if key may be present, 0 if it is not.  Never 0
 * for a key added and not deleted, whatever the writer does meanwhile.
 * Retries (bounded) only when the filter was deleted meanwhile (then
 * RB_ENOENT, or the new filter of that name).  RB_EINVAL, RB_ENOENT,
 * RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY. */
RB_EXPORT RB_WUR int rb_cbf_contains(const rb_cbf_t *h, const void *key, size_t klen);

/* Reader.  rb_cbf_contains for n keys at once (hashed and prefetched a
 * batch at a time).  out[i] = 1/0.  The number of keys that may be
 * present, or an error as rb_cbf_contains. */
RB_EXPORT RB_WUR int64_t rb_cbf_contains_many(const rb_cbf_t *h, const rb_key_t *keys, size_t n,
                                              uint8_t *out);

/* Reader.  *count = the smallest of key's counters: at least the times
 * key was added and not deleted (more when other keys share all of its
 * counters; a saturated counter reads as its maximum).  While the writer
 * changes one of them, a value it held before or after.  Errors as
 * rb_cbf_contains. */
RB_EXPORT RB_WUR int rb_cbf_count(const rb_cbf_t *h, const void *key, size_t klen,
                                  uint64_t *count);

/* Any process.  The filter's figures, read in one section.  Errors as
 * rb_cbf_contains. */
RB_EXPORT RB_WUR int rb_cbf_info(const rb_cbf_t *h, rb_cbf_info_t *out);

#endif /* RINGBLOOM_CBF_H */
