/*
 * bench_sketch.c - section s of `make bench`: the reads of the filter
 * kinds beside the Bloom filter, from shared memory against the same
 * command over the daemon's socket, in one run (ratios of one run, median
 * and spread of the repetitions), and what a cuckoo filter costs per key
 * beside a blocked Bloom filter for the same false positive rate.
 *
 *   s1. cuckoo filter membership (10^6 keys, 16-bit fingerprints, bucket
 *       4), hits and misses: rb_cuckoo_contains, rb_cuckoo_contains_many,
 *       against CF.EXISTS (one per round trip) and CF.MEXISTS (100 a
 *       command); count-min sketch rb_cms_query against CMS.QUERY;
 *       HyperLogLog rb_hll_card against PFCOUNT.
 *   s2. memory per key at 1% and 0.1%: every cuckoo shape (8/12/16-bit
 *       fingerprints, buckets of 1/2/4) filled until its first refused add
 *       (its load), its measured FPR on 10^6 absent keys and its bits per
 *       key; the lightest shape within the target against a blocked Bloom
 *       filter sized for the same target and number of keys (its measured
 *       FPR too), and a counting Bloom filter's, 4- and 8-bit counters
 *       (bench_cbf.c);
 *   s3. the counting Bloom filter's FPR against its formula (bench_cbf.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define SK_KEYS   1000000
#define SK_PROBES 1000000
#define SK_BATCH  1000      /* keys per CF.INSERT / CMS.INCRBY / PFADD filling */
#define SK_MANY   100       /* keys per CF.MEXISTS */

static char (*sk_key)[24];
static size_t *sk_len;

static void sk_keys(void)
{
    sk_key = malloc(2 * (size_t)SK_KEYS * sizeof(*sk_key));
    sk_len = malloc(2 * (size_t)SK_KEYS * sizeof(*sk_len));
    if (sk_key == NULL || sk_len == NULL)
        bench_die("out of memory");
    /* 0 .. SK_KEYS - 1 are added; SK_KEYS .. 2 SK_KEYS - 1 never are. */
    for (size_t i = 0; i < 2 * (size_t)SK_KEYS; i++)
        sk_len[i] = (size_t)snprintf(sk_key[i], sizeof(sk_key[i]), "sk:%zx:%zu", i * 2654435761u,
                                     i);
}

/* Sends one command of words argv[0 .. argc) and checks it did not fail. */
static void sk_call(rb_conn_t *c, size_t argc, const char *const *argv, const size_t *argl)
{
    char buf[256];

    if (rb_conn_command(c, argc, argv, argl, buf, sizeof(buf)) != RB_OK)
        bench_die("%s: %s", argv[0], buf);
}

/* Fills cf, cms and hll with keys 0 .. SK_KEYS - 1, SK_BATCH a command. */
static void sk_fill(rb_conn_t *c)
{
    static const char *argv[3 + 2 * SK_BATCH];
    static size_t argl[3 + 2 * SK_BATCH];
    static const char *const one = "1";

    for (size_t b = 0; b < SK_KEYS; b += SK_BATCH) {
        argv[0] = "CF.INSERT", argl[0] = 9, argv[1] = "cf", argl[1] = 2;
        argv[2] = "ITEMS", argl[2] = 5;
        for (size_t i = 0; i < SK_BATCH; i++)
            argv[3 + i] = sk_key[b + i], argl[3 + i] = sk_len[b + i];
        sk_call(c, 3 + SK_BATCH, argv, argl);
        argv[0] = "PFADD", argl[0] = 5, argv[1] = "hll", argl[1] = 3;
        for (size_t i = 0; i < SK_BATCH; i++)
            argv[2 + i] = sk_key[b + i], argl[2 + i] = sk_len[b + i];
        sk_call(c, 2 + SK_BATCH, argv, argl);
        argv[0] = "CMS.INCRBY", argl[0] = 10, argv[1] = "cms", argl[1] = 3;
        for (size_t i = 0; i < SK_BATCH; i++) {
            argv[2 + 2 * i] = sk_key[b + i], argl[2 + 2 * i] = sk_len[b + i];
            argv[3 + 2 * i] = one, argl[3 + 2 * i] = 1;
        }
        sk_call(c, 2 + 2 * SK_BATCH, argv, argl);
    }
}

