/*
 * ring.c - the consistent-hash ring's writer model: nodes, weights, the
 * mode, and the points they give (ring_copy.c serialises the model into a
 * published copy and loads one back).
 *
 * What: nodes with names and integer weights; the ring's mode (ring_mode.h,
 * one table of operations per mode) says how many points each node gets
 * and where.  A key is owned by the first point clockwise from its
 * position: the lower bound in the sorted point table, wrapping to point
 * 0.  Ties (two points at one position) are ordered by node name, or, in
 * the modes that say so (ketama, nginx), by the order nodes were added, so
 * that compatible clients agree.
 *
 * Why this layout: readers (ring_read.c) answer with ~2-3 cache-line loads.
 * Each published copy holds an index of 2^b buckets on the top b bits of
 * the position (b = floor(log2(points)), at most 16, raised until node
 * indices fit in b bits) and one word per point, sorted: the position's
 * other 64 - b bits above its owner's index.  One copy costs 8 + <=4 bytes
 * per point plus the node table (docs/design.md, "Ring copy").
 *
 * Workload: membership changes at human or orchestrator speed (up to
 * ~10^3/s), each O(points) when published; adds only mark the node fresh,
 * and its points are generated and merged when next needed, so a bulk
 * load (many adds, one publish) is O(points log points) once; a mode that
 * re-sizes every node on a change rebuilds the table once, likewise.  A
 * table mode (maglev, slots) is one of those: its whole table of slots is
 * made again (ring_table.c), O(slots).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "heap.h"
#include "latch.h"
#include "ring.h"
#include "ring_mode.h"
#include "segment.h"
#include "snap.h"
#include "util.h"

#include "ring_model.h"

/* ---- writer model ------------------------------------------------------ */

int rb_ring_new(rb_ring_mode_t mode, uint32_t replicas, rb_ring_t **out)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops((uint64_t)mode);
    rb_ring_t *r;

    if (out == NULL || ops == NULL || replicas > RB_RING_MAX_REPLICAS)
        return RB_EINVAL;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return RB_ENOMEM;
    r->mode = mode;
    r->ops = ops;
    r->replicas = replicas ? replicas : RB_RING_DEFAULT_REPLICAS;
    *out = r;
    return RB_OK;
}

void rb_ring_free(rb_ring_t *ring)
{
    if (ring == NULL)
        return;
    for (size_t i = 0; i < ring->nnodes; i++)
        free(ring->nodes[i].name);
    free(ring->map);
    free(ring->nodes);
    free(ring->pts);
    free(ring);
}

size_t rb_ring_node_count(const rb_ring_t *ring)
{
    return ring ? ring->nnodes : 0;
}

size_t rb_ring_point_count(const rb_ring_t *ring)
{
    if (ring == NULL || rbi_ring_fresh_points((rb_ring_t *)ring) != RB_OK)
        return 0;
    return ring->npts;
}

rb_ring_mode_t rb_ring_mode(const rb_ring_t *ring)
{
    return ring->mode;
}

uint32_t rb_ring_replicas(const rb_ring_t *ring)
{
    return ring->ops->table ? ring->tparam : ring->replicas;
}

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

/* Binary search: returns 1 and *at = index if found, else 0 and *at = the
 * insertion point. */
