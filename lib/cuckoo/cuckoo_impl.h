/*
 * cuckoo_impl.h - what the cuckoo filter's files share (cuckoo.c, the
 * reader side and the kind; cuckoo_write.c, the writer; cuckoo_dump.c,
 * CF.SCANDUMP / CF.LOADCHUNK): the slot words a filter uses, the geometry
 * of its fingerprint arrays, and the hashing.
 *
 * What: a filter is a directory slot (layout RBI_LAYOUT_CF8, CF12 or
 * CF16: 8-, 12- or 16-bit fingerprints) plus one array per layer in the
 * heap.  Layer l has layer[l].bits buckets (a power of two) of
 * bucket_size fingerprint slots; slot i = bucket * bucket_size + j lives
 * in bits [(i % per) * f, +f) of word i / per of the array (per =
 * floor(64 / f): 8, 5 or 4; a slot never straddles two words, and a
 * 12-bit array leaves the top 4 bits of each word 0).  Fingerprint 0
 * means an empty slot.  Layer 0 has the power of two of buckets at or
 * above ceil(capacity / bucket_size); layer l + 1 has expansion x layer
 * l's (expansion is stored rounded up to a power of two; 0: no layer
 * after the first).
 *
 * Hashing: (h1, h2) = keyed XXH3-128 of the key with the filter's
 * secret.  The fingerprint is (h2 mod (2^f - 1)) + 1, never 0, the same in
 * every layer.  The first bucket in a layer is h1 masked to the layer's
 * size (the same h1 in every layer: C4); the second is the first xor
 * fmix64(fp) masked (1 if that is 0: rbi_cf_alt): alt(alt(i)) == i, so a
 * stored fingerprint's other bucket is known without its key (partial-key
 * cuckoo hashing).
 *
 * Safety without a lock (docs/design.md, "Cuckoo filter slots"): the single
 * writer changes a slot by one aligned 64-bit store of its word, so a
 * reader sees each fingerprint appear or vanish whole.
 *   C1: every fingerprint added and not deleted is stored, at every
 *       instant, in at least one of its two buckets of its layer: a move
 *       (cuckoo_write.c) copies a fingerprint into its other bucket before
 *       the slot it leaves is overwritten.
 *   C2: a move is done inside the slot's move sequence (RBI_CF_SEQ,
 *       latch.h's in-place sequence Q1): a reader that found nothing, or
 *       counted copies, re-checks it and probes again if a move began or
 *       ended meanwhile; a reader that found the fingerprint in one of the
 *       key's buckets answers at once (it was stored there).
 *   C3: a writer that died inside a move leaves the sequence odd; the
 *       writer that adopts the segment makes it even (cuckoo.c, repair).
 *       By C1 each fingerprint is still in one of its buckets; the one
 *       being moved may be there twice (old and new slot), which at worst
 *       is one extra false positive per interrupted move: a later delete
 *       of its key removes one copy, the other stays.
 *   C4: a delete never takes the last copy another present key is found
 *       by.  Layers grow by powers of two and a key's buckets in a layer
 *       are h1 and rbi_cf_alt of it (functions of h1 and fp alone,
 *       masked to its size), so two keys that share fingerprint and
 *       buckets in a layer share them in every smaller one; a delete takes the copy in the newest layer holding
 *       one, so if that copy was another key Y's, the deleted key's own
 *       copy is in that layer or an older (no larger) one, in buckets it
 *       shares with Y, where Y finds it.  (Independent buckets per layer
 *       would break this: deleting X could take Y's only copy in a layer
 *       where X never was.)
 * Growth publishes a new layer by the release store of nlayers (readers
 * acquire it) after its words and zeroed array; a delete of the filter
 * publishes the slot's generation before freeing the arrays (R1).
 */
#ifndef RBI_CUCKOO_IMPL_H
#define RBI_CUCKOO_IMPL_H

#include <stdint.h>

#include "bloom.h"
#include "format.h"
#include "hash.h"
#include "latch.h"
#include "ringbloom/cuckoo.h"
#include "segment.h"

