/*
 * ops_repl.c - the op of replicated filters (ops_def.h): REPL_POS, the
 * position in the replication stream up to which this host applied
 * (lib/shm/seg_repl.h).  A filter source (`filter-source nats`) applies
 * each stream message as one unit: rbd_op_txn_begin, the message's ops
 * through rbd_op_run, then REPL_POS with the message's sequence and the
 * stream's identity, then rbd_op_txn_end.  So the segment (its
 * transaction mark) and the log (one TXN record) hold each message's
 * changes together with its position or neither, and a restart by
 * takeover, snapshot or replay resumes the stream right after the last
 * message it holds.  The position needs no fsync of its own: a crash
 * that loses it loses the message's changes with it (the same TXN), and
 * the stream gives the message again.
 *
 * REPL_SKIP is NATS.SKIP's record: an operator's decision that the
 * stream message at a sequence (of one stream) is skipped by every host
 * that cannot apply it (a newer Rb-Format).  It travels in a message of
 * its own; a host halted on that sequence finds it among the messages
 * after, and skips (filter_source_loop.c); applied where it is, it
 * changes nothing.
 */
#include "config.h"

#include "ops_def.h"
#include "seg_repl.h"

/* REPL_POS, live or replayed: the segment's position becomes
 * (op->repl.seq, op->repl.stream), whatever it was (the source decides
 * what follows what: a bootstrap may start over from a snapshot's). */
static int repl_pos(rbd_state_t *st, rbd_op_t *op, int live)
{
    (void)live;
    rbi_segment_repl_set(st->seg, op->repl.seq, op->repl.stream);
    return RB_OK;
}

/* REPL_SKIP changes nothing where it is applied (nor is it logged): the
 * halted host acted on it before (filter_source_loop.c). */
static int repl_skip(rbd_state_t *st, rbd_op_t *op, int live)
{
    (void)st;
    op->noop = live;
    return RB_OK;
}

const rbd_op_def_t rbd_ops_repl[] = {
    { RBD_OP_REPL_POS, "REPL.POS", RBD_NAMES_NOTHING, 0, repl_pos,
      { RBD_U64(repl.seq), RBD_U64(repl.stream) } },
    { RBD_OP_REPL_SKIP, "REPL.SKIP", RBD_NAMES_NOTHING, 0, repl_skip,
      { RBD_U64(repl.seq), RBD_U64(repl.stream) } },
    RBD_OP_END,
};
