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
#include <xxhash.h>

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
    uint64_t seq, parts, first, stream, hash;
    int hashed;                    /* it has Rb-Snap-Hash (written by this version) */
} manifest_t;

/* Header name of m as a number in base (*ok cleared when absent or not
 * all digits). */
static uint64_t header_u64(natsMsg *m, const char *name, int base, int *ok)
{
    const char *v = NULL;
    char *end;
    uint64_t x;

    if (natsMsgHeader_Get(m, name, &v) != NATS_OK || v == NULL || *v == '\0') {
        *ok = 0;
        return 0;
    }
    x = strtoull(v, &end, base);
    if (*end != '\0')
        *ok = 0;
    return x;
}

/* The chained hash a manifest gives of its parts (seeded with its
 * sequence): h = XXH3-64(part, seed h), part by part. */
static uint64_t parts_hash(uint64_t h, const void *data, size_t len)
{
    return XXH3_64bits_withSeed(data, len, h);
}

/* The newest manifest on <stream>.snapdone: 0 and *mf, 1 none (or one
 * this version cannot read: why), -1 the call failed (why).  Whose
 * stream it is, and whether it can be used, is the caller's to check. */
static int last_manifest(rbd_fsource_t *s, manifest_t *mf, char *why, size_t cap)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    char subject[96];
    natsStatus st;
    int ok = 1, hashed = 1;

    memset(mf, 0, sizeof(*mf));
    snprintf(subject, sizeof(subject), "%s.snapdone", s->stream);
    st = js_GetLastMsg(&m, s->js, s->snap_stream, subject, NULL, &jerr);
    if (st == NATS_NOT_FOUND) {
        snprintf(why, cap, "%s holds no snapshot of it", s->snap_stream);
        return 1;
    }
    if (st != NATS_OK) {
        snprintf(why, cap, "%s (jerr %d)", natsStatus_GetText(st), (int)jerr);
        return -1;
    }
    mf->seq = header_u64(m, "Rb-Snap-Seq", 10, &ok);
    mf->parts = header_u64(m, "Rb-Snap-Parts", 10, &ok);
    mf->first = header_u64(m, "Rb-Snap-First", 10, &ok);
    mf->stream = header_u64(m, "Rb-Snap-Stream", 16, &ok);
    mf->hash = header_u64(m, "Rb-Snap-Hash", 16, &hashed);
    mf->hashed = hashed;
    natsMsg_Destroy(m);
    if (!ok) {
        snprintf(why, cap, "its newest manifest is not one ringbloomd writes (a header "
                 "missing or not a number)");
        return 1;
    }
    return 0;
}

/* Why manifest mf cannot bootstrap a host of stream stream_id that
 * needs need - 1 covered, the stream's last sequence being last ("" if it
 * can): it must be this stream's, cover need - 1, lie within the
 * stream's history (past last: forged or stale), have parts this version
 * can check, and no more than the snapshot stream holds. */
static void manifest_ok(const rbd_fsource_t *s, const manifest_t *mf, uint64_t stream_id,
                        uint64_t need, uint64_t last, char *why, size_t cap)
{
    uint64_t max_parts = s->max_bytes / 2 / FS_MSG_MAX + 1;

    why[0] = '\0';
    if (mf->stream != stream_id)
        snprintf(why, cap, "its newest snapshot (at %" PRIu64 ") is of another stream "
                 "(%016" PRIx64 ")", mf->seq, mf->stream);
    else if (mf->seq == 0 || mf->seq > last)
        snprintf(why, cap, "its newest snapshot's manifest says sequence %" PRIu64 ", past the "
                 "stream's last (%" PRIu64 "): forged or stale, refused", mf->seq, last);
    else if (mf->seq + 1 < need)
        snprintf(why, cap, "its newest snapshot covers up to %" PRIu64 " only", mf->seq);
    else if (mf->parts == 0 || mf->parts > max_parts)
        snprintf(why, cap, "the snapshot at %" PRIu64 " claims %" PRIu64 " parts (1 to %" PRIu64
                 " fit the snapshot stream): refused", mf->seq, mf->parts, max_parts);
    else if (!mf->hashed)
        snprintf(why, cap, "the snapshot at %" PRIu64 " has no Rb-Snap-Hash (an older version "
                 "wrote it): waiting for a newer one", mf->seq);
}

/* Part i of the snapshot mf, fetched into an rx (generation gen) and
 * checked against the manifest (its headers; its place in the snapshot
 * stream: part 0 at first, each after the one before, *prev; its records:
 * BF_LOADCHUNK of replicated names), its bytes into *hash.  NULL with
 * why. */
