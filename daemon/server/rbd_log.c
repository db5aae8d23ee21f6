/*
 * rbd_log.c - ringbloomd's log.  Its lines go to the logfile when one is
 * set (foreground or not; with -f its errors also go to stderr), else to
 * stderr with -f; and to syslog when syslog-enabled is yes and the daemon
 * is detached (in the foreground stderr already reaches the journal under
 * systemd: syslog too would write every line twice).  A line in the file
 * or on stderr reads "PID:M DD Mon YYYY HH:MM:SS.mmm C message" (Redis's
 * format; C: ! error and worse, # warning, * notice, . info, - debug); on
 * a stderr that is the journal (JOURNAL_STREAM names its device and inode,
 * sd-daemon(3)) it reads "<N>message" instead, N the syslog priority, so
 * journald keeps each line's priority and adds the time and pid itself.
 * Messages below the configured level are dropped; the level can change
 * on SIGHUP, when the logfile is also reopened by its path (logrotate's
 * rename).  The logfile is opened without blocking and only as a regular
 * file of this user's or root's (or a terminal, or /dev/null), never
 * through a symbolic link: a FIFO, a device or another user's file at its
 * path is refused with the reason, and the log keeps the file it had.
 * Every control byte of a message is written as \xHH, so a line is one
 * line whatever a message carries.  A condition that a client can provoke
 * at will (out of file descriptors, evictions) logs through a rate
 * limiter, so no client can make the log grow faster than one line per
 * interval.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "rbd_log.h"

static int log_level = LOG_INFO;
static int log_fd = -1;            /* the logfile, or -1 */
static int log_stderr = 1;         /* write lines to stderr (-f, no logfile) */
static int log_errors_too;         /* -f with a logfile: errors to stderr as well */
static int log_journal;            /* ... as "<N>message": stderr is the journal */
static int log_syslog;             /* and to syslog */
static char log_ident[64] = "ringbloomd";   /* openlog keeps the pointer */

/* 1 if stderr is the stream JOURNAL_STREAM ("DEVICE:INODE") names. */
static int stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;

    if (js == NULL || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int rbd_log_open(const char *path, char *err, size_t errlen)
{
    struct stat st;
    char why[160] = "";
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                  O_NOFOLLOW, 0640);

    if (fd < 0 || fstat(fd, &st) != 0)
        snprintf(why, sizeof(why), "%s", errno == ELOOP ? "it is a symbolic link, which the "
                 "log does not follow (name the file itself)" : errno == ENXIO ? "it is a FIFO "
                 "or a socket, not a file" : strerror(errno));
    else if (S_ISREG(st.st_mode) && st.st_uid != 0 && st.st_uid != geteuid())
        snprintf(why, sizeof(why), "it belongs to uid %u, not to uid %u or root: refusing to "
                 "write into another user's file", (unsigned)st.st_uid, (unsigned)geteuid());
    else if (!S_ISREG(st.st_mode) &&
             !(S_ISCHR(st.st_mode) && (isatty(fd) || st.st_rdev == makedev(1, 3))))
        snprintf(why, sizeof(why), "not a regular file (the log goes to a file, a terminal or "
                 "/dev/null)");
    if (why[0] == '\0')
        return fd;
    if (fd >= 0)
        close(fd);
    snprintf(err, errlen, "cannot open logfile %s: %s", path, why);
    return -1;
}

int rbd_log_setup(const rbd_log_setup_t *o, char *err, size_t errlen)
{
    return rbd_log_setup_fd(o, -1, err, errlen);
}

int rbd_log_setup_fd(const rbd_log_setup_t *o, int fd, char *err, size_t errlen)
{
    int rc = 0;

    log_level = o->level;
    if (fd < 0 && o->logfile[0] != '\0' && (fd = rbd_log_open(o->logfile, err, errlen)) < 0)
        rc = -1;
    if (rc == 0) {
        if (log_fd >= 0)
            close(log_fd);
        log_fd = fd;
    }
    log_stderr = o->foreground && log_fd < 0;
    log_errors_too = o->foreground && log_fd >= 0;
    log_journal = log_stderr && stderr_is_journal();
    if (log_syslog)
        closelog();
    log_syslog = o->syslog_enabled && !o->foreground;
    if (log_syslog) {
        snprintf(log_ident, sizeof(log_ident), "%s", o->ident);
        openlog(log_ident, LOG_PID | LOG_NDELAY, o->facility);
    }
    return rc;
}

void rbd_log_init(int foreground, int level)
{
    const rbd_log_setup_t o = { foreground, level, "", 1, "ringbloomd", LOG_DAEMON };
    char err[8];

    (void)rbd_log_setup(&o, err, sizeof(err));   /* no logfile: it cannot fail */
}

void rbd_log_level(int level)
{
    log_level = level;
}

/* The whole of buf[0..len) to fd (a short write or EINTR goes on; an
 * error drops the rest: a log line must never stop the daemon). */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* msg with every control byte as \xHH into out (cap bytes): a log line
 * is one line, whatever a message carries (a client's name, a path, an
 * error text from elsewhere). */
static void one_line(const char *msg, char *out, size_t cap)
{
    size_t w = 0;

    for (; *msg != '\0' && w + 5 < cap; msg++) {
        unsigned char ch = (unsigned char)*msg;
        if (ch < 0x20 || ch == 0x7f)
            w += (size_t)snprintf(out + w, cap - w, "\\x%02x", ch);
        else
            out[w++] = (char)ch;
    }
    out[w] = '\0';
}

void rbd_log(int level, const char *fmt, ...)
{
    static const char mark[] = "!!!!#*.-";   /* by syslog priority */
    char raw[1024], msg[1100], when[32], line[1200];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n;

    if (level > log_level)
        return;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    one_line(raw, msg, sizeof(msg));
    if (log_syslog)
        syslog(level, "%s", msg);
    if (log_journal) {
        n = snprintf(line, sizeof(line), "<%d>%s\n", level & 7, msg);   /* msg < line */
        write_all(2, line, (size_t)n);
    }
    if (log_fd < 0 && !(log_stderr && !log_journal))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%d %b %Y %H:%M:%S", &tm);
    n = snprintf(line, sizeof(line), "%d:M %s.%03ld %c %s\n", (int)getpid(), when,
                 ts.tv_nsec / 1000000, mark[level & 7], msg);
    if ((size_t)n >= sizeof(line)) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    write_all(log_fd >= 0 ? log_fd : 2, line, (size_t)n);
    if (log_errors_too && level <= LOG_ERR)
        write_all(2, line, (size_t)n);   /* "cannot start: ..." reaches the terminal */
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
