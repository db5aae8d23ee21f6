/*
 * ngx_http_ringbloom_admit_conn.c - the admits' connection to the daemon:
 * one non-blocking Unix-socket connection per worker that takes the queued
 * commands as far as the socket does and reads the replies, never making
 * the event loop wait.
 *
 *   - opened only through a socket directory rb_daemon_uid finds
 *     trustworthy; what the socket does not take now is written when the
 *     worker's event loop reports it writable;
 *   - a lost connection is re-opened at most once a second, by the next
 *     admit or, while admits wait, by a timer (which does not hold up a
 *     graceful shutdown); a command it cut short is sent again whole, none
 *     it took whole is sent again;
 *   - replies are parsed by hiredis's reader (lib/conn/resp_read.h, one
 *     per connection: what it holds of a reply is lost with it) and
 *     discarded; error replies are counted ($ringbloom_admit_errors) and
 *     logged: the first, then at most one a minute.  What is queued
 *     (BF.ADD, ADMIT.TOUCH, RING.DOWN, RING.UP) is answered by one integer,
 *     status or error each; a reply past the bounds below, or bytes that
 *     are not RESP, mean a peer out of step: the connection is dropped
 *     (logged) and made again.
 */

#include "ngx_http_ringbloom.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <resp_read.h>


/* Seconds between two log lines about drops or error replies. */
#define NGX_HTTP_RINGBLOOM_LOG_EVERY  60

/*
 * The bounds of one reply: elements (nested ones too) and the bytes of one
 * line or bulk string; the bytes read at a time (at most RBI_READ_CHUNK,
 * resp_read.h's contract, so the reader holds at most
 * NGX_HTTP_RINGBLOOM_REPLY_BYTES + RBI_READ_CHUNK).  Error texts are
 * logged up to NGX_HTTP_RINGBLOOM_ERROR_LOG bytes.
 */
#define NGX_HTTP_RINGBLOOM_REPLY_ELEMENTS  16
#define NGX_HTTP_RINGBLOOM_REPLY_BYTES     4096
#define NGX_HTTP_RINGBLOOM_READ            4096
#define NGX_HTTP_RINGBLOOM_ERROR_LOG       200


static void ngx_http_ringbloom_admit_flush(ngx_http_ringbloom_worker_t *w);
static void ngx_http_ringbloom_admit_read(ngx_http_ringbloom_worker_t *w);
static void ngx_http_ringbloom_admit_retry_handler(ngx_event_t *ev);


/*
 * Whether the count-th drop or error reply is logged: the first, then at
 * most one a minute (*logged: when one last was).
 */
ngx_uint_t
ngx_http_ringbloom_admit_log_due(uint64_t count, time_t *logged)
{
    time_t  now;

    now = ngx_time();

    if (count != 1 && now - *logged < NGX_HTTP_RINGBLOOM_LOG_EVERY) {
        return 0;
    }

    *logged = now;

    return 1;
}


/* ---- connecting ---------------------------------------------------------- */

/*
 * With admits waiting and no connection, try again in a second.  The
 * timer is cancelable: it does not hold up a graceful shutdown.
 */
static void
ngx_http_ringbloom_admit_arm(ngx_http_ringbloom_worker_t *w)
{
    if (w->connection != NULL || w->pos == w->last || w->retry.timer_set) {
        return;
    }

    w->retry.handler = ngx_http_ringbloom_admit_retry_handler;
    w->retry.data = w;
    w->retry.log = ngx_cycle->log;
    w->retry.cancelable = 1;

    ngx_add_timer(&w->retry, NGX_HTTP_RINGBLOOM_RETRY * 1000);
}


static void
ngx_http_ringbloom_admit_disconnect(ngx_http_ringbloom_worker_t *w)
{
    ngx_close_connection(w->connection);
    w->connection = NULL;
    rbi_reader_free(w->replies);
    w->replies = NULL;

    /* The daemon dropped the command cut short: send it whole next time. */
    w->sent = w->pos;
    w->next_connect = ngx_time() + NGX_HTTP_RINGBLOOM_RETRY;

    ngx_http_ringbloom_admit_arm(w);
}


