/*
 * check_latch.c - the two read protocols of latch.h under threads.
 *
 * Latch: a writer thread publishes version v by writing v into every word
 * of the inactive copy and flipping the latch; reader threads accept a
 * read only when read_retry says so, and then require every word to equal
 * the version the sequence implies (seq s: version s, in copy s & 1).
 * Generation section: a writer fills a fresh array, points at it, publishes
 * the generation and only then reuses the array it replaced (scribbling
 * over it, as a later allocation would); readers accept an array only when
 * gen_read_retry says so, and then require it whole.  For each, a negative
 * control runs the same checker against a writer that breaks the protocol
 * (rewrites what readers use, without the latch's flip or the generation's
 * publish), to show the checker does catch torn reads.
 */
#include <pthread.h>
#include <time.h>

#include "rb_test.h"

#define WORDS 512
#define READERS 2
#define RUN_NS 600000000LL

typedef struct latch_box {
    _Alignas(64) _Atomic uint64_t seq;
    _Alignas(64) _Atomic uint64_t copy[2][WORDS];
    _Atomic int stop;
    int broken;            /* negative control: write the copy in use */
} latch_box_t;

typedef struct reader_out {
    latch_box_t *box;
    uint64_t accepted, torn, retries, last, backwards;
} reader_out_t;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void fill(_Atomic uint64_t *c, uint64_t v)
{
    for (int i = 0; i < WORDS; i++)
        rbi_st(&c[i], v);
}

static void *writer(void *arg)
{
    latch_box_t *b = arg;

    for (uint64_t v = 1; !atomic_load(&b->stop); v++) {
        if (b->broken) {
            /* Wrong on purpose: rewrites the copy readers are using. */
            uint64_t s = rbi_ld(&b->seq);
            fill(b->copy[s & 1], v);
            atomic_store(&b->seq, s);
        } else {
            uint64_t s = rbi_latch_write_prepare(&b->seq);
            fill(b->copy[(s & 1) ^ 1], s + 1);
            rbi_latch_publish(&b->seq, s);
        }
    }
    return NULL;
}

static void *reader(void *arg)
{
    reader_out_t *o = arg;
    latch_box_t *b = o->box;

    while (!atomic_load(&b->stop)) {
        uint64_t s, want, bad = 0, first;
        s = rbi_latch_read_begin(&b->seq);
        want = s;
        first = rbi_ld(&b->copy[s & 1][0]);
        for (int i = 0; i < WORDS; i++)
            bad |= rbi_ld(&b->copy[s & 1][i]) ^ (b->broken ? first : want);
        if (rbi_latch_read_retry(&b->seq, s)) {
            o->retries++;
            continue;
        }
        o->accepted++;
        if (bad)
            o->torn++;
        if (first < o->last)
            o->backwards++;
        o->last = first;
    }
    return NULL;
}

static void run_box(latch_box_t *b, reader_out_t out[READERS])
{
    pthread_t w, r[READERS];
    int64_t t0 = now_ns();

    ck_assert_int_eq(pthread_create(&w, NULL, writer, b), 0);
    for (int i = 0; i < READERS; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].box = b;
        ck_assert_int_eq(pthread_create(&r[i], NULL, reader, &out[i]), 0);
    }
    while (now_ns() - t0 < RUN_NS)
        usleep(10000);
    atomic_store(&b->stop, 1);
    pthread_join(w, NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
}

START_TEST(test_latch_sequence_parity)
{
    _Atomic uint64_t seq = 0;
    uint64_t s = rbi_latch_write_prepare(&seq);

    ck_assert_uint_eq(s, 0);                 /* readers on copy 0: write copy 1 */
    ck_assert_uint_eq(rbi_latch_read_begin(&seq), 0);
    rbi_latch_publish(&seq, s);
    ck_assert_uint_eq(rbi_latch_read_begin(&seq), 1);   /* readers -> copy 1 */
    ck_assert(!rbi_latch_read_retry(&seq, 1));
    ck_assert(rbi_latch_read_retry(&seq, 0));
    s = rbi_latch_write_prepare(&seq);
    ck_assert_uint_eq((s & 1) ^ 1, 0);       /* next write goes to copy 0 */
}
END_TEST

START_TEST(test_latch_threads_never_accept_torn_reads)
{
    static latch_box_t box;
    reader_out_t out[READERS];
    uint64_t accepted = 0;

    memset(&box, 0, sizeof(box));
    run_box(&box, out);
    for (int i = 0; i < READERS; i++) {
        ck_assert_uint_eq(out[i].torn, 0);
        ck_assert_uint_eq(out[i].backwards, 0);
        accepted += out[i].accepted;
    }
    printf("latch: %lu reads accepted, %lu+%lu retries, 0 torn\n", (unsigned long)accepted,
           (unsigned long)out[0].retries, (unsigned long)out[1].retries);
    ck_assert_uint_gt(accepted, 1000);       /* readers made progress */
    ck_assert_uint_gt(rbi_ld(&box.seq), 100);  /* and so did the writer */
}
END_TEST

