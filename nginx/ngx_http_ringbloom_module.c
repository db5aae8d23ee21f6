/*
 * ngx_http_ringbloom_module.c - nginx variables answered from a ringbloom
 * segment, and cache admission recorded through ringbloomd: the module
 * itself, its directives, its configuration, its fixed variables and its
 * hooks into nginx (log phase, worker start and exit).
 *
 * What: "ringbloom_node $v KEY" names the ring node owning KEY and
 * "ringbloom_seen $v FILTER KEY" says whether KEY is (maybe) in FILTER; both
 * read the instance's shared segment in the worker, lock-free, with no
 * system call (ngx_http_ringbloom_reader.c).  "ringbloom_admit FILTER KEY"
 * records KEY in FILTER after the response (log phase) by queueing
 * "BF.ADD FILTER KEY" on one non-blocking Unix-socket connection per
 * worker to the daemon (ngx_http_ringbloom_admit.c).  TinyLFU instead:
 * "ringbloom_admit PAIR KEY tinylfu" records every request
 * ("ADMIT.TOUCH PAIR KEY", the same way), and "ringbloom_tinylfu $v PAIR
 * KEY" says whether TinyLFU admits KEY into the cache over the worker's
 * victim, from shared memory (ngx_http_ringbloom_tinylfu.c).
 *
 * "ringbloom_hash KEY" in an upstream {} picks its server from the key's
 * preference list on the ring (ngx_http_ringbloom_upstream*.c).
 *
 * Why: proxy_pass http://$node routes by the shared ring without a round
 * trip, and proxy_no_cache / proxy_cache_bypass driven by $seen cache an
 * object only on its second request (the first one records it), or
 * proxy_no_cache driven by TinyLFU's answer caches what is requested more
 * often than what it would displace.
 *
 * Workload: one lookup or one Bloom query per request and variable (a hash
 * and a few cache lines); admits are a memcpy into a buffer plus, now and
 * then, one send().  The event loop never waits for ringbloomd.
 *
 * This is the only file that names ngx_http_ringbloom_module: what it
 * hands the other files (a variable's data, a location's admit) carries
 * the main configuration, so none of them calls back up here.  What the
 * handlers share (names, keys, variables) is ngx_http_ringbloom_conf.c's.
 */

#include "ngx_http_ringbloom.h"

#include <sys/un.h>


#define NGX_HTTP_RINGBLOOM_DEFAULT_BUFFER  (1024 * 1024)


