/*
 * check_etcd.c - the daemon's etcd client (daemon/etcd*.c) against a real
 * 3-member etcd 3.4 cluster on loopback (tests/harness/etcd_cluster.c, a
 * fresh cluster per test): range, txn with its compares and the guarded
 * write, range at an old revision and in pages, watch from a revision
 * (order, deletes, progress notifications, compaction), failover when
 * members die and the bounded error when the quorum is lost, auth, and
 * the limits (reply size, unreachable endpoints, bad options), keys with
 * a NUL byte (another tool's) read whole; and, from a
 * fake gateway, the watch stream cut at every byte and the replies etcd
 * would not send (errors, bad JSON, oversize objects); and the gateway's
 * base64 (libcrypto's, checked strictly: "base64", no etcd needed).  Prints
 * the round trip of a guarded txn (p50 / p99) and the failover times.
 * Without etcd installed (Debian package etcd-server; etcdctl from
 * etcd-client for the auth test) only the base64 case runs.
 */
#include "config.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "etcd.h"
#include "etcd_impl.h"
#include "etcd_cluster.h"
#include "rb_test.h"

#define REQ_MS 2000

static rb_etcd_cluster_t cl;

static void setup(void)
{
    ck_assert_msg(rb_etcd_start(&cl, 3, 60000) == 0, "the etcd cluster did not start");
}

static void teardown(void)
{
    rb_etcd_stop(&cl);
}

static rbd_etcd_t *client(const char *prefix, const char *user, const char *pw, size_t page)
{
    rbd_etcd_opts_t o = { .endpoints = cl.endpoints, .n_endpoints = 3, .prefix = prefix,
                          .user = user, .password = pw, .connect_timeout_ms = 1000,
                          .request_timeout_ms = REQ_MS, .page_limit = page };
    int err;
    rbd_etcd_t *e = rbd_etcd_open(&o, &err);

    ck_assert_msg(e != NULL, "rbd_etcd_open: %s", rbd_etcd_strerror(err));
    return e;
}

static int put_if(rbd_etcd_t *e, const char *key, const char *v, int64_t expect, int64_t *rev,
                  int64_t *cur)
{
    rbd_etcd_op_t op = { .key = key, .value = v, .value_len = v ? strlen(v) : 0 };
    return rbd_etcd_txn(e, key, expect, &op, 1, rev, cur);
}

