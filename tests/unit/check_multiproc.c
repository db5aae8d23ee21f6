/*
 * check_multiproc.c - readers in other processes while the writer works.
 *
 * The ring test republishes 10,000 times, alternating between two
 * memberships whose answers for a fixed key set are precomputed in private
 * segments; a forked reader attached read-only checks every answer is one of
 * the two.  The Bloom test checks acknowledged adds are visible to a reader
 * at once.  The crash test SIGKILLs a writer in the middle of publishing a
 * large ring and checks readers keep valid answers through it and through
 * the next writer's publishes.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "rb_test.h"

#define NKEYS 2000
#define PUBLISHES 10000

typedef struct shared_box {
    _Atomic int phase;            /* 0 starting, 1 reader ready, 2 running, 3 done */
    _Atomic uint64_t progress;    /* bloom: keys acknowledged so far */
    uint64_t lookups, during, invalid, errors, saw_a, saw_b, max_retries;
    char a[NKEYS][32], b[NKEYS][32];
} shared_box_t;

static shared_box_t *box;
static char inst[96];

static void setup(void)
{
    box = mmap(NULL, sizeof(*box), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(box != MAP_FAILED);
    rb_test_instance(inst, sizeof(inst));
}

static void teardown(void)
{
    munmap(box, sizeof(*box));
    rb_segment_unlink(inst);
}

static void key_of(char *buf, size_t cap, int i)
{
    rb_test_key(buf, cap, "mp", (unsigned long)i);
}

static rb_ring_t *membership(int which, int nodes, uint32_t replicas)
{
    rb_ring_t *r;
    char name[32];

    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, replicas, &r), RB_OK);
    for (int i = 0; i < nodes; i++) {
        snprintf(name, sizeof(name), "node-%04d", i);
        ck_assert_int_eq(rb_ring_add(r, name, strlen(name), 1), RB_OK);
    }
    if (which == 1) {
        ck_assert_int_eq(rb_ring_add(r, "node-extra", 10, 2), RB_OK);
        ck_assert_int_eq(rb_ring_set_weight(r, "node-0000", 9, 3), RB_OK);
    }
    return r;
}

/* Answers of both memberships into box->a / box->b. */
static void precompute(rb_ring_t *ra, rb_ring_t *rb)
{
    rb_segment_t *pa, *pb;
    rb_node_t n;
    char key[160];

    ck_assert_int_eq(rb_segment_create(NULL, NULL, &pa), RB_OK);
    ck_assert_int_eq(rb_segment_create(NULL, NULL, &pb), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ra, pa), RB_OK);
    ck_assert_int_eq(rb_ring_publish(rb, pb), RB_OK);
    for (int i = 0; i < NKEYS; i++) {
        key_of(key, sizeof(key), i);
        ck_assert_int_eq(rb_ring_lookup(pa, key, strlen(key), &n), RB_OK);
        strcpy(box->a[i], n.name);
        ck_assert_int_eq(rb_ring_lookup(pb, key, strlen(key), &n), RB_OK);
        strcpy(box->b[i], n.name);
    }
    rb_segment_close(pa);
    rb_segment_close(pb);
}

/* Reader process: check answers until phase 3, then one more pass. */
static void reader_main(void)
{
    rb_segment_t *seg;
    rb_node_t n;
    char key[160];
    int last_pass = 0;

    if (rb_segment_attach(inst, RB_ATTACH_STALE_OK, &seg) != RB_OK)
        _exit(10);
    atomic_store(&box->phase, 1);
    while (!last_pass) {
        last_pass = atomic_load(&box->phase) == 3;
        for (int i = 0; i < NKEYS; i++) {
            int running = atomic_load(&box->phase) == 2, rc;
            key_of(key, sizeof(key), i);
            rc = rb_ring_lookup(seg, key, strlen(key), &n);
            box->lookups++;
            box->during += running;
            if (rbi_ring_last_retries > box->max_retries)
                box->max_retries = rbi_ring_last_retries;
            if (rc != RB_OK) {
                box->errors++;
                continue;
            }
            if (strcmp(n.name, box->a[i]) == 0)
                box->saw_a += strcmp(box->a[i], box->b[i]) != 0;
            else if (strcmp(n.name, box->b[i]) == 0)
                box->saw_b++;
            else
                box->invalid++;
        }
    }
    rb_segment_close(seg);
    _exit(0);
}