static volatile uint64_t sk_sink;

/* Million answers a second of n reads from `from`: what is 0 cuckoo
 * contains, 1 contains_many, 2 CF.EXISTS, 3 CF.MEXISTS, 4 rb_cms_query,
 * 5 CMS.QUERY, 6 rb_hll_card, 7 PFCOUNT. */
static double sk_time(int what, size_t from, size_t n, const rb_segment_t *seg,
                      const rb_cuckoo_t *cf, const rb_hll_t *hll, rb_conn_t *c)
{
    static const char *const cmd[] = { NULL, NULL, "CF.EXISTS", "CF.MEXISTS", NULL,
                                       "CMS.QUERY", NULL, "PFCOUNT" };
    static const char *const name[] = { "cf", "cf", "cf", "cf", "cms", "cms", "hll", "hll" };
    const char *argv[2 + SK_MANY];
    size_t argl[2 + SK_MANY];
    rb_key_t ks[SK_MANY];
    uint8_t out[SK_MANY];
    char buf[4096];
    double t0 = bench_now_s();
    uint64_t acc = 0, v;

    for (size_t i = 0; i < n;) {
        size_t k = from + i % SK_KEYS, m = what == 1 || what == 3 ? SK_MANY : 1;
        if (k + m > from + SK_KEYS)
            k = from;
        switch (what) {
        case 0: acc += (uint64_t)rb_cuckoo_contains(cf, sk_key[k], sk_len[k]); break;
        case 1:
            for (size_t j = 0; j < m; j++)
                ks[j] = (rb_key_t){ sk_key[k + j], sk_len[k + j] };
            acc += (uint64_t)rb_cuckoo_contains_many(cf, ks, m, out);
            break;
        case 4:
            if (rb_cms_query(seg, "cms", 3, sk_key[k], sk_len[k], &v) == RB_OK)
                acc += v;
            break;
        case 6:
            if (rb_hll_card(hll, &v) == RB_OK)
                acc += v;
            break;
        default:
            argv[0] = cmd[what], argl[0] = strlen(cmd[what]);
            argv[1] = name[what], argl[1] = strlen(name[what]);
            for (size_t j = 0; j < m && what != 7; j++)
                argv[2 + j] = sk_key[k + j], argl[2 + j] = sk_len[k + j];
            if (rb_conn_command(c, what == 7 ? 2 : 2 + m, argv, argl, buf, sizeof(buf)) !=
                RB_OK)
                bench_die("%s: %s", cmd[what], buf);
            acc += (uint64_t)buf[0];
        }
        i += m;
    }
    sk_sink = acc;
    return (double)n / (bench_now_s() - t0) / 1e6;
}

/* One row of section s1: reads a (shared memory) and b (socket) of n
 * keys from `from`, reps times, each rep both; median and spread of a/b. */
static void sk_row(const char *workload, int a, int b, const char *an, const char *bn,
                   size_t from, size_t na, size_t nb, int reps, const rb_segment_t *seg,
                   const rb_cuckoo_t *cf, const rb_hll_t *hll, rb_conn_t *c)
{
    double va[32], vb[32], rs[3];
    char note[96];
    cell_t cells[2];

    for (int r = 0; r < reps; r++) {
        va[r] = sk_time(a, from, na, seg, cf, hll, c);
        vb[r] = sk_time(b, from, nb, seg, cf, hll, c);
    }
    bench_ratio_spread(va, vb, reps, rs);
    snprintf(note, sizeof(note), "x%.0f, spread %.0f-%.0f", rs[0], rs[1], rs[2]);
    cells[0] = (cell_t){ bn, bench_median(vb, reps), NULL };
    cells[1] = (cell_t){ an, bench_median(va, reps), NULL };
    row("s", workload, "M/s", 1, 0, cells, 2);
    printf("    %s / %s per rep: median %.1fx, %.1fx .. %.1fx over %d reps\n", an, bn, rs[0],
           rs[1], rs[2], reps);
}

