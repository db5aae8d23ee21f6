/*
 * bloom.h - what the Bloom filter's files share (bloom_size.c,
 * bloom_read.c, bloom_write.c): the handle and its binding, the read
 * section, and the probe arithmetic, inlined into every hot loop.
 *
 * What: each filter is a directory slot (name, parameters, 192-byte hash
 * secret, up to RB_BLOOM_MAX_LAYERS layer descriptors) plus one bit array
 * per layer in the heap.  A scaling filter (RedisBloom's default) appends a
 * layer of expansion x the capacity at half the error rate when the newest
 * one is full; an aging filter rotates a fixed ring of layers; a query
 * checks every layer.  A key's probes in layer L come from a keyed 128-bit
 * hash split into h1/h2 (remixed with L for L > 0):
 *   - standard: probe i is bit fastrange(h1 + i*h2, m), h2 forced odd
 *     (double hashing over the whole array);
 *   - blocked:  h1 picks one 512-bit block (a cache line), and the k probes
 *     are 9-bit slices of h2 (seven per word, then of a remix), so a query
 *     costs one cache miss and no serial arithmetic.  Blocked filters are
 *     sized up so that their FPR, which suffers from the uneven load of
 *     blocks, still meets p;
 *   - redisbloom: RedisBloom 2.6's filter, to the bit: h1/h2 from the
 *     unkeyed MurmurHash64A (h2 not forced odd), probe i is bit
 *     (h1 + i*h2) mod m, the same positions in every layer, m a multiple
 *     of 64; bit x is bit x%8 of byte x/8, which is bit x%64 of our word
 *     x/64 read little-endian: RedisBloom's arrays and ours hold the same
 *     bytes (bloom_dump.c).
 *
 * Why it is safe without a lock: adds only ever set bits (the single
 * writer's relaxed load, OR and relaxed store of the word: rbi_bloom_set),
 * so a reader's relaxed loads see each bit either before or after it was
 * set, and a key the writer acknowledged is found.
 * The non-monotonic changes (an array replaced by a rotation or a reset, a
 * scaling filter's layers dropped by a reset, a filter deleted and its
 * slot and arrays reused: R1, bloom_write.c) publish through the slot's
 * generation section (latch.h, G1 / G2): readers re-check gen after
 * probing and retry if it moved.
 */
#ifndef RBI_BLOOM_H
#define RBI_BLOOM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "format.h"
#include "dir.h"
#include "hash.h"
#include "heap.h"
#include "latch.h"
#include "rcache.h"
#include "segment.h"
#include "util.h"

#define RBI_BLOCK_BITS   512u                  /* a blocked layer's block: a line */
#define RBI_BLOCK_WORDS  8u
#define RBI_BLOOM_MAX_K  64u                   /* probes per key, at most */
#define RBI_PROBE_MULT   0x9E3779B97F4A7C15ULL
#define RBI_RB_SEED      0xc6a4a7935bd1e995ULL   /* redisbloom: MurmurHash64A's first seed */
#define RBI_RB_LN2       0.693147180559945       /* redisbloom: its ln 2, for k */

/* What a handle knows of its filter in one mapping: immutable, replaced
 * (never modified) when the segment handle moves to a new object or the
 * name now denotes another filter; old bindings live until close. */
typedef struct rbi_bloom_bind {
    const rbi_map_t *map;
    rb_filter_shm_t *slot;
    uint64_t incarnation;
    uint32_t layout;
    unsigned char secret[RBI_SECRET_BYTES];
    struct rbi_bloom_bind *older;
    /* The one-layer blocked fast path of rb_bloom_contains (bloom_read.c):
     * layer 0 as a read section validated it at generation view.gen.  The
     * only mutable part of a binding, process-local, guarded by its own
     * seqlock (rcache.h: view.seq odd while a thread rewrites it under the
     * handle's lock; readers that see it odd or moved take the slow path).
     * view_blocks == 0: no view. */
    rbi_rview_t view;
    _Atomic uint64_t view_off, view_blocks, view_k;
} rbi_bloom_bind_t;

struct rb_bloom {
    const rb_segment_t *seg;
    char name[RB_FILTER_NAME_MAX + 1];
    uint32_t name_len;
    _Atomic(rbi_bloom_bind_t *) bind;
    pthread_mutex_t lock;     /* serialises rebinding */
};

/* A layer's parameters as read (and validated) inside a section. */
typedef struct rbi_bloom_layer {
    const _Atomic uint64_t *arr;
    uint64_t bits;
    uint32_t k;
} rbi_bloom_layer_t;

