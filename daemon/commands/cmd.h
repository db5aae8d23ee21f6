/*
 * cmd.h - ringbloomd's commands: what a handler gets (rbd_ctx_t), what a
 * command table row says (rbd_command_t, its flags), the helpers every
 * handler uses (cmd_util.c: arguments, errors, and the handlers kinds
 * share through an rbd_reads_t), the per-family tables (cmd_bf.c,
 * cmd_bf_dump.c, cmd_hll.c, cmd_cms.c, cmd_admit.c, cmd_cf.c, cmd_cbf.c,
 * cmd_ring.c, cmd_server.c, cmd_info.c, cmd_keys.c) and the dispatcher
 * (cmd.c), which also runs transactions (MULTI / EXEC / DISCARD),
 * describes the tables (COMMAND) and holds ACL's rows (the ACL rules'
 * check and the rest of ACL: cmd_acl.c).
 *
 * A command is one row in its family's table and one handler.  The
 * dispatcher has checked its arity (a range: the handler checks the rest)
 * and its flags before the handler runs.  A handler either fully succeeds
 * or changes nothing (a BF.ADD / BF.MADD / BF.INSERT that fills a filter
 * part-way keeps, and logs, the keys before); it changes the state only
 * through an op (ops.c: applied, then shown to the op sinks, the log among
 * them).
 */
#ifndef RBD_CMD_H
#define RBD_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "acl.h"
#include "resp_enc.h"
#include "server.h"

/* Command flags, after Redis's (server.h).  A command with neither
 * CMD_WRITE nor CMD_ADMIN only reads the state or its own connection.
 * Who may run a command is decided by its ACL categories (acl.h), derived
 * from these flags and its row (rbd_cmd_categories, cmd_docs.c). */
#define CMD_WRITE 0x1u   /* a mutation (@write), refused (MISCONF) while the
                            log cannot be written */
#define CMD_ADMIN 0x2u   /* @admin and @dangerous; logs nothing, so it runs
                            while the log is broken (SAVE: a snapshot is what
                            repairs it; SHUTDOWN) */
#define CMD_TXN   0x4u   /* runs at once inside MULTI, never queued (MULTI,
                            EXEC, DISCARD, QUIT, RESET) */
#define CMD_NO_MULTI 0x8u /* refused inside MULTI (SAVE, SHUTDOWN, as Redis): it
                            cannot be part of a unit kept whole (T1) */
#define CMD_RING_SOURCE 0x10u /* a ring change: with ring-source etcd etcd answers
                            it later, after the EXEC's step, so it is refused
                            inside MULTI then (when queued) */
#define CMD_FAST 0x20u   /* @fast (O(1) or O(log n) per item), else @slow */
#define CMD_OTHERS 0x40u /* acts on other connections or on the whole server
                            (CLIENT KILL / PAUSE / UNPAUSE, CONFIG SET /
                            REWRITE, SHUTDOWN, SAVE, BGSAVE, SLOWLOG RESET,
                            LATENCY RESET, NATS.SKIP): besides its rules, it needs an
                            administrator (rbd_acl_is_admin: rules that grant
                            @admin itself), whatever rule names it, so no
                            spelling (+@connection, +client|kill) gives it to
                            a lower tier (issue 41, 1) */

/* The Redis version whose protocol and INFO the daemon answers as
 * (Debian 12's redis-server, the tools' peer): INFO's redis_version and
 * HELLO's version, which tools and clients choose what to send by; the
 * product's own is PACKAGE_VERSION, ringbloom_version in both. */
#define RBD_REDIS_VERSION "7.0.15"

typedef struct rbd_command rbd_command_t;

typedef struct rbd_ctx {
    server_t *s;
    client_t *c;
    size_t argc;
    const char **argv;
    const size_t *argl;
    rbi_buf_t *out;              /* the client's replies */
    const rbd_command_t *cmd;     /* the command being run */
    const rbd_command_t *sub;     /* its subcommand's row (argv[1]), or NULL */
} rbd_ctx_t;

struct rbd_command {
    const char *name;
    size_t len;                   /* of name */
    int arity;                    /* > 0: exactly; < 0: at least -arity (name included) */
    unsigned flags;               /* CMD_* */
    void (*fn)(rbd_ctx_t *x);
    /* What COMMAND DOCS says of it (cmd_docs.c): */
    const char *group;            /* Redis's group ("server", "generic"...), or ours ("bf", "ring") */
    const char *summary;          /* one line */
    const char *syntax;           /* its arguments, as Redis's docs write them ("" if none) */
    uint32_t cats;                /* ACL categories its flags and group do not give
                                     (rbd_cmd_categories adds those) */
    const rbd_command_t *subs;    /* its subcommands (ACL's), or NULL: each row has
                                     its own arity (the command's name counted),
                                     flags and handler */
};

