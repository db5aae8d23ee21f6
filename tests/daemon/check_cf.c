/*
 * check_cf.c - the cuckoo filter commands end to end (daemon/commands/cmd_cf.c):
 * RedisBloom's CF.* replies and errors, our FPBITS option, the keyspace
 * commands on cuckoo filters (TYPE, EXISTS, SCAN TYPE, DEL, WRONGTYPE),
 * CF.SCANDUMP / CF.LOADCHUNK round trips, and every change kept across a
 * restart by log replay (records 19-22) and by snapshot.
 */
#include "rbd_test.h"

#define WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"

static rbd_proc_t d;

START_TEST(test_cf_commands_as_redisbloom)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CF.RESERVE", "f", "1000");
    rbd_expect(c, "ERR item exists", "CF.RESERVE", "f", "1000");
    rbd_expect(c, "Bad capacity", "CF.RESERVE", "x", "many");
    rbd_expect(c, "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]", "CF.RESERVE",
               "x", "3");
    rbd_expect(c, "BUCKETSIZE: value must be in the range [1, 255]", "CF.RESERVE", "x", "100",
               "BUCKETSIZE", "256");
    rbd_expect(c, "MAXITERATIONS: value must be in the range [1, 65535]", "CF.RESERVE", "x",
               "100", "MAXITERATIONS", "0");
    rbd_expect(c, "EXPANSION: value must be in the range [0, 32768]", "CF.RESERVE", "x", "100",
               "EXPANSION", "40000");
    rbd_expect(c, "ERR FPBITS must be 8, 12 or 16 (bits a fingerprint keeps; default 8)",
               "CF.RESERVE", "x", "100", "FPBITS",
               "10");
    rbd_expect(c, "Couldn't parse BUCKETSIZE", "CF.RESERVE", "x", "100", "BUCKETSIZE", "b");
    rbd_expect(c, "ERR syntax error", "CF.RESERVE", "x", "100", "COLOUR", "blue");
    rbd_expect(c, "0", "EXISTS", "x");
    /* Adds: duplicates count; the NX forms add only what may be absent. */
    rbd_expect(c, "1", "CF.ADD", "f", "a");
    rbd_expect(c, "1", "CF.ADD", "f", "a");
    rbd_expect(c, "0", "CF.ADDNX", "f", "a");
    rbd_expect(c, "1", "CF.ADDNX", "f", "b");
    rbd_expect(c, "2", "CF.COUNT", "f", "a");
    rbd_expect(c, "1\n1\n0", "CF.MEXISTS", "f", "a", "b", "c");
    rbd_expect(c, "1\n1", "CF.INSERT", "f", "ITEMS", "c", "a");
    rbd_expect(c, "0\n1", "CF.INSERTNX", "f", "ITEMS", "c", "d");
    rbd_expect(c, "1", "CF.DEL", "f", "a");
    rbd_expect(c, "2", "CF.COUNT", "f", "a");
    rbd_expect(c, "1", "CF.DEL", "f", "a");
    rbd_expect(c, "1", "CF.DEL", "f", "a");
    rbd_expect(c, "0", "CF.DEL", "f", "a");
    rbd_expect(c, "0", "CF.EXISTS", "f", "a");
    rbd_expect(c, "Not found", "CF.DEL", "nope", "a");
    rbd_expect(c, "0", "CF.EXISTS", "nope", "a");
    rbd_expect(c, "0\n0", "CF.MEXISTS", "nope", "a", "b");
    rbd_expect(c, "0", "CF.COUNT", "nope", "a");
    rbd_expect(c, "ERR not found", "CF.INSERT", "nope", "NOCREATE", "ITEMS", "a");
    rbd_expect(c, "ERR not found", "CF.INFO", "nope");
    rbd_expect(c, "Unknown argument received", "CF.INSERT", "f", "SOON", "ITEMS", "a");
    rbd_expect(c, "ERR wrong number of arguments for 'cf.insert' command", "CF.INSERT", "f",
               "CAPACITY", "100", "ITEMS");
    /* INFO: RedisBloom's eight fields (1000 / bucket 2: 512 buckets of 8-bit
     * fingerprints), then ours. */
    rbd_expect(c, "Size\n1024\nNumber of buckets\n512\nNumber of filters\n1\n"
               "Number of items inserted\n3\nNumber of items deleted\n3\nBucket size\n2\n"
               "Expansion rate\n1\nMax iterations\n20\nFingerprint bits\n8",
               "CF.INFO", "f");
    /* CF.ADD creates with RedisBloom's defaults (capacity 1024). */
    rbd_expect(c, "1", "CF.ADD", "auto", "k");
    rbd_expect(c, "1\n1", "CF.INSERT", "g", "CAPACITY", "4", "ITEMS", "k", "-1");
    rb_conn_close(c);
}
END_TEST

