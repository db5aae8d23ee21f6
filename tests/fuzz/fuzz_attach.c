/*
 * fuzz_attach.c - libFuzzer target: a segment's bytes are untrusted to the
 * processes that map them.  The input becomes a real POSIX shm object
 * (/dev/shm/ringbloom.fuzz-attach.<pid>), which is then
 *   1. attached read-only (rb_segment_attach, the readers' path) and read
 *      with every reader function: ring lookup / lookup_n / stat / nodes /
 *      load, segment info / check, Bloom list / open / contains /
 *      contains_many / info / stat;
 *   2. taken over (rb_segment_open_writer, a restarted daemon's first step
 *      on a segment it finds) and, if that validates, written as the
 *      daemon would: the ring re-published with one more node, a few keys
 *      added to every filter, aging filters rotated, filters reset; then
 *      read again by the reader of step 1.
 * "docs/design.md, Rules that hold everywhere": readers bounds-check every
 * offset and count read from shared memory, so garbage may give errors but
 * never a fault, an out-of-bounds read, a hang or a leak.  And a takeover
 * that validated leaves, after its writes, a segment whose dump restores
 * (what the daemon's next snapshot holds must load on its next start).
 *
 * The object is the input followed by zeros up to the header's size field
 * when that is at most 4 MiB (so a trimmed dump - see make-corpus.sh -
 * is a whole segment again and seeds stay small); it is unlinked after
 * every input (run.sh also removes it if the target dies).
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ringbloom.h"
#define FUZZ_TARGET "fuzz_attach"
#include "fuzz.h"

#define MAX_OBJECT (4u << 20)

static const char *const keys[] = { "", "a", "key:1", "http://example.com/", "n0", "n1#7" };
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* A code of the library's (rb_strerror names every one); not a bound on
 * the codes, which grow. */
static int is_error(int rc)
{
    return rc < 0 && strcmp(rb_strerror(rc), rb_strerror(INT_MIN)) != 0;
}

/* Every reader call, on whatever the segment holds. */
static void read_all(const rb_segment_t *seg)
{
    rb_node_t nodes[4];
    rb_ring_stat_t st;
    rb_segment_info_t si;
    rb_ring_t *ring = NULL;
    names_t nm;
    size_t count;
    int rc;

    for (size_t i = 0; i < NKEYS; i++) {
        rc = rb_ring_lookup(seg, keys[i], strlen(keys[i]), &nodes[0]);
        CHECK(rc == RB_OK || is_error(rc));
        if (rc == RB_OK)
            CHECK(nodes[0].name_len >= 1 && nodes[0].name_len <= RB_NODE_NAME_MAX &&
                  nodes[0].name[nodes[0].name_len] == '\0');
        rc = rb_ring_lookup_n(seg, keys[i], strlen(keys[i]), nodes, 4);
        CHECK((rc >= 1 && rc <= 4) || is_error(rc));
    }
    rc = rb_ring_stat(seg, &st);
    CHECK(rc == RB_OK || is_error(rc));
    rc = rb_ring_nodes(seg, nodes, 4, &count);
    CHECK(rc == RB_OK || is_error(rc));
    rc = rb_ring_load(seg, &ring);
    CHECK(rc == RB_OK || is_error(rc));
    rb_ring_free(ring);
    CHECK(rb_segment_info(seg, &si) == RB_OK);
    rc = rb_segment_check(seg);
    CHECK(rc == RB_OK || is_error(rc));

    memset(&nm, 0, sizeof(nm));
    rc = rb_bloom_list(seg, collect, &nm);
    CHECK(rc == RB_OK);
    for (size_t f = 0; f < nm.n; f++) {
        rb_key_t many[40];
        uint8_t out[40];
        rb_bloom_stat_t bs;
        rb_bloom_t *bf;
        int64_t hits;
        rc = rb_bloom_open(seg, nm.name[f], nm.len[f], &bf);
        CHECK(rc == RB_OK || is_error(rc));
        if (rc != RB_OK)
            continue;
        for (size_t i = 0; i < NKEYS; i++) {
            rc = rb_bloom_contains(bf, keys[i], strlen(keys[i]));
            CHECK(rc == 0 || rc == 1 || is_error(rc));
        }
        /* More keys than the prefetch pipeline is deep. */
        for (size_t i = 0; i < 40; i++) {
            many[i].ptr = keys[i % NKEYS];
            many[i].len = strlen(keys[i % NKEYS]);
        }
        hits = rb_bloom_contains_many(bf, many, 40, out);
        CHECK((hits >= 0 && hits <= 40) || is_error((int)hits));
        rc = rb_bloom_info(bf, &bs);
        CHECK(rc == RB_OK || is_error(rc));
        rc = rb_bloom_stat(bf, &bs);
        CHECK(rc == RB_OK || is_error(rc));
        rb_bloom_close(bf);
    }
}

