/*
 * ring_read.c - the ring's reader side: lock-free lookups (one node, n
 * distinct nodes), figures and node lists of the published table; and the
 * copies as a writer adopting a segment sees them (validation, their heap
 * extents, a layout-1 copy's membership).
 *
 * What: a read section (the two-copy latch, latch.h) around a view of the
 * active copy: its header read and bounds-checked once (view_open,
 * cached per thread while the sequence stands still), then the owner of a
 * position found through the index: bucket j = the position's top b bits
 * holds the first point whose top bits are >= j, so the lower bound lies
 * in [index[j], index[j+1]], usually one or two points apart.  Every offset
 * and count read from the copy is checked before use, so a torn read gives
 * garbage the section's re-check discards, never a fault.
 *
 * Workload: lookups at memory speed (~2-3 cache lines each) from many
 * processes and threads; the only indirect call is the mode's key hash.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "latch.h"
#include "ring.h"
#include "ring_mode.h"
#include "segment.h"
#include "snap.h"
#include "util.h"

_Thread_local uint32_t rbi_ring_last_retries;

/* rb_node_t and rb_ring_stat_t took their state fields in padding: the
 * structs kept the size and offsets of before (the ABI of .so.1). */
_Static_assert(offsetof(rb_node_t, version) == 272 && sizeof(rb_node_t) == 280, "rb_node_t");
_Static_assert(offsetof(rb_ring_stat_t, bytes) == 32 && sizeof(rb_ring_stat_t) == 40,
               "rb_ring_stat_t");

static int sect_ok(uint64_t start, uint64_t len, uint64_t words)
{
    return start >= RBI_RING_COPY_HDR_WORDS && start <= words && len <= words - start;
}

/* The replicas word: a replica count, or a table mode's parameter. */
static int replicas_ok(const rbi_ring_mode_ops_t *ops, uint64_t replicas)
{
    if (ops->table)
        return replicas <= ops->param_max;
    return replicas != 0 && replicas <= RB_RING_MAX_REPLICAS;
}

/* Reads and bounds-checks what every layout's copy `which` of m holds in
 * the same words: the header's identity and sizes, the node records and
 * names.  1 if the copy was never published (v empty), 0 if checked, -1
 * if it fails (RB_ECORRUPT for the caller). */
static int view_members(const rbi_map_t *m, unsigned which, rbi_ring_view_t *v)
{
    const rb_header_shm_t *h = rbi_hdr(m);
    uint64_t off = rbi_ld(&h->ring.copy_off[which]);
    uint64_t cap = rbi_ld(&h->ring.copy_cap[which]);
    const rb_ring_copy_shm_t *c;

    memset(v, 0, sizeof(*v));
    if (off == 0)
        return 1;                    /* never published */
    if (cap < RBI_RING_COPY_HDR_WORDS * 8 || !rbi_span_ok(rbi_seg_size(m), off, cap))
        return -1;
    c = rbi_ring_copy_at(m, off);
    v->d = c->data - RBI_RING_COPY_HDR_WORDS;
    v->version = rbi_ld(&c->version);
    v->mode = rbi_ld(&c->mode);
    v->replicas = rbi_ld(&c->replicas);
    v->nnodes = rbi_ld(&c->nnodes);
    v->npoints = rbi_ld(&c->npoints);
    v->words = rbi_ld(&c->words);
    v->nodes_w = rbi_ld(&c->nodes_w);
    v->names_w = rbi_ld(&c->names_w);
    v->names_bytes = rbi_ld(&c->names_bytes);
    v->source_rev = rbi_ld(&c->source_rev);
    if (rbi_ld(&c->magic) != RBI_RING_COPY_MAGIC || rbi_ring_mode_ops(v->mode) == NULL ||
        v->words > cap / 8 || v->words < RBI_RING_COPY_HDR_WORDS ||
        !replicas_ok(rbi_ring_mode_ops(v->mode), v->replicas) ||
        v->nnodes > RB_RING_MAX_NODES || v->npoints > RB_RING_MAX_POINTS ||
        (v->npoints == 0) != (v->nnodes == 0) || (v->names_bytes & 7) != 0 ||
        !sect_ok(v->nodes_w, RBI_NODE_WORDS * v->nnodes, v->words) ||
        !sect_ok(v->names_w, v->names_bytes / 8, v->words))
        return -1;
    return 0;
}

