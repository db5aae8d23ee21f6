/*
 * aof.c - ringbloomd's append-only log: every mutation is a record,
 * appended in the same step as the change (ops.c) and written before the
 * reply that acknowledges it, one write(2) per event-loop turn whatever
 * the number of commands in it (group commit).
 *
 * File (byte by byte in docs/design.md, "Files in the state directory"):
 * a 32-byte header (magic, a random id never 0, the time it was created,
 * XXH3-64 of the bytes before), then records, framed by record.c (u32
 * length, u32 checksum, u8 type, payload).  Format-1 logs (RBLOG001, earlier
 * versions) have zeros where the checksum is.  Logs are made only by the
 * snapshot procedure (snapshot.c), which names each in the snapshot it
 * continues.
 *
 * Invariants:
 *   P1 a record is written (write(2)) before the reply of its command is
 *      sent, in every appendfsync mode: an acknowledged change survives a
 *      crash of the daemon process even if the segment is lost too
 *      (server.c holds the replies until rbd_aof_flush says so);
 *   P2 with appendfsync always, and for every record whose op asks for it
 *      (ring changes, new filters, resets: ops.c's table), the record is
 *      also fsync'd before the reply.
 * A failed fsync makes the log untrustworthy for good (Linux may drop the
 * dirty pages, so a later fsync could "succeed" without them): the log is
 * then broken, replies wait and mutations are refused until a snapshot
 * covers the state (snapshot.c repairs it, rbd_aof_switch).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "aof.h"
#include "bytes.h"
#include "dirs.h"
#include "rbd_config.h"
#include "rbd_log.h"
#include "record.h"

#define LOG_HDR_SUM 24u   /* offset of the header's checksum */

/* ---- the everysec fsync thread ------------------------------------------------ */

