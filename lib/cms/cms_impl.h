/*
 * cms_impl.h - what the count-min sketch's files share (cms.c, the reader
 * side and the kind; cms_write.c, the writer): the slot words a sketch
 * uses, the counter geometry and the row hashing.
 *
 * What: a sketch is a directory slot (layout RBI_CMS_LAYOUT32 or
 * RBI_CMS_LAYOUT4) plus one counter array in the heap: depth rows of
 * ceil(width / per-word) words; counter j of row r is bits
 * [(j % per) * cb, +cb) of word r * wpr + j / per (cb = 32, per = 2; or
 * cb = 4, per = 16).  The writer changes a counter by one aligned 64-bit
 * store of its word (readers see the word before or after), and replaces
 * the whole array (aging, merge) under the slot's generation section.
 * Row r of a key: fastrange(mix(h1 + r * h2), width), h1/h2 the keyed
 * XXH3-128 of the key with the sketch's secret (h2 forced odd).
 */
#ifndef RBI_CMS_IMPL_H
#define RBI_CMS_IMPL_H

#include <stdint.h>
#include <string.h>

#include "format.h"
#include "hash.h"
#include "latch.h"
#include "ringbloom/cms.h"
#include "ringbloom/segment.h"

#define RBI_CMS_LAYOUT32 RBI_LAYOUT_CMS32   /* 32-bit counters, two to a word */
#define RBI_CMS_LAYOUT4  RBI_LAYOUT_CMS4    /* 4-bit counters, sixteen to a word */

/* The slot words a sketch uses beyond the common ones (format.h; they are
 * the Bloom filter's words under other names). */
#define RBI_CMS_WIDTH(f)  (&(f)->expansion)   /*  40 counters per row */
#define RBI_CMS_DEPTH(f)  (&(f)->nlayers)     /*  48 rows */
#define RBI_CMS_COUNT(f)  (&(f)->items)       /*  56 N, halved by aging */
#define RBI_CMS_ARRAY(f)  (&(f)->capacity)    /*  80 byte offset of the counters */
#define RBI_CMS_SINCE(f)  (&(f)->current)     /*  96 increments since the last halving */
#define RBI_CMS_AGING(f)  (&(f)->window)      /* 104 W, 0: no aging */
#define RBI_CMS_AGINGS(f) (&(f)->rotations)   /* 112 halvings so far */
#define RBI_CMS_SEAL(f)   (&(f)->error_bits)  /*  88 rbi_cms_seal of the secret and
                                                      array offset (RBI_CMS_SEALED) */

/* In a sketch's flags: its seal word is kept (every writer since
 * 2026-12-05 keeps it; a sketch made before has flags 0 and is sealed by
 * the first writer that changes its secret, M1 below). */
#define RBI_CMS_SEALED (1ull << 63)

/* Invariant M1 (a merge's secret, design.md "Merge"): the secret is
 * rewritten in place, which the generation section (latch.h) does not
 * cover, so a sealed sketch's slot ties its secret to its array: seal =
 * rbi_cms_seal(secret, array offset), stored with release after both (and
 * after the array it names is built), and a reader of a sealed sketch
 * loads the seal (acquire), then the offset and the secret, and uses them
 * only if they give that seal; any other mix (a torn secret, the new
 * secret with the old array, or the reverse) gives another value (but
 * for a 2^-64 chance: the secrets are random) and is read again. */
static inline uint64_t rbi_cms_seal(const unsigned char *secret, size_t bytes, uint64_t off)
{
    uint64_t h = off;

    /* Word i rotated by i: a mix differs from both wholes by the XOR of
     * its words' differences, rotated apart (independent XORs, no chain
     * of multiplies: a few nanoseconds for the 24 words). */
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t w;
        unsigned r = (unsigned)(i / 8) & 63u;
        memcpy(&w, secret + i, 8);
        h ^= r != 0 ? (w << r) | (w >> (64u - r)) : w;
    }
    return h;
}

static inline int rbi_cms_layout(uint64_t layout)
{
    return layout == RBI_CMS_LAYOUT32 || layout == RBI_CMS_LAYOUT4;
}

