/*
 * cmd_bf.c - the BF.* commands (RedisBloom's, with our options LAYOUT,
 * AGING, GENERATIONS, and BF.RESET; BF.SCANDUMP / BF.LOADCHUNK are
 * cmd_bf_dump.c's): their table and handlers.  Filters change only
 * through ops (ops.c); the handles come from filters.c.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"   /* lib: the dump formats (bloom_dump.c) */
#include "cmd.h"
#include "ops.h"

#define STACK_KEYS 16   /* an add of up to this many keys needs no allocation */

/* The open handle of filter argv[i] (RB_ENOENT in *rc if there is none). */
static rb_bloom_t *filter_arg(rbd_ctx_t *x, size_t i, int *rc)
{
    return rbd_filters_get(&x->s->state.filters, x->s->state.seg, x->argv[i], x->argl[i], rc);
}

/* Creates filter name with p and a secret chosen here, so the log can
 * replay it (the op logs it); reply: what the client is answered if a
 * sink takes the op (sink.h).  rbd_op_run's answer (RBD_OP_EREPLY: the
 * line is the sinks' why). */
static int reserve(rbd_ctx_t *x, const char *name, size_t len, const rb_bloom_params_t *p,
                   rbd_reply_shape_t reply)
{
    unsigned char secret[RB_BLOOM_SECRET_BYTES];
    rbd_op_t op = { .type = RBD_OP_BF_RESERVE, .name = name, .len = len, .params = *p,
                    .client = x->c->id, .reply = (uint8_t)reply };

    arc4random_buf(secret, sizeof(secret));
    op.secret = secret;
    return rbd_op_run(&x->s->state, &x->s->aof, &op);
}

/* Whether a new filter of p stays within max-command-bytes
 * (rbd_bf_reserve_bytes): 0, or replies and returns -1.  Sizes the
 * library refuses are its to report. */
static int size_ok(rbd_ctx_t *x, const rb_bloom_params_t *p)
{
    return rbd_cmd_work_ok(x, rbd_bf_reserve_bytes(p), "a Bloom filter this large");
}

/* The filter for an add into *bf, created with the configured defaults if
 * missing (RedisBloom's BF.ADD/MADD/INSERT behaviour).  0, or -1 having
 * replied.  A create a sink took (sink.h: a replicated filter, made when
 * the stream gives it back) leaves *bf NULL: the add goes to the sink
 * after it, by name, and answers for both (the create's reply is
 * RBD_REPLY_NONE). */
static int filter_for_add(rbd_ctx_t *x, size_t i, const rb_bloom_params_t *create,
                          rb_bloom_t **bf)
{
    int rc;

    if (rbd_cmd_arg_name(x, i, "filter", RB_FILTER_NAME_MAX) != 0)
        return -1;
    *bf = filter_arg(x, i, &rc);
    if (*bf == NULL && rc == RB_ENOENT && create != NULL) {
        if (size_ok(x, create) != 0)
            return -1;
        rc = reserve(x, x->argv[i], x->argl[i], create, RBD_REPLY_NONE);
        if (rc == RBD_OP_DEFERRED)
            return 0;
        if (rc == RBD_OP_EREPLY) {
            rbi_resp_error(x->out, "%s", x->s->state.sinks.why);
            return -1;
        }
        if (rc == RB_OK)
            *bf = filter_arg(x, i, &rc);
    }
    if (*bf == NULL && rc == RB_ENOENT)
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
    else if (*bf == NULL && rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else if (*bf == NULL)
        rbd_cmd_create_error(x, rc);
    return *bf != NULL ? 0 : -1;
}

static rb_bloom_params_t default_params(void)
{
    rb_bloom_params_t p;

    memset(&p, 0, sizeof(p));
    p.capacity = 100;
    p.error_rate = 0.01;
    p.layout = RB_BLOOM_BLOCKED;
    p.expansion = RB_BLOOM_DEFAULT_EXPANSION;
    return p;
}

/* Adds keys argv[first .. first + n) to filter argv[1] (bf; NULL when a
 * sink took its create, and then takes the add), replying one integer per
 * key, in an array if as_array (rbd_cmd_reply_added), or leaving the
 * reply to the sink that took the add (sink.h).  A key that cannot be
 * added (a full non-scaling filter) ends the array with an error element,
 * as RedisBloom does; the keys before it stay added and are logged. */
static void add_keys(rbd_ctx_t *x, rb_bloom_t *bf, size_t first, size_t n, int as_array)
{
    rb_key_t kbuf[STACK_KEYS];
    uint8_t fbuf[STACK_KEYS];
    rb_key_t *keys = n <= STACK_KEYS ? kbuf : malloc(n * sizeof(*keys));
    uint8_t *fresh = n <= STACK_KEYS ? fbuf : malloc(n);
    rbd_op_t op = { .type = RBD_OP_BF_ADD, .name = x->argv[1], .len = x->argl[1],
                    .keys = keys, .nkeys = n, .bf = bf, .fresh = fresh, .client = x->c->id,
                    .reply = as_array ? RBD_REPLY_FRESH_ARRAY : RBD_REPLY_FRESH };
    int rc;

    if (keys == NULL || fresh == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].ptr = x->argv[first + i];
        keys[i].len = x->argl[first + i];
    }
    memset(fresh, RB_BLOOM_NOT_ADDED, n);
    rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc == RBD_OP_EREPLY)
        rbi_resp_error(x->out, "%s", op.why);
    else if (rc != RBD_OP_DEFERRED)   /* deferred: the sink answers (sink.h) */
        rbd_cmd_reply_added(x, fresh, op.nkeys, rc, as_array);
