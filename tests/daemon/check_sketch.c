/*
 * check_sketch.c - the count-min sketch and TinyLFU commands end to end
 * (daemon/commands/cmd_cms.c, cmd_admit.c): RedisBloom's CMS.* replies and errors,
 * our SMALL / AGING / LIKE options, the keyspace commands on sketches
 * (TYPE, EXISTS, KEYS, DEL, WRONGTYPE), ADMIT.*, and every change kept
 * across a restart by log replay (records 16-18, the halvings replayed
 * with the increments) and by snapshot.
 */
#include "rbd_test.h"

static rbd_proc_t d;

START_TEST(test_sketch_commands_as_redisbloom)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CMS.INITBYDIM", "c", "1000", "5");
    rbd_expect(c, "CMS: key already exists", "CMS.INITBYDIM", "c", "10", "5");
    rbd_expect(c, "CMS: invalid width", "CMS.INITBYDIM", "x", "0", "5");
    rbd_expect(c, "CMS: invalid depth", "CMS.INITBYDIM", "x", "10", "0");
    rbd_expect(c, "CMS: invalid overestimation value", "CMS.INITBYPROB", "x", "0", "0.1");
    rbd_expect(c, "CMS: invalid prob value", "CMS.INITBYPROB", "x", "0.1", "1");
    rbd_expect(c, "OK", "CMS.INITBYPROB", "p", "0.001", "0.01");
    rbd_expect(c, "width\n2000\ndepth\n7\ncount\n0\ncounter bits\n32\naging\n0\nagings\n0",
               "CMS.INFO", "p");
    rbd_expect(c, "10\n42", "CMS.INCRBY", "c", "foo", "10", "bar", "42");
    rbd_expect(c, "10\n42\n0", "CMS.QUERY", "c", "foo", "bar", "baz");
    rbd_expect(c, "CMS: Cannot parse number", "CMS.INCRBY", "c", "foo", "x");
    rbd_expect(c, "CMS: key does not exist", "CMS.QUERY", "nope", "foo");
    rbd_expect(c, "CMS: key does not exist", "CMS.INCRBY", "nope", "foo", "1");
    /* Merge: sources made LIKE one another add up, weighted. */
    rbd_expect(c, "OK", "CMS.INITBYDIM", "c2", "1000", "5", "LIKE", "c");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "m", "1000", "5");
    rbd_expect(c, "1", "CMS.INCRBY", "c2", "foo", "1");
    rbd_expect(c, "OK", "CMS.MERGE", "m", "2", "c", "c2", "WEIGHTS", "2", "3");
    rbd_expect(c, "23\n84", "CMS.QUERY", "m", "foo", "bar");
    rbd_expect(c, "OK", "CMS.MERGE", "m", "2", "c", "c2");
    rbd_expect(c, "11\n42", "CMS.QUERY", "m", "foo", "bar");
    rbd_expect(c, "CMS: width/depth is not equal", "CMS.MERGE", "m", "1", "p");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "o", "1000", "5");
    rbd_expect(c, "CMS: sketches hash differently (create them with LIKE)", "CMS.MERGE", "m",
               "2", "c", "o");
    rbd_expect(c, "CMS: wrong number of keys", "CMS.MERGE", "m", "3", "c", "c2");
    /* 4-bit counters saturate at 15. */
    rbd_expect(c, "OK", "CMS.INITBYDIM", "s", "64", "4", "SMALL");
    rbd_expect(c, "15", "CMS.INCRBY", "s", "k", "100");
    /* The keyspace: one name space, RedisBloom's type name. */
    rbd_expect(c, "CMSk-TYPE", "TYPE", "c");
    rbd_expect(c, "1", "BF.ADD", "bf", "x");
    rbd_expect(c, "WRONGTYPE Operation against a key holding the wrong kind of value",
               "BF.ADD", "c", "x");
    rbd_expect(c, "WRONGTYPE Operation against a key holding the wrong kind of value",
               "CMS.QUERY", "bf", "x");
    rbd_expect(c, "2", "EXISTS", "c", "bf", "zz");
    rbd_expect(c, "2", "DEL", "c2", "bf");
    rbd_expect(c, "0", "EXISTS", "c2");
    rbd_expect(c, "c\np\nm\no\ns", "KEYS", "*");
    rbd_expect(c, "1", "BF.ADD", "bf", "y");
    rbd_expect(c, "0\nbf", "SCAN", "0", "COUNT", "1000", "TYPE", "mbbloom--");
    rbd_expect(c, "0\nc\np\nm\no\ns", "SCAN", "0", "COUNT", "1000", "TYPE", "CMSk-TYPE");
    rb_conn_close(c);
}
END_TEST

/* ADMIT.TOUCH: the doorkeeper takes the first touch, the sketch the rest;
 * the window's halving clears the doorkeeper. */