typedef struct {
    ngx_http_ringbloom_key_t    *admit;      /* NULL: off */
} ngx_http_ringbloom_loc_conf_t;


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
static char *ngx_http_ringbloom_tinylfu(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_ringbloom_admit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_ringbloom_owner(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void *ngx_http_ringbloom_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_ringbloom_hash(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_ringbloom_init_process(ngx_cycle_t *cycle);
static void ngx_http_ringbloom_exit_process(ngx_cycle_t *cycle);


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

    { ngx_string("ringbloom_tinylfu"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE3|NGX_CONF_TAKE4|NGX_CONF_TAKE5,
      ngx_http_ringbloom_tinylfu,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ringbloom_admit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE123,
      ngx_http_ringbloom_admit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ringbloom_hash"),
      NGX_HTTP_UPS_CONF|NGX_CONF_1MORE,
      ngx_http_ringbloom_hash,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_ringbloom_module_ctx = {
    ngx_http_ringbloom_preconfiguration,   /* preconfiguration */
    ngx_http_ringbloom_postconfiguration,  /* postconfiguration */

    ngx_http_ringbloom_create_main_conf,   /* create main configuration */
    ngx_http_ringbloom_init_main_conf,     /* init main configuration */

    ngx_http_ringbloom_create_srv_conf,    /* create server configuration */
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


/* Counts configurations read by this process (and inherited by workers). */
static ngx_uint_t  ngx_http_ringbloom_generation;


/* ---- configuration ------------------------------------------------------- */

static void *
ngx_http_ringbloom_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_ringbloom_main_conf_t  *rmcf;

    rmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_ringbloom_main_conf_t));
    if (rmcf == NULL
        || ngx_array_init(&rmcf->filters, cf->pool, 4, sizeof(ngx_str_t))
           != NGX_OK
        || ngx_array_init(&rmcf->pairs, cf->pool, 2,
                          sizeof(ngx_http_ringbloom_pair_conf_t))
           != NGX_OK)
    {
        return NULL;
    }

    rmcf->admit_buffer = NGX_CONF_UNSET_SIZE;
    rmcf->owner = (ngx_uid_t) -1;
    rmcf->generation = ++ngx_http_ringbloom_generation;

    return rmcf;
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
        rmcf->socket.data = (u_char *) paths.socket;
        rmcf->socket.len = ngx_strlen(paths.socket);
    }

    if (ngx_http_ringbloom_strz(cf, &rmcf->socket, rmcf->socket.data,
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


/* The index of Bloom filter name in rmcf->filters; or NGX_ERROR (logged). */
static ngx_int_t
ngx_http_ringbloom_filter_index(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_str_t *name)
{
    return ngx_http_ringbloom_name_index(cf, &rmcf->filters, name,
                                         RB_FILTER_NAME_MAX, "filter");
}


/*
 * The index of TinyLFU pair name in rmcf->pairs; or NGX_ERROR (logged).
 * The pair's doorkeeper, "name:dk", is a name too.
 */
static ngx_int_t
ngx_http_ringbloom_pair_index(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_str_t *name)
{
    return ngx_http_ringbloom_name_index(cf, &rmcf->pairs, name,
               RB_FILTER_NAME_MAX - (sizeof(RB_TINYLFU_DOORKEEPER_SUFFIX) - 1),
               "TinyLFU pair");
}


/* ringbloom_node $var KEY [FALLBACK] */
static char *
ngx_http_ringbloom_node(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    (void) cmd;

    return ngx_http_ringbloom_variable(cf, conf, 0, 2, cf->args->nelts == 4,
                                       ngx_http_ringbloom_node_variable);
}


/* ringbloom_seen $var FILTER KEY [FALLBACK] */
static char *
ngx_http_ringbloom_seen(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_int_t   i;
    ngx_str_t  *value;

    (void) cmd;

    value = cf->args->elts;

    i = ngx_http_ringbloom_filter_index(cf, conf, &value[2]);
    if (i == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    return ngx_http_ringbloom_variable(cf, conf, (ngx_uint_t) i, 3,
                                       cf->args->nelts == 5,
                                       ngx_http_ringbloom_seen_variable);
}


/*
 * ringbloom_tinylfu $var PAIR KEY [FALLBACK] [victims=N]: the pair's
 * victims are the most for any of its directives.
 */
static char *
ngx_http_ringbloom_tinylfu(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_ringbloom_main_conf_t *rmcf = conf;

    ngx_int_t                        i, n;
    ngx_str_t                       *value;
    ngx_uint_t                       nargs;
    ngx_http_ringbloom_pair_conf_t  *pair;

    (void) cmd;

    value = cf->args->elts;
    nargs = cf->args->nelts;
    n = NGX_HTTP_RINGBLOOM_VICTIMS;

    if (nargs > 4 && ngx_strncmp(value[nargs - 1].data, "victims=", 8) == 0) {
        n = ngx_atoi(value[nargs - 1].data + 8, value[nargs - 1].len - 8);
        if (n < 1 || n > NGX_HTTP_RINGBLOOM_VICTIMS_MAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid \"%V\": victims= takes 1 to %d",
                               &value[nargs - 1],
                               NGX_HTTP_RINGBLOOM_VICTIMS_MAX);
            return NGX_CONF_ERROR;
        }

        nargs--;
    }

    i = ngx_http_ringbloom_pair_index(cf, rmcf, &value[2]);
    if (i == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    pair = rmcf->pairs.elts;
    pair[i].victims = ngx_max(pair[i].victims, (ngx_uint_t) n);

    return ngx_http_ringbloom_variable(cf, rmcf, (ngx_uint_t) i, 3, nargs == 5,
                                       ngx_http_ringbloom_tinylfu_variable);
}


/* ringbloom_admit FILTER KEY | PAIR KEY tinylfu | off */
static char *
ngx_http_ringbloom_admit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_ringbloom_loc_conf_t *rlcf = conf;

    ngx_int_t                        i;
    ngx_str_t                       *value;
    ngx_http_ringbloom_main_conf_t  *rmcf;

    (void) cmd;

    if (rlcf->admit != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2) {
        if (ngx_strcmp(value[1].data, "off") != 0) {
            return "takes FILTER KEY, PAIR KEY tinylfu, or off";
        }

        rlcf->admit = NULL;
        return NGX_CONF_OK;
    }

    if (cf->args->nelts == 4 && ngx_strcmp(value[3].data, "tinylfu") != 0) {
        return "takes FILTER KEY, PAIR KEY tinylfu, or off";
    }

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_ringbloom_module);

    i = cf->args->nelts == 4 ? ngx_http_ringbloom_pair_index(cf, rmcf, &value[1])
                             : ngx_http_ringbloom_filter_index(cf, rmcf, &value[1]);
    if (i == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    rlcf->admit = ngx_http_ringbloom_key(cf, rmcf, (ngx_uint_t) i, &value[2],
                                         NULL);
    if (rlcf->admit == NULL) {
        return NGX_CONF_ERROR;
    }

    rlcf->admit->tinylfu = (cf->args->nelts == 4);
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


/* ---- ringbloom_hash -------------------------------------------------------- */

/* Used in an upstream {} only: what its ringbloom_hash sets. */
static void *
ngx_http_ringbloom_create_srv_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_ringbloom_upstream_conf_t));
}


/* An upstream's peer.init and init_upstream, its configuration handed on. */
static ngx_int_t
ngx_http_ringbloom_init_upstream_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    return ngx_http_ringbloom_upstream_init_peer(r, us,
               ngx_http_conf_upstream_srv_conf(us, ngx_http_ringbloom_module));
}


static ngx_int_t
ngx_http_ringbloom_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    if (ngx_http_ringbloom_upstream_init(cf, us,
            ngx_http_conf_upstream_srv_conf(us, ngx_http_ringbloom_module))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    us->peer.init = ngx_http_ringbloom_init_upstream_peer;

    return NGX_OK;
}


/* ringbloom_hash KEY [PARAMETER=VALUE ...], in an upstream {} */
static char *
ngx_http_ringbloom_hash(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    (void) cmd;

    return ngx_http_ringbloom_upstream_directive(cf, conf,
        ngx_http_conf_get_module_main_conf(cf, ngx_http_ringbloom_module),
        ngx_http_ringbloom_init_upstream);
}


/* ---- variables and the log phase ----------------------------------------- */

static ngx_int_t
ngx_http_ringbloom_preconfiguration(ngx_conf_t *cf)
{
    ngx_http_ringbloom_main_conf_t  *rmcf;

    rmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_ringbloom_module);

    return ngx_http_ringbloom_admit_variables(cf, rmcf);
}


/* Log phase: the location's ringbloom_admit, if it has one. */
static ngx_int_t
ngx_http_ringbloom_log_handler(ngx_http_request_t *r)
{
    ngx_http_ringbloom_loc_conf_t  *rlcf;

    rlcf = ngx_http_get_module_loc_conf(r, ngx_http_ringbloom_module);

    if (rlcf->admit == NULL) {
        return NGX_DECLINED;
    }

    return ngx_http_ringbloom_admit_request(r, rlcf->admit);
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

    *h = ngx_http_ringbloom_log_handler;

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

    w = ngx_http_ringbloom_worker_get(rmcf, cycle->log);
    if (w == NULL) {
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

    w = ngx_http_ringbloom_worker_active();
    if (w == NULL) {
        return;
    }

    ngx_http_ringbloom_admit_exit(w, cycle->log);
    ngx_http_ringbloom_worker_close(w);
}
