/*
 * check_cuckoo.c - cuckoo filters (lib/cuckoo/cuckoo.c, cuckoo_write.c,
 * cuckoo_dump.c): no false negatives at high load with deletes, the false
 * positive rate beside rb_cuckoo_fpr_formula, deleted keys answering 1
 * only through a remaining twin, a reader racing moves and growth (zero
 * misses), deterministic arrays and the dump / load round trip, the
 * errors, a writer that died inside a move (readers busy, takeover
 * repairs), and the filter kept by a segment dump.
 */
#include <math.h>
#include <pthread.h>

#include "rb_test.h"
#include "bloom.h"
#include "cuckoo_impl.h"

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

static void make(rb_segment_t *s, const char *name, uint64_t cap, uint32_t b, uint32_t fp,
                 uint32_t exp, uint32_t iters)
{
    rb_cuckoo_params_t p = { .capacity = cap, .bucket_size = b, .max_iterations = iters,
                             .expansion = exp, .fp_bits = fp, .secret = secret };

    ck_assert_int_eq(rb_cuckoo_reserve(s, name, strlen(name), &p), RB_OK);
}

static int add(rb_segment_t *s, const char *name, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    return rb_cuckoo_add(s, name, strlen(name), k.ptr, k.len, 0);
}

static int del(rb_segment_t *s, const char *name, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    return rb_cuckoo_del(s, name, strlen(name), k.ptr, k.len);
}

static int has(const rb_cuckoo_t *h, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    return rb_cuckoo_contains(h, k.ptr, k.len);
}

static rb_cuckoo_t *open_cf(const rb_segment_t *s, const char *name)
{
    rb_cuckoo_t *h;

    ck_assert_int_eq(rb_cuckoo_open(s, name, strlen(name), &h), RB_OK);
    return h;
}

/* The slot of filter name (tests only peek at its words). */
static rb_filter_shm_t *slot_of(const rb_segment_t *s, const char *name)
{
    int64_t i = rbi_dir_find((rb_segment_t *)s, name, strlen(name));

    ck_assert_int_ge(i, 0);
    return rbi_dir_slot(rbi_seg_map(s), (uint64_t)i);
}

/* Keys 0 .. n-1 of tag present (contains and contains_many), none missing. */
static void all_present(const rb_cuckoo_t *h, unsigned tag, uint64_t n, uint64_t skip_mod)
{
    static uint64_t kb[1000];
    rb_key_t keys[1000];
    uint8_t out[1000];
    uint64_t miss = 0;

    for (uint64_t i = 0; i < n; i++)
        if ((skip_mod == 0 || i % skip_mod != 0) && has(h, tag, i) != 1)
            miss++;
    for (uint64_t base = 0; base < n; base += 1000) {
        size_t m = 0;
        for (uint64_t i = base; i < n && i < base + 1000; i++)
            if (skip_mod == 0 || i % skip_mod != 0) {
                keys[m] = key_of(&kb[m], tag, i);
                m++;
            }
        if (rb_cuckoo_contains_many(h, keys, m, out) != (int64_t)m)
            miss++;
    }
    ck_assert_uint_eq(miss, 0);
}

/* 10^6 adds, every 16th key deleted again 1000 adds later: every key
 * added and not deleted is found at the end (load ~0.89, bucket 4). */
