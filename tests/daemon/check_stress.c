/*
 * check_stress.c - torn-read stress across processes: ringbloomd is the
 * writer (driven over its socket by this process, which also prepares the
 * expected answers of every ring version, see stress.h); two reader
 * processes attach the segment read-only and check every answer.
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

int main(void)
{
    return RB_TEST_MAIN("stress",
                        RB_TCASE("core", 600, NULL, NULL,
                                 test_stress_daemon_rewrites_readers_check_every_answer));
}
