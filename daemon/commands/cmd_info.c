/*
 * cmd_info.c - INFO: Redis-style "# Section" blocks of key:value lines,
 * one function per section (server, clients, memory, persistence, stats,
 * replication, cpu, commandstats, errorstats, ring, bloom, keyspace),
 * chosen by the arguments as Redis chooses them (Redis's fields, under
 * its names, where tools read them: prometheus-redis-exporter's series
 * and dashboards); its table row and handler.  The filter section counts the filters of each kind
 * from the kind table (ringbloom/filter.h) and describes each Bloom filter.
 */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "snapshot.h"

#define INFO_KINDS 16   /* kinds counted (the kind table has fewer) */

/* INFO's text: Redis-style "# Section" blocks of key:value lines. */
typedef struct info_buf {
    rbi_buf_t b;
    int sections;
    server_t *s;              /* for the filters' lines (rb_bloom_list's callback) */
    size_t filters;           /* filter lines so far */
} info_buf_t;

static void info_line(info_buf_t *ib, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info_line(info_buf_t *ib, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 3)
        n = (int)sizeof(line) - 3;
    memcpy(line + n, "\r\n", 2);
    rbi_buf_append(&ib->b, line, (size_t)n + 2);
}

static void info_section(info_buf_t *ib, const char *title)
{
    if (ib->sections++ > 0)
        rbi_buf_append(&ib->b, "\r\n", 2);
    info_line(ib, "# %s", title);
}

static void info_server(server_t *s, info_buf_t *ib)
{
    struct utsname u;
    uint64_t up = (rbd_mono_ms() - s->start_ms) / 1000;

    info_section(ib, "Server");
    /* The Redis version whose protocol and INFO this daemon answers as:
     * tools (redis-cli, exporters) choose what to ask by it. */
    info_line(ib, "redis_version:%s", RBD_REDIS_VERSION);
    info_line(ib, "redis_mode:standalone");
    if (uname(&u) == 0)
        info_line(ib, "os:%s %s %s", u.sysname, u.release, u.machine);
    info_line(ib, "arch_bits:%d", (int)(8 * sizeof(void *)));
    info_line(ib, "tcp_port:0");
    info_line(ib, "uptime_in_days:%llu", (unsigned long long)(up / 86400));
    info_line(ib, "ringbloom_version:%s", PACKAGE_VERSION);
    info_line(ib, "process_id:%d", (int)getpid());
    info_line(ib, "instance:%s", s->cfg.instance);
    info_line(ib, "segment:/dev/shm/ringbloom.%s", s->cfg.instance);
    info_line(ib, "socket:%s", s->cfg.socket);
    info_line(ib, "config_file:%s", s->src != NULL ? s->src->file : "");
    info_line(ib, "uptime_in_seconds:%llu", (unsigned long long)up);
}

static void info_clients(server_t *s, info_buf_t *ib)
{
    info_section(ib, "Clients");
    info_line(ib, "connected_clients:%u", s->nclients);
    info_line(ib, "blocked_clients:0");   /* no command blocks */
    info_line(ib, "monitor_clients:%u", s->obs.monitors);
    info_line(ib, "max_clients:%u", s->cfg.max_clients);
    info_line(ib, "reserved_writer_clients:%u", s->cfg.reserved_writer_clients);
    info_line(ib, "max_open_files:%llu", (unsigned long long)s->fd_limit);
    info_line(ib, "rejected_connections:%llu", (unsigned long long)s->rejected_clients);
    info_line(ib, "client_buffers_bytes:%llu", (unsigned long long)s->client_mem);
    info_line(ib, "max_client_memory:%llu", (unsigned long long)s->cfg.max_client_memory);
    info_line(ib, "evicted_clients:%llu", (unsigned long long)s->evicted_clients);
    info_line(ib, "output_limit_clients:%llu", (unsigned long long)s->output_limit_clients);
}

