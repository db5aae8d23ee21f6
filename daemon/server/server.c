/*
 * server.c - ringbloomd's event loop: one epoll loop over the listener, a
 * signalfd and non-blocking Unix socket clients with pipelining
 * (client.c); access tiers by peer credentials (acl.c), limits, idle timeouts,
 * SIGHUP reloads, housekeeping and group commit.
 *
 * One loop turn: read every readable client and execute every complete
 * request it sent (cmd.c; replies are appended to its output buffer), then
 * write the log records of the whole turn with one write (and one fsync
 * when needed: the op sinks' flush, sink.h, the log's rbd_aof_flush), and
 * only then send the replies.  If the log
 * cannot be written the replies of the clients whose commands it could
 * not log stay queued (nothing unlogged is ever acknowledged), further
 * mutations are refused until it can, and everything else is answered.
 *
 * Bounds a client cannot talk its way past (docs/design.md, "Request
 * flow and group commit"):
 *   B1 a client's unsent replies pass client-output-soft-limit by at most
 *      one reply: its pipeline pauses there (the rest of its requests wait,
 *      unread or unexecuted) until it reads; one reply that takes it past
 *      client-output-hard-limit closes it;
 *   B2 all clients' buffers together (input, parser, output) stay within
 *      max-client-memory: before a buffer grows past it, the client
 *      holding the most is closed;
 *   B3 max-clients fits the descriptor limit (raised at start, or
 *      max-clients lowered); out of descriptors anyway, a waiting client
 *      is told so on a spare descriptor, and the listener is left alone
 *      for a second if even that fails: no busy loop, one log line per
 *      interval;
 *   B4 the last reserved-writer-clients connections are only for clients
 *      that may write, so idle readers cannot lock the writers out.
 * B1 and B2 are kept by client.c, B3 and B4 here.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "cmd.h"
#include "dirs.h"
#include "filters.h"
#include "ready.h"
#include "server.h"

#define MAX_EVENTS   256
#define TICK_MS      100
#define RESERVED_FDS 32u     /* descriptors besides the clients': listener, epoll,
                                signalfd, log, state dir, pidfile, segment,
                                syslog, snapshot files, the spare (B3) */
#define ACCEPT_PAUSE_MS 1000u

/* The ACL rule sets (acl.c, rbd_acl_resolve) of the peer of fd (uid,
 * primary gid) under the current configuration.  Group rules (acl-group,
 * allow-write-gid) also match the peer's supplementary groups as the
 * kernel recorded them at connect (SO_PEERGROUPS): a user such as
 * www-data added to group ringbloom has it only as a supplementary
 * group. */
static void peer_acl(const server_t *s, int fd, uid_t uid, gid_t gid, rbd_acl_who_t *who)
{
    static gid_t groups[NGROUPS_MAX + 2];   /* the loop is one thread */
    socklen_t len = sizeof(groups) - sizeof(groups[0]);
    size_t n = 1;

    groups[0] = gid;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups + 1, &len) == 0)
        n += len / sizeof(groups[0]);
    rbd_acl_resolve(&s->cfg.acl, s->cfg.write_uids.id, s->cfg.write_uids.n,
                    s->cfg.write_gids.id, s->cfg.write_gids.n, getuid(), uid, groups, n, who);
}

/* B3: raises the descriptor limit to what max-clients needs, or lowers
 * max-clients to fit the limit (logged); at start and on SIGHUP. */
static void fit_fd_limit(server_t *s)
{
    rlim_t need = (rlim_t)s->cfg.max_clients + RESERVED_FDS;
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        struct rlimit want = rl;
        want.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
    }
    s->fd_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    if (s->fd_limit < need) {
        uint32_t fit = s->fd_limit > RESERVED_FDS + 1 ? (uint32_t)(s->fd_limit - RESERVED_FDS) : 1;
        rbd_log(LOG_WARNING, "max-clients %u needs %llu file descriptors but the limit is %llu "
                "and cannot be raised (ulimit -n, or LimitNOFILE= under systemd): max-clients "
                "lowered to %u", s->cfg.max_clients, (unsigned long long)need,
                (unsigned long long)s->fd_limit, fit);
        s->cfg.max_clients = fit;
    }
}

/* The limits the sources' changes keep to (state.h), from the settings. */
static void state_limits(server_t *s)
{
    s->state.limits.max_nodes = s->cfg.max_nodes;
    s->state.limits.max_ring_points = s->cfg.max_ring_points;
    s->state.limits.ring_down_max_percent = s->cfg.ring_down_max_percent;
}

