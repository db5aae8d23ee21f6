/* tests/clients/hiredis_client.c - the client matrix's hiredis (Debian's
 * libhiredis-dev) against a running ringbloomd: redisConnectUnix with its
 * defaults (RESP2), then BF.RESERVE/ADD/MADD/EXISTS/MEXISTS/INFO one at a
 * time, a pipeline (redisAppendCommand, then redisGetReply for each), a
 * MULTI/EXEC transaction (QUEUED for each member, EXEC's array of their
 * replies), DEL and EXISTS; each reply is compared exactly, type included
 * (status, integer, array, error).  Usage: hiredis_client SOCKET (run by
 * matrix.sh).  Prints "FAIL ..." for each failed check and one line:
 * "RESULT <checks> <failures> hiredis <version>". */
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int checks, failures;

/* One check: a failure prints what and why. */
static void check(int ok, const char *what, const char *why)
{
    checks++;
    if (!ok) {
        failures++;
        printf("FAIL hiredis: %s: %s\n", what, why);
    }
}

/* Whether reply r has type type and, for a string (status, string, error)
 * the text s, for an integer the value n. */
static int reply_is(const redisReply *r, int type, const char *s, long long n)
{
    if (r == NULL || r->type != type)
        return 0;
    if (type == REDIS_REPLY_INTEGER)
        return r->integer == n;
    if (type == REDIS_REPLY_STATUS || type == REDIS_REPLY_STRING || type == REDIS_REPLY_ERROR)
        return r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
    return 1;
}

/* Checks r (and frees it): type and value as reply_is. */
static void expect(redisReply *r, const char *what, int type, const char *s, long long n)
{
    char why[160];

    if (r == NULL)
        snprintf(why, sizeof(why), "no reply");
    else
        snprintf(why, sizeof(why), "got type %d (%.*s / %lld), want type %d (%s / %lld)",
                 r->type, r->str ? (int)r->len : 0, r->str ? r->str : "", r->integer, type,
                 s ? s : "", n);
    check(reply_is(r, type, s, n), what, why);
    freeReplyObject(r);
}

/* Checks r (and frees it): an array of n integers, the values of want. */
static void expect_ints(redisReply *r, const char *what, size_t n, const long long *want)
{
    int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == n;

    for (size_t i = 0; ok && i < n; i++)
        ok = reply_is(r->element[i], REDIS_REPLY_INTEGER, NULL, want[i]);
    check(ok, what, "not the array of integers expected");
    freeReplyObject(r);
}

/* A command's reply, or NULL if the connection failed. */
static redisReply *cmd(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    void *r;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return r;
}

/* The next pipelined reply, or NULL. */
static redisReply *next(redisContext *c)
{
    void *r = NULL;

    return redisGetReply(c, &r) == REDIS_OK ? r : NULL;
}

/* BF.INFO's reply: the 5 pairs RedisBloom gives, a status (simple string)
 * name and an integer. */
static void expect_info(redisReply *r)
{
    static const char *const names[] = { "Capacity", "Size", "Number of filters",
                                         "Number of items inserted", "Expansion rate" };
    static const long long values[] = { 100, -1, 1, 2, 2 };
    int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 10;

    for (size_t i = 0; ok && i < 5; i++)
        ok = reply_is(r->element[2 * i], REDIS_REPLY_STATUS, names[i], 0) &&
             r->element[2 * i + 1]->type == REDIS_REPLY_INTEGER &&
             (values[i] < 0 ? r->element[2 * i + 1]->integer > 0
                            : r->element[2 * i + 1]->integer == values[i]);
    check(ok, "BF.INFO", "not Capacity 100, Size > 0, 1 filter, 2 items, expansion 2");
    freeReplyObject(r);
}

