/*
 * bloom.c - Bloom filters in the segment: sizing, writer add, lock-free
 * reader contains.
 *
 * What: each filter is a directory slot (name, parameters, 192-byte hash
 * secret) plus a bit array in the heap.  A key's probes come from a keyed
 * 128-bit hash split into h1/h2:
 *   - standard: probe i is bit fastrange(h1 + i*h2, m), h2 forced odd
 *     (double hashing over the whole array);
 *   - blocked:  h1 picks one 512-bit block (a cache line), and the k probes
 *     are the top 9 bits of h2, h2*C, h2*C^2, ... (C odd), so a query costs
 *     one cache miss.  Blocked filters are sized up so that their FPR,
 *     which suffers from the uneven load of blocks, still meets p.
 *
 * Why it is safe without a lock: adds only ever set bits (atomic fetch-or
 * by the single writer), so a reader's relaxed loads see each bit either
 * before or after it was set, and a key the writer acknowledged is found.
 * The only non-monotonic change, replacing the array (reset), publishes a
 * new array_off and bumps `gen`; readers re-check gen after probing (the
 * seqlock for clears) and retry if it moved.
 *
 * Workload: ~10^7-10^8 contains/s per core from many processes, adds at the
 * daemon's pace.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "rb_hash.h"
#include "rb_internal.h"

#define BLOCK_BITS   512u
#define BLOCK_WORDS  8u
#define MAX_K        64u
#define PROBE_MULT   0x9E3779B97F4A7C15ULL
#define BATCH        16u

struct rb_bloom {
    const rb_segment_t *seg;
    rb_filter_shm_t *slot;
    uint64_t incarnation;
    uint64_t bits, nblocks;
    uint32_t k, layout;
    char name[RB_FILTER_NAME_MAX + 1];
    uint32_t name_len;
    unsigned char secret[RB_SECRET_BYTES];
};

/* ---- sizing -------------------------------------------------------------- */

double rb_bloom_fpr_formula(uint64_t m, uint32_t k, uint64_t n)
{
    if (m == 0)
        return 1.0;
    return pow(1.0 - exp(-(double)k * (double)n / (double)m), (double)k);
}

/* Predicted FPR of a blocked filter with `bpk` bits per key and k probes:
 * the number of keys in a block is Poisson(lambda = 512 / bpk), and a block
 * holding j keys answers a foreign query falsely with probability
 * (1 - (1 - 1/512)^(k j))^k. */
static double blocked_fpr(double bpk, uint32_t k)
{
    double lam = BLOCK_BITS / bpk, spread = 12.0 * sqrt(lam) + 30.0;
    double lo = floor(lam - spread), hi = ceil(lam + spread), sum = 0.0;
    double q = log1p(-1.0 / BLOCK_BITS), logp;
    int sign;

    if (lo < 0)
        lo = 0;
    logp = -lam + lo * log(lam) - lgamma_r(lo + 1.0, &sign);
    for (double j = lo; j <= hi; j++) {
        sum += exp(logp) * pow(-expm1((double)k * j * q), (double)k);
        logp += log(lam) - log(j + 1.0);
    }
    return sum;
}

