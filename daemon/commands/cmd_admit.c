/*
 * cmd_admit.c - TinyLFU admission (ours): ADMIT.RESERVE, ADMIT.TOUCH and
 * ADMIT.QUERY, their table and handlers.
 *
 * A pair named "name" is sketch "name" (4-bit counters, TINYLFU_DEPTH rows
 * of max(64, 2 x capacity) counters, halved every W counted increments;
 * W = WINDOW, TINYLFU_WINDOW_MULT x capacity if not given) and its
 * doorkeeper, the scaling Bloom filter "name" RB_TINYLFU_DOORKEEPER_SUFFIX
 * (capacity W, error rate `error`, 0.01 if not given).  ADMIT.TOUCH name key
 * records one access: a key the doorkeeper does not hold is added to it
 * (a BF.ADD record); a key it holds is counted in the sketch (a
 * CMS.INCRBY record), and if that count made the sketch age, the
 * doorkeeper is cleared too (a BF.RESET record), so the doorkeeper only
 * remembers keys seen since the last halving.  A touch's records are one
 * TXN record (T1), and replay the same steps.  A reader's estimate of a key is the sketch's + 1 if the
 * doorkeeper holds it; rb_tinylfu_admit (ADMIT.QUERY) admits a candidate
 * iff its estimate beats the victim's.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <limits.h>
#include <string.h>

#include "cmd.h"
#include "filters.h"
#include "ops.h"
#include "seg_txn.h"   /* lib: whether an EXEC holds the log unit */

#define TINYLFU_DEPTH        4u
#define TINYLFU_WINDOW_MULT  10u   /* W = 10 x the cache's capacity (TinyLFU's sample) */
#define DK_LEN (sizeof(RB_TINYLFU_DOORKEEPER_SUFFIX) - 1)

/* The doorkeeper's name of pair argv[1] into dk (RB_FILTER_NAME_MAX + 1
 * bytes); its length, or 0 after replying that the name is too long. */
static size_t dk_name(rbd_ctx_t *x, char *dk)
{
    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX - DK_LEN) != 0)
        return 0;
    memcpy(dk, x->argv[1], x->argl[1]);
    memcpy(dk + x->argl[1], RB_TINYLFU_DOORKEEPER_SUFFIX, DK_LEN);
    return x->argl[1] + DK_LEN;
}

/* A pair's error replies name it (argument 1) and say what to do: no such
 * pair (RB_ENOENT), one there already (RB_EEXIST); the rest is the table's. */
static void pair_error(rbd_ctx_t *x, int rc)
{
    char q[RBD_QUOTED_CAP];

    if (rc == RB_ENOENT)
        rbi_resp_error(x->out, "ERR no TinyLFU pair %s (ADMIT.RESERVE %s capacity makes one)",
                       rbd_cmd_arg_quoted(x, 1, q, sizeof(q)), q);
    else if (rc == RB_EEXIST)
        rbi_resp_error(x->out, "ERR %s exists (a TinyLFU pair, or another filter of its name "
                       "or of its doorkeeper's, %s" RB_TINYLFU_DOORKEEPER_SUFFIX ")",
                       rbd_cmd_arg_quoted(x, 1, q, sizeof(q)), q);
    else if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else
        rbd_cmd_create_error(x, rc);
}

/* ADMIT.RESERVE name capacity [error] [WINDOW w]: the doorkeeper first,
 * then the sketch (a failure leaves at most the doorkeeper, which DEL
 * removes). */
