/*
 * bytes.h - byte-level helpers of the state files (aof.c, snapshot.c,
 * ops.c, replay.c): little-endian fields, and a write(2) that finishes.
 * Header-only: the files that share them need no common object.
 */
#ifndef RBD_BYTES_H
#define RBD_BYTES_H

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static inline void rbd_put_u32(unsigned char *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, 4);
}

static inline void rbd_put_u64(unsigned char *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, 8);
}

static inline uint16_t rbd_get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t rbd_get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return le32toh(v);
}

static inline uint64_t rbd_get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return le64toh(v);
}

/* Writes all of data (retrying short writes and EINTR): 0, or -1 with errno. */
static inline int rbd_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

#endif /* RBD_BYTES_H */
