/*
 * adopt.c - a writer adopting contents it did not make: taking over a live
 * segment (rb_segment_open_writer) and restoring a dump
 * (rb_segment_restore).
 *
 * What: before the first change, everything the header and the directory
 * name must be what a writer of this library would have made: the ring's
 * active copy parses (rbi_ring_validate), every live filter is of a kind
 * this library knows and its extents are what a reader would probe
 * (rbi_kind_extents), and no two extents overlap or leave the heap
 * (rbi_heap_rebuild, which then rebuilds the free list from them); a
 * change a dead writer left half-done inside a slot is repaired by the
 * slot's kind (rbi_kind_repair: a cuckoo filter's move).  Why
 * here: this is the one place that needs the ring, the filter kinds and the
 * heap at once, so it sits above them all and nothing below calls up.
 * A dump of segment layout 1 (an older library's ring copies) is
 * restored too: its ring's membership is read from the old copy and
 * published in this layout, so a snapshot survives an upgrade; a dump of
 * layout 2 (copies without node states) is taken as it is.  A live
 * segment of another layout is not taken over (RB_EVERSION): ringbloomd
 * then starts from its snapshot and log, which hold the same state.
 * A restore copies the header and directory, then only the heap's live
 * extents they name (each bounded by the heap, pages of zeros left out),
 * so it reads and allocates the live data, not the dump's length; nothing
 * it copied is trusted until adopt_contents has checked it all.
 * Workload: once per daemon start (takeover) or snapshot load (restore).
 */
#include "config.h"

#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#include "heap.h"
#include "kind.h"
#include "ring.h"
#include "segment.h"
#include "util.h"

/* The inactive ring copy is never read (L1) and rb_ring_publish rewrites
 * it before making it active, reusing its extent when copy_cap says it is
 * large enough.  Its two words are the previous writer's: a crash between
 * their stores, or a damaged segment, can leave a cap that is not the
 * extent's, which a publish would trust.  So the adopting writer forgets
 * the copy (its space returns to the heap) and the next publish allocates
 * one of its own.  A reader still inside that copy began before the
 * publish that retired it, so its latch check fails and it retries (L2). */
static void forget_inactive_copy(const rbi_map_t *m)
{
    rb_header_shm_t *h = rbi_hdr(m);
    unsigned inactive = (unsigned)(rbi_ld(&h->ring.seq) & 1) ^ 1;

    rbi_st(&h->ring.copy_off[inactive], 0);
    rbi_st(&h->ring.copy_cap[inactive], 0);
}

/* Checks the contents of seg's mapping and rebuilds its writer's free list
 * from the live extents.  RB_OK, RB_ECORRUPT, RB_ENOMEM. */
static int adopt_contents(rb_segment_t *seg)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    rbi_extent_t *live = malloc((2 + m->dir_slots * RBI_KIND_MAX_EXTENTS) * sizeof(*live));
    size_t nlive = 0, nfilters = 0;
    int rc;

    if (live == NULL)
        return RB_ENOMEM;
    forget_inactive_copy(m);
    rbi_ring_extents(m, live, &nlive);
    rc = rbi_kind_extents(m, live + nlive, &nfilters);
    if (rc == RB_OK)
        rc = rbi_kind_repair(rbi_seg_map(seg));   /* a dead writer's half-done change */
    if (rc == RB_OK)
        rc = rbi_heap_rebuild(seg, live, nlive + nfilters);
    free(live);
    if (rc == RB_OK)
        rc = rbi_ring_validate(seg);
    return rc == RB_OK ? rbi_ring_repair_states(seg) : rc;
}

int rb_segment_open_writer(const char *instance, rb_segment_t **out)
{
    rb_segment_t *seg;
    int rc;

    if (instance == NULL || out == NULL)
        return RB_EINVAL;
    if ((rc = rbi_segment_open_rw(instance, &seg)) != RB_OK)
        return rc;
    rbi_segment_drop_rebuild(instance);   /* only the lock's holder may */
    if ((rc = adopt_contents(seg)) != RB_OK) {
        rb_segment_close(seg);
        return rc;
    }
    rbi_segment_claim(seg);
    *out = seg;
    return RB_OK;
}

#define PAGE 4096u

/* A restore reserves (posix_fallocate) the live data alone (copy_live),
 * not the heap's free space: the allocator backs a free extent before it
 * hands it out (heap.c, heap_back), so the writer's first store into it
 * cannot fault on a full /dev/shm, and the restored object's memory is its
 * live data.  It reads and writes only the live data. */

