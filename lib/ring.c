/*
 * ring.c - the consistent-hash ring: writer model, latch publish, lock-free
 * reader lookup.
 *
 * What: nodes with names and integer weights; node i contributes
 * replicas * weight points ("name#r" hashed by the ring's mode).  A key is
 * owned by the first point clockwise from its position: the lower bound in
 * the sorted point table, wrapping to point 0.  Ties (two points at one
 * position) are ordered by node name, so the order never depends on the
 * order nodes were added.
 *
 * Why this layout: readers answer with ~2-3 cache-line loads.  Each
 * published copy holds the sorted positions, a parallel array of 16-bit
 * owners and an index of 2^b buckets on the top b bits of the position
 * (b = floor(log2(points))): bucket j holds the first point whose top bits
 * are >= j, so the lower bound of a position with top bits j lies in
 * [index[j], index[j+1]], usually one or two points.  One copy costs
 * 8 + 2 + <=4 bytes per point plus the node table.
 *
 * Workload: lookups at memory speed from many processes; membership changes
 * at human or orchestrator speed (up to ~10^3/s), each O(points).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "hash.h"
#include "ring.h"
#include "heap.h"
#include "segment.h"
#include "util.h"

#define NODE_OFF_MASK ((1ULL << 40) - 1)
#define MAX_INDEX_BITS 24

_Thread_local uint32_t rbi_ring_last_retries;

typedef struct ring_node {
    char    *name;
    uint32_t len;
    uint32_t weight;
    uint32_t seq;    /* order of addition: the "server list" order */
} ring_node_t;

typedef struct ring_point {
    uint64_t pos;
    uint32_t node;   /* index into nodes[] (sorted by name) */
    uint32_t tie;    /* order among equal positions: node (xxh3, seed) or
                        seq (ketama, nginx: the compatible order) */
} ring_point_t;

struct rb_ring {
    rb_ring_mode_t mode;
    uint32_t replicas;
    uint32_t next_seq;
    int stale;             /* ketama: pts[] predate a membership change */
    ring_node_t *nodes;    /* sorted by name (bytewise, shorter first) */
    size_t nnodes, ncap;
    ring_point_t *pts;     /* sorted by (pos, tie) */
    size_t npts, pcap;
};

/* ---- hashing by mode ------------------------------------------------- */

static const struct {
    const char *name;
    rb_ring_mode_t mode;
} mode_names[] = { { "xxh3", RB_RING_XXH3 }, { "ketama", RB_RING_KETAMA },
                   { "nginx", RB_RING_NGINX }, { "seed", RB_RING_SEED } };

static int mode_ok(uint64_t mode)
{
    return mode == RB_RING_XXH3 || mode == RB_RING_KETAMA || mode == RB_RING_NGINX ||
           mode == RB_RING_SEED;
}

const char *rb_ring_mode_name(rb_ring_mode_t mode)
{
    for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
        if (mode_names[i].mode == mode)
            return mode_names[i].name;
    return "unknown";
}

int rb_ring_mode_parse(const char *s, size_t len, rb_ring_mode_t *out)
{
    for (size_t i = 0; s != NULL && i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
        if (strlen(mode_names[i].name) == len && strncasecmp(mode_names[i].name, s, len) == 0) {
            *out = mode_names[i].mode;
            return RB_OK;
        }
    }
    return RB_EINVAL;
}

/* Compatible modes order equal positions by addition (their server list
 * order); ours by name, so the table never depends on that order. */
static int tie_by_seq(rb_ring_mode_t mode)
{
    return mode == RB_RING_KETAMA || mode == RB_RING_NGINX;
}

/* Ketama and nginx work on 32-bit positions: kept in the top half of the
 * 64-bit ring, where the lower bound is the same. */
static uint64_t key_pos(uint64_t mode, const void *key, size_t len)
{
    switch (mode) {
    case RB_RING_SEED:
        return rbi_hash_seed(key, len, 0);
    case RB_RING_KETAMA:
        return (uint64_t)rbi_hash_md5_le32(key, len, 0) << 32;
    case RB_RING_NGINX:
        return (uint64_t)rbi_hash_crc32(0, key, len) << 32;
    default:
        return rbi_hash_xxh3(key, len);
    }
}

/* "host:port" -> host and port as nginx splits it: the port is the run of
 * digits after the last ':' (nothing inserted when there is none); a
 * "unix:" prefix means no port. */
