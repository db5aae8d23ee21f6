/*
 * bench_bulk.c - `make bench` section 9, bulk load (issue 12, target 1;
 * and the measurement of target 2: how long a reader waits while the load
 * runs and snapshots happen).
 *
 * A load generator over Unix sockets, the same for every contender:
 * reserve one filter (BF.RESERVE f 0.01 100000000: the default kind,
 * blocked), then requests of 1,000 new keys each (BF.MADD f k1..k1000, or
 * SADD f k1..k1000) with 8 requests in flight on one connection until N
 * keys are in (3*10^7; 3*10^6 under --quick).  Meanwhile a second
 * connection sends one query at a time (BF.EXISTS f k, or SISMEMBER f k)
 * in a loop and records each reply's wait.  Per run: keys/s, the longest,
 * p99 and p50 wait of the probe, and the snapshots taken during the load
 * (ringbloomd: INFO persistence's snapshots; redis-server: INFO stats'
 * total_forks, its AOF rewrites).
 *
 * Contenders: ringbloomd with its defaults (appendfsync everysec,
 * save-log-bytes 64mb, so snapshots happen during the load), and
 * Debian's redis-server doing SADD with appendonly yes, appendfsync
 * everysec (its default AOF rewrite thresholds), each started fresh for
 * every run with its files in the bench's temporary directory and removed
 * after it.  Two more contenders run only when asked through the
 * environment, since neither is part of a normal bench:
 * RB_BENCH_REDISBLOOM=<path of redisbloom.so> adds RedisBloom in
 * redis-server with AOF everysec and without AOF (the module is not
 * packaged and is never built here); RB_BENCH_BULK_NOSNAP=1 adds
 * ringbloomd with save-log-bytes 1000gb (no snapshot during the load).
 * With --daemon-before, that ringbloomd runs too (ringbloomd-before).
 *
 * Each run of 3*10^7 keys takes tens of seconds per contender, so this
 * section makes at most 3 repetitions (fewer if --reps says so); figures
 * are medians with their range.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define BATCH    1000   /* keys per request */
#define INFLIGHT 8      /* requests in flight */
#define KEYLEN   16     /* "key:" and 12 digits */
#define MAXC     5      /* contenders */

typedef struct contender {
    const char *name;
    int redis;              /* 0: ringbloomd */
    const char *module;     /* redis: --loadmodule, or NULL */
    int aof;                /* redis: appendonly yes */
    const char *extra;      /* ringbloomd: more configuration lines */
    const char *add, *probe;
    const char *bin;        /* ringbloomd: this binary (NULL: the one under test) */
} contender_t;

typedef struct result {
    double keys_s, max_ms, p99_ms, p50_ms, snaps;
} result_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The server of the run under way and its directory, for fail(). */
static pid_t cur_pid;
static char cur_dir[256];

/* Stops the run's server (SIGTERM: ringbloomd removes its segment) and
 * removes its directory. */
static void run_cleanup(void)
{
    char rm[320];

    if (cur_pid > 0) {
        kill(cur_pid, SIGTERM);
        waitpid(cur_pid, NULL, 0);
        cur_pid = 0;
    }
    if (cur_dir[0] != '\0') {
        snprintf(rm, sizeof(rm), "rm -rf %s", cur_dir);
        if (system(rm) != 0)
            fprintf(stderr, "bench (bulk): could not remove %s\n", cur_dir);
        cur_dir[0] = '\0';
    }
}

/* Exits after saying what failed and errno's message, leaving no server
 * or file of the run behind. */
static void fail(const char *what, const char *arg)
{
    fprintf(stderr, "bench (bulk): %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
            strerror(errno));
    run_cleanup();
    exit(1);
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median3(const double *v, int n)
{
    double s[8];
    memcpy(s, v, (size_t)n * sizeof(*s));
    qsort(s, (size_t)n, sizeof(*s), dcmp);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ---- one connection: blocking writes, a reader of whole replies --------------------- */

typedef struct conn {
    int fd;
    char *buf;
    size_t len, pos, cap;
} conn_t;

static int conn_try(conn_t *c, const char *path)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        fail("socket", path);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(c->fd);
        return -1;
    }
    c->cap = 1 << 20;
    c->buf = malloc(c->cap);
    c->len = c->pos = 0;
    if (c->buf == NULL)
        fail("malloc", NULL);
    return 0;
}

