/*
 * check_config.c - the configuration as a boundary (issue 41): CONFIG SET
 * of every setting of the table (config_table.c's rows, read here, so a
 * setting added later is tried too) with hostile values, each refused
 * with a clear error and nothing changed, or in force and written by
 * CONFIG REWRITE into a file the daemon's own parser reads back as exactly
 * the settings in force (and SIGHUP and a restart keep them); a repeated
 * parameter; the file's syntax (quotes and escapes, a value means what
 * CONFIG GET shows, NUL bytes and over-long lines refused whole); the log
 * one line per message.  check_config_files.c: the rewrite's temporary
 * file and the directory it is made in, the logfile, MONITOR's and the
 * slow log's secrets.
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "check_config.h"
#include "config_syntax.h"
#include "config_table.h"
#include "rbd_config.h"
#include "rbd_log.h"

rbd_proc_t cfg_d;

void cfg_launch(rbd_proc_t *d)
{
    char here[PATH_MAX];

    ck_assert_ptr_nonnull(getcwd(here, sizeof(here)));
    ck_assert_int_eq(chdir(d->dir), 0);   /* relative paths land in the test's directory */
    rbd_launch(d, NULL);
    ck_assert_int_eq(chdir(here), 0);
}

void cfg_start(rbd_proc_t *d, const char *extra)
{
    rbd_prepare(d, extra);
    cfg_launch(d);
}

int cfg_call(rb_conn_t *c, char *buf, size_t cap, size_t argc, const char *const *argv,
             const size_t *argl)
{
    size_t len[16];

    ck_assert_uint_le(argc, 16);
    for (size_t i = 0; i < argc; i++)
        len[i] = argl != NULL ? argl[i] : strlen(argv[i]);
    return rb_conn_command(c, argc, argv, len, buf, cap);
}

void cfg_get_all(rb_conn_t *c, char *buf, size_t cap)
{
    const char *argv[] = { "CONFIG", "GET", "*" };

    ck_assert_int_eq(cfg_call(c, buf, cap, 3, argv, NULL), RB_OK);
}

typedef struct shown {
    char *buf;
    size_t cap, w;
} shown_t;

/* A setting as CONFIG GET * shows it: its name and value, then each of
 * its other names (rbd_aliases) with the value. */
static void show(const char *name, const char *value, void *arg)
{
    shown_t *s = arg;
    long row = rbd_setting_row(name, strlen(name));

    if (value[0] != '\0' && (rbd_settings[row].flags & RBD_SET_SECRET))
        value = "(redacted)";
    for (size_t i = 0; i <= rbd_naliases; i++) {
        if (i > 0 && strcmp(rbd_aliases[i - 1].name, name) != 0)
            continue;
        s->w += (size_t)snprintf(s->buf + s->w, s->cap - s->w, "%s%s\n%s", s->w ? "\n" : "",
                                 i == 0 ? name : rbd_aliases[i - 1].alias, value);
        ck_assert_uint_lt(s->w, s->cap);
    }
}

/* The file at d's config, read by the daemon's own parser (defaults, the
 * file, paths made absolute against the test's directory, where the
 * daemon started), rendered as CONFIG GET * answers. */
static void parse_back(const rbd_proc_t *d, char *buf, size_t cap)
{
    static rbd_config_src_t src;
    static rbd_config_t cfg;
    char err[4200];
    shown_t s = { buf, cap, 0 };

    memset(&src, 0, sizeof(src));
    snprintf(src.file, sizeof(src.file), "%s", d->conf);
    snprintf(src.start_dir, sizeof(src.start_dir), "%s", d->dir);
    ck_assert_msg(rbd_config_build(&src, &cfg, err, sizeof(err)) == 0,
                  "the rewritten file does not parse: %s", err);
    rbd_config_each(&cfg, show, &s);
    s.w += (size_t)snprintf(buf + s.w, cap - s.w, "\nsave\n%u 1", cfg.save_seconds);
}

