/*
 * badinput.h - what the files of check_badinput share (badinput.c).  Each
 * row starts a private ringbloomd with a reader of its segment and a
 * client connected before the bad input (start), seeds it (seed),
 * captures its state, sends the bad input and asserts the exact reply and
 * that nothing changed (ASSERT_UNCHANGED).
 */
#ifndef BADINPUT_H
#define BADINPUT_H

#include <grp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "rbd_test.h"

extern rbd_proc_t d;          /* the row's daemon */
extern rb_segment_t *rseg;    /* a reader of the daemon's segment */
extern rb_conn_t *w;          /* a client connected before the bad input */

/* The TCases' teardown: the reader, the client and the daemon gone. */
void badinput_teardown(void);
/* A private daemon (extra: config lines), a reader and a watching client. */
void start(const char *extra);
/* Two nodes and a filter holding two keys: the state the rows try to damage. */
void seed(void);

/* ---- commands with binary arguments ------------------------------------------ */

typedef struct arg {
    const char *p;
    size_t n;
} arg_t;

/* Initializers of an arg_t: a literal (NULs kept), or bytes and length. */
#define A(lit)      { (lit), sizeof(lit) - 1 }
#define B(ptr, len) { (const char *)(ptr), (len) }
#define NARGS(a)    (sizeof(a) / sizeof((a)[0]))

/* Runs the command a[0..n) on c; the reply into buf, its code returned. */
int run_args(rb_conn_t *c, char *buf, size_t cap, size_t n, const arg_t *a);
/* Asserts the reply text, and that it is an error reply iff is_err. */
void expect_v(int line, rb_conn_t *c, const char *want, int is_err, size_t n, const arg_t *a);

#define EXPECT(c, want, ...)                                                  \
    do {                                                                      \
        const arg_t a_[] = { __VA_ARGS__ };                                   \
        expect_v(__LINE__, (c), (want), 0, NARGS(a_), a_);                   \
    } while (0)
#define EXPECT_ERR(c, want, ...)                                              \
    do {                                                                      \
        const arg_t a_[] = { __VA_ARGS__ };                                   \
        expect_v(__LINE__, (c), (want), 1, NARGS(a_), a_);                    \
    } while (0)

/* ---- raw sockets ---------------------------------------------------------------- */

/* Sends everything it can; a peer that closed is not an error here. */
void raw_send(int fd, const void *data, size_t len);
/* Reads into buf (NUL-terminated) until `want` bytes arrived (0: until the
 * peer closes) or ms passed.  *closed: the peer closed. */
size_t raw_read(int fd, char *buf, size_t cap, size_t want, int ms, int *closed);
/* Sends bytes on a fresh connection; asserts the daemon answers exactly
 * `reply` and closes the connection within 2 s. */
void expect_protocol_close(int line, const void *bytes, size_t len, const char *reply);

#define PROTO_CLOSE(lit, reply) expect_protocol_close(__LINE__, lit, sizeof(lit) - 1, reply)

/* ---- daemon figures ------------------------------------------------------------- */

/* Waits (<= 3 s) until the daemon counts n connected clients. */
void wait_clients(long long n);

/* ---- the state that bad input must not change -------------------------------- */

enum { MAX_NODES = 32, MAX_FILTERS = 8 };

typedef struct fstate {
    char name[RB_FILTER_NAME_MAX + 1];
    size_t len;
    uint64_t items, bits_set, bits, capacity;
    uint32_t layers;
} fstate_t;

typedef struct state {
    uint64_t ring_version;
    uint32_t ring_points;
    size_t nnodes;
    rb_node_t node[MAX_NODES];
    size_t nfilters;
    fstate_t f[MAX_FILTERS];
    uint64_t seg_used, seg_size;
    long long log_bytes, changes;
} state_t;

/* The ring, every filter, the segment's sizes and the log, as now. */
void capture(state_t *st);
/* The daemon lives, answers the client connected before and a new one. */
void assert_healthy(void);
/* Asserts that nothing of *before changed and the daemon is healthy (line:
 * the caller's, for the message). */
void assert_unchanged_at(int line, const state_t *before);

#define ASSERT_UNCHANGED(st) assert_unchanged_at(__LINE__, (st))

/* Asserts that the reader finds no filter of that name. */
void assert_no_filter(const char *name, size_t len);

/* The TCases in files of their own (their main() is check_badinput.c's). */
TCase *badinput_filters_tcase(void);       /* check_badinput_filters.c */
TCase *badinput_protocol_tcase(void);      /* check_badinput_protocol.c */
TCase *badinput_connections_tcase(void);   /* check_badinput_clients.c */
TCase *badinput_access_tcase(void);        /* check_badinput_clients.c */

#endif
