/*
 * cmd_keys.c - the keyspace commands, as Redis names them, over the
 * filters (Bloom filters, HyperLogLog counters, count-min sketches and
 * cuckoo filters, one namespace: the only keys ringbloomd has; ring nodes
 * are not keys): DEL and UNLINK (the same here: a delete frees at once,
 * in O(directory + layers)), EXISTS, TYPE, KEYS, SCAN, DBSIZE and
 * FLUSHALL / FLUSHDB; their table and handlers.
 *
 * A delete is an op (ops.c: applied, logged, replayed); the rest only read
 * the directory.  Patterns follow Redis's glob (glob_match.c: *, ?, [abc],
 * [^a-z], \ escapes, on bytes, so names with NUL bytes match too),
 * compiled once per command, so a name costs O(pattern tokens x name).
 * A SCAN cursor is a directory slot: filters never move between slots, so
 * a SCAN reports every filter that lived throughout it exactly once
 * (Redis promises at least once).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "cmd.h"
#include "glob_match.h"
#include "ops.h"

/* What SCAN TYPE lists: every kind, or a type no key here has. */
static const rb_kind_desc_t any_kind, no_kind;
#define SCAN_COUNT   10            /* SCAN's default COUNT, as Redis */

/* The kind of filter argv[i] (the kind table: ringbloom/filter.h), or
 * NULL if there is none (a name no filter can have included); *rc says
 * why (RB_ENOENT: none, or the error that stopped the lookup). */
static const rb_kind_desc_t *kind_of(rbd_ctx_t *x, size_t i, int *rc)
{
    const rb_kind_desc_t *k = NULL;

    if (x->argl[i] == 0 || x->argl[i] > RB_FILTER_NAME_MAX) {
        *rc = RB_ENOENT;
        return NULL;
    }
    *rc = rb_filter_kind(x->s->state.seg, x->argv[i], x->argl[i], &k);
    return *rc == RB_OK ? k : NULL;
}

/* DEL / UNLINK key...: the number of filters deleted (a name given twice
 * counts once, a missing one not at all).  Each delete is its own op and
 * record; an error (a filter whose layers fail validation) stops there,
 * the deletes before it stay done (and logged). */
static void cmd_del(rbd_ctx_t *x)
{
    long long n = 0;

    for (size_t i = 1; i < x->argc; i++) {
        rbd_op_t op = { .type = RBD_OP_BF_DELETE, .name = x->argv[i], .len = x->argl[i] };
        int rc;
        if (kind_of(x, i, &rc) == NULL && rc == RB_ENOENT)
            continue;
        if (rc != RB_OK || (rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) != RB_OK) {
            rbd_cmd_error(x, RBD_AT_FILTER, rc);
            return;
        }
        n++;
    }
    rbi_resp_int(x->out, n);
}

/* EXISTS key...: how many of the names are filters, counters or sketches
 * (a name given twice counts twice, as Redis; it is looked up once). */
static void cmd_exists(rbd_ctx_t *x)
{
    uint32_t *uniq, *times;
    long long n = 0;
    long k = rbd_cmd_args_distinct(x, 1, &uniq, &times);

    if (k < 0)
        return;
    for (long j = 0; j < k; j++) {
        int rc;
        if (kind_of(x, uniq[j], &rc) != NULL)
            n += times[j];
    }
    free(uniq);
    free(times);
    rbi_resp_int(x->out, n);
}

/* TYPE key: its kind's type name (the kind table: RedisBloom's for a
 * Bloom filter, a count-min sketch or a cuckoo filter, Redis's for a
 * HyperLogLog, "string"), or none. */
static void cmd_type(rbd_ctx_t *x)
{
    int rc;
    const rb_kind_desc_t *k = kind_of(x, 1, &rc);

    rbi_resp_simple(x->out, k != NULL ? k->type : "none");
}

/* MEMORY USAGE key [SAMPLES count]: the bytes of the key's arrays in the
 * segment (what rb_filter_summary counts; SAMPLES is Redis's and changes
 * nothing: nothing is sampled), nil for a key that does not exist. */
static void cmd_memory(rbd_ctx_t *x)
{
    rb_filter_summary_t sum;
    long long samples;
    int rc;

    if (rbd_cmd_arg_is(x, 1, "HELP") && x->argc == 2) {
        rbi_resp_array(x->out, 2);
        rbi_resp_simple(x->out, "MEMORY USAGE <key> [SAMPLES <count>]");
        rbi_resp_simple(x->out, "    Return memory in bytes used by <key>'s arrays.");
        return;
    }
    if (!rbd_cmd_arg_is(x, 1, "USAGE") || x->argc < 3 ||
        (x->argc != 3 && !(x->argc == 5 && rbd_cmd_arg_is(x, 3, "SAMPLES") &&
                           rbd_cmd_arg_ll(x, 4, &samples) == 0 && samples >= 0))) {
        rbi_resp_error(x->out, "ERR unknown subcommand or wrong number of arguments for "
                       "'%.*s'. Try MEMORY HELP.", (int)(x->argl[1] < 64 ? x->argl[1] : 64),
                       x->argv[1]);
        return;
    }
    rc = rb_filter_summary(x->s->state.seg, x->argv[2], x->argl[2], &sum);
    if (rc == RB_OK)
        rbi_resp_int(x->out, (long long)sum.bytes);
    else if (rc == RB_ENOENT || rc == RB_EINVAL)
        rbi_resp_nil(x->out);
    else
        rbi_resp_error(x->out, "ERR %s", rb_strerror(rc));
}

