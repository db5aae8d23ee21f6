/*
 * metrics.c - `metrics`: the instance's figures in Prometheus's text
 * exposition format (version 0.0.4), for node_exporter's textfile
 * collector or any scraper that reads a file.
 *
 * Three sources: the daemon's INFO (commands, errors, clients, log,
 * fsyncs, snapshots, memory) through info.c's walk, and from shared memory
 * the ring (rb_ring_stat) and every filter (rb_bloom_info, as `filters`
 * reads them).  Every series carries ringbloom_instance="NAME" (the
 * daemon's instance name), so the files of several instances on one host
 * can be collected side by side; it is not "instance", which Prometheus
 * gives the scraped target.  Names are ringbloom_*, in base units
 * (seconds, bytes, ratios), counters end in _total.  Every label value is
 * out.c's cli_escape of its bytes (a filter name with its length: it may
 * hold NULs), so two filters never make one series - node_exporter's
 * textfile collector drops a file that has two alike.
 *
 * The text is built in memory and written only when complete: on any
 * failure nothing reaches stdout and the exit status says why.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* How an INFO field becomes a sample.  NUM: the value, times scale.
 * OK: 1 if the value is "ok", else 0.  LABEL: 1, the value as the label
 * named by label. */
enum { NUM, OK, LABEL };

