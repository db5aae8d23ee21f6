/*
 * fuzz_config.c - libFuzzer target: a configuration file, command-line
 * overrides and CONFIG SET values, through ringbloomd's own parser
 * (daemon/server/config.c, config_syntax.c, config_table.c) and CONFIG
 * REWRITE (config_rewrite.c), in a private directory.
 *
 * Input: byte 0 the number of overrides (mod 4), bytes 1-2 the file's
 * length (u16 LE, cut to what follows), the file's text, then records, each
 * a byte naming a setting (its row, mod the table's size; odd rows by an
 * alias where one names it, upper-cased), a length byte and the value
 * (a value of length byte 255 is 4200 bytes of the byte after it, for the
 * bounds).  The first records are the overrides (-o key=value), the rest
 * CONFIG SET's pairs.
 *
 * Run as the daemon runs them: the file and the overrides built into the
 * settings in force (a file the parser refuses: an empty one instead, and
 * no overrides); then each pair as CONFIG SET takes it (a setting a reload
 * may change, not an access rule, no NUL; refused pairs leave nothing),
 * the paths made absolute; then CONFIG REWRITE.
 *
 * Must hold (a failure aborts; ASan/UBSan/LSan catch the rest):
 *   - every value CONFIG GET shows (rbd_config_each) is one line of text
 *     and, set again, gives the same settings (a value the parser takes
 *     means what CONFIG GET shows);
 *   - CONFIG REWRITE succeeds and the rewritten file, built again with the
 *     same overrides, gives exactly the settings in force;
 *   - nothing leaks.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

#include "config_table.h"
#include "rbd_config.h"
#include "rbd_log.h"
#define FUZZ_TARGET "fuzz_config"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

static char dir[64], conf[96];

/* The settings of a configuration, as CONFIG GET shows them, one
 * "name=value\n" after another. */
typedef struct shown {
    char text[RBD_REWRITE_MAX * 4300];
    size_t w;
} shown_t;

static void show_one(const char *name, const char *value, void *arg)
{
    shown_t *s = arg;
    int n = snprintf(s->text + s->w, sizeof(s->text) - s->w, "%s=%s\n", name, value);

    CHECK(n > 0 && (size_t)n < sizeof(s->text) - s->w);
    s->w += (size_t)n;
    for (const char *p = value; *p != '\0'; p++)
        CHECK(*p == '\t' || ((unsigned char)*p >= 0x20 && *p != 0x7f));
}

static void show(const rbd_config_t *c, shown_t *s)
{
    s->w = 0;
    rbd_config_each(c, show_one, s);
}

/* Each value shown, set again into a copy, leaves the settings as they
 * were (the access rules aside: each line adds). */
static void check_fixpoint(const rbd_config_t *c, const shown_t *before)
{
    static rbd_config_t copy;
    static shown_t after;
    const char *p = before->text;
    char err[512], name[64], value[4300];

    for (size_t row = 0; row < rbd_nsettings; row++) {
        const char *eq = strchr(p, '='), *nl = strchr(eq, '\n');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - p), p);
        snprintf(value, sizeof(value), "%.*s", (int)(nl - eq - 1), eq + 1);
        p = nl + 1;
        if (rbd_settings[row].kind == T_ACL_USER || rbd_settings[row].kind == T_ACL_GROUP)
            continue;
        copy = *c;
        if (rbd_config_set(&copy, name, value, err, sizeof(err)) != 0) {
            fprintf(stderr, "%s=[%s] shown, refused: %s\n", name, value, err);
            CHECK(!"a value CONFIG GET shows is refused");
        }
        show(&copy, &after);
        CHECK(strcmp(after.text, before->text) == 0);
    }
}

/* One record at *p (n bytes left): its row, value (NUL-terminated in
 * value) and length; 0 at the end of the input. */
static int record(const uint8_t **p, size_t *n, size_t *row, char *value, size_t *len)
{
    if (*n < 2)
        return 0;
    *row = (*p)[0] % rbd_nsettings;
    *len = (*p)[1];
    *p += 2;
    *n -= 2;
    if (*len == 255 && *n >= 1) {
        *len = 4200;
        memset(value, (*p)[0], *len);
        *p += 1;
        *n -= 1;
    } else {
        *len = *len < *n ? *len : *n;
        memcpy(value, *p, *len);
        *p += *len;
        *n -= *len;
    }
    value[*len] = '\0';
    return 1;
}

