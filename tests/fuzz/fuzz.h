/*
 * fuzz.h - what the libFuzzer targets of tests/fuzz/ share.  Define
 * FUZZ_TARGET (the target's name, a string) before including it.
 *   CHECK(c): an invariant; a violation names the target and the line and
 *   aborts, which libFuzzer reports as a crash and saves the input.
 * With ringbloom.h included first, also the helpers of the two targets
 * that end in a segment: collecting filter names (rb_bloom_list) and
 * copying a dump (rb_segment_dump) to restore it.
 */
#ifndef RB_FUZZ_H
#define RB_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_TARGET
#error "define FUZZ_TARGET before including fuzz.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, FUZZ_TARGET ": invariant failed: %s (line %d)\n", #c,  \
                    __LINE__);                                                     \
            abort();                                                               \
        }                                                                          \
    } while (0)

#ifdef RB_FILTER_NAME_MAX

#define FUZZ_MAX_FILTERS 8

/* The first FUZZ_MAX_FILTERS filter names of a segment. */
typedef struct names {
    char name[FUZZ_MAX_FILTERS][RB_FILTER_NAME_MAX + 1];
    size_t len[FUZZ_MAX_FILTERS];
    size_t n;
} names_t;

static inline int collect(const char *name, size_t len, void *arg)
{
    names_t *nm = arg;

    CHECK(len >= 1 && len <= RB_FILTER_NAME_MAX);
    if (nm->n < FUZZ_MAX_FILTERS) {
        memcpy(nm->name[nm->n], name, len);
        nm->len[nm->n++] = len;
    }
    return 0;
}

/* A copy of a segment's dump; malloc is 16-byte aligned, restore wants 8. */
typedef struct dump_buf {
    void *data;
    size_t len;
} dump_buf_t;

static inline int dump_copy(const void *data, size_t len, void *arg)
{
    dump_buf_t *d = arg;

    d->data = malloc(len ? len : 1);
    CHECK(d->data != NULL);
    memcpy(d->data, data, len);
    d->len = len;
    return 0;
}

#endif /* RB_FILTER_NAME_MAX */
#endif
