/*
 * cms.c - count-min sketches, the reader side: the handle (open, close,
 * rebinding by name), the query, the figures, TinyLFU's admission test
 * (by handle and by name), RedisBloom's sizing, and the sketch kind's
 * entry in the filter-kind table (kind.h).
 *
 * What: a handle remembers its sketch's slot and incarnation; every call
 * reads that slot inside its generation section (latch.h) and queries it
 * inside that same section (a handle's query: from its cache of the last
 * section while the generation is the one it was validated at, "the
 * cache" below), so the secret, shape and array offset used
 * all belong to one sketch at one generation, and a sketch deleted (or
 * made again) meanwhile is noticed by its incarnation and the handle
 * rebound by name (rbi_dir_bind, one directory lookup).  The by-name calls bind a handle
 * on the stack, so they scan the directory once a call.
 * Why it is safe without a lock: a counter changes only by the writer's
 * aligned store of its whole word (old or new word seen); an array is only
 * replaced (aging, merge) or freed (delete) after a generation publish,
 * so a reader that read from it sees the generation move and retries
 * (G1 / G2), and never mixes a halved array with the one before.
 */
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "cms_impl.h"
#include "kind.h"
#include "rcache.h"

/* A sketch as one section read it, or as a handle's cache holds it
 * (secret then points into the cache; m, inc and gen: which sketch in
 * which mapping at which generation the section validated). */
typedef struct cms_view {
    const _Atomic uint64_t *arr;
    rbi_cms_shape_t s;
    int small;
    const rb_filter_shm_t *f;   /* its slot: the figures info reads in the section */
    const unsigned char *secret;            /* sbuf, or the cache's copy */
    const rbi_map_t *m;
    uint64_t inc, gen;
    unsigned char sbuf[RBI_SECRET_BYTES];   /* the section's copy */
} cms_view_t;

/* The cache of one sketch (rcache.h: mapping, slot, incarnation, and here
 * its shape and secret), process-local: its view is the counter array a
 * section validated.  A view is only stored in a cache whose secret and
 * shape are those its section read: a merge that gives the sketch its
 * sources' secret (under a generation publish) gets a new cache; aging
 * and merges of one secret move the array only (the view is rewritten in
 * place).  V2 (rcache.h): every array a cache ever held is one of its
 * sketch's, of its shape, in bounds of its mapping, so a query may read
 * counters before it re-checks the view. */
typedef struct cms_cache {
    rbi_rcache_t rc;   /* first: a query's first loads */
    _Atomic uint64_t view_arr;
    rbi_cms_shape_t s;
    int small;
    unsigned char secret[RBI_SECRET_BYTES];
} cms_cache_t;

struct rb_cms {
    rbi_named_t n;   /* its name and where it was last bound (dir.h) */
    rbi_rcache_ref_t cache;   /* its cache (rcache.h) */
    cms_cache_t first;   /* the first cache, inline: a handle opened for
                          * one call allocates nothing more */
};

typedef void (*cms_fn)(const cms_view_t *v, void *arg);

/* Inside f's section: 1 and *v filled if f is live sketch `inc`, 0 if it
 * is not (another filter, or none), RB_ECORRUPT (its words fail
 * validation). */