static void no_false_negatives(uint32_t fp)
{
    const uint64_t n = 1000000;
    rb_cuckoo_t *h;
    rb_cuckoo_info_t in;

    make(seg, "f", 1u << 20, 4, fp, 1, 500);
    for (uint64_t i = 0; i < n; i++) {
        if (add(seg, "f", 1, i) != 1)
            ck_abort_msg("add %lu", (unsigned long)i);
        if (i >= 1000 && (i - 1000) % 16 == 0 && del(seg, "f", 1, i - 1000) != 1)
            ck_abort_msg("del %lu", (unsigned long)(i - 1000));
    }
    for (uint64_t j = (n - 1000) / 16 * 16; j < n; j += 16)
        if (j + 1000 > n - 1)
            ck_assert_int_eq(del(seg, "f", 1, j), 1);
    h = open_cf(seg, "f");
    all_present(h, 1, n, 16);
    ck_assert_int_eq(rb_cuckoo_info(h, &in), RB_OK);
    ck_assert_uint_eq(in.items, n - n / 16);
    ck_assert_uint_eq(in.deletes, n / 16);
    printf("cuckoo no-false-negatives fp=%u b=4 items=%lu layers=%u load=%.3f moves=%lu "
           "bits/key=%.2f\n", fp, (unsigned long)in.items, in.layers,
           (double)in.items / (double)(in.buckets * 4),
           (unsigned long)rbi_ld(RBI_CF_MOVES(slot_of(seg, "f"))),
           (double)in.bytes * 8 / (double)in.items);
    rb_cuckoo_close(h);
}

START_TEST(test_cuckoo_no_false_negatives_fp8) { no_false_negatives(8); }
END_TEST
START_TEST(test_cuckoo_no_false_negatives_fp12) { no_false_negatives(12); }
END_TEST
START_TEST(test_cuckoo_no_false_negatives_fp16) { no_false_negatives(16); }
END_TEST

/* One row of the FPR table: a one-layer filter of 2^14 buckets filled to
 * load, then probes keys never added. */
static void fpr_row(uint32_t fp, uint32_t b, double load, uint64_t probes)
{
    static uint64_t kb[1024];
    rb_key_t keys[1024];
    uint8_t out[1024];
    uint64_t nb = 1u << 14, n = (uint64_t)(load * (double)(nb * b)), hits = 0;
    char name[16];
    rb_cuckoo_t *h;
    rb_cuckoo_info_t in;
    double formula, measured;

    snprintf(name, sizeof(name), "p%u_%u", fp, b);
    make(seg, name, nb * b, b, fp, 0, 500);
    for (uint64_t i = 0; i < n; i++)
        if (add(seg, name, 2, i) != 1)
            ck_abort_msg("fpr fill fp=%u b=%u at %lu", fp, b, (unsigned long)i);
    h = open_cf(seg, name);
    ck_assert_int_eq(rb_cuckoo_info(h, &in), RB_OK);
    ck_assert_uint_eq(in.layers, 1);
    for (uint64_t base = 0; base < probes; base += 1024) {
        for (size_t j = 0; j < 1024; j++)
            keys[j] = key_of(&kb[j], 3, base + j);
        hits += (uint64_t)rb_cuckoo_contains_many(h, keys, 1024, out);
    }
    probes = (probes + 1023) / 1024 * 1024;
    measured = (double)hits / (double)probes;
    formula = rb_cuckoo_fpr_formula(fp, b, (double)n / (double)(nb * b));
    printf("cuckoo fpr fp=%u b=%u load=%.2f probes=%lu measured=%.6f formula=%.6f "
           "bits/key=%.2f\n", fp, b, load, (unsigned long)probes, measured, formula,
           (double)in.bytes * 8 / (double)n);
    ck_assert(measured >= 0.5 * formula - 3.0 / (double)probes);
    ck_assert(measured <= 1.5 * formula + 3.0 / (double)probes);
    ck_assert_int_eq(rb_cuckoo_delete(seg, name, strlen(name)), RB_OK);
    rb_cuckoo_close(h);
}

START_TEST(test_cuckoo_fpr_table)
{
    static const uint64_t probes[3] = { 200000, 2000000, 4000000 };
    static const uint32_t fps[3] = { 8, 12, 16 };

    for (int f = 0; f < 3; f++) {
        fpr_row(fps[f], 2, 0.84, probes[f]);
        fpr_row(fps[f], 4, 0.95, probes[f]);
    }
    ck_assert(isnan(rb_cuckoo_fpr_formula(10, 4, 0.5)));
    ck_assert(isnan(rb_cuckoo_fpr_formula(8, 0, 0.5)));
    ck_assert(isnan(rb_cuckoo_fpr_formula(8, 4, 0)));
    ck_assert(isnan(rb_cuckoo_fpr_formula(8, 4, 1.5)));
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* fp and the smaller of its two buckets (layer 0), one word. */
static uint64_t twin_id(const rbi_cf_shape_t *s, uint64_t nb, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);
    rbi_cf_key_t ck = rbi_cf_hash(secret, s, k.ptr, k.len);
    uint64_t i1 = rbi_cf_home(ck.h1, nb), i2 = rbi_cf_alt(i1, ck.fp, nb);

    return ck.fp << 48 | (i1 < i2 ? i1 : i2);
}

