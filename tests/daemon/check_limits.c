/*
 * check_limits.c - ringbloomd against clients that try to exhaust it: file
 * descriptors, reply buffers, partial requests, slow and idle clients, and
 * the connections kept for writers (server.c, bounds B1-B4).
 *
 * Each test runs a private daemon, provokes the condition as a careless or
 * hostile local client would, and asserts a bound on what the daemon spent
 * (CPU seconds from /proc/<pid>/stat, peak memory from VmHWM, log bytes)
 * with a margin that a daemon without the bound cannot meet, and that it
 * still serves a well-behaved client.  Every figure is printed to the log.
 */
#define _GNU_SOURCE   /* prlimit, POLLRDHUP */
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "rbd_test.h"

static rbd_proc_t d;

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* Reads what fd has to say within ms: 1 with the first line in buf, 0 if
 * it was closed without a line, -1 if nothing came. */
static int read_line(int fd, char *buf, size_t cap, int ms)
{
    size_t w = 0;
    uint64_t end = rb_test_now_ms() + (uint64_t)ms;

    buf[0] = '\0';
    while (w + 1 < cap) {
        struct pollfd p = { fd, POLLIN, 0 };
        uint64_t t = rb_test_now_ms();
        ssize_t n;
        if (t >= end || poll(&p, 1, (int)(end - t)) <= 0)
            return -1;
        n = read(fd, buf + w, 1);
        if (n <= 0)
            return w > 0 ? 1 : 0;
        w++;
        buf[w] = '\0';
        if (w >= 2 && buf[w - 2] == '\r' && buf[w - 1] == '\n') {
            buf[w - 2] = '\0';
            return 1;
        }
    }
    return 1;
}

/* Sends all of data on a blocking fd. */
static void send_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        ck_assert_int_gt(n, 0);
        p += n;
        len -= (size_t)n;
    }
}

/* Sends what fd takes of data within ms (a daemon applying backpressure
 * stops reading); returns the bytes sent. */
static size_t send_for(int fd, const char *data, size_t len, int ms)
{
    uint64_t end = rb_test_now_ms() + (uint64_t)ms;
    size_t off = 0;

    while (off < len && rb_test_now_ms() < end) {
        struct pollfd p = { fd, POLLOUT, 0 };
        ssize_t n;
        if (poll(&p, 1, 100) != 1)
            continue;
        n = send(fd, data + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && errno != EAGAIN)
            break;
    }
    return off;
}

/* Puts the ring in xxh3 mode with one point per node (cheap rebuilds) and
 * adds nodes "<prefix>-<i>-<suffix>", i = 0 .. n - 1, in one pipeline, so
 * the ring changes share one log fsync. */
static void ring_add_many(int n, const char *prefix, const char *suffix)
{
    static const char mode[] = "RING.MODE xxh3 1\r\n";
    char *buf = malloc((size_t)n * 320 + sizeof(mode)), line[256];
    int fd = rbd_raw_connect(&d);
    size_t w = sizeof(mode) - 1;

    ck_assert_ptr_nonnull(buf);
    memcpy(buf, mode, w);
    for (int i = 0; i < n; i++) {
        char name[256];
        int len = snprintf(name, sizeof(name), "%s-%05d-%s", prefix, i, suffix);
        w += (size_t)sprintf(buf + w, "*2\r\n$8\r\nRING.ADD\r\n$%d\r\n%s\r\n", len, name);
    }
    send_all(fd, buf, w);
    for (int i = 0; i <= n; i++) {
        ck_assert_int_eq(read_line(fd, line, sizeof(line), 10000), 1);
        ck_assert_str_eq(line, "+OK");
    }
    close(fd);
    free(buf);
}

/* Opens n raw connections, sends PING on each, and sorts what each got
 * within 3 s: PONG, a refusal naming max clients, or nothing (hanging). */
static void ping_many(int *fds, int n, int *pong, int *refused, int *hung)
{
    char line[256];

    *pong = *refused = *hung = 0;
    for (int i = 0; i < n; i++) {
        fds[i] = rbd_raw_connect(&d);
        /* The daemon may have refused and closed already: ignore EPIPE. */
        if (send(fds[i], "PING\r\n", 6, MSG_NOSIGNAL) < 0)
            continue;
    }
    for (int i = 0; i < n; i++) {
        int r = read_line(fds[i], line, sizeof(line), 3000);
        if (r == 1 && strcmp(line, "+PONG") == 0)
            (*pong)++;
        else if (r == 1 && strstr(line, "max number of clients reached") != NULL)
            (*refused)++;
        else if (r < 0)
            (*hung)++;
        else
            ck_abort_msg("client %d got [%s] (%d)", i, line, r);
    }
}

