/*
 * bloom_dump.c - Bloom filters as dumps: BF.SCANDUMP's header and data
 * chunks, and BF.LOADCHUNK's loading of them (a header makes the filter,
 * the data chunks fill its arrays).
 *
 * What: two formats with one iterator.  A filter of layout redisbloom
 * dumps in RedisBloom 2.6's format, byte for byte (its packed
 * dumpedChainHeader: items, filter count, options, growth, then per layer
 * bytes, bits, items, error, bits per entry, hashes, entries, n2), so
 * RedisBloom loads it and it loads RedisBloom's; every other filter in
 * ours (magic "RBLMDUMP", the slot's parameters and counters, its hash
 * secret, each layer's shape: docs/design.md, "Dumps"), so a filter moved
 * from one ringbloomd to another answers exactly as before.  Data chunks
 * are the arrays' bytes, little-endian words back to back, layer after
 * layer; iterator 0 asks for the header, iterator i >= 1 for the bytes from
 * position i - 1, and each chunk comes with the iterator after it
 * (RedisBloom's semantics).  Why here: both directions of both formats in
 * one place, above the reader (sections) and the writer (reserve).
 * Workload: rare, operator-driven; a chunk is at most 16 MiB.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "bloom.h"
#include "chunk.h"
#include "snap.h"

#define OURS_MAGIC   "RBLMDUMP"
#define OURS_VERSION 1u
#define OURS_FIXED   280u   /* header bytes before the layers */
#define OURS_LAYER   40u    /* per layer: bits, k, capacity, items, error */
#define RB_FIXED     20u    /* RedisBloom: size u64, nfilters u32, options u32, growth u32 */
#define RB_LINK      53u    /* per link, packed: 5 x u64/double, u32 hashes, u64, u8 n2 */
#define RB_NOROUND   1u     /* RedisBloom's BLOOM_OPT_* */
#define RB_FORCE64   4u
#define RB_NOSCALE   8u
#define RB_TIGHTEN   0.5    /* its first layer's error: p / 2 unless non-scaling */

_Static_assert(RBI_DUMP_HEADER_MAX >= OURS_FIXED + OURS_LAYER * RB_BLOOM_MAX_LAYERS &&
               RBI_DUMP_HEADER_MAX >= RB_FIXED + RB_LINK * RB_BLOOM_MAX_LAYERS,
               "a header of either format fits");

static uint64_t dbits(double d)
{
    uint64_t u;

    memcpy(&u, &d, sizeof(u));
    return u;
}

static double dval(uint64_t u)
{
    double d;

    memcpy(&d, &u, sizeof(d));
    return d;
}

/* ---- the image of a live filter -------------------------------------------- */

typedef struct dump_arg {
    rbi_bloom_image_t im;
    rbi_chunk_arrays_t arrays;   /* its layers' arrays and bytes (chunk.h) */
    rbi_chunk_t c;               /* dump_chunk */
    /* load_chunk */
    rb_segment_t *seg;
    int64_t iter;
    size_t len;
    const unsigned char *src;
    const char *why;
} dump_arg_t;

/* The filter of section s as an image, and its arrays. */
static void image_of(const rbi_bloom_section_t *s, dump_arg_t *a)
{
    const rb_filter_shm_t *f = s->b->slot;
    rbi_bloom_image_t *im = &a->im;

    im->layout = (rb_bloom_layout_t)s->b->layout;
    im->flags = (uint32_t)rbi_ld(&f->flags);
    im->expansion = (uint32_t)rbi_ld(&f->expansion);
    im->nlayers = s->nlayers;
    im->current = (uint32_t)rbi_ld(&f->current);
    im->items = rbi_ld(&f->items);
    im->capacity = rbi_ld(&f->capacity);
    im->window = rbi_ld(&f->window);
    im->rotations = rbi_ld(&f->rotations);
    im->rotated_at = rbi_ld(&f->rotated_at);
    im->created = rbi_ld(&f->created);
    im->error_rate = rbi_load_double(&f->error_bits);
    memcpy(im->secret, s->b->secret, sizeof(im->secret));
    for (uint32_t l = 0; l < s->nlayers; l++) {
        im->layer[l].bits = s->layer[l].bits;
        im->layer[l].k = s->layer[l].k;
        im->layer[l].capacity = rbi_ld(&f->layer[l].capacity);
        im->layer[l].items = rbi_ld(&f->layer[l].items);
        im->layer[l].error = rbi_load_double(&f->layer[l].error_bits);
        a->arrays.arr[l] = s->layer[l].arr;
        a->arrays.bytes[l] = s->layer[l].bits / 8;
    }
    a->arrays.n = s->nlayers;
}

