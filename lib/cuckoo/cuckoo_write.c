/*
 * cuckoo_write.c - cuckoo filters, the writer side: reserve, add (with
 * moves and growth), delete of one fingerprint, delete of the filter.
 *
 * What: the single writer changes a fingerprint slot by loading its word,
 * replacing the slot's bits and storing the word back: one aligned 64-bit
 * store (readers see the word before or after; no RMW, as no other thread
 * stores these words), preceded by rbi_snap_touch (S1, snap.h).  An add
 * takes a free slot in one of the key's buckets (newest layer first);
 * failing that it searches the newest layer breadth first, from both of
 * the key's buckets, for the shortest path of moves to a free slot (each
 * fingerprint to its other bucket; at most 2 + max_iterations x
 * bucket_size buckets seen, RBI_CF_BFS_MAX at most) without changing
 * anything, then carries it out backwards inside the move sequence (C1,
 * C2: cuckoo_impl.h); failing that it grows the filter.  Why breadth
 * first: a path's buckets must be distinct to be carried out backwards,
 * and a random walk that may not revisit a bucket gives up early (loads
 * of 0.58 with buckets of 2, 0.15 with 1, against 0.88 and 0.29-0.50
 * breadth first: `make bench` section s2).
 * Determinism: which slots a path uses depends only on the key's hash and
 * the arrays, never on time, addresses or a random source, so replaying
 * the same calls rebuilds the same arrays.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <time.h>

#include "cuckoo_impl.h"
#include "kind.h"
#include "snap.h"

typedef rbi_cf_wview_t wview_t;

/* Whether layer l of f is one a reader accepts within size. */
static int layer_ok(const rb_filter_shm_t *f, const rbi_cf_shape_t *s, uint32_t l,
                    uint64_t size, uint64_t *nb, uint64_t *off)
{
    *nb = rbi_ld(&f->layer[l].bits);
    *off = rbi_ld(&f->layer[l].array_off);
    return rbi_cf_nbuckets_ok(*nb) && *off % RBI_ALIGN == 0 &&
           rbi_span_ok(size, *off, rbi_cf_layer_bytes(s, *nb));
}

int rbi_cuckoo_wbind(rb_segment_t *seg, const char *name, size_t len, wview_t *v)
{
    rbi_map_t *m;
    uint64_t nl;
    int rc = rbi_writer_find(seg, name, len, rbi_cf_layout, &v->f);

    if (rc != RB_OK)
        return rc;
    m = rbi_seg_map(seg);
    nl = rbi_ld(RBI_CF_NLAYERS(v->f));
    if (!rbi_cf_shape(rbi_ld(&v->f->layout), rbi_ld(RBI_CF_BUCKET(v->f)), &v->s) || nl < 1 ||
        nl > RB_BLOOM_MAX_LAYERS)
        return RB_ECORRUPT;
    v->nl = (uint32_t)nl;
    for (uint32_t l = 0; l < v->nl; l++) {
        if (!layer_ok(v->f, &v->s, l, rbi_seg_size(m), &v->nb[l], &v->off[l]))
            return RB_ECORRUPT;
        v->arr[l] = rbi_word_at(m, v->off[l]);
    }
    return RB_OK;
}

/* A fresh zeroed array for nb buckets at *off. */
static int array_new(rb_segment_t *seg, const rbi_cf_shape_t *s, uint64_t nb, uint64_t *off)
{
    uint64_t bytes = rbi_cf_layer_bytes(s, nb);
    _Atomic uint64_t *arr;
    int rc = rbi_heap_alloc(seg, bytes, off);

    if (rc != RB_OK)
        return rc;
    /* The extent may be reused space: zeroed before anyone can see it. */
    arr = rbi_word_at(rbi_seg_map(seg), *off);
    rbi_snap_touch(seg, arr, bytes);   /* S1 (snap.h) */
    for (uint64_t i = 0; i < bytes / 8; i++)
        rbi_st(&arr[i], 0);
    return RB_OK;
}

static void layer_fill(rb_filter_shm_t *f, const rbi_cf_shape_t *s, uint32_t l, uint64_t nb,
                       uint64_t off, uint64_t items)
{
    rbi_st(&f->layer[l].array_off, off);
    rbi_st(&f->layer[l].bits, nb);
    rbi_st(&f->layer[l].k, 0);
    rbi_st(&f->layer[l].capacity, nb * s->bsize);
    rbi_st(&f->layer[l].items, items);
    rbi_st(&f->layer[l].error_bits, 0);
}

