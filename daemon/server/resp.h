/*
 * resp.h - incremental RESP2 request parser (ringbloomd); replies are
 * encoded by the project's one encoder, lib/conn/resp_enc.h.
 *
 * Requests: multibulk arrays of bulk strings ("*2\r\n$4\r\nPING\r\n...") as
 * every Redis client sends, and inline commands (a text line split on
 * blanks, with "..." / '...' quoting as redis-server splits it) as telnet
 * users type.  The parser is resumable: a request that arrives in pieces
 * is never rescanned from its start, so a large pipelined BF.MADD costs
 * O(bytes).  Arguments are kept as offsets into the caller's buffer, which
 * may therefore move between calls.
 */
#ifndef RBD_RESP_H
#define RBD_RESP_H

#include <stddef.h>
#include <stdint.h>

enum { RESP_MORE = 0, RESP_DONE = 1, RESP_ERR = -1 };

typedef struct resp_limits {
    size_t max_args;      /* arguments per request */
    size_t max_bulk;      /* bytes per argument */
    size_t max_inline;    /* bytes of an inline command line */
    size_t max_request;   /* bytes of one request, whatever its form */
} resp_limits_t;

typedef struct resp_parser {
    size_t pos;           /* bytes of the current request consumed so far */
    long long want;       /* arguments announced by '*', -1 before it */
    int inline_req;       /* the request is an inline line */
    size_t nargs;         /* arguments complete so far */
    size_t cap;
    size_t *off, *len;    /* argument i: buf[off[i] .. off[i] + len[i]) */
    char *scratch;        /* inline arguments after unquoting */
    size_t scratch_cap;
} resp_parser_t;

/* ringbloomd's limits for a max-request-bytes setting (>= 1024): up to
 * max_request / 32 arguments of up to max_request bytes each, inline lines
 * up to 64 KiB, requests up to max_request bytes. */
void resp_limits_init(resp_limits_t *lim, size_t max_request);

void resp_parser_init(resp_parser_t *p);
void resp_parser_free(resp_parser_t *p);
/* Bytes the parser holds on the heap (argument arrays, inline scratch). */
size_t resp_parser_memory(const resp_parser_t *p);
/* Forgets the request just executed (its p->pos bytes were consumed). */
void resp_parser_reset(resp_parser_t *p);

/* Parses from buf[p->pos].  RESP_DONE: a request of p->nargs arguments is
 * complete and occupies buf[0 .. p->pos) (a request with no arguments is
 * skipped silently: returns RESP_DONE with nargs 0).  RESP_MORE: need more
 * bytes; then len <= lim->max_request, so a client's unparsed input stays
 * bounded.  RESP_ERR: *err is the protocol error text (without "-ERR "); the
 * connection should be closed after replying it.  A request larger than
 * lim->max_request is an error, however its bytes arrived.  Memory errors
 * report as RESP_ERR too.  The outcome never depends on how the stream was
 * split between calls. */
int resp_parse(resp_parser_t *p, const char *buf, size_t len, const resp_limits_t *lim,
               const char **err);

/* Argument i of a complete request. */
const char *resp_arg(const resp_parser_t *p, const char *buf, size_t i);

#endif /* RBD_RESP_H */
