/*
 * cache-admission.c - admission policies of an LRU cache compared: admit
 * every miss, "cache on the second hit" (an aging Bloom filter), and
 * TinyLFU (an aging count-min sketch with a doorkeeper Bloom filter).
 *
 * What: replays one request trace through three LRU caches of the same
 * size.  The plain one stores every miss.  The second stores a missed
 * object only if an aging Bloom filter says it was requested before; a
 * first request is only recorded in the filter.  The third records every
 * request in a TinyLFU pair (the doorkeeper takes a key's first request,
 * the 4-bit sketch counts the rest, and both are halved / cleared every
 * W = 10 x cache counted requests: ringbloomd's ADMIT.TOUCH, done here
 * in-process) and, when full, stores a missed object only if its estimated
 * frequency beats the LRU victim's (rb_tinylfu_admit_h, on a handle opened
 * once).  All are fed the same requests in the same pass; the report
 * gives hit ratio and cache writes (insertions: disk or flash writes in
 * a CDN cache) for each, on two traces: the Zipf trace, and the same with its popularity shifted
 * half-way (a phase change: the ranks map to other objects), where a
 * frequency policy must forget the old favourites (TinyLFU's aging).
 *
 * Why: most objects of a web trace are requested once and never again
 * (one-hit wonders: about three quarters of the objects in Akamai's CDN,
 * Maggs & Sitaraman 2015).  Caching them costs a write and evicts
 * something useful.  Akamai's filter halved the disk writes and even
 * raised the hit ratio.  An exact "seen" set would be as large as the
 * request history; the filter costs a few bits per key, and aging (a ring
 * of generations, the oldest cleared when the current one is full) keeps
 * it from filling up: it remembers the last generations x capacity
 * first-seen keys.
 *
 * Workload: a deterministic trace (seeded PRNG): a share of the requests
 * goes to one-hit wonders (fresh ids, never repeated), the rest to a
 * catalogue of objects with Zipf popularity (exponent alpha); objects have
 * equal size.  The defaults finish in about a second.
 *
 * In-process, no daemon (rb_segment_create(NULL, ...): a private segment,
 * this process is the writer): a trace replay is one process, and the
 * admission test sits on the cache's miss path, where rb_bloom_add costs
 * about 100 ns in-process against a socket round trip through a daemon.
 * A prefork server whose workers share one cache would instead reserve the
 * filter in ringbloomd (BF.RESERVE name p capacity AGING 0 GENERATIONS g)
 * and make the same call with rb_conn_bf_add on a miss (after an
 * rb_bloom_contains from shared memory for the common "seen" case).
 * The filter rotates when its current generation is full (window 0:
 * capacity-driven, automatic inside rb_bloom_add); a time window would
 * make a replay depend on the wall clock.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ex_util.h"
#include "ringbloom.h"

#define PROG "cache-admission"


/* ---- trace --------------------------------------------------------------- */

/* The next value of a ex_splitmix64 stream whose state is *s. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t x = ex_splitmix64(*s);

    *s += 0x9E3779B97F4A7C15ull;
    return x;
}

static double uniform01(uint64_t *s)
{
    return (double)(next_u64(s) >> 11) * 0x1.0p-53;
}

/* The request generator: one-hit wonders get ids from `catalog` upwards,
 * each used once; the rest draw a catalogue rank from the Zipf CDF. */
typedef struct trace {
    uint64_t state;
    double  *cdf;           /* cdf[i] = P(rank <= i) */
    uint64_t catalog;
    uint64_t next_wonder;
    double   wonder_share;
} trace_t;

static int trace_init(trace_t *t, uint64_t catalog, double alpha, double wonder_share,
                      uint64_t seed)
{
    double sum = 0;

    t->cdf = malloc(catalog * sizeof(*t->cdf));
    if (t->cdf == NULL)
        return -1;
    for (uint64_t i = 0; i < catalog; i++)
        t->cdf[i] = (sum += pow((double)(i + 1), -alpha));
    for (uint64_t i = 0; i < catalog; i++)
        t->cdf[i] /= sum;
    t->state = seed;
    t->catalog = catalog;
    t->next_wonder = catalog;
    t->wonder_share = wonder_share;
    return 0;
}

