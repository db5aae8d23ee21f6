/*
 * shim_ctl.h - what the LD_PRELOAD shims of tests/fault/ share: their
 * control file, read again at every intercepted call with raw system
 * calls (not stdio, not a call a shim wraps), so a test changes the
 * faults while the daemon runs.
 */
#ifndef RB_SHIM_CTL_H
#define RB_SHIM_CTL_H

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* The file named by the environment variable env, read into buf (cap
 * bytes, NUL-terminated): its length, or 0 if it is unset, missing or
 * empty. */
static inline size_t shim_ctl_read(const char *env, char *buf, size_t cap)
{
    const char *path = getenv(env);
    ssize_t n;
    int fd;

    if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return (size_t)n;
}

#endif
