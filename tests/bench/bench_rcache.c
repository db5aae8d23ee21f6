/*
 * bench_rcache.c - section c of `make bench`: one read on a kept handle
 * of a cuckoo filter (rb_cuckoo_contains, hits and misses) and of a
 * count-min sketch (rb_cms_estimate, the handle's query; rb_cms_query,
 * the by-name call, which scans the directory and keeps no cache), in ns
 * a call, beside the same calls of an older libringbloom given by
 * --lib-before PATH (its .so, built from an earlier commit; loaded with
 * dlopen into this process, RTLD_DEEPBIND so its calls stay inside it).
 * Both read the same filters of one segment, attached by each library as
 * a reader; the repetitions alternate which library runs first, and each
 * row prints the median ns and the ratio before / after per repetition
 * (median and spread).  Without --lib-before only this build's figures
 * are printed.  Issue 29's goal: single contains / query at least 2x the
 * reader that re-read the slot's shape, layers and secret each call.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "ringbloom.h"

#define RC_KEYS   (1u << 19)   /* keys added; as many absent keys */
#define RC_NAMES  100          /* other names in the directory */

/* One library's reader entry points (this build's, or the older one's). */
typedef struct rc_lib {
    const char *name;
    int (*attach)(const char *, unsigned, rb_segment_t **);
    void (*seg_close)(rb_segment_t *);
    int (*cf_open)(const rb_segment_t *, const char *, size_t, rb_cuckoo_t **);
    int (*cf_contains)(const rb_cuckoo_t *, const void *, size_t);
    void (*cf_close)(rb_cuckoo_t *);
    int (*cms_open)(const rb_segment_t *, const char *, size_t, rb_cms_t **);
    int (*cms_estimate)(const rb_cms_t *, const void *, size_t, uint64_t *);
    int (*cms_query)(const rb_segment_t *, const char *, size_t, const void *, size_t,
                     uint64_t *);
    void (*cms_close)(rb_cms_t *);
    rb_segment_t *seg;
    rb_cuckoo_t *cf[2];   /* [0] the large filter, [1] the small one */
    rb_cms_t *cms[2];
} rc_lib_t;

/* The two sizes: a filter and a sketch that stay in the first-level
 * caches (the reader's own cost dominates) and larger ones whose buckets
 * and counters come from the last-level cache or memory. */
static const struct {
    const char *cf, *cms, *what;
    uint64_t cf_cap, keys;
    uint32_t cms_width;
} rc_size[2] = {
    { "cf", "cms", "2 MiB filter, 1.25 MiB sketch", 1u << 20, 1u << 19, 1u << 16 },
    { "cfs", "cmss", "8 KiB filter, 20 KiB sketch", 1u << 12, 1u << 11, 1u << 10 },
};

static char rc_key[2 * RC_KEYS][16];
static size_t rc_len[2 * RC_KEYS];
static volatile uint64_t rc_sink;

static void *rc_sym(void *dl, const char *name)
{
    void *p = dlsym(dl, name);

    if (p == NULL)
        bench_die("section c: %s not in --lib-before's library", name);
    return p;
}

/* The older library's entry points, or 0 if it cannot be loaded. */
static int rc_load(const char *path, rc_lib_t *l)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);

    if (dl == NULL) {
        fprintf(stderr, "bench: section c: %s\n", dlerror());
        return 0;
    }
    l->name = "before";
    *(void **)&l->attach = rc_sym(dl, "rb_segment_attach");
    *(void **)&l->seg_close = rc_sym(dl, "rb_segment_close");
    *(void **)&l->cf_open = rc_sym(dl, "rb_cuckoo_open");
    *(void **)&l->cf_contains = rc_sym(dl, "rb_cuckoo_contains");
    *(void **)&l->cf_close = rc_sym(dl, "rb_cuckoo_close");
    *(void **)&l->cms_open = rc_sym(dl, "rb_cms_open");
    *(void **)&l->cms_estimate = rc_sym(dl, "rb_cms_estimate");
    *(void **)&l->cms_query = rc_sym(dl, "rb_cms_query");
    *(void **)&l->cms_close = rc_sym(dl, "rb_cms_close");
    return 1;   /* never dlclose'd: the process ends with the bench */
}

