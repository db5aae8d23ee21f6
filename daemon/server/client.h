/*
 * client.h - one client of ringbloomd (client.c): its connection, buffers
 * and state in the event loop.
 */
#ifndef RBD_CLIENT_H
#define RBD_CLIENT_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "acl.h"
#include "resp.h"
#include "resp_enc.h"
#include "txn.h"

/* Why an EXEC's replies were cut (client_t.exec_cut). */
#define RBD_CUT_OUTPUT 1   /* they passed client-output-hard-limit */
#define RBD_CUT_MEMORY 2   /* they would take all clients' buffers past max-client-memory */

struct server;
struct ucred;

typedef struct client {
    int fd;
    uint64_t id;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    rbi_buf_t in;        /* received, not yet executed */
    resp_parser_t parser;
    rbi_buf_t out;       /* replies not yet sent; out.resp3: the protocol it chose
                            (HELLO), in which every reply is encoded */
    rbd_txn_t txn;       /* MULTI ... EXEC */
    char *name;          /* CLIENT SETNAME / HELLO SETNAME, or NULL */
    char *lib_name, *lib_ver; /* CLIENT SETINFO, or NULL */
    uint64_t created_ms;
    uint64_t mem;         /* bytes of its buffers, counted in client_mem */
    uint64_t last_active_ms; /* last complete request or reply byte sent */
    int closing;          /* close once out is flushed */
    int writing;          /* registered for EPOLLOUT */
    rbd_acl_who_t who;    /* its ACL rule sets (acl.h), from its peer
                             credentials at accept and again on SIGHUP */
    const struct rbd_command *acl_cmd, *acl_sub;  /* the last command (and
                             subcommand) who permitted: permitted again
                             without the rules (cmd.c); NULL when who changes */
    int awaits_flush;     /* a reply in out acknowledges an op the sinks have
                             not flushed (the log: a record not yet durable):
                             out waits for rbd_sinks_flush (P1) */
    int paused;           /* complete requests wait in `in` until out
                             drains below client-output-soft-limit */
    int exec_cut;         /* an EXEC's replies passed a limit (cmd.c:
                             RBD_CUT_*): the rest were dropped, c closes */
    uint64_t awaits_reply; /* tickets its command opened and not yet answered
                             (sink.h: a sink took its ops, as ring-source etcd
                             takes a RING.* change): its answer, and the
                             requests after it, wait for them (server.c) */
    const char *last_cmd, *last_sub; /* the last command run (its row's names) */
    int monitor;          /* MONITOR: every other client's command is fed to it
                             (observe.c), counted in obs.monitors */
} client_t;

/* A client for connection fd of the peer cred (its ACL rule sets: who),
 * watched for input; fd is closed if there is no memory for it. */
void rbd_client_new(struct server *s, int fd, const struct ucred *cred,
                    const rbd_acl_who_t *who);
/* Closes c and frees it, its buffers given back at once. */
void rbd_client_free(struct server *s, client_t *c);
/* Sets what epoll watches for c from its state. */
void rbd_client_interest(struct server *s, client_t *c);
/* Reads what c sent (a bounded share per loop turn) and runs every
 * complete request in it. */
void rbd_client_read(struct server *s, client_t *c);
/* Sends c's queued replies: 0 if c is still there, -1 if it was freed. */
int rbd_client_write(struct server *s, client_t *c);
/* B1: runs the waiting requests of paused clients whose replies drained. */
void rbd_clients_resume(struct server *s);

#endif /* RBD_CLIENT_H */
