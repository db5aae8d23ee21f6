/*
 * replay.c - replaying the append-only log at start-up: each whole,
 * checksummed record (record.c checks the framing) is decoded and applied
 * through its op's row (ops.c's table, assembled from the families' rows:
 * ops_def.h; rbd_op_from_record), the same code
 * that applied it live (a TXN record: each of its members, so a
 * transaction is replayed whole or, torn, not at all); a torn tail (what a crash while
 * appending leaves, and only that) may be ignored; anything else that does
 * not parse or apply is corruption (docs/design.md, "Start-up": Records,
 * Torn tails).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <xxhash.h>

#include "aof.h"
#include "bytes.h"
#include "ops.h"
#include "rbd_log.h"
#include "record.h"
#include "replay.h"

#define RESYNC_WINDOW (1u << 20)   /* how far past a bad record to look for good ones */
#define ZERO_BLOCK    512u         /* the smallest file system block, and its alignment */

enum { TORN_CUT = 1, TORN_ZEROS = 2 };

typedef struct log_bytes {
    const unsigned char *data;
    size_t len;
} log_bytes_t;

/* 1 if a whole, checksummed record (rbd_rec_at) of a known type starts at
 * offset j: then *r is it. */
static int record_at(const log_bytes_t *m, size_t j, rbd_rec_t *r)
{
    return rbd_rec_at(m->data, m->len, j, r) == RBD_REC_OK && rbd_op_name(r->type) != NULL;
}

/* A record at offset i whose length runs past the end of the file may be
 * whole with a damaged length field (its checksum covers only the type and
 * payload).  Returns the length L (<= the bytes left) that makes it a
 * whole, checksummed record - its length with one bit flipped, or all the
 * bytes left - or 0 if none does: then it may really be cut short.  A
 * prefix of a torn record passes by chance with odds 2^-32 per candidate.
 * One pass over the bytes (a digest at each candidate); -1 if no hash
 * state can be allocated. */
static int64_t whole_at_other_length(const log_bytes_t *m, size_t i)
{
    size_t left = m->len - i, want[33], n = 0;
    uint32_t len = rbd_get_u32(m->data + i), sum = rbd_get_u32(m->data + i + 4);
    XXH3_state_t *xx;
    size_t done = 0;
    int64_t found = 0;

    if (left <= 8 || len <= left - 8)
        return 0;
    want[n++] = left - 8;
    for (int b = 0; b < 32; b++) {
        uint32_t l = len ^ (1u << b);
        if (l != 0 && l < left - 8)
            want[n++] = l;
    }
    /* ascending, so one pass reaches each in turn (n <= 33: insertion sort) */
    for (size_t a = 1; a < n; a++)
        for (size_t b = a; b > 0 && want[b - 1] > want[b]; b--) {
            size_t t = want[b];
            want[b] = want[b - 1];
            want[b - 1] = t;
        }
    xx = XXH3_createState();
    if (xx == NULL || XXH3_64bits_reset(xx) != XXH_OK) {
        XXH3_freeState(xx);
        return -1;
    }
    for (size_t k = 0; k < n && found == 0; k++) {
        XXH3_64bits_update(xx, m->data + i + 8 + done, want[k] - done);
        done = want[k];
        if ((uint32_t)XXH3_64bits_digest(xx) == sum)
            found = (int64_t)want[k];
    }
    XXH3_freeState(xx);
    return found;
}

/* Whether the bytes from offset i on - where no whole record starts - are
 * what a crash while appending leaves:
 *   TORN_CUT   a record cut short by the end of the file (fewer than 9
 *              bytes of it, or a length running past the end, and no
 *              other length that ends in the file makes it whole:
 *              whole_at_other_length): an interrupted write(2) leaves a
 *              prefix of what it wrote;
 *   TORN_ZEROS zeros from a ZERO_BLOCK boundary to the end of the file,
 *              reaching into the record at i: blocks a crash left
 *              allocated but unwritten read as zeros (delayed allocation,
 *              unwritten extents), and blocks start at multiples of 512;
 * and the record's bytes before the cut or the zeros start a record we
 * could have written (a length in 1..max-request-bytes + 64, a known
 * type; a TXN up to RBD_TXN_RECORD_MAX, and so a record whose type was
 * cut off), with no whole record after i within RESYNC_WINDOW (a torn write
 * is the last thing in the file).  0 otherwise: damage - a complete
 * record with a bad checksum included, last or not. */
