/*
 * cbf_impl.h - what the counting Bloom filter's files share (cbf.c, the
 * reader side and the kind; cbf_write.c, the writer; cbf_dump.c,
 * CBF.SCANDUMP / CBF.LOADCHUNK): the slot words a filter uses, the counter
 * geometry and the probes.
 *
 * What: a filter is a directory slot (layout RBI_LAYOUT_CBF4 or
 * RBI_LAYOUT_CBF8: 4- or 8-bit counters) plus one counter array in the
 * heap: m counters, counter c in bits [(c % per) * cb, +cb) of word c /
 * per (cb = 4, per = 16; or cb = 8, per = 8; m a multiple of per).
 * Probe i of a key is counter fastrange(h1 + i x h2, m), (h1, h2) the
 * keyed XXH3-128 of the key with the filter's secret, h2 forced odd;
 * a probe equal to an earlier one of the same key is skipped (the key's
 * distinct counters, rbi_cbf_probes).
 *
 * Why not the Bloom filter's blocked layout: a 512-bit block holds 128
 * 4-bit or 64 8-bit counters, too few for the load of blocks to even out
 * (the FPR would need many more counters than the formula's m, each 4-8x
 * a bit), and the counters' memory, not the one cache line, is what a
 * counting filter pays for.
 *
 * Safety without a lock (docs/design.md, "Counting Bloom filter slots"):
 *   K1: the single writer changes a counter by loading its word and
 *       storing it back changed (one aligned 64-bit store; no other thread
 *       stores these words), so a reader sees each counter before or after
 *       each change, never a mix.
 *   K2: for each counter c, value(c) >= the keys present with c among
 *       their distinct counters, or c is saturated (the maximum, never
 *       lowered again): an add raises each of its key's counters by one
 *       (saturating), a delete lowers each unsaturated one by one and only
 *       when none is 0 (a refused delete changes nothing).  So a key
 *       added and not deleted has every counter > 0 at every instant, and
 *       a reader finds it whatever order it loads them in (K1): no false
 *       negative, with no sequence to re-check.  (A delete of a key never
 *       added whose counters are all > 0 breaks K2 for other keys: the
 *       API says delete only what was added.)
 *   K3: a delete of the filter publishes the slot's generation before the
 *       array is freed (R1, bloom_write.c); readers re-check it.
 */
#ifndef RBI_CBF_IMPL_H
#define RBI_CBF_IMPL_H

#include <stdint.h>

#include "bloom.h"
#include "format.h"
#include "hash.h"
#include "latch.h"
#include "ringbloom/cbf.h"
#include "segment.h"

/* The slot words a filter uses beyond the common ones (format.h; they
 * are the Bloom filter's words under other names). */
#define RBI_CBF_K(f)         (&(f)->flags)               /*  32 probes per key */
#define RBI_CBF_ITEMS(f)     (&(f)->items)               /*  56 keys present */
#define RBI_CBF_CAP(f)       (&(f)->capacity)            /*  80 capacity as reserved */
#define RBI_CBF_ERROR(f)     (&(f)->error_bits)          /*  88 error rate (double bits) */
#define RBI_CBF_DELETES(f)   (&(f)->window)              /* 104 deletes done */
#define RBI_CBF_SATURATED(f) (&(f)->rotations)           /* 112 counters saturated */
#define RBI_CBF_ARRAY(f)     (&(f)->layer[0].array_off)  /* 576 byte offset of the counters */
#define RBI_CBF_M(f)         (&(f)->layer[0].bits)       /* 584 counters */

static inline int rbi_cbf_layout(uint64_t layout)
{
    return layout == RBI_LAYOUT_CBF4 || layout == RBI_LAYOUT_CBF8;
}

static inline uint64_t rbi_cbf_layout_of(uint32_t counter_bits)
{
    return counter_bits == 4 ? RBI_LAYOUT_CBF4 : RBI_LAYOUT_CBF8;
}

/* A filter's geometry as read from its slot. */
typedef struct rbi_cbf_shape {
    uint32_t cb, per, k;   /* counter bits, counters per word, probes */
    uint64_t max, m;       /* a counter's maximum (its mask), counters */
} rbi_cbf_shape_t;

/* The shape of layout, m and k; 0 if not one a reader accepts. */
static inline int rbi_cbf_shape(uint64_t layout, uint64_t m, uint64_t k, rbi_cbf_shape_t *s)
{
    if (!rbi_cbf_layout(layout) || k < 1 || k > RB_CBF_MAX_K)
        return 0;
    s->cb = layout == RBI_LAYOUT_CBF4 ? 4u : 8u;
    s->per = 64u / s->cb;
    s->max = (1ull << s->cb) - 1;
    s->k = (uint32_t)k;
    s->m = m;
    return m >= s->per && m <= RB_CBF_MAX_COUNTERS && m % s->per == 0;
}

/* Bytes of the counter array. */
static inline uint64_t rbi_cbf_bytes(const rbi_cbf_shape_t *s)
{
    return s->m / s->per * 8u;
}

/* Counter c of arr. */
static inline uint64_t rbi_cbf_get(const rbi_cbf_shape_t *s, const _Atomic uint64_t *arr,
                                   uint64_t c)
{
    return (rbi_ld(&arr[c / s->per]) >> (c % s->per * s->cb)) & s->max;
}

