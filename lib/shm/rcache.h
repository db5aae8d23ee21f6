/*
 * rcache.h - a reader handle's cache of its filter's slot, header-only:
 * the view seqlock (rbi_rview_t) that the Bloom binding's one-layer view
 * (bloom_read.c), the cuckoo filter's and the count-min sketch's caches
 * (cuckoo.c, cms.c) all use, and the cache object those two keep per
 * (mapping, slot, incarnation, secret, shape) with its recording and
 * freeing (rbi_rcache_t).
 *
 * What: a single query on a handle skips the read section's validation of
 * the slot (shape, bounds of every array, the 192-byte secret's copy) by
 * using what the last section that held validated, while the slot's
 * generation is the one it was validated at.  The view (a kind's few
 * words: array addresses, layer count) is process-local memory, written
 * by whichever thread ran a slow query at a new generation, under the
 * handle's lock taken with trylock (readers never wait), inside a seqlock
 * of its own: seq odd while written.  Workload: one begin and one end per
 * query (~10^7-10^8 a second per thread); a write per generation change.
 *
 * Reader (a query; G1 / G2 are latch.h's):
 *     if (!rbi_rcache_begin(c, map, &g, &s0)) slow path;
 *     ... read the kind's view words, probe ...
 *     if (!rbi_rcache_end(c, g, s0)) slow path (the answer discarded);
 * Writer of the view (a thread that ran a section that held at g, under
 * the handle's lock):
 *     rbi_rview_write_begin(&c->view, g); ... store the words ...
 *     rbi_rview_write_end(&c->view);
 *
 * Invariant V1: a query whose begin saw the view's sequence even at s0
 *   with gen == g, and whose end re-loads s0 and the slot's generation g,
 *   used words stored by one write of the view, validated by a section
 *   that held at g; while the slot's generation is g, that is what a
 *   section would validate (every change to the words a view holds comes
 *   with a generation publish, G1), and memory replaced since is never
 *   answered from (G2: its re-check sees the publish).
 * Invariant V2: a kind may use its view words between begin and end, that
 *   is before the sequence is re-checked, only if every value any write
 *   ever stored in each word is safe to dereference in any mix with the
 *   others (cms: any array the cache ever held is one of the sketch's, of
 *   the cache's shape, in bounds of the mapping; cuckoo: layer l's words
 *   are the same in every view of an incarnation, and a layer count is
 *   stored after the layers it counts).  A torn read then costs a wrong
 *   answer that the end discards, never a wild load.  The Bloom view
 *   (whose words change together at a reset) checks the sequence first
 *   (rbi_rview_held) instead.
 */
#ifndef RBI_RCACHE_H
#define RBI_RCACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "format.h"
#include "latch.h"
#include "segment.h"

/* A view's seqlock and the generation it was validated at. */
typedef struct rbi_rview {
    _Atomic uint64_t seq;   /* odd while a thread writes the view */
    _Atomic uint64_t gen;   /* the slot's generation the view is of */
} rbi_rview_t;

/* Reader: 1 and *s0 if view v was validated at generation g and is not
 * being written (its words are then read, and re-checked: V1). */
static inline int rbi_rview_begin(const rbi_rview_t *v, uint64_t g, uint64_t *s0)
{
    /* Acquire pairs with rbi_rview_write_end's release store: the words
     * stored before the sequence became s0 are visible. */
    *s0 = atomic_load_explicit(&v->seq, memory_order_acquire);
    return (*s0 & 1) == 0 && rbi_ld(&v->gen) == g;
}

/* Reader: 1 if no write of v began since rbi_rview_begin gave s0 (the
 * words read in between are of one write). */
static inline int rbi_rview_held(const rbi_rview_t *v, uint64_t s0)
{
    /* The loads of the words happen before the re-load of the sequence
     * (pairs with rbi_rview_write_begin's release fence). */
    atomic_thread_fence(memory_order_acquire);
    return rbi_ld(&v->seq) == s0;
}

/* Writer of the view (under the handle's lock): the words that follow,
 * up to rbi_rview_write_end, are of a section that held at g. */
static inline void rbi_rview_write_begin(rbi_rview_t *v, uint64_t g)
{
    uint64_t s0 = rbi_ld(&v->seq);

    rbi_st(&v->seq, s0 + 1);
    /* The odd sequence is visible before any word changes. */
    atomic_thread_fence(memory_order_release);
    rbi_st(&v->gen, g);
}

static inline void rbi_rview_write_end(rbi_rview_t *v)
{
    /* Release: a reader that sees the even sequence sees the words. */
    atomic_store_explicit(&v->seq, rbi_ld(&v->seq) + 1, memory_order_release);
}

/* ---- the cache object (cuckoo.c, cms.c) ------------------------------------
 *
 * A kind's cache begins with an rbi_rcache_t (the fields every query
 * reads first, in one line), then its shape and view words, then its copy
 * of the secret.  Its mapping, slot, incarnation, shape and secret are
 * set before it is published and never change; a view of another of any
 * of them goes into a new cache (rbi_rcache_put), the old one kept on the
 * older list until the handle is closed (a reader may still use it): one
 * per rebinding or secret change.  The first lives inside the handle, so
 * a handle opened for one call allocates nothing more. */