int rb_bloom_size(uint64_t n, double p, rb_bloom_layout_t layout, rb_bloom_sizing_t *out)
{
    const double ln2sq = M_LN2 * M_LN2;
    double bpk, m;
    uint32_t k;

    if (out == NULL || n == 0 || !(p > 0.0 && p < 1.0) ||
        (layout != RB_BLOOM_STANDARD && layout != RB_BLOOM_BLOCKED))
        return RB_EINVAL;
    bpk = -log(p) / ln2sq;
    if (layout == RB_BLOOM_STANDARD) {
        m = ceil((double)n * bpk / BLOCK_BITS) * BLOCK_BITS;
        if (m > (double)RB_BLOOM_MAX_BITS)
            return RB_ERANGE;
        k = (uint32_t)lround(m / (double)n * M_LN2);
        if (k < 1)
            k = 1;
        if (k > MAX_K)
            return RB_ERANGE;
        out->fpr = rb_bloom_fpr_formula((uint64_t)m, k, n);
    } else {
        /* Grow bits per key in 0.5% steps until the best k meets p with a
         * 5% margin (the model treats a query's probes as independent). */
        double best;
        for (;;) {
            uint32_t k0 = (uint32_t)lround(bpk * M_LN2), kbest = 1;
            best = 2.0;
            for (uint32_t kk = k0 > 3 ? k0 - 3 : 1; kk <= k0 + 3 && kk <= MAX_K; kk++) {
                double f = blocked_fpr(bpk, kk);
                if (f < best) {
                    best = f;
                    kbest = kk;
                }
            }
            k = kbest;
            if (best <= 0.95 * p || bpk > 4096.0)
                break;
            bpk *= 1.005;
        }
        m = ceil((double)n * bpk / BLOCK_BITS) * BLOCK_BITS;
        if (m > (double)RB_BLOOM_MAX_BITS || best > p)
            return RB_ERANGE;
        out->fpr = best;
    }
    out->bits = (uint64_t)m;
    out->k = k;
    out->bytes = (uint64_t)m / 8;
    return RB_OK;
}

/* ---- directory ----------------------------------------------------------- */

static int name_ok(const char *name, size_t len)
{
    return name != NULL && len >= 1 && len <= RB_FILTER_NAME_MAX;
}

/* Slot holding live filter `name`, or -1. */
static int64_t dir_find(const rb_segment_t *seg, const char *name, size_t len)
{
    char buf[RB_FILTER_NAME_MAX + 1];

    for (uint64_t i = 0; i < seg->dir_slots; i++) {
        rb_filter_shm_t *f = rb_dir_slot(seg, i);
        /* Acquire pairs with the release store of LIVE in reserve: the
         * slot's fields are complete. */
        if (atomic_load_explicit(&f->state, memory_order_acquire) != RB_FILTER_LIVE ||
            rb_ld(&f->name_len) != len)
            continue;
        rb_copy_out(buf, f->name, (len + 7) / 8);
        if (memcmp(buf, name, len) == 0)
            return (int64_t)i;
    }
    return -1;
}

void rb_bloom_extents(const rb_segment_t *seg, rb_extent_t *out, size_t *n)
{
    *n = 0;
    for (uint64_t i = 0; i < seg->dir_slots; i++) {
        rb_filter_shm_t *f = rb_dir_slot(seg, i);
        if (rb_ld(&f->state) != RB_FILTER_LIVE)
            continue;
        out[*n].off = rb_ld(&f->array_off);
        out[*n].len = rb_ld(&f->bits) / 8;
        (*n)++;
    }
}

int rb_bloom_reserve(rb_segment_t *seg, const char *name, size_t len,
                     const rb_bloom_params_t *params)
{
    unsigned char secret[RB_SECRET_BYTES];
    rb_bloom_sizing_t sz;
    rb_filter_shm_t *f = NULL;
    rb_header_shm_t *h;
    uint64_t off, inc;
    _Atomic uint64_t *arr;
    int rc;

    if (seg == NULL || params == NULL || !name_ok(name, len))
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    rc = rb_bloom_size(params->capacity, params->error_rate, params->layout, &sz);
    if (rc != RB_OK)
        return rc;
    if (dir_find(seg, name, len) >= 0)
        return RB_EEXIST;
    for (uint64_t i = 0; i < seg->dir_slots && f == NULL; i++)
        if (rb_ld(&rb_dir_slot(seg, i)->state) == RB_FILTER_FREE)
            f = rb_dir_slot(seg, i);
    if (f == NULL)
        return RB_ERANGE;
    rc = rb_heap_alloc(seg, sz.bytes, &off);
    if (rc != RB_OK)
        return rc;
    /* The extent may be reused space: clear it before anyone can see it. */
    arr = rb_word_at(seg, off);
    for (uint64_t i = 0; i < sz.bits / 64; i++)
        rb_st(&arr[i], 0);
    h = rb_hdr(seg);
    inc = rb_ld(&h->next_incarnation);
    rb_st(&h->next_incarnation, inc + 1);
    arc4random_buf(secret, sizeof(secret));

    rb_st(&f->incarnation, inc);
    rb_st(&f->gen, 0);
    rb_st(&f->array_off, off);
    rb_st(&f->layout, (uint64_t)params->layout);
    rb_st(&f->k, sz.k);
    rb_st(&f->bits, sz.bits);
    rb_st(&f->capacity, params->capacity);
    {
        uint64_t pbits;
        memcpy(&pbits, &params->error_rate, sizeof(pbits));
        rb_st(&f->error_bits, pbits);
    }
    rb_st(&f->items, 0);
    rb_st(&f->name_len, len);
    rb_st(&f->created, (uint64_t)time(NULL));
    rb_copy_in(f->name, name, len);
    rb_copy_in(f->secret, secret, sizeof(secret));
    /* Release: readers that acquire LIVE see every field above. */
    atomic_store_explicit(&f->state, RB_FILTER_LIVE, memory_order_release);
    return RB_OK;
}

