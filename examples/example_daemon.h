/*
 * example_daemon.h - helpers shared by the examples (see
 * example_daemon.c).
 */
#ifndef RB_EXAMPLE_DAEMON_H
#define RB_EXAMPLE_DAEMON_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/un.h>

#include "ringbloom.h"

/* Defined by each program: its name, for messages and temp dirs. */
extern const char *const ex_prog;

/* Set by on_signal, which ex_catch_signals installs for SIGINT, SIGTERM
 * and SIGHUP (-1 and a message if it cannot). */
extern volatile sig_atomic_t stop_requested;
void on_signal(int sig);
int ex_catch_signals(void);

double now_s(void);                     /* CLOCK_MONOTONIC seconds */
void sleep_us(long us);
uint64_t splitmix64(uint64_t x);
/* Parses a decimal in min..max into *out; prints why not and returns -1. */
int parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* The same for a number in [min, max]. */
int parse_double(const char *opt, const char *s, double min, double max, double *out);
/* In a forked child: default signal dispositions, SIGKILL when the parent
 * dies; -1 if the parent (pid parent) is already gone. */
int ex_child_setup(pid_t parent);

/* ---- a private ringbloomd ------------------------------------------------ */

#define RBD_DIR_MAX 256

typedef struct rbd {
    pid_t pid;
    char  dir[RBD_DIR_MAX];
    char  sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char  log[RBD_DIR_MAX + 16];
    char  instance[RB_INSTANCE_MAX + 1];
    uid_t uid;            /* the daemon's user: readers attach only its
                             segment (rb_segment_attach_owned) */
} rbd_t;

/* The daemon to run: opt (--daemon), $RB_DAEMON, ../daemon/ringbloomd
 * beside this program (also from libtool's .libs/), else "ringbloomd". */
const char *daemon_path(const char *opt, char *buf, size_t cap);
/* Copies the daemon's log to stderr. */
void print_log(const rbd_t *d);
/* Starts ringbloomd in the foreground and connects; see example_daemon.c.
 * On error too the caller calls rbd_stop. */
int rbd_start(rbd_t *d, const char *bin, const char *tmpbase, const char *instance,
              rb_conn_t **conn);
/* SHUTDOWN NOSAVE (SIGKILL after 5 s), removes the segment and temp dir. */
void rbd_stop(rbd_t *d, rb_conn_t *conn);

#endif
