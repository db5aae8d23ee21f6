/*
 * snapshot.c - ringbloomd's snapshots: the segment's committed bytes
 * (rb_segment_dump) behind a 64-byte header, written by a procedure that
 * also replaces the log, run on SAVE, at shutdown, periodically, when the
 * log grows large, after start-up and to repair a broken log; and reading
 * one back at start-up (recovery.c).
 *
 * Header (format 2; byte by byte in docs/design.md, "Files in the state
 * directory"): magic, version, the id of the log that continues it
 * (*next*), dump length, XXH3-64 of the dump, time, the id of the log it
 * superseded (*prev*: the one in place when it was taken; 0: none), XXH3-64
 * of the header bytes before.  Format 1 (earlier versions) has zeros for
 * prev and the checksum.
 *
 * Procedure, with X the log in place: (1) write pending records and fsync
 * X; (2) create the new log Y (fresh random id) as a temp file, fsync'd;
 * (3) write the snapshot (next Y, prev X) as a temp file, fsync; (4) rename
 * it into place, fsync the directory; (5) rename Y into place, fsync the
 * directory; switch to Y.
 *
 * Invariants:
 *   P3 a snapshot is complete on disk (tmp + fsync + rename + dir fsync)
 *      before the log it supersedes is replaced;
 *   P4 a record is appended in the same step as the change it describes
 *      (ops.c), and step (1) writes every record appended before the
 *      snapshot to X before the dump (the daemon is one thread: nothing
 *      changes in between): the dump holds exactly the changes of the logs
 *      before it, and the log it names starts from the dump.
 * A failure before (4) leaves everything as it was (temp files removed).
 * If (5) fails the log is broken (nothing more is appended to X) and the
 * next snapshot repairs it.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "bytes.h"
#include "rbd_log.h"
#include "snapshot.h"

#define SNAP_MAGIC    "RBSNAP01"
#define SNAP_VERSION  2u           /* 1: no header checksum, no superseded log */
#define SNAP_HDR      64u
#define SNAP_HDR_SUM  56u          /* offset of the header's checksum */

/* The files of one snapshot procedure. */
typedef struct snap_paths {
    char snap_tmp[4200], snap[4200], log_tmp[4200], log[4200];
} snap_paths_t;

typedef struct dump_ctx {
    int fd;
    uint64_t len, hash;
} dump_ctx_t;

static int dump_write(const void *data, size_t len, void *arg)
{
    dump_ctx_t *d = arg;

    d->len = len;
    d->hash = XXH3_64bits(data, len);
    return rbd_write_all(d->fd, data, len);
}

/* Format 2; its reader is snapshot_header. */
static void put_header(unsigned char *hdr, uint64_t next_log, uint64_t len, uint64_t hash,
                       uint64_t prev_log)
{
    memset(hdr, 0, SNAP_HDR);
    memcpy(hdr, SNAP_MAGIC, 8);
    rbd_put_u32(hdr + 8, SNAP_VERSION);
    rbd_put_u64(hdr + 16, next_log);
    rbd_put_u64(hdr + 24, len);
    rbd_put_u64(hdr + 32, hash);
    rbd_put_u64(hdr + 40, (uint64_t)time(NULL));
    rbd_put_u64(hdr + 48, prev_log);
    rbd_put_u64(hdr + SNAP_HDR_SUM, XXH3_64bits(hdr, SNAP_HDR_SUM));
}

/* Step (3): the snapshot at p->snap_tmp, continued by log next_log and
 * superseding prev_log, fsync'd.  Its dump length in *len.  0, or -1 with
 * err (the temp file may be left: the caller removes it). */
