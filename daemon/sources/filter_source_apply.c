/*
 * filter_source_apply.c - `filter-source nats`, the event loop's side:
 * what the stream delivers, applied (filter_source.h says what the source
 * is; filter_source_loop.c takes the writes and answers them): each
 * message in sequence order, checked first (filter_source_check.c), and
 * the parts of a snapshot a bootstrap fetched (filter_source_snap.c); a
 * gap or a sequence that goes backwards sent to the thread; the halts,
 * and NATS.SKIP's way out of one.
 *
 * Invariants (docs/design.md, "Beyond one host: filters from NATS
 * JetStream"):
 *  N1 a replicated filter changes only by a stream message's apply, in
 *     sequence order, each message once: one TXN (segment mark and log
 *     record) holding its ops and REPL_POS (its sequence), so a restart
 *     resumes right after the last message it holds, never half of one;
 *  N2 the apply depends on the message's bytes and the state before it
 *     only: the same on every host (a reserve carries its secret and
 *     sizes; a message this version cannot apply or must not - a record
 *     that is damaged, not of a replicated type, names a filter outside
 *     nats-filters or reserves past max-command-bytes
 *     (filter_source_check.c), an Rb-Format absent or not a number - is
 *     skipped whole, its position still recorded, the same on every host
 *     of this version with these settings; a newer Rb-Format halts, since
 *     a newer host would apply it, until NATS.SKIP names it);
 *  N3 (the apply's part) a write is answered from its own message's
 *     apply: its Nats-Msg-Id is the batch's origin and number, and its
 *     bytes the batch's.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "filter_source_impl.h"
#include "rbd_log.h"
#include "record.h"

/* The batch of this host that message r is: its Nats-Msg-Id (origin and
 * number) and its bytes (a message that takes a batch's id with other
 * bytes is not that batch's: it answers no write here).  NULL: none. */
