/*
 * check_sink.c - the op-sink seam (daemon/ops/sink.h) on a server built in
 * this process (tsrv.h: the log registered as main.c registers it): a
 * test sink registered beside the log is shown every op once, in the
 * order applied, exactly the ops the log recorded (read back from its
 * file), inside the frame of a transaction; a refused or no-op command
 * shows nothing; one sink's held flush holds the turn.  A sink that takes
 * an op defers its reply: nothing is applied, logged or answered until
 * it completes the ticket, the answer goes to the client that asked
 * (server.c's reply function), once; inside EXEC, or for an op without a
 * client, no ticket is given.  A sink that takes the Bloom writes as log
 * records and applies them later (as a filter source applies its stream)
 * answers them in the bytes a local apply gives, RESP2 and RESP3.
 */
#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "bytes.h"
#include "cmd.h"
#include "ops.h"
#include "rb_test.h"
#include "record.h"
#include "tsrv.h"

#define MAXSEEN 64

/* A test sink: what it was shown, as "TYPE name" lines, the frames as
 * "BEGIN" / "END"; it takes the ring ops while `take` is set. */
typedef struct rec {
    char seen[MAXSEEN][64];
    size_t n;
    int flush_rc, flushes, polls, ticks;
    int take;
    uint64_t tickets[8];
    size_t ntickets;
} rec_t;

static void rec_line(rec_t *r, const char *line)
{
    ck_assert_uint_lt(r->n, MAXSEEN);
    snprintf(r->seen[r->n++], sizeof(r->seen[0]), "%s", line);
}

static int rec_accept(void *self, rbd_state_t *st, const rbd_op_t *op, uint64_t ticket,
                      char *why, size_t cap)
{
    rec_t *r = self;

    (void)st;
    if (!r->take || !rbd_op_changes_ring(op->type))
        return RBD_SINK_APPLY;
    if (ticket == 0) {
        snprintf(why, cap, "ERR test sink: no ticket");
        return RBD_SINK_REPLY;
    }
    ck_assert_uint_lt(r->ntickets, 8);
    r->tickets[r->ntickets++] = ticket;
    return RBD_SINK_DEFERRED;
}

static void rec_on_op(void *self, const rbd_op_t *op)
{
    char line[64];

    snprintf(line, sizeof(line), "%s %.*s", rbd_op_name(op->type), (int)op->len,
             op->name ? op->name : "");
    rec_line(self, line);
}

static size_t rec_txn_begin(void *self)
{
    rec_line(self, "BEGIN");
    return 7;
}

static void rec_txn_end(void *self, size_t mark)
{
    ck_assert_uint_eq(mark, 7);   /* txn_begin's value comes back */
    rec_line(self, "END");
}

static int rec_flush(void *self)
{
    rec_t *r = self;

    r->flushes++;
    return r->flush_rc;
}

static void rec_poll(void *self, rbd_state_t *st)
{
    (void)st;
    ((rec_t *)self)->polls++;
}

static void rec_tick(void *self, rbd_state_t *st)
{
    (void)st;
    ((rec_t *)self)->ticks++;
}

static const rbd_sink_ops_t rec_sink = {
    .name = "test", .accept = rec_accept, .on_op = rec_on_op, .txn_begin = rec_txn_begin,
    .txn_end = rec_txn_end, .flush = rec_flush, .poll = rec_poll, .tick = rec_tick,
};

/* Runs the request of the NULL-terminated words as t's client, then the
 * turn's flush (every sink's); the reply bytes, valid until the next call. */
static const char *run(tsrv_t *t, const char *word, ...)
{
    const char *argv[16];
    size_t argl[16], n;
    va_list ap;

    va_start(ap, word);
    n = tsrv_words(argv, argl, 16, word, ap);
    va_end(ap);
    t->c.out.len = 0;
    rbd_cmd_execute(&t->s, &t->c, n, argv, argl);
    t->flushed = rbd_sinks_flush(&t->s.state.sinks);
    ck_assert_uint_lt(t->c.out.len, sizeof(t->reply));
    if (t->c.out.len > 0)   /* no reply yet (deferred): out.data may be NULL */
        memcpy(t->reply, t->c.out.data, t->c.out.len);
    t->reply[t->c.out.len] = '\0';
    return t->reply;
}

