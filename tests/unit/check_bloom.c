/*
 * check_bloom.c - Bloom filters: sizing against the seed's numbers, no
 * false negatives, measured FPR against the formula, test-and-add results,
 * batched queries, figures, errors, delete (slot and array reuse) and the
 * directory walk.
 */
#include <math.h>
#include <time.h>

#include "rb_test.h"
#include "bloom.h"

static rb_segment_t *seg;

static void setup(void)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 256u << 20, .max_filters = 8 };
    ck_assert_int_eq(rb_segment_create(NULL, &o, &seg), RB_OK);
}

static void teardown(void)
{
    rb_segment_close(seg);
}

/* Reserves filter `name` in s with bp and opens it. */
static rb_bloom_t *reserve_open(rb_segment_t *s, const char *name, const rb_bloom_params_t *bp)
{
    rb_bloom_t *bf;

    ck_assert_int_eq(rb_bloom_reserve(s, name, strlen(name), bp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(s, name, strlen(name), &bf), RB_OK);
    return bf;
}

static rb_bloom_t *make(const char *name, uint64_t n, double p, rb_bloom_layout_t layout)
{
    rb_bloom_params_t bp = { .capacity = n, .error_rate = p, .layout = layout,
                          .flags = RB_BLOOM_NONSCALING };

    return reserve_open(seg, name, &bp);
}

/* A scaling filter in s whose layers hold `expansion` times the one before. */
static rb_bloom_t *make_scaling(rb_segment_t *s, const char *name, uint64_t n, double p,
                                rb_bloom_layout_t layout, uint32_t expansion)
{
    rb_bloom_params_t bp = { .capacity = n, .error_rate = p, .layout = layout,
                             .expansion = expansion };

    return reserve_open(s, name, &bp);
}

START_TEST(test_bloom_sizing_matches_seed_numbers)
{
    rb_bloom_sizing_t s;

    /* n = 10^7, p = 1%: k ~ 7, ~9.6 bits/key, ~12 MB. */
    ck_assert_int_eq(rb_bloom_size(10000000, 0.01, RB_BLOOM_STANDARD, &s), RB_OK);
    ck_assert_uint_eq(s.k, 7);
    ck_assert_double_le(fabs((double)s.bits / 1e7 - 9.585), 0.01);
    ck_assert_double_le(fabs((double)s.bytes / 1e6 - 11.98), 0.02);
    ck_assert_double_le(fabs(s.fpr - 0.01), 0.0005);
    /* n = 10^6: ~1.2 MB. */
    ck_assert_int_eq(rb_bloom_size(1000000, 0.01, RB_BLOOM_STANDARD, &s), RB_OK);
    ck_assert_double_le(fabs((double)s.bytes / 1e6 - 1.198), 0.002);
    /* p = 0.1%: k = 10, 14.4 bits/key. */
    ck_assert_int_eq(rb_bloom_size(1000000, 0.001, RB_BLOOM_STANDARD, &s), RB_OK);
    ck_assert_uint_eq(s.k, 10);
    ck_assert_double_le(fabs((double)s.bits / 1e6 - 14.38), 0.01);
    /* Blocked costs more bits for the same p, within reason: at 1%
     * 10.03 bits/key and k = 7 (docs/design.md, "Bloom reads and writes"). */
    ck_assert_int_eq(rb_bloom_size(1000000, 0.01, RB_BLOOM_BLOCKED, &s), RB_OK);
    ck_assert_double_le(s.fpr, 0.01);
    ck_assert_double_le(fabs((double)s.bits / 1e6 - 10.03), 0.01);
    ck_assert_uint_eq(s.k, 7);
    ck_assert_uint_eq(s.bits % 512, 0);
}
END_TEST

/* Layers of a scaling filter have p/2, p/4, ...: sizing must reach tiny
 * rates, with a predicted FPR within p.  Standard reaches any p (k stops at
 * 64, m grows); blocked up to RB_BLOOM_BLOCKED_MAX_BPK bits per key, then
 * says so. */
START_TEST(test_bloom_sizing_reaches_tiny_error_rates)
{
    static const double ps[] = { 1e-8, 1e-12, 1e-20, 1e-24 };
    static const uint64_t ns[] = { 1000, 1000000 };
    rb_bloom_sizing_t s;

    for (int layout = RB_BLOOM_STANDARD; layout <= RB_BLOOM_BLOCKED; layout++)
        for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
            for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); j++) {
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                ck_assert_int_eq(rb_bloom_size(ns[j], ps[i], (rb_bloom_layout_t)layout, &s), RB_OK);
                clock_gettime(CLOCK_MONOTONIC, &t1);
                ck_assert_msg(s.fpr <= ps[i], "%s p %g n %llu: predicted FPR %g",
                              layout ? "blocked" : "standard", ps[i], (unsigned long long)ns[j],
                              s.fpr);
                ck_assert_uint_ge(s.k, 1);
                ck_assert_uint_le(s.k, 64);
                ck_assert_uint_eq(s.bits % 512, 0);
                if (j == 1)
                    printf("sizing %s p = %g: k = %u, %.2f bits/key, predicted FPR %.3g, %.3f ms\n",
                           layout ? "blocked" : "standard", ps[i], s.k, (double)s.bits / 1e6,
                           s.fpr, (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                                      (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
            }
    /* Past k = 64 the standard layout grows m instead. */
    ck_assert_int_eq(rb_bloom_size(1000, 1e-100, RB_BLOOM_STANDARD, &s), RB_OK);
    ck_assert_uint_eq(s.k, 64);
    ck_assert_double_le(s.fpr, 1e-100);
    /* Blocked below its floor: a distinct error, for any n. */
    ck_assert_int_eq(rb_bloom_size(1000, 1e-26, RB_BLOOM_BLOCKED, &s), RB_EPRECISION);
    ck_assert_int_eq(rb_bloom_size(1, 1e-30, RB_BLOOM_BLOCKED, &s), RB_EPRECISION);
}
END_TEST

START_TEST(test_bloom_sizing_rejects_bad_parameters)
{
    rb_bloom_sizing_t s;

    ck_assert_int_eq(rb_bloom_size(0, 0.01, RB_BLOOM_STANDARD, &s), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_size(10, 0.0, RB_BLOOM_STANDARD, &s), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_size(10, 1.0, RB_BLOOM_STANDARD, &s), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_size(10, -0.5, RB_BLOOM_STANDARD, &s), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_size(10, NAN, RB_BLOOM_STANDARD, &s), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_size(10, 0.01, (rb_bloom_layout_t)7, &s), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_size(1ULL << 40, 0.01, RB_BLOOM_STANDARD, &s), RB_ERANGE);
    ck_assert_int_eq(rb_bloom_size(10, 1e-30, RB_BLOOM_BLOCKED, &s), RB_EPRECISION);
    /* p near 1 still gives a valid (tiny) filter. */
    ck_assert_int_eq(rb_bloom_size(1000, 0.9, RB_BLOOM_BLOCKED, &s), RB_OK);
    ck_assert_uint_ge(s.k, 1);
}
END_TEST

/* 10^6 adds, 10^6 absent queries; returns the measured FPR. */
static double fill_and_measure(rb_bloom_t *bf, uint64_t n)
{
    unsigned long fp = 0;
    char key[160];

    for (unsigned long i = 0; i < n; i++)
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "in", i)), 0);
    for (unsigned long i = 0; i < n; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), "in", i)), 1);
    for (unsigned long i = 0; i < n; i++)
        fp += (unsigned long)rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), "out", i));
    return (double)fp / (double)n;
}

