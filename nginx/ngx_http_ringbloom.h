/*
 * ngx_http_ringbloom.h - what the files of ngx_http_ringbloom_module share:
 * the configuration the directives build, the worker's state, and the
 * functions each file offers the files above it.
 *
 * The files, each calling only the ones below it:
 *
 *   ngx_http_ringbloom_module.c      directives, configuration, hooks;
 *                                    the only file naming the ngx_module_t
 *   ngx_http_ringbloom_upstream_conf.c  ringbloom_hash's parameters, peers
 *                                    and shared zone (configuration time)
 *   ngx_http_ringbloom_upstream.c    ringbloom_hash per request: the peer
 *                                    from the key's preference list, bounded
 *                                    loads, RING.DOWN / RING.UP reports
 *   ngx_http_ringbloom_admit.c       ringbloom_admit: what is queued, drops,
 *                                    $ringbloom_admit_drops / _errors
 *   ngx_http_ringbloom_admit_conn.c  the connection to the daemon: connect,
 *                                    write, read replies (hiredis's reader,
 *                                    lib/conn/resp_read.h), reconnect
 *   ngx_http_ringbloom_tinylfu.c     TinyLFU pairs in the worker, their
 *                                    victims; ringbloom_tinylfu's $var
 *   ngx_http_ringbloom_reader.c      the segment and its filters in the
 *                                    worker; ringbloom_node / _seen's $var
 *   ngx_http_ringbloom_worker.c      the worker's state: set up, released
 *   ngx_http_ringbloom_conf.c        what the directives share (names,
 *                                    keys, variables), configuration time
 *
 * Handlers below the module file find their configuration in what nginx
 * hands them (a variable's data, the admit of the request's location, the
 * upstream configuration the module file's peer init passes), so they
 * never look the module up.
 */

#ifndef _NGX_HTTP_RINGBLOOM_H_INCLUDED_
#define _NGX_HTTP_RINGBLOOM_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <ringbloom.h>


/* Seconds between attempts to attach, open a filter or connect. */
#define NGX_HTTP_RINGBLOOM_RETRY  1

/* ringbloom_tinylfu's victims= (keys a worker keeps): default, most; and
 * the longest key kept as a victim (a longer one is decided, not kept). */
#define NGX_HTTP_RINGBLOOM_VICTIMS      1000
#define NGX_HTTP_RINGBLOOM_VICTIMS_MAX  1000000
#define NGX_HTTP_RINGBLOOM_VICTIM_LEN   1024

/* ringbloom_hash's default hold_down= (seconds): Envoy's outlier
 * detection ejects a host for 30 s at first, as a base. */
#define NGX_HTTP_RINGBLOOM_HOLD_DOWN  30


typedef struct {
    ngx_str_t                    instance;   /* NUL-terminated */
    ngx_str_t                    socket;     /* NUL-terminated */
    ngx_uid_t                    owner;      /* the daemon's user; (uid_t) -1:
                                                the socket directory's owner */
    size_t                       admit_buffer;
    ngx_array_t                  filters;    /* ngx_str_t, NUL-terminated */
    ngx_array_t                  pairs;      /* TinyLFU pairs:
                                                ngx_http_ringbloom_pair_conf_t */
    ngx_uint_t                   generation;
    ngx_flag_t                   used;       /* a variable, admit or
                                                ringbloom_hash exists */
    ngx_flag_t                   admit_used;
    ngx_flag_t                   report_used; /* a ringbloom_hash report=:
                                                 the admit buffer and
                                                 connection carry it */
} ngx_http_ringbloom_main_conf_t;


/* A TinyLFU pair a configuration names (ringbloom_tinylfu, ringbloom_admit
 * ... tinylfu). */
typedef struct {
    ngx_str_t                    name;       /* NUL-terminated; first, as
                                                ngx_http_ringbloom_name_index
                                                needs */
    ngx_uint_t                   victims;    /* keys a worker keeps; 0: no
                                                ringbloom_tinylfu names it */
} ngx_http_ringbloom_pair_conf_t;


/* One peer's shared state, in this upstream's zone. */
typedef struct {
    ngx_atomic_t                 inflight;  /* its requests in flight */
    ngx_atomic_t                 fails;     /* consecutive failures */
    ngx_atomic_t                 down;      /* when RING.DOWN was queued;
                                               0: not reported down */
    ngx_atomic_t                 probe;     /* a probe is due at or after */
} ngx_http_ringbloom_slot_t;


/*
 * An upstream's zone: slot[i] belongs to the i-th peer of the upstream's
 * (non-backup) list.  total is the sum of the slots' inflight.  Each
 * increment is undone on the same slot of the same zone, so after a reload
 * that kept the zone (same peer count) the counts stay exact; the report
 * state is cleared when the peers' names changed (names: their crc32).
 */
