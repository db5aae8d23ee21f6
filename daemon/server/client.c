/*
 * client.c - one client of ringbloomd: its connection and buffers, reading
 * its requests and running them (cmd.c) in order, writing its replies, and
 * the bounds on what it holds (docs/design.md, "Request flow and group
 * commit"; server.c's header has all four):
 *   B1 a client's unsent replies pass client-output-soft-limit by at most
 *      one reply: its pipeline pauses there (the rest of its requests wait,
 *      unread or unexecuted) until it reads; one reply that takes it past
 *      client-output-hard-limit closes it (inside an EXEC too: one
 *      member's reply, cmd.c);
 *   B2 all clients' buffers together (input, parser, output, the queue of
 *      a transaction) stay within max-client-memory: before a buffer
 *      grows past it, the client holding the most is closed (an EXEC
 *      whose replies would grow past it: that client, one member's reply
 *      late).
 * When its replies may go is the loop's business (server.c: group
 * commit); a client whose command's op the sinks were shown (the log
 * appended its record) is marked awaits_flush here, and its replies wait
 * for their flush (P1); one whose ops a sink took counts their tickets in
 * awaits_reply, and its later requests wait for every answer (sink.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include "cmd.h"
#include "server.h"

#define READ_CHUNK   (64u * 1024u)
#define READ_TURN    (16u * READ_CHUNK)  /* bytes read per client per loop turn */
#define KEEP_BUF     (4u * READ_CHUNK)   /* an idle client keeps buffers up to this */
/* A client's pipeline runs at most this long per loop turn (commands are
 * not cut: one that starts runs to its end), then yields to the others:
 * a pipeline of costly commands otherwise stalls them for the sum. */
#define RUN_TURN_MS  20u

/* Brings c's share of client_mem up to date with its buffers. */
static void client_account(server_t *s, client_t *c)
{
    uint64_t now = c->in.cap + c->out.cap + c->txn.queue.cap + resp_parser_memory(&c->parser);

    s->client_mem = s->client_mem - c->mem + now;
    c->mem = now;
}

void rbd_client_free(server_t *s, client_t *c)
{
    if (c->monitor)
        s->obs.monitors--;
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    s->clients[c->fd] = NULL;
    s->nclients--;
    s->client_mem -= c->mem;
    rbi_buf_free(&c->in);
    rbi_buf_free(&c->out);
    rbd_txn_reset(&c->txn);
    resp_parser_free(&c->parser);
    free(c->name);
    free(c->lib_name);
    free(c->lib_ver);
    free(c);
    if (s->accept_paused)
        s->accept_resume_ms = 0;   /* a descriptor is free: try again now */
}

/* A client for connection fd of the peer cred, watched for input; fd is
 * closed if there is no memory for it. */
