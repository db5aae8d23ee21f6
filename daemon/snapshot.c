/*
 * snapshot.c - ringbloomd's snapshots: the segment as it was at one
 * instant (rb_segment_snap_*, written by a thread of its own while the
 * event loop goes on) behind a 128-byte header, and the procedure that
 * installs it and replaces the log; run periodically, when the log grows
 * large and on BGSAVE in the background, and on SAVE, at shutdown, after
 * start-up and to repair a broken log in the foreground (the same steps,
 * waited for); and reading one back at start-up (recovery.c).
 *
 * Header (format 3; byte by byte in docs/design.md, "Files in the state
 * directory"): magic, version, the id of the log that continues it
 * (*next*), dump length, XXH3-64 of the dump, time, the id of the log it
 * superseded (*prev*: the one in place when it was taken; 0: none), the
 * offset in prev from which prev holds changes the dump lacks (*from*: the
 * records appended while the dump was written; 0: none), XXH3-64 of the
 * header bytes before.  Formats 1 and 2 (earlier versions) have a 64-byte
 * header without *from* (format 1 also without prev and the checksum).
 *
 * Procedure, with X the log in place.  In the event loop, (1) write the
 * pending records to X; note X's length F (*from*) and freeze the segment
 * (rb_segment_snap_begin).  In the snapshot thread, (2) create the new log
 * Y (fresh random id) as a temp file, fsync'd; (3) write the snapshot (next
 * Y, prev X, from F) as a temp file, fsync; (4) copy what X gained after F
 * into Y, fsync.  Meanwhile commands go on and are logged to X as ever.
 * In the event loop again, once the thread is done: (5) write the pending
 * records to X and copy the rest of X after F into Y, fsync Y; (6) rename
 * the snapshot into place, fsync the directory; (7) rename Y into place,
 * fsync the directory; switch to Y.
 *
 * Invariants:
 *   P3 a snapshot is complete on disk (tmp + fsync + rename + dir fsync)
 *      before the log it supersedes is replaced;
 *   P4 a record is appended in the same step as the change it describes
 *      (ops.c); step (1) writes every record appended before the freeze to
 *      X below F, and the dump is the segment at the freeze (snap.h, S1):
 *      the dump holds exactly the changes of X below F (and of the logs
 *      before it), X from F on holds the rest, and so does Y, which is X
 *      from F on when it is installed (nothing is appended between (5) and
 *      the switch: that is one turn of the event loop).
 * A failure before (6) leaves everything as it was (temp files removed);
 * so does a log that failed (broken) while the thread ran, since X may
 * then lack records after F.  If (7) fails the log is broken (nothing more
 * is appended to X) and the next snapshot repairs it.  A broken log at
 * (1) is superseded whole (from 0): commands that change anything are
 * refused until the snapshot is installed, and one that still finds a
 * change after the freeze (an aging rotation) is abandoned and retried.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "bytes.h"
#include "rbd_log.h"
#include "snapshot.h"

#define SNAP_MAGIC    "RBSNAP01"
#define SNAP_VERSION  3u           /* 2: 64-byte header, no *from*; 1: no checksum, no prev */
#define SNAP_HDR      128u         /* format 3 */
#define SNAP_HDR_SUM  120u         /* offset of its checksum */
#define SNAP_HDR_OLD  64u          /* formats 1 and 2 */
#define SNAP_HDR_OLD_SUM 56u
#define CARRY_ROUNDS  4            /* (4): rounds of copying X's growth */
#define CARRY_LEFT    (64u << 10)  /* ... until less than this is left for (5) */

/* The files of one snapshot procedure. */
typedef struct snap_paths {
    char snap_tmp[4200], snap[4200], log_tmp[4200], log[4200];
} snap_paths_t;

/* One snapshot on its way: frozen at (1), written by steps (2)-(4) in the
 * thread (or inline, for a foreground one), installed by (5)-(7). */
