/*
 * kind.c - filter kinds: the table of what the segment-level code needs
 * from a directory slot whatever kind of filter it holds, and the two walks
 * over the directory that use it (adopting a segment, rb_segment_info).
 *
 * What: a slot's `layout` word names its kind (format.h).  Each kind is one
 * rbi_kind_t (kind.h) in the file(s) that implement it; a new kind is that
 * file plus one entry in kinds[] below (and, if a dead writer can leave
 * its slot unreadable, a repair).  Why a table: adopt.c and
 * rb_segment_info must account for every live slot (its heap extents, its
 * bytes) without knowing how a kind lays out its arrays, and must refuse a
 * slot of a kind this library does not know rather than free its extents.
 * Readers' and writers' hot paths never come here.
 */
#include "config.h"

#include <sys/stat.h>

#include "kind.h"
#include "segment.h"
#include "util.h"

static const rbi_kind_t *const kinds[] = { &rbi_kind_bloom, &rbi_kind_hll, &rbi_kind_cms,
                                            &rbi_kind_cuckoo, &rbi_kind_cbf };

/* The kind of slot f by its layout word, or NULL if no kind owns it. */
static const rbi_kind_t *kind_of(const rb_filter_shm_t *f)
{
    uint64_t layout = rbi_ld(&f->layout);

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (layout >= kinds[i]->layout_first && layout <= kinds[i]->layout_last)
            return kinds[i];
    return NULL;
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
    const rbi_kind_t *k;

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
