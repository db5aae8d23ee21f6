/*
 * filter_source_loop.c - `filter-source nats`, the event loop's side
 * (filter_source.h says what the source is): the op-sink row that takes
 * the writes to replicated filters into the loop turn's message, the
 * deliveries handed to filter_source_apply.c in order, and the answers
 * to this host's writes that no apply gives.
 *
 * N3 (docs/design.md, "Beyond one host: filters from NATS JetStream"): a
 * write is answered only from its own message's apply
 * (filter_source_apply.c), or with an error when the stream refused it,
 * did not answer (outcome unknown), or acknowledged it and it was not
 * applied here in time; and always within nats-timeout +
 * FS_REPLY_MARGIN_MS of being taken, answered by the tick if nothing
 * else did.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "filter_source_impl.h"
#include "rbd_log.h"

/* Whether op names a filter the source replicates (its name matches
 * nats-filters). */
static int replicated(const rbd_fsource_t *s, const rbd_op_t *op)
{
    return rbd_op_names_filter(op->type) && rbd_fsource_matches(s->glob, op->name, op->len);
}

/* The ops a write may publish (any other of a replicated name is
 * refused; filter_source_check.c holds what a delivered message may
 * carry). */
static int replicable(unsigned type)
{
    return type == RBD_OP_BF_RESERVE || type == RBD_OP_BF_ADD;
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
        b->origin = s->origin;
        b->born_ms = rbd_mono_ms();
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

/* Op, its record `bytes` long and reserving `reserve` bytes of heap,
 * into the turn's batch with its ticket; a batch of its own (sent at
 * once) if control.  RBD_SINK_DEFERRED, or RB_ENOMEM. */
static int batch_add(rbd_fsource_t *s, const rbd_op_t *op, uint64_t ticket, size_t bytes,
                     uint64_t reserve, int control)
{
    /* A message's reserves stay within max-command-bytes, as every host's
     * apply checks (filter_source_check.c). */
    if (s->building != NULL && (control || s->building->len + bytes > FS_MSG_MAX ||
                                s->building->reserve_bytes + reserve >
                                s->cfg->max_command_bytes))
        send_building(s);
    if (batch_room(s, bytes) != 0)
        return RB_ENOMEM;
    s->building->len += rbd_fsource_record(op, s->building->buf + s->building->len);
    s->building->tickets[s->building->n++] = ticket;
    s->building->reserve_bytes += reserve;
    s->building->control = control;
    if (control)
        send_building(s);
    return RBD_SINK_DEFERRED;
}

/* Why this source cannot take op, a replicable write, now (ticket:
 * sink.h's): RBD_SINK_REPLY with why, or RBD_SINK_APPLY if it can. */
static int refuse(rbd_fsource_t *s, const rbd_state_t *st, const rbd_op_t *op,
                  uint64_t ticket, char *why, size_t cap)
{
    int ready, healthy;
    char err[512];

    if (ticket == 0 && op->client == 0) {
        snprintf(why, cap, "ERR filter '%.*s' is replicated (filter-source nats, nats-filters "
                 "'%s'): this %s is part of a command this version does not replicate (the "
                 "doorkeeper of ADMIT.RESERVE and ADMIT.TOUCH goes with a count-min sketch, "
                 "which is not replicated); BF.RESERVE, BF.ADD, BF.MADD and BF.INSERT are",
                 (int)op->len, op->name, s->glob, rbd_op_name(op->type));
        return RBD_SINK_REPLY;
    }
    if (ticket == 0 && st->sinks.in_txn) {
        snprintf(why, cap, "ERR filter '%.*s' is replicated: its writes cannot run inside "
                 "MULTI/EXEC", (int)op->len, op->name);
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
    return RBD_SINK_APPLY;
}

/* A live filter whose name matches nats-filters (rb_filter_scan's
 * callback): the first one's name kept, all counted. */
typedef struct fs_flush_scan {
    const char *glob;
    char first[64];
    uint64_t n;
} fs_flush_scan_t;

static int flush_one(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    fs_flush_scan_t *f = arg;

    (void)kind;
    if (rbd_fsource_matches(f->glob, name, len) && f->n++ == 0)
        snprintf(f->first, sizeof(f->first), "%.*s", (int)(len < 48 ? len : 48), name);
    return 0;
}

/* FLUSHALL while replicated filters live: refused whole (a delete of a
 * replicated filter is not replicated, and the other hosts would keep
 * theirs), nothing deleted; without one it applies here alone.
 * O(directory), as the FLUSHALL itself. */
static int flush_refused(const rbd_fsource_t *s, const rbd_state_t *st, char *why, size_t cap)
{
    fs_flush_scan_t f = { s->glob, "", 0 };
    uint64_t cursor = 0;

    (void)rb_filter_scan(st->seg, &cursor, SIZE_MAX, flush_one, &f);
    if (f.n == 0)
        return RBD_SINK_APPLY;
    snprintf(why, cap, "ERR %llu filters here are replicated (filter-source nats, nats-filters "
             "%s; '%s' among them): their deletes are not replicated by this version, so "
             "FLUSHALL is refused and nothing was deleted", (unsigned long long)f.n, s->glob,
             f.first);
    return RBD_SINK_REPLY;
}

/* fs_accept's decision (its refusals are counted by fs_accept). */
static int take(rbd_fsource_t *s, const rbd_state_t *st, const rbd_op_t *op, uint64_t ticket,
                char *why, size_t cap)
{
    size_t bytes;
    int rc;

    if (s->applying)
        return RBD_SINK_APPLY;
    if (op->type == RBD_OP_REPL_SKIP)   /* NATS.SKIP: taken even when halted */
        return ticket == 0 ? RB_ENOMEM : batch_add(s, op, ticket, rbd_fsource_record(op, NULL),
                                                   0, 1);
    if (op->type == RBD_OP_FLUSHALL)
        return flush_refused(s, st, why, cap);
    if (!replicated(s, op))
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
    if ((rc = refuse(s, st, op, ticket, why, cap)) != RBD_SINK_APPLY)
        return rc;
    if (ticket == 0)
        return RB_ENOMEM;   /* no room for a ticket */
    bytes = rbd_fsource_record(op, NULL);
    if (bytes > FS_MSG_MAX) {
        snprintf(why, cap, "ERR filter '%.*s' is replicated: this write's record is %zu bytes, "
                 "more than a stream message holds (%u): send fewer keys at once",
                 (int)op->len, op->name, bytes, FS_MSG_MAX);
        return RBD_SINK_REPLY;
    }
    return batch_add(s, op, ticket, bytes,
                     op->type == RBD_OP_BF_RESERVE ? rbd_bf_reserve_bytes(&op->params) : 0, 0);
}

static int fs_accept(void *self, rbd_state_t *st, const rbd_op_t *op, uint64_t ticket, char *why,
                     size_t cap)
{
    rbd_fsource_t *s = self;
    int rc = take(s, st, op, ticket, why, cap);

    if (rc == RBD_SINK_REPLY)
        s->refused++;
    return rc;
}

static int fs_flush(void *self)
{
    send_building(self);
    return 0;
}

/* Frees the batches answered and given back by the thread. */
static void reap(rbd_fsource_t *s)
{
    for (fs_batch_t **pp = &s->sent; *pp != NULL;) {
        fs_batch_t *b = *pp;

        if (b->pub_done && (b->answered || b->pub_rc != 0)) {
            *pp = b->snext;
            rbd_fsource_batch_free(b);
        } else
            pp = &b->snext;
    }
}

static void answer_all(rbd_state_t *st, fs_batch_t *b, const char *line)
{
    for (size_t k = 0; k < b->n; k++)
        rbd_sinks_complete(&st->sinks, b->tickets[k], line);
    b->answered = 1;
}

/* The batches the thread gave back: a failed publish answers its writes
 * (a duplicate id: this host takes a new origin for its ids), NATS.SKIP's
 * is answered at its ack; the others wait for their apply. */
static void returned(rbd_fsource_t *s, rbd_state_t *st, fs_batch_t *done)
{
    for (; done != NULL; done = done->next) {
        done->pub_done = 1;
        if (done->dup && done->origin == s->origin) {
            s->origin = 0;
            while (s->origin == 0)
                arc4random_buf(&s->origin, sizeof(s->origin));
        }
        if (done->answered)
            continue;
        if (done->pub_rc != 0)
            answer_all(st, done, done->err);
        else if (done->control)
            answer_all(st, done, NULL);
    }
}

/* Under mu: b taken off the thread's queue if it is still there (then it
 * was never sent): 1, else 0. */
static int unqueue_locked(rbd_fsource_t *s, fs_batch_t *b)
{
    fs_batch_t *prev = NULL;

    for (fs_batch_t *q = s->todo; q != NULL; prev = q, q = q->next) {
        if (q != b)
            continue;
        if (prev != NULL)
            prev->next = q->next;
        else
            s->todo = q->next;
        if (s->todo_tail == q)
            s->todo_tail = prev;
        return 1;
    }
    return 0;
}

/* Every write not answered by its time (nats-timeout +
 * FS_REPLY_MARGIN_MS after it was taken), or acknowledged while this
 * host is halted, answered now with what is known of it. */
static void answer_late(rbd_fsource_t *s, rbd_state_t *st, uint64_t now)
{
    char line[600];

    for (fs_batch_t *b = s->sent; b != NULL; b = b->snext) {
        int due = now >= b->born_ms + s->timeout_ms + FS_REPLY_MARGIN_MS, queued;

        if (b->answered || (b->pub_done && b->pub_rc != 0) || !(due || (s->halted &&
                                                                        b->pub_done)))
            continue;
        if (b->pub_done) {
            snprintf(line, sizeof(line), "ERR filter-source nats: the stream holds this write "
                     "at sequence %" PRIu64 ", but this host has not applied it yet (applied: %"
                     PRIu64 "%s%.300s)", b->seq, s->applied, s->halted ? "; halted: " : "",
                     s->halted ? s->halt_why : "");
            answer_all(st, b, line);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        queued = unqueue_locked(s, b);
        snprintf(line, sizeof(line), "ERR filter-source nats: stream %s: the write %s within "
                 "nats-timeout (%u ms)%s%.300s", s->stream, queued ? "could not be sent" :
                 "was not acknowledged", s->timeout_ms, s->error[0] ? ": " : "", s->error);
        pthread_mutex_unlock(&s->mu);
        snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s", queued ?
                 "; nothing was written" : "; its outcome is unknown (if the stream holds it, "
                 "every host applies it)");
        if (queued) {
            b->pub_done = 1;
            b->pub_rc = -1;
        }
        answer_all(st, b, line);
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
    rbd_fsource_thread_halt(s, halt_line);
    while (rx != NULL) {
        fs_rx_t *next = rx->next;

        rbd_fsource_dispatch(s, st, rx, gen, stream_id);
        free(rx);
        rx = next;
    }
    returned(s, st, done);
    answer_late(s, st, rbd_mono_ms());
    reap(s);
    pthread_mutex_lock(&s->mu);
    s->loop_applied = s->applied;
    pthread_mutex_unlock(&s->mu);
    if (more)
        rbd_fsource_wake(s);
}

const rbd_sink_ops_t rbd_fsource_sink = {
    .name = "filter-source",
    .accept = fs_accept,
    .flush = fs_flush,
    .poll = fs_poll,
    .tick = fs_poll,   /* every 100 ms: the writes whose time ran out are answered */
};
