/*
 * check_replica.c - `filter-source nats` end to end: a real 3-server NATS
 * JetStream cluster on loopback (tests/harness/nats_cluster.c) and three
 * ringbloomd standing for three hosts (their own instances, segments,
 * state directories and sockets), one stream.  Each test starts a fresh
 * cluster and fresh daemons:
 *  converge  10,000 keys in 100 BF.MADDs of 100 sent to random hosts
 *            leave every host with the same filter (30,000 BF.MEXISTS
 *            probes answered byte-identically, the same SCANDUMP), equal
 *            to a lone local daemon's given the same reserve and adds, and
 *            every BF.MADD answered as the lone daemon answered it; a
 *            fourth host started afterwards, when the stream no longer
 *            holds its first messages (nats-snapshot-every 16), catches
 *            up from the newest snapshot and the stream after it;
 *  lagging   a host stopped while the others write past two snapshots
 *            bootstraps from the newest when it runs again, no restart;
 *  race      50 rounds of two hosts adding one new key at once (both sent
 *            before either reply is read): exactly one 1 between them;
 *  outage    two servers SIGKILLed: a write is refused within 5 s naming
 *            the servers, the next at once, reads go on; both servers
 *            back: writes go through again within 60 s and every host
 *            converges without a restart;
 *  crash     a host SIGKILLed during adds and started again without its
 *            segment serves what it logged at once and converges;
 *  skipped   messages published by hand with a damaged record, a record
 *            of a type not replicated, and no Rb-Format header are skipped
 *            on every host alike (counted, the applied sequence past
 *            them, the filters equal); one of a newer Rb-Format halts
 *            every host before it, with writes refused saying why;
 *  refused   the changes this version does not replicate are refused with
 *            a reply that says so (FLUSHALL while a replicated filter
 *            lives: whole, nothing deleted), names outside nats-filters
 *            stay local;
 *            a host whose local filters nats-filters matches refuses its
 *            first start with the stream;
 *  no NATS   a daemon started while no server answers serves, refuses
 *            replicated writes at once saying why, and follows the stream
 *            once the servers are up; with every server gone again, its
 *            INFO shows the last contact growing old, reads going on.
 * Each test prints what it measured.  Skipped (exit 77) without
 * nats-server.
 */
#include "config.h"

#include <nats/nats.h>
#include <xxhash.h>

#include "replica.h"

#define ADDS    100      /* BF.MADDs ... */
#define PER_ADD 100      /* ... of this many keys */

rb_nats_cluster_t cl;
rbd_proc_t d[HOSTS + 1], lone;
rb_conn_t *c[HOSTS + 1], *lc;
char extra[1024];

static uint64_t xs_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

void host_start(int i)
{
    rbd_start(&d[i], extra);
    c[i] = rbd_connect(&d[i]);
}

/* Until host i follows the stream (INFO nats_ready:1; <= 30 s): before,
 * its replicated writes are refused as "not following stream ... yet". */
void await_ready(int i)
{
    uint64_t t0 = rb_test_now_ms();

    while ((int)rbd_info_num(c[i], "replication", "nats_ready") != 1) {
        ck_assert_msg(rb_test_now_ms() - t0 < 30000, "host %d does not follow the stream", i);
        usleep(20 * 1000);
    }
}

void fleet_start(void)
{
    fleet_start_with("");
}

void fleet_start_with(const char *more)
{
    ck_assert_msg(rb_nats_start(&cl, 3, 20000) == 0, "the NATS cluster did not start");
    snprintf(extra, sizeof(extra), "filter-source nats\nnats-servers %s %s %s\n"
             "nats-stream " STREAM "\nnats-filters r:*\nnats-timeout 2000\nappendfsync no\n"
             "nats-snapshot-every %d\n%s", cl.url[0], cl.url[1], cl.url[2], SNAP_EVERY, more);
    for (int i = 0; i < HOSTS; i++)
        host_start(i);
    for (int i = 0; i < HOSTS; i++)
        await_ready(i);
}

void fleet_stop(void)
{
    for (int i = 0; i <= HOSTS; i++) {
        if (c[i] != NULL)
            rb_conn_close(c[i]);
        c[i] = NULL;
    }
    if (lc != NULL)
        rb_conn_close(lc);
    lc = NULL;
    rbd_teardown();
    rb_nats_stop(&cl);
    nats_CloseAndWait(5000);
}

uint64_t applied(int i)
{
    return (uint64_t)rbd_info_num(c[i], "replication", "nats_applied_seq");
}

/* Asserts that two hosts' dumps of filter name are the same, but for the
 * header's rotated_at and created (its bytes 72..87: unix seconds of the
 * apply of the reserve, each host's clock; docs/design.md, "Beyond one
 * host: filters from NATS JetStream", says why and what it would take). */