/* The log's records as the lines rec_on_op writes (a TXN as BEGIN, its
 * members, END), appended to out; records at p[0..n). */
static void log_lines(const unsigned char *p, size_t n, rec_t *out)
{
    size_t i = 0;

    while (i + RBD_REC_HDR <= n) {
        uint32_t len = rbd_get_u32(p + i);
        unsigned type = p[i + 8];
        rbd_keys_t scratch = { NULL, 0 };
        rbd_op_t op;

        ck_assert_uint_le(i + 8 + len, n);
        if (type == RBD_OP_TXN) {
            rec_line(out, "BEGIN");
            log_lines(p + i + RBD_REC_HDR, len - 1, out);
            rec_line(out, "END");
        } else {
            ck_assert_int_eq(rbd_op_decode(type, p + i + RBD_REC_HDR, len - 1, &op, &scratch),
                             RB_OK);
            rec_on_op(out, &op);
        }
        free(scratch.v);
        i += 8 + len;
    }
    ck_assert_uint_eq(i, n);
}

static void read_log(const tsrv_t *t, rec_t *out)
{
    char path[128];
    unsigned char *data = malloc(1u << 20);
    size_t len;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", t->dir, RBD_LOG_FILE);
    ck_assert_ptr_nonnull(data);
    ck_assert_ptr_nonnull(f = fopen(path, "rb"));
    len = fread(data, 1, 1u << 20, f);
    fclose(f);
    ck_assert_uint_ge(len, RBD_LOG_HDR);
    memset(out, 0, sizeof(*out));
    log_lines(data + RBD_LOG_HDR, len - RBD_LOG_HDR, out);
    free(data);
}

START_TEST(test_sink_sees_every_op_once_in_order)
{
    static const char *const want[] = {
        "BF.RESERVE f", "BF.ADD f", "RING.ADD n1", "RING.WEIGHT n1", "BEGIN", "BF.ADD f",
        "RING.ADD n2", "END", "PFADD h", "DEL f",
    };
    rec_t r = { .n = 0 }, logged;
    tsrv_t t;

    tsrv_open_sized(&t, "checksink", 8u << 20, 16);
    ck_assert_int_eq(rbd_sinks_add(&t.s.state.sinks, &rec_sink, &r, -1), 0);
    ck_assert_str_eq(run(&t, "BF.RESERVE", "f", "0.01", "100", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "BF.RESERVE", "f", "0.01", "100", NULL), "-ERR item exists\r\n");
    ck_assert_str_eq(run(&t, "BF.ADD", "f", "a", NULL), ":1\r\n");
    ck_assert_str_eq(run(&t, "BF.EXISTS", "f", "a", NULL), ":1\r\n");
    ck_assert_str_eq(run(&t, "RING.ADD", "n1", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "RING.ADD", "n1", NULL),
                     "-ERR node exists: 'n1' (RING.WEIGHT and RING.UP, DOWN or DRAIN "
                     "change it)\r\n");
    ck_assert_str_eq(run(&t, "RING.WEIGHT", "n1", "3", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "MULTI", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "BF.ADD", "f", "b", NULL), "+QUEUED\r\n");
    ck_assert_str_eq(run(&t, "RING.ADD", "n2", NULL), "+QUEUED\r\n");
    ck_assert_str_eq(run(&t, "EXEC", NULL), "*2\r\n:1\r\n+OK\r\n");
    ck_assert_str_eq(run(&t, "PFADD", "h", "x", NULL), ":1\r\n");
    ck_assert_str_eq(run(&t, "PFADD", "h", "x", NULL), ":0\r\n");   /* no register changed */
    ck_assert_str_eq(run(&t, "DEL", "f", NULL), ":1\r\n");
    ck_assert_int_eq(t.flushed, 0);
    ck_assert_uint_eq(r.n, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < r.n; i++)
        ck_assert_str_eq(r.seen[i], want[i]);
    ck_assert_uint_eq(t.s.state.sinks.seen, 8);   /* the ops, not the frame */
    /* The log, the other sink, recorded exactly the same ops. */
    read_log(&t, &logged);
    ck_assert_uint_eq(logged.n, r.n);
    for (size_t i = 0; i < r.n; i++)
        ck_assert_str_eq(logged.seen[i], r.seen[i]);
    /* One sink holding the turn holds it; each flush asks every sink. */
    r.flushes = 0;
    r.flush_rc = -1;
    run(&t, "PING", NULL);
    ck_assert_int_eq(t.flushed, -1);
    ck_assert_int_eq(r.flushes, 1);
    r.flush_rc = 0;
    run(&t, "PING", NULL);
    ck_assert_int_eq(t.flushed, 0);
    tsrv_close(&t);
}
END_TEST

