/*
 * rbd_log.h - ringbloomd's log (a file, stderr or syslog), its rate
 * limiter, and the two clocks (rbd_log.c).
 */
#ifndef RBD_LOG_H
#define RBD_LOG_H

#include <stddef.h>
#include <stdint.h>

/* A rate limiter for one kind of message: rbd_log_every logs at most one
 * line per interval_ms and counts the rest into the next line it logs. */
typedef struct rbd_ratelog {
    uint64_t last_ms;          /* monotonic ms of the last line logged */
    uint64_t suppressed;       /* messages dropped since */
    int logged;
} rbd_ratelog_t;

/* Where the lines go (the settings logfile, syslog-enabled, syslog-ident,
 * syslog-facility, loglevel, and -f): */
typedef struct rbd_log_setup {
    int foreground;            /* -f: stderr when there is no logfile */
    int level;                 /* LOG_DEBUG .. LOG_WARNING: lines above it dropped */
    const char *logfile;       /* "" : none */
    int syslog_enabled;        /* syslog too, when not in the foreground */
    const char *ident;         /* syslog's ident */
    int facility;              /* LOG_DAEMON, LOG_USER, LOG_LOCAL0..7 */
} rbd_log_setup_t;

/* Opens path to append the log to: a regular file of this process's user
 * or root (made, mode 0640, when missing), a terminal or /dev/null; never
 * through a symbolic link, never waiting (a FIFO at the path is refused,
 * not waited on).  Its descriptor, or -1 with "cannot open logfile PATH:
 * why" in err. */
int rbd_log_open(const char *path, char *err, size_t errlen);
/* Applies o: at start (before the detach, so a logfile that cannot be
 * opened is said on the terminal) and on SIGHUP, where it reopens the
 * logfile by its path (logrotate renames the file, then sends SIGHUP).
 * 0, or -1 with err naming the path when the logfile cannot be opened:
 * the log then keeps the file it had (none at start). */
int rbd_log_setup(const rbd_log_setup_t *o, char *err, size_t errlen);
/* rbd_log_setup with o->logfile already opened by rbd_log_open as fd
 * (taken over: the log writes to that very file, as CONFIG SET checked
 * it; it cannot fail then), or -1 to open it by its path. */
int rbd_log_setup_fd(const rbd_log_setup_t *o, int fd, char *err, size_t errlen);
/* rbd_log_setup with no logfile, syslog (ident ringbloomd, facility
 * daemon) when not foreground: for the tests that run the daemon's code
 * in-process. */
void rbd_log_init(int foreground, int level);
void rbd_log_level(int level);
void rbd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rbd_log_every(rbd_ratelog_t *r, uint64_t interval_ms, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
uint64_t rbd_now_ms(void);   /* unix milliseconds (for display) */
uint64_t rbd_mono_ms(void);  /* monotonic milliseconds (for intervals) */

#endif /* RBD_LOG_H */
