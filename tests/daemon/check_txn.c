/*
 * check_txn.c - transactions (MULTI / EXEC) against everything a client
 * can queue: every command of the daemon's table (COMMAND LIST, so a new
 * command fails here until it has an example below) inside MULTI, first
 * in the queue and between two changes, followed by SIGKILL and both
 * restarts (onto the segment it left, and cold from the snapshot and the
 * log it left), each finding exactly the state the client was told of:
 * the whole transaction or none of it (T1, T2; docs/design.md,
 * "Transactions").  Then the client limits inside EXEC (B1, B2: peak RSS
 * growth of the daemon under the configured limits), the queue's byte
 * count (empty arguments count), and with ring-source etcd a ring change
 * refused when queued.
 */
#include "config.h"

#include <poll.h>
#include <strings.h>

#include "rbd_test.h"

static rbd_proc_t d;

static size_t send_read_to_eof(int fd, const char *req, size_t len, char *tail, size_t cap);

/* ---- every command inside MULTI --------------------------------------------------- */

/* An example of each command: `prep` (or NULL) runs before MULTI, `cmd`
 * is queued.  Words separated by spaces; "%d" in a word becomes the
 * round's number, "@bfhdr" / "@cfhdr" / "@cbfhdr" the header chunk of a
 * Bloom / cuckoo / counting Bloom filter's dump (a LOADCHUNK that creates a filter). */
typedef struct example {
    const char *name, *prep, *cmd;
} example_t;

