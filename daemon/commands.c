/*
 * commands.c - what ringbloomd answers: the command table and every command.
 *
 * Conventions: a command either fully succeeds or changes nothing; every
 * mutation is applied to the segment, then logged (persist_*), and its
 * reply is only sent after the log write (server.c, persist_flush).  BF.*
 * follow RedisBloom (names, arguments, replies, error strings) so a client
 * written for Redis works unchanged; RING.* and LAYOUT are ours.
 */
#include "config.h"

#include <bsd/stdlib.h>
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "rbd.h"

#define F_WRITE 0x1      /* mutation: needs write permission and a working log */

typedef struct command command_t;

typedef struct cmd_ctx {
    server_t *s;
    client_t *c;
    size_t argc;
    const char **argv;
    const size_t *argl;
    resp_buf_t *out;
    const command_t *cmd;     /* the command being run */
} ctx_t;

typedef void (*cmd_fn)(ctx_t *x);

struct command {
    const char *name;
    int arity;           /* > 0: exactly; < 0: at least -arity (name included) */
    unsigned flags;
    cmd_fn fn;
};

/* ---- argument helpers ------------------------------------------------------- */

static int arg_is(const ctx_t *x, size_t i, const char *word)
{
    return x->argl[i] == strlen(word) && strncasecmp(x->argv[i], word, x->argl[i]) == 0;
}

/* Strict integer (Redis's string2ll rules: no sign for zero, no spaces). */
static int arg_ll(const ctx_t *x, size_t i, long long *out)
{
    char buf[32];
    char *end;
    size_t n = x->argl[i];

    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, x->argv[i], n);
    buf[n] = '\0';
    if (!(isdigit((unsigned char)buf[0]) || (buf[0] == '-' && n > 1 && buf[1] != '0')) ||
        (buf[0] == '0' && n > 1))
        return -1;
    errno = 0;
    *out = strtoll(buf, &end, 10);
    /* end must be the argument's end: "1\0junk" is not 1. */
    return (errno != 0 || end != buf + n) ? -1 : 0;
}

static int arg_double(const ctx_t *x, size_t i, double *out)
{
    char buf[64];
    char *end;
    size_t n = x->argl[i];

    if (n == 0 || n >= sizeof(buf) || isspace((unsigned char)x->argv[i][0]))
        return -1;
    memcpy(buf, x->argv[i], n);
    buf[n] = '\0';
    errno = 0;
    *out = strtod(buf, &end);
    return (errno == ERANGE || end != buf + n || isnan(*out)) ? -1 : 0;
}

/* Checks a key argument against max-key-bytes; replies and returns -1 if bad. */
static int key_ok(ctx_t *x, size_t i)
{
    if (x->argl[i] == 0) {
        resp_error(x->out, "ERR empty key");
        return -1;
    }
    if (x->argl[i] > x->s->cfg.max_key_bytes) {
        resp_error(x->out, "ERR key too long (%zu bytes, max-key-bytes is %llu)", x->argl[i],
                   (unsigned long long)x->s->cfg.max_key_bytes);
        return -1;
    }
    return 0;
}

static int name_ok(ctx_t *x, size_t i, const char *what, size_t max)
{
    if (x->argl[i] == 0) {
        resp_error(x->out, "ERR empty %s name", what);
        return -1;
    }
    if (x->argl[i] > max) {
        resp_error(x->out, "ERR %s name too long (%zu bytes, max %zu)", what, x->argl[i], max);
        return -1;
    }
    return 0;
}

/* The command's name in lower case, as Redis names its own commands. */
static const char *cmd_lower(const command_t *cmd, char *buf, size_t cap)
{
    size_t i;

    for (i = 0; cmd->name[i] && i + 1 < cap; i++)
        buf[i] = (char)tolower((unsigned char)cmd->name[i]);
    buf[i] = '\0';
    return buf;
}

static void wrong_arity(ctx_t *x)
{
    char lower[32];

    /* As Redis names a command whose arity it checks: its full name in
     * lower case, however the client typed it (RedisBloom 8.4+ declares
     * its arities, so Redis names BF.* this way too; RedisBloom 2.6 echoed
     * them as typed: README's differences). */
    resp_error(x->out, "ERR wrong number of arguments for '%s' command",
               cmd_lower(x->cmd, lower, sizeof(lower)));
}

/* ---- filters ------------------------------------------------------------------- */

rb_bloom_t *rbd_filter(server_t *s, const char *name, size_t len, int *rc)
{
    filter_ref_t *f;

    for (size_t i = 0; i < s->nfilters; i++)
        if (s->filters[i].len == len && memcmp(s->filters[i].name, name, len) == 0)
            return s->filters[i].bf;
    if (s->nfilters == s->filters_cap) {
        size_t cap = s->filters_cap ? 2 * s->filters_cap : 16;
        filter_ref_t *n = realloc(s->filters, cap * sizeof(*n));
        if (n == NULL) {
            *rc = RB_ENOMEM;
            return NULL;
        }
        s->filters = n;
        s->filters_cap = cap;
    }
    f = &s->filters[s->nfilters];
    f->name = malloc(len ? len : 1);
    if (f->name == NULL) {
        *rc = RB_ENOMEM;
        return NULL;
    }
    *rc = rb_bloom_open(s->seg, name, len, &f->bf);
    if (*rc != RB_OK) {
        free(f->name);
        return NULL;
    }
    memcpy(f->name, name, len);
    f->len = len;
    s->nfilters++;
    return f->bf;
}

void rbd_filters_close(server_t *s)
{
    for (size_t i = 0; i < s->nfilters; i++) {
        rb_bloom_close(s->filters[i].bf);
        free(s->filters[i].name);
    }
    free(s->filters);
    s->filters = NULL;
    s->nfilters = s->filters_cap = 0;
}

int rbd_filter_reserve(server_t *s, const char *name, size_t len, rb_bloom_params_t *p)
{
    unsigned char secret[RB_BLOOM_SECRET_BYTES];
    int rc;

    arc4random_buf(secret, sizeof(secret));
    p->secret = secret;
    rc = rb_bloom_reserve(s->seg, name, len, p);
    if (rc == RB_OK)
        persist_bf_reserve(s, name, len, p);
    p->secret = NULL;
    return rc;
}

/* RB_ENOSPC has two causes the library cannot tell apart: the segment's
 * reservation (max-memory) is used up, or /dev/shm (a tmpfs) is full.  If
 * /dev/shm has less room than the reservation still leaves, that is the
 * limit that was hit: replies so and returns 1, so the operator is sent to
 * the right one; otherwise returns 0 (the caller names max-memory). */
static int reply_if_shm_full(ctx_t *x)
{
    rb_segment_info_t si;
    struct statvfs fs;
    unsigned long long free_bytes, left;

    if (rb_segment_info(x->s->seg, &si) != RB_OK || statvfs("/dev/shm", &fs) != 0)
        return 0;
    free_bytes = (unsigned long long)fs.f_bavail * fs.f_frsize;
    left = si.max_size - si.size;
    if (free_bytes >= left)
        return 0;
    resp_error(x->out, "ERR out of memory for the filter: /dev/shm is full (%llu bytes free "
               "there; max-memory leaves %llu)", free_bytes, left);
    return 1;
}