/* A restarted daemon's writes on a segment it took over. */
static void write_all(const char *instance)
{
    rb_segment_t *w, *again;
    rb_ring_t *ring = NULL;
    dump_buf_t dump = { NULL, 0 };
    names_t nm;
    int rc;

    rc = rb_segment_open_writer(instance, &w);
    CHECK(rc == RB_OK || is_error(rc));
    if (rc != RB_OK)
        return;
    if (rb_ring_load(w, &ring) == RB_OK) {
        rc = rb_ring_add(ring, "fuzz-node", 9, 1);
        CHECK(rc == RB_OK || is_error(rc));
        rc = rb_ring_publish(ring, w);
        CHECK(rc == RB_OK || is_error(rc));
        rb_ring_free(ring);
    }
    memset(&nm, 0, sizeof(nm));
    CHECK(rb_bloom_list(w, collect, &nm) == RB_OK);
    for (size_t f = 0; f < nm.n; f++) {
        rb_bloom_t *bf;
        if (rb_bloom_open(w, nm.name[f], nm.len[f], &bf) != RB_OK)
            continue;
        for (size_t i = 0; i < NKEYS; i++) {
            rc = rb_bloom_add(bf, keys[i], strlen(keys[i]));
            CHECK(rc == 0 || rc == 1 || is_error(rc));
        }
        rc = rb_bloom_rotate(bf);
        CHECK(rc == RB_OK || is_error(rc));
        rc = rb_bloom_rotate_due(bf, UINT64_MAX / 2);
        CHECK(rc == 0 || rc == 1 || is_error(rc));
        rc = rb_bloom_reset(bf);
        CHECK(rc == RB_OK || is_error(rc));
        rc = rb_bloom_add(bf, "after-reset", 11);
        CHECK(rc == 0 || rc == 1 || is_error(rc));
        rb_bloom_close(bf);
    }
    /* What this writer would snapshot must restore. */
    CHECK(rb_segment_dump(w, dump_copy, &dump) == RB_OK);
    rc = rb_segment_restore(NULL, NULL, dump.data, dump.len, &again);
    if (rc != RB_OK)
        fprintf(stderr, "fuzz_attach: the dump after a takeover does not restore: %s\n",
                rb_strerror(rc));
    CHECK(rc == RB_OK);
    rb_segment_close(again);
    free(dump.data);
    rb_segment_close(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char instance[RB_INSTANCE_MAX + 1], shm[RB_INSTANCE_MAX + 16];
    rb_segment_t *r = NULL;
    uint64_t want = size;
    int fd, rc;

    if (instance[0] == '\0') {
        snprintf(instance, sizeof(instance), "fuzz-attach.%ld", (long)getpid());
        snprintf(shm, sizeof(shm), "/ringbloom.%s", instance);
    }
    if (size >= 56) {
        uint64_t committed;
        memcpy(&committed, data + 48, 8);
        if (committed > want && committed <= MAX_OBJECT)
            want = committed;
    }
    fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK(ftruncate(fd, (off_t)want) == 0);
    CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size);
    close(fd);

    rc = rb_segment_attach(instance, RB_ATTACH_STALE_OK, &r);
    CHECK(rc == RB_OK || is_error(rc));
    if (rc == RB_OK) {
        read_all(r);
        write_all(instance);
        read_all(r);
        rb_segment_close(r);
    }
    CHECK(shm_unlink(shm) == 0);
    return 0;
}