static fs_rx_t *fetch_part(rbd_fsource_t *s, const manifest_t *mf, uint64_t i, uint64_t gen,
                           uint64_t *prev, uint64_t *hash, rbd_keys_t *keys, char *why,
                           size_t cap)
{
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    char subject[128], bad[300] = "";
    natsStatus st;
    uint64_t at;
    fs_rx_t *r;
    int ok = 1;

    snprintf(subject, sizeof(subject), "%s.snap.%" PRIu64 ".%" PRIu64, s->stream, mf->seq, i);
    if ((st = js_GetLastMsg(&m, s->js, s->snap_stream, subject, NULL, &jerr)) != NATS_OK) {
        snprintf(why, cap, "part %" PRIu64 " of the snapshot at %" PRIu64 ": %s (jerr %d)", i,
                 mf->seq, natsStatus_GetText(st), (int)jerr);
        return NULL;
    }
    at = natsMsg_GetSequence(m);
    if (header_u64(m, "Rb-Snap-Seq", 10, &ok) != mf->seq ||
        header_u64(m, "Rb-Snap-Part", 10, &ok) != i ||
        header_u64(m, "Rb-Snap-Parts", 10, &ok) != mf->parts ||
        header_u64(m, "Rb-Snap-Stream", 16, &ok) != mf->stream || !ok)
        snprintf(bad, sizeof(bad), "its headers do not say it is that part");
    else if (i == 0 ? at != mf->first : at <= *prev)
        snprintf(bad, sizeof(bad), "it is at sequence %" PRIu64 " of %s, not where the manifest "
                 "puts it", at, s->snap_stream);
    *prev = at;
    r = rbd_fsource_rx(m, mf->seq, gen);
    if (bad[0] == '\0')   /* (bad says why, or stays "") */
        (void)rbd_fsource_check_records(s, r->data, r->len, 1, 0, keys, bad, sizeof(bad));
    if (bad[0] != '\0') {
        snprintf(why, cap, "part %" PRIu64 " of the snapshot at %" PRIu64 " is refused: %s", i,
                 mf->seq, bad);
        free(r);
        return NULL;
    }
    *hash = parts_hash(*hash, r->data, r->len);
    r->part = (uint32_t)i;
    r->parts = (uint32_t)mf->parts;
    return r;
}

/* The parts of snapshot mf, fetched and checked (fetch_part; then their
 * hash against the manifest's): 0 and *head, or -1 with why (nothing
 * kept). */
static int fetch_parts(rbd_fsource_t *s, const manifest_t *mf, uint64_t gen, fs_rx_t **head,
                       uint64_t *bytes, char *why, size_t cap)
{
    fs_rx_t **tail = head;
    rbd_keys_t keys = { 0 };
    uint64_t prev = 0, hash = mf->seq;
    int rc = 0;

    *head = NULL;
    for (uint64_t i = 0; i < mf->parts; i++) {
        if ((*tail = fetch_part(s, mf, i, gen, &prev, &hash, &keys, why, cap)) == NULL) {
            rc = -1;
            break;
        }
        *bytes += (*tail)->len;
        tail = &(*tail)->next;
    }
    free(keys.v);
    if (rc == 0 && hash != mf->hash) {
        snprintf(why, cap, "the snapshot at %" PRIu64 ": its parts do not hash to its "
                 "manifest's Rb-Snap-Hash: refused", mf->seq);
        rc = -1;
    }
    if (rc == 0)
        return 0;
    while (*head != NULL) {
        fs_rx_t *next = (*head)->next;

        free(*head);
        *head = next;
    }
    return -1;
}

