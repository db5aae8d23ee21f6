/*
 * kind.c - filter kinds: the table of what kind-blind code needs from a
 * directory slot whatever kind of filter it holds, the walks over the
 * directory that use it (adopting a segment, rb_segment_info and
 * rb_segment_memory), and the
 * kind-neutral public calls (ringbloom/filter.h: the kinds, the kind of a
 * name, the listing with kinds, delete and summary of any kind).
 *
 * What: a slot's `layout` word names its kind (format.h).  Each kind is one
 * rbi_kind_t (kind.h) in the file(s) that implement it; a new kind is those
 * files plus its declaration and entry in kinds[] below.  Why a table: adopt.c and
 * rb_segment_info must account for every live slot (its heap extents, its
 * bytes) without knowing how a kind lays out its arrays, and must refuse a
 * slot of a kind this library does not know rather than free its extents;
 * the daemon and the CLI answer TYPE, DEL, SCAN TYPE, INFO and `filters`
 * from it.  Readers' and writers' hot paths never come here.
 */
#include "config.h"

#include <sys/stat.h>

#include "dir.h"
#include "kind.h"
#include "segment.h"
#include "util.h"

/* The kinds: each row is defined in its kind's folder (kind.h). */
extern const rbi_kind_t rbi_kind_bloom;    /* bloom/bloom_kind.c */
extern const rbi_kind_t rbi_kind_hll;      /* hll/hll.c */
extern const rbi_kind_t rbi_kind_cms;      /* cms/cms.c */
extern const rbi_kind_t rbi_kind_cuckoo;   /* cuckoo/cuckoo.c */
extern const rbi_kind_t rbi_kind_cbf;      /* cbf/cbf_kind.c */

static const rbi_kind_t *const kinds[] = { &rbi_kind_bloom, &rbi_kind_hll, &rbi_kind_cms,
                                            &rbi_kind_cuckoo, &rbi_kind_cbf };

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const rbi_kind_t *rbi_kind_of(uint64_t layout)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (layout >= kinds[i]->layout_first && layout <= kinds[i]->layout_last)
            return kinds[i];
    return NULL;
}

/* The kind of slot f by its layout word, or NULL if no kind owns it. */
static const rbi_kind_t *kind_of(const rb_filter_shm_t *f)
{
    return rbi_kind_of(rbi_ld(&f->layout));
}

int rbi_kind_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n)
{
    uint64_t size = rbi_seg_size(m);

    *n = 0;
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        const rb_filter_shm_t *f = rbi_dir_slot(m, i);
        const rbi_kind_t *k;
        size_t got = 0;
        int rc;
        if (rbi_ld(&f->state) != RBI_FILTER_LIVE)
            continue;
        if ((k = kind_of(f)) == NULL)
            return RB_ECORRUPT;
        if ((rc = k->extents(f, size, out + *n, &got)) != RB_OK)
            return rc;
        *n += got;
    }
    return RB_OK;
}

int rbi_kind_repair(rbi_map_t *m)
{
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        rb_filter_shm_t *f = rbi_dir_slot(m, i);
        const rbi_kind_t *k;
        int rc;
        if (rbi_ld(&f->state) != RBI_FILTER_LIVE || (k = kind_of(f)) == NULL ||
            k->repair == NULL)
            continue;
        if ((rc = k->repair(f)) != RB_OK)
            return rc;
    }
    return RB_OK;
}

int rb_segment_info(const rb_segment_t *seg, rb_segment_info_t *out)
{
    const rb_header_shm_t *h;
    const rbi_map_t *m;
    struct stat st;
    uint64_t used;
    uint32_t live = 0;
    const rbi_kind_t *k = NULL;

    if (seg == NULL || out == NULL)
        return RB_EINVAL;
    m = rbi_seg_map(seg);
    h = rbi_hdr(m);
    used = rbi_ld(&h->heap_offset);
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        rb_filter_shm_t *f = rbi_dir_slot(m, i);
        if (rbi_ld(&f->state) != RBI_FILTER_LIVE)
            continue;
        live++;
        if ((k = kind_of(f)) != NULL)
            used += k->heap_bytes(f);
    }
    for (int c = 0; c < 2; c++)
        used += rbi_ld(&h->ring.copy_cap[c]);
    memset(out, 0, sizeof(*out));
    out->version = rbi_ld(&h->version);
    out->generation = rbi_ld(&h->generation);
    out->size = rbi_seg_size(m);
    out->max_size = rbi_ld(&h->max_size);
    out->used = used;
    out->writer_pid = rbi_ld(&h->writer_pid);
    out->created = rbi_ld(&h->created);
    out->heartbeat_ms = rbi_ld(&h->heartbeat_ms);
    out->filters = live;
    out->max_filters = (uint32_t)m->dir_slots;
    out->writable = seg->writable;
    if (fstat(m->fd, &st) == 0)
        out->mode = st.st_mode & 0777;
    return RB_OK;
}