static int view_read(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc, void *view)
{
    cms_view_t *v = view;
    uint64_t layout, off;

    /* The section's generation (its begin loaded it before: equal if the
     * section holds, and only then is the view used). */
    v->gen = rbi_ld(&f->gen.word);
    /* Acquire pairs with the release store of LIVE: the words are set. */
    if (atomic_load_explicit(&f->state, memory_order_acquire) != RBI_FILTER_LIVE)
        return 0;
    layout = rbi_ld(&f->layout);
    if (rbi_ld(&f->incarnation) != inc || !rbi_cms_layout(layout))
        return 0;
    if (!rbi_cms_shape(layout, rbi_ld(RBI_CMS_WIDTH(f)), rbi_ld(RBI_CMS_DEPTH(f)), &v->s))
        return RB_ECORRUPT;
    if (rbi_ld(&f->flags) & RBI_CMS_SEALED) {
        /* M1: the secret and the offset that give the seal loaded first
         * (a merge may be rewriting them in place; bounded, as a section). */
        for (uint32_t t = 0;; t++) {
            uint64_t seal = atomic_load_explicit(RBI_CMS_SEAL(f), memory_order_acquire);
            off = rbi_ld(RBI_CMS_ARRAY(f));
            rbi_copy_out(v->sbuf, f->secret, RBI_SECRET_WORDS);
            if (rbi_cms_seal(v->sbuf, sizeof(v->sbuf), off) == seal)
                break;
            if (t == RBI_READ_RETRIES)
                return RB_EBUSY;
            rbi_read_pause(t);
        }
    } else {
        off = rbi_ld(RBI_CMS_ARRAY(f));
        rbi_copy_out(v->sbuf, f->secret, RBI_SECRET_WORDS);
    }
    if (off % RBI_ALIGN != 0 || !rbi_span_ok(rbi_seg_size(m), off, v->s.bytes))
        return RB_ECORRUPT;
    v->arr = rbi_word_at(m, off);
    v->small = layout == RBI_CMS_LAYOUT4;
    v->f = f;
    v->m = m;
    v->inc = inc;
    v->secret = v->sbuf;
    return 1;
}

/* rbi_dir_bind's check: the sketch found is sound. */
static int bind_check(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc, void *arg)
{
    cms_view_t v;

    (void)arg;
    return view_read(m, f, inc, &v);
}

/* A kind's function and its argument, through rbi_named_read. */
typedef struct cms_call {
    cms_fn fn;
    void *arg;
    cms_view_t *last;   /* NULL, or the view of the last run (for the cache) */
} cms_call_t;

static int cms_use(const rb_filter_shm_t *f, void *view, void *arg)
{
    const cms_call_t *c = arg;

    (void)f;
    if (c->last != NULL) {
        *c->last = *(const cms_view_t *)view;
        c->last->secret = c->last->sbuf;
    }
    c->fn(view, c->arg);
    return RB_OK;
}

/* Runs fn on h's sketch inside its slot's section (rbi_named_read: run
 * again whole while the generation moves, h rebound by name once if its
 * slot no longer holds its sketch), last (if not NULL) the view of the
 * run that held.  RB_OK, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY;
 * fn's results are those of its last run. */
static int cms_sread(const rb_cms_t *h, cms_fn fn, void *arg, cms_view_t *last)
{
    cms_view_t v;
    cms_call_t c = { fn, arg, last };

    return rbi_named_read(&h->n, view_read, &v, cms_use, &c);
}

/* ---- the cache ------------------------------------------------------------
 *
 * A query on a handle (rb_cms_estimate, rb_tinylfu_admit_h) is answered
 * from the handle's cache (rcache.h) without reading the slot's shape,
 * array offset and secret again: the cache holds them as a section
 * validated them at the view's generation (view_read's checks: shape,
 * bounds).  The array is only replaced (aging, merge) or freed (delete)
 * after a generation publish, so while gen is the view's the cached array
 * is what a section would read (G1).  A query begins as rcache.h says
 * (gen, the view's sequence and generation, the slot's state and
 * incarnation), reads the counters (V2) and ends as it says (V1, G2): a
 * query that overlaps an aging, a merge or a delete, or meets a cache of
 * another generation, runs through the slow path (the section read of
 * every query before the cache), which then records what it validated
 * (rbi_rcache_put).  Readers never wait: the cache is written under the
 * handle's lock taken with trylock, the view under its own seqlock.  The
 * by-name calls have no handle to keep a cache in and read a section each
 * call. */

