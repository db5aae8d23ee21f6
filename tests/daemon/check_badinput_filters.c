/*
 * check_badinput_filters.c - check_badinput's filters TCase: BF.RESERVE
 * and BF.INSERT with bad or RedisBloom-only options, over max-memory or
 * max-filters, scaling filters up to their limits, commands on filters
 * that do not exist.  Shared with the other files: badinput.h.
 */
#include "badinput.h"

/* ---- BF.RESERVE --------------------------------------------------------------- */

START_TEST(test_badinput_reserve_error_rate_out_of_range)
{
    static const arg_t range[] = { A("0"), A("-0.01"), A("1"), A("1.5"), A("inf"), A("-inf"),
                                   A("0.0"), A("-0") };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(range); i++)
        EXPECT_ERR(w, "ERR (0 < error rate range < 1) ", A("BF.RESERVE"), A("e"), range[i],
                   A("100"));
    /* BF.INSERT's own words for the same. */
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("e"), A("ERROR"), A("1"), A("ITEMS"),
               A("k"));
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("e"), A("ERROR"), A("0"), A("ITEMS"),
               A("k"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_reserve_error_rate_not_a_number)
{
    static const arg_t bad[] = { A("nan"), A("NaN"), A("abc"), A(""), A("0.01x"), A(" 0.01"),
                                 A("1e-400"), A("0.01\0") };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(bad); i++)
        EXPECT_ERR(w, "ERR bad error rate", A("BF.RESERVE"), A("e"), bad[i], A("100"));
    EXPECT_ERR(w, "Bad error rate", A("BF.INSERT"), A("e"), A("ERROR"), A("nan"), A("ITEMS"),
               A("k"));
    EXPECT_ERR(w, "Bad error rate", A("BF.INSERT"), A("e"), A("ERROR"), A("0.01\0"), A("ITEMS"),
               A("k"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_reserve_bad_capacity)
{
    static const arg_t range[] = { A("0"), A("-1"), A("-9223372036854775807") };
    static const arg_t bad[] = { A("abc"), A("1.5"), A(""), A("99999999999999999999"), A("1e6"),
                                 A("+5"), A("-0"), A("007") };
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(range); i++)
        EXPECT_ERR(w, "ERR (capacity should be larger than 0)", A("BF.RESERVE"), A("e"),
                   A("0.01"), range[i]);
    for (size_t i = 0; i < NARGS(bad); i++)
        EXPECT_ERR(w, "ERR bad capacity", A("BF.RESERVE"), A("e"), A("0.01"), bad[i]);
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("e"), A("CAPACITY"), A("0"),
               A("ITEMS"), A("k"));
    EXPECT_ERR(w, "Bad capacity", A("BF.INSERT"), A("e"), A("CAPACITY"), A("x"), A("ITEMS"),
               A("k"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* max-memory 2mb: a filter that cannot fit is refused before anything is
 * allocated (the segment does not grow), the allocator still works after. */
START_TEST(test_badinput_reserve_over_max_memory)
{
    const char *want = "ERR capacity too large: the filter does not fit in max-memory (2097152 "
                       "bytes)";
    const char *too_many_bits = "ERR capacity too large: a filter layer may have at most 2^40 "
                                "bits";
    state_t st;

    start("max-memory 2mb");
    seed();
    capture(&st);
    /* ~12 MB of bits: more than the whole reservation. */
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("big"), A("0.01"), A("10000000"));
    /* ~1.9 MB: within the reservation, more than is free. */
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("big"), A("0.01"), A("1600000"), A("NONSCALING"));
    /* More bits than any filter may have (RB_BLOOM_MAX_BITS). */
    EXPECT_ERR(w, too_many_bits, A("BF.RESERVE"), A("big"), A("0.01"), A("1000000000000000"));
    EXPECT_ERR(w, too_many_bits, A("BF.INSERT"), A("big"), A("CAPACITY"), A("1000000000000000"),
               A("ITEMS"), A("k"));
    EXPECT_ERR(w, "ERR out of memory for the filter (max-memory is 2097152 bytes)", A("BF.INSERT"),
               A("big"), A("CAPACITY"), A("10000000"), A("ITEMS"), A("k"));
    assert_no_filter("big", 3);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("BF.RESERVE"), A("small"), A("0.01"), A("1000"));
    EXPECT(w, "1", A("BF.ADD"), A("small"), A("k"));
}
END_TEST

