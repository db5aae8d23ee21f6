/*
 * check_release.c - freed memory goes back to the system under readers:
 * ringbloomd creates, fills and deletes a ~32 MB filter A over and over
 * (once with a background snapshot in the middle of the delete) while a
 * reader PROCESS, attached throughout, checks filter B of the same
 * segment: every key added to B answers 1, keys never added answer 1 no
 * more often than B's error rate allows, and no call fails (the reader of
 * a punched page reads zeros, which R1 makes it discard).  Afterwards the
 * object's allocated bytes come back within a bound of the live data
 * within seconds, and INFO's memory figures agree with each other
 * (used_memory <= ringbloom_segment_bytes, mem_fragmentation_ratio =
 * used_memory_rss / used_memory).  A daemon killed while a release is
 * pending restarts, on its segment or cold, with every key and gives the
 * pages back.
 *
 * RB_STRESS_SECONDS (default 20) scales the churn's length.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "rbd_test.h"
#include "stress.h"

#define B_KEYS   20000         /* keys of B, every one must answer 1 */
#define B_RATE   "0.01"
#define A_CAP    "27000000"    /* ~32 MB of bits at 0.01 */
#define A_KEYS   40000         /* keys added to A each round, all over it */
#define A_BATCH  1000
#define SLACK    (6ull << 20)  /* resident past the live data: partial pages,
                                  the log's pages are not in the object */

/* What the reader shares with the test (an anonymous shared map). */
typedef struct rel_shared {
    _Atomic int stop, go;
    uint64_t checked, errors, wrong, absent_checked, absent_hits, rounds;
    uint64_t gen_first, gen_last;   /* the reader's segment generation */
    char first_bad[128];
} rel_shared_t;

static size_t b_key(char *buf, size_t cap, char tag, unsigned long i)
{
    return (size_t)snprintf(buf, cap, "b%c:%lu", tag, i);
}

static uint64_t generation(const rb_segment_t *seg)
{
    rb_segment_info_t si;

    return rb_segment_info(seg, &si) == RB_OK ? si.generation : 0;
}

/* The reader: B's present keys (one by one and in one batch) and as many
 * keys never added, until told to stop. */
static void reader_main(rel_shared_t *sh, const char *inst)
{
    static char kb[B_KEYS][24];
    static rb_key_t keys[B_KEYS];
    static uint8_t out[B_KEYS];
    rb_segment_t *seg;
    rb_bloom_t *bf;
    unsigned long absent = 0;
    char ab[24];

    if (rb_segment_attach(inst, 0, &seg) != RB_OK)
        _exit(10);
    if (rb_bloom_open(seg, "B", 1, &bf) != RB_OK)
        _exit(11);
    for (unsigned long i = 0; i < B_KEYS; i++)
        keys[i] = (rb_key_t){ kb[i], b_key(kb[i], sizeof(kb[i]), 'p', i) };
    sh->gen_first = generation(seg);
    atomic_fetch_add(&sh->go, 1);
    while (!atomic_load(&sh->stop)) {
        int64_t n = rb_bloom_contains_many(bf, keys, B_KEYS, out);
        if (n < 0)
            sh->errors++;
        for (size_t i = 0; i < B_KEYS; i++) {
            int one = rb_bloom_contains(bf, keys[i].ptr, keys[i].len);
            int no = rb_bloom_contains(bf, ab, b_key(ab, sizeof(ab), 'n', absent++));
            if (one < 0 || no < 0) {
                sh->errors++;
            } else if (one != 1 || (n >= 0 && out[i] != 1)) {
                if (sh->wrong++ == 0)
                    snprintf(sh->first_bad, sizeof(sh->first_bad), "%.*s: one %d, many %d",
                             (int)keys[i].len, (const char *)keys[i].ptr, one, out[i]);
            }
            sh->absent_hits += no == 1;
            sh->checked += 2;
            sh->absent_checked++;
        }
        sh->rounds++;
    }
    sh->gen_last = generation(seg);
    rb_bloom_close(bf);
    rb_segment_close(seg);
    _exit(0);
}

/* BF.MADD of n keys b_key(tag, i) from i = first into filter name. */
static void madd(rb_conn_t *c, const char *name, char tag, unsigned long first, size_t n)
{
    static char kb[A_BATCH][24];
    rb_key_t keys[A_BATCH];

    for (size_t done = 0; done < n; done += A_BATCH) {
        size_t m = n - done < A_BATCH ? n - done : A_BATCH;
        for (size_t i = 0; i < m; i++)
            keys[i] = (rb_key_t){ kb[i], b_key(kb[i], sizeof(kb[i]), tag, first + done + i) };
        ck_assert_int_ge(rb_conn_bf_add_many(c, name, strlen(name), keys, m, NULL), 0);
    }
}

