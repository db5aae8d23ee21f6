/*
 * bloom.c - Bloom filters in the segment: sizing, writer add, lock-free
 * reader contains.
 *
 * What: each filter is a directory slot (name, parameters, 192-byte hash
 * secret, up to RB_BLOOM_MAX_LAYERS layer descriptors) plus one bit array
 * per layer in the heap.  A scaling filter (RedisBloom's default) appends a
 * layer of expansion x the capacity at half the error rate when the newest
 * one is full; a query checks every layer.  A key's probes in layer L come
 * from a keyed 128-bit hash split into h1/h2 (remixed with L for L > 0):
 *   - standard: probe i is bit fastrange(h1 + i*h2, m), h2 forced odd
 *     (double hashing over the whole array);
 *   - blocked:  h1 picks one 512-bit block (a cache line), and the k probes
 *     are 9-bit slices of h2 (seven per word, then of a remix), so a query
 *     costs one cache miss and no serial arithmetic.  Blocked filters are sized up so that their FPR,
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

#include "hash.h"
#include "heap.h"
#include "kind.h"
#include "segment.h"
#include "util.h"

#define BLOCK_BITS   512u
#define BLOCK_WORDS  8u
#define MAX_K        64u
#define PROBE_MULT   0x9E3779B97F4A7C15ULL
#define PIPE         32u      /* contains_many: keys in flight */
#define CHUNK        1024u    /* contains_many: keys per read section */

#define TIGHTENING   0.5   /* each new layer: half the previous error rate */
#define BPK_STEP     1.005 /* blocked sizing: the grid of bits per key */
#define BLOCKED_MARGIN 0.95 /* blocked sizing: predicted FPR <= 0.95 p */
#define BLOCKED_MAX_BPK ((double)RB_BLOOM_BLOCKED_MAX_BPK)

/* What a handle knows of its filter in one mapping: immutable, replaced
 * (never modified) when the segment handle moves to a new object or the
 * name now denotes another filter; old bindings live until close. */
typedef struct bloom_bind {
    const rbi_map_t *map;
    rb_filter_shm_t *slot;
    uint64_t incarnation;
    uint32_t layout;
    unsigned char secret[RBI_SECRET_BYTES];
    struct bloom_bind *older;
} bloom_bind_t;

struct rb_bloom {
    const rb_segment_t *seg;
    char name[RB_FILTER_NAME_MAX + 1];
    uint32_t name_len;
    _Atomic(bloom_bind_t *) bind;
    pthread_mutex_t lock;     /* serialises rebinding */
};

/* A layer's parameters as read (and validated) inside a section. */
typedef struct layer_view {
    const _Atomic uint64_t *arr;
    uint64_t bits;
    uint32_t k;
} layer_view_t;

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
    double q = log1p(-1.0 / BLOCK_BITS), loglam = log(lam), logp;
    int sign;

    if (lo < 0)
        lo = 0;
    logp = -lam + lo * loglam - lgamma_r(lo + 1.0, &sign);
    for (double j = lo; j <= hi; j++) {
        sum += exp(logp) * pow(-expm1((double)k * j * q), (double)k);
        logp += loglam - log(j + 1.0);
    }
    return sum;
}

/* The k in [1, MAX_K] with the lowest blocked_fpr at bpk, its FPR in *fpr.
 * The FPR is unimodal in k, so a descent from any k (`from`: the best k of
 * a nearby bpk, so the descent is short) finds the optimum: downhill, else
 * uphill.  Downhill takes ties: in a crowded filter every k past a few
 * gives an FPR of exactly 1.0, a plateau above the optimum.  At small p the
 * optimum lies well below the standard layout's k: crowded blocks punish
 * every extra probe. */
static uint32_t blocked_best_k(double bpk, uint32_t from, double *fpr)
{
    uint32_t k = from, start = from;
    double f = blocked_fpr(bpk, k), g;

    while (k > 1 && (g = blocked_fpr(bpk, k - 1)) <= f) {
        k--;
        f = g;
    }
    while (k >= start && k < MAX_K && (g = blocked_fpr(bpk, k + 1)) < f) {
        k++;
        f = g;
    }
    *fpr = f;
    return k;
}

/* Whether bpk bits per key, with the best k, meet p with the margin; *k:
 * in, where to start looking; out, the best k. */
static int blocked_meets(double bpk, double p, uint32_t *k)
{
    double f;

    *k = blocked_best_k(bpk, *k, &f);
    return f <= BLOCKED_MARGIN * p;
}

/* Blocked: bits per key on a grid of 0.5% steps up from the standard
 * formula's, topped by BLOCKED_MAX_BPK; the first grid point whose best k
 * meets p with a 5% margin (the model treats a query's probes as
 * independent) wins.  The best FPR falls as bits per key grow, so the grid
 * is bisected (about a dozen points, each a short descent over k).  The
 * grid starts at 1/4 bit per key at least: below, even k = 1 answers
 * "maybe" with 1 - e^-4 > 0.95 (so no p < 1 is met), and the model's
 * Poisson sum, ~24 sqrt(512 / bpk) terms, would grow without bound as p
 * nears 1.  RB_EPRECISION if even BLOCKED_MAX_BPK cannot meet p. */
static int blocked_bpk(double p, double *bpk, uint32_t *k, double *fpr)
{
    double base = fmax(-log(p) / (M_LN2 * M_LN2), 0.25);
    long lo = -1, hi = lround(ceil(log(BLOCKED_MAX_BPK / base) / log(BPK_STEP)));

    *k = MAX_K;
    if (!blocked_meets(BLOCKED_MAX_BPK, p, k))
        return RB_EPRECISION;
    /* Invariant: grid point hi meets p, lo does not (-1: below the grid). */
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (blocked_meets(fmin(base * pow(BPK_STEP, (double)mid), BLOCKED_MAX_BPK), p, k))
            hi = mid;
        else
            lo = mid;
    }
    *bpk = fmin(base * pow(BPK_STEP, (double)hi), BLOCKED_MAX_BPK);
    *k = blocked_best_k(*bpk, *k, fpr);
    return RB_OK;
}