/* The slot words a filter uses beyond the common ones (format.h; they
 * are the Bloom filter's words under other names).  layer[l] keeps its
 * names: array_off, bits (the layer's buckets), capacity (its slots),
 * items (fingerprints stored in it); k and error_bits are 0. */
#define RBI_CF_BUCKET(f)  (&(f)->flags)        /*  32 bucket_size */
#define RBI_CF_EXPAND(f)  (&(f)->expansion)    /*  40 expansion, a power of two or 0 */
#define RBI_CF_NLAYERS(f) (&(f)->nlayers)      /*  48 1..RB_BLOOM_MAX_LAYERS (release) */
#define RBI_CF_ITEMS(f)   (&(f)->items)        /*  56 fingerprints stored, all layers */
#define RBI_CF_CAP(f)     (&(f)->capacity)     /*  80 capacity as reserved */
#define RBI_CF_ITERS(f)   (&(f)->error_bits)   /*  88 max_iterations */
#define RBI_CF_SEQ(f)     (&(f)->current)      /*  96 move sequence (Q1), odd in a move */
#define RBI_CF_DELETES(f) (&(f)->window)       /* 104 fingerprints deleted */
#define RBI_CF_MOVES(f)   (&(f)->rotations)    /* 112 fingerprints moved, all adds */

/* A layer has at most this many buckets (2^48 x 255 slots: no byte count
 * overflows 64 bits). */
#define RBI_CF_MAX_NBUCKETS (1ull << 48)

static inline int rbi_cf_layout(uint64_t layout)
{
    return layout >= RBI_LAYOUT_CF8 && layout <= RBI_LAYOUT_CF16;
}

static inline uint64_t rbi_cf_layout_of(uint32_t fp_bits)
{
    return fp_bits == 8 ? RBI_LAYOUT_CF8 : fp_bits == 12 ? RBI_LAYOUT_CF12 : RBI_LAYOUT_CF16;
}

/* A filter's geometry as read from its slot. */
typedef struct rbi_cf_shape {
    uint32_t fbits, per, bsize;  /* fingerprint bits, slots per word, slots per bucket */
    uint32_t one_word;           /* every bucket lies inside one word (per % bsize == 0) */
    uint64_t fmask;              /* 2^fbits - 1: a slot's mask, the fingerprint modulus */
    uint64_t ones, highs, bmask; /* one_word: the low / high bit of each of a bucket's
                                  * slots, and its bits, at the bottom of a word */
    uint32_t bpw_log, bbits;     /* one_word with a power of two of buckets a word (all
                                  * shapes but 12-bit slots in buckets of 1): its log2,
                                  * else 32; a bucket's bits */
    uint64_t bpw_mask;           /* buckets a word - 1 */
} rbi_cf_shape_t;

/* The shape of layout and bucket_size; 0 if not one a reader accepts. */
static inline int rbi_cf_shape(uint64_t layout, uint64_t bsize, rbi_cf_shape_t *s)
{
    if (!rbi_cf_layout(layout) || bsize < 1 || bsize > RB_CUCKOO_MAX_BUCKET)
        return 0;
    s->fbits = layout == RBI_LAYOUT_CF8 ? 8u : layout == RBI_LAYOUT_CF12 ? 12u : 16u;
    s->per = 64u / s->fbits;
    s->bsize = (uint32_t)bsize;
    s->fmask = (1ull << s->fbits) - 1;
    s->one_word = s->per % s->bsize == 0;
    s->ones = 0;
    for (uint32_t k = 0; s->one_word && k < s->bsize; k++)
        s->ones |= 1ull << (k * s->fbits);
    s->highs = s->ones << (s->fbits - 1);
    s->bmask = !s->one_word ? 0 : s->bsize * s->fbits == 64 ? ~0ull
               : (1ull << (s->bsize * s->fbits)) - 1;
    s->bbits = s->bsize * s->fbits;
    s->bpw_log = 32;
    s->bpw_mask = 0;
    if (s->one_word && ((s->per / s->bsize) & (s->per / s->bsize - 1)) == 0) {
        s->bpw_log = (uint32_t)__builtin_ctz(s->per / s->bsize);
        s->bpw_mask = s->per / s->bsize - 1;
    }
    return 1;
}

