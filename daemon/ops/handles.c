/*
 * handles.c - the daemon's open Bloom filter handles, hashed by name: a
 * filter is resolved once (rb_bloom_open walks the directory) and its
 * handle kept for the segment's life, found again in O(1) by any command,
 * the replay and the aging tick; and the list of the aging filters among
 * them (handles.h, invariant A), so the once-a-second tick costs what
 * ages, not what exists.  Beside them, the handles of the last cuckoo
 * filters read (rbd_filters_cf, direct-mapped, RBD_CF_HANDLES): the
 * cuckoo reads (CF.EXISTS, CF.MEXISTS, CF.COUNT ...) then allocate
 * nothing and walk no directory (issue 29, item 4).
 *
 * Workload: up to max-filters names (10^4 and more), a lookup per
 * command naming a filter; chains are kept at most one entry long on
 * average (the table doubles past that).  The hash is seeded per process,
 * so names chosen by clients cannot be made to share a chain.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <stdlib.h>
#include <string.h>

#include "handles.h"

struct rbd_filter_ref {
    rbd_filter_ref_t *next;                /* the chain of its bucket */
    rbd_filter_ref_t *aprev, *anext;       /* the aging list, if aging */
    rb_bloom_t *bf;                        /* NULL: the name holds another kind */
    uint64_t hash;
    size_t len;
    int aging;
    char name[];
};

/* A kept cuckoo handle (rbd_filters_cf); h NULL: the entry is free. */
struct rbd_cf_ref {
    rb_cuckoo_t *h;
    uint64_t hash;
    size_t len;
    char name[RB_FILTER_NAME_MAX];
};

