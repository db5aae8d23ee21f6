/*
 * ringbloom/bloom.h - Bloom filters in a segment: sizing, the writer's
 * reserve / add / rotate / reset, the readers' lock-free contains, and
 * their figures.
 *
 * A part of ringbloom.h: programs include <ringbloom.h>, which includes
 * every part, and its conventions (return codes, who may call, handles,
 * keys) hold here.
 */
#ifndef RINGBLOOM_BLOOM_H
#define RINGBLOOM_BLOOM_H

#include "core.h"
#include "segment.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rb_bloom_layout {
    RB_BLOOM_STANDARD = 0,  /* k probes over the whole array */
    RB_BLOOM_BLOCKED  = 1,  /* all k probes in one 64-byte cache line */
    RB_BLOOM_REDISBLOOM = 2 /* RedisBloom 2.6's own filter, bit for bit: its
                               unkeyed MurmurHash64A, its sizing (bits per
                               key -ln p / ln(2)^2, not rounded; m a multiple
                               of 64), the same probe positions in every
                               layer; so its dumps (BF.SCANDUMP) load into
                               RedisBloom and RedisBloom's into it.  Not
                               keyed: crafted keys can collide.  No AGING or
                               OVERFILL */
} rb_bloom_layout_t;

#define RB_FILTER_NAME_MAX 255
#define RB_BLOOM_MAX_BITS  (1ULL << 40)
#define RB_BLOOM_BLOCKED_MAX_BPK 4096   /* blocked: the most bits per key */

typedef struct rb_bloom_sizing {
    uint64_t bits;    /* m, a multiple of 512 (RB_BLOOM_REDISBLOOM: of 64) */
    uint32_t k;       /* probes per key, 1..64 */
    uint64_t bytes;   /* m / 8 */
    double   fpr;     /* predicted false-positive rate at capacity, <= p */
} rb_bloom_sizing_t;

/* Any process, pure.  Sizes a filter for capacity n and error rate p
 * (0 < p < 1).  standard: k = round(-log2 p) (at most 64) and the smallest
 * m whose (1 - e^(-kn/m))^k <= p (about -n ln p / (ln 2)^2).  blocked: the
 * smallest m (on a grid of 0.5% steps of bits per key) and best k whose
 * predicted FPR, accounting for the Poisson spread of keys over 512-bit
 * blocks, is <= 0.95 p.  redisbloom: RedisBloom 2.6's bloom_init with
 * NOROUND: b = -ln p / ln(2)^2 bits per key, m = trunc(n b) rounded up to a
 * multiple of 64, k = ceil(ln 2 * b) (RB_EPRECISION past 64).  Cost: O(1) standard; blocked about a dozen
 * evaluations of the model (0.1-0.5 ms for p <= 1%, up to ~3.5 ms as p
 * nears 1).
 * Errors: RB_EINVAL (n == 0, p out of range), RB_ERANGE (m would exceed
 * RB_BLOOM_MAX_BITS), RB_EPRECISION (blocked, p below about 1.8e-25: it
 * would need more than RB_BLOOM_BLOCKED_MAX_BPK bits per key). */
RB_EXPORT RB_WUR int rb_bloom_size(uint64_t n, double p, rb_bloom_layout_t layout,
                                   rb_bloom_sizing_t *out);

/* Any process, pure.  The classic estimate (1 - e^(-k n / m))^k. */
RB_EXPORT double rb_bloom_fpr_formula(uint64_t m, uint32_t k, uint64_t n);

#define RB_BLOOM_NONSCALING 0x1u   /* never add layers: RB_EFULL at capacity */
#define RB_BLOOM_OVERFILL   0x2u   /* with NONSCALING: the classic filter that
                                      keeps taking keys past capacity, its FPR
                                      rising as (1 - e^(-kn/m))^k */
#define RB_BLOOM_AGING      0x4u   /* a fixed ring of `generations` layers, each
                                      for `capacity` keys at error p/generations;
                                      adds go to the current one; when it is full
                                      or `window` seconds have passed, the oldest
                                      is cleared and made current.  A key stays
                                      "seen" for generations-1 to generations
                                      windows after its last add (an add of a
                                      key seen only in an older generation
                                      copies it into the current one): a
                                      cache-admission filter */
