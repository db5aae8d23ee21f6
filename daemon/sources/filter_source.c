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
 * streams are looked up (js_GetStreamInfo) and made if missing
 * (js_AddStream: file storage, min(3, servers) replicas, half of
 * nats-max-bytes each; the ops stream with DiscardNew, so it drops no
 * message by itself: a full stream refuses writes, and only the purge
 * after a snapshot removes the messages the snapshot before covers;
 * "insufficient resources", jerr 10005, right after the servers start, is
 * retried as any failure); the ops stream's incarnation (XXH3-64 of name
 * and creation time) is compared with the one the segment applied from
 * (another: halt); if the stream no longer holds the message after the
 * segment's, the newest snapshot is fetched for the loop
 * (filter_source_snap.c); then the consumer starts right after.  The loop
 * asks for a new set-up when a purge overtook it (a gap).  Between
 * writes, the thread publishes a snapshot the loop took.  A publish that
 * fails marks the source unhealthy: the loop then refuses replicated
 * writes at once, and the thread publishes an empty probe message (its
 * apply is REPL_POS alone) every FS_PROBE_MS until one is acknowledged.
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
    rbd_fsource_rx_append_locked(s, r);
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
        rbd_fsource_why(why, sizeof(why), st, 0);
        rbd_fsource_error(s, "NATS options", why);
        natsOptions_Destroy(o);
        return -1;
    }
    st = natsConnection_Connect(&s->nc, o);
    natsOptions_Destroy(o);
    if (st == NATS_OK)
        on_up(s->nc, s);
    else if (st != NATS_NOT_YET_CONNECTED) {   /* else: on_up when a server answers */
        rbd_fsource_why(why, sizeof(why), st, 0);
        rbd_fsource_error(s, "connect", why);
        s->nc = NULL;
        return -1;
    }
    return 0;
}

/* The JetStream context, made once.  0, or -1 (s->error says why). */
static int js_context(rbd_fsource_t *s)
{
    jsOptions jo;
    natsStatus st;
    char why[600];

    if (s->js != NULL)
        return 0;
    jsOptions_Init(&jo);
    jo.Wait = s->timeout_ms;
    if ((st = natsConnection_JetStream(&s->js, s->nc, &jo)) == NATS_OK)
        return 0;
    rbd_fsource_why(why, sizeof(why), st, 0);
    rbd_fsource_error(s, "JetStream", why);
    return -1;
}

/* The next consumer's callback argument, which lives until the source is
 * freed (a failed subscription's is used again: no callback can hold it,
 * and retries do not grow the list).  NULL out of memory (said). */
static fs_consumer_t *consumer_arg(rbd_fsource_t *s)
{
    fs_consumer_t *cs = s->consumers;

    if (cs != NULL && !cs->subscribed)
        return cs;
    if ((cs = calloc(1, sizeof(*cs))) == NULL) {
        rbd_fsource_error(s, "consumer", "out of memory");
        return NULL;
    }
    cs->next = s->consumers;
    s->consumers = cs;
    return cs;
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

    if (js_context(s) != 0)
        return -1;
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
    /* Before the snapshot's parts and the subscription: the library may
     * deliver (and the loop apply, recording the stream's identity with
     * each message) before js_Subscribe returns; and a write accepted from
     * now on is delivered to this consumer, which starts below it.  A new
     * generation: what an earlier consumer or fetch queued is dropped. */
    pthread_mutex_lock(&s->mu);
    s->gen++;
    s->stream_id = id;
    s->first_seq = need;
    pthread_mutex_unlock(&s->mu);
    if (need > *from + 1 && rbd_fsource_snap_fetch(s, id, need, from) != 0)
        return -1;
    if ((cs = consumer_arg(s)) == NULL)
        return -1;
    pthread_mutex_lock(&s->mu);
    cs->s = s;
    cs->gen = s->gen;
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
    cs->subscribed = st == NATS_OK;
    if (st != NATS_OK) {
        rbd_fsource_why(why, sizeof(why), st, jerr);
        rbd_fsource_error(s, "consumer", why);
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
        s->last_contact_ms = s->last_ack_ms;
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

/* Under mu, nothing to publish for FS_INFO_MS: the stream's state asked
 * for, so a host that does not write knows how stale it may be (the last
 * contact, the stream's first and last sequences: INFO).  Nothing is
 * written to the stream. */
static void poll_stream_locked(rbd_fsource_t *s)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st;
    char why[600];

    s->info_ms = rbd_mono_ms();
    pthread_mutex_unlock(&s->mu);
    st = js_GetStreamInfo(&si, s->js, s->stream, NULL, &jerr);
    if (st != NATS_OK)
        rbd_fsource_why(why, sizeof(why), st, jerr);
    pthread_mutex_lock(&s->mu);
    if (st != NATS_OK) {
        snprintf(s->error, sizeof(s->error), "stream info: %.480s", why);
        return;
    }
    s->last_contact_ms = rbd_now_ms();
    if (si->State.LastSeq > s->last_seq)
        s->last_seq = si->State.LastSeq;
    s->first_seq = si->State.Msgs > 0 ? si->State.FirstSeq : si->State.LastSeq + 1;
    jsStreamInfo_Destroy(si);
}

/* Under mu, nothing to publish: a probe while unhealthy, else the
 * stream's state now and then. */
static void idle_locked(rbd_fsource_t *s)
{
    struct timespec ts;
    uint64_t seq = 0;
    char err[1024];

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    if (s->healthy && s->todo == NULL && rbd_mono_ms() - s->info_ms >= FS_INFO_MS)
        poll_stream_locked(s);
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