out:
    if (keys != kbuf)
        free(keys);
    if (fresh != fbuf)
        free(fresh);
}

/* ---- BF.RESERVE ---------------------------------------------------------------------- */

/* Where BF.RESERVE's options stand (0: absent). */
typedef struct reserve_args {
    size_t exp_at, layout_at, window_at, gens_at;
    size_t ours;              /* arguments of our options */
    int nonscaling;
} reserve_args_t;

static void reserve_scan(const rbd_ctx_t *x, reserve_args_t *a)
{
    memset(a, 0, sizeof(*a));
    for (size_t i = 4; i < x->argc; i++) {
        size_t *at = rbd_cmd_arg_is(x, i, "LAYOUT") ? &a->layout_at
                     : rbd_cmd_arg_is(x, i, "AGING") ? &a->window_at
                     : rbd_cmd_arg_is(x, i, "GENERATIONS") ? &a->gens_at : NULL;
        if (at != NULL) {
            *at = i++;
            a->ours += i < x->argc ? 2 : 1;
        } else if (rbd_cmd_arg_is(x, i, "NONSCALING")) {
            a->nonscaling = 1;
        } else if (rbd_cmd_arg_is(x, i, "EXPANSION") && a->exp_at == 0) {
            a->exp_at = i;
        }
    }
}

/* RedisBloom's arguments (error rate, capacity, EXPANSION, NONSCALING)
 * into p, checked in its order and words: 0, or replies and returns -1. */
static int reserve_redisbloom(rbd_ctx_t *x, const reserve_args_t *a, rb_bloom_params_t *p)
{
    long long cap, exp = RB_BLOOM_DEFAULT_EXPANSION;

    if (rbd_cmd_arg_double(x, 2, &p->error_rate) != 0)
        rbi_resp_error(x->out, "ERR bad error rate");
    else if (p->error_rate >= 1 || p->error_rate <= 0)
        rbi_resp_error(x->out, "ERR (0 < error rate range < 1) ");
    else if (rbd_cmd_arg_ll(x, 3, &cap) != 0)
        rbi_resp_error(x->out, "ERR bad capacity");
    else if (cap <= 0)
        rbi_resp_error(x->out, "ERR (capacity should be larger than 0)");
    else if (a->exp_at + 1 == x->argc)
        rbi_resp_error(x->out, "ERR no expansion");
    else if (a->exp_at != 0 && a->nonscaling)
        rbi_resp_error(x->out, "Nonscaling filters cannot expand");
    else if (a->exp_at != 0 && rbd_cmd_arg_ll(x, a->exp_at + 1, &exp) != 0)
        rbi_resp_error(x->out, "ERR bad expansion");
    else if (exp < 1)
        rbi_resp_error(x->out, "ERR expansion should be greater or equal to 1");
    else if (exp > RB_BLOOM_MAX_EXPANSION)
        rbi_resp_error(x->out, "ERR expansion should be at most %d", RB_BLOOM_MAX_EXPANSION);
    else {
        p->capacity = (uint64_t)cap;
        p->expansion = (uint32_t)exp;
        p->flags = a->nonscaling ? RB_BLOOM_NONSCALING : 0;
        return 0;
    }
    return -1;
}

