/*
 * redis_node.c - a RESP2 server as a tree of replies (cli_rv_t): a Redis
 * server over TCP for import-cluster (connect to HOST PORT within the
 * timeout, send one command, read its reply), and ringbloomd over its Unix
 * socket for dump and restore (dump.c), whose replies and arguments are
 * binary chunks, sent a few at a time ahead of their replies.
 *
 * The other side is any host the user names, so its reply is untrusted
 * input: every size is bounded before anything is allocated or read (a
 * line, a bulk string, the elements of the whole reply, the nesting), a
 * byte that is not RESP2 ends the read, and every failure is a sentence
 * in why[] that names the node, never a crash or an unbounded wait (each
 * send and receive waits at most the timeout).  conn.c's reader is the
 * daemon's client (a Unix socket, replies rendered as text); a cluster's
 * replies are nested maps in arrays, and a dump's chunks are bytes with
 * any value, read here as a tree.  A connection's bulk bound is 1 MiB,
 * unless its opener raises it (dump.c: a dump chunk is up to 16 MiB).
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
#include "resp_enc.h"

#define RV_MAX_LINE     65536u          /* a simple string, error or header line */
#define RV_MAX_BULK     (1u << 20)      /* one bulk string, unless cli_redis_open_unix's caller
                                         * asks for more */
#define RV_MAX_ELEMENTS (1u << 20)      /* every element of one reply, nested ones too */
#define RV_MAX_DEPTH    8               /* CLUSTER SHARDS nests 4 deep */

struct cli_redis {
    int fd;
    char name[300];         /* "host:port", for messages */
    char *buf;              /* received, not yet parsed: buf[pos .. len) */
    size_t pos, len, cap;
    size_t elements;        /* of the reply being read */
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

int cli_redis_open(const char *host, const char *port, unsigned timeout_s, cli_redis_t **out,
                   char *why, size_t cap)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *ais, *ai;
    cli_redis_t *r = calloc(1, sizeof(*r));
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
        free(r);
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
        free(r);
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
    cli_redis_t *r = calloc(1, sizeof(*r));