/* The value CONFIG GET shows for setting name in a CONFIG GET * answer. */
static const char *value_in(const char *all, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);

    for (const char *p = all; p != NULL; p = strchr(p, '\n')) {
        p += *p == '\n';
        if (strncmp(p, name, n) == 0 && p[n] == '\n') {
            const char *v = p + n + 1, *e = strchr(v, '\n');
            snprintf(out, cap, "%.*s", (int)(e != NULL ? (size_t)(e - v) : strlen(v)), v);
            return out;
        }
        p = strchr(p, '\n');   /* past the value */
    }
    ck_abort_msg("CONFIG GET * has no %s", name);
    return NULL;
}

/* Hostile values: line breaks that would add a setting, a NUL, quotes,
 * backslashes, a comment mark, blanks at the ends, escapes as text, a tab,
 * DEL, nothing, and 8 KiB. */
static const struct {
    const char *v;
    size_t len;
} hostile[] = {
#define H(s) { s, sizeof(s) - 1 }
    H("rb\nacl-user 65534 +@all"), H("rb\r\nloglevel bogus"), H("rb\racl-user 65534 +@all"),
    H("rb\0acl-user 65534 +@all"), H("\"quoted\""), H("a\"b"), H("back\\slash\\"),
    H("\\x41\\n\\\""), H("#hash"), H(" lead and trail "), H("tab\there"), H("del\x7f"),
    H(""), H("\"unbalanced"),
#undef H
};

/* One hostile value for setting row: refused with an error naming the
 * setting and nothing changed, or in force, rewritten and read back the
 * same.  A path setting gets it under the test's directory. */
static void try_value(rb_conn_t *c, size_t row, const char *v, size_t vlen)
{
    static char before[65536], after[65536], back[65536], buf[65536], value[9000];
    const char *name = rbd_settings[row].name;
    const char *argv[] = { "CONFIG", "SET", name, value };
    size_t argl[] = { 6, 3, strlen(name), 0 }, at = 0;
    char shown[9000];
    int rc;

    if ((rbd_settings[row].flags & RBD_SET_PATH) && vlen > 0)
        at = (size_t)snprintf(value, sizeof(value), "%s/", cfg_d.dir);
    ck_assert_uint_lt(at + vlen, sizeof(value));
    memcpy(value + at, v, vlen);
    value[at + vlen] = '\0';
    argl[3] = at + vlen;
    cfg_get_all(c, before, sizeof(before));
    rc = cfg_call(c, buf, sizeof(buf), 4, argv, argl);
    cfg_get_all(c, after, sizeof(after));
    if (rc != RB_OK) {
        ck_assert_msg(strstr(buf, "ERR CONFIG SET failed (possibly related to argument '") &&
                      strstr(buf, name) != NULL, "%s: unclear refusal: %s", name, buf);
        ck_assert_msg(strcmp(before, after) == 0, "%s: refused (%s) but changed", name, buf);
        return;
    }
    ck_assert_msg(rbd_settings[row].kind != T_STR ||
                  strcmp(value_in(after, name, shown, sizeof(shown)), value) == 0 ||
                  (rbd_settings[row].flags & RBD_SET_SECRET),
                  "%s: set to [%s], CONFIG GET shows [%s]", name, value, shown);
    ck_assert_msg(memchr(value, '\n', argl[3]) == NULL && memchr(value, '\r', argl[3]) == NULL &&
                  memchr(value, '\0', argl[3]) == NULL,
                  "%s: a value with a line break or NUL was accepted", name);
    rbd_expect(c, "OK", "CONFIG", "REWRITE");
    parse_back(&cfg_d, back, sizeof(back));
    ck_assert_msg(strcmp(back, after) == 0, "%s = [%s]: the rewritten file reads back as\n%s\n"
                  "instead of\n%s", name, value, back, after);
}

