/*
 * check_ring_states.c - node states (up, down, drain): a node not up
 * gives exactly its own keys to their next clockwise owner and takes them
 * back when up again, in every ring mode; lookup_n skips it; a state change
 * is written in place (no flip of the latch) and is the next version; the
 * states survive a full publish, a load, a dump and restore, and a dump of
 * layout 2 (no states) restores with every node up.
 */
#include "format.h"
#include "latch.h"
#include "rb_test.h"
#include "segment.h"

#define NKEYS 100000
#define NNODES 6

static rb_segment_t *seg;

static void setup(void)
{
    ck_assert_int_eq(rb_segment_create(NULL, NULL, &seg), RB_OK);
}

static void teardown(void)
{
    rb_segment_close(seg);
}

static uint64_t latch_seq(const rb_segment_t *s)
{
    return rbi_ld(&rbi_hdr(rbi_seg_map(s))->ring.seq);
}

static const char *node_name(int i)
{
    static char names[NNODES][32];

    if (names[i][0] == '\0')
        snprintf(names[i], sizeof(names[i]), "10.0.0.%d:11211", i + 1);
    return names[i];
}

static rb_ring_t *six(rb_ring_mode_t mode)
{
    rb_ring_t *r;

    ck_assert_int_eq(rb_ring_new(mode, 0, &r), RB_OK);
    for (int i = 0; i < NNODES; i++)
        ck_assert_int_eq(rb_ring_add(r, node_name(i), strlen(node_name(i)), 1 + i % 2), RB_OK);
    return r;
}

/* The index (0..NNODES-1) of node name n. */
static int idx_of(const char *n)
{
    for (int i = 0; i < NNODES; i++)
        if (strcmp(n, node_name(i)) == 0)
            return i;
    ck_abort_msg("unknown node %s", n);
    return -1;
}

/* Every key's preference list of NNODES nodes, as published now. */
static uint8_t (*prefs(void))[NNODES]
{
    uint8_t (*p)[NNODES] = malloc(NKEYS * sizeof(*p));
    rb_node_t out[NNODES];
    char key[160];

    for (unsigned long i = 0; i < NKEYS; i++) {
        size_t len = rb_test_key(key, sizeof(key), "s", i);
        int n = rb_ring_lookup_n(seg, key, len, out, NNODES);
        if (n < 1)
            ck_abort_msg("lookup_n of key %lu: %d", i, n);
        for (int j = 0; j < NNODES; j++)
            p[i][j] = j < n ? (uint8_t)idx_of(out[j].name) : 0xFF;
    }
    return p;
}

/* Marks `off` (a set of node indexes, bit i) not up as `st`, publishes in
 * place, and checks every key against `before`: a key whose owner is up
 * stays, the others go to the first up node of their preference list;
 * lookup_n lists the up nodes of the preference list in order. */
static void check_off(rb_ring_t *r, uint8_t (*before)[NNODES], unsigned off, rb_node_state_t st,
                      const char *mode)
{
    rb_ring_stat_t s0, s1;
    uint64_t seq = latch_seq(seg);
    unsigned long moved = 0;
    rb_node_t one, n[NNODES];
    char key[160];
    int ndown = 0;

    ck_assert_int_eq(rb_ring_stat(seg, &s0), RB_OK);
    for (int i = 0; i < NNODES; i++)
        if (off & (1u << i)) {
            ck_assert_int_eq(rb_ring_set_state(r, node_name(i), strlen(node_name(i)), st), RB_OK);
            ndown++;
        }
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_uint_eq(latch_seq(seg), seq);               /* in place: no flip */
    ck_assert_int_eq(rb_ring_stat(seg, &s1), RB_OK);
    ck_assert_uint_eq(s1.version, s0.version + 1);         /* ... yet the next version */
    ck_assert_uint_eq(s1.down, (unsigned)ndown);
    for (unsigned long i = 0; i < NKEYS; i++) {
        size_t len = rb_test_key(key, sizeof(key), "s", i);
        int want = -1, got, k = 0;

        for (int j = 0; j < NNODES && want < 0; j++)
            if (before[i][j] != 0xFF && !(off & (1u << before[i][j])))
                want = before[i][j];
        /* Plain tests in the loop, Check only on a failure: every Check
         * assertion records its place in a file, 10^6 of them take
         * minutes under a sanitizer. */
        if (rb_ring_lookup(seg, key, len, &one) != RB_OK || idx_of(one.name) != want ||
            one.version != s1.version)
            ck_abort_msg("%s: key %lu went to %s (version %llu), not %s", mode, i, one.name,
                         (unsigned long long)one.version, node_name(want));
        moved += want != before[i][0];
        got = rb_ring_lookup_n(seg, key, len, n, NNODES);
        for (int j = 0; j < NNODES; j++)
            if (before[i][j] != 0xFF && !(off & (1u << before[i][j])))
                if (k >= got || idx_of(n[k++].name) != before[i][j])
                    ck_abort_msg("%s: key %lu: preference %d of %d is wrong", mode, i, k, got);
        if (k != got)
            ck_abort_msg("%s: key %lu: %d up nodes listed, %d expected", mode, i, got, k);
    }
    printf("%-7s %u node(s) %s: %lu of %d keys moved, each to its next up node\n", mode,
           (unsigned)ndown, rb_node_state_name(st), moved, NKEYS);
}

