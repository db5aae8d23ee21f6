/*
 * ring_mode_ketama.c - libmemcached's KETAMA_WEIGHTED, byte-exact.  Node
 * names are "host:port" (no port: 11211).  With n nodes of total weight W,
 * node i gets floor((float)(w_i / W) * 160 / 4 * n + 1e-10f) * 4 points,
 * in single-precision float as libmemcached computes it (double would move
 * ~2% of keys).  Digest d (0-based) is MD5("host-d") if the port is 11211,
 * else MD5("host:port-d"), and gives 4 points: its little-endian 32-bit
 * words.  A key sits at MD5(key) word 0; 32-bit positions sit in the top
 * half of the ring.  Every membership change re-sizes every node, and ties
 * go to the earlier server (libmemcached's order), i.e. by the order nodes
 * were added.  replicas is not used.
 */
#include "config.h"

#include <math.h>

#include "hash.h"
#include "ring_mode.h"

#define DEFAULT_PORT 11211
#define SHARE_POINTS 160u   /* points per node on average */

/* "host:port" -> host and numeric port as libmemcached holds them. */
static void split_ketama(const char *name, size_t len, size_t *hostlen, unsigned *port)
{
    const char *p;
    size_t portlen;

    rbi_ring_split_hostport(name, len, hostlen, &p, &portlen);
    *port = DEFAULT_PORT;
    if (portlen > 0 && portlen <= 5) {
        unsigned v = 0;
        for (size_t i = 0; i < portlen; i++)
            v = v * 10 + (unsigned)(p[i] - '0');
        if (v != 0)
            *port = v;
    }
}

static uint64_t ketama_key(const void *key, size_t len)
{
    return (uint64_t)rbi_hash_md5_le32(key, len, 0) << 32;
}

/* libmemcached hosts.cc: computed in float, as it does. */
static uint64_t ketama_points(uint32_t weight, uint32_t replicas, uint64_t total_weight,
                              size_t nnodes)
{
    float pct = (float)weight / (float)total_weight;

    (void)replicas;
    return (uint64_t)(floorf(pct * (float)SHARE_POINTS / 4.0f * (float)nnodes + 0.0000000001f) *
                      4.0f);
}

/* Shares of 160 per node, each rounded down to whole digests, except that
 * the float share can round up by one digest. */
static uint64_t ketama_bound(uint64_t total_weight, size_t nnodes, uint32_t replicas)
{
    (void)total_weight;
    (void)replicas;
    return (SHARE_POINTS + 4) * (uint64_t)nnodes;
}

static void ketama_place(const rbi_ring_mode_ops_t *mode, const char *name, size_t len,
                         size_t count, rbi_ring_point_t *out)
{
    char buf[RB_NODE_NAME_MAX + 32];
    size_t hostlen;
    unsigned port;

    (void)mode;
    split_ketama(name, len, &hostlen, &port);
    for (size_t d = 0; d < count / 4; d++) {
        int n = port == DEFAULT_PORT
            ? snprintf(buf, sizeof(buf), "%.*s-%zu", (int)hostlen, name, d)
            : snprintf(buf, sizeof(buf), "%.*s:%u-%zu", (int)hostlen, name, port, d);
        for (unsigned x = 0; x < 4; x++)
            out[4 * d + x].pos = (uint64_t)rbi_hash_md5_le32(buf, (size_t)n, x) << 32;
    }
}

const rbi_ring_mode_ops_t rbi_ring_mode_ketama = {
    .name = "ketama", .key_pos = ketama_key, .tie_by_seq = 1, .resize_all = 1,
    .points = ketama_points, .points_bound = ketama_bound, .place = ketama_place,
};
