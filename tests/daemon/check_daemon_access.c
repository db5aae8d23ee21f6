/*
 * check_daemon_access.c - check_daemon's access and CLI TCases: another
 * uid reads but cannot write; the daemon refuses a squatted segment, a
 * writable segment mode, a foreign state directory (the service user's
 * run directory saying what to do) and a run directory behind another
 * user's symlink; clients refuse an untrusted socket
 * directory; the CLI refuses a squatted segment, says when a change may
 * have been applied, escapes node names, and names the group that would
 * let a refused user connect.
 */
#include <endian.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/mman.h>

#include "check_daemon.h"
#include "hash.h"

static rbd_proc_t d;

/* Another uid can connect, read and look up, but every mutation gets
 * NOPERM and changes nothing. */
START_TEST(test_daemon_other_uid_reads_but_cannot_write)
{
    rb_conn_t *c;
    int status;
    pid_t pid;

    if (getuid() != 0) {
        printf("access test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_ring_add(c, "node-a", 6, 1), RB_OK);
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "1000");
    rbd_expect(c, "1", "BF.ADD", "f", "seen");
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rb_segment_t *seg;
        rb_bloom_t *bf;
        rb_node_t n;
        rb_conn_t *o;
        char buf[512];
        const char *add[3] = { "BF.ADD", "f", "new" }, *ring[2] = { "RING.ADD", "evil" };
        const char *save[1] = { "SAVE" }, *exist[3] = { "BF.EXISTS", "f", "seen" };
        size_t addl[3] = { 6, 1, 3 }, ringl[2] = { 8, 4 }, savel[1] = { 4 }, exl[3] = { 9, 1, 4 };
        if (rb_test_become_other() != 0)
            _exit(10);
        if (rb_segment_attach(d.inst, 0, &seg) != RB_OK || rb_ring_lookup(seg, "k", 1, &n) != 0 ||
            strcmp(n.name, "node-a") != 0 || rb_bloom_open(seg, "f", 1, &bf) != RB_OK ||
            rb_bloom_contains(bf, "seen", 4) != 1)
            _exit(11);
        if (rb_conn_open(NULL, d.sock, 5000, &o) != RB_OK)
            _exit(12);
        if (rb_conn_command(o, 3, exist, exl, buf, sizeof(buf)) != RB_OK || strcmp(buf, "1") != 0)
            _exit(13);
        if (rb_conn_command(o, 3, add, addl, buf, sizeof(buf)) != RB_EPERM ||
            strstr(buf, "NOPERM") != buf)
            _exit(14);
        if (rb_conn_command(o, 2, ring, ringl, buf, sizeof(buf)) != RB_EPERM ||
            rb_conn_command(o, 1, save, savel, buf, sizeof(buf)) != RB_EPERM ||
            rb_conn_ring_remove(o, "node-a", 6) != RB_EPERM)
            _exit(15);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child step %d failed",
                  WEXITSTATUS(status));
    /* Nothing changed. */
    rbd_expect(c, "0", "BF.EXISTS", "f", "new");
    rbd_expect(c, "1", "BF.CARD", "f");
    rbd_expect(c, "node-a\n1", "RING.NODES");
    rb_conn_close(c);
}
END_TEST

/* Another user creates an object under the instance's name while the
 * daemon is down (/dev/shm is writable by everyone): the daemon must not
 * adopt it (its owner could rewrite what readers trust) and says why. */
START_TEST(test_daemon_refuses_squatted_segment)
{
    char out[4096] = "";
    rb_conn_t *c;
    int status;

    if (getuid() != 0) {
        printf("squatting test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "kept");
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rb_test_squat_segment(d.inst);
    status = rbd_run_daemon(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "belongs to another user") != NULL, "output: %s", out);
    ck_assert_msg(strstr(out, d.inst) != NULL, "output: %s", out);
    /* The owner (root here) removes it; the daemon starts from its files. */
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.EXISTS", "f", "kept");
    rb_conn_close(c);
}
END_TEST

/* A segment mode that would let others write is a config error. */
START_TEST(test_daemon_refuses_writable_segment_mode)
{
    char out[4096] = "";
    int status;

    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    rbd_write_conf(&d, "segment-mode 0664");
    status = rbd_run_daemon(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "segment-mode: '0664' lets group or others write") != NULL,
                  "output: %s", out);
}
END_TEST

