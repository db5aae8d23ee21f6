/*
 * acl.h - ringbloomd's access tiers as Redis ACL rules (acl.c): the command
 * categories (Redis's, RedisBloom's and ours: their bits and names), rule
 * sets in Redis's syntax (+@read, -@admin, +command, -command|sub,
 * allcommands, nocommands) attached to Unix users and groups by the
 * acl-user / acl-group settings, which rule sets a peer gets from its
 * SO_PEERCRED identity (rbd_acl_resolve), and whether they allow a
 * command (rbd_acl_allows).
 *
 * This file knows no command: a command is its lower-case name (and
 * subcommand) and its category mask, which the commands' rows give
 * (cmd_docs.c).  Command names in rules are checked through the hook
 * rbd_acl_set_known, which main.c sets before the configuration is read.
 */
#ifndef RBD_ACL_H
#define RBD_ACL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The categories, in ACL CAT's order: Redis 7's, then RedisBloom's, then
 * ours (@ring: RING.*; @admit: ADMIT.*). */
enum {
    ACL_KEYSPACE = 1u << 0, ACL_READ = 1u << 1, ACL_WRITE = 1u << 2, ACL_SET = 1u << 3,
    ACL_SORTEDSET = 1u << 4, ACL_LIST = 1u << 5, ACL_HASH = 1u << 6, ACL_STRING = 1u << 7,
    ACL_BITMAP = 1u << 8, ACL_HYPERLOGLOG = 1u << 9, ACL_GEO = 1u << 10, ACL_STREAM = 1u << 11,
    ACL_PUBSUB = 1u << 12, ACL_ADMIN = 1u << 13, ACL_FAST = 1u << 14, ACL_SLOW = 1u << 15,
    ACL_BLOCKING = 1u << 16, ACL_DANGEROUS = 1u << 17, ACL_CONNECTION = 1u << 18,
    ACL_TRANSACTION = 1u << 19, ACL_SCRIPTING = 1u << 20, ACL_BLOOM = 1u << 21,
    ACL_CUCKOO = 1u << 22, ACL_CMS = 1u << 23, ACL_TOPK = 1u << 24, ACL_TDIGEST = 1u << 25,
    ACL_RING = 1u << 26, ACL_ADMIT = 1u << 27,
};
#define RBD_ACL_NCATS 28

/* Category bit i's name (without '@'), i < RBD_ACL_NCATS. */
const char *rbd_acl_cat_name(unsigned i);
/* The bit of category name (len bytes, without '@', any case), or 0. */
uint32_t rbd_acl_cat_bit(const char *name, size_t len);

#define RBD_ACL_MAX_ENTRIES 32   /* acl-user and acl-group lines' identities */
#define RBD_ACL_MAX_RULES   32   /* rules of one identity, all its lines together */
#define RBD_ACL_NAME_MAX    48   /* a command name in a rule ("config|get") */

/* One rule: +/- a category, a command (or command|subcommand), or all. */
typedef struct rbd_acl_rule {
    char allow;                  /* 1: +, 0: - */
    uint32_t cat;                /* a category's bit; 0 with name "": all */
    char name[RBD_ACL_NAME_MAX]; /* a command, lower case ("" for a category) */
} rbd_acl_rule_t;

typedef struct rbd_acl_set {
    uint32_t id;                 /* uid or gid */
    int group;                   /* 1: acl-group, 0: acl-user */
    size_t n;
    rbd_acl_rule_t rule[RBD_ACL_MAX_RULES];
} rbd_acl_set_t;

typedef struct rbd_acl {         /* the acl-user and acl-group settings */
    size_t n;
    rbd_acl_set_t set[RBD_ACL_MAX_ENTRIES];
} rbd_acl_t;

/* The built-in rule sets, by the negative index a peer's sets use. */
enum { RBD_ACL_ALL = -1, RBD_ACL_WRITER = -2, RBD_ACL_READER = -3 };

/* Which rule sets a peer has (rbd_acl_resolve) and why.  A command is
 * allowed if any of them allows it (several groups: their union); n == 0:
 * nothing is allowed. */
