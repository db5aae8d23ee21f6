/*
 * filter_source_snap.c - `filter-source nats`: the replicated filters'
 * snapshots in JetStream, which bound the stream's history and bootstrap
 * a host whose next message the stream no longer holds (filter_source.h
 * says what the source is; docs/design.md, "Beyond one host", argues it).
 *
 * What a snapshot is: the replicated filters as of one stream sequence S,
 * as the records that rebuild them - each filter's dump (bloom_dump.c:
 * its header, with its parameters, counters and secret, then its arrays'
 * bytes) as BF_LOADCHUNK records, the op BF.LOADCHUNK logs - packed into
 * parts of at most FS_MSG_MAX bytes.  Part i is one message on subject
 * <stream>.snap.<S>.<i> of stream <stream>_SNAP; once every part is
 * stored, a manifest (subject <stream>.snapdone, no payload; headers
 * Rb-Snap-Seq S, Rb-Snap-Parts, Rb-Snap-Stream: the ops stream's
 * incarnation, Rb-Snap-First: part 0's sequence) says it is complete.
 *
 * Who takes one: the host whose own message is at a multiple of
 * nats-snapshot-every, right after applying it (the loop, between two
 * messages: a consistent cut); every host knows which host that is from
 * the stream alone, so each one is taken once, with no coordination (a
 * multiple that falls on a probe, or on a host that died, has none: the
 * next one does).  The thread publishes its parts one at a time between
 * writes, then the manifest, then purges the snapshot stream below part 0
 * (the older snapshots) and the ops stream below the previous snapshot's
 * sequence + 1: the stream keeps between one and two snapshot intervals
 * of messages, and the snapshot stream one or two snapshots.
 *
 * Bootstrap: set-up finds that the stream's first message is past the
 * one after the position the segment holds (a late host, one restarted
 * after a long absence, or one the purge overtook: the loop sees the gap
 * and asks for a new set-up); it reads the newest manifest of this
 * stream, which must cover up to the stream's first sequence - 1, fetches
 * its parts and queues them for the loop before the consumer starts at
 * S + 1.  The loop applies part 0 after deleting every replicated filter,
 * each part as one TXN, and REPL_POS S with the last: until then the
 * position stays the old one, so a crash in between bootstraps again.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "bloom.h"   /* lib: the dumps (bloom_dump.c) */
#include "filter_source_impl.h"
#include "rbd_log.h"

/* ---- the loop's side ---- */

typedef struct names {          /* the replicated filters' names, collected */
    const char *glob;
    struct name {
        size_t len;
        char s[RB_FILTER_NAME_MAX + 1];
    } *v;
    size_t n, cap;
    int oom;
} names_t;

static int collect(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    names_t *ns = arg;

    (void)kind;
    if (!rbd_fsource_matches(ns->glob, name, len))
        return 0;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        struct name *v = realloc(ns->v, cap * sizeof(*v));

        if (v == NULL) {
            ns->oom = 1;
            return 1;
        }
        ns->v = v;
        ns->cap = cap;
    }
    ns->v[ns->n].len = len;
    memcpy(ns->v[ns->n].s, name, len);
    ns->n++;
    return 0;
}

/* The names of the filters nats-filters matches.  0, or -1 out of memory. */
static int replicated_names(const rbd_fsource_t *s, const rb_segment_t *seg, names_t *ns)
{
    uint64_t cursor = 0;

    memset(ns, 0, sizeof(*ns));
    ns->glob = s->glob;
    (void)rb_filter_scan(seg, &cursor, SIZE_MAX, collect, ns);
    if (ns->oom) {
        free(ns->v);
        return -1;
    }
    return 0;
}

void rbd_fsource_snap_clear(rbd_fsource_t *s, rbd_state_t *st)
{
    names_t ns;

    if (replicated_names(s, st->seg, &ns) != 0) {
        rbd_log(LOG_ERR, "filter source: out of memory listing the replicated filters: this "
                "host diverges from the stream");
        return;
    }
    for (size_t i = 0; i < ns.n; i++) {
        rbd_op_t op = { .type = RBD_OP_BF_DELETE, .name = ns.v[i].s, .len = ns.v[i].len };

        (void)rbd_op_run(st, NULL, &op);
    }
    free(ns.v);
}

/* The part a record of len bytes goes in: the last, or a new one if it
 * would pass FS_MSG_MAX (len <= FS_MSG_MAX).  NULL out of memory. */
static struct fs_part *part_for(fs_snap_t *sn, size_t len)
{
    struct fs_part *p = sn->n > 0 ? &sn->part[sn->n - 1] : NULL;

