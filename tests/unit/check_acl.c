/*
 * check_acl.c - ringbloomd's access tiers without a daemon: the rule parser
 * of acl-user / acl-group (acl.c; a bad rule is a configuration error
 * naming the file and line), Redis's reading of a rule set (the last
 * matching rule decides), the order that gives a peer its rule sets, and
 * the categories the command rows derive (cmd_docs.c).  With a daemon and
 * real users: tests/daemon/check_perms.c.
 */
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

#include "acl.h"
#include "cmd.h"
#include "cmd_docs.h"
#include "rb_test.h"
#include "rbd_config.h"

/* Whether set i of acl allows command name (sub) of the categories the
 * rows give it. */
static int allows(const rbd_acl_t *acl, int set, const char *name, const char *sub)
{
    rbd_acl_who_t who = { 1, { { set, RBD_ACL_BY_USER, 0 } }, 1 };
    const rbd_command_t *cmd = rbd_cmd_lookup(name, strlen(name));
    const rbd_command_t *s = sub ? rbd_cmd_lookup_sub(cmd, sub, strlen(sub)) : NULL;

    ck_assert_ptr_nonnull(cmd);
    return rbd_acl_allows(acl, &who, name, sub, rbd_cmd_categories(s ? s : cmd));
}

/* Rules read as Redis reads them: in order, the last matching rule wins,
 * nothing matched is refused; a subcommand rule matches only it. */
START_TEST(test_acl_rules_last_match_decides)
{
    rbd_acl_t acl = { 0 };
    char err[256], text[512];

    rbd_acl_set_known(rbd_cmd_known);
    ck_assert_int_eq(rbd_acl_parse(&acl, 0, "acl-user", "0 -@all +ring.down +RING.UP", err,
                                   sizeof(err)), 0);
    ck_assert_int_eq(allows(&acl, 0, "ring.down", NULL), 1);
    ck_assert_int_eq(allows(&acl, 0, "ring.up", NULL), 1);
    ck_assert_int_eq(allows(&acl, 0, "ring.add", NULL), 0);
    ck_assert_int_eq(allows(&acl, 0, "bf.exists", NULL), 0);
    ck_assert_int_eq(allows(&acl, 0, "ping", NULL), 0);
    rbd_acl_rules_text(&acl, 0, text, sizeof(text));
    ck_assert_str_eq(text, "-@all +ring.down +ring.up");

    /* A second line for the same user adds to its rules. */
    ck_assert_int_eq(rbd_acl_parse(&acl, 0, "acl-user", "0 allcommands -@admin +save", err,
                                   sizeof(err)), 0);
    ck_assert_uint_eq(acl.n, 1);
    ck_assert_int_eq(allows(&acl, 0, "bf.exists", NULL), 1);
    ck_assert_int_eq(allows(&acl, 0, "shutdown", NULL), 0);
    ck_assert_int_eq(allows(&acl, 0, "config", NULL), 0);
    ck_assert_int_eq(allows(&acl, 0, "save", NULL), 1);

    /* Subcommands: acl|whoami alone, or acl and all of its. */
    ck_assert_int_eq(rbd_acl_parse(&acl, 1, "acl-group", "0 nocommands +acl|whoami on nopass "
                                   "~* &*", err, sizeof(err)), 0);
    ck_assert_uint_eq(acl.n, 2);
    ck_assert_int_eq(allows(&acl, 1, "acl", "whoami"), 1);
    ck_assert_int_eq(allows(&acl, 1, "acl", "list"), 0);
    ck_assert_int_eq(rbd_acl_parse(&acl, 1, "acl-group", "0 +acl", err, sizeof(err)), 0);
    ck_assert_int_eq(allows(&acl, 1, "acl", "list"), 1);
    rbd_acl_rules_text(&acl, 1, text, sizeof(text));
    ck_assert_str_eq(text, "-@all +acl|whoami +acl");

    /* The built-in tiers. */
    ck_assert_int_eq(allows(&acl, RBD_ACL_WRITER, "bf.add", NULL), 1);
    ck_assert_int_eq(allows(&acl, RBD_ACL_WRITER, "shutdown", NULL), 0);
    ck_assert_int_eq(allows(&acl, RBD_ACL_WRITER, "config", NULL), 0);
    ck_assert_int_eq(allows(&acl, RBD_ACL_WRITER, "acl", "dryrun"), 0);
    ck_assert_int_eq(allows(&acl, RBD_ACL_WRITER, "info", NULL), 1);
    ck_assert_int_eq(allows(&acl, RBD_ACL_READER, "bf.exists", NULL), 1);
    ck_assert_int_eq(allows(&acl, RBD_ACL_READER, "bf.add", NULL), 0);
    ck_assert_int_eq(allows(&acl, RBD_ACL_READER, "ping", NULL), 1);
    ck_assert_int_eq(allows(&acl, RBD_ACL_READER, "multi", NULL), 1);
    ck_assert_int_eq(allows(&acl, RBD_ACL_READER, "acl", "whoami"), 1);
    ck_assert_int_eq(allows(&acl, RBD_ACL_READER, "acl", "list"), 0);
    ck_assert_int_eq(allows(&acl, RBD_ACL_ALL, "shutdown", NULL), 1);
    rbd_acl_set_known(NULL);
}
END_TEST

