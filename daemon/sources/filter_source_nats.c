/*
 * filter_source_nats.c - `filter-source nats`: the JetStream calls the
 * NATS thread's two jobs share (filter_source.c follows and publishes the
 * writes, filter_source_snap.c stores and fetches snapshots): a message
 * published with its headers, waiting out an election; a stream found or
 * made; a delivered or fetched message copied for the loop; a failed
 * call's text.  Called on the NATS thread (rbd_fsource_rx also on the
 * library's, from the consumer's callback).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "filter_source_impl.h"
#include "rbd_log.h"

/* The text of a failed NATS call, for messages: the status's words and,
 * right after the call, the library's last error (per thread, never
 * cleared: read only here). */
void rbd_fsource_why(char *out, size_t cap, natsStatus st, jsErrCode jerr)
{
    const char *last = nats_GetLastError(NULL);

    if (jerr != 0)
        snprintf(out, cap, "%s (jerr %d%s%s)", natsStatus_GetText(st), (int)jerr,
                 last != NULL && *last != '\0' ? ": " : "", last != NULL ? last : "");
    else
        snprintf(out, cap, "%s", natsStatus_GetText(st));
}

void rbd_fsource_error(rbd_fsource_t *s, const char *what, const char *why)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->error, sizeof(s->error), "%.100s: %.400s", what, why);
    pthread_mutex_unlock(&s->mu);
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

int rbd_fsource_stream(rbd_fsource_t *s, const char *name, const char **subjects, int nsubj,
                       int discard_old, const char *desc, int make, jsStreamInfo **si)
{
    jsStreamConfig c;
    jsErrCode jerr = 0;
    natsStatus st;
    char why[600];

    st = js_GetStreamInfo(si, s->js, name, NULL, &jerr);
    if (st == NATS_NOT_FOUND && !make)
        return 1;
    if (st == NATS_NOT_FOUND) {
        jsStreamConfig_Init(&c);
        c.Name = name;
        c.Description = desc;
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
        rbd_fsource_why(why, sizeof(why), st, jerr);
        rbd_fsource_error(s, jerr == 10005 ? "stream (not placed yet: insufficient resources)" :
                  "stream", why);
        return -1;
    }
    return 0;
}

void rbd_fsource_adopt(rbd_fsource_t *s, jsStreamInfo *si, uint64_t id)
{
    const char *was = si->Config->Description;
    jsStreamInfo *got = NULL;
    jsErrCode jerr = 0;
    natsStatus st;
    char desc[400], why[600];

    if (s->adopt_tried)
        return;
    s->adopt_tried = 1;
    rbd_fsource_describe(desc, sizeof(desc), id, s->glob);
    si->Config->Description = desc;
    st = js_UpdateStream(&got, s->js, si->Config, NULL, &jerr);
    si->Config->Description = was;
    jsStreamInfo_Destroy(got);
    if (st == NATS_OK) {
        rbd_log(LOG_NOTICE, "filter source: stream %s, made before descriptions, described: "
                "%s", si->Config->Name, desc);
        return;
    }
    rbd_fsource_why(why, sizeof(why), st, jerr);
    rbd_log(LOG_WARNING, "filter source: stream %s, made before descriptions, could not be "
            "given one (%s): followed by its creation time, and the hosts' nats-filters are "
            "not compared", si->Config->Name, why);
}

int rbd_fsource_put(rbd_fsource_t *s, const char *subject, const void *data, size_t len,
                    const char *msg_id, const char *const *hdr, uint64_t deadline,
                    uint64_t *seq, char *why, size_t cap)
{
    natsMsg *m = NULL;
    jsPubAck *pa = NULL;
    jsPubOptions po;
    jsErrCode jerr = 0;
    natsStatus st;
    uint64_t now = rbd_mono_ms();
    int dup = 0;

    if (deadline == 0)
        deadline = now + s->timeout_ms;
    st = natsMsg_Create(&m, subject, NULL, data, (int)len);
    if (st == NATS_OK)
        st = natsMsgHeader_Set(m, "Rb-Format", FS_FORMAT == 1 ? "1" : "?");
    for (; st == NATS_OK && hdr != NULL && hdr[0] != NULL; hdr += 2)
        st = natsMsgHeader_Set(m, hdr[0], hdr[1]);
    jsPubOptions_Init(&po);
    po.MsgId = msg_id;
    /* No responders: nothing was stored (the stream has no leader at this
     * moment: just made, or electing); tried again until the deadline, so
     * an election is waited out and a lost quorum refused in it. */
    for (;;) {
        if (st != NATS_OK)
            break;
        now = rbd_mono_ms();
        po.MaxWait = now < deadline ? (int64_t)(deadline - now) : 1;
        jerr = 0;
        st = js_PublishMsg(&pa, s->js, m, &po, &jerr);
        if (st != NATS_NO_RESPONDERS || atomic_load(&s->stop) ||
            rbd_mono_ms() + FS_NO_LEADER_WAIT_MS >= deadline)
            break;
        usleep(FS_NO_LEADER_WAIT_MS * 1000);
        st = NATS_OK;
    }
    natsMsg_Destroy(m);
    if (st == NATS_OK) {
        *seq = pa->Sequence;
        dup = pa->Duplicate;
        jsPubAck_Destroy(pa);
        if (!dup)
            return 0;
        /* The stream held a message with this id: this one was not stored
         * (a forged or replayed message took the id first). */
        snprintf(why, cap, "the stream already holds a message with Nats-Msg-Id %s (at "
                 "sequence %" PRIu64 "): a duplicate id, so this one was not stored", msg_id,
                 *seq);
        return FS_PUT_DUPLICATE;
    }
    rbd_fsource_why(why, cap, st, jerr);
    return (int)st;
}
