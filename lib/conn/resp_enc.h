/*
 * resp_enc.h - the project's own RESP encoder: ringbloomd's replies
 * (daemon/) and the nginx module's admits (nginx/: requests written into
 * its own buffer, no allocation on nginx's event loop) write through it.
 * The clients (the library's connection, conn.c, and the CLI) format
 * their requests with hiredis instead (resp_read.h), as redis-server
 * keeps its own reply writer while its clients use hiredis.  Internal
 * (rbi_): shared by the project's programs, which link the library's
 * objects, never installed.
 *
 * A buffer says which protocol its replies speak (`resp3`, set by a
 * connection's HELLO 3): the typed elements (map, set, bool, null,
 * verbatim) are RESP3's there and the RESP2 forms Redis 7 gives otherwise,
 * so a handler writes one reply for both and RESP2 stays byte for byte
 * what it was.  Requests are always RESP2.
 *
 * Appending to an rbi_buf_t never fails loudly: an allocation that fails
 * sets `oom` and every later append is dropped, so a caller checks once
 * after building a whole message (a reply or a batch of requests).
 */
#ifndef RBI_RESP_ENC_H
#define RBI_RESP_ENC_H

#include <stddef.h>

/* A growable byte buffer (doubling, from 256 bytes). */
typedef struct rbi_buf {
    char *data;
    size_t len, cap;
    int oom;              /* an append failed: the buffer is incomplete */
    int resp3;            /* replies in RESP3 (else RESP2); kept by rbi_buf_free */
} rbi_buf_t;

/* Frees the bytes; the buffer stays usable, empty, in its protocol. */
void rbi_buf_free(rbi_buf_t *b);
void rbi_buf_append(rbi_buf_t *b, const void *data, size_t len);
/* Drops the first n <= b->len bytes. */
void rbi_buf_consume(rbi_buf_t *b, size_t n);

/* Replies (and the parts of requests): each appends one RESP2 element. */
void rbi_resp_simple(rbi_buf_t *b, const char *s);           /* +s */
void rbi_resp_error(rbi_buf_t *b, const char *fmt, ...)      /* -fmt, on one line */
    __attribute__((format(printf, 2, 3)));
void rbi_resp_int(rbi_buf_t *b, long long v);                /* :v */
void rbi_resp_bulk(rbi_buf_t *b, const void *data, size_t len);
void rbi_resp_bulk_str(rbi_buf_t *b, const char *s);
void rbi_resp_nil(rbi_buf_t *b);                              /* $-1; RESP3 _ */
void rbi_resp_array(rbi_buf_t *b, size_t n);                  /* *n */
/* The typed elements: RESP3's, or what Redis 7 gives a RESP2 client. */
void rbi_resp_map(rbi_buf_t *b, size_t pairs);       /* %pairs; RESP2 *2pairs, flat */
void rbi_resp_set(rbi_buf_t *b, size_t n);           /* ~n; RESP2 *n */
void rbi_resp_bool(rbi_buf_t *b, int v);             /* #t / #f; RESP2 :1 / :0 */
/* Text for a human (INFO, CLIENT INFO): =len txt:...; RESP2 a bulk string. */
void rbi_resp_verbatim(rbi_buf_t *b, const void *data, size_t len);

/* A request (the nginx module's): an array of argc bulk strings, the same
 * bytes as hiredis's redisFormatCommandArgv.  rbi_resp_command_size is the
 * exact length rbi_resp_command_put writes into dst (which must hold it)
 * and returns the end of. */
size_t rbi_resp_command_size(size_t argc, const size_t *argl);
char *rbi_resp_command_put(char *dst, size_t argc, const char *const *argv, const size_t *argl);

#endif /* RBI_RESP_ENC_H */
