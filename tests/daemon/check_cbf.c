/*
 * check_cbf.c - the counting Bloom filter commands end to end
 * (daemon/commands/cmd_cbf.c): CBF.* replies and errors (arguments, WRONGTYPE, not
 * found, a full filter, a refused delete), the keyspace commands on
 * counting Bloom filters (TYPE, EXISTS, SCAN TYPE, KEYS, DEL), MULTI /
 * EXEC, CBF.SCANDUMP / CBF.LOADCHUNK round trips, and every change kept
 * across a restart by log replay (records 24-27) and by snapshot.
 */
#include "rbd_test.h"

#define WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"
#define FULL      "ERR counting Bloom filter is full"

static rbd_proc_t d;

START_TEST(test_cbf_commands)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CBF.RESERVE", "f", "0.01", "1000");
    rbd_expect(c, "ERR item exists", "CBF.RESERVE", "f", "0.01", "1000");
    rbd_expect(c, "ERR bad error rate", "CBF.RESERVE", "x", "low", "1000");
    rbd_expect(c, "ERR (0 < error rate range < 1) ", "CBF.RESERVE", "x", "1", "1000");
    rbd_expect(c, "ERR capacity must be an integer in [1, 4294967296]", "CBF.RESERVE", "x",
               "0.01", "0");
    rbd_expect(c, "ERR capacity must be an integer in [1, 4294967296]", "CBF.RESERVE", "x",
               "0.01", "4294967297");
    rbd_expect(c, "ERR COUNTERBITS must be 4 or 8", "CBF.RESERVE", "x", "0.01", "10",
               "COUNTERBITS", "6");
    rbd_expect(c, "ERR syntax error: CBF.RESERVE key error_rate capacity [COUNTERBITS 4|8]",
               "CBF.RESERVE", "x", "0.01", "10", "COLOUR", "4");
    rbd_expect(c, "ERR wrong number of arguments for 'cbf.reserve' command", "CBF.RESERVE",
               "x", "0.01", "10", "COUNTERBITS");
    rbd_expect(c, "ERR wrong number of arguments for 'cbf.add' command", "CBF.ADD", "f");
    rbd_expect(c, "ERR capacity and error rate give more than 1099511627776 counters or 32 "
               "probes", "CBF.RESERVE", "x", "1e-12", "10");
    /* 2*10^8 at 1%: 1,917,011,680 4-bit counters, 958,505,840 bytes zeroed at once. */
    rbd_expect(c, "ERR a counting Bloom filter this large would write or read 958505840 bytes "
               "in one go, more than max-command-bytes (67108864)", "CBF.RESERVE", "x", "0.01",
               "200000000");
    rbd_expect(c, "0", "EXISTS", "x");
    rbd_expect(c, "ERR empty key", "CBF.ADD", "f", "");
    rbd_expect(c, "ERR empty key", "CBF.MADD", "f", "a", "");
    rbd_expect(c, "ERR empty key", "CBF.DEL", "f", "");
    rbd_expect(c, "ERR empty key", "CBF.MEXISTS", "f", "a", "");
    rbd_expect(c, "0", "CBF.COUNT", "f", "a");   /* the refused MADD added nothing */
    /* Adds count: two adds of a take two deletes. */
    rbd_expect(c, "1", "CBF.ADD", "f", "a");
    rbd_expect(c, "1", "CBF.ADD", "f", "a");
    rbd_expect(c, "1\n1", "CBF.MADD", "f", "b", "c");
    rbd_expect(c, "2", "CBF.COUNT", "f", "a");
    rbd_expect(c, "1\n1\n1\n0", "CBF.MEXISTS", "f", "a", "b", "c", "zz");
    rbd_expect(c, "1", "CBF.DEL", "f", "a");
    rbd_expect(c, "1", "CBF.EXISTS", "f", "a");
    rbd_expect(c, "1", "CBF.DEL", "f", "a");
    rbd_expect(c, "0", "CBF.EXISTS", "f", "a");
    rbd_expect(c, "0", "CBF.COUNT", "f", "a");
    /* A key whose counters are not all > 0 is refused, nothing changed. */
    rbd_expect(c, "0", "CBF.DEL", "f", "a");
    rbd_expect(c, "0", "CBF.DEL", "f", "never");
    rbd_expect(c, "1", "CBF.EXISTS", "f", "b");
    /* A missing filter: reads answer 0, changes "not found". */
    rbd_expect(c, "ERR not found", "CBF.ADD", "nope", "a");
    rbd_expect(c, "ERR not found", "CBF.MADD", "nope", "a", "b");
    rbd_expect(c, "ERR not found", "CBF.DEL", "nope", "a");
    rbd_expect(c, "ERR not found", "CBF.INFO", "nope");
    rbd_expect(c, "ERR not found", "CBF.SCANDUMP", "nope", "0");
    rbd_expect(c, "0", "CBF.EXISTS", "nope", "a");
    rbd_expect(c, "0\n0", "CBF.MEXISTS", "nope", "a", "b");
    rbd_expect(c, "0", "CBF.COUNT", "nope", "a");
    /* 1000 at 1%: ceil(1000 x ln 100 / ln^2 2) = 9586 counters, rounded up
     * to 9600 (16 to a word: 4800 bytes), k = ceil(log2 100) = 7. */
    rbd_expect(c, "Capacity\n1000\nError rate\n0.01\nSize\n4800\nNumber of counters\n9600\n"
               "Number of hash functions\n7\nCounter bits\n4\nNumber of items inserted\n2\n"
               "Number of items deleted\n2\nSaturated counters\n0",
               "CBF.INFO", "f");
    rbd_expect(c, "OK", "CBF.RESERVE", "g", "0.001", "100", "COUNTERBITS", "8");
    rbd_expect(c, "Capacity\n100\nError rate\n0.001\nSize\n1440\nNumber of counters\n1440\n"
               "Number of hash functions\n10\nCounter bits\n8\nNumber of items inserted\n0\n"
               "Number of items deleted\n0\nSaturated counters\n0",
               "CBF.INFO", "g");
    rb_conn_close(c);
}
END_TEST