/* A state directory another user made in advance is refused (it could
 * read the log and snapshot, or replace them). */
START_TEST(test_daemon_refuses_foreign_directory)
{
    char out[4096] = "", state[200], extra[300];
    int status;

    if (getuid() != 0) {
        printf("directory test needs root to chown; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    snprintf(state, sizeof(state), "%s/squatted", d.dir);
    ck_assert_int_eq(mkdir(state, 0777), 0);
    ck_assert_int_eq(chown(state, RB_TEST_OTHER_UID, RB_TEST_OTHER_UID), 0);
    snprintf(extra, sizeof(extra), "dir %s", state);
    rbd_write_conf(&d, extra);
    status = rbd_run_daemon(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "belongs to uid 65534") != NULL, "output: %s", out);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* nothing created */
}
END_TEST

/* Issue 25 item 13: once the Debian package is installed, /run/ringbloom
 * is its service user's (root made it theirs), and a plain `ringbloomd`
 * run as root refuses it.  The refusal stays, and says what to do: run
 * it as that user, or choose another directory by the setting named.
 * Here a run directory of nobody's in a directory only root can write;
 * nothing is created in it. */
START_TEST(test_daemon_service_run_directory_refusal_says_what_to_do)
{
    char svc[200], extra[600], out[4096] = "";
    struct stat st;
    int status;

    if (getuid() != 0) {
        printf("run directory test needs root to chown; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    ck_assert_int_eq(stat(d.dir, &st), 0);
    ck_assert(st.st_uid == 0 && (st.st_mode & 022) == 0);   /* only root can write it */
    snprintf(svc, sizeof(svc), "%s/svc", d.dir);
    ck_assert_int_eq(mkdir(svc, 0750), 0);
    ck_assert_int_eq(chown(svc, RB_TEST_OTHER_UID, RB_TEST_OTHER_UID), 0);

    /* The pidfile there (checked first). */
    snprintf(extra, sizeof(extra), "socket %s/x.sock\npidfile %s/x.pid", svc, svc);
    rbd_write_conf(&d, extra);
    status = rbd_run_daemon(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "belongs to uid 65534") != NULL &&
                  strstr(out, "run ringbloomd as nobody (sudo -u nobody ringbloomd") != NULL &&
                  strstr(out, "the setting pidfile (-o pidfile=PATH)") != NULL,
                  "output: %s", out);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* refused before anything */

    /* The socket there, the pidfile elsewhere. */
    snprintf(extra, sizeof(extra), "socket %s/x.sock", svc);
    rbd_write_conf(&d, extra);
    status = rbd_run_daemon(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "run ringbloomd as nobody") != NULL &&
                  strstr(out, "the setting socket (-s PATH)") != NULL, "output: %s", out);
    ck_assert_int_eq(rmdir(svc), 0);   /* still empty */
    (void)rb_segment_unlink(d.inst);  /* the socket comes after the segment (keep-segment yes) */

    /* nobody's directory in a sticky one anyone can write (/tmp's
     * ringbloom-<uid> made by another user): anyone could have made it,
     * so the message does not send the daemon to its owner. */
    snprintf(svc, sizeof(svc), "%s/tmp", d.dir);
    ck_assert_int_eq(mkdir(svc, 0700), 0);
    ck_assert_int_eq(chmod(svc, 01777), 0);
    snprintf(extra, sizeof(extra), "pidfile %s/sq/x.pid", svc);
    snprintf(svc + strlen(svc), sizeof(svc) - strlen(svc), "/sq");
    ck_assert_int_eq(mkdir(svc, 0755), 0);
    ck_assert_int_eq(chown(svc, RB_TEST_OTHER_UID, RB_TEST_OTHER_UID), 0);
    rbd_write_conf(&d, extra);
    status = rbd_run_daemon(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, "belongs to uid 65534") != NULL &&
                  strstr(out, "run ringbloomd as") == NULL &&
                  strstr(out, "choose another directory: the setting pidfile") != NULL,
                  "output: %s", out);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);
}
END_TEST

