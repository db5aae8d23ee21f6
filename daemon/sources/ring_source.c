/*
 * ring_source.c - `ring-source etcd` (ring_source.h): the thread that
 * follows the ring's keys in etcd, the event loop's side that publishes
 * each membership it read (a RING_SYNC op), and RING.* changes made as
 * etcd transactions.
 *
 * Threads: the source thread owns its etcd client (watch_client) and the
 * key map; the writer thread owns the write client and runs the jobs'
 * transactions; the event loop owns `applied` and `waiting`.  They meet
 * under `mu` only: the source thread leaves its newest view in `latest`
 * (the loop takes it), the loop queues jobs in `todo`, the writer returns
 * them in `done`; the status.  One eventfd wakes the loop for both.
 *
 * Why a view is rebuilt from nothing and not patched: the table must be
 * a function of the membership alone, so that hosts that applied the same
 * revision through different histories (a restart, a compaction, a
 * reload) publish the same bytes.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <errno.h>
#include <fcntl.h>
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
#include "ring_source_impl.h"

/* ---- confirmation ---------------------------------------------------------------

 * The table's age (INFO etcd_stale_seconds) counts from its last
 * confirmation: the last time a quorum of etcd answered this host's
 * source (a range, a watch batch or progress notification, the probe).
 * It is kept across restarts in <dir>/etcd-confirmed, "<revision>
 * <unix ms>\n", written (a new file renamed over the old, not synced)
 * by the source thread at each confirmation of a new revision and at
 * most once a CONFIRM_WRITE_MS otherwise.  A write lost in a crash leaves
 * an older time: the age reads larger, never smaller.  At start the time
 * is taken if the file's revision is not older than the recovered
 * table's (a newer one: the table stopped being current by then), else
 * (no file, an older table, no table) the age counts from the start. */

/* The start's confirmation time (see above); applied: the recovered table's revision. */
static uint64_t confirm_load(const char *path, int64_t applied)
{
    FILE *f = fopen(path, "re");
    long long rev = 0;
    unsigned long long ms = 0;
    uint64_t now = rbd_now_ms();
    int ok;

    if (f == NULL)
        return now;
    ok = fscanf(f, "%lld %llu", &rev, &ms) == 2;
    fclose(f);
    if (!ok || applied <= 0 || rev < applied || ms == 0)
        return now;
    return ms < now ? (uint64_t)ms : now;
}

/* A quorum answered as of revision rev: the time for INFO, and the file. */
static void confirm(rbd_source_t *s, int64_t rev)
{
    uint64_t now = rbd_now_ms();
    char tmp[sizeof(((rbd_config_t *)0)->dir) + 32], line[64];
    int fd, ok, len;

    pthread_mutex_lock(&s->mu);
    s->st.confirmed_ms = now;
    pthread_mutex_unlock(&s->mu);
    if (rev == s->confirm_rev && now - s->confirm_ms < CONFIRM_WRITE_MS)
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp", s->confirm_path);
    len = snprintf(line, sizeof(line), "%lld %llu\n", (long long)rev, (unsigned long long)now);
    ok = (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) >= 0;
    if (ok) {
        ok = write(fd, line, (size_t)len) == len;
        ok = close(fd) == 0 && ok;
    }
    if (ok && rename(tmp, s->confirm_path) == 0) {
        s->confirm_rev = rev;
        s->confirm_ms = now;
        s->confirm_warned = 0;
    } else if (!s->confirm_warned) {
        s->confirm_warned = 1;   /* once until a write works again */
        rbd_log(LOG_WARNING, "ring source: cannot write %s: %s (etcd_stale_seconds after a "
                "restart will count from the start)", s->confirm_path, strerror(errno));
    }
}

/* ---- the thread ------------------------------------------------------------------ */

static void set_status(rbd_source_t *s, int ok, const char *why)
{
    int64_t rev;

    pthread_mutex_lock(&s->mu);
    s->st.connected = ok;
    rev = s->st.revision;
    snprintf(s->st.error, sizeof(s->st.error), "%s", why != NULL ? why : "");
    snprintf(s->st.endpoint, sizeof(s->st.endpoint), "%s",
             rbd_etcd_endpoint(s->watch_client) ? rbd_etcd_endpoint(s->watch_client) : "");
    pthread_mutex_unlock(&s->mu);
    if (ok)
        confirm(s, rev);
}