/* Add N, delete the even half: a deleted key answers 1 only if a kept
 * key has its fingerprint and buckets; kept keys all answer 1. */
START_TEST(test_cuckoo_deleted_absent_unless_twin)
{
    const uint64_t n = 60000, nb = 1u << 14;
    uint64_t *kept = malloc(n / 2 * sizeof(uint64_t)), still = 0, unexplained = 0;
    rbi_cf_shape_t s;
    rb_cuckoo_t *h;

    ck_assert_ptr_nonnull(kept);
    ck_assert(rbi_cf_shape(RBI_LAYOUT_CF8, 4, &s));
    make(seg, "d", nb * 4, 4, 8, 0, 500);
    for (uint64_t i = 0; i < n; i++)
        ck_assert_int_eq(add(seg, "d", 4, i), 1);
    for (uint64_t i = 0; i < n; i += 2)
        ck_assert_int_eq(del(seg, "d", 4, i), 1);
    for (uint64_t i = 1; i < n; i += 2)
        kept[i / 2] = twin_id(&s, nb, 4, i);
    qsort(kept, n / 2, sizeof(uint64_t), cmp_u64);
    h = open_cf(seg, "d");
    for (uint64_t i = 0; i < n; i += 2) {
        uint64_t id = twin_id(&s, nb, 4, i);
        if (has(h, 4, i) != 1)
            continue;
        still++;
        if (bsearch(&id, kept, n / 2, sizeof(uint64_t), cmp_u64) == NULL)
            unexplained++;
    }
    printf("cuckoo deleted-still-present fp=8 b=4 deleted=%lu still=%lu rate=%.5f "
           "unexplained=%lu\n", (unsigned long)(n / 2), (unsigned long)still,
           (double)still / (double)(n / 2), (unsigned long)unexplained);
    ck_assert_uint_eq(unexplained, 0);
    all_present(h, 4, n, 2);
    rb_cuckoo_close(h);
    free(kept);
}
END_TEST

typedef struct race {
    rb_cuckoo_t *h;
    _Atomic int done;
    uint64_t probes, misses, busy;
} race_t;

#define RACE_KEPT 2000u

static void *race_reader(void *arg)
{
    race_t *r = arg;
    static uint64_t kb[64];
    rb_key_t keys[64];
    uint8_t out[64];

    while (!atomic_load(&r->done)) {
        for (uint64_t i = 0; i < RACE_KEPT; i++) {
            int rc = has(r->h, 5, i);
            r->probes++;
            r->misses += rc == 0;
            r->busy += rc < 0;
        }
        for (uint64_t base = 0; base < RACE_KEPT; base += 64) {
            int64_t got;
            for (size_t j = 0; j < 64; j++)
                keys[j] = key_of(&kb[j], 5, (base + j) % RACE_KEPT);
            got = rb_cuckoo_contains_many(r->h, keys, 64, out);
            r->probes += 64;
            if (got < 0)
                r->busy++;
            else
                r->misses += 64 - (uint64_t)got;
        }
    }
    return NULL;
}

/* A reader probing present keys while the writer adds (moves, growth)
 * and deletes others: zero misses. */
