/*
 * cms_write.c - count-min sketches, the writer side: create, increment
 * (with TinyLFU aging), merge and delete.
 *
 * What: the single writer changes a counter by loading its word, changing
 * the counter's bits and storing the word back (one aligned 64-bit store:
 * readers see the word before or after; no RMW, as no other thread stores
 * counter words).  Increments are monotonic, so they need no section.
 * The non-monotonic changes (aging halves every counter, a merge rewrites
 * them, a delete frees them) build the new counters in a fresh array,
 * store its offset, publish the slot's generation and only then free the
 * old array (latch.h, G1 / G2): a reader sees the old counters or the new
 * ones, never a mix.  A merge also rewrites the secret in place, which the
 * generation does not cover: the slot's seal ties it to the array (M1,
 * cms_impl.h).  Every heap store is preceded by rbi_snap_touch (S1).
 * Determinism: counters, count and the aging step depend only on the
 * calls made, so replaying the log's increments repeats every halving
 * (no log record of its own).
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <time.h>

#include "bloom.h"
#include "cms_impl.h"
#include "kind.h"
#include "snap.h"

/* The writer's view of live sketch name: its slot, shape and array. */
typedef struct wview {
    rb_filter_shm_t *f;
    rbi_cms_shape_t s;
    _Atomic uint64_t *arr;
    uint64_t off;
} wview_t;

/* Writer: binds name.  RB_EINVAL, RB_EROFS, RB_ENOENT, RB_EWRONGTYPE,
 * RB_ECORRUPT. */
static int wbind(rb_segment_t *seg, const char *name, size_t len, wview_t *v)
{
    rbi_map_t *m;
    int rc = rbi_writer_find(seg, name, len, rbi_cms_layout, &v->f);

    if (rc != RB_OK)
        return rc;
    m = rbi_seg_map(seg);
    if (!rbi_cms_shape(rbi_ld(&v->f->layout), rbi_ld(RBI_CMS_WIDTH(v->f)),
                       rbi_ld(RBI_CMS_DEPTH(v->f)), &v->s))
        return RB_ECORRUPT;
    v->off = rbi_ld(RBI_CMS_ARRAY(v->f));
    if (v->off % RBI_ALIGN != 0 || !rbi_span_ok(rbi_seg_size(m), v->off, v->s.bytes))
        return RB_ECORRUPT;
    v->arr = rbi_word_at(m, v->off);
    return RB_OK;
}

/* A fresh array of s's bytes, every word the value fn gives for its index
 * (fn NULL: zero).  Nothing stays allocated on error. */
static int array_new(rb_segment_t *seg, const rbi_cms_shape_t *s,
                     uint64_t (*fn)(uint64_t i, void *arg), void *arg, uint64_t *off)
{
    _Atomic uint64_t *arr;
    int rc = rbi_heap_alloc(seg, s->bytes, off);

    if (rc != RB_OK)
        return rc;
    /* The extent may be reused space: every word is stored before anyone
     * can see it. */
    arr = rbi_word_at(rbi_seg_map(seg), *off);
    rbi_snap_touch(seg, arr, s->bytes);   /* S1 (snap.h) */
    for (uint64_t i = 0; i < s->bytes / 8; i++)
        rbi_st(&arr[i], fn != NULL ? fn(i, arg) : 0);
    return RB_OK;
}

/* Replaces v's array with the one at off: stores the offset, publishes
 * the generation (readers of the old array retry), then frees the old. */
/* Writer: stores f's seal of its secret and array offset off (M1), after
 * them and the array's words. */
static void seal_store(rb_filter_shm_t *f, uint64_t off)
{
    unsigned char secret[RBI_SECRET_BYTES];

    rbi_copy_out(secret, f->secret, RBI_SECRET_WORDS);
    atomic_store_explicit(RBI_CMS_SEAL(f), rbi_cms_seal(secret, sizeof(secret), off),
                          memory_order_release);
}

static void array_swap(rb_segment_t *seg, wview_t *v, uint64_t off)
{
    uint64_t old = v->off;

    rbi_st(RBI_CMS_ARRAY(v->f), off);
    if (rbi_ld(&v->f->flags) & RBI_CMS_SEALED)
        seal_store(v->f, off);   /* M1: the new offset with the secret */
    rbi_gen_publish(&v->f->gen);
    rbi_heap_free(seg, old, v->s.bytes);
    v->off = off;
    v->arr = rbi_word_at(rbi_seg_map(seg), off);
}

