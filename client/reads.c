/*
 * reads.c - the subcommands answered from shared memory, with no round
 * trip to the daemon: lookup (one key, N distinct nodes, or a stream of
 * keys), exists, nodes.  The segment is attached by cli_attach, which
 * trusts only the daemon's user.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

int cli_lookup_stream(const cli_t *cli, rb_segment_t *seg)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int ex = EX_YES;

    while ((len = getline(&line, &cap, stdin)) >= 0) {
        rb_node_t n;
        int rc;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        rc = rb_ring_lookup(seg, line, (size_t)len, &n);
        if (rc != RB_OK) {
            ex = cli_fail(rc == RB_EEMPTY ? EX_NO : EX_FAIL, "lookup", rc);
            break;
        }
        if (cli->json) {
            printf("{\"key\":");
            cli_json_str(line, (size_t)len);
            printf(",\"nodes\":[");
            cli_json_str(n.name, n.name_len);
            printf("]}\n");
        } else {
            printf("%s\t", line);
            cli_text_str(n.name, n.name_len);
            putchar('\n');
        }
    }
    free(line);
    rb_segment_close(seg);
    return ex;
}

int cmd_lookup(cli_t *cli, int argc, char **argv)
{
    uint32_t n = 1;
    rb_segment_t *seg;
    rb_node_t *nodes;
    const char *key = NULL;
    int rc, ex;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            if (cli_parse_u32(argv[++i], &n) != 0 || n == 0 || n > RB_RING_MAX_NODES) {
                fprintf(stderr, "ringbloom: -n wants a number in [1, %d]\n", RB_RING_MAX_NODES);
                return EX_USAGE;
            }
        } else if (key == NULL) {
            key = argv[i];
        } else {
            return CLI_USAGE;
        }
    }
    if (key == NULL)
        return CLI_USAGE;
    if ((ex = cli_attach(cli, &seg)) != EX_YES)
        return ex;
    if (strcmp(key, "-") == 0)
        return cli_lookup_stream(cli, seg);
    nodes = calloc(n, sizeof(*nodes));
    if (nodes == NULL) {
        rb_segment_close(seg);
        return cli_fail(EX_FAIL, "lookup", RB_ENOMEM);
    }
    rc = rb_ring_lookup_n(seg, key, strlen(key), nodes, n);
    if (rc < 0) {
        free(nodes);
        rb_segment_close(seg);
        return cli_fail(rc == RB_EEMPTY ? EX_NO : EX_FAIL, "lookup", rc);
    }
    if (cli->json) {
        printf("{\"key\":");
        cli_json_str(key, strlen(key));
        printf(",\"nodes\":[");
        for (int i = 0; i < rc; i++) {
            if (i)
                putchar(',');
            cli_json_str(nodes[i].name, nodes[i].name_len);
        }
        printf("]}\n");
    } else {
        for (int i = 0; i < rc; i++) {
            cli_text_str(nodes[i].name, nodes[i].name_len);
            putchar('\n');
        }
    }
    free(nodes);
    rb_segment_close(seg);
    return EX_YES;
}

int cmd_exists(cli_t *cli, int argc, char **argv)
{
    rb_segment_t *seg;
    rb_bloom_t *bf;
    int rc, ex, all = 1;

    if ((ex = cli_attach(cli, &seg)) != EX_YES)
        return ex;
    rc = rb_bloom_open(seg, argv[1], strlen(argv[1]), &bf);
    if (rc != RB_OK) {
        rb_segment_close(seg);
        if (rc == RB_ENOENT) {
            fprintf(stderr, "ringbloom: no filter '%s'\n", argv[1]);
            return EX_NO;
        }
        return cli_fail(EX_FAIL, "exists", rc);
    }
    if (cli->json)
        putchar('[');
    for (int i = 2; i < argc; i++) {
        int r = rb_bloom_contains(bf, argv[i], strlen(argv[i]));
        if (r < 0) {
            rb_bloom_close(bf);
            rb_segment_close(seg);
            return cli_fail(EX_FAIL, "exists", r);
        }
        all &= r;
        if (cli->json) {
            printf("%s{\"key\":", i > 2 ? "," : "");
            cli_json_str(argv[i], strlen(argv[i]));
            printf(",\"present\":%s}", r ? "true" : "false");
        } else {
            printf("%s\t", r ? "present" : "absent");
            cli_text_str(argv[i], strlen(argv[i]));
            putchar('\n');
        }
    }
    if (cli->json)
        printf("]\n");
    rb_bloom_close(bf);
    rb_segment_close(seg);
    return all ? EX_YES : EX_NO;
}

int cmd_nodes(cli_t *cli, int argc, char **argv)
{
    rb_ring_stat_t st;
    rb_segment_t *seg;
    rb_node_t *nodes = NULL;
    size_t count = 0;
    int rc, ex;

    (void)argc;
    (void)argv;
    if ((ex = cli_attach(cli, &seg)) != EX_YES)
        return ex;
    rc = rb_ring_stat(seg, &st);
    if (rc == RB_OK) {
        nodes = calloc(st.nodes ? st.nodes : 1, sizeof(*nodes));
        rc = nodes ? rb_ring_nodes(seg, nodes, st.nodes, &count) : RB_ENOMEM;
    }
    if (rc != RB_OK) {
        free(nodes);
        rb_segment_close(seg);
        return cli_fail(EX_FAIL, "nodes", rc);
    }
    if (count > st.nodes)
        count = st.nodes;     /* changed meanwhile: print what we have */
    if (cli->json)
        printf("{\"mode\":\"%s\",\"version\":%llu,\"points\":%u,\"nodes\":[",
               rb_ring_mode_name((rb_ring_mode_t)st.mode), (unsigned long long)st.version,
               st.points);
    for (size_t i = 0; i < count; i++) {
        if (cli->json) {
            printf("%s{\"name\":", i ? "," : "");
            cli_json_str(nodes[i].name, nodes[i].name_len);
            printf(",\"weight\":%u,\"state\":\"%s\"}", nodes[i].weight,
                   rb_node_state_name((rb_node_state_t)nodes[i].state));
        } else {
            /* A node that is not up says so in a third column. */
            cli_text_str(nodes[i].name, nodes[i].name_len);
            printf("\t%u", nodes[i].weight);
            if (nodes[i].state != RB_NODE_UP)
                printf("\t%s", rb_node_state_name((rb_node_state_t)nodes[i].state));
            printf("\n");
        }
    }
    if (cli->json)
        printf("]}\n");
    free(nodes);
    rb_segment_close(seg);
    return EX_YES;
}

