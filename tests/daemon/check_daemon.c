/*
 * check_daemon.c - ringbloomd end to end: RedisBloom-compatible replies,
 * durability across SIGKILL (with and without the segment), readers that
 * keep answering while the daemon dies mid-update, access control by uid,
 * exactly-once test-and-add across processes, reload, corrupt state.
 */
#include <endian.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/mman.h>

#include "hash.h"
#include "rbd_test.h"

static rbd_proc_t d;

static void teardown(void)
{
    rbd_remove_all(&d);
}

static rb_segment_t *attach_seg(void)
{
    rb_segment_t *seg;
    ck_assert_int_eq(rb_segment_attach(d.inst, RB_ATTACH_STALE_OK, &seg), RB_OK);
    return seg;
}

START_TEST(test_daemon_answers_redis_clients_basics)
{
    rb_conn_t *c;
    int rc;
    const char *info;

    struct stat st;

    rbd_start(&d, NULL);
    /* Socket and segment carry exactly the configured modes. */
    ck_assert_int_eq(stat(d.sock, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0666);
    {
        char shm[200];
        snprintf(shm, sizeof(shm), "/dev/shm/ringbloom.%s", d.inst);
        ck_assert_int_eq(stat(shm, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0644);
    }
    c = rbd_connect(&d);
    rbd_expect(c, "PONG", "PING");
    rbd_expect(c, "hello", "PING", "hello");
    /* redis-benchmark asks for these two at start. */
    rbd_expect(c, "save\n300 1", "CONFIG", "GET", "save");
    rbd_expect(c, "appendonly\nyes", "CONFIG", "GET", "appendonly");
    rbd_expect(c, "appendfsync\neverysec", "CONFIG", "GET", "appendfsync");
    rbd_expect(c, "", "COMMAND", "DOCS");
    rbd_expect(c, "ERR unknown command 'NOPE', with args beginning with: 'a' ", "NOPE", "a");
    rbd_expect(c, "ERR wrong number of arguments for 'ring.getn' command", "ring.getn", "k");
    info = rbd_cmd(c, &rc, "INFO", (const char *)NULL);
    ck_assert_int_eq(rc, RB_OK);
    ck_assert_ptr_nonnull(strstr(info, "# Server"));
    ck_assert_ptr_nonnull(strstr(info, "uptime_in_seconds:"));
    ck_assert_ptr_nonnull(strstr(info, "# Ring"));
    info = rbd_cmd(c, &rc, "INFO", "clients", (const char *)NULL);
    ck_assert_ptr_nonnull(strstr(info, "connected_clients:1"));
    ck_assert_ptr_null(strstr(info, "# Server"));
    rb_conn_close(c);
}
END_TEST

/* Replies and errors as RedisBloom gives them for the same calls. */
START_TEST(test_daemon_bf_replies_match_redisbloom)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "bf", "0.01", "1000");
    rbd_expect(c, "ERR item exists", "BF.RESERVE", "bf", "0.01", "1000");
    rbd_expect(c, "1", "BF.ADD", "bf", "item1");
    rbd_expect(c, "0", "BF.ADD", "bf", "item1");
    rbd_expect(c, "1\n1\n0", "BF.MADD", "bf", "item2", "item3", "item1");
    rbd_expect(c, "1", "BF.EXISTS", "bf", "item1");
    rbd_expect(c, "0", "BF.EXISTS", "bf", "nope");
    rbd_expect(c, "0", "BF.EXISTS", "missing", "item1");
    rbd_expect(c, "1\n0", "BF.MEXISTS", "bf", "item2", "nope");
    rbd_expect(c, "3", "BF.CARD", "bf");
    rbd_expect(c, "0", "BF.CARD", "missing");
    rbd_expect(c, "1000", "BF.INFO", "bf", "CAPACITY");
    rbd_expect(c, "1", "BF.INFO", "bf", "FILTERS");
    rbd_expect(c, "3", "BF.INFO", "bf", "ITEMS");
    rbd_expect(c, "2", "BF.INFO", "bf", "EXPANSION");
    rbd_expect(c, "Invalid information value", "BF.INFO", "bf", "COLOUR");
    rbd_expect(c, "ERR not found", "BF.INFO", "missing");
    /* BF.ADD creates a missing filter with RedisBloom's defaults. */
    rbd_expect(c, "1", "BF.ADD", "auto", "x");
    rbd_expect(c, "100", "BF.INFO", "auto", "CAPACITY");
    rbd_expect(c, "2", "BF.INFO", "auto", "EXPANSION");
    /* Errors, word for word. */
    rbd_expect(c, "ERR bad error rate", "BF.RESERVE", "e", "abc", "100");
    rbd_expect(c, "ERR (0 < error rate range < 1) ", "BF.RESERVE", "e", "1.5", "100");
    rbd_expect(c, "ERR (0 < error rate range < 1) ", "BF.RESERVE", "e", "0", "100");
    rbd_expect(c, "ERR bad capacity", "BF.RESERVE", "e", "0.01", "x");
    rbd_expect(c, "ERR (capacity should be larger than 0)", "BF.RESERVE", "e", "0.01", "0");
    rbd_expect(c, "ERR no expansion", "BF.RESERVE", "e", "0.01", "10", "EXPANSION");
    rbd_expect(c, "ERR bad expansion", "BF.RESERVE", "e", "0.01", "10", "EXPANSION", "x");
    rbd_expect(c, "Nonscaling filters cannot expand", "BF.RESERVE", "e", "0.01", "10",
               "NONSCALING", "EXPANSION", "2");
    rbd_expect(c, "Nonscaling filters cannot expand", "BF.RESERVE", "e", "0.01", "10",
               "EXPANSION", "2", "NONSCALING");
    rbd_expect(c, "ERR wrong number of arguments for 'bf.add' command", "BF.ADD", "bf");
    rbd_expect(c, "ERR not found", "BF.INSERT", "missing", "NOCREATE", "ITEMS", "a");
    rbd_expect(c, "Unknown argument received", "BF.INSERT", "bf", "FOO", "ITEMS", "a");
    rbd_expect(c, "Bad error rate", "BF.INSERT", "new", "ERROR", "x", "ITEMS", "a");
    rbd_expect(c, "1\n0", "BF.INSERT", "ins", "CAPACITY", "50", "ERROR", "0.001", "ITEMS",
               "a", "a");
    rbd_expect(c, "50", "BF.INFO", "ins", "CAPACITY");
    /* A full non-scaling filter: the failing item ends the array. */
    rbd_expect(c, "OK", "BF.RESERVE", "tiny", "0.01", "2", "NONSCALING", "LAYOUT", "standard");
    rbd_expect(c, "(nil)", "BF.INFO", "tiny", "EXPANSION");
    rbd_expect(c, "1\n1\nERR non scaling filter is full", "BF.MADD", "tiny", "p", "q", "r");
    rbd_expect(c, "0", "BF.ADD", "tiny", "p");
    rbd_expect(c, "ERR non scaling filter is full", "BF.ADD", "tiny", "s");
    rbd_expect(c, "2", "BF.CARD", "tiny");
    rb_conn_close(c);
}
END_TEST

