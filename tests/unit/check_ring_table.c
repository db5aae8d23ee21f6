/*
 * check_ring_table.c - the table ring modes: maglev (lookups equal the
 * paper's populate computed here, weights honoured, disruption on a
 * change, table sizes) and slots (lookups equal Redis Cluster's key slot
 * under the map, explicit assignments, BALANCE, what adds and removes do
 * to an explicit map, a load restoring it).
 */
#include <math.h>

#include "hash.h"
#include "rb_test.h"

#define NKEYS 100000
#define NSLOTS RB_RING_SLOT_COUNT

static rb_segment_t *seg;

static void setup(void)
{
    ck_assert_int_eq(rb_segment_create(NULL, NULL, &seg), RB_OK);
}

static void teardown(void)
{
    rb_segment_close(seg);
}

/* names[i] = "<tag>-<i>", in name order for i < 10 (callers keep n <= 10
 * or sort). */
static rb_ring_t *table_ring(rb_ring_mode_t mode, uint32_t param, const char *const *names,
                             const uint32_t *weights, int n)
{
    rb_ring_t *r;

    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 0, &r), RB_OK);
    ck_assert_int_eq(rb_ring_set_mode(r, mode, param), RB_OK);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(rb_ring_add(r, names[i], strlen(names[i]), weights ? weights[i] : 1),
                         RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    return r;
}

/* The owner's node index of every key, as published now; caller frees. */
static uint32_t *owners(void)
{
    uint32_t *o = malloc(NKEYS * sizeof(*o));
    char key[160];
    rb_node_t n;

    for (unsigned long i = 0; i < NKEYS; i++) {
        ck_assert_int_eq(rb_ring_lookup(seg, key, rb_test_key(key, sizeof(key), "t", i), &n),
                         RB_OK);
        o[i] = n.index;
    }
    return o;
}

/* The published table, slot by slot (the owners' indices); *m slots. */
static uint32_t *published_table(size_t *m)
{
    rb_ring_range_t *rg = malloc(NSLOTS * 1024 * sizeof(*rg));
    size_t count;
    uint32_t *t;

    ck_assert_int_eq(rb_ring_ranges(seg, rg, NSLOTS * 1024, &count), RB_OK);
    ck_assert_uint_le(count, NSLOTS * 1024);
    *m = count ? rg[count - 1].end + 1 : 0;
    t = malloc((*m ? *m : 1) * sizeof(*t));
    for (size_t i = 0; i < count; i++) {
        ck_assert_uint_eq(rg[i].start, i ? rg[i - 1].end + 1 : 0);
        for (uint32_t s = rg[i].start; s <= rg[i].end; s++)
            t[s] = rg[i].node;
    }
    free(rg);
    return t;
}

/* ---- maglev ---------------------------------------------------------------- */

/* The paper's populate (section 3.4, pseudocode 1), unweighted, written
 * out as it stands: names sorted, offset = XXH3-64(name, seed 0) mod M,
 * skip = XXH3-64(name, seed 1) mod (M - 1) + 1. */
static int32_t *paper_populate(const char *const *names, int n, uint64_t m)
{
    int32_t *entry = malloc(m * sizeof(*entry));
    uint64_t *offset = malloc(n * sizeof(uint64_t)), *skip = malloc(n * sizeof(uint64_t));
    uint64_t *next = calloc(n, sizeof(uint64_t)), filled = 0;

    for (int i = 0; i < n; i++) {
        offset[i] = XXH3_64bits_withSeed(names[i], strlen(names[i]), 0) % m;
        skip[i] = XXH3_64bits_withSeed(names[i], strlen(names[i]), 1) % (m - 1) + 1;
    }
    for (uint64_t j = 0; j < m; j++)
        entry[j] = -1;
    for (;;) {
        for (int i = 0; i < n; i++) {
            uint64_t c = (offset[i] + next[i] * skip[i]) % m;
            while (entry[c] >= 0) {
                next[i]++;
                c = (offset[i] + next[i] * skip[i]) % m;
            }
            entry[c] = i;
            next[i]++;
            if (++filled == m)
                goto done;
        }
    }
done:
    free(offset);
    free(skip);
    free(next);
    return entry;
}

static const char *const ten[] = { "cache-00", "cache-01", "cache-02", "cache-03", "cache-04",
                                   "cache-05", "cache-06", "cache-07", "cache-08", "cache-09" };

