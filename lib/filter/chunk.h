/*
 * chunk.h - SCANDUMP / LOADCHUNK's iterator, kind-blind (chunk.c): which
 * bytes of a filter one chunk is, for every kind that dumps (the Bloom,
 * cuckoo and counting Bloom filters).
 *
 * What: iterator 0 is the kind's header (its format is the kind's own);
 * iterator i >= 1 is byte i - 1 of the filter's arrays laid back to back
 * in order (a Bloom or cuckoo filter's layers, a counting filter's one
 * array).  A dumped chunk is at most `max` bytes and never spans two
 * arrays; it comes with the iterator after it (i + its length), 0 after
 * the last one.  A loaded chunk of n bytes given with iterator i goes at
 * position i - n - 1: RedisBloom's convention, so its SCANDUMP output
 * loads as it came.  The kind reads its header and arrays inside its own
 * read section and hands them here; nothing here touches a slot.
 */
#ifndef RBI_CHUNK_H
#define RBI_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "ringbloom/bloom.h"

/* One dump call: what was asked (iter, max, buf) and the answer (len,
 * next). */
typedef struct rbi_chunk {
    int64_t iter;
    size_t max;
    unsigned char *buf;   /* NULL: sizes only */
    size_t len;
    int64_t next;
} rbi_chunk_t;

/* A filter's arrays as one read section saw them, in dump order. */
typedef struct rbi_chunk_arrays {
    uint32_t n;
    const _Atomic uint64_t *arr[RB_BLOOM_MAX_LAYERS];
    uint64_t bytes[RB_BLOOM_MAX_LAYERS];
} rbi_chunk_arrays_t;

/* c from a kind's dump arguments: RB_OK, or RB_EINVAL (len or next NULL,
 * max 0). */
int rbi_chunk_begin(rbi_chunk_t *c, int64_t iter, size_t max, unsigned char *buf,
                    const size_t *len, const int64_t *next);

/* The answer of c into *len and *next. */
void rbi_chunk_end(const rbi_chunk_t *c, size_t *len, int64_t *next);

/* Inside the kind's read section, for iterator 0: the header hdr[0 .. n)
 * is the chunk (copied to c->buf if set), the next iterator 1. */
void rbi_chunk_header(rbi_chunk_t *c, const unsigned char *hdr, size_t n);

/* Inside the kind's read section, for an iterator other than 0: the chunk
 * of a's bytes at c->iter (copied to c->buf if set); length 0 and next 0
 * past the end or for a negative iterator. */
void rbi_chunk_bytes(rbi_chunk_t *c, const rbi_chunk_arrays_t *a);

/* Where a loaded chunk of n bytes given with iterator iter goes in a:
 * NULL with *l (the array) and *off (the byte in it) set, or RedisBloom's
 * error text (no such position; more bytes than the array has from
 * there). */
const char *rbi_chunk_place(const rbi_chunk_arrays_t *a, int64_t iter, size_t n, uint32_t *l,
                            uint64_t *off);

#endif /* RBI_CHUNK_H */
