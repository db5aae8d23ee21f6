/*
 * writes.c - the subcommands that go to the daemon over its socket: the
 * changes (add, load, node, reserve, reset, delete) and shutdown (info, which only
 * reads, is info.c).  The connection is made by cli_connect, after the socket's
 * directory has been judged; a failed request is said by cli_conn_fail.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cmd_add(cli_t *cli, int argc, char **argv)
{
    rb_conn_t *c;
    rb_key_t *keys;
    uint8_t *fresh;
    int64_t rc;
    int ex, n = argc - 2;

    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    keys = calloc((size_t)n, sizeof(*keys));
    fresh = calloc((size_t)n, 1);
    if (keys == NULL || fresh == NULL)
        return cli_fail(EX_FAIL, "add", RB_ENOMEM);
    for (int i = 0; i < n; i++) {
        keys[i].ptr = argv[i + 2];
        keys[i].len = strlen(argv[i + 2]);
    }
    rc = rb_conn_bf_add_many(c, argv[1], strlen(argv[1]), keys, (size_t)n, fresh);
    if (rc < 0) {
        ex = cli_conn_fail(cli, c, "add", (int)rc, 1);
    } else {
        json_object *out = cli->json ? json_object_new_array() : NULL;
        for (int i = 0; i < n; i++) {
            if (cli->json) {
                cli_json_push(out, cli_json_obj("key", cli_json_text(argv[i + 2], strlen(argv[i + 2])),
                                                "new", json_object_new_boolean(fresh[i]), NULL));
            } else {
                printf("%s\t", fresh[i] ? "new" : "present");
                cli_text_str(argv[i + 2], strlen(argv[i + 2]));
                putchar('\n');
            }
        }
        if (cli->json)
            cli_json_line(out);
    }
    free(keys);
    free(fresh);
    rb_conn_close(c);
    return ex;
}

/* load's progress line on stderr (a TTY): a bar over the file's bytes when
 * its size is known, the keys sent so far and their rate. */
static void progress(uint64_t done_bytes, uint64_t total, uint64_t keys, time_t start)
{
    double secs = difftime(time(NULL), start);
    char text[128];
    int n = snprintf(text, sizeof(text), "%llu keys", (unsigned long long)keys);

    if (total)
        n += snprintf(text + n, sizeof(text) - (size_t)n, " %3.0f%%",
                      100.0 * (double)done_bytes / (double)total);
    if (secs > 0)
        snprintf(text + n, sizeof(text) - (size_t)n, " %.0f keys/s", (double)keys / secs);
    cli_progress(total ? (double)done_bytes / (double)total : -1, text);
}

/* Keys per rb_conn_bf_insert_many call of load; their lines are held
 * until the batch is answered. */
#define LOAD_BATCH 100000

/* load's options after FILE into *p: --error RATE and --capacity N, the
 * shape of the filter when there is none yet (*create: --error was
 * given; p->capacity 0: count the file's lines).  EX_YES, or EX_USAGE
 * after a line that names the option and what it wants. */
static int load_options(int argc, char **argv, rb_bloom_params_t *p, int *create)
{
    for (int i = 3; i < argc; i += 2) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;
        if (strcmp(opt, "--error") != 0 && strcmp(opt, "--capacity") != 0) {
            fprintf(stderr, "ringbloom: load: unknown option '%s' (options: --error RATE, "
                    "--capacity N)\n", opt);
            return EX_USAGE;
        }
        if (val == NULL) {
            fprintf(stderr, "ringbloom: load: %s wants a value\n", opt);
            return EX_USAGE;
        }
        errno = 0;
        if (opt[2] == 'e') {
            p->error_rate = strtod(val, &end);
            if (errno || *end || !(p->error_rate > 0 && p->error_rate < 1)) {
                fprintf(stderr, "ringbloom: load: --error wants a number in (0, 1), not '%s'\n",
                        val);
                return EX_USAGE;
            }
            *create = 1;
        } else {
            p->capacity = strtoull(val, &end, 10);
            if (errno || *end || p->capacity == 0 || val[0] == '-') {
                fprintf(stderr, "ringbloom: load: --capacity wants a positive integer, not "
                        "'%s'\n", val);
                return EX_USAGE;
            }
        }
    }
    if (p->capacity != 0 && !*create) {
        fprintf(stderr, "ringbloom: load: --capacity makes a filter only with --error RATE\n");
        return EX_USAGE;
    }
    return EX_YES;
}