void assert_same_filter(rbd_dump_t *a, rbd_dump_t *b, const char *name)
{
    unsigned char ta[16], tb[16];

    ck_assert_uint_ge(a->n, 1);
    ck_assert_uint_ge(b->n, 1);
    ck_assert_uint_ge(a->len[0], 88);
    ck_assert_uint_ge(b->len[0], 88);
    ck_assert_int_eq(memcmp(a->data[0], "RBLMDUMP", 8), 0);
    memcpy(ta, a->data[0] + 72, 16);
    memcpy(tb, b->data[0] + 72, 16);
    memset(a->data[0] + 72, 0, 16);
    memset(b->data[0] + 72, 0, 16);
    rbd_assert_same_dump(a, b, name);
    memcpy(a->data[0] + 72, ta, 16);
    memcpy(b->data[0] + 72, tb, 16);
}

/* Runs words on host h until the stream takes it (a host still setting
 * its stream up answers "not following stream ... yet"): the reply. */
const char *write_on(int h, const char *const *argv, size_t argc)
{
    static char buf[65536];
    size_t argl[PER_ADD + 4];
    uint64_t t0 = rb_test_now_ms();
    int rc;

    for (size_t k = 0; k < argc; k++)
        argl[k] = strlen(argv[k]);
    for (;;) {
        rc = rb_conn_command(c[h], argc, argv, argl, buf, sizeof(buf));
        if (!(rc != RB_OK && strstr(buf, "not following stream") != NULL))
            return buf;
        ck_assert_msg(rb_test_now_ms() - t0 < 20000, "host %d never followed the stream: %s", h,
                      buf);
        usleep(20 * 1000);
    }
}

/* Until hosts 0..n-1 applied the same sequence, at least min (<= 30 s):
 * the milliseconds it took. */
uint64_t converge(int n, uint64_t min)
{
    uint64_t t0 = rb_test_now_ms();

    for (;;) {
        uint64_t a0 = applied(0);
        int same = a0 >= min;

        for (int i = 1; i < n && same; i++)
            same = applied(i) == a0;
        if (same && a0 == (uint64_t)rbd_info_num(c[0], "replication", "nats_stream_last_seq"))
            return rb_test_now_ms() - t0;
        ck_assert_msg(rb_test_now_ms() - t0 < 30000, "hosts did not converge (host 0 at %llu)",
                      (unsigned long long)a0);
        usleep(20 * 1000);
    }
}

/* The replies of PROBES BF.MEXISTS probes of filter name on conn, 1,000
 * keys a request, hashed (FNV-1a over the reply texts). */
uint64_t probe_hash(rb_conn_t *conn, const char *name)
{
    static char keys[1000][24], buf[65536];
    const char *argv[1002];
    size_t argl[1002];
    uint64_t h = 1469598103934665603ULL;
    int rc;

    argv[0] = "BF.MEXISTS";
    argv[1] = name;
    for (int r = 0; r < PROBES / 1000; r++) {
        for (int k = 0; k < 1000; k++) {
            argl[k + 2] = (size_t)snprintf(keys[k], sizeof(keys[k]), "key-%d", r * 1000 + k);
            argv[k + 2] = keys[k];
        }
        argl[0] = 10;
        argl[1] = strlen(name);
        rc = rb_conn_command(conn, 1002, argv, argl, buf, sizeof(buf));
        ck_assert_msg(rc == RB_OK, "BF.MEXISTS: %s", buf);
        for (const char *p = buf; *p != '\0'; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    }
    return h;
}

/* The MADD of round r: keys key-(r*PER_ADD) .. , half of them again
 * from the round before (so "not new" answers are part of it). */
static size_t madd_argv(int r, const char **argv, char (*keys)[24])
{
    argv[0] = "BF.MADD";
    argv[1] = "r:f";
    for (int k = 0; k < PER_ADD; k++) {
        int key = r * PER_ADD + k - (k % 2 ? PER_ADD / 2 : 0);

        snprintf(keys[k], sizeof(keys[k]), "key-%d", key < 0 ? 0 : key);
        argv[k + 2] = keys[k];
    }
    return PER_ADD + 2;
}

/* The sequence the newest snapshot's manifest in STREAM_SNAP covers (0:
 * none), read with libnats. */
uint64_t manifest_seq(void)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    const char *v = NULL;
    uint64_t seq = 0;
    natsStatus st;

    ck_assert_int_eq(natsConnection_ConnectTo(&nc, cl.url[0]), NATS_OK);
    ck_assert_int_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
    st = js_GetLastMsg(&m, js, STREAM "_SNAP", STREAM ".snapdone", NULL, &jerr);
    ck_assert_msg(st == NATS_OK || st == NATS_NOT_FOUND, "%s", natsStatus_GetText(st));
    if (st == NATS_OK && natsMsgHeader_Get(m, "Rb-Snap-Seq", &v) == NATS_OK)
        seq = strtoull(v, NULL, 10);
    natsMsg_Destroy(m);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return seq;
}

/* Until a host stored a snapshot (<= 30 s): then its manifest must be
 * in the snapshot stream (the first one, at sequence 1 of that stream,
 * once purged itself with everything). */