static uint64_t trace_next(trace_t *t)
{
    double u;
    uint64_t lo = 0, hi = t->catalog - 1;

    if (uniform01(&t->state) < t->wonder_share)
        return t->next_wonder++;
    u = uniform01(&t->state);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (t->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- LRU cache ----------------------------------------------------------- */

/* `cap` equal-size objects: a doubly linked recency list over entry slots
 * and an open-addressing index (linear probing, backward-shift deletion)
 * from key to slot + 1. */
typedef struct lru {
    uint64_t *key;
    uint32_t *prev, *next;      /* recency list; NIL ends it */
    uint32_t *index;            /* 0 empty, else slot + 1 */
    uint32_t  mask, cap, used, head, tail;
    uint64_t  hits, misses, writes;
} lru_t;

/* The key the next put would evict, or UINT64_MAX if the cache is not
 * full. */
#define LRU_VICTIM(l) ((l)->used < (l)->cap ? UINT64_MAX : (l)->key[(l)->tail])

#define NIL UINT32_MAX

static uint32_t lru_hash(const lru_t *l, uint64_t key)
{
    return (uint32_t)ex_splitmix64(key) & l->mask;
}

static int lru_init(lru_t *l, uint32_t cap)
{
    uint32_t size = 1;

    memset(l, 0, sizeof(*l));
    while (size < 2 * cap)
        size *= 2;
    l->key = malloc(cap * sizeof(*l->key));
    l->prev = malloc(cap * sizeof(*l->prev));
    l->next = malloc(cap * sizeof(*l->next));
    l->index = calloc(size, sizeof(*l->index));
    l->mask = size - 1;
    l->cap = cap;
    l->head = l->tail = NIL;
    return l->key && l->prev && l->next && l->index ? 0 : -1;
}

static void lru_free(lru_t *l)
{
    free(l->key);
    free(l->prev);
    free(l->next);
    free(l->index);
}

/* The index position of key, or of the empty bucket where it would go. */
static uint32_t lru_find(const lru_t *l, uint64_t key)
{
    uint32_t i = lru_hash(l, key);

    while (l->index[i] != 0 && l->key[l->index[i] - 1] != key)
        i = (i + 1) & l->mask;
    return i;
}

static void lru_unlink(lru_t *l, uint32_t s)
{
    if (l->prev[s] != NIL)
        l->next[l->prev[s]] = l->next[s];
    else
        l->head = l->next[s];
    if (l->next[s] != NIL)
        l->prev[l->next[s]] = l->prev[s];
    else
        l->tail = l->prev[s];
}

static void lru_push_front(lru_t *l, uint32_t s)
{
    l->prev[s] = NIL;
    l->next[s] = l->head;
    if (l->head != NIL)
        l->prev[l->head] = s;
    l->head = s;
    if (l->tail == NIL)
        l->tail = s;
}

/* Removes index bucket i, shifting later members of its cluster back so
 * that every key stays reachable from its home bucket. */
static void lru_index_delete(lru_t *l, uint32_t i)
{
    uint32_t j = i;

    l->index[i] = 0;
    for (;;) {
        uint32_t home;

        j = (j + 1) & l->mask;
        if (l->index[j] == 0)
            return;
        home = lru_hash(l, l->key[l->index[j] - 1]);
        /* Move j back to i unless its home lies cyclically in (i, j]. */
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            l->index[i] = l->index[j];
            l->index[j] = 0;
            i = j;
        }
    }
}

/* 1 and the object becomes most recent on a hit, 0 on a miss. */
static int lru_get(lru_t *l, uint64_t key)
{
    uint32_t i = lru_find(l, key), s;

    if (l->index[i] == 0) {
        l->misses++;
        return 0;
    }
    l->hits++;
    s = l->index[i] - 1;
    lru_unlink(l, s);
    lru_push_front(l, s);
    return 1;
}

/* Stores a missed object as the most recent, evicting the least recent if
 * the cache is full: one cache write. */
static void lru_put(lru_t *l, uint64_t key)
{
    uint32_t s;

    if (l->used < l->cap) {
        s = l->used++;
    } else {
        s = l->tail;
        lru_unlink(l, s);
        lru_index_delete(l, lru_find(l, l->key[s]));
    }
    l->key[s] = key;
    l->index[lru_find(l, key)] = s + 1;
    lru_push_front(l, s);
    l->writes++;
}

/* ---- options ------------------------------------------------------------- */

typedef struct options {
    uint64_t requests, catalog, cache, generations, gen_capacity, seed;
    double alpha, wonders, error_rate;
} options_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cache-admission [options]\n"
            "Replays a Zipf trace with one-hit wonders, then the same with its popularity\n"
            "shifted half-way, through LRU caches admitting every miss, on the second hit\n"
            "(an aging Bloom filter) and by TinyLFU (an aging count-min sketch).\n"
            "  -r, --requests N      requests in the trace (default 3000000)\n"
            "  -k, --catalog N       objects with Zipf popularity (default 100000)\n"
            "  -a, --alpha A         Zipf exponent (default 0.8)\n"
            "  -o, --one-hit F       share of requests to one-hit wonders (default 0.1)\n"
            "  -c, --cache N         cache size in objects (default 10000)\n"
            "  -g, --generations N   filter generations, 2..%d (default 4)\n"
            "  -G, --gen-capacity N  keys per generation (default 3 x --cache)\n"
            "  -e, --error-rate P    the filter's false-positive rate (default 0.01)\n"
            "  -s, --seed N          seed of the trace (default 1)\n"
            "  -h, --help            this text\n",
            RB_BLOOM_MAX_LAYERS);
}