static const example_t examples[] = {
    { "MULTI", NULL, "MULTI" },
    { "EXEC", NULL, "EXEC" },
    { "DISCARD", NULL, "DISCARD" },
    { "COMMAND", NULL, "COMMAND COUNT" },
    { "ADMIT.RESERVE", NULL, "ADMIT.RESERVE adm%d 1000" },
    { "ADMIT.TOUCH", NULL, "ADMIT.TOUCH adm item%d" },
    { "ADMIT.QUERY", NULL, "ADMIT.QUERY adm a b" },
    { "BF.ADD", NULL, "BF.ADD bf e%d" },
    { "BF.MADD", NULL, "BF.MADD bf m%d n%d" },
    { "BF.EXISTS", NULL, "BF.EXISTS bf e1" },
    { "BF.MEXISTS", NULL, "BF.MEXISTS bf e1 e2" },
    { "BF.RESERVE", NULL, "BF.RESERVE r%d 0.01 100" },
    { "BF.INSERT", NULL, "BF.INSERT bf ITEMS i%d j%d" },
    { "BF.INFO", NULL, "BF.INFO bf" },
    { "BF.CARD", NULL, "BF.CARD bf" },
    { "BF.RESET", "BF.ADD rs%d z", "BF.RESET rs%d" },
    { "BF.SCANDUMP", NULL, "BF.SCANDUMP bf 0" },
    { "BF.LOADCHUNK", NULL, "BF.LOADCHUNK lb%d 1 @bfhdr" },
    { "CF.RESERVE", NULL, "CF.RESERVE cr%d 100" },
    { "CF.ADD", NULL, "CF.ADD cf a%d" },
    { "CF.ADDNX", NULL, "CF.ADDNX cf b%d" },
    { "CF.INSERT", NULL, "CF.INSERT cf ITEMS c%d" },
    { "CF.INSERTNX", NULL, "CF.INSERTNX cf ITEMS d%d" },
    { "CF.EXISTS", NULL, "CF.EXISTS cf a1" },
    { "CF.MEXISTS", NULL, "CF.MEXISTS cf a1 a2" },
    { "CF.COUNT", NULL, "CF.COUNT cf a1" },
    { "CF.DEL", "CF.ADD cf del%d", "CF.DEL cf del%d" },
    { "CF.INFO", NULL, "CF.INFO cf" },
    { "CF.SCANDUMP", NULL, "CF.SCANDUMP cf 0" },
    { "CF.LOADCHUNK", NULL, "CF.LOADCHUNK lc%d 1 @cfhdr" },
    { "CBF.RESERVE", NULL, "CBF.RESERVE br%d 0.01 100 COUNTERBITS 8" },
    { "CBF.ADD", NULL, "CBF.ADD cbf a%d" },
    { "CBF.MADD", NULL, "CBF.MADD cbf m%d n%d" },
    { "CBF.DEL", "CBF.ADD cbf del%d", "CBF.DEL cbf del%d" },
    { "CBF.EXISTS", NULL, "CBF.EXISTS cbf a1" },
    { "CBF.MEXISTS", NULL, "CBF.MEXISTS cbf a1 a2" },
    { "CBF.COUNT", NULL, "CBF.COUNT cbf a1" },
    { "CBF.INFO", NULL, "CBF.INFO cbf" },
    { "CBF.SCANDUMP", NULL, "CBF.SCANDUMP cbf 0" },
    { "CBF.LOADCHUNK", NULL, "CBF.LOADCHUNK lcb%d 1 @cbfhdr" },
    { "CMS.INITBYDIM", NULL, "CMS.INITBYDIM cd%d 100 4" },
    { "CMS.INITBYPROB", NULL, "CMS.INITBYPROB cp%d 0.01 0.01" },
    { "CMS.INCRBY", NULL, "CMS.INCRBY c b 3" },
    { "CMS.QUERY", NULL, "CMS.QUERY c a" },
    { "CMS.MERGE", "CMS.INITBYDIM cm%d 100 4", "CMS.MERGE cm%d 1 c" },
    { "CMS.INFO", NULL, "CMS.INFO c" },
    { "PFADD", NULL, "PFADD h p%d" },
    { "PFCOUNT", NULL, "PFCOUNT h" },
    { "PFMERGE", NULL, "PFMERGE hm%d h" },
    { "DEL", "BF.ADD dl%d z", "DEL dl%d" },
    { "UNLINK", "PFADD ul%d z", "UNLINK ul%d" },
    { "EXISTS", NULL, "EXISTS bf cf" },
    { "TYPE", NULL, "TYPE cf" },
    { "KEYS", NULL, "KEYS *" },
    { "SCAN", NULL, "SCAN 0" },
    { "DBSIZE", NULL, "DBSIZE" },
    { "RING.ADD", NULL, "RING.ADD node%d 2" },
    { "RING.REMOVE", "RING.ADD rm%d", "RING.REMOVE rm%d" },
    { "RING.WEIGHT", NULL, "RING.WEIGHT n1 %d" },
    { "RING.DOWN", NULL, "RING.DOWN n1" },
    { "RING.UP", NULL, "RING.UP n1" },
    { "RING.DRAIN", NULL, "RING.DRAIN n2" },
    { "RING.NODES", NULL, "RING.NODES WITHSTATES" },
    { "RING.GET", NULL, "RING.GET k" },
    { "RING.GETN", NULL, "RING.GETN k 2" },
    { "RING.INFO", NULL, "RING.INFO" },
    { "RING.SLOTS", "RING.MODE SLOTS", "RING.SLOTS BALANCE" },
    { "RING.MODE", NULL, "RING.MODE KETAMA 40" },
    { "PING", NULL, "PING" },
    { "ECHO", NULL, "ECHO hi" },
    { "QUIT", NULL, "QUIT" },
    { "SELECT", NULL, "SELECT 0" },
    { "CLIENT", NULL, "CLIENT SETNAME t%d" },
    { "HELLO", NULL, "HELLO 2" },
    { "AUTH", NULL, "AUTH default x" },
    { "RESET", NULL, "RESET" },
    { "TIME", NULL, "TIME" },
    { "CONFIG", NULL, "CONFIG GET max*" },
    { "ACL", NULL, "ACL WHOAMI" },
    { "INFO", NULL, "INFO persistence" },
    { "SAVE", NULL, "SAVE" },
    { "BGSAVE", NULL, "BGSAVE" },
    { "SHUTDOWN", NULL, "SHUTDOWN NOSAVE" },
    { "NATS.SKIP", NULL, "NATS.SKIP 1" },
    { "SLOWLOG", NULL, "SLOWLOG LEN" },
    { "LATENCY", NULL, "LATENCY LATEST" },
    { "MONITOR", NULL, "MONITOR" },
    { "MEMORY", NULL, "MEMORY USAGE f%d" },
    /* Last: they delete every filter the examples above use. */
    { "FLUSHDB", "BF.ADD fd%d z", "FLUSHDB ASYNC" },
    { "FLUSHALL", "PFADD fa%d z", "FLUSHALL" },
};
#define NEXAMPLES (sizeof(examples) / sizeof(examples[0]))

