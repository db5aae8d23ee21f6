/*
 * ring_offline.c - the offline `ring` subcommand: builds a ring in a
 * private segment from a node file and maps standard input through it with
 * the lookup stream of reads.c - the same code readers run on the daemon's
 * segment, with no daemon.  The node file has one NAME [WEIGHT] per line
 * (blank lines and lines whose first word starts with '#' are skipped);
 * for ketama and nginx, in the other side's server order.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_ring(cli_t *cli, int argc, char **argv)
{
    rb_ring_mode_t mode = RB_RING_XXH3;
    uint32_t replicas = 0;
    const char *nodes_path = NULL;
    rb_segment_t *seg = NULL;
    rb_ring_t *ring;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned lineno = 0;
    FILE *f;
    int rc, ex = EX_YES;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
            i++;
            if (rb_ring_mode_parse(argv[i], strlen(argv[i]), &mode) != RB_OK) {
                fprintf(stderr, "ringbloom: unknown mode '%s' (xxh3, ketama, nginx, seed, maglev, slots)\n",
                        argv[i]);
                return EX_USAGE;
            }
        } else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
            nodes_path = argv[++i];
        } else if (strcmp(argv[i], "--replicas") == 0 && i + 1 < argc) {
            if (cli_parse_u32(argv[++i], &replicas) != 0 || replicas == 0 ||
                replicas > RB_RING_MAX_REPLICAS) {
                fprintf(stderr, "ringbloom: --replicas wants a number in [1, %d]\n",
                        RB_RING_MAX_REPLICAS);
                return EX_USAGE;
            }
        } else {
            return cli_usage("ring", "unexpected argument '%s'%s", argv[i],
                             i + 1 == argc && argv[i][0] == '-' ? " (it wants a value)" : "");
        }
    }
    if (nodes_path == NULL)
        return cli_usage("ring", "missing --nodes FILE");
    f = fopen(nodes_path, "r");
    if (f == NULL) {
        fprintf(stderr, "ringbloom: %s: %s\n", nodes_path, strerror(errno));
        return EX_FAIL;
    }
    if ((rc = rb_ring_new(mode, replicas, &ring)) != RB_OK) {
        fclose(f);
        return cli_fail(EX_FAIL, "ring", rc);
    }
    while ((len = getline(&line, &cap, f)) >= 0) {
        char *name, *w, *save;
        uint32_t weight = 1;
        lineno++;
        name = strtok_r(line, " \t\r\n", &save);
        if (name == NULL || name[0] == '#')
            continue;
        w = strtok_r(NULL, " \t\r\n", &save);
        if ((w != NULL && cli_parse_u32(w, &weight) != 0) || strtok_r(NULL, " \t\r\n", &save)) {
            fprintf(stderr, "ringbloom: %s:%u: expected NAME [WEIGHT]\n", nodes_path, lineno);
            ex = EX_USAGE;
            break;
        }
        rc = rb_ring_add(ring, name, strlen(name), weight);
        if (rc != RB_OK) {
            fprintf(stderr, "ringbloom: %s:%u: %s: %s\n", nodes_path, lineno, name,
                    rb_strerror(rc));
            ex = EX_USAGE;
            break;
        }
    }
    fclose(f);
    free(line);
    if (ex == EX_YES && ((rc = rb_segment_create(NULL, NULL, &seg)) != RB_OK ||
                         (rc = rb_ring_publish(ring, seg)) != RB_OK))
        ex = cli_fail(EX_FAIL, "ring", rc);
    rb_ring_free(ring);
    if (ex != EX_YES) {
        rb_segment_close(seg);
        return ex;
    }
    return cli_lookup_stream(cli, seg);
}
