/*
 * check_tinylfu.c - the count-min sketch handle and TinyLFU admission by
 * handle (lib/cms/cms.c): a handle answers what the by-name calls answer,
 * rebinds by name after its sketch is deleted and made again (and says
 * RB_ENOENT / RB_EWRONGTYPE when the name holds nothing or another kind),
 * and rb_tinylfu_admit_h allocates nothing where the by-name
 * rb_tinylfu_admit allocates its handles every call (counted by wrapping
 * malloc, calloc and realloc at link time, ld --wrap in Makefile.am: the
 * library is linked into this program statically, so its calls are the
 * wrapped ones, and the real allocator, a sanitizer's included, stays in
 * charge).
 */
#include <stdatomic.h>

#include "rb_test.h"

static rb_segment_t *seg;

/* ---- counted allocations ------------------------------------------------------------ */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static _Atomic long allocs;

void *__wrap_malloc(size_t n)
{
    atomic_fetch_add(&allocs, 1);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    atomic_fetch_add(&allocs, 1);
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    atomic_fetch_add(&allocs, 1);
    return __real_realloc(p, n);
}

/* ---- fixtures ------------------------------------------------------------------------ */

static void setup(void)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 64 };

    ck_assert_int_eq(rb_segment_create(NULL, &o, &seg), RB_OK);
}

static void teardown(void)
{
    rb_segment_close(seg);
}

/* Sketch name (4-bit counters if small) with key "k<i>" counted i times
 * for i < n, times mult. */
static void sketch(const char *name, int small, int n, uint64_t mult)
{
    rb_cms_params_t p = { .width = 512, .depth = 4, .small = small };
    char k[16];

    ck_assert_int_eq(rb_cms_create(seg, name, strlen(name), &p), RB_OK);
    for (int i = 0; i < n; i++) {
        rb_key_t key = { k, (size_t)snprintf(k, sizeof(k), "k%d", i) };
        uint64_t by = (uint64_t)i * mult;
        if (by != 0)
            ck_assert_int_eq(rb_cms_incrby(seg, name, strlen(name), &key, &by, 1, NULL), RB_OK);
    }
}

static uint64_t estimate(const rb_cms_t *h, int i)
{
    char k[16];
    uint64_t e;
    int n = snprintf(k, sizeof(k), "k%d", i);

    ck_assert_int_eq(rb_cms_estimate(h, k, (size_t)n, &e), RB_OK);
    return e;
}

/* ---- the sketch handle --------------------------------------------------------------- */

START_TEST(test_tinylfu_cms_handle_answers_as_by_name)
{
    rb_bloom_params_t bp = { .capacity = 100, .error_rate = 0.01 };
    rb_cms_t *h;
    uint64_t e;
    char k[16];

    sketch("s", 0, 40, 3);
    ck_assert_int_eq(rb_cms_open(seg, "s", 1, &h), RB_OK);
    for (int i = 0; i < 40; i++) {
        int n = snprintf(k, sizeof(k), "k%d", i);
        ck_assert_int_eq(rb_cms_query(seg, "s", 1, k, (size_t)n, &e), RB_OK);
        ck_assert_uint_eq(estimate(h, i), e);
        ck_assert_uint_ge(e, (uint64_t)i * 3);   /* never below the true count */
    }
    ck_assert_int_eq(rb_cms_estimate(h, NULL, 1, &e), RB_EINVAL);
    ck_assert_int_eq(rb_cms_estimate(NULL, "x", 1, &e), RB_EINVAL);
    rb_cms_close(h);
    rb_cms_close(NULL);
    ck_assert_int_eq(rb_bloom_reserve(seg, "bf", 2, &bp), RB_OK);
    ck_assert_int_eq(rb_cms_open(seg, "bf", 2, &h), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_open(seg, "none", 4, &h), RB_ENOENT);
    ck_assert_int_eq(rb_cms_open(seg, "", 0, &h), RB_EINVAL);
}
END_TEST

/* Deleted: RB_ENOENT; made again under the name (another slot and
 * incarnation, other counts): the handle answers from the new sketch;
 * made again as a Bloom filter: RB_EWRONGTYPE. */
