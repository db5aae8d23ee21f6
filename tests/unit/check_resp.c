/* check_resp.c - RESP: ringbloomd's request parser (daemon/resp.c), whose
 * verdict on a request never depends on how its bytes were split (cases
 * from fuzz_resp: tests/fuzz/corpus/fuzz_resp/regress-*), and the project's
 * one encoder (lib/resp_enc.c), whose requests that parser reads back and
 * whose typed replies are RESP3's or, byte for byte, Redis 7's RESP2. */
#include "resp.h"
#include "resp_enc.h"
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

/* Requests the encoder writes (the client library's and the nginx
 * module's) parse back into the same arguments, binary and empty ones
 * included; rbi_resp_command_size is exactly what rbi_resp_command_put
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
        rbi_buf_t b = { 0 };
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
        rbi_resp_command(&b, argc, argv, argl);
        ck_assert(!b.oom);
        ck_assert_uint_eq(b.len, size);
        ck_assert(memcmp(b.data, fixed, size) == 0);
        resp_limits_init(&lim, 1u << 20);
        resp_parser_init(&p);
        ck_assert_int_eq(resp_parse(&p, b.data, b.len, &lim, &err), RESP_DONE);
        ck_assert_uint_eq(p.pos, size);
        ck_assert_uint_eq(p.nargs, argc);
        for (size_t i = 0; i < argc; i++) {
            ck_assert_uint_eq(p.len[i], argl[i]);
            ck_assert(memcmp(resp_arg(&p, b.data, i), argv[i], argl[i]) == 0);
        }
        resp_parser_free(&p);
        rbi_buf_free(&b);
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

int main(void)
{
    return RB_TEST_MAIN("resp",
                        RB_TCASE("parser", 0, NULL, NULL,
                                 test_resp_malformed_number_is_an_error_at_once,
                                 test_resp_request_limit_holds_however_split),
                        RB_TCASE("encoder", 0, NULL, NULL,
                                 test_resp_encoded_requests_parse_back,
                                 test_resp_typed_replies_follow_the_protocol));
}