/* Issue #10 item 7: in a directory anyone can write, another user puts a
 * symlink under the name of the daemon's run directory (the non-root
 * default /tmp/ringbloom-<uid> is such a name), pointing at a directory
 * they can use: here a sticky, world-writable one of root's, which a
 * stat-based check accepted with a warning.  The daemon would put its
 * pidfile and socket there, and an impostor could take the socket's name
 * first and receive the clients' keys.  The daemon refuses to follow the
 * link, names it, and creates nothing. */
START_TEST(test_daemon_refuses_symlinked_run_directory)
{
    char shared[200], pub[200], run[220], extra[600], out[4096] = "";
    int status;

    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    snprintf(shared, sizeof(shared), "%s/tmp", d.dir);
    snprintf(pub, sizeof(pub), "%s/pub", d.dir);
    snprintf(run, sizeof(run), "%s/run", shared);
    ck_assert_int_eq(mkdir(shared, 0700), 0);
    ck_assert_int_eq(chmod(shared, 01777), 0);
    ck_assert_int_eq(mkdir(pub, 0700), 0);
    ck_assert_int_eq(chmod(pub, 01777), 0);
    ck_assert_int_eq(symlink(pub, run), 0);
    snprintf(extra, sizeof(extra), "pidfile %s/ringbloomd.pid\nsocket %s/s.sock", run, run);
    rbd_write_conf(&d, extra);
    status = rbd_run_daemon(&d, out, sizeof(out));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    ck_assert_msg(strstr(out, run) != NULL && strstr(out, "is a symbolic link in") != NULL,
                  "output: %s", out);
    /* anyone could have made the link: not "run as" anyone, another directory */
    ck_assert_msg(strstr(out, "run ringbloomd as") == NULL &&
                  strstr(out, "choose another directory: the setting pidfile") != NULL,
                  "output: %s", out);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);   /* nothing created */
    ck_assert_int_eq(access(pub, F_OK), 0);
    {
        char pidfile[300];
        snprintf(pidfile, sizeof(pidfile), "%s/ringbloomd.pid", pub);
        ck_assert_int_eq(access(pidfile, F_OK), -1);
    }
}
END_TEST

/* The other side of the rule: a symlink in a directory only root (or the
 * daemon's user) can write was put there by them, like Debian's
 * /var/run -> /run, and is followed; its target (here reached through
 * "..") is judged the same way and missing levels behind it are created.
 * The daemon starts there and the CLI finds its user through the link. */
START_TEST(test_daemon_run_directory_behind_admin_symlink)
{
    char link[200], target[300], extra[600], args[400], out[4096];
    const char *base;
    rb_conn_t *c;
    int status;

    rbd_start(&d, NULL);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    base = strrchr(d.dir, '/') + 1;
    snprintf(link, sizeof(link), "%s/varrun", d.dir);
    snprintf(target, sizeof(target), "../%s/run", base);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_lt(snprintf(d.sock, sizeof(d.sock), "%s/ringbloom/s.sock", link),
                     (int)sizeof(d.sock));
    snprintf(extra, sizeof(extra), "pidfile %s/ringbloom/ringbloomd.pid\nsocket %s", link,
             d.sock);
    rbd_write_conf(&d, extra);
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "behind-the-link");
    rb_conn_close(c);
    snprintf(target, sizeof(target), "%s/run/ringbloom/s.sock", d.dir);
    ck_assert_int_eq(access(target, F_OK), 0);
    snprintf(args, sizeof(args), "-i %s -s %s lookup k", d.inst, d.sock);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && strcmp(out, "behind-the-link\n") == 0, "status %d: %s", status,
                  out);
}
END_TEST