START_TEST(test_daemon_ring_commands)
{
    rb_segment_t *seg;
    rb_node_t n;
    rb_conn_t *c;
    int rc;
    const char *got;

    rbd_start(&d, "ring-replicas 100");
    c = rbd_connect(&d);
    rbd_expect(c, "ERR ring is empty", "RING.GET", "k");
    rbd_expect(c, "OK", "RING.ADD", "alpha");
    rbd_expect(c, "OK", "RING.ADD", "beta", "2");
    rbd_expect(c, "ERR node exists", "RING.ADD", "beta");
    rbd_expect(c, "ERR weight must be an integer in [1, 65535]", "RING.ADD", "g", "0");
    rbd_expect(c, "ERR weight must be an integer in [1, 65535]", "RING.WEIGHT", "beta", "-1");
    rbd_expect(c, "ERR no such node", "RING.REMOVE", "gamma");
    rbd_expect(c, "alpha\n1\nbeta\n2", "RING.NODES");
    rbd_expect(c, "OK", "RING.WEIGHT", "alpha", "3");
    got = rbd_cmd(c, &rc, "RING.GET", "some-key", (const char *)NULL);
    /* The daemon's answer is the segment's answer. */
    seg = attach_seg();
    ck_assert_int_eq(rb_ring_lookup(seg, "some-key", 8, &n), RB_OK);
    ck_assert_str_eq(got, n.name);
    got = rbd_cmd(c, &rc, "RING.GETN", "some-key", "5", (const char *)NULL);
    ck_assert(strcmp(got, "alpha\nbeta") == 0 || strcmp(got, "beta\nalpha") == 0);
    {
        /* The largest n on two nodes: two answers, and the daemon sizes
         * its buffer by the ring, not by n (65535 answers would be 17 MB,
         * which VmPeak would show). */
        long peak0 = rbd_proc_kb(d.pid, "VmPeak:"), peak1;
        got = rbd_cmd(c, &rc, "RING.GETN", "some-key", "65535", (const char *)NULL);
        ck_assert(strcmp(got, "alpha\nbeta") == 0 || strcmp(got, "beta\nalpha") == 0);
        peak1 = rbd_proc_kb(d.pid, "VmPeak:");
        ck_assert_msg(peak1 - peak0 < 4096, "VmPeak grew by %ld KiB", peak1 - peak0);
    }
    rbd_expect(c, "Mode\nxxh3\nReplicas\n100\nNodes\n2\nPoints\n500\nVersion\n4\nBytes per copy\n"
               "6208", "RING.INFO");
    rbd_expect(c, "OK", "RING.MODE", "seed");
    rbd_expect(c, "ERR unknown ring mode 'nope' (xxh3, ketama, nginx or seed)", "RING.MODE", "nope");
    rbd_expect(c, "OK", "RING.REMOVE", "alpha");
    rbd_expect(c, "beta", "RING.GET", "k");
    rb_segment_close(seg);
    rb_conn_close(c);
}
END_TEST

/* appendfsync always: every acknowledged add survives SIGKILL of the daemon
 * even with the segment removed too; the ring comes back as acknowledged. */
START_TEST(test_daemon_sigkill_and_lost_segment_keep_every_ack)
{
    enum { N = 20000 };
    static char keys[N][48];
    rb_key_t k[N];
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_node_t nodes[4];
    size_t count;
    rb_conn_t *c;

    rbd_start(&d, "appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    for (int i = 0; i < N; i++) {
        k[i].ptr = keys[i];
        k[i].len = (size_t)snprintf(keys[i], sizeof(keys[i]), "https://crash.example/%d", i);
    }
    ck_assert_int_eq(rb_conn_ring_add(c, "n1", 2, 1), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "n2", 2, 3), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "n3", 2, 1), RB_OK);
    ck_assert_int_eq(rb_conn_ring_remove(c, "n3", 2), RB_OK);
    ck_assert_int_ge(rb_conn_bf_add_many(c, "urls", 4, k, N, NULL), N - 200);
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);

    rbd_launch(&d, NULL);
    seg = attach_seg();
    ck_assert_int_eq(rb_bloom_open(seg, "urls", 4, &bf), RB_OK);
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, k[i].ptr, k[i].len), 1);
    ck_assert_int_eq(rb_ring_nodes(seg, nodes, 4, &count), RB_OK);
    ck_assert_uint_eq(count, 2);
    ck_assert_str_eq(nodes[0].name, "n1");
    ck_assert_str_eq(nodes[1].name, "n2");
    ck_assert_uint_eq(nodes[1].weight, 3);
    rb_bloom_close(bf);
    rb_segment_close(seg);
}
END_TEST

/* The segment left in place: a daemon killed during a stream of ring
 * updates; a reader keeps answering (valid names only) throughout, and the
 * restarted daemon re-attaches with the last acknowledged membership. */
typedef struct kill_box {
    _Atomic int stop;
    _Atomic uint64_t answers, bad, errors;
} kill_box_t;

START_TEST(test_daemon_killed_mid_update_readers_keep_answering)
{
    kill_box_t *box = mmap(NULL, sizeof(*box), PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char name[32], key[64];
    int acked = 0, status;
    rb_node_t nodes[64];
    size_t count;
    rb_segment_t *seg;
    rb_conn_t *c;
    pid_t reader;

    ck_assert(box != MAP_FAILED);
    memset(box, 0, sizeof(*box));
    rbd_start(&d, "appendfsync everysec");
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_ring_add(c, "w0", 2, 1), RB_OK);
    reader = fork();
    ck_assert_int_ge(reader, 0);
    if (reader == 0) {
        rb_segment_t *rs;
        uint64_t i = 0;
        if (rb_segment_attach(d.inst, RB_ATTACH_STALE_OK, &rs) != RB_OK)
            _exit(3);
        while (!atomic_load(&box->stop)) {
            rb_node_t n;
            int len = snprintf(key, sizeof(key), "k%llu", (unsigned long long)i++);
            int rc = rb_ring_lookup(rs, key, (size_t)len, &n);
            if (rc != RB_OK)
                atomic_fetch_add(&box->errors, 1);
            else if (n.name[0] != 'w')
                atomic_fetch_add(&box->bad, 1);
            atomic_fetch_add(&box->answers, 1);
        }
        rb_segment_close(rs);
        _exit(0);
    }
    /* Stream membership changes; kill the daemon in the middle. */
    for (int i = 1; i < 40; i++) {
        snprintf(name, sizeof(name), "w%d", i);
        ck_assert_int_eq(rb_conn_ring_add(c, name, strlen(name), (uint32_t)(1 + i % 3)), RB_OK);
        acked = i;
    }
    {
        /* One more request in flight while the daemon dies. */
        const char *argv[2] = { "RING.ADD", "w40" };
        size_t argl[2] = { 8, 3 };
        char buf[64];
        pid_t killer = fork();
        if (killer == 0) {
            usleep(100);
            kill(d.pid, SIGKILL);
            _exit(0);
        }
        /* Answered or cut off by the kill: either is fine here. */
        int inflight_rc = rb_conn_command(c, 2, argv, argl, buf, sizeof(buf));
        ck_assert(inflight_rc == RB_OK || inflight_rc == RB_EDAEMON);
        waitpid(killer, NULL, 0);
    }
    rbd_stop(&d, SIGKILL);
    rb_conn_close(c);
    {
        uint64_t before = atomic_load(&box->answers);
        usleep(200000);   /* the daemon is dead: readers still answer */
        ck_assert_uint_gt(atomic_load(&box->answers), before + 1000);
    }
    rbd_launch(&d, NULL);
    usleep(100000);
    atomic_store(&box->stop, 1);
    ck_assert_int_eq(waitpid(reader, &status, 0), reader);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    printf("daemon killed mid-update: reader made %llu lookups, %llu invalid, %llu errors\n",
           (unsigned long long)box->answers, (unsigned long long)box->bad,
           (unsigned long long)box->errors);
    ck_assert_uint_eq(box->bad, 0);
    ck_assert_uint_eq(box->errors, 0);
    seg = attach_seg();
    ck_assert_int_eq(rb_ring_nodes(seg, nodes, 64, &count), RB_OK);
    /* Every acknowledged node, plus perhaps the one in flight. */
    ck_assert(count == (size_t)acked + 1 || count == (size_t)acked + 2);
    rb_segment_close(seg);
    ck_assert_int_ge(rbd_log_count(&d, "re-attached to the live segment"), 1);
    munmap(box, sizeof(*box));
}
END_TEST