START_TEST(test_bloom_standard_fpr_within_15pct_of_formula)
{
    rb_bloom_t *bf = make("std", 1000000, 0.01, RB_BLOOM_STANDARD);
    rb_bloom_stat_t st;
    double fpr, formula;

    fpr = fill_and_measure(bf, 1000000);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    formula = rb_bloom_fpr_formula(st.bits, st.k, 1000000);
    printf("standard: measured FPR %.5f, formula %.5f (%+.1f%%), est from bits %.5f\n", fpr,
           formula, 100.0 * (fpr / formula - 1.0), st.est_fpr);
    ck_assert_double_le(fabs(fpr / formula - 1.0), 0.15);
    ck_assert_double_le(fabs(st.est_fpr / formula - 1.0), 0.10);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_blocked_fpr_at_most_p)
{
    rb_bloom_t *bf = make("blk", 1000000, 0.01, RB_BLOOM_BLOCKED);
    rb_bloom_stat_t st;
    double fpr = fill_and_measure(bf, 1000000);

    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    printf("blocked: measured FPR %.5f (p = 0.01), %.2f bits/key, k = %u, est %.5f\n", fpr,
           (double)st.bits / 1e6, st.k, st.est_fpr);
    ck_assert_double_le(fpr, 0.01);
    ck_assert_double_le(fabs(st.est_fpr / fpr - 1.0), 0.15);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_add_reports_new_exactly_once)
{
    rb_bloom_t *bf = make("once", 10000, 0.001, RB_BLOOM_STANDARD);
    rb_key_t keys[4] = { { "a", 1 }, { "b", 1 }, { "a", 1 }, { "", 0 } };
    uint8_t fresh[4];
    rb_bloom_stat_t st;

    ck_assert_int_eq(rb_bloom_add(bf, "url", 3), 1);
    ck_assert_int_eq(rb_bloom_add(bf, "url", 3), 0);
    ck_assert_int_eq(rb_bloom_add_many(bf, keys, 4, fresh), 3);
    ck_assert(fresh[0] == 1 && fresh[1] == 1 && fresh[2] == 0 && fresh[3] == 1);
    ck_assert_int_eq(rb_bloom_add_many(bf, keys, 4, NULL), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "", 0), 1);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    ck_assert_uint_eq(st.items, 4);
    ck_assert_str_eq(st.name, "once");
    ck_assert_uint_eq(st.capacity, 10000);
    ck_assert(st.error_rate == 0.001);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_keys_are_binary_safe)
{
    rb_bloom_t *bf = make("bin", 1000, 0.001, RB_BLOOM_BLOCKED);

    ck_assert_int_eq(rb_bloom_add(bf, "a\0b", 3), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, "a\0b", 3), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, "a\0c", 3), 0);
    ck_assert_int_eq(rb_bloom_add(bf, "\xff\xfe", 2), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, "\xff\xfe", 2), 1);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_contains_many_equals_contains)
{
    rb_bloom_layout_t layouts[2] = { RB_BLOOM_STANDARD, RB_BLOOM_BLOCKED };

    for (int l = 0; l < 2; l++) {
        rb_bloom_t *bf = make(l ? "m1" : "m0", 20000, 0.05, layouts[l]);
        static char keys[3001][160];
        rb_key_t k[3001];
        uint8_t out[3001];
        int64_t hits = 0;

        for (unsigned long i = 0; i < 3001; i++) {
            k[i].ptr = keys[i];
            k[i].len = rb_test_key(keys[i], sizeof(keys[i]), "many", i);
            /* An irregular membership pattern: a batch that answered for
             * the wrong key (a pipelining slip) must show. */
            if ((i * 2654435761u >> 13) & 1)
                ck_assert_int_ge(rb_bloom_add(bf, k[i].ptr, k[i].len), 0);
        }
        ck_assert_int_ge(rb_bloom_contains_many(bf, k, 3001, out), 1000);
        for (int i = 0; i < 3001; i++) {
            ck_assert_int_eq(out[i], rb_bloom_contains(bf, k[i].ptr, k[i].len));
            hits += out[i];
        }
        ck_assert_int_eq(rb_bloom_contains_many(bf, k, 3001, out), hits);
        ck_assert_int_eq(rb_bloom_contains_many(bf, k, 0, out), 0);
        rb_bloom_close(bf);
    }
}
END_TEST

START_TEST(test_bloom_blocked_key_stays_in_one_cache_line)
{
    rb_bloom_t *bf = make("line", 100000, 0.01, RB_BLOOM_BLOCKED);
    const rbi_map_t *m = rbi_seg_map(seg);
    const rb_layer_shm_t *l = &rbi_dir_slot(m, 0)->layer[0];
    const _Atomic uint64_t *arr = rbi_word_at(m, rbi_ld(&l->array_off));
    uint64_t words = rbi_ld(&l->bits) / 64, first = UINT64_MAX, last = 0, ones = 0;

    ck_assert_int_eq(rb_bloom_add(bf, "one key", 7), 1);
    for (uint64_t w = 0; w < words; w++) {
        uint64_t v = rbi_ld(&arr[w]);
        if (v) {
            if (first == UINT64_MAX)
                first = w;
            last = w;
            ones += (uint64_t)__builtin_popcountll(v);
        }
    }
    ck_assert_uint_eq(first / 8, last / 8);      /* one 64-byte block */
    ck_assert_uint_ge(ones, rbi_ld(&l->k) - 1);   /* k probes (a repeat is rare) */
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_filters_have_distinct_secrets)
{
    rb_bloom_t *a = make("s1", 1000, 0.01, RB_BLOOM_STANDARD);
    rb_bloom_t *b = make("s2", 1000, 0.01, RB_BLOOM_STANDARD);
    const rb_filter_shm_t *fa = rbi_dir_slot(rbi_seg_map(seg), 0);
    const rb_filter_shm_t *fb = rbi_dir_slot(rbi_seg_map(seg), 1);
    int same = 1;

    for (int i = 0; i < RBI_SECRET_WORDS; i++)
        same &= rbi_ld(&fa->secret[i]) == rbi_ld(&fb->secret[i]);
    ck_assert(!same);
    ck_assert_uint_ne(rbi_ld(&fa->incarnation), rbi_ld(&fb->incarnation));
    rb_bloom_close(a);
    rb_bloom_close(b);
}
END_TEST