/* LAYOUT's value at argv[i]: replies and returns -1 if it is neither. */
static int parse_layout(rbd_ctx_t *x, size_t i, rb_bloom_layout_t *out)
{
    if (rbd_cmd_arg_is(x, i, "standard"))
        *out = RB_BLOOM_STANDARD;
    else if (rbd_cmd_arg_is(x, i, "blocked"))
        *out = RB_BLOOM_BLOCKED;
    else if (rbd_cmd_arg_is(x, i, "redisbloom"))
        *out = RB_BLOOM_REDISBLOOM;
    else {
        rbi_resp_error(x->out, "ERR layout must be standard, blocked or redisbloom");
        return -1;
    }
    return 0;
}

/* The integer after option argv[at], if there is one in [lo, hi]: 0, else -1. */
static int option_ll(const rbd_ctx_t *x, size_t at, long long lo, long long hi, long long *v)
{
    return at + 1 < x->argc && rbd_cmd_arg_ll(x, at + 1, v) == 0 && *v >= lo && *v <= hi
               ? 0 : -1;
}

/* Our options (LAYOUT, AGING, GENERATIONS) into p: 0, or replies and
 * returns -1. */
static int reserve_ours(rbd_ctx_t *x, const reserve_args_t *a, rb_bloom_params_t *p)
{
    long long window = 0, gens = 0;

    if (a->layout_at + 1 == x->argc) {
        rbi_resp_error(x->out, "ERR no layout");
        return -1;
    }
    if (a->layout_at != 0 && parse_layout(x, a->layout_at + 1, &p->layout) != 0)
        return -1;
    if (a->window_at != 0 && option_ll(x, a->window_at, 0, 100000000, &window) != 0) {
        rbi_resp_error(x->out, "ERR AGING wants a window in seconds (0: rotate only when full)");
        return -1;
    }
    if (a->gens_at != 0 && option_ll(x, a->gens_at, 2, RB_BLOOM_MAX_LAYERS, &gens) != 0) {
        rbi_resp_error(x->out, "ERR GENERATIONS must be an integer in [2, %d]", RB_BLOOM_MAX_LAYERS);
        return -1;
    }
    if ((a->window_at != 0 || a->gens_at != 0) && (a->nonscaling || a->exp_at != 0)) {
        rbi_resp_error(x->out, "ERR AGING filters neither scale nor take NONSCALING / EXPANSION");
        return -1;
    }
    if ((a->window_at != 0 || a->gens_at != 0) && p->layout == RB_BLOOM_REDISBLOOM) {
        rbi_resp_error(x->out, "ERR LAYOUT redisbloom filters do not age (RedisBloom has no AGING)");
        return -1;
    }
    if (a->window_at != 0 || a->gens_at != 0)
        p->flags = RB_BLOOM_AGING;
    p->window = (uint32_t)window;
    p->generations = (uint32_t)gens;
    return 0;
}

/* BF.RESERVE name error_rate capacity [EXPANSION n] [NONSCALING], parsed
 * as RedisBloom 2.6 parses it: at most 7 arguments of its own, NONSCALING
 * and the first EXPANSION wherever they stand (from the fourth on), other
 * words ignored, the errors in its order and words.  Our options (LAYOUT,
 * AGING, GENERATIONS, each with a value; the last of a kind counts) come on
 * top of the 7. */
