/*
 * cli.h - what the files of the ringbloom CLI share: the exit codes, the
 * global options (cli_t), a subcommand's handler, and each file's
 * functions, declared under the file that defines them.
 *
 * A file calls only files below it (docs/design.md, "The CLI"):
 *   main.c          options, usage, the subcommand table
 *   cluster.c       import-cluster: a Redis Cluster's slot map into the ring; keyslot
 *   dump.c          dump, restore: a filter to a file and back, through the daemon
 *   redis_node.c    a RESP2 server (Redis over TCP, the daemon over its socket):
 *                   commands, their replies as trees
 *   metrics.c       metrics: INFO, the ring and the filters for Prometheus
 *   ring_offline.c  ring: a private ring, then reads.c's lookup stream
 *   reads.c         lookup, exists, nodes, filters: from shared memory
 *   writes.c        add, load, node, reserve, reset, delete, shutdown: through the daemon
 *   info.c          info: the daemon's INFO, fetched, walked, typed
 *   reach.c         the instance: its socket, the daemon's segment, a connection
 *   out.c           what is printed: escaped text, JSON (json-c), error lines
 */
#ifndef RB_CLI_H
#define RB_CLI_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "ringbloom.h"

/* Exit codes (documented in --help and README):
 *   0 ok / yes (every key present)    1 no (some key not present, no
 *                                        such filter, an empty ring)
 *   2 usage error                      3 daemon unreachable / no answer in
 *                                        time / no trusted segment
 *   4 the daemon refused (error reply, no permission)
 *   5 other failure
 * CLI_USAGE is no exit code: a handler returns it (through cli_usage)
 * when its arguments do not fit, having said which one; main then prints
 * that command's usage lines (not the whole usage) and exits EX_USAGE. */
enum {
    EX_YES = 0, EX_NO = 1, EX_USAGE = 2, EX_UNREACH = 3, EX_REFUSED = 4, EX_FAIL = 5,
    CLI_USAGE = -1
};

/* The global options, as main parsed them; handlers read them. */
typedef struct cli {
    const char *instance;   /* --instance, "default"; with --socket alone, the
                               daemon's answer once cli_attach has asked it */
    int instance_set;       /* --instance was given */
    const char *socket;     /* --socket, or NULL */
    char asked[RB_INSTANCE_MAX + 1]; /* the instance the daemon at --socket named */
    int json;               /* --json */
    uid_t owner;            /* --owner; (uid_t)-1: the socket directory's owner */
    uint32_t timeout_s;     /* --timeout */
    const char *sock_path;  /* NULL until cli_find_socket sets it */
    uid_t sock_owner;       /* its directory's owner, (uid_t)-1: no directory */
    rb_paths_t paths;       /* the instance's paths, behind sock_path */
    char tried[600];        /* the sockets looked at, for messages */
    char who[200];          /* "instance 'X'" or "the daemon at PATH" */
} cli_t;

/* A subcommand: argv[0] is its name.  main has checked the number of
 * arguments against the subcommand's table row; the handler checks the
 * rest.  Returns an exit code, or CLI_USAGE. */
typedef int cli_cmd_fn(cli_t *cli, int argc, char **argv);

/* A decimal uint32 argument, nothing else in s (no sign, no spaces): 0, or
 * -1. */
static inline int cli_parse_u32(const char *s, uint32_t *out)
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

/* ---- cluster.c --------------------------------------------------------------- */

cli_cmd_fn cmd_import_cluster, cmd_keyslot;

/* ---- dump.c ------------------------------------------------------------------ */

cli_cmd_fn cmd_dump, cmd_restore;

/* ---- redis_node.c ------------------------------------------------------------ */

/* A RESP2 reply read from a Redis server, as a tree.  type is the RESP2
 * type byte ('+' simple string, '-' error, ':' integer, '$' bulk string,
 * '*' array) or '_' for a nil bulk or array.  s (NUL-terminated, len
 * bytes) holds a string's bytes; n an integer, or an array's length, of
 * which el[0 .. count) were read (count == n once the reply is whole). */
typedef struct cli_rv {
    char type;
    long long n;
    char *s;
    size_t len;
    struct cli_rv *el;
    size_t count;
} cli_rv_t;

typedef struct cli_redis cli_redis_t;