/* A sketch's shape as read from its slot. */
typedef struct rbi_cms_shape {
    uint32_t width, depth, per, cbits;
    uint32_t pshift;             /* log2(per): a counter's word by a shift, not a division */
    uint64_t wpr, mask, bytes;   /* words per row, counter mask, array bytes */
} rbi_cms_shape_t;

/* The shape of a sketch of layout, width and depth; 0 if they are not
 * one a reader accepts. */
static inline int rbi_cms_shape(uint64_t layout, uint64_t width, uint64_t depth,
                                rbi_cms_shape_t *s)
{
    if (!rbi_cms_layout(layout) || width < 1 || width > RB_CMS_MAX_WIDTH || depth < 1 ||
        depth > RB_CMS_MAX_DEPTH)
        return 0;
    s->width = (uint32_t)width;
    s->depth = (uint32_t)depth;
    s->per = layout == RBI_CMS_LAYOUT4 ? 16u : 2u;
    s->pshift = layout == RBI_CMS_LAYOUT4 ? 4u : 1u;
    s->cbits = 64u / s->per;
    s->mask = layout == RBI_CMS_LAYOUT4 ? 0xFu : 0xFFFFFFFFu;
    s->wpr = (width + s->per - 1) / s->per;
    s->bytes = s->wpr * depth * 8u;
    return 1;
}

/* Counter index of the row whose seed is x (row r's: h1 + r * (h2 | 1)). */
static inline uint32_t rbi_cms_col_of(uint64_t x, uint32_t width)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)(((unsigned __int128)x * width) >> 64);
}

/* Counter index of row r for a key hashed to h. */
static inline uint32_t rbi_cms_col(rbi_h128_t h, uint32_t r, uint32_t width)
{
    return rbi_cms_col_of(h.h1 + (uint64_t)r * (h.h2 | 1u), width);
}

/* The word of counter c within its row, and its shift. */
static inline uint64_t rbi_cms_word_in_row(const rbi_cms_shape_t *s, uint32_t c,
                                           unsigned *shift)
{
    *shift = (c & (s->per - 1)) * s->cbits;
    return c >> s->pshift;
}

/* The word and the shift of counter (r, c). */
static inline uint64_t rbi_cms_word(const rbi_cms_shape_t *s, uint32_t r, uint32_t c,
                                    unsigned *shift)
{
    return (uint64_t)r * s->wpr + rbi_cms_word_in_row(s, c, shift);
}

/* The word with every counter halved (rounding down): one shift and a
 * mask that drops the bit each counter took from its neighbour. */
static inline uint64_t rbi_cms_halve(const rbi_cms_shape_t *s, uint64_t w)
{
    return (w >> 1) & (s->per == 16 ? 0x7777777777777777ULL : 0x7FFFFFFF7FFFFFFFULL);
}

/* Any process (cms.c): key's depth counters in sketch name, read in one
 * section (rows[r] for r < *depth; rows has RB_CMS_MAX_DEPTH entries): the
 * estimate is their minimum; if again is not NULL, the same counters read
 * a second time after the first pass, in the same section.  Errors as
 * rb_cms_query.  For tests that check what one reading can see (within a
 * section counters never go down: nothing lowers a published array). */
int rbi_cms_rows(const rb_segment_t *seg, const char *name, size_t len, const void *key,
                 size_t klen, uint64_t *rows, uint64_t *again, uint32_t *depth);

/* Any process (cms.c): rb_cms_query of keys[0 .. n) into est[0 .. n),
 * the sketch found once and every estimate read in one section (a
 * retried section reads them all again): what CMS.QUERY of many items
 * costs, a directory lookup once instead of once an item.  Errors as
 * rb_cms_query. */
int rbi_cms_query_many(const rb_segment_t *seg, const char *name, size_t len,
                       const rb_key_t *keys, size_t n, uint64_t *est);

/* Writer (cms_write.c): the secret of sketch name into out
 * (RB_BLOOM_SECRET_BYTES), for a sketch made to merge with it (the
 * daemon's LIKE).  RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EROFS. */
int rbi_cms_secret(rb_segment_t *seg, const char *name, size_t len, unsigned char *out);

#endif /* RBI_CMS_IMPL_H */
