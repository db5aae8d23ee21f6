/*
 * check_badinput_protocol.c - check_badinput's protocol TCase: malformed
 * RESP on a raw socket (lengths, nesting, limits, a 1 GB bulk), inline
 * garbage, unknown commands and wrong arity.  Shared with the other
 * files: badinput.h.
 */
#include "badinput.h"

/* ---- malformed RESP on a raw socket ------------------------------------------ */

START_TEST(test_badinput_resp_bad_multibulk_length)
{
    const char *want = "-ERR Protocol error: invalid multibulk length\r\n";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    PROTO_CLOSE("*x\r\n", want);
    PROTO_CLOSE("*1x\r\n$4\r\nPING\r\n", want);
    PROTO_CLOSE("*\r\n", want);
    PROTO_CLOSE("*--1\r\n", want);
    PROTO_CLOSE("*123456789012345678901234", want);   /* 21 bytes and no CR yet */
    ck_assert_int_eq(rbd_info_num(w, "stats", "protocol_errors"), 5);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_resp_bad_bulk_length)
{
    const char *want = "-ERR Protocol error: invalid bulk length\r\n";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    PROTO_CLOSE("*1\r\n$x\r\n", want);
    PROTO_CLOSE("*1\r\n$\r\n", want);
    PROTO_CLOSE("*2\r\n$4\r\nPING\r\n$4a\r\nabcd\r\n", want);
    PROTO_CLOSE("*1\r\n$ 4\r\nPING\r\n", want);
    PROTO_CLOSE("*1\r\n$+4\r\nPING\r\n", want);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_resp_negative_bulk_length)
{
    const char *want = "-ERR Protocol error: invalid bulk length\r\n";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    PROTO_CLOSE("*1\r\n$-1\r\n", want);
    PROTO_CLOSE("*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$-5\r\nabcde\r\n", want);
    PROTO_CLOSE("*1\r\n$-9223372036854775807\r\n", want);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* A bulk whose declared length is not followed by CRLF. */
START_TEST(test_badinput_resp_bulk_not_crlf_terminated)
{
    const char *want = "-ERR Protocol error: bulk string not terminated by CRLF\r\n";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    PROTO_CLOSE("*1\r\n$4\r\nPINGxx", want);
    PROTO_CLOSE("*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$2\r\nk3\n\n", want);
    PROTO_CLOSE("*2\r\n$8\r\nRING.ADD\r\n$2\r\nn3 \r\n", want);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "0", A("BF.EXISTS"), A("f"), A("k3"));
}
END_TEST