typedef struct filters_arg {
    const cli_t *cli;
    const rb_segment_t *seg;
    int n;
} filters_arg_t;

/* What kind of filter st is, in words: "scaling", "non-scaling" or
 * "aging", then the layout. */
static const char *filter_kind(const rb_bloom_stat_t *st)
{
    if (st->flags & RB_BLOOM_AGING)
        return "aging";
    return (st->flags & RB_BLOOM_NONSCALING) ? "non-scaling" : "scaling";
}

/* One row of a filter of another kind than the Bloom filter's: its kind,
 * items, capacity (0: none), bytes, layers and error rate. */
typedef struct other_row {
    const char *kind;
    uint64_t items, capacity, bytes;
    unsigned layers;
    double error;
} other_row_t;

/* The row of the HyperLogLog counter, count-min sketch, counting Bloom
 * filter or cuckoo filter name; 0 if it is none of them (or was deleted meanwhile). */
static int other_kind(const rb_segment_t *seg, const char *name, size_t len, other_row_t *r)
{
    rb_cms_info_t cm;
    rb_cuckoo_info_t ci;
    rb_cuckoo_t *cf;
    rb_cbf_info_t bi;
    rb_cbf_t *cb;
    rb_hll_t *h;

    if (rb_hll_open(seg, name, len, &h) == RB_OK) {
        uint64_t card = 0;
        int ok = rb_hll_card(h, &card) == RB_OK;
        rb_hll_close(h);
        /* Redis's standard error: 1.04 / sqrt(16384 registers). */
        *r = (other_row_t){ "hyperloglog", card, 0, RB_HLL_REGISTERS, 1, 1.04 / 128 };
        return ok;
    }
    if (rb_cms_info(seg, name, len, &cm) == RB_OK) {
        *r = (other_row_t){ cm.small ? "count-min 4-bit" : "count-min", cm.count, 0, cm.bytes,
                            cm.depth, 2.0 / cm.width };
        return 1;
    }
    if (rb_cbf_open(seg, name, len, &cb) == RB_OK) {
        if (rb_cbf_info(cb, &bi) == RB_OK)
            *r = (other_row_t){ bi.counter_bits == 4 ? "counting 4-bit" : "counting 8-bit",
                                bi.items, bi.capacity, bi.bytes, 1,
                                rb_cbf_fpr_formula(bi.counters, bi.k, bi.capacity) };
        rb_cbf_close(cb);
        return r->kind != NULL;
    }
    if (rb_cuckoo_open(seg, name, len, &cf) != RB_OK)
        return 0;
    if (rb_cuckoo_info(cf, &ci) == RB_OK)
        *r = (other_row_t){ "cuckoo", ci.items, ci.capacity, ci.bytes, ci.layers,
                            ci.layers * rb_cuckoo_fpr_formula(ci.fp_bits, ci.bucket_size, 1.0) };
    rb_cuckoo_close(cf);
    return r->kind != NULL;
}