/* The object's allocated bytes, as the reader side sees them. */
static uint64_t resident(rb_segment_t *view, uint64_t *used)
{
    rb_segment_memory_t mem;

    ck_assert_int_eq(rb_segment_memory(view, &mem), RB_OK);
    *used = mem.used;
    return mem.resident;
}

/* Waits (<= 15 s) until the object's allocated bytes are within SLACK of
 * the live data and nothing freed waits for a release (the daemon's next
 * second after a snapshot); returns the last resident figure. */
static uint64_t await_released(rb_conn_t *c, rb_segment_t *view, uint64_t *used)
{
    uint64_t r = 0;

    for (int i = 0; i < 150; i++) {
        r = resident(view, used);
        if (r <= *used + SLACK && rbd_info_num(c, "memory", "ringbloom_unreleased_bytes") == 0)
            break;
        usleep(100000);
    }
    return r;
}

START_TEST(test_release_churn_under_a_reader)
{
    double seconds = st_env_num("RB_STRESS_SECONDS", 20) / 4;
    rel_shared_t *sh;
    rbd_proc_t d;
    rb_conn_t *c;
    rb_segment_t *view;
    uint64_t t0, used, peak = 0, r;
    unsigned rounds = 0, deferred = 0;
    pid_t pid;
    int status;
    char cap[32];

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(sh != MAP_FAILED);
    rbd_start(&d, "max-memory 512m\nappendfsync no\n");
    c = rbd_connect(&d);
    snprintf(cap, sizeof(cap), "%d", B_KEYS);
    rbd_expect(c, "OK", "BF.RESERVE", "B", B_RATE, cap);
    madd(c, "B", 'p', 0, B_KEYS);
    view = rbd_attach(&d);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        reader_main(sh, d.inst);
    while (atomic_load(&sh->go) == 0)
        usleep(1000);

    t0 = rb_test_now_ms();
    while (rounds < 3 || (rb_test_now_ms() - t0 < seconds * 1000 && rounds < 40)) {
        rbd_expect(c, "OK", "BF.RESERVE", "A", "0.01", A_CAP);
        madd(c, "A", 'a', (unsigned long)rounds * A_KEYS, A_KEYS);
        r = resident(view, &used);
        peak = r > peak ? r : peak;
        if (rounds % 3 == 2) {
            /* A background snapshot in the middle of the delete: its pages
             * stay until the snapshot is written (S1), then go. */
            rbd_expect(c, "Background saving started", "BGSAVE");
            rbd_expect(c, "1", "DEL", "A");
            if (rbd_info_num(c, "persistence", "rdb_bgsave_in_progress") == 1 &&
                rbd_info_num(c, "memory", "ringbloom_unreleased_bytes") > 16e6)
                deferred++;
            while (rbd_info_num(c, "persistence", "rdb_bgsave_in_progress") == 1)
                usleep(10000);
        } else {
            rbd_expect(c, "1", "DEL", "A");
        }
        rounds++;
    }
    r = await_released(c, view, &used);
    ck_assert_msg(r <= used + SLACK, "resident %llu for %llu live bytes (peak %llu)",
                  (unsigned long long)r, (unsigned long long)used, (unsigned long long)peak);
    ck_assert_uint_gt(peak, 30ull << 20);   /* A did take its pages each time */
    ck_assert_uint_gt(deferred, 0);         /* and a snapshot held them once */
    ck_assert_uint_eq(rbd_info_num(c, "memory", "ringbloom_unreleased_bytes"), 0);

    atomic_store(&sh->stop, 1);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader status %d", status);
    fprintf(stderr, "release: %u rounds (%u with a snapshot), peak %llu, resident %llu for "
            "%llu live; reader: %llu rounds, %llu checks, %llu absent hits of %llu\n",
            rounds, deferred, (unsigned long long)peak, (unsigned long long)r,
            (unsigned long long)used, (unsigned long long)sh->rounds,
            (unsigned long long)sh->checked, (unsigned long long)sh->absent_hits,
            (unsigned long long)sh->absent_checked);
    ck_assert_uint_gt(sh->rounds, 0);
    ck_assert_msg(sh->errors == 0, "%llu reader errors", (unsigned long long)sh->errors);
    ck_assert_msg(sh->wrong == 0, "%llu wrong answers, first %s", (unsigned long long)sh->wrong,
                  sh->first_bad);
    /* B holds B_KEYS at 0.01: three times the rate is far past chance. */
    ck_assert_uint_le(sh->absent_hits * 100, sh->absent_checked * 3);
    rb_segment_close(view);
    rb_conn_close(c);
    rbd_remove_all(&d);
    munmap(sh, sizeof(*sh));
}
END_TEST

