/*
 * check_rcache.c - the cuckoo filter's and the count-min sketch's reader
 * caches (lib/cuckoo/cuckoo.c, lib/cms/cms.c, "the cache"): a handle that
 * cached a filter's shape, layers and secret follows a delete and a
 * re-creation under the same name with another shape and secret (or
 * reports RB_ENOENT in between), a layer the writer added after the cache
 * was filled (cuckoo growth), a miss met inside a move (re-checked), the
 * one-word bucket test against counting, an array the writer replaced (count-min
 * aging and merge), and a writer racing the reader (each estimate one the
 * sketch held during the read; a merge's secret rewritten in place never
 * answered from halfway, M1 in cms_impl.h).
 */
#include <pthread.h>

#include "rb_test.h"
#include "bloom.h"
#include "cms_impl.h"
#include "cuckoo_impl.h"
#include "dir.h"

static rb_segment_t *seg;
static unsigned char secret_a[RB_BLOOM_SECRET_BYTES], secret_b[RB_BLOOM_SECRET_BYTES];

static void setup(void)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 8 };

    ck_assert_int_eq(rb_segment_create(NULL, &o, &seg), RB_OK);
    for (size_t i = 0; i < sizeof(secret_a); i++) {
        secret_a[i] = (unsigned char)(i * 37 + 11);
        secret_b[i] = (unsigned char)(i * 91 + 5);
    }
}

static void teardown(void)
{
    rb_segment_close(seg);
}

/* ---- cuckoo ---------------------------------------------------------------- */

/* Key i of family tag: 8 bytes. */
static rb_key_t key_of(uint64_t *buf, unsigned tag, uint64_t i)
{
    rb_key_t k = { buf, 8 };

    *buf = i * 0x9E3779B97F4A7C15ULL ^ (uint64_t)tag << 56;
    return k;
}

static void cf_make(const char *name, uint64_t cap, uint32_t b, uint32_t fp, uint32_t exp,
                    const unsigned char *secret)
{
    rb_cuckoo_params_t p = { .capacity = cap, .bucket_size = b, .max_iterations = 50,
                             .expansion = exp, .fp_bits = fp, .secret = secret };

    ck_assert_int_eq(rb_cuckoo_reserve(seg, name, strlen(name), &p), RB_OK);
}

static void cf_add(const char *name, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    ck_assert_int_eq(rb_cuckoo_add(seg, name, strlen(name), k.ptr, k.len, 0), 1);
}

static int cf_has(const rb_cuckoo_t *h, unsigned tag, uint64_t i)
{
    uint64_t b;
    rb_key_t k = key_of(&b, tag, i);

    return rb_cuckoo_contains(h, k.ptr, k.len);
}

static uint64_t cf_count(const rb_cuckoo_t *h, unsigned tag, uint64_t i)
{
    uint64_t b, n = 0;
    rb_key_t k = key_of(&b, tag, i);

    ck_assert_int_eq(rb_cuckoo_count(h, k.ptr, k.len, &n), RB_OK);
    return n;
}

/* Keys of tag found (contains and count) among 0 .. n-1. */
static uint64_t cf_found(const rb_cuckoo_t *h, unsigned tag, uint64_t n)
{
    uint64_t found = 0;

    for (uint64_t i = 0; i < n; i++) {
        int c = cf_has(h, tag, i);
        ck_assert_int_ge(c, 0);
        ck_assert_int_eq(c, cf_count(h, tag, i) != 0);
        found += (uint64_t)c;
    }
    return found;
}

/* A handle that answered from its cache (16-bit fingerprints, buckets of
 * 4, secret a) follows the filter's delete (RB_ENOENT) and its
 * re-creation under the name with 8-bit fingerprints, buckets of 2 and
 * secret b: the new keys found, the old ones at the new filter's false
 * positive rate (~1.6%), never answered from the old arrays. */
