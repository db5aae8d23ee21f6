/*
 * latch.h - the read protocols of the segment, header-only: the two-copy
 * latch (the ring), the generation section (a filter's arrays) and the
 * in-place sequence (a ring copy's node states), with the relaxed
 * accessors every read section uses.
 *
 * All words are _Atomic uint64_t in shared memory; readers map them
 * PROT_READ, so only plain atomic loads (never RMW) are used on their side.
 * A section gives up after RBI_READ_RETRIES overtaking writes (RB_EBUSY).
 *
 * ---- The two-copy latch (a seqlock whose readers never wait) -----------
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
 * ---- The generation section --------------------------------------------
 *
 * What: one 64-bit generation word (rbi_gen_t) guarding data that changes
 * in place only monotonically (Bloom bits, which are only ever set) and is
 * otherwise replaced: an array swapped for a fresh zeroed one, a layer
 * count lowered.  The writer builds the replacement in fresh memory,
 * stores the offsets that name it, publishes by bumping the generation and
 * only then frees what was replaced.  Why not the latch: there is no
 * second copy to keep in step; the replaced memory is the old copy, kept
 * until the bump.  Monotonic changes need no bump: a reader sees each bit
 * before or after it was set, and either is a right answer.
 *
 * Writer:
 *     ... build the replacement, store the offsets naming it ...
 *     rbi_gen_publish(&gen);            // G1, G2
 *     ... free what was replaced (a later allocation may reuse it) ...
 * Reader:
 *     do { g = rbi_gen_read_begin(&gen); ... read with relaxed loads,
 *          bounds-checking everything ...
 *     } while (rbi_gen_read_retry(&gen, g));
 *
 * Invariant G1: a reader whose section began at generation g sees every
 *   store the writer made before publishing g (the replacement and the
 *   offsets naming it).
 * Invariant G2: a reader whose loads observed a store to memory replaced
 *   at a publish after g (its reuse by a later allocation) observes
 *   gen != g in read_retry, and so discards what it read.
 *
 * ---- The in-place sequence (a classic seqlock, ck_sequence's) ----------
 *
 * What: one 64-bit word guarding a few words the writer changes in place,
 * odd while it is inside (a ring copy's node states, format.h).  Why not
 * the latch: flipping one node's state would rewrite a whole copy
 * (O(points)); the guarded words are a few, stored in nanoseconds, so a
 * reader that meets the writer inside simply retries (bounded, as every
 * section).
 *
 * Writer (the one thread that writes the words):
 *     rbi_seq_write_begin(&q);   ... store the guarded words ...
 *     rbi_seq_write_end(&q);
 * Reader (inside any other section, whose own re-check still applies):
 *     do { v = rbi_seq_read_begin(&q); ... relaxed loads ...
 *     } while (rbi_seq_read_retry(&q, v));
 *
 * Invariant Q1: a reader whose section began at an even value v and
 *   re-checked v saw every store made before q became v and none made
 *   after: a store after write_begin is ordered after the odd value by the
 *   writer's release fence, which pairs with the reader's acquire fence
 *   before the re-load, so seeing such a store means re-loading q != v.
 */
#ifndef RBI_LATCH_H
#define RBI_LATCH_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2,
               "64-bit atomics must be lock-free (a lock would write to a PROT_READ map)");

/* A read section gives up after this many overtaking writes (RB_EBUSY).  A
 * retry costs one read section (~100 ns); a write takes microseconds or
 * more, so a reader meets this bound only under a pathological writer. */
#define RBI_READ_RETRIES 100000u

/* After this many retries in a row a reader yields its CPU before each
 * further one (rbi_read_pause): a writer preempted inside an in-place
 * sequence (odd) then gets to finish on a busy machine, where spinning
 * readers would otherwise use up RBI_READ_RETRIES in milliseconds and
 * answer RB_EBUSY (seen with two CI runs on two cores).  Never reached
 * without such a stall, so a read still makes no system call. */
#define RBI_READ_SPINS 1024u

/* Before retry t + 1 of a read section. */
static inline void rbi_read_pause(uint32_t t)
{
    if (t >= RBI_READ_SPINS)
        sched_yield();
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

/* ---- two-copy latch ---------------------------------------------------- */

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
     * that made the copy inactive (L2; pairs with rbi_latch_read_retry's
     * acquire fence). */
    atomic_thread_fence(memory_order_release);
    return s;
}

