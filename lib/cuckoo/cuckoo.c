/*
 * cuckoo.c - cuckoo filters, the reader side: the handle (open, close,
 * rebinding by name), contains (one key and batched), count, info,
 * rb_cuckoo_fpr_formula, and the kind's entry in the filter-kind table
 * (kind.h) with its takeover repair.
 *
 * What: a handle remembers its filter's slot and incarnation.  Every call
 * reads the slot inside its generation section (latch.h, G1 / G2: the
 * name, shape, layers and secret all belong to one filter, and a filter
 * deleted meanwhile is noticed) and, inside that, the move sequence
 * (Q1); a single contains or count takes the shape, layers and secret
 * from the handle's cache of the last section instead, while the
 * generation and layer count are the ones it was validated at ("the
 * cache" below).  Why a found fingerprint is answered at once and a miss is
 * re-checked (cuckoo_impl.h, C1 / C2): a fingerprint seen in one of the
 * key's buckets was stored there, while a miss may come from a move that
 * took a fingerprint out of the bucket probed second into the bucket
 * probed first; the move's sequence tells the reader to probe again.
 * Workload: ~10^7 probes/s per reader thread; a probe is one keyed hash
 * and two buckets (one or two cache lines) per layer.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuckoo_impl.h"
#include "kind.h"
#include "rcache.h"

typedef rbi_cf_view_t view_t;

/* The cache of one filter (rcache.h: mapping, slot, incarnation, and
 * here its shape and secret), process-local: its view is the layers a
 * section validated, view_nl of them.  V2 (rcache.h): layer l's words are
 * the same in every view of an incarnation (a filter's layers move only
 * when it is deleted), and view_nl is stored (release) after the layers
 * it counts, so a query may probe before it re-checks the view. */
typedef struct cf_cache {
    rbi_rcache_t rc;   /* first: a query's first loads */
    _Atomic uint64_t view_nl;
    rbi_cf_shape_t s;
    struct {
        _Atomic uint64_t arr, nb;
    } layer[RB_BLOOM_MAX_LAYERS];
    unsigned char secret[RBI_SECRET_BYTES];
} cf_cache_t;

struct rb_cuckoo {
    rbi_named_t n;   /* its name and where it was last bound (dir.h) */
    rbi_rcache_ref_t cache;   /* its cache (rcache.h) */
    cf_cache_t first;   /* the first cache, inline: a handle opened for one
                         * call (the daemon's) allocates nothing more */
};

/* Inside f's section: 1 and *v filled if f is live filter `inc` (the
 * incarnation a lookup found), 0 if it is not, RB_ECORRUPT. */
static int view_read(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc, void *view)
{
    view_t *v = view;
    uint64_t nl, size = rbi_seg_size(m);

    /* The section's generation (its begin loaded it before: equal if the
     * section holds, and only then is the view used). */
    v->gen = rbi_ld(&f->gen.word);
    /* Acquire pairs with the release store of LIVE: the words are set. */
    if (atomic_load_explicit(&f->state, memory_order_acquire) != RBI_FILTER_LIVE ||
        rbi_ld(&f->incarnation) != inc)
        return 0;
    if (!rbi_cf_shape(rbi_ld(&f->layout), rbi_ld(RBI_CF_BUCKET(f)), &v->s))
        return RB_ECORRUPT;
    /* Acquire pairs with the release store publishing a new layer. */
    nl = atomic_load_explicit(RBI_CF_NLAYERS(f), memory_order_acquire);
    if (nl < 1 || nl > RB_BLOOM_MAX_LAYERS)
        return RB_ECORRUPT;
    v->nl = (uint32_t)nl;
    for (uint32_t l = 0; l < v->nl; l++) {
        uint64_t off = rbi_ld(&f->layer[l].array_off);
        v->nb[l] = rbi_ld(&f->layer[l].bits);
        if (!rbi_cf_nbuckets_ok(v->nb[l]) || off % RBI_ALIGN != 0 ||
            !rbi_span_ok(size, off, rbi_cf_layer_bytes(&v->s, v->nb[l])))
            return RB_ECORRUPT;
        v->arr[l] = rbi_word_at(m, off);
    }
    v->f = f;
    v->m = m;
    v->inc = inc;
    rbi_copy_out(v->sbuf, f->secret, RBI_SECRET_WORDS);
    v->secret = v->sbuf;
    return 1;
}