static void check_paper(uint32_t param, uint64_t m, int n)
{
    rb_ring_t *r = table_ring(RB_RING_MAGLEV, param, ten, NULL, n);
    int32_t *entry = paper_populate(ten, n, m);
    rb_ring_stat_t st;
    char key[160];
    rb_node_t one, pref[3];

    ck_assert_int_eq(rb_ring_stat(seg, &st), RB_OK);
    ck_assert_uint_eq(st.points, m);
    ck_assert_uint_eq(st.replicas, param);
    for (unsigned long i = 0; i < NKEYS; i++) {
        size_t len = rb_test_key(key, sizeof(key), "m", i);
        int32_t want = entry[rbi_hash_xxh3(key, len) % m];
        ck_assert_int_eq(rb_ring_lookup(seg, key, len, &one), RB_OK);
        ck_assert_msg(strcmp(one.name, ten[want]) == 0, "key %lu: %s vs paper %s", i, one.name,
                      ten[want]);
        if (i % 10 == 0) {
            ck_assert_int_eq(rb_ring_lookup_n(seg, key, len, pref, 3), 3);
            ck_assert_str_eq(pref[0].name, one.name);
            ck_assert_str_ne(pref[1].name, pref[0].name);
            ck_assert_str_ne(pref[2].name, pref[1].name);
            ck_assert_str_ne(pref[2].name, pref[0].name);
        }
    }
    free(entry);
    rb_ring_free(r);
}

START_TEST(test_maglev_lookup_equals_paper_populate)
{
    check_paper(0, 65537, 10);    /* automatic: 65537 up to 655 nodes */
    check_paper(1009, 1009, 7);   /* a table size asked for */
    check_paper(13, 13, 3);       /* the paper's example size */
}
END_TEST

START_TEST(test_maglev_weights_are_proportional)
{
    const uint32_t w[] = { 1, 2, 3, 4, 10, 1, 5, 2 };
    double total = 0;
    rb_ring_t *r = table_ring(RB_RING_MAGLEV, 0, ten, w, 8);
    size_t m, slots[8] = { 0 }, keys[8] = { 0 };
    uint32_t *t = published_table(&m), *o = owners();

    ck_assert_uint_eq(m, 65537);
    for (int i = 0; i < 8; i++)
        total += w[i];
    for (size_t s = 0; s < m; s++)
        slots[t[s]]++;
    for (size_t k = 0; k < NKEYS; k++)
        keys[o[k]]++;
    /* Slots: within 0.2% of the table of the weight's share (a node's turns
     * are proportional to its weight, to a turn or two); keys: within 1%
     * of the keys (sampling). */
    for (int i = 0; i < 8; i++) {
        double share = w[i] / total;
        printf("maglev weight %2u: %.4f of slots, %.4f of keys (share %.4f)\n", w[i],
               (double)slots[i] / m, (double)keys[i] / NKEYS, share);
        ck_assert_double_le(fabs((double)slots[i] / m - share), 0.002);
        ck_assert_double_le(fabs((double)keys[i] / NKEYS - share), 0.01);
    }
    free(t);
    free(o);
    rb_ring_free(r);
}
END_TEST

/* Every key's owner is a member; on a remove the removed node's keys all
 * move and few others do; on an add few keys move but to the new node. */
