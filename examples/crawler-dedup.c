/*
 * crawler-dedup.c - P crawler processes fetch every URL of a shared
 * frontier exactly once, deduplicated by one Bloom filter.
 *
 * What: a frontier of URLs with many duplicates (popular pages are linked
 * from everywhere) is shared by P crawler processes, which take batches of
 * it from a work queue.  A crawler first asks the filter in shared memory
 * (rb_bloom_contains_many: no system call) and drops the URLs already seen;
 * it sends the rest to the daemon with rb_conn_bf_add_many (pipelined
 * BF.MADD), an exact test-and-add across processes because the daemon is
 * the only writer: of several crawlers racing for one URL exactly one is
 * told "new", and only that one fetches it.  The fetch is simulated (a
 * checksum over the URL, no I/O and no sleep).
 *
 * Why: a crawler's "seen" set is the largest structure it keeps.  The
 * report compares the filter's bytes (rb_bloom_stat) with an exact hash set
 * of the same URLs, built and measured here (malloc's own count of the
 * bytes in use, mallinfo2), and verifies exactly-once independently of the
 * filter: every fetch increments a per-URL counter in a shared mapping, and
 * at the end every distinct URL must have been fetched exactly once.  A
 * Bloom filter can only err towards "seen": a false positive would leave a
 * URL never fetched (reported as such).  The default error rate (1e-6 at
 * capacity, much less while the filter fills) makes that negligible at
 * about 5 bytes per URL.
 *
 * Workload: `distinct` URLs of ~60-75 bytes, each once in the frontier,
 * plus (total - distinct) extra links drawn with a power-law skew towards
 * the popular ones, shuffled with a seeded PRNG (repeatable).
 *
 * Self-contained: it starts its own ringbloomd (instance
 * crawler-dedup-<pid>, socket and state in a fresh temp dir, keep-segment
 * no), and stops it, waits for every process and removes the temp dir at
 * the end, also on SIGINT / SIGTERM.
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ringbloom.h"
#include "ex_daemon.h"
#include "ex_util.h"

#define PROG "crawler-dedup"

#define MAX_CRAWLERS  64
#define MAX_BATCH     4096
#define URL_MAX       128
#define FILTER        "urls"
#define CRAWL_TIMEOUT_S 120

/* ---- shared state -------------------------------------------------------- */

/* One crawler's account, written by it before it exits; the parent reads it
 * after waitpid (which orders the two).  A failed crawler exits with 1. */
typedef struct crawler_stat {
    uint64_t taken;             /* frontier entries taken from the queue */
    uint64_t fetched;           /* URLs it fetched: it won the test-and-add */
    uint64_t skipped_shm;       /* already in the filter in shared memory */
    uint64_t skipped_daemon;    /* sent to the daemon, which said "seen" */
    uint64_t checksum;          /* of the simulated pages */
} crawler_stat_t;

/* A MAP_SHARED anonymous mapping made before the fork.  The plain fields
 * are written by the parent before the crawlers exist. */
typedef struct crawl {
    _Atomic uint64_t cursor;    /* next frontier entry */
    _Atomic uint32_t ready;     /* crawlers connected and attached */
    _Atomic uint32_t go;        /* set by the parent once all are ready */
    uint64_t total;             /* frontier entries */
    uint32_t batch;
    uint32_t work;
    int      precheck;
    crawler_stat_t c[MAX_CRAWLERS];
} crawl_t;

/* ---- small helpers ------------------------------------------------------- */

static uint64_t fnv1a(const char *s, size_t len, uint64_t h)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001B3ull;
    return h;
}

/* ---- the frontier -------------------------------------------------------- */

/* URL number id: a page on one of 500 sites; the id in the path makes every
 * URL distinct.  Returns its length. */