static void sk_reads(const char *tmpdir, int reps, int quick)
{
    char sock[256];
    pid_t pid = bench_daemon("sketch", "max-memory 1g\nappendfsync no", -1, sock, sizeof(sock));
    rb_conn_t *c;
    rb_segment_t *seg;
    rb_cuckoo_t *cf;
    rb_hll_t *hll;
    char inst[128];
    size_t sock_n = quick ? 2000 : 20000, shm_n = quick ? 200000 : SK_KEYS;

    (void)tmpdir;
    if (rb_conn_open(NULL, sock, 10000, &c) != RB_OK)
        bench_die("connect %s", sock);
    {
        const char *a[] = { "CF.RESERVE", "cf", "1000000", "BUCKETSIZE", "4", "FPBITS", "16",
                            "EXPANSION", "2" };
        size_t l[9];
        for (int i = 0; i < 9; i++)
            l[i] = strlen(a[i]);
        sk_call(c, 9, a, l);
    }
    {
        const char *a[] = { "CMS.INITBYDIM", "cms", "20000", "5" };
        size_t l[4] = { 13, 3, 5, 1 };
        sk_call(c, 4, a, l);
    }
    sk_fill(c);
    bench_daemon_instance("sketch", inst, sizeof(inst));
    if (rb_segment_attach(inst, 0, &seg) != RB_OK || rb_cuckoo_open(seg, "cf", 2, &cf) != RB_OK ||
        rb_hll_open(seg, "hll", 3, &hll) != RB_OK)
        bench_die("attach %s", inst);
    printf("\n[s1] reads from shared memory against the same command over the socket "
           "(10^6 keys; %d reps)\n", reps);
    sk_row("cuckoo contains, hits", 0, 2, "rb_cuckoo_contains", "CF.EXISTS", 0, shm_n, sock_n,
           reps, seg, cf, hll, c);
    sk_row("cuckoo contains, misses", 0, 2, "rb_cuckoo_contains", "CF.EXISTS", SK_KEYS, shm_n,
           sock_n, reps, seg, cf, hll, c);
    sk_row("cuckoo contains, hits, batched", 1, 3, "contains_many", "CF.MEXISTS x100", 0, shm_n,
           sock_n * 10, reps, seg, cf, hll, c);
    sk_row("count-min query", 4, 5, "rb_cms_query", "CMS.QUERY", 0, shm_n / 4, sock_n, reps, seg,
           cf, hll, c);
    sk_row("HyperLogLog count", 6, 7, "rb_hll_card", "PFCOUNT", 0, sock_n / 4, sock_n / 4,
           reps, seg, cf, hll, c);
    rb_hll_close(hll);
    rb_cuckoo_close(cf);
    rb_segment_close(seg);
    rb_conn_close(c);
    bench_daemon_stop(pid);
}

/* ---- s2: memory per key ------------------------------------------------------------- */

typedef struct sk_shape {
    uint32_t fp, b;
    double load, fpr, bits;   /* measured */
} sk_shape_t;

/* Fills a cuckoo filter of shape s (capacity 2^20, never grows, 500
 * moves an add) until its first refused add; its load, measured FPR on
 * SK_PROBES absent keys and bits per key (its arrays over its keys). */
static void sk_measure(sk_shape_t *s)
{
    rb_cuckoo_params_t p = { 1u << 20, s->b, 500, 0, s->fp, NULL };
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_segment_t *seg;
    rb_cuckoo_t *h;
    rb_cuckoo_info_t in;
    size_t n = 0, fp = 0;

    if (rb_segment_create(NULL, &o, &seg) != RB_OK || rb_cuckoo_reserve(seg, "m", 1, &p) != RB_OK)
        bench_die("cuckoo %u/%u", s->fp, s->b);
    while (n < 2 * (size_t)SK_KEYS && rb_cuckoo_add(seg, "m", 1, sk_key[n], sk_len[n], 0) == 1)
        n++;
    if (rb_cuckoo_open(seg, "m", 1, &h) != RB_OK || rb_cuckoo_info(h, &in) != RB_OK)
        bench_die("cuckoo info");
    for (size_t i = 0; i < SK_PROBES; i++) {
        char k[32];
        int len = snprintf(k, sizeof(k), "absent:%zu", i);
        fp += rb_cuckoo_contains(h, k, (size_t)len) == 1;
    }
    s->load = (double)n / ((double)in.buckets * s->b);
    s->fpr = (double)fp / SK_PROBES;
    s->bits = (double)in.bytes * 8 / (double)n;
    rb_cuckoo_close(h);
    rb_segment_close(seg);
}

