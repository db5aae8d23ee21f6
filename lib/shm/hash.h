/*
 * hash.h - the hash functions of libringbloom (internal).
 *
 * The families, each chosen for one job:
 *   - rbi_hash_xxh3:  XXH3-64 (libxxhash), unseeded.  Ring positions of keys
 *     and of "name#i" vnodes in the default mode.  Fast and well mixed;
 *     unseeded so that any language's XXH3 reproduces the ring.
 *   - rbi_hash_seed:  the teaching document's hash_str(key, salt): base-31
 *     Horner over code points in a 64-bit ring, seeded with
 *     salt * 0x9E3779B1 + 1.  Deliberately weak; kept bit-exact so the seed
 *     tables reproduce (see docs/design.md, "Hashing": seed ring).
 *   - rbi_hash_md5_le32 / rbi_hash_crc32: MD5 (libcrypto's if configure
 *     found it, else libmd's: the same digests) and zlib CRC-32 for the
 *     ketama (libmemcached) and nginx ring modes.
 *   - rbi_hash_keyed128: XXH3-128 with a per-filter random 192-byte secret,
 *     split into (h1, h2) for double hashing.  The secret stops remote users
 *     from crafting keys that collide in a filter.
 *   - rbi_hash_murmur64a: MurmurHash64A (Austin Appleby's, little-endian
 *     words), which LAYOUT redisbloom filters hash with as RedisBloom 2.6
 *     does: h1 = M(key, 0xc6a4a7935bd1e995), h2 = M(key, h1).  Unkeyed: a
 *     filter of that layout answers exactly as RedisBloom's, crafted keys
 *     included.
 *   - rbi_hash_crc16 / rbi_hash_keyslot: CRC-16/XMODEM and Redis Cluster's
 *     key slot (CRC16 of the key, or of its {hash tag}, mod 16384), bit
 *     for bit as redis-server's keyHashSlot: the slots ring mode.
 */
#ifndef RBI_HASH_H
#define RBI_HASH_H

#include <stddef.h>
#include <stdint.h>

/* XXH3 inlined into its callers: on the lookup paths the call itself
 * would cost as much as hashing a short key. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define RBI_SEED_MULT 0x9E3779B1ULL

typedef struct rbi_h128 {
    uint64_t h1, h2;
} rbi_h128_t;

static inline uint64_t rbi_hash_xxh3(const void *key, size_t len)
{
    return XXH3_64bits(key, len);
}

/* rbi_hash_keyed128 inlined into its caller whatever gcc's size limits
 * say: the cached single queries (cuckoo.c, cms.c), where the call and
 * its frame were a fifth of the call's instructions (bench section c). */
static inline __attribute__((always_inline, flatten)) rbi_h128_t
rbi_hash_keyed128_inl(const void *secret, size_t secret_len, const void *key, size_t len)
{
    XXH128_hash_t h = XXH3_128bits_withSecret(key, len, secret, secret_len);
    rbi_h128_t r = { h.low64, h.high64 };
    return r;
}

/* flatten: XXH3's length dispatch and short-key paths inlined here too
 * (left to itself gcc calls one out-of-line copy: a call per query on the
 * Bloom fast path, issue 29). */
static inline __attribute__((flatten)) rbi_h128_t
rbi_hash_keyed128(const void *secret, size_t secret_len, const void *key, size_t len)
{
    return rbi_hash_keyed128_inl(secret, secret_len, key, len);
}

/* MurmurHash64A of key[0 .. len) with seed, reading 8-byte words
 * little-endian whatever the host's order (RedisBloom reads them in the
 * host's order: on a little-endian host, the same). */
static inline uint64_t rbi_hash_murmur64a(const void *key, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    const unsigned char *p = key;
    uint64_t h = seed ^ ((uint64_t)len * m);
    size_t words = len / 8;

    for (size_t i = 0; i < words; i++, p += 8) {
        uint64_t k = 0;
        for (int b = 7; b >= 0; b--)
            k = (k << 8) | p[b];
        k *= m;
        k ^= k >> 47;
        k *= m;
        h ^= k;
        h *= m;
    }
    if (len & 7) {
        for (size_t b = len & 7; b-- > 0;)
            h ^= (uint64_t)p[b] << (8 * b);
        h *= m;
    }
    h ^= h >> 47;
    h *= m;
    h ^= h >> 47;
    return h;
}

uint64_t rbi_hash_seed(const void *key, size_t len, uint64_t salt);

/* Compatibility modes (byte-exact with the real implementations):
 * word i (0..3) of MD5(data), little-endian (libmemcached ketama), and
 * zlib's crc32 continued from crc (nginx's hash ... consistent). */
uint32_t rbi_hash_md5_le32(const void *data, size_t len, unsigned word);
uint32_t rbi_hash_crc32(uint32_t crc, const void *data, size_t len);

/* Redis Cluster's slots: RBI_KEYSLOTS of them.  A key's slot is the
 * CRC-16/XMODEM of the key mod 16384, or, when the key holds a '{' with a
 * '}' after it and at least one byte between the first '{' and the first
 * '}' after it, of those bytes only (the hash tag), as keyHashSlot in
 * redis-server's cluster.c. */
#define RBI_KEYSLOTS 16384u
uint16_t rbi_hash_crc16(const void *data, size_t len);
uint16_t rbi_hash_keyslot(const void *key, size_t len);

#endif /* RBI_HASH_H */
