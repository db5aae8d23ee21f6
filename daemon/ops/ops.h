/*
 * ops.h - every mutation of the served state, applied and shown to the op
 * sinks (sink.h: the log, the etcd source) in one place, and replayed
 * through the same code (ops.c).
 */
#ifndef RBD_OPS_H
#define RBD_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "aof.h"
#include "ringbloom.h"
#include "sink.h"
#include "state.h"
#include "txn.h"

/* An op's type is its log record's type byte: part of the log format
 * (docs/design.md, "Files in the state directory"), never renumbered or
 * reused. */
typedef enum rbd_op_type {
    RBD_OP_RING_ADD = 1,
    RBD_OP_RING_REMOVE = 2,
    RBD_OP_RING_WEIGHT = 3,
    RBD_OP_RING_MODE = 4,
    RBD_OP_BF_RESERVE = 5,
    RBD_OP_BF_ADD = 6,
    RBD_OP_BF_ROTATE = 7,      /* an aging rotation because its window passed */
    RBD_OP_BF_RESET = 8,
    RBD_OP_TXN = 9,            /* a transaction: its members' whole records */
    RBD_OP_BF_DELETE = 10,     /* DEL / UNLINK of a filter */
    RBD_OP_BF_LOADCHUNK = 11,  /* a chunk of BF.LOADCHUNK (header or data) */
    RBD_OP_RING_STATE = 12,    /* RING.UP / DOWN / DRAIN: a node's state */
    RBD_OP_RING_SLOTS = 13,    /* RING.SLOTS: slot ranges assigned, or none: BALANCE */
    RBD_OP_PFADD = 14,         /* PFADD: a counter's name and the elements */
    RBD_OP_PFMERGE = 15,       /* PFMERGE: the destination and the sources (as keys) */
    RBD_OP_CMS_INIT = 16,      /* CMS.INITBYDIM / INITBYPROB, ADMIT.RESERVE's sketch */
    RBD_OP_CMS_INCRBY = 17,    /* CMS.INCRBY, ADMIT.TOUCH past the doorkeeper; the
                                  halvings it causes are replayed with it (no record) */
    RBD_OP_CMS_MERGE = 18,     /* CMS.MERGE */
    RBD_OP_CF_RESERVE = 19,    /* CF.RESERVE, and the create of CF.ADD / INSERT */
    RBD_OP_CF_ADD = 20,        /* CF.ADD / ADDNX / INSERT / INSERTNX: the keys added */
    RBD_OP_CF_DEL = 21,        /* CF.DEL of a key found */
    RBD_OP_CF_LOADCHUNK = 22,  /* a chunk of CF.LOADCHUNK (header or data) */
    RBD_OP_RING_SYNC = 23,     /* ring-source etcd: the membership as of a revision */
    RBD_OP_CBF_RESERVE = 24,   /* CBF.RESERVE */
    RBD_OP_CBF_ADD = 25,       /* CBF.ADD / MADD: the keys added */
    RBD_OP_CBF_DEL = 26,       /* CBF.DEL of a key not refused */
    RBD_OP_CBF_LOADCHUNK = 27, /* a chunk of CBF.LOADCHUNK (header or data) */
    RBD_OP_REPL_POS = 28,      /* the replicated filters' stream position (ops_repl.c) */
    RBD_OP_REPL_SKIP = 29,     /* NATS.SKIP: a stream message every host skips (ops_repl.c) */
    RBD_OP_FLUSHALL = 30,      /* FLUSHALL / FLUSHDB: every filter of every kind deleted */
} rbd_op_type_t;

/* What an op's name names (the replay resolves filters by it, and its
 * refusals say it). */
typedef enum rbd_names {
    RBD_NAMES_NOTHING,
    RBD_NAMES_NODE,
    RBD_NAMES_FILTER,          /* an existing Bloom filter: op.bf must be its handle */
    RBD_NAMES_NEW_FILTER,
    RBD_NAMES_ANY_FILTER,      /* an existing filter of any kind, by name (no handle) */
} rbd_names_t;

/* One mutation.  The fields an op type logs are its schema in ops.c; the
 * rest are set by whoever runs it, or by the op. */