struct rbd_snap_job {
    snap_paths_t p;
    rb_segment_snap_t *snap;
    pthread_t thread;
    int threaded;
    _Atomic int done;              /* the thread's steps are over (release) */
    int failed;                    /* ... and failed: err says why */
    char err[9000];                /* two paths and a reason */
    uint64_t id, prev, from;       /* Y; X (0: none); F (0: X is superseded whole) */
    int lfd;                       /* Y, a temp file until (7) */
    int xfd;                       /* X for reading (-1: nothing to carry over) */
    const _Atomic uint64_t *x_written;
    uint64_t carried;              /* X's bytes [from, from + carried) are in Y */
    uint64_t len, hash;            /* the dump's */
    uint64_t changes;              /* aof->changes at the freeze */
    int broken;                    /* the log was broken at the freeze */
    uint64_t begun_mono;
    uint64_t loop_us;              /* time the event loop spent on (1) and (5)-(7) */
};

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void paths_for(const rbd_aof_t *aof, snap_paths_t *p)
{
    snprintf(p->snap_tmp, sizeof(p->snap_tmp), "%s/%s.tmp", aof->dir, RBD_SNAP_FILE);
    snprintf(p->snap, sizeof(p->snap), "%s/%s", aof->dir, RBD_SNAP_FILE);
    snprintf(p->log_tmp, sizeof(p->log_tmp), "%s/%s.tmp", aof->dir, RBD_LOG_FILE);
    snprintf(p->log, sizeof(p->log), "%s/%s", aof->dir, RBD_LOG_FILE);
}

/* Format 3; its reader is snapshot_header. */
static void put_header(unsigned char *hdr, const rbd_snap_job_t *j)
{
    memset(hdr, 0, SNAP_HDR);
    memcpy(hdr, SNAP_MAGIC, 8);
    rbd_put_u32(hdr + 8, SNAP_VERSION);
    rbd_put_u64(hdr + 16, j->id);
    rbd_put_u64(hdr + 24, j->len);
    rbd_put_u64(hdr + 32, j->hash);
    rbd_put_u64(hdr + 40, (uint64_t)time(NULL));
    rbd_put_u64(hdr + 48, j->prev);
    rbd_put_u64(hdr + 56, j->from);
    rbd_put_u64(hdr + SNAP_HDR_SUM, XXH3_64bits(hdr, SNAP_HDR_SUM));
}

/* ---- the thread's steps ------------------------------------------------------- */

typedef struct dump_ctx {
    int fd;
    uint64_t len;
    XXH3_state_t *xx;
} dump_ctx_t;

static int dump_write(const void *data, size_t len, void *arg)
{
    dump_ctx_t *d = arg;

    d->len += len;
    XXH3_64bits_update(d->xx, data, len);
    return rbd_write_all(d->fd, data, len);
}