START_TEST(test_tinylfu_cms_handle_rebinds_after_delete)
{
    rb_bloom_params_t bp = { .capacity = 100, .error_rate = 0.01 };
    rb_cms_t *h;
    uint64_t e;

    sketch("s", 0, 10, 1);
    ck_assert_int_eq(rb_cms_open(seg, "s", 1, &h), RB_OK);
    ck_assert_uint_ge(estimate(h, 9), 9);
    ck_assert_int_eq(rb_cms_delete(seg, "s", 1), RB_OK);
    ck_assert_int_eq(rb_cms_estimate(h, "k9", 2, &e), RB_ENOENT);
    sketch("other", 0, 2, 1);   /* takes the freed slot: not ours */
    sketch("s", 1, 10, 0);      /* all zero, 4-bit */
    ck_assert_uint_eq(estimate(h, 9), 0);
    ck_assert_int_eq(rb_cms_incrby(seg, "s", 1, &(rb_key_t){ "k9", 2 }, &(uint64_t){ 7 }, 1,
                                   NULL), RB_OK);
    ck_assert_uint_eq(estimate(h, 9), 7);
    ck_assert_int_eq(rb_cms_delete(seg, "s", 1), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(seg, "s", 1, &bp), RB_OK);
    ck_assert_int_eq(rb_cms_estimate(h, "k9", 2, &e), RB_EWRONGTYPE);
    rb_cms_close(h);
}
END_TEST

/* ---- admission ------------------------------------------------------------------------ */

/* A pair as ADMIT.RESERVE makes it: sketch "t" (4-bit) and doorkeeper
 * "t:dk" holding the keys k<i> for i < dk_n. */
static void pair(int dk_n)
{
    rb_bloom_params_t bp = { .capacity = 1000, .error_rate = 0.01 };
    rb_bloom_t *dk;
    char k[16];

    sketch("t", 1, 16, 1);
    ck_assert_int_eq(rb_bloom_reserve(seg, "t" RB_TINYLFU_DOORKEEPER_SUFFIX, 4, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "t" RB_TINYLFU_DOORKEEPER_SUFFIX, 4, &dk), RB_OK);
    for (int i = 0; i < dk_n; i++)
        ck_assert_int_ge(rb_bloom_add(dk, k, (size_t)snprintf(k, sizeof(k), "k%d", i)), 0);
    rb_bloom_close(dk);
}

/* The rule computed from the parts: the sketch's estimate (by name) + the
 * doorkeeper's bit (its own handle). */
static int rule(rb_bloom_t *dk, const char *c, size_t cl, const char *v, size_t vl)
{
    uint64_t ce, ve;
    int cb = dk != NULL ? rb_bloom_contains(dk, c, cl) : 0;
    int vb = dk != NULL ? rb_bloom_contains(dk, v, vl) : 0;

    ck_assert_int_eq(rb_cms_query(seg, "t", 1, c, cl, &ce), RB_OK);
    ck_assert_int_eq(rb_cms_query(seg, "t", 1, v, vl, &ve), RB_OK);
    ck_assert_int_ge(cb, 0);
    ck_assert_int_ge(vb, 0);
    return ce + (uint64_t)cb > ve + (uint64_t)vb;
}

/* Every candidate and victim among k0..k15 (estimates 0..15; the
 * doorkeeper holds k0..k7, so every case of the bits comes up, ties
 * included): the handle's answer is the rule's, and the by-name call's. */