int rbi_ring_node_find(const rb_ring_t *r, const char *name, size_t len, size_t *at)
{
    size_t lo = 0, hi = r->nnodes;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = name_cmp(r->nodes[mid].name, r->nodes[mid].len, name, len);
        if (c == 0) {
            *at = mid;
            return 1;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return 0;
}

static int name_valid(const char *name, size_t len)
{
    return name != NULL && len >= 1 && len <= RB_NODE_NAME_MAX &&
           memchr(name, '\0', len) == NULL;
}

static int reserve_points(rb_ring_t *r, size_t total)
{
    ring_point_t *p;
    size_t cap;

    if (total <= r->pcap)
        return RB_OK;
    cap = r->pcap ? r->pcap : 1024;
    while (cap < total)
        cap *= 2;
    p = realloc(r->pts, cap * sizeof(*p));
    if (p == NULL)
        return RB_ENOMEM;
    r->pts = p;
    r->pcap = cap;
    return RB_OK;
}

/* Merges the sorted add[] into pts[] from the back; capacity reserved. */
static void merge_points(rb_ring_t *r, const ring_point_t *add, size_t n)
{
    size_t i = r->npts, j = n, w = r->npts + n;

    while (j > 0) {
        if (i > 0 && rbi_ring_point_cmp(&r->pts[i - 1], &add[j - 1]) > 0)
            r->pts[--w] = r->pts[--i];
        else
            r->pts[--w] = add[--j];
    }
    r->npts += n;
}

/* A node was inserted at index `at` (delta +1) or removed from it (delta
 * -1, its points already dropped): shift the indices after it, and the
 * ties that are indices. */
static void shift_nodes(rb_ring_t *r, size_t at, int delta)
{
    int by_name = !r->ops->tie_by_seq;

    for (size_t i = 0; i < r->npts; i++) {
        if (r->pts[i].node >= at) {
            r->pts[i].node = (uint32_t)((int64_t)r->pts[i].node + delta);
            if (by_name)
                r->pts[i].tie = r->pts[i].node;
        }
    }
}

/* Drops the points of node `node` (indices unchanged). */
static void drop_points(rb_ring_t *r, size_t node)
{
    size_t w = 0;

    for (size_t i = 0; i < r->npts; i++)
        if (r->pts[i].node != node)
            r->pts[w++] = r->pts[i];
    r->npts = w;
}


/* The index among the settled nodes (pts[].node) of settled node at. */
static size_t settled_index(const rb_ring_t *r, size_t at)
{
    size_t k = at;

    for (size_t i = 0; i < at && r->nfresh != 0; i++)
        k -= r->nodes[i].fresh;
    return k;
}

static void clear_fresh(rb_ring_t *r)
{
    for (size_t i = 0; i < r->nnodes && r->nfresh != 0; i++)
        r->nodes[i].fresh = 0;
    r->nfresh = 0;
}

/* The points of node idx under ops and replicas, in a new array (*n of
 * them); weights: the membership's total weight. */
static int gen_points(const rb_ring_t *r, const rbi_ring_mode_ops_t *ops, uint32_t replicas,
                      size_t idx, uint64_t weights, ring_point_t **out, size_t *n)
{
    const ring_node_t *nd = &r->nodes[idx];
    uint32_t tie = ops->tie_by_seq ? nd->seq : (uint32_t)idx;
    size_t c = (size_t)ops->points(nd->weight, replicas, weights, r->nnodes);
    ring_point_t *p = malloc((c ? c : 1) * sizeof(*p));

    if (p == NULL)
        return RB_ENOMEM;
    ops->place(ops, nd->name, nd->len, c, p);
    for (size_t i = 0; i < c; i++) {
        p[i].node = (uint32_t)idx;
        p[i].tie = tie;
    }
    *out = p;
    *n = c;
    return RB_OK;
}

/* Every point of a vnode mode, sorted, in a new array (*n, *cap). */
static int gen_all(const rb_ring_t *r, const rbi_ring_mode_ops_t *ops, uint32_t replicas,
                   ring_point_t **out, size_t *n, size_t *cap)
{
    uint64_t weights = r->weights, bound = ops->points_bound(weights, r->nnodes, replicas);
    ring_point_t *pts;

    if (bound > RB_RING_MAX_POINTS)
        return RB_ERANGE;
    *cap = (size_t)bound + 1;
    *n = 0;
    pts = malloc(*cap * sizeof(*pts));
    if (pts == NULL)
        return RB_ENOMEM;
    for (size_t i = 0; i < r->nnodes; i++) {
        ring_point_t *one;
        size_t c;
        if (gen_points(r, ops, replicas, i, weights, &one, &c) != RB_OK || *n + c > *cap) {
            free(pts);
            return RB_ENOMEM;
        }
        memcpy(pts + *n, one, c * sizeof(*one));
        *n += c;
        free(one);
    }
    rbi_ring_sort_points(pts, *n);
    *out = pts;
    return RB_OK;
}

/* Regenerates every point for mode/replicas (a table mode: for its
 * parameter tparam, and r's explicit map if it has one); nothing changes
 * on error. */
static int rebuild(rb_ring_t *r, rb_ring_mode_t mode, uint32_t replicas, uint32_t tparam)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops((uint64_t)mode);
    ring_point_t *pts;
    size_t n = 0, cap = 0;
    int rc = ops->table ? rbi_ring_table_points(r, ops, tparam, &pts, &n)
                        : gen_all(r, ops, replicas, &pts, &n, &cap);

    if (rc != RB_OK)
        return rc;
    if (ops->table)
        cap = n ? n : 1;
    free(r->pts);
    r->pts = pts;
    r->npts = n;
    r->pcap = cap;
    r->mode = mode;
    r->ops = ops;
    r->replicas = replicas;
    r->tparam = tparam;
    r->stale = 0;
    clear_fresh(r);
    return RB_OK;
}

