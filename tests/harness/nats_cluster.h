/*
 * nats_cluster.h - a real NATS JetStream cluster on loopback for the tests
 * (tests/harness/nats_cluster.c): N servers (nats-server 2.9, Debian's
 * nats-server), each its own process with JetStream on a file store in
 * its own directory, all under one temporary directory
 * "/tmp/rbtest.<main pid>.nats.XXXXXX" (so the suite's end removes it if
 * a test died before its teardown), routed to each other as one cluster
 * when N > 1, at free loopback ports the kernel gave out (bound all at
 * once, then let go: a port another process takes first makes that
 * server's start fail, said).
 *
 * Every server is started with PR_SET_PDEATHSIG = SIGKILL, so it dies with
 * the test process however that ends, and rb_nats_start registers an
 * atexit handler that kills every server still running and removes the
 * directory (Check's failed assertion exits the test process; a process
 * the test forked leaves the cluster alone when it exits).
 * Server i reads DIR/nI.conf and logs to DIR/nI.log, printed by
 * rb_nats_start and rb_nats_wait_ready on failure.
 *
 * The readiness probe is libnats's: a connection to each server, then
 * js_GetAccountInfo, which answers OK only once JetStream has a meta
 * leader; then, with more than one server running, a memory stream with
 * one replica per running server created and deleted (the meta leader
 * places streams only on peers that have reported to it, so the first
 * probe alone let an R3 create fail with jerr 10005).  The caller owns
 * the library's global state and calls nats_Close() when it is done with
 * libnats.
 */
#ifndef RB_NATS_CLUSTER_H
#define RB_NATS_CLUSTER_H

#include <sys/types.h>

#define RB_NATS_MAX 5

typedef struct rb_nats_cluster {
    int n;
    char dir[128];
    int client_port[RB_NATS_MAX], route_port[RB_NATS_MAX];
    pid_t pid[RB_NATS_MAX];                 /* 0: not running */
    char url[RB_NATS_MAX][64];              /* nats://127.0.0.1:PORT */
    const char *servers[RB_NATS_MAX];       /* url[i], for natsOptions_SetServers */
} rb_nats_cluster_t;

/* The nats-server program ($RB_NATS_SERVER, else nats-server on PATH),
 * or NULL when absent. */
const char *rb_nats_program(void);

/* Starts n servers (1..RB_NATS_MAX) and waits (at most timeout_ms) until
 * they are ready (rb_nats_wait_ready).  0, or -1 with the cause printed
 * (and everything it started stopped). */
int rb_nats_start(rb_nats_cluster_t *c, int n, int timeout_ms);

/* SIGKILL server i and reap it. */
void rb_nats_kill(rb_nats_cluster_t *c, int i);

/* Starts server i again on its store directory and ports. 0 or -1. */
int rb_nats_restart(rb_nats_cluster_t *c, int i);

/* Until every running server answers js_GetAccountInfo OK and a stream
 * replicated on all of them can be created (at most timeout_ms): 0, or -1
 * with the logs printed. */
int rb_nats_wait_ready(rb_nats_cluster_t *c, int timeout_ms);

/* Kills every server and removes the directory (also at exit). */
void rb_nats_stop(rb_nats_cluster_t *c);

#endif /* RB_NATS_CLUSTER_H */
