/*
 * ring_source_impl.h - what ring_source.c (the source thread, the writer
 * thread, start and stop), ring_source_map.c (the source thread's key map
 * and the views built from it) and ring_source_loop.c (the event loop's
 * side: publishing, changes) share: the source's state and its types.
 * Who owns what is written beside each field (ring_source.c's head has
 * the rule).
 */
#ifndef RBD_RING_SOURCE_IMPL_H
#define RBD_RING_SOURCE_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "etcd.h"
#include "ring_source.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define PROBE_MS       3000   /* a watch this quiet is checked by a range */
#define APPLY_WAIT_MS  2000   /* a change waits this long to be applied here */
#define SKIP_WARNINGS  10     /* skipped-key warnings a load or batch writes */
#define CONFIRM_WRITE_MS 1000 /* the confirmation file's writes, at most one this often */

/* What a key under the prefix is to the source (ring_source.c's
 * classify): a foreign key (outside "mode" and "node/...") is not kept;
 * one of the schema whose name or value cannot be used, or any key with a
 * NUL byte, is kept as ENTRY_BAD, to be counted (INFO) until it is gone. */
enum { ENTRY_MODE, ENTRY_NODE, ENTRY_BAD };

typedef struct entry {          /* one key under the prefix, as etcd has it */
    char *key;                  /* klen bytes (a NUL may be among them), then a NUL */
    size_t klen;
    int kind;                   /* ENTRY_* */
    uint32_t a, b;              /* MODE: mode, replicas; NODE: weight, state */
    int64_t mod_rev;
} entry_t;

typedef struct member {
    char *name;
    size_t len;
    uint32_t weight, state;
    int64_t mod_rev;
} member_t;

typedef struct job {            /* a RING.* change handed to the writer thread */
    struct job *next;
    uint64_t ticket;            /* its deferred reply (sink.h) */
    char key[RB_NODE_NAME_MAX + 8], val[64];
    int del;                    /* a delete (val unused) */
    int64_t cmp, rev, cur;      /* compared mod_revision; the result's */
    int rc;                     /* the txn's: 0 or an etcd error */
    char err[600];
    uint64_t done_ms;           /* monotonic, when the txn returned */
} job_t;

typedef struct view {           /* the membership as of one revision */
    int64_t revision;
    rb_ring_mode_t mode;
    uint32_t replicas;
    int64_t mode_rev;           /* 0: no mode key (the daemon's defaults); a
                                   skipped one's too (a change replaces it) */
    int64_t skipped_mode;       /* the mode key's mod_rev when the loop left it
                                   out for a limit (ring_source_loop.c), else 0 */
    int limited;                /* the loop kept it within the limits (once: a
                                   view whose publish failed comes back) */
    member_t *m;                /* in key order */
    size_t n;
    size_t skipped;             /* keys of the map it cannot use (ENTRY_BAD) */
    member_t *bad;              /* the node keys among them whose name is usable
                                   (their value is not): name and mod_rev */
    size_t nbad;
} view_t;

struct rbd_source {
    const char **eps;
    char *ep_buf;
    rbd_etcd_opts_t opts;
    rbd_etcd_t *watch_client, *write_client;
    rb_ring_mode_t dmode;
    uint32_t dreplicas;
    pthread_t th;
    int started;
    atomic_int stop;
    int efd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    view_t *latest;             /* under mu: the thread's newest, not yet taken */
    rbd_source_status_t st;     /* under mu */
    size_t over_limit;          /* under mu: the keys of the applied view the
                                   loop left out for a limit (st.skipped: those
                                   of the newest view the thread could not use) */
    view_t *applied;            /* loop: what the published table is of */
    entry_t *map;               /* thread: sorted by key (etcd's byte order) */
    size_t n, cap;
    unsigned warn_left;         /* thread: skipped-key warnings left in this load or batch */
    size_t warn_held;           /* thread: those not written for want of it */
    char *confirm_path;         /* <dir>/etcd-confirmed (ring_source.c, "confirmation") */
    int64_t confirm_rev;        /* thread: what the file says now */
    uint64_t confirm_ms;
    int confirm_warned;         /* thread: a failed write was logged */
    pthread_t wth;              /* the writer thread: runs the jobs' txns */
    int wstarted;
    pthread_cond_t wcv;         /* under mu: a job to run, or stop */
    job_t *todo, *done;         /* under mu: to run (FIFO), run (any order) */
    job_t *waiting;             /* loop: committed, not yet applied here */
    uint64_t tick_ms;           /* loop: monotonic ms of the last tick that ran */
};

/* ring_source_map.c, the source thread's (the view functions any
 * thread's, on a view it owns). */
void rbd_source_view_free(view_t *v);
void rbd_source_map_clear(rbd_source_t *s);
/* Puts (val != NULL) or deletes key (klen bytes): a key the source uses
 * or cannot use is kept (the latter logged), a foreign one is not.  0,
 * or -1 out of memory. */
int rbd_source_map_set(rbd_source_t *s, const char *key, size_t klen, const char *val,
                       size_t vlen, int64_t mod_rev);
/* Before and after a load or watch batch: the warnings held back are
 * counted in one line, and SKIP_WARNINGS may be written again. */
void rbd_source_warn_reset(rbd_source_t *s);
/* The membership the map holds, as of revision rev.  NULL: out of memory. */
view_t *rbd_source_view_build(const rbd_source_t *s, int64_t rev);
/* b (len bytes) as printable ASCII in out (cap bytes): \\, ' and bytes
 * outside 0x20..0x7e as \xHH, cut with "..." where it does not fit. */
void rbd_source_escape(char *out, size_t cap, const char *b, size_t len);
/* A key under the prefix the ring is built without (klen bytes, its
 * mod_revision, why): INFO's etcd_last_skipped, and a warning naming it
 * when warn.  Any thread (it takes s->mu). */
void rbd_source_note_skipped(rbd_source_t *s, const char *key, size_t klen, int64_t mod_rev,
                             const char *why, int warn);

#endif /* RBD_RING_SOURCE_IMPL_H */
