/*
 * check_dump.c - BF.SCANDUMP / BF.LOADCHUNK and LAYOUT redisbloom, through
 * the command table of a server built in this process (as check_cmd.c):
 * RedisBloom 2.6.28's recorded dumps (tests/golden/redisbloom/) load and
 * answer exactly as RedisBloom did, the same reserve and adds dump the
 * same bytes, our layouts move between two servers answering identically,
 * hostile chunks are refused, and a loaded filter replays from the log.
 */
#include <stdarg.h>
#include <syslog.h>

#include "cmd.h"
#include "ops.h"
#include "rb_test.h"
#include "replay.h"
#include "tsrv.h"

#define PROBES 20000

static void tsrv_open(tsrv_t *t)
{
    tsrv_open_sized(t, "checkdump", 32u << 20, 64);
}

/* Runs request argv[0 .. n) (binary-safe); the reply is t->c.out. */
static const char *runv(tsrv_t *t, size_t n, const char **argv, const size_t *argl)
{
    t->c.out.len = 0;
    rbd_cmd_execute(&t->s, &t->c, n, argv, argl);
    ck_assert_int_eq(rbd_aof_flush(&t->s.aof), 0);
    rbi_buf_append(&t->c.out, "", 1);   /* a NUL after the reply, for string checks */
    t->c.out.len--;
    return (const char *)t->c.out.data;
}

static const char *run(tsrv_t *t, const char *word, ...)
{
    const char *argv[16];
    size_t argl[16], n;
    va_list ap;

    va_start(ap, word);
    n = tsrv_words(argv, argl, 16, word, ap);
    va_end(ap);
    return runv(t, n, argv, argl);
}

static const char *loadchunk(tsrv_t *t, const char *name, long long iter, const void *p,
                             size_t n)
{
    char it[32];
    const char *argv[4] = { "BF.LOADCHUNK", name, it, p };
    size_t argl[4] = { 12, strlen(name), 0, n };

    argl[2] = (size_t)snprintf(it, sizeof(it), "%lld", iter);
    return runv(t, 4, argv, argl);
}

/* BF.SCANDUMP name iter: the next iterator, the chunk into *data (malloc'd). */
static long long scandump(tsrv_t *t, const char *name, long long iter, unsigned char **data,
                          size_t *n)
{
    char it[32], *end;
    const char *r;
    long long next;

    snprintf(it, sizeof(it), "%lld", iter);
    r = run(t, "BF.SCANDUMP", name, it, NULL);
    ck_assert_msg(strncmp(r, "*2\r\n:", 5) == 0, "%s", r);
    next = strtoll(r + 5, &end, 10);
    ck_assert(end[0] == '\r' && end[2] == '$');
    *n = strtoul(end + 3, &end, 10);
    *data = malloc(*n + 1);
    memcpy(*data, end + 2, *n);
    return next;
}

/* ---- the golden files ---------------------------------------------------------- */

static char *slurp(const char *rel, size_t *n)
{
    const char *dir = getenv("srcdir");
    char path[512];
    char *buf = malloc(1u << 20);
    FILE *f;

    snprintf(path, sizeof(path), "%s/tests/golden/redisbloom/%s", dir ? dir : ".", rel);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    *n = fread(buf, 1, (1u << 20) - 1, f);
    buf[*n] = '\0';
    fclose(f);
    return buf;
}

/* One case of manifest.json, read with strstr (the file is ours, fixed). */
typedef struct gcase {
    const char *name;
    unsigned nchunks;
    long long iters[8];
    size_t nkeys;
    uint8_t positive[PROBES];
    size_t npositive;
    long long capacity, filters, items, expansion;   /* expansion -1: null */
} gcase_t;

static long long num_after(const char *from, const char *label)
{
    const char *p = strstr(from, label);

    ck_assert_ptr_nonnull(p);
    p += strlen(label);
    while (*p == ' ' || *p == ':' || *p == '"')
        p++;
    return strncmp(p, "null", 4) == 0 ? -1 : strtoll(p, NULL, 10);
}

