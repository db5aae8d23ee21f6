/*
 * check_hotpath.c - the hot path of a single-key command allocates
 * nothing and formats nothing through stdio (issue 29, item 4): a server
 * built in this process (tsrv.h) runs BF.ADD, BF.EXISTS, CF.ADD,
 * CF.ADDNX, CF.EXISTS, CF.DEL, CF.COUNT, CF.INFO, CMS.INCRBY, CMS.QUERY
 * and PFADD (of one element and of a few), and the commands of a few
 * items or keys (CF.MEXISTS, CF.INSERT, CF.INSERTNX, PFCOUNT, PFMERGE)
 * through the command table and the log's group commit, and
 * wrappers of malloc, calloc, realloc, free, strdup and the *printf family
 * (linked with --wrap) count the calls the daemon's code makes while a
 * window is open: after a warm-up (first binds, the log's buffer grown),
 * N repeats of each command must make none; and the same for whole loop
 * turns of a client on a socket (read, parse, run, group commit, reply).
 *
 * Also here: what the daemon keeps between commands to avoid those calls
 * (cached handles) never outlives the filter it was made for: a name
 * deleted and made again as another kind or shape, through DEL or behind
 * the daemon's back, is seen as it is now.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <syslog.h>

#include "client.h"
#include "cmd.h"
#include "ops.h"
#include "rb_test.h"
#include "tsrv.h"

/* ---- counting allocator and formatter ------------------------------------------- */

/* The link wraps these (Makefile.am: -Wl,--wrap=...): every call from the
 * daemon's objects and the statically linked library comes here, and goes
 * on to the real one (which a sanitizer build intercepts as usual).  Calls
 * glibc makes inside itself are not seen: the daemon's own strdup /
 * strndup / asprintf are wrapped by name instead. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vsnprintf(char *s, size_t n, const char *fmt, va_list ap);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vsnprintf(char *s, size_t n, const char *fmt, va_list ap);
int __wrap_snprintf(char *s, size_t n, const char *fmt, ...);
int __wrap___vsnprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt,
                           va_list ap);
int __wrap___snprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, ...);
int __wrap_asprintf(char **out, const char *fmt, ...);

static int counting;            /* the window is open */
static unsigned long allocs;    /* malloc / calloc / realloc / free / strdup calls in it */
static unsigned long formats;   /* *printf calls in it */

void *__wrap_malloc(size_t n)
{
    allocs += counting;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    allocs += counting;
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    allocs += counting;
    return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
    allocs += p != NULL && counting;
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    allocs += counting;
    return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    allocs += counting;
    return __real_strndup(s, n);
}

int __wrap_vsnprintf(char *s, size_t n, const char *fmt, va_list ap)
{
    formats += counting;
    return __real_vsnprintf(s, n, fmt, ap);
}

int __wrap_snprintf(char *s, size_t n, const char *fmt, ...)
{
    va_list ap;
    int r;

    formats += counting;
    va_start(ap, fmt);
    r = __real_vsnprintf(s, n, fmt, ap);
    va_end(ap);
    return r;
}

/* _FORTIFY_SOURCE's spellings of the same two. */
int __wrap___vsnprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt,
                           va_list ap)
{
    (void)flag;
    (void)slen;
    formats += counting;
    return __real_vsnprintf(s, n, fmt, ap);
}

