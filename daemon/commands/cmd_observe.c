/*
 * cmd_observe.c - Redis's commands for watching the daemon itself, over
 * what observe.c keeps: SLOWLOG GET / LEN / RESET / HELP, LATENCY LATEST /
 * HISTORY / RESET / DOCTOR / HELP, and MONITOR; their table rows and
 * handlers.
 * Replies are redis-server's, element for element, so its tools
 * (redis-cli, prometheus-redis-exporter) read them unchanged.  They are
 * administrative (CMD_ADMIN: they show other clients' arguments), HELP
 * excepted; the RESETs also need an administrator (CMD_OTHERS), since they
 * erase what every operator watches.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cmd.h"

static void slowlog_entry(rbd_ctx_t *x, const rbd_slow_entry_t *e)
{
    rbi_resp_array(x->out, 6);
    rbi_resp_int(x->out, (long long)e->id);
    rbi_resp_int(x->out, (long long)e->unix_s);
    rbi_resp_int(x->out, (long long)e->us);
    rbi_resp_array(x->out, e->argc);
    for (size_t i = 0; i < e->argc; i++)
        rbi_resp_bulk(x->out, e->args[i], e->argl[i]);
    rbi_resp_bulk_str(x->out, e->peer);
    rbi_resp_bulk_str(x->out, e->name);
}

static void help(rbd_ctx_t *x, const char *const *lines)
{
    size_t n = 0;

    while (lines[n] != NULL)
        n++;
    rbi_resp_array(x->out, n);
    for (size_t i = 0; i < n; i++)
        rbi_resp_simple(x->out, lines[i]);
}

static void unknown_sub(rbd_ctx_t *x, const char *cmd)
{
    rbi_resp_error(x->out, "ERR unknown subcommand or wrong number of arguments for '%.*s'. "
                   "Try %s HELP.", (int)(x->argl[1] < 64 ? x->argl[1] : 64), x->argv[1], cmd);
}

static const char *const slowlog_help[] = {
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "LEN", "    Return the length of the slowlog.",
    "RESET", "    Reset the slowlog.",
    "HELP", "    Print this help.", NULL,
};

static const char *const latency_help[] = {
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "HELP", "    Print this help.", NULL,
};

/* SLOWLOG or LATENCY with a subcommand it does not have. */
static void cmd_slowlog(rbd_ctx_t *x)
{
    unknown_sub(x, "SLOWLOG");
}

static void cmd_latency(rbd_ctx_t *x)
{
    unknown_sub(x, "LATENCY");
}

static void slowlog_get(rbd_ctx_t *x)
{
    const rbd_observe_t *o = &x->s->obs;
    const rbd_slow_entry_t *e;
    long long count = 10;
    size_t n = 0;

    if (x->argc > 3) {
        unknown_sub(x, "SLOWLOG");
        return;
    }
    if (x->argc == 3 && (rbd_cmd_arg_ll(x, 2, &count) != 0 || count < -1)) {
        rbi_resp_error(x->out, "ERR count should be greater than or equal to -1");
        return;
    }
    if (count == -1 || (unsigned long long)count > o->slow_n)
        count = (long long)o->slow_n;
    rbi_resp_array(x->out, (size_t)count);
    while (n < (size_t)count && (e = rbd_slowlog_get(o, n++)) != NULL)
        slowlog_entry(x, e);
}

static void slowlog_len(rbd_ctx_t *x)
{
    rbi_resp_int(x->out, (long long)x->s->obs.slow_n);
}

static void slowlog_reset(rbd_ctx_t *x)
{
    rbd_slowlog_reset(&x->s->obs);
    rbi_resp_simple(x->out, "OK");
}

static void slowlog_help_fn(rbd_ctx_t *x)
{
    help(x, slowlog_help);
}

/* The event named by argument i, or RBD_LATENCY_EVENTS if none is. */
static rbd_latency_event_t event_arg(const rbd_ctx_t *x, size_t i)
{
    int ev = 0;

    while (ev < RBD_LATENCY_EVENTS && !rbd_cmd_arg_is(x, i, rbd_latency_name(ev)))
        ev++;
    return (rbd_latency_event_t)ev;
}

static void latency_latest(rbd_ctx_t *x)
{
    const rbd_observe_t *o = &x->s->obs;
    size_t n = 0;

    for (int ev = 0; ev < RBD_LATENCY_EVENTS; ev++)
        n += o->lat[ev].n > 0;
    rbi_resp_array(x->out, n);
    for (int ev = 0; ev < RBD_LATENCY_EVENTS; ev++) {
        const rbd_latency_t *l = &o->lat[ev];
        const rbd_latency_sample_t *last;
        if (l->n == 0)
            continue;
        last = &l->s[(l->next + RBD_LATENCY_SAMPLES - 1) % RBD_LATENCY_SAMPLES];
        rbi_resp_array(x->out, 4);
        rbi_resp_bulk_str(x->out, rbd_latency_name(ev));
        rbi_resp_int(x->out, (long long)last->unix_s);
        rbi_resp_int(x->out, last->ms);
        rbi_resp_int(x->out, l->max_ms);
    }
}