/* Reads and bounds-checks the header of copy `which` of m; a ring never
 * published reads as an empty view.  Inside a read section a failure may
 * be a torn read; the section's retry decides.  RB_OK, RB_ECORRUPT. */
static int view_open(const rbi_map_t *m, unsigned which, rbi_ring_view_t *v)
{
    const rb_ring_copy_shm_t *c;
    int r = view_members(m, which, v);

    if (r != 0)
        return r > 0 ? RB_OK : RB_ECORRUPT;
    c = (const rb_ring_copy_shm_t *)(const void *)v->d;
    v->bits = rbi_ld(&c->index_bits);
    v->points_w = rbi_ld(&c->points_w);
    v->index_w = rbi_ld(&c->index_w);
    v->owners = rbi_ld(&c->owners);
    v->states_w = rbi_ld(&c->states_w);
    if ((v->states_w != 0 && !sect_ok(v->states_w, RBI_STATES_WORDS(v->nnodes), v->words)) ||
        v->owners > v->nnodes || (v->owners == 0) != (v->npoints == 0) ||
        v->bits < 1 || v->bits > RBI_RING_MAX_INDEX_BITS || v->nnodes > (1ULL << v->bits) ||
        !sect_ok(v->points_w, v->npoints, v->words) ||
        !sect_ok(v->index_w, (((uint64_t)1 << v->bits) + 2) / 2, v->words))
        return RB_ECORRUPT;
    v->key_pos = rbi_ring_mode_ops(v->mode)->key_pos;
    v->table = rbi_ring_mode_ops(v->mode)->table;
    return RB_OK;
}

int rbi_ring_view_open_layout1(const rbi_map_t *m, unsigned which, rbi_ring_view_t *v)
{
    return view_members(m, which, v) < 0 ? RB_ECORRUPT : RB_OK;
}

static inline __attribute__((always_inline)) uint64_t view_index(const rbi_ring_view_t *v, uint64_t e)
{
    return (rbi_ld(&v->d[v->index_w + e / 2]) >> (32 * (e & 1))) & 0xFFFFFFFFu;
}

/* The owner of point i: the low b bits of its word (format.h). */
static inline __attribute__((always_inline)) uint64_t view_owner(const rbi_ring_view_t *v, uint64_t i)
{
    return rbi_ld(&v->d[v->points_w + i]) & ((1ULL << v->bits) - 1);
}

/* The state of node o (< nnodes) of a view with states (format.h). */
static inline uint64_t view_state(const rbi_ring_view_t *v, uint64_t o)
{
    return (rbi_ld(&v->d[v->states_w + RBI_STATES_HDR_WORDS + o / RBI_STATES_PER_WORD]) >>
            (2 * (o % RBI_STATES_PER_WORD))) & 3;
}

/* The point index owning position h: lower bound, wrapping to 0.  The
 * view has points (a ring never published has no mode to hash with). */
static inline __attribute__((always_inline)) int view_find(const rbi_ring_view_t *v, uint64_t h,
                                                         uint64_t *pt)
{
    uint64_t j, lo, hi, key, g;
    const _Atomic uint64_t *pw;

    /* A table mode's point i sits at i << RBI_RING_TABLE_SHIFT, so the
     * lower bound of a slot's position is that slot's point. */
    if (v->table && (h >> RBI_RING_TABLE_SHIFT) < v->npoints) {
        *pt = h >> RBI_RING_TABLE_SHIFT;
        return RB_OK;
    }
    j = h >> (64 - v->bits);
    lo = view_index(v, j);
    hi = view_index(v, j + 1);
    pw = &v->d[v->points_w];
    if (lo > hi || hi > v->npoints)
        return RB_ECORRUPT;
    /* Invariant: points below lo are < h, points from hi on are >= h.  The
     * points in [lo, hi) share h's top b bits, so a word (low position
     * bits above the owner) is < h << b exactly when its position is < h. */
    key = h << v->bits;
    if (lo < hi) {
        /* First probe where the position would be if the bucket's points
         * were evenly spread (hashes are: a few points off), then gallop
         * outwards; a crowded bucket costs O(log points), no more. */
        g = lo + (((key >> 32) * (hi - lo)) >> 32);
        /* The answer may be in a neighbouring line: fetch both with g's
         * (prefetches cannot fault, and stay inside the bucket). */
        __builtin_prefetch((const void *)&pw[g >= lo + 4 ? g - 4 : lo]);
        __builtin_prefetch((const void *)&pw[g + 4 < hi ? g + 4 : hi - 1]);
        if (rbi_ld(&pw[g]) < key) {
            lo = g + 1;
            for (uint64_t step = 1; lo + step <= hi; step <<= 1) {
                uint64_t p = lo + step - 1;
                if (rbi_ld(&pw[p]) >= key) {
                    hi = p;
                    break;
                }
                lo = p + 1;
            }
        } else {
            hi = g;
            for (uint64_t step = 1; step <= hi - lo; step <<= 1) {
                uint64_t p = hi - step;
                if (rbi_ld(&pw[p]) < key) {
                    lo = p + 1;
                    break;
                }
                hi = p;
            }
        }
    }
    while (hi - lo > 8) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (rbi_ld(&pw[mid]) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo < hi && rbi_ld(&pw[lo]) < key)
        lo++;
    *pt = lo == v->npoints ? 0 : lo;
    return RB_OK;
}

