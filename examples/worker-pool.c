/*
 * worker-pool.c - a prefork server routing requests through the shared ring
 * while its membership changes live.
 *
 * What: N worker processes (think nginx or Apache prefork workers) route
 * requests to backend nodes by key with rb_ring_lookup() on the segment they
 * attached read-only: no lock, no system call, no round trip.  Between
 * phases the parent changes membership through the daemon (RING.ADD,
 * RING.WEIGHT, RING.REMOVE over rb_conn).  The workers are neither
 * restarted nor signalled: their next lookup reads the new table.
 *
 * Why: to watch consistent hashing on live processes.  After every change
 * the report gives each node's share of the requests and the fraction of a
 * fixed set of probe keys whose owner moved.  The workers compute that
 * fraction themselves from shared memory (each remembers the owners of its
 * slice of the probe keys from the previous phase) and report the ring
 * version they read, which shows they saw the change.  Adding a 5th node to
 * 4 moves about 1/5 of the keys, all of them to the new node; hash % N
 * would move 4/5.
 *
 * Workload: each phase routes R requests (keys "user:<id>", ids from a
 * seeded PRNG, so runs are repeatable) that the workers take in chunks from
 * a shared work queue (an atomic cursor in a shared mapping), and P probe
 * keys split among the workers.  The plan: start with `nodes` nodes of
 * weight 1, add one, double the weight of the second, remove the third.
 *
 * Self-contained: it starts its own ringbloomd (instance worker-pool-<pid>,
 * socket and state in a fresh temp dir, keep-segment no), and stops it,
 * waits for every process and removes the temp dir at the end, also on
 * SIGINT / SIGTERM.
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ringbloom.h"
#include "ex_daemon.h"
#include "ex_util.h"

#define PROG "worker-pool"


#define MAX_NODES    16
#define MAX_WORKERS  64
#define CHUNK        512              /* requests taken from the queue at once */
#define PHASE_QUIT   UINT64_MAX
#define NO_OWNER     0xFFu
#define PHASE_TIMEOUT_S 60

/* ---- the shared control block ------------------------------------------- */

/* What one worker saw and did in the current phase.  Written by the worker
 * before it increments pool.done (release); read by the parent after it
 * loads done == workers (acquire). */
typedef struct worker_stat {
    pid_t    pid;
    int      error;                   /* first RB_E* code of the phase, or 0 */
    uint64_t ring_version;            /* rb_ring_stat().version at phase start */
    uint32_t ring_nodes;
    uint64_t requests;                /* requests this worker routed */
    uint64_t routed[MAX_NODES];       /* ... per node slot */
    uint64_t probes;                  /* probe keys looked up */
    uint64_t moved;                   /* ... whose owner changed since last phase */
    uint64_t moved_elsewhere;         /* ... moved, but neither to nor from the
                                         node the parent changed */
} worker_stat_t;

/* Lives in a MAP_SHARED anonymous mapping created before the fork.  The
 * plain fields are written by the parent before it stores `phase`
 * (release) and read by workers after they load it (acquire). */
typedef struct pool {
    _Atomic uint64_t phase;           /* 1, 2, ...; PHASE_QUIT ends the workers */
    _Atomic uint64_t done;            /* workers finished with the current phase */
    _Atomic uint64_t cursor;          /* next request index of the phase */
    uint64_t requests;                /* per phase */
    uint64_t probes;
    uint64_t seed;
    uint32_t workers;
    uint32_t changed;                 /* slot the parent changed before this phase */
    char     names[MAX_NODES][32];    /* node slot -> name */
    worker_stat_t w[MAX_WORKERS];
} pool_t;

/* ---- workers ------------------------------------------------------------- */

static int node_slot(const pool_t *pool, const rb_node_t *node)
{
    for (int s = 0; s < MAX_NODES; s++)
        if (strcmp(pool->names[s], node->name) == 0)
            return s;
    return -1;
}

/* Looks key up and returns its node slot, or a negative RB_E* code. */
static int route(const rb_segment_t *seg, const pool_t *pool, const char *key, size_t len)
{
    rb_node_t node;
    int rc = rb_ring_lookup(seg, key, len, &node);

    if (rc != RB_OK)
        return rc;
    rc = node_slot(pool, &node);
    return rc < 0 ? RB_ECORRUPT : rc;
}

