/*
 * check_nats.c - the NATS JetStream facts the replication of issue 30
 * (docs/plans/issue30-jetstream.md) builds on, pinned down against a real
 * 3-server cluster on loopback (tests/harness/nats_cluster.c), one fresh
 * cluster per test, through libnats as the daemon will use it:
 *  a. an R3 file stream is created with a leader and 2 replicas; creating
 *     it again with the same config is OK, with another config it is
 *     refused with jerr 10058 (so "create if missing" is js_AddStream);
 *  b. sync publishes get contiguous sequences and an ordered consumer
 *     started at a sequence gets the rest in order, payloads exact;
 *  c. a Nats-Msg-Id published twice is acked as a duplicate with the
 *     first sequence, and the stream does not grow;
 *  d. after a purge below N, FirstSeq is N and an ordered consumer asked
 *     to start below N starts at N without a word (why the daemon must
 *     compare FirstSeq with applied + 1 itself);
 *  e. with two of three servers SIGKILLed a publish is refused within
 *     5 s; after both restart a publish succeeds within 60 s and the
 *     stream holds 1..LastSeq with no gap, every acked message in it;
 *  f. with every server up, stream info comes with a leader and its
 *     replicas current; with two of three SIGKILLed, the one left still
 *     answers it, with no leader and no replica current (why the daemon
 *     decides a stream's identity only from an answer a quorum stands
 *     behind).
 * No ringbloomd runs here.  Each fact prints its measured figures.
 * Skipped (exit 77) without nats-server.
 */
#include "config.h"

#include <nats/nats.h>
#include <time.h>

#include "nats_cluster.h"
#include "rb_test.h"

#define SERVERS   3
#define STREAM    "RBT"
#define SUBJECT   "RBT.ops"

static rb_nats_cluster_t cl;
static natsConnection *nc;
static jsCtx *js;

/* Microseconds of CLOCK_MONOTONIC. */
static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A fresh 3-server cluster and a client listing every server, connected
 * to the first (no randomizing), reconnecting forever. */
static void nats_setup(void)
{
    natsOptions *o = NULL;
    jsOptions jo;

    ck_assert_msg(rb_nats_start(&cl, SERVERS, 20000) == 0, "the NATS cluster did not start");
    ck_assert_int_eq(natsOptions_Create(&o), NATS_OK);
    ck_assert_int_eq(natsOptions_SetServers(o, cl.servers, SERVERS), NATS_OK);
    ck_assert_int_eq(natsOptions_SetNoRandomize(o, true), NATS_OK);
    ck_assert_int_eq(natsOptions_SetName(o, "check_nats"), NATS_OK);
    ck_assert_int_eq(natsOptions_SetTimeout(o, 2000), NATS_OK);
    ck_assert_int_eq(natsOptions_SetMaxReconnect(o, -1), NATS_OK);
    ck_assert_int_eq(natsOptions_SetReconnectWait(o, 100), NATS_OK);
    ck_assert_int_eq(natsConnection_Connect(&nc, o), NATS_OK);
    natsOptions_Destroy(o);
    ck_assert_int_eq(jsOptions_Init(&jo), NATS_OK);
    jo.Wait = 5000;
    ck_assert_int_eq(natsConnection_JetStream(&js, nc, &jo), NATS_OK);
}

static void nats_teardown(void)
{
    jsCtx_Destroy(js);
    js = NULL;
    natsConnection_Destroy(nc);
    nc = NULL;
    rb_nats_stop(&cl);
    nats_CloseAndWait(5000);   /* the library's threads and globals, for LeakSanitizer */
}

/* The config of the stream every test uses: R3, file, subject RBT.ops. */
static void rbt_config(jsStreamConfig *sc, const char **subjects)
{
    jsStreamConfig_Init(sc);
    sc->Name = STREAM;
    sc->Subjects = subjects;
    sc->SubjectsLen = 1;
    sc->Storage = js_FileStorage;
    sc->Replicas = SERVERS;
}

/* js_AddStream of that config: its status, *jerr set, the info into *si
 * (NULL: destroyed here). */
static natsStatus add_rbt(jsStreamInfo **si, jsErrCode *jerr)
{
    static const char *subjects[] = { SUBJECT };
    jsStreamConfig sc;
    jsStreamInfo *got = NULL;
    natsStatus s;

    rbt_config(&sc, subjects);
    *jerr = 0;
    s = js_AddStream(&got, js, &sc, NULL, jerr);
    if (si)
        *si = got;
    else
        jsStreamInfo_Destroy(got);
    return s;
}