/* The daemon's CPU and log growth over `ms` of waiting with clients that
 * cannot be served; asserts it neither spins nor floods its log. */
static void assert_quiet(int ms, const char *what)
{
    long c0 = rbd_cpu_ms(d.pid), l0 = file_size(d.log), c1, l1;

    usleep((useconds_t)ms * 1000);
    c1 = rbd_cpu_ms(d.pid);
    l1 = file_size(d.log);
    printf("%s: the daemon used %ld ms of CPU and logged %ld bytes in %d ms\n", what, c1 - c0,
           l1 - l0, ms);
    ck_assert_msg(c1 - c0 < ms / 10, "%s: %ld ms of CPU in %d ms: a busy loop", what, c1 - c0,
                  ms);
    ck_assert_msg(l1 - l0 < 1024, "%s: %ld log bytes in %d ms", what, l1 - l0, ms);
}

/* B3: a descriptor limit too low for max-clients (1024) that cannot be
 * raised: the daemon lowers max-clients and says so once; the clients past
 * it are refused at once, none hangs, and the daemon neither spins nor
 * floods its log. */
START_TEST(test_limits_low_fd_limit_lowers_max_clients)
{
    enum { N = 100 };
    int fds[N], pong, refused, hung;
    rb_conn_t *c;

    rbd_prepare(&d, NULL);
    d.nofile_soft = d.nofile_hard = 64;
    rbd_launch(&d, NULL);
    ck_assert_int_eq(rbd_log_count(&d, "max-clients lowered to 32"), 1);
    ping_many(fds, N, &pong, &refused, &hung);
    printf("ulimit -n 64, %d clients: %d served, %d refused, %d left hanging\n", N, pong,
           refused, hung);
    ck_assert_int_eq(hung, 0);
    /* 32 places; rbd_launch's probe connection may not be gone yet. */
    ck_assert_int_le(pong, 32);
    ck_assert_int_ge(pong, 30);
    ck_assert_int_eq(pong + refused, N);
    assert_quiet(2000, "ulimit -n 64");
    for (int i = 0; i < N; i++)
        close(fds[i]);
    usleep(200000);
    c = rbd_connect(&d);
    rbd_expect(c, "PONG", "PING");
    rb_conn_close(c);
}
END_TEST

/* B3: a soft limit below what max-clients needs, under a hard limit that
 * allows it, is raised (as Redis does), and max-clients stays. */
START_TEST(test_limits_fd_soft_limit_raised_for_max_clients)
{
    char path[64], line[256];
    long soft = -1;
    FILE *f;

    rbd_prepare(&d, NULL);
    d.nofile_soft = 64;
    d.nofile_hard = 4096;
    rbd_launch(&d, NULL);
    snprintf(path, sizeof(path), "/proc/%d/limits", (int)d.pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "Max open files", 14) == 0)
            soft = strtol(line + 14, NULL, 10);
    fclose(f);
    printf("soft limit 64, hard 4096: the daemon runs with a soft limit of %ld\n", soft);
    ck_assert_int_eq(soft, 1024 + 32);
    ck_assert_int_eq(rbd_log_count(&d, "max-clients lowered"), 0);
}
END_TEST

/* B3: descriptors run out while the daemon runs (its limit lowered under
 * it, as by an administrator's prlimit): new clients are told on the spare
 * descriptor, none hangs, existing ones are served, no busy loop. */
