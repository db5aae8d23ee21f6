/* check_hash.c - hash module: XXH3 vector, the seed's hash_str bit for bit,
 * keyed 128-bit probes. */
#include "hash.h"
#include "rb_test.h"

START_TEST(test_hash_xxh3_known_vector)
{
    /* XXH3_64bits of the empty input (xxHash's own sanity vector). */
    ck_assert_uint_eq(rbi_hash_xxh3("", 0), 0x2D06800538D394C2ULL);
    ck_assert_uint_ne(rbi_hash_xxh3("a", 1), rbi_hash_xxh3("b", 1));
}
END_TEST

/* Golden values from the seed document's Python:
 *   h = (salt * 0x9E3779B1 + 1) & MASK; for ch in key: h = (h*31 + ord(ch)) & MASK */
/* MD5 words of RFC 1321's padding edges (a key of 55 bytes is the longest
 * in one block, 56 the shortest in two; the same past whole blocks) and of
 * a URL-like key, against
 * Python's hashlib: whichever MD5 configure chose, and however it is fed. */
START_TEST(test_hash_md5_words_match_reference)
{
    static const struct { char c; size_t len; uint32_t w[4]; } v[] = {
        { 0, 0, { 0xd98c1dd4u, 0x04b2008fu, 0x980980e9u, 0x7e42f8ecu } },
        { 'a', 55, { 0xb67217efu, 0x22a1f9dfu, 0x95528535u, 0x65dfd04au } },
        { 'b', 56, { 0x6955d9b9u, 0xcd54766cu, 0xec6b0820u, 0x110b6731u } },
        { 'c', 64, { 0x8e70d5bcu, 0xf0189bd7u, 0x7fa2aaf0u, 0x866d05d0u } },
        /* whole blocks then a padded tail: 64 + 55 (last in two blocks),
         * 64 + 56 (first in three), 127, 128 (two whole blocks), 200 */
        { 'd', 119, { 0x2b6a774fu, 0x3446d06au, 0x6f3dc2c3u, 0xe896b6b7u } },
        { 'e', 120, { 0x5bcac0cau, 0x21f9d897u, 0x3cfa855bu, 0xf883f4ccu } },
        { 'f', 127, { 0x0b6b4ad6u, 0x08b0d79au, 0x4c312a03u, 0x0977c4d4u } },
        { 'g', 128, { 0x562d072cu, 0xdcad2c29u, 0x5d2c3f9au, 0xb4b34c1fu } },
        { 'h', 200, { 0xa9840d24u, 0x5d5118aau, 0x2d6fb169u, 0xf877c0d3u } },
    };
    static const struct { size_t len; uint32_t w[4]; } mix[] = {
        { 119, { 0x8fa84cb8u, 0x4394f450u, 0x20a30015u, 0xc9850da5u } },
        { 120, { 0x90b4e97fu, 0x153bfcbcu, 0x4f0a3f1bu, 0x6c21437bu } },
        { 200, { 0x1ed6dec2u, 0x5ccf033eu, 0x935c34d1u, 0x699cdcebu } },
    };
    static const char url[] = "https://example.com/page/1234567";
    static const uint32_t url_w[4] = { 0x85b9bd53u, 0x5a7be8e2u, 0xde37f417u, 0xb99c7730u };
    char buf[200];

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        memset(buf, v[i].c, v[i].len);
        for (unsigned w = 0; w < 4; w++)
            ck_assert_uint_eq(rbi_hash_md5_le32(buf, v[i].len, w), v[i].w[w]);
    }
    for (unsigned w = 0; w < 4; w++)
        ck_assert_uint_eq(rbi_hash_md5_le32(url, sizeof(url) - 1, w), url_w[w]);
    /* Bytes that differ block to block (33 + 7i mod 90): a tail or a block
     * taken from the wrong offset changes the digest. */
    for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++) {
        for (size_t j = 0; j < mix[i].len; j++)
            buf[j] = (char)(33 + (j * 7) % 90);
        for (unsigned w = 0; w < 4; w++)
            ck_assert_uint_eq(rbi_hash_md5_le32(buf, mix[i].len, w), mix[i].w[w]);
    }
    ck_assert_uint_eq(rbi_hash_md5_le32("abc", 3, 0), 0x98500190u);
}
END_TEST