/* rbi_dir_bind's check: the filter found is sound. */
static int bind_check(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc, void *arg)
{
    view_t v;

    (void)arg;
    return view_read(m, f, inc, &v);
}

/* A reader's function and its argument, through rbi_named_read. */
typedef struct cf_call {
    rbi_cf_fn fn;
    void *arg;
} cf_call_t;

/* fn inside the move sequence too: a found key's section is re-checked
 * against the generation only, a miss's (fn's 1) against the move
 * sequence as well (C2), the whole section run again if a move ran. */
static int cf_use(const rb_filter_shm_t *f, void *view, void *arg)
{
    const cf_call_t *c = arg;
    uint64_t q = rbi_seq_read_begin(RBI_CF_SEQ(f));
    int rc = c->fn(view, c->arg);

    if (rc == 1)
        rc = rbi_seq_read_retry(RBI_CF_SEQ(f), q) ? RBI_READ_AGAIN : RB_OK;
    return rc;
}

/* The one read loop (cuckoo_impl.h): rbi_named_read with the move check. */
int rbi_cuckoo_read(const rb_cuckoo_t *h, rbi_cf_fn fn, void *arg)
{
    view_t v;
    cf_call_t c = { fn, arg };

    return rbi_named_read(&h->n, view_read, &v, cf_use, &c);
}

int rb_cuckoo_open(const rb_segment_t *seg, const char *name, size_t len, rb_cuckoo_t **out)
{
    rb_cuckoo_t *h = NULL;
    int rc = rbi_named_new(sizeof(rb_cuckoo_t), seg, name, len, rbi_cf_layout, bind_check,
                           (void **)&h);

    if (rc == RB_OK) {
        rbi_rcache_ref_init(&h->cache);
        *out = h;
    }
    return rc;
}

void rb_cuckoo_close(rb_cuckoo_t *h)
{
    if (h == NULL)
        return;
    rbi_rcache_ref_free(&h->cache, &h->first.rc);
    free(h);
}

/* ---- the cache ------------------------------------------------------------
 *
 * A single contains or count is answered from the handle's cache
 * (rcache.h) without reading the slot's shape, layers and secret again:
 * the cache holds them as a section validated them (view_read's checks:
 * shape, nlayers, every layer's bounds).  A cuckoo filter's layers move
 * only when it is deleted (rbi_dir_free publishes gen: R1) and grow by a
 * release store of nlayers without a bump, so while gen is the view's and
 * nlayers is view_nl the cached layers are what a section would read
 * (G1).  A call begins as rcache.h says (gen, the view's sequence and
 * generation, the slot's state and incarnation), checks nlayers (acquire:
 * a grown filter takes the slow path, which caches the new layer), probes
 * inside the move sequence as cf_use does (C2: a miss or a count
 * re-checked) and ends as rcache.h says (V1, G2); any failed check
 * answers through the slow path, the section read of every call before
 * the cache, which then records what it validated. */

static int cache_same(const rbi_rcache_t *rc, const void *view)
{
    const cf_cache_t *c = (const cf_cache_t *)rc;
    const view_t *v = view;

    return c->s.fbits == v->s.fbits && c->s.bsize == v->s.bsize &&
           memcmp(c->secret, v->secret, sizeof(c->secret)) == 0;
}

static int cache_fresh(const rbi_rcache_t *rc, const void *view)
{
    return rbi_ld(&((const cf_cache_t *)rc)->view_nl) == ((const view_t *)view)->nl;
}

static void cache_init(rbi_rcache_t *rc, const void *view)
{
    cf_cache_t *c = (cf_cache_t *)rc;
    const view_t *v = view;

    c->s = v->s;
    memcpy(c->secret, v->secret, sizeof(c->secret));
}

/* The layers, then (V2) their count. */
static void cache_store(rbi_rcache_t *rc, const void *view)
{
    cf_cache_t *c = (cf_cache_t *)rc;
    const view_t *v = view;

    for (uint32_t l = 0; l < v->nl; l++) {
        rbi_st(&c->layer[l].arr, (uint64_t)(uintptr_t)v->arr[l]);
        rbi_st(&c->layer[l].nb, v->nb[l]);
    }
    atomic_store_explicit(&c->view_nl, v->nl, memory_order_release);
}

static const rbi_rcache_kind_t cache_kind = {
    sizeof(cf_cache_t), cache_same, cache_fresh, cache_init, cache_store
};

