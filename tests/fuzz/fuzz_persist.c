/*
 * fuzz_persist.c - libFuzzer target: ringbloomd's start-up restore of a
 * snapshot and an append-only log (daemon/persist/snapshot.c, daemon/persist/replay.c),
 * through the same functions rbd_recovery_start runs on the mapped files
 * (rbd_snapshot_load, rbd_replay_log), into a private (memfd) segment.
 *
 * Input: byte 0 flags (1 snapshot present, 2 log present, 4 load-truncated,
 * 8 fix checksums), bytes 1-4 the snapshot's length n (u32 LE, clamped),
 * then n snapshot bytes, then the log bytes.  "Fix checksums" first pads
 * the snapshot with zeros up to the size its segment header gives (at most
 * 4 MiB: the seeds are dumps trimmed of their zero tail, see
 * make-corpus.sh), then rewrites the snapshot's length and XXH3 fields,
 * both headers' checksums (the snapshot's as its version byte says: format
 * 3, 128 bytes, or 2, 64) and every whole log record's checksum
 * (in a copy), so mutations reach the restore and replay code instead of
 * stopping at a checksum mismatch.
 * Snapshots whose dump reserves more
 * than 64 MiB are skipped (the reservation becomes a memfd the size of
 * what the log then reserves; the daemon's own bound is max-memory).
 *
 * Must hold (a failure aborts; ASan/UBSan/LSan catch the rest):
 *   - errors are fine, but a failed snapshot load leaves no segment;
 *   - a log loads only with a snapshot, and then is replayed to its end,
 *     or to a torn tail only if load-truncated, or skipped whole;
 *   - a restore that succeeded leaves a segment whose ring and filters
 *     readers can use, and whose dump - what the daemon writes as its
 *     start-up snapshot - restores again, with a ring that loads: a
 *     start that succeeded is followed by one that succeeds;
 *   - nothing leaks whatever the outcome.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <xxhash.h>

#include "rbd_log.h"
#include "replay.h"
#include "ring.h"
#define FUZZ_TARGET "fuzz_persist"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

enum { F_SNAP = 1, F_LOG = 2, F_TRUNCATED = 4, F_FIX = 8 };

#define LOG_HDR  32u
#define LOG_HDR_SUM  24u   /* the log header's checksum */
#define MAX_RESERVATION (64u << 20)
#define MAX_PAD (4u << 20)

static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}

/* The snapshot header's length as its version says (snapshot.c): 128
 * bytes from format 3 on, 64 before; its checksum is its last 8 bytes. */
static size_t snap_hdr(const unsigned char *snap, size_t len)
{
    return len >= 12 && get_u32(snap + 8) >= 3 ? 128u : 64u;
}

/* Makes the snapshot's length and checksum fields agree with its bytes. */
static void fix_snapshot(unsigned char *snap, size_t len)
{
    size_t hdr = snap_hdr(snap, len);

    if (len < hdr)
        return;
    put_u64(snap + 24, len - hdr);
    put_u64(snap + 32, XXH3_64bits(snap + hdr, len - hdr));
    put_u64(snap + hdr - 8, XXH3_64bits(snap, hdr - 8));
}

/* Gives the log's header and every whole record of it its right checksum. */
static void fix_log(unsigned char *log, size_t len)
{
    size_t i = LOG_HDR;

    if (len >= LOG_HDR)
        put_u64(log + LOG_HDR_SUM, XXH3_64bits(log, LOG_HDR_SUM));

    while (i + 9 <= len) {
        uint32_t rlen = get_u32(log + i);
        if (rlen == 0 || rlen > len - i - 8)
            break;
        put_u32(log + i + 4, (uint32_t)XXH3_64bits(log + i + 8, rlen));
        i += 8 + (size_t)rlen;
    }
}

