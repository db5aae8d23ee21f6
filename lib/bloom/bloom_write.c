/*
 * bloom_write.c - Bloom filters, the writer side: reserve, add (one key,
 * many keys), aging rotation, reset and delete.
 *
 * What: the single writer sets bits with a relaxed load, OR and store
 * (rbi_bloom_set, bloom.h: monotonic, so readers need no section for it;
 * no RMW, as no other thread stores bit words), appends a layer when a scaling filter's
 * newest is full (published by nlayers, release), and replaces arrays
 * (rotation, reset) by swapping in fresh zeroed ones under a generation
 * publish (latch.h), freeing the old ones only after it.  Every change
 * leaves the slot as a reader would accept it, in every state a writer
 * can stop in.  A delete frees the slot and its arrays after a generation
 * publish, and reserve keeps a slot's generation, so a reader never takes
 * a later filter's bits or words for its own (R1, rb_bloom_delete).
 * Workload: adds at the daemon's pace, batched (add_many:
 * one section per batch, software-pipelined: hashes and prefetches PIPE
 * keys ahead of the key it adds).
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <time.h>

#include "bloom.h"
#include "kind.h"
#include "snap.h"

#define TIGHTENING   0.5   /* each new layer: half the previous error rate */

/* Writer: sizes, allocates and zeroes layer l of f, then publishes it by
 * storing nlayers = l + 1 (release).  Nothing changes on error. */
static int layer_create(rb_segment_t *seg, rb_filter_shm_t *f, uint64_t l,
                        uint64_t capacity, double error, rb_bloom_layout_t layout)
{
    rbi_map_t *m = rbi_seg_map(seg);
    rb_bloom_sizing_t sz;
    _Atomic uint64_t *arr;
    uint64_t off;
    int rc;

    rc = rb_bloom_size(capacity, error, layout, &sz);
    if (rc != RB_OK)
        return rc;
    rc = rbi_heap_alloc(seg, sz.bytes, &off);
    if (rc != RB_OK)
        return rc;
    /* The extent may be reused space: clear it before anyone can see it. */
    arr = rbi_word_at(m, off);
    rbi_snap_touch(seg, arr, sz.bits / 8);   /* S1 (snap.h) */
    for (uint64_t i = 0; i < sz.bits / 64; i++)
        rbi_st(&arr[i], 0);
    rbi_st(&f->layer[l].array_off, off);
    rbi_st(&f->layer[l].bits, sz.bits);
    rbi_st(&f->layer[l].k, sz.k);
    rbi_st(&f->layer[l].capacity, capacity);
    rbi_st(&f->layer[l].items, 0);
    rbi_store_double(&f->layer[l].error_bits, error);
    /* Release: pairs with rbi_bloom_layer_count's acquire; the layer is
     * complete before a reader counts it. */
    atomic_store_explicit(&f->nlayers, l + 1, memory_order_release);
    return RB_OK;
}

/* The generations of an aging filter (2 if not given), or 0 if params
 * are not a filter rb_bloom_reserve makes. */
static uint32_t params_generations(const rb_bloom_params_t *p)
{
    uint32_t gens = p->generations ? p->generations : 2;

    if ((p->flags & ~(RB_BLOOM_NONSCALING | RB_BLOOM_OVERFILL | RB_BLOOM_AGING)) != 0 ||
        ((p->flags & RB_BLOOM_OVERFILL) && !(p->flags & RB_BLOOM_NONSCALING)) ||
        ((p->flags & RB_BLOOM_AGING) && p->flags != RB_BLOOM_AGING) ||
        gens > RB_BLOOM_MAX_LAYERS || p->expansion > RB_BLOOM_MAX_EXPANSION ||
        (p->layout == RB_BLOOM_REDISBLOOM && (p->flags & ~RB_BLOOM_NONSCALING) != 0))
        return 0;
    return gens;
}

/* The first layer of a new filter (every generation of an aging one).  A
 * scaling filter's layers have error rates p/2, p/4, ... so that together
 * they stay within p (RedisBloom does the same); an aging filter's
 * generations p/g each, for the same reason.  Nothing stays allocated on
 * error. */