#define RB_BLOOM_MAX_LAYERS 32
#define RB_BLOOM_DEFAULT_EXPANSION 2
#define RB_BLOOM_MAX_EXPANSION 32768

typedef struct rb_bloom_params {
    uint64_t capacity;          /* n of the first layer, > 0 */
    double   error_rate;        /* p, 0 < p < 1 */
    rb_bloom_layout_t layout;
    uint32_t flags;             /* RB_BLOOM_NONSCALING, RB_BLOOM_OVERFILL,
                                   RB_BLOOM_AGING (alone) */
    uint32_t expansion;         /* scaling: each new layer holds expansion
                                   times the previous capacity; layer i has
                                   error rate p / 2^(i+1), so all together
                                   stay within p (as RedisBloom);
                                   0 -> RB_BLOOM_DEFAULT_EXPANSION */
    const unsigned char *secret;/* NULL: random; else RB_BLOOM_SECRET_BYTES
                                   bytes (a writer replaying its log) */
    uint32_t generations;       /* AGING: 2..RB_BLOOM_MAX_LAYERS; 0 -> 2 */
    uint32_t window;            /* AGING: seconds a generation stays current
                                   (0: rotate only when it is full) */
} rb_bloom_params_t;

#define RB_BLOOM_SECRET_BYTES 192

/* Per-process handle on one filter of a segment. */
typedef struct rb_bloom rb_bloom_t;

/* Writer.  Creates filter `name` (1..255 bytes) with one layer sized by
 * rb_bloom_size() (for p, or p/2 if scaling), a fresh random 192-byte hash
 * secret (arc4random_buf) unless params->secret gives one, and zeroed bits;
 * an aging filter gets its `generations` layers at p/generations each.
 * Readers see it once this returns.  Errors: RB_EROFS, RB_EINVAL,
 * RB_EEXIST, RB_ESLOTS (no free directory slot), RB_ERANGE (a layer would
 * exceed RB_BLOOM_MAX_BITS), RB_EPRECISION (a layer's error rate is below
 * what the layout reaches), RB_ENOSPC. */
RB_EXPORT RB_WUR int rb_bloom_reserve(rb_segment_t *seg, const char *name,
                                      size_t len, const rb_bloom_params_t *params);

/* Reader or writer.  Resolves filter `name` once; later calls use the
 * handle (which caches the immutable parameters and the secret).  The
 * handle must be closed before its segment.  Errors: RB_ENOENT, RB_ENOMEM,
 * RB_EWRONGTYPE (name holds a filter of another kind: a HyperLogLog counter or a count-min sketch), RB_ECORRUPT, RB_EBUSY (a directory slot kept changing under the lookup:
 * RBI_READ_RETRIES deletes and reuses of it).  Cost: O(directory) on open. */
RB_EXPORT RB_WUR int rb_bloom_open(const rb_segment_t *seg, const char *name,
                                   size_t len, rb_bloom_t **out);
RB_EXPORT void rb_bloom_close(rb_bloom_t *bf);

/* Reader or writer.  Calls fn(name, len, arg) for every live filter, in
 * directory order, until fn returns non-zero (which is then returned).
 * Cost: O(directory). */
RB_EXPORT int rb_bloom_list(const rb_segment_t *seg,
                            int (*fn)(const char *name, size_t len, void *arg), void *arg);

/* Reader or writer.  A step of a walk over the directory, as Redis's SCAN:
 * visits the `count` (> 0) directory slots from *cursor on (0 starts the
 * walk), calls fn(name, len, arg) for each live filter among them, and
 * sets *cursor to the slot to go on from, or to 0 when the directory is
 * done (a cursor past the directory also ends it).  If fn returns
 * non-zero the step stops after that filter and returns it.  Filters do
 * not move between slots, so a walk reports every filter that lived
 * throughout it exactly once; one reserved or deleted meanwhile may or
 * may not be reported.  RB_EINVAL.  Cost: O(count). */
