/*
 * check_faults_full.c - check_faults' disk and shm TCases: a full state
 * directory (a small tmpfs in a private mount namespace, or RLIMIT_FSIZE)
 * where a failed snapshot changes nothing and a failed log append holds
 * the reply and refuses writes until space returns; a full /dev/shm where
 * growth fails with a clear error and nothing half-made.  Shared with the
 * other files: faults.h.
 */
#include "faults.h"

/* ---- private mounts ----------------------------------------------------------- */

/* Writes text to a /proc file; 0 or -1. */
static int write_proc(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Gives this test process its own mount namespace (as root; otherwise in
 * a user namespace that maps only its own uid and gid, where the kernel
 * allows it).  1 if it may now mount. */
static int private_mounts(void)
{
    if (getenv("RB_FAULT_NO_MOUNT") != NULL)
        return 0;
    if (unshare(CLONE_NEWNS) != 0) {
        char uid_map[64], gid_map[64];
        snprintf(uid_map, sizeof(uid_map), "%u %u 1", (unsigned)getuid(), (unsigned)getuid());
        snprintf(gid_map, sizeof(gid_map), "%u %u 1", (unsigned)getgid(), (unsigned)getgid());
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            return 0;
        write_proc("/proc/self/setgroups", "deny");   /* absent on old kernels */
        if (write_proc("/proc/self/uid_map", uid_map) != 0 ||
            write_proc("/proc/self/gid_map", gid_map) != 0)
            return 0;
    }
    /* Nothing mounted here may reach the rest of the system. */
    return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

/* ---- a small disk for the state directory ------------------------------------ */

typedef enum { DISK_TMPFS = 1, DISK_RLIMIT } disk_mode_t;

static disk_mode_t disk_mode;
static char filler[256];

/* Chooses how the state directory runs out of space: a tmpfs of `bytes`
 * (its "dir" setting into dirline), or RLIMIT_FSIZE on the daemon (dirline
 * empty; the daemon inherits SIGXFSZ ignored, so writes fail with EFBIG
 * instead of killing it). */
static disk_mode_t small_disk(size_t bytes, char *dirline, size_t cap)
{
    dirline[0] = '\0';
    if (private_mounts()) {
        char opts[64];
        snprintf(mnt, sizeof(mnt), "/tmp/rbtest.%d.XXXXXX", (int)rb_test_main_pid);
        ck_assert_ptr_nonnull(mkdtemp(mnt));
        snprintf(opts, sizeof(opts), "size=%zu,mode=0755", bytes);
        if (mount("tmpfs", mnt, "tmpfs", 0, opts) == 0) {
            snprintf(dirline, cap, "dir %s/state", mnt);
            snprintf(filler, sizeof(filler), "%s/filler", mnt);
            return disk_mode = DISK_TMPFS;
        }
        rmdir(mnt);
        mnt[0] = '\0';
    }
    printf("disk full: no private mount namespace; using RLIMIT_FSIZE on the daemon\n");
    signal(SIGXFSZ, SIG_IGN);
    return disk_mode = DISK_RLIMIT;
}

static void set_fsize(rlim_t soft)
{
    struct rlimit r;
    ck_assert_int_eq(prlimit(d.pid, RLIMIT_FSIZE, NULL, &r), 0);
    r.rlim_cur = soft == RLIM_INFINITY ? r.rlim_max : soft;
    ck_assert_int_eq(prlimit(d.pid, RLIMIT_FSIZE, &r, NULL), 0);
}

/* Fills the file system of path with it, but for about `leave` bytes. */
static void fill_file(const char *path, size_t leave)
{
    static char chunk[65536];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    ck_assert_int_ge(fd, 0);
    for (size_t step = sizeof(chunk); step >= 4096; step /= 2)
        while (write(fd, chunk, step) == (ssize_t)step)
            ;
    if (leave > 0) {
        off_t end = lseek(fd, 0, SEEK_END);
        ck_assert_int_eq(ftruncate(fd, end > (off_t)leave ? end - (off_t)leave : 0), 0);
    }
    close(fd);
}

/* Fills the disk so that only about `leave` bytes can still be written;
 * for RLIMIT_FSIZE, files may grow to `limit` bytes. */
static void disk_fill(size_t leave, rlim_t limit)
{
    if (disk_mode == DISK_RLIMIT)
        set_fsize(limit);
    else
        fill_file(filler, leave);
}

static void disk_free(void)
{
    if (disk_mode == DISK_RLIMIT)
        set_fsize(RLIM_INFINITY);
    else
        ck_assert_int_eq(unlink(filler), 0);
}

static const char *disk_errno(void)
{
    return strerror(disk_mode == DISK_RLIMIT ? EFBIG : ENOSPC);
}

static void assert_shm_absent(void)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "/dev/shm/ringbloom.%s", d.inst);
    ck_assert_msg(stat(path, &st) != 0, "%s is left behind", path);
}

