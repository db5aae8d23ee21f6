/*
 * aof.h - ringbloomd's append-only log (aof.c): the file in the state
 * directory, the records of a loop turn waiting for their write, group
 * commit, and the everysec fsync thread.
 */
#ifndef RBD_AOF_H
#define RBD_AOF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"   /* RBD_REC_HDR: the records' framing */
#include "resp_enc.h"
#include "sink.h"

#define RBD_LOG_FILE      "appendonly.rbl"
#define RBD_LOG_MAGIC     "RBLOG002"
#define RBD_LOG_MAGIC_V1  "RBLOG001"   /* format 1: no header checksum */
#define RBD_LOG_HDR       32u          /* header bytes, then records */

/* The everysec fsync thread: it fdatasyncs the log when asked, so the
 * event loop never waits for the disk, and closes a replaced log's
 * descriptor (freeing its pages is its own wait); log rotation takes
 * `lock` before changing the descriptor it syncs. */
typedef struct rbd_fsyncer {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    int started;
    int fd;                    /* the log it syncs (-1: none) */
    int retired;               /* a replaced log's descriptor to close (-1: none) */
    int requested, stop;
    int error;                 /* errno of a failed background fdatasync */
} rbd_fsyncer_t;

typedef struct rbd_aof {
    char dir[4096];            /* the state directory (snapshot.c writes there too) */
    int dirfd;
    int logfd;                 /* -1 until the first snapshot makes a log */
    int appendfsync;           /* FSYNC_*: the policy in force (open, SIGHUP) */
    int enabled;               /* appendonly: 0 = no record is built or written (the
                                  log sink only counts changes); pending is then
                                  empty and open 0 (aof_switch.c switches it) */
    uint64_t log_id;           /* id of the log at appendonly.rbl (0: none) */
    uint64_t log_bytes;        /* size of the log file */
    _Atomic uint64_t log_written; /* log_bytes, for the snapshot thread (snapshot.c):
                                  its bytes below this are whole records that stay */
    rbi_buf_t pending;        /* records not yet written */
    unsigned open;             /* records begun and not ended (a TXN and a member
                                  inside it): pending ends in a partial record, which
                                  rbd_aof_flush never writes */
    int force_sync;            /* a record needs fsync before its reply */
    int dirty;                 /* written since the last fsync */
    int write_error;           /* last write failed: replies are held */
    int broken;                /* sticky: the log cannot be trusted (a failed
                                  fsync, or superseded by a snapshot whose own
                                  log is not installed); only a complete
                                  snapshot repairs it */
    int held;                  /* a snapshot is switching logs (snapshot.c): records
                                  wait in pending, and their replies with them */
    uint64_t changes;          /* records since the last snapshot */
    uint64_t fsyncs, log_errors;
    rbd_fsyncer_t sync;
} rbd_aof_t;

/* Opens the state directory dir (creating it) and starts the fsync
 * thread; no log yet (the start-up snapshot makes it).  0, or -1 with err. */
int rbd_aof_open(rbd_aof_t *a, const char *dir, int appendfsync, char *err, size_t errlen);
/* appendonly no (the log sink stops appending): what is pending is
 * written if it can be, else dropped - the changes it describes are then
 * in the segment only, as every later one.  -1 (nothing changed) inside a
 * record still open (an EXEC's). */
int rbd_aof_disable(rbd_aof_t *a);
/* Stops the thread, fsyncs and closes the log (pending records are lost:
 * the caller flushed or snapshotted). */
void rbd_aof_close(rbd_aof_t *a);

/* Mutations refused: the log cannot be written (MISCONF). */
static inline int rbd_aof_refuses(const rbd_aof_t *a)
{
    return a->write_error || a->broken;
}

/* A record: rbd_aof_record_begin appends its header for `type` to the
 * pending buffer (returning where it starts), the caller appends the
 * payload (ops.c's encoder), rbd_aof_record_end fills in its length and
 * checksum (record.h's rbd_rec_seal) and asks for an fsync before the reply if `sync` (P2).  Their
 * caller is the log's op sink (sink_log.c). */
size_t rbd_aof_record_begin(rbd_aof_t *a, uint8_t type);
static inline void rbd_aof_put(rbd_aof_t *a, const void *data, size_t len)
{
    rbi_buf_append(&a->pending, data, len);
}
void rbd_aof_record_end(rbd_aof_t *a, size_t start, int sync);
/* Drops the record begun at start (and anything appended after it). */
void rbd_aof_record_drop(rbd_aof_t *a, size_t start);

/* Writes pending records (and fsyncs as the policy and force_sync say).
 * 0 if everything pending is durable enough to reply; -1 if the write
 * failed, or a record is still open (records stay pending, replies must
 * wait). */
int rbd_aof_flush(rbd_aof_t *a);
/* Once a second: notes a failed background fdatasync (the log is then
 * broken) and, for everysec, asks the thread for the next one. */
void rbd_aof_tick(rbd_aof_t *a);

/* The log as an op sink (sink_log.c), registered with its rbd_aof_t:
 * the records of the ops, the TXN frame, the group commit. */
extern const rbd_sink_ops_t rbd_sink_log;

/* Creates a log file at path with id (header written and fsync'd): its
 * descriptor, or -1 with errno (nothing left at path). */
int rbd_aof_create(const char *path, uint64_t id);
/* Switches to log fd (id, just installed by a snapshot that holds
 * everything before it): pending records are dropped, the snapshot covers
 * them.  1 if the log was broken or failing before, else 0. */
int rbd_aof_switch(rbd_aof_t *a, int fd, uint64_t id);

/* Switches to log fd (id, just installed by a snapshot) that already
 * holds `bytes` bytes: the old log's records the snapshot lacks (`changes`
 * of them).  Pending records stay, and go to it next. */
void rbd_aof_continue(rbd_aof_t *a, int fd, uint64_t id, uint64_t bytes, uint64_t changes);

/* Reads a log's header from its first bytes: *id, and *v1 if it is format
 * 1 (no checksum, zeros where format 2 has it).  0, or -1 with err. */
int rbd_aof_header(const unsigned char *data, size_t len, const char *path, uint64_t *id,
                   int *v1, char *err, size_t errlen);

#endif /* RBD_AOF_H */