/* One phase of worker `me`: its slice of the probe keys (compared with the
 * owners it saw last phase, kept in prev), then requests from the queue. */
static void worker_phase(const rb_segment_t *seg, pool_t *pool, uint32_t me, uint64_t phase,
                         uint8_t *prev)
{
    worker_stat_t *ws = &pool->w[me];
    rb_ring_stat_t st;
    char key[48];
    int rc;

    memset(ws, 0, sizeof(*ws));
    ws->pid = getpid();
    if ((rc = rb_ring_stat(seg, &st)) != RB_OK) {
        ws->error = rc;
        return;
    }
    ws->ring_version = st.version;
    ws->ring_nodes = st.nodes;
    for (uint64_t i = me, j = 0; i < pool->probes; i += pool->workers, j++) {
        int len = snprintf(key, sizeof(key), "probe:%" PRIu64, i);
        int slot = route(seg, pool, key, (size_t)len);

        if (slot < 0) {
            ws->error = slot;
            return;
        }
        ws->probes++;
        if (prev[j] != NO_OWNER && prev[j] != slot) {
            ws->moved++;
            if (prev[j] != pool->changed && (uint32_t)slot != pool->changed)
                ws->moved_elsewhere++;
        }
        prev[j] = (uint8_t)slot;
    }
    for (;;) {
        uint64_t first = atomic_fetch_add_explicit(&pool->cursor, CHUNK, memory_order_relaxed);

        if (first >= pool->requests ||
            atomic_load_explicit(&pool->phase, memory_order_relaxed) == PHASE_QUIT)
            break;
        for (uint64_t j = first; j < first + CHUNK && j < pool->requests; j++) {
            uint64_t user = ex_splitmix64(pool->seed ^ (phase << 40) ^ j) % 10000000u;
            int len = snprintf(key, sizeof(key), "user:%" PRIu64, user);
            int slot = route(seg, pool, key, (size_t)len);

            if (slot < 0) {
                ws->error = slot;
                return;
            }
            ws->routed[slot]++;
            ws->requests++;
        }
    }
}

/* A worker process: attaches d's segment read-only (only if the daemon's
 * user owns it) and serves phases until PHASE_QUIT (or until the parent is
 * gone).  Returns the exit status. */
static int worker_main(const ex_daemon_t *d, pool_t *pool, uint32_t me, pid_t parent)
{
    size_t slice = (size_t)(pool->probes / pool->workers + 1);
    uint8_t *prev = malloc(slice);
    rb_segment_t *seg = NULL;
    uint64_t seen = 0;
    int rc, status = 1;

    if (prev == NULL) {
        fprintf(stderr, PROG ": worker %u: out of memory\n", me);
        return 1;
    }
    memset(prev, NO_OWNER, slice);
    if ((rc = rb_segment_attach_owned(d->rb.inst, 0, d->uid, &seg)) != RB_OK) {
        fprintf(stderr, PROG ": worker %u: attach %s: %s\n", me, d->rb.inst, rb_strerror(rc));
        goto out;
    }
    for (;;) {
        uint64_t phase = atomic_load_explicit(&pool->phase, memory_order_acquire);

        if (phase == PHASE_QUIT) {
            status = 0;
            break;
        }
        if (phase == seen) {
            if (getppid() != parent)
                break;
            ex_sleep_us(100);
            continue;
        }
        worker_phase(seg, pool, me, phase, prev);
        seen = phase;
        /* Publishes pool->w[me] to the parent (pairs with its acquire). */
        atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
    }
out:
    rb_segment_close(seg);
    free(prev);
    return status;
}

/* ---- the parent ---------------------------------------------------------- */

typedef struct plan_step {
    enum { STEP_START, STEP_ADD, STEP_WEIGHT, STEP_REMOVE } kind;
    uint32_t slot, weight;
} plan_step_t;

