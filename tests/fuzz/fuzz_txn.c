/*
 * fuzz_txn.c - libFuzzer target: a client's session of requests, MULTI /
 * EXEC / DISCARD among them, run through ringbloomd's dispatcher
 * (daemon/commands/cmd.c: every command of its table, reached by name or by index)
 * on a server built in this process (a private segment, the log and
 * snapshots in a temporary directory, group commit after each request, a
 * BGSAVE run to its end as the loop would), then restored from the files
 * it left with the start-up functions (rbd_snapshot_load, rbd_replay_log).
 *
 * Input: requests, each a byte argc (1 + n mod 6), then its arguments, each
 * a byte length (mod 32) and that many bytes; a first argument whose length
 * byte is 0xff is the command of the table at index (next byte mod the
 * table's size, COMMAND LIST's order).  Limits small enough to reach:
 * max-request-bytes 4 KiB (the queue's bound), client-output-hard-limit
 * 64 KiB, max-client-memory 1 MiB, a 4 MiB segment of 16 filters.
 *
 * Must hold (a failure aborts; ASan/UBSan/LSan catch the rest):
 *   - after every request: no log record is open (aof.open), the segment's
 *     transaction mark is clear, the group commit writes the log, and a
 *     transaction's byte count is its queue's length (every queued byte
 *     counted, length prefixes included);
 *   - the files restore: the snapshot loads, the log replays to its end,
 *     and the restored state has the filters, items and ring nodes the
 *     live one has (a transaction is all in the files or none of it);
 *   - nothing leaks.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "cmd.h"
#include "rbd_log.h"
#include "replay.h"
#include "ring.h"
#include "seg_txn.h"
#include "snapshot.h"
#define FUZZ_TARGET "fuzz_txn"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_COMMANDS 256
#define MAX_ARGS 6

static char names[MAX_COMMANDS][32];   /* COMMAND LIST */
static size_t ncommands;
static char dir[64];

typedef struct srv {
    server_t s;
    client_t c;
} srv_t;

static void srv_open(srv_t *t)
{
    rb_segment_opts_t o;
    char err[512];

    memset(t, 0, sizeof(*t));
    CHECK(rbd_config_defaults(&t->s.cfg, "fuzz") == RB_OK);
    t->s.cfg.max_request_bytes = 4096;
    t->s.cfg.output_soft_limit = 64u << 10;
    t->s.cfg.output_hard_limit = 64u << 10;
    t->s.cfg.max_client_memory = 1u << 20;
    memset(&o, 0, sizeof(o));
    o.mode = 0600;
    o.max_size = 4u << 20;
    o.max_filters = 16;
    o.flags = RB_SEGMENT_HIDDEN;
    CHECK(rb_segment_create(NULL, &o, &t->s.state.seg) == RB_OK);
    CHECK(rb_ring_new(t->s.cfg.ring_mode, t->s.cfg.ring_replicas, &t->s.state.ring) == RB_OK);
    CHECK(rb_ring_publish(t->s.state.ring, t->s.state.seg) == RB_OK);
    rb_segment_go_live(t->s.state.seg);   /* as at start-up: a snapshot takes a live one */
    CHECK(rbd_aof_open(&t->s.aof, dir, FSYNC_NO, err, sizeof(err)) == 0);
    rbd_sinks_init(&t->s.state.sinks, rbd_server_answer, &t->s);   /* as main.c */
    t->s.apply = rbd_server_apply;   /* as rbd_server_listen: CONFIG SET */
    CHECK(rbd_sinks_add(&t->s.state.sinks, &rbd_sink_log, &t->s.aof, -1) == 0);
    t->s.snaps.wakefd = -1;   /* no event loop: a BGSAVE is waited for */
    CHECK(rbd_snapshot_save(&t->s.snaps, &t->s.aof, t->s.state.seg, err, sizeof(err)) == 0);
    t->c.who.n = 1;                      /* +@all, as root */
    t->c.who.e[0].set = RBD_ACL_ALL;
}

