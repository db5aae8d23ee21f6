/*
 * check_daemon.c - ringbloomd end to end: RedisBloom-compatible replies,
 * exactly-once test-and-add across processes, a flooding client; reload
 * and restart; a segment removed while it runs, readers that follow a
 * restarted daemon.  Its other TCases: durability
 * (check_daemon_durability.c), access control and the CLI
 * (check_daemon_access.c).
 */
#include <endian.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/mman.h>

#include "check_daemon.h"
#include "hash.h"

static rbd_proc_t d;

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
    /* redis-cli asks for COMMAND DOCS at start (its hints); check_cmd
     * checks the documents, here only that one comes back. */
    info = rbd_cmd(c, &rc, "COMMAND", "DOCS", "PING", (const char *)NULL);
    ck_assert_int_eq(rc, RB_OK);
    ck_assert_ptr_nonnull(strstr(info, "summary"));
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
    rbd_expect(c, "ERR node exists: 'beta' (RING.WEIGHT and RING.UP, DOWN or DRAIN change it)",
               "RING.ADD", "beta");
    rbd_expect(c, "ERR weight must be an integer in [1, 65535]", "RING.ADD", "g", "0");
    rbd_expect(c, "ERR weight must be an integer in [1, 65535]", "RING.WEIGHT", "beta", "-1");
    rbd_expect(c, "ERR no such node 'gamma' (RING.NODES lists the ring's)",
               "RING.REMOVE", "gamma");
    rbd_expect(c, "alpha\n1\nbeta\n2", "RING.NODES");
    rbd_expect(c, "OK", "RING.WEIGHT", "alpha", "3");
    got = rbd_cmd(c, &rc, "RING.GET", "some-key", (const char *)NULL);
    /* The daemon's answer is the segment's answer. */
    seg = rbd_attach(&d);
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
    rbd_expect(c, "Mode\nxxh3\nReplicas\n100\nNodes\n2\nNodes not up\n0\nPoints\n500\nVersion\n4\n"
               "Bytes per copy\n5232", "RING.INFO");
    rbd_expect(c, "OK", "RING.MODE", "seed");
    rbd_expect(c, "ERR unknown ring mode 'nope' (xxh3, ketama, nginx, seed, maglev or slots)",
               "RING.MODE", "nope");
    rbd_expect(c, "OK", "RING.REMOVE", "alpha");
    rbd_expect(c, "beta", "RING.GET", "k");
    rb_segment_close(seg);
    rb_conn_close(c);
}
END_TEST

/* RING.DOWN never leaves more than ring-down-max-percent (default 50) of
 * the nodes not up (down or draining), whoever sends it (issue 25 item
 * 6: two nginx reports took 2 of 3 nodes down, every failing backend all
 * of them and readers got an empty ring); UP, DRAIN, REMOVE and a DOWN of
 * a node already not up stay allowed; the limit is reloaded on SIGHUP,
 * and 100 lifts it. */
START_TEST(test_daemon_ring_down_bounded_by_share)
{
    rb_segment_t *seg;
    rb_node_t n;
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "only");
    rbd_expect(c, "ERR RING.DOWN refused: 1 of 1 nodes would be down or draining, "
               "past ring-down-max-percent (50%)", "RING.DOWN", "only");
    rbd_expect(c, "OK", "RING.ADD", "b");
    rbd_expect(c, "OK", "RING.ADD", "c");
    rbd_expect(c, "OK", "RING.DOWN", "only");
    rbd_expect(c, "OK", "RING.DOWN", "only");    /* already down: no change in the share */
    rbd_expect(c, "ERR RING.DOWN refused: 2 of 3 nodes would be down or draining, "
               "past ring-down-max-percent (50%)", "RING.DOWN", "b");
    rbd_expect(c, "ERR RING.DOWN refused: 2 of 3 nodes would be down or draining, "
               "past ring-down-max-percent (50%)", "RING.DOWN", "c");
    rbd_expect(c, "ERR no such node 'zz' (RING.NODES lists the ring's)",
               "RING.DOWN", "zz");
    rbd_expect(c, "b\n1\nup\nc\n1\nup\nonly\n1\ndown", "RING.NODES", "WITHSTATES");
    seg = rbd_attach(&d);
    ck_assert_int_eq(rb_ring_lookup(seg, "k", 1, &n), RB_OK);   /* readers keep a ring */
    rb_segment_close(seg);
    /* A draining node counts as not up; DRAIN itself is an operator's. */
    rbd_expect(c, "OK", "RING.DRAIN", "b");
    rbd_expect(c, "OK", "RING.ADD", "d");
    rbd_expect(c, "ERR RING.DOWN refused: 3 of 4 nodes would be down or draining, "
               "past ring-down-max-percent (50%)", "RING.DOWN", "c");
    rbd_expect(c, "OK", "RING.DOWN", "b");       /* draining -> down: no more not up */
    rbd_expect(c, "OK", "RING.UP", "only");
    rbd_expect(c, "OK", "RING.DOWN", "c");       /* 2 of 4 */
    rbd_expect(c, "ERR RING.DOWN refused: 3 of 4 nodes would be down or draining, "
               "past ring-down-max-percent (50%)", "RING.DOWN", "d");
    rbd_write_conf(&d, "ring-down-max-percent 100");
    kill(d.pid, SIGHUP);
    usleep(300000);
    rbd_expect(c, "ring-down-max-percent\n100", "CONFIG", "GET", "ring-down-max-percent");
    rbd_expect(c, "OK", "RING.DOWN", "d");
    rbd_expect(c, "OK", "RING.DOWN", "only");
    rbd_expect(c, "ERR ring is empty", "RING.GET", "k");   /* what the limit prevents */
    rb_conn_close(c);
}
END_TEST

