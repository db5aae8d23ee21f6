/*
 * filter_source_check.c - `filter-source nats`: what crosses from NATS
 * into this host, checked where it arrives (docs/design.md, "Beyond one
 * host: filters from NATS JetStream", "What crosses the boundary").
 * Anyone who may publish on the stream's subjects can put any bytes and
 * headers there, and a server cut off from its peers answers for
 * itself: neither is trusted for more than it can show.
 *
 * A message's records (and a snapshot's part's) are applied only if
 * every one is whole, of a type the message may carry, names a filter
 * inside this host's nats-filters, and reserves no more than this host's
 * max-command-bytes (a message's reserves together too: the writer cuts
 * its messages so): what a local command of the same name could do, no
 * more.  A stream's identity and the nats-filters it replicates are read
 * from its description (written when it is made: a random id, so a
 * stream deleted and made again is another, whatever the clocks say),
 * and only from an answer a quorum stands behind: a leader and a
 * majority of the stream's peers current.  A lone server answers stream
 * info with no leader and its own view (check_nats, "f"); its creation
 * time, which a stream made before descriptions is known by, can differ
 * from the leader's.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "filter_source_impl.h"
#include "record.h"

#define DESC_PREFIX "ringbloom id="
#define DESC_FILTERS " nats-filters="

/* The types a message (part 0) or a snapshot's part (1) may carry. */
static int allowed(unsigned type, int part)
{
    if (part)
        return type == RBD_OP_BF_LOADCHUNK;
    return type == RBD_OP_BF_RESERVE || type == RBD_OP_BF_ADD || type == RBD_OP_REPL_SKIP;
}

/* One decoded record's check (k: its place, for messages). */
static int check_op(const rbd_fsource_t *s, const rbd_op_t *op, size_t k, uint64_t max_bytes,
                    uint64_t *reserved, char *why, size_t cap)
{
    uint64_t bytes;

    if (rbd_op_names_filter(op->type) && !rbd_fsource_matches(s->glob, op->name, op->len)) {
        snprintf(why, cap, "record %zu (%s of '%.*s') names a filter outside nats-filters "
                 "'%.64s'", k, rbd_op_name(op->type), (int)(op->len > 64 ? 64 : op->len),
                 op->name != NULL ? op->name : "", s->glob);
        return FS_CHECK_OUTSIDE;
    }
    if (op->type != RBD_OP_BF_RESERVE || max_bytes == 0)
        return FS_CHECK_OK;
    bytes = rbd_bf_reserve_bytes(&op->params);
    *reserved = bytes > UINT64_MAX - *reserved ? UINT64_MAX : *reserved + bytes;
    if (*reserved <= max_bytes)
        return FS_CHECK_OK;
    snprintf(why, cap, "record %zu (BF.RESERVE of '%.*s') would make %" PRIu64 " bytes (the "
             "message's reserves %" PRIu64 "), more than this host's max-command-bytes (%"
             PRIu64 ")", k, (int)(op->len > 64 ? 64 : op->len), op->name, bytes, *reserved,
             max_bytes);
    return FS_CHECK_LIMIT;
}

