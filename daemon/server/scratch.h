/*
 * scratch.h - a command's arrays without the allocator on the hot path
 * (issue 29, item 4): an array of n elements is the caller's buffer on
 * its stack when n fits (a single-key command's one item, or a few), and
 * calloc'd only when it does not.  Either way it starts zeroed, and
 * rbd_scratch_free gives it back (a no-op for the stack buffer).
 * Header-only; used by the command handlers and the ops below them.
 */
#ifndef RBD_SCRATCH_H
#define RBD_SCRATCH_H

#include <stdlib.h>
#include <string.h>

/* How many elements the handlers' stack buffers hold. */
#define RBD_SCRATCH_SMALL 8

/* n elements of size bytes: stack (stack_bytes of room) if they fit, else
 * heap (NULL if that fails), zeroed. */
static inline void *rbd_scratch(void *stack, size_t stack_bytes, size_t n, size_t size)
{
    if (n <= stack_bytes / size) {
        memset(stack, 0, n * size);
        return stack;
    }
    return calloc(n, size);
}

static inline void rbd_scratch_free(void *p, const void *stack)
{
    if (p != stack)
        free(p);
}

#endif /* RBD_SCRATCH_H */
