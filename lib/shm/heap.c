/*
 * heap.c - the writer's allocator for the segment heap.
 *
 * What: first-fit over a sorted, coalesced list of free extents in
 * [header.heap_offset, header.size), growing the object (rbi_segment_grow)
 * when nothing fits.  Why process-local: the live objects (two ring copies,
 * one bit array per filter layer) are all named by the header and the
 * directory, so a writer that takes over rebuilds the free list from them
 * (rbi_heap_rebuild, called by adopt.c) and nothing about free space has
 * to be kept consistent in shared memory.  Workload: a handful of
 * allocations per ring growth or filter layer; lists stay short.
 *
 * Freed space may still be read by a reader that started before it was
 * unpublished; readers bounds-check and re-validate (latch or filter gen),
 * so such reads are discarded, never trusted.
 *
 * Freed pages go back to the system (design.md, "Giving freed pages
 * back"): the whole pages of a free run (whole 2 MiB pieces in a
 * huge-page segment, so no huge page is split) are punched out of the
 * object (fallocate PUNCH_HOLE | KEEP_SIZE): its size and every mapping
 * stay, a reader still inside reads zeros and its re-validation discards
 * them, as it discards an extent the allocator already gave again.  Every
 * writer has an fd (a private segment is a memfd).  A release takes about
 * 0.3 ms per MB, so a free gives back at most RBI_RELEASE_MS worth and
 * leaves the rest pending (heap.release_at, heap.unreleased) for
 * rb_segment_trim, which the daemon calls every second: a DEL of a 1 GB
 * filter does not hold the loop for 300 ms.  A punch changes the heap's
 * bytes, so while a snapshot is in progress (seg->snap, S1) nothing is
 * punched, only left pending; the trim's sweep also punches again pages a
 * reader's fault put back (a read fault on a tmpfs hole allocates a page).
 * heap.unreleased is an upper bound: a release cut short by its time keeps
 * counting what it already gave back until it finishes.  An extent handed
 * out is backed again first (fallocate), so the writer's stores never
 * fault on a full /dev/shm (SIGBUS): they fail here, as growth does.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heap.h"
#include "segment.h"
#include "util.h"

#define RBI_RELEASE_MS    10u          /* the most one call spends giving pages back */
#define RBI_RELEASE_PIECE (32u << 20)  /* bytes punched between two looks at the clock */

/* Frees a list's storage and empties it. */
static void heap_destroy(rbi_heap_t *hp)
{
    free(hp->free);
    memset(hp, 0, sizeof(*hp));
}

/* Inserts [off, off+len) into the free list, merging with neighbours. */
static int heap_insert(rbi_heap_t *hp, uint64_t off, uint64_t len)
{
    size_t i = 0;

    if (len == 0)
        return RB_OK;
    while (i < hp->n && hp->free[i].off < off)
        i++;
    if (i > 0 && hp->free[i - 1].off + hp->free[i - 1].len == off) {
        hp->free[i - 1].len += len;
        if (i < hp->n && off + len == hp->free[i].off) {
            hp->free[i - 1].len += hp->free[i].len;
            memmove(&hp->free[i], &hp->free[i + 1], (hp->n - i - 1) * sizeof(rbi_extent_t));
            hp->n--;
        }
        return RB_OK;
    }
    if (i < hp->n && off + len == hp->free[i].off) {
        hp->free[i].off = off;
        hp->free[i].len += len;
        return RB_OK;
    }
    if (hp->n == hp->cap) {
        size_t cap = hp->cap ? hp->cap * 2 : 16;
        rbi_extent_t *f = realloc(hp->free, cap * sizeof(*f));
        if (f == NULL)
            return RB_ENOMEM;
        hp->free = f;
        hp->cap = cap;
    }
    memmove(&hp->free[i + 1], &hp->free[i], (hp->n - i) * sizeof(rbi_extent_t));
    hp->free[i].off = off;
    hp->free[i].len = len;
    hp->n++;
    return RB_OK;
}

/* The unit pages are given back and taken again in: a page, or 2 MiB in a
 * huge-page segment (punching part of a huge page would split it). */
static uint64_t heap_grain(const rbi_map_t *m)
{
    long page = sysconf(_SC_PAGESIZE);

    return rbi_seg_huge(m) ? RBI_HUGE_STEP : page > 0 ? (uint64_t)page : 4096u;
}

/* Gives back the whole grains inside the free run [off, off+len).  A
 * failure (a filesystem without holes) only keeps the pages. */