/* Another uid can connect, read and look up, but every mutation gets
 * NOPERM and changes nothing. */
START_TEST(test_daemon_other_uid_reads_but_cannot_write)
{
    rb_conn_t *c;
    int status;
    pid_t pid;

    if (getuid() != 0) {
        printf("access test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_ring_add(c, "node-a", 6, 1), RB_OK);
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "1000");
    rbd_expect(c, "1", "BF.ADD", "f", "seen");
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rb_segment_t *seg;
        rb_bloom_t *bf;
        rb_node_t n;
        rb_conn_t *o;
        char buf[512];
        const char *add[3] = { "BF.ADD", "f", "new" }, *ring[2] = { "RING.ADD", "evil" };
        const char *save[1] = { "SAVE" }, *exist[3] = { "BF.EXISTS", "f", "seen" };
        size_t addl[3] = { 6, 1, 3 }, ringl[2] = { 8, 4 }, savel[1] = { 4 }, exl[3] = { 9, 1, 4 };
        if (rb_test_become_other() != 0)
            _exit(10);
        if (rb_segment_attach(d.inst, 0, &seg) != RB_OK || rb_ring_lookup(seg, "k", 1, &n) != 0 ||
            strcmp(n.name, "node-a") != 0 || rb_bloom_open(seg, "f", 1, &bf) != RB_OK ||
            rb_bloom_contains(bf, "seen", 4) != 1)
            _exit(11);
        if (rb_conn_open(NULL, d.sock, 5000, &o) != RB_OK)
            _exit(12);
        if (rb_conn_command(o, 3, exist, exl, buf, sizeof(buf)) != RB_OK || strcmp(buf, "1") != 0)
            _exit(13);
        if (rb_conn_command(o, 3, add, addl, buf, sizeof(buf)) != RB_EPERM ||
            strstr(buf, "NOPERM") != buf)
            _exit(14);
        if (rb_conn_command(o, 2, ring, ringl, buf, sizeof(buf)) != RB_EPERM ||
            rb_conn_command(o, 1, save, savel, buf, sizeof(buf)) != RB_EPERM ||
            rb_conn_ring_remove(o, "node-a", 6) != RB_EPERM)
            _exit(15);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child step %d failed",
                  WEXITSTATUS(status));
    /* Nothing changed. */
    rbd_expect(c, "0", "BF.EXISTS", "f", "new");
    rbd_expect(c, "1", "BF.CARD", "f");
    rbd_expect(c, "node-a\n1", "RING.NODES");
    rb_conn_close(c);
}
END_TEST

/* Two processes add the same 100,000 keys at once: for every key exactly
 * one of them is told it was new. */
