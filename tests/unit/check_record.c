/*
 * check_record.c - the framing of op records (daemon/ops/record.h) and a
 * record's op (ops.h's rbd_op_from_record): a sealed record parses back
 * to its type and payload, for several types and sizes; every reason a
 * record is not whole (a cut header, length 0, a length past the end,
 * any one bit flipped in the type, the payload or the checksum) is told
 * apart; the walker goes over back-to-back records and stops at a torn
 * last one; the bytes sealed are the bytes ringbloomd wrote before the
 * framing moved out of aof.c (two records of a log in the fuzz corpus),
 * and the records a server logs now (tsrv.h) parse and seal again to the
 * same bytes; a logged record's op resolves its filter, and a cut
 * payload, an unknown type or a missing filter give RB_ETRUNC, RB_EINVAL
 * and RB_ENOENT; the replication position (REPL_POS) is logged inside its
 * message's unit, replays, and a segment dump carries it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cmd.h"
#include "ops.h"
#include "rb_test.h"
#include "record.h"
#include "seg_repl.h"
#include "seg_txn.h"
#include "tsrv.h"

/* Frames a record of type with payload p[0..n) at buf + at: its size. */
static size_t frame(unsigned char *buf, size_t at, uint8_t type, const void *p, size_t n)
{
    rbd_rec_start(buf + at, type);
    if (n > 0)
        memcpy(buf + at + RBD_REC_HDR, p, n);
    rbd_rec_seal(buf + at, RBD_REC_HDR + n);
    return RBD_REC_HDR + n;
}

/* Deterministic payload bytes. */
static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 8));
}

START_TEST(test_record_seal_then_parse_round_trip)
{
    static const struct { uint8_t type; size_t n; } cases[] = {
        { RBD_OP_RING_ADD, 27 }, { RBD_OP_BF_ADD, 1 }, { RBD_OP_TXN, 0 },
        { RBD_OP_CBF_LOADCHUNK, 4000 }, { 200, 5 },   /* a type no op has: framing only */
    };
    unsigned char buf[8192], payload[4096];
    rbd_rec_t r;

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t at = 3 + c, size;

        memset(buf, 0xa5, sizeof(buf));
        fill(payload, cases[c].n, (unsigned)c);
        size = frame(buf, at, cases[c].type, payload, cases[c].n);
        ck_assert_uint_eq(size, RBD_REC_HDR + cases[c].n);
        ck_assert_uint_eq(rbd_get_u32(buf + at), cases[c].n + 1);
        /* exactly its bytes: a buffer ending right after it, or longer */
        ck_assert_int_eq(rbd_rec_at(buf, at + size, at, &r), RBD_REC_OK);
        ck_assert_int_eq(rbd_rec_at(buf, sizeof(buf), at, &r), RBD_REC_OK);
        ck_assert_uint_eq(r.type, cases[c].type);
        ck_assert_uint_eq(r.plen, cases[c].n);
        ck_assert_uint_eq(r.size, size);
        ck_assert_ptr_eq(r.payload, buf + at + RBD_REC_HDR);
        ck_assert_int_eq(memcmp(r.payload, payload, cases[c].n), 0);
    }
}
END_TEST

