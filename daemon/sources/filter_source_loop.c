/*
 * filter_source_loop.c - `filter-source nats`, the event loop's side
 * (filter_source.h says what the source is): the op-sink row that takes
 * the writes to replicated filters into the loop turn's message, and the
 * apply of every message the stream delivers, with the answers to this
 * host's writes, and of the parts of a snapshot a bootstrap fetched
 * (filter_source_snap.c).
 *
 * Invariants (docs/design.md, "Beyond one host: filters from NATS
 * JetStream"):
 *  N1 a replicated filter changes only by a stream message's apply, in
 *     sequence order, each message once: one TXN (segment mark and log
 *     record) holding its ops and REPL_POS (its sequence), so a restart
 *     resumes right after the last message it holds, never half of one;
 *  N2 the apply depends on the message's bytes and the state before it
 *     only: the same on every host (a reserve carries its secret and
 *     sizes; a message this version cannot apply - a record that is
 *     damaged or not of a replicated type, an Rb-Format absent or not a
 *     number - is skipped whole, its position still recorded, the same
 *     on every host of this version; a newer Rb-Format halts, since a
 *     newer host would apply it);
 *  N3 a write is answered only from its own message's apply (its
 *     Nats-Msg-Id is this source's origin and the batch's number), or
 *     with an error when the stream refused it, did not answer (outcome
 *     unknown), or acknowledged it and it was not applied here in time.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "filter_source_impl.h"
#include "rbd_log.h"
#include "record.h"

/* Whether op names a filter the source replicates (its name matches
 * nats-filters). */
static int replicated(const rbd_fsource_t *s, const rbd_op_t *op)
{
    return rbd_op_names_filter(op->type) && rbd_fsource_matches(s->glob, op->name, op->len);
}

/* The ops a message may carry (N2: any other type skips the message);
 * a snapshot's part carries filters' dumps (filter_source_snap.c). */
static int replicable(unsigned type)
{
    return type == RBD_OP_BF_RESERVE || type == RBD_OP_BF_ADD;
}

static int in_snapshot(unsigned type)
{
    return type == RBD_OP_BF_LOADCHUNK;
}

/* Room for a record of up to `more` bytes and its ticket in the turn's
 * batch: 0, or -1 out of memory. */
static int batch_room(rbd_fsource_t *s, size_t more)
{
    fs_batch_t *b = s->building;

    if (b == NULL) {
        if ((b = calloc(1, sizeof(*b))) == NULL)
            return -1;
        b->no = ++s->next_no;
        s->building = b;
    }
    if (b->len + more > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        unsigned char *p;

        while (cap < b->len + more)
            cap *= 2;
        if ((p = realloc(b->buf, cap)) == NULL)
            return -1;
        b->buf = p;
        b->cap = cap;
    }
    if (b->n == b->tcap) {
        size_t cap = b->tcap ? b->tcap * 2 : 16;
        uint64_t *t = realloc(b->tickets, cap * sizeof(*t));

        if (t == NULL)
            return -1;
        b->tickets = t;
        b->tcap = cap;
    }
    return 0;
}

/* Hands the turn's batch to the NATS thread. */
static void send_building(rbd_fsource_t *s)
{
    fs_batch_t *b = s->building;

    if (b == NULL || b->n == 0)
        return;
    s->building = NULL;
    b->snext = s->sent;
    s->sent = b;
    rbd_fsource_queue(s, b);
}