START_TEST(test_rcache_cf_follows_recreate)
{
    rb_cuckoo_t *h;
    uint64_t b;
    rb_key_t k = key_of(&b, 1, 0);

    cf_make("f", 4096, 4, 16, 1, secret_a);
    for (uint64_t i = 0; i < 1000; i++)
        cf_add("f", 1, i);
    ck_assert_int_eq(rb_cuckoo_open(seg, "f", 1, &h), RB_OK);
    ck_assert_uint_eq(cf_found(h, 1, 1000), 1000);
    ck_assert_uint_le(cf_found(h, 2, 1000), 5);
    ck_assert_int_eq(rb_cuckoo_delete(seg, "f", 1), RB_OK);
    ck_assert_int_eq(rb_cuckoo_contains(h, k.ptr, k.len), RB_ENOENT);
    cf_make("f", 4096, 2, 8, 1, secret_b);
    for (uint64_t i = 0; i < 1000; i++)
        cf_add("f", 2, i);
    ck_assert_uint_eq(cf_found(h, 2, 1000), 1000);
    ck_assert_uint_le(cf_found(h, 1, 1000), 60);
    rb_cuckoo_close(h);
}
END_TEST

/* A handle that cached a filter of one layer finds keys the writer put in
 * layers it added afterwards (growth publishes nlayers, not gen), each
 * key asked right after its add, and all of them at the end. */
START_TEST(test_rcache_cf_sees_new_layers)
{
    rb_cuckoo_t *h;
    uint64_t n = 0;

    cf_make("g", 64, 2, 12, 2, secret_a);
    ck_assert_int_eq(rb_cuckoo_open(seg, "g", 1, &h), RB_OK);
    ck_assert_int_eq(cf_has(h, 3, 0), 0);   /* the cache holds layer 0 alone */
    for (; n < 2000; n++) {
        cf_add("g", 3, n);
        ck_assert_int_eq(cf_has(h, 3, n), 1);
    }
    ck_assert_uint_ge(rbi_ld(RBI_CF_NLAYERS(rbi_dir_slot(rbi_seg_map(seg),
                                                         (uint64_t)rbi_dir_find(seg, "g", 1)))),
                      3);
    ck_assert_uint_eq(cf_found(h, 3, n), n);
    rb_cuckoo_close(h);
}
END_TEST

/* A cached handle keeps the move check (C2): while the writer is inside
 * a move (the move sequence odd) a key found is answered at once, but a
 * miss or a count is not (the fingerprint may be between its buckets:
 * here it is taken out by hand), so the call retries until RB_EBUSY;
 * after the move ends the key is found again. */
START_TEST(test_rcache_cf_miss_rechecks_moves)
{
    rb_cuckoo_t *h;
    rb_filter_shm_t *f;
    _Atomic uint64_t *arr;
    uint64_t words, *saved, n = 0, b;
    rb_key_t k = key_of(&b, 4, 0);
    rbi_cf_shape_t sh;

    cf_make("q", 64, 2, 16, 0, secret_a);
    cf_add("q", 4, 0);   /* the only key: the array holds its fingerprint alone */
    ck_assert_int_eq(rb_cuckoo_open(seg, "q", 1, &h), RB_OK);
    ck_assert_int_eq(rb_cuckoo_contains(h, k.ptr, k.len), 1);   /* cached */
    f = rbi_dir_slot(rbi_seg_map(seg), (uint64_t)rbi_dir_find(seg, "q", 1));
    ck_assert_int_eq(rbi_cf_shape(rbi_ld(&f->layout), rbi_ld(RBI_CF_BUCKET(f)), &sh), 1);
    words = rbi_cf_layer_bytes(&sh, rbi_ld(&f->layer[0].bits)) / 8;
    arr = rbi_word_at(rbi_seg_map(seg), rbi_ld(&f->layer[0].array_off));
    saved = malloc(words * sizeof(*saved));
    ck_assert_ptr_nonnull(saved);
    rbi_seq_write_begin(RBI_CF_SEQ(f));
    ck_assert_int_eq(rb_cuckoo_contains(h, k.ptr, k.len), 1);   /* found: at once */
    for (uint64_t w = 0; w < words; w++) {
        saved[w] = rbi_ld(&arr[w]);
        rbi_st(&arr[w], 0);
    }
    ck_assert_int_eq(rb_cuckoo_contains(h, k.ptr, k.len), RB_EBUSY);
    ck_assert_int_eq(rb_cuckoo_count(h, k.ptr, k.len, &n), RB_EBUSY);
    for (uint64_t w = 0; w < words; w++)
        rbi_st(&arr[w], saved[w]);
    rbi_seq_write_end(RBI_CF_SEQ(f));
    ck_assert_int_eq(rb_cuckoo_contains(h, k.ptr, k.len), 1);
    ck_assert_int_eq(rb_cuckoo_count(h, k.ptr, k.len, &n), RB_OK);
    ck_assert_uint_eq(n, 1);
    free(saved);
    rb_cuckoo_close(h);
}
END_TEST

