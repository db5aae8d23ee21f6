/*
 * stats.c - the counters of INFO's Stats, Commandstats and Errorstats
 * (stats.h says what each counts): a command row's counters found by its
 * names' addresses, an error reply's code counted, the rates sampled.
 * Called by the dispatch (cmd.c), the clients' reads and writes
 * (client.c) and the housekeeping (server.c); read by INFO (cmd_info.c).
 * It calls nothing of the daemon's.
 */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include "stats.h"

rbd_cmdstat_t *rbd_cmdstat(rbd_stats_t *st, const char *cmd, const char *sub)
{
    uint64_t h = ((uint64_t)(uintptr_t)cmd * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)(uintptr_t)sub * 0xC2B2AE3D27D4EB4Full);
    size_t i = (size_t)(h >> 32) % RBD_CMDSTATS;

    for (size_t n = 0; n < RBD_CMDSTATS; n++, i = (i + 1) % RBD_CMDSTATS) {
        rbd_cmdstat_t *c = &st->cmd[i];
        if (c->cmd == cmd && c->sub == sub)
            return c;
        if (c->cmd == NULL) {
            if (st->ncmd >= RBD_CMDSTATS / 2)   /* half full: the probes stay short */
                return NULL;
            st->ncmd++;
            c->cmd = cmd;
            c->sub = sub;
            return c;
        }
    }
    return NULL;
}

void rbd_errstat_add(rbd_stats_t *st, const char *reply, size_t len)
{
    char code[RBD_ERRCODE_BYTES];
    size_t n = 0;

    st->errors++;
    /* A code is a word of letters, digits, '_' and '-' (any other byte
     * as '_': INFO's line must stay "errorstat_CODE:count=N"). */
    for (size_t i = 1; i < len && n + 1 < sizeof(code); i++) {
        unsigned char ch = (unsigned char)reply[i];
        if (ch == ' ' || ch == '\r' || ch == '\n')
            break;
        code[n++] = isalnum(ch) || ch == '_' || ch == '-' ? (char)ch : '_';
    }
    code[n] = '\0';
    for (size_t i = 0; i < st->nerr; i++)
        if (strcmp(st->err[i].code, code) == 0) {
            st->err[i].count++;
            return;
        }
    if (st->nerr < RBD_ERRSTATS) {
        memcpy(st->err[st->nerr].code, code, n + 1);
        st->err[st->nerr++].count = 1;
    }
}

static void rate_sample(rbd_rate_t *r, uint64_t value, uint64_t now_ms)
{
    if (r->last_ms != 0 && now_ms > r->last_ms) {
        r->sample[r->at] = (value - r->last_value) * 1000u / (now_ms - r->last_ms);
        r->at = (r->at + 1) % RBD_RATE_SAMPLES;
    }
    r->last_ms = now_ms;
    r->last_value = value;
}

void rbd_stats_tick(rbd_stats_t *st, uint64_t commands, uint64_t now_ms)
{
    if (st->ops.last_ms != 0 && now_ms - st->ops.last_ms < RBD_RATE_EVERY_MS)
        return;
    rate_sample(&st->ops, commands, now_ms);
    rate_sample(&st->in, st->net_in, now_ms);
    rate_sample(&st->out, st->net_out, now_ms);
}

uint64_t rbd_rate_per_sec(const rbd_rate_t *r)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < RBD_RATE_SAMPLES; i++)
        sum += r->sample[i];
    return sum / RBD_RATE_SAMPLES;
}