static size_t url_of(uint32_t id, char *buf)
{
    static const char *const section[] = {
        "news", "sport", "tech", "science", "world", "business", "culture", "travel",
        "food", "health", "opinion", "video", "blog", "archive", "tag", "author"
    };
    uint64_t h = ex_splitmix64(id);
    int n = snprintf(buf, URL_MAX, "https://www.site%03u.example/%s/%s/%u/item-%" PRIu32 ".html%s",
                     (unsigned)(h % 500), section[(h >> 16) & 15], section[(h >> 20) & 15],
                     2000u + (unsigned)((h >> 24) % 27), id, (h >> 32) & 3 ? "" : "?ref=home");

    return (size_t)n;
}

/* Every id in [0, distinct) once, then extra links with a power-law skew
 * towards small ids (u^3: the first 0.1% of the pages get 10% of them),
 * shuffled (Fisher-Yates).  Returns the largest number of copies of one. */
static uint64_t make_frontier(uint32_t *f, uint64_t total, uint64_t distinct, uint64_t seed)
{
    uint64_t s = seed, top = 0, *copies = NULL;

    for (uint64_t i = 0; i < total; i++) {
        if (i < distinct) {
            f[i] = (uint32_t)i;
        } else {
            double u = (double)(ex_splitmix64(s++) >> 11) * 0x1.0p-53;
            f[i] = (uint32_t)((double)distinct * u * u * u);
        }
    }
    for (uint64_t i = total - 1; i > 0; i--) {
        uint64_t j = ex_splitmix64(s++) % (i + 1);
        uint32_t t = f[i];
        f[i] = f[j];
        f[j] = t;
    }
    /* The most linked page, for the report (0 if there is no memory to count). */
    copies = calloc(distinct, sizeof(*copies));
    if (copies != NULL) {
        for (uint64_t i = 0; i < total; i++)
            if (++copies[f[i]] > top)
                top = copies[f[i]];
        free(copies);
    }
    return top;
}

/* ---- crawlers ------------------------------------------------------------ */

/* The simulated fetch: `work` passes of a checksum over the URL stand in
 * for download and parse (no I/O, no sleep). */
static uint64_t fetch_page(const char *url, size_t len, uint32_t work)
{
    uint64_t h = 0xCBF29CE484222325ull;

    for (uint32_t r = 0; r < work; r++)
        h = fnv1a(url, len, h);
    return h;
}

/* Takes batches until the frontier is exhausted; returns an RB_E* code.
 * The buffers are static: a crawler process has one thread. */
static int crawl_batches(crawl_t *cw, crawler_stat_t *cs, const uint32_t *frontier,
                         _Atomic uint32_t *fetches, rb_conn_t *conn, const rb_bloom_t *bf)
{
    static rb_key_t keys[MAX_BATCH];
    static uint32_t ids[MAX_BATCH];
    static uint8_t flag[MAX_BATCH];
    static char text[MAX_BATCH][URL_MAX];

    for (;;) {
        uint64_t first = atomic_fetch_add_explicit(&cw->cursor, cw->batch, memory_order_relaxed);
        size_t n, m = 0;
        int64_t got;

        if (first >= cw->total)
            return RB_OK;
        n = cw->total - first < cw->batch ? (size_t)(cw->total - first) : cw->batch;
        cs->taken += n;
        for (size_t i = 0; i < n; i++) {
            ids[i] = frontier[first + i];
            keys[i] = (rb_key_t){ text[i], url_of(ids[i], text[i]) };
        }
        /* Drop what the filter already holds, read from shared memory.  The
         * filter only gains bits, so a "maybe present" here is what the
         * daemon would answer too; a stale "absent" only costs the round
         * trip, where the daemon decides.  Keep the rest in order. */
        if (cw->precheck) {
            if ((got = rb_bloom_contains_many(bf, keys, n, flag)) < 0)
                return (int)got;
            for (size_t i = 0; i < n; i++) {
                if (flag[i]) {
                    cs->skipped_shm++;
                    continue;
                }
                keys[m] = keys[i];
                ids[m++] = ids[i];
            }
        } else {
            m = n;
        }
        if (m == 0)
            continue;
        if ((got = rb_conn_bf_add_many(conn, FILTER, strlen(FILTER), keys, m, flag)) < 0)
            return (int)got;
        for (size_t i = 0; i < m; i++) {
            if (!flag[i]) {
                cs->skipped_daemon++;
                continue;
            }
            atomic_fetch_add_explicit(&fetches[ids[i]], 1, memory_order_relaxed);
            cs->checksum += fetch_page(keys[i].ptr, keys[i].len, cw->work);
            cs->fetched++;
        }
    }
}