typedef struct probe_arg {
    const void *key;
    size_t klen;
    int all;          /* count every copy */
    uint64_t n;       /* copies found (all), or 1 if found */
    view_t *last;     /* the view of the last run, for the cache */
} probe_arg_t;

/* Copies of k's fingerprint in its two buckets of a layer of nb buckets
 * at arr (all == 0: stops at the first); mix is rbi_fmix64(k.fp). */
static inline __attribute__((always_inline)) uint64_t probe_layer(const rbi_cf_shape_t *s, const _Atomic uint64_t *arr,
                                   uint64_t nb, rbi_cf_key_t k, uint64_t mix, int all)
{
    uint64_t i1 = rbi_cf_home(k.h1, nb), i2 = rbi_cf_alt_mix(i1, mix, nb);
    uint64_t n = rbi_cf_bucket_has(s, arr, i1, k.fp, all);

    if (n != 0 && !all)
        return n;
    /* A bucket that is its own alternate is counted once. */
    if (i2 != i1)
        n += rbi_cf_bucket_has(s, arr, i2, k.fp, all);
    return n;
}

/* Copies of k's fingerprint in its buckets of every layer of v, newest
 * first (all == 0: stops at the first). */
static uint64_t probe_key(const view_t *v, rbi_cf_key_t k, int all)
{
    uint64_t n = 0, mix = rbi_fmix64(k.fp);

    for (uint32_t l = v->nl; l-- > 0 && (n == 0 || all);)
        n += probe_layer(&v->s, v->arr[l], v->nb[l], k, mix, all);
    return n;
}

static int probe_one(const view_t *v, void *arg)
{
    probe_arg_t *a = arg;

    *a->last = *v;
    a->last->secret = a->last->sbuf;
    a->n = probe_key(v, rbi_cf_hash(v->secret, &v->s, a->key, a->klen), a->all);
    /* Found: stored there (C1), answered at once; a miss or a count is
     * re-checked against the move sequence (C2). */
    return a->n != 0 && !a->all ? RB_OK : 1;
}

/* The cached probe (see "the cache" above): the copies of key's
 * fingerprint (all), or whether one is there; -1 to take the slow path. */
static inline __attribute__((always_inline)) int64_t probe_fast(const rb_cuckoo_t *h, const void *key, size_t klen, int all)
{
    const rbi_rcache_t *rc = atomic_load_explicit(&h->cache.cur, memory_order_acquire);
    const cf_cache_t *c = (const cf_cache_t *)rc;
    const rb_filter_shm_t *f;
    rbi_cf_key_t k;
    uint64_t g, s0, q, n = 0, mix, nl;

    if (!rbi_rcache_begin(rc, rbi_reader_map(h->n.seg), &g, &s0))
        return -1;
    f = rc->f;
    /* Acquire: the layers counted are stored (V2). */
    nl = atomic_load_explicit(&c->view_nl, memory_order_acquire);
    /* Acquire pairs with the release store publishing a new layer. */
    if (nl - 1 >= RB_BLOOM_MAX_LAYERS ||
        atomic_load_explicit(RBI_CF_NLAYERS(f), memory_order_acquire) != nl)
        return -1;
    q = rbi_seq_read_begin(RBI_CF_SEQ(f));
    k = rbi_cf_hash(c->secret, &c->s, key, klen);
    mix = rbi_fmix64(k.fp);
    for (uint64_t l = nl; l-- > 0 && (n == 0 || all);)
        n += probe_layer(&c->s, (const _Atomic uint64_t *)(uintptr_t)rbi_ld(&c->layer[l].arr),
                         rbi_ld(&c->layer[l].nb), k, mix, all);
    /* A miss or a count is re-checked against the move sequence (C2). */
    if ((n == 0 || all) && rbi_seq_read_retry(RBI_CF_SEQ(f), q))
        return -1;
    return rbi_rcache_end(rc, g, s0) ? (int64_t)n : -1;   /* V1, G2 */
}

/* The slow path: a section, which then fills the cache.  Out of line, so
 * that the fast path's frame stays small. */
static __attribute__((noinline)) int probe_slow(const rb_cuckoo_t *ch, const void *key,
                                                size_t klen, int all, uint64_t *n)
{
    rb_cuckoo_t *h = (rb_cuckoo_t *)ch;
    view_t last;
    probe_arg_t a = { key, klen, all, 0, &last };
    int rc;

    if ((rc = rbi_cuckoo_read(h, probe_one, &a)) == RB_OK) {
        rbi_rcache_put(&h->cache, &h->first.rc, &cache_kind, last.m, last.f, last.inc,
                       last.gen, &last);
        *n = a.n;
    }
    return rc;
}

