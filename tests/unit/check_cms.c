/*
 * check_cms.c - count-min sketches (lib/cms/cms.c, cms_write.c): estimates
 * never below the true count, the epsilon-delta bound, merge as the sketch
 * of the union, aging (exact halving; a racing reader sees the counters
 * before or after a halving, never a mix), 4-bit saturation, the kind
 * check against Bloom filters, delete, and counters kept across dump /
 * restore and a writer's takeover.
 */
#include <math.h>
#include <pthread.h>

#include "rb_test.h"
#include "bloom.h"
#include "cms_impl.h"

#define UNIVERSE 10000u     /* distinct keys of the Zipf stream */
#define STREAM   100000u    /* its length: 10^5 items */

static rb_segment_t *seg;
static unsigned char secret[RB_BLOOM_SECRET_BYTES];

static void setup(void)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 8 };

    ck_assert_int_eq(rb_segment_create(NULL, &o, &seg), RB_OK);
    for (size_t i = 0; i < sizeof(secret); i++)
        secret[i] = (unsigned char)(i * 37 + 11);
}

static void teardown(void)
{
    rb_segment_close(seg);
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A Zipf(1) stream of STREAM ranks in [0, UNIVERSE), seeded. */
static uint32_t *zipf_stream(uint64_t seed)
{
    double *cdf = malloc(UNIVERSE * sizeof(*cdf)), sum = 0;
    uint32_t *out = malloc(STREAM * sizeof(*out));

    ck_assert_ptr_nonnull(cdf);
    ck_assert_ptr_nonnull(out);
    for (uint32_t i = 0; i < UNIVERSE; i++)
        cdf[i] = (sum += 1.0 / (i + 1));
    for (uint32_t j = 0; j < STREAM; j++) {
        double u = (double)(rng(&seed) >> 11) / 9007199254740992.0 * sum;
        uint32_t lo = 0, hi = UNIVERSE - 1;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        out[j] = lo;
    }
    free(cdf);
    return out;
}

static void make(const char *name, uint32_t width, uint32_t depth, int small, uint64_t aging)
{
    rb_cms_params_t p = { .width = width, .depth = depth, .small = small, .aging = aging,
                          .secret = secret };

    ck_assert_int_eq(rb_cms_create(seg, name, strlen(name), &p), RB_OK);
}

static void incr(const char *name, uint32_t rank, uint64_t by)
{
    char k[32];
    rb_key_t key = { k, (size_t)snprintf(k, sizeof(k), "item:%u", rank) };

    ck_assert_int_eq(rb_cms_incrby(seg, name, strlen(name), &key, &by, 1, NULL), RB_OK);
}

static uint64_t query(const rb_segment_t *s, const char *name, uint32_t rank)
{
    char k[32];
    int n = snprintf(k, sizeof(k), "item:%u", rank);
    uint64_t e = 0;

    ck_assert_int_eq(rb_cms_query(s, name, strlen(name), k, (size_t)n, &e), RB_OK);
    return e;
}

/* The counter words of sketch name, and their number. */
static const _Atomic uint64_t *words(const char *name, uint64_t *n)
{
    rbi_map_t *m = rbi_seg_map(seg);
    int64_t i = rbi_dir_find(seg, name, strlen(name));
    rb_filter_shm_t *f;
    rbi_cms_shape_t s;

    ck_assert_int_ge(i, 0);
    f = rbi_dir_slot(m, (uint64_t)i);
    ck_assert(rbi_cms_shape(rbi_ld(&f->layout), rbi_ld(RBI_CMS_WIDTH(f)),
                            rbi_ld(RBI_CMS_DEPTH(f)), &s));
    *n = s.bytes / 8;
    return rbi_word_at(m, rbi_ld(RBI_CMS_ARRAY(f)));
}

/* Estimates are never below the true count, and above it by more than
 * epsilon * N for at most a delta fraction of the keys (the sketch sized
 * by rb_cms_dims(epsilon, delta)). */
START_TEST(test_cms_zipf_never_under_and_within_epsilon)
{
    const double eps = 0.001, delta = 0.01;
    uint32_t *st = zipf_stream(42), width, depth, viol = 0, seen = 0;
    uint64_t *truth = calloc(UNIVERSE, sizeof(*truth));
    rb_cms_info_t in;

    ck_assert_int_eq(rb_cms_dims(eps, delta, &width, &depth), RB_OK);
    ck_assert_uint_eq(width, 2000);
    ck_assert_uint_eq(depth, 7);
    make("z", width, depth, 0, 0);
    for (uint32_t j = 0; j < STREAM; j++) {
        incr("z", st[j], 1);
        truth[st[j]]++;
    }
    for (uint32_t i = 0; i < UNIVERSE; i++) {
        uint64_t e = query(seg, "z", i);
        ck_assert_uint_ge(e, truth[i]);
        if ((double)(e - truth[i]) > eps * STREAM)
            viol++;
        seen++;
    }
    printf("cms: %u of %u keys over epsilon*N (delta allows %.0f)\n", viol, seen, delta * seen);
    ck_assert_uint_le(viol, (uint32_t)(delta * seen));
    ck_assert_int_eq(rb_cms_info(seg, "z", 1, &in), RB_OK);
    ck_assert_uint_eq(in.count, STREAM);
    ck_assert_uint_eq(in.width, width);
    ck_assert_uint_eq(in.depth, depth);
    free(truth);
    free(st);
}
END_TEST

/* INCRBY answers the estimates after each increment; QUERY of a key never
 * counted is 0 in a fresh sketch. */
START_TEST(test_cms_incrby_returns_estimates)
{
    rb_key_t k[2] = { { "foo", 3 }, { "bar", 3 } };
    uint64_t by[2] = { 10, 42 }, est[2];

    make("c", 1000, 5, 0, 0);
    ck_assert_int_eq(rb_cms_incrby(seg, "c", 1, k, by, 2, est), RB_OK);
    ck_assert_uint_eq(est[0], 10);
    ck_assert_uint_eq(est[1], 42);
    ck_assert_int_eq(rb_cms_query(seg, "c", 1, "baz", 3, &est[0]), RB_OK);
    ck_assert_uint_eq(est[0], 0);
}
END_TEST

/* A merge of two sketches equals, counter for counter, the sketch of the
 * union of their streams; with weights, the weighted sum. */
START_TEST(test_cms_merge_is_sketch_of_union)
{
    uint32_t *a = zipf_stream(1), *b = zipf_stream(2);
    const char *src[2] = { "a", "b" };
    size_t slen[2] = { 1, 1 };
    uint64_t w[2] = { 2, 3 }, n, nu;
    const _Atomic uint64_t *m, *u;
    rb_cms_info_t in;

    make("a", 500, 4, 0, 0);
    make("b", 500, 4, 0, 0);
    make("u", 500, 4, 0, 0);
    make("m", 500, 4, 0, 0);
    make("wu", 500, 4, 0, 0);
    for (uint32_t j = 0; j < STREAM / 10; j++) {
        incr("a", a[j], 1);
        incr("b", b[j], 1);
        incr("u", a[j], 1);
        incr("u", b[j], 1);
        incr("wu", a[j], 2);
        incr("wu", b[j], 3);
    }
    ck_assert_int_eq(rb_cms_merge(seg, "m", 1, src, slen, 2, NULL), RB_OK);
    m = words("m", &n);
    u = words("u", &nu);
    ck_assert_uint_eq(n, nu);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_uint_eq(rbi_ld(&m[i]), rbi_ld(&u[i]));
    ck_assert_int_eq(rb_cms_info(seg, "m", 1, &in), RB_OK);
    ck_assert_uint_eq(in.count, 2 * (STREAM / 10));
    /* Weighted, into a source itself. */
    ck_assert_int_eq(rb_cms_merge(seg, "a", 1, src, slen, 2, w), RB_OK);
    m = words("a", &n);
    u = words("wu", &nu);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_uint_eq(rbi_ld(&m[i]), rbi_ld(&u[i]));
    free(a);
    free(b);
}
END_TEST

START_TEST(test_cms_merge_refuses_other_shapes)
{
    const char *src[1] = { "b" };
    size_t slen[1] = { 1 };

    make("a", 500, 4, 0, 0);
    make("b", 501, 4, 0, 0);
    make("s", 500, 4, 1, 0);
    ck_assert_int_eq(rb_cms_merge(seg, "a", 1, src, slen, 1, NULL), RB_EINVAL);
    src[0] = "s";
    ck_assert_int_eq(rb_cms_merge(seg, "a", 1, src, slen, 1, NULL), RB_EINVAL);
    src[0] = "x";
    ck_assert_int_eq(rb_cms_merge(seg, "a", 1, src, slen, 1, NULL), RB_ENOENT);
    /* Sources keyed differently do not line up. */
    {
        rb_cms_params_t p = { .width = 500, .depth = 4 };   /* a random secret */
        const char *two[2] = { "a", "r" };
        size_t tl[2] = { 1, 1 };
        ck_assert_int_eq(rb_cms_create(seg, "r", 1, &p), RB_OK);
        ck_assert_int_eq(rb_cms_merge(seg, "a", 1, two, tl, 2, NULL), RB_EPERM);
        /* dest takes the sources' secret: a sketch merged from "r" alone
         * answers as "r" does. */
        rb_key_t k = { "key", 3 };
        uint64_t by = 5, e;
        ck_assert_int_eq(rb_cms_incrby(seg, "r", 1, &k, &by, 1, NULL), RB_OK);
        ck_assert_int_eq(rb_cms_merge(seg, "a", 1, &two[1], &tl[1], 1, NULL), RB_OK);
        ck_assert_int_eq(rb_cms_query(seg, "a", 1, "key", 3, &e), RB_OK);
        ck_assert_uint_eq(e, 5);
    }
}
END_TEST

/* After W counted increments every counter is exactly half (rounded down)
 * of what a twin without aging holds, and so is the count. */
START_TEST(test_cms_aging_halves_exactly)
{
    uint32_t *st = zipf_stream(7);
    const _Atomic uint64_t *g, *t;
    uint64_t n, nt;
    rb_cms_info_t in;

    for (int small = 0; small <= 1; small++) {
        char aged[16], twin[16];
        snprintf(aged, sizeof(aged), "g%d", small);
        snprintf(twin, sizeof(twin), "t%d", small);
        make(aged, 300, 4, small, 5000);
        make(twin, 300, 4, small, 0);
        for (uint32_t j = 0; j < 4999; j++) {
            incr(aged, st[j], 1);
            incr(twin, st[j], 1);
        }
        ck_assert_int_eq(rb_cms_info(seg, aged, 2, &in), RB_OK);
        ck_assert_uint_eq(in.agings, 0);
        incr(aged, st[4999], 1);
        incr(twin, st[4999], 1);
        ck_assert_int_eq(rb_cms_info(seg, aged, 2, &in), RB_OK);
        ck_assert_uint_eq(in.agings, 1);
        ck_assert_uint_eq(in.count, 2500);
        ck_assert_uint_eq(in.since_aging, 0);
        g = words(aged, &n);
        t = words(twin, &nt);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t tw = rbi_ld(&t[i]);
            for (unsigned sh = 0; sh < 64; sh += small ? 4 : 32) {
                uint64_t mask = small ? 0xF : 0xFFFFFFFF;
                ck_assert_uint_eq((rbi_ld(&g[i]) >> sh) & mask, ((tw >> sh) & mask) / 2);
            }
        }
    }
    free(st);
}
END_TEST

