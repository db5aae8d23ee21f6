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
 * retried as any failure; the ops stream only by a host that never
 * applied from one, with its description: a random identity and
 * nats-filters); the ops stream is checked (check_stream: its identity
 * and nats-filters, from an answer a quorum stands behind, against the
 * one this host applies from and its own: another halts, and the halt is
 * checked again every FS_INFO_MS and lifted when a check holds); if the
 * stream no longer holds the message after the segment's, the newest
 * snapshot is fetched for the loop (filter_source_snap.c); then the
 * consumer starts right after.  The loop asks for a new set-up when a
 * purge overtook it (a gap).  The stream is checked again every
 * FS_INFO_MS, and at once after a reconnect, a delivery or a PubAck that
 * went backwards.  Between writes, the thread publishes a snapshot the
 * loop took.  Each write is published before its deadline (nats-timeout
 * after it was taken) or refused.  A publish that fails, or a check of the
 * stream without a quorum's answer, marks the source unhealthy: the loop
 * then refuses replicated writes at once, and the
 * thread publishes an empty probe message (its apply is REPL_POS alone)
 * every FS_PROBE_MS until one is acknowledged.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

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
    if (up) {   /* whatever happened meanwhile, the stream is checked again */
        s->recheck = 1;
        pthread_cond_signal(&s->cv);
    }
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

/* The ops stream, checked: found (or, by a host that never applied from
 * one, made with its description: a random identity and nats-filters),
 * its identity and nats-filters read from an answer a quorum stands
 * behind (a stream made before descriptions is given one), and compared
 * with the one this host applies from and with its own nats-filters.  0
 * and *si (the caller's) with s->followed set; -1 retry (s->error says
 * why); 1 halt (why in halt: the stream is gone, another, made for other
 * nats-filters, or not ringbloom's), which a later check may lift. */
static int check_stream(rbd_fsource_t *s, jsStreamInfo **si, char *halt, size_t hcap)
{
    const char *ops[1] = { s->subject };
    char desc[400], why[600];
    fs_ident_t id;
    uint64_t fresh = 0;
    int rc;

    while (fresh == 0)
        arc4random_buf(&fresh, sizeof(fresh));
    rbd_fsource_describe(desc, sizeof(desc), fresh, s->glob);
    if ((rc = rbd_fsource_stream(s, s->stream, ops, 1, 0, desc, s->followed == 0, si)) == 1) {
        pthread_mutex_lock(&s->mu);
        snprintf(halt, hcap, "stream %s does not exist (deleted?); this host applied from it up "
                 "to sequence %" PRIu64 " and makes no new one (its filters would mix two "
                 "streams): if it was deleted on purpose, start this daemon with an empty state "
                 "directory and no segment; checked again every %d s", s->stream,
                 s->loop_applied, FS_INFO_MS / 1000);
        pthread_mutex_unlock(&s->mu);
        return 1;
    }
    if (rc != 0)
        return -1;
    rc = rbd_fsource_ident(*si, s->stream, &id, why, sizeof(why));
    if (rc == -2)
        snprintf(halt, hcap, "stream %s: %.300s: clear it or give this host another "
                 "nats-stream", s->stream, why);
    else if (rc == -1)
        rbd_fsource_error(s, "stream", why);
    else if (id.described && strcmp(id.filters, s->glob) != 0)
        snprintf(halt, hcap, "stream %s replicates nats-filters '%.80s' (its description), "
                 "this host's is '%.80s': every host following one stream must have the same (a "
                 "name one replicates and another keeps local would be written by both); set it "
                 "so, or give this host another nats-stream", s->stream, id.filters, s->glob);
    else if (s->followed != 0 && id.id != s->followed)
        snprintf(halt, hcap, "stream %s is not the one this host applied from (its identity is "
                 "%016" PRIx64 ", this host's %016" PRIx64 ": it was deleted and made again): "
                 "start this daemon with an empty state directory and no segment to follow the "
                 "new one", s->stream, id.id, s->followed);
    else
        s->followed = id.id;
    if (rc == 0 && halt[0] == '\0' && !id.described)
        rbd_fsource_adopt(s, *si, id.id);
    if (rc == 0 && halt[0] == '\0')
        return 0;
    jsStreamInfo_Destroy(*si);
    *si = NULL;
    return rc == -1 ? -1 : 1;
}

