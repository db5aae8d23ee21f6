/*
 * ring_source.c - `ring-source etcd` (ring_source.h): the thread that
 * follows the ring's keys in etcd, the event loop's side that publishes
 * each membership it read (a RING_SYNC op), and RING.* changes made as
 * etcd transactions.
 *
 * Threads: the source thread owns its etcd client (watch_client) and the
 * key map; the event loop owns the write client and `applied`.  They meet
 * under `mu` only: the thread leaves its newest view in `latest` (the
 * loop takes it), and the status.  An eventfd wakes the loop.
 *
 * Why a view is rebuilt from nothing and not patched: the table must be
 * a function of the membership alone, so that hosts that applied the same
 * revision through different histories (a restart, a compaction, a
 * reload) publish the same bytes.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "etcd.h"
#include "rbd_log.h"
#include "ring_source.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define PROBE_MS       3000   /* a watch this quiet is checked by a range */
#define APPLY_WAIT_MS  2000   /* a change waits this long to be applied here */

typedef struct entry {          /* one key under the prefix, as etcd has it */
    char *key, *val;
    size_t vlen;
    int64_t mod_rev;
} entry_t;

typedef struct member {
    char *name;
    size_t len;
    uint32_t weight, state;
    int64_t mod_rev;
} member_t;

typedef struct view {           /* the membership as of one revision */
    int64_t revision;
    rb_ring_mode_t mode;
    uint32_t replicas;
    int64_t mode_rev;           /* 0: no mode key (the daemon's defaults) */
    member_t *m;                /* in key order */
    size_t n;
} view_t;

struct rbd_source {
    const char **eps;
    char *ep_buf;
    rbd_etcd_opts_t opts;
    rbd_etcd_t *watch_client, *write_client;
    rb_ring_mode_t dmode;
    uint32_t dreplicas;
    pthread_t th;
    int started;
    atomic_int stop;
    int efd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    view_t *latest;             /* under mu: the thread's newest, not yet taken */
    rbd_source_status_t st;     /* under mu */
    view_t *applied;            /* loop: what the published table is of */
    entry_t *map;               /* thread: sorted by key */
    size_t n, cap;
};

static void view_free(view_t *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->n; i++)
        free(v->m[i].name);
    free(v->m);
    free(v);
}

/* ---- the thread's key map ------------------------------------------------------- */

static size_t map_find(const rbd_source_t *s, const char *key, int *found)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(s->map[mid].key, key);
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

static void map_clear(rbd_source_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->map[i].key);
        free(s->map[i].val);
    }
    s->n = 0;
}

/* Puts (val != NULL) or deletes key.  0, or -1 out of memory. */
static int map_set(rbd_source_t *s, const char *key, const char *val, size_t vlen,
                   int64_t mod_rev)
{
    int found;
    size_t at = map_find(s, key, &found);
    char *v;

    if (val == NULL) {
        if (found) {
            free(s->map[at].key);
            free(s->map[at].val);
            memmove(&s->map[at], &s->map[at + 1], (s->n - at - 1) * sizeof(*s->map));
            s->n--;
        }
        return 0;
    }
    if ((v = malloc(vlen + 1)) == NULL)
        return -1;
    memcpy(v, val, vlen);
    v[vlen] = '\0';
    if (!found) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 64;
            entry_t *m = realloc(s->map, cap * sizeof(*m));
            if (m == NULL) {
                free(v);
                return -1;
            }
            s->map = m;
            s->cap = cap;
        }
        memmove(&s->map[at + 1], &s->map[at], (s->n - at) * sizeof(*s->map));
        if ((s->map[at].key = strdup(key)) == NULL) {
            memmove(&s->map[at], &s->map[at + 1], (s->n - at) * sizeof(*s->map));
            free(v);
            return -1;
        }
        s->map[at].val = NULL;
        s->n++;
    }
    free(s->map[at].val);
    s->map[at].val = v;
    s->map[at].vlen = vlen;
    s->map[at].mod_rev = mod_rev;
    return 0;
}

