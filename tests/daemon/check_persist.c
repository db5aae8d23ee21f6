/*
 * check_persist.c - ringbloomd's state directory at start-up
 * (daemon/persist/recovery.c, replay.c, snapshot.c; docs/design.md, "Files in the
 * state directory" and "Start-up"): every file state a crash can leave
 * starts with every acknowledged change, every other one is a refusal that
 * names the files, offsets and ids (exit status 1, nothing left in
 * /dev/shm), and --ignore-corrupt starts anyway, keeping a byte-identical
 * copy of what it discards and saying what that was.
 *
 * The files are damaged or rearranged by hand between runs: single bits
 * of both headers, logs of other snapshots, missing files, records cut
 * out of or duplicated in a log, a crafted record, cut and zero-filled
 * tails, and files rewritten in the old format (1) byte for byte.
 *
 * Filters made by BF.LOADCHUNK (RedisBloom's golden dumps and ours) and
 * LAYOUT redisbloom filters come back from a snapshot (SAVE, BGSAVE)
 * answering every probe as before and dumping the same chunks.
 */
#include <dirent.h>

#include "hash.h"
#include "rbd_test.h"

static rbd_proc_t d;
static char state[256], snap_path[300], log_path[300];
static const char *const ignore_corrupt[] = { "--ignore-corrupt", NULL };

/* A daemon in a fresh temp directory, and the paths of its state files. */
static void start(const char *extra)
{
    rbd_start(&d, extra);
    snprintf(state, sizeof(state), "%s/state", d.dir);
    snprintf(snap_path, sizeof(snap_path), "%s/snapshot.rbs", state);
    snprintf(log_path, sizeof(log_path), "%s/appendonly.rbl", state);
}

/* The daemon killed and its segment removed: the next start restores
 * from the files alone. */
static void crash(void)
{
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The u64 at offset off of a file. */
static uint64_t file_u64(const char *path, size_t off)
{
    size_t len;
    unsigned char *data = (unsigned char *)rbd_read_file(path, &len);
    uint64_t v;

    ck_assert_uint_ge(len, off + 8);
    v = get_le64(data + off);
    free(data);
    return v;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

/* The last line of d's output after offset `from` that contains needle
 * (static buffer; "" if none). */
static const char *output_line(long from, const char *needle)
{
    static char found[4096];
    char line[4096];
    FILE *f = fopen(d.log, "r");

    found[0] = '\0';
    ck_assert_ptr_nonnull(f);
    fseek(f, from, SEEK_SET);
    while (fgets(line, sizeof(line), f) != NULL)
        if (strstr(line, needle) != NULL)
            snprintf(found, sizeof(found), "%s", line);
    fclose(f);
    return found;
}

/* Starts the daemon on d's files expecting a refusal: exit status 1 and
 * nothing left in /dev/shm.  Returns why (its "cannot start" line). */
static const char *refused(const char *const *args)
{
    long from = file_size(d.log);
    int status = rbd_try_launch(&d, args);

    ck_assert_msg(status == 1, "ringbloomd %s (status %d) where it must refuse to start; see %s",
                  status == -1 ? "started" : "exited", status, d.log);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_ENOENT);
    return output_line(from, "cannot start: ");
}

/* Starts the daemon on d's files, which must work; returns the offset
 * of this run's output in d.log. */
static long started(const char *const *args)
{
    long from = file_size(d.log);

    rbd_launch(&d, args);
    ck_assert_str_eq(output_line(from, "cannot start"), "");
    return from;
}

/* Asserts that line contains each of the NULL-terminated strings. */
static void assert_says(const char *line, ...)
{
    va_list ap;
    const char *want;

    va_start(ap, line);
    while ((want = va_arg(ap, const char *)) != NULL)
        ck_assert_msg(strstr(line, want) != NULL, "[%s] does not say [%s]", line, want);
    va_end(ap);
}

/* The state directory holds exactly one file whose name starts with
 * prefix, and it has the bytes want. */
static void assert_kept(const char *prefix, const void *want, size_t len)
{
    DIR *dir = opendir(state);
    struct dirent *e;
    char path[600];
    char *data;
    size_t got;
    int n = 0;

    ck_assert_ptr_nonnull(dir);
    while ((e = readdir(dir)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(path, sizeof(path), "%s/%s", state, e->d_name);
            n++;
        }
    closedir(dir);
    ck_assert_msg(n == 1, "%d files %s* in %s, want 1", n, prefix, state);
    data = rbd_read_file(path, &got);
    ck_assert_msg(got == len && memcmp(data, want, len) == 0, "%s is not the discarded file",
                  path);
    free(data);
}

/* Rewrites snapshot bytes (format 3: a 128-byte header) as an earlier
 * version wrote them, a 64-byte header then the dump: format 2 (sealed
 * by its checksum, no *from*) or 1 (zeros for prev and the checksum);
 * *len shrinks by 64.  A log (may be NULL) as format 1: RBLOG001, zeros
 * for its checksum.  Byte for byte what those versions wrote. */
static void to_format(unsigned version, unsigned char *snap, size_t *len, unsigned char *log)
{
    if (snap != NULL) {
        ck_assert_uint_eq(snap[8], 3);
        memmove(snap + 64, snap + 128, *len - 128);
        *len -= 64;
        put_le32(snap + 8, version);
        memset(snap + 48 + (version == 1 ? 0 : 8), 0, version == 1 ? 16 : 8);
        if (version == 2) {
            uint64_t sum = rbi_hash_xxh3(snap, 56);
            for (int b = 0; b < 8; b++)
                snap[56 + b] = (unsigned char)(sum >> (8 * b));
        }
    }
    if (log != NULL) {
        memcpy(log, "RBLOG001", 8);
        memset(log + 24, 0, 8);
    }
}

static void to_format1(unsigned char *snap, size_t *len, unsigned char *log)
{
    to_format(1, snap, len, log);
}

/* The whole records of a log: offsets, sizes (header included), types. */
typedef struct rec {
    size_t off, size;
    unsigned type;
} rec_t;

static size_t records_of(const unsigned char *log, size_t len, rec_t *r, size_t max)
{
    size_t n = 0;

    for (size_t i = 32; i + 9 <= len && n < max;) {
        size_t size = 8 + (size_t)(log[i] | log[i + 1] << 8 | log[i + 2] << 16 |
                                   (uint32_t)log[i + 3] << 24);
        if (size > len - i)
            break;
        r[n].off = i;
        r[n].size = size;
        r[n++].type = log[i + 8];
        i += size;
    }
    return n;
}

/* The daemon killed, then its snapshot and log read back (the caller
 * frees both): the log's last record, which must end the file, and the
 * number of its records, *n. */
static rec_t crash_and_read(unsigned char **snap, size_t *snap_len, unsigned char **log,
                            size_t *log_len, size_t *n)
{
    rec_t r[8];

    crash();
    *snap = (unsigned char *)rbd_read_file(snap_path, snap_len);
    *log = (unsigned char *)rbd_read_file(log_path, log_len);
    *n = records_of(*log, *log_len, r, 8);
    ck_assert_uint_ge(*n, 1);
    ck_assert_uint_eq(r[*n - 1].off + r[*n - 1].size, *log_len);
    return r[*n - 1];
}

static void expect_exists(rb_conn_t *c, const char *filter, const char *key, int want)
{
    rbd_expect(c, want ? "1" : "0", "BF.EXISTS", filter, key);
}

/* ---- headers ---------------------------------------------------------------- */

/* Writes data (len bytes) to path with single bits of its first hdr bytes
 * flipped in turn and asserts that every start is refused naming path;
 * prints the count as `what`.  path is left holding the last flip.
 * Flipped: every bit of the first 16 bytes (the magic and the format
 * version, read before the checksum decides, and the start of the ids),
 * then one bit of every later byte, its position moving with the byte
 * (byte i, bit i % 8), so each byte and each bit position is hit.  Every
 * bit of the whole header was 1,280 daemon starts, two thirds of this
 * suite's time (seconds more under the sanitizers) for a checksum whose
 * detection of any single-bit error does not depend on where the bit is. */
static void assert_header_flips_refused(const char *path, const unsigned char *data, size_t len,
                                        size_t hdr, const char *what)
{
    unsigned char *flipped = malloc(len);
    size_t flips = 0;

    ck_assert_ptr_nonnull(flipped);
    for (size_t bit = 0; bit < hdr * 8; bit++) {
        const char *why;
        if (bit >= 16 * 8 && bit % 8 != (bit / 8) % 8)
            continue;
        memcpy(flipped, data, len);
        flipped[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        rbd_write_file(path, flipped, len);
        why = refused(NULL);
        ck_assert_msg(strstr(why, path) != NULL, "%s header byte %zu bit %zu: [%s]", what,
                      bit / 8, bit % 8, why);
        flips++;
    }
    printf("%s header (%zu bytes): %zu of %zu single-bit flips refused\n", what, hdr, flips,
           flips);
    free(flipped);
}

/* Single-bit flips of the log header (magic, id, created time,
 * checksum) stop the start naming the log; a flipped id is never taken
 * for an older log and skipped.  --ignore-corrupt discards the log,
 * keeping it. */
START_TEST(test_persist_log_header_bit_flips_refused)
{
    unsigned char *snap, *log, *flipped;
    size_t snap_len, len;
    long from;
    rb_conn_t *c;

    start("appendfsync always");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rb_conn_close(c);
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &snap_len);
    log = (unsigned char *)rbd_read_file(log_path, &len);
    assert_header_flips_refused(log_path, log, len, 32, "log");
    flipped = malloc(len);
    ck_assert_ptr_nonnull(flipped);
    rbd_write_file(log_path, log, len);
    started(NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    rb_conn_close(c);

    /* --ignore-corrupt on a flipped id: the snapshot alone (of the empty
     * state), the log kept. */
    crash();
    memcpy(flipped, log, len);
    flipped[8] ^= 1;
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, flipped, len);
    from = started(ignore_corrupt);
    assert_says(output_line(from, "discarding all of"), log_path, "header checksum mismatch",
                "kept as", (const char *)NULL);
    assert_kept("appendonly.rbl.corrupt-", flipped, len);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 0);
    rb_conn_close(c);
    free(flipped);
    free(snap);
    free(log);
}
END_TEST

/* Single-bit flips of the snapshot header stop the start naming
 * the snapshot; --ignore-corrupt then discards the snapshot and the log
 * that continues it, keeping both. */
START_TEST(test_persist_snapshot_header_bit_flips_refused)
{
    unsigned char *snap, *log, *flipped;
    size_t snap_len, log_len;
    char needle[400];
    long from;
    rb_conn_t *c;

    start("appendfsync always");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rb_conn_close(c);
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &snap_len);
    log = (unsigned char *)rbd_read_file(log_path, &log_len);
    assert_header_flips_refused(snap_path, snap, snap_len, 128, "snapshot");
    flipped = malloc(snap_len);
    ck_assert_ptr_nonnull(flipped);

    /* A flipped bit in the id of the log it names (byte 16). */
    memcpy(flipped, snap, snap_len);
    flipped[16] ^= 1;
    rbd_write_file(snap_path, flipped, snap_len);
    assert_says(refused(NULL), snap_path, "header checksum mismatch", (const char *)NULL);
    from = started(ignore_corrupt);
    snprintf(needle, sizeof(needle), "discarding all of %s ", snap_path);
    assert_says(output_line(from, needle), "header checksum mismatch", "kept as",
                (const char *)NULL);
    assert_says(output_line(from, "continues a snapshot"), log_path, "discarding all of",
                "kept as", (const char *)NULL);
    assert_kept("snapshot.rbs.corrupt-", flipped, snap_len);
    assert_kept("appendonly.rbl.corrupt-", log, log_len);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 0);   /* what was discarded is gone (and kept) */
    rb_conn_close(c);
    free(flipped);
    free(snap);
    free(log);
}
END_TEST

