/*
 * ringbloom/conn.h - the write path: a blocking connection to ringbloomd
 * over its Unix socket, a call per ring or filter change, and any other
 * command with its reply as text.
 *
 * A part of ringbloom.h: programs include <ringbloom.h>, which includes
 * every part, and its conventions (return codes, who may call, handles,
 * keys) hold here.
 */
#ifndef RINGBLOOM_CONN_H
#define RINGBLOOM_CONN_H

#include "core.h"
#include "bloom.h"
#include "ring.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A blocking RESP2 connection to ringbloomd over its Unix socket.  Every
 * change goes through the daemon (the single writer); reads should use the
 * segment instead.  One thread at a time per connection. */
typedef struct rb_conn rb_conn_t;

/* Any process.  Connects to socket_path, or, if it is NULL, to the default
 * socket of instance (rb_default_paths; NULL instance = "default") and,
 * if no daemon is there (no directory, no socket, nobody listening), to
 * its system socket (rb_system_paths).  A directory tried must first pass
 * rb_daemon_uid's rule (RB_EOWNER, and no further try: the default may be
 * /tmp/ringbloom-<uid>, which another user could have made; rb_daemon_uid
 * gives the reason).  An explicit socket_path is the caller's
 * configuration and is used as given (check it with rb_daemon_uid).
 * timeout_ms bounds every later send/receive (0 -> 10 s).  Errors:
 * RB_EINVAL, RB_EOWNER, RB_EDAEMON (nobody listening; errno says why),
 * RB_ENOMEM. */
RB_EXPORT RB_WUR int rb_conn_open(const char *instance, const char *socket_path,
                                  unsigned timeout_ms, rb_conn_t **out);
RB_EXPORT void rb_conn_close(rb_conn_t *c);

/* The text of the last error reply (RB_EREPLY / RB_EPERM), or "". */
RB_EXPORT const char *rb_conn_error(const rb_conn_t *c);

/* Every call below sends and then waits for the reply: RB_EDAEMON if the
 * connection broke, RB_ETIMEDOUT if the daemon did not answer within the
 * timeout (a change may have been applied all the same); either way the
 * connection is unusable afterwards. */

/* Ring mutations: RING.ADD / RING.REMOVE / RING.WEIGHT.  0, or RB_EREPLY
 * (e.g. "ERR node exists: 'n1' (...)"), RB_EPERM, RB_EDAEMON, RB_ETIMEDOUT, RB_EPROTO. */
RB_EXPORT RB_WUR int rb_conn_ring_add(rb_conn_t *c, const char *name, size_t len,
                                      uint32_t weight);
RB_EXPORT RB_WUR int rb_conn_ring_remove(rb_conn_t *c, const char *name, size_t len);
RB_EXPORT RB_WUR int rb_conn_ring_weight(rb_conn_t *c, const char *name, size_t len,
                                         uint32_t weight);
/* RING.UP / RING.DOWN / RING.DRAIN: the node's state (rb_node_state_t;
 * ringbloom/ring.h says what each does to lookups).  Errors as
 * rb_conn_ring_add (RB_ENOENT: no such node; RB_EINVAL: a bad state). */
RB_EXPORT RB_WUR int rb_conn_ring_state(rb_conn_t *c, const char *name, size_t len,
                                        rb_node_state_t state);

/* BF.RESERVE with p's capacity, error rate, layout and flags: NONSCALING,
 * or EXPANSION (scaling), or AGING with its window and GENERATIONS.
 * RB_EINVAL, with nothing sent, for RB_BLOOM_OVERFILL: no command creates
 * such a filter.  The secret is the daemon's choice (p->secret is not
 * sent).  Errors otherwise as rb_conn_ring_add. */
RB_EXPORT RB_WUR int rb_conn_bf_reserve(rb_conn_t *c, const char *name, size_t len,
                                        const rb_bloom_params_t *p);

/* BF.ADD: 1 if the key was new (this caller is the one that added it), 0
 * if it was (maybe) present, or an error. */
RB_EXPORT RB_WUR int rb_conn_bf_add(rb_conn_t *c, const char *filter, size_t flen,
                                    const void *key, size_t klen);

/* Adds n keys with pipelined BF.MADD batches (several in flight); a
 * missing filter is made with the daemon's defaults (BF.MADD's rule).
 * out_new[i] = 1 if key i was new; returns the number of new keys.  On an
 * error the keys of every batch sent stay added, and the replies of the
 * batches in flight are read, so the connection stays usable. */
RB_EXPORT RB_WUR int64_t rb_conn_bf_add_many(rb_conn_t *c, const char *filter, size_t flen,
                                             const rb_key_t *keys, size_t n, uint8_t *out_new);

/* Adds n keys with pipelined BF.INSERT batches, as rb_conn_bf_add_many
 * does with BF.MADD, but never into a filter made with the daemon's
 * defaults: create == NULL adds only to an existing filter (NOCREATE:
 * RB_ENOENT, nothing made or added, if there is none); otherwise a missing
 * filter is made with create's capacity, error rate, layout and
 * NONSCALING or expansion (an existing one keeps its own shape).
 * RB_EINVAL, with nothing sent, for an aging or overfilling create: no
 * BF.INSERT makes one.  Errors otherwise as rb_conn_bf_add_many. */
RB_EXPORT RB_WUR int64_t rb_conn_bf_insert_many(rb_conn_t *c, const char *filter, size_t flen,
                                                const rb_bloom_params_t *create,
                                                const rb_key_t *keys, size_t n,
                                                uint8_t *out_new);

/* Sends one command (argv/argl: argc arguments) and returns its reply
 * rendered as text into buf (cap bytes, NUL-terminated, truncated if
 * needed): integers and strings as is, nil as "(nil)", arrays one element
 * per line.  Returns 0, or RB_EREPLY with the error text in buf; RB_ERANGE,
 * with nothing sent, for a request of 2 GiB or more. */
RB_EXPORT RB_WUR int rb_conn_command(rb_conn_t *c, size_t argc, const char *const *argv,
                                     const size_t *argl, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* RINGBLOOM_CONN_H */