static void latency_history(rbd_ctx_t *x)
{
    rbd_latency_event_t ev = event_arg(x, 2);
    const rbd_latency_t *l = ev < RBD_LATENCY_EVENTS ? &x->s->obs.lat[ev] : NULL;
    size_t n = l != NULL ? l->n : 0;

    rbi_resp_array(x->out, n);
    for (size_t i = 0; i < n; i++) {   /* oldest first, as Redis */
        const rbd_latency_sample_t *s =
            &l->s[(l->next + RBD_LATENCY_SAMPLES - n + i) % RBD_LATENCY_SAMPLES];
        rbi_resp_array(x->out, 2);
        rbi_resp_int(x->out, (long long)s->unix_s);
        rbi_resp_int(x->out, s->ms);
    }
}

/* LATENCY RESET [event ...]: how many events had samples and lost them. */
static void latency_reset(rbd_ctx_t *x)
{
    rbd_observe_t *o = &x->s->obs;
    long long n = 0;

    if (x->argc == 2) {
        for (int ev = 0; ev < RBD_LATENCY_EVENTS; ev++)
            n += o->lat[ev].n > 0;
        rbd_latency_reset(o, RBD_LATENCY_EVENTS);
    }
    for (size_t i = 2; i < x->argc; i++) {
        rbd_latency_event_t ev = event_arg(x, i);
        if (ev < RBD_LATENCY_EVENTS && o->lat[ev].n > 0) {
            rbd_latency_reset(o, ev);
            n++;
        }
    }
    rbi_resp_int(x->out, n);
}

/* What to look at when event's samples pass the threshold (the
 * settings and tools that bound or show its cost). */
static const char *const latency_advice[RBD_LATENCY_EVENTS] = {
    [RBD_LAT_COMMAND] = "a command's handler ran that long: SLOWLOG GET names it (set "
        "slowlog-log-slower-than to the threshold in microseconds); the writes that make, "
        "merge or halve memory in one pass are bounded by max-command-bytes (lower it), "
        "the others by the keys a request carries (send fewer at once).",
    [RBD_LAT_EVENTLOOP] = "a whole turn of the event loop (reading, running and answering "
        "every ready client) took that long: many clients' pipelines in one turn, or one "
        "of the commands above; max-request-bytes and client-output-soft-limit bound what "
        "one client brings to a turn.",
    [RBD_LAT_FSYNC] = "appendfsync always waits for the disk before each write's reply: "
        "appendfsync everysec answers at once and fsyncs every second (a crash may lose the "
        "last second), or put dir on faster storage.",
    [RBD_LAT_SNAPSHOT] = "a background snapshot's freeze (the part readers' writers wait "
        "for) took that long: it grows with max-filters (the directory copied) and the "
        "segment's size; save-seconds and save-log-bytes say how often one is taken.",
};

/* One event's line of the report: its samples' count, mean, mean
 * deviation, period and worst, and the advice. */