static void split_nginx(const char *name, size_t len, size_t *hostlen, const char **port,
                        size_t *portlen)
{
    *hostlen = len;
    *port = name + len;
    *portlen = 0;
    if (len >= 5 && strncasecmp(name, "unix:", 5) == 0)
        return;
    for (size_t j = 0; j < len; j++) {
        char c = name[len - 1 - j];
        if (c == ':') {
            *hostlen = len - j - 1;
            *port = name + len - j;
            *portlen = j;
            return;
        }
        if (c < '0' || c > '9')
            return;
    }
}

/* "host:port" -> host and numeric port as libmemcached holds them
 * (no port: 11211, its default). */
static void split_ketama(const char *name, size_t len, size_t *hostlen, unsigned *port)
{
    const char *p;
    size_t portlen;

    split_nginx(name, len, hostlen, &p, &portlen);
    *port = 11211;
    if (portlen > 0 && portlen <= 5) {
        unsigned v = 0;
        for (size_t i = 0; i < portlen; i++)
            v = v * 10 + (unsigned)(p[i] - '0');
        if (v != 0)
            *port = v;
    }
}

/* Points of one node.  total_weight / nnodes: the whole membership (ketama
 * sizes each server by its share). */
static int gen_points(const rb_ring_t *r, size_t idx, uint64_t total_weight, size_t nnodes,
                      ring_point_t **out, size_t *n)
{
    const ring_node_t *nd = &r->nodes[idx];
    uint32_t tie = tie_by_seq(r->mode) ? nd->seq : (uint32_t)idx;
    ring_point_t *p;
    size_t c;

    if (r->mode == RB_RING_KETAMA) {
        /* libmemcached hosts.cc: computed in float, as it does. */
        float pct = (float)nd->weight / (float)total_weight;
        c = (size_t)(floorf(pct * 160.0f / 4.0f * (float)nnodes + 0.0000000001f) * 4.0f);
    } else if (r->mode == RB_RING_NGINX) {
        c = (size_t)160 * nd->weight;
    } else {
        c = (size_t)r->replicas * nd->weight;
    }
    p = malloc((c ? c : 1) * sizeof(*p));
    if (p == NULL)
        return RB_ENOMEM;
    if (r->mode == RB_RING_KETAMA) {
        char buf[RB_NODE_NAME_MAX + 32];
        size_t hostlen;
        unsigned port;
        split_ketama(nd->name, nd->len, &hostlen, &port);
        for (size_t d = 0; d < c / 4; d++) {
            int len = port == 11211
                ? snprintf(buf, sizeof(buf), "%.*s-%zu", (int)hostlen, nd->name, d)
                : snprintf(buf, sizeof(buf), "%.*s:%u-%zu", (int)hostlen, nd->name, port, d);
            for (uint32_t x = 0; x < 4; x++) {
                p[4 * d + x].pos = (uint64_t)rbi_hash_md5_le32(buf, (size_t)len, x) << 32;
                p[4 * d + x].node = (uint32_t)idx;
                p[4 * d + x].tie = tie;
            }
        }
    } else if (r->mode == RB_RING_NGINX) {
        size_t hostlen, portlen;
        const char *port;
        uint32_t base, prev = 0;
        unsigned char le[4];
        split_nginx(nd->name, nd->len, &hostlen, &port, &portlen);
        base = rbi_hash_crc32(0, nd->name, hostlen);
        base = rbi_hash_crc32(base, "", 1);
        base = rbi_hash_crc32(base, port, portlen);
        for (size_t j = 0; j < c; j++) {
            le[0] = (unsigned char)prev;
            le[1] = (unsigned char)(prev >> 8);
            le[2] = (unsigned char)(prev >> 16);
            le[3] = (unsigned char)(prev >> 24);
            prev = rbi_hash_crc32(base, le, 4);
            p[j].pos = (uint64_t)prev << 32;
            p[j].node = (uint32_t)idx;
            p[j].tie = tie;
        }
    } else {
        char buf[RB_NODE_NAME_MAX + 16];
        memcpy(buf, nd->name, nd->len);
        for (size_t i = 0; i < c; i++) {
            int k = snprintf(buf + nd->len, sizeof(buf) - nd->len, "#%zu", i);
            p[i].pos = r->mode == RB_RING_SEED ? rbi_hash_seed(buf, nd->len + (size_t)k, i)
                                               : rbi_hash_xxh3(buf, nd->len + (size_t)k);
            p[i].node = (uint32_t)idx;
            p[i].tie = tie;
        }
    }
    *out = p;
    *n = c;
    return RB_OK;
}