/* ---- headers ----------------------------------------------------------------- */

/* RedisBloom's dumpedChainHeader of im into p; its length. */
static size_t rb_header(const rbi_bloom_image_t *im, unsigned char *p)
{
    rbi_le_put(p, im->items, 8);
    rbi_le_put(p + 8, im->nlayers, 4);
    rbi_le_put(p + 12, RB_NOROUND | RB_FORCE64 | ((im->flags & RB_BLOOM_NONSCALING) ? RB_NOSCALE : 0),
           4);
    rbi_le_put(p + 16, im->expansion, 4);
    for (uint32_t l = 0; l < im->nlayers; l++) {
        const rbi_bloom_image_layer_t *il = &im->layer[l];
        unsigned char *q = p + RB_FIXED + RB_LINK * l;
        rbi_le_put(q, il->bits / 8, 8);
        rbi_le_put(q + 8, il->bits, 8);
        rbi_le_put(q + 16, il->items, 8);
        rbi_le_put(q + 24, dbits(il->error), 8);
        rbi_le_put(q + 32, dbits(rbi_bloom_rb_bpe(il->error)), 8);
        rbi_le_put(q + 40, il->k, 4);
        rbi_le_put(q + 44, il->capacity, 8);
        q[52] = 0;   /* n2: not a power of two (NOROUND) */
    }
    return RB_FIXED + RB_LINK * im->nlayers;
}

/* Our header of im into p; its length. */
static size_t ours_header(const rbi_bloom_image_t *im, unsigned char *p)
{
    memcpy(p, OURS_MAGIC, 8);
    rbi_le_put(p + 8, OURS_VERSION, 4);
    rbi_le_put(p + 12, (uint64_t)im->layout, 4);
    rbi_le_put(p + 16, im->flags, 4);
    rbi_le_put(p + 20, im->expansion, 4);
    rbi_le_put(p + 24, im->nlayers, 4);
    rbi_le_put(p + 28, im->current, 4);
    rbi_le_put(p + 32, im->items, 8);
    rbi_le_put(p + 40, im->capacity, 8);
    rbi_le_put(p + 48, dbits(im->error_rate), 8);
    rbi_le_put(p + 56, im->window, 8);
    rbi_le_put(p + 64, im->rotations, 8);
    rbi_le_put(p + 72, im->rotated_at, 8);
    rbi_le_put(p + 80, im->created, 8);
    memcpy(p + 88, im->secret, RBI_SECRET_BYTES);
    for (uint32_t l = 0; l < im->nlayers; l++) {
        const rbi_bloom_image_layer_t *il = &im->layer[l];
        unsigned char *q = p + OURS_FIXED + OURS_LAYER * l;
        rbi_le_put(q, il->bits, 8);
        rbi_le_put(q + 8, il->k, 8);
        rbi_le_put(q + 16, il->capacity, 8);
        rbi_le_put(q + 24, il->items, 8);
        rbi_le_put(q + 32, dbits(il->error), 8);
    }
    return OURS_FIXED + OURS_LAYER * im->nlayers;
}

int rbi_bloom_dump_format(const void *vp, size_t n)
{
    const unsigned char *p = vp;

    if (n >= 8 && memcmp(p, OURS_MAGIC, 8) == 0)
        return 1;
    if (n >= RB_FIXED && rbi_le_get(p + 8, 4) >= 1 &&
        n == RB_FIXED + RB_LINK * rbi_le_get(p + 8, 4))
        return 2;
    return 0;
}

/* A RedisBloom header p[0 .. n) as an image: only what RedisBloom 2.6
 * creates (64-bit hashes, NOROUND sizing), each link exactly as its
 * bloom_init would size it for its entries and error, the counts adding
 * up.  0, or -1 with *why. */