/* fs_accept's decision (its refusals are counted by fs_accept). */
static int take(rbd_fsource_t *s, const rbd_op_t *op, uint64_t ticket, char *why, size_t cap)
{
    size_t bytes;
    int ready, healthy;
    char err[512];

    if (s->applying || !replicated(s, op))
        return RBD_SINK_APPLY;
    if (!replicable(op->type)) {
        snprintf(why, cap, "ERR filter '%.*s' is replicated (filter-source nats, nats-filters "
                 "%s): %s is not replicated by this version (BF.RESERVE, BF.ADD, BF.MADD and "
                 "BF.INSERT are)", (int)op->len, op->name, s->glob, rbd_op_name(op->type));
        return RBD_SINK_REPLY;
    }
    if (op->type == RBD_OP_BF_RESERVE && (op->params.flags & RB_BLOOM_AGING) &&
        op->params.window != 0) {
        snprintf(why, cap, "ERR filter '%.*s' is replicated: an aging filter with a window "
                 "cannot be (each host's clock would rotate it)", (int)op->len, op->name);
        return RBD_SINK_REPLY;
    }
    if (s->halted) {
        snprintf(why, cap, "ERR filter-source nats: replication halted at sequence %" PRIu64
                 ": %s", s->applied, s->halt_why);
        return RBD_SINK_REPLY;
    }
    pthread_mutex_lock(&s->mu);
    ready = s->ready;
    healthy = s->healthy;
    snprintf(err, sizeof(err), "%s",
             s->error[0] ? s->error : "connecting, setting the stream up");
    pthread_mutex_unlock(&s->mu);
    if (!ready) {
        snprintf(why, cap, "ERR filter-source nats: not following stream %s yet (servers %s): "
                 "%s", s->stream, s->server_list, err);
        return RBD_SINK_REPLY;
    }
    if (!healthy) {
        snprintf(why, cap, "ERR filter-source nats: stream %s does not answer (servers %s): %s; "
                 "writes to replicated filters are refused until it does (reads go on)",
                 s->stream, s->server_list, err);
        return RBD_SINK_REPLY;
    }
    if (ticket == 0) {
        snprintf(why, cap, "ERR filter '%.*s' is replicated: its writes cannot run inside "
                 "MULTI/EXEC", (int)op->len, op->name);
        return RBD_SINK_REPLY;
    }
    bytes = rbd_fsource_record(op, NULL);
    if (bytes > FS_MSG_MAX) {
        snprintf(why, cap, "ERR filter '%.*s' is replicated: this write's record is %zu bytes, "
                 "more than a stream message holds (%u): send fewer keys at once",
                 (int)op->len, op->name, bytes, FS_MSG_MAX);
        return RBD_SINK_REPLY;
    }
    if (s->building != NULL && s->building->len + bytes > FS_MSG_MAX)
        send_building(s);
    if (batch_room(s, bytes) != 0)
        return RB_ENOMEM;
    s->building->len += rbd_fsource_record(op, s->building->buf + s->building->len);
    s->building->tickets[s->building->n++] = ticket;
    return RBD_SINK_DEFERRED;
}

static int fs_accept(void *self, rbd_state_t *st, const rbd_op_t *op, uint64_t ticket, char *why,
                     size_t cap)
{
    rbd_fsource_t *s = self;
    int rc = take(s, op, ticket, why, cap);

    (void)st;
    if (rc == RBD_SINK_REPLY)
        s->refused++;
    return rc;
}

static int fs_flush(void *self)
{
    send_building(self);
    return 0;
}

/* A batch of sent, by number (NULL: not this host's, or answered and freed). */
static fs_batch_t *find_batch(rbd_fsource_t *s, uint64_t no)
{
    for (fs_batch_t *b = s->sent; b != NULL; b = b->snext)
        if (b->no == no)
            return b;
    return NULL;
}

static void skip(rbd_fsource_t *s, uint64_t seq, const char *why)
{
    s->skipped++;
    snprintf(s->skipped_last, sizeof(s->skipped_last), "seq %" PRIu64 ": %.200s", seq, why);
    if (s->skipped <= 100 || s->skipped % 1000 == 0)
        rbd_log(LOG_ERR, "filter source: stream %s message %" PRIu64 " skipped on every host "
                "of this version: %s (%" PRIu64 " skipped so far)", s->stream, seq, why,
                s->skipped);
}

/* Why the records of a message cannot be applied ("" if they can). */
static void check_records(const fs_rx_t *r, char *why, size_t cap)
{
    rbd_rec_walk_t w;
    rbd_rec_t rec;
    rbd_rec_why_t bad = RBD_REC_OK;
    int rc;

    why[0] = '\0';
    rbd_rec_walk_init(&w, r->data, r->len);
    while ((rc = rbd_rec_next(&w, &rec, &bad)) == 1)
        if (r->parts != 0 ? !in_snapshot(rec.type) : !replicable(rec.type)) {
            snprintf(why, cap, "record %u (%s) is not a replicated op", rec.type,
                     rbd_op_name(rec.type) ? rbd_op_name(rec.type) : "unknown");
            return;
        }
    if (rc < 0)
        snprintf(why, cap, "damaged record at byte %zu: %s", w.at, rbd_rec_why_text(bad));
}