/* The keys (non-empty lines) of the regular file in, which is rewound. */
static uint64_t count_keys(FILE *in)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t n = 0;

    while ((len = getline(&line, &cap, in)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        n += len > 0;
    }
    free(line);
    rewind(in);
    return n;
}

/* load's summary, or what stopped it. */
static int load_end(const cli_t *cli, rb_conn_t *c, const char *name, int64_t rc,
                    uint64_t keys, uint64_t added, int create)
{
    if (rc == RB_ENOENT) {
        fprintf(stderr, "ringbloom: load: no filter '%s': nothing was loaded; make it first "
                "(ringbloom reserve %s ERROR CAPACITY), or give --error RATE [--capacity N] "
                "to make it (the capacity defaults to the file's keys)\n", name, name);
        return EX_NO;
    }
    if (rc < 0) {
        int ex = cli_conn_fail(cli, c, "load", (int)rc, 1);
        fprintf(stderr, "ringbloom: %llu keys were loaded before the error%s\n",
                (unsigned long long)keys, create ? "" : " (into the filter as it was)");
        return ex;
    }
    if (cli->json)
        cli_json_line(cli_json_obj("keys", cli_json_num("%llu", (unsigned long long)keys),
                                   "new", cli_json_num("%llu", (unsigned long long)added),
                                   "present",
                                   cli_json_num("%llu", (unsigned long long)(keys - added)),
                                   NULL));
    else
        printf("loaded %llu keys: %llu new, %llu already present\n",
               (unsigned long long)keys, (unsigned long long)added,
               (unsigned long long)(keys - added));
    return EX_YES;
}

/* load FILTER FILE|- [--error RATE [--capacity N]]: one key per line, in
 * batches of BF.INSERT.  Into an existing filter only (NOCREATE), unless
 * --error is given: then a missing filter is made with that error rate
 * and --capacity (by default the file's keys, counted first; standard
 * input needs --capacity), never with the daemon's defaults. */
int cmd_load(cli_t *cli, int argc, char **argv)
{
    const char *path = argv[2];
    rb_bloom_params_t p = { .layout = RB_BLOOM_BLOCKED };
    FILE *in;
    rb_conn_t *c;
    struct stat st;
    uint64_t total = 0, done_bytes = 0, keys = 0, added = 0;
    char **lines;
    rb_key_t *batch;
    size_t n = 0, cap = 0;
    char *line = NULL;
    ssize_t len;
    int64_t rc = 0;
    int tty = isatty(2), ex, create = 0;
    time_t start = time(NULL);

    if ((ex = load_options(argc, argv, &p, &create)) != EX_YES)
        return ex;
    in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "ringbloom: %s: %s\n", path, strerror(errno));
        return EX_FAIL;
    }
    if (fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode))
        total = (uint64_t)st.st_size;
    if (create && p.capacity == 0 && (in == stdin || !S_ISREG(st.st_mode))) {
        fprintf(stderr, "ringbloom: load: --error without --capacity sizes the filter from "
                "the file's keys; %s cannot be read twice: give --capacity N\n",
                in == stdin ? "standard input" : path);
        return EX_USAGE;
    }
    if (create && p.capacity == 0)
        p.capacity = count_keys(in);   /* 0 keys: nothing is sent, nothing made */
    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    lines = calloc(LOAD_BATCH, sizeof(*lines));
    batch = calloc(LOAD_BATCH, sizeof(*batch));
    if (lines == NULL || batch == NULL)
        return cli_fail(EX_FAIL, "load", RB_ENOMEM);
    for (;;) {
        int eof = (len = getline(&line, &cap, in)) < 0;
        if (!eof) {
            done_bytes += (uint64_t)len;
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                line[--len] = '\0';
            if (len > 0) {
                lines[n] = line;
                batch[n].ptr = line;
                batch[n].len = (size_t)len;
                n++;
                line = NULL;
                cap = 0;
            }
        }
        if (n == LOAD_BATCH || (eof && n > 0)) {
            rc = rb_conn_bf_insert_many(c, argv[1], strlen(argv[1]), create ? &p : NULL, batch,
                                        n, NULL);
            for (size_t i = 0; i < n; i++)
                free(lines[i]);
            if (rc < 0)
                break;
            keys += n;
            added += (uint64_t)rc;
            n = 0;
            if (tty)
                progress(done_bytes, total, keys, start);
        }
        if (eof)
            break;
    }
    if (tty)
        fputc('\n', stderr);
    ex = load_end(cli, c, argv[1], rc, keys, added, create);
    free(line);
    free(lines);
    free(batch);
    if (in != stdin)
        fclose(in);
    rb_conn_close(c);
    return ex;
}

