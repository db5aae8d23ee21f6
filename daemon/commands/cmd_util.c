/*
 * cmd_util.c - what every command handler uses: argument parsing in
 * Redis's rules, the checks of keys and names, the arity error, and the
 * one table that turns a library error into the reply for where it came
 * from, and the replies of a filter that could not be made or grown.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/statvfs.h>
#include <xxhash.h>

#include "bloom.h"   /* lib: RBI_DUMP_CHUNK_MAX */
#include "cmd.h"
#include "scratch.h"

int rbd_cmd_arg_is(const rbd_ctx_t *x, size_t i, const char *word)
{
    return x->argl[i] == strlen(word) && strncasecmp(x->argv[i], word, x->argl[i]) == 0;
}

int rbd_cmd_arg_ll(const rbd_ctx_t *x, size_t i, long long *out)
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

int rbd_cmd_arg_double(const rbd_ctx_t *x, size_t i, double *out)
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

int rbd_cmd_arg_key(rbd_ctx_t *x, size_t i)
{
    if (x->argl[i] == 0) {
        rbi_resp_error(x->out, "ERR empty key");
        return -1;
    }
    if (x->argl[i] > x->s->cfg.max_key_bytes) {
        rbi_resp_error(x->out, "ERR key too long (%zu bytes, max-key-bytes is %llu)", x->argl[i],
                   (unsigned long long)x->s->cfg.max_key_bytes);
        return -1;
    }
    return 0;
}

int rbd_cmd_arg_keys(rbd_ctx_t *x, size_t first)
{
    for (size_t i = first; i < x->argc; i++)
        if (rbd_cmd_arg_key(x, i) != 0)
            return -1;
    return 0;
}

/* An open-addressing set of the distinct arguments' ordinals (+ 1; 0:
 * empty), at most half full. */
long rbd_cmd_args_distinct(rbd_ctx_t *x, size_t first, uint32_t **uniq, uint32_t **times)
{
    size_t n = x->argc > first ? x->argc - first : 0, cap = 16, k = 0;
    uint32_t *set, *cnt = NULL;

    while (cap < 2 * n)
        cap *= 2;
    set = calloc(cap, sizeof(*set));
    *uniq = malloc((n ? n : 1) * sizeof(**uniq));
    if (times != NULL)
        *times = cnt = malloc((n ? n : 1) * sizeof(*cnt));
    if (set == NULL || *uniq == NULL || (times != NULL && cnt == NULL)) {
        free(set);
        free(*uniq);
        free(cnt);
        rbi_resp_error(x->out, "ERR out of memory");
        return -1;
    }
    for (size_t i = first; i < x->argc; i++) {
        size_t h = (size_t)XXH3_64bits(x->argv[i], x->argl[i]) & (cap - 1);
        uint32_t d;
        while ((d = set[h]) != 0 && !(x->argl[(*uniq)[d - 1]] == x->argl[i] &&
                                      memcmp(x->argv[(*uniq)[d - 1]], x->argv[i], x->argl[i]) == 0))
            h = (h + 1) & (cap - 1);
        if (d == 0) {
            set[h] = (uint32_t)++k;
            (*uniq)[k - 1] = (uint32_t)i;
            d = (uint32_t)k;
            if (cnt != NULL)
                cnt[k - 1] = 0;
        }
        if (cnt != NULL)
            cnt[d - 1]++;
    }
    free(set);
    return (long)k;
}

int rbd_cmd_arg_name(rbd_ctx_t *x, size_t i, const char *what, size_t max)
{
    if (x->argl[i] == 0) {
        rbi_resp_error(x->out, "ERR empty %s name", what);
        return -1;
    }
    if (x->argl[i] > max) {
        rbi_resp_error(x->out, "ERR %s name too long (%zu bytes, max %zu)", what, x->argl[i], max);
        return -1;
    }
    return 0;
}

const char *rbd_cmd_arg_quoted(const rbd_ctx_t *x, size_t i, char *buf, size_t cap)
{
    size_t w = 0, n = x->argl[i] < RBD_QUOTED_MAX ? x->argl[i] : RBD_QUOTED_MAX;

    buf[w++] = '\'';
    for (size_t k = 0; k < n && w + 8 < cap; k++) {
        unsigned char ch = (unsigned char)x->argv[i][k];
        if (ch >= 0x20 && ch < 0x7f && ch != '\'' && ch != '\\')
            buf[w++] = (char)ch;
        else
            w += (size_t)snprintf(buf + w, cap - w, "\\x%02x", ch);
    }
    if (n < x->argl[i] && w + 5 < cap) {
        memcpy(buf + w, "...", 3);
        w += 3;
    }
    buf[w++] = '\'';
    buf[w] = '\0';
    return buf;
}