static void golden_case(const char *name, gcase_t *g)
{
    size_t n;
    char *m = slurp("manifest.json", &n), pat[64], *at, *end, *p;

    memset(g, 0, sizeof(*g));
    g->name = name;
    snprintf(pat, sizeof(pat), "\"key\": \"%s\"", name);
    at = strstr(m, pat);
    ck_assert_ptr_nonnull(at);
    end = strstr(at + 1, "\"key\":");
    if (end != NULL)
        *end = '\0';
    snprintf(pat, sizeof(pat), "%s:key:", name);
    p = strstr(strstr(at, "\"added\""), " .. ");
    g->nkeys = (size_t)strtoull(strstr(p, pat) + strlen(pat), NULL, 10) + 1;
    for (p = at; (p = strstr(p, "\"iterator\":")) != NULL; p++)
        g->iters[g->nchunks++] = num_after(p, "\"iterator\"");
    p = strchr(strstr(at, "probe_indexes_answering_1"), '[') + 1;
    while (*p != ']') {
        long v = strtol(p, &p, 10);
        g->positive[v] = 1;
        g->npositive++;
        while (*p == ',' || *p == ' ' || *p == '\n')
            p++;
    }
    g->capacity = num_after(at, "\"Capacity\"");
    g->filters = num_after(at, "\"Number of filters\"");
    g->items = num_after(at, "\"Number of items inserted\"");
    g->expansion = num_after(at, "\"Expansion rate\"");
    free(m);
}

static const char *const cases[] = { "plain", "scaling", "nonscaling", "implicit" };

/* Every added key answers 1, exactly g's probes answer 1, and BF.INFO's
 * comparable fields are RedisBloom's. */
static void check_answers(tsrv_t *t, const gcase_t *g)
{
    rb_bloom_t *bf;
    char key[64];
    size_t hits = 0;
    rb_bloom_stat_t st;

    ck_assert_int_eq(rb_bloom_open(t->s.state.seg, g->name, strlen(g->name), &bf), RB_OK);
    for (size_t i = 0; i < g->nkeys; i++) {
        int len = snprintf(key, sizeof(key), "%s:key:%zu", g->name, i);
        ck_assert_int_eq(rb_bloom_contains(bf, key, (size_t)len), 1);
    }
    for (size_t i = 0; i < PROBES; i++) {
        int len = snprintf(key, sizeof(key), "%s:probe:%zu", g->name, i);
        int r = rb_bloom_contains(bf, key, (size_t)len);
        ck_assert_msg(r == g->positive[i], "%s probe %zu: %d", g->name, i, r);
        hits += (size_t)r;
    }
    ck_assert_uint_eq(hits, g->npositive);
    ck_assert_int_eq(rb_bloom_info(bf, &st), RB_OK);
    ck_assert_int_eq((long long)st.capacity, g->capacity);
    ck_assert_int_eq((long long)st.layers, g->filters);
    ck_assert_int_eq((long long)st.items, g->items);
    ck_assert_int_eq(st.flags & RB_BLOOM_NONSCALING ? -1 : (long long)st.expansion, g->expansion);
    rb_bloom_close(bf);
}

static void load_golden(tsrv_t *t, const gcase_t *g)
{
    for (unsigned c = 0; c < g->nchunks; c++) {
        char file[64];
        size_t n;
        char *data;
        snprintf(file, sizeof(file), "%s.%u.chunk", g->name, c);
        data = slurp(file, &n);
        ck_assert_str_eq(loadchunk(t, g->name, g->iters[c], data, n), "+OK\r\n");
        free(data);
    }
}

START_TEST(test_dump_redisbloom_chunks_load_and_answer_as_redisbloom)
{
    tsrv_t t;
    gcase_t *g = malloc(sizeof(*g));

    tsrv_open(&t);
    for (size_t c = 0; c < 4; c++) {
        golden_case(cases[c], g);
        load_golden(&t, g);
        check_answers(&t, g);
    }
    free(g);
    tsrv_close(&t);
}
END_TEST

