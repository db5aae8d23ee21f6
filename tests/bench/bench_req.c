/*
 * bench_req.c - section f of `make bench`: the clients' requests, formatted
 * by hiredis since issue 42 (item 15) instead of by the project's own
 * encoder, measured side by side.
 *   q1. formatting alone, ns a key of a BF.MADD of 1,000 URL-like keys: the
 *       project's encoder (rbi_resp_command_put, which the nginx module
 *       keeps; lib/conn/resp_enc.c compiled into the bench), hiredis's
 *       redisFormatCommandArgv (what the library and the CLI use) and
 *       redisFormatSdsCommandArgv.
 *   q2. end to end on a private ringbloomd: rb_conn_bf_add_many (pipelined
 *       BF.MADD batches) in keys/s and in the client's CPU a key (its
 *       thread's CPU clock: what the formatting adds, whatever else runs
 *       on the host), and one rb_conn_command (BF.EXISTS) at a time in
 *       round trips/s, with this build's libringbloom and, given
 *       --lib-before PATH, an older one's (its .so, loaded with dlopen,
 *       RTLD_DEEPBIND), the repetitions alternating which goes first.
 */
#include <dlfcn.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "resp_enc.h"
#include "ringbloom.h"

#define RQ_BATCH 1000            /* keys of one BF.MADD */
#define RQ_KEYS  (1u << 20)      /* keys a repetition of q2 adds (quick: a quarter) */
#define RQ_TRIPS 20000           /* round trips a repetition of q2 makes (quick: a quarter) */

static char rq_key[RQ_KEYS][40];
static rb_key_t rq_keys[RQ_KEYS];
static volatile size_t rq_sink;

/* One library's connection calls (this build's, or the older one's). */
typedef struct rq_lib {
    const char *name;
    int (*open)(const char *, const char *, unsigned, rb_conn_t **);
    void (*close)(rb_conn_t *);
    int64_t (*add_many)(rb_conn_t *, const char *, size_t, const rb_key_t *, size_t, uint8_t *);
    int (*command)(rb_conn_t *, size_t, const char *const *, const size_t *, char *, size_t);
} rq_lib_t;

static void *rq_sym(void *dl, const char *name)
{
    void *p = dlsym(dl, name);

    if (p == NULL)
        bench_die("section f: %s not in --lib-before's library", name);
    return p;
}

/* ---- q1: formatting alone ------------------------------------------------------ */

/* ns a key of `reps` BF.MADDs of RQ_BATCH keys formatted by way w: 0 the
 * project's encoder, 1 redisFormatCommandArgv, 2 redisFormatSdsCommandArgv. */
static double rq_format(int w, int reps)
{
    static const char *argv[RQ_BATCH + 2];
    static size_t argl[RQ_BATCH + 2];
    char *buf;
    double t0;

    argv[0] = "BF.MADD";
    argl[0] = 7;
    argv[1] = "urls";
    argl[1] = 4;
    for (int i = 0; i < RQ_BATCH; i++) {
        argv[i + 2] = rq_key[i];
        argl[i + 2] = rq_keys[i].len;
    }
    if ((buf = malloc(rbi_resp_command_size(RQ_BATCH + 2, argl))) == NULL)
        bench_die("section f: out of memory");
    t0 = bench_now_s();
    for (int r = 0; r < reps; r++) {
        if (w == 0) {
            rq_sink += (size_t)(rbi_resp_command_put(buf, RQ_BATCH + 2, argv, argl) - buf);
        } else if (w == 1) {
            char *c;
            rq_sink += (size_t)redisFormatCommandArgv(&c, RQ_BATCH + 2, argv, argl);
            redisFreeCommand(c);
        } else {
            sds c;
            rq_sink += (size_t)redisFormatSdsCommandArgv(&c, RQ_BATCH + 2, argv, argl);
            redisFreeSdsCommand(c);
        }
    }
    free(buf);
    return (bench_now_s() - t0) * 1e9 / ((double)reps * RQ_BATCH);
}

static void rq_formats(int reps, int quick)
{
    static const char *const names[3] = { "project encoder", "hiredis", "hiredis sds" };
    double v[3][32];
    cell_t cells[3];

    for (int r = 0; r < reps; r++)
        for (int k = 0; k < 3; k++) {
            int w = (k + r) % 3;   /* the order rotates with the repetition */
            v[w][r] = rq_format(w, quick ? 500 : 4000);
        }
    for (int w = 0; w < 3; w++)
        cells[w] = (cell_t){ names[w], bench_median(v[w], reps), NULL };
    row("f", "format BF.MADD of 1000 keys, a key", "ns", 0, 0, cells, 3);
}

/* ---- q2: end to end --------------------------------------------------------------- */

/* This thread's CPU seconds. */
static double rq_cpu_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* keys/s of l's rb_conn_bf_add_many of n keys into a new filter (what:
 * 0; *cpu_ns: the client thread's CPU ns a key), or round trips/s of n
 * BF.EXISTS one at a time (1). */
