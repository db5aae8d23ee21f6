/*
 * launch.h - a private ringbloomd, for the tests and the examples alike: a
 * fresh temp directory for its socket, state, config and log, the daemon
 * started there and waited for until its socket answers, and stopped
 * again with its segment and the directory removed.  Plain C on the public
 * API (no Check): the tests' harness (rbd_test.c) asserts on what it
 * returns, the examples (examples/ex_daemon.c) print it.
 *
 *     rbl_init   temp dir, file names, instance
 *     rbl_start  runs argv there and waits for the socket
 *     rbl_stop   SHUTDOWN NOSAVE or a signal, SIGKILL after a bound
 *     rbl_remove the daemon, its segment and the temp dir gone
 */
#ifndef RB_LAUNCH_H
#define RB_LAUNCH_H

#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/un.h>

#include "ringbloom.h"

#define RBL_DIR_MAX 128   /* dir/s.sock must fit sun_path anyway */

typedef struct rbl_daemon {
    pid_t pid;                       /* the running daemon, 0 if none */
    pid_t owner;                     /* the process that made it (rbl_init): the
                                        only one rbl_remove acts in */
    char dir[RBL_DIR_MAX];           /* the temp directory; "" once removed */
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];   /* dir/s.sock */
    char conf[RBL_DIR_MAX + 32];     /* dir/ringbloomd.conf, for a caller that
                                        writes a config and passes -c */
    char log[RBL_DIR_MAX + 32];      /* dir/daemon.log: its output, every run */
    char inst[RB_INSTANCE_MAX + 1];  /* its instance (the segment's name) */
    /* How rbl_start runs it; the caller may set them after rbl_init. */
    rlim_t nofile_soft, nofile_hard; /* its RLIMIT_NOFILE, if nofile_soft != 0 */
    int own_group;                   /* its own process group: a terminal's ^C
                                        reaches only the caller, which stops it */
    char err[512];                   /* why the last call failed */
} rbl_daemon_t;

/* A program of the build tree: opt if not NULL, else $env_name if set and
 * not empty, else rel (a path from the top of the build tree, such as
 * "daemon/ringbloomd") seen from this program's directory one or two
 * levels up (examples/, examples/.libs/, tests/unit/), else rel's last
 * component (found in PATH).  buf (cap bytes) holds a path found beside
 * the program. */
const char *rbl_tool_path(const char *opt, const char *env_name, const char *rel,
                          char *buf, size_t cap);
/* The daemon to run: rbl_tool_path(opt, "RB_DAEMON", "daemon/ringbloomd"). */
const char *rbl_daemon_path(const char *opt, char *buf, size_t cap);

/* Makes d's temp directory "<base>/<prefix>.XXXXXX" with the permissions
 * mode (0755 lets other users reach the socket; mkdtemp gives 0700),
 * names its files in it and sets its instance.  0, or -1 with d->err. */
int rbl_init(rbl_daemon_t *d, const char *base, const char *prefix, mode_t mode,
             const char *inst);

/* What rbl_start returns besides an exit status (0-255) or 256 + the
 * signal of a daemon that ended during start-up: */
#define RBL_ANSWERS   (-1)   /* it runs (d->pid) and its socket answers */
#define RBL_TIMEOUT   (-2)   /* neither answered nor exited in time; still runs */
#define RBL_CANCELLED (-3)   /* *cancel was set while waiting; still runs */
#define RBL_EFORK     (-4)   /* it could not be started */

/* Runs argv (argv[0]: the daemon, looked up on PATH if it has no '/')
 * with stdin from /dev/null and stdout and stderr appended to d->log; it
 * gets SIGKILL when its parent dies, d->nofile_* and d->own_group apply.
 * Waits up to timeout_ms for d->sock to accept a connection, or until it
 * exits, or *cancel (if not NULL) becomes non-zero.  Returns RBL_ANSWERS,
 * the status of a daemon that ended, or RBL_TIMEOUT, RBL_CANCELLED,
 * RBL_EFORK; d->err says what happened unless it answers. */
int rbl_start(rbl_daemon_t *d, const char *const *argv, int timeout_ms,
              const volatile sig_atomic_t *cancel);

/* Stops the daemon: SHUTDOWN NOSAVE over conn (closed here) if conn is
 * not NULL, else the signal sig; waits up to wait_ms for it to exit and
 * SIGKILLs it after that.  0 if it stopped as asked (or none ran), -1 with
 * d->err if SHUTDOWN was refused or it had to be killed. */
int rbl_stop(rbl_daemon_t *d, rb_conn_t *conn, int sig, int wait_ms);

/* Removes what d made: SIGKILLs a daemon still running, unlinks its
 * segment if one is left, removes the temp directory and everything in
 * it.  Safe on a partly made or already removed d; does nothing in any
 * process but d->owner.  0, or -1 with d->err. */
int rbl_remove(rbl_daemon_t *d);

/* Removes path and everything below it, following no symbolic link.
 * 0, or -1 (errno set) if something could not be removed. */
int rbl_rmtree(const char *path);

#endif
