/*
 * ring_source_map.c - `ring-source etcd`: the source thread's map of the
 * keys under the prefix and the views built from it (ring_source.h).
 *
 * The map keeps the keys of the schema ("mode", "node/<name>"), parsed,
 * sorted in etcd's byte order, and those of them the source cannot use
 * (a value that does not parse, a mode the ring cannot take, an unusable
 * name, any key with a NUL byte), marked skipped: each put of one is
 * logged, naming the key escaped, and the views count them (INFO).  A
 * foreign key is not kept at all.  Nothing put under the prefix makes
 * the map fail: only memory can.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "rbd_log.h"
#include "ring_mode.h"   /* lib: the mode table's facts (is it a table mode) */
#include "ring_source_impl.h"

void rbd_source_view_free(view_t *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->n; i++)
        free(v->m[i].name);
    for (size_t i = 0; i < v->nbad; i++)
        free(v->bad[i].name);
    free(v->m);
    free(v->bad);
    free(v);
}

/* etcd's key order: bytes, then length (a NUL byte is a byte like others). */
static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    return c != 0 ? c : (alen > blen) - (alen < blen);
}

static size_t map_find(const rbd_source_t *s, const char *key, size_t klen, int *found)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = key_cmp(s->map[mid].key, s->map[mid].klen, key, klen);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

void rbd_source_map_clear(rbd_source_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->map[i].key);
    s->n = 0;
}

/* Whether val (vlen bytes) is the word, then optional blanks, nothing else. */
static int only_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p == end;
}

/* A node's value "<weight> <state>": 1 and the fields, or 0. */
static int parse_node(const char *val, size_t vlen, uint32_t *weight, uint32_t *state)
{
    const char *end = val + vlen, *w0;
    unsigned long w;
    char *after;
    rb_node_state_t st;

    if (vlen == 0 || memchr(val, '\0', vlen) != NULL || val[0] < '0' || val[0] > '9')
        return 0;
    w = strtoul(val, &after, 10);
    if (after == val || w < 1 || w > RB_RING_MAX_WEIGHT || *after != ' ')
        return 0;
    w0 = after + 1;
    for (after = (char *)w0; after < end && *after != ' ' && *after != '\t' &&
                             *after != '\r' && *after != '\n'; after++)
        ;
    if (rb_node_state_parse(w0, (size_t)(after - w0), &st) != RB_OK || !only_blanks(after, end))
        return 0;
    *weight = (uint32_t)w;
    *state = (uint32_t)st;
    return 1;
}

/* Whether a ring takes mode m with replicas r as RING_SYNC's apply sets
 * them (ops.c: a table mode's r is its parameter, a maglev M prime, ...). */
static int mode_ok(rb_ring_mode_t m, uint32_t r)
{
    int table = rbi_ring_mode_is_table(m);
    rb_ring_t *ring = NULL;
    int ok = rb_ring_new(m, table ? 0 : r, &ring) == RB_OK &&
             (!table || r == 0 || rb_ring_set_mode(ring, m, r) == RB_OK);

    rb_ring_free(ring);
    return ok;
}

/* The mode's value "<mode> [<replicas>]": 1 and the fields, or 0. */
static int parse_mode(const char *val, size_t vlen, uint32_t *mode, uint32_t *replicas)
{
    const char *end = val + vlen, *p = val;
    unsigned long r = 0;
    rb_ring_mode_t m;
    char *after;

    if (memchr(val, '\0', vlen) != NULL)
        return 0;
    while (p < end && *p != ' ')
        p++;
    if (rb_ring_mode_parse(val, (size_t)(p - val), &m) != RB_OK)
        return 0;
    if (p < end && p[1] >= '0' && p[1] <= '9') {
        r = strtoul(p + 1, &after, 10);
        p = after;
    }
    /* A table mode's parameter is no replica count (maglev: a table size
     * up to its param_max, as RING.MODE takes it); mode_ok judges it. */
    if (r > (rbi_ring_mode_is_table(m) ? UINT32_MAX : RB_RING_MAX_REPLICAS) ||
        !only_blanks(p, end) || !mode_ok(m, (uint32_t)r))
        return 0;
    *mode = (uint32_t)m;
    *replicas = (uint32_t)r;
    return 1;
}

