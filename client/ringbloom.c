/*
 * ringbloom.c - the command-line client.
 *
 * Reads (lookup, exists, nodes) are answered from shared memory, with no
 * round trip to the daemon; changes (add, load, node, reserve) go to the
 * daemon over its socket.  Exit codes (documented in --help and README):
 *   0 ok / yes (every key present)    1 no (some key not present)
 *   2 usage error                      3 daemon unreachable / no answer in
 *                                        time / no trusted segment
 *   4 the daemon refused (error reply, no permission)
 *   5 other failure
 *
 * Trust: what the CLI reads or sends keys to must be the daemon's.  The
 * socket's directory is judged by rb_trusted_dir before anything is sent
 * (another user may have made /tmp/ringbloom-<uid>), and the segment is
 * attached only if the daemon's user owns it: that user is --owner, or
 * else the owner of the socket's directory (rb_daemon_uid), which works
 * whether or not the daemon is running.  Node names come from the segment,
 * which any writer the daemon allows can fill: the line-oriented output
 * escapes them (text_str), so a name cannot forge a line or a field.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ringbloom.h"

enum { EX_YES = 0, EX_NO = 1, EX_USAGE = 2, EX_UNREACH = 3, EX_REFUSED = 4, EX_FAIL = 5 };

static const char *opt_instance = "default";
static const char *opt_socket;
static int opt_json;
static uid_t opt_owner = (uid_t)-1;      /* -1: the socket directory's owner */
static uint32_t opt_timeout_s = 10;
static const char *sock_path;            /* --socket or the default, see find_socket */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: ringbloom [--instance NAME] [--socket PATH] [--owner USER|UID]\n"
        "                 [--timeout SECONDS] [--json] COMMAND [ARGS]\n"
        "\n"
        "  --owner      the daemon's user: reads use only a segment it owns (default:\n"
        "               the owner of the socket's directory, which must be root's or\n"
        "               yours)\n"
        "  --timeout    seconds to wait for the daemon's answer (default 10)\n"
        "\n"
        "answered from shared memory (no daemon round trip):\n"
        "  lookup KEY [-n N]            node owning KEY (or the first N distinct nodes)\n"
        "  lookup -                     KEY<TAB>NODE for every line of standard input\n"
        "  exists FILTER KEY...         is each KEY (maybe) in FILTER?\n"
        "  nodes                        ring members and weights\n"
        "sent to the daemon:\n"
        "  add FILTER KEY...            add keys; prints new / present per key\n"
        "  load FILTER FILE|-           add one key per line, with a progress bar on a TTY\n"
        "  node add NAME [WEIGHT]       join the ring (default weight 1)\n"
        "  node remove NAME             leave the ring\n"
        "  node weight NAME WEIGHT      change a node's weight\n"
        "  reserve FILTER ERROR CAPACITY [--nonscaling] [--expansion N]\n"
        "          [--layout standard|blocked]\n"
        "  info [SECTION]               the daemon's INFO\n"
        "  shutdown                     snapshot and stop the daemon\n"
        "offline, no daemon:\n"
        "  ring --mode xxh3|ketama|nginx|seed --nodes FILE [--replicas R] < KEYS\n"
        "                               KEY<TAB>NODE per input line; FILE has one\n"
        "                               NAME [WEIGHT] per line (host:port for ketama/nginx,\n"
        "                               in the other side's server order)\n"
        "\n"
        "node names print with C escapes (\\t \\n \\\\ \\xNN) for control bytes and\n"
        "backslashes; --json prints them as JSON strings\n"
        "\n"
        "exit status: 0 ok / all present, 1 some key not present, 2 usage,\n"
        "             3 daemon or segment unreachable (or no answer in time),\n"
        "             4 refused by the daemon, 5 other\n");
}

/* ---- output helpers -------------------------------------------------------- */

