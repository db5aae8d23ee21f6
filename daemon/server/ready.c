/*
 * ready.c - telling whoever started ringbloomd that it serves, or why it
 * could not start.
 *
 * A daemonized start (no -f) forks before anything can fail for a reason
 * of the daemon's own (the state directory, the snapshot, the socket), so
 * the parent stays until the child reports through a pipe: one byte 'R'
 * (it serves), or 'E' and the reason.  The parent's exit status is then
 * the start's: `ringbloomd ... && ringbloom ...` works the moment the
 * parent returns.  A child that dies without a word (a crash, a kill)
 * closes the pipe: the parent says so and exits 1.
 *
 * Under systemd (NOTIFY_SOCKET set: Type=notify), sd_notify from Debian's
 * libsystemd sends READY=1 with a STATUS= line once the daemon serves, the
 * reason as STATUS= when it cannot start, STOPPING=1 at shutdown, and
 * WATCHDOG=1 at half the interval systemd asked for (WatchdogSec), from
 * the event loop's housekeeping, so a stuck loop misses its pings.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "ready.h"

static int parent_fd = -1;          /* the pipe's write end, until the report */
static uint64_t watchdog_us;        /* 0: no watchdog */
static uint64_t last_ping_us;

static uint64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The parent: waits for the child's report; never returns. */
static void wait_for_child(int fd)
{
    char buf[2048];
    size_t len = 0;
    ssize_t n;

    while (len < sizeof(buf) - 1 &&
           ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0)
            len += (size_t)n;
    buf[len] = '\0';
    if (len > 0 && buf[0] == 'R')
        _exit(0);
    if (len > 0 && buf[0] == 'E')
        fprintf(stderr, "ringbloomd: %s\n", buf + 1);
    else
        fprintf(stderr, "ringbloomd: the daemon exited during start-up without saying why "
                "(see its log)\n");
    _exit(1);
}

int rbd_ready_detach(int foreground)
{
    int p[2], null;
    pid_t pid;

    if (foreground)
        return 0;
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid > 0) {
        close(p[1]);
        wait_for_child(p[0]);
    }
    close(p[0]);
    parent_fd = p[1];
    if (setsid() < 0 || chdir("/") != 0)
        return -1;
    null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0)
        return -1;
    if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
        return -1;
    if (null > 2)
        close(null);
    return 0;
}

/* One report to the parent, then the pipe is closed. */
static void tell_parent(char kind, const char *text)
{
    char buf[2048];
    int n;

    if (parent_fd < 0)
        return;
    n = snprintf(buf, sizeof(buf), "%c%s", kind, text != NULL ? text : "");
    if (n > (int)sizeof(buf) - 1)
        n = (int)sizeof(buf) - 1;
    if (write(parent_fd, buf, (size_t)n) < 0) {
        /* The parent is gone: nobody to tell. */
    }
    close(parent_fd);
    parent_fd = -1;
}

void rbd_ready_ok(const char *status)
{
    uint64_t usec = 0;

    sd_notifyf(0, "READY=1\nSTATUS=%s\nMAINPID=%lu", status, (unsigned long)getpid());
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        watchdog_us = usec;
        last_ping_us = mono_us();
    }
    tell_parent('R', NULL);
}

void rbd_ready_fail(const char *why)
{
    sd_notifyf(0, "STATUS=%s", why);
    tell_parent('E', why);
}

void rbd_ready_tick(void)
{
    uint64_t now;

    if (watchdog_us == 0)
        return;
    now = mono_us();
    if (now - last_ping_us >= watchdog_us / 2) {
        sd_notify(0, "WATCHDOG=1");
        last_ping_us = now;
    }
}

void rbd_ready_stopping(void)
{
    sd_notify(0, "STOPPING=1");
}