void rbd_source_escape(char *out, size_t cap, const char *b, size_t len)
{
    size_t w = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)b[i];
        if (w + 8 >= cap) {
            snprintf(out + w, cap - w, "...");
            return;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            out[w++] = (char)c;
        else
            w += (size_t)snprintf(out + w, cap - w, "\\x%02x", c);
    }
    out[w] = '\0';
}

/* What key (with its value) is to the source: ENTRY_MODE or ENTRY_NODE
 * with the fields in e; ENTRY_BAD with why; -1 for a foreign key, which
 * the source ignores (another tool's, or the guard key). */
static int classify(const char *key, size_t klen, const char *val, size_t vlen, entry_t *e,
                    char *why, size_t cap)
{
    char esc[64];

    rbd_source_escape(esc, sizeof(esc), val, vlen);
    if (memchr(key, '\0', klen) != NULL) {
        snprintf(why, cap, "a NUL byte in the key");
        return ENTRY_BAD;
    }
    if (klen == 4 && memcmp(key, "mode", 4) == 0) {
        snprintf(why, cap, "its value '%s' is not '<mode> <replicas>' (replicas 0..%d; "
                 "maglev: 0 or a prime size; slots: 0)", esc, RB_RING_MAX_REPLICAS);
        return parse_mode(val, vlen, &e->a, &e->b) ? ENTRY_MODE : ENTRY_BAD;
    }
    if (klen < 5 || memcmp(key, "node/", 5) != 0)
        return -1;
    if (klen == 5 || klen - 5 > RB_NODE_NAME_MAX) {
        if (klen == 5)
            snprintf(why, cap, "an empty node name");
        else
            snprintf(why, cap, "a node name longer than %d bytes", RB_NODE_NAME_MAX);
        return ENTRY_BAD;
    }
    snprintf(why, cap, "its value '%s' is not '<weight> <state>' (weight 1..%d, state up, "
             "down or drain)", esc, RB_RING_MAX_WEIGHT);
    return parse_node(val, vlen, &e->a, &e->b) ? ENTRY_NODE : ENTRY_BAD;
}

void rbd_source_note_skipped(rbd_source_t *s, const char *key, size_t klen, int64_t mod_rev,
                             const char *why, int warn)
{
    char esc[300], line[sizeof(s->st.skipped_last)];

    rbd_source_escape(esc, sizeof(esc), key, klen);
    snprintf(line, sizeof(line), "'%.100s%s' (mod_revision %lld): %s", s->opts.prefix, esc,
             (long long)mod_rev, why);
    pthread_mutex_lock(&s->mu);
    memcpy(s->st.skipped_last, line, sizeof(line));
    pthread_mutex_unlock(&s->mu);
    if (warn)
        rbd_log(LOG_WARNING, "ring source: etcd key %s; skipped (the ring is built without it)",
                line);
}

/* A key the source cannot use: a warning naming it (at most
 * SKIP_WARNINGS a load or batch, the rest counted into warn_held), and
 * the last one for INFO. */
static void warn_skipped(rbd_source_t *s, const char *key, size_t klen, int64_t mod_rev,
                         const char *why)
{
    int warn = s->warn_left > 0;

    if (warn)
        s->warn_left--;
    else
        s->warn_held++;
    rbd_source_note_skipped(s, key, klen, mod_rev, why, warn);
}

/* Those held back are said in one line, and the next load or batch may
 * warn SKIP_WARNINGS times (called before and after each). */
void rbd_source_warn_reset(rbd_source_t *s)
{
    if (s->warn_held > 0)
        rbd_log(LOG_WARNING, "ring source: %zu more etcd keys skipped (INFO "
                "etcd_keys_skipped)", s->warn_held);
    s->warn_left = SKIP_WARNINGS;
    s->warn_held = 0;
}

