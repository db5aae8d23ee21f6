/*
 * server.h - the daemon as one object: its configuration, the served
 * state, persistence, the event loop's clients and the counts INFO shows
 * (server.c runs it; command handlers read it).
 */
#ifndef RBD_SERVER_H
#define RBD_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "aof.h"
#include "client.h"
#include "rbd_config.h"
#include "observe.h"
#include "stats.h"
#include "rbd_log.h"
#include "resp_enc.h"
#include "segwatch.h"
#include "snapshot.h"
#include "filter_source.h"
#include "ring_source.h"
#include "state.h"


typedef struct server {
    rbd_config_t cfg;
    const rbd_config_src_t *src;  /* where cfg came from (SIGHUP reads it again) */
    rbd_state_t state;
    rbd_aof_t aof;
    rbd_snapshots_t snaps;
    rbd_segwatch_t watch;
    rbd_observe_t obs;         /* slow log, latency monitor, MONITOR (observe.c) */
    rbd_stats_t stats;         /* INFO's command, error, keyspace, network counts (stats.c) */
    rbd_source_t *source;      /* ring-source etcd (ring_source.c), else NULL */
    rbd_fsource_t *fsource;    /* filter-source nats (filter_source.c), else NULL */
    int epfd, lfd, sigfd;
    int spare_fd;              /* held to tell a client "no" when out of fds */
    int accept_paused;         /* lfd left the epoll set until accept_resume_ms */
    uint64_t accept_resume_ms;
    uint64_t fd_limit;         /* RLIMIT_NOFILE soft limit in force */
    client_t **clients;        /* indexed by fd */
    size_t clients_cap;
    uint32_t nclients;
    uint64_t client_mem;       /* every client's buffers together */
    int resume_pending;        /* some client is paused with output drained */
    const char **argv;         /* the request being executed (its lengths: the parser's) */
    size_t argv_cap;
    rbd_ratelog_t log_accept, log_evict;
    uint64_t next_client_id;
    uint64_t start_ms;
    uint64_t last_heartbeat_ms;
    int in_exec;               /* an EXEC's members are running */
    int shutdown;              /* 1: leave the loop */
    int shutdown_save;         /* snapshot before leaving */
    /* Puts a configuration in force (rbd_server_apply): how CONFIG SET,
     * below the loop, reaches it (set by rbd_server_listen). */
    void (*apply)(struct server *s, const rbd_config_t *fresh, int log_fd);
    uint64_t pause_until_ms;   /* CLIENT PAUSE: clients' commands wait until then
                                  (monotonic; 0: no pause), all of them or, with */
    int pause_writes;          /* ... this, those that change state (client.c) */
    int foreground;            /* -f: the log's stderr, no syslog (rbd_log.c) */
    uint64_t clock_us;         /* the loop's last clock reading (monotonic us): a
                                  batch's start (client.c, run_input), then each
                                  command's end (cmd.c, dispatch), so a command
                                  costs one clock read */
    /* stats (commands: those whose handler ran, Redis's total_commands_processed) */
    uint64_t commands, connections, rejected_clients, denied, protocol_errors, timeouts,
        evicted_clients, output_limit_clients;
} server_t;

/* The interval of the log lines a client can provoke (one per interval). */
#define RBD_LOG_EVERY_MS 10000u

/* Listens on cfg.socket (its directory created), sets up epoll and the
 * signalfd, fits the descriptor limit.  0, or -1 with err. */
int rbd_server_listen(server_t *s, char *err, size_t errlen);
/* The op sinks' reply function (rbd_sinks_init's, arg the server): a
 * deferred reply's answer to client id (sink.h). */
void rbd_server_answer(void *arg, uint64_t id, const rbd_reply_t *r);
/* Puts fresh in force, as a reload does (SIGHUP, CONFIG SET): the caller
 * kept its restart-only settings as they are (rbd_config_keep_restart_
 * only); the slow log's length, the log's fsync, the descriptor limit, the
 * log (level, file: log_fd, fresh->logfile opened already and taken
 * over, or -1 to reopen it by its path; syslog) and every client's
 * permission follow it. */
void rbd_server_apply(server_t *s, const rbd_config_t *fresh, int log_fd);
/* The log as s->cfg and s->foreground say (rbd_log_setup_fd, log_fd as
 * there): at start and on SIGHUP.  0, or -1 with err (the logfile that
 * cannot be opened). */
int rbd_server_log_setup(server_t *s, int log_fd, char *err, size_t errlen);
/* The event loop, until SHUTDOWN or a signal: 0, or -1 if epoll fails. */
int rbd_server_run(server_t *s);
/* Closes every client, the listener (its socket file removed) and the
 * loop's descriptors. */
void rbd_server_close(server_t *s);

#endif /* RBD_SERVER_H */
