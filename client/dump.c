/*
 * dump.c - dump and restore: a filter moved out of the daemon into a file
 * and back into a daemon (this one under another name, or another one), in
 * the chunks of its kind's SCANDUMP and LOADCHUNK, with a progress bar on
 * a TTY and a summary line, as load has.
 *
 * The file (ringbloom(1), "DUMP FILES"): three lines, then records.
 *   "ringbloom-dump 1\n"    the magic and the version of this layout
 *   KIND "\n"               the filter's TYPE: MBbloom--, MBbloomCF, RBbloomCB
 *   FORMAT "\n"             the chunks' format: ringbloom, or redisbloom (a
 *                           Bloom filter's, as RedisBloom's BF.LOADCHUNK takes)
 *   each chunk: iterator u64, length u64, length bytes, CRC-32 u32 (zlib's, of
 *               the 16 bytes before and the bytes), little-endian; the
 *               iterator is the one SCANDUMP returned with the bytes, which
 *               LOADCHUNK takes with them (RedisBloom's semantics): 1 for the
 *               header chunk, then strictly increasing
 *   the end:    a record of iterator 0 and length 0 (and its CRC), then nothing
 * so a truncated file (no end) and a corrupt one (a CRC, an iterator, a
 * length past CHUNK_MAX) are refused at the damaged record, before it is
 * sent; so is one with no data chunk after its header chunk (every dump
 * has one), once it is read to its end, and a header line with a NUL.
 *
 * Restore sends the header chunk alone: its OK means this restore made the
 * filter, and from then on any failure (the file, the daemon's error, a
 * lost connection) deletes it, so a failed restore leaves no half filter.
 * The data chunks then go WINDOW at a time ahead of their replies.  The
 * daemon's connection is redis_node.c's (replies and arguments of any
 * bytes), after cli_find_socket has judged the socket's directory.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define MAGIC     "ringbloom-dump 1"
#define CHUNK_MAX (16u << 20)   /* the daemon's largest SCANDUMP chunk (RedisBloom's
                                 * MAX_SCANDUMP_SIZE): a longer record is corrupt */
#define WINDOW    4             /* LOADCHUNKs sent ahead of their replies */

/* The kinds that dump: TYPE's answer, the prefix of their commands. */
static const struct kind {
    const char *type;
    const char *prefix;
} kinds[] = {
    { "MBbloom--", "BF" },
    { "MBbloomCF", "CF" },
    { "RBbloomCB", "CBF" },
};

/* One dump or restore. */
typedef struct mover {
    cli_t *cli;
    const char *verb;           /* "dump" / "restore", for messages */
    const char *name;           /* the filter */
    cli_redis_t *r;             /* NULL until connected */
    const struct kind *k;
    uint64_t bytes, chunks, total;  /* total: 0 if not known */
    struct timespec t0;
    int tty;
    char why[1200];
} mover_t;

/* "ringbloom: VERB 'NAME': <text>" on stderr; returns code. */
static int say(const mover_t *m, int code, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ringbloom: %s '", m->verb);
    cli_escape(stderr, m->name, strlen(m->name), 0);
    fputs("': ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

static double seconds(const mover_t *m)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - m->t0.tv_sec) + (double)(t.tv_nsec - m->t0.tv_nsec) / 1e9;
}

/* The progress line, after each chunk (on a TTY only). */
static void progress(const mover_t *m, uint64_t done)
{
    char text[128];
    double s = seconds(m);
    int n = snprintf(text, sizeof(text), "%llu bytes, %llu chunks", (unsigned long long)done,
                     (unsigned long long)m->chunks);

    if (!m->tty)
        return;
    if (m->total)
        n += snprintf(text + n, sizeof(text) - (size_t)n, " %3.0f%%",
                      done < m->total ? 100.0 * (double)done / (double)m->total : 100.0);
    if (s > 0)
        snprintf(text + n, sizeof(text) - (size_t)n, " %.1f MB/s", (double)done / 1e6 / s);
    cli_progress(m->total ? (double)done / (double)m->total : -1, text);
}

/* The summary line on f: "VERBed 'NAME': B bytes in C chunks, S s" (--json:
 * an object). */