static void srv_close(srv_t *t)
{
    rbd_snapshot_abandon(&t->s.snaps);
    rbd_txn_reset(&t->c.txn);
    rbi_buf_free(&t->c.out);
    free(t->c.name);
    free(t->c.lib_name);
    free(t->c.lib_ver);
    free(t->s.argv);
    rbd_observe_free(&t->s.obs);
    rbd_filters_close(&t->s.state.filters);
    rbd_sinks_free(&t->s.state.sinks);
    rbd_aof_close(&t->s.aof);
    rb_segment_close(t->s.state.seg);
    rb_ring_free(t->s.state.ring);
}

/* One request, then what the event loop does after it: the group commit,
 * a scheduled BGSAVE started and (here) waited for, a client past its
 * limits or QUIT closed (a fresh one follows). */
static void run(srv_t *t, size_t argc, const char **argv, const size_t *argl)
{
    rbd_cmd_execute(&t->s, &t->c, argc, argv, argl);
    CHECK(t->s.aof.open == 0);
    CHECK(!rbi_segment_txn_open(t->s.state.seg));
    CHECK(!t->s.in_exec);
    if (t->c.txn.active && !t->c.txn.dirty)
        CHECK(t->c.txn.bytes == t->c.txn.queue.len);
    CHECK(rbd_aof_flush(&t->s.aof) == 0);
    if (t->s.snaps.scheduled)
        rbd_snapshot_tick(&t->s.snaps, &t->s.aof, t->s.state.seg, &t->s.cfg, rbd_mono_ms());
    CHECK(rbd_snapshot_wait(&t->s.snaps, &t->s.aof) == 0);
    t->c.out.len = 0;
    if (t->c.closing || t->c.exec_cut) {
        rbd_txn_reset(&t->c.txn);
        t->c.closing = t->c.exec_cut = 0;
    }
    t->s.shutdown = 0;
}

