/*
 * filter_source.c - `filter-source nats`, the NATS side (filter_source.h
 * says what the source is; filter_source_start.c starts and stops it):
 * the one thread that owns the connection (libnats), sets the stream up,
 * follows it with an ordered consumer and publishes the loop's messages
 * one at a time (W = 1: a message is published only after the one before
 * it was acknowledged or failed, so this host's messages reach the stream
 * in the order its loop made them).
 *
 * The thread never touches the served state: messages delivered are
 * copied into s->rx and publishes' outcomes put on s->done, under s->mu,
 * and the eventfd wakes the loop (filter_source_loop.c), which applies
 * and answers.  Set-up, retried every FS_RETRY_MS until it holds: the
 * stream is looked up (js_GetStreamInfo) and created if missing
 * (js_AddStream: file storage, min(3, servers) replicas, limits
 * retention with nats-max-bytes and DiscardNew, so the stream never drops
 * history: a full stream refuses writes; "insufficient resources", jerr
 * 10005, right after the servers start, is retried as any failure); its
 * incarnation (XXH3-64 of name and creation time) is compared with the
 * one the segment applied from (another: halt); then the consumer starts
 * right after the segment's sequence.  A publish that fails marks the
 * source unhealthy: the loop then refuses replicated writes at once, and
 * the thread publishes an empty probe message (its apply is REPL_POS
 * alone) every FS_PROBE_MS until one is acknowledged.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "filter_source_impl.h"
#include "rbd_log.h"

void rbd_fsource_wake(rbd_fsource_t *s)
{
    uint64_t one = 1;

    if (write(s->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rbd_log(LOG_WARNING, "filter source: eventfd: %s", strerror(errno));
}

void rbd_fsource_batch_free(fs_batch_t *b)
{
    if (b == NULL)
        return;
    free(b->buf);
    free(b->tickets);
    free(b);
}

void rbd_fsource_queue(rbd_fsource_t *s, fs_batch_t *b)
{
    b->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->todo_tail != NULL)
        s->todo_tail->next = b;
    else
        s->todo = b;
    s->todo_tail = b;
    s->published++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Under mu: b's publish failed with err; it goes back to the loop. */
static void fail_locked(rbd_fsource_t *s, fs_batch_t *b, const char *err)
{
    b->pub_rc = -1;
    snprintf(b->err, sizeof(b->err), "%s", err);
    b->next = s->done;
    s->done = b;
}

/* The text of a failed NATS call, for messages: the status's words and,
 * right after the call, the library's last error (per thread, never
 * cleared: read only here). */
static void nats_why(char *out, size_t cap, natsStatus st, jsErrCode jerr)
{
    const char *last = nats_GetLastError(NULL);

    if (jerr != 0)
        snprintf(out, cap, "%s (jerr %d%s%s)", natsStatus_GetText(st), (int)jerr,
                 last != NULL && *last != '\0' ? ": " : "", last != NULL ? last : "");
    else
        snprintf(out, cap, "%s", natsStatus_GetText(st));
}

static void set_error(rbd_fsource_t *s, const char *what, const char *why)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->error, sizeof(s->error), "%.100s: %.400s", what, why);
    pthread_mutex_unlock(&s->mu);
}

/* ---- the connection's callbacks (the library's threads) ---- */

static void conn_state(natsConnection *nc, void *arg, int up)
{
    rbd_fsource_t *s = arg;
    char url[256] = "";

    if (up)
        (void)natsConnection_GetConnectedUrl(nc, url, sizeof(url));
    pthread_mutex_lock(&s->mu);
    s->connected = up;
    snprintf(s->server, sizeof(s->server), "%s", url);
    pthread_mutex_unlock(&s->mu);
    rbd_log(up ? LOG_NOTICE : LOG_WARNING, "filter source: NATS %s%s", up ? "connected to " :
            "disconnected", url);
}