#define OK(e, call)                                                                       \
    do {                                                                                  \
        int rc_ = (call);                                                                 \
        ck_assert_msg(rc_ == 0, "%s: %s (%s)", #call, rbd_etcd_strerror(rc_),             \
                      rbd_etcd_errmsg(e));                                                \
    } while (0)

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Creates once, compares on mod_revision, deletes; the guarded write. */
START_TEST(test_etcd_txn_compares)
{
    rbd_etcd_t *e = client("/rbtest/", NULL, NULL, 0);
    rbd_etcd_kvs_t kvs;
    int64_t r1, r2, r3, rev, cur = -1;

    OK(e, rbd_etcd_range(e, "", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 0);
    ck_assert_int_ge(kvs.revision, 1);
    rbd_etcd_kvs_free(&kvs);
    OK(e, put_if(e, "nodes/a", "w=1", 0, &r1, NULL));
    ck_assert_int_eq(put_if(e, "nodes/a", "w=9", 0, &rev, &cur), RBD_ETCD_ECONFLICT);
    ck_assert_int_eq(cur, r1);
    ck_assert_int_eq(rev, r1);
    OK(e, put_if(e, "nodes/a", "w=2", r1, &r2, NULL));
    ck_assert_int_gt(r2, r1);
    ck_assert_int_eq(put_if(e, "nodes/a", "w=3", r1, &rev, &cur), RBD_ETCD_ECONFLICT);
    ck_assert_int_eq(cur, r2);
    OK(e, rbd_etcd_range(e, "nodes/", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 1);
    ck_assert_str_eq(kvs.kv[0].key, "nodes/a");
    ck_assert_str_eq(kvs.kv[0].value, "w=2");
    ck_assert_int_eq(kvs.kv[0].create_revision, r1);
    ck_assert_int_eq(kvs.kv[0].mod_revision, r2);
    rbd_etcd_kvs_free(&kvs);
    ck_assert_int_eq(put_if(e, "nodes/a", NULL, r1, &rev, &cur), RBD_ETCD_ECONFLICT);
    OK(e, put_if(e, "nodes/a", NULL, r2, &r3, NULL));
    ck_assert_int_eq(put_if(e, "nodes/a", "x", r2, &rev, &cur), RBD_ETCD_ECONFLICT);
    ck_assert_int_eq(cur, 0);   /* absent now */
    OK(e, rbd_etcd_range(e, "", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 0);
    ck_assert_int_eq(kvs.revision, r3);
    rbd_etcd_kvs_free(&kvs);

    /* The guard: two writers that saw the same revision, one wins. */
    rbd_etcd_t *f = client("/rbtest/", NULL, NULL, 0);
    rbd_etcd_op_t a = { "nodes/x", "1", 1 }, b = { "nodes/y", "1", 1 };
    int64_t g1, g2;
    OK(e, rbd_etcd_guarded(e, 0, &a, 1, &g1, NULL));
    ck_assert_int_eq(rbd_etcd_guarded(f, 0, &b, 1, &rev, &cur), RBD_ETCD_ECONFLICT);
    ck_assert_int_eq(cur, g1);
    OK(f, rbd_etcd_guarded(f, cur, &b, 1, &g2, NULL));
    ck_assert_int_eq(rbd_etcd_guarded(e, g1, &a, 1, &rev, &cur), RBD_ETCD_ECONFLICT);
    ck_assert_int_eq(cur, g2);
    OK(e, rbd_etcd_range(e, "", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 3);   /* nodes/x, nodes/y, rev */
    ck_assert_str_eq(kvs.kv[2].key, RBD_ETCD_GUARD_KEY);
    ck_assert_int_eq(kvs.kv[2].mod_revision, g2);
    rbd_etcd_kvs_free(&kvs);

    /* Round trip of a guarded txn (one put and the guard). */
    enum { N = 300 };
    static uint64_t us[N];
    int64_t seen = g2;
    for (int i = 0; i < N; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        OK(e, rbd_etcd_guarded(e, seen, &a, 1, &seen, NULL));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        us[i] = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
    }
    qsort(us, N, sizeof(us[0]), cmp_u64);
    printf("etcd guarded txn round trip (3 members, loopback, %d txns): p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
           N, us[N / 2] / 1000.0, us[N * 99 / 100] / 1000.0, us[N - 1] / 1000.0);
    rbd_etcd_close(f);
    rbd_etcd_close(e);
}
END_TEST

/* 25 keys in pages of 7, an old revision's view, keys outside the prefix
 * not seen, binary values. */
START_TEST(test_etcd_range_pages_and_history)
{
    rbd_etcd_t *e = client("/rbtest/", NULL, NULL, 7), *other = client("/rbtest0", NULL, NULL, 0);
    rbd_etcd_kvs_t kvs;
    char key[32], val[32];
    int64_t rev, r_old;

    OK(other, put_if(other, "outside", "x", 0, &rev, NULL));
    for (int i = 0; i < 25; i++) {
        snprintf(key, sizeof(key), "nodes/n%02d", i);
        snprintf(val, sizeof(val), "v%d", i);
        OK(e, put_if(e, key, val, 0, &rev, NULL));
    }
    static const char bin[] = { 'a', 0, '\xff', '\n', '"' };
    rbd_etcd_op_t op = { "blob", bin, sizeof(bin) };
    OK(e, rbd_etcd_txn(e, "blob", 0, &op, 1, &r_old, NULL));
    OK(e, rbd_etcd_range(e, "", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 26);
    ck_assert_str_eq(kvs.kv[0].key, "blob");
    ck_assert_uint_eq(kvs.kv[0].value_len, sizeof(bin));
    ck_assert(memcmp(kvs.kv[0].value, bin, sizeof(bin)) == 0);
    for (int i = 0; i < 25; i++) {
        snprintf(key, sizeof(key), "nodes/n%02d", i);
        snprintf(val, sizeof(val), "v%d", i);
        ck_assert_str_eq(kvs.kv[i + 1].key, key);
        ck_assert_str_eq(kvs.kv[i + 1].value, val);
    }
    ck_assert_int_eq(kvs.revision, r_old);
    rbd_etcd_kvs_free(&kvs);
    /* Change the view (odd keys changed, even ones deleted), then read
     * the old one. */
    OK(e, rbd_etcd_range(e, "nodes/", 0, &kvs));
    for (size_t i = 0; i < kvs.n; i++) {
        OK(e, put_if(e, kvs.kv[i].key, (i % 2) ? "changed" : NULL, kvs.kv[i].mod_revision, &rev, NULL));
    }
    rbd_etcd_kvs_free(&kvs);
    OK(e, rbd_etcd_range(e, "nodes/", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 12);
    for (size_t i = 0; i < kvs.n; i++)
        ck_assert_str_eq(kvs.kv[i].value, "changed");
    ck_assert_int_eq(kvs.revision, rev);
    rbd_etcd_kvs_free(&kvs);
    OK(e, rbd_etcd_range(e, "nodes/", r_old, &kvs));
    ck_assert_uint_eq(kvs.n, 25);
    ck_assert_int_eq(kvs.revision, r_old);
    ck_assert_str_eq(kvs.kv[24].value, "v24");
    rbd_etcd_kvs_free(&kvs);
    ck_assert_int_eq(rbd_etcd_range(e, "", rev + 1000, &kvs), RBD_ETCD_EREFUSED);
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(e), "future revision"));
    rbd_etcd_close(other);
    rbd_etcd_close(e);
}
END_TEST

/* What a watch collected. */
typedef struct seen {
    rbd_etcd_event_t ev[64];
    char keys[64][32], vals[64][32];
    size_t n, want, progress, batches;
    int64_t last, progress_rev;
    int bad_order;
} seen_t;

static int collect(void *arg, int64_t revision, const rbd_etcd_event_t *ev, size_t n)
{
    seen_t *s = arg;

    if (n == 0) {
        s->progress++;
        s->progress_rev = revision;
        return s->want == 0 && s->progress >= 2;
    }
    s->batches++;
    for (size_t i = 0; i < n && s->n < 64; i++) {
        if (ev[i].mod_revision < s->last)
            s->bad_order = 1;
        s->last = ev[i].mod_revision;
        s->ev[s->n] = ev[i];
        snprintf(s->keys[s->n], 32, "%s", ev[i].key);
        snprintf(s->vals[s->n], 32, "%s", ev[i].value);
        s->ev[s->n].key = s->keys[s->n];
        s->ev[s->n].value = s->vals[s->n];
        s->n++;
    }
    if (revision != ev[n - 1].mod_revision)
        s->bad_order = 1;
    return s->want && s->n >= s->want;
}

/* Watch from R + 1: exactly the events after R, in order, deletes too;
 * progress notifications while idle; a compacted start revision. */
START_TEST(test_etcd_watch_from_revision)
{
    rbd_etcd_t *e = client("/rbtest/", NULL, NULL, 0), *f = client("/rbtest/", NULL, NULL, 0);
    static seen_t s;
    int64_t r0, rev, r_a, compact = -1;
    rbd_etcd_op_t del = { "nodes/a", NULL, 0 };

    OK(e, put_if(e, "nodes/before", "old", 0, &r0, NULL));
    OK(e, put_if(e, "nodes/a", "1", 0, &r_a, NULL));
    OK(e, put_if(e, "nodes/b", "2", 0, &rev, NULL));
    OK(e, put_if(e, "nodes/a", "3", r_a, &rev, NULL));
    OK(e, rbd_etcd_txn(e, "nodes/a", rev, &del, 1, &rev, NULL));
    OK(e, rbd_etcd_guarded(e, 0, &del, 0, &rev, NULL));   /* only the guard */
    s.want = 5;
    rbd_etcd_watch_t w = { .sub = "", .start_revision = r0 + 1, .fn = collect, .arg = &s,
                           .max_ms = 20000 };
    OK(f, rbd_etcd_watch(f, &w, &compact));
    ck_assert_uint_eq(s.n, 5);
    ck_assert(!s.bad_order);
    static const struct { int type; const char *key, *val; } want[] = {
        { RBD_ETCD_PUT, "nodes/a", "1" }, { RBD_ETCD_PUT, "nodes/b", "2" },
        { RBD_ETCD_PUT, "nodes/a", "3" }, { RBD_ETCD_DELETE, "nodes/a", "" },
        { RBD_ETCD_PUT, RBD_ETCD_GUARD_KEY, "0" },
    };
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq(s.ev[i].type, want[i].type);
        ck_assert_str_eq(s.ev[i].key, want[i].key);
        ck_assert_str_eq(s.ev[i].value, want[i].val);
        ck_assert_int_eq(s.ev[i].mod_revision, r0 + 1 + (int64_t)i);
    }
    printf("etcd watch: 5 events from revision %lld in %zu batches\n", (long long)(r0 + 1), s.batches);

    /* Events that happen while the watch runs, from another client. */
    memset(&s, 0, sizeof(s));
    s.want = 3;
    w.start_revision = rev + 1;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Its own client: the parent's connections stay the parent's. */
        rbd_etcd_t *g = client("/rbtest/", NULL, NULL, 0);
        int64_t rd, rc_;
        usleep(300 * 1000);
        _exit(put_if(g, "nodes/d", "live", 0, &rd, NULL) != 0 ||
              put_if(g, "nodes/c", "live", 0, &rc_, NULL) != 0 ||
              put_if(g, "nodes/d", "live", rd, &rd, NULL) != 0);
    }
    OK(f, rbd_etcd_watch(f, &w, &compact));
    int st;
    waitpid(pid, &st, 0);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ck_assert_uint_eq(s.n, 3);
    ck_assert_int_eq(s.ev[0].mod_revision, rev + 1);
    ck_assert_int_eq(s.ev[2].mod_revision, rev + 3);
    ck_assert_str_eq(s.ev[2].key, "nodes/d");

    /* Idle: progress notifications (the cluster sends one a second). */
    memset(&s, 0, sizeof(s));
    w.start_revision = rev + 4;
    w.max_ms = 10000;
    uint64_t t0 = rb_test_now_ms();
    OK(f, rbd_etcd_watch(f, &w, &compact));
    ck_assert_uint_ge(s.progress, 2);
    ck_assert_int_eq(s.progress_rev, rev + 3);
    printf("etcd watch: 2 progress notifications in %llu ms while idle\n",
           (unsigned long long)(rb_test_now_ms() - t0));
    /* A stop flag set: back within about 100 ms... of curl's next call. */
    atomic_int stop = 1;
    w.stop = &stop;
    w.max_ms = 0;
    t0 = rb_test_now_ms();
    OK(f, rbd_etcd_watch(f, &w, &compact));
    ck_assert_uint_lt(rb_test_now_ms() - t0, 3000);
    w.stop = NULL;

    /* Compaction: the watch from before it says so, and from where. */
    OK(e, rbd_etcd_compact(e, rev));
    w.start_revision = r0 + 1;
    w.max_ms = 10000;
    ck_assert_int_eq(rbd_etcd_watch(f, &w, &compact), RBD_ETCD_ECOMPACTED);
    ck_assert_int_eq(compact, rev);
    rbd_etcd_kvs_t kvs;
    ck_assert_int_eq(rbd_etcd_range(f, "", r0, &kvs), RBD_ETCD_ECOMPACTED);
    ck_assert_uint_eq(kvs.n, 0);
    /* Reload, then watch from the reload's revision + 1 (nothing new). */
    OK(f, rbd_etcd_range(f, "", 0, &kvs));
    ck_assert_int_eq(kvs.revision, rev + 3);
    rbd_etcd_kvs_free(&kvs);
    rbd_etcd_close(f);
    rbd_etcd_close(e);
}
END_TEST

static uint64_t elapsed_ms(uint64_t t0)
{
    return rb_test_now_ms() - t0;
}

/* Which member the client uses now. */
static int member_of(rbd_etcd_t *e)
{
    for (int i = 0; i < cl.n; i++)
        if (strcmp(rbd_etcd_endpoint(e), cl.url[i]) == 0)
            return i;
    ck_abort_msg("endpoint %s is no member", rbd_etcd_endpoint(e));
    return -1;
}

/* Until a guarded write through e succeeds (at most 30 s): its time. */
static uint64_t until_ok(rbd_etcd_t *e, int64_t *seen)
{
    uint64_t t0 = rb_test_now_ms();
    rbd_etcd_op_t op = { "nodes/f", "1", 1 };
    int rc;

    while ((rc = rbd_etcd_guarded(e, *seen, &op, 1, seen, seen)) != 0) {
        ck_assert_msg(rc == RBD_ETCD_ENOQUORUM || rc == RBD_ETCD_EUNREACH || rc == RBD_ETCD_ECONFLICT,
                      "%s (%s)", rbd_etcd_strerror(rc), rbd_etcd_errmsg(e));
        ck_assert_msg(elapsed_ms(t0) < 30000, "no success within 30 s: %s", rbd_etcd_errmsg(e));
        usleep(200 * 1000);
    }
    return elapsed_ms(t0);
}

/* In a child: watches from `from` on the first endpoint until it has
 * seen one batch (the parent's guarded write: its key and the guard), watching again from the last revision + 1 when the
 * stream ends (its member killed).  Exit status 0 if it ended once and
 * the event came through another member, within 30 s. */
static int watch_through_death(int64_t from)
{
    rbd_etcd_t *w = client("/rbtest/", NULL, NULL, 0);
    static seen_t s;
    int64_t compact;
    int closed = 0, rc;
    uint64_t t0 = rb_test_now_ms();

    s.want = 1;
    rbd_etcd_watch_t wt = { .start_revision = from, .fn = collect, .arg = &s, .max_ms = 30000 };
    while ((rc = rbd_etcd_watch(w, &wt, &compact)) == RBD_ETCD_ECLOSED && elapsed_ms(t0) < 30000) {
        printf("etcd watch: member killed, the stream ended after %llu ms: %s\n",
               (unsigned long long)elapsed_ms(t0), rbd_etcd_errmsg(w));
        closed++;
    }
    if (rc != 0 || s.n < 1 || closed != 1 || strcmp(rbd_etcd_endpoint(w), cl.url[0]) == 0) {
        printf("watcher: %s (%s), %zu events, %d ends\n", rbd_etcd_strerror(rc), rbd_etcd_errmsg(w),
               s.n, closed);
        return 1;
    }
    printf("etcd watch: the next event came through %s, %llu ms after the start\n",
           rbd_etcd_endpoint(w), (unsigned long long)elapsed_ms(t0));
    rbd_etcd_close(w);
    return 0;
}


/* The keys of a watch's put events, bytes and lengths (a NUL among them). */
typedef struct raw_seen {
    char key[8][16];
    size_t len[8], n;
} raw_seen_t;

static int raw_collect(void *arg, int64_t revision, const rbd_etcd_event_t *ev, size_t n)
{
    raw_seen_t *s = arg;

    (void)revision;
    for (size_t i = 0; i < n && s->n < 8; i++) {
        ck_assert_uint_lt(ev[i].key_len, 16);
        memcpy(s->key[s->n], ev[i].key, ev[i].key_len);
        s->len[s->n++] = ev[i].key_len;
    }
    return s->n >= 3;
}

/* Another tool's key with a NUL byte (put through the gateway, as the
 * client itself could not): range (in pages of one key, the next page
 * starting after it) and watch return it whole, with its length, instead
 * of failing the whole read (issue 25, item 5). */
START_TEST(test_etcd_nul_keys)
{
    rbd_etcd_t *e = client("/rbtest/", NULL, NULL, 1), *f = client("/rbtest/", NULL, NULL, 0);
    static raw_seen_t s;
    rbd_etcd_kvs_t kvs;
    int64_t r0, compact;

    OK(e, put_if(e, "a", "1", 0, &r0, NULL));
    ck_assert_int_eq(rb_etcd_raw(&cl, "/rbtest/other\0tool", 18, "x\0y", 3), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, "/rbtest/other\0\0", 15, "", 0), 0);
    ck_assert_int_eq(rb_etcd_raw(&cl, "/rbtest/z", 9, "2", 1), 0);
    OK(e, rbd_etcd_range(e, "", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 4);   /* a, other\0\0, other\0tool, z (byte order) */
    ck_assert_str_eq(kvs.kv[0].key, "a");
    ck_assert_uint_eq(kvs.kv[1].key_len, 7);
    ck_assert(memcmp(kvs.kv[1].key, "other\0\0", 7) == 0);
    ck_assert_uint_eq(kvs.kv[2].key_len, 10);
    ck_assert(memcmp(kvs.kv[2].key, "other\0tool", 10) == 0);
    ck_assert_uint_eq(kvs.kv[2].value_len, 3);
    ck_assert(memcmp(kvs.kv[2].value, "x\0y", 3) == 0);
    ck_assert_str_eq(kvs.kv[3].key, "z");
    ck_assert_uint_eq(kvs.kv[3].key_len, 1);
    rbd_etcd_kvs_free(&kvs);
    rbd_etcd_watch_t w = { .start_revision = r0 + 1, .fn = raw_collect, .arg = &s,
                           .max_ms = 20000 };
    OK(f, rbd_etcd_watch(f, &w, &compact));
    ck_assert_uint_eq(s.n, 3);
    ck_assert_uint_eq(s.len[0], 10);
    ck_assert(memcmp(s.key[0], "other\0tool", 10) == 0);
    ck_assert_uint_eq(s.len[1], 7);
    ck_assert_uint_eq(s.len[2], 1);
    rbd_etcd_close(e);
    rbd_etcd_close(f);
}
END_TEST

/* Kill the member in use: the next request goes through another.  Kill a
 * second: bounded failure.  Restart both: the same client works again. */
START_TEST(test_etcd_failover_and_quorum_loss)
{
    rbd_etcd_t *e = client("/rbtest/", NULL, NULL, 0);
    rbd_etcd_kvs_t kvs;
    int64_t seen = 0;
    uint64_t t0, t;
    int rc;

    until_ok(e, &seen);
    int a = member_of(e);
    ck_assert_int_eq(a, 0);
    /* A watcher on the same member (both start on the first endpoint). */
    int64_t from = seen + 1;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        { int r_ = watch_through_death(from); fflush(stdout); _exit(r_); }
    usleep(500 * 1000);
    rb_etcd_kill(&cl, a);
    t = until_ok(e, &seen);
    int b = member_of(e);
    ck_assert_int_ne(a, b);
    printf("etcd failover: member m%d killed, next guarded write through m%d in %llu ms\n", a, b,
           (unsigned long long)t);
    OK(e, rbd_etcd_range(e, "", 0, &kvs));
    rbd_etcd_kvs_free(&kvs);
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the watcher: status %d", st);

    rb_etcd_kill(&cl, b);
    rbd_etcd_op_t op = { "nodes/g", "1", 1 };
    t0 = rb_test_now_ms();
    rc = rbd_etcd_guarded(e, seen, &op, 1, &seen, NULL);
    t = elapsed_ms(t0);
    printf("etcd quorum lost (2 of 3 killed): %s after %llu ms: %s\n", rbd_etcd_strerror(rc),
           (unsigned long long)t, rbd_etcd_errmsg(e));
    ck_assert_int_eq(rc, RBD_ETCD_ENOQUORUM);
    ck_assert_uint_lt(t, 3 * REQ_MS + 1000);
    t0 = rb_test_now_ms();
    ck_assert_int_eq(rbd_etcd_range(e, "", 0, &kvs), RBD_ETCD_ENOQUORUM);
    ck_assert_uint_lt(elapsed_ms(t0), 3 * REQ_MS + 1000);
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(e), cl.url[a]));
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(e), cl.url[b]));

    ck_assert_int_eq(rb_etcd_restart(&cl, a), 0);
    ck_assert_int_eq(rb_etcd_restart(&cl, b), 0);
    t = until_ok(e, &seen);
    printf("etcd quorum back (2 members restarted): the same client's write succeeded after %llu ms\n",
           (unsigned long long)t);
    ck_assert_int_eq(rb_etcd_wait_healthy(&cl, 30000), 0);

    /* All three killed: unreachable, at once (connections refused). */
    for (int i = 0; i < 3; i++)
        rb_etcd_kill(&cl, i);
    t0 = rb_test_now_ms();
    ck_assert_int_eq(rbd_etcd_range(e, "", 0, &kvs), RBD_ETCD_EUNREACH);
    printf("etcd all members down: %s after %llu ms\n", rbd_etcd_strerror(RBD_ETCD_EUNREACH),
           (unsigned long long)elapsed_ms(t0));
    rbd_etcd_close(e);
}
END_TEST