START_TEST(test_daemon_concurrent_adds_exactly_one_winner)
{
    enum { N = 100000 };
    uint8_t *res = mmap(NULL, 2 * N, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pids[2];
    rb_conn_t *c;
    long both = 0, none = 0;

    ck_assert(res != MAP_FAILED);
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    /* Sized so that a false positive among 10^5 keys is practically impossible. */
    rbd_expect(c, "OK", "BF.RESERVE", "crawl", "0.0000001", "200000", "NONSCALING");
    rb_conn_close(c);
    for (int p = 0; p < 2; p++) {
        pids[p] = fork();
        ck_assert_int_ge(pids[p], 0);
        if (pids[p] == 0) {
            static char keys[N][40];
            static rb_key_t k[N];
            rb_conn_t *cc;
            /* Different orders, so the two streams really interleave. */
            for (int i = 0; i < N; i++) {
                int j = p ? N - 1 - i : i;
                k[i].ptr = keys[i];
                k[i].len = (size_t)snprintf(keys[i], sizeof(keys[i]), "https://u.example/%d", j);
            }
            if (rb_conn_open(NULL, d.sock, 30000, &cc) != RB_OK ||
                rb_conn_bf_add_many(cc, "crawl", 5, k, N, res + (size_t)p * N) < 0)
                _exit(1);
            rb_conn_close(cc);
            _exit(0);
        }
    }
    for (int p = 0; p < 2; p++) {
        int status;
        ck_assert_int_eq(waitpid(pids[p], &status, 0), pids[p]);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (int i = 0; i < N; i++) {
        int a = res[i], b = res[N + (N - 1 - i)];
        both += a && b;
        none += !a && !b;
    }
    printf("concurrent adds: %d keys, both told new: %ld, neither: %ld\n", N, both, none);
    ck_assert_int_eq(both, 0);
    ck_assert_int_eq(none, 0);
    munmap(res, 2 * N);
}
END_TEST

START_TEST(test_daemon_second_daemon_same_instance_refused)
{
    char cmd[512], out[512] = "";
    FILE *p;
    int status;

    rbd_start(&d, NULL);
    snprintf(cmd, sizeof(cmd), "%s -f -c %s 2>&1", rbd_binary(), d.conf);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    if (fgets(out, sizeof(out), p) == NULL)
        out[0] = '\0';
    status = pclose(p);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    ck_assert_ptr_nonnull(strstr(out, "already running"));
}
END_TEST

START_TEST(test_daemon_sighup_reloads_write_access)
{
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "a");
    rbd_write_conf(&d, "allow-write-uid 4242");
    kill(d.pid, SIGHUP);
    usleep(300000);
    rb_conn_close(c);
    c = rbd_connect(&d);
    {
        char want[128];
        snprintf(want, sizeof(want), "NOPERM this user (uid %u) has no permissions to run the "
                 "'ring.add' command", (unsigned)getuid());
        rbd_expect(c, want, "RING.ADD", "b");
    }
    rbd_expect(c, "allow-write-uid\n4242", "CONFIG", "GET", "allow-write-uid");
    rbd_write_conf(&d, NULL);
    kill(d.pid, SIGHUP);
    usleep(300000);
    rbd_expect(c, "OK", "RING.ADD", "b");   /* existing connections follow too */
    rb_conn_close(c);
}
END_TEST

/* A daemon started with a relative -c path, daemonized (so it runs in /),
 * re-reads that file on SIGHUP. */
START_TEST(test_daemon_sighup_rereads_relative_config_path)
{
    char bin[4096], pidf[256];
    rb_conn_t *c = NULL;
    int status, got = 0;
    pid_t pid;
    FILE *f;

    ck_assert_ptr_nonnull(realpath(rbd_binary(), bin));
    rbd_prepare(&d, "timeout 0");
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (chdir(d.dir) != 0)
            _exit(10);
        execl(bin, bin, "-c", "ringbloomd.conf", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "start status %d", status);
    for (int i = 0; i < 500 && rb_conn_open(NULL, d.sock, 1000, &c) != RB_OK; i++)
        usleep(10000);
    ck_assert_ptr_nonnull(c);
    snprintf(pidf, sizeof(pidf), "%s/pid", d.dir);
    f = fopen(pidf, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%d", &d.pid), 1);   /* teardown stops it */
    fclose(f);
    rbd_expect(c, "timeout\n0", "CONFIG", "GET", "timeout");
    rbd_write_conf(&d, "timeout 7");
    kill(d.pid, SIGHUP);
    for (int i = 0; i < 30 && !got; i++) {
        int rc;
        usleep(100000);
        got = strcmp(rbd_cmd(c, &rc, "CONFIG", "GET", "timeout", (const char *)NULL),
                     "timeout\n7") == 0;
    }
    ck_assert_msg(got, "SIGHUP did not re-read the relative config path");
    rb_conn_close(c);
}
END_TEST

/* Waits up to 5 s for instance d.inst to attach (pinned to this uid);
 * returns the handle and the milliseconds it took in *ms. */
static rb_segment_t *attach_within(uint64_t *ms)
{
    struct timespec t0, t1;
    rb_segment_t *seg = NULL;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 100 && rb_segment_attach_owned(d.inst, 0, getuid(), &seg) != RB_OK; i++)
        usleep(50000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *ms = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000 + (uint64_t)(t1.tv_nsec - t0.tv_nsec) / 1000000;
    return seg;
}

/* True if seg's ring has `nodes` nodes and its filter f holds key. */
static int reader_sees(rb_segment_t *seg, size_t nodes, const char *key)
{
    rb_ring_stat_t st;
    rb_bloom_t *bf;
    int in;

    if (rb_ring_stat(seg, &st) != RB_OK || st.nodes != nodes ||
        rb_bloom_open(seg, "f", 1, &bf) != RB_OK)
        return 0;
    in = rb_bloom_contains(bf, key, strlen(key));
    rb_bloom_close(bf);
    return in == 1;
}

/* Someone removes the daemon's segment from /dev/shm while it runs (a
 * cleanup script, systemd's RemoveIPC=): within seconds the daemon
 * republishes the same state under the name and says so (log, INFO); a
 * reader attached before follows it, new readers find it.  Then another
 * user's object is put in its place (renamed over it, as root can): the
 * daemon, as root, removes it and republishes again. */
START_TEST(test_daemon_republishes_a_removed_segment)
{
    char info[4096], from[128], to[128], tmp[96];
    rb_segment_t *old, *fresh;
    uint64_t ms;
    rb_conn_t *c;
    int rc;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "node-a");
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "1000");
    rbd_expect(c, "1", "BF.ADD", "f", "before");
    ck_assert_int_eq(rb_segment_attach_owned(d.inst, 0, getuid(), &old), RB_OK);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    fresh = attach_within(&ms);
    printf("segment removed: a new reader attached again after %llu ms\n",
           (unsigned long long)ms);
    ck_assert_msg(fresh != NULL, "nobody can attach 5 s after the segment was removed");
    ck_assert(reader_sees(fresh, 1, "before"));
    /* Changes after it reach both readers: the old one moves. */
    rbd_expect(c, "OK", "RING.ADD", "node-b");
    rbd_expect(c, "1", "BF.ADD", "f", "after");
    ck_assert(reader_sees(fresh, 2, "after"));
    ck_assert_int_eq(rb_segment_check(old), RB_ERETIRED);
    ck_assert_int_eq(rb_segment_refresh(old), 1);
    ck_assert(reader_sees(old, 2, "after"));
    snprintf(info, sizeof(info), "%s", rbd_cmd(c, &rc, "INFO", "memory", (const char *)NULL));
    ck_assert_ptr_nonnull(strstr(info, "segment_republished:1\r\n"));
    ck_assert_ptr_nonnull(strstr(info, "segment_linked:1\r\n"));
    ck_assert_int_eq(rbd_log_count(&d, "republished the same state"), 1);
    rb_segment_close(fresh);
    rb_segment_close(old);

    if (getuid() != 0) {
        printf("the squatter half needs root; skipped as uid %u\n", (unsigned)getuid());
        rb_conn_close(c);
        return;
    }
    rb_test_instance(tmp, sizeof(tmp));
    rb_test_squat_segment(tmp);
    snprintf(from, sizeof(from), "/dev/shm/ringbloom.%s", tmp);
    snprintf(to, sizeof(to), "/dev/shm/ringbloom.%s", d.inst);
    ck_assert_int_eq(rename(from, to), 0);
    usleep(100000);
    for (int i = 0; i < 50 && rbd_log_count(&d, "republished the same state") < 2; i++)
        usleep(100000);
    ck_assert_int_eq(rbd_log_count(&d, "republished the same state"), 2);
    ck_assert_int_eq(rbd_log_count(&d, "was another object"), 1);
    fresh = attach_within(&ms);
    ck_assert_ptr_nonnull(fresh);
    ck_assert(reader_sees(fresh, 2, "after"));
    rb_segment_close(fresh);
    rb_conn_close(c);
}
END_TEST

/* A corrupt snapshot stops the start (naming the file) unless the operator
 * says --ignore-corrupt. */
START_TEST(test_daemon_corrupt_snapshot_refuses_start)
{
    char snap[256];
    const char *ignore[] = { "--ignore-corrupt", NULL }, *out;
    rb_conn_t *c;
    FILE *f;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "x");
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    snprintf(snap, sizeof(snap), "%s/state/snapshot.rbs", d.dir);
    f = fopen(snap, "r+");
    ck_assert_ptr_nonnull(f);
    fseek(f, 5000, SEEK_SET);
    fputc('Z', f);
    fclose(f);
    out = rbd_start_fails(d.conf);
    ck_assert_ptr_nonnull(strstr(out, snap));
    ck_assert_ptr_nonnull(strstr(out, "checksum mismatch"));
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* nothing half-loaded */
    rbd_launch(&d, ignore);
    c = rbd_connect(&d);
    rbd_expect(c, "PONG", "PING");
    rb_conn_close(c);
}
END_TEST

/* Runs the shell command cmd to its exit: its output (stdout and stderr)
 * into out, NUL-terminated; returns its wait status. */
static int run_to_exit(const char *cmd, char *out, size_t cap)
{
    size_t n = 0;
    FILE *f = popen(cmd, "r");

    ck_assert_ptr_nonnull(f);
    out[0] = '\0';
    while (n + 1 < cap && fgets(out + n, (int)(cap - n), f) != NULL)
        n += strlen(out + n);
    return pclose(f);
}

/* Daemon's output of `ringbloomd -f -c conf` run to its exit, and status. */
static int run_daemon_to_exit(const rbd_proc_t *p, char *out, size_t cap)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "%s -f -c %s 2>&1", rbd_binary(), p->conf);
    return run_to_exit(cmd, out, cap);
}

/* The CLI (RB_CLI, else ../client/ringbloom) run with the arguments args
 * (shell words) to its exit, as run_to_exit; returns its exit status, -1
 * if it did not exit. */