static _Atomic int race_done;

/* The writer: only key "k" is counted, one at a time (row 0 first, then
 * row 1, ...), halved every 16 counted: the writer spends much of its time
 * halving 4096 words, so readers often overlap a halving. */
static void *race_writer(void *arg)
{
    rb_key_t k = { "k", 1 };
    uint64_t one = 1;

    (void)arg;
    for (int i = 0; i < 200000; i++)
        ck_assert_int_eq(rb_cms_incrby(seg, "r", 1, &k, &one, 1, NULL), RB_OK);
    atomic_store(&race_done, 1);
    return NULL;
}

/* A reader racing the writer's halvings reads key k's rows in order in
 * one section, twice.  Counting alone only raises counters, so a row read
 * later is never below one read earlier, but for the one increment in
 * flight (its earlier rows stored first), and a row read again is never
 * below its first reading; a halving seen part-way would lower rows under
 * the reader.  Every reading is of one array: the one before a halving or
 * the one after it.  (A halving done in place, tried, fails this in two
 * runs of three.) */
START_TEST(test_cms_aging_reader_sees_old_or_halved)
{
    pthread_t t;
    uint64_t rows[RB_CMS_MAX_DEPTH], again[RB_CMS_MAX_DEPTH], reads = 0, maxc = 0;
    uint32_t depth;

    make("r", 1024, 8, 0, 16);
    atomic_store(&race_done, 0);
    ck_assert_int_eq(pthread_create(&t, NULL, race_writer, NULL), 0);
    while (!atomic_load(&race_done)) {
        uint64_t hi = 0;
        ck_assert_int_eq(rbi_cms_rows(seg, "r", 1, "k", 1, rows, again, &depth), RB_OK);
        ck_assert_uint_eq(depth, 8);
        for (uint32_t r = 0; r < depth; r++) {
            ck_assert_uint_ge(rows[r] + 1, hi);
            ck_assert_uint_ge(again[r], rows[r]);
            hi = rows[r] > hi ? rows[r] : hi;
        }
        maxc = hi > maxc ? hi : maxc;
        reads++;
    }
    pthread_join(t, NULL);
    printf("cms race: %llu readings, counters up to %llu\n", (unsigned long long)reads,
           (unsigned long long)maxc);
    /* Halving c + 16 each 16 increments keeps c below 32. */
    ck_assert_uint_lt(maxc, 32);
}
END_TEST