START_TEST(test_bloom_reserve_errors_change_nothing)
{
    rb_bloom_params_t ok = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD };
    rb_bloom_params_t bad_p = { .capacity = 1000, .error_rate = 1.5, .layout = RB_BLOOM_STANDARD };
    rb_bloom_params_t zero = { .capacity = 0, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD };
    rb_bloom_params_t huge = { .capacity = 1ULL << 32, .error_rate = 0.0001, .layout = RB_BLOOM_STANDARD };
    char longname[RB_FILTER_NAME_MAX + 1];
    rb_segment_info_t info;
    rb_bloom_t *bf;

    memset(longname, 'f', sizeof(longname));
    ck_assert_int_eq(rb_bloom_reserve(seg, "f", 1, &bad_p), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_reserve(seg, "f", 1, &zero), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_reserve(seg, "", 0, &ok), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_reserve(seg, longname, sizeof(longname), &ok), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_reserve(seg, "f", 1, &huge), RB_ENOSPC);
    ck_assert_int_eq(rb_segment_info(seg, &info), RB_OK);
    ck_assert_uint_eq(info.filters, 0);
    ck_assert_int_eq(rb_bloom_reserve(seg, "f", 1, &ok), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(seg, "f", 1, &ok), RB_EEXIST);
    ck_assert_int_eq(rb_bloom_open(seg, "nope", 4, &bf), RB_ENOENT);
    for (int i = 1; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "f%d", i);
        ck_assert_int_eq(rb_bloom_reserve(seg, name, strlen(name), &ok), RB_OK);
    }
    ck_assert_int_eq(rb_bloom_reserve(seg, "ninth", 5, &ok), RB_ESLOTS);  /* 8 slots */
    ck_assert_int_eq(rb_segment_info(seg, &info), RB_OK);
    ck_assert_uint_eq(info.filters, 8);
}
END_TEST

START_TEST(test_bloom_reader_handle_cannot_write)
{
    rb_bloom_params_t ok = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    char inst[96];
    rb_segment_t *w, *r;
    rb_bloom_t *bf;

    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_create(inst, NULL, &w), RB_OK);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    /* The filter is created after the reader attached: it sees it anyway. */
    ck_assert_int_eq(rb_bloom_reserve(w, "late", 4, &ok), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(r, "x", 1, &ok), RB_EROFS);
    ck_assert_int_eq(rb_bloom_open(r, "late", 4, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_add(bf, "k", 1), RB_EROFS);
    ck_assert_int_eq(rb_bloom_contains(bf, "k", 1), 0);
    rb_bloom_close(bf);
    rb_segment_close(r);
    rb_segment_close(w);
    ck_assert_int_eq(rb_segment_unlink(inst), RB_OK);
}
END_TEST

START_TEST(test_bloom_scaling_adds_layers_and_keeps_fpr)
{
    rb_bloom_params_t bp = { .capacity = 10000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED,
                             .expansion = 2 };
    unsigned long fp = 0;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    char key[160];

    ck_assert_int_eq(rb_bloom_reserve(seg, "grow", 4, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "grow", 4, &bf), RB_OK);
    for (unsigned long i = 0; i < 70000; i++)
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "g", i)), 0);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    /* 10k + 20k + 40k: three layers hold 70k keys. */
    ck_assert_uint_eq(st.layers, 3);
    ck_assert_uint_eq(st.capacity, 70000);
    for (unsigned long i = 0; i < 70000; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), "g", i)), 1);
    /* A key of the first layer is still "not new" after layers were added. */
    ck_assert_int_eq(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "g", 5)), 0);
    for (unsigned long i = 0; i < 200000; i++)
        fp += (unsigned long)rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), "x", i));
    printf("scaling: 3 layers, 70000 keys, measured FPR %.5f (layers at p/2, p/4, p/8: "
           "bound 0.00875)\n", (double)fp / 200000);
    ck_assert_double_le((double)fp / 200000, 0.00875 * 1.15);
    rb_bloom_close(bf);
}
END_TEST

/* Keys tag/i .. tag/i+n-1 (n <= 1024), in static storage. */
static const rb_key_t *batch(const char *tag, unsigned long i, size_t n)
{
    static char buf[1024][160];
    static rb_key_t k[1024];

    for (size_t j = 0; j < n; j++) {
        k[j].ptr = buf[j];
        k[j].len = rb_test_key(buf[j], sizeof(buf[j]), tag, i + j);
    }
    return k;
}

/* Adds keys tag/from .. tag/to-1 in batches; returns the first error (0 if
 * none), the keys before it added. */