START_TEST(test_record_every_failure_reason)
{
    unsigned char buf[64], payload[20];
    rbd_rec_t r, untouched;
    size_t size;

    fill(payload, sizeof(payload), 9);
    size = frame(buf, 0, RBD_OP_BF_ADD, payload, sizeof(payload));
    memset(&untouched, 0x5a, sizeof(untouched));
    /* a header cut short: 0..8 bytes, and an offset at or past the end */
    for (size_t n = 0; n < RBD_REC_HDR; n++) {
        r = untouched;
        ck_assert_int_eq(rbd_rec_at(buf, n, 0, &r), RBD_REC_SHORT);
        ck_assert_int_eq(memcmp(&r, &untouched, sizeof(r)), 0);
    }
    ck_assert_int_eq(rbd_rec_at(buf, size, size, &r), RBD_REC_SHORT);
    ck_assert_int_eq(rbd_rec_at(buf, size, size + 1, &r), RBD_REC_SHORT);
    /* a length past the end: the record cut anywhere after its header */
    for (size_t n = RBD_REC_HDR; n < size; n++)
        ck_assert_int_eq(rbd_rec_at(buf, n, 0, &r), RBD_REC_PAST_END);
    rbd_put_u32(buf, 0xffffffffu);
    ck_assert_int_eq(rbd_rec_at(buf, sizeof(buf), 0, &r), RBD_REC_PAST_END);
    /* length 0 */
    rbd_put_u32(buf, 0);
    ck_assert_int_eq(rbd_rec_at(buf, size, 0, &r), RBD_REC_EMPTY);
    rbd_put_u32(buf, (uint32_t)(size - 8));
    ck_assert_int_eq(rbd_rec_at(buf, size, 0, &r), RBD_REC_OK);
    /* one bit flipped in the checksum, the type or the payload */
    for (size_t bit = 32; bit < size * 8; bit++) {
        buf[bit / 8] ^= (unsigned char)(1u << bit % 8);
        ck_assert_msg(rbd_rec_at(buf, size, 0, &r) == RBD_REC_CHECKSUM, "bit %zu", bit);
        buf[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    ck_assert_int_eq(rbd_rec_at(buf, size, 0, &r), RBD_REC_OK);
    /* each reason has words of its own */
    for (int a = RBD_REC_OK; a <= RBD_REC_CHECKSUM; a++) {
        ck_assert_uint_gt(strlen(rbd_rec_why_text((rbd_rec_why_t)a)), 0);
        for (int b = RBD_REC_OK; b < a; b++)
            ck_assert_str_ne(rbd_rec_why_text((rbd_rec_why_t)a),
                             rbd_rec_why_text((rbd_rec_why_t)b));
    }
}
END_TEST

START_TEST(test_record_walker_over_records_and_a_torn_last)
{
    unsigned char buf[256], payload[40];
    size_t at[4] = { 0 }, n = 0;
    rbd_rec_walk_t w;
    rbd_rec_why_t why;
    rbd_rec_t r;

    for (int k = 0; k < 3; k++) {
        fill(payload, 10u + 15u * (unsigned)k, (unsigned)k);
        n += frame(buf, n, (uint8_t)(RBD_OP_RING_ADD + k), payload, 10u + 15u * (unsigned)k);
        at[k + 1] = n;
    }
    rbd_rec_walk_init(&w, buf, n);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(rbd_rec_next(&w, &r, &why), 1);
        ck_assert_int_eq(why, RBD_REC_OK);
        ck_assert_uint_eq(r.type, RBD_OP_RING_ADD + k);
        ck_assert_uint_eq(r.plen, 10u + 15u * (unsigned)k);
        ck_assert_uint_eq(w.at, at[k + 1]);
    }
    ck_assert_int_eq(rbd_rec_next(&w, &r, &why), 0);
    ck_assert_uint_eq(w.at, n);
    /* the last record torn anywhere: two records, then no whole one where
     * the third starts (its header cut, or its length past the end) */
    for (size_t cut = at[2] + 1; cut < n; cut++) {
        rbd_rec_walk_init(&w, buf, cut);
        ck_assert_int_eq(rbd_rec_next(&w, &r, NULL), 1);
        ck_assert_int_eq(rbd_rec_next(&w, &r, NULL), 1);
        ck_assert_int_eq(rbd_rec_next(&w, &r, &why), -1);
        ck_assert_int_eq(why, cut - at[2] < RBD_REC_HDR ? RBD_REC_SHORT : RBD_REC_PAST_END);
        ck_assert_uint_eq(w.at, at[2]);
        ck_assert_int_eq(rbd_rec_next(&w, &r, NULL), -1);   /* it stays there */
    }
    rbd_rec_walk_init(&w, buf, 0);
    ck_assert_int_eq(rbd_rec_next(&w, &r, NULL), 0);
}
END_TEST

/* The first two records of tests/fuzz/corpus/fuzz_persist/6-log-only, a
 * log ringbloomd wrote before the framing moved to record.c: RING.ADD
 * cache-a.example:11211 and cache-b.example:11211, weight 1. */
static const unsigned char logged[] =
    "\x1c\x00\x00\x00\x6e\xfe\x3c\x77\x01\x01\x00\x00\x00\x15\x00\x63\x61\x63\x68\x65\x2d\x61"
    "\x2e\x65\x78\x61\x6d\x70\x6c\x65\x3a\x31\x31\x32\x31\x31"
    "\x1c\x00\x00\x00\x32\x79\xb3\x63\x01\x02\x00\x00\x00\x15\x00\x63\x61\x63\x68\x65\x2d\x62"
    "\x2e\x65\x78\x61\x6d\x70\x6c\x65\x3a\x31\x31\x32\x31\x31";

START_TEST(test_record_bytes_are_those_the_log_wrote)
{
    unsigned char buf[sizeof(logged)];
    size_t n = sizeof(logged) - 1, o = 0;
    rbd_rec_walk_t w;
    rbd_rec_t r;
    int k = 0;

    rbd_rec_walk_init(&w, logged, n);
    while (rbd_rec_next(&w, &r, NULL) == 1) {
        ck_assert_uint_eq(r.type, RBD_OP_RING_ADD);
        ck_assert_uint_eq(r.plen, 27);
        o += frame(buf, o, r.type, r.payload, r.plen);
        k++;
    }
    ck_assert_int_eq(k, 2);
    ck_assert_uint_eq(o, n);
    ck_assert_int_eq(memcmp(buf, logged, n), 0);
}
END_TEST

/* ---- records a server logs, and their ops ------------------------------------ */

/* Runs the request argv[0..n) as t's client and the turn's flush; the
 * reply must start with `want`. */
static void exec(tsrv_t *t, const char *want, size_t n, const char **argv)
{
    size_t argl[8];

    ck_assert_uint_le(n, 8);
    for (size_t i = 0; i < n; i++)
        argl[i] = strlen(argv[i]);
    t->c.out.len = 0;
    rbd_cmd_execute(&t->s, &t->c, n, argv, argl);
    ck_assert_int_eq(rbd_sinks_flush(&t->s.state.sinks), 0);
    ck_assert_uint_ge(t->c.out.len, strlen(want));
    ck_assert_int_eq(memcmp(t->c.out.data, want, strlen(want)), 0);
}

static void put_bytes(void *ctx, const void *p, size_t n)
{
    rbi_buf_append(ctx, p, n);
}

START_TEST(test_record_logged_records_and_their_ops)
{
    unsigned char *bytes = malloc(1u << 16), copy[512];
    rbd_keys_t keys = { NULL, 0 };
    rbi_buf_t enc = { 0 };
    int seen_add = 0, records = 0;
    char path[128];
    rbd_rec_walk_t w;
    rbd_op_t op;
    rbd_rec_t r;
    size_t len;
    tsrv_t t;
    FILE *f;

    ck_assert_ptr_nonnull(bytes);
    tsrv_open_sized(&t, "checkrecord", 8u << 20, 16);
    exec(&t, "+OK", 4, (const char *[]){ "BF.RESERVE", "f", "0.01", "100" });
    exec(&t, "*", 4, (const char *[]){ "BF.MADD", "f", "a", "b" });
    exec(&t, "+OK", 3, (const char *[]){ "RING.ADD", "n1", "1" });
    snprintf(path, sizeof(path), "%s/%s", t.dir, RBD_LOG_FILE);
    ck_assert_ptr_nonnull(f = fopen(path, "rb"));
    len = fread(bytes, 1, 1u << 16, f);
    fclose(f);
    ck_assert_uint_gt(len, RBD_LOG_HDR);
    /* every record whole; sealed again, the same bytes */
    rbd_rec_walk_init(&w, bytes + RBD_LOG_HDR, len - RBD_LOG_HDR);
    while (rbd_rec_next(&w, &r, NULL) == 1) {
        ck_assert_uint_le(r.size, sizeof(copy));
        ck_assert_uint_eq(frame(copy, 0, r.type, r.payload, r.plen), r.size);
        ck_assert_int_eq(memcmp(copy, r.payload - RBD_REC_HDR, r.size), 0);
        ck_assert_int_eq(rbd_op_from_record(&t.s.state, r.type, r.payload, r.plen, &op, &keys),
                         RB_OK);
        ck_assert_uint_eq(op.type, r.type);
        if (r.type == RBD_OP_BF_ADD) {
            /* a record naming a Bloom filter: its handle resolved */
            ck_assert_ptr_nonnull(op.bf);
            ck_assert_uint_eq(op.len, 1);
            ck_assert_int_eq(memcmp(op.name, "f", 1), 0);
            ck_assert_uint_eq(op.nkeys, 2);
            /* cut short of its fields */
            ck_assert_int_eq(rbd_op_from_record(&t.s.state, r.type, r.payload, 3, &op, &keys),
                             RB_ETRUNC);
            /* the same record for a filter that does not exist */
            op.name = "nope";
            op.len = 4;
            rbd_op_encode(&op, put_bytes, &enc);
            ck_assert(!enc.oom);
            ck_assert_int_eq(rbd_op_from_record(&t.s.state, r.type, (const void *)enc.data,
                                                enc.len, &op, &keys), RB_ENOENT);
            ck_assert_ptr_null(op.bf);
            ck_assert_uint_eq(op.len, 4);
            ck_assert_int_eq(memcmp(op.name, "nope", 4), 0);
            seen_add = 1;
        }
        records++;
    }
    ck_assert_uint_eq(w.at, len - RBD_LOG_HDR);
    ck_assert_int_eq(records, 3);
    ck_assert(seen_add);
    /* a type no op has */
    ck_assert_int_eq(rbd_op_from_record(&t.s.state, 200, bytes, 4, &op, &keys), RB_EINVAL);
    free(keys.v);
    rbi_buf_free(&enc);
    free(bytes);
    tsrv_close(&t);
}
END_TEST

/* REPL_POS (ops_repl.c), run as a filter source runs it, last in a
 * message's unit: the segment's position is set and the unit's mark
 * cleared; the log holds it inside the unit's TXN record, after the
 * message's own op, and it decodes to the same position; replayed onto
 * another server it sets that one's; a dump of the segment restores it.
 * A segment no replicated change reached holds 0, 0. */
START_TEST(test_record_repl_pos_logged_replayed_restored)
{
    const uint64_t seq = 0x0123456789abcdefULL, stream = 0xfeedfacecafebeefULL;
    rb_segment_opts_t o = { .mode = 0600, .max_size = 8u << 20, .max_filters = 16 };
    rbd_op_t pos = { .type = RBD_OP_REPL_POS, .repl = { seq, stream } }, op;
    rbd_op_t del = { .type = RBD_OP_BF_DELETE, .name = "g", .len = 1 };
    unsigned char *bytes = malloc(1u << 16);
    rbd_keys_t keys = { NULL, 0 };
    rb_test_dump_t d = { NULL, 0 };
    uint64_t got_seq, got_stream;
    int in_txn = 0, members = 0;
    rbd_rec_walk_t w, inner;
    rb_segment_t *r;
    char path[128];
    rbd_rec_t rec, txn, m;
    size_t len, mark;
    tsrv_t t, u;
    FILE *f;

    ck_assert_ptr_nonnull(bytes);
    tsrv_open_sized(&t, "checkrecord", 8u << 20, 16);
    rbi_segment_repl_get(t.s.state.seg, &got_seq, &got_stream);
    ck_assert_uint_eq(got_seq, 0);
    ck_assert_uint_eq(got_stream, 0);
    exec(&t, "+OK", 4, (const char *[]){ "BF.RESERVE", "g", "0.01", "100" });
    /* one message's unit: its op (a DEL), then its position */
    mark = rbd_op_txn_begin(&t.s.state, NULL);
    ck_assert_int_eq(rbd_op_run(&t.s.state, NULL, &del), RB_OK);
    ck_assert_int_eq(rbd_op_run(&t.s.state, NULL, &pos), RB_OK);
    rbd_op_txn_end(&t.s.state, NULL, mark);
    ck_assert_int_eq(rbd_sinks_flush(&t.s.state.sinks), 0);
    ck_assert_int_eq(rbi_segment_txn_open(t.s.state.seg), 0);
    rbi_segment_repl_get(t.s.state.seg, &got_seq, &got_stream);
    ck_assert_uint_eq(got_seq, seq);
    ck_assert_uint_eq(got_stream, stream);

    /* the log: BF_RESERVE, then TXN [DEL g, REPL_POS] */
    snprintf(path, sizeof(path), "%s/%s", t.dir, RBD_LOG_FILE);
    ck_assert_ptr_nonnull(f = fopen(path, "rb"));
    len = fread(bytes, 1, 1u << 16, f);
    fclose(f);
    rbd_rec_walk_init(&w, bytes + RBD_LOG_HDR, len - RBD_LOG_HDR);
    ck_assert_int_eq(rbd_rec_next(&w, &rec, NULL), 1);
    ck_assert_uint_eq(rec.type, RBD_OP_BF_RESERVE);
    ck_assert_int_eq(rbd_rec_next(&w, &rec, NULL), 1);
    ck_assert_uint_eq(rec.type, RBD_OP_TXN);
    txn = rec;
    ck_assert_int_eq(rbd_rec_next(&w, &rec, NULL), 0);
    rbd_rec_walk_init(&inner, txn.payload, txn.plen);
    while (rbd_rec_next(&inner, &m, NULL) == 1) {
        ck_assert_uint_eq(m.type, members == 0 ? RBD_OP_BF_DELETE : RBD_OP_REPL_POS);
        members++;
        in_txn |= m.type == RBD_OP_REPL_POS;
        if (m.type != RBD_OP_REPL_POS)
            continue;
        ck_assert_uint_eq(m.plen, 16);
        ck_assert_int_eq(rbd_op_from_record(&t.s.state, m.type, m.payload, m.plen, &op, &keys),
                         RB_OK);
        ck_assert_uint_eq(op.repl.seq, seq);
        ck_assert_uint_eq(op.repl.stream, stream);
        ck_assert_int_eq(rbd_op_from_record(&t.s.state, m.type, m.payload, 15, &op, &keys),
                         RB_ETRUNC);
        /* replayed onto another server: its position */
        ck_assert_int_eq(rbd_op_from_record(&t.s.state, m.type, m.payload, m.plen, &op, &keys),
                         RB_OK);
        tsrv_open_sized(&u, "checkrecord2", 8u << 20, 16);
        ck_assert_int_eq(rbd_op_replay(&u.s.state, &op), RB_OK);
        rbi_segment_repl_get(u.s.state.seg, &got_seq, &got_stream);
        ck_assert_uint_eq(got_seq, seq);
        ck_assert_uint_eq(got_stream, stream);
        tsrv_close(&u);
    }
    ck_assert_int_eq(members, 2);
    ck_assert(in_txn);

    /* a dump restores it */
    ck_assert_int_eq(rb_segment_dump(t.s.state.seg, rb_test_dump_fn, &d), RB_OK);
    ck_assert_int_eq(rb_segment_restore(NULL, &o, d.data, d.len, &r), RB_OK);
    rbi_segment_repl_get(r, &got_seq, &got_stream);
    ck_assert_uint_eq(got_seq, seq);
    ck_assert_uint_eq(got_stream, stream);
    rb_segment_close(r);
    free(d.data);
    free(keys.v);
    free(bytes);
    tsrv_close(&t);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("record",
                        RB_TCASE("framing", 60, NULL, NULL, test_record_seal_then_parse_round_trip,
                                 test_record_every_failure_reason,
                                 test_record_walker_over_records_and_a_torn_last,
                                 test_record_bytes_are_those_the_log_wrote),
                        RB_TCASE("ops", 60, NULL, NULL,
                                 test_record_logged_records_and_their_ops,
                                 test_record_repl_pos_logged_replayed_restored));
}