/* RB_ENOSPC from an add or the create of a missing filter: names the limit
 * that was hit, /dev/shm or max-memory. */
static void reply_no_space(ctx_t *x)
{
    if (!reply_if_shm_full(x))
        resp_error(x->out, "ERR out of memory for the filter (max-memory is %llu bytes)",
                   (unsigned long long)x->s->cfg.max_memory);
}

/* Replies why a filter could not be created (BF.RESERVE, or an add that
 * creates it), for the causes both share; RB_ENOSPC is the caller's. */
static void create_error(ctx_t *x, int rc)
{
    rb_segment_info_t si;

    if (rc == RB_EPRECISION)
        resp_error(x->out, "ERR error rate too small for LAYOUT blocked: its layers would need "
                   "more than %d bits per key; use LAYOUT standard", RB_BLOOM_BLOCKED_MAX_BPK);
    else if (rc == RB_ESLOTS && rb_segment_info(x->s->seg, &si) == RB_OK)
        resp_error(x->out, "ERR max number of filters reached (max-filters is %u)",
                   si.max_filters);
    else if (rc == RB_ERANGE)
        resp_error(x->out, "ERR capacity too large: a filter layer may have at most 2^40 bits");
    else
        resp_error(x->out, "ERR could not create filter: %s", rb_strerror(rc));
}

/* The filter for an add, created with the configured defaults if missing
 * (RedisBloom's BF.ADD/MADD/INSERT behaviour).  Replies on error. */
static rb_bloom_t *filter_for_add(ctx_t *x, size_t i, const rb_bloom_params_t *create)
{
    rb_bloom_t *bf;
    int rc;

    if (name_ok(x, i, "filter", RB_FILTER_NAME_MAX) != 0)
        return NULL;
    bf = rbd_filter(x->s, x->argv[i], x->argl[i], &rc);
    if (bf == NULL && rc == RB_ENOENT && create != NULL) {
        rb_bloom_params_t p = *create;
        rc = rbd_filter_reserve(x->s, x->argv[i], x->argl[i], &p);
        if (rc == RB_OK)
            bf = rbd_filter(x->s, x->argv[i], x->argl[i], &rc);
    }
    if (bf == NULL && rc == RB_ENOENT)
        resp_error(x->out, "ERR not found");
    else if (bf == NULL && rc == RB_ENOSPC)
        reply_no_space(x);
    else if (bf == NULL)
        create_error(x, rc);
    return bf;
}

static rb_bloom_params_t default_params(const server_t *s)
{
    rb_bloom_params_t p;

    memset(&p, 0, sizeof(p));
    p.capacity = 100;
    p.error_rate = 0.01;
    p.layout = RB_BLOOM_BLOCKED;
    p.expansion = RB_BLOOM_DEFAULT_EXPANSION;
    (void)s;
    return p;
}

/* An add that failed: the limit it hit.  A scaling filter grows until
 * max-memory (or /dev/shm) runs out, unless one of the library's limits
 * comes first: RB_BLOOM_MAX_LAYERS layers (EXPANSION 1), a layer over
 * RB_BLOOM_MAX_BITS, a layer's error rate beyond the blocked layout. */
static void add_error(ctx_t *x, int rc)
{
    if (rc == RB_EFULL)
        resp_error(x->out, "ERR non scaling filter is full");
    else if (rc == RB_ENOSPC)
        reply_no_space(x);
    else if (rc == RB_ELAYERS)
        resp_error(x->out, "ERR filter cannot grow: it has %d layers, the most a filter may "
                   "have; reserve it with a larger capacity or EXPANSION", RB_BLOOM_MAX_LAYERS);
    else if (rc == RB_ERANGE)
        resp_error(x->out, "ERR filter cannot grow: its next layer would have more than 2^40 "
                   "bits, the most a layer may have");
    else if (rc == RB_EPRECISION)
        resp_error(x->out, "ERR filter cannot grow: its next layer's error rate would need more "
                   "than %d bits per key in LAYOUT blocked; reserve it with LAYOUT standard",
                   RB_BLOOM_BLOCKED_MAX_BPK);
    else
        resp_error(x->out, "ERR problem inserting into filter: %s", rb_strerror(rc));
}

/* Adds keys argv[first .. first + n) to filter argv[fi] (bf), replying one
 * integer per key, in an array if as_array.  A key that cannot be added
 * (a full non-scaling filter) ends the array with an error element, as
 * RedisBloom does; the keys before it stay added and are logged. */
