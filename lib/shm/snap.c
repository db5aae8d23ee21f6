/*
 * snap.c - a consistent dump of a segment while its writer goes on: the
 * frozen copy of the header and directory, the page states the writer and
 * the dumping thread hand each heap page over with, and the stream the
 * thread writes (snap.h has the protocol and invariant S1).
 *
 * Page states (one byte each, for the heap pages of [heap_offset, size) at
 * begin):
 *   FREE   nobody has taken it: the writer has not stored into it, the
 *          dump has not reached it;
 *   BUSY   one side is copying it (4 KiB); the other waits for that copy;
 *   DUMPED the dump took it as it was: the writer may store freely;
 *   SAVED  the writer saved its frozen bytes in saved[i] before its first
 *          store: the dump takes them from there (and frees them);
 *   HOLE   the page lay wholly inside a free extent of the writer's list
 *          at begin: nothing of it is live (a restore rebuilds the free
 *          list from the live extents, adopt.c), so the dump passes it as
 *          a hole (zero bytes or the hole callback) and never reads it;
 *          the writer saves nothing for it.  A free page may have been
 *          given back to the system (heap.c punches holes): reading it
 *          would allocate it again.
 * Either side moves a page out of FREE only by compare-and-swap to BUSY,
 * so exactly one of them copies it, and the copy is of the frozen bytes:
 * the writer has not stored into a FREE page (S1), and it does not while
 * the dump holds it BUSY.  The release store that ends BUSY, paired with
 * the acquire load that sees it, orders the copy before whatever the other
 * side does next with the page.
 *
 * Memory: at most one saved page per heap page the writer stores into
 * ahead of the dump (bounded by the dump's size; a load during a snapshot
 * saves each page once, the dump frees it as it passes).
 *
 * The writer's save is the event loop's cost of a snapshot (a load right
 * after begin touches thousands of pages): so the page it copies into is
 * one the dump prepared, already faulted in (the pool: a ring of ready
 * pages the dump fills from mappings made with MAP_POPULATE and refills
 * with the saved pages it has written out; one producer, the dump, and one
 * consumer, the writer), and the writer's save is a claim and a 4 KiB
 * copy, no allocation, no page fault, no lock.  Only when the ring is
 * empty does it malloc, as before.  The pool holds at most POOL_CAP pages
 * (and never more than the heap has pages); its mappings go at end.
 */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "snap.h"
#include "util.h"

#define PAGE       4096u
#define PIECE      (1u << 20)   /* bytes handed to the dump's callback at a time */
#define CHUNK      (2u << 20)   /* the pool's pages are mapped this many bytes at a time */
#define POOL_CAP   4096u        /* pages the ring holds: 16 MiB */
#define POOL_LOW   2048u        /* the dump refills the ring below this */

enum { FREE = 0, BUSY = 1, DUMPED = 2, SAVED = 3, HOLE = 4 };

struct rb_segment_snap {
    rb_segment_t *seg;
    const unsigned char *base;    /* the writer's mapping */
    uint64_t size;                /* committed bytes at begin: the dump's length */
    uint64_t heap;                /* [0, heap) copied at begin (front); pages from there */
    unsigned char *front;
    size_t npages;
    _Atomic unsigned char *state; /* npages */
    unsigned char **saved;        /* npages: SAVED pages' frozen bytes */
    _Atomic uint64_t saved_bytes; /* saved by the writer, in all */
    _Atomic int failed;           /* the writer could not save a page (no memory) */
    int dumped;                   /* rb_segment_snap_dump ran */
    uint64_t holes;               /* pages marked HOLE at begin */
    /* The pool (above): ring[tail % POOL_CAP] is filled by the dump then
     * tail published (release); the writer takes ring[head % POOL_CAP]
     * while head != tail (acquire) and publishes head. */
    unsigned char *ring[POOL_CAP];
    _Atomic size_t head, tail;
    size_t pool_max;              /* min(POOL_CAP, pages the writer could save) */
    unsigned char *pooled;        /* npages: saved[i] is a pool page (else malloc'd) */
    unsigned char **chunks;       /* the pool's mappings, CHUNK bytes each */
    size_t nchunks, chunks_cap;
    uint64_t pooled_saves;        /* the writer's saves into a pool page */
};