static const struct info_metric {
    const char *key;      /* INFO's field */
    const char *name;     /* the metric, after "ringbloom_" */
    const char *type;     /* "counter" (name ends in _total) or "gauge" */
    int how;              /* NUM, OK, LABEL */
    double scale;         /* NUM: to base units */
    const char *label;    /* LABEL: its name */
    const char *help;
} info_metrics[] = {
    { "ringbloom_version", "build_info", "gauge", LABEL, 1, "version",
      "Always 1; the daemon's version as a label." },
    { "uptime_in_seconds", "uptime_seconds", "gauge", NUM, 1, NULL,
      "Seconds since the daemon started." },
    { "connected_clients", "connected_clients", "gauge", NUM, 1, NULL,
      "Client connections open now." },
    { "max_clients", "max_clients", "gauge", NUM, 1, NULL,
      "Most client connections the daemon accepts (max-clients)." },
    { "reserved_writer_clients", "reserved_writer_clients", "gauge", NUM, 1, NULL,
      "Connections kept for writers within max-clients." },
    { "max_open_files", "max_open_files", "gauge", NUM, 1, NULL,
      "The daemon's file descriptor limit." },
    { "rejected_connections", "rejected_connections_total", "counter", NUM, 1, NULL,
      "Connections refused because the daemon was at max-clients." },
    { "client_buffers_bytes", "client_buffers_bytes", "gauge", NUM, 1, NULL,
      "Bytes of the clients' request and reply buffers." },
    { "max_client_memory", "max_client_memory_bytes", "gauge", NUM, 1, NULL,
      "Most bytes all client buffers may hold (max-client-memory)." },
    { "evicted_clients", "evicted_clients_total", "counter", NUM, 1, NULL,
      "Clients closed to keep buffers under max-client-memory." },
    { "output_limit_clients", "output_limit_clients_total", "counter", NUM, 1, NULL,
      "Clients closed for exceeding the output buffer limit." },
    { "segment_used_bytes", "segment_used_bytes", "gauge", NUM, 1, NULL,
      "Bytes of the shared-memory segment in use (INFO used_memory)." },
    { "segment_committed_bytes", "segment_committed_bytes", "gauge", NUM, 1, NULL,
      "Bytes the shared-memory segment spans now (INFO ringbloom_segment_bytes)." },
    { "used_memory_rss", "segment_resident_bytes", "gauge", NUM, 1, NULL,
      "Bytes of the segment's object in memory: its allocated pages (freed ones are given "
      "back)." },
    { "mem_fragmentation_ratio", "segment_fragmentation_ratio", "gauge", NUM, 1, NULL,
      "segment_resident_bytes / segment_used_bytes, as Redis's mem_fragmentation_ratio "
      "(0: nothing in use)." },
    { "ringbloom_free_bytes", "segment_free_bytes", "gauge", NUM, 1, NULL,
      "Bytes the segment spans that no live data uses." },
    { "ringbloom_unreleased_bytes", "segment_unreleased_bytes", "gauge", NUM, 1, NULL,
      "Bytes freed while a snapshot was written, not yet given back to the system." },
    { "segment_max_bytes", "segment_max_bytes", "gauge", NUM, 1, NULL,
      "Bytes the shared-memory segment may grow to." },
    { "segment_generation", "segment_generation", "gauge", NUM, 1, NULL,
      "The segment's generation (grows when the segment is replaced)." },
    { "segment_linked", "segment_linked", "gauge", NUM, 1, NULL,
      "1 if the segment is reachable under its name in /dev/shm." },
    { "segment_republished", "segment_republished_total", "counter", NUM, 1, NULL,
      "Times the state was republished because the segment's name was lost." },
    { "segment_shrinks", "segment_shrinks_total", "counter", NUM, 1, NULL,
      "Times the segment was rebuilt without its free tail (segment-shrink-bytes)." },
    { "segment_huge_bytes", "segment_huge_bytes", "gauge", NUM, 1, NULL,
      "Bytes of the segment backed by huge pages." },
    { "aof_enabled", "log_enabled", "gauge", NUM, 1, NULL,
      "1 if the daemon writes its append log (appendonly yes), 0 if not (INFO aof_enabled)." },
    { "appendfsync", "log_fsync_policy", "gauge", LABEL, 1, "policy",
      "Always 1; the log's fsync policy (appendfsync) as a label." },
    { "log_bytes", "log_bytes", "gauge", NUM, 1, NULL,
      "Bytes of the append log since the last snapshot." },
    { "rdb_changes_since_last_save", "changes_since_last_save", "gauge", NUM, 1, NULL,
      "Changes logged since the last snapshot." },
    { "rdb_last_save_time", "last_save_timestamp_seconds", "gauge", NUM, 1, NULL,
      "Unix time of the last snapshot (0: none since start)." },
    { "rdb_last_bgsave_status", "last_save_ok", "gauge", OK, 1, NULL,
      "1 if the last snapshot succeeded." },
    { "snapshots", "snapshots_total", "counter", NUM, 1, NULL,
      "Snapshots written since the daemon started." },
    { "rdb_bgsave_in_progress", "snapshot_in_progress", "gauge", NUM, 1, NULL,
      "1 while a snapshot is being written." },
    { "last_snapshot_ms", "last_snapshot_duration_seconds", "gauge", NUM, 1e-3, NULL,
      "Seconds the last snapshot took, freeze to install." },
    { "last_snapshot_loop_us", "last_snapshot_loop_seconds", "gauge", NUM, 1e-6, NULL,
      "Seconds of the last snapshot spent in the event loop." },
    { "last_snapshot_cow_bytes", "last_snapshot_cow_bytes", "gauge", NUM, 1, NULL,
      "Bytes the writer copied on write for the last snapshot." },
    { "last_snapshot_file_bytes", "last_snapshot_file_bytes", "gauge", NUM, 1, NULL,
      "Bytes the last snapshot's file takes on disk (its holes take none)." },
    { "log_fsyncs", "log_fsyncs_total", "counter", NUM, 1, NULL,
      "fsyncs of the append log." },
    { "log_write_errors", "log_write_errors_total", "counter", NUM, 1, NULL,
      "Failed writes or fsyncs of the append log." },
    { "log_write_ok", "log_write_ok", "gauge", NUM, 1, NULL,
      "1 if the daemon accepts changes (its log is writable)." },
    { "total_connections_received", "connections_received_total", "counter", NUM, 1, NULL,
      "Client connections accepted." },
    { "total_commands_processed", "commands_processed_total", "counter", NUM, 1, NULL,
      "Commands processed." },
    { "denied_commands", "denied_commands_total", "counter", NUM, 1, NULL,
      "Commands refused for lack of permission." },
    { "protocol_errors", "protocol_errors_total", "counter", NUM, 1, NULL,
      "Requests that broke the RESP protocol." },
    { "client_timeouts", "client_timeouts_total", "counter", NUM, 1, NULL,
      "Clients closed for being idle or slow too long." },
    { "bf_new_items", "bloom_new_items_total", "counter", NUM, 1, NULL,
      "Keys added to a filter that were not in it before." },
    { "ring_changes", "ring_changes_total", "counter", NUM, 1, NULL,
      "Changes to the ring (node add, remove, weight, state, mode, slots)." },
    { "max_filters", "max_filters", "gauge", NUM, 1, NULL,
      "Filters the segment's directory holds at most." },
    /* filter-source nats only (INFO replication): absent otherwise. */
    { "nats_applied_seq", "replication_applied_sequence", "gauge", NUM, 1, NULL,
      "The last message of the NATS stream this host applied." },
    { "nats_lag", "replication_lag_messages", "gauge", NUM, 1, NULL,
      "Messages of the stream seen here and not yet applied." },
    { "nats_last_ack_seconds", "replication_last_ack_age_seconds", "gauge", NUM, 1, NULL,
      "Seconds since the stream last acknowledged a write of this host (-1: none yet)." },
    { "nats_last_contact_seconds", "replication_stream_contact_age_seconds", "gauge", NUM, 1,
      NULL, "Seconds since the stream last answered this host (an ack, or its state asked "
      "for every 2 s when idle): how stale its replicated filters may be (-1: never)." },
    { "nats_healthy", "replication_healthy", "gauge", NUM, 1, NULL,
      "1 if writes to replicated filters go through (stream followed, quorum, not halted)." },
    { "nats_writes_refused", "replication_writes_refused_total", "counter", NUM, 1, NULL,
      "Writes to replicated filters refused (no quorum, not yet following, not replicated)." },
    { "nats_msgs_skipped", "replication_messages_skipped_total", "counter", NUM, 1, NULL,
      "Stream messages no host of this version can apply, or may (outside nats-filters, "
      "past max-command-bytes), skipped." },
    { "nats_msgs_outside_filters", "replication_messages_outside_filters_total", "counter", NUM,
      1, NULL, "Stream messages skipped because a record named a filter outside nats-filters "
      "(forged, or a host with other nats-filters)." },
    { "nats_snapshot_seq", "replication_snapshot_sequence", "gauge", NUM, 1, NULL,
      "The stream sequence the newest snapshot stored or bootstrapped from covers." },
    { "nats_bootstrap_seq", "replication_bootstrap_sequence", "gauge", NUM, 1, NULL,
      "The snapshot this host last bootstrapped from (0: none)." },
};