int rbi_ring_view_node(const rbi_ring_view_t *v, uint64_t idx, rb_node_t *out)
{
    uint64_t w0, noff, nlen, weight;

    if (idx >= v->nnodes)
        return RB_ECORRUPT;
    w0 = rbi_ld(&v->d[v->nodes_w + RBI_NODE_WORDS * idx]);
    weight = rbi_ld(&v->d[v->nodes_w + RBI_NODE_WORDS * idx + 1]) & 0xFFFFFFFFu;
    noff = w0 & RBI_NODE_OFF_MASK;
    nlen = w0 >> RBI_NODE_LEN_SHIFT;
    if (nlen == 0 || nlen > RB_NODE_NAME_MAX || (noff & 7) != 0 ||
        noff > v->names_bytes || rbi_round_up(nlen, 8) > v->names_bytes - noff ||
        weight == 0 || weight > RB_RING_MAX_WEIGHT)
        return RB_ECORRUPT;
    rbi_copy_out(out->name, &v->d[v->names_w + noff / 8], (size_t)(nlen + 7) / 8);
    out->name[nlen] = '\0';
    out->name_len = (uint32_t)nlen;
    out->index = (uint32_t)idx;
    out->weight = (uint32_t)weight;
    out->state = RB_NODE_UP;   /* a caller that read the states sets them */
    out->version = v->version;
    return RB_OK;
}

/* The last view a thread validated, by (mapping, sequence): while seq
 * still equals `seq` the copy cannot have changed (latch invariant L1), so
 * a lookup in a quiet ring skips re-validating the copy header. */
typedef struct view_cache {
    uint64_t map_id, seq;
    rbi_ring_view_t v;
} view_cache_t;

static _Thread_local view_cache_t tl_view;

/* One read section around fn, retried while the writer overtakes it. */
static inline __attribute__((always_inline)) int
ring_read(const rbi_map_t *m, rbi_ring_fn fn, void *arg)
{
    const _Atomic uint64_t *seq = &rbi_hdr(m)->ring.seq;

    for (uint32_t t = 0; t < RBI_READ_RETRIES; t++) {
        rbi_ring_view_t fresh;
        const rbi_ring_view_t *v = &tl_view.v;
        uint64_t s = rbi_latch_read_begin(seq);
        int cached = tl_view.map_id == m->id && tl_view.seq == s, rc = RB_OK;
        if (!cached) {
            rc = view_open(m, (unsigned)(s & 1), &fresh);
            v = &fresh;
        }
        if (rc == RB_OK)
            rc = fn(v, arg);
        if (!rbi_latch_read_retry(seq, s) && rc != RBI_RING_RETRY) {
            if (!cached && rc != RB_ECORRUPT) {
                tl_view.v = fresh;
                tl_view.seq = s;
                tl_view.map_id = m->id;
            }
            rbi_ring_last_retries = t;
            return rc;
        }
        rbi_read_pause(t);
    }
    rbi_ring_last_retries = RBI_READ_RETRIES;
    return RB_EBUSY;
}