/* The name a record uses for row: an alias for odd rows where one
 * names it, upper-cased. */
static const char *name_of(size_t row, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", rbd_settings[row].name);
    for (size_t i = 0; row % 2 == 1 && i < rbd_naliases; i++)
        if (strcmp(rbd_aliases[i].name, rbd_settings[row].name) == 0) {
            snprintf(buf, cap, "%s", rbd_aliases[i].alias);
            for (char *q = buf; *q != '\0'; q++)
                *q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
        }
    return buf;
}

/* CONFIG SET's pair as the command takes it, into c: a reloadable
 * setting, not an access rule; refused (c unchanged) if the value is not
 * taken or the settings then contradict each other. */
static void config_set(const rbd_config_src_t *src, rbd_config_t *c, size_t row,
                       const char *value, size_t len)
{
    static rbd_config_t fresh;
    char name[64], err[4200];
    const setting_t *s = &rbd_settings[row];

    if (!s->reload || s->kind == T_ACL_USER || s->kind == T_ACL_GROUP || len >= 4096 ||
        memchr(value, '\0', len) != NULL)
        return;
    fresh = *c;
    if (rbd_config_set(&fresh, name_of(row, name, sizeof(name)), value, err, sizeof(err)) != 0 ||
        rbd_config_paths(src, &fresh, err, sizeof(err)) != 0 ||
        rbd_config_check(&fresh, err, sizeof(err)) != 0)
        return;
    *c = fresh;
}

static void write_conf(const uint8_t *text, size_t len)
{
    FILE *f = fopen(conf, "wb");

    CHECK(f != NULL);
    CHECK(fwrite(text, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

static void remove_dir(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rbd_log_init(1, LOG_CRIT);
    snprintf(dir, sizeof(dir), "/tmp/fuzz_config.%d.XXXXXX", (int)getpid());
    CHECK(mkdtemp(dir) != NULL);
    snprintf(conf, sizeof(conf), "%s/ringbloomd.conf", dir);
    atexit(remove_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static rbd_config_src_t src;
    static rbd_config_t cfg, back;
    static shown_t now, again;
    static char value[4300];
    char err[8400], name[64];
    size_t n = size, flen, row, len, over;
    const uint8_t *p = data;

    if (size < 3)
        return 0;
    over = data[0] % 4;
    flen = (size_t)data[1] | (size_t)data[2] << 8;
    p += 3;
    n -= 3;
    flen = flen < n ? flen : n;
    write_conf(p, flen);
    p += flen;
    n -= flen;
    memset(&src, 0, sizeof(src));
    snprintf(src.file, sizeof(src.file), "%s", conf);
    snprintf(src.start_dir, sizeof(src.start_dir), "%s", dir);
    for (size_t i = 0; i < over && record(&p, &n, &row, value, &len); i++)
        if (memchr(value, '\0', len) == NULL)
            (void)rbd_config_override(&src, name_of(row, name, sizeof(name)), value);
    if (rbd_config_build(&src, &cfg, err, sizeof(err)) != 0) {
        write_conf((const uint8_t *)"", 0);
        src.noverrides = 0;
        CHECK(rbd_config_build(&src, &cfg, err, sizeof(err)) == 0);
    }
    show(&cfg, &now);
    check_fixpoint(&cfg, &now);
    while (record(&p, &n, &row, value, &len))
        config_set(&src, &cfg, row, value, len);
    show(&cfg, &now);
    if (rbd_config_rewrite(&cfg, &src, err, sizeof(err)) != 0) {
        fprintf(stderr, "CONFIG REWRITE failed: %s\n", err);
        CHECK(!"CONFIG REWRITE failed");
    }
    if (rbd_config_build(&src, &back, err, sizeof(err)) != 0) {
        fprintf(stderr, "the rewritten file is refused: %s\n", err);
        CHECK(!"the rewritten file is refused");
    }
    show(&back, &again);
    if (strcmp(now.text, again.text) != 0) {
        fprintf(stderr, "in force:\n%s\nread back:\n%s\n", now.text, again.text);
        CHECK(!"the rewritten file reads back as other settings");
    }
    return 0;
}
