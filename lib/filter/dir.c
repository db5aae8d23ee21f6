/*
 * dir.c - the filter directory, kind-blind (dir.h): reading a slot whole,
 * finding a name (readers: a walk, once per handle; the writer: its
 * index), listing, and the writer's claim / publish / free of a slot.
 *
 * The writer's index is an open-addressing table with linear probing in
 * one malloc'ed block hung on the segment handle (rb_segment.dir_index;
 * segment.c frees it with free(), knowing nothing of its shape).  An
 * entry is (low 32 bits of the name's xxh3) << 32 | (slot + 1), 0 empty;
 * the table has at least twice as many entries as the directory has
 * slots, so a probe ends within a few entries.  Deletion shifts the
 * entries of the cluster back (no tombstones), so the table never needs
 * a rebuild while the mapping lasts.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "dir.h"
#include "hash.h"
#include "util.h"

typedef struct dir_index {
    uint64_t map_id;   /* the mapping indexed (rbi_map_t.id) */
    uint64_t mask;     /* entries - 1, entries a power of two */
    uint64_t e[];
} dir_index_t;

#define ENTRY_SLOT(e) (((e) & 0xffffffffu) - 1)
#define ENTRY_HASH(e) ((uint32_t)((e) >> 32))

int rbi_dir_slot_read(const rb_filter_shm_t *f, char *name, rbi_slot_id_t *id,
                      unsigned char *secret)
{
    for (uint32_t t = 0; t < RBI_READ_RETRIES; t++) {
        uint64_t g = rbi_gen_read_begin(&f->gen), len;
        int live;
        /* Acquire pairs with the release store of LIVE (rbi_dir_publish):
         * the slot's words are complete. */
        live = atomic_load_explicit(&f->state, memory_order_acquire) == RBI_FILTER_LIVE;
        len = rbi_ld(&f->name_len);
        live = live && len >= 1 && len <= RB_FILTER_NAME_MAX;
        if (live) {
            rbi_copy_out(name, f->name, (len + 7) / 8);
            if (id != NULL) {
                id->incarnation = rbi_ld(&f->incarnation);
                id->layout = rbi_ld(&f->layout);
            }
            if (secret != NULL)
                rbi_copy_out(secret, f->secret, RBI_SECRET_WORDS);
        }
        if (!rbi_gen_read_retry(&f->gen, g))
            return live ? (int)len : 0;
    }
    return RB_EBUSY;
}

int64_t rbi_dir_lookup(const rbi_map_t *m, const char *name, size_t len, rbi_slot_id_t *id,
                       unsigned char *secret)
{
    char buf[RB_FILTER_NAME_MAX + 8];
    rbi_slot_id_t tmp;

    if (id == NULL)
        id = &tmp;
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        const rb_filter_shm_t *f = rbi_dir_slot(m, i);
        int n;
        /* Name and identity in one read (a slot of another name of the
         * same length costs the secret's copy only if one is asked for). */
        if (rbi_ld(&f->name_len) != len || (n = rbi_dir_slot_read(f, buf, id, secret)) == 0)
            continue;
        if (n == RB_EBUSY)
            return RB_EBUSY;
        if ((size_t)n == len && memcmp(buf, name, len) == 0) {
            id->slot = i;
            return (int64_t)i;
        }
    }
    return RB_ENOENT;
}

int rbi_dir_bind(const rbi_map_t *m, const char *name, size_t len,
                 int (*of_kind)(uint64_t layout),
                 int (*check)(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc,
                              void *arg),
                 void *arg, uint64_t *slot, uint64_t *incarnation)
{
    for (uint32_t t = 0; t < RBI_READ_RETRIES; t++) {
        rbi_slot_id_t id;
        const rb_filter_shm_t *f;
        int64_t i = rbi_dir_lookup(m, name, len, &id, NULL);
        uint64_t g;
        int rc;
        if (i < 0)
            return (int)i;
        if (!of_kind(id.layout))
            return RB_EWRONGTYPE;
        f = rbi_dir_slot(m, (uint64_t)i);
        g = rbi_gen_read_begin(&f->gen);
        rc = check != NULL ? check(m, f, id.incarnation, arg) : 1;
        if (rbi_gen_read_retry(&f->gen, g) || rc == 0)
            continue;   /* deleted or replaced since the lookup: look again */
        if (rc < 0)
            return rc;
        *slot = (uint64_t)i;
        *incarnation = id.incarnation;
        return RB_OK;
    }
    return RB_EBUSY;
}

