/*
 * cms.c - count-min sketches, the reader side: finding a sketch by name
 * inside its slot's generation section, the query, the figures, TinyLFU's
 * admission test, RedisBloom's sizing, and the sketch kind's entry in the
 * filter-kind table (kind.h).
 *
 * What: every call is one pass over the directory; each slot is read
 * inside its own generation section (latch.h), and the slot whose name
 * matches is queried inside that same section, so the name, secret, shape
 * and array offset used all belong to one sketch at one generation.
 * Why it is safe without a lock: a counter changes only by the writer's
 * aligned store of its whole word (old or new word seen); an array is only
 * replaced (aging, merge) or freed (delete) after a generation publish,
 * so a reader that read from it sees the generation move and retries
 * (G1 / G2), and never mixes a halved array with the one before.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "bloom.h"
#include "cms_impl.h"
#include "kind.h"

/* A sketch as one section read it. */
typedef struct cms_view {
    const _Atomic uint64_t *arr;
    rbi_cms_shape_t s;
    int small;
    uint64_t count, aging, since, agings;
    unsigned char secret[RBI_SECRET_BYTES];
} cms_view_t;

typedef void (*cms_fn)(const cms_view_t *v, void *arg);

/* Inside f's section: 0 if f is not live filter name, RB_EWRONGTYPE if it
 * is one of another kind, RB_ECORRUPT if its words fail validation, 1
 * and *v filled if it is sketch name. */
static int view_read(const rbi_map_t *m, const rb_filter_shm_t *f, const char *name,
                     size_t len, cms_view_t *v)
{
    char buf[RB_FILTER_NAME_MAX + 1];
    uint64_t layout, off;

    /* Acquire pairs with the release store of LIVE: the words are set. */
    if (atomic_load_explicit(&f->state, memory_order_acquire) != RBI_FILTER_LIVE ||
        rbi_ld(&f->name_len) != len)
        return 0;
    rbi_copy_out(buf, f->name, (len + 7) / 8);
    if (memcmp(buf, name, len) != 0)
        return 0;
    layout = rbi_ld(&f->layout);
    if (!rbi_cms_layout(layout))
        return RB_EWRONGTYPE;
    if (!rbi_cms_shape(layout, rbi_ld(RBI_CMS_WIDTH(f)), rbi_ld(RBI_CMS_DEPTH(f)), &v->s))
        return RB_ECORRUPT;
    off = rbi_ld(RBI_CMS_ARRAY(f));
    if (off % RBI_ALIGN != 0 || !rbi_span_ok(rbi_seg_size(m), off, v->s.bytes))
        return RB_ECORRUPT;
    v->arr = rbi_word_at(m, off);
    v->small = layout == RBI_CMS_LAYOUT4;
    v->count = rbi_ld(RBI_CMS_COUNT(f));
    v->aging = rbi_ld(RBI_CMS_AGING(f));
    v->since = rbi_ld(RBI_CMS_SINCE(f));
    v->agings = rbi_ld(RBI_CMS_AGINGS(f));
    rbi_copy_out(v->secret, f->secret, RBI_SECRET_WORDS);
    return 1;
}

/* Runs fn on sketch name inside its slot's section, retried while the
 * generation moves.  RB_OK, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT,
 * RB_EBUSY; fn's results are those of its last run (a retried run is
 * run again whole). */
static int cms_read(const rb_segment_t *seg, const char *name, size_t len, cms_fn fn,
                    void *arg)
{
    const rbi_map_t *m;
    cms_view_t v;

    if (seg == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    m = rbi_reader_map(seg);
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        const rb_filter_shm_t *f = rbi_dir_slot(m, i);
        uint32_t t;
        int rc = 0;
        for (t = 0; t < RBI_READ_RETRIES; t++) {
            uint64_t g = rbi_gen_read_begin(&f->gen);
            rc = view_read(m, f, name, len, &v);
            if (rc == 1)
                fn(&v, arg);
            if (!rbi_gen_read_retry(&f->gen, g))
                break;
        }
        if (t == RBI_READ_RETRIES)
            return RB_EBUSY;
        if (rc != 0)
            return rc == 1 ? RB_OK : rc;
    }
    return RB_ENOENT;
}

