/*
 * check_stress.c - torn-read stress across processes: ringbloomd is the
 * writer (driven over its socket by this process, which also prepares the
 * expected answers of every ring version, see stress.h); two reader
 * processes attach the segment read-only and check every answer.  A second
 * case races two cuckoo-filter readers against adds that move fingerprints
 * and grow the filter, and deletes of other keys: no present key may ever
 * read absent (C1, C2 in docs/design.md).
 *
 * RB_STRESS_SECONDS (default 20) sets the length, RB_STRESS_NODES (default
 * 1000) the largest membership.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "rbd_test.h"
#include "stress.h"

#define READERS 2

typedef struct daemon_ctx {
    rb_conn_t *c;
} daemon_ctx_t;

static int d_ring(void *ctx, char op, const char *name, uint32_t weight, rb_ring_t *model)
{
    rb_conn_t *c = ((daemon_ctx_t *)ctx)->c;
    int rc;

    (void)model;
    rc = op == 'a' ? rb_conn_ring_add(c, name, strlen(name), weight)
       : op == 'r' ? rb_conn_ring_remove(c, name, strlen(name))
       : op == 's' ? rb_conn_ring_state(c, name, strlen(name), (rb_node_state_t)weight)
       : rb_conn_ring_weight(c, name, strlen(name), weight);
    if (rc != RB_OK)
        fprintf(stderr, "ring change %c %s: %d %s\n", op, name, rc, rb_conn_error(c));
    return rc;
}

static int64_t d_bf_add(void *ctx, int filter, const rb_key_t *keys, size_t n)
{
    rb_conn_t *c = ((daemon_ctx_t *)ctx)->c;
    const char *nm = st_filter_name[filter];
    int64_t rc = rb_conn_bf_add_many(c, nm, strlen(nm), keys, n, NULL);

    if (rc < 0)
        fprintf(stderr, "BF.MADD %s: %d %s\n", nm, (int)rc, rb_conn_error(c));
    return rc;
}

static int d_bf_reset(void *ctx, int filter)
{
    rb_conn_t *c = ((daemon_ctx_t *)ctx)->c;
    const char *argv[2] = { "BF.RESET", st_filter_name[filter] };
    size_t argl[2] = { 8, strlen(st_filter_name[filter]) };
    char buf[256];
    int rc = rb_conn_command(c, 2, argv, argl, buf, sizeof(buf));

    if (rc != RB_OK)
        fprintf(stderr, "BF.RESET: %d %s\n", rc, buf);
    return rc;
}

static void reader_main(st_shared_t *sh, int idx, const char *inst)
{
    rb_segment_t *seg;
    rb_bloom_t *bf[ST_FILTERS];

    if (rb_segment_attach(inst, 0, &seg) != RB_OK)
        _exit(10);
    for (int f = 0; f < ST_FILTERS; f++)
        if (rb_bloom_open(seg, st_filter_name[f], strlen(st_filter_name[f]), &bf[f]) != RB_OK)
            _exit(11);
    st_reader(sh, idx, seg, bf, 0xD1B54A32D192ED03ull * (uint64_t)(idx + 1));
    for (int f = 0; f < ST_FILTERS; f++)
        rb_bloom_close(bf[f]);
    rb_segment_close(seg);
    _exit(0);
}

START_TEST(test_stress_daemon_rewrites_readers_check_every_answer)
{
    double seconds = st_env_num("RB_STRESS_SECONDS", 20);
    uint32_t nodes = (uint32_t)st_env_num("RB_STRESS_NODES", 1000);
    st_shared_t *sh;
    rbd_proc_t d;
    daemon_ctx_t ctx;
    st_ops_t ops = { d_ring, d_bf_add, d_bf_reset, &ctx };
    rb_segment_t *view;
    rb_bloom_t *aging;
    rb_ring_stat_t rs;
    pid_t pid[READERS];
    char cap[32];
    int wrc;

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(sh != MAP_FAILED);
    rbd_start(&d, "max-nodes 2000\nmax-memory 512m\nappendfsync no\n");
    ctx.c = rbd_connect(&d);
    snprintf(cap, sizeof(cap), "%d", ST_STABLE_CAP);
    rbd_expect(ctx.c, "OK", "BF.RESERVE", "stable", "0.001", cap);
    snprintf(cap, sizeof(cap), "%d", ST_RESET_CAP);
    rbd_expect(ctx.c, "OK", "BF.RESERVE", "reset", "0.001", cap, "LAYOUT", "standard");
    snprintf(cap, sizeof(cap), "%d", ST_AGING_CAP);
    rbd_expect(ctx.c, "OK", "BF.RESERVE", "aging", "0.01", cap, "AGING", "0", "GENERATIONS", "3");
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &view), RB_OK);
    ck_assert_int_eq(rb_bloom_open(view, "aging", 5, &aging), RB_OK);
    ck_assert_int_eq(rb_ring_stat(view, &rs), RB_OK);
    for (int i = 0; i < READERS; i++) {
        pid[i] = fork();
        ck_assert_int_ge(pid[i], 0);
        if (pid[i] == 0)
            reader_main(sh, i, d.inst);
    }
    wrc = st_writer(sh, &ops, view, aging, rs.replicas, nodes, seconds, 2026);
    atomic_store(&sh->stop, 1);
    for (int i = 0; i < READERS; i++) {
        int status;
        ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader status %d", status);
    }
    st_verdict("stress", sh, READERS, wrc, 100, 10000);
    ck_assert_uint_ge(sh->max_nodes_seen, nodes / 2);
    rb_bloom_close(aging);
    rb_segment_close(view);
    rb_conn_close(ctx.c);
    rbd_remove_all(&d);
    munmap(sh, sizeof(*sh));
}
END_TEST

/* ---- cuckoo filters: readers against moves, growth and deletes ------------------- */