static void conn_close(conn_t *c)
{
    close(c->fd);
    free(c->buf);
}

static void send_all(conn_t *c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(c->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            fail("write to the server", NULL);
        p += w;
        n -= (size_t)w;
    }
}

/* Length of the complete RESP value at p[0..n), or 0 if it is not all
 * there yet. */
static size_t skip_value(const char *p, size_t n)
{
    const char *e = n > 0 ? memchr(p, '\n', n) : NULL;
    size_t head, at;
    long long v;

    if (e == NULL)
        return 0;
    head = (size_t)(e - p) + 1;
    if (p[0] != '$' && p[0] != '*')
        return head;   /* + - : */
    v = strtoll(p + 1, NULL, 10);
    if (p[0] == '$') {
        if (v < 0)
            return head;
        return n - head >= (size_t)v + 2 ? head + (size_t)v + 2 : 0;
    }
    at = head;   /* an array: its elements */
    for (long long i = 0; i < v; i++) {
        size_t l = skip_value(p + at, n - at);
        if (l == 0)
            return 0;
        at += l;
    }
    return at;
}

/* Reads one whole reply; *len its bytes, valid until the next call. */
static const char *read_reply(conn_t *c, size_t *len)
{
    for (;;) {
        size_t l = c->len > c->pos ? skip_value(c->buf + c->pos, c->len - c->pos) : 0;
        ssize_t r;
        if (l > 0) {
            const char *p = c->buf + c->pos;
            if (p[0] == '-') {
                fprintf(stderr, "bench (bulk): the server replied %.*s\n", (int)l, p);
                run_cleanup();
                exit(1);
            }
            c->pos += l;
            *len = l;
            return p;
        }
        if (c->pos > 0) {
            memmove(c->buf, c->buf + c->pos, c->len - c->pos);
            c->len -= c->pos;
            c->pos = 0;
        }
        if (c->len == c->cap) {
            c->cap *= 2;
            if ((c->buf = realloc(c->buf, c->cap)) == NULL)
                fail("realloc", NULL);
        }
        r = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            fail("read from the server (closed?)", NULL);
        c->len += (size_t)r;
    }
}

/* ---- requests ------------------------------------------------------------------------ */

static size_t put_bulk(char *p, const char *s, size_t n)
{
    size_t at = (size_t)sprintf(p, "$%zu\r\n", n);
    memcpy(p + at, s, n);
    memcpy(p + at + n, "\r\n", 2);
    return at + n + 2;
}

/* Key number i as "key:" and 12 digits. */
static void key_text(char *k, uint64_t i)
{
    memcpy(k, "key:", 4);
    for (int d = KEYLEN - 1; d >= 4; d--, i /= 10)
        k[d] = (char)('0' + i % 10);
}

/* The request adding keys [first, first + BATCH) into p; its length.
 * Each key is written in place ("$16\r\n", the key, CRLF) without
 * printf, so the generator keeps ahead of the fastest server. */
static size_t build_add(char *p, const char *cmd, uint64_t first)
{
    static const char head[] = "$16\r\n";
    size_t at = (size_t)sprintf(p, "*%d\r\n", BATCH + 2);

    _Static_assert(KEYLEN == 16, "head[] spells KEYLEN");
    at += put_bulk(p + at, cmd, strlen(cmd));
    at += put_bulk(p + at, "f", 1);
    for (uint64_t i = first; i < first + BATCH; i++) {
        memcpy(p + at, head, sizeof(head) - 1);
        at += sizeof(head) - 1;
        key_text(p + at, i);
        memcpy(p + at + KEYLEN, "\r\n", 2);
        at += KEYLEN + 2;
    }
    return at;
}

static void command(conn_t *c, const char *const *argv, int argc)
{
    char req[4096];
    size_t at = (size_t)sprintf(req, "*%d\r\n", argc), len;

    for (int i = 0; i < argc; i++)
        at += put_bulk(req + at, argv[i], strlen(argv[i]));
    send_all(c, req, at);
    (void)read_reply(c, &len);
}