static void halt(rbd_fsource_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void halt(rbd_fsource_t *s, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(s->halt_why, sizeof(s->halt_why), fmt, ap);
    va_end(ap);
    s->halted = 1;
    rbd_log(LOG_ERR, "filter source: halted: %s", s->halt_why);
}

/* Runs the records of r (none if it is skipped) inside its TXN, each
 * write of b's answered with its record's result; returns how many ran. */
static size_t run_records(rbd_fsource_t *s, rbd_state_t *st, const fs_rx_t *r, fs_batch_t *b,
                          int skipped)
{
    rbd_rec_walk_t w;
    rbd_rec_t rec;
    size_t k = 0;
    int rc;

    rbd_rec_walk_init(&w, r->data, skipped ? 0 : r->len);
    while (rbd_rec_next(&w, &rec, NULL) == 1) {
        uint8_t *fresh = NULL;
        rbd_op_t op;

        rc = rbd_op_from_record(st, rec.type, rec.payload, rec.plen, &op, &s->keys);
        if (rc == RB_OK && rec.type == RBD_OP_BF_ADD && op.nkeys > 0) {
            if ((fresh = malloc(op.nkeys)) == NULL)
                rc = RB_ENOMEM;   /* the same on no host: N2 holds while memory does */
            else
                memset(fresh, RB_BLOOM_NOT_ADDED, op.nkeys);
            op.fresh = fresh;
        }
        if (rc == RB_OK)
            rc = rbd_op_run(st, NULL, &op);
        if (rc == RB_ENOMEM)
            rbd_log(LOG_ERR, "filter source: out of memory applying message %" PRIu64
                    ": this host diverges from the stream", r->seq);
        else if (rc != RB_OK && r->parts != 0)
            rbd_log(LOG_ERR, "filter source: the snapshot at %" PRIu64 ", part %u: filter '%.*s':"
                    " %s", r->seq, r->part, (int)op.len, op.name ? op.name : "",
                    op.why != NULL ? op.why : rb_strerror(rc));
        if (b != NULL && k < b->n)
            rbd_sinks_complete_result(&st->sinks, b->tickets[k], rc, fresh,
                                      rec.type == RBD_OP_BF_ADD && rc != RB_ENOENT ? op.nkeys : 0);
        k++;
        free(fresh);
    }
    return k;
}

/* Applies r - the next message in the stream, its writes answered if it
 * is this host's, or a part of the snapshot this host bootstraps from
 * (filter_source_snap.c: the first deletes the replicated filters, the
 * last records the position) - as one TXN: N1-N3. */
static void apply_msg(rbd_fsource_t *s, rbd_state_t *st, const fs_rx_t *r, uint64_t stream_id)
{
    fs_batch_t *b = r->origin == s->origin && r->parts == 0 ? find_batch(s, r->no) : NULL;
    int last = r->parts == 0 || r->part + 1 == r->parts;
    rbd_op_t pos;
    char why[300];
    size_t k;

    if (r->format > FS_FORMAT) {
        halt(s, "message %" PRIu64 " is of Rb-Format %d, newer than this version's (%d): "
             "upgrade this ringbloomd", r->seq, r->format, FS_FORMAT);
        return;
    }
    if (r->format == 0)
        snprintf(why, sizeof(why), "no Rb-Format header (not written by ringbloomd)");
    else
        check_records(r, why, sizeof(why));
    if (why[0] != '\0' && r->parts != 0) {
        halt(s, "the snapshot at %" PRIu64 ", part %u of %u: %s", r->seq, r->part, r->parts,
             why);
        return;
    }
    if (why[0] != '\0')
        skip(s, r->seq, why);
    (void)rbd_op_txn_begin(st, NULL);
    s->applying = 1;
    if (r->parts != 0 && r->part == 0)
        rbd_fsource_snap_clear(s, st);
    k = run_records(s, st, r, b, why[0] != '\0');
    if (last) {
        memset(&pos, 0, sizeof(pos));
        pos.type = RBD_OP_REPL_POS;
        pos.repl.seq = r->seq;
        pos.repl.stream = stream_id;
        (void)rbd_op_run(st, NULL, &pos);
        s->applied = r->seq;
    }
    s->applying = 0;
    rbd_op_txn_end(st, NULL, 0);
    s->snap_in = last ? 0 : r->seq;
    if (b != NULL) {
        b->applied = 1;
        for (; k < b->n; k++)   /* a message skipped: its writes were not applied */
            rbd_sinks_complete(&st->sinks, b->tickets[k], "ERR filter-source nats: the write's "
                               "message was skipped (see the log)");
    }
    if (r->parts == 0 && r->origin == s->origin && s->snap_every != 0 &&
        r->seq % s->snap_every == 0)
        rbd_fsource_snap_take(s, st, r->seq, stream_id);
}

/* The stream delivered seq after s->applied: the messages between were
 * purged (after a snapshot) while this host lagged; the thread sets up
 * again from s->applied, which bootstraps from the snapshot.  Asked once
 * per consumer (gen): its later deliveries are dropped. */
static void ask_resync(rbd_fsource_t *s, uint64_t gen, uint64_t seq)
{
    if (gen == s->asked_gen)
        return;
    s->asked_gen = gen;
    rbd_log(LOG_WARNING, "filter source: stream %s delivered sequence %" PRIu64 " after %" PRIu64
            ": the messages between are gone from it: bootstrapping from its snapshot",
            s->stream, seq, s->applied);
    pthread_mutex_lock(&s->mu);
    s->resync = 1;
    s->resync_from = s->applied;
    s->ready = 0;
    snprintf(s->error, sizeof(s->error), "bootstrapping: sequence %" PRIu64 " is gone from the "
             "stream", s->applied + 1);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Frees the batches answered and given back by the thread. */
static void reap(rbd_fsource_t *s)
{
    for (fs_batch_t **pp = &s->sent; *pp != NULL;) {
        fs_batch_t *b = *pp;

        if (b->pub_done && (b->applied || b->pub_rc != 0)) {
            *pp = b->snext;
            rbd_fsource_batch_free(b);
        } else
            pp = &b->snext;
    }
}

static void fs_poll(void *self, rbd_state_t *st)
{
    rbd_fsource_t *s = self;
    fs_rx_t *rx, *last;
    fs_batch_t *done;
    uint64_t stream_id, gen, drain;
    char halt_line[512];
    int more, taken = 0;
    size_t bytes = 0;

    if (read(s->efd, &drain, sizeof(drain)) < 0) {
        /* EAGAIN: nothing new; still look */
    }
    pthread_mutex_lock(&s->mu);
    /* At most FS_APPLY_TURN messages and FS_APPLY_BYTES (but one) a turn,
     * so a host catching up keeps answering its clients; the rest wake the
     * loop again. */
    rx = s->stream_id != 0 ? s->rx : NULL;   /* (set before any delivery) */
    last = NULL;
    for (fs_rx_t *r = rx; r != NULL && taken < FS_APPLY_TURN && (taken == 0 ||
         bytes + r->len <= FS_APPLY_BYTES); r = r->next, taken++) {
        s->rx_bytes -= r->len;
        bytes += r->len;
        last = r;
    }
    if (last != NULL) {
        s->rx = last->next;
        if (s->rx == NULL)
            s->rx_tail = NULL;
        last->next = NULL;
        pthread_cond_broadcast(&s->rx_cv);
    }
    more = rx != NULL && s->rx != NULL;
    done = s->done;
    s->done = NULL;
    stream_id = s->stream_id;
    gen = s->gen;
    snprintf(halt_line, sizeof(halt_line), "%s", s->thread_halt);
    pthread_mutex_unlock(&s->mu);
    if (halt_line[0] != '\0' && !s->halted)
        halt(s, "%s", halt_line);
    while (rx != NULL) {
        fs_rx_t *next = rx->next;

        if (s->halted || rx->gen != gen)
            ;   /* dropped: a consumer replaced (ask_resync) */
        else if (rx->parts != 0) {
            if (rx->part == 0 ? rx->seq > s->applied : rx->seq == s->snap_in)
                apply_msg(s, st, rx, stream_id);
        } else if (rx->seq == s->applied + 1)
            apply_msg(s, st, rx, stream_id);
        else if (rx->seq > s->applied)
            ask_resync(s, gen, rx->seq);
        free(rx);
        rx = next;
    }
    for (; done != NULL; done = done->next) {
        done->pub_done = 1;
        if (done->pub_rc != 0) {
            if (!done->applied)
                for (size_t k = 0; k < done->n; k++)
                    rbd_sinks_complete(&st->sinks, done->tickets[k], done->err);
        } else
            done->ack_ms = rbd_mono_ms();
    }
    reap(s);
    if (more)
        rbd_fsource_wake(s);
}

static void fs_tick(void *self, rbd_state_t *st)
{
    rbd_fsource_t *s = self;
    uint64_t now = rbd_mono_ms();
    char line[300];

    fs_poll(self, st);
    for (fs_batch_t *b = s->sent; b != NULL; b = b->snext) {
        if (!b->pub_done || b->pub_rc != 0 || b->applied ||
            now - b->ack_ms < 2u * (uint64_t)s->timeout_ms)
            continue;
        snprintf(line, sizeof(line), "ERR filter-source nats: the stream holds this write at "
                 "sequence %" PRIu64 ", but this host has not applied it yet (applied: %" PRIu64
                 "%s)", b->seq, s->applied, s->halted ? ", halted" : "");
        for (size_t k = 0; k < b->n; k++)
            rbd_sinks_complete(&st->sinks, b->tickets[k], line);
        b->applied = 1;   /* answered: its apply, when it comes, answers no one */
    }
    reap(s);
}

const rbd_sink_ops_t rbd_fsource_sink = {
    .name = "filter-source",
    .accept = fs_accept,
    .flush = fs_flush,
    .poll = fs_poll,
    .tick = fs_tick,
};