static int all_zero(const unsigned char *p, size_t n)
{
    static const unsigned char zeros[PAGE];

    for (size_t i = 0; i < n; i += PAGE)
        if (memcmp(p + i, zeros, n - i < PAGE ? n - i : PAGE) != 0)
            return 0;
    return 1;
}

/* Copies the dump's bytes [lo, hi) (lo 8-byte aligned, inside what the dump
 * and seg hold) into seg, whose pages there it reserves first (the
 * writer's stores into live data must not fault: rbi_segment_grow), page
 * by page, leaving out pages of zeros: seg's new pages are zeros already
 * (nor, in a sparse snapshot file, are they read from disk).  RB_OK, or
 * the errno code of posix_fallocate (/dev/shm full: RB_ENOSPC). */
static int copy_live(const rbi_map_t *m, const unsigned char *d, uint64_t lo, uint64_t hi)
{
    uint64_t from = lo / PAGE * PAGE, to = (hi + PAGE - 1) / PAGE * PAGE;
    int rc = posix_fallocate(m->fd, (off_t)from, (off_t)(to - from));

    if (rc != 0)
        return rbi_errno_code(rc);
    while (lo < hi) {
        uint64_t end = (lo / PAGE + 1) * PAGE;
        if (end > hi)
            end = hi;
        if (!all_zero(d + lo, (size_t)(end - lo)))
            rbi_copy_in(rbi_word_at(m, lo), d + lo, (size_t)(end - lo));
        lo = end;
    }
    return RB_OK;
}

/* On an object no reader has mapped yet (a restore, before it goes live):
 * cuts the object and header.size down to new_size (rounded up as growth
 * rounds; never below the heap's start).  Only there: a reader holding a
 * mapping of the bytes cut would die of SIGBUS touching them, so a live
 * segment never shrinks.  RB_OK or ftruncate's errno code. */
static int cut_unborn(rb_segment_t *seg, uint64_t new_size)
{
    rbi_map_t *m = rbi_seg_map(seg);
    rb_header_shm_t *h = rbi_hdr(m);
    uint64_t heap = rbi_ld(&h->heap_offset);

    new_size = rbi_round_up(new_size < heap ? heap : new_size,
                            rbi_seg_huge(m) ? RBI_HUGE_STEP : RBI_GROW_STEP);
    if (new_size >= rbi_ld(&h->size))
        return RB_OK;
    if (ftruncate(m->fd, (off_t)new_size) != 0)
        return rbi_errno_code(errno);
    rbi_st(&h->size, new_size);
    return RB_OK;
}

/* The heap's live bytes, for a dump this layout's ring code reads: the
 * ring copies the dump's header names and the extents of every live
 * filter seg's directory (the dump's, copied) names, each clipped to the
 * heap (heap_off and size are checked and page-aligned; the offsets
 * themselves are not trusted: adopt_contents checks them next).  A slot
 * the kind table refuses fails here as it would there.  Then the object,
 * still unseen by any reader, is cut where the last of them ends: free
 * space at the dump's tail is not part of the restored object at all. */
static int copy_extents(rb_segment_t *seg, const rb_header_shm_t *dh, uint64_t heap_off,
                        uint64_t size)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    rbi_extent_t *ext = malloc((2 + m->dir_slots * RBI_KIND_MAX_EXTENTS) * sizeof(*ext));
    size_t nring = 0, nfilters = 0, n;
    uint64_t end = heap_off;
    int rc;

    if (ext == NULL)
        return RB_ENOMEM;
    rbi_ring_extents(m, ext, &nring);
    rc = rbi_kind_extents(m, ext + nring, &nfilters);
    n = nring + nfilters;
    for (size_t i = 0; i < n; i++) {   /* clipped to the heap */
        uint64_t lo = ext[i].off, hi = lo + ext[i].len;
        if (hi < lo || hi > size)
            hi = size;
        if (lo < heap_off)
            lo = heap_off;
        ext[i].off = lo;
        ext[i].len = lo < hi ? hi - lo : 0;
        if (lo < hi && hi > end)
            end = hi;
    }
    for (size_t i = 0; rc == RB_OK && i < n; i++) {
        /* Whole words, but never past the dump's size (which a dump's
         * header may give unaligned: the bytes end there). */
        uint64_t hi = (ext[i].off + ext[i].len + 7) & ~7ull;
        if (ext[i].len > 0)
            rc = copy_live(m, (const unsigned char *)dh, ext[i].off & ~7ull, hi < size ? hi : size);
    }
    free(ext);
    return rc == RB_OK ? cut_unborn(seg, end) : rc;
}

