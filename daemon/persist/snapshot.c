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
 * Procedure, with X the log in place.  In the event loop: (1) write the
 * pending records to X; note X's length F (*from*) and freeze the segment
 * (rb_segment_snap_begin).  In the snapshot thread, while commands go on
 * and are logged to X as ever: (2) create the new log Y (fresh random id)
 * as a temp file, fsync'd; (3) write the snapshot (next Y, prev X, from F)
 * as a temp file, fsync; (4) rename it into place, fsync the directory;
 * (5) copy most of what X gained after F into Y, fsync.  In the event
 * loop (READY -> GO): write the pending records to X and hold the log:
 * from here records wait in memory, and the replies they acknowledge with
 * them (reads go on).  In the thread: (6) copy the rest of X into Y,
 * fsync, rename Y into place, fsync the directory.  In the event loop
 * (DONE): switch to Y, release the hold (the waiting records go to Y).
 * The event loop's share is (1), the GO and the switch: no fsync, no
 * rename; a command that changes something waits for (6) at most.
 *
 * Invariants:
 *   P3 a snapshot is complete on disk (tmp + fsync + rename + dir fsync)
 *      before the log it supersedes is replaced;
 *   P4 a record is appended in the same step as the change it describes
 *      (ops.c); step (1) writes every record appended before the freeze to
 *      X below F, and the dump is the segment at the freeze (snap.h, S1):
 *      the dump holds exactly the changes of X below F (and of the logs
 *      before it), X from F on holds the rest, and so does Y when it is
 *      renamed (X's length at GO, and the hold keeps X from growing).
 * A failure before (4) leaves everything as it was (temp files removed).
 * After (4) the snapshot is in place with X, which the next start replays
 * from F (P5, recovery.c): a failure of (5) or (6) before Y's rename
 * leaves that, and X stays the log; so does a log that failed (broken)
 * while the thread ran, which the next snapshot repairs.  If the rename of
 * Y went through but its directory fsync failed, Y is the log (broken, the
 * next snapshot supersedes it).  A broken log at (1) is superseded whole
 * (from 0): commands that change anything are refused until the snapshot
 * is installed, and if a change still happened after the freeze (an aging
 * rotation) the switch is abandoned and the next snapshot follows.
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
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "bytes.h"
#include "rbd_log.h"
#include "seg_txn.h"   /* lib: whether an EXEC is being applied */
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

/* One snapshot on its way.  The thread (or the caller, in the
 * foreground) runs steps (2)-(5) (write_phase), then waits at READY for
 * the event loop to hold the log and say GO with X's final length, then
 * runs (6) (switch_phase) and ends at DONE; the loop then switches to Y
 * (job_done). */
enum { J_WRITING, J_READY, J_GO, J_DONE };

struct rbd_snap_job {
    snap_paths_t p;
    rb_segment_snap_t *snap;
    pthread_t thread;
    int threaded;
    int wakefd;                    /* the event loop's eventfd (-1: none) */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stage;                     /* J_*, under lock */
    /* The thread's; read by the loop at READY and DONE. */
    int failed;                    /* a step failed: err says why */
    char err[9000];                /* two paths and a reason */
    int installed;                 /* (4) done: snapshot.rbs is this one */
    int renamed, dir_synced;       /* (6): Y renamed into place, and that made durable */
    int lfd;                       /* Y: a temp file until (6) */
    int dirfd;                     /* the state directory (aof's) */
    int xfd;                       /* X for reading (-1: nothing to carry over) */
    uint64_t carried;              /* X's bytes [from, from + carried) are in Y */
    uint64_t len, hash;            /* the dump's */
    uint64_t skipped;              /* ... bytes left out of the file (sparse) */
    /* The loop's, fixed before the thread starts or at GO. */
    uint64_t id, prev, from;       /* Y; X (0: none); F (0: X is superseded whole) */
    const _Atomic uint64_t *x_written;
    uint64_t upto;                 /* GO: X's length, all of it to go into Y */
    int abort;                     /* GO: leave X in place, Y is dropped */
    uint64_t changes;              /* aof->changes at the freeze */
    int broken;                    /* the log was broken at the freeze */
    uint64_t begun_mono;
    uint64_t loop_us;              /* the event loop's time on it: (1), GO and the switch */
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

/* Step (3): the snapshot at snap_tmp, fsync'd; the dump sparse (free heap
 * pages skipped, snap_sparse.c).  0, or -1 with j->err. */
static int write_snapshot(rbd_snap_job_t *j)
{
    unsigned char hdr[SNAP_HDR] = { 0 };
    rbd_sparse_t d = { -1, 0, 0, 0, XXH3_createState() };
    int ok, rc = RB_OK;

    d.fd = open(j->p.snap_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ok = d.xx != NULL && XXH3_64bits_reset(d.xx) == XXH_OK && d.fd >= 0 &&
         rbd_write_all(d.fd, hdr, sizeof(hdr)) == 0 &&
         (rc = rb_segment_snap_dump_sparse(j->snap, rbd_sparse_data, rbd_sparse_hole,
                                           &d)) == RB_OK && rbd_sparse_finish(&d) == 0;
    if (ok) {
        j->len = d.len;
        j->skipped = d.skipped;
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

static int fail(rbd_snap_job_t *j, const char *what, const char *path)
{
    snprintf(j->err, sizeof(j->err), "%s%s: %s", what, path, strerror(errno));
    j->failed = 1;
    return -1;
}

/* Steps (2)-(5): the new log, the snapshot written and installed, most of
 * what X gained meanwhile copied into the new log.  0, or -1 (j->err). */
static int write_phase(rbd_snap_job_t *j)
{
    j->lfd = rbd_aof_create(j->p.log_tmp, j->id);   /* (2) */
    if (j->lfd < 0)
        return fail(j, "", j->p.log_tmp);
    if (write_snapshot(j) != 0) {   /* (3) */
        j->failed = 1;
        return -1;
    }
    /* (4) P3: the snapshot is durable before anything of the old log goes;
     * from here the state is the snapshot with X from F on (P5). */
    if (rename(j->p.snap_tmp, j->p.snap) != 0)
        return fail(j, "installing ", j->p.snap);
    j->installed = 1;
    if (fsync(j->dirfd) != 0)
        return fail(j, "installing ", j->p.snap);
    /* (5) Most of what X gained meanwhile, so that (6) copies little. */
    for (int round = 0; j->xfd >= 0 && round < CARRY_ROUNDS; round++) {
        uint64_t upto = atomic_load_explicit(j->x_written, memory_order_acquire);
        if (upto - j->from - j->carried < CARRY_LEFT && round > 0)
            break;
        if (carry(j, upto) != 0 || fdatasync(j->lfd) != 0)
            return fail(j, "copying the log into ", j->p.log_tmp);
    }
    return 0;
}

/* Step (6), after GO: the rest of X up to j->upto into Y, then Y renamed
 * into place.  While it runs the loop holds the replies of new records
 * (they wait in memory for Y). */
static void switch_phase(rbd_snap_job_t *j)
{
    if (j->failed || j->abort)
        return;
    if (j->xfd >= 0 && (carry(j, j->upto) != 0 || fdatasync(j->lfd) != 0)) {
        fail(j, "copying the log into ", j->p.log_tmp);
        return;
    }
    if (rename(j->p.log_tmp, j->p.log) != 0) {
        fail(j, "installing ", j->p.log);
        return;
    }
    j->renamed = 1;
    if (fsync(j->dirfd) != 0) {
        fail(j, "installing ", j->p.log);
        return;
    }
    j->dir_synced = 1;
}

static void set_stage(rbd_snap_job_t *j, int stage)
{
    uint64_t one = 1;

    pthread_mutex_lock(&j->lock);
    j->stage = stage;
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->lock);
    if (j->wakefd >= 0 && write(j->wakefd, &one, sizeof(one)) < 0) {
        /* A full counter already wakes the loop. */
    }
}

static int stage_of(rbd_snap_job_t *j)
{
    int st;

    pthread_mutex_lock(&j->lock);
    st = j->stage;
    pthread_mutex_unlock(&j->lock);
    return st;
}

static void *job_main(void *arg)
{
    rbd_snap_job_t *j = arg;

    write_phase(j);
    set_stage(j, J_READY);
    pthread_mutex_lock(&j->lock);
    while (j->stage != J_GO)
        pthread_cond_wait(&j->cond, &j->lock);
    pthread_mutex_unlock(&j->lock);
    switch_phase(j);
    /* Here, not in the loop: if X was renamed over, this and the log's own
     * descriptor (closed by the fsync thread, aof.c) are its last
     * references, and the last close frees its pages. */
    if (j->xfd >= 0)
        close(j->xfd);
    j->xfd = -1;
    set_stage(j, J_DONE);
    return NULL;
}

/* ---- the event loop's steps ------------------------------------------------------ */

static void job_free(rbd_snap_job_t *j)
{
    if (j->xfd >= 0)
        close(j->xfd);
    if (j->lfd >= 0)
        close(j->lfd);
    if (!j->installed)
        unlink(j->p.snap_tmp);
    if (!j->renamed)
        unlink(j->p.log_tmp);
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->cond);
    free(j);
}

/* Step (1): the job, frozen now; its thread started if threaded (else the
 * caller runs the steps).  0, or -1 with err. */
static int job_begin(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, int threaded,
                     char *err, size_t errlen)
{
    uint64_t t0 = now_us();
    rbd_snap_job_t *j;
    int rc;

    /* T2: a freeze between two members of an EXEC would put some of them
     * in the dump and the rest after F, the TXN record split in two (and
     * the log's pending bytes end in a record still open). */
    if (rbi_segment_txn_open(seg) || aof->open > 0) {
        snprintf(err, errlen, "a transaction is being applied (a snapshot may not split it)");
        return -1;
    }
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
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->cond, NULL);
    j->lfd = j->xfd = -1;
    j->dirfd = aof->dirfd;
    j->wakefd = threaded ? sn->wakefd : -1;
    j->threaded = threaded;
    j->prev = aof->log_id;   /* P5: a crash before (6) leaves exactly that one */
    j->broken = aof->broken;
    j->changes = aof->changes;
    j->x_written = &aof->log_written;
    j->begun_mono = rbd_mono_ms();
    if (!aof->broken && aof->logfd >= 0) {
        j->from = aof->log_bytes;
        j->xfd = open(j->p.log, O_RDONLY | O_CLOEXEC);
        if (j->xfd < 0) {
            snprintf(err, errlen, "%s: %s", j->p.log, strerror(errno));
            job_free(j);
            return -1;
        }
    }
    do
        arc4random_buf(&j->id, sizeof(j->id));
    while (j->id == 0 || j->id == aof->log_id);
    if ((rc = rb_segment_snap_begin(seg, &j->snap)) != RB_OK) {
        snprintf(err, errlen, "cannot freeze the segment: %s", rb_strerror(rc));
        job_free(j);
        return -1;
    }
    if (threaded && (rc = pthread_create(&j->thread, NULL, job_main, j)) != 0) {
        snprintf(err, errlen, "cannot start the snapshot thread: %s", strerror(rc));
        rb_segment_snap_end(j->snap, NULL);
        job_free(j);
        return -1;
    }
    j->loop_us = now_us() - t0;
    sn->job = j;
    return 0;
}

/* At READY: GO with X's final length, the log held (new records wait in
 * memory, their replies with them) until the switch; or GO with abort. */
static void job_go(rbd_aof_t *aof, rbd_snap_job_t *j)
{
    uint64_t t0 = now_us();

    if (j->failed) {
        j->abort = 1;
    } else if (j->broken) {
        /* Commands that change anything are refused; an aging rotation
         * still may, and its record is not in the snapshot. */
        if (aof->changes != j->changes) {
            snprintf(j->err, sizeof(j->err), "the state changed while the repairing snapshot "
                     "was written; another one follows");
            j->abort = j->failed = 1;
        }
    } else if (aof->broken || rbd_aof_flush(aof) != 0) {
        /* X may lack records after F: Y cannot be made from it. */
        snprintf(j->err, sizeof(j->err), "the log failed while the snapshot was written; "
                 "another snapshot follows");
        j->abort = j->failed = 1;
    } else {
        j->upto = aof->log_bytes;
    }
    aof->held = !j->abort;
    j->loop_us += now_us() - t0;
    set_stage(j, J_GO);
}

/* At DONE: the switch to Y (or X stays, Y dropped).  0, or -1 with err. */
static int job_done(rbd_snapshots_t *sn, rbd_aof_t *aof, char *err, size_t errlen)
{
    rbd_snap_job_t *j = sn->job;
    uint64_t t0 = now_us(), saved = 0;

    if (j->threaded)
        pthread_join(j->thread, NULL);
    rb_segment_snap_end(j->snap, &saved);
    sn->job = NULL;
    aof->held = 0;
    if (j->renamed) {
        /* Y is the log in place: what X gained after F, and the records
         * held meanwhile go to it next (a broken X's were in the dump). */
        int was_failing = 0;
        if (j->broken)
            was_failing = rbd_aof_switch(aof, j->lfd, j->id);
        else
            rbd_aof_continue(aof, j->lfd, j->id, RBD_LOG_HDR + j->carried,
                             aof->changes - j->changes);
        j->lfd = -1;
        if (!j->dir_synced)
            aof->broken = 1;   /* in place, durable or not: the next snapshot supersedes it */
        else if (was_failing)
            rbd_log(LOG_NOTICE, "snapshot saved: the log works again");
    }
    sn->last_failed = j->failed;
    sn->last_saved_bytes = saved;
    sn->last_loop_us = j->loop_us + (now_us() - t0);
    sn->ends++;
    if (!j->failed) {
        sn->last_ms = rbd_now_ms();
        sn->last_mono = rbd_mono_ms();
        sn->last_duration_ms = sn->last_mono - j->begun_mono;
        sn->count++;
        sn->last_file_bytes = j->len - j->skipped;
        rbd_log(LOG_INFO, "snapshot saved: %s (%llu bytes, %llu written, %llu ms, %llu us in the "
                "event loop, %llu bytes copied on write)", j->p.snap, (unsigned long long)j->len,
                (unsigned long long)(j->len - j->skipped),
                (unsigned long long)sn->last_duration_ms, (unsigned long long)sn->last_loop_us,
                (unsigned long long)saved);
    } else {
        snprintf(err, errlen, "%s%s", j->err, j->installed && !j->renamed
                 ? " (the snapshot is in place; the log goes on and is replayed from where "
                   "the snapshot was frozen)" : "");
    }
    job_free(j);
    return sn->last_failed ? -1 : 0;
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
    write_phase(sn->job);
    job_go(aof, sn->job);
    switch_phase(sn->job);
    return job_done(sn, aof, err, errlen);
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
    char err[9400];

    if (job_done(sn, aof, err, sizeof(err)) == 0)
        return 0;
    rbd_log(LOG_WARNING, "%s snapshot failed: %s%s", what, err, then);
    return -1;
}

int rbd_snapshot_wait(rbd_snapshots_t *sn, rbd_aof_t *aof)
{
    rbd_snap_job_t *j = sn->job;

    if (j == NULL)
        return 0;
    pthread_mutex_lock(&j->lock);
    while (j->stage != J_READY && j->stage != J_DONE)
        pthread_cond_wait(&j->cond, &j->lock);
    pthread_mutex_unlock(&j->lock);
    if (stage_of(j) == J_READY)
        job_go(aof, j);
    return finish_logged(sn, aof, "");   /* joins */
}

void rbd_snapshot_poll(rbd_snapshots_t *sn, rbd_aof_t *aof, uint64_t now)
{
    uint64_t n;
    int st;

    if (sn->wakefd >= 0 && read(sn->wakefd, &n, sizeof(n)) < 0) {
        /* EAGAIN: nothing signalled since the last look. */
    }
    if (sn->job == NULL)
        return;
    st = stage_of(sn->job);
    if (st == J_READY)
        job_go(aof, sn->job);
    else if (st == J_DONE && finish_logged(sn, aof, " (next attempt in 10 s)") != 0)
        sn->next_attempt = now + 10000;
}

void rbd_snapshot_abandon(rbd_snapshots_t *sn)
{
    rbd_snap_job_t *j = sn->job;

    if (j == NULL)
        return;
    pthread_mutex_lock(&j->lock);
    while (j->stage == J_WRITING)
        pthread_cond_wait(&j->cond, &j->lock);
    pthread_mutex_unlock(&j->lock);
    if (stage_of(j) == J_READY) {
        j->abort = 1;
        set_stage(j, J_GO);
    }
    pthread_join(j->thread, NULL);
    rb_segment_snap_end(j->snap, NULL);
    sn->job = NULL;
    job_free(j);
}

int rbd_snapshot_init(rbd_snapshots_t *sn)
{
    sn->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return sn->wakefd;
}

/* The log is large enough for a snapshot: past save-log-bytes (the
 * minimum) and past save-log-percent of the live data (0: the minimum
 * alone), as Redis's auto-aof-rewrite-min-size and -percentage; so a load
 * into a large filter does not snapshot its reservation every 64 MB. */
static int log_due(const rbd_aof_t *aof, const rb_segment_t *seg, const rbd_config_t *cfg)
{
    rb_segment_info_t in;

    if (aof->log_bytes < cfg->save_log_bytes)
        return 0;
    if (cfg->save_log_percent == 0 || rb_segment_info(seg, &in) != RB_OK)
        return 1;
    return aof->log_bytes / cfg->save_log_percent >= in.used / 100;
}

void rbd_snapshot_tick(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg,
                       const rbd_config_t *cfg, uint64_t now)
{
    char err[512];
    const char *what;
    int due;

    rbd_snapshot_poll(sn, aof, now);
    due = aof->broken || sn->scheduled ||
          (aof->changes > 0 && !aof->write_error &&
           ((cfg->save_seconds > 0 && now - sn->last_mono >= 1000ull * cfg->save_seconds) ||
            log_due(aof, seg, cfg)));
    if (!due || sn->job != NULL || now < sn->next_attempt)
        return;
    what = aof->broken ? "repairing" : sn->scheduled ? "scheduled" : "periodic";
    sn->scheduled = 0;
    if (rbd_snapshot_start(sn, aof, seg, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "%s snapshot failed: %s (next attempt in 10 s)", what, err);
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
                      int fd, const void *data, size_t size, rbd_snap_t *snap,
                      rb_segment_t **seg, char *err, size_t errlen)
{
    rb_segment_opts_t o = { .mode = cfg->segment_mode, .max_size = cfg->max_memory,
                            .flags = RB_SEGMENT_HIDDEN };
    const unsigned char *d = data;
    rbd_snap_t h = *snap;
    uint64_t len, hash, read;
    int rc;

    if (snapshot_header(d, size, path, &h, &len, &hash, err, errlen) != 0)
        return -1;
    if (len != size - h.header) {
        snprintf(err, errlen, "snapshot %s is truncated: %zu bytes, header says %llu", path,
                 size, (unsigned long long)(len + h.header));
        return -1;
    }
    if (rbd_sparse_hash(fd, d, h.header, len, &read) != hash) {
        snprintf(err, errlen, "snapshot %s is corrupt: checksum mismatch", path);
        return -1;
    }
    rbd_log(LOG_DEBUG, "snapshot %s: %llu of its %llu bytes are data, the rest holes", path,
            (unsigned long long)read, (unsigned long long)len);
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