#define N_INFO (sizeof(info_metrics) / sizeof(info_metrics[0]))

#define MAX_KINDS 16   /* kinds counted (the kind table has fewer) */

/* A filter's figures and the length of its name (a name may hold NULs). */
typedef struct filter_fig {
    rb_bloom_stat_t st;
    size_t name_len;
} filter_fig_t;

/* The sources, gathered before anything is printed. */
typedef struct gathered {
    const char *info[N_INFO];     /* each row's value in INFO's text, or NULL */
    const char *instance;         /* INFO's instance, or --instance */
    rb_ring_stat_t ring;
    filter_fig_t *filters;        /* name, figures: the Bloom filters */
    size_t nfilters, cap;
    uint64_t kinds[MAX_KINDS];    /* filters of kind rb_kind(i), every kind */
    const rb_segment_t *seg;
} gathered_t;

static void take_field(const char *section, const char *key, const char *value, void *arg)
{
    gathered_t *g = arg;

    (void)section;
    if (key == NULL)
        return;
    if (strcmp(key, "instance") == 0)
        g->instance = value;
    for (size_t i = 0; i < N_INFO; i++)
        if (strcmp(key, info_metrics[i].key) == 0)
            g->info[i] = value;
}

/* rb_filter_scan's callback: the filter counted under its kind and, a
 * Bloom filter, its figures into g under its name as listed.  A filter
 * gone meanwhile is left out; -1 (out of memory) stops the walk. */
static int take_filter(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    gathered_t *g = arg;
    const rb_kind_desc_t *k;
    rb_bloom_stat_t *st;
    rb_bloom_t *bf;
    int rc;

    for (size_t i = 0; i < MAX_KINDS && (k = rb_kind(i)) != NULL; i++)
        if (k == kind)
            g->kinds[i]++;
    if (kind == NULL || strcmp(kind->name, "bloom") != 0)
        return 0;
    if (g->nfilters == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        filter_fig_t *more = realloc(g->filters, cap * sizeof(*more));
        if (more == NULL)
            return -1;
        g->filters = more;
        g->cap = cap;
    }
    if (rb_bloom_open(g->seg, name, len, &bf) != RB_OK)
        return 0;
    st = &g->filters[g->nfilters].st;
    rc = rb_bloom_info(bf, st);
    rb_bloom_close(bf);
    if (rc == RB_OK) {
        if (len > RB_FILTER_NAME_MAX)
            len = RB_FILTER_NAME_MAX;
        memcpy(st->name, name, len);
        st->name[len] = '\0';
        g->filters[g->nfilters++].name_len = len;
    }
    return 0;
}