int main(int argc, char **argv)
{
    static const long long madd[] = { 0, 1 }, mexists[] = { 1, 0, 1 }, present[] = { 1, 0 },
                           items[] = { 4 };
    const char *k = "hiredis";
    redisContext *c;
    redisReply *r;

    if (argc != 2) {
        fprintf(stderr, "usage: %s SOCKET\n", argv[0]);
        return 2;
    }
    c = redisConnectUnix(argv[1]);
    if (c == NULL || c->err) {
        printf("FAIL hiredis: redisConnectUnix(%s): %s\n", argv[1], c ? c->errstr : "no memory");
        printf("RESULT 1 1 hiredis %d.%d.%d\n", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
        redisFree(c);
        return 1;
    }
    expect(cmd(c, "DEL %s", k), "DEL of a missing key", REDIS_REPLY_INTEGER, NULL, 0);
    expect(cmd(c, "BF.RESERVE %s 0.01 100", k), "BF.RESERVE", REDIS_REPLY_STATUS, "OK", 0);
    expect(cmd(c, "BF.RESERVE %s 0.01 100", k), "BF.RESERVE of an existing filter",
           REDIS_REPLY_ERROR, "ERR item exists", 0);
    expect(cmd(c, "BF.ADD %s %s", k, "a"), "BF.ADD new", REDIS_REPLY_INTEGER, NULL, 1);
    expect(cmd(c, "BF.ADD %s %s", k, "a"), "BF.ADD again", REDIS_REPLY_INTEGER, NULL, 0);
    expect_ints(cmd(c, "BF.MADD %s a b", k), "BF.MADD", 2, madd);
    expect(cmd(c, "BF.EXISTS %s b", k), "BF.EXISTS present", REDIS_REPLY_INTEGER, NULL, 1);
    expect(cmd(c, "BF.EXISTS %s zz", k), "BF.EXISTS absent", REDIS_REPLY_INTEGER, NULL, 0);
    expect_ints(cmd(c, "BF.MEXISTS %s a zz b", k), "BF.MEXISTS", 3, mexists);
    expect_info(cmd(c, "BF.INFO %s", k));

    /* A pipeline: three commands written at once, then their replies. */
    redisAppendCommand(c, "BF.ADD %s c", k);
    redisAppendCommand(c, "BF.MEXISTS %s c zz", k);
    redisAppendCommand(c, "TYPE %s", k);
    expect(next(c), "pipelined BF.ADD", REDIS_REPLY_INTEGER, NULL, 1);
    expect_ints(next(c), "pipelined BF.MEXISTS", 2, present);
    expect(next(c), "pipelined TYPE", REDIS_REPLY_STATUS, "MBbloom--", 0);

    /* A transaction: QUEUED, then EXEC's array of the members' replies. */
    expect(cmd(c, "MULTI"), "MULTI", REDIS_REPLY_STATUS, "OK", 0);
    expect(cmd(c, "BF.ADD %s d", k), "queued BF.ADD", REDIS_REPLY_STATUS, "QUEUED", 0);
    expect(cmd(c, "BF.EXISTS %s d", k), "queued BF.EXISTS", REDIS_REPLY_STATUS, "QUEUED", 0);
    expect(cmd(c, "EXISTS %s", k), "queued EXISTS", REDIS_REPLY_STATUS, "QUEUED", 0);
    r = cmd(c, "EXEC");
    check(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
          reply_is(r->element[0], REDIS_REPLY_INTEGER, NULL, 1) &&
          reply_is(r->element[1], REDIS_REPLY_INTEGER, NULL, 1) &&
          reply_is(r->element[2], REDIS_REPLY_INTEGER, NULL, 1),
          "EXEC", "not [1, 1, 1]");
    freeReplyObject(r);

    expect_ints(cmd(c, "BF.INFO %s ITEMS", k), "BF.INFO ITEMS after the pipeline and EXEC", 1, items);
    expect(cmd(c, "DEL %s", k), "DEL", REDIS_REPLY_INTEGER, NULL, 1);
    expect(cmd(c, "EXISTS %s", k), "EXISTS after DEL", REDIS_REPLY_INTEGER, NULL, 0);
    expect(cmd(c, "BF.EXISTS %s a", k), "BF.EXISTS after DEL", REDIS_REPLY_INTEGER, NULL, 0);
    redisFree(c);
    printf("RESULT %d %d hiredis %d.%d.%d\n", checks, failures, HIREDIS_MAJOR, HIREDIS_MINOR,
           HIREDIS_PATCH);
    return failures ? 1 : 0;
}
