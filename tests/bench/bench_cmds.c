/*
 * bench_cmds.c - section k of `make bench`: commands of the daemon beside
 * the same commands of Debian's redis-server, both on their own Unix
 * socket, driven by redis-benchmark in one run (each repetition runs both,
 * one after the other; the ratio is per repetition: median and spread).
 *
 *   k1. PFCOUNT of one counter of ~10^5 distinct elements, pipelined
 *       (-P 32) and not (-P 1), 1 and 8 clients: redis-server answers from
 *       the cardinality it caches in the HLL header, ringbloomd from the
 *       count it keeps with the counter (H2, docs/design.md "HyperLogLog").
 *       Target (issue 29): >= 1.5x redis-server's.
 *   k2. PFCOUNT of the union of two counters (no cache on either side:
 *       the registers' maxima, then the estimate), and PFADD of one new
 *       element (the count cleared), pipelined.
 *   k3. The single-key commands (issue 29, item 4) with 32 in flight, 1
 *       and 8 clients: CMS.INCRBY, CMS.QUERY, CF.ADD, CF.EXISTS, BF.ADD,
 *       BF.EXISTS beside a redis-server twin of the same shape (HINCRBY,
 *       HGET, SADD, SISMEMBER: one key, one hash or set operation) and,
 *       with --daemon-before PATH (e.g. main's ringbloomd), beside that
 *       ringbloomd too (the after / before ratio per run).  Goal (issue
 *       29): >= 1.5x the twin.
 *
 * Two figures per row: requests/s as redis-benchmark saw them, and
 * requests per second of the server's own CPU time (every thread's, from
 * /proc/PID/task/TID/schedstat).  On a machine of two cores the one
 * redis-benchmark thread is as busy as the server, so requests/s is
 * mostly the client's limit; the CPU figure is the server's capacity, what
 * a server saturated by many clients would reach, and the target is
 * judged on it.  Neither server keeps anything on disk for these reads
 * (redis-server: --save '', no AOF; PFCOUNT writes nothing to ringbloomd's
 * log).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/types.h>

#include "bench.h"

/* Fills counter key on the server at sock with n random elements. */
static void fill(const char *sock, const char *key, int n)
{
    char args[256];

    snprintf(args, sizeof(args), "-n %d -P 64 -c 1 -r 100000000 PFADD %s __rand_int__", n, key);
    if (isnan(bench_redis_benchmark(sock, args, 1)))
        bench_die("redis-benchmark could not fill %s on %s", key, sock);
}

/* Nanoseconds on a CPU of every thread of process pid so far
 * (/proc/PID/task/TID/schedstat's first field). */
static double cpu_ns(pid_t pid)
{
    char path[64], line[128];
    double total = 0;
    DIR *d;
    struct dirent *e;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    if ((d = opendir(path)) == NULL)
        bench_die("%s: %s", path, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        char p[400];
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s/schedstat", path, e->d_name);
        if ((f = fopen(p, "r")) == NULL)
            continue;   /* a thread that ended */
        if (fgets(line, sizeof(line), f) != NULL)
            total += strtod(line, NULL);
        fclose(f);
    }
    closedir(d);
    return total;
}

/* Sends one command line to the server at sock (setup; its reply dropped). */
static void send_line(const char *sock, const char *line)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "redis-cli -s %s %s >/dev/null", sock, line);
    if (system(cmd) != 0)
        bench_die("%s on %s failed", line, sock);
}

/* bench.h: also section b's (bench_redisbloom.c) one run. */
void bench_run(pid_t pid, const char *sock, const char *args, int cmds, double *rps,
               double *cap)
{
    double c0 = cpu_ns(pid);

    *rps = bench_redis_benchmark(sock, args, 1);
    if (isnan(*rps))
        bench_die("redis-benchmark %.60s... gave no figure on %s", args, sock);
    *cap = cmds / ((cpu_ns(pid) - c0) / 1e9);
}

/* One row: the load args (cmds requests) on both servers, reps times,
 * alternating; prints requests/s and the servers' capacity (requests per
 * CPU second), each with the ratio's median and spread, and the target's
 * verdict on the capacity if target > 0. */