/* ---- which log goes with which snapshot -------------------------------------- */

/* The snapshot is removed, or moved aside, under a log that continues
 * it: a refusal, not a replay onto an empty state. */
START_TEST(test_persist_log_without_its_snapshot_refused)
{
    unsigned char *log;
    size_t len;
    char aside[400];
    long from;
    rb_conn_t *c;

    start("appendfsync always");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "100");
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "a");   /* f is in the snapshot, not in the log */
    rbd_expect(c, "1", "BF.ADD", "g", "b");
    rb_conn_close(c);
    crash();
    log = (unsigned char *)rbd_read_file(log_path, &len);
    snprintf(aside, sizeof(aside), "%s.moved", snap_path);
    ck_assert_int_eq(rename(snap_path, aside), 0);
    assert_says(refused(NULL), log_path, "continues a snapshot, but there is no snapshot",
                snap_path, (const char *)NULL);
    ck_assert_int_eq(unlink(aside), 0);
    assert_says(refused(NULL), log_path, "continues a snapshot", (const char *)NULL);

    from = started(ignore_corrupt);
    assert_says(output_line(from, "discarding all of"), log_path, "kept as", (const char *)NULL);
    assert_kept("appendonly.rbl.corrupt-", log, len);
    c = rbd_connect(&d);
    expect_exists(c, "g", "b", 0);
    rb_conn_close(c);
    free(log);
}
END_TEST

/* A log that is neither the one the snapshot names nor the one it
 * superseded (here one two snapshots old) is a refusal naming both files
 * and the three ids. */
START_TEST(test_persist_log_of_another_snapshot_refused)
{
    unsigned char *old_log;
    size_t len;
    char ids[3][17];
    long from;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    old_log = (unsigned char *)rbd_read_file(log_path, &len);
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    crash();
    snprintf(ids[0], sizeof(ids[0]), "%016llx", (unsigned long long)get_le64(old_log + 8));
    snprintf(ids[1], sizeof(ids[1]), "%016llx", (unsigned long long)file_u64(snap_path, 16));
    snprintf(ids[2], sizeof(ids[2]), "%016llx", (unsigned long long)file_u64(snap_path, 48));
    rbd_write_file(log_path, old_log, len);
    assert_says(refused(NULL), log_path, "does not fit snapshot", snap_path, ids[0], ids[1],
                ids[2], (const char *)NULL);

    from = started(ignore_corrupt);
    assert_says(output_line(from, "discarding all of"), log_path, "kept as", (const char *)NULL);
    assert_kept("appendonly.rbl.corrupt-", old_log, len);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);   /* the snapshot has everything */
    expect_exists(c, "f", "b", 1);
    rb_conn_close(c);
    free(old_log);
}
END_TEST

/* The log is removed under a snapshot that superseded one: a refusal;
 * --ignore-corrupt starts from the snapshot alone and says what is lost. */
