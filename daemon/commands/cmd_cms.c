/*
 * cmd_cms.c - the count-min sketch commands (RedisBloom's CMS.*, and our
 * SMALL / AGING options): their table and handlers.  Each mutation is
 * one op (ops.c), logged and replayed; queries read the segment as any
 * reader does.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include "cms_impl.h"   /* lib: rbi_cms_secret */
#include "cmd.h"
#include "filters.h"
#include "ops.h"
#include "scratch.h"

/* The reply of a sketch that could not be read or changed. */
static void sketch_error(rbd_ctx_t *x, int rc)
{
    if (rc == RB_ENOENT)
        rbi_resp_error(x->out, "CMS: key does not exist");
    else
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
}

int rbd_cmd_cms_size_ok(rbd_ctx_t *x, const rb_cms_params_t *p)
{
    rbi_cms_shape_t s;

    if (!rbi_cms_shape(p->small ? RBI_CMS_LAYOUT4 : RBI_CMS_LAYOUT32, p->width, p->depth, &s))
        return 0;   /* the library refuses it */
    if (p->aging != 0)   /* each halving reads the counters and writes new ones */
        return rbd_cmd_work_ok(x, 2 * s.bytes, "halving a sketch this large (AGING)");
    return rbd_cmd_work_ok(x, s.bytes, "a sketch this large");
}

/* Creates sketch argv[1] with p and a secret chosen here, or like's
 * (p->secret not NULL: a LIKE sketch's), logged; replies. */
static void create(rbd_ctx_t *x, const rb_cms_params_t *p)
{
    unsigned char secret[RB_BLOOM_SECRET_BYTES];
    rbd_op_t op = { .type = RBD_OP_CMS_INIT, .name = x->argv[1], .len = x->argl[1],
                    .cms = *p };
    int rc;

    if (rbd_cmd_cms_size_ok(x, p) != 0)
        return;
    if (p->secret != NULL)
        memcpy(secret, p->secret, sizeof(secret));
    else
        arc4random_buf(secret, sizeof(secret));
    op.cms.secret = NULL;
    op.secret = secret;
    rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else if (rc == RB_EEXIST)
        rbi_resp_error(x->out, "CMS: key already exists");
    else if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else
        rbd_cmd_create_error(x, rc);
}

/* Our options after the sizing, from argument i: [SMALL] [AGING w]
 * [LIKE sketch] (hash as that sketch does, so that CMS.MERGE may add
 * them; its secret into like).  0, or replies and returns -1. */
static int options(rbd_ctx_t *x, size_t i, rb_cms_params_t *p, unsigned char *like)
{
    for (; i < x->argc; i++) {
        long long w;
        int rc;
        if (rbd_cmd_arg_is(x, i, "LIKE") && i + 1 < x->argc) {
            rc = x->argl[i + 1] < 1 || x->argl[i + 1] > RB_FILTER_NAME_MAX ? RB_ENOENT
                 : rbi_cms_secret(x->s->state.seg, x->argv[i + 1], x->argl[i + 1], like);
            if (rc != RB_OK) {
                sketch_error(x, rc);
                return -1;
            }
            p->secret = like;
            i++;
        } else if (rbd_cmd_arg_is(x, i, "SMALL")) {
            p->small = 1;
        } else if (rbd_cmd_arg_is(x, i, "AGING") && i + 1 < x->argc) {
            if (rbd_cmd_arg_ll(x, ++i, &w) != 0 || w < 1) {
                rbi_resp_error(x->out, "ERR AGING must be an integer in [1, %lld] (counted "
                               "increments between two halvings)", LLONG_MAX);
                return -1;
            }
            p->aging = (uint64_t)w;
        } else {
            rbi_resp_error(x->out, "ERR syntax error: after the sizing come [SMALL] [AGING w] "
                           "[LIKE sketch]");
            return -1;
        }
    }
    return 0;
}