/* Gives the fresh nodes their points: the settled nodes' points renumbered
 * to the current node indices, the fresh nodes' points generated, sorted
 * and merged in.  O(points + new points x log new points), once for any
 * number of adds, so a bulk load stays linear.  Nothing changes on error
 * (RB_ENOMEM). */
static int settle(rb_ring_t *r)
{
    const rbi_ring_mode_ops_t *ops = r->ops;
    int by_name = !ops->tie_by_seq;
    ring_point_t *add;
    uint32_t *remap;
    size_t n = 0, k = 0, o = 0;

    if (r->nfresh == 0)
        return RB_OK;
    for (size_t i = 0; i < r->nnodes; i++)
        if (r->nodes[i].fresh)
            n += (size_t)ops->points(r->nodes[i].weight, r->replicas, r->weights, r->nnodes);
    remap = malloc((r->nnodes - r->nfresh + 1) * sizeof(*remap));
    add = malloc((n ? n : 1) * sizeof(*add));
    if (remap == NULL || add == NULL || reserve_points(r, r->npts + n) != RB_OK) {
        free(remap);
        free(add);
        return RB_ENOMEM;
    }
    for (size_t i = 0; i < r->nnodes; i++) {
        const ring_node_t *nd = &r->nodes[i];
        size_t c;
        if (!nd->fresh) {
            remap[o++] = (uint32_t)i;
            continue;
        }
        c = (size_t)ops->points(nd->weight, r->replicas, r->weights, r->nnodes);
        ops->place(ops, nd->name, nd->len, c, add + k);
        for (size_t j = k; j < k + c; j++) {
            add[j].node = (uint32_t)i;
            add[j].tie = by_name ? (uint32_t)i : nd->seq;
        }
        k += c;
    }
    for (size_t i = 0; i < r->npts; i++) {
        r->pts[i].node = remap[r->pts[i].node];
        if (by_name)
            r->pts[i].tie = r->pts[i].node;
    }
    rbi_ring_sort_points(add, n);
    merge_points(r, add, n);
    clear_fresh(r);
    free(remap);
    free(add);
    return RB_OK;
}

/* The points, brought up to date: a mode that re-sizes every node
 * rebuilds them, the others settle the fresh nodes. */
int rbi_ring_fresh_points(rb_ring_t *r)
{
    return r->stale ? rebuild(r, r->mode, r->replicas, r->tparam) : settle(r);
}

/* A switch drops the explicit map (if the rebuild succeeds: nothing
 * changes on error).  Into a table mode, replicas is its parameter and
 * the vnode count stays. */
int rb_ring_set_mode(rb_ring_t *r, rb_ring_mode_t mode, uint32_t replicas)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops((uint64_t)mode);
    uint32_t *map;
    int rc;

    if (r == NULL || ops == NULL ||
        (ops->table ? !ops->param_ok(replicas) : replicas > RB_RING_MAX_REPLICAS))
        return RB_EINVAL;
    r->changes++;
    map = r->map;
    r->map = NULL;
    rc = ops->table ? rebuild(r, mode, r->replicas, replicas)
                    : rebuild(r, mode, replicas ? replicas : r->replicas, 0);
    if (rc != RB_OK) {
        r->map = map;
        return rc;
    }
    free(map);
    r->nmap = 0;
    return RB_OK;
}