int rbd_cmd_work_ok(rbd_ctx_t *x, uint64_t bytes, const char *what)
{
    if (bytes <= x->s->cfg.max_command_bytes)
        return 0;
    rbi_resp_error(x->out, "ERR %s would write or read %llu bytes in one go, more than "
                   "max-command-bytes (%llu)", what, (unsigned long long)bytes,
                   (unsigned long long)x->s->cfg.max_command_bytes);
    return -1;
}

int rbd_cmd_first_key(const rbd_command_t *cmd)
{
    static const char *const keys[] = { "key", "key...", "destkey", "destination" };
    size_t n = strcspn(cmd->syntax, " ");

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strlen(keys[i]) == n && memcmp(cmd->syntax, keys[i], n) == 0)
            return i == 1 ? 2 : 1;
    return 0;
}

void rbd_cmd_keyspace(rbd_ctx_t *x)
{
    const rbd_command_t *row = x->sub ? x->sub : x->cmd;
    int keys = row->flags & (CMD_WRITE | CMD_ADMIN) ? 0 : rbd_cmd_first_key(row);
    size_t last = keys == 2 ? x->argc - 1 : 1;

    for (size_t i = 1; keys != 0 && i <= last && i < x->argc; i++) {
        const rb_kind_desc_t *k;
        int rc = x->argl[i] > 0 && x->argl[i] <= RB_FILTER_NAME_MAX
                 ? rb_filter_kind(x->s->state.seg, x->argv[i], x->argl[i], &k) : RB_ENOENT;
        if (rc == RB_OK)
            x->s->stats.hits++;
        else if (rc == RB_ENOENT)
            x->s->stats.misses++;
    }
}

void rbd_cmd_account(rbd_ctx_t *x, size_t at, int ran, uint64_t us)
{
    int error = x->out->len > at && x->out->data[at] == '-';
    rbd_cmdstat_t *st;

    if (error)
        rbd_errstat_add(&x->s->stats, x->out->data + at, x->out->len - at);
    if (x->cmd == NULL ||
        (st = rbd_cmdstat(&x->s->stats, x->cmd->name, x->sub ? x->sub->name : NULL)) == NULL)
        return;
    if (ran) {
        st->calls++;
        st->usec += us;
        st->failed += error;
    } else {
        st->rejected += error;
    }
}

const char *rbd_cmd_lower(const rbd_command_t *cmd, char *buf, size_t cap)
{
    size_t i;

    for (i = 0; cmd->name[i] && i + 1 < cap; i++)
        buf[i] = (char)tolower((unsigned char)cmd->name[i]);
    buf[i] = '\0';
    return buf;
}

void rbd_cmd_wrong_arity(rbd_ctx_t *x)
{
    char lower[32];

    /* As Redis names a command whose arity it checks: its full name in
     * lower case, however the client typed it (RedisBloom 8.4+ declares
     * its arities, so Redis names BF.* this way too; RedisBloom 2.6 echoed
     * them as typed: README's differences). */
    rbi_resp_error(x->out, "ERR wrong number of arguments for '%s' command",
               rbd_cmd_lower(x->cmd, lower, sizeof(lower)));
}

/* The error-code-to-reply table.  A row with rc RB_OK is where's last
 * resort: its text followed by rb_strerror's.  A row with a tail has a
 * number between text and tail (a library limit). */
typedef struct err_row {
    int rc;
    rbd_err_at_t at;
    const char *text;
    unsigned long long num;
    const char *tail;
} err_row_t;

#define WRONGTYPE "WRONGTYPE Operation against a key holding the wrong kind of value"