/* Bytes of the array of a layer of nbuckets buckets. */
static inline uint64_t rbi_cf_layer_bytes(const rbi_cf_shape_t *s, uint64_t nbuckets)
{
    return (nbuckets * s->bsize + s->per - 1) / s->per * 8u;
}

static inline int rbi_cf_nbuckets_ok(uint64_t n)
{
    return n >= 1 && n <= RBI_CF_MAX_NBUCKETS && (n & (n - 1)) == 0;
}

static inline uint64_t rbi_cf_pow2(uint64_t x)
{
    return x <= 1 ? 1 : 1ull << (64 - __builtin_clzll(x - 1));
}

/* Layer 0's buckets for capacity (<= RB_CUCKOO_MAX_CAPACITY) and bsize. */
static inline uint64_t rbi_cf_first_nbuckets(uint64_t capacity, uint32_t bsize)
{
    return rbi_cf_pow2((capacity + bsize - 1) / bsize);
}

/* A key's hash: its fingerprint and its layer-0 first bucket's source. */
typedef struct rbi_cf_key {
    uint64_t fp, h1;
} rbi_cf_key_t;

/* x mod (2^fbits - 1) with a constant divisor in each case, so that the
 * compiler multiplies instead of dividing (a 64-bit division was a fifth
 * of a cached contains: bench section c).  Same value as x % fmask. */
static inline uint64_t rbi_cf_mod(const rbi_cf_shape_t *s, uint64_t x)
{
    return s->fbits == 16 ? x % 65535u : s->fbits == 8 ? x % 255u : x % 4095u;
}

/* Slot i's word (slots per word: 4, 8 or 5, by a shift or a constant
 * divisor), *rem its place in the word. */
static inline uint64_t rbi_cf_div(const rbi_cf_shape_t *s, uint64_t i, unsigned *rem)
{
    uint64_t q = s->per == 4 ? i >> 2 : s->per == 8 ? i >> 3 : i / 5u;

    *rem = (unsigned)(i - q * s->per);
    return q;
}

static inline __attribute__((always_inline)) rbi_cf_key_t
rbi_cf_hash(const unsigned char *secret, const rbi_cf_shape_t *s, const void *key, size_t len)
{
    rbi_h128_t h = rbi_hash_keyed128_inl(secret, RBI_SECRET_BYTES, key, len);
    rbi_cf_key_t k = { rbi_cf_mod(s, h.h2) + 1, h.h1 };

    return k;
}

/* The key's first bucket in a layer of nbuckets (a power of two): the
 * same h1 masked in every layer, so that layers nest (C4). */
static inline uint64_t rbi_cf_home(uint64_t h1, uint64_t nbuckets)
{
    return h1 & (nbuckets - 1);
}

/* The other bucket of fingerprint fp stored in bucket i (symmetric:
 * alt(alt(i)) == i, as the xor depends on fp alone).  Never i itself when
 * there are two buckets or more: a fingerprint whose mixed low bits are
 * all 0 (1 in nbuckets of them) would give its keys one bucket, which b
 * copies fill with no move possible (a third CF.ADD of one key in buckets
 * of 2 grew the filter, 1% of check_cf's runs). */
static inline uint64_t rbi_cf_alt_mix(uint64_t i, uint64_t mix, uint64_t nbuckets)
{
    uint64_t h = mix & (nbuckets - 1);

    return (i ^ (h != 0 ? h : 1)) & (nbuckets - 1);
}

/* rbi_cf_alt_mix of fp's mix rbi_fmix64(fp) (a key's probes compute the
 * mix once for every layer). */
static inline uint64_t rbi_cf_alt(uint64_t i, uint64_t fp, uint64_t nbuckets)
{
    return rbi_cf_alt_mix(i, rbi_fmix64(fp), nbuckets);
}

/* Word index and shift of slot i. */
static inline uint64_t rbi_cf_word(const rbi_cf_shape_t *s, uint64_t i, unsigned *shift)
{
    unsigned r;
    uint64_t w = rbi_cf_div(s, i, &r);

    *shift = r * s->fbits;
    return w;
}