START_TEST(test_persist_missing_log_refused)
{
    long from;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rb_conn_close(c);
    crash();
    ck_assert_int_eq(unlink(log_path), 0);
    assert_says(refused(NULL), log_path, "is missing", snap_path, (const char *)NULL);

    from = started(ignore_corrupt);
    assert_says(output_line(from, "starting from the snapshot alone"), log_path, "is missing",
                (const char *)NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    expect_exists(c, "f", "b", 0);
    rb_conn_close(c);
}
END_TEST

/* ---- crash windows ----------------------------------------------------------- */

/* The snapshot procedure killed between its two renames (the new snapshot
 * installed, the log it supersedes still in place) and before the first
 * (the old pair, the temp files written): both start, with every change.
 * The start-up snapshot of the first start supersedes the log it found in
 * place, although it skipped it, so the same kill there starts too. */
START_TEST(test_persist_crash_in_snapshot_windows_starts)
{
    unsigned char *log_x, *snap_k, *log_k, *snap_n, *log_n;
    size_t x_len, sk_len, lk_len, sn_len, ln_len;
    char tmp[400];
    long from;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    log_x = (unsigned char *)rbd_read_file(log_path, &x_len);
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    ck_assert_uint_eq(file_u64(snap_path, 48), get_le64(log_x + 8));   /* superseded X */
    crash();

    /* Between the renames: the new snapshot, the old log, replayed from
     * where the snapshot was frozen (its end: nothing came after). */
    ck_assert_uint_eq(file_u64(snap_path, 56), x_len);
    rbd_write_file(log_path, log_x, x_len);
    from = started(NULL);
    assert_says(output_line(from, "replaying it from offset"), log_path, snap_path,
                (const char *)NULL);
    assert_says(output_line(from, "log records replayed"), " 0 log records", (const char *)NULL);
    ck_assert_uint_eq(file_u64(snap_path, 48), get_le64(log_x + 8));
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    rb_conn_close(c);
    /* ... and again in this start's own snapshot. */
    crash();
    rbd_write_file(log_path, log_x, x_len);
    from = started(NULL);
    assert_says(output_line(from, "predates the snapshot"), log_path, (const char *)NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rb_conn_close(c);

    /* Before the first rename: the old snapshot and log, both temp files. */
    snap_k = (unsigned char *)rbd_read_file(snap_path, &sk_len);
    log_k = (unsigned char *)rbd_read_file(log_path, &lk_len);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    crash();
    snap_n = (unsigned char *)rbd_read_file(snap_path, &sn_len);
    log_n = (unsigned char *)rbd_read_file(log_path, &ln_len);
    rbd_write_file(snap_path, snap_k, sk_len);
    rbd_write_file(log_path, log_k, lk_len);
    snprintf(tmp, sizeof(tmp), "%s.tmp", snap_path);
    rbd_write_file(tmp, snap_n, sn_len);
    snprintf(tmp, sizeof(tmp), "%s.tmp", log_path);
    rbd_write_file(tmp, log_n, ln_len);
    from = started(NULL);
    assert_says(output_line(from, "log records replayed"), "1 log records", (const char *)NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    expect_exists(c, "f", "b", 1);
    rb_conn_close(c);
    free(log_x);
    free(snap_k);
    free(log_k);
    free(snap_n);
    free(log_n);
}
END_TEST

/* A numeric field of INFO persistence. */
static long long persistence(rb_conn_t *c, const char *field)
{
    char want[64];
    const char *t, *p;
    int rc;

    t = rbd_cmd(c, &rc, "INFO", "persistence", (const char *)NULL);
    snprintf(want, sizeof(want), "%s:", field);
    p = strstr(t, want);
    ck_assert_msg(p != NULL, "INFO persistence has no %s", field);
    return atoll(p + strlen(want));
}

/* A snapshot supersedes the log X in place only up to the offset F where
 * the state was frozen (its header says so, bytes 56-63): what X holds
 * from F on (changes made while a background snapshot was written) is
 * replayed if the daemon died between installing the snapshot and its
 * new log, the state crafted here as X plus the new log's records; and a
 * log that does not reach F is refused. */
START_TEST(test_persist_crash_after_snapshot_replays_its_log_from_the_freeze)
{
    unsigned char *log_x, *log_y, *snap, *both;
    size_t x_len, y_len, s_len;
    long from;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    log_x = (unsigned char *)rbd_read_file(log_path, &x_len);
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rbd_expect(c, "OK", "RING.ADD", "n1");
    rb_conn_close(c);
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &s_len);
    log_y = (unsigned char *)rbd_read_file(log_path, &y_len);
    ck_assert_uint_eq(get_le64(snap + 48), get_le64(log_x + 8));   /* prev X */
    ck_assert_uint_eq(get_le64(snap + 56), x_len);                 /* from F */
    ck_assert_uint_eq(get_le64(snap + 16), get_le64(log_y + 8));   /* next Y */
    both = malloc(x_len + y_len);
    ck_assert_ptr_nonnull(both);
    memcpy(both, log_x, x_len);
    memcpy(both + x_len, log_y + 32, y_len - 32);
    rbd_write_file(log_path, both, x_len + y_len - 32);
    from = started(NULL);
    assert_says(output_line(from, "replaying it from offset"), log_path, snap_path,
                (const char *)NULL);
    assert_says(output_line(from, "log records replayed"), " 2 log records", (const char *)NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    expect_exists(c, "f", "b", 1);
    rbd_expect(c, "n1\n1", "RING.NODES");
    rb_conn_close(c);

    /* X cut short of F: it cannot be the log the snapshot continues. */
    crash();
    rbd_write_file(snap_path, snap, s_len);
    rbd_write_file(log_path, log_x, x_len - 1);
    assert_says(refused(NULL), log_path, "does not reach offset", snap_path, (const char *)NULL);
    free(log_x);
    free(log_y);
    free(snap);
    free(both);
}
END_TEST

/* The table modes survive restarts: an explicit slot map from the log
 * (replay), from a snapshot's ring (rb_ring_load) with the log after it,
 * and from the live segment; a maglev table size likewise. */
START_TEST(test_persist_table_modes_survive_restarts)
{
    const char *const map1 = "0\n100\nc\n101\n4095\na\n4096\n12287\nb\n12288\n16383\nc";
    const char *const map2 = "0\n100\nc\n101\n12287\nb\n12288\n16383\nc";
    char owner[64];
    rb_conn_t *c;
    int rc;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.MODE", "slots");
    rbd_expect(c, "OK", "RING.ADD", "a");
    rbd_expect(c, "OK", "RING.ADD", "b", "2");
    rbd_expect(c, "OK", "RING.ADD", "c");
    rbd_expect(c, "OK", "RING.SLOTS", "0", "100", "c", "200", "300", "a");
    rbd_expect(c, map1, "RING.SLOTS");
    rb_conn_close(c);
    crash();                       /* the log alone */
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, map1, "RING.SLOTS");
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "OK", "RING.ADD", "d");   /* after the snapshot: owns nothing */
    rbd_expect(c, "OK", "RING.REMOVE", "a");
    rbd_expect(c, map2, "RING.SLOTS");
    rb_conn_close(c);
    crash();                       /* the snapshot's ring, then its log */
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, map2, "RING.SLOTS");
    rbd_expect(c, "OK", "RING.ADD", "e");   /* still explicit: owns nothing */
    rbd_expect(c, map2, "RING.SLOTS");
    rbd_expect(c, "OK", "RING.MODE", "maglev", "1009");
    snprintf(owner, sizeof(owner), "%s", rbd_cmd(c, &rc, "RING.GET", "k", (const char *)NULL));
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);         /* the live segment */
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, owner, "RING.GET", "k");
    rbd_expect(c, "OK", "RING.ADD", "f");
    rb_conn_close(c);
    crash();
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "Mode\nmaglev\nReplicas\n1009\nNodes\n5\nNodes not up\n0\nPoints\n1009\nVersion\n6\n"
               "Bytes per copy\n10400", "RING.INFO");
    rb_conn_close(c);
}
END_TEST

/* Background snapshots (BGSAVE) while keys are added: the daemon killed at
 * different moments - right after the freeze, while the thread writes,
 * after the install - restarts with every key it acknowledged, and adds
 * made while a snapshot was being written are in the log that continues
 * it. */
START_TEST(test_persist_background_snapshot_keeps_every_change)
{
    static const int kill_after[] = { 0, 20, 300, -1 };   /* -1: after the install */
    char key[64];
    long long count;
    int acked = 0, during = 0;
    rb_conn_t *c;

    start("appendfsync everysec\nsave-seconds 0\nmax-memory 1gb\nmax-command-bytes 256mb");
    c = rbd_connect(&d);
    /* ~120 MB of bits (past the default max-command-bytes), so a dump
     * takes a while. */
    rbd_expect(c, "OK", "BF.RESERVE", "big", "0.01", "100000000");
    rb_conn_close(c);
    for (size_t round = 0; round < sizeof(kill_after) / sizeof(kill_after[0]); round++) {
        c = rbd_connect(&d);
        count = persistence(c, "snapshots");
        rbd_expect(c, "Background saving started", "BGSAVE");
        rbd_expect(c, "ERR Background save already in progress", "BGSAVE");
        for (int i = 0; kill_after[round] < 0 || i < kill_after[round]; i++) {
            snprintf(key, sizeof(key), "k%d", acked);
            rbd_expect(c, "1", "BF.ADD", "big", key);
            acked++;
            if (kill_after[round] < 0 && i % 50 == 0) {
                if (persistence(c, "rdb_bgsave_in_progress") == 0)
                    break;
                during += 50;
            }
        }
        if (kill_after[round] < 0) {
            ck_assert_int_eq(persistence(c, "snapshots"), count + 1);
            ck_assert_int_gt(during, 0);   /* keys were added while it was written */
            for (int i = 0; i < 10; i++) {
                snprintf(key, sizeof(key), "k%d", acked++);
                rbd_expect(c, "1", "BF.ADD", "big", key);
            }
        }
        rb_conn_close(c);
        crash();
        started(NULL);
        c = rbd_connect(&d);
        for (int i = 0; i < acked; i++) {
            snprintf(key, sizeof(key), "k%d", i);
            expect_exists(c, "big", key, 1);
        }
        rb_conn_close(c);
    }
}
END_TEST