/* Bad rules are errors naming the setting, and in a file its line. */
START_TEST(test_acl_bad_rules_name_file_and_line)
{
    static const struct {
        const char *line, *want;
    } bad[] = {
        { "acl-user 0 +@nosuch", ":2: acl-user: unknown category '@nosuch'" },
        { "acl-group 0 +bf.nosuch", ":2: acl-group: unknown command 'bf.nosuch'" },
        { "acl-user 0 +acl|nosuch", ":2: acl-user: unknown command 'acl|nosuch'" },
        { "acl-user 0 >secret", ":2: acl-user: '>secret' is not a rule" },
        { "acl-user 0 ~cache:*", ":2: acl-user: '~cache:*' is not a rule" },
        { "acl-user 0 off", ":2: acl-user: 'off' is not a rule" },
        { "acl-user 0", ":2: acl-user: expects a user" },
        { "acl-user rbt-no-such-user-x +@all", ":2: acl-user: no user 'rbt-no-such-user-x'" },
        { "acl-group rbt-no-such-group-x +@all", ":2: acl-group: no group 'rbt-no-such-group-x'" },
    };
    char path[] = "/tmp/check_acl.XXXXXX", err[512], want[600];
    rbd_config_t *c = malloc(sizeof(*c));
    int fd;

    ck_assert_ptr_nonnull(c);
    rbd_acl_set_known(rbd_cmd_known);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        FILE *f;
        fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        f = fdopen(fd, "w");
        fprintf(f, "# rules\n%s\n", bad[i].line);
        fclose(f);
        ck_assert_int_eq(rbd_config_defaults(c, "default"), RB_OK);
        ck_assert_int_eq(rbd_config_load(c, path, err, sizeof(err)), -1);
        snprintf(want, sizeof(want), "%s%s", path, bad[i].want);
        ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s: got [%s], want [%s...]",
                      bad[i].line, err, want);
        unlink(path);
        strcpy(path, "/tmp/check_acl.XXXXXX");
    }
    /* Too many rules for one identity. */
    ck_assert_int_eq(rbd_config_defaults(c, "default"), RB_OK);
    for (int i = 0; i < RBD_ACL_MAX_RULES; i++)
        ck_assert_int_eq(rbd_config_set(c, "acl-user", "0 +ping", err, sizeof(err)), 0);
    ck_assert_int_eq(rbd_config_set(c, "acl-user", "0 +ping", err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "more than 32 rules") != NULL, "%s", err);
    rbd_acl_set_known(NULL);
    free(c);
}
END_TEST

