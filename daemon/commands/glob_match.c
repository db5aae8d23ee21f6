/*
 * glob_match.c - Redis's glob (stringmatchlen) as a compiled token list and a
 * greedy matcher.  Redis interprets the pattern while it matches: a class
 * is read again for every byte it is tried against and every star tries
 * every suffix recursively, so a long class or many stars cost
 * pattern x name per attempt (issue 25: 42 s for one KEYS).  Here the
 * pattern is read once (rbd_glob_compile, O(pattern)) and every token is a
 * 256-bit set, so a byte is tested in O(1); the match keeps one backtrack
 * point, the last star, which is what Redis's skipLongerMatches amounts to
 * (once the rest after a star matched nowhere, no earlier star can help),
 * so it answers as Redis does in O(tokens x name).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "glob_match.h"

#define GLOB_DEPTH 1000   /* Redis's nesting limit: star groups past it fail */

static void set_add(uint64_t *set, unsigned c)
{
    set[c / 64] |= 1ULL << (c % 64);
}

static int set_has(const uint64_t *set, unsigned char c)
{
    return (int)((set[c / 64] >> (c % 64)) & 1);
}

/* The class at *pp (its '['), *plp bytes left, into set: read as Redis
 * reads it (an escape, ']' closes, "a-z" either way round; no ']': the
 * class ends with the pattern; "[a-]" is the range a..']').  Leaves *pp at
 * its last byte. */
static void class_parse(const unsigned char **pp, size_t *plp, uint64_t *set)
{
    const unsigned char *p = *pp + 1;
    size_t pl = *plp - 1;
    int neg = pl > 0 && p[0] == '^';

    memset(set, 0, 4 * sizeof(*set));
    if (neg) {
        p++;
        pl--;
    }
    for (;; p++, pl--) {
        if (pl == 0) {
            p--;
            pl++;
            break;
        }
        if (p[0] == '\\' && pl >= 2) {
            p++;
            pl--;
            set_add(set, p[0]);
        } else if (p[0] == ']') {
            break;
        } else if (pl >= 3 && p[1] == '-') {
            unsigned lo = p[0], hi = p[2];
            if (lo > hi) {
                unsigned t = lo;
                lo = hi;
                hi = t;
            }
            for (unsigned c = lo; c <= hi; c++)
                set_add(set, c);
            p += 2;
            pl -= 2;
        } else {
            set_add(set, p[0]);
        }
    }
    if (neg)
        for (int i = 0; i < 4; i++)
            set[i] = ~set[i];
    *pp = p;
    *plp = pl;
}

int rbd_glob_compile(rbd_glob_t *g, const char *pattern, size_t pl, size_t maxlen)
{
    const unsigned char *p = (const unsigned char *)pattern;
    size_t fixed = 0;

    /* At most maxlen non-star tokens, each with a star group before it,
     * and one after. */
    memset(g, 0, sizeof(*g));
    g->maxlen = maxlen;
    if ((g->tok = calloc(2 * maxlen + 2, sizeof(*g->tok))) == NULL)
        return -1;
    for (; pl > 0; p++, pl--) {
        rbd_glob_tok_t *t = &g->tok[g->n];
        if (p[0] == '*') {
            if (g->n == 0 || !g->tok[g->n - 1].star) {
                t->star = 1;
                g->n++;
            }
            continue;
        }
        if (fixed == maxlen) {
            g->never = 1;   /* no name that long: the rest need not be read */
            break;
        }
        if (p[0] == '[') {
            class_parse(&p, &pl, t->set);
        } else if (p[0] == '?') {
            memset(t->set, 0xff, sizeof(t->set));
        } else {
            if (p[0] == '\\' && pl >= 2) {
                p++;
                pl--;
            }
            set_add(t->set, p[0]);
        }
        fixed++;
        g->n++;
    }
    for (size_t i = g->n, after = 0; i-- > 0;) {
        after += !g->tok[i].star;
        g->tok[i].fixed_after = after;
    }
    return 0;
}

void rbd_glob_free(rbd_glob_t *g)
{
    free(g->tok);
    g->tok = NULL;
    g->n = 0;
}

int rbd_glob_match(const rbd_glob_t *g, const char *str, size_t sl)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t ti = 0, si = 0, star = SIZE_MAX, star_s = 0;
    unsigned groups = 0;

    if (sl == 0)
        return g->n == 0 && !g->never;
    if (g->never || (g->n > 0 && g->tok[0].fixed_after > sl))
        return 0;
    while (si < sl) {
        if (ti < g->n && g->tok[ti].star) {
            if (ti + 1 == g->n)
                return 1;
            if (++groups > GLOB_DEPTH)
                return 0;
            star = ti++;
            star_s = si;
        } else if (ti < g->n && set_has(g->tok[ti].set, s[si])) {
            ti++;
            si++;
        } else {
            /* Give the last star one more byte, if what follows it can
             * still fit in the rest of the name. */
            if (star == SIZE_MAX || g->tok[star + 1].fixed_after > sl - ++star_s)
                return 0;
            ti = star + 1;
            si = star_s;
        }
    }
    while (ti < g->n && g->tok[ti].star)
        ti++;
    return ti == g->n;
}
