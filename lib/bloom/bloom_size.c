/*
 * bloom_size.c - Bloom filter sizing: the bits and probes a layer needs for
 * n keys at error rate p (rb_bloom_size), standard and blocked.
 *
 * What: standard layouts take the textbook formula; blocked layouts a
 * model of their uneven load (the keys per 512-bit block are Poisson),
 * bisected over a grid of bits per key (docs/design.md, "Sizing");
 * LAYOUT redisbloom RedisBloom 2.6's own arithmetic, to the bit.  Why
 * here alone: it is pure arithmetic, used by the writer for every new
 * layer (bloom_write.c) and by anyone planning a filter.  Workload: runs in
 * the daemon's event loop for every new layer, so it is kept cheap (about a
 * dozen model evaluations).
 */
#include "config.h"

#include <math.h>

#include "bloom.h"

#define BPK_STEP     1.005 /* blocked sizing: the grid of bits per key */
#define BLOCKED_MARGIN 0.95 /* blocked sizing: predicted FPR <= 0.95 p */
#define BLOCKED_MAX_BPK ((double)RB_BLOOM_BLOCKED_MAX_BPK)

double rb_bloom_fpr_formula(uint64_t m, uint32_t k, uint64_t n)
{
    if (m == 0)
        return 1.0;
    return pow(1.0 - exp(-(double)k * (double)n / (double)m), (double)k);
}

/* Predicted FPR of a blocked filter with `bpk` bits per key and k probes:
 * the number of keys in a block is Poisson(lambda = 512 / bpk), and a block
 * holding j keys answers a foreign query falsely with probability
 * (1 - (1 - 1/512)^(k j))^k. */
static double blocked_fpr(double bpk, uint32_t k)
{
    double lam = RBI_BLOCK_BITS / bpk, spread = 12.0 * sqrt(lam) + 30.0;
    double lo = floor(lam - spread), hi = ceil(lam + spread), sum = 0.0;
    double q = log1p(-1.0 / RBI_BLOCK_BITS), loglam = log(lam), logp;
    int sign;

    if (lo < 0)
        lo = 0;
    logp = -lam + lo * loglam - lgamma_r(lo + 1.0, &sign);
    for (double j = lo; j <= hi; j++) {
        sum += exp(logp) * pow(-expm1((double)k * j * q), (double)k);
        logp += loglam - log(j + 1.0);
    }
    return sum;
}

/* The k in [1, RBI_BLOOM_MAX_K] with the lowest blocked_fpr at bpk, its FPR in *fpr.
 * The FPR is unimodal in k, so a descent from any k (`from`: the best k of
 * a nearby bpk, so the descent is short) finds the optimum: downhill, else
 * uphill.  Downhill takes ties: in a crowded filter every k past a few
 * gives an FPR of exactly 1.0, a plateau above the optimum.  At small p the
 * optimum lies well below the standard layout's k: crowded blocks punish
 * every extra probe. */
static uint32_t blocked_best_k(double bpk, uint32_t from, double *fpr)
{
    uint32_t k = from, start = from;
    double f = blocked_fpr(bpk, k), g;

    while (k > 1 && (g = blocked_fpr(bpk, k - 1)) <= f) {
        k--;
        f = g;
    }
    while (k >= start && k < RBI_BLOOM_MAX_K && (g = blocked_fpr(bpk, k + 1)) < f) {
        k++;
        f = g;
    }
    *fpr = f;
    return k;
}

/* Whether bpk bits per key, with the best k, meet p with the margin; *k:
 * in, where to start looking; out, the best k. */
static int blocked_meets(double bpk, double p, uint32_t *k)
{
    double f;

    *k = blocked_best_k(bpk, *k, &f);
    return f <= BLOCKED_MARGIN * p;
}

/* Blocked: bits per key on a grid of 0.5% steps up from the standard
 * formula's, topped by BLOCKED_MAX_BPK; the first grid point whose best k
 * meets p with a 5% margin (the model treats a query's probes as
 * independent) wins.  The best FPR falls as bits per key grow, so the grid
 * is bisected (about a dozen points, each a short descent over k).  The
 * grid starts at 1/4 bit per key at least: below, even k = 1 answers
 * "maybe" with 1 - e^-4 > 0.95 (so no p < 1 is met), and the model's
 * Poisson sum, ~24 sqrt(512 / bpk) terms, would grow without bound as p
 * nears 1.  RB_EPRECISION if even BLOCKED_MAX_BPK cannot meet p. */