/* A filter at capacity refuses adds (nothing logged, nothing changed);
 * a delete makes room again.  Counters saturate: 20 adds of one key in
 * 4-bit counters leave them at 15, and deletes never lower them. */
START_TEST(test_cbf_full_and_saturation)
{
    rb_conn_t *c;
    const char *got, *p;
    int rc, sat;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CBF.RESERVE", "s", "0.01", "3");
    rbd_expect(c, "1\n1", "CBF.MADD", "s", "a", "b");
    got = rbd_cmd(c, &rc, "CBF.MADD", "s", "c", "d", "e", (const char *)NULL);
    ck_assert_str_eq(got, "1\n" FULL "\n" FULL);
    rbd_expect(c, FULL, "CBF.ADD", "s", "x");
    rbd_expect(c, FULL, "CBF.MADD", "s", "x");
    /* Nothing of the refused adds changed (32 counters: d may be a false
     * positive, so its counters are not the test; the item count is). */
    got = rbd_cmd(c, &rc, "CBF.INFO", "s", (const char *)NULL);
    ck_assert_msg(strstr(got, "Number of items inserted\n3\n") != NULL, "%s", got);
    rbd_expect(c, "1", "CBF.DEL", "s", "a");
    rbd_expect(c, "1", "CBF.ADD", "s", "x");

    rbd_expect(c, "OK", "CBF.RESERVE", "sat", "0.01", "100");
    for (int i = 0; i < 20; i++)
        rbd_expect(c, "1", "CBF.ADD", "sat", "hot");
    rbd_expect(c, "15", "CBF.COUNT", "sat", "hot");
    for (int i = 0; i < 20; i++)
        rbd_expect(c, "1", "CBF.DEL", "sat", "hot");
    /* Saturated: still found (and still deletable) after every delete. */
    rbd_expect(c, "15", "CBF.COUNT", "sat", "hot");
    rbd_expect(c, "1", "CBF.EXISTS", "sat", "hot");
    /* hot's distinct counters (7 probes, fewer if two of them meet) all
     * reached 15, each counted once. */
    got = rbd_cmd(c, &rc, "CBF.INFO", "sat", (const char *)NULL);
    ck_assert_msg((p = strstr(got, "Saturated counters\n")) != NULL, "%s", got);
    sat = atoi(p + strlen("Saturated counters\n"));
    ck_assert_msg(sat >= 5 && sat <= 7, "%s", got);
    rb_conn_close(c);
}
END_TEST

