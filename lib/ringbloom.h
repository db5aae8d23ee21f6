/*
 * ringbloom.h - the one public header of libringbloom.
 *
 * libringbloom shares hashing structures between the processes of one
 * host through a POSIX shared-memory segment:
 *
 *   - a consistent-hash ring (virtual nodes, integer weights) answering
 *     "which node owns this key?", and
 *   - filters of several kinds in one namespace (ringbloom/filter.h): Bloom
 *     filters and counting Bloom filters ("was this key (maybe) seen
 *     before?", the second deleting), cuckoo filters (membership that
 *     deletes), count-min sketches ("how often?", TinyLFU's admission) and
 *     HyperLogLog counters ("how many distinct keys?").
 *
 * One process, the *writer* (normally the daemon ringbloomd), creates the
 * segment and is the only one that changes it.  Any number of *readers* map
 * it read-only (O_RDONLY + PROT_READ) and query it without a system call,
 * allocation or lock; they never wait for the writer (see docs/design.md for
 * the seqlock/latch protocol that makes this safe).
 *
 * Conventions, for every function of the parts below unless it says
 * otherwise:
 *   - int-returning functions return 0 (RB_OK) or a positive answer on
 *     success and a negative RB_E* code on failure; rb_strerror() names it.
 *     On failure no state changes and output parameters are unspecified.
 *   - "Reader" functions may be called from any process that attached the
 *     segment, from any number of threads at once on one handle.
 *   - "Writer" functions may only be called by the process that created or
 *     re-opened the segment for writing, from one thread at a time.
 *   - Handles (rb_segment_t, rb_ring_t, rb_bloom_t, rb_hll_t, rb_cms_t,
 *     rb_tinylfu_t, rb_cuckoo_t, rb_cbf_t) are owned by the caller
 *     that obtained them and released with the matching close/free function.
 *   - Keys are arbitrary bytes (NUL and non-UTF-8 bytes included) given as
 *     pointer + length.
 */
#ifndef RINGBLOOM_H
#define RINGBLOOM_H

/* The parts, each self-contained, in lib/ringbloom/ (installed as
 * <ringbloom/...>). */
#include "ringbloom/core.h"     /* version, export macros, error codes, rb_key_t */
#include "ringbloom/segment.h"  /* the shared-memory segment */
#include "ringbloom/paths.h"    /* an instance's paths, trusted directories, the daemon's uid */
#include "ringbloom/ring.h"     /* the consistent-hash ring */
#include "ringbloom/bloom.h"    /* Bloom filters */
#include "ringbloom/hll.h"      /* HyperLogLog counters */
#include "ringbloom/cms.h"      /* count-min sketches, TinyLFU admission */
#include "ringbloom/cuckoo.h"   /* cuckoo filters (membership that deletes) */
#include "ringbloom/filter.h"   /* any filter: its kind, listing, delete, summary */
#include "ringbloom/cbf.h"      /* counting Bloom filters (Bloom filters that delete) */
#include "ringbloom/conn.h"     /* the write path: a connection to the daemon */

#endif /* RINGBLOOM_H */
