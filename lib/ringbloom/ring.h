/*
 * ringbloom/ring.h - the consistent-hash ring: its modes, the writer's
 * membership model and its publication into a segment, and the readers'
 * lock-free lookups.
 *
 * A part of ringbloom.h: programs include <ringbloom.h>, which includes
 * every part, and its conventions (return codes, who may call, handles,
 * keys) hold here.
 */
#ifndef RINGBLOOM_RING_H
#define RINGBLOOM_RING_H

#include "core.h"
#include "segment.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rb_ring_mode {
    RB_RING_XXH3 = 0,    /* default: XXH3-64 of key and of "name#i", replicas
                            x weight points per node                        */
    RB_RING_KETAMA = 1,  /* libmemcached KETAMA_WEIGHTED, byte-exact: nodes
                            are "host:port" (default port 11211), ~160 MD5
                            points per server by weight share; replicas is
                            not used                                         */
    RB_RING_NGINX = 2,   /* nginx "hash $key consistent", byte-exact: nodes
                            are the upstream's server strings, 160 x weight
                            CRC-32 points; replicas is not used              */
    RB_RING_SEED = 3,    /* the teaching document's hash_str ring (64-bit)  */
    RB_RING_MAGLEV = 4,  /* Maglev (NSDI 2016) lookup table of M slots, M
                            prime, weighted; replicas is the table size
                            (0: automatic, >= 100 slots a node)             */
    RB_RING_SLOTS = 5    /* Redis Cluster's 16384 key slots (hash tags
                            included), balanced by weight or assigned with
                            rb_ring_set_slots; replicas is not used          */
} rb_ring_mode_t;

/* The slots of RB_RING_SLOTS mode: a key's slot is Redis Cluster's. */
#define RB_RING_SLOT_COUNT 16384

/* Any process.  "xxh3", "ketama", "nginx", "seed", "maglev", "slots" for a mode, and back
 * (case-insensitive).  In the compatible modes (ketama, nginx) equal
 * points are ordered by the order nodes were added, which must therefore
 * follow the other side's server list; in the others by node name.
 * rb_ring_mode_name returns "unknown" for a bad value; parse returns
 * RB_EINVAL. */
RB_EXPORT const char *rb_ring_mode_name(rb_ring_mode_t mode);
RB_EXPORT RB_WUR int rb_ring_mode_parse(const char *s, size_t len, rb_ring_mode_t *out);

#define RB_NODE_NAME_MAX     255
#define RB_RING_MAX_NODES    100000
#define RB_RING_MAX_WEIGHT   65535
#define RB_RING_MAX_REPLICAS 4096
#define RB_RING_MAX_POINTS   (1u << 24)
#define RB_RING_DEFAULT_REPLICAS 160

/* A node's state, published with the ring (RING.DOWN / UP / DRAIN).  A
 * lookup skips the points of a node that is not up: its keys go to the
 * next up node clockwise and no other key moves; up again, it owns
 * exactly the keys it owned before (its points never moved).  Draining
 * routes like down: new keys avoid the node; a caller that keeps sessions
 * reads the state (rb_ring_nodes) and lets a session on a draining node
 * finish there. */
typedef enum rb_node_state {
    RB_NODE_UP = 0,
    RB_NODE_DOWN = 1,
    RB_NODE_DRAIN = 2
} rb_node_state_t;

/* Any process.  "up", "down", "drain" (case-insensitive), and back
 * ("unknown" for a bad value; parse: RB_EINVAL). */
RB_EXPORT const char *rb_node_state_name(rb_node_state_t state);
RB_EXPORT RB_WUR int rb_node_state_parse(const char *s, size_t len, rb_node_state_t *out);

/* A node as a reader sees it; the name is copied out of shared memory and
 * NUL-terminated (names may contain no NUL themselves). */
typedef struct rb_node {
    uint32_t index;     /* position in the ring's node list (sorted by name);
                           valid for the ring version it came from */
    uint32_t weight;
    uint32_t name_len;
    char     name[RB_NODE_NAME_MAX + 1];
    uint32_t state;     /* rb_node_state_t (a lookup's answer is up); in the
                           padding of before, so the struct kept its size */
    uint64_t version;   /* the ring version (rb_ring_stat) this answer was
                           read from, in the same read section */
} rb_node_t;

/* Writer-side membership model, in process memory.  It holds the nodes and
 * the sorted point table; rb_ring_publish() copies it into a segment. */
typedef struct rb_ring rb_ring_t;

/* Any process.  A new empty ring: `replicas` virtual nodes per unit of
 * weight (1..RB_RING_MAX_REPLICAS; 0 -> RB_RING_DEFAULT_REPLICAS).  A
 * table mode starts automatic (maglev's table size, balanced slots) and
 * keeps replicas for a later switch.
 * Errors: RB_EINVAL, RB_ENOMEM. */
RB_EXPORT RB_WUR int rb_ring_new(rb_ring_mode_t mode, uint32_t replicas,
                                 rb_ring_t **out);
