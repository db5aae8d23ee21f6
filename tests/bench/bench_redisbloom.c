/*
 * bench_redisbloom.c - section b of `make bench`: the table of issue 29,
 * ringbloomd beside RedisBloom loaded into Debian's redis-server, both
 * with AOF everysec on their own Unix socket, driven by redis-benchmark
 * with 32 commands in flight per client, 1 and 8 clients.
 *
 * The repository never builds RedisBloom (it is not packaged): the section
 * runs only when `--redisbloom PATH` names a built redisbloom.so, and
 * otherwise prints one line saying it is skipped.  Rows, each with its
 * goal (issue 29, item 4): PFCOUNT of one counter of ~10^5 elements and
 * PFADD (redis-server's own twin, the same server), BF.ADD, BF.EXISTS,
 * CF.ADD, CF.EXISTS, CMS.INCRBY, CMS.QUERY (single key: >= 1.5x), BF.MADD
 * and BF.MEXISTS of 10 and of 100 random keys (stay ahead: > 1x).  Both
 * servers get the same shapes first (BF.RESERVE, CF.RESERVE,
 * CMS.INITBYDIM), and every key is random (-r, __rand_int__).
 *
 * Each repetition runs a row on both servers, the order alternating from
 * one repetition to the next; the ratio ringbloomd / RedisBloom is taken
 * per repetition (median and lowest-highest).  The verdict is judged on
 * requests/s as redis-benchmark saw them (the figure); requests
 * per second of each server's own CPU (every thread's) are printed beside,
 * since on a small machine the one redis-benchmark thread can be the
 * limit of both.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/types.h>

#include "bench.h"

#define RANGE "100000000"   /* -r: keys drawn from 10^8 */

typedef struct load {
    const char *name;   /* the row */
    const char *cmd;    /* the command and its key */
    int keys;           /* random items appended (0: cmd has its own) */
    int div;            /* requests: n / div */
    double goal;        /* ringbloomd / RedisBloom to reach (1: stay ahead, > 1x) */
} load_t;

static const load_t loads[] = {
    { "PFCOUNT (vs redis-server)", "PFCOUNT hll", 0, 1, 1.5 },
    { "PFADD", "PFADD hll3 __rand_int__", 0, 1, 1.5 },
    { "BF.ADD", "BF.ADD bf __rand_int__", 0, 1, 1.5 },
    { "BF.EXISTS", "BF.EXISTS bf __rand_int__", 0, 1, 1.5 },
    { "CF.ADD", "CF.ADD cf __rand_int__", 0, 1, 1.5 },
    { "CF.EXISTS", "CF.EXISTS cf __rand_int__", 0, 1, 1.5 },
    { "CMS.INCRBY", "CMS.INCRBY cms __rand_int__ 1", 0, 1, 1.5 },
    { "CMS.QUERY", "CMS.QUERY cms __rand_int__", 0, 1, 1.5 },
    { "BF.MADD x10", "BF.MADD bfm", 10, 8, 1.0 },
    { "BF.MADD x100", "BF.MADD bfm", 100, 80, 1.0 },
    { "BF.MEXISTS x10", "BF.MEXISTS bfm", 10, 8, 1.0 },
    { "BF.MEXISTS x100", "BF.MEXISTS bfm", 100, 80, 1.0 },
};
#define NLOADS (sizeof(loads) / sizeof(loads[0]))

/* Sends cmd with redis-cli to the server at sock; dies unless the first
 * line of the reply is want. */
static void cli(const char *sock, const char *cmd, const char *want)
{
    char c[512], line[256] = "";
    FILE *p;

    snprintf(c, sizeof(c), "redis-cli -s %s %s 2>&1", sock, cmd);
    p = popen(c, "r");
    if (p == NULL)
        bench_die("popen redis-cli");
    if (fgets(line, sizeof(line), p) == NULL)
        line[0] = '\0';
    pclose(p);
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, want) != 0)
        bench_die("%s on %s: \"%s\", wanted \"%s\"", cmd, sock, line, want);
}

