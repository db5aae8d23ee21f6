/*
 * bench_replies.c - section g of `make bench`: what the nginx module's
 * admit connection does with the daemon's replies (issue 42, item 15).
 * After: hiredis's reader through lib/conn/resp_read.c, fed as the
 * module feeds it (reads of 4096 bytes, whole replies taken until it needs
 * more, each freed; error replies counted).  Before: the hand-written
 * scanner it replaced (ngx_http_ringbloom_admit_conn.c up to issue 42),
 * kept here as the baseline only: a byte loop that took every line
 * beginning with "-" for an error reply.  The stream: the replies of a
 * busy worker's admits, ":0" / ":1" of BF.ADD, ":<n>" of ADMIT.TOUCH and
 * 1 in 100 an error ("-NOPERM ...").  Million replies a second, median of
 * the repetitions, and the two counts of errors (they must agree).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "resp_read.h"

#define RP_READ 4096

/* The old scanner's state and loop, as the module had them. */
typedef struct {
    int line_start, in_error;
    unsigned long errors;
} rp_scan_t;

static void rp_scan(rp_scan_t *s, const unsigned char *p, const unsigned char *last)
{
    for (; p < last; p++) {
        if (s->line_start) {
            s->line_start = 0;
            s->in_error = (*p == '-');
            if (s->in_error)
                s->errors++;
        }
        if (*p == '\n')
            s->line_start = 1;
    }
}

/* The stream of n replies into *len bytes (malloc'd). */
static char *rp_stream(size_t n, size_t *len)
{
    size_t cap = n * 48 + 64, off = 0;
    char *b = malloc(cap);

    if (b == NULL)
        bench_die("section g: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (i % 100 == 99)
            off += (size_t)snprintf(b + off, cap - off,
                                    "-NOPERM this user has no permissions to run 'bf.add'\r\n");
        else if (i % 3 == 2)
            off += (size_t)snprintf(b + off, cap - off, ":%zu\r\n", i % 16);
        else
            off += (size_t)snprintf(b + off, cap - off, ":%zu\r\n", i & 1);
    }
    *len = off;
    return b;
}

/* Million replies a second through the scanner; *errors its count. */
static double rp_old(const char *b, size_t len, size_t n, unsigned long *errors)
{
    rp_scan_t s = { 1, 0, 0 };
    double t0 = bench_now_s();

    for (size_t off = 0; off < len; off += RP_READ) {
        size_t k = len - off < RP_READ ? len - off : RP_READ;
        rp_scan(&s, (const unsigned char *)b + off, (const unsigned char *)b + off + k);
    }
    *errors = s.errors;
    return (double)n / (bench_now_s() - t0) / 1e6;
}

/* The same through hiredis's reader, bounded as the module bounds it. */
static double rp_new(const char *b, size_t len, size_t n, unsigned long *errors)
{
    rbi_reader_t *rd = rbi_reader_new(16);
    redisReply *r;
    unsigned long e = 0, got = 0;
    double t0 = bench_now_s();

    if (rd == NULL)
        bench_die("section g: out of memory");
    for (size_t off = 0; off < len; off += RP_READ) {
        size_t k = len - off < RP_READ ? len - off : RP_READ;
        rbi_read_t rc;

        if (rbi_reader_feed(rd, b + off, k) != 0)
            bench_die("section g: out of memory");
        while ((rc = rbi_reader_get(rd, 4096 + RBI_READ_CHUNK, &r)) == RBI_READ_OK) {
            e += r->type == REDIS_REPLY_ERROR;
            got++;
            freeReplyObject(r);
        }
        if (rc != RBI_READ_MORE)
            bench_die("section g: the reader refused the stream: %s", rbi_reader_why(rd));
    }
    rbi_reader_free(rd);
    if (got != n)
        bench_die("section g: %lu replies read of %zu", got, n);
    *errors = e;
    return (double)n / (bench_now_s() - t0) / 1e6;
}

void bench_replies(int reps, int quick)
{
    size_t n = quick ? 200000 : 2000000, len;
    char *b = rp_stream(n, &len);
    double vo[32], vn[32], rs[3];
    unsigned long eo = 0, en = 0;
    cell_t cells[2];

    for (int r = 0; r < reps; r++) {
        vo[r] = rp_old(b, len, n, &eo);
        vn[r] = rp_new(b, len, n, &en);
    }
    bench_ratio_spread(vo, vn, reps, rs);
    cells[0] = (cell_t){ "hand scanner (before)", bench_median(vo, reps), NULL };
    cells[1] = (cell_t){ "hiredis reader (after)", bench_median(vn, reps), NULL };
    row("g", "nginx admits' replies", "M replies/s", 1, 0, cells, 2);
    printf("    %zu replies (%zu bytes) in reads of %d: the reader costs %.2fx the scanner "
           "per reply (spread %.2f .. %.2f, %d reps); errors counted %lu and %lu\n",
           n, len, RP_READ, rs[0], rs[1], rs[2], reps, eo, en);
    if (eo != en)
        bench_die("section g: the two counts of errors differ");
    free(b);
}