/* The first snapshot of a state directory killed before its log is in
 * place: the snapshot alone (it superseded none) starts, and so does the
 * same kill in the next start-up snapshot.  A start that re-attached to
 * the live segment supersedes the log in place too: killed between its
 * renames, the files start with everything. */
START_TEST(test_persist_crash_in_first_and_reattach_snapshots_starts)
{
    unsigned char *log;
    size_t len;
    long from;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    crash();
    ck_assert_uint_eq(file_u64(snap_path, 48), 0);
    ck_assert_int_eq(unlink(log_path), 0);
    started(NULL);
    ck_assert_uint_eq(file_u64(snap_path, 48), 0);   /* no log was in place */
    crash();
    ck_assert_int_eq(unlink(log_path), 0);
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rb_conn_close(c);

    /* Killed with the segment left: the restart re-attaches to it. */
    log = (unsigned char *)rbd_read_file(log_path, &len);
    rbd_stop(&d, SIGKILL);
    from = started(NULL);
    assert_says(output_line(from, "re-attached"), "live segment", (const char *)NULL);
    ck_assert_uint_eq(file_u64(snap_path, 48), get_le64(log + 8));
    crash();
    rbd_write_file(log_path, log, len);
    from = started(NULL);
    assert_says(output_line(from, "predates the snapshot"), log_path, (const char *)NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    rb_conn_close(c);
    free(log);
}
END_TEST

/* Node states are ring changes like the others: logged (record 12),
 * replayed from the log alone, carried by a snapshot and by the live
 * segment; RING.DOWN of an unknown node is refused and logs nothing. */
START_TEST(test_persist_node_states_replay)
{
    const char *want = "n1\n1\nup\nn2\n1\ndown\nn3\n2\ndrain";
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "RING.ADD", "n1");
    rbd_expect(c, "OK", "RING.ADD", "n2");
    rbd_expect(c, "OK", "RING.ADD", "n3", "2");
    rbd_expect(c, "OK", "RING.DOWN", "n2");
    rbd_expect(c, "OK", "RING.DRAIN", "n1");
    rbd_expect(c, "OK", "RING.UP", "n1");
    rbd_expect(c, "OK", "RING.DRAIN", "n3");
    rbd_expect(c, "ERR no such node 'n9' (RING.NODES lists the ring's)", "RING.DOWN",
               "n9");
    rbd_expect(c, "ERR syntax error (RING.NODES [WITHSTATES])", "RING.NODES", "x");
    rbd_expect(c, want, "RING.NODES", "WITHSTATES");
    rbd_expect(c, "n1\n1\nn2\n1\nn3\n2", "RING.NODES");
    rbd_expect(c, "n1", "RING.GETN", "k", "3");
    rb_conn_close(c);
    crash();                  /* from the log alone */
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, want, "RING.NODES", "WITHSTATES");
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    crash();                  /* from the snapshot */
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, want, "RING.NODES", "WITHSTATES");
    rb_conn_close(c);
    rbd_stop(&d, SIGKILL);    /* the live segment, re-attached */
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, want, "RING.NODES", "WITHSTATES");
    rbd_expect(c, "OK", "RING.UP", "n2");
    rbd_expect(c, "n1\n1\nup\nn2\n1\nup\nn3\n2\ndrain", "RING.NODES", "WITHSTATES");
    rb_conn_close(c);
}
END_TEST

/* ---- records ------------------------------------------------------------------- */

/* A checksummed record that names a filter or node that does not exist,
 * or creates one that already does, is corruption: records cut out of a
 * real log, or duplicated in it, and a crafted BF.ROTATE, each stop the
 * start naming the log, the offset, the record and the name.  With
 * --ignore-corrupt the records before it stay applied. */
START_TEST(test_persist_record_for_missing_filter_or_node_refused)
{
    enum { RES_F, ADD_F, RES_G, ADD_G, RESET_G, ADD_N, WEIGHT_N, REMOVE_N, NREC };
    static const struct {
        int recs[4];   /* records after RES_F, ADD_F; -1 ends, ROTATE_G is crafted */
        const char *says;
    } cases[] = {
        { { ADD_G, -1 }, "record BF.ADD names filter 'g', which does not exist" },
        { { RESET_G, -1 }, "record BF.RESET names filter 'g', which does not exist" },
        { { NREC, -1 }, "record BF.ROTATE names filter 'g', which does not exist" },
        { { WEIGHT_N, -1 }, "record RING.WEIGHT names node 'n', which is not in the ring" },
        { { REMOVE_N, -1 }, "record RING.REMOVE names node 'n', which is not in the ring" },
        { { ADD_N, ADD_N, -1 }, "record RING.ADD names node 'n', which is already in the ring" },
        { { RES_G, RES_G, -1 }, "record BF.RESERVE names filter 'g', which already exists" },
    };
    static const unsigned types[NREC] = { 5, 6, 5, 6, 8, 1, 3, 2 };
    unsigned char *snap, *log, *out, rotate[9 + 3] = { 0 };
    size_t snap_len, log_len, n;
    rec_t r[16];
    long from;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rbd_expect(c, "OK", "BF.RESERVE", "g", "0.01", "100");
    rbd_expect(c, "1", "BF.ADD", "g", "k");
    rbd_expect(c, "OK", "BF.RESET", "g");
    rbd_expect(c, "OK", "RING.ADD", "n");
    rbd_expect(c, "OK", "RING.WEIGHT", "n", "3");
    rbd_expect(c, "OK", "RING.REMOVE", "n");
    rb_conn_close(c);
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &snap_len);
    log = (unsigned char *)rbd_read_file(log_path, &log_len);
    ck_assert_uint_eq(records_of(log, log_len, r, 16), NREC);
    for (int i = 0; i < NREC; i++)
        ck_assert_uint_eq(r[i].type, types[i]);
    /* BF.ROTATE g, as the daemon would log it: u16 length, name. */
    put_le32(rotate, 1 + 3);
    rotate[8] = 7;
    rotate[9] = 1;
    rotate[11] = 'g';
    put_le32(rotate + 4, (uint32_t)rbi_hash_xxh3(rotate + 8, 4));
    out = malloc(2 * log_len + sizeof(rotate));   /* room for any record twice */
    ck_assert_ptr_nonnull(out);

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char at[64];
        n = r[ADD_F].off + r[ADD_F].size;   /* header, RES_F, ADD_F */
        memcpy(out, log, n);
        snprintf(at, sizeof(at), "corrupt at offset %zu: ", n + (cases[k].recs[1] < 0 ? 0
                 : r[cases[k].recs[0]].size));
        for (int j = 0; cases[k].recs[j] >= 0; j++) {
            int i = cases[k].recs[j];
            memcpy(out + n, i == NREC ? rotate : log + r[i].off,
                   i == NREC ? sizeof(rotate) : r[i].size);
            n += i == NREC ? sizeof(rotate) : r[i].size;
        }
        rbd_write_file(snap_path, snap, snap_len);
        rbd_write_file(log_path, out, n);
        assert_says(refused(NULL), log_path, at, cases[k].says, (const char *)NULL);
    }

    /* --ignore-corrupt: BF.ADD f a stays, the rest is discarded and kept. */
    n = r[ADD_F].off + r[ADD_F].size;
    memcpy(out, log, n);
    memcpy(out + n, log + r[ADD_G].off, r[ADD_G].size);
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, out, n + r[ADD_G].size);
    from = started(ignore_corrupt);
    assert_says(output_line(from, "discarding"), log_path, "names filter 'g'", "from offset",
                "the 2 records before stay applied", "kept as", (const char *)NULL);
    assert_kept("appendonly.rbl.corrupt-", out, n + r[ADD_G].size);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    expect_exists(c, "g", "k", 0);
    rb_conn_close(c);
    free(out);
    free(snap);
    free(log);
}
END_TEST