/* A crawler process: its own connection and read-only attachment, then the
 * frontier.  Returns the exit status. */
static int crawler_main(const ex_daemon_t *d, crawl_t *cw, uint32_t me, const uint32_t *frontier,
                        _Atomic uint32_t *fetches, pid_t parent)
{
    crawler_stat_t *cs = &cw->c[me];
    rb_conn_t *conn = NULL;
    rb_segment_t *seg = NULL;
    rb_bloom_t *bf = NULL;
    int rc;

    if ((rc = rb_conn_open(NULL, d->rb.sock, 10000, &conn)) != RB_OK ||
        (rc = rb_segment_attach_owned(d->rb.inst, 0, d->uid, &seg)) != RB_OK ||
        (rc = rb_bloom_open(seg, FILTER, strlen(FILTER), &bf)) != RB_OK)
        goto out;
    atomic_fetch_add_explicit(&cw->ready, 1, memory_order_relaxed);
    while (!atomic_load_explicit(&cw->go, memory_order_relaxed)) {
        if (getppid() != parent)
            goto out;
        ex_sleep_us(100);
    }
    rc = crawl_batches(cw, cs, frontier, fetches, conn, bf);
out:
    if (rc != RB_OK)
        fprintf(stderr, PROG ": crawler %u: %s %s\n", me, rb_strerror(rc),
                conn != NULL ? rb_conn_error(conn) : "");
    rb_bloom_close(bf);
    rb_segment_close(seg);
    rb_conn_close(conn);
    return rc == RB_OK ? 0 : 1;
}

/* ---- the exact set, for comparison --------------------------------------- */

/* An open-addressing hash set of strdup'd URLs (hash + pointer per slot,
 * load <= 3/4, doubling): a compact exact set as a C program would keep
 * it. */
typedef struct url_slot {
    uint64_t hash;
    char    *url;
} url_slot_t;

typedef struct url_set {
    url_slot_t *slot;
    size_t      cap, count;
} url_set_t;

static int set_grow(url_set_t *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    url_slot_t *n = calloc(cap, sizeof(*n));

    if (n == NULL)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        size_t j = s->slot[i].hash & (cap - 1);
        if (s->slot[i].url == NULL)
            continue;
        while (n[j].url != NULL)
            j = (j + 1) & (cap - 1);
        n[j] = s->slot[i];
    }
    free(s->slot);
    s->slot = n;
    s->cap = cap;
    return 0;
}

/* 1 if url was new, 0 if present, -1 without memory. */
static int set_add(url_set_t *s, const char *url, size_t len)
{
    uint64_t h = fnv1a(url, len, 0xCBF29CE484222325ull);
    size_t j;

    if ((s->count + 1) * 4 > s->cap * 3 && set_grow(s) != 0)
        return -1;
    for (j = h & (s->cap - 1); s->slot[j].url != NULL; j = (j + 1) & (s->cap - 1))
        if (s->slot[j].hash == h && strcmp(s->slot[j].url, url) == 0)
            return 0;
    if ((s->slot[j].url = strdup(url)) == NULL)
        return -1;
    s->slot[j].hash = h;
    s->count++;
    return 1;
}

static void set_free(url_set_t *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slot[i].url);
    free(s->slot);
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

/* Bytes of the set's blocks as the allocator sized them (no per-block
 * header, so a lower bound of what it took). */
static size_t set_usable(const url_set_t *s)
{
    size_t n = malloc_usable_size(s->slot);

    for (size_t i = 0; i < s->cap; i++)
        n += s->slot[i].url ? malloc_usable_size(s->slot[i].url) : 0;
    return n;
}