static void print_row(filters_arg_t *a, const char *name, size_t len, const char *kind,
                      const char *layout, uint64_t items, uint64_t capacity, uint64_t bytes,
                      unsigned layers, double error)
{
    if (a->cli->json) {
        printf("%s{\"name\":", a->n ? "," : "");
        cli_json_str(name, len);
        printf(",\"kind\":\"%s\",\"layout\":\"%s\",\"items\":%llu,\"capacity\":%llu,"
               "\"bytes\":%llu,\"layers\":%u,\"error_rate\":%.17g}", kind, layout,
               (unsigned long long)items, (unsigned long long)capacity,
               (unsigned long long)bytes, layers, error);
    } else {
        cli_text_str(name, len);
        printf("\t%s%s%s\t%llu\t%llu\t%llu\t%u\t%g\n", kind, *layout ? " " : "", layout,
               (unsigned long long)items, (unsigned long long)capacity,
               (unsigned long long)bytes, layers, error);
    }
    a->n++;
}

static int print_filter(const char *name, size_t len, void *arg)
{
    filters_arg_t *a = arg;
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    other_row_t r = { NULL, 0, 0, 0, 0, 0 };
    int rc = rb_bloom_open(a->seg, name, len, &bf);

    if (rc == RB_EWRONGTYPE && other_kind(a->seg, name, len, &r))
        print_row(a, name, len, r.kind, "", r.items, r.capacity, r.bytes, r.layers, r.error);
    if (rc != RB_OK)
        return 0;   /* another kind, or deleted meanwhile */
    if (rb_bloom_info(bf, &st) == RB_OK)
        print_row(a, name, len, filter_kind(&st), cli_layout_name(st.layout), st.items,
                  st.capacity, st.memory, st.layers, st.error_rate);
    rb_bloom_close(bf);
    return 0;
}

/* filters: every filter of the segment, from shared memory; a header line
 * (text), or one JSON array. */
int cmd_filters(cli_t *cli, int argc, char **argv)
{
    filters_arg_t a = { cli, NULL, 0 };
    rb_segment_t *seg;
    int rc, ex;

    (void)argc;
    (void)argv;
    if ((ex = cli_attach(cli, &seg)) != EX_YES)
        return ex;
    a.seg = seg;
    if (cli->json)
        printf("[");
    else
        printf("NAME\tKIND\tITEMS\tCAPACITY\tBYTES\tLAYERS\tERROR\n");
    rc = rb_bloom_list(seg, print_filter, &a);
    if (cli->json)
        printf("]\n");
    rb_segment_close(seg);
    return rc < 0 ? cli_fail(EX_FAIL, "filters", rc) : EX_YES;
}