static void *fsyncer_main(void *arg)
{
    rbd_fsyncer_t *f = arg;

    pthread_mutex_lock(&f->lock);
    while (!f->stop) {
        while (!f->requested && !f->stop && f->retired < 0)
            pthread_cond_wait(&f->cond, &f->lock);
        if (f->retired >= 0) {
            int fd = f->retired;
            f->retired = -1;
            pthread_mutex_unlock(&f->lock);
            close(fd);
            pthread_mutex_lock(&f->lock);
            continue;
        }
        if (f->requested && f->fd >= 0 && fdatasync(f->fd) != 0)
            f->error = errno;
        f->requested = 0;
    }
    if (f->retired >= 0)
        close(f->retired);
    f->retired = -1;
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

static void fsyncer_set_fd(rbd_fsyncer_t *f, int fd)
{
    pthread_mutex_lock(&f->lock);
    f->fd = fd;
    pthread_mutex_unlock(&f->lock);
}

/* Closes a replaced log's descriptor in the thread: if it was the last
 * reference to a log renamed over, closing frees its pages (tens of MB,
 * milliseconds) and that is kept out of the event loop.  Closed here if
 * the thread is not running or still has one to close. */
static void fsyncer_retire(rbd_fsyncer_t *f, int fd)
{
    int now = fd;

    pthread_mutex_lock(&f->lock);
    if (f->started && f->retired < 0) {
        f->retired = fd;
        now = -1;
        pthread_cond_signal(&f->cond);
    }
    pthread_mutex_unlock(&f->lock);
    if (now >= 0)
        close(now);
}

/* ---- opening and closing ----------------------------------------------------- */

int rbd_aof_open(rbd_aof_t *a, const char *dir, int appendfsync, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    a->logfd = -1;
    a->dirfd = -1;
    a->appendfsync = appendfsync;
    a->enabled = 1;   /* the start-up replays and snapshots as ever; then main.c's setting */
    a->sync.fd = -1;
    a->sync.retired = -1;
    pthread_mutex_init(&a->sync.lock, NULL);
    pthread_cond_init(&a->sync.cond, NULL);
    snprintf(a->dir, sizeof(a->dir), "%s", dir);
    if (rbd_make_dir(a->dir, 1, 0700, "dir", err, errlen) != 0)
        return -1;
    a->dirfd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (a->dirfd < 0) {
        snprintf(err, errlen, "cannot open state directory %s: %s", a->dir, strerror(errno));
        return -1;
    }
    if (pthread_create(&a->sync.thread, NULL, fsyncer_main, &a->sync) != 0) {
        snprintf(err, errlen, "cannot start the fsync thread");
        return -1;
    }
    a->sync.started = 1;
    return 0;
}

void rbd_aof_close(rbd_aof_t *a)
{
    if (a->sync.started) {
        pthread_mutex_lock(&a->sync.lock);
        a->sync.stop = 1;
        pthread_cond_signal(&a->sync.cond);
        pthread_mutex_unlock(&a->sync.lock);
        pthread_join(a->sync.thread, NULL);
        a->sync.started = 0;
    }
    if (a->logfd >= 0) {
        if (a->dirty)
            fdatasync(a->logfd);
        close(a->logfd);
    }
    if (a->dirfd >= 0)
        close(a->dirfd);
    rbi_buf_free(&a->pending);
    a->logfd = a->dirfd = -1;
}

/* ---- records ----------------------------------------------------------------- */

size_t rbd_aof_record_begin(rbd_aof_t *a, uint8_t type)
{
    size_t start = a->pending.len;
    unsigned char hdr[RBD_REC_HDR];

    rbd_rec_start(hdr, type);
    rbi_buf_append(&a->pending, hdr, sizeof(hdr));
    a->open++;
    return start;
}

void rbd_aof_record_drop(rbd_aof_t *a, size_t start)
{
    a->open--;
    a->pending.len = start;
}

void rbd_aof_record_end(rbd_aof_t *a, size_t start, int sync)
{
    a->open--;
    if (sync)
        a->force_sync = 1;
    if (a->pending.oom)
        return;   /* rbd_aof_flush refuses to pretend it was logged */
    rbd_rec_seal((unsigned char *)a->pending.data + start, a->pending.len - start);
    a->changes++;
}

int rbd_aof_disable(rbd_aof_t *a)
{
    if (a->open > 0) {
        errno = EBUSY;
        return -1;
    }
    if (a->enabled && a->pending.len > 0)
        (void)rbd_aof_flush(a);   /* best effort: failing, the log is still a prefix */
    a->pending.len = 0;
    a->pending.oom = 0;
    a->force_sync = 0;
    a->write_error = 0;   /* nothing is left to write (a broken log stays so: the
                             repairing snapshot, snapshot.c, clears it) */
    a->enabled = 0;
    return 0;
}

/* ---- group commit ------------------------------------------------------------- */

/* Writes the pending records: 0, or -1 (a partial record is trimmed off
 * the file again; if even that fails the log is broken). */
static int write_pending(rbd_aof_t *a)
{
    int e;

    if (rbd_write_all(a->logfd, a->pending.data, a->pending.len) == 0) {
        a->log_bytes += a->pending.len;
        atomic_store_explicit(&a->log_written, a->log_bytes, memory_order_release);
        a->pending.len = 0;
        a->dirty = 1;
        return 0;
    }
    e = errno;
    /* Drop a partial record so the log stays parseable; if even that
     * fails, only a snapshot can vouch for the state. */
    if (ftruncate(a->logfd, (off_t)a->log_bytes) != 0 ||
        lseek(a->logfd, (off_t)a->log_bytes, SEEK_SET) < 0) {
        rbd_log(LOG_WARNING, "could not trim a partial log write: %s", strerror(errno));
        a->broken = 1;
    }
    if (!a->write_error)
        rbd_log(LOG_WARNING, "writing %s/%s failed: %s; replies wait, writes are refused",
                a->dir, RBD_LOG_FILE, strerror(e));
    a->write_error = 1;
    a->log_errors++;
    return -1;
}

int rbd_aof_flush(rbd_aof_t *a)
{
    if (a->broken)
        return -1;   /* replies wait for a snapshot (snapshot.c retries) */
    if (a->held)
        return -1;   /* for the log a snapshot is switching to: a few ms */
    if (a->open > 0) {
        errno = EBUSY;
        return -1;   /* a record is being built (an EXEC's): it is written whole */
    }
    if (a->pending.oom) {
        /* A record could not be built: refuse to pretend it was logged. */
        rbd_log(LOG_WARNING, "out of memory building log records; holding replies until a "
                "snapshot covers them");
        a->broken = 1;
        return -1;
    }
    if (a->pending.len > 0 && write_pending(a) != 0)
        return -1;
    if (a->dirty && (a->force_sync || a->appendfsync == FSYNC_ALWAYS)) {
        if (fdatasync(a->logfd) != 0) {
            /* After a failed fsync the kernel may have dropped the pages,
             * and a retry could "succeed" without them: never trust this
             * log again; a snapshot must cover what it held (P2). */
            rbd_log(LOG_WARNING, "fdatasync of %s/%s failed: %s; replies wait until a snapshot "
                    "succeeds", a->dir, RBD_LOG_FILE, strerror(errno));
            a->broken = 1;
            a->log_errors++;
            return -1;
        }
        a->dirty = 0;
        a->fsyncs++;
    }
    a->force_sync = 0;
    if (a->write_error)
        rbd_log(LOG_NOTICE, "log writes work again");
    a->write_error = 0;
    return 0;
}

void rbd_aof_tick(rbd_aof_t *a)
{
    int failed;

    pthread_mutex_lock(&a->sync.lock);
    failed = a->sync.error;
    a->sync.error = 0;
    pthread_mutex_unlock(&a->sync.lock);
    if (failed != 0 && !a->broken) {
        /* As in rbd_aof_flush: after a failed fsync the kernel may have
         * dropped the dirty pages and a later fsync "succeed" without them,
         * so the log no longer vouches for what it holds; a snapshot must
         * (snapshot.c, right away).  Until then writes are refused. */
        rbd_log(LOG_WARNING, "background fdatasync of %s/%s failed: %s; writes are refused "
                "until a snapshot succeeds", a->dir, RBD_LOG_FILE, strerror(failed));
        a->broken = 1;
        a->log_errors++;
    }
    if (a->dirty && a->appendfsync == FSYNC_EVERYSEC && !a->broken) {
        pthread_mutex_lock(&a->sync.lock);
        a->sync.requested = 1;
        pthread_cond_signal(&a->sync.cond);
        pthread_mutex_unlock(&a->sync.lock);
        a->dirty = 0;
        a->fsyncs++;
    }
}

/* ---- the file ---------------------------------------------------------------- */

int rbd_aof_create(const char *path, uint64_t id)
{
    unsigned char hdr[RBD_LOG_HDR] = { 0 };
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0)
        return -1;
    memcpy(hdr, RBD_LOG_MAGIC, 8);
    rbd_put_u64(hdr + 8, id);
    rbd_put_u64(hdr + 16, (uint64_t)time(NULL));
    rbd_put_u64(hdr + LOG_HDR_SUM, XXH3_64bits(hdr, LOG_HDR_SUM));
    if (rbd_write_all(fd, hdr, sizeof(hdr)) != 0 || fdatasync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
        return -1;
    }
    return fd;
}