static void
ngx_http_ringbloom_admit_retry_handler(ngx_event_t *ev)
{
    ngx_http_ringbloom_admit_kick(ev->data, ev->log);
}


static void
ngx_http_ringbloom_admit_write_handler(ngx_event_t *wev)
{
    ngx_connection_t  *c = wev->data;

    ngx_http_ringbloom_admit_flush(c->data);
}


static void
ngx_http_ringbloom_admit_read_handler(ngx_event_t *rev)
{
    ngx_connection_t  *c = rev->data;

    ngx_http_ringbloom_admit_read(c->data);
}


/* Closes a socket no connection holds yet. */
static void
ngx_http_ringbloom_admit_close_socket(int fd, ngx_log_t *log)
{
    if (close(fd) == -1) {
        ngx_log_error(NGX_LOG_ALERT, log, ngx_socket_errno,
                      "ringbloom: close() failed");
    }
}


/*
 * A non-blocking socket connected to the daemon, or -1.  Keys go only to a
 * socket in a directory another user cannot have made or replaced (a
 * missing one is a daemon not running: connect says so).  A Unix-socket
 * connect completes at once or fails at once (EAGAIN: the daemon's backlog
 * is full); either way no wait.  A refused directory or a failed connect
 * is logged once, until a connect works.
 */
static int
ngx_http_ringbloom_admit_socket(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log)
{
    int                  fd, rc;
    char                 why[512];
    ngx_err_t            err;
    struct sockaddr_un   sa;

    rc = rb_daemon_uid(NULL, (char *) w->conf->socket.data, w->conf->owner,
                       NULL, why, sizeof(why));
    if (rc != RB_OK && rc != RB_ENOENT) {
        if (!w->connect_failing) {
            w->connect_failing = 1;
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "ringbloom: not using \"%V\": %s; admits wait in "
                          "the buffer (logged once)", &w->conf->socket, why);
        }

        return -1;
    }

    ngx_memzero(&sa, sizeof(struct sockaddr_un));
    sa.sun_family = AF_UNIX;
    ngx_memcpy(sa.sun_path, w->conf->socket.data, w->conf->socket.len);

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_ALERT, log, ngx_socket_errno,
                      "ringbloom: socket() failed");
        return -1;
    }

    if (connect(fd, (struct sockaddr *) &sa, sizeof(struct sockaddr_un))
        == -1)
    {
        err = ngx_socket_errno;

        if (!w->connect_failing) {
            w->connect_failing = 1;
            ngx_log_error(NGX_LOG_WARN, log, err,
                          "ringbloom: cannot connect to \"%V\"; admits wait "
                          "in the buffer, retrying at most once a second "
                          "(logged once)", &w->conf->socket);
        }

        ngx_http_ringbloom_admit_close_socket(fd, log);
        return -1;
    }

    return fd;
}


/* Opens the connection if there is none and a try is due.  Never waits. */
static void
ngx_http_ringbloom_admit_connect(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log)
{
    int                fd;
    time_t             now;
    ngx_connection_t  *c;

    now = ngx_time();

    if (w->connection != NULL || now < w->next_connect) {
        return;
    }

    w->next_connect = now + NGX_HTTP_RINGBLOOM_RETRY;

    fd = ngx_http_ringbloom_admit_socket(w, log);
    if (fd == -1) {
        return;
    }

    w->replies = rbi_reader_new(NGX_HTTP_RINGBLOOM_REPLY_ELEMENTS);
    if (w->replies == NULL) {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "ringbloom: no memory for a reply reader");
        ngx_http_ringbloom_admit_close_socket(fd, log);
        return;
    }

    c = ngx_get_connection(fd, ngx_cycle->log);
    if (c == NULL) {
        rbi_reader_free(w->replies);
        w->replies = NULL;
        ngx_http_ringbloom_admit_close_socket(fd, log);
        return;
    }

    c->data = w;
    c->read->handler = ngx_http_ringbloom_admit_read_handler;
    c->write->handler = ngx_http_ringbloom_admit_write_handler;
    c->read->log = c->log;
    c->write->log = c->log;

    /* A fresh Unix-socket connection has room; flush writes until EAGAIN. */
    c->write->ready = 1;

    w->connection = c;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_http_ringbloom_admit_disconnect(w);
        return;
    }

    if (w->connect_failing) {
        w->connect_failing = 0;
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "ringbloom: connected to \"%V\"", &w->conf->socket);
    }
}


