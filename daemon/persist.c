/*
 * persist.c - ringbloomd's durability: an append-only log of every mutation
 * with group commit, periodic snapshots, and start-up recovery.
 *
 * Files in the state directory (byte by byte in docs/design.md, "Files in
 * the state directory"):
 *   snapshot.rbs     64-byte header + a dump of the segment (rb_segment_dump)
 *   appendonly.rbl   32-byte header + records since that snapshot
 * Every byte of both headers is under a checksum (format 2; format-1 files,
 * from earlier versions, have none: they are read and replaced at start-up).
 * A snapshot names the log that continues it and the log it superseded
 * (the one in place when it was taken; 0: none).  Every log continues the
 * snapshot that names it: logs are only ever made by persist_snapshot, the
 * first one by the start-up snapshot of an empty state directory.
 *
 * Invariants:
 *   P1 a record is written (write(2)) before the reply of its command is
 *      sent, in every appendfsync mode: an acknowledged change survives a
 *      crash of the daemon process even if the segment is lost too;
 *   P2 with appendfsync always, and for every ring change or new filter in
 *      any mode, the record is also fsync'd before the reply;
 *   P3 a snapshot is complete on disk (tmp + fsync + rename + dir fsync)
 *      before the log it supersedes is replaced;
 *   P4 a record is appended in the same step as the change it describes,
 *      and a snapshot writes every record appended before it to the old
 *      log before it dumps the segment: the dump holds exactly the changes
 *      of the logs before it, and the log it names starts from the dump;
 *   P5 whenever the daemon may die, the files are one of: neither file; a
 *      snapshot with the log it names; a snapshot with the log it
 *      superseded (which it contains, P3 and P4); a snapshot that
 *      superseded no log, alone.  persist_start loads exactly these and
 *      refuses every other state by name (docs/design.md, "Start-up"),
 *      unless told --ignore-corrupt (which moves files aside, so a death
 *      during such a start may need it again).
 * Replies wait for one write (and at most one fsync) per event-loop turn,
 * whatever the number of commands in it: group commit.
 *
 * Record: u32 length of (type + payload), u32 low half of XXH3-64 over
 * (type + payload), u8 type, payload.  Integers little-endian.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "rbd.h"

#define SNAP_MAGIC    "RBSNAP01"
#define SNAP_VERSION  2u           /* 1: no header checksum, no superseded log */
#define LOG_MAGIC     "RBLOG002"
#define LOG_MAGIC_V1  "RBLOG001"   /* format 1: no header checksum */
#define SNAP_HDR      64u
#define LOG_HDR       32u
#define SNAP_HDR_SUM  56u          /* offset of the snapshot header's checksum */
#define LOG_HDR_SUM   24u          /* offset of the log header's checksum */
#define SNAP_FILE  "snapshot.rbs"
#define LOG_FILE   "appendonly.rbl"

/* ---- everysec fsync thread ------------------------------------------------ */

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;
static int sync_fd = -1, sync_requested, sync_stop;
static int sync_errno;   /* a failed background fdatasync, for persist_tick */
static pthread_t sync_thread;

/* fdatasyncs the log on request, so everysec never stalls the event loop;
 * log rotation takes sync_lock before closing the descriptor. */
static void *sync_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sync_lock);
    while (!sync_stop) {
        while (!sync_requested && !sync_stop)
            pthread_cond_wait(&sync_cond, &sync_lock);
        if (sync_requested && sync_fd >= 0 && fdatasync(sync_fd) != 0)
            sync_errno = errno;
        sync_requested = 0;
    }
    pthread_mutex_unlock(&sync_lock);
    return NULL;
}

static void set_sync_fd(int fd)
{
    pthread_mutex_lock(&sync_lock);
    sync_fd = fd;
    pthread_mutex_unlock(&sync_lock);
}

/* ---- small file helpers ----------------------------------------------------- */

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}

/* ---- records ------------------------------------------------------------------ */

static size_t rec_begin(persist_t *p, uint8_t type)
{
    size_t start = p->pending.len;
    unsigned char hdr[9] = { 0 };

    hdr[8] = type;
    rbuf_append(&p->pending, hdr, sizeof(hdr));
    return start;
}

