/*
 * check_compat.c - ketama mode against the real libmemcached: for several
 * server lists, 100,000 keys each, ringbloom's owner must be the server
 * memcached_generate_hash picks (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED).
 * Plus the hash vectors the two compatible modes are built on.
 */
#include <libmemcached/memcached.h>

#include "hash.h"
#include "rb_test.h"

#define NKEYS 100000

typedef struct server {
    const char *host;
    unsigned port;
    uint32_t weight;
} server_t;

/* Maps NKEYS keys with both implementations; returns the disagreements. */
static long compare(const server_t *list, size_t n)
{
    memcached_st *memc = memcached_create(NULL);
    rb_segment_t *seg;
    rb_ring_t *ring;
    char name[300], key[160];
    long diff = 0;

    ck_assert_ptr_nonnull(memc);
    ck_assert_int_eq(memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1),
                     MEMCACHED_SUCCESS);
    ck_assert_int_eq(rb_ring_new(RB_RING_KETAMA, 0, &ring), RB_OK);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(memcached_server_add_with_weight(memc, list[i].host,
                                                          (in_port_t)list[i].port,
                                                          list[i].weight), MEMCACHED_SUCCESS);
        snprintf(name, sizeof(name), "%s:%u", list[i].host, list[i].port);
        ck_assert_int_eq(rb_ring_add(ring, name, strlen(name), list[i].weight), RB_OK);
    }
    ck_assert_int_eq(rb_segment_create(NULL, NULL, &seg), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ring, seg), RB_OK);
    for (unsigned long k = 0; k < NKEYS; k++) {
        size_t len = k % 2 ? rb_test_key(key, sizeof(key), "mc", k)
                           : (size_t)snprintf(key, sizeof(key), "key%lu", k);
        uint32_t idx = memcached_generate_hash(memc, key, len);
        rb_node_t node;
        ck_assert_int_eq(rb_ring_lookup(seg, key, len, &node), RB_OK);
        snprintf(name, sizeof(name), "%s:%u", list[idx].host, list[idx].port);
        diff += strcmp(name, node.name) != 0;
    }
    rb_segment_close(seg);
    rb_ring_free(ring);
    memcached_free(memc);
    return diff;
}

#define COMPARE(list) \
    do { \
        long d = compare(list, sizeof(list) / sizeof(list[0])); \
        printf("ketama %-22s %zu servers: %ld of %d keys differ\n", #list, \
               sizeof(list) / sizeof(list[0]), d, NKEYS); \
        ck_assert_int_eq(d, 0); \
    } while (0)

START_TEST(test_compat_ketama_equal_weights)
{
    static const server_t equal[] = { { "127.0.0.1", 11211, 1 }, { "127.0.0.2", 11211, 1 },
                                      { "127.0.0.3", 11211, 1 }, { "127.0.0.4", 11211, 1 },
                                      { "127.0.0.5", 11211, 1 } };
    COMPARE(equal);
}
END_TEST

START_TEST(test_compat_ketama_mixed_weights)
{
    static const server_t mixed[] = { { "cache-a.example.net", 11211, 5 },
                                      { "cache-b.example.net", 11311, 7 },
                                      { "cache-c.example.net", 22122, 1 },
                                      { "cache-d.example.net", 11211, 13 } };
    /* Shares whose float rounding differs from double (libmemcached uses float). */
    static const server_t float_edge[] = { { "10.1.0.1", 11211, 1 }, { "10.1.0.2", 11211, 1 },
                                           { "10.1.0.3", 11211, 1 }, { "10.1.0.4", 11211, 1 },
                                           { "10.1.0.5", 11211, 21 } };
    COMPARE(mixed);
    COMPARE(float_edge);
}
END_TEST

START_TEST(test_compat_ketama_non_default_ports)
{
    static const server_t ports[] = { { "10.0.0.1", 11212, 1 }, { "10.0.0.2", 11213, 2 },
                                      { "10.0.0.3", 11214, 3 }, { "10.0.0.3", 11215, 1 } };
    COMPARE(ports);
}
END_TEST

START_TEST(test_compat_ketama_one_server)
{
    static const server_t one[] = { { "only.example.net", 11211, 3 } };
    COMPARE(one);
}
END_TEST

START_TEST(test_compat_ketama_hundred_servers)
{
    static server_t many[100];
    static char hosts[100][32];

    for (int i = 0; i < 100; i++) {
        snprintf(hosts[i], sizeof(hosts[i]), "mc%02d.pool.example", i);
        many[i].host = hosts[i];
        many[i].port = 11211 + (unsigned)(i % 3);
        many[i].weight = 1 + (uint32_t)(i % 5);
    }
    COMPARE(many);
}
END_TEST

/* Vectors from the implementations themselves (see docs/design.md). */
START_TEST(test_compat_hash_vectors)
{
    ck_assert_uint_eq(rbi_hash_md5_le32("127.0.0.1-0", 11, 0), 0xbdffa47fu);
    ck_assert_uint_eq(rbi_hash_md5_le32("127.0.0.1-0", 11, 3), 0xffe0f4b2u);
    ck_assert_uint_eq(rbi_hash_md5_le32("key0", 4, 0), 0xf202f421u);
    ck_assert_uint_eq(rbi_hash_crc32(0, "key0", 4), 0x5b5b54c6u);
    ck_assert_uint_eq(rbi_hash_crc32(0, "foo", 3), 0x8c736521u);
    ck_assert_uint_eq(rbi_hash_crc32(0, "", 0), 0);
    /* nginx: crc32("127.0.0.1" "\0" "8081" LE32(0)) is the first point. */
    ck_assert_uint_eq(rbi_hash_crc32(0, "127.0.0.1\0" "8081\0\0\0\0", 18), 0x50aabcf7u);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("compat",
                        RB_TCASE("vectors", 120, NULL, NULL, test_compat_hash_vectors),
                        RB_TCASE("ketama", 120, NULL, NULL, test_compat_ketama_equal_weights,
                                 test_compat_ketama_mixed_weights,
                                 test_compat_ketama_non_default_ports,
                                 test_compat_ketama_one_server,
                                 test_compat_ketama_hundred_servers));
}
