/*
 * cbf.c - counting Bloom filters, the reader side: the handle (open,
 * close, rebinding by name), contains (one key and batched), count, info,
 * the sizing and the FPR formula (the kind's row: cbf_kind.c).
 *
 * What: a handle remembers its filter's slot and incarnation.  Every call
 * reads the slot inside its generation section (latch.h, G1 / G2: the
 * name, shape, array and secret all belong to one filter, and a filter
 * deleted meanwhile is noticed: K3) and loads the key's counters, each
 * word whole (K1).  No other re-check: a key present keeps all of its
 * counters > 0 at every instant (K2, cbf_impl.h), so any order of loads
 * finds it.  Workload: a probe is one keyed hash and up to k counter
 * loads (k cache lines at most), from many reader processes at once.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cbf_impl.h"

struct rb_cbf {
    rbi_named_t n;   /* its name and where it was last bound (dir.h) */
};

typedef rbi_cbf_view_t view_t;

/* Inside f's section: 1 and *v filled if f is live filter `inc` (the
 * incarnation a lookup found), 0 if it is not, RB_ECORRUPT. */
static int view_read(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc, void *view)
{
    view_t *v = view;
    uint64_t off;

    /* Acquire pairs with the release store of LIVE: the words are set. */
    if (atomic_load_explicit(&f->state, memory_order_acquire) != RBI_FILTER_LIVE ||
        rbi_ld(&f->incarnation) != inc)
        return 0;
    if (!rbi_cbf_slot_shape(f, rbi_seg_size(m), &v->s, &off))
        return RB_ECORRUPT;
    v->arr = rbi_word_at(m, off);
    v->f = f;
    rbi_copy_out(v->secret, f->secret, RBI_SECRET_WORDS);
    return 1;
}

/* rbi_dir_bind's check: the filter found is sound. */
static int bind_check(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc, void *arg)
{
    view_t v;

    (void)arg;
    return view_read(m, f, inc, &v);
}

/* A reader's function and its argument, through rbi_named_read. */
typedef struct cbf_call {
    rbi_cbf_fn fn;
    void *arg;
} cbf_call_t;

static int cbf_use(const rb_filter_shm_t *f, void *view, void *arg)
{
    const cbf_call_t *c = arg;

    (void)f;
    return c->fn(view, c->arg);
}

int rbi_cbf_read(const rb_cbf_t *h, rbi_cbf_fn fn, void *arg)
{
    view_t v;
    cbf_call_t c = { fn, arg };

    return rbi_named_read(&h->n, view_read, &v, cbf_use, &c);
}

int rb_cbf_open(const rb_segment_t *seg, const char *name, size_t len, rb_cbf_t **out)
{
    void *h = NULL;
    int rc = rbi_named_new(sizeof(rb_cbf_t), seg, name, len, rbi_cbf_layout, bind_check, &h);

    if (rc == RB_OK)
        *out = h;
    return rc;
}

void rb_cbf_close(rb_cbf_t *h)
{
    free(h);
}

typedef struct probe_arg {
    const void *key;
    size_t klen;
    uint64_t min;     /* the smallest counter (0: absent) */
} probe_arg_t;

/* The smallest of the key's counters; stops at the first 0 unless all. */
static uint64_t probe_min(const view_t *v, rbi_h128_t h, int all)
{
    uint64_t c[RB_CBF_MAX_K], min = v->s.max;
    uint32_t n = rbi_cbf_probes(&v->s, h, c);

    for (uint32_t i = 0; i < n; i++) {
        uint64_t x = rbi_cbf_get(&v->s, v->arr, c[i]);
        if (x < min)
            min = x;
        if (min == 0 && !all)
            break;
    }
    return min;
}

static int probe_one(const view_t *v, void *arg)
{
    probe_arg_t *a = arg;

    a->min = probe_min(v, rbi_cbf_hash(v->secret, a->key, a->klen), 0);
    return RB_OK;
}