typedef struct lookup_arg {
    const void *key;
    size_t len;
    uint64_t hmode;   /* mode the cached hash was computed for, or ~0 */
    uint64_t h;
    rb_node_t *out;
    size_t n;         /* wanted (lookup_n) */
    size_t got;
} lookup_arg_t;

/* The key's position in v's mode, hashed once per mode across retries:
 * one call through the mode's table. */
static inline __attribute__((always_inline)) uint64_t arg_hash(lookup_arg_t *a,
                                                               const rbi_ring_view_t *v)
{
    if (a->hmode != v->mode) {
        a->h = v->key_pos(a->key, a->len);
        a->hmode = v->mode;
    }
    return a->h;
}

/* The point owning a's key in v; RB_EEMPTY for a ring without points.  In
 * a table mode the key's slot is its hash mod the table's size. */
static inline __attribute__((always_inline)) int key_point(const rbi_ring_view_t *v,
                                                          lookup_arg_t *a, uint64_t *pt)
{
    uint64_t h;

    if (v->npoints == 0)
        return RB_EEMPTY;
    h = arg_hash(a, v);
    if (v->table)
        h = (h % v->npoints) << RBI_RING_TABLE_SHIFT;
    return view_find(v, h, pt);
}

/* From point *pt owned by *o, on clockwise to the first point of an up
 * node (a view with states, inside their sequence).  RB_EEMPTY if no node
 * is up; RB_ECORRUPT for an owner out of range (a torn read). */
static int skip_not_up(const rbi_ring_view_t *v, uint64_t *pt, uint64_t *o)
{
    for (uint64_t step = 0; step < v->npoints; step++) {
        if (*o >= v->nnodes)
            return RB_ECORRUPT;
        if (view_state(v, *o) == RB_NODE_UP)
            return RB_OK;
        if (++*pt == v->npoints)
            *pt = 0;
        *o = view_owner(v, *pt);
    }
    return RB_EEMPTY;
}

static int lookup_fn(const rbi_ring_view_t *v, void *arg)
{
    lookup_arg_t *a = arg;
    uint64_t pt, o, qv = 0;
    int rc = key_point(v, a, &pt);

    if (rc != RB_OK)
        return rc;
    o = view_owner(v, pt);
    if (v->states_w != 0) {
        /* Down nodes are rare: the counts word says whether to look. */
        const _Atomic uint64_t *q = &v->d[v->states_w];
        uint64_t counts;

        qv = rbi_seq_read_begin(q);
        counts = rbi_ld(&q[1]);

        if ((counts & 0xFFFFFFFFu) != 0)
            rc = (counts >> 32) == 0 ? RB_EEMPTY : skip_not_up(v, &pt, &o);
        if (rbi_seq_read_retry(q, qv))
            return RBI_RING_RETRY;
        if (rc != RB_OK)
            return rc;
    }
    rc = rbi_ring_view_node(v, o, a->out);
    a->out->version += qv / 2;   /* each state change is a version (format.h) */
    return rc;
}

int rb_ring_lookup(const rb_segment_t *seg, const void *key, size_t len, rb_node_t *out)
{
    lookup_arg_t a = { key, len, ~0ULL, 0, out, 1, 0 };

    if (seg == NULL || (key == NULL && len != 0) || out == NULL)
        return RB_EINVAL;
    return ring_read(rbi_reader_map(seg), lookup_fn, &a);
}

static int lookup_n_fn(const rbi_ring_view_t *v, void *arg)
{
    lookup_arg_t *a = arg;
    uint64_t seen[(RB_RING_MAX_NODES + 64) / 64];
    const _Atomic uint64_t *q = v->states_w != 0 ? &v->d[v->states_w] : NULL;
    uint64_t qv = q ? rbi_seq_read_begin(q) : 0;
    uint64_t up = q ? rbi_ld(&q[1]) >> 32 : v->owners;   /* up nodes owning points */
    size_t want = a->n < up ? a->n : (size_t)up;
    uint64_t pt;
    int rc = key_point(v, a, &pt);

    if (rc != RB_OK)
        return rc;
    memset(seen, 0, ((v->nnodes + 63) / 64) * sizeof(uint64_t));
    a->got = 0;
    for (uint64_t step = 0; step < v->npoints && a->got < want; step++) {
        uint64_t o = view_owner(v, pt);
        if (o >= v->nnodes)
            return RB_ECORRUPT;
        if (!(seen[o / 64] & (1ULL << (o % 64)))) {
            seen[o / 64] |= 1ULL << (o % 64);
            if (q == NULL || view_state(v, o) == RB_NODE_UP) {
                rc = rbi_ring_view_node(v, o, &a->out[a->got]);
                if (rc != RB_OK)
                    return rc;
                a->out[a->got++].version += qv / 2;
            }
        }
        if (++pt == v->npoints)
            pt = 0;
    }
    if (q != NULL && rbi_seq_read_retry(q, qv))
        return RBI_RING_RETRY;
    if (want == 0)
        return RB_EEMPTY;   /* points, but no node up */
    /* `up` nodes own points and are up, so a walk that finds fewer than
     * `want` of them read a torn table. */
    return a->got == want ? RB_OK : RB_ECORRUPT;
}