/* The reserve RedisBloom was given (implicit: its BF.MADD defaults). */
static void reserve_as_recorded(tsrv_t *t, const char *name)
{
    const char *r;

    if (strcmp(name, "plain") == 0)
        r = run(t, "BF.RESERVE", name, "0.01", "1000", "LAYOUT", "redisbloom", NULL);
    else if (strcmp(name, "scaling") == 0)
        r = run(t, "BF.RESERVE", name, "0.001", "100", "EXPANSION", "2", "LAYOUT", "redisbloom",
                NULL);
    else if (strcmp(name, "nonscaling") == 0)
        r = run(t, "BF.RESERVE", name, "0.05", "5000", "NONSCALING", "LAYOUT", "redisbloom", NULL);
    else
        r = run(t, "BF.RESERVE", name, "0.01", "100", "LAYOUT", "redisbloom", NULL);
    ck_assert_str_eq(r, "+OK\r\n");
}

/* BF.MADD of keys [from, to) of g, in one request. */
static void madd(tsrv_t *t, const char *name, const char *tag, size_t from, size_t to)
{
    const char **argv = malloc((to - from + 2) * sizeof(*argv));
    size_t *argl = malloc((to - from + 2) * sizeof(*argl));
    char (*keys)[64] = malloc((to - from) * 64);

    argv[0] = "BF.MADD";
    argv[1] = name;
    argl[0] = 7;
    argl[1] = strlen(name);
    for (size_t i = from; i < to; i++) {
        argl[i - from + 2] = (size_t)snprintf(keys[i - from], 64, "%s:%s:%zu", name, tag, i);
        argv[i - from + 2] = keys[i - from];
    }
    ck_assert(runv(t, to - from + 2, argv, argl)[0] == '*');
    free(argv);
    free(argl);
    free(keys);
}

START_TEST(test_dump_redisbloom_same_adds_dump_the_same_bytes)
{
    tsrv_t t;
    gcase_t *g = malloc(sizeof(*g));

    tsrv_open(&t);
    for (size_t c = 0; c < 4; c++) {
        long long iter = 0;
        golden_case(cases[c], g);
        reserve_as_recorded(&t, g->name);
        for (size_t i = 0; i < g->nkeys; i += 500)
            madd(&t, g->name, "key", i, i + 500 < g->nkeys ? i + 500 : g->nkeys);
        for (unsigned k = 0; k < g->nchunks; k++) {
            char file[64];
            size_t n, gn;
            unsigned char *data;
            char *want;
            snprintf(file, sizeof(file), "%s.%u.chunk", g->name, k);
            want = slurp(file, &gn);
            iter = scandump(&t, g->name, iter, &data, &n);
            ck_assert_int_eq(iter, g->iters[k]);
            ck_assert_uint_eq(n, gn);
            ck_assert_msg(memcmp(data, want, n) == 0, "%s chunk %u differs", g->name, k);
            free(data);
            free(want);
        }
        {
            size_t n;
            unsigned char *data;
            ck_assert_int_eq(scandump(&t, g->name, iter, &data, &n), 0);
            ck_assert_uint_eq(n, 0);
            free(data);
        }
    }
    free(g);
    tsrv_close(&t);
}
END_TEST

/* Dumps filter name of t and loads it into u under the same name. */
static void move(tsrv_t *t, tsrv_t *u, const char *name)
{
    long long iter = 0, next;

    do {
        unsigned char *data;
        size_t n;
        next = scandump(t, name, iter, &data, &n);
        if (next != 0)
            ck_assert_str_eq(loadchunk(u, name, next, data, n), "+OK\r\n");
        free(data);
        iter = next;
    } while (iter != 0);
}

