/*
 * ring_source.h - `ring-source etcd`: the ring's membership kept in etcd,
 * shared by the ringbloomd of every host (ring_source.c).
 *
 * A thread follows the keys under etcd-prefix (range, then watch; a
 * compacted revision reloads) and hands the event loop the membership as
 * of each revision: the loop publishes it through a RING_SYNC op (ops.c,
 * log record 23), rebuilt from nothing in key order, so every host that
 * applied revision R publishes the same table, recording R in it
 * (rb_ring_source_revision).  RING.* changes become etcd transactions,
 * each comparing the mod_revision of the one key it changes with the one
 * this host has seen (a concurrent change of the same node or mode: the
 * loser is told, -CONFLICT); a change is acknowledged after etcd committed
 * it and this host applied it.  With etcd unreachable or without quorum,
 * readers keep the last table and changes are refused (docs/design.md,
 * "Beyond one host: the ring from etcd").
 *
 * Keys under the prefix: "mode" = "<mode> <replicas>" (none: the
 * daemon's ring-mode / ring-replicas), "node/<name>" = "<weight> <state>"
 * (state: up, down or drain).
 */
#ifndef RBD_RING_SOURCE_H
#define RBD_RING_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "aof.h"
#include "ops.h"
#include "rbd_config.h"
#include "state.h"

typedef struct rbd_source rbd_source_t;

/* What INFO and RING.INFO show. */
typedef struct rbd_source_status {
    int connected;              /* the last request to etcd succeeded */
    int64_t revision;           /* the newest revision the thread has read */
    int64_t applied;            /* the revision the published table is of */
    uint64_t last_ok_ms;        /* monotonic ms of the last success, 0: none */
    char endpoint[256];         /* the endpoint in use */
    char error[512];            /* why the last request failed ("" if none) */
} rbd_source_status_t;

/* Opens the clients and starts the thread; applied: the revision the
 * table recovered at start-up is of (0: none).  0, or -1 with err. */
int rbd_source_start(rbd_source_t **out, const rbd_config_t *cfg, int64_t applied, char *err,
                     size_t errlen);
void rbd_source_stop(rbd_source_t *s);
/* The descriptor the event loop watches (readable: a newer membership). */
int rbd_source_fd(const rbd_source_t *s);

/* Event loop: publishes the newest membership the thread read, if it is
 * not the one applied (a RING_SYNC op, logged).  0, or the op's error. */
int rbd_source_sync(rbd_source_t *s, rbd_state_t *st, rbd_aof_t *aof);

/* rbd_source_change's error whose reply is in why. */
#define RBD_SOURCE_EREPLY (-1000)

/* Event loop: ring change op (RING_ADD, REMOVE, WEIGHT, MODE, STATE) made
 * in etcd, then waited for until this host applied it (at most 2 s; the
 * change holds in etcd either way).  Blocks the loop for the transaction
 * (a few ms; at most etcd-timeout per endpoint when etcd fails under it).
 * RB_OK; RB_EEXIST / RB_ENOENT (replied as a local change's); or
 * RBD_SOURCE_EREPLY with the reply's error line in why ("CONFLICT ...",
 * "ERR ..."). */
int rbd_source_change(rbd_source_t *s, rbd_state_t *st, rbd_aof_t *aof, const rbd_op_t *op,
                      char *why, size_t cap);

void rbd_source_status(rbd_source_t *s, rbd_source_status_t *out);

#endif /* RBD_RING_SOURCE_H */
