/*
 * check_fleet.c - `ring-source etcd` end to end: a real 3-member etcd
 * cluster on loopback (tests/harness/etcd_cluster.c) and three ringbloomd
 * standing for three hosts (their own instances, state directories and
 * sockets), one etcd prefix.  1,000 random ring changes sent to random
 * daemons; afterwards the three published tables are identical (the
 * membership and 20,000 lookups through each one's segment) and equal to
 * the table a lone local daemon builds from the final membership; the
 * time until every host applied a change is printed (p50 / p99 / max).
 * Then the outages: one etcd member killed (changes still go through),
 * two (changes refused with the documented error, lookups go on with the
 * last table), both back (every host converges, no ringbloomd restarted),
 * a ringbloomd killed during changes (converges after its restart), and
 * two daemons changing one node at once (one outcome everywhere, the
 * loser told CONFLICT); keys another tool wrote that the daemons cannot
 * use (a NUL byte, a value that does not parse: skipped, named, counted,
 * the watch goes on; each host logs the revisions it applies, and the
 * one asked who asked); the table's age across restarts while etcd is
 * unreachable; and TLS with client certificates and etcd's
 * authentication, right and wrong.  Skipped (exit 77) without etcd
 * (etcd-server).
 */
#include "config.h"

#include <pthread.h>

#include "etcd_cluster.h"
#include "rbd_test.h"

#define HOSTS   3
#define POOL    60      /* node names node-000 .. node-059 */
#define CHANGES 1000
#define PROBES  20000

static rb_etcd_cluster_t cl;
static rbd_proc_t d[HOSTS], lone;
static rb_conn_t *c[HOSTS];
static int away = -1;           /* a host not running now: changes go elsewhere */

typedef struct model {          /* what the test has made the membership */
    int present[POOL];
    unsigned weight[POOL], state[POOL];   /* state: 0 up, 1 down, 2 drain */
} model_t;

static const char *const state_cmd[] = { "RING.UP", "RING.DOWN", "RING.DRAIN" };

static uint64_t st_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The etcd cluster and the hosts, each with the configuration lines more
 * (NULL: none) besides the fleet's. */
static void fleet_start_with(const char *more)
{
    char extra[1024];

    ck_assert_msg(rb_etcd_start(&cl, 3, 60000) == 0, "the etcd cluster did not start");
    snprintf(extra, sizeof(extra), "ring-source etcd\netcd-endpoints %s %s %s\n"
             "etcd-prefix /fleet/\netcd-timeout 1000\nappendfsync no\n"
             "ring-down-max-percent 100\n%s", cl.url[0], cl.url[1],
             cl.url[2], more != NULL ? more : "");
    for (int i = 0; i < HOSTS; i++) {
        rbd_start(&d[i], extra);
        c[i] = rbd_connect(&d[i]);
    }
}

static void fleet_start(void)
{
    fleet_start_with(NULL);
}

static void fleet_stop(void)
{
    for (int i = 0; i < HOSTS; i++) {
        if (c[i] != NULL)
            rb_conn_close(c[i]);
        c[i] = NULL;
    }
    rbd_teardown();
    rb_etcd_stop(&cl);
}

/* The etcd revision host i's published table is of (RING.INFO). */
static long long applied(int i)
{
    int rc;
    const char *got = rbd_cmd(c[i], &rc, "RING.INFO", (const char *)NULL);
    const char *at = strstr(got, "Source revision\n");

    ck_assert_msg(rc == RB_OK && at != NULL, "RING.INFO: %s", got);
    return atoll(at + 16);
}

/* The newest revision a host applied (the one that took the last change
 * applied it before it answered). */
static long long max_applied(void)
{
    long long mx = 0;

    for (int i = 0; i < HOSTS; i++)
        if (applied(i) > mx)
            mx = applied(i);
    return mx;
}

/* Milliseconds until every host applied revision rev (fails past 15 s). */
static uint64_t converge(long long rev)
{
    uint64_t t0 = rb_test_now_ms();

    for (int i = 0; i < HOSTS; i++)
        while (applied(i) < rev) {
            ck_assert_msg(rb_test_now_ms() - t0 < 15000, "host %d stuck below revision %lld", i,
                          rev);
            usleep(500);
        }
    return rb_test_now_ms() - t0;
}

/* Sends one change to host h until it is taken: a host that has not yet
 * applied another host's change to the same node answers CONFLICT or "no
 * such node" / "node exists", and while etcd elects a leader (a member
 * killed) "ERR ring-source etcd: ..."; both are retried (the latter for
 * at most 15 s).  The retries. */