/* CONFIG GET's rendering: each identity's name and rules. */
START_TEST(test_acl_config_get_shows_the_lines)
{
    rbd_config_t *c = malloc(sizeof(*c));
    char err[256], v[512];

    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(rbd_config_defaults(c, "default"), RB_OK);
    ck_assert_int_eq(rbd_config_set(c, "acl-user", "root -@all +@read", err, sizeof(err)), 0);
    ck_assert_int_eq(rbd_config_set(c, "acl-group", "0 +@all -@admin -@dangerous", err,
                                    sizeof(err)), 0);
    ck_assert_int_eq(rbd_config_set(c, "acl-user", "0 -bf.exists", err, sizeof(err)), 0);
    rbd_acl_render(&c->acl, 0, v, sizeof(v));
    ck_assert_str_eq(v, "root -@all +@read -bf.exists");
    rbd_acl_render(&c->acl, 1, v, sizeof(v));
    ck_assert_str_eq(v, "root +@all -@admin -@dangerous");
    free(c);
}
END_TEST

/* The order: acl-user alone; root and the daemon's user +@all;
 * allow-write-uid; the groups' union (acl-group, allow-write-gid);
 * everyone else the readers' tier. */
START_TEST(test_acl_resolve_order)
{
    rbd_acl_t acl = { 0 };
    uint32_t wuids[] = { 1001 }, wgids[] = { 500 };
    gid_t g1[] = { 100, 500, 600 }, g2[] = { 100 };
    rbd_acl_who_t who;
    char err[256], why[512];

    ck_assert_int_eq(rbd_acl_parse(&acl, 0, "acl-user", "1002 -@all +ping", err, sizeof(err)), 0);
    ck_assert_int_eq(rbd_acl_parse(&acl, 1, "acl-group", "600 -@all +ring.down", err,
                                   sizeof(err)), 0);
    ck_assert_int_eq(rbd_acl_parse(&acl, 0, "acl-user", "0 -@all +@read", err, sizeof(err)), 0);

    /* acl-user wins over being in a group, and over being root. */
    rbd_acl_resolve(&acl, wuids, 1, wgids, 1, 999, 1002, g1, 3, &who);
    ck_assert_int_eq(who.n, 1);
    ck_assert_int_eq(who.e[0].set, 0);
    ck_assert_int_eq(rbd_acl_allows(&acl, &who, "bf.add", NULL, ACL_WRITE), 0);
    rbd_acl_resolve(&acl, wuids, 1, wgids, 1, 999, 0, g2, 1, &who);
    ck_assert_int_eq(who.e[0].set, 2);
    /* The daemon's own user. */
    rbd_acl_resolve(&acl, wuids, 1, wgids, 1, 999, 999, g1, 3, &who);
    ck_assert_int_eq(who.n, 1);
    ck_assert_int_eq(who.e[0].set, RBD_ACL_ALL);
    /* allow-write-uid before the groups. */
    rbd_acl_resolve(&acl, wuids, 1, wgids, 1, 999, 1001, g1, 3, &who);
    ck_assert_int_eq(who.n, 1);
    ck_assert_int_eq(who.e[0].set, RBD_ACL_WRITER);
    /* Groups: allow-write-gid 500 and acl-group 600, their union. */
    rbd_acl_resolve(&acl, wuids, 1, wgids, 1, 999, 2000, g1, 3, &who);
    ck_assert_int_eq(who.n, 2);
    ck_assert_int_eq(who.named, 1);
    ck_assert_int_eq(rbd_acl_allows(&acl, &who, "ring.down", NULL, ACL_WRITE | ACL_RING), 1);
    ck_assert_int_eq(rbd_acl_allows(&acl, &who, "bf.add", NULL, ACL_WRITE | ACL_BLOOM), 1);
    ck_assert_int_eq(rbd_acl_allows(&acl, &who, "save", NULL, ACL_ADMIN | ACL_DANGEROUS), 0);
    rbd_acl_describe(&acl, &who, why, sizeof(why));
    ck_assert_msg(strstr(why, "rules: group ") == why &&
                  strstr(why, " (allow-write-gid): +@all -@admin -@dangerous; group ") != NULL &&
                  strstr(why, ": -@all +ring.down") != NULL, "%s", why);
    /* Nobody named: the readers' tier, not among B4's reserved. */
    rbd_acl_resolve(&acl, wuids, 1, wgids, 1, 999, 2000, g2, 1, &who);
    ck_assert_int_eq(who.n, 1);
    ck_assert_int_eq(who.e[0].set, RBD_ACL_READER);
    ck_assert_int_eq(who.named, 0);
    rbd_acl_describe(&acl, &who, why, sizeof(why));
    ck_assert_str_eq(why, "rule: user default: +@read +@connection +@transaction");
}
END_TEST

