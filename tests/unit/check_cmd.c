/*
 * check_cmd.c - ringbloomd's commands without a socket: a server built in
 * this process (a private segment, the log in a temp dir) runs requests
 * through the command table (rbd_cmd_execute) and the tests read the reply
 * bytes; its log is replayed through the ops into a second such server.
 * What the flags of the table allow, and that a change replays from its
 * record to the same state, are checked here rather than through a daemon.
 */
#include <stdarg.h>
#include <syslog.h>

#include "cmd.h"
#include "cmd_docs.h"
#include "ops.h"
#include "rb_test.h"
#include "replay.h"
#include "tsrv.h"

static void tsrv_open(tsrv_t *t)
{
    tsrv_open_sized(t, "checkcmd", 8u << 20, 16);
}

/* Runs the request of the NULL-terminated words as t's client, then the
 * group commit (t->flushed); its reply (valid until the next call). */
static const char *run(tsrv_t *t, const char *word, ...)
{
    const char *argv[16];
    size_t argl[16], n;
    va_list ap;

    va_start(ap, word);
    n = tsrv_words(argv, argl, 16, word, ap);
    va_end(ap);
    t->c.out.len = 0;
    rbd_cmd_execute(&t->s, &t->c, n, argv, argl);
    t->flushed = rbd_aof_flush(&t->s.aof);
    ck_assert_uint_lt(t->c.out.len, sizeof(t->reply));
    memcpy(t->reply, t->c.out.data, t->c.out.len);
    t->reply[t->c.out.len] = '\0';
    return t->reply;
}

/* The log t has written so far, read back; *len its bytes. */
static unsigned char *read_log(const tsrv_t *t, size_t *len)
{
    char path[128];
    unsigned char *data = malloc(1u << 20);
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", t->dir, RBD_LOG_FILE);
    f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(data);
    *len = fread(data, 1, 1u << 20, f);
    fclose(f);
    return data;
}

/* Replays t's log into u, as a start-up does onto the snapshot it
 * continues, and publishes u's ring.  0, or -1 with err. */
static int replay_into(const tsrv_t *t, tsrv_t *u, char *err, size_t errlen)
{
    rbd_snap_t snap = { .path = "snapshot", .present = 1, .version = 3, .header = 128,
                        .next_log = t->s.aof.log_id };
    rbd_replay_t r;
    size_t len;
    unsigned char *log = read_log(t, &len);
    int rc = rbd_replay_log(&u->s.cfg, &u->s.state, "log", log, len, &snap, &r, err, errlen);

    free(log);
    if (rc == 0)
        ck_assert_int_eq(rb_ring_publish(u->s.state.ring, u->s.state.seg), RB_OK);
    return rc;
}

START_TEST(test_cmd_bf_add_and_exists_reply_as_redisbloom)
{
    tsrv_t t;

    tsrv_open(&t);
    ck_assert_str_eq(run(&t, "BF.EXISTS", "f", "a", NULL), ":0\r\n");
    ck_assert_str_eq(run(&t, "BF.ADD", "f", "a", NULL), ":1\r\n");
    ck_assert_str_eq(run(&t, "bf.add", "f", "a", NULL), ":0\r\n");
    ck_assert_str_eq(run(&t, "BF.EXISTS", "f", "a", NULL), ":1\r\n");
    ck_assert_str_eq(run(&t, "BF.MADD", "f", "a", "b", "c", NULL), "*3\r\n:0\r\n:1\r\n:1\r\n");
    ck_assert_str_eq(run(&t, "BF.MEXISTS", "f", "b", "z", NULL), "*2\r\n:1\r\n:0\r\n");
    ck_assert_str_eq(run(&t, "BF.CARD", "f", NULL), ":3\r\n");
    ck_assert_str_eq(run(&t, "BF.ADD", "f", NULL),
                     "-ERR wrong number of arguments for 'bf.add' command\r\n");
    ck_assert_str_eq(run(&t, "BF.RESERVE", "f", "0.01", "100", NULL), "-ERR item exists\r\n");
    ck_assert_str_eq(run(&t, "BF.INFO", "nosuch", NULL), "-ERR not found\r\n");
    ck_assert_uint_eq(t.s.state.bf_adds, 3);
    tsrv_close(&t);
}
END_TEST

