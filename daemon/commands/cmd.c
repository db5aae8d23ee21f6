/*
 * cmd.c - ringbloomd's dispatcher: finds a request's command in the
 * families' tables, checks its arity and what its flags demand (write
 * permission, a working log), and runs its handler.  BF.* follow
 * RedisBloom (names, arguments, replies, error strings) so a client
 * written for Redis works unchanged; RING.* and our options are ours.
 *
 * Transactions, as Redis runs them (without WATCH): after MULTI a request
 * passes the same checks and is queued (txn.c); a refusal marks the
 * transaction and EXEC then discards it (EXECABORT).  EXEC runs the queue
 * in one step of the event loop, so no other client's command comes
 * between its members, answers an array of their replies (an error among
 * them is one element) and logs their records as one TXN record, with
 * the segment's transaction mark set meanwhile (ops.c): a restart after a
 * crash keeps all of them or none (T1, docs/design.md).
 * COMMAND describes the tables, so it lives here too; COMMAND DOCS's
 * map of a command comes from its row's syntax (cmd_docs.c).  So do ACL's
 * rows, ACL CAT's listing and ACL DRYRUN, which walk the tables (the rest
 * of ACL, and the check of the ACL rules, is cmd_acl.c's).
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd.h"
#include "cmd_docs.h"
#include "ops.h"

static const rbd_command_t dispatch_table[];

/* The families' tables (each in its cmd_<family>.c, ended by a row with
 * a NULL name), searched in this order: the write path first. */
extern const rbd_command_t rbd_cmd_bf_table[], rbd_cmd_bf_dump_table[], rbd_cmd_hll_table[],
    rbd_cmd_ring_table[], rbd_cmd_server_table[], rbd_cmd_info_table[], rbd_cmd_keys_table[],
    rbd_cmd_cms_table[], rbd_cmd_admit_table[], rbd_cmd_cf_table[], rbd_cmd_cbf_table[],
    rbd_cmd_observe_table[], rbd_cmd_client_table[];
static const rbd_command_t *const families[] = {
    rbd_cmd_bf_table, rbd_cmd_bf_dump_table, rbd_cmd_hll_table, rbd_cmd_ring_table,
    rbd_cmd_server_table, rbd_cmd_info_table, rbd_cmd_keys_table, rbd_cmd_cms_table,
    rbd_cmd_admit_table, rbd_cmd_cf_table, rbd_cmd_cbf_table, rbd_cmd_observe_table,
    rbd_cmd_client_table,
    dispatch_table,
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

/* The index of every command by name: open addressing, at most half
 * full, a name's slot by its case-folded FNV-1a hash.  Built once (the
 * tables are constant); a name found first in the families' order wins,
 * as the tables' search order says. */
#define INDEX_SLOTS 512u   /* a power of two >= 2x the commands (asserted when built) */
static const rbd_command_t *cmd_index[INDEX_SLOTS];
static pthread_once_t cmd_index_once = PTHREAD_ONCE_INIT;

/* Equal for names equal but for the case of ASCII letters. */
static uint32_t name_hash(const char *name, size_t len)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)(name[i] | 0x20)) * 16777619u;
    return h;
}

static void cmd_index_build(void)
{
    size_t n = 0;

    for (size_t f = 0; f < NFAMILIES; f++)
        for (const rbd_command_t *c = families[f]; c->name != NULL; c++) {
            uint32_t h = name_hash(c->name, c->len) & (INDEX_SLOTS - 1);
            const rbd_command_t *o;
            while ((o = cmd_index[h]) != NULL &&
                   !(o->len == c->len && strncasecmp(o->name, c->name, c->len) == 0))
                h = (h + 1) & (INDEX_SLOTS - 1);
            if (o == NULL) {
                cmd_index[h] = c;
                if (++n > INDEX_SLOTS / 2)
                    abort();   /* a table grew past the index: raise INDEX_SLOTS */
            }
        }
}