static int first_layers(rb_segment_t *seg, rb_filter_shm_t *f, const rb_bloom_params_t *p,
                        uint32_t gens)
{
    int aging = (p->flags & RB_BLOOM_AGING) != 0;
    double e = aging ? p->error_rate / gens
               : p->error_rate * ((p->flags & RB_BLOOM_NONSCALING) ? 1.0 : TIGHTENING);

    for (uint32_t l = 0; l < (aging ? gens : 1u); l++) {
        int rc = layer_create(seg, f, l, p->capacity, e, p->layout);
        if (rc != RB_OK) {
            for (uint32_t d = 0; d < l; d++)
                rbi_heap_free(seg, rbi_ld(&f->layer[d].array_off), rbi_ld(&f->layer[d].bits) / 8);
            rbi_st(&f->nlayers, 0);
            return rc;
        }
    }
    return RB_OK;
}

/* Fills slot f (its layers made) from p; the caller makes it live. */
static void slot_fill(rb_header_shm_t *h, rb_filter_shm_t *f, const rb_bloom_params_t *p,
                      const char *name, size_t len)
{
    unsigned char secret[RBI_SECRET_BYTES];
    uint64_t inc = rbi_ld(&h->next_incarnation);

    rbi_st(&h->next_incarnation, inc + 1);
    if (p->secret != NULL)
        memcpy(secret, p->secret, sizeof(secret));
    else
        arc4random_buf(secret, sizeof(secret));
    rbi_st(&f->incarnation, inc);
    /* gen is kept, never reset: a slot freed by rb_bloom_delete may still
     * be read by a reader whose section began before the delete, and that
     * reader must see a generation other than the one it began at (R1,
     * rb_bloom_delete).  A slot never used holds 0, as created. */
    rbi_st(&f->layout, (uint64_t)p->layout);
    rbi_st(&f->flags, p->flags);
    rbi_st(&f->expansion, p->expansion ? p->expansion : RB_BLOOM_DEFAULT_EXPANSION);
    rbi_st(&f->items, 0);
    rbi_st(&f->name_len, len);
    rbi_st(&f->created, (uint64_t)time(NULL));
    rbi_st(&f->capacity, p->capacity);
    rbi_store_double(&f->error_bits, p->error_rate);
    rbi_st(&f->current, 0);
    rbi_st(&f->window, (p->flags & RB_BLOOM_AGING) ? p->window : 0);
    rbi_st(&f->rotations, 0);
    rbi_st(&f->rotated_at, (uint64_t)time(NULL));
    rbi_copy_in(f->name, name, len);
    rbi_copy_in(f->secret, secret, sizeof(secret));
}

int rb_bloom_reserve(rb_segment_t *seg, const char *name, size_t len,
                     const rb_bloom_params_t *params)
{
    rb_bloom_sizing_t sz;
    rb_filter_shm_t *f = NULL;
    rbi_map_t *m;
    uint32_t gens;
    int rc;

    if (seg == NULL || params == NULL || !rbi_name_ok(name, len) ||
        (gens = params_generations(params)) < 2)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    rc = rb_bloom_size(params->capacity, (params->flags & RB_BLOOM_AGING)
                                             ? params->error_rate / gens : params->error_rate,
                       params->layout, &sz);
    if (rc != RB_OK)
        return rc;
    m = rbi_seg_map(seg);
    if ((rc = rbi_dir_claim(seg, name, len, &f)) != RB_OK)
        return rc;
    if ((rc = first_layers(seg, f, params, gens)) != RB_OK)
        return rc;
    slot_fill(rbi_hdr(m), f, params, name, len);
    rbi_dir_publish(seg, f);
    return RB_OK;
}

/* Layers as an image gives them (zeroed arrays); nothing stays allocated
 * on error. */
static int image_layers(rb_segment_t *seg, rb_filter_shm_t *f, const rbi_bloom_image_t *im)
{
    rbi_map_t *m = rbi_seg_map(seg);
    int rc = RB_OK;
    uint32_t l;

    for (l = 0; l < im->nlayers && rc == RB_OK; l++) {
        const rbi_bloom_image_layer_t *il = &im->layer[l];
        _Atomic uint64_t *arr;
        uint64_t off;
        if (!rbi_bloom_layer_shape_ok(im->layout, il->bits, il->k) || il->capacity == 0 ||
            !(il->error > 0.0 && il->error < 1.0)) {
            rc = RB_EINVAL;
            break;
        }
        if ((rc = rbi_heap_alloc(seg, il->bits / 8, &off)) != RB_OK)
            break;
        arr = rbi_word_at(m, off);
        rbi_snap_touch(seg, arr, il->bits / 8);   /* S1 (snap.h) */
        for (uint64_t i = 0; i < il->bits / 64; i++)
            rbi_st(&arr[i], 0);
        rbi_st(&f->layer[l].array_off, off);
        rbi_st(&f->layer[l].bits, il->bits);
        rbi_st(&f->layer[l].k, il->k);
        rbi_st(&f->layer[l].capacity, il->capacity);
        rbi_st(&f->layer[l].items, il->items);
        rbi_store_double(&f->layer[l].error_bits, il->error);
    }
    if (rc != RB_OK)
        while (l-- > 0)
            rbi_heap_free(seg, rbi_ld(&f->layer[l].array_off), rbi_ld(&f->layer[l].bits) / 8);
    return rc;
}