int rb_segment_memory(const rb_segment_t *seg, rb_segment_memory_t *out)
{
    rb_segment_info_t si;
    struct stat st;
    int rc;

    if (out == NULL)
        return RB_EINVAL;
    if ((rc = rb_segment_info(seg, &si)) != RB_OK)
        return rc;
    memset(out, 0, sizeof(*out));
    out->used = si.used;
    out->committed = si.size;
    out->reserved = si.max_size;
    out->free = si.size > si.used ? si.size - si.used : 0;
    if (fstat(rbi_seg_map(seg)->fd, &st) == 0)
        out->resident = (uint64_t)st.st_blocks * 512u;
    out->unreleased = seg->writable ? seg->heap.unreleased : 0;
    if (seg->writable && seg->heap.n > 0) {   /* the list ends at the size */
        const rbi_extent_t *last = &seg->heap.free[seg->heap.n - 1];
        if (last->off + last->len >= si.size && last->off < si.size)
            out->tail = si.size - last->off;
    }
    return RB_OK;
}

/* ---- ringbloom/filter.h ---------------------------------------------------- */

const rb_kind_desc_t *rb_kind(size_t i)
{
    return i < NKINDS ? &kinds[i]->desc : NULL;
}

/* The row of live filter name in seg: RB_OK, RB_ENOENT, RB_EBUSY,
 * RB_ECORRUPT.  The writer asks its index (O(1)), a reader walks. */
static int row_of(const rb_segment_t *seg, const char *name, size_t len, const rbi_kind_t **k)
{
    rbi_slot_id_t id;
    int64_t i;

    if (seg->writable) {
        if ((i = rbi_dir_find((rb_segment_t *)seg, name, len)) < 0)
            return RB_ENOENT;
        id.layout = rbi_ld(&rbi_dir_slot(rbi_seg_map(seg), (uint64_t)i)->layout);
    } else if ((i = rbi_dir_lookup(rbi_reader_map(seg), name, len, &id, NULL)) < 0) {
        return (int)i;
    }
    return (*k = rbi_kind_of(id.layout)) != NULL ? RB_OK : RB_ECORRUPT;
}

int rb_filter_kind(const rb_segment_t *seg, const char *name, size_t len,
                   const rb_kind_desc_t **out)
{
    const rbi_kind_t *k = NULL;
    int rc;

    if (seg == NULL || out == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    if ((rc = row_of(seg, name, len, &k)) == RB_OK)
        *out = &k->desc;
    return rc;
}

typedef struct scan_arg {
    int (*fn)(const char *, size_t, const rb_kind_desc_t *, void *);
    void *arg;
} scan_arg_t;

static int scan_one(const char *name, size_t len, uint64_t layout, void *arg)
{
    scan_arg_t *a = arg;
    const rbi_kind_t *k = rbi_kind_of(layout);

    return a->fn(name, len, k != NULL ? &k->desc : NULL, a->arg);
}

int rb_filter_scan(const rb_segment_t *seg, uint64_t *cursor, size_t count,
                   int (*fn)(const char *, size_t, const rb_kind_desc_t *, void *), void *arg)
{
    scan_arg_t a = { fn, arg };

    if (seg == NULL || cursor == NULL || fn == NULL || count == 0)
        return RB_EINVAL;
    return rbi_dir_walk(rbi_reader_map(seg), cursor, count, scan_one, &a);
}

/* rbi_writer_find's test for a slot of any layout. */
static int any_layout(uint64_t layout)
{
    (void)layout;
    return 1;
}

int rbi_kind_delete(rb_segment_t *seg, const char *name, size_t len,
                    int (*of_kind)(uint64_t layout))
{
    rbi_extent_t ext[RBI_KIND_MAX_EXTENTS];
    const rbi_kind_t *k;
    rb_filter_shm_t *f;
    size_t n = 0;
    int rc = rbi_writer_find(seg, name, len, of_kind != NULL ? of_kind : any_layout, &f);

    if (rc != RB_OK)
        return rc;
    if ((k = kind_of(f)) == NULL)
        return RB_ECORRUPT;
    if ((rc = k->extents(f, rbi_seg_size(rbi_seg_map(seg)), ext, &n)) != RB_OK)
        return rc;
    rbi_dir_free(seg, f);   /* R1 (dir.h): before the arrays are freed */
    for (size_t i = 0; i < n; i++)
        rbi_heap_free(seg, ext[i].off, ext[i].len);
    return RB_OK;
}

int rb_filter_delete(rb_segment_t *seg, const char *name, size_t len)
{
    return rbi_kind_delete(seg, name, len, NULL);
}

int rb_filter_summary(const rb_segment_t *seg, const char *name, size_t len,
                      rb_filter_summary_t *out)
{
    const rbi_kind_t *k = NULL;
    int rc;

    if (seg == NULL || out == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    if ((rc = row_of(seg, name, len, &k)) != RB_OK)
        return rc;
    memset(out, 0, sizeof(*out));
    out->kind = &k->desc;
    out->layout = "";
    rc = k->summary(seg, name, len, out);
    /* Deleted and made again as another kind in between: not this row's. */
    return rc == RB_EWRONGTYPE ? RB_ENOENT : rc;
}