/* An unterminated bulk then a disconnect: nothing runs, nothing is left. */
START_TEST(test_badinput_resp_unterminated_bulk_then_disconnect)
{
    static const char *const cuts[] = {
        "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$10\r\nk3",
        "*2\r\n$8\r\nRING.ADD\r\n$2\r\nn3",
        "*4\r\n$10\r\nBF.RESERVE\r\n$1\r\ng\r\n$4\r\n0.01\r\n$3\r\n10",
    };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(cuts); i++) {
        int fd = rbd_raw_connect(&d);
        raw_send(fd, cuts[i], strlen(cuts[i]));
        wait_clients(2);
        close(fd);
    }
    wait_clients(1);
    ck_assert_int_eq(rbd_info_num(w, "stats", "protocol_errors"), 0);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_resp_nested_array)
{
    const char *want = "-ERR Protocol error: expected '$', got '*'\r\n";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    PROTO_CLOSE("*1\r\n*1\r\n$4\r\nPING\r\n", want);
    PROTO_CLOSE("*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n*1\r\n$2\r\nk3\r\n", want);
    PROTO_CLOSE("*2\r\n$4\r\nPING\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n");
    PROTO_CLOSE("*1\r\n\x01", "-ERR Protocol error: expected '$', got '?'\r\n");
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* More arguments than max-request-bytes / 4 are refused at the '*' line. */
START_TEST(test_badinput_resp_multibulk_over_limit)
{
    const char *want = "-ERR Protocol error: invalid multibulk length\r\n";
    char line[64], *p;
    long long max_args;
    int rc;
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    p = strchr(rbd_cmd(w, &rc, "CONFIG", "GET", "max-request-bytes", (const char *)NULL), '\n');
    ck_assert_ptr_nonnull(p);
    max_args = atoll(p + 1) / 32;   /* one argument per 32 bytes (server.c) */
    ck_assert_int_gt(max_args, 0);
    snprintf(line, sizeof(line), "*%lld\r\n$4\r\nPING\r\n", max_args + 1);
    expect_protocol_close(__LINE__, line, strlen(line), want);
    PROTO_CLOSE("*999999999999999999\r\n", want);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* A declared 1 GiB bulk (default max-request-bytes 64 MiB) is refused as
 * soon as its length line arrives; the daemon's peak RSS does not move. */
START_TEST(test_badinput_resp_1gb_bulk_refused_at_once)
{
    static const char head[] = "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$1073741824\r\n";
    static char body[256 * 1024];
    long hwm0, hwm1;
    char buf[256];
    uint64_t t0, ms;
    int closed, fd;
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    hwm0 = rbd_proc_kb(d.pid, "VmHWM:");
    fd = rbd_raw_connect(&d);
    t0 = rb_test_now_ms();
    raw_send(fd, head, sizeof(head) - 1);
    raw_read(fd, buf, sizeof(buf), 0, 3000, &closed);
    ms = rb_test_now_ms() - t0;
    ck_assert_str_eq(buf, "-ERR Protocol error: invalid bulk length\r\n");
    ck_assert(closed);
    close(fd);
    /* The same with the first 256 KiB of the bulk sent along. */
    memset(body, 'x', sizeof(body));
    fd = rbd_raw_connect(&d);
    raw_send(fd, head, sizeof(head) - 1);
    raw_send(fd, body, sizeof(body));
    raw_read(fd, buf, sizeof(buf), 0, 3000, &closed);
    ck_assert_str_eq(buf, "-ERR Protocol error: invalid bulk length\r\n");
    ck_assert(closed);
    close(fd);
    hwm1 = rbd_proc_kb(d.pid, "VmHWM:");
    printf("1 GiB bulk: refused in %llu ms; daemon peak RSS %ld -> %ld KiB\n",
           (unsigned long long)ms, hwm0, hwm1);
    ck_assert_uint_lt(ms, 1000);
    ck_assert_int_lt(hwm1 - hwm0, 4 * 1024);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* A request past max-request-bytes is refused at that size, not buffered. */
START_TEST(test_badinput_resp_request_over_max_request_bytes)
{
    static const char head[] = "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$1000\r\n";
    static char big[1000];
    char buf[256];
    int closed, fd;
    state_t st;

    start("max-request-bytes 1024");
    seed();
    capture(&st);
    /* Within the bulk limit, but the request as a whole grows past it. */
    fd = rbd_raw_connect(&d);
    raw_send(fd, head, sizeof(head) - 1);
    memset(big, 'k', sizeof(big));
    raw_send(fd, big, sizeof(big));
    raw_read(fd, buf, sizeof(buf), 0, 3000, &closed);
    ck_assert_str_eq(buf, "-ERR Protocol error: request larger than max-request-bytes (1024)\r\n");
    ck_assert(closed);
    close(fd);
    PROTO_CLOSE("*2\r\n$4\r\nPING\r\n$1025\r\n", "-ERR Protocol error: invalid bulk length\r\n");
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* An inline line that is not a command is an unknown command, not a
 * protocol error: the connection stays usable. */
START_TEST(test_badinput_inline_garbage)
{
    static const char garbage[] = "\x01\x02\xfe garbage \"q\\x\"\r\n";
    static const char want[] = "-ERR unknown command '\x01\x02\xfe', with args beginning with: "
                               "'garbage' 'qx' \r\n";
    char buf[256];
    int closed, fd;
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    fd = rbd_raw_connect(&d);
    raw_send(fd, garbage, sizeof(garbage) - 1);
    raw_read(fd, buf, sizeof(buf), sizeof(want) - 1, 3000, &closed);
    ck_assert_str_eq(buf, want);
    raw_send(fd, "\r\n\n   \r\nPING\r\n", 14);   /* blank lines are skipped */
    raw_read(fd, buf, sizeof(buf), 7, 3000, &closed);
    ck_assert_str_eq(buf, "+PONG\r\n");
    ck_assert(!closed);
    close(fd);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_inline_unbalanced_quotes)
{
    const char *want = "-ERR Protocol error: unbalanced quotes in request\r\n";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    PROTO_CLOSE("RING.ADD \"n3\r\n", want);
    PROTO_CLOSE("BF.ADD f 'k3\r\n", want);
    PROTO_CLOSE("BF.ADD f \"k3\"x\r\n", want);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_inline_too_long)
{
    static char line[70 * 1024];
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    memcpy(line, "BF.ADD f ", 9);
    memset(line + 9, 'k', sizeof(line) - 9);
    expect_protocol_close(__LINE__, line, sizeof(line),
                          "-ERR Protocol error: too big inline request\r\n");
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* ---- commands ---------------------------------------------------------------------- */

START_TEST(test_badinput_unknown_command)
{
    char name[300], want[512];
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ", A("NOPE"),
               A("a"), A("b"));
    EXPECT_ERR(w, "ERR unknown command 'nope', with args beginning with: ", A("nope"));
    EXPECT_ERR(w, "ERR unknown command 'BF.ADDX', with args beginning with: 'f' 'k3' ",
               A("BF.ADDX"), A("f"), A("k3"));
    EXPECT_ERR(w, "ERR unknown command 'RING', with args beginning with: 'ADD' 'n3' ", A("RING"),
               A("ADD"), A("n3"));
    EXPECT_ERR(w, "ERR unknown command '', with args beginning with: ", A(""));
    /* A long name is quoted up to 128 bytes. */
    memset(name, 'x', sizeof(name));
    snprintf(want, sizeof(want), "ERR unknown command '%.128s', with args beginning with: ", name);
    EXPECT_ERR(w, want, B(name, sizeof(name)));
    /* A NUL inside the name is not the command before it. */
    {
        char buf[512];
        ck_assert_int_eq(run_args(w, buf, sizeof(buf), 2,
                                  (arg_t[]){ A("RING.ADD\0"), A("n3") }), RB_EREPLY);
        ck_assert_ptr_nonnull(strstr(buf, "ERR unknown command 'RING.ADD"));
    }
    ck_assert_int_eq(rbd_info_num(w, "stats", "protocol_errors"), 0);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* Arity errors name the command as Redis does, in lower case however it
 * was typed (Redis's full name, 'config|get' for a subcommand), BF.*
 * included (as with RedisBloom 8.4+).  BF.RESERVE takes at most 7
 * arguments of RedisBloom's. */
START_TEST(test_badinput_wrong_arity)
{
    static const struct {
        const char *want;   /* the name the error gives */
        arg_t a[14];
        size_t n;
    } rows[] = {
        { "bf.add", { A("BF.ADD"), A("f") }, 2 },
        { "bf.add", { A("bf.add"), A("f"), A("k3"), A("k4") }, 4 },
        { "bf.add", { A("bF.aDd"), A("f") }, 2 },
        { "bf.madd", { A("BF.MADD"), A("f") }, 2 },
        { "bf.exists", { A("BF.EXISTS"), A("f") }, 2 },
        { "bf.exists", { A("BF.EXISTS"), A("f"), A("k1"), A("k2") }, 4 },
        { "bf.mexists", { A("BF.MEXISTS"), A("f") }, 2 },
        { "bf.reserve", { A("BF.RESERVE"), A("g"), A("0.01") }, 3 },
        { "bf.reserve", { A("BF.RESERVE"), A("g"), A("0.01"), A("10"), A("NONSCALING"), A("a"),
                          A("b"), A("c") }, 8 },
        { "bf.reserve", { A("BF.RESERVE"), A("g"), A("0.01"), A("10"), A("EXPANSION"), A("2"),
                          A("EXPANSION"), A("4") }, 8 },
        { "bf.reserve", { A("BF.RESERVE"), A("g"), A("0.01"), A("10"), A("LAYOUT"), A("blocked"),
                          A("x"), A("y"), A("z"), A("w") }, 10 },
        { "bf.insert", { A("BF.INSERT"), A("g"), A("ITEMS") }, 3 },
        { "bf.insert", { A("BF.INSERT"), A("g"), A("CAPACITY"), A("10"), A("ITEMS") }, 5 },
        { "bf.insert", { A("BF.INSERT"), A("g"), A("CAPACITY"), A("0"), A("ITEMS") }, 5 },
        { "bf.insert", { A("BF.INSERT"), A("g"), A("NOCREATE"), A("CAPACITY") }, 4 },
        { "bf.card", { A("BF.CARD") }, 1 },
        { "bf.card", { A("BF.CARD"), A("f"), A("g") }, 3 },
        { "bf.info", { A("BF.INFO") }, 1 },
        { "bf.info", { A("BF.INFO"), A("f"), A("CAPACITY"), A("x") }, 4 },
        { "bf.reset", { A("BF.RESET") }, 1 },
        { "ring.add", { A("RING.ADD") }, 1 },
        { "ring.add", { A("RING.ADD"), A("n3"), A("1"), A("x") }, 4 },
        { "ring.remove", { A("RING.REMOVE") }, 1 },
        { "ring.remove", { A("ring.Remove"), A("n1"), A("n2") }, 3 },
        { "ring.weight", { A("RING.WEIGHT"), A("n1") }, 2 },
        { "ring.mode", { A("RING.MODE") }, 1 },
        { "ring.mode", { A("RING.MODE"), A("seed"), A("10"), A("x") }, 4 },
        { "ring.get", { A("RING.GET") }, 1 },
        { "ring.get", { A("RING.GET"), A("a"), A("b") }, 3 },
        { "ring.getn", { A("RING.GETN"), A("k") }, 2 },
        { "ring.nodes", { A("RING.NODES"), A("WITHSTATES"), A("x") }, 3 },
        { "ring.info", { A("RING.INFO"), A("x") }, 2 },
        { "ping", { A("PING"), A("a"), A("b") }, 3 },
        { "ping", { A("PiNg"), A("a"), A("b") }, 3 },
        { "echo", { A("ECHO") }, 1 },
        { "save", { A("SAVE"), A("x") }, 2 },
        { "shutdown", { A("SHUTDOWN"), A("NOSAVE"), A("x") }, 3 },
        { "config", { A("CONFIG") }, 1 },
        { "config|get", { A("CONFIG"), A("GET") }, 2 },
        { "del", { A("DEL") }, 1 },
        { "unlink", { A("UNLINK") }, 1 },
        { "exists", { A("EXISTS") }, 1 },
        { "type", { A("TYPE") }, 1 },
        { "type", { A("TYPE"), A("f"), A("g") }, 3 },
        { "keys", { A("KEYS") }, 1 },
        { "keys", { A("KEYS"), A("*"), A("x") }, 3 },
        { "scan", { A("SCAN") }, 1 },
        { "dbsize", { A("DBSIZE"), A("x") }, 2 },
    };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(rows); i++) {
        char want[128];
        snprintf(want, sizeof(want), "ERR wrong number of arguments for '%s' command",
                 rows[i].want);
        expect_v(__LINE__, w, want, 1, rows[i].n, rows[i].a);
    }
    ASSERT_UNCHANGED(&st);
}
END_TEST

TCase *badinput_protocol_tcase(void)
{
    return RB_TCASE("protocol", 20, NULL, badinput_teardown,
                    test_badinput_resp_bad_multibulk_length,
                    test_badinput_resp_bad_bulk_length,
                    test_badinput_resp_negative_bulk_length,
                    test_badinput_resp_bulk_not_crlf_terminated,
                    test_badinput_resp_unterminated_bulk_then_disconnect,
                    test_badinput_resp_nested_array,
                    test_badinput_resp_multibulk_over_limit,
                    test_badinput_resp_1gb_bulk_refused_at_once,
                    test_badinput_resp_request_over_max_request_bytes,
                    test_badinput_inline_garbage,
                    test_badinput_inline_unbalanced_quotes,
                    test_badinput_inline_too_long,
                    test_badinput_unknown_command,
                    test_badinput_wrong_arity);
}