static void await_first_snapshot(void)
{
    uint64_t t0 = rb_test_now_ms(), stored = 0;

    while (stored == 0) {
        for (int h = 0; h < HOSTS; h++)
            stored += (uint64_t)rbd_info_num(c[h], "replication", "nats_snapshots_stored");
        ck_assert_msg(rb_test_now_ms() - t0 < 30000, "no snapshot stored");
        usleep(20 * 1000);
    }
    ck_assert_uint_eq(manifest_seq(), SNAP_EVERY);
}

START_TEST(test_replica_converge)
{
    static char keys[PER_ADD][24], replies[ADDS][4 * PER_ADD + 16];
    const char *argv[PER_ADD + 2];
    rbd_dump_t dump[HOSTS + 1], ldump, seed;
    uint64_t x = 0x9e3779b97f4a7c15ULL, t0, ms, sum_ms = 0, hash[HOSTS + 1], first, boot;
    int rc;

    fleet_start();
    /* The reserve, replicated: its secret and sizes travel with it. */
    ck_assert_str_eq(write_on(1, (const char *const[]){ "BF.RESERVE", "r:f", "0.01", "5000" },
                              4), "OK");
    converge(HOSTS, 1);
    /* The lone daemon's filter starts from the same (empty) dump. */
    rbd_start(&lone, "appendfsync no\n");
    lc = rbd_connect(&lone);
    rbd_scandump(&d[0], "BF.SCANDUMP", "r:f", &seed);
    rbd_loadchunks(lc, "BF.LOADCHUNK", "r:f", &seed);
    rbd_dump_free(&seed);
    for (int r = 0; r < ADDS; r++) {
        size_t argc = madd_argv(r, argv, keys);
        int h = (int)(xs_next(&x) % HOSTS);

        t0 = rb_test_now_ms();
        snprintf(replies[r], sizeof(replies[r]), "%s", write_on(h, argv, argc));
        sum_ms += rb_test_now_ms() - t0;
        if (r + 2 == SNAP_EVERY)   /* the reserve and 15 MADDs: the message at 16 */
            await_first_snapshot();
    }
    ms = converge(HOSTS, ADDS + 1);
    for (int r = 0; r < ADDS; r++) {
        size_t argl[PER_ADD + 2];
        size_t argc = madd_argv(r, argv, keys);
        char buf[4 * PER_ADD + 16];

        for (size_t k = 0; k < argc; k++)
            argl[k] = strlen(argv[k]);
        rc = rb_conn_command(lc, argc, argv, argl, buf, sizeof(buf));
        ck_assert_int_eq(rc, RB_OK);
        ck_assert_msg(strcmp(buf, replies[r]) == 0, "BF.MADD %d answered differently", r);
    }
    /* A fourth host, started now, catches up from the newest snapshot
     * (the stream was purged below the one before it) and the stream
     * after it, and again after a cold restart: what it applied while its
     * consumer was being set up carries the stream's identity (once it did
     * not, and the restart was refused as a host with local filters). */
    host_start(HOSTS);
    converge(HOSTS + 1, ADDS + 1);
    first = (uint64_t)rbd_info_num(c[HOSTS], "replication", "nats_stream_first_seq");
    boot = (uint64_t)rbd_info_num(c[HOSTS], "replication", "nats_bootstrap_seq");
    ck_assert_msg(first > SNAP_EVERY && boot + 1 >= first && boot % SNAP_EVERY == 0,
                  "the late host: stream first %llu, bootstrapped from %llu",
                  (unsigned long long)first, (unsigned long long)boot);
    rb_conn_close(c[HOSTS]);
    rbd_restart_cold(&d[HOSTS]);
    c[HOSTS] = rbd_connect(&d[HOSTS]);
    converge(HOSTS + 1, ADDS + 1);
    for (int i = 0; i <= HOSTS; i++) {
        hash[i] = probe_hash(c[i], "r:f");
        rbd_scandump(&d[i], "BF.SCANDUMP", "r:f", &dump[i]);
    }
    ck_assert_uint_eq(probe_hash(lc, "r:f"), hash[0]);
    rbd_scandump(&lone, "BF.SCANDUMP", "r:f", &ldump);
    for (int i = 0; i <= HOSTS; i++) {
        ck_assert_msg(hash[i] == hash[0], "host %d answers the probes differently", i);
        assert_same_filter(&dump[i], &dump[0], "r:f");
    }
    rbd_assert_same_dump(&ldump, &dump[0], "r:f");   /* loaded from host 0's header */
    for (int i = 0; i <= HOSTS; i++)
        rbd_dump_free(&dump[i]);
    rbd_dump_free(&ldump);
    printf("replica: converge: %d BF.MADDs of %d keys, %.2f ms each on average (publish, "
           "stream, apply); all hosts at seq %llu %llu ms after the last; the late host "
           "bootstrapped from the snapshot at %llu (the stream holds %llu on); %d probes "
           "identical on 4 hosts and the lone daemon's filter, every reply equal\n", ADDS,
           PER_ADD, (double)sum_ms / ADDS, (unsigned long long)applied(0),
           (unsigned long long)ms, (unsigned long long)boot, (unsigned long long)first, PROBES);
}
END_TEST