int rbi_named_rebind(const rbi_named_t *ch, const rbi_map_t *m)
{
    rbi_named_t *h = (rbi_named_t *)ch;
    uint64_t slot, inc;
    int rc = rbi_dir_bind(m, h->name, h->len, h->of_kind, h->check, NULL, &slot, &inc);

    if (rc == RB_OK) {
        atomic_store_explicit(&h->slot, slot, memory_order_relaxed);
        atomic_store_explicit(&h->incarnation, inc, memory_order_relaxed);
    }
    return rc;
}

int rbi_named_init(rbi_named_t *h, const rb_segment_t *seg, const char *name, size_t len,
                   int (*of_kind)(uint64_t layout), rbi_bind_check_fn check)
{
    if (seg == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    h->seg = seg;
    h->of_kind = of_kind;
    h->check = check;
    h->len = len;
    memcpy(h->name, name, len);
    return rbi_named_rebind(h, rbi_reader_map(seg));
}

int rbi_named_new(size_t size, const rb_segment_t *seg, const char *name, size_t len,
                  int (*of_kind)(uint64_t layout), rbi_bind_check_fn check, void **out)
{
    rbi_named_t *h;
    int rc;

    if (out == NULL || seg == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    if ((h = calloc(1, size)) == NULL)
        return RB_ENOMEM;
    if ((rc = rbi_named_init(h, seg, name, len, of_kind, check)) != RB_OK) {
        free(h);
        return rc;
    }
    *out = h;
    return RB_OK;
}

int rbi_dir_walk(const rbi_map_t *m, uint64_t *cursor, size_t count,
                 int (*fn)(const char *name, size_t len, uint64_t layout, void *arg), void *arg)
{
    char name[RB_FILTER_NAME_MAX + 8];
    rbi_slot_id_t id;
    uint64_t i;

    for (i = *cursor; i < m->dir_slots && i - *cursor < count; i++) {
        int len = rbi_dir_slot_read(rbi_dir_slot(m, i), name, &id, NULL), rc;
        if (len > 0 && (rc = fn(name, (size_t)len, id.layout, arg)) != 0) {
            *cursor = i + 1 < m->dir_slots ? i + 1 : 0;
            return rc;
        }
    }
    *cursor = i < m->dir_slots ? i : 0;
    return 0;
}

/* ---- the writer ----------------------------------------------------------- */

/* 1 if live slot f of the writer's map holds name. */
static int slot_is(const rb_filter_shm_t *f, const char *name, size_t len)
{
    char buf[RB_FILTER_NAME_MAX + 8];

    if (rbi_ld(&f->state) != RBI_FILTER_LIVE || rbi_ld(&f->name_len) != len)
        return 0;
    rbi_copy_out(buf, f->name, (len + 7) / 8);
    return memcmp(buf, name, len) == 0;
}

static uint32_t name_hash(const char *name, size_t len)
{
    return (uint32_t)rbi_hash_xxh3(name, len);
}

/* The hash of live slot f's name (the writer's own words: no section). */
static uint32_t slot_hash(const rb_filter_shm_t *f)
{
    char buf[RB_FILTER_NAME_MAX + 8];
    uint64_t len = rbi_ld(&f->name_len);

    if (len > RB_FILTER_NAME_MAX)
        len = RB_FILTER_NAME_MAX;
    rbi_copy_out(buf, f->name, (len + 7) / 8);
    return name_hash(buf, len);
}

static void index_put(dir_index_t *x, uint32_t h, uint64_t slot)
{
    uint64_t i = h & x->mask;

    while (x->e[i] != 0)
        i = (i + 1) & x->mask;
    x->e[i] = (uint64_t)h << 32 | (slot + 1);
}

/* Removes slot's entry, shifting the rest of its cluster back so that
 * every entry stays reachable from its home without tombstones. */
static void index_drop(dir_index_t *x, uint32_t h, uint64_t slot)
{
    uint64_t i = h & x->mask, j;

    while (x->e[i] != 0 && ENTRY_SLOT(x->e[i]) != slot)
        i = (i + 1) & x->mask;
    if (x->e[i] == 0)
        return;
    x->e[i] = 0;
    for (j = (i + 1) & x->mask; x->e[j] != 0; j = (j + 1) & x->mask) {
        uint64_t home = ENTRY_HASH(x->e[j]) & x->mask;
        /* Entry j may fill hole i unless its home lies cyclically in
         * (i, j]: then it would move before its own home. */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            x->e[i] = x->e[j];
            x->e[j] = 0;
            i = j;
        }
    }
}

/* The writer's index of m, built from the directory if it has none for m
 * yet (D1); NULL if out of memory. */
static dir_index_t *index_of(rb_segment_t *seg, const rbi_map_t *m)
{
    dir_index_t *x = seg->dir_index;
    uint64_t n = 16;

    if (x != NULL && x->map_id == m->id)
        return x;
    free(x);
    seg->dir_index = NULL;
    while (n < 2 * m->dir_slots)
        n <<= 1;
    if ((x = calloc(1, sizeof(*x) + n * sizeof(x->e[0]))) == NULL)
        return NULL;
    x->map_id = m->id;
    x->mask = n - 1;
    for (uint64_t i = 0; i < m->dir_slots; i++) {
        const rb_filter_shm_t *f = rbi_dir_slot(m, i);
        if (rbi_ld(&f->state) == RBI_FILTER_LIVE)
            index_put(x, slot_hash(f), i);
    }
    seg->dir_index = x;
    return x;
}

/* The old walk, when the index cannot be had. */
static int64_t find_walk(const rbi_map_t *m, const char *name, size_t len)
{
    for (uint64_t i = 0; i < m->dir_slots; i++)
        if (slot_is(rbi_dir_slot(m, i), name, len))
            return (int64_t)i;
    return -1;
}

int64_t rbi_dir_find(rb_segment_t *seg, const char *name, size_t len)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    dir_index_t *x = index_of(seg, m);
    uint32_t h;

    if (x == NULL)
        return find_walk(m, name, len);
    h = name_hash(name, len);
    for (uint64_t i = h & x->mask; x->e[i] != 0; i = (i + 1) & x->mask) {
        uint64_t slot = ENTRY_SLOT(x->e[i]);
        if (ENTRY_HASH(x->e[i]) == h && slot < m->dir_slots &&
            slot_is(rbi_dir_slot(m, slot), name, len))
            return (int64_t)slot;
    }
    return -1;
}