/* What the reply function got. */
typedef struct answers {
    uint64_t client[8];
    char err[8][64];
    size_t n;
} answers_t;

static void answer(void *arg, uint64_t client, const rbd_reply_t *r)
{
    answers_t *a = arg;

    ck_assert_uint_lt(a->n, 8);
    ck_assert_int_eq(r->shape, RBD_REPLY_OK);   /* the ring ops' */
    a->client[a->n] = client;
    snprintf(a->err[a->n++], sizeof(a->err[0]), "%s", r->err ? r->err : "(ok)");
}

START_TEST(test_sink_deferred_reply_completed_by_ticket)
{
    rec_t r = { .take = 1 };
    answers_t got = { .n = 0 };
    rbd_op_t op = { .type = RBD_OP_RING_ADD, .name = "n9", .len = 2, .weight = 1 };
    tsrv_t t;

    tsrv_open_sized(&t, "checksink", 8u << 20, 16);
    t.c.id = 42;
    rbd_sinks_init(&t.s.state.sinks, answer, &got);
    ck_assert_int_eq(rbd_sinks_add(&t.s.state.sinks, &rec_sink, &r, -1), 0);
    /* Taken: no reply, nothing applied, nothing shown or logged. */
    ck_assert_str_eq(run(&t, "RING.ADD", "n1", NULL), "");
    ck_assert_str_eq(run(&t, "RING.ADD", "n2", NULL), "");
    ck_assert_uint_eq(r.ntickets, 2);
    ck_assert_uint_ne(r.tickets[0], r.tickets[1]);
    ck_assert_uint_eq(t.s.state.sinks.npending, 2);
    ck_assert_uint_eq(t.s.state.sinks.opened, 2);
    ck_assert_uint_eq(rb_ring_node_count(t.s.state.ring), 0);
    ck_assert_uint_eq(r.n, 0);
    ck_assert_uint_eq(t.s.aof.changes, 0);
    ck_assert_uint_eq(got.n, 0);
    /* Completed in any order, each once, to the client that asked. */
    rbd_sinks_complete(&t.s.state.sinks, r.tickets[1], "ERR test: refused");
    rbd_sinks_complete(&t.s.state.sinks, r.tickets[0], NULL);
    rbd_sinks_complete(&t.s.state.sinks, r.tickets[0], NULL);
    rbd_sinks_complete(&t.s.state.sinks, 999, NULL);
    ck_assert_uint_eq(got.n, 2);
    ck_assert_uint_eq(got.client[0], 42);
    ck_assert_str_eq(got.err[0], "ERR test: refused");
    ck_assert_uint_eq(got.client[1], 42);
    ck_assert_str_eq(got.err[1], "(ok)");
    ck_assert_uint_eq(t.s.state.sinks.npending, 0);
    /* No ticket inside EXEC (its replies cannot wait), nor without a
     * client: the sink must answer now. */
    ck_assert_str_eq(run(&t, "MULTI", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "RING.ADD", "n3", NULL), "+QUEUED\r\n");
    ck_assert_str_eq(run(&t, "EXEC", NULL), "*1\r\n-ERR test sink: no ticket\r\n");
    ck_assert_int_eq(rbd_op_run(&t.s.state, &t.s.aof, &op), RBD_OP_EREPLY);
    ck_assert_str_eq(op.why, "ERR test sink: no ticket");
    ck_assert_uint_eq(r.ntickets, 2);
    /* Other ops are applied and shown as ever. */
    ck_assert_str_eq(run(&t, "BF.ADD", "f", "a", NULL), ":1\r\n");
    /* The EXEC's frame, empty (the log drops its TXN record), then the
     * BF.ADD's create and add. */
    ck_assert_uint_eq(r.n, 4);
    ck_assert_str_eq(r.seen[0], "BEGIN");
    ck_assert_str_eq(r.seen[1], "END");
    ck_assert_str_eq(r.seen[2], "BF.RESERVE f");
    ck_assert_str_eq(r.seen[3], "BF.ADD f");
    /* Not taken: applied here. */
    r.take = 0;
    ck_assert_str_eq(run(&t, "RING.ADD", "n1", NULL), "+OK\r\n");
    ck_assert_uint_eq(rb_ring_node_count(t.s.state.ring), 1);
    tsrv_close(&t);
}
END_TEST