static void rec_u16(persist_t *p, uint16_t v)
{
    unsigned char b[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
    rbuf_append(&p->pending, b, 2);
}

static void rec_u32(persist_t *p, uint32_t v)
{
    unsigned char b[4];
    put_u32(b, v);
    rbuf_append(&p->pending, b, 4);
}

static void rec_u64(persist_t *p, uint64_t v)
{
    unsigned char b[8];
    put_u64(b, v);
    rbuf_append(&p->pending, b, 8);
}

static void rec_bytes16(persist_t *p, const void *data, size_t len)
{
    rec_u16(p, (uint16_t)len);
    rbuf_append(&p->pending, data, len);
}

static void rec_end(persist_t *p, size_t start)
{
    unsigned char *r;
    size_t len;

    if (p->pending.oom)
        return;
    r = (unsigned char *)p->pending.data + start;
    len = p->pending.len - start - 8;
    put_u32(r, (uint32_t)len);
    put_u32(r + 4, (uint32_t)XXH3_64bits(r + 8, len));
    p->changes++;
}

void persist_ring_add(server_t *s, const char *name, size_t len, uint32_t weight)
{
    size_t r = rec_begin(&s->persist, REC_RING_ADD);
    rec_u32(&s->persist, weight);
    rec_bytes16(&s->persist, name, len);
    rec_end(&s->persist, r);
    s->persist.force_sync = 1;
}

void persist_ring_remove(server_t *s, const char *name, size_t len)
{
    size_t r = rec_begin(&s->persist, REC_RING_REMOVE);
    rec_bytes16(&s->persist, name, len);
    rec_end(&s->persist, r);
    s->persist.force_sync = 1;
}

void persist_ring_weight(server_t *s, const char *name, size_t len, uint32_t weight)
{
    size_t r = rec_begin(&s->persist, REC_RING_WEIGHT);
    rec_u32(&s->persist, weight);
    rec_bytes16(&s->persist, name, len);
    rec_end(&s->persist, r);
    s->persist.force_sync = 1;
}

void persist_ring_mode(server_t *s, rb_ring_mode_t mode, uint32_t replicas)
{
    size_t r = rec_begin(&s->persist, REC_RING_MODE);
    rec_u32(&s->persist, (uint32_t)mode);
    rec_u32(&s->persist, replicas);
    rec_end(&s->persist, r);
    s->persist.force_sync = 1;
}

void persist_bf_reserve(server_t *s, const char *name, size_t len, const rb_bloom_params_t *bp)
{
    size_t r = rec_begin(&s->persist, REC_BF_RESERVE);
    uint64_t err;

    memcpy(&err, &bp->error_rate, sizeof(err));
    rec_bytes16(&s->persist, name, len);
    rec_u64(&s->persist, bp->capacity);
    rec_u64(&s->persist, err);
    rec_u32(&s->persist, (uint32_t)bp->layout);
    rec_u32(&s->persist, bp->flags);
    rec_u32(&s->persist, bp->expansion);
    rec_u32(&s->persist, bp->generations);
    rec_u32(&s->persist, bp->window);
    rbuf_append(&s->persist.pending, bp->secret, RB_BLOOM_SECRET_BYTES);
    rec_end(&s->persist, r);
    s->persist.force_sync = 1;
}

void persist_bf_named(server_t *s, int type, const char *name, size_t len)
{
    size_t r = rec_begin(&s->persist, (uint8_t)type);
    rec_bytes16(&s->persist, name, len);
    rec_end(&s->persist, r);
}

void persist_bf_add(server_t *s, const char *name, size_t len, const char *const *keys,
                    const size_t *lens, size_t n)
{
    size_t r = rec_begin(&s->persist, REC_BF_ADD);

    rec_bytes16(&s->persist, name, len);
    rec_u32(&s->persist, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        rec_u32(&s->persist, (uint32_t)lens[i]);
        rbuf_append(&s->persist.pending, keys[i], lens[i]);
    }
    rec_end(&s->persist, r);
}

/* ---- group commit ---------------------------------------------------------------- */

int persist_flush(server_t *s)
{
    persist_t *p = &s->persist;

    if (p->broken)
        return -1;   /* replies wait for a snapshot (persist_tick retries) */
    if (p->pending.oom) {
        /* A record could not be built: refuse to pretend it was logged. */
        rbd_log(LOG_WARNING, "out of memory building log records; holding replies until a "
                "snapshot covers them");
        p->broken = 1;
        return -1;
    }
    if (p->pending.len > 0) {
        if (write_all(p->logfd, p->pending.data, p->pending.len) != 0) {
            int e = errno;
            /* Drop a partial record so the log stays parseable; if even
             * that fails, only a snapshot can vouch for the state. */
            if (ftruncate(p->logfd, (off_t)p->log_bytes) != 0 ||
                lseek(p->logfd, (off_t)p->log_bytes, SEEK_SET) < 0) {
                rbd_log(LOG_WARNING, "could not trim a partial log write: %s", strerror(errno));
                p->broken = 1;
            }
            if (!p->write_error)
                rbd_log(LOG_WARNING, "writing %s/%s failed: %s; replies wait, writes are refused",
                        p->dir, LOG_FILE, strerror(e));
            p->write_error = 1;
            p->log_errors++;
            return -1;
        }
        p->log_bytes += p->pending.len;
        p->pending.len = 0;
        p->dirty = 1;
    }
    if (p->dirty && (p->force_sync || s->cfg.appendfsync == FSYNC_ALWAYS)) {
        if (fdatasync(p->logfd) != 0) {
            /* After a failed fsync the kernel may have dropped the pages,
             * and a retry could "succeed" without them: never trust this
             * log again; a snapshot must cover what it held (P2). */
            rbd_log(LOG_WARNING, "fdatasync of %s/%s failed: %s; replies wait until a snapshot "
                    "succeeds", p->dir, LOG_FILE, strerror(errno));
            p->broken = 1;
            p->log_errors++;
            return -1;
        }
        p->dirty = 0;
        p->fsyncs++;
    }
    p->force_sync = 0;
    if (p->write_error)
        rbd_log(LOG_NOTICE, "log writes work again");
    p->write_error = 0;
    return 0;
}

void persist_tick(server_t *s, uint64_t now)
{
    persist_t *p = &s->persist;
    char err[256];
    int due, failed;

    pthread_mutex_lock(&sync_lock);
    failed = sync_errno;
    sync_errno = 0;
    pthread_mutex_unlock(&sync_lock);
    if (failed != 0 && !p->broken) {
        /* As in persist_flush: after a failed fsync the kernel may have
         * dropped the dirty pages and a later fsync "succeed" without them,
         * so the log no longer vouches for what it holds; a snapshot must
         * (below, right away).  Until then writes are refused. */
        rbd_log(LOG_WARNING, "background fdatasync of %s/%s failed: %s; writes are refused "
                "until a snapshot succeeds", p->dir, LOG_FILE, strerror(failed));
        p->broken = 1;
        p->log_errors++;
    }
    if (p->dirty && s->cfg.appendfsync == FSYNC_EVERYSEC && !p->broken) {
        pthread_mutex_lock(&sync_lock);
        sync_requested = 1;
        pthread_cond_signal(&sync_cond);
        pthread_mutex_unlock(&sync_lock);
        p->dirty = 0;
        p->fsyncs++;
    }
    due = p->broken ||
          (p->changes > 0 && !p->write_error &&
           ((s->cfg.save_seconds > 0 && now - p->last_save_mono >= 1000ull * s->cfg.save_seconds) ||
            p->log_bytes >= s->cfg.save_log_bytes));
    if (!due || now < p->next_attempt_mono)
        return;
    if (persist_snapshot(s, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "%s snapshot failed: %s (next attempt in 10 s)",
                p->broken ? "repairing" : "periodic", err);
        p->next_attempt_mono = now + 10000;
    }
}

/* ---- snapshots ---------------------------------------------------------------------- */

typedef struct dump_ctx {
    int fd;
    uint64_t len, hash;
} dump_ctx_t;

static int dump_write(const void *data, size_t len, void *arg)
{
    dump_ctx_t *d = arg;

    d->len = len;
    d->hash = XXH3_64bits(data, len);
    return write_all(d->fd, data, len);
}

/* Format 2 headers; their readers are snapshot_header and log_header. */
static void put_snap_header(unsigned char *hdr, uint64_t next_log, uint64_t len, uint64_t hash,
                            uint64_t prev_log)
{
    memset(hdr, 0, SNAP_HDR);
    memcpy(hdr, SNAP_MAGIC, 8);
    put_u32(hdr + 8, SNAP_VERSION);
    put_u64(hdr + 16, next_log);
    put_u64(hdr + 24, len);
    put_u64(hdr + 32, hash);
    put_u64(hdr + 40, (uint64_t)time(NULL));
    put_u64(hdr + 48, prev_log);
    put_u64(hdr + SNAP_HDR_SUM, XXH3_64bits(hdr, SNAP_HDR_SUM));
}

static int new_log(const char *path, uint64_t id)
{
    unsigned char hdr[LOG_HDR] = { 0 };
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    if (fd < 0)
        return -1;
    memcpy(hdr, LOG_MAGIC, 8);
    put_u64(hdr + 8, id);
    put_u64(hdr + 16, (uint64_t)time(NULL));
    put_u64(hdr + LOG_HDR_SUM, XXH3_64bits(hdr, LOG_HDR_SUM));
    if (write_all(fd, hdr, sizeof(hdr)) != 0 || fdatasync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
        return -1;
    }
    return fd;
}

int persist_snapshot(server_t *s, char *err, size_t errlen)
{
    persist_t *p = &s->persist;
    char snap_tmp[4200], snap[4200], log_tmp[4200], logp[4200];
    unsigned char hdr[SNAP_HDR] = { 0 };
    dump_ctx_t d = { -1, 0, 0 };
    uint64_t id;
    int lfd = -1, renamed = 0, rc;

    snprintf(snap_tmp, sizeof(snap_tmp), "%s/%s.tmp", p->dir, SNAP_FILE);
    snprintf(snap, sizeof(snap), "%s/%s", p->dir, SNAP_FILE);
    snprintf(log_tmp, sizeof(log_tmp), "%s/%s.tmp", p->dir, LOG_FILE);
    snprintf(logp, sizeof(logp), "%s/%s", p->dir, LOG_FILE);
    /* A healthy log is flushed first; a broken one is what this snapshot
     * replaces (the segment holds every change its records described). */
    if (!p->broken && p->logfd >= 0 && (persist_flush(s) != 0 || fdatasync(p->logfd) != 0)) {
        snprintf(err, errlen, "the log cannot be written: %s", strerror(errno));
        return -1;
    }
    do
        arc4random_buf(&id, sizeof(id));
    while (id == 0 || id == p->log_id);
    lfd = new_log(log_tmp, id);
    if (lfd < 0) {
        snprintf(err, errlen, "%s: %s", log_tmp, strerror(errno));
        return -1;
    }
    d.fd = open(snap_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (d.fd < 0) {
        snprintf(err, errlen, "%s: %s", snap_tmp, strerror(errno));
        goto fail;
    }
    if (write_all(d.fd, hdr, sizeof(hdr)) != 0) {
        snprintf(err, errlen, "%s: %s", snap_tmp, strerror(errno));
        goto fail;
    }
    rc = rb_segment_dump(s->seg, dump_write, &d);
    if (rc != RB_OK) {
        snprintf(err, errlen, "%s: %s", snap_tmp, strerror(errno));
        goto fail;
    }
    /* p->log_id is the log in place, the one this snapshot supersedes
     * (P5: a crash before the log rename leaves exactly that one). */
    put_snap_header(hdr, id, d.len, d.hash, p->log_id);
    if (pwrite(d.fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) || fsync(d.fd) != 0) {
        snprintf(err, errlen, "%s: %s", snap_tmp, strerror(errno));
        goto fail;
    }
    close(d.fd);
    d.fd = -1;
    /* P3: the snapshot is durable before the old log goes. */
    if (rename(snap_tmp, snap) != 0) {
        snprintf(err, errlen, "installing %s: %s", snap, strerror(errno));
        goto fail;
    }
    /* From here the installed snapshot names the new log: the old log
     * would be skipped on restart, so nothing may be appended to it until
     * the new one is in place. */
    if (fsync(p->dirfd) != 0 || (renamed = rename(log_tmp, logp) == 0) == 0 ||
        fsync(p->dirfd) != 0) {
        snprintf(err, errlen, "installing %s: %s", logp, strerror(errno));
        p->broken = 1;
        close(lfd);
        if (renamed)
            p->log_id = id;   /* in place, durable or not: the next snapshot supersedes it */
        else
            unlink(log_tmp);
        p->last_save_ok = 0;
        return -1;
    }
    set_sync_fd(-1);
    if (p->logfd >= 0)
        close(p->logfd);
    p->logfd = lfd;
    set_sync_fd(lfd);
    p->log_id = id;
    p->log_bytes = LOG_HDR;
    p->dirty = 0;
    p->changes = 0;
    /* The snapshot holds everything: records still pending (a broken log)
     * are covered, and the replies they held may go. */
    p->pending.len = 0;
    p->pending.oom = 0;
    p->force_sync = 0;
    if (p->broken || p->write_error)
        rbd_log(LOG_NOTICE, "snapshot saved: the log works again");
    p->broken = 0;
    p->write_error = 0;
    p->last_save_ms = rbd_now_ms();
    p->last_save_mono = rbd_mono_ms();
    p->last_save_ok = 1;
    p->snapshots++;
    rbd_log(LOG_INFO, "snapshot saved: %s (%llu bytes)", snap, (unsigned long long)d.len);
    return 0;

fail:
    if (d.fd >= 0)
        close(d.fd);
    unlink(snap_tmp);
    close(lfd);
    unlink(log_tmp);
    p->last_save_ok = 0;
    return -1;
}

/* ---- start-up ----------------------------------------------------------------------- */

int persist_open(server_t *s, char *err, size_t errlen)
{
    persist_t *p = &s->persist;

    memset(p, 0, sizeof(*p));
    p->logfd = -1;
    p->dirfd = -1;
    p->last_save_ok = 1;
    snprintf(p->dir, sizeof(p->dir), "%s", s->cfg.dir);
    if (rbd_make_dir(p->dir, 1, 0700, err, errlen) != 0)
        return -1;
    p->dirfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (p->dirfd < 0) {
        snprintf(err, errlen, "cannot open state directory %s: %s", p->dir, strerror(errno));
        return -1;
    }
    if (pthread_create(&sync_thread, NULL, sync_main, NULL) != 0) {
        snprintf(err, errlen, "cannot start the fsync thread");
        return -1;
    }
    p->sync_thread_started = 1;
    return 0;
}

void persist_close(server_t *s)
{
    persist_t *p = &s->persist;

    if (p->sync_thread_started) {
        pthread_mutex_lock(&sync_lock);
        sync_stop = 1;
        pthread_cond_signal(&sync_cond);
        pthread_mutex_unlock(&sync_lock);
        pthread_join(sync_thread, NULL);
        p->sync_thread_started = 0;
    }
    if (p->logfd >= 0) {
        if (p->dirty)
            fdatasync(p->logfd);
        close(p->logfd);
    }
    if (p->dirfd >= 0)
        close(p->dirfd);
    rbuf_free(&p->pending);
    p->logfd = p->dirfd = -1;
}

/* Keeps path as <path>.<what>-<unix time>[.<n>] - a hard link, never over
 * an earlier copy - and, if move, removes it from path.  The copy's name
 * goes to kept.  0, or -1 with errno (nothing changed). */
static int keep_copy(const char *path, const char *what, int move, char *kept, size_t cap)
{
    long now = (long)time(NULL);

    for (int n = 0; n < 1000; n++) {
        if (n == 0)
            snprintf(kept, cap, "%s.%s-%ld", path, what, now);
        else
            snprintf(kept, cap, "%s.%s-%ld.%d", path, what, now, n);
        if (link(path, kept) == 0) {
            if (move && unlink(path) != 0) {
                int e = errno;
                unlink(kept);
                errno = e;
                return -1;
            }
            return 0;
        }
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

/* --ignore-corrupt: discards what err refuses - file path from offset
 * `from` on (0: all of it; the `records` records before it stay applied) -
 * moving it aside to <path>.corrupt-<time>, and says so at warning level.
 * 0; -1 without ignore_corrupt, or if the file cannot be moved aside (err
 * says so): nothing is discarded without its copy. */
static int discard(const char *path, size_t from, size_t size, uint64_t records,
                   int ignore_corrupt, char *err, size_t errlen)
{
    char kept[4300];
    size_t n;

    if (!ignore_corrupt)
        return -1;
    if (keep_copy(path, "corrupt", 1, kept, sizeof(kept)) != 0) {
        n = strlen(err);
        snprintf(err + n, errlen - n, "; --ignore-corrupt cannot move it aside (%s), so it is "
                 "not discarded", strerror(errno));
        return -1;
    }
    if (from == 0)
        rbd_log(LOG_WARNING, "%s; discarding all of %s (%zu bytes) (--ignore-corrupt): it is "
                "kept as %s", err, path, size, kept);
    else
        rbd_log(LOG_WARNING, "%s; discarding %s from offset %zu on (%zu of its %zu bytes; the "
                "%llu records before stay applied) (--ignore-corrupt): it is kept as %s", err,
                path, from, size - from, size, (unsigned long long)records, kept);
    return 0;
}

/* The bytes of a state file: mmap'ed by persist_start, or a caller's
 * buffer (persist_load_*_buf; the fuzz targets feed these). */
typedef struct mapped {
    const unsigned char *data;
    size_t len;
} mapped_t;

static int map_file(const char *path, mapped_t *m, int *missing)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *missing = 0;
    m->data = NULL;
    m->len = 0;
    if (fd < 0) {
        *missing = errno == ENOENT;
        return *missing ? 0 : -1;
    }
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    m->len = (size_t)st.st_size;
    if (m->len > 0) {
        void *d = mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (d == MAP_FAILED) {
            close(fd);
            return -1;
        }
        m->data = d;
    }
    close(fd);
    return 0;
}

static void unmap_file(mapped_t *m)
{
    if (m->data != NULL)
        munmap((void *)m->data, m->len);
    m->data = NULL;
}

/* Reads a snapshot's header (format 2, or 1: no checksum, no prev_log,
 * zeros where format 2 has them) into snap, *len and *hash (of the dump).
 * 0, or -1 with err. */
static int snapshot_header(const mapped_t *m, const char *path, persist_snap_t *snap,
                           uint64_t *len, uint64_t *hash, char *err, size_t errlen)
{
    uint32_t version;

    if (m->len < SNAP_HDR) {
        snprintf(err, errlen, "snapshot %s is truncated in its header (%zu bytes)", path, m->len);
        return -1;
    }
    if (memcmp(m->data, SNAP_MAGIC, 8) != 0) {
        snprintf(err, errlen, "snapshot %s is not a ringbloom snapshot (bad magic)", path);
        return -1;
    }
    version = get_u32(m->data + 8);
    if (version == 1 ? get_u32(m->data + 12) != 0 || get_u64(m->data + 48) != 0 ||
                           get_u64(m->data + SNAP_HDR_SUM) != 0
                     : XXH3_64bits(m->data, SNAP_HDR_SUM) != get_u64(m->data + SNAP_HDR_SUM)) {
        snprintf(err, errlen, "snapshot %s is corrupt: header checksum mismatch%s", path,
                 version == 1 ? " (format 1: bytes that are always zero are not)" : "");
        return -1;
    }
    if (version != 1 && version != SNAP_VERSION) {
        snprintf(err, errlen, "snapshot %s has format version %u; this ringbloomd reads 1 and %u",
                 path, version, SNAP_VERSION);
        return -1;
    }
    snap->present = 1;
    snap->version = version;
    snap->next_log = get_u64(m->data + 16);
    snap->prev_log = get_u64(m->data + 48);
    *len = get_u64(m->data + 24);
    *hash = get_u64(m->data + 32);
    return 0;
}

/* Reads a log's header: *id, and *v1 if it is format 1 (no checksum,
 * zeros where format 2 has it).  0, or -1 with err. */
static int log_header(const mapped_t *m, const char *path, uint64_t *id, int *v1, char *err,
                      size_t errlen)
{
    if (m->len < LOG_HDR) {
        snprintf(err, errlen, "log %s is truncated in its header (%zu bytes)", path, m->len);
        return -1;
    }
    *v1 = memcmp(m->data, LOG_MAGIC_V1, 8) == 0;
    if (!*v1 && memcmp(m->data, LOG_MAGIC, 8) != 0) {
        snprintf(err, errlen, "log %s is not a ringbloom log (bad magic)", path);
        return -1;
    }
    if (*v1 ? get_u64(m->data + LOG_HDR_SUM) != 0
            : XXH3_64bits(m->data, LOG_HDR_SUM) != get_u64(m->data + LOG_HDR_SUM)) {
        snprintf(err, errlen, "log %s is corrupt: header checksum mismatch%s", path,
                 *v1 ? " (format 1: bytes that are always zero are not)" : "");
        return -1;
    }
    *id = get_u64(m->data + 8);
    return 0;
}

int persist_load_snapshot_buf(server_t *s, const char *instance, const char *path,
                              const void *data, size_t size, persist_snap_t *snap,
                              char *err, size_t errlen)
{
    rb_segment_opts_t o = { .mode = s->cfg.segment_mode, .max_size = s->cfg.max_memory,
                            .flags = RB_SEGMENT_HIDDEN };
    const mapped_t m = { data, size };
    persist_snap_t h = *snap;
    uint64_t len, hash;
    int rc;

    if (snapshot_header(&m, path, &h, &len, &hash, err, errlen) != 0)
        return -1;
    if (len != m.len - SNAP_HDR) {
        snprintf(err, errlen, "snapshot %s is truncated: %zu bytes, header says %llu", path,
                 m.len, (unsigned long long)(len + SNAP_HDR));
        return -1;
    }
    if (XXH3_64bits(m.data + SNAP_HDR, len) != hash) {
        snprintf(err, errlen, "snapshot %s is corrupt: checksum mismatch", path);
        return -1;
    }
    rc = rb_segment_restore(instance, &o, m.data + SNAP_HDR, len, &s->seg);
    if (rc != RB_OK) {
        snprintf(err, errlen, "snapshot %s cannot be restored: %s", path, rb_strerror(rc));
        return -1;
    }
    if (h.version == 1)
        rbd_log(LOG_WARNING, "snapshot %s is in the old format (version 1: no header checksum); "
                "the start-up snapshot replaces it with version %u", path, SNAP_VERSION);
    *snap = h;
    return 0;
}

static int known_type(uint8_t type)
{
    return type >= REC_RING_ADD && type <= REC_BF_RESET;
}

static const char *rec_name(uint8_t type)
{
    static const char *const names[] = { "RING.ADD", "RING.REMOVE", "RING.WEIGHT",
                                         "RING.MODE", "BF.RESERVE", "BF.ADD", "BF.ROTATE",
                                         "BF.RESET" };
    return names[type - REC_RING_ADD];
}

/* A name from a record as text for a message: at most 64 bytes of it,
 * bytes that are not printable ASCII as \xHH. */
static const char *printable(const char *name, size_t len, char *buf, size_t cap)
{
    size_t o = 0;

    for (size_t i = 0; i < len && i < 64 && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    snprintf(buf + o, cap - o, "%s", len > 64 ? "..." : "");
    return buf;
}

/* Applies one whole, checksummed record of a known type (record_at).
 * Returns 0, or -1 with err saying what is wrong with it. */
static int replay_record(server_t *s, uint8_t type, const unsigned char *q, size_t n,
                         char *err, size_t errlen)
{
    size_t i = 0, namelen = 0;
    const char *name = NULL;
    char shown[300];
    int rc = RB_OK;

#define NEED(k) do { if (n - i < (size_t)(k)) goto short_rec; } while (0)
    if (type == REC_RING_MODE) {
        NEED(8);
        rc = rb_ring_set_mode(s->ring, (rb_ring_mode_t)get_u32(q), get_u32(q + 4));
    } else if (type == REC_RING_ADD || type == REC_RING_WEIGHT) {
        uint32_t w;
        NEED(6);
        w = get_u32(q);
        namelen = q[4] | (size_t)q[5] << 8;
        i = 6;
        NEED(namelen);
        name = (const char *)q + i;
        rc = type == REC_RING_ADD ? rb_ring_add(s->ring, name, namelen, w)
                                  : rb_ring_set_weight(s->ring, name, namelen, w);
    } else if (type == REC_RING_REMOVE) {
        NEED(2);
        namelen = q[0] | (size_t)q[1] << 8;
        i = 2;
        NEED(namelen);
        name = (const char *)q + 2;
        rc = rb_ring_remove(s->ring, name, namelen);
    } else {
        NEED(2);
        namelen = q[0] | (size_t)q[1] << 8;
        i = 2;
        NEED(namelen);
        name = (const char *)q + 2;
        i += namelen;
        if (type == REC_BF_RESERVE) {
            rb_bloom_params_t bp;
            uint64_t e;
            NEED(8 + 8 + 4 + 4 + 4 + 4 + 4 + RB_BLOOM_SECRET_BYTES);
            memset(&bp, 0, sizeof(bp));
            bp.capacity = get_u64(q + i);
            e = get_u64(q + i + 8);
            memcpy(&bp.error_rate, &e, sizeof(e));
            bp.layout = (rb_bloom_layout_t)get_u32(q + i + 16);
            bp.flags = get_u32(q + i + 20);
            bp.expansion = get_u32(q + i + 24);
            bp.generations = get_u32(q + i + 28);
            bp.window = get_u32(q + i + 32);
            bp.secret = q + i + 36;
            rc = rb_bloom_reserve(s->seg, name, namelen, &bp);
        } else {
            /* BF.ROTATE, BF.RESET, BF.ADD: an existing filter's. */
            rb_bloom_t *bf = rbd_filter(s, name, namelen, &rc);
            if (bf != NULL && type == REC_BF_ROTATE) {
                rc = rb_bloom_rotate(bf);
            } else if (bf != NULL && type == REC_BF_RESET) {
                rc = rb_bloom_reset(bf);
            } else if (bf != NULL) {
                uint32_t count;
                NEED(4);
                count = get_u32(q + i);
                i += 4;
                for (uint32_t k = 0; k < count; k++) {
                    uint32_t klen;
                    int r;
                    NEED(4);
                    klen = get_u32(q + i);
                    i += 4;
                    NEED(klen);
                    r = rb_bloom_add(bf, q + i, klen);
                    i += klen;
                    if (r < 0 && r != RB_EFULL) {
                        rc = r;
                        break;
                    }
                }
            }
        }
    }
    if (rc >= 0)
        return 0;
    /* P4: replayed onto the state it was logged from, a record finds what
     * its command found.  A missing filter or node, or one that is already
     * there, means the log was not written from this state: it does not
     * belong to the snapshot, or the record is damaged beyond what its
     * checksum sees. */
    if ((rc == RB_ENOENT || rc == RB_EEXIST) && name != NULL) {
        int ring = type <= REC_RING_WEIGHT;
        snprintf(err, errlen, "record %s names %s '%s', which %s", rec_name(type),
                 ring ? "node" : "filter", printable(name, namelen, shown, sizeof(shown)),
                 rc == RB_EEXIST ? (ring ? "is already in the ring" : "already exists")
                                 : (ring ? "is not in the ring" : "does not exist"));
        return -1;
    }
    snprintf(err, errlen, "record %s cannot be applied: %s", rec_name(type), rb_strerror(rc));
    return -1;
short_rec:
    snprintf(err, errlen, "record %s is shorter than its fields", rec_name(type));
    return -1;
#undef NEED
}

/* 1 if a whole, checksummed record of a known type starts at offset j. */
static int record_at(const mapped_t *m, size_t j)
{
    uint32_t len;

    if (m->len - j < 9)
        return 0;
    len = get_u32(m->data + j);
    return len != 0 && len <= m->len - j - 8 && known_type(m->data[j + 8]) &&
           (uint32_t)XXH3_64bits(m->data + j + 8, len) == get_u32(m->data + j + 4);
}

#define RESYNC_WINDOW (1u << 20)   /* how far past a bad record to look for good ones */
#define ZERO_BLOCK    512u         /* the smallest file system block, and its alignment */

enum { TORN_CUT = 1, TORN_ZEROS = 2 };

/* Whether the bytes from offset i on - where no whole record starts - are
 * what a crash while appending leaves:
 *   TORN_CUT   a record cut short by the end of the file (fewer than 9
 *              bytes of it, or a length running past the end): an
 *              interrupted write(2) leaves a prefix of what it wrote;
 *   TORN_ZEROS zeros from a ZERO_BLOCK boundary to the end of the file,
 *              reaching into the record at i: blocks a crash left
 *              allocated but unwritten read as zeros (delayed allocation,
 *              unwritten extents), and blocks start at multiples of 512;
 * and the record's bytes before the cut or the zeros start a record we
 * could have written (a length in 1..max-request-bytes + 64, a known
 * type), with no whole record after i within RESYNC_WINDOW (a torn write
 * is the last thing in the file).  0 otherwise: damage - a complete
 * record with a bad checksum included, last or not. */
static int torn_tail(const server_t *s, const mapped_t *m, size_t i)
{
    uint64_t max = s->cfg.max_request_bytes + 64;
    size_t left = m->len - i, real, z = m->len, b;
    int how;

    if (left < 9 || get_u32(m->data + i) > left - 8) {
        how = TORN_CUT;
        real = m->len;
    } else {
        while (z > LOG_HDR && m->data[z - 1] == 0)
            z--;
        b = (z + ZERO_BLOCK - 1) / ZERO_BLOCK * ZERO_BLOCK;
        if (b >= m->len || b >= i + 8 + (size_t)get_u32(m->data + i))
            return 0;   /* no zeroed block, or none inside this (complete) record */
        how = TORN_ZEROS;
        real = b > i ? b : i;
    }
    if (real - i >= 4 && (get_u32(m->data + i) == 0 || get_u32(m->data + i) > max))
        return 0;
    if (real - i >= 9 && !known_type(m->data[i + 8]))
        return 0;
    /* Damage in the middle is followed by whole records; a torn tail is
     * not.  Look a bounded distance ahead (records are small; a longer
     * search would cost O(n^2) on garbage). */
    for (size_t j = i + 1; j + 9 <= m->len && j - i <= RESYNC_WINDOW; j++)
        if (get_u32(m->data + j) <= RESYNC_WINDOW && record_at(m, j))
            return 0;
    return how;
}

/* Why no whole record starts at offset i (and it is no torn tail). */
static const char *damage(const mapped_t *m, size_t i, char *buf, size_t cap)
{
    size_t left = m->len - i;
    uint32_t len = left >= 4 ? get_u32(m->data + i) : 0;

    if (left < 9 || len == 0 || len > left - 8)
        snprintf(buf, cap, "bad record length %u (%zu bytes left)", len, left);
    else if (!known_type(m->data[i + 8]))
        snprintf(buf, cap, "unknown record type %u", m->data[i + 8]);
    else
        snprintf(buf, cap, "checksum mismatch in a complete %u-byte record %s (damage, not "
                 "a torn write)", len + 8, rec_name(m->data[i + 8]));
    return buf;
}

/* Replays the records of a log whose header was checked.  A torn tail
 * (torn_tail) ends the replay there when load-truncated allows it;
 * anything else that does not parse or apply is corruption.  Returns 0,
 * or -1 with err. */
static int replay_log(server_t *s, const char *path, const mapped_t *m, persist_replay_t *r,
                      char *err, size_t errlen)
{
    size_t i = LOG_HDR;
    char why[512];
    int how;

    r->applied = i;
    while (i < m->len) {
        uint32_t len;
        if (!record_at(m, i)) {
            how = torn_tail(s, m, i);
            if (how == 0) {
                snprintf(err, errlen, "log %s is corrupt at offset %zu: %s", path, i,
                         damage(m, i, why, sizeof(why)));
                return -1;
            }
            if (!s->cfg.load_truncated) {
                snprintf(err, errlen, "log %s is truncated at offset %zu (a torn last record; "
                         "set load-truncated yes to accept it)", path, i);
                return -1;
            }
            rbd_log(LOG_WARNING, "log %s ends in a torn record at offset %zu (%zu bytes, %s): "
                    "ignoring it (load-truncated yes); the file is kept as %s.torn", path, i,
                    m->len - i, how == TORN_CUT ? "cut short by the end of the file"
                                                : "zero-filled", path);
            r->torn = 1;
            return 0;
        }
        len = get_u32(m->data + i);
        if (replay_record(s, m->data[i + 8], m->data + i + 9, len - 1, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "log %s is corrupt at offset %zu: %s", path, i, why);
            return -1;
        }
        r->records++;
        i += 8 + len;
        r->applied = i;
    }
    return 0;
}

int persist_load_log_buf(server_t *s, const char *path, const void *data, size_t len,
                         const persist_snap_t *snap, persist_replay_t *r, char *err,
                         size_t errlen)
{
    const mapped_t m = { data, len };
    char prev[64];
    int v1;

    memset(r, 0, sizeof(*r));
    if (log_header(&m, path, &r->log_id, &v1, err, errlen) != 0)
        return -1;
    if (!snap->present) {
        snprintf(err, errlen, "log %s (id %016llx) continues a snapshot, but there is no "
                 "snapshot %s", path, (unsigned long long)r->log_id, snap->path);
        return -1;
    }
    if (v1)
        rbd_log(LOG_WARNING, "log %s is in the old format (%s: no header checksum); the "
                "start-up snapshot replaces it with %s", path, LOG_MAGIC_V1, LOG_MAGIC);
    if (r->log_id == snap->next_log)
        return replay_log(s, path, &m, r, err, errlen);
    if (snap->prev_log != 0 && r->log_id == snap->prev_log) {
        /* P5: the snapshot was installed and the daemon died before the
         * log it names was; every change of this one is in the snapshot
         * (P3, P4). */
        rbd_log(LOG_INFO, "log %s (id %016llx) predates the snapshot: snapshot %s superseded "
                "it (the daemon stopped between installing the two), already contained, "
                "skipped", path, (unsigned long long)r->log_id, snap->path);
        r->skipped = PERSIST_SUPERSEDED;
        return 0;
    }
    if (snap->version == 1 && v1) {
        /* Format 1 said nothing of the log a snapshot superseded, so the
         * crash window above looks like any other id mismatch: skipped as
         * the old daemon did, and the caller keeps a copy. */
        r->skipped = PERSIST_UNVERIFIED;
        return 0;
    }
    if (snap->prev_log != 0)
        snprintf(prev, sizeof(prev), "superseded log %016llx",
                 (unsigned long long)snap->prev_log);
    else
        snprintf(prev, sizeof(prev), "superseded %s", snap->version == 1
                 ? "a log its format (1) does not name" : "no log");
    snprintf(err, errlen, "log %s does not fit snapshot %s: the log's id is %016llx; the "
             "snapshot is continued by log %016llx and %s", path, snap->path,
             (unsigned long long)r->log_id, (unsigned long long)snap->next_log, prev);
    return -1;
}

/* For a start that re-attached to the live segment (which supersedes the
 * files): the id of the log in place, which the start-up snapshot
 * supersedes; 0 if there is none, or it has a bad header (said). */
static uint64_t log_in_place(const char *path)
{
    mapped_t m;
    uint64_t id = 0;
    char err[4400];
    int missing, v1;

    if (map_file(path, &m, &missing) != 0) {
        rbd_log(LOG_WARNING, "cannot read log %s: %s; the live segment supersedes it", path,
                strerror(errno));
        return 0;
    }
    if (!missing && log_header(&m, path, &id, &v1, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "%s; the live segment supersedes it", err);
        id = 0;
    }
    unmap_file(&m);
    return id;
}

int persist_start(server_t *s, int ignore_corrupt, char *err, size_t errlen)
{
    persist_t *p = &s->persist;
    rb_segment_opts_t o = { .mode = s->cfg.segment_mode, .max_size = s->cfg.max_memory,
                            .max_filters = s->cfg.max_filters, .flags = RB_SEGMENT_HIDDEN };
    char snap[4200], logp[4200], kept[4300];
    mapped_t sm = { NULL, 0 }, lm = { NULL, 0 };
    persist_snap_t sh;
    persist_replay_t r;
    int missing, rc;

    snprintf(snap, sizeof(snap), "%s/%s", p->dir, SNAP_FILE);
    snprintf(logp, sizeof(logp), "%s/%s", p->dir, LOG_FILE);
    memset(&sh, 0, sizeof(sh));
    sh.path = snap;
    memset(&r, 0, sizeof(r));

    /* 1. A live segment left by a predecessor is the freshest state. */
    rc = rb_segment_open_writer(s->cfg.instance, &s->seg);
    if (rc == RB_EBUSY) {
        snprintf(err, errlen, "segment /ringbloom.%s is in use by another writer (another "
                 "ringbloomd with a different pidfile?)", s->cfg.instance);
        return -1;
    }
    if (rc == RB_EOWNER) {
        /* Another user made an object under our name (/dev/shm is
         * writable by all): never adopt it, and it cannot be removed by
         * us either. */
        snprintf(err, errlen, "segment /dev/shm/ringbloom.%s belongs to another user; "
                 "refusing to use it (name squatting?): check its owner with ls -l, remove "
                 "it, and start again", s->cfg.instance);
        return -1;
    }
    if (rc == RB_OK) {
        rc = rb_ring_load(s->seg, &s->ring);
        if (rc == RB_OK) {
            rb_segment_info_t si;
            rbd_log(LOG_INFO, "re-attached to the live segment of instance '%s'",
                    s->cfg.instance);
            if (rb_segment_set_mode(s->seg, s->cfg.segment_mode) != RB_OK)
                rbd_log(LOG_WARNING, "could not set the segment's mode to 0%o",
                        (unsigned)s->cfg.segment_mode);
            if (rb_segment_info(s->seg, &si) == RB_OK &&
                (si.max_size != (s->cfg.max_memory + 65535) / 65536 * 65536 ||
                 si.max_filters != s->cfg.max_filters))
                rbd_log(LOG_WARNING, "the live segment keeps max-memory %llu and max-filters %u "
                        "(configured: %llu, %u); they change only when the segment is rebuilt "
                        "(stop the daemon, remove /dev/shm/ringbloom.%s, start it)",
                        (unsigned long long)si.max_size, si.max_filters,
                        (unsigned long long)s->cfg.max_memory, s->cfg.max_filters,
                        s->cfg.instance);
            p->log_id = log_in_place(logp);
            goto ready;
        }
        rbd_log(LOG_WARNING, "the live segment's ring cannot be loaded (%s)", rb_strerror(rc));
        rb_segment_close(s->seg);
        s->seg = NULL;
    }
    if (rc != RB_ENOENT) {
        rbd_log(LOG_WARNING, "segment /ringbloom.%s is unusable (%s): replacing it from %s",
                s->cfg.instance, rb_strerror(rc), p->dir);
        rb_segment_unlink(s->cfg.instance);
    }

    /* 2. Otherwise snapshot + log, in one of the states of P5. */
    if (map_file(snap, &sm, &missing) != 0) {
        snprintf(err, errlen, "cannot read snapshot %s: %s", snap, strerror(errno));
        return -1;
    }
    if (!missing) {
        rc = persist_load_snapshot_buf(s, s->cfg.instance, snap, sm.data, sm.len, &sh, err,
                                       errlen);
        unmap_file(&sm);
        if (rc != 0 && discard(snap, 0, sm.len, 0, ignore_corrupt, err, errlen) != 0)
            return -1;
    }
    if (s->seg == NULL) {
        rc = rb_segment_create(s->cfg.instance, &o, &s->seg);
        if (rc != RB_OK) {
            snprintf(err, errlen, "cannot create segment /ringbloom.%s: %s", s->cfg.instance,
                     rb_strerror(rc));
            return -1;
        }
    }
    rc = sh.present ? rb_ring_load(s->seg, &s->ring)
                    : rb_ring_new(s->cfg.ring_mode, s->cfg.ring_replicas, &s->ring);
    if (rc != RB_OK) {
        snprintf(err, errlen, "cannot load the ring: %s", rb_strerror(rc));
        goto discard;
    }
    if (map_file(logp, &lm, &missing) != 0) {
        snprintf(err, errlen, "cannot read log %s: %s", logp, strerror(errno));
        goto discard;
    }
    if (missing && sh.prev_log != 0) {
        /* P5: once a snapshot that superseded a log is installed, a log is
         * in place (that one, or the one it names) until the next. */
        snprintf(err, errlen, "log %s is missing: snapshot %s is continued by log %016llx and "
                 "superseded log %016llx, and one of them must be there", logp, snap,
                 (unsigned long long)sh.next_log, (unsigned long long)sh.prev_log);
        if (!ignore_corrupt)
            goto discard;
        rbd_log(LOG_WARNING, "%s; starting from the snapshot alone (--ignore-corrupt): the "
                "changes logged after it are lost, no file holds them", err);
    } else if (!missing) {
        rc = persist_load_log_buf(s, logp, lm.data, lm.len, &sh, &r, err, errlen);
        unmap_file(&lm);
        if (rc != 0) {
            if (discard(logp, r.applied, lm.len, r.records, ignore_corrupt, err, errlen) != 0)
                goto discard;
        } else {
            p->log_id = r.log_id;   /* still in place: the start-up snapshot supersedes it */
            if (r.skipped == PERSIST_UNVERIFIED) {
                if (keep_copy(logp, "skipped", 0, kept, sizeof(kept)) != 0) {
                    snprintf(err, errlen, "cannot keep a copy of log %s, which is about to be "
                             "skipped: %s", logp, strerror(errno));
                    goto discard;
                }
                rbd_log(LOG_WARNING, "log %s (format 1, id %016llx) is not the log snapshot %s "
                        "(format 1) names (%016llx): taken, as the old format did, for the log "
                        "the snapshot superseded, and skipped; format 1 headers have no "
                        "checksum to prove it, so a copy is kept as %s", logp,
                        (unsigned long long)r.log_id, snap, (unsigned long long)sh.next_log,
                        kept);
            }
        }
    }
    if (r.torn) {
        /* Keep the evidence: the start-up snapshot replaces the log. */
        snprintf(kept, sizeof(kept), "%s.torn", logp);
        if (link(logp, kept) != 0 && errno != EEXIST)
            rbd_log(LOG_WARNING, "could not keep %s: %s", kept, strerror(errno));
    }
    rc = rb_ring_publish(s->ring, s->seg);
    if (rc != RB_OK) {
        snprintf(err, errlen, "cannot publish the ring: %s", rb_strerror(rc));
        goto discard;
    }
    rb_segment_go_live(s->seg);
    rbd_log(LOG_INFO, "restored instance '%s' from %s%s, %llu log records replayed",
            s->cfg.instance, sh.present ? "snapshot" : "an empty state",
            sh.present ? "" : " (no snapshot)", (unsigned long long)r.records);

ready:
    /* Start the state directory afresh from what is live now (P3). */
    if (persist_snapshot(s, err, errlen) != 0)
        return -1;
    return 0;

discard:
    /* The hidden segment being restored holds nothing the files do not:
     * remove it whatever keep-segment says (left behind, it would stay
     * "initialising" - readers get RB_EBUSY, and the next start takes it
     * for another writer's and refuses to run). */
    rb_segment_close(s->seg);
    s->seg = NULL;
    rb_segment_unlink(s->cfg.instance);
    return -1;
}
