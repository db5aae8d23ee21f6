/*
 * rbd_test.h - running ringbloomd from a test: a private instance, socket,
 * state directory and log in a fresh temp directory; every daemon started
 * is killed and every object removed at exit, even when an assertion ends
 * the test process early.
 */
#ifndef RBD_TEST_H
#define RBD_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rb_test.h"

typedef struct rbd_proc {
    pid_t pid;
    pid_t owner;          /* the test process that started it */
    char dir[128];
    char sock[160];
    char conf[160];
    char log[160];
    char inst[96];
    rlim_t nofile_soft;   /* if not 0: the daemon's RLIMIT_NOFILE (set by */
    rlim_t nofile_hard;   /* the test between rbd_prepare and rbd_launch) */
} rbd_proc_t;

#define RBD_MAX_PROCS 8
static rbd_proc_t *rbd_procs[RBD_MAX_PROCS];
static int rbd_nprocs;

static inline const char *rbd_binary(void)
{
    const char *p = getenv("RB_DAEMON");
    return p ? p : "../daemon/ringbloomd";
}

static inline void rbd_stop(rbd_proc_t *d, int sig)
{
    if (d->pid > 0) {
        kill(d->pid, sig);
        waitpid(d->pid, NULL, 0);
        d->pid = 0;
    }
}

