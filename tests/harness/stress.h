/*
 * stress.h - torn-read stress, shared by check_threads (writer and readers
 * are threads of one process, so ThreadSanitizer sees both sides) and
 * check_stress (ringbloomd is the writer, readers are other processes).
 *
 * The writer walks the ring through random memberships (1 to max_nodes
 * nodes of random weight 1-4, the size drifting towards a random target,
 * nodes flipping between up, down and draining: written in place, each
 * the next version as any change)
 * and, between ring changes, adds batches to three filters: "stable"
 * (never cleared), "reset" (cleared every ST_RESET_EVERY changes) and
 * "aging" (3 generations of 500 keys, rotating when full).
 *
 * Before it makes ring version v visible it computes, on a private copy of
 * the same membership, the owner of every probe key and stores them as
 * expected[v] (then v_ready = v, release).  A reader checks every answer:
 * the node it got must be expected[answer.version][key], and the version
 * must be one the writer prepared.  A torn table, a mixed read of two
 * versions or a stale cached view would fail that.  Bloom answers are
 * checked against what was acknowledged: every acknowledged key of
 * "stable", of the current epoch of "reset", and of an "aging" batch whose
 * generation cannot have been cleared yet (rotations < rotations at the
 * batch + generations) must be present; keys of a reset epoch and keys
 * never added are counted as hits and must stay within the false-positive
 * bound.
 */
#ifndef RB_STRESS_H
#define RB_STRESS_H

#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringbloom.h"

#define ST_KEYS        64        /* probe keys of the ring */
#define ST_MAXV        32768     /* ring versions one run may prepare */
#define ST_POOL        1200      /* node names node-0000 ... */
#define ST_EPOCHS      8192      /* resets one run may do */
#define ST_BATCHES     65536
#define ST_BATCH       32        /* keys per filter per ring change */
#define ST_READERS     4
#define ST_GENERATIONS 3
#define ST_RESET_EVERY 25
#define ST_NO_OWNER    0xFFFFu

enum { ST_STABLE, ST_RESET, ST_AGING, ST_FILTERS };
static const char *const st_filter_name[ST_FILTERS] = { "stable", "reset", "aging" };

/* Reserve parameters of the three filters (daemon: the same as BF.RESERVE). */
#define ST_STABLE_P   0.001
#define ST_STABLE_CAP 200000
#define ST_RESET_P    0.001
#define ST_RESET_CAP  1000
#define ST_AGING_P    0.01
#define ST_AGING_CAP  500

typedef struct st_reader_stats {
    uint64_t ring_checked, ring_invalid, ring_errors, max_retries;
    uint64_t versions_lo, versions_hi;           /* range of versions answered from */
    uint64_t acked_checked, acked_missed;        /* stable + current epoch + live aging */
    uint64_t stale_checked, stale_hits;          /* keys of an epoch reset since */
    uint64_t never_checked, never_hits;          /* keys never added */
    uint64_t aging_skipped;                      /* generation may be cleared: no claim */
    uint64_t bloom_errors;
    uint64_t max_gap_ns;                         /* longest time without an answer */
    char first_bad[256];
} st_reader_stats_t;

typedef struct st_shared {
    _Atomic int stop, go;
    _Atomic uint64_t v_first, v_ready;
    _Atomic uint64_t stable_acked;
    _Atomic uint64_t reset_seq;                  /* 2 x resets acked; odd: one in flight */
    _Atomic uint64_t reset_acked[ST_EPOCHS];     /* keys r:<e>:0.. acked in epoch e */
    _Atomic uint64_t aging_batches;
    uint64_t aging_rot_before[ST_BATCHES];       /* rotations before batch b was sent */
    uint16_t expected[ST_MAXV][ST_KEYS];
    st_reader_stats_t r[ST_READERS];
    /* the writer's figures */
    uint64_t changes, adds, removes, weights, states, max_nodes_seen, resets, rotations,
        keys_added;
    double seconds;
} st_shared_t;

/* How the writer makes its changes visible (library or daemon). */
typedef struct st_ops {
    /* Make the model (already changed by op on `name`) the published ring. */
    int (*ring)(void *ctx, char op, const char *name, uint32_t weight, rb_ring_t *model);
    int64_t (*bf_add)(void *ctx, int filter, const rb_key_t *keys, size_t n);
    int (*bf_reset)(void *ctx, int filter);
    void *ctx;
} st_ops_t;

