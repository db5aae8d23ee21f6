/*
 * ring_mode_slots.c - Redis Cluster's key slots.  A table mode
 * (ring_mode.h): M = 16384 slots, a key sits at its Redis Cluster key
 * slot (CRC-16/XMODEM of the key, or of its {hash tag}, mod 16384:
 * rbi_hash_keyslot, bit for bit as redis-server's keyHashSlot).
 *
 * The slot map is balanced by weight (this file's fill: contiguous ranges
 * over the nodes in name order, node i taking slots
 * floor(16384 x C_i / W) .. floor(16384 x C_(i+1) / W) - 1, C_i the
 * weight of the nodes before it and W the total) until slots are assigned
 * explicitly (rb_ring_set_slots, RING.SLOTS); the model keeps an explicit
 * map itself (ring_table.c), and the mode's parameter says which it is.
 */
#include "config.h"

#include "hash.h"
#include "ring_mode.h"

static uint64_t slots_key(const void *key, size_t len)
{
    return rbi_hash_keyslot(key, len);
}

static uint64_t slots_table_size(uint32_t param, size_t nnodes)
{
    (void)param;
    return nnodes ? RB_RING_SLOT_COUNT : 0;
}

/* Set by a mode switch: always balanced (1, explicit, comes from
 * rb_ring_set_slots or a loaded copy). */
static int slots_param_ok(uint32_t param)
{
    return param == 0;
}

static int slots_fill(const rbi_ring_node_t *nodes, size_t n, uint64_t m, uint32_t *table)
{
    uint64_t total = 0, before = 0, s = 0;

    for (size_t i = 0; i < n; i++)
        total += nodes[i].weight;
    for (size_t i = 0; i < n; i++) {
        uint64_t end;
        before += nodes[i].weight;
        end = m * before / total;   /* < 2^14 x 2^33: no overflow */
        for (; s < end; s++)
            table[s] = (uint32_t)i;
    }
    return RB_OK;
}

const rbi_ring_mode_ops_t rbi_ring_mode_slots = {
    .name = "slots", .key_pos = slots_key, .tie_by_seq = 0, .resize_all = 1,
    .table = 1, .param_max = 1, .map_settable = 1, .table_size = slots_table_size,
    .param_ok = slots_param_ok, .fill = slots_fill,
};