/* The key's distinct counters into c[0 .. return) (at most k). */
static inline uint32_t rbi_cbf_probes(const rbi_cbf_shape_t *s, rbi_h128_t h, uint64_t *c)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < s->k; i++) {
        uint64_t x = rbi_fastrange64(h.h1 + (uint64_t)i * h.h2, s->m);
        uint32_t j = 0;
        while (j < n && c[j] != x)
            j++;
        if (j == n)
            c[n++] = x;
    }
    return n;
}

static inline rbi_h128_t rbi_cbf_hash(const unsigned char *secret, const void *key, size_t len)
{
    rbi_h128_t h = rbi_hash_keyed128(secret, RBI_SECRET_BYTES, key, len);

    h.h2 |= 1;
    return h;
}

/* ---- cbf.c ------------------------------------------------------------------ */

/* A filter as one reader section read it. */
typedef struct rbi_cbf_view {
    const rb_filter_shm_t *f;
    rbi_cbf_shape_t s;
    const _Atomic uint64_t *arr;
    unsigned char secret[RBI_SECRET_BYTES];
} rbi_cbf_view_t;

/* What a reader's function does with one section: RB_OK or an error
 * (returned as it is once the section holds). */
typedef int (*rbi_cbf_fn)(const rbi_cbf_view_t *v, void *arg);

/* Runs fn on h's filter inside its generation section, run again whole
 * when the section fails its re-check (at most RBI_READ_RETRIES times:
 * RB_EBUSY), rebinding h by name once if its slot no longer holds its
 * filter.  RB_OK, fn's error, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT,
 * RB_EBUSY. */
int rbi_cbf_read(const rb_cbf_t *h, rbi_cbf_fn fn, void *arg);

/* ---- cbf_write.c -------------------------------------------------------------- */

/* The writer's view of a live filter. */
typedef struct rbi_cbf_wview {
    rb_filter_shm_t *f;
    rbi_cbf_shape_t s;
    _Atomic uint64_t *arr;
    uint64_t off;
} rbi_cbf_wview_t;

/* Writer: binds filter name, checked as a reader would.  RB_EINVAL,
 * RB_EROFS, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT. */
int rbi_cbf_wbind(rb_segment_t *seg, const char *name, size_t len, rbi_cbf_wview_t *v);

/* A filter as a dump describes it (cbf_dump.c): its parameters, shape
 * and counters, its array zeroed (the data chunks fill it). */
typedef struct rbi_cbf_image {
    rb_cbf_params_t p;
    unsigned char secret[RBI_SECRET_BYTES];
    uint64_t m, items, deletes, saturated;
    uint32_t k;
} rbi_cbf_image_t;

/* Writer: a live filter name as im describes it (the caller checked every
 * value as a reader would).  Errors as rb_cbf_reserve. */
int rbi_cbf_create_image(rb_segment_t *seg, const char *name, size_t len,
                         const rbi_cbf_image_t *im);

/* ---- cbf_dump.c --------------------------------------------------------------- */

#define RBI_CBF_DUMP_HEADER (72u + RBI_SECRET_BYTES)   /* header bytes */

/* CBF.SCANDUMP of filter h at iterator iter, rbi_bloom_dump's contract
 * (bloom.h): iter 0 gives the header (little-endian: magic "RBCBDUMP",
 * version u32, counter_bits u32, k u32, 4 bytes 0, m, capacity, items,
 * deletes, saturated u64, error rate (double bits), the secret), *next =
 * 1; iter >= 1 the array bytes from position iter - 1 (each word
 * little-endian), at most max_chunk of them, *next = iter + *len; past
 * the end (or iter < 0) *len = 0 and *next = 0.  buf NULL: only *len and
 * *next.  RB_EINVAL, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY. */
int rbi_cbf_dump(const rb_cbf_t *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                 size_t *len, int64_t *next);

/* Writer.  CBF.LOADCHUNK of a header (as rbi_cbf_dump gave it): creates
 * filter name as it describes, counters 0, live at once; every field
 * checked first: RB_EINVAL with *why (the reply's text) for a bad header;
 * RB_EEXIST, RB_ESLOTS, RB_ENOSPC, RB_EROFS (nothing allocated on any
 * error). */
int rbi_cbf_load_header(rb_segment_t *seg, const char *name, size_t len, const void *p,
                        size_t n, const char **why);

/* Writer.  CBF.LOADCHUNK of data: stores p[0 .. n) at array position
 * iter - n - 1, which must fall inside the array (RB_EINVAL and *why
 * otherwise), each word by one store.  RB_ENOENT, RB_EWRONGTYPE,
 * RB_ECORRUPT, RB_EROFS. */
int rbi_cbf_load_chunk(rb_segment_t *seg, const char *name, size_t len, int64_t iter,
                       const void *p, size_t n, const char **why);

/* The shape and array of live slot f within size bytes; 0 if unsound. */
static inline int rbi_cbf_slot_shape(const rb_filter_shm_t *f, uint64_t size,
                                     rbi_cbf_shape_t *s, uint64_t *off)
{
    *off = rbi_ld(RBI_CBF_ARRAY(f));
    return rbi_cbf_shape(rbi_ld(&f->layout), rbi_ld(RBI_CBF_M(f)), rbi_ld(RBI_CBF_K(f)), s) &&
           *off % RBI_ALIGN == 0 && rbi_span_ok(size, *off, rbi_cbf_bytes(s));
}

#endif /* RBI_CBF_IMPL_H */