START_TEST(test_cbf_keyspace)
{
    char args[512], out[4096];
    const char *line;
    rb_conn_t *c;
    int status;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CBF.RESERVE", "cb", "0.01", "100");
    rbd_expect(c, "OK", "CF.RESERVE", "cf", "100");
    rbd_expect(c, "1", "BF.ADD", "bf", "x");
    rbd_expect(c, "1", "PFADD", "hll", "x");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "cms", "10", "2");
    rbd_expect(c, "RBbloomCB", "TYPE", "cb");
    rbd_expect(c, "MBbloomCF", "TYPE", "cf");
    rbd_expect(c, WRONGTYPE, "CBF.ADD", "bf", "x");
    rbd_expect(c, WRONGTYPE, "CBF.EXISTS", "hll", "x");
    rbd_expect(c, WRONGTYPE, "CBF.DEL", "cms", "x");
    rbd_expect(c, WRONGTYPE, "CBF.COUNT", "cf", "x");
    rbd_expect(c, WRONGTYPE, "CBF.INFO", "cf");
    rbd_expect(c, WRONGTYPE, "CBF.RESERVE", "bf", "0.01", "100");
    rbd_expect(c, WRONGTYPE, "BF.ADD", "cb", "x");
    rbd_expect(c, WRONGTYPE, "CF.ADD", "cb", "x");
    rbd_expect(c, WRONGTYPE, "PFADD", "cb", "x");
    rbd_expect(c, WRONGTYPE, "CMS.QUERY", "cb", "x");
    rbd_expect(c, WRONGTYPE, "CF.RESERVE", "cb", "100");
    rbd_expect(c, "5", "EXISTS", "cb", "cf", "bf", "hll", "cms");
    rbd_expect(c, "0\ncb", "SCAN", "0", "COUNT", "100000", "TYPE", "rbbloomcb");
    rbd_expect(c, "cb", "KEYS", "cb*");
    /* The CLI's listing, read from shared memory: its kind and figures. */
    rbd_expect(c, "1\n1", "CBF.MADD", "cb", "x", "y");
    snprintf(args, sizeof(args), "-i %s -s %s filters", d.inst, d.sock);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && (line = strstr(out, "cb\tcounting 4-bit\t2\t100\t")) != NULL &&
                  line == out + strcspn(out, "\n") + 1, "status %d: %s", status, out);
    rbd_expect(c, "1", "DEL", "cb");
    rbd_expect(c, "0", "EXISTS", "cb");
    rbd_expect(c, "0", "CBF.EXISTS", "cb", "x");
    rbd_expect(c, "none", "TYPE", "cb");
    rb_conn_close(c);
}
END_TEST

/* A transaction's CBF changes are one unit, queued and run in order. */
START_TEST(test_cbf_multi_exec)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "MULTI");
    rbd_expect(c, "QUEUED", "CBF.RESERVE", "t", "0.01", "10", "COUNTERBITS", "8");
    rbd_expect(c, "QUEUED", "CBF.ADD", "t", "a");
    rbd_expect(c, "QUEUED", "CBF.MADD", "t", "a", "b");
    rbd_expect(c, "QUEUED", "CBF.DEL", "t", "b");
    rbd_expect(c, "QUEUED", "CBF.COUNT", "t", "a");
    rbd_expect(c, "OK\n1\n1\n1\n1\n2", "EXEC");
    rbd_expect(c, "0", "CBF.EXISTS", "t", "b");
    rb_conn_close(c);
}
END_TEST

/* The dump loads into a new filter that answers the same and dumps the
 * same; a bad header or chunk is refused. */
