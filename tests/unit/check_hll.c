/*
 * check_hll.c - HyperLogLog counters (lib/hll/hll.c): estimates of 1 to 10^6
 * distinct elements within the estimator's error, duplicates, merge as
 * the count of the union, a reader racing the writer never sees a
 * register go down, takeover and dump / restore keep the registers, and
 * the counter and Bloom kinds keep to their own names (delete included),
 * the count the writer keeps (H2) is what readers answer until a register
 * rises, and a union takes each register's largest, word by word.
 * The counts are Redis's bit for bit: tests/daemon/hll_compat.sh holds
 * them against redis-server.
 */
#include <math.h>
#include <pthread.h>

#include "rb_test.h"
#include "dir.h"

#define SIGMA 0.0081   /* 1.04 / sqrt(16384) */

static char inst[96];
static rb_segment_t *seg;

static void setup(void)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 64u << 20, .max_filters = 16 };

    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_create(inst, &o, &seg), RB_OK);
}

static void teardown(void)
{
    rb_segment_close(seg);
    rb_segment_unlink(inst);
}

/* Adds elements tag-from .. tag-(to - 1) to counter name, in batches;
 * returns 1 if any PFADD answered 1. */
static int add_range(rb_segment_t *s, const char *name, const char *tag, unsigned long from,
                     unsigned long to)
{
    static char buf[256][64];
    rb_key_t e[256];
    int any = 0;

    for (unsigned long i = from; i < to;) {
        size_t n = 0;
        for (; n < 256 && i < to; n++, i++) {
            e[n].len = (size_t)snprintf(buf[n], sizeof(buf[n]), "%s-%lu", tag, i);
            e[n].ptr = buf[n];
        }
        int rc = rb_hll_add(s, name, strlen(name), e, n);
        ck_assert_int_ge(rc, 0);
        any |= rc;
    }
    return any;
}

static uint64_t count(const rb_segment_t *s, const char *a, const char *b)
{
    rb_key_t k[2] = { { a, strlen(a) }, { b, b ? strlen(b) : 0 } };
    uint64_t c = 0;

    ck_assert_int_eq(rb_hll_count(s, k, b ? 2 : 1, &c), RB_OK);
    return c;
}

/* |c - n| within 4 standard errors (a false alarm once in ~16,000 runs of
 * a given n; the elements are fixed, so the test is deterministic), or
 * exact for a handful. */
static void assert_close(uint64_t c, uint64_t n)
{
    double err = fabs((double)c - (double)n);

    ck_assert_msg(err <= fmax(4 * SIGMA * (double)n, 2.0), "count %llu for %llu distinct (%.2f%%)",
                  (unsigned long long)c, (unsigned long long)n, 100.0 * err / (double)n);
}

START_TEST(test_hll_estimates_within_error)
{
    static const unsigned long ns[] = { 1, 100, 10000, 1000000 };
    char name[32];

    for (size_t i = 0; i < 4; i++) {
        snprintf(name, sizeof(name), "h%lu", ns[i]);
        ck_assert_int_eq(add_range(seg, name, name, 0, ns[i]), 1);
        assert_close(count(seg, name, NULL), ns[i]);
        /* The same elements again: nothing changes. */
        ck_assert_int_eq(add_range(seg, name, name, 0, ns[i] < 10000 ? ns[i] : 10000), 0);
    }
    ck_assert_uint_eq(count(seg, "h1", NULL), 1);
    ck_assert_uint_eq(count(seg, "nosuch", NULL), 0);
    /* An add of no elements creates (1), then changes nothing (0). */
    ck_assert_int_eq(rb_hll_add(seg, "empty", 5, NULL, 0), 1);
    ck_assert_int_eq(rb_hll_add(seg, "empty", 5, NULL, 0), 0);
    ck_assert_uint_eq(count(seg, "empty", NULL), 0);
}
END_TEST

/* Counts redis-server 7.0.15 gave for the same elements (hll_compat.sh
 * prints them; it skips without redis-server, this does not). */
START_TEST(test_hll_counts_are_redis_counts)
{
    add_range(seg, "hll:100", "hll:100", 0, 100);
    add_range(seg, "hll:1e4", "hll:1e4", 0, 10000);
    add_range(seg, "hll:1e6", "hll:1e6", 0, 1000000);
    ck_assert_uint_eq(count(seg, "hll:100", NULL), 100);
    ck_assert_uint_eq(count(seg, "hll:1e4", NULL), 10103);
    ck_assert_uint_eq(count(seg, "hll:1e6", NULL), 998463);
    ck_assert_uint_eq(count(seg, "hll:100", "hll:1e4"), 10209);
}
END_TEST