/* 4-bit counters saturate at 15 without touching their neighbours. */
START_TEST(test_cms_small_counters_saturate)
{
    rb_key_t k = { "hot", 3 };
    uint64_t by = 10, e;
    rb_cms_info_t in;

    make("s", 64, 4, 1, 0);
    ck_assert_int_eq(rb_cms_incrby(seg, "s", 1, &k, &by, 1, &e), RB_OK);
    ck_assert_uint_eq(e, 10);
    ck_assert_int_eq(rb_cms_incrby(seg, "s", 1, &k, &by, 1, &e), RB_OK);
    ck_assert_uint_eq(e, RB_CMS_SMALL_COUNTER_MAX);
    by = 1000;
    ck_assert_int_eq(rb_cms_incrby(seg, "s", 1, &k, &by, 1, &e), RB_OK);
    ck_assert_uint_eq(e, 15);
    /* An increment past the maximum from zero saturates too. */
    k.ptr = "cold";
    k.len = 4;
    ck_assert_int_eq(rb_cms_incrby(seg, "s", 1, &k, &by, 1, &e), RB_OK);
    ck_assert_uint_eq(e, 15);
    for (uint32_t i = 0; i < 200; i++)
        ck_assert_uint_le(query(seg, "s", i), 15);
    ck_assert_int_eq(rb_cms_info(seg, "s", 1, &in), RB_OK);
    ck_assert_int_eq(in.small, 1);
    ck_assert_uint_eq(in.bytes, 4 * 8 * 4);   /* 4 rows of 64 counters, 16 a word */
}
END_TEST