START_TEST(test_latch_checker_catches_a_broken_writer)
{
    static latch_box_t box;
    reader_out_t out[READERS];
    uint64_t torn = 0;

    memset(&box, 0, sizeof(box));
    box.broken = 1;
    run_box(&box, out);
    for (int i = 0; i < READERS; i++)
        torn += out[i].torn;
    ck_assert_uint_gt(torn, 0);
}
END_TEST

/* ---- generation section ------------------------------------------------- */

#define ARRAYS 3
#define SCRIBBLE (1ULL << 63)   /* what reuse of a freed array writes */

typedef struct gen_box {
    _Alignas(64) rbi_gen_t gen;
    _Alignas(64) _Atomic uint64_t cur;   /* the array readers use */
    _Alignas(64) _Atomic uint64_t arr[ARRAYS][WORDS];
    _Atomic int stop;
    int broken;            /* negative control: never publishes */
} gen_box_t;

typedef struct gen_out {
    gen_box_t *box;
    uint64_t accepted, torn, retries;
} gen_out_t;

static void *gen_writer(void *arg)
{
    gen_box_t *b = arg;

    for (uint64_t v = 1; !atomic_load(&b->stop); v++) {
        uint64_t old = rbi_ld(&b->cur), fresh = (old + 1) % ARRAYS;
        for (int i = 0; i < WORDS; i++)
            rbi_st(&b->arr[fresh][i], v);
        rbi_st(&b->cur, fresh);
        if (!b->broken)   /* wrong on purpose: reuse without publishing */
            rbi_gen_publish(&b->gen);
        for (int i = 0; i < WORDS; i++)
            rbi_st(&b->arr[old][i], SCRIBBLE | v);
    }
    return NULL;
}

static void *gen_reader(void *arg)
{
    gen_out_t *o = arg;
    gen_box_t *b = o->box;

    while (!atomic_load(&b->stop)) {
        uint64_t g = rbi_gen_read_begin(&b->gen), c = rbi_ld(&b->cur) % ARRAYS, first, bad;
        first = rbi_ld(&b->arr[c][0]);
        bad = first & SCRIBBLE;
        for (int i = 1; i < WORDS; i++)
            bad |= rbi_ld(&b->arr[c][i]) ^ first;
        if (rbi_gen_read_retry(&b->gen, g)) {
            o->retries++;
            continue;
        }
        o->accepted++;
        o->torn += bad != 0;
    }
    return NULL;
}

static void run_gen_box(gen_box_t *b, gen_out_t out[READERS])
{
    pthread_t w, r[READERS];
    int64_t t0 = now_ns();

    ck_assert_int_eq(pthread_create(&w, NULL, gen_writer, b), 0);
    for (int i = 0; i < READERS; i++) {
        memset(&out[i], 0, sizeof(out[i]));
        out[i].box = b;
        ck_assert_int_eq(pthread_create(&r[i], NULL, gen_reader, &out[i]), 0);
    }
    while (now_ns() - t0 < RUN_NS)
        usleep(10000);
    atomic_store(&b->stop, 1);
    pthread_join(w, NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
}

START_TEST(test_gen_publish_moves_readers_on)
{
    rbi_gen_t gen;
    uint64_t g;

    rbi_gen_init(&gen);
    g = rbi_gen_read_begin(&gen);
    ck_assert_uint_eq(g, 0);
    ck_assert(!rbi_gen_read_retry(&gen, g));
    rbi_gen_publish(&gen);
    ck_assert(rbi_gen_read_retry(&gen, g));   /* a section from before retries */
    ck_assert_uint_eq(rbi_gen_read_begin(&gen), 1);
}
END_TEST

START_TEST(test_gen_threads_never_accept_torn_reads)
{
    static gen_box_t box;
    gen_out_t out[READERS];
    uint64_t accepted = 0;

    memset(&box, 0, sizeof(box));
    run_gen_box(&box, out);
    for (int i = 0; i < READERS; i++) {
        ck_assert_uint_eq(out[i].torn, 0);
        accepted += out[i].accepted;
    }
    printf("gen section: %lu reads accepted, %lu+%lu retries, 0 torn\n",
           (unsigned long)accepted, (unsigned long)out[0].retries,
           (unsigned long)out[1].retries);
    ck_assert_uint_gt(accepted, 1000);
    ck_assert_uint_gt(rbi_gen_read_begin(&box.gen), 100);
}
END_TEST

START_TEST(test_gen_checker_catches_a_broken_writer)
{
    static gen_box_t box;
    gen_out_t out[READERS];
    uint64_t torn = 0;

    memset(&box, 0, sizeof(box));
    box.broken = 1;
    run_gen_box(&box, out);
    for (int i = 0; i < READERS; i++)
        torn += out[i].torn;
    ck_assert_uint_gt(torn, 0);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("latch",
                        RB_TCASE("latch", 30, NULL, NULL, test_latch_sequence_parity,
                                 test_latch_threads_never_accept_torn_reads,
                                 test_latch_checker_catches_a_broken_writer),
                        RB_TCASE("generation", 30, NULL, NULL, test_gen_publish_moves_readers_on,
                                 test_gen_threads_never_accept_torn_reads,
                                 test_gen_checker_catches_a_broken_writer));
}
