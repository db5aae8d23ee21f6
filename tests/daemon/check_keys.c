/*
 * check_keys.c - the keyspace commands end to end (daemon/commands/cmd_keys.c):
 * DEL / UNLINK / EXISTS / TYPE / KEYS / SCAN / DBSIZE as Redis answers
 * them, through our client and through redis-cli; deletes surviving a
 * restart by log replay and by snapshot; FLUSHALL / FLUSHDB of every
 * kind, replayed; and filters deleted and made again under one name while
 * reader processes query it.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "rbd_test.h"

static rbd_proc_t d;

/* Reserves filters named in names[] (NULL-ended) with default params. */
static void reserve_all(rb_conn_t *c, const char *const *names)
{
    for (; *names != NULL; names++)
        rbd_expect(c, "OK", "BF.RESERVE", *names, "0.01", "100");
}

START_TEST(test_keys_commands_as_redis)
{
    static const char *const names[] = { "a1", "a2", "b1", "a[x", "hello", "hallo", "hxllo",
                                         "heeeello", NULL };
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "0", "DBSIZE");
    rbd_expect(c, "", "KEYS", "*");
    reserve_all(c, names);
    rbd_expect(c, "8", "DBSIZE");
    /* Redis's glob: *, ?, [..], [^..], ranges, \ escapes. */
    rbd_expect(c, "a1\na2\na[x", "KEYS", "a*");
    rbd_expect(c, "hello\nhallo\nhxllo", "KEYS", "h?llo");
    rbd_expect(c, "hello\nhallo", "KEYS", "h[ae]llo");
    rbd_expect(c, "hxllo", "KEYS", "h[^e-a]llo");   /* a range given backwards */
    rbd_expect(c, "hello\nheeeello", "KEYS", "h*e*llo");
    rbd_expect(c, "a[x", "KEYS", "a\\[*");
    rbd_expect(c, "a1\nb1", "KEYS", "[ab]1");
    rbd_expect(c, "", "KEYS", "A*");                 /* case matters */
    rbd_expect(c, "MBbloom--", "TYPE", "a1");
    rbd_expect(c, "none", "TYPE", "zz");
    rbd_expect(c, "3", "EXISTS", "a1", "a1", "zz", "b1");
    /* DEL counts each filter once; UNLINK is the same. */
    rbd_expect(c, "2", "DEL", "a1", "zz", "a1", "a2");
    rbd_expect(c, "0", "EXISTS", "a1", "a2");
    rbd_expect(c, "1", "UNLINK", "b1");
    rbd_expect(c, "5", "DBSIZE");
    rbd_expect(c, "0", "BF.EXISTS", "a1", "x");
    rbd_expect(c, "ERR not found", "BF.INFO", "a1");
    /* The name is free again: BF.ADD makes a new, empty filter. */
    rbd_expect(c, "1", "BF.ADD", "a1", "x");
    rbd_expect(c, "1", "BF.CARD", "a1");
    rb_conn_close(c);
}
END_TEST

/* SCAN: a cursor over directory slots (rb_bloom_scan); MATCH, COUNT and
 * TYPE as Redis's; the walk returns each filter once. */
START_TEST(test_keys_scan_options)
{
    static const char *const names[] = { "s0", "s1", "s2", "s3", "s4", "t5", NULL };
    char buf[4096];
    rb_conn_t *c;

    rbd_start(&d, "max-filters 8");
    c = rbd_connect(&d);
    reserve_all(c, names);
    rbd_expect(c, "1", "DEL", "s2");
    /* 8 slots, 3 a step: cursors 3, 6, then 0. */
    rbd_expect(c, "3\ns0\ns1", "SCAN", "0", "COUNT", "3");
    rbd_expect(c, "6\ns3\ns4\nt5", "SCAN", "3", "COUNT", "3");
    rbd_expect(c, "0\n", "SCAN", "6", "COUNT", "3");
    rbd_expect(c, "0\ns0\ns1\ns3\ns4\nt5", "SCAN", "0");   /* COUNT 10 > 8 slots */
    rbd_expect(c, "0\nt5", "SCAN", "0", "MATCH", "t*");
    rbd_expect(c, "0\ns0\ns1\ns3\ns4\nt5", "SCAN", "0", "TYPE", "mbbloom--");
    rbd_expect(c, "0\n", "SCAN", "0", "TYPE", "string");
    rbd_expect(c, "0\n", "SCAN", "99");                   /* past the directory */
    rbd_expect(c, "0\ns1", "SCAN", "0", "MATCH", "s1", "COUNT", "100", "TYPE", "MBbloom--");
    /* redis-cli parses the replies (and walks SCAN by itself). */
    if (system("redis-cli --version >/dev/null 2>&1") == 0) {
        char cmd[1024];
        FILE *p;
        size_t n;
        snprintf(cmd, sizeof(cmd), "redis-cli -s %s --scan --pattern 's*' | sort | tr '\\n' ' '; "
                 "redis-cli -s %s DBSIZE; redis-cli -s %s TYPE t5; redis-cli -s %s DEL t5 s0 nope",
                 d.sock, d.sock, d.sock, d.sock);
        p = popen(cmd, "r");
        ck_assert_ptr_nonnull(p);
        n = fread(buf, 1, sizeof(buf) - 1, p);
        buf[n] = '\0';
        ck_assert_int_eq(pclose(p), 0);
        ck_assert_str_eq(buf, "s0 s1 s3 s4 5\nMBbloom--\n2\n");
    } else {
        fprintf(stderr, "check_keys: redis-cli not found, its part of scan_options skipped\n");
    }
    rb_conn_close(c);
}
END_TEST

