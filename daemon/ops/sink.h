/*
 * sink.h - the op sinks: everything that consumes the daemon's op stream
 * (ops.c's live ops) does it through one table of operations, registered
 * once at start (sink.c); and the deferred replies, one mechanism for
 * every sink.
 *
 * A sink is a row, like a VFS's io_methods: a name and the operations it
 * needs, NULL for the others.  rbd_op_run (ops.c) calls every registered
 * sink in one place, in registration order:
 *   accept    before the apply: the op is applied here (RBD_SINK_APPLY),
 *             taken by the sink, which answers the client later through
 *             the ticket it was given (RBD_SINK_DEFERRED: etcd makes the
 *             ring change, ring_source_loop.c), refused with a reply line
 *             (RBD_SINK_REPLY), or refused with an RB_E* error;
 *   on_op     after an op applied and changed something: each such op is
 *             seen once, in the order applied (the log appends its
 *             record, sink_log.c);
 *   txn_begin / txn_end  the frame of a transaction's ops (EXEC): the ops
 *             between are one unit to the sink;
 *   flush     at the end of every loop turn, before replies are sent: 0 if
 *             the replies that acknowledge ops it saw may go, -1 to hold
 *             them (the log's group commit and fsync, P1/P2);
 *   poll      its descriptor (fd at registration, -1 none) is readable;
 *   tick      every housekeeping of the loop (at most 100 ms apart).
 *
 * Deferred replies: a sink that takes an op (RBD_SINK_DEFERRED) holds its
 * ticket and completes it once it knows the answer: rbd_sinks_complete
 * (NULL for OK, or the error line), or, once the op has applied (a filter
 * source applies it from its stream), rbd_sinks_complete_result (the
 * apply's rc and per-key fresh flags).  The ticket keeps the shape of the
 * reply the handler would have written (op->reply: +OK, one fresh flag,
 * an array of them, or nothing: an implicit create whose add answers);
 * the registry hands shape and answer to the server's reply function for
 * the client the ticket was opened for, which writes them in the
 * client's protocol.  The client's later requests wait until every
 * ticket its command opened is answered (client.h, awaits_reply), and
 * tickets are answered in the order a sink completes them: a sink
 * completes one command's tickets in the order they were opened.  A
 * ticket is completed once; a later completion, or one for a client
 * gone, is dropped.
 *
 * Adding a consumer (filter replication, ...): its row (a const
 * rbd_sink_ops_t beside its code) and one rbd_sinks_add in main.c.
 * docs/design.md, "Op sinks", says what each sink does.
 */
#ifndef RBD_SINK_H
#define RBD_SINK_H

#include <stddef.h>
#include <stdint.h>

struct rbd_op;
struct rbd_state;

/* accept's answers (besides an RB_E* error, < 0). */
#define RBD_SINK_APPLY    0   /* apply the op here */
#define RBD_SINK_DEFERRED 1   /* the sink took it; it completes the ticket */
#define RBD_SINK_REPLY    2   /* refused: the reply line is in why */

typedef struct rbd_sink_ops {
    const char *name;
    /* ticket: the one to complete if the op is taken (0: it cannot be
     * taken: the op has no client to answer later, as the aging tick's,
     * it runs inside a transaction, or there is no memory for a ticket). */
    int (*accept)(void *self, struct rbd_state *st, const struct rbd_op *op, uint64_t ticket,
                  char *why, size_t cap);
    void (*on_op)(void *self, const struct rbd_op *op);
    /* txn_begin's value is given back to txn_end. */
    size_t (*txn_begin)(void *self);
    void (*txn_end)(void *self, size_t mark);
    int (*flush)(void *self);
    void (*poll)(void *self, struct rbd_state *st);
    void (*tick)(void *self, struct rbd_state *st);
} rbd_sink_ops_t;

#define RBD_SINKS_MAX 8

/* What a deferred reply says when it succeeds (rbd_op_t.reply). */
typedef enum rbd_reply_shape {
    RBD_REPLY_OK = 0,         /* +OK */
    RBD_REPLY_RESERVED,       /* +OK, or why the filter could not be made: BF.RESERVE */
    RBD_REPLY_NONE,           /* nothing, nor its error: an op whose command's
                                 reply is another ticket's (BF.ADD's implicit
                                 create: the add answers) */
    RBD_REPLY_FRESH,          /* one fresh flag: BF.ADD */
    RBD_REPLY_FRESH_ARRAY,    /* an array of fresh flags, ended by the error
                                 element if rc < 0: BF.MADD, BF.INSERT */
} rbd_reply_shape_t;

