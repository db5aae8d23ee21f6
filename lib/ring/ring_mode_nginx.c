/*
 * ring_mode_nginx.c - nginx's "hash $key consistent" (upstream hash
 * module), byte-exact.  Node names are the upstream's server strings.  A
 * key sits at CRC-32(key); a node of weight w gets 160 w points, chained:
 * point j = CRC-32(host || NUL || port || LE32(point j-1)), point -1 = 0.
 * 32-bit positions sit in the top half of the ring.  Equal positions keep
 * the earlier server first, as nginx does (the lower bound lands on the
 * first of an equal run), so ties are ordered by the order nodes were
 * added.  replicas is not used.
 */
#include "config.h"

#include <strings.h>

#include "hash.h"
#include "ring_mode.h"

#define POINTS_PER_WEIGHT 160

void rbi_ring_split_hostport(const char *name, size_t len, size_t *hostlen, const char **port,
                             size_t *portlen)
{
    *hostlen = len;
    *port = name + len;
    *portlen = 0;
    if (len >= 5 && strncasecmp(name, "unix:", 5) == 0)
        return;
    for (size_t j = 0; j < len; j++) {
        char c = name[len - 1 - j];
        if (c == ':') {
            *hostlen = len - j - 1;
            *port = name + len - j;
            *portlen = j;
            return;
        }
        if (c < '0' || c > '9')
            return;
    }
}

static uint64_t nginx_key(const void *key, size_t len)
{
    return (uint64_t)rbi_hash_crc32(0, key, len) << 32;
}

static uint64_t nginx_points(uint32_t weight, uint32_t replicas, uint64_t total_weight,
                             size_t nnodes)
{
    (void)replicas;
    (void)total_weight;
    (void)nnodes;
    return (uint64_t)POINTS_PER_WEIGHT * weight;
}

static uint64_t nginx_bound(uint64_t total_weight, size_t nnodes, uint32_t replicas)
{
    (void)nnodes;
    (void)replicas;
    return POINTS_PER_WEIGHT * total_weight;
}

static void nginx_place(const rbi_ring_mode_ops_t *mode, const char *name, size_t len,
                        size_t count, rbi_ring_point_t *out)
{
    size_t hostlen, portlen;
    const char *port;
    uint32_t base, prev = 0;
    unsigned char le[4];

    (void)mode;
    rbi_ring_split_hostport(name, len, &hostlen, &port, &portlen);
    base = rbi_hash_crc32(0, name, hostlen);
    base = rbi_hash_crc32(base, "", 1);
    base = rbi_hash_crc32(base, port, portlen);
    for (size_t j = 0; j < count; j++) {
        le[0] = (unsigned char)prev;
        le[1] = (unsigned char)(prev >> 8);
        le[2] = (unsigned char)(prev >> 16);
        le[3] = (unsigned char)(prev >> 24);
        prev = rbi_hash_crc32(base, le, 4);
        out[j].pos = (uint64_t)prev << 32;
    }
}

const rbi_ring_mode_ops_t rbi_ring_mode_nginx = {
    .name = "nginx", .key_pos = nginx_key, .tie_by_seq = 1, .resize_all = 0,
    .points = nginx_points, .points_bound = nginx_bound, .place = nginx_place,
};