/* The state both restarts must find: a and c as they were, b made again
 * (fresh: its old key gone, its new one there), d deleted. */
static void make_history(rb_conn_t *c)
{
    rbd_expect(c, "1", "BF.ADD", "a", "ka");
    rbd_expect(c, "1", "BF.ADD", "b", "old");
    rbd_expect(c, "1", "BF.ADD", "c", "kc");
    rbd_expect(c, "1", "BF.ADD", "d", "kd");
    rbd_expect(c, "2", "DEL", "b", "d");
    rbd_expect(c, "OK", "BF.RESERVE", "b", "0.001", "50", "NONSCALING");
    rbd_expect(c, "1", "BF.ADD", "b", "new");
}

static void assert_history(void)
{
    rb_conn_t *c = rbd_connect(&d);

    rbd_expect(c, "a\nb\nc", "KEYS", "*");
    rbd_expect(c, "3", "DBSIZE");
    rbd_expect(c, "1", "BF.EXISTS", "a", "ka");
    rbd_expect(c, "0", "BF.EXISTS", "b", "old");
    rbd_expect(c, "1", "BF.EXISTS", "b", "new");
    rbd_expect(c, "50", "BF.INFO", "b", "CAPACITY");
    rbd_expect(c, "0", "EXISTS", "d");
    /* The freed slot and memory are usable after the restart too. */
    rbd_expect(c, "1", "BF.ADD", "d", "again");
    rbd_expect(c, "1", "DEL", "d");
    rb_conn_close(c);
}

/* Every kind through the kind table: TYPE, EXISTS, SCAN TYPE, INFO's
 * count of each kind and DEL answer one of each alike, and the DELs of
 * every kind replay from the log (one record type for all). */
START_TEST(test_keys_every_kind_from_the_table)
{
    static const struct { const char *name, *type, *info; } k[] = {
        { "bf", "MBbloom--", "filters_bloom:1\r\n" },
        { "pf", "string", "filters_hyperloglog:1\r\n" },
        { "cm", "CMSk-TYPE", "filters_cms:1\r\n" },
        { "cf", "MBbloomCF", "filters_cuckoo:1\r\n" },
    };
    rb_conn_t *c;
    const char *info;
    char want[16];
    int rc;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "bf", "0.01", "100");
    rbd_expect(c, "1", "PFADD", "pf", "x");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "cm", "64", "4");
    rbd_expect(c, "OK", "CF.RESERVE", "cf", "64");
    for (size_t i = 0; i < 4; i++) {
        info = rbd_cmd(c, &rc, "INFO", "bloom", (const char *)NULL);
        ck_assert_ptr_nonnull(strstr(info, k[i].info));
        rbd_expect(c, k[i].type, "TYPE", k[i].name);
        rbd_expect(c, "1", "EXISTS", k[i].name);
        snprintf(want, sizeof(want), "0\n%s", k[i].name);
        rbd_expect(c, want, "SCAN", "0", "COUNT", "1000", "TYPE", k[i].type);
    }
    rbd_expect(c, "0\ncf", "SCAN", "0", "COUNT", "1000", "TYPE", "mbbloomcf");
    rbd_expect(c, "0\n", "SCAN", "0", "COUNT", "1000", "TYPE", "nosuchtype");
    rbd_expect(c, "4", "DEL", "bf", "pf", "cm", "cf", "bf");
    rbd_expect(c, "0", "DBSIZE");
    rbd_expect(c, "1", "PFADD", "bf", "y");   /* a name freed by DEL takes any kind */
    rb_conn_close(c);
    rbd_restart_cold(&d);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "DBSIZE");
    rbd_expect(c, "string", "TYPE", "bf");
    info = rbd_cmd(c, &rc, "INFO", "bloom", (const char *)NULL);
    ck_assert_ptr_nonnull(strstr(info, "filters_bloom:0\r\nfilters_hyperloglog:1\r\n"));
    rb_conn_close(c);
}
END_TEST