    if (p == NULL || p->len + len > FS_MSG_MAX) {
        if (sn->n == sn->cap) {
            size_t cap = sn->cap ? sn->cap * 2 : 8;
            struct fs_part *v = realloc(sn->part, cap * sizeof(*v));

            if (v == NULL)
                return NULL;
            sn->part = v;
            sn->cap = cap;
        }
        p = &sn->part[sn->n++];
        memset(p, 0, sizeof(*p));
    }
    if (p->len + len > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        unsigned char *b;

        while (cap < p->len + len)
            cap *= 2;
        if ((b = realloc(p->buf, cap)) == NULL)
            return NULL;
        p->buf = b;
        p->cap = cap;
    }
    return p;
}

/* Filter name's dump as BF_LOADCHUNK records appended to sn.  0, or an
 * RB_E* error (RB_EWRONGTYPE: not a Bloom filter). */
static int dump_filter(fs_snap_t *sn, const rb_segment_t *seg, const struct name *nm,
                       unsigned char *buf)
{
    rb_bloom_t *bf = NULL;
    int64_t iter = 0, next;
    size_t len, rlen;
    int rc = rb_bloom_open(seg, nm->s, nm->len, &bf), opened = rc == RB_OK;

    while (rc == RB_OK) {
        rbd_op_t op = { .type = RBD_OP_BF_LOADCHUNK, .name = nm->s, .len = nm->len };
        struct fs_part *p;

        if ((rc = rbi_bloom_dump(bf, iter, FS_SNAP_CHUNK, buf, &len, &next)) != RB_OK ||
            next == 0)
            break;
        op.iter = next;
        op.data = buf;
        op.dlen = len;
        rlen = rbd_fsource_record(&op, NULL);
        if ((p = part_for(sn, rlen)) == NULL) {
            rc = RB_ENOMEM;
            break;
        }
        p->len += rbd_fsource_record(&op, p->buf + p->len);
        sn->bytes += rlen;
        iter = next;
    }
    if (opened)
        rb_bloom_close(bf);
    return rc;
}

/* Whether the thread still publishes a snapshot (this one is then not
 * taken: the copy would be thrown away). */
static int busy(rbd_fsource_t *s)
{
    int b;

    pthread_mutex_lock(&s->mu);
    b = s->snap_out != NULL;
    pthread_mutex_unlock(&s->mu);
    return b;
}

void rbd_fsource_snap_take(rbd_fsource_t *s, rbd_state_t *st, uint64_t seq, uint64_t stream_id)
{
    unsigned char *buf;
    fs_snap_t *sn;
    names_t ns = { 0 };
    int rc;
    size_t i = 0;

    if (busy(s)) {
        rbd_log(LOG_WARNING, "filter source: no snapshot at sequence %" PRIu64 ": the one "
                "before is still being published", seq);
        return;
    }
    buf = malloc(FS_SNAP_CHUNK > RBI_DUMP_HEADER_MAX ? FS_SNAP_CHUNK : RBI_DUMP_HEADER_MAX);
    sn = calloc(1, sizeof(*sn));
    rc = buf == NULL || sn == NULL || replicated_names(s, st->seg, &ns) != 0 ? RB_ENOMEM : RB_OK;

    for (; rc == RB_OK && i < ns.n; i++)
        rc = dump_filter(sn, st->seg, &ns.v[i], buf);
    if (rc == RB_OK && sn->n == 0 && part_for(sn, 0) == NULL)   /* none: one empty part */
        rc = RB_ENOMEM;
    free(buf);
    if (rc != RB_OK) {
        rbd_log(LOG_ERR, "filter source: no snapshot at sequence %" PRIu64 ": %s%.*s: %s", seq,
                i > 0 ? "filter " : "", i > 0 ? (int)ns.v[i - 1].len : 0,
                i > 0 ? ns.v[i - 1].s : "", rb_strerror(rc));
        free(ns.v);
        rbd_fsource_snap_free(sn);
        return;
    }
    if (sn->bytes + sn->n * 4096 > s->max_bytes / 2) {   /* (a part's overhead, generously) */
        rbd_log(LOG_ERR, "filter source: no snapshot at sequence %" PRIu64 ": the replicated "
                "filters' %" PRIu64 " bytes do not fit %s (nats-max-bytes / 2 = %" PRIu64 "): "
                "raise nats-max-bytes; the stream is not purged meanwhile", seq, sn->bytes,
                s->snap_stream, s->max_bytes / 2);
        free(ns.v);
        rbd_fsource_snap_free(sn);
        return;
    }
    sn->seq = seq;
    sn->stream_id = stream_id;
    s->snaps_taken++;
    rbd_log(LOG_NOTICE, "filter source: snapshot at sequence %" PRIu64 ": %zu filter(s), %"
            PRIu64 " bytes in %zu part(s)", seq, ns.n, sn->bytes, sn->n);
    free(ns.v);
    pthread_mutex_lock(&s->mu);
    s->snap_out = sn;   /* (none: only the loop sets it, and it was none above) */
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* ---- the thread's side ---- */

typedef struct manifest {
    uint64_t seq, parts, first;
} manifest_t;

static uint64_t header_u64(natsMsg *m, const char *name, int base)
{
    const char *v = NULL;

    if (natsMsgHeader_Get(m, name, &v) != NATS_OK || v == NULL)
        return 0;
    return strtoull(v, NULL, base);
}

/* The newest manifest of a snapshot of stream stream_id: 0 and *mf, 1
 * none, -1 the call failed (why). */
static int last_manifest(rbd_fsource_t *s, uint64_t stream_id, manifest_t *mf, char *why,
                         size_t cap)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    char subject[96];
    natsStatus st;

    snprintf(subject, sizeof(subject), "%s.snapdone", s->stream);
    st = js_GetLastMsg(&m, s->js, s->snap_stream, subject, NULL, &jerr);
    if (st == NATS_NOT_FOUND)
        return 1;
    if (st != NATS_OK) {
        snprintf(why, cap, "%s (jerr %d)", natsStatus_GetText(st), (int)jerr);
        return -1;
    }
    mf->seq = header_u64(m, "Rb-Snap-Seq", 10);
    mf->parts = header_u64(m, "Rb-Snap-Parts", 10);
    mf->first = header_u64(m, "Rb-Snap-First", 10);
    st = header_u64(m, "Rb-Snap-Stream", 16) == stream_id && mf->seq != 0 && mf->parts != 0 &&
         mf->parts <= UINT32_MAX ? NATS_OK : NATS_NOT_FOUND;
    natsMsg_Destroy(m);
    return st == NATS_OK ? 0 : 1;
}