int rbd_fsource_check_records(const rbd_fsource_t *s, const unsigned char *data, size_t len,
                              int part, uint64_t max_bytes, rbd_keys_t *scratch, char *why,
                              size_t cap)
{
    rbd_rec_walk_t w;
    rbd_rec_t rec;
    rbd_rec_why_t bad = RBD_REC_OK;
    uint64_t reserved = 0;
    size_t k = 0;
    int rc;

    why[0] = '\0';
    rbd_rec_walk_init(&w, data, len);
    while ((rc = rbd_rec_next(&w, &rec, &bad)) == 1) {
        rbd_op_t op;
        int dec, got;

        if (!allowed(rec.type, part)) {
            snprintf(why, cap, "record %zu (%u, %s) is not a replicated op", k, rec.type,
                     rbd_op_name(rec.type) ? rbd_op_name(rec.type) : "unknown");
            return FS_CHECK_BAD;
        }
        if ((dec = rbd_op_decode(rec.type, rec.payload, rec.plen, &op, scratch)) != RB_OK) {
            snprintf(why, cap, "record %zu (%s) cannot be decoded: %s", k,
                     rbd_op_name(rec.type), rb_strerror(dec));
            return FS_CHECK_BAD;
        }
        if ((got = check_op(s, &op, k, max_bytes, &reserved, why, cap)) != FS_CHECK_OK)
            return got;
        k++;
    }
    if (rc < 0) {
        snprintf(why, cap, "damaged record at byte %zu: %s", w.at, rbd_rec_why_text(bad));
        return FS_CHECK_BAD;
    }
    return FS_CHECK_OK;
}

int rbd_fsource_is_skip(const unsigned char *data, size_t len, uint64_t seq, uint64_t stream_id)
{
    rbd_rec_walk_t w;
    rbd_rec_t rec;
    rbd_keys_t none = { 0 };
    int found = 0;

    rbd_rec_walk_init(&w, data, len);
    while (!found && rbd_rec_next(&w, &rec, NULL) == 1) {
        rbd_op_t op;

        found = rec.type == RBD_OP_REPL_SKIP &&
                rbd_op_decode(rec.type, rec.payload, rec.plen, &op, &none) == RB_OK &&
                op.repl.seq == seq && op.repl.stream == stream_id;
    }
    free(none.v);
    return found;
}

void rbd_fsource_describe(char *out, size_t cap, uint64_t id, const char *glob)
{
    snprintf(out, cap, DESC_PREFIX "%016" PRIx64 DESC_FILTERS "%s", id, glob);
}

/* Whether a quorum stands behind si: a server alone (no cluster), or a
 * leader with a majority of the stream's peers (itself included)
 * current; else why not. */
static int quorum(const jsStreamInfo *si, char *why, size_t cap)
{
    const jsClusterInfo *ci = si->Cluster;
    int current = 1, peers;

    if (ci == NULL)
        return 1;
    peers = 1 + ci->ReplicasLen;
    for (int i = 0; i < ci->ReplicasLen; i++)
        current += ci->Replicas[i] != NULL && ci->Replicas[i]->Current &&
                   !ci->Replicas[i]->Offline;
    if (ci->Leader != NULL && ci->Leader[0] != '\0' && 2 * current > peers)
        return 1;
    snprintf(why, cap, "its answer came from a server without quorum (leader %s, %d of %d "
             "peers current): waiting for one that has it", ci->Leader != NULL &&
             ci->Leader[0] != '\0' ? ci->Leader : "none", current - 1, peers - 1);
    return 0;
}

int rbd_fsource_ident(const jsStreamInfo *si, const char *name, fs_ident_t *id, char *why,
                      size_t cap)
{
    const char *d = si->Config != NULL ? si->Config->Description : NULL;
    const char *f;
    char *end;

    memset(id, 0, sizeof(*id));
    if (!quorum(si, why, cap))
        return -1;
    if (d == NULL || d[0] == '\0') {   /* made before descriptions */
        id->id = XXH3_64bits_withSeed(name, strlen(name), (uint64_t)si->Created);
        return 0;
    }
    f = strstr(d, DESC_FILTERS);
    if (strncmp(d, DESC_PREFIX, strlen(DESC_PREFIX)) != 0 || f == NULL ||
        (id->id = strtoull(d + strlen(DESC_PREFIX), &end, 16)) == 0 || end != f ||
        strlen(f + strlen(DESC_FILTERS)) >= sizeof(id->filters)) {
        snprintf(why, cap, "its description is not ringbloom's ('%.200s')", d);
        return -2;
    }
    id->described = 1;
    snprintf(id->filters, sizeof(id->filters), "%s", f + strlen(DESC_FILTERS));
    return 0;
}