static int change(int h, const char *cmd, const char *name, const char *arg)
{
    uint64_t t0 = rb_test_now_ms();

    for (int tries = 0;; tries++) {
        int rc, lag, down;
        const char *got = arg != NULL ? rbd_cmd(c[h], &rc, cmd, name, arg, (const char *)NULL)
                                      : rbd_cmd(c[h], &rc, cmd, name, (const char *)NULL);
        if (strcmp(got, "OK") == 0)
            return tries;
        lag = strncmp(got, "CONFLICT", 8) == 0 || strncmp(got, "ERR node exists", 15) == 0 ||
              strncmp(got, "ERR no such node", 16) == 0;
        down = strncmp(got, "ERR ring-source etcd: ", 22) == 0 &&
               rb_test_now_ms() - t0 < 15000;
        ck_assert_msg((lag && tries < 200) || down, "%s %s on host %d: %s", cmd, name, h, got);
        usleep(down ? 100000 : 2000);
    }
}

/* One random change to the model, sent to a random host. */
static int random_change(model_t *m, uint64_t *x)
{
    unsigned k = (unsigned)(st_next(x) % POOL), what = (unsigned)(st_next(x) % 4);
    int h = (int)(st_next(x) % HOSTS);
    char name[16], w[8];

    if (h == away)
        h = (h + 1) % HOSTS;
    snprintf(name, sizeof(name), "node-%03u", k);
    if (!m->present[k]) {
        m->present[k] = 1;
        m->weight[k] = 1 + (unsigned)(st_next(x) % 5);
        m->state[k] = 0;
        snprintf(w, sizeof(w), "%u", m->weight[k]);
        return change(h, "RING.ADD", name, w);
    }
    if (what == 0) {
        m->present[k] = 0;
        return change(h, "RING.REMOVE", name, NULL);
    }
    if (what == 1) {
        m->weight[k] = 1 + (unsigned)(st_next(x) % 5);
        snprintf(w, sizeof(w), "%u", m->weight[k]);
        return change(h, "RING.WEIGHT", name, w);
    }
    m->state[k] = (unsigned)(st_next(x) % 3);
    return change(h, state_cmd[m->state[k]], name, NULL);
}

/* The owner of each of PROBES keys in the table published in seg, by
 * name, into out (PROBES x 32 bytes). */
static void lookups(rb_segment_t *seg, char (*out)[32])
{
    for (int i = 0; i < PROBES; i++) {
        char key[32];
        rb_node_t n;
        int len = snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_int_eq(rb_ring_lookup(seg, key, (size_t)len, &n), RB_OK);
        snprintf(out[i], 32, "%.*s", (int)n.name_len, n.name);
    }
}

/* Every host's table is the same: membership (with weights and states)
 * and PROBES lookups through its segment; that of host 0 into the
 * caller's lk and nodes. */
static void assert_same_tables(char (*lk)[32], char *nodes, size_t cap)
{
    static char other[PROBES][32];
    int rc;

    snprintf(nodes, cap, "%s", rbd_cmd(c[0], &rc, "RING.NODES", "WITHSTATES", (const char *)NULL));
    for (int i = 0; i < HOSTS; i++) {
        rb_segment_t *seg = rbd_attach(&d[i]);
        ck_assert_str_eq(rbd_cmd(c[i], &rc, "RING.NODES", "WITHSTATES", (const char *)NULL), nodes);
        lookups(seg, i == 0 ? lk : other);
        for (int k = 0; i > 0 && k < PROBES; k++)
            if (strcmp(lk[k], other[k]) != 0)
                ck_abort_msg("key-%d: host 0 says %s, host %d %s", k, lk[k], i, other[k]);
        rb_segment_close(seg);
    }
}

/* A lone daemon with a local ring given the final membership, in name
 * order, gives the same lookups. */
static void assert_lone_equal(const model_t *m, char (*lk)[32])
{
    static char mine[PROBES][32];
    rb_conn_t *lc;
    rb_segment_t *seg;

    rbd_start(&lone, "ring-down-max-percent 100");   /* the model's states, any share */
    lc = rbd_connect(&lone);
    for (unsigned k = 0; k < POOL; k++) {
        char name[16], w[8];
        if (!m->present[k])
            continue;
        snprintf(name, sizeof(name), "node-%03u", k);
        snprintf(w, sizeof(w), "%u", m->weight[k]);
        rbd_expect(lc, "OK", "RING.ADD", name, w);
        if (m->state[k] != 0)
            rbd_expect(lc, "OK", state_cmd[m->state[k]], name);
    }
    seg = rbd_attach(&lone);
    lookups(seg, mine);
    for (int k = 0; k < PROBES; k++)
        if (strcmp(lk[k], mine[k]) != 0)
            ck_abort_msg("key-%d: the fleet says %s, a lone daemon %s", k, lk[k], mine[k]);
    rb_segment_close(seg);
    rb_conn_close(lc);
    rbd_stop(&lone, SIGTERM);
    rbd_remove_all(&lone);
}