START_TEST(test_maglev_disruption_on_remove_and_add)
{
    rb_ring_t *r = table_ring(RB_RING_MAGLEV, 0, ten, NULL, 10);
    uint32_t *before = owners(), *after;
    size_t moved = 0, other = 0, gone = 0;

    for (size_t k = 0; k < NKEYS; k++)
        ck_assert_uint_lt(before[k], 10);
    ck_assert_int_eq(rb_ring_remove(r, ten[4], strlen(ten[4])), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    after = owners();
    for (size_t k = 0; k < NKEYS; k++) {
        /* indices after 4 shift down by one */
        uint32_t was = before[k], now = after[k] + (after[k] >= 4);
        ck_assert_uint_lt(after[k], 9);
        gone += was == 4;
        moved += was != now;
        other += was != 4 && was != now;
    }
    printf("maglev 10->9: %.4f of keys moved (%.4f owned by the removed node, %.4f others)\n",
           (double)moved / NKEYS, (double)gone / NKEYS, (double)other / NKEYS);
    ck_assert_double_le((double)other / NKEYS, 0.03);
    for (size_t k = 0; k < NKEYS; k++)
        after[k] += after[k] >= 4;   /* in the indices of ten nodes */
    ck_assert_int_eq(rb_ring_add(r, ten[4], strlen(ten[4]), 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    {
        uint32_t *back = owners();
        moved = other = 0;
        for (size_t k = 0; k < NKEYS; k++) {
            moved += after[k] != back[k];
            other += after[k] != back[k] && back[k] != 4;
            /* The same membership again: the same table (order-independent). */
            ck_assert_uint_eq(back[k], before[k]);
        }
        printf("maglev 9->10: %.4f of keys moved (%.4f to other nodes than the new one)\n",
               (double)moved / NKEYS, (double)other / NKEYS);
        ck_assert_double_le((double)other / NKEYS, 0.03);
        free(back);
    }
    free(after);
    free(before);
    rb_ring_free(r);
}
END_TEST

START_TEST(test_maglev_table_sizes_and_load)
{
    char name[32];
    rb_ring_t *r, *l;
    rb_ring_stat_t st;

    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 100, &r), RB_OK);
    ck_assert_int_eq(rb_ring_set_mode(r, RB_RING_MAGLEV, 1000), RB_EINVAL);   /* not prime */
    ck_assert_int_eq(rb_ring_set_mode(r, RB_RING_MAGLEV, 16777259), RB_EINVAL);   /* > 2^24 */
    ck_assert_int_eq(rb_ring_mode(r), RB_RING_XXH3);
    ck_assert_int_eq(rb_ring_set_mode(r, RB_RING_MAGLEV, 16777213), RB_OK);
    ck_assert_int_eq(rb_ring_set_mode(r, RB_RING_MAGLEV, 0), RB_OK);
    ck_assert_uint_eq(rb_ring_point_count(r), 0);
    for (int i = 0; i < 656; i++) {
        snprintf(name, sizeof(name), "node-%04d", i);
        ck_assert_int_eq(rb_ring_add(r, name, strlen(name), 1), RB_OK);
        if (i == 654)
            ck_assert_uint_eq(rb_ring_point_count(r), 65537);
    }
    ck_assert_uint_eq(rb_ring_point_count(r), 131071);   /* 656 x 100 > 65537 */
    ck_assert_uint_eq(rb_ring_replicas(r), 0);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_int_eq(rb_ring_load(seg, &l), RB_OK);
    ck_assert_int_eq(rb_ring_mode(l), RB_RING_MAGLEV);
    ck_assert_uint_eq(rb_ring_replicas(l), 0);
    ck_assert_uint_eq(rb_ring_point_count(l), 131071);
    rb_ring_free(l);
    /* A fixed size stays whatever the membership, and survives a load. */
    ck_assert_int_eq(rb_ring_set_mode(r, RB_RING_MAGLEV, 65537), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_int_eq(rb_ring_load(seg, &l), RB_OK);
    ck_assert_uint_eq(rb_ring_replicas(l), 65537);
    ck_assert_int_eq(rb_ring_add(l, "zz", 2, 1), RB_OK);
    ck_assert_uint_eq(rb_ring_point_count(l), 65537);
    /* Back to xxh3 with the count in force: the vnode count was kept. */
    ck_assert_int_eq(rb_ring_set_mode(r, RB_RING_XXH3, 0), RB_OK);
    ck_assert_uint_eq(rb_ring_replicas(r), 100);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    ck_assert_int_eq(rb_ring_stat(seg, &st), RB_OK);
    ck_assert_uint_eq(st.points, 65600);
    ck_assert_int_eq(rb_ring_ranges(seg, NULL, 0, &(size_t){ 0 }), RB_EINVAL);
    rb_ring_free(l);
    rb_ring_free(r);
}
END_TEST

/* ---- slots ------------------------------------------------------------------ */

/* The balanced map: node i takes floor(16384 C_i / W) .. floor(16384
 * C_(i+1) / W) - 1. */
static void balanced(const uint32_t *w, int n, uint32_t *t)
{
    uint64_t total = 0, before = 0, s = 0;

    for (int i = 0; i < n; i++)
        total += w[i];
    for (int i = 0; i < n; i++) {
        before += w[i];
        for (; s < NSLOTS * before / total; s++)
            t[s] = (uint32_t)i;
    }
}

/* Every key (hash tags among them) is owned by the map's owner of its
 * Redis Cluster slot. */
static void check_keys_follow(const uint32_t *t)
{
    char key[160];
    rb_node_t n;

    for (unsigned long i = 0; i < NKEYS; i++) {
        size_t len = i % 3 == 0 ? (size_t)snprintf(key, sizeof(key), "{user%lu}.cart", i % 977)
                                : rb_test_key(key, sizeof(key), "s", i);
        ck_assert_int_eq(rb_ring_lookup(seg, key, len, &n), RB_OK);
        ck_assert_uint_eq(n.index, t[rbi_hash_keyslot(key, len)]);
    }
}

static void check_table(const uint32_t *want)
{
    size_t m;
    uint32_t *t = published_table(&m);

    ck_assert_uint_eq(m, NSLOTS);
    for (size_t s = 0; s < m; s++)
        ck_assert_msg(t[s] == want[s], "slot %zu: %u, want %u", s, t[s], want[s]);
    free(t);
}

static const uint32_t w5[] = { 1, 2, 1, 3, 1 };

START_TEST(test_slots_balanced_by_weight)
{
    rb_ring_t *r = table_ring(RB_RING_SLOTS, 0, ten, w5, 5);
    uint32_t t[NSLOTS];
    rb_ring_stat_t st;

    balanced(w5, 5, t);
    check_table(t);
    check_keys_follow(t);
    ck_assert_int_eq(rb_ring_stat(seg, &st), RB_OK);
    ck_assert_uint_eq(st.points, NSLOTS);
    ck_assert_uint_eq(st.replicas, 0);
    /* A new node: balanced again over six. */
    ck_assert_int_eq(rb_ring_add(r, "cache-05", 8, 2), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    balanced((const uint32_t[]){ 1, 2, 1, 3, 1, 2 }, 6, t);
    check_table(t);
    check_keys_follow(t);
    rb_ring_free(r);
}
END_TEST

START_TEST(test_slots_set_balance_and_errors)
{
    rb_ring_t *r = table_ring(RB_RING_SLOTS, 0, ten, w5, 5), *x;
    uint32_t t[NSLOTS];

    balanced(w5, 5, t);
    ck_assert_int_eq(rb_ring_set_slots(r, 0, 99, "cache-04", 8), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(r, 16000, 16383, "cache-00", 8), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(r, 5000, 5000, "cache-02", 8), RB_OK);
    for (int s = 0; s <= 99; s++)
        t[s] = 4;
    for (int s = 16000; s <= 16383; s++)
        t[s] = 0;
    t[5000] = 2;
    ck_assert_uint_eq(rb_ring_replicas(r), 1);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    check_table(t);
    check_keys_follow(t);
    /* Refused, and nothing changes. */
    ck_assert_int_eq(rb_ring_set_slots(r, 5, 4, "cache-00", 8), RB_EINVAL);
    ck_assert_int_eq(rb_ring_set_slots(r, 0, 16384, "cache-00", 8), RB_EINVAL);
    ck_assert_int_eq(rb_ring_set_slots(r, 0, 1, "nope", 4), RB_ENOENT);
    ck_assert_int_eq(rb_ring_set_slots(r, 0, 1, "", 0), RB_EINVAL);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    check_table(t);
    /* BALANCE: back to the weights. */
    ck_assert_int_eq(rb_ring_balance_slots(r), RB_OK);
    ck_assert_uint_eq(rb_ring_replicas(r), 0);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    balanced(w5, 5, t);
    check_table(t);
    /* Other modes have no slots to set. */
    ck_assert_int_eq(rb_ring_new(RB_RING_MAGLEV, 0, &x), RB_OK);
    ck_assert_int_eq(rb_ring_add(x, "a", 1, 1), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(x, 0, 1, "a", 1), RB_EINVAL);
    ck_assert_int_eq(rb_ring_balance_slots(x), RB_EINVAL);
    ck_assert_int_eq(rb_ring_set_mode(x, RB_RING_SLOTS, 1), RB_EINVAL);
    /* A switch drops an explicit map. */
    ck_assert_int_eq(rb_ring_set_slots(r, 0, 16383, "cache-01", 8), RB_OK);
    ck_assert_int_eq(rb_ring_set_mode(r, RB_RING_SLOTS, 0), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    check_table(t);
    rb_ring_free(x);
    rb_ring_free(r);
}
END_TEST

START_TEST(test_slots_add_and_remove_edit_an_explicit_map)
{
    rb_ring_t *r = table_ring(RB_RING_SLOTS, 0, ten + 1, NULL, 4);   /* cache-01 .. 04 */
    uint32_t t[NSLOTS];

    /* 01: 0-999 and 16000-16383, 02: 1000-8999, 03: 9000-12999, 04: the rest. */
    ck_assert_int_eq(rb_ring_set_slots(r, 0, 999, "cache-01", 8), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(r, 1000, 8999, "cache-02", 8), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(r, 9000, 12999, "cache-03", 8), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(r, 13000, 15999, "cache-04", 8), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(r, 16000, 16383, "cache-01", 8), RB_OK);
    /* An added node (before the others in name order) owns nothing. */
    ck_assert_int_eq(rb_ring_add(r, "cache-00", 8, 5), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    for (int s = 0; s < NSLOTS; s++)
        t[s] = s < 1000 || s >= 16000 ? 1 : s < 9000 ? 2 : s < 13000 ? 3 : 4;
    check_table(t);
    check_keys_follow(t);
    /* Removing 01: 0-999 pass to 02 (slot 1000's owner), 16000-16383 wrap
     * to slot 0's next owner not 01, which is 02 too. */
    ck_assert_int_eq(rb_ring_remove(r, "cache-01", 8), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    for (int s = 0; s < NSLOTS; s++)
        t[s] = s < 9000 || s >= 16000 ? 1 : s < 13000 ? 2 : 3;   /* 00 02 03 04 */
    check_table(t);
    /* Removing 03: its 9000-12999 pass to 04. */
    ck_assert_int_eq(rb_ring_remove(r, "cache-03", 8), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    for (int s = 0; s < NSLOTS; s++)
        t[s] = s < 9000 || s >= 16000 ? 1 : 2;   /* 00 02 04 */
    check_table(t);
    /* A re-weight keeps the map. */
    ck_assert_int_eq(rb_ring_set_weight(r, "cache-04", 8, 9), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    check_table(t);
    /* Removing 04 and then 02, the only owner left: balanced over 00. */
    ck_assert_int_eq(rb_ring_remove(r, "cache-04", 8), RB_OK);
    ck_assert_int_eq(rb_ring_remove(r, "cache-02", 8), RB_OK);
    ck_assert_uint_eq(rb_ring_replicas(r), 0);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    memset(t, 0, sizeof(t));
    check_table(t);
    rb_ring_free(r);
}
END_TEST

START_TEST(test_slots_load_restores_the_explicit_map)
{
    rb_ring_t *r = table_ring(RB_RING_SLOTS, 0, ten, w5, 5), *l;
    size_t m;
    uint32_t *t, *u;

    ck_assert_int_eq(rb_ring_set_slots(r, 10, 4000, "cache-03", 8), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, seg), RB_OK);
    t = published_table(&m);
    ck_assert_int_eq(rb_ring_load(seg, &l), RB_OK);
    ck_assert_int_eq(rb_ring_mode(l), RB_RING_SLOTS);
    ck_assert_uint_eq(rb_ring_replicas(l), 1);
    /* The loaded model goes on as the original would: an add owns nothing. */
    ck_assert_int_eq(rb_ring_add(l, "cache-99", 8, 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(l, seg), RB_OK);
    u = published_table(&m);
    ck_assert_uint_eq(m, NSLOTS);
    ck_assert_int_eq(memcmp(t, u, NSLOTS * sizeof(*t)), 0);
    check_keys_follow(t);
    /* An explicit map equal to the balanced one stays explicit. */
    ck_assert_int_eq(rb_ring_balance_slots(l), RB_OK);
    ck_assert_int_eq(rb_ring_set_slots(l, 0, 0, "cache-00", 8), RB_OK);
    ck_assert_int_eq(rb_ring_publish(l, seg), RB_OK);
    rb_ring_free(r);
    ck_assert_int_eq(rb_ring_load(seg, &r), RB_OK);
    ck_assert_uint_eq(rb_ring_replicas(r), 1);
    free(t);
    free(u);
    rb_ring_free(l);
    rb_ring_free(r);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("ring_table",
                        RB_TCASE("maglev", 120, setup, teardown,
                                 test_maglev_lookup_equals_paper_populate,
                                 test_maglev_weights_are_proportional,
                                 test_maglev_disruption_on_remove_and_add,
                                 test_maglev_table_sizes_and_load),
                        RB_TCASE("slots", 120, setup, teardown,
                                 test_slots_balanced_by_weight,
                                 test_slots_set_balance_and_errors,
                                 test_slots_add_and_remove_edit_an_explicit_map,
                                 test_slots_load_restores_the_explicit_map));
}