/* Fills free slot f as im describes (arrays at off[]), live last. */
static void slot_fill(rb_segment_t *seg, rb_filter_shm_t *f, const char *name, size_t len,
                      const rbi_cf_image_t *im, const rbi_cf_shape_t *s, const uint64_t *off)
{
    rb_header_shm_t *h = rbi_hdr(rbi_seg_map(seg));
    uint64_t inc = rbi_ld(&h->next_incarnation);

    rbi_st(&h->next_incarnation, inc + 1);
    /* gen is kept (R1, bloom_write.c): a reader of the slot's previous
     * filter sees it move. */
    rbi_st(&f->incarnation, inc);
    rbi_st(&f->layout, rbi_cf_layout_of(im->p.fp_bits));
    rbi_st(RBI_CF_BUCKET(f), im->p.bucket_size);
    rbi_st(RBI_CF_EXPAND(f), im->p.expansion);
    rbi_st(RBI_CF_ITEMS(f), im->items);
    rbi_st(RBI_CF_CAP(f), im->p.capacity);
    rbi_st(RBI_CF_ITERS(f), im->p.max_iterations);
    /* The move sequence keeps counting up (never reset): a reader of the
     * slot's previous filter that meets a new even value retries anyway
     * through gen. */
    if (rbi_ld(RBI_CF_SEQ(f)) & 1)
        rbi_seq_write_end(RBI_CF_SEQ(f));
    rbi_st(RBI_CF_DELETES(f), im->deletes);
    rbi_st(RBI_CF_MOVES(f), 0);
    rbi_st(&f->rotated_at, 0);
    rbi_st(&f->name_len, len);
    rbi_st(&f->created, (uint64_t)time(NULL));
    rbi_copy_in(f->name, name, len);
    rbi_copy_in(f->secret, im->secret, sizeof(im->secret));
    for (uint32_t l = 0; l < im->nlayers; l++)
        layer_fill(f, s, l, im->nbuckets[l], off[l], im->litems[l]);
    rbi_st(RBI_CF_NLAYERS(f), im->nlayers);
    rbi_dir_publish(seg, f);   /* readers that acquire LIVE see every word above */
}

int rbi_cuckoo_create_image(rb_segment_t *seg, const char *name, size_t len,
                            const rbi_cf_image_t *im)
{
    uint64_t off[RB_BLOOM_MAX_LAYERS];
    rbi_cf_shape_t s;
    rb_filter_shm_t *f = NULL;
    int rc = RB_OK;
    uint32_t l;

    if (!seg->writable)
        return RB_EROFS;
    rbi_cf_shape(rbi_cf_layout_of(im->p.fp_bits), im->p.bucket_size, &s);
    if ((rc = rbi_dir_claim(seg, name, len, &f)) != RB_OK)
        return rc;
    for (l = 0; l < im->nlayers && rc == RB_OK; l++)
        rc = array_new(seg, &s, im->nbuckets[l], &off[l]);
    if (rc != RB_OK) {
        for (uint32_t j = 0; j + 1 < l; j++)
            rbi_heap_free(seg, off[j], rbi_cf_layer_bytes(&s, im->nbuckets[j]));
        return rc;
    }
    slot_fill(seg, f, name, len, im, &s, off);
    return RB_OK;
}

/* Whether p is a set of parameters rb_cuckoo_reserve accepts. */
static int params_ok(const rb_cuckoo_params_t *p)
{
    return p->capacity >= 1 && p->capacity <= RB_CUCKOO_MAX_CAPACITY && p->bucket_size >= 1 &&
           p->bucket_size <= RB_CUCKOO_MAX_BUCKET && p->max_iterations >= 1 &&
           p->max_iterations <= RB_CUCKOO_MAX_ITERATIONS &&
           p->expansion <= RB_CUCKOO_MAX_EXPANSION &&
           (p->fp_bits == 8 || p->fp_bits == 12 || p->fp_bits == 16);
}

