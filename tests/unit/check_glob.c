/* check_glob.c - KEYS / SCAN MATCH patterns (daemon/commands/glob_match.c): the answers
 * of Redis's stringmatchlen, on a table of patterns and against a
 * transcription of stringmatchlen itself (Redis's util.c, BSD-3-Clause,
 * nocase dropped, bytes unsigned as glob_match.c reads them) on every short
 * pattern and name of a small alphabet; and the cost: a long class or a
 * long pattern costs O(pattern) to compile and O(tokens x name) to match. */
#include <string.h>
#include <time.h>

#include "glob_match.h"
#include "rb_test.h"

#define NAME_MAX_LEN 255

/* Redis's stringmatchlen (util.c), the reference glob_match.c must answer as. */
static int redis_match(const unsigned char *p, size_t pl, const unsigned char *s, size_t sl,
                       int *skip, int nesting)
{
    if (nesting > 1000)
        return 0;
    while (pl && sl) {
        switch (p[0]) {
        case '*':
            while (pl > 1 && p[1] == '*') {
                p++;
                pl--;
            }
            if (pl == 1)
                return 1;
            while (sl) {
                if (redis_match(p + 1, pl - 1, s, sl, skip, nesting + 1))
                    return 1;
                if (*skip)
                    return 0;
                s++;
                sl--;
            }
            *skip = 1;
            return 0;
        case '?':
            s++;
            sl--;
            break;
        case '[': {
            int not, match = 0;
            p++;
            pl--;
            not = pl > 0 && p[0] == '^';
            if (not) {
                p++;
                pl--;
            }
            while (1) {
                if (pl >= 2 && p[0] == '\\') {
                    p++;
                    pl--;
                    if (p[0] == s[0])
                        match = 1;
                } else if (pl == 0) {
                    p--;
                    pl++;
                    break;
                } else if (p[0] == ']') {
                    break;
                } else if (pl >= 3 && p[1] == '-') {
                    int start = p[0], end = p[2], c = s[0];
                    if (start > end) {
                        int t = start;
                        start = end;
                        end = t;
                    }
                    p += 2;
                    pl -= 2;
                    if (c >= start && c <= end)
                        match = 1;
                } else if (p[0] == s[0]) {
                    match = 1;
                }
                p++;
                pl--;
            }
            if (not)
                match = !match;
            if (!match)
                return 0;
            s++;
            sl--;
            break;
        }
        case '\\':
            if (pl >= 2) {
                p++;
                pl--;
            }
            /* fall through */
        default:
            if (p[0] != s[0])
                return 0;
            s++;
            sl--;
            break;
        }
        p++;
        pl--;
        if (sl == 0) {
            while (pl && p[0] == '*') {
                p++;
                pl--;
            }
            break;
        }
    }
    return pl == 0 && sl == 0;
}

static int ref(const char *p, size_t pl, const char *s, size_t sl)
{
    int skip = 0;
    return redis_match((const unsigned char *)p, pl, (const unsigned char *)s, sl, &skip, 0);
}

static int compiled(const char *p, size_t pl, const char *s, size_t sl)
{
    rbd_glob_t g;
    int r;

    ck_assert_int_eq(rbd_glob_compile(&g, p, pl, NAME_MAX_LEN), 0);
    r = rbd_glob_match(&g, s, sl);
    rbd_glob_free(&g);
    return r;
}

static const struct {
    const char *pattern, *name;
    int match;
} table[] = {
    { "*", "abc", 1 }, { "*", "", 0 }, { "", "", 1 }, { "", "a", 0 }, { "a*", "a", 1 },
    { "a**", "abc", 1 }, { "*c", "abc", 1 }, { "*b", "abc", 0 }, { "a*b*c", "axxbyyc", 1 },
    { "a*b*c", "axxbyy", 0 }, { "?", "a", 1 }, { "?", "", 0 }, { "??", "a", 0 },
    { "h?llo", "hello", 1 }, { "h*llo", "heeeello", 1 }, { "h[ae]llo", "hallo", 1 },
    { "h[ae]llo", "hillo", 0 }, { "h[^e]llo", "hallo", 1 }, { "h[^e]llo", "hello", 0 },
    { "h[a-b]llo", "hbllo", 1 }, { "h[b-a]llo", "hallo", 1 }, { "h[a-b]llo", "hcllo", 0 },
    { "[a-]", "]", 1 }, { "[a-]", "b", 0 }, { "[a-]]", "_", 1 }, { "[a-]]", "_]", 0 }, { "[]", "]", 0 },
    { "[]]", "]", 0 }, { "[\\]]", "]", 1 }, { "[\\", "\\", 1 }, { "[abc", "b", 1 },
    { "[abc", "d", 0 }, { "[", "[", 0 }, { "[^", "x", 1 }, { "[^]", "x", 1 },
    { "\\*", "*", 1 }, { "\\*", "a", 0 }, { "\\?", "?", 1 }, { "\\?", "a", 0 },
    { "\\", "\\", 1 }, { "a\\", "a\\", 1 }, { "\\[a]", "[a]", 1 }, { "*\\*", "ab*", 1 },
    { "[\\-]", "-", 1 }, { "[a\\-z]", "b", 0 }, { "[a\\-z]", "-", 1 },
    { "[\x80-\xff]", "\xc3", 1 }, { "[\x80-\xff]", "a", 0 }, { "*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0 },
    { "*a*a*a*a*a*a*a*a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 1 },
};

/* Every pattern of the table answers as Redis documents it and as the
 * transcription of stringmatchlen does. */
START_TEST(test_glob_table_answers_as_redis)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        size_t pl = strlen(table[i].pattern), sl = strlen(table[i].name);
        ck_assert_msg(ref(table[i].pattern, pl, table[i].name, sl) == table[i].match,
                      "reference: [%s] [%s]", table[i].pattern, table[i].name);
        ck_assert_msg(compiled(table[i].pattern, pl, table[i].name, sl) == table[i].match,
                      "glob: [%s] [%s] should be %d", table[i].pattern, table[i].name,
                      table[i].match);
    }
    /* Redis gives up past 1000 star groups (its recursion limit). */
    {
        enum { N = 1001 };
        static char p[2 * N], s[N];
        rbd_glob_t g;
        for (size_t i = 0; i < N; i++) {
            memcpy(p + 2 * i, "*a", 2);
            s[i] = 'a';
        }
        for (size_t n = N - 1; n <= N; n++) {
            ck_assert_int_eq(rbd_glob_compile(&g, p, 2 * n, N), 0);
            ck_assert_int_eq(rbd_glob_match(&g, s, n), ref(p, 2 * n, s, n));
            ck_assert_int_eq(rbd_glob_match(&g, s, n), n < N);
            rbd_glob_free(&g);
        }
    }
    /* A NUL byte is a byte like any other. */
    ck_assert_int_eq(compiled("a?b", 3, "a\0b", 3), 1);
    ck_assert_int_eq(compiled("a[\0]b", 5, "a\0b", 3), 1);
}
END_TEST

