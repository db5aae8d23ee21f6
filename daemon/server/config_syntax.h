/*
 * config_syntax.h - the configuration file's syntax (config_syntax.c): its
 * lines read, bounded and split into key and value, and a value written so
 * that it reads back the same.  What the parser (config.c), CONFIG REWRITE
 * (config_rewrite.c) and `ringbloomd -t` (main.c) share; it knows no
 * setting.
 */
#ifndef RBD_CONFIG_SYNTAX_H
#define RBD_CONFIG_SYNTAX_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* The longest line read (a 4095-byte value quoted with every byte escaped
 * fits many times over); a longer one is an error, never cut in two. */
#define RBD_CONF_LINE_MAX 65536

typedef struct rbd_conf_reader {
    FILE *f;
    const char *path;    /* for messages */
    struct stat st;      /* the file's, when opened */
    char *line;          /* the last line read, NUL-terminated, its newline kept */
    size_t len, cap;
    unsigned lineno;
} rbd_conf_reader_t;

/* Opens the file at path for reading: a regular file only, opened without
 * waiting (a FIFO at the path would otherwise hold the caller, the event
 * loop on SIGHUP or CONFIG REWRITE, until someone wrote to it).  0, or -1
 * with "path: why" in err. */
int rbd_conf_open(rbd_conf_reader_t *r, const char *path, char *err, size_t errlen);
void rbd_conf_close(rbd_conf_reader_t *r);

/* The next line into r->line / r->len: 1, 0 at the end of the file, or -1
 * with "path:line: why" in err (longer than RBD_CONF_LINE_MAX, or holding
 * a NUL byte: the line is refused whole, never read as something else). */
int rbd_conf_read(rbd_conf_reader_t *r, char *err, size_t errlen);

/* The key of line: its first word (*klen bytes), or NULL for a blank or
 * comment line (the first non-blank character '#'). */
const char *rbd_conf_key(const char *line, size_t *klen);

/* The next setting line, split: *key and *value point into r->line (the
 * value's quotes and escapes undone).  1, 0 at the end, or -1 with
 * "path:line: why" in err.  A value is the rest of the line, blanks
 * around it dropped, or one double-quoted string with redis.conf's escapes
 * (\" \\ \n \r \t \a \b \xHH, any other \c is c) and nothing after it. */
int rbd_conf_next(rbd_conf_reader_t *r, char **key, char **value, char *err, size_t errlen);

/* Writes the line "name value" to out, the value as it is when it reads
 * back the same, else double-quoted with escapes. */
void rbd_conf_put(FILE *out, const char *name, const char *value);

#endif /* RBD_CONFIG_SYNTAX_H */