static double rq_run(const rq_lib_t *l, const char *sock, int what, size_t n, int rep,
                     double *cpu_ns)
{
    char name[32], buf[64];
    const char *argv[3] = { "BF.EXISTS", name, rq_key[0] };
    size_t argl[3] = { 9, 0, rq_keys[0].len };
    rb_conn_t *c;
    double t0;

    argl[1] = (size_t)snprintf(name, sizeof(name), "%s%d", l->name, rep);
    if (l->open(NULL, sock, 60000, &c) != RB_OK)
        bench_die("section f: %s library: cannot connect to %s", l->name, sock);
    t0 = bench_now_s();
    *cpu_ns = rq_cpu_s();
    if (what == 0) {
        if (l->add_many(c, name, argl[1], rq_keys, n, NULL) < 0)
            bench_die("section f: %s library: add_many failed", l->name);
    } else {
        for (size_t i = 0; i < n; i++)
            if (l->command(c, 3, argv, argl, buf, sizeof(buf)) != RB_OK)
                bench_die("section f: %s library: BF.EXISTS failed", l->name);
    }
    t0 = bench_now_s() - t0;
    *cpu_ns = (rq_cpu_s() - *cpu_ns) * 1e9 / (double)n;
    l->close(c);
    return (double)n / t0;
}

/* One row of figures va (this build's) and vb (the older library's;
 * NULL: none), and the spread of their ratio per repetition. */
static void rq_print(const char *workload, const char *unit, int higher_better,
                     double *va, double *vb, int reps)
{
    double rs[3];
    cell_t cells[2];

    if (vb == NULL) {
        cells[0] = (cell_t){ "after (hiredis)", bench_median(va, reps), NULL };
        row("f", workload, unit, higher_better, 0, cells, 1);
        return;
    }
    bench_ratio_spread(va, vb, reps, rs);
    cells[0] = (cell_t){ "before", bench_median(vb, reps), NULL };
    cells[1] = (cell_t){ "after (hiredis)", bench_median(va, reps), NULL };
    row("f", workload, unit, higher_better, 0, cells, 2);
    printf("    after / before %.3fx per rep (spread %.3f .. %.3f, %d reps)\n", rs[0], rs[1],
           rs[2], reps);
}

static void rq_row(const char *workload, const char *unit, int what, size_t n, int reps,
                   const char *sock, const rq_lib_t *now, const rq_lib_t *old)
{
    double va[32], vb[32], ca[32], cb[32];
    char cpu[96];

    for (int r = 0; r < reps; r++) {
        if (old != NULL && r % 2 == 0)
            vb[r] = rq_run(old, sock, what, n, r, &cb[r]);
        va[r] = rq_run(now, sock, what, n, r, &ca[r]);
        if (old != NULL && r % 2 == 1)
            vb[r] = rq_run(old, sock, what, n, r, &cb[r]);
    }
    rq_print(workload, unit, 1, va, old != NULL ? vb : NULL, reps);
    if (what != 0)
        return;
    snprintf(cpu, sizeof(cpu), "  the client's CPU a key");
    rq_print(cpu, "ns", 0, ca, old != NULL ? cb : NULL, reps);
}

void bench_req(const char *lib_before, int reps, int quick)
{
    rq_lib_t now = { "after", rb_conn_open, rb_conn_close, rb_conn_bf_add_many, rb_conn_command };
    rq_lib_t old = { "before", NULL, NULL, NULL, NULL }, *oldp = NULL;
    size_t nkeys = quick ? RQ_KEYS / 4 : RQ_KEYS, trips = quick ? RQ_TRIPS / 4 : RQ_TRIPS;
    char sock[4096];
    pid_t pid;

    printf("\n== f. the clients' requests: the project's encoder against hiredis's ==\n");
    for (size_t i = 0; i < RQ_KEYS; i++) {
        rq_keys[i].len = (size_t)snprintf(rq_key[i], sizeof(rq_key[i]),
                                          "https://example.org/p/%zu", i * 2654435761u);
        rq_keys[i].ptr = rq_key[i];
    }
    rq_formats(reps, quick);
    if (lib_before != NULL) {
        void *dl = dlopen(lib_before, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (dl == NULL) {
            fprintf(stderr, "bench: section f: %s\n", dlerror());
        } else {
            *(void **)&old.open = rq_sym(dl, "rb_conn_open");
            *(void **)&old.close = rq_sym(dl, "rb_conn_close");
            *(void **)&old.add_many = rq_sym(dl, "rb_conn_bf_add_many");
            *(void **)&old.command = rq_sym(dl, "rb_conn_command");
            oldp = &old;   /* never dlclose'd: the process ends with the bench */
        }
    }
    pid = bench_daemon("req", "appendfsync no\nmax-memory 2gb", -1, sock, sizeof(sock));
    rq_row(quick ? "rb_conn_bf_add_many, 2^18 keys" : "rb_conn_bf_add_many, 2^20 keys",
           "keys/s", 0, nkeys, reps, sock, &now, oldp);
    rq_row("rb_conn_command BF.EXISTS, one at a time", "trips/s", 1, trips, reps, sock, &now,
           oldp);
    bench_daemon_stop(pid);
}
