/*
 * check_cbf.c - counting Bloom filters (lib/cbf/cbf.c, cbf_write.c,
 * cbf_dump.c): the sizing, no false negatives after adds and deletes, the
 * false positive rate beside rb_cbf_fpr_formula at 4 and 8 bits, a refused
 * delete that changes nothing, saturation (never lowered), a reader
 * thread racing a writer's churn (zero misses), contains_many, the dump /
 * load round trip, the errors and the other kinds' WRONGTYPE, the handle
 * rebinding, and the filter kept by a segment dump (the kind's extents and
 * heap bytes).
 */
#include <math.h>
#include <pthread.h>

#include "rb_test.h"
#include "cbf_impl.h"

static char inst[96];
static rb_segment_t *seg;
static unsigned char secret[RB_BLOOM_SECRET_BYTES];

static void setup(void)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 256u << 20, .max_filters = 16 };

    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_create(inst, &o, &seg), RB_OK);
    for (size_t i = 0; i < sizeof(secret); i++)
        secret[i] = (unsigned char)(i * 37 + 11);
}

static void teardown(void)
{
    rb_segment_close(seg);
    rb_segment_unlink(inst);
}

/* Key i of family tag: 8 bytes. */
static rb_key_t key_of(uint64_t *buf, unsigned tag, uint64_t i)
{
    rb_key_t k = { buf, 8 };

    *buf = i * 0x9E3779B97F4A7C15ULL ^ (uint64_t)tag << 56;
    return k;
}

static void make(rb_segment_t *s, const char *name, uint64_t cap, double p, uint32_t bits)
{
    rb_cbf_params_t pr = { cap, p, bits, secret };

    ck_assert_int_eq(rb_cbf_reserve(s, name, strlen(name), &pr), RB_OK);
}

static int add(rb_segment_t *s, const char *name, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    return rb_cbf_add(s, name, strlen(name), k.ptr, k.len);
}

static int del(rb_segment_t *s, const char *name, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    return rb_cbf_del(s, name, strlen(name), k.ptr, k.len);
}

static int has(const rb_cbf_t *h, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    return rb_cbf_contains(h, k.ptr, k.len);
}

static uint64_t count_of(const rb_cbf_t *h, unsigned tag, uint64_t i)
{
    uint64_t b, c = UINT64_MAX;
    rb_key_t k = key_of(&b, tag, i);

    ck_assert_int_eq(rb_cbf_count(h, k.ptr, k.len, &c), RB_OK);
    return c;
}

static rb_cbf_t *open_cbf(const rb_segment_t *s, const char *name)
{
    rb_cbf_t *h = NULL;

    ck_assert_int_eq(rb_cbf_open(s, name, strlen(name), &h), RB_OK);
    return h;
}

/* The counter array's bytes of filter name (a copy). */
static unsigned char *array_copy(const rb_segment_t *s, const char *name, size_t *len)
{
    rb_cbf_t *h = open_cbf(s, name);
    int64_t next;
    size_t n;
    unsigned char *buf;

    ck_assert_int_eq(rbi_cbf_dump(h, 1, SIZE_MAX, NULL, &n, &next), RB_OK);
    buf = malloc(n ? n : 1);
    ck_assert_int_eq(rbi_cbf_dump(h, 1, SIZE_MAX, buf, &n, &next), RB_OK);
    rb_cbf_close(h);
    *len = n;
    return buf;
}

