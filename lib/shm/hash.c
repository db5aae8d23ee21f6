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
#ifdef RB_MD5_LIBCRYPTO
    /* The key's whole 64-byte blocks straight from it, then its tail
     * padded here (RFC 1321: 0x80, zeros, the length in bits as a
     * little-endian u64 in the last 8 bytes; a tail of 56..63 bytes takes
     * a second block), each compressed by libcrypto's assembly: the
     * digest's words are the state words.  MD5() would take the same
     * blocks through its buffering, 15-40 ns more per key (a third of a
     * ketama lookup's hashing), whatever the key's length. */
    const unsigned char *p = data;
    unsigned char b[128];
    size_t full = len & ~(size_t)63, tail = len - full, last = tail <= 55 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    MD5_CTX c;

    MD5_Init(&c);
    for (size_t off = 0; off < full; off += 64)
        MD5_Transform(&c, p + off);
    if (tail > 0)
        memcpy(b, p + full, tail);
    b[tail] = 0x80;
    memset(b + tail + 1, 0, last - 8 - tail - 1);
    for (int i = 0; i < 8; i++)
        b[last - 8 + i] = (unsigned char)(bits >> (8 * i));
    MD5_Transform(&c, b);
    if (last == 128)
        MD5_Transform(&c, b + 64);
    switch (word & 3) {
    case 0: return (uint32_t)c.A;
    case 1: return (uint32_t)c.B;
    case 2: return (uint32_t)c.C;
    default: return (uint32_t)c.D;
    }
#else
    unsigned char d[MD5_DIGEST_LENGTH];
    MD5_CTX ctx;

    MD5Init(&ctx);
    MD5Update(&ctx, data, len);
    MD5Final(d, &ctx);
    word &= 3;
    return (uint32_t)d[4 * word] | (uint32_t)d[4 * word + 1] << 8 |
           (uint32_t)d[4 * word + 2] << 16 | (uint32_t)d[4 * word + 3] << 24;
#endif
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

/* CRC-16/XMODEM (polynomial 0x1021, initial 0, not reflected): the table
 * of each byte's remainder, as Redis Cluster's crc16.c computes it. */
static const uint16_t crc16_table[256] = {
    0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5, 0x60c6, 0x70e7,
    0x8108, 0x9129, 0xa14a, 0xb16b, 0xc18c, 0xd1ad, 0xe1ce, 0xf1ef,
    0x1231, 0x0210, 0x3273, 0x2252, 0x52b5, 0x4294, 0x72f7, 0x62d6,
    0x9339, 0x8318, 0xb37b, 0xa35a, 0xd3bd, 0xc39c, 0xf3ff, 0xe3de,
    0x2462, 0x3443, 0x0420, 0x1401, 0x64e6, 0x74c7, 0x44a4, 0x5485,
    0xa56a, 0xb54b, 0x8528, 0x9509, 0xe5ee, 0xf5cf, 0xc5ac, 0xd58d,
    0x3653, 0x2672, 0x1611, 0x0630, 0x76d7, 0x66f6, 0x5695, 0x46b4,
    0xb75b, 0xa77a, 0x9719, 0x8738, 0xf7df, 0xe7fe, 0xd79d, 0xc7bc,
    0x48c4, 0x58e5, 0x6886, 0x78a7, 0x0840, 0x1861, 0x2802, 0x3823,
    0xc9cc, 0xd9ed, 0xe98e, 0xf9af, 0x8948, 0x9969, 0xa90a, 0xb92b,
    0x5af5, 0x4ad4, 0x7ab7, 0x6a96, 0x1a71, 0x0a50, 0x3a33, 0x2a12,
    0xdbfd, 0xcbdc, 0xfbbf, 0xeb9e, 0x9b79, 0x8b58, 0xbb3b, 0xab1a,
    0x6ca6, 0x7c87, 0x4ce4, 0x5cc5, 0x2c22, 0x3c03, 0x0c60, 0x1c41,
    0xedae, 0xfd8f, 0xcdec, 0xddcd, 0xad2a, 0xbd0b, 0x8d68, 0x9d49,
    0x7e97, 0x6eb6, 0x5ed5, 0x4ef4, 0x3e13, 0x2e32, 0x1e51, 0x0e70,
    0xff9f, 0xefbe, 0xdfdd, 0xcffc, 0xbf1b, 0xaf3a, 0x9f59, 0x8f78,
    0x9188, 0x81a9, 0xb1ca, 0xa1eb, 0xd10c, 0xc12d, 0xf14e, 0xe16f,
    0x1080, 0x00a1, 0x30c2, 0x20e3, 0x5004, 0x4025, 0x7046, 0x6067,
    0x83b9, 0x9398, 0xa3fb, 0xb3da, 0xc33d, 0xd31c, 0xe37f, 0xf35e,
    0x02b1, 0x1290, 0x22f3, 0x32d2, 0x4235, 0x5214, 0x6277, 0x7256,
    0xb5ea, 0xa5cb, 0x95a8, 0x8589, 0xf56e, 0xe54f, 0xd52c, 0xc50d,
    0x34e2, 0x24c3, 0x14a0, 0x0481, 0x7466, 0x6447, 0x5424, 0x4405,
    0xa7db, 0xb7fa, 0x8799, 0x97b8, 0xe75f, 0xf77e, 0xc71d, 0xd73c,
    0x26d3, 0x36f2, 0x0691, 0x16b0, 0x6657, 0x7676, 0x4615, 0x5634,
    0xd94c, 0xc96d, 0xf90e, 0xe92f, 0x99c8, 0x89e9, 0xb98a, 0xa9ab,
    0x5844, 0x4865, 0x7806, 0x6827, 0x18c0, 0x08e1, 0x3882, 0x28a3,
    0xcb7d, 0xdb5c, 0xeb3f, 0xfb1e, 0x8bf9, 0x9bd8, 0xabbb, 0xbb9a,
    0x4a75, 0x5a54, 0x6a37, 0x7a16, 0x0af1, 0x1ad0, 0x2ab3, 0x3a92,
    0xfd2e, 0xed0f, 0xdd6c, 0xcd4d, 0xbdaa, 0xad8b, 0x9de8, 0x8dc9,
    0x7c26, 0x6c07, 0x5c64, 0x4c45, 0x3ca2, 0x2c83, 0x1ce0, 0x0cc1,
    0xef1f, 0xff3e, 0xcf5d, 0xdf7c, 0xaf9b, 0xbfba, 0x8fd9, 0x9ff8,
    0x6e17, 0x7e36, 0x4e55, 0x5e74, 0x2e93, 0x3eb2, 0x0ed1, 0x1ef0,
};