static void rc_this(rc_lib_t *l)
{
    *l = (rc_lib_t){ "after", rb_segment_attach, rb_segment_close, rb_cuckoo_open,
                     rb_cuckoo_contains, rb_cuckoo_close, rb_cms_open, rb_cms_estimate,
                     rb_cms_query, rb_cms_close, NULL, { NULL, NULL }, { NULL, NULL } };
}

static void rc_open(rc_lib_t *l, const char *inst)
{
    if (l->attach(inst, 0, &l->seg) != RB_OK)
        bench_die("section c: %s library: attach", l->name);
    for (int z = 0; z < 2; z++)
        if (l->cf_open(l->seg, rc_size[z].cf, strlen(rc_size[z].cf), &l->cf[z]) != RB_OK ||
            l->cms_open(l->seg, rc_size[z].cms, strlen(rc_size[z].cms), &l->cms[z]) != RB_OK)
            bench_die("section c: %s library: open", l->name);
}

static void rc_close(rc_lib_t *l)
{
    for (int z = 0; z < 2; z++) {
        l->cf_close(l->cf[z]);
        l->cms_close(l->cms[z]);
    }
    l->seg_close(l->seg);
}

/* ns a call of n calls of what: 0 contains of present keys, 1 of absent
 * ones, 2 rb_cms_estimate, 3 rb_cms_query; keys taken in order (their
 * strings stream from memory; the filter's buckets and counters they hash
 * to are scattered). */
static double rc_time(const rc_lib_t *l, int z, int what, size_t n)
{
    const char *cms = rc_size[z].cms;
    uint64_t keys = rc_size[z].keys;
    double t0 = bench_now_s();
    uint64_t acc = 0, e = 0;
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        size_t k = i % keys + (what == 1 ? RC_KEYS : 0);
        switch (what) {
        case 0:
        case 1: rc = l->cf_contains(l->cf[z], rc_key[k], rc_len[k]); break;
        case 2: rc = l->cms_estimate(l->cms[z], rc_key[k], rc_len[k], &e); break;
        default: rc = l->cms_query(l->seg, cms, strlen(cms), rc_key[k], rc_len[k], &e);
        }
        if (rc < 0)
            bench_die("section c: %s library: call %d failed (%d)", l->name, what, rc);
        acc += (uint64_t)rc + e;
    }
    rc_sink = acc;
    return (bench_now_s() - t0) * 1e9 / (double)n;
}

#define RC_SLICES 8   /* slices of a repetition, the libraries alternating */

/* One row: what on both libraries (before absent: this build's alone),
 * reps times; each repetition is RC_SLICES slices of n / RC_SLICES calls,
 * the two libraries alternating slice by slice (which goes first
 * alternating too), so that a change in the machine's load falls on both. */
static void rc_row(const char *workload, int z, int what, size_t n, int reps,
                   const rc_lib_t *now, const rc_lib_t *old)
{
    double va[32], vb[32], rs[3];
    size_t m = n / RC_SLICES;
    cell_t cells[2];

    for (int r = 0; r < reps; r++) {
        va[r] = vb[r] = 0;
        for (int sl = 0; sl < RC_SLICES; sl++) {
            int old_first = (sl + r) % 2 == 0;
            if (old != NULL && old_first)
                vb[r] += rc_time(old, z, what, m) / RC_SLICES;
            va[r] += rc_time(now, z, what, m) / RC_SLICES;
            if (old != NULL && !old_first)
                vb[r] += rc_time(old, z, what, m) / RC_SLICES;
        }
    }
    if (old == NULL) {
        cells[0] = (cell_t){ "after", bench_median(va, reps), NULL };
        row("c", workload, "ns", 0, 0, cells, 1);
        return;
    }
    bench_ratio_spread(vb, va, reps, rs);
    cells[0] = (cell_t){ "before", bench_median(vb, reps), NULL };
    cells[1] = (cell_t){ "after", bench_median(va, reps), NULL };
    row("c", workload, "ns", 0, 0, cells, 2);
    printf("    before / after %.2fx per rep (spread %.2f .. %.2f, %d reps)\n", rs[0], rs[1],
           rs[2], reps);
}