static void pair(const char *title, pid_t rpid, const char *rsock, pid_t dpid,
                 const char *dsock, const char *args, int cmds, int reps, double target)
{
    double r[32], d[32], rc[32], dc[32], ratio[3], cratio[3];

    for (int i = 0; i < reps; i++) {
        bench_run(rpid, rsock, args, cmds, &r[i], &rc[i]);
        bench_run(dpid, dsock, args, cmds, &d[i], &dc[i]);
    }
    bench_ratio_spread(d, r, reps, ratio);
    bench_ratio_spread(dc, rc, reps, cratio);
    {
        cell_t c[2] = { { "redis-server", bench_median(r, reps), NULL },
                        { "ringbloomd", bench_median(d, reps), NULL } };
        row("commands", title, "req/s", 1, 0, c, 2);
    }
    {
        char t[400];
        cell_t c[2] = { { "redis-server", bench_median(rc, reps), NULL },
                        { "ringbloomd", bench_median(dc, reps), NULL } };
        snprintf(t, sizeof(t), "%s, per server CPU s", title);
        row("commands", t, "req/cpu-s", 1, 0, c, 2);
    }
    printf("  %-34s  req/s %.2fx (%.2f-%.2f), per CPU s %.2fx (%.2f-%.2f) over %d runs", "",
           ratio[0], ratio[1], ratio[2], cratio[0], cratio[1], cratio[2], reps);
    if (target > 0)
        printf("; target >= %.1fx: %s", target, cratio[0] >= target ? "met" : "missed");
    printf("\n");
}

/* A k3 row: dargs on ringbloomd (and on the older one, bpid > 0) beside
 * rargs, its twin, on redis-server, reps times alternating; requests/s
 * and per server CPU second, with the ratios' medians and spreads. */
static void twin(const char *title, pid_t rpid, const char *rsock, pid_t dpid,
                 const char *dsock, pid_t bpid, const char *bsock, const char *rargs,
                 const char *dargs, int cmds, int reps, double target)
{
    double r[32], d[32], b[32], rc[32], dc[32], bc[32], q[3], qc[3], u[3], uc[3];
    char t[400];

    for (int i = 0; i < reps; i++) {
        bench_run(rpid, rsock, rargs, cmds, &r[i], &rc[i]);
        bench_run(dpid, dsock, dargs, cmds, &d[i], &dc[i]);
        if (bpid > 0)
            bench_run(bpid, bsock, dargs, cmds, &b[i], &bc[i]);
    }
    bench_ratio_spread(d, r, reps, q);
    bench_ratio_spread(dc, rc, reps, qc);
    {
        cell_t c[3] = { { "redis-server", bench_median(r, reps), NULL },
                        { "ringbloomd", bench_median(d, reps), NULL },
                        { "before", bpid > 0 ? bench_median(b, reps) : NAN, NULL } };
        row("commands", title, "req/s", 1, 0, c, bpid > 0 ? 3 : 2);
    }
    {
        cell_t c[3] = { { "redis-server", bench_median(rc, reps), NULL },
                        { "ringbloomd", bench_median(dc, reps), NULL },
                        { "before", bpid > 0 ? bench_median(bc, reps) : NAN, NULL } };
        snprintf(t, sizeof(t), "%s, per server CPU s", title);
        row("commands", t, "req/cpu-s", 1, 0, c, bpid > 0 ? 3 : 2);
    }
    printf("  %-34s  vs twin: req/s %.2fx (%.2f-%.2f), per CPU s %.2fx (%.2f-%.2f)", "",
           q[0], q[1], q[2], qc[0], qc[1], qc[2]);
    if (target > 0)
        printf("; target >= %.1fx: %s", target, qc[0] >= target ? "met" : "missed");
    printf("\n");
    if (bpid > 0) {
        bench_ratio_spread(d, b, reps, u);
        bench_ratio_spread(dc, bc, reps, uc);
        printf("  %-34s  vs before: req/s %.2fx (%.2f-%.2f), per CPU s %.2fx (%.2f-%.2f)"
               " over %d runs\n", "", u[0], u[1], u[2], uc[0], uc[1], uc[2], reps);
    }
}