int rbd_fsource_snap_fetch(rbd_fsource_t *s, uint64_t stream_id, uint64_t need, uint64_t *from)
{
    manifest_t mf;
    fs_rx_t *head = NULL, **tail = &head;
    char why[600] = "", subject[128];
    uint64_t gen, bytes = 0;
    int rc = last_manifest(s, stream_id, &mf, why, sizeof(why));

    if (rc == 0 && mf.seq + 1 < need)
        snprintf(why, sizeof(why), "its newest snapshot covers up to %" PRIu64 " only",
                 mf.seq);
    else if (rc == 1)
        snprintf(why, sizeof(why), "%s holds no snapshot of it", s->snap_stream);
    if (rc != 0 || mf.seq + 1 < need)
        goto fail;
    pthread_mutex_lock(&s->mu);
    gen = s->gen;
    pthread_mutex_unlock(&s->mu);
    for (uint64_t i = 0; i < mf.parts; i++) {
        natsMsg *m = NULL;
        jsErrCode jerr = 0;
        natsStatus st;

        snprintf(subject, sizeof(subject), "%s.snap.%" PRIu64 ".%" PRIu64, s->stream, mf.seq, i);
        st = js_GetLastMsg(&m, s->js, s->snap_stream, subject, NULL, &jerr);
        if (st != NATS_OK) {
            snprintf(why, sizeof(why), "part %" PRIu64 " of the snapshot at %" PRIu64 ": %s "
                     "(jerr %d)", i, mf.seq, natsStatus_GetText(st), (int)jerr);
            goto fail;
        }
        *tail = rbd_fsource_rx(m, mf.seq, gen);
        (*tail)->part = (uint32_t)i;
        (*tail)->parts = (uint32_t)mf.parts;
        bytes += (*tail)->len;
        tail = &(*tail)->next;
    }
    pthread_mutex_lock(&s->mu);
    for (fs_rx_t *r = head, *next; r != NULL; r = next) {
        next = r->next;
        rbd_fsource_rx_append_locked(s, r);
    }
    s->boot_seq = mf.seq;
    s->snap_seq = mf.seq > s->snap_seq ? mf.seq : s->snap_seq;
    pthread_mutex_unlock(&s->mu);
    rbd_log(LOG_NOTICE, "filter source: stream %s holds sequence %" PRIu64 " on, this host "
            "applied up to %" PRIu64 ": bootstrapping from the snapshot at %" PRIu64 " (%" PRIu64
            " part(s), %" PRIu64 " bytes)", s->stream, need, *from, mf.seq, mf.parts, bytes);
    rbd_fsource_wake(s);
    *from = mf.seq;
    return 0;
fail:
    while (head != NULL) {
        fs_rx_t *next = head->next;

        free(head);
        head = next;
    }
    pthread_mutex_lock(&s->mu);
    snprintf(s->error, sizeof(s->error), "bootstrap: stream %.64s holds sequence %" PRIu64 " on, "
             "this host applied up to %" PRIu64 ", and %.200s", s->stream, need, *from, why);
    pthread_mutex_unlock(&s->mu);
    return -1;
}

