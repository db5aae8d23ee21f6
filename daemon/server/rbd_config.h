/*
 * rbd_config.h - ringbloomd's configuration (config.c): the settings, where
 * they come from (defaults, a redis.conf-style file, command-line
 * overrides), and what a reload may change.  (Not "config.h": that name is
 * autoconf's.)
 */
#ifndef RBD_RBD_CONFIG_H
#define RBD_RBD_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "acl.h"
#include "ringbloom.h"

#define RBD_MAX_IDS 32

enum { FSYNC_ALWAYS = 0, FSYNC_EVERYSEC = 1, FSYNC_NO = 2 };
enum { RING_SOURCE_LOCAL = 0, RING_SOURCE_ETCD = 1 };
enum { FILTER_SOURCE_LOCAL = 0, FILTER_SOURCE_NATS = 1 };

typedef struct rbd_ids {         /* a list of uids or gids */
    uint32_t id[RBD_MAX_IDS];
    size_t n;
} rbd_ids_t;

typedef struct rbd_config {
    char instance[RB_INSTANCE_MAX + 1];
    char socket[108];            /* sun_path */
    char pidfile[4096];
    char dir[4096];              /* state directory */
    mode_t socket_mode;          /* socket-mode, or unixsocketperm */
    gid_t socket_group;          /* unixsocketgroup; default: the daemon's egid */
    mode_t segment_mode;
    gid_t segment_group;         /* segment-group; default: the daemon's egid */
    int huge_pages;              /* back the segment with 2 MiB pages */
    uint64_t max_memory;         /* segment reservation, bytes */
    int64_t slowlog_log_slower_than; /* microseconds; < 0: no slow log */
    uint32_t slowlog_max_len;    /* slow-log entries kept */
    uint32_t latency_monitor_threshold; /* ms; 0: no latency samples */
    uint64_t segment_shrink_bytes; /* a free tail this large (and as large as
                                    the live data) is cut by a rebuild
                                    (segwatch.c); 0 = never */
    uint32_t max_filters;
    uint32_t max_nodes;
    uint32_t max_ring_points;    /* a ring change past it is refused: each
                                    change rebuilds every point */
    uint64_t max_command_bytes;  /* segment memory one command may create,
                                    merge or halve in one pass */
    uint32_t ring_down_max_percent; /* RING.DOWN is refused when it would
                                       leave more of the nodes not up */
    uint32_t max_clients;        /* lowered at start if the fd limit is lower */
    uint32_t reserved_writer_clients; /* of max_clients, only for writers
                                         (at most half of them) */
    uint64_t max_key_bytes;
    uint64_t max_request_bytes;
    uint64_t output_soft_limit;  /* a client's unsent replies past which its
                                    pipeline pauses until it reads */
    uint64_t output_hard_limit;  /* ... past which it is closed */
    uint64_t max_client_memory;  /* all clients' buffers together */
    uint32_t timeout;            /* seconds without a complete request or a
                                    reply byte delivered, 0 = never */
    int appendfsync;
    uint32_t save_seconds;       /* snapshot at least this often (0 = only on demand) */
    uint64_t save_log_bytes;     /* ... or when the log grows past this */
    uint32_t save_log_percent;   /* ... and past this % of the live data (0: the bytes alone) */
    rb_ring_mode_t ring_mode;    /* for a ring that does not exist yet */
    uint32_t ring_replicas;
    int ring_source;             /* RING_SOURCE_*: who keeps the membership */
    char etcd_endpoints[1024];   /* ring-source etcd: URLs, blank- or comma-separated */
    char etcd_prefix[256];       /* the ring's keys in etcd start with it */
    char etcd_cacert[4096];      /* TLS: CA bundle ("": the system's) */
    char etcd_cert[4096];        /* TLS client certificate ("": none) */
    char etcd_key[4096];
    char etcd_user[256];         /* "": no authentication */
    char etcd_password[256];
    uint32_t etcd_timeout;       /* ms a request may take at one endpoint */
    int filter_source;           /* FILTER_SOURCE_*: where replicated filters' writes go */
    char nats_servers[1024];     /* filter-source nats: URLs, blank- or comma-separated */
    char nats_stream[64];        /* the stream (subject <stream>.ops), made if missing */
    char nats_filters[256];      /* fnmatch(3) pattern: the filter names replicated */
    char nats_creds[4096];       /* a NATS credentials file ("": none) */
    char nats_cacert[4096];      /* TLS: CA bundle ("": no TLS unless nats-cert) */
    char nats_cert[4096];        /* TLS client certificate and key ("": none) */
    char nats_key[4096];
    uint32_t nats_timeout;       /* ms a publish or JetStream call may take */
    uint64_t nats_max_bytes;     /* the streams' MaxBytes when this daemon makes them */
    uint32_t nats_snapshot_every; /* a snapshot at each multiple of this many messages,
                                    by the host that wrote that message (0: none) */
    int bf_default_layout;       /* rb_bloom_layout_t of a filter BF.ADD, BF.MADD
                                    or BF.INSERT creates without LAYOUT */
    rbd_ids_t write_uids;        /* may run mutations, by uid */
    rbd_ids_t write_gids;        /* ... or by gid */
    int loglevel;                /* LOG_DEBUG .. LOG_WARNING */
    int keep_segment;            /* leave the segment behind on shutdown */
    int load_truncated;          /* accept a log whose last record is torn */
    char logfile[4096];          /* the log's file, made absolute ("": none; rbd_log.c) */
    int syslog_enabled;          /* log to syslog too when detached */
    char syslog_ident[64];
    int syslog_facility;         /* LOG_DAEMON, LOG_USER, LOG_LOCAL0..7 */
    rbd_acl_t acl;               /* acl-user and acl-group lines (acl.c) */
    int appendonly;              /* log every change (0: snapshots alone; aof_switch.c) */
} rbd_config_t;