static inline uint64_t rbi_cf_get(const rbi_cf_shape_t *s, const _Atomic uint64_t *arr,
                                  uint64_t i)
{
    unsigned sh;
    uint64_t w = rbi_cf_word(s, i, &sh);

    return (rbi_ld(&arr[w]) >> sh) & s->fmask;
}

/* The copies of fp in bucket b (all: count; else 1 if there is one).  A
 * bucket inside one word is tested whole (the zero-lane test: x has a
 * slot of 0 iff (x - ones) & ~x & highs is not 0, x the bucket xor fp in
 * every slot; a borrow can only mark slots above a zero one, so the test
 * is exact for "some slot holds fp"). */
static inline __attribute__((always_inline)) uint32_t rbi_cf_bucket_has(const rbi_cf_shape_t *s, const _Atomic uint64_t *arr,
                                         uint64_t b, uint64_t fp, int all)
{
    unsigned j;
    uint64_t wi, w;
    uint32_t n = 0;

    if (!all && s->bpw_log < 32) {
        /* The bucket's word and place by a shift and a mask. */
        uint64_t x = ((rbi_ld(&arr[b >> s->bpw_log]) >> ((b & s->bpw_mask) * s->bbits)) &
                      s->bmask) ^ (fp * s->ones);
        return ((x - s->ones) & ~x & s->highs) != 0;
    }
    wi = rbi_cf_div(s, b * s->bsize, &j);
    w = rbi_ld(&arr[wi]);
    if (!all && s->one_word) {
        uint64_t x = ((w >> (j * s->fbits)) & s->bmask) ^ (fp * s->ones);
        return ((x - s->ones) & ~x & s->highs) != 0;
    }
    for (uint32_t k = 0; k < s->bsize; k++) {
        if (((w >> (j * s->fbits)) & s->fmask) == fp) {
            n++;
            if (!all)
                return 1;
        }
        if (++j == s->per && k + 1 < s->bsize) {
            j = 0;
            w = rbi_ld(&arr[++wi]);
        }
    }
    return n;
}

/* Prefetches the first word of bucket b. */
static inline void rbi_cf_prefetch(const rbi_cf_shape_t *s, const _Atomic uint64_t *arr,
                                   uint64_t b)
{
    unsigned j;

    rbi_prefetch_line((const void *)&arr[rbi_cf_div(s, b * s->bsize, &j)]);
}

/* ---- cuckoo.c ------------------------------------------------------------ */

/* A filter as one reader section read it (cuckoo.c), or as a handle's
 * cache holds it (secret then points into the cache, which the slow path
 * filled from the same kind of view: m, inc and gen say which filter in
 * which mapping at which generation it was validated at). */
typedef struct rbi_cf_view {
    const rb_filter_shm_t *f;
    rbi_cf_shape_t s;
    uint32_t nl;
    const _Atomic uint64_t *arr[RB_BLOOM_MAX_LAYERS];
    uint64_t nb[RB_BLOOM_MAX_LAYERS];
    const unsigned char *secret;            /* sbuf, or the cache's copy */
    const rbi_map_t *m;
    uint64_t inc, gen;
    unsigned char sbuf[RBI_SECRET_BYTES];   /* the section's copy */
} rbi_cf_view_t;

/* What a reader's function does with one section: RB_OK done (the
 * section is re-checked against the generation only), 1 done but to be
 * re-checked against the move sequence too (a miss, a count, a copy of
 * the arrays), or an error (returned as it is once the section holds). */
typedef int (*rbi_cf_fn)(const rbi_cf_view_t *v, void *arg);

/* Runs fn on h's filter inside its generation section and move sequence,
 * run again whole when a re-check fails (at most RBI_READ_RETRIES times:
 * RB_EBUSY), rebinding h by name once if its slot no longer holds its
 * filter.  RB_OK, fn's error, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT,
 * RB_EBUSY. */
int rbi_cuckoo_read(const rb_cuckoo_t *h, rbi_cf_fn fn, void *arg);

/* ---- cuckoo_dump.c ------------------------------------------------------- */

