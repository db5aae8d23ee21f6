/*
 * ngx_http_ringbloom_module.c - nginx variables answered from a ringbloom
 * segment, and cache admission recorded through ringbloomd.
 *
 * What: "ringbloom_node $v KEY" names the ring node owning KEY and
 * "ringbloom_seen $v FILTER KEY" says whether KEY is (maybe) in FILTER; both
 * read the instance's shared segment in the worker, lock-free, with no
 * system call.  "ringbloom_admit FILTER KEY" records KEY in FILTER after
 * the response (log phase) by queueing "BF.ADD FILTER KEY" on one
 * non-blocking Unix-socket connection per worker to the daemon.
 *
 * Why: proxy_pass http://$node routes by the shared ring without a round
 * trip, and proxy_no_cache / proxy_cache_bypass driven by $seen cache an
 * object only on its second request (the first one records it).
 *
 * Workload: one lookup or one Bloom query per request and variable (a hash
 * and a few cache lines); admits are a memcpy into a buffer plus, now and
 * then, one send().  The event loop never waits for ringbloomd:
 *   - the segment is attached in init_process; if that fails (daemon not
 *     running) variables give their fallback values, the failure is logged
 *     once, and attaching is retried at most once a second on demand;
 *   - only the daemon's user's segment is attached (ringbloom_owner, else
 *     the owner of the socket's directory, which rb_daemon_uid judges
 *     first): /dev/shm is writable by all, and while the daemon is down
 *     another user could put a segment of their own under its name; the
 *     socket's directory passes the same judgement before a connect;
 *   - once attached the handle stays; the library moves it to a restarted
 *     daemon's segment (this module asks it to look once a second, since
 *     its own check runs only every 1024 lookups);
 *   - admits go to a bounded buffer (ringbloom_admit_buffer, 1m); what the
 *     socket does not take now is written when the worker's event loop
 *     reports it writable; replies are read and discarded (error replies
 *     counted and logged); a lost connection is re-opened at most once a
 *     second, by the next admit or, while admits wait, by a timer (which
 *     does not hold up a graceful shutdown); when the buffer is full the
 *     key is dropped and counted ($ringbloom_admit_drops).
 *
 * State per worker process lives in ngx_http_ringbloom_worker (nginx
 * workers are single-threaded).  It belongs to the configuration whose
 * generation it records; a worker that re-reads its configuration without
 * a new process (master_process off) rebuilds it on first use.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <ringbloom.h>
#include <resp_enc.h>


#define NGX_HTTP_RINGBLOOM_DEFAULT_BUFFER  (1024 * 1024)

/* Seconds between attempts to attach, open a filter or connect. */
#define NGX_HTTP_RINGBLOOM_RETRY           1

/* Seconds between two log lines about drops or error replies. */
#define NGX_HTTP_RINGBLOOM_LOG_EVERY       60

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


/* One ringbloom_node / ringbloom_seen variable. */
typedef struct {
    ngx_http_complex_value_t     key;
    ngx_http_complex_value_t    *fallback;   /* NULL: the kind's default */
    ngx_uint_t                   filter;     /* seen: index in filters */
} ngx_http_ringbloom_var_t;


typedef struct {
    ngx_uint_t                   filter;     /* index in filters */
    ngx_http_complex_value_t     key;
} ngx_http_ringbloom_admit_t;


typedef struct {
    ngx_http_ringbloom_admit_t  *admit;      /* NULL: off */
} ngx_http_ringbloom_loc_conf_t;


/* A worker's handle on one filter, opened on first use. */
typedef struct {
    rb_bloom_t                  *bloom;
    time_t                       next_open;
    ngx_uint_t                   failing;    /* its failure was logged */
    ngx_uint_t                   refreshes;  /* an add may refresh a key it
                                                holds: aging, or unknown */
    time_t                       checked;    /* when refreshes was set */
} ngx_http_ringbloom_filter_t;


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
     * are whole queued commands; [pos, sent) is the part of the command at
     * pos that the socket already took (never a whole command: pos moves
     * past every command sent completely).  So after a lost connection
     * re-sending from pos repeats no command the daemon ran and sends none
     * of them cut short.
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


