/*
 * check_perms.c - ringbloomd on a shared host (issue 13, item 3): the
 * packaged deployment, with the daemon as a system user that owns
 * /run/ringbloom and the socket and segment given to its group, reached by
 * instance name by a member of the group; a non-member refused; a
 * lookalike directory where users can write refused; a bad or foreign
 * group stopping the start with the reason; every "cannot reach" naming
 * the paths tried.  Issue 28: the access tiers (ACL rules by user and
 * group): the write group writes but gets NOPERM for the admin commands,
 * root does both, others read, a rule allowing only RING.DOWN / RING.UP
 * allows exactly those, ACL DRYRUN agrees with running, SIGHUP re-reads
 * the rules for connected clients.
 *
 * Needs root (it makes a group and four system users, removed after each
 * test by the parent, even when the test process dies).  Each test runs
 * in a private mount namespace with a fresh tmpfs on /run, so the real
 * /run/ringbloom is never touched and what the test puts there vanishes
 * with it.
 */
#include "config.h"

#include <ctype.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>

#include "rbd_test.h"

/* What the parent's teardown must undo, shared with the forked test. */
typedef struct perms_shared {
    pid_t daemon;                      /* the daemon the test started, 0 if none */
    char inst[RB_INSTANCE_MAX + 1];    /* its instance ("" if none) */
    char out[4096];                    /* a child's CLI output */
    int status;                        /* its exit status */
} perms_shared_t;

static perms_shared_t *sh;
static rbd_proc_t d;
/* The group, the daemon's user (primary group: the group), a member (in
 * it as a supplementary group), a non-member and another non-member (the
 * nginx module's reporter, in the ACL tests). */
static char grp[32], du[32], mu[32], nu[32], ru[32];