typedef struct ngx_http_ringbloom_shm_s {
    ngx_atomic_t                 total;
    ngx_uint_t                   npeers;
    uint32_t                     names;
    ngx_http_ringbloom_slot_t    slot[1];
} ngx_http_ringbloom_shm_t;


/*
 * What ringbloom_hash sets in one upstream {} (the module's server
 * configuration there; unused elsewhere).
 */
typedef struct {
    ngx_http_ringbloom_main_conf_t *conf;    /* NULL: no ringbloom_hash */
    ngx_http_complex_value_t     key;
    ngx_uint_t                   balance;    /* c in thousandths (>= 1000);
                                                0: loads not bounded */
    ngx_uint_t                   report;     /* failures before RING.DOWN;
                                                0: no reports */
    time_t                       report_timeout; /* 0: the peer's
                                                    fail_timeout */
    time_t                       hold_down;  /* a peer reported down gets
                                                no probe nor RING.UP for
                                                this long */
    uint64_t                     report_status[10]; /* bit s: a response
                                                of status s (< 640) counts
                                                as a failure (report_status=) */
    ngx_uint_t                   npeers;     /* the round robin's peers */
    uint32_t                     names;      /* crc32 of their servers */
    ngx_shm_zone_t              *zone;       /* balance or report, else
                                                NULL */
    ngx_http_ringbloom_shm_t    *shm;        /* the zone's state, set when
                                                the zone is */
} ngx_http_ringbloom_upstream_conf_t;


/*
 * What one ringbloom_node, ringbloom_seen, ringbloom_tinylfu or
 * ringbloom_admit names: a KEY, with the FILTER (or PAIR) of seen, tinylfu
 * and admit and the FALLBACK of the variables.  The data of a variable's
 * get_handler; a location's admit.
 */
typedef struct {
    ngx_http_ringbloom_main_conf_t *conf;
    ngx_http_complex_value_t     key;
    ngx_http_complex_value_t    *fallback;   /* NULL: the kind's default */
    ngx_uint_t                   filter;     /* index in conf->filters, or
                                                in conf->pairs (tinylfu) */
    ngx_uint_t                   tinylfu;    /* an admit: ADMIT.TOUCH to
                                                pair filter, not BF.ADD */
} ngx_http_ringbloom_key_t;


/* A worker's handle on one filter, opened on first use. */
typedef struct {
    ngx_str_t                   *name;       /* in conf->filters */
    rb_bloom_t                  *bloom;
    time_t                       next_open;
    ngx_uint_t                   failing;    /* its failure was logged */
    ngx_uint_t                   refreshes;  /* admits: an add may refresh a
                                                key it holds: aging, or
                                                unknown */
    time_t                       checked;    /* when refreshes was set */
} ngx_http_ringbloom_filter_t;


/* A key a worker's TinyLFU keeps (one ngx_alloc: the key's bytes follow). */
typedef struct {
    ngx_str_node_t               sn;         /* first: node.key its crc32,
                                                str the key */
    ngx_queue_t                  queue;      /* in the pair's lru */
} ngx_http_ringbloom_kept_t;


/*
 * A worker's handle on one TinyLFU pair, opened on first use, and the
 * keys its ringbloom_tinylfu admitted (count of them, at most
 * conf->victims), by key (kept) and least recently used last (lru): the
 * worker's model of what nginx's cache holds, whose last is the victim.
 */
typedef struct {
    ngx_http_ringbloom_pair_conf_t *conf;    /* in main conf->pairs */
    rb_tinylfu_t                *h;
    time_t                       next_open;
    ngx_uint_t                   failing;    /* its failure was logged */
    ngx_rbtree_t                 kept;       /* ngx_http_ringbloom_kept_t */
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  lru;        /* most recently used first */
    ngx_uint_t                   count;
} ngx_http_ringbloom_pair_t;


/*
 * The worker's state (nginx workers are single-threaded): the reader's
 * handles, then the admits' buffer and connection.
 */
typedef struct {
    ngx_uint_t                   generation; /* 0: not set up */
    ngx_http_ringbloom_main_conf_t *conf;    /* valid while generation
                                                matches; close uses none
                                                of it */

    rb_segment_t                *segment;
    time_t                       next_attach;
    time_t                       last_refresh;
    ngx_http_ringbloom_filter_t *filters;
    ngx_uint_t                   nfilters;   /* conf->filters.nelts */
    ngx_http_ringbloom_pair_t   *pairs;
    ngx_uint_t                   npairs;     /* conf->pairs.nelts */
    ngx_uint_t                   attach_failing; /* logged, not attached */
    ngx_uint_t                   ring_failing;   /* logged, not answering */

    /*
     * The admit buffer: start <= pos <= sent <= last <= end.  [pos, last)
     * are whole queued commands, each a RESP array of bulk strings
     * (BF.ADD FILTER KEY, ADMIT.TOUCH PAIR KEY, RING.DOWN / RING.UP NODE:
     * admit.c writes them,
     * admit_conn.c measures them); [pos, sent) is the part of the command at pos that the socket
     * already took (never a whole command: pos moves past every command
     * sent completely).  So after a lost connection re-sending from pos
     * repeats no command the daemon ran and sends none of them cut short.
     */
    u_char                      *start;
    u_char                      *end;
    u_char                      *pos;
    u_char                      *sent;
    u_char                      *last;

    ngx_connection_t            *connection;
    ngx_event_t                  retry;      /* reconnects while admits wait */
    time_t                       next_connect;
    ngx_uint_t                   connect_failing;
    struct rbi_reader           *replies;    /* hiredis's reader (lib/conn/
                                                resp_read.h) of this
                                                connection, with it */

    uint64_t                     drops;
    uint64_t                     errors;
    time_t                       drops_logged;
    time_t                       errors_logged;
} ngx_http_ringbloom_worker_t;


