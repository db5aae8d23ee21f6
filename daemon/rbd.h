/*
 * rbd.h - ringbloomd's process-wide state, shared by its modules:
 *   main.c      start-up, signals, restore, shutdown
 *   server.c    the epoll loop, clients, limits, access control
 *   commands.c  the command table and every command
 *   persist.c   append-only log, group commit, snapshots, restore
 *   rbd_log.c   logging to stderr or syslog
 *   dirs.c      the directories of its files: created, ownership checked
 */
#ifndef RBD_H
#define RBD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rbd_config.h"
#include "resp.h"
#include "ringbloom.h"

typedef struct client {
    int fd;
    uint64_t id;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    resp_buf_t in;
    resp_parser_t parser;
    resp_buf_t out;
    uint64_t last_active_ms;
    int closing;          /* close once out is flushed */
    int writing;          /* registered for EPOLLOUT */
    int can_write;        /* may run mutations (decided at accept) */
    int awaits_log;       /* a reply in out acknowledges a record not yet
                             durable: out waits for the log (P1) */
} client_t;

typedef struct persist {
    char dir[4096];
    int dirfd;
    int logfd;
    uint64_t log_id;
    uint64_t log_bytes;        /* size of the log file */
    resp_buf_t pending;        /* records not yet written */
    int force_sync;            /* a record needs fsync before its reply */
    int dirty;                 /* written since the last fsync */
    int write_error;           /* last write failed: replies are held */
    int broken;                /* sticky: the log cannot be trusted (a failed
                                  fsync, or superseded by a snapshot whose own
                                  log is not installed); only a complete
                                  snapshot repairs it */
    uint64_t changes;          /* mutations since the last snapshot */
    uint64_t last_save_ms;     /* unix ms of the last snapshot (for INFO) */
    uint64_t last_save_mono;   /* monotonic ms of the last snapshot */
    uint64_t next_attempt_mono;/* earliest next periodic snapshot attempt */
    int last_save_ok;
    uint64_t snapshots, fsyncs, log_errors;
    /* everysec: a helper thread does the fdatasync */
    int sync_thread_started;
} persist_t;

typedef struct filter_ref {
    char *name;
    size_t len;
    rb_bloom_t *bf;
} filter_ref_t;

typedef struct server {
    rbd_config_t cfg;
    const char *config_path;   /* NULL if none */
    rb_segment_t *seg;
    rb_ring_t *ring;
    persist_t persist;
    filter_ref_t *filters;     /* open handles, by name */
    size_t nfilters, filters_cap;
    int epfd, lfd, sigfd;
    client_t **clients;        /* indexed by fd */
    size_t clients_cap;
    uint32_t nclients;
    uint64_t next_client_id;
    uint64_t start_ms;
    uint64_t last_heartbeat_ms;
    int shutdown;              /* 1: leave the loop */
    int shutdown_save;         /* snapshot before leaving */
    /* stats */
    uint64_t commands, connections, rejected_clients, denied, bf_adds, ring_changes,
        protocol_errors, timeouts;
} server_t;

/* ---- logging (rbd_log.c) ------------------------------------------------- */
void rbd_log_init(int foreground, int level);
void rbd_log_level(int level);
void rbd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t rbd_now_ms(void);   /* unix milliseconds (for display) */
uint64_t rbd_mono_ms(void);  /* monotonic milliseconds (for intervals) */

/* ---- persistence (persist.c) --------------------------------------------- */
enum {
    REC_RING_ADD = 1, REC_RING_REMOVE = 2, REC_RING_WEIGHT = 3, REC_RING_MODE = 4,
    REC_BF_RESERVE = 5, REC_BF_ADD = 6, REC_BF_ROTATE = 7, REC_BF_RESET = 8
};

/* Opens the state directory (creating it), without loading anything. */
int persist_open(server_t *s, char *err, size_t errlen);
/* Brings up the segment: re-attach to a live one, or restore snapshot +
 * log into a new one.  ignore_corrupt: move bad files aside and go on. */