/* The table modes through RESP: RING.MODE maglev [table_size] and slots,
 * RING.SLOTS's assignments, listing, BALANCE and refusals, and the
 * daemon's answers equal the segment's. */
START_TEST(test_daemon_ring_table_modes)
{
    rb_segment_t *seg;
    rb_node_t n;
    rb_conn_t *c;
    int rc;
    const char *got;

    rbd_start(&d, "");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "a");
    rbd_expect(c, "OK", "RING.ADD", "b", "2");
    rbd_expect(c, "OK", "RING.ADD", "c");
    rbd_expect(c, "ERR the ring is not in slots mode", "RING.SLOTS");
    rbd_expect(c, "ERR the ring is not in slots mode", "RING.SLOTS", "0", "1", "a");
    rbd_expect(c, "ERR table size must be a prime in [2, 16777213]", "RING.MODE", "maglev", "1000");
    rbd_expect(c, "ERR table size must be a prime in [2, 16777213]", "RING.MODE", "maglev",
               "16777259");
    rbd_expect(c, "OK", "RING.MODE", "maglev", "1009");
    rbd_expect(c, "Mode\nmaglev\nReplicas\n1009\nNodes\n3\nNodes not up\n0\nPoints\n1009\nVersion\n5\n"
               "Bytes per copy\n10352", "RING.INFO");
    got = rbd_cmd(c, &rc, "RING.GET", "some-key", (const char *)NULL);
    seg = rbd_attach(&d);
    ck_assert_int_eq(rb_ring_lookup(seg, "some-key", 8, &n), RB_OK);
    ck_assert_str_eq(got, n.name);
    rbd_expect(c, "OK", "RING.MODE", "maglev");
    rbd_expect(c, "Mode\nmaglev\nReplicas\n0\nNodes\n3\nNodes not up\n0\nPoints\n65537\nVersion\n6\n"
               "Bytes per copy\n786672", "RING.INFO");
    rbd_expect(c, "ERR slots mode takes no replicas or table size", "RING.MODE", "slots", "1");
    rbd_expect(c, "OK", "RING.MODE", "slots");
    /* Balanced by weight: a 1, b 2, c 1 of 16384. */
    rbd_expect(c, "0\n4095\na\n4096\n12287\nb\n12288\n16383\nc", "RING.SLOTS");
    rbd_expect(c, "OK", "RING.SLOTS", "0", "100", "c", "200", "300", "a");
    rbd_expect(c, "0\n100\nc\n101\n4095\na\n4096\n12287\nb\n12288\n16383\nc", "RING.SLOTS");
    rbd_expect(c, "Mode\nslots\nReplicas\n1\nNodes\n3\nNodes not up\n0\nPoints\n16384\nVersion\n8\n"
               "Bytes per copy\n196840", "RING.INFO");
    /* All or nothing: a bad range, an unknown node refuse every range. */
    rbd_expect(c, "ERR slot must be an integer in [0, 16383]", "RING.SLOTS", "0", "1", "a", "5",
               "16384", "b");
    rbd_expect(c, "ERR start slot 9 is after end slot 8", "RING.SLOTS", "9", "8", "a");
    rbd_expect(c, "ERR syntax error: RING.SLOTS start end node [start end node ...]",
               "RING.SLOTS", "0", "1");
    rbd_expect(c, "ERR no such node", "RING.SLOTS", "0", "16383", "a", "5", "6", "zz");
    rbd_expect(c, "0\n100\nc\n101\n4095\na\n4096\n12287\nb\n12288\n16383\nc", "RING.SLOTS");
    /* An added node owns nothing; a removed node's slots go clockwise. */
    rbd_expect(c, "OK", "RING.ADD", "d");
    rbd_expect(c, "OK", "RING.REMOVE", "a");
    rbd_expect(c, "0\n100\nc\n101\n12287\nb\n12288\n16383\nc", "RING.SLOTS");
    ck_assert_int_eq(rb_ring_lookup(seg, "{user1}.x", 9, &n), RB_OK);
    got = rbd_cmd(c, &rc, "RING.GET", "{user1}.x", (const char *)NULL);
    ck_assert_str_eq(got, n.name);
    rbd_expect(c, "OK", "RING.SLOTS", "balance");
    rbd_expect(c, "0\n8191\nb\n8192\n12287\nc\n12288\n16383\nd", "RING.SLOTS");
    rb_segment_close(seg);
    rb_conn_close(c);
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
    rbd_restart_cold(&d);
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
    rb_bloom_params_t rbl = { .capacity = 1000, .error_rate = 0.01,
                              .layout = RB_BLOOM_REDISBLOOM };
    rb_segment_t *seg;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    rb_conn_t *c;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_bf_reserve(c, "aging", 5, &aging), RB_OK);
    ck_assert_int_eq(rb_conn_bf_reserve(c, "scaling", 7, &scaling), RB_OK);
    ck_assert_int_eq(rb_conn_bf_reserve(c, "over", 4, &over), RB_EINVAL);
    ck_assert_int_eq(rb_conn_bf_reserve(c, "rbl", 3, &rbl), RB_OK);
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
    ck_assert_int_eq(rb_bloom_open(seg, "rbl", 3, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
    ck_assert_uint_eq(st.layout, RB_BLOOM_REDISBLOOM);
    rb_bloom_close(bf);
    rb_segment_close(seg);
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

/* The layout of filter name in d's segment. */
static rb_bloom_layout_t layout_of(const char *name)
{
    rb_segment_t *seg = rbd_attach(&d);
    rb_bloom_stat_t st;
    rb_bloom_t *bf;

    ck_assert_int_eq(rb_bloom_open(seg, name, strlen(name), &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
    rb_bloom_close(bf);
    rb_segment_close(seg);
    return st.layout;
}

/* bf-default-layout: the layout of the filters BF.ADD, BF.MADD and
 * BF.INSERT create (BF.INSERT's LAYOUT and BF.RESERVE's own default
 * aside); a reload changes it for the next creation. */
START_TEST(test_daemon_sighup_reloads_bf_default_layout)
{
    rb_conn_t *c;

    rbd_start(&d, "bf-default-layout redisbloom");
    c = rbd_connect(&d);
    rbd_expect(c, "bf-default-layout\nredisbloom", "CONFIG", "GET", "bf-default-layout");
    rbd_expect(c, "1", "BF.ADD", "a", "k");
    rbd_expect(c, "1", "BF.MADD", "m", "k");
    rbd_expect(c, "1", "BF.INSERT", "i", "ITEMS", "k");
    rbd_expect(c, "1", "BF.INSERT", "is", "LAYOUT", "standard", "ITEMS", "k");
    rbd_expect(c, "OK", "BF.RESERVE", "r", "0.01", "100");
    ck_assert_int_eq(layout_of("a"), RB_BLOOM_REDISBLOOM);
    ck_assert_int_eq(layout_of("m"), RB_BLOOM_REDISBLOOM);
    ck_assert_int_eq(layout_of("i"), RB_BLOOM_REDISBLOOM);
    ck_assert_int_eq(layout_of("is"), RB_BLOOM_STANDARD);
    ck_assert_int_eq(layout_of("r"), RB_BLOOM_BLOCKED);
    rbd_write_conf(&d, "bf-default-layout standard");
    kill(d.pid, SIGHUP);
    usleep(300000);
    rbd_expect(c, "1", "BF.ADD", "a2", "k");
    ck_assert_int_eq(layout_of("a2"), RB_BLOOM_STANDARD);
    ck_assert_int_eq(layout_of("a"), RB_BLOOM_REDISBLOOM);   /* made before: as it was */
    rbd_write_conf(&d, NULL);
    kill(d.pid, SIGHUP);
    usleep(300000);
    rbd_expect(c, "1", "BF.ADD", "a3", "k");
    ck_assert_int_eq(layout_of("a3"), RB_BLOOM_BLOCKED);
    rb_conn_close(c);
}
END_TEST

/* The daemon's own user may run everything, unless an acl-user line of
 * its own says otherwise (issue 28): such a line, given on SIGHUP, takes
 * its writes away, and taken out gives them back to the connections
 * already open. */
START_TEST(test_daemon_sighup_reloads_write_access)
{
    struct passwd *pw = getpwuid(getuid());
    char name[64], conf[160], want[256];
    rb_conn_t *c;

    if (pw != NULL)
        snprintf(name, sizeof(name), "%s", pw->pw_name);
    else
        snprintf(name, sizeof(name), "%u", (unsigned)getuid());
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "a");
    snprintf(conf, sizeof(conf), "acl-user %u -@all +@read +@connection +config",
             (unsigned)getuid());
    rbd_write_conf(&d, conf);
    kill(d.pid, SIGHUP);
    usleep(300000);
    rb_conn_close(c);
    c = rbd_connect(&d);
    snprintf(want, sizeof(want), "NOPERM User %s has no permissions to run the 'ring.add' "
             "command (rule: user %s: -@all +@read +@connection +config)", name, name);
    rbd_expect(c, want, "RING.ADD", "b");
    snprintf(want, sizeof(want), "acl-user\n%s -@all +@read +@connection +config", name);
    rbd_expect(c, want, "CONFIG", "GET", "acl-user");
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

/* huge-pages yes: the daemon turns 2 MiB pages on for its segment and
 * says whether they back it (a log line either way, INFO memory); readers
 * attach as always and see a huge-page segment; a restart with
 * huge-pages no keeps the live segment's (logged). */
START_TEST(test_daemon_huge_pages_option)
{
    char info[4096];
    rb_segment_huge_t h;
    rb_segment_t *r;
    rb_conn_t *c;
    int rc;

    rbd_start(&d, "huge-pages yes");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "1000000");
    rbd_expect(c, "1", "BF.ADD", "f", "k");
    snprintf(info, sizeof(info), "%s", rbd_cmd(c, &rc, "INFO", "memory", (const char *)NULL));
    ck_assert_ptr_nonnull(strstr(info, "segment_huge_pages:yes\r\n"));
    ck_assert_ptr_nonnull(strstr(info, "segment_huge_bytes:"));
    ck_assert_ptr_nonnull(strstr(info, "segment_huge_problem:"));
    printf("huge-pages yes: %s\n", strstr(info, "segment_huge_bytes:"));
    ck_assert_int_eq(rbd_log_count(&d, "is in 2 MiB pages") +
                     rbd_log_count(&d, "works with small pages"), 1);
    ck_assert_int_eq(rb_segment_attach_owned(d.inst, 0, getuid(), &r), RB_OK);
    ck_assert_int_eq(rb_segment_huge_status(r, &h), RB_OK);
    ck_assert_int_eq(h.requested, 1);
    rb_segment_close(r);
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);                  /* the segment stays */
    rbd_write_conf(&d, "huge-pages no");
    rbd_launch(&d, NULL);
    ck_assert_int_eq(rbd_log_count(&d, "keeps its 2 MiB pages"), 1);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("daemon",
                        RB_TCASE("replies", 120, NULL, rbd_teardown,
                                 test_daemon_answers_redis_clients_basics,
                                 test_daemon_bf_replies_match_redisbloom,
                                 test_daemon_ring_commands,
                                 test_daemon_ring_down_bounded_by_share,
                                 test_daemon_ring_table_modes,
                                 test_daemon_limits_give_clear_errors,
                                 test_daemon_aging_filter_and_reset,
                                 test_daemon_conn_reserve_sends_every_parameter,
                                 test_daemon_concurrent_adds_exactly_one_winner,
                                 test_daemon_flooding_client_does_not_starve_others),
                        RB_TCASE("reload and restart", 120, NULL, rbd_teardown,
                                 test_daemon_second_daemon_same_instance_refused,
                                 test_daemon_segment_lock_stops_a_second_writer,
                                 test_daemon_sighup_reloads_write_access,
                                 test_daemon_sighup_reloads_bf_default_layout,
                                 test_daemon_sighup_rereads_relative_config_path,
                                 test_daemon_restart_applies_segment_mode),
                        RB_TCASE("segment lifecycle", 120, NULL, rbd_teardown,
                                 test_daemon_republishes_a_removed_segment,
                                 test_daemon_reader_follows_restart_with_new_segment,
                                 test_daemon_huge_pages_option),
                        daemon_durability_tcase(),
                        daemon_access_tcase(),
                        daemon_cli_tcase(),
                        daemon_cli_writes_tcase());
}