/* ngx_http_ringbloom_worker.c */
ngx_http_ringbloom_worker_t *ngx_http_ringbloom_worker_get(
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_log_t *log);
ngx_int_t ngx_http_ringbloom_worker_key(ngx_http_request_t *r,
    ngx_http_ringbloom_key_t *rk, ngx_http_ringbloom_worker_t **w,
    ngx_str_t *key);
ngx_http_ringbloom_worker_t *ngx_http_ringbloom_worker_active(void);
void ngx_http_ringbloom_worker_close(ngx_http_ringbloom_worker_t *w);

/* ngx_http_ringbloom_reader.c */
rb_segment_t *ngx_http_ringbloom_segment(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log);
ngx_http_ringbloom_filter_t *ngx_http_ringbloom_filter(
    ngx_http_ringbloom_worker_t *w, ngx_uint_t i, ngx_log_t *log);
ngx_int_t ngx_http_ringbloom_set_value(ngx_http_variable_value_t *v,
    u_char *data, size_t len);
ngx_int_t ngx_http_ringbloom_node_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
ngx_int_t ngx_http_ringbloom_seen_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
void ngx_http_ringbloom_fail(ngx_http_ringbloom_worker_t *w,
    ngx_uint_t *failing, ngx_log_t *log, const char *what, ngx_str_t *filter,
    const char *reason);
void ngx_http_ringbloom_cleared(ngx_http_ringbloom_worker_t *w,
    ngx_uint_t *failing, ngx_log_t *log, const char *what, ngx_str_t *filter);
ngx_int_t ngx_http_ringbloom_fallback(ngx_http_request_t *r,
    ngx_http_ringbloom_key_t *rk, ngx_http_variable_value_t *v,
    ngx_str_t *dflt);

/* ngx_http_ringbloom_tinylfu.c */
ngx_int_t ngx_http_ringbloom_tinylfu_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
void ngx_http_ringbloom_tinylfu_hit(ngx_http_ringbloom_pair_t *p,
    ngx_str_t *key);

/* ngx_http_ringbloom_admit_conn.c */
ngx_uint_t ngx_http_ringbloom_admit_log_due(uint64_t count, time_t *logged);
void ngx_http_ringbloom_admit_kick(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log);
void ngx_http_ringbloom_admit_exit(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log);

/* ngx_http_ringbloom_admit.c */
void ngx_http_ringbloom_admit_command(ngx_http_ringbloom_worker_t *w,
    int argc, const char **argv, const size_t *argl, ngx_log_t *log);
ngx_int_t ngx_http_ringbloom_admit_request(ngx_http_request_t *r,
    ngx_http_ringbloom_key_t *admit);
ngx_int_t ngx_http_ringbloom_admit_variables(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf);

/* ngx_http_ringbloom_upstream_conf.c */
char *ngx_http_ringbloom_upstream_directive(ngx_conf_t *cf,
    ngx_http_ringbloom_upstream_conf_t *ucf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_http_upstream_init_pt init);
ngx_int_t ngx_http_ringbloom_upstream_init(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us,
    ngx_http_ringbloom_upstream_conf_t *ucf);

/* ngx_http_ringbloom_conf.c */
ngx_int_t ngx_http_ringbloom_strz(ngx_conf_t *cf, ngx_str_t *s, u_char *data,
    size_t len);
ngx_int_t ngx_http_ringbloom_name_index(ngx_conf_t *cf, ngx_array_t *names,
    ngx_str_t *name, size_t max, const char *what);
ngx_http_ringbloom_key_t *ngx_http_ringbloom_key(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_uint_t index, ngx_str_t *key,
    ngx_str_t *fallback);
char *ngx_http_ringbloom_variable(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_uint_t index, ngx_uint_t key,
    ngx_uint_t fallback, ngx_http_get_variable_pt handler);

/* ngx_http_ringbloom_upstream.c */
ngx_int_t ngx_http_ringbloom_upstream_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us,
    ngx_http_ringbloom_upstream_conf_t *ucf);


#endif /* _NGX_HTTP_RINGBLOOM_H_INCLUDED_ */