static int cache_same(const rbi_rcache_t *rc, const void *view)
{
    const cms_cache_t *c = (const cms_cache_t *)rc;
    const cms_view_t *v = view;

    return c->s.width == v->s.width && c->s.depth == v->s.depth && c->small == v->small &&
           memcmp(c->secret, v->secret, sizeof(c->secret)) == 0;
}

static int cache_fresh(const rbi_rcache_t *rc, const void *view)
{
    return rbi_ld(&((const cms_cache_t *)rc)->view_arr) ==
           (uintptr_t)((const cms_view_t *)view)->arr;
}

static void cache_init(rbi_rcache_t *rc, const void *view)
{
    cms_cache_t *c = (cms_cache_t *)rc;
    const cms_view_t *v = view;

    c->s = v->s;
    c->small = v->small;
    memcpy(c->secret, v->secret, sizeof(c->secret));
}

static void cache_store(rbi_rcache_t *rc, const void *view)
{
    rbi_st(&((cms_cache_t *)rc)->view_arr, (uint64_t)(uintptr_t)((const cms_view_t *)view)->arr);
}

static const rbi_rcache_kind_t cache_kind = {
    sizeof(cms_cache_t), cache_same, cache_fresh, cache_init, cache_store
};

/* h's cache if it holds a view at a generation that stands (rcache.h's
 * begin: *g, *s0), its array in *arr; NULL: the slow path. */
static inline const cms_cache_t *cache_begin(const rb_cms_t *h, uint64_t *g, uint64_t *s0,
                                             const _Atomic uint64_t **arr)
{
    const rbi_rcache_t *rc = atomic_load_explicit(&h->cache.cur, memory_order_acquire);

    if (!rbi_rcache_begin(rc, rbi_reader_map(h->n.seg), g, s0))
        return NULL;
    *arr = (const _Atomic uint64_t *)(uintptr_t)rbi_ld(&((const cms_cache_t *)rc)->view_arr);
    return *arr != NULL ? (const cms_cache_t *)rc : NULL;
}

/* fn on h's sketch from the cache: 1 done, 0 to take the slow path (fn's
 * results then overwritten by its run there).  fn may run on a torn view
 * (V2): its results are then discarded by the end's re-check. */
static inline int cms_fast(const rb_cms_t *h, cms_fn fn, void *arg)
{
    const cms_cache_t *c;
    cms_view_t v;
    uint64_t g, s0;

    if ((c = cache_begin(h, &g, &s0, &v.arr)) == NULL)
        return 0;
    v.s = c->s;
    v.small = c->small;
    v.f = c->rc.f;
    v.secret = c->secret;
    fn(&v, arg);
    return rbi_rcache_end(&c->rc, g, s0);   /* V1, G2 */
}

/* The slow path: a section, which then fills the cache.  Out of line, so
 * that the fast path's frame stays small. */
static __attribute__((noinline)) int cms_hread_slow(const rb_cms_t *ch, cms_fn fn, void *arg)
{
    rb_cms_t *h = (rb_cms_t *)ch;
    cms_view_t last;
    int rc;

    if ((rc = cms_sread(h, fn, arg, &last)) == RB_OK)
        rbi_rcache_put(&h->cache, &h->first.rc, &cache_kind, last.m, last.f, last.inc,
                       last.gen, &last);
    return rc;
}

/* fn on h's sketch: from the cache, else from a section that then fills
 * the cache.  Errors as cms_sread. */
static inline int cms_hread(const rb_cms_t *h, cms_fn fn, void *arg)
{
    return cms_fast(h, fn, arg) ? RB_OK : cms_hread_slow(h, fn, arg);
}

/* The by-name calls: a handle on the stack, bound by one scan, without the
 * bind's check (the read that follows validates the slot in its section). */
static int cms_read(const rb_segment_t *seg, const char *name, size_t len, cms_fn fn,
                    void *arg)
{
    rb_cms_t h;
    int rc = rbi_named_init(&h.n, seg, name, len, rbi_cms_layout, NULL);

    return rc != RB_OK ? rc : cms_sread(&h, fn, arg, NULL);
}

