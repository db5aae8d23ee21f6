/*
 * seed-tables.c - the teaching documents' tables, computed by libringbloom.
 *
 *   1. keys moved when a node joins: hash % N against the ring (4->5, 8->9);
 *   2. skew (max - min share of keys) against virtual nodes per node;
 *   3. measured false-positive rate against (1 - e^(-kn/m))^k as a filter
 *      fills from 10% to 200% of its capacity;
 *   4. sizing for n = 10^6, 10^7 at p = 1%, 0.1%;
 *   5. the maglev table mode beside the xxh3 ring: keys moved when one
 *      node joins or leaves, and skew (max / mean keys per node).
 *
 * Every figure that has a reference (the seed's number or the formula) is
 * printed beside it with a tolerance and ok/FAIL; --check makes a FAIL the
 * exit status.  Rings are shown in both seed mode (the document's hash_str,
 * kept bit-exact, weaknesses included) and xxh3 mode: the seed's numbers
 * are the xxh3 column's targets, and the seed column shows why a real hash
 * is needed.  --data DIR writes the series for `make plots`.
 *
 *   usage: seed-tables [--check] [--data DIR]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringbloom.h"

#define NKEYS 10000

static int checks, failures;
static FILE *moved_dat, *skew_dat, *fpr_dat;

static void verdict(double got, double want, double tol)
{
    int ok = fabs(got - want) <= tol;
    checks++;
    failures += !ok;
    printf("  %-4s", ok ? "ok" : "FAIL");
}

static uint64_t seed_hash(const char *s)
{
    /* The seed's hash_key(key) = hash_str(key, salt=0), for hash % N. */
    uint64_t h = 1;
    for (; *s; s++)
        h = h * 31 + (unsigned char)*s;
    return h;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "seed-tables: %s: %s\n", what, rb_strerror(rc));
    exit(1);
}

/* Owner index of every key "key0".. of nkeys on a ring of nodes[0..n)
 * (names), in `mode`. */
static void owners_of(rb_ring_mode_t mode, uint32_t replicas, char names[][48], int n, int *out,
                      int nkeys)
{
    rb_segment_t *seg;
    rb_ring_t *ring;
    char key[32];
    int rc;

    if ((rc = rb_ring_new(mode, replicas, &ring)) != RB_OK)
        die("ring", rc);
    for (int i = 0; i < n; i++)
        if ((rc = rb_ring_add(ring, names[i], strlen(names[i]), 1)) != RB_OK)
            die("add", rc);
    if ((rc = rb_segment_create(NULL, NULL, &seg)) != RB_OK ||
        (rc = rb_ring_publish(ring, seg)) != RB_OK)
        die("publish", rc);
    for (int k = 0; k < nkeys; k++) {
        rb_node_t node;
        snprintf(key, sizeof(key), "key%d", k);
        if ((rc = rb_ring_lookup(seg, key, strlen(key), &node)) != RB_OK)
            die("lookup", rc);
        out[k] = -1;
        for (int i = 0; i < n; i++)
            if (strcmp(node.name, names[i]) == 0)
                out[k] = i;
    }
    rb_segment_close(seg);
    rb_ring_free(ring);
}

static void owners(rb_ring_mode_t mode, uint32_t replicas, char names[][48], int n, int *out)
{
    owners_of(mode, replicas, names, n, out, NKEYS);
}

static double ring_moved(rb_ring_mode_t mode, char names[][48], int from)
{
    static int a[NKEYS], b[NKEYS];
    int moved = 0;

    owners(mode, 100, names, from, a);
    owners(mode, 100, names, from + 1, b);
    for (int k = 0; k < NKEYS; k++)
        moved += a[k] != b[k];
    return (double)moved / NKEYS;
}

static double modulo_moved(int from)
{
    char key[32];
    int moved = 0;

    for (int k = 0; k < NKEYS; k++) {
        uint64_t h;
        snprintf(key, sizeof(key), "key%d", k);
        h = seed_hash(key);
        moved += h % (uint64_t)from != h % (uint64_t)(from + 1);
    }
    return (double)moved / NKEYS;
}