/* The commands whose items or keys live on the stack when they are few
 * (scratch.h: RBD_SCRATCH_SMALL, 8) and are allocated past that answer
 * alike on both sides of the bound: CF.INSERT / CF.INSERTNX / CF.MEXISTS,
 * and the HLL commands' keys (cmd_hll.c's args_keys: repeats read once,
 * a name no counter can have left out, on the stack or through the set). */
START_TEST(test_cmd_few_and_many_items_reply_alike)
{
    static const char ones8[] = "*8\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n";
    static const char ones9[] =
        "*9\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n";
    char longname[RB_FILTER_NAME_MAX + 2];
    tsrv_t t;

    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    tsrv_open(&t);
    ck_assert_str_eq(run(&t, "CF.RESERVE", "f", "1000", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "CF.INSERT", "f", "ITEMS", "a", "b", "c", "d", "e", "f", "g", "h",
                         NULL), ones8);
    ck_assert_str_eq(run(&t, "CF.INSERT", "f", "ITEMS", "i", "j", "k", "l", "m", "n", "o", "p",
                         "q", NULL), ones9);
    ck_assert_str_eq(run(&t, "CF.INSERTNX", "f", "ITEMS", "a", "b", "c", "d", "e", "f", "g",
                         "h", "i", NULL),
                     "*9\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n");
    ck_assert_str_eq(run(&t, "CF.MEXISTS", "f", "a", "b", "c", "d", "e", "f", "g", "h", NULL),
                     ones8);
    ck_assert_str_eq(run(&t, "CF.MEXISTS", "f", "i", "j", "k", "l", "m", "n", "o", "p", "q",
                         NULL), ones9);
    ck_assert_str_eq(run(&t, "CF.MEXISTS", "none", "a", "b", "c", "d", "e", "f", "g", "h", "i",
                         NULL),
                     "*9\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n");
    /* 7 distinct elements, given 8 and 9 times */
    ck_assert_str_eq(run(&t, "PFADD", "h8", "a", "b", "a", "c", "d", "e", "f", "g", NULL),
                     ":1\r\n");
    ck_assert_str_eq(run(&t, "PFADD", "h9", "a", "b", "a", "c", "d", "e", "f", "g", "b", NULL),
                     ":1\r\n");
    ck_assert_str_eq(run(&t, "PFCOUNT", "h8", NULL), ":7\r\n");
    ck_assert_str_eq(run(&t, "PFCOUNT", "h9", NULL), ":7\r\n");
    ck_assert_str_eq(run(&t, "PFCOUNT", "h8", "h9", "h8", "h9", "h8", "h9", "h8", longname,
                         NULL), ":7\r\n");
    ck_assert_str_eq(run(&t, "PFCOUNT", "h8", "h9", "h8", "h9", "h8", "h9", "h8", "h9",
                         longname, NULL), ":7\r\n");
    ck_assert_str_eq(run(&t, "PFMERGE", "m8", "h8", "h9", "h8", "h9", "h8", "h9", longname,
                         "h9", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "PFMERGE", "m9", "h8", "h9", "h8", "h9", "h8", "h9", "h8",
                         longname, "h9", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "PFCOUNT", "m8", NULL), ":7\r\n");
    ck_assert_str_eq(run(&t, "PFCOUNT", "m9", NULL), ":7\r\n");
    tsrv_close(&t);
}
END_TEST

/* The default tier (+@read +@connection +@transaction) may read but not
 * write (@write) or SAVE (@admin), and the refusal names the rule; a refused
 * write changes and logs nothing. */