const rbd_command_t *rbd_cmd_lookup(const char *name, size_t len)
{
    const rbd_command_t *c;
    uint32_t h;

    pthread_once(&cmd_index_once, cmd_index_build);
    for (h = name_hash(name, len) & (INDEX_SLOTS - 1); (c = cmd_index[h]) != NULL;
         h = (h + 1) & (INDEX_SLOTS - 1))
        if (c->len == len && strncasecmp(name, c->name, len) == 0)
            return c;
    return NULL;
}

static void unknown_command(rbd_ctx_t *x)
{
    char args[160];
    size_t w = 0;

    args[0] = '\0';
    for (size_t i = 1; i < x->argc && w < 128; i++) {
        int n = snprintf(args + w, sizeof(args) - w, "'%.*s' ",
                         (int)(x->argl[i] < 128 - w ? x->argl[i] : 128 - w), x->argv[i]);
        if (n < 0)
            break;
        w += (size_t)n;
        if (w >= sizeof(args))
            w = sizeof(args) - 1;
    }
    rbi_resp_error(x->out, "ERR unknown command '%.*s', with args beginning with: %s",
               (int)(x->argl[0] < 128 ? x->argl[0] : 128), x->argv[0], args);
}

/* The refusal of a change while the log cannot be written, after prefix. */
static void misconf(rbd_ctx_t *x, const char *prefix)
{
    rbi_resp_error(x->out, "%sMISCONF the log in %s cannot be written; changes are refused "
                   "until it can (see the daemon's log)", prefix, x->s->aof.dir);
}

const rbd_command_t *rbd_cmd_lookup_sub(const rbd_command_t *cmd, const char *name, size_t len)
{
    if (cmd->subs == NULL)
        return NULL;
    for (const rbd_command_t *c = cmd->subs; c->name != NULL; c++)
        if (c->len == len && strncasecmp(name, c->name, len) == 0)
            return c;
    return NULL;
}

int rbd_cmd_known(const char *name)
{
    const char *bar = strchr(name, '|');
    const rbd_command_t *cmd = rbd_cmd_lookup(name, bar ? (size_t)(bar - name) : strlen(name));

    if (cmd == NULL || bar == NULL)
        return cmd != NULL;
    return rbd_cmd_lookup_sub(cmd, bar + 1, strlen(bar + 1)) != NULL;
}

/* What the command's categories and flags demand of the client and the
 * log: 0, or replies why not and returns -1. */
static int allowed(rbd_ctx_t *x)
{
    char why[1400];

    /* The client's last permitted command is permitted again: its rules
     * (who) change only with the settings, which forget it (server.c). */
    if (x->c->acl_cmd != x->cmd || x->c->acl_sub != x->sub) {
        if (!rbd_cmd_permitted(x->s, &x->c->who, x->c->uid, x->cmd, x->sub, why,
                               sizeof(why))) {
            x->s->denied++;
            rbi_resp_error(x->out, "NOPERM %s", why);
            return -1;
        }
        x->c->acl_cmd = x->cmd;
        x->c->acl_sub = x->sub;
    }
    if (((x->sub ? x->sub : x->cmd)->flags & CMD_WRITE) && rbd_aof_refuses(&x->s->aof)) {
        misconf(x, "");
        return -1;
    }
    return 0;
}

/* 1 if argc fits arity. */
static int arity_ok(int arity, size_t argc)
{
    return (arity > 0 && argc == (size_t)arity) || (arity < 0 && argc >= (size_t)-arity);
}

/* The checks before a command runs or is queued: it exists, its arity (a
 * subcommand's too: x->sub), its flags and ACL rules (allowed).  0
 * (x->cmd set), or -1 with the refusal replied. */