static void heap_punch(rbi_map_t *m, uint64_t off, uint64_t len)
{
    uint64_t g = heap_grain(m), from = rbi_round_up(off, g), to = (off + len) - (off + len) % g;

    if (to > from)
        (void)fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from,
                        (off_t)(to - from));
}

/* Backs [off, off+len) again before it is handed out (a punched grain is a
 * hole; on grains that have their pages this changes nothing), collapsing
 * a huge-page segment's grains back into 2 MiB pages.  RB_OK or the errno
 * code of fallocate (ENOSPC: /dev/shm is full). */
static int heap_back(rbi_map_t *m, uint64_t off, uint64_t len)
{
    uint64_t g = heap_grain(m), size = rbi_ld(&rbi_hdr(m)->size);
    uint64_t from = off - off % g, to = rbi_round_up(off + len, g);

    if (to > size)
        to = size;
    if (fallocate(m->fd, 0, (off_t)from, (off_t)(to - from)) != 0)
        return rbi_errno_code(errno);
    if (rbi_seg_huge(m))
        rbi_huge_collapse(m, from, to);
    return RB_OK;
}

/* First fit of `bytes` (rounded) at *off, its pages below `fresh` backed
 * again first (bytes from `fresh` on were just allocated by growth).
 * RB_OK, 1 if no free extent fits, or heap_back's error. */
static int heap_take(rb_segment_t *seg, uint64_t bytes, uint64_t fresh, uint64_t *off)
{
    rbi_heap_t *hp = &seg->heap;
    int rc;

    for (size_t i = 0; i < hp->n; i++) {
        uint64_t at = hp->free[i].off;
        if (hp->free[i].len < bytes)
            continue;
        if (at < fresh &&
            (rc = heap_back(rbi_seg_map(seg), at, (at + bytes < fresh ? at + bytes : fresh) - at)) != RB_OK)
            return rc;
        *off = at;
        hp->free[i].off += bytes;
        hp->free[i].len -= bytes;
        if (hp->free[i].len == 0) {
            memmove(&hp->free[i], &hp->free[i + 1], (hp->n - i - 1) * sizeof(rbi_extent_t));
            hp->n--;
        }
        return RB_OK;
    }
    return 1;
}

int rbi_heap_alloc(rb_segment_t *seg, uint64_t bytes, uint64_t *off)
{
    rbi_heap_t *hp = &seg->heap;
    uint64_t size, tail_free = 0, grow_to;
    int rc;

    if (!seg->writable)
        return RB_EROFS;
    /* A created segment's list: everything from heap_offset on is free,
     * and was just allocated by growth: nothing to give back. */
    if (!hp->built) {
        if ((rc = rbi_heap_rebuild(seg, NULL, 0)) != RB_OK)
            return rc;
        hp->unreleased = 0;
        hp->release_at = UINT64_MAX;
    }
    if (bytes == 0 || bytes > rbi_seg_map(seg)->map_len)
        return RB_ENOSPC;
    bytes = rbi_round_up(bytes, RBI_ALIGN);
    if ((rc = heap_take(seg, bytes, UINT64_MAX, off)) <= 0)
        return rc;
    /* Nothing fits: grow the object, reusing a free extent at its end. */
    size = rbi_ld(&rbi_hdr(rbi_seg_map(seg))->size);
    if (hp->n > 0 && hp->free[hp->n - 1].off + hp->free[hp->n - 1].len == size)
        tail_free = hp->free[hp->n - 1].len;
    grow_to = size + (bytes - tail_free);
    if (grow_to < size)
        return RB_ENOSPC;
    rc = rbi_segment_grow(seg, grow_to);
    if (rc != RB_OK)
        return rc;
    rc = heap_insert(hp, size, rbi_ld(&rbi_hdr(rbi_seg_map(seg))->size) - size);
    if (rc != RB_OK)
        return rc;
    /* Fits now (the merged tail); the grown bytes need no backing. */
    return heap_take(seg, bytes, size, off);
}

