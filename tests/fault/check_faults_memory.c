/*
 * check_faults_memory.c - check_faults' memory TCase: SIGKILL aimed at the
 * paths that give memory and disk back (docs/design.md, "Heap": freed
 * pages punched out, held while a snapshot is written; "Sparse
 * snapshots"; a restart from the files copies only the live extents).
 *
 * 24 rounds.  Each round starts the daemon (appendfsync always, everysec
 * and no; save-log-bytes 1mb with save-log-percent 0, so the log's
 * compaction into a snapshot also starts on its own) and runs two client
 * processes: an adder streaming BF.MADD batches into the filter "keep"
 * (at most 65,536 keys a round), and a churner that reserves a ~19 MB
 * filter "big", fills every page of it (a BGSAVE half way: a snapshot
 * holding big) and deletes it, over and over, with a BGSAVE before the
 * DEL (the DEL lands in the snapshot: its pages wait for the snapshot,
 * then for the daemon's next second, ringbloom_unreleased_bytes) or after
 * it (a sparse snapshot with a hole where big was).  The test kills the
 * daemon at a random moment, or once INFO shows a snapshot being written,
 * or once it shows freed pages waiting for their release (each aim under
 * both restart paths: the segment kept in /dev/shm, and the segment
 * removed so the daemon restores from the snapshot and the log).  After
 * every restart:
 *
 *   - every key the adder got acknowledged, in any round, is present
 *     through the reader API, and its last one through BF.EXISTS;
 *   - big exists as its last acknowledged RESERVE / DEL left it (or as
 *     the one in flight at the kill would), and when it exists every key
 *     acknowledged into it since its RESERVE is present;
 *   - within seconds, nothing waits for a release and the object's
 *     allocated bytes (fstat st_blocks * 512 of /dev/shm/ringbloom.<inst>)
 *     are within MEM_SLACK of INFO's used_memory: a release cut short by
 *     the kill is resumed, and a restore copies only the live extents.
 *
 * At the end, with big deleted, a SAVE writes a snapshot whose allocated
 * blocks (and INFO's last_snapshot_file_bytes) are within MEM_SLACK of
 * used_memory, not the segment's length.  Kills that landed in a snapshot
 * and in a pending release are counted, and at least one of each is
 * required.
 */
#include "faults.h"

enum { MEM_ROUNDS = 24, MEM_KEEP_BATCH = 64, MEM_KEEP_MAX = 65536, MEM_BIG_BATCH = 2000,
       MEM_BIG_FILL = 40000 };
#define MEM_BIG_CAP "16000000"      /* ~19 MB of bits at 0.01 */
#define MEM_SLACK (6ull << 20)      /* allocated past the live data: partial
                                       pages, the directory, ring copies */
/* The restarted daemon's first second resumes a release the kill cut
 * short (its first tick comes at once); 5 s is the margin of a loaded
 * machine, and half the period of the daemon's sweep of every free run
 * (RBD_SWEEP_SECONDS, 10 s), so a restart that forgot the pending release
 * is not saved by the sweep in every round. */
#define MEM_RELEASE_S 5.0

enum { CH_NONE, CH_RESERVE, CH_MADD, CH_DEL, CH_BGSAVE };

/* What the clients share with the test (an anonymous shared map). */
typedef struct mem_box {
    _Atomic int ready;
    _Atomic uint32_t keep_acked;    /* keep: keys [0, keep_acked) of this round */
    _Atomic int big_exists;         /* big as the last acknowledged change left it */
    _Atomic uint32_t big_gen;       /* RESERVEs acknowledged this round */
    _Atomic uint32_t big_acked;     /* keys [0, big_acked) of big_gen acknowledged */
    _Atomic int inflight;           /* CH_*: the churner's change sent, not answered */
    _Atomic uint64_t fills, dels, bgsaves;
    char error[2][512];
} mem_box_t;

static size_t keep_key(char *buf, size_t cap, unsigned round, uint32_t i)
{
    return (size_t)snprintf(buf, cap, "keep:r%u:%u", round, i);
}

static size_t big_key(char *buf, size_t cap, unsigned round, uint32_t gen, uint32_t i)
{
    return (size_t)snprintf(buf, cap, "big:r%u:g%u:%u", round, gen, i);
}

/* One command (NULL-terminated words) on c: 0 and the reply in buf, 1 if
 * the daemon went away, else the error is recorded and the client exits. */