static int check(rbd_ctx_t *x)
{
    char lower[32], sub[32];

    x->cmd = rbd_cmd_lookup(x->argv[0], x->argl[0]);
    if (x->cmd == NULL) {
        unknown_command(x);
        return -1;
    }
    if (!arity_ok(x->cmd->arity, x->argc)) {
        rbd_cmd_wrong_arity(x);
        return -1;
    }
    x->sub = x->argc > 1 ? rbd_cmd_lookup_sub(x->cmd, x->argv[1], x->argl[1]) : NULL;
    if (x->sub != NULL && !arity_ok(x->sub->arity, x->argc)) {
        rbi_resp_error(x->out, "ERR wrong number of arguments for '%s|%s' command",
                       rbd_cmd_lower(x->cmd, lower, sizeof(lower)),
                       rbd_cmd_lower(x->sub, sub, sizeof(sub)));
        return -1;
    }
    return allowed(x);
}

/* Queues a checked request of a client in MULTI: +QUEUED, or the reason
 * not (and the transaction is marked).  Refused: what cannot be part of a
 * unit kept whole (CMD_NO_MULTI; with ring-source etcd a ring change,
 * CMD_RING_SOURCE).  The queue counts against the client's buffers (B2)
 * and is bounded: max-request-bytes of queue (rbd_txn_cost: the length
 * prefixes too), RBD_TXN_MAX_COMMANDS commands, which bound EXEC's log
 * record. */
static void queue(rbd_ctx_t *x)
{
    rbd_txn_t *t = &x->c->txn;
    size_t bytes = rbd_txn_cost(x->argc, x->argl);

    t->dirty = 1;
    if (x->cmd->flags & CMD_NO_MULTI)
        rbi_resp_error(x->out, "ERR Command not allowed inside a transaction");
    else if ((x->cmd->flags & CMD_RING_SOURCE) && x->s->source != NULL)
        rbi_resp_error(x->out, "ERR with ring-source etcd a ring change cannot be part of "
                       "MULTI/EXEC (etcd answers it later)");
    else if (t->count >= RBD_TXN_MAX_COMMANDS || bytes > x->s->cfg.max_request_bytes - t->bytes)
        rbi_resp_error(x->out, "ERR transaction too large: its queued commands may take at most "
                       "%llu bytes (max-request-bytes; 4 more per command and per argument) "
                       "and be at most %u", (unsigned long long)x->s->cfg.max_request_bytes,
                       RBD_TXN_MAX_COMMANDS);
    else if (rbd_txn_queue(t, x->argc, x->argv, x->argl) != 0)
        rbi_resp_error(x->out, "ERR out of memory");
    else {
        t->dirty = 0;
        t->writes |= (x->cmd->flags & CMD_WRITE) != 0;
        rbi_resp_simple(x->out, "QUEUED");
    }
}

/* Runs (or, in MULTI, queues) one request of client c, its reply into
 * out.  effects_only: a command that can change nothing but its reply
 * (neither CMD_WRITE nor CMD_ADMIN) is skipped (an EXEC whose replies
 * were cut). */
static void dispatch(server_t *s, client_t *c, rbi_buf_t *out, int effects_only, size_t argc,
                     const char **argv, const size_t *argl)
{
    rbd_ctx_t x = { s, c, argc, argv, argl, out, NULL, NULL };
    /* A command's time runs from the end of the one before it in the
     * same batch (or the batch's start: s->clock_us), its checks and
     * argument gathering included: one clock read per command. */
    uint64_t t0 = s->clock_us;
    size_t at = out->len;   /* where its reply starts (INFO's counts read it) */
    int ran = 0;

    if (check(&x) != 0) {
        if (c->txn.active)
            c->txn.dirty = 1;
    } else if (c->txn.active && !(x.cmd->flags & CMD_TXN)) {
        queue(&x);
    } else if (!effects_only || ((x.sub ? x.sub : x.cmd)->flags & (CMD_WRITE | CMD_ADMIN))) {
        c->last_cmd = x.cmd->name;   /* CLIENT LIST's cmd= */
        c->last_sub = x.sub != NULL ? x.sub->name : NULL;
        s->commands++;
        rbd_cmd_keyspace(&x);
        (x.sub ? x.sub : x.cmd)->fn(&x);
        ran = 1;
    }
    s->clock_us = rbd_mono_us();
    rbd_cmd_account(&x, at, ran, s->clock_us - t0);
    if (ran)
        rbd_observe_command(s, c, argc, argv, argl, s->clock_us - t0);
}