int rb_bloom_size(uint64_t n, double p, rb_bloom_layout_t layout, rb_bloom_sizing_t *out)
{
    double bpk, m, fpr = 0.0;
    uint32_t k;
    int rc;

    if (out == NULL || n == 0 || !(p > 0.0 && p < 1.0) ||
        (layout != RB_BLOOM_STANDARD && layout != RB_BLOOM_BLOCKED))
        return RB_EINVAL;
    if (layout == RB_BLOOM_STANDARD) {
        /* The fewest bits per key at which k probes meet p by the formula
         * (-n ln p / (ln 2)^2 for the real-valued optimum k; a little more
         * for the rounded k, or for k clamped at MAX_K when p < 2^-64).  k
         * comes from p, not from m: rounding m up to whole blocks only
         * lowers the FPR, and for tiny n would otherwise inflate k. */
        k = (uint32_t)lround(fmin(fmax(-log2(p), 1.0), (double)MAX_K));
        bpk = -(double)k / log1p(-pow(p, 1.0 / k));
    } else if ((rc = blocked_bpk(p, &bpk, &k, &fpr)) != RB_OK) {
        return rc;
    }
    m = ceil((double)n * bpk / BLOCK_BITS) * BLOCK_BITS;
    if (m > (double)RB_BLOOM_MAX_BITS)
        return RB_ERANGE;
    out->bits = (uint64_t)m;
    out->k = k;
    out->bytes = (uint64_t)m / 8;
    out->fpr = layout == RB_BLOOM_STANDARD ? rb_bloom_fpr_formula(out->bits, k, n) : fpr;
    return RB_OK;
}

/* ---- directory ----------------------------------------------------------- */

static int name_ok(const char *name, size_t len)
{
    return name != NULL && len >= 1 && len <= RB_FILTER_NAME_MAX;
}

/* Slot holding live filter `name` in m, or -1. */
static int64_t dir_find(const rbi_map_t *m, const char *name, size_t len)
{
    char buf[RB_FILTER_NAME_MAX + 1];

    for (uint64_t i = 0; i < m->dir_slots; i++) {
        rb_filter_shm_t *f = rbi_dir_slot(m, i);
        /* Acquire pairs with the release store of LIVE in reserve: the
         * slot's fields are complete. */
        if (atomic_load_explicit(&f->state, memory_order_acquire) != RBI_FILTER_LIVE ||
            rbi_ld(&f->name_len) != len)
            continue;
        rbi_copy_out(buf, f->name, (len + 7) / 8);
        if (memcmp(buf, name, len) == 0)
            return (int64_t)i;
    }
    return -1;
}

static uint64_t layer_count(const rb_filter_shm_t *f)
{
    /* Acquire pairs with the release store that publishes a new layer:
     * its descriptor is complete. */
    uint64_t n = atomic_load_explicit(&f->nlayers, memory_order_acquire);
    return n <= RB_BLOOM_MAX_LAYERS ? n : 0;
}

/* A layer descriptor a reader may probe and a writer may free: a whole
 * number of 64-byte blocks within the limits, a k we would make, inside
 * the segment's size bytes. */
static int layer_sound(const rb_filter_shm_t *f, uint64_t l, uint64_t size)
{
    uint64_t off = rbi_ld(&f->layer[l].array_off), bits = rbi_ld(&f->layer[l].bits);
    uint64_t k = rbi_ld(&f->layer[l].k);

    return bits != 0 && bits % BLOCK_BITS == 0 && bits <= RB_BLOOM_MAX_BITS && k != 0 &&
           k <= MAX_K && rbi_span_ok(size, off, bits / 8);
}

/* The bloom kind's extents (kind.h): one array per layer, each sound. */
static int kind_extents(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n)
{
    uint64_t nl = layer_count(f);

    /* A live filter always has a first layer (it goes live after it), in
     * every state a writer can stop in. */
    if (nl == 0)
        return RB_ECORRUPT;
    for (uint64_t l = 0; l < nl; l++) {
        if (!layer_sound(f, l, size))
            return RB_ECORRUPT;
        out[l].off = rbi_ld(&f->layer[l].array_off);
        out[l].len = rbi_ld(&f->layer[l].bits) / 8;
    }
    *n = (size_t)nl;
    return RB_OK;
}

static uint64_t kind_heap_bytes(const rb_filter_shm_t *f)
{
    uint64_t bytes = 0;

    for (uint64_t l = 0; l < rbi_ld(&f->nlayers) && l < RB_BLOOM_MAX_LAYERS; l++)
        bytes += rbi_round_up(rbi_ld(&f->layer[l].bits) / 8, RBI_ALIGN);
    return bytes;
}

const rbi_kind_t rbi_kind_bloom = {
    "bloom", RB_BLOOM_STANDARD, RB_BLOOM_BLOCKED, kind_extents, kind_heap_bytes,
};

static void store_double(_Atomic uint64_t *w, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    rbi_st(w, bits);
}