/* A table row: the name's length is computed from the literal. */
#define RBD_COMMAND(name, arity, flags, fn, group, summary, syntax) \
    { name, sizeof(name) - 1, arity, flags, fn, group, summary, syntax, 0, NULL }
/* A row with categories beyond those derived (cats: ACL_* of acl.h). */
#define RBD_COMMAND_CATS(name, arity, flags, cats, fn, group, summary, syntax) \
    { name, sizeof(name) - 1, arity, flags, fn, group, summary, syntax, cats, NULL }
/* A row with subcommands (a table ended by RBD_COMMAND_END). */
#define RBD_COMMAND_SUBS(name, arity, flags, subs, fn, group, summary, syntax) \
    { name, sizeof(name) - 1, arity, flags, fn, group, summary, syntax, 0, subs }
/* A subcommand's row (in its command's subs table). */
#define RBD_SUBCOMMAND(name, arity, flags, fn, group, summary, syntax) \
    RBD_COMMAND(name, arity, flags, fn, group, summary, syntax)
/* The row that ends a table. */
#define RBD_COMMAND_END { NULL, 0, 0, 0, NULL, NULL, NULL, NULL, 0, NULL }

/* The command named by the len bytes at name (any case), or NULL. */
const rbd_command_t *rbd_cmd_lookup(const char *name, size_t len);
/* Subcommand name (len bytes, any case) of cmd, or NULL. */
const rbd_command_t *rbd_cmd_lookup_sub(const rbd_command_t *cmd, const char *name, size_t len);
/* 1 if name (lower case: "cmd" or "cmd|sub") is a command or subcommand:
 * the hook acl.c checks rules' names with (rbd_acl_set_known). */
int rbd_cmd_known(const char *name);
/* Calls fn for every command (and each subcommand after its command, sub
 * then its row and cmd its command's); returns how many commands there
 * are (subcommands not counted). */
size_t rbd_cmd_each(void *arg, void (*fn)(void *arg, const rbd_command_t *cmd,
                                          const rbd_command_t *sub));

/* ACL's handlers that do not walk the command tables (cmd_acl.c): ACL
 * with an unknown subcommand, ACL WHOAMI, ACL LIST; and the rule sets
 * user (a name or uid: argument 2) would get on connecting (its uid, its
 * primary group and the groups the group database gives it, what the
 * kernel's SO_PEERGROUPS holds for a fresh login): 0, or replies and
 * returns -1. */
void rbd_cmd_acl(rbd_ctx_t *x);
void rbd_cmd_acl_whoami(rbd_ctx_t *x);
void rbd_cmd_acl_list(rbd_ctx_t *x);
int rbd_cmd_acl_who(rbd_ctx_t *x, uid_t *uid, rbd_acl_who_t *who);

/* Whether a client of rule sets who may run cmd (sub: its subcommand's
 * row, or NULL) under the ACL rules (acl.h; cmd_acl.c), a CMD_OTHERS row
 * only for an administrator: 1, or 0 with the NOPERM reply's text in why
 * (NULL: not wanted), naming the user (uid). */
int rbd_cmd_permitted(const server_t *s, const rbd_acl_who_t *who, uid_t uid,
                      const rbd_command_t *cmd, const rbd_command_t *sub, char *why,
                      size_t cap);

/* Runs one request of client c (argv[0] the command name): its reply, or
 * the reason it was refused, goes to c->out.  Inside MULTI a command
 * passes the same checks (name, arity, permission, a working log) and is
 * queued (+QUEUED); a refusal then also makes the EXEC abort. */
void rbd_cmd_execute(server_t *s, client_t *c, size_t argc, const char **argv,
                     const size_t *argl);

/* ---- handlers' helpers (cmd_util.c) ---------------------------------------------- */

/* A name for CLIENT SETNAME / SETINFO / HELLO SETNAME (argument i):
 * printable ASCII without spaces, as Redis asks.  A copy goes to *slot
 * (NULL for an empty name): 0, or replies why not (what: "Client names",
 * "lib-name") and returns -1. */
int rbd_cmd_set_name(rbd_ctx_t *x, size_t i, const char *what, char **slot);
/* 1 if argument i is word, ignoring case. */
int rbd_cmd_arg_is(const rbd_ctx_t *x, size_t i, const char *word);
/* Strict integer (Redis's string2ll rules: no sign for zero, no spaces):
 * 0, or -1. */