static void summary(const mover_t *m, FILE *f)
{
    double s = seconds(m);

    if (m->tty)
        fputc('\n', stderr);
    if (m->cli->json) {
        cli_json_fline(f, cli_json_obj("filter", cli_json_text(m->name, strlen(m->name)),
                                       "kind", json_object_new_string(m->k->type),
                                       "bytes", cli_json_num("%llu", (unsigned long long)m->bytes),
                                       "chunks", cli_json_num("%llu", (unsigned long long)m->chunks),
                                       "seconds", cli_json_num("%.3f", s), NULL));
        return;
    }
    fprintf(f, "%s '", strcmp(m->verb, "dump") == 0 ? "dumped" : "restored");
    cli_escape(f, m->name, strlen(m->name), 0);
    fprintf(f, "' (%s): %llu bytes in %llu chunks, %.2f s", m->k->type,
            (unsigned long long)m->bytes, (unsigned long long)m->chunks, s);
    if (s > 0)
        fprintf(f, ", %.1f MB/s", (double)m->bytes / 1e6 / s);
    fputc('\n', f);
}

/* ---- the daemon ------------------------------------------------------------ */

static int connect_daemon(mover_t *m)
{
    int ex;

    if ((ex = cli_find_socket(m->cli)) != EX_YES)
        return ex;
    /* a reply is a chunk and a little framing */
    ex = cli_redis_open_unix(m->cli->sock_path, m->cli->timeout_s, CHUNK_MAX + 64, &m->r, m->why,
                             sizeof(m->why));
    if (ex != EX_YES)
        fprintf(stderr, "ringbloom: %s: cannot reach %s: %s%s%s\n", m->verb, m->cli->who, m->why,
                m->cli->tried[0] ? "; tried " : "", m->cli->tried);
    return ex;
}

/* A failed exchange: a lost connection or a reply that does not parse
 * (m->why, from redis_node.c), or the daemon's error reply.  Says which
 * on stderr; returns the exit code. */
static int exchange_fail(mover_t *m, int ex, const cli_rv_t *reply, const char *what)
{
    if (ex != EX_YES)
        return say(m, ex, "%s: %s", what, m->why);
    return say(m, EX_REFUSED, "%s: %s", what, reply->type == '-' ? reply->s : "unexpected reply");
}

/* Sends argv (argc words, argl bytes each) and reads its reply: EX_YES
 * with a reply that is no error, or the exit code after saying why (the
 * reply then freed). */
static int call(mover_t *m, size_t argc, const char *const *argv, const size_t *argl,
                cli_rv_t *reply, const char *what)
{
    int ex = cli_redis_send(m->r, argc, argv, argl, m->why, sizeof(m->why));

    if (ex == EX_YES)
        ex = cli_redis_recv(m->r, reply, m->why, sizeof(m->why));
    else
        memset(reply, 0, sizeof(*reply));
    if (ex == EX_YES && reply->type != '-')
        return EX_YES;
    ex = exchange_fail(m, ex, reply, what);
    cli_rv_free(reply);
    return ex;
}

/* CMD NAME (two words) into reply. */
static int call_name(mover_t *m, const char *cmd, cli_rv_t *reply)
{
    const char *argv[2] = { cmd, m->name };
    size_t argl[2] = { strlen(cmd), strlen(m->name) };

    return call(m, 2, argv, argl, reply, cmd);
}

/* TYPE: m->k, or the exit code after saying why (EX_NO: no such filter). */
static int find_kind(mover_t *m)
{
    static const char *const others[][2] = {
        { "CMSk-TYPE", "a count-min sketch" },
        { "string", "a HyperLogLog (TYPE string)" },
    };
    cli_rv_t t;
    int ex = call_name(m, "TYPE", &t);
    const char *what = "of a kind";

    if (ex != EX_YES)
        return ex;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && t.type == '+'; i++)
        if (strcmp(t.s, kinds[i].type) == 0)
            m->k = &kinds[i];
    if (m->k == NULL) {
        ex = t.type == '+' && strcmp(t.s, "none") == 0 ? say(m, EX_NO, "no such filter") : -1;
        for (size_t i = 0; i < sizeof(others) / sizeof(others[0]) && ex < 0; i++)
            if (t.type == '+' && strcmp(t.s, others[i][0]) == 0)
                what = others[i][1];
        if (ex < 0)
            ex = say(m, EX_FAIL, "it is %s that does not dump (only Bloom, cuckoo and counting "
                     "Bloom filters dump)", what);
    }
    cli_rv_free(&t);
    return ex < 0 ? EX_YES : ex;
}