START_TEST(test_cuckoo_reader_races_moves)
{
    race_t r = { NULL, 0, 0, 0, 0 };
    pthread_t t;
    const uint64_t more = 200000;

    make(seg, "r", 1024, 2, 12, 2, 200);
    for (uint64_t i = 0; i < RACE_KEPT; i++)
        ck_assert_int_eq(add(seg, "r", 5, i), 1);
    r.h = open_cf(seg, "r");
    ck_assert_int_eq(pthread_create(&t, NULL, race_reader, &r), 0);
    for (uint64_t i = 0; i < more; i++) {
        if (add(seg, "r", 6, i) != 1)
            ck_abort_msg("race add %lu", (unsigned long)i);
        if (i % 3 == 0 && i >= 300 && del(seg, "r", 6, i - 300) != 1)
            ck_abort_msg("race del %lu", (unsigned long)i);
    }
    atomic_store(&r.done, 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    printf("cuckoo race moves=%lu layers=%lu probes=%lu misses=%lu busy=%lu\n",
           (unsigned long)rbi_ld(RBI_CF_MOVES(slot_of(seg, "r"))),
           (unsigned long)rbi_ld(RBI_CF_NLAYERS(slot_of(seg, "r"))),
           (unsigned long)r.probes, (unsigned long)r.misses, (unsigned long)r.busy);
    ck_assert_uint_eq(r.misses, 0);
    ck_assert_uint_eq(r.busy, 0);
    ck_assert_uint_gt(rbi_ld(RBI_CF_MOVES(slot_of(seg, "r"))), 0);
    all_present(r.h, 5, RACE_KEPT, 0);
    rb_cuckoo_close(r.h);
}
END_TEST

/* The whole dump of filter name: header + chunks of at most `chunk`
 * bytes, concatenated; the iterators after each chunk in iters. */
typedef struct whole {
    unsigned char *data;
    size_t len, hlen, nchunks;
    int64_t iters[4096];
    size_t lens[4096];
} whole_t;

static void dump_all(const rb_segment_t *s, const char *name, size_t chunk, whole_t *w)
{
    rb_cuckoo_t *h = open_cf(s, name);
    int64_t it = 0, next;
    size_t len, cap = RBI_CUCKOO_HEADER_MAX;

    w->data = malloc(cap);
    w->len = w->nchunks = 0;
    ck_assert_int_eq(rbi_cuckoo_dump(h, 0, chunk, w->data, &w->hlen, &next), RB_OK);
    ck_assert_int_eq(next, 1);
    w->len = w->hlen;
    for (it = 1;; it = next) {
        ck_assert_int_eq(rbi_cuckoo_dump(h, it, chunk, NULL, &len, &next), RB_OK);
        if (len == 0)
            break;
        w->data = realloc(w->data, cap += len);
        ck_assert_int_eq(rbi_cuckoo_dump(h, it, chunk, w->data + w->len, &len, &next), RB_OK);
        ck_assert_uint_lt(w->nchunks, 4096);
        w->iters[w->nchunks] = next;
        w->lens[w->nchunks++] = len;
        w->len += len;
    }
    ck_assert_int_eq(next, 0);
    rb_cuckoo_close(h);
}

/* Adds and deletes that grow a filter to several layers; every key added
 * and not deleted stays present (C4: a delete in a newer layer never
 * takes the only copy of a key of an older one). */
static void churn(rb_segment_t *s)
{
    static uint8_t gone[20000];
    rb_cuckoo_t *h;
    uint64_t miss = 0;

    make(s, "det", 500, 4, 12, 2, 100);
    memset(gone, 0, sizeof(gone));
    for (uint64_t i = 0; i < 20000; i++) {
        ck_assert_int_eq(add(s, "det", 7, i), 1);
        if (i % 5 == 0) {
            ck_assert_int_eq(del(s, "det", 7, i / 2), 1);
            gone[i / 2] = 1;
        }
    }
    h = open_cf(s, "det");
    for (uint64_t i = 0; i < 20000; i++)
        miss += !gone[i] && has(h, 7, i) != 1;
    ck_assert_uint_eq(miss, 0);
    ck_assert_int_eq(rbi_ld(RBI_CF_NLAYERS(slot_of(s, "det"))) > 2, 1);
    rb_cuckoo_close(h);
}

/* Same calls, same arrays; dump, load elsewhere: the same dump again and
 * the same answers. */
START_TEST(test_cuckoo_deterministic_and_dump_round_trip)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 4 };
    static whole_t a, b, c;
    rb_segment_t *s2, *s3;
    rb_cuckoo_t *h1, *h3;
    const char *why;
    size_t at;

    ck_assert_int_eq(rb_segment_create(NULL, &o, &s2), RB_OK);
    ck_assert_int_eq(rb_segment_create(NULL, &o, &s3), RB_OK);
    churn(seg);
    churn(s2);
    dump_all(seg, "det", 4000, &a);
    dump_all(s2, "det", 4000, &b);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert_mem_eq(a.data, b.data, a.len);
    ck_assert_uint_gt(a.nchunks, 1);
    ck_assert_int_eq(rbi_cuckoo_load_header(s3, "det", 3, a.data, a.hlen, &why), RB_OK);
    ck_assert_int_eq(rbi_cuckoo_load_header(s3, "det", 3, a.data, a.hlen, &why), RB_EEXIST);
    ck_assert_int_eq(rbi_cuckoo_load_header(s3, "x", 1, a.data, a.hlen - 1, &why), RB_EINVAL);
    at = a.hlen;
    for (size_t i = 0; i < a.nchunks; at += a.lens[i++])
        ck_assert_int_eq(rbi_cuckoo_load_chunk(s3, "det", 3, a.iters[i], a.data + at,
                                               a.lens[i], &why), RB_OK);
    ck_assert_int_eq(rbi_cuckoo_load_chunk(s3, "det", 3, a.iters[a.nchunks - 1] + 1,
                                           a.data + a.hlen, 2, &why), RB_EINVAL);
    dump_all(s3, "det", 777, &c);
    ck_assert_uint_eq(a.len, c.len);
    ck_assert_mem_eq(a.data, c.data, a.len);
    h1 = open_cf(seg, "det");
    h3 = open_cf(s3, "det");
    for (uint64_t i = 0; i < 40000; i++)
        if (has(h1, 7, i) != has(h3, 7, i))
            ck_abort_msg("answers differ at %lu", (unsigned long)i);
    rb_cuckoo_close(h1);
    rb_cuckoo_close(h3);
    free(a.data);
    free(b.data);
    free(c.data);
    rb_segment_close(s2);
    rb_segment_close(s3);
}
END_TEST