/* A name holds one kind: the Bloom calls refuse a sketch and the sketch
 * calls a Bloom filter; delete frees the slot for either. */
START_TEST(test_cms_kind_checks_and_delete)
{
    rb_bloom_params_t bp = { .capacity = 1000, .error_rate = 0.01 };
    rb_bloom_t *bf;
    rb_cms_params_t p = { .width = 10, .depth = 2 };
    uint64_t e;
    rb_segment_info_t si0, si;

    ck_assert_int_eq(rb_segment_info(seg, &si0), RB_OK);
    make("c", 100, 3, 0, 0);
    ck_assert_int_eq(rb_bloom_reserve(seg, "bf", 2, &bp), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(seg, "c", 1, &bp), RB_EEXIST);
    ck_assert_int_eq(rb_cms_create(seg, "bf", 2, &p), RB_EEXIST);
    ck_assert_int_eq(rb_bloom_open(seg, "c", 1, &bf), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_bloom_delete(seg, "c", 1), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_query(seg, "bf", 2, "x", 1, &e), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_delete(seg, "bf", 2), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_query(seg, "no", 2, "x", 1, &e), RB_ENOENT);
    ck_assert_int_eq(rb_segment_info(seg, &si), RB_OK);
    ck_assert_uint_eq(si.filters, 2);
    {
        rb_cms_info_t in;
        rb_bloom_stat_t bs;
        ck_assert_int_eq(rb_cms_info(seg, "c", 1, &in), RB_OK);
        ck_assert_uint_eq(in.bytes, 3 * 50 * 8);   /* 3 rows of 100 counters, 2 a word */
        ck_assert_int_eq(rb_bloom_open(seg, "bf", 2, &bf), RB_OK);
        ck_assert_int_eq(rb_bloom_info(bf, &bs), RB_OK);
        rb_bloom_close(bf);
        /* The kind's heap_bytes: the array, in whole 64-byte units. */
        ck_assert_uint_eq(si.used, si0.used + (in.bytes + 63) / 64 * 64 + (bs.bytes + 63) / 64 * 64);
    }
    ck_assert_int_eq(rb_cms_delete(seg, "c", 1), RB_OK);
    ck_assert_int_eq(rb_cms_query(seg, "c", 1, "x", 1, &e), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_delete(seg, "bf", 2), RB_OK);
    ck_assert_int_eq(rb_segment_info(seg, &si), RB_OK);
    ck_assert_uint_eq(si.filters, 0);
    ck_assert_uint_eq(si.used, si0.used);
    p.width = 0;
    ck_assert_int_eq(rb_cms_create(seg, "c", 1, &p), RB_EINVAL);
    p.width = 10;
    p.depth = RB_CMS_MAX_DEPTH + 1;
    ck_assert_int_eq(rb_cms_create(seg, "c", 1, &p), RB_EINVAL);
    ck_assert_int_eq(rb_cms_dims(0, 0.5, &p.width, &p.depth), RB_EINVAL);
    ck_assert_int_eq(rb_cms_dims(0.5, 1, &p.width, &p.depth), RB_EINVAL);
}
END_TEST