static const err_row_t errors[] = {
    { RB_EWRONGTYPE, RBD_AT_FILTER, WRONGTYPE, 0, NULL },
    { RB_EWRONGTYPE, RBD_AT_ADD, WRONGTYPE, 0, NULL },
    { RB_EWRONGTYPE, RBD_AT_CREATE, WRONGTYPE, 0, NULL },
    { RB_ENOENT, RBD_AT_FILTER, "ERR not found", 0, NULL },
    { RB_OK, RBD_AT_FILTER, "ERR ", 0, NULL },

    { RB_EEXIST, RBD_AT_CREATE, "ERR item exists", 0, NULL },
    { RB_EPRECISION, RBD_AT_CREATE, "ERR error rate too small for LAYOUT blocked: its layers "
      "would need more than ", RB_BLOOM_BLOCKED_MAX_BPK, " bits per key; use LAYOUT standard" },
    { RB_ERANGE, RBD_AT_CREATE, "ERR capacity too large: a filter layer may have at most 2^40 "
      "bits", 0, NULL },
    { RB_OK, RBD_AT_CREATE, "ERR could not create filter: ", 0, NULL },

    /* An add's limits: a scaling filter grows until max-memory (or
     * /dev/shm: the caller's) runs out, unless one of these comes first. */
    { RB_EFULL, RBD_AT_ADD, "ERR non scaling filter is full", 0, NULL },
    { RB_ELAYERS, RBD_AT_ADD, "ERR filter cannot grow: it has ", RB_BLOOM_MAX_LAYERS,
      " layers, the most a filter may have; reserve it with a larger capacity or EXPANSION" },
    { RB_ERANGE, RBD_AT_ADD, "ERR filter cannot grow: its next layer would have more than "
      "2^40 bits, the most a layer may have", 0, NULL },
    { RB_EPRECISION, RBD_AT_ADD, "ERR filter cannot grow: its next layer's error rate would "
      "need more than ", RB_BLOOM_BLOCKED_MAX_BPK, " bits per key in LAYOUT blocked; reserve "
      "it with LAYOUT standard" },
    { RB_OK, RBD_AT_ADD, "ERR problem inserting into filter: ", 0, NULL },

    { RB_EEXIST, RBD_AT_NODE, "ERR node exists", 0, NULL },
    { RB_ENOENT, RBD_AT_NODE, "ERR no such node", 0, NULL },
    { RB_ERANGE, RBD_AT_NODE, "ERR too many ring points (max ", RB_RING_MAX_POINTS,
      "): lower weights or ring-replicas" },
    { RB_OK, RBD_AT_NODE, "ERR ", 0, NULL },

    { RB_OK, RBD_AT_PUBLISH, "ERR cannot publish the ring: ", 0, NULL },

    { RB_EEMPTY, RBD_AT_RING, "ERR ring is empty", 0, NULL },
    { RB_OK, RBD_AT_RING, "ERR ", 0, NULL },
};

void rbd_cmd_error(rbd_ctx_t *x, rbd_err_at_t at, int rc)
{
    /* A sink refused the op (rbd_op_run): its line is the reply. */
    if (rc == RBD_OP_EREPLY) {
        rbi_resp_error(x->out, "%s", x->s->state.sinks.why);
        return;
    }
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        const err_row_t *e = &errors[i];
        if (e->at != at || (e->rc != rc && e->rc != RB_OK))
            continue;
        if (e->rc == RB_OK)
            rbi_resp_error(x->out, "%s%s", e->text, rb_strerror(rc));
        else if (e->tail != NULL)
            rbi_resp_error(x->out, "%s%llu%s", e->text, e->num, e->tail);
        else
            rbi_resp_error(x->out, "%s", e->text);
        return;
    }
}

/* ---- replies of a filter that could not be made or grown ------------------------ */

/* RB_ENOSPC has two causes the library cannot tell apart: the segment's
 * reservation (max-memory) is used up, or /dev/shm (a tmpfs) is full.  If
 * /dev/shm has less room than the reservation still leaves, that is the
 * limit that was hit: replies so and returns 1, so the operator is sent to
 * the right one; otherwise returns 0 (the caller names max-memory). */
int rbd_cmd_shm_full(rbd_ctx_t *x)
{
    rb_segment_info_t si;
    struct statvfs fs;
    unsigned long long free_bytes, left;

    if (rb_segment_info(x->s->state.seg, &si) != RB_OK || statvfs("/dev/shm", &fs) != 0)
        return 0;
    free_bytes = (unsigned long long)fs.f_bavail * fs.f_frsize;
    left = si.max_size - si.size;
    if (free_bytes >= left)
        return 0;
    rbi_resp_error(x->out, "ERR out of memory for the filter: /dev/shm is full (%llu bytes free "
               "there; max-memory leaves %llu)", free_bytes, left);
    return 1;
}

/* RB_ENOSPC from an add or the create of a missing filter: names the limit
 * that was hit, /dev/shm or max-memory. */
size_t rbd_cmd_dump_chunk_max(const rbd_ctx_t *x)
{
    size_t room = x->s->cfg.max_request_bytes > 1024 ? x->s->cfg.max_request_bytes - 512 : 512;

    return room < RBI_DUMP_CHUNK_MAX ? room : RBI_DUMP_CHUNK_MAX;
}

void rbd_cmd_no_space(rbd_ctx_t *x)
{
    if (!rbd_cmd_shm_full(x))
        rbi_resp_error(x->out, "ERR out of memory for the filter (max-memory is %llu bytes)",
                   (unsigned long long)x->s->cfg.max_memory);
}

