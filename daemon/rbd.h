/*
 * rbd.h - ringbloomd's process-wide state, shared by its modules:
 *   main.c      start-up, signals, restore, shutdown
 *   server.c    the epoll loop, clients, limits, access control
 *   commands.c  the command table and every command
 *   persist.c   append-only log, group commit, snapshots, restore
 *   rbd_log.c   logging to stderr or syslog
 *   dirs.c      the directories of its files: created, ownership checked
 *   segwatch.c  keeps the segment reachable by its name in /dev/shm
 */
#ifndef RBD_H
#define RBD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rbd_config.h"
#include "resp.h"
#include "ringbloom.h"

/* A rate limiter for one kind of message: rbd_log_every logs at most one
 * line per interval_ms and counts the rest into the next line it logs. */
typedef struct rbd_ratelog {
    uint64_t last_ms;          /* monotonic ms of the last line logged */
    uint64_t suppressed;       /* messages dropped since */
    int logged;
} rbd_ratelog_t;
typedef struct client {
    int fd;
    uint64_t id;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    resp_buf_t in;        /* received, not yet executed */
    resp_parser_t parser;
    resp_buf_t out;       /* replies not yet sent */
    uint64_t mem;         /* bytes of its buffers, counted in client_mem */
    uint64_t last_active_ms; /* last complete request or reply byte sent */
    int closing;          /* close once out is flushed */
    int writing;          /* registered for EPOLLOUT */
    int can_write;        /* may run mutations (decided at accept) */
    int awaits_log;       /* a reply in out acknowledges a record not yet
                             durable: out waits for the log (P1) */
    int paused;           /* complete requests wait in `in` until out
                             drains below client-output-soft-limit */
} client_t;

typedef struct persist {
    char dir[4096];
    int dirfd;
    int logfd;
    uint64_t log_id;           /* id of the log at appendonly.rbl (0: none) */
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
    int spare_fd;              /* held to tell a client "no" when out of fds */
    int accept_paused;         /* lfd left the epoll set until accept_resume_ms */
    uint64_t accept_resume_ms;
    uint64_t fd_limit;         /* RLIMIT_NOFILE soft limit in force */
    client_t **clients;        /* indexed by fd */
    size_t clients_cap;
    uint32_t nclients;
    uint64_t client_mem;       /* every client's buffers together */
    int resume_pending;        /* some client is paused with output drained */
    rbd_ratelog_t log_accept, log_evict, log_segment;
    int seg_linked;            /* the name in /dev/shm leads to seg */
    uint64_t seg_republished;  /* times the state was republished under it */
    uint64_t next_client_id;
    uint64_t start_ms;
    uint64_t last_heartbeat_ms;
    int shutdown;              /* 1: leave the loop */
    int shutdown_save;         /* snapshot before leaving */
    /* stats */
    uint64_t commands, connections, rejected_clients, denied, bf_adds, ring_changes,
        protocol_errors, timeouts, evicted_clients, output_limit_clients;
} server_t;

/* ---- logging (rbd_log.c) ------------------------------------------------- */
void rbd_log_init(int foreground, int level);
void rbd_log_level(int level);
void rbd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rbd_log_every(rbd_ratelog_t *r, uint64_t interval_ms, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
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
 * log into a new one.  ignore_corrupt: whatever would refuse the start is
 * discarded instead - its file moved aside to <file>.corrupt-<time>, never
 * without that copy - and the log says what was discarded. */
int persist_start(server_t *s, int ignore_corrupt, char *err, size_t errlen);
void persist_close(server_t *s);
/* What a snapshot says about the logs around it (format 2; docs/design.md,
 * "Start-up"). */
typedef struct persist_snap {
    const char *path;      /* the snapshot's path, for messages (also when missing) */
    int present;           /* 0: there is none (missing, or discarded) */
    unsigned version;      /* 1: the old format, whose header says nothing of prev_log */
    uint64_t next_log;     /* id of the log that continues it */
    uint64_t prev_log;     /* id of the log it superseded; 0: none, or version 1 */
} persist_snap_t;

/* What loading a log did. */
typedef struct persist_replay {
    uint64_t log_id;       /* from its header (0 if the header is bad) */
    uint64_t records;      /* records applied */
    size_t applied;        /* bytes of it applied, header included (0: none) */
    int torn;              /* a torn tail was ignored (cfg.load_truncated) */
    int skipped;           /* not replayed: PERSIST_SUPERSEDED or PERSIST_UNVERIFIED */
} persist_replay_t;

enum {
    PERSIST_SUPERSEDED = 1,   /* the log the snapshot superseded: contained in it */
    PERSIST_UNVERIFIED = 2    /* old format on both sides, ids differ: taken for that
                                 log on the word of unchecksummed headers */
};

/* The two halves of persist_start's restore, on the bytes of the files
 * (path only names them in messages).  Snapshot: checks the header (its
 * checksum, format 2), length and checksum and restores the dump into a
 * new hidden segment of instance (NULL: a private one) in s->seg, filling
 * snap (whose path the caller set; present = 1); on error s->seg is
 * untouched (NULL) and nothing is left in /dev/shm.  data must be 8-byte
 * aligned.  Log: checks the header and whether the log fits snap; replays
 * the log that continues snap into s->ring and s->seg; skips the one snap
 * superseded (r->skipped); anything else - a bad header, a log of another
 * snapshot, a log without its snapshot (snap->present 0), a record that
 * does not parse, fails its checksum or does not apply (a filter or node
 * that does not exist, or already does) - is an error naming the file,
 * offset and ids.  A torn tail (a record cut short by the end of the file,
 * or zeros a crash left) is ignored if cfg.load_truncated, else an error.
 * On an error what was replayed stays applied (r->records records, the
 * first r->applied bytes): the caller discards the segment, or keeps them
 * (--ignore-corrupt).  Both return 0, or -1 with err. */
int persist_load_snapshot_buf(server_t *s, const char *instance, const char *path,
                              const void *data, size_t len, persist_snap_t *snap,
                              char *err, size_t errlen);
int persist_load_log_buf(server_t *s, const char *path, const void *data, size_t len,
                         const persist_snap_t *snap, persist_replay_t *r, char *err,
                         size_t errlen);

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

/* ---- the segment's name (segwatch.c) ------------------------------------- */
/* Once a second: if the instance's name in /dev/shm no longer leads to
 * s->seg, republishes the state under it (logged, INFO). */
void rbd_segment_watch(server_t *s);

/* ---- configuration (main.c) ------------------------------------------------ */
/* Defaults, file, command-line overrides: the start-up and SIGHUP path. */
int rbd_load_config(rbd_config_t *cfg, char *err, size_t errlen);

/* ---- server (server.c) ---------------------------------------------------- */
/* Raises the descriptor limit to what max-clients needs, or lowers
 * max-clients to fit the limit (logged); at start and on SIGHUP. */
void server_fit_fd_limit(server_t *s);
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