/* Set-up from *from (the last sequence applied here): the streams (found
 * or made: the snapshots; the ops, checked: check_stream); if the stream
 * no longer holds the message after *from (purged after a snapshot), the
 * newest snapshot is fetched for the loop and *from becomes its sequence;
 * then the consumer starts right after *from.  0 ready; -1 retry later; 1
 * halt (the reason in halt, for the loop). */
static int setup(rbd_fsource_t *s, uint64_t *from, char *halt, size_t hcap)
{
    jsStreamInfo *si = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    natsStatus st;
    uint64_t need, last;
    char snap_subj[2][96], why[600];
    const char *snaps[2] = { snap_subj[0], snap_subj[1] };
    fs_consumer_t *cs;
    int rc;

    if (js_context(s) != 0)
        return -1;
    snprintf(snap_subj[0], sizeof(snap_subj[0]), "%s.snap.>", s->stream);
    snprintf(snap_subj[1], sizeof(snap_subj[1]), "%s.snapdone", s->stream);
    if (rbd_fsource_stream(s, s->snap_stream, snaps, 2, 1, NULL, 1, &si) != 0)
        return -1;
    jsStreamInfo_Destroy(si);
    if ((rc = check_stream(s, &si, halt, hcap)) != 0)
        return rc;
    /* the first sequence the stream holds, or its next one if it holds none */
    need = si->State.Msgs > 0 ? si->State.FirstSeq : si->State.LastSeq + 1;
    last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    /* Before the snapshot's parts and the subscription: the library may
     * deliver (and the loop apply, recording the stream's identity with
     * each message) before js_Subscribe returns.  A new generation: what
     * an earlier consumer or fetch queued is dropped. */
    pthread_mutex_lock(&s->mu);
    s->gen++;
    s->stream_id = s->followed;
    s->first_seq = need;
    if (last > s->last_seq)
        s->last_seq = last;
    pthread_mutex_unlock(&s->mu);
    if (need > *from + 1 && rbd_fsource_snap_fetch(s, s->followed, need, last, from) != 0)
        return -1;
    if ((cs = consumer_arg(s)) == NULL)
        return -1;
    pthread_mutex_lock(&s->mu);
    cs->s = s;
    cs->gen = s->gen;
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
        s->sub = NULL;
        return -1;
    }
    /* Writes are taken from now on: each is published after the consumer
     * exists, which starts below it. */
    pthread_mutex_lock(&s->mu);
    s->ready = 1;
    s->healthy = 1;
    s->error[0] = '\0';
    s->info_ms = rbd_mono_ms();
    pthread_mutex_unlock(&s->mu);
    rbd_log(LOG_NOTICE, "filter source: following stream %s from sequence %" PRIu64, s->stream,
            *from + 1);
    rbd_fsource_wake(s);
    return 0;
}

/* Under mu: every write waiting to be published answered with err
 * (nothing of them was written). */
static void fail_todo_locked(rbd_fsource_t *s, const char *err)
{
    while (s->todo != NULL) {
        fs_batch_t *b = s->todo;

        s->todo = b->next;
        fail_locked(s, b, err);
    }
    s->todo_tail = NULL;
    rbd_fsource_wake(s);
}

/* Not following (set-up failed, or halted): the waiting writes refused. */
static void refuse_todo(rbd_fsource_t *s, const char *why)
{
    char err[1024];

    pthread_mutex_lock(&s->mu);
    snprintf(err, sizeof(err), "ERR filter-source nats: not following stream %s (servers "
             "%.200s): %.500s; nothing was written", s->stream, s->server_list, why);
    fail_todo_locked(s, err);
    pthread_mutex_unlock(&s->mu);
}

/* The thread's halt set (or, line "", lifted) for the loop.  Halting
 * starts a new generation: what the consumer delivered is dropped, not
 * applied. */
static void set_halt(rbd_fsource_t *s, const char *line)
{
    int was;

    pthread_mutex_lock(&s->mu);
    was = s->thread_halt[0] != '\0';
    if (strcmp(s->thread_halt, line) != 0 && line[0] != '\0')
        rbd_log(LOG_ERR, "filter source: halted: %s", line);
    else if (was && line[0] == '\0')
        rbd_log(LOG_NOTICE, "filter source: stream %s checks out again: halt lifted", s->stream);
    snprintf(s->thread_halt, sizeof(s->thread_halt), "%s", line);
    if (line[0] != '\0') {
        s->ready = 0;
        s->gen++;
    }
    pthread_mutex_unlock(&s->mu);
    rbd_fsource_wake(s);
}

