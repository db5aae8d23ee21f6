/*
 * cmd_cbf.c - the counting Bloom filter commands (CBF.*, ours: RedisBloom
 * has no counting Bloom filter): their table and handlers.  Each mutation
 * is one op (ops.c: CBF_RESERVE, CBF_ADD, CBF_DEL, CBF_LOADCHUNK, applied
 * by ops_cbf.c), logged and replayed; queries read the segment as any
 * reader does (rb_cbf_*).
 *
 * Replies, in the words of the other kinds': CBF.ADD 1 or "ERR counting
 * Bloom filter is full" (capacity keys present); CBF.MADD per key 1, then
 * that error for each key not added once the filter is full; CBF.DEL 1,
 * or 0 when refused (one of the key's counters is 0: it is not in the
 * filter, nothing changed); CBF.EXISTS / MEXISTS / COUNT 0 for a missing
 * filter (as BF.EXISTS), the other commands "ERR not found".  Items are
 * keys: not empty, at most max-key-bytes (as BF.*'s).  No command
 * creates a filter but CBF.RESERVE and CBF.LOADCHUNK.  A name holding a
 * filter of another kind answers WRONGTYPE, as everywhere in ringbloomd.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf_impl.h"   /* lib: rbi_cbf_dump */
#include "cmd.h"
#include "ops.h"

#define FULL "ERR counting Bloom filter is full"

/* The reply of a filter that could not be read or changed. */
static void cbf_error(rbd_ctx_t *x, int rc)
{
    if (rc == RB_ENOENT)
        rbi_resp_error(x->out, "ERR not found");
    else if (rc == RB_EEXIST)
        rbi_resp_error(x->out, "ERR item exists");
    else if (rc == RB_EFULL)
        rbi_resp_error(x->out, FULL);
    else if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
}