static void add_keys(ctx_t *x, size_t fi, rb_bloom_t *bf, size_t first, size_t n, int as_array)
{
    rb_key_t *keys = calloc(n ? n : 1, sizeof(*keys));
    uint8_t *fresh = malloc(n ? n : 1);
    size_t done = 0;
    int64_t rc;

    if (keys == NULL || fresh == NULL) {
        free(keys);
        free(fresh);
        resp_error(x->out, "ERR out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].ptr = x->argv[first + i];
        keys[i].len = x->argl[first + i];
    }
    memset(fresh, RB_BLOOM_NOT_ADDED, n);
    rc = rb_bloom_add_many(bf, keys, n, fresh);
    while (done < n && fresh[done] != RB_BLOOM_NOT_ADDED)
        done++;
    if (rc >= 0)
        x->s->bf_adds += (uint64_t)rc;
    else
        for (size_t i = 0; i < done; i++)
            x->s->bf_adds += fresh[i];
    if (done > 0)
        persist_bf_add(x->s, x->argv[fi], x->argl[fi], x->argv + first, x->argl + first, done);
    if (as_array)
        resp_array(x->out, done + (rc < 0));
    for (size_t i = 0; i < done; i++)
        resp_int(x->out, fresh[i]);
    if (rc < 0)
        add_error(x, (int)rc);
    free(keys);
    free(fresh);
}

static int keys_ok(ctx_t *x, size_t first)
{
    for (size_t i = first; i < x->argc; i++)
        if (key_ok(x, i) != 0)
            return -1;
    return 0;
}

/* ---- BF.* ------------------------------------------------------------------------ */

/* The integer after option argv[at], if there is one in [lo, hi]: 0, else -1. */
static int option_ll(const ctx_t *x, size_t at, long long lo, long long hi, long long *v)
{
    return at + 1 < x->argc && arg_ll(x, at + 1, v) == 0 && *v >= lo && *v <= hi ? 0 : -1;
}

/* LAYOUT's value at argv[i]: replies and returns -1 if it is neither. */
static int parse_layout(ctx_t *x, size_t i, rb_bloom_layout_t *out)
{
    if (arg_is(x, i, "standard"))
        *out = RB_BLOOM_STANDARD;
    else if (arg_is(x, i, "blocked"))
        *out = RB_BLOOM_BLOCKED;
    else {
        resp_error(x->out, "ERR layout must be standard or blocked");
        return -1;
    }
    return 0;
}

/* BF.RESERVE name error_rate capacity [EXPANSION n] [NONSCALING], parsed
 * as RedisBloom 2.6 parses it: at most 7 arguments of its own, NONSCALING
 * and the first EXPANSION wherever they stand (from the fourth on), other
 * words ignored, the errors in its order and words.  Our options (LAYOUT,
 * AGING, GENERATIONS, each with a value; the last of a kind counts) come on
 * top of the 7. */
static void cmd_bf_reserve(ctx_t *x)
{
    rb_bloom_params_t p = default_params(x->s);
    long long cap, exp = RB_BLOOM_DEFAULT_EXPANSION, window = 0, gens = 0;
    size_t exp_at = 0, layout_at = 0, window_at = 0, gens_at = 0, ours = 0;
    int nonscaling = 0, rc;
    double err;

    for (size_t i = 4; i < x->argc; i++) {
        size_t *at = arg_is(x, i, "LAYOUT") ? &layout_at : arg_is(x, i, "AGING") ? &window_at
                     : arg_is(x, i, "GENERATIONS") ? &gens_at : NULL;
        if (at != NULL) {
            *at = i++;
            ours += i < x->argc ? 2 : 1;
        } else if (arg_is(x, i, "NONSCALING")) {
            nonscaling = 1;
        } else if (arg_is(x, i, "EXPANSION") && exp_at == 0) {
            exp_at = i;
        }
    }
    if (x->argc - ours > 7) {
        wrong_arity(x);
        return;
    }
    if (arg_double(x, 2, &err) != 0) {
        resp_error(x->out, "ERR bad error rate");
        return;
    }
    if (err >= 1 || err <= 0) {
        resp_error(x->out, "ERR (0 < error rate range < 1) ");
        return;
    }
    if (arg_ll(x, 3, &cap) != 0) {
        resp_error(x->out, "ERR bad capacity");
        return;
    }
    if (cap <= 0) {
        resp_error(x->out, "ERR (capacity should be larger than 0)");
        return;
    }
    if (exp_at + 1 == x->argc) {
        resp_error(x->out, "ERR no expansion");
        return;
    }
    if (exp_at != 0 && nonscaling) {
        resp_error(x->out, "Nonscaling filters cannot expand");
        return;
    }
    if (exp_at != 0 && arg_ll(x, exp_at + 1, &exp) != 0) {
        resp_error(x->out, "ERR bad expansion");
        return;
    }
    if (exp < 1) {
        resp_error(x->out, "ERR expansion should be greater or equal to 1");
        return;
    }
    if (exp > RB_BLOOM_MAX_EXPANSION) {
        resp_error(x->out, "ERR expansion should be at most %d", RB_BLOOM_MAX_EXPANSION);
        return;
    }
    if (layout_at + 1 == x->argc) {
        resp_error(x->out, "ERR no layout");
        return;
    }
    if (layout_at != 0 && parse_layout(x, layout_at + 1, &p.layout) != 0)
        return;
    if (window_at != 0 && option_ll(x, window_at, 0, 100000000, &window) != 0) {
        resp_error(x->out, "ERR AGING wants a window in seconds (0: rotate only when full)");
        return;
    }
    if (gens_at != 0 && option_ll(x, gens_at, 2, RB_BLOOM_MAX_LAYERS, &gens) != 0) {
        resp_error(x->out, "ERR GENERATIONS must be an integer in [2, %d]", RB_BLOOM_MAX_LAYERS);
        return;
    }
    if ((window_at != 0 || gens_at != 0) && (nonscaling || exp_at != 0)) {
        resp_error(x->out, "ERR AGING filters neither scale nor take NONSCALING / EXPANSION");
        return;
    }
    if (name_ok(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    p.capacity = (uint64_t)cap;
    p.error_rate = err;
    p.flags = (window_at || gens_at) ? RB_BLOOM_AGING : nonscaling ? RB_BLOOM_NONSCALING : 0;
    p.expansion = (uint32_t)exp;
    p.window = (uint32_t)window;
    p.generations = (uint32_t)gens;
    rc = rbd_filter_reserve(x->s, x->argv[1], x->argl[1], &p);
    if (rc == RB_OK)
        resp_simple(x->out, "OK");
    else if (rc == RB_EEXIST)
        resp_error(x->out, "ERR item exists");
    else if (rc == RB_ENOSPC && !reply_if_shm_full(x))
        resp_error(x->out, "ERR capacity too large: the filter does not fit in max-memory "
                   "(%llu bytes)", (unsigned long long)x->s->cfg.max_memory);
    else if (rc != RB_ENOSPC)
        create_error(x, rc);
}

static void cmd_bf_add(ctx_t *x)
{
    rb_bloom_params_t def = default_params(x->s);
    rb_bloom_t *bf;

    if (key_ok(x, 2) != 0 || (bf = filter_for_add(x, 1, &def)) == NULL)
        return;
    add_keys(x, 1, bf, 2, 1, 0);
}

static void cmd_bf_madd(ctx_t *x)
{
    rb_bloom_params_t def = default_params(x->s);
    rb_bloom_t *bf;

    if (keys_ok(x, 2) != 0 || (bf = filter_for_add(x, 1, &def)) == NULL)
        return;
    add_keys(x, 1, bf, 2, x->argc - 2, 1);
}

/* BF.INSERT name [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING]
 * [LAYOUT l] ITEMS key..., parsed as RedisBloom 2.6 parses it: options
 * known by their letters, the last of a kind counts, ranges checked once
 * ITEMS is found (so EXPANSION 0 is refused, a repeated EXPANSION is not,
 * and NONSCALING with EXPANSION makes a non-scaling filter).  LAYOUT is
 * ours. */
static void cmd_bf_insert(ctx_t *x)
{
    rb_bloom_params_t p = default_params(x->s);
    long long cap = (long long)p.capacity, exp = (long long)p.expansion;
    int nocreate = 0, nonscaling = 0;
    size_t i = 2, items = 0;
    rb_bloom_t *bf;

    while (i < x->argc) {
        char c0 = x->argl[i] > 0 ? (char)tolower((unsigned char)x->argv[i][0]) : 0;
        char c1 = x->argl[i] > 1 ? (char)tolower((unsigned char)x->argv[i][1]) : 0;
        char c2 = x->argl[i] > 2 ? (char)tolower((unsigned char)x->argv[i][2]) : 0;
        if (c0 == 'i') {                  /* ITEMS (RedisBloom matches by letter) */
            items = i + 1;
            break;
        }
        if (c0 == 'n') {                  /* NOCREATE / NONSCALING */
            if (c2 == 'c')
                nocreate = 1;
            else
                nonscaling = 1;
            i++;
            continue;
        }
        if (c0 != 'c' && c0 != 'e' && !arg_is(x, i, "LAYOUT")) {
            resp_error(x->out, "Unknown argument received");
            return;
        }
        if (i + 1 >= x->argc) {
            wrong_arity(x);
            return;
        }
        if (c0 == 'l') {
            if (parse_layout(x, i + 1, &p.layout) != 0)
                return;
        } else if (c0 == 'c' && arg_ll(x, i + 1, &cap) != 0) {
            resp_error(x->out, "Bad capacity");
            return;
        } else if (c0 == 'e' && c1 == 'r' && arg_double(x, i + 1, &p.error_rate) != 0) {
            resp_error(x->out, "Bad error rate");
            return;
        } else if (c0 == 'e' && c1 != 'r' && arg_ll(x, i + 1, &exp) != 0) {
            resp_error(x->out, "Bad expansion");
            return;
        }
        i += 2;
    }
    if (items == 0 || items >= x->argc) {
        wrong_arity(x);
        return;
    }
    if (p.error_rate <= 0 || p.error_rate >= 1 || cap < 1 || exp < 1 ||
        exp > RB_BLOOM_MAX_EXPANSION) {
        resp_error(x->out, "Bad argument received");
        return;
    }
    p.capacity = (uint64_t)cap;
    p.expansion = (uint32_t)exp;
    if (nonscaling)
        p.flags |= RB_BLOOM_NONSCALING;
    if (keys_ok(x, items) != 0 || (bf = filter_for_add(x, 1, nocreate ? NULL : &p)) == NULL)
        return;
    add_keys(x, 1, bf, items, x->argc - items, 1);
}

/* BF.EXISTS / BF.MEXISTS: a missing filter answers 0, as in RedisBloom. */
static void exists_keys(ctx_t *x, size_t first, int as_array)
{
    size_t n = x->argc - first;
    rb_bloom_t *bf = NULL;
    int rc = RB_ENOENT;

    if (name_ok(x, 1, "filter", RB_FILTER_NAME_MAX) != 0 || keys_ok(x, first) != 0)
        return;
    bf = rbd_filter(x->s, x->argv[1], x->argl[1], &rc);
    if (bf == NULL && rc != RB_ENOENT) {
        resp_error(x->out, "ERR %s", rb_strerror(rc));
        return;
    }
    if (as_array)
        resp_array(x->out, n);
    for (size_t i = 0; i < n; i++) {
        int r = bf ? rb_bloom_contains(bf, x->argv[first + i], x->argl[first + i]) : 0;
        resp_int(x->out, r == 1);
    }
}

static void cmd_bf_exists(ctx_t *x)
{
    exists_keys(x, 2, 0);
}

static void cmd_bf_mexists(ctx_t *x)
{
    exists_keys(x, 2, 1);
}

static void cmd_bf_info(ctx_t *x)
{
    static const char *const fields[] = { "CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION" };
    rb_bloom_stat_t st;
    long long v[5];
    rb_bloom_t *bf;
    int rc;

    if (x->argc > 3) {
        wrong_arity(x);
        return;
    }
    if (name_ok(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    bf = rbd_filter(x->s, x->argv[1], x->argl[1], &rc);
    if (bf == NULL || (rc = rb_bloom_info(bf, &st)) != RB_OK) {
        resp_error(x->out, rc == RB_ENOENT ? "ERR not found" : "ERR %s", rb_strerror(rc));
        return;
    }
    v[0] = (long long)st.capacity;
    v[1] = (long long)(st.bytes + 576 + 48 * RB_BLOOM_MAX_LAYERS);   /* arrays + directory slot */
    v[2] = st.layers;
    v[3] = (long long)st.items;
    v[4] = st.expansion;
    if (x->argc == 3) {
        for (int i = 0; i < 5; i++) {
            if (arg_is(x, 2, fields[i])) {
                resp_array(x->out, 1);
                if (i == 4 && (st.flags & RB_BLOOM_NONSCALING))
                    resp_nil(x->out);
                else
                    resp_int(x->out, v[i]);
                return;
            }
        }
        resp_error(x->out, "Invalid information value");
        return;
    }
    resp_array(x->out, (st.flags & RB_BLOOM_AGING) ? 16 : 10);
    resp_simple(x->out, "Capacity");
    resp_int(x->out, v[0]);
    resp_simple(x->out, "Size");
    resp_int(x->out, v[1]);
    resp_simple(x->out, "Number of filters");
    resp_int(x->out, v[2]);
    resp_simple(x->out, "Number of items inserted");
    resp_int(x->out, v[3]);
    resp_simple(x->out, "Expansion rate");
    if (st.flags & (RB_BLOOM_NONSCALING | RB_BLOOM_AGING))
        resp_nil(x->out);
    else
        resp_int(x->out, v[4]);
    if (st.flags & RB_BLOOM_AGING) {   /* ours, after RedisBloom's fields */
        resp_simple(x->out, "Generations");
        resp_int(x->out, st.layers);
        resp_simple(x->out, "Window");
        resp_int(x->out, st.window);
        resp_simple(x->out, "Rotations");
        resp_int(x->out, (long long)st.rotations);
    }
}

/* BF.RESET name (ours): clears the filter for every reader at once. */
static void cmd_bf_reset(ctx_t *x)
{
    rb_bloom_t *bf;
    int rc;

    if (name_ok(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    bf = rbd_filter(x->s, x->argv[1], x->argl[1], &rc);
    if (bf == NULL || (rc = rb_bloom_reset(bf)) != RB_OK) {
        resp_error(x->out, rc == RB_ENOENT ? "ERR not found" : "ERR %s", rb_strerror(rc));
        return;
    }
    persist_bf_named(x->s, REC_BF_RESET, x->argv[1], x->argl[1]);
    x->s->persist.force_sync = 1;
    resp_simple(x->out, "OK");
}

typedef struct tick_arg {
    server_t *s;
    uint64_t now;
} tick_arg_t;

static int tick_filter(const char *name, size_t len, void *arg)
{
    tick_arg_t *t = arg;
    rb_bloom_t *bf;
    int rc;

    if ((bf = rbd_filter(t->s, name, len, &rc)) == NULL)
        return 0;
    rc = rb_bloom_rotate_due(bf, t->now);
    if (rc == 1)
        persist_bf_named(t->s, REC_BF_ROTATE, name, len);
    else if (rc < 0)
        rbd_log(LOG_WARNING, "rotating filter '%.*s' failed: %s", (int)len, name,
                rb_strerror(rc));
    return 0;
}

void rbd_filters_tick(server_t *s, uint64_t now_unix)
{
    tick_arg_t t = { s, now_unix };

    if (s->persist.broken || s->persist.write_error)
        return;   /* a rotation must be logged; wait for the log */
    rb_bloom_list(s->seg, tick_filter, &t);
}

static void cmd_bf_card(ctx_t *x)
{
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    int rc;

    if (name_ok(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    bf = rbd_filter(x->s, x->argv[1], x->argl[1], &rc);
    if (bf == NULL && rc == RB_ENOENT) {
        resp_int(x->out, 0);
        return;
    }
    if (bf == NULL || (rc = rb_bloom_info(bf, &st)) != RB_OK) {
        resp_error(x->out, "ERR %s", rb_strerror(rc));
        return;
    }
    resp_int(x->out, (long long)st.items);
}

/* ---- RING.* ----------------------------------------------------------------------- */

static int parse_weight(ctx_t *x, size_t i, uint32_t *w)
{
    long long v;

    if (arg_ll(x, i, &v) != 0 || v < 1 || v > RB_RING_MAX_WEIGHT) {
        resp_error(x->out, "ERR weight must be an integer in [1, %d]", RB_RING_MAX_WEIGHT);
        return -1;
    }
    *w = (uint32_t)v;
    return 0;
}

static int node_name_ok(ctx_t *x, size_t i)
{
    if (name_ok(x, i, "node", RB_NODE_NAME_MAX) != 0)
        return -1;
    if (memchr(x->argv[i], '\0', x->argl[i]) != NULL) {
        resp_error(x->out, "ERR node name may not contain NUL bytes");
        return -1;
    }
    return 0;
}

/* Publishes the model after a change; on failure undoes it with `undo`. */
static int publish_or_undo(ctx_t *x, int (*undo)(ctx_t *, const void *), const void *arg)
{
    int rc = rb_ring_publish(x->s->ring, x->s->seg);

    if (rc == RB_OK) {
        x->s->ring_changes++;
        return 0;
    }
    if (undo(x, arg) != RB_OK)
        rbd_log(LOG_WARNING, "ring model and segment diverged after a failed publish");
    resp_error(x->out, "ERR cannot publish the ring: %s", rb_strerror(rc));
    return -1;
}

static int undo_add(ctx_t *x, const void *arg)
{
    (void)arg;
    return rb_ring_remove(x->s->ring, x->argv[1], x->argl[1]);
}

static int undo_remove(ctx_t *x, const void *arg)
{
    return rb_ring_add(x->s->ring, x->argv[1], x->argl[1], *(const uint32_t *)arg);
}

static int undo_weight(ctx_t *x, const void *arg)
{
    return rb_ring_set_weight(x->s->ring, x->argv[1], x->argl[1], *(const uint32_t *)arg);
}

static void ring_error(ctx_t *x, int rc)
{
    if (rc == RB_EEXIST)
        resp_error(x->out, "ERR node exists");
    else if (rc == RB_ENOENT)
        resp_error(x->out, "ERR no such node");
    else if (rc == RB_ERANGE)
        resp_error(x->out, "ERR too many ring points (max %u): lower weights or ring-replicas",
                   RB_RING_MAX_POINTS);
    else
        resp_error(x->out, "ERR %s", rb_strerror(rc));
}

/* Weight of a node in the published ring, or 0. */
static uint32_t node_weight(server_t *s, const char *name, size_t len)
{
    rb_ring_stat_t st;
    rb_node_t *nodes;
    size_t count = 0;
    uint32_t w = 0;

    if (rb_ring_stat(s->seg, &st) != RB_OK || st.nodes == 0)
        return 0;
    nodes = malloc(st.nodes * sizeof(*nodes));
    if (nodes != NULL && rb_ring_nodes(s->seg, nodes, st.nodes, &count) == RB_OK)
        for (size_t i = 0; i < count && i < st.nodes; i++)
            if (nodes[i].name_len == len && memcmp(nodes[i].name, name, len) == 0)
                w = nodes[i].weight;
    free(nodes);
    return w;
}

static void cmd_ring_add(ctx_t *x)
{
    uint32_t w = 1;
    int rc;

    if (x->argc > 3) {
        wrong_arity(x);
        return;
    }
    if (node_name_ok(x, 1) != 0 || (x->argc == 3 && parse_weight(x, 2, &w) != 0))
        return;
    if (rb_ring_node_count(x->s->ring) >= x->s->cfg.max_nodes) {
        resp_error(x->out, "ERR max number of nodes reached (max-nodes is %u)",
                   x->s->cfg.max_nodes);
        return;
    }
    rc = rb_ring_add(x->s->ring, x->argv[1], x->argl[1], w);
    if (rc != RB_OK) {
        ring_error(x, rc);
        return;
    }
    if (publish_or_undo(x, undo_add, NULL) != 0)
        return;
    persist_ring_add(x->s, x->argv[1], x->argl[1], w);
    resp_simple(x->out, "OK");
}

static void cmd_ring_remove(ctx_t *x)
{
    uint32_t w;
    int rc;

    if (node_name_ok(x, 1) != 0)
        return;
    w = node_weight(x->s, x->argv[1], x->argl[1]);
    rc = rb_ring_remove(x->s->ring, x->argv[1], x->argl[1]);
    if (rc != RB_OK) {
        ring_error(x, rc);
        return;
    }
    if (publish_or_undo(x, undo_remove, &w) != 0)
        return;
    persist_ring_remove(x->s, x->argv[1], x->argl[1]);
    resp_simple(x->out, "OK");
}

static void cmd_ring_weight(ctx_t *x)
{
    uint32_t w, old;
    int rc;

    if (node_name_ok(x, 1) != 0 || parse_weight(x, 2, &w) != 0)
        return;
    old = node_weight(x->s, x->argv[1], x->argl[1]);
    rc = rb_ring_set_weight(x->s->ring, x->argv[1], x->argl[1], w);
    if (rc != RB_OK) {
        ring_error(x, rc);
        return;
    }
    if (publish_or_undo(x, undo_weight, &old) != 0)
        return;
    persist_ring_weight(x->s, x->argv[1], x->argl[1], w);
    resp_simple(x->out, "OK");
}

static int undo_mode(ctx_t *x, const void *arg)
{
    const uint32_t *prev = arg;
    return rb_ring_set_mode(x->s->ring, (rb_ring_mode_t)prev[0], prev[1]);
}

static void cmd_ring_mode(ctx_t *x)
{
    uint32_t prev[2] = { (uint32_t)rb_ring_mode(x->s->ring), rb_ring_replicas(x->s->ring) };
    uint32_t replicas = 0;
    rb_ring_mode_t mode;
    long long v;
    int rc;

    if (x->argc > 3) {
        wrong_arity(x);
        return;
    }
    if (rb_ring_mode_parse(x->argv[1], x->argl[1], &mode) != RB_OK) {
        resp_error(x->out, "ERR unknown ring mode '%.*s' (xxh3, ketama, nginx or seed)", (int)x->argl[1],
                   x->argv[1]);
        return;
    }
    if (x->argc == 3) {
        if (arg_ll(x, 2, &v) != 0 || v < 1 || v > RB_RING_MAX_REPLICAS) {
            resp_error(x->out, "ERR replicas must be an integer in [1, %d]", RB_RING_MAX_REPLICAS);
            return;
        }
        replicas = (uint32_t)v;
    }
    rc = rb_ring_set_mode(x->s->ring, mode, replicas);
    if (rc != RB_OK) {
        ring_error(x, rc);
        return;
    }
    if (publish_or_undo(x, undo_mode, prev) != 0)
        return;
    persist_ring_mode(x->s, mode, rb_ring_replicas(x->s->ring));
    resp_simple(x->out, "OK");
}

static void cmd_ring_nodes(ctx_t *x)
{
    rb_ring_stat_t st;
    rb_node_t *nodes = NULL;
    size_t count = 0;
    int rc = rb_ring_stat(x->s->seg, &st);

    if (rc == RB_OK && st.nodes > 0) {
        nodes = malloc(st.nodes * sizeof(*nodes));
        rc = nodes ? rb_ring_nodes(x->s->seg, nodes, st.nodes, &count) : RB_ENOMEM;
    }
    if (rc != RB_OK) {
        free(nodes);
        resp_error(x->out, "ERR %s", rb_strerror(rc));
        return;
    }
    resp_array(x->out, count);
    for (size_t i = 0; i < count; i++) {
        resp_array(x->out, 2);
        resp_bulk(x->out, nodes[i].name, nodes[i].name_len);
        resp_int(x->out, nodes[i].weight);
    }
    free(nodes);
}

static void cmd_ring_get(ctx_t *x)
{
    rb_node_t n;
    int rc;

    if (key_ok(x, 1) != 0)
        return;
    rc = rb_ring_lookup(x->s->seg, x->argv[1], x->argl[1], &n);
    if (rc == RB_EEMPTY)
        resp_error(x->out, "ERR ring is empty");
    else if (rc != RB_OK)
        resp_error(x->out, "ERR %s", rb_strerror(rc));
    else
        resp_bulk(x->out, n.name, n.name_len);
}

static void cmd_ring_getn(ctx_t *x)
{
    rb_node_t *nodes;
    long long n;
    int rc;

    if (key_ok(x, 1) != 0)
        return;
    if (arg_ll(x, 2, &n) != 0 || n < 1 || n > RB_RING_MAX_NODES) {
        resp_error(x->out, "ERR n must be an integer in [1, %d]", RB_RING_MAX_NODES);
        return;
    }
    /* No more answers than nodes: the reply buffer follows the ring, not
     * the request (n = 65535 on 3 nodes used to reserve ~17 MB). */
    if ((size_t)n > rb_ring_node_count(x->s->ring) && rb_ring_node_count(x->s->ring) > 0)
        n = (long long)rb_ring_node_count(x->s->ring);
    nodes = malloc((size_t)n * sizeof(*nodes));
    if (nodes == NULL) {
        resp_error(x->out, "ERR out of memory");
        return;
    }
    rc = rb_ring_lookup_n(x->s->seg, x->argv[1], x->argl[1], nodes, (size_t)n);
    if (rc == RB_EEMPTY)
        resp_error(x->out, "ERR ring is empty");
    else if (rc < 0)
        resp_error(x->out, "ERR %s", rb_strerror(rc));
    else {
        resp_array(x->out, (size_t)rc);
        for (int i = 0; i < rc; i++)
            resp_bulk(x->out, nodes[i].name, nodes[i].name_len);
    }
    free(nodes);
}

static void cmd_ring_info(ctx_t *x)
{
    rb_ring_stat_t st;
    int rc = rb_ring_stat(x->s->seg, &st);

    if (rc != RB_OK) {
        resp_error(x->out, "ERR %s", rb_strerror(rc));
        return;
    }
    resp_array(x->out, 12);
    resp_simple(x->out, "Mode");
    resp_bulk_str(x->out, rb_ring_mode_name(rb_ring_mode(x->s->ring)));
    resp_simple(x->out, "Replicas");
    resp_int(x->out, rb_ring_replicas(x->s->ring));
    resp_simple(x->out, "Nodes");
    resp_int(x->out, st.nodes);
    resp_simple(x->out, "Points");
    resp_int(x->out, st.points);
    resp_simple(x->out, "Version");
    resp_int(x->out, (long long)st.version);
    resp_simple(x->out, "Bytes per copy");
    resp_int(x->out, (long long)st.bytes);
}

/* ---- server commands ----------------------------------------------------------------- */

static void cmd_ping(ctx_t *x)
{
    if (x->argc > 2)
        wrong_arity(x);
    else if (x->argc == 2)
        resp_bulk(x->out, x->argv[1], x->argl[1]);
    else
        resp_simple(x->out, "PONG");
}

static void cmd_echo(ctx_t *x)
{
    resp_bulk(x->out, x->argv[1], x->argl[1]);
}

static void cmd_quit(ctx_t *x)
{
    resp_simple(x->out, "OK");
    x->c->closing = 1;
}

static void cmd_select(ctx_t *x)
{
    if (arg_is(x, 1, "0"))
        resp_simple(x->out, "OK");
    else
        resp_error(x->out, "ERR DB index is out of range");
}

static void cmd_command(ctx_t *x)
{
    /* redis-cli asks for COMMAND DOCS at start; an empty answer is fine. */
    if (x->argc >= 2 && arg_is(x, 1, "COUNT"))
        resp_int(x->out, 0);
    else
        resp_array(x->out, 0);
}

static void cmd_client(ctx_t *x)
{
    if (arg_is(x, 1, "SETNAME") || arg_is(x, 1, "SETINFO"))
        resp_simple(x->out, "OK");
    else if (arg_is(x, 1, "ID"))
        resp_int(x->out, (long long)x->c->id);
    else
        resp_error(x->out, "ERR unknown subcommand '%.*s'.", (int)x->argl[1], x->argv[1]);
}

typedef struct cfg_get {
    ctx_t *x;
    size_t matches;
    int count_only;
} cfg_get_t;

static int cfg_match(ctx_t *x, const char *name)
{
    for (size_t i = 2; i < x->argc; i++) {
        char pat[256];
        if (x->argl[i] >= sizeof(pat))
            continue;
        memcpy(pat, x->argv[i], x->argl[i]);
        pat[x->argl[i]] = '\0';
        if (fnmatch(pat, name, FNM_CASEFOLD) == 0)
            return 1;
    }
    return 0;
}

static void cfg_emit(const char *name, const char *value, void *arg)
{
    cfg_get_t *g = arg;

    if (!cfg_match(g->x, name))
        return;
    g->matches++;
    if (!g->count_only) {
        resp_bulk_str(g->x->out, name);
        resp_bulk_str(g->x->out, value);
    }
}

static void cmd_config(ctx_t *x)
{
    cfg_get_t g = { x, 0, 1 };
    char save[32];

    if (!arg_is(x, 1, "GET")) {
        resp_error(x->out, "ERR unknown subcommand '%.*s'. Try CONFIG GET.", (int)x->argl[1],
                   x->argv[1]);
        return;
    }
    if (x->argc < 3) {
        resp_error(x->out, "ERR wrong number of arguments for 'config|get' command");
        return;
    }
    /* Two Redis names that redis-benchmark asks for, mapped to ours. */
    snprintf(save, sizeof(save), "%u 1", x->s->cfg.save_seconds);
    rbd_config_each(&x->s->cfg, cfg_emit, &g);
    g.matches += cfg_match(x, "save") + cfg_match(x, "appendonly");
    resp_array(x->out, 2 * g.matches);
    g.count_only = 0;
    rbd_config_each(&x->s->cfg, cfg_emit, &g);
    if (cfg_match(x, "save")) {
        resp_bulk_str(x->out, "save");
        resp_bulk_str(x->out, save);
    }
    if (cfg_match(x, "appendonly")) {
        resp_bulk_str(x->out, "appendonly");
        resp_bulk_str(x->out, "yes");
    }
}

static void cmd_save(ctx_t *x)
{
    char err[512];

    if (persist_snapshot(x->s, err, sizeof(err)) == 0) {
        resp_simple(x->out, "OK");
    } else {
        /* The operator reading the daemon's log must see it too. */
        rbd_log(LOG_WARNING, "SAVE failed: %s", err);
        resp_error(x->out, "ERR snapshot failed: %s", err);
    }
}

static void cmd_shutdown(ctx_t *x)
{
    int save = 1;

    if (x->argc > 2) {
        wrong_arity(x);
        return;
    }
    if (x->argc == 2) {
        if (arg_is(x, 1, "NOSAVE"))
            save = 0;
        else if (!arg_is(x, 1, "SAVE")) {
            resp_error(x->out, "ERR syntax error");
            return;
        }
    }
    rbd_log(LOG_NOTICE, "SHUTDOWN requested by client pid %d uid %u", (int)x->c->pid,
            (unsigned)x->c->uid);
    x->s->shutdown = 1;
    x->s->shutdown_save = save;
    /* As Redis: no reply; the connection closes when the daemon exits. */
}

/* INFO: Redis-style "# Section" blocks of key:value lines. */
typedef struct info_buf {
    resp_buf_t b;
} info_buf_t;

static void info_line(info_buf_t *ib, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info_line(info_buf_t *ib, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 3)
        n = (int)sizeof(line) - 3;
    memcpy(line + n, "\r\n", 2);
    rbuf_append(&ib->b, line, (size_t)n + 2);
}

static int info_want(ctx_t *x, const char *section)
{
    if (x->argc < 2)
        return 1;
    for (size_t i = 1; i < x->argc; i++)
        if (arg_is(x, i, section) || arg_is(x, i, "all") || arg_is(x, i, "everything"))
            return 1;
    return 0;
}

/* A filter name made printable for an INFO line. */
static void printable(char *out, size_t cap, const char *s, size_t len)
{
    size_t w = 0;

    for (size_t i = 0; i < len && w + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > 32 && c < 127 && c != ',' && c != '=' && c != '\\')
            out[w++] = (char)c;
        else
            w += (size_t)snprintf(out + w, cap - w, "\\x%02x", c);
    }
    out[w] = '\0';
}

typedef struct info_filter {
    server_t *s;
    info_buf_t *ib;
    size_t n;
} info_filter_t;

static int info_filter(const char *fname, size_t len, void *arg)
{
    info_filter_t *f = arg;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    char name[1100];
    int rc;

    if ((bf = rbd_filter(f->s, fname, len, &rc)) == NULL || rb_bloom_info(bf, &st) != RB_OK)
        return 0;
    printable(name, sizeof(name), fname, len);
    info_line(f->ib, "filter_%zu:name=%s,layout=%s,kind=%s,capacity=%llu,error_rate=%g,"
              "layers=%u,items=%llu,bytes=%llu,fill=%.4f,est_fpr=%.6f,rotations=%llu", f->n++,
              name, st.layout == RB_BLOOM_BLOCKED ? "blocked" : "standard",
              (st.flags & RB_BLOOM_AGING) ? "aging" : (st.flags & RB_BLOOM_NONSCALING)
              ? "nonscaling" : "scaling", (unsigned long long)st.capacity, st.error_rate,
              st.layers, (unsigned long long)st.items, (unsigned long long)st.bytes, st.fill,
              st.est_fpr, (unsigned long long)st.rotations);
    return 0;
}

static void cmd_info(ctx_t *x)
{
    server_t *s = x->s;
    info_buf_t ib;
    rb_segment_info_t si;
    rb_ring_stat_t rs;
    uint64_t now = rbd_mono_ms();
    int first = 1;

    memset(&ib, 0, sizeof(ib));
#define SECTION(name) \
    do { if (!first) rbuf_append(&ib.b, "\r\n", 2); first = 0; info_line(&ib, "# %s", name); } while (0)
    if (info_want(x, "server")) {
        SECTION("Server");
        info_line(&ib, "ringbloom_version:%s", PACKAGE_VERSION);
        info_line(&ib, "process_id:%d", (int)getpid());
        info_line(&ib, "instance:%s", s->cfg.instance);
        info_line(&ib, "segment:/dev/shm/ringbloom.%s", s->cfg.instance);
        info_line(&ib, "socket:%s", s->cfg.socket);
        info_line(&ib, "config_file:%s", s->config_path ? s->config_path : "");
        info_line(&ib, "uptime_in_seconds:%llu", (unsigned long long)((now - s->start_ms) / 1000));
    }
    if (info_want(x, "clients")) {
        SECTION("Clients");
        info_line(&ib, "connected_clients:%u", s->nclients);
        info_line(&ib, "max_clients:%u", s->cfg.max_clients);
        info_line(&ib, "reserved_writer_clients:%u", s->cfg.reserved_writer_clients);
        info_line(&ib, "max_open_files:%llu", (unsigned long long)s->fd_limit);
        info_line(&ib, "rejected_connections:%llu", (unsigned long long)s->rejected_clients);
        info_line(&ib, "client_buffers_bytes:%llu", (unsigned long long)s->client_mem);
        info_line(&ib, "max_client_memory:%llu", (unsigned long long)s->cfg.max_client_memory);
        info_line(&ib, "evicted_clients:%llu", (unsigned long long)s->evicted_clients);
        info_line(&ib, "output_limit_clients:%llu", (unsigned long long)s->output_limit_clients);
    }
    if (info_want(x, "memory") && rb_segment_info(s->seg, &si) == RB_OK) {
        SECTION("Memory");
        info_line(&ib, "segment_used_bytes:%llu", (unsigned long long)si.used);
        info_line(&ib, "segment_committed_bytes:%llu", (unsigned long long)si.size);
        info_line(&ib, "segment_max_bytes:%llu", (unsigned long long)si.max_size);
        info_line(&ib, "segment_generation:%llu", (unsigned long long)si.generation);
        info_line(&ib, "segment_linked:%d", s->seg_linked);
        info_line(&ib, "segment_republished:%llu", (unsigned long long)s->seg_republished);
    }
    if (info_want(x, "persistence")) {
        persist_t *p = &s->persist;
        SECTION("Persistence");
        info_line(&ib, "dir:%s", p->dir);
        info_line(&ib, "appendfsync:%s", s->cfg.appendfsync == FSYNC_ALWAYS ? "always"
                  : s->cfg.appendfsync == FSYNC_NO ? "no" : "everysec");
        info_line(&ib, "log_bytes:%llu", (unsigned long long)p->log_bytes);
        info_line(&ib, "changes_since_last_save:%llu", (unsigned long long)p->changes);
        info_line(&ib, "last_save_time:%llu", (unsigned long long)(p->last_save_ms / 1000));
        info_line(&ib, "last_save_status:%s", p->last_save_ok ? "ok" : "err");
        info_line(&ib, "snapshots:%llu", (unsigned long long)p->snapshots);
        info_line(&ib, "log_fsyncs:%llu", (unsigned long long)p->fsyncs);
        info_line(&ib, "log_write_errors:%llu", (unsigned long long)p->log_errors);
        info_line(&ib, "log_write_ok:%d", !p->write_error && !p->broken);
    }
    if (info_want(x, "stats")) {
        SECTION("Stats");
        info_line(&ib, "total_connections_received:%llu", (unsigned long long)s->connections);
        info_line(&ib, "total_commands_processed:%llu", (unsigned long long)s->commands);
        info_line(&ib, "denied_commands:%llu", (unsigned long long)s->denied);
        info_line(&ib, "protocol_errors:%llu", (unsigned long long)s->protocol_errors);
        info_line(&ib, "client_timeouts:%llu", (unsigned long long)s->timeouts);
        info_line(&ib, "bf_new_items:%llu", (unsigned long long)s->bf_adds);
        info_line(&ib, "ring_changes:%llu", (unsigned long long)s->ring_changes);
    }
    if (info_want(x, "ring") && rb_ring_stat(s->seg, &rs) == RB_OK) {
        SECTION("Ring");
        info_line(&ib, "ring_mode:%s", rb_ring_mode_name(rb_ring_mode(s->ring)));
        info_line(&ib, "ring_replicas:%u", rb_ring_replicas(s->ring));
        info_line(&ib, "ring_nodes:%u", rs.nodes);
        info_line(&ib, "ring_points:%u", rs.points);
        info_line(&ib, "ring_version:%llu", (unsigned long long)rs.version);
        info_line(&ib, "ring_bytes_per_copy:%llu", (unsigned long long)rs.bytes);
    }
    if (info_want(x, "bloom") && rb_segment_info(s->seg, &si) == RB_OK) {
        info_filter_t f = { s, &ib, 0 };
        SECTION("Bloom");
        info_line(&ib, "filters:%u", si.filters);
        info_line(&ib, "max_filters:%u", si.max_filters);
        rb_bloom_list(s->seg, info_filter, &f);
    }
#undef SECTION
    if (ib.b.oom)
        resp_error(x->out, "ERR out of memory");
    else
        resp_bulk(x->out, ib.b.data ? ib.b.data : "", ib.b.len);
    rbuf_free(&ib.b);
}

/* ---- dispatch ----------------------------------------------------------------------- */

static const command_t commands[] = {
    { "PING", -1, 0, cmd_ping },
    { "ECHO", 2, 0, cmd_echo },
    { "QUIT", -1, 0, cmd_quit },
    { "SELECT", 2, 0, cmd_select },
    { "COMMAND", -1, 0, cmd_command },
    { "CLIENT", -2, 0, cmd_client },
    { "CONFIG", -2, 0, cmd_config },
    { "INFO", -1, 0, cmd_info },
    { "SAVE", 1, F_WRITE, cmd_save },
    { "SHUTDOWN", -1, F_WRITE, cmd_shutdown },
    { "BF.RESERVE", -4, F_WRITE, cmd_bf_reserve },
    { "BF.ADD", 3, F_WRITE, cmd_bf_add },
    { "BF.MADD", -3, F_WRITE, cmd_bf_madd },
    { "BF.INSERT", -4, F_WRITE, cmd_bf_insert },
    { "BF.EXISTS", 3, 0, cmd_bf_exists },
    { "BF.MEXISTS", -3, 0, cmd_bf_mexists },
    { "BF.INFO", -2, 0, cmd_bf_info },
    { "BF.CARD", 2, 0, cmd_bf_card },
    { "BF.RESET", 2, F_WRITE, cmd_bf_reset },
    { "RING.ADD", -2, F_WRITE, cmd_ring_add },
    { "RING.REMOVE", 2, F_WRITE, cmd_ring_remove },
    { "RING.WEIGHT", 3, F_WRITE, cmd_ring_weight },
    { "RING.MODE", -2, F_WRITE, cmd_ring_mode },
    { "RING.NODES", 1, 0, cmd_ring_nodes },
    { "RING.GET", 2, 0, cmd_ring_get },
    { "RING.GETN", 3, 0, cmd_ring_getn },
    { "RING.INFO", 1, 0, cmd_ring_info },
};

static void unknown_command(ctx_t *x)
{
    char args[160];
    size_t w = 0;

    args[0] = '\0';
    for (size_t i = 1; i < x->argc && w < 128; i++) {
        int n = snprintf(args + w, sizeof(args) - w, "'%.*s' ",
                         (int)(x->argl[i] < 128 - w ? x->argl[i] : 128 - w), x->argv[i]);
        if (n < 0)
            break;
        w += (size_t)n;
        if (w >= sizeof(args))
            w = sizeof(args) - 1;
    }
    resp_error(x->out, "ERR unknown command '%.*s', with args beginning with: %s",
               (int)(x->argl[0] < 128 ? x->argl[0] : 128), x->argv[0], args);
}

void rbd_execute(server_t *s, client_t *c, size_t argc, const char **argv, const size_t *argl)
{
    ctx_t x = { s, c, argc, argv, argl, &c->out, NULL };
    const command_t *cmd = NULL;

    s->commands++;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (argl[0] == strlen(commands[i].name) &&
            strncasecmp(argv[0], commands[i].name, argl[0]) == 0) {
            cmd = &commands[i];
            break;
        }
    }
    if (cmd == NULL) {
        unknown_command(&x);
        return;
    }
    x.cmd = cmd;
    if ((cmd->arity > 0 && argc != (size_t)cmd->arity) ||
        (cmd->arity < 0 && argc < (size_t)-cmd->arity)) {
        wrong_arity(&x);
        return;
    }
    if (cmd->flags & F_WRITE) {
        if (!c->can_write) {
            char lower[32];
            s->denied++;
            resp_error(&c->out, "NOPERM this user (uid %u) has no permissions to run the "
                       "'%s' command", (unsigned)c->uid, cmd_lower(cmd, lower, sizeof(lower)));
            return;
        }
        /* SAVE and SHUTDOWN log no record, and a snapshot is what
         * repairs the log: the operator may run them during an outage. */
        if ((s->persist.write_error || s->persist.broken) && cmd->fn != cmd_save &&
            cmd->fn != cmd_shutdown) {
            resp_error(&c->out, "MISCONF the log in %s cannot be written; changes are refused "
                       "until it can (see the daemon's log)", s->persist.dir);
            return;
        }
    }
    cmd->fn(&x);
}
