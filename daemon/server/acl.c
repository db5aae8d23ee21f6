/*
 * acl.c - ringbloomd's access tiers as Redis ACL rules (acl.h): the
 * category names, the parser of the acl-user / acl-group settings, which
 * rule sets a peer gets from its Unix identity (SO_PEERCRED: no
 * passwords), and the check of a command against them.
 *
 * A rule set is read as Redis applies rules to a user: from an empty set,
 * in order, each rule adds or takes away the commands it matches, so for
 * one command the last rule that matches it decides, and a command no
 * rule matches is refused.
 */
#include "config.h"

#include <ctype.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acl.h"

static const char *const cat_names[RBD_ACL_NCATS] = {
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
    "connection", "transaction", "scripting", "bloom", "cuckoo", "cms", "topk", "tdigest",
    "ring", "admit",
};

/* The built-in rule sets (RBD_ACL_ALL, _WRITER, _READER: index -1 - i). */
static const rbd_acl_rule_t builtin_all[] = { { 1, 0, "" } };
static const rbd_acl_rule_t builtin_writer[] = {
    { 1, 0, "" }, { 0, ACL_ADMIN, "" }, { 0, ACL_DANGEROUS, "" },
};
static const rbd_acl_rule_t builtin_reader[] = {
    { 1, ACL_READ, "" }, { 1, ACL_CONNECTION, "" }, { 1, ACL_TRANSACTION, "" },
};
static const struct {
    const rbd_acl_rule_t *rule;
    size_t n;
} builtins[] = {
    { builtin_all, 1 }, { builtin_writer, 3 }, { builtin_reader, 3 },
};

static int (*known_command)(const char *name);

const char *rbd_acl_cat_name(unsigned i)
{
    return i < RBD_ACL_NCATS ? cat_names[i] : NULL;
}

uint32_t rbd_acl_cat_bit(const char *name, size_t len)
{
    for (unsigned i = 0; i < RBD_ACL_NCATS; i++)
        if (strlen(cat_names[i]) == len && strncasecmp(cat_names[i], name, len) == 0)
            return 1u << i;
    return 0;
}

void rbd_acl_set_known(int (*known)(const char *name))
{
    known_command = known;
}

void rbd_acl_user_name(uid_t uid, char *out, size_t cap)
{
    char buf[4096];
    struct passwd pw, *found = NULL;

    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found != NULL)
        snprintf(out, cap, "%s", found->pw_name);
    else
        snprintf(out, cap, "%u", (unsigned)uid);
}

void rbd_acl_group_name(gid_t gid, char *out, size_t cap)
{
    char buf[4096];
    struct group gr, *found = NULL;

    if (getgrgid_r(gid, &gr, buf, sizeof(buf), &found) == 0 && found != NULL)
        snprintf(out, cap, "%s", found->gr_name);
    else
        snprintf(out, cap, "%u", (unsigned)gid);
}

/* A user or group name, or a number (all digits): *id, or -1 with err. */
static int parse_id(const char *key, int group, const char *tok, uint32_t *id, char *err,
                    size_t errlen)
{
    char buf[4096], *end;
    struct passwd pw, *pwf = NULL;
    struct group gr, *grf = NULL;
    unsigned long n;

    if (isdigit((unsigned char)tok[0])) {
        n = strtoul(tok, &end, 10);
        if (*end == '\0' && n < (uint32_t)-1) {
            *id = (uint32_t)n;
            return 0;
        }
    } else if (!group && getpwnam_r(tok, &pw, buf, sizeof(buf), &pwf) == 0 && pwf != NULL) {
        *id = pwf->pw_uid;
        return 0;
    } else if (group && getgrnam_r(tok, &gr, buf, sizeof(buf), &grf) == 0 && grf != NULL) {
        *id = grf->gr_gid;
        return 0;
    }
    snprintf(err, errlen, "%s: no %s '%s'", key, group ? "group" : "user", tok);
    return -1;
}