/* The one-word bucket test (rbi_cf_bucket_has without all: the
 * zero-lane test) answers as counting the copies does, for every shape a
 * reader accepts with buckets of 1 .. 8 and 255, on words of random slots
 * with fp planted in some, the slot values near fp and 0 included. */
START_TEST(test_rcache_cf_bucket_test_exact)
{
    static const uint32_t fps[] = { 8, 12, 16 }, bs[] = { 1, 2, 3, 4, 5, 6, 7, 8, 255 };
    static _Atomic uint64_t arr[300];
    uint64_t x = 0x9E3779B97F4A7C15ULL, tested = 0;

    for (size_t a = 0; a < 3; a++)
        for (size_t c = 0; c < sizeof(bs) / sizeof(bs[0]); c++) {
            rbi_cf_shape_t sh;
            ck_assert_int_eq(rbi_cf_shape(rbi_cf_layout_of(fps[a]), bs[c], &sh), 1);
            for (int t = 0; t < 2000; t++) {
                uint64_t fp = 1 + (x >> 7) % sh.fmask, nb = 256 / bs[c] + 1;
                for (size_t w = 0; w < 300; w++) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    rbi_st(&arr[w], x);
                }
                /* Slots of fp, fp +- 1 and 0 at random places. */
                for (uint64_t i = 0; i < 8; i++) {
                    uint64_t slot = (x >> (i * 8)) % (nb * bs[c]), v = i % 4 == 0 ? fp
                                  : i % 4 == 1 ? (fp + 1) & sh.fmask
                                  : i % 4 == 2 ? fp - 1 : 0;
                    unsigned shf;
                    uint64_t wi = rbi_cf_word(&sh, slot, &shf);
                    if (wi < 300)
                        rbi_st(&arr[wi], (rbi_ld(&arr[wi]) & ~(sh.fmask << shf)) | v << shf);
                }
                for (uint64_t b = 0; b < nb && (b + 1) * bs[c] / sh.per < 300; b++) {
                    uint32_t one = rbi_cf_bucket_has(&sh, arr, b, fp, 0);
                    uint32_t all = rbi_cf_bucket_has(&sh, arr, b, fp, 1);
                    if (one != (all != 0))
                        ck_abort_msg("fp bits %u bucket %u: %u against %u copies", fps[a], bs[c],
                                     one, all);
                    tested++;
                }
            }
        }
    ck_assert_uint_gt(tested, 100000);
}
END_TEST

/* ---- count-min ------------------------------------------------------------- */

static void cms_make(const char *name, uint32_t width, uint32_t depth, int small, uint64_t aging,
                     const unsigned char *secret)
{
    rb_cms_params_t p = { .width = width, .depth = depth, .small = small, .aging = aging,
                          .secret = secret };

    ck_assert_int_eq(rb_cms_create(seg, name, strlen(name), &p), RB_OK);
}

static void cms_incr(const char *name, const char *key, uint64_t by)
{
    rb_key_t k = { key, strlen(key) };

    ck_assert_int_eq(rb_cms_incrby(seg, name, strlen(name), &k, &by, 1, NULL), RB_OK);
}

static uint64_t cms_est(const rb_cms_t *h, const char *key)
{
    uint64_t e = UINT64_MAX;

    ck_assert_int_eq(rb_cms_estimate(h, key, strlen(key), &e), RB_OK);
    return e;
}

/* A handle that answered from its cache follows the sketch's delete
 * (RB_ENOENT) and its re-creation with another width, depth, counter size
 * and secret. */