int rb_cbf_contains(const rb_cbf_t *h, const void *key, size_t klen)
{
    probe_arg_t a = { key, klen, 0 };
    int rc;

    if (h == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    rc = rbi_cbf_read(h, probe_one, &a);
    return rc == RB_OK ? a.min != 0 : rc;
}

int rb_cbf_count(const rb_cbf_t *h, const void *key, size_t klen, uint64_t *count)
{
    probe_arg_t a = { key, klen, 0 };
    int rc;

    if (h == NULL || count == NULL || (key == NULL && klen != 0))
        return RB_EINVAL;
    if ((rc = rbi_cbf_read(h, probe_one, &a)) == RB_OK)
        *count = a.min;
    return rc;
}

#define BATCH 16u

typedef struct many_arg {
    const rb_key_t *keys;
    uint8_t *out;
    uint32_t n;         /* keys in this batch, at most BATCH */
} many_arg_t;

/* One batch: hashes the keys and prefetches their first two counters'
 * lines, then probes.  A run whose section fails its re-check is
 * discarded whole (every key answered afresh). */
static int probe_many(const view_t *v, void *arg)
{
    many_arg_t *a = arg;
    rbi_h128_t h[BATCH];

    for (uint32_t i = 0; i < a->n; i++) {
        h[i] = rbi_cbf_hash(v->secret, a->keys[i].ptr, a->keys[i].len);
        rbi_prefetch_line((const void *)&v->arr[rbi_fastrange64(h[i].h1, v->s.m) / v->s.per]);
        rbi_prefetch_line(
            (const void *)&v->arr[rbi_fastrange64(h[i].h1 + h[i].h2, v->s.m) / v->s.per]);
    }
    for (uint32_t i = 0; i < a->n; i++)
        a->out[i] = probe_min(v, h[i], 0) != 0;
    return RB_OK;
}

int64_t rb_cbf_contains_many(const rb_cbf_t *h, const rb_key_t *keys, size_t n, uint8_t *out)
{
    int64_t found = 0;

    if (h == NULL || ((keys == NULL || out == NULL) && n != 0))
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (keys[i].ptr == NULL && keys[i].len != 0)
            return RB_EINVAL;
    for (size_t base = 0; base < n; base += BATCH) {
        many_arg_t a = { keys + base, out + base, (uint32_t)(n - base < BATCH ? n - base : BATCH) };
        int rc;
        if ((rc = rbi_cbf_read(h, probe_many, &a)) != RB_OK)
            return rc;
        for (uint32_t i = 0; i < a.n; i++)
            found += a.out[i];
    }
    return found;
}

static int info_fn(const view_t *v, void *arg)
{
    rb_cbf_info_t *o = arg;
    const rb_filter_shm_t *f = v->f;

    memset(o, 0, sizeof(*o));
    o->bytes = rbi_cbf_bytes(&v->s);
    o->counters = v->s.m;
    o->k = v->s.k;
    o->counter_bits = v->s.cb;
    o->capacity = rbi_ld(RBI_CBF_CAP(f));
    o->error_rate = rbi_load_double(RBI_CBF_ERROR(f));
    o->items = rbi_ld(RBI_CBF_ITEMS(f));
    o->deletes = rbi_ld(RBI_CBF_DELETES(f));
    o->saturated = rbi_ld(RBI_CBF_SATURATED(f));
    return RB_OK;
}

int rb_cbf_info(const rb_cbf_t *h, rb_cbf_info_t *out)
{
    rb_cbf_info_t o;
    int rc;

    if (h == NULL || out == NULL)
        return RB_EINVAL;
    if ((rc = rbi_cbf_read(h, info_fn, &o)) == RB_OK)
        *out = o;
    return rc;
}

int rb_cbf_size(uint64_t capacity, double error_rate, uint32_t counter_bits, uint64_t *counters,
                uint32_t *k)
{
    uint32_t per = counter_bits == 4 ? 16u : 8u;
    double m, kk;

    if (counters == NULL || k == NULL || capacity < 1 || capacity > RB_CBF_MAX_CAPACITY ||
        !(error_rate > 0.0 && error_rate < 1.0) || (counter_bits != 4 && counter_bits != 8))
        return RB_EINVAL;
    m = ceil((double)capacity * -log(error_rate) / (M_LN2 * M_LN2));
    kk = ceil(-log2(error_rate));
    if (m > (double)RB_CBF_MAX_COUNTERS || kk > RB_CBF_MAX_K)
        return RB_EINVAL;
    *counters = rbi_round_up(m < per ? per : (uint64_t)m, per);
    *k = kk < 1 ? 1u : (uint32_t)kk;
    return *counters <= RB_CBF_MAX_COUNTERS ? RB_OK : RB_EINVAL;
}

double rb_cbf_fpr_formula(uint64_t m, uint32_t k, uint64_t n)
{
    if (m == 0 || k == 0)
        return NAN;
    return pow(1.0 - exp(-(double)k * (double)n / (double)m), (double)k);
}
