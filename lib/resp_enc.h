/*
 * resp_enc.h - RESP2 encoding, the one encoder of the project: the client
 * library's requests (conn.c), ringbloomd's replies (daemon/) and the nginx
 * module's admits (nginx/) all write through it.  Internal (rbi_): shared by
 * the project's programs, which link the library's objects, never
 * installed.
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
} rbi_buf_t;

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
void rbi_resp_nil(rbi_buf_t *b);                              /* $-1 */
void rbi_resp_array(rbi_buf_t *b, size_t n);                  /* *n */

/* A request: an array of argc bulk strings.  rbi_resp_command_size is the
 * exact length rbi_resp_command_put writes into dst (which must hold it)
 * and returns the end of; rbi_resp_command appends it to a buffer. */
size_t rbi_resp_command_size(size_t argc, const size_t *argl);
char *rbi_resp_command_put(char *dst, size_t argc, const char *const *argv, const size_t *argl);
void rbi_resp_command(rbi_buf_t *b, size_t argc, const char *const *argv, const size_t *argl);

#endif /* RBI_RESP_ENC_H */
