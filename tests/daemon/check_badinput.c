/*
 * check_badinput.c - the bad-input table: one test per kind of bad input
 * sent to a real private ringbloomd.  Each test asserts the exact error
 * reply (or the exact behaviour: closed, timed out, refused) and that
 * nothing changed: ring nodes and version, every filter's items, set bits
 * and capacity, the segment's used and committed bytes, the log, and that
 * the daemon and a client connected before the bad input still answer.
 * docs/reliability.md lists the rows, their tests and the errors asserted.
 */
#include <grp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "rbd_test.h"

static rbd_proc_t d;
static rb_segment_t *rseg;   /* a reader of the daemon's segment */
static rb_conn_t *w;         /* a client connected before the bad input */

static void teardown(void)
{
    if (w != NULL)
        rb_conn_close(w);
    w = NULL;
    rb_segment_close(rseg);
    rseg = NULL;
    rbd_remove_all(&d);
}

/* A private daemon (extra: config lines), a reader and a watching client. */
static void start(const char *extra)
{
    rbd_start(&d, extra);
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &rseg), RB_OK);
    w = rbd_connect(&d);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- commands with binary arguments ------------------------------------------ */

typedef struct arg {
    const char *p;
    size_t n;
} arg_t;

/* Initializers of an arg_t: a literal (NULs kept), or bytes and length. */
#define A(lit)      { (lit), sizeof(lit) - 1 }
#define B(ptr, len) { (const char *)(ptr), (len) }
#define NARGS(a)    (sizeof(a) / sizeof((a)[0]))

static int run_args(rb_conn_t *c, char *buf, size_t cap, size_t n, const arg_t *a)
{
    const char *argv[32];
    size_t argl[32];

    ck_assert_uint_le(n, 32);
    for (size_t i = 0; i < n; i++) {
        argv[i] = a[i].p;
        argl[i] = a[i].n;
    }
    return rb_conn_command(c, n, argv, argl, buf, cap);
}

/* Asserts the reply text, and that it is an error reply iff is_err. */
static void expect_v(int line, rb_conn_t *c, const char *want, int is_err, size_t n,
                     const arg_t *a)
{
    char buf[8192];
    int rc = run_args(c, buf, sizeof(buf), n, a);

    ck_assert_msg(strcmp(buf, want) == 0, "line %d: expected [%s], got [%s] (rc %d)", line, want,
                  buf, rc);
    if (is_err)
        ck_assert_msg(rc == RB_EREPLY || rc == RB_EPERM, "line %d: [%s] is not an error (rc %d)",
                      line, buf, rc);
    else
        ck_assert_msg(rc == RB_OK, "line %d: [%s] rc %d", line, buf, rc);
}

#define EXPECT(c, want, ...)                                                  \
    do {                                                                      \
        const arg_t a_[] = { __VA_ARGS__ };                                   \
        expect_v(__LINE__, (c), (want), 0, NARGS(a_), a_);                   \
    } while (0)
#define EXPECT_ERR(c, want, ...)                                              \
    do {                                                                      \
        const arg_t a_[] = { __VA_ARGS__ };                                   \
        expect_v(__LINE__, (c), (want), 1, NARGS(a_), a_);                    \
    } while (0)

/* ---- raw sockets ---------------------------------------------------------------- */