/* ---- torn tails --------------------------------------------------------------------- */

/* A complete last record with a bad checksum is corruption even with
 * load-truncated yes: one flipped byte, or its last bytes zeroed (zeros
 * that do not start at a block boundary are no crash's).  --ignore-corrupt
 * keeps the records before it. */
START_TEST(test_persist_corrupt_last_record_refused)
{
    unsigned char *snap, *log;
    size_t snap_len, log_len, n;
    rec_t last;
    char at[64];
    long from;
    rb_conn_t *c;

    start("appendfsync always\nload-truncated yes");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "k1");
    rbd_expect(c, "1", "BF.ADD", "f", "k2");
    rbd_expect(c, "1", "BF.ADD", "f", "k3");
    rb_conn_close(c);
    last = crash_and_read(&snap, &snap_len, &log, &log_len, &n);
    ck_assert_uint_eq(n, 4);
    snprintf(at, sizeof(at), "corrupt at offset %zu: checksum mismatch", last.off);

    log[last.off + 11] ^= 0x20;   /* the filter's name: 'f' -> 'F' */
    rbd_write_file(log_path, log, log_len);
    assert_says(refused(NULL), log_path, at, "complete", (const char *)NULL);
    log[last.off + 11] ^= 0x20;

    /* "k3" zeroed: the trailing zeros (with the three of its length)
     * start at no multiple of 512 before the end. */
    ck_assert_uint_ge((log_len - 5 + 511) / 512 * 512, log_len);
    log[log_len - 2] = log[log_len - 1] = 0;
    rbd_write_file(log_path, log, log_len);
    assert_says(refused(NULL), log_path, at, (const char *)NULL);

    /* --ignore-corrupt: k1 and k2 stay, the record is discarded, kept. */
    from = started(ignore_corrupt);
    assert_says(output_line(from, "discarding"), log_path, "from offset",
                "the 3 records before stay applied", "kept as", (const char *)NULL);
    assert_kept("appendonly.rbl.corrupt-", log, log_len);
    c = rbd_connect(&d);
    expect_exists(c, "f", "k2", 1);
    expect_exists(c, "f", "k3", 0);
    rb_conn_close(c);
    free(snap);
    free(log);
}
END_TEST

/* What a crash while appending leaves is a torn tail, ignored with a
 * warning (the file kept as .torn): the last record cut short by the end
 * of the file, or zeros from a 512-byte boundary inside it to the end of
 * a file the write had made longer. */
START_TEST(test_persist_cut_or_zeroed_tail_is_torn)
{
    unsigned char *snap, *log, *zeroed;
    size_t snap_len, log_len, n, zlen;
    char key[601], torn[400];
    rec_t last;
    long from;
    rb_conn_t *c;

    memset(key, 'z', 600);
    key[600] = '\0';
    start("appendfsync always\nload-truncated yes");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "k1");
    rbd_expect(c, "1", "BF.ADD", "f", key);
    rb_conn_close(c);
    last = crash_and_read(&snap, &snap_len, &log, &log_len, &n);
    ck_assert_uint_eq(n, 3);
    ck_assert(last.off < 512 && last.off + last.size > 512);
    snprintf(torn, sizeof(torn), "%s.torn", log_path);

    /* Zeros from offset 512 to the end, 700 bytes past the record. */
    zlen = log_len + 700;
    zeroed = calloc(1, zlen);
    ck_assert_ptr_nonnull(zeroed);
    memcpy(zeroed, log, 512);
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, zeroed, zlen);
    from = started(NULL);
    assert_says(output_line(from, "torn record"), log_path, "zero-filled", (const char *)NULL);
    ck_assert_int_eq(file_size(torn), (long)zlen);
    c = rbd_connect(&d);
    expect_exists(c, "f", "k1", 1);
    expect_exists(c, "f", key, 0);
    rb_conn_close(c);
    crash();
    ck_assert_int_eq(unlink(torn), 0);

    /* Cut short. */
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, log, last.off + 100);
    from = started(NULL);
    assert_says(output_line(from, "torn record"), log_path, "cut short by the end of the file",
                (const char *)NULL);
    ck_assert_int_eq(file_size(torn), (long)(last.off + 100));
    c = rbd_connect(&d);
    expect_exists(c, "f", "k1", 1);
    expect_exists(c, "f", key, 0);
    rb_conn_close(c);
    free(zeroed);
    free(snap);
    free(log);
}
END_TEST

/* The checksum covers a record's type and payload, not its length: a
 * flipped bit in the length of the last record of an fsync'd log (an
 * acknowledged CMS.INCRBY) is damage, refused naming the file, the offset
 * and the length - never dropped as a tail cut short by the end of the
 * file, which a really cut record still is. */
START_TEST(test_persist_last_record_length_bit_flips_refused)
{
    unsigned char *snap, *log;
    size_t snap_len, log_len, n;
    rec_t last;
    char at[64];
    unsigned damaged = 0;
    long from;
    rb_conn_t *c;

    start("appendfsync always\nload-truncated yes");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "CMS.INITBYDIM", "c", "100", "4");
    rbd_expect(c, "10", "CMS.INCRBY", "c", "a", "10");
    rb_conn_close(c);
    last = crash_and_read(&snap, &snap_len, &log, &log_len, &n);
    ck_assert_uint_eq(last.type, 17);   /* CMS_INCRBY */
    snprintf(at, sizeof(at), "corrupt at offset %zu: ", last.off);
    for (unsigned bit = 0; bit < 32; bit++) {
        const char *why;
        log[last.off + bit / 8] ^= (unsigned char)(1u << (bit % 8));
        rbd_write_file(log_path, log, log_len);
        why = refused(NULL);
        ck_assert_msg(strstr(why, log_path) != NULL && strstr(why, at) != NULL,
                      "length bit %u: [%s]", bit, why);
        ck_assert_msg(strstr(why, "record length") != NULL ||
                      strstr(why, "checksum mismatch") != NULL, "length bit %u: [%s]", bit,
                      why);
        log[last.off + bit / 8] ^= (unsigned char)(1u << (bit % 8));
        damaged += strstr(why, "the length field is damaged") != NULL;
    }
    /* 24 of them run past the end within the bound: all were taken for a
     * cut before the cross-check (whole_at_other_length) */
    printf("last record's length: 32 of 32 single-bit flips refused, %u of them found whole "
           "at the length with that bit flipped back\n", damaged);

    /* Cut short by the end of the file: still a torn tail, skipped. */
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, log, log_len - 1);
    from = started(NULL);
    assert_says(output_line(from, "torn record"), log_path, "cut short by the end of the file",
                (const char *)NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "0", "CMS.QUERY", "c", "a");
    rb_conn_close(c);
    crash();

    /* Whole: the acknowledged increment is there. */
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, log, log_len);
    started(NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "10", "CMS.QUERY", "c", "a");
    rb_conn_close(c);
    free(snap);
    free(log);
}
END_TEST

/* ---- the old format ---------------------------------------------------------------- */

/* A format-2 snapshot (64-byte header, no *from*: what the previous
 * version wrote) with its log starts with every change, and the start-up
 * snapshot is written in format 3. */
START_TEST(test_persist_format2_snapshot_starts_with_its_data)
{
    unsigned char *snap;
    size_t snap_len;
    long from;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rb_conn_close(c);
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &snap_len);
    to_format(2, snap, &snap_len, NULL);
    rbd_write_file(snap_path, snap, snap_len);
    from = started(NULL);
    assert_says(output_line(from, "is in format 2"), snap_path, (const char *)NULL);
    assert_says(output_line(from, "log records replayed"), " 1 log records", (const char *)NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    expect_exists(c, "f", "b", 1);
    rb_conn_close(c);
    ck_assert_uint_eq(file_u64(snap_path, 8) & 0xffffffffu, 3);
    free(snap);
}
END_TEST

