/*
 * filter_source_impl.h - what the files of `filter-source nats` share:
 * the source's state and its types.  filter_source.c (the NATS thread:
 * connect, stream, consumer callback, publisher), filter_source_start.c
 * (start, stop, status), filter_source_loop.c (the event loop's side:
 * the sink row, the answers), filter_source_apply.c (the loop applying
 * what the stream delivers), filter_source_check.c (what crosses from
 * NATS, checked), filter_source_snap.c (snapshots), filter_source_nats.c
 * and filter_source_common.c (what the others share).  Who owns a field
 * is written beside it: "mu" is under s->mu, "loop" the event loop's
 * alone, "thread" the NATS thread's alone, "const" set before the thread
 * starts.
 */
#ifndef RBD_FILTER_SOURCE_IMPL_H
#define RBD_FILTER_SOURCE_IMPL_H

#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>

#include "filter_source.h"
#include "ops.h"

#define FS_FORMAT       1          /* the Rb-Format this version writes and reads */
#define FS_MSG_MAX      (900u << 10) /* a message's records, at most (max_payload: 1 MiB) */
#define FS_RETRY_MS     500        /* the stream's set-up is retried this often */
#define FS_PROBE_MS     1000       /* without quorum, a probe this often */
#define FS_INFO_MS      2000       /* idle, the stream's state asked for this often */
#define FS_APPLY_BYTES  (8u << 20) /* ... and at most these bytes of them (but one) */
#define FS_NO_LEADER_WAIT_MS 50    /* a publish no one answered is tried again after */
#define FS_RX_MAX_BYTES (64u << 20) /* delivered, not yet applied: the callback waits past it */
#define FS_APPLY_TURN   256        /* messages one loop turn applies at most (then it wakes again) */
#define FS_MAX_SERVERS  16
#define FS_SNAP_CHUNK   (512u << 10) /* a dump chunk in a snapshot part, at most */
#define FS_REPLY_MARGIN_MS 150     /* a write not answered by nats-timeout + this (from when it
                                      was taken) is answered by the loop's tick (every 100 ms):
                                      every replicated write is answered within nats-timeout +
                                      500 ms, scheduling included (docs/design.md, N3) */
#define FS_PUT_DUPLICATE (-2)      /* rbd_fsource_put: the stream held the Msg-Id already */

/* One message this host publishes: the records of the ops one loop turn
 * took, and their tickets, in order (ticket i answers record i). */
typedef struct fs_batch {
    struct fs_batch *next;         /* mu: in s->todo or s->done */
    struct fs_batch *snext;        /* loop: in s->sent (every batch queued, until freed) */
    uint64_t no;                   /* const once queued: its Nats-Msg-Id is origin.no */
    uint64_t origin;               /* const once queued: the loop's s->origin when it was made */
    uint64_t born_ms;              /* const once queued: monotonic ms its first write was taken;
                                      answered by born_ms + nats-timeout + FS_REPLY_MARGIN_MS */
    uint64_t reserve_bytes;        /* loop, while building: its reserves' heap (max-command-bytes
                                      bounds a message's, as the apply checks) */
    int control;                   /* const once queued: NATS.SKIP's, answered at its ack */
    unsigned char *buf;            /* the records, back to back */
    size_t len, cap;
    uint64_t *tickets;
    size_t n, tcap;
    /* set by the thread before it moves the batch to s->done */
    int pub_rc;                    /* 0 acknowledged, else the publish failed (or was not
                                      made: its time ran out first) */
    int dup;                       /* failed: the stream held a message with its Msg-Id */
    uint64_t seq;                  /* acknowledged: the stream's sequence */
    char err[1024];                /* failed: the reply line */
    /* loop */
    int pub_done;                  /* the thread gave it back */
    int answered;                  /* its writes were answered: by its message's apply, or an
                                      error (its apply, if it comes, then answers no one) */
} fs_batch_t;

/* One message delivered by the consumer, copied off the library's, or
 * one part of a snapshot fetched for a bootstrap (parts != 0: then seq is
 * the stream sequence the snapshot covers). */
typedef struct fs_rx {
    struct fs_rx *next;
    uint64_t seq;
    uint64_t gen;                  /* the consumer it came from (s->gen then) */
    uint32_t part, parts;          /* a snapshot's part: part of parts (0 of 0: a message) */
    int format;                    /* Rb-Format (0: absent or not a number) */
    uint64_t origin, no;           /* from Nats-Msg-Id "origin.no" (origin 0: none) */
    size_t len;
    unsigned char data[];
} fs_rx_t;