START_TEST(test_cmd_flags_refuse_writes_without_permission)
{
    char want[400], user[256];
    uint64_t changes;
    tsrv_t t;

    tsrv_open(&t);
    ck_assert_str_eq(run(&t, "BF.ADD", "f", "a", NULL), ":1\r\n");
    changes = t.s.aof.changes;
    t.c.who.e[0].set = RBD_ACL_READER;   /* the default tier: +@read ... */
    t.c.who.e[0].by = RBD_ACL_BY_DEFAULT;
    t.c.acl_cmd = NULL;   /* who changed: what it permitted is forgotten (server.c) */
    rbd_acl_user_name(getuid(), user, sizeof(user));
    snprintf(want, sizeof(want), "-NOPERM User %s has no permissions to run the 'bf.add' "
             "command (rule: user default: +@read +@connection +@transaction)\r\n", user);
    ck_assert_str_eq(run(&t, "BF.ADD", "f", "b", NULL), want);
    snprintf(want, sizeof(want), "-NOPERM User %s has no permissions to run the 'save' "
             "command (rule: user default: +@read +@connection +@transaction)\r\n", user);
    ck_assert_str_eq(run(&t, "SAVE", NULL), want);
    ck_assert_str_eq(run(&t, "BF.EXISTS", "f", "a", NULL), ":1\r\n");
    ck_assert_str_eq(run(&t, "BF.EXISTS", "f", "b", NULL), ":0\r\n");
    ck_assert_str_eq(run(&t, "PING", NULL), "+PONG\r\n");
    ck_assert_uint_eq(t.s.denied, 2);
    ck_assert_uint_eq(t.s.aof.changes, changes);
    tsrv_close(&t);
}
END_TEST

/* CONFIG SET: all pairs or none (a bad second pair leaves the first
 * unset), a restart-only setting refused, the ACL lines refused (they
 * add, CONFIG SET replaces), a client without @admin refused, and what it sets is in force at once (the slow log takes the
 * next command, its length is the new one). */
START_TEST(test_cmd_config_set_all_or_nothing)
{
    tsrv_t t;

    tsrv_open(&t);
    ck_assert_int_eq(t.s.cfg.slowlog_max_len, 128);
    ck_assert_ptr_nonnull(strstr(run(&t, "CONFIG", "SET", "slowlog-max-len", "5",
                                     "max-memory", "2gb", NULL), "immutable"));
    ck_assert_ptr_nonnull(strstr(run(&t, "CONFIG", "SET", "slowlog-max-len", "5",
                                     "timeout", "x", NULL), "'timeout'"));
    ck_assert_int_eq(t.s.cfg.slowlog_max_len, 128);
    ck_assert_str_eq(run(&t, "CONFIG", "SET", "slowlog-max-len", "2",
                         "slowlog-log-slower-than", "0", NULL), "+OK\r\n");
    ck_assert_int_eq(t.s.cfg.slowlog_max_len, 2);
    ck_assert_int_eq(t.s.cfg.slowlog_log_slower_than, 0);
    run(&t, "PING", NULL);
    run(&t, "ECHO", "x", NULL);
    run(&t, "TIME", NULL);
    ck_assert_str_eq(run(&t, "SLOWLOG", "LEN", NULL), ":2\r\n");
    ck_assert_ptr_nonnull(strstr(run(&t, "SLOWLOG", "GET", NULL), "$4\r\nTIME\r\n"));
    ck_assert_str_eq(run(&t, "CONFIG", "SET", "slowlog-log-slower-than", "-1", NULL),
                     "+OK\r\n");
    ck_assert_str_eq(run(&t, "SLOWLOG", "RESET", NULL), "+OK\r\n");
    run(&t, "PING", NULL);
    ck_assert_str_eq(run(&t, "SLOWLOG", "LEN", NULL), ":0\r\n");
    ck_assert_ptr_nonnull(strstr(run(&t, "CONFIG", "SET", "acl-user", "nobody +@all",
                                     NULL), "SIGHUP"));   /* lines add: the file's */
    t.c.who.e[0].set = RBD_ACL_WRITER;   /* the write tier: no @admin */
    t.c.who.e[0].by = RBD_ACL_BY_DEFAULT;
    t.c.acl_cmd = NULL;   /* who changed: what it permitted is forgotten (server.c) */
    ck_assert_ptr_nonnull(strstr(run(&t, "CONFIG", "SET", "slowlog-max-len", "9", NULL),
                                 "NOPERM"));
    ck_assert_int_eq(t.s.cfg.slowlog_max_len, 2);
    tsrv_close(&t);
}
END_TEST

/* While the log cannot be written, CMD_WRITE is refused (MISCONF) and
 * CMD_ADMIN is not: SAVE repairs the log, and writes work again. */