int rbi_bloom_reserve_image(rb_segment_t *seg, const char *name, size_t len,
                            const rbi_bloom_image_t *im)
{
    rb_bloom_params_t p;
    rb_filter_shm_t *f = NULL;
    rbi_map_t *m;
    int rc;

    memset(&p, 0, sizeof(p));
    p.capacity = im->capacity;
    p.error_rate = im->error_rate;
    p.layout = im->layout;
    p.flags = im->flags;
    p.expansion = im->expansion;
    p.secret = im->secret;
    p.generations = (im->flags & RB_BLOOM_AGING) ? im->nlayers : 2;
    p.window = (uint32_t)im->window;
    if (seg == NULL || !rbi_name_ok(name, len) || params_generations(&p) < 2 ||
        im->nlayers == 0 || im->nlayers > RB_BLOOM_MAX_LAYERS || im->expansion == 0 ||
        im->capacity == 0 || !(im->error_rate > 0.0 && im->error_rate < 1.0) ||
        ((im->flags & RB_BLOOM_AGING) ? im->nlayers < 2 || im->current >= im->nlayers
                                      : im->current != 0) ||
        im->window > UINT32_MAX)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    m = rbi_seg_map(seg);
    if ((rc = rbi_dir_claim(seg, name, len, &f)) != RB_OK)
        return rc;
    if ((rc = image_layers(seg, f, im)) != RB_OK)
        return rc;
    slot_fill(rbi_hdr(m), f, &p, name, len);
    rbi_st(&f->items, im->items);
    rbi_st(&f->current, im->current);
    rbi_st(&f->rotations, im->rotations);
    rbi_st(&f->rotated_at, im->rotated_at);
    rbi_st(&f->created, im->created);
    /* Release: pairs with rbi_bloom_layer_count's acquire. */
    atomic_store_explicit(&f->nlayers, im->nlayers, memory_order_release);
    rbi_dir_publish(seg, f);
    return RB_OK;
}

/* Swaps fresh zeroed arrays into the `count` layers listed in which[],
 * then publishes the slot's generation (latch.h): a reader that probed an
 * old array sees the new gen and retries, so nobody acts on a half-cleared
 * layer.  The old arrays are freed only after the publish.  `after` runs
 * between the swap and the publish, to change other fields under the same
 * gen.  Nothing changes on ENOSPC. */
static int swap_fresh(rb_segment_t *seg, rb_filter_shm_t *f, const uint64_t *which, size_t count,
                      void (*after)(rb_filter_shm_t *, void *), void *arg)
{
    rbi_map_t *m = rbi_seg_map(seg);
    uint64_t fresh[RB_BLOOM_MAX_LAYERS], old[RB_BLOOM_MAX_LAYERS], bytes[RB_BLOOM_MAX_LAYERS];
    int rc;

    for (size_t i = 0; i < count; i++) {
        _Atomic uint64_t *arr;
        bytes[i] = rbi_ld(&f->layer[which[i]].bits) / 8;
        if ((rc = rbi_heap_alloc(seg, bytes[i], &fresh[i])) != RB_OK) {
            while (i-- > 0)
                rbi_heap_free(seg, fresh[i], bytes[i]);
            return rc;
        }
        arr = rbi_word_at(m, fresh[i]);
        rbi_snap_touch(seg, arr, bytes[i]);   /* S1 (snap.h) */
        for (uint64_t w = 0; w < bytes[i] / 8; w++)
            rbi_st(&arr[w], 0);
    }
    for (size_t i = 0; i < count; i++) {
        old[i] = rbi_ld(&f->layer[which[i]].array_off);
        rbi_st(&f->layer[which[i]].array_off, fresh[i]);
        rbi_st(&f->layer[which[i]].items, 0);
    }
    if (after != NULL)
        after(f, arg);
    /* G1: the new arrays and fields are seen with the new gen; G2: what
     * a later allocation stores in the freed arrays' space is seen only
     * with it (latch.h; the readers' side is rbi_bloom_section_begin and
     * section_retry, bloom_read.c). */
    rbi_gen_publish(&f->gen);
    for (size_t i = 0; i < count; i++)
        rbi_heap_free(seg, old[i], bytes[i]);
    return RB_OK;
}

