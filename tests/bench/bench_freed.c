/*
 * bench_freed.c - section m of `make bench`: memory and disk that follow
 * the live data (issue 27).  A ringbloomd holds a small filter B, which a
 * reader process checks from shared memory throughout; a filter A of
 * about 250 MB (blocked, 1%) is reserved, filled with 3*10^7 keys
 * (BF.MADD) and deleted.  Printed: A's DEL round trip, the seconds until
 * the object's resident bytes are within 64 MB of the live data, the
 * resident and live bytes then, the segment's size before and after (cut
 * by a rebuild: the seconds until it is, and the loop's time in it), the
 * size on disk (allocated blocks) and
 * apparent size of the snapshot a SAVE writes then, and the reader's
 * errors and wrong answers (B's keys must all answer 1).  With
 * --daemon-before PATH (an older ringbloomd, e.g. main's) the same run is
 * made with it and printed beside.  --quick: A of about 25 MB.
 * Then a ~500 MB filter (reserved, 1%) is moved between two daemons with
 * `ringbloom dump` / `restore` (SCANDUMP / LOADCHUNK): the snapshots the
 * restoring daemon writes meanwhile (INFO's snapshots) and the seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define MB_BKEYS  100000u        /* filter B's keys */
#define MB_BATCH  1000u          /* keys per BF.MADD */
#define MB_SLACK  (64u << 20)    /* the bound: within 64 MB of the live data */
#define MB_WAIT_S 60.0

typedef struct mb_result {
    double del_ms, back_s, resident_mb, live_mb, snap_disk_mb, snap_size_mb;
    double peak_mb, seg_before_mb, seg_after_mb, shrunk_s;
    long long shrink_ms;   /* the rebuild's loop time (INFO), -1: none */
    unsigned long long reads, errors, wrong;
} mb_result_t;

/* One request given as one line of words (changed in place); its reply. */
static void mb_cmd(rb_conn_t *c, char *line, char *reply, size_t cap)
{
    char *argv[8], *save = NULL;
    size_t argl[8], argc = 0;

    for (char *w = strtok_r(line, " ", &save); w != NULL && argc < 8;
         w = strtok_r(NULL, " ", &save)) {
        argv[argc] = w;
        argl[argc++] = strlen(w);
    }
    if (rb_conn_command(c, argc, (const char *const *)argv, argl, reply, cap) != RB_OK)
        bench_die("section m: %s: %s", line, reply);
}

/* Adds keys "<prefix><first .. first+n)" to filter name. */
static void mb_fill(rb_conn_t *c, const char *name, const char *prefix, uint64_t first,
                    uint64_t n)
{
    static char buf[MB_BATCH][24];
    rb_key_t keys[MB_BATCH];

    for (uint64_t done = 0; done < n;) {
        size_t k = n - done < MB_BATCH ? (size_t)(n - done) : MB_BATCH;
        for (size_t i = 0; i < k; i++) {
            keys[i].ptr = buf[i];
            keys[i].len = (size_t)snprintf(buf[i], sizeof(buf[i]), "%s%llu", prefix,
                                           (unsigned long long)(first + done + i));
        }
        if (rb_conn_bf_add_many(c, name, strlen(name), keys, k, NULL) < 0)
            bench_die("section m: BF.MADD %s: %s", name, rb_conn_error(c));
        done += k;
    }
}

/* The reader process: checks B's keys until `stop` reads EOF, then writes
 * its counts (reads, errors, wrong answers) to `out`. */
static void mb_reader(const char *instance, int stop, int out)
{
    unsigned long long n[3] = { 0, 0, 0 };
    rb_segment_t *seg = NULL;
    rb_bloom_t *b = NULL;
    char k[24], c;

    if (rb_segment_attach(instance, 0, &seg) != RB_OK || rb_bloom_open(seg, "B", 1, &b) != RB_OK)
        n[1] = 1;
    fcntl(stop, F_SETFL, O_NONBLOCK);
    for (uint64_t i = 0; b != NULL; i++) {
        int len = snprintf(k, sizeof(k), "b%llu", (unsigned long long)(i % MB_BKEYS)), rc;
        rc = rb_bloom_contains(b, k, (size_t)len);
        n[0]++;
        n[1] += rc < 0;
        n[2] += rc == 0;
        if (i % 4096 == 0 && read(stop, &c, 1) == 0)
            break;
    }
    if (write(out, n, sizeof(n)) != (ssize_t)sizeof(n))
        _exit(1);
    rb_bloom_close(b);
    rb_segment_close(seg);
    _exit(0);
}

/* Bytes of a file on disk (allocated blocks) and its apparent size. */
static void mb_file(const char *path, double *disk_mb, double *size_mb)
{
    struct stat st;

    if (stat(path, &st) != 0)
        bench_die("section m: %s: %s", path, strerror(errno));
    *disk_mb = (double)st.st_blocks * 512.0 / 1e6;
    *size_mb = (double)st.st_size / 1e6;
}