/* A node's value "<weight> <state>": 1 and the fields, or 0 (ignored, on
 * every host alike, with a warning). */
static int parse_node(const char *val, uint32_t *weight, uint32_t *state)
{
    char word[16];
    unsigned long w;
    char *end;
    rb_node_state_t st;

    w = strtoul(val, &end, 10);
    if (end == val || w < 1 || w > RB_RING_MAX_WEIGHT || *end != ' ' ||
        sscanf(end + 1, "%15s", word) != 1 || rb_node_state_parse(word, strlen(word), &st) != RB_OK)
        return 0;
    *weight = (uint32_t)w;
    *state = (uint32_t)st;
    return 1;
}

/* The membership the map holds, as of revision rev.  NULL: out of memory. */
static view_t *view_build(const rbd_source_t *s, int64_t rev)
{
    view_t *v = calloc(1, sizeof(*v));

    if (v == NULL || (v->m = calloc(s->n ? s->n : 1, sizeof(*v->m))) == NULL) {
        free(v);
        return NULL;
    }
    v->revision = rev;
    v->mode = s->dmode;
    v->replicas = s->dreplicas;
    for (size_t i = 0; i < s->n; i++) {
        const entry_t *e = &s->map[i];
        member_t *m = &v->m[v->n];
        if (strcmp(e->key, "mode") == 0) {
            char word[32];
            unsigned long r = 0;
            rb_ring_mode_t mode;
            if (sscanf(e->val, "%31s %lu", word, &r) >= 1 &&
                rb_ring_mode_parse(word, strlen(word), &mode) == RB_OK &&
                r <= RB_RING_MAX_REPLICAS) {
                v->mode = mode;
                v->replicas = (uint32_t)r;
                v->mode_rev = e->mod_rev;
            }
            continue;
        }
        if (strncmp(e->key, "node/", 5) != 0 || e->key[5] == '\0' ||
            strlen(e->key + 5) > RB_NODE_NAME_MAX || !parse_node(e->val, &m->weight, &m->state))
            continue;
        if ((m->name = strdup(e->key + 5)) == NULL) {
            view_free(v);
            return NULL;
        }
        m->len = strlen(m->name);
        m->mod_rev = e->mod_rev;
        v->n++;
    }
    return v;
}

/* ---- the thread ------------------------------------------------------------------ */

static void set_status(rbd_source_t *s, int ok, const char *why)
{
    pthread_mutex_lock(&s->mu);
    s->st.connected = ok;
    if (ok)
        s->st.last_ok_ms = rbd_mono_ms();
    snprintf(s->st.error, sizeof(s->st.error), "%s", why != NULL ? why : "");
    snprintf(s->st.endpoint, sizeof(s->st.endpoint), "%s",
             rbd_etcd_endpoint(s->watch_client) ? rbd_etcd_endpoint(s->watch_client) : "");
    pthread_mutex_unlock(&s->mu);
}