int rb_bloom_open(const rb_segment_t *seg, const char *name, size_t len, rb_bloom_t **out)
{
    rb_filter_shm_t *f;
    rb_bloom_t *bf;
    int64_t i;

    if (seg == NULL || out == NULL || !name_ok(name, len))
        return RB_EINVAL;
    i = dir_find(seg, name, len);
    if (i < 0)
        return RB_ENOENT;
    f = rb_dir_slot(seg, (uint64_t)i);
    bf = calloc(1, sizeof(*bf));
    if (bf == NULL)
        return RB_ENOMEM;
    bf->seg = seg;
    bf->slot = f;
    bf->incarnation = rb_ld(&f->incarnation);
    bf->bits = rb_ld(&f->bits);
    bf->k = (uint32_t)rb_ld(&f->k);
    bf->layout = (uint32_t)rb_ld(&f->layout);
    bf->nblocks = bf->bits / BLOCK_BITS;
    bf->name_len = (uint32_t)len;
    memcpy(bf->name, name, len);
    rb_copy_out(bf->secret, f->secret, RB_SECRET_WORDS);
    if (bf->bits == 0 || bf->bits % BLOCK_BITS != 0 || bf->bits > RB_BLOOM_MAX_BITS ||
        bf->k == 0 || bf->k > MAX_K ||
        (bf->layout != RB_BLOOM_STANDARD && bf->layout != RB_BLOOM_BLOCKED)) {
        free(bf);
        return RB_ECORRUPT;
    }
    *out = bf;
    return RB_OK;
}

void rb_bloom_close(rb_bloom_t *bf)
{
    free(bf);
}

/* ---- probes --------------------------------------------------------------- */