/* A blocked Bloom filter for n keys at p: bits per key and measured FPR. */
static void sk_bloom(uint64_t n, double p, double *bits, double *fpr)
{
    rb_bloom_params_t bp = { .capacity = n, .error_rate = p, .layout = RB_BLOOM_BLOCKED,
                             .flags = RB_BLOOM_NONSCALING };
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_bloom_stat_t st;
    size_t hits = 0;

    if (rb_segment_create(NULL, &o, &seg) != RB_OK || rb_bloom_reserve(seg, "b", 1, &bp) != RB_OK ||
        rb_bloom_open(seg, "b", 1, &bf) != RB_OK)
        bench_die("bloom");
    for (uint64_t i = 0; i < n; i++)
        if (rb_bloom_add(bf, sk_key[i], sk_len[i]) < 0)
            bench_die("bloom add");
    for (size_t i = 0; i < SK_PROBES; i++) {
        char k[32];
        int len = snprintf(k, sizeof(k), "absent:%zu", i);
        hits += rb_bloom_contains(bf, k, (size_t)len) == 1;
    }
    if (rb_bloom_info(bf, &st) != RB_OK)
        bench_die("bloom info");
    *bits = (double)st.bits / (double)n;
    *fpr = (double)hits / SK_PROBES;
    rb_bloom_close(bf);
    rb_segment_close(seg);
}

static void sk_memory(void)
{
    static const double targets[] = { 0.01, 0.001 };
    sk_shape_t s[9];
    int ns = 0;

    printf("\n[s2] cuckoo filter shapes filled to their first refused add (2^20 slots, "
           "500 moves an add)\n");
    for (uint32_t fp = 8; fp <= 16; fp += 4)
        for (uint32_t b = 1; b <= 4; b *= 2) {
            s[ns] = (sk_shape_t){ fp, b, 0, 0, 0 };
            sk_measure(&s[ns]);
            printf("  fp %2u bits, bucket %u: load %.3f, FPR %.5f%% (formula %.5f%%), "
                   "%.2f bits/key\n", fp, b, s[ns].load, 100 * s[ns].fpr,
                   100 * rb_cuckoo_fpr_formula(fp, b, s[ns].load), s[ns].bits);
            ns++;
        }
    for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
        const sk_shape_t *best = NULL;
        double bbits, bfpr, c4fpr, c8fpr;
        char wl[64], note[96];
        cell_t cells[4];
        for (int i = 0; i < ns; i++)
            if (s[i].fpr <= targets[t] && (best == NULL || s[i].bits < best->bits))
                best = &s[i];
        sk_bloom(SK_KEYS, targets[t], &bbits, &bfpr);
        snprintf(wl, sizeof(wl), "memory per key at %g%%", 100 * targets[t]);
        snprintf(note, sizeof(note), "fp %u, bucket %u, FPR %.4f%%", best ? best->fp : 0,
                 best ? best->b : 0, best ? 100 * best->fpr : NAN);
        cells[0] = (cell_t){ "blocked Bloom", bbits, NULL };
        cells[1] = (cell_t){ "cuckoo", best ? best->bits : NAN, best ? NULL : "none reached it" };
        cells[2] = (cell_t){ "counting 4-bit", bench_cbf_bits(targets[t], 4, &c4fpr), NULL };
        cells[3] = (cell_t){ "counting 8-bit", bench_cbf_bits(targets[t], 8, &c8fpr), NULL };
        row("s", wl, "bits/key", 0, 0, cells, 4);
        printf("    blocked Bloom measured FPR %.4f%%; cuckoo: %s; counting 4-bit %.4f%%, "
               "8-bit %.4f%%\n", 100 * bfpr, note, 100 * c4fpr, 100 * c8fpr);
    }
}

void bench_sketch(const char *tmpdir, int reps, int quick)
{
    sk_keys();
    sk_reads(tmpdir, reps, quick);
    sk_memory();
    bench_cbf_fpr(reps);
    free(sk_key);
    free(sk_len);
}
