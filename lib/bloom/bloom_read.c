/*
 * bloom_read.c - Bloom filters, the reader side: binding a handle to its slot,
 * the handle's binding per mapping, the read section, contains (one key,
 * many keys pipelined) and the figures (stat, info).
 *
 * What: a handle binds once per mapping to its slot (bloom.h); every call
 * runs inside a generation section (latch.h) that validates the layers it
 * will probe and retries if an array was replaced meanwhile.  Adds never
 * force a retry: bits are only ever set.  Workload: ~10^7-10^8 contains/s
 * per core from many processes; contains_many keeps PIPE keys in flight so
 * that their cache misses overlap, with no indirect call per key or probe.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bloom.h"

#define PIPE         32u      /* contains_many: keys in flight */
#define CHUNK        1024u    /* contains_many: keys per read section */


/* rbi_dir_walk's callback for rb_bloom_list / rb_bloom_scan: the name
 * alone, whatever the kind (they list the one namespace). */
typedef struct list_arg {
    int (*fn)(const char *, size_t, void *);
    void *arg;
} list_arg_t;

static int list_name(const char *name, size_t len, uint64_t layout, void *arg)
{
    list_arg_t *a = arg;

    (void)layout;
    return a->fn(name, len, a->arg);
}

int rb_bloom_list(const rb_segment_t *seg, int (*fn)(const char *, size_t, void *), void *arg)
{
    list_arg_t a = { fn, arg };
    uint64_t cursor = 0;

    if (seg == NULL || fn == NULL)
        return RB_EINVAL;
    return rbi_dir_walk(rbi_reader_map(seg), &cursor, SIZE_MAX, list_name, &a);
}

int rb_bloom_scan(const rb_segment_t *seg, uint64_t *cursor, size_t count,
                  int (*fn)(const char *, size_t, void *), void *arg)
{
    list_arg_t a = { fn, arg };

    if (seg == NULL || cursor == NULL || fn == NULL || count == 0)
        return RB_EINVAL;
    return rbi_dir_walk(rbi_reader_map(seg), cursor, count, list_name, &a);
}

/* A new binding of name in m, or RB_ENOENT / RB_EWRONGTYPE / RB_ECORRUPT /
 * RB_ENOMEM / RB_EBUSY.  The slot is read whole (rbi_dir_lookup), so a
 * binding never holds the secret or incarnation of a filter that replaced
 * the one named. */
static int bind_resolve(const rbi_map_t *m, const char *name, size_t len, rbi_bloom_bind_t **out)
{
    rbi_slot_id_t id;
    rbi_bloom_bind_t *b;
    unsigned char secret[RBI_SECRET_BYTES];
    int64_t i = rbi_dir_lookup(m, name, len, &id, secret);

    if (i < 0)
        return (int)i;
    if (id.layout != RB_BLOOM_STANDARD && id.layout != RB_BLOOM_BLOCKED &&
        id.layout != RB_BLOOM_REDISBLOOM)
        return rbi_layout_other_kind(id.layout) ? RB_EWRONGTYPE : RB_ECORRUPT;
    if ((b = calloc(1, sizeof(*b))) == NULL)
        return RB_ENOMEM;
    b->map = m;
    b->slot = rbi_dir_slot(m, (uint64_t)i);
    b->incarnation = id.incarnation;
    b->layout = (uint32_t)id.layout;
    memcpy(b->secret, secret, sizeof(b->secret));
    *out = b;
    return RB_OK;
}