static void cmd_admit_reserve(rbd_ctx_t *x)
{
    char dk[RB_FILTER_NAME_MAX + 1];
    unsigned char s1[RB_BLOOM_SECRET_BYTES], s2[RB_BLOOM_SECRET_BYTES];
    size_t dlen = dk_name(x, dk), i = 3;
    long long cap, w = 0;
    double err = 0.01;
    rbd_op_t bop = { .type = RBD_OP_BF_RESERVE }, cop = { .type = RBD_OP_CMS_INIT };
    int rc;

    if (dlen == 0)
        return;
    if (rbd_cmd_arg_ll(x, 2, &cap) != 0 || cap < 1 || cap > RB_CMS_MAX_WIDTH / 2) {
        rbi_resp_error(x->out, "ERR capacity must be an integer in [1, %u] (the cache's "
                       "entries)", RB_CMS_MAX_WIDTH / 2);
        return;
    }
    if (i < x->argc && !rbd_cmd_arg_is(x, i, "WINDOW") &&
        (rbd_cmd_arg_double(x, i++, &err) != 0 || !(err > 0 && err < 1))) {
        rbi_resp_error(x->out, "ERR error rate must be a number in (0, 1) (the doorkeeper's; "
                       "default 0.01)");
        return;
    }
    if (i < x->argc && !(rbd_cmd_arg_is(x, i, "WINDOW") && i + 2 == x->argc)) {
        rbi_resp_error(x->out, "ERR syntax error: ADMIT.RESERVE key capacity [error] "
                       "[WINDOW window]");
        return;
    }
    if (i < x->argc && (rbd_cmd_arg_ll(x, i + 1, &w) != 0 || w < 1)) {
        rbi_resp_error(x->out, "ERR WINDOW must be an integer in [1, %lld] (counted "
                       "accesses between two halvings; default 10 x capacity)", LLONG_MAX);
        return;
    }
    if (w == 0)
        w = cap * TINYLFU_WINDOW_MULT;
    arc4random_buf(s1, sizeof(s1));
    arc4random_buf(s2, sizeof(s2));
    bop.name = dk;
    bop.len = dlen;
    bop.params = (rb_bloom_params_t){ .capacity = (uint64_t)w, .error_rate = err,
                                      .layout = (rb_bloom_layout_t)x->s->cfg.bf_default_layout };
    bop.secret = s1;
    cop.name = x->argv[1];
    cop.len = x->argl[1];
    cop.cms = (rb_cms_params_t){ .width = cap * 2 < 64 ? 64 : (uint32_t)cap * 2,
                                 .depth = TINYLFU_DEPTH, .small = 1, .aging = (uint64_t)w };
    cop.secret = s2;
    if (rbd_cmd_cms_size_ok(x, &cop.cms) != 0)
        return;
    /* The sketch's name must be free too, before the doorkeeper is made. */
    rc = rb_cms_info(x->s->state.seg, x->argv[1], x->argl[1], &(rb_cms_info_t){ 0 });
    rc = rc == RB_ENOENT ? rbd_op_run(&x->s->state, &x->s->aof, &bop) : RB_EEXIST;
    if (rc == RB_OK)
        rc = rbd_op_run(&x->s->state, &x->s->aof, &cop);
    if (rc == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else
        pair_error(x, rc);
}

/* ADMIT.TOUCH name key: one access (above); the key's estimate after. */
static void cmd_admit_touch(rbd_ctx_t *x)
{
    char dk[RB_FILTER_NAME_MAX + 1];
    size_t dlen = dk_name(x, dk);
    rb_key_t key = { x->argv[2], x->argl[2] };
    rbd_op_t op = { .type = RBD_OP_BF_ADD, .keys = &key, .nkeys = 1 };
    rb_cms_info_t before, after;
    uint64_t one = 1, est = 0;
    uint8_t fresh;
    size_t start;
    int rc, held, own;

    if (dlen == 0 || rbd_cmd_arg_key(x, 2) != 0)
        return;
    op.name = dk;
    op.len = dlen;
    op.fresh = &fresh;
    if ((op.bf = rbd_filters_get(&x->s->state.filters, x->s->state.seg, dk, dlen, &rc)) == NULL ||
        (rc = rb_cms_info(x->s->state.seg, x->argv[1], x->argl[1], &before)) != RB_OK ||
        (held = rb_bloom_contains(op.bf, key.ptr, key.len)) < 0) {
        pair_error(x, op.bf == NULL || rc != RB_OK ? rc : held);
        return;
    }
    /* One unit in the log (a TXN record, unless an EXEC's holds it
     * already): an increment that halved the sketch is never replayed
     * without the doorkeeper's reset. */
    own = !rbi_segment_txn_open(x->s->state.seg);
    start = own ? rbd_op_txn_begin(&x->s->state, &x->s->aof) : 0;
    if (!held) {
        if ((rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) == RB_OK)
            rc = rb_cms_query(x->s->state.seg, x->argv[1], x->argl[1], key.ptr, key.len, &est);
    } else if ((rc = rbd_cmd_cms_incrby(x, x->argv[1], x->argl[1], &key, &one, 1, &est)) ==
                   RB_OK &&
               rb_cms_info(x->s->state.seg, x->argv[1], x->argl[1], &after) == RB_OK &&
               after.agings != before.agings) {
        op.type = RBD_OP_BF_RESET;   /* the sketch aged: the doorkeeper starts over */
        rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    }
    if (own)
        rbd_op_txn_end(&x->s->state, &x->s->aof, start);
    if (rc != RB_OK)
        pair_error(x, rc);
    else
        rbi_resp_int(x->out, (long long)est + 1);
}

/* ADMIT.QUERY name candidate victim: 1 if TinyLFU admits the candidate
 * over the victim (rb_tinylfu_admit), else 0. */
static void cmd_admit_query(rbd_ctx_t *x)
{
    int admit = 0;
    int rc = rb_tinylfu_admit(x->s->state.seg, x->argv[1], x->argl[1], x->argv[2], x->argl[2],
                              x->argv[3], x->argl[3], &admit);

    if (rc != RB_OK)
        pair_error(x, rc);
    else
        rbi_resp_int(x->out, admit);
}

const rbd_command_t rbd_cmd_admit_table[] = {
    RBD_COMMAND("ADMIT.RESERVE", -3, CMD_WRITE, cmd_admit_reserve, "admit",
                "Creates a TinyLFU pair: an aging count-min sketch and its doorkeeper",
                "key capacity:integer [error:double] [WINDOW window:integer]"),
    RBD_COMMAND("ADMIT.TOUCH", 3, CMD_WRITE | CMD_FAST, cmd_admit_touch, "admit",
                "Records an access to an item in a TinyLFU pair",
                "key item"),
    RBD_COMMAND("ADMIT.QUERY", 4, CMD_FAST, cmd_admit_query, "admit",
                "Returns 1 if TinyLFU admits a candidate over a victim",
                "key candidate victim"),
    RBD_COMMAND_END,
};