START_TEST(test_sketch_admit_touch_and_query)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "ADMIT.RESERVE", "t", "100", "0.01", "WINDOW", "4");
    rbd_expect(c, "CMSk-TYPE", "TYPE", "t");
    rbd_expect(c, "MBbloom--", "TYPE", "t:dk");
    rbd_expect(c, "1", "ADMIT.TOUCH", "t", "a");     /* doorkeeper */
    rbd_expect(c, "2", "ADMIT.TOUCH", "t", "a");     /* sketch 1 + doorkeeper */
    rbd_expect(c, "3", "ADMIT.TOUCH", "t", "a");
    rbd_expect(c, "1", "ADMIT.TOUCH", "t", "b");
    rbd_expect(c, "1", "ADMIT.QUERY", "t", "a", "b");
    rbd_expect(c, "0", "ADMIT.QUERY", "t", "b", "a");
    rbd_expect(c, "4", "ADMIT.TOUCH", "t", "a");
    rbd_expect(c, "5", "ADMIT.TOUCH", "t", "a");     /* 4 counted: halved to 2, dk cleared */
    rbd_expect(c, "2", "CMS.QUERY", "t", "a");
    rbd_expect(c, "0", "BF.EXISTS", "t:dk", "a");
    rbd_expect(c, "ERR 't' exists (a TinyLFU pair, or another filter of its name or of its "
               "doorkeeper's, 't':dk)", "ADMIT.RESERVE", "t", "100");
    rbd_expect(c, "1", "ADMIT.TOUCH", "t", "b");     /* the cleared doorkeeper takes b again */
    rb_conn_close(c);
    /* The log alone gives the same pair (each touch one TXN record). */
    rbd_restart_cold(&d);
    c = rbd_connect(&d);
    rbd_expect(c, "2\n0", "CMS.QUERY", "t", "a", "b");
    rbd_expect(c, "0\n1", "BF.MEXISTS", "t:dk", "a", "b");
    rbd_expect(c, "1", "ADMIT.QUERY", "t", "a", "b");
    rb_conn_close(c);
}
END_TEST

static void make_history(rb_conn_t *c)
{
    rbd_expect(c, "OK", "CMS.INITBYDIM", "a", "100", "3", "SMALL", "AGING", "10");
    /* The 10th counted increment halves the sketch: 10 -> 5, then 6. */
    for (int i = 1; i <= 11; i++) {
        char want[16];
        snprintf(want, sizeof(want), "%d", i <= 10 ? i : 6);
        rbd_expect(c, want, "CMS.INCRBY", "a", "k", "1");
    }
    rbd_expect(c, "OK", "CMS.INITBYDIM", "b", "100", "3");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "b2", "100", "3", "LIKE", "b");
    rbd_expect(c, "7\n9", "CMS.INCRBY", "b", "x", "7", "y", "9");
    rbd_expect(c, "5", "CMS.INCRBY", "b2", "x", "5");
    rbd_expect(c, "OK", "CMS.MERGE", "b2", "2", "b", "b2", "WEIGHTS", "1", "2");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "gone", "10", "2");
    rbd_expect(c, "1", "DEL", "gone");
}

static void assert_history(void)
{
    rb_conn_t *c = rbd_connect(&d);

    rbd_expect(c, "a\nb\nb2", "KEYS", "*");
    rbd_expect(c, "6", "CMS.QUERY", "a", "k");      /* 10 halved to 5, then + 1 */
    rbd_expect(c, "width\n100\ndepth\n3\ncount\n6\ncounter bits\n4\naging\n10\nagings\n1",
               "CMS.INFO", "a");
    rbd_expect(c, "17\n9", "CMS.QUERY", "b2", "x", "y");
    rbd_expect(c, "0", "EXISTS", "gone");
    rb_conn_close(c);
}

START_TEST(test_sketch_replayed_from_log)
{
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rb_conn_close(c);
    rbd_restart_cold(&d);   /* no re-attach: a replay */
    /* 4 inits, 11 + 2 increments, a merge, a delete. */
    ck_assert_int_eq(rbd_log_count(&d, ", 19 log records replayed"), 1);
    assert_history();
}
END_TEST

START_TEST(test_sketch_kept_by_snapshot)
{
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    rbd_restart_cold(&d);
    ck_assert_int_eq(rbd_log_count(&d, ", 0 log records replayed"), 2);   /* both starts */
    assert_history();
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("sketch",
                        RB_TCASE("commands", 30, NULL, rbd_teardown,
                                 test_sketch_commands_as_redisbloom,
                                 test_sketch_admit_touch_and_query),
                        RB_TCASE("persistence", 30, NULL, rbd_teardown,
                                 test_sketch_replayed_from_log,
                                 test_sketch_kept_by_snapshot));
}