static double load_double(const _Atomic uint64_t *w)
{
    uint64_t bits = rbi_ld(w);
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

/* Writer: sizes, allocates and zeroes layer l of f, then publishes it by
 * storing nlayers = l + 1 (release).  Nothing changes on error. */
static int layer_create(rb_segment_t *seg, rb_filter_shm_t *f, uint64_t l,
                        uint64_t capacity, double error, rb_bloom_layout_t layout)
{
    rbi_map_t *m = rbi_seg_map(seg);
    rb_bloom_sizing_t sz;
    _Atomic uint64_t *arr;
    uint64_t off;
    int rc;

    rc = rb_bloom_size(capacity, error, layout, &sz);
    if (rc != RB_OK)
        return rc;
    rc = rbi_heap_alloc(seg, sz.bytes, &off);
    if (rc != RB_OK)
        return rc;
    /* The extent may be reused space: clear it before anyone can see it. */
    arr = rbi_word_at(m, off);
    for (uint64_t i = 0; i < sz.bits / 64; i++)
        rbi_st(&arr[i], 0);
    rbi_st(&f->layer[l].array_off, off);
    rbi_st(&f->layer[l].bits, sz.bits);
    rbi_st(&f->layer[l].k, sz.k);
    rbi_st(&f->layer[l].capacity, capacity);
    rbi_st(&f->layer[l].items, 0);
    store_double(&f->layer[l].error_bits, error);
    atomic_store_explicit(&f->nlayers, l + 1, memory_order_release);
    return RB_OK;
}

int rb_bloom_reserve(rb_segment_t *seg, const char *name, size_t len,
                     const rb_bloom_params_t *params)
{
    unsigned char secret[RBI_SECRET_BYTES];
    rb_bloom_sizing_t sz;
    rb_filter_shm_t *f = NULL;
    rb_header_shm_t *h;
    rbi_map_t *m;
    uint64_t inc;
    int rc;

    uint32_t gens = params ? (params->generations ? params->generations : 2) : 0;
    int aging;

    if (seg == NULL || params == NULL || !name_ok(name, len) ||
        (params->flags & ~(RB_BLOOM_NONSCALING | RB_BLOOM_OVERFILL | RB_BLOOM_AGING)) != 0 ||
        ((params->flags & RB_BLOOM_OVERFILL) && !(params->flags & RB_BLOOM_NONSCALING)) ||
        ((params->flags & RB_BLOOM_AGING) && params->flags != RB_BLOOM_AGING) ||
        gens < 2 || gens > RB_BLOOM_MAX_LAYERS || params->expansion > RB_BLOOM_MAX_EXPANSION)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    aging = (params->flags & RB_BLOOM_AGING) != 0;
    rc = rb_bloom_size(params->capacity, aging ? params->error_rate / gens : params->error_rate,
                       params->layout, &sz);
    if (rc != RB_OK)
        return rc;
    m = rbi_seg_map(seg);
    if (dir_find(m, name, len) >= 0)
        return RB_EEXIST;
    for (uint64_t i = 0; i < m->dir_slots && f == NULL; i++)
        if (rbi_ld(&rbi_dir_slot(m, i)->state) == RBI_FILTER_FREE)
            f = rbi_dir_slot(m, i);
    if (f == NULL)
        return RB_ERANGE;
    /* A scaling filter's layers have error rates p/2, p/4, ... so that
     * together they stay within p (RedisBloom does the same); an aging
     * filter's generations p/g each, for the same reason. */
    for (uint32_t l = 0; l < (aging ? gens : 1u); l++) {
        double e = aging ? params->error_rate / gens
                   : params->error_rate * ((params->flags & RB_BLOOM_NONSCALING) ? 1.0 : TIGHTENING);
        rc = layer_create(seg, f, l, params->capacity, e, params->layout);
        if (rc != RB_OK) {
            for (uint32_t d = 0; d < l; d++)
                rbi_heap_free(seg, rbi_ld(&f->layer[d].array_off), rbi_ld(&f->layer[d].bits) / 8);
            rbi_st(&f->nlayers, 0);
            return rc;
        }
    }
    h = rbi_hdr(m);
    inc = rbi_ld(&h->next_incarnation);
    rbi_st(&h->next_incarnation, inc + 1);
    if (params->secret != NULL)
        memcpy(secret, params->secret, sizeof(secret));
    else
        arc4random_buf(secret, sizeof(secret));

    rbi_st(&f->incarnation, inc);
    rbi_gen_init(&f->gen);
    rbi_st(&f->layout, (uint64_t)params->layout);
    rbi_st(&f->flags, params->flags);
    rbi_st(&f->expansion, params->expansion ? params->expansion : RB_BLOOM_DEFAULT_EXPANSION);
    rbi_st(&f->items, 0);
    rbi_st(&f->name_len, len);
    rbi_st(&f->created, (uint64_t)time(NULL));
    rbi_st(&f->capacity, params->capacity);
    store_double(&f->error_bits, params->error_rate);
    rbi_st(&f->current, 0);
    rbi_st(&f->window, aging ? params->window : 0);
    rbi_st(&f->rotations, 0);
    rbi_st(&f->rotated_at, (uint64_t)time(NULL));
    rbi_copy_in(f->name, name, len);
    rbi_copy_in(f->secret, secret, sizeof(secret));
    /* Release: readers that acquire LIVE see every field above. */
    atomic_store_explicit(&f->state, RBI_FILTER_LIVE, memory_order_release);
    return RB_OK;
}

int rb_bloom_list(const rb_segment_t *seg, int (*fn)(const char *, size_t, void *), void *arg)
{
    const rbi_map_t *m;
    char name[RB_FILTER_NAME_MAX + 1];

    if (seg == NULL || fn == NULL)
        return RB_EINVAL;
    m = rbi_reader_map(seg);
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        rb_filter_shm_t *f = rbi_dir_slot(m, i);
        uint64_t len;
        int rc;
        if (atomic_load_explicit(&f->state, memory_order_acquire) != RBI_FILTER_LIVE)
            continue;
        len = rbi_ld(&f->name_len);
        if (len == 0 || len > RB_FILTER_NAME_MAX)
            continue;
        rbi_copy_out(name, f->name, (len + 7) / 8);
        if ((rc = fn(name, len, arg)) != 0)
            return rc;
    }
    return RB_OK;
}

/* A new binding of name in m, or RB_ENOENT / RB_ECORRUPT / RB_ENOMEM. */
static int bind_resolve(const rbi_map_t *m, const char *name, size_t len, bloom_bind_t **out)
{
    int64_t i = dir_find(m, name, len);
    rb_filter_shm_t *f;
    bloom_bind_t *b;

    if (i < 0)
        return RB_ENOENT;
    f = rbi_dir_slot(m, (uint64_t)i);
    b = calloc(1, sizeof(*b));
    if (b == NULL)
        return RB_ENOMEM;
    b->map = m;
    b->slot = f;
    b->incarnation = rbi_ld(&f->incarnation);
    b->layout = (uint32_t)rbi_ld(&f->layout);
    rbi_copy_out(b->secret, f->secret, RBI_SECRET_WORDS);
    if (b->layout != RB_BLOOM_STANDARD && b->layout != RB_BLOOM_BLOCKED) {
        free(b);
        return RB_ECORRUPT;
    }
    *out = b;
    return RB_OK;
}