int rb_ring_set_slots(rb_ring_t *r, uint32_t start, uint32_t end, const char *name, size_t len)
{
    size_t at;
    int rc;

    if (r == NULL || !r->ops->map_settable || !name_valid(name, len) || start > end ||
        end >= r->ops->table_size(1, 1))
        return RB_EINVAL;
    if (!rbi_ring_node_find(r, name, len, &at))
        return RB_ENOENT;
    if ((rc = rbi_ring_table_make_explicit(r)) != RB_OK)
        return rc;
    for (uint64_t s = start; s <= end; s++)
        r->map[s] = (uint32_t)at;
    r->tparam = 1;
    r->stale = 1;
    r->changes++;
    return RB_OK;
}

int rb_ring_balance_slots(rb_ring_t *r)
{
    if (r == NULL || !r->ops->map_settable)
        return RB_EINVAL;
    free(r->map);
    r->map = NULL;
    r->nmap = 0;
    r->tparam = 0;
    r->stale = 1;
    r->changes++;
    return RB_OK;
}

static const char *const state_names[] = {
    [RB_NODE_UP] = "up", [RB_NODE_DOWN] = "down", [RB_NODE_DRAIN] = "drain",
};
#define NSTATES (sizeof(state_names) / sizeof(state_names[0]))

const char *rb_node_state_name(rb_node_state_t state)
{
    return (unsigned)state < NSTATES ? state_names[state] : "unknown";
}

int rb_node_state_parse(const char *s, size_t len, rb_node_state_t *out)
{
    for (size_t i = 0; s != NULL && out != NULL && i < NSTATES; i++) {
        if (strlen(state_names[i]) == len && strncasecmp(state_names[i], s, len) == 0) {
            *out = (rb_node_state_t)i;
            return RB_OK;
        }
    }
    return RB_EINVAL;
}

/* A state is not a change of `changes`: the points stay (ring_model.h). */
int rb_ring_set_source_revision(rb_ring_t *r, uint64_t rev)
{
    if (r == NULL)
        return RB_EINVAL;
    r->source_rev = rev;
    r->changes++;   /* the word is in the copy's header: a full publish */
    return RB_OK;
}

int rb_ring_set_state(rb_ring_t *r, const char *name, size_t len, rb_node_state_t state)
{
    size_t at;

    if (r == NULL || !name_valid(name, len) || (unsigned)state >= NSTATES)
        return RB_EINVAL;
    if (!rbi_ring_node_find(r, name, len, &at))
        return RB_ENOENT;
    r->nodes[at].state = (uint8_t)state;
    return RB_OK;
}

int rb_ring_state(const rb_ring_t *r, const char *name, size_t len)
{
    size_t at;

    if (r == NULL || !name_valid(name, len))
        return RB_EINVAL;
    if (!rbi_ring_node_find(r, name, len, &at))
        return RB_ENOENT;
    return r->nodes[at].state;
}

/* Whether the membership after a change (weight changed by delta_w, node
 * count by delta_n) stays within the point limit. */
static int points_fit_after(const rb_ring_t *r, int64_t delta_w, int delta_n)
{
    uint64_t w = (uint64_t)((int64_t)r->weights + delta_w);

    if (r->ops->table)
        return 1;   /* a table of at most RB_RING_MAX_POINTS slots */
    return r->ops->points_bound(w, (size_t)((int64_t)r->nnodes + delta_n), r->replicas) <=
           RB_RING_MAX_POINTS;
}

uint64_t rbi_ring_points_with(const rb_ring_t *r, const rbi_ring_mode_ops_t *ops, const char *name,
                              size_t len, uint32_t weight, uint32_t replicas)
{
    uint64_t w = r->weights + weight;
    size_t at, n = r->nnodes + 1;

    if (name != NULL && rbi_ring_node_find(r, name, len, &at)) {
        w -= r->nodes[at].weight;
        n--;
    }
    if (name == NULL) {
        w -= weight;
        n--;
    }
    if (ops == NULL) {
        ops = r->ops;
        if (ops->table)
            replicas = r->tparam;
    }
    if (ops->table)
        return ops->table_size(replicas, n);
    return ops->points_bound(w, n, replicas != 0 ? replicas : r->replicas);
}

