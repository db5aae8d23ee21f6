/*
 * cuckoo_dump.c - cuckoo filters as dumps: CF.SCANDUMP's header and data
 * chunks, and CF.LOADCHUNK's loading of them (a header makes the filter,
 * the data chunks fill its arrays).
 *
 * What: our own format (RedisBloom's cuckoo dump holds its own hashing's
 * fingerprints, which ours cannot take), with RedisBloom's iterator, as
 * rbi_bloom_dump (bloom.h): iterator 0 asks for the header, iterator
 * i >= 1 for the array bytes from position i - 1 (every layer's array back
 * to back, each 64-bit word little-endian), and each chunk comes with the
 * iterator after it.  The header (little-endian, RBI_CUCKOO_DUMP_FIXED
 * bytes, then RBI_CUCKOO_DUMP_LAYER per layer):
 *     0 "RBCFDUMP"   8 version u32 (1)   12 fp_bits u32   16 bucket_size u32
 *    20 max_iterations u32   24 expansion u32   28 nlayers u32
 *    32 capacity u64   40 items u64   48 deletes u64   56 secret (192 bytes)
 *   248 per layer: nbuckets u64, items u64.
 * A filter loaded from a dump answers exactly as the one dumped (same
 * secret, same arrays).  Workload: rare, operator-driven.
 */
#include "config.h"

#include <string.h>

#include "chunk.h"
#include "cuckoo_impl.h"
#include "snap.h"

#define DUMP_MAGIC   "RBCFDUMP"
#define DUMP_VERSION 1u

_Static_assert(RBI_CUCKOO_DUMP_FIXED == 56 + RBI_SECRET_BYTES, "header layout");

/* The header of the filter v shows, into p; its length. */
static size_t header(const rbi_cf_view_t *v, unsigned char *p)
{
    const rb_filter_shm_t *f = v->f;
    size_t at = RBI_CUCKOO_DUMP_FIXED;

    memcpy(p, DUMP_MAGIC, 8);
    rbi_le_put(p + 8, DUMP_VERSION, 4);
    rbi_le_put(p + 12, v->s.fbits, 4);
    rbi_le_put(p + 16, v->s.bsize, 4);
    rbi_le_put(p + 20, rbi_ld(RBI_CF_ITERS(f)), 4);
    rbi_le_put(p + 24, rbi_ld(RBI_CF_EXPAND(f)), 4);
    rbi_le_put(p + 28, v->nl, 4);
    rbi_le_put(p + 32, rbi_ld(RBI_CF_CAP(f)), 8);
    rbi_le_put(p + 40, rbi_ld(RBI_CF_ITEMS(f)), 8);
    rbi_le_put(p + 48, rbi_ld(RBI_CF_DELETES(f)), 8);
    memcpy(p + 56, v->secret, RBI_SECRET_BYTES);
    for (uint32_t l = 0; l < v->nl; l++, at += RBI_CUCKOO_DUMP_LAYER) {
        rbi_le_put(p + at, v->nb[l], 8);
        rbi_le_put(p + at + 8, rbi_ld(&f->layer[l].items), 8);
    }
    return at;
}

/* The arrays of a filter of nl layers of nb[] buckets, in dump order. */
static void arrays_of(const rbi_cf_shape_t *s, uint32_t nl, const uint64_t *nb,
                      const _Atomic uint64_t *const *arr, rbi_chunk_arrays_t *out)
{
    out->n = nl;
    for (uint32_t l = 0; l < nl; l++) {
        out->arr[l] = arr[l];
        out->bytes[l] = rbi_cf_layer_bytes(s, nb[l]);
    }
}

static int dump_fn(const rbi_cf_view_t *v, void *arg)
{
    rbi_chunk_t *c = arg;
    rbi_chunk_arrays_t a;

    if (c->iter == 0) {
        unsigned char hdr[RBI_CUCKOO_HEADER_MAX];
        rbi_chunk_header(c, hdr, header(v, hdr));
        return RB_OK;
    }
    arrays_of(&v->s, v->nl, v->nb, v->arr, &a);
    rbi_chunk_bytes(c, &a);
    /* The bytes of one instant between moves (the sequence re-checked). */
    return 1;
}

int rbi_cuckoo_dump(const rb_cuckoo_t *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                    size_t *len, int64_t *next)
{
    rbi_chunk_t c;
    int rc;

    if (h == NULL || rbi_chunk_begin(&c, iter, max_chunk, buf, len, next) != RB_OK)
        return RB_EINVAL;
    if ((rc = rbi_cuckoo_read(h, dump_fn, &c)) == RB_OK)
        rbi_chunk_end(&c, len, next);
    return rc;
}

/* The fixed fields of header p (n bytes) into im, checked; NULL, or what
 * is wrong. */