/* Builds the exact set of the frontier's URLs; *bytes: what malloc says it
 * took (mallinfo2), or, under an allocator that does not report it there
 * (ASan's), the blocks' usable sizes (*how says which); *text: the bytes of
 * the distinct URLs themselves.  -1 without memory or when interrupted. */
static int64_t exact_set(const uint32_t *frontier, uint64_t total, size_t *bytes, size_t *text,
                         const char **how)
{
    url_set_t set = { NULL, 0, 0 };
    size_t before = heap_in_use();
    char url[URL_MAX];
    int64_t distinct = -1;

    *text = 0;
    for (uint64_t i = 0; i < total; i++) {
        size_t len = url_of(frontier[i], url);
        int rc = set_add(&set, url, len);

        if (rc < 0 || ex_stop_requested)
            goto out;
        *text += rc ? len : 0;
    }
    distinct = (int64_t)set.count;
    *bytes = heap_in_use() - before;
    *how = "measured";
    if (*bytes < set_usable(&set)) {
        *bytes = set_usable(&set);
        *how = "malloc_usable_size";
    }
out:
    set_free(&set);
    return distinct;
}

/* ---- the parent ---------------------------------------------------------- */

typedef struct options {
    uint64_t crawlers, distinct, total, batch, work, seed, capacity;
    double error_rate;
    rb_bloom_layout_t layout;
    int precheck;
    const char *daemon, *instance, *tmpdir;
} options_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: crawler-dedup [options]\n"
            "Crawler processes share a frontier with duplicates; a Bloom filter in a\n"
            "private ringbloomd makes every URL fetched exactly once.\n"
            "  -c, --crawlers N     crawler processes (default 4, max %d)\n"
            "  -u, --urls N         distinct URLs (default 200000)\n"
            "  -T, --total N        frontier entries, >= --urls (default 3 x --urls)\n"
            "  -b, --batch N        URLs a crawler takes at once (default 256, max %d)\n"
            "  -w, --work N         passes of the simulated fetch over a URL (default 16)\n"
            "  -e, --error-rate P   the filter's false-positive rate at capacity (default 1e-6)\n"
            "  -C, --capacity N     the filter's capacity (default --urls; it scales past it)\n"
            "  -l, --layout L       blocked (one cache line per key, the default) or\n"
            "                       standard (k probes anywhere: fewer bytes at small p)\n"
            "      --no-precheck    send every URL to the daemon, skip the shared-memory test\n"
            "  -s, --seed N         seed of the frontier (default 1)\n"
            "  -d, --daemon PATH    ringbloomd to start (default: $RB_DAEMON, else\n"
            "                       ../daemon/ringbloomd beside this program, else PATH)\n"
            "  -i, --instance NAME  instance name (default crawler-dedup-<pid>)\n"
            "  -t, --tmpdir DIR     where the daemon's temp dir goes (default $TMPDIR or /tmp)\n"
            "  -h, --help           this text\n",
            MAX_CRAWLERS, MAX_BATCH);
}