static void table_moved(void)
{
    static char hosts[9][48], shorts[9][48];

    for (int i = 0; i < 9; i++) {
        snprintf(hosts[i], sizeof(hosts[i]), "cache-%02d.pool.example.net", i);
        snprintf(shorts[i], sizeof(shorts[i]), "n%d", i);
    }
    printf("1. Keys moved when a node joins (%d keys \"key0\"..; 100 vnodes per node)\n\n", NKEYS);
    printf("  %-6s %-12s %-10s %-12s %-12s %-14s\n", "nodes", "hash % N", "seed says",
           "ring xxh3", "seed says", "ring seed mode");
    for (int from = 4; from <= 8; from += 4) {
        double mod = modulo_moved(from), x = ring_moved(RB_RING_XXH3, hosts, from);
        double sd = ring_moved(RB_RING_SEED, hosts, from);
        double want_mod = (double)from / (from + 1), want_ring = 1.0 / (from + 1);
        printf("  %d->%-3d %-12.3f %-10.3f %-12.3f %-12.3f %-14.3f\n", from, from + 1, mod,
               want_mod, x, want_ring, sd);
        printf("    hash %% N within 0.03 of %.3f:", want_mod);
        verdict(mod, want_mod, 0.03);
        printf("   ring xxh3 within 0.03 of %.3f:", want_ring);
        verdict(x, want_ring, 0.03);
        printf("\n");
        if (moved_dat)
            fprintf(moved_dat, "\"%d->%d\" %.4f %.4f %.4f\n", from, from + 1, mod, x, sd);
    }
    {
        /* BRIEF.md's measured fact: short names collapse in seed mode. */
        static int a[NKEYS], b[NKEYS];
        int one = 1, moved = 0;
        owners(RB_RING_SEED, 100, shorts, 4, a);
        owners(RB_RING_SEED, 100, shorts, 5, b);
        for (int k = 0; k < NKEYS; k++) {
            one &= a[k] == a[0];
            moved += a[k] != b[k];
        }
        printf("  seed mode, names n0..n3: all keys on one node: %s, moved on adding n4: %.3f\n",
               one ? "yes" : "no", (double)moved / NKEYS);
        printf("    (BRIEF.md: every key on one node, 0%% moved):");
        verdict((double)one, 1.0, 0.0);
        verdict((double)moved / NKEYS, 0.0, 0.0);
        printf("\n\n");
    }
}

static double skew(rb_ring_mode_t mode, uint32_t replicas, char names[][48], int n)
{
    static int o[NKEYS];
    int count[16] = { 0 }, mx = 0, mn = NKEYS;

    owners(mode, replicas, names, n, o);
    for (int k = 0; k < NKEYS; k++)
        count[o[k]]++;
    for (int i = 0; i < n; i++) {
        mx = count[i] > mx ? count[i] : mx;
        mn = count[i] < mn ? count[i] : mn;
    }
    return (double)(mx - mn) / NKEYS;
}

static void table_skew(void)
{
    static const uint32_t reps[] = { 1, 10, 100, 200 };
    static char hosts[4][48];

    for (int i = 0; i < 4; i++)
        snprintf(hosts[i], sizeof(hosts[i]), "cache-%02d.pool.example.net", i);
    printf("2. Skew: max - min share of %d keys over 4 nodes, by virtual nodes per node\n\n",
           NKEYS);
    printf("  %-9s %-10s %-10s %s\n", "replicas", "ring xxh3", "seed mode", "seed says");
    for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
        double x = skew(RB_RING_XXH3, reps[i], hosts, 4), s = skew(RB_RING_SEED, reps[i], hosts, 4);
        printf("  %-9u %-10.3f %-10.3f %s", reps[i], x, s,
               reps[i] == 1 ? "tens of %  (>= 0.10)" : reps[i] >= 100 ? "a few %   (<= 0.06)" : "");
        if (reps[i] == 1)
            verdict(x >= 0.10, 1.0, 0.0);
        else if (reps[i] >= 100)
            verdict(x <= 0.06, 1.0, 0.0);
        printf("\n");
        if (skew_dat)
            fprintf(skew_dat, "%u %.4f %.4f\n", reps[i], x, s);
    }
    printf("\n");
}

