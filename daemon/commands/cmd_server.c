/*
 * cmd_server.c - the server commands: the connection's (PING, ECHO, QUIT,
 * SELECT, CLIENT, HELLO, AUTH, RESET, TIME: what Redis clients send on
 * connecting), CONFIG GET, SAVE, BGSAVE and SHUTDOWN; their table and
 * handlers (INFO: cmd_info.c).  HELLO chooses the connection's protocol (RESP2 or 3),
 * which the encoder applies to every reply after it.
 */
#include "config.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "config_table.h"
#include "filter_source.h"
#include "snapshot.h"

static void cmd_ping(rbd_ctx_t *x)
{
    if (x->argc > 2)
        rbd_cmd_wrong_arity(x);
    else if (x->argc == 2)
        rbi_resp_bulk(x->out, x->argv[1], x->argl[1]);
    else
        rbi_resp_simple(x->out, "PONG");
}

static void cmd_echo(rbd_ctx_t *x)
{
    rbi_resp_bulk(x->out, x->argv[1], x->argl[1]);
}

static void cmd_quit(rbd_ctx_t *x)
{
    rbi_resp_simple(x->out, "OK");
    x->c->closing = 1;
}

static void cmd_select(rbd_ctx_t *x)
{
    if (rbd_cmd_arg_is(x, 1, "0"))
        rbi_resp_simple(x->out, "OK");
    else
        rbi_resp_error(x->out, "ERR DB index is out of range");
}

/* HELLO [protover [AUTH user pass] [SETNAME name]]: Redis 7's checks in
 * its order, then the protocol switch and a map about the server (in
 * RESP2 a flat array).  There are no passwords: AUTH succeeds for the
 * user "default" with any password, as Redis without requirepass does,
 * and fails for any other user. */
