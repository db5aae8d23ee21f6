/*
 * check_faults.c - ringbloomd under injected faults (docs/reliability.md):
 *
 *   loop  50 rounds of four clients streaming Bloom adds and ring changes
 *         while the daemon is SIGKILLed at a random moment (some rounds
 *         also lose the /dev/shm segment); after every restart each
 *         acknowledged add is present and each client's nodes are as it
 *         last saw them acknowledged;
 *   disk  a full state directory (a small tmpfs in a private mount
 *         namespace, or RLIMIT_FSIZE): a failed snapshot changes nothing,
 *         a failed log append holds the reply and refuses writes until
 *         space returns;
 *   shm   a full /dev/shm (a small tmpfs in a private mount namespace):
 *         growth fails with a clear error and nothing half-made;
 *   shim  faults a disk seldom produces, through fault_shim.c
 *         (LD_PRELOAD): the snapshot's log rename, fdatasync (in the reply
 *         path and in the everysec thread), a log outage that must not
 *         make the daemon spin, an EXEC killed in its log write or
 *         between its members (all or none after a restart);
 *   memory 24 rounds of SIGKILL aimed at the paths that give memory and
 *         disk back: a ~19 MB filter reserved, filled and deleted over
 *         and over beside a stream of acknowledged adds, with snapshots,
 *         the kill at random, in a snapshot being written or in a release
 *         a snapshot left pending, the restart on the kept segment and
 *         from the files in turn; after each, every acknowledged add is
 *         present and the object's allocated bytes come back within a
 *         bound of used_memory; at the end a snapshot's blocks follow the
 *         live data, not the segment's length.
 *
 * The torn log tail is in check_daemon (test_daemon_torn_tail_accepted_
 * middle_damage_refused, which cuts a real record at every offset), the
 * corrupt snapshot checksum in test_daemon_corrupt_snapshot_refuses_start,
 * damaged headers, files that do not fit together, the snapshot's crash
 * windows and zero-filled tails in check_persist.
 *
 * This file: the loop, and main().  The other TCases: disk and shm
 * (check_faults_full.c), shim (check_faults_shim.c), memory
 * (check_faults_memory.c); what they share is faults.h.
 *
 * Every daemon, temp dir and shm object is removed by the harness's exit
 * handler even when an assertion ends a test; mounts live in the test's
 * own mount namespace and end with its process.
 */
#include "faults.h"

/* ================================================================================ */
/* 1. The fault loop                                                                */
/* ================================================================================ */

enum { LOOP_CLIENTS = 4, LOOP_NODES = 6, LOOP_MAX_OPS = 4096, LOOP_FILTERS = 3,
       LOOP_BATCH = 32 };
static const char *const loop_filters[LOOP_FILTERS] = { "fa", "fb", "fc" };
static const char *const loop_fsync[3] = { "always", "everysec", "no" };

enum { OP_ADD = 1, OP_MADD, OP_RING, OP_SAVE };

typedef struct loop_op {
    uint8_t kind, filter, node;
    uint32_t weight;             /* OP_RING: the node's weight after it, 0 = removed */
    uint32_t first, count;       /* OP_ADD / OP_MADD: keys [first, first + count) */
} loop_op_t;

/* One client's record of a round, in memory shared with the test. */
typedef struct loop_lane {
    _Atomic uint32_t nacked;     /* acked[0 .. nacked) were acknowledged */
    _Atomic int inflight_set;    /* inflight was sent and not acknowledged */
    loop_op_t inflight;
    uint32_t weight[LOOP_NODES]; /* its nodes: at the start, then as acknowledged */
    loop_op_t acked[LOOP_MAX_OPS];
    char error[512];
} loop_lane_t;

typedef struct loop_box {
    _Atomic int ready;
    loop_lane_t lane[LOOP_CLIENTS];
} loop_box_t;

/* An acknowledged batch of keys, for the checks of every later round. */
typedef struct loop_range {
    uint16_t round;
    uint8_t client, filter;
    uint32_t first, count;
} loop_range_t;

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static size_t loop_key(char *buf, size_t cap, unsigned round, unsigned client, uint32_t i)
{
    return (size_t)snprintf(buf, cap, "https://r%u.c%u.fault.example/item/%u", round, client, i);
}