static int64_t add_range(rb_bloom_t *bf, const char *tag, unsigned long from, unsigned long to)
{
    for (unsigned long i = from; i < to; i += 1024) {
        size_t n = to - i < 1024 ? to - i : 1024;
        int64_t rc = rb_bloom_add_many(bf, batch(tag, i, n), n, NULL);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Keys tag/from .. tag/to-1 that the filter answers "maybe" to. */
static unsigned long count_maybe(rb_bloom_t *bf, const char *tag, unsigned long from,
                                 unsigned long to)
{
    uint8_t out[1024];
    unsigned long hits = 0;

    for (unsigned long i = from; i < to; i += 1024) {
        size_t n = to - i < 1024 ? to - i : 1024;
        int64_t rc = rb_bloom_contains_many(bf, batch(tag, i, n), n, out);
        ck_assert_int_ge(rc, 0);
        hits += (unsigned long)rc;
    }
    return hits;
}

/* Capacity 1, expansion 2: every layer halves the error rate, so the 18th
 * (from key 131,072 on) has p/2^18 ~ 3.8e-8, where sizing used to give up;
 * the filter must keep growing (RedisBloom does) until memory runs out,
 * not call itself full.  2^18 keys: 18 layers, every key found. */
START_TEST(test_bloom_scaling_grows_past_17_layers)
{
    rb_bloom_t *bf = make_scaling(seg, "deep", 1, 0.01, RB_BLOOM_BLOCKED, 2);
    rb_bloom_stat_t st;

    ck_assert_int_eq(add_range(bf, "d", 0, 1ul << 18), 0);
    ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
    printf("scaling from capacity 1: %llu keys new of %lu, %u layers, %llu bytes\n",
           (unsigned long long)st.items, 1ul << 18, st.layers, (unsigned long long)st.bytes);
    ck_assert_uint_ge(st.layers, 18);
    ck_assert_uint_eq(count_maybe(bf, "d", 0, 1ul << 18), 1ul << 18);
    rb_bloom_close(bf);
}
END_TEST

/* EXPANSION 1, capacity 1000: each of 8 filters grows to 32 layers, where
 * RB_BLOOM_MAX_LAYERS stops it before memory does, as a distinct error that
 * changes nothing; and the layers together stay within p (p/2 + p/4 + ...),
 * measured over 2,000,000 keys never added (250,000 per filter), in both
 * layouts (the blocked one used to stop at 17 layers).  Eight filters
 * average out how far one filter's FPR strays from its expectation, which
 * at this size outweighs the sampling error.  Over repeated runs the
 * measurement averaged 0.0091 (blocked) / 0.0089 (standard) with a
 * standard deviation of 0.00014 / 0.00012: p = 0.01 is 6 / 9 of them
 * away. */
START_TEST(test_bloom_expansion1_reaches_32_layers_within_p)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 8 };

    for (int layout = RB_BLOOM_STANDARD; layout <= RB_BLOOM_BLOCKED; layout++) {
        unsigned long hits = 0;
        rb_segment_t *own;

        ck_assert_int_eq(rb_segment_create(NULL, &o, &own), RB_OK);
        for (int f = 0; f < 8; f++) {
            char name[16], out[16];
            rb_bloom_stat_t st;
            rb_bloom_t *bf;

            snprintf(name, sizeof(name), "in%d", f);
            snprintf(out, sizeof(out), "out%d", f);
            bf = make_scaling(own, name, 1000, 0.01, (rb_bloom_layout_t)layout, 1);
            ck_assert_int_eq(add_range(bf, name, 0, 40000), RB_ELAYERS);
            ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
            ck_assert_uint_eq(st.layers, RB_BLOOM_MAX_LAYERS);
            ck_assert_uint_eq(st.items, 1000 * RB_BLOOM_MAX_LAYERS);
            ck_assert_int_eq(add_range(bf, name, 40000, 40100), RB_ELAYERS);
            ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
            ck_assert_uint_eq(st.items, 1000 * RB_BLOOM_MAX_LAYERS);
            hits += count_maybe(bf, out, 0, 250000);
            rb_bloom_close(bf);
        }
        printf("scaling %s, EXPANSION 1: 8 filters of 32 layers, 32000 keys each, measured "
               "FPR %.5f over 2*10^6 absent keys (p = 0.01)\n", layout ? "blocked" : "standard",
               (double)hits / 2e6);
        ck_assert_double_le((double)hits / 2e6, 0.01);
        rb_segment_close(own);
    }
}
END_TEST

/* A layer the library cannot make is a distinct error and changes
 * nothing: over RB_BLOOM_MAX_BITS (RB_ERANGE; the next layer's capacity is
 * made huge in the slot), or an error rate the blocked layout cannot reach
 * (RB_EPRECISION: p = 6e-25 gives layers at 3e-25, then 1.5e-25). */
START_TEST(test_bloom_scaling_unmakeable_layer_is_distinct_error)
{
    rb_bloom_t *bf = make_scaling(seg, "big", 10, 0.01, RB_BLOOM_STANDARD, 2);
    rb_segment_info_t before, after;
    rb_bloom_stat_t st;
    char key[160];
    unsigned long i = 0;
    int rc;

    ck_assert_int_eq(add_range(bf, "b", 0, 10), 0);
    rbi_st(&rbi_dir_slot(rbi_seg_map(seg), 0)->layer[0].capacity, 1ULL << 40);
    rbi_st(&rbi_dir_slot(rbi_seg_map(seg), 0)->layer[0].items, 1ULL << 40);
    ck_assert_int_eq(rb_segment_info(seg, &before), RB_OK);
    while ((rc = rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "x", i++))) == 0)
        ;
    ck_assert_int_eq(rc, RB_ERANGE);
    ck_assert_int_eq(rb_segment_info(seg, &after), RB_OK);
    ck_assert_uint_eq(after.used, before.used);
    rb_bloom_close(bf);

    bf = make_scaling(seg, "tiny", 10, 6e-25, RB_BLOOM_BLOCKED, 1);
    ck_assert_int_eq(add_range(bf, "t", 0, 10), 0);
    ck_assert_int_eq(add_range(bf, "t", 10, 30), RB_EPRECISION);
    ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
    ck_assert_uint_eq(st.layers, 1);
    ck_assert_uint_eq(st.items, 10);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_nonscaling_full_is_efull)
{
    rb_bloom_params_t bp = { .capacity = 100, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD,
                             .flags = RB_BLOOM_NONSCALING };
    char key[160], absent[3][160];
    rb_key_t keys[3];
    uint8_t fresh[3] = { 9, 9, 9 };
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    unsigned long i = 0;
    int found = 0;

    ck_assert_int_eq(rb_bloom_reserve(seg, "fixed", 5, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "fixed", 5, &bf), RB_OK);
    /* Fill to capacity (a false positive is "not new" and does not count). */
    do {
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "f", i++)), 0);
        ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    } while (st.items < 100);
    /* Keys certainly absent must now be refused; present ones are "not new". */
    for (unsigned long j = 0; found < 3; j++) {
        rb_test_key(absent[found], sizeof(absent[found]), "absent", j);
        if (rb_bloom_contains(bf, absent[found], strlen(absent[found])) == 0) {
            keys[found].ptr = absent[found];
            keys[found].len = strlen(absent[found]);
            found++;
        }
    }
    ck_assert_int_eq(rb_bloom_add(bf, keys[0].ptr, keys[0].len), RB_EFULL);
    ck_assert_int_eq(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "f", 7)), 0);
    ck_assert_int_eq(rb_bloom_add_many(bf, keys, 3, fresh), RB_EFULL);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    ck_assert_uint_eq(st.items, 100);
    ck_assert_uint_eq(st.layers, 1);
    ck_assert_int_eq(rb_bloom_contains(bf, keys[0].ptr, keys[0].len), 0);
    rb_bloom_close(bf);
}
END_TEST

static unsigned long count_present(rb_bloom_t *bf, const char *tag, unsigned long from,
                                   unsigned long to)
{
    char key[160];
    unsigned long n = 0;

    for (unsigned long i = from; i < to; i++)
        n += (unsigned long)rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), tag, i));
    return n;
}

