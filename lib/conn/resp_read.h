/*
 * resp_read.h - the clients' side of RESP2, through hiredis: requests
 * formatted by redisFormatCommandArgv (rbi_request_format: hiredis's
 * lengths are ints, so a request of 2 GiB or more is refused before it is
 * read), and replies read through hiredis's reader (redisReader), with
 * the bounds hiredis 0.14 lacks.  The clients of the project (conn.c, the
 * library's write connection; the CLI's client/redis_node.c) format what
 * they send here, feed the reader what they receive on their own sockets
 * and take whole replies out.  Internal (rbi_), never installed; the
 * server keeps its own parser and encoder (daemon/server/resp.c,
 * resp_enc.c), as redis-server does.
 *
 * Bounds, checked before anything large is allocated: an array announcing
 * more elements than are left of the reply's element budget is refused in
 * createArray (hiredis allocates the announced count at once), every
 * element counts against that budget, and hiredis nests arrays at most 8
 * deep (its own rule, equal to the depth the callers allow).  A line or a
 * bulk string is only held in the reader's buffer: rbi_reader_get refuses
 * a reply once more than max_buffered bytes wait unparsed (a long line or
 * a bulk string past the caller's bound), so callers feed at most
 * RBI_READ_CHUNK bytes between two calls.
 */
#ifndef RBI_RESP_READ_H
#define RBI_RESP_READ_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#define RBI_READ_CHUNK 65536u   /* the most a caller feeds between two rbi_reader_get */

typedef struct rbi_reader rbi_reader_t;

/* A reader whose replies hold at most max_elements elements in all (nested
 * ones too), or NULL (out of memory). */
rbi_reader_t *rbi_reader_new(size_t max_elements);
void rbi_reader_free(rbi_reader_t *rd);

/* Hands len received bytes to the reader: 0, or -1 (out of memory). */
int rbi_reader_feed(rbi_reader_t *rd, const char *buf, size_t len);

typedef enum {
    RBI_READ_OK = 0,        /* *out is a whole reply (freeReplyObject it) */
    RBI_READ_MORE,          /* no whole reply yet: feed more */
    RBI_READ_MALFORMED,     /* not RESP2, or over a bound: rbi_reader_why says which */
    RBI_READ_NOMEM
} rbi_read_t;

/* The next whole reply, if the bytes fed hold one.  After MALFORMED or
 * NOMEM the reader is unusable. */
rbi_read_t rbi_reader_get(rbi_reader_t *rd, size_t max_buffered, redisReply **out);

/* For the next replies (until called again with NULL): the integers that
 * are elements of a top-level array, at index < cap, go to ints[index]
 * instead of objects, and that element of the redisReply stays NULL (a
 * BF.MADD reply of 1000 answers then costs one allocation, not 1001). */
void rbi_reader_ints(rbi_reader_t *rd, long long *ints, size_t cap);

/* Why the last MALFORMED, as a phrase ("more than 1048576 elements"). */
const char *rbi_reader_why(const rbi_reader_t *rd);

/* A request of argc arguments (argv[i]: argl[i] bytes, any bytes) as RESP2,
 * formatted by hiredis into *out (free it with redisFreeCommand): its
 * length, or -1 for a request hiredis cannot format (2 GiB or more, or
 * more arguments than an int holds: nothing is read or allocated) and -2
 * when out of memory. */
long rbi_request_format(char **out, size_t argc, const char *const *argv, const size_t *argl);

#endif /* RBI_RESP_READ_H */