static void on_up(natsConnection *nc, void *arg)
{
    conn_state(nc, arg, 1);
}

static void on_down(natsConnection *nc, void *arg)
{
    conn_state(nc, arg, 0);
}

/* "origin.no" as this source writes Nats-Msg-Id: 1 and both, else 0. */
static int parse_msg_id(const char *v, uint64_t *origin, uint64_t *no)
{
    char *end;

    *origin = strtoull(v, &end, 16);
    if (end == v || *end != '.')
        return 0;
    v = end + 1;
    *no = strtoull(v, &end, 10);
    return end != v && *end == '\0';
}

fs_rx_t *rbd_fsource_rx(natsMsg *m, uint64_t seq, uint64_t gen)
{
    const char *v = NULL;
    int len = natsMsg_GetDataLength(m);
    fs_rx_t *r = calloc(1, sizeof(*r) + (size_t)(len > 0 ? len : 0));

    if (r == NULL) {
        /* Not applying it would diverge; stopping is the honest answer. */
        rbd_log(LOG_ERR, "filter source: out of memory for stream message %" PRIu64, seq);
        abort();
    }
    r->seq = seq;
    r->gen = gen;
    if (natsMsgHeader_Get(m, "Rb-Format", &v) == NATS_OK && v != NULL) {
        char *end;
        long f = strtol(v, &end, 10);

        r->format = end != v && *end == '\0' && f > 0 && f < 1000000 ? (int)f : 0;
    }
    if (natsMsgHeader_Get(m, "Nats-Msg-Id", &v) == NATS_OK && v != NULL &&
        !parse_msg_id(v, &r->origin, &r->no))
        r->origin = 0;
    r->len = (size_t)(len > 0 ? len : 0);
    if (r->len > 0)
        memcpy(r->data, natsMsg_GetData(m), r->len);
    natsMsg_Destroy(m);
    return r;
}

/* The ordered consumer's callback: the message, copied, to the loop. */
static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg)
{
    const fs_consumer_t *cs = arg;
    rbd_fsource_t *s = cs->s;
    jsMsgMetaData *md = NULL;
    uint64_t seq;
    fs_rx_t *r;

    (void)nc;
    (void)sub;
    if (natsMsg_GetMetaData(&md, m) != NATS_OK) {
        natsMsg_Destroy(m);   /* not a stream message: the consumer's own traffic */
        return;
    }
    seq = md->Sequence.Stream;
    jsMsgMetaData_Destroy(md);
    r = rbd_fsource_rx(m, seq, cs->gen);
    pthread_mutex_lock(&s->mu);
    /* Bounded memory: a host catching up takes the stream at the loop's
     * pace (the library holds the rest, and the ordered consumer starts
     * again after the last one delivered if its buffer overflows). */
    while (s->rx_bytes > FS_RX_MAX_BYTES && !atomic_load(&s->stop) && cs->gen == s->gen)
        pthread_cond_wait(&s->rx_cv, &s->mu);
    if (cs->gen != s->gen) {   /* a consumer set-up replaced: the loop drops it anyway */
        pthread_mutex_unlock(&s->mu);
        free(r);
        return;
    }
    s->rx_bytes += r->len;
    if (s->rx_tail != NULL)
        s->rx_tail->next = r;
    else
        s->rx = r;
    s->rx_tail = r;
    if (r->seq > s->last_seq)
        s->last_seq = r->seq;
    pthread_mutex_unlock(&s->mu);
    rbd_fsource_wake(s);
}

/* ---- the thread ---- */