/* Bytes as Redis's *_human fields write them: 1023B, 1.50K, 20.00M, 1.00G. */
static void info_human(info_buf_t *ib, const char *field, uint64_t n)
{
    static const char units[] = "KMGTP";
    double v = (double)n;
    size_t u = 0;

    if (n < 1024) {
        info_line(ib, "%s:%lluB", field, (unsigned long long)n);
        return;
    }
    v /= 1024.0;
    while (v >= 1024.0 && u + 1 < sizeof(units) - 1) {
        v /= 1024.0;
        u++;
    }
    info_line(ib, "%s:%.2f%c", field, v, units[u]);
}

static void info_memory(server_t *s, info_buf_t *ib)
{
    rb_segment_info_t si;
    rb_segment_memory_t mem;
    const rb_segment_huge_t *h;

    if (rb_segment_info(s->state.seg, &si) != RB_OK ||
        rb_segment_memory(s->state.seg, &mem) != RB_OK)
        return;
    info_section(ib, "Memory");
    /* Redis's names: used_memory the live data, used_memory_rss what the
     * segment's object holds in memory, their ratio the fragmentation; the
     * committed size and the free bytes in it (freed pages are given back,
     * so rss follows used, not the committed size). */
    info_line(ib, "used_memory:%llu", (unsigned long long)mem.used);
    info_human(ib, "used_memory_human", mem.used);
    info_line(ib, "used_memory_rss:%llu", (unsigned long long)mem.resident);
    info_human(ib, "used_memory_rss_human", mem.resident);
    info_line(ib, "mem_fragmentation_ratio:%.2f",
              mem.used > 0 ? (double)mem.resident / (double)mem.used : 0.0);
    /* Redis's maxmemory is max-memory (the segment's reservation), and a
     * write past it is refused: noeviction. */
    info_line(ib, "maxmemory:%llu", (unsigned long long)s->cfg.max_memory);
    info_human(ib, "maxmemory_human", s->cfg.max_memory);
    info_line(ib, "maxmemory_policy:noeviction");
    info_line(ib, "ringbloom_segment_bytes:%llu", (unsigned long long)mem.committed);
    info_human(ib, "ringbloom_segment_bytes_human", mem.committed);
    info_line(ib, "ringbloom_free_bytes:%llu", (unsigned long long)mem.free);
    info_line(ib, "ringbloom_unreleased_bytes:%llu", (unsigned long long)mem.unreleased);
    info_line(ib, "segment_used_bytes:%llu", (unsigned long long)si.used);
    info_line(ib, "segment_committed_bytes:%llu", (unsigned long long)si.size);
    info_line(ib, "segment_max_bytes:%llu", (unsigned long long)si.max_size);
    info_line(ib, "segment_generation:%llu", (unsigned long long)si.generation);
    info_line(ib, "segment_linked:%d", s->watch.linked);
    info_line(ib, "segment_republished:%llu", (unsigned long long)s->watch.republished);
    info_line(ib, "segment_shrinks:%llu", (unsigned long long)s->watch.shrunk);
    info_line(ib, "segment_shrunk_bytes:%llu", (unsigned long long)s->watch.shrunk_bytes);
    info_line(ib, "segment_last_shrink_ms:%llu", (unsigned long long)s->watch.last_shrink_ms);
    if ((h = rbd_segwatch_huge_status(&s->watch, s->state.seg)) == NULL)
        return;
    /* huge_pages: the segment asks for them; huge_bytes: what they back
     * (at most a second old) */
    info_line(ib, "segment_huge_pages:%s", h->requested ? "yes" : "no");
    info_line(ib, "segment_huge_bytes:%llu", (unsigned long long)h->huge_bytes);
    info_line(ib, "segment_huge_mount:%s", h->mount);
    info_line(ib, "segment_huge_problem:%s", h->why[0] != '\0' ? h->why : "none");
}

/* Redis's names where they mean the same (a snapshot is Redis's RDB
 * save: BGSAVE's, written by a thread while the loop goes on; the log
 * its AOF), then ringbloomd's own figures. */