void rbd_cmd_execute(server_t *s, client_t *c, size_t argc, const char **argv,
                     const size_t *argl)
{
    dispatch(s, c, &c->out, 0, argc, argv, argl);
}

/* ---- MULTI, EXEC, DISCARD ------------------------------------------------------ */

static void cmd_multi(rbd_ctx_t *x)
{
    if (x->c->txn.active) {
        rbi_resp_error(x->out, "ERR MULTI calls can not be nested");
        return;
    }
    x->c->txn.active = 1;
    rbi_resp_simple(x->out, "OK");
}

static void cmd_discard(rbd_ctx_t *x)
{
    if (!x->c->txn.active) {
        rbi_resp_error(x->out, "ERR DISCARD without MULTI");
        return;
    }
    rbd_txn_reset(&x->c->txn);
    rbi_resp_simple(x->out, "OK");
}

/* Whether an EXEC's replies so far pass the client's limits (B1, B2):
 * RBD_CUT_OUTPUT past client-output-hard-limit, RBD_CUT_MEMORY if their
 * growth takes all clients' buffers past max-client-memory (client_mem
 * counted c's buffers before the EXEC, its queue, now in `queued`
 * bytes, among them), else 0. */
static int exec_over(const rbd_ctx_t *x, size_t queued)
{
    const client_t *c = x->c;
    uint64_t now = c->in.cap + c->out.cap + queued;

    if (c->out.len > x->s->cfg.output_hard_limit)
        return RBD_CUT_OUTPUT;
    if (now > c->mem && x->s->client_mem + (now - c->mem) > x->s->cfg.max_client_memory)
        return RBD_CUT_MEMORY;
    return 0;
}

/* EXEC: the queued commands run here, one after another, each checked
 * again for permission (a SIGHUP may have taken it away: that command's
 * element is the refusal, as Redis re-checks ACLs), inside one TXN record.
 * A transaction with a mutation is refused whole while the log refuses
 * changes: the log cannot fail between its members (it fails only when
 * written, after this step), so the check before the first holds for
 * all.  The client's limits hold while the reply is built, as between
 * the requests of a pipeline: once it passes one (exec_over), the rest of
 * the replies are dropped, and the client is closed after this step
 * (client.c, exec_cut); the members still run, so the transaction stays
 * whole, except those that could change nothing (their reply is all they
 * make). */
static void cmd_exec(rbd_ctx_t *x)
{
    rbd_txn_t run = x->c->txn;
    rbi_buf_t sink = { 0 };
    const char **argv;
    size_t *argl, argc, off = 0, start;

    if (!run.active) {
        rbi_resp_error(x->out, "ERR EXEC without MULTI");
        return;
    }
    memset(&x->c->txn, 0, sizeof(x->c->txn));   /* the members run outside MULTI */
    argv = malloc((run.max_argc + 1) * sizeof(*argv));
    argl = malloc((run.max_argc + 1) * sizeof(*argl));
    if (run.dirty)
        rbi_resp_error(x->out, "EXECABORT Transaction discarded because of previous errors.");
    else if (run.writes && rbd_aof_refuses(&x->s->aof))
        misconf(x, "EXECABORT Transaction discarded because of: ");
    else if (argv == NULL || argl == NULL)
        rbi_resp_error(x->out, "EXECABORT Transaction discarded because of: out of memory");
    else {
        rbi_resp_array(x->out, run.count);
        start = rbd_op_txn_begin(&x->s->state, &x->s->aof);
        x->s->in_exec = 1;
        while ((off = rbd_txn_next(&run, off, argv, argl, &argc)) != 0) {
            int cut = x->c->exec_cut != 0;
            sink.len = 0;
            sink.resp3 = x->out->resp3;
            dispatch(x->s, x->c, cut ? &sink : x->out, cut, argc, argv, argl);
            if (!cut)
                x->c->exec_cut = exec_over(x, run.queue.cap);
        }
        x->s->in_exec = 0;
        rbd_op_txn_end(&x->s->state, &x->s->aof, start);
    }
    rbi_buf_free(&sink);
    free(argv);
    free(argl);
    rbd_txn_reset(&run);
}