static void cmd_hello(rbd_ctx_t *x)
{
    long long ver = 0;
    size_t name = 0;

    if (x->argc >= 2) {
        if (rbd_cmd_arg_ll(x, 1, &ver) != 0) {
            rbi_resp_error(x->out, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            rbi_resp_error(x->out, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (size_t i = 2; i < x->argc; i++) {
        size_t more = x->argc - 1 - i;
        if (rbd_cmd_arg_is(x, i, "AUTH") && more >= 2) {
            if (!rbd_cmd_arg_is(x, i + 1, "default")) {
                rbi_resp_error(x->out, "WRONGPASS invalid username-password pair or user is "
                               "disabled.");
                return;
            }
            i += 2;
        } else if (rbd_cmd_arg_is(x, i, "SETNAME") && more >= 1) {
            name = ++i;
        } else {
            rbi_resp_error(x->out, "ERR Syntax error in HELLO option '%.*s'",
                           (int)(x->argl[i] < 64 ? x->argl[i] : 64), x->argv[i]);
            return;
        }
    }
    if (name != 0 && rbd_cmd_set_name(x, name, "Client names", &x->c->name) != 0)
        return;
    if (ver != 0)
        x->out->resp3 = ver == 3;
    /* version: the compatibility value, INFO's redis_version (clients
     * choose what to send by it); ringbloom_version the product's, under
     * INFO's name for it. */
    rbi_resp_map(x->out, 8);
    rbi_resp_bulk_str(x->out, "server");
    rbi_resp_bulk_str(x->out, "ringbloom");
    rbi_resp_bulk_str(x->out, "version");
    rbi_resp_bulk_str(x->out, RBD_REDIS_VERSION);
    rbi_resp_bulk_str(x->out, "ringbloom_version");
    rbi_resp_bulk_str(x->out, PACKAGE_VERSION);
    rbi_resp_bulk_str(x->out, "proto");
    rbi_resp_int(x->out, x->out->resp3 ? 3 : 2);
    rbi_resp_bulk_str(x->out, "id");
    rbi_resp_int(x->out, (long long)x->c->id);
    rbi_resp_bulk_str(x->out, "mode");
    rbi_resp_bulk_str(x->out, "standalone");
    rbi_resp_bulk_str(x->out, "role");
    rbi_resp_bulk_str(x->out, "master");
    rbi_resp_bulk_str(x->out, "modules");
    rbi_resp_array(x->out, 0);
}

/* AUTH [user] password, answered as Redis answers it without
 * requirepass. */
static void cmd_auth(rbd_ctx_t *x)
{
    if (x->argc > 3)
        rbi_resp_error(x->out, "ERR syntax error");
    else if (x->argc == 2)
        rbi_resp_error(x->out, "ERR AUTH <password> called without any password configured "
                       "for the default user. Are you sure your configuration is correct?");
    else if (rbd_cmd_arg_is(x, 1, "default"))
        rbi_resp_simple(x->out, "OK");
    else
        rbi_resp_error(x->out, "WRONGPASS invalid username-password pair or user is disabled.");
}

/* RESET: the connection as it was at connect (no transaction, RESP2, no
 * name); +RESET. */
static void cmd_reset(rbd_ctx_t *x)
{
    rbd_txn_reset(&x->c->txn);
    x->out->resp3 = 0;
    free(x->c->name);
    x->c->name = NULL;
    rbi_resp_simple(x->out, "RESET");
}

/* TIME: unix seconds and microseconds, two bulk strings. */
static void cmd_time(rbd_ctx_t *x)
{
    struct timespec ts;
    char sec[32], usec[32];

    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(sec, sizeof(sec), "%lld", (long long)ts.tv_sec);
    snprintf(usec, sizeof(usec), "%ld", ts.tv_nsec / 1000);
    rbi_resp_array(x->out, 2);
    rbi_resp_bulk_str(x->out, sec);
    rbi_resp_bulk_str(x->out, usec);
}

/* ---- CONFIG GET ------------------------------------------------------------------ */

#define CONFIG_GET_PATTERNS 1024   /* more than the settings there are, many times */

typedef struct cfg_get {
    rbd_ctx_t *x;
    size_t matches;
    int count_only;
} cfg_get_t;

static int cfg_match(rbd_ctx_t *x, const char *name)
{
    for (size_t i = 2; i < x->argc; i++) {
        char pat[256];
        if (x->argl[i] >= sizeof(pat))
            continue;
        memcpy(pat, x->argv[i], x->argl[i]);
        pat[x->argl[i]] = '\0';
        if (fnmatch(pat, name, FNM_CASEFOLD) == 0)
            return 1;
    }
    return 0;
}

/* A setting matched by a pattern, its name and value (a secret's,
 * RBD_SET_SECRET, as "(redacted)" when set: config|get is a tier an
 * exporter's user is given, and the value is a credential of elsewhere);
 * then its other names a pattern matches, each with the value, as Redis 7
 * answers its aliases (prometheus-redis-exporter reads maxmemory and
 * maxclients from CONFIG GET *). */
static void cfg_emit(const char *name, const char *value, void *arg)
{
    cfg_get_t *g = arg;
    long row = rbd_setting_row(name, strlen(name));

    if (value[0] != '\0' && row >= 0 && (rbd_settings[row].flags & RBD_SET_SECRET))
        value = "(redacted)";
    for (size_t i = 0; i <= rbd_naliases; i++) {
        const char *shown = i == 0 ? name : rbd_aliases[i - 1].alias;
        if ((i > 0 && strcmp(rbd_aliases[i - 1].name, name) != 0) || !cfg_match(g->x, shown))
            continue;
        g->matches++;
        if (!g->count_only) {
            rbi_resp_bulk_str(g->x->out, shown);
            rbi_resp_bulk_str(g->x->out, value);
        }
    }
}

/* CONFIG SET's pairs set into fresh, each checked as Redis 7 checks them
 * (its words in the errors): a value is text of at most 4095 bytes (no NUL,
 * no control character: rbd_config_set), a setting is named once (an
 * alias counts as its setting), the access rules are the file's (each
 * acl-user / acl-group line adds, so a value could not replace them).
 * 0, or -1 with the error replied. */
static int config_set_pairs(rbd_ctx_t *x, rbd_config_t *fresh)
{
    unsigned char named[RBD_REWRITE_MAX] = { 0 };
    char key[64], val[4096], err[512];

    for (size_t i = 2; i < x->argc; i += 2) {
        const char *why = NULL;
        long row = rbd_setting_row(x->argv[i], x->argl[i]);
        if (x->argl[i] >= sizeof(key) || x->argl[i + 1] >= sizeof(val))
            why = x->argl[i] >= sizeof(key) ? "too long" : "value longer than 4095 bytes";
        else if (memchr(x->argv[i + 1], '\0', x->argl[i + 1]) != NULL)
            why = "a NUL byte in the value (a value is text)";
        else if (row >= 0 && row < RBD_REWRITE_MAX && named[row]++)
            why = "duplicate parameter";
        else if (row >= 0 && (rbd_settings[row].kind == T_ACL_USER ||
                              rbd_settings[row].kind == T_ACL_GROUP))
            why = "access rules are set in the file, then SIGHUP";
        if (why == NULL) {
            memcpy(key, x->argv[i], x->argl[i]);
            key[x->argl[i]] = '\0';
            memcpy(val, x->argv[i + 1], x->argl[i + 1]);
            val[x->argl[i + 1]] = '\0';
            if (rbd_config_set(fresh, key, val, err, sizeof(err)) == 0)
                continue;
            why = err;
        }
        rbi_resp_error(x->out, "ERR CONFIG SET failed (possibly related to argument '%.*s') - "
                       "%s", (int)(x->argl[i] < 64 ? x->argl[i] : 64), x->argv[i], why);
        return -1;
    }
    return 0;
}

/* CONFIG SET's logfile, when the request names it (by any of its names:
 * the file in use named again may have become one the log cannot take)
 * or it changed: opened here as the log opens it (rbd_log_open: a
 * regular file of this user or root, never waited on), so that a file the
 * log cannot take is this command's error, said in the log too, and
 * nothing is applied; the descriptor goes to the apply, which takes that
 * very file (no second open that could fail after the OK).  *fd: it, or
 * -1 (no file to open).  0, or -1 with the error replied. */
static int config_set_logfile(rbd_ctx_t *x, const rbd_config_t *fresh, int *fd)
{
    long row = rbd_setting_row("logfile", 7);
    int named = 0;
    char err[4200];

    *fd = -1;
    for (size_t i = 2; i + 1 < x->argc; i += 2)
        named |= rbd_setting_row(x->argv[i], x->argl[i]) == row;
    if (fresh->logfile[0] == '\0' || (!named && strcmp(fresh->logfile, x->s->cfg.logfile) == 0))
        return 0;
    if ((*fd = rbd_log_open(fresh->logfile, err, sizeof(err))) >= 0)
        return 0;
    rbd_log(LOG_WARNING, "CONFIG SET by uid %u pid %d refused: %s; the log stays where it was",
            (unsigned)x->c->uid, (int)x->c->pid, err);
    rbi_resp_error(x->out, "ERR CONFIG SET failed (possibly related to argument 'logfile') - "
                   "%s", err);
    return -1;
}

/* CONFIG SET name value [name value ...]: all or nothing, as Redis 7, and
 * only settings a reload may change (the others take a restart); @admin
 * (CONFIG's row); a path made absolute as at start (against the directory
 * the daemon started in); put in force as a SIGHUP would (server.c's
 * rbd_server_apply, through the server's `apply`: the loop is above the
 * commands), not written to the file. */
static void config_set(rbd_ctx_t *x)
{
    rbd_config_t fresh = x->s->cfg;
    char err[4200];
    const char *which;
    int log_fd;

    if (x->argc % 2 != 0) {
        rbi_resp_error(x->out, "ERR wrong number of arguments for 'config|set' command");
        return;
    }
    if (config_set_pairs(x, &fresh) != 0)
        return;
    if (x->s->src != NULL && rbd_config_paths(x->s->src, &fresh, err, sizeof(err)) != 0) {
        rbi_resp_error(x->out, "ERR CONFIG SET failed - %s", err);
        return;
    }
    if (rbd_config_keep_restart_only(&fresh, &x->s->cfg, &which)) {
        rbi_resp_error(x->out, "ERR CONFIG SET failed (possibly related to argument '%s') - "
                       "can't set immutable config (it takes a restart)", which);
        return;
    }
    if (rbd_config_check(&fresh, err, sizeof(err)) != 0) {
        rbi_resp_error(x->out, "ERR CONFIG SET failed - %s", err);
        return;
    }
    if (config_set_logfile(x, &fresh, &log_fd) != 0)
        return;
    /* appendonly yes takes a snapshot first, which may fail: before the
     * rest, so that nothing is applied then (all or nothing). */
    if (rbd_appendonly_set(&x->s->snaps, &x->s->aof, x->s->state.seg, fresh.appendonly, err,
                           sizeof(err)) != 0) {
        if (log_fd >= 0)
            close(log_fd);
        rbi_resp_error(x->out, "ERR CONFIG SET failed (possibly related to argument "
                       "'appendonly') - %s", err);
        return;
    }
    x->s->apply(x->s, &fresh, log_fd);
    rbd_log(LOG_NOTICE, "CONFIG SET by uid %u pid %d", (unsigned)x->c->uid, (int)x->c->pid);
    rbi_resp_simple(x->out, "OK");
}

/* CONFIG with a subcommand it does not have (GET and SET are rows of
 * their own: an access rule may name config|get alone). */
static void cmd_config(rbd_ctx_t *x)
{
    rbi_resp_error(x->out, "ERR unknown subcommand '%.*s'. Try CONFIG GET, SET or REWRITE.",
                   (int)(x->argl[1] < 64 ? x->argl[1] : 64), x->argv[1]);
}

static void config_get(rbd_ctx_t *x)
{
    cfg_get_t g = { x, 0, 1 };
    char save[32];

    /* Every setting is matched against every pattern (fnmatch): 100,000
     * patterns held the loop 218 ms, and a request may carry two million. */
    if (x->argc - 2 > CONFIG_GET_PATTERNS) {
        rbi_resp_error(x->out, "ERR CONFIG GET takes at most %d patterns", CONFIG_GET_PATTERNS);
        return;
    }
    /* A Redis name that redis-benchmark asks for, mapped to ours (appendonly is a row). */
    snprintf(save, sizeof(save), "%u 1", x->s->cfg.save_seconds);
    rbd_config_each(&x->s->cfg, cfg_emit, &g);
    g.matches += cfg_match(x, "save");
    rbi_resp_map(x->out, g.matches);
    g.count_only = 0;
    rbd_config_each(&x->s->cfg, cfg_emit, &g);
    if (cfg_match(x, "save")) {
        rbi_resp_bulk_str(x->out, "save");
        rbi_resp_bulk_str(x->out, save);
    }
}

/* CONFIG REWRITE: the file brought to the settings in force
 * (config_rewrite.c says what it keeps and leaves). */
static void config_rewrite(rbd_ctx_t *x)
{
    char err[8400];

    if (rbd_config_rewrite(&x->s->cfg, x->s->src, err, sizeof(err)) != 0) {
        rbi_resp_error(x->out, "ERR Rewriting config file: %s", err);
        return;
    }
    rbd_log(LOG_NOTICE, "CONFIG REWRITE by uid %u pid %d: %s", (unsigned)x->c->uid,
            (int)x->c->pid, x->s->src->file);
    rbi_resp_simple(x->out, "OK");
}

static const rbd_command_t config_subs[] = {
    RBD_SUBCOMMAND("GET", -3, CMD_ADMIN, config_get, "server",
                   "Returns the settings whose names match patterns", "parameter:pattern..."),
    RBD_SUBCOMMAND("SET", -4, CMD_ADMIN | CMD_OTHERS, config_set, "server",
                   "Changes settings a reload may change, at once, all or none",
                   "(parameter value)..."),
    RBD_SUBCOMMAND("REWRITE", 2, CMD_ADMIN | CMD_OTHERS, config_rewrite, "server",
                   "Writes the settings in force into the configuration file", ""),
    RBD_COMMAND_END,
};

/* ---- SAVE, SHUTDOWN ------------------------------------------------------------- */

static void cmd_save(rbd_ctx_t *x)
{
    char err[512];

    if (rbd_snapshot_save(&x->s->snaps, &x->s->aof, x->s->state.seg, err, sizeof(err)) == 0) {
        rbi_resp_simple(x->out, "OK");
    } else {
        /* The operator reading the daemon's log must see it too. */
        rbd_log(LOG_WARNING, "SAVE failed: %s", err);
        rbi_resp_error(x->out, "ERR snapshot failed: %s", err);
    }
}

/* BGSAVE [SCHEDULE]: a snapshot in the background, as Redis answers it.
 * Inside an EXEC, or with SCHEDULE while one is being written, it is
 * scheduled (the next second's tick starts it, snapshot.c): a freeze
 * inside an EXEC would split the transaction between the snapshot and the
 * log (T2), and Redis schedules it there too. */
static void cmd_bgsave(rbd_ctx_t *x)
{
    char err[512];
    int schedule = x->argc == 2 && rbd_cmd_arg_is(x, 1, "SCHEDULE");

    if (x->argc > 2 || (x->argc == 2 && !schedule)) {
        rbi_resp_error(x->out, "ERR syntax error");
        return;
    }
    if (x->s->in_exec || (schedule && x->s->snaps.job != NULL)) {
        x->s->snaps.scheduled = 1;
        rbi_resp_simple(x->out, "Background saving scheduled");
        return;
    }
    if (x->s->snaps.job != NULL) {
        rbi_resp_error(x->out, "ERR Background save already in progress");
        return;
    }
    if (rbd_snapshot_start(&x->s->snaps, &x->s->aof, x->s->state.seg, err, sizeof(err)) == 0) {
        rbi_resp_simple(x->out, "Background saving started");
    } else {
        rbd_log(LOG_WARNING, "BGSAVE failed: %s", err);
        rbi_resp_error(x->out, "ERR snapshot failed: %s", err);
    }
}

static void cmd_shutdown(rbd_ctx_t *x)
{
    int save = 1;

    if (x->argc > 2) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (x->argc == 2) {
        if (rbd_cmd_arg_is(x, 1, "NOSAVE"))
            save = 0;
        else if (!rbd_cmd_arg_is(x, 1, "SAVE")) {
            rbi_resp_error(x->out, "ERR syntax error");
            return;
        }
    }
    rbd_log(LOG_NOTICE, "SHUTDOWN requested by client pid %d uid %u", (int)x->c->pid,
            (unsigned)x->c->uid);
    x->s->shutdown = 1;
    x->s->shutdown_save = save;
    /* As Redis: no reply; the connection closes when the daemon exits. */
}

/* NATS.SKIP seq: the stream message seq, which halted this host for its
 * Rb-Format, skipped by every host (filter_source.h); the reply comes
 * once the stream holds the skip. */
static void cmd_nats_skip(rbd_ctx_t *x)
{
    long long seq;
    char err[1024];

    if (x->s->fsource == NULL) {
        rbi_resp_error(x->out, "ERR NATS.SKIP: filter-source is not nats");
        return;
    }
    if (rbd_cmd_arg_ll(x, 1, &seq) != 0 || seq < 1) {
        rbi_resp_error(x->out, "ERR NATS.SKIP: the sequence must be a positive integer");
        return;
    }
    if (rbd_fsource_skip(x->s->fsource, &x->s->state, (uint64_t)seq, x->c->id, err,
                         sizeof(err)) != 0)
        rbi_resp_error(x->out, "%s", err);
}

const rbd_command_t rbd_cmd_server_table[] = {
    RBD_COMMAND("PING", -1, CMD_FAST, cmd_ping, "connection",
                "Returns PONG, or the message",
                "[message]"),
    RBD_COMMAND("ECHO", 2, CMD_FAST, cmd_echo, "connection",
                "Returns the message",
                "message"),
    RBD_COMMAND("QUIT", -1, CMD_TXN | CMD_FAST, cmd_quit, "connection",
                "Closes the connection",
                ""),
    RBD_COMMAND("SELECT", 2, CMD_FAST, cmd_select, "connection",
                "Selects database 0, the only one",
                "index:integer"),
    RBD_COMMAND("HELLO", -1, CMD_FAST, cmd_hello, "connection",
                "Switches the protocol and describes the server",
                "[protover:integer [AUTH username password] [SETNAME clientname]]"),
    RBD_COMMAND("AUTH", -2, CMD_FAST, cmd_auth, "connection",
                "Authenticates as the default user",
                "[username] password"),
    RBD_COMMAND("RESET", 1, CMD_TXN | CMD_FAST, cmd_reset, "connection",
                "Resets the connection",
                ""),
    RBD_COMMAND("TIME", 1, CMD_FAST, cmd_time, "server",
                "Returns the server's time",
                ""),
    RBD_COMMAND_SUBS("CONFIG", -2, CMD_ADMIN, config_subs, cmd_config, "server",
                "Returns the settings whose names match patterns, or changes those a "
                "reload may change",
                "(GET parameter:pattern... | SET (parameter value)... | REWRITE)"),
    RBD_COMMAND("SAVE", 1, CMD_ADMIN | CMD_OTHERS | CMD_NO_MULTI, cmd_save, "server",
                "Writes a snapshot and starts a new log",
                ""),
    RBD_COMMAND("BGSAVE", -1, CMD_ADMIN | CMD_OTHERS, cmd_bgsave, "server",
                "Writes a snapshot in the background",
                "[SCHEDULE]"),
    RBD_COMMAND("SHUTDOWN", -1, CMD_ADMIN | CMD_OTHERS | CMD_NO_MULTI, cmd_shutdown, "server",
                "Stops the daemon, with a snapshot unless NOSAVE",
                "[NOSAVE|SAVE]"),
    RBD_COMMAND("NATS.SKIP", 2, CMD_ADMIN | CMD_OTHERS | CMD_NO_MULTI, cmd_nats_skip, "server",
                "Skips, on every host, the stream message of a newer Rb-Format that halted "
                "replication",
                "sequence:integer"),
    RBD_COMMAND_END,
};