/* Leaves the map's membership as of rev for the loop, and wakes it. */
static int publish(rbd_source_t *s, int64_t rev)
{
    view_t *v = view_build(s, rev), *old;
    uint64_t one = 1;

    if (v == NULL)
        return -1;
    pthread_mutex_lock(&s->mu);
    old = s->latest;
    s->latest = v;
    s->st.revision = rev;
    s->st.connected = 1;
    s->st.last_ok_ms = rbd_mono_ms();
    s->st.error[0] = '\0';
    snprintf(s->st.endpoint, sizeof(s->st.endpoint), "%s",
             rbd_etcd_endpoint(s->watch_client) ? rbd_etcd_endpoint(s->watch_client) : "");
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    view_free(old);
    if (write(s->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        rbd_log(LOG_WARNING, "ring source: eventfd: %s", strerror(errno));
    return 0;
}

typedef struct follow {
    rbd_source_t *s;
    int64_t rev;
    int failed;
} follow_t;

static int on_batch(void *arg, int64_t revision, const rbd_etcd_event_t *ev, size_t n)
{
    follow_t *f = arg;

    for (size_t i = 0; i < n && !f->failed; i++)
        f->failed = map_set(f->s, ev[i].key, ev[i].type == RBD_ETCD_PUT ? ev[i].value : NULL,
                            ev[i].value_len, ev[i].mod_revision) != 0;
    if (f->failed)
        return 1;
    if (revision > f->rev) {
        f->rev = revision;
        if (n > 0 && publish(f->s, revision) != 0)
            return f->failed = 1;
    }
    if (n == 0)
        set_status(f->s, 1, NULL);
    return 0;
}

/* The whole prefix again: the map and a view of its revision.  0 or an
 * etcd error. */
static int load(rbd_source_t *s, int64_t *rev)
{
    rbd_etcd_kvs_t kvs;
    int rc = rbd_etcd_range(s->watch_client, "", 0, &kvs);

    if (rc != 0)
        return rc;
    map_clear(s);
    for (size_t i = 0; i < kvs.n && rc == 0; i++)
        rc = map_set(s, kvs.kv[i].key, kvs.kv[i].value, kvs.kv[i].value_len,
                     kvs.kv[i].mod_revision) != 0 ? RBD_ETCD_ENOMEM : 0;
    *rev = kvs.revision;
    rbd_etcd_kvs_free(&kvs);
    if (rc == 0 && publish(s, *rev) != 0)
        rc = RBD_ETCD_ENOMEM;
    return rc;
}

/* Watches from rev + 1 until an error, a compaction or stop: each quiet
 * PROBE_MS a range checks that the member still has its quorum (a member
 * cut off keeps a watch open and silent).  The error (0: stopped). */
static int follow(rbd_source_t *s, int64_t rev)
{
    follow_t f = { s, rev, 0 };

    while (!atomic_load(&s->stop)) {
        rbd_etcd_watch_t w = { "", f.rev + 1, on_batch, &f, &s->stop, PROBE_MS, 0 };
        int64_t compact = 0;
        rbd_etcd_kvs_t kvs;
        int rc = rbd_etcd_watch(s->watch_client, &w, &compact);

        if (f.failed)
            return RBD_ETCD_ENOMEM;
        if (rc == RBD_ETCD_ECLOSED)
            continue;
        if (rc != 0)
            return rc;   /* ECOMPACTED among them: the caller reloads */
        if (atomic_load(&s->stop))
            break;
        if ((rc = rbd_etcd_range(s->watch_client, "mode", 0, &kvs)) != 0)
            return rc;
        rbd_etcd_kvs_free(&kvs);
        set_status(s, 1, NULL);
    }
    return 0;
}

/* Sleeps ms, waking early when told to stop. */
static void nap(rbd_source_t *s, uint64_t ms)
{
    for (uint64_t t = 0; t < ms && !atomic_load(&s->stop); t += 50)
        usleep(50 * 1000);
}

static void *source_main(void *arg)
{
    rbd_source_t *s = arg;
    uint64_t backoff = BACKOFF_MIN_MS;

    while (!atomic_load(&s->stop)) {
        int64_t rev = 0;
        int rc = load(s, &rev);
        char why[600];

        if (rc == 0) {
            backoff = BACKOFF_MIN_MS;
            rc = follow(s, rev);
            if (rc == 0 || rc == RBD_ETCD_ECOMPACTED)
                continue;   /* stopped, or reload at once */
        }
        snprintf(why, sizeof(why), "%s: %s", rbd_etcd_strerror(rc),
                 rbd_etcd_errmsg(s->watch_client));
        set_status(s, 0, why);
        rbd_log(LOG_WARNING, "ring source: etcd: %s; retrying in %llu ms", why,
                (unsigned long long)backoff);
        nap(s, backoff + arc4random_uniform((uint32_t)backoff / 4 + 1));
        backoff = backoff * 2 < BACKOFF_MAX_MS ? backoff * 2 : BACKOFF_MAX_MS;
    }
    return NULL;
}

/* ---- start and stop -------------------------------------------------------------- */

/* cfg's blank- or comma-separated endpoints into s->eps.  0, or -1. */
static int split_endpoints(rbd_source_t *s, const char *list)
{
    size_t n = 0;

    if ((s->ep_buf = strdup(list)) == NULL ||
        (s->eps = calloc(strlen(list) / 2 + 2, sizeof(*s->eps))) == NULL)
        return -1;
    for (char *save = NULL, *t = strtok_r(s->ep_buf, " ,\t", &save); t != NULL;
         t = strtok_r(NULL, " ,\t", &save))
        s->eps[n++] = t;
    s->opts.endpoints = s->eps;
    s->opts.n_endpoints = n;
    return n > 0 ? 0 : -1;
}

static const char *opt_str(const char *v)
{
    return v[0] != '\0' ? v : NULL;
}

int rbd_source_start(rbd_source_t **out, const rbd_config_t *cfg, int64_t applied, char *err,
                     size_t errlen)
{
    rbd_source_t *s = calloc(1, sizeof(*s));
    int e1 = 0, e2 = 0;

    if (s != NULL)
        s->efd = -1;
    if (s == NULL || split_endpoints(s, cfg->etcd_endpoints) != 0) {
        snprintf(err, errlen, "etcd-endpoints: no endpoint in '%s'", cfg->etcd_endpoints);
        goto fail;
    }
    s->opts.prefix = cfg->etcd_prefix;
    s->opts.ca_file = opt_str(cfg->etcd_cacert);
    s->opts.cert_file = opt_str(cfg->etcd_cert);
    s->opts.key_file = opt_str(cfg->etcd_key);
    s->opts.user = opt_str(cfg->etcd_user);
    s->opts.password = s->opts.user != NULL ? cfg->etcd_password : NULL;
    s->opts.request_timeout_ms = cfg->etcd_timeout;
    s->opts.connect_timeout_ms = cfg->etcd_timeout;
    s->dmode = cfg->ring_mode;
    s->dreplicas = cfg->ring_replicas;
    s->st.applied = applied;
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if ((s->watch_client = rbd_etcd_open(&s->opts, &e1)) == NULL ||
        (s->write_client = rbd_etcd_open(&s->opts, &e2)) == NULL || s->efd < 0) {
        snprintf(err, errlen, "etcd client: %s (etcd-endpoints are http:// or https:// URLs; "
                 "etcd-cert and etcd-key go together)", rbd_etcd_strerror(e1 ? e1 : e2));
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if ((errno = pthread_create(&s->th, NULL, source_main, s)) != 0) {
        snprintf(err, errlen, "ring source thread: %s", strerror(errno));
        goto fail;
    }
    s->started = 1;
    *out = s;
    return 0;
fail:
    rbd_source_stop(s);
    return -1;
}

void rbd_source_stop(rbd_source_t *s)
{
    if (s == NULL)
        return;
    atomic_store(&s->stop, 1);
    if (s->started) {
        pthread_join(s->th, NULL);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    rbd_etcd_close(s->watch_client);
    rbd_etcd_close(s->write_client);
    if (s->efd >= 0)
        close(s->efd);
    map_clear(s);
    free(s->map);
    view_free(s->latest);
    view_free(s->applied);
    free(s->eps);
    free(s->ep_buf);
    free(s);
}

int rbd_source_fd(const rbd_source_t *s)
{
    return s->efd;
}

void rbd_source_status(rbd_source_t *s, rbd_source_status_t *out)
{
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    pthread_mutex_unlock(&s->mu);
}

/* ---- the event loop's side ----------------------------------------------------- */

/* Member m as a RING_SYNC record's key: u32 weight, u32 state, the name. */
static size_t sync_key(unsigned char *buf, const member_t *m)
{
    rbd_put_u32(buf, m->weight);
    rbd_put_u32(buf + 4, m->state);
    memcpy(buf + 8, m->name, m->len);
    return 8 + m->len;
}

/* Publishes view v through a RING_SYNC op (logged).  RB_OK or its error. */
static int apply_view(rbd_state_t *st, rbd_aof_t *aof, const view_t *v)
{
    rb_key_t *keys = calloc(v->n ? v->n : 1, sizeof(*keys));
    unsigned char *buf;
    size_t bytes = 0, at = 0;
    rbd_op_t op = { .type = RBD_OP_RING_SYNC, .revision = (uint64_t)v->revision,
                    .mode = (uint32_t)v->mode, .replicas = v->replicas };
    int rc;

    for (size_t i = 0; i < v->n; i++)
        bytes += 8 + v->m[i].len;
    if (keys == NULL || (buf = malloc(bytes ? bytes : 1)) == NULL) {
        free(keys);
        return RB_ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        size_t len = sync_key(buf + at, &v->m[i]);
        keys[i] = (rb_key_t){ buf + at, len };
        at += len;
    }
    op.keys = keys;
    op.nkeys = v->n;
    rc = rbd_op_run(st, aof, &op);
    free(buf);
    free(keys);
    return rc;
}

int rbd_source_sync(rbd_source_t *s, rbd_state_t *st, rbd_aof_t *aof)
{
    uint64_t drain;
    view_t *v;
    int rc;

    if (read(s->efd, &drain, sizeof(drain)) < 0 && errno != EAGAIN)
        rbd_log(LOG_WARNING, "ring source: eventfd: %s", strerror(errno));
    pthread_mutex_lock(&s->mu);
    v = s->latest;
    s->latest = NULL;
    pthread_mutex_unlock(&s->mu);
    if (v == NULL)
        return RB_OK;
    if (s->applied != NULL && s->applied->revision == v->revision) {
        view_free(v);
        return RB_OK;
    }
    if ((rc = apply_view(st, aof, v)) != RB_OK) {
        /* Readers keep the table they have; the next view (or this one,
         * put back unless a newer came) is tried at the next sync. */
        rbd_log(LOG_WARNING, "ring source: cannot publish revision %lld: %s",
                (long long)v->revision, rb_strerror(rc));
        pthread_mutex_lock(&s->mu);
        if (s->latest == NULL)
            s->latest = v, v = NULL;
        pthread_mutex_unlock(&s->mu);
        view_free(v);
        return rc;
    }
    view_free(s->applied);
    s->applied = v;
    pthread_mutex_lock(&s->mu);
    s->st.applied = v->revision;
    pthread_mutex_unlock(&s->mu);
    return RB_OK;
}

static const member_t *member(const view_t *v, const char *name, size_t len)
{
    for (size_t i = 0; v != NULL && i < v->n; i++)
        if (v->m[i].len == len && memcmp(v->m[i].name, name, len) == 0)
            return &v->m[i];
    return NULL;
}

/* The etcd write that makes op: key, value (NULL: delete) into val, and
 * the mod_revision compared (what this host saw of the key).  RB_OK, or
 * RB_EEXIST / RB_ENOENT (as a local change would answer), or
 * RBD_SOURCE_EREPLY with why; 1: a delete (val unused). */
static int etcd_write_of(const rbd_source_t *s, const rbd_op_t *op, char *key, char *val,
                         int64_t *cmp, char *why, size_t cap)
{
    const view_t *v = s->applied;
    const member_t *m = NULL;
    uint32_t state = RB_NODE_UP, weight = 0;

    if (op->type == RBD_OP_RING_MODE) {
        rb_ring_mode_t was = v != NULL ? v->mode : s->dmode;
        /* 0 keeps the vnode count from one vnode mode to another, as a
         * local RING.MODE does; a table mode's 0 is its automatic size. */
        uint32_t replicas = op->replicas;
        if (replicas == 0 && op->mode != RB_RING_MAGLEV && op->mode != RB_RING_SLOTS &&
            was != RB_RING_MAGLEV && was != RB_RING_SLOTS)
            replicas = v != NULL ? v->replicas : s->dreplicas;
        strcpy(key, "mode");
        snprintf(val, 64, "%s %u", rb_ring_mode_name((rb_ring_mode_t)op->mode), replicas);
        *cmp = v != NULL ? v->mode_rev : 0;
        return RB_OK;
    }
    if (op->type == RBD_OP_RING_SLOTS) {
        snprintf(why, cap, "ERR RING.SLOTS is not available with ring-source etcd (the "
                 "slot map is not kept in etcd); use RING.MODE slots, balanced by weight");
        return RBD_SOURCE_EREPLY;
    }
    if (memchr(op->name, '\0', op->len) != NULL) {
        snprintf(why, cap, "ERR ring-source etcd: a node name with a NUL byte cannot be an "
                 "etcd key");
        return RBD_SOURCE_EREPLY;
    }
    m = member(v, op->name, op->len);
    if ((op->type == RBD_OP_RING_ADD) != (m == NULL))
        return m == NULL ? RB_ENOENT : RB_EEXIST;
    snprintf(key, RB_NODE_NAME_MAX + 8, "node/%.*s", (int)op->len, op->name);
    *cmp = m != NULL ? m->mod_rev : 0;
    if (m != NULL)
        state = m->state, weight = m->weight;
    if (op->type == RBD_OP_RING_REMOVE) {
        val[0] = '\0';
        return 1;   /* a delete */
    }
    if (op->type == RBD_OP_RING_ADD || op->type == RBD_OP_RING_WEIGHT)
        weight = op->weight;
    if (op->type == RBD_OP_RING_STATE)
        state = op->state;
    snprintf(val, 64, "%u %s", weight, rb_node_state_name((rb_node_state_t)state));
    return RB_OK;
}

/* Waits (at most APPLY_WAIT_MS) until this host applied revision rev. */
static void wait_applied(rbd_source_t *s, rbd_state_t *st, rbd_aof_t *aof, int64_t rev)
{
    uint64_t until = rbd_mono_ms() + APPLY_WAIT_MS;

    while ((s->applied == NULL || s->applied->revision < rev) && rbd_mono_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&s->mu);
        if (s->latest == NULL || s->latest->revision < rev)
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        pthread_mutex_unlock(&s->mu);
        (void)rbd_source_sync(s, st, aof);
    }
}

/* The refusal of a change while etcd cannot be reached. */
static int refuse_down(rbd_source_t *s, char *why, size_t cap)
{
    rbd_source_status_t ss;

    rbd_source_status(s, &ss);
    if (ss.connected)
        return 0;
    snprintf(why, cap, "ERR ring-source etcd: no working connection to etcd (%s); ring "
             "changes are refused, readers keep the table of revision %lld",
             ss.error[0] ? ss.error : "not reached yet", (long long)ss.applied);
    return RBD_SOURCE_EREPLY;
}

int rbd_source_change(rbd_source_t *s, rbd_state_t *st, rbd_aof_t *aof, const rbd_op_t *op,
                      char *why, size_t cap)
{
    char key[RB_NODE_NAME_MAX + 8], val[64];
    int64_t cmp = 0, rev = 0, cur = 0;
    rbd_etcd_op_t w = { key, val, 0 };
    int rc;

    (void)rbd_source_sync(s, st, aof);
    if (refuse_down(s, why, cap) != 0)
        return RBD_SOURCE_EREPLY;
    if ((rc = etcd_write_of(s, op, key, val, &cmp, why, cap)) < 0)
        return rc;
    if (rc == 1)
        w.value = NULL;
    else
        w.value_len = strlen(val);
    rc = rbd_etcd_txn(s->write_client, key, cmp, &w, 1, &rev, &cur);
    if (rc == RBD_ETCD_ECONFLICT) {
        snprintf(why, cap, "CONFLICT '%s' was changed in etcd by another host (its revision "
                 "is %lld, this host had read %lld): nothing was changed; read it again",
                 key, (long long)cur, (long long)cmp);
        return RBD_SOURCE_EREPLY;
    }
    if (rc != 0) {
        snprintf(why, cap, "ERR ring-source etcd: %s: %s", rbd_etcd_strerror(rc),
                 rbd_etcd_errmsg(s->write_client));
        return RBD_SOURCE_EREPLY;
    }
    wait_applied(s, st, aof, rev);
    return RB_OK;
}