/* The categories the rows derive, as Redis gives them where it has the
 * command. */
START_TEST(test_acl_categories_of_the_rows)
{
    static const struct {
        const char *name;
        uint32_t has, lacks;
    } want[] = {
        { "BF.ADD", ACL_WRITE | ACL_BLOOM | ACL_FAST, ACL_READ | ACL_SLOW | ACL_ADMIN },
        { "BF.EXISTS", ACL_READ | ACL_BLOOM | ACL_FAST, ACL_WRITE },
        { "BF.RESERVE", ACL_WRITE | ACL_BLOOM | ACL_SLOW, ACL_FAST },
        { "CF.ADD", ACL_WRITE | ACL_CUCKOO, ACL_BLOOM },
        { "CMS.QUERY", ACL_READ | ACL_CMS, ACL_WRITE },
        { "PFADD", ACL_WRITE | ACL_HYPERLOGLOG | ACL_FAST, 0 },
        { "DEL", ACL_WRITE | ACL_KEYSPACE, 0 },
        { "DBSIZE", ACL_READ | ACL_KEYSPACE | ACL_FAST, 0 },
        { "RING.DOWN", ACL_WRITE | ACL_RING, ACL_ADMIN },
        { "RING.GET", ACL_READ | ACL_RING | ACL_FAST, 0 },
        { "SHUTDOWN", ACL_ADMIN | ACL_DANGEROUS | ACL_SLOW, ACL_READ },
        { "SAVE", ACL_ADMIN | ACL_DANGEROUS, ACL_READ },
        { "BGSAVE", ACL_ADMIN | ACL_DANGEROUS, ACL_READ },
        { "CONFIG", ACL_ADMIN | ACL_DANGEROUS, ACL_READ },
        { "PING", ACL_CONNECTION | ACL_FAST, ACL_READ },
        { "COMMAND", ACL_CONNECTION | ACL_SLOW, ACL_READ },
        { "MULTI", ACL_TRANSACTION | ACL_FAST, ACL_READ },
        { "INFO", ACL_READ | ACL_SLOW, ACL_DANGEROUS },
    };
    const rbd_command_t *acl = rbd_cmd_lookup("ACL", 3);

    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const rbd_command_t *c = rbd_cmd_lookup(want[i].name, strlen(want[i].name));
        uint32_t cats;
        ck_assert_ptr_nonnull(c);
        cats = rbd_cmd_categories(c);
        ck_assert_msg((cats & want[i].has) == want[i].has && (cats & want[i].lacks) == 0,
                      "%s: categories 0x%x", want[i].name, cats);
    }
    ck_assert_ptr_nonnull(acl);
    ck_assert(rbd_cmd_categories(rbd_cmd_lookup_sub(acl, "list", 4)) & ACL_ADMIN);
    ck_assert(rbd_cmd_categories(rbd_cmd_lookup_sub(acl, "DRYRUN", 6)) & ACL_DANGEROUS);
    ck_assert(!(rbd_cmd_categories(rbd_cmd_lookup_sub(acl, "whoami", 6)) & ACL_ADMIN));
    ck_assert(!(rbd_cmd_categories(rbd_cmd_lookup_sub(acl, "cat", 3)) & ACL_ADMIN));
    ck_assert_int_eq(rbd_cmd_known("acl|whoami"), 1);
    ck_assert_int_eq(rbd_cmd_known("acl|nosuch"), 0);
    ck_assert_int_eq(rbd_cmd_known("ring.down"), 1);
}
END_TEST

int main(void)
{
    rbd_log_init(1, LOG_WARNING);
    return RB_TEST_MAIN("acl",
                        RB_TCASE("rules", 0, NULL, NULL,
                                 test_acl_rules_last_match_decides,
                                 test_acl_bad_rules_name_file_and_line,
                                 test_acl_config_get_shows_the_lines),
                        RB_TCASE("resolve", 0, NULL, NULL,
                                 test_acl_resolve_order),
                        RB_TCASE("categories", 0, NULL, NULL,
                                 test_acl_categories_of_the_rows));
}
