/*
 * check_config_files.c - the files the configuration names (issue 41):
 * CONFIG REWRITE's temporary file (a random name made exclusively, the old
 * file's owner and mode kept, a directory another user can write refused
 * saying why, a symlinked file refused, a line never split in two); the
 * logfile (a FIFO, a missing directory, a symbolic link or another user's
 * file refused by CONFIG SET with an error and a log line naming the path,
 * the old file kept; after logrotate and SIGHUP too, PING answering
 * throughout; no line forged); secrets (MONITOR, the slow log, CONFIG GET).
 * The tests that plant files as another user need root.
 */
#include "config.h"

#include <glob.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_config.h"

static int need_root(void)
{
    if (getuid() == 0)
        return 1;
    printf("planting files as another user needs root; skipped as uid %u\n",
           (unsigned)getuid());
    return 0;
}

typedef struct plant {
    const char *path, *target;
} plant_t;

static int plant(void *arg)
{
    const plant_t *p = arg;
    int fd;

    if (p->target != NULL)
        return symlink(p->target, p->path) == 0 ? 0 : 11;
    umask(0);
    fd = open(p->path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    return fd >= 0 && write(fd, "planted\n", 8) == 8 ? 0 : 12;
}

/* What another user could do where it can write: a symbolic link to
 * target (not NULL), or a 0666 file of its own, at path. */
static void plant_as_other(const char *path, const char *target)
{
    plant_t p = { path, target };

    rb_test_as_other(plant, &p);
}

/* The error text of CONFIG REWRITE on c, asserting it fails. */
static const char *rewrite_fails(rb_conn_t *c)
{
    int rc;
    const char *got = rbd_cmd(c, &rc, "CONFIG", "REWRITE", (const char *)NULL);

    ck_assert_msg(rc == RB_EREPLY, "CONFIG REWRITE answered %s", got);
    return got;
}

/* In a directory another user can write, that user may have planted the
 * temporary file (a symbolic link to a file of root's, or a 0666 file of
 * its own): the rewrite is refused saying why, the link's target and the
 * configuration are untouched and stay root's. */
START_TEST(test_config_rewrite_refuses_directory_others_write)
{
    char keep[256], target[300], tmp[300];
    const char *why;
    struct stat st;
    rb_conn_t *c;

    if (!need_root())
        return;
    cfg_start(&cfg_d, "");
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "OK", "CONFIG", "SET", "slowlog-max-len", "7");
    snprintf(keep, sizeof(keep), "%s/keep", cfg_d.dir);
    ck_assert_int_eq(mkdir(keep, 0700), 0);
    snprintf(target, sizeof(target), "%s/precious", keep);
    rbd_write_file(target, "precious\n", 9);
    snprintf(tmp, sizeof(tmp), "%s.rewrite.tmp", cfg_d.conf);
    ck_assert_int_eq(chmod(cfg_d.dir, 0777), 0);
    plant_as_other(tmp, target);
    why = rewrite_fails(c);
    ck_assert_msg(strstr(why, "can be written by group or others") != NULL &&
                  strstr(why, cfg_d.dir) != NULL, "%s", why);
    ck_assert_int_eq(rbd_file_count(target, "precious"), 1);
    ck_assert_int_eq(rbd_file_count(target, ""), 1);
    ck_assert_int_eq(unlink(tmp), 0);
    plant_as_other(tmp, NULL);
    rewrite_fails(c);
    ck_assert_int_eq(lstat(cfg_d.conf, &st), 0);
    ck_assert_msg(S_ISREG(st.st_mode) && st.st_uid == 0, "the configuration is now mode 0%o "
                  "uid %u", (unsigned)st.st_mode, (unsigned)st.st_uid);
    ck_assert_int_eq(rbd_file_count(cfg_d.conf, "slowlog-max-len"), 0);
    ck_assert_int_eq(chmod(cfg_d.dir, 0755), 0);
    rbd_expect(c, "OK", "CONFIG", "REWRITE");   /* a trusted directory again */
    ck_assert_int_eq(rbd_file_count(cfg_d.conf, "slowlog-max-len 7"), 1);
    ck_assert_int_eq(rbd_file_count(tmp, "planted"), 1);   /* never used */
    rb_conn_close(c);
}
END_TEST

/* The rewritten file keeps the old one's owner, group and mode, is made
 * under a name of its own (a file left at "<conf>.rewrite.tmp" is neither
 * used nor removed), and leaves no temporary file behind. */