/* The segment: RC_NAMES other sketches, then per size a cuckoo filter
 * (16-bit fingerprints, buckets of 4, rc_size's capacity) holding keys 0
 * .. keys-1 at half load and a sketch (depth 5, rc_size's width, 32-bit
 * counters) counting them. */
static rb_segment_t *rc_fill(const char *inst)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 256u << 20, .max_filters = RC_NAMES + 8 };
    rb_segment_t *seg;
    char name[32];

    for (size_t i = 0; i < 2 * RC_KEYS; i++)
        rc_len[i] = (size_t)snprintf(rc_key[i], sizeof(rc_key[i]), "key%zu", i * 2654435761u);
    if (rb_segment_create(inst, &o, &seg) != RB_OK)
        bench_die("section c: segment %s", inst);
    for (int i = 0; i < RC_NAMES; i++) {
        rb_cms_params_t op = { .width = 64, .depth = 2 };
        if (rb_cms_create(seg, name, (size_t)snprintf(name, sizeof(name), "other%d", i),
                          &op) != RB_OK)
            bench_die("section c: sketch %s", name);
    }
    for (int z = 0; z < 2; z++) {
        const char *cf = rc_size[z].cf, *cms = rc_size[z].cms;
        rb_cuckoo_params_t cp = { .capacity = rc_size[z].cf_cap, .bucket_size = 4,
                                  .max_iterations = 500, .expansion = 1, .fp_bits = 16 };
        rb_cms_params_t mp = { .width = rc_size[z].cms_width, .depth = 5 };
        if (rb_cuckoo_reserve(seg, cf, strlen(cf), &cp) != RB_OK ||
            rb_cms_create(seg, cms, strlen(cms), &mp) != RB_OK)
            bench_die("section c: the filters");
        for (size_t i = 0; i < rc_size[z].keys; i++) {
            rb_key_t k = { rc_key[i], rc_len[i] };
            uint64_t by = 1 + i % 7;
            if (rb_cuckoo_add(seg, cf, strlen(cf), k.ptr, k.len, 0) != 1 ||
                rb_cms_incrby(seg, cms, strlen(cms), &k, &by, 1, NULL) != RB_OK)
                bench_die("section c: adding");
        }
    }
    return seg;
}

void bench_rcache(const char *lib_before, int reps, int quick)
{
    size_t n = quick ? 1000000 : 4000000;
    rc_lib_t now, old;
    int have_old = lib_before != NULL && rc_load(lib_before, &old);
    rb_segment_t *seg;
    char inst[64];

    snprintf(inst, sizeof(inst), "rbbench-rcache-%d", (int)getpid());
    seg = rc_fill(inst);
    rc_this(&now);
    rc_open(&now, inst);
    if (have_old)
        rc_open(&old, inst);
    printf("\n[c] reader caches: one call on a kept handle (cuckoo filters at half load, "
           "sketches of depth 5), %s (%d reps)\n",
           have_old ? "this build against --lib-before" : "this build alone (no --lib-before)",
           reps);
    for (int z = 1; z >= 0; z--) {
        char w[4][80];
        printf("  %s:\n", rc_size[z].what);
        snprintf(w[0], sizeof(w[0]), "rb_cuckoo_contains, hits (%s)", z ? "small" : "large");
        snprintf(w[1], sizeof(w[1]), "rb_cuckoo_contains, misses (%s)", z ? "small" : "large");
        snprintf(w[2], sizeof(w[2]), "rb_cms_estimate (%s)", z ? "small" : "large");
        snprintf(w[3], sizeof(w[3]), "rb_cms_query by name (%s)", z ? "small" : "large");
        for (int what = 0; what < 4; what++)
            rc_row(w[what], z, what, what == 3 ? n / 10 : n, reps, &now,
                   have_old ? &old : NULL);
    }
    if (have_old)
        rc_close(&old);
    rc_close(&now);
    rb_segment_close(seg);
    rb_segment_unlink(inst);
}
