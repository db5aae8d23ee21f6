/*
 * record.h - the framing of an op record (record.c), the one place records
 * are framed and checked: the log appends them (aof.c) and replays them
 * (replay.c), and a later source of records (a stream message) carries
 * the same bytes.  A record: u32 length of (type + payload), u32 low half
 * of XXH3-64 over (type + payload), u8 type, payload; integers
 * little-endian (docs/design.md, "Files in the state directory").  This
 * layer knows bytes only: which types exist is ops.c's table.
 */
#ifndef RBD_RECORD_H
#define RBD_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define RBD_REC_HDR 9u   /* a record's u32 length, u32 checksum, u8 type */

/* A whole record found in a buffer (rbd_rec_at, rbd_rec_next): its type,
 * its payload (the bytes after the type, pointing into the buffer) and
 * the bytes the record takes, header included (8 + its length field). */
typedef struct rbd_rec {
    uint8_t type;
    const unsigned char *payload;
    size_t plen;
    size_t size;
} rbd_rec_t;

/* Why no whole record starts at an offset.  The checksum covers only the
 * type and payload: a record that is whole with a damaged length field
 * reads as RBD_REC_PAST_END or RBD_REC_CHECKSUM. */
typedef enum rbd_rec_why {
    RBD_REC_OK = 0,
    RBD_REC_SHORT,      /* fewer than RBD_REC_HDR bytes left: the header is cut */
    RBD_REC_EMPTY,      /* length 0: not even a type byte */
    RBD_REC_PAST_END,   /* the length runs past the end of the bytes */
    RBD_REC_CHECKSUM,   /* all its bytes are there, the checksum does not hold */
} rbd_rec_why_t;

/* Writes a record's header for type at hdr (RBD_REC_HDR bytes): length and
 * checksum zero until rbd_rec_seal, which the caller runs once the
 * payload follows it. */
void rbd_rec_start(unsigned char *hdr, uint8_t type);
/* Fills in the length and checksum of the record at rec, whose header
 * (rbd_rec_start) and type + payload take `bytes` bytes
 * (>= RBD_REC_HDR; the payload's length fits in 32 bits). */
void rbd_rec_seal(unsigned char *rec, size_t bytes);

/* Whether a whole, checksummed record (of any type) starts at offset j of
 * p[0..n) (j <= n): RBD_REC_OK with *r set, or why not (*r untouched).
 * Cost: one XXH3-64 over the record's type and payload. */
rbd_rec_why_t rbd_rec_at(const unsigned char *p, size_t n, size_t j, rbd_rec_t *r);
/* The words for why (for messages: "checksum mismatch"). */
const char *rbd_rec_why_text(rbd_rec_why_t why);

/* A walk over the records of p[0..n), back to back from offset 0: a TXN
 * record's payload, a stream message. */
typedef struct rbd_rec_walk {
    const unsigned char *p;
    size_t n;
    size_t at;                 /* where the next record starts */
} rbd_rec_walk_t;

static inline void rbd_rec_walk_init(rbd_rec_walk_t *w, const void *p, size_t n)
{
    w->p = p;
    w->n = n;
    w->at = 0;
}

/* The next record: 1 and *r (w->at moves past it); 0 at the end (w->at ==
 * n); -1 if no whole record starts at w->at (it stays there, *why says
 * why: bytes left that are damage or a torn tail, the caller decides). */
int rbd_rec_next(rbd_rec_walk_t *w, rbd_rec_t *r, rbd_rec_why_t *why);

#endif /* RBD_RECORD_H */
