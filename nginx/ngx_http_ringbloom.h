/*
 * ngx_http_ringbloom.h - what the files of ngx_http_ringbloom_module share:
 * the configuration the directives build, the worker's state, and the
 * functions each file offers the files above it.
 *
 * The files, each calling only the ones below it:
 *
 *   ngx_http_ringbloom_module.c      directives, configuration, hooks;
 *                                    the only file naming the ngx_module_t
 *   ngx_http_ringbloom_admit.c       ringbloom_admit: what is queued, drops,
 *                                    $ringbloom_admit_drops / _errors
 *   ngx_http_ringbloom_admit_conn.c  the connection to the daemon: connect,
 *                                    write, read replies, reconnect
 *   ngx_http_ringbloom_reader.c      the segment and its filters in the
 *                                    worker; ringbloom_node / _seen's $var
 *   ngx_http_ringbloom_worker.c      the worker's state: set up, released
 *
 * Handlers below the module file find their configuration in what nginx
 * hands them (a variable's data, the admit of the request's location), so
 * they never look the module up.
 */

#ifndef _NGX_HTTP_RINGBLOOM_H_INCLUDED_
#define _NGX_HTTP_RINGBLOOM_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <ringbloom.h>


/* Seconds between attempts to attach, open a filter or connect. */
#define NGX_HTTP_RINGBLOOM_RETRY  1


typedef struct {
    ngx_str_t                    instance;   /* NUL-terminated */
    ngx_str_t                    socket;     /* NUL-terminated */
    ngx_uid_t                    owner;      /* the daemon's user; (uid_t) -1:
                                                the socket directory's owner */
    size_t                       admit_buffer;
    ngx_array_t                  filters;    /* ngx_str_t, NUL-terminated */
    ngx_uint_t                   generation;
    ngx_flag_t                   used;       /* a variable or admit exists */
    ngx_flag_t                   admit_used;
} ngx_http_ringbloom_main_conf_t;


/*
 * What one ringbloom_node, ringbloom_seen or ringbloom_admit names: a KEY,
 * with the FILTER of seen and admit and the FALLBACK of node and seen.  The
 * data of a variable's get_handler; a location's admit.
 */
typedef struct {
    ngx_http_ringbloom_main_conf_t *conf;
    ngx_http_complex_value_t     key;
    ngx_http_complex_value_t    *fallback;   /* NULL: the kind's default */
    ngx_uint_t                   filter;     /* index in conf->filters */
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
    ngx_uint_t                   attach_failing; /* logged, not attached */
    ngx_uint_t                   ring_failing;   /* logged, not answering */

    /*
     * The admit buffer: start <= pos <= sent <= last <= end.  [pos, last)
     * are whole queued commands, each a RESP array of three bulk strings
     * (BF.ADD FILTER KEY: admit.c writes them, admit_conn.c measures
     * them); [pos, sent) is the part of the command at pos that the socket
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
    ngx_uint_t                   reply_line_start; /* next byte opens one */
    ngx_uint_t                   reply_error;      /* in an error reply */
    u_char                       error_text[128];
    size_t                       error_len;

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

/* ngx_http_ringbloom_admit_conn.c */
ngx_uint_t ngx_http_ringbloom_admit_log_due(uint64_t count, time_t *logged);
void ngx_http_ringbloom_admit_kick(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log);
void ngx_http_ringbloom_admit_exit(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log);

/* ngx_http_ringbloom_admit.c */
ngx_int_t ngx_http_ringbloom_admit_request(ngx_http_request_t *r,
    ngx_http_ringbloom_key_t *admit);
ngx_int_t ngx_http_ringbloom_admit_variables(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf);


#endif /* _NGX_HTTP_RINGBLOOM_H_INCLUDED_ */