static int torn_tail(const rbd_config_t *cfg, const log_bytes_t *m, size_t i)
{
    uint64_t max = RBD_TXN_RECORD_MAX(cfg->max_request_bytes);
    size_t left = m->len - i, real, z = m->len, b, from;
    rbd_rec_t rec;
    int how;

    if (left < RBD_REC_HDR || rbd_get_u32(m->data + i) > left - 8) {
        if (left >= RBD_REC_HDR && whole_at_other_length(m, i) != 0)
            return 0;   /* its bytes are all there: a damaged length, not a cut */
        how = TORN_CUT;
        real = m->len;
    } else {
        while (z > RBD_LOG_HDR && m->data[z - 1] == 0)
            z--;
        b = (z + ZERO_BLOCK - 1) / ZERO_BLOCK * ZERO_BLOCK;
        if (b >= m->len || b >= i + 8 + (size_t)rbd_get_u32(m->data + i))
            return 0;   /* no zeroed block, or none inside this (complete) record */
        how = TORN_ZEROS;
        real = b > i ? b : i;
    }
    if (real - i >= 4 && (rbd_get_u32(m->data + i) == 0 || rbd_get_u32(m->data + i) > max))
        return 0;
    if (real - i >= RBD_REC_HDR && (rbd_op_name(m->data[i + 8]) == NULL ||
        (m->data[i + 8] != RBD_OP_TXN &&
         rbd_get_u32(m->data + i) > cfg->max_request_bytes + 64)))
        return 0;
    /* A torn TXN holds whole records of its own, its members: the search
     * starts after those that are there. */
    from = i + 1;
    if (real - i >= RBD_REC_HDR && m->data[i + 8] == RBD_OP_TXN)
        for (from = i + RBD_REC_HDR; record_at(m, from, &rec); from += rec.size)
            ;
    /* Damage in the middle is followed by whole records; a torn tail is
     * not.  Look a bounded distance ahead (records are small; a longer
     * search would cost O(n^2) on garbage). */
    for (size_t j = from; j + RBD_REC_HDR <= m->len && j - i <= RESYNC_WINDOW; j++)
        if (rbd_get_u32(m->data + j) <= RESYNC_WINDOW && record_at(m, j, &rec))
            return 0;
    return how;
}

/* Why no whole record starts at offset i (and it is no torn tail). */
static const char *damage(const log_bytes_t *m, size_t i, char *buf, size_t cap)
{
    size_t left = m->len - i;
    uint32_t len = left >= 4 ? rbd_get_u32(m->data + i) : 0;
    rbd_rec_t rec;
    rbd_rec_why_t why = rbd_rec_at(m->data, m->len, i, &rec);
    int64_t whole = left >= RBD_REC_HDR ? whole_at_other_length(m, i) : 0;

    if (whole > 0)
        snprintf(buf, cap, "bad record length %u (%zu bytes left): its first %lld bytes are a "
                 "whole %s record (its checksum holds), so the length field is damaged (not a "
                 "record cut short by the end of the file)", len, left, (long long)whole,
                 rbd_op_name(m->data[i + 8]) != NULL ? rbd_op_name(m->data[i + 8]) : "?");
    else if (whole < 0)
        snprintf(buf, cap, "bad record length %u (%zu bytes left): out of memory checking "
                 "whether the record is whole", len, left);
    else if (why == RBD_REC_SHORT || why == RBD_REC_EMPTY || why == RBD_REC_PAST_END)
        snprintf(buf, cap, "bad record length %u (%zu bytes left)", len, left);
    else if (rbd_op_name(m->data[i + 8]) == NULL)
        snprintf(buf, cap, "unknown record type %u", m->data[i + 8]);
    else
        snprintf(buf, cap, "checksum mismatch in a complete %u-byte record %s (damage, not "
                 "a torn write)", len + 8, rbd_op_name(m->data[i + 8]));
    return buf;
}

/* A name from a record as text for a message: at most 64 bytes of it,
 * bytes that are not printable ASCII as \xHH. */
