/*
 * cmd.c - ringbloomd's dispatcher: finds a request's command in the
 * families' tables, checks its arity and what its flags demand (write
 * permission, a working log), and runs its handler.  BF.* follow
 * RedisBloom (names, arguments, replies, error strings) so a client
 * written for Redis works unchanged; RING.* and our options are ours.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmd.h"

/* Searched in this order: the write path first. */
static const rbd_command_t *const families[] = {
    rbd_cmd_bf_table, rbd_cmd_ring_table, rbd_cmd_server_table, rbd_cmd_keys_table,
};

static const rbd_command_t *lookup(const char *name, size_t len)
{
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
        for (const rbd_command_t *c = families[f]; c->name != NULL; c++)
            if (c->len == len && strncasecmp(name, c->name, len) == 0)
                return c;
    return NULL;
}

static void unknown_command(rbd_ctx_t *x)
{
    char args[160];
    size_t w = 0;

    args[0] = '\0';
    for (size_t i = 1; i < x->argc && w < 128; i++) {
        int n = snprintf(args + w, sizeof(args) - w, "'%.*s' ",
                         (int)(x->argl[i] < 128 - w ? x->argl[i] : 128 - w), x->argv[i]);
        if (n < 0)
            break;
        w += (size_t)n;
        if (w >= sizeof(args))
            w = sizeof(args) - 1;
    }
    rbi_resp_error(x->out, "ERR unknown command '%.*s', with args beginning with: %s",
               (int)(x->argl[0] < 128 ? x->argl[0] : 128), x->argv[0], args);
}

/* What the command's flags demand of the client and the log: 0, or
 * replies why not and returns -1. */
static int allowed(rbd_ctx_t *x)
{
    char lower[32];

    if ((x->cmd->flags & (CMD_WRITE | CMD_ADMIN)) && !x->c->can_write) {
        x->s->denied++;
        rbi_resp_error(x->out, "NOPERM this user (uid %u) has no permissions to run the '%s' "
                   "command", (unsigned)x->c->uid, rbd_cmd_lower(x->cmd, lower, sizeof(lower)));
        return -1;
    }
    if ((x->cmd->flags & CMD_WRITE) && rbd_aof_refuses(&x->s->aof)) {
        rbi_resp_error(x->out, "MISCONF the log in %s cannot be written; changes are refused "
                   "until it can (see the daemon's log)", x->s->aof.dir);
        return -1;
    }
    return 0;
}

void rbd_cmd_execute(server_t *s, client_t *c, size_t argc, const char **argv,
                     const size_t *argl)
{
    rbd_ctx_t x = { s, c, argc, argv, argl, &c->out, NULL };

    s->commands++;
    x.cmd = lookup(argv[0], argl[0]);
    if (x.cmd == NULL) {
        unknown_command(&x);
        return;
    }
    if ((x.cmd->arity > 0 && argc != (size_t)x.cmd->arity) ||
        (x.cmd->arity < 0 && argc < (size_t)-x.cmd->arity)) {
        rbd_cmd_wrong_arity(&x);
        return;
    }
    if (allowed(&x) != 0)
        return;
    x.cmd->fn(&x);
}