/* INFO's value of field (a count; -1 if INFO has none: an older daemon)
 * in section ("persistence", "memory") of the daemon c talks to. */
static long long mb_info_in(rb_conn_t *c, const char *section, const char *field)
{
    static char reply[1 << 16];
    char line[64], want[80], *p;

    snprintf(line, sizeof(line), "INFO %s", section);
    mb_cmd(c, line, reply, sizeof(reply));
    snprintf(want, sizeof(want), "\n%s:", field);
    if ((p = strstr(reply, want)) == NULL)
        return -1;
    return strtoll(p + strlen(want), NULL, 10);
}

/* INFO persistence's value of field (a count) in the daemon c talks to. */
static unsigned long long mb_info(rb_conn_t *c, const char *field)
{
    long long v = mb_info_in(c, "persistence", field);

    if (v < 0)
        bench_die("section m: INFO has no %s", field);
    return (unsigned long long)v;
}

static void mb_run(const char *bin, const char *tag, const char *tmpdir, int quick,
                   mb_result_t *r)
{
    char sock[256], instance[128], reply[256], line[128], snap[512];
    uint64_t cap = quick ? 20000000u : 200000000u, nkeys = quick ? 3000000u : 30000000u;
    int stop[2], out[2];
    rb_segment_memory_t m;
    rb_segment_t *seg;
    rb_conn_t *c;
    pid_t d, rd;
    double t0;

    memset(r, 0, sizeof(*r));
    d = bench_daemon_bin(bin, tag, "max-command-bytes 1gb", sock, sizeof(sock));
    bench_daemon_instance(tag, instance, sizeof(instance));
    if (rb_conn_open(NULL, sock, 600000, &c) != RB_OK)
        bench_die("section m: connect %s", sock);
    snprintf(line, sizeof(line), "BF.RESERVE B 0.01 %u", MB_BKEYS);
    mb_cmd(c, line, reply, sizeof(reply));
    mb_fill(c, "B", "b", 0, MB_BKEYS);
    if (pipe(stop) != 0 || pipe(out) != 0)
        bench_die("section m: pipe");
    if ((rd = fork()) == 0) {
        close(stop[1]);
        close(out[0]);
        mb_reader(instance, stop[0], out[1]);
    }
    close(stop[0]);
    close(out[1]);
    snprintf(line, sizeof(line), "BF.RESERVE A 0.01 %llu", (unsigned long long)cap);
    mb_cmd(c, line, reply, sizeof(reply));
    mb_fill(c, "A", "a", 0, nkeys);
    if (rb_segment_attach(instance, 0, &seg) != RB_OK || rb_segment_memory(seg, &m) != RB_OK)
        bench_die("section m: attach %s", instance);
    r->peak_mb = (double)m.resident / 1e6;
    r->seg_before_mb = (double)m.committed / 1e6;
    snprintf(line, sizeof(line), "DEL A");
    t0 = bench_now_s();
    mb_cmd(c, line, reply, sizeof(reply));
    r->del_ms = (bench_now_s() - t0) * 1e3;
    r->back_s = -1;
    while (bench_now_s() - t0 < MB_WAIT_S) {
        (void)rb_segment_refresh(seg);   /* a rebuild's object, if one came */
        if (rb_segment_memory(seg, &m) != RB_OK)
            bench_die("section m: rb_segment_memory");
        if (m.resident <= m.used + MB_SLACK) {
            r->back_s = bench_now_s() - t0;
            break;
        }
        usleep(50000);
    }
    /* The segment's size: cut by a rebuild (segment-shrink-bytes) the
     * reader's handle follows. */
    r->shrunk_s = -1;
    while (bench_now_s() - t0 < MB_WAIT_S) {
        long long n = mb_info_in(c, "memory", "segment_shrinks");
        if (n < 0)
            break;   /* a daemon without it */
        (void)rb_segment_refresh(seg);
        if (n > 0 && rb_segment_memory(seg, &m) == RB_OK && m.committed <= m.used + MB_SLACK) {
            r->shrunk_s = bench_now_s() - t0;
            break;
        }
        usleep(50000);
    }
    usleep(2000000);   /* what the daemon's next seconds give back besides */
    (void)rb_segment_refresh(seg);
    (void)rb_segment_memory(seg, &m);
    r->resident_mb = (double)m.resident / 1e6;
    r->live_mb = (double)m.used / 1e6;
    r->seg_after_mb = (double)m.committed / 1e6;
    r->shrink_ms = mb_info_in(c, "memory", "segment_last_shrink_ms");
    rb_segment_close(seg);
    snprintf(line, sizeof(line), "SAVE");
    mb_cmd(c, line, reply, sizeof(reply));
    snprintf(snap, sizeof(snap), "%s/%s-state/snapshot.rbs", tmpdir, tag);
    mb_file(snap, &r->snap_disk_mb, &r->snap_size_mb);
    close(stop[1]);
    {
        unsigned long long n[3] = { 0, 0, 0 };
        if (read(out[0], n, sizeof(n)) != (ssize_t)sizeof(n))
            n[1] = 1;
        r->reads = n[0];
        r->errors = n[1];
        r->wrong = n[2];
    }
    close(out[0]);
    waitpid(rd, NULL, 0);
    rb_conn_close(c);
    bench_daemon_stop(d);
}