int persist_start(server_t *s, int ignore_corrupt, char *err, size_t errlen);
void persist_close(server_t *s);
/* The two halves of persist_start's restore, on the bytes of the files
 * (path only names them in messages).  Snapshot: checks header, length and
 * checksum and restores the dump into a new hidden segment of instance
 * (NULL: a private one) in s->seg, with *next_log the id of the log that
 * continues it; on error s->seg is untouched (NULL) and nothing is left
 * in /dev/shm.  data must be 8-byte aligned.  Log: checks the header and,
 * unless have_snap and its id is not next_log (an older log the snapshot
 * contains: skipped), replays its records into s->ring and s->seg;
 * *records counts them, *torn is set if a torn last record was ignored
 * (cfg.load_truncated).  On an error what was replayed stays applied: the
 * caller discards the segment.  Both return 0, or -1 with err. */
int persist_load_snapshot_buf(server_t *s, const char *instance, const char *path,
                              const void *data, size_t len, uint64_t *next_log,
                              char *err, size_t errlen);
int persist_load_log_buf(server_t *s, const char *path, const void *data, size_t len,
                         int have_snap, uint64_t next_log, uint64_t *records, int *torn,
                         char *err, size_t errlen);

/* Log records; appended to the pending buffer, written by persist_flush. */
void persist_ring_add(server_t *s, const char *name, size_t len, uint32_t weight);
void persist_ring_remove(server_t *s, const char *name, size_t len);
void persist_ring_weight(server_t *s, const char *name, size_t len, uint32_t weight);
void persist_ring_mode(server_t *s, rb_ring_mode_t mode, uint32_t replicas);
void persist_bf_reserve(server_t *s, const char *name, size_t len, const rb_bloom_params_t *p);
void persist_bf_add(server_t *s, const char *name, size_t len, const char *const *keys,
                    const size_t *lens, size_t n);
/* REC_BF_ROTATE / REC_BF_RESET: a filter-wide change by name. */
void persist_bf_named(server_t *s, int type, const char *name, size_t len);

/* Writes pending records (and fsyncs as the policy and force_sync say).
 * 0 if everything pending is durable enough to reply; -1 if the write
 * failed (records stay pending, replies must wait). */
int persist_flush(server_t *s);
/* Once a second: background fdatasync for everysec. */
void persist_tick(server_t *s, uint64_t now_ms);
/* Snapshot now; 0 or -1 with err. */
int persist_snapshot(server_t *s, char *err, size_t errlen);

/* ---- filters (commands.c) ------------------------------------------------ */
/* The open handle of filter name, or NULL (rc: RB_ENOENT or an error). */
rb_bloom_t *rbd_filter(server_t *s, const char *name, size_t len, int *rc);
/* Reserve + log; secret generated here so the log can replay it. */
int rbd_filter_reserve(server_t *s, const char *name, size_t len, rb_bloom_params_t *p);
void rbd_filters_close(server_t *s);
/* Once a second: rotate the aging filters whose window has passed. */
void rbd_filters_tick(server_t *s, uint64_t now_unix);

/* ---- commands (commands.c) ----------------------------------------------- */
void rbd_execute(server_t *s, client_t *c, size_t argc, const char **argv, const size_t *argl);

/* ---- configuration (main.c) ------------------------------------------------ */
/* Defaults, file, command-line overrides: the start-up and SIGHUP path. */
int rbd_load_config(rbd_config_t *cfg, char *err, size_t errlen);

/* ---- server (server.c) ---------------------------------------------------- */
int server_listen(server_t *s, char *err, size_t errlen);
int server_run(server_t *s);
void server_close(server_t *s);
/* 1 if uid/gid may run mutations under the current configuration. */
int server_may_write(const server_t *s, uid_t uid, gid_t gid);

/* Creates the directory of path (whole = 0: path's parent; 1: path
 * itself) and its missing parents with mode, judging every level by the
 * trust rule (dirs.c): 0, or -1 with the reason, naming the level, in
 * err. */
int rbd_make_dir(const char *path, int whole, mode_t mode, char *err, size_t errlen);

#endif /* RBD_H */