/* A host stopped (SIGSTOP) while the others write past two snapshots
 * finds, once it runs again, that the stream no longer holds its next
 * message: it bootstraps from the newest snapshot (of two filters, one
 * whose dump takes many chunks and parts) without a restart and answers
 * as the others, its dumps the same. */
START_TEST(test_replica_lagging)
{
    static char keys[PER_ADD][1024];
    const char *argv[PER_ADD + 2] = { "BF.MADD", "r:f" };
    rbd_dump_t dump[2];
    uint64_t first, boot, ms, t0 = rb_test_now_ms();
    int rounds = 8 * SNAP_EVERY;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.RESERVE", "r:f", "0.01", "5000" },
                              4), "OK");
    /* and one of 0.96 MB: its dump is 2 chunks in a snapshot, in 2 parts */
    ck_assert_str_eq(write_on(1, (const char *const[]){ "BF.RESERVE", "r:big", "0.0001",
                                                        "400000" }, 4), "OK");
    converge(HOSTS, 2);
    /* Messages of 100 keys of 1,000 bytes: more than the stopped host's
     * socket and the server's buffers for it hold, so the stream's purge
     * overtakes it. */
    ck_assert_int_eq(kill(d[2].pid, SIGSTOP), 0);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < PER_ADD; k++) {
            memset(keys[k], 'x', sizeof(keys[k]) - 1);
            snprintf(keys[k], 24, "key-%d", r * PER_ADD + k);
            keys[k][strlen(keys[k])] = '-';
            keys[k][sizeof(keys[k]) - 1] = '\0';
            argv[k + 2] = keys[k];
        }
        argv[1] = r % 8 == 0 ? "r:big" : "r:f";
        (void)write_on(r % 2, argv, PER_ADD + 2);
    }
    /* (as the host that purged last saw it: host 1's messages fall on the
     * multiples of 16) */
    first = (uint64_t)rbd_info_num(c[1], "replication", "nats_stream_first_seq");
    ck_assert_int_eq(kill(d[2].pid, SIGCONT), 0);
    ms = converge(HOSTS, (uint64_t)rounds + 2);
    boot = (uint64_t)rbd_info_num(c[2], "replication", "nats_bootstrap_seq");
    ck_assert_msg(first > SNAP_EVERY && boot + 1 >= first, "the stopped host: stream first %llu, "
                  "bootstrapped from %llu", (unsigned long long)first, (unsigned long long)boot);
    ck_assert_int_eq((int)rbd_info_num(c[2], "replication", "nats_halted"), 0);
    ck_assert_uint_eq(probe_hash(c[2], "r:f"), probe_hash(c[0], "r:f"));
    ck_assert_uint_eq(probe_hash(c[2], "r:big"), probe_hash(c[0], "r:big"));
    rbd_scandump(&d[0], "BF.SCANDUMP", "r:big", &dump[0]);
    rbd_scandump(&d[2], "BF.SCANDUMP", "r:big", &dump[1]);
    assert_same_filter(&dump[1], &dump[0], "r:big");
    rbd_dump_free(&dump[0]);
    rbd_dump_free(&dump[1]);
    printf("replica: lagging: a host stopped during %d writes (the stream then held %llu on) "
           "bootstrapped from the snapshot at %llu and converged %llu ms after it ran again "
           "(%llu ms in all)\n", rounds, (unsigned long long)first, (unsigned long long)boot,
           (unsigned long long)ms, (unsigned long long)(rb_test_now_ms() - t0));
}
END_TEST

