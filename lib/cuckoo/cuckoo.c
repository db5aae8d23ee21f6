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

typedef rbi_cf_view_t view_t;

/* The cache of one filter (map, slot, incarnation, secret), process-local:
 * its shape and secret, set before the cache is published and never
 * changed (a slot's incarnation keeps both), and its layers as a section
 * validated them at generation view_gen, under the seqlock view_seq (odd
 * while written; written only under the handle's lock).  Replaced caches
 * stay on the older list until the handle is closed (a reader may still
 * use one): one per rebinding, as the Bloom reader's bindings. */
typedef struct cf_cache {
    const rbi_map_t *m;
    const rb_filter_shm_t *f;
    uint64_t inc;
    rbi_cf_shape_t s;
    unsigned char secret[RBI_SECRET_BYTES];
    struct cf_cache *older;
    _Atomic uint64_t view_seq, view_gen, view_nl;
    _Atomic uint64_t view_arr[RB_BLOOM_MAX_LAYERS], view_nb[RB_BLOOM_MAX_LAYERS];
} cf_cache_t;

struct rb_cuckoo {
    rbi_named_t n;   /* its name and where it was last bound (dir.h) */
    _Atomic(cf_cache_t *) cache;   /* NULL until a slow call filled one */
    pthread_mutex_t lock;          /* writers of the cache (trylock) */
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
        pthread_mutex_init(&h->lock, NULL);
        *out = h;
    }
    return rc;
}

