/*
 * segwatch.h - keeps the segment reachable by its name and cut to its
 * live data (segwatch.c).
 */
#ifndef RBD_SEGWATCH_H
#define RBD_SEGWATCH_H

#include <stdint.h>

#include "rbd_config.h"
#include "rbd_log.h"
#include "state.h"

typedef struct rbd_segwatch {
    int linked;                /* the name in /dev/shm leads to the segment */
    uint64_t republished;      /* times the state was republished under it */
    uint64_t shrunk;           /* times a rebuild cut the segment's free tail */
    uint64_t shrunk_bytes;     /* committed bytes those rebuilds cut */
    uint64_t last_shrink_ms;   /* the last one's time (the loop held) */
    uint64_t shrink_after_ms;  /* no rebuild before (monotonic): one failed */
    rbd_ratelog_t log;         /* a republish that keeps failing */
    rb_segment_huge_t huge;    /* INFO's copy of rb_segment_huge_status */
    uint64_t huge_ms;          /* when it was taken (monotonic), 0: never */
} rbd_segwatch_t;

/* Once a second, without a snapshot in progress: if the instance's name in
 * /dev/shm no longer leads to st->seg, republishes the state under it;
 * else if the segment's free tail passes segment-shrink-bytes and the
 * live data, cuts it by a rebuild (both logged, INFO memory). */
void rbd_segwatch_check(rbd_segwatch_t *w, rbd_state_t *st, const rbd_config_t *cfg);

/* At start and after a republish: huge-pages yes turns 2 MiB pages on for
 * seg (rb_segment_huge_pages) and logs whether they back it, and if not
 * why and the fix (a warning: the segment works with small pages); no
 * leaves a segment made with them as it is (logged). */
void rbd_segwatch_huge(rb_segment_t *seg, const rbd_config_t *cfg);

/* For INFO: rb_segment_huge_status of seg, at most a second old (it reads
 * /proc/self/smaps, too slow for a command a client may send in a loop).
 * NULL if it cannot be had. */
const rb_segment_huge_t *rbd_segwatch_huge_status(rbd_segwatch_t *w, const rb_segment_t *seg);

#endif /* RBD_SEGWATCH_H */
