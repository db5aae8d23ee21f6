/*
 * filters.h - the aging tick (filters.c): above ops.c, it rotates the
 * aging filters the handle cache (handles.h) keeps the list of.
 */
#ifndef RBD_FILTERS_H
#define RBD_FILTERS_H

#include <stdint.h>

#include "handles.h"

struct rbd_state;
struct rbd_aof;

/* Once a second: rotates (and logs, through ops.c) the aging filters of
 * st whose window has passed at now_unix; nothing while the log cannot be
 * written, since a rotation must be logged; and gives back freed pages
 * (rb_segment_trim: what a snapshot held, every free run's every ten
 * seconds).  Cost: one rotation check per
 * aging filter (handles.h, A), none for any other name. */
void rbd_filters_tick(struct rbd_state *st, struct rbd_aof *aof, uint64_t now_unix);

#endif /* RBD_FILTERS_H */
