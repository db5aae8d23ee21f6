/*
 * check_stress_cbf.c - torn-read stress of the counting Bloom filter
 * across processes, in check_stress.c's style: ringbloomd is the writer
 * (driven over its socket by this process), two reader processes attach
 * the segment read-only and probe every key known present, one by one and
 * in batches, while the writer adds and deletes churn keys that share
 * their counters (a small filter: every counter of a present key is
 * raised and lowered by the churn).  No present key may ever read absent
 * (K1, K2 in docs/design.md, "Counting Bloom filter slots").
 *
 * RB_STRESS_SECONDS (default 20; this suite runs half of it) sets the
 * length.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "rbd_test.h"
#include "stress.h"

#define READERS   2
#define PRESENT   3000   /* keys added first and never deleted */
#define BATCH     64     /* churn keys per CBF.MADD */
#define KEEP      16     /* churn batches kept before they are deleted */

/* What the readers share with the writer (an anonymous shared map). */
typedef struct shared {
    _Atomic int stop, go;
    uint64_t checked[READERS], missed[READERS], errors[READERS];
    char first_bad[READERS][128];
} shared_t;

static size_t key_of(char *buf, size_t cap, char tag, unsigned long i)
{
    return (size_t)snprintf(buf, cap, "%c:%lu", tag, i);
}

/* A reader: every present key, in one batch (rb_cbf_contains_many) and
 * one by one, until told to stop; a 0 is a miss. */
static void reader_main(shared_t *sh, int idx, const char *inst)
{
    static char kb[PRESENT][24];
    rb_key_t keys[PRESENT];
    uint8_t out[PRESENT];
    rb_segment_t *seg;
    rb_cbf_t *h;

    if (rb_segment_attach(inst, 0, &seg) != RB_OK)
        _exit(10);
    if (rb_cbf_open(seg, "cbs", 3, &h) != RB_OK)
        _exit(11);
    for (unsigned long i = 0; i < PRESENT; i++)
        keys[i] = (rb_key_t){ kb[i], key_of(kb[i], sizeof(kb[i]), 'p', i) };
    atomic_fetch_add(&sh->go, 1);
    while (!atomic_load(&sh->stop)) {
        int64_t n = rb_cbf_contains_many(h, keys, PRESENT, out);
        if (n < 0)
            sh->errors[idx]++;
        for (size_t i = 0; i < PRESENT; i++) {
            int one = rb_cbf_contains(h, keys[i].ptr, keys[i].len);
            if (one < 0) {
                sh->errors[idx]++;
            } else if (one == 0 || (n >= 0 && out[i] == 0)) {
                if (sh->missed[idx]++ == 0)
                    snprintf(sh->first_bad[idx], sizeof(sh->first_bad[idx]),
                             "%.*s missed (one %d, many %d)", (int)keys[i].len,
                             (const char *)keys[i].ptr, one, out[i]);
            }
            sh->checked[idx] += 2;
        }
    }
    rb_cbf_close(h);
    rb_segment_close(seg);
    _exit(0);
}

/* One CBF.MADD of churn batch b (each key answered 1), or one CBF.DEL per
 * key of it (each answered 1: it was added). */
static void churn(rb_conn_t *c, unsigned long b, int del)
{
    char kb[BATCH][24], reply[4096];
    const char *argv[2 + BATCH] = { "CBF.MADD", "cbs" };
    size_t argl[2 + BATCH] = { 8, 3 };

    for (int i = 0; i < BATCH; i++) {
        argv[2 + i] = kb[i];
        argl[2 + i] = key_of(kb[i], sizeof(kb[i]), 'c', b * BATCH + (unsigned long)i);
    }
    if (!del) {
        ck_assert_int_eq(rb_conn_command(c, 2 + BATCH, argv, argl, reply, sizeof(reply)),
                         RB_OK);
        for (int i = 0; i < BATCH; i++)
            ck_assert_msg(reply[2 * i] == '1', "CBF.MADD: %s", reply);
        return;
    }
    for (int i = 0; i < BATCH; i++) {
        const char *a[3] = { "CBF.DEL", "cbs", kb[i] };
        size_t l[3] = { 7, 3, argl[2 + i] };
        ck_assert_int_eq(rb_conn_command(c, 3, a, l, reply, sizeof(reply)), RB_OK);
        ck_assert_str_eq(reply, "1");
    }
}

START_TEST(test_stress_cbf_readers_never_miss)
{
    double seconds = st_env_num("RB_STRESS_SECONDS", 20) / 2;
    uint64_t checked = 0, missed = 0, errors = 0, batches = 0, t0;
    rb_segment_t *view;
    rb_cbf_info_t in;
    rb_cbf_t *h;
    shared_t *sh;
    rbd_proc_t d;
    rb_conn_t *c;
    pid_t pid[READERS];

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(sh != MAP_FAILED);
    rbd_start(&d, "max-memory 64m\nappendfsync no\n");
    c = rbd_connect(&d);
    /* 5000 keys at 10%: 23968 counters, 4 probes; the present keys and
     * the 1024 churn keys in flight hold ~16000 counter increments, so
     * nearly every counter a present key has is shared with churn keys. */
    rbd_expect(c, "OK", "CBF.RESERVE", "cbs", "0.1", "5000", "COUNTERBITS", "4");
    for (unsigned long i = 0; i < PRESENT; i++) {
        char k[24];
        key_of(k, sizeof(k), 'p', i);
        rbd_expect(c, "1", "CBF.ADD", "cbs", k);
    }
    for (int i = 0; i < READERS; i++) {
        pid[i] = fork();
        ck_assert_int_ge(pid[i], 0);
        if (pid[i] == 0)
            reader_main(sh, i, d.inst);
    }
    while (atomic_load(&sh->go) < READERS)
        usleep(1000);
    t0 = st_now_ns();
    for (; st_now_ns() - t0 < (uint64_t)(seconds * 1e9); batches++) {
        if (batches >= KEEP)
            churn(c, batches - KEEP, 1);
        churn(c, batches, 0);
    }
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < READERS; i++) {
        int status;
        ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader status %d", status);
        checked += sh->checked[i];
        missed += sh->missed[i];
        errors += sh->errors[i];
    }
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &view), RB_OK);
    ck_assert_int_eq(rb_cbf_open(view, "cbs", 3, &h), RB_OK);
    ck_assert_int_eq(rb_cbf_info(h, &in), RB_OK);
    printf("stress cbf: %.1f s, %lu churn batches of %d, %lu deletes, %lu items, %lu "
           "saturated; readers checked %lu present-key answers, %lu missed, %lu errors%s%s\n",
           seconds, (unsigned long)batches, BATCH, (unsigned long)in.deletes,
           (unsigned long)in.items, (unsigned long)in.saturated, (unsigned long)checked,
           (unsigned long)missed, (unsigned long)errors, missed ? ": " : "",
           missed ? sh->first_bad[sh->missed[0] ? 0 : 1] : "");
    fflush(stdout);
    ck_assert_uint_eq(missed, 0);
    ck_assert_uint_eq(errors, 0);
    ck_assert_uint_gt(in.deletes, 1000);   /* the race was with deletes */
    ck_assert_uint_gt(checked, 100000);
    rb_cbf_close(h);
    rb_segment_close(view);
    rb_conn_close(c);
    rbd_remove_all(&d);
    munmap(sh, sizeof(*sh));
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("stress_cbf",
                        RB_TCASE("cbf", 600, NULL, NULL, test_stress_cbf_readers_never_miss));
}
