/*
 * check_faults_shim.c - check_faults' shim TCase: faults a disk seldom
 * produces, through fault_shim.c (LD_PRELOAD): the snapshot's log rename,
 * fdatasync in the reply path and in the everysec thread, a log outage
 * that must not make the daemon spin, an EXEC killed in its log write and
 * between its members (T1).  Shared with the other files:
 * faults.h.
 */
#include "faults.h"

/* ---- files ------------------------------------------------------------------ */

/* The id in a log's or snapshot's header (offset 8 of a log, 16 of a
 * snapshot; little-endian). */
static uint64_t header_id(const char *path, long off)
{
    unsigned char b[8];
    uint64_t v = 0;
    FILE *f = fopen(path, "rb");

    ck_assert_ptr_nonnull(f);
    fseek(f, off, SEEK_SET);
    ck_assert_uint_eq(fread(b, 1, 8, f), 8);
    fclose(f);
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* ---- the fault shim ---------------------------------------------------------- */

static char fault_ctl[256];

/* The shim's path, or NULL (a build without shared libraries). */
static const char *shim_path(void)
{
    const char *p = getenv("RB_FAULT_SHIM");
    struct stat st;

    if (p == NULL || stat(p, &st) != 0) {
        printf("fault shim not built (RB_FAULT_SHIM=%s): skipped\n", p ? p : "unset");
        return NULL;
    }
    return p;
}

/* Replaces the shim's rules (it re-reads the file at every call). */
static void fault_set(const char *rules)
{
    char tmp[300];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.new", fault_ctl);
    f = fopen(tmp, "w");
    ck_assert_ptr_nonnull(f);
    fputs(rules, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(rename(tmp, fault_ctl), 0);
}


/* Starts the daemon with the shim preloaded and no fault yet. */
static void start_with_shim(const char *shim, const char *extra)
{
    char ctl_dir[128];

    snprintf(ctl_dir, sizeof(ctl_dir), "/tmp/rbtest.%d.ctl.%d", (int)rb_test_main_pid,
             (int)getpid());
    ck_assert(mkdir(ctl_dir, 0700) == 0 || errno == EEXIST);
    snprintf(fault_ctl, sizeof(fault_ctl), "%s/faults", ctl_dir);
    fault_set("");
    /* Only the daemon's exec sees these. */
    setenv("LD_PRELOAD", shim, 1);
    setenv("RB_FAULT_CTL", fault_ctl, 1);
    rb_test_asan_allow_preload();
    rbd_start(&d, extra);
    unsetenv("LD_PRELOAD");
}

static void relaunch_with_shim(const char *shim)
{
    setenv("LD_PRELOAD", shim, 1);
    rbd_launch(&d, NULL);
    unsetenv("LD_PRELOAD");
}

/* ================================================================================ */
/* 4. Faults through the LD_PRELOAD shim                                             */
/* ================================================================================ */

static void state_of_d(char *state, size_t cap, const char *file)
{
    snprintf(state, cap, "%s/state/%s", d.dir, file);
}

/* The snapshot is installed but the new log cannot be renamed over the
 * old one: SAVE fails naming the log, the old log stays the log (the
 * installed snapshot says from where it continues it), so writes go on;
 * no temp file stays; a restart recovers from the new snapshot and the old
 * log from that offset, a write made after the failure included; SAVE
 * works again at once once the fault is gone. */
START_TEST(test_faults_log_rename_failure_after_snapshot)
{
    const char *shim = shim_path();
    char snap[400], logp[400], state[400], reply[1024];
    const char *keys[] = { "a", "b", "c", "x" };
    uint64_t old_log;
    rb_conn_t *c;
    int rc;

    if (shim == NULL)
        return;
    start_with_shim(shim, "appendfsync always\nsave-seconds 0");
    state_of_d(snap, sizeof(snap), "snapshot.rbs");
    state_of_d(logp, sizeof(logp), "appendonly.rbl");
    snprintf(state, sizeof(state), "%s/state", d.dir);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    rbd_expect(c, "OK", "RING.ADD", "n1");
    old_log = header_id(logp, 8);
    ck_assert_uint_eq(header_id(snap, 16), old_log);

    fault_set("rename appendonly.rbl EIO\n");
    snprintf(reply, sizeof(reply), "%s", rbd_cmd(c, &rc, "SAVE", (const char *)NULL));
    printf("log rename fails, SAVE: %s\n", reply);
    ck_assert_int_eq(rc, RB_EREPLY);
    ck_assert_ptr_nonnull(strstr(reply, "appendonly.rbl"));
    ck_assert_ptr_nonnull(strstr(reply, strerror(EIO)));
    log_line_with("fault_shim: rename", "appendonly.rbl", (const char *)NULL);
    log_line_with("SAVE failed", "appendonly.rbl", strerror(EIO), (const char *)NULL);
    /* The new snapshot is in place, naming a log that is not. */
    ck_assert_uint_ne(header_id(snap, 16), old_log);
    ck_assert_uint_eq(header_id(logp, 8), old_log);
    assert_no_temp_files(state);
    rbd_expect(c, "1", "BF.ADD", "f", "x");
    rbd_expect(c, "1", "BF.EXISTS", "f", "a");
    rb_conn_close(c);

    /* Killed like that: the new snapshot, then the old log from where it
     * was frozen, hold everything. */
    fault_set("");
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    relaunch_with_shim(shim);
    ck_assert_int_eq(rbd_log_count(&d, "replaying it from offset"), 1);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.EXISTS", "f", "a");
    rbd_expect(c, "1", "BF.EXISTS", "f", "x");
    rbd_expect(c, "n1\n1", "RING.NODES");

    /* The same fault in a running daemon, repaired by SAVE. */
    fault_set("rename appendonly.rbl EIO\n");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    rbd_cmd(c, &rc, "SAVE", (const char *)NULL);
    ck_assert_int_eq(rc, RB_EREPLY);
    fault_set("");
    rbd_expect(c, "OK", "SAVE");
    rbd_expect(c, "1", "BF.ADD", "f", "c");
    ck_assert_uint_eq(header_id(snap, 16), header_id(logp, 8));
    rb_conn_close(c);
    assert_recovered("f", keys, 4);
    assert_no_temp_files(state);
}
END_TEST

/* appendfsync always and fdatasync fails: the add's reply is held until a
 * snapshot covers it (the failed log is never trusted again), other
 * writes are refused meanwhile; the repair snapshot happens by itself
 * once fsync works, the held reply then goes out, and the add survives. */
START_TEST(test_faults_fsync_failure_holds_reply_until_snapshot)
{
    const char *shim = shim_path();
    const char *keys[] = { "a", "x", "y" };
    char reply[1024], state[400];
    double t;
    rb_conn_t *c;
    int a, rc;

    if (shim == NULL)
        return;
    start_with_shim(shim, "appendfsync always\nsave-seconds 0");
    snprintf(state, sizeof(state), "%s/state", d.dir);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    /* The repair snapshot's own new log fails too, for now. */
    fault_set("fdatasync appendonly.rbl EIO\nfdatasync appendonly.rbl.tmp EIO\n");
    a = rbd_raw_connect(&d);
    raw_send(a, "BF.ADD", "f", "x", (const char *)NULL);
    ck_assert(wait_log("replies wait until a snapshot succeeds", 1, 3000));
    printf("fsync fails, daemon log: %s",
           log_line_with("fdatasync of", "appendonly.rbl", strerror(EIO), (const char *)NULL));
    ck_assert(wait_log("repairing snapshot failed", 1, 3000));
    printf("fsync fails, repair: %s",
           log_line_with("repairing snapshot failed", (const char *)NULL));
    ck_assert_uint_eq(raw_wait(a, reply, sizeof(reply), 1, 200), 0);   /* held */
    snprintf(reply, sizeof(reply), "%s", rbd_cmd(c, &rc, "BF.ADD", "f", "z", (const char *)NULL));
    ck_assert_int_eq(rc, RB_EREPLY);
    ck_assert(strncmp(reply, "MISCONF", 7) == 0);
    assert_no_temp_files(state);

    /* fsync works again: the next attempt (10 s after the failed one)
     * repairs the log and releases the reply. */
    fault_set("");
    t = now_s();
    ck_assert_uint_gt(raw_wait(a, reply, sizeof(reply), 1, 15000), 0);
    ck_assert_str_eq(reply, ":1\r\n");
    printf("fsync fails: the held reply went out %.1f s after fsync worked again\n",
           now_s() - t);
    ck_assert_int_ge(rbd_log_count(&d, "snapshot saved: the log works again"), 1);
    close(a);
    rbd_expect(c, "1", "BF.ADD", "f", "y");
    rb_conn_close(c);
    assert_recovered("f", keys, 3);
}
END_TEST

/* appendfsync everysec: the background fdatasync fails.  Acknowledged
 * adds did not wait for it, so the log must not be trusted any more: a
 * snapshot covers them right away and the daemon goes on. */
START_TEST(test_faults_everysec_fsync_failure_forces_snapshot)
{
    const char *shim = shim_path();
    const char *keys[] = { "a", "b", "c" };
    rb_conn_t *c;

    if (shim == NULL)
        return;
    start_with_shim(shim, "appendfsync everysec\nsave-seconds 0");
    c = rbd_connect(&d);
    /* A new filter's record is fsync'd before its reply: made before the
     * fault, so that only the background fsync fails. */
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    fault_set("fdatasync appendonly.rbl EIO\n");
    rbd_expect(c, "1", "BF.ADD", "f", "b");
    ck_assert_msg(wait_log("background fdatasync of", 1, 4000), "no fsync failure reported");
    printf("everysec fsync fails: %s",
           log_line_with("background fdatasync of", "appendonly.rbl", strerror(EIO),
                         (const char *)NULL));
    ck_assert_msg(wait_log("snapshot saved: the log works again", 1, 3000),
                  "no snapshot repaired the log after a failed background fsync");
    fault_set("");
    rbd_expect(c, "1", "BF.ADD", "f", "c");
    rb_conn_close(c);
    assert_recovered("f", keys, 3);
}
END_TEST

/* The log unavailable (every write fails) with the worst clients for an
 * event loop: one whose held replies sit behind a socket it drains
 * (EPOLLOUT), then the same one hung up (EPOLLHUP).  The daemon must not
 * spin, must answer the others, and must deliver and keep everything once
 * the log works. */
START_TEST(test_faults_log_outage_does_not_spin)
{
    enum { PINGS = 150000 };
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    const char *shim = shim_path();
    const char *keys[] = { "a", "s", "y" };
    char reply[1024], *flood;
    size_t len = 0, drained = 0;
    rb_conn_t *c;
    int sfd, rc;

    if (shim == NULL)
        return;
    start_with_shim(shim, "appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.ADD", "f", "a");
    fault_set("write appendonly.rbl ENOSPC\n");

    /* 150,000 PINGs unread (1 MB of replies: the daemon's sends block and
     * it waits for EPOLLOUT), then an add the log cannot take. */
    flood = malloc(PINGS * (sizeof(ping) - 1) + 64);
    ck_assert_ptr_nonnull(flood);
    for (int i = 0; i < PINGS; i++, len += sizeof(ping) - 1)
        memcpy(flood + len, ping, sizeof(ping) - 1);
    len += (size_t)sprintf(flood + len, "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$1\r\ns\r\n");
    sfd = rbd_raw_connect(&d);
    {
        pid_t sender = fork();
        ck_assert_int_ge(sender, 0);
        if (sender == 0) {
            ssize_t n = send(sfd, flood, len, MSG_NOSIGNAL);
            _exit(n == (ssize_t)len ? 0 : 1);
        }
        /* The daemon reads the flood as long as its replies fit: drain
         * some so the send completes. */
        for (int i = 0; i < 2000 && waitpid(sender, NULL, WNOHANG) == 0; i++) {
            char buf[65536];
            ssize_t n = recv(sfd, buf, sizeof(buf), MSG_DONTWAIT);
            if (n > 0)
                drained += (size_t)n;
            else
                usleep(1000);
        }
    }
    free(flood);
    ck_assert(wait_log("replies wait, writes are refused", 1, 3000));

    /* Drain what the daemon may send while its replies are held. */
    assert_no_spin("log outage, held client draining its socket", sfd, &drained);
    printf("log outage: %zu of %d PONG bytes received\n", drained, PINGS * 7);
    ck_assert_uint_lt(drained, (size_t)PINGS * 7 + 4);   /* the add's ":1" is held */

    /* Others are answered: a refused write, a read, INFO. */
    snprintf(reply, sizeof(reply), "%s", rbd_cmd(c, &rc, "BF.ADD", "f", "z", (const char *)NULL));
    ck_assert_int_eq(rc, RB_EREPLY);
    ck_assert(strncmp(reply, "MISCONF", 7) == 0);
    rbd_expect(c, "1", "BF.EXISTS", "f", "a");

    /* The held client hangs up. */
    close(sfd);
    usleep(100000);
    assert_no_spin("log outage, held client hung up", -1, NULL);

    fault_set("");
    ck_assert(wait_log("log writes work again", 1, 2000));
    rbd_expect(c, "1", "BF.ADD", "f", "y");
    rb_conn_close(c);
    assert_recovered("f", keys, 3);
}
END_TEST

/* One transaction of round r: MULTI, two adds and a new node - with
 * grow, a large new filter between the node and the second add (its
 * reserve grows the segment) - EXEC, sent on a raw connection (the
 * daemon may die before it answers). */
static int send_txn(int r, int grow)
{
    char a[16], b[16], n[16], g[16];
    int fd = rbd_raw_connect(&d);

    snprintf(a, sizeof(a), "k%da", r);
    snprintf(b, sizeof(b), "k%db", r);
    snprintf(n, sizeof(n), "n%d", r);
    snprintf(g, sizeof(g), "g%d", r);
    raw_send(fd, "MULTI", (const char *)NULL);
    raw_send(fd, "BF.ADD", "f", a, (const char *)NULL);
    raw_send(fd, "RING.ADD", n, (const char *)NULL);
    if (grow)
        raw_send(fd, "BF.RESERVE", g, "0.01", "1000000", (const char *)NULL);
    raw_send(fd, "BF.ADD", "f", b, (const char *)NULL);
    raw_send(fd, "EXEC", (const char *)NULL);
    return fd;
}

/* The daemon under the shim, log fsync'd on every change, filter f, and a
 * first transaction (round 100) applied and answered: what each kill
 * round must keep. */
static void txn_start(const char *shim)
{
    char buf[256];
    rb_conn_t *c;
    int fd;

    start_with_shim(shim, "appendfsync always\nsave-seconds 0");
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "f", "0.01", "1000");
    rb_conn_close(c);
    fd = send_txn(100, 0);
    ck_assert_uint_gt(raw_wait(fd, buf, sizeof(buf), 10, 5000), 0);
    ck_assert_ptr_nonnull(strstr(buf, "*3\r\n:1\r\n+OK\r\n:1\r\n"));
    close(fd);
}

/* Asserts that round r's transaction is there whole (all) or not at all. */
static void assert_txn(rb_conn_t *c, int r, int all)
{
    char a[16], b[16], nodes[256];
    const char *got;
    int rc;

    snprintf(a, sizeof(a), "k%da", r);
    snprintf(b, sizeof(b), "k%db", r);
    rbd_expect(c, all ? "1\n1" : "0\n0", "BF.MEXISTS", "f", a, b);
    got = rbd_cmd(c, &rc, "RING.NODES", (const char *)NULL);
    snprintf(nodes, sizeof(nodes), "n%d\n", r);
    ck_assert_msg((strstr(got, nodes) != NULL) == all, "round %d: nodes [%s]", r, got);
}

/* T1: a transaction killed mid-EXEC restarts with all of it or none.  The
 * daemon dies by SIGKILL in the write of the EXEC's log record: before
 * any byte of it (applied, not logged, not answered), after half of it (a
 * torn TXN record), after all of it (logged, not answered).  Restarted
 * from the files alone (the segment removed, as a machine crash would),
 * the first two find none of it - the torn record is a torn tail, not
 * half a transaction - and the last all of it; restarted onto the
 * segment it left, the first finds all of it (every member was applied
 * before the record was written).  Transactions before stay. */
START_TEST(test_faults_txn_killed_keeps_all_or_none)
{
    static const struct {
        const char *rule;
        int keep_segment, all;
    } rounds[] = {
        { "write appendonly.rbl KILL\n", 0, 0 },
        { "write appendonly.rbl KILL-HALF\n", 0, 0 },
        { "write appendonly.rbl KILL-AFTER\n", 0, 1 },
        { "write appendonly.rbl KILL\n", 1, 1 },
    };
    const char *shim = shim_path();
    char buf[256];
    rb_conn_t *c;
    int fd;

    if (shim == NULL)
        return;
    txn_start(shim);
    for (int r = 0; r < 4; r++) {
        fault_set(rounds[r].rule);
        fd = send_txn(r, 0);
        /* Some of the replies of MULTI and the three queued may come
         * (the requests may arrive in several reads); EXEC's never does. */
        memset(buf, 0, sizeof(buf));
        raw_wait(fd, buf, sizeof(buf) - 1, 5, 3000);
        ck_assert_ptr_null(strstr(buf, "*3"));
        rbd_stop(&d, SIGKILL);
        close(fd);
        fault_set("");
        if (!rounds[r].keep_segment)
            ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
        relaunch_with_shim(shim);
        c = rbd_connect(&d);
        assert_txn(c, 100, 1);
        assert_txn(c, r, rounds[r].all);
        rb_conn_close(c);
    }
    ck_assert_int_ge(rbd_log_count(&d, "torn record"), 1);
}
END_TEST

/* T1 between members: the daemon dies by SIGKILL after an EXEC's first
 * members are applied and before the rest are (in the segment growth of
 * the third, a large BF.RESERVE: the shim's ftruncate rule on the shm
 * object).  The segment it leaves holds the first add (readers saw it)
 * and the transaction mark; the log holds nothing of the transaction.
 * Restarted onto that segment, the daemon must not take it over (the
 * takeover would keep half a transaction): it rebuilds from the files and
 * finds none of it; restarted from the files alone, none as well.  A
 * transaction before stays whole, and the next one runs and is kept. */
START_TEST(test_faults_txn_killed_between_members_keeps_none)
{
    const char *shim = shim_path();
    char buf[256], rule[128];
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_conn_t *c;
    int fd, rc;

    if (shim == NULL)
        return;
    txn_start(shim);
    snprintf(rule, sizeof(rule), "ftruncate ringbloom.%s KILL\n", d.inst);
    for (int keep_segment = 1; keep_segment >= 0; keep_segment--) {
        int r = keep_segment;
        fault_set(rule);
        fd = send_txn(r, 1);
        memset(buf, 0, sizeof(buf));
        raw_wait(fd, buf, sizeof(buf) - 1, 6, 3000);
        ck_assert_ptr_null(strstr(buf, "*4"));
        rbd_stop(&d, SIGKILL);
        close(fd);
        fault_set("");
        /* What readers saw: the first member, applied before the death. */
        snprintf(buf, sizeof(buf), "k%da", r);
        ck_assert_int_eq(rb_segment_attach(d.inst, RB_ATTACH_STALE_OK, &seg), RB_OK);
        ck_assert_int_eq(rb_bloom_open(seg, "f", 1, &bf), RB_OK);
        ck_assert_int_eq(rb_bloom_contains(bf, buf, strlen(buf)), 1);
        rb_bloom_close(bf);
        rb_segment_close(seg);
        if (!keep_segment)
            ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
        relaunch_with_shim(shim);
        c = rbd_connect(&d);
        assert_txn(c, 100, 1);
        assert_txn(c, r, 0);
        snprintf(buf, sizeof(buf), "g%d", r);
        rbd_cmd(c, &rc, "BF.INFO", buf, (const char *)NULL);
        ck_assert_int_ne(rc, RB_OK);
        rb_conn_close(c);
    }
    ck_assert_int_eq(rbd_log_count(&d, "inside a transaction"), 1);
    fd = send_txn(200, 1);
    ck_assert_uint_gt(raw_wait(fd, buf, sizeof(buf), 11, 5000), 0);
    ck_assert_ptr_nonnull(strstr(buf, "*4\r\n:1\r\n+OK\r\n+OK\r\n:1\r\n"));
    close(fd);
    rbd_stop(&d, SIGKILL);
    relaunch_with_shim(shim);
    c = rbd_connect(&d);
    assert_txn(c, 200, 1);
    rb_conn_close(c);
}
END_TEST

/* The daemon killed inside a shrink (segment-shrink-bytes: a free tail
 * cut by rb_segment_rebuild), in both of its crash windows: before the
 * rename (the new object made under its second name, ~rebuild) and just
 * after it (the new object under the name, the old one not retired).
 * Restarted onto the segment it left and from the files alone: every
 * acknowledged key is there, the deleted filter stays deleted, no second
 * object is left in /dev/shm, a reader attached before the kill follows
 * and answers, and the restarted daemon cuts the tail itself. */
START_TEST(test_faults_killed_in_a_shrink_keeps_every_ack)
{
    static const char *const window[2] = { "KILL", "KILL-AFTER" };
    const char *shim = shim_path();
    char rule[160], key[32], leftover[300];
    rb_segment_t *view;
    rb_bloom_t *bf;
    rb_conn_t *c;
    struct stat st;
    ino_t stale;
    int rc, n = 0;

    if (shim == NULL)
        return;
    start_with_shim(shim, "appendfsync always\nsegment-shrink-bytes 8m\nmax-memory 256mb");
    snprintf(leftover, sizeof(leftover), "/dev/shm/ringbloom.%s~rebuild", d.inst);
    c = rbd_connect(&d);
    rbd_expect(c, "OK", "BF.RESERVE", "keep", "0.01", "100000");
    rb_conn_close(c);
    for (int r = 0; r < 4; r++) {
        int after = r % 2, keep_segment = r < 2;
        c = rbd_connect(&d);
        for (int i = 0; i < 500; i++, n++) {
            snprintf(key, sizeof(key), "k%d", n);
            rbd_expect(c, "1", "BF.ADD", "keep", key);
        }
        rbd_expect(c, "OK", "BF.RESERVE", "big", "0.01", "16000000");   /* ~19 MB at the end */
        snprintf(rule, sizeof(rule), "rename /dev/shm/ringbloom.%s %s\n", d.inst, window[after]);
        fault_set(rule);
        rbd_expect(c, "1", "DEL", "big");
        rb_conn_close(c);
        ck_assert_int_eq(rb_segment_attach(d.inst, 0, &view), RB_OK);
        for (int i = 0; i < 100 && kill(d.pid, 0) == 0 &&
             waitpid(d.pid, NULL, WNOHANG) == 0; i++)
            usleep(100000);   /* the shrink comes within a second or two */
        fault_set("");
        rbd_stop(&d, SIGKILL);   /* already dead: reaped */
        ck_assert_int_eq(stat(leftover, &st) == 0, !after);   /* the window was hit */
        stale = after ? 0 : st.st_ino;
        if (!keep_segment)
            ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
        relaunch_with_shim(shim);
        /* The object the killed writer left is gone.  An object under
         * that name now is the restarted daemon's own shrink in flight
         * (a replayed log recreates the tail it cuts): another inode. */
        ck_assert_msg(stat(leftover, &st) != 0 || st.st_ino != stale,
                      "round %d: %s left behind", r, leftover);
        c = rbd_connect(&d);
        ck_assert_str_eq(rbd_cmd(c, &rc, "EXISTS", "big", (const char *)NULL), "0");
        for (int i = 0; i < n; i++) {
            snprintf(key, sizeof(key), "k%d", i);
            ck_assert_str_eq(rbd_cmd(c, &rc, "BF.EXISTS", "keep", key, (const char *)NULL), "1");
        }
        /* The reader attached before the kill follows the restart. */
        for (int i = 0; i < 100 && rb_segment_refresh(view) == 0 &&
             rb_segment_check(view) != RB_OK; i++)
            usleep(100000);
        ck_assert_int_eq(rb_bloom_open(view, "keep", 4, &bf), RB_OK);
        ck_assert_int_eq(rb_bloom_contains(bf, "k0", 2), 1);
        rb_bloom_close(bf);
        rb_segment_close(view);
        /* The restarted daemon cuts the tail (when the one killed did not). */
        for (int i = 0; i < 100 && rbd_info_num(c, "memory", "ringbloom_segment_bytes") >
                                    rbd_info_num(c, "memory", "used_memory") + (1 << 20); i++)
            usleep(100000);
        ck_assert_msg(rbd_info_num(c, "memory", "ringbloom_segment_bytes") <=
                      rbd_info_num(c, "memory", "used_memory") + (1 << 20),
                      "round %d: the restarted daemon kept the free tail", r);
        ck_assert_msg(stat(leftover, &st) != 0, "round %d: %s left after the shrink", r,
                      leftover);
        rb_conn_close(c);
    }
}
END_TEST

TCase *faults_shim_tcase(void)
{
    return RB_TCASE("shim", 60, NULL, faults_teardown,
                    test_faults_log_rename_failure_after_snapshot,
                    test_faults_fsync_failure_holds_reply_until_snapshot,
                    test_faults_everysec_fsync_failure_forces_snapshot,
                    test_faults_log_outage_does_not_spin,
                    test_faults_txn_killed_keeps_all_or_none,
                    test_faults_txn_killed_between_members_keeps_none,
                    test_faults_killed_in_a_shrink_keeps_every_ack);
}