int __wrap___snprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, ...)
{
    va_list ap;
    int r;

    (void)flag;
    (void)slen;
    formats += counting;
    va_start(ap, fmt);
    r = __real_vsnprintf(s, n, fmt, ap);
    va_end(ap);
    return r;
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    int r;

    allocs += counting;
    formats += counting;
    va_start(ap, fmt);
    r = vasprintf(out, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- the server ------------------------------------------------------------------ */

/* Runs the request argv[0 .. n) as t's client, then the group commit, as
 * the event loop's turn does; nothing is checked here (the window may be
 * open).  The reply stays in t->c.out. */
static void exec_argv(tsrv_t *t, size_t n, const char **argv, size_t *argl)
{
    t->c.out.len = 0;
    rbd_cmd_execute(&t->s, &t->c, n, argv, argl);
    t->flushed = rbd_aof_flush(&t->s.aof);
}

/* exec_argv of the NULL-terminated words. */
static void exec_words(tsrv_t *t, const char *word, ...)
{
    const char *argv[16];
    size_t argl[16], n;
    va_list ap;

    va_start(ap, word);
    n = tsrv_words(argv, argl, 16, word, ap);
    va_end(ap);
    exec_argv(t, n, argv, argl);
}

/* t's last reply, NUL-terminated. */
static const char *reply(tsrv_t *t)
{
    ck_assert_uint_lt(t->c.out.len, sizeof(t->reply));
    memcpy(t->reply, t->c.out.data, t->c.out.len);
    t->reply[t->c.out.len] = '\0';
    return t->reply;
}

#define REPEATS 200
#define KEYWORDS 3                         /* the most key words of one command */
#define KEYS (KEYWORDS * 2 * REPEATS)      /* the window's items are not the warm-up's */

static char keys[KEYS][24];   /* "item-" and any int */

/* A command's words, NULL-terminated; each KEY among them stands for the
 * round's next item. */
static const char KEY[] = "<key>";
#define W(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The server, its filters made, and KEYS distinct items. */
static void open_filled(tsrv_t *t)
{
    tsrv_open_sized(t, "checkhot", 8u << 20, 16);
    exec_words(t, "BF.RESERVE", "b", "0.01", "100000", NULL);
    ck_assert_str_eq(reply(t), "+OK\r\n");
    exec_words(t, "CF.RESERVE", "f", "100000", NULL);
    ck_assert_str_eq(reply(t), "+OK\r\n");
    exec_words(t, "CMS.INITBYDIM", "c", "2000", "5", NULL);
    ck_assert_str_eq(reply(t), "+OK\r\n");
    exec_words(t, "PFADD", "h", "seed", NULL);
    ck_assert_str_eq(reply(t), ":1\r\n");
    exec_words(t, "PFADD", "h3", "other", NULL);
    ck_assert_str_eq(reply(t), ":1\r\n");
    for (int i = 0; i < KEYS; i++)
        snprintf(keys[i], sizeof(keys[i]), "item-%d", i);
}

/* Runs the command of words for round i, its j-th KEY item
 * KEYWORDS * i + j: the items of one round are no other round's. */
static void one(tsrv_t *t, const char *const *words, int i)
{
    const char *argv[16];
    size_t argl[16], n = 0;
    int j = 0;

    for (; n < 16 && words[n] != NULL; n++) {
        argv[n] = words[n] == KEY ? keys[(KEYWORDS * i + j++) % KEYS] : words[n];
        argl[n] = strlen(argv[n]);
    }
    exec_argv(t, n, argv, argl);
}

/* Calls made by REPEATS rounds of the command of words (after as many to
 * warm up, with other items: a CF.ADD of the same item again and again
 * would fill its buckets and move fingerprints, which is no single add's
 * common path), each round's reply starting with `first`. */
static void expect_none(const char *const *words, char first)
{
    tsrv_t t;
    unsigned long a, f;
    char bad = 0;

    open_filled(&t);
    for (int i = 0; i < REPEATS; i++)
        one(&t, words, i);
    ck_assert_msg(t.c.out.data[0] == first, "%s: %s", words[0], reply(&t));
    allocs = formats = 0;
    counting = 1;
    for (int i = REPEATS; i < 2 * REPEATS; i++) {
        one(&t, words, i);
        if (t.c.out.len == 0 || t.c.out.data[0] != first)
            bad = 1;
    }
    counting = 0;
    a = allocs;
    f = formats;
    ck_assert_msg(!bad, "%s: a reply was not '%c...': %s", words[0], first, reply(&t));
    ck_assert_int_eq(t.flushed, 0);
    ck_assert_msg(a == 0, "%s: %lu allocator calls in %d commands", words[0], a, REPEATS);
    ck_assert_msg(f == 0, "%s: %lu *printf calls in %d commands", words[0], f, REPEATS);
    tsrv_close(&t);
}

START_TEST(test_hot_bf_add)
{
    expect_none(W("BF.ADD", "b", KEY), ':');
}
END_TEST

START_TEST(test_hot_bf_exists)
{
    expect_none(W("BF.EXISTS", "b", KEY), ':');
}
END_TEST

START_TEST(test_hot_cf_add)
{
    expect_none(W("CF.ADD", "f", KEY), ':');
}
END_TEST

START_TEST(test_hot_cf_exists)
{
    expect_none(W("CF.EXISTS", "f", KEY), ':');
}
END_TEST

/* CF.DEL of a key found (each round adds it back first: both counted). */
START_TEST(test_hot_cf_del)
{
    tsrv_t t;
    unsigned long a, f;

    open_filled(&t);
    for (int i = 0; i < REPEATS; i++) {
        one(&t, W("CF.ADD", "f", KEY), i);
        one(&t, W("CF.DEL", "f", KEY), i);
    }
    ck_assert_str_eq(reply(&t), ":1\r\n");
    allocs = formats = 0;
    counting = 1;
    for (int i = REPEATS; i < 2 * REPEATS; i++) {
        one(&t, W("CF.ADD", "f", KEY), i);
        one(&t, W("CF.DEL", "f", KEY), i);
    }
    counting = 0;
    a = allocs;
    f = formats;
    ck_assert_str_eq(reply(&t), ":1\r\n");
    ck_assert_msg(a == 0, "CF.ADD + CF.DEL: %lu allocator calls", a);
    ck_assert_msg(f == 0, "CF.ADD + CF.DEL: %lu *printf calls", f);
    tsrv_close(&t);
}
END_TEST

START_TEST(test_hot_cms_incrby)
{
    expect_none(W("CMS.INCRBY", "c", KEY, "1"), '*');
}
END_TEST

START_TEST(test_hot_cms_query)
{
    expect_none(W("CMS.QUERY", "c", KEY), '*');
}
END_TEST

/* The multi-key reads and the cuckoo filter's other adds, through the
 * kept handle (rbd_filters_cf) and the handlers' stack arrays (scratch.h). */
START_TEST(test_hot_cf_mexists)
{
    expect_none(W("CF.MEXISTS", "f", KEY, KEY, KEY), '*');
}
END_TEST

START_TEST(test_hot_cf_count)
{
    expect_none(W("CF.COUNT", "f", KEY), ':');
}
END_TEST

START_TEST(test_hot_cf_insert)
{
    expect_none(W("CF.INSERT", "f", "ITEMS", KEY, KEY, KEY), '*');
}
END_TEST

START_TEST(test_hot_cf_insertnx)
{
    expect_none(W("CF.INSERTNX", "f", "CAPACITY", "1000", "ITEMS", KEY, KEY, KEY), '*');
}
END_TEST

START_TEST(test_hot_cf_addnx)
{
    expect_none(W("CF.ADDNX", "f", KEY), ':');
}
END_TEST

START_TEST(test_hot_cf_info)
{
    expect_none(W("CF.INFO", "f"), '*');
}
END_TEST

/* PFCOUNT of two counters (the union: no count kept) and PFMERGE of two
 * into a third: their few keys gathered on the stack. */
START_TEST(test_hot_pfcount2)
{
    expect_none(W("PFCOUNT", "h", "h3"), ':');
}
END_TEST

START_TEST(test_hot_pfmerge2)
{
    expect_none(W("PFMERGE", "hm", "h", "h3"), '+');
}
END_TEST

/* PFADD of items new to the counter in the window too (most change a
 * register or the kept count, and are logged). */
START_TEST(test_hot_pfadd)
{
    expect_none(W("PFADD", "h", KEY), ':');
}
END_TEST

/* PFADD of three elements, one of them twice, one new to the counter each
 * round (a register or the kept count changes, and a record is logged):
 * the few elements are deduplicated without a set. */
START_TEST(test_hot_pfadd_new)
{
    static char fresh[REPEATS][24];
    tsrv_t t;
    unsigned long a;

    open_filled(&t);
    for (int i = 0; i < REPEATS; i++)
        snprintf(fresh[i], sizeof(fresh[i]), "new-%d", i);
    for (int i = 0; i < 8; i++)
        exec_words(&t, "PFADD", "h2", fresh[i], "x", fresh[i], NULL);
    allocs = 0;
    counting = 1;
    for (int i = 8; i < REPEATS; i++)
        exec_words(&t, "PFADD", "h2", fresh[i], "x", fresh[i], NULL);
    counting = 0;
    a = allocs;
    ck_assert_str_eq(reply(&t), ":1\r\n");
    ck_assert_msg(a == 0, "PFADD (3 elements): %lu allocator calls", a);
    tsrv_close(&t);
}
END_TEST

/* The control: the wrappers do see the daemon's calls (an error reply is
 * formatted by vsnprintf; a new filter's handle is allocated), so the
 * zeros above are not a link that wraps nothing. */
START_TEST(test_hot_counters_see_the_daemon)
{
    tsrv_t t;
    unsigned long a, f;

    open_filled(&t);
    allocs = formats = 0;
    counting = 1;
    exec_words(&t, "CMS.INCRBY", "nosuch", "x", "1", NULL);
    exec_words(&t, "CF.RESERVE", "f2", "1000", NULL);
    exec_words(&t, "CF.EXISTS", "f2", "x", NULL);
    counting = 0;
    a = allocs;
    f = formats;
    ck_assert_uint_gt(f, 0);
    ck_assert_uint_gt(a, 0);
    tsrv_close(&t);
}
END_TEST

/* ---- the whole request path: read, parse, run, group commit, reply -------------- */

/* Appends the request of the NULL-terminated words to buf at *at. */
static void resp_words(char *buf, size_t cap, size_t *at, const char *word, ...)
{
    const char *argv[8];
    size_t argl[8], n;
    va_list ap;
    int k;

    va_start(ap, word);
    n = tsrv_words(argv, argl, 8, word, ap);
    va_end(ap);
    k = snprintf(buf + *at, cap - *at, "*%zu\r\n", n);
    ck_assert_int_gt(k, 0);
    *at += (size_t)k;
    for (size_t i = 0; i < n; i++) {
        k = snprintf(buf + *at, cap - *at, "$%zu\r\n%s\r\n", argl[i], argv[i]);
        ck_assert_int_gt(k, 0);
        *at += (size_t)k;
    }
    ck_assert_uint_lt(*at, cap);
}

/* One loop turn of a client on a socket pair, as server.c's loop runs
 * it: 32 pipelined requests (CMS.INCRBY, CF.EXISTS, BF.ADD, PFADD) read
 * and run (rbd_client_read), the group commit, the replies written
 * (rbd_client_write) and drained by the peer.  The request bytes are built
 * before the window opens. */
START_TEST(test_hot_socket_turn)
{
    static char req[2 * REPEATS][4096];
    static size_t reqlen[2 * REPEATS];
    struct ucred cred = { getpid(), getuid(), getgid() };
    char drain[65536];
    const char *bad = NULL;
    ssize_t got = 0;
    tsrv_t t;
    int sv[2];
    client_t *c;
    unsigned long a;

    open_filled(&t);
    ck_assert_int_ge(t.s.epfd = epoll_create1(EPOLL_CLOEXEC), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    rbd_client_new(&t.s, sv[0], &cred, &t.c.who);
    ck_assert_ptr_nonnull(c = t.s.clients[sv[0]]);
    for (int r = 0; r < 2 * REPEATS; r++)
        for (int k = 0; k < 8; k++) {
            const char *item = keys[(r * 8 + k) % KEYS];
            resp_words(req[r], sizeof(req[r]), &reqlen[r], "CMS.INCRBY", "c", item, "1", NULL);
            resp_words(req[r], sizeof(req[r]), &reqlen[r], "CF.EXISTS", "f", item, NULL);
            resp_words(req[r], sizeof(req[r]), &reqlen[r], "BF.ADD", "b", item, NULL);
            resp_words(req[r], sizeof(req[r]), &reqlen[r], "PFADD", "h", item, NULL);
        }
    /* No ck_assert inside the window (Check allocates for each): the
     * first thing that went wrong is kept and asserted after it. */
    for (int r = 0; r < 2 * REPEATS && bad == NULL; r++) {
        if (r == REPEATS) {
            allocs = formats = 0;
            counting = 1;
        }
        if (write(sv[1], req[r], reqlen[r]) != (ssize_t)reqlen[r])
            bad = "short write";
        rbd_client_read(&t.s, c);
        if (rbd_sinks_flush(&t.s.state.sinks) != 0)
            bad = "the log's flush failed";
        c->awaits_flush = 0;
        if (rbd_client_write(&t.s, c) != 0 || c->out.len != 0)
            bad = "the replies were not all written";
        got = read(sv[1], drain, sizeof(drain));
        if (got <= 0 || drain[0] != '*' || memchr(drain, '-', (size_t)got) != NULL)
            bad = "a reply was an error";
    }
    counting = 0;
    a = allocs;
    ck_assert_msg(bad == NULL, "%s: %.*s", bad, (int)(got > 0 && got < 200 ? got : 0), drain);
    ck_assert_msg(a == 0, "%lu allocator calls in %d turns of 32 requests", a, REPEATS);
    ck_assert_msg(formats == 0, "%lu *printf calls in %d turns", formats, REPEATS);
    rbd_client_free(&t.s, c);
    close(sv[1]);
    close(t.s.epfd);
    free(t.s.clients);
    free(t.s.argv);   /* the server's reused argument array (client.c) */
    tsrv_close(&t);
}
END_TEST

/* ---- what is kept between commands follows the name ----------------------------- */

/* A sketch deleted and made again with another shape, or as a filter of
 * another kind, is what the next command sees; and the same for a cuckoo
 * filter (its reads and writes). */
START_TEST(test_hot_recreated_names_are_seen)
{
    tsrv_t t;

    open_filled(&t);
    for (int i = 0; i < 4; i++) {
        exec_words(&t, "CMS.INCRBY", "c", "x", "5", NULL);
        exec_words(&t, "CF.ADD", "f", "x", NULL);
        exec_words(&t, "CF.EXISTS", "f", "x", NULL);
        exec_words(&t, "CMS.QUERY", "c", "x", NULL);
    }
    ck_assert_str_eq(reply(&t), "*1\r\n:20\r\n");
    /* c: another shape, counting from 0 */
    exec_words(&t, "DEL", "c", NULL);
    ck_assert_str_eq(reply(&t), ":1\r\n");
    exec_words(&t, "CMS.INITBYDIM", "c", "100", "3", NULL);
    exec_words(&t, "CMS.INCRBY", "c", "x", "2", NULL);
    ck_assert_str_eq(reply(&t), "*1\r\n:2\r\n");
    exec_words(&t, "CMS.INFO", "c", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), ":100\r\n"));
    /* c: a cuckoo filter now; f: a sketch */
    exec_words(&t, "DEL", "c", NULL);
    exec_words(&t, "CF.RESERVE", "c", "1000", NULL);
    exec_words(&t, "CMS.INCRBY", "c", "x", "1", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), "WRONGTYPE"));
    exec_words(&t, "CMS.QUERY", "c", "x", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), "WRONGTYPE"));
    exec_words(&t, "CF.EXISTS", "c", "x", NULL);
    ck_assert_str_eq(reply(&t), ":0\r\n");
    exec_words(&t, "DEL", "f", NULL);
    exec_words(&t, "CF.EXISTS", "f", "x", NULL);
    ck_assert_str_eq(reply(&t), ":0\r\n");
    exec_words(&t, "CF.DEL", "f", "x", NULL);
    ck_assert_str_eq(reply(&t), "-Not found\r\n");
    exec_words(&t, "CMS.INITBYDIM", "f", "100", "3", NULL);
    exec_words(&t, "CF.ADD", "f", "x", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), "WRONGTYPE"));
    exec_words(&t, "CF.EXISTS", "f", "x", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), "WRONGTYPE"));
    exec_words(&t, "CF.DEL", "f", "x", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), "WRONGTYPE"));
    /* f: a cuckoo filter again, empty; CF.ADD of a missing name makes one */
    exec_words(&t, "DEL", "f", NULL);
    exec_words(&t, "CF.ADD", "f", "y", NULL);
    ck_assert_str_eq(reply(&t), ":1\r\n");
    exec_words(&t, "CF.EXISTS", "f", "x", NULL);
    ck_assert_str_eq(reply(&t), ":0\r\n");
    exec_words(&t, "CF.EXISTS", "f", "y", NULL);
    ck_assert_str_eq(reply(&t), ":1\r\n");
    tsrv_close(&t);
}
END_TEST