RB_EXPORT int rb_bloom_scan(const rb_segment_t *seg, uint64_t *cursor, size_t count,
                            int (*fn)(const char *name, size_t len, void *arg), void *arg);

/* Writer.  Test-and-add: if the key may already be in any layer, returns 0
 * and changes nothing; otherwise sets its k bits in the newest layer (a
 * plain load, OR and store of each word: no other thread stores bits) and
 * returns 1.  Exact, because the writer is the only one
 * setting bits: of many clients adding one key, exactly one is told 1.  A
 * scaling filter whose newest layer is at capacity first gets a new layer
 * (expansion x the capacity, half the error rate), so it grows until memory
 * runs out (RB_ENOSPC) unless it has RB_BLOOM_MAX_LAYERS layers already
 * (RB_ELAYERS: with expansion 1), the new layer would exceed
 * RB_BLOOM_MAX_BITS (RB_ERANGE) or its error rate is below what the
 * layout reaches (RB_EPRECISION); any of these changes nothing.
 * An aging filter writes the key into its current generation whenever it is
 * not there yet, new or not (see RB_BLOOM_AGING), rotating first if that
 * generation is full.
 * Errors: RB_EROFS, RB_ENOENT (filter gone), RB_EFULL (non-scaling filter at
 * capacity), RB_ENOSPC, RB_ELAYERS, RB_ERANGE, RB_EPRECISION. */
RB_EXPORT RB_WUR int rb_bloom_add(rb_bloom_t *bf, const void *key, size_t len);

/* Writer.  Aging filters: clears the oldest generation and makes it the
 * current one.  The cleared generation is swapped for a fresh zeroed
 * array, so readers see either the old state or the new, never a
 * half-cleared one (they retry across the swap).  RB_EINVAL for other
 * filters, RB_EROFS, RB_ENOSPC (no room for the fresh array), RB_ENOENT,
 * RB_ECORRUPT (the filter's layers fail validation: nothing changes). */
RB_EXPORT RB_WUR int rb_bloom_rotate(rb_bloom_t *bf);

/* Writer.  Rotates an aging filter whose window has passed at now (unix
 * seconds).  1 if it rotated, 0 if not (not due, no window, not aging). */
RB_EXPORT RB_WUR int rb_bloom_rotate_due(rb_bloom_t *bf, uint64_t now);

/* Writer.  Clears the whole filter the same way (a scaling filter goes
 * back to its first layer).  RB_EROFS, RB_ENOSPC, RB_ENOENT, RB_ECORRUPT
 * (as rb_bloom_rotate). */
RB_EXPORT RB_WUR int rb_bloom_reset(rb_bloom_t *bf);

/* Writer.  Deletes filter `name`: its directory slot is free for the next
 * rb_bloom_reserve and its layers' arrays go back to the heap at once.
 * Handles on it (in any process) answer RB_ENOENT from their next call,
 * or, once a filter of the same name is reserved again, that new filter
 * (a handle names a filter; it rebinds by name as after a restart).  A
 * query running across the delete never answers from another filter's
 * bits or secret: the slot's generation is published before the arrays
 * are freed and never goes back when the slot is reused, so the query's
 * re-check discards what it read and it retries (docs/design.md, "Filter
 * directory", R1).  Errors: RB_EINVAL, RB_EROFS, RB_ENOENT, RB_EWRONGTYPE
 * (a count-min sketch: rb_cms_delete), RB_ECORRUPT
 * (the filter's layers fail validation: nothing changes).  Cost:
 * O(directory). */
RB_EXPORT RB_WUR int rb_bloom_delete(rb_segment_t *seg, const char *name, size_t len);

