/*
 * filter_source.h - `filter-source nats`: the filters whose names match
 * nats-filters are replicated through one NATS JetStream stream, shared
 * by the ringbloomd of every host (filter_source.c: the NATS side;
 * filter_source_loop.c: the event loop's).
 *
 * The stream is the commit point.  A write to a replicated filter is not
 * applied where it is made: the source, an op sink (sink.h), takes its op
 * (RBD_SINK_DEFERRED), frames it as a log record (record.h, the bytes the
 * log holds) and, at the end of the loop turn, publishes the turn's
 * records as one message on subject <nats-stream>.ops.  Every daemon, the
 * writer's included, follows the stream with an ordered consumer and
 * applies each message, in sequence order, as one unit through the same
 * code as a local write (rbd_op_from_record, rbd_op_run inside
 * rbd_op_txn_begin / _end, then REPL_POS with the message's sequence:
 * ops_repl.c), so every host that applied sequence N holds the same bits,
 * and a write's answer (BF.ADD's new or not) is the apply's at its
 * sequence, the same on every host.  The writer's tickets are completed
 * when its own message comes back (matched by its Nats-Msg-Id), or with
 * an error if the stream refused it or did not answer in nats-timeout
 * (then its outcome is unknown: the stream may still hold it, and then
 * every host applies it), always within nats-timeout + 500 ms.  Nothing
 * is applied or acknowledged before the stream has the message: there is
 * no write acknowledged locally and missing from the stream.
 *
 * Every nats-snapshot-every messages a snapshot of the replicated filters
 * is stored in the stream <nats-stream>_SNAP and the stream purged behind
 * the one before; a host whose next message the stream no longer holds
 * bootstraps from the newest (filter_source_snap.c).
 *
 * What crosses from NATS is input (filter_source_check.c): a message
 * applies only if its records are whole, replicated, inside this host's
 * nats-filters and within its max-command-bytes (else it is skipped on
 * every host alike); the stream's identity and nats-filters come from
 * its description, read only from an answer a quorum stands behind; a
 * snapshot is loaded only if its manifest lies within the stream's
 * history and its parts match it.
 *
 * Replicated in this version: BF.RESERVE, BF.ADD, BF.MADD, BF.INSERT
 * (ops BF_RESERVE and BF_ADD).  Any other change of a replicated name is
 * refused with a reply that says so; so are writes inside MULTI/EXEC and
 * an aging filter with a window (each host's clock would rotate it).
 * docs/design.md, "Beyond one host: filters from NATS JetStream", argues
 * the order, the commit point and the faults.
 */
#ifndef RBD_FILTER_SOURCE_H
#define RBD_FILTER_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "rbd_config.h"
#include "sink.h"
#include "state.h"

typedef struct rbd_fsource rbd_fsource_t;

/* What INFO's Replication section shows. */
typedef struct rbd_fsource_status {
    int connected;              /* the NATS connection is up */
    int ready;                  /* the stream exists and is followed */
    int healthy;                /* the last publish (or probe) was acknowledged */
    int halted;                 /* applying stopped (halt_why): writes refused */
    uint64_t applied;           /* the last sequence applied here */
    uint64_t last_seq;          /* the newest sequence seen (acks, deliveries) */
    uint64_t stream_id;         /* the stream's incarnation (XXH3-64 of name, created) */
    uint64_t last_ack_ms;       /* unix ms of the last PubAck (0: none yet) */
    uint64_t last_contact_ms;   /* unix ms the stream last answered: a PubAck, or the
                                   stream's state asked for every 2 s when idle (0: never) */
    uint64_t published, acked;  /* messages handed to the stream, acknowledged */
    uint64_t refused;           /* writes refused (no quorum, not ready, ...) */
    uint64_t skipped;           /* messages not applied (corrupt, unknown record, a name
                                   outside nats-filters, a reserve past max-command-bytes) */
    uint64_t outside;           /* ... of them: a record named a filter outside nats-filters */
    uint64_t inflight;          /* writes awaiting their message's apply */
    uint64_t first_seq;         /* the stream's first sequence, as last seen */
    uint64_t snap_seq;          /* the newest snapshot stored or bootstrapped from */
    uint64_t snaps_taken;       /* snapshots this host took (dumped) */
    uint64_t snaps_published;   /* ... and stored in the snapshot stream */
    uint64_t boot_seq;          /* the snapshot this host last bootstrapped from (0: none) */
    char skipped_last[256];     /* the last skipped: its sequence and why */
    char server[256];           /* the server connected to ("" none) */
    char error[512];            /* why the last NATS call failed ("" none) */
    char halt_why[512];
} rbd_fsource_status_t;

/* Checks the settings, starts the NATS thread (it connects, creates the
 * streams if missing, follows the stream from the sequence the segment
 * applied: lib/shm/seg_repl.h, or from a snapshot) and registers nothing: main.c registers the sink
 * row below with rbd_fsource_fd.  0, or -1 with err. */
int rbd_fsource_start(rbd_fsource_t **out, const rbd_config_t *cfg, rbd_state_t *st, char *err,
                      size_t errlen);
/* Stops the thread and frees s (NULL: nothing); open tickets stay with
 * the registry (rbd_sinks_free). */
void rbd_fsource_stop(rbd_fsource_t *s);
/* The descriptor the loop watches: readable when messages arrived or a
 * publish returned. */
int rbd_fsource_fd(const rbd_fsource_t *s);
void rbd_fsource_status(rbd_fsource_t *s, rbd_fsource_status_t *out);

/* The source as an op sink (sink.h), registered with its rbd_fsource_t
 * and rbd_fsource_fd:
 *   accept  an op naming a replicated filter: BF_RESERVE and BF_ADD are
 *           taken (RBD_SINK_DEFERRED) into the turn's message; any other
 *           is refused (RBD_SINK_REPLY), as is any while the stream is not
 *           followed yet, halted, or without quorum (the last publish
 *           failed: refused at once, naming the servers and why, until a
 *           probe is acknowledged).  The ops the source applies itself,
 *           and every op of another name, are applied here.
 *   flush   hands the turn's message to the NATS thread (never holds
 *           the replies).
 *   poll    applies the messages delivered, in order, and completes the
 *           tickets of this host's: with the apply's results, or the
 *           publish's error.
 *   tick    (every 100 ms) as poll, and answers every write not answered
 *           within nats-timeout + FS_REPLY_MARGIN_MS of being taken with
 *           what is known of it: never sent (nothing written), sent and
 *           not acknowledged (outcome unknown), or held by the stream and
 *           not applied here yet. */
extern const rbd_sink_ops_t rbd_fsource_sink;

/* NATS.SKIP seq: this host is halted on stream message seq, of a newer
 * Rb-Format; a REPL_SKIP record naming it is published (a message of its
 * own), and every host halted on it, this one included, skips it once the
 * stream delivers that record (counted and logged on each).  client's
 * reply waits for the stream's ack (sink.h's ticket).  0, or -1 with the
 * reply line in err (not halted on seq, or the source refused). */
int rbd_fsource_skip(rbd_fsource_t *s, rbd_state_t *st, uint64_t seq, uint64_t client,
                     char *err, size_t cap);

#endif /* RBD_FILTER_SOURCE_H */