/* A name holds one kind: the cuckoo calls refuse a Bloom filter, an HLL
 * and a sketch, and their calls refuse a cuckoo filter. */
static void wrong_types(void)
{
    rb_bloom_params_t bp = { .capacity = 1000, .error_rate = 0.01 };
    rb_cms_params_t cp = { .width = 10, .depth = 2 };
    rb_key_t e = { "x", 1 }, names[1] = { { "cf", 2 } };
    static const char *others[3] = { "bf", "hl", "cm" };
    rb_cuckoo_t *h;
    rb_bloom_t *bf;
    uint64_t one = 1, est;

    ck_assert_int_eq(rb_bloom_reserve(seg, "bf", 2, &bp), RB_OK);
    ck_assert_int_eq(rb_hll_add(seg, "hl", 2, &e, 1), 1);
    ck_assert_int_eq(rb_cms_create(seg, "cm", 2, &cp), RB_OK);
    make(seg, "cf", 100, 4, 8, 1, 20);
    for (int i = 0; i < 3; i++) {
        rb_cuckoo_params_t p = { 100, 4, 20, 1, 8, NULL };
        ck_assert_int_eq(rb_cuckoo_open(seg, others[i], 2, &h), RB_EWRONGTYPE);
        ck_assert_int_eq(rb_cuckoo_add(seg, others[i], 2, "x", 1, 0), RB_EWRONGTYPE);
        ck_assert_int_eq(rb_cuckoo_del(seg, others[i], 2, "x", 1), RB_EWRONGTYPE);
        ck_assert_int_eq(rb_cuckoo_delete(seg, others[i], 2), RB_EWRONGTYPE);
        ck_assert_int_eq(rb_cuckoo_reserve(seg, others[i], 2, &p), RB_EEXIST);
    }
    ck_assert_int_eq(rb_bloom_open(seg, "cf", 2, &bf), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_bloom_delete(seg, "cf", 2), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_bloom_reserve(seg, "cf", 2, &bp), RB_EEXIST);
    ck_assert_int_eq(rb_hll_add(seg, "cf", 2, &e, 1), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_hll_count(seg, names, 1, &est), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_query(seg, "cf", 2, "x", 1, &est), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_incrby(seg, "cf", 2, &e, &one, 1, NULL), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_cms_create(seg, "cf", 2, &cp), RB_EEXIST);
}

