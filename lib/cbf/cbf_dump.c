/*
 * cbf_dump.c - counting Bloom filters as dumps: CBF.SCANDUMP's header and
 * data chunks, and CBF.LOADCHUNK's loading of them (a header makes the
 * filter, the data chunks fill its counters).
 *
 * What: our own format with RedisBloom's iterator, as rbi_bloom_dump
 * (bloom.h): iterator 0 asks for the header, iterator i >= 1 for the
 * array bytes from position i - 1 (each 64-bit word little-endian), and
 * each chunk comes with the iterator after it.  The header (little-endian,
 * RBI_CBF_DUMP_HEADER bytes):
 *     0 "RBCBDUMP"   8 version u32 (1)   12 counter_bits u32   16 k u32
 *    20 u32 0   24 m u64   32 capacity u64   40 items u64   48 deletes u64
 *    56 saturated u64   64 error rate (double bits)   72 secret (192 bytes).
 * A filter loaded from a dump answers exactly as the one dumped (same
 * secret, same counters).  The data chunks store counters as they come,
 * which may lower some: load them into the filter their header made,
 * before it is used.  Workload: rare, operator-driven.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "cbf_impl.h"
#include "chunk.h"
#include "snap.h"

#define DUMP_MAGIC   "RBCBDUMP"
#define DUMP_VERSION 1u

static void header(const rbi_cbf_view_t *v, unsigned char *p)
{
    const rb_filter_shm_t *f = v->f;

    memset(p, 0, RBI_CBF_DUMP_HEADER);
    memcpy(p, DUMP_MAGIC, 8);
    rbi_le_put(p + 8, DUMP_VERSION, 4);
    rbi_le_put(p + 12, v->s.cb, 4);
    rbi_le_put(p + 16, v->s.k, 4);
    rbi_le_put(p + 24, v->s.m, 8);
    rbi_le_put(p + 32, rbi_ld(RBI_CBF_CAP(f)), 8);
    rbi_le_put(p + 40, rbi_ld(RBI_CBF_ITEMS(f)), 8);
    rbi_le_put(p + 48, rbi_ld(RBI_CBF_DELETES(f)), 8);
    rbi_le_put(p + 56, rbi_ld(RBI_CBF_SATURATED(f)), 8);
    rbi_le_put(p + 64, rbi_ld(RBI_CBF_ERROR(f)), 8);
    memcpy(p + 72, v->secret, RBI_SECRET_BYTES);
}

static int dump_fn(const rbi_cbf_view_t *v, void *arg)
{
    rbi_chunk_t *c = arg;
    rbi_chunk_arrays_t a = { .n = 1, .arr = { v->arr }, .bytes = { rbi_cbf_bytes(&v->s) } };

    if (c->iter == 0) {
        unsigned char hdr[RBI_CBF_DUMP_HEADER];
        header(v, hdr);
        rbi_chunk_header(c, hdr, sizeof(hdr));
    } else {
        rbi_chunk_bytes(c, &a);
    }
    return RB_OK;
}

int rbi_cbf_dump(const rb_cbf_t *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                 size_t *len, int64_t *next)
{
    rbi_chunk_t c;
    int rc;

    if (h == NULL || rbi_chunk_begin(&c, iter, max_chunk, buf, len, next) != RB_OK)
        return RB_EINVAL;
    if ((rc = rbi_cbf_read(h, dump_fn, &c)) == RB_OK)
        rbi_chunk_end(&c, len, next);
    return rc;
}

/* Header p (n bytes) into im, checked against the sizing reserve gives;
 * NULL, or what is wrong. */
static const char *parse(const unsigned char *p, size_t n, rbi_cbf_image_t *im)
{
    uint64_t bits, m;
    uint32_t k;

    if (n != RBI_CBF_DUMP_HEADER || memcmp(p, DUMP_MAGIC, 8) != 0 ||
        rbi_le_get(p + 8, 4) != DUMP_VERSION || rbi_le_get(p + 20, 4) != 0)
        return "ERR received bad data";
    im->p.counter_bits = (uint32_t)rbi_le_get(p + 12, 4);
    im->k = (uint32_t)rbi_le_get(p + 16, 4);
    im->m = rbi_le_get(p + 24, 8);
    im->p.capacity = rbi_le_get(p + 32, 8);
    im->items = rbi_le_get(p + 40, 8);
    im->deletes = rbi_le_get(p + 48, 8);
    im->saturated = rbi_le_get(p + 56, 8);
    bits = rbi_le_get(p + 64, 8);
    memcpy(&im->p.error_rate, &bits, sizeof(bits));
    memcpy(im->secret, p + 72, RBI_SECRET_BYTES);
    if (im->p.counter_bits != 4 && im->p.counter_bits != 8)
        return "ERR bad counter size";
    if (rb_cbf_size(im->p.capacity, im->p.error_rate, im->p.counter_bits, &m, &k) != RB_OK)
        return "ERR bad capacity or error rate";
    if (m != im->m || k != im->k)
        return "ERR bad filter size";
    if (im->items > im->p.capacity || im->saturated > im->m)
        return "ERR bad item count";
    return NULL;
}

int rbi_cbf_load_header(rb_segment_t *seg, const char *name, size_t len, const void *vp,
                        size_t n, const char **why)
{
    rbi_cbf_image_t im;

    *why = "ERR received bad data";
    if (seg == NULL || !rbi_name_ok(name, len) || vp == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    memset(&im, 0, sizeof(im));
    if ((*why = parse(vp, n, &im)) != NULL)
        return RB_EINVAL;
    *why = "ERR received bad data";
    return rbi_cbf_create_image(seg, name, len, &im);
}

int rbi_cbf_load_chunk(rb_segment_t *seg, const char *name, size_t len, int64_t iter,
                       const void *vp, size_t n, const char **why)
{
    const unsigned char *src = vp;
    rbi_cbf_wview_t v;
    rbi_chunk_arrays_t a = { .n = 1 };
    uint64_t off;
    uint32_t l;
    int rc;

    *why = "ERR received bad data";
    if (vp == NULL && n != 0)
        return RB_EINVAL;
    if ((rc = rbi_cbf_wbind(seg, name, len, &v)) != RB_OK)
        return rc;
    a.arr[0] = v.arr;
    a.bytes[0] = rbi_cbf_bytes(&v.s);
    if ((*why = rbi_chunk_place(&a, iter, n, &l, &off)) != NULL)
        return RB_EINVAL;
    rbi_snap_store_bytes(seg, v.arr, off, src, n);
    return RB_OK;
}
