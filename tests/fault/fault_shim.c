/*
 * fault_shim.c - an LD_PRELOAD library that makes chosen file system calls
 * of ringbloomd fail, so check_faults can reach the failure paths of
 * daemon/persist/aof.c and snapshot.c that a real disk seldom takes (a log rename that fails
 * after the snapshot is installed, a failed fsync, a log that cannot be
 * written for a while).
 *
 * Control: the environment variable RB_FAULT_CTL names a file that is read
 * again at every intercepted call, so a test can begin and end an outage
 * while the daemon runs.  Each line of it is a rule
 *
 *     CALL SUFFIX ERRNO
 *
 * CALL is write, pwrite, fsync, fdatasync, ftruncate or rename; the call
 * fails with ERRNO (EIO, ENOSPC, EDQUOT, EROFS or EFBIG) when its path ends
 * with SUFFIX - or, for ERRNO KILL, KILL-HALF or KILL-AFTER, the process
 * dies by SIGKILL in the call: before it does anything, after writing the
 * first half of the bytes (a write; any other call dies before), or after
 * writing all of them: the crash windows of a log write; a rename with
 * KILL-AFTER is made, then the process dies - (for calls on a
 * descriptor, the path /proc/self/fd names; for rename, the new name).
 * Lines starting with '#' and unknown lines are ignored.  A missing file
 * means no faults.  Every injected failure is reported on stderr (the
 * daemon's log in the tests) as "fault_shim: CALL PATH: ERRNO".
 *
 * A rename onto the shm object (/dev/shm/ringbloom.<instance>) is a
 * segment's rebuild putting its new object in place (rb_segment_rebuild):
 * KILL dies with the new object made under its second name, KILL-AFTER
 * with it in place and the old one not yet retired (check_faults).
 *
 * ftruncate of the shm object (/dev/shm/ringbloom.<instance>) is the
 * segment's growth, which a command makes before it changes anything: a
 * KILL there inside an EXEC dies between two of its members (check_faults).
 *
 * Cost: a read of the control file per intercepted call; the shim is for
 * tests only and never installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim_ctl.h"

static const struct {
    const char *name;
    int value;
} errnos[] = {
    { "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "EROFS", EROFS },
    { "EFBIG", EFBIG },
    { "KILL", -1 }, { "KILL-HALF", -2 }, { "KILL-AFTER", -3 },
};

/* Reads the control file with raw system calls (not stdio, not the
 * wrapped write) and returns the errno of the first rule matching call
 * and path, or 0. */
static int fault_for(const char *call, const char *path)
{
    char buf[4096], *line, *save = NULL;
    int e = 0;

    if (path == NULL || shim_ctl_read("RB_FAULT_CTL", buf, sizeof(buf)) == 0)
        return 0;
    for (line = strtok_r(buf, "\n", &save); line != NULL && e == 0;
         line = strtok_r(NULL, "\n", &save)) {
        char c[32], suffix[512], en[32];
        size_t pl = strlen(path), sl;
        if (line[0] == '#' || sscanf(line, "%31s %511s %31s", c, suffix, en) != 3)
            continue;
        sl = strlen(suffix);
        if (strcmp(c, call) != 0 || sl > pl || strcmp(path + pl - sl, suffix) != 0)
            continue;
        for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
            if (strcmp(en, errnos[i].name) == 0)
                e = errnos[i].value;
    }
    return e;
}

/* The path behind descriptor fd, or NULL (static buffer per thread). */
static const char *fd_path(int fd)
{
    static __thread char path[4096];
    char link[64];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof(path) - 1);
    if (n < 0)
        return NULL;
    path[n] = '\0';
    return path;
}

/* Reports an injected failure on stderr without going through write(). */
static void report(const char *call, const char *path, int e)
{
    char msg[4300];
    int len = snprintf(msg, sizeof(msg), "fault_shim: %s %s: %s\n", call, path, strerror(e));
    ssize_t (*real)(int, const void *, size_t) =
        (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");

    if (real != NULL && len > 0)
        (void)!real(2, msg, (size_t)len);
}

/* Dies by SIGKILL in a write of buf[0..n) to fd, as rule kill (-1, -2,
 * -3) says. */
static void die_in_write(int fd, const void *buf, size_t n, int kill)
{
    ssize_t (*real)(int, const void *, size_t) =
        (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");

    if (kill != -1 && real != NULL)
        (void)!real(fd, buf, kill == -2 ? n / 2 : n);
    raise(SIGKILL);
}

/* 0 if the call may go on, else -1 with errno set (and reported), or a
 * KILL rule's value (< -1: the caller dies in it; -1 dies here). */
static int inject_fd(const char *call, int fd)
{
    const char *path;
    int e;

    if (fd <= 2)
        return 0;   /* never the daemon's own log output */
    path = fd_path(fd);
    e = fault_for(call, path);
    if (e == 0)
        return 0;
    if (e < 0 && (e == -1 || strcmp(call, "write") != 0))
        raise(SIGKILL);
    if (e < 0)
        return e;
    report(call, path, e);
    errno = e;
    return -1;
}

#define REAL(ret, name, ...) \
    ((ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, name))

ssize_t write(int fd, const void *buf, size_t n)
{
    int e = inject_fd("write", fd);

    if (e < -1)
        die_in_write(fd, buf, n, e);
    if (e != 0)
        return -1;
    return REAL(ssize_t, "write", int, const void *, size_t)(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (inject_fd("pwrite", fd) != 0)
        return -1;
    return REAL(ssize_t, "pwrite", int, const void *, size_t, off_t)(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    if (inject_fd("pwrite", fd) != 0)
        return -1;
    return REAL(ssize_t, "pwrite64", int, const void *, size_t, off64_t)(fd, buf, n, off);
}

int ftruncate(int fd, off_t len)
{
    if (inject_fd("ftruncate", fd) != 0)
        return -1;
    return REAL(int, "ftruncate", int, off_t)(fd, len);
}

int ftruncate64(int fd, off64_t len)
{
    if (inject_fd("ftruncate", fd) != 0)
        return -1;
    return REAL(int, "ftruncate64", int, off64_t)(fd, len);
}

int fsync(int fd)
{
    if (inject_fd("fsync", fd) != 0)
        return -1;
    return REAL(int, "fsync", int)(fd);
}

int fdatasync(int fd)
{
    if (inject_fd("fdatasync", fd) != 0)
        return -1;
    return REAL(int, "fdatasync", int)(fd);
}

int rename(const char *from, const char *to)
{
    int e = fault_for("rename", to);

    if (e == -3) {   /* KILL-AFTER: renamed, then dead */
        (void)REAL(int, "rename", const char *, const char *)(from, to);
        raise(SIGKILL);
    }
    if (e < 0)
        raise(SIGKILL);
    if (e != 0) {
        report("rename", to, e);
        errno = e;
        return -1;
    }
    return REAL(int, "rename", const char *, const char *)(from, to);
}