/* A filter that may not grow fills up: CF.ADD answers "Filter is full",
 * CF.INSERT -1 for what found no room, and nothing is logged for it. */
START_TEST(test_cf_full_and_growth)
{
    rb_conn_t *c;
    int full = 0, rc;
    char last[24];

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CF.RESERVE", "small", "8", "BUCKETSIZE", "2", "EXPANSION", "0");
    for (int i = 0; i < 64 && !full; i++) {
        snprintf(last, sizeof(last), "k%d", i);
        const char *got = rbd_cmd(c, &rc, "CF.ADD", "small", last, (const char *)NULL);
        full = strcmp(got, "Filter is full") == 0;
        ck_assert_msg(full || strcmp(got, "1") == 0, "CF.ADD %s: %s", last, got);
    }
    ck_assert_msg(full, "an 8-slot filter took 64 keys");
    /* A refused add changed nothing, so the same key finds no room again
     * (another key might: its buckets differ). */
    rbd_expect(c, "-1", "CF.INSERT", "small", "ITEMS", last);
    /* One that grows takes them all, in more filters. */
    rbd_expect(c, "OK", "CF.RESERVE", "grows", "8", "EXPANSION", "2");
    for (int i = 0; i < 64; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CF.ADD", "grows", k);
    }
    for (int i = 0; i < 64; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CF.EXISTS", "grows", k);
    }
    rb_conn_close(c);
}
END_TEST

START_TEST(test_cf_keyspace)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CF.RESERVE", "cf", "100", "FPBITS", "16");
    rbd_expect(c, "1", "BF.ADD", "bf", "x");
    rbd_expect(c, "1", "PFADD", "hll", "x");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "cms", "10", "2");
    rbd_expect(c, "MBbloomCF", "TYPE", "cf");
    rbd_expect(c, WRONGTYPE, "CF.ADD", "bf", "x");
    rbd_expect(c, WRONGTYPE, "CF.EXISTS", "hll", "x");
    rbd_expect(c, WRONGTYPE, "CF.DEL", "cms", "x");
    rbd_expect(c, WRONGTYPE, "CF.RESERVE", "bf", "100");
    rbd_expect(c, WRONGTYPE, "BF.ADD", "cf", "x");
    rbd_expect(c, WRONGTYPE, "PFADD", "cf", "x");
    rbd_expect(c, WRONGTYPE, "CMS.QUERY", "cf", "x");
    rbd_expect(c, "4", "EXISTS", "cf", "bf", "hll", "cms");
    rbd_expect(c, "0\ncf", "SCAN", "0", "COUNT", "100000", "TYPE", "mbbloomcf");
    rbd_expect(c, "1", "DEL", "cf");
    rbd_expect(c, "0", "EXISTS", "cf");
    rbd_expect(c, "0", "CF.EXISTS", "cf", "x");
    rb_conn_close(c);
}
END_TEST

/* The dump of a filter of several layers loads into a new one that
 * answers the same and dumps the same; a bad header is refused. */