typedef struct rbi_rcache {
    rbi_rview_t view;
    const rb_filter_shm_t *f;
    const rbi_map_t *m;
    uint64_t inc;
    struct rbi_rcache *older;
} rbi_rcache_t;

/* What a handle holds: its current cache (NULL until a slow call filled
 * one), the lock its writers take with trylock. */
typedef struct rbi_rcache_ref {
    _Atomic(rbi_rcache_t *) cur;
    pthread_mutex_t lock;
} rbi_rcache_ref_t;

/* Reader: 1 if c (a handle's current cache, or NULL) is of mapping m and
 * its slot holds its live incarnation at generation *g (G1), its view
 * validated at *g, *s0 its sequence; 0: the slow path. */
static inline int rbi_rcache_begin(const rbi_rcache_t *c, const rbi_map_t *m, uint64_t *g,
                                   uint64_t *s0)
{
    const rb_filter_shm_t *f;

    if (c == NULL || c->m != m)
        return 0;
    f = c->f;
    *g = rbi_gen_read_begin(&f->gen);
    return rbi_rview_begin(&c->view, *g, s0) && rbi_ld(&f->state) == RBI_FILTER_LIVE &&
           rbi_ld(&f->incarnation) == c->inc;
}

/* Reader: 1 if what was read since rbi_rcache_begin stands (V1, G2); 0:
 * discard it, the slow path. */
static inline int rbi_rcache_end(const rbi_rcache_t *c, uint64_t g, uint64_t s0)
{
    /* One fence for both re-loads: the loads above happen before them
     * (pairs with rbi_rview_write_begin's and rbi_gen_publish's release
     * fences). */
    atomic_thread_fence(memory_order_acquire);
    return rbi_ld(&c->view.seq) == s0 && rbi_ld(&c->f->gen.word) == g;
}

/* A kind's part of recording a view (rbi_rcache_put): same(c, view): c's
 * shape and secret are the view's; fresh(c, view): c already holds the
 * view's words; init(c, view): a new cache's shape and secret; store(c,
 * view): the view's words, inside the view's write. */
typedef struct rbi_rcache_kind {
    size_t size;   /* the kind's cache struct */
    int (*same)(const rbi_rcache_t *c, const void *view);
    int (*fresh)(const rbi_rcache_t *c, const void *view);
    void (*init)(rbi_rcache_t *c, const void *view);
    void (*store)(rbi_rcache_t *c, const void *view);
} rbi_rcache_kind_t;

/* Records a view of slot f (incarnation inc, mapping m) validated by a
 * section that held at generation g in r's cache: into the current one if
 * it is of the same filter, shape and secret, else into a new cache
 * (first if r has none yet, else allocated; nothing if that fails).  A
 * thread that finds the lock taken records nothing (another records). */
static inline void rbi_rcache_put(rbi_rcache_ref_t *r, rbi_rcache_t *first,
                                  const rbi_rcache_kind_t *k, const rbi_map_t *m,
                                  const rb_filter_shm_t *f, uint64_t inc, uint64_t g,
                                  const void *view)
{
    rbi_rcache_t *c = atomic_load_explicit(&r->cur, memory_order_acquire), *nc;
#define RBI_RCACHE_IS(c) ((c) != NULL && (c)->m == m && (c)->f == f && (c)->inc == inc && \
                          k->same((c), view))

    if (RBI_RCACHE_IS(c) && rbi_ld(&c->view.gen) == g && k->fresh(c, view))
        return;
    if (pthread_mutex_trylock(&r->lock) != 0)
        return;
    c = atomic_load_explicit(&r->cur, memory_order_relaxed);
    if (RBI_RCACHE_IS(c)) {
        rbi_rview_write_begin(&c->view, g);
        k->store(c, view);
        rbi_rview_write_end(&c->view);
    } else if ((nc = c == NULL ? first : calloc(1, k->size)) != NULL) {
        nc->m = m;
        nc->f = f;
        nc->inc = inc;
        nc->older = c;
        k->init(nc, view);
        rbi_rview_write_begin(&nc->view, g);
        k->store(nc, view);
        rbi_rview_write_end(&nc->view);
        /* Release: a reader of the new cache sees it complete. */
        atomic_store_explicit(&r->cur, nc, memory_order_release);
    }
#undef RBI_RCACHE_IS
    pthread_mutex_unlock(&r->lock);
}

static inline void rbi_rcache_ref_init(rbi_rcache_ref_t *r)
{
    atomic_store_explicit(&r->cur, NULL, memory_order_relaxed);
    pthread_mutex_init(&r->lock, NULL);
}

/* At the handle's close: frees every cache r ever had but first. */
static inline void rbi_rcache_ref_free(rbi_rcache_ref_t *r, rbi_rcache_t *first)
{
    rbi_rcache_t *c = atomic_load(&r->cur);

    while (c != NULL) {
        rbi_rcache_t *older = c->older;
        if (c != first)
            free(c);
        c = older;
    }
    pthread_mutex_destroy(&r->lock);
}

#endif /* RBI_RCACHE_H */