#define RBI_CUCKOO_DUMP_FIXED 248u  /* header bytes before the layers */
#define RBI_CUCKOO_DUMP_LAYER 16u   /* per layer: nbuckets, items */
#define RBI_CUCKOO_HEADER_MAX (RBI_CUCKOO_DUMP_FIXED + RBI_CUCKOO_DUMP_LAYER * RB_BLOOM_MAX_LAYERS)

/* CF.SCANDUMP of filter h at iterator iter, rbi_bloom_dump's contract
 * (bloom.h): iter 0 gives the header (ours, little-endian: magic
 * "RBCFDUMP", version, fp_bits, bucket_size, max_iterations, expansion,
 * nlayers, capacity, items, deletes, the secret, then per layer nbuckets
 * and items), *next = 1; iter >= 1 the array bytes from position iter - 1
 * (all layers' arrays back to back, each word little-endian), at most
 * max_chunk of them and never across a layer, *next = iter + *len; past
 * the end (or iter < 0) *len = 0 and *next = 0.  buf NULL: only *len and
 * *next (RBI_CUCKOO_HEADER_MAX bytes hold any header).  RB_EINVAL,
 * RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY. */
int rbi_cuckoo_dump(const rb_cuckoo_t *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                    size_t *len, int64_t *next);

/* Writer.  CF.LOADCHUNK of a header (p[0 .. n), as rbi_cuckoo_dump gave
 * it): creates filter name as it describes, every layer zeroed, live at
 * once.  Every field is checked before anything is allocated: RB_EINVAL
 * with *why (the reply's text) for a bad header; RB_EEXIST (the name
 * holds a filter of any kind), RB_ESLOTS, RB_ENOSPC, RB_EROFS (nothing
 * stays allocated on any error). */
int rbi_cuckoo_load_header(rb_segment_t *seg, const char *name, size_t len, const void *p,
                           size_t n, const char **why);

/* Writer.  CF.LOADCHUNK of data: stores p[0 .. n) at array position
 * iter - n - 1 (iter: the iterator rbi_cuckoo_dump gave with the chunk,
 * RedisBloom's convention), which must fall inside one layer (RB_EINVAL
 * and *why otherwise), each word by one atomic store.  RB_ENOENT,
 * RB_EWRONGTYPE, RB_ECORRUPT, RB_EROFS. */
int rbi_cuckoo_load_chunk(rb_segment_t *seg, const char *name, size_t len, int64_t iter,
                          const void *p, size_t n, const char **why);

/* ---- cuckoo_write.c ------------------------------------------------------ */

/* The writer's view of a live filter. */
typedef struct rbi_cf_wview {
    rb_filter_shm_t *f;
    rbi_cf_shape_t s;
    uint32_t nl;
    _Atomic uint64_t *arr[RB_BLOOM_MAX_LAYERS];
    uint64_t nb[RB_BLOOM_MAX_LAYERS], off[RB_BLOOM_MAX_LAYERS];
} rbi_cf_wview_t;

/* Writer: binds filter name, every layer checked as a reader would.
 * RB_EINVAL, RB_EROFS, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT. */
int rbi_cuckoo_wbind(rb_segment_t *seg, const char *name, size_t len, rbi_cf_wview_t *v);

/* Writer (cuckoo_dump.c's load_header): a live filter name with layers
 * of nbuckets[0 .. nlayers) buckets, zeroed, and the counters given (the
 * caller checked every value as a reader would).  Errors as
 * rb_cuckoo_reserve. */
typedef struct rbi_cf_image {
    rb_cuckoo_params_t p;      /* expansion already a power of two or 0 */
    unsigned char secret[RBI_SECRET_BYTES];
    uint32_t nlayers;
    uint64_t items, deletes;
    uint64_t nbuckets[RB_BLOOM_MAX_LAYERS], litems[RB_BLOOM_MAX_LAYERS];
} rbi_cf_image_t;

int rbi_cuckoo_create_image(rb_segment_t *seg, const char *name, size_t len,
                            const rbi_cf_image_t *im);

#endif /* RBI_CUCKOO_IMPL_H */
