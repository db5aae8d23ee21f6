/*
 * info.c - the daemon's INFO as the CLI reads it: fetched over the socket,
 * walked as sections of typed key:value fields, and printed by `info`
 * (as it came, or as JSON with --json, built and written by json-c).  `metrics` reads it through the
 * same walk.
 *
 * INFO is Redis-style text: "# Title" lines open sections, "key:value"
 * lines are fields.  A field's type is read from its value, so a field the
 * daemon adds needs no change here: a value written as a JSON number
 * (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) is a number, anything
 * else a string.  The exception is a field whose value names something
 * (a version, the instance, a path): it stays a string whatever it looks
 * like (an instance named "42"); those keys are listed in name_keys[].
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The fields of daemon/commands/cmd_server.c's INFO whose values are names, never
 * quantities.  A new field of that sort is added here; every other field
 * is typed by its value. */
static const char *const name_keys[] = {
    "ringbloom_version", "instance", "segment", "socket", "config_file", "dir",
    "segment_huge_mount", "nats_stream", "nats_filters", "nats_server",
};

int cli_info_fetch(cli_t *cli, const char *section, char *buf, size_t cap)
{
    const char *args[2] = { "INFO", section != NULL ? section : "" };
    size_t lens[2] = { 4, section != NULL ? strlen(section) : 0 };
    rb_conn_t *c;
    int rc, ex;

    if ((ex = cli_connect(cli, &c)) != EX_YES)
        return ex;
    rc = rb_conn_command(c, section != NULL ? 2 : 1, args, lens, buf, cap);
    ex = rc == RB_OK ? EX_YES : cli_conn_fail(cli, c, "info", rc, 0);
    rb_conn_close(c);
    return ex;
}

/* Is s, all of it, a number in JSON's syntax? */
static int json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (isdigit((unsigned char)*s))
            s++;
    else
        return 0;
    if (*s == '.') {
        if (!isdigit((unsigned char)*++s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!isdigit((unsigned char)*s))
            return 0;
        while (isdigit((unsigned char)*s))
            s++;
    }
    return *s == '\0';
}

int cli_info_is_number(const char *key, const char *value)
{
    for (size_t i = 0; i < sizeof(name_keys) / sizeof(name_keys[0]); i++)
        if (strcmp(key, name_keys[i]) == 0)
            return 0;
    return json_number(value);
}

void cli_info_each(char *text, cli_info_fn *fn, void *arg)
{
    char *save, *ln;
    const char *section = NULL;

    for (ln = strtok_r(text, "\r\n", &save); ln; ln = strtok_r(NULL, "\r\n", &save)) {
        char *colon = strchr(ln, ':');
        if (ln[0] == '#') {
            char *title = ln + 1;
            while (*title == ' ')
                title++;
            for (char *p = title; *p; p++)
                *p = (char)tolower((unsigned char)*p);
            section = title;
            fn(section, NULL, NULL, arg);
        } else if (colon != NULL) {
            *colon = '\0';
            fn(section, ln, colon + 1, arg);
        }
    }
}

/* info --json: a section is an object under its lower-case title; a
 * field before any section would stand at the top level.  The objects are
 * json-c's (members in the order INFO gives them); a number keeps INFO's
 * own digits (json_object_new_double_s), so "1.50" stays 1.50. */
typedef struct json_walk {
    json_object *top;  /* the whole reply */
    json_object *cur;  /* the object fields go into: top or a section's */
    int failed;        /* out of memory */
} json_walk_t;

static void json_add(json_walk_t *w, json_object *to, const char *key, json_object *v)
{
    if (v == NULL || json_object_object_add(to, key, v) != 0) {
        json_object_put(v);
        w->failed = 1;
    }
}

static void json_field(const char *section, const char *key, const char *value, void *arg)
{
    json_walk_t *w = arg;
    json_object *v;

    if (key == NULL) {
        w->cur = json_object_new_object();
        json_add(w, w->top, section, w->cur);
        if (w->failed)
            w->cur = w->top;
        return;
    }
    if (cli_info_is_number(key, value))
        v = json_object_new_double_s(strtod(value, NULL), value);
    else
        v = cli_json_text(value, strlen(value));
    json_add(w, w->cur, key, v);
}

int cmd_info(cli_t *cli, int argc, char **argv)
{
    static char buf[1 << 20];
    json_walk_t w = { NULL, NULL, 0 };
    int ex;

    if ((ex = cli_info_fetch(cli, argc > 1 ? argv[1] : NULL, buf, sizeof(buf))) != EX_YES)
        return ex;
    if (cli->json) {
        if ((w.top = w.cur = json_object_new_object()) == NULL)
            return cli_fail(EX_FAIL, "info", RB_ENOMEM);
        cli_info_each(buf, json_field, &w);
        if (!w.failed) {
            cli_json_print(w.top);
            putchar('\n');
        }
        json_object_put(w.top);
        if (w.failed)
            return cli_fail(EX_FAIL, "info", RB_ENOMEM);
    } else {
        fputs(buf, stdout);
        if (buf[0] && buf[strlen(buf) - 1] != '\n')
            putchar('\n');
    }
    return EX_YES;
}
