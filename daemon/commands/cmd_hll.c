/*
 * cmd_hll.c - the HyperLogLog commands, with Redis's names, arguments and
 * replies (PFADD, PFCOUNT, PFMERGE): their table and handlers.  Counters
 * change only through ops (ops.c: PFADD and PFMERGE records, types 14 and
 * 15); PFCOUNT reads the segment as any reader does, and keeps a single
 * counter's count with it (rb_hll_count_keep, H2: derived, not logged).
 *
 * Counters and Bloom filters share one namespace, as Redis's keys do: a
 * command that meets another kind answers WRONGTYPE (the library's
 * RB_EWRONGTYPE, cmd_util.c's words).  A name no counter can
 * have (longer than RB_FILTER_NAME_MAX) reads as a missing key, as a
 * source or in PFCOUNT; as the key written it is refused.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ops.h"
#include "scratch.h"

/* 1 if a counter can be named by len bytes. */
static int counter_name_ok(size_t len)
{
    return len > 0 && len <= RB_FILTER_NAME_MAX;
}

/* The distinct arguments argv[first ..] as keys into *v, the ones no
 * counter can be named left out if names_only: a key named twice is read
 * once (the union and the maximum are the same without the repeat), so a
 * command naming one key 200,000 times costs one key.  *v is the caller's
 * stack (stack_bytes of room) when the arguments fit, and they are
 * compared there, each with the ones kept before it (a few: no set, no
 * allocation on the hot path); else *v is calloc'd and a set
 * (rbd_cmd_args_distinct) finds them.  Either way in the order of their
 * first appearance; *v is given back with rbd_scratch_free(*v, stack).
 * Their count, or -1 (out of memory: replied). */
static long args_keys(rbd_ctx_t *x, size_t first, int names_only, rb_key_t *stack,
                      size_t stack_bytes, rb_key_t **v)
{
    size_t n = x->argc > first ? x->argc - first : 0;
    uint32_t *uniq;
    long d, k = 0;

    if ((*v = rbd_scratch(stack, stack_bytes, n, sizeof(**v))) == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        return -1;
    }
    if (*v == stack) {
        for (size_t i = first; i < x->argc; i++) {
            long j = 0;
            if (names_only && !counter_name_ok(x->argl[i]))
                continue;
            while (j < k && !(stack[j].len == x->argl[i] &&
                              memcmp(stack[j].ptr, x->argv[i], x->argl[i]) == 0))
                j++;
            if (j == k)
                stack[k++] = (rb_key_t){ x->argv[i], x->argl[i] };
        }
        return k;
    }
    if ((d = rbd_cmd_args_distinct(x, first, &uniq, NULL)) < 0) {
        free(*v);
        return -1;
    }
    for (long j = 0; j < d; j++) {
        size_t i = uniq[j];
        if (names_only && !counter_name_ok(x->argl[i]))
            continue;
        (*v)[k++] = (rb_key_t){ x->argv[i], x->argl[i] };
    }
    free(uniq);
    return k;
}

/* The reply to a library error of a counter command. */
static void hll_error(rbd_ctx_t *x, int rc)
{
    if (rc == RB_EWRONGTYPE)
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
    else if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else
        rbd_cmd_create_error(x, rc);
}

/* PFADD key [element ...]: 1 if the counter was created or a register
 * changed, else 0.  A PFADD that changes nothing logs nothing. */
static void cmd_pfadd(rbd_ctx_t *x)
{
    rb_key_t small[RBD_SCRATCH_SMALL], *v;
    rbd_op_t op = { .type = RBD_OP_PFADD, .name = x->argv[1], .len = x->argl[1] };
    long n;
    int rc;

    if (rbd_cmd_arg_name(x, 1, "key", RB_FILTER_NAME_MAX) != 0 ||
        (n = args_keys(x, 2, 0, small, sizeof(small), &v)) < 0)
        return;
    op.keys = v;
    op.nkeys = (size_t)n;
    rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc == RB_OK)
        rbi_resp_int(x->out, !op.noop);
    else
        hll_error(x, rc);
    rbd_scratch_free(v, small);
}

/* PFCOUNT key [key ...]: the estimate of the union (a missing key is an
 * empty counter); nothing logged, one counter's count kept (H2). */
static void cmd_pfcount(rbd_ctx_t *x)
{
    rb_key_t small[RBD_SCRATCH_SMALL], *v;
    uint64_t count = 0;
    long n;
    int rc = RB_OK;

    if ((n = args_keys(x, 1, 1, small, sizeof(small), &v)) < 0)
        return;
    if (n > 0)
        rc = rb_hll_count_keep(x->s->state.seg, v, (size_t)n, &count);
    if (rc != RB_OK)
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
    else
        rbi_resp_int(x->out, (long long)count);
    rbd_scratch_free(v, small);
}

/* PFMERGE destkey [sourcekey ...]: destkey's registers become the maxima
 * of its own and the sources' (missing ones skipped); created if missing.
 * OK. */
static void cmd_pfmerge(rbd_ctx_t *x)
{
    rb_key_t small[RBD_SCRATCH_SMALL], *v;
    rbd_op_t op = { .type = RBD_OP_PFMERGE, .name = x->argv[1], .len = x->argl[1] };
    long n;
    int rc;

    if (rbd_cmd_arg_name(x, 1, "key", RB_FILTER_NAME_MAX) != 0 ||
        (n = args_keys(x, 2, 1, small, sizeof(small), &v)) < 0)
        return;
    op.keys = v;
    op.nkeys = (size_t)n;
    rc = rbd_op_run(&x->s->state, &x->s->aof, &op);
    if (rc == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else
        hll_error(x, rc);
    rbd_scratch_free(v, small);
}

const rbd_command_t rbd_cmd_hll_table[] = {
    RBD_COMMAND("PFADD", -2, CMD_WRITE | CMD_FAST, cmd_pfadd, "hyperloglog",
                "Adds elements to a HyperLogLog counter, creating it if missing",
                "key [element...]"),
    RBD_COMMAND("PFCOUNT", -2, 0, cmd_pfcount, "hyperloglog",
                "Returns the estimated number of distinct elements of the union of counters",
                "key..."),
    RBD_COMMAND("PFMERGE", -2, CMD_WRITE, cmd_pfmerge, "hyperloglog",
                "Merges HyperLogLog counters into one, creating it if missing",
                "destkey [sourcekey...]"),
    RBD_COMMAND_END,
};