START_TEST(test_config_rewrite_keeps_owner_and_mode)
{
    char stale[300], pattern[300];
    struct stat st;
    glob_t g;
    rb_conn_t *c;

    if (!need_root())
        return;
    cfg_start(&cfg_d, "");
    ck_assert_int_eq(chown(cfg_d.conf, RB_TEST_OTHER_UID, RB_TEST_OTHER_UID), 0);
    ck_assert_int_eq(chmod(cfg_d.conf, 0640), 0);
    snprintf(stale, sizeof(stale), "%s.rewrite.tmp", cfg_d.conf);
    rbd_write_file(stale, "stale\n", 6);
    ck_assert_int_eq(chmod(stale, 0666), 0);
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "OK", "CONFIG", "SET", "slowlog-max-len", "7");
    rbd_expect(c, "OK", "CONFIG", "REWRITE");
    ck_assert_int_eq(lstat(cfg_d.conf, &st), 0);
    ck_assert_msg(S_ISREG(st.st_mode) && st.st_uid == RB_TEST_OTHER_UID &&
                  st.st_gid == RB_TEST_OTHER_UID && (st.st_mode & 07777) == 0640,
                  "the rewritten file is uid %u gid %u mode 0%o", (unsigned)st.st_uid,
                  (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777));
    ck_assert_int_eq(rbd_file_count(cfg_d.conf, "slowlog-max-len 7"), 1);
    ck_assert_int_eq(rbd_file_count(stale, "stale"), 1);
    snprintf(pattern, sizeof(pattern), "%s.*", cfg_d.conf);
    ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
    ck_assert_msg(g.gl_pathc == 1, "%zu files beside the configuration", g.gl_pathc);
    globfree(&g);
    rb_conn_close(c);
}
END_TEST

/* A configuration that is a symbolic link: the rewrite would replace the
 * link by a file; it is refused, naming the target, the link kept. */
START_TEST(test_config_rewrite_refuses_symlinked_file)
{
    char real[300];
    struct stat st;
    rb_conn_t *c;

    rbd_prepare(&cfg_d, "");
    snprintf(real, sizeof(real), "%s.real", cfg_d.conf);
    ck_assert_int_eq(rename(cfg_d.conf, real), 0);
    ck_assert_int_eq(symlink(real, cfg_d.conf), 0);
    cfg_launch(&cfg_d);
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "OK", "CONFIG", "SET", "slowlog-max-len", "7");
    ck_assert_ptr_nonnull(strstr(rewrite_fails(c), "is a symbolic link (to "));
    ck_assert_int_eq(lstat(cfg_d.conf, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(rbd_file_count(real, "slowlog-max-len"), 0);
    rb_conn_close(c);
}
END_TEST

/* A line the operator wrote is copied whole, however long (a line cut in
 * two made its tail a line of its own: here an access rule); one the
 * parser would refuse stops the rewrite, the file unchanged. */
START_TEST(test_config_rewrite_never_splits_a_line)
{
    static char line[70100], *text;
    size_t len;
    FILE *f;
    rb_conn_t *c;

    cfg_start(&cfg_d, "");
    memset(line, 'x', 8190);
    line[0] = '#';
    snprintf(line + 8190, sizeof(line) - 8190, "acl-user 65534 +@all\n");
    ck_assert_ptr_nonnull(f = fopen(cfg_d.conf, "a"));
    fputs(line, f);
    ck_assert_int_eq(fclose(f), 0);
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "OK", "CONFIG", "SET", "slowlog-max-len", "7");
    rbd_expect(c, "OK", "CONFIG", "REWRITE");
    text = rbd_read_file(cfg_d.conf, &len);
    ck_assert_msg(strstr(text, line) != NULL && strstr(text, "\nacl-user") == NULL,
                  "the long line was not kept whole");
    free(text);
    memset(line, 'x', sizeof(line) - 2);
    line[0] = '#';
    line[sizeof(line) - 2] = '\n';
    ck_assert_ptr_nonnull(f = fopen(cfg_d.conf, "a"));
    fputs(line, f);
    ck_assert_int_eq(fclose(f), 0);
    rbd_expect(c, "OK", "CONFIG", "SET", "slowlog-max-len", "8");
    ck_assert_ptr_nonnull(strstr(rewrite_fails(c), "line too long"));
    ck_assert_int_eq(rbd_file_count(cfg_d.conf, "slowlog-max-len 7"), 1);
    rb_conn_close(c);
}
END_TEST