static void info_persistence(server_t *s, info_buf_t *ib)
{
    const rbd_aof_t *a = &s->aof;

    info_section(ib, "Persistence");
    info_line(ib, "loading:0");   /* the state is loaded before the socket listens */
    info_line(ib, "rdb_changes_since_last_save:%llu", (unsigned long long)a->changes);
    info_line(ib, "rdb_bgsave_in_progress:%d", s->snaps.job != NULL);
    info_line(ib, "rdb_last_save_time:%llu", (unsigned long long)(s->snaps.last_ms / 1000));
    info_line(ib, "rdb_last_bgsave_status:%s", s->snaps.last_failed ? "err" : "ok");
    info_line(ib, "aof_enabled:%d", a->enabled != 0);   /* Redis's: appendonly */
    info_line(ib, "dir:%s", a->dir);
    info_line(ib, "appendfsync:%s", s->cfg.appendfsync == FSYNC_ALWAYS ? "always"
              : s->cfg.appendfsync == FSYNC_NO ? "no" : "everysec");
    info_line(ib, "log_bytes:%llu", (unsigned long long)a->log_bytes);
    info_line(ib, "snapshots:%llu", (unsigned long long)s->snaps.count);
    info_line(ib, "last_snapshot_ms:%llu", (unsigned long long)s->snaps.last_duration_ms);
    info_line(ib, "last_snapshot_loop_us:%llu", (unsigned long long)s->snaps.last_loop_us);
    info_line(ib, "last_snapshot_cow_bytes:%llu", (unsigned long long)s->snaps.last_saved_bytes);
    info_line(ib, "last_snapshot_file_bytes:%llu", (unsigned long long)s->snaps.last_file_bytes);
    info_line(ib, "log_fsyncs:%llu", (unsigned long long)a->fsyncs);
    info_line(ib, "log_write_errors:%llu", (unsigned long long)a->log_errors);
    info_line(ib, "log_write_ok:%d", !rbd_aof_refuses(a));
}

/* Redis's names first (measured here: stats.c), then ringbloomd's own.
 * No key expires and none is evicted (a write past max-memory is
 * refused), so those two counts are 0. */
static void info_stats(server_t *s, info_buf_t *ib)
{
    const rbd_stats_t *st = &s->stats;

    info_section(ib, "Stats");
    info_line(ib, "total_connections_received:%llu", (unsigned long long)s->connections);
    info_line(ib, "total_commands_processed:%llu", (unsigned long long)s->commands);
    info_line(ib, "instantaneous_ops_per_sec:%llu", (unsigned long long)rbd_rate_per_sec(&st->ops));
    info_line(ib, "total_net_input_bytes:%llu", (unsigned long long)st->net_in);
    info_line(ib, "total_net_output_bytes:%llu", (unsigned long long)st->net_out);
    info_line(ib, "instantaneous_input_kbps:%.2f", (double)rbd_rate_per_sec(&st->in) / 1024.0);
    info_line(ib, "instantaneous_output_kbps:%.2f", (double)rbd_rate_per_sec(&st->out) / 1024.0);
    info_line(ib, "rejected_connections:%llu", (unsigned long long)s->rejected_clients);
    info_line(ib, "expired_keys:0");
    info_line(ib, "evicted_keys:0");
    info_line(ib, "keyspace_hits:%llu", (unsigned long long)st->hits);
    info_line(ib, "keyspace_misses:%llu", (unsigned long long)st->misses);
    info_line(ib, "total_error_replies:%llu", (unsigned long long)st->errors);
    info_line(ib, "denied_commands:%llu", (unsigned long long)s->denied);
    info_line(ib, "protocol_errors:%llu", (unsigned long long)s->protocol_errors);
    info_line(ib, "client_timeouts:%llu", (unsigned long long)s->timeouts);
    info_line(ib, "bf_new_items:%llu", (unsigned long long)s->state.bf_adds);
    info_line(ib, "ring_changes:%llu", (unsigned long long)s->state.ring_changes);
}

