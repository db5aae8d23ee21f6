/* check_resp.c - RESP: ringbloomd's request parser (daemon/server/resp.c), whose
 * verdict on a request never depends on how its bytes were split (cases
 * from fuzz_resp: tests/fuzz/corpus/fuzz_resp/regress-*), which splits
 * inline commands as redis-server does (a table of cases, compared with a
 * redis-server started on a Unix socket when one is installed), the
 * server's encoder (lib/conn/resp_enc.c), whose typed replies are RESP3's
 * or, byte for byte, Redis 7's RESP2, and the requests of the clients
 * (hiredis's formatting, lib/conn/resp_read.c) and of the nginx module
 * (resp_enc.c), which agree and which that parser reads back. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "resp.h"
#include "resp_enc.h"
#include "resp_read.h"
#include "rb_test.h"

/* Outcome of the first request of stream[0..len) delivered in two reads
 * cut at `cut` (len: all at once), each parse given a heap copy of exactly
 * the bytes received so far, as the server's buffer. */
typedef struct outcome {
    int rc;
    size_t pos, nargs;
    char err[128];
} outcome_t;

static outcome_t parse_cut(const char *stream, size_t len, size_t cut, size_t max_request)
{
    resp_limits_t lim;
    resp_parser_t p;
    outcome_t o;
    size_t have[2] = { cut, len };

    memset(&o, 0, sizeof(o));
    resp_limits_init(&lim, max_request);
    resp_parser_init(&p);
    for (int k = 0; k < 2; k++) {
        char *buf = malloc(have[k] ? have[k] : 1);
        const char *err = NULL;
        ck_assert_ptr_nonnull(buf);
        memcpy(buf, stream, have[k]);
        o.rc = resp_parse(&p, buf, have[k], &lim, &err);
        free(buf);
        if (o.rc == RESP_ERR)
            snprintf(o.err, sizeof(o.err), "%s", err);
        if (o.rc != RESP_MORE)
            break;
    }
    o.pos = p.pos;
    o.nargs = p.nargs;
    resp_parser_free(&p);
    return o;
}

/* Asserts every cut gives the outcome of the whole stream; returns it. */
static outcome_t parse_any_cut(const char *stream, size_t len, size_t max_request)
{
    outcome_t whole = parse_cut(stream, len, len, max_request);

    for (size_t cut = 0; cut < len; cut++) {
        outcome_t o = parse_cut(stream, len, cut, max_request);
        ck_assert_msg(o.rc == whole.rc && strcmp(o.err, whole.err) == 0 &&
                          (o.rc != RESP_DONE || (o.pos == whole.pos && o.nargs == whole.nargs)),
                      "cut at %zu: rc %d '%s', whole: rc %d '%s'", cut, o.rc, o.err, whole.rc,
                      whole.err);
    }
    return whole;
}

/* A number line already malformed was "incomplete" while its CR had no LF
 * yet (fuzz_resp: regress-number-prefix); byte by byte it was an error. */
START_TEST(test_resp_malformed_number_is_an_error_at_once)
{
    static const char *const bad[] = {
        "*255555555555550559\n",      /* LF without CR */
        "*1234567890123456789\r",     /* 19 digits, CR waiting for LF */
        "*12x\r",
        "*1\r\n$99999999999999999999\r",
        "*1\r\n$-\r",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        outcome_t o = parse_any_cut(bad[i], strlen(bad[i]), 64u << 20);
        ck_assert_msg(o.rc == RESP_ERR, "%s: rc %d", bad[i], o.rc);
        ck_assert(strstr(o.err, "Protocol error: invalid") == o.err);
    }
    ck_assert_int_eq(parse_any_cut("*12\r", 4, 1024).rc, RESP_MORE);
    ck_assert_int_eq(parse_any_cut("*1\r\n$3\r\nabc\r\n", 13, 1024).rc, RESP_DONE);
}
END_TEST

/* A complete request larger than max-request-bytes got through when it
 * arrived in one read and was refused when it arrived slowly (fuzz_resp:
 * regress-request-limit, an inline line; the same held for bulks). */