/* Writer.  rb_bloom_add for n keys, in order (a key repeated in the batch
 * is new only the first time); out_new[i] = 1/0 if out_new is not NULL.
 * Returns the number of new keys, or a negative error: argument errors
 * change nothing; a full filter (RB_EFULL, RB_ENOSPC, RB_ELAYERS, RB_ERANGE,
 * RB_EPRECISION) stops at the first key that did not fit: keys before it
 * stay added, as their out_new entries say, and it
 * and the keys after it get out_new[i] = RB_BLOOM_NOT_ADDED.  Results, item
 * counts and bits are exactly those of a loop of rb_bloom_add (layers
 * appended or generations rotated mid-batch included).  Cost: one read
 * section for the batch, and software-pipelined (each key is hashed and
 * its lines prefetched 32 keys before it is added), so the cache misses of
 * consecutive keys overlap: several times cheaper per key than
 * rb_bloom_add on a filter larger than the cache. */
#define RB_BLOOM_NOT_ADDED 0xFF
RB_EXPORT RB_WUR int64_t rb_bloom_add_many(rb_bloom_t *bf, const rb_key_t *keys,
                                           size_t n, uint8_t *out_new);

/* Reader.  1 if the key may have been added, 0 if it certainly was not.
 * Lock-free: up to k relaxed loads per layer (one cache line per layer for
 * blocked), no retry unless the writer replaced a bit array meanwhile.
 * Cost: a filter of one blocked layer takes a fast path (the layer is
 * validated once per generation, not per query): the hash, one line and
 * a few loads of the filter's header line; others open a read section
 * that validates every layer.
 * Errors: RB_ENOENT (filter deleted), RB_EBUSY, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_bloom_contains(const rb_bloom_t *bf, const void *key,
                                       size_t len);

/* Reader.  rb_bloom_contains for n keys at once: hashes a batch, prefetches
 * every probed cache line, then tests, so memory latencies overlap.
 * out[i] = 1/0.  Returns the number of keys that may be present. */
RB_EXPORT RB_WUR int64_t rb_bloom_contains_many(const rb_bloom_t *bf,
                                                const rb_key_t *keys, size_t n,
                                                uint8_t *out);

typedef struct rb_bloom_stat {
    char     name[RB_FILTER_NAME_MAX + 1];
    uint32_t layout;        /* rb_bloom_layout_t */
    uint32_t flags;         /* RB_BLOOM_NONSCALING, RB_BLOOM_AGING ... */
    uint32_t expansion;
    uint32_t layers;        /* layers (scaling) or generations (aging) */
    uint32_t current;       /* aging: the generation taking adds */
    uint32_t window;        /* aging: seconds per generation */
    uint64_t rotations;     /* aging: rotations so far */
    uint32_t k;             /* probes per key in the first layer */
    uint64_t bits;          /* m, all layers */
    uint64_t bytes;         /* bytes of the bit arrays, all layers */
    uint64_t capacity;      /* keys the layers were sized for, summed */
    double   error_rate;    /* p requested at reserve */
    uint64_t items;         /* adds that were new, all layers */
    uint64_t bits_set;      /* population count, all layers */
    double   fill;          /* bits_set / bits */
    double   est_fpr;       /* false-positive rate estimated from set bits */
    uint64_t memory;        /* bytes the filter holds in the segment: its
                               bit arrays and its directory slot */
} rb_bloom_stat_t;

/* Reader.  Figures of the filter.  bits_set and est_fpr come from a scan of
 * the arrays (cost O(m/64) loads); a layer's estimate is fill^k (standard)
 * or the mean over its blocks of (block fill)^k (blocked), and the filter's
 * is 1 - prod(1 - layer estimate). */
RB_EXPORT RB_WUR int rb_bloom_stat(const rb_bloom_t *bf, rb_bloom_stat_t *out);

/* Reader.  The same figures without the scan, O(layers): bits_set is 0,
 * and fill and est_fpr are predicted from each layer's item count,
 * fill = 1 - e^(-k n/m) and est_fpr = 1 - prod(1 - fill^k).  For servers
 * that must not spend O(m) per request. */
RB_EXPORT RB_WUR int rb_bloom_info(const rb_bloom_t *bf, rb_bloom_stat_t *out);

#ifdef __cplusplus
}
#endif
#endif /* RINGBLOOM_BLOOM_H */