/* Aging: two generations of 1000; the third thousand clears the first.
 * Where a generation ends depends on false positives (a key already seen
 * in the current generation does not fill it), so each key's generation is
 * recorded as it is added, and the test holds for exactly those. */
START_TEST(test_bloom_aging_rotates_when_full)
{
    rb_bloom_params_t bp = { .capacity = 1000, .error_rate = 0.001, .layout = RB_BLOOM_BLOCKED,
                             .flags = RB_BLOOM_AGING, .generations = 2 };
    static uint64_t rot[3000];
    uint64_t per_gen[3] = { 0, 0, 0 };
    unsigned long old_seen = 0, old_total = 0;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    char key[160];

    ck_assert_int_eq(rb_bloom_reserve(seg, "age", 3, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "age", 3, &bf), RB_OK);
    for (unsigned long i = 0; i < 3000; i++) {
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "a", i)), 0);
        ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
        rot[i] = st.rotations;
        ck_assert_uint_le(rot[i], 2);
        per_gen[rot[i]]++;
        if (i == 1900) {
            /* both generations still there: everything seen */
            ck_assert_uint_eq(rot[i], 1);
            ck_assert_uint_eq(count_present(bf, "a", 0, 1901), 1901);
        }
    }
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    ck_assert_uint_eq(st.layers, 2);
    ck_assert_uint_eq(st.rotations, 2);
    ck_assert_uint_le(st.items, 3000);        /* new keys (a false positive is not new) */
    ck_assert_uint_ge(st.items, 2990);
    /* A generation takes its capacity, plus the few keys it already held. */
    ck_assert_uint_ge(per_gen[0], 1000);
    ck_assert_uint_le(per_gen[0], 1010);
    ck_assert_uint_ge(per_gen[1], 1000);
    ck_assert_uint_le(per_gen[1], 1010);
    /* Keys of the cleared generation are gone (but for false positives,
     * p/2 = 0.0005 per key); every key of the two others is seen. */
    for (unsigned long i = 0; i < 3000; i++) {
        int in = rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), "a", i));
        if (rot[i] == 0) {
            old_total++;
            old_seen += (unsigned long)in;
        } else {
            ck_assert_msg(in == 1, "key %lu of generation %lu lost", i, (unsigned long)rot[i]);
        }
    }
    ck_assert_uint_eq(old_total, per_gen[0]);
    ck_assert_uint_le(old_seen, 5);
    ck_assert_int_eq(rb_bloom_rotate_due(bf, (uint64_t)time(NULL) + 100000), 0); /* no window */
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_aging_window_and_explicit_rotate)
{
    rb_bloom_params_t bp = { .capacity = 100000, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD,
                             .flags = RB_BLOOM_AGING, .generations = 3, .window = 60 };
    rb_bloom_params_t plain = { .capacity = 100, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    uint64_t now = (uint64_t)time(NULL);
    rb_bloom_stat_t st;
    rb_bloom_t *bf, *pf;

    ck_assert_int_eq(rb_bloom_reserve(seg, "win", 3, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "win", 3, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_add(bf, "old", 3), 1);
    ck_assert_int_eq(rb_bloom_rotate_due(bf, now + 1), 0);
    ck_assert_int_eq(rb_bloom_rotate_due(bf, now + 61), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, "old", 3), 1);    /* 2 generations left to live */
    ck_assert_int_eq(rb_bloom_rotate(bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, "old", 3), 1);
    ck_assert_int_eq(rb_bloom_rotate(bf), RB_OK);            /* its generation cleared */
    ck_assert_int_eq(rb_bloom_contains(bf, "old", 3), 0);
    /* Re-adding a key seen only in an older generation is not new, but
     * copies it into the current one: it outlives the old generation. */
    ck_assert_int_eq(rb_bloom_add(bf, "again", 5), 1);
    ck_assert_int_eq(rb_bloom_rotate(bf), RB_OK);
    ck_assert_int_eq(rb_bloom_add(bf, "again", 5), 0);       /* seen, refreshed */
    ck_assert_int_eq(rb_bloom_rotate(bf), RB_OK);
    ck_assert_int_eq(rb_bloom_rotate(bf), RB_OK);            /* first copy cleared */
    ck_assert_int_eq(rb_bloom_contains(bf, "again", 5), 1);
    ck_assert_int_eq(rb_bloom_rotate(bf), RB_OK);            /* second copy cleared */
    ck_assert_int_eq(rb_bloom_contains(bf, "again", 5), 0);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    ck_assert_uint_eq(st.rotations, 7);
    ck_assert_uint_eq(st.window, 60);
    ck_assert_uint_eq(st.current, 7 % 3);
    /* Only aging filters rotate; bad combinations are refused. */
    ck_assert_int_eq(rb_bloom_reserve(seg, "p", 1, &plain), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "p", 1, &pf), RB_OK);
    ck_assert_int_eq(rb_bloom_rotate(pf), RB_EINVAL);
    bp.flags = RB_BLOOM_AGING | RB_BLOOM_NONSCALING;
    ck_assert_int_eq(rb_bloom_reserve(seg, "x", 1, &bp), RB_EINVAL);
    bp.flags = RB_BLOOM_AGING;
    bp.generations = RB_BLOOM_MAX_LAYERS + 1;
    ck_assert_int_eq(rb_bloom_reserve(seg, "x", 1, &bp), RB_EINVAL);
    rb_bloom_close(pf);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_bloom_reset_clears_and_frees)
{
    rb_bloom_params_t bp = { .capacity = 500, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_segment_info_t before, after;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    char key[160];

    ck_assert_int_eq(rb_bloom_reserve(seg, "r", 1, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "r", 1, &bf), RB_OK);
    ck_assert_int_eq(rb_segment_info(seg, &before), RB_OK);
    for (unsigned long i = 0; i < 5000; i++)   /* scales to several layers */
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "r", i)), 0);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    ck_assert_uint_gt(st.layers, 2);
    ck_assert_int_eq(rb_bloom_reset(bf), RB_OK);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    ck_assert_uint_eq(st.layers, 1);
    ck_assert_uint_eq(st.items, 0);
    ck_assert_uint_eq(st.bits_set, 0);
    ck_assert_uint_le(count_present(bf, "r", 0, 5000), 0);
    ck_assert_int_eq(rb_segment_info(seg, &after), RB_OK);
    ck_assert_uint_eq(after.used, before.used);             /* the dropped layers are freed */
    ck_assert_int_eq(rb_bloom_add(bf, "again", 5), 1);
    rb_bloom_close(bf);
}
END_TEST

/* memory: what the filter holds in the segment, its arrays (all layers)
 * and its directory slot; the arrays are what rb_segment_info counts. */