static void table_fpr(void)
{
    static const double fills[] = { 0.10, 0.25, 0.50, 0.75, 1.00, 1.25, 1.50, 2.00 };
    rb_bloom_params_t p = { .capacity = 100000, .error_rate = 0.01,
                            .layout = RB_BLOOM_STANDARD, .flags = RB_BLOOM_NONSCALING };
    const unsigned absent = 200000;
    rb_bloom_stat_t st;
    rb_segment_t *seg;
    rb_bloom_t *bf;
    uint64_t added = 0;
    char key[48];
    int rc;

    if ((rc = rb_segment_create(NULL, NULL, &seg)) != RB_OK)
        die("segment", rc);
    /* Over-filling on purpose, which is the document's point: a classic
     * filter that never refuses a key. */
    p.flags |= RB_BLOOM_OVERFILL;
    if ((rc = rb_bloom_reserve(seg, "fill", 4, &p)) != RB_OK ||
        (rc = rb_bloom_open(seg, "fill", 4, &bf)) != RB_OK)
        die("filter", rc);
    printf("3. False positives as a filter fills (sized for n = 100000, p = 1%%, standard layout;\n"
           "   %u absent keys per row; formula (1 - e^(-kn/m))^k with its m and k)\n\n", absent);
    printf("  %-6s %-9s %-10s %-10s %-10s\n", "fill", "keys", "measured", "formula", "from bits");
    for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++) {
        uint64_t target = (uint64_t)(fills[f] * 100000), fp = 0;
        double formula;
        for (; added < target; added++) {
            snprintf(key, sizeof(key), "https://in.example/%llu", (unsigned long long)added);
            if ((rc = rb_bloom_add(bf, key, strlen(key))) < 0)
                die("add", rc);
        }
        for (unsigned i = 0; i < absent; i++) {
            snprintf(key, sizeof(key), "https://out.example/%u", i);
            fp += (uint64_t)rb_bloom_contains(bf, key, strlen(key));
        }
        if ((rc = rb_bloom_stat(bf, &st)) != RB_OK)
            die("stat", rc);
        formula = rb_bloom_fpr_formula(st.bits, st.k, added);
        char pct[16];
        snprintf(pct, sizeof(pct), "%.0f%%", fills[f] * 100);
        printf("  %-6s %-9llu %-10.5f %-10.5f %-10.5f", pct, (unsigned long long)added,
               (double)fp / absent, formula, st.est_fpr);
        verdict((double)fp / absent, formula, 0.15 * formula + 40.0 / absent);
        printf("\n");
        if (fpr_dat)
            fprintf(fpr_dat, "%.2f %.6f %.6f %.6f\n", fills[f], (double)fp / absent, formula,
                    st.est_fpr);
    }
    printf("\n");
    rb_bloom_close(bf);
    rb_segment_close(seg);
}

static void table_sizing(void)
{
    static const struct {
        uint64_t n;
        double p;
        int k;
        double bpk, mb;
    } rows[] = { { 1000000, 0.01, 7, 9.6, 1.2 }, { 10000000, 0.01, 7, 9.6, 12.0 },
                 { 1000000, 0.001, 10, 14.4, 1.8 }, { 10000000, 0.001, 10, 14.4, 18.0 } };

    printf("4. Sizing: the seed's m = -n ln p / (ln 2)^2, k = round(m/n ln 2); ours the smallest\n"
           "   m with (1 - e^(-kn/m))^k <= p for that k\n\n");
    printf("  %-10s %-6s %-4s %-9s %-9s %s\n", "n", "p", "k", "bits/key", "MB", "seed says");
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        rb_bloom_sizing_t sz;
        double bpk, mb;
        int rc = rb_bloom_size(rows[i].n, rows[i].p, RB_BLOOM_STANDARD, &sz);
        if (rc != RB_OK)
            die("size", rc);
        bpk = (double)sz.bits / (double)rows[i].n;
        mb = (double)sz.bytes / 1e6;
        printf("  %-10llu %-6g %-4u %-9.2f %-9.2f k~%d, ~%.1f bits/key, ~%.1f MB",
               (unsigned long long)rows[i].n, rows[i].p, sz.k, bpk, mb, rows[i].k, rows[i].bpk,
               rows[i].mb);
        verdict(sz.k, rows[i].k, 0);
        verdict(bpk, rows[i].bpk, 0.05);
        verdict(mb, rows[i].mb, 0.05 * rows[i].mb);
        printf("\n");
    }
    printf("\n");
}