START_TEST(test_hll_merge_is_the_union)
{
    rb_key_t src[3] = { { "a", 1 }, { "b", 1 }, { "missing", 7 } };
    uint8_t ra[RB_HLL_REGISTERS], rb[RB_HLL_REGISTERS], rm[RB_HLL_REGISTERS];
    uint64_t u;

    add_range(seg, "a", "x", 0, 20000);
    add_range(seg, "b", "x", 10000, 30000);
    u = count(seg, "a", "b");
    assert_close(u, 30000);
    ck_assert_int_eq(rb_hll_merge(seg, "m", 1, src, 3), RB_OK);
    ck_assert_uint_eq(count(seg, "m", NULL), u);
    /* Registers are the maxima; a and b are unchanged. */
    ck_assert_int_eq(rb_hll_registers(seg, "a", 1, ra), 1);
    ck_assert_int_eq(rb_hll_registers(seg, "b", 1, rb), 1);
    ck_assert_int_eq(rb_hll_registers(seg, "m", 1, rm), 1);
    for (unsigned i = 0; i < RB_HLL_REGISTERS; i++)
        ck_assert_uint_eq(rm[i], ra[i] > rb[i] ? ra[i] : rb[i]);
    ck_assert_uint_eq(rb_hll_estimate(rm), u);
    /* A dest that exists is one of the sources. */
    add_range(seg, "c", "y", 0, 5000);
    ck_assert_int_eq(rb_hll_merge(seg, "c", 1, src, 2), RB_OK);
    assert_close(count(seg, "c", NULL), 35000);
    /* No sources: dest is made, empty. */
    ck_assert_int_eq(rb_hll_merge(seg, "d", 1, NULL, 0), RB_OK);
    ck_assert_int_eq(rb_hll_registers(seg, "d", 1, rm), 1);
    ck_assert_uint_eq(count(seg, "d", NULL), 0);
}
END_TEST

typedef struct race {
    const char *inst;
    _Atomic int stop;
    unsigned long reads, bad;
} race_t;

/* A reader of its own mapping: every register it reads is at least what
 * it read before (the writer only raises registers, one word store at a
 * time). */
static void *race_reader(void *arg)
{
    race_t *r = arg;
    static uint8_t prev[RB_HLL_REGISTERS], now[RB_HLL_REGISTERS];
    rb_segment_t *rs;

    if (rb_segment_attach(r->inst, 0, &rs) != RB_OK) {
        r->bad = ~0ul;
        return NULL;
    }
    memset(prev, 0, sizeof(prev));
    while (!atomic_load(&r->stop) || r->reads == 0) {
        if (rb_hll_registers(rs, "race", 4, now) < 0) {
            r->bad++;
            break;
        }
        for (unsigned i = 0; i < RB_HLL_REGISTERS; i++)
            r->bad += now[i] < prev[i];
        memcpy(prev, now, sizeof(now));
        r->reads++;
    }
    rb_segment_close(rs);
    return NULL;
}