static pid_t start_reader(void)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        reader_main();
    while (atomic_load(&box->phase) < 1)
        usleep(1000);
    return pid;
}

static void wait_ok(pid_t pid)
{
    int status;

    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

START_TEST(test_multiproc_reader_sees_only_published_states)
{
    rb_ring_t *ra = membership(0, 4, 160), *rb = membership(1, 4, 160);
    rb_segment_t *seg;
    pid_t pid;
    int published;

    precompute(ra, rb);
    ck_assert_int_eq(rb_segment_create(inst, NULL, &seg), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ra, seg), RB_OK);
    pid = start_reader();
    atomic_store(&box->phase, 2);
    /* PUBLISHES at least, and on until the reader has seen both states
     * during them (a loaded machine may not run it while a short burst
     * lasts), for at most 60 s. */
    {
        uint64_t t0 = rb_test_now_ms();
        int i = 0;
        for (; i < PUBLISHES || ((__atomic_load_n(&box->saw_a, __ATOMIC_RELAXED) == 0 ||
                                   __atomic_load_n(&box->saw_b, __ATOMIC_RELAXED) == 0) &&
                                  rb_test_now_ms() - t0 < 60000); i++)
            ck_assert_int_eq(rb_ring_publish(i % 2 ? ra : rb, seg), RB_OK);
        published = i;
    }
    atomic_store(&box->phase, 3);
    wait_ok(pid);
    printf("multiproc ring: %d publishes, %lu lookups (%lu during), A-only %lu, B %lu, "
           "invalid %lu, errors %lu, max retries %lu\n", published,
           (unsigned long)box->lookups, (unsigned long)box->during,
           (unsigned long)box->saw_a, (unsigned long)box->saw_b,
           (unsigned long)box->invalid, (unsigned long)box->errors,
           (unsigned long)box->max_retries);
    ck_assert_uint_eq(box->invalid, 0);
    ck_assert_uint_eq(box->errors, 0);
    ck_assert_uint_gt(box->during, 1000);   /* the reader kept answering */
    ck_assert_uint_gt(box->saw_a, 0);
    ck_assert_uint_gt(box->saw_b, 0);
    rb_segment_close(seg);
    rb_ring_free(ra);
    rb_ring_free(rb);
}
END_TEST

/* Reader process for the Bloom test: every key below `progress` must be
 * present. */
static void bloom_reader_main(void)
{
    rb_segment_t *seg;
    rb_bloom_t *bf;
    char key[160];
    uint64_t x = 88172645463325252ULL;

    if (rb_segment_attach(inst, 0, &seg) != RB_OK || rb_bloom_open(seg, "urls", 4, &bf) != RB_OK)
        _exit(10);
    atomic_store(&box->phase, 1);
    while (atomic_load(&box->phase) != 3) {
        uint64_t p = atomic_load_explicit(&box->progress, memory_order_acquire);
        if (p == 0)
            continue;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rb_test_key(key, sizeof(key), "ack", (unsigned long)(x % p));
        box->lookups++;
        if (rb_bloom_contains(bf, key, strlen(key)) != 1)
            box->invalid++;
    }
    rb_bloom_close(bf);
    rb_segment_close(seg);
    _exit(0);
}

START_TEST(test_multiproc_acknowledged_adds_visible_to_reader)
{
    rb_bloom_params_t p = { .capacity = 200000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_segment_t *seg;
    rb_bloom_t *bf;
    char key[160];
    pid_t pid;

    ck_assert_int_eq(rb_segment_create(inst, NULL, &seg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(seg, "urls", 4, &p), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "urls", 4, &bf), RB_OK);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        bloom_reader_main();
    while (atomic_load(&box->phase) < 1)
        usleep(1000);
    for (unsigned long i = 0; i < 200000; i++) {
        ck_assert_int_eq(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "ack", i)) >= 0, 1);
        /* "Acknowledge": publish progress only after the add returned. */
        atomic_store_explicit(&box->progress, i + 1, memory_order_release);
    }
    usleep(20000);
    atomic_store(&box->phase, 3);
    wait_ok(pid);
    printf("multiproc bloom: %lu checks of acknowledged keys, %lu missing\n",
           (unsigned long)box->lookups, (unsigned long)box->invalid);
    ck_assert_uint_eq(box->invalid, 0);
    ck_assert_uint_gt(box->lookups, 1000);
    rb_bloom_close(bf);
    rb_segment_close(seg);
}
END_TEST

