/*
 * stats.h - the counters INFO's Stats, Commandstats and Errorstats
 * sections show under redis-server's names (stats.c), so the tools that
 * read a Redis server (prometheus-redis-exporter's redis_commands_total,
 * redis_errors_total, redis_keyspace_hits_total, its dashboards) read
 * ringbloomd's measured figures: per command row (a command, or one of
 * its subcommands, "config|get") the calls, the microseconds its handler
 * ran, the calls refused before it ran (its arity, access rules, a
 * log that cannot be written, a queue refusal in MULTI) and those that
 * ran and answered an error; per error code (the reply's first word:
 * ERR, NOPERM, MISCONF...) the error replies; the keyspace lookups of
 * the reads that name a key; the bytes read from and written to clients;
 * and the instantaneous rates of commands and bytes (Redis's: the mean
 * of the last RBD_RATE_SAMPLES samples, one every 100 ms).
 *
 * Memory is fixed: RBD_CMDSTATS rows (the command tables hold fewer),
 * RBD_ERRSTATS codes of at most RBD_ERRCODE_BYTES - 1 bytes (Redis's
 * limit of 128: an error whose code is new past it counts in `errors`
 * alone).  Everything here lives in the loop thread; a counter never
 * resets while the daemon runs (Redis's CONFIG RESETSTAT is not here).
 */
#ifndef RBD_STATS_H
#define RBD_STATS_H

#include <stddef.h>
#include <stdint.h>

#define RBD_CMDSTATS      512   /* rows counted: more than twice the commands and
                                   subcommands together (open addressing) */
#define RBD_ERRSTATS      128   /* distinct error codes, as Redis */
#define RBD_ERRCODE_BYTES 32    /* a code's bytes, NUL included (longer: cut) */
#define RBD_RATE_SAMPLES  16
#define RBD_RATE_EVERY_MS 100

/* One command row's counters; cmd NULL: a free slot.  cmd and sub are
 * the command table's own strings (its row's name and its subcommand's,
 * or NULL), which also key the slot: one row, one slot. */
typedef struct rbd_cmdstat {
    const char *cmd, *sub;
    uint64_t calls, usec, rejected, failed;
} rbd_cmdstat_t;

typedef struct rbd_errstat {
    char code[RBD_ERRCODE_BYTES];
    uint64_t count;
} rbd_errstat_t;

/* A per-second rate from a counter sampled every RBD_RATE_EVERY_MS. */
typedef struct rbd_rate {
    uint64_t sample[RBD_RATE_SAMPLES];   /* per second */
    size_t at;
    uint64_t last_ms, last_value;        /* last_ms 0: never sampled */
} rbd_rate_t;

typedef struct rbd_stats {
    rbd_cmdstat_t cmd[RBD_CMDSTATS];
    size_t ncmd;
    rbd_errstat_t err[RBD_ERRSTATS];
    size_t nerr;
    uint64_t errors;             /* error replies, every code (total_error_replies) */
    uint64_t hits, misses;       /* keys a read named that were (not) there */
    uint64_t net_in, net_out;    /* bytes read from / written to clients */
    rbd_rate_t ops, in, out;     /* commands, net_in, net_out per second */
} rbd_stats_t;

/* The counters of the row named cmd (and sub, or NULL): found, or a free
 * slot claimed for it; NULL if every slot is taken (not with the tables
 * this daemon has).  O(1). */
rbd_cmdstat_t *rbd_cmdstat(rbd_stats_t *st, const char *cmd, const char *sub);

/* Counts an error reply: its bytes at reply (len of them, "-CODE text"
 * or "-CODE"), by its code, and in errors. */
void rbd_errstat_add(rbd_stats_t *st, const char *reply, size_t len);

/* Samples the rates (every call at least RBD_RATE_EVERY_MS after the
 * last; the loop's housekeeping): commands is the count of commands run
 * so far, now_ms a monotonic clock. */
void rbd_stats_tick(rbd_stats_t *st, uint64_t commands, uint64_t now_ms);

/* A rate: the mean of its samples, per second. */
uint64_t rbd_rate_per_sec(const rbd_rate_t *r);

#endif /* RBD_STATS_H */