START_TEST(test_cbf_sizing)
{
    uint64_t m;
    uint32_t k;

    /* 1000 at 1%: ceil(1000 x ln 100 / ln^2 2) = 9586, a multiple of 16. */
    ck_assert_int_eq(rb_cbf_size(1000, 0.01, 4, &m, &k), RB_OK);
    ck_assert_uint_eq(m, 9600);
    ck_assert_uint_eq(k, 7);
    ck_assert_int_eq(rb_cbf_size(1000, 0.01, 8, &m, &k), RB_OK);
    ck_assert_uint_eq(m, 9592);
    ck_assert_int_eq(rb_cbf_size(1, 0.5, 4, &m, &k), RB_OK);
    ck_assert_uint_eq(m, 16);
    ck_assert_uint_eq(k, 1);
    ck_assert_int_eq(rb_cbf_size(0, 0.01, 4, &m, &k), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_size(10, 0, 4, &m, &k), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_size(10, 1, 4, &m, &k), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_size(10, 0.01, 6, &m, &k), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_size(RB_CBF_MAX_CAPACITY + 1, 0.01, 4, &m, &k), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_size(10, 1e-12, 4, &m, &k), RB_EINVAL);   /* k = 40 > 32 */
    ck_assert_double_eq_tol(rb_cbf_fpr_formula(9586, 7, 1000), 0.01, 0.0005);
    ck_assert(isnan(rb_cbf_fpr_formula(0, 7, 1)));
}
END_TEST

/* Add n, delete every third: the rest all present, the deleted absent
 * but for false positives (within twice the formula at the load). */
static void adds_and_deletes(uint32_t bits)
{
    const uint64_t n = 20000;
    uint64_t miss = 0, fp = 0;
    rb_cbf_info_t in;
    rb_cbf_t *h;

    make(seg, "d", n, 0.01, bits);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_int_eq(add(seg, "d", 1, i), 1);
    for (uint64_t i = 0; i < n; i += 3)
        ck_assert_int_eq(del(seg, "d", 1, i), 1);
    h = open_cbf(seg, "d");
    for (uint64_t i = 0; i < n; i++) {
        int r = has(h, 1, i);
        if (i % 3 != 0)
            miss += r != 1;
        else
            fp += r == 1;
    }
    ck_assert_uint_eq(miss, 0);
    ck_assert_int_eq(rb_cbf_info(h, &in), RB_OK);
    ck_assert_uint_eq(in.items, n - (n + 2) / 3);
    ck_assert_uint_eq(in.deletes, (n + 2) / 3);
    ck_assert_uint_eq(in.saturated, 0);
    ck_assert_uint_le(fp, 2.0 * rb_cbf_fpr_formula(in.counters, in.k, in.items) * (n / 3) + 10);
    rb_cbf_close(h);
}

START_TEST(test_cbf_adds_and_deletes_4) { adds_and_deletes(4); }
END_TEST
START_TEST(test_cbf_adds_and_deletes_8) { adds_and_deletes(8); }
END_TEST

/* The measured FPR at capacity within 25% of the formula's (200,000
 * probes of absent keys: the sampling error is ~2% of 1%). */
START_TEST(test_cbf_fpr_beside_formula)
{
    static const uint32_t bits[] = { 4, 8 };

    for (int b = 0; b < 2; b++) {
        const uint64_t n = 50000, probes = 200000;
        uint64_t fp = 0;
        rb_cbf_info_t in;
        rb_cbf_t *h;
        double want, got;
        char name[8];

        snprintf(name, sizeof(name), "p%u", bits[b]);
        make(seg, name, n, 0.01, bits[b]);
        for (uint64_t i = 0; i < n; i++)
            ck_assert_int_eq(add(seg, name, 2, i), 1);
        h = open_cbf(seg, name);
        for (uint64_t i = 0; i < probes; i++)
            fp += has(h, 3, i) == 1;
        ck_assert_int_eq(rb_cbf_info(h, &in), RB_OK);
        want = rb_cbf_fpr_formula(in.counters, in.k, n);
        got = (double)fp / (double)probes;
        printf("cbf fpr %u-bit: %.5f, formula %.5f\n", bits[b], got, want);
        ck_assert_double_le(fabs(got - want), 0.25 * want);
        rb_cbf_close(h);
    }
}
END_TEST

