/*
 * check_appendonly.c - appendonly no (aof_switch.c, sink_log.c): adds are
 * answered and no log byte is written; a restart that re-attaches to the
 * segment keeps everything, one without it comes back to the last
 * snapshot (SAVE, the shutdown's, the start-up's) and loses what came
 * after, as documented (the periodic snapshot runs without a log);
 * a log left by appendonly yes is replayed once;
 * CONFIG SET / SIGHUP switch it, and back to yes a snapshot comes first
 * so that nothing is lost over a restart from the files alone.
 */
#include <sys/stat.h>

#include "rbd_test.h"

static rbd_proc_t d;
static char log_path[4200];

static void start(const char *extra)
{
    rbd_start(&d, extra);
    snprintf(log_path, sizeof(log_path), "%s/state/appendonly.rbl", d.dir);
}

static struct stat log_stat(void)
{
    struct stat st;

    ck_assert_msg(stat(log_path, &st) == 0, "%s: %s", log_path, strerror(errno));
    return st;
}

/* The log file is the very same one, untouched: inode, size, mtime. */
static void assert_log_untouched(const struct stat *before)
{
    struct stat now = log_stat();

    ck_assert_uint_eq(now.st_ino, before->st_ino);
    ck_assert_int_eq(now.st_size, before->st_size);
    ck_assert_int_eq(now.st_mtim.tv_sec, before->st_mtim.tv_sec);
    ck_assert_int_eq(now.st_mtim.tv_nsec, before->st_mtim.tv_nsec);
}

static long long persistence(rb_conn_t *c, const char *field)
{
    return (long long)rbd_info_num(c, "persistence", field);
}

/* n keys "<prefix><i>" in bloom filter f, a cuckoo filter and a count-min
 * sketch, each answered as a new item. */
static void add_keys(rb_conn_t *c, const char *prefix, int n)
{
    char key[64];

    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        rbd_expect(c, "1", "BF.ADD", "bf", key);
        rbd_expect(c, "1", "CF.ADD", "cf", key);
        rbd_expect(c, "3", "CMS.INCRBY", "cms", key, "3");
    }
}

/* Whether the keys are there, all of them (want 1) or none (want 0). */
static void expect_keys(rb_conn_t *c, const char *prefix, int n, int want)
{
    char key[64];

    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        rbd_expect(c, want ? "1" : "0", "BF.EXISTS", "bf", key);
        rbd_expect(c, want ? "1" : "0", "CF.EXISTS", "cf", key);
        rbd_expect(c, want ? "3" : "0", "CMS.QUERY", "cms", key);
    }
}

static void make_filters(rb_conn_t *c)
{
    rbd_expect(c, "OK", "BF.RESERVE", "bf", "0.001", "100000");
    rbd_expect(c, "OK", "CF.RESERVE", "cf", "100000");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "cms", "20000", "5");
}

/* The daemon killed; with its segment removed too if cold. */
static void kill_and_start(int cold)
{
    rbd_stop(&d, SIGKILL);
    if (cold)
        ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
}

/* appendonly no: every add answered, the log file not written at all;
 * INFO and CONFIG GET say so; the changes are counted for the periodic
 * snapshot.  A kill with the segment left: all of it comes back. */
START_TEST(test_appendonly_no_writes_no_log)
{
    struct stat before;
    rb_conn_t *c;
    int rc;

    start("appendonly no\nsave-seconds 0\nappendfsync always");
    c = rbd_connect(&d);
    ck_assert_int_eq(persistence(c, "aof_enabled"), 0);
    ck_assert_ptr_nonnull(strstr(rbd_cmd(c, &rc, "CONFIG", "GET", "appendonly",
                                         (const char *)NULL), "no"));
    ck_assert_ptr_null(strstr(rbd_cmd(c, &rc, "CONFIG", "GET", "appendonly", (const char *)NULL),
                              "yes"));
    before = log_stat();
    ck_assert_int_eq(before.st_size, 32);   /* the empty log beside the snapshot */
    make_filters(c);
    add_keys(c, "a", 300);
    rbd_expect(c, "OK", "RING.ADD", "n1", "1");
    assert_log_untouched(&before);
    ck_assert_int_eq(persistence(c, "log_bytes"), 32);
    ck_assert_int_eq(persistence(c, "log_fsyncs"), 0);
    ck_assert_int_ge(persistence(c, "rdb_changes_since_last_save"), 900);
    rb_conn_close(c);

    kill_and_start(0);   /* re-attaches: the segment is the state */
    c = rbd_connect(&d);
    expect_keys(c, "a", 300, 1);
    rb_conn_close(c);
}
END_TEST

/* Without the segment a start comes back to the last snapshot: SAVE's
 * keys stay, those after it are gone; SIGTERM's (and SHUTDOWN's) final
 * snapshot keeps everything; SHUTDOWN NOSAVE does not. */
START_TEST(test_appendonly_no_restart_comes_back_to_the_last_snapshot)
{
    rb_conn_t *c;

    start("appendonly no\nsave-seconds 0");
    c = rbd_connect(&d);
    make_filters(c);
    add_keys(c, "saved", 100);
    rbd_expect(c, "OK", "SAVE");
    add_keys(c, "after", 100);
    rb_conn_close(c);
    kill_and_start(1);
    c = rbd_connect(&d);
    expect_keys(c, "saved", 100, 1);
    expect_keys(c, "after", 100, 0);
    add_keys(c, "term", 100);
    rb_conn_close(c);

    rbd_stop(&d, SIGTERM);   /* the final snapshot, as SHUTDOWN's */
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    expect_keys(c, "saved", 100, 1);
    expect_keys(c, "term", 100, 1);
    add_keys(c, "nosave", 50);
    ck_assert_int_eq(rbl_stop(&d, c, 0, 10000), 0);   /* SHUTDOWN NOSAVE */
    ck_assert_int_eq(rbd_log_count(&d, "SHUTDOWN NOSAVE with appendonly no"), 1);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    expect_keys(c, "term", 100, 1);
    expect_keys(c, "nosave", 50, 0);
    rb_conn_close(c);
}
END_TEST