static rbd_dump_t bfhdr, cfhdr, cbfhdr;   /* chunk 0 of each: a LOADCHUNK's header */

/* Runs the words of tmpl (round r) on c: its reply text into out, and
 * rb_conn_command's code. */
static int call(rb_conn_t *c, const char *tmpl, int r, char *out, size_t cap)
{
    char words[16][64], copy[256], *save = NULL, *w;
    const char *argv[16];
    size_t argl[16], argc = 0;

    snprintf(copy, sizeof(copy), "%s", tmpl);
    for (w = strtok_r(copy, " ", &save); w != NULL && argc < 16; w = strtok_r(NULL, " ", &save)) {
        const rbd_dump_t *hdr = strcmp(w, "@bfhdr") == 0 ? &bfhdr
                                : strcmp(w, "@cfhdr") == 0 ? &cfhdr
                                : strcmp(w, "@cbfhdr") == 0 ? &cbfhdr : NULL;
        if (hdr != NULL) {
            argv[argc] = hdr->data[0];
            argl[argc++] = hdr->len[0];
            continue;
        }
        {
            char *pct = strstr(w, "%d");
            if (pct != NULL)
                snprintf(words[argc], sizeof(words[argc]), "%.*s%d%s", (int)(pct - w), w, r,
                         pct + 2);
            else
                snprintf(words[argc], sizeof(words[argc]), "%s", w);
        }
        argv[argc] = words[argc];
        argl[argc] = strlen(words[argc]);
        argc++;
    }
    return rb_conn_command(c, argc, argv, argl, out, cap);
}

/* FNV-1a over a dump's chunks from chunk `from` on: the filter's bytes,
 * as one figure. */
static unsigned long long dump_hash(const rbd_dump_t *dp, size_t from)
{
    unsigned long long h = 1469598103934665603ull;

    for (size_t i = from; i < dp->n; i++)
        for (size_t k = 0; k < dp->len[i]; k++)
            h = (h ^ (unsigned char)dp->data[i][k]) * 1099511628211ull;
    return h;
}