/* Sends a RESP command of words on a raw socket (not waiting). */
void raw_cmd(int fd, const char *a, const char *b, const char *k)
{
    char req[256];
    int n = snprintf(req, sizeof(req), "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                     strlen(a), a, strlen(b), b, strlen(k), k);

    ck_assert_int_eq(write(fd, req, (size_t)n), n);
}

/* One reply line from a raw socket (<= 10 s). */
void raw_line(int fd, char *out, size_t cap)
{
    size_t n = 0;
    uint64_t t0 = rb_test_now_ms();

    while (n + 1 < cap) {
        ssize_t r = read(fd, out + n, 1);

        if (r == 1 && out[n++] == '\n')
            break;
        if (r < 0 && errno != EAGAIN && errno != EINTR)
            ck_abort_msg("read: %s", strerror(errno));
        ck_assert_msg(rb_test_now_ms() - t0 < 10000, "no reply in 10 s");
    }
    out[n] = '\0';
}

START_TEST(test_replica_race)
{
    int fd[2], ones = 0, rounds = 50;
    char key[32], r0[256], r1[256];
    uint64_t t0;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.RESERVE", "r:race", "0.001",
                                                         "1000" }, 4), "OK");
    converge(HOSTS, 1);
    fd[0] = rbd_raw_connect(&d[1]);
    fd[1] = rbd_raw_connect(&d[2]);
    t0 = rb_test_now_ms();
    for (int i = 0; i < rounds; i++) {
        snprintf(key, sizeof(key), "new-%d", i);
        raw_cmd(fd[0], "BF.ADD", "r:race", key);
        raw_cmd(fd[1], "BF.ADD", "r:race", key);
        raw_line(fd[0], r0, sizeof(r0));
        raw_line(fd[1], r1, sizeof(r1));
        ck_assert_msg((strcmp(r0, ":1\r\n") == 0 && strcmp(r1, ":0\r\n") == 0) ||
                      (strcmp(r0, ":0\r\n") == 0 && strcmp(r1, ":1\r\n") == 0),
                      "round %d: replies %s and %s", i, r0, r1);
        ones += r0[1] == '1';
    }
    close(fd[0]);
    close(fd[1]);
    converge(HOSTS, (uint64_t)rounds * 2 + 1);
    for (int h = 0; h < HOSTS; h++)
        for (int i = 0; i < rounds; i += 7) {
            snprintf(key, sizeof(key), "new-%d", i);
            rbd_expect(c[h], "1", "BF.EXISTS", "r:race", key);
        }
    printf("replica: race: %d rounds, one 1 each (host 1 won %d), %.2f ms a round\n", rounds,
           ones, (double)(rb_test_now_ms() - t0) / rounds);
}
END_TEST

START_TEST(test_replica_outage)
{
    char key[32];
    const char *got;
    uint64_t t0, first_ms, next_ms, back_ms;
    int rc, tries = 0, unknown = 0;
    char answer[16], last_err[600] = "";

    fleet_start();
    /* One message: the implicit create and the add. */
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:o", "before" }, 3), "1");
    converge(HOSTS, 1);
    rb_nats_kill(&cl, 1);
    rb_nats_kill(&cl, 2);
    t0 = rb_test_now_ms();
    got = rbd_cmd(c[0], &rc, "BF.ADD", "r:o", "during-1", (const char *)NULL);
    first_ms = rb_test_now_ms() - t0;
    ck_assert_msg(rc != RB_OK && strstr(got, "ERR filter-source nats: stream " STREAM) != NULL &&
                  strstr(got, cl.url[1]) != NULL, "the write during the outage: %s", got);
    ck_assert_uint_lt(first_ms, 5000);
    t0 = rb_test_now_ms();
    got = rbd_cmd(c[0], &rc, "BF.ADD", "r:o", "during-2", (const char *)NULL);
    next_ms = rb_test_now_ms() - t0;
    ck_assert_msg(rc != RB_OK && strstr(got, "refused until") != NULL, "the next write: %s", got);
    ck_assert_uint_lt(next_ms, 1000);
    for (int h = 0; h < HOSTS; h++) {
        t0 = rb_test_now_ms();
        rbd_expect(c[h], "1", "BF.EXISTS", "r:o", "before");
        ck_assert_uint_lt(rb_test_now_ms() - t0, 500);
    }
    ck_assert_int_eq((int)rbd_info_num(c[0], "replication", "nats_healthy"), 0);
    ck_assert_int_eq(rb_nats_restart(&cl, 1), 0);
    ck_assert_int_eq(rb_nats_restart(&cl, 2), 0);
    t0 = rb_test_now_ms();
    for (;;) {
        tries++;
        got = rbd_cmd(c[0], &rc, "BF.ADD", "r:o", "after", (const char *)NULL);
        if (rc == RB_OK)
            break;
        snprintf(last_err, sizeof(last_err), "%s", got);
        /* A timeout: the stream may still take that try (case A); or it
         * took it and this host had not applied it in time (the consumer
         * resuming): the retry then finds the key there. */
        unknown += strstr(got, "outcome is unknown") != NULL ||
                   strstr(got, "the stream holds this write") != NULL;
        ck_assert_msg(rb_test_now_ms() - t0 < 60000, "no write went through in 60 s: %s", got);
        usleep(200 * 1000);
    }
    back_ms = rb_test_now_ms() - t0;
    snprintf(answer, sizeof(answer), "%s", got);
    /* New, unless a try whose outcome was unknown was applied first. */
    ck_assert_msg(strcmp(got, "1") == 0 || (unknown > 0 && strcmp(got, "0") == 0),
                  "the write after the outage answered %s (%d tries of unknown outcome; the "
                  "last error: %s)", got, unknown, last_err);
    /* A write timed out may have been committed later: then every host has
     * it; converging hosts agree on every key either way. */
    converge(HOSTS, applied(0));
    for (int h = 0; h < HOSTS; h++) {
        rbd_expect(c[h], "1", "BF.EXISTS", "r:o", "after");
        for (int k = 1; k <= 2; k++) {
            char want[16];

            snprintf(key, sizeof(key), "during-%d", k);
            snprintf(want, sizeof(want), "%s",
                     rbd_cmd(c[0], &rc, "BF.EXISTS", "r:o", key, (const char *)NULL));
            rbd_expect(c[h], want, "BF.EXISTS", "r:o", key);
        }
    }
    printf("replica: outage: first write refused in %llu ms, the next in %llu ms; after the "
           "restart a write went through in %llu ms (%d tries, %d of unknown outcome; it "
           "answered %s); all hosts converged\n", (unsigned long long)first_ms,
           (unsigned long long)next_ms, (unsigned long long)back_ms, tries, unknown, answer);
}
END_TEST

