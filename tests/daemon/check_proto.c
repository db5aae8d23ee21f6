/* check_proto.c - the protocol as Redis clients meet it: HELLO and RESP3
 * replies (through the real redis-cli -3), RESP2 unchanged for the same
 * commands, and transactions (MULTI / EXEC / DISCARD) as Redis answers
 * them, read byte for byte on a raw connection; redis-cli's hints, which
 * come from COMMAND DOCS, typed on a pseudo-terminal. */
#include "config.h"

#include <poll.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>

#include "rbd_test.h"

static rbd_proc_t d;

/* redis-cli (formatted output, protocol flag proto) run with args against
 * d; its output. */
static const char *cli(const char *proto, const char *args)
{
    static char out[8192];
    char cmd[1024];
    size_t n;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "redis-cli --no-raw %s -s '%s' %s 2>&1", proto, d.sock, args);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    pclose(p);
    return out;
}

/* Sends the bytes req on fd and reads replies into got (cap bytes, NUL
 * included) until want_len bytes came, the peer closed or 5 s passed.
 * Asserts nothing, so a forked child may use it.  The bytes read. */
static size_t raw_exchange(int fd, const char *req, size_t want_len, char *got, size_t cap)
{
    size_t n = 0;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    got[0] = '\0';
    if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
        return 0;
    while (n < want_len && n + 1 < cap && poll(&pfd, 1, 5000) == 1) {
        ssize_t r = recv(fd, got + n, cap - 1 - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    got[n] = '\0';
    return n;
}

/* Sends the bytes req on fd and asserts the replies are exactly want. */
static void raw_expect(int fd, const char *req, const char *want)
{
    char got[4096];

    raw_exchange(fd, req, strlen(want), got, sizeof(got));
    ck_assert_msg(strcmp(got, want) == 0, "sent [%s]: expected [%s], got [%s]", req, want, got);
}

static int redis_cli_missing(void)
{
    if (system("command -v redis-cli >/dev/null 2>&1") == 0)
        return 0;
    printf("redis-cli not found: skipped\n");
    return 1;
}

/* redis-cli -3: HELLO 3 is a map, BF.ADD / BF.EXISTS booleans, BF.INFO
 * and RING.INFO maps, a missing value null; the same commands under
 * RESP2 answer as before (integers, flat arrays). */
START_TEST(test_proto_resp3_through_redis_cli)
{
    const char *out;

    if (redis_cli_missing())
        return;
    rbd_start(&d, NULL);
    out = cli("-3", "HELLO 3");
    ck_assert_msg(strstr(out, "1# \"server\" => \"ringbloom\"") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "4# \"proto\" => (integer) 3") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "8# \"modules\" => (empty array)") != NULL, "%s", out);
    ck_assert_str_eq(cli("-3", "BF.ADD f a"), "(true)\n");
    ck_assert_str_eq(cli("-3", "BF.ADD f a"), "(false)\n");
    ck_assert_str_eq(cli("-3", "BF.MEXISTS f a b"), "1) (true)\n2) (false)\n");
    out = cli("-3", "BF.INFO f");
    ck_assert_msg(strstr(out, "1# Capacity => (integer) 100") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "5# Expansion rate => (integer) 2") != NULL, "%s", out);
    ck_assert_str_eq(cli("-3", "BF.RESERVE g 0.01 10 NONSCALING"), "OK\n");
    out = cli("-3", "BF.INFO g");
    ck_assert_msg(strstr(out, "5# Expansion rate => (nil)") != NULL, "%s", out);
    out = cli("-3", "RING.INFO");
    ck_assert_msg(strstr(out, "1# Mode => \"xxh3\"") != NULL, "%s", out);
    ck_assert_str_eq(cli("-3", "CLIENT GETNAME"), "(nil)\n");
    ck_assert_str_eq(cli("", "BF.ADD f a"), "(integer) 0\n");
    ck_assert_str_eq(cli("", "BF.MEXISTS f a b"), "1) (integer) 1\n2) (integer) 0\n");
    out = cli("", "BF.INFO f");
    ck_assert_msg(strstr(out, " 1) Capacity\n 2) (integer) 100\n") != NULL, "%s", out);
    ck_assert_str_eq(cli("", "HELLO 4"), "(error) NOPROTO unsupported protocol version\n");
}
END_TEST

/* The bytes: HELLO's map and RESP3's null and booleans on one
 * connection, RESET back to RESP2; HELLO's refusals in Redis's words. */