/* server.c's reply function: the waiting client gets the answer, once,
 * and its later requests may run. */
START_TEST(test_sink_server_answer_reaches_the_client)
{
    client_t *clients[1];
    tsrv_t t;

    tsrv_open_sized(&t, "checksink", 8u << 20, 16);
    t.c.id = 7;
    t.c.awaits_reply = 1;
    clients[0] = &t.c;
    t.s.clients = clients;
    t.s.clients_cap = 1;
    ck_assert_int_eq(rbd_sinks_add(&t.s.state.sinks, &rec_sink, &(rec_t){ .take = 1 }, -1), 0);
    t.s.state.sinks.pending = malloc(sizeof(rbd_pending_t));
    ck_assert_ptr_nonnull(t.s.state.sinks.pending);
    t.s.state.sinks.pending[0] = (rbd_pending_t){ 5, 7, RBD_REPLY_OK };
    t.s.state.sinks.npending = t.s.state.sinks.cap = 1;
    rbi_buf_append(&t.c.in, "PING", 4);
    rbd_sinks_complete(&t.s.state.sinks, 5, NULL);
    ck_assert_uint_eq(t.c.out.len, 5);
    ck_assert_int_eq(memcmp(t.c.out.data, "+OK\r\n", 5), 0);
    ck_assert_int_eq(t.c.awaits_reply, 0);
    ck_assert_int_eq(t.s.resume_pending, 1);
    rbd_sinks_complete(&t.s.state.sinks, 5, "ERR late");   /* once */
    ck_assert_uint_eq(t.c.out.len, 5);
    rbi_buf_free(&t.c.in);
    t.s.clients = NULL;
    t.s.clients_cap = 0;
    tsrv_close(&t);
}
END_TEST

/* A sink that takes the Bloom filter ops and applies them later, as a
 * filter source applies them from its stream: accept frames each op as a
 * log record (rbd_op_encode, record.h) and keeps its ticket; deliver()
 * runs the records through rbd_op_run (applying: the sink lets them
 * through) and completes each ticket with its result. */
typedef struct loop {
    unsigned char buf[8192];
    size_t len;
    uint64_t tickets[16];
    size_t n;
    int applying;
} loop_t;

static void loop_put(void *ctx, const void *p, size_t n)
{
    loop_t *l = ctx;

    ck_assert_uint_le(l->len + n, sizeof(l->buf));
    memcpy(l->buf + l->len, p, n);
    l->len += n;
}