/* CBF.RESERVE key error_rate capacity [COUNTERBITS 4|8] */
static void cmd_cbf_reserve(rbd_ctx_t *x)
{
    unsigned char secret[RB_BLOOM_SECRET_BYTES];
    rbd_op_t op = { .type = RBD_OP_CBF_RESERVE, .name = x->argv[1], .len = x->argl[1] };
    rb_cbf_params_t p = { 0, 0.0, 4, NULL };
    rbi_cbf_shape_t s;
    long long cap, bits;
    uint64_t m;
    uint32_t k;
    int rc;

    if (x->argc != 4 && x->argc != 6) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if (rbd_cmd_arg_double(x, 2, &p.error_rate) != 0) {
        rbi_resp_error(x->out, "ERR bad error rate");
        return;
    }
    if (!(p.error_rate > 0 && p.error_rate < 1)) {
        rbi_resp_error(x->out, "ERR (0 < error rate range < 1) ");
        return;
    }
    if (rbd_cmd_arg_ll(x, 3, &cap) != 0 || cap < 1 || (uint64_t)cap > RB_CBF_MAX_CAPACITY) {
        rbi_resp_error(x->out, "ERR capacity must be an integer in [1, %llu]",
                       (unsigned long long)RB_CBF_MAX_CAPACITY);
        return;
    }
    if (x->argc == 6) {
        if (!rbd_cmd_arg_is(x, 4, "COUNTERBITS")) {
            rbi_resp_error(x->out, "ERR syntax error: CBF.RESERVE key error_rate capacity "
                           "[COUNTERBITS 4|8]");
            return;
        }
        if (rbd_cmd_arg_ll(x, 5, &bits) != 0 || (bits != 4 && bits != 8)) {
            rbi_resp_error(x->out, "ERR COUNTERBITS must be 4 or 8");
            return;
        }
        p.counter_bits = (uint32_t)bits;
    }
    p.capacity = (uint64_t)cap;
    if (rb_cbf_size(p.capacity, p.error_rate, p.counter_bits, &m, &k) != RB_OK) {
        rbi_resp_error(x->out, "ERR capacity and error rate give more than %llu counters "
                       "or %u probes", (unsigned long long)RB_CBF_MAX_COUNTERS, RB_CBF_MAX_K);
        return;
    }
    if (rbi_cbf_shape(rbi_cbf_layout_of(p.counter_bits), m, k, &s) &&
        rbd_cmd_work_ok(x, rbi_cbf_bytes(&s), "a counting Bloom filter this large") != 0)
        return;
    /* The secret is chosen here and logged: the replay makes the same filter. */
    arc4random_buf(secret, sizeof(secret));
    op.cbf = p;
    op.secret = secret;
    if ((rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else if (rc == RB_EEXIST) {
        rb_cbf_t *h;
        int kind = rb_cbf_open(x->s->state.seg, x->argv[1], x->argl[1], &h);
        if (kind == RB_OK)
            rb_cbf_close(h);
        cbf_error(x, kind == RB_EWRONGTYPE ? RB_EWRONGTYPE : rc);
    } else if (rc == RB_ENOSPC)
        cbf_error(x, rc);
    else
        rbd_cmd_create_error(x, rc);
}

/* CBF.ADD key item, CBF.MADD key item...: adds in order, stopping when
 * the filter is full (the keys before stay added, and logged). */
static void cbf_add(rbd_ctx_t *x, int multi)
{
    size_t n = x->argc - 2;
    rb_key_t *keys;
    rbd_op_t op = { .type = RBD_OP_CBF_ADD, .name = x->argv[1], .len = x->argl[1] };
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0 || rbd_cmd_arg_keys(x, 2) != 0)
        return;
    if ((keys = calloc(n, sizeof(*keys))) == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (rb_key_t){ x->argv[2 + i], x->argl[2 + i] };
    op.keys = keys;
    op.nkeys = n;
    rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc != RB_OK && (rc != RB_EFULL || !multi || op.nkeys == 0)) {
        cbf_error(x, rc);
    } else if (!multi) {
        rbi_resp_int(x->out, 1);
    } else {
        rbi_resp_array(x->out, n);
        for (size_t i = 0; i < n; i++)
            if (i < op.nkeys)
                rbi_resp_int(x->out, 1);
            else
                rbi_resp_error(x->out, FULL);
    }
    free(keys);
}

static void cmd_cbf_add(rbd_ctx_t *x)
{
    cbf_add(x, 0);
}

static void cmd_cbf_madd(rbd_ctx_t *x)
{
    cbf_add(x, 1);
}

/* CBF.DEL key item: 1 deleted, 0 refused (the item is not in the filter). */
static void cmd_cbf_del(rbd_ctx_t *x)
{
    rb_key_t item = { x->argv[2], x->argl[2] };
    rbd_op_t op = { .type = RBD_OP_CBF_DEL, .name = x->argv[1], .len = x->argl[1],
                    .keys = &item, .nkeys = 1 };
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0 || rbd_cmd_arg_key(x, 2) != 0)
        return;
    if ((rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) != RB_OK)
        cbf_error(x, rc);
    else
        rbi_resp_int(x->out, !op.noop);
}

/* The kind's reads for the shared handlers (rbd_reads_t: EXISTS,
 * MEXISTS, COUNT, SCANDUMP). */
static int check_open(rbd_ctx_t *x, const char *name, size_t len, void **h)
{
    rb_cbf_t *k = NULL;
    int rc = rb_cbf_open(x->s->state.seg, name, len, &k);

    *h = k;
    return rc;
}

static void check_close(void *h)
{
    rb_cbf_close(h);
}

static int check_contains(const void *h, const void *key, size_t len)
{
    return rb_cbf_contains(h, key, len);
}

static int check_count(const void *h, const void *key, size_t len, uint64_t *c)
{
    return rb_cbf_count(h, key, len, c);
}

static int check_dump(const void *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                      size_t *len, int64_t *next)
{
    return rbi_cbf_dump(h, iter, max_chunk, buf, len, next);
}

static const rbd_reads_t reads = {
    check_open, check_close, check_contains, check_count, check_dump, cbf_error, 1,
};

static void cmd_cbf_exists(rbd_ctx_t *x)
{
    rbd_cmd_check(x, &reads, 0, 0);
}

static void cmd_cbf_mexists(rbd_ctx_t *x)
{
    rbd_cmd_check(x, &reads, 1, 0);
}

static void cmd_cbf_count(rbd_ctx_t *x)
{
    rbd_cmd_check(x, &reads, 0, 1);
}

