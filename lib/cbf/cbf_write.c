/*
 * cbf_write.c - counting Bloom filters, the writer side: reserve (and the
 * dump loader's create), add, delete of a key, delete of the filter.
 *
 * What: the single writer changes a counter by loading its word, changing
 * the counter's bits and storing the word back: one aligned 64-bit store
 * (K1, cbf_impl.h), preceded by rbi_snap_touch (S1, snap.h).  An add
 * raises each of the key's distinct counters that is below the maximum
 * (one that reaches it is counted as saturated); a delete first checks
 * that none is 0 (else it is refused and changes nothing), then lowers
 * each one below the maximum (K2: a saturated counter is never lowered).
 * Determinism: the counters a key touches depend only on its hash, so
 * replaying the same calls rebuilds the same array.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <time.h>

#include "cbf_impl.h"
#include "kind.h"
#include "snap.h"

typedef rbi_cbf_wview_t wview_t;

int rbi_cbf_wbind(rb_segment_t *seg, const char *name, size_t len, wview_t *v)
{
    rbi_map_t *m;
    int rc = rbi_writer_find(seg, name, len, rbi_cbf_layout, &v->f);

    if (rc != RB_OK)
        return rc;
    m = rbi_seg_map(seg);
    v->off = rbi_ld(RBI_CBF_ARRAY(v->f));
    if (!rbi_cbf_shape(rbi_ld(&v->f->layout), rbi_ld(RBI_CBF_M(v->f)), rbi_ld(RBI_CBF_K(v->f)),
                       &v->s) ||
        v->off % RBI_ALIGN != 0 || !rbi_span_ok(rbi_seg_size(m), v->off, rbi_cbf_bytes(&v->s)))
        return RB_ECORRUPT;
    v->arr = rbi_word_at(m, v->off);
    return RB_OK;
}

/* Fills free slot f as im describes (array at off); the caller publishes it. */
static void slot_fill(rbi_map_t *m, rb_filter_shm_t *f, const char *name, size_t len,
                      const rbi_cbf_image_t *im, uint64_t off)
{
    rb_header_shm_t *h = rbi_hdr(m);
    uint64_t inc = rbi_ld(&h->next_incarnation);

    rbi_st(&h->next_incarnation, inc + 1);
    /* gen is kept (R1, bloom_write.c): a reader of the slot's previous
     * filter sees it move. */
    rbi_st(&f->incarnation, inc);
    rbi_st(&f->layout, rbi_cbf_layout_of(im->p.counter_bits));
    rbi_st(RBI_CBF_K(f), im->k);
    rbi_st(&f->expansion, 0);
    rbi_st(&f->nlayers, 0);
    rbi_st(RBI_CBF_ITEMS(f), im->items);
    rbi_st(RBI_CBF_CAP(f), im->p.capacity);
    rbi_store_double(RBI_CBF_ERROR(f), im->p.error_rate);
    rbi_st(&f->current, 0);
    rbi_st(RBI_CBF_DELETES(f), im->deletes);
    rbi_st(RBI_CBF_SATURATED(f), im->saturated);
    rbi_st(&f->rotated_at, 0);
    rbi_st(&f->name_len, len);
    rbi_st(&f->created, (uint64_t)time(NULL));
    rbi_copy_in(f->name, name, len);
    rbi_copy_in(f->secret, im->secret, sizeof(im->secret));
    rbi_st(RBI_CBF_ARRAY(f), off);
    rbi_st(RBI_CBF_M(f), im->m);
}

int rbi_cbf_create_image(rb_segment_t *seg, const char *name, size_t len,
                         const rbi_cbf_image_t *im)
{
    rbi_cbf_shape_t s;
    rb_filter_shm_t *f = NULL;
    _Atomic uint64_t *arr;
    rbi_map_t *m;
    uint64_t off, bytes;
    int rc;

    if (!seg->writable)
        return RB_EROFS;
    if (!rbi_cbf_shape(rbi_cbf_layout_of(im->p.counter_bits), im->m, im->k, &s))
        return RB_EINVAL;
    m = rbi_seg_map(seg);
    if ((rc = rbi_dir_claim(seg, name, len, &f)) != RB_OK)
        return rc;
    bytes = rbi_cbf_bytes(&s);
    if ((rc = rbi_heap_alloc(seg, bytes, &off)) != RB_OK)
        return rc;
    /* The extent may be reused space: zeroed before anyone can see it. */
    arr = rbi_word_at(m, off);
    rbi_snap_touch(seg, arr, bytes);   /* S1 (snap.h) */
    for (uint64_t i = 0; i < bytes / 8; i++)
        rbi_st(&arr[i], 0);
    slot_fill(m, f, name, len, im, off);
    rbi_dir_publish(seg, f);   /* readers that acquire LIVE see every word stored */
    return RB_OK;
}