typedef struct query_arg {
    const void *key;
    size_t klen;
    uint64_t est;
    uint64_t *rows;     /* NULL, or each row's counter */
    uint64_t *again;    /* NULL, or each row's counter read a second time */
    uint32_t depth;
} query_arg_t;

static void query_fn(const cms_view_t *v, void *arg)
{
    query_arg_t *a = arg;
    rbi_h128_t h = rbi_hash_keyed128(v->secret, sizeof(v->secret), a->key, a->klen);
    uint64_t est = UINT64_MAX;

    for (uint32_t r = 0; r < v->s.depth; r++) {
        unsigned sh;
        uint64_t w = rbi_cms_word(&v->s, r, rbi_cms_col(h, r, v->s.width), &sh);
        uint64_t c = (rbi_ld(&v->arr[w]) >> sh) & v->s.mask;
        if (a->rows != NULL)
            a->rows[r] = c;
        if (c < est)
            est = c;
    }
    a->est = est;
    a->depth = v->s.depth;
    for (uint32_t r = 0; a->again != NULL && r < v->s.depth; r++) {
        unsigned sh;
        uint64_t w = rbi_cms_word(&v->s, r, rbi_cms_col(h, r, v->s.width), &sh);
        a->again[r] = (rbi_ld(&v->arr[w]) >> sh) & v->s.mask;
    }
}

int rbi_cms_rows(const rb_segment_t *seg, const char *name, size_t len, const void *key,
                 size_t klen, uint64_t *rows, uint64_t *again, uint32_t *depth)
{
    query_arg_t a = { key, klen, 0, rows, again, 0 };
    int rc;

    if (rows == NULL || depth == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    if ((rc = cms_read(seg, name, len, query_fn, &a)) == RB_OK)
        *depth = a.depth;
    return rc;
}

int rb_cms_query(const rb_segment_t *seg, const char *name, size_t len, const void *key,
                 size_t klen, uint64_t *out)
{
    query_arg_t a = { key, klen, 0, NULL, NULL, 0 };
    int rc;

    if (out == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    if ((rc = cms_read(seg, name, len, query_fn, &a)) == RB_OK)
        *out = a.est;
    return rc;
}

typedef struct many_arg {
    const rb_key_t *keys;
    size_t n;
    uint64_t *est;
} many_arg_t;

static void many_fn(const cms_view_t *v, void *arg)
{
    const many_arg_t *a = arg;

    for (size_t i = 0; i < a->n; i++) {
        query_arg_t q = { a->keys[i].ptr, a->keys[i].len, 0, NULL, NULL, 0 };
        query_fn(v, &q);
        a->est[i] = q.est;
    }
}

int rbi_cms_query_many(const rb_segment_t *seg, const char *name, size_t len,
                       const rb_key_t *keys, size_t n, uint64_t *est)
{
    many_arg_t a = { keys, n, est };

    if ((keys == NULL || est == NULL) && n != 0)
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].ptr == NULL && keys[i].len != 0)
            return RB_EINVAL;
    return cms_read(seg, name, len, many_fn, &a);
}

static void info_fn(const cms_view_t *v, void *arg)
{
    rb_cms_info_t *o = arg;

    o->width = v->s.width;
    o->depth = v->s.depth;
    o->small = v->small;
    o->count = v->count;
    o->aging = v->aging;
    o->since_aging = v->since;
    o->agings = v->agings;
    o->bytes = v->s.bytes;
}

int rb_cms_info(const rb_segment_t *seg, const char *name, size_t len, rb_cms_info_t *out)
{
    rb_cms_info_t o;
    int rc;

    if (out == NULL)
        return RB_EINVAL;
    memset(&o, 0, sizeof(o));
    if ((rc = cms_read(seg, name, len, info_fn, &o)) == RB_OK)
        *out = o;
    return rc;
}

int rb_cms_dims(double error, double probability, uint32_t *width, uint32_t *depth)
{
    double w, d;

    if (width == NULL || depth == NULL || !(error > 0.0 && error < 1.0) ||
        !(probability > 0.0 && probability < 1.0))
        return RB_EINVAL;
    w = ceil(2.0 / error);
    d = ceil(log(probability) / log(0.5));
    if (w > RB_CMS_MAX_WIDTH || d > RB_CMS_MAX_DEPTH)
        return RB_ERANGE;
    *width = (uint32_t)w;
    *depth = d < 1.0 ? 1u : (uint32_t)d;
    return RB_OK;
}

