/*
 * rb_latch.h - the two-copy latch (a seqlock whose readers never wait).
 *
 * What: one 64-bit sequence word guarding two copies of a table.  Readers
 * use copy[seq & 1]; the single writer only ever rewrites the copy that
 * readers have been sent away from.  Why: a classic seqlock makes readers
 * spin while the writer is inside; with two copies there is always a
 * complete copy to read, so readers only retry when a write overtook them.
 * Workload: many readers at ~10^7-10^8 reads/s, one writer at <=10^3/s.
 *
 * Writer (one thread of the writer process):
 *     s = rb_latch_write_begin(&seq);   // seq odd  : readers -> copy 1
 *     ... rewrite copy 0 ...
 *     rb_latch_write_switch(&seq, s);   // seq even : readers -> copy 0
 *     ... rewrite copy 1 ...            // (published by the next begin)
 * Reader:
 *     do { s = rb_latch_read_begin(&seq); ... read copy[s & 1] with
 *          relaxed loads, bounds-checking everything ...
 *     } while (rb_latch_read_retry(&seq, s));
 *
 * Invariant L1: copy[s & 1] is complete and unchanging for as long as
 *   seq == s.  Invariant L2: a reader whose relaxed loads observed any store
 *   the writer made to copy[s & 1] after seq left s will observe seq != s in
 *   read_retry, and so discard what it read.
 *
 * All words are _Atomic uint64_t in shared memory; readers map them
 * PROT_READ, so only plain atomic loads (never RMW) are used on their side.
 */
#ifndef RB_LATCH_H
#define RB_LATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2,
               "64-bit atomics must be lock-free (a lock would write to a PROT_READ map)");

static inline uint64_t rb_latch_read_begin(const _Atomic uint64_t *seq)
{
    /* Acquire pairs with the writer's release stores of seq (write_begin and
     * write_switch): every store to copy[s & 1] made before seq became s is
     * visible to the relaxed loads that follow (L1). */
    return atomic_load_explicit(seq, memory_order_acquire);
}

static inline bool rb_latch_read_retry(const _Atomic uint64_t *seq, uint64_t s)
{
    /* Acquire fence: the relaxed data loads above cannot be reordered after
     * the re-load of seq below.  It pairs with the release fence the writer
     * issues after changing seq and before touching a copy: if any of our
     * loads saw such a later store, the re-load sees the new seq (L2). */
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(seq, memory_order_relaxed) != s;
}

/* Writer: send readers to copy 1 and return the new (odd) sequence.
 * Precondition: seq is even and both copies are complete, i.e. the previous
 * write ran to its end.  A writer that takes over from one that died
 * mid-write restores this first (see rb_ring_repair in ring.c). */
static inline uint64_t rb_latch_write_begin(_Atomic uint64_t *seq)
{
    /* Only this thread stores seq, so a relaxed load reads our own value. */
    uint64_t s = atomic_load_explicit(seq, memory_order_relaxed) + 1;
    /* Release: copy 1 (rewritten at the end of the previous write) is
     * complete for readers that acquire this odd value (L1). */
    atomic_store_explicit(seq, s, memory_order_release);
    /* Release fence: the copy-0 stores that follow are ordered after the
     * store above, for readers still on copy 0 (L2). */
    atomic_thread_fence(memory_order_release);
    return s;
}

/* Writer: copy 0 is complete; send readers to it so copy 1 can be rewritten. */
static inline void rb_latch_write_switch(_Atomic uint64_t *seq, uint64_t s)
{
    /* Release: the copy-0 stores above are visible to readers that acquire
     * s + 1 (L1). */
    atomic_store_explicit(seq, s + 1, memory_order_release);
    /* Release fence: the copy-1 stores that follow are ordered after the
     * store above, for readers still on copy 1 (L2). */
    atomic_thread_fence(memory_order_release);
}

/* The relaxed accessors every read section uses: loads only, never RMW. */
static inline uint64_t rb_ld(const _Atomic uint64_t *w)
{
    return atomic_load_explicit(w, memory_order_relaxed);
}

static inline void rb_st(_Atomic uint64_t *w, uint64_t v)
{
    atomic_store_explicit(w, v, memory_order_relaxed);
}

#endif /* RB_LATCH_H */