static void rotated(rb_filter_shm_t *f, void *arg)
{
    rbi_st(&f->current, *(const uint64_t *)arg);
    rbi_st(&f->rotations, rbi_ld(&f->rotations) + 1);
    rbi_st(&f->rotated_at, (uint64_t)time(NULL));
}

/* Aging: clear the oldest generation (the one after current) and make it
 * current. */
static int rotate(rb_segment_t *seg, rb_filter_shm_t *f)
{
    uint64_t n = rbi_bloom_layer_count(f), next;

    if (n < 2)
        return RB_ECORRUPT;
    next = (rbi_ld(&f->current) + 1) % n;
    return swap_fresh(seg, f, &next, 1, rotated, &next);
}

static void was_reset(rb_filter_shm_t *f, void *arg)
{
    uint64_t keep = *(const uint64_t *)arg;

    rbi_st(&f->items, 0);
    rbi_st(&f->current, 0);
    rbi_st(&f->rotated_at, (uint64_t)time(NULL));
    /* Release: layers beyond keep were dropped (scaling); readers that
     * acquire the smaller count (rbi_bloom_layer_count) never look at
     * them.  The generation published next covers this store too (G1). */
    atomic_store_explicit(&f->nlayers, keep, memory_order_release);
}

/* The writer's binding for bf, on a slot whose layers are sound.  The
 * writer owns the slot, so nothing changes under it, but a slot it took
 * over may hold anything: the layers are validated as a reader's section
 * does, because rotate / reset free the arrays they replace, and freeing
 * an extent that is not live (a layer beyond nlayers, found by
 * fuzz_attach) would hand out space that another filter or the ring
 * still uses. */
static int writer_bind(rb_bloom_t *bf, rbi_bloom_bind_t **b)
{
    rbi_bloom_section_t s;
    int rc;

    if (bf == NULL)
        return RB_EINVAL;
    if (!bf->seg->writable)
        return RB_EROFS;
    if ((rc = rbi_bloom_bind_get(bf, NULL, b)) != RB_OK)
        return rc;
    return rbi_bloom_section_begin(*b, &s);   /* RB_ENOENT, RB_ECORRUPT */
}

int rb_bloom_rotate(rb_bloom_t *bf)
{
    rbi_bloom_bind_t *b;
    int rc = writer_bind(bf, &b);

    if (rc != RB_OK)
        return rc;
    if (!(rbi_ld(&b->slot->flags) & RB_BLOOM_AGING))
        return RB_EINVAL;
    return rotate((rb_segment_t *)bf->seg, b->slot);
}

int rb_bloom_rotate_due(rb_bloom_t *bf, uint64_t now)
{
    rbi_bloom_bind_t *b;
    uint64_t window;
    int rc = writer_bind(bf, &b);

    if (rc != RB_OK)
        return rc;
    window = rbi_ld(&b->slot->window);
    if (!(rbi_ld(&b->slot->flags) & RB_BLOOM_AGING) || window == 0 ||
        now < rbi_ld(&b->slot->rotated_at) + window)
        return 0;
    rc = rotate((rb_segment_t *)bf->seg, b->slot);
    return rc == RB_OK ? 1 : rc;
}

int rb_bloom_reset(rb_bloom_t *bf)
{
    uint64_t which[RB_BLOOM_MAX_LAYERS] = { 0 }, n, keep;
    rbi_bloom_bind_t *b;
    rb_filter_shm_t *f;
    int rc = writer_bind(bf, &b);

    if (rc != RB_OK)
        return rc;
    f = b->slot;
    n = rbi_bloom_layer_count(f);
    /* Aging keeps its generations; scaling goes back to its first layer. */
    keep = (rbi_ld(&f->flags) & RB_BLOOM_AGING) ? n : 1;
    for (uint64_t l = 0; l < keep; l++)
        which[l] = l;
    rc = swap_fresh((rb_segment_t *)bf->seg, f, which, (size_t)keep, was_reset, &keep);
    if (rc != RB_OK)
        return rc;
    for (uint64_t l = keep; l < n; l++)   /* dropped layers (after the gen bump) */
        rbi_heap_free((rb_segment_t *)bf->seg, rbi_ld(&f->layer[l].array_off),
                     rbi_ld(&f->layer[l].bits) / 8);
    return RB_OK;
}

