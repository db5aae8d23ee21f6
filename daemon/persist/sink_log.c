/*
 * sink_log.c - the append-only log as an op sink (sink.h): each op shown
 * becomes a record (rbd_op_encode's payload after the record header),
 * fsync'd before its reply if its type says so (P2); a transaction is a
 * TXN record around its members' (dropped if it has none); the loop
 * turn's flush is the group commit (rbd_aof_flush, P1).  With appendonly
 * no (aof->enabled 0) it only counts the changes (for the periodic
 * snapshot and INFO): no record, no write, no fsync, no reply held.
 */
#include "config.h"

#include "aof.h"
#include "ops.h"

static void log_put(void *ctx, const void *p, size_t n)
{
    rbd_aof_put(ctx, p, n);
}

static void log_on_op(void *self, const rbd_op_t *op)
{
    rbd_aof_t *aof = self;
    size_t start;

    if (!aof->enabled) {
        aof->changes++;
        return;
    }
    start = rbd_aof_record_begin(aof, (uint8_t)op->type);
    rbd_op_encode(op, log_put, aof);
    rbd_aof_record_end(aof, start, rbd_op_sync(op->type));
}

static size_t log_txn_begin(void *self)
{
    rbd_aof_t *aof = self;

    /* The switch is refused inside a transaction (rbd_aof_disable, and
     * the snapshot that enables), so txn_end sees the same `enabled`. */
    return aof->enabled ? rbd_aof_record_begin(aof, RBD_OP_TXN) : 0;
}

static void log_txn_end(void *self, size_t start)
{
    rbd_aof_t *aof = self;

    if (!aof->enabled)
        return;
    /* Each member asked for its own fsync (P2) as it was appended. */
    if (aof->pending.len == start + RBD_REC_HDR)
        rbd_aof_record_drop(aof, start);
    else
        rbd_aof_record_end(aof, start, 0);
}

static int log_flush(void *self)
{
    rbd_aof_t *aof = self;

    return aof->enabled ? rbd_aof_flush(aof) : 0;
}

const rbd_sink_ops_t rbd_sink_log = {
    .name = "log",
    .on_op = log_on_op,
    .txn_begin = log_txn_begin,
    .txn_end = log_txn_end,
    .flush = log_flush,
};
