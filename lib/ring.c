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
 * Each published copy holds the sorted positions, a parallel array of
 * 16-bit owners and an index of 2^b buckets on the top b bits of the
 * position (b = floor(log2(points))).  One copy costs 8 + 2 + <=4 bytes
 * per point plus the node table (docs/design.md, "Ring copy").
 *
 * Workload: membership changes at human or orchestrator speed (up to
 * ~10^3/s), each O(points); a mode that re-sizes every node on a change
 * rebuilds the table once, when it is next needed.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "latch.h"
#include "ring.h"
#include "ring_mode.h"
#include "segment.h"
#include "util.h"

typedef struct ring_node {
    char    *name;
    uint32_t len;
    uint32_t weight;
    uint32_t seq;    /* order of addition: the "server list" order */
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
    ring_point_t *pts;     /* sorted by (pos, tie) */
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

static int point_cmp(const void *a, const void *b)
{
    const ring_point_t *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->tie < y->tie ? -1 : x->tie > y->tie;
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
        if (i > 0 && point_cmp(&r->pts[i - 1], &add[j - 1]) > 0)
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

static uint64_t total_weight(const rb_ring_t *r)
{
    uint64_t w = 0;

    for (size_t i = 0; i < r->nnodes; i++)
        w += r->nodes[i].weight;
    return w;
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
    uint64_t weights = total_weight(r), bound = ops->points_bound(weights, r->nnodes, replicas);
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
    qsort(pts, n, sizeof(*pts), point_cmp);
    free(r->pts);
    r->pts = pts;
    r->npts = n;
    r->pcap = cap;
    r->mode = mode;
    r->ops = ops;
    r->replicas = replicas;
    r->stale = 0;
    return RB_OK;
}

/* The points, brought up to date (a mode that re-sizes every node
 * rebuilds lazily). */
static int fresh_points(rb_ring_t *r)
{
    return r->stale ? rebuild(r, r->mode, r->replicas) : RB_OK;
}

int rb_ring_set_mode(rb_ring_t *r, rb_ring_mode_t mode, uint32_t replicas)
{
    if (r == NULL || rbi_ring_mode_ops((uint64_t)mode) == NULL ||
        replicas > RB_RING_MAX_REPLICAS)
        return RB_EINVAL;
    return rebuild(r, mode, replicas ? replicas : r->replicas);
}

/* Node at's points, sorted, with room reserved to merge them: the first
 * half of a membership change in a mode that changes one node's points
 * (nothing changed yet; the caller frees *add). */
static int merge_ready(rb_ring_t *r, size_t at, ring_point_t **add, size_t *n)
{
    int rc = gen_points(r, r->ops, r->replicas, at, total_weight(r), add, n);

    if (rc == RB_OK) {
        qsort(*add, *n, sizeof(**add), point_cmp);
        rc = reserve_points(r, r->npts + *n);
    }
    return rc;
}

/* Whether the membership after a change (weight changed by delta_w, node
 * count by delta_n) stays within the point limit. */
static int points_fit_after(const rb_ring_t *r, int64_t delta_w, int delta_n)
{
    uint64_t w = (uint64_t)((int64_t)total_weight(r) + delta_w);

    return r->ops->points_bound(w, (size_t)((int64_t)r->nnodes + delta_n), r->replicas) <=
           RB_RING_MAX_POINTS;
}

int rb_ring_add(rb_ring_t *r, const char *name, size_t len, uint32_t weight)
{
    ring_point_t *add = NULL;
    ring_node_t *nodes;
    size_t at, n = 0;
    char *copy;
    int rc;

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
    shift_nodes(r, at, +1);
    memmove(&r->nodes[at + 1], &r->nodes[at], (r->nnodes - at) * sizeof(ring_node_t));
    r->nodes[at].name = copy;
    r->nodes[at].len = (uint32_t)len;
    r->nodes[at].weight = weight;
    r->nodes[at].seq = r->next_seq++;
    r->nnodes++;
    if (r->ops->resize_all) {
        /* Every node's share changed: rebuilt, once, when the points are
         * next needed (bulk adds stay linear). */
        r->stale = 1;
        rc = RB_OK;
    } else {
        rc = merge_ready(r, at, &add, &n);
    }
    if (rc != RB_OK) {
        free(add);
        r->nnodes--;
        memmove(&r->nodes[at], &r->nodes[at + 1], (r->nnodes - at) * sizeof(ring_node_t));
        shift_nodes(r, at + 1, -1);
        free(copy);
        return rc;
    }
    if (add != NULL)
        merge_points(r, add, n);
    free(add);
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
        memmove(&r->nodes[at], &r->nodes[at + 1], (r->nnodes - at - 1) * sizeof(ring_node_t));
        r->nnodes--;
        r->stale = 1;
    } else {
        drop_points(r, at);
        shift_nodes(r, at + 1, -1);
        memmove(&r->nodes[at], &r->nodes[at + 1], (r->nnodes - at - 1) * sizeof(ring_node_t));
        r->nnodes--;
    }
    free(gone.name);
    return RB_OK;
}

int rb_ring_set_weight(rb_ring_t *r, const char *name, size_t len, uint32_t weight)
{
    ring_point_t *add = NULL;
    uint32_t old;
    size_t at, n = 0;
    int rc;

    if (r == NULL || !name_valid(name, len) || weight == 0 || weight > RB_RING_MAX_WEIGHT)
        return RB_EINVAL;
    if (!node_find(r, name, len, &at))
        return RB_ENOENT;
    old = r->nodes[at].weight;
    if (!points_fit_after(r, (int64_t)weight - (int64_t)old, 0))
        return RB_ERANGE;
    r->nodes[at].weight = weight;
    if (r->ops->resize_all) {
        r->stale = 1;
        return RB_OK;
    }
    rc = merge_ready(r, at, &add, &n);
    if (rc != RB_OK) {
        free(add);
        r->nodes[at].weight = old;
        return rc;
    }
    drop_points(r, at);
    merge_points(r, add, n);
    free(add);
    return RB_OK;
}

/* ---- serialisation of one copy ----------------------------------------- */

static uint32_t index_bits_for(size_t npts)
{
    uint32_t b = 1;

    while (b < RBI_RING_MAX_INDEX_BITS && ((size_t)1 << (b + 1)) <= npts)
        b++;
    return b;
}

typedef struct copy_layout {
    uint64_t nodes_w, names_w, points_w, owners_w, index_w, words, names_bytes;
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
    L->bits = index_bits_for(r->npts);
    L->names_bytes = names;
    L->nodes_w = RBI_RING_COPY_HDR_WORDS;
    L->names_w = L->nodes_w + RBI_NODE_WORDS * r->nnodes;
    L->points_w = L->names_w + names / 8;
    L->owners_w = L->points_w + r->npts;
    L->index_w = L->owners_w + (r->npts + 3) / 4;
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
        L->bits, L->words, L->nodes_w, L->names_w, L->points_w, L->owners_w, L->index_w,
        L->names_bytes, L->owners,
    };
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
    for (size_t i = 0; i < r->npts; i++) {
        rbi_st(&d[L->points_w + i], r->pts[i].pos);
        acc |= (uint64_t)r->pts[i].node << (16 * (i & 3));
        if ((i & 3) == 3 || i + 1 == r->npts) {
            rbi_st(&d[L->owners_w + i / 4], acc);
            acc = 0;
        }
    }
    /* index[j] = first point whose top `bits` bits are >= j. */
    acc = 0;
    for (uint64_t j = 0; j <= ((uint64_t)1 << L->bits); j++) {
        while (p < r->npts && (r->pts[p].pos >> (64 - L->bits)) < j)
            p++;
        acc |= (uint64_t)p << (32 * (j & 1));
        if ((j & 1) == 1 || j == ((uint64_t)1 << L->bits)) {
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
    /* Re-adding in the original order keeps the compatible modes' tie order. */
    if (rc == RB_OK)
        qsort(nodes, (size_t)v->nnodes, sizeof(*nodes), seq_cmp);
    for (uint64_t i = 0; i < v->nnodes && rc == RB_OK; i++)
        rc = rb_ring_add(r, nodes[i].node.name, nodes[i].node.name_len, nodes[i].node.weight);
    free(nodes);
    a->ring = r;
    a->npoints = v->npoints;
    return rc == RB_OK ? RB_OK : RB_ECORRUPT;
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

void rbi_ring_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n)
{
    const rb_header_shm_t *h = rbi_hdr(m);

    *n = 0;
    for (int c = 0; c < 2; c++) {
        uint64_t off = rbi_ld(&h->ring.copy_off[c]);
        if (off != 0) {
            out[*n].off = off;
            out[*n].len = rbi_ld(&h->ring.copy_cap[c]);
            (*n)++;
        }
    }
}