/* Every setting of the table, each hostile value; then SIGHUP and a
 * restart keep the settings in force. */
START_TEST(test_config_set_every_setting_hostile_values)
{
    static char orig[65536], all[65536], again[65536], big[8193], buf[512], keep[4200];
    rb_conn_t *c;
    int reloads;

    cfg_start(&cfg_d, "");
    c = rbd_connect(&cfg_d);
    memset(big, 'x', sizeof(big) - 1);
    cfg_get_all(c, orig, sizeof(orig));
    for (size_t row = 0; row < rbd_nsettings; row++) {
        const char *name = rbd_settings[row].name;
        const char *argv[] = { "CONFIG", "SET", name, keep };
        value_in(orig, name, keep, sizeof(keep));
        for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++)
            try_value(c, row, hostile[i].v, hostile[i].len);
        try_value(c, row, big, sizeof(big) - 1);
        if (!rbd_settings[row].reload || (rbd_settings[row].flags & RBD_SET_SECRET) ||
            rbd_settings[row].kind == T_ACL_USER || rbd_settings[row].kind == T_ACL_GROUP)
            continue;
        ck_assert_msg(cfg_call(c, buf, sizeof(buf), 4, argv, NULL) == RB_OK, "%s back to %s: %s",
                      name, keep, buf);
    }
    cfg_get_all(c, all, sizeof(all));
    ck_assert_msg(strcmp(all, orig) == 0, "not back where it started:\n%s\n%s", all, orig);
    ck_assert_int_eq(rbd_file_count(cfg_d.conf, "acl-user"), 0);
    ck_assert_int_eq(rbd_file_count(cfg_d.conf, "bogus"), 0);

    rbd_expect(c, "OK", "CONFIG", "SET", "syslog-ident", " \"a\" #b\\ ");
    rbd_expect(c, "OK", "CONFIG", "REWRITE");
    cfg_get_all(c, all, sizeof(all));
    reloads = rbd_log_count(&cfg_d, "configuration reloaded");
    ck_assert_int_eq(kill(cfg_d.pid, SIGHUP), 0);
    for (uint64_t until = rb_test_now_ms() + 5000;
         rbd_log_count(&cfg_d, "configuration reloaded") == reloads; usleep(10000))
        ck_assert_msg(rb_test_now_ms() < until, "SIGHUP not handled within 5 s");
    cfg_get_all(c, again, sizeof(again));
    ck_assert_msg(strcmp(all, again) == 0, "SIGHUP changed the settings:\n%s\n%s", all, again);
    rb_conn_close(c);
    rbd_stop(&cfg_d, SIGTERM);
    cfg_launch(&cfg_d);   /* on the rewritten file */
    c = rbd_connect(&cfg_d);
    cfg_get_all(c, again, sizeof(again));
    ck_assert_msg(strcmp(all, again) == 0, "a restart changed the settings:\n%s\n%s", all, again);
    rb_conn_close(c);
}
END_TEST

/* Redis refuses a parameter named twice in one CONFIG SET (an alias counts
 * as its setting); a NUL in a value is said as such, not as "too long". */
START_TEST(test_config_set_refuses_repeated_parameter)
{
    const char *nul[] = { "CONFIG", "SET", "syslog-ident", "a\0b" };
    const size_t nul_len[] = { 6, 3, 12, 3 };
    char buf[512];
    rb_conn_t *c;

    cfg_start(&cfg_d, "");
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "ERR CONFIG SET failed (possibly related to argument 'loglevel') - "
               "duplicate parameter", "CONFIG", "SET", "loglevel", "debug", "loglevel",
               "warning");
    rbd_expect(c, "ERR CONFIG SET failed (possibly related to argument 'LOGLEVEL') - "
               "duplicate parameter", "CONFIG", "SET", "loglevel", "info", "timeout", "5",
               "LOGLEVEL", "warning");
    rbd_expect(c, "loglevel\ndebug", "CONFIG", "GET", "loglevel");
    rbd_expect(c, "timeout\n0", "CONFIG", "GET", "timeout");
    ck_assert_int_eq(cfg_call(c, buf, sizeof(buf), 4, nul, nul_len), RB_EREPLY);
    ck_assert_msg(strstr(buf, "NUL") != NULL && strstr(buf, "too long") == NULL, "%s", buf);
    rbd_expect(c, "syslog-ident\nringbloomd", "CONFIG", "GET", "syslog-ident");
    rb_conn_close(c);
}
END_TEST