static int mem_cmd(rb_conn_t *c, char *err, char *buf, size_t cap, ...)
{
    const char *argv[8];
    size_t argl[8], argc = 0;
    va_list ap;
    int rc;

    va_start(ap, cap);
    while (argc < 8 && (argv[argc] = va_arg(ap, const char *)) != NULL) {
        argl[argc] = strlen(argv[argc]);
        argc++;
    }
    va_end(ap);
    rc = rb_conn_command(c, argc, argv, argl, buf, cap);
    if (rc == RB_EDAEMON)
        return 1;
    if (rc != RB_OK && !(strcmp(argv[0], "BGSAVE") == 0 && strstr(buf, "in progress"))) {
        snprintf(err, 512, "%s %s -> rc %d [%.300s]", argv[0], argc > 1 ? argv[1] : "", rc, buf);
        _exit(1);
    }
    return 0;
}

/* Adds keys [first, first + n) of key(round, gen, .) to filter f; 0, or 1
 * if the daemon went away (the batch may or may not have happened). */
static int mem_add(rb_conn_t *c, char *err, const char *f, int big, unsigned round, uint32_t gen,
                   uint32_t first, uint32_t n)
{
    static char kb[MEM_BIG_BATCH][48];
    static rb_key_t keys[MEM_BIG_BATCH];
    int64_t rc;

    for (uint32_t i = 0; i < n; i++) {
        size_t len = big ? big_key(kb[i], sizeof(kb[i]), round, gen, first + i)
                         : keep_key(kb[i], sizeof(kb[i]), round, first + i);
        keys[i] = (rb_key_t){ kb[i], len };
    }
    rc = rb_conn_bf_add_many(c, f, strlen(f), keys, n, NULL);
    if (rc == RB_EDAEMON)
        return 1;
    if (rc < 0) {
        snprintf(err, 512, "BF.MADD %s -> %s", f, rb_strerror((int)rc));
        _exit(1);
    }
    return 0;
}

static rb_conn_t *mem_connect(mem_box_t *box, char *err)
{
    rb_conn_t *c;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (rb_conn_open(NULL, d.sock, 10000, &c) != RB_OK) {
        snprintf(err, 512, "cannot connect");
        atomic_fetch_add(&box->ready, 1);   /* the round fails on its status */
        _exit(1);
    }
    atomic_fetch_add(&box->ready, 1);
    return c;
}

/* The adder: keep's keys in batches until the daemon goes away, at most
 * MEM_KEEP_MAX a round (the checks after every restart stay bounded),
 * then PINGs. */
static void mem_adder(mem_box_t *box, unsigned round)
{
    char *err = box->error[0], reply[64];
    rb_conn_t *c = mem_connect(box, err);

    for (uint32_t next = 0;; next += MEM_KEEP_BATCH) {
        if (next == MEM_KEEP_MAX) {
            while (mem_cmd(c, err, reply, sizeof(reply), "PING", (const char *)NULL) == 0)
                usleep(5000);
            break;
        }
        if (mem_add(c, err, "keep", 0, round, 0, next, MEM_KEEP_BATCH))
            break;
        atomic_store(&box->keep_acked, next + MEM_KEEP_BATCH);
    }
    rb_conn_close(c);
    _exit(0);
}

/* Sends one change of big, recording it in flight and then acknowledged;
 * 1 if the daemon went away. */
static int churn_step(mem_box_t *box, rb_conn_t *c, int kind, const char *w0, const char *w1)
{
    char reply[256];

    atomic_store(&box->inflight, kind);
    if (mem_cmd(c, box->error[1], reply, sizeof(reply), w0, w1,
                kind == CH_RESERVE ? "0.01" : NULL, MEM_BIG_CAP, (const char *)NULL))
        return 1;
    if (kind == CH_RESERVE) {
        atomic_store(&box->big_acked, 0);
        atomic_fetch_add(&box->big_gen, 1);
        atomic_store(&box->big_exists, 1);
    } else if (kind == CH_DEL) {
        atomic_store(&box->big_exists, 0);
        atomic_fetch_add(&box->dels, 1);
    } else {
        atomic_fetch_add(&box->bgsaves, 1);
    }
    atomic_store(&box->inflight, CH_NONE);
    return 0;
}

/* The churner: big reserved, every page filled (a BGSAVE half way),
 * deleted, with a BGSAVE before the DEL (even turns) or after it (odd
 * turns). */