/* The words a line copied from ACL LIST may hold that say what every rule
 * set here has anyway (on, no password, every key and channel). */
static int is_noop(const char *tok)
{
    static const char *const words[] = { "on", "nopass", "~*", "allkeys", "&*", "allchannels" };

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasecmp(tok, words[i]) == 0)
            return 1;
    return 0;
}

/* One rule word into *r: 1, 0 for a word that adds nothing (is_noop), or
 * -1 with err. */
static int parse_rule(const char *key, const char *tok, rbd_acl_rule_t *r, char *err,
                      size_t errlen)
{
    size_t len;

    memset(r, 0, sizeof(*r));
    if (is_noop(tok))
        return 0;
    if (strcasecmp(tok, "allcommands") == 0 || strcasecmp(tok, "nocommands") == 0) {
        r->allow = tok[0] == 'a' || tok[0] == 'A';
        return 1;
    }
    if ((tok[0] != '+' && tok[0] != '-') || tok[1] == '\0') {
        snprintf(err, errlen, "%s: '%s' is not a rule (+@category, -@category, +command, "
                 "-command, allcommands or nocommands; no passwords or key patterns: the "
                 "identity is the socket's peer)", key, tok);
        return -1;
    }
    r->allow = tok[0] == '+';
    if (tok[1] == '@') {
        if (strcasecmp(tok + 2, "all") == 0)
            return 1;
        r->cat = rbd_acl_cat_bit(tok + 2, strlen(tok + 2));
        if (r->cat == 0) {
            snprintf(err, errlen, "%s: unknown category '%s' (ACL CAT lists them)", key,
                     tok + 1);
            return -1;
        }
        return 1;
    }
    len = strlen(tok + 1);
    if (len >= sizeof(r->name)) {
        snprintf(err, errlen, "%s: unknown command '%s'", key, tok + 1);
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        r->name[i] = (char)tolower((unsigned char)tok[1 + i]);
    if (known_command != NULL && !known_command(r->name)) {
        snprintf(err, errlen, "%s: unknown command '%s' (COMMAND LIST names them; a "
                 "subcommand is command|subcommand)", key, tok + 1);
        return -1;
    }
    return 1;
}

int rbd_acl_parse(rbd_acl_t *acl, int group, const char *key, const char *value, char *err,
                  size_t errlen)
{
    char buf[4096], *tok, *save;
    rbd_acl_set_t *set = NULL;
    uint32_t id;
    size_t i;

    if (strlen(value) >= sizeof(buf)) {
        snprintf(err, errlen, "%s: longer than %zu bytes", key, sizeof(buf) - 1);
        return -1;
    }
    strcpy(buf, value);
    tok = strtok_r(buf, " \t", &save);
    if (tok == NULL || (tok = strtok_r(NULL, " \t", &save), tok == NULL)) {
        snprintf(err, errlen, "%s: expects a %s (name or number) and rules, e.g. %s "
                 "+@all -@admin -@dangerous", key, group ? "group" : "user",
                 group ? "ringbloom" : "alice");
        return -1;
    }
    strcpy(buf, value);
    tok = strtok_r(buf, " \t", &save);
    if (parse_id(key, group, tok, &id, err, errlen) != 0)
        return -1;
    for (i = 0; i < acl->n; i++)
        if (acl->set[i].group == group && acl->set[i].id == id)
            set = &acl->set[i];
    if (set == NULL) {
        if (acl->n == RBD_ACL_MAX_ENTRIES) {
            snprintf(err, errlen, "%s: more than %d users and groups with rules", key,
                     RBD_ACL_MAX_ENTRIES);
            return -1;
        }
        set = &acl->set[acl->n];
        memset(set, 0, sizeof(*set));
        set->id = id;
        set->group = group;
    }
    /* The identity's earlier rules stay as they are if this line fails. */
    {
        rbd_acl_set_t next = *set;
        while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
            rbd_acl_rule_t r;
            int rc = parse_rule(key, tok, &r, err, errlen);
            if (rc < 0)
                return -1;
            if (rc == 0)
                continue;
            if (next.n == RBD_ACL_MAX_RULES) {
                snprintf(err, errlen, "%s: more than %d rules for one %s", key,
                         RBD_ACL_MAX_RULES, group ? "group" : "user");
                return -1;
            }
            next.rule[next.n++] = r;
        }
        *set = next;
    }
    if (set == &acl->set[acl->n])
        acl->n++;
    return 0;
}