static int run_cli(char *out, size_t cap, const char *args)
{
    const char *cli = getenv("RB_CLI");
    char cmd[1024];
    int status;

    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", cli ? cli : "../client/ringbloom", args);
    status = run_to_exit(cmd, out, cap);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A snapshot that restores (checksum, extents and ring copy all pass) but
 * whose ring does not load - two nodes of one name - stopped the start
 * with the restored segment left in /dev/shm, hidden, because
 * keep-segment is on: readers got RB_EBUSY and every later start took it
 * for another writer's.  Found while writing fuzz_persist, which drives
 * the same restore path.  Nothing half-loaded may stay. */
START_TEST(test_daemon_unloadable_ring_leaves_no_segment)
{
    char snap[256], out[4096] = "";
    unsigned char *data;
    uint64_t sum;
    long len;
    int status, patched = 0;
    rb_conn_t *c;
    FILE *f;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "node-a");
    rbd_expect(c, "OK", "RING.ADD", "node-b");
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    snprintf(snap, sizeof(snap), "%s/state/snapshot.rbs", d.dir);
    f = fopen(snap, "r+");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    data = malloc((size_t)len);
    ck_assert_ptr_nonnull(data);
    rewind(f);
    ck_assert_int_eq(fread(data, 1, (size_t)len, f), len);
    for (long i = 64; i + 8 <= len; i++)
        if (memcmp(data + i, "node-b\0\0", 8) == 0) {
            data[i + 5] = 'a';
            patched++;
        }
    ck_assert_int_gt(patched, 0);
    sum = htole64(rbi_hash_xxh3(data + 64, (size_t)len - 64));
    memcpy(data + 32, &sum, 8);
    sum = htole64(rbi_hash_xxh3(data, 56));   /* and the header's own checksum */
    memcpy(data + 56, &sum, 8);
    rewind(f);
    ck_assert_int_eq(fwrite(data, 1, (size_t)len, f), len);
    fclose(f);
    free(data);
    status = run_daemon_to_exit(&d, out, sizeof(out));
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    ck_assert_msg(strstr(out, "cannot load the ring") != NULL, "%s", out);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* nothing half-loaded */
}
END_TEST

/* Another user creates an object under the instance's name while the
 * daemon is down (/dev/shm is writable by everyone): the daemon must not
 * adopt it (its owner could rewrite what readers trust) and says why. */
START_TEST(test_daemon_refuses_squatted_segment)
{
    char out[4096] = "";
    rb_conn_t *c;
    int status;

    if (getuid() != 0) {
        printf("squatting test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "kept");
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rb_test_squat_segment(d.inst);
    status = run_daemon_to_exit(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "belongs to another user") != NULL, "output: %s", out);
    ck_assert_msg(strstr(out, d.inst) != NULL, "output: %s", out);
    /* The owner (root here) removes it; the daemon starts from its files. */
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.EXISTS", "f", "kept");
    rb_conn_close(c);
}
END_TEST

/* A state directory another user made in advance is refused (it could
 * read the log and snapshot, or replace them). */
START_TEST(test_daemon_refuses_foreign_directory)
{
    char out[4096] = "", state[200], extra[300];
    int status;

    if (getuid() != 0) {
        printf("directory test needs root to chown; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    snprintf(state, sizeof(state), "%s/squatted", d.dir);
    ck_assert_int_eq(mkdir(state, 0777), 0);
    ck_assert_int_eq(chown(state, RB_TEST_OTHER_UID, RB_TEST_OTHER_UID), 0);
    snprintf(extra, sizeof(extra), "dir %s", state);
    rbd_write_conf(&d, extra);
    status = run_daemon_to_exit(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "belongs to uid 65534") != NULL, "output: %s", out);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* nothing created */
}
END_TEST

/* Issue #10 item 7: in a directory anyone can write, another user puts a
 * symlink under the name of the daemon's run directory (the non-root
 * default /tmp/ringbloom-<uid> is such a name), pointing at a directory
 * they can use: here a sticky, world-writable one of root's, which a
 * stat-based check accepted with a warning.  The daemon would put its
 * pidfile and socket there, and an impostor could take the socket's name
 * first and receive the clients' keys.  The daemon refuses to follow the
 * link, names it, and creates nothing. */
START_TEST(test_daemon_refuses_symlinked_run_directory)
{
    char shared[200], pub[200], run[220], extra[600], out[4096] = "";
    int status;

    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    snprintf(shared, sizeof(shared), "%s/tmp", d.dir);
    snprintf(pub, sizeof(pub), "%s/pub", d.dir);
    snprintf(run, sizeof(run), "%s/run", shared);
    ck_assert_int_eq(mkdir(shared, 0700), 0);
    ck_assert_int_eq(chmod(shared, 01777), 0);
    ck_assert_int_eq(mkdir(pub, 0700), 0);
    ck_assert_int_eq(chmod(pub, 01777), 0);
    ck_assert_int_eq(symlink(pub, run), 0);
    snprintf(extra, sizeof(extra), "pidfile %s/ringbloomd.pid\nsocket %s/s.sock", run, run);
    rbd_write_conf(&d, extra);
    status = run_daemon_to_exit(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, run) != NULL && strstr(out, "is a symbolic link in") != NULL,
                  "output: %s", out);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* nothing created */
    ck_assert_int_eq(access(pub, F_OK), 0);
    {
        char pidfile[300];
        snprintf(pidfile, sizeof(pidfile), "%s/ringbloomd.pid", pub);
        ck_assert_int_eq(access(pidfile, F_OK), -1);
    }
}
END_TEST

/* The other side of the rule: a symlink in a directory only root (or the
 * daemon's user) can write was put there by them, like Debian's
 * /var/run -> /run, and is followed; its target (here reached through
 * "..") is judged the same way and missing levels behind it are created.
 * The daemon starts there and the CLI finds its user through the link. */
START_TEST(test_daemon_run_directory_behind_admin_symlink)
{
    char link[200], target[300], extra[600], args[400], out[4096];
    const char *base;
    rb_conn_t *c;
    int status;

    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    base = strrchr(d.dir, '/') + 1;
    snprintf(link, sizeof(link), "%s/varrun", d.dir);
    snprintf(target, sizeof(target), "../%s/run", base);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_lt(snprintf(d.sock, sizeof(d.sock), "%s/ringbloom/s.sock", link),
                     (int)sizeof(d.sock));
    snprintf(extra, sizeof(extra), "pidfile %s/ringbloom/ringbloomd.pid\nsocket %s", link,
             d.sock);
    rbd_write_conf(&d, extra);
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "behind-the-link");
    rb_conn_close(c);
    snprintf(target, sizeof(target), "%s/run/ringbloom/s.sock", d.dir);
    ck_assert_int_eq(access(target, F_OK), 0);
    snprintf(args, sizeof(args), "-i %s -s %s lookup k", d.inst, d.sock);
    status = run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && strcmp(out, "behind-the-link\n") == 0, "status %d: %s", status,
                  out);
}
END_TEST

typedef struct other_client {
    int conn_rc;        /* rb_conn_open on the instance's default socket */
    int cli_status;     /* `ringbloom -i INSTANCE info` */
    char out[4096];     /* its output */
} other_client_t;

/* As uid 65534 with XDG_RUNTIME_DIR=xdg (so the default socket is
 * xdg/ringbloom/<instance>.sock), in a child: what rb_conn_open and the
 * CLI do with d's instance.  Needs root. */
static void run_other_client(const char *xdg, other_client_t *res)
{
    char args[256];
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rb_conn_t *c;
        if (rb_test_become_other() != 0 || setenv("XDG_RUNTIME_DIR", xdg, 1) != 0)
            _exit(10);
        res->conn_rc = rb_conn_open(d.inst, NULL, 2000, &c);
        if (res->conn_rc == RB_OK)
            rb_conn_close(c);
        snprintf(args, sizeof(args), "-i %s info", d.inst);
        res->cli_status = run_cli(res->out, sizeof(res->out), args);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "client status %d", status);
}

/* The same attack on the clients: as a non-root user the default socket is
 * $XDG_RUNTIME_DIR/ringbloom/<instance>.sock (or under /tmp/ringbloom-<uid>).
 * Here XDG_RUNTIME_DIR is a sticky, world-writable directory where another
 * user (root) made "ringbloom" a symlink to the live daemon's directory:
 * clients followed it and talked to whatever listened there.  Then a
 * directory of a third user takes its place.  A client of uid 65534 refuses
 * both, rb_conn_open with RB_EOWNER and the CLI naming the path, and
 * connects nowhere.  Needs root to switch uid. */
