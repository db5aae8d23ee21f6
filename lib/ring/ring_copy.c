/*
 * ring_copy.c - the ring model (ring.c) serialised into a published copy
 * (format.h, "Ring copy" in docs/design.md) through the two-copy latch,
 * and a model loaded back from the active copy (a restarted writer).
 *
 * What: the copy's layout for a model (node records, names, point words,
 * the index), its stores into the inactive copy, the flip; the load
 * re-adds the copy's nodes in their order of addition, and takes a table
 * mode's parameter from the replicas word and an explicit slot map from
 * the points' owners (in a table mode, the points are the table).
 *
 * Workload: one publish per membership change, O(points).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "latch.h"
#include "ring.h"
#include "ring_model.h"
#include "segment.h"
#include "snap.h"
#include "util.h"

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
    uint64_t nodes_w, names_w, points_w, index_w, states_w, words, names_bytes;
    uint64_t owners;   /* distinct nodes owning points */
    uint32_t bits;
} copy_layout_t;

/* Also records which nodes own points (ring_node_t.owns). */
static void layout_for(rb_ring_t *r, copy_layout_t *L)
{
    uint64_t names = 0;

    for (size_t i = 0; i < r->nnodes; i++) {
        names += rbi_round_up(r->nodes[i].len, 8);
        r->nodes[i].owns = 0;
    }
    L->owners = 0;
    for (size_t i = 0; i < r->npts; i++) {
        L->owners += !r->nodes[r->pts[i].node].owns;
        r->nodes[r->pts[i].node].owns = 1;
    }
    L->bits = index_bits_for(r->npts, r->nnodes);
    L->names_bytes = names;
    L->nodes_w = RBI_RING_COPY_HDR_WORDS;
    L->names_w = L->nodes_w + RBI_NODE_WORDS * r->nnodes;
    L->points_w = L->names_w + names / 8;
    L->index_w = L->points_w + r->npts;
    L->states_w = L->index_w + (((uint64_t)1 << L->bits) + 2) / 2;
    L->words = L->states_w + RBI_STATES_WORDS(r->nnodes);
}

/* The state words of r (format.h, "Node states") after word 0: the
 * counts, then 2 bits per node. */
static void write_states(const rb_ring_t *r, _Atomic uint64_t *q)
{
    uint64_t down = 0, up_owners = 0, acc = 0;

    for (size_t i = 0; i < r->nnodes; i++) {
        uint64_t st = r->nodes[i].state;
        down += st != RB_NODE_UP;
        up_owners += st == RB_NODE_UP && r->nodes[i].owns;
        acc |= st << (2 * (i % RBI_STATES_PER_WORD));
        if (i % RBI_STATES_PER_WORD == RBI_STATES_PER_WORD - 1 || i + 1 == r->nnodes) {
            rbi_st(&q[RBI_STATES_HDR_WORDS + i / RBI_STATES_PER_WORD], acc);
            acc = 0;
        }
    }
    rbi_st(&q[1], down | up_owners << 32);
}

/* Stores the whole table into copy c (relaxed stores; the latch orders
 * them). */
static void write_copy(const rb_ring_t *r, const copy_layout_t *L,
                       rb_ring_copy_shm_t *c, uint64_t version)
{
    _Atomic uint64_t *d = c->data - RBI_RING_COPY_HDR_WORDS;
    /* The header words, in rb_ring_copy_shm_t's order (format.h). */
    const uint64_t hdr[] = {
        RBI_RING_COPY_MAGIC, version, (uint64_t)r->mode, rb_ring_replicas(r), r->nnodes, r->npts,
        L->bits, L->words, L->nodes_w, L->names_w, L->points_w, L->states_w, L->index_w,
        L->names_bytes, L->owners, r->source_rev,
    };
    const uint32_t b = L->bits;
    uint64_t noff = 0, acc = 0;
    size_t p = 0;

    _Static_assert(sizeof(hdr) == offsetof(rb_ring_copy_shm_t, data), "one per word");
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
    rbi_st(&d[L->states_w], 0);   /* an even sequence: no write inside */
    write_states(r, &d[L->states_w]);
}

/* The version readers see in copy c: its publish's, plus one per state
 * change written in place since (half its state sequence, format.h), so
 * that every publish, of either kind, is the next version. */
static uint64_t copy_version(const rb_ring_copy_shm_t *c)
{
    uint64_t sw = rbi_ld(&c->states_w);
    const _Atomic uint64_t *d = c->data - RBI_RING_COPY_HDR_WORDS;

    if (sw == 0 || sw >= rbi_ld(&c->words))
        return rbi_ld(&c->version);
    return rbi_ld(&c->version) + rbi_ld(&d[sw]) / 2;
}

/* Writes r's states into the active copy of seg in place, under its
 * sequence (latch.h, Q1), if that copy is the one r last published and
 * nothing but the states changed since: 1 if done, 0 if a full publish is
 * needed.  O(nodes). */