/* Redis's CPU section: the process's and its main thread's (the event
 * loop's: INFO runs there) seconds, getrusage(2)'s; no children (the
 * snapshots are written by a thread, never a fork).  The thread is read
 * first, so the process's sys + user, read after, is at least the
 * thread's (to the microsecond each is cut to); each figure's split
 * between sys and user is the kernel's estimate, made per task, so only
 * the sums compare. */
static void info_cpu(server_t *s, info_buf_t *ib)
{
    struct rusage self, thread, children;

    (void)s;
    if (getrusage(RUSAGE_THREAD, &thread) != 0 || getrusage(RUSAGE_SELF, &self) != 0 ||
        getrusage(RUSAGE_CHILDREN, &children) != 0)
        return;
#define TV(tv) ((double)(tv).tv_sec + (double)(tv).tv_usec / 1e6)
    info_section(ib, "CPU");
    info_line(ib, "used_cpu_sys:%.6f", TV(self.ru_stime));
    info_line(ib, "used_cpu_user:%.6f", TV(self.ru_utime));
    info_line(ib, "used_cpu_sys_children:%.6f", TV(children.ru_stime));
    info_line(ib, "used_cpu_user_children:%.6f", TV(children.ru_utime));
    info_line(ib, "used_cpu_sys_main_thread:%.6f", TV(thread.ru_stime));
    info_line(ib, "used_cpu_user_main_thread:%.6f", TV(thread.ru_utime));
#undef TV
}

/* A row's name as Redis writes it in commandstats: lower case, a
 * subcommand after its command ("config|get"). */
static void cmdstat_name(const rbd_cmdstat_t *c, char *out, size_t cap)
{
    size_t w = 0;

    for (const char *p = c->cmd; *p != '\0' && w + 1 < cap; p++)
        out[w++] = (char)tolower((unsigned char)*p);
    if (c->sub != NULL && w + 1 < cap)
        out[w++] = '|';
    for (const char *p = c->sub; p != NULL && *p != '\0' && w + 1 < cap; p++)
        out[w++] = (char)tolower((unsigned char)*p);
    out[w] = '\0';
}

typedef struct named_stat {
    char name[72];
    const rbd_cmdstat_t *c;
} named_stat_t;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named_stat_t *)a)->name, ((const named_stat_t *)b)->name);
}

/* Redis's Commandstats: a line per command row that was called or
 * refused, by name (stats.c counts them). */
static void info_commandstats(server_t *s, info_buf_t *ib)
{
    static named_stat_t row[RBD_CMDSTATS];   /* the loop thread's alone */
    size_t n = 0;

    info_section(ib, "Commandstats");
    for (size_t i = 0; i < RBD_CMDSTATS; i++) {
        const rbd_cmdstat_t *c = &s->stats.cmd[i];
        if (c->cmd == NULL || (c->calls == 0 && c->rejected == 0 && c->failed == 0))
            continue;
        cmdstat_name(c, row[n].name, sizeof(row[n].name));
        row[n++].c = c;
    }
    qsort(row, n, sizeof(row[0]), by_name);
    for (size_t k = 0; k < n; k++) {
        const rbd_cmdstat_t *c = row[k].c;
        info_line(ib, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
                  "failed_calls=%llu", row[k].name, (unsigned long long)c->calls,
                  (unsigned long long)c->usec,
                  c->calls > 0 ? (double)c->usec / (double)c->calls : 0.0,
                  (unsigned long long)c->rejected, (unsigned long long)c->failed);
    }
}

/* Redis's Errorstats: a line per error code replied (its first word). */
static void info_errorstats(server_t *s, info_buf_t *ib)
{
    info_section(ib, "Errorstats");
    for (size_t i = 0; i < s->stats.nerr; i++)
        info_line(ib, "errorstat_%s:count=%llu", s->stats.err[i].code,
                  (unsigned long long)s->stats.err[i].count);
}