/* ---- COMMAND -------------------------------------------------------------------- */

/* A command as COMMAND INFO describes it (Redis 7's ten fields), or its
 * subcommand sub (named "cmd|sub", as Redis names them). */
static void command_info_of(rbd_ctx_t *x, const rbd_command_t *cmd, const rbd_command_t *sub)
{
    const rbd_command_t *row = sub ? sub : cmd;
    char lower[32], name[64];
    /* The filter, sketch or counter a command names first is the only key
     * it gives COMMAND INFO (PFCOUNT's, PFMERGE's and CMS.MERGE's other
     * keys are not given). */
    int key = rbd_cmd_first_key(row) != 0;
    const char *flag = (row->flags & CMD_WRITE) ? "write" : (row->flags & CMD_ADMIN)
                       ? "admin" : key ? "readonly" : NULL;
    size_t nsubs = 0;

    rbd_cmd_lower(cmd, name, sizeof(name));
    if (sub != NULL)
        snprintf(name + strlen(name), sizeof(name) - strlen(name), "|%s",
                 rbd_cmd_lower(sub, lower, sizeof(lower)));
    rbi_resp_array(x->out, 10);
    rbi_resp_bulk_str(x->out, name);
    rbi_resp_int(x->out, row->arity);
    rbi_resp_set(x->out, flag != NULL);
    if (flag != NULL)
        rbi_resp_simple(x->out, flag);
    rbi_resp_int(x->out, key);
    rbi_resp_int(x->out, key);
    rbi_resp_int(x->out, key);
    rbd_doc_categories(x->out, rbd_cmd_categories(row));
    rbi_resp_set(x->out, 0);     /* tips */
    rbi_resp_array(x->out, 0);   /* key specs */
    for (const rbd_command_t *s = sub == NULL ? cmd->subs : NULL; s && s->name; s++)
        nsubs++;
    rbi_resp_array(x->out, nsubs);
    for (size_t i = 0; i < nsubs; i++)
        command_info_of(x, cmd, &cmd->subs[i]);
}

static void command_info(rbd_ctx_t *x, const rbd_command_t *cmd)
{
    command_info_of(x, cmd, NULL);
}

size_t rbd_cmd_each(void *arg, void (*fn)(void *arg, const rbd_command_t *cmd,
                                          const rbd_command_t *sub))
{
    size_t n = 0;

    for (size_t f = 0; f < NFAMILIES; f++)
        for (const rbd_command_t *c = families[f]; c->name != NULL; c++, n++) {
            fn(arg, c, NULL);
            for (const rbd_command_t *s = c->subs; s != NULL && s->name != NULL; s++)
                fn(arg, c, s);
        }
    return n;
}

/* Calls fn for every command; returns how many there are. */
static size_t each_command(rbd_ctx_t *x, void (*fn)(rbd_ctx_t *x, const rbd_command_t *cmd))
{
    size_t n = 0;

    for (size_t f = 0; f < NFAMILIES; f++)
        for (const rbd_command_t *c = families[f]; c->name != NULL; c++, n++)
            if (fn != NULL)
                fn(x, c);
    return n;
}

static void command_name(rbd_ctx_t *x, const rbd_command_t *cmd)
{
    char lower[32];

    rbi_resp_bulk_str(x->out, rbd_cmd_lower(cmd, lower, sizeof(lower)));
}

/* A command as COMMAND DOCS describes it: its name, then its doc map. */
static void command_docs(rbd_ctx_t *x, const rbd_command_t *cmd)
{
    command_name(x, cmd);
    rbd_doc_reply(x->out, cmd);
}