/*
 * After send() or recv() (call: "send() to", "recv() from") returned -1 on
 * the connection whose event ev is: NGX_AGAIN to call it again (EINTR);
 * NGX_OK when the socket would block (ev waits for the event loop);
 * NGX_ERROR when the connection failed and was dropped.
 */
static ngx_int_t
ngx_http_ringbloom_admit_io_error(ngx_http_ringbloom_worker_t *w,
    ngx_event_t *ev, const char *call)
{
    ngx_int_t  rc;
    ngx_err_t  err;

    err = ngx_socket_errno;

    if (err == NGX_EINTR) {
        return NGX_AGAIN;
    }

    if (err == NGX_EAGAIN) {
        ev->ready = 0;

        rc = ev->write ? ngx_handle_write_event(ev, 0)
                       : ngx_handle_read_event(ev, 0);

        if (rc == NGX_OK) {
            return NGX_OK;
        }

    } else {
        ngx_log_error(NGX_LOG_WARN, ev->log, err,
                      "ringbloom: %s \"%V\" failed; reconnecting",
                      call, &w->conf->socket);
    }

    ngx_http_ringbloom_admit_disconnect(w);

    return NGX_ERROR;
}


/* ---- commands out, replies in -------------------------------------------- */

/*
 * Length of the queued command at p: a RESP array of bulk strings, as
 * ngx_http_ringbloom_admit.c queues them ("*<n>\r\n", then n times
 * "$<len>\r\n<len bytes>\r\n").
 */
static size_t
ngx_http_ringbloom_command_len(u_char *p, u_char *last)
{
    size_t   len, n, i;
    u_char  *q;

    n = 0;

    for (q = p + 1; q < last && *q >= '0' && *q <= '9'; q++) {
        n = n * 10 + (size_t) (*q - '0');
    }

    q += 2;

    for (i = 0; i < n && q < last; i++) {
        len = 0;

        /* q is at "$<digits>\r\n" */
        for (q++; q < last && *q >= '0' && *q <= '9'; q++) {
            len = len * 10 + (size_t) (*q - '0');
        }

        q += 2 + len + 2;
    }

    return (size_t) (q - p);
}


/* Writes what the socket takes now; never waits. */
static void
ngx_http_ringbloom_admit_flush(ngx_http_ringbloom_worker_t *w)
{
    size_t             len;
    ssize_t            n;
    ngx_connection_t  *c;

    c = w->connection;

    while (c != NULL && w->sent < w->last) {
        n = send(c->fd, w->sent, (size_t) (w->last - w->sent), MSG_NOSIGNAL);

        if (n == -1) {
            if (ngx_http_ringbloom_admit_io_error(w, c->write, "send() to")
                == NGX_AGAIN)
            {
                continue;
            }

            break;
        }

        w->sent += n;

        /* Keep pos on the first command the socket has not taken whole. */
        while (w->pos < w->sent) {
            len = ngx_http_ringbloom_command_len(w->pos, w->last);

            if (w->pos + len > w->sent) {
                break;
            }

            w->pos += len;
        }
    }

    if (w->pos == w->last) {
        w->pos = w->start;
        w->sent = w->start;
        w->last = w->start;
    }
}