typedef struct other_client {
    int conn_rc;        /* rb_conn_open on the instance's default socket */
    int cli_status;     /* `ringbloom -i INSTANCE info` */
    char out[4096];     /* its output */
} other_client_t;

/* As uid 65534 with XDG_RUNTIME_DIR=xdg (so the default socket is
 * xdg/ringbloom/<instance>.sock), in a child: what rb_conn_open and the
 * CLI do with d's instance.  Needs root. */
static void run_other_client(const char *xdg, other_client_t *res)
{
    char args[256];
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rb_conn_t *c;
        if (rb_test_become_other() != 0 || setenv("XDG_RUNTIME_DIR", xdg, 1) != 0)
            _exit(10);
        res->conn_rc = rb_conn_open(d.inst, NULL, 2000, &c);
        if (res->conn_rc == RB_OK)
            rb_conn_close(c);
        snprintf(args, sizeof(args), "-i %s info", d.inst);
        res->cli_status = rbd_run_cli(res->out, sizeof(res->out), args);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "client status %d", status);
}

/* The same attack on the clients: as a non-root user the default socket is
 * $XDG_RUNTIME_DIR/ringbloom/<instance>.sock (or under /tmp/ringbloom-<uid>).
 * Here XDG_RUNTIME_DIR is a sticky, world-writable directory where another
 * user (root) made "ringbloom" a symlink to the live daemon's directory:
 * clients followed it and talked to whatever listened there.  Then a
 * directory of a third user takes its place.  A client of uid 65534 refuses
 * both, rb_conn_open with RB_EOWNER and the CLI naming the path, and
 * connects nowhere.  Needs root to switch uid. */
START_TEST(test_daemon_client_refuses_untrusted_socket_directory)
{
    other_client_t *res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char xdg[200], link[220], alias[300];

    if (getuid() != 0) {
        printf("client directory test needs root to switch uid; running as uid %u it checks "
               "nothing\n", (unsigned)getuid());
        return;
    }
    ck_assert(res != MAP_FAILED);
    rbd_start(&d, NULL);
    snprintf(xdg, sizeof(xdg), "%s/xdg", d.dir);
    snprintf(link, sizeof(link), "%s/ringbloom", xdg);
    snprintf(alias, sizeof(alias), "%s/%s.sock", d.dir, d.inst);
    ck_assert_int_eq(mkdir(xdg, 0700), 0);
    ck_assert_int_eq(chmod(xdg, 01777), 0);
    ck_assert_int_eq(symlink(d.dir, link), 0);
    ck_assert_int_eq(symlink("s.sock", alias), 0);   /* <instance>.sock answers there */
    run_other_client(xdg, res);
    ck_assert_int_eq(res->conn_rc, RB_EOWNER);
    ck_assert_msg(res->cli_status == 3 && strstr(res->out, link) != NULL &&
                  strstr(res->out, "is a symbolic link in") != NULL,
                  "status %d: %s", res->cli_status, res->out);

    ck_assert_int_eq(unlink(link), 0);
    ck_assert_int_eq(mkdir(link, 0755), 0);
    ck_assert_int_eq(chown(link, 12345, 12345), 0);
    run_other_client(xdg, res);
    ck_assert_int_eq(res->conn_rc, RB_EOWNER);
    ck_assert_msg(res->cli_status == 3 && strstr(res->out, link) != NULL &&
                  strstr(res->out, "belongs to uid 12345") != NULL,
                  "status %d: %s", res->cli_status, res->out);
    munmap(res, sizeof(*res));
}
END_TEST