/* Sends everything it can; a peer that closed is not an error here. */
static void raw_send(int fd, const void *data, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = send(fd, (const char *)data + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

/* Reads into buf (NUL-terminated) until `want` bytes arrived (0: until the
 * peer closes) or ms passed.  *closed: the peer closed. */
static size_t raw_read(int fd, char *buf, size_t cap, size_t want, int ms, int *closed)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    size_t got = 0;

    *closed = 0;
    while (got + 1 < cap && (want == 0 || got < want)) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        uint64_t now = now_ms();
        ssize_t n;
        if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
            break;
        n = recv(fd, buf + got, cap - 1 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {          /* 0, or ECONNRESET: it closed with our bytes unread */
            *closed = 1;
            break;
        }
        got += (size_t)n;
    }
    buf[got] = '\0';
    return got;
}

/* Sends bytes on a fresh connection; asserts the daemon answers exactly
 * `reply` and closes the connection within 2 s. */
static void expect_protocol_close(int line, const void *bytes, size_t len, const char *reply)
{
    char buf[1024];
    int closed, fd = rbd_raw_connect(&d);
    uint64_t t0 = now_ms();

    raw_send(fd, bytes, len);
    raw_read(fd, buf, sizeof(buf), 0, 3000, &closed);
    ck_assert_msg(strcmp(buf, reply) == 0, "line %d: expected [%s], got [%s]", line, reply, buf);
    ck_assert_msg(closed, "line %d: the daemon kept the connection open", line);
    ck_assert_msg(now_ms() - t0 < 2000, "line %d: closed only after %llu ms", line,
                  (unsigned long long)(now_ms() - t0));
    close(fd);
}

#define PROTO_CLOSE(lit, reply) expect_protocol_close(__LINE__, lit, sizeof(lit) - 1, reply)

/* ---- daemon figures ------------------------------------------------------------- */

/* A numeric field of INFO section (the line "field:N"). */
static long long info_num(rb_conn_t *c, const char *section, const char *field)
{
    char key[64];
    const char *t, *p;
    int rc;

    t = rbd_cmd(c, &rc, "INFO", section, (const char *)NULL);
    ck_assert_int_eq(rc, RB_OK);
    snprintf(key, sizeof(key), "\n%s:", field);
    p = strstr(t, key);
    ck_assert_msg(p != NULL, "INFO %s has no %s", section, field);
    return atoll(p + strlen(key));
}

/* Waits (<= 3 s) until the daemon counts n connected clients. */
static void wait_clients(long long n)
{
    long long got = -1;

    for (int i = 0; i < 300 && (got = info_num(w, "clients", "connected_clients")) != n; i++)
        usleep(10000);
    ck_assert_msg(got == n, "connected_clients %lld, expected %lld", got, n);
}

/* ---- the state that bad input must not change -------------------------------- */

enum { MAX_NODES = 32, MAX_FILTERS = 8 };

typedef struct fstate {
    char name[RB_FILTER_NAME_MAX + 1];
    size_t len;
    uint64_t items, bits_set, bits, capacity;
    uint32_t layers;
} fstate_t;

typedef struct state {
    uint64_t ring_version;
    uint32_t ring_points;
    size_t nnodes;
    rb_node_t node[MAX_NODES];
    size_t nfilters;
    fstate_t f[MAX_FILTERS];
    uint64_t seg_used, seg_size;
    long long log_bytes, changes;
} state_t;

static int capture_filter(const char *name, size_t len, void *arg)
{
    state_t *st = arg;
    rb_bloom_stat_t bs;
    rb_bloom_t *bf;
    fstate_t *f;

    ck_assert_uint_lt(st->nfilters, MAX_FILTERS);
    f = &st->f[st->nfilters++];
    memcpy(f->name, name, len);
    f->len = len;
    ck_assert_int_eq(rb_bloom_open(rseg, name, len, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_stat(bf, &bs), RB_OK);
    f->items = bs.items;
    f->bits_set = bs.bits_set;
    f->bits = bs.bits;
    f->capacity = bs.capacity;
    f->layers = bs.layers;
    rb_bloom_close(bf);
    return 0;
}

static void capture(state_t *st)
{
    rb_ring_stat_t rs;
    rb_segment_info_t si;

    memset(st, 0, sizeof(*st));
    ck_assert_int_eq(rb_ring_stat(rseg, &rs), RB_OK);
    st->ring_version = rs.version;
    st->ring_points = rs.points;
    ck_assert_int_eq(rb_ring_nodes(rseg, st->node, MAX_NODES, &st->nnodes), RB_OK);
    ck_assert_uint_le(st->nnodes, MAX_NODES);
    ck_assert_int_eq(rb_bloom_list(rseg, capture_filter, st), 0);
    ck_assert_int_eq(rb_segment_info(rseg, &si), RB_OK);
    ck_assert_uint_eq(si.filters, st->nfilters);
    st->seg_used = si.used;
    st->seg_size = si.size;
    st->log_bytes = info_num(w, "persistence", "log_bytes");
    st->changes = info_num(w, "persistence", "changes_since_last_save");
}

/* The daemon lives, answers the client connected before and a new one. */
static void assert_healthy(void)
{
    rb_conn_t *fresh;
    int status;

    ck_assert_msg(waitpid(d.pid, &status, WNOHANG) == 0, "ringbloomd died (status %d)", status);
    EXPECT(w, "PONG", A("PING"));
    fresh = rbd_connect(&d);
    EXPECT(fresh, "PONG", A("PING"));
    rb_conn_close(fresh);
}

static void assert_unchanged_at(int line, const state_t *before)
{
    state_t now;

    assert_healthy();
    capture(&now);
    ck_assert_msg(now.ring_version == before->ring_version, "line %d: ring version %llu -> %llu",
                  line, (unsigned long long)before->ring_version,
                  (unsigned long long)now.ring_version);
    ck_assert_msg(now.ring_points == before->ring_points, "line %d: ring points changed", line);
    ck_assert_msg(now.nnodes == before->nnodes, "line %d: %zu nodes -> %zu", line, before->nnodes,
                  now.nnodes);
    for (size_t i = 0; i < now.nnodes; i++)
        ck_assert_msg(now.node[i].name_len == before->node[i].name_len &&
                      memcmp(now.node[i].name, before->node[i].name, now.node[i].name_len) == 0 &&
                      now.node[i].weight == before->node[i].weight,
                      "line %d: node %zu changed", line, i);
    ck_assert_msg(now.nfilters == before->nfilters, "line %d: %zu filters -> %zu", line,
                  before->nfilters, now.nfilters);
    for (size_t i = 0; i < now.nfilters; i++) {
        const fstate_t *a = &before->f[i], *b = &now.f[i];
        ck_assert_msg(a->len == b->len && memcmp(a->name, b->name, a->len) == 0,
                      "line %d: filter %zu renamed", line, i);
        ck_assert_msg(a->items == b->items && a->bits_set == b->bits_set && a->bits == b->bits &&
                      a->capacity == b->capacity && a->layers == b->layers,
                      "line %d: filter '%.*s' changed: items %llu -> %llu, bits set %llu -> %llu",
                      line, (int)a->len, a->name, (unsigned long long)a->items,
                      (unsigned long long)b->items, (unsigned long long)a->bits_set,
                      (unsigned long long)b->bits_set);
    }
    ck_assert_msg(now.seg_used == before->seg_used && now.seg_size == before->seg_size,
                  "line %d: segment used %llu -> %llu, committed %llu -> %llu", line,
                  (unsigned long long)before->seg_used, (unsigned long long)now.seg_used,
                  (unsigned long long)before->seg_size, (unsigned long long)now.seg_size);
    ck_assert_msg(now.log_bytes == before->log_bytes && now.changes == before->changes,
                  "line %d: something was logged (%lld -> %lld bytes)", line, before->log_bytes,
                  now.log_bytes);
}

#define ASSERT_UNCHANGED(st) assert_unchanged_at(__LINE__, (st))

/* Two nodes and a filter holding two keys: the state the rows try to damage. */
static void seed(void)
{
    EXPECT(w, "OK", A("RING.ADD"), A("n1"));
    EXPECT(w, "OK", A("RING.ADD"), A("n2"), A("2"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("f"), A("0.001"), A("1000"));
    EXPECT(w, "1", A("BF.ADD"), A("f"), A("k1"));
    EXPECT(w, "1", A("BF.ADD"), A("f"), A("k2"));
}

static void assert_no_filter(const char *name, size_t len)
{
    rb_bloom_t *bf;
    ck_assert_int_eq(rb_bloom_open(rseg, name, len, &bf), RB_ENOENT);
}

/* ---- keys ------------------------------------------------------------------------ */

START_TEST(test_badinput_empty_key)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR empty key", A("BF.ADD"), A("f"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.ADD"), A("new"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.MADD"), A("f"), A("k3"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.INSERT"), A("new"), A("ITEMS"), A("k3"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.EXISTS"), A("f"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.MEXISTS"), A("f"), A("k1"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("RING.GET"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("RING.GETN"), A(""), A("2"));
    assert_no_filter("new", 3);
    EXPECT(w, "0", A("BF.EXISTS"), A("f"), A("k3"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_empty_names)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR empty filter name", A("BF.ADD"), A(""), A("k"));
    EXPECT_ERR(w, "ERR empty filter name", A("BF.RESERVE"), A(""), A("0.01"), A("10"));
    EXPECT_ERR(w, "ERR empty filter name", A("BF.INSERT"), A(""), A("ITEMS"), A("k"));
    EXPECT_ERR(w, "ERR empty filter name", A("BF.EXISTS"), A(""), A("k"));
    EXPECT_ERR(w, "ERR empty node name", A("RING.ADD"), A(""));
    EXPECT_ERR(w, "ERR empty node name", A("RING.REMOVE"), A(""));
    EXPECT_ERR(w, "ERR empty node name", A("RING.WEIGHT"), A(""), A("2"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* max-key-bytes 100: 100 bytes are a key like any other. */
START_TEST(test_badinput_key_at_max_key_bytes_round_trips)
{
    char key[100];
    rb_bloom_t *bf;
    rb_node_t n;
    char buf[512];

    start("max-key-bytes 100");
    seed();
    memset(key, 'k', sizeof(key));
    key[0] = '\0';                      /* binary at both ends */
    key[99] = (char)0xff;
    EXPECT(w, "1", A("BF.ADD"), A("f"), B(key, 100));
    EXPECT(w, "0", A("BF.ADD"), A("f"), B(key, 100));
    EXPECT(w, "1", A("BF.EXISTS"), A("f"), B(key, 100));
    EXPECT(w, "1\n1", A("BF.MEXISTS"), A("f"), B(key, 100), A("k1"));
    EXPECT(w, "0", A("BF.EXISTS"), A("f"), B(key, 99));
    EXPECT(w, "1\n1", A("BF.MADD"), A("g"), B(key, 100), B(key + 1, 99));
    EXPECT(w, "3", A("BF.CARD"), A("f"));
    ck_assert_int_eq(rb_bloom_open(rseg, "f", 1, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, key, 100), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, key, 99), 0);
    rb_bloom_close(bf);
    ck_assert_int_eq(run_args(w, buf, sizeof(buf), 2, (arg_t[]){ A("RING.GET"), B(key, 100) }),
                     RB_OK);
    ck_assert_int_eq(rb_ring_lookup(rseg, key, 100, &n), RB_OK);
    ck_assert_str_eq(buf, n.name);
    assert_healthy();
}
END_TEST

START_TEST(test_badinput_key_over_max_key_bytes_refused)
{
    const char *want = "ERR key too long (101 bytes, max-key-bytes is 100)";
    char key[101];
    state_t st;

    start("max-key-bytes 100");
    seed();
    memset(key, 'k', sizeof(key));
    capture(&st);
    EXPECT_ERR(w, want, A("BF.ADD"), A("f"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.ADD"), A("new"), B(key, 101));
    /* The good key before the long one is not added either. */
    EXPECT_ERR(w, want, A("BF.MADD"), A("f"), A("k3"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.INSERT"), A("new"), A("ITEMS"), A("k3"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.EXISTS"), A("f"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.MEXISTS"), A("f"), A("k1"), B(key, 101));
    EXPECT_ERR(w, want, A("RING.GET"), B(key, 101));
    EXPECT_ERR(w, want, A("RING.GETN"), B(key, 101), A("2"));
    assert_no_filter("new", 3);
    EXPECT(w, "0", A("BF.EXISTS"), A("f"), A("k3"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* Keys with NUL bytes and bytes that are not UTF-8 are keys like any
 * other: the daemon and a reader of the segment agree on each. */
static const arg_t binary_keys[] = {
    A("a\0b"), A("\0"), A("\0\0\0"), A("a\0"), A("\xff\xfe\xfd"), A("\xc3\x28"), A("\x80"),
    A("\xed\xa0\x80"), A("\xf4\x90\x80\x80"), A("k\r\nk"), A("caf\xc3\xa9"), A("\xe2\x82"),
};

START_TEST(test_badinput_binary_keys_round_trip)
{
    static const char *const modes[] = { "xxh3", "seed", "ketama", "nginx" };
    size_t nkeys = NARGS(binary_keys);
    rb_bloom_t *bf;
    char buf[512];

    start(NULL);
    EXPECT(w, "OK", A("BF.RESERVE"), A("bin"), A("0.000001"), A("1000"));
    for (size_t i = 0; i < nkeys; i++)
        EXPECT(w, "1", A("BF.ADD"), A("bin"), binary_keys[i]);
    EXPECT(w, "1\n1", A("BF.MADD"), A("bin"), A("m\0a"), A("m\0b"));
    ck_assert_int_eq(rb_bloom_open(rseg, "bin", 3, &bf), RB_OK);
    for (size_t i = 0; i < nkeys; i++) {
        EXPECT(w, "1", A("BF.EXISTS"), A("bin"), binary_keys[i]);
        EXPECT(w, "0", A("BF.ADD"), A("bin"), binary_keys[i]);
        ck_assert_int_eq(rb_bloom_contains(bf, binary_keys[i].p, binary_keys[i].n), 1);
    }
    /* What a C string would keep of them was never added. */
    EXPECT(w, "0\n0\n1\n1", A("BF.MEXISTS"), A("bin"), A("a"), A("m"), A("m\0a"), A("m\0b"));
    ck_assert_int_eq(rb_bloom_contains(bf, "a", 1), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "a\0c", 3), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "\0\0", 2), 0);
    rb_bloom_close(bf);
    EXPECT(w, "14", A("BF.CARD"), A("bin"));

    /* Ring lookups of the same keys: RING.GET and rb_ring_lookup agree in
     * every mode (seed hashes UTF-8 code points, invalid bytes included). */
    for (int i = 0; i < 8; i++) {
        char node[48];
        snprintf(node, sizeof(node), "cache-%d:1121%d", i, i);
        EXPECT(w, "OK", A("RING.ADD"), B(node, strlen(node)), A("3"));
    }
    for (size_t m = 0; m < NARGS(modes); m++) {
        EXPECT(w, "OK", A("RING.MODE"), B(modes[m], strlen(modes[m])));
        for (size_t i = 0; i < nkeys; i++) {
            rb_node_t n, nn[3];
            char want[1024] = "";
            int got;
            ck_assert_int_eq(run_args(w, buf, sizeof(buf), 2,
                                      (arg_t[]){ A("RING.GET"), binary_keys[i] }), RB_OK);
            ck_assert_int_eq(rb_ring_lookup(rseg, binary_keys[i].p, binary_keys[i].n, &n), RB_OK);
            ck_assert_msg(strcmp(buf, n.name) == 0, "mode %s key %zu: daemon %s, reader %s",
                          modes[m], i, buf, n.name);
            got = rb_ring_lookup_n(rseg, binary_keys[i].p, binary_keys[i].n, nn, 3);
            ck_assert_int_eq(got, 3);
            snprintf(want, sizeof(want), "%s\n%s\n%s", nn[0].name, nn[1].name, nn[2].name);
            ck_assert_int_eq(run_args(w, buf, sizeof(buf), 3,
                                      (arg_t[]){ A("RING.GETN"), binary_keys[i], A("3") }), RB_OK);
            ck_assert_str_eq(buf, want);
        }
    }
    assert_healthy();
}
END_TEST

/* ---- names ----------------------------------------------------------------------- */

/* Filter names may hold any byte, NUL included. */
START_TEST(test_badinput_binary_filter_names_round_trip)
{
    static const arg_t names[] = { A("f\0x"), A("\0"), A("\xff\xfe\xfd"), A("\xc3\x28"),
                                   A("f\r\n"), A("caf\xc3\xa9") };
    const char *info;
    rb_bloom_t *bf;
    int rc;

    start(NULL);
    for (size_t i = 0; i < NARGS(names); i++) {
        EXPECT(w, "OK", A("BF.RESERVE"), names[i], A("0.0001"), A("100"));
        EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), names[i], A("0.0001"), A("100"));
        EXPECT(w, "1", A("BF.ADD"), names[i], A("key"));
        EXPECT(w, "1", A("BF.EXISTS"), names[i], A("key"));
        EXPECT(w, "1", A("BF.CARD"), names[i]);
        EXPECT(w, "100", A("BF.INFO"), names[i], A("CAPACITY"));
    }
    /* Created on first add, as any name. */
    EXPECT(w, "1", A("BF.ADD"), A("auto\0\xff"), A("key"));
    for (size_t i = 0; i < NARGS(names); i++) {
        ck_assert_int_eq(rb_bloom_open(rseg, names[i].p, names[i].n, &bf), RB_OK);
        ck_assert_int_eq(rb_bloom_contains(bf, "key", 3), 1);
        ck_assert_int_eq(rb_bloom_contains(bf, "other", 5), 0);
        rb_bloom_close(bf);
    }
    ck_assert_int_eq(rb_bloom_open(rseg, "auto\0\xff", 6, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, "key", 3), 1);
    rb_bloom_close(bf);
    /* The prefixes a C string would see are other (absent) filters. */
    EXPECT(w, "0", A("BF.CARD"), A("f"));
    EXPECT(w, "0", A("BF.EXISTS"), A("auto"), A("key"));
    assert_no_filter("f", 1);
    assert_no_filter("auto", 4);
    /* INFO shows them escaped, one line each. */
    info = rbd_cmd(w, &rc, "INFO", "bloom", (const char *)NULL);
    ck_assert_ptr_nonnull(strstr(info, "filters:7\r\n"));
    ck_assert_ptr_nonnull(strstr(info, "name=f\\x00x,"));
    ck_assert_ptr_nonnull(strstr(info, "name=\\xff\\xfe\\xfd,"));
    ck_assert_ptr_nonnull(strstr(info, "name=f\\x0d\\x0a,"));
    assert_healthy();
}
END_TEST

/* Node names may hold any byte but NUL (a reader hands names out as C
 * strings); CR LF and non-UTF-8 bytes round-trip. */
START_TEST(test_badinput_binary_node_names_round_trip)
{
    static const arg_t names[] = { A("\xff\xfe"), A("\xc3\x28-node"), A("\x80"), A("a\r\nb"),
                                   A("n\xe2\x82") };
    rb_node_t nodes[MAX_NODES];
    size_t count;
    char buf[512];
    state_t st;

    start(NULL);
    for (size_t i = 0; i < NARGS(names); i++)
        EXPECT(w, "OK", A("RING.ADD"), names[i], A("2"));
    ck_assert_int_eq(rb_ring_nodes(rseg, nodes, MAX_NODES, &count), RB_OK);
    ck_assert_uint_eq(count, NARGS(names));
    for (size_t i = 0; i < NARGS(names); i++) {
        int found = 0;
        for (size_t j = 0; j < count; j++)
            found += nodes[j].name_len == names[i].n &&
                     memcmp(nodes[j].name, names[i].p, names[i].n) == 0 && nodes[j].weight == 2;
        ck_assert_msg(found == 1, "node %zu not in the segment exactly once", i);
    }
    for (int i = 0; i < 200; i++) {
        char key[32];
        rb_node_t n;
        int len = snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_int_eq(run_args(w, buf, sizeof(buf), 2,
                                  (arg_t[]){ A("RING.GET"), B(key, (size_t)len) }), RB_OK);
        ck_assert_int_eq(rb_ring_lookup(rseg, key, (size_t)len, &n), RB_OK);
        ck_assert_str_eq(buf, n.name);
    }
    EXPECT(w, "OK", A("RING.WEIGHT"), A("\xff\xfe"), A("5"));
    EXPECT(w, "OK", A("RING.REMOVE"), A("a\r\nb"));
    capture(&st);
    ck_assert_uint_eq(st.nnodes, NARGS(names) - 1);
    /* NUL: refused by every ring command, nothing changes. */
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.ADD"), A("a\0b"));
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.ADD"), A("\xff\xfe\0"));
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.WEIGHT"), A("\xff\xfe\0"),
               A("2"));
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.REMOVE"), A("\x80\0"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_node_name_too_long)
{
    char name[256];
    state_t st;

    start(NULL);
    seed();
    memset(name, 'n', sizeof(name));
    EXPECT(w, "OK", A("RING.ADD"), B(name, 255));
    capture(&st);
    EXPECT_ERR(w, "ERR node name too long (256 bytes, max 255)", A("RING.ADD"), B(name, 256));
    EXPECT_ERR(w, "ERR node name too long (256 bytes, max 255)", A("RING.WEIGHT"), B(name, 256),
               A("2"));
    EXPECT_ERR(w, "ERR node name too long (256 bytes, max 255)", A("RING.REMOVE"), B(name, 256));
    EXPECT_ERR(w, "ERR filter name too long (256 bytes, max 255)", A("BF.RESERVE"), B(name, 256),
               A("0.01"), A("10"));
    EXPECT_ERR(w, "ERR filter name too long (256 bytes, max 255)", A("BF.ADD"), B(name, 256),
               A("k"));
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("RING.REMOVE"), B(name, 255));
}
END_TEST

/* ---- ring membership ---------------------------------------------------------- */

START_TEST(test_badinput_duplicate_node)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR node exists", A("RING.ADD"), A("n1"));
    EXPECT_ERR(w, "ERR node exists", A("RING.ADD"), A("n2"), A("7"));   /* weight stays 2 */
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "n1\n1\nn2\n2", A("RING.NODES"));
}
END_TEST

START_TEST(test_badinput_remove_unknown_node)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR no such node", A("RING.REMOVE"), A("n3"));
    EXPECT_ERR(w, "ERR no such node", A("RING.REMOVE"), A("N1"));
    EXPECT_ERR(w, "ERR no such node", A("RING.WEIGHT"), A("n3"), A("4"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_bad_weights)
{
    static const arg_t bad[] = { A("0"), A("-1"), A("-65535"), A("65536"), A("4294967297"),
                                 A("99999999999999999999"), A("abc"), A("1.5"), A("+1"),
                                 A(" 1"), A("1 "), A(""), A("0x10"), A("1e3"), A("-0"),
                                 A("01"), A("1\0") };
    const char *want = "ERR weight must be an integer in [1, 65535]";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(bad); i++) {
        EXPECT_ERR(w, want, A("RING.ADD"), A("n3"), bad[i]);
        EXPECT_ERR(w, want, A("RING.WEIGHT"), A("n1"), bad[i]);
    }
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* A valid weight whose table does not fit in max-memory: refused, and the
 * daemon's model is rolled back with the segment (the node can be added
 * again with a weight that fits). */
START_TEST(test_badinput_ring_too_big_for_max_memory)
{
    const char *want = "ERR cannot publish the ring: no space: segment reservation or /dev/shm "
                       "is full";
    state_t st;

    start("max-memory 1mb");
    seed();
    capture(&st);
    EXPECT_ERR(w, want, A("RING.ADD"), A("big"), A("1000"));
    EXPECT_ERR(w, want, A("RING.WEIGHT"), A("n1"), A("1000"));
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "n1\n1\nn2\n2", A("RING.NODES"));
    EXPECT(w, "OK", A("RING.ADD"), A("big"), A("1"));
    EXPECT(w, "OK", A("RING.WEIGHT"), A("n1"), A("3"));
    EXPECT(w, "big\n1\nn1\n3\nn2\n2", A("RING.NODES"));
}
END_TEST

START_TEST(test_badinput_ring_bad_mode_replicas_count)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR unknown ring mode 'nope' (xxh3, ketama, nginx or seed)", A("RING.MODE"),
               A("nope"));
    EXPECT_ERR(w, "ERR unknown ring mode '' (xxh3, ketama, nginx or seed)", A("RING.MODE"), A(""));
    EXPECT_ERR(w, "ERR replicas must be an integer in [1, 4096]", A("RING.MODE"), A("seed"),
               A("0"));
    EXPECT_ERR(w, "ERR replicas must be an integer in [1, 4096]", A("RING.MODE"), A("xxh3"),
               A("4097"));
    EXPECT_ERR(w, "ERR replicas must be an integer in [1, 4096]", A("RING.MODE"), A("xxh3"),
               A("x"));
    EXPECT_ERR(w, "ERR n must be an integer in [1, 65535]", A("RING.GETN"), A("k"), A("0"));
    EXPECT_ERR(w, "ERR n must be an integer in [1, 65535]", A("RING.GETN"), A("k"), A("65536"));
    EXPECT_ERR(w, "ERR n must be an integer in [1, 65535]", A("RING.GETN"), A("k"), A("two"));
    ASSERT_UNCHANGED(&st);
    {
        int rc;
        ck_assert_ptr_nonnull(strstr(rbd_cmd(w, &rc, "INFO", "ring", (const char *)NULL),
                                     "ring_mode:xxh3\r\nring_replicas:160\r\n"));
    }
}
END_TEST

/* ---- BF.RESERVE --------------------------------------------------------------- */

START_TEST(test_badinput_reserve_error_rate_out_of_range)
{
    static const arg_t range[] = { A("0"), A("-0.01"), A("1"), A("1.5"), A("inf"), A("-inf"),
                                   A("0.0"), A("-0") };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(range); i++)
        EXPECT_ERR(w, "ERR (0 < error rate range < 1) ", A("BF.RESERVE"), A("e"), range[i],
                   A("100"));
    /* BF.INSERT's own words for the same. */
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("e"), A("ERROR"), A("1"), A("ITEMS"),
               A("k"));
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("e"), A("ERROR"), A("0"), A("ITEMS"),
               A("k"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_reserve_error_rate_not_a_number)
{
    static const arg_t bad[] = { A("nan"), A("NaN"), A("abc"), A(""), A("0.01x"), A(" 0.01"),
                                 A("1e-400"), A("0.01\0") };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(bad); i++)
        EXPECT_ERR(w, "ERR bad error rate", A("BF.RESERVE"), A("e"), bad[i], A("100"));
    EXPECT_ERR(w, "Bad error rate", A("BF.INSERT"), A("e"), A("ERROR"), A("nan"), A("ITEMS"),
               A("k"));
    EXPECT_ERR(w, "Bad error rate", A("BF.INSERT"), A("e"), A("ERROR"), A("0.01\0"), A("ITEMS"),
               A("k"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_reserve_bad_capacity)
{
    static const arg_t range[] = { A("0"), A("-1"), A("-9223372036854775807") };
    static const arg_t bad[] = { A("abc"), A("1.5"), A(""), A("99999999999999999999"), A("1e6"),
                                 A("+5"), A("-0"), A("007") };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(range); i++)
        EXPECT_ERR(w, "ERR (capacity should be larger than 0)", A("BF.RESERVE"), A("e"),
                   A("0.01"), range[i]);
    for (size_t i = 0; i < NARGS(bad); i++)
        EXPECT_ERR(w, "ERR bad capacity", A("BF.RESERVE"), A("e"), A("0.01"), bad[i]);
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("e"), A("CAPACITY"), A("0"),
               A("ITEMS"), A("k"));
    EXPECT_ERR(w, "Bad capacity", A("BF.INSERT"), A("e"), A("CAPACITY"), A("x"), A("ITEMS"),
               A("k"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* max-memory 2mb: a filter that cannot fit is refused before anything is
 * allocated (the segment does not grow), the allocator still works after. */
START_TEST(test_badinput_reserve_over_max_memory)
{
    const char *want = "ERR capacity too large: the filter does not fit in max-memory (2097152 "
                       "bytes)";
    const char *too_many_bits = "ERR capacity too large: a filter layer may have at most 2^40 "
                                "bits";
    state_t st;

    start("max-memory 2mb");
    seed();
    capture(&st);
    /* ~12 MB of bits: more than the whole reservation. */
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("big"), A("0.01"), A("10000000"));
    /* ~1.9 MB: within the reservation, more than is free. */
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("big"), A("0.01"), A("1600000"), A("NONSCALING"));
    /* More bits than any filter may have (RB_BLOOM_MAX_BITS). */
    EXPECT_ERR(w, too_many_bits, A("BF.RESERVE"), A("big"), A("0.01"), A("1000000000000000"));
    EXPECT_ERR(w, too_many_bits, A("BF.INSERT"), A("big"), A("CAPACITY"), A("1000000000000000"),
               A("ITEMS"), A("k"));
    EXPECT_ERR(w, "ERR out of memory for the filter (max-memory is 2097152 bytes)", A("BF.INSERT"),
               A("big"), A("CAPACITY"), A("10000000"), A("ITEMS"), A("k"));
    assert_no_filter("big", 3);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("BF.RESERVE"), A("small"), A("0.01"), A("1000"));
    EXPECT(w, "1", A("BF.ADD"), A("small"), A("k"));
}
END_TEST