/* The periodic snapshot (save-seconds) runs without a log: the changes
 * are counted, so one is taken, and a start without the segment has what
 * it saved. */
START_TEST(test_appendonly_no_periodic_snapshot_keeps_the_changes)
{
    struct stat before;
    long long snaps;
    rb_conn_t *c;
    int i;

    start("appendonly no\nsave-seconds 1");
    c = rbd_connect(&d);
    before = log_stat();
    snaps = persistence(c, "snapshots");
    make_filters(c);
    add_keys(c, "periodic", 100);
    for (i = 0; i < 500 && (persistence(c, "snapshots") == snaps ||
                            persistence(c, "rdb_changes_since_last_save") != 0); i++)
        usleep(10000);
    ck_assert_int_gt(persistence(c, "snapshots"), snaps);
    ck_assert_int_eq(persistence(c, "rdb_changes_since_last_save"), 0);
    ck_assert_int_eq(log_stat().st_size, 32);   /* a new empty log, nothing in it */
    ck_assert_uint_ne(log_stat().st_ino, before.st_ino);
    rb_conn_close(c);
    kill_and_start(1);
    c = rbd_connect(&d);
    expect_keys(c, "periodic", 100, 1);
    rb_conn_close(c);
}
END_TEST

/* A log written with appendonly yes is replayed by a start with
 * appendonly no, whose start-up snapshot then supersedes it (nothing
 * lost, nothing written after). */
START_TEST(test_appendonly_no_start_replays_the_log_in_place)
{
    struct stat before;
    rb_conn_t *c;

    start("save-seconds 0");
    c = rbd_connect(&d);
    make_filters(c);
    add_keys(c, "logged", 200);
    ck_assert_int_gt(persistence(c, "log_bytes"), 32);
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_write_conf(&d, "appendonly no\nsave-seconds 0");
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(persistence(c, "aof_enabled"), 0);
    expect_keys(c, "logged", 200, 1);
    before = log_stat();
    ck_assert_int_eq(before.st_size, 32);
    add_keys(c, "more", 50);
    assert_log_untouched(&before);
    rb_conn_close(c);
}
END_TEST

/* CONFIG SET appendonly yes after changes made without the log: a
 * snapshot first, then records again; a start from the files alone has
 * both.  Back to no (SIGHUP of the edited file) the log stops growing. */
START_TEST(test_appendonly_switch_back_to_yes_loses_nothing)
{
    struct stat before;
    long long snaps;
    rb_conn_t *c;
    int rc;

    start("appendonly no\nsave-seconds 0");
    c = rbd_connect(&d);
    make_filters(c);
    add_keys(c, "unlogged", 200);
    snaps = persistence(c, "snapshots");
    rbd_expect(c, "OK", "CONFIG", "SET", "appendonly", "yes");
    ck_assert_int_eq(persistence(c, "aof_enabled"), 1);
    ck_assert_int_eq(persistence(c, "snapshots"), snaps + 1);
    ck_assert_ptr_nonnull(strstr(rbd_cmd(c, &rc, "CONFIG", "GET", "appendonly",
                                         (const char *)NULL), "yes"));
    add_keys(c, "logged", 200);
    ck_assert_int_gt(persistence(c, "log_bytes"), 32);
    ck_assert_int_gt(log_stat().st_size, 32);
    rb_conn_close(c);
    kill_and_start(1);
    c = rbd_connect(&d);
    expect_keys(c, "unlogged", 200, 1);
    expect_keys(c, "logged", 200, 1);
    ck_assert_int_eq(persistence(c, "aof_enabled"), 0);   /* the file still says no */

    /* yes -> no by SIGHUP: the log is left as it is. */
    rbd_expect(c, "OK", "CONFIG", "SET", "appendonly", "yes");
    add_keys(c, "yes2", 20);
    rbd_write_conf(&d, "appendonly no\nsave-seconds 0");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    for (int i = 0; i < 200 && persistence(c, "aof_enabled") != 0; i++)
        usleep(10000);
    ck_assert_int_eq(persistence(c, "aof_enabled"), 0);
    before = log_stat();
    add_keys(c, "no2", 50);
    assert_log_untouched(&before);
    rb_conn_close(c);
    kill_and_start(1);
    c = rbd_connect(&d);
    expect_keys(c, "yes2", 20, 1);   /* logged before the switch */
    expect_keys(c, "no2", 50, 0);    /* after it: no snapshot, no log */
    rb_conn_close(c);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("appendonly",
                        RB_TCASE("appendonly no", 300, NULL, rbd_teardown,
                                 test_appendonly_no_writes_no_log,
                                 test_appendonly_no_restart_comes_back_to_the_last_snapshot,
                                 test_appendonly_no_periodic_snapshot_keeps_the_changes,
                                 test_appendonly_no_start_replays_the_log_in_place),
                        RB_TCASE("switching", 300, NULL, rbd_teardown,
                                 test_appendonly_switch_back_to_yes_loses_nothing));
}
