/*
 * resp_read.c - the clients' RESP2 through hiredis (resp_read.h): requests
 * by redisFormatCommandArgv within its int lengths, and hiredis's reader
 * with bounds (resp_read.h says which and why): the default reply
 * functions, wrapped to count elements and to refuse an array count over
 * the budget before hiredis allocates it.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp_read.h"

struct rbi_reader {
    redisReader *r;
    redisReplyObjectFunctions fn;          /* the wrappers below */
    const redisReplyObjectFunctions *dflt; /* hiredis's own (redisReply trees) */
    size_t elements, max_elements;         /* of the reply being read */
    int over;                              /* the budget refused an element */
    long long *ints;                       /* rbi_reader_ints */
    size_t ints_cap;
    char why[160];
};

/* Counts one element (n more for an array's slots): 0, or -1 if it would
 * pass the budget (then creating it fails and hiredis stops the read). */
static int spend(const redisReadTask *t, size_t n)
{
    rbi_reader_t *rd = t->privdata;

    if (n > rd->max_elements - rd->elements) {
        rd->over = 1;
        snprintf(rd->why, sizeof(rd->why), "more than %zu elements", rd->max_elements);
        return -1;
    }
    rd->elements += n;
    return 0;
}

static void *w_string(const redisReadTask *t, char *s, size_t len)
{
    rbi_reader_t *rd = t->privdata;
    /* An array's slots were spent with the array. */
    if (t->parent == NULL && spend(t, 1) != 0)
        return NULL;
    return rd->dflt->createString(t, s, len);
}

/* The announced count is checked before hiredis allocates its slots: each
 * slot will be an element of the budget. */
#if HIREDIS_MAJOR >= 1
typedef size_t array_count_t;   /* hiredis 1.x: createArray(task, size_t) */
#else
typedef int array_count_t;      /* 0.14 (Debian 12) */
#endif

static void *w_array(const redisReadTask *t, array_count_t n)
{
    rbi_reader_t *rd = t->privdata;
    size_t cost = (t->parent == NULL) + (n > 0 ? (size_t)n : 0);
    return spend(t, cost) == 0 ? rd->dflt->createArray(t, n) : NULL;
}

static void *w_integer(const redisReadTask *t, long long v)
{
    rbi_reader_t *rd = t->privdata;
    if (t->parent == NULL && spend(t, 1) != 0)
        return NULL;
    if (rd->ints != NULL && t->parent != NULL && t->parent->parent == NULL && t->idx >= 0 &&
        (size_t)t->idx < rd->ints_cap) {
        /* Not linked into the parent (hiredis's create functions do
         * that): its slot stays NULL, which freeReplyObject passes over.
         * Any non-NULL pointer tells hiredis the element was made. */
        rd->ints[t->idx] = v;
        return rd;
    }
    return rd->dflt->createInteger(t, v);
}

static void *w_nil(const redisReadTask *t)
{
    rbi_reader_t *rd = t->privdata;
    if (t->parent == NULL && spend(t, 1) != 0)
        return NULL;
    return rd->dflt->createNil(t);
}

rbi_reader_t *rbi_reader_new(size_t max_elements)
{
    rbi_reader_t *rd = calloc(1, sizeof(*rd));

    if (rd == NULL || (rd->r = redisReaderCreate()) == NULL) {
        free(rd);
        return NULL;
    }
    rd->dflt = rd->r->fn;
    rd->fn = *rd->dflt;
    rd->fn.createString = w_string;
    rd->fn.createArray = w_array;
    rd->fn.createInteger = w_integer;
    rd->fn.createNil = w_nil;
    rd->r->fn = &rd->fn;
    rd->r->privdata = rd;
    rd->max_elements = max_elements;
    return rd;
}

void rbi_reader_free(rbi_reader_t *rd)
{
    if (rd == NULL)
        return;
    redisReaderFree(rd->r);
    free(rd);
}

int rbi_reader_feed(rbi_reader_t *rd, const char *buf, size_t len)
{
    return redisReaderFeed(rd->r, buf, len) == REDIS_OK ? 0 : -1;
}

rbi_read_t rbi_reader_get(rbi_reader_t *rd, size_t max_buffered, redisReply **out)
{
    void *reply = NULL;

    *out = NULL;
    if (redisReaderGetReply(rd->r, &reply) != REDIS_OK) {
        if (rd->over)
            return RBI_READ_MALFORMED;
        if (rd->r->err == REDIS_ERR_OOM)
            return RBI_READ_NOMEM;
        snprintf(rd->why, sizeof(rd->why), "%s", rd->r->errstr);
        return RBI_READ_MALFORMED;
    }
    if (reply != NULL) {
        rd->elements = 0;
        *out = reply;
        return RBI_READ_OK;
    }
    /* What waits unparsed is one unfinished line or bulk string (the
     * elements before it are parsed) and at most one chunk beyond it. */
    if (rd->r->len - rd->r->pos > max_buffered) {
        snprintf(rd->why, sizeof(rd->why), "an element longer than %zu bytes",
                 max_buffered - RBI_READ_CHUNK);
        return RBI_READ_MALFORMED;
    }
    return RBI_READ_MORE;
}

void rbi_reader_ints(rbi_reader_t *rd, long long *ints, size_t cap)
{
    rd->ints = ints;
    rd->ints_cap = ints != NULL ? cap : 0;
}

const char *rbi_reader_why(const rbi_reader_t *rd)
{
    return rd->why;
}

long rbi_request_format(char **out, size_t argc, const char *const *argv, const size_t *argl)
{
    size_t bound = 32;   /* more than the header and each argument's framing */
    int len;

    for (size_t i = 0; i < argc; i++)
        if (argl[i] > INT_MAX || (bound += argl[i] + 32) > INT_MAX)
            return -1;
    len = redisFormatCommandArgv(out, (int)argc, (const char **)argv, argl);
    return len < 0 ? -2 : len;
}