START_TEST(test_hll_racing_reader_never_sees_a_register_go_down)
{
    race_t r = { inst, 0, 0, 0 };
    rb_key_t src = { "race", 4 };
    pthread_t t;

    ck_assert_int_eq(rb_hll_add(seg, "race", 4, NULL, 0), 1);
    ck_assert_int_eq(pthread_create(&t, NULL, race_reader, &r), 0);
    for (unsigned long round = 0; round < 20; round++) {
        add_range(seg, "race", "r", round * 10000, (round + 1) * 10000);
        add_range(seg, "other", "o", round * 5000, (round + 1) * 5000);
        src.ptr = "other";
        src.len = 5;
        ck_assert_int_eq(rb_hll_merge(seg, "race", 4, &src, 1), RB_OK);
    }
    atomic_store(&r.stop, 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(r.bad == 0, "%lu registers went down in %lu reads", r.bad, r.reads);
    assert_close(count(seg, "race", NULL), 300000);
}
END_TEST

START_TEST(test_hll_takeover_and_dump_restore_keep_registers)
{
    uint8_t before[RB_HLL_REGISTERS], after[RB_HLL_REGISTERS];
    rb_segment_info_t info;
    rb_test_dump_t d;
    rb_segment_t *copy, *r;
    char inst2[96];

    add_range(seg, "kept", "k", 0, 50000);
    ck_assert_int_eq(rb_hll_registers(seg, "kept", 4, before), 1);
    ck_assert_int_eq(rb_segment_info(seg, &info), RB_OK);
    ck_assert_uint_ge(info.used, RB_HLL_REGISTERS);
    rb_segment_close(seg);
    /* A new writer takes the live segment over: the counter's extent is
     * accounted for (kind.c), so a new allocation does not overlap it. */
    ck_assert_int_eq(rb_segment_open_writer(inst, &seg), RB_OK);
    ck_assert_int_eq(rb_hll_add(seg, "new", 3, NULL, 0), 1);
    add_range(seg, "new", "n", 0, 20000);
    ck_assert_int_eq(rb_hll_registers(seg, "kept", 4, after), 1);
    ck_assert_mem_eq(before, after, sizeof(before));
    /* A dump restored elsewhere holds the same registers. */
    ck_assert_int_eq(rb_segment_dump(seg, rb_test_dump_fn, &d), RB_OK);
    rb_test_instance(inst2, sizeof(inst2));
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, d.len, &copy), RB_OK);
    ck_assert_int_eq(rb_segment_attach(inst2, 0, &r), RB_OK);
    ck_assert_int_eq(rb_hll_registers(r, "kept", 4, after), 1);
    ck_assert_mem_eq(before, after, sizeof(before));
    ck_assert_uint_eq(count(r, "new", NULL), count(seg, "new", NULL));
    /* ... and is a working writer segment. */
    ck_assert_int_eq(rb_hll_add(copy, "kept", 4, &(rb_key_t){ "more", 4 }, 1) >= 0, 1);
    rb_segment_close(r);
    rb_segment_close(copy);
    ck_assert_int_eq(rb_segment_unlink(inst2), RB_OK);
    free(d.data);
}
END_TEST