static int loop_accept(void *self, rbd_state_t *st, const rbd_op_t *op, uint64_t ticket,
                       char *why, size_t cap)
{
    loop_t *l = self;
    size_t at = l->len;

    (void)st;
    if (l->applying || (op->type != RBD_OP_BF_RESERVE && op->type != RBD_OP_BF_ADD))
        return RBD_SINK_APPLY;
    if (ticket == 0) {
        snprintf(why, cap, "ERR test loop: no ticket");
        return RBD_SINK_REPLY;
    }
    ck_assert_uint_lt(l->n, 16);
    ck_assert_uint_le(l->len + RBD_REC_HDR, sizeof(l->buf));
    rbd_rec_start(l->buf + at, (uint8_t)op->type);
    l->len += RBD_REC_HDR;
    rbd_op_encode(op, loop_put, l);
    rbd_rec_seal(l->buf + at, l->len - at);
    l->tickets[l->n++] = ticket;
    return RBD_SINK_DEFERRED;
}

static const rbd_sink_ops_t loop_sink = { .name = "loop", .accept = loop_accept };

static void deliver(tsrv_t *t, loop_t *l)
{
    rbd_keys_t keys = { NULL, 0 };
    rbd_rec_walk_t w;
    rbd_rec_t r;
    size_t k = 0;

    l->applying = 1;
    rbd_rec_walk_init(&w, l->buf, l->len);
    while (rbd_rec_next(&w, &r, NULL) == 1) {
        uint8_t fresh[16];
        rbd_op_t op;
        int rc = rbd_op_from_record(&t->s.state, r.type, r.payload, r.plen, &op, &keys);

        ck_assert_uint_lt(k, l->n);
        if (rc == RB_OK) {
            ck_assert_uint_le(op.nkeys, sizeof(fresh));
            memset(fresh, RB_BLOOM_NOT_ADDED, sizeof(fresh));
            op.fresh = fresh;
            rc = rbd_op_run(&t->s.state, &t->s.aof, &op);
        }
        rbd_sinks_complete_result(&t->s.state.sinks, l->tickets[k++], rc,
                                  r.type == RBD_OP_BF_ADD ? fresh : NULL,
                                  r.type == RBD_OP_BF_ADD && rc != RB_ENOENT ? op.nkeys : 0);
    }
    ck_assert_uint_eq(k, l->n);
    ck_assert_int_eq(rbd_sinks_flush(&t->s.state.sinks), 0);
    free(keys.v);
    l->len = l->n = 0;
    l->applying = 0;
}

/* The replies of the Bloom writes a sink took and answered with their
 * results are the bytes a local apply gives, in RESP2 and RESP3: an add
 * that creates its filter (two tickets, one reply), adds new and old
 * keys, a reserve of a name that exists, one that does not; the client
 * waits for all of its command's tickets; nothing is applied before the
 * delivery, everything after it. */