typedef struct add_arg {
    rb_segment_t *seg;
    const rb_key_t *keys;
    size_t n;
    uint8_t *out;
    int64_t added;
    size_t done;
} add_arg_t;

#define PIPE  32u   /* add_many: keys hashed and prefetched ahead */

/* Sets h's k bits in layer lv (rbi_bloom_set: the single writer's load, OR
 * and store), each word touched first for a snapshot in progress (S1,
 * snap.h). */
static void set_layer(rb_segment_t *seg, uint32_t layout, const rbi_bloom_layer_t *lv,
                      rbi_h128_t h)
{
    uint64_t base = h.h2, x = h.h2 >> 1, word, mask;

    if (layout == RB_BLOOM_BLOCKED) {
        _Atomic uint64_t *blk = (_Atomic uint64_t *)&lv->arr[
            rbi_fastrange64(h.h1, lv->bits / RBI_BLOCK_BITS) * RBI_BLOCK_WORDS];
        rbi_snap_touch(seg, blk, RBI_BLOCK_WORDS * 8);
        rbi_bloom_set_block(blk, h.h2, lv->k);
        return;
    }
    for (uint32_t i = 0; i < lv->k; i++) {
        rbi_bloom_probe(layout, lv->bits, h, i, &base, &x, &word, &mask);
        rbi_snap_touch(seg, &lv->arr[word], 8);
        rbi_bloom_set((_Atomic uint64_t *)&lv->arr[word], mask);
    }
}

/* Aging add of h (fresh: no generation holds it): written into the
 * current generation unless it is there already, rotating first if that
 * one is full. */
static int add_aging(rbi_bloom_section_t *s, add_arg_t *a, rbi_h128_t h, int fresh)
{
    rb_filter_shm_t *f = s->b->slot;
    uint64_t cur = rbi_ld(&f->current) % s->nlayers;

    /* A key seen only in an older generation (added there, or a false
     * positive of it) is written into the current one too, else it would
     * vanish when that generation is cleared while the caller was told
     * "seen": the window runs from the last add.  It is still not new. */
    if (!rbi_bloom_test_layer(s->b->layout, &s->layer[cur],
                              rbi_bloom_layer_hash(s->b->layout, h, cur))) {
        if (rbi_ld(&f->layer[cur].items) >= rbi_ld(&f->layer[cur].capacity)) {
            int rc = rotate(a->seg, f);
            if (rc == RB_OK)
                rc = rbi_bloom_section_begin(s->b, s);   /* the swapped array */
            if (rc != RB_OK)
                return rc;
            cur = rbi_ld(&f->current) % s->nlayers;
        }
        set_layer(a->seg, s->b->layout, &s->layer[cur],
                  rbi_bloom_layer_hash(s->b->layout, h, cur));
        rbi_st(&f->layer[cur].items, rbi_ld(&f->layer[cur].items) + 1);
    }
    if (fresh) {
        rbi_st(&f->items, rbi_ld(&f->items) + 1);
        a->added++;
    }
    return RB_OK;
}

/* Add of a new key h to a plain or scaling filter: into the newest layer,
 * after appending one if that is full (scaling). */
