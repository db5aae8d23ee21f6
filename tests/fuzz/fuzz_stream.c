/*
 * fuzz_stream.c - libFuzzer target: stream messages as `filter-source
 * nats` applies them (daemon/sources/filter_source_apply.c's
 * rbd_fsource_dispatch, which checks each with filter_source_check.c),
 * on a source built in this process without its NATS thread
 * (nats-filters r:*), over a private segment that holds two local
 * Bloom filters outside the pattern ("local:x", "plain"): what a hostile
 * publisher on the stream's subject can make a host do.
 *
 * Input: byte 0 picks max-command-bytes (1 MiB, 2 MiB, 64 MiB; the segment
 * has 8 MiB); then messages, each a header byte h - bits 0-1 its Rb-Format
 * (none, 1, 2: newer, 1), bit 2 one byte of it flipped (the next input
 * byte says which), bits 3-4 its sequence (the next, a gap of 2, the last
 * applied again, the next), bit 5 a snapshot's part (0 of 1) - then a
 * byte n (n mod 6 records), each a type byte (mod 7: BF_RESERVE, BF_ADD,
 * REPL_SKIP, BF_LOADCHUNK, REPL_POS, CMS_INIT, DEL), a name byte (mod the
 * names below: inside the pattern, outside it, empty, with a NUL, 255
 * bytes) and its fields: a reserve 3 bytes of capacity and one each of
 * error rate (mod 7, invalid ones among them), flags, generations,
 * expansion; an add a count (mod 8) of keys, each a length (mod 16) and
 * bytes; a skip or a position a byte (odd: the halted message, else the
 * applied one plus it); a chunk an iterator byte and a length (mod 64)
 * and bytes.  Records are sealed (whole, checksummed) unless flipped.
 *
 * Must hold (a failure aborts; ASan/UBSan/LSan catch the rest):
 *   - after every message: the segment's transaction mark is clear, its
 *     stream position is the source's applied sequence, and every filter
 *     in it matches nats-filters or is one of the two local ones;
 *   - at the end, the local filters' dumps are what they were;
 *   - nothing leaks.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <xxhash.h>

#include "bloom.h"
#include "filter_source_impl.h"
#include "rbd_log.h"
#include "seg_repl.h"
#include "seg_txn.h"
#define FUZZ_TARGET "fuzz_stream"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MSG_CAP (64u << 10)
#define STREAM_ID 0x5eed5eed5eed5eedULL

static char long_name[RB_FILTER_NAME_MAX + 1];
static const struct {
    const char *s;
    size_t len;
} names[] = {
    { "r:a", 3 }, { "r:b", 3 }, { "r:big", 5 }, { "local:x", 7 }, { "plain", 5 },
    { "r:\0z", 4 }, { "", 0 }, { "R:a", 3 }, { "r:*", 3 }, { "r", 1 }, { long_name, 255 },
};
#define NNAMES (sizeof(names) / sizeof(names[0]))
static const char *const local[] = { "local:x", "plain" };
static const double rates[] = { 0.1, 0.01, 0.001, 1e-6, 0.5, 0.0, 2.0 };

typedef struct input {
    const uint8_t *p;
    size_t n, at;
} input_t;

static uint8_t next(input_t *in)
{
    return in->at < in->n ? in->p[in->at++] : 0;
}

/* The hash of filter name's dump (0: none). */
static uint64_t filter_hash(rb_segment_t *seg, const char *name)
{
    static unsigned char buf[RBI_DUMP_HEADER_MAX + (64u << 10)];
    rb_bloom_t *bf = NULL;
    int64_t iter = 0, nxt;
    uint64_t h = 1;
    size_t len;

    if (rb_bloom_open(seg, name, strlen(name), &bf) != RB_OK)
        return 0;
    while (rbi_bloom_dump(bf, iter, 64u << 10, buf, &len, &nxt) == RB_OK && nxt != 0) {
        h = XXH3_64bits_withSeed(buf, len, h);
        iter = nxt;
    }
    rb_bloom_close(bf);
    return h;
}

static int inside_or_local(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    (void)kind;
    (void)arg;
    for (size_t i = 0; i < 2; i++)
        if (len == strlen(local[i]) && memcmp(name, local[i], len) == 0)
            return 0;
    CHECK(rbd_fsource_matches("r:*", name, len));
    return 0;
}

/* One record described by the input, sealed at msg + *len (room kept). */
static void record(input_t *in, const rbd_fsource_t *s, unsigned char *msg, size_t *len)
{
    static const unsigned types[] = { RBD_OP_BF_RESERVE, RBD_OP_BF_ADD, RBD_OP_REPL_SKIP,
                                      RBD_OP_BF_LOADCHUNK, RBD_OP_REPL_POS, RBD_OP_CMS_INIT,
                                      RBD_OP_BF_DELETE };
    static unsigned char secret[RB_BLOOM_SECRET_BYTES], data[64];
    rb_key_t keys[8];
    uint8_t b, nk, nm;
    rbd_op_t op;

    memset(&op, 0, sizeof(op));
    op.type = types[next(in) % 7];
    nm = next(in) % NNAMES;
    op.name = names[nm].s;
    op.len = names[nm].len;
    op.secret = secret;
    switch (op.type) {
    case RBD_OP_BF_RESERVE:
        op.params.capacity = 1 + ((uint64_t)next(in) | (uint64_t)next(in) << 8 |
                                  (uint64_t)next(in) << 16);
        op.params.error_rate = rates[next(in) % 7];
        b = next(in);
        op.params.flags = (b & 1 ? RB_BLOOM_NONSCALING : 0) | (b & 2 ? RB_BLOOM_AGING : 0);
        op.params.window = b & 4 ? 60 : 0;
        op.params.layout = b & 8 ? RB_BLOOM_BLOCKED : RB_BLOOM_STANDARD;
        op.params.generations = next(in) % 5;
        op.params.expansion = next(in) % 5;
        break;
    case RBD_OP_BF_ADD:
        nk = next(in) % 8;
        for (uint8_t k = 0; k < nk; k++) {
            keys[k].len = next(in) % 16;
            keys[k].ptr = in->at + keys[k].len <= in->n ? (const char *)in->p + in->at : "";
            if (in->at + keys[k].len > in->n)
                keys[k].len = 0;
            in->at += keys[k].len;
        }
        op.keys = keys;
        op.nkeys = nk;
        break;
    case RBD_OP_REPL_SKIP:
    case RBD_OP_REPL_POS:
        b = next(in);
        op.repl.seq = b & 1 ? s->halt_seq : s->applied + b;
        op.repl.stream = b & 2 ? STREAM_ID : b;
        break;
    case RBD_OP_BF_LOADCHUNK:
        op.iter = next(in);
        op.dlen = next(in) % sizeof(data);
        for (size_t k = 0; k < op.dlen; k++)
            data[k] = next(in);
        op.data = data;
        break;
    default:
        break;
    }
    if (*len + rbd_fsource_record(&op, NULL) <= MSG_CAP)
        *len += rbd_fsource_record(&op, msg + *len);
}

