/*
 * resp.c - RESP2 request parsing; see resp.h.
 *
 * The parser trusts nothing: every length is range-checked before use,
 * numbers must be plain decimal, a bulk must end in CRLF, and nested arrays
 * are refused (requests are flat).  Errors reuse Redis's wording so clients
 * print familiar messages.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

void resp_limits_init(resp_limits_t *lim, size_t max_request)
{
    /* At most one argument per 32 bytes of max-request-bytes.  The
     * smallest argument is 6 bytes on the wire ("$0\r\n\r\n") but costs
     * 16 bytes of offsets here and about as much again in a command's key
     * array, so this keeps a request's memory within about 2 x
     * max-request-bytes (2M arguments under the default 64 MiB). */
    lim->max_args = max_request / 32;
    lim->max_bulk = max_request;
    lim->max_inline = 64u * 1024u;
    lim->max_request = max_request;
}

void resp_parser_init(resp_parser_t *p)
{
    memset(p, 0, sizeof(*p));
    p->want = -1;
}

void resp_parser_free(resp_parser_t *p)
{
    free(p->off);
    free(p->len);
    free(p->scratch);
    resp_parser_init(p);
}

size_t resp_parser_memory(const resp_parser_t *p)
{
    return p->cap * 2 * sizeof(size_t) + p->scratch_cap;
}

void resp_parser_reset(resp_parser_t *p)
{
    p->pos = 0;
    p->want = -1;
    p->inline_req = 0;
    p->nargs = 0;
    if (p->cap > 4096) {
        /* A huge request is over: give its argument arrays back. */
        free(p->off);
        free(p->len);
        p->off = p->len = NULL;
        p->cap = 0;
    }
}

static int add_arg(resp_parser_t *p, size_t off, size_t len)
{
    if (p->nargs == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        size_t *o = realloc(p->off, cap * sizeof(*o));
        size_t *l;
        if (o == NULL)
            return -1;
        p->off = o;
        l = realloc(p->len, cap * sizeof(*l));
        if (l == NULL)
            return -1;
        p->len = l;
        p->cap = cap;
    }
    p->off[p->nargs] = off;
    p->len[p->nargs] = len;
    p->nargs++;
    return 0;
}

/* A "<digits>\r\n" or "-<digits>\r\n" number (at most 18 digits) starting
 * at buf[*i] (after the type byte).  Returns 1 and advances past CRLF, 0 if
 * the line is incomplete, -1 if malformed.  The verdict on a prefix never
 * contradicts the verdict on the whole: bytes already seen that make the
 * line malformed are -1 however much of it has arrived, so a client's
 * error never depends on how the kernel split its stream (fuzz_resp
 * compares whole and chunked delivery). */
static int read_number(const char *buf, size_t len, size_t *i, long long *out)
{
    size_t j = *i, end;
    long long v = 0;
    int neg = 0;

    if (j < len && buf[j] == '-') {
        neg = 1;
        j++;
    }
    for (end = j; end < len && buf[end] >= '0' && buf[end] <= '9'; end++)
        if (end - j == 18)
            return -1;
    if (end == len)
        return 0;
    if (buf[end] != '\r' || end == j)
        return -1;
    if (end + 1 == len)
        return 0;
    if (buf[end + 1] != '\n')
        return -1;
    for (size_t k = j; k < end; k++)
        v = v * 10 + (buf[k] - '0');
    *out = neg ? -v : v;
    *i = end + 2;
    return 1;
}

/* Blanks between inline arguments and after a closing quote: isspace()
 * in the C locale, as redis-server's sdssplitargs uses. */
static int inline_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Splits an inline line buf[0..n) into arguments by redis-server's rules
 * (sdssplitargs): blanks separate arguments; a bare argument ends at a
 * space, tab, CR or LF; a quote anywhere in an argument opens a quoted
 * part that must close, followed by a blank or the end of the line (else
 * "unbalanced quotes"); inside "...", \xHH is the byte HH, \n \r \t \b \a
 * their control characters and \ before any other byte that byte; inside
 * '...', only \' is an escape.  A NUL byte is an ordinary byte (a line
 * holding one gets no answer from redis-server at all).  An argument never
 * grows by unquoting, so scratch needs n bytes at most. */