/* Step (3): the snapshot at snap_tmp, fsync'd.  0, or -1 with j->err. */
static int write_snapshot(rbd_snap_job_t *j)
{
    unsigned char hdr[SNAP_HDR] = { 0 };
    dump_ctx_t d = { -1, 0, XXH3_createState() };
    int ok, rc = RB_OK;

    d.fd = open(j->p.snap_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ok = d.xx != NULL && XXH3_64bits_reset(d.xx) == XXH_OK && d.fd >= 0 &&
         rbd_write_all(d.fd, hdr, sizeof(hdr)) == 0 &&
         (rc = rb_segment_snap_dump(j->snap, dump_write, &d)) == RB_OK;
    if (ok) {
        j->len = d.len;
        j->hash = XXH3_64bits_digest(d.xx);
        put_header(hdr, j);
        ok = pwrite(d.fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) && fsync(d.fd) == 0;
    }
    if (!ok)
        snprintf(j->err, sizeof(j->err), "%s: %s", j->p.snap_tmp,
                 rc == RB_ENOMEM || d.xx == NULL ? "out of memory" : strerror(errno));
    if (d.fd >= 0)
        close(d.fd);
    XXH3_freeState(d.xx);
    return ok ? 0 : -1;
}

/* Copies X's bytes [from + carried, upto) to the end of Y.  0 or -1. */
static int carry(rbd_snap_job_t *j, uint64_t upto)
{
    while (j->from + j->carried < upto) {
        loff_t in = (loff_t)(j->from + j->carried);
        ssize_t n = copy_file_range(j->xfd, &in, j->lfd, NULL,
                                    (size_t)(upto - j->from - j->carried), 0);
        if (n <= 0) {
            if (n == 0)
                errno = EIO;   /* X is shorter than it wrote */
            return -1;
        }
        j->carried += (uint64_t)n;
    }
    return 0;
}

/* Steps (2)-(4). */
static void job_steps(rbd_snap_job_t *j)
{
    j->lfd = rbd_aof_create(j->p.log_tmp, j->id);   /* (2) */
    if (j->lfd < 0) {
        snprintf(j->err, sizeof(j->err), "%s: %s", j->p.log_tmp, strerror(errno));
        j->failed = 1;
        return;
    }
    if (write_snapshot(j) != 0) {   /* (3) */
        j->failed = 1;
        return;
    }
    /* (4): most of what X gained meanwhile, so that (5) copies little. */
    for (int round = 0; j->xfd >= 0 && round < CARRY_ROUNDS; round++) {
        uint64_t upto = atomic_load_explicit(j->x_written, memory_order_acquire);
        if (upto - j->from - j->carried < CARRY_LEFT && round > 0)
            break;
        if (carry(j, upto) != 0 || fdatasync(j->lfd) != 0) {
            snprintf(j->err, sizeof(j->err), "copying %s into %s: %s", j->p.log,
                     j->p.log_tmp, strerror(errno));
            j->failed = 1;
            return;
        }
    }
}

static void *job_main(void *arg)
{
    rbd_snap_job_t *j = arg;

    job_steps(j);
    atomic_store_explicit(&j->done, 1, memory_order_release);
    return NULL;
}

/* ---- the event loop's steps ------------------------------------------------------ */

static void job_free(rbd_snap_job_t *j, int remove_temps)
{
    if (j->xfd >= 0)
        close(j->xfd);
    if (j->lfd >= 0)
        close(j->lfd);
    if (remove_temps) {
        unlink(j->p.snap_tmp);
        if (j->lfd >= 0)
            unlink(j->p.log_tmp);
    }
    free(j);
}

/* Step (1): the job, frozen now; the thread started if threaded (else the
 * caller runs job_steps).  0, or -1 with err. */
static int job_begin(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, int threaded,
                     char *err, size_t errlen)
{
    uint64_t t0 = now_us();
    rbd_snap_job_t *j;
    int rc;

    /* A healthy log gets the records before the freeze; a broken one is
     * what this snapshot replaces whole (the segment holds every change
     * its records described). */
    if (!aof->broken && aof->logfd >= 0 && rbd_aof_flush(aof) != 0) {
        snprintf(err, errlen, "the log cannot be written: %s", strerror(errno));
        return -1;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    paths_for(aof, &j->p);
    j->lfd = j->xfd = -1;
    j->threaded = threaded;
    j->prev = aof->log_id;   /* P5: a crash before (7) leaves exactly that one */
    j->broken = aof->broken;
    j->changes = aof->changes;
    j->x_written = &aof->log_written;
    j->begun_mono = rbd_mono_ms();
    if (!aof->broken && aof->logfd >= 0) {
        j->from = aof->log_bytes;
        j->xfd = open(j->p.log, O_RDONLY | O_CLOEXEC);
        if (j->xfd < 0) {
            snprintf(err, errlen, "%s: %s", j->p.log, strerror(errno));
            job_free(j, 0);
            return -1;
        }
    }
    do
        arc4random_buf(&j->id, sizeof(j->id));
    while (j->id == 0 || j->id == aof->log_id);
    if ((rc = rb_segment_snap_begin(seg, &j->snap)) != RB_OK) {
        snprintf(err, errlen, "cannot freeze the segment: %s", rb_strerror(rc));
        job_free(j, 0);
        return -1;
    }
    if (threaded && (rc = pthread_create(&j->thread, NULL, job_main, j)) != 0) {
        snprintf(err, errlen, "cannot start the snapshot thread: %s", strerror(rc));
        rb_segment_snap_end(j->snap, NULL);
        job_free(j, 0);
        return -1;
    }
    j->loop_us = now_us() - t0;
    sn->job = j;
    return 0;
}

/* Steps (6) and (7) for the snapshot and log (id) in their temp files.
 * 0; -1 with err: the snapshot not installed (nothing changed); or -2
 * with err: installed without its log (the log is broken). */
static int install(rbd_aof_t *aof, const snap_paths_t *p, uint64_t id, char *err, size_t errlen)
{
    int renamed = 0;

    /* P3: the snapshot is durable before the old log goes. */
    if (rename(p->snap_tmp, p->snap) != 0) {
        snprintf(err, errlen, "installing %s: %s", p->snap, strerror(errno));
        return -1;
    }
    /* From here the installed snapshot names the new log: the old one is
     * replayed only from *from* on (P5), and must not lose a record until
     * the new one is in place. */
    if (fsync(aof->dirfd) != 0 || (renamed = rename(p->log_tmp, p->log) == 0) == 0 ||
        fsync(aof->dirfd) != 0) {
        snprintf(err, errlen, "installing %s: %s", p->log, strerror(errno));
        aof->broken = 1;
        if (renamed)
            aof->log_id = id;   /* in place, durable or not: the next snapshot supersedes it */
        else
            unlink(p->log_tmp);
        return -2;
    }
    return 0;
}

/* Step (5): X's records after the freeze, all of them, into Y.  0, or -1
 * with err (nothing installed). */
static int carry_rest(rbd_snap_job_t *j, rbd_aof_t *aof, char *err, size_t errlen)
{
    if (aof->broken && !j->broken) {
        snprintf(err, errlen, "the log failed while the snapshot was written (it may lack "
                 "changes made meanwhile); another snapshot follows");
        return -1;
    }
    if (j->broken && aof->changes != j->changes) {
        snprintf(err, errlen, "the state changed while the repairing snapshot was written; "
                 "another one follows");
        return -1;
    }
    if (j->xfd < 0)
        return 0;
    if (rbd_aof_flush(aof) != 0) {
        snprintf(err, errlen, "the log cannot be written: %s", strerror(errno));
        return -1;
    }
    if (carry(j, aof->log_bytes) != 0 || fdatasync(j->lfd) != 0) {
        snprintf(err, errlen, "copying %s into %s: %s", j->p.log, j->p.log_tmp,
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* Steps (5)-(7), once the thread's steps are over (joined here).  0, or
 * -1 with err. */
static int job_finish(rbd_snapshots_t *sn, rbd_aof_t *aof, char *err, size_t errlen)
{
    rbd_snap_job_t *j = sn->job;
    uint64_t t0 = now_us(), saved = 0;
    int rc = 0;

    if (j->threaded)
        pthread_join(j->thread, NULL);
    rb_segment_snap_end(j->snap, &saved);
    sn->job = NULL;
    if (j->failed) {
        snprintf(err, errlen, "%s", j->err);
        rc = -1;
    }
    if (rc == 0 && (rc = carry_rest(j, aof, err, errlen)) == 0 &&
        (rc = install(aof, &j->p, j->id, err, errlen)) == 0) {
        if (rbd_aof_switch(aof, j->lfd, j->id))
            rbd_log(LOG_NOTICE, "snapshot saved: the log works again");
        j->lfd = -1;   /* the log's now */
        aof->log_bytes = RBD_LOG_HDR + j->carried;
        atomic_store_explicit(&aof->log_written, aof->log_bytes, memory_order_release);
        aof->changes -= j->changes;
    }
    sn->last_failed = rc != 0;
    sn->last_saved_bytes = saved;
    sn->last_loop_us = j->loop_us + (now_us() - t0);
    if (rc == 0) {
        sn->last_ms = rbd_now_ms();
        sn->last_mono = rbd_mono_ms();
        sn->last_duration_ms = sn->last_mono - j->begun_mono;
        sn->count++;
        rbd_log(LOG_INFO, "snapshot saved: %s (%llu bytes, %llu ms, %llu us in the event loop, "
                "%llu bytes copied on write)", j->p.snap, (unsigned long long)j->len,
                (unsigned long long)sn->last_duration_ms, (unsigned long long)sn->last_loop_us,
                (unsigned long long)saved);
    }
    /* A failed install (-2) left the new log in place, or nothing. */
    job_free(j, rc == -1);
    return rc == 0 ? 0 : -1;
}

/* ---- when ------------------------------------------------------------------------ */

int rbd_snapshot_save(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, char *err,
                      size_t errlen)
{
    (void)rbd_snapshot_wait(sn, aof);   /* a failure is logged; this one follows */
    if (job_begin(sn, aof, seg, 0, err, errlen) != 0) {
        sn->last_failed = 1;
        return -1;
    }
    job_steps(sn->job);
    return job_finish(sn, aof, err, errlen);
}

int rbd_snapshot_start(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, char *err,
                       size_t errlen)
{
    if (sn->job != NULL) {
        snprintf(err, errlen, "a snapshot is being written");
        return -1;
    }
    if (job_begin(sn, aof, seg, 1, err, errlen) != 0) {
        sn->last_failed = 1;
        return -1;
    }
    return 0;
}

/* Finishes the background job; a failure is logged as the schedule's
 * messages say it ("repairing snapshot failed: ..."). */
static int finish_logged(rbd_snapshots_t *sn, rbd_aof_t *aof, const char *then)
{
    const char *what = sn->job->broken ? "repairing" : "background";
    char err[512];

    if (job_finish(sn, aof, err, sizeof(err)) == 0)
        return 0;
    rbd_log(LOG_WARNING, "%s snapshot failed: %s%s", what, err, then);
    return -1;
}

int rbd_snapshot_wait(rbd_snapshots_t *sn, rbd_aof_t *aof)
{
    return sn->job == NULL ? 0 : finish_logged(sn, aof, "");
}

void rbd_snapshot_poll(rbd_snapshots_t *sn, rbd_aof_t *aof, uint64_t now)
{
    if (sn->job == NULL || !atomic_load_explicit(&sn->job->done, memory_order_acquire))
        return;
    if (finish_logged(sn, aof, " (next attempt in 10 s)") != 0)
        sn->next_attempt = now + 10000;
}

void rbd_snapshot_abandon(rbd_snapshots_t *sn)
{
    rbd_snap_job_t *j = sn->job;

    if (j == NULL)
        return;
    if (j->threaded)
        pthread_join(j->thread, NULL);
    rb_segment_snap_end(j->snap, NULL);
    sn->job = NULL;
    job_free(j, 1);
}

void rbd_snapshot_tick(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg,
                       const rbd_config_t *cfg, uint64_t now)
{
    char err[512];
    int due;

    rbd_snapshot_poll(sn, aof, now);
    due = aof->broken ||
          (aof->changes > 0 && !aof->write_error &&
           ((cfg->save_seconds > 0 && now - sn->last_mono >= 1000ull * cfg->save_seconds) ||
            aof->log_bytes >= cfg->save_log_bytes));
    if (!due || sn->job != NULL || now < sn->next_attempt)
        return;
    if (rbd_snapshot_start(sn, aof, seg, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "%s snapshot failed: %s (next attempt in 10 s)",
                aof->broken ? "repairing" : "periodic", err);
        sn->next_attempt = now + 10000;
    }
}

/* ---- reading ------------------------------------------------------------------ */

/* Reads a snapshot's header (format 3; 2: 64 bytes, no *from*; 1: also no
 * checksum and no prev_log, zeros where format 2 has them) into snap
 * (with its length in snap->header), *len and *hash (of the dump).  0, or
 * -1 with err. */
static int snapshot_header(const unsigned char *data, size_t size, const char *path,
                           rbd_snap_t *snap, uint64_t *len, uint64_t *hash, char *err,
                           size_t errlen)
{
    uint32_t version;
    size_t hdr, sum;

    if (size < SNAP_HDR_OLD) {
        snprintf(err, errlen, "snapshot %s is truncated in its header (%zu bytes)", path, size);
        return -1;
    }
    if (memcmp(data, SNAP_MAGIC, 8) != 0) {
        snprintf(err, errlen, "snapshot %s is not a ringbloom snapshot (bad magic)", path);
        return -1;
    }
    version = rbd_get_u32(data + 8);
    hdr = version >= 3 ? SNAP_HDR : SNAP_HDR_OLD;
    sum = version >= 3 ? SNAP_HDR_SUM : SNAP_HDR_OLD_SUM;
    if (size < hdr) {
        snprintf(err, errlen, "snapshot %s is truncated in its header (%zu bytes)", path, size);
        return -1;
    }
    if (version == 1 ? rbd_get_u32(data + 12) != 0 || rbd_get_u64(data + 48) != 0 ||
                           rbd_get_u64(data + sum) != 0
                     : XXH3_64bits(data, sum) != rbd_get_u64(data + sum)) {
        snprintf(err, errlen, "snapshot %s is corrupt: header checksum mismatch%s", path,
                 version == 1 ? " (format 1: bytes that are always zero are not)" : "");
        return -1;
    }
    if (version < 1 || version > SNAP_VERSION) {
        snprintf(err, errlen, "snapshot %s has format version %u; this ringbloomd reads 1 to %u",
                 path, version, SNAP_VERSION);
        return -1;
    }
    snap->present = 1;
    snap->version = version;
    snap->header = hdr;
    snap->next_log = rbd_get_u64(data + 16);
    snap->prev_log = rbd_get_u64(data + 48);
    snap->prev_from = version >= 3 ? rbd_get_u64(data + 56) : 0;
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
    if (len != size - h.header) {
        snprintf(err, errlen, "snapshot %s is truncated: %zu bytes, header says %llu", path,
                 size, (unsigned long long)(len + h.header));
        return -1;
    }
    if (XXH3_64bits(d + h.header, len) != hash) {
        snprintf(err, errlen, "snapshot %s is corrupt: checksum mismatch", path);
        return -1;
    }
    rc = rb_segment_restore(instance, &o, d + h.header, len, seg);
    if (rc != RB_OK) {
        snprintf(err, errlen, "snapshot %s cannot be restored: %s", path, rb_strerror(rc));
        return -1;
    }
    if (h.version == 1)
        rbd_log(LOG_WARNING, "snapshot %s is in the old format (version 1: no header checksum); "
                "the start-up snapshot replaces it with version %u", path, SNAP_VERSION);
    else if (h.version < SNAP_VERSION)
        rbd_log(LOG_INFO, "snapshot %s is in format %u; the start-up snapshot replaces it with "
                "format %u", path, h.version, SNAP_VERSION);
    *snap = h;
    return 0;
}