static int write_snapshot(rb_segment_t *seg, const snap_paths_t *p, uint64_t next_log,
                          uint64_t prev_log, uint64_t *len, char *err, size_t errlen)
{
    unsigned char hdr[SNAP_HDR] = { 0 };
    dump_ctx_t d = { -1, 0, 0 };
    int ok;

    d.fd = open(p->snap_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ok = d.fd >= 0 && rbd_write_all(d.fd, hdr, sizeof(hdr)) == 0 &&
         rb_segment_dump(seg, dump_write, &d) == RB_OK;
    if (ok) {
        put_header(hdr, next_log, d.len, d.hash, prev_log);
        ok = pwrite(d.fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) && fsync(d.fd) == 0;
    }
    if (!ok)
        snprintf(err, errlen, "%s: %s", p->snap_tmp, strerror(errno));
    if (d.fd >= 0)
        close(d.fd);
    *len = d.len;
    return ok ? 0 : -1;
}

/* Steps (4) and (5) for the snapshot and log (lfd, id) in their temp
 * files.  0; or -1 with err: the snapshot not installed (nothing changed),
 * or installed without its log (the log is broken). */
static int install(rbd_aof_t *aof, const snap_paths_t *p, int lfd, uint64_t id, char *err,
                   size_t errlen)
{
    int renamed = 0;

    /* P3: the snapshot is durable before the old log goes. */
    if (rename(p->snap_tmp, p->snap) != 0) {
        snprintf(err, errlen, "installing %s: %s", p->snap, strerror(errno));
        unlink(p->snap_tmp);
        close(lfd);
        unlink(p->log_tmp);
        return -1;
    }
    /* From here the installed snapshot names the new log: the old log
     * would be skipped on restart, so nothing may be appended to it until
     * the new one is in place. */
    if (fsync(aof->dirfd) != 0 || (renamed = rename(p->log_tmp, p->log) == 0) == 0 ||
        fsync(aof->dirfd) != 0) {
        snprintf(err, errlen, "installing %s: %s", p->log, strerror(errno));
        aof->broken = 1;
        close(lfd);
        if (renamed)
            aof->log_id = id;   /* in place, durable or not: the next snapshot supersedes it */
        else
            unlink(p->log_tmp);
        return -1;
    }
    if (rbd_aof_switch(aof, lfd, id))
        rbd_log(LOG_NOTICE, "snapshot saved: the log works again");
    return 0;
}

int rbd_snapshot_save(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, char *err,
                      size_t errlen)
{
    snap_paths_t p;
    uint64_t id, len;
    int lfd;

    snprintf(p.snap_tmp, sizeof(p.snap_tmp), "%s/%s.tmp", aof->dir, RBD_SNAP_FILE);
    snprintf(p.snap, sizeof(p.snap), "%s/%s", aof->dir, RBD_SNAP_FILE);
    snprintf(p.log_tmp, sizeof(p.log_tmp), "%s/%s.tmp", aof->dir, RBD_LOG_FILE);
    snprintf(p.log, sizeof(p.log), "%s/%s", aof->dir, RBD_LOG_FILE);
    /* (1) A healthy log is flushed first; a broken one is what this
     * snapshot replaces (the segment holds every change its records
     * described). */
    if (!aof->broken && aof->logfd >= 0 &&
        (rbd_aof_flush(aof) != 0 || fdatasync(aof->logfd) != 0)) {
        snprintf(err, errlen, "the log cannot be written: %s", strerror(errno));
        return -1;
    }
    do
        arc4random_buf(&id, sizeof(id));
    while (id == 0 || id == aof->log_id);
    lfd = rbd_aof_create(p.log_tmp, id);   /* (2) */
    if (lfd < 0) {
        snprintf(err, errlen, "%s: %s", p.log_tmp, strerror(errno));
        return -1;
    }
    /* (3) aof->log_id is the log in place, the one this snapshot
     * supersedes (P5: a crash before the log rename leaves exactly that
     * one). */
    if (write_snapshot(seg, &p, id, aof->log_id, &len, err, errlen) != 0) {
        unlink(p.snap_tmp);
        close(lfd);
        unlink(p.log_tmp);
        sn->last_failed = 1;
        return -1;
    }
    if (install(aof, &p, lfd, id, err, errlen) != 0) {
        sn->last_failed = 1;
        return -1;
    }
    sn->last_ms = rbd_now_ms();
    sn->last_mono = rbd_mono_ms();
    sn->last_failed = 0;
    sn->count++;
    rbd_log(LOG_INFO, "snapshot saved: %s (%llu bytes)", p.snap, (unsigned long long)len);
    return 0;
}

void rbd_snapshot_tick(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg,
                       const rbd_config_t *cfg, uint64_t now)
{
    char err[256];
    int due;

    due = aof->broken ||
          (aof->changes > 0 && !aof->write_error &&
           ((cfg->save_seconds > 0 && now - sn->last_mono >= 1000ull * cfg->save_seconds) ||
            aof->log_bytes >= cfg->save_log_bytes));
    if (!due || now < sn->next_attempt)
        return;
    if (rbd_snapshot_save(sn, aof, seg, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "%s snapshot failed: %s (next attempt in 10 s)",
                aof->broken ? "repairing" : "periodic", err);
        sn->next_attempt = now + 10000;
    }
}

/* ---- reading ------------------------------------------------------------------ */

/* Reads a snapshot's header (format 2, or 1: no checksum, no prev_log,
 * zeros where format 2 has them) into snap, *len and *hash (of the dump).
 * 0, or -1 with err. */
static int snapshot_header(const unsigned char *data, size_t size, const char *path,
                           rbd_snap_t *snap, uint64_t *len, uint64_t *hash, char *err,
                           size_t errlen)
{
    uint32_t version;

    if (size < SNAP_HDR) {
        snprintf(err, errlen, "snapshot %s is truncated in its header (%zu bytes)", path, size);
        return -1;
    }
    if (memcmp(data, SNAP_MAGIC, 8) != 0) {
        snprintf(err, errlen, "snapshot %s is not a ringbloom snapshot (bad magic)", path);
        return -1;
    }
    version = rbd_get_u32(data + 8);
    if (version == 1 ? rbd_get_u32(data + 12) != 0 || rbd_get_u64(data + 48) != 0 ||
                           rbd_get_u64(data + SNAP_HDR_SUM) != 0
                     : XXH3_64bits(data, SNAP_HDR_SUM) != rbd_get_u64(data + SNAP_HDR_SUM)) {
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
    snap->next_log = rbd_get_u64(data + 16);
    snap->prev_log = rbd_get_u64(data + 48);
    *len = rbd_get_u64(data + 24);
    *hash = rbd_get_u64(data + 32);
    return 0;
}

int rbd_snapshot_load(const rbd_config_t *cfg, const char *instance, const char *path,
                      const void *data, size_t size, rbd_snap_t *snap, rb_segment_t **seg,
                      char *err, size_t errlen)
{
    rb_segment_opts_t o = { .mode = cfg->segment_mode, .max_size = cfg->max_memory,
                            .flags = RB_SEGMENT_HIDDEN };
    const unsigned char *d = data;
    rbd_snap_t h = *snap;
    uint64_t len, hash;
    int rc;

    if (snapshot_header(d, size, path, &h, &len, &hash, err, errlen) != 0)
        return -1;
    if (len != size - SNAP_HDR) {
        snprintf(err, errlen, "snapshot %s is truncated: %zu bytes, header says %llu", path,
                 size, (unsigned long long)(len + SNAP_HDR));
        return -1;
    }
    if (XXH3_64bits(d + SNAP_HDR, len) != hash) {
        snprintf(err, errlen, "snapshot %s is corrupt: checksum mismatch", path);
        return -1;
    }
    rc = rb_segment_restore(instance, &o, d + SNAP_HDR, len, seg);
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