void rb_cuckoo_close(rb_cuckoo_t *h)
{
    cf_cache_t *c;

    if (h == NULL)
        return;
    c = atomic_load(&h->cache);
    while (c != NULL) {
        cf_cache_t *older = c->older;
        if (c != &h->first)
            free(c);
        c = older;
    }
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* ---- the cache ------------------------------------------------------------
 *
 * A single contains or count is answered from the handle's cache without
 * reading the slot's shape, layers and secret again: the cache holds them
 * as a section validated them at generation view_gen (view_read's checks:
 * shape, nlayers, every layer's bounds).  A cuckoo filter's layers move
 * only when it is deleted (rbi_dir_free publishes gen: R1) and grow by a
 * release store of nlayers without a bump, so while gen == view_gen and
 * nlayers == view_nl the cached layers are what a section would read
 * (G1).  A call still loads gen (acquire), checks the slot's state and
 * incarnation and nlayers (acquire: a grown filter takes the slow path,
 * which caches the new layer), probes inside the move sequence as cf_use
 * does (C2: a miss or a count re-checked) and re-checks gen (G2); any
 * failed check answers through the slow path, the section read of every
 * call before the cache, which then records what it validated.  Readers
 * never wait: the cache is written under the handle's lock taken with
 * trylock, the view under its own seqlock. */

/* The view of c if it was validated at generation g: v's layers, shape
 * and secret (pointing into c). */
static inline int cache_get(const cf_cache_t *c, uint64_t g, view_t *v)
{
    uint64_t s0 = atomic_load_explicit(&c->view_seq, memory_order_acquire);
    uint64_t vg = rbi_ld(&c->view_gen), nl = rbi_ld(&c->view_nl);

    if (nl < 1 || nl > RB_BLOOM_MAX_LAYERS)
        return 0;
    for (uint64_t l = 0; l < nl; l++) {
        v->arr[l] = (const _Atomic uint64_t *)(uintptr_t)rbi_ld(&c->view_arr[l]);
        v->nb[l] = rbi_ld(&c->view_nb[l]);
    }
    /* The loads above happen before the re-load of the sequence. */
    atomic_thread_fence(memory_order_acquire);
    if ((s0 & 1) || rbi_ld(&c->view_seq) != s0 || vg != g)
        return 0;
    v->nl = (uint32_t)nl;
    v->s = c->s;
    v->f = c->f;
    v->secret = c->secret;
    return 1;
}

static void cache_view_store(cf_cache_t *c, const view_t *v)
{
    uint64_t s0 = rbi_ld(&c->view_seq);

    rbi_st(&c->view_seq, s0 + 1);
    /* The odd sequence is visible before any field changes. */
    atomic_thread_fence(memory_order_release);
    rbi_st(&c->view_gen, v->gen);
    rbi_st(&c->view_nl, v->nl);
    for (uint32_t l = 0; l < v->nl; l++) {
        rbi_st(&c->view_arr[l], (uint64_t)(uintptr_t)v->arr[l]);
        rbi_st(&c->view_nb[l], v->nb[l]);
    }
    /* Release: a reader that sees s0 + 2 sees the fields above. */
    atomic_store_explicit(&c->view_seq, s0 + 2, memory_order_release);
}

/* 1 if cache c is of v's filter with v's secret and shape (both fixed
 * for an incarnation today; checked so that a writer that changed either
 * under a generation publish would get a new cache, never a mix). */
static int cache_is(const cf_cache_t *c, const view_t *v)
{
    return c != NULL && c->m == v->m && c->f == v->f && c->inc == v->inc &&
           c->s.fbits == v->s.fbits && c->s.bsize == v->s.bsize &&
           memcmp(c->secret, v->secret, sizeof(c->secret)) == 0;
}

/* Records view v, validated by a section that held at v->gen, in h's
 * cache: the current cache's view if it is v's filter with v's secret
 * and shape, else a new cache (the old one kept on its older list). */
static void cache_put(const rb_cuckoo_t *ch, const view_t *v)
{
    rb_cuckoo_t *h = (rb_cuckoo_t *)ch;
    cf_cache_t *c = atomic_load_explicit(&h->cache, memory_order_acquire), *nc;

    if (cache_is(c, v) && rbi_ld(&c->view_gen) == v->gen && rbi_ld(&c->view_nl) == v->nl)
        return;
    if (pthread_mutex_trylock(&h->lock) != 0)
        return;   /* another thread records: this call can do without */
    c = atomic_load_explicit(&h->cache, memory_order_relaxed);
    if (cache_is(c, v)) {
        cache_view_store(c, v);
    } else if ((nc = c == NULL ? &h->first : calloc(1, sizeof(*nc))) != NULL) {
        nc->m = v->m;
        nc->f = v->f;
        nc->inc = v->inc;
        nc->s = v->s;
        memcpy(nc->secret, v->secret, sizeof(nc->secret));
        nc->older = c;
        cache_view_store(nc, v);
        /* Release: a reader of the new cache sees it complete. */
        atomic_store_explicit(&h->cache, nc, memory_order_release);
    }
    pthread_mutex_unlock(&h->lock);
}

typedef struct probe_arg {
    const void *key;
    size_t klen;
    int all;          /* count every copy */
    uint64_t n;       /* copies found (all), or 1 if found */
    view_t *last;     /* the view of the last run, for the cache */
} probe_arg_t;

/* Copies of k's fingerprint in its buckets of every layer (all == 0:
 * stops at the first). */
static uint64_t probe_key(const view_t *v, rbi_cf_key_t k, int all)
{
    uint64_t n = 0;

    for (uint32_t l = v->nl; l-- > 0;) {
        uint64_t i1 = rbi_cf_home(k.h1, v->nb[l]), i2 = rbi_cf_alt(i1, k.fp, v->nb[l]);
        n += rbi_cf_bucket_has(&v->s, v->arr[l], i1, k.fp, all);
        if (n != 0 && !all)
            return n;
        /* A bucket that is its own alternate is counted once. */
        if (i2 != i1)
            n += rbi_cf_bucket_has(&v->s, v->arr[l], i2, k.fp, all);
        if (n != 0 && !all)
            return n;
    }
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
static inline int64_t probe_fast(const rb_cuckoo_t *h, const void *key, size_t klen, int all)
{
    const cf_cache_t *c = atomic_load_explicit(&h->cache, memory_order_acquire);
    const rb_filter_shm_t *f;
    view_t v;
    uint64_t g, q, n;

    if (c == NULL || c->m != rbi_reader_map(h->n.seg))
        return -1;
    f = c->f;
    g = rbi_gen_read_begin(&f->gen);   /* G1 */
    if (rbi_ld(&f->state) != RBI_FILTER_LIVE || rbi_ld(&f->incarnation) != c->inc ||
        !cache_get(c, g, &v) ||
        /* Acquire pairs with the release store publishing a new layer. */
        atomic_load_explicit(RBI_CF_NLAYERS(f), memory_order_acquire) != v.nl)
        return -1;
    q = rbi_seq_read_begin(RBI_CF_SEQ(f));
    n = probe_key(&v, rbi_cf_hash(v.secret, &v.s, key, klen), all);
    /* A miss or a count is re-checked against the move sequence (C2). */
    if ((n == 0 || all) && rbi_seq_read_retry(RBI_CF_SEQ(f), q))
        return -1;
    return rbi_gen_read_retry(&f->gen, g) ? -1 : (int64_t)n;   /* G2 */
}

/* The slow path: a section, which then fills the cache.  Out of line, so
 * that the fast path's frame stays small. */
static __attribute__((noinline)) int probe_slow(const rb_cuckoo_t *h, const void *key,
                                                size_t klen, int all, uint64_t *n)
{
    view_t last;
    probe_arg_t a = { key, klen, all, 0, &last };
    int rc;

    if ((rc = rbi_cuckoo_read(h, probe_one, &a)) == RB_OK) {
        cache_put(h, &last);
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

int rb_cuckoo_contains(const rb_cuckoo_t *h, const void *key, size_t klen)
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
