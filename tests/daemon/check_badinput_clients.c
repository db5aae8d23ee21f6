/*
 * check_badinput_clients.c - check_badinput's connections and access
 * TCases: idle and stalled clients timed out, a half request then a
 * disconnect, max-clients; a uid without write access.  Shared with the
 * other files: badinput.h.
 */
#include "badinput.h"

#include <pwd.h>

/* ---- connections ----------------------------------------------------------------- */

/* Waits (<= ms) for the daemon to close fd, which must get no reply,
 * while w sends a PING every 100 ms.  Returns the ms until it closed, 0 if
 * it did not. */
static uint64_t talk_until_closed(int fd, uint64_t t0, int ms)
{
    uint64_t closed_at = 0;
    char buf[64];
    int closed;

    while (rb_test_now_ms() - t0 < (uint64_t)ms && closed_at == 0) {
        raw_read(fd, buf, sizeof(buf), 0, 100, &closed);
        ck_assert_str_eq(buf, "");      /* closed without a word, as Redis does */
        if (closed)
            closed_at = rb_test_now_ms();
        EXPECT(w, "PONG", A("PING"));
    }
    return closed_at ? closed_at - t0 : 0;
}

/* timeout 1: a silent client is closed after about a second; a client
 * that keeps talking is not. */
START_TEST(test_badinput_idle_client_timed_out)
{
    uint64_t t0, ms;
    int fd;
    state_t st;

    start("timeout 1");
    seed();
    capture(&st);
    fd = rbd_raw_connect(&d);
    t0 = rb_test_now_ms();
    /* Closed after the second of silence, and soon after it (the upper
     * bound leaves room for a loaded machine; the daemon checks every
     * 100 ms or so). */
    ms = talk_until_closed(fd, t0, 4000);
    close(fd);
    printf("timeout 1: the idle client was closed after %llu ms\n", (unsigned long long)ms);
    ck_assert_msg(ms != 0, "the idle client was not closed within 4 s");
    ck_assert_uint_ge(ms, 950);
    ck_assert_uint_le(ms, 3000);
    /* w, talking all along, is still there a second later. */
    for (int i = 0; i < 10; i++) {
        usleep(100000);
        EXPECT(w, "PONG", A("PING"));
    }
    ck_assert_int_eq(rbd_info_num(w, "stats", "client_timeouts"), 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* timeout 1: a client stalled in the middle of a request is closed too,
 * and the half request never runs. */
START_TEST(test_badinput_stalled_half_request_timed_out)
{
    static const char half[] = "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$2\r\nk";
    uint64_t t0, ms;
    int fd;
    state_t st;

    start("timeout 1");
    seed();
    capture(&st);
    fd = rbd_raw_connect(&d);
    t0 = rb_test_now_ms();
    raw_send(fd, half, sizeof(half) - 1);
    ms = talk_until_closed(fd, t0, 4000);
    close(fd);
    ck_assert_msg(ms != 0, "the stalled client was not closed within 4 s");
    ck_assert_uint_ge(ms, 950);
    ck_assert_uint_le(ms, 3000);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* A request cut at every byte and the connection closed: none of them
 * runs, none hurts the daemon. */
START_TEST(test_badinput_half_request_then_disconnect)
{
    static const char *const reqs[] = {
        "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$2\r\nk3\r\n",
        "*3\r\n$8\r\nRING.ADD\r\n$2\r\nn3\r\n$1\r\n4\r\n",
        "*4\r\n$10\r\nBF.RESERVE\r\n$1\r\ng\r\n$4\r\n0.01\r\n$2\r\n10\r\n",
        "RING.REMOVE n1\r\n",
    };
    int cuts = 0;
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t r = 0; r < NARGS(reqs); r++) {
        size_t len = strlen(reqs[r]);
        /* The inline one runs at its LF: cut before it. */
        for (size_t cut = 1; cut < len - (reqs[r][0] != '*'); cut++) {
            int fd = rbd_raw_connect(&d);
            raw_send(fd, reqs[r], cut);
            close(fd);
            cuts++;
        }
    }
    wait_clients(1);
    printf("half requests: %d connections cut mid-request\n", cuts);
    ck_assert_int_eq(rbd_info_num(w, "stats", "protocol_errors"), 0);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* max-clients 3: the fourth is told why and closed; the others go on; a
 * freed place is taken by the next client. */
START_TEST(test_badinput_max_clients)
{
    rb_conn_t *c2, *c3;
    char buf[256];
    int closed, fd, accepted = 0;
    state_t st;

    start("max-clients 3");
    seed();
    capture(&st);
    c2 = rbd_connect(&d);
    c3 = rbd_connect(&d);
    EXPECT(c2, "PONG", A("PING"));
    EXPECT(c3, "PONG", A("PING"));
    fd = rbd_raw_connect(&d);
    raw_send(fd, "*2\r\n$8\r\nRING.ADD\r\n$2\r\nn3\r\n", 27);
    raw_read(fd, buf, sizeof(buf), 0, 3000, &closed);
    ck_assert_str_eq(buf, "-ERR max number of clients reached\r\n");
    ck_assert(closed);
    close(fd);
    EXPECT(w, "PONG", A("PING"));
    EXPECT(c2, "1", A("BF.EXISTS"), A("f"), A("k1"));
    EXPECT(c3, "n1\n1\nn2\n2", A("RING.NODES"));
    ck_assert_int_eq(rbd_info_num(w, "clients", "rejected_connections"), 1);
    rb_conn_close(c3);
    /* The daemon notices the hang-up on its next turn. */
    for (int i = 0; i < 100 && !accepted; i++) {
        fd = rbd_raw_connect(&d);
        raw_send(fd, "PING\r\n", 6);
        raw_read(fd, buf, sizeof(buf), 7, 2000, &closed);
        accepted = strcmp(buf, "+PONG\r\n") == 0;
        if (!accepted) {
            ck_assert_str_eq(buf, "-ERR max number of clients reached\r\n");
            usleep(20000);
        }
        close(fd);
    }
    ck_assert_msg(accepted, "no client accepted after one left");
    wait_clients(2);
    rb_conn_close(c2);
    /* assert_healthy opens one more: 2 of 3 places. */
    ASSERT_UNCHANGED(&st);
}
END_TEST
TCase *badinput_connections_tcase(void)
{
    return RB_TCASE("connections", 20, NULL, badinput_teardown,
                    test_badinput_idle_client_timed_out,
                    test_badinput_stalled_half_request_timed_out,
                    test_badinput_half_request_then_disconnect,
                    test_badinput_max_clients);
}

/* A uid outside allow-write-uid (nobody) may read but every mutation gets
 * NOPERM and changes nothing. */
START_TEST(test_badinput_unauthorised_uid)
{
    static const struct {
        const char *cmd;    /* lower case, as in the error */
        arg_t a[6];
        size_t n;
    } writes[] = {
        { "bf.add", { A("BF.ADD"), A("f"), A("k3") }, 3 },
        { "bf.add", { A("BF.ADD"), A("new"), A("k3") }, 3 },
        { "bf.madd", { A("BF.MADD"), A("f"), A("k3"), A("k4") }, 4 },
        { "bf.insert", { A("BF.INSERT"), A("new"), A("ITEMS"), A("k3") }, 4 },
        { "bf.reserve", { A("BF.RESERVE"), A("new"), A("0.01"), A("10") }, 4 },
        { "bf.reset", { A("BF.RESET"), A("f") }, 2 },
        { "ring.add", { A("RING.ADD"), A("evil") }, 2 },
        { "ring.remove", { A("RING.REMOVE"), A("n1") }, 2 },
        { "ring.weight", { A("RING.WEIGHT"), A("n1"), A("9") }, 3 },
        { "ring.mode", { A("RING.MODE"), A("seed") }, 2 },
        { "save", { A("SAVE") }, 1 },
        { "shutdown", { A("SHUTDOWN"), A("NOSAVE") }, 2 },
    };
    static const struct {
        const char *want;
        arg_t a[4];
        size_t n;
    } reads[] = {
        { "PONG", { A("PING") }, 1 },
        { "1", { A("BF.EXISTS"), A("f"), A("k1") }, 3 },
        { "1\n0", { A("BF.MEXISTS"), A("f"), A("k2"), A("k3") }, 4 },
        { "2", { A("BF.CARD"), A("f") }, 2 },
        { "1000", { A("BF.INFO"), A("f"), A("CAPACITY") }, 3 },
        { "n1\n1\nn2\n2", { A("RING.NODES") }, 1 },
    };
    char *msg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int status;
    pid_t pid;
    state_t st;

    if (getuid() != 0) {
        printf("SKIP test_badinput_unauthorised_uid: needs root to switch to uid 65534 "
               "(running as uid %u)\n", (unsigned)getuid());
        munmap(msg, 4096);
        return;
    }
    ck_assert(msg != MAP_FAILED);
    msg[0] = '\0';
    start(NULL);
    seed();
    capture(&st);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rb_segment_t *seg;
        rb_conn_t *o;
        rb_node_t n;
        char buf[512], want[256];
        if (rb_test_become_other() != 0)
            _exit(10);
        if (rb_conn_open(NULL, d.sock, 5000, &o) != RB_OK)
            _exit(11);
        for (size_t i = 0; i < NARGS(writes); i++) {
            int rc = run_args(o, buf, sizeof(buf), writes[i].n, writes[i].a);
            struct passwd *pw = getpwuid(65534);
            char user[64];
            snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "65534");
            snprintf(want, sizeof(want), "NOPERM User %s has no permissions to run the '%s' "
                     "command (rule: user default: +@read +@connection +@transaction)", user,
                     writes[i].cmd);
            if (rc != RB_EPERM || strcmp(buf, want) != 0) {
                snprintf(msg, 4096, "write %zu: expected [%s], got [%s] (rc %d)", i, want, buf,
                         rc);
                _exit(12);
            }
        }
        for (size_t i = 0; i < NARGS(reads); i++) {
            int rc = run_args(o, buf, sizeof(buf), reads[i].n, reads[i].a);
            if (rc != RB_OK || strcmp(buf, reads[i].want) != 0) {
                snprintf(msg, 4096, "read %zu: expected [%s], got [%s] (rc %d)", i,
                         reads[i].want, buf, rc);
                _exit(13);
            }
        }
        /* RING.GET as the daemon answers it and as the segment does. */
        if (run_args(o, buf, sizeof(buf), 2, (arg_t[]){ A("RING.GET"), A("k") }) != RB_OK ||
            rb_segment_attach(d.inst, 0, &seg) != RB_OK || rb_ring_lookup(seg, "k", 1, &n) != RB_OK ||
            strcmp(buf, n.name) != 0) {
            snprintf(msg, 4096, "RING.GET k: daemon [%s]", buf);
            _exit(14);
        }
        rb_segment_close(seg);
        rb_conn_close(o);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "uid 65534 child: exit %d: %s",
                  WEXITSTATUS(status), msg);
    ck_assert_int_eq(rbd_info_num(w, "stats", "denied_commands"), (long long)NARGS(writes));
    assert_no_filter("new", 3);
    ASSERT_UNCHANGED(&st);
    munmap(msg, 4096);
}
END_TEST

TCase *badinput_access_tcase(void)
{
    return RB_TCASE("access", 20, NULL, badinput_teardown,
                    test_badinput_unauthorised_uid);
}