static inline uint64_t st_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static inline uint64_t st_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline size_t st_probe_key(char *buf, size_t cap, unsigned k)
{
    return (size_t)snprintf(buf, cap, "probe-key-%u", k);
}

/* ---- writer ---------------------------------------------------------------- */

static inline int st_fail(const char *what, int rc)
{
    fprintf(stderr, "stress writer: %s failed: %d\n", what, rc);
    return -1;
}

/* Adds one batch to every filter and does the periodic reset. */
static inline int st_writer_bloom(st_shared_t *sh, const st_ops_t *ops, rb_bloom_t *aging_view)
{
    char buf[ST_BATCH][48];
    rb_key_t keys[ST_BATCH];
    uint64_t base, e, b;
    rb_bloom_stat_t st;
    int64_t rc;

    base = atomic_load(&sh->stable_acked);
    for (unsigned i = 0; i < ST_BATCH; i++) {
        keys[i].ptr = buf[i];
        keys[i].len = (size_t)snprintf(buf[i], sizeof(buf[i]), "s:%llu",
                                       (unsigned long long)(base + i));
    }
    if ((rc = ops->bf_add(ops->ctx, ST_STABLE, keys, ST_BATCH)) < 0)
        return st_fail("stable add", (int)rc);
    atomic_store_explicit(&sh->stable_acked, base + ST_BATCH, memory_order_release);

    e = atomic_load(&sh->reset_seq) / 2;
    base = atomic_load(&sh->reset_acked[e]);
    for (unsigned i = 0; i < ST_BATCH; i++)
        keys[i].len = (size_t)snprintf(buf[i], sizeof(buf[i]), "r:%llu:%llu",
                                       (unsigned long long)e, (unsigned long long)(base + i));
    if ((rc = ops->bf_add(ops->ctx, ST_RESET, keys, ST_BATCH)) < 0)
        return st_fail("reset add", (int)rc);
    atomic_store_explicit(&sh->reset_acked[e], base + ST_BATCH, memory_order_release);
    if (sh->changes % ST_RESET_EVERY == ST_RESET_EVERY - 1 && e + 1 < ST_EPOCHS) {
        atomic_store(&sh->reset_seq, 2 * e + 1);   /* in flight: readers make no claim */
        if ((rc = ops->bf_reset(ops->ctx, ST_RESET)) != RB_OK)
            return st_fail("reset", (int)rc);
        atomic_store(&sh->reset_seq, 2 * e + 2);
        sh->resets++;
    }

    b = atomic_load(&sh->aging_batches);
    if (b < ST_BATCHES) {
        if ((rc = rb_bloom_info(aging_view, &st)) != RB_OK)
            return st_fail("aging info", (int)rc);
        sh->aging_rot_before[b] = st.rotations;
        for (unsigned i = 0; i < ST_BATCH; i++)
            keys[i].len = (size_t)snprintf(buf[i], sizeof(buf[i]), "a:%llu",
                                           (unsigned long long)(b * ST_BATCH + i));
        if ((rc = ops->bf_add(ops->ctx, ST_AGING, keys, ST_BATCH)) < 0)
            return st_fail("aging add", (int)rc);
        atomic_store_explicit(&sh->aging_batches, b + 1, memory_order_release);
    }
    sh->keys_added += 3 * ST_BATCH;
    return 0;
}

/* Runs for `seconds` (and on, as the loop says); `view` reads the published ring (the writer's own
 * segment, or a read-only attach of the daemon's).  Returns 0, or -1 after
 * printing why. */
