/*
 * bench_admit.c - section a of `make bench`: TinyLFU admission, the call
 * a cache makes on every miss.  rb_tinylfu_admit_h (two kept handles: one
 * section of the sketch for both keys, the doorkeeper probed only where
 * its bits can change the answer) beside one rb_cms_estimate by handle
 * (issue 26's goal: within 1.5x; the keys: half counted 1-15 times and
 * held by the doorkeeper, half never seen), then the by-name calls (rb_cms_query,
 * rb_tinylfu_admit) with 1,000 other names in the directory, which scan
 * it every call.  A private segment, no daemon; ratios per repetition,
 * median and spread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ringbloom.h"

#define AB_KEYS   (1u << 16)
#define AB_OTHERS 1000

static volatile uint64_t ab_sink;
static char ab_key[AB_KEYS][16];
static size_t ab_len[AB_KEYS];

/* Million calls a second of n calls of what: 0 rb_cms_estimate, 1
 * rb_tinylfu_admit_h, 2 rb_cms_query, 3 rb_tinylfu_admit. */
static double ab_time(int what, size_t n, const rb_segment_t *seg, const rb_cms_t *h,
                      const rb_tinylfu_t *t)
{
    double t0 = bench_now_s();
    uint64_t acc = 0, e = 0;
    int a = 0, rc = 0;

    for (size_t i = 0; i < n; i++) {
        size_t k = i % AB_KEYS, v = (i * 7919 + 13) % AB_KEYS;
        switch (what) {
        case 0: rc |= rb_cms_estimate(h, ab_key[k], ab_len[k], &e); break;
        case 1: rc |= rb_tinylfu_admit_h(t, ab_key[k], ab_len[k], ab_key[v], ab_len[v], &a); break;
        case 2: rc |= rb_cms_query(seg, "t", 1, ab_key[k], ab_len[k], &e); break;
        default:
            rc |= rb_tinylfu_admit(seg, "t", 1, ab_key[k], ab_len[k], ab_key[v], ab_len[v], &a);
        }
        acc += e + (uint64_t)a;
    }
    if (rc != RB_OK)
        bench_die("section a: call %d failed", what);
    ab_sink = acc;
    return (double)n / (bench_now_s() - t0) / 1e6;
}

/* One row: calls a and b (b the baseline), n of each, reps times; median
 * and spread of b's rate over a's (how many times a's cost b's is). */
static void ab_row(const char *workload, int a, int b, const char *an, const char *bn,
                   size_t na, size_t nb, int reps, const rb_segment_t *seg, const rb_cms_t *h,
                   const rb_tinylfu_t *t)
{
    double va[32], vb[32], rs[3];
    cell_t cells[2];

    for (int r = 0; r < reps; r++) {
        vb[r] = ab_time(b, nb, seg, h, t);
        va[r] = ab_time(a, na, seg, h, t);
    }
    bench_ratio_spread(vb, va, reps, rs);
    cells[0] = (cell_t){ bn, bench_median(vb, reps), NULL };
    cells[1] = (cell_t){ an, bench_median(va, reps), NULL };
    row("a", workload, "M/s", 1, 0, cells, 2);
    printf("    one %s costs %.2fx one %s per rep (spread %.2f .. %.2f, %d reps)\n", an, rs[0],
           bn, rs[1], rs[2], reps);
}

void bench_admit(int reps, int quick)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 256u << 20,
                            .max_filters = AB_OTHERS + 8 };
    rb_cms_params_t cp = { .width = 2 * AB_KEYS, .depth = 4, .small = 1 };
    rb_bloom_params_t bp = { .capacity = AB_KEYS, .error_rate = 0.01,
                             .layout = RB_BLOOM_BLOCKED };   /* the daemon's default */
    size_t n = quick ? 200000 : 2000000;
    rb_segment_t *seg;
    rb_bloom_t *dk;
    rb_cms_t *h;
    rb_tinylfu_t *t;
    char name[32];

    for (size_t i = 0; i < AB_KEYS; i++)
        ab_len[i] = (size_t)snprintf(ab_key[i], sizeof(ab_key[i]), "key%zu", i * 2654435761u);
    if (rb_segment_create(NULL, &o, &seg) != RB_OK)
        bench_die("a private segment");
    /* The others first: the pair's slots are the directory's last. */
    for (int i = 0; i < AB_OTHERS; i++) {
        rb_cms_params_t op = { .width = 64, .depth = 2 };
        if (rb_cms_create(seg, name, (size_t)snprintf(name, sizeof(name), "other%d", i),
                          &op) != RB_OK)
            bench_die("sketch %s", name);
    }
    if (rb_cms_create(seg, "t", 1, &cp) != RB_OK ||
        rb_bloom_reserve(seg, "t" RB_TINYLFU_DOORKEEPER_SUFFIX, 4, &bp) != RB_OK ||
        rb_bloom_open(seg, "t" RB_TINYLFU_DOORKEEPER_SUFFIX, 4, &dk) != RB_OK)
        bench_die("the TinyLFU pair");
    for (size_t i = 0; i < AB_KEYS; i += 2) {   /* a Zipf-ish count; half in the doorkeeper */
        rb_key_t k = { ab_key[i], ab_len[i] };
        uint64_t by = 1 + AB_KEYS / (i + 1) % 15;
        if (rb_cms_incrby(seg, "t", 1, &k, &by, 1, NULL) != RB_OK ||
            rb_bloom_add(dk, k.ptr, k.len) < 0)
            bench_die("counting");
    }
    rb_bloom_close(dk);
    if (rb_cms_open(seg, "t", 1, &h) != RB_OK || rb_tinylfu_open(seg, "t", 1, &t) != RB_OK)
        bench_die("the handles");
    printf("\n[a] TinyLFU admission: a 4-bit sketch of 4 x %u counters and its doorkeeper, "
           "%d other names in the directory (%d reps)\n", cp.width, AB_OTHERS, reps);
    ab_row("admit by handle / one estimate", 1, 0, "rb_tinylfu_admit_h", "rb_cms_estimate", n,
           n, reps, seg, h, t);
    ab_row("by name: admit / one query", 3, 2, "rb_tinylfu_admit", "rb_cms_query", n / 200,
           n / 100, reps, seg, h, t);
    ab_row("admit: by name / by handle", 3, 1, "rb_tinylfu_admit", "rb_tinylfu_admit_h", n / 200,
           n, reps, seg, h, t);
    rb_tinylfu_close(t);
    rb_cms_close(h);
    rb_segment_close(seg);
}