/* ================================================================================ */
/* 2. A full disk under the state directory                                         */
/* ================================================================================ */

/* The state directory of d. */
static void state_dir(char *buf, size_t cap)
{
    if (disk_mode == DISK_TMPFS)
        snprintf(buf, cap, "%s/state", mnt);
    else
        snprintf(buf, cap, "%s/state", d.dir);
}

/* Sends BF.MADD of keys[0..n) and asserts n replies of 0/1. */
static void madd_acked(rb_conn_t *c, const char *filter, char (*keys)[64], size_t n)
{
    const char *argv[130];
    size_t argl[130], argc = 0;
    static char reply[4096];

    ck_assert_uint_le(n, 128);
    argv[argc++] = "BF.MADD";
    argv[argc++] = filter;
    for (size_t i = 0; i < n; i++)
        argv[argc++] = keys[i];
    for (size_t i = 0; i < argc; i++)
        argl[i] = strlen(argv[i]);
    ck_assert_int_eq(rb_conn_command(c, argc, argv, argl, reply, sizeof(reply)), RB_OK);
    ck_assert_uint_eq(strlen(reply), 2 * n - 1);
}

/* A snapshot that does not fit: SAVE fails with the file and the errno in
 * the reply and in the log, the previous snapshot and the log are left as
 * they were, no temp file stays, the daemon keeps acknowledging adds (the
 * log still has room) and they survive SIGKILL.  A restart while the disk
 * is still full refuses to start, naming the file; once space returns it
 * recovers everything. */