static void cmd_bf_reserve(rbd_ctx_t *x)
{
    rb_bloom_params_t p = default_params();
    reserve_args_t a;
    int rc;

    reserve_scan(x, &a);
    if (x->argc - a.ours > 7) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (reserve_redisbloom(x, &a, &p) != 0 || reserve_ours(x, &a, &p) != 0 ||
        rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0 || size_ok(x, &p) != 0)
        return;
    rc = reserve(x, x->argv[1], x->argl[1], &p, RBD_REPLY_RESERVED);
    if (rc != RBD_OP_DEFERRED)   /* deferred: the sink answers (sink.h); a refusal's line
                                    (RBD_OP_EREPLY) is rbd_cmd_error's */
        rbd_cmd_reply_reserved(x, rc);
}

/* ---- adds ------------------------------------------------------------------------ */

/* What an add that finds no filter creates: the defaults in the layout
 * of bf-default-layout (read per command, so a reload applies at once). */
static rb_bloom_params_t create_params(const rbd_ctx_t *x)
{
    rb_bloom_params_t p = default_params();

    p.layout = (rb_bloom_layout_t)x->s->cfg.bf_default_layout;
    return p;
}

static void cmd_bf_add(rbd_ctx_t *x)
{
    rb_bloom_params_t def = create_params(x);
    rb_bloom_t *bf;

    if (rbd_cmd_arg_key(x, 2) != 0 || filter_for_add(x, 1, &def, &bf) != 0)
        return;
    add_keys(x, bf, 2, 1, 0);
}

static void cmd_bf_madd(rbd_ctx_t *x)
{
    rb_bloom_params_t def = create_params(x);
    rb_bloom_t *bf;

    if (rbd_cmd_arg_keys(x, 2) != 0 || filter_for_add(x, 1, &def, &bf) != 0)
        return;
    add_keys(x, bf, 2, x->argc - 2, 1);
}

/* The value of BF.INSERT's option argv[i] (known by its letters c0 c1:
 * LAYOUT, CAPACITY, ERROR, EXPANSION) into p, *cap or *exp: 0, or replies
 * and returns -1. */
static int insert_value(rbd_ctx_t *x, size_t i, char c0, char c1, rb_bloom_params_t *p,
                        long long *cap, long long *exp)
{
    if (c0 == 'l')
        return parse_layout(x, i + 1, &p->layout);
    if (c0 == 'c' && rbd_cmd_arg_ll(x, i + 1, cap) != 0)
        rbi_resp_error(x->out, "Bad capacity");
    else if (c0 == 'e' && c1 == 'r' && rbd_cmd_arg_double(x, i + 1, &p->error_rate) != 0)
        rbi_resp_error(x->out, "Bad error rate");
    else if (c0 == 'e' && c1 != 'r' && rbd_cmd_arg_ll(x, i + 1, exp) != 0)
        rbi_resp_error(x->out, "Bad expansion");
    else
        return 0;
    return -1;
}

/* BF.INSERT's options before ITEMS into p (capacity and expansion as read,
 * checked once ITEMS is found); *items: the first key, 0 if no ITEMS.  0,
 * or replies and returns -1. */
static int insert_options(rbd_ctx_t *x, rb_bloom_params_t *p, long long *cap, long long *exp,
                          int *nocreate, size_t *items)
{
    size_t i = 2;

    while (i < x->argc) {
        char c0 = x->argl[i] > 0 ? (char)tolower((unsigned char)x->argv[i][0]) : 0;
        char c1 = x->argl[i] > 1 ? (char)tolower((unsigned char)x->argv[i][1]) : 0;
        char c2 = x->argl[i] > 2 ? (char)tolower((unsigned char)x->argv[i][2]) : 0;
        if (c0 == 'i') {                  /* ITEMS (RedisBloom matches by letter) */
            *items = i + 1;
            return 0;
        }
        if (c0 == 'n') {                  /* NOCREATE / NONSCALING: no value */
            if (c2 == 'c')
                *nocreate = 1;
            else
                p->flags |= RB_BLOOM_NONSCALING;
            i++;
            continue;
        }
        if (c0 != 'c' && c0 != 'e' && !rbd_cmd_arg_is(x, i, "LAYOUT")) {
            rbi_resp_error(x->out, "Unknown argument received");
            return -1;
        }
        if (i + 1 >= x->argc) {
            rbd_cmd_wrong_arity(x);
            return -1;
        }
        if (insert_value(x, i, c0, c1, p, cap, exp) != 0)
            return -1;
        i += 2;
    }
    return 0;
}