static int run(const char *cmd)
{
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void names(void)
{
    snprintf(grp, sizeof(grp), "rbt%d", (int)rb_test_main_pid);
    snprintf(du, sizeof(du), "rbt%dd", (int)rb_test_main_pid);
    snprintf(mu, sizeof(mu), "rbt%dm", (int)rb_test_main_pid);
    snprintf(nu, sizeof(nu), "rbt%dn", (int)rb_test_main_pid);
    snprintf(ru, sizeof(ru), "rbt%dr", (int)rb_test_main_pid);
}

/* Unchecked fixture, in the parent: the users, and the shared record. */
static void users_make(void)
{
    char cmd[512];

    names();
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(sh != MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    if (getuid() != 0)
        return;
    snprintf(cmd, sizeof(cmd),
             "groupadd -r %s && useradd -r -M -N -s /usr/sbin/nologin -g %s %s && "
             "useradd -r -M -N -s /usr/sbin/nologin -g nogroup -G %s %s && "
             "useradd -r -M -N -s /usr/sbin/nologin -g nogroup %s && "
             "useradd -r -M -N -s /usr/sbin/nologin -g nogroup %s", grp, grp, du, grp, mu, nu, ru);
    ck_assert_msg(run(cmd) == 0, "could not make the test users: %s", cmd);
}

/* Unchecked fixture, in the parent: whatever the test left (it may have
 * died with its daemon running: the daemon dies with it, by pdeathsig,
 * but is killed here too), then the users and the group. */
static void users_remove(void)
{
    char cmd[512], shm[128];

    if (sh->daemon > 0 && kill(sh->daemon, SIGKILL) == 0)
        usleep(100000);
    if (sh->inst[0] != '\0') {
        snprintf(shm, sizeof(shm), "/dev/shm/ringbloom.%s", sh->inst);
        unlink(shm);
    }
    if (getuid() == 0) {
        snprintf(cmd, sizeof(cmd), "userdel %s; userdel %s; userdel %s; userdel %s; groupdel %s",
                 du, mu, nu, ru, grp);
        run(cmd);
    }
    munmap(sh, sizeof(*sh));
}

static uid_t uid_of(const char *user)
{
    struct passwd *pw = getpwnam(user);
    ck_assert_ptr_nonnull(pw);
    return pw->pw_uid;
}

static gid_t gid_of(const char *group)
{
    struct group *gr = getgrnam(group);
    ck_assert_ptr_nonnull(gr);
    return gr->gr_gid;
}

/* This test process gets its own /run: a private mount namespace with a
 * tmpfs (root's, 0755) on it. */
static void private_run(void)
{
    ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
    ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    ck_assert_int_eq(mount("rbtest", "/run", "tmpfs", 0, "mode=0755"), 0);
}

/* Becomes user (with its groups); XDG_RUNTIME_DIR = xdg (NULL: unset). */
static int become(const char *user, const char *xdg)
{
    struct passwd *pw = getpwnam(user);

    if (pw == NULL || initgroups(user, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 ||
        setuid(pw->pw_uid) != 0)
        return -1;
    return xdg != NULL ? setenv("XDG_RUNTIME_DIR", xdg, 1) : unsetenv("XDG_RUNTIME_DIR");
}

/* `ringbloom ARGS` as user: its exit status; its output in sh->out. */
static int cli_as(const char *user, const char *xdg, const char *args)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (become(user, xdg) != 0)
            _exit(100);
        sh->status = rbd_run_cli(sh->out, sizeof(sh->out), args);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    return sh->status;
}

/* The packaged layout: /run/ringbloom as systemd's RuntimeDirectory= makes
 * it (the daemon user's, group ringbloom, 0750), the state directory as
 * StateDirectory= does, and a config with the group settings plus extra. */
static void deploy_conf(const char *extra)
{
    char conf[1024];

    snprintf(conf, sizeof(conf),
             "socket %s\npidfile /run/ringbloom/%s.pid\nunixsocketgroup %s\n"
             "unixsocketperm 0660\nsegment-group %s\nsegment-mode 0640\nkeep-segment no\n"
             "allow-write-gid %s\n%s", d.sock, d.inst, grp, grp, grp,  /* by name */
             extra != NULL ? extra : "");
    rbd_write_conf(&d, conf);
}

static void deploy(const char *extra)
{
    char state[200];

    private_run();
    ck_assert_int_eq(mkdir("/run/ringbloom", 0750), 0);
    ck_assert_int_eq(chmod("/run/ringbloom", 0750), 0);
    ck_assert_int_eq(chown("/run/ringbloom", uid_of(du), gid_of(grp)), 0);
    rbd_prepare(&d, NULL);
    snprintf(sh->inst, sizeof(sh->inst), "%s", d.inst);
    snprintf(d.sock, sizeof(d.sock), "/run/ringbloom/%s.sock", d.inst);
    snprintf(state, sizeof(state), "%s/state", d.dir);
    ck_assert_int_eq(mkdir(state, 0700), 0);
    ck_assert_int_eq(chown(state, uid_of(du), gid_of(grp)), 0);
    deploy_conf(extra);
}

/* Starts the daemon as user (setpriv; it dies with this process). */
static int start_as(const char *user)
{
    const char *argv[] = { "setpriv", "--reuid", user, "--regid", grp, "--init-groups",
                           "--pdeathsig", "KILL", rbd_binary(), "-f", "-c", d.conf, NULL };
    char gid[16];
    int status;

    if (strcmp(user, du) != 0) {   /* another user: its own primary group */
        snprintf(gid, sizeof(gid), "%u", (unsigned)getpwnam(user)->pw_gid);
        argv[4] = gid;
    }
    status = rbl_start(&d, argv, 10000, NULL);
    sh->daemon = d.pid;
    ck_assert_msg(status != RBL_TIMEOUT && status != RBL_EFORK, "%s", d.err);
    return status;
}

/* The target deployment works: socket and segment carry the group and the
 * modes; a member reaches the daemon by instance name only (its own
 * default path missing, then /run/ringbloom), adds and reads from shared
 * memory; a non-member can do neither, and is told which paths it tried. */
START_TEST(test_perms_group_member_reaches_instance_by_name)
{
    char shm[128], args[256];
    struct stat st;
    int status;

    if (getuid() != 0) {
        printf("permissions test needs root (users, uids, mounts); it checks nothing\n");
        return;
    }
    deploy(NULL);
    ck_assert_int_eq(start_as(du), RBL_ANSWERS);
    ck_assert_int_eq(lstat(d.sock, &st), 0);
    ck_assert_msg(S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0660 &&
                  st.st_gid == gid_of(grp) && st.st_uid == uid_of(du),
                  "socket mode 0%o uid %u gid %u", (unsigned)st.st_mode & 07777,
                  (unsigned)st.st_uid, (unsigned)st.st_gid);
    snprintf(shm, sizeof(shm), "/dev/shm/ringbloom.%s", d.inst);
    ck_assert_int_eq(stat(shm, &st), 0);
    ck_assert_msg((st.st_mode & 07777) == 0640 && st.st_gid == gid_of(grp) &&
                  st.st_uid == uid_of(du), "segment mode 0%o uid %u gid %u",
                  (unsigned)st.st_mode & 07777, (unsigned)st.st_uid, (unsigned)st.st_gid);

    snprintf(args, sizeof(args), "--instance %s add urls x", d.inst);
    status = cli_as(mu, NULL, args);
    ck_assert_msg(status == 0, "member add: status %d: %s", status, sh->out);
    snprintf(args, sizeof(args), "--instance %s node add n1", d.inst);
    status = cli_as(mu, NULL, args);
    ck_assert_msg(status == 0, "member node add: status %d: %s", status, sh->out);
    snprintf(args, sizeof(args), "--instance %s exists urls x", d.inst);
    status = cli_as(mu, NULL, args);
    ck_assert_msg(status == 0, "member exists: status %d: %s", status, sh->out);
    snprintf(args, sizeof(args), "--instance %s lookup some-key", d.inst);
    status = cli_as(mu, NULL, args);
    ck_assert_msg(status == 0 && strcmp(sh->out, "n1\n") == 0, "member lookup: status %d: %s",
                  status, sh->out);

    snprintf(args, sizeof(args), "--instance %s exists urls x", d.inst);
    status = cli_as(nu, NULL, args);
    ck_assert_msg(status == 3 && strstr(sh->out, d.sock) != NULL &&
                  strstr(sh->out, "/tmp/ringbloom-") != NULL &&
                  strstr(sh->out, d.inst) != NULL, "non-member exists: status %d: %s", status,
                  sh->out);
    snprintf(args, sizeof(args), "--instance %s add urls y", d.inst);
    status = cli_as(nu, NULL, args);
    ck_assert_msg(status == 3 && strstr(sh->out, d.sock) != NULL &&
                  strstr(sh->out, "Permission denied") != NULL,
                  "non-member add: status %d: %s", status, sh->out);
}
END_TEST

/* The vouching rule is only for a directory root placed: the same
 * directory (the daemon user's) where users can write is refused, by
 * name through the member's own runtime directory, and by
 * rb_daemon_uid under another user's directory. */
START_TEST(test_perms_lookalike_directory_refused)
{
    char xdg[300], look[400], home[320], sock[500], args[256];
    int status;
    pid_t pid;

    if (getuid() != 0) {
        printf("permissions test needs root (users, uids, mounts); it checks nothing\n");
        return;
    }
    deploy(NULL);
    ck_assert_int_eq(start_as(du), RBL_ANSWERS);
    snprintf(xdg, sizeof(xdg), "%s/xdg", d.dir);
    snprintf(look, sizeof(look), "%s/ringbloom", xdg);
    ck_assert_int_eq(mkdir(xdg, 0700), 0);
    ck_assert_int_eq(chmod(xdg, 01777), 0);
    ck_assert_int_eq(mkdir(look, 0750), 0);
    ck_assert_int_eq(chown(look, uid_of(du), gid_of(grp)), 0);
    snprintf(args, sizeof(args), "--instance %s exists urls x", d.inst);
    status = cli_as(mu, xdg, args);
    ck_assert_msg(status == 3 && strstr(sh->out, look) != NULL &&
                  strstr(sh->out, "belongs to uid") != NULL, "status %d: %s", status, sh->out);

    /* A user's directory (not root's) holding one of the daemon user's. */
    snprintf(home, sizeof(home), "%s/home", d.dir);
    snprintf(look, sizeof(look), "%s/ringbloom", home);
    snprintf(sock, sizeof(sock), "%s/%s.sock", look, d.inst);
    ck_assert_int_eq(mkdir(home, 0755), 0);
    ck_assert_int_eq(chown(home, uid_of(nu), getpwnam(nu)->pw_gid), 0);
    ck_assert_int_eq(mkdir(look, 0750), 0);
    ck_assert_int_eq(chown(look, uid_of(du), gid_of(grp)), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        uid_t owner;
        if (become(mu, NULL) != 0)
            _exit(100);
        if (rb_daemon_uid(NULL, sock, (uid_t)-1, &owner, sh->out, sizeof(sh->out)) != RB_EOWNER)
            _exit(1);
        /* ... while /run/ringbloom, which root placed, is vouched for. */
        if (rb_daemon_uid(d.inst, d.sock, (uid_t)-1, &owner, NULL, 0) != RB_OK ||
            owner != uid_of(du))
            _exit(2);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status,
                  sh->out);
}
END_TEST

/* An unknown group (of the socket, the segment, or among those who may
 * write) is a configuration error naming it (ringbloomd -t too); a daemon that may not give its files the group (neither root nor
 * a member) does not start, and says why on stderr. */
START_TEST(test_perms_bad_group_stops_the_start)
{
    char out[4096], extra[200];
    const char *words[] = { "unixsocketgroup", "segment-group", "allow-write-gid" };
    int status;

    if (getuid() != 0) {
        printf("permissions test needs root (users, uids, mounts); it checks nothing\n");
        return;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(extra, sizeof(extra), "%s rbt-no-such-group-%d", words[i], (int)getpid());
        rbd_prepare(&d, extra);
        status = rbd_run_daemon(&d, out, sizeof(out));
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2 &&
                      strstr(out, "no group 'rbt-no-such-group-") != NULL &&
                      strstr(out, words[i]) != NULL, "status %d: %s", status, out);
        rbd_remove_all(&d);
    }

    deploy(NULL);
    ck_assert_int_eq(chown("/run/ringbloom", uid_of(nu), gid_of(grp)), 0);
    ck_assert_int_eq(chown(strcat(strcpy(out, d.dir), "/state"), uid_of(nu), 0), 0);
    status = start_as(nu);
    ck_assert_msg(status == 1 && rbd_log_count(&d, "neither root nor a member of group") == 1 &&
                  rbd_log_count(&d, "unixsocketgroup") == 1, "status %d, see %s", status,
                  d.log);
    sh->daemon = 0;
}
END_TEST

/* Every "cannot reach" names the socket path(s) tried and the instance
 * meant; with --socket alone, the path, and no instance 'default'. */
START_TEST(test_perms_errors_name_paths_tried)
{
    char args[400], sock[300];
    int status;

    if (getuid() != 0) {
        printf("permissions test needs root (users, uids, mounts); it checks nothing\n");
        return;
    }
    private_run();
    status = cli_as(nu, NULL, "--instance rbt-absent add urls x");
    ck_assert_msg(status == 3 && strstr(sh->out, "instance 'rbt-absent'") != NULL &&
                  strstr(sh->out, "/tmp/ringbloom-") != NULL &&
                  strstr(sh->out, "/run/ringbloom/rbt-absent.sock") != NULL,
                  "status %d: %s", status, sh->out);
    status = cli_as(nu, NULL, "--instance rbt-absent exists urls x");
    ck_assert_msg(status == 3 && strstr(sh->out, "instance 'rbt-absent'") != NULL &&
                  strstr(sh->out, "/tmp/ringbloom-") != NULL &&
                  strstr(sh->out, "/run/ringbloom/rbt-absent.sock") != NULL,
                  "status %d: %s", status, sh->out);
    rbd_prepare(&d, NULL);
    snprintf(sock, sizeof(sock), "%s/none.sock", d.dir);
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof(args), "--socket %s %s", sock,
                 i == 0 ? "add urls x" : "exists urls x");
        status = cli_as(nu, NULL, args);
        ck_assert_msg(status == 3 && strstr(sh->out, sock) != NULL &&
                      strstr(sh->out, "'default'") == NULL, "status %d: %s", status, sh->out);
    }
}
END_TEST