START_TEST(test_hll_kinds_keep_their_names_and_delete)
{
    rb_bloom_params_t p = { .capacity = 100, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_key_t names[2] = { { "h", 1 }, { "bf", 2 } };
    rb_segment_info_t i0, i1;
    rb_hll_t *h;
    rb_bloom_t *bf;
    uint64_t c;

    ck_assert_int_eq(rb_segment_info(seg, &i0), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(seg, "bf", 2, &p), RB_OK);
    add_range(seg, "h", "e", 0, 1000);
    ck_assert_int_eq(rb_hll_add(seg, "bf", 2, NULL, 0), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_hll_merge(seg, "h", 1, &names[1], 1), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_hll_merge(seg, "bf", 2, &names[0], 1), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_hll_count(seg, names, 2, &c), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_hll_delete(seg, "bf", 2), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_reserve(seg, "h", 1, &p), RB_EEXIST);
    ck_assert_int_ne(rb_bloom_open(seg, "h", 1, &bf), RB_OK);
    ck_assert_int_eq(rb_hll_count(seg, names, 0, &c), RB_EINVAL);
    ck_assert_int_eq(rb_hll_open(seg, "bf", 2, &h), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_hll_open(seg, "nosuch", 6, &h), RB_ENOENT);
    ck_assert_int_eq(rb_hll_open(seg, "h", 1, &h), RB_OK);
    ck_assert_int_eq(rb_hll_card(h, &c), RB_OK);
    ck_assert_uint_eq(c, count(seg, "h", NULL));
    /* Delete: the name and the registers go; the slot and bytes are free. */
    ck_assert_int_eq(rb_hll_delete(seg, "h", 1), RB_OK);
    ck_assert_int_eq(rb_hll_delete(seg, "h", 1), RB_ENOENT);
    ck_assert_uint_eq(count(seg, "h", NULL), 0);
    ck_assert_int_eq(rb_hll_card(h, &c), RB_OK);
    ck_assert_uint_eq(c, 0);
    ck_assert_int_eq(rb_bloom_delete(seg, "bf", 2), RB_OK);
    ck_assert_int_eq(rb_segment_info(seg, &i1), RB_OK);
    ck_assert_uint_eq(i1.used, i0.used);
    ck_assert_uint_eq(i1.filters, 0);
    /* The handle follows its name: made again in another slot, then a
     * Bloom filter under it. */
    add_range(seg, "h", "f", 0, 10);
    ck_assert_int_eq(rb_hll_card(h, &c), RB_OK);
    ck_assert_uint_eq(c, count(seg, "h", NULL));
    ck_assert_uint_gt(c, 0);
    ck_assert_int_eq(rb_hll_delete(seg, "h", 1), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(seg, "h", 1, &p), RB_OK);
    ck_assert_int_eq(rb_hll_add(seg, "h", 1, NULL, 0), RB_EWRONGTYPE);
    ck_assert_int_eq(rb_hll_card(h, &c), RB_EWRONGTYPE);
    rb_hll_close(h);
}
END_TEST

/* The slot of counter name in s (the writer's map). */
static rb_filter_shm_t *slot_of(rb_segment_t *s, const char *name)
{
    int64_t i = rbi_dir_find(s, name, strlen(name));

    ck_assert_int_ge(i, 0);
    return rbi_dir_slot(rbi_seg_map(s), (uint64_t)i);
}

/* The estimate of the registers of counter name, made here from bytes. */
static uint64_t from_registers(const rb_segment_t *s, const char *name)
{
    static uint8_t r[RB_HLL_REGISTERS];

    ck_assert_int_eq(rb_hll_registers(s, name, strlen(name), r), 1);
    return rb_hll_estimate(r);
}

/* H2: the count the writer keeps is what readers answer, until an add or a
 * merge that raises a register clears it; one that raises none keeps it.
 * A planted count (a value no register gives) shows which one a reader
 * answered from. */
START_TEST(test_hll_kept_count_is_read_until_a_register_rises)
{
    rb_key_t k = { "k", 1 }, both[2] = { { "k", 1 }, { "other", 5 } }, src = { "big", 3 };
    rb_segment_t *rs;
    rb_hll_t *h;
    uint64_t c, kept;
    const uint64_t planted = 123456789;

    add_range(seg, "k", "e", 0, 5000);
    add_range(seg, "big", "b", 0, 50000);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &rs), RB_OK);
    ck_assert_int_eq(rb_hll_open(rs, "k", 1, &h), RB_OK);
    ck_assert_int_eq(rb_hll_count_keep(rs, &k, 1, &c), RB_EROFS);
    ck_assert_int_eq(rb_hll_count_keep(seg, &k, 0, &c), RB_EINVAL);
    /* Not kept yet: every reader makes it from the registers. */
    ck_assert_uint_eq(rbi_ld(&slot_of(seg, "k")->items), 0);
    ck_assert_uint_eq(count(rs, "k", NULL), from_registers(rs, "k"));
    ck_assert_int_eq(rb_hll_count_keep(seg, &k, 1, &kept), RB_OK);
    ck_assert_uint_eq(kept, from_registers(rs, "k"));
    ck_assert_uint_eq(rbi_ld(&slot_of(seg, "k")->items), kept | (1ULL << 63));
    /* Readers answer from the kept count: plant one. */
    rbi_st(&slot_of(seg, "k")->items, planted | (1ULL << 63));
    ck_assert_uint_eq(count(rs, "k", NULL), planted);
    ck_assert_int_eq(rb_hll_card(h, &c), RB_OK);
    ck_assert_uint_eq(c, planted);
    ck_assert_int_eq(rb_hll_count_keep(seg, &k, 1, &c), RB_OK);
    ck_assert_uint_eq(c, planted);
    /* A union is always made from registers. */
    ck_assert_uint_eq(count(rs, "k", "other"), kept);
    ck_assert_int_eq(rb_hll_count_keep(seg, both, 2, &c), RB_OK);
    ck_assert_uint_eq(c, kept);
    /* An add that raises nothing keeps it; one that raises a register
     * clears it. */
    ck_assert_int_eq(add_range(seg, "k", "e", 0, 5000), 0);
    ck_assert_uint_eq(count(rs, "k", NULL), planted);
    ck_assert_int_eq(add_range(seg, "k", "e", 5000, 6000), 1);
    ck_assert_uint_eq(rbi_ld(&slot_of(seg, "k")->items), 0);
    ck_assert_uint_eq(count(rs, "k", NULL), from_registers(rs, "k"));
    ck_assert_int_eq(rb_hll_card(h, &c), RB_OK);
    ck_assert_uint_eq(c, from_registers(rs, "k"));
    ck_assert_uint_ne(c, planted);
    assert_close(c, 6000);
    /* A merge that raises a register clears it; one that raises none keeps it. */
    ck_assert_int_eq(rb_hll_count_keep(seg, &k, 1, &kept), RB_OK);
    rbi_st(&slot_of(seg, "k")->items, planted | (1ULL << 63));
    ck_assert_int_eq(rb_hll_merge(seg, "k", 1, &k, 1), RB_OK);
    ck_assert_uint_eq(count(rs, "k", NULL), planted);
    ck_assert_int_eq(rb_hll_merge(seg, "k", 1, &src, 1), RB_OK);
    ck_assert_uint_eq(count(rs, "k", NULL), from_registers(rs, "k"));
    assert_close(count(rs, "k", NULL), 56000);
    /* Deleted and made again: nothing kept from before. */
    ck_assert_int_eq(rb_hll_count_keep(seg, &k, 1, &kept), RB_OK);
    ck_assert_int_eq(rb_hll_delete(seg, "k", 1), RB_OK);
    ck_assert_int_eq(rb_hll_count_keep(seg, &k, 1, &c), RB_OK);
    ck_assert_uint_eq(c, 0);
    add_range(seg, "k", "n", 0, 10);
    ck_assert_uint_eq(count(rs, "k", NULL), 10);
    ck_assert_int_eq(rb_hll_card(h, &c), RB_OK);
    ck_assert_uint_eq(c, 10);
    rb_hll_close(h);
    rb_segment_close(rs);
}
END_TEST

