/*
 * observe.c - the slow log, the latency monitor and the MONITOR line of
 * ringbloomd (observe.h says what each keeps and why).  Called by the
 * command dispatch (cmd.c: around each handler), the loop (server.c: a
 * turn's length, the log's fsync, a snapshot's freeze) and client.c (the
 * MONITOR feed, which owns the clients' buffers); read by the SLOWLOG,
 * LATENCY and MONITOR commands (cmd_observe.c).  A secret argument (a
 * password) is kept by neither the slow log nor the MONITOR line
 * (secret_arg).  It calls nothing above it but the settings' table (which
 * settings are secret): the dispatch and the clients call down into it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "config_table.h"
#include "observe.h"
#include "server.h"

static const char *const latency_names[RBD_LATENCY_EVENTS] = {
    [RBD_LAT_COMMAND] = "command",
    [RBD_LAT_EVENTLOOP] = "eventloop",
    [RBD_LAT_FSYNC] = "aof-fsync-always",
    [RBD_LAT_SNAPSHOT] = "snapshot-freeze",
};

const char *rbd_latency_name(rbd_latency_event_t ev)
{
    return (unsigned)ev < RBD_LATENCY_EVENTS ? latency_names[ev] : NULL;
}

static void entry_free(rbd_slow_entry_t *e)
{
    for (size_t i = 0; i < e->argc; i++)
        free(e->args[i]);
    memset(e, 0, sizeof(*e));
}

/* A copy of an argument as the slow log keeps it: at most
 * RBD_SLOW_ARG_BYTES, then how many more (Redis's words). */
static char *arg_copy(const char *a, size_t len, size_t *out_len)
{
    char more[48];
    size_t keep = len, extra = 0;
    char *p;

    if (len > RBD_SLOW_ARG_BYTES) {
        keep = RBD_SLOW_ARG_BYTES;
        extra = (size_t)snprintf(more, sizeof(more), "... (%zu more bytes)",
                                 len - RBD_SLOW_ARG_BYTES);
    }
    if ((p = malloc(keep + extra + 1)) == NULL)
        return NULL;
    memcpy(p, a, keep);
    memcpy(p + keep, more, extra);
    p[keep + extra] = '\0';
    *out_len = keep + extra;
    return p;
}

static int word_is(const char *a, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(a, word, len) == 0;
}

/* 1 if argument i of the request is a secret, which the slow log and
 * MONITOR show as "(redacted)", as Redis's redactClientCommandArgument
 * hides it: every argument of AUTH, the user and password after HELLO's
 * AUTH (wherever it stands: a HELLO refused for its order still carried
 * them), and CONFIG SET's value of a secret setting (RBD_SET_SECRET: the
 * request may fail and still carry it). */
static int secret_arg(size_t argc, const char **argv, const size_t *argl, size_t i)
{
    long row;

    if (i == 0 || i >= argc)
        return 0;
    if (word_is(argv[0], argl[0], "AUTH"))
        return 1;
    if (word_is(argv[0], argl[0], "HELLO")) {   /* the two after any AUTH (protover or not) */
        for (size_t j = i > 2 ? i - 2 : 1; j < i; j++)
            if (word_is(argv[j], argl[j], "AUTH"))
                return 1;
        return 0;
    }
    if (!word_is(argv[0], argl[0], "CONFIG") || argc < 2 || !word_is(argv[1], argl[1], "SET") ||
        i < 3 || i % 2 == 0)
        return 0;
    row = rbd_setting_row(argv[i - 1], argl[i - 1]);
    return row >= 0 && (rbd_settings[row].flags & RBD_SET_SECRET) != 0;
}

static const char redacted[] = "(redacted)";

static void slowlog_add(server_t *s, const client_t *c, size_t argc, const char **argv,
                        const size_t *argl, uint64_t us)
{
    rbd_observe_t *o = &s->obs;
    rbd_slow_entry_t *e;
    size_t keep = argc > RBD_SLOW_ARGS ? RBD_SLOW_ARGS : argc;

    if (o->slow_cap == 0)
        return;
    e = &o->slow[o->slow_next];
    entry_free(e);
    e->id = o->slow_id++;
    e->unix_s = (uint64_t)time(NULL);
    e->us = us;
    for (size_t i = 0; i < keep; i++) {
        char more[48];
        const char *a = argv[i];
        size_t len = argl[i];
        if (secret_arg(argc, argv, argl, i)) {
            a = redacted;
            len = sizeof(redacted) - 1;
        }
        if (i == RBD_SLOW_ARGS - 1 && argc > RBD_SLOW_ARGS) {   /* Redis's last word */
            len = (size_t)snprintf(more, sizeof(more), "... (%zu more arguments)",
                                   argc - RBD_SLOW_ARGS + 1);
            a = more;
        }
        if ((e->args[i] = arg_copy(a, len, &e->argl[i])) == NULL)
            break;
        e->argc = i + 1;
    }
    snprintf(e->peer, sizeof(e->peer), "%.60s:0", s->cfg.socket);
    snprintf(e->name, sizeof(e->name), "%s", c != NULL && c->name != NULL ? c->name : "");
    o->slow_next = (o->slow_next + 1) % o->slow_cap;
    if (o->slow_n < o->slow_cap)
        o->slow_n++;
}

