/*
 * rb_latch.h - the two-copy latch (a seqlock whose readers never wait).
 *
 * What: one 64-bit sequence word guarding two copies of a table.  Readers
 * use the active copy, copy[seq & 1]; the single writer only ever writes
 * the other, inactive copy, then flips the sequence to make it active.
 * Why: a classic seqlock makes readers spin while the writer is inside;
 * here there is always a complete copy to read, and a reader retries only
 * when a write overtook it.  Each publish writes one copy and flips once,
 * so it costs one table's stores and invalidates readers' caches once.
 * Workload: many readers at ~10^7-10^8 reads/s, one writer at <=10^3/s.
 *
 * Writer (one thread of the writer process):
 *     s = rbi_latch_write_prepare(&seq);  // inactive copy: (s & 1) ^ 1
 *     ... rewrite copy[(s & 1) ^ 1] ...
 *     rbi_latch_publish(&seq, s);         // seq = s + 1: readers -> it
 * Reader:
 *     do { s = rbi_latch_read_begin(&seq); ... read copy[s & 1] with
 *          relaxed loads, bounds-checking everything ...
 *     } while (rbi_latch_read_retry(&seq, s));
 *
 * Invariant L1: copy[s & 1] is complete and unchanging for as long as
 *   seq == s (the writer writes only the inactive copy, and the copy that
 *   was active at s becomes writable only after seq has moved past s).
 * Invariant L2: a reader whose relaxed loads observed any store the writer
 *   made to copy[s & 1] after seq left s observes seq != s in read_retry,
 *   and so discards what it read.
 * The inactive copy is the previous version, or a half-written one if a
 * writer died mid-publish; nobody reads it, so a writer that takes over
 * needs no repair.
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

static inline uint64_t rbi_latch_read_begin(const _Atomic uint64_t *seq)
{
    /* Acquire pairs with the writer's release store in rbi_latch_publish:
     * every store to copy[s & 1] made before seq became s is visible to
     * the relaxed loads that follow (L1). */
    return atomic_load_explicit(seq, memory_order_acquire);
}

static inline bool rbi_latch_read_retry(const _Atomic uint64_t *seq, uint64_t s)
{
    /* Acquire fence: the relaxed data loads above cannot be reordered after
     * the re-load of seq below.  It pairs with the writer's release fence
     * in rbi_latch_write_prepare: if any of our loads saw a store made to
     * the copy after it became inactive, the re-load sees the flip that
     * made it inactive (L2). */
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(seq, memory_order_relaxed) != s;
}

/* Writer: the sequence now; the copy to write is (s & 1) ^ 1. */
static inline uint64_t rbi_latch_write_prepare(const _Atomic uint64_t *seq)
{
    /* Acquire: a writer taking over from a dead one orders its stores
     * after that writer's last flip, which it reads here. */
    uint64_t s = atomic_load_explicit(seq, memory_order_acquire);
    /* Release fence: the stores to the inactive copy that follow cannot be
     * observed by a reader without that reader also observing the flip
     * that made the copy inactive (L2). */
    atomic_thread_fence(memory_order_release);
    return s;
}

/* Writer: the inactive copy is complete; make it the active one. */
static inline void rbi_latch_publish(_Atomic uint64_t *seq, uint64_t s)
{
    /* Release: the copy's stores above are visible to readers that
     * acquire s + 1 (L1). */
    atomic_store_explicit(seq, s + 1, memory_order_release);
}

/* The relaxed accessors every read section uses: loads only, never RMW. */
static inline uint64_t rbi_ld(const _Atomic uint64_t *w)
{
    return atomic_load_explicit(w, memory_order_relaxed);
}

static inline void rbi_st(_Atomic uint64_t *w, uint64_t v)
{
    atomic_store_explicit(w, v, memory_order_relaxed);
}

#endif /* RB_LATCH_H */
