/*
 * check_harness.c - the test harness's own promise (tests/harness/): a test
 * that Check kills at its timeout leaves nothing behind, however slow the
 * machine that made it time out (issue 42, 13).
 *
 * The suite runs itself again with RB_HARNESS_HANG=<dir>: that run's one
 * test creates a shared-memory object, starts a daemon (which makes its
 * segment and temp dir), forks a worker that keeps making objects, writes
 * both pids into <dir> and hangs past a 1 s timeout.  The outer test then
 * asserts that the inner run failed naming the timeout (a timeout is a
 * failure, never a pass), that it reached the hang (the pids were written:
 * "0 of 0" is no measurement), and that once the daemon and the worker are
 * gone no object named for the inner run, no temp dir of it and no process
 * of it is left.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "rbd_test.h"

static rbd_proc_t d;
static const char *hang_dir;

static void write_pid(const char *name, pid_t pid)
{
    char path[512], text[32];

    snprintf(path, sizeof(path), "%s/%s", hang_dir, name);
    snprintf(text, sizeof(text), "%d\n", (int)pid);
    rbd_write_file(path, text, strlen(text));
}

static void make_object(void)
{
    char inst[96], name[128];
    int fd;

    rb_test_instance(inst, sizeof(inst));
    snprintf(name, sizeof(name), "/ringbloom.%s", inst);
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0)
        close(fd);
}

/* The inner run's test: everything a test makes, then a hang. */
START_TEST(test_hangs_holding_everything)
{
    pid_t worker;

    make_object();
    rbd_start(&d, NULL);
    worker = fork();
    ck_assert_int_ge(worker, 0);
    if (worker == 0) {
        for (int n = 0; n < 10000; n++) {   /* bounded, should it outlive the sweep */
            make_object();
            usleep(10000);
        }
        _exit(0);
    }
    write_pid("daemon.pid", d.pid);
    write_pid("worker.pid", worker);
    for (;;)
        pause();
}
END_TEST

static pid_t read_pid(const char *dir, const char *name)
{
    char path[512], *text;
    size_t len;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    text = rbd_read_file(path, &len);
    ck_assert_msg(text != NULL, "the hanging test never wrote %s: it did not reach its hang", path);
    pid = (pid_t)atoi(text);
    free(text);
    return pid;
}

/* Waits until no process has this pid (the daemon dies of its
 * PR_SET_PDEATHSIG, the worker of Check's kill of the test's group). */
static int gone(pid_t pid)
{
    for (int waited = 0; waited < rbd_wait_ms(10000); waited += 10) {
        if (kill(pid, 0) != 0 && errno == ESRCH)
            return 1;
        usleep(10000);
    }
    return 0;
}

static unsigned leftovers(pid_t inner)
{
    /* The suite's shm objects and temp dirs: rb_test.h's names. */
    static const struct { const char *before, *after; } where[] = {
        { "/dev/shm/ringbloom.chk", "-*" }, { "/tmp/rbtest.", ".*" } };
    char pattern[128];
    glob_t g;
    unsigned n = 0;

    for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
        snprintf(pattern, sizeof(pattern), "%s%d%s", where[w].before, (int)inner, where[w].after);
        if (glob(pattern, 0, NULL, &g) != 0)
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++)
            fprintf(stderr, "left behind: %s\n", g.gl_pathv[i]);
        n += (unsigned)g.gl_pathc;
        globfree(&g);
    }
    return n;
}

START_TEST(test_timed_out_test_leaves_nothing)
{
    char dir[] = "/tmp/rbharness.XXXXXX", out[512], *text;
    pid_t inner, daemon, worker;
    size_t len;
    int status, fd;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out, sizeof(out), "%s/out", dir);
    inner = fork();
    ck_assert_int_ge(inner, 0);
    if (inner == 0) {
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        setenv("RB_HARNESS_HANG", dir, 1);
        unsetenv("CK_TIMEOUT_MULTIPLIER");
        unsetenv("CK_RUN_CASE");
        unsetenv("CK_RUN_SUITE");
        execl("/proc/self/exe", "check_harness", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(inner, &status, 0), inner);
    text = rbd_read_file(out, &len);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strstr(text, "Test timeout expired") != NULL, "no timeout named: %s", text);
    /* Its lines, not its "Checks: ..." summary: tests/summarize.sh counts
     * every such line of this log as this suite's. */
    printf("the inner run (pid %d) exited %d, saying:\n", (int)inner,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
        if (strstr(line, "Checks: ") == NULL)
            printf("  %s\n", line);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
                  "a run whose test timed out must fail");
    free(text);
    daemon = read_pid(dir, "daemon.pid");
    worker = read_pid(dir, "worker.pid");
    ck_assert_msg(gone(daemon), "the timed-out test's daemon (pid %d) is still running",
                  (int)daemon);
    ck_assert_msg(gone(worker), "the timed-out test's worker (pid %d) is still running",
                  (int)worker);
    ck_assert_uint_eq(leftovers(inner), 0);
    printf("daemon %d and worker %d gone; no shm object, no temp dir of run %d left\n",
           (int)daemon, (int)worker, (int)inner);
    ck_assert_int_eq(rbl_rmtree(dir), 0);
}
END_TEST

int main(void)
{
    hang_dir = getenv("RB_HARNESS_HANG");
    if (hang_dir != NULL) {
        /* Not RB_TCASE: its timeout stretches with the load; this one
         * must expire. */
        TCase *tc = tcase_create("hang");

        tcase_set_timeout(tc, 1);
        tcase_add_checked_fixture(tc, NULL, rbd_teardown);
        tcase_add_test(tc, test_hangs_holding_everything);
        return RB_TEST_MAIN("harness-hang", tc);
    }
    return RB_TEST_MAIN("harness", RB_TCASE("timeout", 60, NULL, NULL,
                                            test_timed_out_test_leaves_nothing));
}