int rb_ring_lookup_n(const rb_segment_t *seg, const void *key, size_t len,
                     rb_node_t *out, size_t n)
{
    lookup_arg_t a = { key, len, ~0ULL, 0, out, n, 0 };
    int rc;

    if (seg == NULL || (key == NULL && len != 0) || out == NULL || n == 0)
        return RB_EINVAL;
    rc = ring_read(rbi_reader_map(seg), lookup_n_fn, &a);
    return rc == RB_OK ? (int)a.got : rc;
}

static int stat_fn(const rbi_ring_view_t *v, void *arg)
{
    rb_ring_stat_t *st = arg;

    st->version = v->version;
    st->mode = (uint32_t)v->mode;
    st->replicas = (uint32_t)v->replicas;
    st->nodes = (uint32_t)v->nnodes;
    st->points = (uint32_t)v->npoints;
    st->index_bits = (uint32_t)v->bits;
    st->bytes = v->words * 8;
    st->down = 0;
    if (v->states_w != 0) {
        const _Atomic uint64_t *q = &v->d[v->states_w];
        uint64_t qv = rbi_seq_read_begin(q);

        st->down = (uint32_t)(rbi_ld(&q[1]) & 0xFFFFFFFFu);
        st->version += qv / 2;
        if (rbi_seq_read_retry(q, qv))
            return RBI_RING_RETRY;
    }
    return RB_OK;
}

int rb_ring_stat(const rb_segment_t *seg, rb_ring_stat_t *out)
{
    if (seg == NULL || out == NULL)
        return RB_EINVAL;
    return ring_read(rbi_reader_map(seg), stat_fn, out);
}

static int source_fn(const rbi_ring_view_t *v, void *arg)
{
    *(uint64_t *)arg = v->source_rev;
    return RB_OK;
}

int rb_ring_source_revision(const rb_segment_t *seg, uint64_t *rev)
{
    if (seg == NULL || rev == NULL)
        return RB_EINVAL;
    return ring_read(rbi_reader_map(seg), source_fn, rev);
}

typedef struct ranges_arg {
    rb_ring_range_t *out;
    size_t cap, count;
} ranges_arg_t;

static int ranges_fn(const rbi_ring_view_t *v, void *arg)
{
    ranges_arg_t *a = arg;
    uint64_t start = 0;

    a->count = 0;
    if (v->d != NULL && !v->table)
        return RB_EINVAL;   /* (a ring never published has no mode yet) */
    for (uint64_t i = 0; i < v->npoints; i++) {
        uint64_t o = view_owner(v, i);
        if (o >= v->nnodes)
            return RB_ECORRUPT;
        if (i + 1 < v->npoints && view_owner(v, i + 1) == o)
            continue;
        if (a->count < a->cap)
            a->out[a->count] = (rb_ring_range_t){ (uint32_t)start, (uint32_t)i, (uint32_t)o,
                                                  v->version };
        a->count++;
        start = i + 1;
    }
    return RB_OK;
}

int rb_ring_ranges(const rb_segment_t *seg, rb_ring_range_t *out, size_t cap, size_t *count)
{
    ranges_arg_t a = { out, cap, 0 };
    int rc;

    if (seg == NULL || count == NULL || (out == NULL && cap != 0))
        return RB_EINVAL;
    rc = ring_read(rbi_reader_map(seg), ranges_fn, &a);
    if (rc == RB_OK)
        *count = a.count;
    return rc;
}

typedef struct nodes_arg {
    rb_node_t *out;
    size_t cap, count;
} nodes_arg_t;