/* k3 (see the top): the single-key commands beside their twins. */
static void single_keys(pid_t rpid, const char *rsock, pid_t dpid, const char *dsock,
                        const char *before_bin, int n, int reps)
{
    static const struct { const char *title, *twin, *cmd; } loads[] = {
        { "CMS.INCRBY (HINCRBY)", "HINCRBY hk k 1", "CMS.INCRBY c k 1" },
        { "CMS.QUERY (HGET)", "HGET hk k", "CMS.QUERY c k" },
        { "CF.ADD (SADD)", "SADD s __rand_int__", "CF.ADD f __rand_int__" },
        { "CF.EXISTS (SISMEMBER)", "SISMEMBER s __rand_int__", "CF.EXISTS f __rand_int__" },
        { "BF.ADD (SADD)", "SADD s2 __rand_int__", "BF.ADD b __rand_int__" },
        { "BF.EXISTS (SISMEMBER)", "SISMEMBER s2 __rand_int__", "BF.EXISTS b __rand_int__" },
    };
    static const char *const setup[] = { "CMS.INITBYDIM c 2000 5", "CF.RESERVE f 8000000",
                                         "BF.RESERVE b 0.01 10000000" };
    char bsock[256] = "";
    pid_t bpid = 0;

    if (before_bin != NULL)
        bpid = bench_daemon_bin(before_bin, "cmds-before", "appendfsync everysec", bsock,
                                sizeof(bsock));
    for (size_t i = 0; i < sizeof(setup) / sizeof(setup[0]); i++) {
        send_line(dsock, setup[i]);
        if (bpid > 0)
            send_line(bsock, setup[i]);
    }
    printf("   k3: single-key commands, -P 32, beside a redis-server twin%s\n",
           bpid > 0 ? " and --daemon-before's ringbloomd (\"before\")" : "");
    for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++)
        for (int clients = 1; clients <= 8; clients += 7) {
            char title[128], rargs[256], dargs[256];
            snprintf(title, sizeof(title), "%s, -P 32 -c %d", loads[i].title, clients);
            snprintf(rargs, sizeof(rargs), "-n %d -P 32 -c %d -r 1000000 %s", n, clients,
                     loads[i].twin);
            snprintf(dargs, sizeof(dargs), "-n %d -P 32 -c %d -r 1000000 %s", n, clients,
                     loads[i].cmd);
            twin(title, rpid, rsock, dpid, dsock, bpid, bsock, rargs, dargs, n, reps, 1.5);
        }
    if (bpid > 0)
        bench_daemon_stop(bpid);
}

void bench_cmds(const char *before_bin, int reps, int quick)
{
    char rsock[256], dsock[256];
    pid_t rpid, dpid;
    int n = quick ? 100000 : 400000;
    char args[256];
    static const struct { const char *title; const char *load; double target; } loads[] = {
        { "PFCOUNT 1 key, -P 32 -c 1", "-P 32 -c 1 PFCOUNT hll", 1.5 },
        { "PFCOUNT 1 key, -P 32 -c 8", "-P 32 -c 8 PFCOUNT hll", 1.5 },
        { "PFCOUNT 1 key, -P 1 -c 1", "-P 1 -c 1 PFCOUNT hll", 1.5 },
        { "PFCOUNT 1 key, -P 1 -c 8", "-P 1 -c 8 PFCOUNT hll", 1.5 },
        { "PFCOUNT 2 keys (union), -P 32 -c 1", "-P 32 -c 1 PFCOUNT hll hll2", 0 },
        { "PFADD 1 new element, -P 32 -c 1",
          "-P 32 -c 1 -r 100000000 PFADD hll3 __rand_int__", 0 },
    };

    if (system("command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null")) {
        printf("k. Commands beside redis-server: skipped (needs redis-server and "
               "redis-benchmark)\n\n");
        return;
    }
    rpid = bench_redis_server("cmds-redis", rsock, sizeof(rsock));
    dpid = bench_daemon("cmds", "appendfsync everysec", -1, dsock, sizeof(dsock));
    fill(rsock, "hll", 100000);
    fill(dsock, "hll", 100000);
    fill(rsock, "hll2", 100000);
    fill(dsock, "hll2", 100000);
    printf("k. Commands beside redis-server %s, through redis-benchmark on each one's Unix\n"
           "   socket: requests/s (higher is better), ratio per run (median, lowest-highest)\n",
           "(Debian's)");
    for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++) {
        int cmds = strstr(loads[i].load, "-P 1 ") ? n / 8 : n;
        snprintf(args, sizeof(args), "-n %d %s", cmds, loads[i].load);
        pair(loads[i].title, rpid, rsock, dpid, dsock, args, cmds, reps, loads[i].target);
    }
    single_keys(rpid, rsock, dpid, dsock, before_bin, n, reps);
    bench_daemon_stop(dpid);
    bench_daemon_stop(rpid);
    printf("\n");
}