/* A family's # HELP and # TYPE lines. */
static void family(FILE *m, const char *name, const char *type, const char *help)
{
    fprintf(m, "# HELP ringbloom_%s %s\n# TYPE ringbloom_%s %s\n", name, help, name, type);
}

/* A sample: sample_open prints its name and the instance label, label
 * one more label, value_* close the labels and print the value. */
static void sample_open(FILE *m, const gathered_t *g, const char *name)
{
    fprintf(m, "ringbloom_%s{ringbloom_instance=", name);
    cli_escape(m, g->instance, strlen(g->instance), 1);
}

/* One more label, its value value[0..len) (cli_escape's text, so two
 * names never give one value). */
static void label(FILE *m, const char *name, const char *value, size_t len)
{
    fprintf(m, ",%s=", name);
    cli_escape(m, value, len, 1);
}

static void value_u64(FILE *m, unsigned long long v)
{
    fprintf(m, "} %llu\n", v);
}

static void value_dbl(FILE *m, double v)
{
    fprintf(m, "} %.17g\n", v);
}

static void print_info(FILE *m, const gathered_t *g)
{
    for (size_t i = 0; i < N_INFO; i++) {
        const struct info_metric *im = &info_metrics[i];
        const char *v = g->info[i];
        if (v == NULL || (im->how == NUM && !cli_info_is_number(im->key, v)))
            continue;   /* a field this daemon does not give */
        family(m, im->name, im->type, im->help);
        sample_open(m, g, im->name);
        if (im->how == LABEL)
            label(m, im->label, v, strlen(v));
        if (im->how == NUM && im->scale == 1)
            fprintf(m, "} %s\n", v);    /* as INFO wrote it: no rounding */
        else if (im->how == NUM)
            fprintf(m, "} %.12g\n", strtod(v, NULL) * im->scale);
        else
            value_u64(m, im->how == LABEL || strcmp(v, "ok") == 0);
    }
}

static void print_ring(FILE *m, const gathered_t *g)
{
    const rb_ring_stat_t *r = &g->ring;
    const struct { const char *name, *help; unsigned long long v; } rows[] = {
        { "ring_nodes", "Nodes in the ring.", r->nodes },
        { "ring_nodes_not_up", "Nodes down or draining (RING.DOWN, RING.DRAIN).", r->down },
        { "ring_points", "Points (virtual nodes) on the ring.", r->points },
        { "ring_replicas", "Points per unit of weight.", r->replicas },
        { "ring_version", "The ring's publish counter (changes on every publish).", r->version },
        { "ring_bytes", "Bytes of one copy of the ring's table.", r->bytes },
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        family(m, rows[i].name, "gauge", rows[i].help);
        sample_open(m, g, rows[i].name);
        value_u64(m, rows[i].v);
    }
    family(m, "ring_mode", "gauge", "Always 1; the ring's hashing mode as a label.");
    sample_open(m, g, "ring_mode");
    label(m, "mode", rb_ring_mode_name((rb_ring_mode_t)r->mode),
          strlen(rb_ring_mode_name((rb_ring_mode_t)r->mode)));
    value_u64(m, 1);
}

/* The per-filter families: each row prints one field of every filter's
 * figures, at offset off, of kind U64, U32 or DBL. */
enum { U64, U32, DBL };

static const struct filter_metric {
    const char *name, *type, *help;
    size_t off;
    int kind;
} filter_metrics[] = {
    { "filter_items", "gauge", "Keys added that were new (all layers).",
      offsetof(rb_bloom_stat_t, items), U64 },
    { "filter_capacity", "gauge", "Keys the filter's layers were sized for.",
      offsetof(rb_bloom_stat_t, capacity), U64 },
    { "filter_bytes", "gauge", "Bytes the filter holds in the segment.",
      offsetof(rb_bloom_stat_t, memory), U64 },
    { "filter_layers", "gauge", "Layers (scaling) or generations (aging).",
      offsetof(rb_bloom_stat_t, layers), U32 },
    { "filter_fill_ratio", "gauge", "Fraction of bits set, predicted from the items.",
      offsetof(rb_bloom_stat_t, fill), DBL },
    { "filter_estimated_false_positive_ratio", "gauge",
      "False-positive rate predicted from the items.", offsetof(rb_bloom_stat_t, est_fpr), DBL },
    { "filter_target_false_positive_ratio", "gauge",
      "The error rate the filter was reserved with.", offsetof(rb_bloom_stat_t, error_rate), DBL },
    { "filter_rotations_total", "counter", "Generation rotations (aging filters).",
      offsetof(rb_bloom_stat_t, rotations), U64 },
};

