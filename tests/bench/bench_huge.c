/*
 * bench_huge.c - section h of the bench (`bench --only h`): contains_many
 * on a 1 GiB blocked filter through a reader handle, with the segment in
 * small pages and in 2 MiB pages (RB_SEGMENT_HUGE_PAGES), side by side in
 * one run, repetitions alternating.
 *
 * It runs in a forked child inside a private mount namespace with a fresh
 * tmpfs mounted huge=never over /dev/shm (Debian's default for /dev/shm):
 * the small-page segment is what such a mount gives, the huge-page one
 * what the flag makes of it (MADV_COLLAPSE).  The host's /dev/shm and
 * mount table never see either; the tmpfs goes with the child.  Needs
 * root (the mount); otherwise the section says so and is skipped.
 *
 * One filter is made, in the huge-page segment, where adds are faster,
 * with HB_FILL keys (6.4*10^7 of its 8.6*10^8 capacity: filling it would
 * take minutes, and a blocked query touches one line whatever the fill, so
 * the cost measured is the same); the small-page segment is a restore of
 * its dump, so both hold the same bits.  Part of the default sections since
 * the fill was cut to this; without root it is skipped with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define HB_KEYS 1000000
#define HB_BYTES (1ULL << 30)
#define HB_FILL  64000000ULL   /* keys added (hb_fill) */

typedef struct hb_restore {
    rb_segment_t *seg;
    int rc;
} hb_restore_t;

static double hb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int hb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v); lo / hi: its extremes. */
static double hb_median(double *v, int n, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof(*v), hb_cmp);
    *lo = v[0];
    *hi = v[n - 1];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void hb_fail(const char *what, int rc)
{
    fprintf(stderr, "bench: section h: %s: %s\n", what, rc < 0 ? rb_strerror(rc) : strerror(errno));
    fflush(stdout);
    _exit(1);
}

static int hb_restore_into(const void *data, size_t len, void *arg)
{
    hb_restore_t *r = arg;
    rb_segment_opts_t o = { .max_size = HB_BYTES + (64u << 20) };

    r->rc = rb_segment_restore("rbbench-small", &o, data, len, &r->seg);
    return r->rc == RB_OK ? 0 : -1;
}

/* Queries like section 2's: hits spread over every added key, or misses. */
static void hb_queries(rb_key_t *q, char (*buf)[48], int hits, uint64_t added)
{
    for (int i = 0; i < HB_KEYS; i++) {
        uint64_t j = (uint64_t)i * 2654435761u % 1000000007u;
        q[i].ptr = buf[i];
        q[i].len = (size_t)(hits ? snprintf(buf[i], 48, "https://in.example/%llu",
                                            (unsigned long long)(j % added))
                                 : snprintf(buf[i], 48, "https://out.example/%llu",
                                            (unsigned long long)j));
    }
}

static double hb_time(const rb_bloom_t *bf, const rb_key_t *q, uint8_t *out)
{
    double t = hb_now();
    if (rb_bloom_contains_many(bf, q, HB_KEYS, out) < 0)
        hb_fail("contains_many", -1);
    return (hb_now() - t) / HB_KEYS * 1e9;
}

/* The filter, with min(capacity, HB_FILL) of section 2's keys; returns
 * how many. */
static uint64_t hb_fill(rb_segment_t *seg)
{
    enum { B = 4096 };
    static char buf[B][48];
    static rb_key_t k[B];
    rb_bloom_params_t p = { .capacity = (uint64_t)((double)HB_BYTES * 8 / 10.03),
                            .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED,
                            .flags = RB_BLOOM_NONSCALING };
    rb_bloom_t *bf;
    int rc;

    if ((rc = rb_bloom_reserve(seg, "blk", 3, &p)) != RB_OK ||
        (rc = rb_bloom_open(seg, "blk", 3, &bf)) != RB_OK)
        hb_fail("reserve", rc);
    uint64_t n = p.capacity < HB_FILL ? p.capacity : HB_FILL;

    for (uint64_t i = 0; i < n; i += B) {
        size_t c = n - i < B ? (size_t)(n - i) : B;
        for (size_t j = 0; j < c; j++) {
            k[j].ptr = buf[j];
            k[j].len = (size_t)snprintf(buf[j], sizeof(buf[j]), "https://in.example/%llu",
                                        (unsigned long long)(i + j));
        }
        if (rb_bloom_add_many(bf, k, c, NULL) < 0)
            hb_fail("fill", -1);
    }
    rb_bloom_close(bf);
    return n;
}