/* Every node up again: every key back on its first owner. */
static void check_restored(rb_ring_t *r, uint8_t (*before)[NNODES])
{
    rb_node_t one;
    char key[160];

    for (int i = 0; i < NNODES; i++)
        ck_assert_int_eq(rb_ring_set_state(r, node_name(i), strlen(node_name(i)), RB_NODE_UP),
                         RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    for (unsigned long i = 0; i < NKEYS; i++) {
        size_t len = rb_test_key(key, sizeof(key), "s", i);
        if (rb_ring_lookup(seg, key, len, &one) != RB_OK || idx_of(one.name) != before[i][0])
            ck_abort_msg("key %lu not back on %s", i, node_name(before[i][0]));
    }
}

START_TEST(test_states_down_moves_only_its_keys_in_every_mode)
{
    int modes = 0;

    /* Every mode the library has, new ones included without a change here. */
    for (int m = 0; strcmp(rb_ring_mode_name((rb_ring_mode_t)m), "unknown") != 0; m++) {
        const char *name = rb_ring_mode_name((rb_ring_mode_t)m);
        rb_ring_t *r = six((rb_ring_mode_t)m);
        uint8_t (*before)[NNODES];

        ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
        before = prefs();
        check_off(r, before, 1u << 2, RB_NODE_DOWN, name);
        check_restored(r, before);
        check_off(r, before, (1u << 0) | (1u << 3), RB_NODE_DRAIN, name);
        check_off(r, before, (1u << 0) | (1u << 3) | (1u << 5), RB_NODE_DOWN, name);
        check_restored(r, before);
        free(before);
        rb_ring_free(r);
        modes++;
    }
    ck_assert_int_ge(modes, 4);
}
END_TEST

START_TEST(test_states_all_down_is_empty_and_bad_input)
{
    rb_ring_t *r = six(RB_RING_XXH3);
    rb_node_t n[NNODES];
    rb_node_state_t st;

    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    for (int i = 0; i < NNODES; i++)
        ck_assert_int_eq(rb_ring_set_state(r, node_name(i), strlen(node_name(i)),
                                           i % 2 ? RB_NODE_DOWN : RB_NODE_DRAIN), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_int_eq(rb_ring_lookup(seg, "k", 1, n), RB_EEMPTY);
    ck_assert_int_eq(rb_ring_lookup_n(seg, "k", 1, n, 3), RB_EEMPTY);
    ck_assert_int_eq(rb_ring_set_state(r, "nope", 4, RB_NODE_DOWN), RB_ENOENT);
    ck_assert_int_eq(rb_ring_set_state(r, node_name(0), strlen(node_name(0)),
                                       (rb_node_state_t)3), RB_EINVAL);
    ck_assert_int_eq(rb_ring_state(r, "nope", 4), RB_ENOENT);
    ck_assert_int_eq(rb_ring_state(r, node_name(1), strlen(node_name(1))), RB_NODE_DOWN);
    ck_assert_int_eq(rb_node_state_parse("DRAIN", 5, &st), RB_OK);
    ck_assert_int_eq(st, RB_NODE_DRAIN);
    ck_assert_int_eq(rb_node_state_parse("sideways", 8, &st), RB_EINVAL);
    ck_assert_str_eq(rb_node_state_name((rb_node_state_t)7), "unknown");
    rb_ring_free(r);
}
END_TEST

/* States travel with a full publish (a membership change), a load, and a
 * removed node forgets its state. */
START_TEST(test_states_survive_full_publish_load_and_remove)
{
    rb_ring_t *r = six(RB_RING_XXH3), *back;
    rb_node_t nodes[NNODES + 1];
    size_t count;
    uint64_t seq;

    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_int_eq(rb_ring_set_state(r, node_name(1), strlen(node_name(1)), RB_NODE_DOWN),
                     RB_OK);
    ck_assert_int_eq(rb_ring_set_state(r, node_name(4), strlen(node_name(4)), RB_NODE_DRAIN),
                     RB_OK);
    ck_assert_int_eq(rb_ring_add(r, "late", 4, 1), RB_OK);
    seq = latch_seq(seg);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_uint_eq(latch_seq(seg), seq + 1);          /* a membership change flips */
    ck_assert_int_eq(rb_ring_nodes(seg, nodes, NNODES + 1, &count), RB_OK);
    ck_assert_uint_eq(count, NNODES + 1);
    for (size_t i = 0; i < count; i++) {
        unsigned want = strcmp(nodes[i].name, node_name(1)) == 0   ? RB_NODE_DOWN
                        : strcmp(nodes[i].name, node_name(4)) == 0 ? RB_NODE_DRAIN
                                                                   : RB_NODE_UP;
        ck_assert_uint_eq(nodes[i].state, want);
    }
    ck_assert_int_eq(rb_ring_load(seg, &back), RB_OK);
    ck_assert_int_eq(rb_ring_state(back, node_name(1), strlen(node_name(1))), RB_NODE_DOWN);
    ck_assert_int_eq(rb_ring_state(back, node_name(4), strlen(node_name(4))), RB_NODE_DRAIN);
    ck_assert_int_eq(rb_ring_state(back, "late", 4), RB_NODE_UP);
    /* The loaded model has not published here: its first state change
     * publishes in full, and still agrees. */
    ck_assert_int_eq(rb_ring_set_state(back, node_name(4), strlen(node_name(4)), RB_NODE_UP),
                     RB_OK);
    ck_assert_int_eq(rb_ring_publish(back, seg), RB_OK);
    ck_assert_int_eq(rb_ring_remove(back, node_name(1), strlen(node_name(1))), RB_OK);
    ck_assert_int_eq(rb_ring_add(back, node_name(1), strlen(node_name(1)), 1), RB_OK);
    ck_assert_int_eq(rb_ring_state(back, node_name(1), strlen(node_name(1))), RB_NODE_UP);
    rb_ring_free(back);
    rb_ring_free(r);
}
END_TEST

/* A dump keeps the states; a dump of layout 2 (this layout less the
 * states: version 2, word 11 of each copy 0) restores with every node up. */
START_TEST(test_states_dump_restore_and_layout2)
{
    rb_ring_t *r = six(RB_RING_XXH3);
    char inst[96], key[64];
    rb_segment_t *copy;
    rb_ring_stat_t st;
    rb_node_t a, b;
    rb_test_dump_t d;

    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_int_eq(rb_ring_set_state(r, node_name(3), strlen(node_name(3)), RB_NODE_DOWN),
                     RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_int_eq(rb_segment_dump(seg, rb_test_dump_fn, &d), RB_OK);
    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_restore(inst, NULL, d.data, d.len, &copy), RB_OK);
    for (unsigned long i = 0; i < 2000; i++) {
        size_t len = rb_test_key(key, sizeof(key), "d", i);
        ck_assert_int_eq(rb_ring_lookup(seg, key, len, &a), RB_OK);
        ck_assert_int_eq(rb_ring_lookup(copy, key, len, &b), RB_OK);
        ck_assert_str_eq(a.name, b.name);
        ck_assert_str_ne(b.name, node_name(3));
    }
    ck_assert_int_eq(rb_ring_stat(copy, &st), RB_OK);
    ck_assert_uint_eq(st.down, 1);
    rb_segment_close(copy);
    rb_segment_unlink(inst);

    /* The same dump as layout 2 wrote it. */
    {
        rb_header_shm_t *h = (rb_header_shm_t *)(void *)d.data;
        rb_ring_t *up;

        rbi_st(&h->version, RBI_LAYOUT_VERSION_2);
        for (int c = 0; c < 2; c++) {
            uint64_t off = rbi_ld(&h->ring.copy_off[c]);
            if (off != 0)
                rbi_st(&((rb_ring_copy_shm_t *)(void *)(d.data + off))->states_w, 0);
        }
        ck_assert_int_eq(rb_segment_restore(inst, NULL, d.data, d.len, &copy), RB_OK);
        ck_assert_int_eq(rb_ring_stat(copy, &st), RB_OK);
        ck_assert_uint_eq(st.down, 0);
        ck_assert_int_eq(rb_ring_load(copy, &up), RB_OK);
        ck_assert_int_eq(rb_ring_state(up, node_name(3), strlen(node_name(3))), RB_NODE_UP);
        /* ... and a state change on it publishes in full, with states. */
        ck_assert_int_eq(rb_ring_set_state(up, node_name(3), strlen(node_name(3)), RB_NODE_DOWN),
                         RB_OK);
        ck_assert_int_eq(rb_ring_publish(up, copy), RB_OK);
        for (unsigned long i = 0; i < 2000; i++) {
            size_t len = rb_test_key(key, sizeof(key), "d", i);
            ck_assert_int_eq(rb_ring_lookup(seg, key, len, &a), RB_OK);
            ck_assert_int_eq(rb_ring_lookup(copy, key, len, &b), RB_OK);
            ck_assert_str_eq(a.name, b.name);
        }
        rb_ring_free(up);
        rb_segment_close(copy);
        rb_segment_unlink(inst);
    }
    free(d.data);
    rb_ring_free(r);
}
END_TEST

/* A writer that dies inside a state change leaves the sequence odd: the
 * next writer (takeover) takes the states as they are, recomputes their
 * counts and makes the sequence even, so readers stop retrying and a
 * model loads. */
START_TEST(test_states_writer_dead_mid_change_is_repaired)
{
    rb_ring_t *r = six(RB_RING_XXH3), *back;
    char inst[96];
    rb_segment_t *w, *rd, *w2;
    rb_header_shm_t *h;
    rb_ring_copy_shm_t *c;
    _Atomic uint64_t *q;
    rb_ring_stat_t st;
    rb_node_t n;

    rb_test_instance(inst, sizeof(inst));
    ck_assert_int_eq(rb_segment_create(inst, NULL, &w), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, w), RB_OK);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &rd), RB_OK);
    /* What a writer stopped inside rb_ring_publish's in-place write leaves:
     * q odd, node 2's bits stored as down, the counts not yet. */
    h = rbi_hdr(rbi_seg_map(w));
    c = (rb_ring_copy_shm_t *)(void *)rbi_word_at(rbi_seg_map(w),
                                                  rbi_ld(&h->ring.copy_off[rbi_ld(&h->ring.seq) & 1]));
    q = c->data - RBI_RING_COPY_HDR_WORDS + rbi_ld(&c->states_w);
    rbi_st(q, rbi_ld(q) + 1);
    rbi_st(&q[RBI_STATES_HDR_WORDS], (uint64_t)RB_NODE_DOWN << 4);   /* sorted index 2 */
    ck_assert_int_eq(rb_ring_lookup(rd, "k", 1, &n), RB_EBUSY);       /* readers retry */
    rb_segment_close(w);                                              /* the writer "dies" */
    ck_assert_int_eq(rb_segment_open_writer(inst, &w2), RB_OK);
    ck_assert_int_eq(rb_ring_stat(rd, &st), RB_OK);
    ck_assert_uint_eq(st.down, 1);
    ck_assert_int_eq(rb_ring_load(w2, &back), RB_OK);
    ck_assert_int_eq(rb_ring_state(back, node_name(2), strlen(node_name(2))), RB_NODE_DOWN);
    for (unsigned long i = 0; i < 2000; i++) {
        char key[64];
        size_t len = rb_test_key(key, sizeof(key), "w", i);
        ck_assert_int_eq(rb_ring_lookup(rd, key, len, &n), RB_OK);
        ck_assert_str_ne(n.name, node_name(2));
    }
    rb_ring_free(back);
    rb_ring_free(r);
    rb_segment_close(rd);
    rb_segment_close(w2);
    rb_segment_unlink(inst);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("ring_states",
                        RB_TCASE("states", 600, setup, teardown,
                                 test_states_down_moves_only_its_keys_in_every_mode,
                                 test_states_all_down_is_empty_and_bad_input,
                                 test_states_survive_full_publish_load_and_remove,
                                 test_states_dump_restore_and_layout2,
                                 test_states_writer_dead_mid_change_is_repaired));
}