int rbd_server_listen(server_t *s, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    struct epoll_event ev;
    sigset_t sigs;
    mode_t old;

    if (strlen(s->cfg.socket) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "socket path too long: %s", s->cfg.socket);
        return -1;
    }
    s->apply = rbd_server_apply;
    state_limits(s);
    if (rbd_slowlog_resize(&s->obs, s->cfg.slowlog_max_len) != 0) {
        snprintf(err, errlen, "out of memory for slowlog-max-len %u", s->cfg.slowlog_max_len);
        return -1;
    }
    if (rbd_make_dir(s->cfg.socket, 0, 0755, "socket", err, errlen) != 0)
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
    /* The group by path, but safely: rbd_make_dir judged the directory
     * one that only this user or root can change, so the name is still
     * the socket bound above (and AT_SYMLINK_NOFOLLOW would not follow a
     * link anyway).  Before listen: a connect before it is refused, so
     * nobody gets in under the group the socket was bound with. */
    if (fchownat(AT_FDCWD, s->cfg.socket, (uid_t)-1, s->cfg.socket_group,
                 AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(err, errlen, "unixsocketgroup: cannot give %s group %u: %s", s->cfg.socket,
                 (unsigned)s->cfg.socket_group, strerror(errno));
        return -1;
    }
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
    if (s->epfd < 0 || s->sigfd < 0 || rbd_snapshot_init(&s->snaps) < 0) {
        snprintf(err, errlen, "epoll/signalfd/eventfd: %s", strerror(errno));
        return -1;
    }
    fit_fd_limit(s);
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (s->spare_fd < 0) {
        snprintf(err, errlen, "/dev/null: %s", strerror(errno));
        return -1;
    }
    ev.events = EPOLLIN;
    ev.data.fd = s->lfd;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev);
    ev.data.fd = s->sigfd;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->sigfd, &ev);
    ev.data.fd = s->snaps.wakefd;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->snaps.wakefd, &ev);
    return 0;
}

/* Stops watching the listener until accept_resume_ms (housekeeping puts
 * it back, or rbd_client_free when a descriptor frees up): an accept error
 * that persists must not wake the loop every turn. */
static void accept_pause(server_t *s)
{
    if (!s->accept_paused)
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
    s->accept_paused = 1;
    s->accept_resume_ms = rbd_mono_ms() + ACCEPT_PAUSE_MS;
}

static void accept_resume(server_t *s)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = s->lfd };

    if (s->accept_paused && epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) == 0)
        s->accept_paused = 0;
}

/* Sends a refusal to a connection that will not become a client. */
static void refuse(int fd, const char *reply)
{
    if (send(fd, reply, strlen(reply), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        rbd_log(LOG_DEBUG, "could not tell a refused client why");
    close(fd);
}

/* Out of descriptors (B3): lends the spare to the waiting client just
 * long enough to tell it, so it does not hang and the listener does not
 * stay readable.  1 if accepting may go on, 0 if the listener was paused. */
static int refuse_out_of_fds(server_t *s)
{
    int e = errno, fd;

    close(s->spare_fd);
    fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
        s->connections++;
        s->rejected_clients++;
        refuse(fd, "-ERR max number of clients reached (the daemon is out of file "
               "descriptors)\r\n");
    }
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    rbd_log_every(&s->log_accept, RBD_LOG_EVERY_MS, LOG_WARNING, "accept: %s (limit %llu "
                  "descriptors, %u clients): refusing new clients", strerror(e),
                  (unsigned long long)s->fd_limit, s->nclients);
    if (fd >= 0 && s->spare_fd >= 0)
        return 1;
    accept_pause(s);
    return 0;
}

static void accept_clients(server_t *s)
{
    static const char full[] = "-ERR max number of clients reached\r\n";

    for (;;) {
        struct ucred cred;
        rbd_acl_who_t who;
        socklen_t len = sizeof(cred);
        uint32_t reserve;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0 && errno == EINTR)
            continue;
        if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && s->spare_fd >= 0) {
            if (refuse_out_of_fds(s))
                continue;
            return;
        }
        if (fd < 0) {
            rbd_log_every(&s->log_accept, RBD_LOG_EVERY_MS, LOG_WARNING, "accept: %s",
                          strerror(errno));
            accept_pause(s);
            return;
        }
        s->connections++;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
            close(fd);
            continue;
        }
        /* B4: the last `reserve` places are for clients the configuration
         * names (root, the daemon's user, acl-user, acl-group,
         * allow-write-*: not the default readers), at most half of them:
         * readers are never locked out. */
        reserve = s->cfg.reserved_writer_clients < s->cfg.max_clients / 2
                      ? s->cfg.reserved_writer_clients : s->cfg.max_clients / 2;
        peer_acl(s, fd, cred.uid, cred.gid, &who);
        if (s->nclients >= s->cfg.max_clients ||
            (s->nclients + reserve >= s->cfg.max_clients && !who.named)) {
            s->rejected_clients++;
            refuse(fd, full);
            continue;
        }
        rbd_client_new(s, fd, &cred, &who);
    }
}

