/*
 * etcd_cluster.h - a real etcd cluster on loopback for the tests
 * (tests/harness/etcd_cluster.c): N members (etcd 3.4, Debian's
 * etcd-server), each its own process with its own data directory under
 * one temporary directory "/tmp/rbtest.<main pid>.etcd.XXXXXX" (so the
 * suite's end removes it if a test died before its teardown), at free
 * loopback ports the kernel gave out (bound all at once, then let go: a
 * port another process takes first makes that member's start fail, said).
 *
 * Every member is started with PR_SET_PDEATHSIG = SIGKILL, so it dies with
 * the test process however that ends, and rb_etcd_start registers an
 * atexit handler that kills every member still running and removes the
 * directory (Check's failed assertion exits the test process; a process
 * the test forked leaves the cluster alone when it exits).
 * Members log to DIR/mN.log, printed by rb_etcd_start on failure.
 */
#ifndef RB_ETCD_CLUSTER_H
#define RB_ETCD_CLUSTER_H

#include <sys/types.h>

#define RB_ETCD_MAX 5

typedef struct rb_etcd_cluster {
    int n;
    char dir[128];
    int client_port[RB_ETCD_MAX], peer_port[RB_ETCD_MAX];
    pid_t pid[RB_ETCD_MAX];                 /* 0: not running */
    char url[RB_ETCD_MAX][64];              /* http://127.0.0.1:PORT */
    const char *endpoints[RB_ETCD_MAX];     /* url[i], for rbd_etcd_opts_t */
    char initial[RB_ETCD_MAX * 64];         /* --initial-cluster */
    int tls;                                /* clients over TLS, certificates asked */
    char ca[160], cert[160], key[160];      /* tls: the CA, a client's certificate
                                               and key (DIR/ca.pem, client.pem, .key) */
} rb_etcd_cluster_t;

/* The etcd program ($RB_ETCD, else etcd on PATH), or NULL when absent. */
const char *rb_etcd_program(void);

/* Starts n members and waits (at most timeout_ms) until each answers
 * /health true.  0, or -1 with the cause printed (and everything it
 * started stopped). */
int rb_etcd_start(rb_etcd_cluster_t *c, int n, int timeout_ms);

/* rb_etcd_start, the members serving clients over TLS only (https URLs)
 * and asking for a client certificate signed by a CA made for the
 * cluster (openssl; c->ca, c->cert, c->key name the files).  0 or -1. */
int rb_etcd_start_tls(rb_etcd_cluster_t *c, int n, int timeout_ms);

/* SIGKILL member i and reap it. */
void rb_etcd_kill(rb_etcd_cluster_t *c, int i);

/* Starts member i again on its data directory and ports. 0 or -1. */
int rb_etcd_restart(rb_etcd_cluster_t *c, int i);

/* Until every running member answers /health true (at most timeout_ms):
 * 0, or -1. */
int rb_etcd_wait_healthy(rb_etcd_cluster_t *c, int timeout_ms);

/* Runs etcdctl (next to the etcd program, else on PATH) with
 * --endpoints of the running members, then args (a shell fragment,
 * e.g. "user add root:pw"); its exit status (-1: not run). */
int rb_etcd_ctl(rb_etcd_cluster_t *c, const char *args);

/* Puts key = val (val NULL: deletes key) through the JSON gateway of the
 * first running member that answers, the key and value as raw bytes (a
 * NUL among them, which etcdctl cannot pass): the full key, prefix
 * included.  0, or -1. */
int rb_etcd_raw(rb_etcd_cluster_t *c, const void *key, size_t klen, const void *val,
                size_t vlen);

/* Kills every member and removes the directory (also at exit). */
void rb_etcd_stop(rb_etcd_cluster_t *c);

#endif /* RB_ETCD_CLUSTER_H */
