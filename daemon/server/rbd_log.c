/*
 * rbd_log.c - ringbloomd's log: stderr with a timestamp in the foreground,
 * syslog (facility daemon) otherwise.  Messages below the configured level
 * are dropped; the level can change on SIGHUP.  A condition that a client
 * can provoke at will (out of file descriptors, evictions) logs through a
 * rate limiter, so no client can make the log grow faster than one line per
 * interval.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "rbd_log.h"

static int log_foreground = 1;
static int log_level = LOG_INFO;

void rbd_log_init(int foreground, int level)
{
    log_foreground = foreground;
    log_level = level;
    if (!foreground)
        openlog("ringbloomd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void rbd_log_level(int level)
{
    log_level = level;
}

void rbd_log(int level, const char *fmt, ...)
{
    static const char mark[] = "!!!!#*.-";   /* by syslog priority */
    char msg[1024], when[32];
    struct timespec ts;
    struct tm tm;
    va_list ap;

    if (level > log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!log_foreground) {
        syslog(level, "%s", msg);
        return;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%d %b %Y %H:%M:%S", &tm);
    fprintf(stderr, "%d:M %s.%03ld %c %s\n", (int)getpid(), when, ts.tv_nsec / 1000000,
            mark[level & 7], msg);
}

void rbd_log_every(rbd_ratelog_t *r, uint64_t interval_ms, int level, const char *fmt, ...)
{
    uint64_t now = rbd_mono_ms();
    char msg[900];
    va_list ap;

    if (r->logged && now - r->last_ms < interval_ms) {
        r->suppressed++;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (r->suppressed > 0)
        rbd_log(level, "%s (and %llu more like it in the last %llu s)", msg,
                (unsigned long long)r->suppressed, (unsigned long long)(now - r->last_ms) / 1000);
    else
        rbd_log(level, "%s", msg);
    r->logged = 1;
    r->last_ms = now;
    r->suppressed = 0;
}

uint64_t rbd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t rbd_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