#define CF_PRESENT 3000   /* keys added first and never deleted */
#define CF_BATCH   64     /* churn keys per CF.INSERT */
#define CF_KEEP    16     /* churn batches kept before they are deleted: 1024
                             keys, which with the present ones outnumber the
                             slots of cfk (it moves, and refuses some) and of
                             cfg's first four layers (it grows) */

/* What the cuckoo readers share with the writer (an anonymous shared map). */
typedef struct cf_shared {
    _Atomic int stop, go;
    uint64_t checked[READERS], missed[READERS], errors[READERS], rounds[READERS];
    char first_bad[READERS][128];
} cf_shared_t;

static const char *const cf_names[2] = { "cfk", "cfg" };   /* kicks only; grows */

static size_t cf_key(char *buf, size_t cap, char tag, unsigned long i)
{
    return (size_t)snprintf(buf, cap, "%c:%lu", tag, i);
}

/* A reader: every present key of both filters, one by one and then in
 * batches (rb_cuckoo_contains_many), until told to stop; a 0 is a miss. */
static void cf_reader_main(cf_shared_t *sh, int idx, const char *inst)
{
    static char kb[CF_PRESENT][24];
    rb_key_t keys[CF_PRESENT];
    uint8_t out[CF_PRESENT];
    rb_segment_t *seg;
    rb_cuckoo_t *h[2];

    if (rb_segment_attach(inst, 0, &seg) != RB_OK)
        _exit(10);
    for (int f = 0; f < 2; f++)
        if (rb_cuckoo_open(seg, cf_names[f], 3, &h[f]) != RB_OK)
            _exit(11);
    for (unsigned long i = 0; i < CF_PRESENT; i++)
        keys[i] = (rb_key_t){ kb[i], cf_key(kb[i], sizeof(kb[i]), 'p', i) };
    atomic_fetch_add(&sh->go, 1);
    while (!atomic_load(&sh->stop)) {
        for (int f = 0; f < 2; f++) {
            int64_t n = rb_cuckoo_contains_many(h[f], keys, CF_PRESENT, out);
            if (n < 0)
                sh->errors[idx]++;
            for (size_t i = 0; i < CF_PRESENT; i++) {
                int one = rb_cuckoo_contains(h[f], keys[i].ptr, keys[i].len);
                if (one < 0) {
                    sh->errors[idx]++;
                } else if (one == 0 || (n >= 0 && out[i] == 0)) {
                    if (sh->missed[idx]++ == 0)
                        snprintf(sh->first_bad[idx], sizeof(sh->first_bad[idx]),
                                 "%s: %.*s missed (one %d, many %d)", cf_names[f],
                                 (int)keys[i].len, (const char *)keys[i].ptr, one, out[i]);
                }
                sh->checked[idx] += 2;
            }
        }
        sh->rounds[idx]++;
    }
    for (int f = 0; f < 2; f++)
        rb_cuckoo_close(h[f]);
    rb_segment_close(seg);
    _exit(0);
}

/* One CF.INSERT of churn batch b into filter f (what found no room is not
 * added: *added[i] 0), or one CF.DEL per key of it that was added. */
static void cf_churn(rb_conn_t *c, int f, unsigned long b, uint8_t *added, int del)
{
    char kb[CF_BATCH][24], reply[4096];
    const char *argv[3 + CF_BATCH] = { del ? "CF.DEL" : "CF.INSERT", cf_names[f], "ITEMS" };
    size_t argl[3 + CF_BATCH] = { del ? 6u : 9u, 3, 5 };

    for (int i = 0; i < CF_BATCH; i++) {
        argv[3 + i] = kb[i];
        argl[3 + i] = cf_key(kb[i], sizeof(kb[i]), 'c', b * CF_BATCH + (unsigned long)i);
    }
    if (!del) {
        char *at = reply;
        ck_assert_int_eq(rb_conn_command(c, 3 + CF_BATCH, argv, argl, reply, sizeof(reply)),
                         RB_OK);
        for (int i = 0; i < CF_BATCH; i++) {
            added[i] = at[0] == '1';
            ck_assert_msg(added[i] || strncmp(at, "-1", 2) == 0, "CF.INSERT: %s", reply);
            if (i + 1 < CF_BATCH) {
                at = strchr(at, '\n');
                ck_assert_ptr_nonnull(at);
                at++;
            }
        }
        return;
    }
    for (int i = 0; i < CF_BATCH; i++) {
        const char *a[3] = { "CF.DEL", cf_names[f], kb[i] };
        size_t l[3] = { 6, 3, argl[3 + i] };
        if (!added[i])
            continue;
        ck_assert_int_eq(rb_conn_command(c, 3, a, l, reply, sizeof(reply)), RB_OK);
        ck_assert_str_eq(reply, "1");
    }
}