int rbd_cmd_arg_ll(const rbd_ctx_t *x, size_t i, long long *out);
/* A finite double, nothing after it: 0, or -1. */
int rbd_cmd_arg_double(const rbd_ctx_t *x, size_t i, double *out);
/* Key argument i against max-key-bytes (and not empty): 0, or replies and
 * returns -1.  _keys: every argument from first on. */
int rbd_cmd_arg_key(rbd_ctx_t *x, size_t i);
int rbd_cmd_arg_keys(rbd_ctx_t *x, size_t first);
/* The distinct arguments from first on (by bytes), in O(arguments):
 * *uniq (malloc'd, the caller frees) the index of each one's first
 * occurrence, *times (NULL: not wanted; else malloc'd too) how often it
 * occurs.  Their number, or -1 (out of memory: replied).  What keeps a
 * command that names one key 200,000 times from doing its work 200,000
 * times (PFCOUNT, PFMERGE, EXISTS). */
long rbd_cmd_args_distinct(rbd_ctx_t *x, size_t first, uint32_t **uniq, uint32_t **times);
/* A name argument (what: "filter", "node") of 1..max bytes: 0, or replies
 * and returns -1. */
int rbd_cmd_arg_name(rbd_ctx_t *x, size_t i, const char *what, size_t max);
/* Argument i as an error line names it: in single quotes, printable ASCII
 * as it is, a quote, a backslash and every other byte as \xHH, cut after
 * RBD_QUOTED_MAX bytes with "...".  Written into buf (RBD_QUOTED_CAP
 * bytes hold the longest), which it returns. */
#define RBD_QUOTED_MAX 64
#define RBD_QUOTED_CAP (4 * RBD_QUOTED_MAX + 8)
const char *rbd_cmd_arg_quoted(const rbd_ctx_t *x, size_t i, char *buf, size_t cap);

/* Runs a CMS.INCRBY op (cmd_cms.c): n items of sketch name, each by by[i],
 * their estimates after into est (NULL: not wanted).  RB_OK or the op's
 * error (nothing changed then). */
int rbd_cmd_cms_incrby(rbd_ctx_t *x, const char *name, size_t len, const rb_key_t *items,
                       const uint64_t *by, size_t n, uint64_t *est);

/* Whether a command's one pass over segment memory (making a filter or
 * sketch, merging sketches, halving one) of `bytes` stays within
 * max-command-bytes, which keeps it under the writers' 250 ms: 0, or
 * replies an error naming the limit and what (e.g. "CMS.MERGE of 3
 * sketches") and returns -1.  Checked before the op, so a refused command
 * is never logged. */
int rbd_cmd_work_ok(rbd_ctx_t *x, uint64_t bytes, const char *what);

/* Whether a sketch of p's shape may be made (cmd_cms.c): its counters are
 * zeroed at once, and an aging one is halved by a single command, both
 * within max-command-bytes.  0, or replies and returns -1. */
int rbd_cmd_cms_size_ok(rbd_ctx_t *x, const rb_cms_params_t *p);

/* Where a command names keys of the keyspace, from its row's syntax
 * (COMMAND DOCS's first argument): 1 its first argument ("key",
 * "destkey", "destination"), 2 every argument ("key..."), 0 none
 * (RING.GET's "key:string" is no keyspace key). */
int rbd_cmd_first_key(const rbd_command_t *cmd);
/* Before a read's handler runs (a row with neither CMD_WRITE nor
 * CMD_ADMIN that names keys): each key it names counted in INFO's
 * keyspace_hits if a filter of that name is there, else keyspace_misses,
 * as Redis counts a read's lookups.  O(1) a key (the writer's name
 * index). */
void rbd_cmd_keyspace(rbd_ctx_t *x);
/* After request x (its row in x->cmd / x->sub, NULL for an unknown
 * command): its row's counters in INFO's commandstats, a call and its
 * us if its handler ran (ran), failed too if it answered an error, or
 * rejected if it was refused before running; an error reply's code in
 * errorstats.  The reply is read from x->out's bytes from `at` on. */
void rbd_cmd_account(rbd_ctx_t *x, size_t at, int ran, uint64_t us);

/* The command's name in lower case, as Redis names its own commands. */
const char *rbd_cmd_lower(const rbd_command_t *cmd, char *buf, size_t cap);
/* Replies "wrong number of arguments" for the command being run. */
void rbd_cmd_wrong_arity(rbd_ctx_t *x);

/* Where a library error came from: it decides the words of the reply. */
typedef enum rbd_err_at {
    RBD_AT_FILTER,     /* using an existing filter */
    RBD_AT_CREATE,     /* creating a filter */
    RBD_AT_ADD,        /* adding keys */
    RBD_AT_NODE,       /* changing the ring model */
    RBD_AT_PUBLISH,    /* publishing the ring */
    RBD_AT_RING,       /* reading the published ring */
} rbd_err_at_t;