/* The doorkeeper's estimate: 1 if its Bloom filter holds key, else 0
 * (and 0 if the pair has no doorkeeper). */
static int doorkeeper_bit(const rb_segment_t *seg, const char *name, size_t len,
                          const void *key, size_t klen, uint64_t *bit)
{
    char dk[RB_FILTER_NAME_MAX + 1];
    rb_bloom_t *bf;
    int rc;

    *bit = 0;
    if (len + sizeof(RB_TINYLFU_DOORKEEPER_SUFFIX) - 1 > RB_FILTER_NAME_MAX)
        return RB_OK;
    memcpy(dk, name, len);
    memcpy(dk + len, RB_TINYLFU_DOORKEEPER_SUFFIX, sizeof(RB_TINYLFU_DOORKEEPER_SUFFIX) - 1);
    rc = rb_bloom_open(seg, dk, len + sizeof(RB_TINYLFU_DOORKEEPER_SUFFIX) - 1, &bf);
    if (rc == RB_ENOENT)
        return RB_OK;
    if (rc != RB_OK)
        return rc;
    rc = rb_bloom_contains(bf, key, klen);
    rb_bloom_close(bf);
    if (rc < 0)
        return rc;
    *bit = rc == 1;
    return RB_OK;
}

int rb_tinylfu_admit(const rb_segment_t *seg, const char *name, size_t len, const void *cand,
                     size_t clen, const void *victim, size_t vlen, int *admit)
{
    uint64_t ce, ve, cb, vb;
    int rc;

    if (admit == NULL)
        return RB_EINVAL;
    if ((rc = rb_cms_query(seg, name, len, cand, clen, &ce)) != RB_OK ||
        (rc = rb_cms_query(seg, name, len, victim, vlen, &ve)) != RB_OK ||
        (rc = doorkeeper_bit(seg, name, len, cand, clen, &cb)) != RB_OK ||
        (rc = doorkeeper_bit(seg, name, len, victim, vlen, &vb)) != RB_OK)
        return rc;
    *admit = ce + cb > ve + vb;
    return RB_OK;
}

/* The sketch kind's extents (kind.h): its one counter array. */
static int kind_extents(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n)
{
    rbi_cms_shape_t s;
    uint64_t off = rbi_ld(RBI_CMS_ARRAY(f));

    if (!rbi_cms_shape(rbi_ld(&f->layout), rbi_ld(RBI_CMS_WIDTH(f)), rbi_ld(RBI_CMS_DEPTH(f)),
                       &s) ||
        off % RBI_ALIGN != 0 || !rbi_span_ok(size, off, s.bytes))
        return RB_ECORRUPT;
    out[0].off = off;
    out[0].len = s.bytes;
    *n = 1;
    return RB_OK;
}

static uint64_t kind_heap_bytes(const rb_filter_shm_t *f)
{
    rbi_cms_shape_t s;

    if (!rbi_cms_shape(rbi_ld(&f->layout), rbi_ld(RBI_CMS_WIDTH(f)), rbi_ld(RBI_CMS_DEPTH(f)),
                       &s))
        return 0;
    return rbi_round_up(s.bytes, RBI_ALIGN);
}

static int kind_summary(const rb_segment_t *seg, const char *name, size_t len,
                        rb_filter_summary_t *out)
{
    rb_cms_info_t cm;
    int rc = rb_cms_info(seg, name, len, &cm);

    if (rc != RB_OK)
        return rc;
    out->form = cm.small ? "count-min 4-bit" : "count-min";
    out->items = cm.count;
    out->bytes = cm.bytes;
    out->layers = cm.depth;
    out->error_rate = 2.0 / cm.width;
    return RB_OK;
}

const rbi_kind_t rbi_kind_cms = {
    .desc = { "cms", "CMSk-TYPE" },   /* RedisBloom's type name */
    .layout_first = RBI_CMS_LAYOUT32, .layout_last = RBI_CMS_LAYOUT4,
    .extents = kind_extents, .heap_bytes = kind_heap_bytes,
    .remove = rb_cms_delete, .summary = kind_summary,
};