static void cf_info(const rb_segment_t *view, int f, rb_cuckoo_info_t *in)
{
    rb_cuckoo_t *h;

    ck_assert_int_eq(rb_cuckoo_open(view, cf_names[f], 3, &h), RB_OK);
    ck_assert_int_eq(rb_cuckoo_info(h, in), RB_OK);
    rb_cuckoo_close(h);
}

START_TEST(test_stress_cuckoo_readers_never_miss)
{
    double seconds = st_env_num("RB_STRESS_SECONDS", 20) / 2;
    static uint8_t added[2][CF_KEEP][CF_BATCH];
    uint64_t checked = 0, missed = 0, errors = 0, batches = 0, t0;
    rb_cuckoo_info_t in[2];
    uint32_t layers_before;
    rb_segment_t *view;
    cf_shared_t *sh;
    rbd_proc_t d;
    rb_conn_t *c;
    pid_t pid[READERS];

    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(sh != MAP_FAILED);
    rbd_start(&d, "max-memory 256m\nappendfsync no\n");
    c = rbd_connect(&d);
    /* cfk: 4096 slots that never grow, kept full by the present keys and
     * the churn: adds there move fingerprints.  cfg: 256 slots that grow
     * (4 layers, 3840 slots, after the present keys; more in the churn). */
    rbd_expect(c, "OK", "CF.RESERVE", "cfk", "4096", "BUCKETSIZE", "4", "EXPANSION", "0",
               "FPBITS", "16", "MAXITERATIONS", "500");
    rbd_expect(c, "OK", "CF.RESERVE", "cfg", "256", "BUCKETSIZE", "2", "EXPANSION", "2",
               "FPBITS", "12");
    for (unsigned long i = 0; i < CF_PRESENT; i++) {
        char k[24];
        cf_key(k, sizeof(k), 'p', i);
        rbd_expect(c, "1", "CF.ADD", "cfk", k);
        rbd_expect(c, "1", "CF.ADD", "cfg", k);
    }
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &view), RB_OK);
    cf_info(view, 1, &in[1]);
    layers_before = in[1].layers;
    for (int i = 0; i < READERS; i++) {
        pid[i] = fork();
        ck_assert_int_ge(pid[i], 0);
        if (pid[i] == 0)
            cf_reader_main(sh, i, d.inst);
    }
    while (atomic_load(&sh->go) < READERS)
        usleep(1000);
    t0 = st_now_ns();
    for (; st_now_ns() - t0 < (uint64_t)(seconds * 1e9); batches++)
        for (int f = 0; f < 2; f++) {
            if (batches >= CF_KEEP)
                cf_churn(c, f, batches - CF_KEEP, added[f][batches % CF_KEEP], 1);
            cf_churn(c, f, batches, added[f][batches % CF_KEEP], 0);
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
    for (int f = 0; f < 2; f++)
        cf_info(view, f, &in[f]);
    printf("stress cuckoo: %.1f s, %lu churn batches of %d a filter, cfk %lu moves, cfg %lu "
           "moves, %u filters grown to %u; readers checked %lu present-key answers, %lu missed, "
           "%lu errors%s%s\n", seconds, (unsigned long)batches, CF_BATCH,
           (unsigned long)in[0].moves, (unsigned long)in[1].moves, layers_before, in[1].layers,
           (unsigned long)checked, (unsigned long)missed, (unsigned long)errors,
           missed ? ": " : "", missed ? sh->first_bad[sh->missed[0] ? 0 : 1] : "");
    fflush(stdout);
    ck_assert_uint_eq(missed, 0);
    ck_assert_uint_eq(errors, 0);
    ck_assert_uint_gt(in[0].moves, 1000);   /* the race was with moves */
    ck_assert_uint_gt(in[1].layers, layers_before);   /* and with growth */
    ck_assert_uint_gt(checked, 100000);
    rb_segment_close(view);
    rb_conn_close(c);
    rbd_remove_all(&d);
    munmap(sh, sizeof(*sh));
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("stress",
                        RB_TCASE("core", 600, NULL, NULL,
                                 test_stress_daemon_rewrites_readers_check_every_answer),
                        RB_TCASE("cuckoo", 600, NULL, NULL,
                                 test_stress_cuckoo_readers_never_miss));
}