typedef struct rbd_op {
    rbd_op_type_t type;
    /* logged: what every op may carry (its row's fields say which) */
    const char *name;          /* node or filter; points into the request or record */
    size_t len;
    const unsigned char *secret; /* a new filter's secret, any kind (RB_BLOOM_SECRET_BYTES
                                  bytes), carried here once: an apply gives it to its
                                  kind's params */
    const rb_key_t *keys;      /* BF_ADD; after a failed add, the keys added before it;
                                  RING_SLOTS: one per range, rbd_slots_range's bytes;
                                  PFADD: the elements; PFMERGE: the sources' names;
                                  CMS_INCRBY: per item, CMS_MERGE: per source,
                                  rbd_cms_pair's bytes; CF_ADD: the items, CF_DEL: the item;
                                  CBF_ADD: the keys (added ones), CBF_DEL: the key;
                                  RING_SYNC: per node u32 weight, u32 state, name */
    size_t nkeys;
    int64_t iter;              /* BF_/CF_/CBF_LOADCHUNK: the chunk's iterator (1 with a header) */
    const unsigned char *data; /* BF_/CF_/CBF_LOADCHUNK: the chunk */
    size_t dlen;
    /* logged: one family's payload (an op uses its own members only) */
    union {
        struct {                   /* the ring's ops */
            uint32_t weight;       /* RING_ADD, RING_WEIGHT */
            uint32_t mode, replicas; /* RING_MODE (replicas 0: keep; the count in force
                                      is logged) */
            uint32_t state;        /* RING_STATE: rb_node_state_t */
            uint64_t revision;     /* RING_SYNC: etcd's revision (mode, replicas: its mode) */
        };
        rb_bloom_params_t params;  /* BF_RESERVE (its secret: op->secret) */
        rb_cms_params_t cms;       /* CMS_INIT (its secret: op->secret) */
        rb_cuckoo_params_t cf;     /* CF_RESERVE (its secret: op->secret) */
        rb_cbf_params_t cbf;       /* CBF_RESERVE (its secret: op->secret) */
        struct {
            uint64_t seq, stream;  /* REPL_POS: the message applied, its stream;
                                      REPL_SKIP: the message to skip, its stream */
        } repl;
    };
    /* not logged */
    uint64_t client;           /* the client it runs for (0: the daemon's own, as the
                                  aging tick's): a sink may answer it later (sink.h) */
    uint8_t reply;             /* what that later answer says (rbd_reply_shape_t,
                                  sink.h; 0: +OK) */
    rb_bloom_t *bf;            /* RBD_NAMES_FILTER: the filter's handle */
    uint64_t now;              /* BF_ROTATE run live: rotate if the window passed at now */
    uint8_t *fresh;            /* BF_ADD run live: per key 1 new, 0 not, RB_BLOOM_NOT_ADDED */
    uint64_t *est;             /* CMS_INCRBY run live: per item its estimate after, or NULL */
    int nx;                    /* CF_ADD run live: add a key only if it may not be there */
    int *cf_res;               /* CF_ADD run live: per key 1 added, 0 there already (nx),
                                  or RB_EFULL / RB_ELAYERS / RB_ENOSPC: no room */
    rb_key_t *cf_added;        /* CF_ADD run live: room for nkeys keys (the added ones,
                                  which op->keys then names) */
    int publish_failed;        /* out, ring ops: the change applied, but its publish
                                  failed (and it was undone) */
    int noop;                  /* out: applied nothing, shown to no sink (BF_ROTATE not due,
                                  a PFADD that changed no register) */
    const char *why;           /* out, BF_LOADCHUNK refused: the reply's words;
                                  RBD_OP_EREPLY: the sink's reply line */
    uint64_t deleted, kept;    /* out, FLUSHALL: the filters deleted, and those whose
                                  delete failed (left in place, the first one's error
                                  in kept_rc) */
    int kept_rc;
} rbd_op_t;

/* rbd_op_run's answers besides RB_OK and the RB_E* errors: a sink took
 * the op, and answers the client later (sink.h: the client's reply waits
 * for its ticket; the handler replies nothing now); a sink refused it,
 * op->why is the reply's line. */
#define RBD_OP_DEFERRED 1
#define RBD_OP_EREPLY   (-1000)

/* Runs op live: the registered sinks accept it (sink.h: one may take it,
 * RBD_OP_DEFERRED, or refuse it, RBD_OP_EREPLY), then it applies to st
 * (a ring change is published, and undone if the publish fails) and, if
 * it changed anything, every sink is shown it, in the order applied: the
 * log appends its record and asks for the fsync its type demands (P2,
 * sink_log.c).  A BF_ADD that fails part-way shows the keys added before
 * the failure (op->nkeys says how many).  RB_OK or the error of the
 * apply (then nothing else changed).  aof is not used: the log is one of
 * st's sinks (the parameter stays for the callers, until they move). */
int rbd_op_run(rbd_state_t *st, rbd_aof_t *aof, rbd_op_t *op);

/* A transaction (EXEC) is one unit in the log and in the segment:
 * rbd_op_txn_begin sets st's segment's transaction mark (seg_txn.h) and
 * opens every sink's frame (the log: a TXN record), the ops run meanwhile
 * are shown inside it, and rbd_op_txn_end clears the mark and closes the
 * frames (the log: one checksum over them all, so a crash keeps all of
 * them or none: replay.c; the record is dropped if none was appended).
 * Both in one event-loop step, with no flush and no change of st->seg
 * between (T1, T2).  A daemon that dies between them leaves the mark set,
 * and its successor does not take that segment over (recovery.c).  No
 * sink may take an op inside (no ticket).  aof is not used (each sink
 * keeps its frame's start; 0 is returned, start is not used either). */