/* A name whose cuckoo handle the daemon keeps (rbd_filters_cf), deleted
 * and made again behind the daemon's back (through the library: no DEL,
 * so nothing forgets the handle), is read as what it is now: the kept
 * handle binds the name again.  Through every command that reads by it. */
START_TEST(test_hot_kept_cf_handle_rebinds)
{
    static const char *const wrongtype[][8] = {
        { "CF.EXISTS", "f", "x" },        { "CF.MEXISTS", "f", "x", "y" },
        { "CF.COUNT", "f", "x" },         { "CF.INFO", "f" },
        { "CF.ADDNX", "f", "x" },         { "CF.INSERT", "f", "ITEMS", "x" },
        { "CF.RESERVE", "f", "1000" },    { "CF.SCANDUMP", "f", "0" },
    };
    rb_cms_params_t cp = { 100, 3, 0, 0, NULL };
    rb_cuckoo_params_t fp = { 1000, 2, 20, 1, 8, NULL };
    rb_segment_t *seg;
    tsrv_t t;

    open_filled(&t);
    seg = t.s.state.seg;
    exec_words(&t, "CF.ADD", "f", "x", NULL);
    for (size_t i = 0; i < sizeof(wrongtype) / sizeof(wrongtype[0]); i++)
        one(&t, wrongtype[i], 0);   /* each keeps or reads through the handle */
    exec_words(&t, "CF.MEXISTS", "f", "x", "y", NULL);
    ck_assert_str_eq(reply(&t), "*2\r\n:1\r\n:0\r\n");

    /* f: a sketch now */
    ck_assert_int_eq(rb_filter_delete(seg, "f", 1), RB_OK);
    ck_assert_int_eq(rb_cms_create(seg, "f", 1, &cp), RB_OK);
    for (size_t i = 0; i < sizeof(wrongtype) / sizeof(wrongtype[0]); i++) {
        one(&t, wrongtype[i], 0);
        ck_assert_msg(strstr(reply(&t), "WRONGTYPE") != NULL, "%s: %s", wrongtype[i][0],
                      reply(&t));
    }

    /* f: nothing */
    ck_assert_int_eq(rb_filter_delete(seg, "f", 1), RB_OK);
    exec_words(&t, "CF.MEXISTS", "f", "x", "y", NULL);
    ck_assert_str_eq(reply(&t), "*2\r\n:0\r\n:0\r\n");
    exec_words(&t, "CF.COUNT", "f", "x", NULL);
    ck_assert_str_eq(reply(&t), ":0\r\n");
    exec_words(&t, "CF.INFO", "f", NULL);
    ck_assert_str_eq(reply(&t), "-ERR not found\r\n");
    exec_words(&t, "CF.INSERT", "f", "NOCREATE", "ITEMS", "x", NULL);
    ck_assert_str_eq(reply(&t), "-ERR not found\r\n");
    /* a missing filter's size is checked before it is made */
    exec_words(&t, "CF.INSERT", "f", "CAPACITY", "1073741824", "ITEMS", "x", NULL);
    ck_assert_msg(strstr(reply(&t), "max-command-bytes") != NULL, "%s", reply(&t));

    /* f: a cuckoo filter again, holding y alone */
    ck_assert_int_eq(rb_cuckoo_reserve(seg, "f", 1, &fp), RB_OK);
    ck_assert_int_eq(rb_cuckoo_add(seg, "f", 1, "y", 1, 0), 1);
    exec_words(&t, "CF.MEXISTS", "f", "x", "y", NULL);
    ck_assert_str_eq(reply(&t), "*2\r\n:0\r\n:1\r\n");
    exec_words(&t, "CF.EXISTS", "f", "y", NULL);
    ck_assert_str_eq(reply(&t), ":1\r\n");
    exec_words(&t, "CF.COUNT", "f", "y", NULL);
    ck_assert_str_eq(reply(&t), ":1\r\n");
    exec_words(&t, "CF.INFO", "f", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), "Number of items inserted\r\n:1\r\n"));
    exec_words(&t, "CF.ADDNX", "f", "y", NULL);
    ck_assert_str_eq(reply(&t), ":0\r\n");
    exec_words(&t, "CF.INSERT", "f", "ITEMS", "x", NULL);
    ck_assert_str_eq(reply(&t), "*1\r\n:1\r\n");
    exec_words(&t, "CF.INFO", "f", NULL);
    ck_assert_ptr_nonnull(strstr(reply(&t), "Number of buckets\r\n:512\r\n"));
    tsrv_close(&t);
}
END_TEST

int main(void)
{
    rbd_log_init(1, LOG_WARNING);   /* the snapshots' notices are not news here */
    return RB_TEST_MAIN("hotpath",
                        RB_TCASE("none", 0, NULL, NULL,
                                 test_hot_bf_add, test_hot_bf_exists, test_hot_cf_add,
                                 test_hot_cf_exists, test_hot_cf_del, test_hot_cms_incrby,
                                 test_hot_cms_query, test_hot_pfadd, test_hot_pfadd_new,
                                 test_hot_cf_mexists, test_hot_cf_count, test_hot_cf_insert,
                                 test_hot_cf_insertnx, test_hot_cf_addnx, test_hot_cf_info,
                                 test_hot_pfcount2, test_hot_pfmerge2,
                                 test_hot_counters_see_the_daemon),
                        RB_TCASE("socket", 0, NULL, NULL, test_hot_socket_turn),
                        RB_TCASE("names", 0, NULL, NULL, test_hot_recreated_names_are_seen,
                                 test_hot_kept_cf_handle_rebinds));
}