/* CMS.INITBYDIM key width depth [SMALL] [AGING w] */
static void cmd_cms_initbydim(rbd_ctx_t *x)
{
    rb_cms_params_t p = { 0 };
    unsigned char like[RB_BLOOM_SECRET_BYTES];
    long long w, d;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if (rbd_cmd_arg_ll(x, 2, &w) != 0 || w < 1 || w > RB_CMS_MAX_WIDTH) {
        rbi_resp_error(x->out, "CMS: invalid width");
        return;
    }
    if (rbd_cmd_arg_ll(x, 3, &d) != 0 || d < 1 || d > RB_CMS_MAX_DEPTH) {
        rbi_resp_error(x->out, "CMS: invalid depth");
        return;
    }
    p.width = (uint32_t)w;
    p.depth = (uint32_t)d;
    if (options(x, 4, &p, like) == 0)
        create(x, &p);
}

/* CMS.INITBYPROB key error probability [SMALL] [AGING w] */
static void cmd_cms_initbyprob(rbd_ctx_t *x)
{
    rb_cms_params_t p = { 0 };
    unsigned char like[RB_BLOOM_SECRET_BYTES];
    double e, q;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if (rbd_cmd_arg_double(x, 2, &e) != 0 || !(e > 0 && e < 1)) {
        rbi_resp_error(x->out, "CMS: invalid overestimation value");
        return;
    }
    if (rbd_cmd_arg_double(x, 3, &q) != 0 || !(q > 0 && q < 1)) {
        rbi_resp_error(x->out, "CMS: invalid prob value");
        return;
    }
    if (rb_cms_dims(e, q, &p.width, &p.depth) != RB_OK) {
        rbi_resp_error(x->out, "CMS: invalid overestimation value");
        return;
    }
    if (options(x, 4, &p, like) == 0)
        create(x, &p);
}

int rbd_cmd_cms_incrby(rbd_ctx_t *x, const char *name, size_t len, const rb_key_t *items,
                  const uint64_t *by, size_t n, uint64_t *est)
{
    rb_key_t pairs_s[RBD_SCRATCH_SMALL], *pairs;
    unsigned char bytes_s[512], *bytes;
    rbd_op_t op = { .type = RBD_OP_CMS_INCRBY, .name = name, .len = len, .est = est };
    size_t total = 0, at = 0;
    int rc;

    /* The pairs' bytes in one buffer (the stack's for a few short items). */
    for (size_t i = 0; i < n; i++)
        total += RBD_CMS_PAIR_HDR + items[i].len;
    pairs = rbd_scratch(pairs_s, sizeof(pairs_s), n, sizeof(*pairs));
    bytes = rbd_scratch(bytes_s, sizeof(bytes_s), total, 1);
    rc = pairs == NULL || bytes == NULL ? RB_ENOMEM : RB_OK;
    for (size_t i = 0; rc == RB_OK && i < n; i++) {
        pairs[i] = (rb_key_t){ bytes + at, rbd_cms_pair(bytes + at, by[i], items[i].ptr,
                                                        items[i].len) };
        at += pairs[i].len;
    }
    op.keys = pairs;
    op.nkeys = n;
    if (rc == RB_OK)
        rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    rbd_scratch_free(bytes, bytes_s);
    rbd_scratch_free(pairs, pairs_s);
    return rc;
}

/* Whether the halvings that increments by[0 .. n) of sketch argv[1] make
 * (rb_cms_incrby ages it whenever the increments since the last halving
 * reach its window, at most once an item) stay within max-command-bytes:
 * 0, or replies and returns -1.  A missing sketch is the op's to report. */
static int halvings_ok(rbd_ctx_t *x, const uint64_t *by, size_t n)
{
    rb_cms_info_t in;
    uint64_t since, halvings = 0;
    char what[64];

    if (n <= 1)
        return 0;   /* one item halves at most once: no need to look the sketch up */
    if (rb_cms_info(x->s->state.seg, x->argv[1], x->argl[1], &in) != RB_OK || in.aging == 0)
        return 0;
    since = in.since_aging;
    for (size_t i = 0; i < n; i++) {
        since = by[i] > UINT64_MAX - since ? UINT64_MAX : since + by[i];
        if (since >= in.aging) {
            halvings++;
            since = 0;
        }
    }
    if (halvings <= 1)
        return 0;   /* one halving is what the sketch was made to allow */
    snprintf(what, sizeof(what), "CMS.INCRBY halving the sketch %llu times",
             (unsigned long long)halvings);
    return rbd_cmd_work_ok(x, halvings > UINT64_MAX / (2 * in.bytes) ? UINT64_MAX
                                                                     : halvings * 2 * in.bytes,
                           what);
}