/* The descriptor and id of the log in place become fd and id, which holds
 * `bytes` bytes (all durable) and `changes` records. */
static void use_log(rbd_aof_t *a, int fd, uint64_t id, uint64_t bytes, uint64_t changes)
{
    fsyncer_set_fd(&a->sync, -1);
    if (a->logfd >= 0)
        fsyncer_retire(&a->sync, a->logfd);
    a->logfd = fd;
    fsyncer_set_fd(&a->sync, fd);
    a->log_id = id;
    a->log_bytes = bytes;
    atomic_store_explicit(&a->log_written, a->log_bytes, memory_order_release);
    a->dirty = 0;
    a->changes = changes;
}

void rbd_aof_continue(rbd_aof_t *a, int fd, uint64_t id, uint64_t bytes, uint64_t changes)
{
    use_log(a, fd, id, bytes, changes);
}

int rbd_aof_switch(rbd_aof_t *a, int fd, uint64_t id)
{
    int was_failing = a->broken || a->write_error;

    use_log(a, fd, id, RBD_LOG_HDR, 0);
    /* The snapshot holds everything: records still pending (a broken log)
     * are covered, and the replies they held may go. */
    a->pending.len = 0;
    a->pending.oom = 0;
    a->force_sync = 0;
    a->broken = 0;
    a->write_error = 0;
    return was_failing;
}

int rbd_aof_header(const unsigned char *data, size_t len, const char *path, uint64_t *id,
                   int *v1, char *err, size_t errlen)
{
    if (len < RBD_LOG_HDR) {
        snprintf(err, errlen, "log %s is truncated in its header (%zu bytes)", path, len);
        return -1;
    }
    *v1 = memcmp(data, RBD_LOG_MAGIC_V1, 8) == 0;
    if (!*v1 && memcmp(data, RBD_LOG_MAGIC, 8) != 0) {
        snprintf(err, errlen, "log %s is not a ringbloom log (bad magic)", path);
        return -1;
    }
    if (*v1 ? rbd_get_u64(data + LOG_HDR_SUM) != 0
            : XXH3_64bits(data, LOG_HDR_SUM) != rbd_get_u64(data + LOG_HDR_SUM)) {
        snprintf(err, errlen, "log %s is corrupt: header checksum mismatch%s", path,
                 *v1 ? " (format 1: bytes that are always zero are not)" : "");
        return -1;
    }
    *id = rbd_get_u64(data + 8);
    return 0;
}