static void json_str(const char *s, size_t len)
{
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* A node name or a key (of add / exists) in line-oriented output: control
 * bytes, DEL and the backslash as C escapes (\t \n \r \\ \xNN), every
 * other byte (UTF-8 included) as it is, so a name or key never breaks a
 * line or a field.  (`lookup -` echoes its input lines as they are: they
 * hold no newline, and the node after the last tab is escaped.) */
static void text_str(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\')
            fputs("\\\\", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\r')
            fputs("\\r", stdout);
        else if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

static int fail(int code, const char *what, int rc)
{
    fprintf(stderr, "ringbloom: %s: %s\n", what, rb_strerror(rc));
    return code;
}

/* A failed request to the daemon; changes: the request was a change (so a
 * timeout leaves it unknown whether it was applied). */
static int conn_fail(rb_conn_t *c, const char *what, int rc, int changes)
{
    if (rc == RB_EREPLY || rc == RB_EPERM) {
        fprintf(stderr, "ringbloom: %s: %s\n", what, rb_conn_error(c));
        return EX_REFUSED;
    }
    if (rc == RB_ETIMEDOUT) {
        fprintf(stderr, "ringbloom: %s: the daemon did not answer within %u s%s (socket %s)\n",
                what, opt_timeout_s, changes ? "; the change may have been applied" : "",
                sock_path);
        return EX_UNREACH;
    }
    if (rc == RB_EDAEMON) {
        fprintf(stderr, "ringbloom: %s: %s (socket %s)\n", what, rb_strerror(rc), sock_path);
        return EX_UNREACH;
    }
    return fail(EX_FAIL, what, rc);
}

/* Sets sock_path: --socket, or the instance's default. */
static int find_socket(void)
{
    static rb_paths_t paths;

    if (sock_path != NULL)
        return EX_YES;
    if (opt_socket != NULL) {
        sock_path = opt_socket;
        return EX_YES;
    }
    if (rb_default_paths(opt_instance, &paths) != RB_OK) {
        fprintf(stderr, "ringbloom: bad instance name '%s'\n", opt_instance);
        return EX_USAGE;
    }
    sock_path = paths.socket;
    return EX_YES;
}

static int attach(rb_segment_t **seg)
{
    char why[1024];
    uid_t owner = opt_owner;
    int rc, ex;

    if (owner == (uid_t)-1) {
        if ((ex = find_socket()) != EX_YES)
            return ex;
        rc = rb_daemon_uid(NULL, sock_path, (uid_t)-1, &owner, why, sizeof(why));
        if (rc == RB_ENOENT) {
            fprintf(stderr, "ringbloom: cannot attach instance '%s': no socket directory "
                    "(%s), so no daemon's user to trust; is ringbloomd running? (--owner USER "
                    "names it)\n", opt_instance, why);
            return EX_UNREACH;
        }
        if (rc != RB_OK) {
            fprintf(stderr, "ringbloom: cannot attach instance '%s': %s (--owner USER names "
                    "the daemon's user)\n", opt_instance, why);
            return EX_UNREACH;
        }
    }
    rc = rb_segment_attach_owned(opt_instance, 0, owner, seg);
    if (rc == RB_EGONE) {
        rc = rb_segment_attach_owned(opt_instance, RB_ATTACH_STALE_OK, owner, seg);
        if (rc == RB_OK)
            fprintf(stderr, "ringbloom: warning: the daemon of instance '%s' is not running; "
                    "answering from its last published state\n", opt_instance);
    }
    if (rc == RB_EOWNER) {
        fprintf(stderr, "ringbloom: cannot attach instance '%s': /dev/shm/ringbloom.%s is %s "
                "(the daemon's user is uid %u)\n", opt_instance, opt_instance,
                rb_strerror(rc), (unsigned)owner);
        return EX_UNREACH;
    }
    if (rc != RB_OK) {
        fprintf(stderr, "ringbloom: cannot attach instance '%s': %s\n", opt_instance,
                rb_strerror(rc));
        return EX_UNREACH;
    }
    return EX_YES;
}

static int open_conn(rb_conn_t **c)
{
    char why[1024];
    int rc, ex;

    if ((ex = find_socket()) != EX_YES)
        return ex;
    /* A missing directory is only a daemon that is not running: connect
     * says so, naming the socket. */
    rc = rb_daemon_uid(NULL, sock_path, opt_owner, NULL, why, sizeof(why));
    if (rc != RB_OK && rc != RB_ENOENT) {
        fprintf(stderr, "ringbloom: not using the socket of instance '%s' (%s): %s\n",
                opt_instance, sock_path, why);
        return EX_UNREACH;
    }
    rc = rb_conn_open(NULL, sock_path, opt_timeout_s * 1000u, c);
    if (rc != RB_OK) {
        fprintf(stderr, "ringbloom: cannot connect to the daemon of instance '%s' at %s: %s (%s)\n",
                opt_instance, sock_path, rb_strerror(rc), strerror(errno));
        return EX_UNREACH;
    }
    return EX_YES;
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end || s[0] == '\0' || s[0] == '-' || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* A user name or a numeric uid. */
static int parse_owner(const char *s, uid_t *out)
{
    const struct passwd *pw = getpwnam(s);
    uint32_t uid;

    if (pw != NULL) {
        *out = pw->pw_uid;
        return 0;
    }
    if (parse_u32(s, &uid) != 0 || uid == (uint32_t)-1)
        return -1;
    *out = (uid_t)uid;
    return 0;
}

/* ---- reads from shared memory ----------------------------------------------- */

/* lookup -: one key per input line, "key<TAB>node" per output line. */
static int lookup_stream(rb_segment_t *seg)
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
            ex = fail(rc == RB_EEMPTY ? EX_NO : EX_FAIL, "lookup", rc);
            break;
        }
        printf("%s\t", line);
        text_str(n.name, n.name_len);
        putchar('\n');
    }
    free(line);
    rb_segment_close(seg);
    return ex;
}

static int cmd_lookup(int argc, char **argv)
{
    uint32_t n = 1;
    rb_segment_t *seg;
    rb_node_t *nodes;
    const char *key = NULL;
    int rc, ex;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            if (parse_u32(argv[++i], &n) != 0 || n == 0 || n > RB_RING_MAX_NODES) {
                fprintf(stderr, "ringbloom: -n wants a number in [1, %d]\n", RB_RING_MAX_NODES);
                return EX_USAGE;
            }
        } else if (key == NULL) {
            key = argv[i];
        } else {
            usage(stderr);
            return EX_USAGE;
        }
    }
    if (key == NULL) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((ex = attach(&seg)) != EX_YES)
        return ex;
    if (strcmp(key, "-") == 0)
        return lookup_stream(seg);
    nodes = calloc(n, sizeof(*nodes));
    if (nodes == NULL)
        return fail(EX_FAIL, "lookup", RB_ENOMEM);
    rc = rb_ring_lookup_n(seg, key, strlen(key), nodes, n);
    if (rc < 0) {
        free(nodes);
        rb_segment_close(seg);
        return fail(rc == RB_EEMPTY ? EX_NO : EX_FAIL, "lookup", rc);
    }
    if (opt_json) {
        printf("{\"key\":");
        json_str(key, strlen(key));
        printf(",\"nodes\":[");
        for (int i = 0; i < rc; i++) {
            if (i)
                putchar(',');
            json_str(nodes[i].name, nodes[i].name_len);
        }
        printf("]}\n");
    } else {
        for (int i = 0; i < rc; i++) {
            text_str(nodes[i].name, nodes[i].name_len);
            putchar('\n');
        }
    }
    free(nodes);
    rb_segment_close(seg);
    return EX_YES;
}