static int count_one(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    (void)name;
    (void)len;
    (void)kind;
    (*(long long *)arg)++;
    return 0;
}

/* DBSIZE: the number of filters. */
static void cmd_dbsize(rbd_ctx_t *x)
{
    long long n = 0;
    uint64_t cursor = 0;

    (void)rb_filter_scan(x->s->state.seg, &cursor, SIZE_MAX, count_one, &n);
    rbi_resp_int(x->out, n);
}

/* What KEYS and SCAN report: the names that match (pattern NULL: all),
 * counted (out NULL) or replied as bulk strings. */
typedef struct listing {
    const rbd_glob_t *glob;
    const rb_kind_desc_t *type;  /* SCAN TYPE: &any_kind, &no_kind or the kind listed */
    size_t n;
    rbi_buf_t *out;
} listing_t;

static int list_one(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    listing_t *l = arg;

    if (l->type == &no_kind || (l->glob != NULL && !rbd_glob_match(l->glob, name, len)))
        return 0;
    if (l->type != &any_kind && kind != l->type)
        return 0;
    l->n++;
    if (l->out != NULL)
        rbi_resp_bulk(l->out, name, len);
    return 0;
}

/* Compiles argument i, the pattern of KEYS or SCAN MATCH, into g: 0, or
 * replies and returns -1. */
static int glob_arg(rbd_ctx_t *x, size_t i, rbd_glob_t *g)
{
    if (rbd_glob_compile(g, x->argv[i], x->argl[i], RB_FILTER_NAME_MAX) != 0) {
        rbi_resp_error(x->out, "ERR out of memory");
        return -1;
    }
    return 0;
}

/* KEYS pattern: every filter whose name matches, in directory order.  Two
 * walks, one to count and one to reply: the daemon is the only writer, so
 * nothing changes in between. */
static void cmd_keys(rbd_ctx_t *x)
{
    rbd_glob_t g;
    listing_t l = { &g, &any_kind, 0, NULL };
    uint64_t cursor = 0;

    if (glob_arg(x, 1, &g) != 0)
        return;
    (void)rb_filter_scan(x->s->state.seg, &cursor, SIZE_MAX, list_one, &l);
    rbi_resp_array(x->out, l.n);
    l.out = x->out;
    cursor = 0;
    (void)rb_filter_scan(x->s->state.seg, &cursor, SIZE_MAX, list_one, &l);
    rbd_glob_free(&g);
}

/* SCAN TYPE's argument i: the kind it lists (the type names TYPE
 * answers, any case), &no_kind for a type no key here has. */
static const rb_kind_desc_t *type_arg(const rbd_ctx_t *x, size_t i)
{
    const rb_kind_desc_t *k;

    for (size_t j = 0; (k = rb_kind(j)) != NULL; j++)
        if (x->argl[i] == strlen(k->type) && strncasecmp(x->argv[i], k->type, x->argl[i]) == 0)
            return k;
    return &no_kind;
}

/* SCAN's options after the cursor, a MATCH pattern compiled into g
 * (released by rbd_glob_free, whatever the result): 0, or replies and
 * returns -1. */
static int scan_options(rbd_ctx_t *x, listing_t *l, rbd_glob_t *g, long long *count)
{
    for (size_t i = 2; i < x->argc; i += 2) {
        if (i + 1 >= x->argc) {
            rbi_resp_error(x->out, "ERR syntax error");
            return -1;
        }
        if (rbd_cmd_arg_is(x, i, "MATCH")) {
            /* "*" matches everything: skip the matching (Redis does too).
             * The last MATCH counts, as in Redis. */
            rbd_glob_free(g);
            l->glob = NULL;
            if (x->argl[i + 1] == 1 && x->argv[i + 1][0] == '*')
                continue;
            if (glob_arg(x, i + 1, g) != 0)
                return -1;
            l->glob = g;
        } else if (rbd_cmd_arg_is(x, i, "COUNT")) {
            if (rbd_cmd_arg_ll(x, i + 1, count) != 0) {
                rbi_resp_error(x->out, "ERR value is not an integer or out of range");
                return -1;
            }
            if (*count < 1) {
                rbi_resp_error(x->out, "ERR syntax error");
                return -1;
            }
        } else if (rbd_cmd_arg_is(x, i, "TYPE")) {
            l->type = type_arg(x, i + 1);
        } else {
            rbi_resp_error(x->out, "ERR syntax error");
            return -1;
        }
    }
    return 0;
}

/* SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]: the next cursor (0:
 * done) and the matching filters among the COUNT directory slots from
 * the cursor on (rb_filter_scan). */