/* Set-up, retried every FS_RETRY_MS (FS_INFO_MS while halted: the halt
 * may be transient, such as a stream briefly not found), from sequence
 * from on (the consumer before, if any, dropped first).  0 following;
 * -1 stopped. */
static int follow(rbd_fsource_t *s, uint64_t from)
{
    char halt[512];

    if (s->sub != NULL) {
        (void)natsSubscription_Unsubscribe(s->sub);
        natsSubscription_Destroy(s->sub);
        s->sub = NULL;
    }
    while (!atomic_load(&s->stop)) {
        int rc;

        halt[0] = '\0';
        rc = setup(s, &from, halt, sizeof(halt));
        if (rc != -1)   /* a retry says nothing: a halt stays until a set-up holds */
            set_halt(s, halt);
        if (rc == 0)
            return 0;
        refuse_todo(s, rc == 1 ? halt : s->error);
        usleep((rc == 1 ? FS_INFO_MS : FS_RETRY_MS) * 1000);
        if (rc == 1) {
            pthread_mutex_lock(&s->mu);
            from = s->loop_applied;   /* halted, the loop applies nothing more */
            pthread_mutex_unlock(&s->mu);
        }
    }
    return -1;
}

/* Publishes data[0..len) (a batch's records; none: a probe) on the ops
 * subject, with msg_id (NULL: none) before deadline (monotonic ms; 0:
 * nats-timeout from now), and keeps the source's health.  0 and *seq, or
 * -1 with the reply line in err (*dup set if the stream held msg_id). */
