/*
 * filter_source_impl.h - what filter_source.c (the NATS thread: connect,
 * stream, consumer callback, publisher), filter_source_start.c (start,
 * stop, status) and filter_source_loop.c (the event loop's side: the sink
 * row, applying, tickets) share: the source's state and its types.  Who
 * owns a field is written beside it: "mu" is under s->mu, "loop" the
 * event loop's alone, "thread" the NATS thread's alone, "const" set before
 * the thread starts.
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
#define FS_NO_LEADER_WAIT_MS 50    /* a publish no one answered is tried again after */
#define FS_RX_MAX_BYTES (64u << 20) /* delivered, not yet applied: the callback waits past it */
#define FS_APPLY_TURN   256        /* messages one loop turn applies at most (then it wakes again) */
#define FS_MAX_SERVERS  16

/* One message this host publishes: the records of the ops one loop turn
 * took, and their tickets, in order (ticket i answers record i). */
typedef struct fs_batch {
    struct fs_batch *next;         /* mu: in s->todo or s->done */
    struct fs_batch *snext;        /* loop: in s->sent (every batch queued, until freed) */
    uint64_t no;                   /* const once queued: its Nats-Msg-Id is origin.no */
    unsigned char *buf;            /* the records, back to back */
    size_t len, cap;
    uint64_t *tickets;
    size_t n, tcap;
    /* set by the thread before it moves the batch to s->done */
    int pub_rc;                    /* 0 acknowledged, else the publish failed */
    uint64_t seq;                  /* acknowledged: the stream's sequence */
    char err[1024];                /* failed: the reply line */
    /* loop */
    int pub_done;                  /* the thread gave it back */
    int applied;                   /* its message came back and applied */
    uint64_t ack_ms;               /* monotonic ms it came back acknowledged */
} fs_batch_t;

/* One message delivered by the consumer, copied off the library's. */
typedef struct fs_rx {
    struct fs_rx *next;
    uint64_t seq;
    int format;                    /* Rb-Format (0: absent or not a number) */
    uint64_t origin, no;           /* from Nats-Msg-Id "origin.no" (origin 0: none) */
    size_t len;
    unsigned char data[];
} fs_rx_t;

struct rbd_fsource {
    /* const */
    char *servers[FS_MAX_SERVERS];
    int nservers;
    char server_list[1024];        /* for messages: the servers, comma-separated */
    char stream[64], subject[80];
    char glob[256];                /* nats-filters (fnmatch(3)) */
    uint32_t timeout_ms;
    uint64_t max_bytes;
    char creds[4096], cacert[4096], cert[4096], key[4096];
    uint64_t origin;               /* this daemon's, random, != 0 */
    uint64_t applied0, stream0;    /* the segment's position at start */
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
    char thread_halt[512];         /* set-up found it cannot follow the stream: why */
    uint64_t stream_id;            /* the stream's incarnation, once ready */
    uint64_t last_seq;
    uint64_t last_ack_ms;
    uint64_t published, acked;
    char error[512];
    /* loop */
    fs_batch_t *building;          /* this turn's */
    fs_batch_t *sent;              /* queued or published, until answered and given back */
    uint64_t next_no;
    int applying;                  /* the loop applies a message: let its ops through */
    int halted;
    char halt_why[512];
    uint64_t applied;
    uint64_t refused, skipped;
    char skipped_last[256];
    rbd_keys_t keys;
};

/* filter_source.c: the NATS thread's body (arg: the source), started by
 * rbd_fsource_start (filter_source_start.c). */
void *rbd_fsource_thread(void *arg);
/* filter_source.c, for the loop: hands b to the NATS thread (FIFO). */
void rbd_fsource_queue(rbd_fsource_t *s, fs_batch_t *b);
/* Whether filter name (len bytes) matches glob (fnmatch(3); a name with
 * a NUL byte never does). */
int rbd_fsource_matches(const char *glob, const char *name, size_t len);
/* Makes the loop's descriptor readable (its poll runs). */
void rbd_fsource_wake(rbd_fsource_t *s);
/* Frees a batch (the loop's, once given back). */
void rbd_fsource_batch_free(fs_batch_t *b);

#endif /* RBD_FILTER_SOURCE_IMPL_H */
