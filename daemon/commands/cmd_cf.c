/*
 * cmd_cf.c - the cuckoo filter commands (RedisBloom's CF.*, and our
 * FPBITS option of CF.RESERVE): their table and handlers.  Each mutation
 * is one op (ops.c: CF_RESERVE, CF_ADD, CF_DEL, CF_LOADCHUNK), logged and
 * replayed; queries read the segment as any reader does (rb_cuckoo_*),
 * through the handle the daemon keeps for the name (rbd_filters_cf).
 *
 * Replies follow RedisBloom's (rebloom.c): CF.ADD answers 1 or "Filter is
 * full", CF.INSERT an array of 1 / -1, the NX forms 0 for a key that may
 * be there, CF.EXISTS / CF.COUNT 0 for a missing filter, CF.DEL "Not
 * found" for one; in RESP3 the yes/no answers are booleans where
 * RedisBloom's are (not CF.INSERTNX's or CF.COUNT's).  A name holding a filter of another kind answers
 * WRONGTYPE, as everywhere in ringbloomd.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cuckoo_impl.h"   /* lib: rbi_cuckoo_dump */
#include "ops.h"
#include "scratch.h"

#define CF_CAPACITY_MAX (1ll << 30)   /* RedisBloom's cf-initial-size maximum */

/* The reply of a filter that could not be read or changed. */
static void cf_error(rbd_ctx_t *x, int rc)
{
    if (rc == RB_ENOENT)
        rbi_resp_error(x->out, "ERR not found");
    else if (rc == RB_EEXIST)
        rbi_resp_error(x->out, "ERR item exists");
    else if (rc == RB_EFULL)
        rbi_resp_error(x->out, "Filter is full");
    else if (rc == RB_ELAYERS)
        rbi_resp_error(x->out, "Maximum expansions reached");
    else if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
}

/* RedisBloom's defaults for a filter CF.ADD / CF.INSERT create. */
static rb_cuckoo_params_t defaults(uint64_t capacity)
{
    rb_cuckoo_params_t p = { capacity, RB_CUCKOO_DEFAULT_BUCKET, RB_CUCKOO_DEFAULT_ITERATIONS,
                             RB_CUCKOO_DEFAULT_EXPANSION, RB_CUCKOO_DEFAULT_FP_BITS, NULL };
    return p;
}

/* Creates filter name with p and a secret chosen here (logged, so the
 * replay makes the same filter). */
static int reserve(rbd_ctx_t *x, const char *name, size_t len, const rb_cuckoo_params_t *p)
{
    unsigned char secret[RB_BLOOM_SECRET_BYTES];
    rbd_op_t op = { .type = RBD_OP_CF_RESERVE, .name = name, .len = len, .cf = *p };

    arc4random_buf(secret, sizeof(secret));
    op.cf.secret = NULL;
    op.secret = secret;
    return rbd_op_run(&x->s->state, &x->s->aof, &op);
}

/* Whether a new filter of capacity and p's geometry (layer 0, zeroed at
 * once) stays within max-command-bytes: 0, or replies and returns -1. */
static int size_ok(rbd_ctx_t *x, uint64_t capacity, const rb_cuckoo_params_t *p)
{
    rbi_cf_shape_t s;

    if (!rbi_cf_shape(rbi_cf_layout_of(p->fp_bits), p->bucket_size, &s))
        return 0;   /* the library refuses it */
    return rbd_cmd_work_ok(x, rbi_cf_layer_bytes(&s, rbi_cf_first_nbuckets(capacity,
                                                                            p->bucket_size)),
                           "a cuckoo filter this large");
}

/* The handle the daemon keeps for cuckoo filter name (rbd_filters_cf: no
 * allocation, no directory walk for a name read before), or NULL with *rc
 * RB_ENOENT (also for a name no filter can have), RB_EWRONGTYPE or an
 * error.  Not closed by the caller: valid until the next command. */