/* Restored from no snapshot: every DEL is replayed from the log. */
START_TEST(test_keys_delete_replayed_from_log)
{
    rb_conn_t *c;

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    make_history(c);
    rb_conn_close(c);
    rbd_restart_cold(&d);   /* no re-attach: a replay */
    /* 4 BF.ADDs of new filters (a reserve and an add each), 2 DELs, a
     * reserve and an add. */
    ck_assert_int_eq(rbd_log_count(&d, ", 12 log records replayed"), 1);
    assert_history();
}
END_TEST

/* Restored from a snapshot taken after the deletes (the log it replaced
 * is gone): the snapshot holds the freed slots. */
START_TEST(test_keys_delete_kept_by_snapshot)
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

/* FLUSHALL / FLUSHDB (issue 42, item 11): every filter of every kind
 * deleted in one op, the ring kept (no key), a reader's attached segment
 * sees every name gone; an argument other than ASYNC / SYNC refused with
 * nothing deleted; the daemon's log names who asked; a cold restart
 * (snapshot before, the FLUSHALL's record replayed) finds the same. */
START_TEST(test_keys_flushall_every_kind_replayed)
{
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_conn_t *c;
    char line[64];

    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "n1");
    rbd_expect(c, "1", "BF.ADD", "bf", "x");
    rbd_expect(c, "OK", "SAVE");   /* the filters before the FLUSHALL come from the snapshot */
    rbd_expect(c, "1", "PFADD", "pf", "x");
    rbd_expect(c, "OK", "CMS.INITBYDIM", "cm", "64", "4");
    rbd_expect(c, "OK", "CF.RESERVE", "cf", "64");
    rbd_expect(c, "OK", "CBF.RESERVE", "cb", "0.01", "100");
    rbd_expect(c, "5", "DBSIZE");
    seg = rbd_attach(&d);
    ck_assert_int_eq(rb_bloom_open(seg, "bf", 2, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, "x", 1), 1);
    rbd_expect(c, "ERR syntax error", "FLUSHALL", "LATER");
    rbd_expect(c, "ERR syntax error", "FLUSHDB", "ASYNC", "SYNC");
    rbd_expect(c, "5", "DBSIZE");
    rbd_expect(c, "OK", "FLUSHALL");
    rbd_expect(c, "0", "DBSIZE");
    rbd_expect(c, "", "KEYS", "*");
    ck_assert_int_ne(rb_bloom_contains(bf, "x", 1), 1);   /* the reader's filter is gone */
    rb_bloom_close(bf);
    rb_segment_close(seg);
    rbd_expect(c, "n1\n1", "RING.NODES");
    snprintf(line, sizeof(line), "FLUSHALL by uid %u pid ", (unsigned)getuid());
    ck_assert_int_eq(rbd_log_count(&d, line), 1);
    rbd_expect(c, "OK", "FLUSHDB", "ASYNC");   /* nothing left: logs no record */
    rbd_expect(c, "1", "BF.ADD", "after", "y");
    rb_conn_close(c);
    rbd_restart_cold(&d);   /* the snapshot, then the log: the FLUSHALL replayed */
    c = rbd_connect(&d);
    rbd_expect(c, "after", "KEYS", "*");
    rbd_expect(c, "1", "BF.EXISTS", "after", "y");
    rbd_expect(c, "n1\n1", "RING.NODES");
    rbd_expect(c, "OK", "FLUSHDB", "SYNC");
    rbd_expect(c, "0", "DBSIZE");
    rb_conn_close(c);
    rbd_restart_cold(&d);
    c = rbd_connect(&d);
    rbd_expect(c, "0", "DBSIZE");
    rbd_expect(c, "n1\n1", "RING.NODES");
    rb_conn_close(c);
    printf("FLUSHALL: 5 filters of 5 kinds deleted, ring kept, 2 cold restarts alike\n");
}
END_TEST

/* ---- deletes under readers ------------------------------------------------------- */

#define READERS      3
#define EPOCH_KEYS   1500        /* capacity 1000: the filter scales to a second layer */
#define CHURN_MS     8000

/* Shared with the readers: stable = 2E while epoch E's keys are
 * acknowledged in the live filter "f"; odd while "f" is deleted and made
 * again.  Counts per reader. */
typedef struct churn {
    _Atomic uint64_t stable;
    _Atomic uint64_t stop;
    _Atomic uint64_t checks[READERS], misses[READERS], enoent[READERS];
} churn_t;

static int epoch_key(char *buf, size_t cap, uint64_t epoch, unsigned long i)
{
    return snprintf(buf, cap, "e%llu-k%lu", (unsigned long long)epoch, i);
}

