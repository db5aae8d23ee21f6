/*
 * txn.h - a client's transaction between MULTI and EXEC (txn.c): the
 * requests queued so far, as bytes its buffers count (B2), and whether
 * one was refused (EXEC then aborts).  What the commands are and how they
 * run is cmd.c's; how EXEC is logged as one unit is ops.c's.
 */
#ifndef RBD_TXN_H
#define RBD_TXN_H

#include <stddef.h>

#include "resp_enc.h"

/* At most this many queued commands (a client past it is told so and its
 * transaction aborts): with max-request-bytes on the queued requests'
 * bytes, it bounds the log record of an EXEC (ops.h, RBD_TXN_RECORD_MAX). */
#define RBD_TXN_MAX_COMMANDS 65536u

typedef struct rbd_txn {
    int active;          /* between MULTI and EXEC / DISCARD */
    int dirty;           /* a command was refused while queuing: EXEC aborts */
    size_t count;        /* commands queued */
    size_t bytes;        /* the queue's bytes, length prefixes included
                            (rbd_txn_cost; against max-request-bytes) */
    size_t max_argc;     /* the most arguments of one of them */
    int writes;          /* one of them is a mutation (cmd.c: CMD_WRITE) */
    rbi_buf_t queue;     /* each: u32 argc, argc x (u32 length, bytes) */
} rbd_txn_t;

/* The bytes a request of argc arguments of lengths argl takes in a
 * queue: a 4-byte count, and per argument a 4-byte length and its bytes,
 * so that empty arguments count too. */
size_t rbd_txn_cost(size_t argc, const size_t *argl);

/* Appends one request to t's queue (t->bytes grows by its cost): 0, or -1 if the queue is out of
 * memory (t is then dirty). */
int rbd_txn_queue(rbd_txn_t *t, size_t argc, const char *const *argv, const size_t *argl);

/* The queued requests in order: fills argv / argl (each of at least
 * max_argc entries; the arguments point into the queue) and *argc with
 * the request at offset off (0: the first) and returns the offset of the
 * next, or 0 when there is none at off. */
size_t rbd_txn_next(const rbd_txn_t *t, size_t off, const char **argv, size_t *argl,
                    size_t *argc);

/* Back to no transaction, the queue's memory given back. */
void rbd_txn_reset(rbd_txn_t *t);

#endif /* RBD_TXN_H */