START_TEST(test_daemon_client_refuses_untrusted_socket_directory)
{
    other_client_t *res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char xdg[200], link[220], alias[300];

    if (getuid() != 0) {
        printf("client directory test needs root to switch uid; running as uid %u it checks "
               "nothing\n", (unsigned)getuid());
        return;
    }
    ck_assert(res != MAP_FAILED);
    rbd_start(&d, NULL);
    snprintf(xdg, sizeof(xdg), "%s/xdg", d.dir);
    snprintf(link, sizeof(link), "%s/ringbloom", xdg);
    snprintf(alias, sizeof(alias), "%s/%s.sock", d.dir, d.inst);
    ck_assert_int_eq(mkdir(xdg, 0700), 0);
    ck_assert_int_eq(chmod(xdg, 01777), 0);
    ck_assert_int_eq(symlink(d.dir, link), 0);
    ck_assert_int_eq(symlink("s.sock", alias), 0);   /* <instance>.sock answers there */
    run_other_client(xdg, res);
    ck_assert_int_eq(res->conn_rc, RB_EOWNER);
    ck_assert_msg(res->cli_status == 3 && strstr(res->out, link) != NULL &&
                  strstr(res->out, "is a symbolic link in") != NULL,
                  "status %d: %s", res->cli_status, res->out);

    ck_assert_int_eq(unlink(link), 0);
    ck_assert_int_eq(mkdir(link, 0755), 0);
    ck_assert_int_eq(chown(link, 12345, 12345), 0);
    run_other_client(xdg, res);
    ck_assert_int_eq(res->conn_rc, RB_EOWNER);
    ck_assert_msg(res->cli_status == 3 && strstr(res->out, link) != NULL &&
                  strstr(res->out, "belongs to uid 12345") != NULL,
                  "status %d: %s", res->cli_status, res->out);
    munmap(res, sizeof(*res));
}
END_TEST

/* Issue #10 item 8: with the daemon down, another user creates a valid
 * segment under the instance's name.  The CLI pins the daemon's user (the
 * owner of the socket's directory: root here) and refuses the object
 * instead of answering from it; told the other uid with --owner, it
 * reads it.  Needs root to switch uid. */
START_TEST(test_daemon_cli_refuses_squatted_segment)
{
    char args[400], out[4096];
    rb_conn_t *c;
    int status;

    if (getuid() != 0) {
        printf("squatting test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "real-node");
    rb_conn_close(c);
    snprintf(args, sizeof(args), "-i %s -s %s lookup some-key", d.inst, d.sock);
    status = run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && strcmp(out, "real-node\n") == 0, "status %d: %s", status, out);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rb_test_squat_segment(d.inst);
    status = run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 3 && strstr(out, "not to be trusted") != NULL &&
                  strstr(out, "the daemon's user is uid 0") != NULL, "status %d: %s", status, out);
    snprintf(args, sizeof(args), "-i %s -s %s --owner 65534 lookup some-key", d.inst, d.sock);
    status = run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 1 && strstr(out, "the ring has no nodes") != NULL,
                  "status %d: %s", status, out);
}
END_TEST

/* Issue #10 item 11: a daemon that takes a request and never answers (a
 * listening socket nobody accepts from: the kernel completes connects).
 * The library says RB_ETIMEDOUT, not "cannot reach the daemon"; the CLI
 * says how long it waited and, for a change, that it may have been
 * applied. */
START_TEST(test_daemon_cli_timeout_says_change_may_be_applied)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char dir[64], args[300], out[4096];
    rb_conn_t *c;
    int fd, status;

    snprintf(dir, sizeof(dir), "/tmp/rbtest.%d.XXXXXX", (int)rb_test_main_pid);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/mute.sock", dir);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 16), 0);

    ck_assert_int_eq(rb_conn_open(NULL, sa.sun_path, 300, &c), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "n", 1, 1), RB_ETIMEDOUT);
    rb_conn_close(c);
    snprintf(args, sizeof(args), "-s %s --timeout 1 node add n1", sa.sun_path);
    status = run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 3 && strstr(out, "ringbloom: node: the daemon did not answer within "
                                        "1 s; the change may have been applied") != NULL,
                  "status %d: %s", status, out);
    snprintf(args, sizeof(args), "-s %s --timeout 1 info", sa.sun_path);
    status = run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 3 && strstr(out, "ringbloom: info: the daemon did not answer "
                                        "within 1 s (socket") != NULL &&
                  strstr(out, "may have been applied") == NULL, "status %d: %s", status, out);
    close(fd);
    ck_assert_int_eq(unlink(sa.sun_path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A node name is whatever an allowed writer chose, tabs and newlines
 * included: `nodes` and `lookup` print it escaped, so it cannot pass for
 * other lines or fields. */
START_TEST(test_daemon_cli_escapes_node_names)
{
    static const char *const escaped[] = { "a\\tb", "fake\\t9\\nline", "x\\\\y\\x01" };
    char args[400], out[4096], *line, *save;
    rb_conn_t *c;
    int status, lines = 0;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_ring_add(c, "a\tb", 3, 1), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "fake\t9\nline", 11, 1), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "x\\y\x01", 4, 2), RB_OK);
    rb_conn_close(c);
    snprintf(args, sizeof(args), "-i %s -s %s nodes", d.inst, d.sock);
    status = run_cli(out, sizeof(out), args);
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(out, "a\\tb\t1\nfake\\t9\\nline\t1\nx\\\\y\\x01\t2\n");
    snprintf(args, sizeof(args), "-i %s -s %s lookup some-key -n 3", d.inst, d.sock);
    status = run_cli(out, sizeof(out), args);
    ck_assert_int_eq(status, 0);
    for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        int known = 0;
        for (size_t i = 0; i < 3; i++)
            known |= strcmp(line, escaped[i]) == 0;
        ck_assert_msg(known, "unexpected line [%s]", line);
        lines++;
    }
    ck_assert_int_eq(lines, 3);
}
END_TEST

/* A segment mode that would let others write is a config error. */
START_TEST(test_daemon_refuses_writable_segment_mode)
{
    char out[4096] = "";
    int status;

    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    rbd_write_conf(&d, "segment-mode 0664");
    status = run_daemon_to_exit(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "segment-mode: '0664' lets group or others write") != NULL,
                  "output: %s", out);
}
END_TEST

START_TEST(test_daemon_limits_give_clear_errors)
{
    char *big = malloc(70000);
    rb_conn_t *c, *extra[1];
    const char *argv[3] = { "BF.ADD", "f", big };
    size_t argl[3] = { 6, 1, 65537 };
    char buf[512];

    memset(big, 'k', 70000);
    rbd_start(&d, "max-key-bytes 65536\nmax-clients 2\nmax-nodes 2");
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_command(c, 3, argv, argl, buf, sizeof(buf)), RB_EREPLY);
    ck_assert_str_eq(buf, "ERR key too long (65537 bytes, max-key-bytes is 65536)");
    argl[2] = 65536;
    ck_assert_int_eq(rb_conn_command(c, 3, argv, argl, buf, sizeof(buf)), RB_OK);
    rbd_expect(c, "ERR empty key", "BF.ADD", "f", "");
    rbd_expect(c, "OK", "RING.ADD", "a");
    rbd_expect(c, "OK", "RING.ADD", "b");
    rbd_expect(c, "ERR max number of nodes reached (max-nodes is 2)", "RING.ADD", "c");
    /* Third client: told why, then disconnected (read before sending, as
     * the daemon closes at once). */
    ck_assert_int_eq(rb_conn_open(NULL, d.sock, 2000, &extra[0]), RB_OK);
    {
        int fd = rbd_raw_connect(&d);
        ssize_t n, got = 0;
        while ((n = recv(fd, buf + got, sizeof(buf) - 1 - (size_t)got, 0)) > 0)
            got += n;
        buf[got] = '\0';
        close(fd);
        ck_assert_str_eq(buf, "-ERR max number of clients reached\r\n");
    }
    rb_conn_close(extra[0]);
    rb_conn_close(c);
    free(big);
}
END_TEST