static const unsigned char zeros[PAGE];   /* a hole's bytes, for rb_segment_snap_dump */

static inline void relax(unsigned spins)
{
    if (spins > 1000)
        sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    else
        __builtin_ia32_pause();
#endif
}

/* Waits until page i is out of BUSY; its state then. */
static unsigned char settled(rb_segment_snap_t *s, size_t i)
{
    unsigned char st;
    unsigned spins = 0;

    while ((st = atomic_load_explicit(&s->state[i], memory_order_acquire)) == BUSY)
        relax(++spins);
    return st;
}

static int claim(rb_segment_snap_t *s, size_t i)
{
    unsigned char want = FREE;

    return atomic_compare_exchange_strong_explicit(&s->state[i], &want, BUSY,
                                                   memory_order_acquire, memory_order_acquire);
}

/* Writer: a ready page from the ring, or NULL if it is empty. */
static unsigned char *pool_take(rb_segment_snap_t *s)
{
    size_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
    unsigned char *p;

    if (h == atomic_load_explicit(&s->tail, memory_order_acquire))
        return NULL;
    p = s->ring[h % POOL_CAP];
    atomic_store_explicit(&s->head, h + 1, memory_order_release);
    return p;
}

/* Dump (or begin, before the writer goes on): page p into the ring; 0 if
 * it is full. */
static int pool_give(rb_segment_snap_t *s, unsigned char *p)
{
    size_t t = atomic_load_explicit(&s->tail, memory_order_relaxed);

    if (t - atomic_load_explicit(&s->head, memory_order_acquire) >= s->pool_max)
        return 0;
    s->ring[t % POOL_CAP] = p;
    atomic_store_explicit(&s->tail, t + 1, memory_order_release);
    return 1;
}

/* Dump (or begin): maps chunks of faulted-in pages into the ring until it
 * holds POOL_LOW pages or no chunk fits (no memory is not an error: the
 * writer then mallocs). */
static void pool_fill(rb_segment_snap_t *s)
{
    for (;;) {
        size_t ready = atomic_load_explicit(&s->tail, memory_order_relaxed) -
                       atomic_load_explicit(&s->head, memory_order_acquire);
        unsigned char *c;
        if (ready >= POOL_LOW || ready + CHUNK / PAGE > s->pool_max)
            return;
        if (s->nchunks == s->chunks_cap) {
            size_t cap = s->chunks_cap ? 2 * s->chunks_cap : 16;
            unsigned char **a = realloc(s->chunks, cap * sizeof(*a));
            if (a == NULL)
                return;
            s->chunks = a;
            s->chunks_cap = cap;
        }
        c = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
        if (c == MAP_FAILED)
            return;
        s->chunks[s->nchunks++] = c;
        for (size_t o = 0; o < CHUNK; o += PAGE)
            (void)pool_give(s, c + o);   /* room checked above */
    }
}

void rbi_snap_save(rb_segment_snap_t *s, const void *p, size_t len)
{
    uint64_t off = (uint64_t)((const unsigned char *)p - s->base), end = off + len;

    if (len == 0 || end <= s->heap || off >= s->size)
        return;
    if (off < s->heap)
        off = s->heap;
    if (end > s->size)
        end = s->size;
    for (size_t i = (off - s->heap) / PAGE; i <= (end - 1 - s->heap) / PAGE; i++) {
        unsigned char *copy;
        if (atomic_load_explicit(&s->state[i], memory_order_acquire) >= DUMPED)
            continue;   /* DUMPED, SAVED, or a HOLE (not in the dump) */
        if (!claim(s, i)) {
            settled(s, i);   /* the dump is copying it; then it is DUMPED */
            continue;
        }
        if ((copy = pool_take(s)) != NULL) {
            s->pooled[i] = 1;   /* published by the release store of SAVED */
            s->pooled_saves++;
        }
        else
            copy = malloc(PAGE);
        if (copy == NULL) {
            /* The frozen bytes are about to be lost: the dump fails. */
            atomic_store_explicit(&s->failed, 1, memory_order_relaxed);
            atomic_store_explicit(&s->state[i], DUMPED, memory_order_release);
            continue;
        }
        memcpy(copy, s->base + s->heap + (uint64_t)i * PAGE, PAGE);
        s->saved[i] = copy;
        atomic_fetch_add_explicit(&s->saved_bytes, PAGE, memory_order_relaxed);
        atomic_store_explicit(&s->state[i], SAVED, memory_order_release);
    }
}

