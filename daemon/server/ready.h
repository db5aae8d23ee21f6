/*
 * ready.h - telling whoever started ringbloomd that it serves, or why it
 * could not start (ready.c): the parent of a daemonized start, waiting on
 * a pipe, and systemd (sd_notify).  One per process: the state is ready.c's.
 */
#ifndef RBD_READY_H
#define RBD_READY_H

/* Without `foreground`: forks.  The parent waits until the child reports
 * (rbd_ready_ok / rbd_ready_fail) and exits: 0 once it serves; 1 with the
 * child's reason on stderr, or if the child died before saying anything.
 * The child goes on in a new session, in /, with stdin, stdout and stderr
 * on /dev/null.  With `foreground` nothing forks.  0 in the process that
 * goes on, or -1 with errno (nothing forked). */
int rbd_ready_detach(int foreground);

/* The daemon serves (socket listening, segment live, log open): the parent
 * exits 0; systemd gets READY=1 and STATUS=status (no-ops without a
 * waiting parent or NOTIFY_SOCKET).  Also arms the watchdog pings if
 * systemd asked for them (WatchdogSec). */
void rbd_ready_ok(const char *status);
/* Start-up failed: why goes to the parent's stderr and to systemd's
 * STATUS=. */
void rbd_ready_fail(const char *why);
/* Housekeeping: WATCHDOG=1 every half of the watchdog interval. */
void rbd_ready_tick(void);
/* Shutting down: STOPPING=1. */
void rbd_ready_stopping(void);

#endif /* RBD_READY_H */