int rb_bloom_open(const rb_segment_t *seg, const char *name, size_t len, rb_bloom_t **out)
{
    bloom_bind_t *b;
    rb_bloom_t *bf;
    int rc;

    if (seg == NULL || out == NULL || !name_ok(name, len))
        return RB_EINVAL;
    rc = bind_resolve(rbi_reader_map(seg), name, len, &b);
    if (rc != RB_OK)
        return rc;
    bf = calloc(1, sizeof(*bf));
    if (bf == NULL) {
        free(b);
        return RB_ENOMEM;
    }
    bf->seg = seg;
    bf->name_len = (uint32_t)len;
    memcpy(bf->name, name, len);
    pthread_mutex_init(&bf->lock, NULL);
    atomic_store(&bf->bind, b);
    *out = bf;
    return RB_OK;
}

void rb_bloom_close(rb_bloom_t *bf)
{
    bloom_bind_t *b;

    if (bf == NULL)
        return;
    b = atomic_load(&bf->bind);
    while (b != NULL) {
        bloom_bind_t *older = b->older;
        free(b);
        b = older;
    }
    pthread_mutex_destroy(&bf->lock);
    free(bf);
}

/* The handle's binding for the segment's current mapping.  stale: the
 * binding the caller found no longer names a live filter (force a new
 * lookup by name).  Rebinding is rare and serialised by the handle's lock;
 * the fast path is two loads. */
static int bind_get(const rb_bloom_t *cbf, const bloom_bind_t *stale, bloom_bind_t **out)
{
    rb_bloom_t *bf = (rb_bloom_t *)cbf;
    const rbi_map_t *m = rbi_reader_map(bf->seg);
    bloom_bind_t *b = atomic_load_explicit(&bf->bind, memory_order_acquire), *nb;
    int rc = RB_OK;

    if (b->map == m && b != stale) {
        *out = b;
        return RB_OK;
    }
    pthread_mutex_lock(&bf->lock);
    b = atomic_load_explicit(&bf->bind, memory_order_acquire);
    if (b->map != m || b == stale) {
        rc = bind_resolve(m, bf->name, bf->name_len, &nb);
        if (rc == RB_OK) {
            nb->older = b;
            /* Release: readers of the new binding see it complete. */
            atomic_store_explicit(&bf->bind, nb, memory_order_release);
            b = nb;
        }
    }
    pthread_mutex_unlock(&bf->lock);
    *out = b;
    return rc;
}

/* ---- probes --------------------------------------------------------------- */