static fs_batch_t *own_batch(rbd_fsource_t *s, const fs_rx_t *r)
{
    for (fs_batch_t *b = s->sent; b != NULL; b = b->snext) {
        if (b->origin != r->origin || b->no != r->no)
            continue;
        if (b->len == r->len && memcmp(b->buf, r->data, r->len) == 0)
            return b;
        rbd_log(LOG_WARNING, "filter source: stream %s message %" PRIu64 " carries this host's "
                "Nats-Msg-Id %016" PRIx64 ".%" PRIu64 " but not its write (another publisher "
                "used the id): applied as any other host's, answering no write here", s->stream,
                r->seq, r->origin, r->no);
        return NULL;
    }
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

static void halt(rbd_fsource_t *s, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void halt(rbd_fsource_t *s, int kind, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(s->halt_why, sizeof(s->halt_why), fmt, ap);
    va_end(ap);
    s->halted = kind;
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

/* One TXN: r's records (r NULL: none; skipped: none run), then, if last,
 * REPL_POS seq; returns how many records ran. */
static size_t in_txn(rbd_fsource_t *s, rbd_state_t *st, uint64_t seq, uint64_t stream_id,
                     const fs_rx_t *r, fs_batch_t *b, int skipped, int last)
{
    rbd_op_t pos;
    size_t k = 0;

    (void)rbd_op_txn_begin(st, NULL);
    s->applying = 1;
    if (r != NULL && r->parts != 0 && r->part == 0)
        rbd_fsource_snap_clear(s, st);
    if (r != NULL)
        k = run_records(s, st, r, b, skipped);
    if (last) {
        memset(&pos, 0, sizeof(pos));
        pos.type = RBD_OP_REPL_POS;
        pos.repl.seq = seq;
        pos.repl.stream = stream_id;
        (void)rbd_op_run(st, NULL, &pos);
        s->applied = seq;
    }
    s->applying = 0;
    rbd_op_txn_end(st, NULL, 0);
    return k;
}

/* Whether r may be applied here: FS_CHECK_OK, or why not (its kind). */
static int check_msg(rbd_fsource_t *s, const fs_rx_t *r, char *why, size_t cap)
{
    if (r->format == 0) {
        snprintf(why, cap, "no Rb-Format header (not written by ringbloomd)");
        return FS_CHECK_BAD;
    }
    return rbd_fsource_check_records(s, r->data, r->len, r->parts != 0,
                                     r->parts != 0 ? 0 : s->cfg->max_command_bytes, &s->keys,
                                     why, cap);
}

/* Applies r - the next message in the stream, its writes answered if it
 * is this host's, or a part of the snapshot this host bootstraps from
 * (filter_source_snap.c: the first deletes the replicated filters, the
 * last records the position) - as one TXN: N1-N3. */
static void apply_msg(rbd_fsource_t *s, rbd_state_t *st, const fs_rx_t *r, uint64_t stream_id)
{
    fs_batch_t *b = r->parts == 0 ? own_batch(s, r) : NULL;
    int last = r->parts == 0 || r->part + 1 == r->parts, bad;
    char why[300];
    size_t k;

    if (r->format > FS_FORMAT) {
        s->halt_seq = r->seq;
        halt(s, FS_HALT_FORMAT, "message %" PRIu64 " is of Rb-Format %d, newer than this "
             "version's (%d): upgrade every ringbloomd following stream %s, or to go on "
             "without it (its writes lost on every host of this version) run NATS.SKIP %"
             PRIu64 " on any one host: every host skips it", r->seq, r->format, FS_FORMAT,
             s->stream, r->seq);
        return;
    }
    if ((bad = check_msg(s, r, why, sizeof(why))) != FS_CHECK_OK && r->parts != 0) {
        halt(s, FS_HALT_SNAPSHOT, "the snapshot at %" PRIu64 ", part %u of %u: %s", r->seq,
             r->part, r->parts, why);
        return;
    }
    if (bad != FS_CHECK_OK)
        skip(s, r->seq, why);
    if (bad == FS_CHECK_OUTSIDE)
        s->outside++;
    k = in_txn(s, st, r->seq, stream_id, r, b, bad != FS_CHECK_OK, last);
    s->snap_in = last ? 0 : r->seq;
    if (b != NULL) {
        b->answered = 1;
        for (; k < b->n; k++)   /* a message skipped: its writes were not applied */
            rbd_sinks_complete(&st->sinks, b->tickets[k], "ERR filter-source nats: the write's "
                               "message was skipped (see the log)");
    }
    if (b != NULL && s->snap_every != 0 && r->seq % s->snap_every == 0)
        rbd_fsource_snap_take(s, st, r->seq, stream_id);
}

/* A new set-up from s->applied is asked of the thread (its next message
 * is gone from the stream, or was skipped here): once per consumer (gen),
 * whose later deliveries are dropped. */
static void resync(rbd_fsource_t *s, uint64_t gen, const char *error)
{
    if (gen == s->asked_gen)
        return;
    s->asked_gen = gen;
    pthread_mutex_lock(&s->mu);
    s->resync = 1;
    s->resync_from = s->applied;
    s->ready = 0;
    snprintf(s->error, sizeof(s->error), "%s", error);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* The stream delivered seq after s->applied: the messages between were
 * purged (after a snapshot) while this host lagged; the thread sets up
 * again from s->applied, which bootstraps from the snapshot. */
static void gap(rbd_fsource_t *s, uint64_t gen, uint64_t seq)
{
    char error[200];

    if (gen == s->asked_gen)
        return;
    rbd_log(LOG_WARNING, "filter source: stream %s delivered sequence %" PRIu64 " after %" PRIu64
            ": the messages between are gone from it: checking it, bootstrapping from its "
            "snapshot", s->stream, seq, s->applied);
    snprintf(error, sizeof(error), "bootstrapping: sequence %" PRIu64 " is gone from the "
             "stream", s->applied + 1);
    resync(s, gen, error);
}

/* Halted on message s->halt_seq (FS_HALT_FORMAT), r (of this consumer)
 * is after it: if it is NATS.SKIP's skip of that message, the message is
 * skipped here as on every host (its position recorded alone) and the
 * stream followed again from there. */
static void look_for_skip(rbd_fsource_t *s, rbd_state_t *st, const fs_rx_t *r, uint64_t gen,
                          uint64_t stream_id)
{
    uint64_t seq = s->halt_seq;
    char why[300];

    if (r->format != FS_FORMAT || check_msg(s, r, why, sizeof(why)) != FS_CHECK_OK ||
        !rbd_fsource_is_skip(r->data, r->len, seq, stream_id))
        return;
    s->halted = 0;
    s->halt_seq = 0;
    s->halt_why[0] = '\0';
    snprintf(why, sizeof(why), "skipped by NATS.SKIP (its record at sequence %" PRIu64 ")",
             r->seq);
    skip(s, seq, why);
    (void)in_txn(s, st, seq, stream_id, NULL, NULL, 1, 1);
    rbd_log(LOG_NOTICE, "filter source: stream %s: NATS.SKIP's record at %" PRIu64 " found: "
            "applying again from %" PRIu64, s->stream, r->seq, seq + 1);
    resync(s, gen, "following again after NATS.SKIP");
}

/* A delivered sequence at or below the one applied: the stream went
 * backwards (deleted and made again?): its identity is checked now. */
static void backwards(rbd_fsource_t *s, uint64_t gen, uint64_t seq)
{
    if (gen == s->asked_gen)
        return;
    s->asked_gen = gen;
    rbd_log(LOG_WARNING, "filter source: stream %s delivered sequence %" PRIu64 " after %"
            PRIu64 " was applied: checking its identity", s->stream, seq, s->applied);
    pthread_mutex_lock(&s->mu);
    s->recheck = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void rbd_fsource_dispatch(rbd_fsource_t *s, rbd_state_t *st, const fs_rx_t *rx, uint64_t gen,
                          uint64_t stream_id)
{
    if (rx->gen != gen)
        return;   /* dropped: a consumer replaced (resync) */
    if (s->halted) {
        if (s->halted == FS_HALT_FORMAT && rx->parts == 0 && rx->seq > s->halt_seq)
            look_for_skip(s, st, rx, gen, stream_id);
    } else if (rx->parts != 0) {
        if (rx->part == 0 ? rx->seq > s->applied : rx->seq == s->snap_in)
            apply_msg(s, st, rx, stream_id);
    } else if (rx->seq == s->applied + 1) {
        apply_msg(s, st, rx, stream_id);
    } else if (rx->seq > s->applied) {
        gap(s, gen, rx->seq);
    } else {
        backwards(s, gen, rx->seq);
    }
}

void rbd_fsource_thread_halt(rbd_fsource_t *s, const char *line)
{
    if (line[0] != '\0' && !s->halted)
        halt(s, FS_HALT_THREAD, "%s", line);
    else if (line[0] == '\0' && s->halted == FS_HALT_THREAD) {
        s->halted = 0;
        s->halt_why[0] = '\0';
        rbd_log(LOG_NOTICE, "filter source: stream %s can be followed again: applying from "
                "%" PRIu64, s->stream, s->applied + 1);
    }
}

int rbd_fsource_skip(rbd_fsource_t *s, rbd_state_t *st, uint64_t seq, uint64_t client,
                     char *err, size_t cap)
{
    rbd_op_t op = { .type = RBD_OP_REPL_SKIP, .client = client, .reply = RBD_REPLY_OK };
    int rc;

    if (!s->halted) {
        snprintf(err, cap, "ERR NATS.SKIP: this host is not halted (it applied stream %s up to %"
                 PRIu64 "): it skips only a message that halted it for its Rb-Format",
                 s->stream, s->applied);
        return -1;
    }
    if (s->halted != FS_HALT_FORMAT || s->halt_seq != seq) {
        snprintf(err, cap, "ERR NATS.SKIP: this host is not halted on message %" PRIu64 "'s "
                 "Rb-Format: %.400s", seq, s->halt_why);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    op.repl.stream = s->stream_id;
    pthread_mutex_unlock(&s->mu);
    op.repl.seq = seq;
    rc = rbd_op_run(st, NULL, &op);
    if (rc == RBD_OP_DEFERRED)
        return 0;
    snprintf(err, cap, "%s", rc == RBD_OP_EREPLY ? op.why : "ERR NATS.SKIP: out of memory");
    return -1;
}