/* Reads the whole file dir/name (malloc'd; *len its size). */
static unsigned char *slurp(const char *name, size_t *len)
{
    char path[128];
    unsigned char *data;
    FILE *f;
    long n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0);
    data = malloc((size_t)n + 1);
    CHECK(data != NULL && fread(data, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return data;
}

/* What must agree between the live state and the restored one: the
 * filters' names (all kinds), a Bloom filter's items, the ring's nodes. */
static void state_of(rb_segment_t *seg, names_t *nm, uint64_t *items, uint32_t *nodes)
{
    rb_ring_stat_t rs;

    memset(nm, 0, sizeof(*nm));
    CHECK(rb_bloom_list(seg, collect, nm) == RB_OK);
    for (size_t f = 0; f < nm->n; f++) {
        rb_bloom_t *bf;
        rb_bloom_stat_t st;
        items[f] = UINT64_MAX;
        if (rb_bloom_open(seg, nm->name[f], nm->len[f], &bf) != RB_OK)
            continue;
        if (rb_bloom_info(bf, &st) == RB_OK)
            items[f] = st.items;
        rb_bloom_close(bf);
    }
    CHECK(rb_ring_stat(seg, &rs) == RB_OK);
    *nodes = rs.nodes;
}

/* The start-up restore of what t left in its directory, compared with t. */
static void check_files(srv_t *t)
{
    static rbd_config_t cfg;
    rbd_state_t st;
    rbd_snap_t snap = { .path = "snapshot" };
    rbd_replay_t replay;
    names_t live, back;
    uint64_t live_items[FUZZ_MAX_FILTERS], back_items[FUZZ_MAX_FILTERS];
    uint32_t live_nodes, back_nodes;
    unsigned char *sdata, *ldata;
    size_t slen, llen;
    char err[512];

    CHECK(rb_ring_publish(t->s.state.ring, t->s.state.seg) == RB_OK);
    state_of(t->s.state.seg, &live, live_items, &live_nodes);
    memset(&st, 0, sizeof(st));
    CHECK(rbd_config_defaults(&cfg, "fuzz") == RB_OK);
    cfg.max_memory = 4u << 20;
    cfg.max_filters = 16;
    sdata = slurp(RBD_SNAP_FILE, &slen);
    ldata = slurp(RBD_LOG_FILE, &llen);
    if (rbd_snapshot_load(&cfg, NULL, "snapshot", -1, sdata, slen, &snap, &st.seg, err,
                          sizeof(err)) != 0)
        fprintf(stderr, "fuzz_txn: the snapshot does not load: %s\n", err);
    CHECK(st.seg != NULL);
    CHECK(rb_ring_load(st.seg, &st.ring) == RB_OK);
    if (rbd_replay_log(&cfg, &st, "log", ldata, llen, &snap, &replay, err, sizeof(err)) != 0)
        fprintf(stderr, "fuzz_txn: the log does not replay: %s\n", err);
    CHECK(!replay.torn && !replay.skipped && replay.applied == llen);
    CHECK(rb_ring_publish(st.ring, st.seg) == RB_OK);
    state_of(st.seg, &back, back_items, &back_nodes);
    CHECK(live.n == back.n && live_nodes == back_nodes);
    for (size_t f = 0; f < live.n; f++)
        CHECK(live.len[f] == back.len[f] && memcmp(live.name[f], back.name[f], live.len[f]) == 0 &&
              live_items[f] == back_items[f]);
    rbd_filters_close(&st.filters);
    rb_segment_close(st.seg);
    rb_ring_free(st.ring);
    free(sdata);
    free(ldata);
}

/* The table's names, from COMMAND LIST's reply (RESP2: an array of bulk
 * strings), so every command of the table can be picked by index. */
static void learn_commands(void)
{
    const char *argv[2] = { "COMMAND", "LIST" };
    size_t argl[2] = { 7, 4 };
    const char *p, *end;
    srv_t *t = calloc(1, sizeof(*t));

    CHECK(t != NULL);
    srv_open(t);
    rbd_cmd_execute(&t->s, &t->c, 2, argv, argl);
    p = t->c.out.data;
    end = p + t->c.out.len;
    CHECK(p != NULL && *p == '*');
    while ((p = memchr(p, '$', (size_t)(end - p))) != NULL && ncommands < MAX_COMMANDS) {
        size_t n = strtoul(p + 1, NULL, 10);
        p = strchr(p, '\n') + 1;
        CHECK(n < sizeof(names[0]));
        memcpy(names[ncommands++], p, n);
        p += n;
    }
    CHECK(ncommands > 0);
    srv_close(t);
    free(t);
}

/* The temporary directory goes at exit (a crash leaves it: run.sh
 * removes it). */
static void remove_dir(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/%s", dir, RBD_SNAP_FILE);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s", dir, RBD_LOG_FILE);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rbd_log_init(1, LOG_CRIT);   /* refusals and replay warnings are expected here */
    snprintf(dir, sizeof(dir), "/tmp/fuzz_txn.%d.XXXXXX", (int)getpid());
    CHECK(mkdtemp(dir) != NULL);
    atexit(remove_dir);
    learn_commands();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static srv_t t;
    size_t i = 0;

    srv_open(&t);
    while (i < size) {
        const char *argv[MAX_ARGS];
        size_t argl[MAX_ARGS], argc = 1 + data[i++] % MAX_ARGS, n = 0;
        while (n < argc && i < size) {
            if (n == 0 && data[i] == 0xff && i + 1 < size) {
                argv[0] = names[data[i + 1] % ncommands];
                argl[0] = strlen(argv[0]);
                i += 2;
            } else {
                argl[n] = data[i++] % 32;
                if (argl[n] > size - i)
                    argl[n] = size - i;
                argv[n] = (const char *)data + i;
                i += argl[n];
            }
            n++;
        }
        if (n == argc && argl[0] > 0)
            run(&t, argc, argv, argl);
    }
    check_files(&t);
    srv_close(&t);
    return 0;
}
