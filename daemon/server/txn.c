/*
 * txn.c - a client's transaction queue: the requests between MULTI and
 * EXEC, copied out of its input buffer (which moves on) into one buffer
 * of length-prefixed arguments, read back in order at EXEC (txn.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "txn.h"

size_t rbd_txn_cost(size_t argc, const size_t *argl)
{
    size_t bytes = 4;

    for (size_t i = 0; i < argc; i++)
        bytes += 4 + argl[i];
    return bytes;
}

int rbd_txn_queue(rbd_txn_t *t, size_t argc, const char *const *argv, const size_t *argl)
{
    unsigned char n[4];

    rbd_put_u32(n, (uint32_t)argc);
    rbi_buf_append(&t->queue, n, 4);
    if (argc > t->max_argc)
        t->max_argc = argc;
    for (size_t i = 0; i < argc; i++) {
        rbd_put_u32(n, (uint32_t)argl[i]);
        rbi_buf_append(&t->queue, n, 4);
        rbi_buf_append(&t->queue, argv[i], argl[i]);
    }
    t->bytes += rbd_txn_cost(argc, argl);
    t->count++;
    if (t->queue.oom) {
        t->dirty = 1;
        return -1;
    }
    return 0;
}

size_t rbd_txn_next(const rbd_txn_t *t, size_t off, const char **argv, size_t *argl,
                    size_t *argc)
{
    const unsigned char *p = (const unsigned char *)t->queue.data;

    if (off >= t->queue.len)
        return 0;
    *argc = rbd_get_u32(p + off);
    off += 4;
    for (size_t i = 0; i < *argc; i++) {
        argl[i] = rbd_get_u32(p + off);
        argv[i] = (const char *)p + off + 4;
        off += 4 + argl[i];
    }
    return off;
}

void rbd_txn_reset(rbd_txn_t *t)
{
    rbi_buf_free(&t->queue);
    memset(t, 0, sizeof(*t));
}