static void must_add_rbt(void)
{
    jsErrCode jerr;
    natsStatus s = add_rbt(NULL, &jerr);

    ck_assert_msg(s == NATS_OK, "js_AddStream: %s (jerr %d)", natsStatus_GetText(s), (int)jerr);
}

/* Sync publish of text (msg_id NULL: none) with max_wait ms: its status;
 * the ack's sequence and duplicate flag into *seq / *dup when OK. */
static natsStatus publish(const char *text, const char *msg_id, int64_t max_wait, uint64_t *seq,
                          bool *dup)
{
    jsPubOptions po;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s;

    jsPubOptions_Init(&po);
    po.MsgId = msg_id;
    po.MaxWait = max_wait;
    s = js_Publish(&pa, js, SUBJECT, text, (int)strlen(text), &po, &jerr);
    if (s == NATS_OK) {
        if (seq)
            *seq = pa->Sequence;
        if (dup)
            *dup = pa->Duplicate;
    }
    jsPubAck_Destroy(pa);
    return s;
}

static jsStreamState rbt_state(void)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    jsStreamState st;
    natsStatus s = js_GetStreamInfo(&si, js, STREAM, NULL, &jerr);

    ck_assert_msg(s == NATS_OK, "js_GetStreamInfo: %s (jerr %d)", natsStatus_GetText(s),
                  (int)jerr);
    st = si->State;
    jsStreamInfo_Destroy(si);
    return st;
}

/* An ordered consumer on RBT.ops from stream sequence start. */
static natsSubscription *ordered_from(uint64_t start)
{
    jsSubOptions so;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    natsStatus s;

    jsSubOptions_Init(&so);
    so.Stream = STREAM;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = start;
    s = js_SubscribeSync(&sub, js, SUBJECT, NULL, &so, &jerr);
    ck_assert_msg(s == NATS_OK, "js_SubscribeSync: %s (jerr %d)", natsStatus_GetText(s),
                  (int)jerr);
    return sub;
}

/* The next message of sub (at most 5 s): its stream sequence, its
 * payload into text (cap bytes, NUL-terminated). */
static uint64_t next_seq(natsSubscription *sub, char *text, size_t cap)
{
    natsMsg *m = NULL;
    jsMsgMetaData *md = NULL;
    natsStatus s = natsSubscription_NextMsg(&m, sub, 5000);
    uint64_t seq;
    int len;

    ck_assert_msg(s == NATS_OK, "no message from the ordered consumer: %s",
                  natsStatus_GetText(s));
    ck_assert_int_eq(natsMsg_GetMetaData(&md, m), NATS_OK);
    seq = md->Sequence.Stream;
    len = natsMsg_GetDataLength(m);
    snprintf(text, cap, "%.*s", len, natsMsg_GetData(m));
    jsMsgMetaData_Destroy(md);
    natsMsg_Destroy(m);
    return seq;
}