static void print_filters(FILE *m, const gathered_t *g)
{
    const rb_kind_desc_t *k;

    family(m, "filters", "gauge", "Bloom filters in the segment.");
    sample_open(m, g, "filters");
    value_u64(m, g->nfilters);
    family(m, "filters_by_kind", "gauge", "Filters in the segment, by kind (the kind table).");
    for (size_t i = 0; i < MAX_KINDS && (k = rb_kind(i)) != NULL; i++) {
        sample_open(m, g, "filters_by_kind");
        label(m, "kind", k->name, strlen(k->name));
        value_u64(m, g->kinds[i]);
    }
    if (g->nfilters == 0)
        return;
    for (size_t r = 0; r < sizeof(filter_metrics) / sizeof(filter_metrics[0]); r++) {
        const struct filter_metric *fm = &filter_metrics[r];
        family(m, fm->name, fm->type, fm->help);
        for (size_t i = 0; i < g->nfilters; i++) {
            const char *f = (const char *)&g->filters[i].st + fm->off;
            sample_open(m, g, fm->name);
            label(m, "filter", g->filters[i].st.name, g->filters[i].name_len);
            if (fm->kind == U64)
                value_u64(m, *(const uint64_t *)(const void *)f);
            else if (fm->kind == U32)
                value_u64(m, *(const uint32_t *)(const void *)f);
            else
                value_dbl(m, *(const double *)(const void *)f);
        }
    }
    family(m, "filter_info", "gauge", "Always 1; the filter's kind and layout as labels.");
    for (size_t i = 0; i < g->nfilters; i++) {
        const rb_bloom_stat_t *st = &g->filters[i].st;
        const char *kind = (st->flags & RB_BLOOM_AGING) ? "aging"
                         : (st->flags & RB_BLOOM_NONSCALING) ? "non-scaling" : "scaling";
        sample_open(m, g, "filter_info");
        label(m, "filter", st->name, g->filters[i].name_len);
        label(m, "kind", kind, strlen(kind));
        label(m, "layout", cli_layout_name(st->layout), strlen(cli_layout_name(st->layout)));
        value_u64(m, 1);
    }
}

/* Gathers INFO and the segment's figures into g; EX_YES, or the exit code
 * after saying why on stderr.  info is INFO's text, which g points into. */
static int gather(cli_t *cli, gathered_t *g, char *info, size_t cap)
{
    rb_segment_t *seg;
    uint64_t cursor = 0;
    int ex, rc;

    if ((ex = cli_info_fetch(cli, NULL, info, cap)) != EX_YES)
        return ex;
    g->instance = cli->instance;
    cli_info_each(info, take_field, g);
    if ((ex = cli_attach(cli, &seg)) != EX_YES)
        return ex;
    g->seg = seg;
    rc = rb_ring_stat(seg, &g->ring);
    if (rc == RB_OK && rb_filter_scan(seg, &cursor, SIZE_MAX, take_filter, g) != 0)
        rc = RB_ENOMEM;
    rb_segment_close(seg);
    return rc == RB_OK ? EX_YES : cli_fail(EX_FAIL, "metrics", rc);
}

int cmd_metrics(cli_t *cli, int argc, char **argv)
{
    static char info[1 << 20];
    gathered_t g;
    char *text = NULL;
    size_t len = 0;
    FILE *m;
    int ex;

    (void)argc;
    (void)argv;
    memset(&g, 0, sizeof(g));
    if ((ex = gather(cli, &g, info, sizeof(info))) == EX_YES) {
        if ((m = open_memstream(&text, &len)) == NULL) {
            ex = cli_fail(EX_FAIL, "metrics", RB_ENOMEM);
        } else {
            print_info(m, &g);
            print_ring(m, &g);
            print_filters(m, &g);
            int bad = ferror(m);
            if (fclose(m) != 0 || bad)
                ex = cli_fail(EX_FAIL, "metrics", RB_ENOMEM);
        }
    }
    if (ex == EX_YES && (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)) {
        fprintf(stderr, "ringbloom: metrics: writing: %s\n", strerror(errno));
        ex = EX_FAIL;
    }
    free(text);
    free(g.filters);
    return ex;
}