/* With auth enabled: user / password works (watch too), a wrong password
 * and no user fail with EAUTH. */
START_TEST(test_etcd_auth)
{
    int64_t rev, compact;
    ck_assert_int_eq(rb_etcd_ctl(&cl, "user add root:rootpw > /dev/null"), 0);
    ck_assert_int_eq(rb_etcd_ctl(&cl, "user grant-role root root > /dev/null"), 0);
    ck_assert_int_eq(rb_etcd_ctl(&cl, "auth enable > /dev/null"), 0);
    rbd_etcd_t *ok = client("/rbtest/", "root", "rootpw", 0);
    rbd_etcd_t *bad = client("/rbtest/", "root", "wrong", 0);
    rbd_etcd_t *none = client("/rbtest/", NULL, NULL, 0);
    OK(ok, put_if(ok, "nodes/a", "1", 0, &rev, NULL));
    ck_assert_int_eq(put_if(bad, "nodes/b", "1", 0, &rev, NULL), RBD_ETCD_EAUTH);
    printf("etcd auth, wrong password: %s\n", rbd_etcd_errmsg(bad));
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(bad), "authentication failed"));
    ck_assert_int_eq(put_if(none, "nodes/b", "1", 0, &rev, NULL), RBD_ETCD_EAUTH);
    static seen_t s;
    s.want = 1;
    rbd_etcd_watch_t w = { .start_revision = rev, .fn = collect, .arg = &s, .max_ms = 10000 };
    OK(ok, rbd_etcd_watch(ok, &w, &compact));
    ck_assert_uint_eq(s.n, 1);
    ck_assert_int_eq(rbd_etcd_watch(none, &w, &compact), RBD_ETCD_EAUTH);
    rbd_etcd_close(ok);
    rbd_etcd_close(bad);
    rbd_etcd_close(none);
}
END_TEST