/* A reader attached before the daemon died keeps answering, and follows
 * the restarted daemon to its new segment without being told. */
START_TEST(test_daemon_reader_follows_restart_with_new_segment)
{
    rb_segment_t *r;
    rb_bloom_t *bf;
    rb_node_t n;
    rb_conn_t *c;
    int moved = 0;

    rbd_start(&d, "appendfsync always");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "before");
    rbd_expect(c, "1", "BF.ADD", "f", "old-key");
    rb_conn_close(c);
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &r), RB_OK);
    ck_assert_int_eq(rb_bloom_open(r, "f", 1, &bf), RB_OK);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    /* Daemon gone, segment unlinked: the mapping still answers. */
    ck_assert_int_eq(rb_ring_lookup(r, "k", 1, &n), RB_OK);
    ck_assert_str_eq(n.name, "before");
    rbd_launch(&d, NULL);                   /* restores snapshot + log */
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "after");
    rbd_expect(c, "OK", "RING.REMOVE", "before");
    rbd_expect(c, "1", "BF.ADD", "f", "new-key");
    rb_conn_close(c);
    /* Within a few seconds (stale heartbeat), lookups move by themselves. */
    for (int i = 0; i < 200 && !moved; i++) {
        for (int j = 0; j < 2048; j++)
            ck_assert_int_eq(rb_ring_lookup(r, "k", 1, &n), RB_OK);
        moved = strcmp(n.name, "after") == 0;
        if (!moved)
            usleep(50000);
    }
    ck_assert_msg(moved, "reader never moved to the restarted daemon's segment");
    ck_assert_int_eq(rb_bloom_contains(bf, "new-key", 7), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, "old-key", 7), 1);
    rb_bloom_close(bf);
    rb_segment_close(r);
}
END_TEST

/* The log after a crash: a torn last record is dropped with a warning
 * (and the file kept), damage in the middle stops the start. */
static void log_path(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/state/appendonly.rbl", d.dir);
}

/* The real last record of the log (BF.ADD f k3, 22 bytes) cut after each
 * of its first 1..21 bytes, as a crash mid-write leaves it: every restart
 * accepts the log with a warning, keeps the cut file as .torn, and has
 * every key before the cut. */
static void torn_tail_every_cut(const char *logp, const char *kept)
{
    enum { LAST = 9 + 2 + 1 + 4 + 4 + 2 };
    char snap[256];
    char *snap_data, *log_data, *torn;
    size_t snap_len, log_len, torn_len;

    snprintf(snap, sizeof(snap), "%s/state/snapshot.rbs", d.dir);
    snap_data = rbd_read_file(snap, &snap_len);
    log_data = rbd_read_file(logp, &log_len);
    ck_assert_uint_gt(log_len, 32 + LAST);
    ck_assert(memcmp(log_data + log_len - 2, "k3", 2) == 0);
    for (size_t keep = 1; keep < LAST; keep++) {
        size_t len = log_len - LAST + keep;
        int warned = rbd_log_count(&d, "torn record");
        rb_segment_t *seg;
        rb_bloom_t *bf;

        rbd_write_file(snap, snap_data, snap_len);
        rbd_write_file(logp, log_data, len);
        unlink(kept);
        rb_segment_unlink(d.inst);
        rbd_launch(&d, NULL);
        ck_assert_msg(rbd_log_count(&d, "torn record") == warned + 1, "no torn-tail warning for a cut after %zu "
                      "bytes of the last record", keep);
        torn = rbd_read_file(kept, &torn_len);
        ck_assert(torn_len == len && memcmp(torn, log_data, len) == 0);
        free(torn);
        seg = attach_seg();
        ck_assert_int_eq(rb_bloom_open(seg, "f", 1, &bf), RB_OK);
        ck_assert_int_eq(rb_bloom_contains(bf, "k1", 2), 1);
        ck_assert_int_eq(rb_bloom_contains(bf, "k2", 2), 1);
        rb_bloom_close(bf);
        rb_segment_close(seg);
        rbd_stop(&d, SIGKILL);
    }
    /* Back to the whole files for the cases below. */
    rbd_write_file(snap, snap_data, snap_len);
    rbd_write_file(logp, log_data, log_len);
    unlink(kept);
    rb_segment_unlink(d.inst);
    free(snap_data);
    free(log_data);
}

START_TEST(test_daemon_torn_tail_accepted_middle_damage_refused)
{
    char logp[256], kept[300];
    const char *out;
    struct stat st;
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_conn_t *c;
    FILE *f;

    rbd_start(&d, "appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "k1");
    rbd_expect(c, "1", "BF.ADD", "f", "k2");
    rbd_expect(c, "1", "BF.ADD", "f", "k3");
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    log_path(logp, sizeof(logp));
    snprintf(kept, sizeof(kept), "%s.torn", logp);
    torn_tail_every_cut(logp, kept);
    /* A torn tail: half a record appended, as a crash mid-write leaves. */
    f = fopen(logp, "a");
    ck_assert_ptr_nonnull(f);
    fwrite("\x40\x00\x00\x00\x12\x34\x56\x78\x06\x01\x00", 1, 11, f);
    fclose(f);
    rbd_launch(&d, NULL);
    seg = attach_seg();
    ck_assert_int_eq(rb_bloom_open(seg, "f", 1, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, "k3", 2), 1);
    rb_bloom_close(bf);
    rb_segment_close(seg);
    ck_assert_int_eq(stat(kept, &st), 0);

    /* Damage in the middle: the length of the first record after the
     * start-up snapshot is garbled, with whole records after it. */
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "k4");
    rbd_expect(c, "1", "BF.ADD", "f", "k5");
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    f = fopen(logp, "r+");
    ck_assert_ptr_nonnull(f);
    fseek(f, 32 + 1, SEEK_SET);   /* length byte 1: the record now "runs past the end" */
    fputc(0x7f, f);
    fclose(f);
    out = rbd_start_fails(d.conf);
    ck_assert_ptr_nonnull(strstr(out, logp));
    ck_assert_ptr_nonnull(strstr(out, "corrupt"));
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);
}
END_TEST

/* Two daemons on one instance with different pidfiles: the segment lock
 * stops the second. */
START_TEST(test_daemon_segment_lock_stops_a_second_writer)
{
    char conf2[256];
    FILE *f;

    rbd_start(&d, NULL);
    snprintf(conf2, sizeof(conf2), "%s/second.conf", d.dir);
    f = fopen(conf2, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "instance %s\nsocket %s/s2.sock\ndir %s/state2\npidfile %s/pid2\n", d.inst,
            d.dir, d.dir, d.dir);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(rbd_start_fails(conf2), "in use by another writer"));
}
END_TEST

/* A client that floods requests and never reads its replies neither
 * starves another client nor grows the daemon without bound. */
