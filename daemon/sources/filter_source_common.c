/*
 * filter_source_common.c - `filter-source nats`: the small pieces every
 * side of the source uses (filter_source_impl.h): a name matched against
 * nats-filters, an op framed as its log record, the loop woken, a
 * message queued for it, a batch or a snapshot freed.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "filter_source_impl.h"
#include "rbd_log.h"
#include "record.h"

int rbd_fsource_matches(const char *glob, const char *name, size_t len)
{
    char buf[RB_FILTER_NAME_MAX + 1];

    if (name == NULL || len > RB_FILTER_NAME_MAX || memchr(name, '\0', len) != NULL)
        return 0;
    memcpy(buf, name, len);
    buf[len] = '\0';
    return fnmatch(glob, buf, 0) == 0;
}

struct rec_put {
    unsigned char *at;             /* NULL: only counting */
    size_t len;
};

static void rec_put(void *ctx, const void *p, size_t n)
{
    struct rec_put *rp = ctx;

    if (rp->at != NULL)
        memcpy(rp->at + rp->len, p, n);
    rp->len += n;
}

size_t rbd_fsource_record(const rbd_op_t *op, unsigned char *at)
{
    struct rec_put rp = { at, RBD_REC_HDR };

    if (at != NULL)
        rbd_rec_start(at, (uint8_t)op->type);
    rbd_op_encode(op, rec_put, &rp);
    if (at != NULL)
        rbd_rec_seal(at, rp.len);
    return rp.len;
}

void rbd_fsource_wake(rbd_fsource_t *s)
{
    uint64_t one = 1;

    if (write(s->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rbd_log(LOG_WARNING, "filter source: eventfd: %s", strerror(errno));
}

void rbd_fsource_rx_append_locked(rbd_fsource_t *s, fs_rx_t *r)
{
    r->next = NULL;
    s->rx_bytes += r->len;
    if (s->rx_tail != NULL)
        s->rx_tail->next = r;
    else
        s->rx = r;
    s->rx_tail = r;
}

void rbd_fsource_batch_free(fs_batch_t *b)
{
    if (b == NULL)
        return;
    free(b->buf);
    free(b->tickets);
    free(b);
}

void rbd_fsource_snap_free(fs_snap_t *sn)
{
    if (sn == NULL)
        return;
    for (size_t i = 0; i < sn->n; i++)
        free(sn->part[i].buf);
    free(sn->part);
    free(sn);
}