/* A snapshot of the replicated filters as of one stream sequence, on its
 * way to the snapshot stream (filter_source_snap.c): its parts' records
 * (BF_LOADCHUNK: each filter's dump), each part one message. */
typedef struct fs_snap {
    uint64_t seq;                  /* the stream sequence it covers */
    uint64_t stream_id;            /* of the stream it is a snapshot of */
    struct fs_part {
        unsigned char *buf;
        size_t len, cap;
    } *part;
    size_t n, cap;
    uint64_t bytes;                /* the parts' records in all */
    /* the thread's, once handed over */
    size_t next;                   /* the next part to publish */
    uint64_t first;                /* the snapshot stream's sequence of part 0 */
} fs_snap_t;

/* One ordered consumer of the stream: its callback's argument (the
 * generation tags what it delivers; freed with the source). */
typedef struct fs_consumer {
    struct rbd_fsource *s;         /* const */
    uint64_t gen;                  /* set before its subscription, then const */
    int subscribed;                /* thread: its subscription was made */
    struct fs_consumer *next;      /* thread */
} fs_consumer_t;

struct rbd_fsource {
    /* const */
    char *servers[FS_MAX_SERVERS];
    int nservers;
    char server_list[1024];        /* for messages: the servers, comma-separated */
    char stream[64], subject[80];
    char snap_stream[72];          /* <stream>_SNAP: the snapshots (filter_source_snap.c) */
    uint32_t snap_every;           /* nats-snapshot-every (0: none) */
    char glob[256];                /* nats-filters (fnmatch(3)) */
    uint32_t timeout_ms;
    uint64_t max_bytes;
    char creds[4096], cacert[4096], cert[4096], key[4096];
    uint64_t origin;               /* this daemon's, random, != 0 */
    uint64_t applied0, stream0;    /* the segment's position at start */
    const rbd_config_t *cfg;       /* the settings in force (loop: max-command-bytes) */
    rbd_state_t *st;
    int efd;
    pthread_t th;
    int started;
    atomic_int stop;
    /* thread */
    natsConnection *nc;
    jsCtx *js;
    natsSubscription *sub;
    uint64_t probe_ms;
    uint64_t followed;             /* the stream identity this host applies from (stream0,
                                      then the first set-up's): another is never followed */
    uint64_t last_ack;             /* the last PubAck's sequence: one below it goes backwards */
    uint64_t snap_refused;         /* the last manifest a bootstrap refused (logged once) */
    int adopt_tried;               /* a stream without a description was given one (or not) */
    /* mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fs_batch_t *todo, *todo_tail;  /* to publish, FIFO */
    fs_batch_t *done;              /* published or failed, any order */
    fs_rx_t *rx, *rx_tail;         /* delivered, in sequence order */
    size_t rx_bytes;               /* their payloads (<= FS_RX_MAX_BYTES but for one) */
    pthread_cond_t rx_cv;          /* the loop took some: a waiting callback goes on */
    int connected;                 /* the connection's callbacks: up or down */
    char server[256];              /* the server connected to */
    int ready;                     /* the stream exists and is followed */
    int healthy;                   /* the last publish or probe was acknowledged */
    char thread_halt[512];         /* set-up or a check found it cannot follow the stream: why
                                      ("" again once a later check finds it can) */
    int recheck;                   /* the stream's identity is to be checked at once (a
                                      reconnect, a gap, a sequence that went backwards) */
    uint64_t loop_applied;         /* the loop's s->applied as of its last turn */
    uint64_t stream_id;            /* the stream's incarnation, once ready */
    uint64_t gen;                  /* the consumer's generation: rx of another is dropped */
    fs_consumer_t *consumers;      /* thread: every one made (the newest first) */
    int resync;                    /* the loop asks for a new set-up from resync_from (its
                                      next message is gone from the stream) */
    uint64_t resync_from;
    fs_snap_t *snap_out;           /* a snapshot to publish (the thread frees it) */
    uint64_t snap_seq;             /* the newest snapshot published or seen */
    uint64_t snaps_published;
    uint64_t boot_seq;             /* the snapshot this host last bootstrapped from */
    uint64_t first_seq;            /* the stream's first sequence, as last seen */
    uint64_t last_seq;
    uint64_t last_ack_ms;
    uint64_t last_contact_ms;      /* unix ms the stream last answered (ack or info) */
    uint64_t info_ms;              /* monotonic ms of the last stream info asked */
    uint64_t published, acked;
    char error[512];
    /* loop */
    fs_batch_t *building;          /* this turn's */
    fs_batch_t *sent;              /* queued or published, until answered and given back */
    uint64_t next_no;
    int applying;                  /* the loop applies a message: let its ops through */
    int halted;                    /* 0, or why applying stopped: FS_HALT_* */
    uint64_t halt_seq;             /* FS_HALT_FORMAT: the message NATS.SKIP may skip */
    char halt_why[512];
    uint64_t applied;
    uint64_t snap_in;              /* a snapshot being applied (its sequence), part by part */
    uint64_t asked_gen;            /* the consumer a new set-up was asked for (ask_resync) */
    uint64_t snaps_taken;
    uint64_t refused, skipped;
    uint64_t outside;              /* messages skipped: a record named a filter outside
                                      nats-filters */
    char skipped_last[256];
    rbd_keys_t keys;
};