int rbi_writer_find(rb_segment_t *seg, const char *name, size_t len,
                    int (*of_kind)(uint64_t layout), rb_filter_shm_t **f)
{
    int64_t i;

    if (seg == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if ((i = rbi_dir_find(seg, name, len)) < 0)
        return RB_ENOENT;
    *f = rbi_dir_slot(rbi_seg_map(seg), (uint64_t)i);
    return of_kind(rbi_ld(&(*f)->layout)) ? RB_OK : RB_EWRONGTYPE;
}

int rbi_dir_claim(rb_segment_t *seg, const char *name, size_t len, rb_filter_shm_t **f)
{
    const rbi_map_t *m = rbi_seg_map(seg);

    if (rbi_dir_find(seg, name, len) >= 0)
        return RB_EEXIST;
    for (uint64_t i = 0; i < m->dir_slots; i++)
        if (rbi_ld(&rbi_dir_slot(m, i)->state) == RBI_FILTER_FREE) {
            *f = rbi_dir_slot(m, i);
            return RB_OK;
        }
    return RB_ESLOTS;
}

/* The index of slot f in m. */
static uint64_t slot_no(const rbi_map_t *m, const rb_filter_shm_t *f)
{
    return (uint64_t)((const unsigned char *)f - (m->base + m->dir_off)) / sizeof(*f);
}

void rbi_dir_publish(rb_segment_t *seg, rb_filter_shm_t *f)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    dir_index_t *x = seg->dir_index;

    /* A live slot's generation is never 0, so a reader's section that
     * began on it and then read zeros (a mapping replaced by zero pages
     * after its grace, follow.c) fails its re-check. */
    if (rbi_ld(&f->gen.word) == 0)
        rbi_gen_publish(&f->gen);
    /* Release: readers that acquire LIVE see every word stored before. */
    atomic_store_explicit(&f->state, RBI_FILTER_LIVE, memory_order_release);
    if (x != NULL && x->map_id == m->id)
        index_put(x, slot_hash(f), slot_no(m, f));
}

void rbi_dir_free(rb_segment_t *seg, rb_filter_shm_t *f)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    dir_index_t *x = seg->dir_index;

    if (x != NULL && x->map_id == m->id)
        index_drop(x, slot_hash(f), slot_no(m, f));
    rbi_st(&f->state, RBI_FILTER_FREE);
    rbi_gen_publish(&f->gen);   /* R1: before the caller frees the arrays */
}
