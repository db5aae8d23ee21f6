/*
 * check_threads.c - the torn-read stress of stress.h with the writer and the
 * readers as threads of one process on one segment, so ThreadSanitizer
 * (.ci/run builds this with -fsanitize=thread) sees both sides of every
 * shared-memory access.  Two readers use the writer's own mapping (same
 * addresses: TSan can pair their accesses with the writer's), one attaches
 * read-only as another process would.
 *
 * RB_STRESS_SECONDS (default 5) sets the length, RB_STRESS_NODES (default
 * 300) the largest membership.
 */
#include <pthread.h>

#include "rb_test.h"
#include "stress.h"

#define READERS 3

typedef struct lib_ctx {
    rb_segment_t *seg;
    rb_bloom_t *bf[ST_FILTERS];
} lib_ctx_t;

static int lib_ring(void *ctx, char op, const char *name, uint32_t weight, rb_ring_t *model)
{
    (void)op;
    (void)name;
    (void)weight;
    return rb_ring_publish(model, ((lib_ctx_t *)ctx)->seg);
}

static int64_t lib_bf_add(void *ctx, int filter, const rb_key_t *keys, size_t n)
{
    return rb_bloom_add_many(((lib_ctx_t *)ctx)->bf[filter], keys, n, NULL);
}

static int lib_bf_reset(void *ctx, int filter)
{
    return rb_bloom_reset(((lib_ctx_t *)ctx)->bf[filter]);
}

typedef struct reader_arg {
    st_shared_t *sh;
    int idx;
    const rb_segment_t *seg;
    int rc;
} reader_arg_t;

static void *reader_thread(void *p)
{
    reader_arg_t *a = p;
    rb_bloom_t *bf[ST_FILTERS];

    for (int f = 0; f < ST_FILTERS; f++)
        if ((a->rc = rb_bloom_open(a->seg, st_filter_name[f], strlen(st_filter_name[f]),
                                   &bf[f])) != RB_OK)
            return NULL;
    st_reader(a->sh, a->idx, a->seg, bf, 0x9E3779B97F4A7C15ull * (uint64_t)(a->idx + 1));
    for (int f = 0; f < ST_FILTERS; f++)
        rb_bloom_close(bf[f]);
    return NULL;
}

START_TEST(test_threads_readers_see_only_published_states)
{
    static const rb_bloom_params_t params[ST_FILTERS] = {
        { .capacity = ST_STABLE_CAP, .error_rate = ST_STABLE_P, .layout = RB_BLOOM_BLOCKED },
        /* blocked, one layer: rb_bloom_contains's fast path (a view per
         * generation) under resets; check_stress keeps it standard */
        { .capacity = ST_RESET_CAP, .error_rate = ST_RESET_P, .layout = RB_BLOOM_BLOCKED },
        { .capacity = ST_AGING_CAP, .error_rate = ST_AGING_P, .layout = RB_BLOOM_BLOCKED,
          .flags = RB_BLOOM_AGING, .generations = ST_GENERATIONS },
    };
    static st_shared_t sh;
    double seconds = st_env_num("RB_STRESS_SECONDS", 5);
    uint32_t nodes = (uint32_t)st_env_num("RB_STRESS_NODES", 300);
    reader_arg_t ra[READERS];
    pthread_t th[READERS];
    rb_segment_t *seg, *own;
    lib_ctx_t ctx;
    st_ops_t ops = { lib_ring, lib_bf_add, lib_bf_reset, &ctx };
    char inst[96];
    int wrc;

    memset(&sh, 0, sizeof(sh));
    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_create(inst, NULL, &seg), RB_OK);
    ctx.seg = seg;
    for (int f = 0; f < ST_FILTERS; f++) {
        const char *nm = st_filter_name[f];
        ck_assert_int_eq(rb_bloom_reserve(seg, nm, strlen(nm), &params[f]), RB_OK);
        ck_assert_int_eq(rb_bloom_open(seg, nm, strlen(nm), &ctx.bf[f]), RB_OK);
    }
    ck_assert_int_eq(rb_segment_attach(inst, 0, &own), RB_OK);
    for (int i = 0; i < READERS; i++) {
        ra[i] = (reader_arg_t){ &sh, i, i < 2 ? seg : own, 0 };
        ck_assert_int_eq(pthread_create(&th[i], NULL, reader_thread, &ra[i]), 0);
    }
    wrc = st_writer(&sh, &ops, seg, ctx.bf[ST_AGING], 160, nodes, seconds, 12345);
    atomic_store(&sh.stop, 1);
    for (int i = 0; i < READERS; i++) {
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
        ck_assert_int_eq(ra[i].rc, RB_OK);
    }
    st_verdict("threads", &sh, READERS, wrc, 50, 1000);
    for (int f = 0; f < ST_FILTERS; f++)
        rb_bloom_close(ctx.bf[f]);
    rb_segment_close(own);
    rb_segment_close(seg);
    rb_segment_unlink(inst);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("threads",
                        RB_TCASE("core", 600, NULL, NULL,
                                 test_threads_readers_see_only_published_states));
}