static ngx_int_t ngx_http_ringbloom_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_ringbloom_postconfiguration(ngx_conf_t *cf);
static void *ngx_http_ringbloom_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_ringbloom_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_ringbloom_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_ringbloom_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_ringbloom_node(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_ringbloom_seen(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_ringbloom_admit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_ringbloom_owner(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_ringbloom_init_process(ngx_cycle_t *cycle);
static void ngx_http_ringbloom_exit_process(ngx_cycle_t *cycle);
static void ngx_http_ringbloom_admit_flush(ngx_http_ringbloom_worker_t *w);
static void ngx_http_ringbloom_admit_read(ngx_http_ringbloom_worker_t *w);
static void ngx_http_ringbloom_admit_kick(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log);
static void ngx_http_ringbloom_admit_retry_handler(ngx_event_t *ev);


static ngx_command_t  ngx_http_ringbloom_commands[] = {

    { ngx_string("ringbloom_instance"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_ringbloom_main_conf_t, instance),
      NULL },

    { ngx_string("ringbloom_socket"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_ringbloom_main_conf_t, socket),
      NULL },

    { ngx_string("ringbloom_owner"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_ringbloom_owner,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ringbloom_admit_buffer"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_ringbloom_main_conf_t, admit_buffer),
      NULL },

    { ngx_string("ringbloom_node"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE23,
      ngx_http_ringbloom_node,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ringbloom_seen"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE3|NGX_CONF_TAKE4,
      ngx_http_ringbloom_seen,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ringbloom_admit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_ringbloom_admit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_ringbloom_module_ctx = {
    ngx_http_ringbloom_preconfiguration,   /* preconfiguration */
    ngx_http_ringbloom_postconfiguration,  /* postconfiguration */

    ngx_http_ringbloom_create_main_conf,   /* create main configuration */
    ngx_http_ringbloom_init_main_conf,     /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_ringbloom_create_loc_conf,    /* create location configuration */
    ngx_http_ringbloom_merge_loc_conf      /* merge location configuration */
};


ngx_module_t  ngx_http_ringbloom_module = {
    NGX_MODULE_V1,
    &ngx_http_ringbloom_module_ctx,        /* module context */
    ngx_http_ringbloom_commands,           /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_http_ringbloom_init_process,       /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_ringbloom_exit_process,       /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_ringbloom_worker_t  ngx_http_ringbloom_worker;

/* Counts configurations read by this process (and inherited by workers). */
static ngx_uint_t  ngx_http_ringbloom_generation;


/* ---- configuration ------------------------------------------------------- */

static void *
ngx_http_ringbloom_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_ringbloom_main_conf_t  *rmcf;

    rmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_ringbloom_main_conf_t));
    if (rmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&rmcf->filters, cf->pool, 4, sizeof(ngx_str_t))
        != NGX_OK)
    {
        return NULL;
    }

    rmcf->admit_buffer = NGX_CONF_UNSET_SIZE;
    rmcf->owner = (ngx_uid_t) -1;
    rmcf->generation = ++ngx_http_ringbloom_generation;

    return rmcf;
}


/* A NUL-terminated copy of s in the configuration pool. */
static ngx_int_t
ngx_http_ringbloom_strz(ngx_conf_t *cf, ngx_str_t *s, u_char *data, size_t len)
{
    s->data = ngx_pnalloc(cf->pool, len + 1);
    if (s->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(s->data, data, len);
    s->data[len] = '\0';
    s->len = len;

    return NGX_OK;
}


/*
 * Fills the defaults.  The default socket comes from rb_default_paths()
 * here, in the master, so a root master names the system daemon's socket
 * (/run/ringbloom/<instance>.sock) even though workers run as another user.
 */
static char *
ngx_http_ringbloom_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_ringbloom_main_conf_t *rmcf = conf;

    int         rc;
    size_t      len;
    rb_paths_t  paths;

    if (rmcf->instance.data == NULL) {
        ngx_str_set(&rmcf->instance, "default");
    }

    if (ngx_http_ringbloom_strz(cf, &rmcf->instance, rmcf->instance.data,
                                rmcf->instance.len)
        != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    rc = rb_default_paths((char *) rmcf->instance.data, &paths);
    if (rc != RB_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid ringbloom_instance \"%V\": %s",
                           &rmcf->instance, rb_strerror(rc));
        return NGX_CONF_ERROR;
    }

    if (rmcf->socket.data == NULL) {
        len = ngx_strlen(paths.socket);
        if (ngx_http_ringbloom_strz(cf, &rmcf->socket, (u_char *) paths.socket,
                                    len)
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

    } else if (ngx_http_ringbloom_strz(cf, &rmcf->socket, rmcf->socket.data,
                                       rmcf->socket.len)
               != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (rmcf->socket.len == 0
        || rmcf->socket.len >= sizeof(((struct sockaddr_un *) 0)->sun_path))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "ringbloom_socket \"%V\" is empty or too long",
                           &rmcf->socket);
        return NGX_CONF_ERROR;
    }

    ngx_conf_init_size_value(rmcf->admit_buffer,
                             NGX_HTTP_RINGBLOOM_DEFAULT_BUFFER);

    if (rmcf->admit_buffer < 4096) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "ringbloom_admit_buffer must be at least 4k");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_ringbloom_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_ringbloom_loc_conf_t  *rlcf;

    rlcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_ringbloom_loc_conf_t));
    if (rlcf == NULL) {
        return NULL;
    }

    rlcf->admit = NGX_CONF_UNSET_PTR;

    return rlcf;
}


static char *
ngx_http_ringbloom_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_ringbloom_loc_conf_t *prev = parent;
    ngx_http_ringbloom_loc_conf_t *conf = child;

    (void) cf;

    ngx_conf_merge_ptr_value(conf->admit, prev->admit, NULL);

    return NGX_CONF_OK;
}


/* The index of filter name in rmcf->filters, added if new; or NGX_ERROR. */
static ngx_int_t
ngx_http_ringbloom_filter_index(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_str_t *name)
{
    ngx_str_t   *names;
    ngx_uint_t   i;

    if (name->len == 0 || name->len > RB_FILTER_NAME_MAX) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid ringbloom filter name \"%V\"", name);
        return NGX_ERROR;
    }

    names = rmcf->filters.elts;

    for (i = 0; i < rmcf->filters.nelts; i++) {
        if (names[i].len == name->len
            && ngx_memcmp(names[i].data, name->data, name->len) == 0)
        {
            return (ngx_int_t) i;
        }
    }

    names = ngx_array_push(&rmcf->filters);
    if (names == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_ringbloom_strz(cf, names, name->data, name->len) != NGX_OK) {
        return NGX_ERROR;
    }

    return (ngx_int_t) (rmcf->filters.nelts - 1);
}


static ngx_int_t
ngx_http_ringbloom_compile(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_complex_value_t *cv)
{
    ngx_http_compile_complex_value_t  ccv;

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = value;
    ccv.complex_value = cv;

    return ngx_http_compile_complex_value(&ccv);
}