/* Bad parameters, a full filter (RB_EFULL, RB_ELAYERS: nothing changed),
 * the reader's map (RB_EROFS), delete. */
START_TEST(test_cuckoo_errors)
{
    rb_cuckoo_params_t ok = { 100, 4, 20, 1, 8, NULL }, p;
    rb_cuckoo_info_t i0, i1;
    rb_segment_t *r;
    rb_cuckoo_t *h;
    uint64_t n = 0, c;
    int rc;

    wrong_types();
    ck_assert_int_eq(rb_cuckoo_reserve(seg, "cf", 2, &ok), RB_EEXIST);
    ck_assert_int_eq(rb_cuckoo_reserve(seg, "", 0, &ok), RB_EINVAL);
    ck_assert_int_eq(rb_cuckoo_reserve(seg, "z", 1, NULL), RB_EINVAL);
    for (int bad = 0; bad < 7; bad++) {
        p = ok;
        if (bad == 0) p.capacity = 0;
        if (bad == 1) p.bucket_size = 0;
        if (bad == 2) p.bucket_size = RB_CUCKOO_MAX_BUCKET + 1;
        if (bad == 3) p.max_iterations = 0;
        if (bad == 4) p.max_iterations = RB_CUCKOO_MAX_ITERATIONS + 1;
        if (bad == 5) p.expansion = RB_CUCKOO_MAX_EXPANSION + 1;
        if (bad == 6) p.fp_bits = 10;
        ck_assert_int_eq(rb_cuckoo_reserve(seg, "z", 1, &p), RB_EINVAL);
    }
    /* Expansion 0: RB_EFULL once no path is found, and nothing changed. */
    make(seg, "full", 64, 2, 8, 0, 20);
    h = open_cf(seg, "full");
    while ((rc = add(seg, "full", 8, n)) == 1)
        n++;
    ck_assert_int_eq(rc, RB_EFULL);
    ck_assert_int_eq(rb_cuckoo_info(h, &i0), RB_OK);
    ck_assert_int_eq(add(seg, "full", 8, n + 1), RB_EFULL);
    ck_assert_int_eq(rb_cuckoo_info(h, &i1), RB_OK);
    ck_assert_mem_eq(&i0, &i1, sizeof(i0));
    ck_assert_uint_eq(i0.items, n);
    ck_assert_uint_eq(i0.layers, 1);
    ck_assert_uint_ge(n, 32);
    /* nx: a present key is not added again; count and del. */
    {
        uint64_t b;
        rb_key_t k = key_of(&b, 8, 0);
        ck_assert_int_eq(rb_cuckoo_add(seg, "full", 4, k.ptr, k.len, 1), 0);
        ck_assert_int_eq(rb_cuckoo_count(h, k.ptr, k.len, &c), RB_OK);
        ck_assert_uint_ge(c, 1);
    }
    rb_cuckoo_close(h);
    /* One slot per layer: layer 32 full gives RB_ELAYERS. */
    make(seg, "one", 1, 1, 16, 1, 5);
    for (uint64_t i = 0; i < RB_BLOOM_MAX_LAYERS; i++)
        ck_assert_int_eq(add(seg, "one", 9, i), 1);
    ck_assert_int_eq(add(seg, "one", 9, 99), RB_ELAYERS);
    /* The reader's map. */
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    ck_assert_int_eq(rb_cuckoo_reserve(r, "ro", 2, &ok), RB_EROFS);
    ck_assert_int_eq(rb_cuckoo_add(r, "one", 3, "x", 1, 0), RB_EROFS);
    ck_assert_int_eq(rb_cuckoo_del(r, "one", 3, "x", 1), RB_EROFS);
    ck_assert_int_eq(rb_cuckoo_delete(r, "one", 3), RB_EROFS);
    h = open_cf(r, "one");
    ck_assert_int_eq(has(h, 9, 5), 1);
    ck_assert_int_eq(rb_cuckoo_delete(seg, "one", 3), RB_OK);
    ck_assert_int_eq(has(h, 9, 5), RB_ENOENT);
    /* Made again under the same name: the handle rebinds. */
    make(seg, "one", 10, 1, 16, 1, 5);
    ck_assert_int_eq(add(seg, "one", 9, 5), 1);
    ck_assert_int_eq(has(h, 9, 5), 1);
    rb_cuckoo_close(h);
    rb_segment_close(r);
    ck_assert_int_eq(rb_cuckoo_open(seg, "nope", 4, &h), RB_ENOENT);
}
END_TEST

