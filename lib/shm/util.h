/*
 * util.h - the helpers every file of the library may use: error codes of
 * errno values, the clock, copying bytes in and out of shared words,
 * alignment and bounds arithmetic, the instance-name rule (util.c).
 */
#ifndef RBI_UTIL_H
#define RBI_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "latch.h"

/* Unix time in milliseconds (CLOCK_REALTIME): heartbeats are compared
 * across processes. */
uint64_t rbi_now_ms(void);

/* The RB_E* code for errno value e. */
int rbi_errno_code(int e);

/* 1 if s is a valid instance name: 1..RB_INSTANCE_MAX bytes of
 * [A-Za-z0-9_.-], not starting with '.'. */
int rbi_instance_ok(const char *s);

/* Copy `bytes` bytes into shared memory words with relaxed stores (the
 * last word zero-padded). */
void rbi_copy_in(_Atomic uint64_t *dst, const void *src, size_t bytes);

/* Copy n words out of shared memory with relaxed loads. */
static inline void rbi_copy_out(void *dst, const _Atomic uint64_t *src, size_t nwords)
{
    unsigned char *d = dst;
    for (size_t i = 0; i < nwords; i++) {
        uint64_t w = rbi_ld(&src[i]);
        memcpy(d + 8 * i, &w, 8);
    }
}

/* mmap(MAP_SHARED) of len bytes of fd from offset 0 at an address that is
 * a multiple of align (a power of two) if len is at least align, else
 * wherever: the kernel maps a huge page of a file with one PMD entry only
 * where the address and the file offset agree modulo its size, and aligns
 * shmem mappings by itself only on mounts that allocate huge pages.  Costs
 * one more mmap and munmap of address space, never memory.  MAP_FAILED
 * with errno as mmap. */
void *rbi_map_aligned(size_t len, int prot, int fd, size_t align);

static inline uint64_t rbi_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* width bytes of v at p, little-endian (the dump headers' fields). */
static inline void rbi_le_put(unsigned char *p, uint64_t v, size_t width)
{
    for (size_t i = 0; i < width; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The width-byte little-endian value at p. */
static inline uint64_t rbi_le_get(const unsigned char *p, size_t width)
{
    uint64_t v = 0;

    for (size_t i = width; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* n bytes of the array of 64-bit words arr from byte off into buf, each
 * word read whole and taken little-endian (a dump's data chunk). */
static inline void rbi_words_get_bytes(const _Atomic uint64_t *arr, uint64_t off,
                                       unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(rbi_ld(&arr[(off + i) / 8]) >> (8 * ((off + i) % 8)));
}

/* True if [off, off + len) lies inside a committed size `size`, with off
 * 8-byte aligned; safe against overflow for any off/len read from shm. */
static inline int rbi_span_ok(uint64_t size, uint64_t off, uint64_t len)
{
    return (off & 7) == 0 && off <= size && len <= size - off;
}

#endif /* RBI_UTIL_H */
