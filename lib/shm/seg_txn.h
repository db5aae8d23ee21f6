/*
 * seg_txn.h - the segment's transaction mark (seg_txn.c, header.txn_open):
 * with the RESP encoder, the only internals ringbloomd calls.  A writer
 * that applies a unit of changes to be kept whole or not at all
 * (ringbloomd: the members of one EXEC) sets the mark before the first
 * change and clears it after the last, so an object whose writer died
 * with the mark set may hold part of a unit, and one with it clear holds
 * each unit whole or not at all.  Readers ignore the mark: they see each
 * change as it is made.
 */
#ifndef RBI_SEG_TXN_H
#define RBI_SEG_TXN_H

#include "ringbloom.h"

/* Writer (the process holding seg writable; no other thread changes seg
 * meanwhile).  Sets the mark; every store the writer makes into seg after
 * this call is ordered after it, so a process killed at any point once a
 * change of the unit is in seg leaves the mark set.  A reader handle or
 * NULL is ignored.  Cost: a store and a fence; no system call. */
void rbi_segment_txn_begin(rb_segment_t *seg);

/* Writer.  Clears the mark, ordered after every store the writer made
 * into seg before this call: a process killed before the clear leaves the
 * mark set, one killed after it leaves every change of the unit in seg.
 * A reader handle or NULL is ignored. */
void rbi_segment_txn_end(rb_segment_t *seg);

/* Any handle, any thread.  1 if seg's header has the mark set (its
 * writer is inside a unit, or died inside one), 0 if not or seg is
 * NULL. */
int rbi_segment_txn_open(const rb_segment_t *seg);

#endif /* RBI_SEG_TXN_H */
