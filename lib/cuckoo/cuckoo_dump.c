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

#include "cuckoo_impl.h"
#include "snap.h"

#define DUMP_MAGIC   "RBCFDUMP"
#define DUMP_VERSION 1u

_Static_assert(RBI_CUCKOO_DUMP_FIXED == 56 + RBI_SECRET_BYTES, "header layout");

typedef struct dump_arg {
    int64_t iter, next;
    size_t max, len;
    unsigned char *buf;
} dump_arg_t;

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

/* The layer holding array position pos of a filter of nl layers of nb[]
 * buckets, and the offset in it; -1 past the end. */
static int locate(const rbi_cf_shape_t *s, uint32_t nl, const uint64_t *nb, uint64_t pos,
                  uint64_t *off)
{
    for (uint32_t l = 0; l < nl; l++) {
        uint64_t bytes = rbi_cf_layer_bytes(s, nb[l]);
        if (pos < bytes) {
            *off = pos;
            return (int)l;
        }
        pos -= bytes;
    }
    return -1;
}

static int dump_fn(const rbi_cf_view_t *v, void *arg)
{
    dump_arg_t *a = arg;
    uint64_t off;
    int l;

    if (a->iter == 0) {
        unsigned char hdr[RBI_CUCKOO_HEADER_MAX];
        a->len = header(v, hdr);
        if (a->buf != NULL)
            memcpy(a->buf, hdr, a->len);
        a->next = 1;
        return RB_OK;
    }
    a->len = 0;
    a->next = 0;
    if (a->iter < 0 || (l = locate(&v->s, v->nl, v->nb, (uint64_t)a->iter - 1, &off)) < 0)
        return RB_OK;
    a->len = rbi_cf_layer_bytes(&v->s, v->nb[l]) - off;
    if (a->len > a->max)
        a->len = a->max;
    a->next = a->iter + (int64_t)a->len;
    if (a->buf != NULL)
        rbi_words_get_bytes(v->arr[l], off, a->buf, a->len);
    /* The bytes of one instant between moves (the sequence re-checked). */
    return 1;
}

int rbi_cuckoo_dump(const rb_cuckoo_t *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                    size_t *len, int64_t *next)
{
    dump_arg_t a;
    int rc;

    if (h == NULL || len == NULL || next == NULL || max_chunk == 0)
        return RB_EINVAL;
    memset(&a, 0, sizeof(a));
    a.iter = iter;
    a.max = max_chunk;
    a.buf = buf;
    if ((rc = rbi_cuckoo_read(h, dump_fn, &a)) != RB_OK)
        return rc;
    *len = a.len;
    *next = a.next;
    return RB_OK;
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
    uint64_t off;
    int l, rc;

    *why = "ERR received bad data";
    if (vp == NULL && n != 0)
        return RB_EINVAL;
    if ((rc = rbi_cuckoo_wbind(seg, name, len, &v)) != RB_OK)
        return rc;
    if (iter <= 0 || (uint64_t)iter < n + 1 ||
        (l = locate(&v.s, v.nl, v.nb, (uint64_t)iter - n - 1, &off)) < 0) {
        *why = "ERR invalid offset - no link found";
        return RB_EINVAL;
    }
    if (n > rbi_cf_layer_bytes(&v.s, v.nb[l]) - off) {
        *why = "ERR invalid chunk - Too big for current filter";
        return RB_EINVAL;
    }
    rbi_snap_store_bytes(seg, v.arr[l], off, src, n);
    return RB_OK;
}