static void loop_node(char *buf, size_t cap, unsigned client, unsigned node)
{
    snprintf(buf, cap, "c%u-n%u", client, node);
}

/* 1 if reply is what op must get when it succeeds. */
static int loop_reply_ok(const loop_op_t *op, const char *reply)
{
    if (op->kind == OP_RING || op->kind == OP_SAVE)
        return strcmp(reply, "OK") == 0;
    for (uint32_t i = 0; i < op->count; i++) {
        if ((reply[0] != '0' && reply[0] != '1') ||
            reply[1] != (i + 1 == op->count ? '\0' : '\n'))
            return 0;
        reply += 2;
    }
    return 1;
}

/* A client process: streams operations until the daemon goes away, and
 * records each one once it is acknowledged. */
static void loop_client(loop_box_t *box, unsigned ci, unsigned round, uint64_t seed)
{
    loop_lane_t *L = &box->lane[ci];
    uint64_t rng = seed ^ ((uint64_t)(round + 1) << 40) ^ (uint64_t)(ci + 1) * 0x9E3779B97F4A7C15ULL;
    static char keys[LOOP_BATCH][80], reply[8192];
    const char *argv[LOOP_BATCH + 3];
    size_t argl[LOOP_BATCH + 3];
    char name[32], wbuf[16];
    uint32_t next = 0;
    rb_conn_t *c;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (rb_conn_open(NULL, d.sock, 10000, &c) != RB_OK) {
        snprintf(L->error, sizeof(L->error), "client %u cannot connect", ci);
        atomic_fetch_add(&box->ready, 1);   /* the round fails on its status */
        _exit(1);
    }
    atomic_fetch_add(&box->ready, 1);
    while (atomic_load(&L->nacked) < LOOP_MAX_OPS) {
        loop_op_t op = { 0 };
        unsigned r = (unsigned)(rng_next(&rng) % 100);
        size_t argc = 0;
        int rc;

        if (r < 75) {
            op.kind = r < 40 ? OP_MADD : OP_ADD;
            op.filter = (uint8_t)(rng_next(&rng) % LOOP_FILTERS);
            op.first = next;
            op.count = op.kind == OP_ADD ? 1 : 1 + (uint32_t)(rng_next(&rng) % LOOP_BATCH);
            argv[argc++] = op.kind == OP_ADD ? "BF.ADD" : "BF.MADD";
            argv[argc++] = loop_filters[op.filter];
            for (uint32_t i = 0; i < op.count; i++) {
                loop_key(keys[i], sizeof(keys[i]), round, ci, next + i);
                argv[argc++] = keys[i];
            }
        } else if (r < 99 || ci != 0) {
            uint32_t cur;
            op.kind = OP_RING;
            op.node = (uint8_t)(rng_next(&rng) % LOOP_NODES);
            cur = L->weight[op.node];
            loop_node(name, sizeof(name), ci, op.node);
            if (cur == 0) {
                op.weight = 1 + (uint32_t)(rng_next(&rng) % 5);
                argv[argc++] = "RING.ADD";
            } else if (rng_next(&rng) % 2) {
                op.weight = 0;
                argv[argc++] = "RING.REMOVE";
            } else {
                op.weight = cur % 5 + 1;   /* another weight */
                argv[argc++] = "RING.WEIGHT";
            }
            argv[argc++] = name;
            if (op.weight > 0) {
                snprintf(wbuf, sizeof(wbuf), "%u", op.weight);
                argv[argc++] = wbuf;
            }
        } else {
            op.kind = OP_SAVE;   /* a snapshot, so some kills land in one */
            argv[argc++] = "SAVE";
        }
        for (size_t i = 0; i < argc; i++)
            argl[i] = strlen(argv[i]);
        L->inflight = op;
        atomic_store(&L->inflight_set, 1);
        rc = rb_conn_command(c, argc, argv, argl, reply, sizeof(reply));
        if (rc == RB_EDAEMON)
            break;   /* killed: this one may or may not have happened */
        if (rc != RB_OK || !loop_reply_ok(&op, reply)) {
            snprintf(L->error, sizeof(L->error), "client %u: %s %s -> rc %d [%.300s]", ci,
                     argv[0], argc > 1 ? argv[1] : "", rc, reply);
            _exit(1);
        }
        if (op.kind == OP_RING)
            L->weight[op.node] = op.weight;
        if (op.kind == OP_ADD || op.kind == OP_MADD)
            next += op.count;
        L->acked[atomic_load(&L->nacked)] = op;
        atomic_fetch_add(&L->nacked, 1);
        atomic_store(&L->inflight_set, 0);
    }
    rb_conn_close(c);
    _exit(0);
}