static int add_new(rbi_bloom_section_t *s, add_arg_t *a, rbi_h128_t h)
{
    rb_filter_shm_t *f = s->b->slot;
    uint64_t last = s->nlayers - 1;

    if (rbi_ld(&f->layer[last].items) >= rbi_ld(&f->layer[last].capacity) &&
        !(rbi_ld(&f->flags) & RB_BLOOM_OVERFILL)) {
        uint64_t cap = rbi_ld(&f->layer[last].capacity);
        uint64_t exp = rbi_ld(&f->expansion);
        int rc;
        if (rbi_ld(&f->flags) & RB_BLOOM_NONSCALING)
            return RB_EFULL;
        if (last + 1 >= RB_BLOOM_MAX_LAYERS)
            return RB_ELAYERS;
        if (cap > UINT64_MAX / (exp ? exp : 1))
            return RB_ERANGE;   /* past 2^64 keys: far over RB_BLOOM_MAX_BITS */
        rc = layer_create(a->seg, f, last + 1, cap * exp,
                          rbi_load_double(&f->layer[last].error_bits) * TIGHTENING,
                          (rb_bloom_layout_t)s->b->layout);
        if (rc != RB_OK)
            return rc;   /* RB_ERANGE, RB_EPRECISION, RB_ENOSPC */
        if ((rc = rbi_bloom_section_begin(s->b, s)) != RB_OK)
            return rc;
        last++;
    }
    set_layer(a->seg, s->b->layout, &s->layer[last], rbi_bloom_layer_hash(s->b->layout, h, last));
    rbi_st(&f->layer[last].items, rbi_ld(&f->layer[last].items) + 1);
    rbi_st(&f->items, rbi_ld(&f->items) + 1);
    a->added++;
    return RB_OK;
}

/* Prefetches the lines an add of h will touch: every layer's (tested),
 * with intent to write the one it would go to (newest, or current). */
static void add_prefetch(const rbi_bloom_section_t *s, uint64_t target, rbi_h128_t h)
{
    for (uint32_t l = 0; l < s->nlayers; l++)
        rbi_bloom_prefetch_layer(s->b->layout, &s->layer[l],
                                 rbi_bloom_layer_hash(s->b->layout, h, l), l == target);
}

/* add_fn for the common case (issue 29's add floor): one blocked layer,
 * not aging, with room for every key left (or OVERFILL), so no key of the
 * batch can append a layer and each is the test-and-set of add_new on
 * layer 0.  The pipeline keeps each key's block and second hash instead of
 * the whole hash, and the counters in registers (stored after each add,
 * as add_new does): the per-key work of the plain loop plus the test. */
static int add_blocked1(rbi_bloom_section_t *s, add_arg_t *a)
{
    const rbi_bloom_layer_t *lv = &s->layer[0];
    _Atomic uint64_t *arr = (_Atomic uint64_t *)lv->arr, *blk[PIPE];
    rb_filter_shm_t *f = s->b->slot;
    const rbi_bloom_bind_t *b = s->b;
    rb_segment_t *seg = a->seg;
    uint64_t h2[PIPE], nblocks = lv->bits / RBI_BLOCK_BITS;
    uint64_t litems = rbi_ld(&f->layer[0].items), items = rbi_ld(&f->items);
    uint32_t k = lv->k;
    size_t start = a->done, n = a->n, done = a->done;
    int64_t added = a->added;

    for (size_t i = start; i < n + PIPE; i++) {
        if (i >= start + PIPE) {
            _Atomic uint64_t *bk = blk[(i - PIPE) % PIPE];
            uint64_t x = h2[(i - PIPE) % PIPE];
            int fresh = !rbi_bloom_test_block(bk, x, k);
            if (fresh) {
                rbi_snap_touch(seg, bk, RBI_BLOCK_WORDS * 8);
                rbi_bloom_set_block(bk, x, k);
                rbi_st(&f->layer[0].items, ++litems);
                rbi_st(&f->items, ++items);
                added++;
            }
            if (a->out != NULL)
                a->out[done] = (uint8_t)fresh;
            done++;
        }
        if (i < n) {
            rbi_h128_t x = rbi_bloom_key_hash(b, a->keys[i].ptr, a->keys[i].len);
            blk[i % PIPE] = &arr[rbi_fastrange64(x.h1, nblocks) * RBI_BLOCK_WORDS];
            h2[i % PIPE] = x.h2;
            rbi_prefetch_line_w((const void *)blk[i % PIPE]);
        }
    }
    a->done = done;
    a->added = added;
    return RB_OK;
}

/* Writer's "section": the writer is the only one changing the slot, so
 * its view never goes stale; new layers and rotations re-open it.
 * Software-pipelined like contains_many: key i is hashed and its lines
 * prefetched PIPE keys before it is added, so the misses of PIPE keys
 * overlap.  The adds themselves run one key at a time, in order, through
 * the same test-and-add as ever, so the results are those of a loop of
 * rb_bloom_add: a key repeated in the batch finds its own bits, a layer
 * appended or a generation rotated mid-batch serves the keys after it
 * (their prefetches, issued for the old layers, were only hints). */