/* A reader process: queries keys of the epoch it sees stable; a key that
 * is not found while the epoch stayed stable around the query is a false
 * negative. */
static void reader(churn_t *ch, int id)
{
    rb_segment_t *seg;
    rb_bloom_t *bf = NULL;
    unsigned long x = (unsigned long)id * 7919u + 1;
    char key[64];

    if (rb_segment_attach(d.inst, 0, &seg) != RB_OK)
        _exit(2);
    while (!atomic_load(&ch->stop)) {
        uint64_t s1 = atomic_load(&ch->stable), s2;
        int len, r;
        if (s1 == 0 || (s1 & 1))
            continue;
        if (bf == NULL && rb_bloom_open(seg, "f", 1, &bf) != RB_OK) {
            bf = NULL;
            continue;
        }
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        len = epoch_key(key, sizeof(key), s1 / 2, (x >> 33) % EPOCH_KEYS);
        r = rb_bloom_contains(bf, key, (size_t)len);
        s2 = atomic_load(&ch->stable);
        if (s1 != s2)
            continue;   /* the filter may have been deleted meanwhile */
        atomic_fetch_add(&ch->checks[id], 1);
        if (r == 0)
            atomic_fetch_add(&ch->misses[id], 1);
        else if (r != 1)
            atomic_fetch_add(&ch->enoent[id], 1);
    }
    rb_bloom_close(bf);
    rb_segment_close(seg);
    _exit(0);
}

static void add_epoch(rb_conn_t *c, uint64_t epoch)
{
    static char keys[EPOCH_KEYS][32];
    static rb_key_t k[EPOCH_KEYS];

    for (unsigned long i = 0; i < EPOCH_KEYS; i++) {
        k[i].ptr = keys[i];
        k[i].len = (size_t)epoch_key(keys[i], sizeof(keys[i]), epoch, i);
    }
    ck_assert_int_ge(rb_conn_bf_add_many(c, "f", 1, k, EPOCH_KEYS, NULL), 0);
}

/* Filter "f" deleted and made again (its slot and arrays reused, other
 * sizes every other time) for CHURN_MS while READERS processes query it:
 * no reader crashes, and none misses a key of a filter that was live and
 * acknowledged it throughout the query. */
START_TEST(test_keys_delete_under_readers)
{
    churn_t *ch = mmap(NULL, sizeof(*ch), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                       -1, 0);
    uint64_t epoch = 0, checks = 0, misses = 0, enoent = 0;
    pid_t pids[READERS];
    struct timespec t0, t;
    rb_conn_t *c;

    ck_assert_ptr_ne(ch, MAP_FAILED);
    memset(ch, 0, sizeof(*ch));
    rbd_start(&d, "save-seconds 0");
    c = rbd_connect(&d);
    for (int i = 0; i < READERS; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0)
            reader(ch, i);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        epoch++;
        atomic_store(&ch->stable, 2 * epoch - 1);
        if (epoch > 1)
            rbd_expect(c, "1", "DEL", "f");
        if (epoch % 2)
            rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "1000");
        else
            rbd_expect(c, "OK", "BF.RESERVE", "f", "0.001", "700", "LAYOUT", "standard");
        add_epoch(c, epoch);
        atomic_store(&ch->stable, 2 * epoch);
        usleep(20000);   /* let the readers query this epoch */
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < CHURN_MS);
    atomic_store(&ch->stop, 1);
    for (int i = 0; i < READERS; i++) {
        int status;
        ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "reader %d ended with status %#x", i, status);
        checks += atomic_load(&ch->checks[i]);
        misses += atomic_load(&ch->misses[i]);
        enoent += atomic_load(&ch->enoent[i]);
    }
    fprintf(stderr, "delete under readers: %llu epochs (delete + reserve + %d adds), "
            "%llu checks, %llu false negatives, %llu errors\n", (unsigned long long)epoch,
            EPOCH_KEYS, (unsigned long long)checks, (unsigned long long)misses,
            (unsigned long long)enoent);
    ck_assert_uint_ge(epoch, 20);
    ck_assert_uint_ge(checks, 1000);
    ck_assert_uint_eq(misses, 0);
    ck_assert_uint_eq(enoent, 0);
    rb_conn_close(c);
    munmap(ch, sizeof(*ch));
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("keys",
                        RB_TCASE("commands", 30, NULL, rbd_teardown,
                                 test_keys_commands_as_redis, test_keys_every_kind_from_the_table,
                                 test_keys_scan_options),
                        RB_TCASE("persistence", 30, NULL, rbd_teardown,
                                 test_keys_delete_replayed_from_log,
                                 test_keys_delete_kept_by_snapshot,
                                 test_keys_flushall_every_kind_replayed),
                        RB_TCASE("readers", 40, NULL, rbd_teardown,
                                 test_keys_delete_under_readers));
}