/* The segment as readers (and the next start) will see it. */
static void check_restored(rbd_state_t *s)
{
    static const char *keys[] = { "", "a", "key:1", "http://example.com/" };
    rb_ring_stat_t st;
    rb_node_t node[3];
    names_t nm;
    rb_segment_t *again = NULL;
    rb_ring_t *ring = NULL;
    dump_buf_t dump = { NULL, 0 };
    int rc;

    CHECK(rbi_ring_validate(s->seg) == RB_OK);
    CHECK(rb_ring_stat(s->seg, &st) == RB_OK);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        rc = rb_ring_lookup(s->seg, keys[i], strlen(keys[i]), &node[0]);
        CHECK(rc == RB_OK || rc == RB_EEMPTY);
        rc = rb_ring_lookup_n(s->seg, keys[i], strlen(keys[i]), node, 3);
        CHECK(rc > 0 || rc == RB_EEMPTY);
    }
    memset(&nm, 0, sizeof(nm));
    CHECK(rb_bloom_list(s->seg, collect, &nm) == RB_OK);
    for (size_t f = 0; f < nm.n; f++) {
        rb_bloom_t *bf;
        rb_bloom_stat_t bs;
        if (rb_bloom_open(s->seg, nm.name[f], nm.len[f], &bf) != RB_OK)
            continue;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            rc = rb_bloom_contains(bf, keys[i], strlen(keys[i]));
            CHECK(rc == 0 || rc == 1 || rc == RB_ECORRUPT);
        }
        rc = rb_bloom_info(bf, &bs);
        CHECK(rc == RB_OK || rc == RB_ECORRUPT);
        rb_bloom_close(bf);
    }
    /* The start-up snapshot of this state must restore. */
    CHECK(rb_segment_dump(s->seg, dump_copy, &dump) == RB_OK);
    rc = rb_segment_restore(NULL, NULL, dump.data, dump.len, &again);
    if (rc != RB_OK)
        fprintf(stderr, "fuzz_persist: the dump of a restored state does not restore: %s\n",
                rb_strerror(rc));
    CHECK(rc == RB_OK);
    rc = rb_ring_load(again, &ring);
    if (rc != RB_OK)
        fprintf(stderr, "fuzz_persist: the ring of a restored state does not load: %s\n",
                rb_strerror(rc));
    CHECK(rc == RB_OK);
    rb_ring_free(ring);
    rb_segment_close(again);
    free(dump.data);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rbd_log_init(1, LOG_CRIT);   /* replay warnings are expected here */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static rbd_config_t cfg;
    static rbd_state_t s;
    rb_segment_opts_t o;
    unsigned char *snap = NULL, *log = NULL;
    size_t snap_len, snap_alloc, log_len, hdr;
    rbd_snap_t snap_info = { .path = "snapshot" };
    rbd_replay_t replay;
    char err[512];
    int flags, ok = 0, rc;

    if (size < 5)
        return 0;
    flags = data[0];
    snap_len = get_u32(data + 1);
    if (snap_len > size - 5)
        snap_len = size - 5;
    log_len = size - 5 - snap_len;
    hdr = snap_hdr(data + 5, snap_len);
    if ((flags & F_SNAP) && snap_len >= hdr + 64 &&
        get_u64(data + 5 + hdr + 56) > MAX_RESERVATION)
        return 0;
    snap_alloc = snap_len;
    if ((flags & F_FIX) && snap_len >= hdr + 56) {
        uint64_t committed = get_u64(data + 5 + hdr + 48);
        if (committed > snap_len - hdr && committed <= MAX_PAD)
            snap_alloc = hdr + committed;
    }
    /* Copies: aligned for the restore, writable for the checksum fixes,
     * and of exact size so ASan sees any read past the "file". */
    snap = calloc(1, snap_alloc ? snap_alloc : 1);
    log = malloc(log_len ? log_len : 1);
    CHECK(snap != NULL && log != NULL);
    memcpy(snap, data + 5, snap_len);
    memcpy(log, data + 5 + snap_len, log_len);
    snap_len = snap_alloc;
    if (flags & F_FIX) {
        fix_snapshot(snap, snap_len);
        fix_log(log, log_len);
    }

    memset(&s, 0, sizeof(s));
    CHECK(rbd_config_defaults(&cfg, "fuzz") == RB_OK);
    cfg.max_memory = 8u << 20;
    cfg.max_filters = 16;
    cfg.load_truncated = (flags & F_TRUNCATED) != 0;

    /* rbd_recovery_start, steps 2-4, with the files' bytes. */
    if (flags & F_SNAP) {
        if (rbd_snapshot_load(&cfg, NULL, "snapshot", -1, snap, snap_len, &snap_info, &s.seg, err,
                              sizeof(err)) != 0) {
            CHECK(s.seg == NULL);   /* nothing half-loaded */
            goto out;
        }
        CHECK(s.seg != NULL && snap_info.present);
    } else {
        memset(&o, 0, sizeof(o));
        o.mode = cfg.segment_mode;
        o.max_size = cfg.max_memory;
        o.max_filters = cfg.max_filters;
        o.flags = RB_SEGMENT_HIDDEN;
        CHECK(rb_segment_create(NULL, &o, &s.seg) == RB_OK);
    }
    rc = snap_info.present ? rb_ring_load(s.seg, &s.ring)
                           : rb_ring_new(cfg.ring_mode, cfg.ring_replicas, &s.ring);
    if (rc != RB_OK)
        goto out;
    if (flags & F_LOG) {
        rc = rbd_replay_log(&cfg, &s, "log", log, log_len, &snap_info, &replay, err, sizeof(err));
        CHECK(replay.applied <= log_len);
        if (rc != 0)
            goto out;
        /* Loaded: replayed to the end, or to a torn tail it may ignore, or
         * skipped whole; never without the snapshot it continues. */
        CHECK(snap_info.present);
        if (replay.skipped)
            CHECK(replay.records == 0 && replay.applied == 0);
        else if (replay.torn)
            CHECK(cfg.load_truncated && replay.applied < log_len);
        else
            CHECK(replay.applied == log_len);
    }
    if (rb_ring_publish(s.ring, s.seg) != RB_OK)
        goto out;
    rb_segment_go_live(s.seg);
    ok = 1;
out:
    if (ok)
        check_restored(&s);
    rbd_filters_close(&s.filters);
    rb_segment_close(s.seg);
    rb_ring_free(s.ring);
    free(snap);
    free(log);
    return 0;
}