static inline int st_writer(st_shared_t *sh, const st_ops_t *ops, const rb_segment_t *view,
                            rb_bloom_t *aging_view, uint32_t replicas, uint32_t max_nodes,
                            double seconds, uint64_t seed)
{
    static uint8_t in[ST_POOL];
    static uint8_t weight[ST_POOL];
    static uint8_t state[ST_POOL];   /* rb_node_state_t of a present node */
    uint32_t present[ST_POOL], n = 0, target = 1, ndown = 0;
    uint64_t targets = 0;
    rb_segment_t *priv;
    rb_ring_t *model;
    rb_ring_stat_t rs;
    rb_bloom_stat_t bs;
    uint64_t t0 = st_now_ns(), v;
    char name[32], key[48];
    int rc;

    memset(in, 0, sizeof(in));
    memset(state, 0, sizeof(state));
    if (max_nodes > ST_POOL)
        max_nodes = ST_POOL;
    if ((rc = rb_ring_new(RB_RING_XXH3, replicas, &model)) != RB_OK)
        return st_fail("rb_ring_new", rc);
    if ((rc = rb_segment_create(NULL, NULL, &priv)) != RB_OK)
        return st_fail("private segment", rc);
    if ((rc = rb_ring_stat(view, &rs)) != RB_OK)
        return st_fail("rb_ring_stat", rc);
    v = rs.version + 1;
    atomic_store(&sh->v_first, v);
    /* Past `seconds` it goes on until the ring has once held max_nodes
     * (the first target), at most 4 x seconds: on a loaded machine (a
     * sanitizer build beside other work) the largest membership is still
     * exercised, whatever the throughput. */
    while (!atomic_load(&sh->stop) && v - atomic_load(&sh->v_first) < ST_MAXV &&
           ((double)(st_now_ns() - t0) / 1e9 < seconds ||
            (sh->max_nodes_seen < max_nodes && (double)(st_now_ns() - t0) / 1e9 < 4 * seconds))) {
        uint64_t r = st_rand(&seed);
        uint32_t id, w;
        char op;

        /* Targets cycle: the largest membership, a small one, a random
         * one; a target is kept until reached. */
        if (sh->changes == 0 || n == target) {
            uint64_t which = targets++ % 3;
            target = which == 0 ? max_nodes
                   : which == 1 ? 1 + (uint32_t)(st_rand(&seed) % 10)
                   : 1 + (uint32_t)(st_rand(&seed) % max_nodes);
        }
        if (n == 0 || (n < target && r % 4 != 0)) {
            do
                id = (uint32_t)(st_rand(&seed) % ST_POOL);
            while (in[id]);
            op = 'a';
        } else if (n > 1 && n > target && r % 4 != 0) {
            id = present[st_rand(&seed) % n];
            op = 'r';
        } else {
            id = present[st_rand(&seed) % n];
            /* Half of the other changes flip a node's state (in place,
             * latch.h Q1), keeping one node up (else lookups are empty). */
            op = r % 8 < 4 && (state[id] != RB_NODE_UP || n - ndown >= 2) ? 's' : 'w';
        }
        if (op == 'r' && state[id] == RB_NODE_UP && n - ndown == 1)
            op = 'w';   /* the last node up stays */
        snprintf(name, sizeof(name), "node-%04u", id);
        w = 1 + (uint32_t)(st_rand(&seed) % 4);
        if (op == 'w' && w == weight[id])
            w = w % 4 + 1;
        if (op == 's')   /* the new state travels as the weight */
            w = state[id] != RB_NODE_UP ? RB_NODE_UP
              : r % 16 < 12 ? RB_NODE_DOWN : RB_NODE_DRAIN;
        /* The model, then the answers it gives, then the change itself. */
        rc = op == 'a' ? rb_ring_add(model, name, strlen(name), w)
           : op == 'r' ? rb_ring_remove(model, name, strlen(name))
           : op == 's' ? rb_ring_set_state(model, name, strlen(name), (rb_node_state_t)w)
           : rb_ring_set_weight(model, name, strlen(name), w);
        if (rc != RB_OK)
            return st_fail("model change", rc);
        if ((rc = rb_ring_publish(model, priv)) != RB_OK)
            return st_fail("private publish", rc);
        for (unsigned k = 0; k < ST_KEYS; k++) {
            rb_node_t node;
            size_t len = st_probe_key(key, sizeof(key), k);
            rc = rb_ring_lookup(priv, key, len, &node);
            if (rc != RB_OK)
                return st_fail("private lookup", rc);
            sh->expected[v - atomic_load(&sh->v_first)][k] = (uint16_t)atoi(node.name + 5);
        }
        atomic_store_explicit(&sh->v_ready, v, memory_order_release);
        if ((rc = ops->ring(ops->ctx, op, name, w, model)) != RB_OK)
            return st_fail("ring change", rc);
        if ((rc = rb_ring_stat(view, &rs)) != RB_OK)
            return st_fail("rb_ring_stat", rc);
        if (rs.version != v) {
            fprintf(stderr, "stress writer: published version %llu, expected %llu\n",
                    (unsigned long long)rs.version, (unsigned long long)v);
            return -1;
        }
        v++;
        if (op == 'a') {
            in[id] = 1;
            weight[id] = (uint8_t)w;
            present[n++] = id;
            sh->adds++;
        } else if (op == 'r') {
            in[id] = 0;
            ndown -= state[id] != RB_NODE_UP;
            state[id] = RB_NODE_UP;
            for (uint32_t i = 0; i < n; i++)
                if (present[i] == id) {
                    present[i] = present[--n];
                    break;
                }
            sh->removes++;
        } else if (op == 's') {
            ndown = ndown - (state[id] != RB_NODE_UP) + (w != RB_NODE_UP);
            state[id] = (uint8_t)w;
            sh->states++;
        } else {
            weight[id] = (uint8_t)w;
            sh->weights++;
        }
        if (n > sh->max_nodes_seen)
            sh->max_nodes_seen = n;
        sh->changes++;
        if (st_writer_bloom(sh, ops, aging_view) != 0)
            return -1;
        atomic_store(&sh->go, 1);
    }
    if (rb_bloom_info(aging_view, &bs) == RB_OK)
        sh->rotations = bs.rotations;
    sh->seconds = (double)(st_now_ns() - t0) / 1e9;
    rb_ring_free(model);
    rb_segment_close(priv);
    return 0;
}