/* Puts (val != NULL) or deletes key: a key the source uses or cannot use
 * is kept (the latter with a warning), a foreign one is not.  0, or -1
 * out of memory. */
int rbd_source_map_set(rbd_source_t *s, const char *key, size_t klen, const char *val,
                   size_t vlen, int64_t mod_rev)
{
    int found, kind;
    size_t at = map_find(s, key, klen, &found);
    entry_t e = { .mod_rev = mod_rev };
    char why[200];

    kind = val != NULL ? classify(key, klen, val, vlen, &e, why, sizeof(why)) : -1;
    if (kind < 0) {   /* a delete, or a foreign key */
        if (found) {
            free(s->map[at].key);
            memmove(&s->map[at], &s->map[at + 1], (s->n - at - 1) * sizeof(*s->map));
            s->n--;
        }
        return 0;
    }
    if (kind == ENTRY_BAD)
        warn_skipped(s, key, klen, mod_rev, why);
    if (!found) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 64;
            entry_t *m = realloc(s->map, cap * sizeof(*m));
            if (m == NULL)
                return -1;
            s->map = m;
            s->cap = cap;
        }
        if ((e.key = malloc(klen + 1)) == NULL)
            return -1;
        memcpy(e.key, key, klen);
        e.key[klen] = '\0';
        e.klen = klen;
        memmove(&s->map[at + 1], &s->map[at], (s->n - at) * sizeof(*s->map));
        s->n++;
    } else {
        e.key = s->map[at].key;
        e.klen = klen;
    }
    e.kind = kind;
    s->map[at] = e;
    return 0;
}

/* A skipped key e of the map that is a node whose name is usable (its
 * value is not) joins v->bad, so that a change of that node replaces it.
 * 0: out of memory (v freed). */
static int add_bad_node(view_t *v, const entry_t *e)
{
    member_t *b = &v->bad[v->nbad];

    if (e->klen <= 5 || e->klen - 5 > RB_NODE_NAME_MAX || memcmp(e->key, "node/", 5) != 0 ||
        memchr(e->key, '\0', e->klen) != NULL)
        return 1;
    if ((b->name = strdup(e->key + 5)) == NULL) {
        rbd_source_view_free(v);
        return 0;
    }
    b->len = e->klen - 5;
    b->mod_rev = e->mod_rev;
    v->nbad++;
    return 1;
}

/* The membership the map holds, as of revision rev.  NULL: out of memory. */
view_t *rbd_source_view_build(const rbd_source_t *s, int64_t rev)
{
    view_t *v = calloc(1, sizeof(*v));

    if (v == NULL || (v->m = calloc(s->n ? s->n : 1, sizeof(*v->m))) == NULL ||
        (v->bad = calloc(s->n ? s->n : 1, sizeof(*v->bad))) == NULL) {
        if (v != NULL)
            free(v->m);
        free(v);
        return NULL;
    }
    v->revision = rev;
    v->mode = s->dmode;
    v->replicas = s->dreplicas;
    for (size_t i = 0; i < s->n; i++) {
        const entry_t *e = &s->map[i];
        member_t *m = &v->m[v->n];
        if (e->kind == ENTRY_BAD) {
            v->skipped++;
            if (e->klen == 4 && memcmp(e->key, "mode", 4) == 0)
                v->mode_rev = e->mod_rev;
            else if (!add_bad_node(v, e))
                return NULL;
        } else if (e->kind == ENTRY_MODE) {
            v->mode = (rb_ring_mode_t)e->a;
            v->replicas = e->b;
            v->mode_rev = e->mod_rev;
        } else {
            if ((m->name = strdup(e->key + 5)) == NULL) {
                rbd_source_view_free(v);
                return NULL;
            }
            m->len = e->klen - 5;
            m->weight = e->a;
            m->state = e->b;
            m->mod_rev = e->mod_rev;
            v->n++;
        }
    }
    return v;
}