/* Prints redis-server's version and the loaded module's (MODULE LIST's
 * ver, 20628 for 2.6.28). */
static void versions(const char *sock)
{
    char c[640], line[256], redis[64] = "?";
    int ver = -1, next = 0;
    FILE *p;

    snprintf(c, sizeof(c), "redis-cli -s %s INFO server; redis-cli -s %s MODULE LIST", sock,
             sock);
    if ((p = popen(c, "r")) == NULL)
        bench_die("popen redis-cli");
    while (fgets(line, sizeof(line), p) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        if (strncmp(line, "redis_version:", 14) == 0)
            snprintf(redis, sizeof(redis), "%.40s", line + 14);
        else if (next && ver < 0)
            ver = atoi(line);
        next = strcmp(line, "ver") == 0;
    }
    pclose(p);
    printf("   redis-server %s, RedisBloom %d.%d.%d\n", redis, ver / 10000, ver / 100 % 100,
           ver % 100);
}

/* The same shapes on both servers: filters and a sketch reserved, the
 * counter PFCOUNT reads filled with ~10^5 random elements.  Capacities
 * hold every key 5 runs of 10^6 requests add (bf 10^7, bfm 2.5*10^7, cf
 * 10^7), so no filter grows a layer during the section at --reps <= 5;
 * bfm stays under the daemon's default max-command-bytes (64 MiB). */
static void prepare(const char *sock)
{
    cli(sock, "BF.RESERVE bf 0.01 20000000", "OK");
    cli(sock, "BF.RESERVE bfm 0.01 40000000", "OK");
    cli(sock, "CF.RESERVE cf 20000000", "OK");
    cli(sock, "CMS.INITBYDIM cms 2000 5", "OK");
    if (isnan(bench_redis_benchmark(sock, "-n 100000 -P 64 -c 1 -r " RANGE
                                    " PFADD hll __rand_int__", 1)))
        bench_die("redis-benchmark could not fill hll on %s", sock);
}

static void print_reps(const char *who, const double *v, int reps)
{
    printf("    %-11s", who);
    for (int i = 0; i < reps; i++)
        printf(" %9.0f", v[i]);
    printf("\n");
}