START_TEST(test_bloom_stat_memory_is_arrays_and_slot)
{
    rb_bloom_params_t bp = { .capacity = 500, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD };
    rb_segment_info_t before, after;
    rb_bloom_stat_t st, info;
    rb_bloom_t *bf;
    char key[160];

    ck_assert_int_eq(rb_segment_info(seg, &before), RB_OK);
    bf = reserve_open(seg, "m", &bp);
    for (unsigned long i = 0; i < 2000; i++)   /* scales to several layers */
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "m", i)), 0);
    ck_assert_int_eq(rb_bloom_stat(bf, &st), RB_OK);
    ck_assert_int_eq(rb_bloom_info(bf, &info), RB_OK);
    ck_assert_int_eq(rb_segment_info(seg, &after), RB_OK);
    ck_assert_uint_gt(st.layers, 1);
    ck_assert_uint_eq(st.memory, st.bytes + 576 + 48 * RB_BLOOM_MAX_LAYERS);
    ck_assert_uint_eq(info.memory, st.memory);
    ck_assert_uint_eq(after.used - before.used, st.bytes);
    rb_bloom_close(bf);
}
END_TEST

/* The slot of live filter `name` (at most 8 bytes) in seg. */
static rb_filter_shm_t *slot_of(const char *name)
{
    rbi_map_t *m = rbi_seg_map(seg);
    size_t len = strlen(name);

    for (uint64_t i = 0; i < m->dir_slots; i++) {
        rb_filter_shm_t *f = rbi_dir_slot(m, i);
        uint64_t w = rbi_ld(&f->name[0]);
        if (rbi_ld(&f->state) == RBI_FILTER_LIVE && rbi_ld(&f->name_len) == len &&
            memcmp(&w, name, len) == 0)
            return f;
    }
    ck_abort_msg("no filter %s", name);
    return NULL;
}

/* Filters x and y hold the same state: item counts (filter and layers),
 * layers, current generation, rotations and every bit of every layer. */
static void assert_same_filter(const char *x, const char *y)
{
    rb_filter_shm_t *fx = slot_of(x), *fy = slot_of(y);
    rbi_map_t *m = rbi_seg_map(seg);
    uint64_t n = rbi_ld(&fx->nlayers);

    ck_assert_uint_eq(n, rbi_ld(&fy->nlayers));
    ck_assert_uint_eq(rbi_ld(&fx->items), rbi_ld(&fy->items));
    ck_assert_uint_eq(rbi_ld(&fx->current), rbi_ld(&fy->current));
    ck_assert_uint_eq(rbi_ld(&fx->rotations), rbi_ld(&fy->rotations));
    for (uint64_t l = 0; l < n; l++) {
        uint64_t bits = rbi_ld(&fx->layer[l].bits);
        _Atomic uint64_t *ax = rbi_word_at(m, rbi_ld(&fx->layer[l].array_off));
        _Atomic uint64_t *ay = rbi_word_at(m, rbi_ld(&fy->layer[l].array_off));
        ck_assert_uint_eq(bits, rbi_ld(&fy->layer[l].bits));
        ck_assert_uint_eq(rbi_ld(&fx->layer[l].items), rbi_ld(&fy->layer[l].items));
        for (uint64_t w = 0; w < bits / 64; w++)
            if (rbi_ld(&ax[w]) != rbi_ld(&ay[w]))
                ck_abort_msg("layer %llu word %llu differs", (unsigned long long)l,
                             (unsigned long long)w);
    }
}

/* add_many (pipelined) equals a loop of rb_bloom_add in its per-key
 * results, item counts and bits: plain standard and blocked filters, a
 * scaling one that grows several layers mid-batch, an aging one that
 * rotates mid-batch, with keys repeated inside a batch (some 1-3 keys
 * apart, inside the pipeline's reach, some far apart) and batches of
 * irregular sizes. */
/* The k = 7 set and test of the blocked layout are unrolled (issue 29);
 * the bits are part of the format (snapshots, dumps, other readers), so
 * both must stay those of the generic slicing, rbi_block_bit, for any h2. */
START_TEST(test_bloom_blocked_k7_unrolled_matches_slices)
{
    uint64_t x = 88172645463325252ULL;

    for (int t = 0; t < 100000; t++) {
        _Atomic uint64_t a[RBI_BLOCK_WORDS] = { 0 }, b[RBI_BLOCK_WORDS] = { 0 };
        uint64_t h2, base, y;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        h2 = x | 1;
        base = h2;
        y = h2 >> 1;
        rbi_bloom_set_block(a, h2, 7);
        for (uint32_t i = 0; i < 7; i++) {
            uint64_t bit = rbi_block_bit(&base, &y, i);
            b[bit >> 6] |= 1ULL << (bit & 63);
        }
        for (unsigned w = 0; w < RBI_BLOCK_WORDS; w++)
            ck_assert_uint_eq(a[w], b[w]);
        ck_assert_int_eq(rbi_bloom_test_block(a, h2, 7), 1);
        /* Clearing any one of the seven bits makes the test answer 0. */
        for (unsigned w = 0; w < RBI_BLOCK_WORDS; w++)
            for (uint64_t m = b[w]; m != 0; m &= m - 1) {
                a[w] = b[w] & ~(m & -m);
                ck_assert_int_eq(rbi_bloom_test_block(a, h2, 7), 0);
                a[w] = b[w];
            }
    }
}
END_TEST

