/*
 * cmd_client.c - CLIENT: the connection's own subcommands (ID, GETNAME,
 * SETNAME, SETINFO, INFO: what Redis clients send on connecting; redis-py
 * and node-redis send SETINFO and ignore its errors), LIST, and the
 * administrative ones over every connection (KILL, PAUSE, UNPAUSE), each a
 * subcommand row (an access rule may name client|list alone), answered
 * as Redis 7.2 does; their table row and handlers.
 *
 * A connection sees and acts only on itself unless it is an administrator
 * (rbd_acl_is_admin): LIST shows a non-administrator its own line alone,
 * and KILL, PAUSE and UNPAUSE are CMD_OTHERS, which no rule gives to a
 * non-administrator (issue 41, 1: the reader tier's +@connection granted
 * them, as it would in Redis).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "cmd.h"

/* A connection's line of CLIENT INFO / LIST: every field of Redis 7.2's,
 * in its order (redis-py's parser reads sub, psub, qbuf, obl, omem,
 * tot-mem ... as integers and fails on a missing one), with what it means
 * here or zero, then the peer's credentials.  Its length. */
static size_t client_line(const server_t *s, const client_t *c, char *line, size_t cap)
{
    uint64_t now = rbd_mono_ms();
    char cmd[64] = "NULL", user[64];
    int n;

    if (c->last_cmd != NULL) {
        snprintf(cmd, sizeof(cmd), "%s%s%s", c->last_cmd, c->last_sub ? "|" : "",
                 c->last_sub ? c->last_sub : "");
        for (char *p = cmd; *p != '\0'; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    }
    rbd_acl_user_name(c->uid, user, sizeof(user));
    n = snprintf(line, cap, "id=%llu addr=%s:0 laddr=%s:0 fd=%d name=%s age=%llu "
                 "idle=%llu flags=%s db=0 sub=0 psub=0 ssub=0 multi=%d qbuf=%zu "
                 "qbuf-free=%zu argv-mem=0 multi-mem=0 rbs=%zu rbp=0 obl=0 oll=0 omem=%zu "
                 "tot-mem=%llu events=r cmd=%s user=%s redir=-1 resp=%d "
                 "lib-name=%s lib-ver=%s uid=%u pid=%d\n",
                 (unsigned long long)c->id, s->cfg.socket, s->cfg.socket,
                 c->fd, c->name ? c->name : "",
                 (unsigned long long)(now - c->created_ms) / 1000,
                 (unsigned long long)(now - c->last_active_ms) / 1000,
                 c->monitor ? "O" : c->txn.active ? "x" : "N",
                 c->txn.active ? (int)c->txn.count : -1,
                 c->in.len, c->in.cap - c->in.len, c->in.cap, c->out.len,
                 (unsigned long long)c->mem, cmd, user, c->out.resp3 ? 3 : 2,
                 c->lib_name ? c->lib_name : "", c->lib_ver ? c->lib_ver : "",
                 (unsigned)c->uid, (int)c->pid);
    return n > 0 && (size_t)n < cap ? (size_t)n : cap - 1;
}

static void client_info(rbd_ctx_t *x)
{
    char line[1024];

    rbi_resp_verbatim(x->out, line, client_line(x->s, x->c, line, sizeof(line)));
}

/* CLIENT LIST [TYPE normal] [ID id ...]: a line per connection (TYPE
 * other than normal: none; there are no replicas or pub/sub clients); to
 * a connection that is not an administrator's, its own line alone. */
static void client_list(rbd_ctx_t *x)
{
    rbi_buf_t b = { 0 };
    char line[1024];
    size_t ids = 0, none = 0;
    int admin = rbd_acl_is_admin(&x->s->cfg.acl, &x->c->who);

    for (size_t i = 2; i < x->argc; i++) {
        if (rbd_cmd_arg_is(x, i, "TYPE") && i + 1 < x->argc) {
            none = !rbd_cmd_arg_is(x, i + 1, "normal");
            i++;
        } else if (rbd_cmd_arg_is(x, i, "ID") && i + 1 < x->argc) {
            long long id;
            for (ids = i + 1; ids < x->argc; ids++)
                if (rbd_cmd_arg_ll(x, ids, &id) != 0 || id <= 0) {
                    rbi_resp_error(x->out, "ERR Invalid client ID");
                    return;
                }
            ids = i + 1;
            break;
        } else {
            rbi_resp_error(x->out, "ERR syntax error");
            return;
        }
    }
    for (size_t fd = 0; !none && fd < x->s->clients_cap; fd++) {
        const client_t *c = x->s->clients[fd];
        int want = c != NULL && !c->closing && (admin || c == x->c);
        if (want && ids > 0) {
            want = 0;
            for (size_t i = ids; i < x->argc && !want; i++) {
                long long id;
                want = rbd_cmd_arg_ll(x, i, &id) == 0 && (uint64_t)id == c->id;
            }
        }
        if (want)
            rbi_buf_append(&b, line, client_line(x->s, c, line, sizeof(line)));
    }
    if (b.oom)
        rbi_resp_error(x->out, "ERR out of memory");
    else
        rbi_resp_verbatim(x->out, b.data ? b.data : "", b.len);
    rbi_buf_free(&b);
}

/* CLIENT KILL addr (the old form: OK, or no such client) or CLIENT KILL
 * filter value ... (ID, USER, ADDR, LADDR, SKIPME yes|no: how many).  A
 * killed connection runs nothing more and is closed once its replies are
 * out (the loop closes a closing client); the caller's own, with SKIPME
 * no, after this reply. */
static void client_kill(rbd_ctx_t *x)
{
    long long id = 0, killed = 0;
    const char *user = NULL, *addr = NULL;
    size_t userl = 0, addrl = 0;
    int skipme = 1, old = x->argc == 3;
    char peer[300], name[64];

    if (old) {
        addr = x->argv[2];
        addrl = x->argl[2];
    }
    for (size_t i = 2; !old && i < x->argc; i += 2) {
        if (i + 1 >= x->argc) {
            rbi_resp_error(x->out, "ERR syntax error");
            return;
        }
        if (rbd_cmd_arg_is(x, i, "ID")) {
            if (rbd_cmd_arg_ll(x, i + 1, &id) != 0 || id <= 0) {
                rbi_resp_error(x->out, "ERR client-id should be greater than 0");
                return;
            }
        } else if (rbd_cmd_arg_is(x, i, "USER")) {
            user = x->argv[i + 1];
            userl = x->argl[i + 1];
        } else if (rbd_cmd_arg_is(x, i, "ADDR") || rbd_cmd_arg_is(x, i, "LADDR")) {
            addr = x->argv[i + 1];
            addrl = x->argl[i + 1];
        } else if (rbd_cmd_arg_is(x, i, "SKIPME")) {
            if (!rbd_cmd_arg_is(x, i + 1, "yes") && !rbd_cmd_arg_is(x, i + 1, "no")) {
                rbi_resp_error(x->out, "ERR syntax error");
                return;
            }
            skipme = rbd_cmd_arg_is(x, i + 1, "yes");
        } else {
            rbi_resp_error(x->out, "ERR syntax error");
            return;
        }
    }
    snprintf(peer, sizeof(peer), "%s:0", x->s->cfg.socket);
    for (size_t fd = 0; fd < x->s->clients_cap; fd++) {
        client_t *c = x->s->clients[fd];
        if (c == NULL || c->closing || (c == x->c && skipme && !old))
            continue;
        if (id > 0 && c->id != (uint64_t)id)
            continue;
        if (addr != NULL && (addrl != strlen(peer) || memcmp(addr, peer, addrl) != 0))
            continue;
        if (user != NULL) {
            rbd_acl_user_name(c->uid, name, sizeof(name));
            if (userl != strlen(name) || memcmp(user, name, userl) != 0)
                continue;
        }
        c->closing = 1;
        killed++;
        if (old)
            break;
    }
    if (!old)
        rbi_resp_int(x->out, killed);
    else if (killed > 0)
        rbi_resp_simple(x->out, "OK");
    else
        rbi_resp_error(x->out, "ERR No such client");
}

/* CLIENT PAUSE timeout [WRITE | ALL]: every other connection's commands
 * (WRITE: those that change state) wait timeout ms, unread (client.c
 * holds them in their input, the loop runs them when the pause ends);
 * CLIENT UNPAUSE ends it now.  A second PAUSE lengthens it, never
 * shortens it, and ALL wins over WRITE, as Redis. */
static void client_pause(rbd_ctx_t *x)
{
    long long ms;
    int writes = 0;

    if (rbd_cmd_arg_ll(x, 2, &ms) != 0 || ms < 0) {
        rbi_resp_error(x->out, "ERR timeout is not an integer or out of range");
        return;
    }
    if (x->argc == 4 && rbd_cmd_arg_is(x, 3, "WRITE"))
        writes = 1;
    else if (x->argc == 4 && !rbd_cmd_arg_is(x, 3, "ALL")) {
        rbi_resp_error(x->out, "ERR syntax error");
        return;
    }
    if (x->argc > 4) {
        rbi_resp_error(x->out, "ERR syntax error");
        return;
    }
    /* ALL over WRITE while both are in force, the later end of the two. */
    x->s->pause_writes = writes && (x->s->pause_until_ms == 0 || x->s->pause_writes);
    if (rbd_mono_ms() + (uint64_t)ms > x->s->pause_until_ms)
        x->s->pause_until_ms = rbd_mono_ms() + (uint64_t)ms;
    rbi_resp_simple(x->out, "OK");
}

static void client_unpause(rbd_ctx_t *x)
{
    x->s->pause_until_ms = 0;
    x->s->resume_pending = 1;   /* what waited runs at the next turn */
    rbi_resp_simple(x->out, "OK");
}

static void client_id(rbd_ctx_t *x)
{
    rbi_resp_int(x->out, (long long)x->c->id);
}

static void client_getname(rbd_ctx_t *x)
{
    if (x->c->name != NULL)
        rbi_resp_bulk_str(x->out, x->c->name);
    else
        rbi_resp_nil(x->out);
}

static void client_setname(rbd_ctx_t *x)
{
    if (rbd_cmd_set_name(x, 2, "Client names", &x->c->name) == 0)
        rbi_resp_simple(x->out, "OK");
}

static void client_setinfo(rbd_ctx_t *x)
{
    char **slot = rbd_cmd_arg_is(x, 2, "LIB-NAME") ? &x->c->lib_name
                  : rbd_cmd_arg_is(x, 2, "LIB-VER") ? &x->c->lib_ver : NULL;

    if (slot == NULL)
        rbi_resp_error(x->out, "ERR Unrecognized option '%.*s'",
                       (int)(x->argl[2] < 64 ? x->argl[2] : 64), x->argv[2]);
    else if (rbd_cmd_set_name(x, 3, slot == &x->c->lib_name ? "lib-name" : "lib-ver", slot) == 0)
        rbi_resp_simple(x->out, "OK");
}

/* CLIENT with a subcommand it does not have. */
static void cmd_client(rbd_ctx_t *x)
{
    rbi_resp_error(x->out, "ERR unknown subcommand '%.*s'. Try CLIENT ID, GETNAME, SETNAME, "
                   "SETINFO, INFO, LIST, KILL, PAUSE or UNPAUSE.",
                   (int)(x->argl[1] < 64 ? x->argl[1] : 64), x->argv[1]);
}

static const rbd_command_t client_subs[] = {
    RBD_SUBCOMMAND("ID", 2, 0, client_id, "connection", "Returns the connection's id", ""),
    RBD_SUBCOMMAND("GETNAME", 2, 0, client_getname, "connection",
                   "Returns the connection's name", ""),
    RBD_SUBCOMMAND("SETNAME", 3, 0, client_setname, "connection", "Names the connection",
                   "connection-name"),
    RBD_SUBCOMMAND("SETINFO", 4, 0, client_setinfo, "connection",
                   "Records the client library's name or version",
                   "(LIB-NAME libname | LIB-VER libver)"),
    RBD_SUBCOMMAND("INFO", 2, 0, client_info, "connection", "Describes the connection", ""),
    RBD_SUBCOMMAND("LIST", -2, 0, client_list, "connection",
                   "Describes every connection (an administrator's), or this one",
                   "[TYPE type] [ID client-id:integer...]"),
    RBD_SUBCOMMAND("KILL", -3, CMD_ADMIN | CMD_OTHERS, client_kill, "connection",
                   "Closes connections by id, user or address",
                   "(addr | (ID client-id:integer | USER username | ADDR addr | LADDR laddr | "
                   "SKIPME yesno)...)"),
    RBD_SUBCOMMAND("PAUSE", -3, CMD_ADMIN | CMD_OTHERS, client_pause, "connection",
                   "Holds other connections' commands (or their writes) for a while",
                   "timeout:integer [WRITE | ALL]"),
    RBD_SUBCOMMAND("UNPAUSE", 2, CMD_ADMIN | CMD_OTHERS, client_unpause, "connection",
                   "Ends a CLIENT PAUSE", ""),
    RBD_COMMAND_END,
};

const rbd_command_t rbd_cmd_client_table[] = {
    RBD_COMMAND_SUBS("CLIENT", -2, 0, client_subs, cmd_client, "connection",
                     "Describes, names or closes connections",
                     "(ID | GETNAME | SETNAME connection-name | SETINFO (LIB-NAME libname | "
                     "LIB-VER libver) | INFO | LIST [TYPE type] | KILL (ID client-id:integer | "
                     "USER username | ADDR addr | SKIPME yesno)... | PAUSE timeout:integer "
                     "[WRITE | ALL] | UNPAUSE)"),
    RBD_COMMAND_END,
};