/* Rules as Redis prints them, appended at out + *w. */
static void rules_text(const rbd_acl_rule_t *rule, size_t n, char *out, size_t cap)
{
    size_t w = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n && w < cap; i++) {
        const rbd_acl_rule_t *r = &rule[i];
        const char *what = r->name;
        int at = 0;
        if (r->cat == 0 && r->name[0] == '\0') {
            what = "all";
            at = 1;
        } else if (r->cat != 0) {
            what = cat_names[__builtin_ctz(r->cat)];
            at = 1;
        }
        int k = snprintf(out + w, cap - w, "%s%c%s%s", w ? " " : "", r->allow ? '+' : '-',
                         at ? "@" : "", what);
        if (k < 0)
            break;
        w += (size_t)k;
    }
}

void rbd_acl_rules_text(const rbd_acl_t *acl, int set, char *out, size_t cap)
{
    if (set < 0 && -set - 1 < (int)(sizeof(builtins) / sizeof(builtins[0])))
        rules_text(builtins[-set - 1].rule, builtins[-set - 1].n, out, cap);
    else if (set >= 0 && (size_t)set < acl->n)
        rules_text(acl->set[set].rule, acl->set[set].n, out, cap);
    else
        snprintf(out, cap, "%s", "");
}

void rbd_acl_render(const rbd_acl_t *acl, int group, char *out, size_t cap)
{
    char name[256], rules[2048];
    size_t w = 0;

    out[0] = '\0';
    for (size_t i = 0; i < acl->n && w < cap; i++) {
        if (acl->set[i].group != group)
            continue;
        if (group)
            rbd_acl_group_name(acl->set[i].id, name, sizeof(name));
        else
            rbd_acl_user_name(acl->set[i].id, name, sizeof(name));
        rbd_acl_rules_text(acl, (int)i, rules, sizeof(rules));
        int k = snprintf(out + w, cap - w, "%s%s %s", w ? ", " : "", name, rules);
        if (k < 0)
            break;
        w += (size_t)k;
    }
}

static void add(rbd_acl_who_t *who, int set, int by, uint32_t id)
{
    if (who->n == RBD_ACL_WHO_MAX)
        return;
    who->e[who->n].set = set;
    who->e[who->n].by = by;
    who->e[who->n].id = id;
    who->n++;
}

