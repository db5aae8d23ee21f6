/*
 * ops.c - every mutation of the served state, applied and logged in one
 * place, and replayed from the log through the same code.
 *
 * One table, a row per op: its type (the log record's type byte), its name
 * for messages, what its name names, whether its record must be fsync'd
 * before the reply (P2, sink_log.c), its payload's fields in order, and how it
 * applies.  The fields drive one encoder (put_field, after a live apply)
 * and one decoder (rbd_op_decode, for the replay), so a record's layout is
 * written down once; the table is docs/design.md's table of record types.
 *
 * Live (rbd_op_run: a command handler, the aging tick): the op sinks
 * accept it (sink.h: the etcd source takes a ring change); apply; a ring
 * op then publishes the model, and undoes its change if the publish
 * fails; then every sink is shown the op, in one place (P4: the log
 * appends its record in the same step as the change, sink_log.c, through
 * the one encoder rbd_op_encode).
 * Replay (rbd_op_replay, replay.c): the same apply on the decoded op,
 * without publishing (start-up publishes once, at the end) or logging.
 * Replayed onto the state it was logged from, a record finds what its op
 * found live (P4), so the apply's errors (a missing node, a filter that
 * already exists) are the log's corruption there.
 *
 * Adding an op: an rbd_op_type_t value (a new type byte), the fields it
 * logs in rbd_op_t if they are new, a row, an apply function; its command
 * handler fills an rbd_op_t and calls rbd_op_run.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "bytes.h"
#include "ops_def.h"
#include "seg_txn.h"

/* ---- the ops of every kind, and the table ------------------------------------------ */

/* Filter op->name of any kind is deleted by its kind's delete (the kind
 * table: rb_filter_delete) and its handle, if the daemon holds one,
 * dropped.  RB_ENOENT if there is no such filter. */
static int bf_delete(rbd_state_t *st, rbd_op_t *op, int live)
{
    int rc;

    (void)live;
    rc = rb_filter_delete(st->seg, op->name, op->len);
    if (rc == RB_OK)
        rbd_filters_forget(&st->filters, op->name, op->len);
    return rc;
}

/* The name of the live filter a one-slot step of a directory walk met. */
typedef struct flush_step {
    char name[RB_FILTER_NAME_MAX];
    size_t len;
} flush_step_t;

static int flush_take(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    flush_step_t *f = arg;

    (void)kind;
    if (len <= sizeof(f->name)) {
        memcpy(f->name, name, len);
        f->len = len;
    }
    return 0;
}

/* FLUSHALL: every filter of every kind deleted, each as DEL deletes it
 * (bf_delete), in directory order, a slot at a time (no list of the
 * names: O(directory) time, O(1) memory).  The ring is not a key and
 * stays.  A filter whose delete fails (its layers fail validation) is
 * left in place and counted (op->kept, the first error in op->kept_rc)
 * and the others are deleted: the outcome depends on the state alone,
 * so the replay, on the state the record was logged from (P4), deletes
 * and keeps the same filters.  Always RB_OK; a noop when there was
 * nothing to delete (not logged). */
static int flush_all(rbd_state_t *st, rbd_op_t *op, int live)
{
    uint64_t cursor = 0;

    op->deleted = op->kept = 0;
    do {
        flush_step_t f = { .len = 0 };
        rbd_op_t one = { .type = RBD_OP_BF_DELETE };
        int rc;

        if (rb_filter_scan(st->seg, &cursor, 1, flush_take, &f) != RB_OK)
            break;
        if (f.len == 0)
            continue;
        one.name = f.name;
        one.len = f.len;
        if ((rc = bf_delete(st, &one, live)) == RB_OK) {
            op->deleted++;
        } else if (op->kept++ == 0) {
            op->kept_rc = rc;
        }
    } while (cursor != 0);
    op->noop = op->deleted == 0;
    return RB_OK;
}