static ngx_int_t ngx_http_ringbloom_node_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_ringbloom_seen_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


/*
 * Defines variable args[1] answered by handler from key args[key] and the
 * optional fallback args[key + 1].
 */
static char *
ngx_http_ringbloom_add_variable(ngx_conf_t *cf, ngx_str_t *args,
    ngx_uint_t key, ngx_http_get_variable_pt handler,
    ngx_http_ringbloom_var_t **out)
{
    ngx_str_t                  name;
    ngx_http_variable_t       *var;
    ngx_http_ringbloom_var_t  *rv;

    name = args[1];

    if (name.len < 2 || name.data[0] != '$') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid variable name \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    name.len--;
    name.data++;

    rv = ngx_pcalloc(cf->pool, sizeof(ngx_http_ringbloom_var_t));
    if (rv == NULL) {
        return NGX_CONF_ERROR;
    }

    if (ngx_http_ringbloom_compile(cf, &args[key], &rv->key) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (cf->args->nelts > key + 1) {
        rv->fallback = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
        if (rv->fallback == NULL) {
            return NGX_CONF_ERROR;
        }

        if (ngx_http_ringbloom_compile(cf, &args[key + 1], rv->fallback)
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    var = ngx_http_add_variable(cf, &name, 0);
    if (var == NULL) {
        return NGX_CONF_ERROR;
    }

    var->get_handler = handler;
    var->data = (uintptr_t) rv;

    *out = rv;

    return NGX_CONF_OK;
}


/* ringbloom_node $var KEY [FALLBACK] */
static char *
ngx_http_ringbloom_node(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_ringbloom_main_conf_t *rmcf = conf;

    char                      *rv;
    ngx_http_ringbloom_var_t  *var;

    (void) cmd;

    rv = ngx_http_ringbloom_add_variable(cf, cf->args->elts, 2,
                                         ngx_http_ringbloom_node_variable,
                                         &var);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    rmcf->used = 1;

    return NGX_CONF_OK;
}


/* ringbloom_seen $var FILTER KEY [FALLBACK] */
static char *
ngx_http_ringbloom_seen(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_ringbloom_main_conf_t *rmcf = conf;

    char                      *rv;
    ngx_str_t                 *value;
    ngx_int_t                  filter;
    ngx_http_ringbloom_var_t  *var;

    (void) cmd;

    value = cf->args->elts;

    filter = ngx_http_ringbloom_filter_index(cf, rmcf, &value[2]);
    if (filter == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    rv = ngx_http_ringbloom_add_variable(cf, value, 3,
                                         ngx_http_ringbloom_seen_variable,
                                         &var);
    if (rv != NGX_CONF_OK) {
        return rv;
    }

    var->filter = (ngx_uint_t) filter;
    rmcf->used = 1;

    return NGX_CONF_OK;
}


/* ringbloom_admit FILTER KEY | off */
static char *
ngx_http_ringbloom_admit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_ringbloom_loc_conf_t *rlcf = conf;

    ngx_str_t                       *value;
    ngx_int_t                        filter;
    ngx_http_ringbloom_admit_t      *admit;
    ngx_http_ringbloom_main_conf_t  *rmcf;

    (void) cmd;

    if (rlcf->admit != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2) {
        if (ngx_strcmp(value[1].data, "off") != 0) {
            return "takes FILTER KEY, or off";
        }

        rlcf->admit = NULL;
        return NGX_CONF_OK;
    }

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_ringbloom_module);

    filter = ngx_http_ringbloom_filter_index(cf, rmcf, &value[1]);
    if (filter == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    admit = ngx_pcalloc(cf->pool, sizeof(ngx_http_ringbloom_admit_t));
    if (admit == NULL) {
        return NGX_CONF_ERROR;
    }

    admit->filter = (ngx_uint_t) filter;

    if (ngx_http_ringbloom_compile(cf, &value[2], &admit->key) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    rlcf->admit = admit;
    rmcf->used = 1;
    rmcf->admit_used = 1;

    return NGX_CONF_OK;
}


/* ringbloom_owner USER | UID */
static char *
ngx_http_ringbloom_owner(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_ringbloom_main_conf_t *rmcf = conf;

    ngx_int_t       uid;
    ngx_str_t      *value;
    struct passwd  *pw;

    (void) cmd;

    if (rmcf->owner != (ngx_uid_t) -1) {
        return "is duplicate";
    }

    value = cf->args->elts;

    pw = getpwnam((char *) value[1].data);
    if (pw != NULL) {
        rmcf->owner = pw->pw_uid;
        return NGX_CONF_OK;
    }

    uid = ngx_atoi(value[1].data, value[1].len);
    if (uid == NGX_ERROR || (ngx_uid_t) uid == (ngx_uid_t) -1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "ringbloom_owner: no user \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    rmcf->owner = (ngx_uid_t) uid;

    return NGX_CONF_OK;
}


/* ---- the worker's state -------------------------------------------------- */

static void
ngx_http_ringbloom_worker_close(ngx_http_ringbloom_worker_t *w)
{
    ngx_uint_t  i;

    if (w->retry.timer_set) {
        ngx_del_timer(&w->retry);
    }

    if (w->connection != NULL) {
        ngx_close_connection(w->connection);
        w->connection = NULL;
    }

    if (w->start != NULL) {
        ngx_free(w->start);
    }

    if (w->filters != NULL) {
        /* Filter handles must be closed before their segment. */
        for (i = 0; i < w->nfilters; i++) {
            rb_bloom_close(w->filters[i].bloom);
        }

        ngx_free(w->filters);
    }

    rb_segment_close(w->segment);

    ngx_memzero(w, sizeof(ngx_http_ringbloom_worker_t));
}


/*
 * Sets w up for rmcf: filter table and admit buffer, nothing attached yet.
 * On failure w stays unset (generation 0) and is tried again on next use.
 */
static ngx_int_t
ngx_http_ringbloom_worker_init(ngx_http_ringbloom_worker_t *w,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_log_t *log)
{
    if (w->generation != 0) {
        ngx_http_ringbloom_worker_close(w);
    }

    w->conf = rmcf;

    if (rmcf->filters.nelts > 0) {
        w->filters = ngx_calloc(rmcf->filters.nelts
                                * sizeof(ngx_http_ringbloom_filter_t), log);
        if (w->filters == NULL) {
            goto failed;
        }

        w->nfilters = rmcf->filters.nelts;
    }

    if (rmcf->admit_used) {
        w->start = ngx_alloc(rmcf->admit_buffer, log);
        if (w->start == NULL) {
            goto failed;
        }

        w->end = w->start + rmcf->admit_buffer;
        w->pos = w->start;
        w->sent = w->start;
        w->last = w->start;
        w->reply_line_start = 1;

        w->retry.handler = ngx_http_ringbloom_admit_retry_handler;
        w->retry.data = w;
        w->retry.log = ngx_cycle->log;
        w->retry.cancelable = 1;
    }

    w->generation = rmcf->generation;

    return NGX_OK;

failed:

    ngx_http_ringbloom_worker_close(w);
    return NGX_ERROR;
}


/* The worker's state for the request's configuration, or NULL. */
static ngx_http_ringbloom_worker_t *
ngx_http_ringbloom_worker_get(ngx_http_request_t *r)
{
    ngx_http_ringbloom_worker_t     *w;
    ngx_http_ringbloom_main_conf_t  *rmcf;

    w = &ngx_http_ringbloom_worker;
    rmcf = ngx_http_get_module_main_conf(r, ngx_http_ringbloom_module);

    if (w->generation != rmcf->generation
        && ngx_http_ringbloom_worker_init(w, rmcf, r->connection->log)
           != NGX_OK)
    {
        return NULL;
    }

    return w;
}


/*
 * Logs why variables give their fallback values: once per condition
 * (*failing: attach, ring, or one filter) until it clears, so an outage
 * costs a worker one line, not one per request.  filter may be NULL.
 */
static void
ngx_http_ringbloom_fail(ngx_http_ringbloom_worker_t *w, ngx_uint_t *failing,
    ngx_log_t *log, const char *what, ngx_str_t *filter, const char *reason)
{
    if (*failing) {
        return;
    }

    *failing = 1;

    if (filter == NULL) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "ringbloom: %s on instance \"%V\": %s; fallback "
                      "values until it works (logged once)",
                      what, &w->conf->instance, reason);
        return;
    }

    ngx_log_error(NGX_LOG_WARN, log, 0,
                  "ringbloom: %s \"%V\" on instance \"%V\": %s; fallback "
                  "values until it works (logged once)",
                  what, filter, &w->conf->instance, reason);
}


/* Clears a condition ngx_http_ringbloom_fail() logged, and says so. */
static void
ngx_http_ringbloom_cleared(ngx_http_ringbloom_worker_t *w,
    ngx_uint_t *failing, ngx_log_t *log, const char *what, ngx_str_t *filter)
{
    if (!*failing) {
        return;
    }

    *failing = 0;

    if (filter == NULL) {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "ringbloom: %s on instance \"%V\" works again",
                      what, &w->conf->instance);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "ringbloom: %s \"%V\" on instance \"%V\" works again",
                  what, filter, &w->conf->instance);
}


/*
 * The attached segment, or NULL (then at most one attach attempt a
 * second).  Asks the library once a second whether the daemon restarted
 * onto a new segment, so a quiet worker follows it too.  Attaches only a
 * segment of the daemon's user: ringbloom_owner, else the owner of the
 * socket's directory once rb_daemon_uid found it trustworthy (a daemon
 * listens only in a directory of its own user or root).
 */
static rb_segment_t *
ngx_http_ringbloom_segment(ngx_http_ringbloom_worker_t *w, ngx_log_t *log)
{
    int           rc;
    char          why[512];
    u_char        reason[600], *end;
    uid_t         owner;
    time_t        now;
    ngx_uint_t    level;
    rb_segment_t *segment;

    now = ngx_time();

    if (w->segment != NULL) {
        if (now != w->last_refresh) {
            w->last_refresh = now;

            if (rb_segment_refresh(w->segment) == 1) {
                ngx_log_error(NGX_LOG_INFO, log, 0,
                              "ringbloom: followed instance \"%V\" to its "
                              "new segment", &w->conf->instance);
            }
        }

        return w->segment;
    }

    if (now < w->next_attach) {
        return NULL;
    }

    w->next_attach = now + NGX_HTTP_RINGBLOOM_RETRY;

    owner = w->conf->owner;

    if (owner == (uid_t) -1) {
        rc = rb_daemon_uid(NULL, (char *) w->conf->socket.data, (uid_t) -1,
                           &owner, why, sizeof(why));
        if (rc != RB_OK) {
            end = ngx_snprintf(reason, sizeof(reason) - 1,
                               "the daemon's user is unknown (%s; "
                               "ringbloom_owner names it)", why);
            *end = '\0';
            ngx_http_ringbloom_fail(w, &w->attach_failing, log,
                                    "cannot attach", NULL, (char *) reason);
            return NULL;
        }
    }

    /* STALE_OK: a daemon that died leaves its last table to serve. */
    rc = rb_segment_attach_owned((char *) w->conf->instance.data,
                                 RB_ATTACH_STALE_OK, owner, &segment);
    if (rc != RB_OK) {
        end = ngx_snprintf(reason, sizeof(reason) - 1,
                           "%s (the daemon's user is uid %uD)",
                           rb_strerror(rc), (uint32_t) owner);
        *end = '\0';
        ngx_http_ringbloom_fail(w, &w->attach_failing, log, "cannot attach",
                                NULL, (char *) reason);
        return NULL;
    }

    level = w->attach_failing ? NGX_LOG_NOTICE : NGX_LOG_INFO;

    ngx_log_error(level, log, 0,
                  "ringbloom: attached instance \"%V\"", &w->conf->instance);

    w->attach_failing = 0;

    w->segment = segment;
    w->last_refresh = now;

    return segment;
}


/* The open handle of filter i, or NULL (then retried once a second). */
static rb_bloom_t *
ngx_http_ringbloom_filter(ngx_http_ringbloom_worker_t *w, ngx_uint_t i,
    ngx_log_t *log)
{
    int                           rc;
    time_t                        now;
    ngx_str_t                    *name;
    rb_segment_t                 *segment;
    ngx_http_ringbloom_filter_t  *f;

    /* First, so the once-a-second refresh runs for filter-only use too. */
    segment = ngx_http_ringbloom_segment(w, log);
    if (segment == NULL) {
        return NULL;
    }

    f = &w->filters[i];

    if (f->bloom != NULL) {
        return f->bloom;
    }

    now = ngx_time();

    if (now < f->next_open) {
        return NULL;
    }

    f->next_open = now + NGX_HTTP_RINGBLOOM_RETRY;

    name = &((ngx_str_t *) w->conf->filters.elts)[i];

    rc = rb_bloom_open(segment, (char *) name->data, name->len, &f->bloom);
    if (rc != RB_OK) {
        f->bloom = NULL;
        ngx_http_ringbloom_fail(w, &f->failing, log, "cannot open filter",
                                name, rb_strerror(rc));
        return NULL;
    }

    return f->bloom;
}


/* ---- variables ----------------------------------------------------------- */

static ngx_int_t
ngx_http_ringbloom_set_value(ngx_http_variable_value_t *v, u_char *data,
    size_t len)
{
    v->data = data;
    v->len = len;
    v->valid = 1;
    v->no_cacheable = 0;
    v->not_found = 0;

    return NGX_OK;
}


/* The variable's fallback, or dflt if it has none (NULL: not found). */
static ngx_int_t
ngx_http_ringbloom_fallback(ngx_http_request_t *r,
    ngx_http_ringbloom_var_t *rv, ngx_http_variable_value_t *v,
    ngx_str_t *dflt)
{
    ngx_str_t  value;

    if (rv->fallback != NULL) {
        if (ngx_http_complex_value(r, rv->fallback, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        return ngx_http_ringbloom_set_value(v, value.data, value.len);
    }

    if (dflt != NULL) {
        return ngx_http_ringbloom_set_value(v, dflt->data, dflt->len);
    }

    v->not_found = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_ringbloom_node_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_ringbloom_var_t *rv = (ngx_http_ringbloom_var_t *) data;

    int                           rc;
    u_char                       *p;
    rb_node_t                     node;
    ngx_str_t                     key;
    rb_segment_t                 *segment;
    ngx_http_ringbloom_worker_t  *w;

    w = ngx_http_ringbloom_worker_get(r);
    if (w == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_complex_value(r, &rv->key, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    segment = ngx_http_ringbloom_segment(w, r->connection->log);
    if (segment == NULL) {
        return ngx_http_ringbloom_fallback(r, rv, v, NULL);
    }

    rc = rb_ring_lookup(segment, key.len ? (char *) key.data : "", key.len,
                        &node);
    if (rc != RB_OK) {
        ngx_http_ringbloom_fail(w, &w->ring_failing, r->connection->log,
                                "ring lookup failed", NULL, rb_strerror(rc));
        return ngx_http_ringbloom_fallback(r, rv, v, NULL);
    }

    ngx_http_ringbloom_cleared(w, &w->ring_failing, r->connection->log,
                               "the ring", NULL);

    p = ngx_pnalloc(r->pool, node.name_len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, node.name, node.name_len);

    return ngx_http_ringbloom_set_value(v, p, node.name_len);
}


static ngx_str_t  ngx_http_ringbloom_one = ngx_string("1");
static ngx_str_t  ngx_http_ringbloom_zero = ngx_string("0");


static ngx_int_t
ngx_http_ringbloom_seen_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_ringbloom_var_t *rv = (ngx_http_ringbloom_var_t *) data;

    int                           rc;
    ngx_str_t                     key, *answer, *name;
    rb_bloom_t                   *bloom;
    ngx_http_ringbloom_filter_t  *f;
    ngx_http_ringbloom_worker_t  *w;

    w = ngx_http_ringbloom_worker_get(r);
    if (w == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_complex_value(r, &rv->key, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    bloom = ngx_http_ringbloom_filter(w, rv->filter, r->connection->log);
    if (bloom == NULL) {
        return ngx_http_ringbloom_fallback(r, rv, v, &ngx_http_ringbloom_zero);
    }

    f = &w->filters[rv->filter];
    name = &((ngx_str_t *) w->conf->filters.elts)[rv->filter];

    rc = rb_bloom_contains(bloom, key.len ? (char *) key.data : "", key.len);
    if (rc < 0) {
        ngx_http_ringbloom_fail(w, &f->failing, r->connection->log,
                                "query failed in filter", name, rb_strerror(rc));
        return ngx_http_ringbloom_fallback(r, rv, v, &ngx_http_ringbloom_zero);
    }

    ngx_http_ringbloom_cleared(w, &f->failing, r->connection->log,
                               "filter", name);

    answer = rc ? &ngx_http_ringbloom_one : &ngx_http_ringbloom_zero;

    return ngx_http_ringbloom_set_value(v, answer->data, answer->len);
}


/* $ringbloom_admit_drops, $ringbloom_admit_errors: this worker's counts. */
static ngx_int_t
ngx_http_ringbloom_count_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                       *p;
    ngx_http_ringbloom_worker_t  *w;

    w = ngx_http_ringbloom_worker_get(r);
    if (w == NULL) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    v->len = ngx_sprintf(p, "%uL", data ? w->errors : w->drops) - p;
    v->data = p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


static ngx_http_variable_t  ngx_http_ringbloom_vars[] = {

    { ngx_string("ringbloom_admit_drops"), NULL,
      ngx_http_ringbloom_count_variable, 0, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("ringbloom_admit_errors"), NULL,
      ngx_http_ringbloom_count_variable, 1, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_ringbloom_preconfiguration(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_ringbloom_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


/* ---- admit: the non-blocking connection to the daemon -------------------- */

/* With admits waiting and no connection, try again in a second. */
static void
ngx_http_ringbloom_admit_arm(ngx_http_ringbloom_worker_t *w)
{
    if (w->connection == NULL && w->pos != w->last && !w->retry.timer_set) {
        ngx_add_timer(&w->retry, NGX_HTTP_RINGBLOOM_RETRY * 1000);
    }
}


static void
ngx_http_ringbloom_admit_disconnect(ngx_http_ringbloom_worker_t *w)
{
    ngx_close_connection(w->connection);
    w->connection = NULL;

    /* The daemon dropped the command cut short: send it whole next time. */
    w->sent = w->pos;
    w->reply_line_start = 1;
    w->reply_error = 0;
    w->next_connect = ngx_time() + NGX_HTTP_RINGBLOOM_RETRY;

    ngx_http_ringbloom_admit_arm(w);
}


static void
ngx_http_ringbloom_admit_retry_handler(ngx_event_t *ev)
{
    ngx_http_ringbloom_admit_kick(ev->data, ev->log);
}


static void
ngx_http_ringbloom_admit_write_handler(ngx_event_t *wev)
{
    ngx_connection_t  *c = wev->data;

    ngx_http_ringbloom_admit_flush(c->data);
}


static void
ngx_http_ringbloom_admit_read_handler(ngx_event_t *rev)
{
    ngx_connection_t  *c = rev->data;

    ngx_http_ringbloom_admit_read(c->data);
}


/* Opens the connection if there is none and a try is due.  Never waits. */
static void
ngx_http_ringbloom_admit_connect(ngx_http_ringbloom_worker_t *w,
    ngx_log_t *log)
{
    int                  fd, rc;
    char                 why[512];
    time_t               now;
    ngx_err_t            err;
    ngx_connection_t    *c;
    struct sockaddr_un   sa;

    now = ngx_time();

    if (w->connection != NULL || now < w->next_connect) {
        return;
    }

    w->next_connect = now + NGX_HTTP_RINGBLOOM_RETRY;

    /* Keys go only to a socket in a directory another user cannot have
     * made or replaced (a missing one is a daemon not running: connect
     * says so below). */
    rc = rb_daemon_uid(NULL, (char *) w->conf->socket.data, w->conf->owner,
                       NULL, why, sizeof(why));
    if (rc != RB_OK && rc != RB_ENOENT) {
        if (!w->connect_failing) {
            w->connect_failing = 1;
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "ringbloom: not using \"%V\": %s; admits wait in "
                          "the buffer (logged once)", &w->conf->socket, why);
        }

        return;
    }

    ngx_memzero(&sa, sizeof(struct sockaddr_un));
    sa.sun_family = AF_UNIX;
    ngx_memcpy(sa.sun_path, w->conf->socket.data, w->conf->socket.len);

    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_ALERT, log, ngx_socket_errno,
                      "ringbloom: socket() failed");
        return;
    }

    /*
     * A Unix-socket connect completes at once or fails at once (EAGAIN:
     * the daemon's backlog is full); either way no wait.
     */
    if (connect(fd, (struct sockaddr *) &sa, sizeof(struct sockaddr_un))
        == -1)
    {
        err = ngx_socket_errno;

        if (!w->connect_failing) {
            w->connect_failing = 1;
            ngx_log_error(NGX_LOG_WARN, log, err,
                          "ringbloom: cannot connect to \"%V\"; admits wait "
                          "in the buffer, retrying at most once a second "
                          "(logged once)", &w->conf->socket);
        }

        goto failed;
    }

    c = ngx_get_connection(fd, ngx_cycle->log);
    if (c == NULL) {
        goto failed;
    }

    c->data = w;
    c->read->handler = ngx_http_ringbloom_admit_read_handler;
    c->write->handler = ngx_http_ringbloom_admit_write_handler;
    c->read->log = c->log;
    c->write->log = c->log;

    /* A fresh Unix-socket connection has room; flush writes until EAGAIN. */
    c->write->ready = 1;

    w->connection = c;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_http_ringbloom_admit_disconnect(w);
        return;
    }

    if (w->connect_failing) {
        w->connect_failing = 0;
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "ringbloom: connected to \"%V\"", &w->conf->socket);
    }

    return;

failed:

    if (close(fd) == -1) {
        ngx_log_error(NGX_LOG_ALERT, log, ngx_socket_errno,
                      "ringbloom: close() failed");
    }
}


/* Length of the queued command at p (one that admit_enqueue wrote). */
static size_t
ngx_http_ringbloom_command_len(u_char *p, u_char *last)
{
    size_t   len;
    u_char  *q;
    int      i;

    q = p + sizeof("*3\r\n") - 1;

    for (i = 0; i < 3 && q < last; i++) {
        len = 0;

        /* q is at "$<digits>\r\n" */
        for (q++; q < last && *q >= '0' && *q <= '9'; q++) {
            len = len * 10 + (size_t) (*q - '0');
        }

        q += 2 + len + 2;
    }

    return (size_t) (q - p);
}


/* Writes what the socket takes now; never waits. */
static void
ngx_http_ringbloom_admit_flush(ngx_http_ringbloom_worker_t *w)
{
    size_t             len;
    ssize_t            n;
    ngx_err_t          err;
    ngx_connection_t  *c;

    c = w->connection;

    while (c != NULL && w->sent < w->last) {
        n = send(c->fd, w->sent, (size_t) (w->last - w->sent), MSG_NOSIGNAL);

        if (n == -1) {
            err = ngx_socket_errno;

            if (err == NGX_EINTR) {
                continue;
            }

            if (err == NGX_EAGAIN) {
                c->write->ready = 0;

                if (ngx_handle_write_event(c->write, 0) != NGX_OK) {
                    ngx_http_ringbloom_admit_disconnect(w);
                }

                break;
            }

            ngx_log_error(NGX_LOG_WARN, c->log, err,
                          "ringbloom: send() to \"%V\" failed; reconnecting",
                          &w->conf->socket);
            ngx_http_ringbloom_admit_disconnect(w);
            break;
        }

        w->sent += n;

        /* Keep pos on the first command the socket has not taken whole. */
        while (w->pos < w->sent) {
            len = ngx_http_ringbloom_command_len(w->pos, w->last);

            if (w->pos + len > w->sent) {
                break;
            }

            w->pos += len;
        }
    }

    if (w->pos == w->last) {
        w->pos = w->start;
        w->sent = w->start;
        w->last = w->start;
    }
}


/*
 * Reads and discards replies until EAGAIN.  Replies to BF.ADD are single
 * lines: ":0" / ":1", or "-ERR ..." which are counted, the first and then
 * one a minute logged.
 */
static void
ngx_http_ringbloom_admit_read(ngx_http_ringbloom_worker_t *w)
{
    u_char             buf[4096], *p, *last;
    time_t             now;
    ssize_t            n;
    ngx_err_t          err;
    ngx_connection_t  *c;

    c = w->connection;

    for ( ;; ) {
        n = recv(c->fd, buf, sizeof(buf), 0);

        if (n == 0) {
            ngx_log_error(NGX_LOG_WARN, c->log, 0,
                          "ringbloom: \"%V\" closed the connection; "
                          "reconnecting", &w->conf->socket);
            ngx_http_ringbloom_admit_disconnect(w);
            return;
        }

        if (n == -1) {
            err = ngx_socket_errno;

            if (err == NGX_EINTR) {
                continue;
            }

            if (err == NGX_EAGAIN) {
                c->read->ready = 0;

                if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
                    ngx_http_ringbloom_admit_disconnect(w);
                }

                return;
            }

            ngx_log_error(NGX_LOG_WARN, c->log, err,
                          "ringbloom: recv() from \"%V\" failed; "
                          "reconnecting", &w->conf->socket);
            ngx_http_ringbloom_admit_disconnect(w);
            return;
        }

        last = buf + n;

        for (p = buf; p < last; p++) {
            if (w->reply_line_start) {
                w->reply_line_start = 0;
                w->reply_error = (*p == '-');

                if (w->reply_error) {
                    w->errors++;
                    w->error_len = 0;
                }
            }

            if (*p == '\n') {
                w->reply_line_start = 1;

                if (!w->reply_error) {
                    continue;
                }

                now = ngx_time();

                if (w->errors == 1
                    || now - w->errors_logged >= NGX_HTTP_RINGBLOOM_LOG_EVERY)
                {
                    w->errors_logged = now;
                    ngx_log_error(NGX_LOG_WARN, c->log, 0,
                                  "ringbloom: the daemon refused an admit: "
                                  "\"%*s\" (%uL refused so far)",
                                  w->error_len, w->error_text, w->errors);
                }

                continue;
            }

            if (w->reply_error && *p != '\r'
                && w->error_len < sizeof(w->error_text))
            {
                w->error_text[w->error_len++] = *p;
            }
        }
    }
}


/*
 * Whether an add of a key filter f already holds may still change it (an
 * aging filter's refresh); looked up at most once a second, since a filter
 * may be re-created with other flags.  Unknown counts as yes.
 */
static ngx_uint_t
ngx_http_ringbloom_refreshes(ngx_http_ringbloom_filter_t *f)
{
    time_t           now;
    rb_bloom_stat_t  st;

    now = ngx_time();

    if (f->checked != now) {
        f->checked = now;
        f->refreshes = rb_bloom_info(f->bloom, &st) != RB_OK
                       || (st.flags & RB_BLOOM_AGING);
    }

    return f->refreshes;
}


/*
 * Moves queued admits toward the daemon without waiting: connects if a try
 * is due, writes what the socket takes, and arms the retry timer if admits
 * are left with no connection.
 */
static void
ngx_http_ringbloom_admit_kick(ngx_http_ringbloom_worker_t *w, ngx_log_t *log)
{
    ngx_http_ringbloom_admit_connect(w, log);

    if (w->connection != NULL && w->connection->write->ready) {
        ngx_http_ringbloom_admit_flush(w);
    }

    ngx_http_ringbloom_admit_arm(w);
}


/* Queues "BF.ADD filter key"; drops (and counts) it if there is no room. */
static void
ngx_http_ringbloom_admit_enqueue(ngx_http_ringbloom_worker_t *w,
    ngx_str_t *filter, ngx_str_t *key, ngx_log_t *log)
{
    size_t       need, live, done;
    time_t       now;
    const char  *argv[3];
    size_t       argl[3];

    /* Encoded by the project's one RESP encoder (lib/resp_enc.h). */
    argv[0] = "BF.ADD";
    argl[0] = sizeof("BF.ADD") - 1;
    argv[1] = (const char *) filter->data;
    argl[1] = filter->len;
    argv[2] = (const char *) key->data;
    argl[2] = key->len;
    need = rbi_resp_command_size(3, argl);

    if ((size_t) (w->end - w->last) < need) {
        live = (size_t) (w->last - w->pos);
        done = (size_t) (w->pos - w->start);

        /*
         * Compact only when that frees the room and moves no more bytes
         * than were sent since the last compaction, so copying costs at
         * most one byte per byte sent.
         */
        if (done >= live && done + (size_t) (w->end - w->last) >= need) {
            ngx_memmove(w->start, w->pos, live);
            w->sent = w->start + (w->sent - w->pos);
            w->pos = w->start;
            w->last = w->start + live;

        } else {
            w->drops++;
            now = ngx_time();

            if (w->drops == 1
                || now - w->drops_logged >= NGX_HTTP_RINGBLOOM_LOG_EVERY)
            {
                w->drops_logged = now;
                ngx_log_error(NGX_LOG_WARN, log, 0,
                              "ringbloom: admit buffer full (%uz bytes "
                              "waiting for \"%V\"), key dropped (%uL dropped "
                              "so far)", live, &w->conf->socket, w->drops);
            }

            return;
        }
    }

    w->last = (u_char *) rbi_resp_command_put((char *) w->last, 3, argv, argl);
}


/*
 * Log phase: records the key after the response, so $seen computed for
 * this request never depends on its own admit.  A key the filter already
 * (maybe) holds is not sent, unless the filter is an aging one: there an
 * add copies a key held only by an older generation into the current one,
 * which keeps a requested key seen.
 */
static ngx_int_t
ngx_http_ringbloom_admit_handler(ngx_http_request_t *r)
{
    ngx_str_t                       key, *filter;
    rb_bloom_t                     *bloom;
    ngx_http_ringbloom_worker_t    *w;
    ngx_http_ringbloom_admit_t     *admit;
    ngx_http_ringbloom_loc_conf_t  *rlcf;

    rlcf = ngx_http_get_module_loc_conf(r, ngx_http_ringbloom_module);
    admit = rlcf->admit;

    if (admit == NULL) {
        return NGX_DECLINED;
    }

    w = ngx_http_ringbloom_worker_get(r);
    if (w == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_complex_value(r, &admit->key, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    if (key.len == 0) {
        /* The daemon refuses empty keys. */
        return NGX_OK;
    }

    bloom = ngx_http_ringbloom_filter(w, admit->filter, r->connection->log);

    if (bloom != NULL
        && !ngx_http_ringbloom_refreshes(&w->filters[admit->filter])
        && rb_bloom_contains(bloom, key.data, key.len) == 1)
    {
        return NGX_OK;
    }

    filter = &((ngx_str_t *) w->conf->filters.elts)[admit->filter];

    ngx_http_ringbloom_admit_enqueue(w, filter, &key, r->connection->log);
    ngx_http_ringbloom_admit_kick(w, r->connection->log);

    return NGX_OK;
}


static ngx_int_t
ngx_http_ringbloom_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_handler_pt             *h;
    ngx_http_core_main_conf_t       *cmcf;
    ngx_http_ringbloom_main_conf_t  *rmcf;

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_ringbloom_module);

    if (!rmcf->admit_used) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_ringbloom_admit_handler;

    return NGX_OK;
}


/* ---- process hooks ------------------------------------------------------- */

/* Attaches at once, so the first requests need not (failure: retried). */
static ngx_int_t
ngx_http_ringbloom_init_process(ngx_cycle_t *cycle)
{
    ngx_http_ringbloom_worker_t     *w;
    ngx_http_ringbloom_main_conf_t  *rmcf;

    /* Cache manager and loader serve no requests. */
    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    rmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_ringbloom_module);

    if (rmcf == NULL || !rmcf->used) {
        return NGX_OK;
    }

    w = &ngx_http_ringbloom_worker;

    if (ngx_http_ringbloom_worker_init(w, rmcf, cycle->log) != NGX_OK) {
        return NGX_OK;
    }

    (void) ngx_http_ringbloom_segment(w, cycle->log);

    return NGX_OK;
}


/* Hands the daemon what the socket takes now, then releases everything. */
static void
ngx_http_ringbloom_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_ringbloom_worker_t  *w;

    w = &ngx_http_ringbloom_worker;

    if (w->generation == 0) {
        return;
    }

    if (w->connection != NULL && w->connection->write->ready) {
        ngx_http_ringbloom_admit_flush(w);
    }

    if (w->pos != w->last) {
        ngx_log_error(NGX_LOG_INFO, cycle->log, 0,
                      "ringbloom: %uz bytes of admits not sent at exit",
                      (size_t) (w->last - w->pos));
    }

    ngx_http_ringbloom_worker_close(w);
}
