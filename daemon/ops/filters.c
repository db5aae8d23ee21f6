/*
 * filters.c - the segment's second: the aging tick rotates the aging
 * filters whose window has passed, each rotation an op (ops.c) so it is
 * logged like a command's change.  It visits only the aging filters, which
 * the handle cache keeps the list of (handles.c): an idle daemon's second
 * costs what ages, not what exists.  The same second gives back freed
 * pages a snapshot held (rb_segment_trim), and about every ten seconds
 * sweeps every free run (pages readers' faults put back).
 */
#include "config.h"

#include <syslog.h>

#include "aof.h"
#include "filters.h"
#include "ops.h"
#include "rbd_log.h"

#define RBD_SWEEP_SECONDS 10   /* between sweeps of every free run */

typedef struct tick_arg {
    rbd_state_t *st;
    rbd_aof_t *aof;
    uint64_t now;
} tick_arg_t;

static void tick_filter(const char *name, size_t len, rb_bloom_t *bf, void *arg)
{
    tick_arg_t *t = arg;
    rbd_op_t op = { .type = RBD_OP_BF_ROTATE, .name = name, .len = len, .now = t->now,
                    .bf = bf };
    int rc = rbd_op_run(t->st, t->aof, &op);

    if (rc < 0)
        rbd_log(LOG_WARNING, "rotating filter '%.*s' failed: %s", (int)len, name,
                rb_strerror(rc));
}

void rbd_filters_tick(rbd_state_t *st, rbd_aof_t *aof, uint64_t now_unix)
{
    tick_arg_t t = { st, aof, now_unix };

    /* RB_EBUSY while a snapshot is being written: it stays pending. */
    (void)rb_segment_trim(st->seg, now_unix % RBD_SWEEP_SECONDS == 0);
    if (rbd_aof_refuses(aof))
        return;   /* a rotation must be logged; wait for the log */
    rbd_filters_aging(&st->filters, st->seg, tick_filter, &t);
}
