/*
 * fuzz_resp.c - libFuzzer target: ringbloomd's resumable RESP2 request
 * parser (daemon/server/resp.c), driven the way server.c's process_input drives
 * it.
 *
 * Input: byte 0 picks max-request-bytes (the parser's limits derive from
 * it with resp_limits_init, as in server.c); byte 1 gives the number n (0..15) of chunk
 * bytes that follow; the rest is the byte stream a client sends.  The
 * stream is parsed twice: whole, and delivered in chunks whose sizes cycle
 * through the n chunk bytes (1..64 bytes each; n = 0 means one byte at a
 * time).  Every call gets a fresh heap copy of exactly the unconsumed
 * bytes, so a read past them is an ASan report and the buffer moves
 * between calls as the server's may.
 *
 * Invariants (a failure aborts):
 *   - a complete request consumed at least one byte and at most what it
 *     was given and max-request-bytes, and its arguments lie inside it
 *     (inline: inside its line) and within the limits;
 *   - RESP_MORE never consumed past the end, and leaves at most
 *     max-request-bytes pending (the server's buffer stays bounded);
 *   - whole and chunked delivery give the same requests, arguments,
 *     errors and leftover (the request boundaries and the answers must not
 *     depend on how the kernel split the stream).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#define FUZZ_TARGET "fuzz_resp"
#include "fuzz.h"

/* What one delivery produced: every event, serialised (kind, lengths,
 * argument bytes), so the two deliveries compare with memcmp. */
typedef struct trace {
    unsigned char *data;
    size_t len, cap;
} trace_t;

static void trace_add(trace_t *t, const void *p, size_t n)
{
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n)
            cap *= 2;
        t->data = realloc(t->data, cap);
        CHECK(t->data != NULL);
        t->cap = cap;
    }
    memcpy(t->data + t->len, p, n);
    t->len += n;
}

static void trace_size(trace_t *t, size_t v)
{
    trace_add(t, &v, sizeof(v));
}

enum { EV_REQUEST = 1, EV_ERROR = 2, EV_LEFTOVER = 3 };

typedef struct session {
    resp_parser_t p;
    resp_limits_t lim;
    trace_t trace;
    int closed;          /* a protocol error closed the connection */
} session_t;

/* Records a complete request after checking it against what was given. */
static void record_request(session_t *ss, const char *buf, size_t avail)
{
    const resp_parser_t *p = &ss->p;
    size_t total = 0;

    CHECK(p->pos > 0 && p->pos <= avail && p->pos <= ss->lim.max_request);
    if (!p->inline_req)
        CHECK(p->nargs <= ss->lim.max_args);
    trace_size(&ss->trace, EV_REQUEST);
    trace_size(&ss->trace, p->pos);
    trace_size(&ss->trace, (size_t)p->inline_req);
    trace_size(&ss->trace, p->nargs);
    for (size_t i = 0; i < p->nargs; i++) {
        size_t off = p->off[i], len = p->len[i];
        /* Inline arguments live in the parser's scratch, unquoted: never
         * longer than the line; bulk arguments inside the request. */
        CHECK(off <= p->pos && len <= p->pos - off);
        if (!p->inline_req)
            CHECK(len <= ss->lim.max_bulk && off >= 4 && buf[off + len] == '\r' &&
                  buf[off + len + 1] == '\n');
        total += len;
        CHECK(total <= p->pos);
        trace_size(&ss->trace, len);
        trace_add(&ss->trace, resp_arg(p, buf, i), len);
    }
}

/* Parses every complete request in buf[0..avail) (a heap block of exactly
 * avail bytes), as server.c's process_input does.  Returns the bytes
 * consumed; sets ss->closed on a protocol error. */
static size_t drain(session_t *ss, const char *buf, size_t avail)
{
    size_t used = 0;

    while (!ss->closed) {
        const char *err = NULL;
        int rc = resp_parse(&ss->p, buf + used, avail - used, &ss->lim, &err);
        if (rc == RESP_MORE) {
            /* The server keeps what is pending: bounded by the limit. */
            CHECK(ss->p.pos <= avail - used && avail - used <= ss->lim.max_request);
            break;
        }
        if (rc == RESP_ERR) {
            CHECK(err != NULL);
            trace_size(&ss->trace, EV_ERROR);
            trace_add(&ss->trace, err, strlen(err));
            ss->closed = 1;
            break;
        }
        CHECK(rc == RESP_DONE);
        record_request(ss, buf + used, avail - used);
        used += ss->p.pos;
        resp_parser_reset(&ss->p);
    }
    return used;
}

static void session_init(session_t *ss, size_t max_request)
{
    memset(ss, 0, sizeof(*ss));
    resp_parser_init(&ss->p);
    resp_limits_init(&ss->lim, max_request);   /* as server.c */
}

/* Delivers stream[0..len) in chunks; chunk sizes cycle through plan[0..n)
 * (each 1..64), or all at once if n == SIZE_MAX. */
static void deliver(session_t *ss, const uint8_t *stream, size_t len, const uint8_t *plan,
                    size_t n)
{
    size_t fed = 0, done = 0, k = 0;

    while (fed < len && !ss->closed) {
        size_t chunk = n == SIZE_MAX ? len : n == 0 ? 1 : (size_t)(plan[k++ % n] % 64) + 1;
        size_t avail;
        char *copy;
        fed = chunk > len - fed ? len : fed + chunk;
        avail = fed - done;
        copy = malloc(avail ? avail : 1);
        CHECK(copy != NULL);
        memcpy(copy, stream + done, avail);
        done += drain(ss, copy, avail);
        free(copy);
    }
    if (!ss->closed) {
        trace_size(&ss->trace, EV_LEFTOVER);
        trace_size(&ss->trace, len - done);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t max_requests[4] = { 1024, 4096, 65536, 64u << 20 };
    session_t whole, chunked;
    const uint8_t *plan;
    size_t nplan;

    if (size < 2)
        return 0;
    nplan = data[1] % 16;
    if (size < 2 + nplan)
        return 0;
    plan = data + 2;
    session_init(&whole, max_requests[data[0] % 4]);
    session_init(&chunked, max_requests[data[0] % 4]);
    deliver(&whole, data + 2 + nplan, size - 2 - nplan, NULL, SIZE_MAX);
    deliver(&chunked, data + 2 + nplan, size - 2 - nplan, plan, nplan);
    if (whole.trace.len != chunked.trace.len ||
        memcmp(whole.trace.data, chunked.trace.data, whole.trace.len) != 0) {
        fprintf(stderr, "fuzz_resp: whole and chunked delivery differ (%zu vs %zu trace bytes)\n",
                whole.trace.len, chunked.trace.len);
        abort();
    }
    resp_parser_free(&whole.p);
    resp_parser_free(&chunked.p);
    free(whole.trace.data);
    free(chunked.trace.data);
    return 0;
}