int rbd_server_log_setup(server_t *s, int log_fd, char *err, size_t errlen)
{
    const rbd_log_setup_t o = { s->foreground, s->cfg.loglevel, s->cfg.logfile,
                                s->cfg.syslog_enabled, s->cfg.syslog_ident,
                                s->cfg.syslog_facility };

    return rbd_log_setup_fd(&o, log_fd, err, errlen);
}

static void reload(server_t *s)
{
    rbd_config_t fresh;
    const char *which;
    char err[4200];

    if (rbd_config_build(s->src, &fresh, err, sizeof(err)) != 0) {
        rbd_log(LOG_WARNING, "SIGHUP: configuration not reloaded: %s", err);
        return;
    }
    if (rbd_config_keep_restart_only(&fresh, &s->cfg, &which))
        rbd_log(LOG_WARNING, "SIGHUP: '%s' changed but takes a restart; "
                "the settings that can change now are applied", which);
    rbd_server_apply(s, &fresh, -1);
    rbd_log(LOG_NOTICE, "configuration reloaded");
}

void rbd_server_apply(server_t *s, const rbd_config_t *fresh, int log_fd)
{
    char old_logfile[sizeof(s->cfg.logfile)], err[4200];

    memcpy(old_logfile, s->cfg.logfile, sizeof(old_logfile));
    s->cfg = *fresh;
    state_limits(s);
    (void)rbd_slowlog_resize(&s->obs, s->cfg.slowlog_max_len);   /* else the old length */
    s->aof.appendfsync = s->cfg.appendfsync;
    /* CONFIG SET switched it already (its error is its reply); SIGHUP here. */
    if (rbd_appendonly_set(&s->snaps, &s->aof, s->state.seg, s->cfg.appendonly, err,
                           sizeof(err)) != 0) {
        s->cfg.appendonly = s->aof.enabled;
        rbd_log(LOG_WARNING, "appendonly not changed: %s", err);
    }
    fit_fd_limit(s);
    if (rbd_server_log_setup(s, log_fd, err, sizeof(err)) != 0) {
        /* CONFIG GET logfile names the file the lines still go to. */
        memcpy(s->cfg.logfile, old_logfile, sizeof(old_logfile));
        rbd_log(LOG_WARNING, "settings applied but %s; the log stays where it was", err);
    }
    for (size_t fd = 0; fd < s->clients_cap; fd++)
        if (s->clients[fd] != NULL) {
            peer_acl(s, (int)fd, s->clients[fd]->uid, s->clients[fd]->gid,
                     &s->clients[fd]->who);
            s->clients[fd]->acl_cmd = NULL;   /* permitted under the old rules */
            s->clients[fd]->acl_sub = NULL;
        }
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

/* A deferred reply's answer (sink.h: a sink completed its ticket): the
 * client that asked, if still there, gets it in its protocol, written as
 * the handler writes a local change's (cmd_util.c), and once every ticket
 * its command opened is answered, its requests after it run. */
void rbd_server_answer(void *arg, uint64_t id, const rbd_reply_t *r)
{
    server_t *s = arg;

    for (size_t fd = 0; fd < s->clients_cap; fd++) {
        client_t *c = s->clients[fd];
        rbd_ctx_t x = { .s = s, .c = c };

        if (c == NULL || c->id != id || c->awaits_reply == 0)
            continue;
        x.out = &c->out;
        rbd_cmd_reply_deferred(&x, r);
        if (--c->awaits_reply == 0 && c->in.len > 0)
            s->resume_pending = 1;
        return;
    }
}

static void housekeeping(server_t *s, uint64_t now)
{
    rbd_snapshot_poll(&s->snaps, &s->aof, now);
    rbd_ready_tick();   /* systemd's watchdog, if it asked for one */
    rbd_stats_tick(&s->stats, s->commands, now);   /* INFO's instantaneous rates */
    if (now - s->last_heartbeat_ms >= 1000) {
        /* The segment a snapshot is being written from stays until it is
         * done: a republish waits for the next second without one. */
        if (s->snaps.job == NULL)
            rbd_segwatch_check(&s->watch, &s->state, &s->cfg);
        rb_segment_heartbeat(s->state.seg);
        s->last_heartbeat_ms = now;
        rbd_filters_tick(&s->state, &s->aof, rbd_now_ms() / 1000);
        rbd_aof_tick(&s->aof);
        rbd_snapshot_tick(&s->snaps, &s->aof, s->state.seg, &s->cfg, now);
    }
    /* The sinks' tick, every housekeeping (TICK_MS): the etcd source's
     * failed publish's retry and its changes waited for 2 s; the NATS
     * filter source's writes answered by their time (nats-timeout and a
     * margin). */
    rbd_sinks_tick(&s->state.sinks, &s->state);
    if (s->pause_until_ms != 0 && now >= s->pause_until_ms) {
        s->pause_until_ms = 0;     /* CLIENT PAUSE is over: what waited runs */
        s->resume_pending = 1;
    }
    if (s->accept_paused && now >= s->accept_resume_ms)
        accept_resume(s);
    if (s->cfg.timeout > 0) {
        /* Idle: no complete request and no reply byte taken for `timeout`
         * seconds (bytes that never make a request do not count, nor do
         * replies the client does not read).  Replies held for the log
         * are the daemon's delay, not the client's. */
        for (size_t fd = 0; fd < s->clients_cap; fd++) {
            client_t *c = s->clients[fd];
            if (c != NULL && !c->awaits_flush && !c->awaits_reply && now > c->last_active_ms &&
                now - c->last_active_ms > 1000ull * s->cfg.timeout) {
                s->timeouts++;
                rbd_client_free(s, c);
            }
        }
    }
}

int rbd_server_run(server_t *s)
{
    struct epoll_event ev[MAX_EVENTS];
    uint64_t last_tick = 0, snap_ends = s->snaps.ends;
    int held;

    while (!s->shutdown) {
        int n = epoll_wait(s->epfd, ev, MAX_EVENTS, s->resume_pending ? 0 : TICK_MS);
        uint64_t now, turn0 = rbd_mono_ms(), flush0;

        if (n < 0 && errno != EINTR) {
            rbd_log(LOG_WARNING, "epoll_wait: %s", strerror(errno));
            return -1;
        }
        if (s->resume_pending)
            rbd_clients_resume(s);
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
            if (fd == s->snaps.wakefd) {
                rbd_snapshot_poll(&s->snaps, &s->aof, rbd_mono_ms());
                continue;
            }
            if (rbd_sinks_poll(&s->state.sinks, &s->state, fd))
                continue;   /* a sink's descriptor (the etcd source's eventfd) */
            c = (size_t)fd < s->clients_cap ? s->clients[fd] : NULL;
            if (c != NULL && (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->closing &&
                !c->paused)
                rbd_client_read(s, c);
        }
        /* Group commit: one write (+ fsync) for the whole turn (every
         * sink's flush: the log's), then replies.  If the log failed, only
         * clients whose replies acknowledge an unlogged record wait (P1);
         * the others - reads, MISCONF refusals, INFO - are answered. */
        flush0 = rbd_mono_ms();
        held = rbd_sinks_flush(&s->state.sinks) != 0;
        if (s->cfg.appendfsync == FSYNC_ALWAYS)
            rbd_latency_add(s, RBD_LAT_FSYNC, rbd_mono_ms() - flush0);
        for (size_t fd = 0; fd < s->clients_cap; fd++) {
            client_t *c = s->clients[fd];
            if (c == NULL)
                continue;
            if (!held)
                c->awaits_flush = 0;
            if (c->awaits_flush) {
                /* No EPOLLOUT while the replies are held: a writable
                 * socket would wake every turn for nothing. */
                if (c->writing) {
                    c->writing = 0;
                    rbd_client_interest(s, c);
                }
            } else if (c->out.len > 0 || c->closing) {
                rbd_client_write(s, c);
            }
        }
        now = rbd_mono_ms();
        if (now - last_tick >= TICK_MS) {
            housekeeping(s, now);
            last_tick = now;
        }
        /* The latency monitor's loop samples (observe.h). */
        if (s->snaps.ends != snap_ends) {
            snap_ends = s->snaps.ends;
            rbd_latency_add(s, RBD_LAT_SNAPSHOT, s->snaps.last_loop_us / 1000);
        }
        rbd_latency_add(s, RBD_LAT_EVENTLOOP, rbd_mono_ms() - turn0);
    }
    return 0;
}

void rbd_server_close(server_t *s)
{
    for (size_t fd = 0; fd < s->clients_cap; fd++)
        if (s->clients[fd] != NULL)
            rbd_client_free(s, s->clients[fd]);
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
    if (s->spare_fd >= 0)
        close(s->spare_fd);
    if (s->snaps.wakefd >= 0)
        close(s->snaps.wakefd);
    s->lfd = s->sigfd = s->epfd = s->spare_fd = s->snaps.wakefd = -1;
    free(s->argv);
    rbd_observe_free(&s->obs);
    s->argv = NULL;
    s->argv_cap = 0;
}