static int u64cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

START_TEST(test_fleet_1000_changes_converge_to_one_table)
{
    static char lk[PROBES][32];
    static uint64_t ms[CHANGES];
    char nodes[8192];
    model_t m = { { 0 }, { 0 }, { 0 } };
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    long retries = 0;

    fleet_start();
    for (int i = 0; i < CHANGES; i++) {
        retries += random_change(&m, &x);
        /* The host that answered had applied it; the others follow. */
        ms[i] = converge(max_applied());
    }
    qsort(ms, CHANGES, sizeof(ms[0]), u64cmp);
    printf("fleet: %d changes, %ld retried after a host lagged; every host applied each "
           "within p50 %llu ms, p99 %llu ms, max %llu ms; revision %lld\n", CHANGES, retries,
           (unsigned long long)ms[CHANGES / 2], (unsigned long long)ms[CHANGES * 99 / 100],
           (unsigned long long)ms[CHANGES - 1], applied(0));
    assert_same_tables(lk, nodes, sizeof(nodes));
    assert_lone_equal(&m, lk);
    fleet_stop();
}
END_TEST

typedef struct racer {
    int h;
    const char *weight;
    char reply[1024];
    uint64_t ms;                /* how long the command took */
} racer_t;

/* Runs argv on host r->h through a connection of its own, the reply text
 * into r (not rbd_cmd: its buffer is one for every thread). */
static void racer_run(racer_t *r, size_t argc, const char *const *argv)
{
    size_t argl[3];
    rb_conn_t *conn;
    uint64_t t0 = rb_test_now_ms();

    for (size_t i = 0; i < argc; i++)
        argl[i] = strlen(argv[i]);
    if (rb_conn_open(NULL, d[r->h].sock, 10000, &conn) != RB_OK) {
        snprintf(r->reply, sizeof(r->reply), "(no connection)");
        return;
    }
    r->reply[0] = '\0';
    /* An error reply's text is in the buffer too (RB_EREPLY). */
    if (rb_conn_command(conn, argc, argv, argl, r->reply, sizeof(r->reply)) < 0 &&
        r->reply[0] == '\0')
        snprintf(r->reply, sizeof(r->reply), "(no reply)");
    r->ms = rb_test_now_ms() - t0;
    rb_conn_close(conn);
}

/* RING.ADD late on host r->h. */
static void *add_main(void *arg)
{
    const char *argv[2] = { "RING.ADD", "late" };

    racer_run(arg, 2, argv);
    return NULL;
}

/* Host 0's INFO field (its value, static). */
static const char *info(int h, const char *field)
{
    static char v[256];
    int rc;
    const char *got = rbd_cmd(c[h], &rc, "INFO", "ring", (const char *)NULL);
    const char *at = strstr(got, field);

    ck_assert_msg(at != NULL, "INFO has no %s: %s", field, got);
    at += strlen(field) + 1;
    snprintf(v, sizeof(v), "%.*s", (int)strcspn(at, "\r\n"), at);
    return v;
}