static void mem_churner(mem_box_t *box, unsigned round)
{
    rb_conn_t *c = mem_connect(box, box->error[1]);

    for (unsigned turn = 0;; turn++) {
        if (churn_step(box, c, CH_DEL, "DEL", "big") ||
            churn_step(box, c, CH_RESERVE, "BF.RESERVE", "big"))
            break;
        for (uint32_t k = 0; k < MEM_BIG_FILL; k += MEM_BIG_BATCH) {
            if (k == MEM_BIG_FILL / 2 && churn_step(box, c, CH_BGSAVE, "BGSAVE", NULL))
                goto gone;   /* a snapshot of big half filled, the rest after it */
            atomic_store(&box->inflight, CH_MADD);
            if (mem_add(c, box->error[1], "big", 1, round, atomic_load(&box->big_gen), k,
                        MEM_BIG_BATCH))
                goto gone;
            atomic_store(&box->big_acked, k + MEM_BIG_BATCH);
            atomic_store(&box->inflight, CH_NONE);
        }
        atomic_fetch_add(&box->fills, 1);
        if (turn % 2 == 0 ? churn_step(box, c, CH_BGSAVE, "BGSAVE", NULL) ||
                                churn_step(box, c, CH_DEL, "DEL", "big")
                          : churn_step(box, c, CH_DEL, "DEL", "big") ||
                                churn_step(box, c, CH_BGSAVE, "BGSAVE", NULL))
            break;
    }
gone:
    rb_conn_close(c);
    _exit(0);
}

/* Bytes the file's blocks take. */
static uint64_t allocated(const char *path)
{
    struct stat st;

    ck_assert_int_eq(stat(path, &st), 0);
    return (uint64_t)st.st_blocks * 512;
}

/* Waits (<= MEM_RELEASE_S) until nothing waits for a release and the
 * object holds no more than MEM_SLACK past used_memory; asserts it,
 * returns the time it took (s). */
static double mem_await_released(rb_conn_t *c, unsigned round, const char *path)
{
    char shm[300];
    double t0 = now_s();
    uint64_t held = 0, used = 0, unreleased = 1;

    snprintf(shm, sizeof(shm), "/dev/shm/ringbloom.%s", d.inst);
    while (now_s() - t0 < MEM_RELEASE_S) {
        unreleased = (uint64_t)rbd_info_num(c, "memory", "ringbloom_unreleased_bytes");
        used = (uint64_t)rbd_info_num(c, "memory", "used_memory");
        held = allocated(shm);
        if (unreleased == 0 && held <= used + MEM_SLACK)
            break;
        usleep(50000);
    }
    ck_assert_msg(unreleased == 0 && held <= used + MEM_SLACK,
                  "after round %u (%s): the object holds %llu bytes for used_memory %llu, "
                  "%llu unreleased, %.0f s after the restart", round, path,
                  (unsigned long long)held, (unsigned long long)used,
                  (unsigned long long)unreleased, MEM_RELEASE_S);
    return now_s() - t0;
}

/* Asserts the restarted daemon's filters against what was acknowledged
 * (keep_acked[r]: keys of round r); returns the keys of big it checked,
 * counting the restarts that found big in big_found[1], without it in
 * big_found[0]. */
static uint32_t mem_verify(const mem_box_t *box, const uint32_t *keep_acked, unsigned rounds_done,
                           unsigned *big_found)
{
    char key[64];
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_conn_t *c = rbd_connect(&d);
    int rc, exists, inflight = atomic_load(&box->inflight);
    int was = atomic_load(&box->big_exists);
    unsigned last = rounds_done - 1;
    uint32_t n = 0;

    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, "keep", 4, &bf), RB_OK);
    for (unsigned r = 0; r < rounds_done; r++)
        for (uint32_t i = 0; i < keep_acked[r]; i++) {
            size_t len = keep_key(key, sizeof(key), r, i);
            ck_assert_msg(rb_bloom_contains(bf, key, len) == 1,
                          "after round %u: acknowledged key %s is missing", last, key);
        }
    rb_bloom_close(bf);
    if (keep_acked[last] > 0) {
        keep_key(key, sizeof(key), last, keep_acked[last] - 1);
        ck_assert_str_eq(rbd_cmd(c, &rc, "BF.EXISTS", "keep", key, (const char *)NULL), "1");
    }
    /* big: as acknowledged, or as the change in flight leaves it. */
    exists = strcmp(rbd_cmd(c, &rc, "EXISTS", "big", (const char *)NULL), "1") == 0;
    ck_assert_msg(exists == was || (inflight == CH_RESERVE && exists) ||
                  (inflight == CH_DEL && !exists),
                  "after round %u: big %s, acknowledged %s (in flight: %d)", last,
                  exists ? "exists" : "is gone", was ? "there" : "gone", inflight);
    big_found[exists]++;
    if (exists && was) {
        uint32_t gen = atomic_load(&box->big_gen);
        n = atomic_load(&box->big_acked);
        ck_assert_int_eq(rb_bloom_open(seg, "big", 3, &bf), RB_OK);
        for (uint32_t i = 0; i < n; i++) {
            size_t len = big_key(key, sizeof(key), last, gen, i);
            ck_assert_msg(rb_bloom_contains(bf, key, len) == 1,
                          "after round %u: acknowledged key %s of big is missing", last, key);
        }
        rb_bloom_close(bf);
    }
    rb_segment_close(seg);
    rb_conn_close(c);
    return n;
}