/* One message described by the input, delivered to the source. */
static void message(input_t *in, rbd_fsource_t *s, rbd_state_t *st)
{
    static unsigned char msg[MSG_CAP];
    uint8_t h = next(in), flip = h & 4 ? next(in) : 0, n = next(in) % 6;
    size_t len = 0;
    fs_rx_t *rx;

    for (uint8_t k = 0; k < n; k++)
        record(in, s, msg, &len);
    if ((h & 4) && len > 0)
        msg[flip % len] ^= 0x5a;
    rx = calloc(1, sizeof(*rx) + len);
    CHECK(rx != NULL);
    memcpy(rx->data, msg, len);
    rx->len = len;
    rx->gen = s->gen;
    rx->format = (h & 3) == 0 ? 0 : (h & 3) == 2 ? 2 : 1;
    switch ((h >> 3) & 3) {
    case 1: rx->seq = s->applied + 3; break;
    case 2: rx->seq = s->applied; break;
    default: rx->seq = s->applied + 1; break;
    }
    if (h & 32) {
        rx->parts = 1;
        rx->part = 0;
    }
    rbd_fsource_dispatch(s, st, rx, s->gen, STREAM_ID);
    free(rx);
}

static void state_open(rbd_state_t *st, rbd_fsource_t *s, rbd_config_t *cfg, uint8_t limit)
{
    static const uint64_t limits[] = { 1u << 20, 2u << 20, 64u << 20 };
    rb_segment_opts_t o;
    rb_bloom_params_t p;
    rb_bloom_t *bf;

    memset(st, 0, sizeof(*st));
    memset(&o, 0, sizeof(o));
    o.mode = 0600;
    o.max_size = 8u << 20;
    o.max_filters = 16;
    o.flags = RB_SEGMENT_HIDDEN;
    CHECK(rb_segment_create(NULL, &o, &st->seg) == RB_OK);
    memset(&p, 0, sizeof(p));
    p.capacity = 1000;
    p.error_rate = 0.01;
    p.layout = RB_BLOOM_BLOCKED;
    p.expansion = RB_BLOOM_DEFAULT_EXPANSION;
    for (size_t i = 0; i < 2; i++) {
        CHECK(rb_bloom_reserve(st->seg, local[i], strlen(local[i]), &p) == RB_OK);
        CHECK(rb_bloom_open(st->seg, local[i], strlen(local[i]), &bf) == RB_OK);
        CHECK(rb_bloom_add(bf, "kept", 4) >= 0);
        rb_bloom_close(bf);
    }
    CHECK(rbd_config_defaults(cfg, "fuzz") == RB_OK);
    cfg->max_command_bytes = limits[limit % 3];
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->rx_cv, NULL);
    snprintf(s->stream, sizeof(s->stream), "RBF");
    snprintf(s->glob, sizeof(s->glob), "r:*");
    s->cfg = cfg;
    s->st = st;
    s->efd = -1;
    s->timeout_ms = 2000;
    s->gen = 1;
    s->stream_id = STREAM_ID;
    s->origin = 1;
}

static void state_close(rbd_state_t *st, rbd_fsource_t *s)
{
    free(s->keys.v);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->rx_cv);
    pthread_mutex_destroy(&s->mu);
    rbd_filters_close(&st->filters);
    rb_segment_close(st->seg);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rbd_log_init(1, LOG_CRIT);   /* skips and halts are expected here */
    memset(long_name, 'a', RB_FILTER_NAME_MAX);
    memcpy(long_name, "r:", 2);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static rbd_fsource_t s;
    static rbd_config_t cfg;
    rbd_state_t st;
    input_t in = { data, size, 1 };
    uint64_t before[2], seq, id, cursor;

    if (size == 0)
        return 0;
    state_open(&st, &s, &cfg, data[0]);
    for (size_t i = 0; i < 2; i++)
        before[i] = filter_hash(st.seg, local[i]);
    while (in.at < in.n) {
        message(&in, &s, &st);
        CHECK(!rbi_segment_txn_open(st.seg));
        rbi_segment_repl_get(st.seg, &seq, &id);
        CHECK(seq == s.applied);
        cursor = 0;
        (void)rb_filter_scan(st.seg, &cursor, SIZE_MAX, inside_or_local, NULL);
    }
    for (size_t i = 0; i < 2; i++)
        CHECK(filter_hash(st.seg, local[i]) == before[i]);
    state_close(&st, &s);
    return 0;
}