START_TEST(test_fleet_outages)
{
    model_t m = { { 0 }, { 0 }, { 0 } };
    uint64_t x = 42, t0;
    rb_segment_t *seg;
    rb_node_t n;

    fleet_start();
    for (int i = 0; i < 50; i++)
        random_change(&m, &x);
    /* One member down: the quorum holds, changes go through. */
    rb_etcd_kill(&cl, 0);
    for (int i = 0; i < 20; i++)
        random_change(&m, &x);
    converge(max_applied());
    /* Two down: refused, with why, in bounded time; readers go on, and so
     * does the daemon's loop while etcd is being asked. */
    rb_etcd_kill(&cl, 1);
    {
        racer_t late = { 1, NULL, "", 0 };
        pthread_t th;
        uint64_t worst = 0;
        rb_conn_t *other = rbd_connect(&d[1]);
        t0 = rb_test_now_ms();
        pthread_create(&th, NULL, add_main, &late);
        while (rb_test_now_ms() - t0 < 1500) {
            uint64_t t1 = rb_test_now_ms();
            rbd_expect(other, "PONG", "PING");
            worst = rb_test_now_ms() - t1 > worst ? rb_test_now_ms() - t1 : worst;
        }
        pthread_join(th, NULL);
        rb_conn_close(other);
        ck_assert_msg(strncmp(late.reply, "ERR ring-source etcd: ", 22) == 0, "with no quorum: %s",
                      late.reply);
        printf("fleet: with 2 of 3 etcd members down a change was refused after %llu ms "
               "(meanwhile PING answered within %llu ms): %s\n",
               (unsigned long long)late.ms, (unsigned long long)worst, late.reply);
        ck_assert_uint_lt(late.ms, 10000);
        ck_assert_uint_lt(worst, 500);
    }
    seg = rbd_attach(&d[2]);
    ck_assert_int_eq(rb_ring_lookup(seg, "some key", 8, &n), RB_OK);
    t0 = rb_test_now_ms();
    while (strcmp(info(2, "etcd_connected"), "0") != 0)
        ck_assert_msg(rb_test_now_ms() - t0 < 15000, "host 2 still says etcd is connected");
    printf("fleet: host 2 saw etcd lost after %llu ms (INFO etcd_connected:0, last error: %s)\n",
           (unsigned long long)(rb_test_now_ms() - t0), info(2, "etcd_last_error"));
    ck_assert_int_eq(rb_ring_lookup(seg, "some key", 8, &n), RB_OK);
    /* Both back: every host converges, no ringbloomd restarted. */
    ck_assert_int_eq(rb_etcd_restart(&cl, 0), 0);
    ck_assert_int_eq(rb_etcd_restart(&cl, 1), 0);
    ck_assert_int_eq(rb_etcd_wait_healthy(&cl, 30000), 0);
    t0 = rb_test_now_ms();
    while (strcmp(info(1, "etcd_connected"), "1") != 0)
        ck_assert_msg(rb_test_now_ms() - t0 < 30000, "host 1 did not reconnect");
    for (int i = 0; i < 20; i++)
        random_change(&m, &x);
    converge(max_applied());
    /* A ringbloomd killed during changes converges after its restart. */
    rbd_stop(&d[2], SIGKILL);
    rb_conn_close(c[2]);
    c[2] = NULL;
    away = 2;
    for (int i = 0; i < 30; i++)
        random_change(&m, &x);
    away = -1;
    rbd_launch(&d[2], NULL);
    c[2] = rbd_connect(&d[2]);
    printf("fleet: a ringbloomd restarted after 30 changes without it caught up in %llu ms\n",
           (unsigned long long)converge(max_applied()));
    rb_segment_close(seg);
    fleet_stop();
}
END_TEST


static void *race_main(void *arg)
{
    racer_t *r = arg;
    const char *argv[3] = { "RING.WEIGHT", "contested", r->weight };

    racer_run(r, 3, argv);
    return NULL;
}

/* A pipelined RING.ADD then RING.NODES: the second is answered after the
 * first (etcd answered it meanwhile) and sees its node. */
