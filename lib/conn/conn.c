/*
 * conn.c - the write path: a small blocking RESP2 client for ringbloomd.
 *
 * What: connect to the daemon's Unix socket, send commands formatted by
 * hiredis (redisFormatCommandArgv, the library the project links for its
 * replies; the daemon's replies and the nginx module's admits keep the
 * project's own encoder, resp_enc.c), read replies with hiredis's reader
 * (resp_read.c: bounded to MAX_REPLY bytes of one element and
 * MAX_ELEMENTS elements).  The socket and its I/O stay here rather than
 * in a redisContext: sends with MSG_NOSIGNAL (a library must not raise
 * SIGPIPE in its caller when the daemon goes), a CLOEXEC socket, errno
 * kept for rb_conn_open's search, and the reply bound checked between two
 * receives.  Why here: every blocking writer (the CLI, applications, the
 * examples) needs the same few mutations and the same error mapping;
 * reads never come here (they use the segment).  The nginx module does
 * not use it: its admits are non-blocking, on nginx's event loop.
 * Workload: bulk loads of millions of keys, so BF.MADD (or BF.INSERT)
 * batches are pipelined with several in flight to hide the round trip;
 * hiredis formats a key slower than a hand-written encoder would, which
 * the daemon's own work per key hides (`make bench`, section f;
 * docs/performance.md).
 *
 * Errors: a reply "-NOPERM ..." maps to RB_EPERM, any other error reply to
 * RB_EREPLY (text in rb_conn_error), a broken socket to RB_EDAEMON and one
 * on which the daemon did not answer (or take a request) within the
 * timeout to RB_ETIMEDOUT (the connection is then unusable either way; a
 * timed-out change may have been applied), a reply that does not parse to
 * RB_EPROTO, a request hiredis cannot format (2 GiB or more) to RB_ERANGE.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <string.h>
#include <unistd.h>

#include "resp_read.h"
#include "ringbloom.h"

#define BATCH_KEYS   1000u     /* keys per BF.MADD / BF.INSERT */
#define BATCH_HEAD   16u       /* a batch's arguments before its keys, at most */
#define WINDOW       8u        /* batches in flight */
#define MAX_REPLY    (64u << 20) /* bytes of one line or bulk string */
#define MAX_ELEMENTS (MAX_REPLY / 16) /* of one reply: hiredis builds ~56 bytes each */

struct rb_conn {
    int fd;
    int broken;
    rbi_reader_t *rd;          /* hiredis's reader, bounded (resp_read.h) */
    long long ints[BATCH_KEYS]; /* a batch reply's answers (rbi_reader_ints) */
    char *q[WINDOW];           /* requests formatted by hiredis, not yet sent */
    size_t qlen[WINDOW], nq;
    const char *argv[BATCH_HEAD + BATCH_KEYS]; /* a batch's arguments */
    size_t argl[BATCH_HEAD + BATCH_KEYS];
    char error[512];
};

/* Connects to socket_path: RB_OK, or RB_EDAEMON with errno. */
static int conn_connect(const char *socket_path, unsigned timeout_ms, rb_conn_t **out)
{
    struct sockaddr_un sa;
    struct timeval tv;
    rb_conn_t *c;

    if (strlen(socket_path) >= sizeof(sa.sun_path))
        return RB_EINVAL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return RB_ENOMEM;
    if ((c->rd = rbi_reader_new(MAX_ELEMENTS)) == NULL) {
        free(c);
        return RB_ENOMEM;
    }
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        rbi_reader_free(c->rd);
        free(c);
        return RB_EDAEMON;
    }
    if (timeout_ms == 0)
        timeout_ms = 10000;
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, socket_path);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int e = errno;
        close(c->fd);
        rbi_reader_free(c->rd);
        free(c);
        errno = e;
        return RB_EDAEMON;
    }
    *out = c;
    return RB_OK;
}