/* A writer died inside a move (the sequence odd): readers answer present
 * keys and RB_EBUSY for a miss; the writer that takes over repairs it. */
START_TEST(test_cuckoo_takeover_repairs_a_dead_move)
{
    rb_cuckoo_t *h;
    uint64_t t0;

    make(seg, "t", 4096, 4, 12, 1, 100);
    for (uint64_t i = 0; i < 5000; i++)
        ck_assert_int_eq(add(seg, "t", 10, i), 1);
    h = open_cf(seg, "t");
    rbi_seq_write_begin(RBI_CF_SEQ(slot_of(seg, "t")));   /* ... and dies */
    ck_assert_int_eq(has(h, 10, 1), 1);
    t0 = rb_test_now_ms();
    ck_assert_int_eq(has(h, 11, 1), RB_EBUSY);
    printf("cuckoo dead-move: a miss gave up after %lu ms\n",
           (unsigned long)(rb_test_now_ms() - t0));
    rb_cuckoo_close(h);
    rb_segment_close(seg);
    ck_assert_int_eq(rb_segment_open_writer(inst, &seg), RB_OK);
    ck_assert_uint_eq(rbi_ld(RBI_CF_SEQ(slot_of(seg, "t"))) & 1, 0);
    h = open_cf(seg, "t");
    ck_assert_int_eq(has(h, 11, 1), 0);
    all_present(h, 10, 5000, 0);
    for (uint64_t i = 5000; i < 8000; i++)
        ck_assert_int_eq(add(seg, "t", 10, i), 1);
    all_present(h, 10, 8000, 0);
    rb_cuckoo_close(h);
}
END_TEST

