/*
 * rbd_test.c - ringbloomd in a test (see rbd_test.h): the launcher with
 * Check's assertions, the registry that removes every daemon at exit, the
 * test config, requests, files and /proc figures.
 */
#include "rbd_test.h"

#include <limits.h>

#define RBD_MAX_PROCS 8
static rbd_proc_t *rbd_procs[RBD_MAX_PROCS];
static int rbd_nprocs;

int rbd_wait_ms(int ms)
{
    const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
    double f = m ? strtod(m, NULL) : 1.0;

    f = f > 1.0 && f <= 100.0 ? f : 1.0;
    return (int)(ms * f * rb_test_load_factor());
}

const char *rbd_binary(void)
{
    static char buf[4096];

    return rbl_daemon_path(NULL, buf, sizeof(buf));
}

void rbd_stop(rbd_proc_t *d, int sig)
{
    ck_assert_msg(rbl_stop(d, NULL, sig, rbd_wait_ms(10000)) == 0, "%s", d->err);
}

void rbd_remove_all(rbd_proc_t *d)
{
    if (rbl_remove(d) != 0)
        fprintf(stderr, "%s\n", d->err);
}

void rbd_teardown(void)
{
    for (int i = 0; i < rbd_nprocs; i++)
        rbd_remove_all(rbd_procs[i]);
    rbd_nprocs = 0;
}

void rbd_write_conf(rbd_proc_t *d, const char *extra)
{
    FILE *f = fopen(d->conf, "w");

    ck_assert_ptr_nonnull(f);
    fprintf(f, "# written by a test\ninstance %s\nsocket %s\ndir %s/state\npidfile %s/pid\n"
            "socket-mode 0666\nsegment-mode 0644\nkeep-segment yes\nloglevel debug\n%s\n",
            d->inst, d->sock, d->dir, d->dir, extra ? extra : "");
    fclose(f);
}

int rbd_try_launch(rbd_proc_t *d, const char *const *extra_args)
{
    const char *argv[16] = { rbd_binary(), "-f", "-c", d->conf };
    int argc = 4, status;

    for (int i = 0; extra_args && extra_args[i] && argc < 15; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;
    status = rbl_start(d, argv, rbd_wait_ms(10000), NULL);
    ck_assert_msg(status != RBL_TIMEOUT, "ringbloomd neither started nor exited within %d s; "
                  "see %s", rbd_wait_ms(10000) / 1000, d->log);
    ck_assert_msg(status != RBL_EFORK, "%s", d->err);
    return status;
}

/* The end of d's log (at most 1,599 bytes), for a failure's message: the
 * log itself goes with the test's directory. */
static const char *log_tail(const rbd_proc_t *d)
{
    static char tail[1600];
    size_t len = 0;
    char *all = rbd_read_file(d->log, &len);
    size_t from = len > sizeof(tail) - 1 ? len - (sizeof(tail) - 1) : 0;

    snprintf(tail, sizeof(tail), "%.*s", (int)(len - from), all + from);
    free(all);
    return tail;
}

void rbd_launch(rbd_proc_t *d, const char *const *extra_args)
{
    int status = rbd_try_launch(d, extra_args);

    ck_assert_msg(status == RBL_ANSWERS, "ringbloomd exited during start-up (status %d); its "
                  "log ends:\n%s", status, log_tail(d));
}

void rbd_prepare(rbd_proc_t *d, const char *extra)
{
    char prefix[32], inst[96];
    int known = 0;

    snprintf(prefix, sizeof(prefix), "rbtest.%d", (int)rb_test_main_pid);
    /* 0755: other uids reach the socket */
    ck_assert_msg(rbl_init(d, "/tmp", prefix, 0755, rb_test_instance(inst, sizeof(inst))) == 0,
                  "%s", d->err);
    if (rbd_nprocs == 0)
        atexit(rbd_teardown);   /* also when an assertion ends the test */
    for (int i = 0; i < rbd_nprocs; i++)
        known |= rbd_procs[i] == d;
    if (!known) {
        ck_assert_int_lt(rbd_nprocs, RBD_MAX_PROCS);
        rbd_procs[rbd_nprocs++] = d;
    }
    rbd_write_conf(d, extra);
}

void rbd_start(rbd_proc_t *d, const char *extra)
{
    rbd_prepare(d, extra);
    rbd_launch(d, NULL);
}

const char *rbd_start_fails(const char *conf)
{
    static char out[2048];
    char cmd[512];
    FILE *f;
    int status;

    out[0] = '\0';
    snprintf(cmd, sizeof(cmd), "%s -f -c %s 2>&1", rbd_binary(), conf);
    f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(out, sizeof(out), f) != NULL)
        if (strstr(out, "cannot start"))
            break;
    status = pclose(f);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
                  "ringbloomd did not refuse to start (status %d): %s", status, out);
    return out;
}