static int cmd_exists(int argc, char **argv)
{
    rb_segment_t *seg;
    rb_bloom_t *bf;
    int rc, ex, all = 1;

    if (argc < 3) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((ex = attach(&seg)) != EX_YES)
        return ex;
    rc = rb_bloom_open(seg, argv[1], strlen(argv[1]), &bf);
    if (rc != RB_OK) {
        rb_segment_close(seg);
        if (rc == RB_ENOENT) {
            fprintf(stderr, "ringbloom: no filter '%s'\n", argv[1]);
            return EX_NO;
        }
        return fail(EX_FAIL, "exists", rc);
    }
    if (opt_json)
        putchar('[');
    for (int i = 2; i < argc; i++) {
        int r = rb_bloom_contains(bf, argv[i], strlen(argv[i]));
        if (r < 0) {
            rb_bloom_close(bf);
            rb_segment_close(seg);
            return fail(EX_FAIL, "exists", r);
        }
        all &= r;
        if (opt_json) {
            printf("%s{\"key\":", i > 2 ? "," : "");
            json_str(argv[i], strlen(argv[i]));
            printf(",\"present\":%s}", r ? "true" : "false");
        } else {
            printf("%s\t", r ? "present" : "absent");
            text_str(argv[i], strlen(argv[i]));
            putchar('\n');
        }
    }
    if (opt_json)
        printf("]\n");
    rb_bloom_close(bf);
    rb_segment_close(seg);
    return all ? EX_YES : EX_NO;
}