/* Replies why a filter could not be created (BF.RESERVE, or an add that
 * creates it), for the causes both share; RB_ENOSPC is the caller's. */
void rbd_cmd_create_error(rbd_ctx_t *x, int rc)
{
    rb_segment_info_t si;

    /* The directory's size is the segment's (max-filters when it was
     * made), not a library constant: the one reply the table cannot hold. */
    if (rc == RB_ESLOTS && rb_segment_info(x->s->state.seg, &si) == RB_OK)
        rbi_resp_error(x->out, "ERR max number of filters reached (max-filters is %u)",
                   si.max_filters);
    else
        rbd_cmd_error(x, RBD_AT_CREATE, rc);
}

/* ---- the replies of changes, made here or answered later by a sink ---------------- */

/* Appends the replies fresh[0 .. n), each 0 or 1 for an add (an integer
 * for anything else): the same bytes as one rbi_resp_bool each (RESP2
 * :0 / :1, RESP3 #f / #t, as RedisBloom answers), built in a chunk on the
 * stack: formatting each through rbi_resp_int's snprintf was a quarter of
 * a bulk load's time (BF.MADD of 1,000 keys, docs/performance.md "Bulk
 * load"). */
static void reply_fresh(rbi_buf_t *out, const uint8_t *fresh, size_t n)
{
    const char *yes = out->resp3 ? "#t\r\n" : ":1\r\n", *no = out->resp3 ? "#f\r\n" : ":0\r\n";
    char chunk[4 * 256];
    size_t at = 0;

    for (size_t i = 0; i < n; i++) {
        if (fresh[i] > 1) {
            rbi_buf_append(out, chunk, at);
            at = 0;
            rbi_resp_int(out, fresh[i]);
            continue;
        }
        memcpy(chunk + at, fresh[i] ? yes : no, 4);
        at += 4;
        if (at == sizeof(chunk)) {
            rbi_buf_append(out, chunk, at);
            at = 0;
        }
    }
    rbi_buf_append(out, chunk, at);
}

void rbd_cmd_reply_added(rbd_ctx_t *x, const uint8_t *fresh, size_t n, int rc, int as_array)
{
    if (as_array)
        rbi_resp_array(x->out, n + (rc < 0));
    reply_fresh(x->out, fresh, n);
    if (rc == RB_ENOSPC)
        rbd_cmd_no_space(x);
    else if (rc < 0)
        rbd_cmd_error(x, RBD_AT_ADD, rc);
}