static void fp_add(char **fp, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fp_add(char **fp, size_t *len, size_t *cap, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(*fp + *len, *cap - *len, fmt, ap);
        va_end(ap);
        ck_assert_int_ge(n, 0);
        if ((size_t)n < *cap - *len)
            break;
        *cap = (*cap + (size_t)n) * 2;
        *fp = realloc(*fp, *cap);
        ck_assert_ptr_nonnull(*fp);
    }
    *len += (size_t)n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Everything the daemon serves, as text (malloc'd): every key, its type
 * and content (a dump's hash for cuckoo and counting Bloom filters; for Bloom filters BF.INFO
 * and the hash of their bits, not of the dump's header, whose layer times
 * a replayed BF.RESET sets to the replay's; CMS.INFO and the counts of the
 * items the rounds use; PFCOUNT), and the ring (its nodes and states, mode
 * and replicas, slots). */
static char *fingerprint(void)
{
    static char out[1 << 16], keys[1 << 16];
    size_t len = 0, cap = 4096, n = 0;
    char *fp = malloc(cap), *name[4096], *save = NULL, *k;
    rb_conn_t *c = rbd_connect(&d);

    ck_assert_ptr_nonnull(fp);
    fp[0] = '\0';
    ck_assert_int_eq(call(c, "KEYS *", 0, keys, sizeof(keys)), 0);
    for (k = strtok_r(keys, "\n", &save); k != NULL && n < 4096; k = strtok_r(NULL, "\n", &save))
        name[n++] = k;
    qsort(name, n, sizeof(name[0]), cmp_str);
    for (size_t i = 0; i < n; i++) {
        const char *argv[6] = { "TYPE", name[i], "a", "b", "x", "y" };
        size_t argl[6] = { 4, strlen(name[i]), 1, 1, 1, 1 };
        rbd_dump_t dp;
        ck_assert_int_eq(rb_conn_command(c, 2, argv, argl, out, sizeof(out)), 0);
        fp_add(&fp, &len, &cap, "%s %s:", name[i], out);
        if (strcmp(out, "MBbloom--") == 0) {
            rbd_scandump(&d, "BF.SCANDUMP", name[i], &dp);
            fp_add(&fp, &len, &cap, " %zu chunks, bits %016llx", dp.n, dump_hash(&dp, 1));
            rbd_dump_free(&dp);
            argv[0] = "BF.INFO";
            argl[0] = 7;
            ck_assert_int_eq(rb_conn_command(c, 2, argv, argl, out, sizeof(out)), 0);
            fp_add(&fp, &len, &cap, " %s", out);
        } else if (strcmp(out, "MBbloomCF") == 0) {
            rbd_scandump(&d, "CF.SCANDUMP", name[i], &dp);
            fp_add(&fp, &len, &cap, " %zu chunks %016llx", dp.n, dump_hash(&dp, 0));
            rbd_dump_free(&dp);
        } else if (strcmp(out, "RBbloomCB") == 0) {
            rbd_scandump(&d, "CBF.SCANDUMP", name[i], &dp);
            fp_add(&fp, &len, &cap, " %zu chunks %016llx", dp.n, dump_hash(&dp, 0));
            rbd_dump_free(&dp);
        } else if (strcmp(out, "CMSk-TYPE") == 0) {
            argv[0] = "CMS.INFO";
            ck_assert_int_eq(rb_conn_command(c, 2, argv, (argl[0] = 8, argl), out, sizeof(out)), 0);
            fp_add(&fp, &len, &cap, " %s", out);
            argv[0] = "CMS.QUERY";
            argl[0] = 9;
            ck_assert_int_eq(rb_conn_command(c, 6, argv, argl, out, sizeof(out)), 0);
            fp_add(&fp, &len, &cap, " %s", out);
        } else {
            argv[0] = "PFCOUNT";
            argl[0] = 7;
            ck_assert_int_eq(rb_conn_command(c, 2, argv, argl, out, sizeof(out)), 0);
            fp_add(&fp, &len, &cap, " %s", out);
        }
        fp_add(&fp, &len, &cap, "\n");
    }
    call(c, "RING.NODES WITHSTATES", 0, out, sizeof(out));
    fp_add(&fp, &len, &cap, "nodes: %s\n", out);
    call(c, "RING.SLOTS", 0, out, sizeof(out));
    fp_add(&fp, &len, &cap, "slots: %s\n", out);
    call(c, "RING.INFO", 0, out, sizeof(out));
    *(strstr(out, "Nodes") != NULL ? strstr(out, "Nodes") : out) = '\0';   /* mode, replicas */
    fp_add(&fp, &len, &cap, "ring: %s\n", out);
    rb_conn_close(c);
    return fp;
}

/* Asserts two fingerprints are the same, naming the first line that is not. */
static void same_state(const char *want, const char *got, const char *what, const char *cmd)
{
    size_t i = 0, line = 0;

    if (strcmp(want, got) == 0)
        return;
    while (want[i] == got[i])
        i++;
    while (line < i && want[i - line - 1] != '\n')
        line++;
    ck_abort_msg("%s after MULTI ... %s ... EXEC: the state differs from the one acknowledged "
                 "at [%.200s]: was [%.200s]", what, cmd, got + i - line, want + i - line);
}

/* The command names of COMMAND LIST, each with an example here, and
 * every example a command of the daemon's. */
static void assert_examples_cover_the_table(void)
{
    static char list[1 << 16];
    rb_conn_t *c = rbd_connect(&d);
    char *save = NULL, *w;
    size_t n = 0;

    ck_assert_int_eq(call(c, "COMMAND LIST", 0, list, sizeof(list)), 0);
    rb_conn_close(c);
    for (w = strtok_r(list, "\n", &save); w != NULL; w = strtok_r(NULL, "\n", &save), n++) {
        size_t i = 0;
        while (i < NEXAMPLES && strcasecmp(examples[i].name, w) != 0)
            i++;
        ck_assert_msg(i < NEXAMPLES, "command '%s' has no example in check_txn.c: add one, so "
                      "that it is tested inside MULTI", w);
    }
    ck_assert_uint_eq(n, NEXAMPLES);
}

/* The markers around a queued command: a count of item "a" of sketch c
 * (before: +10 unless the command comes first; after: +100), then item
 * x<r> of cuckoo filter cf and key k<r> of Bloom filter bf. */
static int marker_count(void)
{
    char out[256];
    rb_conn_t *c = rbd_connect(&d);

    ck_assert_int_eq(call(c, "CMS.QUERY c a", 0, out, sizeof(out)), 0);
    rb_conn_close(c);
    return atoi(out);
}

static int marker(const char *tmpl, int r)
{
    char out[256];
    rb_conn_t *c = rbd_connect(&d);

    ck_assert_int_eq(call(c, tmpl, r, out, sizeof(out)), 0);
    rb_conn_close(c);
    return atoi(out);
}

/* One round: ex queued (first, or after one change) and more changes after
 * it, EXEC, SIGKILL; then restarts onto the segment and cold from the files
 * the kill left, each must find the state acknowledged before the kill.
 * If EXEC ran the queue, all the markers are there; if it was refused,
 * none, and nothing else changed. */
/* 1 if ex deletes every filter, the markers' sketch among them: only the
 * markers made after it are checked, and the sketch is made again for
 * the next round. */
static int flushes(const example_t *ex)
{
    return strncmp(ex->name, "FLUSH", 5) == 0;
}

static void txn_round(const example_t *ex, int r, int first)
{
    static const char *const after[] = { "CMS.INCRBY c a 100", "CF.ADD cf x%d", "BF.ADD bf k%d" };
    char out[1 << 16], cmd[600];
    char *before, *acked, *got;
    int rc = 0, exec_rc, count0 = marker_count();
    rb_conn_t *c = rbd_connect(&d);

    if (ex->prep != NULL)
        (void)call(c, ex->prep, r, out, sizeof(out));
    before = fingerprint();
    ck_assert_int_eq(call(c, "MULTI", r, out, sizeof(out)), 0);
    if (!first)
        rc |= call(c, "CMS.INCRBY c a 10", r, out, sizeof(out));
    rc |= call(c, ex->cmd, r, out, sizeof(out));
    for (size_t i = 0; i < 3; i++)
        rc |= call(c, after[i], r, out, sizeof(out));
    exec_rc = call(c, "EXEC", r, out, sizeof(out));
    rb_conn_close(c);
    acked = fingerprint();
    if (exec_rc == RB_EREPLY && strncmp(out, "EXECABORT", 9) == 0) {
        same_state(before, acked, "refused", ex->cmd);
        ck_assert_int_eq(marker_count(), count0);
    } else if (exec_rc == 0 && flushes(ex)) {   /* the sketch went with the rest */
        ck_assert_int_eq(marker("CF.EXISTS cf x%d", r), 1);
        ck_assert_int_eq(marker("BF.EXISTS bf k%d", r), 1);
        ck_assert_int_eq(marker("DBSIZE", r), 2);
    } else if (exec_rc == 0 && strcmp(ex->name, "EXEC") != 0 && strcmp(ex->name, "DISCARD") != 0) {
        ck_assert_int_eq(marker_count(), count0 + (first ? 100 : 110));
        ck_assert_int_eq(marker("CF.EXISTS cf x%d", r), 1);
        ck_assert_int_eq(marker("BF.EXISTS bf k%d", r), 1);
    }
    /* else: the command ended the transaction itself (EXEC, DISCARD, QUIT,
     * RESET): what it acknowledged is what the restarts must find. */
    rbd_stop(&d, SIGKILL);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/saved' && cp -a '%s/state' '%s/saved'", d.dir, d.dir,
             d.dir);
    ck_assert_int_eq(system(cmd), 0);
    rbd_launch(&d, NULL);
    got = fingerprint();
    same_state(acked, got, "restart onto the segment", ex->cmd);
    free(got);
    rbd_stop(&d, SIGKILL);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/state' && mv '%s/saved' '%s/state'", d.dir, d.dir,
             d.dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    got = fingerprint();
    same_state(acked, got, "cold restart from the files", ex->cmd);
    free(got);
    free(before);
    free(acked);
    if (flushes(ex))
        ck_assert_int_eq(marker("CMS.INITBYDIM c 100 4", r), 0);
    (void)rc;
}

/* The filters, sketches, counters and nodes the examples use, and the
 * dump headers LOADCHUNK takes. */
static void txn_setup(void)
{
    static const char *const setup[] = {
        "BF.RESERVE bf 0.01 1000", "CF.RESERVE cf 1000", "CMS.INITBYDIM c 100 4",
        "PFADD h a b c", "RING.ADD n1", "RING.ADD n2", "ADMIT.RESERVE adm 1000",
        "BF.ADD small a", "CF.ADD csmall a", "CBF.RESERVE cbf 0.01 1000",
        "CBF.RESERVE cbsmall 0.1 10",
    };
    char out[4096];
    rb_conn_t *c = rbd_connect(&d);

    for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++)
        ck_assert_msg(call(c, setup[i], 0, out, sizeof(out)) == 0, "%s: %s", setup[i], out);
    rb_conn_close(c);
    rbd_scandump(&d, "BF.SCANDUMP", "small", &bfhdr);
    rbd_scandump(&d, "CF.SCANDUMP", "csmall", &cfhdr);
    rbd_scandump(&d, "CBF.SCANDUMP", "cbsmall", &cbfhdr);
}

