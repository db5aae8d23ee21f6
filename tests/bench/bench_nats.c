/*
 * bench_nats.c - section n of `make bench`: filters replicated through
 * NATS JetStream (`filter-source nats`, a 3-server cluster on loopback)
 * beside local ones on the same daemon, in one run, alternating: BF.ADD's
 * latency (one client, unpipelined: what a replicated write adds), BF.MADD
 * of 100 keys from one client and from eight (their writes share a stream
 * message when they arrive in one loop turn; snapshots are taken at the
 * default nats-snapshot-every, 10,000 messages, as they come), the
 * streams' bytes (the ops stream purged behind the snapshots, the
 * snapshots) per key,
 * and reads of both filters through shared memory (the read path is the
 * same, so the cost must be too).  With --redisbloom, RedisBloom on one
 * Redis Cluster node (cluster-enabled, every slot its own) beside them.
 * Skipped without nats-server.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define RANGE "100000000"
#define READ_KEYS 1000000

static pid_t start_nats(const char *tmpdir, int i, const int *cport, const int *rport)
{
    char conf[256], log[256];
    FILE *f;
    pid_t pid;

    snprintf(conf, sizeof(conf), "%s/nats%d.conf", tmpdir, i);
    snprintf(log, sizeof(log), "%s/nats%d.log", tmpdir, i);
    if ((f = fopen(conf, "w")) == NULL)
        bench_die("%s: %s", conf, strerror(errno));
    fprintf(f, "server_name: b%d\nlisten: 127.0.0.1:%d\n"
            "jetstream { store_dir: \"%s/js%d\", max_file_store: 4GB }\n"
            "cluster { name: rbb, listen: 127.0.0.1:%d, routes: [ nats-route://127.0.0.1:%d, "
            "nats-route://127.0.0.1:%d, nats-route://127.0.0.1:%d ] }\n", i, cport[i], tmpdir,
            i, rport[i], rport[0], rport[1], rport[2]);
    fclose(f);
    if ((pid = fork()) == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("nats-server", "nats-server", "-c", conf, "-l", log, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Runs line (words) through redis-cli on sock until it answers want
 * (<= 30 s: the stream is being set up). */
static void until_answer(const char *sock, const char *line, const char *want)
{
    char cmd[512], out[512];

    snprintf(cmd, sizeof(cmd), "redis-cli -s %s %s 2>&1", sock, line);
    for (int t = 0;; t++) {
        FILE *p = popen(cmd, "r");
        size_t n = p != NULL ? fread(out, 1, sizeof(out) - 1, p) : 0;

        if (p != NULL)
            pclose(p);
        out[n] = '\0';
        out[strcspn(out, "\r\n")] = '\0';
        if (strcmp(out, want) == 0)
            return;
        if (t == 300)
            bench_die("%s: %s", line, out);
        usleep(100 * 1000);
    }
}

/* A 1-in-10^4 filter for every workload, big enough not to grow a layer. */
static void prepare(const char *sock, const char *prefix)
{
    static const char *const names[] = { "add", "madd1", "madd8" };
    char line[128];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(line, sizeof(line), "BF.RESERVE %s%s 0.0001 20000000", prefix, names[i]);
        until_answer(sock, line, "OK");
    }
}