START_TEST(test_replica_crash)
{
    static char keys[PER_ADD][24];
    const char *argv[PER_ADD + 2];
    uint64_t t0, before;
    rbd_dump_t a, b;

    fleet_start();
    for (int r = 0; r < 20; r++)
        (void)write_on(r % 2, (madd_argv(r, argv, keys), argv), PER_ADD + 2);
    converge(HOSTS, 20);
    before = applied(2);
    /* Host 2 dies while hosts 0 and 1 go on adding. */
    rb_conn_close(c[2]);
    c[2] = NULL;
    rbd_stop(&d[2], SIGKILL);
    for (int r = 20; r < 40; r++)
        (void)write_on(r % 2, (madd_argv(r, argv, keys), argv), PER_ADD + 2);
    rbd_restart_cold(&d[2]);
    t0 = rb_test_now_ms();
    c[2] = rbd_connect(&d[2]);
    /* What it logged is served at once (key-0 was in the first round). */
    rbd_expect(c[2], "1", "BF.EXISTS", "r:f", "key-0");
    ck_assert_uint_ge(applied(2), before);
    converge(HOSTS, 40);
    rbd_scandump(&d[0], "BF.SCANDUMP", "r:f", &a);
    rbd_scandump(&d[2], "BF.SCANDUMP", "r:f", &b);
    assert_same_filter(&a, &b, "r:f");
    rbd_dump_free(&a);
    rbd_dump_free(&b);
    printf("replica: crash: host 2, killed at seq %llu or later and restarted without its "
           "segment, served its logged keys at once and converged to %llu in %llu ms\n",
           (unsigned long long)before, (unsigned long long)applied(2),
           (unsigned long long)(rb_test_now_ms() - t0));
}
END_TEST

/* Publishes data with libnats on subject, with the headers hdr (name,
 * value, ..., NULL): the sequence. */
uint64_t publish_msg(const char *subject, const void *data, size_t len, const char *const *hdr)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    natsMsg *m = NULL;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    uint64_t seq;
    natsStatus st;

    ck_assert_int_eq(natsConnection_ConnectTo(&nc, cl.url[0]), NATS_OK);
    ck_assert_int_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
    ck_assert_int_eq(natsMsg_Create(&m, subject, NULL, data, (int)len), NATS_OK);
    for (; hdr != NULL && hdr[0] != NULL; hdr += 2)
        ck_assert_int_eq(natsMsgHeader_Set(m, hdr[0], hdr[1]), NATS_OK);
    st = js_PublishMsg(&pa, js, m, NULL, &jerr);
    ck_assert_msg(st == NATS_OK, "publish on %s: %s (jerr %d)", subject, natsStatus_GetText(st),
                  (int)jerr);
    seq = pa->Sequence;
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(m);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return seq;
}

/* Publishes data on the stream's subject, with Rb-Format fmt (NULL: no
 * header): the sequence. */
uint64_t publish_raw(const void *data, size_t len, const char *fmt)
{
    const char *hdr[] = { "Rb-Format", fmt, NULL };

    return publish_msg(STREAM ".ops", data, len, fmt != NULL ? hdr : NULL);
}