typedef struct options {
    uint64_t workers, nodes, requests, probes, seed;
    const char *daemon, *instance, *tmpdir;
} options_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: worker-pool [options]\n"
            "A prefork pool of workers routes requests through the shared ring of a\n"
            "private ringbloomd while the parent adds, reweights and removes nodes.\n"
            "  -w, --workers N     worker processes (default 4, max %d)\n"
            "  -n, --nodes N       nodes at the start, 3..%d (default 4)\n"
            "  -r, --requests N    requests routed per phase (default 1000000)\n"
            "  -p, --probes N      probe keys whose owners are compared (default 20000)\n"
            "  -s, --seed N        seed of the request keys (default 1)\n"
            "  -d, --daemon PATH   ringbloomd to start (default: $RB_DAEMON, else\n"
            "                      ../daemon/ringbloomd beside this program, else PATH)\n"
            "  -i, --instance NAME instance name (default worker-pool-<pid>)\n"
            "  -t, --tmpdir DIR    where the daemon's temp dir goes (default $TMPDIR or /tmp)\n"
            "  -h, --help          this text\n",
            MAX_WORKERS, MAX_NODES - 1);
}

static int parse_options(int argc, char **argv, options_t *o)
{
    static const struct option longopts[] = {
        { "workers", required_argument, NULL, 'w' },
        { "nodes", required_argument, NULL, 'n' },
        { "requests", required_argument, NULL, 'r' },
        { "probes", required_argument, NULL, 'p' },
        { "seed", required_argument, NULL, 's' },
        { "daemon", required_argument, NULL, 'd' },
        { "instance", required_argument, NULL, 'i' },
        { "tmpdir", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char *tmp = getenv("TMPDIR");
    int opt, bad = 0;

    *o = (options_t){ .workers = 4, .nodes = 4, .requests = 1000000, .probes = 20000, .seed = 1 };
    o->tmpdir = tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp";
    while ((opt = getopt_long(argc, argv, "w:n:r:p:s:d:i:t:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'w': bad |= ex_parse_u64("--workers", optarg, 1, MAX_WORKERS, &o->workers); break;
        case 'n': bad |= ex_parse_u64("--nodes", optarg, 3, MAX_NODES - 1, &o->nodes); break;
        case 'r': bad |= ex_parse_u64("--requests", optarg, 1, 1ull << 40, &o->requests); break;
        case 'p': bad |= ex_parse_u64("--probes", optarg, 1, 1ull << 32, &o->probes); break;
        case 's': bad |= ex_parse_u64("--seed", optarg, 0, UINT64_MAX, &o->seed); break;
        case 'd': o->daemon = optarg; break;
        case 'i': o->instance = optarg; break;
        case 't': o->tmpdir = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -1;
    }
    return bad ? -1 : 0;
}

/* Applies one plan step through the daemon and updates weight[]. */
static int apply_step(rb_conn_t *c, const pool_t *pool, const plan_step_t *st, uint32_t *weight,
                      uint64_t nodes)
{
    const char *name = pool->names[st->slot];
    int rc = RB_OK;

    switch (st->kind) {
    case STEP_START:
        for (uint32_t s = 0; s < nodes && rc == RB_OK; s++)
            if ((rc = rb_conn_ring_add(c, pool->names[s], strlen(pool->names[s]), 1)) == RB_OK)
                weight[s] = 1;
        break;
    case STEP_ADD:
        if ((rc = rb_conn_ring_add(c, name, strlen(name), st->weight)) == RB_OK)
            weight[st->slot] = st->weight;
        break;
    case STEP_WEIGHT:
        if ((rc = rb_conn_ring_weight(c, name, strlen(name), st->weight)) == RB_OK)
            weight[st->slot] = st->weight;
        break;
    case STEP_REMOVE:
        if ((rc = rb_conn_ring_remove(c, name, strlen(name))) == RB_OK)
            weight[st->slot] = 0;
        break;
    }
    if (rc != RB_OK)
        fprintf(stderr, PROG ": ring change: %s %s\n", rb_strerror(rc), rb_conn_error(c));
    return rc;
}

/* Waits until every worker finished the phase; -1 if one died (its pid is
 * then reaped and set to 0), the parent was interrupted or it took too
 * long. */
static int wait_phase(pool_t *pool, pid_t *pids, uint32_t workers)
{
    double deadline = ex_now_s() + PHASE_TIMEOUT_S;

    while (atomic_load_explicit(&pool->done, memory_order_acquire) < workers) {
        for (uint32_t i = 0; i < workers; i++) {
            int status;
            if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                fprintf(stderr, PROG ": worker %u (pid %d) died (%s %d)\n", i, (int)pids[i],
                        WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                pids[i] = 0;
                return -1;
            }
        }
        if (ex_stop_requested || ex_now_s() > deadline) {
            fprintf(stderr, PROG ": %s\n", ex_stop_requested ? "interrupted" : "phase timed out");
            return -1;
        }
        ex_sleep_us(200);
    }
    return 0;
}

/* Prints the report of a phase from the workers' stats; -1 if a worker
 * reported an error or missed the parent's ring version. */
static int report_phase(const pool_t *pool, const pid_t *pids, const plan_step_t *st,
                        const uint32_t *weight, const uint32_t *old_weight,
                        const rb_ring_stat_t *ring, double secs)
{
    uint64_t routed[MAX_NODES] = { 0 }, total = 0, probes = 0, moved = 0, elsewhere = 0;
    uint32_t saw = 0, wsum = 0, old_wsum = 0;
    double share_sum = 0;

    for (uint32_t i = 0; i < pool->workers; i++) {
        const worker_stat_t *ws = &pool->w[i];
        if (ws->error != 0) {
            fprintf(stderr, PROG ": worker %u: %s\n", i, rb_strerror(ws->error));
            return -1;
        }
        saw += ws->pid == pids[i] && ws->ring_version == ring->version &&
               ws->ring_nodes == ring->nodes;
        for (int s = 0; s < MAX_NODES; s++)
            routed[s] += ws->routed[s];
        total += ws->requests;
        probes += ws->probes;
        moved += ws->moved;
        elsewhere += ws->moved_elsewhere;
    }
    for (int s = 0; s < MAX_NODES; s++) {
        wsum += weight[s];
        old_wsum += old_weight[s];
    }
    printf("  ring version %" PRIu64 ": %u nodes, %u points; seen by %u/%u workers (same pids, "
           "no restart)\n", ring->version, ring->nodes, ring->points, saw, pool->workers);
    printf("  %-24s %6s %10s %7s %7s\n", "node", "weight", "requests", "share", "ideal");
    for (int s = 0; s < MAX_NODES; s++) {
        if (weight[s] == 0 && routed[s] == 0)
            continue;
        share_sum += (double)routed[s] / (double)total;
        printf("  %-24s %6u %10" PRIu64 " %7.4f %7.4f\n", pool->names[s], weight[s], routed[s],
               (double)routed[s] / (double)total, (double)weight[s] / wsum);
    }
    printf("  %-24s %6u %10" PRIu64 " %7.4f %7.4f\n", "total", wsum, total, share_sum, 1.0);
    printf("  routed %" PRIu64 " requests and %" PRIu64 " probe keys in %.3f s "
           "(%.2f M lookups/s over %u workers)\n", total, probes, secs,
           (double)(total + probes) / secs / 1e6, pool->workers);
    if (st->kind != STEP_START) {
        double before = (double)old_weight[st->slot] / old_wsum;
        double after = (double)weight[st->slot] / wsum;
        double expected = after > before ? after - before : before - after;

        printf("  moved: %.4f of %" PRIu64 " probe keys (expected %.4f: %s's share %.4f -> %.4f); "
               "moves not to/from it: %" PRIu64 "\n", (double)moved / (double)probes, probes,
               expected, pool->names[st->slot], before, after, elsewhere);
    }
    return saw == pool->workers ? 0 : -1;
}

int main(int argc, char **argv)
{
    options_t o;
    plan_step_t plan[4];
    uint32_t weight[MAX_NODES] = { 0 }, old_weight[MAX_NODES];
    pid_t pids[MAX_WORKERS] = { 0 }, parent = getpid();
    char dbuf[PATH_MAX];
    const char *bin;
    ex_daemon_t d = { 0 };
    rb_conn_t *conn = NULL;
    rb_segment_t *seg = NULL;
    pool_t *pool = MAP_FAILED;
    uint32_t started = 0;
    int rc, status = 1;

    ex_init(PROG);
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    bin = rbl_daemon_path(o.daemon, dbuf, sizeof(dbuf));
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (ex_catch_signals() != 0)
        return 1;

    pool = mmap(NULL, sizeof(*pool), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (pool == MAP_FAILED) {
        perror(PROG ": mmap");
        return 1;
    }
    pool->requests = o.requests;
    pool->probes = o.probes;
    pool->seed = o.seed;
    pool->workers = (uint32_t)o.workers;
    for (int s = 0; s < MAX_NODES; s++)
        snprintf(pool->names[s], sizeof(pool->names[s]), "cache-%c.example:11211", 'a' + s);
    plan[0] = (plan_step_t){ STEP_START, 0, 1 };
    plan[1] = (plan_step_t){ STEP_ADD, (uint32_t)o.nodes, 1 };
    plan[2] = (plan_step_t){ STEP_WEIGHT, 1, 2 };
    plan[3] = (plan_step_t){ STEP_REMOVE, 2, 0 };

    if (ex_daemon_start(&d, bin, o.tmpdir, o.instance, &conn) != 0)
        goto out;
    printf(PROG ": ringbloomd pid %d, instance %s, socket %s\n", (int)d.rb.pid, d.rb.inst,
           d.rb.sock);
    printf(PROG ": %" PRIu64 " workers, %" PRIu64 " requests per phase, %" PRIu64
           " probe keys\n", o.workers, o.requests, o.probes);
    if ((rc = apply_step(conn, pool, &plan[0], weight, o.nodes)) != RB_OK)
        goto out;
    if ((rc = rb_segment_attach_owned(d.rb.inst, 0, d.uid, &seg)) != RB_OK) {
        fprintf(stderr, PROG ": attach %s: %s\n", d.rb.inst, rb_strerror(rc));
        goto out;
    }

    for (started = 0; started < o.workers; started++) {
        pid_t pid = fork();

        if (pid < 0) {
            perror(PROG ": fork");
            goto out;
        }
        if (pid == 0) {
            if (ex_child_setup(parent) != 0)
                _exit(1);
            rb_segment_close(seg);   /* the parent's; the worker attaches its own */
            _exit(worker_main(&d, pool, started, parent));
        }
        pids[started] = pid;
    }

    for (size_t p = 0; p < sizeof(plan) / sizeof(plan[0]); p++) {
        const plan_step_t *st = &plan[p];
        rb_ring_stat_t ring;
        double t0;

        memcpy(old_weight, weight, sizeof(weight));
        if (p > 0 && apply_step(conn, pool, st, weight, o.nodes) != RB_OK)
            goto out;
        if ((rc = rb_ring_stat(seg, &ring)) != RB_OK) {
            fprintf(stderr, PROG ": ring stat: %s\n", rb_strerror(rc));
            goto out;
        }
        switch (st->kind) {
        case STEP_START:
            printf("\nphase %zu: start with %" PRIu64 " nodes of weight 1\n", p, o.nodes);
            break;
        case STEP_ADD:
            printf("\nphase %zu: add %s (weight %u)\n", p, pool->names[st->slot], st->weight);
            break;
        case STEP_WEIGHT:
            printf("\nphase %zu: weight of %s %u -> %u\n", p, pool->names[st->slot],
                   old_weight[st->slot], st->weight);
            break;
        case STEP_REMOVE:
            printf("\nphase %zu: remove %s\n", p, pool->names[st->slot]);
            break;
        }
        pool->changed = st->slot;
        atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
        atomic_store_explicit(&pool->cursor, 0, memory_order_relaxed);
        t0 = ex_now_s();
        /* Publishes the plain fields above to the workers (they acquire). */
        atomic_store_explicit(&pool->phase, p + 1, memory_order_release);
        if (wait_phase(pool, pids, started) != 0)
            goto out;
        if (report_phase(pool, pids, st, weight, old_weight, &ring, ex_now_s() - t0) != 0)
            goto out;
    }
    status = 0;

out:
    if (pool != MAP_FAILED) {
        atomic_store_explicit(&pool->phase, PHASE_QUIT, memory_order_release);
        for (uint32_t i = 0; i < started; i++) {
            pid_t r = 0;
            int ws = 0;

            for (int j = 0; pids[i] > 0 && j < 500; j++) {
                if ((r = waitpid(pids[i], &ws, WNOHANG)) != 0)
                    break;
                ex_sleep_us(10000);
            }
            if (pids[i] > 0 && r == 0) {
                kill(pids[i], SIGKILL);
                waitpid(pids[i], &ws, 0);
            }
            if (pids[i] <= 0 || r != pids[i] || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
                status = 1;
        }
        munmap(pool, sizeof(*pool));
    }
    rb_segment_close(seg);
    ex_daemon_stop(&d, conn);
    if (status == 0)
        printf("\n" PROG ": done; ringbloomd stopped, temp dir removed\n");
    return status;
}