START_TEST(test_limits_out_of_fds_at_runtime_refuses_without_spinning)
{
    enum { N = 60 };
    struct rlimit rl = { 40, 40 };
    int fds[N], pong, refused, hung;
    rb_conn_t *c;

    if (getuid() != 0) {
        printf("lowering another process's limit needs root; checks nothing as uid %u\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, &rl, NULL), 0);
    ping_many(fds, N, &pong, &refused, &hung);
    printf("limit lowered to 40 at runtime, %d clients: %d served, %d refused, %d hanging\n",
           N, pong, refused, hung);
    ck_assert_int_eq(hung, 0);
    ck_assert_int_gt(pong, 10);
    ck_assert_int_gt(refused, 0);
    assert_quiet(2000, "out of descriptors");
    /* A client connected before is still served meanwhile. */
    rbd_expect(c, "PONG", "PING");
    ck_assert_int_ge(rbd_log_count(&d, "refusing new clients"), 1);
    ck_assert_int_le(rbd_log_count(&d, "refusing new clients"), 2);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    rb_conn_close(c);
}
END_TEST

/* Once the daemon has done what it will do (its CPU time stands still for
 * 300 ms), checks that client c is served and returns how far the
 * daemon's peak RSS rose above rss0 (KiB). */
static long settled_growth(rb_conn_t *c, long rss0)
{
    long c0;

    do {
        c0 = rbd_cpu_ms(d.pid);
        usleep(300000);
    } while (rbd_cpu_ms(d.pid) != c0);
    rbd_expect(c, "PONG", "PING");
    return rbd_proc_kb(d.pid, "VmHWM:") - rss0;
}

/* Bytes of one reply to `cmd` (an inline command) from a fresh client. */
static size_t reply_bytes(const char *cmd, char **copy)
{
    int fd = rbd_raw_connect(&d);
    char *buf = malloc(1 << 22);
    size_t w = 0;

    ck_assert_ptr_nonnull(buf);
    send_all(fd, cmd, strlen(cmd));
    shutdown(fd, SHUT_WR);
    for (;;) {
        ssize_t n = read(fd, buf + w, (1 << 22) - w);
        if (n <= 0)
            break;
        w += (size_t)n;
    }
    close(fd);
    *copy = buf;
    return w;
}

/* B1: a client that pipelines requests with large replies and never reads
 * them costs the daemon at most about client-output-soft-limit (8 MiB)
 * plus a reply: 48 KB of RING.NODES on a 300-node ring would be 140 MB of
 * replies.  Others are served meanwhile, and when the client reads at last
 * it gets every reply, whole and in order. */
START_TEST(test_limits_replies_bounded_for_a_client_that_never_reads)
{
    enum { NODES = 300, CMDS = 4000 };
    static const char cmd[] = "RING.NODES\r\n";
    char *pipeline = malloc(CMDS * (sizeof(cmd) - 1)), *one, *got;
    size_t one_len, total = 0, want;
    long rss0, grown;
    rb_conn_t *c;
    int fd;

    ck_assert_ptr_nonnull(pipeline);
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ring_add_many(NODES, "cache", "datacenter-east.example.internal:11211#"
                  "0000000000000000000000000000000000000000000000000000000");
    one_len = reply_bytes(cmd, &one);
    want = (size_t)CMDS * one_len;
    for (int i = 0; i < CMDS; i++)
        memcpy(pipeline + i * (sizeof(cmd) - 1), cmd, sizeof(cmd) - 1);
    rss0 = rbd_proc_kb(d.pid, "VmRSS:");
    fd = rbd_raw_connect(&d);
    send_all(fd, pipeline, CMDS * (sizeof(cmd) - 1));
    grown = settled_growth(c, rss0);
    printf("%d x RING.NODES (%zu-byte replies, %zu MB in all) never read: peak RSS %ld KiB "
           "over the %ld KiB before\n", CMDS, one_len, want >> 20, grown, rss0);
    ck_assert_msg(grown < 40 * 1024, "the daemon grew by %ld KiB", grown);
    /* Reading now brings every reply. */
    got = malloc(1 << 20);
    ck_assert_ptr_nonnull(got);
    while (total < want) {
        struct pollfd p = { fd, POLLIN, 0 };
        ssize_t n;
        ck_assert_msg(poll(&p, 1, 5000) == 1, "replies stopped after %zu of %zu bytes", total,
                      want);
        n = read(fd, got, 1 << 20);
        ck_assert_int_gt(n, 0);
        /* Each reply is the same bytes: check them where they fall. */
        for (size_t k = 0, at = total % one_len; k < (size_t)n; at = 0) {
            size_t m = (size_t)n - k < one_len - at ? (size_t)n - k : one_len - at;
            ck_assert_msg(memcmp(got + k, one + at, m) == 0, "reply bytes differ near byte %zu",
                          total + k);
            k += m;
        }
        total += (size_t)n;
    }
    printf("then read all %d replies (%zu bytes), in order\n", CMDS, total);
    close(fd);
    free(got);
    free(one);
    free(pipeline);
    rb_conn_close(c);
}
END_TEST

/* B1: 1 MiB of INFO requests from a client that never reads, taken by
 * the daemon in reads of up to 256 KB (its input buffer, grown by an
 * earlier large request, is kept): bounded the same way, although each
 * read holds ~43,000 requests whose replies (~1.5 KB each) would be 65 MB. */
START_TEST(test_limits_info_flood_bounded)
{
    enum { BYTES = 1 << 20, BIG = 60000 };
    char *pipeline = malloc(BYTES), *big = malloc(4 * (BIG + 16) + 64), line[64];
    int sndbuf = 4 << 20, opt = getuid() == 0 ? SO_SNDBUFFORCE : SO_SNDBUF;
    size_t sent, w;
    long rss0, grown;
    rb_conn_t *c;
    int fd;

    ck_assert_ptr_nonnull(pipeline);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i + 6 <= BYTES; i += 6)
        memcpy(pipeline + i, "INFO\r\n", 6);
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    fd = rbd_raw_connect(&d);
    w = (size_t)sprintf(big, "*6\r\n$7\r\nBF.MADD\r\n$1\r\nf\r\n");
    for (int k = 0; k < 4; k++) {
        w += (size_t)sprintf(big + w, "$%d\r\n", BIG);
        memset(big + w, 'a' + k, BIG);
        memcpy(big + w + BIG, "\r\n", 2);
        w += BIG + 2;
    }
    send_all(fd, big, w);
    ck_assert_int_eq(read_line(fd, line, sizeof(line), 5000), 1);
    ck_assert_str_eq(line, "*4");
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, opt, &sndbuf, sizeof(sndbuf)), 0);
    usleep(100000);
    rss0 = rbd_proc_kb(d.pid, "VmRSS:");
    /* The daemon stops reading once the replies pass the soft limit, so
     * only part of the pipeline may go in. */
    sent = send_for(fd, pipeline, BYTES / 6 * 6, 3000);
    grown = settled_growth(c, rss0);
    printf("1 MiB of INFO never read (%zu bytes of it taken): peak RSS %ld KiB over the %ld "
           "KiB before\n", sent, grown, rss0);
    ck_assert_msg(grown < 40 * 1024, "the daemon grew by %ld KiB", grown);
    close(fd);
    free(big);
    free(pipeline);
    rb_conn_close(c);
}
END_TEST

