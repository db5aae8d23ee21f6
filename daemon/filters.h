/*
 * filters.h - the daemon's open filter handles, by name, and the aging
 * tick (filters.c).
 */
#ifndef RBD_FILTERS_H
#define RBD_FILTERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringbloom.h"

struct rbd_state;
struct rbd_aof;

typedef struct rbd_filter_ref {
    char *name;
    size_t len;
    rb_bloom_t *bf;
} rbd_filter_ref_t;

/* Handles into one segment: closed (rbd_filters_close) before it is. */
typedef struct rbd_filters {
    rbd_filter_ref_t *v;
    size_t n, cap;
} rbd_filters_t;

/* The open handle of filter name in seg, opened on first use, or NULL
 * (*rc: RB_ENOENT, RB_EWRONGTYPE: a filter of another kind, or an error). */
rb_bloom_t *rbd_filters_get(rbd_filters_t *f, const rb_segment_t *seg, const char *name,
                            size_t len, int *rc);
void rbd_filters_close(rbd_filters_t *f);

/* 1 if name is a HyperLogLog counter in seg, else 0. */
int rbd_filters_is_hll(const rb_segment_t *seg, const char *name, size_t len);

/* Closes and drops the handle of filter name, if one is open: after the
 * filter is deleted, the next rbd_filters_get of the name opens whatever
 * holds it then (nothing, or a filter made since).  Inline because its
 * caller, the delete op (ops.c), lies below filters.c (docs/design.md,
 * "Files and layers"). */
static inline void rbd_filters_forget(rbd_filters_t *f, const char *name, size_t len)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].len == len && memcmp(f->v[i].name, name, len) == 0) {
            rb_bloom_close(f->v[i].bf);
            free(f->v[i].name);
            f->v[i] = f->v[--f->n];
            return;
        }
}

/* Once a second: rotates (and logs, through ops.c) the aging filters of
 * st whose window has passed at now_unix; nothing while the log cannot be
 * written, since a rotation must be logged. */
void rbd_filters_tick(struct rbd_state *st, struct rbd_aof *aof, uint64_t now_unix);

#endif /* RBD_FILTERS_H */