/* Redis's names where the meaning is the same (issue 42, item 10):
 * maxmemory, maxclients and unixsocket in the file, CONFIG GET (by name
 * and in CONFIG GET *, as Redis 7 lists its aliases: the exporter reads
 * redis_config_maxmemory from it) and CONFIG SET; loglevel verbose. */
START_TEST(test_config_redis_names)
{
    static char all[65536];
    char want[300];
    const char *got;
    rb_conn_t *c;
    int rc;

    cfg_start(&cfg_d, "maxmemory 512mb\nmaxclients 500\nloglevel verbose");
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "maxmemory\n536870912", "CONFIG", "GET", "maxmemory");
    rbd_expect(c, "max-memory\n536870912", "CONFIG", "GET", "max-memory");
    rbd_expect(c, "max-clients\n500\nmaxclients\n500", "CONFIG", "GET", "max*clients");
    snprintf(want, sizeof(want), "unixsocket\n%s", cfg_d.sock);
    rbd_expect(c, want, "CONFIG", "GET", "unixsocket");
    rbd_expect(c, "loglevel\ndebug", "CONFIG", "GET", "loglevel");
    cfg_get_all(c, all, sizeof(all));
    ck_assert_msg(strstr(all, "\nmaxmemory\n536870912\n") != NULL &&
                  strstr(all, "\nmaxclients\n500\n") != NULL, "CONFIG GET *: %s", all);
    rbd_expect(c, "OK", "CONFIG", "SET", "maxclients", "300", "loglevel", "VERBOSE");
    rbd_expect(c, "maxclients\n300", "CONFIG", "GET", "maxclients");
    got = rbd_cmd(c, &rc, "CONFIG", "SET", "maxmemory", "2gb", (const char *)NULL);
    ck_assert_msg(rc == RB_EREPLY && strstr(got, "max-memory") && strstr(got, "restart"), "%s",
                  got);
    got = rbd_cmd(c, &rc, "CONFIG", "SET", "loglevel", "loud", (const char *)NULL);
    ck_assert_msg(rc == RB_EREPLY && strstr(got, "debug, verbose, info, notice or warning"),
                  "%s", got);
    rb_conn_close(c);
}
END_TEST

/* CONFIG REWRITE changes only what changed (issue 42, item 10: it wrote 7
 * untouched settings from 1gb / 64mb to byte counts): with nothing
 * changed the file stays byte for byte, the operator's spelling of names
 * and values, blanks, a setting named twice; a CONFIG SET changes its own
 * line, under the name the line uses, and appends a setting the file
 * lacked, a size in its largest exact unit; the file reads back as the
 * settings in force. */