static int connect_nats(rbd_fsource_t *s)
{
    natsOptions *o = NULL;
    natsStatus st;
    char why[600], name[128];

    snprintf(name, sizeof(name), "ringbloomd %016" PRIx64, s->origin);
    st = natsOptions_Create(&o);
    if (st == NATS_OK)
        st = natsOptions_SetServers(o, (const char **)s->servers, s->nservers);
    if (st == NATS_OK)
        st = natsOptions_SetName(o, name);
    if (st == NATS_OK)
        st = natsOptions_SetTimeout(o, s->timeout_ms);
    if (st == NATS_OK)
        st = natsOptions_SetMaxReconnect(o, -1);
    if (st == NATS_OK)
        st = natsOptions_SetReconnectWait(o, 100);
    if (st == NATS_OK)
        st = natsOptions_SetReconnectJitter(o, 50, 0);
    if (st == NATS_OK)
        st = natsOptions_SetPingInterval(o, 1000);
    if (st == NATS_OK)
        st = natsOptions_SetMaxPingsOut(o, 2);
    if (st == NATS_OK)
        st = natsOptions_SetDisconnectedCB(o, on_down, s);
    if (st == NATS_OK)
        st = natsOptions_SetReconnectedCB(o, on_up, s);
    if (st == NATS_OK)
        st = natsOptions_SetRetryOnFailedConnect(o, true, on_up, s);
    if (st == NATS_OK && s->creds[0] != '\0')
        st = natsOptions_SetUserCredentialsFromFiles(o, s->creds, NULL);
    if (st == NATS_OK && s->cacert[0] != '\0')
        st = natsOptions_LoadCATrustedCertificates(o, s->cacert);
    if (st == NATS_OK && s->cert[0] != '\0')
        st = natsOptions_LoadCertificatesChain(o, s->cert, s->key);
    if (st == NATS_OK && (s->cacert[0] != '\0' || s->cert[0] != '\0'))
        st = natsOptions_SetSecure(o, true);
    if (st != NATS_OK) {
        nats_why(why, sizeof(why), st, 0);
        set_error(s, "NATS options", why);
        natsOptions_Destroy(o);
        return -1;
    }
    st = natsConnection_Connect(&s->nc, o);
    natsOptions_Destroy(o);
    if (st == NATS_OK)
        on_up(s->nc, s);
    else if (st != NATS_NOT_YET_CONNECTED) {   /* else: on_up when a server answers */
        nats_why(why, sizeof(why), st, 0);
        set_error(s, "connect", why);
        s->nc = NULL;
        return -1;
    }
    return 0;
}

int rbd_fsource_stream(rbd_fsource_t *s, const char *name, const char **subjects, int nsubj,
                       int discard_old, jsStreamInfo **si)
{
    jsStreamConfig c;
    jsErrCode jerr = 0;
    natsStatus st;
    char why[600];

    st = js_GetStreamInfo(si, s->js, name, NULL, &jerr);
    if (st == NATS_NOT_FOUND) {
        jsStreamConfig_Init(&c);
        c.Name = name;
        c.Subjects = subjects;
        c.SubjectsLen = nsubj;
        c.Storage = js_FileStorage;
        c.Replicas = s->nservers < 3 ? s->nservers : 3;
        c.Retention = js_LimitsPolicy;
        c.Discard = discard_old ? js_DiscardOld : js_DiscardNew;
        c.MaxBytes = (int64_t)(s->max_bytes / 2);   /* the two streams: nats-max-bytes */
        c.MaxMsgs = -1;
        c.MaxMsgSize = (int32_t)FS_MSG_MAX + 4096;
        jerr = 0;
        st = js_AddStream(si, s->js, &c, NULL, &jerr);
        if (st == NATS_OK)
            rbd_log(LOG_NOTICE, "filter source: created stream %s (subject %s, %lld replicas, "
                    "max %" PRIu64 " bytes)", name, subjects[0], (long long)c.Replicas,
                    s->max_bytes / 2);
    }
    if (st != NATS_OK) {
        nats_why(why, sizeof(why), st, jerr);
        set_error(s, jerr == 10005 ? "stream (not placed yet: insufficient resources)" :
                  "stream", why);
        return -1;
    }
    return 0;
}