/* A filter name (or an error text) made printable for an INFO line. */
static void printable(char *out, size_t cap, const char *s, size_t len)
{
    size_t w = 0;

    for (size_t i = 0; i < len && w + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > 32 && c < 127 && c != ',' && c != '=' && c != '\\')
            out[w++] = (char)c;
        else
            w += (size_t)snprintf(out + w, cap - w, "\\x%02x", c);
    }
    out[w] = '\0';
}

/* One line: a line break would end the field. */
static void info_text(info_buf_t *ib, const char *key, const char *text)
{
    char v[600];

    snprintf(v, sizeof(v), "%s", text);
    for (char *p = v; *p != '\0'; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    info_line(ib, "%s:%s", key, v);
}

/* ring-source, and with etcd its state: connected or not, the revision
 * the table is of and the newest read, how stale (seconds since a quorum
 * last confirmed the table, across restarts), the endpoint, the last
 * error, and the keys skipped (their count, the last one and why). */
static void info_source(info_buf_t *ib, server_t *s)
{
    rbd_source_status_t ss;
    uint64_t now;

    info_line(ib, "ring_source:%s", s->source != NULL ? "etcd" : "local");
    if (s->source == NULL)
        return;
    rbd_source_status(s->source, &ss);
    info_line(ib, "etcd_connected:%d", ss.connected);
    info_line(ib, "etcd_revision_applied:%lld", (long long)ss.applied);
    info_line(ib, "etcd_revision_read:%lld", (long long)ss.revision);
    now = rbd_now_ms();
    info_line(ib, "etcd_stale_seconds:%llu",
              (unsigned long long)(now > ss.confirmed_ms ? now - ss.confirmed_ms : 0) / 1000);
    info_line(ib, "etcd_endpoint:%s", ss.endpoint);
    info_text(ib, "etcd_last_error", ss.error);
    info_line(ib, "etcd_keys_skipped:%zu", ss.skipped);
    info_line(ib, "etcd_last_skipped:%s", ss.skipped_last);
}

static void info_ring(server_t *s, info_buf_t *ib)
{
    rb_ring_stat_t rs;

    if (rb_ring_stat(s->state.seg, &rs) != RB_OK)
        return;
    info_section(ib, "Ring");
    info_line(ib, "ring_mode:%s", rb_ring_mode_name(rb_ring_mode(s->state.ring)));
    info_line(ib, "ring_replicas:%u", rb_ring_replicas(s->state.ring));
    info_line(ib, "ring_nodes:%u", rs.nodes);
    info_line(ib, "ring_nodes_not_up:%u", rs.down);
    info_line(ib, "ring_points:%u", rs.points);
    info_line(ib, "ring_version:%llu", (unsigned long long)rs.version);
    info_line(ib, "ring_bytes_per_copy:%llu", (unsigned long long)rs.bytes);
    info_source(ib, s);
}


/* A layout's name as BF.RESERVE's LAYOUT takes it. */
static const char *layout_name(rb_bloom_layout_t layout)
{
    return layout == RB_BLOOM_STANDARD     ? "standard"
           : layout == RB_BLOOM_REDISBLOOM ? "redisbloom"
                                           : "blocked";
}

/* A Bloom filter's line (the other kinds are counted, not described). */
static int info_filter(const char *fname, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    info_buf_t *ib = arg;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    char name[1100];
    int rc;

    if (kind == NULL || strcmp(kind->name, "bloom") != 0)
        return 0;
    bf = rbd_filters_get(&ib->s->state.filters, ib->s->state.seg, fname, len, &rc);
    if (bf == NULL || rb_bloom_info(bf, &st) != RB_OK)
        return 0;
    printable(name, sizeof(name), fname, len);
    info_line(ib, "filter_%zu:name=%s,layout=%s,kind=%s,capacity=%llu,error_rate=%g,"
              "layers=%u,items=%llu,bytes=%llu,fill=%.4f,est_fpr=%.6f,rotations=%llu",
              ib->filters++, name, layout_name(st.layout),
              (st.flags & RB_BLOOM_AGING) ? "aging" : (st.flags & RB_BLOOM_NONSCALING)
              ? "nonscaling" : "scaling", (unsigned long long)st.capacity, st.error_rate,
              st.layers, (unsigned long long)st.items, (unsigned long long)st.bytes, st.fill,
              st.est_fpr, (unsigned long long)st.rotations);
    return 0;
}

/* Counts the filters of each kind: n[i] for rb_kind(i). */
static int count_kind(const char *fname, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    uint64_t *n = arg;
    const rb_kind_desc_t *k;

    (void)fname;
    (void)len;
    for (size_t i = 0; (k = rb_kind(i)) != NULL && i < INFO_KINDS; i++)
        if (k == kind)
            n[i]++;
    return 0;
}

static void info_bloom(server_t *s, info_buf_t *ib)
{
    uint64_t n[INFO_KINDS] = { 0 }, cursor = 0;
    rb_segment_info_t si;
    const rb_kind_desc_t *k;

    if (rb_segment_info(s->state.seg, &si) != RB_OK)
        return;
    info_section(ib, "Bloom");
    info_line(ib, "filters:%u", si.filters);
    info_line(ib, "max_filters:%u", si.max_filters);
    (void)rb_filter_scan(s->state.seg, &cursor, SIZE_MAX, count_kind, n);
    for (size_t i = 0; (k = rb_kind(i)) != NULL && i < INFO_KINDS; i++)
        info_line(ib, "filters_%s:%llu", k->name, (unsigned long long)n[i]);
    cursor = 0;
    (void)rb_filter_scan(s->state.seg, &cursor, SIZE_MAX, info_filter, ib);
}

/* Redis's lines (a standalone server, no replicas), then filter-source
 * and, with nats, the stream's state: the sequence applied here and the
 * newest seen (their difference: the lag), the first it holds, the
 * snapshots (the newest, how many this host took and stored, the one it
 * last bootstrapped from), how long since the stream
 * last acknowledged a write of this host, the writes in flight and
 * refused, the messages skipped (and of them those naming a filter
 * outside nats-filters), and why it halted if it did. */
static void info_replication(server_t *s, info_buf_t *ib)
{
    rbd_fsource_status_t fs;
    uint64_t now;

    info_section(ib, "Replication");
    info_line(ib, "role:master");
    info_line(ib, "connected_slaves:0");
    info_line(ib, "filter_source:%s", s->fsource != NULL ? "nats" : "local");
    if (s->fsource == NULL)
        return;
    rbd_fsource_status(s->fsource, &fs);
    info_line(ib, "nats_connected:%d", fs.connected);
    info_text(ib, "nats_server", fs.server);
    info_line(ib, "nats_stream:%s", s->cfg.nats_stream);
    info_text(ib, "nats_filters", s->cfg.nats_filters);
    info_line(ib, "nats_ready:%d", fs.ready);
    info_line(ib, "nats_healthy:%d", fs.healthy && fs.ready && !fs.halted);
    info_line(ib, "nats_applied_seq:%llu", (unsigned long long)fs.applied);
    info_line(ib, "nats_stream_last_seq:%llu", (unsigned long long)fs.last_seq);
    info_line(ib, "nats_lag:%llu", (unsigned long long)(fs.last_seq > fs.applied ?
                                                          fs.last_seq - fs.applied : 0));
    now = rbd_now_ms();
    info_line(ib, "nats_last_ack_seconds:%lld", fs.last_ack_ms == 0 ? -1LL :
              (long long)((now > fs.last_ack_ms ? now - fs.last_ack_ms : 0) / 1000));
    info_line(ib, "nats_last_contact_seconds:%lld", fs.last_contact_ms == 0 ? -1LL :
              (long long)((now > fs.last_contact_ms ? now - fs.last_contact_ms : 0) / 1000));
    info_line(ib, "nats_msgs_published:%llu", (unsigned long long)fs.published);
    info_line(ib, "nats_msgs_acked:%llu", (unsigned long long)fs.acked);
    info_line(ib, "nats_writes_inflight:%llu", (unsigned long long)fs.inflight);
    info_line(ib, "nats_writes_refused:%llu", (unsigned long long)fs.refused);
    info_line(ib, "nats_stream_first_seq:%llu", (unsigned long long)fs.first_seq);
    info_line(ib, "nats_snapshot_every:%u", s->cfg.nats_snapshot_every);
    info_line(ib, "nats_snapshot_seq:%llu", (unsigned long long)fs.snap_seq);
    info_line(ib, "nats_snapshots_taken:%llu", (unsigned long long)fs.snaps_taken);
    info_line(ib, "nats_snapshots_stored:%llu", (unsigned long long)fs.snaps_published);
    info_line(ib, "nats_bootstrap_seq:%llu", (unsigned long long)fs.boot_seq);
    info_line(ib, "nats_msgs_skipped:%llu", (unsigned long long)fs.skipped);
    info_line(ib, "nats_msgs_outside_filters:%llu", (unsigned long long)fs.outside);
    info_text(ib, "nats_last_skipped", fs.skipped_last);
    info_text(ib, "nats_last_error", fs.error);
    info_line(ib, "nats_halted:%d", fs.halted);
    info_text(ib, "nats_halt_reason", fs.halt_why);
}

/* Redis's db0 line: every filter, sketch and counter is a key of db 0,
 * none expires; no line without keys, as Redis. */
static void info_keyspace(server_t *s, info_buf_t *ib)
{
    rb_segment_info_t si;

    if (rb_segment_info(s->state.seg, &si) != RB_OK)
        return;
    info_section(ib, "Keyspace");
    if (si.filters > 0)
        info_line(ib, "db0:keys=%u,expires=0,avg_ttl=0", si.filters);
}

/* Whether a section is asked for, as Redis chooses: no argument or
 * "default" the default sections (every one but commandstats), "all" and
 * "everything" every one, else those named. */
static int info_want(rbd_ctx_t *x, const char *section, int in_default)
{
    if (x->argc < 2)
        return in_default;
    for (size_t i = 1; i < x->argc; i++)
        if (rbd_cmd_arg_is(x, i, section) || rbd_cmd_arg_is(x, i, "all") ||
            rbd_cmd_arg_is(x, i, "everything") || (in_default && rbd_cmd_arg_is(x, i, "default")))
            return 1;
    return 0;
}

static void cmd_info(rbd_ctx_t *x)
{
    static const struct {
        const char *name;
        void (*fn)(server_t *s, info_buf_t *ib);   /* writes nothing if it cannot tell */
        int in_default;
    } sections[] = {
        { "server", info_server, 1 }, { "clients", info_clients, 1 },
        { "memory", info_memory, 1 }, { "persistence", info_persistence, 1 },
        { "stats", info_stats, 1 }, { "replication", info_replication, 1 },
        { "cpu", info_cpu, 1 }, { "commandstats", info_commandstats, 0 },
        { "errorstats", info_errorstats, 1 }, { "ring", info_ring, 1 },
        { "bloom", info_bloom, 1 }, { "keyspace", info_keyspace, 1 },
    };
    info_buf_t ib;

    memset(&ib, 0, sizeof(ib));
    ib.s = x->s;
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        if (info_want(x, sections[i].name, sections[i].in_default))
            sections[i].fn(x->s, &ib);
    if (ib.b.oom)
        rbi_resp_error(x->out, "ERR out of memory");
    else
        rbi_resp_verbatim(x->out, ib.b.data ? ib.b.data : "", ib.b.len);
    rbi_buf_free(&ib.b);
}

const rbd_command_t rbd_cmd_info_table[] = {
    RBD_COMMAND("INFO", -1, 0, cmd_info, "server",
                "Returns information and statistics about the server",
                "[section...]"),
    RBD_COMMAND_END,
};