/* A union's registers are each register's largest (taken a word at a
 * time), for registers an add makes and for bytes no add makes (a corrupt
 * segment's: above 51, clamped by the estimator, or with the top bit set). */
START_TEST(test_hll_union_takes_each_registers_largest)
{
    static uint8_t ra[RB_HLL_REGISTERS], rb[RB_HLL_REGISTERS], rc[RB_HLL_REGISTERS],
        rm[RB_HLL_REGISTERS];
    rb_key_t three[3] = { { "a", 1 }, { "b", 1 }, { "c", 1 } };
    uint64_t c;

    add_range(seg, "a", "x", 0, 3000);
    add_range(seg, "b", "y", 0, 300000);
    add_range(seg, "c", "x", 1000, 9000);
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(rb_hll_registers(seg, "a", 1, ra), 1);
        ck_assert_int_eq(rb_hll_registers(seg, "b", 1, rb), 1);
        ck_assert_int_eq(rb_hll_registers(seg, "c", 1, rc), 1);
        for (unsigned i = 0; i < RB_HLL_REGISTERS; i++) {
            uint8_t m = ra[i] > rb[i] ? ra[i] : rb[i];
            rm[i] = m > rc[i] ? m : rc[i];
        }
        ck_assert_int_eq(rb_hll_count(seg, three, 3, &c), RB_OK);
        ck_assert_uint_eq(c, rb_hll_estimate(rm));
        /* Then bytes no add makes: 0xc8 and 0x34 in a, 0x80 in c. */
        _Atomic uint64_t *arr = rbi_word_at(rbi_seg_map(seg),
                                            rbi_ld(&slot_of(seg, "a")->layer[0].array_off));
        rbi_st(&arr[7], rbi_ld(&arr[7]) | 0xc8ULL << 16);
        rbi_st(&arr[9], (rbi_ld(&arr[9]) & ~0xffULL) | 0x34);
        arr = rbi_word_at(rbi_seg_map(seg), rbi_ld(&slot_of(seg, "c")->layer[0].array_off));
        rbi_st(&arr[9], rbi_ld(&arr[9]) | 0x80ULL << 56);
    }
    /* PFMERGE takes the same maxima. */
    ck_assert_int_eq(rb_hll_merge(seg, "m", 1, three, 3), RB_OK);
    ck_assert_int_eq(rb_hll_registers(seg, "m", 1, ra), 1);
    ck_assert_mem_eq(ra, rm, sizeof(rm));
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("hll",
                        RB_TCASE("counts", 120, setup, teardown,
                                 test_hll_estimates_within_error,
                                 test_hll_counts_are_redis_counts,
                                 test_hll_merge_is_the_union),
                        RB_TCASE("kept", 120, setup, teardown,
                                 test_hll_kept_count_is_read_until_a_register_rises,
                                 test_hll_union_takes_each_registers_largest),
                        RB_TCASE("readers", 120, setup, teardown,
                                 test_hll_racing_reader_never_sees_a_register_go_down),
                        RB_TCASE("segment", 120, setup, teardown,
                                 test_hll_takeover_and_dump_restore_keep_registers,
                                 test_hll_kinds_keep_their_names_and_delete));
}