/* A state directory of an earlier version (format 1 headers, byte for
 * byte) starts with all its data and is rewritten in format 2.  Its crash
 * window (a format-1 snapshot naming another log than the format-1 one in
 * place) starts as it did, skipping that log, but keeps a copy of it: no
 * checksum proves the skip right.  The upgrade's own window (the first
 * format-2 snapshot, the format-1 log it superseded) starts normally. */
START_TEST(test_persist_old_format_state_starts_with_its_data)
{
    unsigned char *snap, *log, hdr[128];
    size_t snap_len, log_len;
    long from;
    rb_conn_t *c;
    FILE *f;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rbd_expect(c, "OK", "RING.ADD", "n1");
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rbd_expect(c, "OK", "RING.ADD", "n2");
    rb_conn_close(c);
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &snap_len);
    log = (unsigned char *)rbd_read_file(log_path, &log_len);
    to_format1(snap, &snap_len, log);
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, log, log_len);
    from = started(NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    expect_exists(c, "f", "b", 1);
    rbd_expect(c, "n1\n1\nn2\n1", "RING.NODES");
    rb_conn_close(c);
    /* Written anew in format 3, sealed. */
    f = fopen(snap_path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(hdr, 1, 128, f), 128);
    fclose(f);
    ck_assert_uint_eq(hdr[8], 3);
    ck_assert_uint_eq(get_le64(hdr + 120), rbi_hash_xxh3(hdr, 120));
    f = fopen(log_path, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(hdr, 1, 32, f), 32);
    fclose(f);
    ck_assert(memcmp(hdr, "RBLOG002", 8) == 0);
    ck_assert_uint_eq(get_le64(hdr + 24), rbi_hash_xxh3(hdr, 24));
    assert_says(output_line(from, "is in the old format (version 1"), snap_path,
                (const char *)NULL);
    assert_says(output_line(from, "RBLOG001"), "old format", log_path, (const char *)NULL);
    assert_says(output_line(from, "log records replayed"), "2 log records", (const char *)NULL);
    free(snap);
    free(log);

    /* The old daemon's window: its snapshot installed, its log not. */
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "c");
    log = (unsigned char *)rbd_read_file(log_path, &log_len);
    rbd_expect(c, "OK", "SAVE");
    rb_conn_close(c);
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &snap_len);
    to_format1(snap, &snap_len, log);
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, log, log_len);
    from = started(NULL);
    assert_says(output_line(from, "is not the log snapshot"), log_path, snap_path, "skipped",
                "a copy is kept", (const char *)NULL);
    assert_kept("appendonly.rbl.skipped-", log, log_len);
    c = rbd_connect(&d);
    expect_exists(c, "f", "c", 1);
    rb_conn_close(c);
    free(snap);
    free(log);

    /* The upgrade's window: the first format-2 snapshot, the old log. */
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &snap_len);
    log = (unsigned char *)rbd_read_file(log_path, &log_len);
    to_format1(snap, &snap_len, log);
    rbd_write_file(snap_path, snap, snap_len);
    rbd_write_file(log_path, log, log_len);
    started(NULL);                  /* format 1 in place; now superseded ... */
    crash();
    rbd_write_file(log_path, log, log_len);   /* ... and back */
    from = started(NULL);
    assert_says(output_line(from, "predates the snapshot"), log_path, (const char *)NULL);
    c = rbd_connect(&d);
    expect_exists(c, "f", "a", 1);
    expect_exists(c, "f", "c", 1);
    rb_conn_close(c);
    free(snap);
    free(log);
}
END_TEST

/* One BF.MADD whose record spans several of ops.c's 8 KiB encoding chunks
 * (700 keys of 39 bytes, then one of 20,000 bytes, longer than a chunk)
 * and whose reply spans several of cmd_bf.c's 256-integer reply chunks:
 * every key is answered "new", and the log replays them all into a start
 * from the files alone. */