START_TEST(test_proto_hello_switches_the_connection)
{
    char want[512];
    rb_conn_t *c;
    int fd, id;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "ERR AUTH <password> called without any password configured for the default "
               "user. Are you sure your configuration is correct?", "AUTH", "x");
    rbd_expect(c, "WRONGPASS invalid username-password pair or user is disabled.", "HELLO",
               "3", "AUTH", "bob", "x");
    rbd_expect(c, "ERR Syntax error in HELLO option 'NAME'", "HELLO", "3", "NAME", "x");
    rbd_expect(c, "ERR Client names cannot contain spaces, newlines or special characters.",
               "CLIENT", "SETNAME", "a b");
    rbd_expect(c, "OK", "CLIENT", "SETINFO", "LIB-NAME", "redis-py");
    rbd_expect(c, "ERR Unrecognized option 'x'", "CLIENT", "SETINFO", "x", "y");
    rb_conn_close(c);
    fd = rbd_raw_connect(&d);
    ck_assert_int_eq(send(fd, "CLIENT ID\r\n", 11, MSG_NOSIGNAL), 11);
    ck_assert_int_gt(recv(fd, want, sizeof(want) - 1, 0), 3);
    id = atoi(want + 1);
    /* version: the Redis version INFO's redis_version says (clients choose
     * by it); the product's under INFO's name, ringbloom_version. */
    snprintf(want, sizeof(want), "%%8\r\n$6\r\nserver\r\n$9\r\nringbloom\r\n$7\r\nversion\r\n"
             "$6\r\n7.0.15\r\n$17\r\nringbloom_version\r\n$%zu\r\n%s\r\n$5\r\nproto\r\n:3\r\n"
             "$2\r\nid\r\n:%d\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\n"
             "master\r\n$7\r\nmodules\r\n*0\r\n", strlen(PACKAGE_VERSION), PACKAGE_VERSION, id);
    raw_expect(fd, "HELLO 3 AUTH default any SETNAME app\r\n", want);
    raw_expect(fd, "CLIENT GETNAME\r\nBF.EXISTS f a\r\nBF.INFO nope\r\n",
               "$3\r\napp\r\n#f\r\n-ERR not found\r\n");
    raw_expect(fd, "RESET\r\nCLIENT GETNAME\r\nBF.EXISTS f a\r\n", "+RESET\r\n$-1\r\n:0\r\n");
    close(fd);
}
END_TEST

/* The value of field `name` in text of "name\nvalue\n..." (a flat
 * array, one element per line) or "name:value\r\n" lines (INFO): into
 * out, asserting it is there. */
static const char *field_of(const char *text, const char *name, char sep, char *out,
                            size_t cap)
{
    char key[64];
    const char *at;

    snprintf(key, sizeof(key), "%s%c", name, sep);
    at = strstr(text, key);
    while (at != NULL && at != text && at[-1] != '\n')
        at = strstr(at + 1, key);
    ck_assert_msg(at != NULL, "no %s in [%s]", name, text);
    at += strlen(key);
    snprintf(out, cap, "%.*s", (int)strcspn(at, "\r\n"), at);
    return out;
}

/* HELLO's version and INFO's redis_version are one value, the Redis
 * version the daemon answers as (clients and tools choose what to send
 * by it), and the product's version is ringbloom_version in both (issue
 * 42, item 11: HELLO said "version 0.1.0" while INFO said
 * redis_version:7.0.15). */
START_TEST(test_proto_hello_and_info_report_versions_alike)
{
    char hello[2048], info[8192], a[64], b[64];
    rb_conn_t *c;
    int rc;

    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    snprintf(hello, sizeof(hello), "%s", rbd_cmd(c, &rc, "HELLO", "2", (const char *)NULL));
    ck_assert_int_eq(rc, RB_OK);
    snprintf(info, sizeof(info), "%s", rbd_cmd(c, &rc, "INFO", "server", (const char *)NULL));
    ck_assert_int_eq(rc, RB_OK);
    ck_assert_str_eq(field_of(hello, "version", '\n', a, sizeof(a)),
                     field_of(info, "redis_version", ':', b, sizeof(b)));
    ck_assert_str_eq(a, "7.0.15");
    ck_assert_str_eq(field_of(hello, "ringbloom_version", '\n', a, sizeof(a)),
                     field_of(info, "ringbloom_version", ':', b, sizeof(b)));
    ck_assert_str_eq(a, PACKAGE_VERSION);
    printf("HELLO version %s, ringbloom_version %s; INFO alike\n", "7.0.15", a);
    rb_conn_close(c);
}
END_TEST

/* CLIENT INFO carries every field of Redis 7.2's line, in its order, each
 * as name=value: redis-py's client_info() reads sub, psub, qbuf, obl, omem,
 * tot-mem ... as integers and raised KeyError on a missing one; user= is
 * the peer's Unix user (the ACL's identity). */