START_TEST(test_faults_full_disk_snapshot_fails_cleanly)
{
    char dirline[256], extra[512], state[300], snap[400], logp[400], reply[1024];
    static char keys[100][64];
    const char *all[102];
    char *snap0, *snap1, *log0, *log1;
    size_t snap0_len, snap1_len, log0_len, log1_len;
    struct stat lst;
    const char *line;
    rb_conn_t *c;
    int rc;

    small_disk(2u << 20, dirline, sizeof(dirline));
    snprintf(extra, sizeof(extra), "appendfsync always\nsave-seconds 0\n%s", dirline);
    rbd_start(&d, extra);
    state_dir(state, sizeof(state));
    snprintf(snap, sizeof(snap), "%s/snapshot.rbs", state);
    snprintf(logp, sizeof(logp), "%s/appendonly.rbl", state);
    c = rbd_connect(&d);
    /* A filter of ~240 KB, so a snapshot needs far more than the room left. */
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "200000");
    for (int i = 0; i < 100; i++) {
        snprintf(keys[i], sizeof(keys[i]), "https://disk.example/%d", i);
        all[i] = keys[i];
    }
    madd_acked(c, "f", keys, 50);
    rbd_expect(c, "OK", "SAVE");
    madd_acked(c, "f", keys + 50, 25);
    snap0 = rbd_read_file(snap, &snap0_len);
    log0 = rbd_read_file(logp, &log0_len);
    ck_assert_uint_gt(snap0_len, 200000);

    disk_fill(16384, (rlim_t)log0_len + 16384);
    /* The log still takes records... */
    madd_acked(c, "f", keys + 75, 20);
    /* ...but a snapshot does not fit. */
    snprintf(reply, sizeof(reply), "%s", rbd_cmd(c, &rc, "SAVE", (const char *)NULL));
    ck_assert_int_eq(rc, RB_EREPLY);
    printf("disk full, SAVE: %s\n", reply);
    ck_assert_ptr_nonnull(strstr(reply, "snapshot.rbs.tmp"));
    ck_assert_ptr_nonnull(strstr(reply, disk_errno()));
    line = log_line_with("SAVE failed", "snapshot.rbs.tmp", disk_errno(), (const char *)NULL);
    printf("disk full, daemon log: %s", line);
    /* Nothing changed on disk but the records appended since. */
    snap1 = rbd_read_file(snap, &snap1_len);
    ck_assert(snap1_len == snap0_len && memcmp(snap0, snap1, snap0_len) == 0);
    log1 = rbd_read_file(logp, &log1_len);
    ck_assert_uint_gt(log1_len, log0_len);
    ck_assert(memcmp(log0, log1, log0_len) == 0);
    assert_no_temp_files(state);
    ck_assert_ptr_nonnull(strstr(rbd_cmd(c, &rc, "INFO", "persistence", (const char *)NULL),
                                 "rdb_last_bgsave_status:err"));
    /* Still serving and acknowledging. */
    rbd_expect(c, "1", "BF.EXISTS", "f", keys[80]);
    madd_acked(c, "f", keys + 95, 5);
    rb_conn_close(c);

    if (disk_mode == DISK_TMPFS) {
        /* A restart on the full disk cannot take its start-up snapshot. */
        rbd_stop(&d, SIGKILL);
        ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
        line = rbd_start_fails(d.conf);
        printf("disk full, restart: %s", line);
        ck_assert_ptr_nonnull(strstr(line, state));
        ck_assert_ptr_nonnull(strstr(line, disk_errno()));
        assert_no_temp_files(state);
        rb_segment_unlink(d.inst);
        disk_free();
        rbd_launch(&d, NULL);
    } else {
        disk_free();
    }
    assert_recovered("f", all, 100);
    assert_no_temp_files(state);
    ck_assert_int_eq(stat(logp, &lst), 0);
    free(snap0);
    free(snap1);
    free(log0);
    free(log1);
}
END_TEST

/* The log cannot be appended to: the reply of the add it could not log is
 * held (never acknowledged unlogged), other writes are refused with
 * MISCONF while reads go on, the daemon does not spin; when space returns
 * the held reply goes out, writes work, and everything acknowledged
 * survives SIGKILL with the segment lost. */