int rb_cms_open(const rb_segment_t *seg, const char *name, size_t len, rb_cms_t **out)
{
    rb_cms_t *h = NULL;
    int rc = rbi_named_new(sizeof(rb_cms_t), seg, name, len, rbi_cms_layout, bind_check,
                           (void **)&h);

    if (rc == RB_OK) {
        rbi_rcache_ref_init(&h->cache);
        *out = h;
    }
    return rc;
}

void rb_cms_close(rb_cms_t *h)
{
    if (h == NULL)
        return;
    rbi_rcache_ref_free(&h->cache, &h->first.rc);
    free(h);
}

typedef struct query_arg {
    const void *key;
    size_t klen;
    uint64_t est;
    uint64_t *rows;     /* NULL, or each row's counter */
    uint64_t *again;    /* NULL, or each row's counter read a second time */
    uint32_t depth;
} query_arg_t;

static void query_fn(const cms_view_t *v, void *arg)
{
    query_arg_t *a = arg;
    rbi_h128_t h = rbi_hash_keyed128(v->secret, RBI_SECRET_BYTES, a->key, a->klen);
    uint64_t est = UINT64_MAX;

    for (uint32_t r = 0; r < v->s.depth; r++) {
        unsigned sh;
        uint64_t w = rbi_cms_word(&v->s, r, rbi_cms_col(h, r, v->s.width), &sh);
        uint64_t c = (rbi_ld(&v->arr[w]) >> sh) & v->s.mask;
        if (a->rows != NULL)
            a->rows[r] = c;
        if (c < est)
            est = c;
    }
    a->est = est;
    a->depth = v->s.depth;
    for (uint32_t r = 0; a->again != NULL && r < v->s.depth; r++) {
        unsigned sh;
        uint64_t w = rbi_cms_word(&v->s, r, rbi_cms_col(h, r, v->s.width), &sh);
        a->again[r] = (rbi_ld(&v->arr[w]) >> sh) & v->s.mask;
    }
}