int rbd_fsource_snap_fetch(rbd_fsource_t *s, uint64_t stream_id, uint64_t need, uint64_t last,
                           uint64_t *from)
{
    manifest_t mf;
    fs_rx_t *head = NULL;
    char why[600] = "";
    uint64_t gen, bytes = 0;
    int rc = last_manifest(s, &mf, why, sizeof(why));

    if (rc == 0)
        manifest_ok(s, &mf, stream_id, need, last, why, sizeof(why));
    pthread_mutex_lock(&s->mu);
    gen = s->gen;
    pthread_mutex_unlock(&s->mu);
    if (rc != 0 || why[0] != '\0' || fetch_parts(s, &mf, gen, &head, &bytes, why,
                                                 sizeof(why)) != 0) {
        pthread_mutex_lock(&s->mu);
        snprintf(s->error, sizeof(s->error), "bootstrap: stream %.64s holds sequence %" PRIu64
                 " on, this host applied up to %" PRIu64 ", and %.300s", s->stream, need,
                 *from, why);
        pthread_mutex_unlock(&s->mu);
        if (mf.seq != s->snap_refused) {   /* once per manifest */
            s->snap_refused = mf.seq;
            rbd_log(LOG_WARNING, "filter source: bootstrap: %s", why);
        }
        return -1;
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

/* The snapshot before sn (the newest manifest of its stream, at a
 * sequence this host has seen in it: one past what the stream holds is
 * forged or stale, and neither stops sn nor moves a purge), or seq 0. */
static void previous(rbd_fsource_t *s, const fs_snap_t *sn, manifest_t *prev)
{
    char why[600];
    uint64_t seen;

    pthread_mutex_lock(&s->mu);
    seen = s->last_seq;
    pthread_mutex_unlock(&s->mu);
    if (last_manifest(s, prev, why, sizeof(why)) != 0 || prev->stream != sn->stream_id)
        prev->seq = 0;
    else if (prev->seq > seen) {
        rbd_log(LOG_WARNING, "filter source: the newest manifest in %s says sequence %" PRIu64
                ", past the stream's %" PRIu64 ": forged or stale, not taken as the snapshot "
                "before %" PRIu64, s->snap_stream, prev->seq, seen, sn->seq);
        prev->seq = 0;
    }
}

/* The manifest of sn (every part stored), then the purges it allows. */
static void publish_manifest(rbd_fsource_t *s, fs_snap_t *sn)
{
    manifest_t prev;
    char subject[96], id[96], seq[24], parts[24], stream[24], first[24], hash[24], why[600];
    const char *hdr[] = { "Rb-Snap-Seq", seq, "Rb-Snap-Parts", parts, "Rb-Snap-Stream", stream,
                          "Rb-Snap-First", first, "Rb-Snap-Hash", hash, NULL };
    uint64_t at, h = sn->seq;

    previous(s, sn, &prev);
    if (prev.seq >= sn->seq) {   /* another host's newer one was stored first */
        rbd_log(LOG_NOTICE, "filter source: snapshot at sequence %" PRIu64 " not stored: the one "
                "at %" PRIu64 " is newer", sn->seq, prev.seq);
        return;
    }
    for (size_t i = 0; i < sn->n; i++)
        h = parts_hash(h, sn->part[i].buf, sn->part[i].len);
    snprintf(subject, sizeof(subject), "%s.snapdone", s->stream);
    snprintf(id, sizeof(id), "snapdone.%016" PRIx64 ".%" PRIu64, sn->stream_id, sn->seq);
    snprintf(seq, sizeof(seq), "%" PRIu64, sn->seq);
    snprintf(parts, sizeof(parts), "%zu", sn->n);
    snprintf(stream, sizeof(stream), "%016" PRIx64, sn->stream_id);
    snprintf(first, sizeof(first), "%" PRIu64, sn->first);
    snprintf(hash, sizeof(hash), "%016" PRIx64, h);
    if (rbd_fsource_put(s, subject, NULL, 0, id, hdr, 0, &at, why, sizeof(why)) != 0) {
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
    if (prev.seq != 0 && purge(s, s->stream, prev.seq + 1) == 0) {
        pthread_mutex_lock(&s->mu);
        if (prev.seq + 1 > s->first_seq)
            s->first_seq = prev.seq + 1;
        pthread_mutex_unlock(&s->mu);
    }
}

void rbd_fsource_snap_publish(rbd_fsource_t *s)
{
    fs_snap_t *sn;
    char subject[128], id[96], why[600], seq[24], part[24], parts[24], stream[24];
    const char *hdr[] = { "Rb-Snap-Seq", seq, "Rb-Snap-Part", part, "Rb-Snap-Parts", parts,
                          "Rb-Snap-Stream", stream, NULL };
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
        snprintf(seq, sizeof(seq), "%" PRIu64, sn->seq);
        snprintf(part, sizeof(part), "%zu", sn->next);
        snprintf(parts, sizeof(parts), "%zu", sn->n);
        snprintf(stream, sizeof(stream), "%016" PRIx64, sn->stream_id);
        if (rbd_fsource_put(s, subject, sn->part[sn->next].buf, sn->part[sn->next].len, id,
                            hdr, 0, &at, why, sizeof(why)) == 0) {
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
