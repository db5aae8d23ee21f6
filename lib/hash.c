/*
 * hash.c - ring-position and Bloom-probe hashes (see hash.h for why each
 * exists).  All functions are pure, reentrant and allocation-free.
 */
#include "config.h"

#include "hash.h"

#ifdef RB_MD5_LIBCRYPTO
/* libcrypto's MD5 (assembly on x86-64), when configure found it.  MD5() is
 * deprecated in OpenSSL 3 in favour of EVP, whose per-call setup costs more
 * than the digest of a short key; configure checks that it links. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>
#else
#include <md5.h>
#endif
#include <string.h>
#include <zlib.h>

/* Decode one UTF-8 code point at s[*i] (advancing *i).  The seed hashes
 * Python str characters, i.e. code points; a byte that does not start a
 * valid, shortest-form sequence is taken as its own value, so arbitrary
 * bytes still hash deterministically. */
static uint32_t seed_next_cp(const unsigned char *s, size_t len, size_t *i)
{
    unsigned char c = s[*i];
    size_t need;
    uint32_t cp, min;

    if (c < 0x80) {
        (*i)++;
        return c;
    }
    if ((c & 0xE0) == 0xC0) {
        need = 1; cp = c & 0x1F; min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        need = 2; cp = c & 0x0F; min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        need = 3; cp = c & 0x07; min = 0x10000;
    } else {
        (*i)++;
        return c;
    }
    if (len - *i <= need) {
        (*i)++;
        return c;
    }
    for (size_t j = 1; j <= need; j++) {
        if ((s[*i + j] & 0xC0) != 0x80) {
            (*i)++;
            return c;
        }
        cp = (cp << 6) | (s[*i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        (*i)++;
        return c;
    }
    *i += need + 1;
    return cp;
}

uint64_t rbi_hash_seed(const void *key, size_t len, uint64_t salt)
{
    const unsigned char *s = key;
    uint64_t h = salt * RBI_SEED_MULT + 1;   /* wraps mod 2^64, as & _MASK64 */
    size_t i = 0;

    while (i < len)
        h = h * 31 + seed_next_cp(s, len, &i);
    return h;
}

uint32_t rbi_hash_md5_le32(const void *data, size_t len, unsigned word)
{
    unsigned char d[MD5_DIGEST_LENGTH];

#ifdef RB_MD5_LIBCRYPTO
    if (len <= 55) {
        /* One block, padded here (RFC 1321: 0x80, zeros, the length in
         * bits as a little-endian u64 at byte 56) and compressed by
         * libcrypto's assembly: the digest's words are the state words.
         * MD5() would take the same block through its buffering, 15-40 ns
         * more per key (a third of a ketama lookup's hashing). */
        unsigned char b[64];
        uint64_t bits = (uint64_t)len * 8;
        MD5_CTX c;
        if (len > 0)
            memcpy(b, data, len);
        b[len] = 0x80;
        memset(b + len + 1, 0, 55 - len);
        for (int i = 0; i < 8; i++)
            b[56 + i] = (unsigned char)(bits >> (8 * i));
        MD5_Init(&c);
        MD5_Transform(&c, b);
        switch (word & 3) {
        case 0: return (uint32_t)c.A;
        case 1: return (uint32_t)c.B;
        case 2: return (uint32_t)c.C;
        default: return (uint32_t)c.D;
        }
    }
    MD5(data, len, d);
#else
    MD5_CTX ctx;

    MD5Init(&ctx);
    MD5Update(&ctx, data, len);
    MD5Final(d, &ctx);
#endif
    word &= 3;
    return (uint32_t)d[4 * word] | (uint32_t)d[4 * word + 1] << 8 |
           (uint32_t)d[4 * word + 2] << 16 | (uint32_t)d[4 * word + 3] << 24;
}

uint32_t rbi_hash_crc32(uint32_t crc, const void *data, size_t len)
{
    /* zlib takes lengths as uInt: feed huge inputs in pieces. */
    const unsigned char *p = data;

    while (len > 0) {
        uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, p, n);
        p += n;
        len -= n;
    }
    return crc;
}