/* contains (all 0) or count (all 1): the cache, else a section. */
static inline int probe(const rb_cuckoo_t *h, const void *key, size_t klen, int all,
                        uint64_t *n)
{
    int64_t r = probe_fast(h, key, klen, all);

    if (r < 0)
        return probe_slow(h, key, klen, all, n);
    *n = (uint64_t)r;
    return RB_OK;
}

/* flatten: the fast path, the hash included, in one frame (a call to
 * the hash and one to the probe were a fifth of a cached call's
 * instructions); the slow path stays a call (noinline). */
__attribute__((flatten)) int rb_cuckoo_contains(const rb_cuckoo_t *h, const void *key,
                                                size_t klen)
{
    uint64_t n = 0;
    int rc;

    if (h == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    rc = probe(h, key, klen, 0, &n);
    return rc == RB_OK ? n != 0 : rc;
}

int rb_cuckoo_count(const rb_cuckoo_t *h, const void *key, size_t klen, uint64_t *count)
{
    uint64_t n = 0;
    int rc;

    if (h == NULL || count == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    if ((rc = probe(h, key, klen, 1, &n)) == RB_OK)
        *count = n;
    return rc;
}

#define BATCH 16u

typedef struct many_arg {
    const rb_key_t *keys;
    uint8_t *out;
    uint32_t n;         /* keys in this batch, at most BATCH */
} many_arg_t;

/* One batch: hashes the keys, prefetches both buckets in each layer, then
 * probes.  Every run answers every key afresh (a run whose section fails
 * its re-check is discarded whole); a run with a miss is re-checked
 * against the move sequence, one where all were found against gen only. */
static int probe_many(const view_t *v, void *arg)
{
    many_arg_t *a = arg;
    rbi_cf_key_t k[BATCH];
    int miss = 0;

    for (uint32_t i = 0; i < a->n; i++) {
        k[i] = rbi_cf_hash(v->secret, &v->s, a->keys[i].ptr, a->keys[i].len);
        for (uint32_t l = 0; l < v->nl; l++) {
            uint64_t i1 = rbi_cf_home(k[i].h1, v->nb[l]);
            rbi_cf_prefetch(&v->s, v->arr[l], i1);
            rbi_cf_prefetch(&v->s, v->arr[l], rbi_cf_alt(i1, k[i].fp, v->nb[l]));
        }
    }
    for (uint32_t i = 0; i < a->n; i++) {
        a->out[i] = probe_key(v, k[i], 0) != 0;
        miss |= !a->out[i];
    }
    return miss ? 1 : RB_OK;
}

int64_t rb_cuckoo_contains_many(const rb_cuckoo_t *h, const rb_key_t *keys, size_t n,
                                uint8_t *out)
{
    int64_t found = 0;

    if (h == NULL || ((keys == NULL || out == NULL) && n != 0))
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].ptr == NULL && keys[i].len != 0)
            return RB_EINVAL;
    for (size_t base = 0; base < n; base += BATCH) {
        many_arg_t a = { keys + base, out + base, (uint32_t)(n - base < BATCH ? n - base : BATCH) };
        int rc;
        if ((rc = rbi_cuckoo_read(h, probe_many, &a)) != RB_OK)
            return rc;
        for (uint32_t i = 0; i < a.n; i++)
            found += a.out[i];
    }
    return found;
}

static int info_fn(const view_t *v, void *arg)
{
    rb_cuckoo_info_t *o = arg;
    const rb_filter_shm_t *f = v->f;

    memset(o, 0, sizeof(*o));
    for (uint32_t l = 0; l < v->nl; l++) {
        o->bytes += rbi_cf_layer_bytes(&v->s, v->nb[l]);
        o->buckets += v->nb[l];
    }
    o->layers = v->nl;
    o->items = rbi_ld(RBI_CF_ITEMS(f));
    o->deletes = rbi_ld(RBI_CF_DELETES(f));
    o->moves = rbi_ld(RBI_CF_MOVES(f));
    o->capacity = rbi_ld(RBI_CF_CAP(f));
    o->bucket_size = v->s.bsize;
    o->max_iterations = (uint32_t)rbi_ld(RBI_CF_ITERS(f));
    o->expansion = (uint32_t)rbi_ld(RBI_CF_EXPAND(f));
    o->fp_bits = v->s.fbits;
    return RB_OK;
}

