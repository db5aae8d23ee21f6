/*
 * cbf_kind.c - the counting Bloom filter's row of the kind table (kind.h):
 * its names, its layout values, its heap extent and bytes, its delete and
 * its summary.  Apart from cbf.c and cbf_write.c because the row names
 * functions of both.
 */
#include "config.h"

#include "cbf_impl.h"
#include "kind.h"

/* ---- the kind (kind.h) ---------------------------------------------------- */

static int kind_extents(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n)
{
    rbi_cbf_shape_t s;
    uint64_t off;

    if (!rbi_cbf_slot_shape(f, size, &s, &off))
        return RB_ECORRUPT;
    out[0].off = off;
    out[0].len = rbi_cbf_bytes(&s);
    *n = 1;
    return RB_OK;
}

static uint64_t kind_heap_bytes(const rb_filter_shm_t *f)
{
    rbi_cbf_shape_t s;

    if (!rbi_cbf_shape(rbi_ld(&f->layout), rbi_ld(RBI_CBF_M(f)), rbi_ld(RBI_CBF_K(f)), &s))
        return 0;
    return rbi_round_up(rbi_cbf_bytes(&s), RBI_ALIGN);
}

/* No repair: a writer that died between two counter stores of an add or
 * a delete left some of the key's counters changed (each one whole, K1):
 * a half-done add is a key not acknowledged, a half-done delete leaves
 * the key's other counters > 0 (more false positives, never a false
 * negative for another key). */
static int kind_summary(const rb_segment_t *seg, const char *name, size_t len,
                        rb_filter_summary_t *out)
{
    rb_cbf_info_t bi;
    rb_cbf_t *h;
    int rc = rb_cbf_open(seg, name, len, &h);

    if (rc != RB_OK)
        return rc;
    rc = rb_cbf_info(h, &bi);
    rb_cbf_close(h);
    if (rc != RB_OK)
        return rc;
    out->form = bi.counter_bits == 4 ? "counting 4-bit" : "counting 8-bit";
    out->items = bi.items;
    out->capacity = bi.capacity;
    out->bytes = bi.bytes;
    out->layers = 1;
    out->error_rate = rb_cbf_fpr_formula(bi.counters, bi.k, bi.capacity);
    return RB_OK;
}

const rbi_kind_t rbi_kind_cbf = {
    .desc = { "cbf", "RBbloomCB" },   /* ours: RedisBloom has none (9 bytes, as a
                                         Redis module type's name) */
    .layout_first = RBI_LAYOUT_CBF4, .layout_last = RBI_LAYOUT_CBF8,
    .extents = kind_extents, .heap_bytes = kind_heap_bytes, .repair = NULL,
    .summary = kind_summary,
};
