/*
 * bench_idle.c - section i of `make bench`: the CPU an idle ringbloomd
 * spends with 5,000 Bloom filters and 5,000 sketches (count-min,
 * HyperLogLog and cuckoo, a third each) in use, 20 of the Bloom filters
 * aging.  The goal (issue 26): under 0.3 s of CPU per 10 s.  Read from
 * /proc/PID/stat (user + system) over a window after the fill, repeated;
 * with --daemon-before PATH (an older ringbloomd, e.g. main's) the same
 * run measures it too and prints the two side by side as a ratio.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define IB_BLOOM  5000
#define IB_SKETCH 5000
#define IB_AGING  20

/* CPU seconds (user + system) process pid has used. */
static double cpu_s(pid_t pid)
{
    char path[64], buf[2048], *p;
    unsigned long long ut = 0, st = 0;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        bench_die("%s", path);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');   /* the command name may hold spaces */
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        bench_die("%s: unreadable", path);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* One request given as one line of words (changed in place). */
static void ib_cmd(rb_conn_t *c, char *line)
{
    char buf[256], *argv[8], *save = NULL;
    size_t argl[8], argc = 0;

    for (char *w = strtok_r(line, " ", &save); w != NULL && argc < 8;
         w = strtok_r(NULL, " ", &save)) {
        argv[argc] = w;
        argl[argc++] = strlen(w);
    }
    if (rb_conn_command(c, argc, (const char *const *)argv, argl, buf, sizeof(buf)) != RB_OK)
        bench_die("%s: %s", line, buf);
}

/* Starts bin (NULL: the daemon under test), fills it, and measures the
 * CPU of `reps` idle windows of `window` seconds, each scaled to seconds
 * per 10 s, into v. */
static void ib_run(const char *bin, const char *name, int reps, int window, double *v)
{
    char sock[256];
    pid_t pid = bench_daemon_bin(bin, name, "max-filters 10100\nmax-memory 512mb\n"
                                 "appendfsync no", sock, sizeof(sock));
    char line[128];
    rb_conn_t *c;

    if (rb_conn_open(NULL, sock, 10000, &c) != RB_OK)
        bench_die("connect %s", sock);
    for (int i = 0; i < IB_BLOOM; i++) {
        if (i < IB_AGING)
            snprintf(line, sizeof(line), "BF.RESERVE age%d 0.01 100 AGING 1", i);
        else
            snprintf(line, sizeof(line), "BF.RESERVE bf%d 0.01 100", i);
        ib_cmd(c, line);
    }
    for (int i = 0; i < IB_SKETCH; i++) {
        if (i % 3 == 0)
            snprintf(line, sizeof(line), "CMS.INITBYDIM cms%d 64 2", i);
        else if (i % 3 == 1)
            snprintf(line, sizeof(line), "PFADD hll%d a", i);
        else
            snprintf(line, sizeof(line), "CF.RESERVE cf%d 64", i);
        ib_cmd(c, line);
    }
    rb_conn_close(c);
    sleep(2);   /* the first ticks after the fill */
    for (int r = 0; r < reps; r++) {
        double t0 = cpu_s(pid);
        sleep((unsigned)window);
        v[r] = (cpu_s(pid) - t0) * 10.0 / window;
    }
    bench_daemon_stop(pid);
}

/* The median of v (sorted) and its spread as text into note. */
static double ib_figure(double *v, int reps, char *note, size_t cap)
{
    double m = bench_median(v, reps);   /* sorts v */

    snprintf(note, cap, "spread %.3f .. %.3f", v[0], v[reps - 1]);
    return m;
}

void bench_idle(const char *before_bin, int reps, int quick)
{
    int window = quick ? 3 : 10;
    double now[32], before[32];
    char nn[64], bn[64];
    cell_t cells[2];

    if (reps > 3)
        reps = 3;
    printf("\n[i] idle daemon, %d Bloom filters (%d aging) and %d sketches: CPU seconds per "
           "10 s (goal < 0.3; %d windows of %d s; /proc ticks are 0.01 s)\n", IB_BLOOM,
           IB_AGING, IB_SKETCH, reps, window);
    ib_run(NULL, "idle", reps, window, now);
    cells[1] = (cell_t){ "this build", ib_figure(now, reps, nn, sizeof(nn)), nn };
    cells[0] = (cell_t){ "before", NAN, "--daemon-before PATH not given" };
    if (before_bin != NULL) {
        ib_run(before_bin, "idle-before", reps, window, before);
        cells[0] = (cell_t){ "before", ib_figure(before, reps, bn, sizeof(bn)), bn };
    }
    row("i", "idle CPU, 10^4 filters", "s/10s", 0, 0, cells, 2);
    printf("    this build: %s; before: %s\n", nn, before_bin != NULL ? bn : "not run");
}