START_TEST(test_faults_kill_in_release_and_sparse_snapshot)
{
    static const char *const fsync_mode[3] = { "always", "everysec", "no" };
    static const char *const aim_name[3] = { "random", "snapshot", "release" };
    const char *env_seed = getenv("RB_FAULT_SEED");
    mem_box_t *box = mmap(NULL, sizeof(*box), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint32_t keep_acked[MEM_ROUNDS] = { 0 };
    uint64_t seed, rng, adds = 0, big_keys = 0, snaps_done = 0, fills = 0, dels = 0, bgsaves = 0;
    uint64_t snap_bytes, used;
    unsigned hit[3] = { 0 }, missed = 0, cold = 0, big_found[2] = { 0 };
    double t0 = now_s(), settle = 0, settle_max = 0, s;
    char extra[256], snap[300], reply[64];
    pid_t kids[2];
    rb_conn_t *c;
    struct stat st;
    int rc, found;

    ck_assert(box != MAP_FAILED);
    seed = env_seed ? strtoull(env_seed, NULL, 10)
                    : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    rng = seed ? seed : 1;
    printf("memory kills: seed %llu (RB_FAULT_SEED=%llu repeats the delays), %d rounds\n",
           (unsigned long long)seed, (unsigned long long)seed, MEM_ROUNDS);
    for (unsigned round = 0; round <= MEM_ROUNDS; round++) {
        /* Groups of three rounds lose the segment (0-2, 6-8, ...) or keep
         * it (3-5, 9-11, ...); the aim cycles random, snapshot, release in
         * each group, and the fsync mode shifts by one every six rounds, so
         * every aim meets both paths and every mode.  The last kill falls
         * in a pending release with the segment kept. */
        int keep_seg = (round / 3) % 2 == 1, aim = (int)(round % 3);
        const char *path = round == 0 ? "" : ((round - 1) / 3) % 2 ? "segment kept"
                                                                    : "from the files";

        snprintf(extra, sizeof(extra), "appendfsync %s\nsave-seconds 0\nsave-log-bytes 1mb\n"
                 "save-log-percent 0\nmax-memory 256mb", fsync_mode[(round + round / 6) % 3]);
        if (round == 0) {
            rbd_start(&d, extra);
            c = rbd_connect(&d);
            rbd_expect(c, "OK", "BF.RESERVE", "keep", "0.01", "2000000");
        } else {
            rbd_write_conf(&d, extra);
            rbd_launch(&d, NULL);
            big_keys += mem_verify(box, keep_acked, round, big_found);
            c = rbd_connect(&d);
            s = mem_await_released(c, round - 1, path);
            settle += s;
            settle_max = s > settle_max ? s : settle_max;
        }
        if (round == MEM_ROUNDS)
            break;
        memset(box, 0, sizeof(*box));
        atomic_store(&box->big_exists, round > 0 &&
                     strcmp(rbd_cmd(c, &rc, "EXISTS", "big", (const char *)NULL), "1") == 0);
        for (int k = 0; k < 2; k++) {
            kids[k] = fork();
            ck_assert_int_ge(kids[k], 0);
            if (kids[k] == 0) {
                if (k == 0)
                    mem_adder(box, round);
                mem_churner(box, round);
            }
        }
        for (double since = now_s(); atomic_load(&box->ready) < 2;) {
            ck_assert_msg(now_s() - since < 60.0, "round %u: clients not connected in 60 s",
                          round);
            usleep(1000);
        }
        /* The kill: after 30-330 ms (random: up to 600 ms), then, aimed,
         * as soon as INFO shows the state (at most 5 s, 10 s for the last). */
        usleep((30 + (unsigned)((rng = rng * 6364136223846793005ULL + 1442695040888963407ULL) >>
                                33) % (aim == 0 ? 570 : 300)) * 1000);
        found = 0;
        for (double since = now_s(); aim != 0;) {
            if (aim == 1 ? rbd_info_num(c, "persistence", "rdb_bgsave_in_progress") == 1
                         : rbd_info_num(c, "memory", "ringbloom_unreleased_bytes") > 0) {
                hit[aim]++;
                found = 1;
                break;
            }
            if (now_s() - since > (round + 1 == MEM_ROUNDS ? 10.0 : 5.0)) {
                missed++;
                break;
            }
            usleep(2000);
        }
        if (aim == 0 && rbd_info_num(c, "persistence", "rdb_bgsave_in_progress") == 1)
            hit[1]++;   /* a random kill that fell in a snapshot too */
        snaps_done += (uint64_t)rbd_info_num(c, "persistence", "snapshots");
        rb_conn_close(c);
        rbd_stop(&d, SIGKILL);
        for (int k = 0; k < 2; k++) {
            int status;
            ck_assert_int_eq(waitpid(kids[k], &status, 0), kids[k]);
            ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "round %u: %s", round,
                          box->error[k][0] ? box->error[k] : "client died");
        }
        if (round + 1 == MEM_ROUNDS)
            ck_assert_msg(aim == 2 && keep_seg && found,
                          "the last kill did not fall in a pending release");
        if (!keep_seg) {
            ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
            cold++;
        }
        keep_acked[round] = atomic_load(&box->keep_acked);
        adds += keep_acked[round];
        fills += atomic_load(&box->fills);
        dels += atomic_load(&box->dels);
        bgsaves += atomic_load(&box->bgsaves);
        printf("memory kills: round %u (%s, aim %s): %u keep keys, %llu fills of big\n", round,
               keep_seg ? "segment kept" : "segment removed", aim_name[aim], keep_acked[round],
               (unsigned long long)atomic_load(&box->fills));
    }

    /* The snapshot of the live data alone: big deleted, the segment's
     * length still what the churn made it. */
    rbd_cmd(c, &rc, "DEL", "big", (const char *)NULL);
    ck_assert_int_eq(rc, RB_OK);
    ck_assert_int_eq(rb_conn_command(c, 1, (const char *[]){ "SAVE" }, (size_t[]){ 4 }, reply,
                                     sizeof(reply)), RB_OK);
    used = (uint64_t)rbd_info_num(c, "memory", "used_memory");
    snap_bytes = (uint64_t)rbd_info_num(c, "persistence", "last_snapshot_file_bytes");
    snprintf(snap, sizeof(snap), "%s/state/snapshot.rbs", d.dir);
    ck_assert_int_eq(stat(snap, &st), 0);
    printf("memory kills: the last snapshot takes %llu bytes on disk (INFO: %llu) for "
           "used_memory %llu; its length %lld, the segment %llu\n",
           (unsigned long long)allocated(snap), (unsigned long long)snap_bytes,
           (unsigned long long)used, (long long)st.st_size,
           (unsigned long long)rbd_info_num(c, "memory", "ringbloom_segment_bytes"));
    ck_assert_msg(allocated(snap) <= used + MEM_SLACK, "the snapshot takes %llu bytes on disk "
                  "for %llu live bytes", (unsigned long long)allocated(snap),
                  (unsigned long long)used);
    ck_assert_uint_le(snap_bytes, used + MEM_SLACK);
    ck_assert_uint_gt(snap_bytes, 0);
    rb_conn_close(c);

    printf("memory kills: %d rounds, %u from the files and %d on the kept segment; kills that "
           "fell in a snapshot / a pending release: %u / %u (%u aims missed)\n",
           MEM_ROUNDS, cold, MEM_ROUNDS - (int)cold, hit[1], hit[2], missed);
    printf("memory kills: %llu keep keys acknowledged and verified after every later restart, "
           "%llu keys of big after the restart that followed; big filled %llu times, deleted "
           "%llu, %llu BGSAVEs acknowledged, %llu snapshots completed\n",
           (unsigned long long)adds, (unsigned long long)big_keys, (unsigned long long)fills,
           (unsigned long long)dels, (unsigned long long)bgsaves,
           (unsigned long long)snaps_done);
    printf("memory kills: restarts that found big: %u, without it: %u\n", big_found[1],
           big_found[0]);
    printf("memory kills: released within %.2f s of a restart on average (at most %.2f s); "
           "%.1f s in total\n", settle / MEM_ROUNDS, settle_max, now_s() - t0);
    ck_assert_uint_gt(hit[1], 0);
    ck_assert_uint_gt(hit[2], 0);
    ck_assert_uint_gt(adds, 0);
    ck_assert_uint_gt(fills, 0);
    munmap(box, sizeof(*box));
}
END_TEST

TCase *faults_memory_tcase(void)
{
    return RB_TCASE("memory", 240, NULL, faults_teardown,
                    test_faults_kill_in_release_and_sparse_snapshot);
}