static rb_cuckoo_t *kept(rbd_state_t *st, const char *name, size_t len, int *rc)
{
    if (len < 1 || len > RB_FILTER_NAME_MAX) {
        *rc = RB_ENOENT;
        return NULL;
    }
    return rbd_filters_cf(&st->filters, st->seg, name, len, rc);
}

/* What filter argv[1] is, and *in its figures if it is a cuckoo filter:
 * RB_OK a cuckoo filter, RB_EWRONGTYPE another kind, RB_ENOENT none (or
 * an error).  The read through the kept handle is what tells: a handle
 * kept for a filter since deleted binds the name again (rbi_named_read). */
static int exists_as(rbd_ctx_t *x, rb_cuckoo_info_t *in)
{
    int rc;
    rb_cuckoo_t *h = kept(&x->s->state, x->argv[1], x->argl[1], &rc);

    return h != NULL ? rb_cuckoo_info(h, in) : rc;
}

/* Option argv[i] of CF.RESERVE, its value argv[i + 1], into p: 0, or
 * replies and returns -1. */
static int reserve_option(rbd_ctx_t *x, size_t i, rb_cuckoo_params_t *p)
{
    static const struct {
        const char *word;
        long long min, max;
        size_t off;
    } opt[] = {
        { "BUCKETSIZE", 1, RB_CUCKOO_MAX_BUCKET, offsetof(rb_cuckoo_params_t, bucket_size) },
        { "MAXITERATIONS", 1, RB_CUCKOO_MAX_ITERATIONS,
          offsetof(rb_cuckoo_params_t, max_iterations) },
        { "EXPANSION", 0, RB_CUCKOO_MAX_EXPANSION, offsetof(rb_cuckoo_params_t, expansion) },
        { "FPBITS", 8, 16, offsetof(rb_cuckoo_params_t, fp_bits) },
    };
    long long v;

    for (size_t o = 0; o < sizeof(opt) / sizeof(opt[0]); o++) {
        if (!rbd_cmd_arg_is(x, i, opt[o].word))
            continue;
        if (rbd_cmd_arg_ll(x, i + 1, &v) != 0) {
            rbi_resp_error(x->out, "Couldn't parse %s", opt[o].word);
            return -1;
        }
        if (o == 3 && v != 8 && v != 12 && v != 16) {
            rbi_resp_error(x->out, "ERR FPBITS must be 8, 12 or 16 (bits a fingerprint "
                           "keeps; default 8)");
            return -1;
        }
        if (v < opt[o].min || v > opt[o].max) {
            rbi_resp_error(x->out, "%s: value must be in the range [%lld, %lld]", opt[o].word,
                           opt[o].min, opt[o].max);
            return -1;
        }
        *(uint32_t *)((char *)p + opt[o].off) = (uint32_t)v;
        return 0;
    }
    rbi_resp_error(x->out, "ERR syntax error");
    return -1;
}

/* CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]
 * [FPBITS 8|12|16] */
