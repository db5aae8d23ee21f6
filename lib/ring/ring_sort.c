/*
 * ring_sort.c - sorting the model's points by (position, tie), the order
 * of the published table: a least-significant-digit radix sort on the
 * position (stable), then each run of equal positions put in tie order.
 *
 * Why not qsort: a 100,000-node ring has 1.6 * 10^7 points, and qsort's
 * merge sort through a comparison function took ~7 s of the ~12 s it
 * took to build and publish one; six counting passes of 11 bits take a
 * fraction of that.  Small tables keep qsort.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define RADIX_BITS  11
#define RADIX_SIZE  (1u << RADIX_BITS)
#define RADIX_PASSES ((64 + RADIX_BITS - 1) / RADIX_BITS)
#define SMALL_SORT  4096   /* below this many points, qsort */

int rbi_ring_point_cmp(const void *a, const void *b)
{
    const rbi_ring_point_t *x = a, *y = b;

    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->tie < y->tie ? -1 : x->tie > y->tie;
}

/* Points sorted by position only (stable) -> by (position, tie): each run
 * of equal positions (rare: a 64-bit collision, or the compatible modes'
 * 32-bit positions) sorted by tie, by insertion. */
static void order_ties(rbi_ring_point_t *p, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        rbi_ring_point_t x = p[i];
        size_t j = i;
        while (j > 0 && p[j - 1].pos == x.pos && p[j - 1].tie > x.tie) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

void rbi_ring_sort_points(rbi_ring_point_t *p, size_t n)
{
    rbi_ring_point_t *tmp, *src = p, *dst;
    size_t *count;

    if (n < SMALL_SORT || (tmp = malloc(n * sizeof(*tmp))) == NULL) {
        qsort(p, n, sizeof(*p), rbi_ring_point_cmp);
        return;
    }
    count = malloc(RADIX_SIZE * sizeof(*count));
    if (count == NULL) {
        free(tmp);
        qsort(p, n, sizeof(*p), rbi_ring_point_cmp);
        return;
    }
    dst = tmp;
    for (unsigned pass = 0; pass < RADIX_PASSES; pass++) {
        unsigned shift = pass * RADIX_BITS;
        size_t sum = 0;
        rbi_ring_point_t *t;
        memset(count, 0, RADIX_SIZE * sizeof(*count));
        for (size_t i = 0; i < n; i++)
            count[(src[i].pos >> shift) & (RADIX_SIZE - 1)]++;
        for (size_t d = 0; d < RADIX_SIZE; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].pos >> shift) & (RADIX_SIZE - 1)]++] = src[i];
        t = src;
        src = dst;
        dst = t;
    }
    if (src != p)
        memcpy(p, src, n * sizeof(*p));
    order_ties(p, n);
    free(count);
    free(tmp);
}