static void cmd_scan(rbd_ctx_t *x)
{
    listing_t l = { NULL, &any_kind, 0, NULL };
    rbd_glob_t g = { NULL, 0, 0, 0 };
    long long cursor, count = SCAN_COUNT;
    uint64_t next;
    char buf[24];
    int len;

    if (rbd_cmd_arg_ll(x, 1, &cursor) != 0 || cursor < 0) {
        rbi_resp_error(x->out, "ERR invalid cursor");
        return;
    }
    if (scan_options(x, &l, &g, &count) != 0) {
        rbd_glob_free(&g);
        return;
    }
    next = (uint64_t)cursor;
    (void)rb_filter_scan(x->s->state.seg, &next, (size_t)count, list_one, &l);
    rbi_resp_array(x->out, 2);
    len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)next);
    rbi_resp_bulk(x->out, buf, (size_t)len);
    rbi_resp_array(x->out, l.n);
    l.out = x->out;
    next = (uint64_t)cursor;
    (void)rb_filter_scan(x->s->state.seg, &next, (size_t)count, list_one, &l);
    rbd_glob_free(&g);
}

/* FLUSHALL / FLUSHDB [ASYNC | SYNC]: every filter of every kind deleted
 * (there is one database), as one op (ops.c's FLUSHALL: one record, its
 * replay deletes the same), logged with who asked.  The ring is not a
 * key: it stays, with ring-source etcd as without.  ASYNC and SYNC mean
 * the same: a delete gives its pages back at once, and a filter no reader
 * holds costs its hole punch (issue 42, item 11).  With filter-source
 * nats the stream's sink refuses it, whole, while a replicated filter
 * lives (a delete of one is not replicated).  +OK, or an error that
 * counts the filters whose delete failed (left in place). */
static void cmd_flushall(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_FLUSHALL };
    char name[16];
    int rc;

    if (x->argc > 2 || (x->argc == 2 && !rbd_cmd_arg_is(x, 1, "ASYNC") &&
                        !rbd_cmd_arg_is(x, 1, "SYNC"))) {
        rbi_resp_error(x->out, "ERR syntax error");
        return;
    }
    if ((rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) != RB_OK) {
        rbd_cmd_error(x, RBD_AT_FILTER, rc);
        return;
    }
    rbd_cmd_lower(x->cmd, name, sizeof(name));
    rbd_log(LOG_NOTICE, "%s by uid %u pid %d: %llu filters deleted%s", x->cmd->name,
            (unsigned)x->c->uid, (int)x->c->pid, (unsigned long long)op.deleted,
            op.kept ? ", some could not be" : "");
    if (op.kept == 0)
        rbi_resp_simple(x->out, "OK");
    else
        rbi_resp_error(x->out, "ERR %s deleted %llu filters; %llu could not be deleted and "
                       "stay (%s)", name, (unsigned long long)op.deleted,
                       (unsigned long long)op.kept, rb_strerror(op.kept_rc));
}

const rbd_command_t rbd_cmd_keys_table[] = {
    RBD_COMMAND("DEL", -2, CMD_WRITE, cmd_del, "generic",
                "Deletes filters of every kind",
                "key..."),
    RBD_COMMAND("UNLINK", -2, CMD_WRITE, cmd_del, "generic",
                "Deletes filters of every kind",
                "key..."),
    RBD_COMMAND("EXISTS", -2, CMD_FAST, cmd_exists, "generic",
                "Counts the names that are Bloom filters, counters or sketches",
                "key..."),
    RBD_COMMAND("TYPE", 2, CMD_FAST, cmd_type, "generic",
                "Returns the type of a key",
                "key"),
    RBD_COMMAND("KEYS", 2, 0, cmd_keys, "generic",
                "Returns the Bloom filters whose names match a pattern",
                "pattern:pattern"),
    RBD_COMMAND("SCAN", -2, 0, cmd_scan, "generic",
                "Iterates over the Bloom filters' names",
                "cursor:integer [MATCH pattern:pattern] [COUNT count:integer] [TYPE type]"),
    RBD_COMMAND("MEMORY", -2, 0, cmd_memory, "server",
                "Returns the bytes a key's arrays take in the segment",
                "(USAGE key [SAMPLES count:integer] | HELP)"),
    RBD_COMMAND_CATS("DBSIZE", 1, CMD_FAST, ACL_KEYSPACE, cmd_dbsize, "server",
                "Returns the number of Bloom filters",
                ""),
    /* (one line up to its group: man_lint.sh reads the row so) */
    RBD_COMMAND_CATS("FLUSHALL", -1, CMD_WRITE | CMD_ADMIN | CMD_OTHERS, ACL_KEYSPACE, cmd_flushall, "server",
                     "Deletes every filter of every kind", "[ASYNC|SYNC]"),
    /* (one line up to its group: man_lint.sh reads the row so) */
    RBD_COMMAND_CATS("FLUSHDB", -1, CMD_WRITE | CMD_ADMIN | CMD_OTHERS, ACL_KEYSPACE, cmd_flushall, "server",
                     "Deletes every filter of every kind (one database)", "[ASYNC|SYNC]"),
    RBD_COMMAND_END,
};
