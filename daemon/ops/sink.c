/*
 * sink.c - the registry of op sinks and the deferred replies (sink.h says
 * what a sink is).  It knows no sink: it calls the rows' operations in
 * registration order, keeps the open tickets and hands a completed one's
 * answer to the server's reply function.  One thread: the event loop's.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "sink.h"

void rbd_sinks_init(rbd_sinks_t *s, rbd_sink_reply_fn reply, void *arg)
{
    s->reply = reply;
    s->reply_arg = arg;
}

void rbd_sinks_free(rbd_sinks_t *s)
{
    free(s->pending);
    s->pending = NULL;
    s->npending = s->cap = 0;
}

int rbd_sinks_add(rbd_sinks_t *s, const rbd_sink_ops_t *ops, void *self, int fd)
{
    if (s->n == RBD_SINKS_MAX)
        return -1;
    s->v[s->n].ops = ops;
    s->v[s->n].self = self;
    s->v[s->n].fd = fd;
    s->v[s->n].txn_mark = 0;
    s->n++;
    return 0;
}

void rbd_sinks_remove(rbd_sinks_t *s, const void *self)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].self != self)
            continue;
        memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(s->v[0]));
        s->n--;
        return;
    }
}

/* Room for one more open ticket: 1, or 0 out of memory. */
static int pending_room(rbd_sinks_t *s)
{
    size_t cap = s->cap ? 2 * s->cap : 8;
    rbd_pending_t *p;

    if (s->npending < s->cap)
        return 1;
    if ((p = realloc(s->pending, cap * sizeof(*p))) == NULL)
        return 0;
    s->pending = p;
    s->cap = cap;
    return 1;
}

int rbd_sinks_accept(rbd_sinks_t *s, struct rbd_state *st, const rbd_op_t *op)
{
    for (size_t i = 0; i < s->n; i++) {
        const rbd_sink_ops_t *o = s->v[i].ops;
        uint64_t ticket;
        int rc;
        if (o->accept == NULL)
            continue;
        /* The room for its ticket is made first: a sink that took the op
         * finds it open.  Without a client, inside a transaction or out of
         * memory, ticket 0: the sink cannot take the op. */
        ticket = op->client != 0 && !s->in_txn && pending_room(s) ? ++s->next_ticket : 0;
        s->why[0] = '\0';
        rc = o->accept(s->v[i].self, st, op, ticket, s->why, sizeof(s->why));
        if (rc == RBD_SINK_APPLY)
            continue;
        if (rc != RBD_SINK_DEFERRED)
            return rc;
        if (ticket == 0)
            return RB_EINVAL;   /* a sink that took what it cannot answer */
        s->pending[s->npending++] =
            (rbd_pending_t){ ticket, op->client, (rbd_reply_shape_t)op->reply };
        s->opened++;
        return rc;
    }
    return RBD_SINK_APPLY;
}

void rbd_sinks_op(rbd_sinks_t *s, const rbd_op_t *op)
{
    s->seen++;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].ops->on_op != NULL)
            s->v[i].ops->on_op(s->v[i].self, op);
}

void rbd_sinks_txn_begin(rbd_sinks_t *s)
{
    s->in_txn = 1;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].ops->txn_begin != NULL)
            s->v[i].txn_mark = s->v[i].ops->txn_begin(s->v[i].self);
}

void rbd_sinks_txn_end(rbd_sinks_t *s)
{
    s->in_txn = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].ops->txn_end != NULL)
            s->v[i].ops->txn_end(s->v[i].self, s->v[i].txn_mark);
}

int rbd_sinks_flush(rbd_sinks_t *s)
{
    int held = 0;

    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].ops->flush != NULL && s->v[i].ops->flush(s->v[i].self) != 0)
            held = -1;
    return held;
}

int rbd_sinks_poll(rbd_sinks_t *s, struct rbd_state *st, int fd)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i].fd != fd || fd < 0)
            continue;
        if (s->v[i].ops->poll != NULL)
            s->v[i].ops->poll(s->v[i].self, st);
        return 1;
    }
    return 0;
}

void rbd_sinks_tick(rbd_sinks_t *s, struct rbd_state *st)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].ops->tick != NULL)
            s->v[i].ops->tick(s->v[i].self, st);
}

/* Closes ticket, if open, and hands r (its shape filled in) to the
 * reply function. */
static void complete(rbd_sinks_t *s, uint64_t ticket, rbd_reply_t *r)
{
    for (size_t i = 0; i < s->npending; i++) {
        uint64_t client = s->pending[i].client;

        if (s->pending[i].ticket != ticket)
            continue;
        r->shape = s->pending[i].shape;
        memmove(&s->pending[i], &s->pending[i + 1],
                (s->npending - i - 1) * sizeof(s->pending[0]));
        s->npending--;
        if (s->reply != NULL)
            s->reply(s->reply_arg, client, r);
        return;
    }
}

void rbd_sinks_complete(rbd_sinks_t *s, uint64_t ticket, const char *err)
{
    rbd_reply_t r = { .err = err, .rc = RB_OK };

    complete(s, ticket, &r);
}

void rbd_sinks_complete_result(rbd_sinks_t *s, uint64_t ticket, int rc, const uint8_t *fresh,
                               size_t n)
{
    rbd_reply_t r = { .rc = rc, .fresh = fresh, .n = n, .has_result = 1 };

    complete(s, ticket, &r);
}