/* Leaves the map's membership as of rev for the loop, and wakes it. */
static int publish(rbd_source_t *s, int64_t rev)
{
    view_t *v = rbd_source_view_build(s, rev), *old;
    uint64_t one = 1;

    if (v == NULL)
        return -1;
    pthread_mutex_lock(&s->mu);
    old = s->latest;
    s->latest = v;
    s->st.revision = rev;
    s->st.connected = 1;
    s->st.skipped = v->skipped;
    if (v->skipped == 0)
        s->st.skipped_last[0] = '\0';
    s->st.error[0] = '\0';
    snprintf(s->st.endpoint, sizeof(s->st.endpoint), "%s",
             rbd_etcd_endpoint(s->watch_client) ? rbd_etcd_endpoint(s->watch_client) : "");
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    rbd_source_view_free(old);
    confirm(s, rev);
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

    rbd_source_warn_reset(f->s);
    for (size_t i = 0; i < n && !f->failed; i++)
        f->failed = rbd_source_map_set(f->s, ev[i].key, ev[i].key_len,
                                       ev[i].type == RBD_ETCD_PUT ? ev[i].value : NULL,
                                       ev[i].value_len, ev[i].mod_revision) != 0;
    rbd_source_warn_reset(f->s);   /* says how many were held back */
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
    rbd_source_map_clear(s);
    rbd_source_warn_reset(s);
    for (size_t i = 0; i < kvs.n && rc == 0; i++)
        rc = rbd_source_map_set(s, kvs.kv[i].key, kvs.kv[i].key_len, kvs.kv[i].value,
                                kvs.kv[i].value_len, kvs.kv[i].mod_revision) != 0
                 ? RBD_ETCD_ENOMEM : 0;
    rbd_source_warn_reset(s);   /* says how many were held back */
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

/* The writer thread: runs each job's transaction with the write client
 * (the loop no longer uses it once this runs), in the order submitted. */
static void *writer_main(void *arg)
{
    rbd_source_t *s = arg;
    uint64_t one = 1;

    for (;;) {
        job_t *j;
        rbd_etcd_op_t w;
        pthread_mutex_lock(&s->mu);
        while (s->todo == NULL && !atomic_load(&s->stop))
            pthread_cond_wait(&s->wcv, &s->mu);
        if ((j = s->todo) == NULL) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        s->todo = j->next;
        pthread_mutex_unlock(&s->mu);
        w = (rbd_etcd_op_t){ j->key, j->del ? NULL : j->val, j->del ? 0 : strlen(j->val) };
        j->rc = rbd_etcd_txn(s->write_client, j->key, j->cmp, &w, 1, &j->rev, &j->cur);
        if (j->rc != 0 && j->rc != RBD_ETCD_ECONFLICT)
            snprintf(j->err, sizeof(j->err), "%s: %s", rbd_etcd_strerror(j->rc),
                     rbd_etcd_errmsg(s->write_client));
        j->done_ms = rbd_mono_ms();
        pthread_mutex_lock(&s->mu);
        j->next = s->done;
        s->done = j;
        pthread_mutex_unlock(&s->mu);
        if (write(s->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            rbd_log(LOG_WARNING, "ring source: eventfd: %s", strerror(errno));
    }
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
    if (asprintf(&s->confirm_path, "%s/%s", cfg->dir, RBD_SOURCE_CONFIRM_FILE) < 0) {
        s->confirm_path = NULL;
        snprintf(err, errlen, "ring source: out of memory");
        goto fail;
    }
    s->st.confirmed_ms = confirm_load(s->confirm_path, applied);
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if ((s->watch_client = rbd_etcd_open(&s->opts, &e1)) == NULL ||
        (s->write_client = rbd_etcd_open(&s->opts, &e2)) == NULL || s->efd < 0) {
        snprintf(err, errlen, "etcd client: %s (etcd-endpoints are http:// or https:// URLs; "
                 "etcd-cert and etcd-key go together)", rbd_etcd_strerror(e1 ? e1 : e2));
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->wcv, NULL);
    if ((errno = pthread_create(&s->th, NULL, source_main, s)) != 0) {
        snprintf(err, errlen, "ring source thread: %s", strerror(errno));
        goto fail;
    }
    s->started = 1;
    if ((errno = pthread_create(&s->wth, NULL, writer_main, s)) != 0) {
        snprintf(err, errlen, "ring source writer thread: %s", strerror(errno));
        goto fail;
    }
    s->wstarted = 1;
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
    if (s->wstarted) {
        pthread_mutex_lock(&s->mu);
        pthread_cond_broadcast(&s->wcv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->wth, NULL);   /* after the job it runs, at most etcd-timeout x members */
    }
    if (s->started) {
        pthread_join(s->th, NULL);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        pthread_cond_destroy(&s->wcv);
    }
    for (job_t *lists[3] = { s->todo, s->done, s->waiting }, **l = lists; l < lists + 3; l++)
        while (*l != NULL) {
            job_t *j = *l;
            *l = j->next;
            free(j);
        }
    rbd_etcd_close(s->watch_client);
    rbd_etcd_close(s->write_client);
    if (s->efd >= 0)
        close(s->efd);
    rbd_source_map_clear(s);
    free(s->map);
    rbd_source_view_free(s->latest);
    rbd_source_view_free(s->applied);
    free(s->eps);
    free(s->ep_buf);
    free(s->confirm_path);
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
    out->skipped += s->over_limit;
    pthread_mutex_unlock(&s->mu);
}