static int parse_options(int argc, char **argv, options_t *o)
{
    static const struct option longopts[] = {
        { "crawlers", required_argument, NULL, 'c' },
        { "urls", required_argument, NULL, 'u' },
        { "total", required_argument, NULL, 'T' },
        { "batch", required_argument, NULL, 'b' },
        { "work", required_argument, NULL, 'w' },
        { "error-rate", required_argument, NULL, 'e' },
        { "capacity", required_argument, NULL, 'C' },
        { "layout", required_argument, NULL, 'l' },
        { "no-precheck", no_argument, NULL, 'P' },
        { "seed", required_argument, NULL, 's' },
        { "daemon", required_argument, NULL, 'd' },
        { "instance", required_argument, NULL, 'i' },
        { "tmpdir", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char *tmp = getenv("TMPDIR");
    char *end;
    int opt, bad = 0;

    *o = (options_t){ .crawlers = 4, .distinct = 200000, .batch = 256, .work = 16, .seed = 1,
                      .error_rate = 1e-6, .layout = RB_BLOOM_BLOCKED, .precheck = 1 };
    o->tmpdir = tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp";
    while ((opt = getopt_long(argc, argv, "c:u:T:b:w:e:C:l:s:d:i:t:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': bad |= ex_parse_u64("--crawlers", optarg, 1, MAX_CRAWLERS, &o->crawlers); break;
        case 'u': bad |= ex_parse_u64("--urls", optarg, 1, UINT32_MAX, &o->distinct); break;
        case 'T': bad |= ex_parse_u64("--total", optarg, 1, 1ull << 32, &o->total); break;
        case 'b': bad |= ex_parse_u64("--batch", optarg, 1, MAX_BATCH, &o->batch); break;
        case 'w': bad |= ex_parse_u64("--work", optarg, 0, 1u << 20, &o->work); break;
        case 'C': bad |= ex_parse_u64("--capacity", optarg, 1, 1ull << 36, &o->capacity); break;
        case 's': bad |= ex_parse_u64("--seed", optarg, 0, UINT64_MAX, &o->seed); break;
        case 'e':
            errno = 0;
            o->error_rate = strtod(optarg, &end);
            if (errno != 0 || end == optarg || *end != '\0' || !(o->error_rate > 0) ||
                !(o->error_rate < 1)) {
                fprintf(stderr, PROG ": --error-rate wants a number in (0, 1), got '%s'\n", optarg);
                bad = -1;
            }
            break;
        case 'l':
            if (strcmp(optarg, "blocked") == 0 || strcmp(optarg, "standard") == 0) {
                o->layout = optarg[0] == 'b' ? RB_BLOOM_BLOCKED : RB_BLOOM_STANDARD;
            } else {
                fprintf(stderr, PROG ": --layout wants blocked or standard, got '%s'\n", optarg);
                bad = -1;
            }
            break;
        case 'P': o->precheck = 0; break;
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
    if (o->total == 0)
        o->total = 3 * o->distinct;
    if (o->capacity == 0)
        o->capacity = o->distinct;
    if (!bad && o->total < o->distinct) {
        fprintf(stderr, PROG ": --total (%" PRIu64 ") must be at least --urls (%" PRIu64 ")\n",
                o->total, o->distinct);
        bad = -1;
    }
    return bad ? -1 : 0;
}

/* Waits until every crawler is connected; -1 if one failed first (its pid
 * is then reaped and set to 0), on a signal or after 30 s. */
static int wait_ready(crawl_t *cw, pid_t *pids, uint32_t n)
{
    double deadline = ex_now_s() + 30;

    while (atomic_load_explicit(&cw->ready, memory_order_relaxed) < n) {
        for (uint32_t i = 0; i < n; i++) {
            if (waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
                fprintf(stderr, PROG ": crawler %u exited before the start\n", i);
                pids[i] = 0;
                return -1;
            }
        }
        if (ex_stop_requested || ex_now_s() > deadline)
            return -1;
        ex_sleep_us(200);
    }
    return 0;
}

/* Reaps the crawlers in pids[0 .. n) (setting each to 0 once reaped).  -1
 * if any failed, or on a signal or at the deadline, with those still
 * running left in pids for main's exit path to kill. */
static int reap(pid_t *pids, uint32_t n, double deadline)
{
    uint32_t left = n;
    int bad = 0;

    while (left > 0) {
        for (uint32_t i = 0; i < n; i++) {
            int status;

            if (pids[i] == 0 || waitpid(pids[i], &status, WNOHANG) != pids[i])
                continue;
            bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
            pids[i] = 0;
            left--;
        }
        if (left == 0)
            break;
        if (ex_stop_requested || ex_now_s() > deadline) {
            fprintf(stderr, PROG ": %s; stopping the crawlers\n",
                    ex_stop_requested ? "interrupted" : "crawl timed out");
            return -1;
        }
        ex_sleep_us(200);
    }
    return bad ? -1 : 0;
}

/* The report after the crawl.  Returns 0 if every distinct URL was fetched
 * at most once (never twice), else -1. */
static int report(const options_t *o, const crawl_t *cw, const uint32_t *frontier,
                  _Atomic uint32_t *fetches, const rb_segment_t *seg, double secs)
{
    uint64_t taken = 0, fetched = 0, shm = 0, dmn = 0, once = 0, never = 0, twice = 0;
    size_t set_bytes = 0, text = 0;
    const char *how = "";
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    int64_t distinct;
    int rc;

    printf("\n  %-8s %10s %10s %14s %16s\n", "crawler", "taken", "fetched", "skipped (shm)",
           "skipped (daemon)");
    for (uint32_t i = 0; i < o->crawlers; i++) {
        const crawler_stat_t *cs = &cw->c[i];
        printf("  %-8u %10" PRIu64 " %10" PRIu64 " %14" PRIu64 " %16" PRIu64 "\n", i, cs->taken,
               cs->fetched, cs->skipped_shm, cs->skipped_daemon);
        taken += cs->taken;
        fetched += cs->fetched;
        shm += cs->skipped_shm;
        dmn += cs->skipped_daemon;
    }
    printf("  %-8s %10" PRIu64 " %10" PRIu64 " %14" PRIu64 " %16" PRIu64 "\n", "total", taken,
           fetched, shm, dmn);
    printf("crawl: %" PRIu64 " URLs in %.3f s: %.0f URLs/s, %.0f fetches/s\n", taken, secs,
           (double)taken / secs, (double)fetched / secs);

    for (uint64_t id = 0; id < o->distinct; id++) {
        uint32_t c = atomic_load_explicit(&fetches[id], memory_order_relaxed);
        once += c == 1;
        never += c == 0;
        twice += c > 1;
    }
    printf("exactly once: %" PRIu64 " of %" PRIu64 " distinct URLs fetched once, %" PRIu64
           " more than once, %" PRIu64 " never (false positives)\n", once, o->distinct, twice,
           never);
    printf("duplicates skipped: %" PRIu64 " of %" PRIu64 " URLs (total - distinct = %" PRIu64
           "): %" PRIu64 " from shared memory, %" PRIu64 " by the daemon's test-and-add\n",
           shm + dmn, taken, taken - o->distinct, shm, dmn);

    if ((rc = rb_bloom_open(seg, FILTER, strlen(FILTER), &bf)) != RB_OK ||
        (rc = rb_bloom_stat(bf, &st)) != RB_OK) {
        fprintf(stderr, PROG ": filter stat: %s\n", rb_strerror(rc));
        return -1;
    }
    rb_bloom_close(bf);
    if ((distinct = exact_set(frontier, o->total, &set_bytes, &text, &how)) < 0) {
        fprintf(stderr, PROG ": %s\n",
                ex_stop_requested ? "interrupted" : "out of memory for the exact set");
        return -1;
    }
    printf("memory: Bloom filter %.2f MB (%.2f B/URL: %u layer%s, k = %u, %" PRIu64
           " items, estimated FPR now %.2g)\n", (double)st.bytes / 1e6,
           (double)st.bytes / (double)o->distinct, st.layers, st.layers == 1 ? "" : "s", st.k,
           st.items, st.est_fpr);
    printf("        exact hash set %.2f MB %s (%.1f B/URL, of which %.1f B of URL text; "
           "%" PRId64 " distinct): the filter is %.1fx smaller\n", (double)set_bytes / 1e6, how,
           (double)set_bytes / (double)distinct, (double)text / (double)distinct, distinct,
           (double)set_bytes / (double)st.bytes);
    return twice == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    options_t o;
    pid_t pids[MAX_CRAWLERS] = { 0 }, parent = getpid();
    char dbuf[PATH_MAX];
    const char *bin;
    ex_daemon_t d = { 0 };
    rb_conn_t *conn = NULL;
    rb_segment_t *seg = NULL;
    crawl_t *cw = MAP_FAILED;
    uint32_t *frontier = MAP_FAILED;
    _Atomic uint32_t *fetches = MAP_FAILED;
    size_t frontier_bytes = 0, fetches_bytes = 0;
    uint32_t started = 0;
    uint64_t top;
    rb_bloom_params_t bp;
    double t0, secs;
    int rc, status = 1;

    ex_init(PROG);
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    bin = rbl_daemon_path(o.daemon, dbuf, sizeof(dbuf));
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (ex_catch_signals() != 0)
        return 1;

    frontier_bytes = o.total * sizeof(*frontier);
    fetches_bytes = o.distinct * sizeof(*fetches);
    cw = mmap(NULL, sizeof(*cw), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    frontier = mmap(NULL, frontier_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
    fetches = mmap(NULL, fetches_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (cw == MAP_FAILED || frontier == MAP_FAILED || fetches == MAP_FAILED) {
        perror(PROG ": mmap");
        goto out;
    }
    cw->total = o.total;
    cw->batch = (uint32_t)o.batch;
    cw->work = (uint32_t)o.work;
    cw->precheck = o.precheck;
    top = make_frontier(frontier, o.total, o.distinct, o.seed);

    if (ex_daemon_start(&d, bin, o.tmpdir, o.instance, &conn) != 0)
        goto out;
    printf(PROG ": ringbloomd pid %d, instance %s, socket %s\n", (int)d.rb.pid, d.rb.inst, d.rb.sock);
    printf(PROG ": frontier of %" PRIu64 " URLs, %" PRIu64 " distinct (%.1f copies on average, "
           "the most linked page %" PRIu64 "), %" PRIu64 " crawlers, batches of %" PRIu64 "%s\n",
           o.total, o.distinct, (double)o.total / (double)o.distinct, top, o.crawlers, o.batch,
           o.precheck ? "" : ", no shared-memory precheck");
    bp = (rb_bloom_params_t){ .capacity = o.capacity, .error_rate = o.error_rate,
                              .layout = o.layout };
    if ((rc = rb_conn_bf_reserve(conn, FILTER, strlen(FILTER), &bp)) != RB_OK) {
        fprintf(stderr, PROG ": BF.RESERVE: %s %s\n", rb_strerror(rc), rb_conn_error(conn));
        goto out;
    }
    printf(PROG ": filter '" FILTER "': capacity %" PRIu64 ", error rate %g, %s layout, "
           "scaling\n", o.capacity, o.error_rate,
           o.layout == RB_BLOOM_BLOCKED ? "blocked" : "standard");
    if ((rc = rb_segment_attach_owned(d.rb.inst, 0, d.uid, &seg)) != RB_OK) {
        fprintf(stderr, PROG ": attach %s: %s\n", d.rb.inst, rb_strerror(rc));
        goto out;
    }

    for (started = 0; started < o.crawlers; started++) {
        pid_t pid = fork();

        if (pid < 0) {
            perror(PROG ": fork");
            goto out;
        }
        if (pid == 0) {
            if (ex_child_setup(parent) != 0)
                _exit(1);
            _exit(crawler_main(&d, cw, started, frontier, fetches, parent));
        }
        pids[started] = pid;
    }
    if (wait_ready(cw, pids, started) != 0)
        goto out;
    t0 = ex_now_s();
    atomic_store_explicit(&cw->go, 1, memory_order_relaxed);
    rc = reap(pids, started, t0 + CRAWL_TIMEOUT_S);
    secs = ex_now_s() - t0;
    if (rc != 0)
        goto out;
    status = report(&o, cw, frontier, fetches, seg, secs) == 0 ? 0 : 1;

out:
    for (uint32_t i = 0; i < started; i++)
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
        }
    rb_segment_close(seg);
    ex_daemon_stop(&d, conn);
    if (cw != MAP_FAILED)
        munmap(cw, sizeof(*cw));
    if (frontier != MAP_FAILED)
        munmap(frontier, frontier_bytes);
    if (fetches != MAP_FAILED)
        munmap((void *)fetches, fetches_bytes);
    if (status == 0)
        printf("\n" PROG ": done; ringbloomd stopped, temp dir removed\n");
    return status;
}