START_TEST(test_resp_request_limit_holds_however_split)
{
    char req[1100];
    outcome_t o;
    size_t n;

    /* 1024 bytes exactly: "*1\r\n$1011\r\n" + 1011 bytes + "\r\n". */
    n = (size_t)snprintf(req, sizeof(req), "*1\r\n$1011\r\n");
    memset(req + n, 'x', 1011);
    memcpy(req + n + 1011, "\r\n", 2);
    o = parse_any_cut(req, n + 1013, 1024);
    ck_assert_int_eq(o.rc, RESP_DONE);
    ck_assert_uint_eq(o.pos, 1024);

    /* One byte more. */
    n = (size_t)snprintf(req, sizeof(req), "*1\r\n$1012\r\n");
    memset(req + n, 'x', 1012);
    memcpy(req + n + 1012, "\r\n", 2);
    o = parse_any_cut(req, n + 1014, 1024);
    ck_assert_int_eq(o.rc, RESP_ERR);
    ck_assert_str_eq(o.err, "Protocol error: request larger than max-request-bytes (1024)");

    /* An inline line of 1030 bytes and its CRLF. */
    memset(req, 'x', 1030);
    memcpy(req + 1030, "\r\n", 2);
    o = parse_any_cut(req, 1032, 1024);
    ck_assert_int_eq(o.rc, RESP_ERR);
    ck_assert_str_eq(o.err, "Protocol error: request larger than max-request-bytes (1024)");
}
END_TEST

/* Requests parse back into the same arguments, binary and empty ones
 * included, and the two writers of requests agree byte for byte: the
 * clients' (hiredis's redisFormatCommandArgv, rbi_request_format: the
 * library's connection, the CLI) and the nginx module's encoder (into its
 * own buffer); rbi_resp_command_size is exactly what rbi_resp_command_put
 * writes, and replies' error lines stay one line. */
START_TEST(test_resp_encoded_requests_parse_back)
{
    enum { ROUNDS = 2000, MAXARGS = 12 };
    static const char replies[] = "-ERR two  lines 7\r\n:-12\r\n$-1\r\n";
    uint64_t x = 42;
    rbi_buf_t rb = { 0 };

    for (int r = 0; r < ROUNDS; r++) {
        char bytes[MAXARGS][300], *fixed;
        const char *argv[MAXARGS];
        size_t argl[MAXARGS], argc = (size_t)(r % MAXARGS), size;
        char *h;
        long hlen;
        resp_limits_t lim;
        resp_parser_t p;
        const char *err = NULL;

        for (size_t i = 0; i < argc; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            argl[i] = (size_t)(x >> 33) % (r % 3 == 0 ? 4 : 300);
            for (size_t j = 0; j < argl[i]; j++)
                bytes[i][j] = (char)(x >> (j % 56));
            argv[i] = bytes[i];
        }
        size = rbi_resp_command_size(argc, argl);
        fixed = malloc(size + 1);
        ck_assert_ptr_nonnull(fixed);
        fixed[size] = 'G';   /* guard: put writes exactly size bytes */
        ck_assert_ptr_eq(rbi_resp_command_put(fixed, argc, argv, argl), fixed + size);
        ck_assert_int_eq(fixed[size], 'G');
        hlen = rbi_request_format(&h, argc, argv, argl);
        ck_assert_int_eq(hlen, (long)size);
        ck_assert(memcmp(h, fixed, size) == 0);
        resp_limits_init(&lim, 1u << 20);
        resp_parser_init(&p);
        ck_assert_int_eq(resp_parse(&p, h, (size_t)hlen, &lim, &err), RESP_DONE);
        ck_assert_uint_eq(p.pos, size);
        ck_assert_uint_eq(p.nargs, argc);
        for (size_t i = 0; i < argc; i++) {
            ck_assert_uint_eq(p.len[i], argl[i]);
            ck_assert(memcmp(resp_arg(&p, h, i), argv[i], argl[i]) == 0);
        }
        resp_parser_free(&p);
        redisFreeCommand(h);
        free(fixed);
    }
    rbi_resp_error(&rb, "ERR two\r\nlines %d", 7);
    rbi_resp_int(&rb, -12);
    rbi_resp_nil(&rb);
    ck_assert_uint_eq(rb.len, sizeof(replies) - 1);
    ck_assert(memcmp(rb.data, replies, rb.len) == 0);
    rbi_buf_free(&rb);
}
END_TEST