TCase *config_files_tcase(void)
{
    return RB_TCASE("rewrite", 60, NULL, rbd_teardown,
                    test_config_rewrite_refuses_directory_others_write,
                    test_config_rewrite_keeps_owner_and_mode,
                    test_config_rewrite_refuses_symlinked_file,
                    test_config_rewrite_never_splits_a_line);
}

/* CONFIG SET logfile to what the log cannot take: an error reply naming
 * the path and why, a warning in the log in use naming it, CONFIG GET
 * logfile unchanged, PING answered at once. */
static void logfile_refused(rb_conn_t *c, const char *log, const char *path, const char *why)
{
    char want[600];
    const char *got;
    int rc;

    got = rbd_cmd(c, &rc, "CONFIG", "SET", "logfile", path, (const char *)NULL);
    ck_assert_msg(rc == RB_EREPLY && strstr(got, path) != NULL && strstr(got, why) != NULL,
                  "CONFIG SET logfile %s: rc %d, %s", path, rc, got);
    snprintf(want, sizeof(want), "cannot open logfile %s: ", path);
    rbd_wait_line(log, want);
    snprintf(want, sizeof(want), "logfile\n%s", log);
    rbd_expect(c, want, "CONFIG", "GET", "logfile");
    rbd_expect(c, "PONG", "PING");
}

/* A FIFO at the log path (CONFIG SET, or logrotate's rename and SIGHUP), a
 * missing directory, a symbolic link: refused without waiting, the old
 * file kept; /dev/null is taken.  A path with a line break is refused and
 * forges no line; a relative one is made absolute. */