START_TEST(test_daemon_flooding_client_does_not_starve_others)
{
    static char flood[1 << 20];
    char status_path[64], line[256];
    long rss_kb = 0;
    rb_conn_t *c;
    int fd;
    FILE *f;

    rbd_start(&d, NULL);
    for (size_t i = 0; i + 6 <= sizeof(flood); i += 6)
        memcpy(flood + i, "PING\r\n", 6);
    fd = rbd_raw_connect(&d);
    ck_assert_int_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    c = rbd_connect(&d);
    for (int round = 0; round < 200; round++) {
        /* Push as much as the socket takes, never reading a reply. */
        for (int j = 0; j < 8; j++)
            if (send(fd, flood, sizeof(flood), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                break;
        rbd_expect(c, "PONG", "PING");
    }
    snprintf(status_path, sizeof(status_path), "/proc/%d/status", (int)d.pid);
    f = fopen(status_path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            rss_kb = strtol(line + 6, NULL, 10);
    fclose(f);
    printf("flooding client: the other client got 200 answers; daemon RSS %ld KiB\n", rss_kb);
    ck_assert_int_lt(rss_kb, 64 * 1024);
    close(fd);
    rb_conn_close(c);
}
END_TEST

/* A restart applies a changed segment-mode to the re-attached segment. */
START_TEST(test_daemon_restart_applies_segment_mode)
{
    char path[160];
    struct stat st;

    rbd_start(&d, "segment-mode 0644");
    snprintf(path, sizeof(path), "/dev/shm/ringbloom.%s", d.inst);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    rbd_stop(&d, SIGKILL);
    rbd_write_conf(&d, "segment-mode 0600");
    rbd_launch(&d, NULL);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
}
END_TEST

/* Aging filters through the daemon: time-based rotation forgets old keys,
 * rotations are logged (replayed after a crash with the segment lost),
 * BF.RESET clears. */
START_TEST(test_daemon_aging_filter_and_reset)
{
    const char *got;
    rb_conn_t *c;
    int rc;

    rbd_start(&d, "appendfsync always");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "adm", "0.001", "1000", "AGING", "1");
    rbd_expect(c, "ERR AGING filters neither scale nor take NONSCALING / EXPANSION",
               "BF.RESERVE", "x", "0.01", "10", "AGING", "5", "NONSCALING");
    rbd_expect(c, "ERR GENERATIONS must be an integer in [2, 32]", "BF.RESERVE", "x", "0.01",
               "10", "AGING", "5", "GENERATIONS", "1");
    rbd_expect(c, "1", "BF.ADD", "adm", "first-seen");
    rbd_expect(c, "0", "BF.ADD", "adm", "first-seen");        /* second hit: admit */
    got = rbd_cmd(c, &rc, "BF.INFO", "adm", (const char *)NULL);
    ck_assert_ptr_nonnull(strstr(got, "Generations\n2\nWindow\n1\nRotations\n"));
    /* Two windows later its generation has been cleared. */
    for (int i = 0; i < 60; i++) {
        got = rbd_cmd(c, &rc, "BF.EXISTS", "adm", "first-seen", (const char *)NULL);
        if (strcmp(got, "0") == 0)
            break;
        usleep(100000);
    }
    rbd_expect(c, "0", "BF.EXISTS", "adm", "first-seen");
    rbd_expect(c, "1", "BF.ADD", "adm", "later");
    rbd_expect(c, "OK", "BF.RESET", "adm");
    rbd_expect(c, "0", "BF.EXISTS", "adm", "later");
    rbd_expect(c, "ERR not found", "BF.RESET", "nope");
    rbd_expect(c, "1", "BF.ADD", "adm", "after-reset");
    rb_conn_close(c);
    /* Crash with the segment gone: snapshot + log (with the rotations and
     * the reset) give back the same state. */
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.EXISTS", "adm", "after-reset");
    rbd_expect(c, "0", "BF.EXISTS", "adm", "later");
    rbd_expect(c, "0", "BF.EXISTS", "adm", "first-seen");
    rb_conn_close(c);
}
END_TEST

/* rb_conn_bf_reserve sends every parameter BF.RESERVE takes: an aging
 * filter arrives with its window and generations, a scaling one with its
 * expansion; OVERFILL, which no command expresses, is refused with nothing
 * sent. */
START_TEST(test_daemon_conn_reserve_sends_every_parameter)
{
    rb_bloom_params_t aging = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED,
                                .flags = RB_BLOOM_AGING, .generations = 3, .window = 60 };
    rb_bloom_params_t scaling = { .capacity = 1000, .error_rate = 0.01,
                                  .layout = RB_BLOOM_STANDARD, .expansion = 4 };
    rb_bloom_params_t over = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD,
                               .flags = RB_BLOOM_NONSCALING | RB_BLOOM_OVERFILL };
    rb_segment_t *seg;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_bf_reserve(c, "aging", 5, &aging), RB_OK);
    ck_assert_int_eq(rb_conn_bf_reserve(c, "scaling", 7, &scaling), RB_OK);
    ck_assert_int_eq(rb_conn_bf_reserve(c, "over", 4, &over), RB_EINVAL);
    rbd_expect(c, "ERR not found", "BF.INFO", "over");
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "aging", 5, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
    ck_assert_uint_eq(st.flags, RB_BLOOM_AGING);
    ck_assert_uint_eq(st.layers, 3);
    ck_assert_uint_eq(st.window, 60);
    ck_assert_uint_eq(st.layout, RB_BLOOM_BLOCKED);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_bloom_open(seg, "scaling", 7, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
    ck_assert_uint_eq(st.flags, 0);
    ck_assert_uint_eq(st.expansion, 4);
    ck_assert_uint_eq(st.layout, RB_BLOOM_STANDARD);
    rb_bloom_close(bf);
    rb_segment_close(seg);
    rb_conn_close(c);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("daemon",
                        RB_TCASE("core", 120, NULL, teardown,
                                 test_daemon_answers_redis_clients_basics,
                                 test_daemon_bf_replies_match_redisbloom,
                                 test_daemon_ring_commands,
                                 test_daemon_sigkill_and_lost_segment_keep_every_ack,
                                 test_daemon_killed_mid_update_readers_keep_answering,
                                 test_daemon_other_uid_reads_but_cannot_write,
                                 test_daemon_concurrent_adds_exactly_one_winner,
                                 test_daemon_second_daemon_same_instance_refused,
                                 test_daemon_sighup_reloads_write_access,
                                 test_daemon_sighup_rereads_relative_config_path,
                                 test_daemon_republishes_a_removed_segment,
                                 test_daemon_corrupt_snapshot_refuses_start,
                                 test_daemon_unloadable_ring_leaves_no_segment,
                                 test_daemon_refuses_squatted_segment,
                                 test_daemon_refuses_writable_segment_mode,
                                 test_daemon_refuses_foreign_directory,
                                 test_daemon_refuses_symlinked_run_directory,
                                 test_daemon_run_directory_behind_admin_symlink,
                                 test_daemon_client_refuses_untrusted_socket_directory,
                                 test_daemon_cli_refuses_squatted_segment,
                                 test_daemon_cli_timeout_says_change_may_be_applied,
                                 test_daemon_cli_escapes_node_names,
                                 test_daemon_limits_give_clear_errors,
                                 test_daemon_reader_follows_restart_with_new_segment,
                                 test_daemon_torn_tail_accepted_middle_damage_refused,
                                 test_daemon_segment_lock_stops_a_second_writer,
                                 test_daemon_flooding_client_does_not_starve_others,
                                 test_daemon_restart_applies_segment_mode,
                                 test_daemon_aging_filter_and_reset,
                                 test_daemon_conn_reserve_sends_every_parameter));
}
