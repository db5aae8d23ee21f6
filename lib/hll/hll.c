/*
 * hll.c - HyperLogLog counters (ringbloom/hll.h): the writer's PFADD,
 * PFMERGE and delete, the readers' lock-free count (by names, or through a
 * handle that remembers its counter's slot), Redis 7's estimator,
 * and the kind's entry in the filter-kind table (kind.h).
 *
 * What: a counter is a directory slot of layout RBI_LAYOUT_HLL (format.h)
 * whose layer[0].array_off names RBI_HLL_BYTES bytes of heap: 16384
 * registers, one per byte, register i in bits 8 (i % 8) .. 8 (i % 8) + 7 of
 * word i / 8.  The slot's other words are left 0 (nlayers 0, so a Bloom
 * filter's code never takes it for one of its own).
 *
 * Why it is safe without a lock (docs/design.md, "HyperLogLog"): only the
 * writer stores register words, and each store replaces one word whose
 * registers are each >= what they were (an add raises one register, a
 * merge takes maxima).  A reader's relaxed load of a word sees it whole,
 * before or after any store, and registers never go down, so every
 * register a reader sees is at least its value when the read began and
 * at most its value when it ended: the registers it counts are a state
 * between two writes (H1).  A delete frees the registers after publishing the slot's
 * generation (R1, bloom_write.c's rb_bloom_delete), and readers read a
 * slot inside its generation section, so a count never mixes a deleted
 * counter's memory reused by another.
 * Workload: PFADD at the daemon's pace; PFCOUNT reads 16 KiB per key.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bloom.h"
#include "kind.h"
#include "snap.h"

#define WORDS     (RBI_HLL_BYTES / 8)
#define HLL_P     14                 /* index bits (Redis's HLL_P) */
#define HLL_Q     (64 - HLL_P)       /* run bits: runs are 1 .. HLL_Q + 1 */
#define ALPHA_INF 0.721347520444481703680   /* 1 / (2 ln 2), Redis's HLL_ALPHA_INF */

_Static_assert(RB_HLL_REGISTERS == 1u << HLL_P, "16384 registers");

/* Element e's register and run length, as Redis's hllPatLen: the low
 * HLL_P bits of MurmurHash64A(e, 0xadc83b19) pick the register, and the
 * run is the count of trailing zeros of the other bits, plus one (bit
 * HLL_Q set first, so the run is at most HLL_Q + 1). */
static inline void pattern(const void *e, size_t len, uint32_t *index, unsigned *run)
{
    uint64_t h = rbi_hash_murmur64a(e, len, RB_HLL_SEED);

    *index = (uint32_t)(h & (RB_HLL_REGISTERS - 1));
    h = (h >> HLL_P) | (1ULL << HLL_Q);
    *run = (unsigned)__builtin_ctzll(h) + 1;
}

/* ---- the estimator (Redis 7's hllCount: Ertl, "New cardinality estimation
 * algorithms for HyperLogLog sketches", 2017) ---------------------------- */

static double hll_sigma(double x)
{
    double y = 1.0, z = x, zp;

    if (x == 1.0)
        return INFINITY;
    do {
        x *= x;
        zp = z;
        z += x * y;
        y += y;
    } while (zp != z);
    return z;
}

static double hll_tau(double x)
{
    double y = 1.0, z = 1.0 - x, zp;

    if (x == 0.0 || x == 1.0)
        return 0.0;
    do {
        x = sqrt(x);
        zp = z;
        y *= 0.5;
        z -= pow(1.0 - x, 2) * y;
    } while (zp != z);
    return z / 3.0;
}

uint64_t rb_hll_estimate(const uint8_t *r)
{
    double m = RB_HLL_REGISTERS, z;
    uint32_t histo[HLL_Q + 2] = { 0 };

    for (uint32_t i = 0; i < RB_HLL_REGISTERS; i++)
        histo[r[i] > HLL_Q + 1 ? HLL_Q + 1 : r[i]]++;
    /* The same operations in the same order as hllCount: the same double. */
    z = m * hll_tau((m - histo[HLL_Q + 1]) / m);
    for (int j = HLL_Q; j >= 1; --j) {
        z += histo[j];
        z *= 0.5;
    }
    z += m * hll_sigma(histo[0] / m);
    return (uint64_t)llroundl(ALPHA_INF * m * m / z);
}