START_TEST(test_proto_client_info_has_redis_fields)
{
    char user[80];
    const struct passwd *pw = getpwuid(getuid());
    /* user=: the peer's Unix user, the identity its access rules name */
    const char *const fields[] = {
        "id=", " addr=", " laddr=", " fd=", " name=app ", " age=", " idle=", " flags=N ",
        " db=0 ", " sub=0 ", " psub=0 ", " ssub=0 ", " multi=-1 ", " qbuf=", " qbuf-free=",
        " argv-mem=", " multi-mem=", " rbs=", " rbp=", " obl=", " oll=", " omem=",
        " tot-mem=", " events=", " cmd=client|info ", user, " redir=-1 ",
        " resp=2 ", " lib-name=redis-py ", " lib-ver= ", " uid=", " pid=" };
    rb_conn_t *c;
    const char *line, *at;
    int rc;

    if (pw != NULL)
        snprintf(user, sizeof(user), " user=%s ", pw->pw_name);
    else
        snprintf(user, sizeof(user), " user=%u ", (unsigned)getuid());
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CLIENT", "SETNAME", "app");
    rbd_expect(c, "OK", "CLIENT", "SETINFO", "LIB-NAME", "redis-py");
    line = rbd_cmd(c, &rc, "CLIENT", "INFO", (const char *)NULL);
    at = line;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const char *f = strstr(at, fields[i]);
        ck_assert_msg(f != NULL, "no %s after [%s] in [%s]", fields[i], at, line);
        at = f + 1;
    }
    rb_conn_close(c);
}
END_TEST

/* MULTI / EXEC / DISCARD as Redis answers them: queued, an array of the
 * members' replies (a runtime error one of them), nothing of a
 * transaction with a refused command, nesting and strays refused. */
START_TEST(test_proto_multi_exec_semantics)
{
    rb_conn_t *c;
    int fd;

    rbd_start(&d, NULL);
    fd = rbd_raw_connect(&d);
    raw_expect(fd, "EXEC\r\nDISCARD\r\n", "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n");
    raw_expect(fd, "MULTI\r\nBF.ADD f a\r\nRING.ADD n1\r\nRING.ADD n1\r\nBF.EXISTS f a\r\nEXEC\r\n",
               "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n"
               "*4\r\n:1\r\n+OK\r\n-ERR node exists: 'n1' (RING.WEIGHT and RING.UP, DOWN or "
               "DRAIN change it)\r\n:1\r\n");
    raw_expect(fd, "MULTI\r\nMULTI\r\nBF.ADD g x\r\nNOPE\r\nBF.ADD g\r\nSAVE\r\nEXEC\r\n",
               "+OK\r\n-ERR MULTI calls can not be nested\r\n+QUEUED\r\n"
               "-ERR unknown command 'NOPE', with args beginning with: \r\n"
               "-ERR wrong number of arguments for 'bf.add' command\r\n"
               "-ERR Command not allowed inside a transaction\r\n"
               "-EXECABORT Transaction discarded because of previous errors.\r\n");
    raw_expect(fd, "MULTI\r\nBF.ADD g y\r\nDISCARD\r\nBF.EXISTS g y\r\n",
               "+OK\r\n+QUEUED\r\n+OK\r\n:0\r\n");
    raw_expect(fd, "MULTI\r\nBF.ADD g z\r\nRESET\r\nEXEC\r\n",
               "+OK\r\n+QUEUED\r\n+RESET\r\n-ERR EXEC without MULTI\r\n");
    raw_expect(fd, "MULTI\r\nEXEC\r\n", "+OK\r\n*0\r\n");
    close(fd);
    c = rbd_connect(&d);
    rbd_expect(c, "0", "BF.EXISTS", "g", "x");
    rbd_expect(c, "n1\n1", "RING.NODES");
    rb_conn_close(c);
    /* Logged as one unit and replayed through the same apply. */
    rbd_restart_cold(&d);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.EXISTS", "f", "a");
    rbd_expect(c, "n1\n1", "RING.NODES");
    rb_conn_close(c);
}
END_TEST

/* A write queued by a client that may not write is refused at queue time
 * (-NOPERM, as outside MULTI), which marks the transaction: EXEC answers
 * EXECABORT and runs nothing, the queued read and the queued ring change
 * included.  Needs root to switch uid. */