/* Every command of the table inside MULTI, between changes, then first in
 * the queue; SIGKILL and both restarts after each: all or nothing.  Today's
 * BGSAVE there froze the segment and wrote the log in the middle of the
 * transaction (SIGSEGV in rbd_aof_record_end when it is alone, the
 * members after it lost by a cold restart otherwise). */
static void every_command_inside_multi(int first)
{
    rbd_start(&d, "appendfsync always");
    assert_examples_cover_the_table();
    txn_setup();
    for (size_t i = 0; i < NEXAMPLES; i++)
        txn_round(&examples[i], (int)i + (first ? 1000 : 0), first);
    rbd_dump_free(&bfhdr);
    rbd_dump_free(&cfhdr);
    rbd_dump_free(&cbfhdr);
}

START_TEST(test_txn_every_command_between_changes)
{
    every_command_inside_multi(0);
}
END_TEST

START_TEST(test_txn_every_command_first)
{
    every_command_inside_multi(1);
}
END_TEST

/* BGSAVE inside EXEC is scheduled, as Redis answers it, and the snapshot
 * follows after the transaction (INFO counts it); alone in the queue it
 * used to kill the daemon.  BGSAVE SCHEDULE while one is being written is
 * scheduled too (three requests in one write run in one loop step, before
 * the first snapshot can finish). */