/* Slicing by 8: crc16_slice[k][x] is the CRC of byte x followed by k zero
 * bytes, so that 8 bytes b0..b7 taken into state c give
 *   slice[7][hi(c) ^ b0] ^ slice[6][lo(c) ^ b1] ^ slice[5][b2] ^ ... ^ slice[0][b7]
 * (a 16-bit state is shifted out entirely by two bytes; the rest is the
 * linearity of the CRC): eight independent loads instead of a chain of
 * eight.  Filled once, when the library is loaded, from crc16_table. */
static uint16_t crc16_slice[8][256];

__attribute__((constructor)) static void crc16_slice_init(void)
{
    for (unsigned x = 0; x < 256; x++) {
        crc16_slice[0][x] = crc16_table[x];
        for (unsigned k = 1; k < 8; k++) {
            uint16_t c = crc16_slice[k - 1][x];
            crc16_slice[k][x] = (uint16_t)(c << 8) ^ crc16_table[c >> 8];
        }
    }
}

uint16_t rbi_hash_crc16(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint16_t crc = 0;
    size_t i = 0;

    for (; i + 8 <= len; i += 8)
        crc = crc16_slice[7][(crc >> 8) ^ p[i]] ^ crc16_slice[6][(crc & 0xff) ^ p[i + 1]] ^
              crc16_slice[5][p[i + 2]] ^ crc16_slice[4][p[i + 3]] ^ crc16_slice[3][p[i + 4]] ^
              crc16_slice[2][p[i + 5]] ^ crc16_slice[1][p[i + 6]] ^ crc16_slice[0][p[i + 7]];
    for (; i < len; i++)
        crc = (uint16_t)(crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff];
    return crc;
}

uint16_t rbi_hash_keyslot(const void *key, size_t len)
{
    const char *k = key;
    const char *open = len > 0 ? memchr(k, '{', len) : NULL;

    if (open != NULL) {
        size_t from = (size_t)(open - k) + 1;
        const char *close = memchr(k + from, '}', len - from);

        if (close != NULL && close > k + from)
            return rbi_hash_crc16(k + from, (size_t)(close - (k + from))) & (RBI_KEYSLOTS - 1);
    }
    return rbi_hash_crc16(k, len) & (RBI_KEYSLOTS - 1);
}