static void assert_pipeline_waits(void)
{
    static const char req[] = "*2\r\n$8\r\nRING.ADD\r\n$4\r\npipe\r\n"
                              "*1\r\n$10\r\nRING.NODES\r\n";
    char buf[4096] = "";
    size_t have = 0;
    int fd = rbd_raw_connect(&d[0]);
    uint64_t t0 = rb_test_now_ms();

    ck_assert_int_eq(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
    while (strstr(buf, "pipe\r\n") == NULL || have < 8) {
        ssize_t got = read(fd, buf + have, sizeof(buf) - 1 - have);
        ck_assert_int_gt(got, 0);
        have += (size_t)got;
        buf[have] = '\0';
        ck_assert_uint_lt(rb_test_now_ms() - t0, 10000);
    }
    ck_assert_msg(strncmp(buf, "+OK\r\n*", 6) == 0, "pipelined replies: %s", buf);
    close(fd);
}

/* Two hosts change one node at once: one outcome, the same everywhere;
 * when both could not be ordered (each had read the same revision), the
 * loser is told CONFLICT and its weight is not the result. */
START_TEST(test_fleet_same_node_at_once)
{
    int conflicts = 0;

    fleet_start();
    rbd_expect(c[0], "OK", "RING.ADD", "contested", "1");
    for (int t = 0; t < 20; t++) {
        racer_t a = { 1, "2", "", 0 }, b = { 2, "3", "", 0 };
        pthread_t ta, tb;
        char w[3][64];
        int rc;
        converge(max_applied());
        pthread_create(&ta, NULL, race_main, &a);
        pthread_create(&tb, NULL, race_main, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        converge(max_applied());
        for (int i = 0; i < HOSTS; i++)
            snprintf(w[i], sizeof(w[i]), "%s", rbd_cmd(c[i], &rc, "RING.NODES", (const char *)NULL));
        ck_assert_str_eq(w[0], w[1]);
        ck_assert_str_eq(w[0], w[2]);
        ck_assert_msg(strcmp(a.reply, "OK") == 0 || strcmp(b.reply, "OK") == 0,
                      "both lost: %s / %s", a.reply, b.reply);
        if (strcmp(a.reply, "OK") != 0 || strcmp(b.reply, "OK") != 0) {
            const racer_t *win = strcmp(a.reply, "OK") == 0 ? &a : &b;
            const racer_t *lose = win == &a ? &b : &a;
            char want[64];
            ck_assert_msg(strncmp(lose->reply, "CONFLICT ", 9) == 0, "loser: %s", lose->reply);
            snprintf(want, sizeof(want), "contested\n%s", win->weight);
            ck_assert_str_eq(w[0], want);
            conflicts++;
        }
        rbd_expect(c[0], "OK", "RING.WEIGHT", "contested", "1");
    }
    printf("fleet: 20 races of two hosts on one node: %d ended in a CONFLICT for one of them, "
           "every host the same after each\n", conflicts);
    ck_assert_int_gt(conflicts, 0);
    assert_pipeline_waits();
    fleet_stop();
}
END_TEST

/* Host h's RING.NODES, waiting (at most 15 s) until it is want. */
static void await_nodes(int h, const char *want)
{
    uint64_t t0 = rb_test_now_ms();
    int rc;
    const char *got;

    while (strcmp(got = rbd_cmd(c[h], &rc, "RING.NODES", (const char *)NULL), want) != 0) {
        ck_assert_msg(rb_test_now_ms() - t0 < 15000, "host %d: RING.NODES is '%s', not '%s'",
                      h, got, want);
        usleep(20000);
    }
}

/* Every host: RING.NODES becomes nodes (within 15 s), then INFO's
 * etcd_keys_skipped is skipped and its log has a line with logged (each
 * unless NULL). */
static void await_all(const char *nodes, const char *skipped, const char *logged)
{
    for (int h = 0; h < HOSTS; h++) {
        await_nodes(h, nodes);
        if (skipped != NULL)
            ck_assert_str_eq(info(h, "etcd_keys_skipped"), skipped);
        if (logged != NULL)
            ck_assert_msg(rbd_log_count(&d[h], logged) >= 1, "host %d logged no '%s'", h,
                          logged);
    }
}

/* A node whose value does not parse ("x up", "1 up" and a NUL) is
 * skipped on every host with a warning naming it and counted in INFO
 * (issue 25, item 12b); RING.ADD / REMOVE through a daemon replace or
 * delete it.  Its siblings: a mode the ring cannot take (skipped alike),
 * a node the ring cannot hold (left out alike); neither stops later
 * revisions from being applied. */
START_TEST(test_fleet_unparsable_value)
{
    fleet_start();
    rbd_expect(c[0], "OK", "RING.ADD", "a", "1");
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/bad", 15, "x up", 4), 0);
    rbd_expect(c[1], "OK", "RING.ADD", "c", "3");
    await_all("a\n1\nc\n3", NULL, "etcd key '/fleet/node/bad' (mod_revision");
    await_all("a\n1\nc\n3", "1", "its value 'x up' is not");
    /* A value with a NUL byte after what parses is not the value. */
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/junk", 16, "1 up\0", 5), 0);
    rbd_expect(c[2], "OK", "RING.WEIGHT", "c", "4");
    await_all("a\n1\nc\n4", "2", "etcd key '/fleet/node/junk'");
    printf("fleet: 2 node values that do not parse skipped on every host, e.g. %s\n",
           info(0, "etcd_last_skipped"));
    /* Through a daemon, RING.ADD replaces a skipped node key and
     * RING.REMOVE deletes one (not CONFLICT, not "no such node"). */
    rbd_expect(c[0], "OK", "RING.ADD", "bad", "2");
    rbd_expect(c[1], "OK", "RING.REMOVE", "junk");
    await_all("a\n1\nbad\n2\nc\n4", "0", NULL);
    ck_assert_str_eq(info(0, "etcd_last_skipped"), "");
    /* A mode the ring cannot take (maglev's size must be a prime): skipped
     * (the daemons' ring-mode applies), changes still applied; RING.MODE
     * replaces it. */
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/mode", 11, "maglev 4", 8), 0);
    rbd_expect(c[2], "OK", "RING.ADD", "d", "1");
    await_all("a\n1\nbad\n2\nc\n4\nd\n1", "1", "etcd key '/fleet/mode'");
    rbd_expect(c[0], "OK", "RING.MODE", "xxh3", "4096");
    for (int h = 0; h < HOSTS; h++) {
        uint64_t t0 = rb_test_now_ms();
        while (strcmp(info(h, "etcd_keys_skipped"), "0") != 0)
            ck_assert_msg(rb_test_now_ms() - t0 < 15000, "host %d: the mode is still skipped", h);
    }
    /* A node the ring cannot hold (65535 x 4096 points, more than
     * max-ring-points): left out on every host, and later revisions are
     * still applied. */
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/heavy", 17, "65535 up", 8), 0);
    rbd_expect(c[1], "OK", "RING.ADD", "e", "1");
    await_all("a\n1\nbad\n2\nc\n4\nd\n1\ne\n1", NULL,
              "more than max-ring-points");
    fleet_stop();
}
END_TEST

/* The limits of a local RING.ADD / RING.MODE guard the same change put in
 * etcd (issue 41, 10: "node/heavy1 = 65535 up" gave every host 10.5 M
 * points, ten times max-ring-points, and 3.7 s of CPU per rebuild): in
 * key order, a node over max-ring-points or max-nodes and a maglev table
 * over max-ring-points are left out on every host alike, each named in a
 * warning and counted; a daemon's RING.REMOVE deletes the node's key; a
 * node down past ring-down-max-percent is published up. */
START_TEST(test_fleet_limits_guard_etcd)
{
    long cpu0[HOSTS];

    fleet_start_with("max-nodes 4\nring-down-max-percent 50\n");
    rbd_expect(c[0], "OK", "RING.ADD", "a", "1");
    rbd_expect(c[1], "OK", "RING.ADD", "b", "1");
    await_all("a\n1\nb\n1", "0", NULL);
    for (int h = 0; h < HOSTS; h++)
        cpu0[h] = rbd_cpu_ms(d[h].pid);
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/heavy1", 18, "65535 up", 8), 0);
    rbd_expect(c[2], "OK", "RING.ADD", "c", "1");
    await_all("a\n1\nb\n1\nc\n1", "1", "etcd key '/fleet/node/heavy1' (mod_revision");
    await_all("a\n1\nb\n1\nc\n1", "1", "more than max-ring-points (1048576)");
    for (int h = 0; h < HOSTS; h++) {
        long used = rbd_cpu_ms(d[h].pid) - cpu0[h];
        printf("fleet: host %d: heavy1 left out, %ld ms of CPU from its put to the next "
               "revision applied\n", h, used);
        ck_assert_msg(used < 1500, "host %d used %ld ms of CPU", h, used);
    }
    /* max-nodes: x1 is the fourth node in key order, x2 would be a fifth. */
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/x1", 14, "1 up", 4), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/x2", 14, "1 up", 4), 0);
    rbd_expect(c[0], "OK", "RING.WEIGHT", "a", "2");
    await_all("a\n2\nb\n1\nc\n1\nx1\n1", "2", "more than max-nodes (4) nodes");
    printf("fleet: %s\n", info(0, "etcd_last_skipped"));
    /* A maglev table larger than max-ring-points: the hosts' ring-mode. */
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/mode", 11, "maglev 1048583", 14), 0);
    rbd_expect(c[1], "OK", "RING.WEIGHT", "b", "2");
    await_all("a\n2\nb\n2\nc\n1\nx1\n1", "3",
              "a table of 1048583 slots is more than max-ring-points");
    /* Through a daemon: RING.REMOVE deletes a left-out node's key, and the
     * next in key order takes its place. */
    rbd_expect(c[2], "OK", "RING.REMOVE", "heavy1");
    rbd_expect(c[2], "OK", "RING.REMOVE", "c");
    await_all("a\n2\nb\n2\nx1\n1\nx2\n1", "1", NULL);
    /* ring-down-max-percent 50 of 4 nodes: a and b down, x1's down (the
     * third in key order) published up. */
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/a", 13, "2 down", 6), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/b", 13, "2 down", 6), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/node/x1", 14, "1 down", 6), 0);
    rbd_expect(c[0], "OK", "RING.WEIGHT", "x2", "2");
    await_all("a\n2\nb\n2\nx1\n1\nx2\n2", "2",
              "past ring-down-max-percent (50%); published up");
    for (int h = 0; h < HOSTS; h++)
        ck_assert_str_eq(info(h, "ring_nodes_not_up"), "2");
    fleet_stop();
}
END_TEST