static inline uint64_t fastrange64(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

static inline rb_h128_t key_hash(const rb_bloom_t *bf, const void *key, size_t len)
{
    rb_h128_t h = rb_hash_keyed128(bf->secret, sizeof(bf->secret), key, len);
    h.h2 |= 1;
    return h;
}

/* Word index (relative to the array) and mask of probe i; `x` carries the
 * blocked layout's multiplicative state between probes. */
static inline void probe(const rb_bloom_t *bf, rb_h128_t h, uint32_t i, uint64_t *x,
                         uint64_t *word, uint64_t *mask)
{
    uint64_t bit;

    if (bf->layout == RB_BLOOM_BLOCKED) {
        bit = fastrange64(h.h1, bf->nblocks) * BLOCK_BITS + (*x >> 55);
        *x *= PROBE_MULT;
    } else {
        bit = fastrange64(h.h1 + (uint64_t)i * h.h2, bf->bits);
    }
    *word = bit >> 6;
    *mask = 1ULL << (bit & 63);
}

static inline int test_key(const rb_bloom_t *bf, const _Atomic uint64_t *arr, rb_h128_t h)
{
    uint64_t x = h.h2, word, mask;

    for (uint32_t i = 0; i < bf->k; i++) {
        probe(bf, h, i, &x, &word, &mask);
        if (!(rb_ld(&arr[word]) & mask))
            return 0;
    }
    return 1;
}

static inline void prefetch_key(const rb_bloom_t *bf, const _Atomic uint64_t *arr, rb_h128_t h)
{
    uint64_t x = h.h2, word, mask;
    uint32_t n = bf->layout == RB_BLOOM_BLOCKED ? 1 : bf->k;

    for (uint32_t i = 0; i < n; i++) {
        probe(bf, h, i, &x, &word, &mask);
        __builtin_prefetch((const void *)&arr[word], 0, 0);
    }
}

/* Start of a read section on the filter: the array to probe, or an error.
 * *gen0 is re-checked by section_retry. */
static inline int section_begin(const rb_bloom_t *bf, uint64_t *gen0,
                                const _Atomic uint64_t **arr)
{
    const rb_filter_shm_t *f = bf->slot;
    uint64_t off;

    /* Acquire pairs with the writer's release when it replaces the array
     * (gen bump after the new array and array_off are in place). */
    *gen0 = atomic_load_explicit(&f->gen, memory_order_acquire);
    if (rb_ld(&f->state) != RB_FILTER_LIVE || rb_ld(&f->incarnation) != bf->incarnation)
        return RB_ENOENT;
    off = rb_ld(&f->array_off);
    if (!rb_span_ok(rb_seg_size(bf->seg), off, bf->bits / 8))
        return RB_ECORRUPT;
    *arr = rb_word_at(bf->seg, off);
    return RB_OK;
}

static inline int section_retry(const rb_bloom_t *bf, uint64_t gen0)
{
    /* Acquire fence: the probe loads above happen before the re-load of
     * gen; pairs with the release fence after the writer bumps gen and
     * before it may reuse the old array (see docs/design.md). */
    atomic_thread_fence(memory_order_acquire);
    return rb_ld(&bf->slot->gen) != gen0;
}

int rb_bloom_contains(const rb_bloom_t *bf, const void *key, size_t len)
{
    const _Atomic uint64_t *arr;
    rb_h128_t h;
    uint64_t g;

    if (bf == NULL || (key == NULL && len != 0))
        return RB_EINVAL;
    h = key_hash(bf, key, len);
    for (uint32_t t = 0; t < RB_READ_RETRIES; t++) {
        int rc = section_begin(bf, &g, &arr);
        if (rc == RB_OK)
            rc = test_key(bf, arr, h);
        if (!section_retry(bf, g))
            return rc;
    }
    return RB_EBUSY;
}

int64_t rb_bloom_contains_many(const rb_bloom_t *bf, const rb_key_t *keys, size_t n,
                               uint8_t *out)
{
    rb_h128_t h[BATCH];
    int64_t hits = 0;

    if (bf == NULL || (keys == NULL && n != 0) || (out == NULL && n != 0))
        return RB_EINVAL;
    for (size_t base = 0; base < n; base += BATCH) {
        size_t cnt = n - base < BATCH ? n - base : BATCH;
        const _Atomic uint64_t *arr;
        int64_t batch_hits = 0;
        uint32_t t;
        uint64_t g;
        int rc = RB_OK;

        for (size_t i = 0; i < cnt; i++)
            h[i] = key_hash(bf, keys[base + i].ptr, keys[base + i].len);
        for (t = 0; t < RB_READ_RETRIES; t++) {
            rc = section_begin(bf, &g, &arr);
            if (rc == RB_OK) {
                for (size_t i = 0; i < cnt; i++)
                    prefetch_key(bf, arr, h[i]);
                batch_hits = 0;
                for (size_t i = 0; i < cnt; i++) {
                    out[base + i] = (uint8_t)test_key(bf, arr, h[i]);
                    batch_hits += out[base + i];
                }
            }
            if (!section_retry(bf, g))
                break;
        }
        if (t == RB_READ_RETRIES)
            return RB_EBUSY;
        if (rc != RB_OK)
            return rc;
        hits += batch_hits;
    }
    return hits;
}

/* ---- writer --------------------------------------------------------------- */

static int add_one(rb_bloom_t *bf, _Atomic uint64_t *arr, const void *key, size_t len)
{
    rb_h128_t h = key_hash(bf, key, len);
    uint64_t x = h.h2, word, mask, fresh = 0;

    for (uint32_t i = 0; i < bf->k; i++) {
        probe(bf, h, i, &x, &word, &mask);
        /* Monotonic: bits are only ever set here, so no ordering with
         * readers is needed beyond atomicity of the word. */
        fresh |= ~atomic_fetch_or_explicit(&arr[word], mask, memory_order_relaxed) & mask;
    }
    return fresh != 0;
}

/* The writer's array of bf (it owns the segment, so no section needed). */
static int writer_array(rb_bloom_t *bf, _Atomic uint64_t **arr)
{
    const _Atomic uint64_t *a;
    uint64_t g;
    int rc;

    if (bf == NULL)
        return RB_EINVAL;
    if (!bf->seg->writable)
        return RB_EROFS;
    rc = section_begin(bf, &g, &a);
    if (rc == RB_OK)
        *arr = (_Atomic uint64_t *)a;
    return rc;
}

int rb_bloom_add(rb_bloom_t *bf, const void *key, size_t len)
{
    _Atomic uint64_t *arr;
    int rc, fresh;

    if (key == NULL && len != 0)
        return RB_EINVAL;
    if ((rc = writer_array(bf, &arr)) != RB_OK)
        return rc;
    fresh = add_one(bf, arr, key, len);
    if (fresh)
        rb_st(&bf->slot->items, rb_ld(&bf->slot->items) + 1);
    return fresh;
}

int64_t rb_bloom_add_many(rb_bloom_t *bf, const rb_key_t *keys, size_t n, uint8_t *out_new)
{
    _Atomic uint64_t *arr;
    int64_t added = 0;
    int rc;

    if (keys == NULL && n != 0)
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].ptr == NULL && keys[i].len != 0)
            return RB_EINVAL;
    if ((rc = writer_array(bf, &arr)) != RB_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        int fresh = add_one(bf, arr, keys[i].ptr, keys[i].len);
        if (out_new != NULL)
            out_new[i] = (uint8_t)fresh;
        added += fresh;
    }
    rb_st(&bf->slot->items, rb_ld(&bf->slot->items) + (uint64_t)added);
    return added;
}