/* The integer after "field:" in INFO section's reply, or NAN. */
static double info_field(conn_t *c, const char *section, const char *field)
{
    const char *argv[] = { "INFO", section };
    char req[256], f[64];
    size_t at = (size_t)sprintf(req, "*2\r\n"), len;
    const char *r, *hit;
    char *copy;
    double v = NAN;

    for (int i = 0; i < 2; i++)
        at += put_bulk(req + at, argv[i], strlen(argv[i]));
    send_all(c, req, at);
    r = read_reply(c, &len);
    copy = strndup(r, len);
    snprintf(f, sizeof(f), "\n%s:", field);
    if (copy != NULL && (hit = strstr(copy, f)) != NULL)
        v = strtod(hit + strlen(f), NULL);
    free(copy);
    return v;
}

/* ---- the probe: one query at a time, each reply's wait ------------------------------- */

typedef struct probe {
    conn_t c;
    const char *cmd;
    _Atomic int stop;
    double *waits;
    size_t n, cap;
} probe_t;

static void *probe_main(void *arg)
{
    probe_t *p = arg;
    char req[128], k[KEYLEN];
    size_t at = (size_t)sprintf(req, "*3\r\n"), len;

    at += put_bulk(req + at, p->cmd, strlen(p->cmd));
    at += put_bulk(req + at, "f", 1);
    key_text(k, 12345);
    at += put_bulk(req + at, k, KEYLEN);
    while (!atomic_load(&p->stop)) {
        double t = now_s();
        send_all(&p->c, req, at);
        (void)read_reply(&p->c, &len);
        if (p->n == p->cap) {
            p->cap = p->cap ? 2 * p->cap : 65536;
            if ((p->waits = realloc(p->waits, p->cap * sizeof(*p->waits))) == NULL)
                fail("realloc", NULL);
        }
        p->waits[p->n++] = (now_s() - t) * 1e3;
    }
    return NULL;
}

/* ---- servers --------------------------------------------------------------------------- */

