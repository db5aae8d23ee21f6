/*
 * recovery.c - ringbloomd's start-up: re-attach to the live segment a
 * predecessor left (the freshest state: every change was applied before it
 * was logged) unless it died inside a transaction (T1: the segment's mark,
 * seg_txn.h), or restore the snapshot into a hidden segment and replay the
 * log that continues it (replay.c); then publish the ring, make the
 * segment live and take the start-up snapshot (docs/design.md, "Start-up").
 *
 * Invariant:
 *   P5 whenever the daemon may die, the files are one of: neither file; a
 *      snapshot with the log it names; a snapshot with the log it
 *      superseded (which it contains up to the offset its header calls
 *      *from*, P3 and P4, and which is replayed from there; all of it when
 *      *from* is 0); a snapshot that superseded no log, alone.  rbd_recovery_start loads exactly these
 *      and refuses every other state by name, unless told --ignore-corrupt
 *      (which moves files aside, so a death during such a start may need
 *      it again).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "rbd_log.h"
#include "recovery.h"
#include "replay.h"
#include "seg_txn.h"

/* The bytes of a state file, mmap'ed, and the file (for SEEK_DATA /
 * SEEK_HOLE: a sparse snapshot's holes are not read, snap_sparse.c). */
typedef struct mapped {
    const unsigned char *data;
    size_t len;
    int fd;
} mapped_t;

/* The state directory's files, for one start. */
typedef struct start_files {
    char snap[4200], log[4200];
} start_files_t;

static int map_file(const char *path, mapped_t *m, int *missing)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *missing = 0;
    m->data = NULL;
    m->len = 0;
    m->fd = -1;
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
    m->fd = fd;
    return 0;
}

static void unmap_file(mapped_t *m)
{
    if (m->data != NULL)
        munmap((void *)m->data, m->len);
    if (m->fd >= 0)
        close(m->fd);
    m->data = NULL;
    m->fd = -1;
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
    if (!missing && rbd_aof_header(m.data, m.len, path, &id, &v1, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "%s; the live segment supersedes it", err);
        id = 0;
    }
    unmap_file(&m);
    return id;
}

/* Step 1: a live segment left by a predecessor.  1 if re-attached (the
 * ring loaded, aof->log_id the log in place), 0 if there is none or it was
 * unusable or left inside a transaction (removed), -1 with err if the
 * start must be refused. */
static int reattach(const rbd_config_t *cfg, rbd_state_t *st, rbd_aof_t *aof,
                    const start_files_t *f, char *err, size_t errlen)
{
    rb_segment_info_t si;
    int rc = rb_segment_open_writer(cfg->instance, &st->seg);

    if (rc == RB_EBUSY) {
        snprintf(err, errlen, "segment /ringbloom.%s is in use by another writer (another "
                 "ringbloomd with a different pidfile?)", cfg->instance);
        return -1;
    }
    if (rc == RB_EOWNER) {
        /* Another user made an object under our name (/dev/shm is
         * writable by all): never adopt it, and it cannot be removed by
         * us either. */
        snprintf(err, errlen, "segment /dev/shm/ringbloom.%s belongs to another user; "
                 "refusing to use it (name squatting?): check its owner with ls -l, remove "
                 "it, and start again", cfg->instance);
        return -1;
    }
    if (rc == RB_OK && rbi_segment_txn_open(st->seg)) {
        /* T1: the predecessor died between two members of an EXEC (the
         * mark is set before the first is applied and cleared after the
         * last), so the segment may hold some of them, and the files
         * hold none (the TXN record is written after the step, T2): they
         * are the all-or-none state, so rebuild from them. */
        rbd_log(LOG_WARNING, "the live segment's writer died inside a transaction (EXEC), "
                "so it may hold part of one: replacing it from %s, which holds none of it",
                aof->dir);
        rb_segment_close(st->seg);
        st->seg = NULL;
        rb_segment_unlink(cfg->instance);
        return 0;
    }
    if (rc == RB_OK && (rc = rb_ring_load(st->seg, &st->ring)) != RB_OK) {
        rbd_log(LOG_WARNING, "the live segment's ring cannot be loaded (%s)", rb_strerror(rc));
        rb_segment_close(st->seg);
        st->seg = NULL;
    }
    if (rc != RB_OK) {
        if (rc != RB_ENOENT) {
            rbd_log(LOG_WARNING, "segment /ringbloom.%s is unusable (%s): replacing it from %s",
                    cfg->instance, rb_strerror(rc), aof->dir);
            rb_segment_unlink(cfg->instance);
        }
        return 0;
    }
    rbd_log(LOG_INFO, "re-attached to the live segment of instance '%s'", cfg->instance);
    if (rb_segment_set_mode(st->seg, cfg->segment_mode) != RB_OK)
        rbd_log(LOG_WARNING, "could not set the segment's mode to 0%o",
                (unsigned)cfg->segment_mode);
    if (rb_segment_set_group(st->seg, cfg->segment_group) != RB_OK)
        rbd_log(LOG_WARNING, "could not set the segment's group to %u",
                (unsigned)cfg->segment_group);
    if (rb_segment_info(st->seg, &si) == RB_OK &&
        (si.max_size != rb_segment_reservation(cfg->max_memory) ||
         si.max_filters != cfg->max_filters))
        rbd_log(LOG_WARNING, "the live segment keeps max-memory %llu and max-filters %u "
                "(configured: %llu, %u); they change only when the segment is rebuilt "
                "(stop the daemon, remove /dev/shm/ringbloom.%s, start it)",
                (unsigned long long)si.max_size, si.max_filters,
                (unsigned long long)cfg->max_memory, cfg->max_filters, cfg->instance);
    aof->log_id = log_in_place(f->log);
    return 1;
}

