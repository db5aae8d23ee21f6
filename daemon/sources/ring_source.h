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
 * run by a writer thread while the loop goes on, each comparing the
 * mod_revision of the one key it changes with the one this host has seen
 * (a concurrent change of the same node or mode: the loser is told,
 * -CONFLICT); a change is acknowledged after etcd committed it and this
 * host applied it: the source is an op sink that takes ring changes and
 * completes their tickets (sink.h; the client's later requests wait for
 * that answer).  With etcd unreachable or without quorum,
 * readers keep the last table and changes are refused (docs/design.md,
 * "Beyond one host: the ring from etcd").
 *
 * Keys under the prefix: "mode" = "<mode> <replicas>" (none: the
 * daemon's ring-mode / ring-replicas), "node/<name>" = "<weight> <state>"
 * (state: up, down or drain).  Other keys are another tool's and are
 * ignored; a key of those two whose name or value cannot be used, and any
 * key with a NUL byte, is skipped with a warning naming it and counted
 * (INFO etcd_keys_skipped): never does it stop the load or the watch.
 */

/* In the state directory: the table's last confirmation by etcd. */
#define RBD_SOURCE_CONFIRM_FILE "etcd-confirmed"
#ifndef RBD_RING_SOURCE_H
#define RBD_RING_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "aof.h"
#include "ops.h"
#include "rbd_config.h"
#include "sink.h"
#include "state.h"

typedef struct rbd_source rbd_source_t;

/* What INFO and RING.INFO show. */
typedef struct rbd_source_status {
    int connected;              /* the last request to etcd succeeded */
    int64_t revision;           /* the newest revision the thread has read */
    int64_t applied;            /* the revision the published table is of */
    uint64_t confirmed_ms;      /* unix ms of the table's last confirmation by a
                                   quorum, kept across restarts (ring_source.c) */
    size_t skipped;             /* keys under the prefix it cannot use (a NUL in
                                   the key, a bad node name or value, a bad mode) */
    char skipped_last[700];     /* the last one skipped, escaped, and why */
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
 * not the one applied (a RING_SYNC op, shown to the sinks: logged).  0,
 * or the op's error. */
int rbd_source_sync(rbd_source_t *s, rbd_state_t *st);

/* The source as an op sink (sink.h), registered with its rbd_source_t
 * and rbd_source_fd:
 *   accept  a ring change (RING_ADD, REMOVE, WEIGHT, MODE, STATE; ops.c's
 *           rbd_op_changes_ring) is taken (RBD_SINK_DEFERRED) and made in
 *           etcd by the source's writer thread (one transaction comparing
 *           the changed key's mod_revision with what this host has read),
 *           the loop going on meanwhile; RB_EEXIST / RB_ENOENT (answered
 *           now, as for a local change); RBD_SINK_REPLY (etcd not
 *           reachable, RING.SLOTS, a name etcd cannot hold, no ticket);
 *           RB_ENOMEM.  Every other op is applied here (RING_SYNC too).
 *   poll, tick  publish what the thread read (rbd_source_sync), then
 *           complete the ticket of each change that is done: once this
 *           host applied its revision, or 2 s after its commit, or at once
 *           if it failed (the reply: OK, -CONFLICT or -ERR). */
extern const rbd_sink_ops_t rbd_source_sink;

void rbd_source_status(rbd_source_t *s, rbd_source_status_t *out);

#endif /* RBD_RING_SOURCE_H */
