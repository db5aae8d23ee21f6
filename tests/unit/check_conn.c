/* check_conn.c - the library's write connection (lib/conn/conn.c) against a
 * fake daemon on a Unix socket that answers one canned reply: the error
 * mapping ringbloom/conn.h documents (NOPERM -> RB_EPERM, another error
 * reply -> RB_EREPLY with its text, a reply that is not the command's ->
 * RB_EPROTO, a closed socket -> RB_EDAEMON) and the bounds conn.c keeps
 * around hiredis's reader: an array count past the element budget and a
 * bulk string past MAX_REPLY (64 MiB) are RB_EPROTO, refused with the
 * address space limited to 1 GiB (hiredis would otherwise allocate the
 * announced slots, or buffer the whole string). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rb_test.h"
#include "ringbloom.h"

typedef struct fake {
    char dir[64];
    char path[108];
    pid_t pid;
} fake_t;

/* The fake daemon's socket and directory, for its own cleanup. */
static const char *fake_path, *fake_dir;

/* The fake daemon, when the test that started it ends (its parent died,
 * PR_SET_PDEATHSIG: a failed assertion ends a test with _exit, and Check
 * then kills the test's process group, so nothing of the test's own runs)
 * before a client came. */
static void fake_orphaned(int sig)
{
    (void)sig;
    unlink(fake_path);
    rmdir(fake_dir);
    _exit(0);
}

/* Starts a fake daemon: it accepts one connection, reads a request, sends
 * reply (len bytes) then `extra` bytes of 'x' (until the client leaves),
 * and exits; with extra CLOSE it closes the connection after the reply.
 * Once it accepted, it removes its socket and directory (nobody else
 * needs the name), and it does so too if the test ends before. */
#define CLOSE ((size_t)-1)
static void fake_start(fake_t *f, const char *reply, size_t len, size_t extra)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    snprintf(f->dir, sizeof(f->dir), "/tmp/rbtest.%d.XXXXXX", (int)getpid());
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/fake.sock", f->dir);
    memcpy(sa.sun_path, f->path, strlen(f->path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    fake_path = f->path;
    fake_dir = f->dir;
    {
        pid_t parent = getpid();
        f->pid = fork();
        ck_assert_int_ge(f->pid, 0);
        if (f->pid == 0) {
            /* Out of the test's process group, which Check kills with
             * SIGKILL when the test ends: the death signal reaches it
             * instead, and it cleans up (alarm bounds it either way). */
            setpgid(0, 0);
            signal(SIGTERM, fake_orphaned);
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (getppid() != parent)
                fake_orphaned(0);
        }
    }
    if (f->pid == 0) {
        static char chunk[65536];
        char req[4096];
        int c;
        size_t off = 0;
        alarm(20);
        c = accept(fd, NULL, NULL);
        signal(SIGTERM, SIG_DFL);
        unlink(f->path);
        rmdir(f->dir);
        if (c < 0 || recv(c, req, sizeof(req), 0) <= 0)
            _exit(1);
        while (off < len) {
            ssize_t n = send(c, reply + off, len - off, MSG_NOSIGNAL);
            if (n <= 0)
                _exit(0);
            off += (size_t)n;
        }
        if (extra == CLOSE)
            _exit(0);
        memset(chunk, 'x', sizeof(chunk));
        for (off = 0; off < extra;) {
            size_t m = extra - off < sizeof(chunk) ? extra - off : sizeof(chunk);
            ssize_t n = send(c, chunk, m, MSG_NOSIGNAL);
            if (n <= 0)
                _exit(0);
            off += (size_t)n;
        }
        while (recv(c, req, sizeof(req), 0) > 0)
            ;
        _exit(0);
    }
    close(fd);
}

static void fake_stop(fake_t *f)
{
    int st;

    ck_assert_int_eq(waitpid(f->pid, &st, 0), f->pid);
    /* It removed them once a client came. */
    ck_assert_int_eq(access(f->dir, F_OK), -1);
}

/* RING.ADD answered by reply: returns the code (and the error text). */
static int ring_add_with(const char *reply, size_t len, size_t extra, char *err, size_t cap)
{
    fake_t f;
    rb_conn_t *c;
    int rc;

    fake_start(&f, reply, len, extra);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 5000, &c), RB_OK);
    rc = rb_conn_ring_add(c, "n", 1, 1);
    snprintf(err, cap, "%s", rb_conn_error(c));
    rb_conn_close(c);
    fake_stop(&f);
    return rc;
}

#define S(lit) lit, sizeof(lit) - 1

START_TEST(test_conn_maps_replies_to_codes)
{
    char err[600];

    ck_assert_int_eq(ring_add_with(S("+OK\r\n"), 0, err, sizeof(err)), RB_OK);
    ck_assert_int_eq(ring_add_with(S("-NOPERM user x has no permissions to run the "
                                     "'ring.add' command\r\n"), 0, err, sizeof(err)), RB_EPERM);
    ck_assert_str_eq(err, "NOPERM user x has no permissions to run the 'ring.add' command");
    ck_assert_int_eq(ring_add_with(S("-ERR node exists\r\n"), 0, err, sizeof(err)), RB_EREPLY);
    ck_assert_str_eq(err, "ERR node exists");
    ck_assert_int_eq(ring_add_with(S(":1\r\n"), 0, err, sizeof(err)), RB_EPROTO);
    ck_assert_int_eq(ring_add_with(S("%bogus\r\n"), 0, err, sizeof(err)), RB_EPROTO);
    ck_assert_int_eq(ring_add_with(S("+O"), CLOSE, err, sizeof(err)), RB_EDAEMON);
}
END_TEST

