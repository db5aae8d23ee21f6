/*
 * server.c - ringbloomd's event loop: one epoll loop, non-blocking Unix
 * socket clients with pipelining, access control by peer credentials,
 * limits, idle timeouts and group commit.
 *
 * One loop turn: read every readable client and execute every complete
 * request it sent (replies are appended to its output buffer), then write
 * the log records of the whole turn with one write (and one fsync when
 * needed, persist_flush), and only then send the replies.  If the log
 * cannot be written the replies of the clients whose commands it could
 * not log stay queued (nothing unlogged is ever acknowledged), further
 * mutations are refused until it can, and everything else is answered.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "rbd.h"

#define READ_CHUNK   (64u * 1024u)
#define READ_TURN    (16u * READ_CHUNK)  /* bytes read per client per loop turn */
#define OUT_LIMIT    (8u << 20)          /* stop reading a client whose replies
                                            pile up past this */
#define MAX_EVENTS   256
#define TICK_MS      100

static const char **scratch_argv;
static size_t *scratch_argl;
static size_t scratch_cap;

int server_may_write(const server_t *s, uid_t uid, gid_t gid)
{
    for (size_t i = 0; i < s->cfg.n_write_uids; i++)
        if (s->cfg.write_uids[i] == uid)
            return 1;
    for (size_t i = 0; i < s->cfg.n_write_gids; i++)
        if (s->cfg.write_gids[i] == gid)
            return 1;
    return 0;
}

int server_listen(server_t *s, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    struct epoll_event ev;
    sigset_t sigs;
    mode_t old;

    if (strlen(s->cfg.socket) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "socket path too long: %s", s->cfg.socket);
        return -1;
    }
    if (rbd_make_dir(s->cfg.socket, 0, 0755, err, errlen) != 0)
        return -1;
    /* The pidfile lock is ours, so a socket file left here is stale. */
    unlink(s->cfg.socket);
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->lfd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, s->cfg.socket);
    /* bind creates the socket with 0777 & ~umask: exactly the configured
     * mode from the first moment, and no chmod by path afterwards (in a
     * directory others can write, the path could be swapped for a symlink
     * between bind and chmod). */
    old = umask((mode_t)(~s->cfg.socket_mode & 0777));
    if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        umask(old);
        snprintf(err, errlen, "bind %s: %s", s->cfg.socket, strerror(errno));
        return -1;
    }
    umask(old);
    if (listen(s->lfd, 511) != 0) {
        snprintf(err, errlen, "%s: %s", s->cfg.socket, strerror(errno));
        return -1;
    }
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    s->sigfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s->epfd < 0 || s->sigfd < 0) {
        snprintf(err, errlen, "epoll/signalfd: %s", strerror(errno));
        return -1;
    }
    ev.events = EPOLLIN;
    ev.data.fd = s->lfd;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev);
    ev.data.fd = s->sigfd;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->sigfd, &ev);
    return 0;
}

static void client_free(server_t *s, client_t *c)
{
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    s->clients[c->fd] = NULL;
    s->nclients--;
    rbuf_free(&c->in);
    rbuf_free(&c->out);
    resp_parser_free(&c->parser);
    free(c);
}