START_TEST(test_tinylfu_admit_handle_matches_by_name)
{
    rb_tinylfu_t *t;
    rb_bloom_t *dk;
    char c[16], v[16];

    pair(8);
    ck_assert_int_eq(rb_tinylfu_open(seg, "t", 1, &t), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "t" RB_TINYLFU_DOORKEEPER_SUFFIX, 4, &dk), RB_OK);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            size_t cl = (size_t)snprintf(c, sizeof(c), "k%d", i);
            size_t vl = (size_t)snprintf(v, sizeof(v), "k%d", j);
            int a = -1, b = -1;
            ck_assert_int_eq(rb_tinylfu_admit_h(t, c, cl, v, vl, &a), RB_OK);
            ck_assert_int_eq(rb_tinylfu_admit(seg, "t", 1, c, cl, v, vl, &b), RB_OK);
            ck_assert_int_eq(a, rule(dk, c, cl, v, vl));
            ck_assert_int_eq(a, b);
        }
    rb_bloom_close(dk);
    /* The doorkeeper deleted: it holds nothing, for the handle as by name. */
    ck_assert_int_eq(rb_bloom_delete(seg, "t" RB_TINYLFU_DOORKEEPER_SUFFIX, 4), RB_OK);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            size_t cl = (size_t)snprintf(c, sizeof(c), "k%d", i);
            size_t vl = (size_t)snprintf(v, sizeof(v), "k%d", j);
            int a = -1;
            ck_assert_int_eq(rb_tinylfu_admit_h(t, c, cl, v, vl, &a), RB_OK);
            ck_assert_int_eq(a, rule(NULL, c, cl, v, vl));
        }
    rb_tinylfu_close(t);
    rb_tinylfu_close(NULL);
    ck_assert_int_eq(rb_tinylfu_open(seg, "none", 4, &t), RB_ENOENT);
}
END_TEST

/* The doorkeeper adds one to what it holds (the sketch counts k<i> i
 * times): a candidate one below a victim it does not hold ties, and a tie
 * is refused. */
START_TEST(test_tinylfu_admit_doorkeeper_adds_one)
{
    rb_tinylfu_t *t;
    int a;

    pair(8);   /* k0..k7 held */
    ck_assert_int_eq(rb_tinylfu_open(seg, "t", 1, &t), RB_OK);
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "k7", 2, "k8", 2, &a), RB_OK);
    ck_assert_int_eq(a, 0);   /* 7 + 1 vs 8 + 0: a tie is refused */
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "k8", 2, "k7", 2, &a), RB_OK);
    ck_assert_int_eq(a, 0);   /* 8 vs 7 + 1 */
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "k9", 2, "k7", 2, &a), RB_OK);
    ck_assert_int_eq(a, 1);   /* 9 vs 8 */
    rb_tinylfu_close(t);
}
END_TEST

/* 0 allocations in 1,000 admissions by handle; the by-name call allocates
 * (its handles) every time, the figure the handle removes. */
START_TEST(test_tinylfu_admit_handle_allocates_nothing)
{
    rb_tinylfu_t *t;
    long before, by_handle, by_name;
    int a, bad = 0;

    pair(16);
    ck_assert_int_eq(rb_tinylfu_open(seg, "t", 1, &t), RB_OK);
    /* No assertion inside the counted loops: Check's own bookkeeping of
     * a passed assertion allocates. */
    before = atomic_load(&allocs);
    for (int i = 0; i < 1000; i++)
        bad += rb_tinylfu_admit_h(t, "k3", 2, "k12", 3, &a) != RB_OK || a != 0;
    by_handle = atomic_load(&allocs) - before;
    before = atomic_load(&allocs);
    for (int i = 0; i < 10; i++)
        bad += rb_tinylfu_admit(seg, "t", 1, "k3", 2, "k12", 3, &a) != RB_OK || a != 0;
    by_name = atomic_load(&allocs) - before;
    ck_assert_int_eq(bad, 0);
    printf("allocations: %ld in 1000 rb_tinylfu_admit_h, %ld in 10 rb_tinylfu_admit\n",
           by_handle, by_name);
    ck_assert_int_eq(by_handle, 0);
    ck_assert_int_ge(by_name, 10);
    rb_tinylfu_close(t);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("tinylfu",
                        RB_TCASE("cms_handle", 60, setup, teardown,
                                 test_tinylfu_cms_handle_answers_as_by_name,
                                 test_tinylfu_cms_handle_rebinds_after_delete),
                        RB_TCASE("admit", 60, setup, teardown,
                                 test_tinylfu_admit_handle_matches_by_name,
                                 test_tinylfu_admit_doorkeeper_adds_one,
                                 test_tinylfu_admit_handle_allocates_nothing));
}