/* A read section: the layers to probe, validated, and the generation they
 * were read at (latch.h). */
typedef struct rbi_bloom_section {
    const rbi_bloom_bind_t *b;
    uint64_t gen0;
    uint32_t nlayers;
    rbi_bloom_layer_t layer[RB_BLOOM_MAX_LAYERS];
} rbi_bloom_section_t;

typedef int (*rbi_bloom_fn)(const rbi_bloom_section_t *s, void *arg);

/* ---- bloom_read.c ------------------------------------------------------- */

/* The handle's binding for the segment's current mapping.  stale: a
 * binding the caller found no longer names a live filter (force a new
 * lookup by name).  RB_ENOENT, RB_ECORRUPT, RB_ENOMEM. */
int rbi_bloom_bind_get(const rb_bloom_t *bf, const rbi_bloom_bind_t *stale,
                       rbi_bloom_bind_t **out);

/* Opens a read section on b: the layers to probe, validated (RB_ENOENT:
 * the slot holds no longer b's filter; RB_ECORRUPT). */
int rbi_bloom_section_begin(const rbi_bloom_bind_t *b, rbi_bloom_section_t *s);

/* Runs fn inside a read section, retried while the generation moves
 * (RB_EBUSY past RBI_READ_RETRIES), rebinding once if the filter the
 * handle knew is gone (the daemon restarted with a new segment, say). */
int rbi_bloom_read(const rb_bloom_t *bf, rbi_bloom_fn fn, void *arg);

/* ---- bloom_write.c ------------------------------------------------------ */

/* A filter as a dump describes it (bloom_dump.c): the slot's parameters
 * and counters, its secret, and each layer's shape and count. */
typedef struct rbi_bloom_image_layer {
    uint64_t bits, k, capacity, items;
    double error;
} rbi_bloom_image_layer_t;

typedef struct rbi_bloom_image {
    rb_bloom_layout_t layout;
    uint32_t flags, expansion, nlayers, current;
    uint64_t items, capacity, window, rotations, rotated_at, created;
    double error_rate;
    unsigned char secret[RBI_SECRET_BYTES];
    rbi_bloom_image_layer_t layer[RB_BLOOM_MAX_LAYERS];
} rbi_bloom_image_t;

/* Writer.  Creates filter name as im describes it, its arrays zeroed (a
 * dump's data chunks fill them: rbi_bloom_load_chunk), and makes it live
 * at once.  The layers' shapes are checked as a reader would check them,
 * and the flags as rb_bloom_reserve checks them.  RB_EINVAL, RB_EROFS,
 * RB_EEXIST, RB_ESLOTS, RB_ENOSPC (the arrays do not fit in what is left
 * of max-memory: nothing stays allocated). */
int rbi_bloom_reserve_image(rb_segment_t *seg, const char *name, size_t len,
                            const rbi_bloom_image_t *im);

/* ---- bloom_dump.c ------------------------------------------------------- */

#define RBI_DUMP_CHUNK_MAX (16u << 20)  /* RedisBloom's MAX_SCANDUMP_SIZE */
#define RBI_DUMP_HEADER_MAX (20u + 53u * RB_BLOOM_MAX_LAYERS)  /* either format (RedisBloom's is longer) */

/* BF.SCANDUMP of filter bf at iterator iter: iter 0 gives the header
 * (*next = 1), iter >= 1 the array bytes from position iter - 1 (all
 * layers' arrays back to back, each little-endian), at most max_chunk of
 * them and never across a layer, *next = iter + *len; past the end (or
 * iter < 0) *len = 0 and *next = 0: RedisBloom's iterator.  A filter of
 * layout redisbloom dumps in RedisBloom's format, others in ours
 * (docs/design.md, "Dumps").  buf NULL: only *len and *next (the caller
 * sizes its buffer: RBI_DUMP_HEADER_MAX for a header).  RB_ENOENT,
 * RB_ECORRUPT, RB_EBUSY. */
int rbi_bloom_dump(const rb_bloom_t *bf, int64_t iter, size_t max_chunk, unsigned char *buf,
                   size_t *len, int64_t *next);

/* The format of a header chunk p[0 .. n): 1 ours, 2 RedisBloom's (by its
 * shape: the size its filter count implies), 0 neither. */
int rbi_bloom_dump_format(const void *p, size_t n);