/* COMMAND DOCS [name...]: every command, or those named, unknown names
 * left out (as Redis does; a name given twice comes twice). */
static void command_docs_named(rbd_ctx_t *x)
{
    size_t n = 0;

    if (x->argc == 2) {
        rbi_resp_map(x->out, each_command(x, NULL));
        each_command(x, command_docs);
        return;
    }
    for (size_t i = 2; i < x->argc; i++)
        n += rbd_cmd_lookup(x->argv[i], x->argl[i]) != NULL;
    rbi_resp_map(x->out, n);
    for (size_t i = 2; i < x->argc; i++) {
        const rbd_command_t *cmd = rbd_cmd_lookup(x->argv[i], x->argl[i]);
        if (cmd != NULL)
            command_docs(x, cmd);
    }
}

/* COMMAND [COUNT | LIST | INFO name... | DOCS [name...]]. */
static void cmd_command(rbd_ctx_t *x)
{
    if (x->argc == 1) {
        rbi_resp_array(x->out, each_command(x, NULL));
        each_command(x, command_info);
    } else if (rbd_cmd_arg_is(x, 1, "COUNT") && x->argc == 2) {
        rbi_resp_int(x->out, (long long)each_command(x, NULL));
    } else if (rbd_cmd_arg_is(x, 1, "LIST") && x->argc == 2) {
        rbi_resp_array(x->out, each_command(x, NULL));
        each_command(x, command_name);
    } else if (rbd_cmd_arg_is(x, 1, "INFO")) {
        rbi_resp_array(x->out, x->argc - 2);
        for (size_t i = 2; i < x->argc; i++) {
            const rbd_command_t *cmd = rbd_cmd_lookup(x->argv[i], x->argl[i]);
            if (cmd != NULL)
                command_info(x, cmd);
            else
                rbi_resp_nil(x->out);
        }
    } else if (rbd_cmd_arg_is(x, 1, "DOCS")) {
        command_docs_named(x);
    } else {
        rbi_resp_error(x->out, "ERR unknown subcommand or wrong number of arguments for "
                       "'%.*s'. Try COMMAND HELP.", (int)(x->argl[1] < 64 ? x->argl[1] : 64),
                       x->argv[1]);
    }
}

/* ---- ACL CAT, ACL DRYRUN and ACL's rows (the rest: cmd_acl.c) ------------------ */

typedef struct cat_list {
    rbd_ctx_t *x;
    uint32_t cat;
    size_t n;
    int count_only;
} cat_list_t;

/* A command (or subcommand) of category l->cat: counted, or its name
 * ("cmd|sub" for a subcommand) replied. */
static void cat_emit(void *arg, const rbd_command_t *cmd, const rbd_command_t *sub)
{
    cat_list_t *l = arg;
    char name[32], subname[32], full[72];

    if (!(rbd_cmd_categories(sub ? sub : cmd) & l->cat))
        return;
    l->n++;
    if (l->count_only)
        return;
    rbd_cmd_lower(cmd, name, sizeof(name));
    if (sub != NULL)
        snprintf(full, sizeof(full), "%s|%s", name, rbd_cmd_lower(sub, subname, sizeof(subname)));
    else
        snprintf(full, sizeof(full), "%s", name);
    rbi_resp_bulk_str(l->x->out, full);
}

/* ACL CAT [category]. */
static void cmd_acl_cat(rbd_ctx_t *x)
{
    cat_list_t l = { x, 0, 0, 1 };

    if (x->argc > 3) {
        rbi_resp_error(x->out, "ERR wrong number of arguments for 'acl|cat' command");
        return;
    }
    if (x->argc == 2) {
        rbi_resp_array(x->out, RBD_ACL_NCATS);
        for (unsigned i = 0; i < RBD_ACL_NCATS; i++)
            rbi_resp_bulk_str(x->out, rbd_acl_cat_name(i));
        return;
    }
    l.cat = rbd_acl_cat_bit(x->argv[2], x->argl[2]);
    if (l.cat == 0) {
        rbi_resp_error(x->out, "ERR Unknown category '%.*s'",
                       (int)(x->argl[2] < 64 ? x->argl[2] : 64), x->argv[2]);
        return;
    }
    rbd_cmd_each(&l, cat_emit);
    rbi_resp_array(x->out, l.n);
    l.count_only = 0;
    rbd_cmd_each(&l, cat_emit);
}

