/*
 * check_ready.c - ringbloomd tells whoever started it when it serves, or
 * why it cannot (daemon/server/ready.c): a daemonized start returns only once the
 * socket answers, or fails with the reason on stderr; under systemd
 * (NOTIFY_SOCKET) READY=1 comes only once the socket accepts, and
 * STOPPING=1 at shutdown; a user without a home directory starts it on the
 * defaults, and a start that fails leaves no directory it made.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "rbd_test.h"

static rbd_proc_t d;

/* Runs `ringbloomd -c conf [args]` daemonized (no -f) and waits for the
 * parent: its exit status; its stderr in err. */
static int run_daemonized(const char *const *args, char *err, size_t cap)
{
    const char *argv[12] = { rbd_binary(), "-c", d.conf };
    int p[2], status, argc = 3;
    size_t len = 0;
    ssize_t n;
    pid_t pid;

    for (int i = 0; args != NULL && args[i] != NULL && argc < 11; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    while (len + 1 < cap && (n = read(p[0], err + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    err[len] = '\0';
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The daemonized daemon's pid, from its pidfile. */
static pid_t daemon_pid(void)
{
    char path[300], *text;
    size_t len;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/pid", d.dir);
    text = rbd_read_file(path, &len);
    pid = (pid_t)atoi(text);
    free(text);
    ck_assert_int_gt(pid, 1);
    return pid;
}

/* Sends SIGTERM to a process that is not our child and waits until it is
 * gone (<= 10 s). */
static void stop_pid(pid_t pid)
{
    kill(pid, SIGTERM);
    for (int i = 0; i < 10000 && kill(pid, 0) == 0; i++)
        usleep(1000);
    ck_assert_msg(kill(pid, 0) != 0, "ringbloomd (pid %d) did not stop", (int)pid);
}

/* A connection made once, without waiting: the socket must answer now. */
static int answers_now(const char *sock)
{
    rb_conn_t *c;
    char reply[64];
    const char *argv[] = { "PING" };
    const size_t argl[] = { 4 };
    int ok;

    if (rb_conn_open(NULL, sock, 2000, &c) != RB_OK)
        return 0;
    ok = rb_conn_command(c, 1, argv, argl, reply, sizeof(reply)) == RB_OK &&
         strcmp(reply, "PONG") == 0;
    rb_conn_close(c);
    return ok;
}

START_TEST(test_ready_daemonized_failure_says_why)
{
    char err[4096], path[300];
    const char *bad_socket[] = { "-s", "/proc/nope/x.sock", NULL };
    const char *bad_dir[] = { "-d", path, NULL };

    rbd_prepare(&d, NULL);
    ck_assert_int_eq(run_daemonized(bad_socket, err, sizeof(err)), 1);
    printf("bad socket: %s", err);
    ck_assert_msg(strstr(err, "cannot listen") != NULL && strstr(err, "/proc/nope") != NULL,
                  "stderr: %s", err);
    rb_segment_unlink(d.inst);   /* the start got that far */
    /* The parent returns once the daemon reports; the daemon itself still
     * cleans up, and holds the pidfile until it is gone (<= 5 s). */
    snprintf(path, sizeof(path), "%s/pid", d.dir);
    for (int i = 0; i < 5000 && access(path, F_OK) == 0; i++)
        usleep(1000);
    ck_assert_msg(access(path, F_OK) != 0, "the failed daemon kept its pidfile");

    /* A state directory under a plain file. */
    snprintf(path, sizeof(path), "%s/file", d.dir);
    rbd_write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/file/state", d.dir);
    ck_assert_int_eq(run_daemonized(bad_dir, err, sizeof(err)), 1);
    printf("bad state directory: %s", err);
    ck_assert_msg(strstr(err, "cannot start") != NULL && strstr(err, "not a directory") != NULL,
                  "stderr: %s", err);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* nothing was made */
}
END_TEST

START_TEST(test_ready_daemonized_serves_when_parent_returns)
{
    char err[4096];
    pid_t pid;

    rbd_prepare(&d, NULL);
    ck_assert_int_eq(run_daemonized(NULL, err, sizeof(err)), 0);
    ck_assert_str_eq(err, "");
    ck_assert(answers_now(d.sock));   /* at once: no retry */
    pid = daemon_pid();
    d.pid = pid;                       /* killed by the teardown if we fail */
    stop_pid(pid);
    d.pid = 0;
}
END_TEST

/* What systemd would receive: datagrams on a socket of the test's own. */
static int notify_socket(const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* The next datagram containing want (<= 10 s); the message in buf. */
static int await_notify(int fd, const char *want, char *buf, size_t cap)
{
    for (int i = 0; i < 1000; i++) {
        ssize_t n = recv(fd, buf, cap - 1, MSG_DONTWAIT);
        if (n > 0) {
            buf[n] = '\0';
            if (strstr(buf, want) != NULL)
                return 1;
            continue;
        }
        usleep(10000);
    }
    return 0;
}

START_TEST(test_ready_notify_socket_ready_after_socket_accepts)
{
    char path[300], env[320], msg[1024];
    int fd, status;
    pid_t pid;

    rbd_prepare(&d, NULL);
    snprintf(path, sizeof(path), "%s/notify", d.dir);
    fd = notify_socket(path);
    snprintf(env, sizeof(env), "NOTIFY_SOCKET=%s", path);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const char *argv[] = { rbd_binary(), "-f", "-c", d.conf, NULL };
        int out = open(d.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        putenv(env);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    d.pid = pid;
    ck_assert_msg(await_notify(fd, "READY=1", msg, sizeof(msg)), "no READY=1 within 10 s");
    ck_assert(answers_now(d.sock));   /* the socket accepts when READY=1 arrives */
    ck_assert_msg(strstr(msg, "STATUS=serving instance") != NULL, "%s", msg);
    ck_assert_msg(strstr(msg, "MAINPID=") != NULL, "%s", msg);
    kill(pid, SIGTERM);
    ck_assert_msg(await_notify(fd, "STOPPING=1", msg, sizeof(msg)), "no STOPPING=1");
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    d.pid = 0;
    close(fd);

    /* A failed start: its reason as STATUS=, no READY=1. */
    fd = -1;
    unlink(path);
    fd = notify_socket(path);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const char *argv[] = { rbd_binary(), "-f", "-c", d.conf, "-s", "/proc/nope/x.sock",
                               NULL };
        int out = open(d.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        putenv(env);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    ck_assert_msg(await_notify(fd, "STATUS=cannot listen", msg, sizeof(msg)),
                  "no STATUS= with the reason");
    ck_assert(strstr(msg, "READY=1") == NULL);
    close(fd);
}
END_TEST

/* ---- a user without a home directory (issue 42, 4) ----------------------------- */

/* Runs `ringbloomd -f -i d.inst -o keep-segment=no ARGS` as RB_TEST_OTHER_UID
 * (nobody) in the environment a login as that user gives it without a
 * session: HOME its passwd entry's, which does not exist (/nonexistent),
 * no XDG_STATE_HOME, and XDG_RUNTIME_DIR xdg (a private directory of
 * nobody's, so that the run directory is the test's own).  Its output goes
 * to d.log.  Returns its pid. */
static pid_t start_homeless(const char *xdg, const char *const *args)
{
    const char *argv[12] = { rbd_binary(), "-f", "-i", d.inst, "-o", "keep-segment=no" };
    int argc = 6;
    pid_t pid;

    for (int i = 0; args != NULL && args[i] != NULL && argc < 11; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int out = open(d.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 || rb_test_become_other() != 0)
            _exit(126);
        setenv("HOME", "/nonexistent", 1);
        setenv("XDG_RUNTIME_DIR", xdg, 1);
        unsetenv("XDG_STATE_HOME");
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* 1 if path exists (lstat). */
static int exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* A user without a home directory (nobody: /nonexistent) starts the
 * daemon on the defaults: the state falls back to
 * /tmp/ringbloom-<uid>/state/<instance>, as documented, and the log says
 * that a reboot may clear it.  A start that fails leaves no directory it
 * made: not the run directory, not the state directory with the start-up
 * snapshot in it (a socket it cannot make fails the start after both),
 * not /tmp/ringbloom-<uid> when it made that. */
START_TEST(test_ready_homeless_user_falls_back_and_failure_leaves_nothing)
{
    char xdg[300], run[320], sock[400], tmp[64], state[200], snap[260], err[4096];
    const char *bad_dir[] = { "-d", "/proc/nope/state", NULL };
    const char *bad_sock[] = { "-s", "/proc/nope/x.sock", NULL };
    int status, tmp_before;
    pid_t pid;

    if (getuid() != 0) {
        printf("the homeless-user test needs root (to become nobody); it checks nothing\n");
        return;
    }
    rbd_prepare(&d, NULL);
    snprintf(xdg, sizeof(xdg), "%s/xdg", d.dir);
    ck_assert_int_eq(mkdir(xdg, 0700), 0);
    ck_assert_int_eq(chown(xdg, RB_TEST_OTHER_UID, RB_TEST_OTHER_UID), 0);
    snprintf(run, sizeof(run), "%s/ringbloom", xdg);
    snprintf(sock, sizeof(sock), "%s/%s.sock", run, d.inst);
    snprintf(tmp, sizeof(tmp), "/tmp/ringbloom-%d", RB_TEST_OTHER_UID);
    snprintf(state, sizeof(state), "%s/state/%s", tmp, d.inst);
    snprintf(snap, sizeof(snap), "%s/snapshot.rbs", state);
    tmp_before = exists(tmp);

    /* It starts, its state in the fallback. */
    d.pid = pid = start_homeless(xdg, NULL);
    for (int i = 0; i < rbd_wait_ms(10000) / 10 && !answers_now(sock); i++) {
        ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0, "ringbloomd exited (status %d): "
                      "%s", status, rbd_read_file(d.log, &(size_t){ 0 }));
        usleep(10000);
    }
    ck_assert_msg(answers_now(sock), "no answer on %s", sock);
    ck_assert_msg(exists(snap), "no %s", snap);
    ck_assert_int_eq(rbd_file_count(d.log, "no home directory of its own (HOME=/nonexistent)"),
                     1);
    kill(pid, SIGTERM);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    d.pid = 0;
    ck_assert_int_eq(rbl_rmtree(state), 0);   /* the test's state */
    ck_assert_int_eq(rbl_rmtree(run), 0);
    if (!tmp_before) {
        ck_assert_int_eq(rmdir(strcat(strcpy(err, tmp), "/state")), 0);
        ck_assert_int_eq(rmdir(tmp), 0);
    }

    /* Starts that fail: the state directory cannot be made, then the
     * socket cannot (after the run and state directories and the start-up
     * snapshot): nothing stays. */
    for (int k = 0; k < 2; k++) {
        pid = start_homeless(xdg, k == 0 ? bad_dir : bad_sock);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
        printf("failed start %d left: run directory %s, state directory %s, %s %s\n", k,
               exists(run) ? "yes" : "no", exists(state) ? "yes" : "no", tmp,
               tmp_before ? "(there before)" : exists(tmp) ? "yes" : "no");
        ck_assert_msg(!exists(run) && !exists(state), "a failed start left %s or %s", run,
                      state);
        ck_assert_msg(tmp_before || !exists(tmp), "a failed start left %s", tmp);
    }
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("ready",
                        RB_TCASE("ready", 120, NULL, rbd_teardown,
                                 test_ready_daemonized_failure_says_why,
                                 test_ready_homeless_user_falls_back_and_failure_leaves_nothing,
                                 test_ready_daemonized_serves_when_parent_returns,
                                 test_ready_notify_socket_ready_after_socket_accepts));
}