/* The 20,000 probes and the added keys answer alike in t and u. */
static void same_answers(tsrv_t *t, tsrv_t *u, const char *name, size_t nkeys)
{
    rb_bloom_t *a, *b;
    char key[64];
    size_t hits = 0;

    ck_assert_int_eq(rb_bloom_open(t->s.state.seg, name, strlen(name), &a), RB_OK);
    ck_assert_int_eq(rb_bloom_open(u->s.state.seg, name, strlen(name), &b), RB_OK);
    for (size_t i = 0; i < nkeys; i++) {
        int len = snprintf(key, sizeof(key), "%s:key:%zu", name, i);
        ck_assert_int_eq(rb_bloom_contains(b, key, (size_t)len), 1);
    }
    for (size_t i = 0; i < PROBES; i++) {
        int len = snprintf(key, sizeof(key), "%s:probe:%zu", name, i);
        int r = rb_bloom_contains(a, key, (size_t)len);
        ck_assert_int_eq(rb_bloom_contains(b, key, (size_t)len), r);
        hits += (size_t)r;
    }
    ck_assert_uint_gt(hits, 0);   /* the comparison covered some positives */
    rb_bloom_close(a);
    rb_bloom_close(b);
}

START_TEST(test_dump_ours_moves_between_servers_answering_identically)
{
    static const char *const names[] = { "blk", "std", "aged", "rbl" };
    tsrv_t t, u;

    tsrv_open(&t);
    tsrv_open(&u);
    ck_assert_str_eq(run(&t, "BF.RESERVE", "blk", "0.05", "300", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "BF.RESERVE", "std", "0.05", "2000", "NONSCALING", "LAYOUT",
                         "standard", NULL), "+OK\r\n");
    ck_assert_str_eq(run(&t, "BF.RESERVE", "aged", "0.05", "600", "AGING", "0", NULL),
                     "+OK\r\n");
    ck_assert_str_eq(run(&t, "BF.RESERVE", "rbl", "0.05", "300", "LAYOUT", "redisbloom", NULL),
                     "+OK\r\n");
    for (size_t f = 0; f < 4; f++) {
        madd(&t, names[f], "key", 0, 1000);
        move(&t, &u, names[f]);
        same_answers(&t, &u, names[f], f == 2 ? 0 : 1000);   /* aging: rotated some away */
    }
    /* Asking for RedisBloom's format from one of ours is refused. */
    ck_assert_msg(strstr(run(&t, "BF.SCANDUMP", "blk", "0", "FORMAT", "redisbloom", NULL),
                         "only LAYOUT redisbloom") != NULL, "%s", (char *)t.c.out.data);
    tsrv_close(&u);
    tsrv_close(&t);
}
END_TEST