START_TEST(test_badinput_reserve_existing_filter)
{
    rb_bloom_t *bf;
    state_t st;

    start(NULL);
    seed();
    ck_assert_int_eq(rb_bloom_open(rseg, "f", 1, &bf), RB_OK);
    capture(&st);
    EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), A("f"), A("0.001"), A("1000"));
    EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), A("f"), A("0.1"), A("50"), A("NONSCALING"));
    EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), A("f"), A("0.01"), A("10"), A("AGING"),
               A("5"));
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "1000", A("BF.INFO"), A("f"), A("CAPACITY"));
    /* The same filter (same secret): a handle opened before still finds its keys. */
    ck_assert_int_eq(rb_bloom_contains(bf, "k1", 2), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, "k2", 2), 1);
    rb_bloom_close(bf);
}
END_TEST

START_TEST(test_badinput_max_filters_reached)
{
    const char *want = "ERR max number of filters reached (max-filters is 2)";
    state_t st;

    start("max-filters 2");
    seed();
    EXPECT(w, "OK", A("BF.RESERVE"), A("g"), A("0.01"), A("10"));
    capture(&st);
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("h"), A("0.01"), A("10"));
    EXPECT_ERR(w, want, A("BF.ADD"), A("h"), A("k"));
    EXPECT_ERR(w, want, A("BF.MADD"), A("h"), A("k"), A("l"));
    EXPECT_ERR(w, want, A("BF.INSERT"), A("h"), A("ITEMS"), A("k"));
    assert_no_filter("h", 1);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* EXPANSION, NONSCALING and words BF.RESERVE does not know, answered as
 * RedisBloom 2.6 answers them (rebloom.c, BFReserve_RedisCommand):
 * EXPANSION below 1 and NONSCALING with EXPANSION (either order, even
 * EXPANSION 0) refused; the first EXPANSION counts; other words ignored
 * (its arity limit, 7 arguments, is in test_badinput_wrong_arity). */