/* The count's cache (H2): the slot's `items` word holds the estimate of
 * the registers as they are, with HLL_VALID set, or 0 (not known).  Only
 * the writer stores it: 0 before any store that raises a register
 * (reg_store's callers, through stale()), the estimate when it counts
 * (rb_hll_count_keep).  So a valid word is always the count of the
 * registers of that moment, and a reader that finds it valid, inside
 * the slot's generation section, answers from it without the registers. */
#define HLL_CACHE(f)  (&(f)->items)      /*  56 estimate | HLL_VALID, or 0 */
#define HLL_VALID     (1ULL << 63)

/* The largest of each register of words a and b: bytes below 0x80 (every
 * register an add makes: 0..51) a word at a time, SWAR; others byte by
 * byte (a corrupt segment's, clamped later by the estimator). */
static inline uint64_t reg_max(uint64_t a, uint64_t b)
{
    const uint64_t H = 0x8080808080808080ULL;

    if (__builtin_expect(((a | b) & H) == 0, 1)) {
        uint64_t ge = ((a | H) - b) & H;   /* a byte's top bit: a >= b there */
        uint64_t m = (ge >> 7) * 0xff;
        return (a & m) | (b & ~m);
    }
    for (unsigned i = 0; i < 8; i++) {
        uint64_t mask = 0xffULL << (8 * i);
        if ((b & mask) > (a & mask))
            a = (a & ~mask) | (b & mask);
    }
    return a;
}

/* The registers r[0 .. RB_HLL_REGISTERS) of words w[0 .. WORDS) (register
 * i in byte i % 8 of word i / 8, whatever the machine's byte order). */
static void words_to_registers(const uint64_t *w, uint8_t *r)
{
    for (uint32_t i = 0; i < WORDS; i++)
        for (unsigned b = 0; b < 8; b++)
            r[8 * i + b] = (uint8_t)(w[i] >> (8 * b));
}

/* The estimate of the registers of words w[0 .. WORDS). */
static uint64_t estimate_words(const uint64_t *w)
{
    uint8_t r[RB_HLL_REGISTERS];

    words_to_registers(w, r);
    return rb_hll_estimate(r);
}

/* ---- readers ------------------------------------------------------------ */

/* What a read of one slot gives (slot_take). */
typedef struct take {
    const uint64_t *prev;   /* in: maxima so far, or NULL (none yet) */
    uint64_t *out;          /* out: max(prev, registers) word by word, or the
                               registers (prev NULL); untouched if the cache
                               was valid and want_cache */
    int want_cache;         /* in: a valid cache word spares the registers */
    uint64_t cache;         /* out: the cache word read (HLL_CACHE) */
} take_t;

/* Reader: if slot f holds name, its registers read into t (1), or
 * RB_EWRONGTYPE (another kind holds it), RB_ECORRUPT; 0 if it holds another
 * name or nothing; RB_EBUSY.  Everything, name, cache word and registers,
 * is read in one generation section of the slot (latch.h), so a slot
 * deleted and reused meanwhile is read again, never mixed (G2, R1).  The
 * maxima are taken straight from shared memory into t->out, which is only
 * meaningful once this returns 1 (a retried read writes it again). */
static int slot_take(const rbi_map_t *m, const rb_filter_shm_t *f, const char *name,
                     size_t len, take_t *t)
{
    char buf[RB_FILTER_NAME_MAX + 1];

    for (uint32_t tries = 0; tries < RBI_READ_RETRIES; tries++) {
        uint64_t g = rbi_gen_read_begin(&f->gen);
        int rc = 0;
        /* Acquire pairs with the release store of LIVE (create): the
         * slot's words and zeroed registers are complete. */
        if (atomic_load_explicit(&f->state, memory_order_acquire) == RBI_FILTER_LIVE &&
            rbi_ld(&f->name_len) == len) {
            rbi_copy_out(buf, f->name, (len + 7) / 8);
            if (memcmp(buf, name, len) == 0) {
                uint64_t off = rbi_ld(&f->layer[0].array_off);
                if (rbi_ld(&f->layout) != RBI_LAYOUT_HLL)
                    rc = RB_EWRONGTYPE;
                else if (!rbi_span_ok(rbi_seg_size(m), off, RBI_HLL_BYTES))
                    rc = RB_ECORRUPT;
                else {
                    const _Atomic uint64_t *arr = rbi_word_at(m, off);
                    t->cache = rbi_ld(HLL_CACHE(f));
                    if (!t->want_cache || !(t->cache & HLL_VALID)) {
                        if (t->prev == NULL)
                            for (uint32_t i = 0; i < WORDS; i++)
                                t->out[i] = rbi_ld(&arr[i]);
                        else
                            for (uint32_t i = 0; i < WORDS; i++)
                                t->out[i] = reg_max(t->prev[i], rbi_ld(&arr[i]));
                    }
                    rc = 1;
                }
            }
        }
        if (!rbi_gen_read_retry(&f->gen, g))
            return rc;
    }
    return RB_EBUSY;
}