/* Connects to host:port (a name or an address, IPv4 or IPv6) within
 * timeout_s seconds, which then bounds every send and receive.  EX_YES,
 * or EX_UNREACH / EX_FAIL with the reason in why (naming host:port). */
int cli_redis_open(const char *host, const char *port, unsigned timeout_s, cli_redis_t **out,
                   char *why, size_t cap);
void cli_redis_close(cli_redis_t *r);

/* Connects to the Unix socket at path (the daemon's, once cli_find_socket
 * has judged its directory); timeout_s bounds every send and receive, and
 * a reply's bulk strings may be up to max_bulk bytes (at least 1 MiB).
 * EX_YES, or EX_UNREACH / EX_FAIL with the reason in why (naming path). */
int cli_redis_open_unix(const char *path, unsigned timeout_s, size_t max_bulk, cli_redis_t **out,
                        char *why, size_t cap);

/* Sends one command (argc NUL-terminated words) and reads its reply into
 * *reply (an error reply is a reply: type '-').  The reply is bounded
 * (a line 64 KiB, a bulk string 1 MiB, 2^20 elements, nesting 8): a
 * reply past a bound, or not RESP2, is EX_FAIL, a broken connection or
 * no answer within the timeout EX_UNREACH, each with the reason in why;
 * *reply is then empty.  Free it with cli_rv_free. */
int cli_redis_call(cli_redis_t *r, size_t argc, const char *const *argv, cli_rv_t *reply,
                   char *why, size_t cap);

/* cli_redis_call in halves, for a pipeline: send a command whose
 * arguments are argl[i] bytes each (binary), and, later, read the next
 * reply in the order the commands were sent.  Errors as cli_redis_call. */
int cli_redis_send(cli_redis_t *r, size_t argc, const char *const *argv, const size_t *argl,
                   char *why, size_t cap);
int cli_redis_recv(cli_redis_t *r, cli_rv_t *reply, char *why, size_t cap);

/* Frees what v holds (not v itself). */
void cli_rv_free(cli_rv_t *v);

/* ---- metrics.c --------------------------------------------------------------- */

cli_cmd_fn cmd_metrics;

/* ---- ring_offline.c ---------------------------------------------------------- */

cli_cmd_fn cmd_ring;

/* ---- reads.c ----------------------------------------------------------------- */

cli_cmd_fn cmd_lookup, cmd_exists, cmd_nodes, cmd_filters;

/* lookup -: one key per line of standard input, "key<TAB>node" per output
 * line (--json: {"key":KEY,"nodes":[NODE]} per line, as `lookup KEY`
 * prints), through seg's ring; closes seg.  EX_YES, or EX_NO for an empty
 * ring (EX_FAIL for other errors), after the lines answered so far. */
int cli_lookup_stream(const cli_t *cli, rb_segment_t *seg);

/* ---- writes.c ---------------------------------------------------------------- */

cli_cmd_fn cmd_add, cmd_load, cmd_node, cmd_reserve, cmd_reset, cmd_delete, cmd_shutdown;

/* ---- info.c ------------------------------------------------------------------ */

cli_cmd_fn cmd_info;

/* INFO [section] (NULL: the daemon's default sections) into buf, as text
 * ending in a NUL.  EX_YES, or the exit code after saying why on stderr. */
int cli_info_fetch(cli_t *cli, const char *section, char *buf, size_t cap);

/* Called for each line of INFO's text: a section's title, lower-cased,
 * with key and value NULL; then each of its fields, section NULL for a
 * field before the first title. */
typedef void cli_info_fn(const char *section, const char *key, const char *value, void *arg);

/* Walks INFO's text, cutting it into NUL-terminated pieces in place
 * (they stay valid while text does). */
void cli_info_each(char *text, cli_info_fn *fn, void *arg);

/* Is the field a number (a JSON number literal, and not one of the
 * fields that name something, listed in info.c)?  Otherwise a string. */
int cli_info_is_number(const char *key, const char *value);

/* ---- reach.c ----------------------------------------------------------------- */