typedef struct loop_state {
    uint64_t seed;
    loop_range_t *ranges;        /* every acknowledged batch so far */
    size_t nranges, cap, first_of_round;
    uint32_t weight[LOOP_CLIENTS][LOOP_NODES];   /* verified ring */
    uint64_t adds, ring_changes, saves, inflight_ring_applied;
} loop_state_t;

/* Asserts the restarted daemon's state against what was acknowledged:
 * every key ever acknowledged through the reader API, those of the last
 * round also through BF.MEXISTS (and each client's last one through
 * BF.EXISTS); each client's nodes as it last saw them acknowledged, or
 * as its unacknowledged last change would make them. */
static void loop_verify(loop_state_t *st, const loop_box_t *box, unsigned round)
{
    static char keys[256][80], reply[65536];
    const char *argv[258];
    size_t argl[258];
    rb_bloom_t *bf[LOOP_FILTERS] = { NULL };
    rb_node_t nodes[LOOP_CLIENTS * LOOP_NODES + 1];
    uint32_t actual[LOOP_CLIENTS][LOOP_NODES];
    rb_segment_t *seg;
    size_t count;
    rb_conn_t *c;
    int rc;

    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    c = rbd_connect(&d);
    for (size_t r = 0; r < st->nranges; r++) {
        const loop_range_t *g = &st->ranges[r];
        int last_round = r >= st->first_of_round;
        if (bf[g->filter] == NULL)
            ck_assert_int_eq(rb_bloom_open(seg, loop_filters[g->filter], 2, &bf[g->filter]),
                             RB_OK);
        for (uint32_t i = 0; i < g->count; i++) {
            size_t len = loop_key(keys[i % 256], sizeof(keys[0]), g->round, g->client,
                                  g->first + i);
            ck_assert_msg(rb_bloom_contains(bf[g->filter], keys[i % 256], len) == 1,
                          "seed %llu, after round %u: acknowledged key %s (filter %s) is "
                          "missing", (unsigned long long)st->seed, round, keys[i % 256],
                          loop_filters[g->filter]);
        }
        if (last_round) {
            /* The same keys through the daemon. */
            size_t argc = 0;
            argv[argc++] = "BF.MEXISTS";
            argv[argc++] = loop_filters[g->filter];
            for (uint32_t i = 0; i < g->count; i++)
                argv[argc++] = keys[i];
            for (size_t i = 0; i < argc; i++)
                argl[i] = strlen(argv[i]);
            ck_assert_int_eq(rb_conn_command(c, argc, argv, argl, reply, sizeof(reply)), RB_OK);
            for (uint32_t i = 0; i < g->count; i++)
                ck_assert_msg(reply[2 * i] == '1', "seed %llu: BF.MEXISTS misses %s",
                              (unsigned long long)st->seed, keys[i]);
        }
    }
    /* Each client's most recently acknowledged add, through BF.EXISTS. */
    for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
        const loop_lane_t *L = &box->lane[ci];
        for (uint32_t k = atomic_load(&L->nacked); k-- > 0;) {
            const loop_op_t *op = &L->acked[k];
            if (op->kind != OP_ADD && op->kind != OP_MADD)
                continue;
            loop_key(keys[0], sizeof(keys[0]), round, ci, op->first + op->count - 1);
            ck_assert_str_eq(rbd_cmd(c, &rc, "BF.EXISTS", loop_filters[op->filter], keys[0],
                                     (const char *)NULL), "1");
            break;
        }
    }
    /* The ring: nothing but the clients' nodes, each as acknowledged (or
     * as the change in flight at the kill would leave it). */
    memset(actual, 0, sizeof(actual));
    ck_assert_int_eq(rb_ring_nodes(seg, nodes, sizeof(nodes) / sizeof(nodes[0]), &count), RB_OK);
    ck_assert_uint_le(count, LOOP_CLIENTS * LOOP_NODES);
    for (size_t i = 0; i < count; i++) {
        unsigned ci, j;
        char tail;
        ck_assert_msg(sscanf(nodes[i].name, "c%u-n%u%c", &ci, &j, &tail) == 2 &&
                      ci < LOOP_CLIENTS && j < LOOP_NODES, "unexpected node %s", nodes[i].name);
        actual[ci][j] = nodes[i].weight;
    }
    for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
        const loop_lane_t *L = &box->lane[ci];
        const loop_op_t *in = atomic_load(&L->inflight_set) ? &L->inflight : NULL;
        for (unsigned j = 0; j < LOOP_NODES; j++) {
            int alt = in != NULL && in->kind == OP_RING && in->node == j;
            ck_assert_msg(actual[ci][j] == L->weight[j] || (alt && actual[ci][j] == in->weight),
                          "seed %llu, after round %u: node c%u-n%u has weight %u, acknowledged "
                          "%u%s", (unsigned long long)st->seed, round, ci, j, actual[ci][j],
                          L->weight[j], alt ? " (or the change in flight)" : "");
            if (alt && actual[ci][j] != L->weight[j])
                st->inflight_ring_applied++;
            st->weight[ci][j] = actual[ci][j];
        }
    }
    {
        /* The daemon's own view (RING.NODES) agrees with the reader's. */
        const char *nodes_cmd = rbd_cmd(c, &rc, "RING.NODES", (const char *)NULL);
        size_t lines = count > 0;
        ck_assert_int_eq(rc, RB_OK);
        for (const char *p = nodes_cmd; *p; p++)
            lines += *p == '\n';
        ck_assert_uint_eq(lines, count * 2);
    }
    for (int f = 0; f < LOOP_FILTERS; f++)
        rb_bloom_close(bf[f]);
    rb_conn_close(c);
    rb_segment_close(seg);
}

