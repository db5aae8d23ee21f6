/*
 * check_logs.c - ringbloomd's log (rbd_log.c): the logfile setting, its
 * reopen on SIGHUP after logrotate's rename, a logfile that cannot be
 * opened (at start: a start error naming it; on SIGHUP: a warning, the
 * old file kept), the syslog settings as the parser takes them, the
 * journal's "<N>" priority prefix when JOURNAL_STREAM names stderr, and
 * the ring changes logged once, at notice level, with the peer's uid and
 * pid (cmd_ring.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rbd_test.h"

/* A test's daemon (static: rbd_teardown removes it after the test). */
static rbd_proc_t d;

static void teardown(void)
{
    unsetenv("JOURNAL_STREAM");
    rbd_teardown();
}

/* A daemon logging to dir/d.log: its path into path. */
static void start_with_logfile(rbd_proc_t *dp, char *path, size_t cap)
{
    char extra[600];

    rbd_prepare(dp, "");
    snprintf(path, cap, "%s/d.log", dp->dir);
    snprintf(extra, sizeof(extra), "logfile %s", path);
    rbd_write_conf(dp, extra);
    rbd_launch(dp, NULL);
}

/* Lines go to the logfile, not to stderr; after a rename and SIGHUP the
 * daemon writes a new file at the path, and the renamed one gets nothing
 * more.  Each ring change is one notice line with the uid and pid of the
 * client that made it. */
START_TEST(test_logfile_reopened_after_rename)
{
    char path[512], old[600], want[128];
    rb_conn_t *c;

    start_with_logfile(&d, path, sizeof(path));
    rbd_wait_line(path, " * ringbloomd ");
    ck_assert_int_eq(rbd_log_count(&d, "ready"), 0);   /* the file replaces stderr */
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "n1", "3");
    snprintf(want, sizeof(want), "* ring change made: RING.ADD n1 3 (uid %u, pid %d)",
             (unsigned)getuid(), (int)getpid());
    rbd_wait_line(path, want);
    ck_assert_int_eq(rbd_file_count(path, "ring change"), 1);

    snprintf(old, sizeof(old), "%s.1", path);
    ck_assert_int_eq(rename(path, old), 0);
    rbd_expect(c, "OK", "RING.ADD", "n2");   /* still the renamed file's */
    rbd_wait_line(old, "RING.ADD n2");
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    rbd_wait_line(path, "configuration reloaded");
    rbd_expect(c, "OK", "RING.DOWN", "n1");
    rbd_wait_line(path, "ring change made: RING.DOWN n1 (uid");
    ck_assert_int_eq(rbd_file_count(old, "RING.DOWN"), 0);
    ck_assert_int_eq(rbd_file_count(old, "configuration reloaded"), 0);
    ck_assert_int_eq(rbd_file_count(path, "RING.ADD"), 0);
    rb_conn_close(c);

    /* A restart replays the ring's log silently: no change is logged again. */
    rbd_stop(&d, SIGTERM);
    rbd_restart_cold(&d);
    rbd_wait_line(path, "ready");
    ck_assert_int_eq(rbd_file_count(path, "ring change"), 1);
}
END_TEST

/* A logfile that cannot be opened: at start, a start error naming it; on
 * SIGHUP, a warning in the file in use, which stays in use.  In the
 * foreground with a logfile, an error (a start that fails later) goes to
 * stderr as well as to the file. */
START_TEST(test_logfile_cannot_open)
{
    char path[512], bad[600], extra[1200];
    const char *why;
    rb_conn_t *c;

    start_with_logfile(&d, path, sizeof(path));
    rbd_wait_line(path, "ready");
    snprintf(bad, sizeof(bad), "%s/no-such-dir/d.log", d.dir);
    snprintf(extra, sizeof(extra), "logfile %s", bad);
    rbd_write_conf(&d, extra);
    ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
    rbd_wait_line(path, "settings applied but cannot open logfile");
    ck_assert_int_eq(rbd_file_count(path, bad), 1);
    ck_assert_int_eq(rbd_file_count(path, "the log stays where it was"), 1);
    c = rbd_connect(&d);
    snprintf(extra, sizeof(extra), "logfile\n%s", path);   /* CONFIG GET names the file in use */
    rbd_expect(c, extra, "CONFIG", "GET", "logfile");
    rb_conn_close(c);
    rbd_stop(&d, SIGTERM);
    rbd_wait_line(path, "ringbloomd stopped");

    why = rbd_start_fails(d.conf);
    ck_assert_msg(strstr(why, "cannot start: cannot open logfile") != NULL &&
                  strstr(why, bad) != NULL && strstr(why, "No such file or directory") != NULL,
                  "%s", why);

    snprintf(bad, sizeof(bad), "%s/not-a-dir", d.dir);
    rbd_write_file(bad, "", 0);
    snprintf(extra, sizeof(extra), "logfile %s\ndir %s", path, bad);
    rbd_write_conf(&d, extra);
    why = rbd_start_fails(d.conf);
    ck_assert_msg(strstr(why, " ! cannot start: ") != NULL && strstr(why, bad) != NULL, "%s",
                  why);
    ck_assert_int_eq(rbd_file_count(path, " ! cannot start: "), 1);
}
END_TEST