START_TEST(test_sink_deferred_results_answer_as_a_local_apply)
{
    static const char *const script[][6] = {
        { "BF.ADD", "f", "a", NULL }, { "BF.MADD", "f", "a", "b", "c", NULL },
        { "BF.RESERVE", "f", "0.01", "100", NULL }, { "BF.RESERVE", "g", "0.01", "100", NULL },
        { "BF.MADD", "g", "x", "x", NULL }, { "BF.ADD", "g", "x", NULL },
    };
    client_t *clients[1];
    loop_t *l = calloc(1, sizeof(*l));
    char local[6][2][64];
    tsrv_t t;

    ck_assert_ptr_nonnull(l);
    /* The local answers, RESP2 then RESP3, each on a fresh server. */
    for (int p = 0; p < 2; p++) {
        tsrv_open_sized(&t, "checksink", 8u << 20, 16);
        t.c.out.resp3 = p;
        for (size_t i = 0; i < 6; i++) {
            const char *const *w = script[i];
            snprintf(local[i][p], sizeof(local[i][p]), "%s",
                     run(&t, w[0], w[1], w[2], w[3], w[4], w[5]));
        }
        tsrv_close(&t);
    }
    ck_assert_str_eq(local[1][0], "*3\r\n:0\r\n:1\r\n:1\r\n");
    ck_assert_str_eq(local[1][1], "*3\r\n#f\r\n#t\r\n#t\r\n");
    /* Through the sink. */
    for (int p = 0; p < 2; p++) {
        tsrv_open_sized(&t, "checksink", 8u << 20, 16);
        t.c.id = 9;
        t.c.out.resp3 = p;
        clients[0] = &t.c;
        t.s.clients = clients;
        t.s.clients_cap = 1;
        ck_assert_int_eq(rbd_sinks_add(&t.s.state.sinks, &loop_sink, l, -1), 0);
        for (size_t i = 0; i < 6; i++) {
            const char *const *w = script[i];
            uint64_t opened = t.s.state.sinks.opened;

            ck_assert_str_eq(run(&t, w[0], w[1], w[2], w[3], w[4], w[5]), "");
            t.c.awaits_reply += t.s.state.sinks.opened - opened;   /* as client.c counts */
            ck_assert_uint_eq(t.c.awaits_reply, l->n);
            ck_assert_uint_eq(t.c.awaits_reply, i == 0 ? 2 : 1);   /* create + add */
            if (i == 0)
                ck_assert_str_eq(run(&t, "EXISTS", "f", NULL), ":0\r\n");
            t.c.out.len = 0;
            deliver(&t, l);
            ck_assert_uint_eq(t.c.awaits_reply, 0);
            ck_assert_uint_eq(t.c.out.len, strlen(local[i][p]));
            ck_assert_int_eq(memcmp(t.c.out.data, local[i][p], t.c.out.len), 0);
        }
        ck_assert_str_eq(run(&t, "BF.EXISTS", "f", "c", NULL), p ? "#t\r\n" : ":1\r\n");
        ck_assert_uint_eq(t.s.state.sinks.npending, 0);
        t.s.clients = NULL;
        t.s.clients_cap = 0;
        tsrv_close(&t);
    }
    free(l);
}
END_TEST

START_TEST(test_sink_poll_tick_and_remove)
{
    rec_t a = { .n = 0 }, b = { .n = 0 };
    rbd_sinks_t s;

    memset(&s, 0, sizeof(s));
    rbd_sinks_init(&s, NULL, NULL);
    ck_assert_int_eq(rbd_sinks_add(&s, &rec_sink, &a, 5), 0);
    ck_assert_int_eq(rbd_sinks_add(&s, &rec_sink, &b, -1), 0);
    ck_assert_int_eq(rbd_sinks_poll(&s, NULL, 5), 1);
    ck_assert_int_eq(rbd_sinks_poll(&s, NULL, 6), 0);
    ck_assert_int_eq(rbd_sinks_poll(&s, NULL, -1), 0);
    ck_assert_int_eq(a.polls, 1);
    ck_assert_int_eq(b.polls, 0);
    rbd_sinks_tick(&s, NULL);
    ck_assert_int_eq(a.ticks, 1);
    ck_assert_int_eq(b.ticks, 1);
    rbd_sinks_remove(&s, &a);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_int_eq(rbd_sinks_poll(&s, NULL, 5), 0);
    rbd_sinks_tick(&s, NULL);
    ck_assert_int_eq(a.ticks, 1);
    ck_assert_int_eq(b.ticks, 2);
    for (int i = 1; i < RBD_SINKS_MAX; i++)
        ck_assert_int_eq(rbd_sinks_add(&s, &rec_sink, &a, -1), 0);
    ck_assert_int_eq(rbd_sinks_add(&s, &rec_sink, &a, -1), -1);
    rbd_sinks_free(&s);
}
END_TEST

int main(void)
{
    rbd_log_init(1, LOG_WARNING);   /* the snapshots' notices are not news here */
    return RB_TEST_MAIN("sink",
                        RB_TCASE("stream", 0, NULL, NULL, test_sink_sees_every_op_once_in_order,
                                 test_sink_poll_tick_and_remove),
                        RB_TCASE("deferred", 0, NULL, NULL,
                                 test_sink_deferred_reply_completed_by_ticket,
                                 test_sink_server_answer_reaches_the_client,
                                 test_sink_deferred_results_answer_as_a_local_apply));
}