void rbd_cmd_reply_reserved(rbd_ctx_t *x, int rc)
{
    if (rc == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else if (rc == RB_ENOSPC && !rbd_cmd_shm_full(x))
        rbi_resp_error(x->out, "ERR capacity too large: the filter does not fit in max-memory "
                       "(%llu bytes)", (unsigned long long)x->s->cfg.max_memory);
    else if (rc != RB_ENOSPC)   /* RB_EEXIST: "item exists" */
        rbd_cmd_create_error(x, rc);
}

/* rbd_cmd_reply_deferred's reply, written. */
static void deferred_reply(rbd_ctx_t *x, const rbd_reply_t *r)
{
    if (r->err != NULL) {
        rbi_resp_error(x->out, "%s", r->err);
        return;
    }
    switch (r->shape) {
    case RBD_REPLY_RESERVED:
        rbd_cmd_reply_reserved(x, r->rc);
        return;
    case RBD_REPLY_FRESH:
    case RBD_REPLY_FRESH_ARRAY:
        if (!r->has_result)
            rbi_resp_error(x->out, "ERR the change was answered without its result");
        else
            rbd_cmd_reply_added(x, r->fresh, r->n, r->rc, r->shape == RBD_REPLY_FRESH_ARRAY);
        return;
    default:
        if (r->rc == RB_OK)
            rbi_resp_simple(x->out, "OK");
        else
            rbd_cmd_error(x, RBD_AT_FILTER, r->rc);
        return;
    }
}

/* A deferred reply's error counts as its command's failure (INFO's
 * commandstats: the client's last command is the one that waits, its
 * requests after it wait too) and in errorstats, as a reply written at
 * once does (rbd_cmd_account). */
void rbd_cmd_reply_deferred(rbd_ctx_t *x, const rbd_reply_t *r)
{
    size_t at = x->out->len;
    rbd_cmdstat_t *st;

    if (r->shape == RBD_REPLY_NONE)
        return;
    deferred_reply(x, r);
    if (x->out->len <= at || x->out->data[at] != '-')
        return;
    rbd_errstat_add(&x->s->stats, x->out->data + at, x->out->len - at);
    if (x->c->last_cmd != NULL &&
        (st = rbd_cmdstat(&x->s->stats, x->c->last_cmd, x->c->last_sub)) != NULL)
        st->failed++;
}

void rbd_cmd_check(rbd_ctx_t *x, const rbd_reads_t *k, int multi, int count)
{
    void *h = NULL;
    size_t n = x->argc - 2;
    long long v_s[RBD_SCRATCH_SMALL], *v;
    int rc;

    if (k->check_keys && rbd_cmd_arg_keys(x, 2) != 0)
        return;
    rc = x->argl[1] < 1 || x->argl[1] > RB_FILTER_NAME_MAX ? RB_ENOENT
         : k->open(x, x->argv[1], x->argl[1], &h);
    if ((v = rbd_scratch(v_s, sizeof(v_s), n, sizeof(*v))) == NULL)
        rc = RB_ENOMEM;
    for (size_t i = 0; rc == RB_OK && i < n; i++) {
        uint64_t c = 0;
        int r = count ? k->count(h, x->argv[2 + i], x->argl[2 + i], &c)
                      : k->contains(h, x->argv[2 + i], x->argl[2 + i]);
        if (r < 0)
            rc = r;
        v[i] = count ? (long long)c : r;
    }
    if (rc != RB_OK && rc != RB_ENOENT) {
        k->error(x, rc);
    } else {
        if (multi)
            rbi_resp_array(x->out, n);
        for (size_t i = 0; i < n; i++)
            if (count)
                rbi_resp_int(x->out, rc == RB_OK ? v[i] : 0);
            else
                rbi_resp_bool(x->out, rc == RB_OK && v[i]);
    }
    if (h != NULL && k->close != NULL)
        k->close(h);
    rbd_scratch_free(v, v_s);
}

void rbd_cmd_scandump(rbd_ctx_t *x, const rbd_reads_t *k)
{
    long long iter;
    unsigned char *buf = NULL;
    size_t len, max = rbd_cmd_dump_chunk_max(x);
    int64_t next;
    void *h = NULL;
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if (rbd_cmd_arg_ll(x, 2, &iter) != 0) {
        rbi_resp_error(x->out, "Invalid position");
        return;
    }
    if ((rc = k->open(x, x->argv[1], x->argl[1], &h)) == RB_OK &&
        (rc = k->dump(h, iter, max, NULL, &len, &next)) == RB_OK &&
        (rc = (buf = malloc(len ? len : 1)) == NULL ? RB_ENOMEM : RB_OK) == RB_OK)
        rc = k->dump(h, iter, max, buf, &len, &next);
    if (rc != RB_OK) {
        k->error(x, rc);
    } else {
        rbi_resp_array(x->out, 2);
        rbi_resp_int(x->out, next);
        rbi_resp_bulk(x->out, buf, len);
    }
    free(buf);
    if (h != NULL && k->close != NULL)
        k->close(h);
}

void rbd_cmd_loadchunk(rbd_ctx_t *x, int type, void (*error)(rbd_ctx_t *x, int rc))
{
    rbd_op_t op = { .type = (rbd_op_type_t)type, .name = x->argv[1], .len = x->argl[1],
                    .data = (const unsigned char *)x->argv[3], .dlen = x->argl[3] };
    long long iter;
    int rc;

    if (rbd_cmd_arg_name(x, 1, "filter", RB_FILTER_NAME_MAX) != 0)
        return;
    if (rbd_cmd_arg_ll(x, 2, &iter) != 0 || iter < 1) {
        rbi_resp_error(x->out, "Invalid position");
        return;
    }
    op.iter = iter;
    if ((rc = rbd_op_run(&x->s->state, &x->s->aof, &op)) == RB_OK)
        rbi_resp_simple(x->out, "OK");
    else if (rc == RB_EINVAL && op.why != NULL)
        rbi_resp_error(x->out, "%s", op.why);
    else if (rc == RB_ESLOTS)
        rbd_cmd_create_error(x, rc);
    else
        error(x, rc);
}

int rbd_cmd_set_name(rbd_ctx_t *x, size_t i, const char *what, char **slot)
{
    char *copy = NULL;

    for (size_t k = 0; k < x->argl[i]; k++)
        if (x->argv[i][k] < '!' || x->argv[i][k] > '~') {
            rbi_resp_error(x->out, "ERR %s cannot contain spaces, newlines or special "
                           "characters.", what);
            return -1;
        }
    if (x->argl[i] > 0 && (copy = strndup(x->argv[i], x->argl[i])) == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        return -1;
    }
    free(*slot);
    *slot = copy;
    return 0;
}
