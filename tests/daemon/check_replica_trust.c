/*
 * check_replica_trust.c - check_replica's "trust" TCase: what crosses
 * from the stream and its servers into a host is input, checked where it
 * arrives (issue 41; docs/design.md, "Beyond one host: filters from NATS
 * JetStream", "What crosses the boundary").  Each test forges or forces
 * what a hostile publisher or a fault would bring, on the fleet of
 * check_replica.c, and prints what it measured:
 *  outside   records naming filters outside nats-filters, and a reserve
 *            past max-command-bytes, are skipped on every host and
 *            counted; a host with other nats-filters halts, saying so,
 *            and writes into no one's local filter;
 *  again     the stream deleted and made again by a fresh host: the
 *            running hosts halt within seconds, saying so, and write
 *            nothing into the new stream;
 *  manifest  a forged snapshot manifest (a sequence past the stream's
 *            last) is refused by a late host, which keeps asking and
 *            bootstraps from the next real snapshot, every key there;
 *  quorum    a daemon restarted while one server of three is up, its
 *            stream-info answers made a minority server's (no leader, a
 *            creation time a second off: tests/fault/nats_shim.c), does
 *            not halt, and follows once quorum is back;
 *  skip      a message of a newer Rb-Format halts every host; NATS.SKIP
 *            on one host skips it on all, counted and logged, a late host
 *            included;
 *  dup       forged messages holding this host's next Nats-Msg-Ids: its
 *            write is refused at once naming the duplicate id, the next
 *            goes through;
 *  bound     with quorum lost, and on a daemon restarted without it,
 *            every replicated write is answered within nats-timeout +
 *            500 ms.
 */
#include "config.h"

#include <signal.h>
#include <sys/stat.h>

#include "filter_source_impl.h"   /* rbd_fsource_record: the records forged */
#include "replica.h"

/* The whole record of op into buf (room for it): its length. */
static size_t forge(const rbd_op_t *op, unsigned char *buf)
{
    return rbd_fsource_record(op, buf);
}

/* A BF_RESERVE op of name for capacity keys at 1 %. */
static rbd_op_t reserve_op(const char *name, uint64_t capacity)
{
    static unsigned char secret[RB_BLOOM_SECRET_BYTES];
    rbd_op_t op = { .type = RBD_OP_BF_RESERVE, .name = name, .len = strlen(name),
                    .secret = secret };

    op.params.capacity = capacity;
    op.params.error_rate = 0.01;
    op.params.layout = RB_BLOOM_BLOCKED;
    op.params.expansion = RB_BLOOM_DEFAULT_EXPANSION;
    return op;
}

/* Host h's INFO replication, whole (a static buffer). */
static const char *replication(int h)
{
    static char buf[8192];
    int rc;

    snprintf(buf, sizeof(buf), "%s", rbd_cmd(c[h], &rc, "INFO", "replication",
                                             (const char *)NULL));
    ck_assert_int_eq(rc, RB_OK);
    return buf;
}

/* Until host h's INFO nats_halted is want (<= 20 s): the ms it took. */
static uint64_t await_halted(int h, int want)
{
    uint64_t t0 = rb_test_now_ms();

    while ((int)rbd_info_num(c[h], "replication", "nats_halted") != want) {
        ck_assert_msg(rb_test_now_ms() - t0 < 20000, "host %d: nats_halted stays %d: %s", h,
                      !want, replication(h));
        usleep(20 * 1000);
    }
    return rb_test_now_ms() - t0;
}

/* A JetStream context on server 0 (the caller destroys both). */
static jsCtx *js_on(natsConnection **nc)
{
    jsCtx *js = NULL;

    ck_assert_int_eq(natsConnection_ConnectTo(nc, cl.url[0]), NATS_OK);
    ck_assert_int_eq(natsConnection_JetStream(&js, *nc, NULL), NATS_OK);
    return js;
}

/* The ops stream's last sequence. */
static uint64_t stream_last(void)
{
    natsConnection *nc = NULL;
    jsCtx *js = js_on(&nc);
    jsStreamInfo *si = NULL;
    uint64_t last;

    ck_assert_int_eq(js_GetStreamInfo(&si, js, STREAM, NULL, NULL), NATS_OK);
    last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return last;
}

/* BF.EXISTS name key on host h: "1", "0" or the error. */
static const char *exists(int h, const char *name, const char *key)
{
    static char buf[512];
    int rc;

    snprintf(buf, sizeof(buf), "%s", rbd_cmd(c[h], &rc, "BF.EXISTS", name, key,
                                             (const char *)NULL));
    return buf;
}

