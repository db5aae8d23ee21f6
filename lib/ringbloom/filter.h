/*
 * ringbloom/filter.h - any filter, whatever its kind: the kinds this
 * library knows, the kind of a name, one listing of the namespace, a
 * delete and a one-line summary that work for every kind.
 *
 * Bloom filters, HyperLogLog counters, count-min sketches and cuckoo
 * filters share one namespace (the segment's directory).  Each kind is
 * one row of the library's kind table (lib/filter/kind.c); what this header
 * offers comes from that table, so a program written against it (the
 * daemon's TYPE, DEL, SCAN TYPE and INFO, the CLI's `filters`, metrics)
 * learns a new kind without a change.
 */
#ifndef RINGBLOOM_FILTER_H
#define RINGBLOOM_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "segment.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A kind of filter.  The pointers rb_kind and rb_filter_kind hand out are
 * the library's own, valid for the life of the process: compare them. */
typedef struct rb_kind_desc {
    const char *name;   /* "bloom", "hyperloglog", "cms", "cuckoo" */
    const char *type;   /* what Redis's TYPE answers for it: "MBbloom--",
                           "string", "CMSk-TYPE", "MBbloomCF" */
} rb_kind_desc_t;

/* The kinds, i = 0, 1, ... in table order; NULL past the last. */
RB_EXPORT const rb_kind_desc_t *rb_kind(size_t i);

/* Reader or writer.  The kind of live filter name in *out: RB_OK,
 * RB_ENOENT, RB_EINVAL, RB_ECORRUPT (its slot names no kind this library
 * knows), RB_EBUSY (the slot kept changing).  Cost: O(directory). */
RB_EXPORT RB_WUR int rb_filter_kind(const rb_segment_t *seg, const char *name, size_t len,
                                    const rb_kind_desc_t **out);

/* Reader or writer.  A step of a walk over the directory, as
 * rb_bloom_scan (the same cursor and promises), with each filter's kind
 * (NULL for a slot of no known kind).  count SIZE_MAX walks it all. */
RB_EXPORT int rb_filter_scan(const rb_segment_t *seg, uint64_t *cursor, size_t count,
                             int (*fn)(const char *name, size_t len,
                                       const rb_kind_desc_t *kind, void *arg),
                             void *arg);

/* Writer.  Deletes filter name of any kind (its kind's delete): RB_OK,
 * RB_ENOENT, RB_EINVAL, RB_EROFS, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_filter_delete(rb_segment_t *seg, const char *name, size_t len);

/* The figures every kind has, for listings (rb_filter_summary). */
typedef struct rb_filter_summary {
    const rb_kind_desc_t *kind;
    const char *form;      /* the kind in words: "scaling", "non-scaling",
                              "aging" (Bloom), "hyperloglog", "count-min",
                              "count-min 4-bit", "cuckoo" */
    const char *layout;    /* "blocked", "standard", "redisbloom" (Bloom), else "" */
    uint64_t items;        /* keys added (a Bloom filter's new keys, an
                              HLL's estimate, a sketch's total count) */
    uint64_t capacity;     /* keys it was sized for, 0 if none */
    uint64_t bytes;        /* its arrays in the heap */
    uint32_t layers;       /* layers, generations or rows */
    double error_rate;     /* its error bound (HLL: the standard error) */
} rb_filter_summary_t;

/* Reader or writer.  The summary of live filter name: RB_OK, RB_ENOENT,
 * RB_EINVAL, RB_ECORRUPT, RB_EBUSY, RB_ENOMEM. */
RB_EXPORT RB_WUR int rb_filter_summary(const rb_segment_t *seg, const char *name, size_t len,
                                       rb_filter_summary_t *out);

#ifdef __cplusplus
}
#endif

#endif /* RINGBLOOM_FILTER_H */
