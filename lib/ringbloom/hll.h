/*
 * ringbloom/hll.h - HyperLogLog counters in the segment: Redis's PFADD /
 * PFCOUNT / PFMERGE, answered bit for bit as redis-server answers them.
 *
 * A counter is a directory slot (a name, like a Bloom filter's: the two
 * kinds share one namespace) and 16384 one-byte registers in the heap.
 * An element's register and run length are Redis's (MurmurHash64A with
 * seed 0xadc83b19, the low 14 bits the register, the trailing zeros of the
 * rest plus one the run), and the estimate is Redis 7's (Ertl's improved
 * raw estimator), so the same elements give the same count as PFCOUNT in
 * redis-server.  Its standard error is 1.04 / sqrt(16384) = 0.81%.
 *
 * The writer (the daemon) adds and merges; registers only ever grow, one
 * word store at a time, so readers count straight from shared memory with
 * no lock (docs/design.md, "HyperLogLog").
 */
#ifndef RINGBLOOM_HLL_H
#define RINGBLOOM_HLL_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "segment.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RB_HLL_REGISTERS 16384u   /* 2^14, Redis's HLL_REGISTERS */
#define RB_HLL_SEED      0xadc83b19ULL   /* Redis's MurmurHash64A seed for PFADD */

/* Writer.  PFADD: adds the n elements to counter name (1..RB_FILTER_NAME_MAX
 * bytes), creating it (all registers 0) if there is no such name.  Returns
 * 1 if the counter was created or any register grew, 0 if none did.
 * Errors: RB_EINVAL, RB_EROFS, RB_EWRONGTYPE (name holds a filter of another
 * kind: nothing changes), RB_ESLOTS (directory full), RB_ENOSPC (the
 * registers do not fit), RB_ECORRUPT (its slot fails validation). */
RB_EXPORT RB_WUR int rb_hll_add(rb_segment_t *seg, const char *name, size_t len,
                                const rb_key_t *elements, size_t n);

/* Writer.  PFMERGE: sets every register of dest to the largest of its own
 * (if dest exists) and those of the n source counters (names as rb_key_t;
 * a missing source is skipped, as Redis does), creating dest if missing.
 * Errors: RB_EINVAL, RB_EROFS, RB_EWRONGTYPE (dest or a source holds a filter
 * of another kind: nothing changes), RB_ESLOTS, RB_ENOSPC, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_hll_merge(rb_segment_t *seg, const char *dest, size_t len,
                                  const rb_key_t *sources, size_t n);

/* Writer.  Deletes counter name: its slot and registers are freed, and a
 * reader counting it meanwhile answers as if it had not been there (the
 * Bloom filter's delete protocol, R1).  RB_EINVAL, RB_EROFS, RB_ENOENT
 * (no counter of that name), RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_hll_delete(rb_segment_t *seg, const char *name, size_t len);

/* Reader.  PFCOUNT: the estimated number of distinct elements added to the
 * union of the n counters named (missing ones count as empty; n = 1 is one
 * counter's count), from shared memory, without changing anything.  One
 * counter's count is read from the count the writer keeps with it
 * (rb_hll_count_keep) while that is current, and made from its 16384
 * registers only when an add or merge raised one since.
 * Errors: RB_EINVAL (n == 0, a bad name), RB_EWRONGTYPE (a name holds a filter
 * of another kind), RB_ECORRUPT, RB_EBUSY (a counter kept being replaced
 * under the read past the retry bound). */
RB_EXPORT RB_WUR int rb_hll_count(const rb_segment_t *seg, const rb_key_t *names, size_t n,
                                  uint64_t *out);

/* Writer.  PFCOUNT as redis-server answers it: rb_hll_count's answer and
 * errors (RB_EROFS on a reader's handle), and for one counter its count,
 * if made from its registers, kept with it (a word of its directory slot,
 * not logged: it is derived) so that every reader counts it in one load
 * until an add or merge raises a register, which clears it (Redis caches
 * the cardinality in the HLL header the same way). */
RB_EXPORT RB_WUR int rb_hll_count_keep(rb_segment_t *seg, const rb_key_t *names, size_t n,
                                       uint64_t *out);

/* Reader.  A handle on counter name (its name kept, and a hint of its
 * directory slot, so a count need not walk the directory): RB_OK, or
 * RB_EINVAL, RB_ENOENT (no such name now), RB_EWRONGTYPE (a filter of another
 * kind), RB_ENOMEM, RB_EBUSY.  The handle names the counter by its name: if
 * the counter is deleted and made again, or the segment handle follows a
 * restarted daemon, the handle counts whatever counter bears the name then
 * (0 while there is none).  Close with rb_hll_close; any number of threads
 * may count through one handle at once. */
typedef struct rb_hll rb_hll_t;
RB_EXPORT RB_WUR int rb_hll_open(const rb_segment_t *seg, const char *name, size_t len,
                                 rb_hll_t **out);
RB_EXPORT void rb_hll_close(rb_hll_t *h);

/* Reader.  PFCOUNT of the one counter h names: rb_hll_count's answer and
 * errors (one load while the writer's kept count is current). */
RB_EXPORT RB_WUR int rb_hll_card(const rb_hll_t *h, uint64_t *out);

/* Reader.  Copies counter name's registers into out[0 .. RB_HLL_REGISTERS)
 * (each 0..51), as they were at one moment between two writer stores.
 * 1 if name is a counter, 0 if there is no such name (out all 0).
 * Errors: RB_EINVAL, RB_EWRONGTYPE (a filter of another kind), RB_ECORRUPT,
 * RB_EBUSY. */
RB_EXPORT RB_WUR int rb_hll_registers(const rb_segment_t *seg, const char *name, size_t len,
                                      uint8_t *out);

/* The estimate Redis 7's hllCount makes of registers r[0 .. RB_HLL_REGISTERS)
 * (a register above 51, which no add makes, is taken as 51). */
RB_EXPORT uint64_t rb_hll_estimate(const uint8_t *r);

#ifdef __cplusplus
}
#endif

#endif /* RINGBLOOM_HLL_H */