void rbd_observe_command(server_t *s, const client_t *c, size_t argc, const char **argv,
                         const size_t *argl, uint64_t us)
{
    int64_t slower = s->cfg.slowlog_log_slower_than;

    if (slower >= 0 && us >= (uint64_t)slower)
        slowlog_add(s, c, argc, argv, argl, us);
    rbd_latency_add(s, RBD_LAT_COMMAND, us / 1000);
}

void rbd_latency_add(server_t *s, rbd_latency_event_t ev, uint64_t ms)
{
    rbd_latency_t *l;
    uint64_t now;
    uint32_t v = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;

    if (s->cfg.latency_monitor_threshold == 0 || ms < s->cfg.latency_monitor_threshold ||
        (unsigned)ev >= RBD_LATENCY_EVENTS)
        return;
    l = &s->obs.lat[ev];
    now = (uint64_t)time(NULL);
    if (v > l->max_ms)
        l->max_ms = v;
    if (l->n > 0) {   /* one sample a second: the largest */
        rbd_latency_sample_t *last = &l->s[(l->next + RBD_LATENCY_SAMPLES - 1) %
                                           RBD_LATENCY_SAMPLES];
        if (last->unix_s == now) {
            if (v > last->ms)
                last->ms = v;
            return;
        }
    }
    l->s[l->next] = (rbd_latency_sample_t){ now, v };
    l->next = (l->next + 1) % RBD_LATENCY_SAMPLES;
    if (l->n < RBD_LATENCY_SAMPLES)
        l->n++;
}

void rbd_latency_reset(rbd_observe_t *o, rbd_latency_event_t ev)
{
    for (int i = 0; i < RBD_LATENCY_EVENTS; i++)
        if (ev == RBD_LATENCY_EVENTS || (int)ev == i)
            memset(&o->lat[i], 0, sizeof(o->lat[i]));
}

const rbd_slow_entry_t *rbd_slowlog_get(const rbd_observe_t *o, size_t i)
{
    if (i >= o->slow_n)
        return NULL;
    return &o->slow[(o->slow_next + o->slow_cap - 1 - i) % o->slow_cap];
}

void rbd_slowlog_reset(rbd_observe_t *o)
{
    for (size_t i = 0; i < o->slow_cap; i++)
        entry_free(&o->slow[i]);
    o->slow_n = 0;
    o->slow_next = 0;
}

int rbd_slowlog_resize(rbd_observe_t *o, size_t cap)
{
    rbd_slow_entry_t *n = NULL;
    size_t keep;

    if (cap == o->slow_cap)
        return 0;
    if (cap > 0 && (n = calloc(cap, sizeof(*n))) == NULL)
        return -1;
    keep = o->slow_n < cap ? o->slow_n : cap;
    for (size_t i = 0; i < keep; i++)   /* the newest, oldest first */
        n[i] = *rbd_slowlog_get(o, keep - 1 - i);
    for (size_t i = keep; i < o->slow_n; i++) {   /* the oldest, dropped */
        rbd_slow_entry_t e = *rbd_slowlog_get(o, i);
        entry_free(&e);
    }
    free(o->slow);
    o->slow = n;
    o->slow_cap = cap;
    o->slow_n = keep;
    o->slow_next = cap > 0 ? keep % cap : 0;
    return 0;
}

/* Appends a as Redis's sdscatrepr quotes it. */
static void repr(rbi_buf_t *b, const char *a, size_t len)
{
    char esc[8];

    rbi_buf_append(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)a[i];
        const char *e = NULL;
        switch (ch) {
        case '\\': e = "\\\\"; break;
        case '"': e = "\\\""; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\a': e = "\\a"; break;
        case '\b': e = "\\b"; break;
        default:
            if (ch < 32 || ch >= 127) {
                snprintf(esc, sizeof(esc), "\\x%02x", ch);
                e = esc;
            }
        }
        if (e != NULL)
            rbi_buf_append(b, e, strlen(e));
        else
            rbi_buf_append(b, (const char *)&a[i], 1);
    }
    rbi_buf_append(b, "\"", 1);
}

void rbd_monitor_line(const struct server *s, size_t argc, const char **argv,
                      const size_t *argl, rbi_buf_t *line)
{
    struct timeval tv;
    char head[320];
    int n;

    gettimeofday(&tv, NULL);
    n = snprintf(head, sizeof(head), "+%ld.%06ld [0 unix:%s]", (long)tv.tv_sec,
                 (long)tv.tv_usec, s->cfg.socket);
    rbi_buf_append(line, head, n > 0 && (size_t)n < sizeof(head) ? (size_t)n : 0);
    for (size_t i = 0; i < argc; i++) {
        rbi_buf_append(line, " ", 1);
        if (secret_arg(argc, argv, argl, i))
            repr(line, redacted, sizeof(redacted) - 1);
        else
            repr(line, argv[i], argl[i]);
    }
    rbi_buf_append(line, "\r\n", 2);
}

void rbd_observe_free(rbd_observe_t *o)
{
    rbd_slowlog_reset(o);
    free(o->slow);
    memset(o, 0, sizeof(*o));
}