/* INFO's memory figures: present and consistent with each other and with
 * the object, Redis's names and formats. */
START_TEST(test_release_info_memory_fields)
{
    rbd_proc_t d;
    rb_conn_t *c;
    rb_segment_t *view;
    rb_segment_memory_t mem;
    double used, rss, seg, ratio, freeb;
    const char *t;
    int rc;

    rbd_start(&d, "max-memory 256m\nappendfsync no\n");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "B", B_RATE, "200000");
    madd(c, "B", 'p', 0, 5000);
    used = rbd_info_num(c, "memory", "used_memory");
    rss = rbd_info_num(c, "memory", "used_memory_rss");
    seg = rbd_info_num(c, "memory", "ringbloom_segment_bytes");
    freeb = rbd_info_num(c, "memory", "ringbloom_free_bytes");
    ratio = rbd_info_num(c, "memory", "mem_fragmentation_ratio");
    ck_assert(used > 200000 / 8);
    ck_assert(used <= seg);
    ck_assert(rss > 0 && rss <= seg);
    ck_assert(freeb == seg - used);
    ck_assert_msg(ratio > rss / used - 0.006 && ratio < rss / used + 0.006,
                  "ratio %.2f, rss / used %.4f", ratio, rss / used);
    view = rbd_attach(&d);
    ck_assert_int_eq(rb_segment_memory(view, &mem), RB_OK);
    ck_assert(mem.used == used && mem.committed == seg);
    t = rbd_cmd(c, &rc, "INFO", "memory", (const char *)NULL);
    ck_assert_ptr_nonnull(strstr(t, "\nused_memory_human:"));
    ck_assert_ptr_nonnull(strstr(t, "\nused_memory_rss_human:"));
    ck_assert_ptr_nonnull(strstr(t, "\nsegment_used_bytes:"));   /* the older fields stay */
    ck_assert_ptr_nonnull(strstr(t, "\nsegment_committed_bytes:"));
    rb_segment_close(view);
    rb_conn_close(c);
    rbd_remove_all(&d);
}
END_TEST

/* Every key of B answers 1 through a fresh reader handle of d's segment,
 * and A is gone. */
static void b_intact(const rbd_proc_t *d)
{
    rb_segment_t *seg = rbd_attach(d);
    rb_bloom_t *bf;
    char key[24];

    ck_assert_int_eq(rb_bloom_open(seg, "A", 1, &bf), RB_ENOENT);
    ck_assert_int_eq(rb_bloom_open(seg, "B", 1, &bf), RB_OK);
    for (unsigned long i = 0; i < B_KEYS; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, key, b_key(key, sizeof(key), 'p', i)), 1);
    rb_bloom_close(bf);
    rb_segment_close(seg);
}

/* The daemon killed while a release is pending (A deleted during a
 * background snapshot): restarted on its live segment (the new writer's
 * first second sweeps the free space it adopted) and restarted cold (from
 * the snapshot and the log), B keeps every key, A stays deleted, and the
 * object's allocated bytes come back to the live data. */
START_TEST(test_release_killed_while_pending)
{
    rbd_proc_t d;
    rb_conn_t *c;
    rb_segment_t *view;
    uint64_t used, r;
    char cap[32];

    rbd_start(&d, "max-memory 512m\nappendfsync always\n");
    for (int path = 0; path < 2; path++) {
        c = rbd_connect(&d);
        if (path == 0) {
            snprintf(cap, sizeof(cap), "%d", B_KEYS);
            rbd_expect(c, "OK", "BF.RESERVE", "B", B_RATE, cap);
            madd(c, "B", 'p', 0, B_KEYS);
        }
        rbd_expect(c, "OK", "BF.RESERVE", "A", "0.01", A_CAP);
        madd(c, "A", 'a', 0, A_KEYS);
        rbd_expect(c, "Background saving started", "BGSAVE");
        rbd_expect(c, "1", "DEL", "A");
        rb_conn_close(c);
        rbd_stop(&d, SIGKILL);
        if (path == 0)
            rbd_launch(&d, NULL);    /* re-attaches the live segment */
        else
            rbd_restart_cold(&d);    /* snapshot + log */
        b_intact(&d);
        c = rbd_connect(&d);
        view = rbd_attach(&d);
        r = await_released(c, view, &used);
        ck_assert_msg(r <= used + SLACK, "path %d: resident %llu for %llu live bytes", path,
                      (unsigned long long)r, (unsigned long long)used);
        rb_segment_close(view);
        rb_conn_close(c);
    }
    rbd_remove_all(&d);
}
END_TEST