START_TEST(test_cmd_flags_refuse_writes_while_the_log_is_broken)
{
    tsrv_t t;

    tsrv_open(&t);
    t.s.aof.broken = 1;
    ck_assert_ptr_nonnull(strstr(run(&t, "RING.ADD", "n", NULL), "-MISCONF the log in "));
    ck_assert_int_eq(t.flushed, -1);
    ck_assert_str_eq(run(&t, "RING.NODES", NULL), "*0\r\n");
    ck_assert_str_eq(run(&t, "SAVE", NULL), "+OK\r\n");
    ck_assert_int_eq(t.s.aof.broken, 0);
    ck_assert_str_eq(run(&t, "RING.ADD", "n", NULL), "+OK\r\n");
    ck_assert_int_eq(t.flushed, 0);
    tsrv_close(&t);
}
END_TEST

/* The records of live changes, decoded and replayed through the same ops
 * into a second server, give the same ring and filters. */
START_TEST(test_cmd_ring_add_record_replays_to_the_same_ring)
{
    static const char *const keys[] = { "k1", "user:42", "https://example.org/x", "z" };
    char err[512], ring[4096];
    unsigned char *log;
    size_t len;
    rbd_keys_t scratch = { NULL, 0 };
    rbd_op_t op;
    tsrv_t t, u;

    tsrv_open(&t);
    ck_assert_str_eq(run(&t, "RING.ADD", "cache-a", "3", NULL), "+OK\r\n");
    /* The first record is that RING.ADD, and decodes to it. */
    log = read_log(&t, &len);
    ck_assert_uint_gt(len, RBD_LOG_HDR + RBD_REC_HDR);
    ck_assert_str_eq(rbd_op_name(log[RBD_LOG_HDR + 8]), "RING.ADD");
    ck_assert_int_eq(rbd_op_decode(log[RBD_LOG_HDR + 8], log + RBD_LOG_HDR + RBD_REC_HDR,
                                   len - RBD_LOG_HDR - RBD_REC_HDR, &op, &scratch), RB_OK);
    ck_assert_int_eq(op.type, RBD_OP_RING_ADD);
    ck_assert_uint_eq(op.weight, 3);
    ck_assert_uint_eq(op.len, 7);
    ck_assert_int_eq(memcmp(op.name, "cache-a", 7), 0);
    free(log);
    free(scratch.v);
    ck_assert_str_eq(run(&t, "RING.ADD", "cache-b", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "RING.ADD", "cache-c", "2", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "RING.WEIGHT", "cache-b", "5", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "RING.REMOVE", "cache-c", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "RING.MODE", "ketama", "100", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "BF.RESERVE", "f", "0.001", "1000", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "BF.MADD", "f", "a", "b", NULL), "*2\r\n:1\r\n:1\r\n");
    ck_assert_uint_eq(t.s.state.ring_changes, 6);

    tsrv_open(&u);
    ck_assert_msg(replay_into(&t, &u, err, sizeof(err)) == 0, "%s", err);
    snprintf(ring, sizeof(ring), "%s", run(&t, "RING.NODES", NULL));
    ck_assert_str_eq(run(&u, "RING.NODES", NULL), ring);
    ck_assert_str_eq(ring, "*2\r\n*2\r\n$7\r\ncache-a\r\n:3\r\n*2\r\n$7\r\ncache-b\r\n:5\r\n");
    ck_assert_int_eq(rb_ring_mode(u.s.state.ring), RB_RING_KETAMA);
    ck_assert_uint_eq(rb_ring_replicas(u.s.state.ring), 100);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        snprintf(ring, sizeof(ring), "%s", run(&t, "RING.GETN", keys[i], "2", NULL));
        ck_assert_str_eq(run(&u, "RING.GETN", keys[i], "2", NULL), ring);
    }
    ck_assert_str_eq(run(&u, "BF.MEXISTS", "f", "a", "b", NULL), "*2\r\n:1\r\n:1\r\n");
    /* Replay counts no live changes. */
    ck_assert_uint_eq(u.s.state.ring_changes, 0);
    ck_assert_uint_eq(u.s.state.bf_adds, 0);

    /* Replayed again onto what it built, the first record finds its node
     * already there: the log does not belong to that state. */
    ck_assert_int_eq(replay_into(&t, &u, err, sizeof(err)), -1);
    ck_assert_ptr_nonnull(strstr(err, "record RING.ADD names node 'cache-a', which is already "
                                      "in the ring"));
    tsrv_close(&u);
    tsrv_close(&t);
}
END_TEST