/* Where the settings come from: filled by main.c from its arguments and
 * read again on every SIGHUP. */
#define RBD_MAX_OVERRIDES 64
typedef struct rbd_config_src {
    char start_dir[4096];        /* the working directory at start: relative
                                    paths are taken from it (a daemon runs in /) */
    char file[8192];             /* -c, made absolute; "" if none */
    struct {
        char key[64];
        char value[4096];
    } overrides[RBD_MAX_OVERRIDES];  /* -i, -s, -d, -o, in their order */
    int noverrides;
} rbd_config_src_t;

/* Adds an override (-o key=value and the like): 0, or -1 if there are too
 * many or it is too long. */
int rbd_config_override(rbd_config_src_t *src, const char *key, const char *value);

/* Makes path (a buffer of cap bytes) absolute against src->start_dir
 * (what names it in a message): 0, or -1 with err. */
int rbd_config_absolute(const rbd_config_src_t *src, char *path, size_t cap, const char *what,
                        char *err, size_t errlen);

/* Every path setting of cfg (the table's RBD_SET_PATH) made absolute
 * against src->start_dir ("" stays ""): at start, on SIGHUP and after
 * CONFIG SET alike, so a path means the same file whichever set it and
 * wherever the daemon runs.  0, or -1 with err. */
int rbd_config_paths(const rbd_config_src_t *src, rbd_config_t *cfg, char *err, size_t errlen);

/* The configuration: defaults for the instance, the file, the overrides,
 * relative paths made absolute, rbd_config_check.  The instance (which
 * decides the default paths) may come from an override or the file, so it
 * is settled first.  The start-up and SIGHUP path: 0, or -1 with err. */
int rbd_config_build(const rbd_config_src_t *src, rbd_config_t *cfg, char *err, size_t errlen);

/* CONFIG REWRITE (config_rewrite.c): src->file brought to c, comments and
 * the operator's order kept, the access rules and what the command line
 * set left alone, each value written so the parser reads it back; a new
 * file (mkstemp, the old one's owner and mode) renamed over it.  0, or -1
 * with err (also for a symlinked file, a directory another user can
 * write, an owner this process cannot give). */
#define RBD_REWRITE_MAX 96   /* settings rendered (the table has fewer) */
int rbd_config_rewrite(const rbd_config_t *c, const rbd_config_src_t *src, char *err,
                       size_t errlen);

/* Defaults for `instance` (paths derived with rb_default_paths). */
int rbd_config_defaults(rbd_config_t *c, const char *instance);

/* Applies "key value" to c (key any case, or an alias; value text: a
 * control character other than the tab is refused).  Returns 0, or -1
 * with a message in err (it repeats no secret's value). */
int rbd_config_set(rbd_config_t *c, const char *key, const char *value, char *err, size_t errlen);

/* Reads a config file into c (on top of what c holds): a regular file,
 * its syntax config_syntax.c's.  Returns 0, or -1 with "file:line:
 * message" (or "file: why") in err. */
int rbd_config_load(rbd_config_t *c, const char *path, char *err, size_t errlen);

/* Checks the settings against each other (a limit below another it must
 * exceed).  Returns 0, or -1 with a message in err. */
int rbd_config_check(const rbd_config_t *c, char *err, size_t errlen);

/* Whether this process may give its socket and segment the configured
 * groups (root, or a member of each): checked at start, before anything is
 * made, so a daemon that could not fails saying why.  0, or -1 with a
 * message in err. */
int rbd_config_check_groups(const rbd_config_t *c, char *err, size_t errlen);

/* Names and rendered values of every setting, for CONFIG GET:
 * calls fn(name, value, arg) for each. */
void rbd_config_each(const rbd_config_t *c, void (*fn)(const char *, const char *, void *),
                     void *arg);

/* A reload: every setting that cannot change without a restart (the
 * settings table's reload column) is set in fresh as it is in running.
 * 1 if one of them differed (the first one's name in *which), else 0. */
int rbd_config_keep_restart_only(rbd_config_t *fresh, const rbd_config_t *running,
                                 const char **which);

#endif /* RBD_RBD_CONFIG_H */