/* Appends one of each typed reply to b, in b's protocol. */
static void typed_replies(rbi_buf_t *b)
{
    rbi_resp_map(b, 2);
    rbi_resp_simple(b, "k");
    rbi_resp_bool(b, 1);
    rbi_resp_bulk_str(b, "n");
    rbi_resp_nil(b);
    rbi_resp_set(b, 1);
    rbi_resp_bool(b, 0);
    rbi_resp_verbatim(b, "a:1\r\n", 5);
}

/* The typed elements: RESP3's where the buffer speaks it, Redis 7's RESP2
 * forms otherwise (a map as a flat array, booleans as 0 / 1, a null bulk,
 * verbatim text as a bulk string); the protocol survives rbi_buf_free. */
START_TEST(test_resp_typed_replies_follow_the_protocol)
{
    static const char resp2[] = "*4\r\n+k\r\n:1\r\n$1\r\nn\r\n$-1\r\n*1\r\n:0\r\n$5\r\na:1\r\n\r\n";
    static const char resp3[] = "%2\r\n+k\r\n#t\r\n$1\r\nn\r\n_\r\n~1\r\n#f\r\n=9\r\ntxt:a:1\r\n\r\n";
    rbi_buf_t b = { 0 };

    typed_replies(&b);
    ck_assert_uint_eq(b.len, sizeof(resp2) - 1);
    ck_assert(memcmp(b.data, resp2, b.len) == 0);
    rbi_buf_free(&b);
    b.resp3 = 1;
    rbi_buf_free(&b);
    ck_assert_int_eq(b.resp3, 1);
    typed_replies(&b);
    ck_assert_uint_eq(b.len, sizeof(resp3) - 1);
    ck_assert(memcmp(b.data, resp3, b.len) == 0);
    rbi_buf_free(&b);
}
END_TEST

/* ---- inline commands ---------------------------------------------------------- */

/* An inline line and what redis-server answers to `EVAL "return ARGV" 0 `
 * followed by it: its arguments as a RESP array, or the protocol error.
 * Each answer was read from redis-server 7.0 by hand, and
 * test_resp_inline_as_redis_server compares them all again when one is
 * installed. */
typedef struct inline_case {
    const char *line;
    size_t len;
    const char *want;
    size_t want_len;
} inline_case_t;

#define IC(line, want) { line, sizeof(line) - 1, want, sizeof(want) - 1 }
#define UNBALANCED "-ERR Protocol error: unbalanced quotes in request\r\n"