/* Set-up from *from (the last sequence applied here): the streams (found
 * or made: the ops and the snapshots), the ops stream's incarnation
 * checked against the segment's; if the stream no longer holds the
 * message after *from (purged after a snapshot), the newest snapshot is
 * fetched for the loop and *from becomes its sequence; then the consumer
 * starts right after *from.  0 ready; -1 retry later; 1 halt (the reason
 * in halt, for the loop). */
static int setup(rbd_fsource_t *s, uint64_t *from, char *halt, size_t hcap)
{
    jsStreamInfo *si = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    natsStatus st;
    uint64_t id, need;
    const char *ops[1] = { s->subject };
    char snap_subj[2][96], why[600];
    const char *snaps[2] = { snap_subj[0], snap_subj[1] };
    fs_consumer_t *cs;

    if (s->js == NULL) {
        jsOptions jo;

        jsOptions_Init(&jo);
        jo.Wait = s->timeout_ms;
        if ((st = natsConnection_JetStream(&s->js, s->nc, &jo)) != NATS_OK) {
            nats_why(why, sizeof(why), st, 0);
            set_error(s, "JetStream", why);
            return -1;
        }
    }
    snprintf(snap_subj[0], sizeof(snap_subj[0]), "%s.snap.>", s->stream);
    snprintf(snap_subj[1], sizeof(snap_subj[1]), "%s.snapdone", s->stream);
    if (rbd_fsource_stream(s, s->snap_stream, snaps, 2, 1, &si) != 0)
        return -1;
    jsStreamInfo_Destroy(si);
    if (rbd_fsource_stream(s, s->stream, ops, 1, 0, &si) != 0)
        return -1;
    id = XXH3_64bits_withSeed(s->stream, strlen(s->stream), (uint64_t)si->Created);
    /* the first sequence the stream holds, or its next one if it holds none */
    need = si->State.Msgs > 0 ? si->State.FirstSeq : si->State.LastSeq + 1;
    jsStreamInfo_Destroy(si);
    if (s->stream0 != 0 && s->stream0 != id) {
        snprintf(halt, hcap, "stream %s is not the one this host applied from (it was deleted "
                 "and made again): start this daemon with an empty state directory and no "
                 "segment to follow the new one", s->stream);
        return 1;
    }
    if ((cs = calloc(1, sizeof(*cs))) == NULL) {
        set_error(s, "consumer", "out of memory");
        return -1;
    }
    /* Before the snapshot's parts and the subscription: the library may
     * deliver (and the loop apply, recording the stream's identity with
     * each message) before js_Subscribe returns; and a write accepted from
     * now on is delivered to this consumer, which starts below it. */
    pthread_mutex_lock(&s->mu);
    cs->s = s;
    cs->gen = ++s->gen;
    cs->next = s->consumers;
    s->consumers = cs;
    s->stream_id = id;
    s->first_seq = need;
    pthread_mutex_unlock(&s->mu);
    if (need > *from + 1 && rbd_fsource_snap_fetch(s, id, need, from) != 0)
        return -1;
    pthread_mutex_lock(&s->mu);
    s->ready = 1;
    s->healthy = 1;
    s->error[0] = '\0';
    pthread_mutex_unlock(&s->mu);
    jsSubOptions_Init(&so);
    so.Stream = s->stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = *from + 1;
    so.Config.Heartbeat = 1000000000LL;
    jerr = 0;
    st = js_Subscribe(&s->sub, s->js, s->subject, on_msg, cs, NULL, &so, &jerr);
    if (st != NATS_OK) {
        nats_why(why, sizeof(why), st, jerr);
        set_error(s, "consumer", why);
        pthread_mutex_lock(&s->mu);
        s->ready = 0;
        pthread_mutex_unlock(&s->mu);
        s->sub = NULL;
        return -1;
    }
    rbd_log(LOG_NOTICE, "filter source: following stream %s from sequence %" PRIu64, s->stream,
            *from + 1);
    rbd_fsource_wake(s);
    return 0;
}