/* The ops that belong to no family: DEL of a filter of any kind,
 * FLUSHALL, and the frame of a transaction's records (rbd_op_txn_begin;
 * not an op: replay.c replays its members). */
static const rbd_op_def_t core[] = {
    { RBD_OP_TXN, "TXN", RBD_NAMES_NOTHING, 0, NULL, { { F_END, 0 } } },
    { RBD_OP_BF_DELETE, "DEL", RBD_NAMES_ANY_FILTER, RBD_OP_SYNC, bf_delete, { RBD_NAME } },
    { RBD_OP_FLUSHALL, "FLUSHALL", RBD_NAMES_NOTHING, RBD_OP_SYNC, flush_all, { { F_END, 0 } } },
    RBD_OP_END,
};

/* The families of rows (each in its ops_<family>.c, ended by RBD_OP_END);
 * a new family (a filter kind's ops) is one declaration and one entry. */
extern const rbd_op_def_t rbd_ops_ring[], rbd_ops_bloom[], rbd_ops_hll[], rbd_ops_cms[],
    rbd_ops_cf[], rbd_ops_cbf[], rbd_ops_repl[];
static const rbd_op_def_t *const families[] = {
    core, rbd_ops_ring, rbd_ops_bloom, rbd_ops_hll, rbd_ops_cms, rbd_ops_cf, rbd_ops_cbf,
    rbd_ops_repl,
};

/* The row of each type byte (NULL: no op), filled from families[] on the
 * first look (the daemon's event loop and its start-up replay: one thread). */
static const rbd_op_def_t *by_type[256];

static const rbd_op_def_t *def_of(unsigned type)
{
    static int built;

    if (!built) {
        for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
            for (const rbd_op_def_t *d = families[f]; d->name != NULL; d++)
                by_type[d->type] = d;
        built = 1;
    }
    return type < 256 ? by_type[type] : NULL;
}

const char *rbd_op_name(unsigned type)
{
    const rbd_op_def_t *d = def_of(type);

    return d != NULL ? d->name : NULL;
}

rbd_names_t rbd_op_names(unsigned type)
{
    const rbd_op_def_t *d = def_of(type);

    return d != NULL ? d->names : RBD_NAMES_NOTHING;
}

/* ---- the encoder --------------------------------------------------------------------- */

typedef struct put {
    rbd_op_put_fn fn;
    void *ctx;
} put_t;

/* u32 count, then each key's u32 length and bytes: gathered in a chunk on
 * the stack and put a chunk at a time (two appends per key were a tenth
 * of a bulk load's time); a key longer than the chunk goes alone. */
static void put_keys(const put_t *w, const rbd_op_t *op)
{
    unsigned char chunk[8192];
    size_t at = 4;

    rbd_put_u32(chunk, (uint32_t)op->nkeys);
    for (size_t i = 0; i < op->nkeys; i++) {
        size_t len = op->keys[i].len;
        if (at + 4 + len > sizeof(chunk)) {
            w->fn(w->ctx, chunk, at);
            at = 0;
        }
        rbd_put_u32(chunk + at, (uint32_t)len);
        at += 4;
        if (len > sizeof(chunk) - 4) {
            w->fn(w->ctx, chunk, at);
            w->fn(w->ctx, op->keys[i].ptr, len);
            at = 0;
            continue;
        }
        memcpy(chunk + at, op->keys[i].ptr, len);
        at += len;
    }
    w->fn(w->ctx, chunk, at);
}