/* Runs words on host h until the stream takes them (<= 60 s: an
 * election, quorum coming back): the reply, "1" or "0" ("0" only after a
 * try whose outcome was unknown). */
static const char *write_ok(int h, const char *const *argv, size_t argc)
{
    uint64_t t0 = rb_test_now_ms();
    int unknown = 0;
    const char *got;

    while (strncmp(got = write_on(h, argv, argc), "ERR filter-source nats", 22) == 0) {
        unknown += strstr(got, "outcome is unknown") != NULL ||
                   strstr(got, "the stream holds this write") != NULL;
        ck_assert_msg(rb_test_now_ms() - t0 < 60000, "host %d: no write in 60 s: %s", h, got);
        usleep(100 * 1000);
    }
    ck_assert_msg(strcmp(got, "1") == 0 || (unknown && strcmp(got, "0") == 0), "%s", got);
    return got;
}

START_TEST(test_replica_outside_filters)
{
    unsigned char rec[1024];
    rb_key_t key = { "forged", 6 };
    rbd_op_t add = { .type = RBD_OP_BF_ADD, .name = "local:x", .len = 7, .keys = &key,
                     .nkeys = 1 };
    rbd_op_t big = reserve_op("local:big", 50000000), huge = reserve_op("r:huge", 20000000);
    uint64_t s1, s2, s3, mem0, mem1, ms;
    char *at;
    const char *got, *local_x;
    int rc;

    fleet_start_with("max-command-bytes 8mb\n");
    rbd_expect(c[0], "1", "BF.ADD", "local:x", "a");
    mem0 = (uint64_t)rbd_info_num(c[0], "memory", "used_memory");
    s1 = publish_raw(rec, forge(&add, rec), "1");
    s2 = publish_raw(rec, forge(&big, rec), "1");
    s3 = publish_raw(rec, forge(&huge, rec), "1");
    ck_assert_str_eq(write_on(1, (const char *const[]){ "BF.ADD", "r:ok", "a" }, 3), "1");
    converge(HOSTS, s3 + 1);
    mem1 = (uint64_t)rbd_info_num(c[0], "memory", "used_memory");
    local_x = exists(0, "local:x", "forged");
    printf("replica: outside: forged BF.ADD local:x (seq %llu), BF.RESERVE local:big of 60 MB "
           "(%llu), BF.RESERVE r:huge of 24 MB past max-command-bytes 8 MB (%llu): host 0's "
           "local:x has 'forged': %s, used_memory %llu -> %llu bytes\n", (unsigned long long)s1,
           (unsigned long long)s2, (unsigned long long)s3, local_x, (unsigned long long)mem0,
           (unsigned long long)mem1);
    ck_assert_str_eq(local_x, "0");
    ck_assert_uint_lt(mem1, mem0 + (8u << 20));
    for (int h = 0; h < HOSTS; h++) {
        rbd_expect(c[h], "0", "EXISTS", "local:big");
        rbd_expect(c[h], "0", "EXISTS", "r:huge");
        ck_assert_int_eq((int)rbd_info_num(c[h], "replication", "nats_msgs_skipped"), 3);
        ck_assert_int_eq((int)rbd_info_num(c[h], "replication", "nats_msgs_outside_filters"), 2);
        ck_assert_int_eq(rbd_log_count(&d[h], "names a filter outside nats-filters"), 2);
        ck_assert_int_eq(rbd_log_count(&d[h], "more than this host's max-command-bytes"), 1);
    }
    /* A host whose nats-filters differ halts, saying so, and writes into
     * no one's local filter. */
    at = strstr(extra, "nats-filters r:*");
    ck_assert_ptr_nonnull(at);
    memmove(at + 14, at + 16, strlen(at + 16) + 1);   /* "nats-filters *" */
    memcpy(at, "nats-filters *", 14);
    host_start(HOSTS);
    got = rbd_cmd(c[HOSTS], &rc, "BF.ADD", "local:x", "from-host-3", (const char *)NULL);
    printf("replica: outside: a host with nats-filters '*': its BF.ADD local:x answered %s\n",
           got);
    ms = await_halted(HOSTS, 1);
    ck_assert_msg(strstr(replication(HOSTS), "replicates nats-filters 'r:*'") != NULL, "%s",
                  replication(HOSTS));
    got = rbd_cmd(c[HOSTS], &rc, "BF.ADD", "local:x", "from-host-3", (const char *)NULL);
    ck_assert_msg(rc != RB_OK && strstr(got, "halted") != NULL, "%s", got);
    ck_assert_str_eq(write_on(1, (const char *const[]){ "BF.ADD", "r:ok", "b" }, 3), "1");
    converge(HOSTS, s3 + 2);
    ck_assert_str_eq(exists(0, "local:x", "from-host-3"), "0");
    printf("replica: outside: skipped and counted on 3 hosts (3 skipped, 2 outside the "
           "filters); the host with other nats-filters halted %llu ms after its start: %s\n",
           (unsigned long long)ms, got);
}
END_TEST