/* Why the loop stopped applying (s->halted). */
#define FS_HALT_FORMAT   1         /* a message of a newer Rb-Format (NATS.SKIP skips it) */
#define FS_HALT_SNAPSHOT 2         /* a snapshot's part that cannot be applied */
#define FS_HALT_THREAD   3         /* the thread's thread_halt: lifted when it clears */

/* What rbd_fsource_check_records found. */
#define FS_CHECK_OK      0
#define FS_CHECK_BAD     1         /* damaged, or a type the message may not carry */
#define FS_CHECK_OUTSIDE 2         /* a record names a filter outside nats-filters */
#define FS_CHECK_LIMIT   3         /* reserves past this host's max-command-bytes */

/* A stream's identity as a stream-info answer gives it (rbd_fsource_ident). */
typedef struct fs_ident {
    uint64_t id;                   /* its incarnation: its description's id, or for a stream
                                      made before descriptions, XXH3-64 of name and creation */
    int described;                 /* the description is ringbloom's (id and filters) */
    char filters[256];             /* the nats-filters it was made for (described) */
} fs_ident_t;

/* Who calls whom (no file calls a file above it): filter_source_start.c
 * -> filter_source.c (the thread) -> filter_source_snap.c ->
 * filter_source_check.c, filter_source_nats.c -> filter_source_common.c;
 * filter_source_loop.c -> filter_source.c (the queue),
 * filter_source_apply.c -> filter_source_snap.c, filter_source_check.c. */

/* ---- filter_source.c ---- */
/* The NATS thread's body (arg: the source), started by rbd_fsource_start
 * (filter_source_start.c). */
void *rbd_fsource_thread(void *arg);
/* For the loop: hands b to the NATS thread (FIFO). */
void rbd_fsource_queue(rbd_fsource_t *s, fs_batch_t *b);

/* ---- filter_source_apply.c (the loop's) ---- */
/* One delivery rx of consumer generation gen (the current one; stream_id
 * its stream) handled: applied if it is the next message (or part of the
 * snapshot being applied), a gap or a sequence gone backwards sent to the
 * thread, dropped while halted (but NATS.SKIP's record looked for). */
void rbd_fsource_dispatch(rbd_fsource_t *s, rbd_state_t *st, const fs_rx_t *rx, uint64_t gen,
                          uint64_t stream_id);
/* The thread's halt (line: set-up or a check found the stream cannot be
 * followed) halts the loop; once it is "" again, the loop goes on. */
void rbd_fsource_thread_halt(rbd_fsource_t *s, const char *line);

/* ---- filter_source_snap.c ---- */
/* The loop's side.  After applying this host's message at seq (a
 * multiple of snap_every): the replicated filters dumped as a snapshot
 * at seq, for the thread (none while it still publishes the one before,
 * or if it would not fit the snapshot stream: logged). */
void rbd_fsource_snap_take(rbd_fsource_t *s, rbd_state_t *st, uint64_t seq, uint64_t stream_id);
/* Inside a snapshot's first part's TXN: every replicated filter deleted
 * (the snapshot then loads them all). */
void rbd_fsource_snap_clear(rbd_fsource_t *s, rbd_state_t *st);
/* The thread's side.  Set-up needs the snapshot (the stream holds no
 * message right after *from; its first is need): the newest complete one
 * of this stream (stream_id), which must cover at least up to need - 1
 * and no more than last (the stream's last sequence: a manifest past it
 * is forged or stale), its parts complete and consistent with it, is
 * fetched and queued as rx parts; *from becomes its sequence.  0, or -1
 * (refused or failed: retry; s->error says why). */
int rbd_fsource_snap_fetch(rbd_fsource_t *s, uint64_t stream_id, uint64_t need, uint64_t last,
                           uint64_t *from);
/* Publishes the next part of s->snap_out if there is one, or its
 * manifest once every part is stored, then purges what that made
 * unneeded.  Called unlocked, between writes. */
void rbd_fsource_snap_publish(rbd_fsource_t *s);