/* Points a node of this weight gets (ketama: on average). */
static uint64_t points_for(const rb_ring_t *r, uint64_t weight)
{
    if (r->mode == RB_RING_KETAMA || r->mode == RB_RING_NGINX)
        return 160 * weight;
    return (uint64_t)r->replicas * weight;
}

/* ---- writer model ------------------------------------------------------ */

int rb_ring_new(rb_ring_mode_t mode, uint32_t replicas, rb_ring_t **out)
{
    rb_ring_t *r;

    if (out == NULL || !mode_ok(mode) || replicas > RB_RING_MAX_REPLICAS)
        return RB_EINVAL;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return RB_ENOMEM;
    r->mode = mode;
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
    int by_name = !tie_by_seq(r->mode);

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

/* Regenerates every point for mode/replicas; nothing changes on error. */
static int rebuild(rb_ring_t *r, rb_ring_mode_t mode, uint32_t replicas)
{
    rb_ring_t probe = *r;
    uint64_t total = 0, weights = 0;
    ring_point_t *pts;
    size_t n = 0, cap;

    probe.mode = mode;
    probe.replicas = replicas;
    for (size_t i = 0; i < r->nnodes; i++) {
        total += points_for(&probe, r->nodes[i].weight);
        weights += r->nodes[i].weight;
    }
    if (mode == RB_RING_KETAMA)
        total = 160 * (uint64_t)r->nnodes;
    if (total > RB_RING_MAX_POINTS)
        return RB_ERANGE;
    /* ketama rounds each server's share down to whole digests, and the
     * float share can round up by one digest. */
    cap = (size_t)total + 4 * r->nnodes + 1;
    pts = malloc(cap * sizeof(*pts));
    if (pts == NULL)
        return RB_ENOMEM;
    for (size_t i = 0; i < r->nnodes; i++) {
        ring_point_t *one;
        size_t c;
        if (gen_points(&probe, i, weights, r->nnodes, &one, &c) != RB_OK || n + c > cap) {
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
    r->replicas = replicas;
    r->stale = 0;
    return RB_OK;
}

/* The points, brought up to date (ketama rebuilds lazily). */
static int fresh_points(rb_ring_t *r)
{
    return r->stale ? rebuild(r, r->mode, r->replicas) : RB_OK;
}

int rb_ring_set_mode(rb_ring_t *r, rb_ring_mode_t mode, uint32_t replicas)
{
    if (r == NULL || !mode_ok(mode) || replicas > RB_RING_MAX_REPLICAS)
        return RB_EINVAL;
    return rebuild(r, mode, replicas ? replicas : r->replicas);
}

/* Points of the membership after a change: weight changed by delta_w,
 * node count by delta_n. */
static uint64_t points_total_after(const rb_ring_t *r, int64_t delta_w, int delta_n)
{
    uint64_t w = 0;

    if (r->mode == RB_RING_KETAMA)   /* shares of 160 per server (+ rounding) */
        return 164 * (uint64_t)((int64_t)r->nnodes + delta_n);
    for (size_t i = 0; i < r->nnodes; i++)
        w += r->nodes[i].weight;
    return points_for(r, (uint64_t)((int64_t)w + delta_w));
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
    if (r->nnodes >= RB_RING_MAX_NODES || points_total_after(r, weight, 1) > RB_RING_MAX_POINTS)
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
    if (r->mode == RB_RING_KETAMA) {
        /* Every server's share changed: ketama rebuilds, once, when the
         * points are next needed (bulk adds stay linear). */
        r->stale = 1;
        rc = RB_OK;
    } else {
        rc = gen_points(r, at, 0, 0, &add, &n);
        if (rc == RB_OK) {
            qsort(add, n, sizeof(*add), point_cmp);
            rc = reserve_points(r, r->npts + n);
        }
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
    if (r->mode == RB_RING_KETAMA) {
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
    if (points_total_after(r, (int64_t)weight - (int64_t)old, 0) > RB_RING_MAX_POINTS)
        return RB_ERANGE;
    r->nodes[at].weight = weight;
    if (r->mode == RB_RING_KETAMA) {
        r->stale = 1;
        return RB_OK;
    }
    rc = gen_points(r, at, 0, 0, &add, &n);
    if (rc == RB_OK) {
        qsort(add, n, sizeof(*add), point_cmp);
        rc = reserve_points(r, r->npts + n);
    }
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

    while (b < MAX_INDEX_BITS && ((size_t)1 << (b + 1)) <= npts)
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
    uint64_t noff = 0, acc = 0;
    size_t p = 0;

    rbi_st(&c->magic, RBI_RING_COPY_MAGIC);
    rbi_st(&c->version, version);
    rbi_st(&c->mode, (uint64_t)r->mode);
    rbi_st(&c->replicas, r->replicas);
    rbi_st(&c->nnodes, r->nnodes);
    rbi_st(&c->npoints, r->npts);
    rbi_st(&c->index_bits, L->bits);
    rbi_st(&c->words, L->words);
    rbi_st(&c->nodes_w, L->nodes_w);
    rbi_st(&c->names_w, L->names_w);
    rbi_st(&c->points_w, L->points_w);
    rbi_st(&c->owners_w, L->owners_w);
    rbi_st(&c->index_w, L->index_w);
    rbi_st(&c->names_bytes, L->names_bytes);
    rbi_st(&c->owners, L->owners);
    for (size_t i = 0; i < r->nnodes; i++) {
        rbi_st(&d[L->nodes_w + 2 * i], noff | ((uint64_t)r->nodes[i].len << 40));
        rbi_st(&d[L->nodes_w + 2 * i + 1],
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

static rb_ring_copy_shm_t *copy_at(const rbi_map_t *m, uint64_t off)
{
    return (rb_ring_copy_shm_t *)(void *)rbi_word_at(m, off);
}

/* ---- reader side --------------------------------------------------------- */

typedef struct ring_view {
    const rb_ring_copy_shm_t *c;
    const _Atomic uint64_t *d;     /* word 0 of the copy */
    uint64_t version, mode, replicas, nnodes, npoints, bits, words, names_bytes, owners;
    uint64_t nodes_w, names_w, points_w, owners_w, index_w;
} ring_view_t;

static int sect_ok(uint64_t start, uint64_t len, uint64_t words)
{
    return start >= RBI_RING_COPY_HDR_WORDS && start <= words && len <= words - start;
}

/* Reads and bounds-checks the header of copy `which`; a never-published
 * ring reads as an empty view.  Inside a read section a failure may be a
 * torn read; the caller's retry decides. */
static int view_open(const rbi_map_t *m, unsigned which, ring_view_t *v)
{
    const rb_header_shm_t *h = rbi_hdr(m);
    uint64_t size = rbi_seg_size(m);
    uint64_t off = rbi_ld(&h->ring.copy_off[which]);
    uint64_t cap = rbi_ld(&h->ring.copy_cap[which]);
    const rb_ring_copy_shm_t *c;

    memset(v, 0, sizeof(*v));
    if (off == 0)
        return RB_OK;                /* never published */
    if (cap < RBI_RING_COPY_HDR_WORDS * 8 || !rbi_span_ok(size, off, cap))
        return RB_ECORRUPT;
    c = copy_at(m, off);
    v->c = c;
    v->d = c->data - RBI_RING_COPY_HDR_WORDS;
    if (rbi_ld(&c->magic) != RBI_RING_COPY_MAGIC)
        return RB_ECORRUPT;
    v->version = rbi_ld(&c->version);
    v->mode = rbi_ld(&c->mode);
    v->replicas = rbi_ld(&c->replicas);
    v->nnodes = rbi_ld(&c->nnodes);
    v->npoints = rbi_ld(&c->npoints);
    v->bits = rbi_ld(&c->index_bits);
    v->words = rbi_ld(&c->words);
    v->nodes_w = rbi_ld(&c->nodes_w);
    v->names_w = rbi_ld(&c->names_w);
    v->points_w = rbi_ld(&c->points_w);
    v->owners_w = rbi_ld(&c->owners_w);
    v->index_w = rbi_ld(&c->index_w);
    v->names_bytes = rbi_ld(&c->names_bytes);
    v->owners = rbi_ld(&c->owners);
    if (v->owners > v->nnodes || (v->owners == 0) != (v->npoints == 0) || v->words > cap / 8 || v->words < RBI_RING_COPY_HDR_WORDS || !mode_ok(v->mode) ||
        v->replicas == 0 || v->replicas > RB_RING_MAX_REPLICAS ||
        v->nnodes > RB_RING_MAX_NODES || v->npoints > RB_RING_MAX_POINTS ||
        (v->npoints == 0) != (v->nnodes == 0) ||
        v->bits < 1 || v->bits > MAX_INDEX_BITS || (v->names_bytes & 7) != 0 ||
        !sect_ok(v->nodes_w, RBI_NODE_WORDS * v->nnodes, v->words) ||
        !sect_ok(v->names_w, v->names_bytes / 8, v->words) ||
        !sect_ok(v->points_w, v->npoints, v->words) ||
        !sect_ok(v->owners_w, (v->npoints + 3) / 4, v->words) ||
        !sect_ok(v->index_w, (((uint64_t)1 << v->bits) + 2) / 2, v->words))
        return RB_ECORRUPT;
    return RB_OK;
}

static inline __attribute__((always_inline)) uint64_t view_index(const ring_view_t *v, uint64_t e)
{
    return (rbi_ld(&v->d[v->index_w + e / 2]) >> (32 * (e & 1))) & 0xFFFFFFFFu;
}

static inline __attribute__((always_inline)) uint64_t view_owner(const ring_view_t *v, uint64_t i)
{
    return (rbi_ld(&v->d[v->owners_w + i / 4]) >> (16 * (i & 3))) & 0xFFFFu;
}

/* The point index owning position h: lower bound, wrapping to 0. */
static inline __attribute__((always_inline)) int view_find(const ring_view_t *v, uint64_t h,
                                                         uint64_t *pt)
{
    uint64_t j, lo, hi;
    const _Atomic uint64_t *pos;

    if (v->npoints == 0)
        return RB_EEMPTY;
    j = h >> (64 - v->bits);
    lo = view_index(v, j);
    hi = view_index(v, j + 1);
    pos = &v->d[v->points_w];
    if (lo > hi || hi > v->npoints)
        return RB_ECORRUPT;
    /* Invariant: points below lo are < h, points from hi on are >= h. */
    while (hi - lo > 8) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (rbi_ld(&pos[mid]) < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo < hi && rbi_ld(&pos[lo]) < h)
        lo++;
    *pt = lo == v->npoints ? 0 : lo;
    return RB_OK;
}

static int view_node(const ring_view_t *v, uint64_t idx, rb_node_t *out)
{
    uint64_t w0, noff, nlen, weight;

    if (idx >= v->nnodes)
        return RB_ECORRUPT;
    w0 = rbi_ld(&v->d[v->nodes_w + RBI_NODE_WORDS * idx]);
    weight = rbi_ld(&v->d[v->nodes_w + RBI_NODE_WORDS * idx + 1]) & 0xFFFFFFFFu;
    noff = w0 & NODE_OFF_MASK;
    nlen = w0 >> 40;
    if (nlen == 0 || nlen > RB_NODE_NAME_MAX || (noff & 7) != 0 ||
        noff > v->names_bytes || rbi_round_up(nlen, 8) > v->names_bytes - noff ||
        weight == 0 || weight > RB_RING_MAX_WEIGHT)
        return RB_ECORRUPT;
    rbi_copy_out(out->name, &v->d[v->names_w + noff / 8], (size_t)(nlen + 7) / 8);
    out->name[nlen] = '\0';
    out->name_len = (uint32_t)nlen;
    out->index = (uint32_t)idx;
    out->weight = (uint32_t)weight;
    out->version = v->version;
    return RB_OK;
}

/* The last view a thread validated, by (mapping, sequence): while seq
 * still equals `seq` the copy cannot have changed (latch invariant L1), so
 * a lookup in a quiet ring skips re-validating the copy header. */
typedef struct view_cache {
    uint64_t map_id, seq;
    ring_view_t v;
} view_cache_t;

static _Thread_local view_cache_t tl_view;

/* One read section around fn, retried while the writer overtakes it. */
typedef int (*ring_fn)(const ring_view_t *v, void *arg);

static inline __attribute__((always_inline)) int
ring_read(const rbi_map_t *m, ring_fn fn, void *arg)
{
    const _Atomic uint64_t *seq = &rbi_hdr(m)->ring.seq;

    for (uint32_t t = 0; t < RBI_READ_RETRIES; t++) {
        ring_view_t fresh;
        const ring_view_t *v = &tl_view.v;
        uint64_t s = rbi_latch_read_begin(seq);
        int cached = tl_view.map_id == m->id && tl_view.seq == s, rc = RB_OK;
        if (!cached) {
            rc = view_open(m, (unsigned)(s & 1), &fresh);
            v = &fresh;
        }
        if (rc == RB_OK)
            rc = fn(v, arg);
        if (!rbi_latch_read_retry(seq, s)) {
            if (!cached && rc != RB_ECORRUPT) {
                tl_view.v = fresh;
                tl_view.seq = s;
                tl_view.map_id = m->id;
            }
            rbi_ring_last_retries = t;
            return rc;
        }
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

static inline uint64_t arg_hash(lookup_arg_t *a, uint64_t mode)
{
    if (a->hmode != mode) {
        a->h = key_pos(mode, a->key, a->len);
        a->hmode = mode;
    }
    return a->h;
}

static int lookup_fn(const ring_view_t *v, void *arg)
{
    lookup_arg_t *a = arg;
    uint64_t pt;
    int rc = view_find(v, arg_hash(a, v->mode), &pt);

    if (rc != RB_OK)
        return rc;
    return view_node(v, view_owner(v, pt), a->out);
}

int rb_ring_lookup(const rb_segment_t *seg, const void *key, size_t len, rb_node_t *out)
{
    lookup_arg_t a = { key, len, ~0ULL, 0, out, 1, 0 };

    if (seg == NULL || (key == NULL && len != 0) || out == NULL)
        return RB_EINVAL;
    return ring_read(rbi_reader_map(seg), lookup_fn, &a);
}

static int lookup_n_fn(const ring_view_t *v, void *arg)
{
    lookup_arg_t *a = arg;
    uint64_t seen[(RB_RING_MAX_NODES + 64) / 64];
    size_t want = a->n < v->owners ? a->n : (size_t)v->owners;
    uint64_t pt;
    int rc = view_find(v, arg_hash(a, v->mode), &pt);

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
            rc = view_node(v, o, &a->out[a->got]);
            if (rc != RB_OK)
                return rc;
            a->got++;
        }
        if (++pt == v->npoints)
            pt = 0;
    }
    /* `owners` nodes own points, so a walk that finds fewer than `want`
     * distinct owners read a torn table. */
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

static int stat_fn(const ring_view_t *v, void *arg)
{
    rb_ring_stat_t *st = arg;

    st->version = v->version;
    st->mode = (uint32_t)v->mode;
    st->replicas = (uint32_t)v->replicas;
    st->nodes = (uint32_t)v->nnodes;
    st->points = (uint32_t)v->npoints;
    st->index_bits = (uint32_t)v->bits;
    st->bytes = v->words * 8;
    return RB_OK;
}

int rb_ring_stat(const rb_segment_t *seg, rb_ring_stat_t *out)
{
    if (seg == NULL || out == NULL)
        return RB_EINVAL;
    return ring_read(rbi_reader_map(seg), stat_fn, out);
}

typedef struct nodes_arg {
    rb_node_t *out;
    size_t cap, count;
} nodes_arg_t;

static int nodes_fn(const ring_view_t *v, void *arg)
{
    nodes_arg_t *a = arg;

    a->count = (size_t)v->nnodes;
    for (uint64_t i = 0; i < v->nnodes && i < a->cap; i++) {
        int rc = view_node(v, i, &a->out[i]);
        if (rc != RB_OK)
            return rc;
    }
    return RB_OK;
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

/* ---- publish / load / repair --------------------------------------------- */

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
        version = rbi_ld(&copy_at(m, rbi_ld(&h->ring.copy_off[active]))->version) + 1;
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
    write_copy(r, &L, copy_at(m, rbi_ld(&h->ring.copy_off[w])), version);
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

static int load_fn(const ring_view_t *v, void *arg)
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
        rc = view_node(v, i, &nodes[i].node);
        nodes[i].seq = (uint32_t)(rbi_ld(&v->d[v->nodes_w + RBI_NODE_WORDS * i + 1]) >> 32);
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
    rc = ring_read(rbi_seg_map(seg), load_fn, &a);
    if (rc == RB_OK && rb_ring_point_count(a.ring) != a.npoints)
        rc = RB_ECORRUPT;   /* the table does not match its membership */
    if (rc != RB_OK) {
        rb_ring_free(a.ring);
        return rc;
    }
    *out = a.ring;
    return RB_OK;
}

int rbi_ring_validate(const rb_segment_t *seg)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    ring_view_t v;

    /* Only the active copy matters: the inactive one is an older version,
     * or one a dead writer left half-written, and is rewritten before it
     * is ever made active. */
    return view_open(m, (unsigned)(rbi_ld(&rbi_hdr(m)->ring.seq) & 1), &v);
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
