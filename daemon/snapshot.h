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

#define RBD_SNAP_FILE "snapshot.rbs"

/* The snapshots taken so far (INFO persistence, the periodic schedule). */
typedef struct rbd_snapshots {
    uint64_t count;
    uint64_t last_ms;          /* unix ms of the last snapshot (for INFO) */
    uint64_t last_mono;        /* monotonic ms of the last snapshot */
    uint64_t next_attempt;     /* earliest next periodic attempt (monotonic ms) */
    int last_failed;           /* the last attempt failed */
} rbd_snapshots_t;

/* What a snapshot says about the logs around it (format 2; docs/design.md,
 * "Start-up"). */
typedef struct rbd_snap {
    const char *path;      /* the snapshot's path, for messages (also when missing) */
    int present;           /* 0: there is none (missing, or discarded) */
    unsigned version;      /* 1: the old format, whose header says nothing of prev_log */
    uint64_t next_log;     /* id of the log that continues it */
    uint64_t prev_log;     /* id of the log it superseded; 0: none, or version 1 */
} rbd_snap_t;

/* Snapshot now: the segment's committed bytes into snapshot.rbs, and a new
 * log continuing it in place of aof's (P3, P4).  0 or -1 with err. */
int rbd_snapshot_save(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, char *err,
                      size_t errlen);
/* Once a second: a snapshot if one is due (save-seconds, save-log-bytes)
 * or the log is broken; a failed one is retried after 10 s. */
void rbd_snapshot_tick(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg,
                       const rbd_config_t *cfg, uint64_t now_mono);

/* Restores a snapshot from its bytes (path only names it in messages):
 * checks the header (its checksum, format 2; format 1 has none), length
 * and checksum and restores the dump into a new hidden segment of instance
 * (NULL: a private one) in *seg, filling snap (whose path the caller set;
 * present = 1).  On error *seg is untouched and nothing is left in
 * /dev/shm.  data must be 8-byte aligned.  0, or -1 with err. */
int rbd_snapshot_load(const rbd_config_t *cfg, const char *instance, const char *path,
                      const void *data, size_t len, rbd_snap_t *snap, rb_segment_t **seg,
                      char *err, size_t errlen);

#endif /* RBD_SNAPSHOT_H */