/* CBF.INFO key: the filter's figures (rb_cbf_info_t). */
static void cmd_cbf_info(rbd_ctx_t *x)
{
    rb_cbf_info_t in;
    rb_cbf_t *h;
    char err[32];
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if ((rc = rb_cbf_open(x->s->state.seg, x->argv[1], x->argl[1], &h)) == RB_OK) {
        rc = rb_cbf_info(h, &in);
        rb_cbf_close(h);
    }
    if (rc != RB_OK) {
        cbf_error(x, rc);
        return;
    }
    snprintf(err, sizeof(err), "%.17g", in.error_rate);
    rbi_resp_map(x->out, 9);
    rbi_resp_simple(x->out, "Capacity");
    rbi_resp_int(x->out, (long long)in.capacity);
    rbi_resp_simple(x->out, "Error rate");
    rbi_resp_bulk_str(x->out, err);
    rbi_resp_simple(x->out, "Size");
    rbi_resp_int(x->out, (long long)in.bytes);
    rbi_resp_simple(x->out, "Number of counters");
    rbi_resp_int(x->out, (long long)in.counters);
    rbi_resp_simple(x->out, "Number of hash functions");
    rbi_resp_int(x->out, in.k);
    rbi_resp_simple(x->out, "Counter bits");
    rbi_resp_int(x->out, in.counter_bits);
    rbi_resp_simple(x->out, "Number of items inserted");
    rbi_resp_int(x->out, (long long)in.items);
    rbi_resp_simple(x->out, "Number of items deleted");
    rbi_resp_int(x->out, (long long)in.deletes);
    rbi_resp_simple(x->out, "Saturated counters");
    rbi_resp_int(x->out, (long long)in.saturated);
}

/* CBF.SCANDUMP key iter: [next iter, bytes], RedisBloom's iterator (0
 * gives the header, the counters' bytes follow from 1; [0, ""] at the
 * end), in our format (lib/cbf/cbf_dump.c). */
static void cmd_cbf_scandump(rbd_ctx_t *x)
{
    rbd_cmd_scandump(x, &reads);
}

/* CBF.LOADCHUNK key iter data: iter 1 with no such filter takes a header
 * (it makes the filter, live at once, empty until the data chunks come),
 * else data at the iterator CBF.SCANDUMP gave with it.  Logged, replayed. */
static void cmd_cbf_loadchunk(rbd_ctx_t *x)
{
    rbd_cmd_loadchunk(x, RBD_OP_CBF_LOADCHUNK, cbf_error);
}

const rbd_command_t rbd_cmd_cbf_table[] = {
    RBD_COMMAND("CBF.RESERVE", -4, CMD_WRITE, cmd_cbf_reserve, "cbf",
                "Creates a counting Bloom filter",
                "key error_rate:double capacity:integer [COUNTERBITS (4|8)]"),
    RBD_COMMAND("CBF.ADD", 3, CMD_WRITE | CMD_FAST, cmd_cbf_add, "cbf",
                "Adds an item to a counting Bloom filter",
                "key item"),
    RBD_COMMAND("CBF.MADD", -3, CMD_WRITE | CMD_FAST, cmd_cbf_madd, "cbf",
                "Adds items to a counting Bloom filter",
                "key item..."),
    RBD_COMMAND("CBF.DEL", 3, CMD_WRITE | CMD_FAST, cmd_cbf_del, "cbf",
                "Deletes an item from a counting Bloom filter (only one that was added: "
                "deleting an item never added can remove others)",
                "key item"),
    RBD_COMMAND("CBF.EXISTS", 3, CMD_FAST, cmd_cbf_exists, "cbf",
                "Tells whether an item may be in a counting Bloom filter",
                "key item"),
    RBD_COMMAND("CBF.MEXISTS", -3, CMD_FAST, cmd_cbf_mexists, "cbf",
                "Tells whether each item may be in a counting Bloom filter",
                "key item..."),
    RBD_COMMAND("CBF.COUNT", 3, CMD_FAST, cmd_cbf_count, "cbf",
                "Returns the smallest of an item's counters in a counting Bloom filter",
                "key item"),
    RBD_COMMAND("CBF.INFO", 2, CMD_FAST, cmd_cbf_info, "cbf",
                "Returns a counting Bloom filter's figures",
                "key"),
    RBD_COMMAND("CBF.SCANDUMP", 3, 0, cmd_cbf_scandump, "cbf",
                "Returns a chunk of a counting Bloom filter's dump",
                "key iterator:integer"),
    RBD_COMMAND("CBF.LOADCHUNK", 4, CMD_WRITE, cmd_cbf_loadchunk, "cbf",
                "Loads a chunk of a counting Bloom filter's dump",
                "key iterator:integer data"),
    RBD_COMMAND_END,
};
