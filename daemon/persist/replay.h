/*
 * replay.h - replaying the append-only log at start-up (replay.c).
 */
#ifndef RBD_REPLAY_H
#define RBD_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "rbd_config.h"
#include "snapshot.h"
#include "state.h"

/* What loading a log did. */
typedef struct rbd_replay {
    uint64_t log_id;       /* from its header (0 if the header is bad) */
    uint64_t records;      /* records applied */
    size_t applied;        /* bytes of it applied, header included (0: none) */
    int torn;              /* a torn tail was ignored (cfg->load_truncated) */
    int skipped;           /* not replayed: RBD_LOG_SUPERSEDED or RBD_LOG_UNVERIFIED */
} rbd_replay_t;

enum {
    RBD_LOG_SUPERSEDED = 1,   /* the log the snapshot superseded, from 0: contained in it */
    RBD_LOG_UNVERIFIED = 2    /* old format on both sides, ids differ: taken for that
                                 log on the word of unchecksummed headers */
};

/* Loads a log from its bytes (path only names it in messages): checks the
 * header and whether the log fits snap; replays the log that continues
 * snap into st (its ring and segment; ops.c); replays the one snap
 * superseded from snap->prev_from on (the changes made while the snapshot
 * was written), or skips it if that is 0 (r->skipped); anything else - a bad header, a log of another snapshot, a
 * log without its snapshot (snap->present 0), a record that does not
 * parse, fails its checksum or does not apply (a filter or node that does
 * not exist, or already does) - is an error naming the file, offset and
 * ids.  A torn tail (a record cut short by the end of the file - not one
 * that is whole with a damaged length - or zeros a crash left) is ignored
 * if cfg->load_truncated, else an error.  On an
 * error what was replayed stays applied (r->records records, the first
 * r->applied bytes): the caller discards the segment, or keeps them
 * (--ignore-corrupt).  0, or -1 with err. */
int rbd_replay_log(const rbd_config_t *cfg, rbd_state_t *st, const char *path, const void *data,
                   size_t len, const rbd_snap_t *snap, rbd_replay_t *r, char *err,
                   size_t errlen);

#endif /* RBD_REPLAY_H */