/* Writer.  BF.LOADCHUNK: a header (iter 1, no filter name yet) creates the
 * filter as the header describes it, its arrays zeroed, live at once; a
 * data chunk (bf: the filter's handle) stores p[0 .. n) at the position
 * iter - n - 1 of its arrays (RedisBloom's iterator: the one SCANDUMP gave
 * with the chunk).  Every declared size is checked before anything is
 * allocated: RB_EINVAL for a header neither format describes exactly or a
 * chunk that does not fall inside one layer (*why: what is wrong, for the
 * reply), RB_ENOSPC past max-memory, RB_EEXIST, RB_ESLOTS, RB_EROFS;
 * RB_ENOENT, RB_ECORRUPT (a chunk's filter). */
int rbi_bloom_load_header(rb_segment_t *seg, const char *name, size_t len, const void *p,
                          size_t n, const char **why);
int rbi_bloom_load_chunk(rb_bloom_t *bf, int64_t iter, const void *p, size_t n,
                         const char **why);

/* ---- bloom_size.c ------------------------------------------------------- */

/* RedisBloom's bits per entry for error rate p (its calc_bpe, the same
 * double): -ln p / ln(2)^2.  Layout redisbloom sizes with it, and a dump
 * header's bpe must equal it (bloom_dump.c). */
double rbi_bloom_rb_bpe(double p);

/* ---- small shared helpers ----------------------------------------------- */

/* The shape a layer of `layout` must have, wherever its descriptor comes
 * from (the segment: layer_sound; a dump's image: image_layers): a whole
 * number of 64-byte blocks (redisbloom: of 64-bit words), at most
 * RB_BLOOM_MAX_BITS, and a k we would make. */
static inline int rbi_bloom_layer_shape_ok(uint64_t layout, uint64_t bits, uint64_t k)
{
    uint64_t unit = layout == RB_BLOOM_REDISBLOOM ? 64 : RBI_BLOCK_BITS;

    return bits != 0 && bits % unit == 0 && bits <= RB_BLOOM_MAX_BITS && k != 0 &&
           k <= RBI_BLOOM_MAX_K;
}

/* A layer descriptor a reader may probe and a writer may free: the shape
 * of its layout (rbi_bloom_layer_shape_ok), inside the segment's size
 * bytes. */
static inline int rbi_bloom_layer_sound(const rb_filter_shm_t *f, uint64_t l, uint64_t size)
{
    uint64_t off = rbi_ld(&f->layer[l].array_off), bits = rbi_ld(&f->layer[l].bits);

    return rbi_bloom_layer_shape_ok(rbi_ld(&f->layout), bits, rbi_ld(&f->layer[l].k)) &&
           rbi_span_ok(size, off, bits / 8);
}

static inline uint64_t rbi_bloom_layer_count(const rb_filter_shm_t *f)
{
    /* Acquire pairs with the release store that publishes a new layer
     * (bloom_write.c, layer_create): its descriptor is complete. */
    uint64_t n = atomic_load_explicit(&f->nlayers, memory_order_acquire);
    return n <= RB_BLOOM_MAX_LAYERS ? n : 0;
}

static inline void rbi_store_double(_Atomic uint64_t *w, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    rbi_st(w, bits);
}