/* The end of a change the daemon answers with OK: prints OK ({"ok":true}),
 * or says why it failed; closes c.  Returns the exit code. */
static int change_done(const cli_t *cli, rb_conn_t *c, const char *what, int rc)
{
    int ex = rc == RB_OK ? EX_YES : cli_conn_fail(cli, c, what, rc, 1);

    if (ex == EX_YES && cli->json)
        cli_json_line(cli_json_obj("ok", json_object_new_boolean(1), NULL));
    else if (ex == EX_YES)
        fputs("OK\n", stdout);
    rb_conn_close(c);
    return ex;
}

int cmd_node(cli_t *cli, int argc, char **argv)
{
    uint32_t w = 1;
    rb_node_state_t st;
    rb_conn_t *c;
    int rc, ex, state = rb_node_state_parse(argv[1], strlen(argv[1]), &st) == RB_OK;

    if (state) {
        if (argc != 3)
            return cli_usage("node", "%s wants one NAME", argv[1]);
    } else if ((strcmp(argv[1], "add") == 0 && argc == 4) || strcmp(argv[1], "weight") == 0) {
        if (argc != 4 || cli_parse_u32(argv[3], &w) != 0) {
            fprintf(stderr, "ringbloom: weight must be a positive integer\n");
            return EX_USAGE;
        }
    } else if (strcmp(argv[1], "add") != 0 && strcmp(argv[1], "remove") != 0) {
        return cli_usage("node", "unknown action '%s' (add, remove, weight, down, up, drain)",
                         argv[1]);
    } else if (argc != 3) {
        return cli_usage("node", "%s wants NAME%s", argv[1],
                         strcmp(argv[1], "add") == 0 ? " [WEIGHT]" : "");
    }
    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    if (state)
        rc = rb_conn_ring_state(c, argv[2], strlen(argv[2]), st);
    else if (strcmp(argv[1], "add") == 0)
        rc = rb_conn_ring_add(c, argv[2], strlen(argv[2]), w);
    else if (strcmp(argv[1], "remove") == 0)
        rc = rb_conn_ring_remove(c, argv[2], strlen(argv[2]));
    else
        rc = rb_conn_ring_weight(c, argv[2], strlen(argv[2]), w);
    return change_done(cli, c, "node", rc);
}

/* One option of `reserve` at argv[*i] (its value after it) into p.
 * EX_YES, or EX_USAGE after a line that names the option and what it
 * wants. */
static int reserve_option(int argc, char **argv, int *i, rb_bloom_params_t *p)
{
    const char *opt = argv[*i];
    const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;

    if (strcmp(opt, "--nonscaling") == 0) {
        p->flags |= RB_BLOOM_NONSCALING;
        return EX_YES;
    }
    if (strcmp(opt, "--expansion") != 0 && strcmp(opt, "--layout") != 0 &&
        strcmp(opt, "--aging") != 0 && strcmp(opt, "--generations") != 0) {
        fprintf(stderr, "ringbloom: reserve: unknown option '%s' (options: --nonscaling, "
                "--expansion N, --layout standard|blocked|redisbloom, --aging SECONDS, "
                "--generations N)\n", opt);
        return EX_USAGE;
    }
    if (val == NULL) {
        fprintf(stderr, "ringbloom: reserve: %s wants a value\n", opt);
        return EX_USAGE;
    }
    (*i)++;
    if (strcmp(opt, "--layout") == 0) {
        if (strcmp(val, "standard") == 0)
            p->layout = RB_BLOOM_STANDARD;
        else if (strcmp(val, "blocked") == 0)
            p->layout = RB_BLOOM_BLOCKED;
        else if (strcmp(val, "redisbloom") == 0)
            p->layout = RB_BLOOM_REDISBLOOM;
        else {
            fprintf(stderr, "ringbloom: reserve: --layout is standard, blocked or redisbloom, "
                    "not '%s'\n", val);
            return EX_USAGE;
        }
        return EX_YES;
    }
    if (strcmp(opt, "--aging") == 0) {
        /* 0 is a window too: rotate only when the generation is full. */
        if (cli_parse_u32(val, &p->window) != 0) {
            fprintf(stderr, "ringbloom: reserve: --aging wants seconds per generation (0: "
                    "rotate only when full), not '%s'\n", val);
            return EX_USAGE;
        }
        p->flags |= RB_BLOOM_AGING;
        return EX_YES;
    }
    uint32_t *n = strcmp(opt, "--expansion") == 0 ? &p->expansion : &p->generations;
    if (cli_parse_u32(val, n) != 0 || *n == 0) {
        fprintf(stderr, "ringbloom: reserve: %s wants a positive integer, not '%s'\n", opt, val);
        return EX_USAGE;
    }
    return EX_YES;
}