/* Issue #10 item 8: with the daemon down, another user creates a valid
 * segment under the instance's name.  The CLI pins the daemon's user (the
 * owner of the socket's directory: root here) and refuses the object
 * instead of answering from it; told the other uid with --owner, it
 * reads it.  Needs root to switch uid. */
START_TEST(test_daemon_cli_refuses_squatted_segment)
{
    char args[400], out[4096];
    rb_conn_t *c;
    int status;

    if (getuid() != 0) {
        printf("squatting test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "real-node");
    rb_conn_close(c);
    snprintf(args, sizeof(args), "-i %s -s %s lookup some-key", d.inst, d.sock);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 0 && strcmp(out, "real-node\n") == 0, "status %d: %s", status, out);
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rb_test_squat_segment(d.inst);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 3 && strstr(out, "not to be trusted") != NULL &&
                  strstr(out, "the daemon's user is uid 0") != NULL, "status %d: %s", status, out);
    snprintf(args, sizeof(args), "-i %s -s %s --owner 65534 lookup some-key", d.inst, d.sock);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 1 && strstr(out, "the ring has no nodes") != NULL,
                  "status %d: %s", status, out);
}
END_TEST

/* Issue #10 item 11: a daemon that takes a request and never answers (a
 * listening socket nobody accepts from: the kernel completes connects).
 * The library says RB_ETIMEDOUT, not "cannot reach the daemon"; the CLI
 * says how long it waited and, for a change, that it may have been
 * applied. */
START_TEST(test_daemon_cli_timeout_says_change_may_be_applied)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char dir[64], args[300], out[4096];
    rb_conn_t *c;
    int fd, status;

    snprintf(dir, sizeof(dir), "/tmp/rbtest.%d.XXXXXX", (int)rb_test_main_pid);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/mute.sock", dir);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 16), 0);

    ck_assert_int_eq(rb_conn_open(NULL, sa.sun_path, 300, &c), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "n", 1, 1), RB_ETIMEDOUT);
    rb_conn_close(c);
    snprintf(args, sizeof(args), "-s %s --timeout 1 node add n1", sa.sun_path);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 3 && strstr(out, "ringbloom: node: the daemon did not answer within "
                                        "1 s; the change may have been applied") != NULL,
                  "status %d: %s", status, out);
    snprintf(args, sizeof(args), "-s %s --timeout 1 info", sa.sun_path);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_msg(status == 3 && strstr(out, "ringbloom: info: the daemon did not answer "
                                        "within 1 s (socket") != NULL &&
                  strstr(out, "may have been applied") == NULL, "status %d: %s", status, out);
    close(fd);
    ck_assert_int_eq(unlink(sa.sun_path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A node name is whatever an allowed writer chose, tabs and newlines
 * included: `nodes` and `lookup` print it escaped, so it cannot pass for
 * other lines or fields. */
START_TEST(test_daemon_cli_escapes_node_names)
{
    static const char *const escaped[] = { "a\\tb", "fake\\t9\\nline", "x\\\\y\\x01" };
    char args[400], out[4096], *line, *save;
    rb_conn_t *c;
    int status, lines = 0;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    ck_assert_int_eq(rb_conn_ring_add(c, "a\tb", 3, 1), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "fake\t9\nline", 11, 1), RB_OK);
    ck_assert_int_eq(rb_conn_ring_add(c, "x\\y\x01", 4, 2), RB_OK);
    rb_conn_close(c);
    snprintf(args, sizeof(args), "-i %s -s %s nodes", d.inst, d.sock);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(out, "a\\tb\t1\nfake\\t9\\nline\t1\nx\\\\y\\x01\t2\n");
    snprintf(args, sizeof(args), "-i %s -s %s lookup some-key -n 3", d.inst, d.sock);
    status = rbd_run_cli(out, sizeof(out), args);
    ck_assert_int_eq(status, 0);
    for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        int known = 0;
        for (size_t i = 0; i < 3; i++)
            known |= strcmp(line, escaped[i]) == 0;
        ck_assert_msg(known, "unexpected line [%s]", line);
        lines++;
    }
    ck_assert_int_eq(lines, 3);
}
END_TEST