/* ---- filter_source_check.c ---- */
/* Whether records data[0..len) may be applied on this host: framed and
 * whole; of the types a message (part 0: BF_RESERVE, BF_ADD, REPL_SKIP)
 * or a snapshot's part (part 1: BF_LOADCHUNK) carries; each filter named
 * inside nats-filters; each reserve, and a message's reserves together,
 * within max_bytes (0: not checked).  FS_CHECK_*, and why (naming the
 * record) unless FS_CHECK_OK.  scratch: the decoder's keys (reused). */
int rbd_fsource_check_records(const rbd_fsource_t *s, const unsigned char *data, size_t len,
                              int part, uint64_t max_bytes, rbd_keys_t *scratch, char *why,
                              size_t cap);
/* Whether records data[0..len) are NATS.SKIP's skip of message seq of
 * stream stream_id (records already checked). */
int rbd_fsource_is_skip(const unsigned char *data, size_t len, uint64_t seq, uint64_t stream_id);
/* The identity si gives the stream, if the answer can decide it: 0 and
 * *id; -1 it cannot (no leader, or fewer than a majority of its peers
 * current: a minority server's answer; why says so); -2 its description
 * is not ringbloom's (why quotes it). */
int rbd_fsource_ident(const jsStreamInfo *si, const char *name, fs_ident_t *id, char *why,
                      size_t cap);
/* The description this version gives a stream it makes: its identity
 * (random) and nats-filters. */
void rbd_fsource_describe(char *out, size_t cap, uint64_t id, const char *glob);

/* ---- filter_source_nats.c ---- */
/* The text of a failed NATS call (its status, the JetStream error code,
 * the library's last error on this thread). */
void rbd_fsource_why(char *out, size_t cap, natsStatus st, jsErrCode jerr);
/* s->error (for INFO) set to "what: why", under mu. */
void rbd_fsource_error(rbd_fsource_t *s, const char *what, const char *why);
/* Message m (destroyed) copied into an rx, with its sequence and the
 * generation of the consumer it came from (out of memory: abort, as
 * skipping it would diverge). */
fs_rx_t *rbd_fsource_rx(natsMsg *m, uint64_t seq, uint64_t gen);
/* Stream si, made before descriptions (by an older ringbloomd), given
 * this version's: identity id (what its name and creation time gave, as
 * its hosts computed it) and this host's nats-filters.  Tried once; a
 * refusal (say, credentials that may not update a stream) is logged,
 * and the stream is then followed by its creation time alone. */
void rbd_fsource_adopt(rbd_fsource_t *s, jsStreamInfo *si, uint64_t id);
/* Publishes data[0..len) on subject with Rb-Format and, if not NULL,
 * msg_id and the headers hdr (name, value, ..., NULL), a publish no one
 * answered (no leader) tried again until deadline (monotonic ms; 0: in
 * nats-timeout from now).  0 and *seq; FS_PUT_DUPLICATE and *seq when
 * the stream held a message with msg_id already (this one was not
 * stored); or the natsStatus with why. */
int rbd_fsource_put(rbd_fsource_t *s, const char *subject, const void *data, size_t len,
                    const char *msg_id, const char *const *hdr, uint64_t deadline,
                    uint64_t *seq, char *why, size_t cap);
/* Stream name found, or (unless make is 0) made with subjects (nsubj),
 * the discard policy (file storage, min(3, servers) replicas,
 * nats-max-bytes / 2) and description desc (NULL: none); *si its info.
 * 0; 1 not found (make 0); -1 (s->error says why). */
int rbd_fsource_stream(rbd_fsource_t *s, const char *name, const char **subjects, int nsubj,
                       int discard_old, const char *desc, int make, jsStreamInfo **si);

/* ---- filter_source_common.c ---- */
/* Whether filter name (len bytes) matches glob (fnmatch(3); a name with
 * a NUL byte never does). */
int rbd_fsource_matches(const char *glob, const char *name, size_t len);
/* An op's whole record (record.h: header, payload, seal): its length, and
 * with at != NULL the bytes written there (room for that length). */
size_t rbd_fsource_record(const rbd_op_t *op, unsigned char *at);
/* Makes the loop's descriptor readable (its poll runs). */
void rbd_fsource_wake(rbd_fsource_t *s);
/* Under mu: r at the end of the rx queue, its bytes counted. */
void rbd_fsource_rx_append_locked(rbd_fsource_t *s, fs_rx_t *r);
/* Frees a batch (the loop's, once given back). */
void rbd_fsource_batch_free(fs_batch_t *b);
/* Frees a snapshot (NULL: nothing). */
void rbd_fsource_snap_free(fs_snap_t *sn);

#endif /* RBD_FILTER_SOURCE_IMPL_H */