/* A reply above max_reply; endpoints nobody listens on; bad options. */
START_TEST(test_etcd_limits)
{
    rbd_etcd_t *e = client("/rbtest/", NULL, NULL, 0);
    static char big[200000];
    int64_t rev;
    int err;

    memset(big, 'x', sizeof(big) - 1);
    OK(e, put_if(e, "big", big, 0, &rev, NULL));
    rbd_etcd_opts_t o = { .endpoints = cl.endpoints, .n_endpoints = 3, .prefix = "/rbtest/",
                          .max_reply = 100000 };
    rbd_etcd_t *small = rbd_etcd_open(&o, &err);
    ck_assert_ptr_nonnull(small);
    rbd_etcd_kvs_t kvs;
    ck_assert_int_eq(rbd_etcd_range(small, "", 0, &kvs), RBD_ETCD_ETOOBIG);
    OK(small, rbd_etcd_range(small, "none", 0, &kvs));
    /* Keys each below the cap, a page of them above it: the range goes
     * on in smaller pages (another tool's large values under the prefix
     * must not stop the daemon's load, issue 25 item 5). */
    for (int i = 0; i < 12; i++) {
        char key[16];
        snprintf(key, sizeof(key), "mid/%02d", i);
        OK(e, put_if(e, key, big + sizeof(big) - 30001, 0, &rev, NULL));
    }
    OK(small, rbd_etcd_range(small, "mid/", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 12);
    ck_assert_uint_eq(kvs.kv[11].value_len, 30000);
    ck_assert_int_eq(kvs.revision, rev);
    rbd_etcd_kvs_free(&kvs);
    rbd_etcd_close(small);

    const char *dead[] = { "http://127.0.0.1:1", "http://127.0.0.1:9/" };
    rbd_etcd_opts_t d = { .endpoints = dead, .n_endpoints = 2 };
    rbd_etcd_t *nobody = rbd_etcd_open(&d, &err);
    ck_assert_ptr_nonnull(nobody);
    uint64_t t0 = rb_test_now_ms();
    ck_assert_int_eq(rbd_etcd_range(nobody, "", 0, &kvs), RBD_ETCD_EUNREACH);
    ck_assert_uint_lt(elapsed_ms(t0), 2000);
    printf("etcd unreachable: %s\n", rbd_etcd_errmsg(nobody));
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(nobody), "http://127.0.0.1:1:"));
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(nobody), "http://127.0.0.1:9:"));
    rbd_etcd_close(nobody);

    const char *wrong[] = { "127.0.0.1:2379" };
    rbd_etcd_opts_t b = { .endpoints = wrong, .n_endpoints = 1 };
    ck_assert_ptr_null(rbd_etcd_open(&b, &err));
    ck_assert_int_eq(err, RBD_ETCD_EINVAL);
    b.n_endpoints = 0;
    ck_assert_ptr_null(rbd_etcd_open(&b, &err));
    for (int c = 0; c >= RBD_ETCD_EINVAL; c--)
        ck_assert_str_ne(rbd_etcd_strerror(c), "unknown etcd error");
    rbd_etcd_close(e);
}
END_TEST

