/*
 * config_syntax.c - the configuration file's syntax, read and written in
 * one place so that what CONFIG REWRITE and `ringbloomd -t` write is what
 * the parser reads back (config_syntax.h).
 *
 * A line is "key value": the key its first word, the value the rest, blanks
 * around it dropped; a line whose first non-blank character is '#' is a
 * comment.  A value that starts with a double quote is one quoted string
 * with redis.conf's escapes, so a value with blanks at its ends, quotes or
 * backslashes round-trips; a value may hold no control character but the
 * tab (config.c refuses one, whatever its source), so no value can add a
 * line.  Lines are bounded (RBD_CONF_LINE_MAX) and a NUL byte in one is an
 * error: a line is read whole as the operator wrote it or refused, never
 * split or cut short into another.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_syntax.h"

int rbd_conf_open(rbd_conf_reader_t *r, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    memset(r, 0, sizeof(*r));
    r->path = path;
    if (fd < 0 || fstat(fd, &r->st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(r->st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (a FIFO, device or directory); the "
                 "configuration is read from a file", path);
        close(fd);
        return -1;
    }
    if ((r->f = fdopen(fd, "r")) == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return 0;
}

void rbd_conf_close(rbd_conf_reader_t *r)
{
    if (r->f != NULL)
        fclose(r->f);
    free(r->line);
    memset(r, 0, sizeof(*r));
}

int rbd_conf_read(rbd_conf_reader_t *r, char *err, size_t errlen)
{
    size_t len = 0;
    int ch = EOF, nul = 0;

    while ((ch = getc(r->f)) != EOF) {
        if (len < RBD_CONF_LINE_MAX && len + 1 >= r->cap) {
            size_t cap = r->cap == 0 ? 256 : r->cap * 2;
            char *p = realloc(r->line, cap);
            if (p == NULL) {
                snprintf(err, errlen, "%s:%u: out of memory", r->path, r->lineno + 1);
                return -1;
            }
            r->line = p;
            r->cap = cap;
        }
        if (len < RBD_CONF_LINE_MAX)
            r->line[len] = (char)ch;
        nul |= ch == '\0';
        len++;
        if (ch == '\n')
            break;
    }
    if (len == 0)
        return 0;
    r->lineno++;
    if (len > RBD_CONF_LINE_MAX || nul) {
        snprintf(err, errlen, "%s:%u: %s", r->path, r->lineno,
                 nul ? "a NUL byte in the line" : "line too long");
        return -1;
    }
    r->line[len] = '\0';
    r->len = len;
    return 1;
}

const char *rbd_conf_key(const char *line, size_t *klen)
{
    const char *p = line, *k;

    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0' || *p == '#')
        return NULL;
    k = p;
    while (*p != '\0' && !isspace((unsigned char)*p))
        p++;
    *klen = (size_t)(p - k);
    return k;
}

static int hex(int c)
{
    return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* Undoes the quotes of the value at p (which starts with '"') in place, as
 * redis.conf's sdssplitargs does.  0, or -1 with why. */
static int unquote(char *p, const char **why)
{
    char *out = p, *q = p + 1;

    for (;;) {
        unsigned char c = (unsigned char)*q;
        if (c == '\0') {
            *why = "unbalanced quotes";
            return -1;
        }
        if (c == '\\' && q[1] == 'x' && isxdigit((unsigned char)q[2]) &&
            isxdigit((unsigned char)q[3])) {
            c = (unsigned char)(hex((unsigned char)q[2]) * 16 + hex((unsigned char)q[3]));
            if (c == '\0') {
                *why = "a NUL byte (\\x00) in the value";
                return -1;
            }
            q += 4;
        } else if (c == '\\' && q[1] != '\0') {
            static const char from[] = "nrtab", to[] = "\n\r\t\a\b";
            const char *e = strchr(from, q[1]);
            c = e != NULL ? (unsigned char)to[e - from] : (unsigned char)q[1];
            q += 2;
        } else if (c == '"') {
            for (q++; isspace((unsigned char)*q); q++)
                ;
            if (*q != '\0') {
                *why = "text after the closing quote (quote the whole value)";
                return -1;
            }
            *out = '\0';
            return 0;
        } else {
            q++;
        }
        *out++ = (char)c;
    }
}

int rbd_conf_next(rbd_conf_reader_t *r, char **key, char **value, char *err, size_t errlen)
{
    int rc;

    while ((rc = rbd_conf_read(r, err, errlen)) > 0) {
        size_t klen;
        char *p, *end;
        const char *why;
        if ((*key = (char *)rbd_conf_key(r->line, &klen)) == NULL)
            continue;
        p = *key + klen;
        if (*p != '\0')
            *p++ = '\0';
        while (isspace((unsigned char)*p))
            p++;
        *value = p;
        if (*p == '"') {
            if (unquote(p, &why) == 0)
                return 1;
            snprintf(err, errlen, "%s:%u: %s", r->path, r->lineno, why);
            return -1;
        }
        end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
            *--end = '\0';
        return 1;
    }
    return rc;
}

void rbd_conf_put(FILE *out, const char *name, const char *value)
{
    size_t len = strlen(value);
    int bare = len > 0 && value[0] != '"' && !isspace((unsigned char)value[0]) &&
               !isspace((unsigned char)value[len - 1]);

    for (size_t i = 0; bare && i < len; i++)
        bare = (unsigned char)value[i] >= 0x20 && value[i] != 0x7f;
    if (bare) {
        fprintf(out, "%s %s\n", name, value);
        return;
    }
    fprintf(out, "%s \"", name);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        const char *e = c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n"
                      : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
        if (e != NULL)
            fputs(e, out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    fputs("\"\n", out);
}