static void cmd_cf_reserve(rbd_ctx_t *x)
{
    rb_cuckoo_params_t p = defaults(0);
    rb_cuckoo_info_t in;
    long long cap;
    int rc;

    if (x->argc % 2 == 0) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if (rbd_cmd_arg_ll(x, 2, &cap) != 0) {
        rbi_resp_error(x->out, "Bad capacity");
        return;
    }
    for (size_t i = 3; i < x->argc; i += 2)
        if (reserve_option(x, i, &p) != 0)
            return;
    if (cap < 2ll * p.bucket_size || cap > CF_CAPACITY_MAX) {
        rbi_resp_error(x->out, "Capacity must be in the range [2 * BUCKETSIZE, %lld]",
                       CF_CAPACITY_MAX);
        return;
    }
    p.capacity = (uint64_t)cap;
    if (size_ok(x, p.capacity, &p) != 0)
        return;
    if ((rc = reserve(x, x->argv[1], x->argl[1], &p)) == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else if (rc == RB_EEXIST)   /* RedisBloom: item exists, or WRONGTYPE for another kind */
        cf_error(x, exists_as(x, &in) == RB_EWRONGTYPE ? RB_EWRONGTYPE : rc);
    else if (rc == RB_ENOSPC)
        cf_error(x, rc);
    else
        rbd_cmd_create_error(x, rc);
}

/* Adds items[0 .. n) to filter argv[1], created with capacity if missing
 * and create; res[i] each outcome (rbd_op_t.cf_res).  RB_OK, or the error
 * (replied by the caller). */
static int add_items(rbd_ctx_t *x, const rb_key_t *items, size_t n, int nx, int create,
                     uint64_t capacity, int *res)
{
    rb_key_t added_s[RBD_SCRATCH_SMALL];
    rb_key_t *added = rbd_scratch(added_s, sizeof(added_s), n, sizeof(*added));
    rbd_op_t op = { .type = RBD_OP_CF_ADD, .name = x->argv[1], .len = x->argl[1],
                    .keys = items, .nkeys = n, .nx = nx, .cf_res = res, .cf_added = added };
    int rc = added == NULL ? RB_ENOMEM : RB_OK;

    /* The add itself finds the filter (or that there is none, or another
     * kind): a missing one is made, logged, and the add runs again; an add
     * that found nothing changed nothing and logged nothing. */
    if (rc == RB_OK)
        rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc == RB_ENOENT && create) {
        rb_cuckoo_params_t p = defaults(capacity);
        if ((rc = reserve(x, x->argv[1], x->argl[1], &p)) == RB_OK) {
            op.keys = items;
            op.nkeys = n;
            op.noop = 0;
            rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
        }
    }
    rbd_scratch_free(added, added_s);
    return rc;
}

/* CF.ADD key item / CF.ADDNX key item: 1 added; ADDNX 0 if the filter
 * may hold it; "Filter is full" when nothing could take it. */
static void cmd_cf_add(rbd_ctx_t *x)
{
    rb_key_t item = { x->argv[2], x->argl[2] };
    int nx = x->cmd->len == sizeof("CF.ADDNX") - 1, res = RB_EINVAL, rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    rc = add_items(x, &item, 1, nx, 1, RB_CUCKOO_DEFAULT_CAPACITY, &res);
    if (rc != RB_OK || res < 0)
        cf_error(x, rc != RB_OK ? rc : res);
    else
        rbi_resp_bool(x->out, res);
}

/* CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...: per
 * item 1 added, -1 no room (NX: 0 may be there already).  A few items
 * (RBD_SCRATCH_SMALL) take the stack's arrays, not the allocator's. */
static void cmd_cf_insert(rbd_ctx_t *x)
{
    int nx = x->cmd->len == sizeof("CF.INSERTNX") - 1, create = 1, rc, *res;
    int res_s[RBD_SCRATCH_SMALL];
    long long cap = RB_CUCKOO_DEFAULT_CAPACITY;
    size_t i = 2, n;
    rb_key_t items_s[RBD_SCRATCH_SMALL], *items;
    rb_cuckoo_info_t in;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    for (; i < x->argc && !rbd_cmd_arg_is(x, i, "ITEMS"); i++) {
        if (rbd_cmd_arg_is(x, i, "NOCREATE")) {
            create = 0;
        } else if (rbd_cmd_arg_is(x, i, "CAPACITY") && i + 1 < x->argc) {
            if (rbd_cmd_arg_ll(x, ++i, &cap) != 0 || cap < 2 * RB_CUCKOO_DEFAULT_BUCKET ||
                cap > CF_CAPACITY_MAX) {
                rbi_resp_error(x->out, "Capacity must be in the range [BUCKETSIZE * 2, %lld]",
                               CF_CAPACITY_MAX);
                return;
            }
        } else {
            rbi_resp_error(x->out, "Unknown argument received");
            return;
        }
    }
    if (create && exists_as(x, &in) == RB_ENOENT) {
        rb_cuckoo_params_t p = defaults((uint64_t)cap);
        if (size_ok(x, p.capacity, &p) != 0)
            return;
    }
    if (++i >= x->argc) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    n = x->argc - i;
    items = rbd_scratch(items_s, sizeof(items_s), n, sizeof(*items));
    res = rbd_scratch(res_s, sizeof(res_s), n, sizeof(*res));
    if (items == NULL || res == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
    } else {
        for (size_t k = 0; k < n; k++)
            items[k] = (rb_key_t){ x->argv[i + k], x->argl[i + k] };
        if ((rc = add_items(x, items, n, nx, create, (uint64_t)cap, res)) != RB_OK) {
            cf_error(x, rc);
        } else {
            rbi_resp_array(x->out, n);
            for (size_t k = 0; k < n; k++)
                if (nx || !x->out->resp3)
                    rbi_resp_int(x->out, res[k] < 0 ? -1 : res[k]);
                else
                    rbi_resp_bool(x->out, res[k] == 1);
        }
    }
    rbd_scratch_free(items, items_s);
    rbd_scratch_free(res, res_s);
}