    if (r == NULL) {
        snprintf(why, cap, "out of memory");
        return EX_FAIL;
    }
    r->max_bulk = max_bulk > RV_MAX_BULK ? max_bulk : RV_MAX_BULK;
    snprintf(r->name, sizeof(r->name), "%s", path);
    if (strlen(path) >= sizeof(sa.sun_path)) {
        say(r, why, cap, "the path is too long for a socket");
        free(r);
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
    free(r->buf);
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

/* Receives more bytes into buf: EX_YES, or the code after saying why. */
static int fill(cli_redis_t *r, char *why, size_t cap)
{
    ssize_t n;

    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->cap - r->len < 4096) {
        size_t ncap = r->cap ? r->cap * 2 : 65536;
        char *b;
        /* A bulk string and its CRLF, or a line, fit: nothing waits for
         * more than that in the buffer. */
        if (ncap > 2 * (r->max_bulk + RV_MAX_LINE)) {
            say(r, why, cap, "reply too large to buffer");
            return EX_FAIL;
        }
        if ((b = realloc(r->buf, ncap)) == NULL) {
            snprintf(why, cap, "out of memory");
            return EX_FAIL;
        }
        r->buf = b;
        r->cap = ncap;
    }
    do
        n = recv(r->fd, r->buf + r->len, r->cap - r->len, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        say(r, why, cap, "no answer in time");
        return EX_UNREACH;
    }
    if (n <= 0) {
        say(r, why, cap, "connection lost: %s", n == 0 ? "closed by the server" : strerror(errno));
        return EX_UNREACH;
    }
    r->len += (size_t)n;
    return EX_YES;
}

/* The next line (without its CRLF) at pos: *line, *llen; pos moves past it. */
static int read_line(cli_redis_t *r, const char **line, size_t *llen, char *why, size_t cap)
{
    for (;;) {
        const char *nl = r->len > r->pos ? memchr(r->buf + r->pos, '\n', r->len - r->pos) : NULL;
        int ex;
        if (nl != NULL) {
            size_t end = (size_t)(nl - r->buf);
            if (end == r->pos || r->buf[end - 1] != '\r') {
                say(r, why, cap, "malformed reply: a line not ended by CRLF");
                return EX_FAIL;
            }
            *line = r->buf + r->pos;
            *llen = end - 1 - r->pos;
            r->pos = end + 1;
            return EX_YES;
        }
        if (r->len - r->pos > RV_MAX_LINE) {
            say(r, why, cap, "malformed reply: a line longer than %u bytes", RV_MAX_LINE);
            return EX_FAIL;
        }
        if ((ex = fill(r, why, cap)) != EX_YES)
            return ex;
    }
}

/* A RESP integer: digits with an optional '-', nothing else. */
static int parse_int(const char *s, size_t len, long long *out)
{
    char tmp[24];
    char *end;

    if (len == 0 || len >= sizeof(tmp))
        return -1;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    errno = 0;
    *out = strtoll(tmp, &end, 10);
    return errno || *end || !(tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')) ? -1 : 0;
}

/* s[0 .. len) copied, NUL-terminated, into v. */
static int keep(cli_rv_t *v, const char *s, size_t len, char *why, size_t cap)
{
    if ((v->s = malloc(len + 1)) == NULL) {
        snprintf(why, cap, "out of memory");
        return EX_FAIL;
    }
    memcpy(v->s, s, len);
    v->s[len] = '\0';
    v->len = len;
    return EX_YES;
}

/* One element (an array's elements too) into v, which the caller zeroed;
 * on failure v holds what was read, for cli_rv_free. */
static int read_value(cli_redis_t *r, cli_rv_t *v, int depth, char *why, size_t cap)
{
    const char *line;
    size_t llen;
    long long n;
    int ex;

    if (++r->elements > RV_MAX_ELEMENTS) {
        say(r, why, cap, "malformed reply: more than %u elements", RV_MAX_ELEMENTS);
        return EX_FAIL;
    }
    if ((ex = read_line(r, &line, &llen, why, cap)) != EX_YES)
        return ex;
    if (llen == 0) {
        say(r, why, cap, "malformed reply: an empty line");
        return EX_FAIL;
    }
    v->type = line[0];
    switch (line[0]) {
    case '+':
    case '-':
        return keep(v, line + 1, llen - 1, why, cap);
    case ':':
        if (parse_int(line + 1, llen - 1, &v->n) != 0)
            break;
        return EX_YES;
    case '$':
    case '*':
        if (parse_int(line + 1, llen - 1, &n) != 0 || n < -1)
            break;
        if (n == -1) {
            v->type = '_';
            return EX_YES;
        }
        if (line[0] == '$') {
            if (n > (long long)r->max_bulk) {
                say(r, why, cap, "malformed reply: a bulk string of %lld bytes (at most %zu)",
                    n, r->max_bulk);
                return EX_FAIL;
            }
            while (r->len - r->pos < (size_t)n + 2)
                if ((ex = fill(r, why, cap)) != EX_YES)
                    return ex;
            if (r->buf[r->pos + (size_t)n] != '\r' || r->buf[r->pos + (size_t)n + 1] != '\n') {
                say(r, why, cap, "malformed reply: a bulk string not ended by CRLF");
                return EX_FAIL;
            }
            ex = keep(v, r->buf + r->pos, (size_t)n, why, cap);
            r->pos += (size_t)n + 2;
            return ex;
        }
        if (depth >= RV_MAX_DEPTH) {
            say(r, why, cap, "malformed reply: arrays nested more than %d deep", RV_MAX_DEPTH);
            return EX_FAIL;
        }
        if (n > (long long)(RV_MAX_ELEMENTS - r->elements)) {
            say(r, why, cap, "malformed reply: more than %u elements", RV_MAX_ELEMENTS);
            return EX_FAIL;
        }
        v->n = n;
        if (n > 0 && (v->el = calloc((size_t)n, sizeof(*v->el))) == NULL) {
            snprintf(why, cap, "out of memory");
            return EX_FAIL;
        }
        for (long long i = 0; i < n; i++) {
            v->count = (size_t)i + 1;
            if ((ex = read_value(r, &v->el[i], depth + 1, why, cap)) != EX_YES)
                return ex;
        }
        return EX_YES;
    default:
        say(r, why, cap, "malformed reply: type byte 0x%02x is not RESP2 (is this a Redis "
            "server?)", (unsigned char)line[0]);
        return EX_FAIL;
    }
    say(r, why, cap, "malformed reply: a bad number in '%.*s'", (int)(llen < 40 ? llen : 40), line);
    return EX_FAIL;
}

int cli_redis_send(cli_redis_t *r, size_t argc, const char *const *argv, const size_t *argl,
                   char *why, size_t cap)
{
    rbi_buf_t w = { 0 };
    size_t off = 0;
    int ex = EX_YES;

    rbi_resp_command(&w, argc, argv, argl);
    if (w.oom) {
        rbi_buf_free(&w);
        snprintf(why, cap, "out of memory");
        return EX_FAIL;
    }
    while (off < w.len) {
        ssize_t n = send(r->fd, w.data + off, w.len - off, MSG_NOSIGNAL);
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
    rbi_buf_free(&w);
    return ex;
}

int cli_redis_recv(cli_redis_t *r, cli_rv_t *reply, char *why, size_t cap)
{
    int ex;

    memset(reply, 0, sizeof(*reply));
    r->elements = 0;
    if ((ex = read_value(r, reply, 0, why, cap)) != EX_YES)
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