START_TEST(test_replica_stream_made_again)
{
    natsConnection *nc = NULL;
    jsCtx *js;
    uint64_t t0, ms[HOSTS];
    const char *got;
    int rc;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:f", "a" }, 3), "1");
    ck_assert_str_eq(write_on(1, (const char *const[]){ "BF.ADD", "r:f", "b" }, 3), "1");
    converge(HOSTS, 2);
    js = js_on(&nc);
    ck_assert_int_eq(js_DeleteStream(js, STREAM, NULL, NULL), NATS_OK);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    /* A fresh host makes it again and writes. */
    t0 = rb_test_now_ms();
    host_start(HOSTS);
    await_ready(HOSTS);
    ck_assert_str_eq(write_on(HOSTS, (const char *const[]){ "BF.ADD", "r:f", "new" }, 3), "1");
    for (int h = 0; h < HOSTS; h++) {
        int halted = (int)rbd_info_num(c[h], "replication", "nats_halted");

        printf("replica: again: host %d right after the new host's write: halted %d, applied "
               "%llu\n", h, halted, (unsigned long long)applied(h));
        ms[h] = await_halted(h, 1) + rb_test_now_ms() - t0;
        ck_assert_msg(strstr(replication(h), "deleted") != NULL, "%s", replication(h));
        got = rbd_cmd(c[h], &rc, "BF.ADD", "r:f", "old", (const char *)NULL);
        ck_assert_msg(rc != RB_OK && strstr(got, "halted") != NULL, "host %d: %s", h, got);
    }
    ck_assert_uint_eq(stream_last(), applied(HOSTS));
    ck_assert_str_eq(exists(HOSTS, "r:f", "old"), "0");
    printf("replica: again: the stream deleted and made again by a fresh host: hosts halted "
           "within %llu, %llu, %llu ms of its start, writing nothing into the new stream (%llu "
           "messages, all the new host's)\n", (unsigned long long)ms[0],
           (unsigned long long)ms[1], (unsigned long long)ms[2],
           (unsigned long long)stream_last());
}
END_TEST