/* Argument i of d: its name, type, token ("" for none) and flags. */
static void expect_arg(const rbd_doc_t *d, int i, const char *name, rbd_doc_type_t type,
                       const char *token, unsigned flags)
{
    ck_assert_int_ge(i, 0);
    ck_assert_str_eq(d->arg[i].name, name);
    ck_assert_int_eq(d->arg[i].type, type);
    ck_assert_str_eq(d->arg[i].token, token);
    ck_assert_uint_eq(d->arg[i].flags, flags);
}

/* BF.RESERVE's row parses into Redis 7's tree: values with their types,
 * keyword-and-value arguments, a pure token, a oneof under a token; and
 * COMMAND DOCS answers it (names and tokens as redis-cli joins them). */
START_TEST(test_cmd_docs_bf_reserve_tree)
{
    const rbd_command_t *cmd = rbd_cmd_lookup("bf.reserve", 10);
    const unsigned opt = RBD_DOC_OPTIONAL;
    rbd_doc_t d;
    int i, l;
    tsrv_t t;

    ck_assert_ptr_nonnull(cmd);
    ck_assert_int_eq(rbd_doc_parse(cmd->syntax, &d), 0);
    expect_arg(&d, i = d.first, "key", RBD_DOC_KEY, "", 0);
    expect_arg(&d, i = d.arg[i].next, "error_rate", RBD_DOC_DOUBLE, "", 0);
    expect_arg(&d, i = d.arg[i].next, "capacity", RBD_DOC_INTEGER, "", 0);
    expect_arg(&d, i = d.arg[i].next, "expansion", RBD_DOC_INTEGER, "EXPANSION", opt);
    expect_arg(&d, i = d.arg[i].next, "nonscaling", RBD_DOC_PURE_TOKEN, "NONSCALING", opt);
    expect_arg(&d, l = i = d.arg[i].next, "layout", RBD_DOC_ONEOF, "LAYOUT", opt);
    expect_arg(&d, i = d.arg[i].next, "window", RBD_DOC_INTEGER, "AGING", opt);
    expect_arg(&d, i = d.arg[i].next, "generations", RBD_DOC_INTEGER, "GENERATIONS", opt);
    ck_assert_int_eq(d.arg[i].next, -1);
    expect_arg(&d, i = d.arg[l].child, "standard", RBD_DOC_PURE_TOKEN, "STANDARD", 0);
    expect_arg(&d, i = d.arg[i].next, "blocked", RBD_DOC_PURE_TOKEN, "BLOCKED", 0);
    expect_arg(&d, i = d.arg[i].next, "redisbloom", RBD_DOC_PURE_TOKEN, "REDISBLOOM", 0);
    ck_assert_int_eq(d.arg[i].next, -1);

    /* A block under a keyword, a repeated value, nesting; and what is not
     * a syntax. */
    ck_assert_int_eq(rbd_doc_parse("[INFO [name...]|DOCS x:integer]", &d), 0);
    expect_arg(&d, i = d.first, "info-x", RBD_DOC_ONEOF, "", opt);
    expect_arg(&d, i = d.arg[i].child, "info", RBD_DOC_BLOCK, "", 0);
    expect_arg(&d, d.arg[i].next, "x", RBD_DOC_INTEGER, "DOCS", 0);
    expect_arg(&d, i = d.arg[i].child, "info", RBD_DOC_PURE_TOKEN, "INFO", 0);
    expect_arg(&d, d.arg[i].next, "name", RBD_DOC_STRING, "", opt | RBD_DOC_MULTIPLE);
    ck_assert_int_eq(rbd_doc_parse("", &d), 0);
    ck_assert_int_eq(d.first, -1);
    ck_assert_int_eq(rbd_doc_parse("a|b", &d), -1);
    ck_assert_int_eq(rbd_doc_parse("[a", &d), -1);
    ck_assert_int_eq(rbd_doc_parse("a []", &d), -1);
    ck_assert_int_eq(rbd_doc_parse("a:float", &d), -1);
    ck_assert_int_eq(rbd_doc_parse("A:integer", &d), -1);

    tsrv_open(&t);
    ck_assert_str_eq(run(&t, "COMMAND", "DOCS", "nope", "BF.CARD", NULL),
                     "*2\r\n$7\r\nbf.card\r\n*8\r\n$7\r\nsummary\r\n"
                     "$51\r\nReturns the number of items added to a Bloom filter\r\n"
                     "$5\r\nsince\r\n$5\r\n0.1.0\r\n$5\r\ngroup\r\n$2\r\nbf\r\n"
                     "$9\r\narguments\r\n*1\r\n*4\r\n$4\r\nname\r\n$3\r\nkey\r\n"
                     "$4\r\ntype\r\n$3\r\nkey\r\n");
    ck_assert_str_eq(run(&t, "COMMAND", "DOCS", "nope", NULL), "*0\r\n");
    t.c.out.resp3 = 1;
    ck_assert_str_eq(run(&t, "COMMAND", "DOCS", "bgsave", NULL),
                     "%1\r\n$6\r\nbgsave\r\n%4\r\n$7\r\nsummary\r\n"
                     "$35\r\nWrites a snapshot in the background\r\n"
                     "$5\r\nsince\r\n$5\r\n0.1.0\r\n$5\r\ngroup\r\n$6\r\nserver\r\n"
                     "$9\r\narguments\r\n*1\r\n%4\r\n$4\r\nname\r\n$8\r\nschedule\r\n"
                     "$4\r\ntype\r\n$10\r\npure-token\r\n$5\r\ntoken\r\n$8\r\nSCHEDULE\r\n"
                     "$5\r\nflags\r\n~1\r\n+optional\r\n");
    ck_assert_str_eq(run(&t, "COMMAND", "DOCS", "multi", NULL),
                     "%1\r\n$5\r\nmulti\r\n%3\r\n$7\r\nsummary\r\n$20\r\nStarts a transaction\r\n"
                     "$5\r\nsince\r\n$5\r\n0.1.0\r\n$5\r\ngroup\r\n$12\r\ntransactions\r\n");
    tsrv_close(&t);
}
END_TEST