int rb_cuckoo_reserve(rb_segment_t *seg, const char *name, size_t len,
                      const rb_cuckoo_params_t *p)
{
    rbi_cf_image_t im;

    if (seg == NULL || p == NULL || !rbi_name_ok(name, len) || !params_ok(p))
        return RB_EINVAL;
    memset(&im, 0, sizeof(im));
    im.p = *p;
    im.p.secret = NULL;
    im.p.expansion = p->expansion == 0 ? 0 : (uint32_t)rbi_cf_pow2(p->expansion);
    if (p->secret != NULL)
        memcpy(im.secret, p->secret, sizeof(im.secret));
    else
        arc4random_buf(im.secret, sizeof(im.secret));
    im.nlayers = 1;
    im.nbuckets[0] = rbi_cf_first_nbuckets(p->capacity, p->bucket_size);
    return rbi_cuckoo_create_image(seg, name, len, &im);
}

/* Writer: slot i of layer l becomes fp (one store of its word). */
static void slot_set(rb_segment_t *seg, const wview_t *v, uint32_t l, uint64_t i, uint64_t fp)
{
    unsigned sh;
    _Atomic uint64_t *w = &v->arr[l][rbi_cf_word(&v->s, i, &sh)];

    rbi_snap_touch(seg, w, 8);   /* S1 */
    rbi_st(w, (rbi_ld(w) & ~(v->s.fmask << sh)) | fp << sh);
}

/* The first slot of bucket b of layer l holding fp (0: a free one), or -1. */
static int64_t bucket_find(const wview_t *v, uint32_t l, uint64_t b, uint64_t fp)
{
    for (uint32_t j = 0; j < v->s.bsize; j++)
        if (rbi_cf_get(&v->s, v->arr[l], b * v->s.bsize + j) == fp)
            return (int64_t)(b * v->s.bsize + j);
    return -1;
}

/* The slot of fp in either of key k's buckets of layer l, or -1. */
static int64_t key_find(const wview_t *v, uint32_t l, rbi_cf_key_t k, uint64_t fp)
{
    uint64_t i1 = rbi_cf_home(k.h1, v->nb[l]);
    int64_t at = bucket_find(v, l, i1, fp);

    return at >= 0 ? at : bucket_find(v, l, rbi_cf_alt(i1, k.fp, v->nb[l]), fp);
}

static void count_add(const wview_t *v, uint32_t l, int64_t d)
{
    rbi_st(&v->f->layer[l].items, rbi_ld(&v->f->layer[l].items) + (uint64_t)d);
    rbi_st(RBI_CF_ITEMS(v->f), rbi_ld(RBI_CF_ITEMS(v->f)) + (uint64_t)d);
}

#define RBI_CF_BFS_MAX (1u << 16)   /* buckets one add's search may see, at most */

/* A path of moves: step t takes fingerprint fp[t] from slot at[t] of
 * bucket b[t] to its other bucket b[t + 1]; b[n] has a free slot. */
typedef struct path {
    uint64_t *b, *at, *fp;   /* n + 1 buckets, n slots and fingerprints */
    uint32_t n;
} path_t;

/* The breadth-first search's tree: node i is bucket bkt[i], reached from
 * node par[i] by moving the fingerprint fp[i] of slot at[i] (in par[i]'s
 * bucket) to its other bucket; the two roots (par -1) are the key's. */
typedef struct bfs {
    uint64_t *bkt, *at, *fp, *seen;   /* seen: open-addressing set of bkt */
    int64_t *par;
    uint64_t n, cap, seen_mask;
} bfs_t;

/* Adds bucket x to the set: 0 if it was there already. */
static int seen_add(bfs_t *q, uint64_t x)
{
    for (uint64_t i = rbi_fmix64(x) & q->seen_mask;; i = (i + 1) & q->seen_mask) {
        if (q->seen[i] == x)
            return 0;
        if (q->seen[i] == UINT64_MAX) {
            q->seen[i] = x;
            return 1;
        }
    }
}

/* A node for bucket b (if new and there is room): 1 if b has a free slot
 * (the search ends there). */
static int bfs_push(const wview_t *v, uint32_t l, bfs_t *q, uint64_t b, int64_t par,
                    uint64_t at, uint64_t fp)
{
    if (q->n == q->cap || !seen_add(q, b))
        return 0;
    q->bkt[q->n] = b;
    q->par[q->n] = par;
    q->at[q->n] = at;
    q->fp[q->n++] = fp;
    return bucket_find(v, l, b, 0) >= 0;
}