START_TEST(test_cbf_scandump_loadchunk)
{
    rbd_dump_t a, b;
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CBF.RESERVE", "src", "0.001", "500", "COUNTERBITS", "8");
    for (int i = 0; i < 300; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CBF.ADD", "src", k);
    }
    rbd_scandump(&d, "CBF.SCANDUMP", "src", &a);
    ck_assert_uint_ge(a.n, 2);
    rbd_loadchunks(c, "CBF.LOADCHUNK", "dst", &a);
    rbd_scandump(&d, "CBF.SCANDUMP", "dst", &b);
    rbd_assert_same_dump(&a, &b, "dst");
    for (int i = 0; i < 300; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CBF.EXISTS", "dst", k);
    }
    rbd_expect(c, "1", "CBF.DEL", "dst", "k7");
    rbd_expect(c, "Invalid position", "CBF.LOADCHUNK", "x", "zero", "abc");
    rbd_expect(c, "ERR not found", "CBF.LOADCHUNK", "x", "9", "abc");
    rbd_expect(c, "ERR received bad data", "CBF.LOADCHUNK", "x", "1", "abc");
    rbd_expect(c, "ERR invalid offset - no link found", "CBF.LOADCHUNK", "dst", "999999",
               "abc");
    rbd_dump_free(&a);
    rbd_dump_free(&b);
    rb_conn_close(c);
}
END_TEST

static void make_history(rb_conn_t *c)
{
    rbd_expect(c, "OK", "CBF.RESERVE", "h", "0.0001", "400", "COUNTERBITS", "8");
    for (int i = 0; i < 200; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CBF.ADD", "h", k);
    }
    for (int i = 0; i < 200; i += 2) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CBF.DEL", "h", k);
    }
    rbd_expect(c, "0", "CBF.DEL", "h", "never");   /* refused: no record */
    rbd_expect(c, "1\n1", "CBF.MADD", "h", "k1", "new");
    rbd_expect(c, "OK", "CBF.RESERVE", "gone", "0.01", "10");
    rbd_expect(c, "1", "DEL", "gone");
}

/* Every odd key and "new" present, the even ones absent (p = 1e-4 at 200
 * keys: a false positive among 100 is ~1% likely in all, and the filter
 * is the same each run: keyed by the secret the log keeps). */
static void assert_history(const rbd_dump_t *before)
{
    rb_conn_t *c = rbd_connect(&d);
    rbd_dump_t now;
    int present = 0;

    for (int i = 0; i < 200; i++) {
        char k[24];
        int rc;
        snprintf(k, sizeof(k), "k%d", i);
        const char *got = rbd_cmd(c, &rc, "CBF.EXISTS", "h", k, (const char *)NULL);
        if (i % 2 == 1)
            ck_assert_msg(strcmp(got, "1") == 0, "%s lost: %s", k, got);
        present += strcmp(got, "1") == 0;
    }
    ck_assert_int_le(present, 102);
    rbd_expect(c, "2", "CBF.COUNT", "h", "k1");
    rbd_expect(c, "1", "CBF.EXISTS", "h", "new");
    rbd_expect(c, "0", "EXISTS", "gone");
    rbd_scandump(&d, "CBF.SCANDUMP", "h", &now);
    rbd_assert_same_dump(before, &now, "h after the restart");
    rbd_dump_free(&now);
    rb_conn_close(c);
}

START_TEST(test_cbf_replayed_from_log)
{
    rbd_dump_t before;
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rb_conn_close(c);
    rbd_scandump(&d, "CBF.SCANDUMP", "h", &before);
    rbd_restart_cold(&d);   /* no re-attach: a replay */
    /* 2 reserves, 200 adds + 1 MADD, 100 deletes, a DEL. */
    ck_assert_int_eq(rbd_log_count(&d, ", 304 log records replayed"), 1);
    assert_history(&before);
    rbd_dump_free(&before);
}
END_TEST