static inline void rbd_remove_all(rbd_proc_t *d)
{
    char cmd[256];

    rbd_stop(d, SIGKILL);
    rb_segment_unlink(d->inst);
    if (d->dir[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", d->dir);
        d->dir[0] = '\0';
    }
}

static void rbd_atexit(void)
{
    for (int i = 0; i < rbd_nprocs; i++)
        if (rbd_procs[i] != NULL && getpid() == rbd_procs[i]->owner)
            rbd_remove_all(rbd_procs[i]);
    rbd_nprocs = 0;
}

/* Writes the config (base settings plus `extra` lines) into d->conf. */
static inline void rbd_write_conf(rbd_proc_t *d, const char *extra)
{
    FILE *f = fopen(d->conf, "w");

    ck_assert_ptr_nonnull(f);
    fprintf(f, "# written by a test\ninstance %s\nsocket %s\ndir %s/state\npidfile %s/pid\n"
            "socket-mode 0666\nsegment-mode 0644\nkeep-segment yes\nloglevel debug\n%s\n",
            d->inst, d->sock, d->dir, d->dir, extra ? extra : "");
    fclose(f);
}

/* Starts the daemon on d's config (its output appended to d->log) and
 * waits (<= 10 s) until it answers or exits.  Returns -1 if it answers
 * (it runs, d->pid is set), its exit status if it exited, 256 + the signal
 * if a signal ended it. */
static inline int rbd_try_launch(rbd_proc_t *d, const char *const *extra_args)
{
    const char *argv[16] = { rbd_binary(), "-f", "-c", d->conf };
    int argc = 4;
    pid_t pid;

    for (int i = 0; extra_args && extra_args[i] && argc < 15; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        /* If the test process dies on a failed assertion, so does its daemon. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        if (d->nofile_soft != 0) {
            struct rlimit rl = { d->nofile_soft, d->nofile_hard };
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
                _exit(126);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    d->pid = pid;
    for (int i = 0; i < 1000; i++) {
        rb_conn_t *c;
        int status;
        if (rb_conn_open(NULL, d->sock, 1000, &c) == RB_OK) {
            rb_conn_close(c);
            return -1;
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            d->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 256 + WTERMSIG(status);
        }
        usleep(10000);
    }
    ck_abort_msg("ringbloomd neither started nor exited within 10 s; see %s", d->log);
    return 0;
}

/* Starts the daemon on d's config and waits (<= 10 s) until it answers. */
static inline void rbd_launch(rbd_proc_t *d, const char *const *extra_args)
{
    int status = rbd_try_launch(d, extra_args);

    ck_assert_msg(status == -1, "ringbloomd exited during start-up (status %d); see %s", status,
                  d->log);
}

/* A new daemon's temp directory and config (extra: config lines), not
 * started yet: rbd_launch starts it. */
static inline void rbd_prepare(rbd_proc_t *d, const char *extra)
{
    memset(d, 0, sizeof(*d));
    d->owner = getpid();
    snprintf(d->dir, sizeof(d->dir), "/tmp/rbtest.%d.XXXXXX", (int)rb_test_main_pid);
    ck_assert_ptr_nonnull(mkdtemp(d->dir));
    ck_assert_int_eq(chmod(d->dir, 0755), 0);   /* other uids reach the socket */
    rb_test_instance(d->inst, sizeof(d->inst));
    snprintf(d->sock, sizeof(d->sock), "%s/s.sock", d->dir);
    snprintf(d->conf, sizeof(d->conf), "%s/ringbloomd.conf", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/daemon.log", d->dir);
    if (rbd_nprocs == 0)
        atexit(rbd_atexit);
    ck_assert_int_lt(rbd_nprocs, RBD_MAX_PROCS);
    rbd_procs[rbd_nprocs++] = d;
    rbd_write_conf(d, extra);
}

/* A new daemon in a fresh temp directory; extra: config lines. */
static inline void rbd_start(rbd_proc_t *d, const char *extra)
{
    rbd_prepare(d, extra);
    rbd_launch(d, NULL);
}

static inline rb_conn_t *rbd_connect(const rbd_proc_t *d)
{
    rb_conn_t *c;
    ck_assert_int_eq(rb_conn_open(NULL, d->sock, 10000, &c), RB_OK);
    return c;
}

/* A plain socket connected to d, for bytes no client library would send
 * and replies a test reads (or does not read) itself. */
static inline int rbd_raw_connect(const rbd_proc_t *d)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_uint_lt(strlen(d->sock), sizeof(sa.sun_path));
    memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* Runs a command given as words (NULL-terminated) and returns the reply
 * text (static buffer) and code. */
static inline const char *rbd_cmd(rb_conn_t *c, int *rc, ...)
{
    static char buf[65536];
    const char *argv[64];
    size_t argl[64], argc = 0;
    va_list ap;
    const char *a;

    va_start(ap, rc);
    while ((a = va_arg(ap, const char *)) != NULL && argc < 64) {
        argv[argc] = a;
        argl[argc++] = strlen(a);
    }
    va_end(ap);
    *rc = rb_conn_command(c, argc, argv, argl, buf, sizeof(buf));
    return buf;
}

/* Asserts the reply text of a command. */
#define rbd_expect(c, want, ...)                                                         \
    do {                                                                                 \
        int rc_;                                                                         \
        const char *got_ = rbd_cmd((c), &rc_, __VA_ARGS__, (const char *)NULL);         \
        ck_assert_msg(strcmp(got_, (want)) == 0, "expected [%s], got [%s] (rc %d)", (want), \
                      got_, rc_);                                                        \
    } while (0)

/* Runs the daemon on conf expecting it to refuse to start (exit status
 * 1); returns the line of its output that says why ("cannot start: ...",
 * else its last line), in a static buffer. */
static inline const char *rbd_start_fails(const char *conf)
{
    static char out[2048];
    char cmd[512];
    FILE *f;
    int status;

    out[0] = '\0';
    snprintf(cmd, sizeof(cmd), "%s -f -c %s 2>&1", rbd_binary(), conf);
    f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(out, sizeof(out), f) != NULL)
        if (strstr(out, "cannot start"))
            break;
    status = pclose(f);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
                  "ringbloomd did not refuse to start (status %d): %s", status, out);
    return out;
}

/* Number of lines of d's log (all its runs) that contain needle. */
static inline int rbd_log_count(const rbd_proc_t *d, const char *needle)
{
    FILE *f = fopen(d->log, "r");
    char line[2048];
    int n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Replaces the file at path with len bytes of data. */
static inline void rbd_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* The whole file (malloc'd, caller frees); its size in *len. */
static inline char *rbd_read_file(const char *path, size_t *len)
{
    struct stat st;
    char *data;
    FILE *f = fopen(path, "rb");

    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fstat(fileno(f), &st), 0);
    data = malloc((size_t)st.st_size + 1);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(fread(data, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    *len = (size_t)st.st_size;
    return data;
}

/* ---- what a daemon process spends (/proc) ---------------------------------- */

/* A "Field:  N kB" line of /proc/<pid>/status ("VmRSS:", "VmHWM:",
 * "VmPeak:"), in KiB. */
static inline long rbd_proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, field, strlen(field)) == 0)
            kb = strtol(line + strlen(field), NULL, 10);
    fclose(f);
    ck_assert_int_ge(kb, 0);
    return kb;
}

/* CPU milliseconds (user + system, all threads) process pid has used. */
static inline long rbd_cpu_ms(pid_t pid)
{
    char path[64], buf[2048], *p;
    unsigned long long ut = 0, st = 0;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');   /* the command name may hold spaces */
    ck_assert_ptr_nonnull(p);
    /* After ")": state (field 3) ... utime is field 14, stime 15. */
    ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                            &st), 2);
    return (long)((ut + st) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

#endif /* RBD_TEST_H */