RB_EXPORT void rb_ring_free(rb_ring_t *ring);

/* Any process, one thread per ring.  Adds a node (name: 1..255 bytes, no
 * NUL; weight 1..RB_RING_MAX_WEIGHT) with the mode's points (replicas *
 * weight in xxh3 and seed mode).  The add itself is O(nodes) at most; the
 * points are made when next needed (publish, rb_ring_point_count): the new
 * nodes' points sorted and merged into the table, O(points) once for any
 * number of adds; in ketama mode every node's share changes, so the table
 * is rebuilt (O(points log points)) then.  Errors: RB_EINVAL, RB_EEXIST,
 * RB_ERANGE (node or point limit), RB_ENOMEM.  Not visible to readers until
 * rb_ring_publish(). */
RB_EXPORT RB_WUR int rb_ring_add(rb_ring_t *ring, const char *name,
                                 size_t len, uint32_t weight);
/* Removes a node and its points, O(points).  RB_ENOENT if unknown. */
RB_EXPORT RB_WUR int rb_ring_remove(rb_ring_t *ring, const char *name,
                                    size_t len);
/* Changes a node's weight (its points dropped now, O(points), and made
 * again when next needed, as an add's).  RB_ENOENT, RB_EINVAL, RB_ERANGE. */
RB_EXPORT RB_WUR int rb_ring_set_weight(rb_ring_t *ring, const char *name,
                                        size_t len, uint32_t weight);
/* Switches the model to another mode and/or replica count, regenerating
 * every point (O(points log points)).  replicas 0 keeps the current count.
 * For RB_RING_MAGLEV, replicas is the table size instead: a prime up to
 * 16777213, fixed whatever the membership, or 0 for automatic (the
 * largest prime <= 2^(16+k) + 1 that is >= 100 x nodes, k >= 0: 65537 up
 * to 655 nodes); the replica count in force is kept for a later switch.
 * For RB_RING_SLOTS, replicas must be 0, and the slots are balanced by
 * weight.  A switch (to any mode, slots included) drops an explicit slot
 * map.  Errors: RB_EINVAL, RB_ERANGE (point limit), RB_ENOMEM; nothing
 * changes on error. */
RB_EXPORT RB_WUR int rb_ring_set_mode(rb_ring_t *ring, rb_ring_mode_t mode, uint32_t replicas);

/* Any process, one thread per ring; RB_RING_SLOTS mode only.  Assigns
 * slots start .. end (inclusive, 0 <= start <= end < RB_RING_SLOT_COUNT)
 * to node name.  The first assignment makes the map explicit, starting
 * from the balanced one; from then on membership changes edit it instead
 * of rebalancing: an added node owns no slot until assigned some (as in
 * Redis Cluster), a removed node's slots pass, range by range, to the
 * owner of the first slot clockwise (wrapping after 16383) that it did not
 * own; a node re-weighted keeps its slots.  Removing the only node that
 * owns slots makes the map balanced again.  An explicit map is published
 * with the ring and rb_ring_load restores it.  Errors: RB_EINVAL (another
 * mode, a bad range or name), RB_ENOENT (no such node), RB_ENOMEM;
 * nothing changes on error. */
RB_EXPORT RB_WUR int rb_ring_set_slots(rb_ring_t *ring, uint32_t start, uint32_t end,
                                       const char *name, size_t len);
/* RB_RING_SLOTS mode only: back to the map balanced by weight, which
 * follows every membership change (RB_EINVAL in another mode). */
RB_EXPORT RB_WUR int rb_ring_balance_slots(rb_ring_t *ring);
/* Sets the revision of the ring source this model stands for, published
 * with it (rb_ring_source_revision); 0 by default.  Takes the next publish
 * past the in-place states path.  Errors: RB_EINVAL (ring NULL). */
RB_EXPORT RB_WUR int rb_ring_set_source_revision(rb_ring_t *ring, uint64_t rev);
/* Sets a node's state (rb_node_state_t).  No point moves: the next
 * rb_ring_publish writes the states into the active copy in place
 * (O(nodes), readers retry a section that met it) when nothing else
 * changed since the model's last publish into that segment, else with the
 * rest.  A node added starts up; a removed one forgets its state.
 * Errors: RB_EINVAL, RB_ENOENT. */
RB_EXPORT RB_WUR int rb_ring_set_state(rb_ring_t *ring, const char *name, size_t len,
                                       rb_node_state_t state);
/* The node's state in the model (>= 0), or RB_EINVAL, RB_ENOENT. */
RB_EXPORT RB_WUR int rb_ring_state(const rb_ring_t *ring, const char *name, size_t len);
/* The model's mode and replica count (RB_RING_MAGLEV: the table size
 * asked for, 0 automatic; RB_RING_SLOTS: 1 if the slot map is explicit,
 * else 0). */
