/*
 * record.c - framing and checking op records in a buffer (record.h): the
 * only code that writes or checks a record's length and checksum.  It
 * calls no other daemon file (bytes.h's fields aside) and knows no op
 * type: which exist, and what their payloads hold, is ops.c's.
 */
#include "config.h"

#include <string.h>
#include <xxhash.h>

#include "bytes.h"
#include "record.h"

void rbd_rec_start(unsigned char *hdr, uint8_t type)
{
    memset(hdr, 0, RBD_REC_HDR);
    hdr[8] = type;
}

void rbd_rec_seal(unsigned char *rec, size_t bytes)
{
    size_t len = bytes - 8;

    rbd_put_u32(rec, (uint32_t)len);
    rbd_put_u32(rec + 4, (uint32_t)XXH3_64bits(rec + 8, len));
}

rbd_rec_why_t rbd_rec_at(const unsigned char *p, size_t n, size_t j, rbd_rec_t *r)
{
    uint32_t len;

    if (j > n || n - j < RBD_REC_HDR)
        return RBD_REC_SHORT;
    len = rbd_get_u32(p + j);
    if (len == 0)
        return RBD_REC_EMPTY;
    if (len > n - j - 8)
        return RBD_REC_PAST_END;
    if ((uint32_t)XXH3_64bits(p + j + 8, len) != rbd_get_u32(p + j + 4))
        return RBD_REC_CHECKSUM;
    r->type = p[j + 8];
    r->payload = p + j + RBD_REC_HDR;
    r->plen = (size_t)len - 1;
    r->size = 8 + (size_t)len;
    return RBD_REC_OK;
}

const char *rbd_rec_why_text(rbd_rec_why_t why)
{
    switch (why) {
    case RBD_REC_OK:       return "a whole record";
    case RBD_REC_SHORT:    return "fewer bytes than a record header";
    case RBD_REC_EMPTY:    return "record length 0";
    case RBD_REC_PAST_END: return "record length past the end";
    case RBD_REC_CHECKSUM: return "checksum mismatch";
    }
    return "?";
}

int rbd_rec_next(rbd_rec_walk_t *w, rbd_rec_t *r, rbd_rec_why_t *why)
{
    rbd_rec_why_t y;

    if (w->at >= w->n)
        return 0;
    y = rbd_rec_at(w->p, w->n, w->at, r);
    if (why != NULL)
        *why = y;
    if (y != RBD_REC_OK)
        return -1;
    w->at += r->size;
    return 1;
}