/* The kind's reads for the shared handlers (rbd_reads_t: EXISTS,
 * MEXISTS, COUNT, SCANDUMP), through the kept handle (no close). */
static int check_open(rbd_ctx_t *x, const char *name, size_t len, void **h)
{
    int rc;

    *h = kept(&x->s->state, name, len, &rc);
    return rc;
}

static int check_contains(const void *h, const void *key, size_t len)
{
    return rb_cuckoo_contains(h, key, len);
}

static int check_count(const void *h, const void *key, size_t len, uint64_t *c)
{
    return rb_cuckoo_count(h, key, len, c);
}

static int check_dump(const void *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                      size_t *len, int64_t *next)
{
    return rbi_cuckoo_dump(h, iter, max_chunk, buf, len, next);
}

static const rbd_reads_t reads = {
    check_open, NULL, check_contains, check_count, check_dump, cf_error, 0,
};

/* CF.EXISTS key item, CF.MEXISTS key item..., CF.COUNT key item: through
 * the handle the daemon keeps for the name (rbd_filters_cf: no allocation,
 * no directory walk per command); a missing filter holds nothing. */
static void cmd_cf_exists(rbd_ctx_t *x)
{
    rbd_cmd_check(x, &reads, 0, 0);
}

static void cmd_cf_mexists(rbd_ctx_t *x)
{
    rbd_cmd_check(x, &reads, 1, 0);
}

static void cmd_cf_count(rbd_ctx_t *x)
{
    rbd_cmd_check(x, &reads, 0, 1);
}

/* CF.DEL key item: 1 if a copy of the item's fingerprint was removed, 0
 * if none was found; "Not found" for a missing filter. */
static void cmd_cf_del(rbd_ctx_t *x)
{
    rb_key_t item = { x->argv[2], x->argl[2] };
    rbd_op_t op = { .type = RBD_OP_CF_DEL, .name = x->argv[1], .len = x->argl[1],
                    .keys = &item, .nkeys = 1 };
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc == RB_ENOENT)
        rbi_resp_error(x->out, "Not found");
    else if (rc != RB_OK)
        cf_error(x, rc);
    else
        rbi_resp_bool(x->out, !op.noop);
}

/* CF.INFO key: RedisBloom's eight fields, then ours (fingerprint bits). */
static void cmd_cf_info(rbd_ctx_t *x)
{
    rb_cuckoo_info_t in;
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if ((rc = exists_as(x, &in)) != RB_OK) {
        cf_error(x, rc);
        return;
    }
    rbi_resp_map(x->out, 9);
    rbi_resp_simple(x->out, "Size");
    rbi_resp_int(x->out, (long long)in.bytes);
    rbi_resp_simple(x->out, "Number of buckets");
    rbi_resp_int(x->out, (long long)in.buckets);
    rbi_resp_simple(x->out, "Number of filters");
    rbi_resp_int(x->out, in.layers);
    rbi_resp_simple(x->out, "Number of items inserted");
    rbi_resp_int(x->out, (long long)in.items);
    rbi_resp_simple(x->out, "Number of items deleted");
    rbi_resp_int(x->out, (long long)in.deletes);
    rbi_resp_simple(x->out, "Bucket size");
    rbi_resp_int(x->out, in.bucket_size);
    rbi_resp_simple(x->out, "Expansion rate");
    rbi_resp_int(x->out, in.expansion);
    rbi_resp_simple(x->out, "Max iterations");
    rbi_resp_int(x->out, in.max_iterations);
    rbi_resp_simple(x->out, "Fingerprint bits");
    rbi_resp_int(x->out, in.fp_bits);
}