static int cmd_nodes(int argc, char **argv)
{
    rb_ring_stat_t st;
    rb_segment_t *seg;
    rb_node_t *nodes;
    size_t count = 0;
    int rc, ex;

    (void)argv;
    if (argc != 1) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((ex = attach(&seg)) != EX_YES)
        return ex;
    rc = rb_ring_stat(seg, &st);
    nodes = calloc(st.nodes ? st.nodes : 1, sizeof(*nodes));
    if (rc == RB_OK)
        rc = nodes ? rb_ring_nodes(seg, nodes, st.nodes, &count) : RB_ENOMEM;
    if (rc != RB_OK) {
        free(nodes);
        rb_segment_close(seg);
        return fail(EX_FAIL, "nodes", rc);
    }
    if (count > st.nodes)
        count = st.nodes;     /* changed meanwhile: print what we have */
    if (opt_json)
        printf("{\"mode\":\"%s\",\"version\":%llu,\"points\":%u,\"nodes\":[",
               rb_ring_mode_name((rb_ring_mode_t)st.mode), (unsigned long long)st.version,
               st.points);
    for (size_t i = 0; i < count; i++) {
        if (opt_json) {
            printf("%s{\"name\":", i ? "," : "");
            json_str(nodes[i].name, nodes[i].name_len);
            printf(",\"weight\":%u}", nodes[i].weight);
        } else {
            text_str(nodes[i].name, nodes[i].name_len);
            printf("\t%u\n", nodes[i].weight);
        }
    }
    if (opt_json)
        printf("]}\n");
    free(nodes);
    rb_segment_close(seg);
    return EX_YES;
}

/* ---- changes through the daemon --------------------------------------------- */

static int cmd_add(int argc, char **argv)
{
    rb_conn_t *c;
    rb_key_t *keys;
    uint8_t *fresh;
    int64_t rc;
    int ex, n = argc - 2;

    if (argc < 3) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((ex = open_conn(&c)) != EX_YES)
        return ex;
    keys = calloc((size_t)n, sizeof(*keys));
    fresh = calloc((size_t)n, 1);
    if (keys == NULL || fresh == NULL)
        return fail(EX_FAIL, "add", RB_ENOMEM);
    for (int i = 0; i < n; i++) {
        keys[i].ptr = argv[i + 2];
        keys[i].len = strlen(argv[i + 2]);
    }
    rc = rb_conn_bf_add_many(c, argv[1], strlen(argv[1]), keys, (size_t)n, fresh);
    if (rc < 0) {
        ex = conn_fail(c, "add", (int)rc, 1);
    } else {
        if (opt_json)
            putchar('[');
        for (int i = 0; i < n; i++) {
            if (opt_json) {
                printf("%s{\"key\":", i ? "," : "");
                json_str(argv[i + 2], strlen(argv[i + 2]));
                printf(",\"new\":%s}", fresh[i] ? "true" : "false");
            } else {
                printf("%s\t", fresh[i] ? "new" : "present");
                text_str(argv[i + 2], strlen(argv[i + 2]));
                putchar('\n');
            }
        }
        if (opt_json)
            printf("]\n");
    }
    free(keys);
    free(fresh);
    rb_conn_close(c);
    return ex;
}