/* Runs the shell command cmd to its exit: its output (stdout and stderr)
 * into out, NUL-terminated; returns its wait status. */
static int rbd_run(const char *cmd, char *out, size_t cap)
{
    size_t n = 0;
    FILE *f = popen(cmd, "r");

    ck_assert_ptr_nonnull(f);
    out[0] = '\0';
    while (n + 1 < cap && fgets(out + n, (int)(cap - n), f) != NULL)
        n += strlen(out + n);
    return pclose(f);
}

int rbd_run_daemon(const rbd_proc_t *d, char *out, size_t cap)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "%s -f -c %s 2>&1", rbd_binary(), d->conf);
    return rbd_run(cmd, out, cap);
}

int rbd_run_cli(char *out, size_t cap, const char *args)
{
    static char buf[PATH_MAX];
    const char *cli = rbl_tool_path(NULL, "RB_CLI", "client/ringbloom", buf, sizeof(buf));
    char cmd[PATH_MAX + 1024];
    int status;

    snprintf(cmd, sizeof(cmd), "%s %s 2>&1", cli, args);
    status = rbd_run(cmd, out, cap);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

rb_segment_t *rbd_attach(const rbd_proc_t *d)
{
    rb_segment_t *seg;
    ck_assert_int_eq(rb_segment_attach(d->inst, RB_ATTACH_STALE_OK, &seg), RB_OK);
    return seg;
}

rb_conn_t *rbd_connect(const rbd_proc_t *d)
{
    rb_conn_t *c;
    ck_assert_int_eq(rb_conn_open(NULL, d->sock, rbd_wait_ms(10000), &c), RB_OK);
    return c;
}

int rbd_raw_connect(const rbd_proc_t *d)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_uint_lt(strlen(d->sock), sizeof(sa.sun_path));
    memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

const char *rbd_cmd(rb_conn_t *c, int *rc, ...)
{
    static char buf[65536];
    const char *argv[64];
    size_t argl[64], argc = 0;
    va_list ap;
    const char *a;

    va_start(ap, rc);
    while ((a = va_arg(ap, const char *)) != NULL && argc < 64) {
        argv[argc] = a;
        argl[argc++] = strlen(a);
    }
    va_end(ap);
    *rc = rb_conn_command(c, argc, argv, argl, buf, sizeof(buf));
    return buf;
}

double rbd_info_num(rb_conn_t *c, const char *section, const char *field)
{
    char key[80];
    const char *t, *p;
    int rc;

    t = rbd_cmd(c, &rc, "INFO", section, (const char *)NULL);
    ck_assert_int_eq(rc, RB_OK);
    snprintf(key, sizeof(key), "\n%s:", field);
    p = strstr(t, key);
    ck_assert_msg(p != NULL, "INFO %s has no %s", section, field);
    return atof(p + strlen(key));
}

void rbd_wait_line(const char *path, const char *needle)
{
    uint64_t until = rb_test_now_ms() + (uint64_t)rbd_wait_ms(5000);

    while (rbd_file_count(path, needle) == 0) {
        ck_assert_msg(rb_test_now_ms() < until, "%s: no line with '%s' within %d s", path,
                      needle, rbd_wait_ms(5000) / 1000);
        usleep(10000);
    }
}

int rbd_test_config(const char *conf, char *out, size_t cap)
{
    char cmd[1024];
    int status;

    snprintf(cmd, sizeof(cmd), "timeout %d %s -t -c %s 2>&1", rbd_wait_ms(10000) / 1000,
             rbd_binary(), conf);
    status = rbd_run(cmd, out, cap);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int rbd_log_count(const rbd_proc_t *d, const char *needle)
{
    return rbd_file_count(d->log, needle);
}

int rbd_file_count(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

void rbd_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");

    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

char *rbd_read_file(const char *path, size_t *len)
{
    struct stat st;
    char *data;
    FILE *f = fopen(path, "rb");

    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fstat(fileno(f), &st), 0);
    data = malloc((size_t)st.st_size + 1);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(fread(data, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    data[st.st_size] = '\0';   /* the callers read it as a string too */
    *len = (size_t)st.st_size;
    return data;
}

/* ---- what a daemon process spends (/proc) ---------------------------------- */

long rbd_proc_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, field, strlen(field)) == 0)
            kb = strtol(line + strlen(field), NULL, 10);
    fclose(f);
    ck_assert_int_ge(kb, 0);
    return kb;
}

long rbd_cpu_ms(pid_t pid)
{
    char path[64], buf[2048], *p;
    unsigned long long ut = 0, st = 0;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');   /* the command name may hold spaces */
    ck_assert_ptr_nonnull(p);
    /* After ")": state (field 3) ... utime is field 14, stime 15. */
    ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                            &st), 2);
    return (long)((ut + st) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* ---- filter dumps ----------------------------------------------------------------- */

void rbd_dump_free(rbd_dump_t *dp)
{
    for (size_t i = 0; i < dp->n; i++)
        free(dp->data[i]);
    dp->n = 0;
}

/* The offset just past the first "\r\n" of buf[from, have), or 0. */
static size_t past_crlf(const char *buf, size_t from, size_t have)
{
    for (size_t i = from; i + 1 < have; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n')
            return i + 2;
    return 0;
}

/* Sends argv/argl on fd as one RESP request and reads the whole reply
 * (one line, or a SCANDUMP's *2 :iter $len bytes) into buf; returns its
 * length. */
static size_t raw_call(int fd, size_t argc, const char *const *argv, const size_t *argl,
                       char *buf, size_t cap)
{
    size_t have = 0;
    char head[64];

    ck_assert_int_gt(dprintf(fd, "*%zu\r\n", argc), 0);
    for (size_t i = 0; i < argc; i++) {
        int n = snprintf(head, sizeof(head), "$%zu\r\n", argl[i]);
        ck_assert_int_eq(write(fd, head, (size_t)n), n);
        ck_assert_int_eq(write(fd, argv[i], argl[i]), (ssize_t)argl[i]);
        ck_assert_int_eq(write(fd, "\r\n", 2), 2);
    }
    for (;;) {
        size_t want = 0, a = past_crlf(buf, 0, have), b, e;
        ssize_t got;
        if (a != 0 && buf[0] != '*')
            want = a;
        else if (a != 0 && (b = past_crlf(buf, a, have)) != 0 &&
                 (e = past_crlf(buf, b, have)) != 0)
            want = e + strtoul(buf + b + 1, NULL, 10) + 2;
        if (want != 0 && have >= want)
            return want;
        ck_assert_uint_lt(have, cap);
        got = read(fd, buf + have, cap - have);
        ck_assert_int_gt(got, 0);
        have += (size_t)got;
    }
}

void rbd_scandump(const rbd_proc_t *d, const char *cmd, const char *name, rbd_dump_t *dp)
{
    static char buf[(4 << 20) + 128];
    int fd = rbd_raw_connect(d);
    long long iter = 0;

    memset(dp, 0, sizeof(*dp));
    for (;;) {
        char it[32], *end;
        const char *argv[3] = { cmd, name, it };
        size_t argl[3] = { strlen(cmd), strlen(name), 0 }, len;

        argl[2] = (size_t)snprintf(it, sizeof(it), "%lld", iter);
        raw_call(fd, 3, argv, argl, buf, sizeof(buf));
        ck_assert_msg(strncmp(buf, "*2\r\n:", 5) == 0, "%s %s: %.40s", cmd, name, buf);
        iter = strtoll(buf + 5, &end, 10);
        if (iter == 0)
            break;
        ck_assert_uint_lt(dp->n, RBD_DUMP_CHUNKS);
        len = strtoul(end + 3, &end, 10);
        dp->iter[dp->n] = iter;
        dp->len[dp->n] = len;
        dp->data[dp->n] = malloc(len + 1);
        memcpy(dp->data[dp->n++], end + 2, len);
    }
    close(fd);
}

void rbd_assert_same_dump(const rbd_dump_t *a, const rbd_dump_t *b, const char *name)
{
    ck_assert_uint_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        ck_assert_int_eq(a->iter[i], b->iter[i]);
        ck_assert_uint_eq(a->len[i], b->len[i]);
        ck_assert_msg(memcmp(a->data[i], b->data[i], a->len[i]) == 0, "%s: chunk %zu differs",
                      name, i);
    }
}

void rbd_loadchunks(rb_conn_t *c, const char *cmd, const char *name, const rbd_dump_t *dp)
{
    char it[32], buf[256];

    for (size_t i = 0; i < dp->n; i++) {
        const char *argv[4] = { cmd, name, it, dp->data[i] };
        size_t argl[4] = { strlen(cmd), strlen(name), 0, dp->len[i] };
        argl[2] = (size_t)snprintf(it, sizeof(it), "%lld", dp->iter[i]);
        ck_assert_int_eq(rb_conn_command(c, 4, argv, argl, buf, sizeof(buf)), RB_OK);
        ck_assert_str_eq(buf, "OK");
    }
}

void rbd_restart_cold(rbd_proc_t *d)
{
    rbd_stop(d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d->inst), RB_OK);
    rbd_launch(d, NULL);
}