/* A delete of a key one of whose counters is 0 answers 0 and changes no
 * byte; counting: two adds take two deletes; the count is the smallest. */
START_TEST(test_cbf_refused_delete_changes_nothing)
{
    unsigned char *a, *b;
    size_t la, lb;
    uint64_t refused = 0;
    rb_cbf_t *h;

    make(seg, "r", 1000, 0.01, 4);
    for (uint64_t i = 0; i < 500; i++)
        ck_assert_int_eq(add(seg, "r", 4, i), 1);
    h = open_cbf(seg, "r");
    a = array_copy(seg, "r", &la);
    for (uint64_t i = 0; i < 1000; i++) {
        if (has(h, 5, i) == 0) {
            ck_assert_int_eq(del(seg, "r", 5, i), 0);
            refused++;
        }
    }
    ck_assert_uint_gt(refused, 950);
    b = array_copy(seg, "r", &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(a, b, la);
    ck_assert_uint_eq(rbi_ld(RBI_CBF_DELETES(rbi_dir_slot(rbi_seg_map(seg), 0))), 0);
    ck_assert_int_eq(add(seg, "r", 4, 0), 1);
    ck_assert_uint_ge(count_of(h, 4, 0), 2);
    ck_assert_int_eq(del(seg, "r", 4, 0), 1);
    ck_assert_int_eq(del(seg, "r", 4, 0), 1);
    ck_assert_uint_le(count_of(h, 4, 0), 1);   /* 1 only if other keys share all of its counters */
    rb_cbf_close(h);
    free(a);
    free(b);
}
END_TEST

/* A counter stops at its maximum and no delete lowers it again: the key
 * stays found after as many deletes as adds. */
START_TEST(test_cbf_saturation)
{
    static const uint32_t bits[] = { 4, 8 };

    for (int b = 0; b < 2; b++) {
        uint64_t max = (1u << bits[b]) - 1, cnt, key = 42;
        rb_cbf_info_t in;
        rb_cbf_t *h;
        char name[8];

        snprintf(name, sizeof(name), "s%u", bits[b]);
        make(seg, name, 1000, 0.01, bits[b]);
        h = open_cbf(seg, name);
        for (uint64_t i = 0; i < max + 10; i++)
            ck_assert_int_eq(rb_cbf_add(seg, name, strlen(name), &key, 8), 1);
        ck_assert_int_eq(rb_cbf_count(h, &key, 8, &cnt), RB_OK);
        ck_assert_uint_eq(cnt, max);
        ck_assert_int_eq(rb_cbf_info(h, &in), RB_OK);
        ck_assert_uint_ge(in.saturated, 5);
        ck_assert_uint_le(in.saturated, in.k);
        for (uint64_t i = 0; i < max + 10; i++)
            ck_assert_int_eq(rb_cbf_del(seg, name, strlen(name), &key, 8), 1);
        ck_assert_int_eq(rb_cbf_count(h, &key, 8, &cnt), RB_OK);
        ck_assert_uint_eq(cnt, max);
        ck_assert_int_eq(rb_cbf_contains(h, &key, 8), 1);
        ck_assert_int_eq(rb_cbf_info(h, &in), RB_OK);
        ck_assert_uint_eq(in.items, 0);
        rb_cbf_close(h);
    }
}
END_TEST

#define RACE_KEPT 5000u

typedef struct race {
    rb_cbf_t *h;
    _Atomic int done;
    uint64_t probes, misses, errors;
} race_t;

static void *race_reader(void *arg)
{
    race_t *r = arg;
    rb_key_t ks[64];
    uint64_t kb[64];
    uint8_t out[64];

    while (!atomic_load(&r->done)) {
        for (uint64_t i = 0; i < RACE_KEPT; i += 64) {
            int64_t n;
            for (uint32_t j = 0; j < 64; j++)
                ks[j] = key_of(&kb[j], 8, (i + j) % RACE_KEPT);
            n = rb_cbf_contains_many(r->h, ks, 64, out);
            if (n < 0)
                r->errors++;
            else
                r->misses += 64 - (uint64_t)n;
            r->probes += 64;
            if (has(r->h, 8, i) != 1)
                r->misses++;
            r->probes++;
        }
    }
    return NULL;
}

/* A reader probing kept keys while the writer adds and deletes others,
 * sharing their counters: zero misses. */
START_TEST(test_cbf_reader_races_churn)
{
    race_t r = { NULL, 0, 0, 0, 0 };
    pthread_t t;
    const uint64_t rounds = 300000;

    make(seg, "c", 20000, 0.01, 4);
    for (uint64_t i = 0; i < RACE_KEPT; i++)
        ck_assert_int_eq(add(seg, "c", 8, i), 1);
    r.h = open_cbf(seg, "c");
    ck_assert_int_eq(pthread_create(&t, NULL, race_reader, &r), 0);
    for (uint64_t i = 0; i < rounds; i++) {
        if (add(seg, "c", 9, i) != 1)
            ck_abort_msg("race add %lu", (unsigned long)i);
        if (i >= 10000 && del(seg, "c", 9, i - 10000) != 1)
            ck_abort_msg("race del %lu", (unsigned long)i);
    }
    atomic_store(&r.done, 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    printf("cbf race probes=%lu misses=%lu errors=%lu\n", (unsigned long)r.probes,
           (unsigned long)r.misses, (unsigned long)r.errors);
    ck_assert_uint_gt(r.probes, 0);
    ck_assert_uint_eq(r.misses, 0);
    ck_assert_uint_eq(r.errors, 0);
    rb_cbf_close(r.h);
}
END_TEST

/* Whole dump (header + chunks of 100 bytes) loads into another filter:
 * same dump, same answers; bad headers refused with a reason. */
START_TEST(test_cbf_dump_round_trip)
{
    unsigned char hdr[RBI_CBF_DUMP_HEADER], bad[RBI_CBF_DUMP_HEADER], *data;
    size_t hlen, len, la, lb;
    int64_t next, it;
    const char *why;
    rb_cbf_t *h;
    unsigned char *a, *b;

    make(seg, "src", 3000, 0.001, 8);
    for (uint64_t i = 0; i < 2000; i++)
        ck_assert_int_eq(add(seg, "src", 10, i), 1);
    h = open_cbf(seg, "src");
    ck_assert_int_eq(rbi_cbf_dump(h, 0, 100, hdr, &hlen, &next), RB_OK);
    ck_assert_uint_eq(hlen, RBI_CBF_DUMP_HEADER);
    ck_assert_int_eq(next, 1);
    ck_assert_int_eq(rbi_cbf_load_header(seg, "dst", 3, hdr, hlen, &why), RB_OK);
    ck_assert_int_eq(rbi_cbf_load_header(seg, "dst", 3, hdr, hlen, &why), RB_EEXIST);
    data = malloc(100);
    for (it = 1;; it = next) {
        ck_assert_int_eq(rbi_cbf_dump(h, it, 100, data, &len, &next), RB_OK);
        if (len == 0)
            break;
        ck_assert_int_eq(rbi_cbf_load_chunk(seg, "dst", 3, next, data, len, &why), RB_OK);
    }
    ck_assert_int_eq(next, 0);
    ck_assert_int_eq(rbi_cbf_load_chunk(seg, "dst", 3, 1u << 30, data, 10, &why), RB_EINVAL);
    ck_assert_str_eq(why, "ERR invalid offset - no link found");
    a = array_copy(seg, "src", &la);
    b = array_copy(seg, "dst", &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(a, b, la);
    rb_cbf_close(h);
    h = open_cbf(seg, "dst");
    for (uint64_t i = 0; i < 2000; i++)
        ck_assert_int_eq(has(h, 10, i), 1);
    ck_assert_int_eq(del(seg, "dst", 10, 5), 1);
    rb_cbf_close(h);
    /* Bad headers: a changed size, counter bits, an item count over capacity. */
    memcpy(bad, hdr, sizeof(bad));
    bad[24] ^= 1;
    ck_assert_int_eq(rbi_cbf_load_header(seg, "x", 1, bad, sizeof(bad), &why), RB_EINVAL);
    ck_assert_str_eq(why, "ERR bad filter size");
    memcpy(bad, hdr, sizeof(bad));
    bad[12] = 6;
    ck_assert_int_eq(rbi_cbf_load_header(seg, "x", 1, bad, sizeof(bad), &why), RB_EINVAL);
    ck_assert_str_eq(why, "ERR bad counter size");
    memcpy(bad, hdr, sizeof(bad));
    bad[47] = 1;
    ck_assert_int_eq(rbi_cbf_load_header(seg, "x", 1, bad, sizeof(bad), &why), RB_EINVAL);
    ck_assert_str_eq(why, "ERR bad item count");
    ck_assert_int_eq(rbi_cbf_load_header(seg, "x", 1, hdr, hlen - 1, &why), RB_EINVAL);
    ck_assert_str_eq(why, "ERR received bad data");
    free(data);
    free(a);
    free(b);
}
END_TEST

START_TEST(test_cbf_errors_and_kinds)
{
    rb_cbf_params_t p = { 100, 0.01, 4, NULL };
    rb_cuckoo_params_t cp = { 100, 2, 20, 1, 8, NULL };
    rb_bloom_params_t bp = { .capacity = 100, .error_rate = 0.01, .expansion = 2 };
    rb_cbf_t *h;
    rb_bloom_t *bf;
    rb_cuckoo_t *cf;
    uint64_t k = 1, c;
    uint8_t out[1];

    ck_assert_int_eq(rb_cbf_reserve(NULL, "a", 1, &p), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_reserve(seg, "", 0, &p), RB_EINVAL);
    p.counter_bits = 5;
    ck_assert_int_eq(rb_cbf_reserve(seg, "a", 1, &p), RB_EINVAL);
    p.counter_bits = 4;
    p.error_rate = 1.5;
    ck_assert_int_eq(rb_cbf_reserve(seg, "a", 1, &p), RB_EINVAL);
    p.error_rate = 0.01;
    ck_assert_int_eq(rb_cbf_reserve(seg, "a", 1, &p), RB_OK);
    ck_assert_int_eq(rb_cbf_reserve(seg, "a", 1, &p), RB_EEXIST);
    ck_assert_int_eq(rb_cbf_add(seg, "none", 4, &k, 8), RB_ENOENT);
    ck_assert_int_eq(rb_cbf_del(seg, "none", 4, &k, 8), RB_ENOENT);
    ck_assert_int_eq(rb_cbf_delete(seg, "none", 4), RB_ENOENT);
    ck_assert_int_eq(rb_cbf_open(seg, "none", 4, &h), RB_ENOENT);
    ck_assert_int_eq(rb_cbf_add(seg, "a", 1, NULL, 3), RB_EINVAL);
    /* Other kinds on its name, it on theirs. */
    ck_assert_int_eq(rb_bloom_reserve(seg, "bf", 2, &bp), RB_OK);
    ck_assert_int_eq(rb_cuckoo_reserve(seg, "cf", 2, &cp), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "a", 1, &bf), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cuckoo_open(seg, "a", 1, &cf), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cuckoo_add(seg, "a", 1, &k, 8, 0), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_delete(seg, "a", 1), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cbf_open(seg, "bf", 2, &h), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cbf_open(seg, "cf", 2, &h), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cbf_add(seg, "bf", 2, &k, 8), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cbf_delete(seg, "cf", 2), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cbf_reserve(seg, "cf", 2, &p), RB_EEXIST);
    /* A handle: deleted filter answers ENOENT; made again, it rebinds. */
    h = open_cbf(seg, "a");
    ck_assert_int_eq(rb_cbf_add(seg, "a", 1, &k, 8), 1);
    ck_assert_int_eq(rb_cbf_contains(h, &k, 8), 1);
    ck_assert_int_eq(rb_cbf_contains(h, NULL, 1), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_count(h, &k, 8, NULL), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_contains_many(h, NULL, 1, out), RB_EINVAL);
    ck_assert_int_eq(rb_cbf_delete(seg, "a", 1), RB_OK);
    ck_assert_int_eq(rb_cbf_contains(h, &k, 8), RB_ENOENT);
    ck_assert_int_eq(rb_cbf_count(h, &k, 8, &c), RB_ENOENT);
    ck_assert_int_eq(rb_cbf_reserve(seg, "a", 1, &p), RB_OK);
    ck_assert_int_eq(rb_cbf_contains(h, &k, 8), 0);
    rb_cbf_close(h);
}
END_TEST

START_TEST(test_cbf_segment_dump_keeps_filter)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 256u << 20, .max_filters = 16 };
    rb_test_dump_t d = { NULL, 0 };
    rb_cbf_info_t a, b;
    rb_segment_info_t s0, s1;
    rb_segment_t *r;
    rb_cbf_t *h;

    ck_assert_int_eq(rb_segment_info(seg, &s0), RB_OK);
    make(seg, "s", 10000, 0.01, 8);
    for (uint64_t i = 0; i < 5000; i++)
        ck_assert_int_eq(add(seg, "s", 12, i), 1);
    h = open_cbf(seg, "s");
    ck_assert_int_eq(rb_cbf_info(h, &a), RB_OK);
    rb_cbf_close(h);
    /* The kind's heap_bytes: the array, in whole 64-byte units. */
    ck_assert_int_eq(rb_segment_info(seg, &s1), RB_OK);
    ck_assert_uint_eq(s1.filters, s0.filters + 1);
    ck_assert_uint_ge(s1.used - s0.used, a.bytes);
    ck_assert_uint_lt(s1.used - s0.used, a.bytes + 64u);
    ck_assert_int_eq(rb_segment_dump(seg, rb_test_dump_fn, &d), RB_OK);
    ck_assert_int_eq(rb_segment_restore(NULL, &o, d.data, d.len, &r), RB_OK);
    h = open_cbf(r, "s");
    ck_assert_int_eq(rb_cbf_info(h, &b), RB_OK);
    ck_assert_mem_eq(&a, &b, sizeof(a));
    for (uint64_t i = 0; i < 5000; i++)
        ck_assert_int_eq(has(h, 12, i), 1);
    /* ... and is a working writer segment. */
    ck_assert_int_eq(add(r, "s", 13, 1), 1);
    ck_assert_int_eq(has(h, 13, 1), 1);
    rb_cbf_close(h);
    rb_segment_close(r);
    free(d.data);
    ck_assert_int_eq(rb_cbf_delete(seg, "s", 1), RB_OK);
    ck_assert_int_eq(rb_segment_info(seg, &s1), RB_OK);
    ck_assert_uint_eq(s1.used, s0.used);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("cbf",
                        RB_TCASE("basics", 300, setup, teardown, test_cbf_sizing,
                                 test_cbf_adds_and_deletes_4, test_cbf_adds_and_deletes_8,
                                 test_cbf_refused_delete_changes_nothing, test_cbf_saturation),
                        RB_TCASE("fpr", 300, setup, teardown, test_cbf_fpr_beside_formula),
                        RB_TCASE("race", 300, setup, teardown, test_cbf_reader_races_churn),
                        RB_TCASE("dump", 300, setup, teardown, test_cbf_dump_round_trip,
                                 test_cbf_segment_dump_keeps_filter),
                        RB_TCASE("errors", 300, setup, teardown, test_cbf_errors_and_kinds));
}