/* Copies the dump's directory, the header words a writer keeps (ring
 * latch, incarnation counter, the replicated filters' position) and its
 * heap into seg, one generation up.  The heap: only the live extents the header and the directory name
 * (whole, for a layout-1 dump, whose ring copies this layout's code does
 * not read); the rest is free, neither read, written nor reserved (a hole
 * until the allocator hands it out), and the object ends where the last
 * live extent does (copy_extents): a restart from the files also drops the
 * free tail a larger past left.  adopt_contents rebuilds the free list
 * from the same extents. */
static int restore_bytes(rb_segment_t *seg, const rb_header_shm_t *dh, int layout1)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    rb_header_shm_t *h = rbi_hdr(m);
    uint64_t size = rbi_ld(&dh->size), dir_off = rbi_ld(&dh->dir_offset);
    uint64_t heap_off = rbi_ld(&dh->heap_offset);
    int rc = rbi_segment_grow_to(seg, size, layout1);

    if (rc != RB_OK)
        return rc;
    if (!layout1 && (rc = posix_fallocate(m->fd, 0, (off_t)heap_off)) != 0)
        return rbi_errno_code(rc);
    rbi_copy_in(rbi_word_at(m, dir_off), (const unsigned char *)dh + dir_off,
                (layout1 ? size : heap_off) - dir_off);
    rbi_st(&h->ring.seq, rbi_ld(&dh->ring.seq));
    for (int c = 0; c < 2; c++) {
        rbi_st(&h->ring.copy_off[c], rbi_ld(&dh->ring.copy_off[c]));
        rbi_st(&h->ring.copy_cap[c], rbi_ld(&dh->ring.copy_cap[c]));
    }
    rbi_st(&h->next_incarnation, rbi_ld(&dh->next_incarnation));
    rbi_st(&h->repl_seq, rbi_ld(&dh->repl_seq));         /* seg_repl.h */
    rbi_st(&h->repl_stream, rbi_ld(&dh->repl_stream));
    rbi_st(&h->generation, rbi_ld(&dh->generation) + 1);
    return layout1 ? RB_OK : copy_extents(seg, dh, heap_off, size);
}

/* A dump of segment layout 1 or 2 differs from this layout in its ring
 * copies only (format.h), so its header is checked as this layout's: a
 * copy of the header page with the version word replaced.  A layout-2
 * copy is a layout-3 copy without node states (word 11 is 0: every node
 * up), restored as it is; a layout-1 copy is rebuilt (*layout1 set).
 * Else what rbi_segment_check_header says. */
static int check_dump_header(const rb_header_shm_t *dh, size_t len, int *layout1)
{
    _Alignas(64) unsigned char page[RBI_HEADER_SIZE];
    rb_header_shm_t *copy = (rb_header_shm_t *)(void *)page;

    int older = rbi_ld(&dh->magic) == RBI_MAGIC &&
                rbi_ld(&dh->version) == RBI_LAYOUT_VERSION_2;

    *layout1 = rbi_ld(&dh->magic) == RBI_MAGIC && rbi_ld(&dh->version) == RBI_LAYOUT_VERSION_1;
    if (!*layout1 && !older)
        return rbi_segment_check_header(dh, -1, len);
    memcpy(page, dh, sizeof(page));
    rbi_st(&copy->version, RBI_LAYOUT_VERSION);
    return rbi_segment_check_header(copy, -1, len);
}

/* Layout 1's ring copies, restored into seg: the membership of the active
 * one is taken into *ring (NULL if none was published) and both copies
 * are forgotten, so that the heap rebuild frees them and the caller
 * publishes *ring in this layout.  RB_OK, RB_ECORRUPT, RB_ENOMEM. */
static int take_layout1_ring(rb_segment_t *seg, rb_ring_t **ring)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    rb_header_shm_t *h = rbi_hdr(m);
    rbi_ring_view_t v;
    int rc = rbi_ring_view_open_layout1(m, (unsigned)(rbi_ld(&h->ring.seq) & 1), &v);

    *ring = NULL;
    if (rc == RB_OK && v.d != NULL && (rc = rbi_ring_from_view(&v, ring)) == RB_OK &&
        rb_ring_point_count(*ring) != v.npoints)
        rc = RB_ECORRUPT;   /* the table does not match its membership */
    for (int c = 0; c < 2; c++) {
        rbi_st(&h->ring.copy_off[c], 0);
        rbi_st(&h->ring.copy_cap[c], 0);
    }
    return rc;
}

/* rb_segment_restore into instance's object, or with suffix into the
 * object of that name (a rebuild's), which goes live only if asked. */