START_TEST(test_rcache_cms_follows_recreate)
{
    rb_cms_t *h;
    uint64_t e;

    cms_make("s", 1000, 4, 0, 0, secret_a);
    cms_incr("s", "x", 5);
    ck_assert_int_eq(rb_cms_open(seg, "s", 1, &h), RB_OK);
    ck_assert_uint_eq(cms_est(h, "x"), 5);
    ck_assert_uint_eq(cms_est(h, "x"), 5);
    ck_assert_int_eq(rb_cms_delete(seg, "s", 1), RB_OK);
    ck_assert_int_eq(rb_cms_estimate(h, "x", 1, &e), RB_ENOENT);
    cms_make("s", 64, 7, 1, 0, secret_b);
    cms_incr("s", "x", 7);
    cms_incr("s", "y", 3);
    ck_assert_uint_eq(cms_est(h, "x"), 7);
    ck_assert_uint_eq(cms_est(h, "y"), 3);
    rb_cms_close(h);
}
END_TEST

/* Aging replaces the array (a generation publish): the cached handle
 * reads the halved counters, each time. */
START_TEST(test_rcache_cms_follows_aging)
{
    rb_cms_t *h;

    cms_make("a", 1024, 4, 0, 16, secret_a);
    cms_incr("a", "x", 8);
    ck_assert_int_eq(rb_cms_open(seg, "a", 1, &h), RB_OK);
    ck_assert_uint_eq(cms_est(h, "x"), 8);
    cms_incr("a", "y", 8);   /* 16 counted: halved */
    ck_assert_uint_eq(cms_est(h, "x"), 4);
    cms_incr("a", "y", 16);  /* 16 more since: halved again */
    ck_assert_uint_eq(cms_est(h, "x"), 2);
    cms_incr("a", "x", 3);
    ck_assert_uint_eq(cms_est(h, "x"), 5);
    rb_cms_close(h);
}
END_TEST

/* Merge replaces dest's array: the cached handle on dest reads the sum;
 * and dest takes its sources' secret: a handle cached with dest's old
 * secret hashes keys with the new one after a merge from sources keyed
 * otherwise. */
START_TEST(test_rcache_cms_follows_merge)
{
    const char *src[] = { "d", "m" };
    const size_t slen[] = { 1, 1 };
    const uint64_t w[] = { 1, 2 };
    rb_cms_t *h;

    cms_make("d", 512, 5, 0, 0, secret_a);
    cms_make("m", 512, 5, 0, 0, secret_a);
    cms_incr("d", "x", 3);
    cms_incr("m", "x", 4);
    ck_assert_int_eq(rb_cms_open(seg, "d", 1, &h), RB_OK);
    ck_assert_uint_eq(cms_est(h, "x"), 3);
    ck_assert_int_eq(rb_cms_merge(seg, "d", 1, src, slen, 2, w), RB_OK);
    ck_assert_uint_eq(cms_est(h, "x"), 11);
    ck_assert_int_eq(rb_cms_merge(seg, "d", 1, src, slen, 2, w), RB_OK);
    ck_assert_uint_eq(cms_est(h, "x"), 19);
    cms_make("b", 512, 5, 0, 0, secret_b);
    cms_incr("b", "x", 6);
    cms_incr("b", "y", 2);
    ck_assert_int_eq(rb_cms_merge(seg, "d", 1, (const char *[]){ "b" }, slen, 1, NULL), RB_OK);
    ck_assert_uint_eq(cms_est(h, "x"), 6);
    ck_assert_uint_eq(cms_est(h, "y"), 2);
    rb_cms_close(h);
}
END_TEST

/* TinyLFU's admission by handle reads the sketch through the same cache:
 * it follows a halving and a re-creation with other counts and secret. */
START_TEST(test_rcache_admit_follows_sketch)
{
    rb_tinylfu_t *t;
    int admit = -1;

    cms_make("t", 256, 4, 1, 16, secret_a);   /* 4-bit, halved every 16 */
    cms_incr("t", "x", 3);
    cms_incr("t", "y", 2);
    ck_assert_int_eq(rb_tinylfu_open(seg, "t", 1, &t), RB_OK);   /* no doorkeeper */
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "x", 1, "y", 1, &admit), RB_OK);
    ck_assert_int_eq(admit, 1);
    cms_incr("t", "z", 11);   /* 16 counted: x 1, y 1 */
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "x", 1, "y", 1, &admit), RB_OK);
    ck_assert_int_eq(admit, 0);
    ck_assert_int_eq(rb_cms_delete(seg, "t", 1), RB_OK);
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "x", 1, "y", 1, &admit), RB_ENOENT);
    cms_make("t", 64, 3, 1, 0, secret_b);
    cms_incr("t", "y", 1);
    cms_incr("t", "x", 5);
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "x", 1, "y", 1, &admit), RB_OK);
    ck_assert_int_eq(admit, 1);
    ck_assert_int_eq(rb_tinylfu_admit_h(t, "y", 1, "x", 1, &admit), RB_OK);
    ck_assert_int_eq(admit, 0);
    rb_tinylfu_close(t);
}
END_TEST