static int add_fn(const rbi_bloom_section_t *cs, void *arg)
{
    rbi_bloom_section_t *s = (rbi_bloom_section_t *)cs;
    add_arg_t *a = arg;
    rb_filter_shm_t *f = s->b->slot;
    int aging = (rbi_ld(&f->flags) & RB_BLOOM_AGING) != 0;
    size_t start = a->done, n = a->n;
    rbi_h128_t hs[PIPE];

    if (!aging && s->nlayers == 1 && s->b->layout == RB_BLOOM_BLOCKED &&
        ((rbi_ld(&f->flags) & RB_BLOOM_OVERFILL) ||
         (rbi_ld(&f->layer[0].items) <= rbi_ld(&f->layer[0].capacity) &&
          n - start <= rbi_ld(&f->layer[0].capacity) - rbi_ld(&f->layer[0].items))))
        return add_blocked1(s, a);
    /* A retried section (a rotation's gen bump) resumes at a->done. */
    for (size_t i = start; i < n + PIPE; i++) {
        if (i >= start + PIPE) {
            rbi_h128_t h = hs[(i - PIPE) % PIPE];
            int fresh = !rbi_bloom_section_test(s, h), rc = RB_OK;
            if (aging)
                rc = add_aging(s, a, h, fresh);
            else if (fresh)
                rc = add_new(s, a, h);
            if (rc != RB_OK)
                return rc;
            if (a->out != NULL)
                a->out[a->done] = (uint8_t)fresh;
            a->done++;
        }
        if (i < n) {
            const rb_key_t *k = &a->keys[i];
            hs[i % PIPE] = rbi_bloom_key_hash(s->b, k->ptr, k->len);
            add_prefetch(s, aging ? rbi_ld(&f->current) % s->nlayers : s->nlayers - 1,
                         hs[i % PIPE]);
        }
    }
    return RB_OK;
}

/* Marks the keys an error left unprocessed. */
static void mark_unprocessed(const add_arg_t *a)
{
    if (a->out != NULL)
        for (size_t i = a->done; i < a->n; i++)
            a->out[i] = RB_BLOOM_NOT_ADDED;
}

int64_t rb_bloom_add_many(rb_bloom_t *bf, const rb_key_t *keys, size_t n, uint8_t *out_new)
{
    add_arg_t a = { NULL, keys, n, out_new, 0, 0 };
    int rc;

    if (bf == NULL || (keys == NULL && n != 0))
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].ptr == NULL && keys[i].len != 0)
            return RB_EINVAL;
    if (!bf->seg->writable)
        return RB_EROFS;
    a.seg = (rb_segment_t *)bf->seg;
    rc = rbi_bloom_read(bf, add_fn, &a);
    if (rc != RB_OK)
        mark_unprocessed(&a);
    return rc == RB_OK ? a.added : rc;
}

int rb_bloom_add(rb_bloom_t *bf, const void *key, size_t len)
{
    rb_key_t k = { key, len };
    int64_t rc;

    if (key == NULL && len != 0)
        return RB_EINVAL;
    rc = rb_bloom_add_many(bf, &k, 1, NULL);
    return (int)rc;
}

/* rbi_kind_delete's test: a Bloom filter's layout (any other kind's is
 * RB_EWRONGTYPE: hll.c, cms_write.c, ... delete theirs). */
static int bloom_layout(uint64_t layout)
{
    return !rbi_layout_other_kind(layout);
}

/* R1 (why a deleted filter's slot and arrays may be reused while readers
 * still hold handles on it): the delete stores FREE, then publishes the
 * slot's generation (latch.h), and only then frees the arrays; reserve
 * keeps the generation of the slot it reuses (slot_publish).  So the
 * generation of a slot only grows across the filters it holds, and every
 * store a later filter makes (its slot words, bits in the freed extents)
 * comes after a publish that a reader's section did not begin at.  A
 * reader whose loads saw any of those stores sees the generation move at
 * its re-check (G2) and retries; the retry finds FREE or another
 * incarnation and answers RB_ENOENT.  A reader that began after the
 * publish sees FREE at once (G1).  Every kind deletes this way, through
 * rbi_kind_delete (kind.c). */
int rb_bloom_delete(rb_segment_t *seg, const char *name, size_t len)
{
    return rbi_kind_delete(seg, name, len, bloom_layout);
}