/* Reader: slot_take of counter name: 1, 0 (no such name), or slot_take's
 * error.  A hint (a slot it was found in before; NULL: none) is tried
 * first, then the directory finds the slot (each slot read whole);
 * slot_take checks the name again inside the slot's section, and a slot
 * deleted or reused in between is looked up again.  *hint becomes where
 * it was found. */
static int take(const rbi_map_t *m, const char *name, size_t len, _Atomic uint64_t *hint,
                take_t *t)
{
    if (hint != NULL) {
        uint64_t h = atomic_load_explicit(hint, memory_order_relaxed);
        int rc;
        if (h < m->dir_slots && (rc = slot_take(m, rbi_dir_slot(m, h), name, len, t)) != 0)
            return rc;
    }
    for (uint32_t tries = 0; tries < RBI_READ_RETRIES; tries++) {
        int64_t i = rbi_dir_lookup(m, name, len, NULL, NULL);
        int rc;
        if (i == RB_ENOENT)
            return 0;
        if (i < 0)
            return (int)i;
        if ((rc = slot_take(m, rbi_dir_slot(m, (uint64_t)i), name, len, t)) != 0) {
            if (hint != NULL && rc > 0)
                atomic_store_explicit(hint, (uint64_t)i, memory_order_relaxed);
            return rc;
        }
    }
    return RB_EBUSY;
}

/* Reader: the count of one counter (0 if there is none), from its cache
 * word when that is valid (H2), else from its registers. */
static int count_one(const rbi_map_t *m, const char *name, size_t len, _Atomic uint64_t *hint,
                     uint64_t *out)
{
    uint64_t w[WORDS];
    take_t t = { .prev = NULL, .out = w, .want_cache = 1 };
    int rc = take(m, name, len, hint, &t);

    if (rc < 0)
        return rc;
    if (rc == 0)
        *out = 0;
    else if (t.cache & HLL_VALID)
        *out = t.cache & ~HLL_VALID;
    else
        *out = estimate_words(w);
    return RB_OK;
}

int rb_hll_count(const rb_segment_t *seg, const rb_key_t *names, size_t n, uint64_t *out)
{
    uint64_t a[WORDS], b[WORDS];
    uint64_t *acc = NULL;       /* the maxima so far: NULL, a or b */
    const rbi_map_t *m;

    if (seg == NULL || names == NULL || n == 0 || out == NULL)
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!rbi_name_ok(names[i].ptr, names[i].len))
            return RB_EINVAL;
    m = rbi_reader_map(seg);
    if (n == 1)
        return count_one(m, names[0].ptr, names[0].len, NULL, out);
    /* Several: each counter's registers max'ed with the maxima so far
     * straight from shared memory into the other buffer, then the two
     * swap; one estimate of the union at the end, as Redis does. */
    for (size_t i = 0; i < n; i++) {
        take_t t = { .prev = acc, .out = acc == a ? b : a, .want_cache = 0 };
        int rc = take(m, names[i].ptr, names[i].len, NULL, &t);
        if (rc < 0)
            return rc;
        if (rc == 1)
            acc = t.out;
    }
    *out = acc == NULL ? 0 : estimate_words(acc);
    return RB_OK;
}

struct rb_hll {
    const rb_segment_t *seg;
    _Atomic uint64_t hint;     /* the slot it was last found in (a hint:
                                  slot_take checks the name each time) */
    size_t len;
    char name[RB_FILTER_NAME_MAX + 1];
};