static int restore_as(const char *instance, const char *suffix, const rb_segment_opts_t *opts,
                      const void *dump, size_t len, rb_segment_t **out)
{
    const rb_header_shm_t *dh = dump;
    rb_segment_opts_t o = { 0, 0, 0, 0 };
    rb_ring_t *ring = NULL;
    rb_segment_t *seg;
    char name[RBI_SHM_NAME_MAX];
    int rc, layout1;

    if (dump == NULL || out == NULL)
        return RB_EINVAL;
    if (len < RBI_HEADER_SIZE || ((uintptr_t)dump & 7) != 0)
        return RB_ETRUNC;
    if ((rc = check_dump_header(dh, len, &layout1)) != RB_OK)
        return rc;
    if (opts != NULL)
        o = *opts;
    o.max_filters = (uint32_t)rbi_ld(&dh->dir_slots);
    if (o.max_size < rbi_ld(&dh->max_size))
        o.max_size = rbi_ld(&dh->max_size);
    if ((rc = rbi_segment_make(instance, suffix, &o, 0, &seg)) != RB_OK)
        return rc;
    if (suffix == NULL)
        rbi_segment_drop_rebuild(instance);   /* the name is this object's now */
    /* Everything the dump names is checked before anyone may see it. */
    rc = restore_bytes(seg, dh, layout1);
    if (rc == RB_OK && layout1)
        rc = take_layout1_ring(seg, &ring);
    if (rc == RB_OK)
        rc = adopt_contents(seg);
    if (rc == RB_OK && ring != NULL)
        rc = rb_ring_publish(ring, seg);
    rb_ring_free(ring);
    if (rc != RB_OK) {
        rb_segment_close(seg);
        if (instance != NULL &&
            rbi_shm_name(instance, suffix != NULL ? suffix : "", name, sizeof(name)) == RB_OK)
            (void)shm_unlink(name);
        return rc == RB_ENOSPC || rc == RB_ENOMEM ? rc : RB_ECORRUPT;
    }
    if (!(o.flags & RB_SEGMENT_HIDDEN))
        rb_segment_go_live(seg);
    *out = seg;
    return RB_OK;
}

int rb_segment_restore(const char *instance, const rb_segment_opts_t *opts,
                       const void *dump, size_t len, rb_segment_t **out)
{
    return restore_as(instance, NULL, opts, dump, len, out);
}

/* The object is made under a second name and renamed over the first
 * (rename(2) in RBI_SHM_DIR replaces it in one step), so a reader that
 * opens the name at any moment finds one of the two complete, live
 * objects, never none: unlinking first would leave a gap as long as the
 * copy in which attaching fails with "no such instance". */
int rb_segment_rebuild(rb_segment_t *seg, const rb_segment_opts_t *opts, rb_segment_t **out)
{
    char tmp[sizeof(RBI_SHM_DIR) + RBI_SHM_NAME_MAX], dst[sizeof(tmp)];
    rb_segment_opts_t o = { 0, 0, 0, 0 };
    const rbi_map_t *m;
    rb_segment_t *fresh;
    int rc;

    if (seg == NULL || out == NULL || seg->instance[0] == '\0')
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if (seg->snap != NULL)
        return RB_EBUSY;   /* the snapshot in progress reads this object */
    m = rbi_seg_map(seg);
    if (opts != NULL)
        o = *opts;
    o.flags |= RB_SEGMENT_HIDDEN;
    strcpy(tmp, RBI_SHM_DIR);
    strcpy(dst, RBI_SHM_DIR);
    if ((rc = rbi_shm_name(seg->instance, RBI_REBUILD_SUFFIX, tmp + strlen(tmp),
                           sizeof(tmp) - strlen(tmp))) != RB_OK ||
        (rc = rbi_shm_name(seg->instance, "", dst + strlen(dst),
                           sizeof(dst) - strlen(dst))) != RB_OK)
        return rc;
    rbi_segment_drop_rebuild(seg->instance);
    /* Between two changes of the only writer: the bytes are a state. */
    rc = restore_as(seg->instance, RBI_REBUILD_SUFFIX, &o, m->base, rbi_seg_size(m), &fresh);
    if (rc != RB_OK)
        return rc;
    rb_segment_go_live(fresh);   /* live before any reader can open it */
    if (rename(tmp, dst) != 0) {
        rc = rbi_errno_code(errno);
        rb_segment_close(fresh);
        rbi_segment_drop_rebuild(seg->instance);
        return rc;
    }
    *out = fresh;
    return RB_OK;
}