static int listed(const uint32_t *ids, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

void rbd_acl_resolve(const rbd_acl_t *acl, const uint32_t *write_uids, size_t nwuids,
                     const uint32_t *write_gids, size_t nwgids, uid_t self, uid_t uid,
                     const gid_t *groups, size_t ngroups, rbd_acl_who_t *who)
{
    memset(who, 0, sizeof(*who));
    who->named = 1;
    for (size_t i = 0; i < acl->n; i++)
        if (!acl->set[i].group && acl->set[i].id == uid) {
            add(who, (int)i, RBD_ACL_BY_USER, uid);
            return;
        }
    if (uid == 0 || uid == self) {
        add(who, RBD_ACL_ALL, uid == 0 ? RBD_ACL_BY_ROOT : RBD_ACL_BY_SELF, uid);
        return;
    }
    if (listed(write_uids, nwuids, uid)) {
        add(who, RBD_ACL_WRITER, RBD_ACL_BY_WRITE_UID, uid);
        return;
    }
    for (size_t g = 0; g < ngroups; g++) {
        int seen = 0;
        for (size_t k = 0; k < g; k++)
            seen |= groups[k] == groups[g];
        if (seen)
            continue;
        for (size_t i = 0; i < acl->n; i++)
            if (acl->set[i].group && acl->set[i].id == groups[g])
                add(who, (int)i, RBD_ACL_BY_GROUP, groups[g]);
        if (listed(write_gids, nwgids, groups[g]))
            add(who, RBD_ACL_WRITER, RBD_ACL_BY_WRITE_GID, groups[g]);
    }
    if (who->n == 0) {
        add(who, RBD_ACL_READER, RBD_ACL_BY_DEFAULT, uid);
        who->named = 0;
    }
}

/* 1 if rule r matches the command. */
static int matches(const rbd_acl_rule_t *r, const char *name, const char *sub, uint32_t cats)
{
    const char *bar;

    if (r->cat != 0)
        return (cats & r->cat) != 0;
    if (r->name[0] == '\0')
        return 1;
    bar = strchr(r->name, '|');
    if (bar == NULL)
        return strcmp(r->name, name) == 0;
    return sub != NULL && strlen(name) == (size_t)(bar - r->name) &&
           memcmp(r->name, name, strlen(name)) == 0 && strcmp(bar + 1, sub) == 0;
}

static int set_allows(const rbd_acl_rule_t *rule, size_t n, const char *name, const char *sub,
                      uint32_t cats)
{
    for (size_t i = n; i-- > 0;)
        if (matches(&rule[i], name, sub, cats))
            return rule[i].allow;
    return 0;
}

int rbd_acl_allows(const rbd_acl_t *acl, const rbd_acl_who_t *who, const char *name,
                   const char *sub, uint32_t cats)
{
    for (int i = 0; i < who->n; i++) {
        int s = who->e[i].set;
        if (s < 0 && set_allows(builtins[-s - 1].rule, builtins[-s - 1].n, name, sub, cats))
            return 1;
        if (s >= 0 && (size_t)s < acl->n &&
            set_allows(acl->set[s].rule, acl->set[s].n, name, sub, cats))
            return 1;
    }
    return 0;
}

int rbd_acl_is_admin(const rbd_acl_t *acl, const rbd_acl_who_t *who)
{
    /* No command is named "": only category rules and +@all match it. */
    return rbd_acl_allows(acl, who, "", NULL, ACL_ADMIN);
}

void rbd_acl_describe(const rbd_acl_t *acl, const rbd_acl_who_t *who, char *out, size_t cap)
{
    char name[256], rules[1024];
    size_t w = 0;
    int k;

    k = snprintf(out, cap, "%s: ", who->n > 1 ? "rules" : "rule");
    if (k < 0 || (size_t)k >= cap)
        return;
    w = (size_t)k;
    if (who->n == 0)
        snprintf(out + w, cap - w, "none");
    for (int i = 0; i < who->n && w < cap; i++) {
        const char *by = "user";
        switch (who->e[i].by) {
        case RBD_ACL_BY_GROUP:
        case RBD_ACL_BY_WRITE_GID:
            by = "group";
            rbd_acl_group_name(who->e[i].id, name, sizeof(name));
            break;
        case RBD_ACL_BY_DEFAULT:
            snprintf(name, sizeof(name), "default");   /* as ACL LIST names it */
            break;
        default:
            rbd_acl_user_name(who->e[i].id, name, sizeof(name));
        }
        rbd_acl_rules_text(acl, who->e[i].set, rules, sizeof(rules));
        k = snprintf(out + w, cap - w, "%s%s %s%s: %s", i ? "; " : "", by, name,
                     who->e[i].by == RBD_ACL_BY_WRITE_UID ? " (allow-write-uid)"
                     : who->e[i].by == RBD_ACL_BY_WRITE_GID ? " (allow-write-gid)"
                     : who->e[i].by == RBD_ACL_BY_SELF ? " (the daemon's user)" : "", rules);
        if (k < 0)
            break;
        w += (size_t)k;
    }
}