/* Runs the CLI at cli with its arguments; dies unless it succeeds. */
static void mb_cli(const char *cli, const char *sock, const char *a, const char *b,
                   const char *c)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(cli, cli, "--socket", sock, "--timeout", "600", a, b, c, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bench_die("section m: %s %s %s %s failed", cli, a, b, c);
}

/* A ~500 MB filter dumped from one daemon (the one under test) and
 * restored into a fresh one (bin): the snapshots the restoring daemon
 * wrote and the restore's seconds. */
static void mb_move(const char *bin, const char *tag, const char *tmpdir, const char *cli,
                    int quick, unsigned long long *snaps, double *secs)
{
    char src[256], dst[256], file[512], line[128], reply[256], tagd[64];
    unsigned long long before;
    rb_conn_t *cs, *cd;
    pid_t ds, dd;
    double t0;

    snprintf(tagd, sizeof(tagd), "%s-dst", tag);
    ds = bench_daemon_bin(NULL, tag, "max-command-bytes 1gb", src, sizeof(src));
    dd = bench_daemon_bin(bin, tagd, "max-command-bytes 1gb", dst, sizeof(dst));
    if (rb_conn_open(NULL, src, 600000, &cs) != RB_OK || rb_conn_open(NULL, dst, 600000, &cd) != RB_OK)
        bench_die("section m: connect");
    snprintf(line, sizeof(line), "BF.RESERVE big 0.01 %s", quick ? "40000000" : "400000000");
    mb_cmd(cs, line, reply, sizeof(reply));
    snprintf(file, sizeof(file), "%s/%s.dump", tmpdir, tag);
    mb_cli(cli, src, "dump", "big", file);
    before = mb_info(cd, "snapshots");
    t0 = bench_now_s();
    mb_cli(cli, dst, "restore", "big", file);
    *secs = bench_now_s() - t0;
    while (mb_info(cd, "rdb_bgsave_in_progress") != 0)
        usleep(100000);
    *snaps = mb_info(cd, "snapshots") - before;
    unlink(file);
    rb_conn_close(cs);
    rb_conn_close(cd);
    bench_daemon_stop(ds);
    bench_daemon_stop(dd);
}

static void mb_print(const char *who, const mb_result_t *r)
{
    printf("  %-10s DEL A %.1f ms; resident within 64 MB of live after %s%.1f s; then "
           "%.1f MB resident for %.1f MB live (peak %.1f MB)\n", who, r->del_ms,
           r->back_s < 0 ? "> " : "", r->back_s < 0 ? MB_WAIT_S : r->back_s, r->resident_mb,
           r->live_mb, r->peak_mb);
    printf("  %-10s segment %.1f MB -> %.1f MB", who, r->seg_before_mb, r->seg_after_mb);
    if (r->shrunk_s >= 0)
        printf(" (cut by a rebuild after %.1f s, the loop held %lld ms)\n", r->shrunk_s,
               r->shrink_ms);
    else
        printf(" (no rebuild)\n");
    printf("  %-10s snapshot after it: %.1f MB on disk, %.1f MB apparent; reader of B: "
           "%llu reads, %llu errors, %llu wrong\n", who, r->snap_disk_mb, r->snap_size_mb,
           r->reads, r->errors, r->wrong);
}

void bench_freed(const char *tmpdir, const char *before_bin, const char *cli, int quick)
{
    mb_result_t now, before;
    unsigned long long snaps;
    double secs;

    printf("\n[m] Memory and disk after a deleted filter: A of %s (blocked, 1%%, %s keys) "
           "filled and deleted beside B (%u keys, read by another process throughout)\n",
           quick ? "~25 MB" : "~250 MB", quick ? "3*10^6" : "3*10^7", MB_BKEYS);
    mb_run(NULL, "memnow", tmpdir, quick, &now);
    mb_print("this", &now);
    if (before_bin != NULL) {
        mb_run(before_bin, "membefore", tmpdir, quick, &before);
        mb_print("before", &before);
    }
    printf("  moving a %s filter (ringbloom dump, then restore into a fresh daemon):\n",
           quick ? "~48 MB" : "~480 MB");
    mb_move(NULL, "movenow", tmpdir, cli, quick, &snaps, &secs);
    printf("  %-10s restore %.1f s, %llu snapshots written meanwhile\n", "this", secs, snaps);
    if (before_bin != NULL) {
        mb_move(before_bin, "movebefore", tmpdir, cli, quick, &snaps, &secs);
        printf("  %-10s restore %.1f s, %llu snapshots written meanwhile\n", "before", secs,
               snaps);
    }
}
