/*
 * ex_daemon.c - a private ringbloomd for the examples that need one
 * (worker-pool, crawler-dedup): started in a fresh temp dir, connected to,
 * and stopped again with everything it made removed.  The launcher
 * (tests/harness/launch.c) does the work; this adds the examples' daemon
 * settings, their messages and the daemon's user.
 */
#define _GNU_SOURCE 1

#include <stdio.h>
#include <unistd.h>

#include "ex_daemon.h"
#include "ex_util.h"

/* Copies the daemon's log to stderr. */
static void print_log(const ex_daemon_t *d)
{
    char line[512];
    FILE *f = fopen(d->rb.log, "r");

    if (f == NULL)
        return;
    fprintf(stderr, "--- %s:\n", d->rb.log);
    while (fgets(line, sizeof(line), f) != NULL)
        fputs(line, stderr);
    fclose(f);
}

/* Starts ringbloomd in the foreground in its own process group (instance
 * `instance`, or <program>-<pid>) with its socket, state and log in a
 * fresh temp dir below tmpbase, waits until it answers (^C stops the
 * wait) and connects to it.  On error too the caller calls
 * ex_daemon_stop, which removes whatever was made. */
int ex_daemon_start(ex_daemon_t *d, const char *bin, const char *tmpbase, const char *instance,
                    rb_conn_t **conn)
{
    char inst[RB_INSTANCE_MAX + 1], prefix[64], state[RBL_DIR_MAX + 8],
        pidfile[RBL_DIR_MAX + 16], why[512];
    int rc;

    if (instance == NULL) {
        snprintf(inst, sizeof(inst), "%s-%d", ex_prog(), (int)getpid());
        instance = inst;
    }
    snprintf(prefix, sizeof(prefix), "rb-%s", ex_prog());
    if (rbl_init(&d->rb, tmpbase, prefix, 0700, instance) != 0) {
        fprintf(stderr, "%s: %s\n", ex_prog(), d->rb.err);
        return -1;
    }
    d->rb.own_group = 1;   /* a terminal's ^C reaches only us; we shut it down */
    snprintf(state, sizeof(state), "%s/state", d->rb.dir);
    snprintf(pidfile, sizeof(pidfile), "pidfile=%s/pid", d->rb.dir);
    {
        const char *argv[] = { bin, "-f", "-i", d->rb.inst, "-s", d->rb.sock, "-d", state,
                               "-o", pidfile, "-o", "keep-segment=no", "-o", "appendfsync=no",
                               "-o", "save-seconds=0", "-o", "loglevel=warning", NULL };
        rc = rbl_start(&d->rb, argv, 10000, &ex_stop_requested);
    }
    if (rc != RBL_ANSWERS) {
        fprintf(stderr, "%s: %s\n", ex_prog(), d->rb.err);
        if (rc != RBL_CANCELLED)
            print_log(d);
        return -1;
    }
    if ((rc = rb_conn_open(NULL, d->rb.sock, 10000, conn)) != RB_OK) {
        fprintf(stderr, "%s: connect %s: %s\n", ex_prog(), d->rb.sock, rb_strerror(rc));
        return -1;
    }
    /* The daemon's user, as any application finds it: the owner of its
     * socket's directory, if that directory can be trusted. */
    if (rb_daemon_uid(NULL, d->rb.sock, (uid_t)-1, &d->uid, why, sizeof(why)) != RB_OK) {
        fprintf(stderr, "%s: %s\n", ex_prog(), why);
        return -1;
    }
    return 0;
}

/* Stops the daemon (SHUTDOWN NOSAVE on conn, SIGTERM without one; SIGKILL
 * after 5 s), removes its segment if it is left and the temp dir.  Safe on
 * a partly started d. */
void ex_daemon_stop(ex_daemon_t *d, rb_conn_t *conn)
{
    if (rbl_stop(&d->rb, conn, SIGTERM, 5000) != 0)
        fprintf(stderr, "%s: %s\n", ex_prog(), d->rb.err);
    if (rbl_remove(&d->rb) != 0)
        fprintf(stderr, "%s: %s\n", ex_prog(), d->rb.err);
}
