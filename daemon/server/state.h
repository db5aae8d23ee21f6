/*
 * state.h - what ringbloomd serves, and its mutations (ops.c) change: the
 * segment, the writer's ring model, the filter handles open on the
 * segment, the op sinks, and the counts INFO shows of the changes.
 */
#ifndef RBD_STATE_H
#define RBD_STATE_H

#include <stdint.h>

#include "handles.h"
#include "ringbloom.h"
#include "sink.h"

typedef struct rbd_state {
    rb_segment_t *seg;         /* the live segment (segwatch.c may replace it) */
    rb_ring_t *ring;           /* the ring model; readers see what is published in seg */
    rbd_filters_t filters;     /* handles into seg */
    uint64_t bf_adds;          /* keys new to their filter (live adds, not replay) */
    uint64_t ring_changes;     /* ring changes published (live, not replay) */
    rbd_sinks_t sinks;         /* the consumers of its live ops (sink.h): the log,
                                  the etcd source; registered at start (main.c) */
    struct {                   /* the limits a change from beyond this host (a
                                  source's) keeps to, as a local command does:
                                  the configuration's, copied by server.c when
                                  it listens and at every reload */
        uint32_t max_nodes;
        uint32_t max_ring_points;
        uint32_t ring_down_max_percent;
    } limits;
} rbd_state_t;

#endif /* RBD_STATE_H */