/* The syslog settings and logfile as redis.conf writes them: the defaults,
 * each value that is accepted, and the refusals. */
START_TEST(test_syslog_settings_parse)
{
    char out[16384], want[600];

    rbd_prepare(&d, "");
    ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "\nsyslog-enabled yes\n") && strstr(out, "\nsyslog-ident ringbloomd\n")
                  && strstr(out, "\nsyslog-facility daemon\n") && strstr(out, "\nlogfile \"\"\n"),
                  "%s", out);

    rbd_write_conf(&d, "syslog-enabled no\nsyslog-ident rb-test\nsyslog-facility local3\n"
                   "logfile \"\"\n");
    ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "\nsyslog-enabled no\n") && strstr(out, "\nsyslog-ident rb-test\n")
                  && strstr(out, "\nsyslog-facility local3\n") && strstr(out, "\nlogfile \"\"\n"),
                  "%s", out);
    for (int i = 0; i < 8; i++) {
        char line[64];
        snprintf(line, sizeof(line), "syslog-facility local%d\n", i);
        rbd_write_conf(&d, line);
        ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 0);
        ck_assert_msg(strstr(out, line) != NULL, "%s", out);
    }
    rbd_write_conf(&d, "syslog-facility user\n");
    ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "\nsyslog-facility user\n") != NULL, "%s", out);

    /* A relative logfile is taken from the directory ringbloomd starts in. */
    rbd_write_conf(&d, "logfile rel.log\n");
    ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 0);
    ck_assert_msg(strstr(out, "\nlogfile /") != NULL && strstr(out, "/rel.log\n") != NULL, "%s",
                  out);

    rbd_write_conf(&d, "syslog-facility local8\n");
    ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "syslog-facility: 'local8' is not local0 .. local7, daemon or user"),
                  "%s", out);
    rbd_write_conf(&d, "syslog-enabled maybe\n");
    ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, "syslog-enabled: 'maybe' is not yes or no"), "%s", out);
    rbd_write_conf(&d, "syslog-ident \"\"\n");
    ck_assert_int_eq(rbd_test_config(d.conf, out, sizeof(out)), 2);
    snprintf(want, sizeof(want), "syslog-ident: value empty");
    ck_assert_msg(strstr(out, want), "%s", out);
}
END_TEST

/* Under systemd stderr is the journal's stream, which JOURNAL_STREAM
 * names (device:inode): each line is "<N>message", N its priority.  Here
 * the stream is the test's own file, the daemon's stderr; a JOURNAL_STREAM
 * naming another file leaves the usual lines. */
START_TEST(test_journal_prefix)
{
    struct stat st;
    char js[64];
    rb_conn_t *c;

    rbd_prepare(&d, "");
    rbd_write_file(d.log, "", 0);
    ck_assert_int_eq(stat(d.log, &st), 0);
    snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", js, 1);
    rbd_launch(&d, NULL);
    rbd_wait_line(d.log, "<5>ringbloomd ");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "n1");
    rbd_wait_line(d.log, "<5>ring change made: RING.ADD n1 (uid");
    rb_conn_close(c);
    ck_assert_int_eq(rbd_log_count(&d, ":M "), 0);   /* no time, no pid: journald's */
    rbd_stop(&d, SIGTERM);

    snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino + 1);
    setenv("JOURNAL_STREAM", js, 1);
    rbd_launch(&d, NULL);
    rbd_wait_line(d.log, " * ringbloomd ");   /* the first run wrote none such */
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("logs",
                        RB_TCASE("logfile", 60, NULL, teardown,
                                 test_logfile_reopened_after_rename, test_logfile_cannot_open),
                        RB_TCASE("settings", 60, NULL, teardown, test_syslog_settings_parse),
                        RB_TCASE("journal", 60, NULL, teardown, test_journal_prefix));
}
