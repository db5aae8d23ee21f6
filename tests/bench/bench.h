/*
 * bench.h - what bench.c uses from the benchmark's other files: here,
 * libcrypto's MD5 timed in bench_md5.c (its header cannot share a file
 * with libmd's, which bench.c times).
 */
#ifndef RB_BENCH_H
#define RB_BENCH_H

#include <stddef.h>
#include <stdio.h>

/* Million MD5s per second of keys[0..n-1] (lengths klen) with libcrypto's
 * MD5(), the first 4 digest bytes taken as ketama does; NAN if the build
 * has no libcrypto (configure did not find it, or --without-libcrypto). */
double bench_md5_libcrypto(char *const *keys, const size_t *klen, int n);

/* Section h (bench_huge.c): contains_many on a 1 GiB blocked filter in
 * small pages and in 2 MiB pages, printed and appended to csv (may be
 * NULL); reps runs each.  Runs in a private mount namespace (root). */
void bench_huge(int reps, FILE *csv);

#endif