START_TEST(test_cbf_kept_by_snapshot)
{
    rbd_dump_t before;
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    rbd_scandump(&d, "CBF.SCANDUMP", "h", &before);
    rbd_restart_cold(&d);
    ck_assert_int_eq(rbd_log_count(&d, ", 0 log records replayed"), 2);   /* both starts */
    assert_history(&before);
    rbd_dump_free(&before);
}
END_TEST

/* A dump loaded through the log replays to the same filter. */
START_TEST(test_cbf_loadchunk_replayed)
{
    rbd_dump_t a, b;
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rbd_scandump(&d, "CBF.SCANDUMP", "h", &a);
    rbd_loadchunks(c, "CBF.LOADCHUNK", "copy", &a);
    rb_conn_close(c);
    rbd_restart_cold(&d);
    rbd_scandump(&d, "CBF.SCANDUMP", "copy", &b);
    rbd_assert_same_dump(&a, &b, "copy after the restart");
    rbd_dump_free(&a);
    rbd_dump_free(&b);
}
END_TEST

/* 1 if the file srcdir/rel holds text. */
static int doc_says(const char *rel, const char *text)
{
    char path[4096];
    size_t len;
    const char *src = getenv("srcdir");
    char *doc;
    int found;

    snprintf(path, sizeof(path), "%s/%s", src ? src : ".", rel);
    doc = rbd_read_file(path, &len);
    found = strstr(doc, text) != NULL;
    free(doc);
    return found;
}

/* Issue 41, 13: deleting an item never added that the filter answers 1
 * for is accepted and can remove items that were added, as README, the
 * man page and COMMAND DOCS now say (README said "0: refused, the item is
 * not there", which read as a guarantee). */
START_TEST(test_cbf_false_positive_delete_documented)
{
    char key[32], docs[2048];
    rb_conn_t *c;
    int rc, fps = 0, lost = 0;

    ck_assert(doc_says("README.md", "deleting an item never added that the filter answers 1 "
                       "for, a false positive, is accepted and lowers other items' counters"));
    ck_assert(!doc_says("README.md", "0: refused, the item is not there"));
    ck_assert(doc_says("man/man8/ringbloomd.8", "is accepted and lowers other items'\n"
                       "counters, which can make items that were added answer 0."));
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    snprintf(docs, sizeof(docs), "%s", rbd_cmd(c, &rc, "COMMAND", "DOCS", "CBF.DEL",
                                                (const char *)NULL));
    ck_assert_msg(strstr(docs, "deleting an item never added can remove others") != NULL, "%s",
                  docs);
    rbd_expect(c, "OK", "CBF.RESERVE", "f", "0.2", "50");
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "added-%d", i);
        rbd_expect(c, "1", "CBF.ADD", "f", key);
    }
    /* False positives, deleted one by one until an added item is lost. */
    for (int i = 0; i < 20000 && lost == 0; i++) {
        snprintf(key, sizeof(key), "never-%d", i);
        if (strcmp(rbd_cmd(c, &rc, "CBF.EXISTS", "f", key, (const char *)NULL), "1") != 0)
            continue;
        rbd_expect(c, "1", "CBF.DEL", "f", key);
        fps++;
        for (int k = 0; k < 50; k++) {
            snprintf(key, sizeof(key), "added-%d", k);
            lost += strcmp(rbd_cmd(c, &rc, "CBF.EXISTS", "f", key, (const char *)NULL), "0") == 0;
        }
    }
    printf("cbf: %d deletes of items never added (each answered 1) made %d of 50 added items "
           "answer 0\n", fps, lost);
    ck_assert_int_gt(fps, 0);
    ck_assert_int_gt(lost, 0);
    rb_conn_close(c);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("cbf",
                        RB_TCASE("commands", 60, NULL, rbd_teardown, test_cbf_commands,
                                 test_cbf_full_and_saturation, test_cbf_keyspace,
                                 test_cbf_multi_exec, test_cbf_scandump_loadchunk,
                                 test_cbf_false_positive_delete_documented),
                        RB_TCASE("persistence", 60, NULL, rbd_teardown,
                                 test_cbf_replayed_from_log, test_cbf_kept_by_snapshot,
                                 test_cbf_loadchunk_replayed));
}