int rb_hll_open(const rb_segment_t *seg, const char *name, size_t len, rb_hll_t **out)
{
    uint64_t w[WORDS];
    take_t t = { .prev = NULL, .out = w, .want_cache = 1 };
    rb_hll_t *h;
    int rc;

    if (seg == NULL || out == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return RB_ENOMEM;
    h->seg = seg;
    h->len = len;
    memcpy(h->name, name, len);
    atomic_init(&h->hint, UINT64_MAX);
    if ((rc = take(rbi_reader_map(seg), h->name, h->len, &h->hint, &t)) != 1) {
        free(h);
        return rc == 0 ? RB_ENOENT : rc;
    }
    *out = h;
    return RB_OK;
}

void rb_hll_close(rb_hll_t *h)
{
    free(h);
}

int rb_hll_card(const rb_hll_t *h, uint64_t *out)
{
    if (h == NULL || out == NULL)
        return RB_EINVAL;
    return count_one(rbi_reader_map(h->seg), h->name, h->len, &((rb_hll_t *)h)->hint, out);
}

int rb_hll_registers(const rb_segment_t *seg, const char *name, size_t len, uint8_t *out)
{
    uint64_t w[WORDS];
    take_t t = { .prev = NULL, .out = w, .want_cache = 0 };
    int rc;

    if (seg == NULL || out == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    memset(out, 0, RB_HLL_REGISTERS);
    if ((rc = take(rbi_reader_map(seg), name, len, NULL, &t)) == 1)
        words_to_registers(w, out);
    return rc;
}

/* ---- the writer ----------------------------------------------------------- */

/* Writer: the registers of live counter name: RB_ENOENT (no such name),
 * RB_EWRONGTYPE (another kind), RB_ECORRUPT (the extent is not one a reader
 * would accept: never stored into); *fp its slot if not NULL. */
static int writer_regs(rb_segment_t *seg, const char *name, size_t len, rb_filter_shm_t **fp,
                       _Atomic uint64_t **arr)
{
    rbi_map_t *m = rbi_seg_map(seg);
    int64_t i = rbi_dir_find(seg, name, len);
    rb_filter_shm_t *f;
    uint64_t off;

    if (i < 0)
        return RB_ENOENT;
    f = rbi_dir_slot(m, (uint64_t)i);
    off = rbi_ld(&f->layer[0].array_off);
    if (rbi_ld(&f->layout) != RBI_LAYOUT_HLL)
        return RB_EWRONGTYPE;
    if (!rbi_span_ok(rbi_seg_size(m), off, RBI_HLL_BYTES))
        return RB_ECORRUPT;
    if (fp != NULL)
        *fp = f;
    *arr = rbi_word_at(m, off);
    return RB_OK;
}

/* Writer: fills free slot f as counter name, its registers at off (zeroed). */
static void slot_fill(rbi_map_t *m, rb_filter_shm_t *f, const char *name, size_t len,
                      uint64_t off)
{
    rb_header_shm_t *h = rbi_hdr(m);
    uint64_t inc = rbi_ld(&h->next_incarnation);
    static const unsigned char zero[RBI_SECRET_BYTES];

    rbi_st(&h->next_incarnation, inc + 1);
    rbi_st(&f->incarnation, inc);
    /* gen is kept, never reset (R1, bloom_write.c). */
    rbi_st(&f->layout, RBI_LAYOUT_HLL);
    /* The Bloom filter's words, 0: nlayers 0 keeps its code off the slot. */
    rbi_st(&f->flags, 0);
    rbi_st(&f->expansion, 0);
    rbi_st(&f->nlayers, 0);
    rbi_st(HLL_CACHE(f), 0);   /* not counted yet (H2) */
    rbi_st(&f->capacity, 0);
    rbi_st(&f->error_bits, 0);
    rbi_st(&f->current, 0);
    rbi_st(&f->window, 0);
    rbi_st(&f->rotations, 0);
    rbi_st(&f->rotated_at, 0);
    rbi_st(&f->name_len, len);
    rbi_st(&f->created, (uint64_t)time(NULL));
    rbi_copy_in(f->name, name, len);
    rbi_copy_in(f->secret, zero, sizeof(zero));
    rbi_st(&f->layer[0].array_off, off);
    rbi_st(&f->layer[0].bits, (uint64_t)RBI_HLL_BYTES * 8);
}

/* Writer: a new empty counter name (the caller found no such name): its
 * slot *fp and registers *arr.  RB_EEXIST, RB_ESLOTS, RB_ENOSPC: nothing
 * changes. */
static int create(rb_segment_t *seg, const char *name, size_t len, rb_filter_shm_t **fp,
                  _Atomic uint64_t **arr)
{
    rbi_map_t *m = rbi_seg_map(seg);
    rb_filter_shm_t *f = NULL;
    uint64_t off;
    int rc;

    if ((rc = rbi_dir_claim(seg, name, len, &f)) != RB_OK)
        return rc;
    if ((rc = rbi_heap_alloc(seg, RBI_HLL_BYTES, &off)) != RB_OK)
        return rc;
    *arr = rbi_word_at(m, off);
    /* The extent may be reused space: clear it before anyone can see it. */
    rbi_snap_touch(seg, *arr, RBI_HLL_BYTES);   /* S1 (snap.h) */
    for (uint32_t i = 0; i < WORDS; i++)
        rbi_st(&(*arr)[i], 0);
    slot_fill(m, f, name, len, off);
    rbi_dir_publish(seg, f);   /* readers that acquire LIVE see every word above */
    *fp = f;
    return RB_OK;
}

/* Writer: the counter name, created if missing (*created = 1): its slot
 * and registers. */
static int writer_open(rb_segment_t *seg, const char *name, size_t len, rb_filter_shm_t **f,
                       _Atomic uint64_t **arr, int *created)
{
    int rc = writer_regs(seg, name, len, f, arr);

    *created = 0;
    if (rc == RB_ENOENT && (rc = create(seg, name, len, f, arr)) == RB_OK)
        *created = 1;
    return rc;
}

/* Writer: f's registers are about to change: its cached count is no
 * longer theirs (H2).  Before the first register store of a change. */
static inline void stale(rb_filter_shm_t *f)
{
    if (rbi_ld(HLL_CACHE(f)) != 0)
        rbi_st(HLL_CACHE(f), 0);
}

/* Writer: word i of arr becomes v (each register of v >= arr's: the one
 * store a reader sees whole, before or after). */
static inline void reg_store(rb_segment_t *seg, _Atomic uint64_t *arr, uint32_t i, uint64_t v)
{
    rbi_snap_touch(seg, &arr[i], 8);   /* S1 (snap.h) */
    rbi_st(&arr[i], v);
}

int rb_hll_add(rb_segment_t *seg, const char *name, size_t len, const rb_key_t *elements,
               size_t n)
{
    rb_filter_shm_t *f;
    _Atomic uint64_t *arr;
    int created, changed = 0, rc;

    if (seg == NULL || !rbi_name_ok(name, len) || (elements == NULL && n != 0))
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (elements[i].ptr == NULL && elements[i].len != 0)
            return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if ((rc = writer_open(seg, name, len, &f, &arr, &created)) != RB_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        uint32_t index;
        unsigned run, shift;
        uint64_t w;
        pattern(elements[i].ptr, elements[i].len, &index, &run);
        shift = 8 * (index % 8);
        w = rbi_ld(&arr[index / 8]);
        if (((w >> shift) & 0xff) < run) {
            if (!changed)
                stale(f);
            reg_store(seg, arr, index / 8, (w & ~(0xffULL << shift)) | (uint64_t)run << shift);
            changed = 1;
        }
    }
    return created || changed;
}

/* Writer: the registers of sources[0 .. n) max'ed into acc (missing ones
 * skipped).  RB_EWRONGTYPE, RB_ECORRUPT. */
static int merge_sources(rb_segment_t *seg, const rb_key_t *sources, size_t n, uint64_t *acc)
{
    for (size_t s = 0; s < n; s++) {
        _Atomic uint64_t *arr;
        int rc = writer_regs(seg, sources[s].ptr, sources[s].len, NULL, &arr);
        if (rc == RB_ENOENT)
            continue;
        if (rc != RB_OK)
            return rc;
        for (uint32_t i = 0; i < WORDS; i++)
            acc[i] = reg_max(acc[i], rbi_ld(&arr[i]));
    }
    return RB_OK;
}

int rb_hll_merge(rb_segment_t *seg, const char *dest, size_t len, const rb_key_t *sources,
                 size_t n)
{
    uint64_t acc[WORDS];
    rb_filter_shm_t *f;
    _Atomic uint64_t *arr;
    int created, changed = 0, rc;

    if (seg == NULL || !rbi_name_ok(dest, len) || (sources == NULL && n != 0))
        return RB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!rbi_name_ok(sources[i].ptr, sources[i].len))
            return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    memset(acc, 0, sizeof(acc));
    rc = writer_regs(seg, dest, len, NULL, &arr);
    if (rc != RB_OK && rc != RB_ENOENT)
        return rc;
    if ((rc = merge_sources(seg, sources, n, acc)) != RB_OK)
        return rc;
    if ((rc = writer_open(seg, dest, len, &f, &arr, &created)) != RB_OK)
        return rc;
    for (uint32_t i = 0; i < WORDS; i++) {
        uint64_t w = rbi_ld(&arr[i]), v = reg_max(w, acc[i]);
        if (v != w) {
            if (!changed)
                stale(f);
            changed = 1;
            reg_store(seg, arr, i, v);
        }
    }
    return RB_OK;
}

int rb_hll_count_keep(rb_segment_t *seg, const rb_key_t *names, size_t n, uint64_t *out)
{
    uint64_t w[WORDS];
    rb_filter_shm_t *f;
    _Atomic uint64_t *arr;
    uint64_t c;
    int rc;

    if (seg == NULL || names == NULL || n == 0 || out == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if (n != 1)
        return rb_hll_count(seg, names, n, out);
    if (!rbi_name_ok(names[0].ptr, names[0].len))
        return RB_EINVAL;
    rc = writer_regs(seg, names[0].ptr, names[0].len, &f, &arr);
    if (rc == RB_ENOENT) {
        *out = 0;
        return RB_OK;
    }
    if (rc != RB_OK)
        return rc;
    if ((c = rbi_ld(HLL_CACHE(f))) & HLL_VALID) {
        *out = c & ~HLL_VALID;
        return RB_OK;
    }
    /* The writer's own registers: nothing changes them meanwhile. */
    for (uint32_t i = 0; i < WORDS; i++)
        w[i] = rbi_ld(&arr[i]);
    *out = estimate_words(w);
    rbi_st(HLL_CACHE(f), *out | HLL_VALID);   /* H2; a directory word: no S1 touch */
    return RB_OK;
}

/* Writer.  R1 (bloom_write.c, rb_bloom_delete): FREE, then the slot's
 * generation is published, and only then are the registers freed. */
/* The delete protocol of every kind (R1, rbi_kind_delete) over the
 * counter's one extent, written here: this file holds the row kind.c
 * lists, so calling kind.c from it would make a file circle. */
int rb_hll_delete(rb_segment_t *seg, const char *name, size_t len)
{
    rb_filter_shm_t *f;
    _Atomic uint64_t *arr;
    uint64_t off;
    int rc;

    if (seg == NULL || !rbi_name_ok(name, len))
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    if ((rc = writer_regs(seg, name, len, &f, &arr)) != RB_OK)
        return rc == RB_EWRONGTYPE ? RB_ENOENT : rc;
    off = rbi_ld(&f->layer[0].array_off);   /* sound: writer_regs checked it */
    rbi_dir_free(seg, f);   /* R1 (dir.h): before the registers are freed */
    rbi_heap_free(seg, off, RBI_HLL_BYTES);
    return RB_OK;
}

/* ---- the kind (kind.h) ---------------------------------------------------- */

static int kind_extents(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n)
{
    uint64_t off = rbi_ld(&f->layer[0].array_off);

    if (!rbi_span_ok(size, off, RBI_HLL_BYTES))
        return RB_ECORRUPT;
    out[0].off = off;
    out[0].len = RBI_HLL_BYTES;
    *n = 1;
    return RB_OK;
}

static uint64_t kind_heap_bytes(const rb_filter_shm_t *f)
{
    (void)f;
    return rbi_round_up(RBI_HLL_BYTES, RBI_ALIGN);
}

static int kind_summary(const rb_segment_t *seg, const char *name, size_t len,
                        rb_filter_summary_t *out)
{
    rb_hll_t *h;
    int rc = rb_hll_open(seg, name, len, &h);

    if (rc != RB_OK)
        return rc;
    rc = rb_hll_card(h, &out->items);
    rb_hll_close(h);
    out->form = "hyperloglog";
    out->bytes = RB_HLL_REGISTERS;
    out->layers = 1;
    out->error_rate = 1.04 / 128;   /* Redis's standard error: 1.04 / sqrt(16384) */
    return rc;
}

const rbi_kind_t rbi_kind_hll = {
    .desc = { "hyperloglog", "string" },   /* Redis's type: a string there */
    .layout_first = RBI_LAYOUT_HLL, .layout_last = RBI_LAYOUT_HLL,
    .extents = kind_extents, .heap_bytes = kind_heap_bytes,
    .summary = kind_summary,
};