#define RBD_ACL_WHO_MAX 8
enum { RBD_ACL_BY_USER, RBD_ACL_BY_GROUP, RBD_ACL_BY_ROOT, RBD_ACL_BY_SELF,
       RBD_ACL_BY_WRITE_UID, RBD_ACL_BY_WRITE_GID, RBD_ACL_BY_DEFAULT };
typedef struct rbd_acl_who {
    int n;
    struct {
        int set;                 /* index into rbd_acl_t's set[], or RBD_ACL_ALL... */
        int by;                  /* RBD_ACL_BY_*: the line or default that gave it */
        uint32_t id;             /* the uid or gid it names */
    } e[RBD_ACL_WHO_MAX];
    int named;                   /* the configuration names the peer (B4's
                                    reserved places): not the default tier */
} rbd_acl_who_t;

/* The hook that says whether a rule's command exists: 1 if name (lower
 * case, "cmd" or "cmd|sub") is a command; NULL: names are not checked. */
void rbd_acl_set_known(int (*known)(const char *name));

/* Parses "NAME|ID RULES..." of acl-user (group 0) or acl-group (group 1)
 * into acl: the rules are added after those of earlier lines for the same
 * identity.  0, or -1 with the reason in err (the setting named by key). */
int rbd_acl_parse(rbd_acl_t *acl, int group, const char *key, const char *value, char *err,
                  size_t errlen);

/* The settings of one kind (acl-user: group 0) as CONFIG GET shows them:
 * "NAME RULES" of each identity, separated by ", "; "" if none. */
void rbd_acl_render(const rbd_acl_t *acl, int group, char *out, size_t cap);

/* A rule set as ACL LIST prints its rules ("+@all -@admin ..."). */
void rbd_acl_rules_text(const rbd_acl_t *acl, int set, char *out, size_t cap);

/* The rule sets of a peer (uid, its groups: primary first) under acl and
 * the access shorthands (write_uids / write_gids: allow-write-uid/-gid),
 * by the documented order:
 *   1. acl-user lines for uid: those rules alone;
 *   2. root or the daemon's own uid (self): +@all;
 *   3. uid in allow-write-uid: +@all -@admin -@dangerous;
 *   4. each of its groups with acl-group lines (their rules) or in
 *      allow-write-gid (the writer rules): their union;
 *   5. nobody named it: +@read +@connection +@transaction. */
void rbd_acl_resolve(const rbd_acl_t *acl, const uint32_t *write_uids, size_t nwuids,
                     const uint32_t *write_gids, size_t nwgids, uid_t self, uid_t uid,
                     const gid_t *groups, size_t ngroups, rbd_acl_who_t *who);

/* 1 if who's rule sets allow the command named name (lower case), sub its
 * subcommand (lower case, or NULL), of categories cats, else 0.  Each set
 * is read as Redis applies rules: in order, the last rule matching the
 * command decides (none matched: refused). */
int rbd_acl_allows(const rbd_acl_t *acl, const rbd_acl_who_t *who, const char *name,
                   const char *sub, uint32_t cats);

/* 1 if who is an administrator: one of its rule sets grants the category
 * @admin itself (as it would judge a command whose only category is
 * @admin: +@all, allcommands or +@admin not taken back by a later
 * -@admin), else 0.  A rule naming one command (+client|kill) makes
 * nobody an administrator.  What acts on other connections or the whole
 * server needs one (cmd.h's CMD_OTHERS). */
int rbd_acl_is_admin(const rbd_acl_t *acl, const rbd_acl_who_t *who);

/* Why who's sets apply and their rules, as a refusal names them:
 * "rule: user alice: +@read", "rule: group ringbloom: +@all -@admin
 * -@dangerous", "rules: group a: ...; group b: ...". */
void rbd_acl_describe(const rbd_acl_t *acl, const rbd_acl_who_t *who, char *out, size_t cap);

/* The name of uid (its passwd entry's), or the number. */
void rbd_acl_user_name(uid_t uid, char *out, size_t cap);
/* The name of gid, or the number. */
void rbd_acl_group_name(gid_t gid, char *out, size_t cap);

#endif /* RBD_ACL_H */