static int blocked_bpk(double p, double *bpk, uint32_t *k, double *fpr)
{
    double base = fmax(-log(p) / (M_LN2 * M_LN2), 0.25);
    long lo = -1, hi = lround(ceil(log(BLOCKED_MAX_BPK / base) / log(BPK_STEP)));

    *k = RBI_BLOOM_MAX_K;
    if (!blocked_meets(BLOCKED_MAX_BPK, p, k))
        return RB_EPRECISION;
    /* Invariant: grid point hi meets p, lo does not (-1: below the grid). */
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (blocked_meets(fmin(base * pow(BPK_STEP, (double)mid), BLOCKED_MAX_BPK), p, k))
            hi = mid;
        else
            lo = mid;
    }
    *bpk = fmin(base * pow(BPK_STEP, (double)hi), BLOCKED_MAX_BPK);
    *k = blocked_best_k(*bpk, *k, fpr);
    return RB_OK;
}

double rbi_bloom_rb_bpe(double p)
{
    /* RedisBloom's calc_bpe, the same operations in the same order, so the
     * same double: -(ln p / ln(2)^2), its sign dropped. */
    double bpe = -(log(p) / 0.480453013918201);

    return bpe < 0 ? -bpe : bpe;
}

/* RedisBloom 2.6's bloom_init with BLOOM_OPT_NOROUND (what its BF.RESERVE,
 * BF.ADD and BF.INSERT create): bits = trunc(n * bpe), at least 1, rounded
 * up to whole 64-bit words; k = ceil(ln 2 * bpe). */
static int redisbloom_size(uint64_t n, double p, rb_bloom_sizing_t *out)
{
    double bpe = rbi_bloom_rb_bpe(p), nb = (double)n * bpe;
    uint64_t bits;
    double k = ceil(RBI_RB_LN2 * bpe);

    if (k > RBI_BLOOM_MAX_K)
        return RB_EPRECISION;
    if (!(nb < (double)RB_BLOOM_MAX_BITS))
        return RB_ERANGE;
    bits = (uint64_t)nb;
    if (bits == 0)
        bits = 1;
    bits = (bits + 63) / 64 * 64;
    out->bits = bits;
    out->k = (uint32_t)k;
    out->bytes = bits / 8;
    out->fpr = rb_bloom_fpr_formula(bits, out->k, n);
    return RB_OK;
}

int rb_bloom_size(uint64_t n, double p, rb_bloom_layout_t layout, rb_bloom_sizing_t *out)
{
    double bpk, m, fpr = 0.0;
    uint32_t k;
    int rc;

    if (out == NULL || n == 0 || !(p > 0.0 && p < 1.0) ||
        (layout != RB_BLOOM_STANDARD && layout != RB_BLOOM_BLOCKED &&
         layout != RB_BLOOM_REDISBLOOM))
        return RB_EINVAL;
    if (layout == RB_BLOOM_REDISBLOOM)
        return redisbloom_size(n, p, out);
    if (layout == RB_BLOOM_STANDARD) {
        /* The fewest bits per key at which k probes meet p by the formula
         * (-n ln p / (ln 2)^2 for the real-valued optimum k; a little more
         * for the rounded k, or for k clamped at RBI_BLOOM_MAX_K when p < 2^-64).  k
         * comes from p, not from m: rounding m up to whole blocks only
         * lowers the FPR, and for tiny n would otherwise inflate k. */
        k = (uint32_t)lround(fmin(fmax(-log2(p), 1.0), (double)RBI_BLOOM_MAX_K));
        bpk = -(double)k / log1p(-pow(p, 1.0 / k));
    } else if ((rc = blocked_bpk(p, &bpk, &k, &fpr)) != RB_OK) {
        return rc;
    }
    m = ceil((double)n * bpk / RBI_BLOCK_BITS) * RBI_BLOCK_BITS;
    if (m > (double)RB_BLOOM_MAX_BITS)
        return RB_ERANGE;
    out->bits = (uint64_t)m;
    out->k = k;
    out->bytes = (uint64_t)m / 8;
    out->fpr = layout == RB_BLOOM_STANDARD ? rb_bloom_fpr_formula(out->bits, k, n) : fpr;
    return RB_OK;
}