/* ---- readers --------------------------------------------------------------- */

#define ST_BAD(st, ...)                                                        \
    do {                                                                       \
        if ((st)->first_bad[0] == '\0')                                        \
            snprintf((st)->first_bad, sizeof((st)->first_bad), __VA_ARGS__);  \
    } while (0)

static inline void st_check_ring(st_shared_t *sh, st_reader_stats_t *st, const rb_segment_t *seg,
                                 uint64_t *seed)
{
    unsigned k = (unsigned)(st_rand(seed) % ST_KEYS);
    char key[48];
    size_t len = st_probe_key(key, sizeof(key), k);
    uint64_t vf, vr;
    rb_node_t node;
    int rc = rb_ring_lookup(seg, key, len, &node);

    if (rbi_ring_last_retries > st->max_retries)
        st->max_retries = rbi_ring_last_retries;
    st->ring_checked++;
    if (rc != RB_OK) {
        st->ring_errors++;
        ST_BAD(st, "ring lookup of %s: error %d", key, rc);
        return;
    }
    vf = atomic_load(&sh->v_first);
    vr = atomic_load_explicit(&sh->v_ready, memory_order_acquire);
    if (node.version < vf || node.version > vr) {
        st->ring_invalid++;
        ST_BAD(st, "answer from version %llu, prepared %llu..%llu",
               (unsigned long long)node.version, (unsigned long long)vf,
               (unsigned long long)vr);
        return;
    }
    if (node.version < st->versions_lo || st->versions_lo == 0)
        st->versions_lo = node.version;
    if (node.version > st->versions_hi)
        st->versions_hi = node.version;
    if (strncmp(node.name, "node-", 5) != 0 || node.name_len != 9 ||
        sh->expected[node.version - vf][k] != (uint16_t)atoi(node.name + 5)) {
        st->ring_invalid++;
        ST_BAD(st, "version %llu key %u: got %.40s, expected node-%04u",
               (unsigned long long)node.version, k, node.name,
               (unsigned)sh->expected[node.version - vf][k]);
    }
}

/* contains, counting errors; -1 on error. */
static inline int st_contains(st_reader_stats_t *st, rb_bloom_t *bf, const char *key)
{
    int rc = rb_bloom_contains(bf, key, strlen(key));
    if (rc < 0) {
        st->bloom_errors++;
        ST_BAD(st, "contains %s: error %d", key, rc);
        return -1;
    }
    return rc;
}