RB_EXPORT rb_ring_mode_t rb_ring_mode(const rb_ring_t *ring);
RB_EXPORT uint32_t rb_ring_replicas(const rb_ring_t *ring);
/* Number of nodes / points in the model. */
RB_EXPORT size_t rb_ring_node_count(const rb_ring_t *ring);
RB_EXPORT size_t rb_ring_point_count(const rb_ring_t *ring);

/* Writer.  Publishes the model into the segment through the two-copy latch:
 * the inactive copy is rewritten while readers keep using the active one,
 * then one flip makes it active, so readers never wait and never see a
 * mixed table.  When only node states changed since this model's last
 * publish into seg, they are written into the active copy in place
 * instead (rb_ring_set_state).  A copy grows (reallocated in the segment) when the table
 * outgrows it.  Cost: O(points) stores, once, after making the points of
 * nodes added or re-weighted since the last publish.
 * Errors: RB_EROFS, RB_ENOSPC (segment full: nothing changed for readers),
 * RB_ENOMEM (the points could not be made: the model is unchanged). */
RB_EXPORT RB_WUR int rb_ring_publish(rb_ring_t *ring, rb_segment_t *seg);

/* Any process.  Rebuilds a membership model from the ring published in
 * seg (used by a restarted writer).  Errors: RB_ECORRUPT, RB_EBUSY, RB_ENOMEM. */
RB_EXPORT RB_WUR int rb_ring_load(const rb_segment_t *seg, rb_ring_t **out);

/* Reader.  The node owning key: the first point clockwise from the key's
 * position (lower bound, wrapping to the first point).  Lock-free; cost: one
 * hash, an index probe and a short search (~2-3 cache lines) plus copying
 * the name; a key whose owner is not up walks on clockwise to the first
 * point of an up node (O(points walked)).  Returns 0, RB_EEMPTY (no nodes,
 * or none up), RB_EBUSY (raced the writer
 * past the retry bound), RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_ring_lookup(const rb_segment_t *seg, const void *key,
                                    size_t len, rb_node_t *out);

/* Reader.  The first min(n, owners) distinct nodes clockwise from key (a
 * replica / preference list), owners being the nodes that own at least one
 * point (every node, but for a ketama node of small weight); out[0] is
 * what rb_ring_lookup returns.  Nodes that are not up are skipped, and
 * owners counts the up ones.
 * Returns the number of nodes written (>= 1) or a negative error as
 * rb_ring_lookup.  Cost: O(points walked * n). */
RB_EXPORT RB_WUR int rb_ring_lookup_n(const rb_segment_t *seg, const void *key,
                                      size_t len, rb_node_t *out, size_t n);

typedef struct rb_ring_stat {
    uint64_t version;    /* publish counter; changes on every publish */
    uint32_t mode;       /* rb_ring_mode_t */
    uint32_t replicas;   /* table modes: rb_ring_replicas' parameter */
    uint32_t nodes;
    uint32_t points;
    uint32_t index_bits; /* buckets = 2^index_bits */
    uint32_t down;       /* nodes not up (down or draining); in the padding
                            of before */
    uint64_t bytes;      /* bytes of one copy of the table */
} rb_ring_stat_t;

/* Reader.  Consistent snapshot of the ring's figures. */
RB_EXPORT RB_WUR int rb_ring_stat(const rb_segment_t *seg, rb_ring_stat_t *out);

/* Reader.  *rev = the revision of the ring source (ringbloomd's
 * `ring-source etcd`: etcd's revision) the published table was built
 * from; 0 for a ring its writer keeps itself, or none published yet. */
RB_EXPORT RB_WUR int rb_ring_source_revision(const rb_segment_t *seg, uint64_t *rev);

/* A run of consecutive slots of a table mode's ring (RB_RING_MAGLEV,
 * RB_RING_SLOTS) with one owner. */
typedef struct rb_ring_range {
    uint32_t start, end;   /* slots start .. end, inclusive */
    uint32_t node;         /* the owner's index in rb_ring_nodes' order */
    uint64_t version;      /* the ring version (rb_ring_stat) it was read from */
} rb_ring_range_t;

/* Reader.  The published table of a table mode as runs of slots with one
 * owner, in slot order: copies up to cap into out and stores their number
 * in *count (which may exceed cap).  Consistent snapshot; pair it with
 * rb_ring_nodes of the same version.  RB_EINVAL if the ring is not in a
 * table mode; an empty ring has none.  Cost: O(slots). */
RB_EXPORT RB_WUR int rb_ring_ranges(const rb_segment_t *seg, rb_ring_range_t *out,
                                    size_t cap, size_t *count);

/* Reader.  Copies up to cap nodes (sorted by name) into out and stores the
 * total in *count (which may exceed cap).  Consistent snapshot. */
RB_EXPORT RB_WUR int rb_ring_nodes(const rb_segment_t *seg, rb_node_t *out,
                                   size_t cap, size_t *count);

#ifdef __cplusplus
}
#endif
#endif /* RINGBLOOM_RING_H */