static int publish(rbd_fsource_t *s, const void *data, size_t len, const char *msg_id,
                   uint64_t deadline, uint64_t *seq, int *dup, char *err, size_t cap)
{
    char why[600];
    int st = rbd_fsource_put(s, s->subject, data, len, msg_id, NULL, deadline, seq, why,
                             sizeof(why));
    uint64_t below;

    if (st == NATS_OK || st == FS_PUT_DUPLICATE) {
        pthread_mutex_lock(&s->mu);
        s->healthy = 1;
        s->acked += st == NATS_OK;
        s->last_ack_ms = rbd_now_ms();
        s->last_contact_ms = s->last_ack_ms;
        s->error[0] = '\0';
        below = s->last_ack > s->applied0 ? s->last_ack : s->applied0;
        if (st == NATS_OK && *seq <= below) {   /* this stream's sequences only grow */
            s->recheck = 1;
            snprintf(err, cap, "ERR filter-source nats: stream %s acknowledged this write at "
                     "sequence %" PRIu64 ", not above the %" PRIu64 " it had reached here: it "
                     "was deleted and made again? (the write is in that stream; this host "
                     "checks the stream's identity before it writes again)", s->stream, *seq,
                     below);
            st = -1;
        } else if (st == NATS_OK) {
            s->last_ack = *seq;
            if (*seq > s->last_seq)
                s->last_seq = *seq;
        }
        pthread_mutex_unlock(&s->mu);
        if (st == NATS_OK)
            return 0;
    }
    if (st == FS_PUT_DUPLICATE) {
        *dup = 1;
        snprintf(err, cap, "ERR filter-source nats: stream %s already holds a message with this "
                 "write's Nats-Msg-Id %s (at sequence %" PRIu64 "): a duplicate id, another "
                 "publisher used this host's ids (a forged or replayed message?); this write was "
                 "not stored and nothing was written; this host now publishes under a new id: "
                 "send it again", s->stream, msg_id, *seq);
        rbd_log(LOG_WARNING, "filter source: %s", err + 4);
        return -1;
    }
    if (st == -1)
        return -1;
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

/* Every FS_INFO_MS, and at once after a reconnect, a gap or a sequence
 * that went backwards (s->recheck): the ops stream checked (check_stream:
 * its identity and nats-filters, from an answer a quorum stands behind),
 * and its state kept, so a host that does not write knows how stale it
 * may be (the last contact, the stream's first and last sequences:
 * INFO).  Nothing is written.  0, or 1: halted (the caller sets up
 * again, which retries). */
static int check_now(rbd_fsource_t *s)
{
    jsStreamInfo *si = NULL;
    char halt[512] = "";
    int rc;

    pthread_mutex_lock(&s->mu);
    s->info_ms = rbd_mono_ms();
    s->recheck = 0;
    pthread_mutex_unlock(&s->mu);
    rc = check_stream(s, &si, halt, sizeof(halt));
    if (rc == 1) {
        set_halt(s, halt);
        refuse_todo(s, halt);
        return 1;
    }
    if (rc != 0) {
        /* No answer a quorum stands behind (s->error says why): a write
         * now could not commit either, so the loop refuses them at once
         * until a probe is acknowledged.  A write taken while this check
         * held the thread met its deadline unsent, and did not say so. */
        pthread_mutex_lock(&s->mu);
        if (s->healthy)
            s->probe_ms = rbd_now_ms();
        s->healthy = 0;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    s->last_contact_ms = rbd_now_ms();
    if (s->healthy)
        s->error[0] = '\0';
    if (si->State.LastSeq > s->last_seq)
        s->last_seq = si->State.LastSeq;
    s->first_seq = si->State.Msgs > 0 ? si->State.FirstSeq : si->State.LastSeq + 1;
    pthread_mutex_unlock(&s->mu);
    jsStreamInfo_Destroy(si);
    return 0;
}

/* Under mu, nothing to publish: a probe while unhealthy. */
static void idle_locked(rbd_fsource_t *s)
{
    struct timespec ts;
    uint64_t seq = 0;
    char err[1024];
    int dup = 0;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    if (!s->healthy && rbd_now_ms() - s->probe_ms >= FS_PROBE_MS) {
        s->probe_ms = rbd_now_ms();
        pthread_mutex_unlock(&s->mu);
        (void)publish(s, NULL, 0, NULL, 0, &seq, &dup, err, sizeof(err));
        pthread_mutex_lock(&s->mu);
        if (s->healthy)
            rbd_log(LOG_NOTICE, "filter source: stream %s answers again (probe at sequence %"
                    PRIu64 ")", s->stream, seq);
    }
}

/* Under mu: batch b, taken off the queue, published (or refused at once:
 * the source is unhealthy, or its time ran out while it waited) and
 * given back to the loop. */
static void send_locked(rbd_fsource_t *s, fs_batch_t *b)
{
    uint64_t deadline = b->born_ms + s->timeout_ms;
    char msg_id[48], err[1024];

    if (!s->healthy || rbd_mono_ms() >= deadline) {
        snprintf(err, sizeof(err), "ERR filter-source nats: stream %s: %s (servers %.200s): "
                 "%.300s; nothing was written", s->stream, s->healthy ? "the write could not "
                 "be sent within nats-timeout" : "does not answer", s->server_list,
                 s->error[0] != '\0' ? s->error : "the NATS thread was busy with the stream");
        fail_locked(s, b, err);
        rbd_fsource_wake(s);
        return;
    }
    pthread_mutex_unlock(&s->mu);
    snprintf(msg_id, sizeof(msg_id), "%016" PRIx64 ".%" PRIu64, b->origin, b->no);
    b->pub_rc = publish(s, b->buf, b->len, msg_id, deadline, &b->seq, &b->dup, b->err,
                        sizeof(b->err));
    pthread_mutex_lock(&s->mu);
    if (b->pub_rc != 0 && !s->healthy) {
        rbd_log(LOG_WARNING, "filter source: publish failed: %s", s->error);
        s->probe_ms = rbd_now_ms();
    }
    b->next = s->done;
    s->done = b;
    rbd_fsource_wake(s);
}

void *rbd_fsource_thread(void *arg)
{
    rbd_fsource_t *s = arg;

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
        uint64_t from = s->resync_from, since = rbd_mono_ms() - s->info_ms;
        int again = s->resync;

        /* The periodic check waits for the writes queued (up to twice its
         * period); a reconnect's or a sequence gone back's goes first. */
        if (!again && (s->recheck || (since >= FS_INFO_MS &&
                                      (b == NULL || since >= 2 * FS_INFO_MS)))) {
            pthread_mutex_unlock(&s->mu);
            again = check_now(s);
            pthread_mutex_lock(&s->mu);
            from = s->loop_applied;
            if (!again)
                continue;
        }
        if (again) {   /* the loop's next message is gone, or the stream does not check out */
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
        send_locked(s, b);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