/* A deferred reply's answer, to client `client` (server.c). */
typedef struct rbd_reply {
    rbd_reply_shape_t shape;
    const char *err;          /* the error line (without "-"), or NULL */
    int rc;                   /* err NULL: the apply's result (RB_OK, or the
                                 error that ended an add part-way) */
    const uint8_t *fresh;     /* per key applied: 1 new, 0 not (rbd_op_t.fresh) */
    size_t n;                 /* keys applied (op->nkeys after the apply) */
    int has_result;           /* rbd_sinks_complete_result (else fresh is NULL) */
} rbd_reply_t;
typedef void (*rbd_sink_reply_fn)(void *arg, uint64_t client, const rbd_reply_t *r);

typedef struct rbd_pending {   /* a deferred reply: its ticket, client and shape */
    uint64_t ticket, client;
    rbd_reply_shape_t shape;
} rbd_pending_t;

typedef struct rbd_sinks {
    struct {
        const rbd_sink_ops_t *ops;
        void *self;
        int fd;
        size_t txn_mark;
    } v[RBD_SINKS_MAX];
    size_t n;
    rbd_sink_reply_fn reply;
    void *reply_arg;
    rbd_pending_t *pending;    /* open tickets, in the order opened */
    size_t npending, cap;
    uint64_t next_ticket;      /* the last ticket offered to a sink */
    uint64_t opened;           /* tickets a sink took (client.c: the client whose
                                  command opened one awaits its reply) */
    uint64_t seen;             /* ops the sinks were shown (client.c: its reply
                                  then waits for rbd_sinks_flush) */
    int in_txn;                /* between txn_begin and txn_end: no ticket (an
                                  EXEC's replies cannot wait for one) */
    char why[1024];            /* the last RBD_SINK_REPLY's line (op->why points here) */
} rbd_sinks_t;

void rbd_sinks_init(rbd_sinks_t *s, rbd_sink_reply_fn reply, void *arg);
/* Frees the open tickets (their clients are not answered). */
void rbd_sinks_free(rbd_sinks_t *s);
/* Registers row ops with its object self and descriptor fd (-1: none).
 * 0, or -1 if RBD_SINKS_MAX are registered. */
int rbd_sinks_add(rbd_sinks_t *s, const rbd_sink_ops_t *ops, void *self, int fd);
/* Unregisters self (before it is freed). */
void rbd_sinks_remove(rbd_sinks_t *s, const void *self);

/* ops.c's calls.  rbd_sinks_accept: RBD_SINK_APPLY if every sink lets the
 * op be applied, else the first other answer (RBD_SINK_DEFERRED: the
 * ticket is open for op->client; RBD_SINK_REPLY: the line in s->why). */
int rbd_sinks_accept(rbd_sinks_t *s, struct rbd_state *st, const struct rbd_op *op);
void rbd_sinks_op(rbd_sinks_t *s, const struct rbd_op *op);
void rbd_sinks_txn_begin(rbd_sinks_t *s);
void rbd_sinks_txn_end(rbd_sinks_t *s);

/* The event loop's calls: 0 if every sink lets the turn's replies go, -1
 * if one holds them; 1 if fd is a sink's (polled), else 0; every sink's
 * tick. */
int rbd_sinks_flush(rbd_sinks_t *s);
int rbd_sinks_poll(rbd_sinks_t *s, struct rbd_state *st, int fd);
void rbd_sinks_tick(rbd_sinks_t *s, struct rbd_state *st);

/* A sink's answer to the deferred reply of ticket: err NULL for the
 * shape's success without a result (+OK; a shape that needs the apply's
 * result is answered with an error saying none came), else the error
 * line. */
void rbd_sinks_complete(rbd_sinks_t *s, uint64_t ticket, const char *err);
/* The answer once the op applied: rc and, for an add, its fresh flags
 * (n keys applied; fresh NULL for other ops). */
void rbd_sinks_complete_result(rbd_sinks_t *s, uint64_t ticket, int rc, const uint8_t *fresh,
                               size_t n);

#endif /* RBD_SINK_H */