START_TEST(test_persist_large_madd_replays)
{
    enum { N = 700 };
    static char kb[N][48], big[20001];
    rb_key_t keys[N + 1];
    uint8_t fresh[N + 1];
    rb_conn_t *c;

    for (int i = 0; i < N; i++) {
        snprintf(kb[i], sizeof(kb[i]), "bulk-key-%05d-padded-to-forty-bytes-xx", i);
        keys[i].ptr = kb[i];
        keys[i].len = strlen(kb[i]);
    }
    memset(big, 'k', sizeof(big) - 1);
    keys[N].ptr = big;
    keys[N].len = sizeof(big) - 1;
    start("save-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "10000");
    ck_assert_int_eq(rb_conn_bf_add_many(c, "f", 1, keys, N + 1, fresh), N + 1);
    for (int i = 0; i <= N; i++)
        ck_assert_uint_eq(fresh[i], 1);
    rb_conn_close(c);
    crash();
    started(NULL);
    c = rbd_connect(&d);
    for (int i = 0; i < N; i++)
        expect_exists(c, "f", kb[i], 1);
    expect_exists(c, "f", big, 1);
    expect_exists(c, "f", "bulk-key-never-added", 0);
    rb_conn_close(c);
}
END_TEST

/* ---- dumped and loaded filters ------------------------------------------------ */

#define DUMP_PROBES 20000

/* RedisBloom's dump of golden case name (tests/golden/redisbloom): the
 * header's iterator is 1, each later chunk's is 1 + the bit-array bytes
 * dumped up to its end (manifest.json lists the same). */
static void golden_dump(const char *name, rbd_dump_t *dp)
{
    const char *dir = getenv("srcdir");
    char path[512];

    memset(dp, 0, sizeof(*dp));
    for (long long iter = 1;; dp->n++) {
        snprintf(path, sizeof(path), "%s/tests/golden/redisbloom/%s.%zu.chunk",
                 dir != NULL ? dir : ".", name, dp->n);
        if (access(path, F_OK) != 0)
            break;
        dp->data[dp->n] = rbd_read_file(path, &dp->len[dp->n]);
        iter += dp->n == 0 ? 0 : (long long)dp->len[dp->n];
        dp->iter[dp->n] = iter;
    }
    ck_assert_uint_ge(dp->n, 2);
}

/* Bit i of out: the answer of filter name to "<tag>:probe:i" (and then
 * ":key:i") in d's segment, for the DUMP_PROBES of each. */
static void answers(const char *name, const char *tag, uint8_t *out)
{
    rb_segment_t *seg = rbd_attach(&d);
    rb_bloom_t *bf;
    char key[96];

    ck_assert_int_eq(rb_bloom_open(seg, name, strlen(name), &bf), RB_OK);
    for (size_t i = 0; i < 2 * DUMP_PROBES; i++) {
        int len = snprintf(key, sizeof(key), "%s:%s:%zu", tag,
                           i < DUMP_PROBES ? "probe" : "key", i % DUMP_PROBES);
        int r = rb_bloom_contains(bf, key, (size_t)len);
        ck_assert_int_ge(r, 0);
        out[i] = (uint8_t)r;
    }
    rb_bloom_close(bf);
    rb_segment_close(seg);
}

/* BF.MADD of "<name>:key:0" .. ":key:n-1", in batches of 500. */
static void madd_keys(rb_conn_t *c, const char *name, size_t n)
{
    static char kb[500][48];
    rb_key_t keys[500];
    uint8_t fresh[500];

    for (size_t from = 0; from < n; from += 500) {
        size_t m = n - from < 500 ? n - from : 500;
        for (size_t i = 0; i < m; i++) {
            keys[i].ptr = kb[i];
            keys[i].len = (size_t)snprintf(kb[i], sizeof(kb[i]), "%s:key:%zu", name, from + i);
        }
        ck_assert_int_ge(rb_conn_bf_add_many(c, name, strlen(name), keys, m, fresh), 0);
    }
}

/* The state after SAVE, or after a BGSAVE has finished, restored from
 * the files alone (the daemon killed, its segment removed). */
static void restart_from_snapshot(int background)
{
    rb_conn_t *c = rbd_connect(&d);
    long long count = persistence(c, "snapshots");

    if (background) {
        rbd_expect(c, "Background saving started", "BGSAVE");
        for (int i = 0; i < 1000 && persistence(c, "snapshots") == count; i++)
            usleep(10000);
        ck_assert_int_eq(persistence(c, "snapshots"), count + 1);
    } else {
        rbd_expect(c, "OK", "SAVE");
    }
    rb_conn_close(c);
    crash();
    ck_assert_int_eq(file_size(log_path), 32);   /* a log header, no record: the snapshot */
    started(NULL);
}

/* Filters loaded by BF.LOADCHUNK - RedisBloom's golden "scaling" (four
 * layers) and a copy of one of ours - and a LAYOUT redisbloom filter made
 * by adds, through SAVE and a restart, then BGSAVE and a restart: every
 * probe and key answers as before, the loaded copy as its source, and
 * each dumps the same chunks (the redisbloom one RedisBloom's bytes). */
START_TEST(test_persist_dumped_and_loaded_filters_survive_snapshots)
{
    static const char *const names[] = { "scaling", "copy", "plain" };
    static const char *const tags[] = { "scaling", "ours", "plain" };
    uint8_t *before = malloc(3 * 2 * DUMP_PROBES), *after = malloc(2 * DUMP_PROBES);
    rbd_dump_t golden, ours, was[3], now;
    size_t hits = 0;
    rb_conn_t *c;

    start("appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    golden_dump("scaling", &golden);
    rbd_loadchunks(c, "BF.LOADCHUNK", "scaling", &golden);
    rbd_expect(c, "OK", "BF.RESERVE", "ours", "0.05", "300");
    madd_keys(c, "ours", 1000);
    rbd_scandump(&d, "BF.SCANDUMP", "ours", &ours);
    rbd_loadchunks(c, "BF.LOADCHUNK", "copy", &ours);
    rbd_expect(c, "OK", "BF.RESERVE", "plain", "0.01", "1000", "LAYOUT", "redisbloom");
    madd_keys(c, "plain", 1000);
    rb_conn_close(c);
    for (size_t f = 0; f < 3; f++) {
        answers(names[f], tags[f], before + f * 2 * DUMP_PROBES);
        rbd_scandump(&d, "BF.SCANDUMP", names[f], &was[f]);
        for (size_t i = 0; i < DUMP_PROBES; i++)
            hits += before[f * 2 * DUMP_PROBES + i];
    }
    ck_assert_uint_gt(hits, 0);   /* the comparisons cover some positives */
    answers("ours", "ours", after);
    ck_assert(memcmp(after, before + 2 * DUMP_PROBES, 2 * DUMP_PROBES) == 0);
    golden_dump("plain", &now);
    rbd_assert_same_dump(&now, &was[2], "plain before the restart");
    rbd_dump_free(&now);

    for (int background = 0; background <= 1; background++) {
        restart_from_snapshot(background);
        for (size_t f = 0; f < 3; f++) {
            answers(names[f], tags[f], after);
            ck_assert_msg(memcmp(after, before + f * 2 * DUMP_PROBES, 2 * DUMP_PROBES) == 0,
                          "%s answers differently after %s and a restart", names[f],
                          background ? "BGSAVE" : "SAVE");
            rbd_scandump(&d, "BF.SCANDUMP", names[f], &now);
            rbd_assert_same_dump(&was[f], &now, names[f]);
            rbd_dump_free(&now);
        }
    }
    for (size_t f = 0; f < 3; f++)
        rbd_dump_free(&was[f]);
    rbd_dump_free(&golden);
    rbd_dump_free(&ours);
    free(before);
    free(after);
}
END_TEST

/* ---- sparse snapshots (snap_sparse.c) and the log's trigger ----------------- */

/* Adds n keys "<prefix><i>" to filter f by pipelined BF.MADD. */
static void add_keys(rb_conn_t *c, const char *f, const char *prefix, int n)
{
    rb_key_t *keys = malloc((size_t)n * sizeof(*keys));
    char *text = malloc((size_t)n * 24);

    ck_assert_ptr_nonnull(keys);
    ck_assert_ptr_nonnull(text);
    for (int i = 0; i < n; i++) {
        keys[i].ptr = text + (size_t)i * 24;
        keys[i].len = (size_t)snprintf(text + (size_t)i * 24, 24, "%s%d", prefix, i);
    }
    ck_assert_int_ge(rb_conn_bf_add_many(c, f, strlen(f), keys, (size_t)n, NULL), 0);
    free(keys);
    free(text);
}

static void expect_keys(rb_conn_t *c, const char *f, const char *prefix, int n)
{
    char key[32];

    for (int i = 0; i < n; i += 97) {
        snprintf(key, sizeof(key), "%s%d", prefix, i);
        expect_exists(c, f, key, 1);
    }
}

/* Bytes the file's blocks take on disk. */
static uint64_t file_blocks(const char *path)
{
    struct stat st;

    ck_assert_int_eq(stat(path, &st), 0);
    return (uint64_t)st.st_blocks * 512;
}

/* A 64 MiB filter filled and deleted, a small one kept: the snapshot's
 * blocks follow the live data (its length is still the segment's) and the
 * restart from it answers the same (check_segment's
 * test_segment_restore_reads_the_live_data: the restore reads no free page);
 * and a snapshot of the same state written whole, its free pages holding
 * a deleted filter's stale bytes (what an older ringbloomd wrote), loads
 * as well. */
START_TEST(test_persist_snapshot_follows_the_live_data)
{
    unsigned char *snap;
    size_t len;
    size_t run = 0, best = 0, best_end = 0;
    rb_conn_t *c;

    start("appendfsync everysec\nsave-seconds 0\nmax-memory 1gb\nmax-command-bytes 256mb");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "big", "0.01", "55000000");
    add_keys(c, "big", "b", 300000);   /* a 64-byte block each: every page touched */
    rbd_expect(c, "OK", "BF.RESERVE", "keep", "0.01", "20000");
    add_keys(c, "keep", "k", 2000);
    rbd_expect(c, "1", "DEL", "big");
    rbd_expect(c, "OK", "SAVE");
    /* INFO says what the file takes on disk, not the segment's length. */
    ck_assert_int_gt(persistence(c, "last_snapshot_file_bytes"), 0);
    ck_assert_int_lt(persistence(c, "last_snapshot_file_bytes"), 8l << 20);
    rb_conn_close(c);
    ck_assert_uint_gt(file_size(snap_path), 64l << 20);   /* the segment's length */
    ck_assert_msg(file_blocks(snap_path) < (8u << 20), "the snapshot takes %llu bytes on disk",
                  (unsigned long long)file_blocks(snap_path));
    crash();
    started(NULL);
    c = rbd_connect(&d);
    expect_keys(c, "keep", "k", 2000);
    rbd_expect(c, "0", "EXISTS", "big");
    rb_conn_close(c);

    /* Written whole, with stale bytes in the middle of the longest run of
     * zero pages (the deleted filter's place) and both checksums redone. */
    crash();
    snap = (unsigned char *)rbd_read_file(snap_path, &len);
    for (size_t o = 128; o + 4096 <= len; o += 4096) {
        int zero = snap[o] == 0 && memcmp(snap + o, snap + o + 1, 4095) == 0;
        run = zero ? run + 1 : 0;
        if (run > best) {
            best = run;
            best_end = o + 4096;
        }
    }
    ck_assert_uint_gt(best, 8192);
    memset(snap + best_end - best * 4096 + best / 4 * 4096, 0xA5, best / 2 * 4096);
    put_le64(snap + 32, rbi_hash_xxh3(snap + 128, len - 128));
    put_le64(snap + 120, rbi_hash_xxh3(snap, 120));
    rbd_write_file(snap_path, snap, len);
    free(snap);
    ck_assert_uint_gt(file_blocks(snap_path), 64u << 20);
    started(NULL);
    c = rbd_connect(&d);
    expect_keys(c, "keep", "k", 2000);
    rb_conn_close(c);
}
END_TEST

/* Killed while a sparse snapshot is written (free space behind a live
 * filter large enough that the dump takes a while), the daemon restarts
 * with every acknowledged change: by taking over the live segment, and
 * from the files (snapshot and log). */
START_TEST(test_persist_killed_in_sparse_snapshot_keeps_every_change)
{
    char key[32];
    int acked = 0, during = 0;
    rb_conn_t *c;

    start("appendfsync everysec\nsave-seconds 0\nmax-memory 1gb\nmax-command-bytes 256mb");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "gone", "0.01", "55000000");
    add_keys(c, "gone", "g", 100000);
    rbd_expect(c, "OK", "BF.RESERVE", "big", "0.01", "100000000");
    rbd_expect(c, "1", "DEL", "gone");
    rb_conn_close(c);
    for (int round = 0; round < 2; round++) {   /* 0: takeover; 1: from the files */
        c = rbd_connect(&d);
        rbd_expect(c, "Background saving started", "BGSAVE");
        for (int i = 0; i < 30; i++) {
            snprintf(key, sizeof(key), "k%d", acked++);
            rbd_expect(c, "1", "BF.ADD", "big", key);
        }
        during += persistence(c, "rdb_bgsave_in_progress") == 1;
        rb_conn_close(c);
        rbd_stop(&d, SIGKILL);
        if (round == 1)
            ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
        started(NULL);
        c = rbd_connect(&d);
        for (int i = 0; i < acked; i++) {
            snprintf(key, sizeof(key), "k%d", i);
            expect_exists(c, "big", key, 1);
        }
        rbd_expect(c, "0", "EXISTS", "gone");
        rb_conn_close(c);
    }
    ck_assert_int_gt(during, 0);   /* at least one kill did fall inside a snapshot */
}
END_TEST