/* ---- access tiers (issue 28) ------------------------------------------------------ */

/* Runs the command of the NULL-terminated words over the socket as user:
 * the library's code (RB_EPERM for NOPERM), its reply text in sh->out. */
static int cmd_as(const char *user, const char *const *words)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        size_t argl[16], n = 0;
        rb_conn_t *c;
        if (become(user, NULL) != 0)
            _exit(100);
        if (rb_conn_open(NULL, d.sock, 5000, &c) != RB_OK)
            _exit(101);
        while (words[n] != NULL && n < 16) {
            argl[n] = strlen(words[n]);
            n++;
        }
        sh->status = rb_conn_command(c, n, words, argl, sh->out, sizeof(sh->out));
        rb_conn_close(c);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    return sh->status;
}

#define W(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The tiers: the write group (allow-write-gid, as the packaged
 * configuration names it) adds but gets NOPERM for SHUTDOWN, CONFIG, SAVE,
 * BGSAVE and ACL LIST, and ACL WHOAMI answers its name; a user nobody
 * names reads but does not write; a user whose rule allows only RING.DOWN
 * and RING.UP (the nginx module's report=) runs exactly those; for every
 * case root's ACL DRYRUN says what running it did; root does everything,
 * SHUTDOWN last.  The refusals name the rule. */
START_TEST(test_perms_acl_tiers)
{
    const struct {
        int who;                 /* 0: the member, 1: a non-member, 2: the reporter */
        const char *const *w;
        int allowed;
    } cases[] = {
        { 0, W("BF.ADD", "f", "b"), 1 }, { 0, W("BF.EXISTS", "f", "a"), 1 },
        { 0, W("RING.DOWN", "n2"), 1 }, { 0, W("INFO", "server"), 1 },
        { 0, W("SHUTDOWN", "NOSAVE"), 0 }, { 0, W("CONFIG", "GET", "max-memory"), 0 },
        { 0, W("SAVE"), 0 }, { 0, W("BGSAVE"), 0 }, { 0, W("ACL", "LIST"), 0 },
        { 0, W("ACL", "WHOAMI"), 1 },
        { 1, W("BF.EXISTS", "f", "a"), 1 }, { 1, W("PING"), 1 }, { 1, W("ACL", "CAT"), 1 },
        { 1, W("BF.ADD", "f", "c"), 0 }, { 1, W("RING.DOWN", "n1"), 0 }, { 1, W("SAVE"), 0 },
        { 1, W("ACL", "DRYRUN", "root", "PING"), 0 },
        { 2, W("RING.DOWN", "n1"), 1 }, { 2, W("RING.UP", "n1"), 1 },
        { 2, W("RING.ADD", "n9"), 0 }, { 2, W("BF.EXISTS", "f", "a"), 0 }, { 2, W("PING"), 0 },
        { 2, W("BF.ADD", "f", "d"), 0 }, { 2, W("SHUTDOWN"), 0 },
    };
    const char *users[3] = { mu, nu, ru };
    char extra[256], want[512], rule[256], lower[64];
    const char *got;
    rb_conn_t *c;
    int rc;

    if (getuid() != 0) {
        printf("permissions test needs root (users, uids, mounts); it checks nothing\n");
        return;
    }
    snprintf(extra, sizeof(extra), "unixsocketperm 0666\nacl-user %s -@all +ring.down "
             "+ring.up\n", ru);
    deploy(extra);
    ck_assert_int_eq(chmod("/run/ringbloom", 0755), 0);   /* everyone may connect */
    ck_assert_int_eq(start_as(du), RBL_ANSWERS);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    for (int i = 1; i <= 3; i++) {
        char node[16];
        snprintf(node, sizeof(node), "n%d", i);
        rbd_cmd(c, &rc, "RING.ADD", node, (const char *)NULL);
        ck_assert_int_eq(rc, RB_OK);
    }

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *user = users[cases[i].who], *const *w = cases[i].w;
        const char *dry[20] = { "ACL", "DRYRUN", user };
        size_t n = 0, argl[20];
        char run[4096];

        rc = cmd_as(user, w);
        snprintf(run, sizeof(run), "%s", sh->out);
        ck_assert_msg((rc != RB_EPERM) == cases[i].allowed, "case %zu (%s %s): rc %d: %s", i,
                      user, w[0], rc, run);
        if (!cases[i].allowed) {
            snprintf(lower, sizeof(lower), "%s", w[0]);
            for (char *p = lower; *p; p++)
                *p = (char)tolower((unsigned char)*p);
            if (strcmp(lower, "acl") == 0 || strcmp(lower, "config") == 0) {
                /* a subcommand row: the refusal names it */
                char sub[32];
                snprintf(sub, sizeof(sub), "%s", w[1]);
                for (char *p = sub; *p; p++)
                    *p = (char)tolower((unsigned char)*p);
                snprintf(lower + strlen(lower), sizeof(lower) - strlen(lower), "|%s", sub);
            }
            if (cases[i].who == 0)
                snprintf(rule, sizeof(rule), "rule: group %s (allow-write-gid): +@all -@admin "
                         "-@dangerous", grp);
            else if (cases[i].who == 1)
                snprintf(rule, sizeof(rule), "rule: user default: +@read +@connection "
                         "+@transaction");
            else
                snprintf(rule, sizeof(rule), "rule: user %s: -@all +ring.down +ring.up", ru);
            snprintf(want, sizeof(want), "NOPERM User %s has no permissions to run the '%s' "
                     "command (%s)", user, lower, rule);
            ck_assert_msg(strcmp(run, want) == 0, "case %zu: got [%s], want [%s]", i, run,
                          want);
        }
        /* ACL DRYRUN, as root, agrees with what running it did. */
        while (w[n] != NULL)
            dry[3 + n] = w[n], n++;
        for (size_t k = 0; k < n + 3; k++)
            argl[k] = strlen(dry[k]);
        rc = rb_conn_command(c, n + 3, dry, argl, run, sizeof(run));
        if (cases[i].allowed)
            ck_assert_msg(rc == RB_OK && strcmp(run, "OK") == 0, "dryrun %zu: %d %s", i, rc,
                          run);
        else
            ck_assert_msg(rc == RB_OK && strncmp(run, want + 7, strlen(want + 7)) == 0,
                          "dryrun %zu: %d [%s], want [%s]", i, rc, run, want + 7);
    }
    ck_assert_int_eq(cmd_as(mu, W("ACL", "WHOAMI")), RB_OK);
    ck_assert_str_eq(sh->out, mu);
    ck_assert_int_eq(cmd_as(nu, W("ACL", "WHOAMI")), RB_OK);
    ck_assert_str_eq(sh->out, nu);

    /* What root sees: the rules, the categories, COMMAND INFO's. */
    got = rbd_cmd(c, &rc, "ACL", "LIST", (const char *)NULL);
    snprintf(want, sizeof(want), "group %s on nopass ~* &* +@all -@admin -@dangerous", grp);
    ck_assert_msg(rc == RB_OK && strstr(got, want) != NULL, "%s", got);
    snprintf(want, sizeof(want), "user %s on nopass ~* &* -@all +ring.down +ring.up", ru);
    ck_assert_msg(strstr(got, want) != NULL, "%s", got);
    ck_assert_msg(strstr(got, "user root on nopass ~* &* +@all\n") != NULL, "%s", got);
    ck_assert_msg(strstr(got, "user default on nopass ~* &* +@read +@connection "
                          "+@transaction") != NULL, "%s", got);
    got = rbd_cmd(c, &rc, "CONFIG", "GET", "acl-user", (const char *)NULL);
    snprintf(want, sizeof(want), "acl-user\n%s -@all +ring.down +ring.up", ru);
    ck_assert_msg(rc == RB_OK && strcmp(got, want) == 0, "%s", got);
    got = rbd_cmd(c, &rc, "ACL", "CAT", (const char *)NULL);
    ck_assert_msg(rc == RB_OK && strncmp(got, "keyspace\nread\nwrite\n", 20) == 0 &&
                  strstr(got, "\nadmin\n") != NULL && strstr(got, "\nbloom\n") != NULL &&
                  strstr(got, "\nring\n") != NULL, "%s", got);
    got = rbd_cmd(c, &rc, "ACL", "CAT", "admin", (const char *)NULL);
    ck_assert_msg(rc == RB_OK && strstr(got, "shutdown") && strstr(got, "config") &&
                  strstr(got, "save") && strstr(got, "bgsave") && strstr(got, "acl|list") &&
                  strstr(got, "acl|dryrun") && !strstr(got, "bf.add") &&
                  !strstr(got, "acl|whoami"), "%s", got);
    got = rbd_cmd(c, &rc, "ACL", "CAT", "nosuch", (const char *)NULL);
    ck_assert_msg(rc != RB_OK && strcmp(got, "ERR Unknown category 'nosuch'") == 0, "%s", got);
    got = rbd_cmd(c, &rc, "COMMAND", "INFO", "BF.ADD", (const char *)NULL);
    ck_assert_msg(rc == RB_OK && strstr(got, "@write") && strstr(got, "@bloom") &&
                  strstr(got, "@fast") && !strstr(got, "@read"), "%s", got);
    got = rbd_cmd(c, &rc, "COMMAND", "INFO", "SHUTDOWN", (const char *)NULL);
    ck_assert_msg(rc == RB_OK && strstr(got, "@admin") && strstr(got, "@dangerous"), "%s", got);
    rbd_expect(c, "OK", "SAVE");
    got = rbd_cmd(c, &rc, "CONFIG", "GET", "max-memory", (const char *)NULL);
    ck_assert_msg(rc == RB_OK && strncmp(got, "max-memory\n", 11) == 0, "%s", got);
    ck_assert_int_eq(rbl_stop(&d, c, 0, 10000), 0);   /* SHUTDOWN NOSAVE, as root */
    sh->daemon = 0;
}
END_TEST