/* Keys with a NUL byte (issue 25, item 5): one outside the schema, a
 * node whose name holds one.  Each is skipped with a warning naming it
 * (escaped) and counted in INFO, and the watch and the initial load go
 * on: later changes reach every host, and a daemon started meanwhile
 * serves the ring, not an empty one.  A foreign key without one stays
 * silently ignored. */
START_TEST(test_fleet_foreign_keys)
{
    static const char *const nul_keys[] = { "/fleet/other\0tool", "/fleet/node/nul\0name" };
    static const size_t nul_lens[] = { 17, 20 };
    static const char *const all = "a\n1\nb\n2\nc\n3";
    rbd_proc_t late;
    rb_conn_t *lc;
    char extra[1024];
    uint64_t t0;
    const char *got;
    int rc;

    fleet_start();
    rbd_expect(c[0], "OK", "RING.ADD", "a", "1");
    rbd_expect(c[0], "OK", "RING.ADD", "b", "2");
    converge(max_applied());
    ck_assert_int_eq(rb_etcd_raw(&cl, nul_keys[0], nul_lens[0], "x", 1), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, nul_keys[1], nul_lens[1], "1 up", 4), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, "/fleet/some/tool", 16, "\xff", 1), 0);
    /* Changes after them still go through and reach every host. */
    rbd_expect(c[1], "OK", "RING.ADD", "c", "3");
    for (int h = 0; h < HOSTS; h++) {
        await_nodes(h, all);
        ck_assert_str_eq(info(h, "etcd_connected"), "1");
        ck_assert_str_eq(info(h, "etcd_keys_skipped"), "2");
        ck_assert_ptr_nonnull(strstr(info(h, "etcd_last_skipped"), "\\x00"));
        ck_assert_int_ge(rbd_log_count(&d[h], "etcd key '/fleet/other\\x00tool'"), 1);
        ck_assert_int_ge(rbd_log_count(&d[h], "etcd key '/fleet/node/nul\\x00name'"), 1);
        ck_assert_int_eq(rbd_log_count(&d[h], "/fleet/some/tool"), 0);   /* foreign: ignored */
        /* Every host logs the revisions it applies, "by etcd" (issue 28). */
        ck_assert_int_ge(rbd_log_count(&d[h], "ring change by etcd: revision "), 3);
    }
    /* The host a client asked logs who asked, once (issue 28). */
    snprintf(extra, sizeof(extra), "ring change sent to etcd: RING.ADD c 3 (uid %u, pid %d)",
             (unsigned)getuid(), (int)getpid());
    ck_assert_int_eq(rbd_log_count(&d[1], extra), 1);
    ck_assert_int_eq(rbd_log_count(&d[0], "ring change sent to etcd: RING.ADD c 3"), 0);
    printf("fleet: 2 keys with a NUL byte skipped on every host, e.g. %s\n",
           info(0, "etcd_last_skipped"));
    /* A daemon started now loads the prefix and serves the ring. */
    snprintf(extra, sizeof(extra), "ring-source etcd\netcd-endpoints %s %s %s\n"
             "etcd-prefix /fleet/\netcd-timeout 1000\n", cl.url[0], cl.url[1], cl.url[2]);
    rbd_start(&late, extra);
    lc = rbd_connect(&late);
    t0 = rb_test_now_ms();
    while (strcmp(got = rbd_cmd(lc, &rc, "RING.NODES", (const char *)NULL), all) != 0) {
        ck_assert_msg(rb_test_now_ms() - t0 < 15000, "a daemon started then serves '%s'", got);
        usleep(20000);
    }
    rb_conn_close(lc);
    /* Gone, they are no longer counted. */
    ck_assert_int_eq(rb_etcd_raw(&cl, nul_keys[0], nul_lens[0], NULL, 0), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, nul_keys[1], nul_lens[1], NULL, 0), 0);
    rbd_expect(c[2], "OK", "RING.REMOVE", "c");
    await_all("a\n1\nb\n2", "0", NULL);
    fleet_stop();
}
END_TEST