static void progress(uint64_t done_bytes, uint64_t total, uint64_t keys, time_t start)
{
    double secs = difftime(time(NULL), start);
    int width = 30, filled = total ? (int)((double)done_bytes / (double)total * width) : 0;

    fprintf(stderr, "\r[");
    for (int i = 0; i < width; i++)
        fputc(i < filled ? '#' : (total ? '.' : ' '), stderr);
    fprintf(stderr, "] %llu keys", (unsigned long long)keys);
    if (total)
        fprintf(stderr, " %3.0f%%", 100.0 * (double)done_bytes / (double)total);
    if (secs > 0)
        fprintf(stderr, " %.0f keys/s", (double)keys / secs);
    fflush(stderr);
}

#define LOAD_BATCH 100000

static int cmd_load(int argc, char **argv)
{
    const char *path;
    FILE *in;
    rb_conn_t *c;
    struct stat st;
    uint64_t total = 0, done_bytes = 0, keys = 0, added = 0;
    char **lines;
    rb_key_t *batch;
    size_t n = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int tty = isatty(2), ex;
    time_t start = time(NULL);

    if (argc != 3) {
        usage(stderr);
        return EX_USAGE;
    }
    path = argv[2];
    in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "ringbloom: %s: %s\n", path, strerror(errno));
        return EX_FAIL;
    }
    if (fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode))
        total = (uint64_t)st.st_size;
    if ((ex = open_conn(&c)) != EX_YES)
        return ex;
    lines = calloc(LOAD_BATCH, sizeof(*lines));
    batch = calloc(LOAD_BATCH, sizeof(*batch));
    if (lines == NULL || batch == NULL)
        return fail(EX_FAIL, "load", RB_ENOMEM);
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
            int64_t rc = rb_conn_bf_add_many(c, argv[1], strlen(argv[1]), batch, n, NULL);
            for (size_t i = 0; i < n; i++)
                free(lines[i]);
            if (rc < 0) {
                if (tty)
                    fputc('\n', stderr);
                ex = conn_fail(c, "load", (int)rc, 1);
                fprintf(stderr, "ringbloom: %llu keys were loaded before the error\n",
                        (unsigned long long)keys);
                break;
            }
            keys += n;
            added += (uint64_t)rc;
            n = 0;
            if (tty)
                progress(done_bytes, total, keys, start);
        }
        if (eof)
            break;
    }
    if (tty && ex == EX_YES)
        fputc('\n', stderr);
    if (ex == EX_YES) {
        if (opt_json)
            printf("{\"keys\":%llu,\"new\":%llu,\"present\":%llu}\n", (unsigned long long)keys,
                   (unsigned long long)added, (unsigned long long)(keys - added));
        else
            printf("loaded %llu keys: %llu new, %llu already present\n",
                   (unsigned long long)keys, (unsigned long long)added,
                   (unsigned long long)(keys - added));
    }
    free(line);
    free(lines);
    free(batch);
    if (in != stdin)
        fclose(in);
    rb_conn_close(c);
    return ex;
}

static int cmd_node(int argc, char **argv)
{
    uint32_t w = 1;
    rb_conn_t *c;
    int rc, ex;

    if (argc < 3 || argc > 4) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((strcmp(argv[1], "add") == 0 && argc == 4) || strcmp(argv[1], "weight") == 0) {
        if (argc != 4 || parse_u32(argv[3], &w) != 0) {
            fprintf(stderr, "ringbloom: weight must be a positive integer\n");
            return EX_USAGE;
        }
    } else if (argc != 3 || (strcmp(argv[1], "add") != 0 && strcmp(argv[1], "remove") != 0)) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((ex = open_conn(&c)) != EX_YES)
        return ex;
    if (strcmp(argv[1], "add") == 0)
        rc = rb_conn_ring_add(c, argv[2], strlen(argv[2]), w);
    else if (strcmp(argv[1], "remove") == 0)
        rc = rb_conn_ring_remove(c, argv[2], strlen(argv[2]));
    else
        rc = rb_conn_ring_weight(c, argv[2], strlen(argv[2]), w);
    ex = rc == RB_OK ? EX_YES : conn_fail(c, "node", rc, 1);
    if (ex == EX_YES)
        printf(opt_json ? "{\"ok\":true}\n" : "OK\n");
    rb_conn_close(c);
    return ex;
}