static inline uint64_t fastrange64(uint64_t x, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

static inline uint64_t fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

static inline rbi_h128_t key_hash(const bloom_bind_t *b, const void *key, size_t len)
{
    rbi_h128_t h = rbi_hash_keyed128(b->secret, sizeof(b->secret), key, len);
    h.h2 |= 1;
    return h;
}

/* Layer l > 0 probes with a remix of the key's hash, so layers do not
 * share probe positions. */
static inline rbi_h128_t layer_hash(rbi_h128_t h, uint64_t l)
{
    if (l != 0) {
        h.h1 = fmix64(h.h1 + l * PROBE_MULT);
        h.h2 = fmix64(h.h2 ^ (l * 0xC2B2AE3D27D4EB4FULL)) | 1;
    }
    return h;
}

/* In-block bit of probe i of the blocked layout: 9-bit slices of h2 >> 1
 * (bit 0 of h2 is forced to 1 for double hashing), seven per word, with no
 * dependency chain between them; probes 7.. take the slices of a remix of
 * the previous word (*base carries it).  *x is the word being sliced;
 * start with base = h2, x = h2 >> 1. */
static inline uint64_t block_bit(uint64_t *base, uint64_t *x, uint32_t i)
{
    uint64_t bit;

    if (i != 0 && i % 7 == 0) {
        *base = fmix64(*base + PROBE_MULT);
        *x = *base;
    }
    bit = *x & (BLOCK_BITS - 1);
    *x >>= 9;
    return bit;
}

/* Word index (relative to the array) and mask of probe i; base / x carry
 * the blocked layout's slicing state between probes (block_bit). */
static inline void probe(uint32_t layout, uint64_t bits, rbi_h128_t h, uint32_t i,
                         uint64_t *base, uint64_t *x, uint64_t *word, uint64_t *mask)
{
    uint64_t bit;

    if (layout == RB_BLOOM_BLOCKED) {
        bit = fastrange64(h.h1, bits / BLOCK_BITS) * BLOCK_BITS + block_bit(base, x, i);
    } else {
        bit = fastrange64(h.h1 + (uint64_t)i * h.h2, bits);
    }
    *word = bit >> 6;
    *mask = 1ULL << (bit & 63);
}

/* The k probes of the blocked layout in the block at blk, h2 the key's
 * second hash.  All probes hit one line (loaded once, then L1): every bit
 * is tested without branching on the data, as a miss would otherwise
 * mispredict at a random probe. */
static inline __attribute__((always_inline)) int test_block(const _Atomic uint64_t *blk,
                                                          uint64_t h2, uint32_t k)
{
    uint64_t base = h2, x = h2 >> 1, all = 1;

    for (uint32_t i = 0; i < k; i++) {
        uint64_t bit = block_bit(&base, &x, i);
        all &= rbi_ld(&blk[bit >> 6]) >> (bit & 63);
    }
    return (int)(all & 1);
}

static inline __attribute__((always_inline)) int test_layer(uint32_t layout,
                                                          const layer_view_t *lv, rbi_h128_t h)
{
    uint64_t base = h.h2, x = h.h2 >> 1, word, mask;

    if (layout == RB_BLOOM_BLOCKED)
        return test_block(&lv->arr[fastrange64(h.h1, lv->bits / BLOCK_BITS) * BLOCK_WORDS],
                          h.h2, lv->k);
    for (uint32_t i = 0; i < lv->k; i++) {
        probe(layout, lv->bits, h, i, &base, &x, &word, &mask);
        if (!(rbi_ld(&lv->arr[word]) & mask))
            return 0;
    }
    return 1;
}

/* Asks for the line at p.  GCC deletes loops whose only effect is a
 * __builtin_prefetch (they look side-effect free), so the empty volatile
 * asm pins each one in place. */
static inline void prefetch_line(const void *p)
{
    __builtin_prefetch(p, 0, 3);
    __asm__ __volatile__("" : : "r"(p));
}

/* Prefetches the line(s) a test of h will touch: the block (blocked), or
 * the first two probes (standard; the rest follow while those load). */
static inline void prefetch_layer(uint32_t layout, const layer_view_t *lv, rbi_h128_t h)
{
    const char *base = (const char *)(const void *)lv->arr;

    if (layout == RB_BLOOM_BLOCKED) {
        prefetch_line(base + fastrange64(h.h1, lv->bits / BLOCK_BITS) * 64);
    } else {
        prefetch_line(base + (fastrange64(h.h1, lv->bits) >> 6) * 8);
        prefetch_line(base + (fastrange64(h.h1 + h.h2, lv->bits) >> 6) * 8);
    }
}

/* ---- read sections ------------------------------------------------------- */

typedef struct bloom_section {
    const bloom_bind_t *b;
    uint64_t gen0;
    uint32_t nlayers;
    layer_view_t layer[RB_BLOOM_MAX_LAYERS];
} bloom_section_t;

/* Opens a read section on b: the layers to probe, validated, or an error.
 * gen0 is re-checked by section_retry. */
static int section_begin(const bloom_bind_t *b, bloom_section_t *s)
{
    const rb_filter_shm_t *f = b->slot;
    uint64_t size, n;

    s->b = b;
    /* G1 (latch.h): an array replaced before gen0 was published is seen
     * in place, with its offset. */
    s->gen0 = rbi_gen_read_begin(&f->gen);
    if (rbi_ld(&f->state) != RBI_FILTER_LIVE || rbi_ld(&f->incarnation) != b->incarnation)
        return RB_ENOENT;
    n = layer_count(f);
    if (n == 0)
        return RB_ECORRUPT;
    size = rbi_seg_size(b->map);
    for (uint64_t l = 0; l < n; l++) {
        if (!layer_sound(f, l, size))
            return RB_ECORRUPT;
        s->layer[l].arr = rbi_word_at(b->map, rbi_ld(&f->layer[l].array_off));
        s->layer[l].bits = rbi_ld(&f->layer[l].bits);
        s->layer[l].k = (uint32_t)rbi_ld(&f->layer[l].k);
    }
    s->nlayers = (uint32_t)n;
    return RB_OK;
}

static inline int section_retry(const bloom_section_t *s)
{
    /* G2 (latch.h): probes that read an array replaced after gen0 and
     * reused since are discarded. */
    return rbi_gen_read_retry(&s->b->slot->gen, s->gen0);
}

/* 1 if h may be in any layer of the section. */
static inline int section_test(const bloom_section_t *s, rbi_h128_t h)
{
    for (uint32_t l = 0; l < s->nlayers; l++)
        if (test_layer(s->b->layout, &s->layer[l], layer_hash(h, l)))
            return 1;
    return 0;
}

/* Runs fn inside a read section, rebinding once if the filter the handle
 * knew is gone (the daemon restarted with a new segment, say). */
typedef int (*section_fn)(const bloom_section_t *s, void *arg);

static int bloom_read(const rb_bloom_t *bf, section_fn fn, void *arg)
{
    bloom_bind_t *b, *stale = NULL;
    int rc;

    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rc = bind_get(bf, stale, &b)) != RB_OK)
            return rc;
        for (uint32_t t = 0; t < RBI_READ_RETRIES; t++) {
            bloom_section_t s;
            rc = section_begin(b, &s);
            if (rc == RB_OK)
                rc = fn(&s, arg);
            if (!section_retry(&s))
                break;
            rc = RB_EBUSY;
        }
        if (rc != RB_ENOENT)
            return rc;
        stale = b;
    }
    return rc;
}

typedef struct contains_arg {
    const rb_key_t *keys;
    size_t n;
    uint8_t *out;
    int64_t hits;
} contains_arg_t;

/* contains_fn for the common case, one blocked layer: the pipeline keeps
 * each key's block address and second hash instead of the whole hash. */
static int contains_blocked1(const bloom_section_t *s, contains_arg_t *a)
{
    const layer_view_t *lv = &s->layer[0];
    const _Atomic uint64_t *arr = lv->arr, *blk[PIPE];
    const rb_key_t *keys = a->keys;
    const bloom_bind_t *b = s->b;
    uint64_t h2[PIPE], nblocks = lv->bits / BLOCK_BITS;
    uint8_t *out = a->out;
    uint32_t k = lv->k;
    size_t n = a->n;
    int64_t hits = 0;   /* a local: out[] (bytes) may alias anything */

    for (size_t i = 0; i < n + PIPE; i++) {
        if (i >= PIPE) {
            int hit = test_block(blk[i % PIPE], h2[i % PIPE], k);
            out[i - PIPE] = (uint8_t)hit;
            hits += hit;
        }
        if (i < n) {
            rbi_h128_t x = key_hash(b, keys[i].ptr, keys[i].len);
            blk[i % PIPE] = &arr[fastrange64(x.h1, nblocks) * BLOCK_WORDS];
            h2[i % PIPE] = x.h2;
            prefetch_line((const void *)blk[i % PIPE]);
        }
    }
    a->hits = hits;
    return RB_OK;
}

/* Tests a->n keys.  Software-pipelined: key i is hashed and its lines
 * prefetched PIPE keys before it is tested, so memory latencies overlap
 * with hashing and testing the keys in between. */