/* The snapshot, if there is one, restored into st->seg (sh filled).  0
 * (also when it was discarded: st->seg stays NULL), or -1 with err. */
static int load_snapshot(const rbd_config_t *cfg, rbd_state_t *st, const start_files_t *f,
                         rbd_snap_t *sh, int ignore_corrupt, char *err, size_t errlen)
{
    mapped_t m;
    int missing, rc;

    if (map_file(f->snap, &m, &missing) != 0) {
        snprintf(err, errlen, "cannot read snapshot %s: %s", f->snap, strerror(errno));
        return -1;
    }
    if (missing)
        return 0;
    rc = rbd_snapshot_load(cfg, cfg->instance, f->snap, m.fd, m.data, m.len, sh, &st->seg, err,
                           errlen);
    unmap_file(&m);
    if (rc != 0 && discard(f->snap, 0, m.len, 0, ignore_corrupt, err, errlen) != 0)
        return -1;
    return 0;
}

/* A log found beside a snapshot of format 1, skipped on the word of its
 * header: a copy is kept.  0, or -1 with err. */
static int keep_unverified(const start_files_t *f, const rbd_snap_t *sh, const rbd_replay_t *r,
                           char *err, size_t errlen)
{
    char kept[4300];

    if (keep_copy(f->log, "skipped", 0, kept, sizeof(kept)) != 0) {
        snprintf(err, errlen, "cannot keep a copy of log %s, which is about to be skipped: %s",
                 f->log, strerror(errno));
        return -1;
    }
    rbd_log(LOG_WARNING, "log %s (format 1, id %016llx) is not the log snapshot %s (format 1) "
            "names (%016llx): taken, as the old format did, for the log the snapshot "
            "superseded, and skipped; format 1 headers have no checksum to prove it, so a copy "
            "is kept as %s", f->log, (unsigned long long)r->log_id, f->snap,
            (unsigned long long)sh->next_log, kept);
    return 0;
}

/* Step 3: the log, replayed onto the restored state if it continues the
 * snapshot (aof->log_id: the log in place, which the start-up snapshot
 * supersedes).  0, or -1 with err. */
static int load_log(const rbd_config_t *cfg, rbd_state_t *st, rbd_aof_t *aof,
                    const start_files_t *f, const rbd_snap_t *sh, rbd_replay_t *r,
                    int ignore_corrupt, char *err, size_t errlen)
{
    mapped_t m;
    int missing, rc;

    if (map_file(f->log, &m, &missing) != 0) {
        snprintf(err, errlen, "cannot read log %s: %s", f->log, strerror(errno));
        return -1;
    }
    if (missing && sh->prev_log != 0) {
        /* P5: once a snapshot that superseded a log is installed, a log is
         * in place (that one, or the one it names) until the next. */
        snprintf(err, errlen, "log %s is missing: snapshot %s is continued by log %016llx and "
                 "superseded log %016llx, and one of them must be there", f->log, f->snap,
                 (unsigned long long)sh->next_log, (unsigned long long)sh->prev_log);
        if (!ignore_corrupt)
            return -1;
        rbd_log(LOG_WARNING, "%s; starting from the snapshot alone (--ignore-corrupt): the "
                "changes logged after it are lost, no file holds them", err);
        return 0;
    }
    if (missing)
        return 0;
    rc = rbd_replay_log(cfg, st, f->log, m.data, m.len, sh, r, err, errlen);
    unmap_file(&m);
    if (rc != 0)
        return discard(f->log, r->applied, m.len, r->records, ignore_corrupt, err, errlen);
    aof->log_id = r->log_id;   /* still in place: the start-up snapshot supersedes it */
    if (r->skipped == RBD_LOG_UNVERIFIED)
        return keep_unverified(f, sh, r, err, errlen);
    return 0;
}