static int publish_states(rb_ring_t *r, rb_segment_t *seg)
{
    rbi_map_t *m = rbi_seg_map(seg);
    rb_header_shm_t *h = rbi_hdr(m);
    uint64_t off = rbi_ld(&h->ring.copy_off[rbi_ld(&h->ring.seq) & 1]);
    rb_ring_copy_shm_t *c;
    _Atomic uint64_t *q;
    uint64_t sw;

    if (off == 0 || r->changes != r->pub_changes || r->pub_map != m->id)
        return 0;
    c = rbi_ring_copy_at(m, off);
    sw = rbi_ld(&c->states_w);
    if (rbi_ld(&c->version) != r->pub_version || rbi_ld(&c->nnodes) != r->nnodes || sw == 0 ||
        sw + RBI_STATES_WORDS(r->nnodes) > rbi_ld(&c->words))
        return 0;
    q = c->data - RBI_RING_COPY_HDR_WORDS + sw;
    rbi_snap_touch(seg, q, RBI_STATES_WORDS(r->nnodes) * 8);   /* S1 */
    rbi_seq_write_begin(q);
    write_states(r, q);
    rbi_seq_write_end(q);
    return 1;
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
    if ((rc = rbi_ring_fresh_points(r)) != RB_OK)
        return rc;
    if (publish_states(r, seg))
        return RB_OK;
    m = rbi_seg_map(seg);
    h = rbi_hdr(m);
    layout_for(r, &L);
    bytes = L.words * 8;
    s = rbi_latch_write_prepare(&h->ring.seq);
    active = (unsigned)(s & 1);
    w = active ^ 1;                               /* the inactive copy */
    if (rbi_ld(&h->ring.copy_off[active]) != 0)
        version = copy_version(rbi_ring_copy_at(m, rbi_ld(&h->ring.copy_off[active]))) + 1;
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
    r->pub_changes = r->changes;
    r->pub_version = version;
    r->pub_map = m->id;
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

/* The states of the copy's nodes into r, whose nodes are the copy's in
 * the same (name) order.  RB_OK, RBI_RING_RETRY, RB_ENOMEM. */
static int load_states(const rbi_ring_view_t *v, rb_ring_t *r)
{
    size_t n = (size_t)(v->nnodes + RBI_STATES_PER_WORD - 1) / RBI_STATES_PER_WORD;
    uint64_t *w = malloc((n ? n : 1) * sizeof(*w)), counts;
    int rc = w ? rbi_ring_view_states(v, w, &counts) : RB_ENOMEM;

    for (size_t i = 0; rc == RB_OK && i < r->nnodes; i++) {
        uint64_t st = (w[i / RBI_STATES_PER_WORD] >> (2 * (i % RBI_STATES_PER_WORD))) & 3;
        if (rb_ring_set_state(r, r->nodes[i].name, r->nodes[i].len, (rb_node_state_t)st) != RB_OK)
            rc = RB_ECORRUPT;   /* a state no writer stores */
    }
    free(w);
    return rc;
}

/* A table mode's parameter (the copy's replicas word) into the loaded
 * model r, whose nodes are in: maglev's table size; for a mode whose map
 * may be set, 1 means the points' owners are an explicit map. */
static int load_table(const rbi_ring_view_t *v, rb_ring_t *r)
{
    const rbi_ring_mode_ops_t *ops = r->ops;
    uint32_t param = (uint32_t)v->replicas;

    if (param > ops->param_max)
        return RB_ECORRUPT;
    if (!ops->map_settable || param == 0) {
        if (!ops->param_ok(param))
            return RB_ECORRUPT;
        r->tparam = param;
        return RB_OK;
    }
    if (v->npoints != ops->table_size(param, r->nnodes) || v->npoints == 0 || v->points_w == 0)
        return RB_ECORRUPT;
    r->map = malloc(v->npoints * sizeof(*r->map));
    if (r->map == NULL)
        return RB_ENOMEM;
    r->nmap = (size_t)v->npoints;
    for (uint64_t i = 0; i < v->npoints; i++) {
        uint64_t o = rbi_ring_view_owner(v, i);
        if (o >= r->nnodes)
            return RB_ECORRUPT;
        r->map[i] = (uint32_t)o;
    }
    r->tparam = param;
    return RB_OK;
}

static int load_fn(const rbi_ring_view_t *v, void *arg)
{
    load_arg_t *a = arg;
    const rbi_ring_mode_ops_t *ops = rbi_ring_mode_ops(v->mode);
    load_node_t *nodes;
    rb_ring_t *r;
    int rc;

    rb_ring_free(a->ring);
    a->ring = NULL;
    /* (view_open checked the mode; a table mode's replicas word is its
     * parameter, set by load_table) */
    rc = rb_ring_new((rb_ring_mode_t)v->mode, ops->table ? 0 : (uint32_t)v->replicas, &r);
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
        if (!rbi_ring_node_find(r, nodes[i].node.name, nodes[i].node.name_len, &at))
            rc = RB_ECORRUPT;
        else
            r->nodes[at].seq = (uint32_t)i;
    }
    r->next_seq = (uint32_t)v->nnodes;
    r->source_rev = v->source_rev;
    if (rc == RB_OK && ops->table)
        rc = load_table(v, r);
    free(nodes);
    a->ring = r;
    if (rc == RB_OK)
        rc = load_states(v, r);
    a->npoints = v->npoints;
    return rc == RB_OK || rc == RBI_RING_RETRY || rc == RB_ENOMEM ? rc : RB_ECORRUPT;
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