static int contains_fn(const bloom_section_t *s, void *arg)
{
    contains_arg_t *a = arg;
    rbi_h128_t h[PIPE];
    size_t n = a->n;

    a->hits = 0;
    if (n == 1) {
        a->out[0] = (uint8_t)section_test(s, key_hash(s->b, a->keys[0].ptr, a->keys[0].len));
        a->hits = a->out[0];
        return RB_OK;
    }
    if (s->nlayers == 1 && s->b->layout == RB_BLOOM_BLOCKED)
        return contains_blocked1(s, a);
    for (size_t i = 0; i < n + PIPE; i++) {
        /* Test key i - PIPE first: its slot is the one key i reuses. */
        if (i >= PIPE) {
            size_t j = i - PIPE;
            a->out[j] = (uint8_t)section_test(s, h[j % PIPE]);
            a->hits += a->out[j];
        }
        if (i < n) {
            rbi_h128_t x = key_hash(s->b, a->keys[i].ptr, a->keys[i].len);
            h[i % PIPE] = x;
            for (uint32_t l = 0; l < s->nlayers; l++)
                prefetch_layer(s->b->layout, &s->layer[l], layer_hash(x, l));
        }
    }
    return RB_OK;
}

int rb_bloom_contains(const rb_bloom_t *bf, const void *key, size_t len)
{
    rb_key_t k = { key, len };
    uint8_t out;
    contains_arg_t a = { &k, 1, &out, 0 };
    int rc;

    if (bf == NULL || (key == NULL && len != 0))
        return RB_EINVAL;
    rc = bloom_read(bf, contains_fn, &a);
    return rc == RB_OK ? out : rc;
}

int64_t rb_bloom_contains_many(const rb_bloom_t *bf, const rb_key_t *keys, size_t n,
                               uint8_t *out)
{
    int64_t hits = 0;

    if (bf == NULL || (keys == NULL && n != 0) || (out == NULL && n != 0))
        return RB_EINVAL;
    /* One section per chunk, so a gen bump re-does at most one chunk. */
    for (size_t base = 0; base < n; base += CHUNK) {
        contains_arg_t a = { keys + base, n - base < CHUNK ? n - base : CHUNK, out + base, 0 };
        int rc = bloom_read(bf, contains_fn, &a);
        if (rc != RB_OK)
            return rc;
        hits += a.hits;
    }
    return hits;
}

/* ---- clearing: reset and aging rotation ---------------------------------- */

/* Swaps fresh zeroed arrays into the `count` layers listed in which[],
 * then (release) bumps gen: a reader that probed an old array sees the new
 * gen and retries, so nobody acts on a half-cleared layer.  The old arrays
 * are freed only after the bump (fenced: later reuse of their space cannot
 * be seen before it).  `after` runs between the swap and the bump, to
 * change other fields under the same gen.  Nothing changes on ENOSPC. */
static int swap_fresh(rb_segment_t *seg, rb_filter_shm_t *f, const uint64_t *which, size_t count,
                      void (*after)(rb_filter_shm_t *, void *), void *arg)
{
    rbi_map_t *m = rbi_seg_map(seg);
    uint64_t fresh[RB_BLOOM_MAX_LAYERS], old[RB_BLOOM_MAX_LAYERS], bytes[RB_BLOOM_MAX_LAYERS];
    int rc;

    for (size_t i = 0; i < count; i++) {
        _Atomic uint64_t *arr;
        bytes[i] = rbi_ld(&f->layer[which[i]].bits) / 8;
        if ((rc = rbi_heap_alloc(seg, bytes[i], &fresh[i])) != RB_OK) {
            while (i-- > 0)
                rbi_heap_free(seg, fresh[i], bytes[i]);
            return rc;
        }
        arr = rbi_word_at(m, fresh[i]);
        for (uint64_t w = 0; w < bytes[i] / 8; w++)
            rbi_st(&arr[w], 0);
    }
    for (size_t i = 0; i < count; i++) {
        old[i] = rbi_ld(&f->layer[which[i]].array_off);
        rbi_st(&f->layer[which[i]].array_off, fresh[i]);
        rbi_st(&f->layer[which[i]].items, 0);
    }
    if (after != NULL)
        after(f, arg);
    /* G1: the new arrays and fields are seen with the new gen; G2: what
     * a later allocation stores in the freed arrays' space is seen only
     * with it (both latch.h; section_begin / section_retry pair). */
    rbi_gen_publish(&f->gen);
    for (size_t i = 0; i < count; i++)
        rbi_heap_free(seg, old[i], bytes[i]);
    return RB_OK;
}

static void rotated(rb_filter_shm_t *f, void *arg)
{
    rbi_st(&f->current, *(const uint64_t *)arg);
    rbi_st(&f->rotations, rbi_ld(&f->rotations) + 1);
    rbi_st(&f->rotated_at, (uint64_t)time(NULL));
}

/* Aging: clear the oldest generation (the one after current) and make it
 * current. */
static int rotate(rb_segment_t *seg, const bloom_bind_t *b, rb_filter_shm_t *f)
{
    uint64_t n = layer_count(f), next;

    (void)b;
    if (n < 2)
        return RB_ECORRUPT;
    next = (rbi_ld(&f->current) + 1) % n;
    return swap_fresh(seg, f, &next, 1, rotated, &next);
}

static void was_reset(rb_filter_shm_t *f, void *arg)
{
    uint64_t keep = *(const uint64_t *)arg;

    rbi_st(&f->items, 0);
    rbi_st(&f->current, 0);
    rbi_st(&f->rotated_at, (uint64_t)time(NULL));
    /* Release: layers beyond keep were dropped (scaling); readers that
     * acquire the smaller count never look at them. */
    atomic_store_explicit(&f->nlayers, keep, memory_order_release);
}

/* The writer's binding for bf, on a slot whose layers are sound.  The
 * writer owns the slot, so nothing changes under it, but a slot it took
 * over may hold anything: the layers are validated as a reader's section
 * does, because rotate / reset free the arrays they replace, and freeing
 * an extent that is not live (a layer beyond nlayers, found by
 * fuzz_attach) would hand out space that another filter or the ring
 * still uses. */