void rbd_client_new(server_t *s, int fd, const struct ucred *cred, const rbd_acl_who_t *who)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    client_t *c;

    if ((size_t)fd >= s->clients_cap) {
        size_t cap = s->clients_cap ? s->clients_cap : 64;
        client_t **n;
        while (cap <= (size_t)fd)
            cap *= 2;
        n = realloc(s->clients, cap * sizeof(*n));
        if (n == NULL) {
            close(fd);
            return;
        }
        memset(n + s->clients_cap, 0, (cap - s->clients_cap) * sizeof(*n));
        s->clients = n;
        s->clients_cap = cap;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->id = ++s->next_client_id;
    c->uid = cred->uid;
    c->gid = cred->gid;
    c->pid = cred->pid;
    c->who = *who;
    c->last_active_ms = c->created_ms = rbd_mono_ms();
    resp_parser_init(&c->parser);
    s->clients[fd] = c;
    s->nclients++;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* Sets what epoll watches for c: input unless it is closing or paused
 * (B1: its replies pile up), output while replies wait for a slow
 * reader. */
void rbd_client_interest(server_t *s, client_t *c)
{
    struct epoll_event ev = { .events = 0, .data.fd = c->fd };

    if (!c->closing && !c->paused)
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

/* Closes c as soon as a short error reply is out, giving its buffers back
 * at once (B1, B2).  Its unsent replies are dropped: a closed client
 * acknowledges nothing, so P1 is not at stake. */
static void client_drop(server_t *s, client_t *c, const char *why)
{
    rbi_buf_free(&c->in);
    rbi_buf_free(&c->out);
    rbd_txn_reset(&c->txn);
    resp_parser_free(&c->parser);
    rbi_resp_error(&c->out, "ERR %s", why);
    c->closing = 1;
    c->paused = 0;
    c->awaits_flush = 0;
    client_account(s, c);
    rbd_client_interest(s, c);
}

/* B2: closes the clients holding the most until `extra` more bytes fit in
 * max-client-memory.  A client whose buffers are no larger than a read
 * chunk is never worth closing for it (and has nothing to give back). */
static void make_room(server_t *s, uint64_t extra)
{
    while (s->client_mem + extra > s->cfg.max_client_memory) {
        client_t *big = NULL;
        for (size_t fd = 0; fd < s->clients_cap; fd++) {
            client_t *c = s->clients[fd];
            if (c != NULL && (big == NULL || c->mem > big->mem))
                big = c;
        }
        if (big == NULL || big->mem <= READ_CHUNK)
            return;
        s->evicted_clients++;
        rbd_log_every(&s->log_evict, RBD_LOG_EVERY_MS, LOG_WARNING, "closing client %llu (uid %u, "
                      "pid %d): all clients' buffers would exceed max-client-memory (%llu "
                      "bytes) and its %llu bytes are the most", (unsigned long long)big->id,
                      (unsigned)big->uid, (int)big->pid,
                      (unsigned long long)s->cfg.max_client_memory,
                      (unsigned long long)big->mem);
        client_drop(s, big, "closed: all clients' buffers exceed max-client-memory");
    }
}

/* Appends data (a MONITOR line) to c's unsent replies, which the loop
 * sends at the end of its turn.  Bounded as replies are (B1, B2): past
 * client-output-hard-limit, or with all clients' buffers past
 * max-client-memory, c is closed instead (its replies dropped). */
static void client_push(server_t *s, client_t *c, const void *data, size_t len)
{
    if (c->closing)
        return;
    if (c->out.len + len > s->cfg.output_hard_limit ||
        s->client_mem + len > s->cfg.max_client_memory) {
        s->output_limit_clients++;
        client_drop(s, c, "its MONITOR feed passed client-output-hard-limit or "
                    "max-client-memory");
        return;
    }
    rbi_buf_append(&c->out, data, len);
    client_account(s, c);
}

/* MONITOR: a request of c, as it is run, to every other monitoring
 * client (observe.c writes the line). */
static void monitor_feed(server_t *s, const client_t *c, size_t argc, const char **argv,
                         const size_t *argl)
{
    rbi_buf_t line = { 0 };

    rbd_monitor_line(s, argc, argv, argl, &line);
    for (size_t fd = 0; !line.oom && fd < s->clients_cap; fd++) {
        client_t *m = s->clients[fd];
        if (m != NULL && m != c && m->monitor)
            client_push(s, m, line.data, line.len);
    }
    rbi_buf_free(&line);
}

/* CLIENT PAUSE (cmd_client.c): whether the request the parser completed
 * in base waits (it stays in c's input; the loop runs it when the pause
 * ends).  CLIENT itself never waits, so CLIENT UNPAUSE gets through; with
 * WRITE only the commands that change state wait (EXEC with a change
 * queued, not the queueing). */
static int held_by_pause(const server_t *s, const client_t *c, const char *base)
{
    const rbd_command_t *cmd;

    if (s->pause_until_ms == 0 || rbd_mono_ms() >= s->pause_until_ms || c->parser.nargs == 0)
        return 0;
    cmd = rbd_cmd_lookup(resp_arg(&c->parser, base, 0), c->parser.len[0]);
    if (cmd != NULL && strcmp(cmd->name, "CLIENT") == 0)
        return 0;
    if (!s->pause_writes || cmd == NULL)
        return 1;
    if (c->txn.active)
        return strcmp(cmd->name, "EXEC") == 0 && (c->txn.writes || (cmd->flags & CMD_WRITE));
    return (cmd->flags & CMD_WRITE) != 0;
}

/* Runs the request the parser completed in base (c's input): its reply
 * goes to c->out.  0, or -1 if its arguments could not be gathered (out of
 * memory: c closes). */
static int execute(server_t *s, client_t *c, const char *base)
{
    uint64_t seen = s->state.sinks.seen, opened = s->state.sinks.opened;

    if (c->parser.nargs > s->argv_cap) {
        size_t cap = c->parser.nargs * 2;
        const char **a = realloc(s->argv, cap * sizeof(*a));
        if (a == NULL)
            return -1;
        s->argv = a;
        s->argv_cap = cap;
    }
    for (size_t i = 0; i < c->parser.nargs; i++)
        s->argv[i] = resp_arg(&c->parser, base, i);
    if (s->obs.monitors > 0)
        monitor_feed(s, c, c->parser.nargs, s->argv, c->parser.len);
    rbd_cmd_execute(s, c, c->parser.nargs, s->argv, c->parser.len);
    c->last_active_ms = s->clock_us / 1000;   /* its end (dispatch) */
    /* A command whose op the sinks were shown acknowledges it: this
     * client's replies now wait for their flush (the log's, P1).  One
     * whose op a sink took waits for its ticket (sink.h). */
    if (s->state.sinks.seen != seen || s->aof.pending.oom)
        c->awaits_flush = 1;
    c->awaits_reply += s->state.sinks.opened - opened;
    return 0;
}

/* Executes the complete requests in c's input, in order, and consumes
 * them, until only a partial request is left, c closes, its replies
 * reach client-output-soft-limit (B1: c pauses; the rest runs once they
 * drain, rbd_clients_resume), or it has run RUN_TURN_MS (the rest runs
 * next turn, after the other clients' events: returns 1).  A reply that
 * takes c past client-output-hard-limit closes it, and so does an EXEC
 * whose replies passed a limit while they were built (cmd.c cut them:
 * exec_cut). */
static int run_input(server_t *s, client_t *c)
{
    resp_limits_t lim;
    size_t done = 0;
    uint64_t start;
    int yielded = 0;

    s->clock_us = rbd_mono_us();   /* then each command's end (dispatch) */
    start = s->clock_us / 1000;

    resp_limits_init(&lim, s->cfg.max_request_bytes);
    while (!c->closing && !s->shutdown && !c->awaits_reply) {
        const char *base = c->in.data + done;
        const char *err;
        int rc;

        if (c->out.len >= s->cfg.output_soft_limit) {
            c->paused = 1;
            break;
        }
        if (done > 0 && done < c->in.len && s->clock_us / 1000 - start >= RUN_TURN_MS) {
            s->resume_pending = 1;   /* rbd_clients_resume runs the rest */
            yielded = 1;
            break;
        }
        rc = resp_parse(&c->parser, base, c->in.len - done, &lim, &err);
        if (rc == RESP_MORE)
            break;   /* what is left <= max-request-bytes: the parser refuses more */
        if (rc == RESP_ERR) {
            rbi_resp_error(&c->out, "ERR %s", err);
            s->protocol_errors++;
            c->closing = 1;
            break;
        }
        if (held_by_pause(s, c, base)) {
            resp_parser_reset(&c->parser);   /* parsed again when the pause ends */
            break;
        }
        if (c->parser.nargs > 0 && execute(s, c, base) != 0) {
            c->closing = 1;
            break;
        }
        done += c->parser.pos;
        resp_parser_reset(&c->parser);
        if (c->exec_cut == RBD_CUT_MEMORY) {
            s->evicted_clients++;
            rbd_log_every(&s->log_evict, RBD_LOG_EVERY_MS, LOG_WARNING, "closing client %llu "
                          "(uid %u, pid %d): the replies of its EXEC would take all clients' "
                          "buffers past max-client-memory (%llu bytes)",
                          (unsigned long long)c->id, (unsigned)c->uid, (int)c->pid,
                          (unsigned long long)s->cfg.max_client_memory);
            client_drop(s, c, "closed: all clients' buffers exceed max-client-memory");
            return 0;
        }
        if (c->out.len > s->cfg.output_hard_limit || c->exec_cut == RBD_CUT_OUTPUT) {
            s->output_limit_clients++;
            rbd_log_every(&s->log_evict, RBD_LOG_EVERY_MS, LOG_WARNING, "closing client %llu "
                          "(uid %u, pid %d): its unsent replies (%zu bytes) passed "
                          "client-output-hard-limit (%llu)", (unsigned long long)c->id,
                          (unsigned)c->uid, (int)c->pid, c->out.len,
                          (unsigned long long)s->cfg.output_hard_limit);
            client_drop(s, c, "closed: unsent replies passed client-output-hard-limit");
            return 0;
        }
    }
    if (done > 0)
        rbi_buf_consume(&c->in, done);
    if (c->in.len == 0 && c->in.cap > KEEP_BUF)
        rbi_buf_free(&c->in);
    client_account(s, c);
    make_room(s, 0);
    return yielded;
}

void rbd_client_read(server_t *s, client_t *c)
{
    size_t turn = 0;
    int eof = 0;

    /* A bounded share per turn, so one busy client cannot starve the rest
     * (epoll is level-triggered: the remainder is read next turn). */
    while (turn < READ_TURN && !c->paused && !c->closing && !s->shutdown) {
        size_t room;
        ssize_t n;
        if (c->in.cap - c->in.len < READ_CHUNK) {
            size_t cap = c->in.cap ? c->in.cap * 2 : READ_CHUNK * 2;
            char *d;
            make_room(s, cap - c->in.cap);
            if (c->closing)
                break;   /* c itself held the most */
            d = realloc(c->in.data, cap);
            if (d == NULL) {
                c->closing = 1;
                break;
            }
            c->in.data = d;
            c->in.cap = cap;
            client_account(s, c);
        }
        room = c->in.cap - c->in.len;
        n = read(c->fd, c->in.data + c->in.len, room);
        if (n > 0) {
            c->in.len += (size_t)n;
            s->stats.net_in += (uint64_t)n;
            turn += (size_t)n;
            if (run_input(s, c))
                break;   /* its turn is over; the rest is read later */
            /* Less than asked for: the socket is drained (whatever comes
             * now, epoll reports next turn), so no second read just to
             * hear EAGAIN: one read per request, as redis-server. */
            if ((size_t)n < room)
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
    if (eof)
        c->closing = 1;
    if (c->closing || c->paused)
        rbd_client_interest(s, c);
}

/* B1: runs the waiting requests of paused clients whose replies drained
 * (rbd_client_write clears `paused` and sets resume_pending). */
void rbd_clients_resume(server_t *s)
{
    s->resume_pending = 0;
    for (size_t fd = 0; fd < s->clients_cap; fd++) {
        client_t *c = s->clients[fd];
        if (c == NULL || c->paused || c->awaits_reply || c->closing || c->in.len == 0)
            continue;
        run_input(s, c);
        if (c->paused || c->closing)
            rbd_client_interest(s, c);
    }
}


/* Sends queued replies; returns 0 if the client is still alive. */
int rbd_client_write(server_t *s, client_t *c)
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
        rbd_client_free(s, c);
        return -1;
    }
    if (off > 0) {
        s->stats.net_out += off;
        rbi_buf_consume(&c->out, off);
        c->last_active_ms = rbd_mono_ms();
    }
    if (c->out.len == 0 && c->out.cap > KEEP_BUF)
        rbi_buf_free(&c->out);
    client_account(s, c);
    if (c->out.len == 0 && c->closing) {
        rbd_client_free(s, c);
        return -1;
    }
    if (c->out.oom) {
        rbd_log(LOG_WARNING, "client %llu: reply buffer out of memory, closing",
                (unsigned long long)c->id);
        rbd_client_free(s, c);
        return -1;
    }
    {
        int was = c->writing, was_paused = c->paused;
        c->writing = c->out.len > 0;
        if (c->paused && c->out.len < s->cfg.output_soft_limit) {
            /* Drained below the soft limit: its waiting requests run at
             * the start of the next turn (so their records go through
             * the group commit like any other), then input is read. */
            c->paused = 0;
            if (c->in.len > 0)
                s->resume_pending = 1;
        }
        if (was != c->writing || was_paused != c->paused)
            rbd_client_interest(s, c);
    }
    return 0;
}