int rb_cms_create(rb_segment_t *seg, const char *name, size_t len, const rb_cms_params_t *p)
{
    unsigned char secret[RBI_SECRET_BYTES];
    rbi_cms_shape_t s;
    rb_filter_shm_t *f = NULL;
    rbi_map_t *m;
    rb_header_shm_t *h;
    uint64_t off, inc, layout;
    int rc;

    if (seg == NULL || p == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    layout = p->small ? RBI_CMS_LAYOUT4 : RBI_CMS_LAYOUT32;
    if (!rbi_cms_shape(layout, p->width, p->depth, &s))
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    m = rbi_seg_map(seg);
    if ((rc = rbi_dir_claim(seg, name, len, &f)) != RB_OK)
        return rc;
    if ((rc = array_new(seg, &s, NULL, NULL, &off)) != RB_OK)
        return rc;
    if (p->secret != NULL)
        memcpy(secret, p->secret, sizeof(secret));
    else
        arc4random_buf(secret, sizeof(secret));
    h = rbi_hdr(m);
    inc = rbi_ld(&h->next_incarnation);
    rbi_st(&h->next_incarnation, inc + 1);
    /* gen is kept (R1, bloom_write.c): a reader of the slot's previous
     * filter sees it move. */
    rbi_st(&f->incarnation, inc);
    rbi_st(&f->layout, layout);
    rbi_st(&f->flags, RBI_CMS_SEALED);
    rbi_st(RBI_CMS_WIDTH(f), p->width);
    rbi_st(RBI_CMS_DEPTH(f), p->depth);
    rbi_st(RBI_CMS_COUNT(f), 0);
    rbi_st(RBI_CMS_ARRAY(f), off);
    rbi_st(RBI_CMS_SINCE(f), 0);
    rbi_st(RBI_CMS_AGING(f), p->aging);
    rbi_st(RBI_CMS_AGINGS(f), 0);
    rbi_st(&f->name_len, len);
    rbi_st(&f->created, (uint64_t)time(NULL));
    rbi_copy_in(f->name, name, len);
    rbi_copy_in(f->secret, secret, sizeof(secret));
    seal_store(f, off);
    rbi_dir_publish(seg, f);   /* readers that acquire LIVE see every word above */
    return RB_OK;
}

static uint64_t halve_fn(uint64_t i, void *arg)
{
    const wview_t *v = arg;

    return rbi_cms_halve(&v->s, rbi_ld(&v->arr[i]));
}

/* TinyLFU's reset: every counter and the count halved, into a fresh array
 * published whole.  Past max-memory the halving waits for the next
 * increment (the counters stay as they are: still estimates). */
static void age(rb_segment_t *seg, wview_t *v)
{
    uint64_t off;

    if (array_new(seg, &v->s, halve_fn, v, &off) != RB_OK)
        return;
    rbi_st(RBI_CMS_COUNT(v->f), rbi_ld(RBI_CMS_COUNT(v->f)) / 2);
    rbi_st(RBI_CMS_SINCE(v->f), 0);
    rbi_st(RBI_CMS_AGINGS(v->f), rbi_ld(RBI_CMS_AGINGS(v->f)) + 1);
    array_swap(seg, v, off);
}

/* a + b, at most max (a <= max). */
static uint64_t sat_add(uint64_t a, uint64_t b, uint64_t max)
{
    b = b > max ? max : b;
    return a > max - b ? max : a + b;
}

/* Adds incr to key's counters; its estimate after. */
static uint64_t incr_one(rb_segment_t *seg, wview_t *v, const unsigned char *secret,
                         const rb_key_t *key, uint64_t incr)
{
    rbi_h128_t h = rbi_hash_keyed128(secret, RBI_SECRET_BYTES, key->ptr, key->len);
    uint64_t est = UINT64_MAX;

    for (uint32_t r = 0; r < v->s.depth; r++) {
        unsigned sh;
        uint64_t wi = rbi_cms_word(&v->s, r, rbi_cms_col(h, r, v->s.width), &sh);
        uint64_t w = rbi_ld(&v->arr[wi]);
        uint64_t c = sat_add((w >> sh) & v->s.mask, incr, v->s.mask);
        rbi_snap_touch(seg, &v->arr[wi], 8);   /* S1 */
        /* One aligned store: readers see the word before or after. */
        rbi_st(&v->arr[wi], (w & ~(v->s.mask << sh)) | (c << sh));
        if (c < est)
            est = c;
    }
    return est;
}

int rb_cms_incrby(rb_segment_t *seg, const char *name, size_t len, const rb_key_t *keys,
                  const uint64_t *incr, size_t n, uint64_t *est)
{
    unsigned char secret[RBI_SECRET_BYTES];
    wview_t v;
    int rc;

    if ((keys == NULL || incr == NULL) && n != 0)
        return RB_EINVAL;
    if ((rc = wbind(seg, name, len, &v)) != RB_OK)
        return rc;
    rbi_copy_out(secret, v.f->secret, RBI_SECRET_WORDS);
    for (size_t i = 0; i < n; i++) {
        uint64_t e = incr_one(seg, &v, secret, &keys[i], incr[i]);
        uint64_t w = rbi_ld(RBI_CMS_AGING(v.f));
        if (est != NULL)
            est[i] = e;
        rbi_st(RBI_CMS_COUNT(v.f), sat_add(rbi_ld(RBI_CMS_COUNT(v.f)), incr[i], UINT64_MAX));
        rbi_st(RBI_CMS_SINCE(v.f), sat_add(rbi_ld(RBI_CMS_SINCE(v.f)), incr[i], UINT64_MAX));
        if (w != 0 && rbi_ld(RBI_CMS_SINCE(v.f)) >= w)
            age(seg, &v);
    }
    return RB_OK;
}

typedef struct merge_arg {
    const wview_t *src;
    const uint64_t *weights;
    size_t n;
} merge_arg_t;

/* Word i of the merge: counter by counter, the weighted sum, saturated. */
static uint64_t merge_fn(uint64_t i, void *arg)
{
    const merge_arg_t *a = arg;
    const rbi_cms_shape_t *s = &a->src[0].s;
    uint64_t out = 0;

    for (unsigned sh = 0; sh < 64; sh += s->cbits) {
        uint64_t c = 0;
        for (size_t k = 0; k < a->n; k++) {
            uint64_t x = (rbi_ld(&a->src[k].arr[i]) >> sh) & s->mask;
            uint64_t wt = a->weights != NULL ? a->weights[k] : 1;
            c = sat_add(c, wt != 0 && x > s->mask / wt ? s->mask : x * wt, s->mask);
        }
        out |= c << sh;
    }
    return out;
}

int rbi_cms_secret(rb_segment_t *seg, const char *name, size_t len, unsigned char *out)
{
    wview_t v;
    int rc = wbind(seg, name, len, &v);

    if (rc == RB_OK)
        rbi_copy_out(out, v.f->secret, RBI_SECRET_WORDS);
    return rc;
}

/* Whether sketches a and b hash keys alike (one secret). */
static int same_secret(const wview_t *a, const wview_t *b)
{
    for (unsigned i = 0; i < RBI_SECRET_WORDS; i++)
        if (rbi_ld(&a->f->secret[i]) != rbi_ld(&b->f->secret[i]))
            return 0;
    return 1;
}

int rb_cms_merge(rb_segment_t *seg, const char *dest, size_t dlen, const char *const *src,
                 const size_t *slen, size_t n, const uint64_t *weights)
{
    wview_t d, *sv;
    merge_arg_t a;
    uint64_t off, count = 0;
    int rc;

    if (n == 0 || src == NULL || slen == NULL)
        return RB_EINVAL;
    if ((rc = wbind(seg, dest, dlen, &d)) != RB_OK)
        return rc;
    if ((sv = calloc(n, sizeof(*sv))) == NULL)
        return RB_ENOMEM;
    for (size_t k = 0; k < n && rc == RB_OK; k++) {
        uint64_t wt = weights != NULL ? weights[k] : 1, c;
        if ((rc = wbind(seg, src[k], slen[k], &sv[k])) == RB_OK &&
            (rbi_ld(&sv[k].f->layout) != rbi_ld(&d.f->layout) || sv[k].s.width != d.s.width ||
             sv[k].s.depth != d.s.depth))
            rc = RB_EINVAL;
        if (rc == RB_OK && !same_secret(&sv[k], &sv[0]))
            rc = RB_EPERM;
        c = rc == RB_OK ? rbi_ld(RBI_CMS_COUNT(sv[k].f)) : 0;
        count = sat_add(count, wt != 0 && c > UINT64_MAX / wt ? UINT64_MAX : c * wt, UINT64_MAX);
    }
    a.src = sv;
    a.weights = weights;
    a.n = n;
    if (rc == RB_OK && (rc = array_new(seg, &d.s, merge_fn, &a, &off)) == RB_OK) {
        unsigned char secret[RBI_SECRET_BYTES];
        /* The new counters are keyed by the sources' secret: both change
         * before one publish.  The secret is rewritten in place, which
         * the generation section does not cover: a reader whose whole
         * section falls inside these stores would mix them, so the slot
         * is sealed (M1) first, under a publish of its own, if it was
         * not, and array_swap stores the seal of the new pair last. */
        rbi_copy_out(secret, sv[0].f->secret, RBI_SECRET_WORDS);
        if (!(rbi_ld(&d.f->flags) & RBI_CMS_SEALED)) {
            seal_store(d.f, d.off);
            rbi_st(&d.f->flags, rbi_ld(&d.f->flags) | RBI_CMS_SEALED);
            /* A reader that saw no seal began before this publish: if it
             * sees any store below, its re-check sees the publish (G2). */
            rbi_gen_publish(&d.f->gen);
        }
        rbi_copy_in(d.f->secret, secret, sizeof(secret));
        rbi_st(RBI_CMS_COUNT(d.f), count);
        array_swap(seg, &d, off);
    }
    free(sv);
    return rc;
}

int rb_cms_delete(rb_segment_t *seg, const char *name, size_t len)
{
    return rbi_kind_delete(seg, name, len, rbi_cms_layout);
}