static int writer_bind(rb_bloom_t *bf, bloom_bind_t **b)
{
    bloom_section_t s;
    int rc;

    if (bf == NULL)
        return RB_EINVAL;
    if (!bf->seg->writable)
        return RB_EROFS;
    if ((rc = bind_get(bf, NULL, b)) != RB_OK)
        return rc;
    return section_begin(*b, &s);   /* RB_ENOENT, RB_ECORRUPT */
}

int rb_bloom_rotate(rb_bloom_t *bf)
{
    bloom_bind_t *b;
    int rc = writer_bind(bf, &b);

    if (rc != RB_OK)
        return rc;
    if (!(rbi_ld(&b->slot->flags) & RB_BLOOM_AGING))
        return RB_EINVAL;
    return rotate((rb_segment_t *)bf->seg, b, b->slot);
}

int rb_bloom_rotate_due(rb_bloom_t *bf, uint64_t now)
{
    bloom_bind_t *b;
    uint64_t window;
    int rc = writer_bind(bf, &b);

    if (rc != RB_OK)
        return rc;
    window = rbi_ld(&b->slot->window);
    if (!(rbi_ld(&b->slot->flags) & RB_BLOOM_AGING) || window == 0 ||
        now < rbi_ld(&b->slot->rotated_at) + window)
        return 0;
    rc = rotate((rb_segment_t *)bf->seg, b, b->slot);
    return rc == RB_OK ? 1 : rc;
}

int rb_bloom_reset(rb_bloom_t *bf)
{
    uint64_t which[RB_BLOOM_MAX_LAYERS] = { 0 }, n, keep;
    bloom_bind_t *b;
    rb_filter_shm_t *f;
    int rc = writer_bind(bf, &b);

    if (rc != RB_OK)
        return rc;
    f = b->slot;
    n = layer_count(f);
    /* Aging keeps its generations; scaling goes back to its first layer. */
    keep = (rbi_ld(&f->flags) & RB_BLOOM_AGING) ? n : 1;
    for (uint64_t l = 0; l < keep; l++)
        which[l] = l;
    rc = swap_fresh((rb_segment_t *)bf->seg, f, which, (size_t)keep, was_reset, &keep);
    if (rc != RB_OK)
        return rc;
    for (uint64_t l = keep; l < n; l++)   /* dropped layers (after the gen bump) */
        rbi_heap_free((rb_segment_t *)bf->seg, rbi_ld(&f->layer[l].array_off),
                     rbi_ld(&f->layer[l].bits) / 8);
    return RB_OK;
}

/* ---- writer --------------------------------------------------------------- */

typedef struct add_arg {
    rb_segment_t *seg;
    const rb_key_t *keys;
    size_t n;
    uint8_t *out;
    int64_t added;
    size_t done;
} add_arg_t;

static void set_layer(uint32_t layout, const layer_view_t *lv, rbi_h128_t h)
{
    uint64_t base = h.h2, x = h.h2 >> 1, word, mask;

    for (uint32_t i = 0; i < lv->k; i++) {
        probe(layout, lv->bits, h, i, &base, &x, &word, &mask);
        /* Monotonic: bits are only ever set, so atomicity of the word is
         * all readers need. */
        atomic_fetch_or_explicit((_Atomic uint64_t *)&lv->arr[word], mask,
                                 memory_order_relaxed);
    }
}

/* Writer's "section": the writer is the only one changing the slot, so
 * its view never goes stale; new layers re-open it. */
static int add_fn(const bloom_section_t *cs, void *arg)
{
    bloom_section_t *s = (bloom_section_t *)cs;
    add_arg_t *a = arg;
    rb_filter_shm_t *f = s->b->slot;

    for (; a->done < a->n; a->done++) {
        const rb_key_t *k = &a->keys[a->done];
        rbi_h128_t h = key_hash(s->b, k->ptr, k->len);
        uint64_t last = s->nlayers - 1;
        int fresh = !section_test(s, h);

        if (rbi_ld(&f->flags) & RB_BLOOM_AGING) {
            /* A key seen only in an older generation (added there, or a
             * false positive of it) is written into the current one too,
             * else it would vanish when that generation is cleared while
             * the caller was told "seen": the window runs from the last
             * add.  It is still not new. */
            uint64_t cur = rbi_ld(&f->current) % s->nlayers;
            if (!test_layer(s->b->layout, &s->layer[cur], layer_hash(h, cur))) {
                if (rbi_ld(&f->layer[cur].items) >= rbi_ld(&f->layer[cur].capacity)) {
                    int rc = rotate(a->seg, s->b, f);
                    if (rc == RB_OK)
                        rc = section_begin(s->b, s);   /* the swapped array */
                    if (rc != RB_OK)
                        return rc;
                    cur = rbi_ld(&f->current) % s->nlayers;
                }
                set_layer(s->b->layout, &s->layer[cur], layer_hash(h, cur));
                rbi_st(&f->layer[cur].items, rbi_ld(&f->layer[cur].items) + 1);
            }
            if (fresh) {
                rbi_st(&f->items, rbi_ld(&f->items) + 1);
                a->added++;
            }
        } else if (fresh) {
            if (rbi_ld(&f->layer[last].items) >= rbi_ld(&f->layer[last].capacity) &&
                !(rbi_ld(&f->flags) & RB_BLOOM_OVERFILL)) {
                uint64_t cap = rbi_ld(&f->layer[last].capacity);
                uint64_t exp = rbi_ld(&f->expansion);
                int rc;
                if (rbi_ld(&f->flags) & RB_BLOOM_NONSCALING)
                    return RB_EFULL;
                if (last + 1 >= RB_BLOOM_MAX_LAYERS)
                    return RB_ELAYERS;
                if (cap > UINT64_MAX / (exp ? exp : 1))
                    return RB_ERANGE;   /* past 2^64 keys: far over RB_BLOOM_MAX_BITS */
                rc = layer_create(a->seg, f, last + 1, cap * exp,
                                  load_double(&f->layer[last].error_bits) * TIGHTENING,
                                  (rb_bloom_layout_t)s->b->layout);
                if (rc != RB_OK)
                    return rc;   /* RB_ERANGE, RB_EPRECISION, RB_ENOSPC */
                if ((rc = section_begin(s->b, s)) != RB_OK)
                    return rc;
                last++;
            }
            set_layer(s->b->layout, &s->layer[last], layer_hash(h, last));
            rbi_st(&f->layer[last].items, rbi_ld(&f->layer[last].items) + 1);
            rbi_st(&f->items, rbi_ld(&f->items) + 1);
            a->added++;
        }
        if (a->out != NULL)
            a->out[a->done] = (uint8_t)fresh;
    }
    return RB_OK;
}