/* Marks HOLE every page wholly inside a free extent of hp (the writer's
 * list, heap.h: sorted, coalesced, within the heap).  A list not built yet
 * (a created segment before its first allocation) has the whole heap free. */
static void mark_holes(rb_segment_snap_t *s, const rbi_heap_t *hp)
{
    rbi_extent_t all = { s->heap, s->size - s->heap };
    const rbi_extent_t *ext = hp->built ? hp->free : &all;
    size_t n = hp->built ? hp->n : 1;

    for (size_t k = 0; k < n; k++) {
        uint64_t lo = ext[k].off, hi = ext[k].off + ext[k].len;
        if (hi < lo || lo >= s->size || hi <= s->heap)
            continue;
        if (lo < s->heap)
            lo = s->heap;
        if (hi > s->size)
            hi = s->size;
        lo = s->heap + (lo - s->heap + PAGE - 1) / PAGE * PAGE;
        hi = s->heap + (hi - s->heap) / PAGE * PAGE;
        for (uint64_t o = lo; o < hi; o += PAGE) {
            atomic_store_explicit(&s->state[(o - s->heap) / PAGE], HOLE, memory_order_relaxed);
            s->holes++;
        }
    }
}

int rb_segment_snap_begin(rb_segment_t *seg, rb_segment_snap_t **out)
{
    const rbi_map_t *m;
    const rb_header_shm_t *h;
    rb_segment_snap_t *s;

    if (seg == NULL || out == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if (seg->snap != NULL)
        return RB_EBUSY;
    m = rbi_seg_map(seg);
    h = rbi_hdr(m);
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return RB_ENOMEM;
    s->seg = seg;
    s->base = m->base;
    s->size = rbi_ld(&h->size);
    s->heap = rbi_ld(&h->heap_offset);
    /* A segment rb_segment_create made or adopt.c accepted: the heap
     * starts on a page, the size is whole granules. */
    if (s->heap % PAGE != 0 || s->size % PAGE != 0 || s->heap > s->size) {
        free(s);
        return RB_ECORRUPT;
    }
    s->npages = (size_t)((s->size - s->heap) / PAGE);
    s->front = malloc((size_t)s->heap);
    s->state = calloc(s->npages ? s->npages : 1, sizeof(*s->state));
    s->saved = calloc(s->npages ? s->npages : 1, sizeof(*s->saved));
    s->pooled = calloc(s->npages ? s->npages : 1, 1);
    if (s->front == NULL || s->state == NULL || s->saved == NULL || s->pooled == NULL) {
        free(s->front);
        free((void *)s->state);
        free(s->saved);
        free(s->pooled);
        free(s);
        return RB_ENOMEM;
    }
    /* Between two changes (the caller's contract): the header page and
     * the directory as they are now are the dump's. */
    memcpy(s->front, s->base, (size_t)s->heap);
    mark_holes(s, &seg->heap);
    s->pool_max = s->npages - s->holes < POOL_CAP ? s->npages - s->holes : POOL_CAP;
    pool_fill(s);   /* the first stores after begin find pages ready */
    seg->snap = s;
    *out = s;
    return RB_OK;
}

/* Appends [p, p + len) to the piece buffer, flushing it to fn when full. */
static int emit(unsigned char *buf, size_t *fill, const void *p, size_t len,
                int (*fn)(const void *, size_t, void *), void *arg)
{
    if (*fill + len > PIECE) {
        if (fn(buf, *fill, arg) != 0)
            return -1;
        *fill = 0;
    }
    memcpy(buf + *fill, p, len);
    *fill += len;
    return 0;
}

/* The dump's stream: pieces of data to fn through buf, runs of hole pages
 * to hole (NULL: as zero bytes to fn). */
typedef struct stream {
    int (*fn)(const void *, size_t, void *);
    int (*hole)(uint64_t, void *);
    void *arg;
    unsigned char *buf;
    size_t fill;
    uint64_t run;   /* hole bytes not passed yet */
} stream_t;

static int flush_run(stream_t *st)
{
    uint64_t run = st->run;

    st->run = 0;
    if (run == 0)
        return 0;
    if (st->fill > 0 && st->fn(st->buf, st->fill, st->arg) != 0)
        return -1;
    st->fill = 0;
    return st->hole(run, st->arg);
}

static int put_page(stream_t *st, const unsigned char *page)
{
    if (page == NULL && st->hole != NULL) {
        st->run += PAGE;
        return 0;
    }
    if (st->run > 0 && flush_run(st) != 0)
        return -1;
    return emit(st->buf, &st->fill, page != NULL ? page : zeros, PAGE, st->fn, st->arg);
}

int rb_segment_snap_dump_sparse(rb_segment_snap_t *s, int (*fn)(const void *, size_t, void *),
                                int (*hole)(uint64_t, void *), void *arg)
{
    stream_t st = { fn, hole, arg, NULL, 0, 0 };
    int rc = RB_OK;

    if (s == NULL || fn == NULL)
        return RB_EINVAL;
    if (s->dumped)
        return RB_EBUSY;
    s->dumped = 1;
    st.buf = malloc(PIECE);
    if (st.buf == NULL)
        return RB_ENOMEM;
    for (uint64_t o = 0; o < s->heap && rc == RB_OK; o += PAGE)
        if (put_page(&st, s->front + o) != 0)
            rc = RB_ESYS;
    for (size_t i = 0; i < s->npages && rc == RB_OK; i++) {
        const unsigned char *page = s->base + s->heap + (uint64_t)i * PAGE;
        unsigned char st_i;
        int r;
        if (i % 64 == 0)
            pool_fill(s);
        if (claim(s, i)) {
            r = put_page(&st, page);
            atomic_store_explicit(&s->state[i], DUMPED, memory_order_release);
        } else if ((st_i = settled(s, i)) == SAVED) {
            r = put_page(&st, s->saved[i]);
            /* A pool page goes back to the ring (or stays in its chunk
             * until end); a malloc'd one is freed. */
            if (!s->pooled[i])
                free(s->saved[i]);
            else
                (void)pool_give(s, s->saved[i]);
            s->saved[i] = NULL;
        } else if (st_i == HOLE) {
            r = put_page(&st, NULL);   /* never read: it may be given back */
        } else {
            /* DUMPED before the dump: only a save that failed leaves that,
             * and the dump fails below; the length stays right. */
            r = put_page(&st, page);
        }
        if (r != 0)
            rc = RB_ESYS;
    }
    if (rc == RB_OK && st.run > 0 && flush_run(&st) != 0)
        rc = RB_ESYS;
    if (rc == RB_OK && st.fill > 0 && fn(st.buf, st.fill, arg) != 0)
        rc = RB_ESYS;
    free(st.buf);
    if (rc == RB_OK && atomic_load_explicit(&s->failed, memory_order_relaxed))
        rc = RB_ENOMEM;
    return rc;
}

int rb_segment_snap_dump(rb_segment_snap_t *s, int (*fn)(const void *, size_t, void *),
                         void *arg)
{
    return rb_segment_snap_dump_sparse(s, fn, NULL, arg);
}

uint64_t rb_segment_snap_holes(const rb_segment_snap_t *s)
{
    return s != NULL ? s->holes * PAGE : 0;
}

uint64_t rbi_snap_pooled(const rb_segment_snap_t *s)
{
    return s != NULL ? s->pooled_saves : 0;
}

uint64_t rb_segment_snap_size(const rb_segment_snap_t *s)
{
    return s != NULL ? s->size : 0;
}

void rb_segment_snap_end(rb_segment_snap_t *s, uint64_t *saved_bytes)
{
    if (s == NULL)
        return;
    if (saved_bytes != NULL)
        *saved_bytes = atomic_load_explicit(&s->saved_bytes, memory_order_relaxed);
    s->seg->snap = NULL;
    for (size_t i = 0; i < s->npages; i++)
        if (!s->pooled[i])
            free(s->saved[i]);
    for (size_t k = 0; k < s->nchunks; k++)
        munmap(s->chunks[k], CHUNK);
    free(s->chunks);
    free(s->pooled);
    free(s->saved);
    free((void *)s->state);
    free(s->front);
    free(s);
}
