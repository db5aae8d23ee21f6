/*
 * ring_mode_maglev.c - Maglev hashing (Eisenbud et al., "Maglev: A Fast
 * and Reliable Software Network Load Balancer", NSDI 2016, section 3.4),
 * weighted as Envoy's maglev load balancer weighs hosts.  A table mode
 * (ring_mode.h): the ring is a lookup table of M slots, M prime.
 *
 * - M: the table size RING.MODE / rb_ring_set_mode asked for (a prime up
 *   to RBI_MAGLEV_MAX_M), fixed whatever the membership; or, asked for 0,
 *   automatic: the largest prime <= 2^(16+k) + 1 for the smallest k with
 *   that >= 100 x nodes (65537 up to 655 nodes, then 131071, 262139, ...,
 *   16777213).  An automatic M changes only when the node count crosses
 *   one of those steps, and then nearly every key moves.
 * - Node N (nodes in name order, so the table never depends on the order
 *   of changes): offset = XXH3-64(N, seed 0) mod M, skip = XXH3-64(N,
 *   seed 1) mod (M - 1) + 1; its preference list is offset + j x skip mod
 *   M, j = 0, 1, ... (a permutation of the slots, M being prime).
 * - Populate: rounds t = 1, 2, ...; in each, every node in name order
 *   whose turn it is takes the next free slot of its preference list, until
 *   all M are taken.  A node of weight w takes a turn in round t when t x w
 *   >= its target, which starts at 0 and grows by the largest weight at
 *   each turn: the heaviest nodes take one every round, a node of a third
 *   of that weight one every third round.  All weights equal, this is the
 *   paper's populate exactly.
 * - A key sits at slot XXH3-64(key) mod M.
 */
#include "config.h"

#include <stdlib.h>

#include "hash.h"
#include "ring_mode.h"

/* The largest prime <= RB_RING_MAX_POINTS (2^24): the largest table. */
#define RBI_MAGLEV_MAX_M 16777213u
#define AUTO_PER_NODE 100u   /* automatic M: at least 100 slots a node */

static int is_prime(uint64_t n)
{
    if (n < 2)
        return 0;
    for (uint64_t d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

static int maglev_param_ok(uint32_t param)
{
    return param == 0 || (param <= RBI_MAGLEV_MAX_M && is_prime(param));
}

static uint64_t maglev_table_size(uint32_t param, size_t nnodes)
{
    uint64_t m = 0;

    if (nnodes == 0)
        return 0;
    if (param != 0)
        return param;
    for (unsigned k = 0; k <= 8; k++) {
        m = ((uint64_t)1 << (16 + k)) + 1;
        while (!is_prime(m))
            m--;
        if (m >= (uint64_t)AUTO_PER_NODE * nnodes)
            break;
    }
    return m;   /* 16777213 at most: 100 x RB_RING_MAX_NODES fits below it */
}

static uint64_t maglev_key(const void *key, size_t len)
{
    return rbi_hash_xxh3(key, len);
}

typedef struct turn {
    uint64_t at;       /* the slot its preference list is at */
    uint64_t skip;
    uint64_t target;   /* it takes a turn in round t when t x weight >= target */
} turn_t;

static int maglev_fill(const rbi_ring_node_t *nodes, size_t n, uint64_t m, uint32_t *table)
{
    turn_t *tn = malloc(n * sizeof(*tn));
    uint64_t wmax = 0, filled = 0;

    if (tn == NULL)
        return RB_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        tn[i].at = XXH3_64bits_withSeed(nodes[i].name, nodes[i].len, 0) % m;
        tn[i].skip = m > 1 ? XXH3_64bits_withSeed(nodes[i].name, nodes[i].len, 1) % (m - 1) + 1 : 1;
        tn[i].target = 0;
        if (nodes[i].weight > wmax)
            wmax = nodes[i].weight;
    }
    for (uint64_t s = 0; s < m; s++)
        table[s] = UINT32_MAX;
    /* Every round the heaviest node takes a slot, so at most m rounds;
     * each turn finds a free slot, its list being a permutation. */
    for (uint64_t t = 1; filled < m; t++) {
        for (size_t i = 0; i < n && filled < m; i++) {
            if (t * nodes[i].weight < tn[i].target)
                continue;
            tn[i].target += wmax;
            while (table[tn[i].at] != UINT32_MAX)
                if ((tn[i].at += tn[i].skip) >= m)
                    tn[i].at -= m;
            table[tn[i].at] = (uint32_t)i;
            if ((tn[i].at += tn[i].skip) >= m)
                tn[i].at -= m;
            filled++;
        }
    }
    free(tn);
    return RB_OK;
}

const rbi_ring_mode_ops_t rbi_ring_mode_maglev = {
    .name = "maglev", .key_pos = maglev_key, .tie_by_seq = 0, .resize_all = 1,
    .table = 1, .param_max = RBI_MAGLEV_MAX_M, .table_size = maglev_table_size,
    .param_ok = maglev_param_ok, .fill = maglev_fill, .size_rule = "a prime",
};