START_TEST(test_badinput_reserve_existing_filter)
{
    rb_bloom_t *bf;
    state_t st;

    start(NULL);
    seed();
    ck_assert_int_eq(rb_bloom_open(rseg, "f", 1, &bf), RB_OK);
    capture(&st);
    EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), A("f"), A("0.001"), A("1000"));
    EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), A("f"), A("0.1"), A("50"), A("NONSCALING"));
    EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), A("f"), A("0.01"), A("10"), A("AGING"),
               A("5"));
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "1000", A("BF.INFO"), A("f"), A("CAPACITY"));
    /* The same filter (same secret): a handle opened before still finds its keys. */
    ck_assert_int_eq(rb_bloom_contains(bf, "k1", 2), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, "k2", 2), 1);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_badinput_max_filters_reached)
{
    const char *want = "ERR max number of filters reached (max-filters is 2)";
    state_t st;

    start("max-filters 2");
    seed();
    EXPECT(w, "OK", A("BF.RESERVE"), A("g"), A("0.01"), A("10"));
    capture(&st);
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("h"), A("0.01"), A("10"));
    EXPECT_ERR(w, want, A("BF.ADD"), A("h"), A("k"));
    EXPECT_ERR(w, want, A("BF.MADD"), A("h"), A("k"), A("l"));
    EXPECT_ERR(w, want, A("BF.INSERT"), A("h"), A("ITEMS"), A("k"));
    assert_no_filter("h", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* EXPANSION, NONSCALING and words BF.RESERVE does not know, answered as
 * RedisBloom 2.6 answers them (rebloom.c, BFReserve_RedisCommand):
 * EXPANSION below 1 and NONSCALING with EXPANSION (either order, even
 * EXPANSION 0) refused; the first EXPANSION counts; other words ignored
 * (its arity limit, 7 arguments, is in test_badinput_wrong_arity). */
START_TEST(test_badinput_reserve_options_as_redisbloom)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR expansion should be greater or equal to 1", A("BF.RESERVE"), A("e"),
               A("0.01"), A("100"), A("EXPANSION"), A("0"));
    EXPECT_ERR(w, "ERR expansion should be greater or equal to 1", A("BF.RESERVE"), A("e"),
               A("0.01"), A("100"), A("EXPANSION"), A("-1"));
    EXPECT_ERR(w, "Nonscaling filters cannot expand", A("BF.RESERVE"), A("e"), A("0.01"),
               A("100"), A("EXPANSION"), A("0"), A("NONSCALING"));
    EXPECT_ERR(w, "Nonscaling filters cannot expand", A("BF.RESERVE"), A("e"), A("0.01"),
               A("100"), A("NONSCALING"), A("EXPANSION"), A("0"));
    /* Ours: layers of at most 32768 times the previous capacity. */
    EXPECT_ERR(w, "ERR expansion should be at most 32768", A("BF.RESERVE"), A("e"), A("0.01"),
               A("100"), A("EXPANSION"), A("32769"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("BF.RESERVE"), A("u1"), A("0.01"), A("100"), A("FOO"));
    EXPECT(w, "2", A("BF.INFO"), A("u1"), A("EXPANSION"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("u2"), A("0.01"), A("100"), A("NONSCALING"), A("x"));
    EXPECT(w, "(nil)", A("BF.INFO"), A("u2"), A("EXPANSION"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("u3"), A("0.01"), A("100"), A("EXPANSION"), A("3"),
           A("EXPANSION"));
    EXPECT(w, "3", A("BF.INFO"), A("u3"), A("EXPANSION"));
}
END_TEST

/* BF.INSERT's options as RedisBloom 2.6 parses them (rebloom.c,
 * BFInsert_RedisCommand): ranges are checked once ITEMS is found, after
 * unknown words and malformed numbers; EXPANSION 0 is refused, the last
 * EXPANSION counts, NONSCALING with EXPANSION makes a non-scaling filter. */
START_TEST(test_badinput_insert_options_as_redisbloom)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("i"), A("EXPANSION"), A("0"),
               A("ITEMS"), A("a"));
    EXPECT_ERR(w, "Unknown argument received", A("BF.INSERT"), A("i"), A("CAPACITY"), A("0"),
               A("FOO"), A("ITEMS"), A("a"));
    EXPECT_ERR(w, "Bad expansion", A("BF.INSERT"), A("i"), A("ERROR"), A("2"), A("EXPANSION"),
               A("x"), A("ITEMS"), A("a"));
    assert_no_filter("i", 1);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "1", A("BF.INSERT"), A("i1"), A("EXPANSION"), A("0"), A("EXPANSION"), A("3"),
           A("ITEMS"), A("a"));
    EXPECT(w, "3", A("BF.INFO"), A("i1"), A("EXPANSION"));
    EXPECT(w, "1", A("BF.INSERT"), A("i2"), A("NONSCALING"), A("EXPANSION"), A("4"), A("ITEMS"),
           A("a"));
    EXPECT(w, "(nil)", A("BF.INFO"), A("i2"), A("EXPANSION"));
    EXPECT(w, "1", A("BF.INSERT"), A("i3"), A("EXPANSION"), A("4"), A("NONSCALING"), A("ITEMS"),
           A("a"));
    EXPECT(w, "(nil)", A("BF.INFO"), A("i3"), A("EXPANSION"));
}
END_TEST