/* Set-up, retried every FS_RETRY_MS, from sequence from on (the consumer
 * before, if any, dropped first).  0 following; -1 stopped or halted. */
static int follow(rbd_fsource_t *s, uint64_t from)
{
    char halt[512] = "";

    if (s->sub != NULL) {
        (void)natsSubscription_Unsubscribe(s->sub);
        natsSubscription_Destroy(s->sub);
        s->sub = NULL;
    }
    while (!atomic_load(&s->stop)) {
        int rc = setup(s, &from, halt, sizeof(halt));

        if (rc == 0)
            return 0;
        if (rc == 1) {
            pthread_mutex_lock(&s->mu);
            snprintf(s->thread_halt, sizeof(s->thread_halt), "%s", halt);
            pthread_mutex_unlock(&s->mu);
            rbd_log(LOG_ERR, "filter source: halted: %s", halt);
            rbd_fsource_wake(s);
            return -1;
        }
        usleep(FS_RETRY_MS * 1000);
    }
    return -1;
}

int rbd_fsource_put(rbd_fsource_t *s, const char *subject, const void *data, size_t len,
                    const char *msg_id, const char *const *hdr, uint64_t *seq, char *why,
                    size_t cap)
{
    natsMsg *m = NULL;
    jsPubAck *pa = NULL;
    jsPubOptions po;
    jsErrCode jerr = 0;
    natsStatus st;
    uint64_t t0 = rbd_mono_ms(), spent;

    st = natsMsg_Create(&m, subject, NULL, data, (int)len);
    if (st == NATS_OK)
        st = natsMsgHeader_Set(m, "Rb-Format", FS_FORMAT == 1 ? "1" : "?");
    for (; st == NATS_OK && hdr != NULL && hdr[0] != NULL; hdr += 2)
        st = natsMsgHeader_Set(m, hdr[0], hdr[1]);
    jsPubOptions_Init(&po);
    po.MsgId = msg_id;
    /* No responders: nothing was stored (the stream has no leader at this
     * moment: just made, or electing); tried again within the timeout, so
     * an election is waited out and a lost quorum refused in it. */
    for (;;) {
        if (st != NATS_OK)
            break;
        spent = rbd_mono_ms() - t0;
        po.MaxWait = spent < s->timeout_ms ? (int64_t)(s->timeout_ms - spent) : 1;
        jerr = 0;
        st = js_PublishMsg(&pa, s->js, m, &po, &jerr);
        if (st != NATS_NO_RESPONDERS || atomic_load(&s->stop) ||
            rbd_mono_ms() - t0 + FS_NO_LEADER_WAIT_MS >= s->timeout_ms)
            break;
        usleep(FS_NO_LEADER_WAIT_MS * 1000);
        st = NATS_OK;
    }
    natsMsg_Destroy(m);
    if (st == NATS_OK) {
        *seq = pa->Sequence;
        jsPubAck_Destroy(pa);
        return 0;
    }
    nats_why(why, cap, st, jerr);
    return (int)st;
}

/* Publishes data[0..len) (a batch's records; none: a probe) on the ops
 * subject, with msg_id (NULL: none), and keeps the source's health.  0
 * and *seq, or -1 with the reply line in err. */