/* A dump restored, and a segment taken over by a new writer, keep every
 * counter and the sketch's figures. */
START_TEST(test_cms_dump_restore_and_takeover_keep_counters)
{
    uint32_t *st = zipf_stream(3);
    rb_test_dump_t d = { NULL, 0 };
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 8 };
    rb_segment_t *r, *w;
    char inst[64];
    uint64_t e[200];

    make("d", 700, 5, 0, 3000);
    make("d4", 700, 5, 1, 0);
    for (uint32_t j = 0; j < 10000; j++) {
        incr("d", st[j], 1);
        incr("d4", st[j], 1);
    }
    for (uint32_t i = 0; i < 100; i++) {
        e[i] = query(seg, "d", i);
        e[100 + i] = query(seg, "d4", i);
    }
    ck_assert_int_eq(rb_segment_dump(seg, rb_test_dump_fn, &d), RB_OK);
    ck_assert_int_eq(rb_segment_restore(NULL, &o, d.data, d.len, &r), RB_OK);
    for (uint32_t i = 0; i < 100; i++) {
        ck_assert_uint_eq(query(r, "d", i), e[i]);
        ck_assert_uint_eq(query(r, "d4", i), e[100 + i]);
    }
    rb_segment_close(r);
    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_restore(inst, &o, d.data, d.len, &r), RB_OK);
    rb_segment_go_live(r);
    rb_segment_close(r);
    ck_assert_int_eq(rb_segment_open_writer(inst, &w), RB_OK);
    for (uint32_t i = 0; i < 100; i++)
        ck_assert_uint_eq(query(w, "d", i), e[i]);
    /* The new writer goes on counting (and aging) the same sketch. */
    {
        rb_key_t k = { "item:0", 6 };
        uint64_t one = 1, est;
        ck_assert_int_eq(rb_cms_incrby(w, "d", 1, &k, &one, 1, &est), RB_OK);
        ck_assert_uint_ge(est, 1);
    }
    rb_segment_close(w);
    ck_assert_int_eq(rb_segment_unlink(inst), 0);
    free(d.data);
    free(st);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("cms",
                        RB_TCASE("estimates", 120, setup, teardown,
                                 test_cms_zipf_never_under_and_within_epsilon,
                                 test_cms_incrby_returns_estimates,
                                 test_cms_small_counters_saturate),
                        RB_TCASE("merge", 120, setup, teardown,
                                 test_cms_merge_is_sketch_of_union,
                                 test_cms_merge_refuses_other_shapes),
                        RB_TCASE("aging", 120, setup, teardown,
                                 test_cms_aging_halves_exactly,
                                 test_cms_aging_reader_sees_old_or_halved),
                        RB_TCASE("kind", 120, setup, teardown,
                                 test_cms_kind_checks_and_delete,
                                 test_cms_dump_restore_and_takeover_keep_counters));
}
