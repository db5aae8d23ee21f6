/*
 * rbd_test.h - running ringbloomd from a test (tests/harness/rbd_test.c),
 * with Check's assertions around the shared launcher (launch.h): a private
 * instance, socket, state directory, config and log in a fresh temp
 * directory; every daemon started is killed and every object removed at
 * exit, even when an assertion ends the test process early.  Plus the
 * requests, files and /proc figures the daemon suites look at.
 */
#ifndef RBD_TEST_H
#define RBD_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include "launch.h"
#include "rb_test.h"

/* A test's daemon: the launcher's record (pid, dir, sock, conf, log,
 * inst; nofile_soft / nofile_hard may be set between rbd_prepare and
 * rbd_launch). */
typedef rbl_daemon_t rbd_proc_t;

/* The daemon binary (RB_DAEMON, set by make check; see rbl_daemon_path). */
const char *rbd_binary(void);

/* A new daemon's temp directory and config (extra: config lines), not
 * started yet: rbd_launch starts it. */
void rbd_prepare(rbd_proc_t *d, const char *extra);
/* Writes the config (base settings plus `extra` lines) into d->conf. */
void rbd_write_conf(rbd_proc_t *d, const char *extra);
/* Starts the daemon on d's config (`ringbloomd -f -c conf` and the
 * NULL-terminated extra_args) and waits (<= rbd_wait_ms(10 s)) until it answers or
 * exits.  Returns -1 if it answers (it runs, d->pid is set), its exit
 * status if it exited, 256 + the signal if a signal ended it. */
int rbd_try_launch(rbd_proc_t *d, const char *const *extra_args);
/* The same, asserting that it answers. */
void rbd_launch(rbd_proc_t *d, const char *const *extra_args);
/* A new daemon in a fresh temp directory; extra: config lines. */
void rbd_start(rbd_proc_t *d, const char *extra);
/* ms times CK_TIMEOUT_MULTIPLIER (the factor .ci/run sets for its
 * sanitizer trees, where everything runs many times slower; 1 when unset
 * or outside (1, 100]) times rb_test_load_factor(): the harness's waits
 * (a start, a stop, a reply to rbd_connect's connection), hang guards
 * that end at their event, stretch as Check's own timeouts do. */
int rbd_wait_ms(int ms);
/* Sends the daemon sig and waits until it exits. */
void rbd_stop(rbd_proc_t *d, int sig);
/* Kills d (SIGKILL), removes its segment and starts it again: a start
 * that cannot re-attach, so the state comes from the snapshot and the
 * log alone. */
void rbd_restart_cold(rbd_proc_t *d);
/* Kills the daemon, removes its segment and temp directory. */
void rbd_remove_all(rbd_proc_t *d);
/* rbd_remove_all of every daemon this process prepared: the teardown of
 * the daemon suites' TCases. */
void rbd_teardown(void);
/* Runs the daemon on conf expecting it to refuse to start (exit status
 * 1); returns the line of its output that says why ("cannot start: ...",
 * else its last line), in a static buffer. */
const char *rbd_start_fails(const char *conf);

/* The daemon's output (stdout and stderr, NUL-terminated) of
 * `ringbloomd -f -c d->conf` run to its exit into out, and its wait
 * status. */
int rbd_run_daemon(const rbd_proc_t *d, char *out, size_t cap);
/* The CLI (rbl_tool_path: RB_CLI, else the build tree's client/ringbloom) run with the arguments args
 * (shell words) to its exit, its output into out; returns its exit
 * status, -1 if it did not exit. */
int rbd_run_cli(char *out, size_t cap, const char *args);

/* Attaches d's segment (a stale one too), asserting that it can. */
rb_segment_t *rbd_attach(const rbd_proc_t *d);
rb_conn_t *rbd_connect(const rbd_proc_t *d);
/* A plain socket connected to d, for bytes no client library would send
 * and replies a test reads (or does not read) itself. */
int rbd_raw_connect(const rbd_proc_t *d);
/* Runs a command given as words (NULL-terminated) and returns the reply
 * text (static buffer) and code. */
const char *rbd_cmd(rb_conn_t *c, int *rc, ...);

/* A dump of one filter taken with BF.SCANDUMP or CF.SCANDUMP: its chunks
 * (header first) and the iterator the SCANDUMP returned with each. */
#define RBD_DUMP_CHUNKS 8
typedef struct rbd_dump {
    size_t n;
    long long iter[RBD_DUMP_CHUNKS];
    size_t len[RBD_DUMP_CHUNKS];
    char *data[RBD_DUMP_CHUNKS];
} rbd_dump_t;

/* Every chunk of filter name, by cmd ("BF.SCANDUMP", "CF.SCANDUMP") from
 * iterator 0 until it answers 0 (at most RBD_DUMP_CHUNKS chunks of 4 MiB). */
void rbd_scandump(const rbd_proc_t *d, const char *cmd, const char *name, rbd_dump_t *dp);
/* Loads the chunks of dp into filter name by cmd ("BF.LOADCHUNK", ...),
 * asserting each answers OK. */
void rbd_loadchunks(rb_conn_t *c, const char *cmd, const char *name, const rbd_dump_t *dp);
void rbd_assert_same_dump(const rbd_dump_t *a, const rbd_dump_t *b, const char *name);
void rbd_dump_free(rbd_dump_t *dp);

/* A number field of INFO section (its line "field:N", an integer or a
 * decimal such as mem_fragmentation_ratio), asserting that INFO answers
 * and has it. */
double rbd_info_num(rb_conn_t *c, const char *section, const char *field);

/* Asserts the reply text of a command. */
#define rbd_expect(c, want, ...)                                                         \
    do {                                                                                 \
        int rc_;                                                                         \
        const char *got_ = rbd_cmd((c), &rc_, __VA_ARGS__, (const char *)NULL);         \
        ck_assert_msg(strcmp(got_, (want)) == 0, "expected [%s], got [%s] (rc %d)", (want), \
                      got_, rc_);                                                        \
    } while (0)

/* Waits (<= rbd_wait_ms(5 s)) until the file at path has a line with
 * needle, failing the test otherwise. */
void rbd_wait_line(const char *path, const char *needle);
/* `ringbloomd -t -c conf` (bounded by timeout(1): a run that waits on
 * something fails, it does not hang the test): its output (stdout and
 * stderr) into out, its exit status, -1 if it did not exit. */
int rbd_test_config(const char *conf, char *out, size_t cap);

/* Number of lines of d's log (all its runs) that contain needle. */
int rbd_log_count(const rbd_proc_t *d, const char *needle);
/* Number of lines of the file at path that contain needle (0: no file). */
int rbd_file_count(const char *path, const char *needle);
/* Replaces the file at path with len bytes of data. */
void rbd_write_file(const char *path, const void *data, size_t len);
/* The whole file (malloc'd, caller frees), NUL-terminated; its size in *len. */
char *rbd_read_file(const char *path, size_t *len);

/* A "Field:  N kB" line of /proc/<pid>/status ("VmRSS:", "VmHWM:",
 * "VmPeak:"), in KiB. */
long rbd_proc_kb(pid_t pid, const char *field);
/* CPU milliseconds (user + system, all threads) process pid has used. */
long rbd_cpu_ms(pid_t pid);

#endif /* RBD_TEST_H */
