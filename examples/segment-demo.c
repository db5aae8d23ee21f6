/*
 * segment-demo.c - the library end to end, without the daemon.
 *
 * The writer (this process) creates a segment for a private instance,
 * publishes a 4-node ring and a Bloom filter of seen URLs, then starts a
 * second process (this program again, with --reader) that attaches
 * read-only and answers lookups and membership queries from shared memory.
 * The writer then adds a fifth node and the reader shows which keys moved.
 *
 *   usage: segment-demo                 run the whole demo
 *          segment-demo --reader NAME   the reader half (started by the demo)
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringbloom.h"

extern char **environ;

static const char *const urls[] = {
    "https://example.org/", "https://example.org/about",
    "https://example.org/blog/2026/11/consistent-hashing",
    "https://example.org/blog/2026/12/bloom-filters",
    "https://example.com/cart?id=42", "https://example.net/search?q=ring",
};
#define NURLS (sizeof(urls) / sizeof(urls[0]))

static int die(const char *what, int rc)
{
    fprintf(stderr, "demo: %s: %s\n", what, rb_strerror(rc));
    return 1;
}

static int reader(const char *instance)
{
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_node_t node, prefs[3];
    rb_ring_stat_t st;
    int rc;

    /* The writer is the demo that started this reader, so the segment is
     * this user's: pinning that keeps out an object another user might
     * have put under the name (docs/design.md, "Security review"). */
    if ((rc = rb_segment_attach_owned(instance, 0, geteuid(), &seg)) != RB_OK)
        return die("attach", rc);
    if ((rc = rb_ring_stat(seg, &st)) != RB_OK)
        return die("ring stat", rc);
    printf("reader pid %d attached read-only: ring v%llu, %u nodes, %u points\n",
           (int)getpid(), (unsigned long long)st.version, st.nodes, st.points);
    for (size_t i = 0; i < NURLS; i++) {
        if ((rc = rb_ring_lookup(seg, urls[i], strlen(urls[i]), &node)) != RB_OK)
            return die("lookup", rc);
        rc = rb_ring_lookup_n(seg, urls[i], strlen(urls[i]), prefs, 3);
        if (rc < 0)
            return die("lookup_n", rc);
        printf("  %-52s -> %-14s replicas:", urls[i], node.name);
        for (int j = 0; j < rc; j++)
            printf(" %s", prefs[j].name);
        printf("\n");
    }
    if ((rc = rb_bloom_open(seg, "seen", 4, &bf)) != RB_OK)
        return die("bloom open", rc);
    for (size_t i = 0; i < NURLS; i++) {
        rc = rb_bloom_contains(bf, urls[i], strlen(urls[i]));
        if (rc < 0)
            return die("contains", rc);
        printf("  seen? %-52s %s\n", urls[i], rc ? "maybe (added before)" : "no");
    }
    rb_bloom_close(bf);
    rb_segment_close(seg);
    return 0;
}

static int run_reader(const char *self, const char *instance)
{
    char *argv[] = { (char *)self, (char *)"--reader", (char *)instance, NULL };
    pid_t pid;
    int status;

    fflush(stdout);
    if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) {
        perror("demo: posix_spawn");
        return 1;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "demo: reader failed\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *nodes[] = { "cache-a.example:11211", "cache-b.example:11211",
                            "cache-c.example:11211", "cache-d.example:11211" };
    rb_bloom_params_t bp = { .capacity = 1000000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    char instance[64], self[4096];
    rb_segment_t *seg;
    rb_ring_t *ring;
    rb_bloom_t *bf;
    ssize_t n;
    int rc, fail = 0;

    if (argc == 3 && strcmp(argv[1], "--reader") == 0)
        return reader(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: segment-demo\n");
        return 2;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        perror("demo: readlink /proc/self/exe");
        return 1;
    }
    self[n] = '\0';
    snprintf(instance, sizeof(instance), "demo-%d", (int)getpid());

    if ((rc = rb_segment_create(instance, NULL, &seg)) != RB_OK)
        return die("create segment", rc);
    printf("writer pid %d created /dev/shm/ringbloom.%s\n", (int)getpid(), instance);
    if ((rc = rb_ring_new(RB_RING_XXH3, 160, &ring)) != RB_OK) {
        fail = die("ring", rc);
        goto out;
    }
    for (int i = 0; i < 4 && rc == RB_OK; i++)
        rc = rb_ring_add(ring, nodes[i], strlen(nodes[i]), i == 3 ? 2 : 1);
    if (rc == RB_OK)
        rc = rb_ring_publish(ring, seg);
    if (rc == RB_OK)
        rc = rb_bloom_reserve(seg, "seen", 4, &bp);
    if (rc == RB_OK)
        rc = rb_bloom_open(seg, "seen", 4, &bf);
    if (rc != RB_OK) {
        fail = die("publish", rc);
        goto out_ring;
    }
    for (size_t i = 0; i < NURLS; i += 2)
        if ((rc = rb_bloom_add(bf, urls[i], strlen(urls[i]))) < 0)
            fail = die("add", rc);
    rb_bloom_close(bf);
    printf("published 4 nodes (cache-d weight 2) and filter 'seen' with %zu URLs\n",
           (NURLS + 1) / 2);
    fail |= run_reader(self, instance);

    rc = rb_ring_add(ring, "cache-e.example:11211", 21, 1);
    if (rc == RB_OK)
        rc = rb_ring_publish(ring, seg);
    if (rc != RB_OK) {
        fail = die("add node", rc);
        goto out_ring;
    }
    printf("writer added cache-e.example:11211; the same reader code now sees:\n");
    fail |= run_reader(self, instance);

out_ring:
    rb_ring_free(ring);
out:
    rb_segment_close(seg);
    rc = rb_segment_unlink(instance);
    if (rc != RB_OK)
        fail = die("unlink", rc);
    return fail;
}