/* The number a shell command (printf-formatted) prints first (NAN: none). */
static double shell_num(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static double shell_num(const char *fmt, ...)
{
    char cmd[1024], out[256] = "";
    va_list ap;
    FILE *p;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if ((p = popen(cmd, "r")) == NULL)
        return NAN;
    if (fgets(out, sizeof(out), p) == NULL)
        out[0] = '\0';
    pclose(p);
    return out[0] != '\0' ? atof(out) : NAN;
}

/* Field of the daemon's INFO replication on sock (NAN: absent). */
static double info_num(const char *sock, const char *field)
{
    return shell_num("redis-cli -s %s INFO replication | tr -d '\\r' | sed -n 's/^%s://p'", sock,
                     field);
}

static volatile int read_sink;

/* Million BF.EXISTS a second through shared memory on filter name. */
static double time_reads(const rb_segment_t *seg, const char *name)
{
    rb_bloom_t *bf;
    double t0;
    int acc = 0;

    if (rb_bloom_open(seg, name, strlen(name), &bf) != RB_OK)
        bench_die("open %s", name);
    t0 = bench_now_s();
    for (uint32_t i = 0; i < READ_KEYS; i++) {
        char k[24];
        int len = snprintf(k, sizeof(k), "%u", i * 2654435761u % 100000000u);

        acc += rb_bloom_contains(bf, k, (size_t)len);
    }
    read_sink = acc;
    t0 = bench_now_s() - t0;
    rb_bloom_close(bf);
    return READ_KEYS / t0 / 1e6;
}

typedef struct load {
    const char *title, *unit;
    const char *cmd;      /* after the filter's name */
    int clients, n, col;  /* col: redis-benchmark's CSV column */
    double per_req;       /* the figure: the column times this */
    int higher_better;
} load_t;

void bench_nats(const char *tmpdir, const char *redisbloom, int reps, int quick)
{
    static const load_t loads[] = {
        { "BF.ADD p50, 1 client", "ms", "__rand_int__", 1, 3000, 4, 1, 0 },
        { "BF.ADD p99, 1 client", "ms", "__rand_int__", 1, 3000, 6, 1, 0 },
        { "BF.MADD of 100 keys, 1 client", "keys/s", NULL, 1, 300, 1, 100, 1 },
        { "BF.MADD of 100 keys, 8 clients", "keys/s", NULL, 8, 1000, 1, 100, 1 },
    };
    static const char *const fname[] = { "add", "add", "madd1", "madd8" };
    int cport[3], rport[3];
    pid_t nats[3], dp, rp = 0;
    char extra[512], sock[256], rsock[256], inst[128], args[4096], keys[2048];
    double v[3][32], rs[3], added = 0;
    rb_segment_t *seg;
    const char *who[3] = { "local", "replicated", "RedisBloom node" };

    printf("\n[n] Bloom filters replicated through NATS JetStream (3 servers on loopback, "
           "filter-source nats) beside local ones on the same daemon%s, %d reps\n",
           redisbloom ? " and RedisBloom on one Redis Cluster node" : "", reps);
    if (system("command -v nats-server > /dev/null 2>&1") != 0) {
        printf("  skipped: nats-server is not installed (Debian's nats-server)\n");
        return;
    }
    for (int i = 0; i < 3; i++) {
        cport[i] = bench_free_port();
        rport[i] = bench_free_port();
    }
    for (int i = 0; i < 3; i++)
        nats[i] = start_nats(tmpdir, i, cport, rport);
    snprintf(extra, sizeof(extra), "filter-source nats\nnats-servers nats://127.0.0.1:%d "
             "nats://127.0.0.1:%d nats://127.0.0.1:%d\nnats-stream BENCH\nnats-filters r:*\n"
             "appendfsync everysec\n", cport[0], cport[1], cport[2]);
    dp = bench_daemon("natsrepl", extra, -1, sock, sizeof(sock));
    prepare(sock, "l:");
    prepare(sock, "r:");   /* retried until the stream is followed */
    if (redisbloom != NULL) {
        char path[4096], nodes[512];
        const char *rextra[] = { "--loadmodule", path, "--cluster-enabled", "yes",
                                 "--cluster-config-file", nodes, NULL };

        if (realpath(redisbloom, path) == NULL || access(path, R_OK) != 0)
            bench_die("--redisbloom %s: not a readable file", redisbloom);
        snprintf(nodes, sizeof(nodes), "%s/nodes-n.conf", tmpdir);
        rp = bench_redis_server_with("natsrb", rextra, rsock, sizeof(rsock));
        until_answer(rsock, "CLUSTER ADDSLOTSRANGE 0 16383", "OK");
        until_answer(rsock, "CLUSTER INFO | head -1", "cluster_state:ok");
        prepare(rsock, "l:");
    }
    keys[0] = '\0';
    for (int k = 0, off = 0; k < 100; k++)
        off += snprintf(keys + off, sizeof(keys) - (size_t)off, " __rand_int__");
    for (size_t l = 0; l < sizeof(loads) / sizeof(loads[0]); l++) {
        const load_t *ld = &loads[l];
        int n = quick ? ld->n / 3 : ld->n, who_n = rp ? 3 : 2;
        cell_t cells[3];

        for (int r = 0; r < reps; r++)
            for (int w0 = 0; w0 < who_n; w0++) {
                int w = (w0 + r) % who_n;   /* alternating who goes first */
                const char *s = w == 2 ? rsock : sock;

                snprintf(args, sizeof(args), "-n %d -c %d -r " RANGE " %s %s:%s %s", n,
                         ld->clients, ld->cmd ? "BF.ADD" : "BF.MADD", w == 1 ? "r" : "l",
                         fname[l], ld->cmd ? ld->cmd : keys + 1);
                v[w][r] = bench_redis_benchmark(s, args, ld->col) * ld->per_req;
                if (isnan(v[w][r]))
                    bench_die("redis-benchmark %s gave no figure", args);
                if (w == 1)
                    added += n * (ld->cmd ? 1.0 : 100.0);
            }
        printf("  %s:", ld->title);
        for (int w = 0; w < who_n; w++) {
            printf("  %s", who[w]);
            for (int r = 0; r < reps; r++)
                printf(" %.3g", v[w][r]);
            printf(";");
        }
        printf("\n");
        bench_ratio_spread(v[1], v[0], reps, rs);
        for (int w = 0; w < who_n; w++)
            cells[w] = (cell_t){ who[w], bench_median(v[w], reps), NULL };
        row("n", ld->title, ld->unit, ld->higher_better, 0, cells, who_n);
        printf("    replicated / local per rep: median %.2fx, %.2fx .. %.2fx\n", rs[0], rs[1],
               rs[2]);
    }
    /* The streams' growth: one server's store (each holds a replica), the
     * ops stream (purged behind the snapshots) and the snapshots' apart. */
    {
        /* the largest of the three (a follower's replica may lag) */
        double ops = shell_num("du -sb '%s'/js?/jetstream/'$G'/streams/BENCH | sort -n | tail -1 "
                               "| cut -f1", tmpdir);
        double snap = shell_num("du -sb '%s'/js?/jetstream/'$G'/streams/BENCH_SNAP | sort -n | "
                                "tail -1 | cut -f1", tmpdir);
        double filters = 0;

        for (size_t i = 0; i < sizeof(fname) / sizeof(fname[0]); i++)
            if (i == 0 || strcmp(fname[i], fname[i - 1]) != 0)
                filters += shell_num("redis-cli -s %s BF.INFO r:%s SIZE", sock, fname[i]);
        printf("  streams: %.0f keys added to replicated filters in %.0f messages; the fullest "
               "server's store: the stream %.1f MB (it holds sequence %.0f on), the snapshots %.1f MB "
               "(%.0f taken, %.0f stored by this host, the newest at %.0f; the 3 replicated "
               "filters are %.1f MB); %.1f bytes a key in all (per replica; 3 replicas)\n", added,
               info_num(sock, "nats_applied_seq"), ops / 1e6,
               info_num(sock, "nats_stream_first_seq"), snap / 1e6,
               info_num(sock, "nats_snapshots_taken"), info_num(sock, "nats_snapshots_stored"),
               info_num(sock, "nats_snapshot_seq"),
               filters / 1e6, added > 0 ? (ops + snap) / added : NAN);
    }
    bench_daemon_instance("natsrepl", inst, sizeof(inst));
    if (rb_segment_attach(inst, 0, &seg) != RB_OK)
        bench_die("attach %s", inst);
    for (int r = 0; r < reps; r++) {
        v[0][r] = time_reads(seg, "l:madd8");
        v[1][r] = time_reads(seg, "r:madd8");
    }
    bench_ratio_spread(v[1], v[0], reps, rs);
    {
        cell_t cells[2] = { { "local", bench_median(v[0], reps), NULL },
                            { "replicated", bench_median(v[1], reps), NULL } };
        row("n", "BF.EXISTS via shared memory, 10^6 keys", "M/s", 1, 0, cells, 2);
    }
    printf("    replicated / local per rep: median %.2fx, %.2fx .. %.2fx (the same read path)\n",
           rs[0], rs[1], rs[2]);
    rb_segment_close(seg);
    bench_daemon_stop(dp);
    if (rp)
        bench_daemon_stop(rp);
    for (int i = 0; i < 3; i++) {
        kill(nats[i], SIGTERM);
        waitpid(nats[i], NULL, 0);
    }
}