/* A segment dump restored keeps the filter and its answers. */
START_TEST(test_cuckoo_segment_dump_keeps_filter)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 256u << 20, .max_filters = 16 };
    rb_test_dump_t d = { NULL, 0 };
    rb_cuckoo_info_t a, b;
    rb_segment_info_t s0, s1;
    rb_segment_t *r;
    rb_cuckoo_t *h;

    ck_assert_int_eq(rb_segment_info(seg, &s0), RB_OK);
    make(seg, "s", 1000, 2, 16, 2, 50);
    for (uint64_t i = 0; i < 10000; i++)
        ck_assert_int_eq(add(seg, "s", 12, i), 1);
    h = open_cf(seg, "s");
    ck_assert_int_eq(rb_cuckoo_info(h, &a), RB_OK);
    rb_cuckoo_close(h);
    /* The kind's heap_bytes: every layer's array, in whole 64-byte units. */
    ck_assert_int_eq(rb_segment_info(seg, &s1), RB_OK);
    ck_assert_uint_eq(s1.filters, s0.filters + 1);
    ck_assert_uint_ge(s1.used - s0.used, a.bytes);
    ck_assert_uint_le(s1.used - s0.used, a.bytes + 64u * a.layers);
    ck_assert_int_eq(rb_segment_dump(seg, rb_test_dump_fn, &d), RB_OK);
    ck_assert_int_eq(rb_segment_restore(NULL, &o, d.data, d.len, &r), RB_OK);
    h = open_cf(r, "s");
    ck_assert_int_eq(rb_cuckoo_info(h, &b), RB_OK);
    ck_assert_mem_eq(&a, &b, sizeof(a));
    ck_assert_uint_gt(a.layers, 1);
    all_present(h, 12, 10000, 0);
    /* ... and is a working writer segment. */
    ck_assert_int_eq(add(r, "s", 13, 1), 1);
    ck_assert_int_eq(has(h, 13, 1), 1);
    rb_cuckoo_close(h);
    rb_segment_close(r);
    free(d.data);
    ck_assert_int_eq(rb_cuckoo_delete(seg, "s", 1), RB_OK);
    ck_assert_int_eq(rb_segment_info(seg, &s1), RB_OK);
    ck_assert_uint_eq(s1.used, s0.used);
}
END_TEST

/* A key whose fingerprint's mixed low bits are all 0 still has two
 * distinct buckets (rbi_cf_alt): 2b copies of it fit before the filter
 * must grow, not b. */
START_TEST(test_cuckoo_degenerate_fingerprint_has_two_buckets)
{
    rbi_cf_shape_t sh;
    rb_cuckoo_info_t in;
    rb_cuckoo_t *h;
    uint64_t buf, i = 0, nb = 512;
    rb_key_t k;

    ck_assert(rbi_cf_shape(RBI_LAYOUT_CF8, 2, &sh));
    for (;; i++) {   /* about 1 key in 512 */
        rbi_cf_key_t ck;
        k = key_of(&buf, 9, i);
        ck = rbi_cf_hash(secret, &sh, k.ptr, k.len);
        if ((rbi_fmix64(ck.fp) & (nb - 1)) == 0) {
            uint64_t home = rbi_cf_home(ck.h1, nb);
            ck_assert_uint_ne(rbi_cf_alt(home, ck.fp, nb), home);
            break;
        }
        ck_assert_uint_lt(i, 100000);
    }
    make(seg, "deg", 1024, 2, 8, 1, 20);   /* 512 buckets of 2 */
    for (int c = 0; c < 4; c++)
        ck_assert_int_eq(rb_cuckoo_add(seg, "deg", 3, k.ptr, k.len, 0), 1);
    ck_assert_int_eq(rb_cuckoo_open(seg, "deg", 3, &h), RB_OK);
    ck_assert_int_eq(rb_cuckoo_info(h, &in), RB_OK);
    ck_assert_uint_eq(in.layers, 1);
    ck_assert_uint_eq(in.buckets, nb);
    rb_cuckoo_close(h);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("cuckoo",
                        RB_TCASE("negatives", 300, setup, teardown,
                                 test_cuckoo_no_false_negatives_fp8,
                                 test_cuckoo_no_false_negatives_fp12,
                                 test_cuckoo_no_false_negatives_fp16),
                        RB_TCASE("fpr", 300, setup, teardown, test_cuckoo_fpr_table,
                                 test_cuckoo_deleted_absent_unless_twin),
                        RB_TCASE("race", 300, setup, teardown, test_cuckoo_reader_races_moves),
                        RB_TCASE("dump", 300, setup, teardown,
                                 test_cuckoo_deterministic_and_dump_round_trip,
                                 test_cuckoo_segment_dump_keeps_filter),
                        RB_TCASE("errors", 300, setup, teardown, test_cuckoo_errors,
                                 test_cuckoo_takeover_repairs_a_dead_move,
                                 test_cuckoo_degenerate_fingerprint_has_two_buckets));
}