/* True if a writer died mid-publish: the inactive copy's header already
 * carries the next version (the header is written first) while the
 * active copy is the last complete one. */
static int died_mid_publish(const rb_segment_t *seg)
{
    const rbi_map_t *m = rbi_seg_map(seg);
    const rb_header_shm_t *h = rbi_hdr(m);
    uint64_t s = rbi_ld(&h->ring.seq);
    const rb_ring_copy_shm_t *act =
        (const rb_ring_copy_shm_t *)(const void *)rbi_word_at(m, rbi_ld(&h->ring.copy_off[s & 1]));
    const rb_ring_copy_shm_t *ina =
        (const rb_ring_copy_shm_t *)(const void *)rbi_word_at(m, rbi_ld(&h->ring.copy_off[(s & 1) ^ 1]));

    return rbi_ld(&ina->version) > rbi_ld(&act->version);
}

/* Writer child: take over the segment and publish A/B until killed. */
static void writer_main(rb_ring_t *ra, rb_ring_t *rb)
{
    rb_segment_t *seg;

    if (rb_segment_open_writer(inst, &seg) != RB_OK)
        _exit(11);
    for (int i = 0;; i++)
        if (rb_ring_publish(i % 2 ? ra : rb, seg) != RB_OK)
            _exit(12);
}

START_TEST(test_multiproc_writer_killed_mid_publish)
{
    rb_ring_t *ra = membership(0, 300, 160), *rb = membership(1, 300, 160);
    unsigned rounds = 12, interrupted = 0;
    rb_segment_t *seg;
    pid_t reader;

    precompute(ra, rb);
    ck_assert_int_eq(rb_segment_create(inst, NULL, &seg), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ra, seg), RB_OK);
    rb_segment_close(seg);
    reader = start_reader();
    atomic_store(&box->phase, 2);
    srand((unsigned)getpid());
    for (unsigned r = 0; r < rounds; r++) {
        pid_t w = fork();
        ck_assert_int_ge(w, 0);
        if (w == 0)
            writer_main(ra, rb);
        usleep(20000 + (useconds_t)(rand() % 30000));
        kill(w, SIGKILL);
        ck_assert_int_eq(waitpid(w, NULL, 0), w);
        ck_assert_int_eq(rb_segment_attach(inst, RB_ATTACH_STALE_OK, &seg), RB_OK);
        interrupted += died_mid_publish(seg);
        rb_segment_close(seg);
        /* Take over (the half-written copy is inactive: nothing to repair),
         * then publish over it: readers must keep seeing A or B. */
        ck_assert_int_eq(rb_segment_open_writer(inst, &seg), RB_OK);
        ck_assert_int_eq(rb_ring_publish(r % 2 ? ra : rb, seg), RB_OK);
        rb_segment_close(seg);
    }
    atomic_store(&box->phase, 3);
    wait_ok(reader);
    printf("multiproc crash: %u writers killed (%u mid-publish), %lu lookups, invalid %lu, "
           "errors %lu, max retries %lu\n", rounds, interrupted, (unsigned long)box->lookups,
           (unsigned long)box->invalid, (unsigned long)box->errors,
           (unsigned long)box->max_retries);
    ck_assert_uint_eq(box->invalid, 0);
    ck_assert_uint_eq(box->errors, 0);
    ck_assert_uint_gt(box->saw_a + box->saw_b, 0);
    ck_assert_uint_gt(interrupted, 0);
    rb_ring_free(ra);
    rb_ring_free(rb);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("multiproc",
                        RB_TCASE("core", 120, setup, teardown,
                                 test_multiproc_reader_sees_only_published_states,
                                 test_multiproc_acknowledged_adds_visible_to_reader,
                                 test_multiproc_writer_killed_mid_publish));
}