static uint64_t name_hash(const char *name, size_t len)
{
    static uint64_t seed;
    uint64_t h;

    if (seed == 0)
        seed = ((uint64_t)arc4random() << 32 | arc4random()) | 1;
    h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* The link that points at name's entry (or the NULL ending its chain). */
static rbd_filter_ref_t **find(const rbd_filters_t *f, const char *name, size_t len,
                               uint64_t h)
{
    rbd_filter_ref_t **p = &f->bucket[h & (f->nbuckets - 1)];

    while (*p != NULL && !((*p)->hash == h && (*p)->len == len &&
                           memcmp((*p)->name, name, len) == 0))
        p = &(*p)->next;
    return p;
}

/* Doubles the table (or makes its first): RB_OK or RB_ENOMEM, the table
 * unchanged then. */
static int grow(rbd_filters_t *f)
{
    size_t nb = f->nbuckets ? 2 * f->nbuckets : 64;
    rbd_filter_ref_t **b = calloc(nb, sizeof(*b));

    if (b == NULL)
        return RB_ENOMEM;
    for (size_t i = 0; i < f->nbuckets; i++)
        for (rbd_filter_ref_t *r = f->bucket[i], *next; r != NULL; r = next) {
            next = r->next;
            r->next = b[r->hash & (nb - 1)];
            b[r->hash & (nb - 1)] = r;
        }
    free(f->bucket);
    f->bucket = b;
    f->nbuckets = nb;
    return RB_OK;
}

/* Files r in the aging list if its filter ages on a window (what the
 * tick must visit) and it is not there yet. */
static void file_aging(rbd_filters_t *f, rbd_filter_ref_t *r)
{
    rb_bloom_stat_t st;

    if (r->aging || r->bf == NULL || rb_bloom_stat(r->bf, &st) != RB_OK || !(st.flags & RB_BLOOM_AGING) ||
        st.window == 0)
        return;
    r->aging = 1;
    r->anext = f->aging;
    if (f->aging != NULL)
        f->aging->aprev = r;
    f->aging = r;
}

/* Adds name's entry (bf NULL: a name of another kind) to the table:
 * RB_OK, or RB_ENOMEM with bf closed. */
static int insert(rbd_filters_t *f, const char *name, size_t len, uint64_t h, rb_bloom_t *bf)
{
    rbd_filter_ref_t **p, *r;

    if ((f->n >= f->nbuckets && grow(f) != RB_OK) ||
        (r = calloc(1, sizeof(*r) + len)) == NULL) {
        rb_bloom_close(bf);
        return RB_ENOMEM;
    }
    memcpy(r->name, name, len);
    r->len = len;
    r->hash = h;
    r->bf = bf;
    p = &f->bucket[h & (f->nbuckets - 1)];
    r->next = *p;
    *p = r;
    f->n++;
    if (f->aging_known)
        file_aging(f, r);
    return RB_OK;
}

rb_bloom_t *rbd_filters_get(rbd_filters_t *f, const rb_segment_t *seg, const char *name,
                            size_t len, int *rc)
{
    uint64_t h = name_hash(name, len);
    rbd_filter_ref_t **p;
    rb_bloom_t *bf = NULL;

    if (f->nbuckets != 0 && *(p = find(f, name, len, h)) != NULL) {
        *rc = (*p)->bf != NULL ? RB_OK : RB_EWRONGTYPE;
        return (*p)->bf;
    }
    /* A name of another kind is kept too (bf NULL): it stays of that
     * kind until a DEL, which forgets it. */
    if ((*rc = rb_bloom_open(seg, name, len, &bf)) != RB_OK && *rc != RB_EWRONGTYPE)
        return NULL;
    if (insert(f, name, len, h, bf) != RB_OK) {
        *rc = RB_ENOMEM;
        return NULL;
    }
    return bf;
}

void rbd_filters_made(rbd_filters_t *f, const rb_segment_t *seg, const char *name, size_t len)
{
    int rc;

    if (f->aging_known)   /* opening it files it (A); a sketch is no Bloom handle */
        (void)rbd_filters_get(f, seg, name, len, &rc);
}

/* The entry of cf's slot for hash h if it keeps name's handle, else NULL. */
static rbd_cf_ref_t *cf_find(const rbd_filters_t *f, const char *name, size_t len, uint64_t h)
{
    rbd_cf_ref_t *e = f->cf[h % RBD_CF_HANDLES];

    return e != NULL && e->h != NULL && e->hash == h && e->len == len &&
           memcmp(e->name, name, len) == 0 ? e : NULL;
}

rb_cuckoo_t *rbd_filters_cf(rbd_filters_t *f, const rb_segment_t *seg, const char *name,
                            size_t len, int *rc)
{
    uint64_t h = name_hash(name, len);
    rbd_cf_ref_t *e = cf_find(f, name, len, h), **slot = &f->cf[h % RBD_CF_HANDLES];
    rb_cuckoo_t *k;

    if (e != NULL) {
        *rc = RB_OK;
        return e->h;
    }
    if (len > RB_FILTER_NAME_MAX) {
        *rc = RB_EINVAL;
        return NULL;
    }
    if ((*rc = rb_cuckoo_open(seg, name, len, &k)) != RB_OK)
        return NULL;
    if (*slot == NULL && (*slot = calloc(1, sizeof(**slot))) == NULL) {
        rb_cuckoo_close(k);
        *rc = RB_ENOMEM;
        return NULL;
    }
    e = *slot;
    rb_cuckoo_close(e->h);   /* another name's, if any: the slot is this one's now */
    e->h = k;
    e->hash = h;
    e->len = len;
    memcpy(e->name, name, len);
    return k;
}

void rbd_filters_forget(rbd_filters_t *f, const char *name, size_t len)
{
    rbd_filter_ref_t **p, *r;
    uint64_t h = name_hash(name, len);
    rbd_cf_ref_t *e = cf_find(f, name, len, h);

    if (e != NULL) {
        rb_cuckoo_close(e->h);
        e->h = NULL;
    }

    if (f->nbuckets == 0 || (r = *(p = find(f, name, len, h))) == NULL)
        return;
    *p = r->next;
    if (r->aging) {
        if (r->aprev != NULL)
            r->aprev->anext = r->anext;
        else
            f->aging = r->anext;
        if (r->anext != NULL)
            r->anext->aprev = r->aprev;
    }
    rb_bloom_close(r->bf);
    free(r);
    f->n--;
}

void rbd_filters_close(rbd_filters_t *f)
{
    for (size_t i = 0; i < f->nbuckets; i++)
        for (rbd_filter_ref_t *r = f->bucket[i], *next; r != NULL; r = next) {
            next = r->next;
            rb_bloom_close(r->bf);
            free(r);
        }
    free(f->bucket);
    for (size_t i = 0; i < RBD_CF_HANDLES; i++)
        if (f->cf[i] != NULL) {
            rb_cuckoo_close(f->cf[i]->h);
            free(f->cf[i]);
        }
    memset(f, 0, sizeof(*f));
}

typedef struct find_arg {
    rbd_filters_t *f;
    const rb_segment_t *seg;
    const rb_kind_desc_t *bloom;
    int failed;
} find_arg_t;

/* The walk's step: a Bloom filter is opened (and filed if it ages), a
 * name of another kind only remembered as such (no directory lookup).  A
 * name that could not be opened (not gone, not of another kind) leaves
 * the set unknown: the next tick walks again rather than miss a filter. */
static int find_one(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    find_arg_t *a = arg;
    uint64_t h = name_hash(name, len);
    int rc;

    if (a->f->nbuckets != 0 && *find(a->f, name, len, h) != NULL)
        return 0;
    if (kind != a->bloom) {
        if (insert(a->f, name, len, h, NULL) != RB_OK)
            a->failed = 1;
        return 0;
    }
    if (rbd_filters_get(a->f, a->seg, name, len, &rc) == NULL && rc != RB_ENOENT &&
        rc != RB_EWRONGTYPE)
        a->failed = 1;
    return 0;
}

/* The kind table's row of the Bloom filter. */
static const rb_kind_desc_t *bloom_kind(void)
{
    const rb_kind_desc_t *k;

    for (size_t i = 0; (k = rb_kind(i)) != NULL; i++)
        if (strcmp(k->name, "bloom") == 0)
            return k;
    return NULL;
}

void rbd_filters_aging(rbd_filters_t *f, const rb_segment_t *seg,
                       void (*fn)(const char *name, size_t len, rb_bloom_t *bf, void *arg),
                       void *arg)
{
    if (!f->aging_known) {
        find_arg_t a = { f, seg, bloom_kind(), 0 };
        uint64_t cursor = 0;
        /* Handles opened before were not filed: file them, then the rest
         * as the walk opens them. */
        for (size_t i = 0; i < f->nbuckets; i++)
            for (rbd_filter_ref_t *r = f->bucket[i]; r != NULL; r = r->next)
                file_aging(f, r);
        f->aging_known = 1;
        if (rb_filter_scan(seg, &cursor, SIZE_MAX, find_one, &a) != RB_OK || a.failed)
            f->aging_known = 0;
    }
    for (rbd_filter_ref_t *r = f->aging, *next; r != NULL; r = next) {
        next = r->anext;
        fn(r->name, r->len, r->bf, arg);
    }
}
