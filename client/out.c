/*
 * out.c - what the CLI prints for any subcommand: names and keys escaped
 * for line-oriented output, JSON strings, layout names, and its error
 * lines.
 *
 * Node names come from the segment, which any writer the daemon allows can
 * fill: cli_text_str escapes them, so a name cannot forge a line or a
 * field.
 */
#include "config.h"

#include <stdio.h>

#include "cli.h"

void cli_json_str(const char *s, size_t len)
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

void cli_text_str(const char *s, size_t len)
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

const char *cli_layout_name(rb_bloom_layout_t layout)
{
    return layout == RB_BLOOM_STANDARD     ? "standard"
           : layout == RB_BLOOM_REDISBLOOM ? "redisbloom"
                                           : "blocked";
}

int cli_fail(int code, const char *what, int rc)
{
    fprintf(stderr, "ringbloom: %s: %s\n", what, rb_strerror(rc));
    return code;
}
