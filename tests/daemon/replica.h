/*
 * replica.h - what check_replica's files share: the fleet (a 3-server
 * NATS cluster and three ringbloomd following one stream, a fourth and a
 * lone local daemon when a test starts them) and the helpers that drive
 * it (check_replica.c), and the TCase of check_replica_trust.c (what
 * crosses from the stream and the servers into a host, issue 41).
 */
#ifndef CHECK_REPLICA_H
#define CHECK_REPLICA_H

#include <nats/nats.h>

#include "nats_cluster.h"
#include "rbd_test.h"

#define HOSTS   3
#define STREAM  "RBR"
#define PROBES  30000
#define SNAP_EVERY 16    /* nats-snapshot-every: the stream keeps 16 to 32 messages */

extern rb_nats_cluster_t cl;
extern rbd_proc_t d[HOSTS + 1], lone;
extern rb_conn_t *c[HOSTS + 1], *lc;
extern char extra[1024];   /* the hosts' settings (fleet_start) */

/* Host i (0..HOSTS) started on extra, and connected. */
void host_start(int i);
/* Until host i follows the stream (INFO nats_ready:1; <= 30 s). */
void await_ready(int i);
/* A fresh cluster and hosts 0..HOSTS-1 following stream STREAM
 * (nats-filters r:*, nats-timeout 2000, nats-snapshot-every SNAP_EVERY),
 * with more settings (config lines) for every host. */
void fleet_start(void);
void fleet_start_with(const char *more);
/* The TCases' teardown: connections, daemons, cluster. */
void fleet_stop(void);
/* Host i's INFO nats_applied_seq. */
uint64_t applied(int i);
/* Two hosts' dumps of filter name equal, but for the reserve's clock. */
void assert_same_filter(rbd_dump_t *a, rbd_dump_t *b, const char *name);
/* Runs words on host h until the stream takes it: the reply. */
const char *write_on(int h, const char *const *argv, size_t argc);
/* Until hosts 0..n-1 applied the same sequence, at least min (<= 30 s):
 * the milliseconds it took. */
uint64_t converge(int n, uint64_t min);
/* PROBES BF.MEXISTS replies of filter name on conn, hashed. */
uint64_t probe_hash(rb_conn_t *conn, const char *name);
/* The sequence the newest manifest in STREAM_SNAP covers (0: none). */
uint64_t manifest_seq(void);
/* A RESP command of three words sent on a raw socket; one reply line
 * read (<= 10 s). */
void raw_cmd(int fd, const char *a, const char *b, const char *k);
void raw_line(int fd, char *out, size_t cap);
/* Publishes data on subject with headers hdr (name, value, ..., NULL),
 * or on the stream's subject with Rb-Format fmt (NULL: none): the
 * sequence. */
uint64_t publish_msg(const char *subject, const void *data, size_t len, const char *const *hdr);
uint64_t publish_raw(const void *data, size_t len, const char *fmt);

TCase *replica_trust_tcase(void);   /* check_replica_trust.c */

#endif