START_TEST(test_dump_hostile_chunks_are_refused)
{
    tsrv_t t;
    size_t n;
    char *hdr = slurp("scaling.0.chunk", &n), *bad = malloc(n + 64), name[32];
    uint64_t huge = 1ULL << 40;

    tsrv_open(&t);
    /* Truncated, longer, not a header at all. */
    ck_assert(loadchunk(&t, "h", 1, hdr, n - 1)[0] == '-');
    memcpy(bad, hdr, n);
    ck_assert(loadchunk(&t, "h", 1, bad, n + 1)[0] == '-');
    ck_assert(loadchunk(&t, "h", 1, "xyz", 3)[0] == '-');
    /* A link's declared bytes that are not its bits / 8; huge sizes. */
    memcpy(bad, hdr, n);
    bad[20] ^= 1;
    ck_assert(loadchunk(&t, "h", 1, bad, n)[0] == '-');
    memcpy(bad, hdr, n);
    memcpy(bad + 20, &(uint64_t){ huge / 8 }, 8);
    memcpy(bad + 28, &huge, 8);
    ck_assert(loadchunk(&t, "h", 1, bad, n)[0] == '-');
    /* The filter count claims more than the bytes hold. */
    memcpy(bad, hdr, n);
    bad[8] = 100;
    ck_assert(loadchunk(&t, "h", 1, bad, n)[0] == '-');
    ck_assert_str_eq(run(&t, "BF.EXISTS", "h", "x", NULL), ":0\r\n");   /* nothing made */
    /* Random damage to a good header never crashes; what loads is sound. */
    srand(14);
    for (int i = 0; i < 300; i++) {
        memcpy(bad, hdr, n);
        bad[rand() % (int)n] = (char)rand();
        snprintf(name, sizeof(name), "fz%d", i % 40);
        (void)loadchunk(&t, name, 1, bad, n);
    }
    /* Bad iterators on a good filter. */
    ck_assert_str_eq(loadchunk(&t, "good", 1, hdr, n), "+OK\r\n");
    ck_assert(loadchunk(&t, "good", 0, "ab", 2)[0] == '-');
    ck_assert(loadchunk(&t, "good", -5, "ab", 2)[0] == '-');
    ck_assert(loadchunk(&t, "good", 2, "ab", 2)[0] == '-');          /* before position 0 */
    ck_assert(loadchunk(&t, "good", 1 << 20, "ab", 2)[0] == '-');    /* past the end */
    ck_assert(strstr(loadchunk(&t, "good", 202, bad, 201), "Too big") != NULL);
    ck_assert(strstr(run(&t, "BF.LOADCHUNK", "good", "x", "ab", NULL), "numeric") != NULL);
    ck_assert_str_eq(run(&t, "BF.SCANDUMP", "good", "-3", NULL), "*2\r\n:0\r\n$0\r\n\r\n");
    /* A RedisBloom header into an existing filter of ours is refused. */
    ck_assert_str_eq(run(&t, "BF.RESERVE", "ours", "0.01", "100", NULL), "+OK\r\n");
    ck_assert(strstr(loadchunk(&t, "ours", 1, hdr, n), "RedisBloom dump") != NULL);
    free(bad);
    free(hdr);
    tsrv_close(&t);
}
END_TEST

/* Replays t's log into u. */
static void replay_into(const tsrv_t *t, tsrv_t *u)
{
    rbd_snap_t snap = { .path = "snapshot", .present = 1, .version = 3, .header = 128,
                        .next_log = t->s.aof.log_id };
    rbd_replay_t r;
    char path[128], err[512];
    unsigned char *log = malloc(4u << 20);
    size_t len;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", t->dir, RBD_LOG_FILE);
    ck_assert_ptr_nonnull(f = fopen(path, "rb"));
    len = fread(log, 1, 4u << 20, f);
    fclose(f);
    ck_assert_msg(rbd_replay_log(&u->s.cfg, &u->s.state, "log", log, len, &snap, &r, err,
                                 sizeof(err)) == 0, "%s", err);
    free(log);
}

START_TEST(test_dump_loaded_filters_replay_from_the_log)
{
    tsrv_t t, u;
    gcase_t *g = malloc(sizeof(*g));

    tsrv_open(&t);
    tsrv_open(&u);
    golden_case("scaling", g);
    load_golden(&t, g);
    ck_assert_str_eq(run(&t, "BF.RESERVE", "blk", "0.05", "300", NULL), "+OK\r\n");
    madd(&t, "blk", "key", 0, 1000);
    replay_into(&t, &u);
    check_answers(&u, g);
    same_answers(&t, &u, "blk", 1000);
    free(g);
    tsrv_close(&u);
    tsrv_close(&t);
}
END_TEST

int main(void)
{
    rbd_log_init(1, LOG_WARNING);
    return RB_TEST_MAIN("dump",
                        RB_TCASE("redisbloom", 60, NULL, NULL,
                                 test_dump_redisbloom_chunks_load_and_answer_as_redisbloom,
                                 test_dump_redisbloom_same_adds_dump_the_same_bytes),
                        RB_TCASE("ours", 60, NULL, NULL,
                                 test_dump_ours_moves_between_servers_answering_identically),
                        RB_TCASE("hostile", 60, NULL, NULL, test_dump_hostile_chunks_are_refused),
                        RB_TCASE("restart", 60, NULL, NULL,
                                 test_dump_loaded_filters_replay_from_the_log));
}