static inline void st_check_bloom(st_shared_t *sh, st_reader_stats_t *st, rb_bloom_t *const *bf,
                                  uint64_t *seed)
{
    char key[48], old[48];
    uint64_t n, s0, s1, e, b;
    int c, c_old = 0, have_old = 0;

    n = atomic_load_explicit(&sh->stable_acked, memory_order_acquire);
    if (n > 0) {
        snprintf(key, sizeof(key), "s:%llu", (unsigned long long)(st_rand(seed) % n));
        if ((c = st_contains(st, bf[ST_STABLE], key)) >= 0) {
            st->acked_checked++;
            if (c != 1) {
                st->acked_missed++;
                ST_BAD(st, "acknowledged %s missing from stable", key);
            }
        }
    }
    snprintf(key, sizeof(key), "x:%llu", (unsigned long long)st_rand(seed));
    if ((c = st_contains(st, bf[ST_STABLE], key)) >= 0) {
        st->never_checked++;
        st->never_hits += (uint64_t)c;
    }

    s0 = atomic_load(&sh->reset_seq);
    if ((s0 & 1) == 0) {
        e = s0 / 2;
        n = atomic_load_explicit(&sh->reset_acked[e], memory_order_acquire);
        if (e > 0) {
            uint64_t eo = st_rand(seed) % e, no = atomic_load(&sh->reset_acked[eo]);
            if (no > 0) {
                snprintf(old, sizeof(old), "r:%llu:%llu", (unsigned long long)eo,
                         (unsigned long long)(st_rand(seed) % no));
                c_old = st_contains(st, bf[ST_RESET], old);
                have_old = c_old >= 0;
            }
        }
        c = -1;
        if (n > 0) {
            snprintf(key, sizeof(key), "r:%llu:%llu", (unsigned long long)e,
                     (unsigned long long)(st_rand(seed) % n));
            c = st_contains(st, bf[ST_RESET], key);
        }
        s1 = atomic_load(&sh->reset_seq);
        if (s1 == s0) {
            if (c >= 0) {
                st->acked_checked++;
                if (c != 1) {
                    st->acked_missed++;
                    ST_BAD(st, "acknowledged %s missing from reset (epoch %llu)", key,
                           (unsigned long long)e);
                }
            }
            if (have_old) {
                st->stale_checked++;
                st->stale_hits += (uint64_t)c_old;
            }
        }
    }

    b = atomic_load_explicit(&sh->aging_batches, memory_order_acquire);
    if (b > 0) {
        rb_bloom_stat_t bs;
        uint64_t pick = st_rand(seed) % b, rot = sh->aging_rot_before[pick];
        snprintf(key, sizeof(key), "a:%llu",
                 (unsigned long long)(pick * ST_BATCH + st_rand(seed) % ST_BATCH));
        c = st_contains(st, bf[ST_AGING], key);
        if (c >= 0 && rb_bloom_info(bf[ST_AGING], &bs) == RB_OK) {
            /* Rotations only grow: fewer than rot + generations now means
             * fewer when the query read the filter, so the batch's
             * generation was still there. */
            if (bs.rotations < rot + ST_GENERATIONS) {
                st->acked_checked++;
                if (c != 1) {
                    st->acked_missed++;
                    ST_BAD(st, "acknowledged %s missing from aging (rotations %llu, at add %llu)",
                           key, (unsigned long long)bs.rotations, (unsigned long long)rot);
                }
            } else {
                st->aging_skipped++;
            }
        }
    }
}

/* One reader until sh->stop. */
static inline void st_reader(st_shared_t *sh, int idx, const rb_segment_t *seg,
                             rb_bloom_t *const *bf, uint64_t seed)
{
    st_reader_stats_t *st = &sh->r[idx];
    uint64_t last = st_now_ns();

    while (!atomic_load(&sh->go) && !atomic_load(&sh->stop)) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    last = st_now_ns();
    for (uint64_t i = 0; !atomic_load(&sh->stop); i++) {
        uint64_t t;
        st_check_ring(sh, st, seg, &seed);
        if (i % 4 == 0)
            st_check_bloom(sh, st, bf, &seed);
        t = st_now_ns();
        if (t - last > st->max_gap_ns)
            st->max_gap_ns = t - last;
        last = t;
    }
}

/* ---- the verdict ------------------------------------------------------------ */

typedef struct st_totals {
    uint64_t ring_checked, ring_invalid, ring_errors, max_retries, acked_checked, acked_missed;
    uint64_t stale_checked, stale_hits, never_checked, never_hits, bloom_errors, max_gap_ns;
    uint64_t min_ring_checked;
    const char *first_bad;
} st_totals_t;

static inline st_totals_t st_sum(const st_shared_t *sh, int readers)
{
    st_totals_t t;

    memset(&t, 0, sizeof(t));
    t.first_bad = "";
    t.min_ring_checked = UINT64_MAX;
    for (int i = 0; i < readers; i++) {
        const st_reader_stats_t *r = &sh->r[i];
        t.ring_checked += r->ring_checked;
        t.ring_invalid += r->ring_invalid;
        t.ring_errors += r->ring_errors;
        t.acked_checked += r->acked_checked;
        t.acked_missed += r->acked_missed;
        t.stale_checked += r->stale_checked;
        t.stale_hits += r->stale_hits;
        t.never_checked += r->never_checked;
        t.never_hits += r->never_hits;
        t.bloom_errors += r->bloom_errors;
        if (r->max_retries > t.max_retries)
            t.max_retries = r->max_retries;
        if (r->max_gap_ns > t.max_gap_ns)
            t.max_gap_ns = r->max_gap_ns;
        if (r->ring_checked < t.min_ring_checked)
            t.min_ring_checked = r->ring_checked;
        if (t.first_bad[0] == '\0')
            t.first_bad = r->first_bad;
    }
    return t;
}

