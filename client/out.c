/*
 * out.c - what the CLI prints for any subcommand: names and keys escaped
 * for line-oriented output, JSON strings, layout names, and its error
 * lines.
 *
 * Node names come from the segment, which any writer the daemon allows can
 * fill: cli_text_str escapes them, so a name cannot forge a line or a
 * field.  Every name, key or INFO value the CLI prints goes through one
 * escaping, cli_escape: as text, as a JSON string, or as a Prometheus
 * label value (metrics.c), so distinct names never print alike in any of
 * them and every output is valid UTF-8.  JSON is json-c's: a name's JSON
 * string is the text escaping (T) as a json-c string, which json-c
 * writes with its quotes and backslashes escaped.  The progress line of
 * load, dump and restore is drawn here too.
 */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

/* The length of the valid UTF-8 sequence at p[0..left) (2 to 4 bytes,
 * p[0] >= 0x80), or 0: none starts there (a stray continuation byte, an
 * overlong form, a surrogate, past U+10FFFF, or cut short). */
static size_t utf8_len(const unsigned char *p, size_t left)
{
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : (p[0] & 0xf0) == 0xe0 ? 3
             : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;

    if (n == 0 || n > left)
        return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void cli_escape(FILE *f, const char *s, size_t len, int quoted)
{
    /* T's escapes start with a backslash, which a quoted string escapes */
    const char *bs = quoted ? "\\\\" : "\\";
    const unsigned char *p = (const unsigned char *)s;

    if (quoted)
        fputc('"', f);
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t n = c < 0x80 ? 1 : utf8_len(p + i, len - i);
        if (c == '\\')
            fprintf(f, "%s%s", bs, bs);
        else if (c == '"' && quoted)
            fputs("\\\"", f);
        else if (c == '\t' || c == '\n' || c == '\r')
            fprintf(f, "%s%c", bs, c == '\t' ? 't' : c == '\n' ? 'n' : 'r');
        else if (c < 0x20 || c == 0x7f || n == 0)
            fprintf(f, "%sx%02x", bs, c);
        else
            fwrite(p + i, 1, n, f);
        i += n ? n : 1;
    }
    if (quoted)
        fputc('"', f);
}

json_object *cli_json_text(const char *s, size_t len)
{
    char *t = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&t, &n);
    json_object *j = NULL;

    if (m == NULL)
        return NULL;
    cli_escape(m, s, len, 0);
    if (fclose(m) == 0 && n <= INT_MAX)
        j = json_object_new_string_len(t, (int)n);
    free(t);
    return j;
}

void cli_json_fprint(FILE *f, json_object *j)
{
    /* PLAIN: no blanks, as the output has always been; NOSLASHESCAPE:
     * '/' as is (json-c writes "\/" otherwise), so a name's JSON string is
     * exactly cli_escape's T with its backslashes and quotes escaped. */
    if (j == NULL) {
        fputs("null", f);
        return;
    }
    fputs(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
          f);
}

void cli_json_print(json_object *j)
{
    cli_json_fprint(stdout, j);
}

json_object *cli_json_num(const char *fmt, ...)
{
    char buf[64];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return NULL;
    return json_object_new_double_s(strtod(buf, NULL), buf);
}

json_object *cli_json_obj(const char *key, ...)
{
    json_object *o = json_object_new_object();
    va_list ap;

    va_start(ap, key);
    for (const char *k = key; k != NULL; k = va_arg(ap, const char *)) {
        json_object *v = va_arg(ap, json_object *);
        if (o == NULL || v == NULL || json_object_object_add(o, k, v) != 0) {
            json_object_put(v);
            json_object_put(o);
            o = NULL;
        }
    }
    va_end(ap);
    return o;
}

int cli_json_push(json_object *array, json_object *v)
{
    if (array == NULL || v == NULL || json_object_array_add(array, v) != 0) {
        json_object_put(v);
        return -1;
    }
    return 0;
}

void cli_json_fline(FILE *f, json_object *j)
{
    cli_json_fprint(f, j);
    fputc('\n', f);
    json_object_put(j);
}

void cli_json_line(json_object *j)
{
    cli_json_fline(stdout, j);
}

void cli_text_str(const char *s, size_t len)
{
    cli_escape(stdout, s, len, 0);
}

const char *cli_layout_name(rb_bloom_layout_t layout)
{
    return layout == RB_BLOOM_STANDARD     ? "standard"
           : layout == RB_BLOOM_REDISBLOOM ? "redisbloom"
                                           : "blocked";
}

void cli_progress(double frac, const char *text)
{
    int width = 30, filled = frac > 0 ? (int)((frac < 1 ? frac : 1) * width) : 0;

    fputs("\r[", stderr);
    for (int i = 0; i < width; i++)
        fputc(i < filled ? '#' : (frac >= 0 ? '.' : ' '), stderr);
    fprintf(stderr, "] %s", text);
    fflush(stderr);
}

int cli_fail(int code, const char *what, int rc)
{
    fprintf(stderr, "ringbloom: %s: %s\n", what, rb_strerror(rc));
    return code;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ringbloom: %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_USAGE;
}
