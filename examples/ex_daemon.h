/*
 * ex_daemon.h - a private ringbloomd for the examples (see ex_daemon.c),
 * on the launcher the tests use too (tests/harness/launch.h).
 */
#ifndef RB_EX_DAEMON_H
#define RB_EX_DAEMON_H

#include <sys/types.h>

#include "launch.h"
#include "ringbloom.h"

typedef struct ex_daemon {
    rbl_daemon_t rb;      /* the process, its temp dir, socket and instance */
    uid_t uid;            /* the daemon's user: readers attach only its
                             segment (rb_segment_attach_owned) */
} ex_daemon_t;

/* Starts ringbloomd (bin: rbl_daemon_path) in the foreground and connects;
 * see ex_daemon.c.  On error too the caller calls ex_daemon_stop. */
int ex_daemon_start(ex_daemon_t *d, const char *bin, const char *tmpbase, const char *instance,
                    rb_conn_t **conn);
/* SHUTDOWN NOSAVE (SIGKILL after 5 s), removes the segment and temp dir. */
void ex_daemon_stop(ex_daemon_t *d, rb_conn_t *conn);

#endif
