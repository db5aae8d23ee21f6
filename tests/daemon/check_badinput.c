/*
 * check_badinput.c - the bad-input table: one test per kind of bad input
 * sent to a real private ringbloomd.  Each test asserts the exact error
 * reply (or the exact behaviour: closed, timed out, refused) and that
 * nothing changed: ring nodes and version, every filter's items, set bits
 * and capacity, the segment's used and committed bytes, the log, and that
 * the daemon and a client connected before the bad input still answer.
 * docs/reliability.md lists the rows, their tests and the errors asserted.
 *
 * This file: commands with binary arguments, names and limits of keys,
 * names and ring membership.  The other TCases: filters
 * (check_badinput_filters.c), protocol errors (check_badinput_protocol.c),
 * connections and access (check_badinput_clients.c); what they share is
 * badinput.h.
 */
#include "badinput.h"

/* ---- keys ------------------------------------------------------------------------ */

START_TEST(test_badinput_empty_key)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR empty key", A("BF.ADD"), A("f"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.ADD"), A("new"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.MADD"), A("f"), A("k3"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.INSERT"), A("new"), A("ITEMS"), A("k3"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.EXISTS"), A("f"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("BF.MEXISTS"), A("f"), A("k1"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("RING.GET"), A(""));
    EXPECT_ERR(w, "ERR empty key", A("RING.GETN"), A(""), A("2"));
    assert_no_filter("new", 3);
    EXPECT(w, "0", A("BF.EXISTS"), A("f"), A("k3"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_empty_names)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR empty filter name", A("BF.ADD"), A(""), A("k"));
    EXPECT_ERR(w, "ERR empty filter name", A("BF.RESERVE"), A(""), A("0.01"), A("10"));
    EXPECT_ERR(w, "ERR empty filter name", A("BF.INSERT"), A(""), A("ITEMS"), A("k"));
    EXPECT_ERR(w, "ERR empty filter name", A("BF.EXISTS"), A(""), A("k"));
    EXPECT_ERR(w, "ERR empty node name", A("RING.ADD"), A(""));
    EXPECT_ERR(w, "ERR empty node name", A("RING.REMOVE"), A(""));
    EXPECT_ERR(w, "ERR empty node name", A("RING.WEIGHT"), A(""), A("2"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* max-key-bytes 100: 100 bytes are a key like any other. */
START_TEST(test_badinput_key_at_max_key_bytes_round_trips)
{
    char key[100];
    rb_bloom_t *bf;
    rb_node_t n;
    char buf[512];

    start("max-key-bytes 100");
    seed();
    memset(key, 'k', sizeof(key));
    key[0] = '\0';                      /* binary at both ends */
    key[99] = (char)0xff;
    EXPECT(w, "1", A("BF.ADD"), A("f"), B(key, 100));
    EXPECT(w, "0", A("BF.ADD"), A("f"), B(key, 100));
    EXPECT(w, "1", A("BF.EXISTS"), A("f"), B(key, 100));
    EXPECT(w, "1\n1", A("BF.MEXISTS"), A("f"), B(key, 100), A("k1"));
    EXPECT(w, "0", A("BF.EXISTS"), A("f"), B(key, 99));
    EXPECT(w, "1\n1", A("BF.MADD"), A("g"), B(key, 100), B(key + 1, 99));
    EXPECT(w, "3", A("BF.CARD"), A("f"));
    ck_assert_int_eq(rb_bloom_open(rseg, "f", 1, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, key, 100), 1);
    ck_assert_int_eq(rb_bloom_contains(bf, key, 99), 0);
    rb_bloom_close(bf);
    ck_assert_int_eq(run_args(w, buf, sizeof(buf), 2, (arg_t[]){ A("RING.GET"), B(key, 100) }),
                     RB_OK);
    ck_assert_int_eq(rb_ring_lookup(rseg, key, 100, &n), RB_OK);
    ck_assert_str_eq(buf, n.name);
    assert_healthy();
}
END_TEST

START_TEST(test_badinput_key_over_max_key_bytes_refused)
{
    const char *want = "ERR key too long (101 bytes, max-key-bytes is 100)";
    char key[101];
    state_t st;

    start("max-key-bytes 100");
    seed();
    memset(key, 'k', sizeof(key));
    capture(&st);
    EXPECT_ERR(w, want, A("BF.ADD"), A("f"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.ADD"), A("new"), B(key, 101));
    /* The good key before the long one is not added either. */
    EXPECT_ERR(w, want, A("BF.MADD"), A("f"), A("k3"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.INSERT"), A("new"), A("ITEMS"), A("k3"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.EXISTS"), A("f"), B(key, 101));
    EXPECT_ERR(w, want, A("BF.MEXISTS"), A("f"), A("k1"), B(key, 101));
    EXPECT_ERR(w, want, A("RING.GET"), B(key, 101));
    EXPECT_ERR(w, want, A("RING.GETN"), B(key, 101), A("2"));
    assert_no_filter("new", 3);
    EXPECT(w, "0", A("BF.EXISTS"), A("f"), A("k3"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* Keys with NUL bytes and bytes that are not UTF-8 are keys like any
 * other: the daemon and a reader of the segment agree on each. */
static const arg_t binary_keys[] = {
    A("a\0b"), A("\0"), A("\0\0\0"), A("a\0"), A("\xff\xfe\xfd"), A("\xc3\x28"), A("\x80"),
    A("\xed\xa0\x80"), A("\xf4\x90\x80\x80"), A("k\r\nk"), A("caf\xc3\xa9"), A("\xe2\x82"),
};

START_TEST(test_badinput_binary_keys_round_trip)
{
    static const char *const modes[] = { "xxh3", "seed", "ketama", "nginx" };
    size_t nkeys = NARGS(binary_keys);
    rb_bloom_t *bf;
    char buf[512];

    start(NULL);
    EXPECT(w, "OK", A("BF.RESERVE"), A("bin"), A("0.000001"), A("1000"));
    for (size_t i = 0; i < nkeys; i++)
        EXPECT(w, "1", A("BF.ADD"), A("bin"), binary_keys[i]);
    EXPECT(w, "1\n1", A("BF.MADD"), A("bin"), A("m\0a"), A("m\0b"));
    ck_assert_int_eq(rb_bloom_open(rseg, "bin", 3, &bf), RB_OK);
    for (size_t i = 0; i < nkeys; i++) {
        EXPECT(w, "1", A("BF.EXISTS"), A("bin"), binary_keys[i]);
        EXPECT(w, "0", A("BF.ADD"), A("bin"), binary_keys[i]);
        ck_assert_int_eq(rb_bloom_contains(bf, binary_keys[i].p, binary_keys[i].n), 1);
    }
    /* What a C string would keep of them was never added. */
    EXPECT(w, "0\n0\n1\n1", A("BF.MEXISTS"), A("bin"), A("a"), A("m"), A("m\0a"), A("m\0b"));
    ck_assert_int_eq(rb_bloom_contains(bf, "a", 1), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "a\0c", 3), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "\0\0", 2), 0);
    rb_bloom_close(bf);
    EXPECT(w, "14", A("BF.CARD"), A("bin"));

    /* Ring lookups of the same keys: RING.GET and rb_ring_lookup agree in
     * every mode (seed hashes UTF-8 code points, invalid bytes included). */
    for (int i = 0; i < 8; i++) {
        char node[48];
        snprintf(node, sizeof(node), "cache-%d:1121%d", i, i);
        EXPECT(w, "OK", A("RING.ADD"), B(node, strlen(node)), A("3"));
    }
    for (size_t m = 0; m < NARGS(modes); m++) {
        EXPECT(w, "OK", A("RING.MODE"), B(modes[m], strlen(modes[m])));
        for (size_t i = 0; i < nkeys; i++) {
            rb_node_t n, nn[3];
            char want[1024] = "";
            int got;
            ck_assert_int_eq(run_args(w, buf, sizeof(buf), 2,
                                      (arg_t[]){ A("RING.GET"), binary_keys[i] }), RB_OK);
            ck_assert_int_eq(rb_ring_lookup(rseg, binary_keys[i].p, binary_keys[i].n, &n), RB_OK);
            ck_assert_msg(strcmp(buf, n.name) == 0, "mode %s key %zu: daemon %s, reader %s",
                          modes[m], i, buf, n.name);
            got = rb_ring_lookup_n(rseg, binary_keys[i].p, binary_keys[i].n, nn, 3);
            ck_assert_int_eq(got, 3);
            snprintf(want, sizeof(want), "%s\n%s\n%s", nn[0].name, nn[1].name, nn[2].name);
            ck_assert_int_eq(run_args(w, buf, sizeof(buf), 3,
                                      (arg_t[]){ A("RING.GETN"), binary_keys[i], A("3") }), RB_OK);
            ck_assert_str_eq(buf, want);
        }
    }
    assert_healthy();
}
END_TEST

/* ---- names ----------------------------------------------------------------------- */

/* Filter names may hold any byte, NUL included. */
START_TEST(test_badinput_binary_filter_names_round_trip)
{
    static const arg_t names[] = { A("f\0x"), A("\0"), A("\xff\xfe\xfd"), A("\xc3\x28"),
                                   A("f\r\n"), A("caf\xc3\xa9") };
    const char *info;
    rb_bloom_t *bf;
    int rc;

    start(NULL);
    for (size_t i = 0; i < NARGS(names); i++) {
        EXPECT(w, "OK", A("BF.RESERVE"), names[i], A("0.0001"), A("100"));
        EXPECT_ERR(w, "ERR item exists", A("BF.RESERVE"), names[i], A("0.0001"), A("100"));
        EXPECT(w, "1", A("BF.ADD"), names[i], A("key"));
        EXPECT(w, "1", A("BF.EXISTS"), names[i], A("key"));
        EXPECT(w, "1", A("BF.CARD"), names[i]);
        EXPECT(w, "100", A("BF.INFO"), names[i], A("CAPACITY"));
    }
    /* Created on first add, as any name. */
    EXPECT(w, "1", A("BF.ADD"), A("auto\0\xff"), A("key"));
    for (size_t i = 0; i < NARGS(names); i++) {
        ck_assert_int_eq(rb_bloom_open(rseg, names[i].p, names[i].n, &bf), RB_OK);
        ck_assert_int_eq(rb_bloom_contains(bf, "key", 3), 1);
        ck_assert_int_eq(rb_bloom_contains(bf, "other", 5), 0);
        rb_bloom_close(bf);
    }
    ck_assert_int_eq(rb_bloom_open(rseg, "auto\0\xff", 6, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, "key", 3), 1);
    rb_bloom_close(bf);
    /* The prefixes a C string would see are other (absent) filters. */
    EXPECT(w, "0", A("BF.CARD"), A("f"));
    EXPECT(w, "0", A("BF.EXISTS"), A("auto"), A("key"));
    assert_no_filter("f", 1);
    assert_no_filter("auto", 4);
    /* INFO shows them escaped, one line each. */
    info = rbd_cmd(w, &rc, "INFO", "bloom", (const char *)NULL);
    ck_assert_ptr_nonnull(strstr(info, "filters:7\r\n"));
    ck_assert_ptr_nonnull(strstr(info, "name=f\\x00x,"));
    ck_assert_ptr_nonnull(strstr(info, "name=\\xff\\xfe\\xfd,"));
    ck_assert_ptr_nonnull(strstr(info, "name=f\\x0d\\x0a,"));
    assert_healthy();
}
END_TEST

/* Node names may hold any byte but NUL (a reader hands names out as C
 * strings); CR LF and non-UTF-8 bytes round-trip. */
START_TEST(test_badinput_binary_node_names_round_trip)
{
    static const arg_t names[] = { A("\xff\xfe"), A("\xc3\x28-node"), A("\x80"), A("a\r\nb"),
                                   A("n\xe2\x82") };
    rb_node_t nodes[MAX_NODES];
    size_t count;
    char buf[512];
    state_t st;

    start(NULL);
    for (size_t i = 0; i < NARGS(names); i++)
        EXPECT(w, "OK", A("RING.ADD"), names[i], A("2"));
    ck_assert_int_eq(rb_ring_nodes(rseg, nodes, MAX_NODES, &count), RB_OK);
    ck_assert_uint_eq(count, NARGS(names));
    for (size_t i = 0; i < NARGS(names); i++) {
        int found = 0;
        for (size_t j = 0; j < count; j++)
            found += nodes[j].name_len == names[i].n &&
                     memcmp(nodes[j].name, names[i].p, names[i].n) == 0 && nodes[j].weight == 2;
        ck_assert_msg(found == 1, "node %zu not in the segment exactly once", i);
    }
    for (int i = 0; i < 200; i++) {
        char key[32];
        rb_node_t n;
        int len = snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_int_eq(run_args(w, buf, sizeof(buf), 2,
                                  (arg_t[]){ A("RING.GET"), B(key, (size_t)len) }), RB_OK);
        ck_assert_int_eq(rb_ring_lookup(rseg, key, (size_t)len, &n), RB_OK);
        ck_assert_str_eq(buf, n.name);
    }
    EXPECT(w, "OK", A("RING.WEIGHT"), A("\xff\xfe"), A("5"));
    EXPECT(w, "OK", A("RING.REMOVE"), A("a\r\nb"));
    capture(&st);
    ck_assert_uint_eq(st.nnodes, NARGS(names) - 1);
    /* NUL: refused by every ring command, nothing changes. */
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.ADD"), A("a\0b"));
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.ADD"), A("\xff\xfe\0"));
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.WEIGHT"), A("\xff\xfe\0"),
               A("2"));
    EXPECT_ERR(w, "ERR node name may not contain NUL bytes", A("RING.REMOVE"), A("\x80\0"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_node_name_too_long)
{
    char name[256];
    state_t st;

    start(NULL);
    seed();
    memset(name, 'n', sizeof(name));
    EXPECT(w, "OK", A("RING.ADD"), B(name, 255));
    capture(&st);
    EXPECT_ERR(w, "ERR node name too long (256 bytes, max 255)", A("RING.ADD"), B(name, 256));
    EXPECT_ERR(w, "ERR node name too long (256 bytes, max 255)", A("RING.WEIGHT"), B(name, 256),
               A("2"));
    EXPECT_ERR(w, "ERR node name too long (256 bytes, max 255)", A("RING.REMOVE"), B(name, 256));
    EXPECT_ERR(w, "ERR filter name too long (256 bytes, max 255)", A("BF.RESERVE"), B(name, 256),
               A("0.01"), A("10"));
    EXPECT_ERR(w, "ERR filter name too long (256 bytes, max 255)", A("BF.ADD"), B(name, 256),
               A("k"));
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "OK", A("RING.REMOVE"), B(name, 255));
}
END_TEST

/* ---- ring membership ---------------------------------------------------------- */

START_TEST(test_badinput_duplicate_node)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR node exists: 'n1' (RING.WEIGHT and RING.UP, DOWN or DRAIN change it)",
               A("RING.ADD"), A("n1"));
    EXPECT_ERR(w, "ERR node exists: 'n2' (RING.WEIGHT and RING.UP, DOWN or DRAIN change it)",
               A("RING.ADD"), A("n2"), A("7"));   /* weight stays 2 */
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "n1\n1\nn2\n2", A("RING.NODES"));
}
END_TEST

START_TEST(test_badinput_remove_unknown_node)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR no such node 'n3' (RING.NODES lists the ring's)", A("RING.REMOVE"),
               A("n3"));
    EXPECT_ERR(w, "ERR no such node 'N1' (RING.NODES lists the ring's)", A("RING.REMOVE"),
               A("N1"));
    EXPECT_ERR(w, "ERR no such node 'n3' (RING.NODES lists the ring's)", A("RING.WEIGHT"),
               A("n3"), A("4"));
    /* the name quoted: no CR/LF of it ends the error line early */
    EXPECT_ERR(w, "ERR no such node 'a\\x0d\\x0ab\\x7f' (RING.NODES lists the ring's)",
               A("RING.DOWN"), A("a\r\nb\x7f"));
    ASSERT_UNCHANGED(&st);
}
END_TEST

START_TEST(test_badinput_bad_weights)
{
    static const arg_t bad[] = { A("0"), A("-1"), A("-65535"), A("65536"), A("4294967297"),
                                 A("99999999999999999999"), A("abc"), A("1.5"), A("+1"),
                                 A(" 1"), A("1 "), A(""), A("0x10"), A("1e3"), A("-0"),
                                 A("01"), A("1\0") };
    const char *want = "ERR weight must be an integer in [1, 65535]";
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    for (size_t i = 0; i < NARGS(bad); i++) {
        EXPECT_ERR(w, want, A("RING.ADD"), A("n3"), bad[i]);
        EXPECT_ERR(w, want, A("RING.WEIGHT"), A("n1"), bad[i]);
    }
    ASSERT_UNCHANGED(&st);
}
END_TEST

/* A valid weight whose table does not fit in max-memory: refused, and the
 * daemon's model is rolled back with the segment (the node can be added
 * again with a weight that fits). */
START_TEST(test_badinput_ring_too_big_for_max_memory)
{
    const char *want = "ERR cannot publish the ring: no space: segment reservation or /dev/shm "
                       "is full";
    state_t st;

    start("max-memory 1mb");
    seed();
    capture(&st);
    EXPECT_ERR(w, want, A("RING.ADD"), A("big"), A("1000"));
    EXPECT_ERR(w, want, A("RING.WEIGHT"), A("n1"), A("1000"));
    ASSERT_UNCHANGED(&st);
    EXPECT(w, "n1\n1\nn2\n2", A("RING.NODES"));
    EXPECT(w, "OK", A("RING.ADD"), A("big"), A("1"));
    EXPECT(w, "OK", A("RING.WEIGHT"), A("n1"), A("3"));
    EXPECT(w, "big\n1\nn1\n3\nn2\n2", A("RING.NODES"));
}
END_TEST

START_TEST(test_badinput_ring_bad_mode_replicas_count)
{
    state_t st;

    start(NULL);
    seed();
    capture(&st);
    EXPECT_ERR(w, "ERR unknown ring mode 'nope' (xxh3, ketama, nginx, seed, maglev or slots)", A("RING.MODE"),
               A("nope"));
    EXPECT_ERR(w, "ERR unknown ring mode '' (xxh3, ketama, nginx, seed, maglev or slots)", A("RING.MODE"), A(""));
    EXPECT_ERR(w, "ERR replicas must be an integer in [1, 4096]", A("RING.MODE"), A("seed"),
               A("0"));
    EXPECT_ERR(w, "ERR replicas must be an integer in [1, 4096]", A("RING.MODE"), A("xxh3"),
               A("4097"));
    EXPECT_ERR(w, "ERR replicas must be an integer in [1, 4096]", A("RING.MODE"), A("xxh3"),
               A("x"));
    EXPECT_ERR(w, "ERR n must be an integer in [1, 100000]", A("RING.GETN"), A("k"), A("0"));
    EXPECT_ERR(w, "ERR n must be an integer in [1, 100000]", A("RING.GETN"), A("k"), A("100001"));
    EXPECT_ERR(w, "ERR n must be an integer in [1, 100000]", A("RING.GETN"), A("k"), A("two"));
    ASSERT_UNCHANGED(&st);
    {
        int rc;
        ck_assert_ptr_nonnull(strstr(rbd_cmd(w, &rc, "INFO", "ring", (const char *)NULL),
                                     "ring_mode:xxh3\r\nring_replicas:160\r\n"));
    }
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("badinput",
                        RB_TCASE("binary arguments", 20, NULL, badinput_teardown,
                                 test_badinput_empty_key,
                                 test_badinput_empty_names,
                                 test_badinput_binary_keys_round_trip,
                                 test_badinput_binary_filter_names_round_trip,
                                 test_badinput_binary_node_names_round_trip),
                        RB_TCASE("names and limits", 20, NULL, badinput_teardown,
                                 test_badinput_key_at_max_key_bytes_round_trips,
                                 test_badinput_key_over_max_key_bytes_refused,
                                 test_badinput_node_name_too_long,
                                 test_badinput_duplicate_node,
                                 test_badinput_remove_unknown_node,
                                 test_badinput_bad_weights,
                                 test_badinput_ring_too_big_for_max_memory,
                                 test_badinput_ring_bad_mode_replicas_count),
                        badinput_filters_tcase(),
                        badinput_protocol_tcase(),
                        badinput_connections_tcase(),
                        badinput_access_tcase());
}