/* Marks the keys an error left unprocessed. */
static void mark_unprocessed(const add_arg_t *a)
{
    if (a->out != NULL)
        for (size_t i = a->done; i < a->n; i++)
            a->out[i] = RB_BLOOM_NOT_ADDED;
}

int64_t rb_bloom_add_many(rb_bloom_t *bf, const rb_key_t *keys, size_t n, uint8_t *out_new)
{
    add_arg_t a = { NULL, keys, n, out_new, 0, 0 };
    int rc;

    if (bf == NULL || (keys == NULL && n != 0))
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].ptr == NULL && keys[i].len != 0)
            return RB_EINVAL;
    if (!bf->seg->writable)
        return RB_EROFS;
    a.seg = (rb_segment_t *)bf->seg;
    rc = bloom_read(bf, add_fn, &a);
    if (rc != RB_OK)
        mark_unprocessed(&a);
    return rc == RB_OK ? a.added : rc;
}

int rb_bloom_add(rb_bloom_t *bf, const void *key, size_t len)
{
    rb_key_t k = { key, len };
    int64_t rc;

    if (key == NULL && len != 0)
        return RB_EINVAL;
    rc = rb_bloom_add_many(bf, &k, 1, NULL);
    return (int)rc;
}

/* ---- figures -------------------------------------------------------------- */

typedef struct stat_arg {
    int scan;        /* count the set bits (O(m)) or predict (O(layers)) */
    uint64_t ones, bits;
    double miss;     /* prod over layers of (1 - layer estimate) */
    double predicted_fill_bits;
} stat_arg_t;

static int stat_fn(const bloom_section_t *s, void *arg)
{
    stat_arg_t *a = arg;
    const rb_filter_shm_t *f = s->b->slot;

    a->ones = a->bits = 0;
    a->miss = 1.0;
    a->predicted_fill_bits = 0.0;
    for (uint32_t l = 0; l < s->nlayers; l++) {
        const layer_view_t *lv = &s->layer[l];
        uint64_t nblocks = lv->bits / BLOCK_BITS, lones = 0;
        double est = 0.0;
        if (!a->scan) {
            /* Expected fill of a layer holding n keys: 1 - e^(-kn/m). */
            double n = (double)rbi_ld(&f->layer[l].items);
            double fill = 1.0 - exp(-(double)lv->k * n / (double)lv->bits);
            a->predicted_fill_bits += fill * (double)lv->bits;
            est = pow(fill, lv->k);
        } else {
            for (uint64_t blk = 0; blk < nblocks; blk++) {
                uint64_t pc = 0;
                for (uint32_t w = 0; w < BLOCK_WORDS; w++)
                    pc += (uint64_t)__builtin_popcountll(rbi_ld(&lv->arr[blk * BLOCK_WORDS + w]));
                lones += pc;
                if (s->b->layout == RB_BLOOM_BLOCKED)
                    est += pow((double)pc / BLOCK_BITS, lv->k);
            }
            est = s->b->layout == RB_BLOOM_BLOCKED ? est / (double)nblocks
                                                   : pow((double)lones / (double)lv->bits, lv->k);
        }
        a->ones += lones;
        a->bits += lv->bits;
        a->miss *= 1.0 - est;
    }
    return RB_OK;
}

static int stat_common(const rb_bloom_t *bf, rb_bloom_stat_t *out, int scan)
{
    const rb_filter_shm_t *f;
    bloom_bind_t *b;
    stat_arg_t a = { scan, 0, 0, 1.0, 0.0 };
    int rc;

    if (bf == NULL || out == NULL)
        return RB_EINVAL;
    rc = bloom_read(bf, stat_fn, &a);
    if (rc != RB_OK)
        return rc;
    if ((rc = bind_get(bf, NULL, &b)) != RB_OK)
        return rc;
    f = b->slot;
    memset(out, 0, sizeof(*out));
    memcpy(out->name, bf->name, bf->name_len);
    out->layout = b->layout;
    out->flags = (uint32_t)rbi_ld(&f->flags);
    out->expansion = (uint32_t)rbi_ld(&f->expansion);
    out->layers = (uint32_t)layer_count(f);
    out->current = (uint32_t)rbi_ld(&f->current);
    out->window = (uint32_t)rbi_ld(&f->window);
    out->rotations = rbi_ld(&f->rotations);
    out->k = (uint32_t)rbi_ld(&f->layer[0].k);
    for (uint32_t l = 0; l < out->layers; l++)
        out->capacity += rbi_ld(&f->layer[l].capacity);
    out->bits = a.bits;
    out->bytes = a.bits / 8;
    out->error_rate = load_double(&f->error_bits);
    out->items = rbi_ld(&f->items);
    out->bits_set = a.ones;
    out->fill = a.bits == 0 ? 0.0
                : scan ? (double)a.ones / (double)a.bits : a.predicted_fill_bits / (double)a.bits;
    out->est_fpr = 1.0 - a.miss;
    return RB_OK;
}

int rb_bloom_stat(const rb_bloom_t *bf, rb_bloom_stat_t *out)
{
    return stat_common(bf, out, 1);
}

int rb_bloom_info(const rb_bloom_t *bf, rb_bloom_stat_t *out)
{
    return stat_common(bf, out, 0);
}