static inline double rbi_load_double(const _Atomic uint64_t *w)
{
    uint64_t bits = rbi_ld(w);
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

/* ---- prefetch ----------------------------------------------------------- */

/* Asks for the line at p (write: with intent to write it).  GCC deletes
 * loops whose only effect is a __builtin_prefetch (they look side-effect
 * free), so the empty volatile asm pins each one in place. */
static inline void rbi_prefetch_line(const void *p)
{
    __builtin_prefetch(p, 0, 3);
    __asm__ __volatile__("" : : "r"(p));
}

static inline void rbi_prefetch_line_w(const void *p)
{
    __builtin_prefetch(p, 1, 3);
    __asm__ __volatile__("" : : "r"(p));
}

/* ---- probes --------------------------------------------------------------- */

static inline uint64_t rbi_fastrange64(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

static inline uint64_t rbi_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

static inline rbi_h128_t rbi_bloom_key_hash(const rbi_bloom_bind_t *b, const void *key,
                                            size_t len)
{
    rbi_h128_t h;

    if (b->layout == RB_BLOOM_REDISBLOOM) {   /* RedisBloom's bloom_calc_hash64 */
        h.h1 = rbi_hash_murmur64a(key, len, RBI_RB_SEED);
        h.h2 = rbi_hash_murmur64a(key, len, h.h1);
        return h;
    }
    h = rbi_hash_keyed128(b->secret, sizeof(b->secret), key, len);
    h.h2 |= 1;
    return h;
}

/* Layer l > 0 probes with a remix of the key's hash, so layers do not
 * share probe positions (not redisbloom: RedisBloom probes every layer at
 * the same positions). */
static inline rbi_h128_t rbi_bloom_layer_hash(uint32_t layout, rbi_h128_t h, uint64_t l)
{
    if (l != 0 && layout != RB_BLOOM_REDISBLOOM) {
        h.h1 = rbi_fmix64(h.h1 + l * RBI_PROBE_MULT);
        h.h2 = rbi_fmix64(h.h2 ^ (l * 0xC2B2AE3D27D4EB4FULL)) | 1;
    }
    return h;
}

/* In-block bit of probe i of the blocked layout: 9-bit slices of h2 >> 1
 * (bit 0 of h2 is forced to 1 for double hashing), seven per word, with no
 * dependency chain between them; probes 7.. take the slices of a remix of
 * the previous word (*base carries it).  *x is the word being sliced;
 * start with base = h2, x = h2 >> 1. */
static inline uint64_t rbi_block_bit(uint64_t *base, uint64_t *x, uint32_t i)
{
    uint64_t bit;

    if (i != 0 && i % 7 == 0) {
        *base = rbi_fmix64(*base + RBI_PROBE_MULT);
        *x = *base;
    }
    bit = *x & (RBI_BLOCK_BITS - 1);
    *x >>= 9;
    return bit;
}

/* Word index (relative to the array) and mask of probe i; base / x carry
 * the blocked layout's slicing state between probes (rbi_block_bit). */
static inline void rbi_bloom_probe(uint32_t layout, uint64_t bits, rbi_h128_t h, uint32_t i,
                                   uint64_t *base, uint64_t *x, uint64_t *word, uint64_t *mask)
{
    uint64_t bit;

    if (layout == RB_BLOOM_BLOCKED)
        bit = rbi_fastrange64(h.h1, bits / RBI_BLOCK_BITS) * RBI_BLOCK_BITS +
              rbi_block_bit(base, x, i);
    else if (layout == RB_BLOOM_REDISBLOOM)
        bit = (h.h1 + (uint64_t)i * h.h2) % bits;
    else
        bit = rbi_fastrange64(h.h1 + (uint64_t)i * h.h2, bits);
    *word = bit >> 6;
    *mask = 1ULL << (bit & 63);
}

/* The k probes of the blocked layout in the block at blk, h2 the key's
 * second hash.  All probes hit one line (loaded once, then L1): every bit
 * is tested without branching on the data, as a miss would otherwise
 * mispredict at a random probe. */
static inline __attribute__((always_inline)) int
rbi_bloom_test_block(const _Atomic uint64_t *blk, uint64_t h2, uint32_t k)
{
    uint64_t base = h2, x = h2 >> 1, all = 1;

    if (__builtin_expect(k == 7, 1)) {
        /* k = 7 (p = 1%), unrolled: probe i is slice i of x (word
         * (x >> 9i + 6) & 7, bit (x >> 9i) & 63), each shifted from x
         * itself, so the seven loads and tests carry no chain and no loop
         * (issue 29: half the instructions of the loop below). */
#define RBI_PROBE7(i) (rbi_ld(&blk[(x >> (9 * (i) + 6)) & 7]) >> ((x >> (9 * (i))) & 63))
        all = RBI_PROBE7(0) & RBI_PROBE7(1) & RBI_PROBE7(2) & RBI_PROBE7(3) & RBI_PROBE7(4) &
              RBI_PROBE7(5) & RBI_PROBE7(6);
#undef RBI_PROBE7
        return (int)(all & 1);
    }
    if (k <= 7) {   /* one word of slices */
        for (uint32_t i = 0; i < k; i++, x >>= 9)
            all &= rbi_ld(&blk[(x & (RBI_BLOCK_BITS - 1)) >> 6]) >> (x & 63);
        return (int)(all & 1);
    }
    for (uint32_t i = 0; i < k; i++) {
        uint64_t bit = rbi_block_bit(&base, &x, i);
        all &= rbi_ld(&blk[bit >> 6]) >> (bit & 63);
    }
    return (int)(all & 1);
}

static inline __attribute__((always_inline)) int
rbi_bloom_test_layer(uint32_t layout, const rbi_bloom_layer_t *lv, rbi_h128_t h)
{
    uint64_t base = h.h2, x = h.h2 >> 1, word, mask;

    if (layout == RB_BLOOM_BLOCKED)
        return rbi_bloom_test_block(
            &lv->arr[rbi_fastrange64(h.h1, lv->bits / RBI_BLOCK_BITS) * RBI_BLOCK_WORDS], h.h2,
            lv->k);
    for (uint32_t i = 0; i < lv->k; i++) {
        rbi_bloom_probe(layout, lv->bits, h, i, &base, &x, &word, &mask);
        if (!(rbi_ld(&lv->arr[word]) & mask))
            return 0;
    }
    return 1;
}

/* Prefetches the line(s) a test of h (a layer hash) in lv will touch: the
 * block (blocked), or the first two probes (standard; the rest follow
 * while those load).  write: the caller will set bits there. */
static inline void rbi_bloom_prefetch_layer(uint32_t layout, const rbi_bloom_layer_t *lv,
                                            rbi_h128_t h, int write)
{
    const char *base = (const char *)(const void *)lv->arr;
    const char *p1, *p2;

    if (layout == RB_BLOOM_BLOCKED) {
        p1 = base + rbi_fastrange64(h.h1, lv->bits / RBI_BLOCK_BITS) * 64;
        p2 = NULL;
    } else if (layout == RB_BLOOM_REDISBLOOM) {
        p1 = base + (h.h1 % lv->bits >> 6) * 8;
        p2 = base + ((h.h1 + h.h2) % lv->bits >> 6) * 8;
    } else {
        p1 = base + (rbi_fastrange64(h.h1, lv->bits) >> 6) * 8;
        p2 = base + (rbi_fastrange64(h.h1 + h.h2, lv->bits) >> 6) * 8;
    }
    if (write)
        rbi_prefetch_line_w(p1);
    else
        rbi_prefetch_line(p1);
    if (p2 != NULL) {
        if (write)
            rbi_prefetch_line_w(p2);
        else
            rbi_prefetch_line(p2);
    }
}

/* Writer: sets the bits of mask in *w.  The writer is the only one that
 * stores bit words (one process, one thread at a time: ringbloom.h), so a
 * relaxed load, OR and relaxed store cannot lose a bit, and is cheaper
 * than an atomic fetch-or (no locked RMW).  Readers only load; the word
 * stays _Atomic so that each of their loads sees it whole, before or
 * after the store (either answer is right: bits are only ever set).  No
 * ordering is needed here: what readers must see in order (a new array, a
 * new layer) is published by the generation section or nlayers (latch.h,
 * G1 / G2), not by these stores. */
static inline void rbi_bloom_set(_Atomic uint64_t *w, uint64_t mask)
{
    rbi_st(w, rbi_ld(w) | mask);
}

/* Writer: sets the k probes of the blocked layout in the block at blk
 * (the bits rbi_bloom_test_block tests). */
static inline void rbi_bloom_set_block(_Atomic uint64_t *blk, uint64_t h2, uint32_t k)
{
    uint64_t base = h2, x = h2 >> 1;

    if (__builtin_expect(k == 7, 1)) {
        /* k = 7, unrolled: the same bits as the loop below (slice i of x,
         * as rbi_bloom_test_block's), set in probe order; two probes in
         * one word each load the other's store. */
#define RBI_SET7(i) rbi_bloom_set(&blk[(x >> (9 * (i) + 6)) & 7], 1ULL << ((x >> (9 * (i))) & 63))
        RBI_SET7(0);
        RBI_SET7(1);
        RBI_SET7(2);
        RBI_SET7(3);
        RBI_SET7(4);
        RBI_SET7(5);
        RBI_SET7(6);
#undef RBI_SET7
        return;
    }

    for (uint32_t i = 0; i < k; i++) {
        uint64_t bit = rbi_block_bit(&base, &x, i);
        rbi_bloom_set(&blk[bit >> 6], 1ULL << (bit & 63));
    }
}

/* 1 if h may be in any layer of the section. */
static inline int rbi_bloom_section_test(const rbi_bloom_section_t *s, rbi_h128_t h)
{
    for (uint32_t l = 0; l < s->nlayers; l++)
        if (rbi_bloom_test_layer(s->b->layout, &s->layer[l],
                                 rbi_bloom_layer_hash(s->b->layout, h, l)))
            return 1;
    return 0;
}

#endif /* RBI_BLOOM_H */