static pid_t spawn(const char *const argv[])
{
    pid_t pid = fork();

    if (pid < 0)
        fail("fork", NULL);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd, 1);
        dup2(fd, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static void connect_wait(conn_t *c, const char *path, pid_t pid)
{
    for (int i = 0; i < 1000; i++) {
        if (conn_try(c, path) == 0)
            return;
        if (waitpid(pid, NULL, WNOHANG) == pid)
            break;
        usleep(10000);
    }
    fprintf(stderr, "bench (bulk): nothing listens on %s\n", path);
    run_cleanup();
    exit(1);
}

/* One run of one contender in directory dir (made and removed here). */
static result_t run_one(const contender_t *ct, const char *tmpdir, const char *daemon_bin,
                        int id, uint64_t nkeys)
{
    char dir[256], sock[300], conf[300];
    conn_t main_c;
    probe_t pr = { .cmd = ct->probe };
    pthread_t th;
    result_t res;
    pid_t pid;
    char *req[INFLIGHT];
    uint64_t nreq = nkeys / BATCH, sent = 0, got = 0;
    double snap0, t0, t1;
    const char *snapsec = ct->redis ? "stats" : "persistence";
    const char *snapfield = ct->redis ? "total_forks" : "snapshots";

    snprintf(dir, sizeof(dir), "%s/bulk-%d", tmpdir, id);
    snprintf(sock, sizeof(sock), "%s/s", dir);
    if (mkdir(dir, 0700) != 0)
        fail("mkdir", dir);
    snprintf(cur_dir, sizeof(cur_dir), "%s", dir);
    if (ct->redis) {
        const char *argv[16] = { "redis-server", "--port", "0", "--unixsocket", sock,
                                 "--dir", dir, "--save", "", "--appendonly",
                                 ct->aof ? "yes" : "no", "--appendfsync", "everysec" };
        int a = 13;
        if (ct->module != NULL) {
            argv[a++] = "--loadmodule";
            argv[a++] = ct->module;
        }
        argv[a] = NULL;
        pid = spawn(argv);
    } else {
        FILE *f;
        snprintf(conf, sizeof(conf), "%s/d.conf", dir);
        if ((f = fopen(conf, "w")) == NULL)
            fail("create", conf);
        fprintf(f, "instance rbbench-bulk-%d-%d\nsocket %s\ndir %s/state\npidfile %s/d.pid\n"
                "keep-segment no\nappendfsync everysec\nmax-memory 2gb\n"
                "max-command-bytes 512mb\n%s\n", (int)getpid(),
                id, sock, dir, dir, ct->extra ? ct->extra : "");
        fclose(f);
        {
            const char *argv[] = { ct->bin ? ct->bin : daemon_bin, "-f", "-c", conf, NULL };
            pid = spawn(argv);
        }
    }
    cur_pid = pid;
    connect_wait(&main_c, sock, pid);
    if (strcmp(ct->add, "BF.MADD") == 0) {
        const char *argv[] = { "BF.RESERVE", "f", "0.01", "100000000" };
        command(&main_c, argv, 4);
    }
    snap0 = info_field(&main_c, snapsec, snapfield);
    if (conn_try(&pr.c, sock) != 0)
        fail("connect", sock);
    for (int i = 0; i < INFLIGHT; i++)
        if ((req[i] = malloc(BATCH * (KEYLEN + 8) + 64)) == NULL)
            fail("malloc", NULL);
    if (pthread_create(&th, NULL, probe_main, &pr) != 0)
        fail("pthread_create", NULL);
    t0 = now_s();
    while (got < nreq) {
        size_t len;
        while (sent < nreq && sent - got < INFLIGHT) {
            char *r = req[sent % INFLIGHT];
            send_all(&main_c, r, build_add(r, ct->add, sent * BATCH));
            sent++;
        }
        (void)read_reply(&main_c, &len);
        got++;
    }
    t1 = now_s();
    atomic_store(&pr.stop, 1);
    pthread_join(th, NULL);
    res.snaps = info_field(&main_c, snapsec, snapfield) - snap0;
    res.keys_s = (double)(nreq * BATCH) / (t1 - t0);
    qsort(pr.waits, pr.n, sizeof(*pr.waits), dcmp);
    res.max_ms = pr.n ? pr.waits[pr.n - 1] : NAN;
    res.p99_ms = pr.n ? pr.waits[(size_t)((double)(pr.n - 1) * 0.99)] : NAN;
    res.p50_ms = pr.n ? pr.waits[(pr.n - 1) / 2] : NAN;
    free(pr.waits);
    for (int i = 0; i < INFLIGHT; i++)
        free(req[i]);
    conn_close(&pr.c);
    conn_close(&main_c);
    run_cleanup();
    return res;
}

void bench_bulk(const char *tmpdir, const char *daemon_bin, const char *before_bin, int reps,
                int quick)
{
    const char *module = getenv("RB_BENCH_REDISBLOOM");
    const char *nosnap = getenv("RB_BENCH_BULK_NOSNAP");
    contender_t cs[MAXC];
    int nc = 0, runs = reps < 3 ? reps : 3, id = 0;
    uint64_t nkeys = quick ? 3000000 : 30000000;
    double v[MAXC][5][8];
    char title[128];

    if (system("command -v redis-server >/dev/null")) {
        printf("9. Bulk load: skipped (needs redis-server)\n\n");
        return;
    }
    cs[nc++] = (contender_t){ "redis-SADD", 1, NULL, 1, NULL, "SADD", "SISMEMBER", NULL };
    cs[nc++] = (contender_t){ "ringbloomd", 0, NULL, 0, NULL, "BF.MADD", "BF.EXISTS", NULL };
    if (nosnap != NULL && *nosnap != '\0' && strcmp(nosnap, "0") != 0)
        cs[nc++] = (contender_t){ "ringbloomd-nosnap", 0, NULL, 0, "save-log-bytes 1000gb",
                                  "BF.MADD", "BF.EXISTS", NULL };
    if (before_bin != NULL)
        cs[nc++] = (contender_t){ "ringbloomd-before", 0, NULL, 0, NULL, "BF.MADD", "BF.EXISTS",
                                  before_bin };
    if (module != NULL && *module != '\0' && nc + 2 <= MAXC) {
        cs[nc++] = (contender_t){ "RedisBloom-aof", 1, module, 1, NULL, "BF.MADD", "BF.EXISTS", NULL };
        cs[nc++] = (contender_t){ "RedisBloom-noaof", 1, module, 0, NULL, "BF.MADD",
                                  "BF.EXISTS", NULL };
    }
    printf("9. Bulk load: %llu keys, requests of %d keys, %d in flight, one connection, while a\n"
           "   second connection sends one query at a time (its wait: longest / p99 / p50);\n"
           "   ringbloomd BF.MADD into BF.RESERVE f 0.01 100000000 with its defaults (snapshots\n"
           "   every 64 MB of log), redis-server SADD with appendonly yes, everysec; %d run(s)\n",
           (unsigned long long)nkeys, BATCH, INFLIGHT, runs);
    fflush(stdout);
    for (int r = 0; r < runs; r++)
        for (int c = 0; c < nc; c++) {
            /* Alternate the order between runs: neither always goes first. */
            int k = r % 2 ? nc - 1 - c : c;
            result_t x = run_one(&cs[k], tmpdir, daemon_bin, id++, nkeys);
            v[k][0][r] = x.keys_s / 1e6;
            v[k][1][r] = x.max_ms;
            v[k][2][r] = x.p99_ms;
            v[k][3][r] = x.p50_ms;
            v[k][4][r] = x.snaps;
        }
    {
        static const char *const what[5] = { "keys/s", "probe longest wait", "probe p99 wait",
                                             "probe p50 wait", "snapshots during the load" };
        static const char *const unit[5] = { "M/s", "ms", "ms", "ms", "count" };
        for (int w = 0; w < 5; w++) {
            cell_t cells[MAXC];
            for (int c = 0; c < nc; c++)
                cells[c] = (cell_t){ cs[c].name, median3(v[c][w], runs), NULL };
            snprintf(title, sizeof(title), "%s, %s", "bulk load", what[w]);
            row("bulk", title, unit[w], w == 0 || w == 4, 0, cells, nc);
        }
    }
    /* Ratios of keys/s per run (contenders of the same run): ringbloomd
     * against each other contender, median and range. */
    for (int c = 0; c < nc; c++) {
        double q[8];
        if (c == 1)
            continue;
        for (int r = 0; r < runs; r++)
            q[r] = v[1][0][r] / v[c][0][r];
        qsort(q, (size_t)runs, sizeof(*q), dcmp);
        printf("  ringbloomd / %-18s keys/s per run: median %.2fx, range %.2f-%.2fx\n",
               cs[c].name, median3(q, runs), q[0], q[runs - 1]);
        /* Issue 12, target 1 carried over to SADD: RedisBloom 2.4.23 with
         * AOF loaded 2.15x SADD's keys/s in this section (docs/
         * performance.md, section 9), so 1.5x RedisBloom is 3.2x SADD. */
        if (c == 0)
            printf("  %-34s  target >= 3.2x redis-SADD (1.5x RedisBloom with AOF): %s\n", "",
                   median3(q, runs) >= 3.2 ? "met" : "missed");
    }
    /* Issue 29, item 2: the load with snapshots at least 0.9x the same
     * load without them (per run). */
    for (int c = 0; c < nc; c++) {
        double q[8];
        if (strcmp(cs[c].name, "ringbloomd-nosnap") != 0)
            continue;
        for (int r = 0; r < runs; r++)
            q[r] = v[1][0][r] / v[c][0][r];
        qsort(q, (size_t)runs, sizeof(*q), dcmp);
        printf("  %-34s  target: with snapshots >= 0.9x without: %s (median %.2fx, %.2f-%.2fx)\n",
               "", median3(q, runs) >= 0.9 ? "met" : "missed", median3(q, runs), q[0],
               q[runs - 1]);
    }
    /* Target 2: the longest wait of the probe during ringbloomd's load. */
    printf("  %-34s  target: ringbloomd's longest wait <= 50 ms: %s (median %.1f ms)\n", "",
           median3(v[1][1], runs) <= 50 ? "met" : "missed", median3(v[1][1], runs));
    for (int c = 0; c < nc; c++) {
        double lo = v[c][0][0], hi = lo, wlo = v[c][1][0], whi = wlo;
        for (int r = 1; r < runs; r++) {
            lo = fmin(lo, v[c][0][r]);
            hi = fmax(hi, v[c][0][r]);
            wlo = fmin(wlo, v[c][1][r]);
            whi = fmax(whi, v[c][1][r]);
        }
        printf("  %-20s keys/s range %.3g-%.3g M/s, longest wait range %.3g-%.3g ms\n",
               cs[c].name, lo, hi, wlo, whi);
    }
    printf("\n");
}