START_TEST(test_bloom_add_many_equals_add_loop)
{
    static const unsigned char secret[RB_BLOOM_SECRET_BYTES] = { 7, 1, 9 };
    static const rb_bloom_params_t kinds[] = {
        { .capacity = 5000, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD,
          .flags = RB_BLOOM_NONSCALING, .secret = secret },
        { .capacity = 5000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED,
          .flags = RB_BLOOM_NONSCALING, .secret = secret },
        { .capacity = 150, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED, .secret = secret },
        { .capacity = 150, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD, .secret = secret },
        { .capacity = 200, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED,
          .flags = RB_BLOOM_AGING, .generations = 3, .secret = secret },
    };
    static const size_t sizes[] = { 1000, 37, 1, 2, 500, 31, 32, 33, 1024, 700 };
    static char buf[1024][160];
    static rb_key_t k[1024];
    static uint8_t out[1024];
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 16 };
    unsigned long next = 0;

    /* ten filters: more slots than setup's segment has */
    rb_segment_close(seg);
    ck_assert_int_eq(rb_segment_create(NULL, &o, &seg), RB_OK);
    for (size_t c = 0; c < sizeof(kinds) / sizeof(kinds[0]); c++) {
        char xn[8], yn[8];
        rb_bloom_t *x, *y;
        rb_bloom_stat_t st;
        snprintf(xn, sizeof(xn), "x%zu", c);
        snprintf(yn, sizeof(yn), "y%zu", c);
        x = reserve_open(seg, xn, &kinds[c]);
        y = reserve_open(seg, yn, &kinds[c]);
        for (size_t b = 0; b < sizeof(sizes) / sizeof(sizes[0]); b++) {
            int64_t added = 0, rc;
            for (size_t j = 0; j < sizes[b]; j++, next++) {
                /* every third key repeats one 1-3 places back, every
                 * seventh one from far back (an earlier batch) */
                unsigned long id = next % 3 == 0 && j >= 3 ? next - 1 - next % 4 / 2
                                   : next % 7 == 0 ? next / 2 : next;
                k[j].ptr = buf[j];
                k[j].len = rb_test_key(buf[j], sizeof(buf[j]), "am", id);
            }
            rc = rb_bloom_add_many(x, k, sizes[b], out);
            ck_assert_int_ge(rc, 0);
            for (size_t j = 0; j < sizes[b]; j++) {
                int one = rb_bloom_add(y, k[j].ptr, k[j].len);
                ck_assert_int_ge(one, 0);
                ck_assert_int_eq(out[j], one);
                added += one;
            }
            ck_assert_int_eq(rc, added);
        }
        assert_same_filter(xn, yn);
        ck_assert_int_eq(rb_bloom_stat(x, &st), RB_OK);
        if (c == 2 || c == 3)
            ck_assert_uint_ge(st.layers, 4);      /* grew mid-batch */
        if (c == 4)
            ck_assert_uint_ge(st.rotations, 5);   /* rotated mid-batch */
        rb_bloom_close(x);
        rb_bloom_close(y);
    }
}
END_TEST

/* Found by fuzz_attach (corpus/fuzz_attach/regress-reset-dead-layer): a
 * taken-over slot whose nlayers is 0 still had a layer 0 for reset, which
 * swapped it and freed its array - space another filter was using, which
 * the next reservation then zeroed (false negatives).  The writer now
 * validates a slot before changing it. */
START_TEST(test_bloom_reset_of_corrupt_slot_changes_nothing)
{
    rb_bloom_t *a = make("a", 1000, 0.01, RB_BLOOM_STANDARD);
    rb_bloom_t *b = make("b", 1000, 0.01, RB_BLOOM_STANDARD);
    rb_bloom_t *c;
    rb_filter_shm_t *fa = NULL, *fb = NULL;
    rbi_map_t *m = rbi_seg_map(seg);
    char key[160];

    for (unsigned long i = 0; i < 1000; i++)
        ck_assert_int_ge(rb_bloom_add(b, key, rb_test_key(key, sizeof(key), "b", i)), 0);
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        rb_filter_shm_t *f = rbi_dir_slot(m, i);
        if (rbi_ld(&f->state) == RBI_FILTER_LIVE && rbi_ld(&f->name_len) == 1)
            *((rbi_ld(&f->name[0]) & 0xFF) == 'a' ? &fa : &fb) = f;
    }
    ck_assert(fa != NULL && fb != NULL);
    /* a's dead layer 0 names b's array. */
    rbi_st(&fa->layer[0].array_off, rbi_ld(&fb->layer[0].array_off));
    rbi_st(&fa->nlayers, 0);
    ck_assert_int_eq(rb_bloom_reset(a), RB_ECORRUPT);
    ck_assert_int_eq(rb_bloom_rotate(a), RB_ECORRUPT);
    c = make("c", 1000, 0.01, RB_BLOOM_STANDARD);
    for (unsigned long i = 0; i < 1000; i++)
        ck_assert_int_eq(rb_bloom_contains(b, key, rb_test_key(key, sizeof(key), "b", i)), 1);
    rb_bloom_close(a);
    rb_bloom_close(b);
    rb_bloom_close(c);
}
END_TEST

/* ---- delete ------------------------------------------------------------------- */

/* A full directory takes a new filter once one is deleted; the deleted
 * filter's arrays are back in the heap. */
START_TEST(test_bloom_delete_frees_slot_and_memory)
{
    rb_bloom_params_t bp = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_segment_info_t before, after;
    rb_bloom_t *bf;
    char name[16], key[160];

    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        ck_assert_int_eq(rb_bloom_reserve(seg, name, strlen(name), &bp), RB_OK);
    }
    ck_assert_int_eq(rb_segment_info(seg, &before), RB_OK);
    bf = reserve_open(seg, "big", &bp);
    for (unsigned long i = 0; i < 10000; i++)   /* scales to several layers */
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "big", i)), 0);
    ck_assert_int_eq(rb_bloom_reserve(seg, "ninth", 5, &bp), RB_ESLOTS);
    ck_assert_int_eq(rb_bloom_delete(seg, "big", 3), RB_OK);
    ck_assert_int_eq(rb_segment_info(seg, &after), RB_OK);
    ck_assert_uint_eq(after.used, before.used);
    ck_assert_uint_eq(after.filters, before.filters);
    ck_assert_int_eq(rb_bloom_delete(seg, "big", 3), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_reserve(seg, "ninth", 5, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_delete(seg, "", 0), RB_EINVAL);
    ck_assert_int_eq(rb_bloom_delete(NULL, "f0", 2), RB_EINVAL);
    rb_bloom_close(bf);
}
END_TEST

/* Handles opened before a delete answer RB_ENOENT, in the writer and in a
 * reader process's mapping; a filter made again under the name is a fresh
 * one (no keys, its own secret), which the old handles then follow. */