/* Replies library error rc as the error-code-to-reply table says for at. */
void rbd_cmd_error(rbd_ctx_t *x, rbd_err_at_t at, int rc);

/* RB_ENOSPC has two causes the library cannot tell apart: max-memory used
 * up, or /dev/shm (a tmpfs) full.  If /dev/shm has less room than the
 * reservation still leaves, replies so and returns 1; else returns 0 and
 * the caller names max-memory. */
int rbd_cmd_shm_full(rbd_ctx_t *x);

/* RB_ENOSPC from making or growing a filter: names the limit that was hit,
 * /dev/shm (when it has less room than max-memory still leaves) or
 * max-memory. */
void rbd_cmd_no_space(rbd_ctx_t *x);

/* The largest data chunk BF.SCANDUMP / CF.SCANDUMP return: RedisBloom's
 * 16 MiB, less if max-request-bytes would not let the LOADCHUNK take it
 * back. */
size_t rbd_cmd_dump_chunk_max(const rbd_ctx_t *x);

/* Why a filter could not be made, for the causes BF.RESERVE, an add that
 * creates and BF.LOADCHUNK share (max-filters, then the error table);
 * RB_ENOSPC is rbd_cmd_no_space's. */
void rbd_cmd_create_error(rbd_ctx_t *x, int rc);

/* The replies of a change, written by its handler or, when a sink took
 * its op, by rbd_cmd_reply_deferred once the sink answers (server.c), so
 * a replicated change is answered in the same bytes as a local one.
 * rbd_cmd_reply_added: an add's fresh flags fresh[0 .. n) (one integer,
 * or boolean in RESP3, per key), in an array if as_array, ended by the
 * error element of rc < 0 (the keys before it stayed added).
 * rbd_cmd_reply_reserved: BF.RESERVE's +OK or why the filter was not made.
 * rbd_cmd_reply_deferred: a deferred reply's answer in its shape
 * (sink.h): nothing for RBD_REPLY_NONE, else the sink's error line, or
 * the reply of the result. */
void rbd_cmd_reply_added(rbd_ctx_t *x, const uint8_t *fresh, size_t n, int rc, int as_array);
void rbd_cmd_reply_reserved(rbd_ctx_t *x, int rc);
void rbd_cmd_reply_deferred(rbd_ctx_t *x, const rbd_reply_t *r);

/* A kind's reads for the handlers its commands share with other kinds
 * (rbd_cmd_check, rbd_cmd_scandump): the handle of filter name (opened
 * for the command and closed after it, or one the daemon keeps between
 * commands, rbd_filters_cf: close NULL), an open handle's contains (1, 0
 * or an error), count and dump chunk, the kind's error replies, and
 * whether empty keys are refused first (RedisBloom's cuckoo filter takes
 * them). */
typedef struct rbd_reads {
    int (*open)(rbd_ctx_t *x, const char *name, size_t len, void **h);
    void (*close)(void *h);   /* NULL: the handle is kept, not closed */
    int (*contains)(const void *h, const void *key, size_t len);
    int (*count)(const void *h, const void *key, size_t len, uint64_t *c);
    int (*dump)(const void *h, int64_t iter, size_t max_chunk, unsigned char *buf,
                size_t *len, int64_t *next);
    void (*error)(rbd_ctx_t *x, int rc);
    int check_keys;
} rbd_reads_t;

/* KIND.EXISTS key item, KIND.MEXISTS key item... (multi) and KIND.COUNT
 * key item (count), read from the segment through k: a missing filter
 * holds nothing (RedisBloom's 0s), another error is k's reply.  A few
 * items (RBD_SCRATCH_SMALL) are answered from the stack: with a kept
 * handle, nothing is allocated. */
void rbd_cmd_check(rbd_ctx_t *x, const rbd_reads_t *k, int multi, int count);

/* KIND.SCANDUMP key iter: [next iter, bytes] (RedisBloom's iterator: 0
 * gives the header, the arrays' bytes follow from 1; [0, ""] at the end),
 * in k's dump format. */
void rbd_cmd_scandump(rbd_ctx_t *x, const rbd_reads_t *k);

/* KIND.LOADCHUNK key iter data, as the op of type `type` (logged,
 * replayed): iter 1 with no such filter takes a header (it makes the
 * filter, live at once, empty until the data chunks come), else data at
 * the iterator SCANDUMP gave with it.  Errors: the op's words, a full
 * directory as a create names it, the rest k's. */
void rbd_cmd_loadchunk(rbd_ctx_t *x, int type, void (*error)(rbd_ctx_t *x, int rc));

#endif /* RBD_CMD_H */