static int rb_parse(const unsigned char *p, size_t n, rbi_bloom_image_t *im, const char **why)
{
    uint64_t nl = rbi_le_get(p + 8, 4), opts = rbi_le_get(p + 12, 4), sum = 0;

    memset(im, 0, sizeof(*im));
    *why = "ERR received bad data";
    if (nl < 1 || nl > RB_BLOOM_MAX_LAYERS || n != RB_FIXED + RB_LINK * nl) {
        if (nl > RB_BLOOM_MAX_LAYERS && n == RB_FIXED + RB_LINK * nl)
            *why = "ERR the dump has more layers than a filter may have (32)";
        return -1;
    }
    if ((opts & ~(uint64_t)(RB_NOROUND | RB_FORCE64 | RB_NOSCALE)) != 0 ||
        (opts & (RB_NOROUND | RB_FORCE64)) != (RB_NOROUND | RB_FORCE64)) {
        *why = "ERR only RedisBloom 2.x filters with 64-bit hashes load (options NOROUND|FORCE64)";
        return -1;
    }
    im->layout = RB_BLOOM_REDISBLOOM;
    im->flags = (opts & RB_NOSCALE) ? RB_BLOOM_NONSCALING : 0;
    im->items = rbi_le_get(p, 8);
    im->nlayers = (uint32_t)nl;
    im->expansion = (uint32_t)rbi_le_get(p + 16, 4);
    if (im->expansion < 1 || im->expansion > RB_BLOOM_MAX_EXPANSION)
        return -1;
    for (uint32_t l = 0; l < nl; l++) {
        const unsigned char *q = p + RB_FIXED + RB_LINK * l;
        rbi_bloom_image_layer_t *il = &im->layer[l];
        rb_bloom_sizing_t sz;
        il->bits = rbi_le_get(q + 8, 8);
        il->items = rbi_le_get(q + 16, 8);
        il->error = dval(rbi_le_get(q + 24, 8));
        il->k = rbi_le_get(q + 40, 4);
        il->capacity = rbi_le_get(q + 44, 8);
        if (!(il->error > 0.0 && il->error < 1.0) || il->capacity == 0 || q[52] != 0 ||
            rbi_le_get(q, 8) != il->bits / 8 || il->bits % 64 != 0 ||
            rbi_le_get(q + 32, 8) != dbits(rbi_bloom_rb_bpe(il->error)) ||
            rb_bloom_size(il->capacity, il->error, RB_BLOOM_REDISBLOOM, &sz) != RB_OK ||
            sz.bits != il->bits || sz.k != il->k || il->items > UINT64_MAX - sum)
            return -1;
        sum += il->items;
    }
    if (sum != im->items)
        return -1;
    im->capacity = im->layer[0].capacity;
    im->error_rate = im->layer[0].error / (im->flags ? 1.0 : RB_TIGHTEN);
    if (!(im->error_rate < 1.0))
        return -1;
    im->created = im->rotated_at = (uint64_t)time(NULL);
    return 0;
}

/* Our header p[0 .. n) as an image (its shapes checked by
 * rbi_bloom_reserve_image).  0, or -1 with *why. */
static int ours_parse(const unsigned char *p, size_t n, rbi_bloom_image_t *im, const char **why)
{
    uint64_t nl;

    memset(im, 0, sizeof(*im));
    *why = "ERR received bad data";
    if (n < OURS_FIXED || rbi_le_get(p + 8, 4) != OURS_VERSION)
        return -1;
    nl = rbi_le_get(p + 24, 4);
    if (nl < 1 || nl > RB_BLOOM_MAX_LAYERS || n != OURS_FIXED + OURS_LAYER * nl)
        return -1;
    im->layout = (rb_bloom_layout_t)rbi_le_get(p + 12, 4);
    if (im->layout != RB_BLOOM_STANDARD && im->layout != RB_BLOOM_BLOCKED) {
        *why = "ERR bad layout in the dump (a redisbloom filter dumps in RedisBloom's format)";
        return -1;
    }
    im->flags = (uint32_t)rbi_le_get(p + 16, 4);
    im->expansion = (uint32_t)rbi_le_get(p + 20, 4);
    im->nlayers = (uint32_t)nl;
    im->current = (uint32_t)rbi_le_get(p + 28, 4);
    im->items = rbi_le_get(p + 32, 8);
    im->capacity = rbi_le_get(p + 40, 8);
    im->error_rate = dval(rbi_le_get(p + 48, 8));
    im->window = rbi_le_get(p + 56, 8);
    im->rotations = rbi_le_get(p + 64, 8);
    im->rotated_at = rbi_le_get(p + 72, 8);
    im->created = rbi_le_get(p + 80, 8);
    memcpy(im->secret, p + 88, RBI_SECRET_BYTES);
    for (uint32_t l = 0; l < nl; l++) {
        const unsigned char *q = p + OURS_FIXED + OURS_LAYER * l;
        im->layer[l].bits = rbi_le_get(q, 8);
        im->layer[l].k = rbi_le_get(q + 8, 8);
        im->layer[l].capacity = rbi_le_get(q + 16, 8);
        im->layer[l].items = rbi_le_get(q + 24, 8);
        im->layer[l].error = dval(rbi_le_get(q + 32, 8));
    }
    return 0;
}

