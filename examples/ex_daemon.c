/*
 * ex_daemon.c - a private ringbloomd for the examples that need one
 * (worker-pool, crawler-dedup): started in a fresh temp dir, connected to,
 * and stopped again with everything it made removed.
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "ex_util.h"

/* The daemon to run: --daemon, $RB_DAEMON, ../daemon/ringbloomd beside this
 * program (also from libtool's .libs/), else "ringbloomd" from PATH. */
const char *ex_daemon_path(const char *opt, char *buf, size_t cap)
{
    static const char *const rel[] = { "/../daemon/ringbloomd", "/../../daemon/ringbloomd" };
    const char *env = getenv("RB_DAEMON");
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
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++)
            if ((size_t)snprintf(buf, cap, "%s%s", self, rel[i]) < cap && access(buf, X_OK) == 0)
                return buf;
    }
    return "ringbloomd";
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0)
        fprintf(stderr, "%s: remove %s: %s\n", ex_prog(), path, strerror(errno));
    return 0;
}

void ex_print_log(const ex_daemon_t *d)
{
    char line[512];
    FILE *f = fopen(d->log, "r");

    if (f == NULL)
        return;
    fprintf(stderr, "--- %s:\n", d->log);
    while (fgets(line, sizeof(line), f) != NULL)
        fputs(line, stderr);
    fclose(f);
}

/* Starts ringbloomd in the foreground (instance `instance`, or <program>-<pid>)
 * with its socket, state and log in a fresh temp dir below tmpbase, and
 * connects to it.  On error too the caller calls ex_daemon_stop, which removes
 * whatever was made. */
int ex_daemon_start(ex_daemon_t *d, const char *bin, const char *tmpbase, const char *instance,
                     rb_conn_t **conn)
{
    char state[sizeof(d->dir) + 8], pidfile[sizeof(d->dir) + 16];
    pid_t parent = getpid();
    int rc;

    memset(d, 0, sizeof(*d));
    if ((size_t)snprintf(d->dir, sizeof(d->dir), "%s/rb-%s.XXXXXX", tmpbase, ex_prog()) >=
            sizeof(d->dir) || mkdtemp(d->dir) == NULL) {
        fprintf(stderr, "%s: cannot make a temp dir in %s: %s\n", ex_prog(), tmpbase, strerror(errno));
        d->dir[0] = '\0';
        return -1;
    }
    if (instance != NULL)
        snprintf(d->instance, sizeof(d->instance), "%s", instance);
    else
        snprintf(d->instance, sizeof(d->instance), "%s-%d", ex_prog(), (int)parent);
    snprintf(state, sizeof(state), "%s/state", d->dir);
    snprintf(pidfile, sizeof(pidfile), "pidfile=%s/pid", d->dir);
    snprintf(d->log, sizeof(d->log), "%s/daemon.log", d->dir);
    if ((size_t)snprintf(d->sock, sizeof(d->sock), "%s/sock", d->dir) >= sizeof(d->sock)) {
        fprintf(stderr, "%s: socket path %s/sock is too long\n", ex_prog(), d->dir);
        return -1;
    }
    d->pid = fork();
    if (d->pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", ex_prog(), strerror(errno));
        d->pid = 0;
        return -1;
    }
    if (d->pid == 0) {
        const char *argv[] = { bin, "-f", "-i", d->instance, "-s", d->sock, "-d", state,
                               "-o", pidfile, "-o", "keep-segment=no", "-o", "appendfsync=no",
                               "-o", "save-seconds=0", "-o", "loglevel=warning", NULL };
        int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        int null = open("/dev/null", O_RDONLY);

        /* Its own process group keeps a terminal's ^C away from it (the
         * parent shuts it down); it dies with the parent if that is killed. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent || fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 ||
            dup2(fd, 2) < 0)
            _exit(127);
        execvp(bin, (char *const *)argv);
        fprintf(stderr, "%s: cannot run %s: %s\n", ex_prog(), bin, strerror(errno));
        _exit(127);
    }
    for (int i = 0; i < 1000 && !ex_stop_requested; i++) {
        int status;

        if ((rc = rb_conn_open(NULL, d->sock, 10000, conn)) == RB_OK) {
            /* The daemon's user, as any application finds it: the owner
             * of its socket's directory, if that directory can be trusted. */
            char why[512];
            if (rb_daemon_uid(NULL, d->sock, (uid_t)-1, &d->uid, why, sizeof(why)) == RB_OK)
                return 0;
            fprintf(stderr, "%s: %s\n", ex_prog(), why);
            return -1;
        }
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->pid = 0;
            fprintf(stderr, "%s: %s exited during start-up (%s %d)\n", ex_prog(), bin,
                    WIFEXITED(status) ? "exit status" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            ex_print_log(d);
            return -1;
        }
        ex_sleep_us(10000);
    }
    fprintf(stderr, "%s: %s did not answer on %s\n", ex_prog(), bin, d->sock);
    ex_print_log(d);
    return -1;
}

/* Stops the daemon (SHUTDOWN NOSAVE, then SIGKILL after 5 s), removes its
 * segment if it is left and the temp dir.  Safe on a partly started d. */
void ex_daemon_stop(ex_daemon_t *d, rb_conn_t *conn)
{
    if (conn != NULL) {
        const char *argv[] = { "SHUTDOWN", "NOSAVE" };
        const size_t argl[] = { 8, 6 };
        char reply[256];

        if (rb_conn_command(conn, 2, argv, argl, reply, sizeof(reply)) == RB_EREPLY)
            fprintf(stderr, "%s: SHUTDOWN: %s\n", ex_prog(), reply);
        rb_conn_close(conn);
    }
    if (d->pid > 0) {
        int i;

        for (i = 0; i < 500 && waitpid(d->pid, NULL, WNOHANG) == 0; i++)
            ex_sleep_us(10000);
        if (i == 500) {
            fprintf(stderr, "%s: ringbloomd did not stop; killing it\n", ex_prog());
            kill(d->pid, SIGKILL);
            waitpid(d->pid, NULL, 0);
        }
        d->pid = 0;
    }
    if (d->instance[0] != '\0')
        (void)rb_segment_unlink(d->instance);   /* RB_ENOENT after a clean stop */
    if (d->dir[0] != '\0' && nftw(d->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "%s: cannot remove %s: %s\n", ex_prog(), d->dir, strerror(errno));
}