START_TEST(test_hash_seed_matches_python_reference)
{
    static const struct {
        const char *s;
        uint64_t salt, want;
    } v[] = {
        { "", 0, 0x1 },
        { "a", 0, 0x80 },
        { "ab", 0, 0xfe2 },
        { "node#7", 7, 0xe4daea44a9fc4bceULL },
        { "\xc3\xa9", 0, 0x108 },   /* "é": one code point, 233 */
        { "https://example.org/some/long/path?q=1", 0, 0xdb14727c30668102ULL },
        { "h\xc3\xa9llo w\xc3\xb6rld \xe2\x98\x83 \xf0\x9d\x84\x9e", 3, 0xaa6712679529dae6ULL },
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        ck_assert_msg(rbi_hash_seed(v[i].s, strlen(v[i].s), v[i].salt) == v[i].want,
                      "hash_str(%s, %lu)", v[i].s, (unsigned long)v[i].salt);
}
END_TEST

START_TEST(test_hash_seed_invalid_utf8_hashes_bytes)
{
    /* A byte that starts no valid sequence counts as its own value. */
    ck_assert_uint_eq(rbi_hash_seed("\xff", 1, 0), 31 + 255);
    ck_assert_uint_eq(rbi_hash_seed("\xc3", 1, 0), 31 + 0xc3);      /* truncated */
    ck_assert_uint_eq(rbi_hash_seed("\xc0\x80", 2, 0), (31 + 0xc0) * 31 + 0x80); /* overlong */
    ck_assert_uint_eq(rbi_hash_seed("a\0b", 3, 0), ((31 + 'a') * 31 + 0) * 31 + 'b');
}
END_TEST

/* XXH3 mixes a length-dependent window of the secret: bytes 0..15 for 1-3
 * byte keys, up to all 192 for long ones.  Flipping a byte inside the
 * window must change the hash; the same secret must repeat. */
/* Key slots as redis-server 7.0.15's CLUSTER KEYSLOT answered them
 * (a cluster-enabled redis-server asked for each key); the hash-tag rules'
 * edge cases included.  tests/daemon/redis_cluster.sh compares 20,000
 * more keys with a live cluster. */
START_TEST(test_hash_keyslot_matches_redis)
{
    static const struct {
        const char *key;
        unsigned slot;
    } v[] = {
        {"somekey", 11058}, {"foo{hash_tag}", 2515}, {"foo", 12182},
        {"{user1000}.following", 3443}, {"foo{}{bar}", 8363}, {"foo{{bar}}zap", 4015},
        {"foo{bar}{zap}", 5061}, {"{}", 15257}, {"{", 4092}, {"a}b{", 6027}, {"", 0},
    };

    ck_assert_uint_eq(rbi_hash_crc16("123456789", 9), 0x31C3);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        ck_assert_msg(rbi_hash_keyslot(v[i].key, strlen(v[i].key)) == v[i].slot,
                      "slot of '%s'", v[i].key);
    ck_assert_uint_eq(rbi_hash_keyslot("{user1000}.followers", 20), 3443);
}
END_TEST

/* The sliced CRC-16 (8 bytes a step) against the bitwise definition, for
 * every length up to 70 and every offset of the tail. */
START_TEST(test_hash_crc16_sliced_equals_bitwise)
{
    unsigned char buf[70];
    uint64_t x = 0x9E3779B97F4A7C15ULL;

    for (size_t i = 0; i < sizeof(buf); i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    for (size_t len = 0; len <= sizeof(buf); len++) {
        uint16_t c = 0;
        for (size_t i = 0; i < len; i++) {
            c ^= (uint16_t)(buf[i] << 8);
            for (int b = 0; b < 8; b++)
                c = (uint16_t)(c & 0x8000 ? (c << 1) ^ 0x1021 : c << 1);
        }
        ck_assert_uint_eq(rbi_hash_crc16(buf, len), c);
    }
}
END_TEST

START_TEST(test_hash_keyed128_depends_on_secret)
{
    static const struct {
        size_t keylen, flip;
    } v[] = { { 3, 3 }, { 8, 20 }, { 16, 40 }, { 100, 100 }, { 300, 150 } };
    unsigned char s1[RBI_SECRET_BYTES], s2[RBI_SECRET_BYTES], key[300];
    rbi_h128_t a, b, c;

    for (int i = 0; i < RBI_SECRET_BYTES; i++)
        s1[i] = (unsigned char)(i * 7 + 1);
    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)(i * 13);
    for (size_t t = 0; t < sizeof(v) / sizeof(v[0]); t++) {
        memcpy(s2, s1, sizeof(s1));
        s2[v[t].flip] ^= 1;
        a = rbi_hash_keyed128(s1, sizeof(s1), key, v[t].keylen);
        b = rbi_hash_keyed128(s1, sizeof(s1), key, v[t].keylen);
        c = rbi_hash_keyed128(s2, sizeof(s2), key, v[t].keylen);
        ck_assert(a.h1 == b.h1 && a.h2 == b.h2);
        ck_assert_msg(a.h1 != c.h1 || a.h2 != c.h2, "len %zu flip %zu", v[t].keylen, v[t].flip);
        if (v[t].keylen > 16)
            ck_assert(a.h1 != c.h1 && a.h2 != c.h2);
        ck_assert(a.h1 != a.h2);
    }
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("hash",
                        RB_TCASE("core", 0, NULL, NULL, test_hash_xxh3_known_vector,
                                 test_hash_md5_words_match_reference,
                                 test_hash_seed_matches_python_reference,
                                 test_hash_seed_invalid_utf8_hashes_bytes,
                                 test_hash_keyed128_depends_on_secret,
                                 test_hash_keyslot_matches_redis,
                                 test_hash_crc16_sliced_equals_bitwise));
}