/* B1: one reply that takes a client past client-output-hard-limit closes
 * it with an error saying so; the daemon goes on. */
START_TEST(test_limits_reply_past_hard_limit_closes_the_client)
{
    char line[256], *one;
    rb_conn_t *c;
    int fd, r;

    rbd_start(&d, "client-output-soft-limit 64kb\nclient-output-hard-limit 128kb");
    c = rbd_connect(&d);
    /* RING.NODES of 2,000 nodes of 100-byte names: a ~240 KB reply. */
    ring_add_many(2000, "node", "0000000000000000000000000000000000000000000000000000000000"
                  "000000000000000000000000000000");
    fd = rbd_raw_connect(&d);
    send_all(fd, "RING.NODES\r\n", 12);
    r = read_line(fd, line, sizeof(line), 3000);
    printf("RING.NODES of 2,000 nodes, client-output-hard-limit 128kb: [%s]\n", line);
    ck_assert_int_eq(r, 1);
    ck_assert_str_eq(line, "-ERR closed: unsent replies passed client-output-hard-limit");
    ck_assert_int_eq(read_line(fd, line, sizeof(line), 3000), 0);
    close(fd);
    ck_assert_int_eq(rbd_log_count(&d, "passed client-output-hard-limit"), 1);
    /* A reply within the limit is fine, and the daemon goes on. */
    ck_assert_uint_gt(reply_bytes("RING.GET k\r\n", &one), 0);
    free(one);
    rbd_expect(c, "PONG", "PING");
    rb_conn_close(c);
}
END_TEST

/* B2: eight clients each send 59 MB of a BF.MADD that never ends.  The
 * daemon holds at most max-client-memory (128 MiB here) of them: the
 * clients holding the most are closed, with an error, and a well-behaved
 * client is served throughout. */