/* CMS.INCRBY key item increment [item increment ...]: each item's
 * estimate after its increment. */
static void cmd_cms_incrby(rbd_ctx_t *x)
{
    size_t n = (x->argc - 2) / 2;
    rb_key_t items_s[RBD_SCRATCH_SMALL];
    uint64_t by_s[RBD_SCRATCH_SMALL], est_s[RBD_SCRATCH_SMALL];
    rb_key_t *items = rbd_scratch(items_s, sizeof(items_s), n, sizeof(*items));
    uint64_t *by = rbd_scratch(by_s, sizeof(by_s), n, sizeof(*by));
    uint64_t *est = rbd_scratch(est_s, sizeof(est_s), n, sizeof(*est));
    int rc = RB_OK;

    if (items == NULL || by == NULL || est == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        goto out;
    }
    if ((x->argc - 2) % 2 != 0) {
        rbd_cmd_wrong_arity(x);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        long long v;
        if (rbd_cmd_arg_ll(x, 3 + 2 * i, &v) != 0 || v < 0) {
            rbi_resp_error(x->out, "CMS: Cannot parse number");
            goto out;
        }
        items[i] = (rb_key_t){ x->argv[2 + 2 * i], x->argl[2 + 2 * i] };
        by[i] = (uint64_t)v;
    }
    if (halvings_ok(x, by, n) != 0)
        goto out;
    if ((rc = rbd_cmd_cms_incrby(x, x->argv[1], x->argl[1], items, by, n, est)) != RB_OK) {
        sketch_error(x, rc);
        goto out;
    }
    rbi_resp_array(x->out, n);
    for (size_t i = 0; i < n; i++)
        rbi_resp_int(x->out, (long long)est[i]);
out:
    rbd_scratch_free(items, items_s);
    rbd_scratch_free(by, by_s);
    rbd_scratch_free(est, est_s);
}

/* CMS.QUERY key item [item ...]: each item's estimate (read as any reader
 * reads it, from the segment). */
static void cmd_cms_query(rbd_ctx_t *x)
{
    uint64_t est_s[RBD_SCRATCH_SMALL];
    rb_key_t keys_s[RBD_SCRATCH_SMALL];
    uint64_t *est = rbd_scratch(est_s, sizeof(est_s), x->argc - 2, sizeof(*est));
    rb_key_t *keys = rbd_scratch(keys_s, sizeof(keys_s), x->argc - 2, sizeof(*keys));
    int rc = est == NULL || keys == NULL ? RB_ENOMEM : RB_OK;

    for (size_t i = 2; rc == RB_OK && i < x->argc; i++)
        keys[i - 2] = (rb_key_t){ x->argv[i], x->argl[i] };
    if (rc == RB_OK)
        rc = rbi_cms_query_many(x->s->state.seg, x->argv[1], x->argl[1], keys, x->argc - 2, est);
    rbd_scratch_free(keys, keys_s);
    if (rc != RB_OK) {
        sketch_error(x, rc);
    } else {
        rbi_resp_array(x->out, x->argc - 2);
        for (size_t i = 2; i < x->argc; i++)
            rbi_resp_int(x->out, (long long)est[i - 2]);
    }
    rbd_scratch_free(est, est_s);
}

