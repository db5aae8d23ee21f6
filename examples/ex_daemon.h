/*
 * ex_daemon.h - a private ringbloomd for the examples (see ex_daemon.c).
 */
#ifndef RB_EX_DAEMON_H
#define RB_EX_DAEMON_H

#include <sys/types.h>
#include <sys/un.h>

#include "ringbloom.h"

#define EX_DIR_MAX 256

typedef struct rbd {
    pid_t pid;
    char  dir[EX_DIR_MAX];
    char  sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char  log[EX_DIR_MAX + 16];
    char  instance[RB_INSTANCE_MAX + 1];
    uid_t uid;            /* the daemon's user: readers attach only its
                             segment (rb_segment_attach_owned) */
} ex_daemon_t;

/* The daemon to run: opt (--daemon), $RB_DAEMON, ../daemon/ringbloomd
 * beside this program (also from libtool's .libs/), else "ringbloomd". */
const char *ex_daemon_path(const char *opt, char *buf, size_t cap);
/* Copies the daemon's log to stderr. */
void ex_print_log(const ex_daemon_t *d);
/* Starts ringbloomd in the foreground and connects; see ex_daemon.c.
 * On error too the caller calls ex_daemon_stop. */
int ex_daemon_start(ex_daemon_t *d, const char *bin, const char *tmpbase, const char *instance,
              rb_conn_t **conn);
/* SHUTDOWN NOSAVE (SIGKILL after 5 s), removes the segment and temp dir. */
void ex_daemon_stop(ex_daemon_t *d, rb_conn_t *conn);

#endif