START_TEST(test_badinput_reserve_options_as_redisbloom)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR expansion should be greater or equal to 1", A("BF.RESERVE"), A("e"),
               A("0.01"), A("100"), A("EXPANSION"), A("0"));
    EXPECT_ERR(w, "ERR expansion should be greater or equal to 1", A("BF.RESERVE"), A("e"),
               A("0.01"), A("100"), A("EXPANSION"), A("-1"));
    EXPECT_ERR(w, "Nonscaling filters cannot expand", A("BF.RESERVE"), A("e"), A("0.01"),
               A("100"), A("EXPANSION"), A("0"), A("NONSCALING"));
    EXPECT_ERR(w, "Nonscaling filters cannot expand", A("BF.RESERVE"), A("e"), A("0.01"),
               A("100"), A("NONSCALING"), A("EXPANSION"), A("0"));
    /* Ours: layers of at most 32768 times the previous capacity. */
    EXPECT_ERR(w, "ERR expansion should be at most 32768", A("BF.RESERVE"), A("e"), A("0.01"),
               A("100"), A("EXPANSION"), A("32769"));
    assert_no_filter("e", 1);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("BF.RESERVE"), A("u1"), A("0.01"), A("100"), A("FOO"));
    EXPECT(w, "2", A("BF.INFO"), A("u1"), A("EXPANSION"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("u2"), A("0.01"), A("100"), A("NONSCALING"), A("x"));
    EXPECT(w, "(nil)", A("BF.INFO"), A("u2"), A("EXPANSION"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("u3"), A("0.01"), A("100"), A("EXPANSION"), A("3"),
           A("EXPANSION"));
    EXPECT(w, "3", A("BF.INFO"), A("u3"), A("EXPANSION"));
}
END_TEST

/* BF.INSERT's options as RedisBloom 2.6 parses them (rebloom.c,
 * BFInsert_RedisCommand): ranges are checked once ITEMS is found, after
 * unknown words and malformed numbers; EXPANSION 0 is refused, the last
 * EXPANSION counts, NONSCALING with EXPANSION makes a non-scaling filter. */
START_TEST(test_badinput_insert_options_as_redisbloom)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "Bad argument received", A("BF.INSERT"), A("i"), A("EXPANSION"), A("0"),
               A("ITEMS"), A("a"));
    EXPECT_ERR(w, "Unknown argument received", A("BF.INSERT"), A("i"), A("CAPACITY"), A("0"),
               A("FOO"), A("ITEMS"), A("a"));
    EXPECT_ERR(w, "Bad expansion", A("BF.INSERT"), A("i"), A("ERROR"), A("2"), A("EXPANSION"),
               A("x"), A("ITEMS"), A("a"));
    assert_no_filter("i", 1);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "1", A("BF.INSERT"), A("i1"), A("EXPANSION"), A("0"), A("EXPANSION"), A("3"),
           A("ITEMS"), A("a"));
    EXPECT(w, "3", A("BF.INFO"), A("i1"), A("EXPANSION"));
    EXPECT(w, "1", A("BF.INSERT"), A("i2"), A("NONSCALING"), A("EXPANSION"), A("4"), A("ITEMS"),
           A("a"));
    EXPECT(w, "(nil)", A("BF.INFO"), A("i2"), A("EXPANSION"));
    EXPECT(w, "1", A("BF.INSERT"), A("i3"), A("EXPANSION"), A("4"), A("NONSCALING"), A("ITEMS"),
           A("a"));
    EXPECT(w, "(nil)", A("BF.INFO"), A("i3"), A("EXPANSION"));
}
END_TEST

/* Tiny error rates: 1e-8 and 1e-12 work in the default (blocked) layout;
 * a rate it cannot reach (a layer would need more than 4096 bits per key:
 * below ~1.8e-25, and a scaling filter's first layer has p/2) is refused
 * naming that cause, and works in LAYOUT standard. */