static void hb_print(FILE *csv, const char *title, double *small, double *huge, int reps)
{
    double q[32], s_lo, s_hi, h_lo, h_hi, q_lo, q_hi, s, h, ratio;

    for (int r = 0; r < reps; r++)
        q[r] = small[r] / huge[r];
    ratio = hb_median(q, reps, &q_lo, &q_hi);
    s = hb_median(small, reps, &s_lo, &s_hi);
    h = hb_median(huge, reps, &h_lo, &h_hi);
    printf("  %-34s  small pages: %.4g ns (%.4g-%.4g)  2 MiB pages: %.4g ns (%.4g-%.4g) "
           "(%.2fx, runs %.2f-%.2f)\n", title, s, s_lo, s_hi, h, h_lo, h_hi, ratio, q_lo, q_hi);
    if (csv) {
        fprintf(csv, "\"huge\",\"%s\",\"small-pages\",%.6g,\"ns\",\"small-pages\",1.0000\n",
                title, s);
        fprintf(csv, "\"huge\",\"%s\",\"huge-pages\",%.6g,\"ns\",\"small-pages\",%.4f\n", title,
                h, ratio);
    }
    fflush(stdout);
}

/* The child: the namespace, both segments, the runs. */
static void hb_child(int reps, FILE *csv)
{
    static char qbuf[HB_KEYS][48];
    static rb_key_t q[HB_KEYS];
    static uint8_t out[HB_KEYS];
    rb_segment_opts_t o = { .max_size = HB_BYTES + (64u << 20), .flags = RB_SEGMENT_HUGE_PAGES };
    rb_segment_t *w, *rs, *rh;
    rb_bloom_t *bs, *bh;
    rb_segment_huge_t st[2];
    hb_restore_t hr = { NULL, RB_OK };
    uint64_t added;
    double t = hb_now();
    int rc;

    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("rbbench", "/dev/shm", "tmpfs", 0, "huge=never,size=4g,mode=1777") != 0) {
        printf("  skipped: no private mount namespace with a tmpfs on /dev/shm (%s; needs "
               "root)\n", strerror(errno));
        fflush(stdout);
        _exit(0);
    }
    if ((rc = rb_segment_create("rbbench-huge", &o, &w)) != RB_OK)
        hb_fail("segment", rc);
    added = hb_fill(w);
    if ((rc = rb_segment_dump(w, hb_restore_into, &hr)) != RB_OK)
        hb_fail("restore into a small-page segment", hr.rc != RB_OK ? hr.rc : rc);
    printf("  (1 GiB blocked filter filled in %.0f s, copied into the small-page segment)\n",
           hb_now() - t);
    if ((rc = rb_segment_attach("rbbench-small", 0, &rs)) != RB_OK ||
        (rc = rb_segment_attach("rbbench-huge", 0, &rh)) != RB_OK ||
        (rc = rb_bloom_open(rs, "blk", 3, &bs)) != RB_OK ||
        (rc = rb_bloom_open(rh, "blk", 3, &bh)) != RB_OK)
        hb_fail("reader", rc);
    for (int hits = 1; hits >= 0; hits--) {
        double vs[32], vh[32];
        hb_queries(q, qbuf, hits, added);
        hb_time(bs, q, out);   /* fault every page in before timing */
        hb_time(bh, q, out);
        for (int r = 0; r < reps; r++) {
            vs[r] = hb_time(bs, q, out);
            vh[r] = hb_time(bh, q, out);
        }
        hb_print(csv, hits ? "hits, 1024 MiB, batched" : "misses, 1024 MiB, batched", vs, vh,
                 reps);
    }
    if (rb_segment_huge_status(hr.seg, &st[0]) == RB_OK && rb_segment_huge_status(w, &st[1]) ==
        RB_OK)
        printf("  writer mappings in 2 MiB pages: small-page segment %llu MiB, huge-page "
               "segment %llu of %llu MiB (%s)%s%s\n",
               (unsigned long long)(st[0].huge_bytes >> 20),
               (unsigned long long)(st[1].huge_bytes >> 20),
               (unsigned long long)(st[1].committed >> 20), st[1].mount,
               st[1].why[0] ? "; " : "", st[1].why);
    fflush(stdout);
    if (csv)
        fflush(csv);   /* the parent's stream shares the file's offset */
    _exit(0);   /* the namespace, its tmpfs and both segments go with it */
}

void bench_huge(int reps, FILE *csv)
{
    pid_t pid;
    int st;

    printf("h. Huge pages: contains_many on a 1 GiB blocked filter, ns per key (lower is\n"
           "   better), through a reader handle; the segment in small pages (a tmpfs mounted\n"
           "   huge=never, Debian's /dev/shm) and with RB_SEGMENT_HUGE_PAGES on the same mount\n");
    fflush(stdout);
    if (csv)
        fflush(csv);
    pid = fork();
    if (pid < 0) {
        printf("  skipped: fork: %s\n\n", strerror(errno));
        return;
    }
    if (pid == 0)
        hb_child(reps, csv);
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        printf("  section h failed (see above)\n");
    printf("\n");
}
