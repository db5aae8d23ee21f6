/*
 * check_cost.c - commands that cost too much (issue 25, items 4 and 8):
 * one request that holds ringbloomd's event loop, and so every other
 * client, for seconds.  Each test sends the costly request on one
 * connection while a second connection pings in a loop, and asserts the
 * worst PING round trip: under 100 ms for a read-only command, 250 ms for
 * a writer's (the bounds of docs/design.md, "Every loop is bounded"), or
 * that the request is refused naming the limit it passes.  Today's
 * figures (seconds) are printed beside each bound.
 */
#include <pthread.h>
#include <poll.h>

#include "rbd_test.h"

#define READ_BOUND_MS  100
#define WRITE_BOUND_MS 250

static rbd_proc_t d;

/* The pinger: PINGs on its own connection until told to stop, keeping
 * the worst round trip. */
typedef struct pinger {
    pthread_t th;
    int fd;
    _Atomic int stop;
    uint64_t worst_ms;
    unsigned long pings;
} pinger_t;

static void *ping_loop(void *arg)
{
    pinger_t *p = arg;
    char buf[64];

    while (!atomic_load(&p->stop)) {
        uint64_t t0 = rb_test_now_ms(), t;
        size_t got = 0;
        if (send(p->fd, "PING\r\n", 6, MSG_NOSIGNAL) != 6)
            break;
        while (got < 7) {   /* "+PONG\r\n" */
            ssize_t n = read(p->fd, buf + got, sizeof(buf) - got);
            if (n <= 0)
                return NULL;
            got += (size_t)n;
        }
        t = rb_test_now_ms() - t0;
        if (t > p->worst_ms)
            p->worst_ms = t;
        p->pings++;
    }
    return NULL;
}

static void pinger_start(pinger_t *p)
{
    memset(p, 0, sizeof(*p));
    p->fd = rbd_raw_connect(&d);
    ck_assert_int_eq(pthread_create(&p->th, NULL, ping_loop, p), 0);
    usleep(100000);
}

static uint64_t pinger_stop(pinger_t *p)
{
    atomic_store(&p->stop, 1);
    pthread_join(p->th, NULL);
    close(p->fd);
    ck_assert_uint_gt(p->pings, 0);
    return p->worst_ms;
}

/* Sends the request req[0..len) on a fresh connection while a pinger
 * runs, reads its reply's first line into line (up to 60 s), and returns
 * the worst PING round trip meanwhile; *ms: how long the reply took. */
static uint64_t worst_ping_during(const char *req, size_t len, char *line, size_t cap,
                                  uint64_t *ms)
{
    int fd = rbd_raw_connect(&d);
    uint64_t t0;
    size_t off = 0, w = 0;
    pinger_t p;

    pinger_start(&p);
    t0 = rb_test_now_ms();
    while (off < len) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        ck_assert_int_gt(n, 0);
        off += (size_t)n;
    }
    while (w + 1 < cap) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ck_assert_int_eq(poll(&pf, 1, 60000), 1);
        ck_assert_int_eq(read(fd, line + w, 1), 1);
        if (++w >= 2 && line[w - 2] == '\r' && line[w - 1] == '\n') {
            w -= 2;
            break;
        }
    }
    line[w] = '\0';
    *ms = rb_test_now_ms() - t0;
    close(fd);
    return pinger_stop(&p);
}

/* A growing RESP request: *argc then each argument as a bulk string. */
typedef struct req {
    char *buf;
    size_t len, cap;
} req_t;

static void req_put(req_t *r, const void *data, size_t len)
{
    if (r->len + len > r->cap) {
        r->cap = 2 * (r->len + len);
        r->buf = realloc(r->buf, r->cap);
        ck_assert_ptr_nonnull(r->buf);
    }
    memcpy(r->buf + r->len, data, len);
    r->len += len;
}

static void req_arg(req_t *r, const void *data, size_t len)
{
    char head[32];
    int n = snprintf(head, sizeof(head), "$%zu\r\n", len);

    req_put(r, head, (size_t)n);
    req_put(r, data, len);
    req_put(r, "\r\n", 2);
}

static void req_argc(req_t *r, size_t argc)
{
    char head[32];
    int n = snprintf(head, sizeof(head), "*%zu\r\n", argc);

    req_put(r, head, (size_t)n);
}

/* Runs req under the pinger, prints the figures, asserts the reply starts
 * with want and the worst PING is under bound_ms. */