/* Milliseconds of a monotonic clock. */
static uint64_t heap_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Gives back the pages of the free runs from hp->release_at on, in pieces
 * of RBI_RELEASE_PIECE bytes (whole grains), until every run is done or
 * RBI_RELEASE_MS have passed: a release costs about 0.3 ms per MB freed,
 * so one call never holds the writer (the daemon's loop) longer than that
 * and the next call goes on from where this one stopped.  1 when nothing
 * is left pending, else 0. */
static int heap_release(rb_segment_t *seg)
{
    rbi_heap_t *hp = &seg->heap;
    rbi_map_t *m = rbi_seg_map(seg);
    uint64_t g = heap_grain(m), t0 = heap_ms();

    for (size_t i = 0; i < hp->n; i++) {
        uint64_t a = hp->free[i].off, end = a + hp->free[i].len;
        if (end <= hp->release_at)
            continue;
        if (a < hp->release_at)
            a = hp->release_at;
        while (a < end) {
            uint64_t b = end - a > RBI_RELEASE_PIECE ? a + RBI_RELEASE_PIECE : end;
            if (b < end)
                b -= b % g;   /* pieces meet on a grain: none is left out */
            if (b <= a)
                b = end;
            heap_punch(m, a, b - a);
            hp->release_at = a = b;
            if (a < end && heap_ms() - t0 >= RBI_RELEASE_MS)
                return 0;
        }
        if (i + 1 < hp->n && heap_ms() - t0 >= RBI_RELEASE_MS) {
            hp->release_at = hp->free[i + 1].off;
            return 0;
        }
    }
    hp->release_at = UINT64_MAX;
    hp->unreleased = 0;
    return 1;
}

void rbi_heap_free(rb_segment_t *seg, uint64_t off, uint64_t bytes)
{
    rbi_heap_t *hp = &seg->heap;
    size_t i = 0;

    bytes = rbi_round_up(bytes, RBI_ALIGN);
    /* The list was built by the allocation that gave the extent.  A failed
     * insert (no memory for the list) only leaks the extent
     * until the next takeover rebuilds the list. */
    if (heap_insert(hp, off, bytes) != RB_OK)
        return;
    /* The caller unpublished the extent first (R1, the ring's latch): no
     * reader can reach it any more, so its pages may go, from the start of
     * the free run it joined. */
    while (i + 1 < hp->n && hp->free[i].off + hp->free[i].len <= off)
        i++;
    hp->unreleased += bytes;
    if (hp->free[i].off < hp->release_at)
        hp->release_at = hp->free[i].off;
    if (seg->snap != NULL)
        return;   /* S1: no punch until the dump ends (rb_segment_trim) */
    (void)heap_release(seg);
}

int rb_segment_trim(rb_segment_t *seg, int sweep)
{
    rbi_heap_t *hp;

    if (seg == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if (seg->snap != NULL)
        return RB_EBUSY;
    hp = &seg->heap;
    if (sweep && hp->release_at == UINT64_MAX)
        hp->release_at = 0;
    if (hp->release_at != UINT64_MAX)
        (void)heap_release(seg);
    return RB_OK;
}

static int extent_cmp(const void *a, const void *b)
{
    const rbi_extent_t *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

int rbi_heap_rebuild(rb_segment_t *seg, rbi_extent_t *live, size_t nlive)
{
    const rb_header_shm_t *h = rbi_hdr(rbi_seg_map(seg));
    uint64_t size = rbi_ld(&h->size), pos = rbi_ld(&h->heap_offset);
    rbi_heap_t fresh = { NULL, 0, 0, 1, 0, 0 };
    int rc;

    if (nlive > 0)
        qsort(live, nlive, sizeof(*live), extent_cmp);
    for (size_t i = 0; i < nlive; i++) {
        /* The length is checked before it is rounded: a length near 2^64
         * would round to a small one. */
        uint64_t len = live[i].len <= size ? rbi_round_up(live[i].len, RBI_ALIGN) : UINT64_MAX;
        if (live[i].off < pos || live[i].off % RBI_ALIGN != 0 ||
            !rbi_span_ok(size, live[i].off, len)) {
            heap_destroy(&fresh);
            return RB_ECORRUPT;   /* overlapping or out of range */
        }
        if ((rc = heap_insert(&fresh, pos, live[i].off - pos)) != RB_OK) {
            heap_destroy(&fresh);
            return rc;
        }
        pos = live[i].off + len;
    }
    if ((rc = heap_insert(&fresh, pos, size - pos)) != RB_OK) {
        heap_destroy(&fresh);
        return rc;
    }
    /* Free space the previous writer may not have given back (it stopped
     * during a snapshot): the next rb_segment_trim sweeps it. */
    for (size_t i = 0; i < fresh.n; i++)
        fresh.unreleased += fresh.free[i].len;
    heap_destroy(&seg->heap);
    seg->heap = fresh;
    return RB_OK;
}