/* Steps 2-4: snapshot + log, in one of the states of P5, into a hidden
 * segment, then published and made live.  0, or -1 with err (the hidden
 * segment removed). */
static int restore(const rbd_config_t *cfg, rbd_state_t *st, rbd_aof_t *aof,
                   const start_files_t *f, int ignore_corrupt, char *err, size_t errlen)
{
    rb_segment_opts_t o = { .mode = cfg->segment_mode, .max_size = cfg->max_memory,
                            .max_filters = cfg->max_filters, .flags = RB_SEGMENT_HIDDEN };
    rbd_snap_t sh = { .path = f->snap };
    rbd_replay_t r;
    char kept[4300];
    int rc;

    memset(&r, 0, sizeof(r));
    if (load_snapshot(cfg, st, f, &sh, ignore_corrupt, err, errlen) != 0)
        return -1;
    if (st->seg == NULL && (rc = rb_segment_create(cfg->instance, &o, &st->seg)) != RB_OK) {
        snprintf(err, errlen, "cannot create segment /ringbloom.%s: %s", cfg->instance,
                 rb_strerror(rc));
        return -1;
    }
    rc = sh.present ? rb_ring_load(st->seg, &st->ring)
                    : rb_ring_new(cfg->ring_mode, cfg->ring_replicas, &st->ring);
    if (rc != RB_OK)
        snprintf(err, errlen, "cannot load the ring: %s", rb_strerror(rc));
    if (rc != RB_OK || load_log(cfg, st, aof, f, &sh, &r, ignore_corrupt, err, errlen) != 0)
        goto discard;
    if (r.torn) {
        /* Keep the evidence: the start-up snapshot replaces the log. */
        snprintf(kept, sizeof(kept), "%s.torn", f->log);
        if (link(f->log, kept) != 0 && errno != EEXIST)
            rbd_log(LOG_WARNING, "could not keep %s: %s", kept, strerror(errno));
    }
    if ((rc = rb_ring_publish(st->ring, st->seg)) != RB_OK) {
        snprintf(err, errlen, "cannot publish the ring: %s", rb_strerror(rc));
        goto discard;
    }
    /* segment-group before readers may attach (main checked it may). */
    if ((rc = rb_segment_set_group(st->seg, cfg->segment_group)) != RB_OK) {
        snprintf(err, errlen, "segment-group: cannot give /dev/shm/ringbloom.%s group %u: %s",
                 cfg->instance, (unsigned)cfg->segment_group, rb_strerror(rc));
        goto discard;
    }
    rb_segment_go_live(st->seg);
    rbd_log(LOG_INFO, "restored instance '%s' from %s%s, %llu log records replayed",
            cfg->instance, sh.present ? "snapshot" : "an empty state",
            sh.present ? "" : " (no snapshot)", (unsigned long long)r.records);
    return 0;

discard:
    /* The hidden segment being restored holds nothing the files do not:
     * remove it whatever keep-segment says (left behind, it would stay
     * "initialising" - readers get RB_EBUSY, and the next start takes it
     * for another writer's and refuses to run). */
    rbd_filters_close(&st->filters);
    rb_segment_close(st->seg);
    st->seg = NULL;
    rb_segment_unlink(cfg->instance);
    return -1;
}

int rbd_recovery_start(const rbd_config_t *cfg, rbd_state_t *st, rbd_aof_t *aof,
                       rbd_snapshots_t *sn, int ignore_corrupt, char *err, size_t errlen)
{
    start_files_t f;
    int rc;

    snprintf(f.snap, sizeof(f.snap), "%s/%s", aof->dir, RBD_SNAP_FILE);
    snprintf(f.log, sizeof(f.log), "%s/%s", aof->dir, RBD_LOG_FILE);
    rc = reattach(cfg, st, aof, &f, err, errlen);
    if (rc < 0 || (rc == 0 && restore(cfg, st, aof, &f, ignore_corrupt, err, errlen) != 0))
        return -1;
    /* Start the state directory afresh from what is live now (P3). */
    return rbd_snapshot_save(sn, aof, st->seg, err, errlen);
}
