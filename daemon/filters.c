/*
 * filters.c - the daemon's open filter handles, by name: a filter is
 * resolved once (rb_bloom_open walks the directory) and its handle kept
 * for the segment's life; and the aging tick, which rotates the aging
 * filters whose window has passed, each rotation an op (ops.c) so it is
 * logged like a command's change.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "aof.h"
#include "filters.h"
#include "ops.h"
#include "rbd_log.h"

/* Opening a handle reads the slot's kind, not its 16 KiB of registers
 * (SCAN TYPE and TYPE ask this of names, cmd_keys.c). */
int rbd_filters_is_hll(const rb_segment_t *seg, const char *name, size_t len)
{
    rb_hll_t *h;

    if (rb_hll_open(seg, name, len, &h) != RB_OK)
        return 0;
    rb_hll_close(h);
    return 1;
}

rb_bloom_t *rbd_filters_get(rbd_filters_t *f, const rb_segment_t *seg, const char *name,
                            size_t len, int *rc)
{
    rbd_filter_ref_t *r;

    for (size_t i = 0; i < f->n; i++)
        if (f->v[i].len == len && memcmp(f->v[i].name, name, len) == 0)
            return f->v[i].bf;
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        rbd_filter_ref_t *v = realloc(f->v, cap * sizeof(*v));
        if (v == NULL) {
            *rc = RB_ENOMEM;
            return NULL;
        }
        f->v = v;
        f->cap = cap;
    }
    r = &f->v[f->n];
    r->name = malloc(len ? len : 1);
    if (r->name == NULL) {
        *rc = RB_ENOMEM;
        return NULL;
    }
    *rc = rb_bloom_open(seg, name, len, &r->bf);
    if (*rc != RB_OK) {
        free(r->name);
        return NULL;
    }
    memcpy(r->name, name, len);
    r->len = len;
    f->n++;
    return r->bf;
}

void rbd_filters_close(rbd_filters_t *f)
{
    for (size_t i = 0; i < f->n; i++) {
        rb_bloom_close(f->v[i].bf);
        free(f->v[i].name);
    }
    free(f->v);
    f->v = NULL;
    f->n = f->cap = 0;
}

typedef struct tick_arg {
    rbd_state_t *st;
    rbd_aof_t *aof;
    uint64_t now;
} tick_arg_t;

static int tick_filter(const char *name, size_t len, void *arg)
{
    tick_arg_t *t = arg;
    rbd_op_t op = { .type = RBD_OP_BF_ROTATE, .name = name, .len = len, .now = t->now };
    int rc;

    if ((op.bf = rbd_filters_get(&t->st->filters, t->st->seg, name, len, &rc)) == NULL)
        return 0;
    rc = rbd_op_run(t->st, t->aof, &op);
    if (rc < 0)
        rbd_log(LOG_WARNING, "rotating filter '%.*s' failed: %s", (int)len, name,
                rb_strerror(rc));
    return 0;
}

void rbd_filters_tick(rbd_state_t *st, rbd_aof_t *aof, uint64_t now_unix)
{
    tick_arg_t t = { st, aof, now_unix };

    if (rbd_aof_refuses(aof))
        return;   /* a rotation must be logged; wait for the log */
    rb_bloom_list(st->seg, tick_filter, &t);
}
