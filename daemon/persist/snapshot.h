/*
 * snapshot.h - ringbloomd's snapshots (snapshot.c): the procedure that
 * writes one and replaces the log, when it runs, and reading one back.
 */
#ifndef RBD_SNAPSHOT_H
#define RBD_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "aof.h"
#include "rbd_config.h"
#include "ringbloom.h"
#include <xxhash.h>

#define RBD_SNAP_FILE "snapshot.rbs"

typedef struct rbd_snap_job rbd_snap_job_t;   /* one on its way (snapshot.c) */

/* The snapshots taken so far (INFO persistence, the periodic schedule). */
typedef struct rbd_snapshots {
    uint64_t count;
    uint64_t last_ms;          /* unix ms of the last snapshot (for INFO) */
    uint64_t last_mono;        /* monotonic ms of the last snapshot */
    uint64_t next_attempt;     /* earliest next periodic attempt (monotonic ms) */
    int last_failed;           /* the last attempt failed */
    uint64_t last_duration_ms; /* the last one, freeze to install */
    uint64_t last_loop_us;     /* ... of which the event loop spent (steps 1, 5-7) */
    uint64_t ends;             /* snapshots ended, saved or failed (last_loop_us is
                                  the last one's: the latency monitor's sample) */
    uint64_t last_saved_bytes; /* ... pages the writer saved for it (copy on write) */
    uint64_t last_file_bytes;  /* ... bytes of it written to the file (the rest sparse) */
    rbd_snap_job_t *job;       /* the one being written, or NULL */
    int scheduled;             /* BGSAVE asked for one when none could start (inside
                                  an EXEC, or one being written): the tick starts it */
    int wakefd;                /* eventfd the thread wakes the event loop with (-1: none
                                  yet: foreground snapshots only) */
} rbd_snapshots_t;

/* What a snapshot says about the logs around it (format 3; docs/design.md,
 * "Start-up"). */
typedef struct rbd_snap {
    const char *path;      /* the snapshot's path, for messages (also when missing) */
    int present;           /* 0: there is none (missing, or discarded) */
    unsigned version;      /* 1: the old format, whose header says nothing of prev_log */
    size_t header;         /* its header's length: 128 (format 3) or 64 */
    uint64_t next_log;     /* id of the log that continues it */
    uint64_t prev_log;     /* id of the log it superseded; 0: none, or version 1 */
    uint64_t prev_from;    /* prev_log from this offset on holds changes the snapshot
                              lacks (made while it was written); 0: none */
} rbd_snap_t;

/* A snapshot now, in the foreground: one being written in the background
 * is finished first (waited for), then the segment's state is saved into
 * snapshot.rbs, and a new log continuing it replaces aof's (P3, P4).  0 or
 * -1 with err. */
int rbd_snapshot_save(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, char *err,
                      size_t errlen);
/* A snapshot in the background (BGSAVE, the schedule): the state is frozen
 * now and written by a thread while the event loop goes on; rbd_snapshot_poll
 * installs it when the thread is done.  -1 with err if one is already
 * being written or it cannot start. */
int rbd_snapshot_start(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, char *err,
                       size_t errlen);
/* When the thread signals (wakefd) and once a second: at READY, holds the
 * log and lets the thread switch logs; at DONE, switches to the new log (a
 * failed snapshot is retried after 10 s). */
void rbd_snapshot_poll(rbd_snapshots_t *sn, rbd_aof_t *aof, uint64_t now_mono);
/* Waits for the background snapshot, if any, and installs it.  0, or -1
 * if it failed (logged). */
int rbd_snapshot_wait(rbd_snapshots_t *sn, rbd_aof_t *aof);
/* At exit without a final snapshot: waits for the thread and drops what it
 * wrote (the log in place has every change). */
void rbd_snapshot_abandon(rbd_snapshots_t *sn);
/* The eventfd the snapshot thread signals (READY, DONE) for the event
 * loop to poll on: sn->wakefd, or -1 with errno. */
int rbd_snapshot_init(rbd_snapshots_t *sn);
/* Once a second: polls, and starts a background snapshot if one is due
 * (save-seconds, save-log-bytes) or the log is broken; a failed one is
 * retried after 10 s. */
void rbd_snapshot_tick(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg,
                       const rbd_config_t *cfg, uint64_t now_mono);

/* Restores a snapshot from its bytes (path only names it in messages):
 * checks the header (its checksum, format 2; format 1 has none), length
 * and checksum and restores the dump into a new hidden segment of instance
 * (NULL: a private one) in *seg, filling snap (whose path the caller set;
 * present = 1).  On error *seg is untouched and nothing is left in
 * /dev/shm.  data must be 8-byte aligned.  fd: the file data maps (-1:
 * none), whose holes are hashed as zeros without reading them (a sparse
 * snapshot, snap_sparse.c).  0, or -1 with err. */
int rbd_snapshot_load(const rbd_config_t *cfg, const char *instance, const char *path,
                      int fd, const void *data, size_t len, rbd_snap_t *snap,
                      rb_segment_t **seg, char *err, size_t errlen);

/* ---- appendonly (aof_switch.c) ---- */

/* Puts appendonly `on` in force (A1): off, the log sink stops appending
 * (what is pending written first if it can be); on, a foreground snapshot
 * first, then records are appended again.  0, or -1 with err and
 * nothing changed (inside a transaction; the snapshot failed). */
int rbd_appendonly_set(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, int on,
                       char *err, size_t errlen);

/* ---- the dump as a sparse file (snap_sparse.c) ---- */

/* A dump being written to fd at its current offset. */
typedef struct rbd_sparse {
    int fd;
    uint64_t len;       /* the dump's bytes so far */
    uint64_t holes;     /* ... of which holes of the dump */
    uint64_t skipped;   /* ... of which left out of the file (the holes) */
    XXH3_state_t *xx;   /* XXH3-64 of the dump, holes as zeros */
} rbd_sparse_t;

/* rb_segment_snap_dump_sparse's callbacks (arg: an rbd_sparse_t): data is
 * written, holes are skipped (the restore never reads them); both hashed.
 * 0, or -1 with errno. */
int rbd_sparse_data(const void *data, size_t len, void *arg);
int rbd_sparse_hole(uint64_t len, void *arg);
/* After the dump: the file ends where the dump does.  0, or -1 (errno). */
int rbd_sparse_finish(rbd_sparse_t *d);
/* XXH3-64 of file[off, off + len) (a mapping of fd): the data ranges
 * SEEK_DATA / SEEK_HOLE find are read, the holes hashed as zeros without
 * touching the mapping (fd < 0: all read).  *read: the bytes read. */
uint64_t rbd_sparse_hash(int fd, const unsigned char *file, uint64_t off, uint64_t len,
                         uint64_t *read);

#endif /* RBD_SNAPSHOT_H */