static void sub_close(natsSubscription *sub)
{
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* a. Creating the stream: a leader, 2 replicas; again: OK; another
 * config under the name: 10058. */
START_TEST(test_nats_stream_create_is_idempotent)
{
    static const char *other[] = { "RBT.other" };
    jsStreamInfo *si = NULL;
    jsStreamConfig sc;
    jsErrCode jerr;
    natsStatus s;
    uint64_t t0 = now_us(), t1;

    s = add_rbt(&si, &jerr);
    t1 = now_us();
    ck_assert_msg(s == NATS_OK, "js_AddStream: %s (jerr %d)", natsStatus_GetText(s), (int)jerr);
    ck_assert_ptr_nonnull(si->Cluster);
    ck_assert_ptr_nonnull(si->Cluster->Leader);
    ck_assert_msg(strncmp(si->Cluster->Leader, "n", 1) == 0, "leader %s", si->Cluster->Leader);
    ck_assert_int_eq(si->Cluster->ReplicasLen, 2);
    ck_assert_int_eq(si->Config->Replicas, 3);
    ck_assert_int_eq(si->Config->Storage, js_FileStorage);
    printf("nats: a: R3 stream created in %.1f ms, leader %s, %d replicas\n",
           (double)(t1 - t0) / 1000.0, si->Cluster->Leader, si->Cluster->ReplicasLen);
    jsStreamInfo_Destroy(si);

    s = add_rbt(NULL, &jerr);
    ck_assert_msg(s == NATS_OK, "the same config again: %s (jerr %d)", natsStatus_GetText(s),
                  (int)jerr);

    rbt_config(&sc, other);
    jerr = 0;
    si = NULL;
    s = js_AddStream(&si, js, &sc, NULL, &jerr);
    ck_assert_int_eq(s, NATS_ERR);
    ck_assert_int_eq(jerr, 10058);
    ck_assert_ptr_null(si);
    printf("nats: a: the same config again: OK; another config: NATS_ERR, jerr %d\n", (int)jerr);
}
END_TEST

/* b. 200 publishes get 1..200; an ordered consumer from 101 gets
 * 101..200 in order with their payloads. */
START_TEST(test_nats_sequences_and_ordered_consumer)
{
    uint64_t lat[200], seq, t0;
    char text[64], want[64];
    natsSubscription *sub;

    must_add_rbt();
    for (int i = 0; i < 200; i++) {
        snprintf(text, sizeof(text), "op-%03d", i + 1);
        t0 = now_us();
        ck_assert_int_eq(publish(text, NULL, 5000, &seq, NULL), NATS_OK);
        lat[i] = now_us() - t0;
        ck_assert_uint_eq(seq, (uint64_t)i + 1);
    }
    ck_assert_uint_eq(rbt_state().LastSeq, 200);
    qsort(lat, 200, sizeof(lat[0]), cmp_u64);
    t0 = now_us();
    sub = ordered_from(101);
    for (uint64_t want_seq = 101; want_seq <= 200; want_seq++) {
        ck_assert_uint_eq(next_seq(sub, text, sizeof(text)), want_seq);
        snprintf(want, sizeof(want), "op-%03d", (int)want_seq);
        ck_assert_str_eq(text, want);
    }
    printf("nats: b: 200 publishes got 1..200 (p50 %.2f ms, p99 %.2f ms, max %.2f ms); "
           "ordered consumer from 101 got 101..200 in %.1f ms\n", (double)lat[99] / 1000.0,
           (double)lat[197] / 1000.0, (double)lat[199] / 1000.0,
           (double)(now_us() - t0) / 1000.0);
    sub_close(sub);
}
END_TEST

/* c. A repeated Nats-Msg-Id: Duplicate, the first sequence, nothing
 * stored. */
START_TEST(test_nats_duplicate_msg_id)
{
    uint64_t first = 0, again = 0;
    bool dup = true;

    must_add_rbt();
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(publish("filler", NULL, 5000, NULL, NULL), NATS_OK);
    ck_assert_int_eq(publish("dup-op", "rbt-dup-1", 5000, &first, &dup), NATS_OK);
    ck_assert(!dup);
    ck_assert_uint_eq(first, 6);
    ck_assert_int_eq(publish("dup-op", "rbt-dup-1", 5000, &again, &dup), NATS_OK);
    ck_assert(dup);
    ck_assert_uint_eq(again, first);
    ck_assert_uint_eq(rbt_state().LastSeq, first);
    ck_assert_uint_eq(rbt_state().Msgs, 6);
    printf("nats: c: Msg-Id again: Duplicate, sequence %llu both times, LastSeq %llu\n",
           (unsigned long long)again, (unsigned long long)first);
}
END_TEST

/* d. Purge below 101: FirstSeq 101; an ordered consumer asked for 2
 * silently starts at 101; a purge below 1 empties the stream. */
START_TEST(test_nats_purge_moves_first_seq_silently)
{
    jsOptions jo;
    jsErrCode jerr = 0;
    jsStreamState st;
    natsSubscription *sub;
    char text[64];
    uint64_t got;

    must_add_rbt();
    for (int i = 0; i < 200; i++) {
        snprintf(text, sizeof(text), "op-%03d", i + 1);
        ck_assert_int_eq(publish(text, NULL, 5000, NULL, NULL), NATS_OK);
    }
    jsOptions_Init(&jo);
    jo.Stream.Purge.Sequence = 101;
    ck_assert_int_eq(js_PurgeStream(js, STREAM, &jo, &jerr), NATS_OK);
    st = rbt_state();
    ck_assert_uint_eq(st.FirstSeq, 101);
    ck_assert_uint_eq(st.LastSeq, 200);
    ck_assert_uint_eq(st.Msgs, 100);
    sub = ordered_from(2);
    got = next_seq(sub, text, sizeof(text));
    ck_assert_uint_eq(got, 101);
    ck_assert_str_eq(text, "op-101");
    printf("nats: d: purge below 101: FirstSeq %llu, %llu msgs; consumer asked for 2 got %llu "
           "first, no error\n", (unsigned long long)st.FirstSeq, (unsigned long long)st.Msgs,
           (unsigned long long)got);
    sub_close(sub);
    /* A purge "below 1" is a purge of everything (the filter source's
     * snapshots never ask for one: filter_source_snap.c). */
    jo.Stream.Purge.Sequence = 1;
    ck_assert_int_eq(js_PurgeStream(js, STREAM, &jo, &jerr), NATS_OK);
    ck_assert_uint_eq(rbt_state().Msgs, 0);
    printf("nats: d: purge below 1: %llu msgs left\n", (unsigned long long)rbt_state().Msgs);
}
END_TEST

#define OUTAGE_ACKED 50

/* e. Two of three servers SIGKILLed: a publish is refused within 5 s;
 * both back: a publish succeeds within 60 s and the stream is
 * 1..LastSeq, every acked message in place. */
START_TEST(test_nats_quorum_loss_and_recovery)
{
    static char acked[OUTAGE_ACKED + 128][64];    /* [seq]: the acked payload, "" unknown */
    uint64_t seq, t0, refused_max = 0, back_ms;
    char text[64];
    natsSubscription *sub;
    natsStatus s;
    jsStreamState st;
    int tries = 0;

    memset(acked, 0, sizeof(acked));
    must_add_rbt();
    for (int i = 1; i <= OUTAGE_ACKED; i++) {
        snprintf(text, sizeof(text), "before-%d", i);
        ck_assert_int_eq(publish(text, NULL, 5000, &seq, NULL), NATS_OK);
        ck_assert_uint_eq(seq, (uint64_t)i);
        snprintf(acked[seq], sizeof(acked[seq]), "%s", text);
    }
    rb_nats_kill(&cl, 1);   /* the client is on n0 (no randomizing) */
    rb_nats_kill(&cl, 2);
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof(text), "outage-%d", i);
        t0 = now_us();
        s = publish(text, NULL, 1000, NULL, NULL);
        t0 = now_us() - t0;
        ck_assert_msg(s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS,
                      "a publish without quorum: %s", natsStatus_GetText(s));
        ck_assert_msg(t0 < 5000000, "refused after %llu ms", (unsigned long long)t0 / 1000);
        if (t0 > refused_max)
            refused_max = t0;
        printf("nats: e: without quorum: %s after %.1f ms\n", natsStatus_GetText(s),
               (double)t0 / 1000.0);
    }
    ck_assert_int_eq(rb_nats_restart(&cl, 1), 0);
    ck_assert_int_eq(rb_nats_restart(&cl, 2), 0);
    t0 = rb_test_now_ms();
    for (;;) {
        snprintf(text, sizeof(text), "after-%d", ++tries);
        if ((s = publish(text, NULL, 1000, &seq, NULL)) == NATS_OK)
            break;
        ck_assert_msg(rb_test_now_ms() - t0 < 60000, "no publish OK within 60 s: %s",
                      natsStatus_GetText(s));
        usleep(100 * 1000);
    }
    back_ms = rb_test_now_ms() - t0;
    ck_assert_uint_lt(seq, sizeof(acked) / sizeof(acked[0]));
    snprintf(acked[seq], sizeof(acked[seq]), "%s", text);
    st = rbt_state();
    ck_assert_uint_eq(st.FirstSeq, 1);
    ck_assert_uint_eq(st.LastSeq, seq);
    sub = ordered_from(1);
    for (uint64_t want = 1; want <= st.LastSeq; want++) {
        ck_assert_uint_eq(next_seq(sub, text, sizeof(text)), want);
        if (acked[want][0])
            ck_assert_str_eq(text, acked[want]);
    }
    printf("nats: e: refused within %.1f ms at most; after the restart a publish OK in %llu ms "
           "(%d tries), seq %llu; consumer got 1..%llu with no gap (%llu timed-out ones "
           "committed)\n", (double)refused_max / 1000.0, (unsigned long long)back_ms, tries,
           (unsigned long long)seq, (unsigned long long)st.LastSeq,
           (unsigned long long)(st.LastSeq - OUTAGE_ACKED - 1));
    sub_close(sub);
}
END_TEST