static void accept_clients(server_t *s)
{
    for (;;) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        struct epoll_event ev;
        client_t *c;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR)
                rbd_log(LOG_WARNING, "accept: %s", strerror(errno));
            return;
        }
        s->connections++;
        if (s->nclients >= s->cfg.max_clients) {
            static const char full[] = "-ERR max number of clients reached\r\n";
            s->rejected_clients++;
            if (send(fd, full, sizeof(full) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
                rbd_log(LOG_DEBUG, "could not tell a rejected client why");
            close(fd);
            continue;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
            close(fd);
            continue;
        }
        if ((size_t)fd >= s->clients_cap) {
            size_t cap = s->clients_cap ? s->clients_cap : 64;
            client_t **n;
            while (cap <= (size_t)fd)
                cap *= 2;
            n = realloc(s->clients, cap * sizeof(*n));
            if (n == NULL) {
                close(fd);
                continue;
            }
            memset(n + s->clients_cap, 0, (cap - s->clients_cap) * sizeof(*n));
            s->clients = n;
            s->clients_cap = cap;
        }
        c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->id = ++s->next_client_id;
        c->uid = cred.uid;
        c->gid = cred.gid;
        c->pid = cred.pid;
        c->can_write = server_may_write(s, cred.uid, cred.gid);
        c->last_active_ms = rbd_mono_ms();
        resp_parser_init(&c->parser);
        s->clients[fd] = c;
        s->nclients++;
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
}

/* Executes every complete request in c's input buffer. */
static void process_input(server_t *s, client_t *c, size_t *inpos)
{
    resp_limits_t lim;

    resp_limits_init(&lim, s->cfg.max_request_bytes);

    while (!c->closing && !s->shutdown) {
        const char *base = c->in.data + *inpos;
        size_t avail = c->in.len - *inpos;
        const char *err;
        int rc = resp_parse(&c->parser, base, avail, &lim, &err);

        if (rc == RESP_MORE)
            return;   /* avail <= max-request-bytes: the parser refuses more */
        if (rc == RESP_ERR) {
            resp_error(&c->out, "ERR %s", err);
            s->protocol_errors++;
            c->closing = 1;
            return;
        }
        if (c->parser.nargs > 0) {
            if (c->parser.nargs > scratch_cap) {
                size_t cap = c->parser.nargs * 2;
                const char **a = realloc(scratch_argv, cap * sizeof(*a));
                size_t *l;
                if (a == NULL) {
                    c->closing = 1;
                    return;
                }
                scratch_argv = a;
                l = realloc(scratch_argl, cap * sizeof(*l));
                if (l == NULL) {
                    c->closing = 1;
                    return;
                }
                scratch_argl = l;
                scratch_cap = cap;
            }
            for (size_t i = 0; i < c->parser.nargs; i++) {
                scratch_argv[i] = resp_arg(&c->parser, base, i);
                scratch_argl[i] = c->parser.len[i];
            }
            {
                /* A command that appended a record acknowledges it:
                 * this client's replies now wait for the log. */
                size_t logged = s->persist.pending.len;
                rbd_execute(s, c, c->parser.nargs, scratch_argv, scratch_argl);
                if (s->persist.pending.len > logged || s->persist.pending.oom)
                    c->awaits_log = 1;
            }
        }
        *inpos += c->parser.pos;
        resp_parser_reset(&c->parser);
    }
}

/* Sets what epoll watches for c: input unless it is closing or its
 * replies pile up (backpressure), output while replies wait for a slow
 * reader. */
static void client_interest(server_t *s, client_t *c)
{
    struct epoll_event ev = { .events = 0, .data.fd = c->fd };

    if (!c->closing && c->out.len < OUT_LIMIT)
        ev.events |= EPOLLIN;
    if (c->writing)
        ev.events |= EPOLLOUT;
    /* epoll reports EPOLLHUP and EPOLLERR whatever the interest set, so a
     * client with nothing to wait for leaves the set: a hung-up client
     * whose replies wait for the log would otherwise wake every turn (a
     * busy loop).  It comes back when it has output to wait for. */
    if (ev.events == 0) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        return;
    }
    if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0 && errno == ENOENT)
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

static void client_read(server_t *s, client_t *c)
{
    size_t inpos = 0, turn = 0;
    int eof = 0;

    /* A bounded share per turn, so one busy client cannot starve the rest
     * (epoll is level-triggered: the remainder is read next turn). */
    while (turn < READ_TURN && c->out.len < OUT_LIMIT) {
        ssize_t n;
        if (c->in.cap - c->in.len < READ_CHUNK) {
            size_t cap = c->in.cap ? c->in.cap * 2 : READ_CHUNK * 2;
            char *d;
            if (inpos > 0) {
                /* Drop what was executed before growing. */
                rbuf_consume(&c->in, inpos);
                inpos = 0;
                continue;
            }
            d = realloc(c->in.data, cap);
            if (d == NULL) {
                c->closing = 1;
                break;
            }
            c->in.data = d;
            c->in.cap = cap;
        }
        n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
        if (n > 0) {
            c->in.len += (size_t)n;
            turn += (size_t)n;
            c->last_active_ms = rbd_mono_ms();
            process_input(s, c, &inpos);
            if (c->closing || s->shutdown)
                break;
            continue;
        }
        if (n == 0)
            eof = 1;
        else if (errno == EINTR)
            continue;
        else if (errno != EAGAIN)
            eof = 1;
        break;
    }
    /* Drop what was executed; keep a partial request. */
    if (inpos > 0)
        rbuf_consume(&c->in, inpos);
    if (c->in.len == 0 && c->in.cap > 4 * READ_CHUNK) {
        free(c->in.data);
        c->in.data = NULL;
        c->in.cap = 0;
    }
    if (eof)
        c->closing = 1;
    if (c->closing || c->out.len >= OUT_LIMIT)
        client_interest(s, c);
}

/* Sends queued replies; returns 0 if the client is still alive. */
static int client_write(server_t *s, client_t *c)
{
    size_t off = 0;

    while (off < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + off, c->out.len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        client_free(s, c);
        return -1;
    }
    if (off > 0)
        rbuf_consume(&c->out, off);
    {
        int was = c->writing, was_full = c->out.len + off >= OUT_LIMIT;
        c->writing = c->out.len > 0;
        if (was != c->writing || (was_full && c->out.len < OUT_LIMIT))
            client_interest(s, c);
    }
    if (c->out.len == 0 && c->closing) {
        client_free(s, c);
        return -1;
    }
    if (c->out.oom) {
        rbd_log(LOG_WARNING, "client %llu: reply buffer out of memory, closing",
                (unsigned long long)c->id);
        client_free(s, c);
        return -1;
    }
    return 0;
}