static int parse_options(int argc, char **argv, options_t *o)
{
    static const struct option longopts[] = {
        { "requests", required_argument, NULL, 'r' },
        { "catalog", required_argument, NULL, 'k' },
        { "alpha", required_argument, NULL, 'a' },
        { "one-hit", required_argument, NULL, 'o' },
        { "cache", required_argument, NULL, 'c' },
        { "generations", required_argument, NULL, 'g' },
        { "gen-capacity", required_argument, NULL, 'G' },
        { "error-rate", required_argument, NULL, 'e' },
        { "seed", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int opt, bad = 0;

    *o = (options_t){ .requests = 3000000, .catalog = 100000, .cache = 10000, .generations = 4,
                      .seed = 1, .alpha = 0.8, .wonders = 0.10, .error_rate = 0.01 };
    while ((opt = getopt_long(argc, argv, "r:k:a:o:c:g:G:e:s:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'r': bad |= ex_parse_u64("--requests", optarg, 1, 1ull << 36, &o->requests); break;
        case 'k': bad |= ex_parse_u64("--catalog", optarg, 1, 1ull << 28, &o->catalog); break;
        case 'a': bad |= ex_parse_double("--alpha", optarg, 0, 4, &o->alpha); break;
        case 'o': bad |= ex_parse_double("--one-hit", optarg, 0, 1, &o->wonders); break;
        case 'c': bad |= ex_parse_u64("--cache", optarg, 1, 1u << 30, &o->cache); break;
        case 'g':
            bad |= ex_parse_u64("--generations", optarg, 2, RB_BLOOM_MAX_LAYERS, &o->generations);
            break;
        case 'G':
            bad |= ex_parse_u64("--gen-capacity", optarg, 1, 1ull << 36, &o->gen_capacity);
            break;
        case 'e': bad |= ex_parse_double("--error-rate", optarg, 1e-9, 0.5, &o->error_rate); break;
        case 's': bad |= ex_parse_u64("--seed", optarg, 0, UINT64_MAX, &o->seed); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -1;
    }
    if (o->gen_capacity == 0)
        o->gen_capacity = 3 * o->cache;
    return bad ? -1 : 0;
}

/* ---- the replay ---------------------------------------------------------- */

static void print_row(const char *name, const lru_t *l, uint64_t requests)
{
    printf("  %-28s %9.2f%% %12" PRIu64 " %12.3f\n", name,
           100.0 * (double)l->hits / (double)requests, l->writes,
           (double)l->writes / (double)requests);
}

/* The three caches' policies' state, in a private segment. */
typedef struct policies {
    rb_segment_t *seg;
    rb_bloom_t *bf;       /* second hit: the aging filter */
    rb_bloom_t *dk;       /* TinyLFU: the doorkeeper "tlfu:dk" of sketch "tlfu" */
    rb_tinylfu_t *admit;  /* ... the pair's admission handle (no lookup per miss) */
    lru_t plain, second, tlfu;
} policies_t;

/* One request recorded in the TinyLFU pair, as ADMIT.TOUCH does: a key
 * the doorkeeper did not hold goes there; one it held is counted in the
 * sketch, and a count that halved the sketch clears the doorkeeper. */
static int tlfu_touch(policies_t *p, uint64_t key)
{
    rb_key_t k = { &key, sizeof(key) };
    rb_cms_info_t a, b;
    uint64_t one = 1;
    int rc = rb_bloom_add(p->dk, &key, sizeof(key));

    if (rc != 0)
        return rc < 0 ? rc : RB_OK;
    if ((rc = rb_cms_info(p->seg, "tlfu", 4, &a)) != RB_OK ||
        (rc = rb_cms_incrby(p->seg, "tlfu", 4, &k, &one, 1, NULL)) != RB_OK ||
        (rc = rb_cms_info(p->seg, "tlfu", 4, &b)) != RB_OK)
        return rc;
    return a.agings != b.agings ? rb_bloom_reset(p->dk) : RB_OK;
}

/* Makes the private segment, the second-hit filter and the TinyLFU pair
 * (secrets from the seed, so that a replay is repeatable down to its
 * false positives; a server keeps the default, secret == NULL: random,
 * which stops clients from crafting keys that collide). */
static int policies_make(policies_t *p, const options_t *o)
{
    rb_segment_opts_t so = { .max_filters = 4 };
    unsigned char secret[RB_BLOOM_SECRET_BYTES];
    uint64_t sstate = ~o->seed;
    rb_bloom_params_t bp;
    rb_cms_params_t cp;
    int rc;

    for (size_t i = 0; i < sizeof(secret); i += 8) {
        uint64_t x = next_u64(&sstate);
        memcpy(secret + i, &x, 8);
    }
    bp = (rb_bloom_params_t){ .capacity = o->gen_capacity, .error_rate = o->error_rate,
                              .layout = RB_BLOOM_BLOCKED, .flags = RB_BLOOM_AGING,
                              .secret = secret, .generations = (uint32_t)o->generations,
                              .window = 0 };
    if ((rc = rb_segment_create(NULL, &so, &p->seg)) != RB_OK ||
        (rc = rb_bloom_reserve(p->seg, "admit", 5, &bp)) != RB_OK ||
        (rc = rb_bloom_open(p->seg, "admit", 5, &p->bf)) != RB_OK)
        return rc;
    bp = (rb_bloom_params_t){ .capacity = 10 * o->cache, .error_rate = o->error_rate,
                              .layout = RB_BLOOM_BLOCKED, .secret = secret };
    cp = (rb_cms_params_t){ .width = o->cache * 2 < 64 ? 64 : (uint32_t)o->cache * 2,
                            .depth = 4, .small = 1, .aging = 10 * o->cache, .secret = secret };
    if ((rc = rb_bloom_reserve(p->seg, "tlfu" RB_TINYLFU_DOORKEEPER_SUFFIX, 7, &bp)) != RB_OK ||
        (rc = rb_bloom_open(p->seg, "tlfu" RB_TINYLFU_DOORKEEPER_SUFFIX, 7, &p->dk)) != RB_OK ||
        (rc = rb_cms_create(p->seg, "tlfu", 4, &cp)) != RB_OK)
        return rc;
    return rb_tinylfu_open(p->seg, "tlfu", 4, &p->admit);
}

static void policies_free(policies_t *p)
{
    rb_bloom_close(p->bf);
    rb_bloom_close(p->dk);
    rb_tinylfu_close(p->admit);
    rb_segment_close(p->seg);
    lru_free(&p->plain);
    lru_free(&p->second);
    lru_free(&p->tlfu);
}

/* One request through the three caches. */
static int request(policies_t *p, uint64_t key)
{
    int rc, admit = 1;

    if (!lru_get(&p->plain, key))
        lru_put(&p->plain, key);
    if (!lru_get(&p->second, key)) {
        /* Test-and-add: 1 = first request in the filter's memory (only
         * record it), 0 = seen before: admit. */
        if ((rc = rb_bloom_add(p->bf, &key, sizeof(key))) < 0)
            return rc;
        if (rc == 0)
            lru_put(&p->second, key);
    }
    if ((rc = tlfu_touch(p, key)) != RB_OK)
        return rc;
    if (!lru_get(&p->tlfu, key)) {
        uint64_t victim = LRU_VICTIM(&p->tlfu);
        if (victim != UINT64_MAX &&
            (rc = rb_tinylfu_admit_h(p->admit, &key, sizeof(key), &victim, sizeof(victim),
                                     &admit)) != RB_OK)
            return rc;
        if (admit)
            lru_put(&p->tlfu, key);
    }
    return RB_OK;
}

/* Replays the trace (shifted: from half-way on, catalogue rank i is
 * object (i + catalog / 2) mod catalog) and reports; 0, or -1. */
static int replay(const options_t *o, int shifted)
{
    policies_t p = { 0 };
    trace_t t = { 0 };
    uint32_t *seen = NULL;      /* requests per catalogue object, for the trace summary */
    uint64_t distinct, once;
    double t0, secs, saved;
    int rc = RB_OK, status = -1;

    if (trace_init(&t, o->catalog, o->alpha, o->wonders, o->seed) != 0 ||
        lru_init(&p.plain, (uint32_t)o->cache) != 0 ||
        lru_init(&p.second, (uint32_t)o->cache) != 0 ||
        lru_init(&p.tlfu, (uint32_t)o->cache) != 0 ||
        (seen = calloc(o->catalog, sizeof(*seen))) == NULL) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    if ((rc = policies_make(&p, o)) != RB_OK) {
        fprintf(stderr, PROG ": filters: %s\n", rb_strerror(rc));
        goto out;
    }
    t0 = ex_now_s();
    for (uint64_t r = 0; r < o->requests && rc == RB_OK; r++) {
        uint64_t key = trace_next(&t);
        if (key < o->catalog && shifted && r >= o->requests / 2)
            key = (key + o->catalog / 2) % o->catalog;
        if (key < o->catalog)
            seen[key]++;
        rc = request(&p, key);
    }
    secs = ex_now_s() - t0;
    if (rc != RB_OK) {
        fprintf(stderr, PROG ": admission: %s\n", rb_strerror(rc));
        goto out;
    }
    distinct = once = t.next_wonder - o->catalog;
    for (uint64_t i = 0; i < o->catalog; i++) {
        distinct += seen[i] != 0;
        once += seen[i] == 1;
    }
    printf("\ntrace: %s\n", shifted ? "shifted (popularity moves half-way)" : "zipf");
    printf("  %" PRIu64 " distinct objects, %.1f%% of them requested only once\n", distinct,
           100.0 * (double)once / (double)distinct);
    printf("  %-28s %10s %12s %12s\n", "policy", "hit ratio", "cache writes", "writes/req");
    print_row("LRU, admit every miss", &p.plain, o->requests);
    print_row("LRU, admit on second hit", &p.second, o->requests);
    print_row("LRU, TinyLFU admission", &p.tlfu, o->requests);
    saved = 1.0 - (double)p.second.writes / (double)p.plain.writes;
    printf("writes saved: %.1f%%; hit ratio %.2f%% -> %.2f%% (%+.2f points); "
           "replayed in %.2f s\n", 100 * saved, 100.0 * (double)p.plain.hits / (double)o->requests,
           100.0 * (double)p.second.hits / (double)o->requests,
           100.0 * ((double)p.second.hits - (double)p.plain.hits) / (double)o->requests, secs);
    status = 0;
out:
    policies_free(&p);
    free(seen);
    free(t.cdf);
    return status;
}

int main(int argc, char **argv)
{
    options_t o;

    ex_init(PROG);
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    printf(PROG ": %" PRIu64 " requests (seed %" PRIu64 "): Zipf alpha %.2f over %" PRIu64
           " objects, %.0f%% to one-hit wonders\n", o.requests, o.seed, o.alpha, o.catalog,
           100 * o.wonders);
    printf("  LRU caches of %" PRIu64 " objects\n", o.cache);
    printf("  second hit: aging Bloom filter, %" PRIu64 " generations of %" PRIu64
           " keys, p = %g\n", o.generations, o.gen_capacity, o.error_rate);
    printf("  TinyLFU: 4-bit sketch, 4 rows of %" PRIu64 " counters, halved every %" PRIu64
           " counted requests; doorkeeper p = %g\n", o.cache * 2 < 64 ? 64 : o.cache * 2,
           10 * o.cache, o.error_rate);
    return replay(&o, 0) == 0 && replay(&o, 1) == 0 ? 0 : 1;
}