/* Purges stream name below sequence below (not included).  0 or -1 (logged).
 * below <= 1 purges nothing: the server takes a purge below 0 or 1 for a
 * purge of everything (nats-server 2.9; the first snapshot, at sequence
 * 1 of its stream, once purged itself so). */
static int purge(rbd_fsource_t *s, const char *name, uint64_t below)
{
    jsOptions o;
    jsErrCode jerr = 0;
    natsStatus st;

    if (below <= 1)
        return 0;
    jsOptions_Init(&o);
    o.Wait = s->timeout_ms;
    o.Stream.Purge.Sequence = below;
    if ((st = js_PurgeStream(s->js, name, &o, &jerr)) == NATS_OK)
        return 0;
    rbd_log(LOG_WARNING, "filter source: purging stream %s below %" PRIu64 ": %s (jerr %d)", name,
            below, natsStatus_GetText(st), (int)jerr);
    return -1;
}

/* The manifest of sn (every part stored), then the purges it allows. */
static void publish_manifest(rbd_fsource_t *s, fs_snap_t *sn)
{
    manifest_t prev = { 0 };
    char subject[96], id[96], seq[24], parts[24], stream[24], first[24], why[600];
    const char *hdr[] = { "Rb-Snap-Seq", seq, "Rb-Snap-Parts", parts, "Rb-Snap-Stream", stream,
                          "Rb-Snap-First", first, NULL };
    uint64_t at;

    if (last_manifest(s, sn->stream_id, &prev, why, sizeof(why)) != 0)
        prev.seq = 0;
    if (prev.seq >= sn->seq) {   /* another host's newer one was stored first */
        rbd_log(LOG_NOTICE, "filter source: snapshot at sequence %" PRIu64 " not stored: the one "
                "at %" PRIu64 " is newer", sn->seq, prev.seq);
        return;
    }
    snprintf(subject, sizeof(subject), "%s.snapdone", s->stream);
    snprintf(id, sizeof(id), "snapdone.%016" PRIx64 ".%" PRIu64, sn->stream_id, sn->seq);
    snprintf(seq, sizeof(seq), "%" PRIu64, sn->seq);
    snprintf(parts, sizeof(parts), "%zu", sn->n);
    snprintf(stream, sizeof(stream), "%016" PRIx64, sn->stream_id);
    snprintf(first, sizeof(first), "%" PRIu64, sn->first);
    if (rbd_fsource_put(s, subject, NULL, 0, id, hdr, &at, why, sizeof(why)) != 0) {
        rbd_log(LOG_WARNING, "filter source: snapshot at sequence %" PRIu64 " abandoned: its "
                "manifest: %s", sn->seq, why);
        return;
    }
    rbd_log(LOG_NOTICE, "filter source: snapshot at sequence %" PRIu64 " stored in %s (%zu "
            "part(s), %" PRIu64 " bytes)", sn->seq, s->snap_stream, sn->n, sn->bytes);
    (void)purge(s, s->snap_stream, sn->first);
    pthread_mutex_lock(&s->mu);
    s->snaps_published++;
    if (sn->seq > s->snap_seq)
        s->snap_seq = sn->seq;
    pthread_mutex_unlock(&s->mu);
    if (prev.seq != 0 && prev.seq < sn->seq && purge(s, s->stream, prev.seq + 1) == 0) {
        pthread_mutex_lock(&s->mu);
        if (prev.seq + 1 > s->first_seq)
            s->first_seq = prev.seq + 1;
        pthread_mutex_unlock(&s->mu);
    }
}

void rbd_fsource_snap_publish(rbd_fsource_t *s)
{
    fs_snap_t *sn;
    char subject[128], id[96], why[600];
    uint64_t at;

    pthread_mutex_lock(&s->mu);
    sn = s->snap_out;
    pthread_mutex_unlock(&s->mu);
    if (sn == NULL)
        return;
    if (sn->next < sn->n) {
        snprintf(subject, sizeof(subject), "%s.snap.%" PRIu64 ".%zu", s->stream, sn->seq,
                 sn->next);
        snprintf(id, sizeof(id), "snap.%016" PRIx64 ".%" PRIu64 ".%zu", sn->stream_id, sn->seq,
                 sn->next);
        if (rbd_fsource_put(s, subject, sn->part[sn->next].buf, sn->part[sn->next].len, id,
                            NULL, &at, why, sizeof(why)) == 0) {
            if (sn->next++ == 0)
                sn->first = at;
            return;
        }
        rbd_log(LOG_WARNING, "filter source: snapshot at sequence %" PRIu64 " abandoned: part "
                "%zu of %zu: %s", sn->seq, sn->next, sn->n, why);
    } else
        publish_manifest(s, sn);
    pthread_mutex_lock(&s->mu);
    s->snap_out = NULL;
    pthread_mutex_unlock(&s->mu);
    rbd_fsource_snap_free(sn);
}