/* The fewest (*min) and most (*max, SIZE_MAX: no limit) words the
 * arguments from i on take. */
static void words(const rbd_doc_t *d, int i, int oneof, size_t *min, size_t *max)
{
    *min = oneof ? SIZE_MAX : 0;
    *max = 0;
    for (; i >= 0; i = d->arg[i].next) {
        const rbd_doc_arg_t *a = &d->arg[i];
        size_t lo = 1, hi = 1;
        if (a->child >= 0)
            words(d, a->child, a->type == RBD_DOC_ONEOF, &lo, &hi);
        else if (a->type == RBD_DOC_PURE_TOKEN)
            lo = hi = 0;
        lo += a->token[0] != '\0';
        if (hi != SIZE_MAX)
            hi += a->token[0] != '\0';
        if (a->flags & RBD_DOC_OPTIONAL)
            lo = 0;
        if (a->flags & RBD_DOC_MULTIPLE)
            hi = SIZE_MAX;
        *min = oneof ? (lo < *min ? lo : *min) : *min + lo;
        *max = oneof ? (hi > *max ? hi : *max)
               : (*max == SIZE_MAX || hi == SIZE_MAX ? SIZE_MAX : *max + hi);
    }
}

/* Every command COMMAND LIST names has a summary, a group and a syntax
 * that parses and agrees with its arity: a fixed arity takes exactly
 * arity - 1 words, a least one at least -arity - 1 (the handler checks
 * the rest); COMMAND DOCS has "arguments" exactly when it takes any. */