#define RACE_N 200000u

static _Atomic uint64_t race_done_n;   /* increments the writer finished */

/* The writer counts key "k" once a call, the sketch halved every 16. */
static void *race_writer(void *arg)
{
    (void)arg;
    for (uint64_t i = 1; i <= RACE_N; i++) {
        cms_incr("r", "k", 1);
        atomic_store(&race_done_n, i);
    }
    return NULL;
}

/* A reader's cached handle racing the writer: key k's counters are
 * exactly c(j) after j increments (no other key: no collisions), or
 * pre(j) between the j-th increment's stores and its halving (counted in
 * place, halved into a fresh array), so each estimate is one of those for
 * a j the writer was at during the read (the one in flight included); a
 * read from a replaced array or a stale view would show an older value. */
START_TEST(test_rcache_cms_race_estimates)
{
    static uint8_t c[RACE_N + 2], pre[RACE_N + 2];
    pthread_t t;
    rb_cms_t *h;
    uint64_t reads = 0, v = 0, since = 0;

    for (uint64_t j = 1; j <= RACE_N + 1; j++) {
        pre[j] = (uint8_t)++v;
        if (++since == 16) {
            v /= 2;
            since = 0;
        }
        c[j] = (uint8_t)v;
    }
    cms_make("r", 1024, 8, 0, 16, secret_a);
    ck_assert_int_eq(rb_cms_open(seg, "r", 1, &h), RB_OK);
    atomic_store(&race_done_n, 0);
    ck_assert_int_eq(pthread_create(&t, NULL, race_writer, NULL), 0);
    while (atomic_load(&race_done_n) < RACE_N) {
        uint64_t lo = atomic_load(&race_done_n), e = cms_est(h, "k"), hi, ok = 0;
        hi = atomic_load(&race_done_n) + 1;
        for (uint64_t j = lo; j <= hi && !ok; j++)
            ok = e == c[j] || e == pre[j];
        if (!ok)
            ck_abort_msg("estimate %lu outside the writer's steps %lu..%lu", (unsigned long)e,
                         (unsigned long)lo, (unsigned long)hi);
        reads++;
    }
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    printf("rcache cms race: %lu estimates\n", (unsigned long)reads);
    ck_assert_uint_gt(reads, 0);
    rb_cms_close(h);
}
END_TEST

/* M1 without a race: the slot of "d" left as a merge leaves it halfway
 * (the new secret stored in place, the array and the seal still the old
 * ones: what a reader sees if the writer stops there) is never answered
 * from: by name the read waits for the pair to agree and gives up with
 * RB_EBUSY; a handle whose cache holds answers from its cached pair
 * (the generation has not moved).  Put back, both answer again.  Without
 * the seal check the read by name answered 0. */
START_TEST(test_rcache_cms_torn_secret_never_answers)
{
    static const size_t one = 2;
    const char *src = "ma";
    unsigned char saved[RBI_SECRET_BYTES];
    rb_filter_shm_t *f;
    rb_cms_t *h;
    uint64_t e = 0;
    int rc;

    cms_make("ma", 64, 4, 0, 0, secret_a);
    cms_make("d", 64, 4, 0, 0, NULL);
    cms_incr("ma", "k", 1000);
    ck_assert_int_eq(rb_cms_merge(seg, "d", 1, &src, &one, 1, NULL), RB_OK);
    ck_assert_int_eq(rb_cms_open(seg, "d", 1, &h), RB_OK);
    ck_assert_uint_eq(cms_est(h, "k"), 1000);   /* the cache holds */
    ck_assert_int_eq(rbi_writer_find(seg, "d", 1, rbi_cms_layout, &f), RB_OK);
    ck_assert(rbi_ld(&f->flags) & RBI_CMS_SEALED);
    rbi_copy_out(saved, f->secret, RBI_SECRET_WORDS);
    rbi_copy_in(f->secret, secret_b, sizeof(secret_b));   /* halfway */
    rc = rb_cms_query(seg, "d", 1, "k", 1, &e);
    ck_assert_msg(rc == RB_EBUSY, "by name: rc %d, estimate %lu", rc, (unsigned long)e);
    ck_assert_uint_eq(cms_est(h, "k"), 1000);
    rbi_copy_in(f->secret, saved, sizeof(saved));
    ck_assert_int_eq(rb_cms_query(seg, "d", 1, "k", 1, &e), RB_OK);
    ck_assert_uint_eq(e, 1000);
    rb_cms_close(h);
}
END_TEST

