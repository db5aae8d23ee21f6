/*
 * badinput.c - what the files of check_badinput share (see badinput.h): the
 * daemon a row runs against, its requests, raw sockets and figures, and
 * the state bad input must not change.
 */
#include <poll.h>

#include "badinput.h"

rbd_proc_t d;
rb_segment_t *rseg;
rb_conn_t *w;

void badinput_teardown(void)
{
    if (w != NULL)
        rb_conn_close(w);
    w = NULL;
    rb_segment_close(rseg);
    rseg = NULL;
    rbd_remove_all(&d);
}

/* A private daemon (extra: config lines), a reader and a watching client. */
void start(const char *extra)
{
    rbd_start(&d, extra);
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &rseg), RB_OK);
    w = rbd_connect(&d);
}

/* ---- commands with binary arguments ------------------------------------------ */

int run_args(rb_conn_t *c, char *buf, size_t cap, size_t n, const arg_t *a)
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
void expect_v(int line, rb_conn_t *c, const char *want, int is_err, size_t n,
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

/* ---- raw sockets ---------------------------------------------------------------- */

/* Sends everything it can; a peer that closed is not an error here. */
void raw_send(int fd, const void *data, size_t len)
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
size_t raw_read(int fd, char *buf, size_t cap, size_t want, int ms, int *closed)
{
    uint64_t end = rb_test_now_ms() + (uint64_t)ms;
    size_t got = 0;

    *closed = 0;
    while (got + 1 < cap && (want == 0 || got < want)) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        uint64_t now = rb_test_now_ms();
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
void expect_protocol_close(int line, const void *bytes, size_t len, const char *reply)
{
    char buf[1024];
    int closed, fd = rbd_raw_connect(&d);
    uint64_t t0 = rb_test_now_ms();

    raw_send(fd, bytes, len);
    raw_read(fd, buf, sizeof(buf), 0, 3000, &closed);
    ck_assert_msg(strcmp(buf, reply) == 0, "line %d: expected [%s], got [%s]", line, reply, buf);
    ck_assert_msg(closed, "line %d: the daemon kept the connection open", line);
    ck_assert_msg(rb_test_now_ms() - t0 < 2000, "line %d: closed only after %llu ms", line,
                  (unsigned long long)(rb_test_now_ms() - t0));
    close(fd);
}

/* ---- daemon figures ------------------------------------------------------------- */

/* Waits (<= 3 s) until the daemon counts n connected clients. */
void wait_clients(long long n)
{
    long long got = -1;

    for (int i = 0; i < 300 && (got = rbd_info_num(w, "clients", "connected_clients")) != n; i++)
        usleep(10000);
    ck_assert_msg(got == n, "connected_clients %lld, expected %lld", got, n);
}

/* ---- the state that bad input must not change -------------------------------- */

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

void capture(state_t *st)
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
    st->log_bytes = rbd_info_num(w, "persistence", "log_bytes");
    st->changes = rbd_info_num(w, "persistence", "rdb_changes_since_last_save");
}

/* The daemon lives, answers the client connected before and a new one. */
void assert_healthy(void)
{
    rb_conn_t *fresh;
    int status;

    ck_assert_msg(waitpid(d.pid, &status, WNOHANG) == 0, "ringbloomd died (status %d)", status);
    EXPECT(w, "PONG", A("PING"));
    fresh = rbd_connect(&d);
    EXPECT(fresh, "PONG", A("PING"));
    rb_conn_close(fresh);
}

void assert_unchanged_at(int line, const state_t *before)
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

/* Two nodes and a filter holding two keys: the state the rows try to damage. */
void seed(void)
{
    EXPECT(w, "OK", A("RING.ADD"), A("n1"));
    EXPECT(w, "OK", A("RING.ADD"), A("n2"), A("2"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("f"), A("0.001"), A("1000"));
    EXPECT(w, "1", A("BF.ADD"), A("f"), A("k1"));
    EXPECT(w, "1", A("BF.ADD"), A("f"), A("k2"));
}

void assert_no_filter(const char *name, size_t len)
{
    rb_bloom_t *bf;
    ck_assert_int_eq(rb_bloom_open(rseg, name, len, &bf), RB_ENOENT);
}