START_TEST(test_txn_bgsave_is_scheduled)
{
    static const char req[] = "*1\r\n$6\r\nBGSAVE\r\n*2\r\n$6\r\nBGSAVE\r\n$8\r\nSCHEDULE\r\n"
                              "*1\r\n$6\r\nBGSAVE\r\n";
    const char *want = "+Background saving started\r\n+Background saving scheduled\r\n"
                       "-ERR Background save already in progress\r\n";
    char out[4096];
    rb_conn_t *c;
    int rc, fd;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "MULTI");
    rbd_expect(c, "QUEUED", "BGSAVE");
    rbd_expect(c, "Background saving scheduled", "EXEC");
    rbd_expect(c, "PONG", "PING");
    for (int i = 0; i < 50; i++) {
        snprintf(out, sizeof(out), "%s", rbd_cmd(c, &rc, "INFO", "persistence",
                                                 (const char *)NULL));
        if (strstr(out, "snapshots:2\r\n") != NULL)   /* start-up's, then this one */
            break;
        usleep(100000);
    }
    ck_assert_msg(strstr(out, "snapshots:2\r\n") != NULL, "%s", out);
    fd = rbd_raw_connect(&d);
    send_read_to_eof(fd, req, sizeof(req) - 1, out, sizeof(out));
    close(fd);
    ck_assert_msg(strcmp(out, want) == 0, "expected [%s], got [%s]", want, out);
    for (int i = 0; i < 50 && strstr(out, "snapshots:4\r\n") == NULL; i++) {
        usleep(100000);
        snprintf(out, sizeof(out), "%s", rbd_cmd(c, &rc, "INFO", "persistence",
                                                 (const char *)NULL));
    }
    ck_assert_msg(strstr(out, "snapshots:4\r\n") != NULL, "%s", out);
    ck_assert_int_eq(rbd_log_count(&d, "scheduled snapshot failed"), 0);
    rb_conn_close(c);
}
END_TEST

/* ---- the client limits inside EXEC ----------------------------------------------- */

/* Sends len bytes of req on fd, then its end, and reads until the daemon
 * closes the connection (at most 20 s without a byte): the last bytes read (up to cap - 1), NUL-terminated. */