START_TEST(test_config_rewrite_changes_only_what_changed)
{
    static const char extra[] =
        "# the operator's lines\nmaxmemory 1gb\nmax-command-bytes 64mb\n"
        "client-output-soft-limit   8MB\nmaxclients 500\nloglevel verbose\n"
        "syslog-ident \"rb d\"\nslowlog-max-len 100\nslowlog-max-len 128";
    static char before[65536], back[65536], all[65536], want[70000];
    char *file, *at;
    size_t len;

    cfg_start(&cfg_d, extra);
    {
        rb_conn_t *c = rbd_connect(&cfg_d);
        file = rbd_read_file(cfg_d.conf, &len);
        snprintf(before, sizeof(before), "%s", file);
        free(file);
        rbd_expect(c, "OK", "CONFIG", "REWRITE");
        file = rbd_read_file(cfg_d.conf, &len);
        ck_assert_msg(strcmp(file, before) == 0, "nothing changed, yet:\n%s\nbecame\n%s", before,
                      file);
        free(file);
        rbd_expect(c, "OK", "CONFIG", "SET", "maxclients", "600", "client-output-hard-limit",
                   "3gb");
        rbd_expect(c, "OK", "CONFIG", "REWRITE");
        at = strstr(before, "maxclients 500");
        ck_assert_ptr_nonnull(at);
        snprintf(want, sizeof(want), "%.*smaxclients 600%s\n# Generated by CONFIG REWRITE\n"
                 "client-output-hard-limit 3gb\n", (int)(at - before), before,
                 at + strlen("maxclients 500"));
        file = rbd_read_file(cfg_d.conf, &len);
        ck_assert_msg(strcmp(file, want) == 0, "want\n%s\ngot\n%s", want, file);
        free(file);
        cfg_get_all(c, all, sizeof(all));
        parse_back(&cfg_d, back, sizeof(back));
        ck_assert_msg(strcmp(back, all) == 0, "the file reads back as\n%s\ninstead of\n%s", back,
                      all);
        rb_conn_close(c);
    }
    printf("CONFIG REWRITE: %zu bytes kept as written, 1 line changed, 1 appended\n",
           strlen(before));
}
END_TEST

/* `ringbloomd -t` on d's config with extra lines: its exit status, its
 * output in out. */
static int test_conf(const char *extra, char *out, size_t cap)
{
    rbd_write_conf(&cfg_d, extra);
    return rbd_test_config(cfg_d.conf, out, cap);
}

/* What the file says is what CONFIG GET shows: quotes and redis.conf's
 * escapes undone, blanks around a bare value dropped, `-t` printing each
 * setting as a line that reads back the same; a value with a control
 * character, unbalanced quotes, text after the closing quote, a NUL byte
 * in a line or a line past 64 KiB stop the start, naming the line. */
START_TEST(test_config_file_means_what_config_get_shows)
{
    static const struct {
        const char *line;   /* line 10 of the file */
        int status;         /* -t's */
        const char *want;   /* in its output */
    } lines[] = {
        { "syslog-ident \"a \\\"b\\\" \\\\ #c \"", 0, "\nsyslog-ident \"a \\\"b\\\" \\\\ #c \"\n" },
        { "syslog-ident \"\\x41\\x42\\q\"", 0, "\nsyslog-ident ABq\n" },
        { "syslog-ident   a \"b\" c  \t", 0, "\nsyslog-ident a \"b\" c\n" },
        { "logfile", 0, "\nlogfile \"\"\n" },
        { "syslog-ident \"rb\\nacl-user 65534 +@all\"", 2,
          ":10: syslog-ident: the value holds a control character (byte 0x0a" },
        { "syslog-ident a\rb", 2, ":10: syslog-ident: the value holds a control character (byte 0x0d" },
        { "syslog-ident \"rb", 2, ":10: unbalanced quotes" },
        { "syslog-ident \"rb\" x", 2, ":10: text after the closing quote" },
        { "syslog-ident \"rb\\x00\"", 2, ":10: a NUL byte (\\x00)" },
    };
    static char out[65536], line[70100];
    FILE *f;
    rb_conn_t *c;

    rbd_prepare(&cfg_d, "");
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        ck_assert_int_eq(test_conf(lines[i].line, out, sizeof(out)), lines[i].status);
        ck_assert_msg(strstr(out, lines[i].want) != NULL, "[%s]: %s", lines[i].line, out);
    }
    rbd_write_conf(&cfg_d, NULL);   /* line 10 blank, a NUL byte in line 11 */
    ck_assert_ptr_nonnull(f = fopen(cfg_d.conf, "a"));
    ck_assert_uint_eq(fwrite("syslog-ident rb\0acl-user 65534 +@all\n", 1, 37, f), 37);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rbd_test_config(cfg_d.conf, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, ":11: a NUL byte in the line"), "%s", out);
    memset(line, 'x', sizeof(line) - 1);
    line[0] = '#';
    line[sizeof(line) - 1] = '\0';
    ck_assert_int_eq(test_conf(line, out, sizeof(out)), 2);
    ck_assert_msg(strstr(out, ":10: line too long"), "%s", out);
    cfg_start(&cfg_d, "syslog-ident \" x\\\\y \"");
    c = rbd_connect(&cfg_d);
    rbd_expect(c, "syslog-ident\n x\\y ", "CONFIG", "GET", "syslog-ident");
    rb_conn_close(c);
}
END_TEST