size_t rbd_op_txn_begin(rbd_state_t *st, rbd_aof_t *aof);
void rbd_op_txn_end(rbd_state_t *st, rbd_aof_t *aof, size_t start);

/* The longest TXN record an EXEC can append: its requests' arguments are
 * at most max_request bytes, and a member record is at most its
 * arguments plus 256 bytes (BF_RESERVE's fields and secret, a header),
 * for at most RBD_TXN_MAX_COMMANDS (txn.h) members. */
#define RBD_TXN_RECORD_MAX(max_request) \
    ((uint64_t)(max_request) + 256u * (uint64_t)RBD_TXN_MAX_COMMANDS + 64u)

/* Replays op, decoded from a record: the same apply as rbd_op_run, without
 * publishing (start-up publishes once, at the end) or logging. */
int rbd_op_replay(rbd_state_t *st, rbd_op_t *op);

/* Scratch for the keys a decoded BF_ADD names (reused across records). */
typedef struct rbd_keys {
    rb_key_t *v;
    size_t cap;
} rbd_keys_t;

/* A RING.SLOTS range as a "key" of its record: u16 start, u16 end (both
 * little-endian), then the node's name.  RBD_SLOTS_RANGE_HDR + the name's
 * length bytes into buf. */
#define RBD_SLOTS_RANGE_HDR 4
size_t rbd_slots_range(unsigned char *buf, uint32_t start, uint32_t end, const char *name,
                       size_t len);

/* A CMS.INCRBY item or a CMS.MERGE source as a "key" of its record: the
 * u64 increment or weight (little-endian), then the item's or source's
 * bytes.  RBD_CMS_PAIR_HDR + len bytes into buf. */
#define RBD_CMS_PAIR_HDR 8
size_t rbd_cms_pair(unsigned char *buf, uint64_t v, const void *p, size_t len);

/* The heap a BF_RESERVE of p zeroes at once: its first layer (a scaling
 * filter's at half its error rate) or an aging filter's generations; 0
 * for sizes the library refuses (its reserve says why).  What
 * max-command-bytes bounds for BF.RESERVE and an add's create (cmd_bf.c)
 * and for a reserve from the replication stream (filter_source_check.c)
 * alike. */
uint64_t rbd_bf_reserve_bytes(const rb_bloom_params_t *p);

/* Decodes the payload p[0..n) of a record of type (a known one:
 * rbd_op_name is not NULL) into op (names and keys point into p; keys'
 * array into *scratch).  RB_OK, RB_ETRUNC (shorter than its fields; bytes
 * after them are ignored, as they always were), or RB_ENOMEM. */
int rbd_op_decode(unsigned type, const unsigned char *p, size_t n, rbd_op_t *op,
                  rbd_keys_t *scratch);
/* A record's op, ready to apply (rbd_op_replay; rbd_op_run): the payload
 * p[0..n) of a whole record of type (record.h's rbd_rec_at) decoded as
 * rbd_op_decode does and, for a type that names an existing Bloom filter
 * (RBD_NAMES_FILTER), op->bf resolved in st's handle cache - what the
 * log's replay and any other source of records do alike.  RB_OK;
 * RB_EINVAL for a type no op has; rbd_op_decode's RB_ETRUNC or
 * RB_ENOMEM; or rbd_filters_get's error (RB_ENOENT, RB_EWRONGTYPE, ...;
 * op's decoded fields, its name included, are set then). */
int rbd_op_from_record(rbd_state_t *st, unsigned type, const unsigned char *p, size_t n,
                       rbd_op_t *op, rbd_keys_t *scratch);

/* Writes op's record payload (its type's fields, in order: the layout
 * rbd_op_decode reads) through put, a piece at a time. */
typedef void (*rbd_op_put_fn)(void *ctx, const void *p, size_t n);
void rbd_op_encode(const rbd_op_t *op, rbd_op_put_fn put, void *ctx);
/* Whether a record of type must be durable before its reply (P2). */
int rbd_op_sync(unsigned type);
/* Whether an op of type changes the ring's membership or mode (RING.ADD,
 * ...: ring_apply's), which the etcd source makes in etcd instead. */
int rbd_op_changes_ring(unsigned type);
/* Whether an op of type names, in op->name, the filter, counter or sketch
 * it changes (every kind's ops that log a name but the ring's): what a
 * filter source decides by. */
int rbd_op_names_filter(unsigned type);

/* The name of record type (for messages: "RING.ADD"), or NULL if no op
 * has that type. */
const char *rbd_op_name(unsigned type);
/* What a record of type `type` names (RBD_NAMES_NOTHING for an unknown type). */
rbd_names_t rbd_op_names(unsigned type);

#endif /* RBD_OPS_H */