START_TEST(test_replica_skipped_and_halted)
{
    /* A record header claiming 5 bytes of a type-6 record with a wrong
     * checksum; a whole record of type 16 (CMS.INIT, not replicated);
     * a record header with no payload. */
    static const unsigned char damaged[] = { 5, 0, 0, 0, 1, 2, 3, 4, 6, 'x', 'y', 'z', 'w' };
    unsigned char rec[64];
    uint64_t s1, s2, s3, s4;
    int rc;
    const char *got;
    rbd_dump_t a, b;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:s", "a" }, 3), "1");
    s1 = publish_raw(damaged, sizeof(damaged), "1");
    memset(rec, 0, sizeof(rec));
    rec[0] = 1;   /* length 1: the type byte alone, checksummed */
    rec[8] = 16;
    {
        uint32_t sum = (uint32_t)XXH3_64bits(rec + 8, 1);

        memcpy(rec + 4, &sum, 4);   /* little-endian, as this machine */
    }
    s2 = publish_raw(rec, 9, "1");
    s3 = publish_raw("junk", 4, NULL);
    ck_assert_str_eq(write_on(1, (const char *const[]){ "BF.ADD", "r:s", "b" }, 3), "1");
    converge(HOSTS, s3 + 1);
    for (int h = 0; h < HOSTS; h++) {
        ck_assert_int_eq((int)rbd_info_num(c[h], "replication", "nats_msgs_skipped"), 3);
        ck_assert_int_eq(rbd_log_count(&d[h], "skipped on every host"), 3);
    }
    rbd_scandump(&d[0], "BF.SCANDUMP", "r:s", &a);
    rbd_scandump(&d[2], "BF.SCANDUMP", "r:s", &b);
    assert_same_filter(&a, &b, "r:s");
    rbd_dump_free(&a);
    rbd_dump_free(&b);
    /* A newer format halts every host before it. */
    s4 = publish_raw("x", 1, "2");
    for (int h = 0; h < HOSTS; h++) {
        uint64_t t0 = rb_test_now_ms();

        while ((int)rbd_info_num(c[h], "replication", "nats_halted") != 1)
            ck_assert_msg(rb_test_now_ms() - t0 < 10000, "host %d did not halt", h);
        ck_assert_uint_eq(applied(h), s4 - 1);
        got = rbd_cmd(c[h], &rc, "BF.ADD", "r:s", "c", (const char *)NULL);
        ck_assert_msg(rc != RB_OK && strstr(got, "halted") != NULL &&
                      strstr(got, "Rb-Format 2") != NULL, "a write when halted: %s", got);
        rbd_expect(c[h], "1", "BF.EXISTS", "r:s", "b");
    }
    printf("replica: skipped: seqs %llu, %llu, %llu skipped on 3 hosts alike; Rb-Format 2 at "
           "%llu halted them at %llu\n", (unsigned long long)s1, (unsigned long long)s2,
           (unsigned long long)s3, (unsigned long long)s4, (unsigned long long)(s4 - 1));
}
END_TEST

START_TEST(test_replica_refused_changes)
{
    static const char *const refused[][6] = {
        { "DEL", "r:f", NULL }, { "CF.RESERVE", "r:c", "100", NULL },
        { "PFADD", "r:h", "x", NULL }, { "BF.RESERVE", "r:g", "0.01", "100", "AGING", "60" },
    };
    int rc;
    const char *got;
    double before;

    fleet_start();
    ck_assert_str_eq(write_on(0, (const char *const[]){ "BF.ADD", "r:f", "a" }, 3), "1");
    before = rbd_info_num(c[0], "replication", "nats_writes_refused");
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *const *w = refused[i];

        got = rbd_cmd(c[0], &rc, w[0], w[1], w[2], w[3], w[4], w[5], (const char *)NULL);
        ck_assert_msg(rc != RB_OK && strstr(got, "is replicated") != NULL, "%s: %s", w[0], got);
    }
    /* Outside nats-filters, everything is local. */
    rbd_expect(c[1], "1", "PFADD", "local", "x");
    rbd_expect(c[1], "1", "BF.ADD", "local-bf", "x");
    rbd_expect(c[0], "0", "EXISTS", "local-bf");
    rbd_expect(c[1], "2", "DEL", "local", "local-bf");
    ck_assert_int_eq((int)(rbd_info_num(c[0], "replication", "nats_writes_refused") - before),
                     4);
    /* FLUSHALL while a replicated filter lives here: refused whole, saying
     * why, a local filter kept too (issue 42, item 11). */
    rbd_expect(c[0], "1", "BF.ADD", "local0", "x");
    got = rbd_cmd(c[0], &rc, "FLUSHALL", (const char *)NULL);
    ck_assert_msg(rc != RB_OK && strstr(got, "1 filters here are replicated") != NULL &&
                  strstr(got, "'r:f'") != NULL && strstr(got, "nothing was deleted") != NULL,
                  "FLUSHALL: %s", got);
    rbd_expect(c[0], "2", "EXISTS", "local0", "r:f");
    rbd_expect(c[0], "1", "DEL", "local0");
    /* ADMIT.RESERVE of a replicated name: its doorkeeper, a Bloom filter,
     * goes with a sketch this version does not replicate: said so (it
     * once answered that its writes cannot run inside MULTI/EXEC). */
    got = rbd_cmd(c[0], &rc, "ADMIT.RESERVE", "r:adm", "1000", (const char *)NULL);
    ck_assert_msg(rc != RB_OK && strstr(got, "MULTI") == NULL &&
                  strstr(got, "does not replicate") != NULL, "ADMIT.RESERVE: %s", got);
    /* A host whose local filters the pattern would take over refuses its
     * first start with the stream, naming one. */
    rbd_start(&lone, "appendfsync no\n");
    lc = rbd_connect(&lone);
    rbd_expect(lc, "1", "BF.ADD", "r:mine", "x");
    rbd_expect(lc, "1", "BF.ADD", "other", "x");
    rb_conn_close(lc);
    lc = NULL;
    rbd_stop(&lone, SIGTERM);
    rbd_write_conf(&lone, extra);
    got = rbd_start_fails(lone.conf);
    ck_assert_msg(strstr(got, "1 local filter(s) match nats-filters 'r:*' (the first: "
                              "'r:mine')") != NULL, "%s", got);
    /* Settings that cannot work are refused at start, saying which. */
    rbd_write_conf(&lone, "filter-source nats\nnats-stream a.b\n");
    got = rbd_start_fails(lone.conf);
    ck_assert_msg(strstr(got, "nats-stream: 'a.b' is not a stream name") != NULL, "%s", got);
    rbd_write_conf(&lone, "filter-source nats\nnats-cert /dev/null\n");
    got = rbd_start_fails(lone.conf);
    ck_assert_msg(strstr(got, "nats-cert and nats-key go together") != NULL, "%s", got);
    rbd_write_conf(&lone, "filter-source jetstream\n");
    {
        char out[4096];
        int status = rbd_run_daemon(&lone, out, sizeof(out));

        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2 &&
                      strstr(out, "filter-source: 'jetstream' is not local or nats") != NULL,
                      "status %d: %s", status, out);
    }
}
END_TEST

