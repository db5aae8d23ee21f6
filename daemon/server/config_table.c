/*
 * config_table.c - the settings of ringbloomd as data: the table config.c
 * parses, renders and reloads by (a new setting is a row here, its field
 * in rbd_config.h and its default in rbd_config_defaults below), the
 * other names settings answer to, the words of the few-valued settings,
 * and the defaults.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

#include "config_table.h"
#include "rbd_config.h"

#define F(f) offsetof(rbd_config_t, f), sizeof(((rbd_config_t *)0)->f)
const setting_t rbd_settings[] = {
    { "instance", T_STR, F(instance), 0, 0, 0, 0 },
    { "socket", T_STR, F(socket), 0, 0, 0, RBD_SET_PATH },
    { "pidfile", T_STR, F(pidfile), 0, 0, 0, RBD_SET_PATH },
    { "dir", T_STR, F(dir), 0, 0, 0, RBD_SET_PATH },
    { "socket-mode", T_MODE, F(socket_mode), 0, 0, 0, 0 },
    /* A group name or gid, resolved when read (an unknown name is an error
     * then); whether this process may give it is rbd_config_check_groups'. */
    { "unixsocketgroup", T_GROUP, F(socket_group), 0, 0, 0, 0 },
    /* Readers refuse an object others could write (name squatting). */
    { "segment-mode", T_MODE, F(segment_mode), 0, 0755, 0, 0 },
    { "segment-group", T_GROUP, F(segment_group), 0, 0, 0, 0 },
    /* Applied at start (segwatch.c): a warning where the kernel has none. */
    { "huge-pages", T_BOOL, F(huge_pages), 0, 0, 0, 0 },
    { "segment-shrink-bytes", T_SIZE, F(segment_shrink_bytes), 0, RB_MAX_MAX_SIZE, 1, 0 },
    { "max-memory", T_SIZE, F(max_memory), 1u << 20, RB_MAX_MAX_SIZE, 0, 0 },
    { "max-filters", T_U32, F(max_filters), 1, RB_MAX_FILTERS, 0, 0 },
    { "max-nodes", T_U32, F(max_nodes), 1, RB_RING_MAX_NODES, 1, 0 },
    { "max-ring-points", T_U32, F(max_ring_points), 1, RB_RING_MAX_POINTS, 1, 0 },
    { "max-command-bytes", T_SIZE, F(max_command_bytes), 1u << 20, RB_MAX_MAX_SIZE, 1, 0 },
    /* RING.DOWN's share of nodes not up, % (cmd_ring.c); 100: none. */
    { "ring-down-max-percent", T_U32, F(ring_down_max_percent), 0, 100, 1, 0 },
    { "max-clients", T_U32, F(max_clients), 1, 1000000, 1, 0 },
    { "reserved-writer-clients", T_U32, F(reserved_writer_clients), 0, 999999, 1, 0 },
    { "max-key-bytes", T_SIZE, F(max_key_bytes), 1, 512u << 20, 1, 0 },
    { "max-request-bytes", T_SIZE, F(max_request_bytes), 1024, 1u << 30, 1, 0 },
    { "client-output-soft-limit", T_SIZE, F(output_soft_limit), 64u << 10, 1ULL << 40, 1, 0 },
    { "client-output-hard-limit", T_SIZE, F(output_hard_limit), 64u << 10, 1ULL << 40, 1, 0 },
    { "max-client-memory", T_SIZE, F(max_client_memory), 1u << 20, 1ULL << 40, 1, 0 },
    { "timeout", T_U32, F(timeout), 0, 100000000, 1, 0 },
    { "appendfsync", T_FSYNC, F(appendfsync), 0, 0, 1, 0 },
    { "save-seconds", T_U32, F(save_seconds), 0, 100000000, 1, 0 },
    { "save-log-bytes", T_SIZE, F(save_log_bytes), 4096, UINT64_MAX, 1, 0 },
    { "save-log-percent", T_U32, F(save_log_percent), 0, 1000000, 1, 0 },
    { "ring-mode", T_RINGMODE, F(ring_mode), 0, 0, 0, 0 },
    { "ring-replicas", T_U32, F(ring_replicas), 1, RB_RING_MAX_REPLICAS, 0, 0 },
    /* Where the ring's membership lives (ring_source.c): this daemon's
     * log, or etcd under etcd-prefix, shared by every host's daemon. */
    { "ring-source", T_SOURCE, F(ring_source), 0, 0, 0, 0 },
    { "etcd-endpoints", T_STR, F(etcd_endpoints), 0, 0, 0, 0 },
    { "etcd-prefix", T_STR, F(etcd_prefix), 0, 0, 0, 0 },
    { "etcd-cacert", T_STR, F(etcd_cacert), 1, 0, 0, RBD_SET_PATH },
    { "etcd-cert", T_STR, F(etcd_cert), 1, 0, 0, RBD_SET_PATH },
    { "etcd-key", T_STR, F(etcd_key), 1, 0, 0, RBD_SET_PATH },
    { "etcd-user", T_STR, F(etcd_user), 1, 0, 0, 0 },
    { "etcd-password", T_STR, F(etcd_password), 1, 0, 0, RBD_SET_SECRET },
    { "etcd-timeout", T_U32, F(etcd_timeout), 100, 600000, 0, 0 },
    /* Where the replicated filters' writes go (filter_source.c): this
     * daemon alone, or a NATS JetStream stream every host's daemon follows. */
    { "filter-source", T_FSOURCE, F(filter_source), 0, 0, 0, 0 },
    { "nats-servers", T_STR, F(nats_servers), 0, 0, 0, 0 },
    { "nats-stream", T_STR, F(nats_stream), 0, 0, 0, 0 },
    { "nats-filters", T_STR, F(nats_filters), 0, 0, 0, 0 },
    { "nats-creds", T_STR, F(nats_creds), 1, 0, 0, RBD_SET_PATH },
    { "nats-cacert", T_STR, F(nats_cacert), 1, 0, 0, RBD_SET_PATH },
    { "nats-cert", T_STR, F(nats_cert), 1, 0, 0, RBD_SET_PATH },
    { "nats-key", T_STR, F(nats_key), 1, 0, 0, RBD_SET_PATH },
    { "nats-timeout", T_U32, F(nats_timeout), 100, 600000, 0, 0 },
    { "nats-max-bytes", T_SIZE, F(nats_max_bytes), 1u << 20, 1ULL << 50, 0, 0 },
    { "nats-snapshot-every", T_U32, F(nats_snapshot_every), 0, 1000000000, 0, 0 },
    { "bf-default-layout", T_LAYOUT, F(bf_default_layout), 0, 0, 1, 0 },
    /* Names are resolved when read, as for the groups above. */
    { "allow-write-uid", T_UIDS, F(write_uids), 0, 0, 1, 0 },
    { "allow-write-gid", T_GIDS, F(write_gids), 0, 0, 1, 0 },
    { "loglevel", T_LEVEL, F(loglevel), 0, 0, 1, 0 },
    { "keep-segment", T_BOOL, F(keep_segment), 0, 0, 1, 0 },
    { "load-truncated", T_BOOL, F(load_truncated), 0, 0, 1, 0 },
    /* Redis's tools (observe.c): the slow log and the latency monitor. */
    { "slowlog-log-slower-than", T_I64, F(slowlog_log_slower_than), (uint64_t)-1,
      1000000000, 1, 0 },
    { "slowlog-max-len", T_U32, F(slowlog_max_len), 0, 100000, 1, 0 },
    { "latency-monitor-threshold", T_U32, F(latency_monitor_threshold), 0, 100000000, 1, 0 },
    /* The log's destinations (rbd_log.c), applied again on SIGHUP, which
     * reopens the logfile by its path ("": none). */
    { "logfile", T_STR, F(logfile), 1, 0, 1, RBD_SET_PATH },
    { "syslog-enabled", T_BOOL, F(syslog_enabled), 0, 0, 1, 0 },
    { "syslog-ident", T_STR, F(syslog_ident), 0, 0, 1, 0 },
    { "syslog-facility", T_FACILITY, F(syslog_facility), 0, 0, 1, 0 },
    /* Repeatable: each line adds rules for its user or group (acl.c). */
    { "acl-user", T_ACL_USER, F(acl), 0, 0, 1, 0 },
    { "acl-group", T_ACL_GROUP, F(acl), 0, 0, 1, 0 },
    /* Redis's name: no means no log record at all (aof_switch.c); no ->
     * yes takes a snapshot first. */
    { "appendonly", T_BOOL, F(appendonly), 0, 0, 1, 0 },
};
const size_t rbd_nsettings = sizeof(rbd_settings) / sizeof(rbd_settings[0]);