/* The stream's info as server i alone answers it (its own connection,
 * 1 s): its status; *si the answer. */
static natsStatus info_from(int i, jsStreamInfo **si)
{
    natsConnection *c1 = NULL;
    jsCtx *j1 = NULL;
    jsOptions jo;
    jsErrCode jerr = 0;
    natsStatus s;

    *si = NULL;
    if ((s = natsConnection_ConnectTo(&c1, cl.url[i])) != NATS_OK)
        return s;
    jsOptions_Init(&jo);
    jo.Wait = 1000;
    s = natsConnection_JetStream(&j1, c1, &jo);
    if (s == NATS_OK)
        s = js_GetStreamInfo(si, j1, STREAM, NULL, &jerr);
    jsCtx_Destroy(j1);
    natsConnection_Destroy(c1);
    return s;
}

/* Whether a quorum stands behind si: a leader and a majority of the
 * stream's peers (the leader included) current - the daemon's rule
 * (filter_source_check.c). */
static int has_quorum(const jsStreamInfo *si)
{
    int cur = 1;

    if (si->Cluster == NULL || si->Cluster->Leader == NULL || si->Cluster->Leader[0] == '\0')
        return 0;
    for (int k = 0; k < si->Cluster->ReplicasLen; k++)
        cur += si->Cluster->Replicas[k]->Current && !si->Cluster->Replicas[k]->Offline;
    return 2 * cur > 1 + si->Cluster->ReplicasLen;
}