START_TEST(test_limits_partial_requests_bounded_in_total)
{
    enum { CLIENTS = 8, KEY = 60000, KEYS = 990 };
    static const char head[] = "*1002\r\n$7\r\nBF.MADD\r\n$1\r\nf\r\n";
    char *key = malloc(KEY + 32);
    size_t keylen, sent[CLIENTS] = { 0 }, want = sizeof(head) - 1;
    int fds[CLIENTS], done[CLIENTS] = { 0 }, closed = 0;
    long rss0, hwm;
    uint64_t end;
    rb_conn_t *c;

    ck_assert_ptr_nonnull(key);
    keylen = (size_t)snprintf(key, 32, "$%d\r\n", KEY);
    memset(key + keylen, 'k', KEY);
    memcpy(key + keylen + KEY, "\r\n", 2);
    keylen += KEY + 2;
    want += (size_t)KEYS * keylen;
    rbd_start(&d, "max-client-memory 128mb");
    c = rbd_connect(&d);
    rss0 = rbd_proc_kb(d.pid, "VmRSS:");
    for (int i = 0; i < CLIENTS; i++) {
        fds[i] = rbd_raw_connect(&d);
        ck_assert_int_eq(fcntl(fds[i], F_SETFL, O_NONBLOCK), 0);
        ck_assert_int_eq(send(fds[i], head, sizeof(head) - 1, MSG_NOSIGNAL),
                         (ssize_t)sizeof(head) - 1);
        sent[i] = sizeof(head) - 1;
    }
    /* Round-robin until every client sent its 59 MB or was closed. */
    end = rb_test_now_ms() + 60000;
    while (rb_test_now_ms() < end) {
        int busy = 0;
        for (int i = 0; i < CLIENTS; i++) {
            size_t at;
            ssize_t n;
            if (done[i] || sent[i] >= want)
                continue;
            busy = 1;
            at = (sent[i] - (sizeof(head) - 1)) % keylen;
            n = send(fds[i], key + at, keylen - at, MSG_NOSIGNAL);
            if (n > 0)
                sent[i] += (size_t)n;
            else if (n < 0 && errno != EAGAIN) {
                done[i] = 1;
                closed++;
            }
        }
        if (!busy)
            break;
        usleep(200);
    }
    rbd_expect(c, "1", "BF.ADD", "g", "still served");
    hwm = rbd_proc_kb(d.pid, "VmHWM:");
    printf("%d clients x %zu MB of unfinished requests: %d closed, peak RSS %ld KiB over the "
           "%ld KiB before\n", CLIENTS, want >> 20, closed, hwm - rss0, rss0);
    ck_assert_int_ge(closed, CLIENTS - 2);
    /* Each closed client was told why before its socket closed. */
    for (int i = 0; i < CLIENTS; i++) {
        char line[256];
        if (done[i]) {
            ck_assert_int_eq(read_line(fds[i], line, sizeof(line), 1000), 1);
            ck_assert_str_eq(line, "-ERR closed: all clients' buffers exceed max-client-memory");
        }
    }
    ck_assert_msg(hwm - rss0 < 200 * 1024, "the daemon grew by %ld KiB", hwm - rss0);
    ck_assert_int_ge(rbd_log_count(&d, "max-client-memory"), 1);
    ck_assert_int_le(rbd_log_count(&d, "max-client-memory"), 2);
    for (int i = 0; i < CLIENTS; i++)
        close(fds[i]);
    free(key);
    rb_conn_close(c);
}
END_TEST

/* True once fd is closed by the daemon (read returns 0 or an error). */
static int closed_by_peer(int fd)
{
    char buf[65536];

    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN))
            return 1;
        if (n < 0)
            return 0;
    }
}

/* timeout counts from the last complete request (or reply byte taken): a
 * client sending one byte of a request every 200 ms, and one that never
 * reads its replies, are both closed after `timeout`, while a client that
 * sends complete requests stays. */