/* BF.INSERT name [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING]
 * [LAYOUT l] ITEMS key..., parsed as RedisBloom 2.6 parses it: options
 * known by their letters, the last of a kind counts, ranges checked once
 * ITEMS is found (so EXPANSION 0 is refused, a repeated EXPANSION is not,
 * and NONSCALING with EXPANSION makes a non-scaling filter).  LAYOUT is
 * ours. */
static void cmd_bf_insert(rbd_ctx_t *x)
{
    rb_bloom_params_t p = create_params(x);
    long long cap = (long long)p.capacity, exp = (long long)p.expansion;
    int nocreate = 0;
    size_t items = 0;
    rb_bloom_t *bf;

    if (insert_options(x, &p, &cap, &exp, &nocreate, &items) != 0)
        return;
    if (items == 0 || items >= x->argc) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (p.error_rate <= 0 || p.error_rate >= 1 || cap < 1 || exp < 1 ||
        exp > RB_BLOOM_MAX_EXPANSION) {
        rbi_resp_error(x->out, "Bad argument received");
        return;
    }
    p.capacity = (uint64_t)cap;
    p.expansion = (uint32_t)exp;
    if (rbd_cmd_arg_keys(x, items) != 0 ||
        filter_for_add(x, 1, nocreate ? NULL : &p, &bf) != 0)
        return;
    add_keys(x, bf, items, x->argc - items, 1);
}

/* ---- reads ----------------------------------------------------------------------- */

/* BF.EXISTS / BF.MEXISTS: a missing filter answers 0, as in RedisBloom. */
static void exists_keys(rbd_ctx_t *x, size_t first, int as_array)
{
    size_t n = x->argc - first;
    rb_bloom_t *bf = NULL;
    int rc = RB_ENOENT;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0 ||
        rbd_cmd_arg_keys(x, first) != 0)
        return;
    bf = filter_arg(x, 1, &rc);
    if (bf == NULL && rc != RB_ENOENT) {
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
        return;
    }
    if (as_array)
        rbi_resp_array(x->out, n);
    for (size_t i = 0; i < n; i++) {
        int r = bf ? rb_bloom_contains(bf, x->argv[first + i], x->argl[first + i]) : 0;
        rbi_resp_bool(x->out, r == 1);
    }
}

static void cmd_bf_exists(rbd_ctx_t *x)
{
    exists_keys(x, 2, 0);
}

static void cmd_bf_mexists(rbd_ctx_t *x)
{
    exists_keys(x, 2, 1);
}

/* BF.INFO's reply for the whole filter: RedisBloom's fields, then ours
 * for an aging filter; a map (RESP2: a flat array of pairs). */
static void info_all(rbd_ctx_t *x, const rb_bloom_stat_t *st, const long long *v)
{
    rbi_resp_map(x->out, (st->flags & RB_BLOOM_AGING) ? 8 : 5);
    rbi_resp_simple(x->out, "Capacity");
    rbi_resp_int(x->out, v[0]);
    rbi_resp_simple(x->out, "Size");
    rbi_resp_int(x->out, v[1]);
    rbi_resp_simple(x->out, "Number of filters");
    rbi_resp_int(x->out, v[2]);
    rbi_resp_simple(x->out, "Number of items inserted");
    rbi_resp_int(x->out, v[3]);
    rbi_resp_simple(x->out, "Expansion rate");
    if (st->flags & (RB_BLOOM_NONSCALING | RB_BLOOM_AGING))
        rbi_resp_nil(x->out);
    else
        rbi_resp_int(x->out, v[4]);
    if (st->flags & RB_BLOOM_AGING) {
        rbi_resp_simple(x->out, "Generations");
        rbi_resp_int(x->out, st->layers);
        rbi_resp_simple(x->out, "Window");
        rbi_resp_int(x->out, st->window);
        rbi_resp_simple(x->out, "Rotations");
        rbi_resp_int(x->out, (long long)st->rotations);
    }
}