/* The filter's Size from its kind's INFO, as m->total (0 if not given). */
static int find_size(mover_t *m)
{
    char cmd[16];
    cli_rv_t info;
    int ex;

    snprintf(cmd, sizeof(cmd), "%s.INFO", m->k->prefix);
    if ((ex = call_name(m, cmd, &info)) != EX_YES)
        return ex;
    for (size_t i = 0; info.type == '*' && i + 1 < info.count; i += 2)
        if (info.el[i].s != NULL && strcmp(info.el[i].s, "Size") == 0 && info.el[i + 1].type == ':')
            m->total = info.el[i + 1].n > 0 ? (uint64_t)info.el[i + 1].n : 0;
    cli_rv_free(&info);
    return EX_YES;
}

/* ---- the file's records ---------------------------------------------------- */

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
    static uint32_t table[256];

    if (table[1] == 0)
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int j = 0; j < 8; j++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    crc = ~crc;
    while (n--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static void le_put(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t le_get(const unsigned char *p, int n)
{
    uint64_t v = 0;

    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* One record to f: 0, or -1 (errno). */
static int put_record(FILE *f, uint64_t iter, const void *data, size_t len)
{
    unsigned char head[16], tail[4];

    le_put(head, iter, 8);
    le_put(head + 8, len, 8);
    le_put(tail, crc32_update(crc32_update(0, head, 16), data, len), 4);
    return fwrite(head, 1, 16, f) == 16 && fwrite(data, 1, len, f) == len &&
           fwrite(tail, 1, 4, f) == 4 ? 0 : -1;
}

/* Reads n bytes: 0, or -1 after saying why (cut short: truncated). */
static int get_bytes(mover_t *m, FILE *in, void *p, size_t n, const char *what)
{
    if (fread(p, 1, n, in) == n)
        return 0;
    if (ferror(in))
        say(m, EX_FAIL, "reading the file: %s", strerror(errno));
    else
        say(m, EX_FAIL, "the file is truncated (it ends inside %s %llu)", what,
            (unsigned long long)m->chunks + 1);
    return -1;
}

/* The next record into *buf (CHUNK_MAX bytes): its iterator (0: the end)
 * and length, checked against prev (the iterator before; 0 at first).  0,
 * or -1 after saying why. */
static int get_record(mover_t *m, FILE *in, unsigned char *buf, uint64_t prev, uint64_t *iter,
                      size_t *len)
{
    unsigned char head[16], tail[4];
    uint64_t n;

    if (get_bytes(m, in, head, 16, "the header of record") != 0)
        return -1;
    *iter = le_get(head, 8);
    n = le_get(head + 8, 8);
    if (n > CHUNK_MAX || (*iter == 0 && n != 0) || (*iter != 0 && *iter <= prev) ||
        (prev == 0 && *iter != 1)) {
        say(m, EX_FAIL, "the file is corrupt (record %llu: iterator %llu after %llu, %llu bytes)",
            (unsigned long long)m->chunks + 1, (unsigned long long)*iter,
            (unsigned long long)prev, (unsigned long long)n);
        return -1;
    }
    if (get_bytes(m, in, buf, (size_t)n, "record") != 0 ||
        get_bytes(m, in, tail, 4, "the checksum of record") != 0)
        return -1;
    if (le_get(tail, 4) != crc32_update(crc32_update(0, head, 16), buf, (size_t)n)) {
        say(m, EX_FAIL, "the file is corrupt (record %llu fails its checksum)",
            (unsigned long long)m->chunks + 1);
        return -1;
    }
    *len = (size_t)n;
    return 0;
}

/* One header line of at most cap - 1 bytes into line, its newline
 * dropped: 0, or -1 (no such line, or a NUL byte in it: the text after
 * one would go unread). */
static int get_line(FILE *in, char *line, size_t cap)
{
    size_t n = 0;
    int ch;

    while ((ch = getc(in)) != EOF && ch != '\n')
        if (n + 1 < cap && ch != '\0')
            line[n++] = (char)ch;
        else
            return -1;
    line[n] = '\0';
    return ch == '\n' ? 0 : -1;
}

/* ---- dump ------------------------------------------------------------------ */

/* SCANDUMP's loop from iterator 0 into out (the header lines first, once
 * the header chunk has said its format). */
static int dump_chunks(mover_t *m, FILE *out, const char *format)
{
    char cmd[16], itxt[24];
    const char *argv[5] = { cmd, m->name, itxt, "FORMAT", format };
    size_t argl[5] = { 0, strlen(m->name), 0, 6, format ? strlen(format) : 0 };
    long long iter = 0;

    argl[0] = (size_t)snprintf(cmd, sizeof(cmd), "%s.SCANDUMP", m->k->prefix);
    for (;;) {
        cli_rv_t v;
        long long next;
        int ex;

        argl[2] = (size_t)snprintf(itxt, sizeof(itxt), "%lld", iter);
        if ((ex = call(m, format ? 5 : 3, argv, argl, &v, cmd)) != EX_YES)
            return ex;
        if (v.type != '*' || v.count != 2 || v.el[0].type != ':' || v.el[1].type != '$') {
            cli_rv_free(&v);
            return say(m, EX_FAIL, "%s: a reply that is not [iterator, bytes]", cmd);
        }
        next = v.el[0].n;
        if (next != 0 && next <= iter) {
            cli_rv_free(&v);
            return say(m, EX_FAIL, "%s: the iterator went from %lld to %lld", cmd, iter, next);
        }
        if (iter == 0)
            /* Only a Bloom filter has a RedisBloom form; ours all start "RB..DUMP". */
            fprintf(out, "%s\n%s\n%s\n", MAGIC, m->k->type,
                    strcmp(m->k->prefix, "BF") == 0 &&
                    (v.el[1].len < 8 || memcmp(v.el[1].s, "RBLMDUMP", 8) != 0) ? "redisbloom"
                                                                               : "ringbloom");
        if (next != 0 && put_record(out, (uint64_t)next, v.el[1].s, v.el[1].len) != 0) {
            cli_rv_free(&v);
            return say(m, EX_FAIL, "writing the file: %s", strerror(errno));
        }
        if (next != 0) {
            m->bytes += v.el[1].len;
            m->chunks++;
            progress(m, m->bytes);
        }
        cli_rv_free(&v);
        if (next == 0)
            break;
        iter = next;
    }
    if (put_record(out, 0, "", 0) != 0 || fflush(out) != 0)
        return say(m, EX_FAIL, "writing the file: %s", strerror(errno));
    /* INFO's Size was an estimate of the dump's bytes: the bar ends full */
    m->total = m->bytes;
    progress(m, m->bytes);
    return EX_YES;
}

/* dump FILTER FILE|- [--format redisbloom|ringbloom] */
int cmd_dump(cli_t *cli, int argc, char **argv)
{
    mover_t m = { .cli = cli, .verb = "dump", .name = argv[1], .tty = isatty(2) };
    const char *path = argv[2], *format = NULL;
    char *tmp = NULL;
    int ex, to_stdout = strcmp(path, "-") == 0;
    FILE *out = to_stdout ? stdout : NULL;   /* a FILE's: the temp file, once made */

    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--format") != 0 || i + 1 == argc ||
            (strcmp(argv[i + 1], "redisbloom") != 0 && strcmp(argv[i + 1], "ringbloom") != 0)) {
            fprintf(stderr, "ringbloom: dump: options: --format redisbloom|ringbloom\n");
            return EX_USAGE;
        }
        format = argv[++i];
    }
    if (to_stdout && isatty(1)) {
        fprintf(stderr, "ringbloom: dump: standard output is a terminal: name a FILE or "
                "redirect it\n");
        return EX_USAGE;
    }
    clock_gettime(CLOCK_MONOTONIC, &m.t0);
    if ((ex = connect_daemon(&m)) != EX_YES)
        return ex;
    if ((ex = find_kind(&m)) == EX_YES && format != NULL && strcmp(m.k->prefix, "BF") != 0)
        ex = say(&m, EX_FAIL, "--format is for Bloom filters, and this is a %s (TYPE %s)",
                 strcmp(m.k->prefix, "CF") == 0 ? "cuckoo filter" : "counting Bloom filter",
                 m.k->type);
    if (ex == EX_YES)
        ex = find_size(&m);
    /* A new file appears whole or not at all: written beside FILE, renamed
     * over it at the end.  mkstemp's 0600 suits a dump, which holds the
     * filter's hash secret. */
    if (ex == EX_YES && !to_stdout) {
        int fd = -1;
        if ((tmp = malloc(strlen(path) + 8)) != NULL)
            sprintf(tmp, "%s.XXXXXX", path);
        if (tmp == NULL || (fd = mkstemp(tmp)) < 0 || (out = fdopen(fd, "w")) == NULL) {
            ex = say(&m, EX_FAIL, "%s: %s", path, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
            out = NULL;
        }
    }
    if (ex == EX_YES)
        ex = dump_chunks(&m, out, format);
    if (out != NULL && !to_stdout) {   /* the temp file was made: renamed or removed */
        if (ex == EX_YES && (fsync(fileno(out)) != 0 || fclose(out) != 0 || rename(tmp, path) != 0))
            ex = say(&m, EX_FAIL, "%s: %s", path, strerror(errno));
        else if (ex != EX_YES)
            fclose(out);
        if (ex != EX_YES)
            unlink(tmp);
    }
    if (ex == EX_YES)
        summary(&m, to_stdout ? stderr : stdout);
    else if (m.tty && m.chunks > 0)
        fputc('\n', stderr);
    free(tmp);
    cli_redis_close(m.r);
    return ex;
}

/* ---- restore --------------------------------------------------------------- */

/* The three header lines: m->k, or -1 after saying why. */
static int read_head(mover_t *m, FILE *in)
{
    char line[64], format[64];

    if (get_line(in, line, sizeof(line)) != 0 || strncmp(line, "ringbloom-dump ", 15) != 0) {
        say(m, EX_FAIL, "not a ringbloom dump (its first line is not '%s')", MAGIC);
        return -1;
    }
    if (strcmp(line, MAGIC) != 0) {
        say(m, EX_FAIL, "a dump of version '%s', and this ringbloom reads version 1", line + 15);
        return -1;
    }
    if (get_line(in, line, sizeof(line)) != 0 || get_line(in, format, sizeof(format)) != 0) {
        say(m, EX_FAIL, "the file is truncated or corrupt (in its header lines)");
        return -1;
    }
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(line, kinds[i].type) == 0)
            m->k = &kinds[i];
    if (m->k == NULL) {
        say(m, EX_FAIL, "the file's kind '%.40s' is none that restores (MBbloom--, MBbloomCF, "
            "RBbloomCB)", line);
        return -1;
    }
    if (strcmp(format, "ringbloom") != 0 &&
        (strcmp(format, "redisbloom") != 0 || strcmp(m->k->prefix, "BF") != 0)) {
        say(m, EX_FAIL, "the file's format '%.40s' does not go with its kind %s", format,
            m->k->type);
        return -1;
    }
    return 0;
}

/* Reads the replies of the LOADCHUNKs in flight: EX_YES if each was OK,
 * or the first failure's code after saying it (all are read unless the
 * connection failed). */
static int drain(mover_t *m, int *inflight, const char *cmd)
{
    int ex = EX_YES;

    for (; *inflight > 0; (*inflight)--) {
        cli_rv_t v;
        int rx = cli_redis_recv(m->r, &v, m->why, sizeof(m->why));
        if (ex == EX_YES && (rx != EX_YES || v.type == '-'))
            ex = exchange_fail(m, rx, &v, cmd);
        cli_rv_free(&v);
        if (rx != EX_YES) {
            *inflight = 0;
            break;
        }
    }
    return ex;
}

/* The filter this restore made, deleted after a failure, over a new
 * connection: the old one may have replies still to come (a timeout) that
 * would be read as DEL's. */
static void forget(mover_t *m)
{
    cli_rv_t v;
    int ex;

    cli_redis_close(m->r);
    m->r = NULL;
    ex = cli_redis_open_unix(m->cli->sock_path, m->cli->timeout_s, 0, &m->r, m->why,
                             sizeof(m->why));
    if (ex != EX_YES)
        say(m, ex, "DEL: %s", m->why);
    else if ((ex = call_name(m, "DEL", &v)) == EX_YES)
        cli_rv_free(&v);
    if (ex == EX_YES)
        say(m, ex, "the partial filter it made was deleted");
    else
        say(m, ex, "the partial filter it made could not be deleted (see above): DEL it");
}

/* The records of in, each sent with the kind's LOADCHUNK: the header
 * chunk alone (*made once it was OK), then WINDOW in flight. */
static int restore_chunks(mover_t *m, FILE *in, int *made)
{
    char cmd[16], itxt[24];
    unsigned char *buf = malloc(CHUNK_MAX);
    const char *argv[4] = { cmd, m->name, itxt, (const char *)buf };
    size_t argl[4] = { 0, strlen(m->name), 0, 0 };
    uint64_t iter = 0, done;
    int inflight = 0, ex = EX_YES;

    if (buf == NULL)
        return say(m, EX_FAIL, "out of memory");
    argl[0] = (size_t)snprintf(cmd, sizeof(cmd), "%s.LOADCHUNK", m->k->prefix);
    for (;;) {
        if (get_record(m, in, buf, iter, &iter, &argl[3]) != 0) {
            ex = EX_FAIL;
            break;
        }
        if (iter == 0)
            break;
        argl[2] = (size_t)snprintf(itxt, sizeof(itxt), "%llu", (unsigned long long)iter);
        if ((ex = cli_redis_send(m->r, 4, argv, argl, m->why, sizeof(m->why))) != EX_YES) {
            ex = exchange_fail(m, ex, NULL, cmd);
            inflight = 0;
            break;
        }
        inflight++;
        /* the header chunk's reply first: only its OK makes the filter ours */
        if ((m->chunks == 0 || inflight == WINDOW) && (ex = drain(m, &inflight, cmd)) != EX_YES)
            break;
        *made = 1;
        m->bytes += argl[3];
        m->chunks++;
        done = (uint64_t)ftello(in);
        progress(m, m->total ? done : m->bytes);
    }
    if (ex == EX_YES && getc(in) != EOF)
        ex = say(m, EX_FAIL, "the file is corrupt (bytes after its end record)");
    if (ex == EX_YES)
        progress(m, m->total ? m->total : m->bytes);
    /* Every dump has its header chunk and at least one data chunk (an
     * empty filter's arrays too): a header alone would make an empty
     * filter of whatever size it claims. */
    if (m->chunks == 0 && ex == EX_YES)
        ex = say(m, EX_FAIL, "the file is corrupt (no chunks)");
    else if (m->chunks == 1 && ex == EX_YES)
        ex = say(m, EX_FAIL, "the file is corrupt (its header chunk and no data chunk: every "
                 "dump has both)");
    /* after a failure too: a chunk refused is said, and the filter goes */
    if (drain(m, &inflight, cmd) != EX_YES && ex == EX_YES)
        ex = EX_REFUSED;
    free(buf);
    return ex;
}

/* restore FILTER FILE|- [--replace] */
int cmd_restore(cli_t *cli, int argc, char **argv)
{
    mover_t m = { .cli = cli, .verb = "restore", .name = argv[1], .tty = isatty(2) };
    const char *path = argv[2];
    FILE *in = stdin;
    struct stat st;
    cli_rv_t v;
    int ex, replace = 0, made = 0;

    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--replace") != 0) {
            fprintf(stderr, "ringbloom: restore: options: --replace\n");
            return EX_USAGE;
        }
        replace = 1;
    }
    if (strcmp(path, "-") == 0 && isatty(0)) {
        fprintf(stderr, "ringbloom: restore: standard input is a terminal: name a FILE or "
                "redirect it\n");
        return EX_USAGE;
    }
    clock_gettime(CLOCK_MONOTONIC, &m.t0);
    if (strcmp(path, "-") != 0 && (in = fopen(path, "rb")) == NULL)
        return say(&m, EX_FAIL, "%s: %s", path, strerror(errno));
    if (fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode))
        m.total = (uint64_t)st.st_size;
    if (read_head(&m, in) != 0)
        ex = EX_FAIL;
    else
        ex = connect_daemon(&m);
    if (ex == EX_YES && (ex = call_name(&m, "EXISTS", &v)) == EX_YES) {
        if (v.type == ':' && v.n > 0 && !replace)
            ex = say(&m, EX_REFUSED, "the filter exists (--replace replaces it)");
        cli_rv_free(&v);
        if (ex == EX_YES && replace && (ex = call_name(&m, "DEL", &v)) == EX_YES)
            cli_rv_free(&v);
    }
    if (ex == EX_YES)
        ex = restore_chunks(&m, in, &made);
    if (ex == EX_YES)
        summary(&m, stdout);
    else if (m.tty && m.chunks > 0)
        fputc('\n', stderr);
    if (ex != EX_YES && made)
        forget(&m);
    if (in != stdin)
        fclose(in);
    cli_redis_close(m.r);
    return ex;
}