/* f. Stream info without quorum: with every server up each answers with
 * a leader and its replicas current; with two of three SIGKILLed the one
 * left answers too (after a few timeouts) - with no leader and no
 * replica current, and its own view of the stream - so an answer is
 * proof of the stream's identity only with a quorum behind it.  For a
 * moment after the kill a lone leader may still count its peers current
 * (it has not missed them yet): such an answer is the leader's own view of
 * the stream it led, its identity the stream's, which is what the
 * daemon's rule relies on. */
START_TEST(test_nats_info_without_quorum)
{
    jsStreamInfo *si = NULL;
    natsStatus s;
    int64_t created;
    int answered = 0, failed = 0, same = 0, stale = 0;
    uint64_t t0;

    must_add_rbt();
    ck_assert_int_eq(publish("x", NULL, 5000, NULL, NULL), NATS_OK);
    ck_assert_int_eq(info_from(0, &si), NATS_OK);
    created = si->Created;
    jsStreamInfo_Destroy(si);
    for (int i = 0; i < SERVERS; i++) {
        ck_assert_int_eq(info_from(i, &si), NATS_OK);
        ck_assert_msg(has_quorum(si), "server %d's answer with every server up", i);
        jsStreamInfo_Destroy(si);
    }
    rb_nats_kill(&cl, 1);
    rb_nats_kill(&cl, 2);
    t0 = rb_test_now_ms();
    while (answered < 3 && rb_test_now_ms() - t0 < 20000) {
        if ((s = info_from(0, &si)) == NATS_OK && has_quorum(si)) {
            ck_assert_msg(si->Created == created, "a lone server's answer claims a quorum "
                          "for a stream of another identity");
            stale++;
            usleep(50000);   /* until the leader misses its peers */
        } else if (s == NATS_OK) {
            answered++;
            same += si->Created == created;
        } else
            failed++;
        jsStreamInfo_Destroy(si);
    }
    printf("nats: f: with two of three servers killed, the one left answered stream info %d "
           "times without a quorum (after %d failures and %d answers of a leader that had not "
           "missed its peers yet, each with the stream's identity; %llu ms); its creation "
           "time the leader's %d of %d times\n", answered, failed, stale,
           (unsigned long long)(rb_test_now_ms() - t0), same, answered);
    ck_assert_int_ge(answered, 1);
}
END_TEST

int main(void)
{
    if (!rb_nats_program()) {
        printf("SKIP: nats-server is not installed; install the Debian package nats-server\n");
        return 77;
    }
    return RB_TEST_MAIN("nats",
                        RB_TCASE("jetstream", 120, nats_setup, nats_teardown,
                                 test_nats_stream_create_is_idempotent,
                                 test_nats_sequences_and_ordered_consumer,
                                 test_nats_duplicate_msg_id,
                                 test_nats_purge_moves_first_seq_silently,
                                 test_nats_quorum_loss_and_recovery,
                                 test_nats_info_without_quorum));
}