/* Tiny error rates: 1e-8 and 1e-12 work in the default (blocked) layout;
 * a rate it cannot reach (a layer would need more than 4096 bits per key:
 * below ~1.8e-25, and a scaling filter's first layer has p/2) is refused
 * naming that cause, and works in LAYOUT standard. */
START_TEST(test_badinput_reserve_tiny_error_rates)
{
    const char *want = "ERR error rate too small for LAYOUT blocked: its layers would need more "
                       "than 4096 bits per key; use LAYOUT standard";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("x"), A("1e-30"), A("1000"));
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("x"), A("3e-25"), A("1000"));
    EXPECT_ERR(w, want, A("BF.INSERT"), A("x"), A("ERROR"), A("1e-30"), A("ITEMS"), A("a"));
    assert_no_filter("x", 1);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("BF.RESERVE"), A("t8"), A("1e-8"), A("1000"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("t12"), A("1e-12"), A("1000"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("t25"), A("3e-25"), A("1000"), A("NONSCALING"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("t30"), A("1e-30"), A("1000"), A("LAYOUT"), A("standard"));
    EXPECT(w, "1\n1\n0", A("BF.MADD"), A("t12"), A("k1"), A("k2"), A("k1"));
    EXPECT(w, "1\n0", A("BF.MEXISTS"), A("t12"), A("k2"), A("k3"));
    EXPECT(w, "1", A("BF.ADD"), A("t30"), A("k1"));
}
END_TEST

/* Adds keys tag-0, tag-1, ... to filter `name` in batches of 1000 until an
 * add fails (at most `max` keys); returns the error (RB_EREPLY, the reply in
 * rb_conn_error(w)), or 0 if none did. */
static int add_until_error(const char *name, const char *tag, unsigned long max)
{
    static char buf[1000][48];
    rb_key_t k[1000];

    for (unsigned long i = 0; i < max; i += 1000) {
        int64_t rc;
        for (size_t j = 0; j < 1000; j++) {
            k[j].ptr = buf[j];
            k[j].len = (size_t)snprintf(buf[j], sizeof(buf[j]), "%s-%lu", tag, i + j);
        }
        if ((rc = rb_conn_bf_add_many(w, name, strlen(name), k, 1000, NULL)) < 0)
            return (int)rc;
    }
    return 0;
}

/* A key `name` does not hold (so adding it must make it grow), in buf. */
static const char *absent_key(const char *name, char *buf, size_t cap)
{
    rb_bloom_t *bf;

    ck_assert_int_eq(rb_bloom_open(rseg, name, strlen(name), &bf), RB_OK);
    for (unsigned long i = 0; rb_test_key(buf, cap, "absent", i), rb_bloom_contains(bf, buf,
                                                                       strlen(buf)) != 0; i++)
        ;
    rb_bloom_close(bf);
    return buf;
}

/* max-memory 4mb: a scaling filter of capacity 1 keeps taking keys past
 * 17 layers (131,071 keys, where its layers' error rate passes 4e-8) until
 * the reservation is used up, and then says so; the failed add changes
 * nothing. */
START_TEST(test_badinput_scaling_filter_grows_until_max_memory)
{
    const char *want = "ERR out of memory for the filter (max-memory is 4194304 bytes)";
    char key[160], card[32], layers[32];
    int rc;
    state_t st;

    start("max-memory 4mb");
    EXPECT(w, "OK", A("BF.RESERVE"), A("deep"), A("0.01"), A("1"));
    ck_assert_int_eq(add_until_error("deep", "k", 10000000), RB_EREPLY);
    ck_assert_str_eq(rb_conn_error(w), want);
    snprintf(card, sizeof(card), "%s", rbd_cmd(w, &rc, "BF.CARD", "deep", (const char *)NULL));
    snprintf(layers, sizeof(layers), "%s",
             rbd_cmd(w, &rc, "BF.INFO", "deep", "FILTERS", (const char *)NULL));
    printf("max-memory 4mb: capacity 1, expansion 2 took %s keys in %s layers, then: %s\n", card,
           layers, want);
    ck_assert_int_gt(atol(card), 131072);
    ck_assert_int_gt(atol(layers), 17);
    capture(&st);
    EXPECT_ERR(w, want, A("BF.ADD"), A("deep"), B(absent_key("deep", key, sizeof(key)),
                                                  strlen(key)));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* The limits a scaling filter meets before memory, each named: EXPANSION 1
 * reaches 32 layers; a layer the blocked layout cannot make (p = 6e-25:
 * the first layer has 3e-25, the second would have 1.5e-25). */
START_TEST(test_badinput_scaling_filter_limits)
{
    char key[160];
    state_t st;

    start(NULL);
    EXPECT(w, "OK", A("BF.RESERVE"), A("flat"), A("0.01"), A("10"), A("EXPANSION"), A("1"));
    ck_assert_int_eq(add_until_error("flat", "k", 100000), RB_EREPLY);
    ck_assert_str_eq(rb_conn_error(w), "ERR filter cannot grow: it has 32 layers, the most a "
                     "filter may have; reserve it with a larger capacity or EXPANSION");
    EXPECT(w, "32", A("BF.INFO"), A("flat"), A("FILTERS"));
    EXPECT(w, "320", A("BF.CARD"), A("flat"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("fine"), A("6e-25"), A("10"), A("EXPANSION"), A("1"));
    ck_assert_int_eq(add_until_error("fine", "k", 100000), RB_EREPLY);
    ck_assert_str_eq(rb_conn_error(w), "ERR filter cannot grow: its next layer's error rate "
                     "would need more than 4096 bits per key in LAYOUT blocked; reserve it with "
                     "LAYOUT standard");
    EXPECT(w, "1", A("BF.INFO"), A("fine"), A("FILTERS"));
    EXPECT(w, "10", A("BF.CARD"), A("fine"));
    capture(&st);
    EXPECT_ERR(w, "ERR filter cannot grow: it has 32 layers, the most a filter may have; "
               "reserve it with a larger capacity or EXPANSION", A("BF.ADD"), A("flat"),
               B(absent_key("flat", key, sizeof(key)), strlen(key)));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* ---- unknown filters ------------------------------------------------------------ */

START_TEST(test_badinput_insert_nocreate_unknown_filter)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR not found", A("BF.INSERT"), A("missing"), A("NOCREATE"), A("ITEMS"),
               A("k"));
    EXPECT_ERR(w, "ERR not found", A("BF.INSERT"), A("missing"), A("CAPACITY"), A("10"),
               A("NOCREATE"), A("ITEMS"), A("k"), A("l"));
    assert_no_filter("missing", 7);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* RedisBloom's answers for a filter that does not exist; none creates it. */
START_TEST(test_badinput_reads_of_unknown_filter)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT(w, "0", A("BF.EXISTS"), A("missing"), A("k1"));
    EXPECT(w, "0\n0", A("BF.MEXISTS"), A("missing"), A("k1"), A("k2"));
    EXPECT(w, "0", A("BF.CARD"), A("missing"));
    EXPECT_ERR(w, "ERR not found", A("BF.INFO"), A("missing"));
    EXPECT_ERR(w, "ERR not found", A("BF.INFO"), A("missing"), A("CAPACITY"));
    EXPECT_ERR(w, "ERR not found", A("BF.RESET"), A("missing"));
    assert_no_filter("missing", 7);
    ASSERT_UNCHANGED(&st);
}
END_TEST

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
    ck_assert_int_eq(info_num(w, "stats", "protocol_errors"), 5);
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
    ck_assert_int_eq(info_num(w, "stats", "protocol_errors"), 0);
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
    t0 = now_ms();
    raw_send(fd, head, sizeof(head) - 1);
    raw_read(fd, buf, sizeof(buf), 0, 3000, &closed);
    ms = now_ms() - t0;
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
    ck_assert_int_eq(info_num(w, "stats", "protocol_errors"), 0);
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
        { "ring.nodes", { A("RING.NODES"), A("x") }, 2 },
        { "ring.info", { A("RING.INFO"), A("x") }, 2 },
        { "ping", { A("PING"), A("a"), A("b") }, 3 },
        { "ping", { A("PiNg"), A("a"), A("b") }, 3 },
        { "echo", { A("ECHO") }, 1 },
        { "save", { A("SAVE"), A("x") }, 2 },
        { "shutdown", { A("SHUTDOWN"), A("NOSAVE"), A("x") }, 3 },
        { "config", { A("CONFIG") }, 1 },
        { "config|get", { A("CONFIG"), A("GET") }, 2 },
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

/* ---- connections ----------------------------------------------------------------- */

/* Waits (<= ms) for the daemon to close fd, which must get no reply,
 * while w sends a PING every 100 ms.  Returns the ms until it closed, 0 if
 * it did not. */
static uint64_t talk_until_closed(int fd, uint64_t t0, int ms)
{
    uint64_t closed_at = 0;
    char buf[64];
    int closed;

    while (now_ms() - t0 < (uint64_t)ms && closed_at == 0) {
        raw_read(fd, buf, sizeof(buf), 0, 100, &closed);
        ck_assert_str_eq(buf, "");      /* closed without a word, as Redis does */
        if (closed)
            closed_at = now_ms();
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
    t0 = now_ms();
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
    ck_assert_int_eq(info_num(w, "stats", "client_timeouts"), 1);
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
    t0 = now_ms();
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
    ck_assert_int_eq(info_num(w, "stats", "protocol_errors"), 0);
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
    ck_assert_int_eq(info_num(w, "clients", "rejected_connections"), 1);
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
            snprintf(want, sizeof(want), "NOPERM this user (uid 65534) has no permissions to "
                     "run the '%s' command", writes[i].cmd);
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
    ck_assert_int_eq(info_num(w, "stats", "denied_commands"), (long long)NARGS(writes));
    assert_no_filter("new", 3);
    ASSERT_UNCHANGED(&st);
    munmap(msg, 4096);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("badinput",
                        RB_TCASE("rows", 20, NULL, teardown,
                                 test_badinput_empty_key,
                                 test_badinput_empty_names,
                                 test_badinput_key_at_max_key_bytes_round_trips,
                                 test_badinput_key_over_max_key_bytes_refused,
                                 test_badinput_binary_keys_round_trip,
                                 test_badinput_binary_filter_names_round_trip,
                                 test_badinput_binary_node_names_round_trip,
                                 test_badinput_node_name_too_long,
                                 test_badinput_duplicate_node,
                                 test_badinput_remove_unknown_node,
                                 test_badinput_bad_weights,
                                 test_badinput_ring_too_big_for_max_memory,
                                 test_badinput_ring_bad_mode_replicas_count,
                                 test_badinput_reserve_error_rate_out_of_range,
                                 test_badinput_reserve_error_rate_not_a_number,
                                 test_badinput_reserve_bad_capacity,
                                 test_badinput_reserve_over_max_memory,
                                 test_badinput_reserve_existing_filter,
                                 test_badinput_max_filters_reached,
                                 test_badinput_reserve_options_as_redisbloom,
                                 test_badinput_insert_options_as_redisbloom,
                                 test_badinput_reserve_tiny_error_rates,
                                 test_badinput_scaling_filter_grows_until_max_memory,
                                 test_badinput_scaling_filter_limits,
                                 test_badinput_insert_nocreate_unknown_filter,
                                 test_badinput_reads_of_unknown_filter,
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
                                 test_badinput_wrong_arity,
                                 test_badinput_idle_client_timed_out,
                                 test_badinput_stalled_half_request_timed_out,
                                 test_badinput_half_request_then_disconnect,
                                 test_badinput_max_clients,
                                 test_badinput_unauthorised_uid));
}