/* Settled node at loses its points and becomes fresh (a weight change;
 * settle() gives it its new points). */
static void unsettle(rb_ring_t *r, size_t at)
{
    size_t s = settled_index(r, at);

    drop_points(r, s);
    shift_nodes(r, s + 1, -1);
    r->nodes[at].fresh = 1;
    r->nfresh++;
}

/* Adding a node only inserts it, fresh: its points are generated when the
 * points are next needed (settle() or, for a mode that re-sizes every
 * node, rebuild()). */
int rb_ring_add(rb_ring_t *r, const char *name, size_t len, uint32_t weight)
{
    ring_node_t *nodes;
    size_t at;
    char *copy;

    if (r == NULL || !name_valid(name, len) || weight == 0 || weight > RB_RING_MAX_WEIGHT)
        return RB_EINVAL;
    if (rbi_ring_node_find(r, name, len, &at))
        return RB_EEXIST;
    if (r->nnodes >= RB_RING_MAX_NODES || !points_fit_after(r, weight, 1))
        return RB_ERANGE;
    if (r->nnodes == r->ncap) {
        size_t cap = r->ncap ? r->ncap * 2 : 16;
        nodes = realloc(r->nodes, cap * sizeof(*nodes));
        if (nodes == NULL)
            return RB_ENOMEM;
        r->nodes = nodes;
        r->ncap = cap;
    }
    copy = malloc(len + 1);
    if (copy == NULL)
        return RB_ENOMEM;
    memcpy(copy, name, len);
    copy[len] = '\0';
    memmove(&r->nodes[at + 1], &r->nodes[at], (r->nnodes - at) * sizeof(ring_node_t));
    r->nodes[at] = (ring_node_t){ copy, (uint32_t)len, weight, r->next_seq++, 1, RB_NODE_UP, 0 };
    r->nnodes++;
    r->nfresh++;
    r->weights += weight;
    r->changes++;
    rbi_ring_table_node_added(r, at);   /* an explicit map: it owns no slot */
    if (r->ops->resize_all)
        r->stale = 1;   /* every node's share changed: rebuilt when next needed */
    return RB_OK;
}

int rb_ring_remove(rb_ring_t *r, const char *name, size_t len)
{
    ring_node_t gone;
    size_t at;

    if (r == NULL || !name_valid(name, len))
        return RB_EINVAL;
    if (!rbi_ring_node_find(r, name, len, &at))
        return RB_ENOENT;
    gone = r->nodes[at];
    rbi_ring_table_node_removing(r, at);   /* an explicit map: its slots pass on */
    if (r->ops->resize_all) {
        r->stale = 1;
    } else if (!gone.fresh) {
        size_t s = settled_index(r, at);
        drop_points(r, s);
        shift_nodes(r, s + 1, -1);
    }
    memmove(&r->nodes[at], &r->nodes[at + 1], (r->nnodes - at - 1) * sizeof(ring_node_t));
    r->nnodes--;
    r->nfresh -= gone.fresh;
    r->weights -= gone.weight;
    r->changes++;
    free(gone.name);
    return RB_OK;
}

int rb_ring_set_weight(rb_ring_t *r, const char *name, size_t len, uint32_t weight)
{
    size_t at;

    if (r == NULL || !name_valid(name, len) || weight == 0 || weight > RB_RING_MAX_WEIGHT)
        return RB_EINVAL;
    if (!rbi_ring_node_find(r, name, len, &at))
        return RB_ENOENT;
    if (!points_fit_after(r, (int64_t)weight - (int64_t)r->nodes[at].weight, 0))
        return RB_ERANGE;
    r->weights = r->weights - r->nodes[at].weight + weight;
    r->nodes[at].weight = weight;
    r->changes++;
    if (r->ops->resize_all)
        r->stale = 1;
    else if (!r->nodes[at].fresh)
        unsettle(r, at);
    return RB_OK;
}