static int cmd_reserve(int argc, char **argv)
{
    rb_bloom_params_t p = { .layout = RB_BLOOM_BLOCKED };
    char *end;
    rb_conn_t *c;
    int rc, ex;

    if (argc < 4) {
        usage(stderr);
        return EX_USAGE;
    }
    errno = 0;
    p.error_rate = strtod(argv[2], &end);
    if (errno || *end || !(p.error_rate > 0 && p.error_rate < 1)) {
        fprintf(stderr, "ringbloom: error rate must be a number in (0, 1)\n");
        return EX_USAGE;
    }
    p.capacity = strtoull(argv[3], &end, 10);
    if (*end || p.capacity == 0 || argv[3][0] == '-') {
        fprintf(stderr, "ringbloom: capacity must be a positive integer\n");
        return EX_USAGE;
    }
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--nonscaling") == 0) {
            p.flags |= RB_BLOOM_NONSCALING;
        } else if (strcmp(argv[i], "--expansion") == 0 && i + 1 < argc) {
            if (parse_u32(argv[++i], &p.expansion) != 0 || p.expansion == 0) {
                fprintf(stderr, "ringbloom: --expansion wants a positive integer\n");
                return EX_USAGE;
            }
        } else if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc) {
            i++;
            if (strcmp(argv[i], "standard") == 0)
                p.layout = RB_BLOOM_STANDARD;
            else if (strcmp(argv[i], "blocked") == 0)
                p.layout = RB_BLOOM_BLOCKED;
            else {
                fprintf(stderr, "ringbloom: --layout is standard or blocked\n");
                return EX_USAGE;
            }
        } else {
            usage(stderr);
            return EX_USAGE;
        }
    }
    if ((ex = open_conn(&c)) != EX_YES)
        return ex;
    rc = rb_conn_bf_reserve(c, argv[1], strlen(argv[1]), &p);
    ex = rc == RB_OK ? EX_YES : conn_fail(c, "reserve", rc, 1);
    if (ex == EX_YES)
        printf(opt_json ? "{\"ok\":true}\n" : "OK\n");
    rb_conn_close(c);
    return ex;
}

static int cmd_info(int argc, char **argv)
{
    const char *args[2] = { "INFO", argc > 1 ? argv[1] : "" };
    size_t lens[2] = { 4, argc > 1 ? strlen(argv[1]) : 0 };
    static char buf[1 << 20];
    rb_conn_t *c;
    int rc, ex;

    if (argc > 2) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((ex = open_conn(&c)) != EX_YES)
        return ex;
    rc = rb_conn_command(c, argc > 1 ? 2 : 1, args, lens, buf, sizeof(buf));
    if (rc != RB_OK) {
        ex = conn_fail(c, "info", rc, 0);
    } else if (opt_json) {
        /* key:value lines as one JSON object; "# Section" lines dropped. */
        char *save, *ln;
        int first = 1;
        putchar('{');
        for (ln = strtok_r(buf, "\r\n", &save); ln; ln = strtok_r(NULL, "\r\n", &save)) {
            char *colon = strchr(ln, ':');
            if (ln[0] == '#' || colon == NULL)
                continue;
            printf("%s", first ? "" : ",");
            json_str(ln, (size_t)(colon - ln));
            putchar(':');
            json_str(colon + 1, strlen(colon + 1));
            first = 0;
        }
        printf("}\n");
    } else {
        fputs(buf, stdout);
        if (buf[0] && buf[strlen(buf) - 1] != '\n')
            putchar('\n');
    }
    rb_conn_close(c);
    return ex;
}

/* ring: build a ring in a private segment from a node file and map
 * standard input through it - the same code readers run on the daemon's. */
