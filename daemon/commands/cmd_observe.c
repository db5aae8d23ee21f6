/*
 * cmd_observe.c - Redis's commands for watching the daemon itself, over
 * what observe.c keeps: SLOWLOG GET / LEN / RESET / HELP, LATENCY LATEST /
 * HISTORY / RESET / HELP, and MONITOR; their table rows and handlers.
 * Replies are redis-server's, element for element, so its tools
 * (redis-cli, prometheus-redis-exporter) read them unchanged.  All three
 * are administrative (CMD_ADMIN): they show other clients' arguments or
 * reset what operators watch.
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

static void cmd_slowlog(rbd_ctx_t *x)
{
    static const char *const lines[] = {
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "LEN", "    Return the length of the slowlog.",
        "RESET", "    Reset the slowlog.",
        "HELP", "    Print this help.", NULL,
    };
    rbd_observe_t *o = &x->s->obs;
    long long count = 10;

    if (rbd_cmd_arg_is(x, 1, "GET") && x->argc <= 3) {
        const rbd_slow_entry_t *e;
        size_t n = 0;
        if (x->argc == 3 && (rbd_cmd_arg_ll(x, 2, &count) != 0 || count < -1)) {
            rbi_resp_error(x->out, "ERR count should be greater than or equal to -1");
            return;
        }
        if (count == -1 || (unsigned long long)count > o->slow_n)
            count = (long long)o->slow_n;
        rbi_resp_array(x->out, (size_t)count);
        while (n < (size_t)count && (e = rbd_slowlog_get(o, n++)) != NULL)
            slowlog_entry(x, e);
    } else if (rbd_cmd_arg_is(x, 1, "LEN") && x->argc == 2) {
        rbi_resp_int(x->out, (long long)o->slow_n);
    } else if (rbd_cmd_arg_is(x, 1, "RESET") && x->argc == 2) {
        rbd_slowlog_reset(o);
        rbi_resp_simple(x->out, "OK");
    } else if (rbd_cmd_arg_is(x, 1, "HELP") && x->argc == 2) {
        help(x, lines);
    } else {
        unknown_sub(x, "SLOWLOG");
    }
}

/* The event named by argument i, or RBD_LATENCY_EVENTS if none is. */
static rbd_latency_event_t event_arg(const rbd_ctx_t *x, size_t i)
{
    int ev = 0;

    while (ev < RBD_LATENCY_EVENTS && !rbd_cmd_arg_is(x, i, rbd_latency_name(ev)))
        ev++;
    return (rbd_latency_event_t)ev;
}

static void cmd_latency(rbd_ctx_t *x)
{
    static const char *const lines[] = {
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HELP", "    Print this help.", NULL,
    };
    rbd_observe_t *o = &x->s->obs;

    if (rbd_cmd_arg_is(x, 1, "LATEST") && x->argc == 2) {
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
    } else if (rbd_cmd_arg_is(x, 1, "HISTORY") && x->argc == 3) {
        rbd_latency_event_t ev = event_arg(x, 2);
        const rbd_latency_t *l = ev < RBD_LATENCY_EVENTS ? &o->lat[ev] : NULL;
        size_t n = l != NULL ? l->n : 0;
        rbi_resp_array(x->out, n);
        for (size_t i = 0; i < n; i++) {   /* oldest first, as Redis */
            const rbd_latency_sample_t *s =
                &l->s[(l->next + RBD_LATENCY_SAMPLES - n + i) % RBD_LATENCY_SAMPLES];
            rbi_resp_array(x->out, 2);
            rbi_resp_int(x->out, (long long)s->unix_s);
            rbi_resp_int(x->out, s->ms);
        }
    } else if (rbd_cmd_arg_is(x, 1, "RESET")) {
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
    } else if (rbd_cmd_arg_is(x, 1, "HELP") && x->argc == 2) {
        help(x, lines);
    } else {
        unknown_sub(x, "LATENCY");
    }
}

static void cmd_monitor(rbd_ctx_t *x)
{
    if (!x->c->monitor) {
        x->c->monitor = 1;
        x->s->obs.monitors++;
    }
    rbi_resp_simple(x->out, "OK");
}

const rbd_command_t rbd_cmd_observe_table[] = {
    RBD_COMMAND("SLOWLOG", -2, CMD_ADMIN, cmd_slowlog, "server",
                "Returns the slow log's entries, its length, or resets it",
                "(GET [count:integer] | LEN | RESET | HELP)"),
    RBD_COMMAND("LATENCY", -2, CMD_ADMIN, cmd_latency, "server",
                "Returns the latency monitor's samples (latency-monitor-threshold), or resets them",
                "(LATEST | HISTORY event | RESET [event...] | HELP)"),
    RBD_COMMAND("MONITOR", 1, CMD_ADMIN | CMD_NO_MULTI, cmd_monitor, "server",
                "Streams every command the daemon runs, as it runs it",
                ""),
    RBD_COMMAND_END,
};