int rb_conn_open(const char *instance, const char *socket_path, unsigned timeout_ms,
                 rb_conn_t **out)
{
    rb_paths_t paths[2];
    int rc = RB_OK;

    if (out == NULL)
        return RB_EINVAL;
    if (socket_path != NULL)
        return conn_connect(socket_path, timeout_ms, out);
    instance = instance != NULL ? instance : "default";
    if ((rc = rb_default_paths(instance, &paths[0])) != RB_OK ||
        (rc = rb_system_paths(instance, &paths[1])) != RB_OK)
        return rc;
    for (int i = 0; i < 2; i++) {
        if (i == 1 && strcmp(paths[0].socket, paths[1].socket) == 0)
            break;
        /* The default may be /tmp/ringbloom-<uid>, which anyone could have
         * made first: a directory that fails the rule stops the search (it
         * is reported, not passed over).  A missing directory or socket, or
         * nobody listening, is only no daemon there: the next is tried. */
        rc = rb_daemon_uid(NULL, paths[i].socket, (uid_t)-1, NULL, NULL, 0);
        if (rc == RB_ENOENT) {
            errno = ENOENT;
            rc = RB_EDAEMON;
            continue;
        }
        if (rc != RB_OK)
            return rc;
        rc = conn_connect(paths[i].socket, timeout_ms, out);
        if (rc != RB_EDAEMON || (errno != ENOENT && errno != ECONNREFUSED))
            return rc;
    }
    return rc;
}

/* Drops the requests not sent. */
static void qdrop(rb_conn_t *c)
{
    for (size_t i = 0; i < c->nq; i++)
        redisFreeCommand(c->q[i]);
    c->nq = 0;
}

void rb_conn_close(rb_conn_t *c)
{
    if (c == NULL)
        return;
    close(c->fd);
    rbi_reader_free(c->rd);
    qdrop(c);
    free(c);
}

const char *rb_conn_error(const rb_conn_t *c)
{
    return c ? c->error : "";
}

/* ---- sending ------------------------------------------------------------- */

/* Queues a request of argc arguments (argv / argl), formatted by hiredis
 * (rbi_request_format); at most WINDOW wait.  RB_ERANGE for one of 2 GiB
 * or more (refused before a byte is read), RB_ENOMEM. */
static int queue(rb_conn_t *c, size_t argc, const char *const *argv, const size_t *argl)
{
    long len = rbi_request_format(&c->q[c->nq], argc, argv, argl);

    if (len < 0)
        return len == -1 ? RB_ERANGE : RB_ENOMEM;
    c->qlen[c->nq++] = (size_t)len;
    return RB_OK;
}

/* The code of a failed send or receive (errno set by it); breaks c. */
static int io_failed(rb_conn_t *c)
{
    c->broken = 1;
    /* SO_RCVTIMEO / SO_SNDTIMEO ran out. */
    return errno == EAGAIN || errno == EWOULDBLOCK ? RB_ETIMEDOUT : RB_EDAEMON;
}

/* Sends the queued requests, in order. */
static int wflush(rb_conn_t *c)
{
    int rc = c->broken ? RB_EDAEMON : RB_OK;

    for (size_t i = 0; rc == RB_OK && i < c->nq; i++) {
        for (size_t off = 0; rc == RB_OK && off < c->qlen[i];) {
            ssize_t n = send(c->fd, c->q[i] + off, c->qlen[i] - off, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rc = io_failed(c);
            } else if (n == 0) {
                c->broken = 1;
                rc = RB_EDAEMON;
            } else {
                off += (size_t)n;
            }
        }
    }
    qdrop(c);
    return rc;
}

/* ---- receiving ----------------------------------------------------------- */

/* The next whole reply into *out (freeReplyObject it): hiredis's reader,
 * fed from the socket here so the timeout and the bound stay ours. */