static void cmd_bf_info(rbd_ctx_t *x)
{
    static const char *const fields[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };
    rb_bloom_stat_t st;
    long long v[5];
    rb_bloom_t *bf;
    int rc;

    if (x->argc > 3) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    bf = filter_arg(x, 1, &rc);
    if (bf == NULL || (rc = rb_bloom_info(bf, &st)) != RB_OK) {
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
        return;
    }
    v[0] = (long long)st.capacity;
    v[1] = (long long)st.memory;   /* arrays + directory slot */
    v[2] = st.layers;
    v[3] = (long long)st.items;
    v[4] = st.expansion;
    if (x->argc < 3) {
        info_all(x, &st, v);
        return;
    }
    for (int i = 0; i < 5; i++) {
        if (rbd_cmd_arg_is(x, 2, fields[i])) {
            rbi_resp_array(x->out, 1);
            if (i == 4 && (st.flags & RB_BLOOM_NONSCALING))
                rbi_resp_nil(x->out);
            else
                rbi_resp_int(x->out, v[i]);
            return;
        }
    }
    rbi_resp_error(x->out, "Invalid information value");
}

static void cmd_bf_card(rbd_ctx_t *x)
{
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    bf = filter_arg(x, 1, &rc);
    if (bf == NULL && rc == RB_ENOENT) {
        rbi_resp_int(x->out, 0);
        return;
    }
    if (bf == NULL || (rc = rb_bloom_info(bf, &st)) != RB_OK) {
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
        return;
    }
    rbi_resp_int(x->out, (long long)st.items);
}

/* BF.RESET name (ours): clears the filter for every reader at once. */
static void cmd_bf_reset(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_BF_RESET, .name = x->argv[1], .len = x->argl[1] };
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    op.bf = filter_arg(x, 1, &rc);
    if (op.bf == NULL || (rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) != RB_OK) {
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
        return;
    }
    rbi_resp_simple(x->out, "OK");
}

const rbd_command_t rbd_cmd_bf_table[] = {
    RBD_COMMAND("BF.ADD", 3, CMD_WRITE | CMD_FAST, cmd_bf_add, "bf",
                "Adds an item to a Bloom filter, creating it if missing",
                "key item"),
    RBD_COMMAND("BF.MADD", -3, CMD_WRITE | CMD_FAST, cmd_bf_madd, "bf",
                "Adds items to a Bloom filter, creating it if missing",
                "key item..."),
    RBD_COMMAND("BF.EXISTS", 3, CMD_FAST, cmd_bf_exists, "bf",
                "Checks whether an item may have been added to a Bloom filter",
                "key item"),
    RBD_COMMAND("BF.MEXISTS", -3, CMD_FAST, cmd_bf_mexists, "bf",
                "Checks whether items may have been added to a Bloom filter",
                "key item..."),
    RBD_COMMAND("BF.RESERVE", -4, CMD_WRITE, cmd_bf_reserve, "bf",
                "Creates a Bloom filter",
                "key error_rate:double capacity:integer [EXPANSION expansion:integer] "
                "[NONSCALING] [LAYOUT (STANDARD|BLOCKED|REDISBLOOM)] "
                "[AGING window:integer] [GENERATIONS generations:integer]"),
    RBD_COMMAND("BF.INSERT", -4, CMD_WRITE, cmd_bf_insert, "bf",
                "Adds items to a Bloom filter, creating it with the options given if missing",
                "key [CAPACITY capacity:integer] [ERROR error:double] "
                "[EXPANSION expansion:integer] [NOCREATE] [NONSCALING] "
                "[LAYOUT (STANDARD|BLOCKED|REDISBLOOM)] ITEMS item..."),
    RBD_COMMAND("BF.INFO", -2, CMD_FAST, cmd_bf_info, "bf",
                "Returns a Bloom filter's figures, or one of them",
                "key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]"),
    RBD_COMMAND("BF.CARD", 2, CMD_FAST, cmd_bf_card, "bf",
                "Returns the number of items added to a Bloom filter",
                "key"),
    RBD_COMMAND("BF.RESET", 2, CMD_WRITE, cmd_bf_reset, "bf",
                "Clears every bit of a Bloom filter",
                "key"),
    RBD_COMMAND_END,
};