static const char *parse_fixed(const unsigned char *p, size_t n, rbi_cf_image_t *im)
{
    uint64_t e;

    if (n < RBI_CUCKOO_DUMP_FIXED || memcmp(p, DUMP_MAGIC, 8) != 0 || rbi_le_get(p + 8, 4) != DUMP_VERSION)
        return "ERR received bad data";
    im->p.fp_bits = (uint32_t)rbi_le_get(p + 12, 4);
    im->p.bucket_size = (uint32_t)rbi_le_get(p + 16, 4);
    im->p.max_iterations = (uint32_t)rbi_le_get(p + 20, 4);
    e = rbi_le_get(p + 24, 4);
    im->nlayers = (uint32_t)rbi_le_get(p + 28, 4);
    im->p.capacity = rbi_le_get(p + 32, 8);
    im->items = rbi_le_get(p + 40, 8);
    im->deletes = rbi_le_get(p + 48, 8);
    memcpy(im->secret, p + 56, RBI_SECRET_BYTES);
    if (im->p.fp_bits != 8 && im->p.fp_bits != 12 && im->p.fp_bits != 16)
        return "ERR bad fingerprint size";
    if (im->p.bucket_size < 1 || im->p.bucket_size > RB_CUCKOO_MAX_BUCKET)
        return "ERR bad bucket size";
    if (im->p.max_iterations < 1 || im->p.max_iterations > RB_CUCKOO_MAX_ITERATIONS)
        return "ERR bad max iterations";
    if (e > RB_CUCKOO_MAX_EXPANSION || (e & (e - 1)) != 0)
        return "ERR bad expansion";
    im->p.expansion = (uint32_t)e;
    if (im->p.capacity < 1 || im->p.capacity > RB_CUCKOO_MAX_CAPACITY)
        return "ERR bad capacity";
    if (im->nlayers < 1 || im->nlayers > RB_BLOOM_MAX_LAYERS || (e == 0 && im->nlayers != 1))
        return "ERR bad number of filters";
    if (n != RBI_CUCKOO_DUMP_FIXED + (size_t)im->nlayers * RBI_CUCKOO_DUMP_LAYER)
        return "ERR received bad data";
    return NULL;
}

/* The layers of header p into im, checked against the sizes growth
 * gives and the counters; NULL, or what is wrong. */
static const char *parse_layers(const unsigned char *p, rbi_cf_image_t *im)
{
    uint64_t want = rbi_cf_first_nbuckets(im->p.capacity, im->p.bucket_size), sum = 0;
    size_t at = RBI_CUCKOO_DUMP_FIXED;

    for (uint32_t l = 0; l < im->nlayers; l++, at += RBI_CUCKOO_DUMP_LAYER) {
        im->nbuckets[l] = rbi_le_get(p + at, 8);
        im->litems[l] = rbi_le_get(p + at + 8, 8);
        if (im->nbuckets[l] != want || !rbi_cf_nbuckets_ok(want))
            return "ERR bad filter size";
        if (im->litems[l] > want * im->p.bucket_size)
            return "ERR bad item count";
        sum += im->litems[l];
        if (im->p.expansion != 0 && want > RBI_CF_MAX_NBUCKETS / im->p.expansion &&
            l + 1 < im->nlayers)
            return "ERR bad filter size";
        want *= im->p.expansion;
    }
    return sum == im->items ? NULL : "ERR bad item count";
}

int rbi_cuckoo_load_header(rb_segment_t *seg, const char *name, size_t len, const void *vp,
                           size_t n, const char **why)
{
    rbi_cf_image_t im;
    int rc;

    *why = "ERR received bad data";
    if (seg == NULL || !rbi_name_ok(name, len) || vp == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    memset(&im, 0, sizeof(im));
    if ((*why = parse_fixed(vp, n, &im)) != NULL || (*why = parse_layers(vp, &im)) != NULL)
        return RB_EINVAL;
    *why = "ERR received bad data";
    rc = rbi_cuckoo_create_image(seg, name, len, &im);
    return rc;
}

int rbi_cuckoo_load_chunk(rb_segment_t *seg, const char *name, size_t len, int64_t iter,
                          const void *vp, size_t n, const char **why)
{
    const unsigned char *src = vp;
    rbi_cf_wview_t v;
    rbi_chunk_arrays_t a;
    uint64_t off;
    uint32_t l;
    int rc;

    *why = "ERR received bad data";
    if (vp == NULL && n != 0)
        return RB_EINVAL;
    if ((rc = rbi_cuckoo_wbind(seg, name, len, &v)) != RB_OK)
        return rc;
    arrays_of(&v.s, v.nl, v.nb, (const _Atomic uint64_t *const *)v.arr, &a);
    if ((*why = rbi_chunk_place(&a, iter, n, &l, &off)) != NULL)
        return RB_EINVAL;
    rbi_snap_store_bytes(seg, v.arr[l], off, src, n);
    return RB_OK;
}
