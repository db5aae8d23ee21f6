/*
 * segwatch.h - keeps the segment reachable by its name (segwatch.c).
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
    rbd_ratelog_t log;         /* a republish that keeps failing */
} rbd_segwatch_t;

/* Once a second: if the instance's name in /dev/shm no longer leads to
 * st->seg, republishes the state under it (logged, INFO memory). */
void rbd_segwatch_check(rbd_segwatch_t *w, rbd_state_t *st, const rbd_config_t *cfg);

#endif /* RBD_SEGWATCH_H */