static const char *printable(const char *name, size_t len, char *buf, size_t cap)
{
    size_t o = 0;

    for (size_t i = 0; i < len && i < 64 && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    snprintf(buf + o, cap - o, "%s", len > 64 ? "..." : "");
    return buf;
}

/* Applies one whole, checksummed record of a known type (record_at)
 * through its op (rbd_op_from_record, rbd_op_replay).  0, or -1 with err
 * saying what is wrong with it. */
static int replay_record(rbd_state_t *st, uint8_t type, const unsigned char *q, size_t n,
                         rbd_keys_t *keys, char *err, size_t errlen)
{
    rbd_names_t names = rbd_op_names(type);
    char shown[300];
    rbd_op_t op;
    int rc = rbd_op_from_record(st, type, q, n, &op, keys);

    if (rc == RB_ETRUNC) {
        snprintf(err, errlen, "record %s is shorter than its fields", rbd_op_name(type));
        return -1;
    }
    if (rc == RB_OK)
        rc = rbd_op_replay(st, &op);
    if (rc >= 0)
        return 0;
    /* P4: replayed onto the state it was logged from, a record finds what
     * its command found.  A missing filter or node, or one that is already
     * there, means the log was not written from this state: it does not
     * belong to the snapshot, or the record is damaged beyond what its
     * checksum sees. */
    if ((rc == RB_ENOENT || rc == RB_EEXIST) && names != RBD_NAMES_NOTHING) {
        int ring = names == RBD_NAMES_NODE;
        snprintf(err, errlen, "record %s names %s '%s', which %s", rbd_op_name(type),
                 ring ? "node" : "filter", printable(op.name, op.len, shown, sizeof(shown)),
                 rc == RB_EEXIST ? (ring ? "is already in the ring" : "already exists")
                                 : (ring ? "is not in the ring" : "does not exist"));
        return -1;
    }
    snprintf(err, errlen, "record %s cannot be applied: %s", rbd_op_name(type), rb_strerror(rc));
    return -1;
}

/* Replays the members of a TXN record, its payload q[0..n): whole,
 * checksummed records of a known type other than TXN, each through
 * replay_record.  The frame's checksum held, so a member that is not such
 * a record is damage.  0, or -1 with err. */
static int replay_txn(rbd_state_t *st, const unsigned char *q, size_t n, rbd_keys_t *keys,
                      char *err, size_t errlen)
{
    rbd_rec_walk_t w;
    rbd_rec_t r;
    int more;

    rbd_rec_walk_init(&w, q, n);
    while ((more = rbd_rec_next(&w, &r, NULL)) != 0) {
        if (more < 0 || rbd_op_name(r.type) == NULL || r.type == RBD_OP_TXN) {
            snprintf(err, errlen, "record TXN holds no whole record at its byte %zu",
                     more < 0 ? w.at : w.at - r.size);
            return -1;
        }
        if (replay_record(st, r.type, r.payload, r.plen, keys, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* What no whole record at offset i means: a torn tail ignored (0, r->torn
 * set), or -1 with err. */
static int replay_end(const rbd_config_t *cfg, const char *path, const log_bytes_t *m, size_t i,
                      rbd_replay_t *r, char *err, size_t errlen)
{
    char why[512];
    int how = torn_tail(cfg, m, i);

    if (how == 0) {
        snprintf(err, errlen, "log %s is corrupt at offset %zu: %s", path, i,
                 damage(m, i, why, sizeof(why)));
        return -1;
    }
    if (!cfg->load_truncated) {
        snprintf(err, errlen, "log %s is truncated at offset %zu (a torn last record; "
                 "set load-truncated yes to accept it)", path, i);
        return -1;
    }
    rbd_log(LOG_WARNING, "log %s ends in a torn record at offset %zu (%zu bytes, %s): "
            "ignoring it (load-truncated yes); the file is kept as %s.torn", path, i,
            m->len - i, how == TORN_CUT ? "cut short by the end of the file" : "zero-filled",
            path);
    r->torn = 1;
    return 0;
}

/* Replays the records of a log whose header was checked, from offset
 * `from` (a record's start) on.  0, or -1 with err. */
static int replay_records(const rbd_config_t *cfg, rbd_state_t *st, const char *path,
                          const log_bytes_t *m, size_t from, rbd_replay_t *r, char *err,
                          size_t errlen)
{
    rbd_keys_t keys = { NULL, 0 };
    size_t i = from;
    char why[512];
    int rc = 0;

    r->applied = i;
    while (i < m->len && rc == 0) {
        rbd_rec_t rec;
        if (!record_at(m, i, &rec)) {
            rc = replay_end(cfg, path, m, i, r, err, errlen);
            break;
        }
        if ((rec.type == RBD_OP_TXN
                 ? replay_txn(st, rec.payload, rec.plen, &keys, why, sizeof(why))
                 : replay_record(st, rec.type, rec.payload, rec.plen, &keys, why,
                                 sizeof(why))) != 0) {
            snprintf(err, errlen, "log %s is corrupt at offset %zu: %s", path, i, why);
            rc = -1;
            break;
        }
        r->records++;
        i += rec.size;
        r->applied = i;
    }
    free(keys.v);
    return rc;
}

/* The log is not the one snap names: the one it superseded, replayed
 * from snap->prev_from on or skipped (r->skipped), or -1 with err. */
static int other_log(const rbd_config_t *cfg, rbd_state_t *st, const char *path,
                     const log_bytes_t *m, const rbd_snap_t *snap, int v1, rbd_replay_t *r,
                     char *err, size_t errlen)
{
    char prev[64];

    if (snap->prev_log != 0 && r->log_id == snap->prev_log && snap->prev_from != 0) {
        /* P5: the snapshot was installed and the daemon died before the
         * log it names was; this one holds the changes made while the
         * snapshot was written, from prev_from on (snapshot.c, P4). */
        if (snap->prev_from < RBD_LOG_HDR || snap->prev_from > m->len) {
            snprintf(err, errlen, "log %s (id %016llx, %zu bytes) does not reach offset %llu, "
                     "from which snapshot %s says it continues it", path,
                     (unsigned long long)r->log_id, m->len,
                     (unsigned long long)snap->prev_from, snap->path);
            return -1;
        }
        rbd_log(LOG_INFO, "log %s (id %016llx) was superseded by snapshot %s while the daemon "
                "wrote it (it stopped between installing the two): replaying it from offset "
                "%llu, the changes made meanwhile", path, (unsigned long long)r->log_id,
                snap->path, (unsigned long long)snap->prev_from);
        return replay_records(cfg, st, path, m, (size_t)snap->prev_from, r, err, errlen);
    }
    if (snap->prev_log != 0 && r->log_id == snap->prev_log) {
        /* P5: the snapshot was installed and the daemon died before the
         * log it names was; every change of this one is in the snapshot
         * (P3, P4). */
        rbd_log(LOG_INFO, "log %s (id %016llx) predates the snapshot: snapshot %s superseded "
                "it (the daemon stopped between installing the two), already contained, "
                "skipped", path, (unsigned long long)r->log_id, snap->path);
        r->skipped = RBD_LOG_SUPERSEDED;
        return 0;
    }
    if (snap->version == 1 && v1) {
        /* Format 1 said nothing of the log a snapshot superseded, so the
         * crash window above looks like any other id mismatch: skipped as
         * the old daemon did, and the caller keeps a copy. */
        r->skipped = RBD_LOG_UNVERIFIED;
        return 0;
    }
    if (snap->prev_log != 0)
        snprintf(prev, sizeof(prev), "superseded log %016llx",
                 (unsigned long long)snap->prev_log);
    else
        snprintf(prev, sizeof(prev), "superseded %s", snap->version == 1
                 ? "a log its format (1) does not name" : "no log");
    snprintf(err, errlen, "log %s does not fit snapshot %s: the log's id is %016llx; the "
             "snapshot is continued by log %016llx and %s", path, snap->path,
             (unsigned long long)r->log_id, (unsigned long long)snap->next_log, prev);
    return -1;
}

int rbd_replay_log(const rbd_config_t *cfg, rbd_state_t *st, const char *path, const void *data,
                   size_t len, const rbd_snap_t *snap, rbd_replay_t *r, char *err,
                   size_t errlen)
{
    const log_bytes_t m = { data, len };
    int v1;

    memset(r, 0, sizeof(*r));
    if (rbd_aof_header(m.data, m.len, path, &r->log_id, &v1, err, errlen) != 0)
        return -1;
    if (!snap->present) {
        snprintf(err, errlen, "log %s (id %016llx) continues a snapshot, but there is no "
                 "snapshot %s", path, (unsigned long long)r->log_id, snap->path);
        return -1;
    }
    if (v1)
        rbd_log(LOG_WARNING, "log %s is in the old format (%s: no header checksum); the "
                "start-up snapshot replaces it with %s", path, RBD_LOG_MAGIC_V1, RBD_LOG_MAGIC);
    if (r->log_id == snap->next_log)
        return replay_records(cfg, st, path, &m, RBD_LOG_HDR, r, err, errlen);
    return other_log(cfg, st, path, &m, snap, v1, r, err, errlen);
}
