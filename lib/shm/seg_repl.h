/*
 * seg_repl.h - the replicated filters' position in the segment
 * (seg_repl.c, header words repl_seq and repl_stream): which message of
 * which stream `filter-source nats` last applied to this segment, so a
 * daemon that takes the segment over, restores it from a snapshot or
 * replays its log resumes the stream after it, neither re-applying nor
 * skipping a message.  Internal (rbi_), not installed.
 *
 * Contract: the writer sets the position inside the unit (seg_txn.h's
 * mark) of the changes the message made, through the op that logs it
 * (RBD_OP_REPL_POS, ringbloomd's ops_repl.c), so a segment whose mark is
 * clear holds exactly the changes of every message up to repl_seq of
 * repl_stream and none after, and its log says the same.  Both words are
 * 0 in a segment no replicated change reached (they were reserved and
 * zero before, so the layout version stays).
 */
#ifndef RBI_SEG_REPL_H
#define RBI_SEG_REPL_H

#include <stdint.h>

#include "ringbloom.h"

/* Writer.  Stores seq and stream (0, 0: none).  A reader handle or NULL
 * is ignored.  Cost: two stores; no system call. */
void rbi_segment_repl_set(rb_segment_t *seg, uint64_t seq, uint64_t stream);

/* Any handle.  The position: *seq and *stream (0, 0 for NULL or none).
 * Read by the writer (its own stores) or of a segment no writer changes;
 * another thread may see the two words of different positions. */
void rbi_segment_repl_get(const rb_segment_t *seg, uint64_t *seq, uint64_t *stream);

#endif /* RBI_SEG_REPL_H */