/* Searches layer l breadth first from key k's two buckets for a bucket
 * with a free slot, through at most q->cap buckets; changes nothing.  The
 * path to the first one found is the shortest, and its buckets are
 * distinct (each enters the tree once), so it can be carried out
 * backwards (path_run).  1 found (p filled), 0 none. */
static int path_find(const wview_t *v, uint32_t l, rbi_cf_key_t k, bfs_t *q, path_t *p)
{
    uint64_t nb = v->nb[l], bs = v->s.bsize;
    uint64_t i1 = rbi_cf_home(k.h1, nb), i2 = rbi_cf_alt(i1, k.fp, nb);
    int64_t end = -1;

    q->n = 0;
    bfs_push(v, l, q, i1, -1, 0, 0);
    bfs_push(v, l, q, i2, -1, 0, 0);
    for (uint64_t h = 0; h < q->n && end < 0; h++) {
        uint64_t cur = q->bkt[h], j0 = rbi_fmix64(k.h1 ^ (h + 1) * RBI_PROBE_MULT) % bs;
        for (uint64_t d = 0; d < bs && end < 0; d++) {
            uint64_t at = cur * bs + (j0 + d) % bs, fp = rbi_cf_get(&v->s, v->arr[l], at);
            if (bfs_push(v, l, q, rbi_cf_alt(cur, fp, nb), (int64_t)h, at, fp))
                end = (int64_t)q->n - 1;
        }
    }
    if (end < 0)
        return 0;
    p->n = 0;
    for (int64_t e = end; q->par[e] >= 0; e = q->par[e])
        p->n++;
    for (int64_t e = end, t = p->n;; e = q->par[e], t--) {
        p->b[t] = q->bkt[e];
        if (t == 0)
            break;
        p->at[t - 1] = q->at[e];
        p->fp[t - 1] = q->fp[e];
    }
    return 1;
}

/* Carries path p out backwards in layer l, then stores fp in the slot
 * its first move freed.  Inside the move sequence (C2); every fingerprint
 * stays in one of its buckets at each store (C1). */
static void path_run(rb_segment_t *seg, const wview_t *v, uint32_t l, const path_t *p,
                     uint64_t fp)
{
    int64_t free_at = bucket_find(v, l, p->b[p->n], 0);

    rbi_seq_write_begin(RBI_CF_SEQ(v->f));
    slot_set(seg, v, l, (uint64_t)free_at, p->fp[p->n - 1]);
    for (uint32_t t = p->n - 1; t > 0; t--)
        slot_set(seg, v, l, p->at[t], p->fp[t - 1]);
    slot_set(seg, v, l, p->at[0], fp);
    rbi_seq_write_end(RBI_CF_SEQ(v->f));
    rbi_st(RBI_CF_MOVES(v->f), rbi_ld(RBI_CF_MOVES(v->f)) + p->n);
}

/* Moves in the newest layer to make room for k: 1 done, 0 no path,
 * RB_ENOMEM. */
static int add_moving(rb_segment_t *seg, const wview_t *v, rbi_cf_key_t k)
{
    uint64_t iters = rbi_ld(RBI_CF_ITERS(v->f)), bs = v->s.bsize, cap, scap;
    uint32_t l = v->nl - 1;
    uint64_t *mem;
    bfs_t q;
    path_t p;
    int rc;

    if (iters < 1 || iters > RB_CUCKOO_MAX_ITERATIONS)
        return RB_ECORRUPT;
    /* Buckets the search may see: the two roots and each expanded bucket's
     * children, as many as max_iterations moves would examine, at most
     * RBI_CF_BFS_MAX. */
    cap = 2 + iters * bs;
    cap = cap < RBI_CF_BFS_MAX ? cap : RBI_CF_BFS_MAX;
    scap = rbi_cf_pow2(2 * cap);
    mem = malloc((5 * cap + scap + 3 * (cap + 1)) * sizeof(uint64_t));
    if (mem == NULL)
        return RB_ENOMEM;
    q = (bfs_t){ mem, mem + cap, mem + 2 * cap, mem + 5 * cap, (int64_t *)(mem + 3 * cap), 0,
                 cap, scap - 1 };
    p = (path_t){ mem + 5 * cap + scap, mem + 5 * cap + scap + cap + 1,
                  mem + 5 * cap + scap + 2 * (cap + 1), 0 };
    memset(q.seen, 0xFF, scap * sizeof(uint64_t));
    if ((rc = path_find(v, l, k, &q, &p)) == 1) {
        path_run(seg, v, l, &p, k.fp);
        count_add(v, l, 1);
    }
    free(mem);
    return rc;
}

