/*
 * seg_txn.c - the segment's transaction mark (seg_txn.h): one header word,
 * txn_open (offset 136, reserved and zero in segments made before it), set
 * by the writer around a unit of changes that must survive a crash whole
 * or not at all.  Why a header word: a restarting daemon re-attaches to
 * the segment its predecessor left as the freshest state, and only the
 * segment can say that the predecessor died half-way through a unit
 * (docs/design.md, T1 and "Start-up").  Workload: two stores per EXEC;
 * one load per daemon start.
 */
#include "config.h"

#include "seg_txn.h"
#include "segment.h"

void rbi_segment_txn_begin(rb_segment_t *seg)
{
    if (seg == NULL || !seg->writable)
        return;
    rbi_st(&rbi_hdr(rbi_seg_map(seg))->txn_open, 1);
    /* Release fence: the mark is stored before any store of the unit
     * that follows, so no change of the unit is in seg without the mark
     * (in program order, which is what a SIGKILLed writer leaves, and for
     * a reader of the header alike). */
    atomic_thread_fence(memory_order_release);
}

void rbi_segment_txn_end(rb_segment_t *seg)
{
    if (seg == NULL || !seg->writable)
        return;
    /* Release: every store of the unit is in seg before the mark is
     * cleared, so a clear mark never hides a missing change. */
    atomic_store_explicit(&rbi_hdr(rbi_seg_map(seg))->txn_open, 0, memory_order_release);
}

int rbi_segment_txn_open(const rb_segment_t *seg)
{
    /* Acquire: pairs with rbi_segment_txn_end's release. */
    return seg != NULL &&
           atomic_load_explicit(&rbi_hdr(rbi_seg_map(seg))->txn_open, memory_order_acquire) != 0;
}