static FILE *open_dat(const char *dir, const char *name)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    return f;
}

#define TABLE_KEYS 100000

/* The owners of TABLE_KEYS keys on names[0..n) without node `drop` (-1:
 * none), as indices into names. */
static void owners_without(rb_ring_mode_t mode, char names[][48], int n, int drop, int *out)
{
    static char sub[128][48];
    int map[128], m = 0;

    for (int i = 0; i < n; i++) {
        if (i == drop)
            continue;
        memcpy(sub[m], names[i], 48);
        map[m++] = i;
    }
    owners_of(mode, 100, sub, m, out, TABLE_KEYS);
    for (int k = 0; k < TABLE_KEYS; k++)
        out[k] = out[k] >= 0 ? map[out[k]] : -1;
}

/* Fraction of keys whose owner differs between a and b; skew of a. */
static double moved_frac(const int *a, const int *b)
{
    int moved = 0;

    for (int k = 0; k < TABLE_KEYS; k++)
        moved += a[k] != b[k];
    return (double)moved / TABLE_KEYS;
}

static double max_over_mean(const int *o, int n)
{
    static int count[128];
    int mx = 0;

    memset(count, 0, sizeof(count));
    for (int k = 0; k < TABLE_KEYS; k++)
        count[o[k]]++;
    for (int i = 0; i < n; i++)
        mx = count[i] > mx ? count[i] : mx;
    return mx / ((double)TABLE_KEYS / n);
}

/* Maglev (automatic table: 65537 slots up to 655 nodes) and the xxh3 ring
 * (100 vnodes per node) on N nodes: one node joins (N -> N + 1, the last
 * in name order) or leaves (N -> N - 1, the middle one).  Printed, not
 * checked: Maglev trades a little extra movement for its even spread. */
static void table_maglev(void)
{
    static const int sizes[] = { 10, 100 };
    static char hosts[128][48];
    static int base[TABLE_KEYS], other[TABLE_KEYS];
    static const rb_ring_mode_t modes[] = { RB_RING_XXH3, RB_RING_MAGLEV };

    for (int i = 0; i < 128; i++)
        snprintf(hosts[i], sizeof(hosts[i]), "cache-%03d.pool.example.net", i);
    printf("5. Maglev beside the xxh3 ring: keys moved (%d keys) and skew (max / mean keys "
           "per node)\n\n", TABLE_KEYS);
    printf("  %-6s %-7s %-11s %-11s %-11s %-11s %s\n", "nodes", "mode", "join moved", "(ideal)",
           "leave moved", "(ideal)", "skew");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s];
        for (size_t m = 0; m < 2; m++) {
            double join, leave, sk;
            owners_without(modes[m], hosts, n, -1, base);
            sk = max_over_mean(base, n);
            owners_without(modes[m], hosts, n + 1, -1, other);
            join = moved_frac(base, other);
            owners_without(modes[m], hosts, n, n / 2, other);
            leave = moved_frac(base, other);
            printf("  %-6d %-7s %-11.4f %-11.4f %-11.4f %-11.4f %.3f\n", n,
                   rb_ring_mode_name(modes[m]), join, 1.0 / (n + 1), leave, 1.0 / n, sk);
        }
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    int check = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0) {
            check = 1;
        } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
            moved_dat = open_dat(argv[i + 1], "moved.dat");
            skew_dat = open_dat(argv[i + 1], "skew.dat");
            fpr_dat = open_dat(argv[++i], "fpr.dat");
        } else {
            fprintf(stderr, "usage: seed-tables [--check] [--data DIR]\n");
            return 2;
        }
    }
    table_moved();
    table_skew();
    table_fpr();
    table_sizing();
    table_maglev();
    printf("Checks: %d, Failures: %d, Errors: 0\n", checks, failures);
    if (moved_dat) {
        fclose(moved_dat);
        fclose(skew_dat);
        fclose(fpr_dat);
    }
    return check && failures ? 1 : 0;
}