/* rb_conn_command renders nested replies; BF.MADD's reply may not hold
 * more answers than keys sent. */
START_TEST(test_conn_renders_and_checks_madd)
{
    static const char nested[] = "*3\r\n$1\r\na\r\n*2\r\n:7\r\n$-1\r\n+ok\r\n";
    const char *argv[] = { "X" };
    size_t argl[] = { 1 };
    char buf[256];
    fake_t f;
    rb_conn_t *c;
    uint8_t fresh[1];
    rb_key_t k = { "k", 1 };

    fake_start(&f, S(nested), 0);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 5000, &c), RB_OK);
    ck_assert_int_eq(rb_conn_command(c, 1, argv, argl, buf, sizeof(buf)), RB_OK);
    ck_assert_str_eq(buf, "a\n7\n(nil)\nok");
    rb_conn_close(c);
    fake_stop(&f);

    fake_start(&f, S("*2\r\n:1\r\n:1\r\n"), 0);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 5000, &c), RB_OK);
    ck_assert_int_eq(rb_conn_bf_add_many(c, "f", 1, &k, 1, fresh), RB_EPROTO);
    rb_conn_close(c);
    fake_stop(&f);

    fake_start(&f, S("*1\r\n-NOPERM no\r\n"), 0);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 5000, &c), RB_OK);
    ck_assert_int_eq(rb_conn_bf_add(c, "f", 1, "k", 1), RB_EPERM);
    ck_assert_str_eq(rb_conn_error(c), "NOPERM no");
    rb_conn_close(c);
    fake_stop(&f);
}
END_TEST

/* rb_conn_bf_insert_many: NOCREATE's refusal ("ERR not found", RedisBloom's
 * words) is RB_ENOENT; an aging create is RB_EINVAL and a request of 2 GiB
 * or more RB_ERANGE, both with nothing sent (the fake daemon then gets
 * the next command, which it answers). */
START_TEST(test_conn_insert_many_and_request_bounds)
{
    static const char big[1] = { 'x' };
    const char *argv[] = { "X", big };
    size_t argl[] = { 1, (size_t)1 << 31 };
    rb_bloom_params_t aging = { .capacity = 10, .error_rate = 0.01, .flags = RB_BLOOM_AGING };
    rb_key_t k = { "k", 1 };
    char buf[64];
    fake_t f;
    rb_conn_t *c;

    fake_start(&f, S("-ERR not found\r\n"), 0);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 5000, &c), RB_OK);
    ck_assert_int_eq(rb_conn_bf_insert_many(c, "f", 1, &aging, &k, 1, NULL), RB_EINVAL);
    /* Refused before a byte of the 2 GiB argument is read (it is 1 byte). */
    ck_assert_int_eq(rb_conn_command(c, 2, argv, argl, buf, sizeof(buf)), RB_ERANGE);
    ck_assert_int_eq(rb_conn_bf_insert_many(c, "f", 1, NULL, &k, 1, NULL), RB_ENOENT);
    ck_assert_str_eq(rb_conn_error(c), "ERR not found");
    rb_conn_close(c);
    fake_stop(&f);
}
END_TEST

/* A sanitizer (.ci/run's ASan and TSan builds) reserves terabytes of
 * address space for its shadow memory, so no RLIMIT_AS can be set under
 * one; its allocator then refuses (and reports) an allocation as large as
 * the ones below itself, so the test still fails if one is attempted. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AS_LIMIT 0
#else
#define AS_LIMIT 1
#endif

/* Hostile sizes, refused as RB_EPROTO within 1 GiB of address space: an
 * array of 2 * 10^9 elements (16 GB of slots were hiredis to allocate
 * them), arrays nested 9 deep, and a bulk string of 70 MB, streamed. */
START_TEST(test_conn_refuses_hostile_sizes)
{
    struct rlimit as = { 1u << 30, 1u << 30 };
    const char *argv[] = { "X" };
    size_t argl[] = { 1 };
    char buf[256], deep[64] = "";
    fake_t f;
    rb_conn_t *c;

    if (AS_LIMIT)
        ck_assert_int_eq(setrlimit(RLIMIT_AS, &as), 0);
    fake_start(&f, S("*2000000000\r\n"), 0);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 5000, &c), RB_OK);
    ck_assert_int_eq(rb_conn_command(c, 1, argv, argl, buf, sizeof(buf)), RB_EPROTO);
    rb_conn_close(c);
    fake_stop(&f);

    for (int i = 0; i < 9; i++)
        strcat(deep, "*1\r\n");
    strcat(deep, ":1\r\n");
    fake_start(&f, deep, strlen(deep), 0);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 5000, &c), RB_OK);
    ck_assert_int_eq(rb_conn_command(c, 1, argv, argl, buf, sizeof(buf)), RB_EPROTO);
    rb_conn_close(c);
    fake_stop(&f);

    fake_start(&f, S("$70000000\r\n"), 70000002);
    ck_assert_int_eq(rb_conn_open(NULL, f.path, 10000, &c), RB_OK);
    ck_assert_int_eq(rb_conn_command(c, 1, argv, argl, buf, sizeof(buf)), RB_EPROTO);
    rb_conn_close(c);
    fake_stop(&f);
}
END_TEST

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    return RB_TEST_MAIN("conn",
                        RB_TCASE("replies", 30, NULL, NULL, test_conn_maps_replies_to_codes,
                                 test_conn_renders_and_checks_madd,
                                 test_conn_insert_many_and_request_bounds),
                        RB_TCASE("bounds", 60, NULL, NULL, test_conn_refuses_hostile_sizes));
}
