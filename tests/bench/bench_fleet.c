/*
 * bench_fleet.c - section e of `make bench`: ring lookups from the table
 * of a ringbloomd that follows etcd (`ring-source etcd`) against the same
 * membership kept by a ringbloomd locally, in one run: the reader's code
 * and the table's format are the same, so the cost must be too (issue
 * 17).  A one-member etcd on a loopback port the kernel picked; skipped
 * without etcd (Debian's etcd-server).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define FLEET_NODES 100
#define FLEET_KEYS  1000000

static pid_t start_etcd(const char *tmpdir, int cport, int pport)
{
    char dir[256], cu[64], pu[64], ic[96];
    pid_t pid;

    snprintf(dir, sizeof(dir), "%s/etcd", tmpdir);
    snprintf(cu, sizeof(cu), "http://127.0.0.1:%d", cport);
    snprintf(pu, sizeof(pu), "http://127.0.0.1:%d", pport);
    snprintf(ic, sizeof(ic), "b1=%s", pu);
    if ((pid = fork()) == 0) {
        int fd = open("/dev/null", 1);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fd, 1);
        dup2(fd, 2);
        execlp("etcd", "etcd", "--name", "b1", "--data-dir", dir, "--listen-client-urls", cu,
               "--advertise-client-urls", cu, "--listen-peer-urls", pu,
               "--initial-advertise-peer-urls", pu, "--initial-cluster", ic, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* A command, retried for 20 s while the daemon says etcd is not there
 * yet (it starts beside it). */
static void call(rb_conn_t *c, const char *a, const char *b, const char *w)
{
    const char *argv[3] = { a, b, w };
    size_t argl[3] = { strlen(a), b ? strlen(b) : 0, w ? strlen(w) : 0 };
    char buf[512];

    for (int t = 0; rb_conn_command(c, w ? 3 : 2, argv, argl, buf, sizeof(buf)) != RB_OK; t++) {
        if (t == 200 || strstr(buf, "ring-source etcd") == NULL)
            bench_die("%s %s: %s", a, b, buf);
        usleep(100 * 1000);
    }
}

static volatile uint32_t fleet_sink;

/* Million lookups a second of FLEET_KEYS keys in seg. */
static double time_lookups(const rb_segment_t *seg)
{
    double t0 = bench_now_s();
    uint32_t acc = 0;

    for (uint32_t i = 0; i < FLEET_KEYS; i++) {
        char k[24];
        rb_node_t n;
        int len = snprintf(k, sizeof(k), "url-%u", i * 2654435761u);
        if (rb_ring_lookup(seg, k, (size_t)len, &n) == RB_OK)
            acc += n.name_len;
    }
    fleet_sink = acc;
    return FLEET_KEYS / (bench_now_s() - t0) / 1e6;
}

/* 1 if both tables give every key the same owner. */
static int same_owners(const rb_segment_t *a, const rb_segment_t *b)
{
    for (uint32_t i = 0; i < 100000; i++) {
        char k[24];
        rb_node_t x, y;
        int len = snprintf(k, sizeof(k), "url-%u", i * 2654435761u);
        if (rb_ring_lookup(a, k, (size_t)len, &x) != RB_OK ||
            rb_ring_lookup(b, k, (size_t)len, &y) != RB_OK || x.name_len != y.name_len ||
            memcmp(x.name, y.name, x.name_len) != 0)
            return 0;
    }
    return 1;
}

void bench_fleet(const char *tmpdir, int reps)
{
    int cport, pport;
    char extra[256], sock[2][256], inst[2][128], w[8], name[32];
    pid_t etcd, dp[2];
    rb_conn_t *c[2];
    rb_segment_t *seg[2];
    double v[2][32], rs[3];
    uint64_t rev = 0;
    cell_t cells[2];

    printf("\n[e] ring lookups, the ring followed from etcd against the same kept locally "
           "(%d nodes, 10^6 keys, %d reps)\n", FLEET_NODES, reps);
    if (system("command -v etcd > /dev/null 2>&1") != 0) {
        printf("  skipped: etcd is not installed (Debian's etcd-server)\n");
        return;
    }
    cport = bench_free_port();
    pport = bench_free_port();
    etcd = start_etcd(tmpdir, cport, pport);
    snprintf(extra, sizeof(extra), "ring-source etcd\netcd-endpoints http://127.0.0.1:%d\n"
             "etcd-prefix /bench/", cport);
    usleep(1500 * 1000);   /* etcd's start: the daemon's source retries meanwhile anyway */
    dp[0] = bench_daemon("fleet", extra, -1, sock[0], sizeof(sock[0]));
    dp[1] = bench_daemon("local", NULL, -1, sock[1], sizeof(sock[1]));
    for (int d = 0; d < 2; d++) {
        if (rb_conn_open(NULL, sock[d], 10000, &c[d]) != RB_OK)
            bench_die("connect %s", sock[d]);
        for (int i = 0; i < FLEET_NODES; i++) {
            snprintf(name, sizeof(name), "node-%03d", i);
            snprintf(w, sizeof(w), "%d", 1 + i % 3);
            call(c[d], "RING.ADD", name, w);
        }
        bench_daemon_instance(d == 0 ? "fleet" : "local", inst[d], sizeof(inst[d]));
        if (rb_segment_attach(inst[d], 0, &seg[d]) != RB_OK)
            bench_die("attach %s", inst[d]);
    }
    if (rb_ring_source_revision(seg[0], &rev) != RB_OK || rev == 0)
        bench_die("the etcd-following daemon's table has no revision");
    for (int r = 0; r < reps; r++)
        for (int d = 0; d < 2; d++)
            v[d][r] = time_lookups(seg[d]);
    bench_ratio_spread(v[0], v[1], reps, rs);
    cells[0] = (cell_t){ "local ring", bench_median(v[1], reps), NULL };
    cells[1] = (cell_t){ "ring from etcd", bench_median(v[0], reps), NULL };
    row("e", "ring lookup, 100 nodes", "M/s", 1, 0, cells, 2);
    printf("    etcd / local per rep: median %.2fx, %.2fx .. %.2fx; same owner for 10^5 keys: "
           "%s; etcd revision %llu\n", rs[0], rs[1], rs[2], same_owners(seg[0], seg[1]) ? "yes"
           : "NO", (unsigned long long)rev);
    for (int d = 0; d < 2; d++) {
        rb_segment_close(seg[d]);
        rb_conn_close(c[d]);
        bench_daemon_stop(dp[d]);
    }
    kill(etcd, SIGTERM);
    waitpid(etcd, NULL, 0);
}