/* A filter's SCANDUMP chunks (up to 16 MiB each, past rbd_scandump's
 * buffer): iterators and data, read off a plain socket. */
typedef struct big_dump {
    size_t n;
    long long iter[16];
    size_t len[16];
    char *data[16];
} big_dump_t;

static void big_scandump(const char *f, big_dump_t *dp)
{
    size_t cap = (17u << 20), have;
    char *buf = malloc(cap), *p;
    long long it = 0;
    int fd = rbd_raw_connect(&d);

    ck_assert_ptr_nonnull(buf);
    dp->n = 0;
    do {
        char it_s[32];
        size_t want = 0;
        snprintf(it_s, sizeof(it_s), "%lld", it);
        ck_assert_int_gt(dprintf(fd, "*3\r\n$11\r\nBF.SCANDUMP\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                                 strlen(f), f, strlen(it_s), it_s), 0);
        for (have = 0; want == 0 || have < want;) {
            ssize_t got = read(fd, buf + have, cap - have);
            ck_assert_int_gt(got, 0);
            have += (size_t)got;
            buf[have < cap ? have : cap - 1] = '\0';
            /* *2\r\n:<iter>\r\n$<len>\r\n<bytes>\r\n */
            if (want == 0 && (p = strstr(buf, "\r\n$")) != NULL && strstr(p + 3, "\r\n"))
                want = (size_t)(strstr(p + 3, "\r\n") + 2 - buf) + strtoul(p + 3, NULL, 10) + 2;
        }
        ck_assert_int_eq(buf[0], '*');
        it = atoll(buf + 5);
        if (it == 0)
            break;
        ck_assert_uint_lt(dp->n, 16);
        p = strstr(buf, "\r\n$");
        dp->iter[dp->n] = it;
        dp->len[dp->n] = strtoul(p + 3, NULL, 10);
        dp->data[dp->n] = malloc(dp->len[dp->n] + 1);
        ck_assert_ptr_nonnull(dp->data[dp->n]);
        memcpy(dp->data[dp->n], strstr(p + 3, "\r\n") + 2, dp->len[dp->n]);
        dp->n++;
    } while (it != 0);
    close(fd);
    free(buf);
}

/* The log's trigger grows with the data (save-log-percent): a 64 MiB
 * filter copied in by LOADCHUNK (its header chunk reserves it whole), a
 * chunk a second, with save-log-bytes 4mb: at most one snapshot with the
 * default 100 % (the log passes the live data only at the end), one every
 * 16 MiB chunk with 0 (the fixed trigger, as before). */
START_TEST(test_persist_log_trigger_grows_with_the_data)
{
    big_dump_t dp;
    long long counts[2];
    char reply[256];

    for (int pct = 0; pct < 2; pct++) {
        rb_conn_t *c;
        start(pct == 0 ? "save-seconds 0\nsave-log-bytes 4mb\nsave-log-percent 0\n"
                         "max-memory 1gb\nmax-command-bytes 256mb"
                       : "save-seconds 0\nsave-log-bytes 4mb\nmax-memory 1gb\n"
                         "max-command-bytes 256mb");
        c = rbd_connect(&d);
        rbd_expect(c, "OK", "BF.RESERVE", "src", "0.01", "55000000");
        add_keys(c, "src", "s", 3000);
        big_scandump("src", &dp);
        ck_assert_uint_ge(dp.n, 5);   /* the header and 16 MiB pieces */
        rbd_expect(c, "1", "DEL", "src");
        rbd_expect(c, "OK", "SAVE");
        counts[pct] = persistence(c, "snapshots");
        for (size_t i = 0; i < dp.n; i++) {
            char it[32];
            const char *argv[] = { "BF.LOADCHUNK", "dst", it, dp.data[i] };
            size_t argl[4] = { 12, 3, 0, dp.len[i] };
            argl[2] = (size_t)snprintf(it, sizeof(it), "%lld", dp.iter[i]);
            ck_assert_int_eq(rb_conn_command(c, 4, argv, argl, reply, sizeof(reply)), 0);
            ck_assert_str_eq(reply, "OK");
            free(dp.data[i]);
            usleep(1200000);   /* the trigger is looked at once a second */
        }
        counts[pct] = persistence(c, "snapshots") - counts[pct];
        expect_keys(c, "dst", "s", 3000);
        rb_conn_close(c);
        rbd_stop(&d, SIGTERM);
        rbd_remove_all(&d);
    }
    ck_assert_int_ge(counts[0], 3);   /* fixed: a snapshot per chunk or so */
    ck_assert_int_le(counts[1], 1);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("persist",
                        RB_TCASE("headers", 300, NULL, rbd_teardown,
                                 test_persist_log_header_bit_flips_refused,
                                 test_persist_snapshot_header_bit_flips_refused),
                        RB_TCASE("files that do not fit", 300, NULL, rbd_teardown,
                                 test_persist_log_without_its_snapshot_refused,
                                 test_persist_log_of_another_snapshot_refused,
                                 test_persist_missing_log_refused),
                        RB_TCASE("crash windows", 300, NULL, rbd_teardown,
                                 test_persist_crash_in_snapshot_windows_starts,
                                 test_persist_crash_after_snapshot_replays_its_log_from_the_freeze,
                                 test_persist_background_snapshot_keeps_every_change,
                                 test_persist_crash_in_first_and_reattach_snapshots_starts,
                                 test_persist_node_states_replay),
                        RB_TCASE("records", 300, NULL, rbd_teardown,
                                 test_persist_record_for_missing_filter_or_node_refused,
                                 test_persist_corrupt_last_record_refused,
                                 test_persist_cut_or_zeroed_tail_is_torn,
                                 test_persist_last_record_length_bit_flips_refused,
                                 test_persist_large_madd_replays,
                                 test_persist_table_modes_survive_restarts),
                        RB_TCASE("old format", 300, NULL, rbd_teardown,
                                 test_persist_format2_snapshot_starts_with_its_data,
                                 test_persist_old_format_state_starts_with_its_data),
                        RB_TCASE("dumped and loaded filters", 300, NULL, rbd_teardown,
                                 test_persist_dumped_and_loaded_filters_survive_snapshots),
                        RB_TCASE("sparse snapshots", 300, NULL, rbd_teardown,
                                 test_persist_snapshot_follows_the_live_data,
                                 test_persist_killed_in_sparse_snapshot_keeps_every_change,
                                 test_persist_log_trigger_grows_with_the_data));
}