/* A fake gateway: answers n requests in order, each with its status line
 * and body (bytewise: one byte per write, so the client's parser gets the
 * stream cut everywhere), then closes.  The child's pid; *port set. */
typedef struct fake {
    const char *status;
    const char *body;
    int bytewise;
} fake_t;

static void fake_serve(int lfd, const fake_t *f, int n)
{
    for (int i = 0; i < n; i++) {
        char req[8192], head[256];
        size_t have = 0;
        int c = accept(lfd, NULL, NULL), one = 1;
        if (c < 0)
            _exit(1);
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        /* The request: headers, then Content-Length bytes of body. */
        for (;;) {
            ssize_t r = read(c, req + have, sizeof(req) - 1 - have);
            if (r <= 0)
                break;
            have += (size_t)r;
            req[have] = '\0';
            char *end = strstr(req, "\r\n\r\n"), *cl_ = strcasestr(req, "Content-Length:");
            if (end && (!cl_ || have - (size_t)(end + 4 - req) >= strtoul(cl_ + 15, NULL, 10)))
                break;
        }
        snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                 "Connection: close\r\n\r\n", f[i].status);
        if (write(c, head, strlen(head)) < 0)
            _exit(1);
        for (size_t k = 0, len = strlen(f[i].body); k < len;) {
            size_t m = f[i].bytewise ? 1 : len - k;
            if (write(c, f[i].body + k, m) < 0)
                break;
            k += m;
            if (f[i].bytewise)
                usleep(100);
        }
        close(c);
    }
    _exit(0);
}