/* Adds the round's acknowledged operations to the running totals. */
static void loop_collect(loop_state_t *st, const loop_box_t *box, unsigned round)
{
    st->first_of_round = st->nranges;
    for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
        const loop_lane_t *L = &box->lane[ci];
        uint32_t n = atomic_load(&L->nacked);
        for (uint32_t k = 0; k < n; k++) {
            const loop_op_t *op = &L->acked[k];
            if (op->kind == OP_RING) {
                st->ring_changes++;
                continue;
            }
            if (op->kind == OP_SAVE) {
                st->saves++;
                continue;
            }
            if (st->nranges == st->cap) {
                st->cap = st->cap ? st->cap * 2 : 4096;
                st->ranges = realloc(st->ranges, st->cap * sizeof(*st->ranges));
                ck_assert_ptr_nonnull(st->ranges);
            }
            st->ranges[st->nranges++] = (loop_range_t){ (uint16_t)round, (uint8_t)ci,
                                                        op->filter, op->first, op->count };
            st->adds += op->count;
        }
    }
}

START_TEST(test_faults_sigkill_loop_keeps_every_ack)
{
    const char *env_rounds = getenv("RB_FAULT_ROUNDS"), *env_seed = getenv("RB_FAULT_SEED");
    unsigned rounds = env_rounds ? (unsigned)atoi(env_rounds) : 50, removed = 0;
    loop_box_t *box = mmap(NULL, sizeof(*box), PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    loop_state_t st = { 0 };
    double t0 = now_s(), restart_s = 0;
    uint64_t rng;
    pid_t kids[LOOP_CLIENTS];
    char extra[256];
    rb_conn_t *c;

    ck_assert(box != MAP_FAILED);
    st.seed = env_seed ? strtoull(env_seed, NULL, 10)
                       : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (st.seed == 0)
        st.seed = 1;
    rng = st.seed;
    printf("fault loop: seed %llu (RB_FAULT_SEED=%llu repeats the schedule), %u rounds\n",
           (unsigned long long)st.seed, (unsigned long long)st.seed, rounds);
    fflush(stdout);
    for (unsigned round = 0; round <= rounds; round++) {
        double t = now_s();
        unsigned delay_ms;

        snprintf(extra, sizeof(extra), "appendfsync %s\nsave-seconds 0\nsave-log-bytes 1mb",
                 loop_fsync[round % 3]);
        if (round == 0) {
            rbd_start(&d, extra);
            c = rbd_connect(&d);
            rbd_expect(c, "OK", "BF.RESERVE", "fa", "0.01", "200000");
            rbd_expect(c, "OK", "BF.RESERVE", "fb", "0.01", "1000", "EXPANSION", "2");
            rb_conn_close(c);   /* fc is created by the first add, as RedisBloom does */
        } else {
            rbd_write_conf(&d, extra);
            rbd_launch(&d, NULL);
            restart_s += now_s() - t;
            loop_verify(&st, box, round - 1);
        }
        if (round == rounds)
            break;
        /* Stream from four clients; kill the daemon at a random moment. */
        memset(box, 0, sizeof(*box));
        for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++)
            memcpy(box->lane[ci].weight, st.weight[ci], sizeof(st.weight[ci]));
        for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
            kids[ci] = fork();
            ck_assert_int_ge(kids[ci], 0);
            if (kids[ci] == 0)
                loop_client(box, ci, round, st.seed);
        }
        /* The kill must come after every client connected (a client that
         * finds the daemon dead fails the round): wait for them, however
         * slow a loaded machine makes fork and connect. */
        for (double since = now_s(); atomic_load(&box->ready) < LOOP_CLIENTS;) {
            ck_assert_msg(now_s() - since < 60.0, "seed %llu round %u: clients not connected in 60 s",
                          (unsigned long long)st.seed, round);
            usleep(1000);
        }
        delay_ms = 20 + (unsigned)(rng_next(&rng) % 400);
        usleep(delay_ms * 1000);
        rbd_stop(&d, SIGKILL);
        for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
            int status;
            ck_assert_int_eq(waitpid(kids[ci], &status, 0), kids[ci]);
            ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                          "seed %llu round %u: %s", (unsigned long long)st.seed, round,
                          box->lane[ci].error[0] ? box->lane[ci].error : "client died");
        }
        if (rng_next(&rng) % 3 == 0) {
            ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
            removed++;
        }
        loop_collect(&st, box, round);
    }
    printf("fault loop: %u rounds survived (%u with the segment removed, recovered from "
           "snapshot + log; %d re-attached), %d torn log tails accepted\n",
           rounds, removed, rbd_log_count(&d, "re-attached to the live segment"),
           rbd_log_count(&d, "torn"));
    printf("fault loop: %llu adds acknowledged and verified (every one after every later "
           "restart via the reader API, each round's via BF.MEXISTS), %llu ring changes "
           "verified (%llu unacknowledged ones found applied), %llu snapshots acknowledged\n",
           (unsigned long long)st.adds, (unsigned long long)st.ring_changes,
           (unsigned long long)st.inflight_ring_applied, (unsigned long long)st.saves);
    printf("fault loop: %.1f s in total, %.2f s per restart on average\n", now_s() - t0,
           restart_s / (rounds ? rounds : 1));
    ck_assert(rounds == 0 || st.adds > 0);
    ck_assert(rounds == 0 || st.ring_changes > 0);
    free(st.ranges);
    munmap(box, sizeof(*box));
}
END_TEST

int main(void)
{
    /* Figures reach the log even from a test process that fails. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    return RB_TEST_MAIN("faults",
                        RB_TCASE("loop", 300, NULL, faults_teardown,
                                 test_faults_sigkill_loop_keeps_every_ack),
                        faults_disk_tcase(),
                        faults_shm_tcase(),
                        faults_shim_tcase(),
                        faults_memory_tcase());
}