/* Every pattern of up to 5 bytes over the bytes that mean something in a
 * pattern, against every name of up to 4 bytes over a few bytes: the same
 * answers as stringmatchlen. */
START_TEST(test_glob_same_answers_as_stringmatchlen)
{
    static const char pa[] = "a*?[]^-\\";
    static const char sa[] = "a]-\\";
    const size_t np = sizeof(pa) - 1, ns = sizeof(sa) - 1;
    char p[5], s[4];
    unsigned long compared = 0;

    for (size_t pl = 0; pl <= sizeof(p); pl++) {
        size_t pn = 1;
        for (size_t k = 0; k < pl; k++)
            pn *= np;
        for (size_t pi = 0; pi < pn; pi++) {
            rbd_glob_t g;
            for (size_t k = 0, v = pi; k < pl; k++, v /= np)
                p[k] = pa[v % np];
            ck_assert_int_eq(rbd_glob_compile(&g, p, pl, NAME_MAX_LEN), 0);
            for (size_t sl = 0; sl <= sizeof(s); sl++) {
                size_t sn = 1;
                for (size_t k = 0; k < sl; k++)
                    sn *= ns;
                for (size_t si = 0; si < sn; si++) {
                    for (size_t k = 0, v = si; k < sl; k++, v /= ns)
                        s[k] = sa[v % ns];
                    ck_assert_msg(rbd_glob_match(&g, s, sl) == ref(p, pl, s, sl),
                                  "[%.*s] [%.*s]: glob %d, stringmatchlen %d", (int)pl, p,
                                  (int)sl, s, rbd_glob_match(&g, s, sl), ref(p, pl, s, sl));
                    compared++;
                }
            }
            rbd_glob_free(&g);
        }
    }
    printf("%lu pattern/name pairs answered as stringmatchlen answers them\n", compared);
}
END_TEST

static double cpu_seconds(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

/* The shapes that cost Redis's matcher pattern x name per byte or try:
 * a 16 MiB class (issue 25: 42 s of KEYS), long runs of stars, more
 * classes than any name has bytes; each compiled and matched
 * against 1000 names of 255 bytes in a few milliseconds. */
START_TEST(test_glob_long_patterns_cost_little)
{
    enum { BIG = 16 << 20 };
    char *p = malloc(BIG + 3), name[NAME_MAX_LEN];
    const char *what[] = { "a 16 MiB class", "16 MiB of stars and 128 'a'",
                           "16 MiB of '[a]'" };
    rbd_glob_t g;

    ck_assert_ptr_nonnull(p);
    memset(name, 'a', sizeof(name));
    for (int k = 0; k < 3; k++) {
        double t0 = cpu_seconds(), t;
        int m = 0;
        if (k == 0) {
            p[0] = '*';
            p[1] = '[';
            memset(p + 2, 'b', BIG);
            p[BIG + 2] = ']';
        } else if (k == 1) {
            for (size_t i = 0; i < BIG + 3; i++)
                p[i] = i % (1u << 17) == 1 ? 'a' : '*';
        } else {
            for (size_t i = 0; i + 3 <= BIG + 3; i += 3)
                memcpy(p + i, "[a]", 3);
        }
        ck_assert_int_eq(rbd_glob_compile(&g, p, BIG + 3, NAME_MAX_LEN), 0);
        for (int i = 0; i < 1000; i++)
            m += rbd_glob_match(&g, name, sizeof(name) - (size_t)(i % 7));
        rbd_glob_free(&g);
        t = cpu_seconds() - t0;
        printf("%s: compiled and matched against 1000 names in %.3f s of CPU\n", what[k], t);
        ck_assert_int_eq(m, k == 1 ? 1000 : 0);
        ck_assert_msg(t < 0.5, "%s: %.3f s", what[k], t);
    }
    free(p);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("glob",
                        RB_TCASE("semantics", 60, NULL, NULL, test_glob_table_answers_as_redis,
                                 test_glob_same_answers_as_stringmatchlen),
                        RB_TCASE("cost", 60, NULL, NULL, test_glob_long_patterns_cost_little));
}