/* Whether /dev/shm holds an object whose name starts with the segment's
 * and goes on (a rebuild's second name). */
static int shm_leftover(const rbd_proc_t *d)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "/dev/shm/ringbloom.%s~rebuild", d->inst);
    return stat(path, &st) == 0;
}

/* The segment shrinks to its live data, readers following: with
 * segment-shrink-bytes 16m, each round makes A (~32 MB) past B and
 * deletes it; within seconds the daemon rebuilds the segment without the
 * free tail (INFO segment_shrinks counts it, ringbloom_segment_bytes comes
 * down to the live data), while a reader process attached before the
 * first round checks B throughout: 0 errors, 0 wrong answers, and its
 * handle has moved to a newer generation.  No second object is left in
 * /dev/shm, and what a rebuild killed before its rename leaves (an object
 * under the second name) is removed when the daemon restarts, on its
 * segment or cold. */
START_TEST(test_release_shrink_under_a_reader)
{
    rel_shared_t *sh;
    rbd_proc_t d;
    rb_conn_t *c;
    double used, seg = 0, shrinks = 0;
    pid_t pid;
    int status, fd;
    char cap[32], name[128];

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(sh != MAP_FAILED);
    rbd_start(&d, "max-memory 512m\nappendfsync no\nsegment-shrink-bytes 16m\n");
    c = rbd_connect(&d);
    snprintf(cap, sizeof(cap), "%d", B_KEYS);
    rbd_expect(c, "OK", "BF.RESERVE", "B", B_RATE, cap);
    madd(c, "B", 'p', 0, B_KEYS);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        reader_main(sh, d.inst);
    while (atomic_load(&sh->go) == 0)
        usleep(1000);
    for (int round = 1; round <= 3; round++) {
        uint64_t r0 = sh->rounds;
        rbd_expect(c, "OK", "BF.RESERVE", "A", "0.01", A_CAP);
        madd(c, "A", 'a', (unsigned long)round * A_KEYS, A_KEYS);
        ck_assert(rbd_info_num(c, "memory", "ringbloom_segment_bytes") > 30e6);
        rbd_expect(c, "1", "DEL", "A");
        for (int i = 0; i < 100; i++) {   /* <= 10 s */
            shrinks = rbd_info_num(c, "memory", "segment_shrinks");
            seg = rbd_info_num(c, "memory", "ringbloom_segment_bytes");
            if (shrinks >= round)
                break;
            usleep(100000);
        }
        used = rbd_info_num(c, "memory", "used_memory");
        ck_assert_msg(shrinks == round, "round %d: %.0f shrinks", round, shrinks);
        ck_assert_msg(seg <= used + (1u << 20), "round %d: segment %.0f bytes for %.0f live",
                      round, seg, used);
        ck_assert(!shm_leftover(&d));
        while (sh->rounds < r0 + 2)   /* the reader went on across it */
            usleep(1000);
    }
    ck_assert(rbd_info_num(c, "memory", "segment_shrunk_bytes") > 3 * 28e6);
    atomic_store(&sh->stop, 1);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader status %d", status);
    ck_assert_msg(sh->errors == 0, "%llu reader errors", (unsigned long long)sh->errors);
    ck_assert_msg(sh->wrong == 0, "%llu wrong answers, first %s", (unsigned long long)sh->wrong,
                  sh->first_bad);
    ck_assert_uint_ge(sh->gen_last, sh->gen_first + 3);   /* it followed every rebuild */
    rb_conn_close(c);

    /* What a rebuild killed before its rename leaves, on both restart paths. */
    snprintf(name, sizeof(name), "/ringbloom.%s~rebuild", d.inst);
    for (int path = 0; path < 2; path++) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
        close(fd);
        rbd_stop(&d, SIGKILL);
        if (path == 0)
            rbd_launch(&d, NULL);
        else
            rbd_restart_cold(&d);
        ck_assert_msg(!shm_leftover(&d), "path %d: the rebuild's object is still there", path);
        b_intact(&d);
    }
    rbd_remove_all(&d);
    munmap(sh, sizeof(*sh));
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("release",
                        RB_TCASE("info", 60, NULL, rbd_teardown,
                                 test_release_info_memory_fields),
                        RB_TCASE("churn", 240, NULL, rbd_teardown,
                                 test_release_churn_under_a_reader),
                        RB_TCASE("kill", 120, NULL, rbd_teardown,
                                 test_release_killed_while_pending),
                        RB_TCASE("shrink", 120, NULL, rbd_teardown,
                                 test_release_shrink_under_a_reader));
}