static void doctor_event(rbi_buf_t *b, size_t no, rbd_latency_event_t ev,
                         const rbd_latency_t *l)
{
    double sum = 0, mean, dev = 0;
    uint64_t first = UINT64_MAX, last = 0;
    char line[1024];
    int n;

    for (size_t i = 0; i < l->n; i++) {
        sum += l->s[i].ms;
        first = l->s[i].unix_s < first ? l->s[i].unix_s : first;
        last = l->s[i].unix_s > last ? l->s[i].unix_s : last;
    }
    mean = sum / (double)l->n;
    for (size_t i = 0; i < l->n; i++)
        dev += l->s[i].ms > mean ? l->s[i].ms - mean : mean - l->s[i].ms;
    n = snprintf(line, sizeof(line), "%zu. %s: %zu latency spikes (average %.0fms, mean "
                 "deviation %.0fms, period %.1f sec). Worst all time event %ums.\n   %s\n\n",
                 no, rbd_latency_name(ev), l->n, mean, dev / (double)l->n,
                 l->n > 1 ? (double)(last - first) / (double)(l->n - 1) : 0.0, l->max_ms,
                 latency_advice[ev]);
    rbi_buf_append(b, line, n > 0 && (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* LATENCY DOCTOR: the latency monitor's samples read for a person: each
 * event's spikes (count, average, mean deviation, period between them,
 * worst) and what bounds its cost here; or why there is nothing to read
 * (the monitor is off, or nothing passed the threshold).  A verbatim
 * string (RESP3; bulk in RESP2), as Redis answers. */
static void latency_doctor(rbd_ctx_t *x)
{
    const rbd_observe_t *o = &x->s->obs;
    rbi_buf_t b = { 0 };
    char head[256];
    size_t no = 0;

    if (x->s->cfg.latency_monitor_threshold == 0) {
        snprintf(head, sizeof(head), "The latency monitor is off (latency-monitor-threshold "
                 "0): CONFIG SET latency-monitor-threshold <milliseconds> turns it on.\n");
        rbi_buf_append(&b, head, strlen(head));
    }
    for (int ev = 0; ev < RBD_LATENCY_EVENTS; ev++)
        if (o->lat[ev].n > 0)
            doctor_event(&b, ++no, (rbd_latency_event_t)ev, &o->lat[ev]);
    if (no == 0 && x->s->cfg.latency_monitor_threshold != 0) {
        snprintf(head, sizeof(head), "No latency spike of %u ms or more was observed since "
                 "the samples were last reset (or the daemon started).\n",
                 x->s->cfg.latency_monitor_threshold);
        rbi_buf_append(&b, head, strlen(head));
    } else if (no > 0) {
        snprintf(head, sizeof(head), "Spikes of %u ms or more (latency-monitor-threshold); "
                 "LATENCY HISTORY <event> lists an event's samples.\n",
                 x->s->cfg.latency_monitor_threshold);
        rbi_buf_append(&b, head, strlen(head));
    }
    if (b.oom)
        rbi_resp_error(x->out, "ERR out of memory");
    else
        rbi_resp_verbatim(x->out, b.data, b.len);
    rbi_buf_free(&b);
}

static void latency_help_fn(rbd_ctx_t *x)
{
    help(x, latency_help);
}

static void cmd_monitor(rbd_ctx_t *x)
{
    if (!x->c->monitor) {
        x->c->monitor = 1;
        x->s->obs.monitors++;
    }
    rbi_resp_simple(x->out, "OK");
}

/* Subcommand rows, as Redis 7 has them, so a rule may name slowlog|get
 * alone; HELP is no administrator's (Redis: @slow only); the RESETs act
 * on what every operator watches (CMD_OTHERS). */
static const rbd_command_t slowlog_subs[] = {
    RBD_SUBCOMMAND("GET", -2, CMD_ADMIN, slowlog_get, "server",
                   "Returns the slow log's newest entries", "[count:integer]"),
    RBD_SUBCOMMAND("LEN", 2, CMD_ADMIN, slowlog_len, "server",
                   "Returns the number of entries in the slow log", ""),
    RBD_SUBCOMMAND("RESET", 2, CMD_ADMIN | CMD_OTHERS, slowlog_reset, "server",
                   "Empties the slow log", ""),
    RBD_SUBCOMMAND("HELP", 2, 0, slowlog_help_fn, "server",
                   "Returns the subcommands' help", ""),
    RBD_COMMAND_END,
};

static const rbd_command_t latency_subs[] = {
    RBD_SUBCOMMAND("LATEST", 2, CMD_ADMIN, latency_latest, "server",
                   "Returns each event's latest sample and maximum", ""),
    RBD_SUBCOMMAND("HISTORY", 3, CMD_ADMIN, latency_history, "server",
                   "Returns an event's samples, oldest first", "event"),
    RBD_SUBCOMMAND("RESET", -2, CMD_ADMIN | CMD_OTHERS, latency_reset, "server",
                   "Forgets the samples of every event, or of those named", "[event...]"),
    RBD_SUBCOMMAND("DOCTOR", 2, CMD_ADMIN, latency_doctor, "server",
                   "Returns a report on the latency samples and what bounds each event's cost",
                   ""),
    RBD_SUBCOMMAND("HELP", 2, 0, latency_help_fn, "server",
                   "Returns the subcommands' help", ""),
    RBD_COMMAND_END,
};

const rbd_command_t rbd_cmd_observe_table[] = {
    RBD_COMMAND_SUBS("SLOWLOG", -2, CMD_ADMIN, slowlog_subs, cmd_slowlog, "server",
                     "Returns the slow log's entries, its length, or resets it",
                     "(GET [count:integer] | LEN | RESET | HELP)"),
    RBD_COMMAND_SUBS("LATENCY", -2, CMD_ADMIN, latency_subs, cmd_latency, "server",
                     "Returns the latency monitor's samples (latency-monitor-threshold), or "
                     "resets them",
                     "(LATEST | HISTORY event | RESET [event...] | DOCTOR | HELP)"),
    RBD_COMMAND("MONITOR", 1, CMD_ADMIN | CMD_NO_MULTI, cmd_monitor, "server",
                "Streams every command the daemon runs, as it runs it",
                ""),
    RBD_COMMAND_END,
};
