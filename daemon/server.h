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
#include "rbd_config.h"
#include "rbd_log.h"
#include "resp.h"
#include "segwatch.h"
#include "snapshot.h"
#include "state.h"

typedef struct client {
    int fd;
    uint64_t id;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    resp_buf_t in;        /* received, not yet executed */
    resp_parser_t parser;
    resp_buf_t out;       /* replies not yet sent */
    uint64_t mem;         /* bytes of its buffers, counted in client_mem */
    uint64_t last_active_ms; /* last complete request or reply byte sent */
    int closing;          /* close once out is flushed */
    int writing;          /* registered for EPOLLOUT */
    int can_write;        /* may run mutations (decided at accept and on SIGHUP) */
    int awaits_log;       /* a reply in out acknowledges a record not yet
                             durable: out waits for the log (P1) */
    int paused;           /* complete requests wait in `in` until out
                             drains below client-output-soft-limit */
} client_t;

typedef struct server {
    rbd_config_t cfg;
    const rbd_config_src_t *src;  /* where cfg came from (SIGHUP reads it again) */
    rbd_state_t state;
    rbd_aof_t aof;
    rbd_snapshots_t snaps;
    rbd_segwatch_t watch;
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
    const char **argv;         /* the request being executed, as arguments */
    size_t *argl;
    size_t args_cap;
    rbd_ratelog_t log_accept, log_evict;
    uint64_t next_client_id;
    uint64_t start_ms;
    uint64_t last_heartbeat_ms;
    int shutdown;              /* 1: leave the loop */
    int shutdown_save;         /* snapshot before leaving */
    /* stats */
    uint64_t commands, connections, rejected_clients, denied, protocol_errors, timeouts,
        evicted_clients, output_limit_clients;
} server_t;

/* Listens on cfg.socket (its directory created), sets up epoll and the
 * signalfd, fits the descriptor limit.  0, or -1 with err. */
int rbd_server_listen(server_t *s, char *err, size_t errlen);
/* The event loop, until SHUTDOWN or a signal: 0, or -1 if epoll fails. */
int rbd_server_run(server_t *s);
/* Closes every client, the listener (its socket file removed) and the
 * loop's descriptors. */
void rbd_server_close(server_t *s);

#endif /* RBD_SERVER_H */