/* Writer: the inactive copy is complete; make it the active one. */
static inline void rbi_latch_publish(_Atomic uint64_t *seq, uint64_t s)
{
    /* Release: the copy's stores above are visible to readers that
     * acquire s + 1 in rbi_latch_read_begin (L1). */
    atomic_store_explicit(seq, s + 1, memory_order_release);
}

/* ---- generation section ------------------------------------------------ */

/* One word in shared memory; a type of its own so that only the four
 * operations below touch it. */
typedef struct rbi_gen {
    _Atomic uint64_t word;
} rbi_gen_t;

_Static_assert(sizeof(rbi_gen_t) == 8, "a generation is one shared word");

static inline uint64_t rbi_gen_read_begin(const rbi_gen_t *gen)
{
    /* Acquire pairs with the release store in rbi_gen_publish: the
     * replacement and the offsets naming it, stored before the bump, are
     * visible to the relaxed loads that follow (G1). */
    return atomic_load_explicit(&gen->word, memory_order_acquire);
}

static inline bool rbi_gen_read_retry(const rbi_gen_t *gen, uint64_t g)
{
    /* Acquire fence: the relaxed loads above cannot be reordered after the
     * re-load below.  It pairs with the release fence in rbi_gen_publish:
     * if any of those loads saw a store the writer made after the bump
     * (into replaced memory, reused), the re-load sees the bump (G2). */
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&gen->word, memory_order_relaxed) != g;
}

/* Writer: the replacement is in place; publish it.  What it replaced may
 * be freed (and reused) once this returns. */
static inline void rbi_gen_publish(rbi_gen_t *gen)
{
    /* Only the writer stores the word, so a load and a store are enough. */
    uint64_t g = atomic_load_explicit(&gen->word, memory_order_relaxed);

    /* Release: the replacement stored above is visible to readers that
     * acquire g + 1 in rbi_gen_read_begin (G1). */
    atomic_store_explicit(&gen->word, g + 1, memory_order_release);
    /* Release fence: stores that follow (into the replaced memory, once
     * freed and reused) cannot be observed by a reader without the bump
     * (G2; pairs with rbi_gen_read_retry's acquire fence). */
    atomic_thread_fence(memory_order_release);
}

/* Writer: a word that nobody can read yet starts at generation 0.  A
 * directory slot is zero when its segment is made and then never reset:
 * a slot reused after a delete keeps its generation (R1, bloom_write.c). */
static inline void rbi_gen_init(rbi_gen_t *gen)
{
    atomic_store_explicit(&gen->word, 0, memory_order_relaxed);
}

/* ---- in-place sequence ------------------------------------------------- */

static inline uint64_t rbi_seq_read_begin(const _Atomic uint64_t *q)
{
    /* Acquire pairs with rbi_seq_write_end's release store: the words
     * stored before q became even are visible to the loads that follow. */
    return atomic_load_explicit(q, memory_order_acquire);
}

/* True if the section must be read again: it began while the writer was
 * inside (odd), or the writer has been inside since (Q1). */
static inline bool rbi_seq_read_retry(const _Atomic uint64_t *q, uint64_t v)
{
    atomic_thread_fence(memory_order_acquire);
    return (v & 1) != 0 || atomic_load_explicit(q, memory_order_relaxed) != v;
}

static inline void rbi_seq_write_begin(_Atomic uint64_t *q)
{
    uint64_t v = atomic_load_explicit(q, memory_order_relaxed);

    atomic_store_explicit(q, v + 1, memory_order_relaxed);
    /* Release fence: the stores that follow are not observed without the
     * odd value (Q1; pairs with rbi_seq_read_retry's acquire fence). */
    atomic_thread_fence(memory_order_release);
}

static inline void rbi_seq_write_end(_Atomic uint64_t *q)
{
    uint64_t v = atomic_load_explicit(q, memory_order_relaxed);

    /* Release: the stores above are visible to readers acquiring v + 1. */
    atomic_store_explicit(q, v + 1, memory_order_release);
}

#endif /* RBI_LATCH_H */