int rb_cuckoo_info(const rb_cuckoo_t *h, rb_cuckoo_info_t *out)
{
    rb_cuckoo_info_t o;
    int rc;

    if (h == NULL || out == NULL)
        return RB_EINVAL;
    if ((rc = rbi_cuckoo_read(h, info_fn, &o)) == RB_OK)
        *out = o;
    return rc;
}

double rb_cuckoo_fpr_formula(uint32_t fp_bits, uint32_t bucket_size, double load)
{
    if ((fp_bits != 8 && fp_bits != 12 && fp_bits != 16) || bucket_size < 1 ||
        bucket_size > RB_CUCKOO_MAX_BUCKET || !(load > 0.0 && load <= 1.0))
        return NAN;
    return 1.0 - pow(1.0 - 1.0 / (double)((1u << fp_bits) - 1), 2.0 * bucket_size * load);
}

/* ---- the kind (kind.h) ---------------------------------------------------- */

static int kind_extents(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n)
{
    rbi_cf_shape_t s;
    uint64_t nl = rbi_ld(RBI_CF_NLAYERS(f));

    if (!rbi_cf_shape(rbi_ld(&f->layout), rbi_ld(RBI_CF_BUCKET(f)), &s) || nl < 1 ||
        nl > RB_BLOOM_MAX_LAYERS)
        return RB_ECORRUPT;
    for (uint64_t l = 0; l < nl; l++) {
        uint64_t nb = rbi_ld(&f->layer[l].bits), off = rbi_ld(&f->layer[l].array_off);
        if (!rbi_cf_nbuckets_ok(nb) || off % RBI_ALIGN != 0 ||
            !rbi_span_ok(size, off, rbi_cf_layer_bytes(&s, nb)))
            return RB_ECORRUPT;
        out[l].off = off;
        out[l].len = rbi_cf_layer_bytes(&s, nb);
    }
    *n = (size_t)nl;
    return RB_OK;
}

static uint64_t kind_heap_bytes(const rb_filter_shm_t *f)
{
    rbi_cf_shape_t s;
    uint64_t nl = rbi_ld(RBI_CF_NLAYERS(f)), sum = 0;

    if (!rbi_cf_shape(rbi_ld(&f->layout), rbi_ld(RBI_CF_BUCKET(f)), &s) ||
        nl > RB_BLOOM_MAX_LAYERS)
        return 0;
    for (uint64_t l = 0; l < nl; l++)
        sum += rbi_round_up(rbi_cf_layer_bytes(&s, rbi_ld(&f->layer[l].bits)), RBI_ALIGN);
    return sum;
}

/* C3 (cuckoo_impl.h): a writer that died inside a move left the sequence
 * odd; every fingerprint is still in one of its buckets (C1), so ending
 * the section is all the repair there is (the moved one may be stored
 * twice: one extra false positive at worst). */
static int kind_repair(rb_filter_shm_t *f)
{
    if (rbi_ld(RBI_CF_SEQ(f)) & 1)
        rbi_seq_write_end(RBI_CF_SEQ(f));
    return RB_OK;
}

static int kind_summary(const rb_segment_t *seg, const char *name, size_t len,
                        rb_filter_summary_t *out)
{
    rb_cuckoo_info_t ci;
    rb_cuckoo_t *h;
    int rc = rb_cuckoo_open(seg, name, len, &h);

    if (rc != RB_OK)
        return rc;
    rc = rb_cuckoo_info(h, &ci);
    rb_cuckoo_close(h);
    if (rc != RB_OK)
        return rc;
    out->form = "cuckoo";
    out->items = ci.items;
    out->capacity = ci.capacity;
    out->bytes = ci.bytes;
    out->layers = ci.layers;
    out->error_rate = ci.layers * rb_cuckoo_fpr_formula(ci.fp_bits, ci.bucket_size, 1.0);
    return RB_OK;
}

const rbi_kind_t rbi_kind_cuckoo = {
    .desc = { "cuckoo", "MBbloomCF" },   /* RedisBloom's type name */
    .layout_first = RBI_LAYOUT_CF8, .layout_last = RBI_LAYOUT_CF16,
    .extents = kind_extents, .heap_bytes = kind_heap_bytes, .repair = kind_repair,
    .summary = kind_summary,
};