static int publish(rbd_fsource_t *s, const void *data, size_t len, const char *msg_id,
                   uint64_t *seq, char *err, size_t cap)
{
    char why[600];
    int st = rbd_fsource_put(s, s->subject, data, len, msg_id, NULL, seq, why, sizeof(why));

    if (st == NATS_OK) {
        pthread_mutex_lock(&s->mu);
        s->healthy = 1;
        s->acked++;
        s->last_ack_ms = rbd_now_ms();
        if (*seq > s->last_seq)
            s->last_seq = *seq;
        s->error[0] = '\0';
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    if (st == NATS_TIMEOUT)
        snprintf(err, cap, "ERR filter-source nats: stream %s did not acknowledge within %u ms "
                 "(servers %.200s): the write's outcome is unknown (if the stream holds it, every "
                 "host applies it); writes to replicated filters are refused until it answers",
                 s->stream, s->timeout_ms, s->server_list);
    else if (st == NATS_NO_RESPONDERS)
        snprintf(err, cap, "ERR filter-source nats: stream %s has no leader (servers %.200s: no "
                 "quorum?): nothing was written; writes to replicated filters are refused until "
                 "it answers", s->stream, s->server_list);
    else
        snprintf(err, cap, "ERR filter-source nats: stream %s refused the write (servers %.200s): "
                 "%.300s", s->stream, s->server_list, why);
    pthread_mutex_lock(&s->mu);
    s->healthy = 0;
    snprintf(s->error, sizeof(s->error), "publish: %.480s", why);
    pthread_mutex_unlock(&s->mu);
    return -1;
}

/* Under mu, nothing to publish: a probe while unhealthy. */
static void idle_locked(rbd_fsource_t *s)
{
    struct timespec ts;
    uint64_t seq = 0;
    char err[1024];

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    if (!s->healthy && rbd_now_ms() - s->probe_ms >= FS_PROBE_MS) {
        s->probe_ms = rbd_now_ms();
        pthread_mutex_unlock(&s->mu);
        (void)publish(s, NULL, 0, NULL, &seq, err, sizeof(err));
        pthread_mutex_lock(&s->mu);
        if (s->healthy)
            rbd_log(LOG_NOTICE, "filter source: stream %s answers again (probe at sequence %"
                    PRIu64 ")", s->stream, seq);
    }
}

void *rbd_fsource_thread(void *arg)
{
    rbd_fsource_t *s = arg;
    char msg_id[48], err[1024];

    while (!atomic_load(&s->stop) && s->nc == NULL) {
        if (connect_nats(s) == 0)
            break;
        usleep(FS_RETRY_MS * 1000);
    }
    if (follow(s, s->applied0) != 0)
        return NULL;
    pthread_mutex_lock(&s->mu);
    while (!atomic_load(&s->stop)) {
        fs_batch_t *b = s->todo;

        if (s->resync) {   /* the loop's next message is gone: bootstrap again */
            uint64_t from = s->resync_from;

            s->resync = 0;
            pthread_mutex_unlock(&s->mu);
            if (follow(s, from) != 0)
                return NULL;
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (b == NULL && s->snap_out != NULL && s->healthy) {
            pthread_mutex_unlock(&s->mu);
            rbd_fsource_snap_publish(s);   /* one part, between writes */
            pthread_mutex_lock(&s->mu);
            continue;
        }
        if (b == NULL) {
            idle_locked(s);
            continue;
        }
        s->todo = b->next;
        if (s->todo == NULL)
            s->todo_tail = NULL;
        if (!s->healthy) {   /* made before the loop knew: refused at once too */
            snprintf(err, sizeof(err), "ERR filter-source nats: stream %s does not answer "
                     "(servers %.200s): %.300s; nothing was written", s->stream, s->server_list,
                     s->error);
            fail_locked(s, b, err);
            rbd_fsource_wake(s);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        snprintf(msg_id, sizeof(msg_id), "%016" PRIx64 ".%" PRIu64, s->origin, b->no);
        b->pub_rc = publish(s, b->buf, b->len, msg_id, &b->seq, b->err, sizeof(b->err));
        pthread_mutex_lock(&s->mu);
        if (b->pub_rc != 0) {
            rbd_log(LOG_WARNING, "filter source: publish failed: %s", s->error);
            s->probe_ms = rbd_now_ms();
        }
        b->next = s->done;
        s->done = b;
        rbd_fsource_wake(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