static size_t send_read_to_eof(int fd, const char *req, size_t len, char *tail, size_t cap)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    static char buf[1 << 16];
    size_t sent = 0, total = 0, keep = 0;
    int idle = 0, shut = 0;

    while (idle < 200) {
        ssize_t n;
        if (sent == len && !shut)
            shut = shutdown(fd, SHUT_WR) == 0;   /* the daemon closes after the replies */
        pfd.events = POLLIN | (sent < len ? POLLOUT : 0);
        if (poll(&pfd, 1, 100) <= 0) {
            idle++;
            continue;
        }
        if ((pfd.revents & POLLOUT) && sent < len) {
            n = send(fd, req + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0)
                sent += (size_t)n;
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN))
                break;
            if (n > 0) {
                size_t m = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
                if (keep + m > cap - 1) {
                    memmove(tail, tail + keep + m - (cap - 1), cap - 1 - m);
                    keep = cap - 1 - m;
                }
                memcpy(tail + keep, buf + (size_t)n - m, m);
                keep += m;
                total += (size_t)n;
                idle = 0;
            }
        }
    }
    tail[keep] = '\0';
    ck_assert_msg(idle < 200, "the daemon neither closed the connection nor answered for 20 s");
    return total;
}

/* MULTI, n times the request one (RESP), EXEC: a buffer of them. */
static char *queue_of(const char *one, size_t n, size_t *len)
{
    size_t l1 = strlen(one);
    char *req = malloc(l1 * n + 64), *p = req;

    ck_assert_ptr_nonnull(req);
    p += sprintf(p, "*1\r\n$5\r\nMULTI\r\n");
    for (size_t i = 0; i < n; i++, p += l1)
        memcpy(p, one, l1);
    p += sprintf(p, "*1\r\n$4\r\nEXEC\r\n");
    *len = (size_t)(p - req);
    return req;
}

/* 10,000 queued COMMAND DOCS (230 KB of queue, 21 KB of reply each: 210
 * MB) under limit `limit` of the config: the daemon closes the client
 * once the replies pass it, with the error of that limit, and its peak
 * RSS grows by less than 40 MB (today's: 210 MB and more). */
static void exec_replies_bounded(const char *conf, const char *why)
{
    static char tail[512];
    size_t len;
    char *req = queue_of("*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n", 10000, &len);
    long hwm0, hwm1;
    rb_conn_t *c;
    int fd, rc;

    rbd_start(&d, conf);
    hwm0 = rbd_proc_kb(d.pid, "VmHWM:");
    fd = rbd_raw_connect(&d);
    send_read_to_eof(fd, req, len, tail, sizeof(tail));
    close(fd);
    free(req);
    hwm1 = rbd_proc_kb(d.pid, "VmHWM:");
    printf("EXEC of 10,000 COMMAND DOCS (%s): peak RSS grew by %ld kB; the reply ended [%s]\n",
           conf, hwm1 - hwm0, tail);
    fflush(stdout);
    ck_assert_msg(strstr(tail, why) != NULL, "expected [%s] at the end, got [%s] (peak RSS grew "
                  "by %ld kB)", why, tail, hwm1 - hwm0);
    ck_assert_msg(hwm1 - hwm0 < 40 * 1024, "peak RSS grew by %ld kB", hwm1 - hwm0);
    c = rbd_connect(&d);
    rbd_expect(c, "PONG", "PING");
    (void)rbd_cmd(c, &rc, "INFO", "clients", (const char *)NULL);
    rb_conn_close(c);
}

START_TEST(test_txn_exec_output_hard_limit)
{
    exec_replies_bounded("client-output-soft-limit 1mb\nclient-output-hard-limit 4mb\n"
                         "max-request-bytes 1mb",
                         "-ERR closed: unsent replies passed client-output-hard-limit\r\n");
    ck_assert_int_eq(rbd_log_count(&d, "passed client-output-hard-limit"), 1);
}
END_TEST

START_TEST(test_txn_exec_max_client_memory)
{
    exec_replies_bounded("max-client-memory 8mb\nmax-request-bytes 1mb",
                         "-ERR closed: all clients' buffers exceed max-client-memory\r\n");
    ck_assert_int_eq(rbd_log_count(&d, "would take all clients' buffers past "
                                   "max-client-memory"), 1);
}
END_TEST