/* A daemon whose NATS servers do not answer starts and serves: local
 * filters are written, replicated writes are refused at once with the
 * reason, and once the servers come up it follows the stream by itself. */
/* Seconds since the stream last answered host i (INFO; -1 never). */
static long long contact(int i)
{
    return (long long)rbd_info_num(c[i], "replication", "nats_last_contact_seconds");
}

START_TEST(test_replica_starts_without_nats)
{
    int rc, unknown = 0;
    const char *got;
    uint64_t t0, ms;

    ck_assert_msg(rb_nats_start(&cl, 3, 20000) == 0, "the NATS cluster did not start");
    snprintf(extra, sizeof(extra), "filter-source nats\nnats-servers %s %s %s\n"
             "nats-stream " STREAM "\nnats-filters r:*\nnats-timeout 2000\nappendfsync no\n"
             "nats-snapshot-every %d\n", cl.url[0], cl.url[1], cl.url[2], SNAP_EVERY);
    for (int i = 0; i < 3; i++)
        rb_nats_kill(&cl, i);
    t0 = rb_test_now_ms();
    host_start(0);
    rbd_expect(c[0], "1", "BF.ADD", "local", "x");
    got = rbd_cmd(c[0], &rc, "BF.ADD", "r:f", "x", (const char *)NULL);
    ck_assert_msg(rc != RB_OK && strstr(got, "not following stream " STREAM " yet") != NULL &&
                  strstr(got, cl.url[2]) != NULL, "a replicated write with no server: %s", got);
    ck_assert_uint_lt(rb_test_now_ms() - t0, 5000);
    ck_assert_int_eq((int)rbd_info_num(c[0], "replication", "nats_connected"), 0);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(rb_nats_restart(&cl, i), 0);
    t0 = rb_test_now_ms();
    while (got = rbd_cmd(c[0], &rc, "BF.ADD", "r:f", "x", (const char *)NULL), rc != RB_OK) {
        ck_assert_msg(strncmp(got, "ERR filter-source nats: ", 24) == 0, "%s", got);
        ck_assert_msg(rb_test_now_ms() - t0 < 60000, "no write in 60 s: %s", got);
        unknown += strstr(got, "outcome is unknown") != NULL ||
                   strstr(got, "the stream holds this write") != NULL;
        usleep(200 * 1000);
    }
    ck_assert_msg(strcmp(got, "1") == 0 || (unknown > 0 && strcmp(got, "0") == 0), "%s", got);
    ms = rb_test_now_ms() - t0;
    /* Idle, the host keeps in touch with the stream without writing to it;
     * with every server gone, INFO shows how long it has been. */
    sleep(5);   /* idle: no write since */
    ck_assert_msg(contact(0) >= 0 && contact(0) <= 3, "last contact %lld s ago", contact(0));
    for (int i = 0; i < 3; i++)
        rb_nats_kill(&cl, i);
    t0 = rb_test_now_ms();
    while (contact(0) < 4)
        ck_assert_msg(rb_test_now_ms() - t0 < 15000 && usleep(100 * 1000) == 0,
                      "the last contact stays %lld s old with no server", contact(0));
    ck_assert_str_eq(rbd_cmd(c[0], &rc, "BF.EXISTS", "r:f", "x", (const char *)NULL), "1");
    printf("replica: no NATS at start: served at once, replicated writes refused with the "
           "reason; with the servers up, the first write went through %llu ms later; with "
           "them gone, the last contact was %lld s old %llu ms later, reads going on\n",
           (unsigned long long)ms, contact(0), (unsigned long long)(rb_test_now_ms() - t0));
}
END_TEST

int main(void)
{
    if (!rb_nats_program()) {
        printf("SKIP: nats-server is not installed; install the Debian package nats-server\n");
        return 77;
    }
    return RB_TEST_MAIN("replica",
                        RB_TCASE("nats", 240, NULL, fleet_stop, test_replica_converge,
                                 test_replica_lagging, test_replica_race, test_replica_outage, test_replica_crash,
                                 test_replica_skipped_and_halted,
                                 test_replica_refused_changes,
                                 test_replica_starts_without_nats),
                        replica_trust_tcase());
}