/* Grows v by a layer (zeroed; words, then nlayers published) and stores
 * k in it.  RB_EFULL, RB_ELAYERS, RB_ENOSPC, RB_ENOMEM: nothing changed. */
static int add_growing(rb_segment_t *seg, wview_t *v, rbi_cf_key_t k)
{
    uint64_t e = rbi_ld(RBI_CF_EXPAND(v->f)), nb, off;
    uint32_t l = v->nl;
    int rc;

    if (e == 0)
        return RB_EFULL;
    if (l == RB_BLOOM_MAX_LAYERS)
        return RB_ELAYERS;
    if (e > RB_CUCKOO_MAX_EXPANSION || v->nb[l - 1] > RBI_CF_MAX_NBUCKETS / e)
        return RB_ENOSPC;
    nb = rbi_cf_pow2(v->nb[l - 1] * e);
    if ((rc = array_new(seg, &v->s, nb, &off)) != RB_OK)
        return rc;
    layer_fill(v->f, &v->s, l, nb, off, 0);
    /* Release: readers that acquire nlayers see the layer's words and its
     * zeroed array. */
    atomic_store_explicit(RBI_CF_NLAYERS(v->f), (uint64_t)l + 1, memory_order_release);
    v->nl = l + 1;
    v->nb[l] = nb;
    v->off[l] = off;
    v->arr[l] = rbi_word_at(rbi_seg_map(seg), off);
    slot_set(seg, v, l, rbi_cf_home(k.h1, nb) * v->s.bsize, k.fp);
    count_add(v, l, 1);
    return 1;
}

/* The writer's view of filter name and key hashed with its secret, the
 * start of an add and of a delete: RB_OK, RB_EINVAL, the bind's error. */
static int key_bind(rb_segment_t *seg, const char *name, size_t len, const void *key,
                    size_t klen, wview_t *v, rbi_cf_key_t *k)
{
    unsigned char secret[RBI_SECRET_BYTES];
    int rc;

    if (key == NULL && klen != 0)
        return RB_EINVAL;
    if ((rc = rbi_cuckoo_wbind(seg, name, len, v)) != RB_OK)
        return rc;
    rbi_copy_out(secret, v->f->secret, RBI_SECRET_WORDS);
    *k = rbi_cf_hash(secret, &v->s, key, klen);
    return RB_OK;
}

int rb_cuckoo_add(rb_segment_t *seg, const char *name, size_t len, const void *key,
                  size_t klen, int nx)
{
    rbi_cf_key_t k;
    wview_t v;
    int rc;

    if ((rc = key_bind(seg, name, len, key, klen, &v, &k)) != RB_OK)
        return rc;
    for (uint32_t l = v.nl; nx && l-- > 0;)
        if (key_find(&v, l, k, k.fp) >= 0)
            return 0;
    for (uint32_t l = v.nl; l-- > 0;) {
        int64_t at = key_find(&v, l, k, 0);
        if (at >= 0) {
            slot_set(seg, &v, l, (uint64_t)at, k.fp);
            count_add(&v, l, 1);
            return 1;
        }
    }
    if ((rc = add_moving(seg, &v, k)) != 0)
        return rc;
    return add_growing(seg, &v, k);
}

int rb_cuckoo_del(rb_segment_t *seg, const char *name, size_t len, const void *key,
                  size_t klen)
{
    rbi_cf_key_t k;
    wview_t v;
    int rc;

    if ((rc = key_bind(seg, name, len, key, klen, &v, &k)) != RB_OK)
        return rc;
    for (uint32_t l = v.nl; l-- > 0;) {
        int64_t at = key_find(&v, l, k, k.fp);
        if (at >= 0) {
            slot_set(seg, &v, l, (uint64_t)at, 0);
            count_add(&v, l, -1);
            rbi_st(RBI_CF_DELETES(v.f), rbi_ld(RBI_CF_DELETES(v.f)) + 1);
            return 1;
        }
    }
    return 0;
}

int rb_cuckoo_delete(rb_segment_t *seg, const char *name, size_t len)
{
    return rbi_kind_delete(seg, name, len, rbi_cf_layout);
}
