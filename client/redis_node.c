/*
 * redis_node.c - a RESP2 server as a tree of replies (cli_rv_t): a Redis
 * server over TCP for import-cluster (connect to HOST PORT within the
 * timeout, send one command, read its reply), and ringbloomd over its Unix
 * socket for dump and restore (dump.c), whose replies and arguments are
 * binary chunks, sent a few at a time ahead of their replies.
 *
 * The other side is any host the user names, so its reply is untrusted
 * input.  It is read by hiredis's reader through lib/conn/resp_read.c,
 * which refuses an array count past the reply's element budget before
 * hiredis allocates the slots and a reply once more than a line and a
 * bulk string wait unparsed; here the bulk string's bound (1 MiB, unless
 * the opener raises it: dump.c's chunks are up to 16 MiB) and a line's
 * (64 KiB) are checked on the finished elements, and a byte that is not
 * RESP2 ends the read.  Every failure is a sentence in why[] that names
 * the node, never a crash or an unbounded wait (each send and receive
 * waits at most the timeout).  conn.c is the daemon's client for the
 * library (replies rendered as text); a cluster's replies are nested maps
 * in arrays, and a dump's chunks are bytes with any value, read here as a
 * tree (cli_rv_t: the strings hiredis allocated are moved into it).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "resp_read.h"

#define RV_MAX_LINE     65536u          /* a simple string, error or header line */
#define RV_MAX_BULK     (1u << 20)      /* one bulk string, unless cli_redis_open_unix's caller
                                         * asks for more */
#define RV_MAX_ELEMENTS (1u << 20)      /* every element of one reply, nested ones too */
/* Nesting: hiredis's reader refuses arrays nested more than 8 deep
 * (CLUSTER SHARDS nests 4 deep). */

struct cli_redis {
    int fd;
    char name[300];         /* "host:port", for messages */
    rbi_reader_t *rd;       /* hiredis's reader, bounded (resp_read.h) */
    size_t max_bulk;        /* the longest bulk string a reply may hold */
};