/* Host h's etcd_stale_seconds. */
static long stale(int h)
{
    return atol(info(h, "etcd_stale_seconds"));
}

/* A daemon restarted while etcd is unreachable reports the age of its
 * table (from its last confirmation, kept across the restart), not 0
 * (issue 25, item 12a): after a restart that attaches its segment, and
 * after one that rebuilds the table from the snapshot and the log. */
START_TEST(test_fleet_stale_across_restarts)
{
    uint64_t t0;
    long s0, s1, s2;
    int rc;

    fleet_start();
    rbd_expect(c[0], "OK", "RING.ADD", "a", "1");
    converge(max_applied());
    ck_assert_int_le(stale(0), 1);
    for (int i = 0; i < 3; i++)
        rb_etcd_kill(&cl, i);
    t0 = rb_test_now_ms();
    while (strcmp(info(0, "etcd_connected"), "0") != 0)
        ck_assert_msg(rb_test_now_ms() - t0 < 15000, "host 0 still says etcd is connected");
    while (rb_test_now_ms() - t0 < 4000)
        usleep(100000);
    s0 = stale(0);
    ck_assert_int_ge(s0, 4);
    /* A restart that attaches the segment. */
    rb_conn_close(c[0]);
    rbd_stop(&d[0], SIGTERM);
    rbd_launch(&d[0], NULL);
    c[0] = rbd_connect(&d[0]);
    s1 = stale(0);
    ck_assert_str_eq(info(0, "etcd_connected"), "0");
    ck_assert_msg(s1 >= s0, "after a restart etcd_stale_seconds is %ld, before it %ld", s1, s0);
    /* One that rebuilds the table from the snapshot and the log. */
    rb_conn_close(c[0]);
    rbd_restart_cold(&d[0]);
    c[0] = rbd_connect(&d[0]);
    s2 = stale(0);
    ck_assert_msg(s2 >= s1, "after a cold restart etcd_stale_seconds is %ld, before it %ld", s2,
                  s1);
    ck_assert_str_eq(rbd_cmd(c[0], &rc, "RING.NODES", (const char *)NULL), "a\n1");
    printf("fleet: etcd unreachable, the table %ld s old; after a restart %ld s, after a cold "
           "one %ld s\n", s0, s1, s2);
    fleet_stop();
}
END_TEST