START_TEST(test_bloom_delete_handles_get_enoent_then_fresh)
{
    /* 1,000 keys in room for 100,000: "k" below is absent and its false
     * positive chance negligible (at capacity 1000 it was 1% a run, with a
     * fresh secret each run: a clean-clone run failed on it once). */
    rb_bloom_params_t bp = { .capacity = 100000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_bloom_params_t sp = { .capacity = 100, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD };
    rb_key_t k = { "k", 1 };
    rb_bloom_stat_t st;
    rb_segment_t *w, *r;
    rb_bloom_t *wb, *rb;
    char inst[96], key[160];
    uint8_t out;

    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_create(inst, NULL, &w), RB_OK);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    wb = reserve_open(w, "d", &bp);
    ck_assert_int_eq(rb_bloom_open(r, "d", 1, &rb), RB_OK);
    for (unsigned long i = 0; i < 1000; i++)
        ck_assert_int_ge(rb_bloom_add(wb, key, rb_test_key(key, sizeof(key), "d", i)), 0);
    ck_assert_int_eq(rb_bloom_contains(rb, "k", 1), 0);   /* the fast path's view made */
    ck_assert_int_eq(rb_bloom_delete(r, "d", 1), RB_EROFS);
    ck_assert_int_eq(rb_bloom_delete(w, "d", 1), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(rb, "k", 1), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_contains(wb, "k", 1), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_contains_many(rb, &k, 1, &out), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_info(rb, &st), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_add(wb, "k", 1), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_reset(wb), RB_ENOENT);
    /* Made again (another layout, so another size): fresh. */
    ck_assert_int_eq(rb_bloom_reserve(w, "d", 1, &sp), RB_OK);
    ck_assert_int_eq(rb_bloom_info(rb, &st), RB_OK);
    ck_assert_uint_eq(st.items, 0);
    ck_assert_uint_eq(st.capacity, 100);
    ck_assert_uint_le(count_present(rb, "d", 0, 1000), 30);   /* FPs of an empty filter: 0 */
    ck_assert_int_eq(rb_bloom_add(wb, "k", 1), 1);
    ck_assert_int_eq(rb_bloom_contains(rb, "k", 1), 1);
    rb_bloom_close(rb);
    rb_bloom_close(wb);
    rb_segment_close(r);
    rb_segment_close(w);
    ck_assert_int_eq(rb_segment_unlink(inst), RB_OK);
}
END_TEST

/* R1, white box: a read section begun before a delete is discarded by
 * its re-check even after the slot and the arrays were reused by another
 * filter (reserve keeps the slot's generation), and a name read across
 * the reuse is never accepted. */
START_TEST(test_bloom_delete_reuse_never_passes_a_section)
{
    rb_bloom_params_t bp = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED,
                             .flags = RB_BLOOM_NONSCALING };
    rbi_bloom_bind_t *b;
    rbi_bloom_section_t s;
    rb_filter_shm_t *f;
    rb_bloom_t *bf = reserve_open(seg, "old", &bp);
    uint64_t off, gen;

    ck_assert_int_eq(rbi_bloom_bind_get(bf, NULL, &b), RB_OK);
    ck_assert_int_eq(rbi_bloom_section_begin(b, &s), RB_OK);
    f = slot_of("old");
    off = rbi_ld(&f->layer[0].array_off);
    gen = s.gen0;
    ck_assert_int_eq(rb_bloom_delete(seg, "old", 3), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(seg, "new", 3, &bp), RB_OK);
    ck_assert_ptr_eq(slot_of("new"), f);                        /* the same slot ... */
    ck_assert_uint_eq(rbi_ld(&f->layer[0].array_off), off);     /* ... and array */
    ck_assert_uint_gt(rbi_gen_read_begin(&f->gen), gen);        /* kept, and moved */
    ck_assert(rbi_gen_read_retry(&f->gen, s.gen0));             /* the section retries */
    ck_assert_int_eq(rbi_bloom_section_begin(b, &s), RB_ENOENT);   /* and finds it gone */
    ck_assert_int_eq(rb_bloom_contains(bf, "k", 1), RB_ENOENT);
    rb_bloom_close(bf);
}
END_TEST

static int scan_collect(const char *name, size_t len, void *arg)
{
    char *seen = arg;

    ck_assert_uint_eq(len, 2);
    seen[name[1] - '0']++;
    return 0;
}

/* rb_bloom_scan walks the slots: every filter once, a hole left by a
 * delete skipped, the cursor back to 0 at the end. */
START_TEST(test_bloom_scan_walks_slots)
{
    rb_bloom_params_t bp = { .capacity = 100, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    char name[16], seen[8] = { 0 };
    uint64_t cursor = 0;
    int steps = 0;

    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof(name), "s%d", i);
        ck_assert_int_eq(rb_bloom_reserve(seg, name, 2, &bp), RB_OK);
    }
    ck_assert_int_eq(rb_bloom_delete(seg, "s2", 2), RB_OK);
    do {
        ck_assert_int_eq(rb_bloom_scan(seg, &cursor, 3, scan_collect, seen), RB_OK);
        steps++;
    } while (cursor != 0);
    ck_assert_int_eq(steps, 3);   /* 8 slots, 3 at a time */
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(seen[i], i == 2 ? 0 : 1);
    cursor = 1000;                /* past the directory: done */
    ck_assert_int_eq(rb_bloom_scan(seg, &cursor, 3, scan_collect, seen), RB_OK);
    ck_assert_uint_eq(cursor, 0);
    ck_assert_int_eq(rb_bloom_scan(seg, &cursor, 0, scan_collect, seen), RB_EINVAL);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("bloom",
                        RB_TCASE("sizing", 120, setup, teardown,
                                 test_bloom_sizing_matches_seed_numbers,
                                 test_bloom_sizing_rejects_bad_parameters,
                                 test_bloom_sizing_reaches_tiny_error_rates),
                        RB_TCASE("fpr", 120, setup, teardown,
                                 test_bloom_standard_fpr_within_15pct_of_formula,
                                 test_bloom_blocked_fpr_at_most_p),
                        RB_TCASE("adds", 120, setup, teardown,
                                 test_bloom_add_reports_new_exactly_once,
                                 test_bloom_keys_are_binary_safe,
                                 test_bloom_contains_many_equals_contains,
                                 test_bloom_blocked_key_stays_in_one_cache_line,
                                 test_bloom_filters_have_distinct_secrets,
                                 test_bloom_reserve_errors_change_nothing,
                                 test_bloom_reader_handle_cannot_write),
                        RB_TCASE("scaling", 120, setup, teardown,
                                 test_bloom_scaling_adds_layers_and_keeps_fpr,
                                 test_bloom_scaling_grows_past_17_layers,
                                 test_bloom_expansion1_reaches_32_layers_within_p,
                                 test_bloom_scaling_unmakeable_layer_is_distinct_error,
                                 test_bloom_nonscaling_full_is_efull),
                        RB_TCASE("aging", 120, setup, teardown,
                                 test_bloom_aging_rotates_when_full,
                                 test_bloom_aging_window_and_explicit_rotate),
                        RB_TCASE("stat and reset", 120, setup, teardown,
                                 test_bloom_stat_memory_is_arrays_and_slot,
                                 test_bloom_reset_clears_and_frees,
                                 test_bloom_reset_of_corrupt_slot_changes_nothing),
                        RB_TCASE("add_many", 120, setup, teardown,
                                 test_bloom_add_many_equals_add_loop,
                                 test_bloom_blocked_k7_unrolled_matches_slices),
                        RB_TCASE("delete", 120, setup, teardown,
                                 test_bloom_delete_frees_slot_and_memory,
                                 test_bloom_delete_handles_get_enoent_then_fresh,
                                 test_bloom_delete_reuse_never_passes_a_section,
                                 test_bloom_scan_walks_slots));
}