int rb_cbf_reserve(rb_segment_t *seg, const char *name, size_t len, const rb_cbf_params_t *p)
{
    rbi_cbf_image_t im;

    if (seg == NULL || p == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    memset(&im, 0, sizeof(im));
    if (rb_cbf_size(p->capacity, p->error_rate, p->counter_bits, &im.m, &im.k) != RB_OK)
        return RB_EINVAL;
    im.p = *p;
    im.p.secret = NULL;
    if (p->secret != NULL)
        memcpy(im.secret, p->secret, sizeof(im.secret));
    else
        arc4random_buf(im.secret, sizeof(im.secret));
    return rbi_cbf_create_image(seg, name, len, &im);
}

/* Counter c becomes x (one store of its word: K1). */
static void counter_set(rb_segment_t *seg, const wview_t *v, uint64_t c, uint64_t x)
{
    _Atomic uint64_t *w = &v->arr[c / v->s.per];
    unsigned sh = (unsigned)(c % v->s.per * v->s.cb);

    rbi_snap_touch(seg, w, 8);   /* S1 */
    rbi_st(w, (rbi_ld(w) & ~(v->s.max << sh)) | x << sh);
}

/* Binds name and computes key's distinct counters into c: their number,
 * or an error. */
static int key_counters(rb_segment_t *seg, const char *name, size_t len, const void *key,
                        size_t klen, wview_t *v, uint64_t *c)
{
    unsigned char secret[RBI_SECRET_BYTES];
    int rc;

    if (key == NULL && klen != 0)
        return RB_EINVAL;
    if ((rc = rbi_cbf_wbind(seg, name, len, v)) != RB_OK)
        return rc;
    rbi_copy_out(secret, v->f->secret, RBI_SECRET_WORDS);
    return (int)rbi_cbf_probes(&v->s, rbi_cbf_hash(secret, key, klen), c);
}

int rb_cbf_add(rb_segment_t *seg, const char *name, size_t len, const void *key, size_t klen)
{
    uint64_t c[RB_CBF_MAX_K], sat = 0;
    wview_t v;
    int n = key_counters(seg, name, len, key, klen, &v, c);

    if (n < 0)
        return n;
    if (rbi_ld(RBI_CBF_ITEMS(v.f)) >= rbi_ld(RBI_CBF_CAP(v.f)))
        return RB_EFULL;
    for (int i = 0; i < n; i++) {
        uint64_t x = rbi_cbf_get(&v.s, v.arr, c[i]);
        if (x == v.s.max)
            continue;   /* saturated: stays */
        counter_set(seg, &v, c[i], x + 1);
        sat += x + 1 == v.s.max;
    }
    rbi_st(RBI_CBF_SATURATED(v.f), rbi_ld(RBI_CBF_SATURATED(v.f)) + sat);
    rbi_st(RBI_CBF_ITEMS(v.f), rbi_ld(RBI_CBF_ITEMS(v.f)) + 1);
    return 1;
}

int rb_cbf_del(rb_segment_t *seg, const char *name, size_t len, const void *key, size_t klen)
{
    uint64_t c[RB_CBF_MAX_K], items;
    wview_t v;
    int n = key_counters(seg, name, len, key, klen, &v, c);

    if (n < 0)
        return n;
    for (int i = 0; i < n; i++)
        if (rbi_cbf_get(&v.s, v.arr, c[i]) == 0)
            return 0;   /* certainly not in the filter: refused, nothing changed */
    for (int i = 0; i < n; i++) {
        uint64_t x = rbi_cbf_get(&v.s, v.arr, c[i]);
        if (x != v.s.max)   /* K2: a saturated counter is never lowered */
            counter_set(seg, &v, c[i], x - 1);
    }
    items = rbi_ld(RBI_CBF_ITEMS(v.f));
    rbi_st(RBI_CBF_ITEMS(v.f), items > 0 ? items - 1 : 0);
    rbi_st(RBI_CBF_DELETES(v.f), rbi_ld(RBI_CBF_DELETES(v.f)) + 1);
    return 1;
}

int rb_cbf_delete(rb_segment_t *seg, const char *name, size_t len)
{
    return rbi_kind_delete(seg, name, len, rbi_cbf_layout);
}