/* A u32 (width 4) or u64 / f64 (width 8) member m, little-endian. */
static void put_int(const put_t *w, const char *m, size_t width)
{
    unsigned char b[8];
    uint32_t u32;
    uint64_t v;

    if (width == 4) {
        memcpy(&u32, m, 4);
        v = u32;
    } else {
        memcpy(&v, m, 8);
    }
    for (size_t i = 0; i < width; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    w->fn(w->ctx, b, width);
}

static void put_field(const put_t *w, const rbd_field_t *f, const rbd_op_t *op)
{
    unsigned char b[2];

    switch ((rbd_field_kind_t)f->kind) {
    case F_U32:
        put_int(w, (const char *)op + f->off, 4);
        break;
    case F_U64:
    case F_F64:
        put_int(w, (const char *)op + f->off, 8);
        break;
    case F_NAME:
        b[0] = (unsigned char)op->len;
        b[1] = (unsigned char)(op->len >> 8);
        w->fn(w->ctx, b, 2);
        w->fn(w->ctx, op->name, op->len);
        break;
    case F_SECRET:
        w->fn(w->ctx, op->secret, RB_BLOOM_SECRET_BYTES);
        break;
    case F_KEYS:
        put_keys(w, op);
        break;
    case F_BLOB:
        put_int(w, (const char *)&(uint32_t){ (uint32_t)op->dlen }, 4);
        w->fn(w->ctx, op->data, op->dlen);
        break;
    case F_END:
        break;
    }
}

void rbd_op_encode(const rbd_op_t *op, rbd_op_put_fn put, void *ctx)
{
    const put_t w = { put, ctx };

    for (const rbd_field_t *f = def_of(op->type)->fields; f->kind != F_END; f++)
        put_field(&w, f, op);
}

int rbd_op_sync(unsigned type)
{
    const rbd_op_def_t *d = def_of(type);

    return d != NULL && (d->flags & RBD_OP_SYNC) != 0;
}

int rbd_op_changes_ring(unsigned type)
{
    const rbd_op_def_t *d = def_of(type);

    return d != NULL && (d->flags & RBD_OP_RING) != 0;
}

int rbd_op_names_filter(unsigned type)
{
    const rbd_op_def_t *d = def_of(type);

    if (d == NULL || d->names == RBD_NAMES_NODE || (d->flags & RBD_OP_RING) != 0)
        return 0;
    for (size_t i = 0; i < sizeof(d->fields) / sizeof(d->fields[0]) && d->fields[i].kind != F_END;
         i++)
        if (d->fields[i].kind == F_NAME)
            return 1;
    return 0;
}

/* ---- the op stream -------------------------------------------------------------------- */

int rbd_op_run(rbd_state_t *st, rbd_aof_t *aof, rbd_op_t *op)
{
    const rbd_op_def_t *d = def_of(op->type);
    int rc;

    (void)aof;
    rc = rbd_sinks_accept(&st->sinks, st, op);
    if (rc == RBD_SINK_DEFERRED)
        return RBD_OP_DEFERRED;
    if (rc == RBD_SINK_REPLY) {
        op->why = st->sinks.why;
        return RBD_OP_EREPLY;
    }
    if (rc != RBD_SINK_APPLY)
        return rc;
    /* An op on a filter whose create a sink took, which no sink took in
     * turn: there is no filter here to apply it to. */
    if (d->names == RBD_NAMES_FILTER && op->bf == NULL)
        return RB_ENOENT;
    rc = d->apply(st, op, 1);
    if (rc == RB_OK ? op->noop : !(d->flags & RBD_OP_PARTIAL) || op->nkeys == 0)
        return rc;
    rbd_sinks_op(&st->sinks, op);
    return rc;
}

size_t rbd_op_txn_begin(rbd_state_t *st, rbd_aof_t *aof)
{
    (void)aof;
    rbi_segment_txn_begin(st->seg);
    rbd_sinks_txn_begin(&st->sinks);
    return 0;
}

void rbd_op_txn_end(rbd_state_t *st, rbd_aof_t *aof, size_t start)
{
    (void)aof;
    (void)start;
    rbi_segment_txn_end(st->seg);
    rbd_sinks_txn_end(&st->sinks);
}

int rbd_op_replay(rbd_state_t *st, rbd_op_t *op)
{
    return def_of(op->type)->apply(st, op, 0);
}

/* ---- the decoder --------------------------------------------------------------------- */

static int get_keys(const unsigned char *p, size_t n, size_t *i, rbd_op_t *op,
                    rbd_keys_t *scratch)
{
    uint32_t count = rbd_get_u32(p + *i);

    *i += 4;
    if (count > (n - *i) / 4)
        return RB_ETRUNC;   /* each key takes 4 bytes at least */
    if (count > scratch->cap) {
        rb_key_t *v = realloc(scratch->v, count * sizeof(*v));
        if (v == NULL)
            return RB_ENOMEM;
        scratch->v = v;
        scratch->cap = count;
    }
    for (uint32_t k = 0; k < count; k++) {
        uint32_t len;
        if (n - *i < 4)
            return RB_ETRUNC;
        len = rbd_get_u32(p + *i);
        *i += 4;
        if (n - *i < len)
            return RB_ETRUNC;
        scratch->v[k].ptr = p + *i;
        scratch->v[k].len = len;
        *i += len;
    }
    op->keys = scratch->v;
    op->nkeys = count;
    return RB_OK;
}

static int get_field(const rbd_field_t *f, const unsigned char *p, size_t n, size_t *i,
                     rbd_op_t *op, rbd_keys_t *scratch)
{
    static const size_t fixed[] = { [F_U32] = 4, [F_U64] = 8, [F_F64] = 8, [F_NAME] = 2,
                                    [F_SECRET] = RB_BLOOM_SECRET_BYTES, [F_KEYS] = 4,
                                    [F_BLOB] = 4 };
    char *m = (char *)op + f->off;
    uint32_t u32;
    uint64_t u64;

    if (n - *i < fixed[f->kind])
        return RB_ETRUNC;
    switch ((rbd_field_kind_t)f->kind) {
    case F_U32:
        u32 = rbd_get_u32(p + *i);
        memcpy(m, &u32, 4);
        break;
    case F_U64:
    case F_F64:
        u64 = rbd_get_u64(p + *i);
        memcpy(m, &u64, 8);
        break;
    case F_NAME:
        op->len = rbd_get_u16(p + *i);
        if (n - *i - 2 < op->len)
            return RB_ETRUNC;
        op->name = (const char *)p + *i + 2;
        *i += op->len;
        break;
    case F_SECRET:
        op->secret = p + *i;
        break;
    case F_KEYS:
        return get_keys(p, n, i, op, scratch);
    case F_BLOB:
        op->dlen = rbd_get_u32(p + *i);
        if (n - *i - 4 < op->dlen)
            return RB_ETRUNC;
        op->data = p + *i + 4;
        *i += op->dlen;
        break;
    case F_END:
        break;
    }
    *i += fixed[f->kind];
    return RB_OK;
}

int rbd_op_decode(unsigned type, const unsigned char *p, size_t n, rbd_op_t *op,
                  rbd_keys_t *scratch)
{
    size_t i = 0;
    int rc;

    memset(op, 0, sizeof(*op));
    op->type = (rbd_op_type_t)type;
    for (const rbd_field_t *f = def_of(type)->fields; f->kind != F_END; f++)
        if ((rc = get_field(f, p, n, &i, op, scratch)) != RB_OK)
            return rc;
    return RB_OK;
}

int rbd_op_from_record(rbd_state_t *st, unsigned type, const unsigned char *p, size_t n,
                       rbd_op_t *op, rbd_keys_t *scratch)
{
    int rc;

    if (def_of(type) == NULL) {
        memset(op, 0, sizeof(*op));
        return RB_EINVAL;
    }
    rc = rbd_op_decode(type, p, n, op, scratch);
    if (rc == RB_OK && def_of(type)->names == RBD_NAMES_FILTER)
        op->bf = rbd_filters_get(&st->filters, st->seg, op->name, op->len, &rc);
    return rc;
}