static void loadavg(const char *when)
{
    char line[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");

    if (f != NULL) {
        if (fgets(line, sizeof(line), f) == NULL)
            line[0] = '\0';
        fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
    printf("   load average %s: %s\n", when, line);
}

/* One row with clients clients: reps alternating runs, the per-repetition
 * lines, the medians (table and CSV) and the ratio's median and range into
 * ratio[3] (requests/s) and cratio[3] (per server CPU second). */
static void one(const load_t *l, int clients, int n, int reps, pid_t rpid, const char *rsock,
                pid_t dpid, const char *dsock, double ratio[3], double cratio[3])
{
    char args[4096], title[128];
    double r[32], d[32], rc[32], dc[32];
    int cmds = n / l->div, off;

    off = snprintf(args, sizeof(args), "-n %d -P 32 -c %d -r " RANGE " %s", cmds, clients,
                   l->cmd);
    for (int k = 0; k < l->keys; k++)
        off += snprintf(args + off, sizeof(args) - (size_t)off, " __rand_int__");
    for (int i = 0; i < reps; i++) {
        if (i % 2 == 0) {
            bench_run(rpid, rsock, args, cmds, &r[i], &rc[i]);
            bench_run(dpid, dsock, args, cmds, &d[i], &dc[i]);
        } else {
            bench_run(dpid, dsock, args, cmds, &d[i], &dc[i]);
            bench_run(rpid, rsock, args, cmds, &r[i], &rc[i]);
        }
    }
    bench_ratio_spread(d, r, reps, ratio);
    bench_ratio_spread(dc, rc, reps, cratio);
    snprintf(title, sizeof(title), "%s, -P 32 -c %d", l->name, clients);
    printf("  %s: req/s per run\n", title);
    print_reps("RedisBloom", r, reps);
    print_reps("ringbloomd", d, reps);
    {
        cell_t c[2] = { { "RedisBloom", bench_median(r, reps), NULL },
                        { "ringbloomd", bench_median(d, reps), NULL } };
        row("redisbloom", title, "req/s", 1, 0, c, 2);
    }
    {
        char t[160];
        cell_t c[2] = { { "RedisBloom", bench_median(rc, reps), NULL },
                        { "ringbloomd", bench_median(dc, reps), NULL } };
        snprintf(t, sizeof(t), "%s, per server CPU s", title);
        row("redisbloom", t, "req/cpu-s", 1, 0, c, 2);
    }
    printf("  %-34s  req/s %.2fx (%.2f-%.2f), per CPU s %.2fx (%.2f-%.2f); goal %s %.1fx: %s\n",
           "", ratio[0], ratio[1], ratio[2], cratio[0], cratio[1], cratio[2],
           l->goal > 1 ? ">=" : ">", l->goal,
           (l->goal > 1 ? ratio[0] >= l->goal : ratio[0] > l->goal) ? "met" : "missed");
}

void bench_redisbloom(const char *module, int reps, int quick)
{
    static const int clients[2] = { 1, 8 };
    char path[PATH_MAX], rsock[256], dsock[256];
    const char *extra[] = { "--loadmodule", path, "--appendonly", "yes", "--appendfsync",
                            "everysec", "--appenddirname", "redisbloom-aof", NULL };
    double ratio[NLOADS][2][3], cratio[NLOADS][2][3];
    int n = quick ? 100000 : 1000000;
    pid_t rpid, dpid;

    if (module == NULL) {
        printf("b. Beside RedisBloom: skipped (give a built redisbloom.so with --redisbloom "
               "PATH; the repository does not build it)\n\n");
        return;
    }
    if (system("command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null "
               "&& command -v redis-cli >/dev/null")) {
        printf("b. Beside RedisBloom: skipped (needs redis-server, redis-benchmark and "
               "redis-cli)\n\n");
        return;
    }
    /* redis-server loads modules after it entered --dir: an absolute path. */
    if (realpath(module, path) == NULL || access(path, R_OK) != 0)
        bench_die("--redisbloom %s: not a readable file", module);
    rpid = bench_redis_server_with("rbloom-redis", extra, rsock, sizeof(rsock));
    dpid = bench_daemon("rbloom", "appendfsync everysec", -1, dsock, sizeof(dsock));
    prepare(rsock);
    prepare(dsock);
    printf("b. Beside RedisBloom in redis-server (and redis-server's own PFCOUNT / PFADD),\n"
           "   both AOF everysec, Unix sockets, redis-benchmark -P 32, 1 and 8 clients, %d\n"
           "   runs alternating; ratio ringbloomd / RedisBloom per run, median (lowest-highest)\n",
           reps);
    versions(rsock);
    loadavg("before");
    for (size_t i = 0; i < NLOADS; i++)
        for (int c = 0; c < 2; c++)
            one(&loads[i], clients[c], n, reps, rpid, rsock, dpid, dsock, ratio[i][c],
                cratio[i][c]);
    loadavg("after");
    bench_daemon_stop(dpid);
    bench_daemon_stop(rpid);
    printf("\n   %-26s  %-22s  %-22s  %s\n", "command (req/s ratio)", "1 client", "8 clients",
           "goal");
    for (size_t i = 0; i < NLOADS; i++) {
        printf("   %-26s", loads[i].name);
        for (int c = 0; c < 2; c++) {
            char cell[64];
            snprintf(cell, sizeof(cell), "%.2fx (%.2f-%.2f)", ratio[i][c][0], ratio[i][c][1],
                     ratio[i][c][2]);
            printf("  %-22s", cell);
        }
        printf("  %s %.1fx\n", loads[i].goal > 1 ? ">=" : ">", loads[i].goal);
    }
    printf("   (per server CPU s, 1 / 8 clients:");
    for (size_t i = 0; i < NLOADS; i++)
        printf("%s %s %.2fx / %.2fx", i ? ";" : "", loads[i].name, cratio[i][0][0],
               cratio[i][1][0]);
    printf(")\n\n");
}
