/*
 * observe.h - what ringbloomd keeps of its own behaviour for Redis's tools
 * (observe.c): the slow log (SLOWLOG), the latency monitor (LATENCY) and
 * the MONITOR line (client.c feeds it to the monitoring clients), each as
 * redis-server keeps it, so redis-cli --latency,
 * --stat, MONITOR and prometheus-redis-exporter read them unchanged.
 *
 * Slow log: every command whose handler ran at least
 * slowlog-log-slower-than microseconds (negative: none; 0: every one),
 * the newest slowlog-max-len kept, each with a unique id, its unix time,
 * its duration, its first RBD_SLOW_ARGS arguments (each cut to
 * RBD_SLOW_ARG_BYTES, as Redis), the client's address and name.
 *
 * Latency monitor: per event (rbd_latency_event_t), samples of at least
 * latency-monitor-threshold milliseconds (0: off, Redis's default), one
 * per second (the largest), the last RBD_LATENCY_SAMPLES kept, with the
 * latest and the largest ever.  Events: a command's handler ("command"),
 * a whole loop turn ("eventloop": reading, running and answering
 * clients), the log's fsync in the reply path ("aof-fsync-always") and a
 * snapshot's freeze ("snapshot-freeze": the loop's part of a
 * background snapshot, the time readers' writes wait).
 *
 * Memory is bounded: the slow log by slowlog-max-len entries of bounded
 * size, the monitor by RBD_LATENCY_EVENTS x RBD_LATENCY_SAMPLES.  All of
 * it lives in the loop thread.
 */
#ifndef RBD_OBSERVE_H
#define RBD_OBSERVE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "resp_enc.h"   /* rbi_buf_t */

#define RBD_SLOW_ARGS        32    /* arguments kept per entry (the last one says how many more) */
#define RBD_SLOW_ARG_BYTES   128   /* bytes kept per argument (then "... (N more bytes)") */
#define RBD_LATENCY_SAMPLES  160

typedef enum {
    RBD_LAT_COMMAND, RBD_LAT_EVENTLOOP, RBD_LAT_FSYNC, RBD_LAT_SNAPSHOT, RBD_LATENCY_EVENTS
} rbd_latency_event_t;

typedef struct rbd_slow_entry {
    uint64_t id, unix_s, us;
    size_t argc;                   /* kept arguments */
    char *args[RBD_SLOW_ARGS];     /* malloc'ed copies */
    size_t argl[RBD_SLOW_ARGS];
    char peer[64], name[64];
} rbd_slow_entry_t;

typedef struct rbd_latency_sample {
    uint64_t unix_s;
    uint32_t ms;
} rbd_latency_sample_t;

typedef struct rbd_latency {
    rbd_latency_sample_t s[RBD_LATENCY_SAMPLES];
    size_t n, next;                /* samples kept; where the next one goes */
    uint32_t max_ms;               /* the largest since the last reset */
} rbd_latency_t;

typedef struct rbd_observe {
    rbd_slow_entry_t *slow;        /* ring of slow_cap entries */
    size_t slow_cap, slow_n, slow_next;
    uint64_t slow_id;
    rbd_latency_t lat[RBD_LATENCY_EVENTS];
    uint32_t monitors;             /* clients in MONITOR mode */
} rbd_observe_t;

struct server;
struct client;

/* Monotonic microseconds, for a command's duration (vDSO: no system call). */
static inline uint64_t rbd_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The event's name as LATENCY shows it; NULL past the last. */
const char *rbd_latency_name(rbd_latency_event_t ev);

/* After a command ran for us microseconds: a slow-log entry if it was
 * slower than the setting, a "command" latency sample if past the
 * threshold. */
void rbd_observe_command(struct server *s, const struct client *c, size_t argc,
                         const char **argv, const size_t *argl, uint64_t us);

/* A latency sample of event ev (ms), kept if the threshold is on and ms
 * reaches it. */
void rbd_latency_add(struct server *s, rbd_latency_event_t ev, uint64_t ms);

/* Forgets the samples of ev (all events if ev == RBD_LATENCY_EVENTS). */
void rbd_latency_reset(rbd_observe_t *o, rbd_latency_event_t ev);

/* The slow log's entries, newest first: the i-th (0 = newest), or NULL. */
const rbd_slow_entry_t *rbd_slowlog_get(const rbd_observe_t *o, size_t i);

/* Empties the slow log. */
void rbd_slowlog_reset(rbd_observe_t *o);

/* Applies slowlog-max-len (at start and on a change): keeps the newest
 * entries that fit.  -1 out of memory (the old log kept). */
int rbd_slowlog_resize(rbd_observe_t *o, size_t cap);

/* A request's MONITOR line, appended to line, as redis-server prints it
 * ("+<unix>.<us> [0 unix:<socket>] \"arg\" ...\r\n", each argument
 * quoted as its sdscatrepr, AUTH's password hidden). */
void rbd_monitor_line(const struct server *s, size_t argc, const char **argv,
                      const size_t *argl, rbi_buf_t *line);

/* Frees everything. */
void rbd_observe_free(rbd_observe_t *o);

#endif /* RBD_OBSERVE_H */