static pid_t fake_start(int *port, const fake_t *f, int n)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    pid_t pid;

    ck_assert_int_ge(lfd, 0);
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    ck_assert_int_eq(listen(lfd, 8), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    *port = ntohs(a.sin_port);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGPIPE, SIG_IGN);   /* a client that hangs up mid-stream */
        fake_serve(lfd, f, n);
    }
    close(lfd);
    return pid;
}

static rbd_etcd_t *fake_client(int port, size_t max_reply)
{
    static char url[64];
    static const char *eps[1] = { url };
    rbd_etcd_opts_t o = { .endpoints = eps, .n_endpoints = 1, .prefix = "/p/",
                          .request_timeout_ms = 5000, .max_reply = max_reply };
    int err;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    rbd_etcd_t *e = rbd_etcd_open(&o, &err);
    ck_assert_ptr_nonnull(e);
    return e;
}

/* What the callback saw, as text: "rev:n[type key=value@mod ...];" */
static int record(void *arg, int64_t revision, const rbd_etcd_event_t *ev, size_t n)
{
    char *out = arg;
    size_t l = strlen(out);

    l += (size_t)snprintf(out + l, 1024 - l, "%lld:%zu[", (long long)revision, n);
    for (size_t i = 0; i < n; i++)
        l += (size_t)snprintf(out + l, 1024 - l, "%s%s %s=%s@%lld", i ? " " : "",
                              ev[i].type == RBD_ETCD_DELETE ? "D" : "P", ev[i].key, ev[i].value,
                              (long long)ev[i].mod_revision);
    snprintf(out + l, 1024 - l, "];");
    return 0;
}

