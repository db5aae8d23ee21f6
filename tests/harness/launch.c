/*
 * launch.c - a private ringbloomd for the tests and the examples (see
 * launch.h): its temp directory, its start-up until the socket answers,
 * its stop, and the removal of everything it made.
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

const char *rbl_tool_path(const char *opt, const char *env_name, const char *rel,
                          char *buf, size_t cap)
{
    static const char *const up[] = { "/..", "/../.." };
    const char *env = getenv(env_name);
    const char *base = strrchr(rel, '/');
    char self[PATH_MAX];
    ssize_t n;

    if (opt != NULL)
        return opt;
    if (env != NULL && env[0] != '\0')
        return env;
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        *strrchr(self, '/') = '\0';
        for (size_t i = 0; i < sizeof(up) / sizeof(up[0]); i++)
            if ((size_t)snprintf(buf, cap, "%s%s/%s", self, up[i], rel) < cap &&
                access(buf, X_OK) == 0)
                return buf;
    }
    return base != NULL ? base + 1 : rel;
}

const char *rbl_daemon_path(const char *opt, char *buf, size_t cap)
{
    return rbl_tool_path(opt, "RB_DAEMON", "daemon/ringbloomd", buf, cap);
}

/* Names file `name` of d's temp dir into field (cap bytes); -1 with d->err
 * if the path does not fit. */
static int name_in_dir(rbl_daemon_t *d, char *field, size_t cap, const char *name)
{
    if ((size_t)snprintf(field, cap, "%s/%s", d->dir, name) < cap)
        return 0;
    snprintf(d->err, sizeof(d->err), "%s/%s: the path is too long", d->dir, name);
    return -1;
}

int rbl_init(rbl_daemon_t *d, const char *base, const char *prefix, mode_t mode,
             const char *inst)
{
    int too_long;

    memset(d, 0, sizeof(*d));
    d->owner = getpid();
    if (strlen(inst) > RB_INSTANCE_MAX) {
        snprintf(d->err, sizeof(d->err), "instance name '%s' is too long", inst);
        return -1;
    }
    memcpy(d->inst, inst, strlen(inst) + 1);
    too_long = (size_t)snprintf(d->dir, sizeof(d->dir), "%s/%s.XXXXXX", base, prefix) >=
               sizeof(d->dir);
    if (too_long || mkdtemp(d->dir) == NULL) {
        snprintf(d->err, sizeof(d->err), "cannot make a temp dir %s/%s.XXXXXX: %s", base, prefix,
                 strerror(too_long ? ENAMETOOLONG : errno));
        d->dir[0] = '\0';
        return -1;
    }
    if (chmod(d->dir, mode) != 0) {
        snprintf(d->err, sizeof(d->err), "chmod %s: %s", d->dir, strerror(errno));
        return -1;
    }
    if (name_in_dir(d, d->sock, sizeof(d->sock), "s.sock") != 0 ||
        name_in_dir(d, d->conf, sizeof(d->conf), "ringbloomd.conf") != 0 ||
        name_in_dir(d, d->log, sizeof(d->log), "daemon.log") != 0)
        return -1;
    return 0;
}

/* In the forked child: the daemon's descriptors, limits and lifetime, then
 * exec.  Exit status 126: the file limit could not be set; 127: the rest
 * (the reason is in the log when it could be opened). */
static void exec_daemon(const rbl_daemon_t *d, const char *const *argv, pid_t parent)
{
    int null = open("/dev/null", O_RDONLY);
    int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);

    if (d->own_group)
        setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)   /* it died before prctl */
        _exit(127);
    if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        _exit(127);
    close(fd);
    close(null);
    if (d->nofile_soft != 0) {
        struct rlimit rl = { d->nofile_soft, d->nofile_hard };
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "cannot set RLIMIT_NOFILE: %s\n", strerror(errno));
            _exit(126);
        }
    }
    execvp(argv[0], (char *const *)argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

int rbl_start(rbl_daemon_t *d, const char *const *argv, int timeout_ms,
              const volatile sig_atomic_t *cancel)
{
    pid_t parent = getpid();

    d->err[0] = '\0';
    d->pid = fork();
    if (d->pid < 0) {
        snprintf(d->err, sizeof(d->err), "fork: %s", strerror(errno));
        d->pid = 0;
        return RBL_EFORK;
    }
    if (d->pid == 0)
        exec_daemon(d, argv, parent);
    for (int waited = 0;; waited += 10) {
        rb_conn_t *c;
        int status;

        if (rb_conn_open(NULL, d->sock, 1000, &c) == RB_OK) {
            rb_conn_close(c);
            return RBL_ANSWERS;
        }
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->pid = 0;
            snprintf(d->err, sizeof(d->err), "%s exited during start-up (%s %d)", argv[0],
                     WIFEXITED(status) ? "exit status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            return WIFEXITED(status) ? WEXITSTATUS(status) : 256 + WTERMSIG(status);
        }
        if (cancel != NULL && *cancel) {
            snprintf(d->err, sizeof(d->err), "interrupted while waiting for %s", argv[0]);
            return RBL_CANCELLED;
        }
        if (waited >= timeout_ms) {
            snprintf(d->err, sizeof(d->err), "%s neither answered on %s nor exited within %d ms",
                     argv[0], d->sock, timeout_ms);
            return RBL_TIMEOUT;
        }
        usleep(10000);
    }
}

int rbl_stop(rbl_daemon_t *d, rb_conn_t *conn, int sig, int wait_ms)
{
    int rc = 0, waited = 0;
    pid_t gone;

    d->err[0] = '\0';
    if (conn != NULL) {
        const char *argv[] = { "SHUTDOWN", "NOSAVE" };
        const size_t argl[] = { 8, 6 };
        char reply[256];

        if (rb_conn_command(conn, 2, argv, argl, reply, sizeof(reply)) == RB_EREPLY) {
            snprintf(d->err, sizeof(d->err), "SHUTDOWN: %s", reply);
            rc = -1;
        }
        rb_conn_close(conn);
    } else if (d->pid > 0) {
        kill(d->pid, sig);
    }
    if (d->pid <= 0)
        return rc;
    while ((gone = waitpid(d->pid, NULL, WNOHANG)) == 0 && waited < wait_ms) {
        usleep(1000);
        waited++;
    }
    if (gone == 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        snprintf(d->err + strlen(d->err), sizeof(d->err) - strlen(d->err),
                 "%sringbloomd (pid %d) did not stop within %d ms; killed it",
                 d->err[0] != '\0' ? "; " : "", (int)d->pid, wait_ms);
        rc = -1;
    }
    d->pid = 0;
    return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int rbl_rmtree(const char *path)
{
    return nftw(path, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int rbl_remove(rbl_daemon_t *d)
{
    if (d->owner != getpid())
        return 0;
    d->err[0] = '\0';
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        d->pid = 0;
    }
    if (d->inst[0] != '\0') {
        char rebuild[128];
        (void)rb_segment_unlink(d->inst);   /* RB_ENOENT after a clean stop */
        /* what a daemon killed inside a shrink may leave (rb_segment_rebuild) */
        snprintf(rebuild, sizeof(rebuild), "/ringbloom.%s~rebuild", d->inst);
        (void)shm_unlink(rebuild);
    }
    if (d->dir[0] != '\0') {
        int rc = rbl_rmtree(d->dir);

        if (rc != 0)
            snprintf(d->err, sizeof(d->err), "cannot remove %s: %s", d->dir, strerror(errno));
        d->dir[0] = '\0';
        return rc != 0 ? -1 : 0;
    }
    return 0;
}