START_TEST(test_cmd_docs_every_command_agrees_with_its_arity)
{
    char names[sizeof(((tsrv_t *)0)->reply)], *p, *end;
    size_t n = 0, min, max;
    tsrv_t t;

    tsrv_open(&t);
    snprintf(names, sizeof(names), "%s", run(&t, "COMMAND", "LIST", NULL));
    for (p = strchr(names, '$'); p != NULL; p = strchr(end, '$'), n++) {
        size_t len = strtoul(p + 1, &end, 10);
        const rbd_command_t *cmd = rbd_cmd_lookup(end + 2, len);
        rbd_doc_t d;
        end += 2 + len;
        ck_assert_ptr_nonnull(cmd);
        ck_assert_msg(cmd->summary[0] != '\0' && cmd->group[0] != '\0', "%s", cmd->name);
        ck_assert_msg(rbd_doc_parse(cmd->syntax, &d) == 0, "%s: %s", cmd->name, cmd->syntax);
        words(&d, d.first, 0, &min, &max);
        if (cmd->arity > 0)
            ck_assert_msg(min == (size_t)cmd->arity - 1 && max == min, "%s: %zu..%zu words",
                          cmd->name, min, max);
        else
            ck_assert_msg(min >= (size_t)-cmd->arity - 1, "%s: %zu words", cmd->name, min);
        run(&t, "COMMAND", "DOCS", cmd->name, NULL);
        ck_assert_msg((strstr(t.reply, "$9\r\narguments\r\n") != NULL) == (d.first >= 0), "%s",
                      cmd->name);
    }
    snprintf(names, sizeof(names), ":%zu\r\n", n);
    ck_assert_str_eq(run(&t, "COMMAND", "COUNT", NULL), names);
    tsrv_close(&t);
}
END_TEST

/* COMMAND INFO's first key (fields 4-6), from each row's syntax: a
 * command naming its filter, sketch or counter first gives position 1,
 * whatever its family (so a new kind's commands need no list of
 * prefixes), and "readonly" when it does not write; others give 0. */
static void expect_key(tsrv_t *t, const char *name, const char *flag, int key)
{
    char want[256];
    const char *got = run(t, "COMMAND", "INFO", name, NULL);

    snprintf(want, sizeof(want), "%s\r\n:%d\r\n:%d\r\n:%d\r\n", flag, key, key, key);
    ck_assert_msg(strstr(got, want) != NULL, "COMMAND INFO %s: %s", name, got);
}

START_TEST(test_cmd_info_first_key_from_the_syntax)
{
    tsrv_t t;

    tsrv_open(&t);
    expect_key(&t, "BF.EXISTS", "+readonly", 1);
    expect_key(&t, "CBF.ADD", "+write", 1);
    expect_key(&t, "CF.COUNT", "+readonly", 1);
    expect_key(&t, "CMS.MERGE", "+write", 1);
    expect_key(&t, "ADMIT.QUERY", "+readonly", 1);
    expect_key(&t, "PFCOUNT", "+readonly", 1);
    expect_key(&t, "PFMERGE", "+write", 1);
    expect_key(&t, "TYPE", "+readonly", 1);   /* Redis: 1 1 1 */
    expect_key(&t, "DEL", "+write", 1);
    expect_key(&t, "RING.GET", "*0", 0);      /* a ring key is no keyspace key */
    expect_key(&t, "PING", "*0", 0);
    tsrv_close(&t);
}
END_TEST

int main(void)
{
    rbd_log_init(1, LOG_WARNING);   /* the snapshots' notices are not news here */
    return RB_TEST_MAIN("cmd",
                        RB_TCASE("replies", 0, NULL, NULL,
                                 test_cmd_bf_add_and_exists_reply_as_redisbloom,
                                 test_cmd_few_and_many_items_reply_alike),
                        RB_TCASE("docs", 0, NULL, NULL,
                                 test_cmd_docs_bf_reserve_tree,
                                 test_cmd_docs_every_command_agrees_with_its_arity,
                                 test_cmd_info_first_key_from_the_syntax),
                        RB_TCASE("flags", 0, NULL, NULL,
                                 test_cmd_flags_refuse_writes_without_permission,
                                 test_cmd_flags_refuse_writes_while_the_log_is_broken,
                                 test_cmd_config_set_all_or_nothing),
                        RB_TCASE("replay", 0, NULL, NULL,
                                 test_cmd_ring_add_record_replays_to_the_same_ring));
}
