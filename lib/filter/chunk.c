/*
 * chunk.c - SCANDUMP / LOADCHUNK's iterator over a filter's arrays
 * (chunk.h): the arithmetic every kind that dumps shares.
 */
#include "config.h"

#include <string.h>

#include "chunk.h"
#include "ringbloom/core.h"
#include "util.h"

int rbi_chunk_begin(rbi_chunk_t *c, int64_t iter, size_t max, unsigned char *buf,
                    const size_t *len, const int64_t *next)
{
    if (len == NULL || next == NULL || max == 0)
        return RB_EINVAL;
    memset(c, 0, sizeof(*c));
    c->iter = iter;
    c->max = max;
    c->buf = buf;
    return RB_OK;
}

void rbi_chunk_end(const rbi_chunk_t *c, size_t *len, int64_t *next)
{
    *len = c->len;
    *next = c->next;
}

void rbi_chunk_header(rbi_chunk_t *c, const unsigned char *hdr, size_t n)
{
    c->len = n;
    if (c->buf != NULL)
        memcpy(c->buf, hdr, n);
    c->next = 1;
}

/* The array of a holding byte pos of them all, and the offset in it; -1
 * past the end. */
static int locate(const rbi_chunk_arrays_t *a, uint64_t pos, uint64_t *off)
{
    for (uint32_t l = 0; l < a->n; l++) {
        if (pos < a->bytes[l]) {
            *off = pos;
            return (int)l;
        }
        pos -= a->bytes[l];
    }
    return -1;
}

void rbi_chunk_bytes(rbi_chunk_t *c, const rbi_chunk_arrays_t *a)
{
    uint64_t off;
    int l;

    c->len = 0;
    c->next = 0;
    if (c->iter < 1 || (l = locate(a, (uint64_t)c->iter - 1, &off)) < 0)
        return;
    c->len = a->bytes[l] - off < c->max ? (size_t)(a->bytes[l] - off) : c->max;
    c->next = c->iter + (int64_t)c->len;
    if (c->buf != NULL)
        rbi_words_get_bytes(a->arr[l], off, c->buf, c->len);
}

const char *rbi_chunk_place(const rbi_chunk_arrays_t *a, int64_t iter, size_t n, uint32_t *l,
                            uint64_t *off)
{
    int at;

    if (iter <= 0 || (uint64_t)iter < (uint64_t)n + 1 ||
        (at = locate(a, (uint64_t)iter - n - 1, off)) < 0)
        return "ERR invalid offset - no link found";
    if (n > a->bytes[at] - *off)
        return "ERR invalid chunk - Too big for current filter";
    *l = (uint32_t)at;
    return NULL;
}