/* Sets cli->sock_path and sock_owner, once: --socket, or by name the
 * instance's default socket (rb_default_paths) and then its system socket
 * (rb_system_paths), the first whose directory exists and holds the
 * socket (else the first whose directory exists, for a daemon that is
 * not running).  Each directory must pass rb_daemon_uid; one that fails
 * stops the search.  cli->tried lists the paths looked at and what was
 * found.  EX_YES, or EX_USAGE for a bad instance name or EX_UNREACH for
 * an untrusted directory (said on stderr). */
int cli_find_socket(cli_t *cli);

/* Attaches the instance's segment, trusting only the daemon's user:
 * --owner, or else the owner of the socket's directory (rb_daemon_uid),
 * which works whether or not the daemon is running.  A segment whose
 * daemon is gone is read with a warning.  With --socket and no
 * --instance, the instance is the one the daemon at the socket names
 * (INFO's instance field), so that daemon must answer.  EX_YES, or the
 * exit code after saying why on stderr. */
int cli_attach(cli_t *cli, rb_segment_t **seg);

/* Connects to the daemon, once the socket's directory has passed
 * rb_daemon_uid (another user may have made /tmp/ringbloom-<uid>).
 * EX_YES, or the exit code after saying why on stderr. */
int cli_connect(cli_t *cli, rb_conn_t **c);

/* A failed request to the daemon, said on stderr; returns its exit code.
 * changes: the request was a change (so a timeout leaves it unknown
 * whether it was applied). */
int cli_conn_fail(const cli_t *cli, rb_conn_t *c, const char *what, int rc, int changes);

/* ---- out.c ------------------------------------------------------------------- */

/* The CLI's one escaping of bytes s[0..len) (a name, a key, an INFO
 * value) to f.  Its text T: the backslash as \\, tab, newline and CR as
 * \t \n \r, other control bytes, DEL and every byte that is not part of
 * valid UTF-8 as \xNN, valid UTF-8 as it is.  T is valid UTF-8 without
 * control characters, and distinct byte strings have distinct T (every
 * backslash in T starts an escape, so T decodes back).  quoted 0: T as
 * it is; 1: T in double quotes with its backslashes and quotes escaped
 * by a backslash - at once a JSON string and a Prometheus label value
 * (text format 0.0.4), each of which reads back as T. */
void cli_escape(FILE *f, const char *s, size_t len, int quoted);

/* cli_escape's T of s as a new json-c string (NULL: no memory); written
 * by json-c it is the same bytes as cli_escape quoted. */
json_object *cli_json_text(const char *s, size_t len);
/* j on f (stdout) as json-c writes it, without blanks and with '/' as is
 * ("null" for NULL). */
void cli_json_fprint(FILE *f, json_object *j);
void cli_json_print(json_object *j);
/* A JSON number written with the digits printf's fmt gives (json-c keeps
 * them: "%llu", "%.17g", "%.3f"); NULL: no memory. */
json_object *cli_json_num(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A new object of (key, value) pairs up to a NULL key, in that order; the
 * values are taken (freed on failure too); NULL if any value is NULL. */
json_object *cli_json_obj(const char *key, ...);
/* Appends v (taken) to array; -1: NULL array or v, or no memory. */
int cli_json_push(json_object *array, json_object *v);
/* j on f (stdout) as cli_json_fprint writes it, a newline, and j freed. */
void cli_json_fline(FILE *f, json_object *j);
void cli_json_line(json_object *j);

/* A node name or a key (of add / exists) in line-oriented output:
 * cli_escape's T, so a name or key never breaks a line or a field.
 * (`lookup -` echoes its input lines as they are: they hold no newline,
 * and the node after the last tab is escaped.) */
void cli_text_str(const char *s, size_t len);

/* A filter layout's name as reserve --layout takes it ("standard",
 * "blocked", "redisbloom"). */
const char *cli_layout_name(rb_bloom_layout_t layout);

/* A progress line on stderr (a TTY), redrawn in place: a 30-column bar
 * filled to frac (a part of 1; < 0: unknown, an empty frame), then
 * text. */
void cli_progress(double frac, const char *text);

/* "ringbloom: what: <rb_strerror(rc)>" on stderr; returns code. */
int cli_fail(int code, const char *what, int rc);

/* "ringbloom: cmd: <fmt...>" on stderr (what is wrong with the
 * arguments: the word that does not fit, or what is missing); returns
 * CLI_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* RB_CLI_H */