/* ---- figures -------------------------------------------------------------- */

int rb_bloom_stat(const rb_bloom_t *bf, rb_bloom_stat_t *out)
{
    const _Atomic uint64_t *arr;
    uint64_t g, ones, pbits;
    double est;
    int rc;

    if (bf == NULL || out == NULL)
        return RB_EINVAL;
    for (uint32_t t = 0;; t++) {
        if (t == RB_READ_RETRIES)
            return RB_EBUSY;
        rc = section_begin(bf, &g, &arr);
        if (rc != RB_OK) {
            if (!section_retry(bf, g))
                return rc;
            continue;
        }
        ones = 0;
        est = 0.0;
        for (uint64_t b = 0; b < bf->nblocks; b++) {
            uint64_t pc = 0;
            for (uint32_t w = 0; w < BLOCK_WORDS; w++)
                pc += (uint64_t)__builtin_popcountll(rb_ld(&arr[b * BLOCK_WORDS + w]));
            ones += pc;
            if (bf->layout == RB_BLOOM_BLOCKED)
                est += pow((double)pc / BLOCK_BITS, bf->k);
        }
        if (!section_retry(bf, g))
            break;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out->name, bf->name, bf->name_len);
    out->layout = bf->layout;
    out->k = bf->k;
    out->bits = bf->bits;
    out->bytes = bf->bits / 8;
    out->capacity = rb_ld(&bf->slot->capacity);
    pbits = rb_ld(&bf->slot->error_bits);
    memcpy(&out->error_rate, &pbits, sizeof(pbits));
    out->items = rb_ld(&bf->slot->items);
    out->bits_set = ones;
    out->fill = (double)ones / (double)bf->bits;
    out->est_fpr = bf->layout == RB_BLOOM_BLOCKED ? est / (double)bf->nblocks
                                                  : pow(out->fill, bf->k);
    return RB_OK;
}