/* The watch stream's framing, delivered a byte at a time, and its errors;
 * replies that are not the gateway's.  No etcd: a fake server. */
START_TEST(test_etcd_stream_parsing)
{
    /* "/p/a" = L3AvYQ==, "/p/b" = L3AvYg==, "1" = MQ==, "22" = MjI= */
    static const char stream[] =
        "{\"result\":{\"header\":{\"revision\":\"4\"},\"created\":true}}\n"
        "{\"result\":{\"header\":{\"revision\":\"6\"},\"events\":["
        "{\"kv\":{\"key\":\"L3AvYQ==\",\"create_revision\":\"5\",\"mod_revision\":\"5\",\"value\":\"MQ==\"}},"
        "{\"type\":\"DELETE\",\"kv\":{\"key\":\"L3AvYg==\",\"mod_revision\":\"6\"}}]}}\n"
        "{\"result\":{\"header\":{\"revision\":\"6\"}}}\n"
        "{\"result\":{\"header\":{\"revision\":\"7\"},\"events\":["
        "{\"kv\":{\"key\":\"L3AvYg==\",\"mod_revision\":\"7\",\"value\":\"MjI=\"}}]}}";
    static const fake_t f[] = {
        { "200 OK", stream, 1 },
        { "200 OK", "{\"result\":{\"header\":{},\"created\":true}}{\"result\":{\"events\":[{\"kv\":"
                    "{\"key\":\"L3AvYQ==\",\"value\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}]}}", 1 },
        { "200 OK", "{\"result\":{\"created\":true}}\n{\"result\": ]", 0 },
        { "200 OK", "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no leader\","
                    "\"http_status\":\"Service Unavailable\"}}", 0 },
        { "200 OK", "{\"result\":{\"events\":[{\"kv\":{\"key\":\"not base64!\"}}]}}", 0 },
        { "200 OK", "{\"result\":{\"canceled\":true,\"compact_revision\":\"9\"}}", 0 },
        { "503 Service Unavailable", "{\"error\":\"etcdserver: request timed out\",\"message\":"
                                     "\"etcdserver: request timed out\",\"code\":14}", 0 },
        { "401 Unauthorized", "{\"error\":\"etcdserver: invalid auth token\",\"message\":"
                              "\"etcdserver: invalid auth token\",\"code\":16}", 0 },
        { "200 OK", "[1, 2]", 0 },
        { "200 OK", "{\"header\":{\"revision\":\"3\"},\"more\":true}", 0 },
        { "500 Internal Server Error", "<html>proxy error</html>", 0 },
        { "200 OK", "{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":\"L3AvYQ==\",\"value\":\"MQ==\","
                    "\"mod_revision\":\"3\"}],\"count\":\"1\"}", 1 },
    };
    int port, st;
    int64_t compact;
    static char got[1024];
    rbd_etcd_kvs_t kvs;
    pid_t pid = fake_start(&port, f, sizeof(f) / sizeof(f[0]));
    rbd_etcd_t *e = fake_client(port, 300);
    rbd_etcd_watch_t w = { .start_revision = 5, .fn = record, .arg = got, .max_ms = 10000 };

    ck_assert_int_eq(rbd_etcd_watch(e, &w, &compact), RBD_ETCD_ECLOSED);
    ck_assert_str_eq(got, "6:2[P a=1@5 D b=@6];6:0[];7:1[P b=22@7];");
    ck_assert_int_eq(rbd_etcd_watch(e, &w, &compact), RBD_ETCD_ETOOBIG);
    ck_assert_int_eq(rbd_etcd_watch(e, &w, &compact), RBD_ETCD_EPROTO);
    ck_assert_int_eq(rbd_etcd_watch(e, &w, &compact), RBD_ETCD_ENOQUORUM);
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(e), "no leader"));
    ck_assert_int_eq(rbd_etcd_watch(e, &w, &compact), RBD_ETCD_EPROTO);
    ck_assert_int_eq(rbd_etcd_watch(e, &w, &compact), RBD_ETCD_ECOMPACTED);
    ck_assert_int_eq(compact, 9);
    ck_assert_int_eq(rbd_etcd_watch(e, &w, &compact), RBD_ETCD_ENOQUORUM);
    ck_assert_ptr_nonnull(strstr(rbd_etcd_errmsg(e), "request timed out"));
    ck_assert_int_eq(rbd_etcd_range(e, "", 0, &kvs), RBD_ETCD_EAUTH);
    ck_assert_int_eq(rbd_etcd_range(e, "", 0, &kvs), RBD_ETCD_EPROTO);
    ck_assert_int_eq(rbd_etcd_range(e, "", 0, &kvs), RBD_ETCD_EPROTO);
    ck_assert_int_eq(rbd_etcd_range(e, "", 0, &kvs), RBD_ETCD_ENOQUORUM);
    OK(e, rbd_etcd_range(e, "", 0, &kvs));
    ck_assert_uint_eq(kvs.n, 1);
    ck_assert_str_eq(kvs.kv[0].key, "a");
    ck_assert_str_eq(kvs.kv[0].value, "1");
    ck_assert_int_eq(kvs.revision, 3);
    rbd_etcd_kvs_free(&kvs);
    rbd_etcd_close(e);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* The base64 of the gateway (etcd.c, libcrypto's coder): RFC 4648's
 * vectors, the round trip of every length 0..64 with every byte value
 * 0..255 at every position, and text that is not canonical base64
 * refused, including what EVP_DecodeBlock alone would take (blanks,
 * line ends, '-', '=' inside). */
static char *unb64(const char *text, size_t *len)
{
    json_object *o = json_object_new_object();
    char *r;

    json_object_object_add(o, "v", json_object_new_string(text));
    r = etcd_unb64(o, "v", len);
    json_object_put(o);
    return r;
}

START_TEST(test_etcd_base64)
{
    static const char *const vec[][2] = { { "", "" },         { "f", "Zg==" },
                                          { "fo", "Zm8=" },   { "foo", "Zm9v" },
                                          { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
                                          { "foobar", "Zm9vYmFy" } };
    static const char *const bad[] = { "Zg=",      "Zg=a",     "Z===",      "====",
                                       "=Zg=",     " Zg==",    "Zg== ",     "Zm9v    ",
                                       "Zm9v\n\n\n\n", "Zm9v----", "Zg!=",  "Zm9v====",
                                       "Zg==Zm9v", "Zm 9",     "Zm9v\r\nYg==" };
    unsigned char data[64];
    json_object *o;
    size_t n;
    char *r;

    for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        o = etcd_b64(vec[i][0], strlen(vec[i][0]));
        ck_assert_ptr_nonnull(o);
        ck_assert_str_eq(json_object_get_string(o), vec[i][1]);
        ck_assert_int_eq(json_object_get_string_len(o), (int)strlen(vec[i][1]));
        json_object_put(o);
        r = unb64(vec[i][1], &n);
        ck_assert_msg(r != NULL, "\"%s\" refused", vec[i][1]);
        ck_assert_uint_eq(n, strlen(vec[i][0]));
        ck_assert_str_eq(r, vec[i][0]);
        free(r);
    }
    for (size_t len = 0; len <= sizeof(data); len++)
        for (unsigned first = 0; first < 256; first++) {
            for (size_t i = 0; i < len; i++)
                data[i] = (unsigned char)(first + i * 101);
            o = etcd_b64(data, len);
            ck_assert_ptr_nonnull(o);
            ck_assert_uint_eq(strlen(json_object_get_string(o)), 4 * ((len + 2) / 3));
            r = unb64(json_object_get_string(o), &n);
            ck_assert_msg(r != NULL, "len %zu first %u: \"%s\" refused", len, first,
                          json_object_get_string(o));
            ck_assert_uint_eq(n, len);
            ck_assert(memcmp(r, data, len) == 0);
            ck_assert_int_eq(r[n], '\0');
            free(r);
            json_object_put(o);
        }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        r = unb64(bad[i], &n);
        ck_assert_msg(r == NULL, "\"%s\" accepted as %zu bytes", bad[i], n);
    }
    /* Absent: "", a number: refused. */
    o = json_object_new_object();
    r = etcd_unb64(o, "v", &n);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(n, 0);
    free(r);
    json_object_object_add(o, "v", json_object_new_int(5));
    ck_assert_ptr_null(etcd_unb64(o, "v", &n));
    json_object_put(o);
}
END_TEST

int main(void)
{
    if (!rb_etcd_program()) {
        printf("etcd is not installed (Debian packages etcd-server etcd-client): only the "
               "base64 case runs\n");
        return RB_TEST_MAIN("etcd", RB_TCASE("base64", 60, NULL, NULL, test_etcd_base64));
    }
    return RB_TEST_MAIN("etcd",
                        RB_TCASE("kv", 300, setup, teardown, test_etcd_txn_compares,
                                 test_etcd_range_pages_and_history, test_etcd_limits),
                        RB_TCASE("watch", 300, setup, teardown, test_etcd_watch_from_revision,
                                 test_etcd_nul_keys),
                        RB_TCASE("failover", 300, setup, teardown, test_etcd_failover_and_quorum_loss),
                        RB_TCASE("auth", 300, setup, teardown, test_etcd_auth),
                        RB_TCASE("stream", 60, NULL, NULL, test_etcd_stream_parsing),
                        RB_TCASE("base64", 60, NULL, NULL, test_etcd_base64));
}
