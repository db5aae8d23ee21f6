/*
 * bench_cbf.c - the counting Bloom filter's figures for section s of
 * `make bench` (bench_sketch.c prints them with the other kinds'):
 *
 *   s3. its false positive rate at capacity (10^6 keys) against
 *       rb_cbf_fpr_formula, with 4- and 8-bit counters at 1% and 0.1%:
 *       each repetition a filter with a new random secret, 10^6 absent
 *       keys probed; measured / formula, median and spread;
 *   and for s2, its bits per key at capacity (counters x counter bits over
 *       keys) beside the blocked Bloom and cuckoo filters' at the same
 *       error rate (bench_cbf_bits).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ringbloom.h"

#define CBF_KEYS   1000000u
#define CBF_PROBES 1000000u

/* A filter of CBF_KEYS keys at p with bits-bit counters, filled: its
 * measured FPR over CBF_PROBES absent keys into *fpr, the formula's into
 * *want; its bits per key. */
static double measure(double p, uint32_t bits, double *fpr, double *want)
{
    rb_cbf_params_t cp = { CBF_KEYS, p, bits, NULL };
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_segment_t *seg;
    rb_cbf_info_t in;
    rb_cbf_t *h;
    size_t hits = 0;
    char k[32];

    if (rb_segment_create(NULL, &o, &seg) != RB_OK || rb_cbf_reserve(seg, "c", 1, &cp) != RB_OK ||
        rb_cbf_open(seg, "c", 1, &h) != RB_OK)
        bench_die("counting Bloom %u-bit at %g", bits, p);
    for (uint32_t i = 0; i < CBF_KEYS; i++) {
        int len = snprintf(k, sizeof(k), "present:%u", i);
        if (rb_cbf_add(seg, "c", 1, k, (size_t)len) != 1)
            bench_die("counting Bloom add");
    }
    for (uint32_t i = 0; i < CBF_PROBES; i++) {
        int len = snprintf(k, sizeof(k), "absent:%u", i);
        hits += rb_cbf_contains(h, k, (size_t)len) == 1;
    }
    if (rb_cbf_info(h, &in) != RB_OK)
        bench_die("counting Bloom info");
    *fpr = (double)hits / CBF_PROBES;
    *want = rb_cbf_fpr_formula(in.counters, in.k, in.items);
    rb_cbf_close(h);
    rb_segment_close(seg);
    return (double)in.counters * in.counter_bits / CBF_KEYS;
}

double bench_cbf_bits(double p, uint32_t bits, double *fpr)
{
    double want;

    return measure(p, bits, fpr, &want);
}

void bench_cbf_fpr(int reps)
{
    static const double targets[] = { 0.01, 0.001 };
    static const uint32_t bits[] = { 4, 8 };

    printf("\n[s3] counting Bloom filter FPR at capacity (10^6 keys, 10^6 absent probed, "
           "a new secret each of %d runs) against (1 - e^(-kn/m))^k\n", reps);
    for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++)
        for (size_t b = 0; b < sizeof(bits) / sizeof(bits[0]); b++) {
            double got[31], want[31], spread[3], fm, gm;
            char wl[64];
            cell_t cells[2];
            for (int r = 0; r < reps; r++)
                measure(targets[t], bits[b], &got[r], &want[r]);
            bench_ratio_spread(got, want, reps, spread);
            fm = want[0];
            gm = bench_median(got, reps);
            snprintf(wl, sizeof(wl), "counting %u-bit FPR at %g%%", bits[b], 100 * targets[t]);
            /* higher_better: the ratio printed is measured / formula. */
            cells[0] = (cell_t){ "formula", 100 * fm, NULL };
            cells[1] = (cell_t){ "measured", 100 * gm, NULL };
            row("s", wl, "%", 1, 0, cells, 2);
            printf("    measured / formula: median %.3f, lowest %.3f, highest %.3f\n", spread[0],
                   spread[1], spread[2]);
        }
}