int rb_bloom_open(const rb_segment_t *seg, const char *name, size_t len, rb_bloom_t **out)
{
    rbi_bloom_bind_t *b;
    rb_bloom_t *bf;
    int rc;

    if (seg == NULL || out == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    rc = bind_resolve(rbi_reader_map(seg), name, len, &b);
    if (rc != RB_OK)
        return rc;
    bf = calloc(1, sizeof(*bf));
    if (bf == NULL) {
        free(b);
        return RB_ENOMEM;
    }
    bf->seg = seg;
    bf->name_len = (uint32_t)len;
    memcpy(bf->name, name, len);
    pthread_mutex_init(&bf->lock, NULL);
    atomic_store(&bf->bind, b);
    *out = bf;
    return RB_OK;
}

void rb_bloom_close(rb_bloom_t *bf)
{
    rbi_bloom_bind_t *b;

    if (bf == NULL)
        return;
    b = atomic_load(&bf->bind);
    while (b != NULL) {
        rbi_bloom_bind_t *older = b->older;
        free(b);
        b = older;
    }
    pthread_mutex_destroy(&bf->lock);
    free(bf);
}

/* Rebinding is rare and serialised by the handle's lock; the fast path is
 * two loads. */
int rbi_bloom_bind_get(const rb_bloom_t *cbf, const rbi_bloom_bind_t *stale,
                       rbi_bloom_bind_t **out)
{
    rb_bloom_t *bf = (rb_bloom_t *)cbf;
    const rbi_map_t *m = rbi_reader_map(bf->seg);
    rbi_bloom_bind_t *b = atomic_load_explicit(&bf->bind, memory_order_acquire), *nb;
    int rc = RB_OK;

    if (b->map == m && b != stale) {
        *out = b;
        return RB_OK;
    }
    pthread_mutex_lock(&bf->lock);
    b = atomic_load_explicit(&bf->bind, memory_order_acquire);
    if (b->map != m || b == stale) {
        rc = bind_resolve(m, bf->name, bf->name_len, &nb);
        if (rc == RB_OK) {
            nb->older = b;
            /* Release: readers of the new binding see it complete. */
            atomic_store_explicit(&bf->bind, nb, memory_order_release);
            b = nb;
        }
    }
    pthread_mutex_unlock(&bf->lock);
    *out = b;
    return rc;
}

/* gen0 is re-checked by section_retry. */
int rbi_bloom_section_begin(const rbi_bloom_bind_t *b, rbi_bloom_section_t *s)
{
    const rb_filter_shm_t *f = b->slot;
    uint64_t size, n;

    s->b = b;
    /* G1 (latch.h): an array replaced before gen0 was published is seen
     * in place, with its offset. */
    s->gen0 = rbi_gen_read_begin(&f->gen);
    if (rbi_ld(&f->state) != RBI_FILTER_LIVE || rbi_ld(&f->incarnation) != b->incarnation)
        return RB_ENOENT;
    n = rbi_bloom_layer_count(f);
    if (n == 0)
        return RB_ECORRUPT;
    size = rbi_seg_size(b->map);
    for (uint64_t l = 0; l < n; l++) {
        if (!rbi_bloom_layer_sound(f, l, size))
            return RB_ECORRUPT;
        s->layer[l].arr = rbi_word_at(b->map, rbi_ld(&f->layer[l].array_off));
        s->layer[l].bits = rbi_ld(&f->layer[l].bits);
        s->layer[l].k = (uint32_t)rbi_ld(&f->layer[l].k);
    }
    s->nlayers = (uint32_t)n;
    return RB_OK;
}

static inline int section_retry(const rbi_bloom_section_t *s)
{
    /* G2 (latch.h): probes that read an array replaced after gen0 and
     * reused since are discarded. */
    return rbi_gen_read_retry(&s->b->slot->gen, s->gen0);
}

int rbi_bloom_read(const rb_bloom_t *bf, rbi_bloom_fn fn, void *arg)
{
    rbi_bloom_bind_t *b, *stale = NULL;
    int rc;

    for (int attempt = 0; attempt < 2; attempt++) {
        if ((rc = rbi_bloom_bind_get(bf, stale, &b)) != RB_OK)
            return rc;
        for (uint32_t t = 0; t < RBI_READ_RETRIES; t++) {
            rbi_bloom_section_t s;
            rc = rbi_bloom_section_begin(b, &s);
            if (rc == RB_OK)
                rc = fn(&s, arg);
            if (!section_retry(&s))
                break;
            rc = RB_EBUSY;
        }
        if (rc != RB_ENOENT)
            return rc;
        stale = b;
    }
    return rc;
}

typedef struct contains_arg {
    const rb_key_t *keys;
    size_t n;
    uint8_t *out;
    int64_t hits;
    /* n == 1, a section of one blocked layer: that layer, the generation
     * it was validated at and its binding (for the fast path's view). */
    rbi_bloom_layer_t layer0;
    uint64_t gen0;
    rbi_bloom_bind_t *b;
} contains_arg_t;

/* contains_fn for the common case, one blocked layer: the pipeline keeps
 * each key's block address and second hash instead of the whole hash. */
static int contains_blocked1(const rbi_bloom_section_t *s, contains_arg_t *a)
{
    const rbi_bloom_layer_t *lv = &s->layer[0];
    const _Atomic uint64_t *arr = lv->arr, *blk[PIPE];
    const rb_key_t *keys = a->keys;
    const rbi_bloom_bind_t *b = s->b;
    uint64_t h2[PIPE], nblocks = lv->bits / RBI_BLOCK_BITS;
    uint8_t *out = a->out;
    uint32_t k = lv->k;
    size_t n = a->n;
    int64_t hits = 0;   /* a local: out[] (bytes) may alias anything */

    for (size_t i = 0; i < n + PIPE; i++) {
        if (i >= PIPE) {
            int hit = rbi_bloom_test_block(blk[i % PIPE], h2[i % PIPE], k);
            out[i - PIPE] = (uint8_t)hit;
            hits += hit;
        }
        if (i < n) {
            rbi_h128_t x = rbi_bloom_key_hash(b, keys[i].ptr, keys[i].len);
            blk[i % PIPE] = &arr[rbi_fastrange64(x.h1, nblocks) * RBI_BLOCK_WORDS];
            h2[i % PIPE] = x.h2;
            rbi_prefetch_line((const void *)blk[i % PIPE]);
        }
    }
    a->hits = hits;
    return RB_OK;
}

/* Tests a->n keys.  Software-pipelined: key i is hashed and its lines
 * prefetched PIPE keys before it is tested, so memory latencies overlap
 * with hashing and testing the keys in between. */
static int contains_fn(const rbi_bloom_section_t *s, void *arg)
{
    contains_arg_t *a = arg;
    rbi_h128_t h[PIPE];
    size_t n = a->n;

    a->hits = 0;
    if (n == 1) {
        a->out[0] = (uint8_t)rbi_bloom_section_test(s, rbi_bloom_key_hash(s->b, a->keys[0].ptr, a->keys[0].len));
        a->hits = a->out[0];
        a->b = NULL;
        if (s->nlayers == 1 && s->b->layout == RB_BLOOM_BLOCKED) {
            a->b = (rbi_bloom_bind_t *)s->b;
            a->layer0 = s->layer[0];
            a->gen0 = s->gen0;
        }
        return RB_OK;
    }
    if (s->nlayers == 1 && s->b->layout == RB_BLOOM_BLOCKED)
        return contains_blocked1(s, a);
    for (size_t i = 0; i < n + PIPE; i++) {
        /* Test key i - PIPE first: its slot is the one key i reuses. */
        if (i >= PIPE) {
            size_t j = i - PIPE;
            a->out[j] = (uint8_t)rbi_bloom_section_test(s, h[j % PIPE]);
            a->hits += a->out[j];
        }
        if (i < n) {
            rbi_h128_t x = rbi_bloom_key_hash(s->b, a->keys[i].ptr, a->keys[i].len);
            h[i % PIPE] = x;
            for (uint32_t l = 0; l < s->nlayers; l++)
                rbi_bloom_prefetch_layer(s->b->layout, &s->layer[l],
                                         rbi_bloom_layer_hash(s->b->layout, x, l), 0);
        }
    }
    return RB_OK;
}

/* ---- the single-query fast path ------------------------------------------
 *
 * A filter of one blocked layer (the common case) is answered without a
 * read section's per-query validation: the binding keeps a view of layer
 * 0 (array address, blocks, k) as a section validated it at generation
 * view.gen (bounds, k, layout: rbi_bloom_section_begin).  Layer 0's
 * descriptor changes only when its array is replaced, which bumps gen
 * (bloom_write.c, swap_fresh), so while gen == view.gen the view is what
 * a section would read (G1).  A query still loads gen (acquire), checks
 * the slot's state, incarnation and nlayers == 1 (a scaling filter that
 * grew takes the slow path; growth does not bump gen), probes the block
 * and re-checks gen (G2): a query that overlaps a reset or a rotation
 * retries through the slow path, exactly as a section would.  The view is
 * process-local memory written by whichever thread ran a slow query at a
 * new gen, under a seqlock of its own (rcache.h's rbi_rview_t, odd while
 * written, under the handle's lock taken with trylock: readers never
 * wait). */

/* The view of b if it was validated at generation g (its words read
 * under its sequence, checked before use: rcache.h, V2). */
static inline int view_get(const rbi_bloom_bind_t *b, uint64_t g, rbi_bloom_layer_t *lv)
{
    uint64_t s0 = atomic_load_explicit(&b->view.seq, memory_order_acquire);
    uint64_t vg = rbi_ld(&b->view.gen), arr = rbi_ld(&b->view_off);
    uint64_t blocks = rbi_ld(&b->view_blocks), k = rbi_ld(&b->view_k);

    /* rbi_rview_begin's test after the loads, one test of all (the words
     * are only used once it passes). */
    if ((s0 & 1) || !rbi_rview_held(&b->view, s0) || vg != g || blocks == 0)
        return 0;
    lv->arr = (const _Atomic uint64_t *)(uintptr_t)arr;
    lv->bits = blocks;   /* here: blocks, not bits */
    lv->k = (uint32_t)k;
    return 1;
}

/* Records layer lv, validated by a section at generation g, as b's view. */
static void view_put(rb_bloom_t *bf, rbi_bloom_bind_t *b, const rbi_bloom_layer_t *lv, uint64_t g)
{
    if (rbi_ld(&b->view.gen) == g && rbi_ld(&b->view_blocks) != 0)
        return;
    if (pthread_mutex_trylock(&bf->lock) != 0)
        return;   /* another thread rebinds or records: it can wait a query */
    rbi_rview_write_begin(&b->view, g);
    rbi_st(&b->view_off, (uint64_t)(uintptr_t)lv->arr);
    rbi_st(&b->view_blocks, lv->bits / RBI_BLOCK_BITS);
    rbi_st(&b->view_k, lv->k);
    rbi_rview_write_end(&b->view);
    pthread_mutex_unlock(&bf->lock);
}

/* The fast path: 0/1, or -1 to take the slow path. */
static inline int contains_fast(const rb_bloom_t *bf, const void *key, size_t len)
{
    const rbi_bloom_bind_t *b = atomic_load_explicit(&bf->bind, memory_order_acquire);
    const rb_filter_shm_t *f = b->slot;
    rbi_bloom_layer_t v;
    rbi_h128_t h;
    uint64_t g;
    int r;

    if (b->map != rbi_reader_map(bf->seg))
        return -1;
    g = rbi_gen_read_begin(&f->gen);   /* G1 */
    if (!view_get(b, g, &v) || rbi_ld(&f->state) != RBI_FILTER_LIVE ||
        rbi_ld(&f->incarnation) != b->incarnation || rbi_bloom_layer_count(f) != 1)
        return -1;
    h = rbi_bloom_key_hash(b, key, len);
    r = rbi_bloom_test_block(&v.arr[rbi_fastrange64(h.h1, v.bits) * RBI_BLOCK_WORDS], h.h2, v.k);
    return rbi_gen_read_retry(&f->gen, g) ? -1 : r;   /* G2 */
}

int rb_bloom_contains(const rb_bloom_t *bf, const void *key, size_t len)
{
    rb_key_t k = { key, len };
    uint8_t out;
    contains_arg_t a = { &k, 1, &out, 0, { NULL, 0, 0 }, 0, NULL };
    int rc;

    if (bf == NULL || (key == NULL && len != 0))
        return RB_EINVAL;
    if ((rc = contains_fast(bf, key, len)) >= 0)
        return rc;
    rc = rbi_bloom_read(bf, contains_fn, &a);
    if (rc == RB_OK && a.b != NULL)
        view_put((rb_bloom_t *)bf, a.b, &a.layer0, a.gen0);
    return rc == RB_OK ? out : rc;
}

int64_t rb_bloom_contains_many(const rb_bloom_t *bf, const rb_key_t *keys, size_t n,
                               uint8_t *out)
{
    int64_t hits = 0;

    if (bf == NULL || (keys == NULL && n != 0) || (out == NULL && n != 0))
        return RB_EINVAL;
    /* One section per chunk, so a gen bump re-does at most one chunk. */
    for (size_t base = 0; base < n; base += CHUNK) {
        contains_arg_t a = { keys + base, n - base < CHUNK ? n - base : CHUNK, out + base, 0,
                              { NULL, 0, 0 }, 0, NULL };
        int rc = rbi_bloom_read(bf, contains_fn, &a);
        if (rc != RB_OK)
            return rc;
        hits += a.hits;
    }
    return hits;
}

typedef struct stat_arg {
    int scan;        /* count the set bits (O(m)) or predict (O(layers)) */
    uint64_t ones, bits;
    double miss;     /* prod over layers of (1 - layer estimate) */
    double predicted_fill_bits;
} stat_arg_t;

static int stat_fn(const rbi_bloom_section_t *s, void *arg)
{
    stat_arg_t *a = arg;
    const rb_filter_shm_t *f = s->b->slot;

    a->ones = a->bits = 0;
    a->miss = 1.0;
    a->predicted_fill_bits = 0.0;
    for (uint32_t l = 0; l < s->nlayers; l++) {
        const rbi_bloom_layer_t *lv = &s->layer[l];
        uint64_t nblocks = lv->bits / RBI_BLOCK_BITS, lones = 0;
        double est = 0.0;
        if (!a->scan) {
            /* Expected fill of a layer holding n keys: 1 - e^(-kn/m). */
            double n = (double)rbi_ld(&f->layer[l].items);
            double fill = 1.0 - exp(-(double)lv->k * n / (double)lv->bits);
            a->predicted_fill_bits += fill * (double)lv->bits;
            est = pow(fill, lv->k);
        } else if (s->b->layout != RB_BLOOM_BLOCKED) {
            /* By words: a redisbloom layer's m is a multiple of 64 only. */
            for (uint64_t w = 0; w < lv->bits / 64; w++)
                lones += (uint64_t)__builtin_popcountll(rbi_ld(&lv->arr[w]));
            est = pow((double)lones / (double)lv->bits, lv->k);
        } else {
            for (uint64_t blk = 0; blk < nblocks; blk++) {
                uint64_t pc = 0;
                for (uint32_t w = 0; w < RBI_BLOCK_WORDS; w++)
                    pc += (uint64_t)__builtin_popcountll(rbi_ld(&lv->arr[blk * RBI_BLOCK_WORDS + w]));
                lones += pc;
                est += pow((double)pc / RBI_BLOCK_BITS, lv->k);
            }
            est /= (double)nblocks;
        }
        a->ones += lones;
        a->bits += lv->bits;
        a->miss *= 1.0 - est;
    }
    return RB_OK;
}

static int stat_common(const rb_bloom_t *bf, rb_bloom_stat_t *out, int scan)
{
    const rb_filter_shm_t *f;
    rbi_bloom_bind_t *b;
    stat_arg_t a = { scan, 0, 0, 1.0, 0.0 };
    int rc;

    if (bf == NULL || out == NULL)
        return RB_EINVAL;
    rc = rbi_bloom_read(bf, stat_fn, &a);
    if (rc != RB_OK)
        return rc;
    if ((rc = rbi_bloom_bind_get(bf, NULL, &b)) != RB_OK)
        return rc;
    f = b->slot;
    memset(out, 0, sizeof(*out));
    memcpy(out->name, bf->name, bf->name_len);
    out->layout = b->layout;
    out->flags = (uint32_t)rbi_ld(&f->flags);
    out->expansion = (uint32_t)rbi_ld(&f->expansion);
    out->layers = (uint32_t)rbi_bloom_layer_count(f);
    out->current = (uint32_t)rbi_ld(&f->current);
    out->window = (uint32_t)rbi_ld(&f->window);
    out->rotations = rbi_ld(&f->rotations);
    out->k = (uint32_t)rbi_ld(&f->layer[0].k);
    for (uint32_t l = 0; l < out->layers; l++)
        out->capacity += rbi_ld(&f->layer[l].capacity);
    out->bits = a.bits;
    out->bytes = a.bits / 8;
    out->error_rate = rbi_load_double(&f->error_bits);
    out->items = rbi_ld(&f->items);
    out->bits_set = a.ones;
    out->fill = a.bits == 0 ? 0.0
                : scan ? (double)a.ones / (double)a.bits : a.predicted_fill_bits / (double)a.bits;
    out->est_fpr = 1.0 - a.miss;
    out->memory = a.bits / 8 + sizeof(rb_filter_shm_t);
    return RB_OK;
}

int rb_bloom_stat(const rb_bloom_t *bf, rb_bloom_stat_t *out)
{
    return stat_common(bf, out, 1);
}

int rb_bloom_info(const rb_bloom_t *bf, rb_bloom_stat_t *out)
{
    return stat_common(bf, out, 0);
}
