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
            json_object *a = json_object_new_array();
            cli_json_push(a, cli_json_text(n.name, n.name_len));
            cli_json_line(cli_json_obj("key", cli_json_text(line, (size_t)len), "nodes", a, NULL));
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
            return cli_usage("lookup", "unexpected argument '%s' (one KEY, or -)", argv[i]);
        }
    }
    if (key == NULL)
        return cli_usage("lookup", "missing KEY (-n N wants a KEY too)");
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
        json_object *a = json_object_new_array();
        for (int i = 0; i < rc; i++)
            cli_json_push(a, cli_json_text(nodes[i].name, nodes[i].name_len));
        cli_json_line(cli_json_obj("key", cli_json_text(key, strlen(key)), "nodes", a, NULL));
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
    json_object *out = NULL;
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
        out = json_object_new_array();
    for (int i = 2; i < argc; i++) {
        int r = rb_bloom_contains(bf, argv[i], strlen(argv[i]));
        if (r < 0) {
            json_object_put(out);
            rb_bloom_close(bf);
            rb_segment_close(seg);
            return cli_fail(EX_FAIL, "exists", r);
        }
        all &= r;
        if (cli->json) {
            cli_json_push(out, cli_json_obj("key", cli_json_text(argv[i], strlen(argv[i])),
                                            "present", json_object_new_boolean(r), NULL));
        } else {
            printf("%s\t", r ? "present" : "absent");
            cli_text_str(argv[i], strlen(argv[i]));
            putchar('\n');
        }
    }
    if (cli->json)
        cli_json_line(out);
    rb_bloom_close(bf);
    rb_segment_close(seg);
    return all ? EX_YES : EX_NO;
}

int cmd_nodes(cli_t *cli, int argc, char **argv)
{
    rb_ring_stat_t st;
    rb_segment_t *seg;
    rb_node_t *nodes = NULL;
    json_object *list = NULL;
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
        list = json_object_new_array();
    for (size_t i = 0; i < count; i++) {
        if (cli->json) {
            cli_json_push(list, cli_json_obj(
                "name", cli_json_text(nodes[i].name, nodes[i].name_len),
                "weight", cli_json_num("%u", nodes[i].weight),
                "state", json_object_new_string(rb_node_state_name((rb_node_state_t)nodes[i].state)),
                NULL));
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
        cli_json_line(cli_json_obj("mode", json_object_new_string(rb_ring_mode_name((rb_ring_mode_t)st.mode)),
                                   "version", cli_json_num("%llu", (unsigned long long)st.version),
                                   "points", cli_json_num("%u", st.points), "nodes", list, NULL));
    free(nodes);
    rb_segment_close(seg);
    return EX_YES;
}

typedef struct filters_arg {
    const cli_t *cli;
    const rb_segment_t *seg;
    json_object *rows;   /* --json: the array */
} filters_arg_t;

static void print_row(filters_arg_t *a, const char *name, size_t len, const char *kind,
                      const char *layout, uint64_t items, uint64_t capacity, uint64_t bytes,
                      unsigned layers, double error)
{
    if (a->cli->json) {
        cli_json_push(a->rows, cli_json_obj(
            "name", cli_json_text(name, len), "kind", json_object_new_string(kind),
            "layout", json_object_new_string(layout),
            "items", cli_json_num("%llu", (unsigned long long)items),
            "capacity", cli_json_num("%llu", (unsigned long long)capacity),
            "bytes", cli_json_num("%llu", (unsigned long long)bytes),
            "layers", cli_json_num("%u", layers), "error_rate", cli_json_num("%.17g", error),
            NULL));
    } else {
        cli_text_str(name, len);
        printf("\t%s%s%s\t%llu\t%llu\t%llu\t%u\t%g\n", kind, *layout ? " " : "", layout,
               (unsigned long long)items, (unsigned long long)capacity,
               (unsigned long long)bytes, layers, error);
    }
}

/* One filter's row, from its kind's summary (the kind table). */
static int print_filter(const char *name, size_t len, const rb_kind_desc_t *kind, void *arg)
{
    filters_arg_t *a = arg;
    rb_filter_summary_t r;

    (void)kind;
    if (rb_filter_summary(a->seg, name, len, &r) == RB_OK)
        print_row(a, name, len, r.form, r.layout, r.items, r.capacity, r.bytes, r.layers,
                  r.error_rate);
    return 0;   /* deleted meanwhile, say */
}

/* filters: every filter of the segment, from shared memory; a header line
 * (text), or one JSON array. */
int cmd_filters(cli_t *cli, int argc, char **argv)
{
    filters_arg_t a = { cli, NULL, NULL };
    uint64_t cursor = 0;
    rb_segment_t *seg;
    int rc, ex;

    (void)argc;
    (void)argv;
    if ((ex = cli_attach(cli, &seg)) != EX_YES)
        return ex;
    a.seg = seg;
    if (cli->json)
        a.rows = json_object_new_array();
    else
        printf("NAME\tKIND\tITEMS\tCAPACITY\tBYTES\tLAYERS\tERROR\n");
    rc = rb_filter_scan(seg, &cursor, SIZE_MAX, print_filter, &a);
    if (cli->json)
        cli_json_line(a.rows);
    rb_segment_close(seg);
    return rc < 0 ? cli_fail(EX_FAIL, "filters", rc) : EX_YES;
}