START_TEST(test_faults_full_disk_log_refuses_writes_then_recovers)
{
    char dirline[256], extra[512], state[300], logp[400], reply[65536], misconf[512];
    static char keys[150][64], big[120][256];
    const char *all[150], *argvv[124];
    struct stat st;
    size_t n;
    rb_conn_t *c;
    int a, rc;

    small_disk(2u << 20, dirline, sizeof(dirline));
    snprintf(extra, sizeof(extra), "appendfsync always\nsave-seconds 0\n%s", dirline);
    rbd_start(&d, extra);
    state_dir(state, sizeof(state));
    snprintf(logp, sizeof(logp), "%s/appendonly.rbl", state);
    for (int i = 0; i < 150; i++) {
        snprintf(keys[i], sizeof(keys[i]), "https://log.example/%d", i);
        all[i] = keys[i];
    }
    c = rbd_connect(&d);
    madd_acked(c, "f", keys, 100);
    ck_assert_int_eq(stat(logp, &st), 0);
    disk_fill(0, (rlim_t)st.st_size);

    /* A 30 KB batch: more than any slack left in the log's last page. */
    a = rbd_raw_connect(&d);
    argvv[0] = "BF.MADD";
    argvv[1] = "f";
    for (int i = 0; i < 120; i++) {
        memset(big[i], 'k', sizeof(big[i]) - 1);
        snprintf(big[i], 32, "https://big.example/%03u/", (unsigned)i % 1000u);
        big[i][strlen(big[i])] = 'k';
        argvv[2 + i] = big[i];
    }
    argvv[122] = NULL;
    {
        /* raw_send takes words; send this long one by hand. */
        char *buf = malloc(65536);
        size_t len = (size_t)snprintf(buf, 65536, "*122\r\n");
        for (int i = 0; i < 122; i++)
            len += (size_t)snprintf(buf + len, 65536 - len, "$%zu\r\n%s\r\n", strlen(argvv[i]),
                                    argvv[i]);
        ck_assert_int_eq(send(a, buf, len, MSG_NOSIGNAL), (ssize_t)len);
        free(buf);
    }
    ck_assert_msg(wait_log("replies wait, writes are refused", 1, 3000),
                  "no log write failure reported in %s", d.log);
    printf("log full, daemon log: %s",
           log_line_with("writing", "appendonly.rbl", disk_errno(), (const char *)NULL));
    ck_assert_uint_eq(raw_wait(a, reply, sizeof(reply), 1, 300), 0);   /* held */

    /* Other clients: writes refused, reads answered. */
    snprintf(misconf, sizeof(misconf), "%s",
             rbd_cmd(c, &rc, "BF.ADD", "f", keys[100], (const char *)NULL));
    ck_assert_int_eq(rc, RB_EREPLY);
    printf("log full, BF.ADD: %s\n", misconf);
    ck_assert(strncmp(misconf, "MISCONF", 7) == 0);
    rbd_expect(c, "1", "BF.EXISTS", "f", keys[5]);
    ck_assert_ptr_nonnull(strstr(rbd_cmd(c, &rc, "INFO", "persistence", (const char *)NULL),
                                 "log_write_ok:0"));

    assert_no_spin("log full", -1, NULL);

    disk_free();
    n = raw_wait(a, reply, sizeof(reply), 120, 3000);
    ck_assert_msg(n > 0 && reply[0] == '*', "held reply not released: [%s]", reply);
    ck_assert_ptr_nonnull(strstr(reply, "*120\r\n"));
    ck_assert(wait_log("log writes work again", 1, 1000));
    close(a);
    madd_acked(c, "f", keys + 100, 50);
    rb_conn_close(c);
    assert_recovered("f", all, 150);
    assert_recovered("f", argvv + 2, 120);
    ck_assert_int_eq(rbd_log_count(&d, "torn"), 0);   /* the partial write was trimmed */
}
END_TEST

/* ================================================================================ */
/* 3. A full /dev/shm                                                               */
/* ================================================================================ */

/* Lines of a rendered reply that are 0 or 1 (acknowledged adds). */
static size_t acked_lines(const char *reply)
{
    size_t n = 0;

    while ((reply[0] == '0' || reply[0] == '1') && (reply[1] == '\n' || reply[1] == '\0')) {
        n++;
        if (reply[1] == '\0')
            break;
        reply += 2;
    }
    return n;
}

/* /dev/shm smaller than max-memory: a filter that does not fit and a
 * scaling filter's next layer fail with an error naming /dev/shm, nothing
 * half-made is visible, the daemon goes on serving; a restart that cannot
 * create its segment stops with a clear error and leaves nothing behind;
 * with space back, every acknowledged change is there. */