START_TEST(test_limits_timeout_counts_complete_requests)
{
    static const char head[] = "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$100000\r\n";
    uint64_t t0 = 0, t_conn, slow_ms = 0, deaf_ms = 0;
    rb_conn_t *c;
    int slow, deaf;

    rbd_start(&d, "timeout 1");
    c = rbd_connect(&d);
    /* The trickling client's clock starts at its accept (an incomplete
     * request does not restart it), so its time is counted from before
     * its connect: under ASan the 1000 INFOs below took over 100 ms, and
     * a time counted from after them came out at 889 ms. */
    t_conn = rb_test_now_ms();
    slow = rbd_raw_connect(&d);
    deaf = rbd_raw_connect(&d);
    send_all(slow, head, sizeof(head) - 1);
    /* ~1.5 MB of INFO replies that the client never reads. */
    for (int i = 0; i < 1000; i++)
        send_all(deaf, "INFO\r\n", 6);
    t0 = rb_test_now_ms();
    while (rb_test_now_ms() - t0 < 4000 && (slow_ms == 0 || deaf_ms == 0)) {
        if (slow_ms == 0 && send(slow, "x", 1, MSG_NOSIGNAL) < 0)
            slow_ms = rb_test_now_ms() - t_conn;
        if (slow_ms == 0 && closed_by_peer(slow))
            slow_ms = rb_test_now_ms() - t_conn;
        if (deaf_ms == 0) {
            struct pollfd p = { deaf, POLLRDHUP, 0 };
            if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                deaf_ms = rb_test_now_ms() - t0;
        }
        rbd_expect(c, "PONG", "PING");
        usleep(200000);
    }
    printf("timeout 1: a client trickling a request closed after %llu ms, one not reading its "
           "replies after %llu ms\n", (unsigned long long)slow_ms, (unsigned long long)deaf_ms);
    ck_assert_msg(slow_ms != 0, "the trickling client was not closed in 4 s");
    ck_assert_msg(deaf_ms != 0, "the client not reading its replies was not closed in 4 s");
    ck_assert_uint_ge(slow_ms, 900);
    ck_assert_uint_ge(deaf_ms, 900);
    rbd_expect(c, "0", "BF.CARD", "f");   /* the trickled request never ran */
    close(slow);
    close(deaf);
    rb_conn_close(c);
}
END_TEST

/* B4: idle connections of a user who may not write fill max-clients but
 * the last reserved-writer-clients: the daemon's own user still gets in and
 * changes the ring. */
START_TEST(test_limits_writers_keep_reserved_connections)
{
    int pipefd[2], status;
    char counts[64] = "";
    rb_conn_t *c;
    pid_t pid;

    if (getuid() != 0) {
        printf("the writers' reserve test needs root to switch uid; checks nothing as uid %u\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, "max-clients 20\nreserved-writer-clients 4");
    usleep(200000);   /* rbd_start's probe connection is gone */
    ck_assert_int_eq(pipe(pipefd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fds[24], pong, refused, hung;
        char msg[64];
        close(pipefd[0]);
        if (rb_test_become_other() != 0)
            _exit(10);
        ping_many(fds, 24, &pong, &refused, &hung);
        snprintf(msg, sizeof(msg), "%d %d %d\n", pong, refused, hung);
        if (write(pipefd[1], msg, strlen(msg)) < 0)
            _exit(11);
        pause();   /* holds the connections until killed */
        _exit(0);
    }
    close(pipefd[1]);
    ck_assert_int_gt(read(pipefd[0], counts, sizeof(counts) - 1), 0);
    close(pipefd[0]);
    printf("max-clients 20, 4 reserved: uid %d connecting 24 times got (served refused "
           "hanging) %s", RB_TEST_OTHER_UID, counts);
    ck_assert_str_eq(counts, "16 8 0\n");
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_ring_add(c, "node-a", 6, 1), RB_OK);
    rbd_expect(c, "node-a\n1", "RING.NODES");
    rb_conn_close(c);
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

int main(void)
{
    const char *asan = getenv("ASAN_OPTIONS");

    if (asan != NULL) {
        /* Under AddressSanitizer (.ci/run's build-asan sets ASAN_OPTIONS)
         * the daemon's freed buffers would wait in ASan's quarantine (256
         * MB) and count as its RSS: these tests measure the daemon's
         * memory, so its daemons run without the quarantine (the other
         * suites keep it). */
        static char opts[1024];
        snprintf(opts, sizeof(opts), "%s:quarantine_size_mb=0", asan);
        setenv("ASAN_OPTIONS", opts, 1);
    }
    signal(SIGPIPE, SIG_IGN);
    return RB_TEST_MAIN("limits",
                        RB_TCASE("file descriptors", 240, NULL, rbd_teardown,
                                 test_limits_low_fd_limit_lowers_max_clients,
                                 test_limits_fd_soft_limit_raised_for_max_clients,
                                 test_limits_out_of_fds_at_runtime_refuses_without_spinning),
                        RB_TCASE("replies", 240, NULL, rbd_teardown,
                                 test_limits_replies_bounded_for_a_client_that_never_reads,
                                 test_limits_info_flood_bounded,
                                 test_limits_reply_past_hard_limit_closes_the_client),
                        RB_TCASE("requests", 240, NULL, rbd_teardown,
                                 test_limits_partial_requests_bounded_in_total,
                                 test_limits_timeout_counts_complete_requests),
                        RB_TCASE("writers", 240, NULL, rbd_teardown,
                                 test_limits_writers_keep_reserved_connections));
}