/* SIGHUP re-reads the rules for the clients already connected: the
 * member's open connection, refused SAVE, may SAVE after its user gets
 * acl-user +@all; a new rule that takes writes away holds at once too. */
START_TEST(test_perms_acl_reload_applies_to_connected_clients)
{
    char extra[256];
    int to_child[2], to_parent[2], status;
    char byte;
    pid_t pid;

    if (getuid() != 0) {
        printf("permissions test needs root (users, uids, mounts); it checks nothing\n");
        return;
    }
    deploy(NULL);
    ck_assert_int_eq(start_as(du), RBL_ANSWERS);
    ck_assert_int_eq(pipe(to_child), 0);
    ck_assert_int_eq(pipe(to_parent), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        static const char *const save[] = { "SAVE" }, *const add[] = { "BF.ADD", "f", "x" };
        static const size_t savel[] = { 4 }, addl[] = { 6, 1, 1 };
        rb_conn_t *c;
        int rc1, rc2, rc3;
        if (become(mu, NULL) != 0 || rb_conn_open(NULL, d.sock, 5000, &c) != RB_OK)
            _exit(100);
        rc1 = rb_conn_command(c, 1, save, savel, sh->out, sizeof(sh->out));
        if (write(to_parent[1], "1", 1) != 1 || read(to_child[0], &byte, 1) != 1)
            _exit(101);
        rc2 = rb_conn_command(c, 1, save, savel, sh->out, sizeof(sh->out));
        if (write(to_parent[1], "2", 1) != 1 || read(to_child[0], &byte, 1) != 1)
            _exit(102);
        rc3 = rb_conn_command(c, 3, add, addl, sh->out, sizeof(sh->out));
        sh->status = (rc1 == RB_EPERM) + 2 * (rc2 == RB_OK) + 4 * (rc3 == RB_EPERM);
        _exit(0);
    }
    ck_assert_int_eq(read(to_parent[0], &byte, 1), 1);
    snprintf(extra, sizeof(extra), "acl-user %s +@all\n", mu);
    deploy_conf(extra);
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    for (int i = 0; i < 100 && rbd_log_count(&d, "configuration reloaded") < 1; i++)
        usleep(20000);
    ck_assert_int_eq(rbd_log_count(&d, "configuration reloaded"), 1);
    ck_assert_int_eq(write(to_child[1], "1", 1), 1);
    ck_assert_int_eq(read(to_parent[0], &byte, 1), 1);
    snprintf(extra, sizeof(extra), "acl-user %s -@all +@read\n", mu);
    deploy_conf(extra);
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    for (int i = 0; i < 100 && rbd_log_count(&d, "configuration reloaded") < 2; i++)
        usleep(20000);
    ck_assert_int_eq(rbd_log_count(&d, "configuration reloaded"), 2);
    ck_assert_int_eq(write(to_child[1], "2", 1), 1);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 && sh->status == 7,
                  "child status %d, checks %d: %s", status, sh->status, sh->out);
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
}
END_TEST

int main(void)
{
    TCase *tc = RB_TCASE("perms", 120, NULL, rbd_teardown,
                         test_perms_group_member_reaches_instance_by_name,
                         test_perms_lookalike_directory_refused,
                         test_perms_bad_group_stops_the_start,
                         test_perms_errors_name_paths_tried,
                         test_perms_acl_tiers,
                         test_perms_acl_reload_applies_to_connected_clients);

    tcase_add_unchecked_fixture(tc, users_make, users_remove);
    return RB_TEST_MAIN("perms", tc);
}