int cmd_reserve(cli_t *cli, int argc, char **argv)
{
    rb_bloom_params_t p = { .layout = RB_BLOOM_BLOCKED };
    char *end;
    rb_conn_t *c;
    int rc, ex;

    errno = 0;
    p.error_rate = strtod(argv[2], &end);
    if (errno || *end || !(p.error_rate > 0 && p.error_rate < 1)) {
        fprintf(stderr, "ringbloom: reserve: the error rate must be a number in (0, 1), not "
                "'%s'\n", argv[2]);
        return EX_USAGE;
    }
    p.capacity = strtoull(argv[3], &end, 10);
    if (*end || p.capacity == 0 || argv[3][0] == '-') {
        fprintf(stderr, "ringbloom: reserve: the capacity must be a positive integer, not "
                "'%s'\n", argv[3]);
        return EX_USAGE;
    }
    for (int i = 4; i < argc; i++)
        if ((ex = reserve_option(argc, argv, &i, &p)) != EX_YES)
            return ex;
    if ((p.flags & RB_BLOOM_AGING) && ((p.flags & RB_BLOOM_NONSCALING) || p.expansion != 0)) {
        fprintf(stderr, "ringbloom: reserve: --aging does not go with --nonscaling or "
                "--expansion (an aging filter keeps a fixed set of generations)\n");
        return EX_USAGE;
    }
    if (p.generations != 0 && !(p.flags & RB_BLOOM_AGING)) {
        fprintf(stderr, "ringbloom: reserve: --generations needs --aging\n");
        return EX_USAGE;
    }
    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    rc = rb_conn_bf_reserve(c, argv[1], strlen(argv[1]), &p);
    return change_done(cli, c, "reserve", rc);
}

/* reset FILTER: BF.RESET, every bit cleared (aging: every generation). */
int cmd_reset(cli_t *cli, int argc, char **argv)
{
    const char *args[2] = { "BF.RESET", argv[1] };
    size_t lens[2] = { 8, strlen(argv[1]) };
    char buf[512];
    rb_conn_t *c;
    int ex;

    (void)argc;
    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    return change_done(cli, c, "reset", rb_conn_command(c, 2, args, lens, buf, sizeof(buf)));
}

/* delete FILTER...: one DEL per filter, in order; prints deleted / absent
 * per filter.  Exit 0 if every filter was deleted, 1 if some did not
 * exist; an error stops there (the filters before it stay deleted). */
int cmd_delete(cli_t *cli, int argc, char **argv)
{
    rb_conn_t *c;
    json_object *out = NULL;
    int ex = EX_YES;

    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    if (cli->json)
        out = json_object_new_array();
    for (int i = 1; i < argc; i++) {
        const char *args[2] = { "DEL", argv[i] };
        size_t lens[2] = { 3, strlen(argv[i]) };
        char buf[512];
        int rc = rb_conn_command(c, 2, args, lens, buf, sizeof(buf)), gone;
        if (rc != RB_OK) {
            if (cli->json)
                cli_json_line(out);   /* the filters deleted before it */
            ex = cli_conn_fail(cli, c, "delete", rc, 1);
            rb_conn_close(c);
            return ex;
        }
        gone = strcmp(buf, "1") == 0;
        if (!gone)
            ex = EX_NO;
        if (cli->json) {
            cli_json_push(out, cli_json_obj("filter", cli_json_text(argv[i], lens[1]),
                                            "deleted", json_object_new_boolean(gone), NULL));
        } else {
            printf("%s\t", gone ? "deleted" : "absent");
            cli_text_str(argv[i], lens[1]);
            putchar('\n');
        }
    }
    if (cli->json)
        cli_json_line(out);
    rb_conn_close(c);
    return ex;
}

int cmd_shutdown(cli_t *cli, int argc, char **argv)
{
    const char *args[1] = { "SHUTDOWN" };
    size_t lens[1] = { 8 };
    char buf[256];
    rb_conn_t *c;
    int rc, ex;

    (void)argc;
    (void)argv;
    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    /* The daemon closes the connection once it has saved and stopped. */
    rc = rb_conn_command(c, 1, args, lens, buf, sizeof(buf));
    ex = rc == RB_EDAEMON ? EX_YES : cli_conn_fail(cli, c, "shutdown", rc, 1);
    rb_conn_close(c);
    return ex;
}