int rbi_bloom_load_header(rb_segment_t *seg, const char *name, size_t len, const void *vp,
                          size_t n, const char **why)
{
    const unsigned char *p = vp;
    rbi_bloom_image_t im;
    int fmt = rbi_bloom_dump_format(p, n), rc;

    *why = "ERR received bad data";
    if (fmt == 0)
        return RB_EINVAL;
    if ((fmt == 1 ? ours_parse(p, n, &im, why) : rb_parse(p, n, &im, why)) != 0)
        return RB_EINVAL;
    rc = rbi_bloom_reserve_image(seg, name, len, &im);
    if (rc == RB_EINVAL)
        *why = "ERR received bad data (the header describes no filter we can make)";
    return rc;
}

/* ---- data chunks ------------------------------------------------------------- */

static int dump_fn(const rbi_bloom_section_t *s, void *arg)
{
    dump_arg_t *a = arg;

    image_of(s, a);
    if (a->c.iter == 0) {
        unsigned char hdr[RBI_DUMP_HEADER_MAX];
        rbi_chunk_header(&a->c, hdr, a->im.layout == RB_BLOOM_REDISBLOOM
                                         ? rb_header(&a->im, hdr) : ours_header(&a->im, hdr));
    } else {
        rbi_chunk_bytes(&a->c, &a->arrays);
    }
    return RB_OK;
}

int rbi_bloom_dump(const rb_bloom_t *bf, int64_t iter, size_t max_chunk, unsigned char *buf,
                   size_t *len, int64_t *next)
{
    dump_arg_t a;
    int rc;

    memset(&a, 0, sizeof(a));
    if (bf == NULL || rbi_chunk_begin(&a.c, iter, max_chunk, buf, len, next) != RB_OK)
        return RB_EINVAL;
    if ((rc = rbi_bloom_read(bf, dump_fn, &a)) == RB_OK)
        rbi_chunk_end(&a.c, len, next);
    return rc;
}

/* Stores a->src[0 .. a->len) at array position a->iter - a->len - 1: whole
 * 64-bit words, each merged with the bytes it keeps (a chunk may start or
 * end inside a word), each touched first for a snapshot in progress (S1,
 * snap.h).  Readers see every word before or after the store. */
static int load_fn(const rbi_bloom_section_t *s, void *arg)
{
    dump_arg_t *a = arg;
    uint64_t off;
    uint32_t l;

    image_of(s, a);
    if ((a->why = rbi_chunk_place(&a->arrays, a->iter, a->len, &l, &off)) != NULL)
        return RB_EINVAL;
    rbi_snap_store_bytes(a->seg, (_Atomic uint64_t *)a->arrays.arr[l], off, a->src, a->len);
    return RB_OK;
}

int rbi_bloom_load_chunk(rb_bloom_t *bf, int64_t iter, const void *p, size_t n,
                         const char **why)
{
    dump_arg_t a;
    int rc;

    *why = "ERR received bad data";
    if (bf == NULL || (p == NULL && n != 0))
        return RB_EINVAL;
    if (!bf->seg->writable)
        return RB_EROFS;
    if (iter <= 0 || (uint64_t)iter < n)
        return RB_EINVAL;
    memset(&a, 0, sizeof(a));
    a.iter = iter;
    a.len = n;
    a.src = p;
    a.seg = (rb_segment_t *)bf->seg;
    rc = rbi_bloom_read(bf, load_fn, &a);
    if (rc == RB_EINVAL && a.why != NULL)
        *why = a.why;
    return rc;
}
