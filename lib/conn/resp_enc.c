/*
 * resp_enc.c - the project's own RESP encoder (the daemon's replies, the
 * nginx module's requests); see resp_enc.h.  Lengths are decimal ASCII, every element ends in CRLF, and
 * an error reply is kept to one line (a CR or LF in its text would end the
 * element early and desynchronise the client).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp_enc.h"

void rbi_buf_free(rbi_buf_t *b)
{
    int resp3 = b->resp3;

    free(b->data);
    memset(b, 0, sizeof(*b));
    b->resp3 = resp3;
}

/* Room for len more bytes: 0, or -1 with oom set. */
static int reserve(rbi_buf_t *b, size_t len)
{
    if (b->oom)
        return -1;
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *d;
        while (cap < b->len + len)
            cap *= 2;
        d = realloc(b->data, cap);
        if (d == NULL) {
            b->oom = 1;
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    return 0;
}

void rbi_buf_append(rbi_buf_t *b, const void *data, size_t len)
{
    if (len == 0 || reserve(b, len) != 0)
        return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void rbi_buf_consume(rbi_buf_t *b, size_t n)
{
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* "<type><n>\r\n": a header line with a decimal number.  Written by hand,
 * not by snprintf: a reply of two million integers (CMS.QUERY, BF.MEXISTS
 * at max-request-bytes) spent most of its time formatting. */
static void header(rbi_buf_t *b, char type, long long n)
{
    char s[32];
    size_t at = sizeof(s);
    unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;

    s[--at] = '\n';
    s[--at] = '\r';
    do {
        s[--at] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (n < 0)
        s[--at] = '-';
    s[--at] = type;
    rbi_buf_append(b, s + at, sizeof(s) - at);
}

static void line(rbi_buf_t *b, char type, const char *s)
{
    rbi_buf_append(b, &type, 1);
    rbi_buf_append(b, s, strlen(s));
    rbi_buf_append(b, "\r\n", 2);
}

void rbi_resp_simple(rbi_buf_t *b, const char *s)
{
    line(b, '+', s);
}

void rbi_resp_error(rbi_buf_t *b, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++)
        if (*c == '\r' || *c == '\n')
            *c = ' ';
    line(b, '-', msg);
}

void rbi_resp_int(rbi_buf_t *b, long long v)
{
    header(b, ':', v);
}

void rbi_resp_bulk(rbi_buf_t *b, const void *data, size_t len)
{
    header(b, '$', (long long)len);
    rbi_buf_append(b, data, len);
    rbi_buf_append(b, "\r\n", 2);
}

void rbi_resp_bulk_str(rbi_buf_t *b, const char *s)
{
    rbi_resp_bulk(b, s, strlen(s));
}

void rbi_resp_nil(rbi_buf_t *b)
{
    if (b->resp3)
        rbi_buf_append(b, "_\r\n", 3);
    else
        rbi_buf_append(b, "$-1\r\n", 5);
}

void rbi_resp_array(rbi_buf_t *b, size_t n)
{
    header(b, '*', (long long)n);
}

void rbi_resp_map(rbi_buf_t *b, size_t pairs)
{
    if (b->resp3)
        header(b, '%', (long long)pairs);
    else
        header(b, '*', (long long)(2 * pairs));
}

void rbi_resp_set(rbi_buf_t *b, size_t n)
{
    header(b, b->resp3 ? '~' : '*', (long long)n);
}

void rbi_resp_bool(rbi_buf_t *b, int v)
{
    if (b->resp3)
        rbi_buf_append(b, v ? "#t\r\n" : "#f\r\n", 4);
    else
        rbi_buf_append(b, v ? ":1\r\n" : ":0\r\n", 4);
}

void rbi_resp_verbatim(rbi_buf_t *b, const void *data, size_t len)
{
    if (!b->resp3) {
        rbi_resp_bulk(b, data, len);
        return;
    }
    header(b, '=', (long long)len + 4);
    rbi_buf_append(b, "txt:", 4);
    rbi_buf_append(b, data, len);
    rbi_buf_append(b, "\r\n", 2);
}

/* Decimal digits of n. */
static size_t digits(size_t n)
{
    size_t d = 1;

    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* Writes "<type><n>\r\n" at dst (no terminating NUL); returns its end. */
static char *put_header(char *dst, char type, size_t n)
{
    size_t d = digits(n);

    *dst++ = type;
    for (size_t i = d; i-- > 0; n /= 10)
        dst[i] = (char)('0' + n % 10);
    dst += d;
    *dst++ = '\r';
    *dst++ = '\n';
    return dst;
}

size_t rbi_resp_command_size(size_t argc, const size_t *argl)
{
    size_t n = 1 + digits(argc) + 2;   /* *<argc>\r\n */

    for (size_t i = 0; i < argc; i++)
        n += 1 + digits(argl[i]) + 2 + argl[i] + 2;   /* $<len>\r\n<bytes>\r\n */
    return n;
}

char *rbi_resp_command_put(char *dst, size_t argc, const char *const *argv, const size_t *argl)
{
    dst = put_header(dst, '*', argc);
    for (size_t i = 0; i < argc; i++) {
        dst = put_header(dst, '$', argl[i]);
        if (argl[i] > 0)
            memcpy(dst, argv[i], argl[i]);
        dst += argl[i];
        *dst++ = '\r';
        *dst++ = '\n';
    }
    return dst;
}