static int cmd_ring(int argc, char **argv)
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
                fprintf(stderr, "ringbloom: unknown mode '%s' (xxh3, ketama, nginx, seed)\n",
                        argv[i]);
                return EX_USAGE;
            }
        } else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
            nodes_path = argv[++i];
        } else if (strcmp(argv[i], "--replicas") == 0 && i + 1 < argc) {
            if (parse_u32(argv[++i], &replicas) != 0 || replicas == 0 ||
                replicas > RB_RING_MAX_REPLICAS) {
                fprintf(stderr, "ringbloom: --replicas wants a number in [1, %d]\n",
                        RB_RING_MAX_REPLICAS);
                return EX_USAGE;
            }
        } else {
            usage(stderr);
            return EX_USAGE;
        }
    }
    if (nodes_path == NULL) {
        usage(stderr);
        return EX_USAGE;
    }
    f = fopen(nodes_path, "r");
    if (f == NULL) {
        fprintf(stderr, "ringbloom: %s: %s\n", nodes_path, strerror(errno));
        return EX_FAIL;
    }
    if ((rc = rb_ring_new(mode, replicas, &ring)) != RB_OK) {
        fclose(f);
        return fail(EX_FAIL, "ring", rc);
    }
    while ((len = getline(&line, &cap, f)) >= 0) {
        char *name, *w, *save;
        uint32_t weight = 1;
        lineno++;
        name = strtok_r(line, " \t\r\n", &save);
        if (name == NULL || name[0] == '#')
            continue;
        w = strtok_r(NULL, " \t\r\n", &save);
        if ((w != NULL && parse_u32(w, &weight) != 0) || strtok_r(NULL, " \t\r\n", &save)) {
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
        ex = fail(EX_FAIL, "ring", rc);
    rb_ring_free(ring);
    if (ex != EX_YES) {
        rb_segment_close(seg);
        return ex;
    }
    return lookup_stream(seg);
}

static int cmd_shutdown(int argc, char **argv)
{
    const char *args[1] = { "SHUTDOWN" };
    size_t lens[1] = { 8 };
    char buf[256];
    rb_conn_t *c;
    int rc, ex;

    (void)argv;
    if (argc != 1) {
        usage(stderr);
        return EX_USAGE;
    }
    if ((ex = open_conn(&c)) != EX_YES)
        return ex;
    /* The daemon closes the connection once it has saved and stopped. */
    rc = rb_conn_command(c, 1, args, lens, buf, sizeof(buf));
    ex = rc == RB_EDAEMON ? EX_YES : conn_fail(c, "shutdown", rc, 1);
    rb_conn_close(c);
    return ex;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "instance", required_argument, NULL, 'i' },
        { "socket", required_argument, NULL, 's' },
        { "json", no_argument, NULL, 'j' },
        { "owner", required_argument, NULL, 'o' },
        { "timeout", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {
        { "lookup", cmd_lookup }, { "exists", cmd_exists }, { "nodes", cmd_nodes },
        { "add", cmd_add }, { "load", cmd_load }, { "node", cmd_node },
        { "reserve", cmd_reserve }, { "info", cmd_info }, { "shutdown", cmd_shutdown },
        { "ring", cmd_ring },
    };
    int opt;

    while ((opt = getopt_long(argc, argv, "+i:s:jo:t:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'i': opt_instance = optarg; break;
        case 's': opt_socket = optarg; break;
        case 'j': opt_json = 1; break;
        case 'o':
            if (parse_owner(optarg, &opt_owner) != 0) {
                fprintf(stderr, "ringbloom: --owner: no user '%s'\n", optarg);
                return EX_USAGE;
            }
            break;
        case 't':
            if (parse_u32(optarg, &opt_timeout_s) != 0 || opt_timeout_s == 0 ||
                opt_timeout_s > 86400) {
                fprintf(stderr, "ringbloom: --timeout wants seconds in [1, 86400]\n");
                return EX_USAGE;
            }
            break;
        case 'h': usage(stdout); return EX_YES;
        case 'V': printf("ringbloom %s\n", PACKAGE_VERSION); return EX_YES;
        default: usage(stderr); return EX_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return EX_USAGE;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(argv[optind], cmds[i].name) == 0)
            return cmds[i].fn(argc - optind, argv + optind);
    fprintf(stderr, "ringbloom: unknown command '%s'\n", argv[optind]);
    usage(stderr);
    return EX_USAGE;
}
