/*
 * bench_sparse.c - section r of `make bench`: what a snapshot and a
 * restart cost when the live data is small but the segment once held much
 * more (issue 27): a ~1 GiB Bloom filter reserved and deleted (~120 MiB
 * with --quick), then a 20 MiB one filled with keys.  Measured: the
 * snapshot's length and its blocks on disk (st_blocks), the time of SAVE,
 * and the time of a restart from the files (SIGKILL, segment removed,
 * start until the socket listens: the load and the start-up snapshot).
 * With --daemon-before PATH (an older ringbloomd, e.g. main's, which
 * writes and reads the whole segment) the same run measures it too.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define SP_FIGURES 4   /* file bytes, disk bytes, SAVE s, restart s */

static void sp_cmd(rb_conn_t *c, const char *a0, const char *a1, const char *a2, const char *a3)
{
    const char *argv[4] = { a0, a1, a2, a3 };
    size_t argl[4], argc = 0;
    char buf[256];

    for (; argc < 4 && argv[argc] != NULL; argc++)
        argl[argc] = strlen(argv[argc]);
    if (rb_conn_command(c, argc, argv, argl, buf, sizeof(buf)) != RB_OK)
        bench_die("%s: %s", a0, buf);
}

/* One run of bin (NULL: this build): out[0..SP_FIGURES). */
static void sp_run(const char *tmpdir, const char *bin, const char *name, int quick,
                   double *out)
{
    const char *conf = "max-memory 2gb\nmax-command-bytes 2gb\nsave-seconds 0\n"
                       "save-log-bytes 100gb\nappendfsync no";
    char sock[256], inst[128], path[512], key[32];
    rb_key_t *keys;
    char *text;
    int nkeys = 500000;
    struct stat st;
    rb_segment_t *seg;
    rb_conn_t *c;
    pid_t pid = bench_daemon_bin(bin, name, conf, sock, sizeof(sock));
    double t0;

    if (rb_conn_open(NULL, sock, 60000, &c) != RB_OK)
        bench_die("connect %s", sock);
    /* ~1 GiB (blocked, 1 %: 9.6 bits a key), or ~120 MiB. */
    sp_cmd(c, "BF.RESERVE", "big", "0.01", quick ? "100000000" : "880000000");
    sp_cmd(c, "BF.RESERVE", "live", "0.01", "16700000");   /* ~20 MiB */
    keys = malloc((size_t)nkeys * sizeof(*keys));
    text = malloc((size_t)nkeys * 16);
    if (keys == NULL || text == NULL)
        bench_die("out of memory");
    for (int i = 0; i < nkeys; i++) {
        keys[i].ptr = text + (size_t)i * 16;
        keys[i].len = (size_t)snprintf(text + (size_t)i * 16, 16, "k%d", i);
    }
    if (rb_conn_bf_add_many(c, "live", 4, keys, (size_t)nkeys, NULL) < 0)
        bench_die("BF.MADD: %s", rb_conn_error(c));
    free(keys);
    free(text);
    sp_cmd(c, "DEL", "big", NULL, NULL);
    t0 = bench_now_s();
    sp_cmd(c, "SAVE", NULL, NULL, NULL);
    out[2] = bench_now_s() - t0;
    rb_conn_close(c);
    snprintf(path, sizeof(path), "%s/%s-state/snapshot.rbs", tmpdir, name);
    if (stat(path, &st) != 0)
        bench_die("%s", path);
    out[0] = (double)st.st_size;
    out[1] = (double)st.st_blocks * 512;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    bench_daemon_instance(name, inst, sizeof(inst));
    (void)rb_segment_unlink(inst);
    t0 = bench_now_s();
    pid = bench_daemon_bin(bin, name, conf, sock, sizeof(sock));
    out[3] = bench_now_s() - t0;
    /* The restart kept the data: one key of the live filter. */
    if (rb_segment_attach(inst, 0, &seg) == RB_OK) {
        rb_bloom_t *bf;
        if (rb_bloom_open(seg, "live", 4, &bf) != RB_OK ||
            rb_bloom_contains(bf, key, (size_t)snprintf(key, sizeof(key), "k%d", 7)) != 1)
            bench_die("the restart lost the live filter");
        rb_bloom_close(bf);
        rb_segment_close(seg);
    }
    bench_daemon_stop(pid);
}

void bench_sparse(const char *tmpdir, const char *before_bin, int reps, int quick)
{
    static const char *const what[SP_FIGURES] = { "snapshot length", "snapshot on disk",
                                                  "SAVE", "restart from the files" };
    static const char *const unit[SP_FIGURES] = { "MB", "MB", "s", "s" };
    double now[SP_FIGURES][32], before[SP_FIGURES][32], fig[SP_FIGURES];

    if (reps > 3)
        reps = 3;
    printf("\n[r] snapshot and restart with 20 MiB live in a segment that once held %s "
           "(a filter reserved and deleted); %d runs\n", quick ? "~120 MiB" : "~1 GiB", reps);
    for (int r = 0; r < reps; r++) {
        char name[32];
        snprintf(name, sizeof(name), "sparse-%d", r);
        sp_run(tmpdir, NULL, name, quick, fig);
        for (int k = 0; k < SP_FIGURES; k++)
            now[k][r] = fig[k];
        if (before_bin != NULL) {
            snprintf(name, sizeof(name), "sparse-before-%d", r);
            sp_run(tmpdir, before_bin, name, quick, fig);
            for (int k = 0; k < SP_FIGURES; k++)
                before[k][r] = fig[k];
        }
    }
    for (int k = 0; k < SP_FIGURES; k++) {
        double scale = k < 2 ? 1e-6 : 1;
        cell_t cells[2] = {
            { "before", before_bin != NULL ? bench_median(before[k], reps) * scale : NAN,
              before_bin != NULL ? NULL : "--daemon-before PATH not given" },
            { "this build", bench_median(now[k], reps) * scale, NULL },
        };
        row("r", what[k], unit[k], 0, 0, cells, 2);
    }
}