/* why[] = "HOST:PORT: <text>". */
static void say(const cli_redis_t *r, char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(why, cap, "%s: ", r->name);

    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < cap)
        vsnprintf(why + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Connects fd to ai within timeout_ms: 0, or -1 with errno. */
static int connect_within(int fd, const struct addrinfo *ai, int timeout_ms)
{
    int fl = fcntl(fd, F_GETFL), err = 0;
    socklen_t el = sizeof(err);
    struct pollfd p = { .fd = fd, .events = POLLOUT };

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        int n;
        if (errno != EINPROGRESS)
            return -1;
        while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
            ;
        if (n == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
            return -1;
        if (err != 0) {
            errno = err;
            return -1;
        }
    }
    return fcntl(fd, F_SETFL, fl);
}

/* Each send and receive on r waits at most timeout_s seconds. */
static void set_timeouts(cli_redis_t *r, unsigned timeout_s)
{
    struct timeval tv = { .tv_sec = (time_t)timeout_s };

    setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(r->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* A node not yet connected (fd -1), with its reader; NULL if out of memory. */
static cli_redis_t *node_new(void)
{
    cli_redis_t *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->fd = -1;
    if ((r->rd = rbi_reader_new(RV_MAX_ELEMENTS)) == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

int cli_redis_open(const char *host, const char *port, unsigned timeout_s, cli_redis_t **out,
                   char *why, size_t cap)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *ais, *ai;
    cli_redis_t *r = node_new();
    int rc, e = 0;

    if (r == NULL) {
        snprintf(why, cap, "out of memory");
        return EX_FAIL;
    }
    r->fd = -1;
    r->max_bulk = RV_MAX_BULK;
    snprintf(r->name, sizeof(r->name), "%s:%s", host, port);
    if ((rc = getaddrinfo(host, port, &hints, &ais)) != 0) {
        say(r, why, cap, "cannot resolve: %s", gai_strerror(rc));
        cli_redis_close(r);
        return EX_UNREACH;
    }
    for (ai = ais; ai != NULL; ai = ai->ai_next) {
        r->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (r->fd >= 0 && connect_within(r->fd, ai, (int)timeout_s * 1000) == 0)
            break;
        e = errno;
        if (r->fd >= 0)
            close(r->fd);
        r->fd = -1;
    }
    freeaddrinfo(ais);
    if (r->fd < 0) {
        say(r, why, cap, "cannot connect: %s", strerror(e));
        cli_redis_close(r);
        return EX_UNREACH;
    }
    set_timeouts(r, timeout_s);
    *out = r;
    return EX_YES;
}

int cli_redis_open_unix(const char *path, unsigned timeout_s, size_t max_bulk, cli_redis_t **out,
                        char *why, size_t cap)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    cli_redis_t *r = node_new();

    if (r == NULL) {
        snprintf(why, cap, "out of memory");
        return EX_FAIL;
    }
    r->max_bulk = max_bulk > RV_MAX_BULK ? max_bulk : RV_MAX_BULK;
    snprintf(r->name, sizeof(r->name), "%s", path);
    if (strlen(path) >= sizeof(sa.sun_path)) {
        say(r, why, cap, "the path is too long for a socket");
        cli_redis_close(r);
        return EX_FAIL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* The daemon answers a connect at once or not at all (a Unix socket
     * does not wait on a network): no connect timeout is needed. */
    if ((r->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(r->fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int e = errno;
        say(r, why, cap, "cannot connect: %s", strerror(e));
        cli_redis_close(r);
        return EX_UNREACH;
    }
    set_timeouts(r, timeout_s);
    *out = r;
    return EX_YES;
}

void cli_redis_close(cli_redis_t *r)
{
    if (r == NULL)
        return;
    if (r->fd >= 0)
        close(r->fd);
    rbi_reader_free(r->rd);
    free(r);
}

void cli_rv_free(cli_rv_t *v)
{
    if (v == NULL)
        return;
    if (v->type == '*')
        for (size_t i = 0; i < v->count; i++)
            cli_rv_free(&v->el[i]);
    free(v->el);
    free(v->s);
    v->el = NULL;
    v->s = NULL;
}

/* ---- reading ------------------------------------------------------------- */

/* Moves hiredis's reply h into v (its strings taken, not copied: hiredis
 * 0.14 allocates them with malloc): EX_YES, or EX_FAIL after saying why. */
static int take(cli_redis_t *r, redisReply *h, cli_rv_t *v, char *why, size_t cap)
{
    switch (h->type) {
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        if (h->len > RV_MAX_LINE) {
            say(r, why, cap, "malformed reply: a line longer than %u bytes", RV_MAX_LINE);
            return EX_FAIL;
        }
        /* fall through */
    case REDIS_REPLY_STRING:
        /* The reader holds at most max_bulk + RV_MAX_LINE unparsed bytes:
         * a bulk string just past max_bulk is refused here. */
        if (h->type == REDIS_REPLY_STRING && h->len > r->max_bulk) {
            say(r, why, cap, "malformed reply: a bulk string of %zu bytes (at most %zu)", h->len,
                r->max_bulk);
            return EX_FAIL;
        }
        v->type = h->type == REDIS_REPLY_STATUS ? '+' : h->type == REDIS_REPLY_ERROR ? '-' : '$';
        v->s = h->str;
        v->len = h->len;
        h->str = NULL;
        return EX_YES;
    case REDIS_REPLY_INTEGER:
        v->type = ':';
        v->n = h->integer;
        return EX_YES;
    case REDIS_REPLY_NIL:
        v->type = '_';
        return EX_YES;
    case REDIS_REPLY_ARRAY:
        v->type = '*';
        v->n = (long long)h->elements;
        if (h->elements > 0 && (v->el = calloc(h->elements, sizeof(*v->el))) == NULL) {
            snprintf(why, cap, "out of memory");
            return EX_FAIL;
        }
        for (size_t i = 0; i < h->elements; i++) {
            int ex;
            v->count = i + 1;
            if ((ex = take(r, h->element[i], &v->el[i], why, cap)) != EX_YES)
                return ex;
        }
        return EX_YES;
    }
    say(r, why, cap, "malformed reply: a reply of type %d", h->type);
    return EX_FAIL;
}

/* Feeds the reader until it holds a whole reply (*h), each receive waiting
 * at most the timeout. */
static int read_reply(cli_redis_t *r, redisReply **h, char *why, size_t cap)
{
    char chunk[RBI_READ_CHUNK];

    for (;;) {
        ssize_t n;
        switch (rbi_reader_get(r->rd, r->max_bulk + RV_MAX_LINE + RBI_READ_CHUNK, h)) {
        case RBI_READ_OK:
            return EX_YES;
        case RBI_READ_NOMEM:
            snprintf(why, cap, "out of memory");
            return EX_FAIL;
        case RBI_READ_MALFORMED:
            say(r, why, cap, "malformed reply: %s", rbi_reader_why(r->rd));
            return EX_FAIL;
        case RBI_READ_MORE:
            break;
        }
        do
            n = recv(r->fd, chunk, sizeof(chunk), 0);
        while (n < 0 && errno == EINTR);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            say(r, why, cap, "no answer in time");
            return EX_UNREACH;
        }
        if (n <= 0) {
            say(r, why, cap, "connection lost: %s",
                n == 0 ? "closed by the server" : strerror(errno));
            return EX_UNREACH;
        }
        if (rbi_reader_feed(r->rd, chunk, (size_t)n) != 0) {
            snprintf(why, cap, "out of memory");
            return EX_FAIL;
        }
    }
}

int cli_redis_send(cli_redis_t *r, size_t argc, const char *const *argv, const size_t *argl,
                   char *why, size_t cap)
{
    char *w;
    long len = rbi_request_format(&w, argc, argv, argl);
    size_t off = 0;
    int ex = EX_YES;

    if (len < 0) {
        snprintf(why, cap, len == -1 ? "a request of 2 GiB or more" : "out of memory");
        return EX_FAIL;
    }
    while (off < (size_t)len) {
        ssize_t n = send(r->fd, w + off, (size_t)len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            say(r, why, cap, "cannot send: %s", n == 0 ? "connection closed" :
                errno == EAGAIN || errno == EWOULDBLOCK ? "no progress in time" : strerror(errno));
            ex = EX_UNREACH;
            break;
        }
        off += (size_t)n;
    }
    redisFreeCommand(w);
    return ex;
}

int cli_redis_recv(cli_redis_t *r, cli_rv_t *reply, char *why, size_t cap)
{
    redisReply *h = NULL;
    int ex;

    memset(reply, 0, sizeof(*reply));
    if ((ex = read_reply(r, &h, why, cap)) == EX_YES)
        ex = take(r, h, reply, why, cap);
    if (h != NULL)
        freeReplyObject(h);
    if (ex != EX_YES)
        cli_rv_free(reply);
    return ex;
}

int cli_redis_call(cli_redis_t *r, size_t argc, const char *const *argv, cli_rv_t *reply,
                   char *why, size_t cap)
{
    size_t *argl = calloc(argc, sizeof(*argl));
    int ex;

    memset(reply, 0, sizeof(*reply));
    if (argl == NULL) {
        snprintf(why, cap, "out of memory");
        return EX_FAIL;
    }
    for (size_t i = 0; i < argc; i++)
        argl[i] = strlen(argv[i]);
    ex = cli_redis_send(r, argc, argv, argl, why, cap);
    free(argl);
    return ex == EX_YES ? cli_redis_recv(r, reply, why, cap) : ex;
}
