/*
 * glob_match.h - Redis's glob patterns (stringmatchlen in its util.c: *, ?,
 * [abc], [^a-z], ranges either way round, \ escapes, on bytes), compiled
 * once per command into a token list so that matching a name costs
 * O(tokens x name) whatever the pattern holds (glob_match.c).  KEYS and SCAN
 * MATCH use it (cmd_keys.c).
 */
#ifndef RBD_GLOB_H
#define RBD_GLOB_H

#include <stddef.h>
#include <stdint.h>

/* One token: a star (any run of bytes), or the set of the 256 bytes that
 * one byte of the name may be ('x', '?', a class: all the same here). */
typedef struct rbd_glob_tok {
    uint64_t set[4];
    size_t fixed_after;    /* non-star tokens from this one to the end */
    int star;
} rbd_glob_tok_t;

typedef struct rbd_glob {
    rbd_glob_tok_t *tok;   /* consecutive stars are one token */
    size_t n;
    size_t maxlen;         /* the longest name it will be asked to match */
    int never;             /* more non-star tokens than maxlen: matches
                              nothing (tok not kept) */
} rbd_glob_t;

/* Compiles pattern p[0..pl) for names of at most maxlen bytes, in
 * O(pl) time and O(maxlen) memory (a pattern with more non-star tokens
 * than maxlen matches no such name and is only scanned).  0, or -1 (out
 * of memory).  rbd_glob_free releases it. */
int rbd_glob_compile(rbd_glob_t *g, const char *p, size_t pl, size_t maxlen);
void rbd_glob_free(rbd_glob_t *g);

/* 1 if s[0..sl) (sl <= g->maxlen) matches, as stringmatchlen would answer
 * (an empty name matches only the empty pattern; a match that needs more
 * than 1000 star groups fails), else 0.  O(g->n x sl): star backtracking
 * returns only to the last star. */
int rbd_glob_match(const rbd_glob_t *g, const char *s, size_t sl);

#endif /* RBD_GLOB_H */