static int get_reply(rb_conn_t *c, redisReply **out)
{
    char chunk[RBI_READ_CHUNK];

    if (c->broken)
        return RB_EDAEMON;
    for (;;) {
        ssize_t n;
        switch (rbi_reader_get(c->rd, MAX_REPLY + RBI_READ_CHUNK, out)) {
        case RBI_READ_OK:
            return RB_OK;
        case RBI_READ_NOMEM:
            c->broken = 1;
            return RB_ENOMEM;
        case RBI_READ_MALFORMED:
            c->broken = 1;
            return RB_EPROTO;
        case RBI_READ_MORE:
            break;
        }
        do
            n = recv(c->fd, chunk, sizeof(chunk), 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return io_failed(c);
        if (n == 0) {
            c->broken = 1;
            return RB_EDAEMON;
        }
        if (rbi_reader_feed(c->rd, chunk, (size_t)n) != 0) {
            c->broken = 1;
            return RB_ENOMEM;
        }
    }
}

/* Records an error reply and maps it to a code. */
static int reply_error(rb_conn_t *c, const redisReply *r)
{
    size_t n = r->len < sizeof(c->error) - 1 ? r->len : sizeof(c->error) - 1;

    memcpy(c->error, r->str, n);
    c->error[n] = '\0';
    return strncmp(c->error, "NOPERM", 6) == 0 ? RB_EPERM : RB_EREPLY;
}

/* Sends the queued command and expects +OK. */
static int expect_ok(rb_conn_t *c)
{
    redisReply *r = NULL;
    int rc = wflush(c);

    if (rc == RB_OK)
        rc = get_reply(c, &r);
    if (rc == RB_OK)
        rc = r->type == REDIS_REPLY_ERROR    ? reply_error(c, r)
             : r->type == REDIS_REPLY_STATUS ? RB_OK
                                             : RB_EPROTO;
    freeReplyObject(r);
    return rc;
}

static int send_cmd(rb_conn_t *c, size_t argc, const char *const *argv, const size_t *argl)
{
    return queue(c, argc, argv, argl);
}

static int ring_cmd(rb_conn_t *c, const char *cmd, const char *name, size_t len, int with_weight,
                    uint32_t weight)
{
    char w[16];
    const char *argv[3] = { cmd, name, w };
    size_t argl[3] = { strlen(cmd), len, 0 };
    int rc;

    if (c == NULL || name == NULL)
        return RB_EINVAL;
    argl[2] = (size_t)snprintf(w, sizeof(w), "%u", weight);
    rc = send_cmd(c, with_weight ? 3 : 2, argv, argl);
    return rc == RB_OK ? expect_ok(c) : rc;
}

int rb_conn_ring_add(rb_conn_t *c, const char *name, size_t len, uint32_t weight)
{
    return ring_cmd(c, "RING.ADD", name, len, 1, weight);
}

int rb_conn_ring_remove(rb_conn_t *c, const char *name, size_t len)
{
    return ring_cmd(c, "RING.REMOVE", name, len, 0, 0);
}

int rb_conn_ring_weight(rb_conn_t *c, const char *name, size_t len, uint32_t weight)
{
    return ring_cmd(c, "RING.WEIGHT", name, len, 1, weight);
}

int rb_conn_ring_state(rb_conn_t *c, const char *name, size_t len, rb_node_state_t state)
{
    static const char *const cmds[] = {
        [RB_NODE_UP] = "RING.UP", [RB_NODE_DOWN] = "RING.DOWN", [RB_NODE_DRAIN] = "RING.DRAIN",
    };

    if ((unsigned)state >= sizeof(cmds) / sizeof(cmds[0]))
        return RB_EINVAL;
    return ring_cmd(c, cmds[state], name, len, 0, 0);
}

int rb_conn_bf_add(rb_conn_t *c, const char *filter, size_t flen, const void *key, size_t klen)
{
    rb_key_t k = { key, klen };
    uint8_t fresh;
    int64_t rc = rb_conn_bf_add_many(c, filter, flen, &k, 1, &fresh);

    return rc < 0 ? (int)rc : fresh;
}

/* Reads one batch's reply (BF.MADD, BF.INSERT): an array of integers (an
 * error element may end it), into out_new[0 .. n). */
static int64_t read_batch(rb_conn_t *c, size_t n, uint8_t *out_new)
{
    int64_t added = 0;
    int err = RB_OK;
    redisReply *r = NULL;
    int rc;

    /* The integers land in c->ints, their elements NULL. */
    rbi_reader_ints(c->rd, c->ints, BATCH_KEYS);
    rc = get_reply(c, &r);
    rbi_reader_ints(c->rd, NULL, 0);
    if (rc != RB_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR)
        err = reply_error(c, r);
    else if (r->type != REDIS_REPLY_ARRAY || r->elements > n)
        err = RB_EPROTO;
    for (size_t i = 0; err != RB_EPROTO && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        long long v;
        if (e != NULL && e->type == REDIS_REPLY_ERROR) {
            err = reply_error(c, e);
            continue;
        }
        if (e != NULL) {
            err = RB_EPROTO;
            break;
        }
        v = c->ints[i];
        if (out_new != NULL)
            out_new[i] = v == 1;
        added += v == 1;
    }
    freeReplyObject(r);
    return err != RB_OK ? err : added;
}

/* Keys in the batch that starts at key `at` of n. */
static size_t batch_keys(size_t at, size_t n)
{
    return n - at < BATCH_KEYS ? n - at : BATCH_KEYS;
}

/* Adds keys[0 .. n) in batches: each the request c->argv[0 .. nhead) (the
 * command, its filter, its options) and its keys, WINDOW of them queued
 * and sent at once, then read in order.  The number of new keys, or the
 * first error; on an error every batch in flight is read first (its keys
 * stay added), so the connection stays usable. */
static int64_t add_batches(rb_conn_t *c, size_t nhead, const rb_key_t *keys, size_t n,
                           uint8_t *out_new)
{
    size_t sent = 0, answered = 0, inflight = 0;
    int64_t added = 0, first = RB_OK;

    while (answered < n) {
        while (first == RB_OK && sent < n && inflight < WINDOW) {
            size_t cnt = batch_keys(sent, n);
            for (size_t i = 0; i < cnt; i++) {
                c->argv[nhead + i] = (const char *)keys[sent + i].ptr;
                c->argl[nhead + i] = keys[sent + i].len;
            }
            if ((first = queue(c, nhead + cnt, c->argv, c->argl)) != RB_OK)
                break;
            sent += cnt;
            inflight++;
        }
        if (c->nq > 0) {
            int rc = wflush(c);
            if (rc != RB_OK)
                return rc;   /* the connection broke: nothing more to read */
        }
        if (inflight == 0)
            return first;
        {
            size_t cnt = batch_keys(answered, n);
            int64_t got = read_batch(c, cnt, first == RB_OK && out_new ? out_new + answered : NULL);
            if (got < 0 && c->broken)
                return got;
            if (got < 0 && first == RB_OK)
                first = got;
            added += got > 0 ? got : 0;
            answered += cnt;
            inflight--;
        }
    }
    return first != RB_OK ? first : added;
}

int64_t rb_conn_bf_add_many(rb_conn_t *c, const char *filter, size_t flen, const rb_key_t *keys,
                            size_t n, uint8_t *out_new)
{
    if (c == NULL || filter == NULL || (keys == NULL && n != 0))
        return RB_EINVAL;
    c->argv[0] = "BF.MADD";
    c->argl[0] = 7;
    c->argv[1] = filter;
    c->argl[1] = flen;
    return add_batches(c, 2, keys, n, out_new);
}

/* Appends argument s (len bytes) to a command being built. */
static void arg_add(const char **argv, size_t *argl, size_t *argc, const char *s, size_t len)
{
    argv[*argc] = s;
    argl[(*argc)++] = len;
}

/* Appends option `name` and its value v, printed into buf (16 bytes). */
static void arg_add_u32(const char **argv, size_t *argl, size_t *argc, const char *name,
                        uint32_t v, char *buf)
{
    arg_add(argv, argl, argc, name, strlen(name));
    arg_add(argv, argl, argc, buf, (size_t)snprintf(buf, 16, "%u", v));
}

/* The words of a filter's shape after its name (at most 9, into argv /
 * argl at *argc): capacity (CAPACITY before it when `named`) and error
 * rate (ERROR), NONSCALING or EXPANSION, AGING and GENERATIONS, LAYOUT;
 * the numbers printed into num (5 x 32 bytes). */
static void shape_args(const rb_bloom_params_t *p, int named, const char **argv, size_t *argl,
                       size_t *argc, char (*num)[32])
{
    const char *layout = p->layout == RB_BLOOM_STANDARD     ? "standard"
                         : p->layout == RB_BLOOM_REDISBLOOM ? "redisbloom"
                                                            : "blocked";
    size_t e = (size_t)snprintf(num[0], 32, "%.17g", p->error_rate);
    size_t k = (size_t)snprintf(num[1], 32, "%llu", (unsigned long long)p->capacity);

    if (named) {   /* BF.INSERT's options: CAPACITY c ERROR e */
        arg_add(argv, argl, argc, "CAPACITY", 8);
        arg_add(argv, argl, argc, num[1], k);
        arg_add(argv, argl, argc, "ERROR", 5);
        arg_add(argv, argl, argc, num[0], e);
    } else {       /* BF.RESERVE's: error capacity */
        arg_add(argv, argl, argc, num[0], e);
        arg_add(argv, argl, argc, num[1], k);
    }
    /* As rb_bloom_reserve: an aging filter does not scale, so its
     * expansion is not used (and BF.RESERVE refuses one). */
    if (p->flags & RB_BLOOM_NONSCALING)
        arg_add(argv, argl, argc, "NONSCALING", 10);
    else if (!(p->flags & RB_BLOOM_AGING) && p->expansion != 0)
        arg_add_u32(argv, argl, argc, "EXPANSION", p->expansion, num[2]);
    if (p->flags & RB_BLOOM_AGING)
        arg_add_u32(argv, argl, argc, "AGING", p->window, num[3]);
    if ((p->flags & RB_BLOOM_AGING) && p->generations != 0)
        arg_add_u32(argv, argl, argc, "GENERATIONS", p->generations, num[4]);
    arg_add(argv, argl, argc, "LAYOUT", 6);
    arg_add(argv, argl, argc, layout, strlen(layout));
}

int rb_conn_bf_reserve(rb_conn_t *c, const char *name, size_t len, const rb_bloom_params_t *p)
{
    char num[5][32];
    const char *argv[12] = { "BF.RESERVE", name };
    size_t argl[12] = { 10, len };
    size_t argc = 2;
    int rc;

    if (c == NULL || name == NULL || p == NULL)
        return RB_EINVAL;
    /* OVERFILL (and any unknown flag) has no BF.RESERVE option: refused
     * here rather than dropped. */
    if ((p->flags & ~(RB_BLOOM_NONSCALING | RB_BLOOM_AGING)) != 0)
        return RB_EINVAL;
    shape_args(p, 0, argv, argl, &argc, num);
    rc = send_cmd(c, argc, argv, argl);
    return rc == RB_OK ? expect_ok(c) : rc;
}

int64_t rb_conn_bf_insert_many(rb_conn_t *c, const char *filter, size_t flen,
                               const rb_bloom_params_t *create, const rb_key_t *keys, size_t n,
                               uint8_t *out_new)
{
    char num[5][32];
    size_t nhead = 2;
    int64_t rc;

    if (c == NULL || filter == NULL || (keys == NULL && n != 0))
        return RB_EINVAL;
    /* BF.INSERT makes no aging or overfilling filter. */
    if (create != NULL && (create->flags & ~RB_BLOOM_NONSCALING) != 0)
        return RB_EINVAL;
    c->argv[0] = "BF.INSERT";
    c->argl[0] = 9;
    c->argv[1] = filter;
    c->argl[1] = flen;
    if (create != NULL)
        shape_args(create, 1, c->argv, c->argl, &nhead, num);
    else
        arg_add(c->argv, c->argl, &nhead, "NOCREATE", 8);
    arg_add(c->argv, c->argl, &nhead, "ITEMS", 5);
    rc = add_batches(c, nhead, keys, n, out_new);
    /* NOCREATE's refusal, in RedisBloom's words. */
    if (rc == RB_EREPLY && create == NULL && strcmp(c->error, "ERR not found") == 0)
        rc = RB_ENOENT;
    return rc;
}

/* Renders reply r (recursively) as text into buf. */
static void render(rb_conn_t *c, const redisReply *r, char *buf, size_t cap, size_t *w, int *is_err)
{
#define OUT(...) do { if (*w < cap) *w += (size_t)snprintf(buf + *w, cap - *w, __VA_ARGS__); } while (0)
    switch (r->type) {
    case REDIS_REPLY_ERROR:
        *is_err = 1;
        reply_error(c, r);
        /* fall through */
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_STRING:
        OUT("%.*s", (int)r->len, r->str);
        break;
    case REDIS_REPLY_INTEGER:
        OUT("%lld", r->integer);
        break;
    case REDIS_REPLY_NIL:
        OUT("(nil)");
        break;
    case REDIS_REPLY_ARRAY:
        for (size_t i = 0; i < r->elements; i++) {
            if (i > 0)
                OUT("\n");
            render(c, r->element[i], buf, cap, w, is_err);
        }
        break;
    }
#undef OUT
    if (*w >= cap)
        *w = cap - 1;
}

int rb_conn_command(rb_conn_t *c, size_t argc, const char *const *argv, const size_t *argl,
                    char *buf, size_t cap)
{
    redisReply *r = NULL;
    size_t w = 0;
    int is_err = 0, rc;

    if (c == NULL || argc == 0 || argv == NULL || argl == NULL || buf == NULL || cap == 0)
        return RB_EINVAL;
    buf[0] = '\0';
    rc = send_cmd(c, argc, argv, argl);
    if (rc == RB_OK)
        rc = wflush(c);
    if (rc == RB_OK)
        rc = get_reply(c, &r);
    if (rc != RB_OK)
        return rc;
    render(c, r, buf, cap, &w, &is_err);
    freeReplyObject(r);
    buf[w < cap ? w : cap - 1] = '\0';
    if (is_err)
        return strncmp(buf, "NOPERM", 6) == 0 ? RB_EPERM : RB_EREPLY;
    return RB_OK;
}