static void reload(server_t *s)
{
    rbd_config_t fresh;
    const char *which;
    char err[512];

    if (rbd_load_config(&fresh, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "SIGHUP: configuration not reloaded: %s", err);
        return;
    }
    if (rbd_config_needs_restart(&s->cfg, &fresh, &which)) {
        rbd_log(LOG_WARNING, "SIGHUP: '%s' changed but takes a restart; "
                "the settings that can change now are applied", which);
        /* Keep every setting that cannot change at runtime as it is. */
        snprintf(fresh.instance, sizeof(fresh.instance), "%s", s->cfg.instance);
        snprintf(fresh.socket, sizeof(fresh.socket), "%s", s->cfg.socket);
        snprintf(fresh.pidfile, sizeof(fresh.pidfile), "%s", s->cfg.pidfile);
        snprintf(fresh.dir, sizeof(fresh.dir), "%s", s->cfg.dir);
        fresh.socket_mode = s->cfg.socket_mode;
        fresh.segment_mode = s->cfg.segment_mode;
        fresh.max_memory = s->cfg.max_memory;
        fresh.max_filters = s->cfg.max_filters;
        fresh.ring_mode = s->cfg.ring_mode;
        fresh.ring_replicas = s->cfg.ring_replicas;
    }
    s->cfg = fresh;
    rbd_log_level(s->cfg.loglevel);
    for (size_t fd = 0; fd < s->clients_cap; fd++)
        if (s->clients[fd] != NULL)
            s->clients[fd]->can_write =
                server_may_write(s, s->clients[fd]->uid, s->clients[fd]->gid);
    rbd_log(LOG_NOTICE, "configuration reloaded");
}

static void handle_signals(server_t *s)
{
    struct signalfd_siginfo si;

    while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
            reload(s);
        } else {
            rbd_log(LOG_NOTICE, "received %s, shutting down", si.ssi_signo == SIGTERM ? "SIGTERM"
                    : "SIGINT");
            s->shutdown = 1;
            s->shutdown_save = 1;
        }
    }
}

static void housekeeping(server_t *s, uint64_t now)
{
    if (now - s->last_heartbeat_ms >= 1000) {
        rb_segment_heartbeat(s->seg);
        s->last_heartbeat_ms = now;
        rbd_filters_tick(s, rbd_now_ms() / 1000);
        persist_tick(s, now);
    }
    if (s->cfg.timeout > 0) {
        for (size_t fd = 0; fd < s->clients_cap; fd++) {
            client_t *c = s->clients[fd];
            if (c != NULL && c->out.len == 0 &&
                now - c->last_active_ms > 1000ull * s->cfg.timeout) {
                s->timeouts++;
                client_free(s, c);
            }
        }
    }
}

int server_run(server_t *s)
{
    struct epoll_event ev[MAX_EVENTS];
    uint64_t last_tick = 0;
    int held;

    while (!s->shutdown) {
        int n = epoll_wait(s->epfd, ev, MAX_EVENTS, TICK_MS);
        uint64_t now;

        if (n < 0 && errno != EINTR) {
            rbd_log(LOG_WARNING, "epoll_wait: %s", strerror(errno));
            return -1;
        }
        for (int i = 0; i < n && !s->shutdown; i++) {
            int fd = ev[i].data.fd;
            client_t *c;
            if (fd == s->lfd) {
                accept_clients(s);
                continue;
            }
            if (fd == s->sigfd) {
                handle_signals(s);
                continue;
            }
            c = (size_t)fd < s->clients_cap ? s->clients[fd] : NULL;
            if (c != NULL && (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->closing &&
                c->out.len < OUT_LIMIT)
                client_read(s, c);
        }
        /* Group commit: one write (+ fsync) for the whole turn, then
         * replies.  If the log failed, only clients whose replies
         * acknowledge an unlogged record wait (P1); the others - reads,
         * MISCONF refusals, INFO - are answered. */
        held = persist_flush(s) != 0;
        for (size_t fd = 0; fd < s->clients_cap; fd++) {
            client_t *c = s->clients[fd];
            if (c == NULL)
                continue;
            if (!held)
                c->awaits_log = 0;
            if (c->awaits_log) {
                /* No EPOLLOUT while the replies are held: a writable
                 * socket would wake every turn for nothing. */
                if (c->writing) {
                    c->writing = 0;
                    client_interest(s, c);
                }
            } else if (c->out.len > 0 || c->closing) {
                client_write(s, c);
            }
        }
        now = rbd_mono_ms();
        if (now - last_tick >= TICK_MS) {
            housekeeping(s, now);
            last_tick = now;
        }
    }
    return 0;
}

void server_close(server_t *s)
{
    for (size_t fd = 0; fd < s->clients_cap; fd++)
        if (s->clients[fd] != NULL)
            client_free(s, s->clients[fd]);
    free(s->clients);
    s->clients = NULL;
    s->clients_cap = 0;
    if (s->lfd >= 0) {
        close(s->lfd);
        unlink(s->cfg.socket);
    }
    if (s->sigfd >= 0)
        close(s->sigfd);
    if (s->epfd >= 0)
        close(s->epfd);
    s->lfd = s->sigfd = s->epfd = -1;
    free(scratch_argv);
    free(scratch_argl);
    scratch_argv = NULL;
    scratch_argl = NULL;
    scratch_cap = 0;
}