/* Every byte but NUL and the line breaks' kind, at either end and inside,
 * written by rbd_conf_put reads back the same through rbd_conf_next. */
START_TEST(test_config_syntax_round_trip)
{
    char path[64], value[64], err[256], *key, *got;
    rbd_conf_reader_t r;
    int fd;
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/rbtest.%d.syntaxXXXXXX", (int)rb_test_main_pid);
    ck_assert_int_ge(fd = mkstemp(path), 0);
    ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
    for (int b = 1; b < 256; b++) {
        snprintf(value, sizeof(value), "%c x%c\\%cy %c", b, b, b, b);
        rbd_conf_put(f, "k", value);
    }
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rbd_conf_open(&r, path, err, sizeof(err)), 0);
    for (int b = 1; b < 256; b++) {
        snprintf(value, sizeof(value), "%c x%c\\%cy %c", b, b, b, b);
        ck_assert_msg(rbd_conf_next(&r, &key, &got, err, sizeof(err)) == 1, "%s", err);
        ck_assert_str_eq(key, "k");
        ck_assert_msg(strcmp(got, value) == 0, "byte 0x%02x: wrote [%s], read [%s]", b, value,
                      got);
    }
    ck_assert_int_eq(rbd_conf_next(&r, &key, &got, err, sizeof(err)), 0);
    rbd_conf_close(&r);
    unlink(path);
}
END_TEST

/* A message with line breaks is one line of the log, its control bytes as
 * \xHH: no client-supplied text forges a line. */
START_TEST(test_config_log_message_is_one_line)
{
    char dir[64], path[96], err[256], *text;
    rbd_log_setup_t o = { 0, LOG_INFO, path, 0, "ringbloomd", LOG_DAEMON };
    size_t len;

    snprintf(dir, sizeof(dir), "/tmp/rbtest.%d.logXXXXXX", (int)rb_test_main_pid);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/d.log", dir);
    ck_assert_int_eq(rbd_log_setup(&o, err, sizeof(err)), 0);
    rbd_log(LOG_WARNING, "name 'a\n123:M 01 Jan 2026 00:00:00.000 * forged\r'");
    rbd_log_init(1, LOG_INFO);   /* the file closed */
    text = rbd_read_file(path, &len);
    ck_assert_int_eq(rbd_file_count(path, ""), 1);
    ck_assert_msg(strstr(text, "name 'a\\x0a123:M 01 Jan 2026 00:00:00.000 * forged\\x0d'\n"),
                  "%s", text);
    free(text);
    unlink(path);
    rmdir(dir);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("config",
                        RB_TCASE("values", 120, NULL, rbd_teardown,
                                 test_config_set_every_setting_hostile_values,
                                 test_config_set_refuses_repeated_parameter,
                                 test_config_file_means_what_config_get_shows,
                                 test_config_redis_names,
                                 test_config_rewrite_changes_only_what_changed),
                        RB_TCASE("syntax", 30, NULL, NULL, test_config_syntax_round_trip,
                                 test_config_log_message_is_one_line),
                        config_files_tcase(), config_logfile_tcase(),
                        config_secrets_tcase());
}
