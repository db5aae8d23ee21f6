/*
 * bench_md5.c - the md5-libcrypto contender of the bench's ring table:
 * libcrypto's MD5 of each key and nothing else, beside md5-only (libmd's,
 * in bench.c).  A file of its own because OpenSSL's <openssl/md5.h> and
 * libmd's <md5.h> both define MD5_CTX.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

#include "bench.h"

#ifdef RB_MD5_LIBCRYPTO
/* Deprecated in OpenSSL 3, as lib/shm/hash.c explains; configure checked it. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>

static volatile uint64_t sink;

double bench_md5_libcrypto(char *const *keys, const size_t *klen, int n)
{
    struct timespec a, b;
    uint64_t acc = 0;

    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        unsigned char d[MD5_DIGEST_LENGTH];
        MD5((const unsigned char *)keys[i], klen[i], d);
        acc += (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
               (uint32_t)d[3] << 24;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    sink = acc;
    return n / ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9) / 1e6;
}
#else
double bench_md5_libcrypto(char *const *keys, const size_t *klen, int n)
{
    (void)keys;
    (void)klen;
    (void)n;
    return NAN;
}
#endif
