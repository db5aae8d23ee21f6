/*
 * cmd_acl.c - the ACL command, after Redis's: WHOAMI (the peer's Unix user),
 * CAT [category] (the categories, or a category's commands), LIST (the
 * rule sets in force, as Redis prints users: configured ones first, then
 * the defaults) and DRYRUN user command [arg...] (would that user be let
 * run it).  The rules themselves are acl.c's; a command's categories are
 * rbd_cmd_categories' (cmd_docs.c).
 *
 * Identities are the kernel's (SO_PEERCRED), so there is no ACL SETUSER,
 * AUTH or password: the rules come from the configuration (acl-user,
 * acl-group) and change with it on SIGHUP.  WHOAMI and CAT only read
 * (@read: every peer may); LIST and DRYRUN are @admin, as in Redis.
 * ACL's rows, CAT's listing and DRYRUN walk the command tables, so they
 * are cmd.c's (as COMMAND is): this file never calls into cmd.c.
 */
#include "config.h"

#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd_docs.h"

void rbd_cmd_acl(rbd_ctx_t *x)
{
    rbi_resp_error(x->out, "ERR unknown subcommand '%.*s'. Try ACL WHOAMI, ACL CAT, ACL LIST "
                   "or ACL DRYRUN.", (int)(x->argl[1] < 64 ? x->argl[1] : 64), x->argv[1]);
}

void rbd_cmd_acl_whoami(rbd_ctx_t *x)
{
    char name[256];

    rbd_acl_user_name(x->c->uid, name, sizeof(name));
    rbi_resp_bulk_str(x->out, name);
}

/* One ACL LIST line: "user NAME on nopass ~* &* RULES" (or "group NAME
 * ..." for a group's), counted or replied. */
static void list_line(rbd_ctx_t *x, size_t *n, int count_only, int group, uint32_t id,
                      const char *name, int set)
{
    char who[256], rules[2048], line[2400];

    (*n)++;
    if (count_only)
        return;
    if (name != NULL)
        snprintf(who, sizeof(who), "%s", name);
    else if (group)
        rbd_acl_group_name(id, who, sizeof(who));
    else
        rbd_acl_user_name(id, who, sizeof(who));
    rbd_acl_rules_text(&x->s->cfg.acl, set, rules, sizeof(rules));
    snprintf(line, sizeof(line), "%s %s on nopass ~* &* %s", group ? "group" : "user", who,
             rules);
    rbi_resp_bulk_str(x->out, line);
}

/* 1 if acl has acl-user lines for uid. */
static int has_user_rules(const rbd_acl_t *acl, uint32_t uid)
{
    for (size_t i = 0; i < acl->n; i++)
        if (!acl->set[i].group && acl->set[i].id == uid)
            return 1;
    return 0;
}

/* The lines of ACL LIST, counted or replied, in the order rbd_acl_resolve
 * reads them: acl-user lines, root and the daemon's user, allow-write-uid,
 * acl-group lines, allow-write-gid, and "default" (everyone else). */
static size_t list_lines(rbd_ctx_t *x, int count_only)
{
    const rbd_config_t *cfg = &x->s->cfg;
    size_t n = 0;

    for (size_t i = 0; i < cfg->acl.n; i++)
        if (!cfg->acl.set[i].group)
            list_line(x, &n, count_only, 0, cfg->acl.set[i].id, NULL, (int)i);
    if (!has_user_rules(&cfg->acl, 0))
        list_line(x, &n, count_only, 0, 0, NULL, RBD_ACL_ALL);
    if (getuid() != 0 && !has_user_rules(&cfg->acl, getuid()))
        list_line(x, &n, count_only, 0, getuid(), NULL, RBD_ACL_ALL);
    for (size_t i = 0; i < cfg->write_uids.n; i++) {
        uint32_t id = cfg->write_uids.id[i];
        if (id != 0 && id != getuid() && !has_user_rules(&cfg->acl, id))
            list_line(x, &n, count_only, 0, id, NULL, RBD_ACL_WRITER);
    }
    for (size_t i = 0; i < cfg->acl.n; i++)
        if (cfg->acl.set[i].group)
            list_line(x, &n, count_only, 1, cfg->acl.set[i].id, NULL, (int)i);
    for (size_t i = 0; i < cfg->write_gids.n; i++)
        list_line(x, &n, count_only, 1, cfg->write_gids.id[i], NULL, RBD_ACL_WRITER);
    list_line(x, &n, count_only, 0, 0, "default", RBD_ACL_READER);
    return n;
}

void rbd_cmd_acl_list(rbd_ctx_t *x)
{
    rbi_resp_array(x->out, list_lines(x, 1));
    list_lines(x, 0);
}

int rbd_cmd_acl_who(rbd_ctx_t *x, uid_t *uid, rbd_acl_who_t *who)
{
    char name[256], buf[4096], *end;
    struct passwd pw, *found = NULL;
    static gid_t groups[NGROUPS_MAX + 1];   /* the loop is one thread */
    int ngroups = 0;
    unsigned long n;

    snprintf(name, sizeof(name), "%.*s", (int)(x->argl[2] < 255 ? x->argl[2] : 255), x->argv[2]);
    if (getpwnam_r(name, &pw, buf, sizeof(buf), &found) != 0 || found == NULL) {
        n = strtoul(name, &end, 10);
        if (name[0] < '0' || name[0] > '9' || *end != '\0' || n >= (uid_t)-1) {
            rbi_resp_error(x->out, "ERR User '%s' not found", name);
            return -1;
        }
        if (getpwuid_r((uid_t)n, &pw, buf, sizeof(buf), &found) != 0)
            found = NULL;
        *uid = (uid_t)n;
    } else {
        *uid = found->pw_uid;
    }
    if (found != NULL) {
        ngroups = (int)(sizeof(groups) / sizeof(groups[0]));
        if (getgrouplist(found->pw_name, found->pw_gid, groups, &ngroups) < 0) {
            ngroups = 1;   /* more than NGROUPS_MAX: the primary group alone */
            groups[0] = found->pw_gid;
        }
    }
    rbd_acl_resolve(&x->s->cfg.acl, x->s->cfg.write_uids.id, x->s->cfg.write_uids.n,
                    x->s->cfg.write_gids.id, x->s->cfg.write_gids.n, getuid(), *uid, groups,
                    (size_t)ngroups, who);
    return 0;
}

int rbd_cmd_permitted(const server_t *s, const rbd_acl_who_t *who, uid_t uid,
                      const rbd_command_t *cmd, const rbd_command_t *sub, char *why,
                      size_t cap)
{
    char name[32], subname[32], user[256], rules[1024];

    int by_rules, others = ((sub ? sub : cmd)->flags & CMD_OTHERS) != 0;

    rbd_cmd_lower(cmd, name, sizeof(name));
    if (sub != NULL)
        rbd_cmd_lower(sub, subname, sizeof(subname));
    by_rules = rbd_acl_allows(&s->cfg.acl, who, name, sub ? subname : NULL,
                              rbd_cmd_categories(sub ? sub : cmd));
    if (by_rules && (!others || rbd_acl_is_admin(&s->cfg.acl, who)))
        return 1;
    if (why != NULL) {
        rbd_acl_user_name(uid, user, sizeof(user));
        rbd_acl_describe(&s->cfg.acl, who, rules, sizeof(rules));
        snprintf(why, cap, "User %s has no permissions to run the '%s%s%s' command (%s%s)",
                 user, name, sub ? "|" : "", sub ? subname : "", rules,
                 by_rules ? "; it acts on other connections or the whole server, which needs "
                            "an administrator: rules that grant @admin" : "");
    }
    return 0;
}