static inline void st_print(const char *tag, const st_shared_t *sh, const st_totals_t *t,
                            int readers)
{
    printf("%s: %.1f s, %llu ring changes (%llu adds, %llu removes, %llu weights, %llu state "
           "flips; up to %llu nodes), %llu Bloom keys added, %llu resets, %llu rotations\n",
           tag, sh->seconds, (unsigned long long)sh->changes, (unsigned long long)sh->adds,
           (unsigned long long)sh->removes, (unsigned long long)sh->weights,
           (unsigned long long)sh->states,
           (unsigned long long)sh->max_nodes_seen, (unsigned long long)sh->keys_added,
           (unsigned long long)sh->resets, (unsigned long long)sh->rotations);
    printf("%s: %d readers: %llu ring answers checked (fewest per reader %llu), %llu invalid, "
           "%llu errors, max retries %llu, longest wait for an answer %.2f ms\n",
           tag, readers, (unsigned long long)t->ring_checked,
           (unsigned long long)t->min_ring_checked, (unsigned long long)t->ring_invalid,
           (unsigned long long)t->ring_errors, (unsigned long long)t->max_retries,
           (double)t->max_gap_ns / 1e6);
    printf("%s: Bloom: %llu acknowledged keys checked, %llu missing; reset epochs: %llu of "
           "%llu old keys hit; never added: %llu of %llu hit; %llu errors\n",
           tag, (unsigned long long)t->acked_checked, (unsigned long long)t->acked_missed,
           (unsigned long long)t->stale_hits, (unsigned long long)t->stale_checked,
           (unsigned long long)t->never_hits, (unsigned long long)t->never_checked,
           (unsigned long long)t->bloom_errors);
    if (t->first_bad[0] != '\0')
        printf("%s: first bad answer: %s\n", tag, t->first_bad);
}

/* A count of false positives over `checked` tries at rate p stays below
 * this bound (mean + 6 sigma + 5) unless something is wrong. */
static inline uint64_t st_fp_bound(uint64_t checked, double p)
{
    double mean = (double)checked * p;
    return (uint64_t)(mean + 6 * sqrt(mean) + 5);
}

/* A positive number from the environment variable name, else dflt. */
static inline double st_env_num(const char *name, double dflt)
{
    const char *s = getenv(name);
    return s != NULL && atof(s) > 0 ? atof(s) : dflt;
}

/* The verdict of a run, once the writer (status wrc) and the readers are
 * done: prints the figures, then asserts that no answer was invalid and no
 * acknowledged key missing, that false positives stay within their bounds,
 * and that everyone made progress: the writer went through at least
 * min_changes versions, resets and rotations, every reader checked at
 * least min_checked answers and never waited 2 s for one. */
static inline void st_verdict(const char *tag, const st_shared_t *sh, int readers, int wrc,
                              uint64_t min_changes, uint64_t min_checked)
{
    st_totals_t t = st_sum(sh, readers);

    st_print(tag, sh, &t, readers);
    fflush(stdout);
    ck_assert_int_eq(wrc, 0);
    ck_assert_uint_gt(sh->states, 0);   /* state flips were among the changes */
    ck_assert_uint_eq(t.ring_invalid, 0);
    ck_assert_uint_eq(t.ring_errors, 0);
    ck_assert_uint_eq(t.acked_missed, 0);
    ck_assert_uint_eq(t.bloom_errors, 0);
    ck_assert_uint_le(t.stale_hits, st_fp_bound(t.stale_checked, ST_RESET_P));
    ck_assert_uint_le(t.never_hits, st_fp_bound(t.never_checked, ST_STABLE_P));
    ck_assert_uint_ge(sh->changes, min_changes);
    ck_assert_uint_ge(sh->resets, 2);
    ck_assert_uint_ge(sh->rotations, 2);
    ck_assert_uint_ge(t.min_ring_checked, min_checked);
    ck_assert_uint_gt(t.stale_checked, 0);
    ck_assert_uint_lt(t.max_gap_ns, 2000000000u);
}

#endif /* RB_STRESS_H */