START_TEST(test_proto_queued_noperm_aborts_exec)
{
    static const char req[] = "MULTI\r\nBF.EXISTS f a\r\nBF.ADD f b\r\nRING.ADD evil\r\n"
                              "EXEC\r\n";
    char want[512];
    char *got;
    rb_conn_t *c;
    int status;
    pid_t pid;

    if (getuid() != 0) {
        printf("NOPERM test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    struct passwd *pw = getpwuid(RB_TEST_OTHER_UID);
    char user[64];

    snprintf(user, sizeof(user), "%s", pw ? pw->pw_name : "65534");
    snprintf(want, sizeof(want), "+OK\r\n+QUEUED\r\n"
             "-NOPERM User %s has no permissions to run the 'bf.add' command "
             "(rule: user default: +@read +@connection +@transaction)\r\n"
             "-NOPERM User %s has no permissions to run the 'ring.add' command "
             "(rule: user default: +@read +@connection +@transaction)\r\n"
             "-EXECABORT Transaction discarded because of previous errors.\r\n", user, user);
    got = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(got != MAP_FAILED);
    rbd_start(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;
        if (rb_test_become_other() != 0)
            _exit(10);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        memcpy(sa.sun_path, d.sock, strlen(d.sock) + 1);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
            _exit(11);
        raw_exchange(fd, req, strlen(want), got, 4096);
        _exit(strcmp(got, want) == 0 ? 0 : 12);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child step %d: expected [%s], got [%s]", WEXITSTATUS(status), want, got);
    munmap(got, 4096);
    rbd_expect(c, "0", "BF.EXISTS", "f", "b");
    rbd_expect(c, "", "RING.NODES");
    rb_conn_close(c);
}
END_TEST

/* A RESP2 pipeline through redis-cli: the transaction's replies come in
 * order with the rest. */
START_TEST(test_proto_redis_cli_pipeline)
{
    char cmd[1024], out[4096];
    size_t n;
    FILE *p;

    if (redis_cli_missing())
        return;
    rbd_start(&d, NULL);
    snprintf(cmd, sizeof(cmd), "printf 'PING\\nMULTI\\nBF.ADD p 1\\nBF.MADD p 1 2\\nEXEC\\n"
             "BF.MEXISTS p 1 2 3\\nCOMMAND COUNT\\n' | redis-cli -s '%s'", d.sock);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    pclose(p);
    ck_assert_msg(strncmp(out, "PONG\nOK\nQUEUED\nQUEUED\n1\n0\n1\n1\n1\n0\n", 34) == 0, "%s",
                  out);
}
END_TEST

/* Reads the terminal fd into out (cap bytes, NUL included) until want
 * appears or 10 s passed: 1 if it did. */
static int tty_wait(int fd, char *out, size_t cap, size_t *n, const char *want)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    for (int i = 0; i < 100 && strstr(out, want) == NULL; i++) {
        ssize_t r = poll(&pfd, 1, 100) == 1 ? read(fd, out + *n, cap - 1 - *n) : 0;
        if (r < 0)
            break;
        *n += (size_t)r;
        out[*n] = '\0';
    }
    return strstr(out, want) != NULL;
}

/* Interactive redis-cli on a pseudo-terminal (of 200 columns: with none,
 * linenoise asks the terminal for its width and reads the answer from
 * what is typed): "BF.RESERVE " shows the arguments COMMAND DOCS gave. */
START_TEST(test_proto_redis_cli_hints_from_command_docs)
{
    struct winsize ws = { .ws_row = 24, .ws_col = 200 };
    char out[16384] = "";
    size_t n = 0;
    int prompt, hint, status, master;
    pid_t pid;

    if (redis_cli_missing())
        return;
    rbd_start(&d, NULL);
    master = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(master, 0);
    ck_assert_int_eq(grantpt(master), 0);
    ck_assert_int_eq(unlockpt(master), 0);
    ck_assert_int_eq(ioctl(master, TIOCSWINSZ, &ws), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int slave;
        setsid();
        slave = open(ptsname(master), O_RDWR);
        if (slave < 0 || dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
            _exit(10);
        setenv("REDISCLI_HISTFILE", "/dev/null", 1);
        setenv("REDISCLI_RCFILE", "/dev/null", 1);
        setenv("TERM", "xterm", 1);
        execlp("redis-cli", "redis-cli", "-s", d.sock, (char *)NULL);
        _exit(11);
    }
    prompt = tty_wait(master, out, sizeof(out), &n, "> ");
    if (prompt)
        ck_assert_int_eq(write(master, "BF.RESERVE ", 11), 11);
    hint = prompt && tty_wait(master, out, sizeof(out), &n,
                              "key error_rate capacity [EXPANSION expansion] [NONSCALING] "
                              "[LAYOUT STANDARD|BLOCKED|REDISBLOOM]");
    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    close(master);
    ck_assert_msg(hint, "no hint in [%s]", out);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("proto",
                        RB_TCASE("resp3", 60, NULL, rbd_teardown,
                                 test_proto_resp3_through_redis_cli,
                                 test_proto_hello_switches_the_connection,
                                 test_proto_hello_and_info_report_versions_alike,
                                 test_proto_client_info_has_redis_fields,
                                 test_proto_redis_cli_hints_from_command_docs),
                        RB_TCASE("transactions", 60, NULL, rbd_teardown,
                                 test_proto_multi_exec_semantics,
                                 test_proto_queued_noperm_aborts_exec,
                                 test_proto_redis_cli_pipeline));
}
