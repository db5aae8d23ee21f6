/*
 * ring_mode_seed.c - the teaching document's ring, bit-exact with the
 * seed's Python: hash_str(s, salt) (hash.c) over UTF-8 code points.  A key
 * sits at hash_str(key, 0); node N gets replicas x weight vnodes, vnode r
 * at hash_str("N#r", r).  Its weaknesses are kept on purpose (short keys
 * crowd near 0; names n0..n3 collapse onto one node: check_ring).  Equal
 * positions are ordered by node name.
 */
#include "config.h"

#include "hash.h"
#include "ring_mode.h"

static uint64_t seed_key(const void *key, size_t len)
{
    return rbi_hash_seed(key, len, 0);
}

const rbi_ring_mode_ops_t rbi_ring_mode_seed = {
    .name = "seed", .key_pos = seed_key, .tie_by_seq = 0, .resize_all = 0,
    .points = rbi_ring_points_by_replicas, .points_bound = rbi_ring_bound_by_replicas,
    .place = rbi_ring_place_vnodes, .vnode_hash = rbi_hash_seed,  /* salted with r */
};