/* Empty arguments count against the queue's bytes (4 bytes of length
 * each in the queue): under max-request-bytes 1mb a request holds at most
 * 32,768 arguments (resp.c), and a PING with 32,767 empty ones takes
 * 131,080 bytes of queue, so 7 fit and the 8th is refused (and EXEC
 * aborts).  Today all 40 are queued: the queue counted 4 bytes for each
 * (with the default 64 MiB, 40 x 2M empty arguments took 332 MB). */
START_TEST(test_txn_empty_arguments_count)
{
    static char got[1 << 15];
    const size_t nargs = 32767;
    size_t len, queued = 0, refused = 0;
    char *one = malloc(nargs * 6 + 128), *req;
    const char *p;

    ck_assert_ptr_nonnull(one);
    len = (size_t)sprintf(one, "*%zu\r\n$4\r\nPING\r\n", nargs + 1);
    for (size_t i = 0; i < nargs; i++, len += 6)
        memcpy(one + len, "$0\r\n\r\n", 6);
    one[len] = '\0';
    req = queue_of(one, 40, &len);
    free(one);
    rbd_start(&d, "max-request-bytes 1mb");
    {
        int fd = rbd_raw_connect(&d);
        send_read_to_eof(fd, req, len, got, sizeof(got));
        close(fd);
    }
    free(req);
    for (p = got; (p = strstr(p, "+QUEUED\r\n")) != NULL; p++)
        queued++;
    for (p = got; (p = strstr(p, "-ERR transaction too large: its queued commands may take at "
                                 "most 1048576 bytes (max-request-bytes; 4 more per command and "
                                 "per argument) and be at most 65536\r\n")) != NULL; p++)
        refused++;
    printf("40 PINGs of 32,767 empty arguments in MULTI: %zu queued, %zu refused\n", queued,
           refused);
    fflush(stdout);
    ck_assert_uint_eq(queued, 7);
    ck_assert_uint_eq(refused, 33);
    ck_assert_msg(strstr(got, "-EXECABORT Transaction discarded because of previous errors.\r\n")
                  != NULL, "%s", got);
}
END_TEST

/* ---- ring-source etcd ------------------------------------------------------------ */

/* With ring-source etcd every ring change is refused when queued (etcd
 * answers it later, after the EXEC's step), before etcd is asked: here
 * none answers (a closed loopback port).  Reads of the ring queue as
 * ever.  Today RING.ADD answered +QUEUED and was refused at EXEC. */
START_TEST(test_txn_etcd_ring_change_refused_when_queued)
{
    static const char *const changes[][4] = {
        { "RING.ADD", "n", NULL }, { "RING.REMOVE", "n", NULL }, { "RING.WEIGHT", "n", "2" },
        { "RING.MODE", "KETAMA", NULL }, { "RING.SLOTS", "BALANCE", NULL },
        { "RING.DOWN", "n", NULL }, { "RING.UP", "n", NULL }, { "RING.DRAIN", "n", NULL },
    };
    const char *refusal = "ERR with ring-source etcd a ring change cannot be part of "
                          "MULTI/EXEC (etcd answers it later)";
    rb_conn_t *c;

    rbd_start(&d, "ring-source etcd\netcd-endpoints http://127.0.0.1:1\netcd-prefix /t/\n"
                  "etcd-timeout 200");
    c = rbd_connect(&d);
    for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
        rbd_expect(c, "OK", "MULTI");
        rbd_expect(c, "QUEUED", "RING.NODES");
        rbd_expect(c, refusal, changes[i][0], changes[i][1], changes[i][2]);
        rbd_expect(c, "EXECABORT Transaction discarded because of previous errors.", "EXEC");
    }
    rb_conn_close(c);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("txn",
                        RB_TCASE("every_command", 600, NULL, rbd_teardown,
                                 test_txn_every_command_between_changes,
                                 test_txn_every_command_first,
                                 test_txn_bgsave_is_scheduled),
                        RB_TCASE("limits", 120, NULL, rbd_teardown,
                                 test_txn_exec_output_hard_limit,
                                 test_txn_exec_max_client_memory,
                                 test_txn_empty_arguments_count),
                        RB_TCASE("etcd", 60, NULL, rbd_teardown,
                                 test_txn_etcd_ring_change_refused_when_queued));
}