/* A daemon for the lone member of cl with the settings extra; its reply
 * to RING.ADD name (within 15 s: the source's first contact). */
static const char *add_through(rbd_proc_t *dp, const char *extra, const char *name)
{
    static char got[1024];
    char conf[2048];
    uint64_t t0 = rb_test_now_ms();
    rb_conn_t *cc;
    int rc;

    snprintf(conf, sizeof(conf), "ring-source etcd\netcd-endpoints %s\netcd-prefix /sec/\n"
             "etcd-timeout 1000\n%s", cl.url[0], extra);
    rbd_start(dp, conf);
    cc = rbd_connect(dp);
    do {
        snprintf(got, sizeof(got), "%s", rbd_cmd(cc, &rc, "RING.ADD", name, (const char *)NULL));
        if (strcmp(got, "OK") != 0)
            usleep(200000);
    } while (strcmp(got, "OK") != 0 && rb_test_now_ms() - t0 < 15000);
    rb_conn_close(cc);
    return got;
}

/* TLS with client certificates, then etcd's authentication: a daemon
 * given the right files or password makes changes; one without is
 * refused with why. */
START_TEST(test_fleet_tls_and_auth)
{
    char extra[1024];
    rbd_proc_t a, b;
    const char *got;

    ck_assert_msg(rb_etcd_start_tls(&cl, 1, 60000) == 0, "the TLS etcd did not start");
    snprintf(extra, sizeof(extra), "etcd-cacert %s\netcd-cert %s\netcd-key %s\n", cl.ca,
             cl.cert, cl.key);
    ck_assert_str_eq(add_through(&a, extra, "tls-node"), "OK");
    snprintf(extra, sizeof(extra), "etcd-cacert %s\n", cl.ca);   /* no client certificate */
    got = add_through(&b, extra, "other");
    ck_assert_msg(strncmp(got, "ERR ring-source etcd: ", 22) == 0, "without a cert: %s", got);
    printf("fleet: TLS: with the client certificate OK; without: %s\n", got);
    rbd_teardown();
    rb_etcd_stop(&cl);
    ck_assert_msg(rb_etcd_start(&cl, 1, 60000) == 0, "etcd did not start");
    ck_assert_int_eq(rb_etcd_ctl(&cl, "user add root:s3cret > /dev/null"), 0);
    ck_assert_int_eq(rb_etcd_ctl(&cl, "user grant-role root root > /dev/null"), 0);
    ck_assert_int_eq(rb_etcd_ctl(&cl, "auth enable > /dev/null"), 0);
    ck_assert_str_eq(add_through(&a, "etcd-user root\netcd-password s3cret\n", "auth-node"), "OK");
    got = add_through(&b, "etcd-user root\netcd-password wrong\n", "other");
    ck_assert_msg(strncmp(got, "ERR ring-source etcd: ", 22) == 0, "a wrong password: %s", got);
    printf("fleet: auth: with the password OK; a wrong one: %s\n", got);
    rbd_teardown();
    rb_etcd_stop(&cl);
}
END_TEST

int main(void)
{
    if (!rb_etcd_program()) {
        printf("SKIP: etcd is not installed; install the Debian packages etcd-server etcd-client\n");
        return 77;
    }
    return RB_TEST_MAIN("fleet",
                        RB_TCASE("converge", 600, NULL, fleet_stop,
                                 test_fleet_1000_changes_converge_to_one_table),
                        RB_TCASE("outages", 600, NULL, fleet_stop, test_fleet_outages),
                        RB_TCASE("race", 600, NULL, fleet_stop, test_fleet_same_node_at_once),
                        RB_TCASE("foreign", 600, NULL, fleet_stop, test_fleet_unparsable_value,
                                 test_fleet_foreign_keys, test_fleet_limits_guard_etcd),
                        RB_TCASE("stale", 600, NULL, fleet_stop,
                                 test_fleet_stale_across_restarts),
                        RB_TCASE("secure", 600, NULL, fleet_stop, test_fleet_tls_and_auth));
}