START_TEST(test_cf_scandump_loadchunk)
{
    rbd_dump_t a, b;
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CF.RESERVE", "src", "64", "BUCKETSIZE", "4", "FPBITS", "12");
    for (int i = 0; i < 300; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CF.ADD", "src", k);
    }
    rbd_scandump(&d, "CF.SCANDUMP", "src", &a);
    ck_assert_uint_ge(a.n, 2);
    rbd_loadchunks(c, "CF.LOADCHUNK", "dst", &a);
    rbd_scandump(&d, "CF.SCANDUMP", "dst", &b);
    rbd_assert_same_dump(&a, &b, "dst");
    for (int i = 0; i < 300; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CF.EXISTS", "dst", k);
    }
    rbd_expect(c, "Invalid position", "CF.LOADCHUNK", "x", "zero", "abc");
    rbd_expect(c, "ERR not found", "CF.LOADCHUNK", "x", "9", "abc");
    rbd_dump_free(&a);
    rbd_dump_free(&b);
    rb_conn_close(c);
}
END_TEST

static void make_history(rb_conn_t *c)
{
    rbd_expect(c, "OK", "CF.RESERVE", "h", "16", "BUCKETSIZE", "2", "EXPANSION", "2",
               "FPBITS", "16");
    for (int i = 0; i < 200; i++) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CF.ADD", "h", k);
    }
    for (int i = 0; i < 200; i += 2) {
        char k[24];
        snprintf(k, sizeof(k), "k%d", i);
        rbd_expect(c, "1", "CF.DEL", "h", k);
    }
    rbd_expect(c, "0\n1", "CF.INSERTNX", "h", "ITEMS", "k1", "new");
    rbd_expect(c, "1", "CF.ADD", "gone", "x");
    rbd_expect(c, "1", "DEL", "gone");
}

/* Every odd key and "new" present, the even ones absent (16-bit
 * fingerprints: a false positive among 100 is ~0.3% likely per key, and
 * the filter is the same each run: keyed by the secret the log keeps). */
static void assert_history(const rbd_dump_t *before)
{
    rb_conn_t *c = rbd_connect(&d);
    rbd_dump_t now;
    int present = 0;

    for (int i = 0; i < 200; i++) {
        char k[24];
        int rc;
        snprintf(k, sizeof(k), "k%d", i);
        const char *got = rbd_cmd(c, &rc, "CF.EXISTS", "h", k, (const char *)NULL);
        if (i % 2 == 1)
            ck_assert_msg(strcmp(got, "1") == 0, "%s lost: %s", k, got);
        present += strcmp(got, "1") == 0;
    }
    ck_assert_int_le(present, 105);
    rbd_expect(c, "1", "CF.EXISTS", "h", "new");
    rbd_expect(c, "0", "EXISTS", "gone");
    rbd_scandump(&d, "CF.SCANDUMP", "h", &now);
    rbd_assert_same_dump(before, &now, "h after the restart");
    rbd_dump_free(&now);
    rb_conn_close(c);
}

START_TEST(test_cf_replayed_from_log)
{
    rbd_dump_t before;
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rb_conn_close(c);
    rbd_scandump(&d, "CF.SCANDUMP", "h", &before);
    rbd_restart_cold(&d);   /* no re-attach: a replay */
    /* 2 reserves, 200 + 1 + 1 adds, 100 deletes, a DEL. */
    ck_assert_int_eq(rbd_log_count(&d, ", 305 log records replayed"), 1);
    assert_history(&before);
    rbd_dump_free(&before);
}
END_TEST

START_TEST(test_cf_kept_by_snapshot)
{
    rbd_dump_t before;
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    rbd_scandump(&d, "CF.SCANDUMP", "h", &before);
    rbd_restart_cold(&d);
    ck_assert_int_eq(rbd_log_count(&d, ", 0 log records replayed"), 2);   /* both starts */
    assert_history(&before);
    rbd_dump_free(&before);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("cf",
                        RB_TCASE("commands", 60, NULL, rbd_teardown,
                                 test_cf_commands_as_redisbloom, test_cf_full_and_growth,
                                 test_cf_keyspace, test_cf_scandump_loadchunk),
                        RB_TCASE("persistence", 60, NULL, rbd_teardown,
                                 test_cf_replayed_from_log, test_cf_kept_by_snapshot));
}