static int nodes_fn(const rbi_ring_view_t *v, void *arg)
{
    nodes_arg_t *a = arg;

    const _Atomic uint64_t *q = v->states_w != 0 ? &v->d[v->states_w] : NULL;
    uint64_t qv = q ? rbi_seq_read_begin(q) : 0;

    a->count = (size_t)v->nnodes;
    for (uint64_t i = 0; i < v->nnodes && i < a->cap; i++) {
        int rc = rbi_ring_view_node(v, i, &a->out[i]);
        if (rc != RB_OK)
            return rc;
        if (q != NULL) {
            a->out[i].state = (uint32_t)view_state(v, i);
            a->out[i].version += qv / 2;
        }
    }
    return q != NULL && rbi_seq_read_retry(q, qv) ? RBI_RING_RETRY : RB_OK;
}

int rb_ring_nodes(const rb_segment_t *seg, rb_node_t *out, size_t cap, size_t *count)
{
    nodes_arg_t a = { out, cap, 0 };
    int rc;

    if (seg == NULL || count == NULL || (out == NULL && cap != 0))
        return RB_EINVAL;
    rc = ring_read(rbi_reader_map(seg), nodes_fn, &a);
    if (rc == RB_OK)
        *count = a.count;
    return rc;
}

int rbi_ring_validate(const rb_segment_t *seg)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    rbi_ring_view_t v;

    /* Only the active copy matters: the inactive one is an older version,
     * or one a dead writer left half-written, and is rewritten before it
     * is ever made active. */
    return view_open(m, (unsigned)(rbi_ld(&rbi_hdr(m)->ring.seq) & 1), &v);
}

int rbi_ring_repair_states(rb_segment_t *seg)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    rbi_ring_view_t v;
    _Atomic uint64_t *q;
    unsigned char *owns;
    uint64_t down = 0, up_owners = 0;
    int rc = view_open(m, (unsigned)(rbi_ld(&rbi_hdr(m)->ring.seq) & 1), &v);

    if (rc != RB_OK || v.d == NULL || v.states_w == 0)
        return rc;
    q = (_Atomic uint64_t *)&v.d[v.states_w];
    if ((rbi_ld(q) & 1) == 0)
        return RB_OK;              /* the dead writer was not inside */
    owns = calloc(v.nnodes ? v.nnodes : 1, 1);
    if (owns == NULL)
        return RB_ENOMEM;
    for (uint64_t i = 0; i < v.npoints; i++) {
        uint64_t o = view_owner(&v, i);
        if (o >= v.nnodes) {
            free(owns);
            return RB_ECORRUPT;
        }
        owns[o] = 1;
    }
    for (uint64_t i = 0; i < v.nnodes && rc == RB_OK; i++) {
        uint64_t st = view_state(&v, i);
        if (st > RB_NODE_DRAIN)
            rc = RB_ECORRUPT;     /* no writer stores it */
        down += st != RB_NODE_UP;
        up_owners += st == RB_NODE_UP && owns[i];
    }
    free(owns);
    if (rc != RB_OK)
        return rc;
    rbi_snap_touch(seg, q, 16);   /* S1 */
    rbi_st(&q[1], down | up_owners << 32);
    rbi_seq_write_end(q);         /* even again: readers take the words as they are */
    return RB_OK;
}

int rbi_ring_view_states(const rbi_ring_view_t *v, uint64_t *out, uint64_t *counts)
{
    size_t n = (size_t)(v->nnodes + RBI_STATES_PER_WORD - 1) / RBI_STATES_PER_WORD;
    const _Atomic uint64_t *q;
    uint64_t qv;

    if (v->states_w == 0) {
        memset(out, 0, n * sizeof(*out));
        *counts = v->owners << 32;
        return RB_OK;
    }
    q = &v->d[v->states_w];
    qv = rbi_seq_read_begin(q);
    *counts = rbi_ld(&q[1]);
    for (size_t i = 0; i < n; i++)
        out[i] = rbi_ld(&q[RBI_STATES_HDR_WORDS + i]);
    return rbi_seq_read_retry(q, qv) ? RBI_RING_RETRY : RB_OK;
}

int rbi_ring_read(const rbi_map_t *m, rbi_ring_fn fn, void *arg)
{
    return ring_read(m, fn, arg);
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
