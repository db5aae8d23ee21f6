/*
 * ring.c - the consistent-hash ring's writer side: the membership model,
 * its serialisation into a copy, publishing through the two-copy latch,
 * and loading a model back from a published copy.
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
 * re-sizes every node on a change rebuilds the table once, likewise.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "latch.h"
#include "ring.h"
#include "ring_mode.h"
#include "segment.h"
#include "snap.h"
#include "util.h"

typedef struct ring_node {
    char    *name;
    uint32_t len;
    uint32_t weight;
    uint32_t seq;    /* order of addition: the "server list" order */
    uint32_t fresh;  /* added (or re-weighted) since the points were last
                        settled: none of pts[] is its */
} ring_node_t;

typedef rbi_ring_point_t ring_point_t;

struct rb_ring {
    rb_ring_mode_t mode;
    const rbi_ring_mode_ops_t *ops;   /* mode's operations */
    uint32_t replicas;
    uint32_t next_seq;
    int stale;             /* pts[] predate a membership change (a mode
                              that re-sizes every node: ops->resize_all) */
    ring_node_t *nodes;    /* sorted by name (bytewise, shorter first) */
    size_t nnodes, ncap;
    size_t nfresh;         /* nodes marked fresh */
    uint64_t weights;      /* the nodes' total weight */
    ring_point_t *pts;     /* sorted by (pos, tie); pts[].node (and a tie
                              by name) index the settled nodes, i.e. the
                              nodes that are not fresh, in name order */
    size_t npts, pcap;
};

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
    free(ring->nodes);
    free(ring->pts);
    free(ring);
}

size_t rb_ring_node_count(const rb_ring_t *ring)
{
    return ring ? ring->nnodes : 0;
}

static int fresh_points(rb_ring_t *r);

size_t rb_ring_point_count(const rb_ring_t *ring)
{
    if (ring == NULL || fresh_points((rb_ring_t *)ring) != RB_OK)
        return 0;
    return ring->npts;
}

rb_ring_mode_t rb_ring_mode(const rb_ring_t *ring)
{
    return ring->mode;
}

