/*
 * check_filter.c - the kind-blind directory (lib/filter/dir.c) and the kind table
 * behind ringbloom/filter.h (lib/filter/kind.c): the writer's name index agrees
 * with a walk of the directory through every reserve and delete of every
 * kind (D1), the kind of a name, the listing with kinds, delete and
 * summary of any kind, from the writer and from a reader's mapping.
 */
#include <stdio.h>

#include "rb_test.h"
#include "bloom.h"
#include "kind.h"

#define SLOTS 64

static char inst[96];
static rb_segment_t *seg;

static void setup(void)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = SLOTS };

    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_create(inst, &o, &seg), RB_OK);
}

static void teardown(void)
{
    rb_segment_close(seg);
    rb_segment_unlink(inst);
}

/* Makes name a filter of kind k (0 bloom, 1 hll, 2 cms, 3 cuckoo, 4
 * counting Bloom): the library's result. */
static int make(rb_segment_t *s, const char *name, int k)
{
    size_t len = strlen(name);
    rb_bloom_params_t bp = { .capacity = 100, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_cms_params_t cp = { .width = 64, .depth = 4 };
    rb_cuckoo_params_t fp = { .capacity = 64, .bucket_size = 2, .max_iterations = 20,
                              .expansion = 1, .fp_bits = 8 };
    rb_cbf_params_t bc = { .capacity = 100, .error_rate = 0.01, .counter_bits = 4 };
    rb_key_t e = { "x", 1 };

    switch (k) {
    case 0: return rb_bloom_reserve(s, name, len, &bp);
    case 1: return rb_hll_add(s, name, len, &e, 1) == 1 ? RB_OK : RB_EEXIST;
    case 2: return rb_cms_create(s, name, len, &cp);
    case 3: return rb_cuckoo_reserve(s, name, len, &fp);
    default: return rb_cbf_reserve(s, name, len, &bc);
    }
}

#define KINDS 5
static const char *const kind_names[KINDS] = { "bloom", "hyperloglog", "cms", "cuckoo", "cbf" };

/* D1: after every step of a random churn of reserves and deletes of every
 * kind, the writer's index (rbi_dir_find) answers each name of the
 * universe as a walk of the directory does (rbi_dir_lookup), present or
 * not; a full directory refuses, and a name is never live twice. */
START_TEST(test_index_agrees_with_the_directory)
{
    enum { NAMES = 96, STEPS = 3000 };
    int kind[NAMES];
    uint64_t rnd = 0x9E3779B97F4A7C15ULL;
    char name[32];
    size_t live = 0;

    for (int i = 0; i < NAMES; i++)
        kind[i] = -1;
    for (int step = 0; step < STEPS; step++) {
        int i, rc;
        rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
        i = (int)((rnd >> 33) % NAMES);
        snprintf(name, sizeof(name), "name-%d", i);
        if (kind[i] < 0) {
            int k = (int)((rnd >> 20) % KINDS);
            rc = make(seg, name, k);
            if (live == SLOTS) {
                ck_assert_int_eq(rc, RB_ESLOTS);
            } else {
                ck_assert_int_eq(rc, RB_OK);
                kind[i] = k;
                live++;
            }
        } else {
            ck_assert_int_eq(rb_filter_delete(seg, name, strlen(name)), RB_OK);
            kind[i] = -1;
            live--;
        }
        for (int j = 0; j < NAMES; j++) {
            int64_t w, x;
            snprintf(name, sizeof(name), "name-%d", j);
            x = rbi_dir_find(seg, name, strlen(name));
            w = rbi_dir_lookup(rbi_seg_map(seg), name, strlen(name), NULL, NULL);
            ck_assert_int_eq(x, w < 0 ? -1 : w);
            ck_assert_int_eq(x >= 0, kind[j] >= 0);
        }
        /* A live name cannot be made again, whatever the kind asked. */
        if (kind[i] >= 0) {
            snprintf(name, sizeof(name), "name-%d", i);
            ck_assert_int_eq(make(seg, name, (kind[i] + 1) % KINDS) == RB_OK, 0);
        }
    }
}
END_TEST

typedef struct seen {
    int n;
    char names[8][32];
    const rb_kind_desc_t *kinds[8];
} seen_t;

static int collect(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    seen_t *s = arg;

    ck_assert_int_lt(s->n, 8);
    memcpy(s->names[s->n], name, len);
    s->names[s->n][len] = '\0';
    s->kinds[s->n++] = kind;
    return 0;
}

/* What the table says of one filter of each kind, asked of the writer and
 * of a reader attached read-only: its kind (and TYPE name), the listing
 * with kinds, a summary, and a delete through rb_filter_delete. */
START_TEST(test_kind_listing_summary_delete_of_every_kind)
{
    rb_segment_t *r;
    const rb_kind_desc_t *k;
    rb_filter_summary_t sum;
    uint64_t cursor = 0;
    seen_t seen = { 0 };

    ck_assert_ptr_nonnull(rb_kind(KINDS - 1));
    ck_assert_ptr_null(rb_kind(KINDS));
    for (int i = 0; i < KINDS; i++) {
        ck_assert_str_eq(rb_kind((size_t)i)->name, kind_names[i]);
        ck_assert_int_eq(make(seg, kind_names[i], i), RB_OK);
    }
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    for (int i = 0; i < KINDS; i++) {
        const char *n = kind_names[i];
        ck_assert_int_eq(rb_filter_kind(seg, n, strlen(n), &k), RB_OK);
        ck_assert_ptr_eq(k, rb_kind((size_t)i));
        ck_assert_int_eq(rb_filter_kind(r, n, strlen(n), &k), RB_OK);
        ck_assert_ptr_eq(k, rb_kind((size_t)i));
        ck_assert_int_eq(rb_filter_summary(r, n, strlen(n), &sum), RB_OK);
        ck_assert_ptr_eq(sum.kind, rb_kind((size_t)i));
        ck_assert_uint_gt(sum.bytes, 0);
        ck_assert_uint_gt(sum.layers, 0);
    }
    ck_assert_str_eq(rb_kind(0)->type, "MBbloom--");
    ck_assert_str_eq(rb_kind(1)->type, "string");
    ck_assert_str_eq(rb_kind(2)->type, "CMSk-TYPE");
    ck_assert_str_eq(rb_kind(3)->type, "MBbloomCF");
    ck_assert_str_eq(rb_kind(4)->type, "RBbloomCB");
    ck_assert_int_eq(rb_filter_summary(r, "cms", 3, &sum), RB_OK);
    ck_assert_str_eq(sum.form, "count-min");
    ck_assert_uint_eq(sum.layers, 4);
    ck_assert_int_eq(rb_filter_summary(r, "hyperloglog", 11, &sum), RB_OK);
    ck_assert_uint_eq(sum.items, 1);
    ck_assert_int_eq(rb_filter_summary(r, "bloom", 5, &sum), RB_OK);
    ck_assert_str_eq(sum.form, "scaling");
    ck_assert_str_eq(sum.layout, "blocked");
    ck_assert_uint_eq(sum.capacity, 100);
    ck_assert_int_eq(rb_filter_scan(r, &cursor, SIZE_MAX, collect, &seen), RB_OK);
    ck_assert_int_eq(seen.n, KINDS);
    ck_assert_uint_eq(cursor, 0);
    for (int i = 0; i < KINDS; i++)
        ck_assert_ptr_eq(seen.kinds[i], rb_kind((size_t)i));   /* slots filled in order */
    ck_assert_int_eq(rb_filter_summary(r, "cbf", 3, &sum), RB_OK);
    ck_assert_str_eq(sum.form, "counting 4-bit");
    ck_assert_uint_eq(sum.capacity, 100);
    /* Delete of every kind, through the one call; then nothing is left. */
    for (int i = 0; i < KINDS; i++) {
        const char *n = kind_names[i];
        ck_assert_int_eq(rb_filter_delete(r, n, strlen(n)), RB_EROFS);
        ck_assert_int_eq(rb_filter_delete(seg, n, strlen(n)), RB_OK);
        ck_assert_int_eq(rb_filter_delete(seg, n, strlen(n)), RB_ENOENT);
        ck_assert_int_eq(rb_filter_kind(r, n, strlen(n), &k), RB_ENOENT);
        ck_assert_int_eq(rb_filter_summary(r, n, strlen(n), &sum), RB_ENOENT);
    }
    seen.n = 0;
    ck_assert_int_eq(rb_filter_scan(r, &cursor, SIZE_MAX, collect, &seen), RB_OK);
    ck_assert_int_eq(seen.n, 0);
    ck_assert_int_eq(rb_filter_kind(r, "", 0, &k), RB_EINVAL);
    ck_assert_int_eq(rb_filter_scan(r, &cursor, 0, collect, &seen), RB_EINVAL);
    rb_segment_close(r);
}
END_TEST

/* A slot whose layout names no kind: its kind is RB_ECORRUPT, and the
 * listing hands it with a NULL kind rather than skipping it. */
START_TEST(test_slot_of_no_kind)
{
    const rb_kind_desc_t *k;
    seen_t seen = { 0 };
    uint64_t cursor = 0;
    int64_t i;

    ck_assert_int_eq(make(seg, "odd", 0), RB_OK);
    i = rbi_dir_find(seg, "odd", 3);
    ck_assert_int_ge(i, 0);
    ck_assert_ptr_null(rbi_kind_of(9));   /* 3 .. 15 are free (format.h) */
    rbi_st(&rbi_dir_slot(rbi_seg_map(seg), (uint64_t)i)->layout, 9);
    ck_assert_int_eq(rb_filter_kind(seg, "odd", 3, &k), RB_ECORRUPT);
    ck_assert_int_eq(rb_filter_delete(seg, "odd", 3), RB_ECORRUPT);
    ck_assert_int_eq(rb_filter_scan(seg, &cursor, SIZE_MAX, collect, &seen), RB_OK);
    ck_assert_int_eq(seen.n, 1);
    ck_assert_ptr_null(seen.kinds[0]);
    rbi_st(&rbi_dir_slot(rbi_seg_map(seg), (uint64_t)i)->layout, RB_BLOOM_BLOCKED);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("filter",
                        RB_TCASE("directory", 120, setup, teardown,
                                 test_index_agrees_with_the_directory, test_slot_of_no_kind),
                        RB_TCASE("kinds", 120, setup, teardown,
                                 test_kind_listing_summary_delete_of_every_kind));
}
