/*
 * cmd_bf_dump.c - BF.SCANDUMP and BF.LOADCHUNK: moving a filter out of and
 * into ringbloomd in chunks, with RedisBloom's iterator, in RedisBloom's
 * format for LAYOUT redisbloom and ours (lib/bloom/bloom_dump.c) for the rest.
 * A load is a mutation (ops.c, BF_LOADCHUNK).
 */
#include "config.h"

#include <stdlib.h>

#include "bloom.h"   /* lib: the dump formats (bloom_dump.c) */
#include "cmd.h"
#include "ops.h"

/* The open handle of filter argv[i] (RB_ENOENT in *rc if there is none). */
static rb_bloom_t *filter_arg(rbd_ctx_t *x, size_t i, int *rc)
{
    return rbd_filters_get(&x->s->state.filters, x->s->state.seg, x->argv[i], x->argl[i], rc);
}

/* BF.SCANDUMP name iter [FORMAT redisbloom|ringbloom]: [next iter, bytes]
 * (RedisBloom's iterator: 0 gives the header, the bytes then follow from
 * 1; [0, ""] at the end).  A redisbloom filter dumps in RedisBloom's
 * format, others in ours; FORMAT (ours) asks for one and is refused if the
 * filter's layout has no such form. */
static void cmd_bf_scandump(rbd_ctx_t *x)
{
    long long iter;
    rb_bloom_stat_t st;
    unsigned char *buf;
    size_t len;
    int64_t next;
    rb_bloom_t *bf;
    int rc, want_rb = -1;
    size_t out0 = x->out->len;

    if (x->argc != 3 && !(x->argc == 5 && rbd_cmd_arg_is(x, 3, "FORMAT")))
        rbd_cmd_wrong_arity(x);
    else if (x->argc == 5 && (want_rb = rbd_cmd_arg_is(x, 4, "redisbloom") ? 1
                                   : rbd_cmd_arg_is(x, 4, "ringbloom") ? 0 : -2) == -2)
        rbi_resp_error(x->out, "ERR FORMAT must be redisbloom or ringbloom");
    if (x->out->len != out0 || rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    bf = filter_arg(x, 1, &rc);
    if (bf == NULL || (rc = rb_bloom_info(bf, &st)) != RB_OK) {
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
        return;
    }
    if (rbd_cmd_arg_ll(x, 2, &iter) != 0)
        rbi_resp_error(x->out, "Second argument must be numeric");
    else if (want_rb >= 0 && want_rb != (st.layout == RB_BLOOM_REDISBLOOM))
        rbi_resp_error(x->out, want_rb ? "ERR only LAYOUT redisbloom filters dump in RedisBloom's "
                                         "format: this one hashes and lays out bits as ours"
                                       : "ERR a LAYOUT redisbloom filter dumps in RedisBloom's "
                                         "format only");
    if (x->out->len != out0)
        return;
    if ((rc = rbi_bloom_dump(bf, iter, rbd_cmd_dump_chunk_max(x), NULL, &len, &next)) != RB_OK ||
        (buf = malloc(len ? len : 1)) == NULL ||
        (rc = rbi_bloom_dump(bf, iter, rbd_cmd_dump_chunk_max(x), buf, &len, &next)) != RB_OK) {
        rbd_cmd_error(x, RBD_AT_FILTER, rc == RB_OK ? RB_ENOMEM : rc);
        return;
    }
    rbi_resp_array(x->out, 2);
    rbi_resp_int(x->out, next);
    rbi_resp_bulk(x->out, buf, len);
    free(buf);
}

/* BF.LOADCHUNK name iter data: iter 1 with no such filter takes a header
 * (either format: it makes the filter, live at once, its bits zero until
 * the data chunks come), else data at the iterator SCANDUMP gave with it.
 * A mutation: logged (ops.c) and replayed. */
static void cmd_bf_loadchunk(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_BF_LOADCHUNK, .name = x->argv[1], .len = x->argl[1],
                    .data = (const unsigned char *)x->argv[3], .dlen = x->argl[3] };
    rb_bloom_stat_t st;
    long long iter;
    rb_bloom_t *bf;
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if (rbd_cmd_arg_ll(x, 2, &iter) != 0) {
        rbi_resp_error(x->out, "ERR Second argument must be numeric");
        return;
    }
    op.iter = iter;
    bf = filter_arg(x, 1, &rc);
    if (bf != NULL && iter == 1 && rbi_bloom_dump_format(op.data, op.dlen) != 0 &&
        rb_bloom_info(bf, &st) == RB_OK) {
        rbi_resp_error(x->out, rbi_bloom_dump_format(op.data, op.dlen) == 2 &&
                       st.layout != RB_BLOOM_REDISBLOOM ? "ERR a RedisBloom dump loads only "
                       "into a new filter; this one exists with ringbloom's layout"
                       : "ERR item exists: a dump's header loads only into a new filter");
        return;
    }
    if ((rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else if (rc == RB_EINVAL && op.why != NULL)
        rbi_resp_error(x->out, "%s", op.why);
    else if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else
        rbd_cmd_create_error(x, rc);
}

const rbd_command_t rbd_cmd_bf_dump_table[] = {
    RBD_COMMAND("BF.SCANDUMP", -3, 0, cmd_bf_scandump, "bf",
                "Returns the next chunk of a Bloom filter's dump",
                "key iterator:integer [FORMAT (REDISBLOOM|RINGBLOOM)]"),
    RBD_COMMAND("BF.LOADCHUNK", 4, CMD_WRITE, cmd_bf_loadchunk, "bf",
                "Restores a chunk of a Bloom filter's dump",
                "key iterator:integer data"),
    RBD_COMMAND_END,
};