/* ACL DRYRUN user command [arg...]: OK if user may run it, else why not
 * (a bulk string, as Redis answers), with the rule that refused it. */
static void cmd_acl_dryrun(rbd_ctx_t *x)
{
    const rbd_command_t *cmd, *sub = NULL;
    rbd_acl_who_t who;
    char why[1400];
    uid_t uid;

    if (rbd_cmd_acl_who(x, &uid, &who) != 0)
        return;
    cmd = rbd_cmd_lookup(x->argv[3], x->argl[3]);
    if (cmd == NULL) {
        rbi_resp_error(x->out, "ERR Command '%.*s' not found",
                       (int)(x->argl[3] < 64 ? x->argl[3] : 64), x->argv[3]);
        return;
    }
    if (x->argc > 4)
        sub = rbd_cmd_lookup_sub(cmd, x->argv[4], x->argl[4]);
    if ((cmd->arity > 0 && x->argc - 3 != (size_t)cmd->arity) ||
        (cmd->arity < 0 && x->argc - 3 < (size_t)-cmd->arity) ||
        (sub != NULL && ((sub->arity > 0 && x->argc - 3 != (size_t)sub->arity) ||
                         (sub->arity < 0 && x->argc - 3 < (size_t)-sub->arity)))) {
        rbi_resp_error(x->out, "ERR wrong number of arguments for '%.*s' command",
                       (int)(x->argl[3] < 64 ? x->argl[3] : 64), x->argv[3]);
        return;
    }
    if (rbd_cmd_permitted(x->s, &who, uid, cmd, sub, why, sizeof(why)))
        rbi_resp_simple(x->out, "OK");
    else
        rbi_resp_bulk_str(x->out, why);
}

static const rbd_command_t acl_subs[] = {
    RBD_SUBCOMMAND("WHOAMI", 2, 0, rbd_cmd_acl_whoami, "server",
                "Returns the connection's Unix user name",
                ""),
    RBD_SUBCOMMAND("CAT", -2, 0, cmd_acl_cat, "server",
                "Lists the ACL categories, or a category's commands",
                "[category]"),
    RBD_SUBCOMMAND("LIST", 2, CMD_ADMIN, rbd_cmd_acl_list, "server",
                "Lists the ACL rules in force, by user and group",
                ""),
    RBD_SUBCOMMAND("DRYRUN", -4, CMD_ADMIN, cmd_acl_dryrun, "server",
                "Says whether a user may run a command",
                "username command [arg...]"),
    RBD_COMMAND_END,
};

static const rbd_command_t dispatch_table[] = {
    RBD_COMMAND("MULTI", 1, CMD_TXN | CMD_FAST, cmd_multi, "transactions",
                "Starts a transaction",
                ""),
    RBD_COMMAND("EXEC", 1, CMD_TXN, cmd_exec, "transactions",
                "Runs the commands queued since MULTI",
                ""),
    RBD_COMMAND("DISCARD", 1, CMD_TXN | CMD_FAST, cmd_discard, "transactions",
                "Drops the commands queued since MULTI",
                ""),
    RBD_COMMAND_CATS("COMMAND", -1, 0, ACL_CONNECTION, cmd_command, "server",
                "Describes the commands",
                "[COUNT|LIST|INFO [command-name...]|DOCS [command-name...]]"),
    RBD_COMMAND_SUBS("ACL", -2, 0, acl_subs, rbd_cmd_acl, "server",
                     "Access tiers: WHOAMI, CAT, LIST, DRYRUN",
                     "(WHOAMI|CAT [category]|LIST|DRYRUN username command [arg...])"),
    RBD_COMMAND_END,
};