/* Other names of settings, Redis's among them, so a redis.conf line means
 * the same here. */
const rbd_alias_t rbd_aliases[] = {
    { "unixsocketperm", "socket-mode" },
    { "unixsocket", "socket" },
    { "maxmemory", "max-memory" },    /* here the segment's reservation: a write past it
                                         is refused (Redis's noeviction) */
    { "maxclients", "max-clients" },
};
const size_t rbd_naliases = sizeof(rbd_aliases) / sizeof(rbd_aliases[0]);


const word_t rbd_words[] = {
    { T_FSYNC, "everysec", FSYNC_EVERYSEC }, { T_FSYNC, "always", FSYNC_ALWAYS },
    { T_FSYNC, "no", FSYNC_NO },
    { T_BOOL, "yes", 1 }, { T_BOOL, "no", 0 },
    { T_LEVEL, "info", LOG_INFO }, { T_LEVEL, "notice", LOG_INFO },
    { T_LEVEL, "debug", LOG_DEBUG }, { T_LEVEL, "verbose", LOG_DEBUG },   /* Redis's */
    { T_LEVEL, "warning", LOG_WARNING },
    { T_LAYOUT, "blocked", RB_BLOOM_BLOCKED }, { T_LAYOUT, "standard", RB_BLOOM_STANDARD },
    { T_LAYOUT, "redisbloom", RB_BLOOM_REDISBLOOM },
    { T_SOURCE, "local", RING_SOURCE_LOCAL }, { T_SOURCE, "etcd", RING_SOURCE_ETCD },
    { T_FSOURCE, "local", FILTER_SOURCE_LOCAL }, { T_FSOURCE, "nats", FILTER_SOURCE_NATS },
    { T_FACILITY, "daemon", LOG_DAEMON }, { T_FACILITY, "user", LOG_USER },
    { T_FACILITY, "local0", LOG_LOCAL0 }, { T_FACILITY, "local1", LOG_LOCAL1 },
    { T_FACILITY, "local2", LOG_LOCAL2 }, { T_FACILITY, "local3", LOG_LOCAL3 },
    { T_FACILITY, "local4", LOG_LOCAL4 }, { T_FACILITY, "local5", LOG_LOCAL5 },
    { T_FACILITY, "local6", LOG_LOCAL6 }, { T_FACILITY, "local7", LOG_LOCAL7 },
};
const size_t rbd_nwords = sizeof(rbd_words) / sizeof(rbd_words[0]);