/* CMS.MERGE dest numKeys src [src ...] [WEIGHTS w ...] */
static void cmd_cms_merge(rbd_ctx_t *x)
{
    long long nk;
    size_t n, wat;
    rbd_op_t op = { .type = RBD_OP_CMS_MERGE, .name = x->argv[1], .len = x->argl[1] };
    rb_key_t *pairs = NULL;
    unsigned char *buf = NULL, *at;
    size_t bytes = 0;
    rb_cms_info_t in;
    int rc;

    if (rbd_cmd_arg_ll(x, 2, &nk) != 0 || nk < 1 || (size_t)nk > x->argc - 3) {
        rbi_resp_error(x->out, nk < 1 ? "CMS: invalid numkeys" : "CMS: wrong number of keys");
        return;
    }
    n = (size_t)nk;
    wat = 3 + n;
    if (wat < x->argc && !(rbd_cmd_arg_is(x, wat, "WEIGHTS") && x->argc == wat + 1 + n)) {
        rbi_resp_error(x->out, "CMS: wrong number of keys/weights");
        return;
    }
    for (size_t i = 0; i < n; i++)
        bytes += RBD_CMS_PAIR_HDR + x->argl[3 + i];
    if ((pairs = calloc(n, sizeof(*pairs))) == NULL || (buf = malloc(bytes)) == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        goto out;
    }
    at = buf;
    for (size_t i = 0; i < n; i++) {
        long long w = 1;
        if (wat < x->argc && (rbd_cmd_arg_ll(x, wat + 1 + i, &w) != 0 || w < 0)) {
            rbi_resp_error(x->out, "CMS: invalid weight value");
            goto out;
        }
        pairs[i] = (rb_key_t){ at, rbd_cms_pair(at, (uint64_t)w, x->argv[3 + i],
                                                x->argl[3 + i]) };
        at += pairs[i].len;
    }
    op.keys = pairs;
    op.nkeys = n;
    /* The merge reads every source's counters and writes the
     * destination's (sources of another shape: the op refuses them). */
    if (rb_cms_info(x->s->state.seg, x->argv[1], x->argl[1], &in) == RB_OK) {
        char what[64];
        snprintf(what, sizeof(what), "CMS.MERGE of %zu sketches", n);
        if (rbd_cmd_work_ok(x, n + 1 > UINT64_MAX / in.bytes ? UINT64_MAX : (n + 1) * in.bytes,
                            what) != 0)
            goto out;
    }
    rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else if (rc == RB_EINVAL)
        rbi_resp_error(x->out, "CMS: width/depth is not equal");
    else if (rc == RB_EPERM)
        rbi_resp_error(x->out, "CMS: sketches hash differently (create them with LIKE)");
    else if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else
        sketch_error(x, rc);
out:
    free(pairs);
    free(buf);
}

/* CMS.INFO key: RedisBloom's width, depth and count, then ours. */
static void cmd_cms_info(rbd_ctx_t *x)
{
    rb_cms_info_t in;
    int rc = rb_cms_info(x->s->state.seg, x->argv[1], x->argl[1], &in);

    if (rc != RB_OK) {
        sketch_error(x, rc);
        return;
    }
    rbi_resp_map(x->out, 6);
    rbi_resp_simple(x->out, "width");
    rbi_resp_int(x->out, in.width);
    rbi_resp_simple(x->out, "depth");
    rbi_resp_int(x->out, in.depth);
    rbi_resp_simple(x->out, "count");
    rbi_resp_int(x->out, (long long)in.count);
    rbi_resp_simple(x->out, "counter bits");
    rbi_resp_int(x->out, in.small ? 4 : 32);
    rbi_resp_simple(x->out, "aging");
    rbi_resp_int(x->out, (long long)in.aging);
    rbi_resp_simple(x->out, "agings");
    rbi_resp_int(x->out, (long long)in.agings);
}

const rbd_command_t rbd_cmd_cms_table[] = {
    RBD_COMMAND("CMS.INITBYDIM", -4, CMD_WRITE, cmd_cms_initbydim, "cms",
                "Creates a count-min sketch of the given width and depth",
                "key width:integer depth:integer [SMALL] [AGING window:integer] [LIKE sketch]"),
    RBD_COMMAND("CMS.INITBYPROB", -4, CMD_WRITE, cmd_cms_initbyprob, "cms",
                "Creates a count-min sketch sized for an error and its probability",
                "key error:double probability:double [SMALL] [AGING window:integer] [LIKE sketch]"),
    RBD_COMMAND("CMS.INCRBY", -4, CMD_WRITE | CMD_FAST, cmd_cms_incrby, "cms",
                "Increases the counts of items in a count-min sketch",
                "key (item increment:integer)..."),
    RBD_COMMAND("CMS.QUERY", -3, CMD_FAST, cmd_cms_query, "cms",
                "Returns the estimated counts of items in a count-min sketch",
                "key item..."),
    RBD_COMMAND("CMS.MERGE", -4, CMD_WRITE, cmd_cms_merge, "cms",
                "Sets a count-min sketch to the weighted sum of sketches",
                "destination numkeys:integer source... [WEIGHTS weight:integer...]"),
    RBD_COMMAND("CMS.INFO", 2, CMD_FAST, cmd_cms_info, "cms",
                "Returns a count-min sketch's width, depth and count",
                "key"),
    RBD_COMMAND_END,
};