START_TEST(test_faults_full_shm_refuses_growth_and_start)
{
    static char keys[500][64], reply[65536];
    const char *argv[502];
    size_t argl[502], acked = 0, batches = 0;
    rb_segment_t *seg;
    rb_bloom_t *bf;
    const char *line;
    rb_conn_t *c;
    int rc;

    if (!private_mounts()) {
        printf("full /dev/shm: skipped (no private mount namespace: needs root or user "
               "namespaces)\n");
        return;
    }
    ck_assert_int_eq(mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=4m,mode=1777"), 0);
    shm_mounted = 1;
    rbd_start(&d, "max-memory 64mb\nappendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "small", "a");
    rbd_expect(c, "OK", "RING.ADD", "n1", "2");

    /* ~9 MB: within max-memory, beyond /dev/shm. */
    snprintf(reply, sizeof(reply), "%s",
             rbd_cmd(c, &rc, "BF.RESERVE", "big", "0.001", "5000000", (const char *)NULL));
    printf("full /dev/shm, BF.RESERVE: %s\n", reply);
    ck_assert_int_eq(rc, RB_EREPLY);
    ck_assert_ptr_nonnull(strstr(reply, "/dev/shm"));
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "big", 3, &bf), RB_ENOENT);   /* nothing half-made */
    rbd_expect(c, "ERR not found", "BF.INFO", "big");
    rbd_expect(c, "1", "BF.ADD", "small", "b");
    rbd_expect(c, "OK", "RING.ADD", "n2", "1");

    /* A scaling filter grows until /dev/shm has no room for its next
     * layer: with ~300 KB left, layers of 2,000 and 32,000 keys fit, the
     * third (512,000 keys, ~640 KB) does not. */
    fill_file("/dev/shm/filler", 300 << 10);
    rbd_expect(c, "OK", "BF.RESERVE", "grow", "0.01", "2000", "EXPANSION", "16");
    for (;;) {
        size_t argc = 0, n;
        argv[argc++] = "BF.MADD";
        argv[argc++] = "grow";
        for (int i = 0; i < 500; i++) {
            snprintf(keys[i], sizeof(keys[i]), "https://grow.example/%zu/%d", batches, i);
            argv[argc++] = keys[i];
        }
        for (size_t i = 0; i < argc; i++)
            argl[i] = strlen(argv[i]);
        rc = rb_conn_command(c, argc, argv, argl, reply, sizeof(reply));
        n = acked_lines(reply);
        acked += n;
        batches++;
        if (rc != RB_OK)
            break;
        ck_assert_uint_eq(n, 500);
        ck_assert_uint_lt(batches, 200);
    }
    line = strrchr(reply, '\n') ? strrchr(reply, '\n') + 1 : reply;
    printf("full /dev/shm, BF.MADD after %zu keys: %s\n", acked, line);
    ck_assert_ptr_nonnull(strstr(line, "/dev/shm"));
    /* Still serving: reads, adds that fit. */
    rbd_expect(c, "1", "BF.EXISTS", "small", "a");
    rbd_expect(c, "1", "BF.ADD", "small", "c");
    rbd_expect(c, "PONG", "PING");
    rb_conn_close(c);
    rb_segment_close(seg);

    /* A restart that cannot create its segment. */
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    fill_file("/dev/shm/filler", 0);
    line = rbd_start_fails(d.conf);
    printf("full /dev/shm, restart: %s", line);
    ck_assert_ptr_nonnull(strstr(line, "/dev/shm"));
    assert_shm_absent();
    ck_assert_int_eq(unlink("/dev/shm/filler"), 0);

    /* Space back: everything acknowledged, nothing else. */
    rbd_launch(&d, NULL);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.EXISTS", "small", "a");
    rbd_expect(c, "1", "BF.EXISTS", "small", "b");
    rbd_expect(c, "1", "BF.EXISTS", "small", "c");
    rbd_expect(c, "ERR not found", "BF.INFO", "big");
    rbd_expect(c, "n1\n2\nn2\n1", "RING.NODES");
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "grow", 4, &bf), RB_OK);
    for (size_t b = 0, k = 0; k < acked; b++)
        for (int i = 0; i < 500 && k < acked; i++, k++) {
            char key[64];
            int len = snprintf(key, sizeof(key), "https://grow.example/%zu/%d", b, i);
            ck_assert_msg(rb_bloom_contains(bf, key, (size_t)len) == 1, "lost %s", key);
        }
    printf("full /dev/shm: %zu acknowledged keys of the growing filter recovered\n", acked);
    rb_bloom_close(bf);
    rb_segment_close(seg);
    rb_conn_close(c);
}
END_TEST

TCase *faults_disk_tcase(void)
{
    return RB_TCASE("disk", 60, NULL, faults_teardown,
                    test_faults_full_disk_snapshot_fails_cleanly,
                    test_faults_full_disk_log_refuses_writes_then_recovers);
}

TCase *faults_shm_tcase(void)
{
    return RB_TCASE("shm", 60, NULL, faults_teardown,
                    test_faults_full_shm_refuses_growth_and_start);
}