static int parse_inline(resp_parser_t *p, const char *buf, size_t n, const char **err)
{
    size_t i = 0, w = 0;

    if (p->scratch_cap < n + 1) {
        char *s = realloc(p->scratch, n + 1);
        if (s == NULL) {
            *err = "Protocol error: out of memory";
            return RESP_ERR;
        }
        p->scratch = s;
        p->scratch_cap = n + 1;
    }
    for (;;) {
        size_t start;
        char q = 0;   /* the quote open, if any */
        while (i < n && inline_space(buf[i]))
            i++;
        if (i >= n)
            break;
        start = w;
        for (;;) {
            char c;
            if (q == 0) {
                if (i >= n || buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' ||
                    buf[i] == '\n')
                    break;
                if (buf[i] == '"' || buf[i] == '\'')
                    q = buf[i];
                else
                    p->scratch[w++] = buf[i];
                i++;
                continue;
            }
            if (i >= n) {
                *err = "Protocol error: unbalanced quotes in request";
                return RESP_ERR;
            }
            c = buf[i];
            if (c == q) {
                if (i + 1 < n && !inline_space(buf[i + 1])) {
                    *err = "Protocol error: unbalanced quotes in request";
                    return RESP_ERR;
                }
                i++;
                break;
            }
            if (c == '\\' && q == '"' && i + 3 < n && buf[i + 1] == 'x' &&
                hex_value(buf[i + 2]) >= 0 && hex_value(buf[i + 3]) >= 0) {
                c = (char)(hex_value(buf[i + 2]) * 16 + hex_value(buf[i + 3]));
                i += 4;
            } else if (c == '\\' && q == '"' && i + 1 < n) {
                c = buf[i + 1];
                c = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t'
                  : c == 'b' ? '\b' : c == 'a' ? '\a' : c;
                i += 2;
            } else if (c == '\\' && q == '\'' && i + 1 < n && buf[i + 1] == '\'') {
                c = '\'';
                i += 2;
            } else {
                i++;
            }
            p->scratch[w++] = c;
        }
        if (add_arg(p, start, w - start) != 0) {
            *err = "Protocol error: out of memory";
            return RESP_ERR;
        }
    }
    p->inline_req = 1;
    return RESP_DONE;
}

static int parse_request(resp_parser_t *p, const char *buf, size_t len,
                         const resp_limits_t *lim, const char **err)
{
    size_t i = p->pos;
    long long v;
    int r;

    if (p->want < 0) {
        if (i >= len)
            return RESP_MORE;
        if (buf[i] != '*') {
            const char *nl = memchr(buf + i, '\n', len - i);
            size_t end;
            if (nl == NULL) {
                if (len - i > lim->max_inline) {
                    *err = "Protocol error: too big inline request";
                    return RESP_ERR;
                }
                return RESP_MORE;
            }
            end = (size_t)(nl - buf);
            if (end - i > lim->max_inline) {
                *err = "Protocol error: too big inline request";
                return RESP_ERR;
            }
            p->pos = end + 1;
            if (end > i && buf[end - 1] == '\r')
                end--;
            return parse_inline(p, buf + i, end - i, err);
        }
        i++;
        r = read_number(buf, len, &i, &v);
        if (r == 0)
            return RESP_MORE;
        if (r < 0 || v > (long long)lim->max_args) {
            *err = "Protocol error: invalid multibulk length";
            return RESP_ERR;
        }
        p->pos = i;
        if (v <= 0) {
            p->want = 0;
            return RESP_DONE;   /* "*0" / "*-1": nothing to run */
        }
        p->want = v;
    }
    while ((long long)p->nargs < p->want) {
        size_t start;
        if (i >= len)
            return RESP_MORE;
        if (buf[i] != '$') {
            static char msg[64];
            snprintf(msg, sizeof(msg), "Protocol error: expected '$', got '%c'",
                     buf[i] >= 32 && buf[i] < 127 ? buf[i] : '?');
            *err = msg;
            return RESP_ERR;
        }
        i++;
        r = read_number(buf, len, &i, &v);
        if (r == 0)
            return RESP_MORE;
        if (r < 0 || v < 0 || (unsigned long long)v > lim->max_bulk) {
            *err = "Protocol error: invalid bulk length";
            return RESP_ERR;
        }
        start = i;
        if (len - start < (size_t)v + 2)
            return RESP_MORE;
        if (buf[start + (size_t)v] != '\r' || buf[start + (size_t)v + 1] != '\n') {
            *err = "Protocol error: bulk string not terminated by CRLF";
            return RESP_ERR;
        }
        if (add_arg(p, start, (size_t)v) != 0) {
            *err = "Protocol error: out of memory";
            return RESP_ERR;
        }
        i = start + (size_t)v + 2;
        p->pos = i;
    }
    return RESP_DONE;
}

int resp_parse(resp_parser_t *p, const char *buf, size_t len, const resp_limits_t *lim,
               const char **err)
{
    static char msg[96];
    /* Bytes past max_request + 1 cannot change the verdict on this request
     * (too big, or whatever error or completion comes first), and looking
     * at no more of them makes that verdict the same however the stream
     * was split: a whole pipeline read at once would otherwise let a
     * complete request past the limit that a slower client gets refused. */
    size_t seen = len > lim->max_request ? lim->max_request + 1 : len;
    int rc = parse_request(p, buf, seen, lim, err);

    if ((rc == RESP_MORE && seen > lim->max_request) ||
        (rc == RESP_DONE && p->pos > lim->max_request)) {
        snprintf(msg, sizeof(msg), "Protocol error: request larger than max-request-bytes (%zu)",
                 lim->max_request);
        *err = msg;
        return RESP_ERR;
    }
    return rc;
}

const char *resp_arg(const resp_parser_t *p, const char *buf, size_t i)
{
    return (p->inline_req ? p->scratch : buf) + p->off[i];
}