/* CF.SCANDUMP key iter: [next iter, bytes], RedisBloom's iterator (0
 * gives the header, the arrays' bytes follow from 1; [0, ""] at the end),
 * in our format (lib/cuckoo/cuckoo_dump.c). */
static void cmd_cf_scandump(rbd_ctx_t *x)
{
    rbd_cmd_scandump(x, &reads);
}

/* CF.LOADCHUNK key iter data: iter 1 with no such filter takes a header
 * (it makes the filter, live at once, empty until the data chunks come),
 * else data at the iterator CF.SCANDUMP gave with it.  Logged, replayed. */
static void cmd_cf_loadchunk(rbd_ctx_t *x)
{
    rbd_cmd_loadchunk(x, RBD_OP_CF_LOADCHUNK, cf_error);
}

const rbd_command_t rbd_cmd_cf_table[] = {
    RBD_COMMAND("CF.RESERVE", -3, CMD_WRITE, cmd_cf_reserve, "cf",
                "Creates a cuckoo filter",
                "key capacity:integer [BUCKETSIZE bucketsize:integer] "
                "[MAXITERATIONS maxiterations:integer] [EXPANSION expansion:integer] "
                "[FPBITS (8|12|16)]"),
    RBD_COMMAND("CF.ADD", 3, CMD_WRITE | CMD_FAST, cmd_cf_add, "cf",
                "Adds an item to a cuckoo filter, creating it if missing",
                "key item"),
    RBD_COMMAND("CF.ADDNX", 3, CMD_WRITE | CMD_FAST, cmd_cf_add, "cf",
                "Adds an item to a cuckoo filter if it may not be there yet",
                "key item"),
    RBD_COMMAND("CF.INSERT", -4, CMD_WRITE, cmd_cf_insert, "cf",
                "Adds items to a cuckoo filter, creating it if missing",
                "key [CAPACITY capacity:integer] [NOCREATE] ITEMS item..."),
    RBD_COMMAND("CF.INSERTNX", -4, CMD_WRITE, cmd_cf_insert, "cf",
                "Adds items to a cuckoo filter if they may not be there yet",
                "key [CAPACITY capacity:integer] [NOCREATE] ITEMS item..."),
    RBD_COMMAND("CF.EXISTS", 3, CMD_FAST, cmd_cf_exists, "cf",
                "Tells whether an item may be in a cuckoo filter",
                "key item"),
    RBD_COMMAND("CF.MEXISTS", -3, CMD_FAST, cmd_cf_mexists, "cf",
                "Tells whether each item may be in a cuckoo filter",
                "key item..."),
    RBD_COMMAND("CF.COUNT", 3, CMD_FAST, cmd_cf_count, "cf",
                "Returns the copies of an item's fingerprint in a cuckoo filter",
                "key item"),
    RBD_COMMAND("CF.DEL", 3, CMD_WRITE | CMD_FAST, cmd_cf_del, "cf",
                "Deletes an item from a cuckoo filter",
                "key item"),
    RBD_COMMAND("CF.INFO", 2, CMD_FAST, cmd_cf_info, "cf",
                "Returns a cuckoo filter's figures",
                "key"),
    RBD_COMMAND("CF.SCANDUMP", 3, 0, cmd_cf_scandump, "cf",
                "Returns a chunk of a cuckoo filter's dump",
                "key iterator:integer"),
    RBD_COMMAND("CF.LOADCHUNK", 4, CMD_WRITE, cmd_cf_loadchunk, "cf",
                "Loads a chunk of a cuckoo filter's dump",
                "key iterator:integer data"),
    RBD_COMMAND_END,
};