static void assert_no_stall(req_t *r, const char *what, const char *want, uint64_t bound_ms)
{
    char line[512];
    uint64_t ms, worst = worst_ping_during(r->buf, r->len, line, sizeof(line), &ms);

    printf("%s: reply [%.60s] in %llu ms, worst PING meanwhile %llu ms (bound %llu)\n", what,
           line, (unsigned long long)ms, (unsigned long long)worst, (unsigned long long)bound_ms);
    ck_assert_msg(strncmp(line, want, strlen(want)) == 0, "%s: got [%s], want [%s...]", what,
                  line, want);
    ck_assert_msg(worst < bound_ms, "%s: a PING waited %llu ms (bound %llu)", what,
                  (unsigned long long)worst, (unsigned long long)bound_ms);
    free(r->buf);
    memset(r, 0, sizeof(*r));
}

/* Item 4: KEYS and SCAN MATCH with a 4 MiB bracket class, from a client
 * that needs no write permission (16 MiB took 42 s of CPU and stalled
 * every client 93-160 s; this size took about 3 s). */
START_TEST(test_cost_keys_long_class)
{
    enum { CLASS = 4 << 20 };
    char *pat = malloc(CLASS + 3);
    rb_conn_t *c;
    req_t r = { 0 };

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof(name), "filter-%04d", i);
        rbd_expect(c, "1", "BF.ADD", name, "x");
    }
    rb_conn_close(c);
    ck_assert_ptr_nonnull(pat);
    memcpy(pat, "*[", 2);
    memset(pat + 2, 'z', CLASS);
    pat[CLASS + 2] = ']';
    req_argc(&r, 2);
    req_arg(&r, "KEYS", 4);
    req_arg(&r, pat, CLASS + 3);
    assert_no_stall(&r, "KEYS *[4 MiB]", "*0", READ_BOUND_MS);
    req_argc(&r, 6);
    req_arg(&r, "SCAN", 4);
    req_arg(&r, "0", 1);
    req_arg(&r, "COUNT", 5);
    req_arg(&r, "1000", 4);
    req_arg(&r, "MATCH", 5);
    pat[CLASS + 1] = '0';   /* "*[zz...z0]": matches filter-0000 .. filter-0090 */
    req_arg(&r, pat, CLASS + 3);
    assert_no_stall(&r, "SCAN 0 COUNT 1000 MATCH *[4 MiB]", "*2", READ_BOUND_MS);
    free(pat);
    c = rbd_connect(&d);
    rbd_expect(c, "filter-0000\nfilter-0010\nfilter-0020\nfilter-0030\nfilter-0040\n"
               "filter-0050\nfilter-0060\nfilter-0070\nfilter-0080\nfilter-0090",
               "KEYS", "*[z0]");
    rb_conn_close(c);
}
END_TEST

/* Item 4: PFCOUNT and EXISTS naming one key 200,000 times (PFCOUNT
 * stalled every client 11 s), and PFMERGE: each distinct key is read
 * once, the answers unchanged (EXISTS counts every repeat, as Redis). */
START_TEST(test_cost_repeated_keys)
{
    enum { N = 200000 };
    static const char *const cmd[] = { "PFCOUNT", "EXISTS", "PFMERGE" };
    static const char *const want[] = { ":3", ":200000", "+OK" };
    rb_conn_t *c;
    req_t r = { 0 };

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "PFADD", "h", "a", "b", "c");
    rb_conn_close(c);
    for (int k = 0; k < 3; k++) {
        req_argc(&r, N + 1 + (k == 2));
        req_arg(&r, cmd[k], strlen(cmd[k]));
        if (k == 2)
            req_arg(&r, "dest", 4);
        for (int i = 0; i < N; i++)
            req_arg(&r, "h", 1);
        assert_no_stall(&r, cmd[k], want[k], k == 2 ? WRITE_BOUND_MS : READ_BOUND_MS);
    }
    c = rbd_connect(&d);
    rbd_expect(c, "3", "PFCOUNT", "dest", "h", "dest");
    rbd_expect(c, "3", "EXISTS", "dest", "h", "dest", "none");
    rb_conn_close(c);
    /* The log replays the deduplicated merge to the same counter. */
    rbd_restart_cold(&d);
    c = rbd_connect(&d);
    rbd_expect(c, "3", "PFCOUNT", "dest");
    rb_conn_close(c);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("cost",
                        RB_TCASE("read", 120, NULL, rbd_teardown, test_cost_keys_long_class,
                                 test_cost_repeated_keys));
}