START_TEST(test_config_logfile_refuses_what_is_not_a_file)
{
    char log[300], fifo[300], path[600];
    int reader;
    rb_conn_t *c;

    cfg_start(&cfg_d, "logfile d.log");
    snprintf(log, sizeof(log), "%s/d.log", cfg_d.dir);
    rbd_wait_line(log, "ready");
    c = rbd_connect(&cfg_d);
    snprintf(fifo, sizeof(fifo), "%s/fifo", cfg_d.dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    logfile_refused(c, log, fifo, "FIFO");
    ck_assert_int_ge(reader = open(fifo, O_RDONLY | O_NONBLOCK), 0);
    logfile_refused(c, log, fifo, "not a regular file");
    close(reader);
    snprintf(path, sizeof(path), "%s/no-such-dir/x.log", cfg_d.dir);
    logfile_refused(c, log, path, "No such file or directory");
    snprintf(path, sizeof(path), "%s/link.log", cfg_d.dir);
    ck_assert_int_eq(symlink(log, path), 0);
    logfile_refused(c, log, path, "symbolic link");
    snprintf(path, sizeof(path), "%s/no-such-dir/x\n123:M 01 Jan 2026 00:00:00.000 * forged",
             cfg_d.dir);
    rbd_cmd(c, &(int){ 0 }, "CONFIG", "SET", "logfile", path, (const char *)NULL);
    rbd_expect(c, "OK", "CONFIG", "SET", "logfile", "/dev/null");
    rbd_expect(c, "OK", "CONFIG", "SET", "logfile", log);
    ck_assert_int_eq(rbd_file_count(log, "forged"), 0);

    snprintf(path, sizeof(path), "%s.1", log);   /* logrotate, a FIFO in the file's place */
    ck_assert_int_eq(rename(log, path), 0);
    ck_assert_int_eq(mkfifo(log, 0600), 0);
    ck_assert_int_eq(kill(cfg_d.pid, SIGHUP), 0);
    rbd_wait_line(path, "FIFO or a socket, not a file; the log stays where it was");
    rbd_expect(c, "PONG", "PING");
    ck_assert_int_eq(unlink(log), 0);
    ck_assert_int_eq(kill(cfg_d.pid, SIGHUP), 0);
    rbd_wait_line(log, "configuration reloaded");
    /* A relative path is the start directory's, as in the file (it was
     * kept relative: the daemon's working directory, / once detached). */
    rbd_expect(c, "OK", "CONFIG", "SET", "logfile", "other.log");
    snprintf(path, sizeof(path), "logfile\n%s/other.log", cfg_d.dir);
    rbd_expect(c, path, "CONFIG", "GET", "logfile");
    rb_conn_close(c);
}
END_TEST

/* CONFIG SET logfile naming the file in use, after it became one the
 * log cannot take (a directory in its place once logrotate moved it):
 * refused, said in the log still in use, nothing applied (issue 42, item
 * 10: it answered OK and the log went nowhere); a CONFIG SET that does
 * not name logfile still applies (the reopen's warning in the log); once
 * the path is a file's again, naming it reopens it and the lines go
 * there. */
START_TEST(test_config_logfile_named_again_is_checked)
{
    char log[300], moved[320];
    const char *got;
    rb_conn_t *c;
    int rc;

    cfg_start(&cfg_d, "logfile d.log");
    snprintf(log, sizeof(log), "%s/d.log", cfg_d.dir);
    snprintf(moved, sizeof(moved), "%s.1", log);
    rbd_wait_line(log, "ready");
    c = rbd_connect(&cfg_d);
    ck_assert_int_eq(rename(log, moved), 0);
    ck_assert_int_eq(mkdir(log, 0700), 0);
    got = rbd_cmd(c, &rc, "CONFIG", "SET", "logfile", log, (const char *)NULL);
    ck_assert_msg(rc == RB_EREPLY && strstr(got, "Is a directory") != NULL &&
                  strstr(got, "'logfile'") != NULL, "CONFIG SET logfile %s: rc %d, %s", log,
                  rc, got);
    rbd_wait_line(moved, "refused: cannot open logfile");
    rbd_expect(c, "OK", "CONFIG", "SET", "slowlog-max-len", "7");
    rbd_wait_line(moved, "settings applied but cannot open logfile");
    rbd_expect(c, "slowlog-max-len\n7", "CONFIG", "GET", "slowlog-max-len");
    ck_assert_int_eq(rmdir(log), 0);
    rbd_expect(c, "OK", "CONFIG", "SET", "logfile", log);
    rbd_expect(c, "OK", "CONFIG", "SET", "slowlog-max-len", "8");
    rbd_wait_line(log, "CONFIG SET by uid");
    rb_conn_close(c);
}
END_TEST

/* A file of another user at the log path (planted where it could write)
 * is not appended to. */
START_TEST(test_config_logfile_refuses_another_users_file)
{
    char log[300], other[300];
    rb_conn_t *c;

    if (!need_root())
        return;
    cfg_start(&cfg_d, "logfile d.log");
    snprintf(log, sizeof(log), "%s/d.log", cfg_d.dir);
    snprintf(other, sizeof(other), "%s/other.log", cfg_d.dir);
    ck_assert_int_eq(chmod(cfg_d.dir, 0777), 0);
    plant_as_other(other, NULL);
    ck_assert_int_eq(chmod(cfg_d.dir, 0755), 0);
    rbd_wait_line(log, "ready");
    c = rbd_connect(&cfg_d);
    logfile_refused(c, log, other, "belongs to uid 65534");
    ck_assert_int_eq(rbd_file_count(other, ""), 1);
    rb_conn_close(c);
}
END_TEST

/* The configuration file and the pidfile are files: a FIFO at either path
 * is refused at start without waiting for a writer, and a FIFO put in the
 * configuration's place is refused by SIGHUP (a warning, the settings
 * kept), PING answering throughout. */
START_TEST(test_config_fifo_for_config_or_pidfile_refused)
{
    char out[2048], real[300], extra[400];
    const char *why;
    rb_conn_t *c;

    cfg_start(&cfg_d, "");
    c = rbd_connect(&cfg_d);
    snprintf(real, sizeof(real), "%s.real", cfg_d.conf);
    ck_assert_int_eq(rename(cfg_d.conf, real), 0);
    ck_assert_int_eq(mkfifo(cfg_d.conf, 0600), 0);
    ck_assert_int_eq(kill(cfg_d.pid, SIGHUP), 0);
    rbd_wait_line(cfg_d.log, "SIGHUP: configuration not reloaded: ");
    ck_assert_int_ge(rbd_log_count(&cfg_d, "not a regular file"), 1);
    rbd_expect(c, "PONG", "PING");
    rb_conn_close(c);
    ck_assert_int_eq(rbd_test_config(cfg_d.conf, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "not a regular file") != NULL, "%s", out);
    rbd_stop(&cfg_d, SIGTERM);

    ck_assert_int_eq(unlink(cfg_d.conf), 0);
    snprintf(extra, sizeof(extra), "pidfile %s/pid.fifo", cfg_d.dir);
    rbd_write_conf(&cfg_d, extra);
    snprintf(extra, sizeof(extra), "%s/pid.fifo", cfg_d.dir);
    ck_assert_int_eq(mkfifo(extra, 0600), 0);
    why = rbd_start_fails(cfg_d.conf);
    ck_assert_msg(strstr(why, extra) != NULL && strstr(why, "not a regular file") != NULL, "%s",
                  why);
}
END_TEST

TCase *config_logfile_tcase(void)
{
    return RB_TCASE("paths", 60, NULL, rbd_teardown,
                    test_config_logfile_refuses_what_is_not_a_file,
                    test_config_logfile_named_again_is_checked,
                    test_config_logfile_refuses_another_users_file,
                    test_config_fifo_for_config_or_pidfile_refused);
}

/* What MONITOR's connection fd sends until a line with `until` (<= 5 s),
 * into buf. */
static void monitor_until(int fd, char *buf, size_t cap, const char *until)
{
    size_t have = 0;

    buf[0] = '\0';
    for (uint64_t end = rb_test_now_ms() + 5000; strstr(buf, until) == NULL;) {
        struct pollfd p = { fd, POLLIN, 0 };
        ssize_t n;
        ck_assert_msg(rb_test_now_ms() < end, "MONITOR: no '%s' within 5 s: %s", until, buf);
        if (poll(&p, 1, 100) <= 0)
            continue;
        ck_assert_int_gt(n = read(fd, buf + have, cap - 1 - have), 0);
        have += (size_t)n;
        buf[have] = '\0';
    }
}

/* Passwords are shown to nobody: MONITOR and the slow log show
 * "(redacted)" for AUTH's arguments, HELLO's AUTH user and password and
 * CONFIG SET's value of etcd-password (refused, as it takes a restart:
 * the request still carried it), and CONFIG GET etcd-password answers
 * "(redacted)". */
START_TEST(test_config_secrets_are_redacted)
{
    static char seen[65536];
    const char *got;
    int mon, rc;
    rb_conn_t *c;

    cfg_start(&cfg_d, "etcd-password s3cret-file\nslowlog-log-slower-than 0");
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "etcd-password\n(redacted)", "CONFIG", "GET", "etcd-password");
    mon = rbd_raw_connect(&cfg_d);
    ck_assert_int_eq(write(mon, "*1\r\n$7\r\nMONITOR\r\n", 17), 17);
    monitor_until(mon, seen, sizeof(seen), "+OK\r\n");
    rbd_cmd(c, &rc, "HELLO", "2", "AUTH", "default", "s3cret-hello", (const char *)NULL);
    ck_assert_int_eq(rc, RB_OK);
    rbd_cmd(c, &rc, "HELLO", "2", "AUTH", "s3cret-user", "s3cret-hello2", (const char *)NULL);
    rbd_cmd(c, &rc, "HELLO", "AUTH", "s3cret-user", "s3cret-hello3", (const char *)NULL);
    rbd_expect(c, "OK", "AUTH", "default", "s3cret-auth");
    rbd_cmd(c, &rc, "AUTH", "s3cret-auth2", (const char *)NULL);
    got = rbd_cmd(c, &rc, "CONFIG", "SET", "slowlog-max-len", "9", "ETCD-PASSWORD",
                  "s3cret-set", (const char *)NULL);
    ck_assert_msg(rc == RB_EREPLY && strstr(got, "s3cret") == NULL, "%s", got);
    rbd_expect(c, "the-end", "ECHO", "the-end");
    monitor_until(mon, seen, sizeof(seen), "the-end");
    close(mon);
    ck_assert_msg(strstr(seen, "s3cret") == NULL, "MONITOR showed a secret:\n%s", seen);
    ck_assert_msg(strstr(seen, "\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\"\r\n") &&
                  strstr(seen, "\"AUTH\" \"(redacted)\"\r\n") &&
                  strstr(seen, "\"slowlog-max-len\" \"9\" \"ETCD-PASSWORD\" \"(redacted)\""),
                  "%s", seen);
    got = rbd_cmd(c, &rc, "SLOWLOG", "GET", "-1", (const char *)NULL);
    ck_assert_int_eq(rc, RB_OK);
    ck_assert_msg(strstr(got, "s3cret") == NULL && strstr(got, "(redacted)") != NULL,
                  "SLOWLOG showed a secret:\n%s", got);
    rb_conn_close(c);
}
END_TEST

TCase *config_secrets_tcase(void)
{
    return RB_TCASE("secrets", 60, NULL, rbd_teardown, test_config_secrets_are_redacted);
}