static const inline_case_t inline_cases[] = {
    IC("\"a\\x41b\"", "*1\r\n$3\r\naAb\r\n"),
    IC("\"\\x41\\x4a\\x4A\"", "*1\r\n$3\r\nAJJ\r\n"),
    IC("\"\\x00z\\xFf\"", "*1\r\n$3\r\n\0z\xff\r\n"),
    IC("\"\\x4\"", "*1\r\n$2\r\nx4\r\n"),            /* not two hex digits: \x is x */
    IC("\"\\x4g\"", "*1\r\n$3\r\nx4g\r\n"),
    IC("\"\\xg1\"", "*1\r\n$3\r\nxg1\r\n"),
    IC("\"\\n\\r\\t\\b\\a\\z\\\"\\\\\"", "*1\r\n$8\r\n\n\r\t\b\az\"\\\r\n"),
    IC("'a\\b'", "*1\r\n$3\r\na\\b\r\n"),             /* single quotes: \ is itself */
    IC("'\\x41'", "*1\r\n$4\r\n\\x41\r\n"),
    IC("'it\\'s'", "*1\r\n$4\r\nit's\r\n"),
    IC("'a\"b'", "*1\r\n$3\r\na\"b\r\n"),
    IC("\"a\\'\"", "*1\r\n$2\r\na'\r\n"),
    IC("a\"b c\"", "*1\r\n$4\r\nab c\r\n"),           /* a quote opens mid-argument */
    IC("\x01\"a\"", "*1\r\n$2\r\n\x01" "a\r\n"),
    IC("\"\"", "*1\r\n$0\r\n\r\n"),
    IC("''", "*1\r\n$0\r\n\r\n"),
    IC("\"a\" 'b'  c", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
    IC("a\tb\rc", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
    IC("x\vy", "*1\r\n$3\r\nx\vy\r\n"),               /* \v and \f end no bare argument */
    IC("\vx\f \fy", "*2\r\n$2\r\nx\f\r\n$1\r\ny\r\n"),  /* but are blanks before one */
    IC("\"a\"\vb", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    IC("\"a\"\tb", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    IC("\"a\rb\"", "*1\r\n$3\r\na\rb\r\n"),
    IC("\"\xff\"", "*1\r\n$1\r\n\xff\r\n"),
    IC(" \t ", "*0\r\n"),
    IC("\"a\"b", UNBALANCED),                         /* a closing quote ends it */
    IC("'a'b", UNBALANCED),
    IC("a\"b c\"d", UNBALANCED),
    IC("\"abc", UNBALANCED),
    IC("'abc", UNBALANCED),
    IC("\"\\", UNBALANCED),
    IC("\"a\\\"", UNBALANCED),
    IC("'a\\'", UNBALANCED),
};

/* What ringbloomd's parser makes of line followed by CRLF, in the form of
 * redis-server's answer to EVAL "return ARGV" (inline_case_t.want); the
 * same however the line is split. */
static void parse_inline_line(const char *line, size_t len, rbi_buf_t *out)
{
    resp_limits_t lim;
    resp_parser_t p;
    const char *err = NULL;
    char *buf = malloc(len + 2), head[32];
    int rc;

    ck_assert_ptr_nonnull(buf);
    memcpy(buf, line, len);
    memcpy(buf + len, "\r\n", 2);
    parse_any_cut(buf, len + 2, 1024);
    resp_limits_init(&lim, 1024);
    resp_parser_init(&p);
    rc = resp_parse(&p, buf, len + 2, &lim, &err);
    out->len = 0;
    if (rc == RESP_ERR) {
        snprintf(head, sizeof(head), "-ERR ");
        rbi_buf_append(out, head, strlen(head));
        rbi_buf_append(out, err, strlen(err));
        rbi_buf_append(out, "\r\n", 2);
    } else {
        ck_assert_int_eq(rc, RESP_DONE);
        ck_assert_uint_eq(p.pos, len + 2);
        snprintf(head, sizeof(head), "*%zu\r\n", p.nargs);
        rbi_buf_append(out, head, strlen(head));
        for (size_t i = 0; i < p.nargs; i++) {
            snprintf(head, sizeof(head), "$%zu\r\n", p.len[i]);
            rbi_buf_append(out, head, strlen(head));
            rbi_buf_append(out, resp_arg(&p, buf, i), p.len[i]);
            rbi_buf_append(out, "\r\n", 2);
        }
    }
    ck_assert(!out->oom);
    resp_parser_free(&p);
    free(buf);
}

/* Shows bytes for a message: printable ASCII as is, others as \xHH. */
static const char *shown(const char *s, size_t len, char *buf, size_t cap)
{
    size_t o = 0;

    for (size_t i = 0; i < len && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        o += (size_t)snprintf(buf + o, cap - o, c >= 0x20 && c < 0x7f && c != '\\' ? "%c"
                                                                              : "\\x%02x", c);
    }
    buf[o] = '\0';
    return buf;
}

/* Quoted inline arguments follow redis-server's rules (sdssplitargs):
 * PING "a\x41b" was "ax41b", redis-server's "aAb". */
START_TEST(test_resp_inline_quoting_as_redis)
{
    rbi_buf_t got = { 0 };
    char a[256], b[256], c[256];

    for (size_t k = 0; k < sizeof(inline_cases) / sizeof(inline_cases[0]); k++) {
        const inline_case_t *t = &inline_cases[k];
        parse_inline_line(t->line, t->len, &got);
        ck_assert_msg(got.len == t->want_len && memcmp(got.data, t->want, got.len) == 0,
                      "[%s]: [%s], want [%s]", shown(t->line, t->len, a, sizeof(a)),
                      shown(got.data, got.len, b, sizeof(b)),
                      shown(t->want, t->want_len, c, sizeof(c)));
    }
    rbi_buf_free(&got);
}
END_TEST

/* Reads one whole reply (an error line, or an array of bulks) from fd
 * into out within 5 s; 0, or -1 (no answer: redis-server gives none to
 * a line holding a NUL, so the table has no such case). */
static int read_reply(int fd, rbi_buf_t *out)
{
    uint64_t until = rb_test_now_ms() + 5000;
    char chunk[4096];

    out->len = 0;
    for (;;) {
        struct pollfd pf = { fd, POLLIN, 0 };
        const char *d = out->data;
        size_t at, n;
        long long k;
        ssize_t r;

        if (out->len >= 3 && d[0] == '-' && memcmp(d + out->len - 2, "\r\n", 2) == 0)
            return 0;
        if (out->len >= 4 && d[0] == '*' && memchr(d, '\n', out->len) != NULL) {
            k = strtoll(d + 1, NULL, 10);
            at = (size_t)((const char *)memchr(d, '\n', out->len) - d) + 1;
            for (; k > 0 && at < out->len; k--) {
                const char *nl = memchr(d + at, '\n', out->len - at);
                if (nl == NULL)
                    break;
                n = (size_t)strtoull(d + at + 1, NULL, 10);
                at = (size_t)(nl - d) + 1 + n + 2;
            }
            if (k == 0 && at <= out->len)
                return 0;
        }
        if (rb_test_now_ms() >= until || poll(&pf, 1, 100) < 0)
            return -1;
        if (!(pf.revents & (POLLIN | POLLHUP)))
            continue;
        r = read(fd, chunk, sizeof(chunk));
        if (r <= 0)
            return -1;
        rbi_buf_append(out, chunk, (size_t)r);
    }
}

/* The table's answers are redis-server's: each line after `EVAL "return
 * ARGV" 0 ` on a redis-server started here on a Unix socket (skipped,
 * saying so, if none is installed). */
START_TEST(test_resp_inline_as_redis_server)
{
    char sock[100], tmpl[64], a[256], b[256], c[256];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    rbi_buf_t got = { 0 }, want = { 0 };
    uint64_t until;
    int status;
    pid_t pid;

    if (system("command -v redis-server >/dev/null 2>&1") != 0) {
        printf("resp: redis-server is not installed; the inline table is not compared\n");
        return;
    }
    snprintf(tmpl, sizeof(tmpl), "/tmp/rbtest.%d.XXXXXX", (int)rb_test_main_pid);
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(sock, sizeof(sock), "%s/redis.sock", tmpl);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a failed assertion ends the test process */
        dup2(null, 1);
        dup2(null, 2);
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock, "--save",
               "", "--appendonly", "no", "--dir", tmpl, (char *)NULL);
        _exit(127);
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
    until = rb_test_now_ms() + 10000;
    for (size_t k = 0; k < sizeof(inline_cases) / sizeof(inline_cases[0]); k++) {
        const inline_case_t *t = &inline_cases[k];
        static const char eval[] = "EVAL \"return ARGV\" 0 ";
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            ck_assert_msg(rb_test_now_ms() < until, "redis-server did not listen on %s", sock);
            usleep(20000);
        }
        ck_assert_int_eq(write(fd, eval, sizeof(eval) - 1), (ssize_t)sizeof(eval) - 1);
        ck_assert_int_eq(write(fd, t->line, t->len), (ssize_t)t->len);
        ck_assert_int_eq(write(fd, "\r\n", 2), 2);
        ck_assert_msg(read_reply(fd, &want) == 0, "redis-server: no answer to [%s]",
                      shown(t->line, t->len, a, sizeof(a)));
        close(fd);
        parse_inline_line(t->line, t->len, &got);
        ck_assert_msg(got.len == want.len && memcmp(got.data, want.data, got.len) == 0,
                      "[%s]: ours [%s], redis-server [%s]", shown(t->line, t->len, a, sizeof(a)),
                      shown(got.data, got.len, b, sizeof(b)),
                      shown(want.data, want.len, c, sizeof(c)));
    }
    printf("resp: %zu inline lines split as redis-server splits them\n",
           sizeof(inline_cases) / sizeof(inline_cases[0]));
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    unlink(sock);
    rmdir(tmpl);
    rbi_buf_free(&got);
    rbi_buf_free(&want);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("resp",
                        RB_TCASE("parser", 0, NULL, NULL,
                                 test_resp_malformed_number_is_an_error_at_once,
                                 test_resp_request_limit_holds_however_split),
                        RB_TCASE("inline", 60, NULL, NULL,
                                 test_resp_inline_quoting_as_redis,
                                 test_resp_inline_as_redis_server),
                        RB_TCASE("encoder", 0, NULL, NULL,
                                 test_resp_encoded_requests_parse_back,
                                 test_resp_typed_replies_follow_the_protocol));
}