START_TEST(test_badinput_reserve_tiny_error_rates)
{
    const char *want = "ERR error rate too small for LAYOUT blocked: its layers would need more "
                       "than 4096 bits per key; use LAYOUT standard";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("x"), A("1e-30"), A("1000"));
    EXPECT_ERR(w, want, A("BF.RESERVE"), A("x"), A("3e-25"), A("1000"));
    EXPECT_ERR(w, want, A("BF.INSERT"), A("x"), A("ERROR"), A("1e-30"), A("ITEMS"), A("a"));
    assert_no_filter("x", 1);
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("BF.RESERVE"), A("t8"), A("1e-8"), A("1000"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("t12"), A("1e-12"), A("1000"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("t25"), A("3e-25"), A("1000"), A("NONSCALING"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("t30"), A("1e-30"), A("1000"), A("LAYOUT"), A("standard"));
    EXPECT(w, "1\n1\n0", A("BF.MADD"), A("t12"), A("k1"), A("k2"), A("k1"));
    EXPECT(w, "1\n0", A("BF.MEXISTS"), A("t12"), A("k2"), A("k3"));
    EXPECT(w, "1", A("BF.ADD"), A("t30"), A("k1"));
}
END_TEST

/* Adds keys tag-0, tag-1, ... to filter `name` in batches of 1000 until an
 * add fails (at most `max` keys); returns the error (RB_EREPLY, the reply in
 * rb_conn_error(w)), or 0 if none did. */
static int add_until_error(const char *name, const char *tag, unsigned long max)
{
    static char buf[1000][48];
    rb_key_t k[1000];

    for (unsigned long i = 0; i < max; i += 1000) {
        int64_t rc;
        for (size_t j = 0; j < 1000; j++) {
            k[j].ptr = buf[j];
            k[j].len = (size_t)snprintf(buf[j], sizeof(buf[j]), "%s-%lu", tag, i + j);
        }
        if ((rc = rb_conn_bf_add_many(w, name, strlen(name), k, 1000, NULL)) < 0)
            return (int)rc;
    }
    return 0;
}

/* A key `name` does not hold (so adding it must make it grow), in buf. */
static const char *absent_key(const char *name, char *buf, size_t cap)
{
    rb_bloom_t *bf;

    ck_assert_int_eq(rb_bloom_open(rseg, name, strlen(name), &bf), RB_OK);
    for (unsigned long i = 0; rb_test_key(buf, cap, "absent", i), rb_bloom_contains(bf, buf,
                                                                       strlen(buf)) != 0; i++)
        ;
    rb_bloom_close(bf);
    return buf;
}

/* max-memory 4mb: a scaling filter of capacity 1 keeps taking keys past
 * 17 layers (131,071 keys, where its layers' error rate passes 4e-8) until
 * the reservation is used up, and then says so; the failed add changes
 * nothing. */
START_TEST(test_badinput_scaling_filter_grows_until_max_memory)
{
    const char *want = "ERR out of memory for the filter (max-memory is 4194304 bytes)";
    char key[160], card[32], layers[32];
    int rc;
    state_t st;

    start("max-memory 4mb");
    EXPECT(w, "OK", A("BF.RESERVE"), A("deep"), A("0.01"), A("1"));
    ck_assert_int_eq(add_until_error("deep", "k", 10000000), RB_EREPLY);
    ck_assert_str_eq(rb_conn_error(w), want);
    snprintf(card, sizeof(card), "%s", rbd_cmd(w, &rc, "BF.CARD", "deep", (const char *)NULL));
    snprintf(layers, sizeof(layers), "%s",
             rbd_cmd(w, &rc, "BF.INFO", "deep", "FILTERS", (const char *)NULL));
    printf("max-memory 4mb: capacity 1, expansion 2 took %s keys in %s layers, then: %s\n", card,
           layers, want);
    ck_assert_int_gt(atol(card), 131072);
    ck_assert_int_gt(atol(layers), 17);
    capture(&st);
    EXPECT_ERR(w, want, A("BF.ADD"), A("deep"), B(absent_key("deep", key, sizeof(key)),
                                                  strlen(key)));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* The limits a scaling filter meets before memory, each named: EXPANSION 1
 * reaches 32 layers; a layer the blocked layout cannot make (p = 6e-25:
 * the first layer has 3e-25, the second would have 1.5e-25). */
START_TEST(test_badinput_scaling_filter_limits)
{
    char key[160];
    state_t st;

    start(NULL);
    EXPECT(w, "OK", A("BF.RESERVE"), A("flat"), A("0.01"), A("10"), A("EXPANSION"), A("1"));
    ck_assert_int_eq(add_until_error("flat", "k", 100000), RB_EREPLY);
    ck_assert_str_eq(rb_conn_error(w), "ERR filter cannot grow: it has 32 layers, the most a "
                     "filter may have; reserve it with a larger capacity or EXPANSION");
    EXPECT(w, "32", A("BF.INFO"), A("flat"), A("FILTERS"));
    EXPECT(w, "320", A("BF.CARD"), A("flat"));
    EXPECT(w, "OK", A("BF.RESERVE"), A("fine"), A("6e-25"), A("10"), A("EXPANSION"), A("1"));
    ck_assert_int_eq(add_until_error("fine", "k", 100000), RB_EREPLY);
    ck_assert_str_eq(rb_conn_error(w), "ERR filter cannot grow: its next layer's error rate "
                     "would need more than 4096 bits per key in LAYOUT blocked; reserve it with "
                     "LAYOUT standard");
    EXPECT(w, "1", A("BF.INFO"), A("fine"), A("FILTERS"));
    EXPECT(w, "10", A("BF.CARD"), A("fine"));
    capture(&st);
    EXPECT_ERR(w, "ERR filter cannot grow: it has 32 layers, the most a filter may have; "
               "reserve it with a larger capacity or EXPANSION", A("BF.ADD"), A("flat"),
               B(absent_key("flat", key, sizeof(key)), strlen(key)));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* ---- unknown filters ------------------------------------------------------------ */

START_TEST(test_badinput_insert_nocreate_unknown_filter)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR not found", A("BF.INSERT"), A("missing"), A("NOCREATE"), A("ITEMS"),
               A("k"));
    EXPECT_ERR(w, "ERR not found", A("BF.INSERT"), A("missing"), A("CAPACITY"), A("10"),
               A("NOCREATE"), A("ITEMS"), A("k"), A("l"));
    assert_no_filter("missing", 7);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* RedisBloom's answers for a filter that does not exist; none creates it. */
START_TEST(test_badinput_reads_of_unknown_filter)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT(w, "0", A("BF.EXISTS"), A("missing"), A("k1"));
    EXPECT(w, "0\n0", A("BF.MEXISTS"), A("missing"), A("k1"), A("k2"));
    EXPECT(w, "0", A("BF.CARD"), A("missing"));
    EXPECT_ERR(w, "ERR not found", A("BF.INFO"), A("missing"));
    EXPECT_ERR(w, "ERR not found", A("BF.INFO"), A("missing"), A("CAPACITY"));
    EXPECT_ERR(w, "ERR not found", A("BF.RESET"), A("missing"));
    assert_no_filter("missing", 7);
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* The keyspace commands: a bad SCAN changes nothing and says why as
 * Redis does; deletes and reads of names no filter has (empty, too long,
 * missing) are answers, not errors. */
START_TEST(test_badinput_keyspace_commands)
{
    char longname[300];
    state_t st;

    memset(longname, 'x', sizeof(longname));
    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR invalid cursor", A("SCAN"), A("x"));
    EXPECT_ERR(w, "ERR invalid cursor", A("SCAN"), A("-1"));
    EXPECT_ERR(w, "ERR invalid cursor", A("SCAN"), A("1x"));
    EXPECT_ERR(w, "ERR syntax error", A("SCAN"), A("0"), A("COUNT"), A("0"));
    EXPECT_ERR(w, "ERR value is not an integer or out of range", A("SCAN"), A("0"),
               A("COUNT"), A("many"));
    EXPECT_ERR(w, "ERR syntax error", A("SCAN"), A("0"), A("MATCH"));
    EXPECT_ERR(w, "ERR syntax error", A("SCAN"), A("0"), A("FOO"), A("1"));
    EXPECT(w, "0", A("DEL"), A("missing"), A(""), B(longname, sizeof(longname)));
    EXPECT(w, "0", A("EXISTS"), A(""), B(longname, sizeof(longname)));
    EXPECT(w, "none", A("TYPE"), B(longname, sizeof(longname)));
    EXPECT(w, "", A("KEYS"), A("[unclosed"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* Errors that say what to do (issue 42, 12): the reply names the key it
 * is about (quoted, bytes past printable ASCII as \xHH, cut after 64), or
 * the range an argument must be in, and has Redis's "ERR" prefix unless
 * it is RedisBloom's own wording (kept: its clients match on it).  One
 * row per refusal, the whole reply asserted. */
#define ROW(want, ...) { __LINE__, (want), NARGS(((const arg_t[]){ __VA_ARGS__ })), { __VA_ARGS__ } }
START_TEST(test_badinput_errors_say_what_to_do)
{
    static const struct {
        int line;
        const char *want;
        size_t n;
        arg_t a[7];
    } rows[] = {
        ROW("ERR no TinyLFU pair 'nope' (ADMIT.RESERVE 'nope' capacity makes one)",
            A("ADMIT.QUERY"), A("nope"), A("a"), A("b")),
        ROW("ERR no TinyLFU pair 'nope' (ADMIT.RESERVE 'nope' capacity makes one)",
            A("ADMIT.TOUCH"), A("nope"), A("a")),
        ROW("ERR no TinyLFU pair 'it\\x27s\\xff\\x00' (ADMIT.RESERVE 'it\\x27s\\xff\\x00' "
            "capacity makes one)", A("ADMIT.QUERY"), A("it's\xff\0"), A("a"), A("b")),
        ROW("ERR no TinyLFU pair '" "0123456789012345678901234567890123456789"
            "012345678901234567890123...' (ADMIT.RESERVE '0123456789012345678901234567890123456789"
            "012345678901234567890123...' capacity makes one)", A("ADMIT.QUERY"),
            A("0123456789012345678901234567890123456789012345678901234567890123456789"),
            A("a"), A("b")),
        ROW("ERR capacity must be an integer in [1, 536870912] (the cache's entries)",
            A("ADMIT.RESERVE"), A("x"), A("-1")),
        ROW("ERR capacity must be an integer in [1, 536870912] (the cache's entries)",
            A("ADMIT.RESERVE"), A("x"), A("lots")),
        ROW("ERR error rate must be a number in (0, 1) (the doorkeeper's; default 0.01)",
            A("ADMIT.RESERVE"), A("x"), A("10"), A("1.5")),
        ROW("ERR WINDOW must be an integer in [1, 9223372036854775807] (counted accesses "
            "between two halvings; default 10 x capacity)",
            A("ADMIT.RESERVE"), A("x"), A("10"), A("WINDOW"), A("0")),
        ROW("ERR syntax error: ADMIT.RESERVE key capacity [error] [WINDOW window]",
            A("ADMIT.RESERVE"), A("x"), A("10"), A("0.01"), A("SIDEWAYS")),
        ROW("ERR 'f' exists (a TinyLFU pair, or another filter of its name or of its "
            "doorkeeper's, 'f':dk)", A("ADMIT.RESERVE"), A("f"), A("10")),
        ROW("ERR FPBITS must be 8, 12 or 16 (bits a fingerprint keeps; default 8)",
            A("CF.RESERVE"), A("c"), A("100"), A("FPBITS"), A("7")),
        ROW("ERR syntax error: CBF.RESERVE key error_rate capacity [COUNTERBITS 4|8]",
            A("CBF.RESERVE"), A("cb"), A("0.01"), A("10"), A("COLOUR"), A("4")),
        ROW("ERR AGING must be an integer in [1, 9223372036854775807] (counted increments "
            "between two halvings)", A("CMS.INITBYDIM"), A("s"), A("10"), A("2"), A("AGING"),
            A("0")),
        ROW("ERR syntax error: after the sizing come [SMALL] [AGING w] [LIKE sketch]",
            A("CMS.INITBYDIM"), A("s"), A("10"), A("2"), A("SIDEWAYS")),
        /* RedisBloom's words, kept as they are */
        ROW("Bad capacity", A("CF.RESERVE"), A("c"), A("lots")),
        ROW("ERR not found", A("BF.INFO"), A("nope")),
        ROW("CMS: key does not exist", A("CMS.QUERY"), A("nope"), A("a")),
    };
    state_t st;

    start(NULL);
    seed(); /* the Bloom filter f */
    capture(&st);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        expect_v(rows[i].line, w, rows[i].want, 1, rows[i].n, rows[i].a);
    printf("errors: %zu refusals, each its whole reply asserted\n", sizeof(rows) / sizeof(rows[0]));
    ASSERT_UNCHANGED(&st);
}
END_TEST
#undef ROW

TCase *badinput_filters_tcase(void)
{
    return RB_TCASE("filters", 20, NULL, badinput_teardown,
                    test_badinput_reserve_error_rate_out_of_range,
                    test_badinput_errors_say_what_to_do,
                    test_badinput_reserve_error_rate_not_a_number,
                    test_badinput_reserve_bad_capacity,
                    test_badinput_reserve_over_max_memory,
                    test_badinput_reserve_existing_filter,
                    test_badinput_max_filters_reached,
                    test_badinput_reserve_options_as_redisbloom,
                    test_badinput_insert_options_as_redisbloom,
                    test_badinput_reserve_tiny_error_rates,
                    test_badinput_scaling_filter_grows_until_max_memory,
                    test_badinput_scaling_filter_limits,
                    test_badinput_insert_nocreate_unknown_filter,
                    test_badinput_reads_of_unknown_filter,
                    test_badinput_keyspace_commands);
}