#define MERGE_N 20000u

static _Atomic uint64_t merges_done;

/* The writer merges into "d" from "ma" (secret a, k counted 1000) and
 * from "mb" (secret b, k counted 2000) in turn: every merge rewrites d's
 * secret in place and gives it a new array. */
static void *merge_writer(void *arg)
{
    static const size_t one = 2;

    (void)arg;
    for (uint64_t i = 1; i <= MERGE_N; i++) {
        const char *src = i % 2 ? "mb" : "ma";
        ck_assert_int_eq(rb_cms_merge(seg, "d", 1, &src, &one, 1, NULL), RB_OK);
        atomic_store(&merges_done, i);
    }
    return NULL;
}

/* M1 (cms_impl.h): a reader that reads the sketch while a merge rewrites
 * its secret in place answers from one whole (secret, array) pair: k's
 * estimate is 1000 or 2000, never what a mix of secrets, or the new
 * secret with the old array, gives (no other key: no collisions, so a
 * mix reads counters of nothing, 0).  By name (the slow path each call)
 * and through a handle (whose cache is dropped at each merge). */
START_TEST(test_rcache_cms_race_merge_secret)
{
    static const size_t one = 2;
    const char *src = "ma";
    pthread_t t;
    rb_cms_t *h;
    uint64_t reads = 0, e;

    cms_make("ma", 64, 4, 0, 0, secret_a);
    cms_make("mb", 64, 4, 0, 0, secret_b);
    cms_make("d", 64, 4, 0, 0, NULL);   /* a secret of its own */
    cms_incr("ma", "k", 1000);
    cms_incr("mb", "k", 2000);
    ck_assert_int_eq(rb_cms_merge(seg, "d", 1, &src, &one, 1, NULL), RB_OK);
    ck_assert_int_eq(rb_cms_open(seg, "d", 1, &h), RB_OK);
    atomic_store(&merges_done, 0);
    ck_assert_int_eq(pthread_create(&t, NULL, merge_writer, NULL), 0);
    while (atomic_load(&merges_done) < MERGE_N) {
        ck_assert_int_eq(rb_cms_query(seg, "d", 1, "k", 1, &e), RB_OK);
        if (e != 1000 && e != 2000)
            ck_abort_msg("by name, after %lu merges: estimate %lu",
                         (unsigned long)atomic_load(&merges_done), (unsigned long)e);
        e = cms_est(h, "k");
        if (e != 1000 && e != 2000)
            ck_abort_msg("by handle, after %lu merges: estimate %lu",
                         (unsigned long)atomic_load(&merges_done), (unsigned long)e);
        reads += 2;
    }
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    printf("rcache cms merge race: %lu estimates during %u merges\n", (unsigned long)reads,
           MERGE_N);
    ck_assert_uint_gt(reads, 0);
    rb_cms_close(h);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("rcache",
                        RB_TCASE("cuckoo", 120, setup, teardown, test_rcache_cf_follows_recreate,
                                 test_rcache_cf_sees_new_layers,
                                 test_rcache_cf_miss_rechecks_moves,
                                 test_rcache_cf_bucket_test_exact),
                        RB_TCASE("cms", 120, setup, teardown, test_rcache_cms_follows_recreate,
                                 test_rcache_cms_follows_aging, test_rcache_cms_follows_merge,
                                 test_rcache_admit_follows_sketch),
                        RB_TCASE("race", 120, setup, teardown, test_rcache_cms_race_estimates,
                                 test_rcache_cms_torn_secret_never_answers,
                                 test_rcache_cms_race_merge_secret));
}