/*
 * Takes the whole replies the reader holds: counts an error reply and logs
 * it (the first, then at most one a minute).  NGX_OK when it needs more
 * bytes; NGX_ERROR when the bytes are not RESP or pass a bound (logged).
 */
static ngx_int_t
ngx_http_ringbloom_admit_replies(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log)
{
    size_t       len;
    rbi_read_t   rc;
    redisReply  *reply;

    for ( ;; ) {
        rc = rbi_reader_get(w->replies, NGX_HTTP_RINGBLOOM_REPLY_BYTES
                                        + RBI_READ_CHUNK, &reply);

        if (rc == RBI_READ_MORE) {
            return NGX_OK;
        }

        if (rc != RBI_READ_OK) {
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "ringbloom: \"%V\" sent a reply that does not "
                          "parse (%s); reconnecting", &w->conf->socket,
                          rc == RBI_READ_NOMEM ? "no memory"
                                               : rbi_reader_why(w->replies));
            return NGX_ERROR;
        }

        if (reply->type == REDIS_REPLY_ERROR) {
            w->errors++;

            if (ngx_http_ringbloom_admit_log_due(w->errors,
                                                 &w->errors_logged))
            {
                len = ngx_min(reply->len, NGX_HTTP_RINGBLOOM_ERROR_LOG);

                ngx_log_error(NGX_LOG_WARN, log, 0,
                              "ringbloom: the daemon refused an admit or "
                              "report: \"%*s\" (%uL refused so far)",
                              len, reply->str, w->errors);
            }
        }

        freeReplyObject(reply);
    }
}


/* Reads and takes replies until EAGAIN. */
static void
ngx_http_ringbloom_admit_read(ngx_http_ringbloom_worker_t *w)
{
    u_char             buf[NGX_HTTP_RINGBLOOM_READ];
    ssize_t            n;
    ngx_connection_t  *c;

    c = w->connection;

    for ( ;; ) {
        n = recv(c->fd, buf, sizeof(buf), 0);

        if (n == 0) {
            ngx_log_error(NGX_LOG_WARN, c->log, 0,
                          "ringbloom: \"%V\" closed the connection; "
                          "reconnecting", &w->conf->socket);
            ngx_http_ringbloom_admit_disconnect(w);
            return;
        }

        if (n == -1) {
            if (ngx_http_ringbloom_admit_io_error(w, c->read, "recv() from")
                == NGX_AGAIN)
            {
                continue;
            }

            return;
        }

        if (rbi_reader_feed(w->replies, (char *) buf, (size_t) n) != 0) {
            ngx_log_error(NGX_LOG_ALERT, c->log, 0,
                          "ringbloom: no memory for a reply; reconnecting");
            ngx_http_ringbloom_admit_disconnect(w);
            return;
        }

        if (ngx_http_ringbloom_admit_replies(w, c->log) != NGX_OK) {
            ngx_http_ringbloom_admit_disconnect(w);
            return;
        }
    }
}


/*
 * Moves queued admits toward the daemon without waiting: connects if a try
 * is due, writes what the socket takes, and arms the retry timer if admits
 * are left with no connection.
 */
void
ngx_http_ringbloom_admit_kick(ngx_http_ringbloom_worker_t *w, ngx_log_t *log)
{
    ngx_http_ringbloom_admit_connect(w, log);

    if (w->connection != NULL && w->connection->write->ready) {
        ngx_http_ringbloom_admit_flush(w);
    }

    ngx_http_ringbloom_admit_arm(w);
}


/* At exit: hands the daemon what the socket takes now, logs what is left. */
void
ngx_http_ringbloom_admit_exit(ngx_http_ringbloom_worker_t *w, ngx_log_t *log)
{
    if (w->connection != NULL && w->connection->write->ready) {
        ngx_http_ringbloom_admit_flush(w);
    }

    if (w->pos != w->last) {
        ngx_log_error(NGX_LOG_INFO, log, 0,
                      "ringbloom: %uz bytes of admits not sent at exit",
                      (size_t) (w->last - w->pos));
    }
}