long rbd_setting_row(const char *key, size_t len)
{
    for (size_t i = 0; i < rbd_naliases; i++)
        if (strlen(rbd_aliases[i].alias) == len && strncasecmp(rbd_aliases[i].alias, key, len) == 0) {
            key = rbd_aliases[i].name;
            len = strlen(key);
        }
    for (size_t i = 0; i < rbd_nsettings; i++)
        if (strlen(rbd_settings[i].name) == len && strncasecmp(rbd_settings[i].name, key, len) == 0)
            return (long)i;
    return -1;
}

int rbd_config_defaults(rbd_config_t *c, const char *instance)
{
    rb_paths_t p;
    int rc;

    memset(c, 0, sizeof(*c));
    if ((rc = rb_default_paths(instance, &p)) != RB_OK)
        return rc;
    snprintf(c->instance, sizeof(c->instance), "%s", instance);
    snprintf(c->socket, sizeof(c->socket), "%s", p.socket);
    snprintf(c->pidfile, sizeof(c->pidfile), "%s", p.pidfile);
    snprintf(c->dir, sizeof(c->dir), "%s", p.state_dir);
    c->socket_mode = 0660;
    c->segment_mode = 0640;
    c->socket_group = getegid();   /* what the files get without a chown */
    c->segment_group = getegid();
    c->max_memory = RB_DEFAULT_MAX_SIZE;
    c->segment_shrink_bytes = 64u << 20;
    c->max_filters = RB_DEFAULT_MAX_FILTERS;
    c->max_nodes = RB_RING_MAX_NODES;
    /* Under 250 ms for a command that rebuilds the ring or makes, merges
     * or halves a sketch (~135 ms: 2^20 points; 140 ms: 64 MiB fresh). */
    c->max_ring_points = 1u << 20;
    c->max_command_bytes = 64u << 20;
    c->ring_down_max_percent = 50;
    c->max_clients = 1024;
    c->reserved_writer_clients = 16;
    c->max_key_bytes = 64u << 10;
    c->max_request_bytes = 64u << 20;
    c->output_soft_limit = 8u << 20;
    c->output_hard_limit = 64u << 20;
    c->max_client_memory = 1u << 30;
    c->appendfsync = FSYNC_EVERYSEC;
    c->save_seconds = 300;
    c->save_log_bytes = 64u << 20;
    c->save_log_percent = 100;
    c->ring_mode = RB_RING_XXH3;
    c->ring_replicas = RB_RING_DEFAULT_REPLICAS;
    c->ring_source = RING_SOURCE_LOCAL;
    snprintf(c->etcd_endpoints, sizeof(c->etcd_endpoints), "http://127.0.0.1:2379");
    snprintf(c->etcd_prefix, sizeof(c->etcd_prefix), "/ringbloom/ring/");
    c->etcd_timeout = 2000;
    c->filter_source = FILTER_SOURCE_LOCAL;
    snprintf(c->nats_servers, sizeof(c->nats_servers), "nats://127.0.0.1:4222");
    snprintf(c->nats_stream, sizeof(c->nats_stream), "RINGBLOOM");
    snprintf(c->nats_filters, sizeof(c->nats_filters), "*");
    c->nats_timeout = 2000;
    c->nats_max_bytes = 1ULL << 30;
    c->nats_snapshot_every = 10000;
    c->bf_default_layout = RB_BLOOM_BLOCKED;
    c->write_uids.id[0] = getuid();
    c->write_uids.n = 1;
    if (getuid() != 0)
        c->write_uids.id[c->write_uids.n++] = 0;
    c->loglevel = LOG_INFO;
    c->keep_segment = 1;
    c->load_truncated = 1;
    c->slowlog_log_slower_than = 10000;   /* Redis's defaults */
    c->slowlog_max_len = 128;
    c->syslog_enabled = 1;   /* detached, the log went to syslog before logfile existed */
    snprintf(c->syslog_ident, sizeof(c->syslog_ident), "ringbloomd");
    c->syslog_facility = LOG_DAEMON;
    c->appendonly = 1;
    return RB_OK;
}

