/*
 * bench_cliw.c - section w of `make bench`: the CLI's commands sent to the
 * daemon, whole process (fork to reaped exit), beside redis-cli sending
 * the same command to the same socket (issue 28: the CLI reads replies
 * with hiredis and must stay at or below redis-cli's time).
 *
 * Contenders, alternating within each repetition so all see the same
 * machine: `redis-cli -s SOCK BF.ADD f k`, `ringbloom add f k` (the write
 * path, rb_conn_bf_add_many), `redis-cli -s SOCK INFO server` and
 * `ringbloom info server` (a reply rendered by rb_conn_command), and with
 * --cli-before the same two ringbloom commands of an older CLI.  Each
 * repetition runs every contender RUNS times (200, 30 with --quick) and
 * keeps the median; the table gives the median of the repetitions'
 * medians and the line under it their lowest and highest.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define MAX_REPS 31
#define NC       6   /* contenders, at most */

void bench_cli_write(const char *cli, const char *cli_before, int reps, int quick)
{
    const int runs = quick ? 30 : 200;
    char sock[256], instance[128];
    const char *argv[NC][12];
    const char *name[NC];
    double *t, med[NC][MAX_REPS], q[NC][3];
    int nc = 0;
    rb_bloom_params_t p = { .capacity = 1000000, .error_rate = 0.01,
                            .layout = RB_BLOOM_BLOCKED };
    rb_conn_t *c;
    pid_t dpid;

    if (system("command -v redis-cli >/dev/null")) {
        printf("w. CLI commands to the daemon: skipped (needs redis-cli)\n\n");
        return;
    }
    if (reps > MAX_REPS)
        reps = MAX_REPS;
    dpid = bench_daemon("cliw", NULL, -1, sock, sizeof(sock));
    bench_daemon_instance("cliw", instance, sizeof(instance));
    if (rb_conn_open(NULL, sock, 10000, &c) != RB_OK || rb_conn_bf_reserve(c, "f", 1, &p) != RB_OK)
        bench_die("section w: cannot reserve the filter");
    rb_conn_close(c);
#define CONTENDER(label, ...) do { \
        const char *a_[] = { __VA_ARGS__, NULL }; \
        memcpy(argv[nc], a_, sizeof(a_)); \
        name[nc++] = label; \
    } while (0)
    CONTENDER("redis-cli BF.ADD", "redis-cli", "-s", sock, "BF.ADD", "f", "k");
    CONTENDER("ringbloom add", cli, "--instance", instance, "--socket", sock, "add", "f", "k");
    if (cli_before != NULL)
        CONTENDER("before: ringbloom add", cli_before, "--instance", instance, "--socket", sock,
                  "add", "f", "k");
    CONTENDER("redis-cli INFO server", "redis-cli", "-s", sock, "INFO", "server");
    CONTENDER("ringbloom info server", cli, "--instance", instance, "--socket", sock, "info",
              "server");
    if (cli_before != NULL)
        CONTENDER("before: ringbloom info server", cli_before, "--instance", instance, "--socket",
                  sock, "info", "server");
#undef CONTENDER
    if ((t = malloc(sizeof(double) * (size_t)runs * NC)) == NULL)
        bench_die("section w: out of memory");
    for (int i = 0; i < nc; i++)
        bench_process_ms(argv[i]);   /* warm the page cache */
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < runs; k++)
            for (int i = 0; i < nc; i++)
                t[i * runs + k] = bench_process_ms(argv[i]);
        for (int i = 0; i < nc; i++)
            med[i][r] = bench_median(t + i * runs, runs);
    }
    free(t);
    bench_daemon_stop(dpid);
    printf("w. CLI commands to the daemon, whole process (fork to exit; %d repetitions of %d\n"
           "   runs each, alternating): ms (lower is better)\n", reps, runs);
    for (int i = 0; i < nc; i++) {
        double v[MAX_REPS];
        memcpy(v, med[i], sizeof(double) * (size_t)reps);
        q[i][0] = bench_median(v, reps);
        q[i][1] = v[0];
        q[i][2] = v[reps - 1];
    }
    for (int g = 0; g < 2; g++) {
        /* Rows: BF.ADD's contenders, then INFO's; redis-cli first (the baseline). */
        int first = g == 0 ? 0 : (cli_before != NULL ? 3 : 2);
        int n = cli_before != NULL ? 3 : 2;
        cell_t cells[3];
        for (int i = 0; i < n; i++) {
            cells[i].name = name[first + i];
            cells[i].value = q[first + i][0];
            cells[i].note = NULL;
        }
        row("cli-write", g == 0 ? "BF.ADD of one key" : "INFO server", "ms", 0, 0, cells, n);
        for (int i = 0; i < n; i++)
            printf("  %-34s  %-30s medians of the repetitions %.3f-%.3f ms\n", "", name[first + i],
                   q[first + i][1], q[first + i][2]);
    }
    printf("\n");
}