uint32_t rb_ring_replicas(const rb_ring_t *ring)
{
    return ring->replicas;
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
static int node_find(const rb_ring_t *r, const char *name, size_t len, size_t *at)
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

/* Regenerates every point for mode/replicas; nothing changes on error. */
static int rebuild(rb_ring_t *r, rb_ring_mode_t mode, uint32_t replicas)
{
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops((uint64_t)mode);
    uint64_t weights = r->weights, bound = ops->points_bound(weights, r->nnodes, replicas);
    ring_point_t *pts;
    size_t n = 0, cap;

    if (bound > RB_RING_MAX_POINTS)
        return RB_ERANGE;
    cap = (size_t)bound + 1;
    pts = malloc(cap * sizeof(*pts));
    if (pts == NULL)
        return RB_ENOMEM;
    for (size_t i = 0; i < r->nnodes; i++) {
        ring_point_t *one;
        size_t c;
        if (gen_points(r, ops, replicas, i, weights, &one, &c) != RB_OK || n + c > cap) {
            free(pts);
            return RB_ENOMEM;
        }
        memcpy(pts + n, one, c * sizeof(*one));
        n += c;
        free(one);
    }
    rbi_ring_sort_points(pts, n);
    free(r->pts);
    r->pts = pts;
    r->npts = n;
    r->pcap = cap;
    r->mode = mode;
    r->ops = ops;
    r->replicas = replicas;
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
static int fresh_points(rb_ring_t *r)
{
    return r->stale ? rebuild(r, r->mode, r->replicas) : settle(r);
}

int rb_ring_set_mode(rb_ring_t *r, rb_ring_mode_t mode, uint32_t replicas)
{
    if (r == NULL || rbi_ring_mode_ops((uint64_t)mode) == NULL ||
        replicas > RB_RING_MAX_REPLICAS)
        return RB_EINVAL;
    return rebuild(r, mode, replicas ? replicas : r->replicas);
}

/* Whether the membership after a change (weight changed by delta_w, node
 * count by delta_n) stays within the point limit. */
static int points_fit_after(const rb_ring_t *r, int64_t delta_w, int delta_n)
{
    uint64_t w = (uint64_t)((int64_t)r->weights + delta_w);

    return r->ops->points_bound(w, (size_t)((int64_t)r->nnodes + delta_n), r->replicas) <=
           RB_RING_MAX_POINTS;
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
    if (node_find(r, name, len, &at))
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
    r->nodes[at] = (ring_node_t){ copy, (uint32_t)len, weight, r->next_seq++, 1 };
    r->nnodes++;
    r->nfresh++;
    r->weights += weight;
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
    if (!node_find(r, name, len, &at))
        return RB_ENOENT;
    gone = r->nodes[at];
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
    free(gone.name);
    return RB_OK;
}

int rb_ring_set_weight(rb_ring_t *r, const char *name, size_t len, uint32_t weight)
{
    size_t at;

    if (r == NULL || !name_valid(name, len) || weight == 0 || weight > RB_RING_MAX_WEIGHT)
        return RB_EINVAL;
    if (!node_find(r, name, len, &at))
        return RB_ENOENT;
    if (!points_fit_after(r, (int64_t)weight - (int64_t)r->nodes[at].weight, 0))
        return RB_ERANGE;
    r->weights = r->weights - r->nodes[at].weight + weight;
    r->nodes[at].weight = weight;
    if (r->ops->resize_all)
        r->stale = 1;
    else if (!r->nodes[at].fresh)
        unsettle(r, at);
    return RB_OK;
}

/* ---- serialisation of one copy ----------------------------------------- */

/* Points per index bucket: at least 2^RING_BUCKET_SHIFT (1 to 2: a ring
 * that fits in cache is fastest with many buckets), and the index at most
 * 2^RING_INDEX_CACHED_BITS entries (256 KB), so that it stays in cache:
 * large rings get larger buckets (~24 points at 1.6 * 10^6 points).  A
 * reader interpolates inside the bucket, landing a few points from the
 * answer (ring_read.c). */
#define RING_BUCKET_SHIFT 0
#define RING_INDEX_CACHED_BITS 16

/* b = floor(log2(points)) - RING_BUCKET_SHIFT, at least 1 and at most
 * RING_INDEX_CACHED_BITS, then raised until every node index fits in b
 * bits (a point word keeps the owner in its low b bits). */
static uint32_t index_bits_for(size_t npts, size_t nnodes)
{
    uint32_t b = 1;

    while (b < RING_INDEX_CACHED_BITS && ((size_t)1 << (b + 1 + RING_BUCKET_SHIFT)) <= npts)
        b++;
    while (b < RBI_RING_MAX_INDEX_BITS && ((size_t)1 << b) < nnodes)
        b++;
    return b;
}

typedef struct copy_layout {
    uint64_t nodes_w, names_w, points_w, index_w, words, names_bytes;
    uint64_t owners;   /* distinct nodes owning points */
    uint32_t bits;
} copy_layout_t;

static void layout_for(const rb_ring_t *r, copy_layout_t *L)
{
    uint64_t names = 0;
    unsigned char *owns = calloc(r->nnodes ? r->nnodes : 1, 1);

    for (size_t i = 0; i < r->nnodes; i++)
        names += rbi_round_up(r->nodes[i].len, 8);
    L->owners = 0;
    for (size_t i = 0; i < r->npts; i++) {
        if (owns == NULL) {
            L->owners = r->nnodes;   /* (no memory: assume all own points) */
            break;
        }
        L->owners += !owns[r->pts[i].node];
        owns[r->pts[i].node] = 1;
    }
    free(owns);
    L->bits = index_bits_for(r->npts, r->nnodes);
    L->names_bytes = names;
    L->nodes_w = RBI_RING_COPY_HDR_WORDS;
    L->names_w = L->nodes_w + RBI_NODE_WORDS * r->nnodes;
    L->points_w = L->names_w + names / 8;
    L->index_w = L->points_w + r->npts;
    L->words = L->index_w + (((uint64_t)1 << L->bits) + 2) / 2;
}

/* Stores the whole table into copy c (relaxed stores; the latch orders
 * them). */
static void write_copy(const rb_ring_t *r, const copy_layout_t *L,
                       rb_ring_copy_shm_t *c, uint64_t version)
{
    _Atomic uint64_t *d = c->data - RBI_RING_COPY_HDR_WORDS;
    /* The header words, in rb_ring_copy_shm_t's order (format.h). */
    const uint64_t hdr[] = {
        RBI_RING_COPY_MAGIC, version, (uint64_t)r->mode, r->replicas, r->nnodes, r->npts,
        L->bits, L->words, L->nodes_w, L->names_w, L->points_w, 0, L->index_w,
        L->names_bytes, L->owners,
    };
    const uint32_t b = L->bits;
    uint64_t noff = 0, acc = 0;
    size_t p = 0;

    _Static_assert(sizeof(hdr) == offsetof(rb_ring_copy_shm_t, reserved), "one per word");
    for (size_t i = 0; i < sizeof(hdr) / 8; i++)
        rbi_st(&d[i], hdr[i]);
    for (size_t i = 0; i < r->nnodes; i++) {
        rbi_st(&d[L->nodes_w + RBI_NODE_WORDS * i],
               noff | ((uint64_t)r->nodes[i].len << RBI_NODE_LEN_SHIFT));
        rbi_st(&d[L->nodes_w + RBI_NODE_WORDS * i + 1],
               r->nodes[i].weight | ((uint64_t)r->nodes[i].seq << 32));
        rbi_copy_in(&d[L->names_w + noff / 8], r->nodes[i].name, r->nodes[i].len);
        noff += rbi_round_up(r->nodes[i].len, 8);
    }
    /* Point word: the position's low 64 - b bits (its top b bits are its
     * index bucket), then the owner in the low b bits (format.h). */
    for (size_t i = 0; i < r->npts; i++)
        rbi_st(&d[L->points_w + i], r->pts[i].pos << b | r->pts[i].node);
    /* index[j] = first point whose top b bits are >= j. */
    for (uint64_t j = 0; j <= ((uint64_t)1 << b); j++) {
        while (p < r->npts && (r->pts[p].pos >> (64 - b)) < j)
            p++;
        acc |= (uint64_t)p << (32 * (j & 1));
        if ((j & 1) == 1 || j == ((uint64_t)1 << b)) {
            rbi_st(&d[L->index_w + j / 2], acc);
            acc = 0;
        }
    }
}

/* ---- publish / load ------------------------------------------------------- */

int rb_ring_publish(rb_ring_t *r, rb_segment_t *seg)
{
    rb_header_shm_t *h;
    rbi_map_t *m;
    copy_layout_t L;
    uint64_t bytes, version = 1, off, cap, newoff = 0, newcap = 0, s;
    unsigned active, w;
    int rc;

    if (r == NULL || seg == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if ((rc = fresh_points(r)) != RB_OK)
        return rc;
    m = rbi_seg_map(seg);
    h = rbi_hdr(m);
    layout_for(r, &L);
    bytes = L.words * 8;
    s = rbi_latch_write_prepare(&h->ring.seq);
    active = (unsigned)(s & 1);
    w = active ^ 1;                               /* the inactive copy */
    if (rbi_ld(&h->ring.copy_off[active]) != 0)
        version = rbi_ld(&rbi_ring_copy_at(m, rbi_ld(&h->ring.copy_off[active]))->version) + 1;
    off = rbi_ld(&h->ring.copy_off[w]);
    cap = rbi_ld(&h->ring.copy_cap[w]);
    if (off == 0 || cap < bytes) {
        /* Allocate first: on ENOSPC nothing has changed for readers. */
        newcap = rbi_round_up(bytes + bytes / 2, RBI_ALIGN);
        if ((rc = rbi_heap_alloc(seg, newcap, &newoff)) != RB_OK)
            return rc;
        /* Nobody reads the inactive copy (L1), so it may move. */
        rbi_st(&h->ring.copy_off[w], newoff);
        rbi_st(&h->ring.copy_cap[w], newcap);
    }
    rbi_snap_touch(seg, rbi_ring_copy_at(m, rbi_ld(&h->ring.copy_off[w])), bytes);   /* S1 */
    write_copy(r, &L, rbi_ring_copy_at(m, rbi_ld(&h->ring.copy_off[w])), version);
    rbi_latch_publish(&h->ring.seq, s);            /* readers -> copy w */
    if (newoff != 0 && off != 0)
        rbi_heap_free(seg, off, cap);
    return RB_OK;
}

typedef struct load_arg {
    rb_ring_t *ring;
    uint64_t npoints;
} load_arg_t;

typedef struct load_node {
    rb_node_t node;
    uint32_t seq;
} load_node_t;

static int seq_cmp(const void *a, const void *b)
{
    const load_node_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int load_fn(const rbi_ring_view_t *v, void *arg)
{
    load_arg_t *a = arg;
    load_node_t *nodes;
    rb_ring_t *r;
    int rc;

    rb_ring_free(a->ring);
    a->ring = NULL;
    rc = rb_ring_new((rb_ring_mode_t)v->mode, (uint32_t)v->replicas, &r);
    if (rc != RB_OK)
        return rc;
    nodes = malloc((v->nnodes ? v->nnodes : 1) * sizeof(*nodes));
    if (nodes == NULL) {
        rb_ring_free(r);
        return RB_ENOMEM;
    }
    for (uint64_t i = 0; i < v->nnodes && rc == RB_OK; i++) {
        rc = rbi_ring_view_node(v, i, &nodes[i].node);
        nodes[i].seq = rbi_ring_view_seq(v, i);
    }
    /* Added in the copy's order (by name: each add appends, and no point is
     * made before the seqs are in place), then numbered in the original
     * order of addition, which keeps the compatible modes' tie order. */
    for (uint64_t i = 0; i < v->nnodes && rc == RB_OK; i++)
        rc = rb_ring_add(r, nodes[i].node.name, nodes[i].node.name_len, nodes[i].node.weight);
    if (rc == RB_OK)
        qsort(nodes, (size_t)v->nnodes, sizeof(*nodes), seq_cmp);
    for (uint64_t i = 0; i < v->nnodes && rc == RB_OK; i++) {
        size_t at;
        if (!node_find(r, nodes[i].node.name, nodes[i].node.name_len, &at))
            rc = RB_ECORRUPT;
        else
            r->nodes[at].seq = (uint32_t)i;
    }
    r->next_seq = (uint32_t)v->nnodes;
    free(nodes);
    a->ring = r;
    a->npoints = v->npoints;
    return rc == RB_OK ? RB_OK : RB_ECORRUPT;
}

int rbi_ring_from_view(const rbi_ring_view_t *v, rb_ring_t **out)
{
    load_arg_t a = { NULL, 0 };
    int rc = load_fn(v, &a);

    if (rc != RB_OK) {
        rb_ring_free(a.ring);
        return rc;
    }
    *out = a.ring;
    return RB_OK;
}

int rb_ring_load(const rb_segment_t *seg, rb_ring_t **out)
{
    load_arg_t a = { NULL, 0 };
    int rc;

    if (seg == NULL || out == NULL)
        return RB_EINVAL;
    rc = rbi_ring_read(rbi_seg_map(seg), load_fn, &a);
    if (rc == RB_OK && rb_ring_point_count(a.ring) != a.npoints)
        rc = RB_ECORRUPT;   /* the table does not match its membership */
    if (rc != RB_OK) {
        rb_ring_free(a.ring);
        return rc;
    }
    *out = a.ring;
    return RB_OK;
}