int rbi_cms_rows(const rb_segment_t *seg, const char *name, size_t len, const void *key,
                 size_t klen, uint64_t *rows, uint64_t *again, uint32_t *depth)
{
    query_arg_t a = { key, klen, 0, rows, again, 0 };
    int rc;

    if (rows == NULL || depth == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    if ((rc = cms_read(seg, name, len, query_fn, &a)) == RB_OK)
        *depth = a.depth;
    return rc;
}

int rb_cms_query(const rb_segment_t *seg, const char *name, size_t len, const void *key,
                 size_t klen, uint64_t *out)
{
    query_arg_t a = { key, klen, 0, NULL, NULL, 0 };
    int rc;

    if (out == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    if ((rc = cms_read(seg, name, len, query_fn, &a)) == RB_OK)
        *out = a.est;
    return rc;
}

/* The minimum of key hash x's counters in arr (shape s), with the
 * layout's constants given (per = 1 << pshift counters of cbits a word,
 * as rbi_cms_shape sets them): inlined with constants, a row costs its
 * mix, a shift and a load, the rows walked by their first word and seed. */
static inline __attribute__((always_inline)) uint64_t
rows_min(const _Atomic uint64_t *arr, const rbi_cms_shape_t *s, rbi_h128_t x, uint32_t pshift,
         uint32_t cbits, uint64_t mask)
{
    rbi_cms_shape_t k = { .per = 1u << pshift, .cbits = cbits, .pshift = pshift };
    uint64_t est = UINT64_MAX, wpr = s->wpr, end = wpr * s->depth, seed = x.h1;
    uint32_t width = s->width;

    for (uint64_t base = 0; base < end; base += wpr, seed += x.h2 | 1u) {
        unsigned sh;
        uint64_t w = base + rbi_cms_word_in_row(&k, rbi_cms_col_of(seed, width), &sh);
        uint64_t v = (rbi_ld(&arr[w]) >> sh) & mask;
        est = v < est ? v : est;
    }
    return est;
}

/* rb_cms_estimate from the cache (cms_fast's checks, the counters read
 * straight from the cache's shape and array): 1 and *out, or 0 to take
 * the slow path. */
static inline __attribute__((always_inline)) int estimate_fast(const rb_cms_t *h,
                                                               const void *key, size_t klen,
                                                               uint64_t *out)
{
    const _Atomic uint64_t *arr;
    const cms_cache_t *c;
    uint64_t g, s0;
    rbi_h128_t x;

    if ((c = cache_begin(h, &g, &s0, &arr)) == NULL)
        return 0;
    x = rbi_hash_keyed128_inl(c->secret, RBI_SECRET_BYTES, key, klen);
    *out = c->small ? rows_min(arr, &c->s, x, 4, 4, 0xF)
                    : rows_min(arr, &c->s, x, 1, 32, 0xFFFFFFFFu);
    return rbi_rcache_end(&c->rc, g, s0);   /* V1, G2 */
}

/* flatten: the fast path, the hash included, in one frame; the slow path
 * stays a call (noinline). */
__attribute__((flatten)) int rb_cms_estimate(const rb_cms_t *h, const void *key, size_t klen,
                                             uint64_t *out)
{
    query_arg_t a = { key, klen, 0, NULL, NULL, 0 };
    int rc;

    if (h == NULL || out == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    if (estimate_fast(h, key, klen, out))
        return RB_OK;
    if ((rc = cms_hread_slow(h, query_fn, &a)) == RB_OK)
        *out = a.est;
    return rc;
}

typedef struct many_arg {
    const rb_key_t *keys;
    size_t n;
    uint64_t *est;
} many_arg_t;

static void many_fn(const cms_view_t *v, void *arg)
{
    const many_arg_t *a = arg;

    for (size_t i = 0; i < a->n; i++) {
        query_arg_t q = { a->keys[i].ptr, a->keys[i].len, 0, NULL, NULL, 0 };
        query_fn(v, &q);
        a->est[i] = q.est;
    }
}

int rbi_cms_query_many(const rb_segment_t *seg, const char *name, size_t len,
                       const rb_key_t *keys, size_t n, uint64_t *est)
{
    many_arg_t a = { keys, n, est };

    if ((keys == NULL || est == NULL) && n != 0)
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].ptr == NULL && keys[i].len != 0)
            return RB_EINVAL;
    return cms_read(seg, name, len, many_fn, &a);
}

static void info_fn(const cms_view_t *v, void *arg)
{
    rb_cms_info_t *o = arg;

    o->width = v->s.width;
    o->depth = v->s.depth;
    o->small = v->small;
    o->count = rbi_ld(RBI_CMS_COUNT(v->f));
    o->aging = rbi_ld(RBI_CMS_AGING(v->f));
    o->since_aging = rbi_ld(RBI_CMS_SINCE(v->f));
    o->agings = rbi_ld(RBI_CMS_AGINGS(v->f));
    o->bytes = v->s.bytes;
}

int rb_cms_info(const rb_segment_t *seg, const char *name, size_t len, rb_cms_info_t *out)
{
    rb_cms_info_t o;
    int rc;

    if (out == NULL)
        return RB_EINVAL;
    memset(&o, 0, sizeof(o));
    if ((rc = cms_read(seg, name, len, info_fn, &o)) == RB_OK)
        *out = o;
    return rc;
}

int rb_cms_dims(double error, double probability, uint32_t *width, uint32_t *depth)
{
    double w, d;

    if (width == NULL || depth == NULL || !(error > 0.0 && error < 1.0) ||
        !(probability > 0.0 && probability < 1.0))
        return RB_EINVAL;
    w = ceil(2.0 / error);
    d = ceil(log(probability) / log(0.5));
    if (w > RB_CMS_MAX_WIDTH || d > RB_CMS_MAX_DEPTH)
        return RB_ERANGE;
    *width = (uint32_t)w;
    *depth = d < 1.0 ? 1u : (uint32_t)d;
    return RB_OK;
}

struct rb_tinylfu {
    rb_cms_t *cms;
    rb_bloom_t *dk;   /* NULL: the pair had no doorkeeper when opened */
};

int rb_tinylfu_open(const rb_segment_t *seg, const char *name, size_t len, rb_tinylfu_t **out)
{
    const size_t sl = sizeof(RB_TINYLFU_DOORKEEPER_SUFFIX) - 1;
    char dk[RB_FILTER_NAME_MAX + 1];
    rb_tinylfu_t *t;
    int rc;

    if (out == NULL)
        return RB_EINVAL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return RB_ENOMEM;
    if ((rc = rb_cms_open(seg, name, len, &t->cms)) == RB_OK && len + sl <= RB_FILTER_NAME_MAX) {
        memcpy(dk, name, len);
        memcpy(dk + len, RB_TINYLFU_DOORKEEPER_SUFFIX, sl);
        if ((rc = rb_bloom_open(seg, dk, len + sl, &t->dk)) == RB_ENOENT)
            rc = RB_OK;
    }
    if (rc != RB_OK) {
        rb_tinylfu_close(t);
        return rc;
    }
    *out = t;
    return RB_OK;
}

void rb_tinylfu_close(rb_tinylfu_t *t)
{
    if (t == NULL)
        return;
    rb_cms_close(t->cms);
    rb_bloom_close(t->dk);
    free(t);
}

typedef struct admit_arg {
    query_arg_t cand, victim;
} admit_arg_t;

/* Both estimates from one section: one reading of the sketch, both keys
 * hashed first and their rows read side by side, so the two keys' counter
 * loads are in flight together (an admit waits for memory about as long
 * as one query does).  flatten: GCC otherwise calls the two hashes out of
 * line (query_fn's one is inlined), and the call costs a fifth of an admit
 * (bench section a). */
__attribute__((flatten)) static void admit_fn(const cms_view_t *v, void *arg)
{
    admit_arg_t *a = arg;
    rbi_h128_t hc = rbi_hash_keyed128(v->secret, RBI_SECRET_BYTES, a->cand.key, a->cand.klen);
    rbi_h128_t hv = rbi_hash_keyed128(v->secret, RBI_SECRET_BYTES, a->victim.key,
                                      a->victim.klen);
    uint64_t ec = UINT64_MAX, ev = UINT64_MAX;

    for (uint32_t r = 0; r < v->s.depth; r++) {
        unsigned sc, sv;
        uint64_t wc = rbi_cms_word(&v->s, r, rbi_cms_col(hc, r, v->s.width), &sc);
        uint64_t wv = rbi_cms_word(&v->s, r, rbi_cms_col(hv, r, v->s.width), &sv);
        uint64_t c = (rbi_ld(&v->arr[wc]) >> sc) & v->s.mask;
        uint64_t d = (rbi_ld(&v->arr[wv]) >> sv) & v->s.mask;
        ec = c < ec ? c : ec;
        ev = d < ev ? d : ev;
    }
    a->cand.est = ec;
    a->victim.est = ev;
}

/* The doorkeeper's bit of key: 1 if it holds key, else 0 (and 0 if the
 * pair has none, or it was deleted since the open); or an error. */
static int dk_bit(const rb_tinylfu_t *t, const void *key, size_t klen)
{
    int rc = t->dk != NULL ? rb_bloom_contains(t->dk, key, klen) : 0;

    return rc == RB_ENOENT ? 0 : rc;
}

int rb_tinylfu_admit_h(const rb_tinylfu_t *t, const void *cand, size_t clen,
                       const void *victim, size_t vlen, int *admit)
{
    admit_arg_t a = { { cand, clen, 0, NULL, NULL, 0 }, { victim, vlen, 0, NULL, NULL, 0 } };
    int rc, cb = 0, vb = 0;

    if (t == NULL || admit == NULL || (cand == NULL && clen != 0) ||
        (victim == NULL && vlen != 0))
        return RB_EINVAL;
    if ((rc = cms_hread(t->cms, admit_fn, &a)) != RB_OK)
        return rc;
    /* ce + cb > ve + vb with bits of 0 or 1: the doorkeeper decides only
     * when ce is ve or ve + 1, and then only the bit that can change the
     * answer is probed first (the answer is the one both bits give). */
    if (a.cand.est == a.victim.est) {
        if ((cb = dk_bit(t, cand, clen)) == 1)
            vb = dk_bit(t, victim, vlen);
    } else if (a.cand.est == a.victim.est + 1) {
        if ((vb = dk_bit(t, victim, vlen)) == 1)
            cb = dk_bit(t, cand, clen);
    }
    if (cb < 0 || vb < 0)
        return cb < 0 ? cb : vb;
    *admit = a.cand.est + (uint64_t)cb > a.victim.est + (uint64_t)vb;
    return RB_OK;
}

int rb_tinylfu_admit(const rb_segment_t *seg, const char *name, size_t len, const void *cand,
                     size_t clen, const void *victim, size_t vlen, int *admit)
{
    rb_tinylfu_t *t;
    int rc;

    if (admit == NULL)
        return RB_EINVAL;
    if ((rc = rb_tinylfu_open(seg, name, len, &t)) != RB_OK)
        return rc;
    rc = rb_tinylfu_admit_h(t, cand, clen, victim, vlen, admit);
    rb_tinylfu_close(t);
    return rc;
}

/* The sketch kind's extents (kind.h): its one counter array. */
static int kind_extents(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n)
{
    rbi_cms_shape_t s;
    uint64_t off = rbi_ld(RBI_CMS_ARRAY(f));

    if (!rbi_cms_shape(rbi_ld(&f->layout), rbi_ld(RBI_CMS_WIDTH(f)), rbi_ld(RBI_CMS_DEPTH(f)),
                       &s) ||
        off % RBI_ALIGN != 0 || !rbi_span_ok(size, off, s.bytes))
        return RB_ECORRUPT;
    out[0].off = off;
    out[0].len = s.bytes;
    *n = 1;
    return RB_OK;
}

static uint64_t kind_heap_bytes(const rb_filter_shm_t *f)
{
    rbi_cms_shape_t s;

    if (!rbi_cms_shape(rbi_ld(&f->layout), rbi_ld(RBI_CMS_WIDTH(f)), rbi_ld(RBI_CMS_DEPTH(f)),
                       &s))
        return 0;
    return rbi_round_up(s.bytes, RBI_ALIGN);
}

static int kind_summary(const rb_segment_t *seg, const char *name, size_t len,
                        rb_filter_summary_t *out)
{
    rb_cms_info_t cm;
    int rc = rb_cms_info(seg, name, len, &cm);

    if (rc != RB_OK)
        return rc;
    out->form = cm.small ? "count-min 4-bit" : "count-min";
    out->items = cm.count;
    out->bytes = cm.bytes;
    out->layers = cm.depth;
    out->error_rate = 2.0 / cm.width;
    return RB_OK;
}

const rbi_kind_t rbi_kind_cms = {
    .desc = { "cms", "CMSk-TYPE" },   /* RedisBloom's type name */
    .layout_first = RBI_CMS_LAYOUT32, .layout_last = RBI_CMS_LAYOUT4,
    .extents = kind_extents, .heap_bytes = kind_heap_bytes,
    .summary = kind_summary,
};