/* The CLI run as RB_TEST_OTHER_UID (nobody, no groups) with args: its
 * exit status, its output (stdout and stderr) into out. */
static int cli_as_other(char *out, size_t cap, const char *const *args)
{
    char buf[PATH_MAX], *argv[16] = { NULL };
    const char *cli = rbl_tool_path(NULL, "RB_CLI", "client/ringbloom", buf, sizeof(buf));
    int p[2], status;
    size_t n = 0, i;
    ssize_t r;
    pid_t pid;

    ck_assert_int_eq(pipe(p), 0);
    argv[0] = (char *)cli;
    for (i = 0; args[i] != NULL && i + 2 < sizeof(argv) / sizeof(argv[0]); i++)
        argv[i + 1] = (char *)args[i];
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 || rb_test_become_other() != 0)
            _exit(10);
        execv(cli, argv);
        _exit(11);
    }
    close(p[1]);
    while (n + 1 < cap && (r = read(p[0], out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Issue 28: a connect refused for permission names the socket (or the
 * directory on the way) and its group, by name, and says that a member
 * may connect, instead of "is ringbloomd running?".  Needs root to switch
 * uid. */
START_TEST(test_daemon_cli_refusal_names_the_group)
{
    const char *args[] = { "--socket", d.sock, "node", "add", "n1", NULL };
    char out[4096], want[1024], gname[64];
    struct group *g;
    int status;

    if (getuid() != 0) {
        printf("refusal test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rbd_start(&d, "socket-mode 0660");
    g = getgrgid(getegid());
    snprintf(gname, sizeof(gname), "%s", g != NULL ? g->gr_name : "?");
    status = cli_as_other(out, sizeof(out), args);
    snprintf(want, sizeof(want), "at %s: Permission denied: the socket %s is mode 0660, group %s, "
             "and user ", d.sock, d.sock, gname);
    ck_assert_msg(status == 3 && strstr(out, want) != NULL &&
                  strstr(out, "is not in that group: a member may connect (adduser ") != NULL &&
                  strstr(out, "is ringbloomd running") == NULL, "status %d: %s", status, out);

    ck_assert_int_eq(chmod(d.dir, 0750), 0);   /* now the directory is what refuses */
    status = cli_as_other(out, sizeof(out), args);
    snprintf(want, sizeof(want), "Permission denied: its directory %s is mode 0750, group %s, "
             "and user ", d.dir, gname);
    ck_assert_int_eq(chmod(d.dir, 0755), 0);
    ck_assert_msg(status == 3 && strstr(out, want) != NULL, "status %d: %s", status, out);
}
END_TEST

TCase *daemon_access_tcase(void)
{
    return RB_TCASE("access", 120, NULL, rbd_teardown,
                    test_daemon_other_uid_reads_but_cannot_write,
                    test_daemon_refuses_squatted_segment,
                    test_daemon_refuses_writable_segment_mode,
                    test_daemon_refuses_foreign_directory,
                    test_daemon_service_run_directory_refusal_says_what_to_do,
                    test_daemon_refuses_symlinked_run_directory,
                    test_daemon_run_directory_behind_admin_symlink,
                    test_daemon_client_refuses_untrusted_socket_directory);
}

TCase *daemon_cli_tcase(void)
{
    return RB_TCASE("cli", 120, NULL, rbd_teardown,
                    test_daemon_cli_refuses_squatted_segment,
                    test_daemon_cli_timeout_says_change_may_be_applied,
                    test_daemon_cli_escapes_node_names,
                    test_daemon_cli_refusal_names_the_group);
}
