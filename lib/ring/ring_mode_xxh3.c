/*
 * ring_mode_xxh3.c - the default ring mode.  A key sits at XXH3-64(key);
 * node N gets replicas x weight vnodes, vnode r at XXH3-64("N#r").
 * Unseeded, so any language's XXH3 reproduces the ring.  Equal positions
 * are ordered by node name, so the table never depends on the order nodes
 * were added.
 */
#include "config.h"

#include "hash.h"
#include "ring_mode.h"

static uint64_t xxh3_key(const void *key, size_t len)
{
    return rbi_hash_xxh3(key, len);
}

/* Vnodes hash as keys do: r is not mixed in. */
static uint64_t xxh3_vnode(const void *s, size_t n, uint64_t r)
{
    (void)r;
    return rbi_hash_xxh3(s, n);
}

const rbi_ring_mode_ops_t rbi_ring_mode_xxh3 = {
    .name = "xxh3", .key_pos = xxh3_key, .tie_by_seq = 0, .resize_all = 0,
    .points = rbi_ring_points_by_replicas, .points_bound = rbi_ring_bound_by_replicas,
    .place = rbi_ring_place_vnodes, .vnode_hash = xxh3_vnode,
};