/* The newest manifest's Rb-Snap-Stream (hex). */
static void manifest_stream(char *out, size_t cap)
{
    natsConnection *nc = NULL;
    jsCtx *js = js_on(&nc);
    natsMsg *m = NULL;
    const char *v = NULL;

    ck_assert_int_eq(js_GetLastMsg(&m, js, STREAM "_SNAP", STREAM ".snapdone", NULL, NULL),
                     NATS_OK);
    ck_assert_int_eq(natsMsgHeader_Get(m, "Rb-Snap-Stream", &v), NATS_OK);
    snprintf(out, cap, "%s", v);
    natsMsg_Destroy(m);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

START_TEST(test_replica_forged_manifest)
{
    char key[32], id[40], first[24], why[600];
    int writes = 2 * SNAP_EVERY + 4, more = SNAP_EVERY;
    uint64_t part, t0 = rb_test_now_ms(), boot;
    const char *err;

    fleet_start();
    for (int i = 0; i < writes; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_str_eq(write_on(i % 2, (const char *const[]){ "BF.ADD", "r:f", key }, 3), "1");
    }
    while (manifest_seq() != 2 * SNAP_EVERY)
        ck_assert_msg(rb_test_now_ms() - t0 < 30000 && usleep(20 * 1000) == 0,
                      "no snapshot at %d", 2 * SNAP_EVERY);
    manifest_stream(id, sizeof(id));
    part = publish_msg(STREAM ".snap.5000.0", "", 0, (const char *const[]){ "Rb-Format", "1",
                       NULL });
    snprintf(first, sizeof(first), "%llu", (unsigned long long)part);
    (void)publish_msg(STREAM ".snapdone", "", 0, (const char *const[]){
                          "Rb-Format", "1", "Rb-Snap-Seq", "5000", "Rb-Snap-Parts", "1",
                          "Rb-Snap-Stream", id, "Rb-Snap-First", first, "Rb-Snap-Hash", "0",
                          NULL });
    /* A late host: the stream holds 17 on, the newest manifest is forged. */
    host_start(HOSTS);
    t0 = rb_test_now_ms();
    for (;;) {
        err = strstr(replication(HOSTS), "nats_last_error:");
        snprintf(why, sizeof(why), "%s", err != NULL ? err : "");
        if (strstr(why, "forged or stale") != NULL || applied(HOSTS) > 0)
            break;
        ck_assert_msg(rb_test_now_ms() - t0 < 20000, "the late host: %s", why);
        usleep(20 * 1000);
    }
    printf("replica: manifest: a forged manifest at 5000 (the stream's last %llu): the late host "
           "applied %llu, %.*s\n", (unsigned long long)stream_last(),
           (unsigned long long)applied(HOSTS), (int)strcspn(why, "\r\n"), why);
    ck_assert_uint_le(applied(HOSTS), stream_last());
    for (int i = writes; i < writes + more; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_str_eq(write_on(i % 2, (const char *const[]){ "BF.ADD", "r:f", key }, 3), "1");
    }
    converge(HOSTS + 1, (uint64_t)(writes + more));
    boot = (uint64_t)rbd_info_num(c[HOSTS], "replication", "nats_bootstrap_seq");
    ck_assert_msg(boot >= 3 * SNAP_EVERY && boot % SNAP_EVERY == 0, "bootstrapped from %llu",
                  (unsigned long long)boot);
    for (int i = 0; i < writes + more; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_str_eq(exists(HOSTS, "r:f", key), "1");
    }
    printf("replica: manifest: refused, the late host kept asking and bootstrapped from the "
           "real snapshot at %llu: all %d acknowledged keys there, at %llu as the others\n",
           (unsigned long long)boot, writes + more, (unsigned long long)applied(HOSTS));
}
END_TEST

/* The NATS shim's path, or NULL (a build without shared libraries). */
static const char *nats_shim(void)
{
    const char *p = getenv("RB_NATS_SHIM");
    struct stat sb;

    return p != NULL && stat(p, &sb) == 0 ? p : NULL;
}

START_TEST(test_replica_restart_without_quorum)
{
    const char *shim = nats_shim();
    char ctl[256], leader[16] = "";
    natsConnection *nc = NULL;
    jsCtx *js;
    jsStreamInfo *si = NULL;
    uint64_t t0, ms;
    int injected, lead = -1;

    if (shim == NULL) {
        printf("replica: quorum: nats shim not built (RB_NATS_SHIM): skipped\n");
        return;
    }
    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:q", "a" }, 3), "1");
    converge(HOSTS, 1);
    /* The stream's leader killed and started again. */
    js = js_on(&nc);
    ck_assert_int_eq(js_GetStreamInfo(&si, js, STREAM, NULL, NULL), NATS_OK);
    snprintf(leader, sizeof(leader), "%s", si->Cluster->Leader);
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    ck_assert_int_eq(sscanf(leader, "n%d", &lead), 1);
    rb_nats_kill(&cl, lead);
    ck_assert_int_eq(rb_nats_restart(&cl, lead), 0);
    ck_assert_int_eq(rb_nats_wait_ready(&cl, 30000), 0);
    (void)write_ok(1, (const char *const[]){ "BF.ADD", "r:q", "b" }, 3);
    /* Two servers and host 2 killed; host 2 started again with one server
     * up, its stream-info answers a minority server's. */
    rb_conn_close(c[2]);
    c[2] = NULL;
    rbd_stop(&d[2], SIGKILL);
    rb_nats_kill(&cl, 1);
    rb_nats_kill(&cl, 2);
    snprintf(ctl, sizeof(ctl), "%s/nats-fault", d[2].dir);
    rbd_write_file(ctl, "minority\n", 9);
    rb_test_asan_allow_preload();
    setenv("LD_PRELOAD", shim, 1);
    setenv("RB_NATS_FAULT_CTL", ctl, 1);
    rbd_launch(&d[2], NULL);
    unsetenv("LD_PRELOAD");
    unsetenv("RB_NATS_FAULT_CTL");
    c[2] = rbd_connect(&d[2]);
    t0 = rb_test_now_ms();
    while ((injected = rbd_log_count(&d[2], "nats_shim: minority answer")) < 2) {
        ck_assert_msg(rb_test_now_ms() - t0 < 30000, "no stream-info answer reached host 2 in "
                      "30 s: %s", replication(2));
        usleep(50 * 1000);
    }
    printf("replica: quorum: host 2, restarted with one server up, got %d minority answers "
           "in %llu ms: halted %d (%s)\n", injected, (unsigned long long)(rb_test_now_ms() - t0),
           (int)rbd_info_num(c[2], "replication", "nats_halted"),
           strstr(replication(2), "nats_last_error:"));
    ck_assert_int_eq((int)rbd_info_num(c[2], "replication", "nats_halted"), 0);
    /* Quorum back, and the answers true again: host 2 follows. */
    ck_assert_int_eq(rb_nats_restart(&cl, 1), 0);
    ck_assert_int_eq(rb_nats_restart(&cl, 2), 0);
    rbd_write_file(ctl, "\n", 1);
    t0 = rb_test_now_ms();
    await_ready(2);
    (void)write_ok(2, (const char *const[]){ "BF.ADD", "r:q", "c" }, 3);
    ms = rb_test_now_ms() - t0;
    converge(HOSTS, applied(2));
    for (int h = 0; h < HOSTS; h++) {
        ck_assert_int_eq((int)rbd_info_num(c[h], "replication", "nats_halted"), 0);
        ck_assert_str_eq(exists(h, "r:q", "a"), "1");
        ck_assert_str_eq(exists(h, "r:q", "c"), "1");
    }
    printf("replica: quorum: no halt; once quorum was back host 2 followed and wrote in %llu ms, "
           "every host at %llu\n", (unsigned long long)ms, (unsigned long long)applied(0));
}
END_TEST

START_TEST(test_replica_skip_newer_format)
{
    char seq[24];
    uint64_t s4, t0;
    const char *got;
    int rc;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:s", "a" }, 3), "1");
    s4 = publish_raw("x", 1, "2");
    snprintf(seq, sizeof(seq), "%llu", (unsigned long long)s4);
    for (int h = 0; h < HOSTS; h++) {
        (void)await_halted(h, 1);
        got = rbd_cmd(c[h], &rc, "BF.ADD", "r:s", "b", (const char *)NULL);
        ck_assert_msg(rc != RB_OK && strstr(got, "NATS.SKIP") != NULL, "%s", got);
    }
    got = rbd_cmd(c[0], &rc, "NATS.SKIP", "1", (const char *)NULL);
    ck_assert_msg(rc != RB_OK && strstr(got, "not halted on message 1") != NULL, "%s", got);
    t0 = rb_test_now_ms();
    got = rbd_cmd(c[1], &rc, "NATS.SKIP", seq, (const char *)NULL);
    printf("replica: skip: NATS.SKIP %s on host 1 answered %s\n", seq, got);
    ck_assert_str_eq(got, "OK");
    for (int h = 0; h < HOSTS; h++) {
        (void)await_halted(h, 0);
        ck_assert_int_eq((int)rbd_info_num(c[h], "replication", "nats_msgs_skipped"), 1);
        ck_assert_int_eq(rbd_log_count(&d[h], "skipped by NATS.SKIP"), 1);
    }
    ck_assert_str_eq(write_on(2, (const char *const[]){ "BF.ADD", "r:s", "b" }, 3), "1");
    converge(HOSTS, s4 + 2);
    /* A late host, from sequence 1, halts on it and skips it too. */
    host_start(HOSTS);
    converge(HOSTS + 1, s4 + 2);
    ck_assert_int_eq((int)rbd_info_num(c[HOSTS], "replication", "nats_msgs_skipped"), 1);
    ck_assert_str_eq(exists(HOSTS, "r:s", "a"), "1");
    ck_assert_str_eq(exists(HOSTS, "r:s", "b"), "1");
    /* A restart goes on from past it. */
    rb_conn_close(c[0]);
    rbd_restart_cold(&d[0]);
    c[0] = rbd_connect(&d[0]);
    converge(HOSTS + 1, s4 + 2);
    ck_assert_int_eq((int)rbd_info_num(c[0], "replication", "nats_halted"), 0);
    printf("replica: skip: message %s (Rb-Format 2) skipped on 3 hosts and a late one, %llu ms "
           "after NATS.SKIP on one of them; writes go on\n", seq,
           (unsigned long long)(rb_test_now_ms() - t0));
}
END_TEST

START_TEST(test_replica_duplicate_ids)
{
    natsConnection *nc = NULL;
    jsCtx *js;
    natsMsg *m = NULL;
    const char *v = NULL, *got;
    char forged[64], origin[32];
    unsigned long long no;
    uint64_t t0, ms;
    int rc;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:d", "a" }, 3), "1");
    js = js_on(&nc);
    ck_assert_int_eq(js_GetLastMsg(&m, js, STREAM, STREAM ".ops", NULL, NULL), NATS_OK);
    ck_assert_int_eq(natsMsgHeader_Get(m, "Nats-Msg-Id", &v), NATS_OK);
    ck_assert_int_eq(sscanf(v, "%16[0-9a-f].%llu", origin, &no), 2);
    natsMsg_Destroy(m);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    /* Host 0's next five ids, taken first (empty messages). */
    for (unsigned long long k = 1; k <= 5; k++) {
        snprintf(forged, sizeof(forged), "%s.%llu", origin, no + k);
        (void)publish_msg(STREAM ".ops", "", 0, (const char *const[]){ "Rb-Format", "1",
                          "Nats-Msg-Id", forged, NULL });
    }
    t0 = rb_test_now_ms();
    got = rbd_cmd(c[0], &rc, "BF.ADD", "r:d", "b", (const char *)NULL);
    ms = rb_test_now_ms() - t0;
    printf("replica: dup: host 0's write after its next ids were taken: %llu ms: %s\n",
           (unsigned long long)ms, got);
    ck_assert_msg(rc != RB_OK && strstr(got, "duplicate id") != NULL, "%s", got);
    ck_assert_uint_lt(ms, 2500);
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:d", "b" }, 3), "1");
    converge(HOSTS, applied(0));
    for (int h = 0; h < HOSTS; h++)
        ck_assert_str_eq(exists(h, "r:d", "b"), "1");
    printf("replica: dup: refused naming the duplicate id, the write again went through (a new "
           "origin) and every host has it\n");
}
END_TEST

/* Writes on host h's raw connection fd for `for_ms` (one every 100 ms),
 * each reply awaited (<= 10 s): the slowest reply's ms. */
static uint64_t slowest_reply(int fd, const char *tag, uint64_t for_ms)
{
    uint64_t t0 = rb_test_now_ms(), worst = 0;
    char key[32], line[1024];

    for (int i = 0; rb_test_now_ms() - t0 < for_ms; i++) {
        uint64_t t1 = rb_test_now_ms(), ms;

        snprintf(key, sizeof(key), "%s-%d", tag, i);
        raw_cmd(fd, "BF.ADD", "r:b", key);
        raw_line(fd, line, sizeof(line));
        ms = rb_test_now_ms() - t1;
        if (ms > worst)
            worst = ms;
        usleep(100 * 1000);   /* a write every 100 ms: the pace, not a wait */
    }
    return worst;
}

START_TEST(test_replica_reply_bound)
{
    uint64_t first = 0, restarted, t0;
    const char *got;
    int rc, fd;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:b", "a" }, 3), "1");
    converge(HOSTS, 1);
    rb_nats_kill(&cl, 1);
    rb_nats_kill(&cl, 2);
    for (int h = 0; h < HOSTS; h++) {
        t0 = rb_test_now_ms();
        got = rbd_cmd(c[h], &rc, "BF.ADD", "r:b", "during", (const char *)NULL);
        t0 = rb_test_now_ms() - t0;
        ck_assert_msg(rc != RB_OK, "%s", got);
        if (t0 > first)
            first = t0;
    }
    /* Host 2 restarted while one server is up: its writes are answered
     * from its start on. */
    rb_conn_close(c[2]);
    c[2] = NULL;
    rbd_stop(&d[2], SIGKILL);
    rbd_launch(&d[2], NULL);
    fd = rbd_raw_connect(&d[2]);
    restarted = slowest_reply(fd, "restart", 12000);
    close(fd);
    printf("replica: bound: nats-timeout 2000 ms: the first write after quorum loss answered "
           "within %llu ms on 3 hosts; a daemon restarted without quorum answered every write "
           "within %llu ms over 12 s\n", (unsigned long long)first,
           (unsigned long long)restarted);
    ck_assert_uint_le(first, 2000 + 500);
    ck_assert_uint_le(restarted, 2000 + 500);
}
END_TEST

TCase *replica_trust_tcase(void)
{
    return RB_TCASE("trust", 240, NULL, fleet_stop, test_replica_outside_filters,
                    test_replica_stream_made_again, test_replica_forged_manifest,
                    test_replica_restart_without_quorum, test_replica_skip_newer_format,
                    test_replica_duplicate_ids, test_replica_reply_bound);
}
