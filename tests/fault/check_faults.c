/*
 * check_faults.c - ringbloomd under injected faults (docs/reliability.md):
 *
 *   loop  50 rounds of four clients streaming Bloom adds and ring changes
 *         while the daemon is SIGKILLed at a random moment (some rounds
 *         also lose the /dev/shm segment); after every restart each
 *         acknowledged add is present and each client's nodes are as it
 *         last saw them acknowledged;
 *   disk  a full state directory (a small tmpfs in a private mount
 *         namespace, or RLIMIT_FSIZE): a failed snapshot changes nothing,
 *         a failed log append holds the reply and refuses writes until
 *         space returns;
 *   shm   a full /dev/shm (a small tmpfs in a private mount namespace):
 *         growth fails with a clear error and nothing half-made;
 *   shim  faults a disk seldom produces, through tests/fault_shim.c
 *         (LD_PRELOAD): the snapshot's log rename, fdatasync (in the reply
 *         path and in the everysec thread), a log outage that must not
 *         make the daemon spin.
 *
 * The torn log tail is in check_daemon (test_daemon_torn_tail_accepted_
 * middle_damage_refused, which cuts a real record at every offset), the
 * corrupt snapshot checksum in test_daemon_corrupt_snapshot_refuses_start,
 * damaged headers, files that do not fit together, the snapshot's crash
 * windows and zero-filled tails in check_persist.
 *
 * Every daemon, temp dir and shm object is removed by rbd_test.h's exit
 * handler even when an assertion ends a test; mounts live in the test's
 * own mount namespace and end with its process.
 */
#include "config.h"

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "rbd_test.h"

static rbd_proc_t d;
static char mnt[128];        /* a tmpfs this test mounted, or "" */
static int shm_mounted;      /* a tmpfs over /dev/shm (private namespace) */

static void teardown(void)
{
    rbd_remove_all(&d);
    if (mnt[0] != '\0') {
        umount2(mnt, MNT_DETACH);
        rmdir(mnt);
        mnt[0] = '\0';
    }
    if (shm_mounted) {
        umount2("/dev/shm", MNT_DETACH);
        shm_mounted = 0;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the daemon's log ------------------------------------------------------ */

/* Waits (<= ms) until the log has at least count lines with needle. */
static int wait_log(const char *needle, int count, int ms)
{
    for (int waited = 0; waited <= ms; waited += 10) {
        if (rbd_log_count(&d, needle) >= count)
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Asserts that a line of the daemon's log contains every one of the
 * NULL-terminated words, and returns it (static buffer). */
static const char *log_line_with(const char *first, ...)
{
    static char line[2048];
    FILE *f = fopen(d.log, "r");

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        va_list ap;
        const char *w;
        int all = 1;
        va_start(ap, first);
        for (w = first; w != NULL && all; w = va_arg(ap, const char *))
            all = strstr(line, w) != NULL;
        va_end(ap);
        if (all) {
            fclose(f);
            return line;
        }
    }
    fclose(f);
    ck_abort_msg("no line of %s contains all of [%s, ...]", d.log, first);
    return NULL;
}

/* ---- raw clients (replies the daemon holds back) ---------------------------- */

/* Sends one command (NULL-terminated words) as a RESP multibulk. */
static void raw_send(int fd, ...)
{
    char buf[65536];
    const char *w[64];
    size_t n = 0, len = 0;
    va_list ap;

    va_start(ap, fd);
    while (n < 64 && (w[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    len += (size_t)snprintf(buf, sizeof(buf), "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "$%zu\r\n%s\r\n", strlen(w[i]),
                                w[i]);
    ck_assert_uint_lt(len, sizeof(buf));
    ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Reads until `lines` CRLF-terminated lines arrived or ms passed; returns
 * the bytes read (0: nothing came). */
static size_t raw_wait(int fd, char *buf, size_t cap, int lines, int ms)
{
    size_t len = 0;
    double end = now_s() + ms / 1000.0;

    buf[0] = '\0';
    while (len + 1 < cap) {
        struct pollfd p = { fd, POLLIN, 0 };
        int left = (int)((end - now_s()) * 1000), seen = 0;
        ssize_t n;
        for (size_t i = 0; i + 1 < len; i++)
            seen += buf[i] == '\r' && buf[i + 1] == '\n';
        if (seen >= lines || left <= 0 || poll(&p, 1, left) <= 0)
            break;
        n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
    }
    return len;
}

/* Watches the daemon for 1.5 s (draining fd meanwhile if fd >= 0, counting
 * into *drained) and asserts it used under a tenth of a CPU: no busy loop. */
static void assert_no_spin(const char *what, int fd, size_t *drained)
{
    double cpu0 = (rbd_cpu_ms(d.pid) / 1000.0), t0 = now_s(), cpu, wall;

    while (now_s() - t0 < 1.5) {
        char buf[65536];
        ssize_t n = fd >= 0 ? recv(fd, buf, sizeof(buf), MSG_DONTWAIT) : -1;
        if (n > 0)
            *drained += (size_t)n;
        else
            usleep(10000);
    }
    cpu = (rbd_cpu_ms(d.pid) / 1000.0) - cpu0;
    wall = now_s() - t0;
    printf("%s: the daemon used %.2f s of CPU in %.2f s\n", what, cpu, wall);
    ck_assert_msg(cpu < 0.1 * wall, "%s: the daemon spins (%.2f s of CPU in %.2f s)", what, cpu,
                  wall);
}

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

/* Asserts that the state directory holds no temp file. */
static void assert_no_temp_files(const char *state)
{
    DIR *dir = opendir(state);
    struct dirent *e;

    ck_assert_ptr_nonnull(dir);
    while ((e = readdir(dir)) != NULL)
        ck_assert_msg(strstr(e->d_name, ".tmp") == NULL, "temp file %s/%s left behind", state,
                      e->d_name);
    closedir(dir);
}

static void assert_shm_absent(void)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "/dev/shm/ringbloom.%s", d.inst);
    ck_assert_msg(stat(path, &st) != 0, "%s is left behind", path);
}

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

/* Under AddressSanitizer the runtime refuses to start when a preloaded
 * library comes before it; the shim does not intercept what ASan needs, so
 * the daemon's exec gets verify_asan_link_order=0 added to whatever
 * ASAN_OPTIONS the run set (its log_path must survive).  Harmless without
 * ASan. */
static void asan_allow_preload(void)
{
    const char *cur = getenv("ASAN_OPTIONS");
    char buf[1024];

    if (cur != NULL && strstr(cur, "verify_asan_link_order=0") != NULL)
        return;
    snprintf(buf, sizeof(buf), "%s%sverify_asan_link_order=0", cur != NULL ? cur : "",
             cur != NULL && *cur != '\0' ? ":" : "");
    setenv("ASAN_OPTIONS", buf, 1);
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
    asan_allow_preload();
    rbd_start(&d, extra);
    unsetenv("LD_PRELOAD");
}

static void relaunch_with_shim(const char *shim)
{
    setenv("LD_PRELOAD", shim, 1);
    rbd_launch(&d, NULL);
    unsetenv("LD_PRELOAD");
}

/* ---- checks on the recovered state -------------------------------------------- */

/* Kills the daemon, removes its segment, restarts it (so the state comes
 * from the snapshot and the log alone) and asserts that every key of
 * filter is present through the reader API and BF.EXISTS. */
static void assert_recovered(const char *filter, const char *const *keys, size_t n)
{
    rb_segment_t *seg;
    rb_bloom_t *bf;
    rb_conn_t *c;

    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    rbd_launch(&d, NULL);
    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    ck_assert_int_eq(rb_bloom_open(seg, filter, strlen(filter), &bf), RB_OK);
    c = rbd_connect(&d);
    for (size_t i = 0; i < n; i++) {
        int rc;
        ck_assert_msg(rb_bloom_contains(bf, keys[i], strlen(keys[i])) == 1,
                      "acknowledged key %s is missing from the reader after restart", keys[i]);
        ck_assert_str_eq(rbd_cmd(c, &rc, "BF.EXISTS", filter, keys[i], (const char *)NULL), "1");
    }
    rb_conn_close(c);
    rb_bloom_close(bf);
    rb_segment_close(seg);
}

/* ================================================================================ */
/* 1. The fault loop                                                                */
/* ================================================================================ */

enum { LOOP_CLIENTS = 4, LOOP_NODES = 6, LOOP_MAX_OPS = 4096, LOOP_FILTERS = 3,
       LOOP_BATCH = 32 };
static const char *const loop_filters[LOOP_FILTERS] = { "fa", "fb", "fc" };
static const char *const loop_fsync[3] = { "always", "everysec", "no" };

enum { OP_ADD = 1, OP_MADD, OP_RING, OP_SAVE };

typedef struct loop_op {
    uint8_t kind, filter, node;
    uint32_t weight;             /* OP_RING: the node's weight after it, 0 = removed */
    uint32_t first, count;       /* OP_ADD / OP_MADD: keys [first, first + count) */
} loop_op_t;

/* One client's record of a round, in memory shared with the test. */
typedef struct loop_lane {
    _Atomic uint32_t nacked;     /* acked[0 .. nacked) were acknowledged */
    _Atomic int inflight_set;    /* inflight was sent and not acknowledged */
    loop_op_t inflight;
    uint32_t weight[LOOP_NODES]; /* its nodes: at the start, then as acknowledged */
    loop_op_t acked[LOOP_MAX_OPS];
    char error[512];
} loop_lane_t;

typedef struct loop_box {
    _Atomic int ready;
    loop_lane_t lane[LOOP_CLIENTS];
} loop_box_t;

/* An acknowledged batch of keys, for the checks of every later round. */
typedef struct loop_range {
    uint16_t round;
    uint8_t client, filter;
    uint32_t first, count;
} loop_range_t;

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static size_t loop_key(char *buf, size_t cap, unsigned round, unsigned client, uint32_t i)
{
    return (size_t)snprintf(buf, cap, "https://r%u.c%u.fault.example/item/%u", round, client, i);
}

static void loop_node(char *buf, size_t cap, unsigned client, unsigned node)
{
    snprintf(buf, cap, "c%u-n%u", client, node);
}

/* 1 if reply is what op must get when it succeeds. */
static int loop_reply_ok(const loop_op_t *op, const char *reply)
{
    if (op->kind == OP_RING || op->kind == OP_SAVE)
        return strcmp(reply, "OK") == 0;
    for (uint32_t i = 0; i < op->count; i++) {
        if ((reply[0] != '0' && reply[0] != '1') ||
            reply[1] != (i + 1 == op->count ? '\0' : '\n'))
            return 0;
        reply += 2;
    }
    return 1;
}

/* A client process: streams operations until the daemon goes away, and
 * records each one once it is acknowledged. */
static void loop_client(loop_box_t *box, unsigned ci, unsigned round, uint64_t seed)
{
    loop_lane_t *L = &box->lane[ci];
    uint64_t rng = seed ^ ((uint64_t)(round + 1) << 40) ^ (uint64_t)(ci + 1) * 0x9E3779B97F4A7C15ULL;
    static char keys[LOOP_BATCH][80], reply[8192];
    const char *argv[LOOP_BATCH + 3];
    size_t argl[LOOP_BATCH + 3];
    char name[32], wbuf[16];
    uint32_t next = 0;
    rb_conn_t *c;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (rb_conn_open(NULL, d.sock, 10000, &c) != RB_OK) {
        snprintf(L->error, sizeof(L->error), "client %u cannot connect", ci);
        atomic_fetch_add(&box->ready, 1);   /* the round fails on its status */
        _exit(1);
    }
    atomic_fetch_add(&box->ready, 1);
    while (atomic_load(&L->nacked) < LOOP_MAX_OPS) {
        loop_op_t op = { 0 };
        unsigned r = (unsigned)(rng_next(&rng) % 100);
        size_t argc = 0;
        int rc;

        if (r < 75) {
            op.kind = r < 40 ? OP_MADD : OP_ADD;
            op.filter = (uint8_t)(rng_next(&rng) % LOOP_FILTERS);
            op.first = next;
            op.count = op.kind == OP_ADD ? 1 : 1 + (uint32_t)(rng_next(&rng) % LOOP_BATCH);
            argv[argc++] = op.kind == OP_ADD ? "BF.ADD" : "BF.MADD";
            argv[argc++] = loop_filters[op.filter];
            for (uint32_t i = 0; i < op.count; i++) {
                loop_key(keys[i], sizeof(keys[i]), round, ci, next + i);
                argv[argc++] = keys[i];
            }
        } else if (r < 99 || ci != 0) {
            uint32_t cur;
            op.kind = OP_RING;
            op.node = (uint8_t)(rng_next(&rng) % LOOP_NODES);
            cur = L->weight[op.node];
            loop_node(name, sizeof(name), ci, op.node);
            if (cur == 0) {
                op.weight = 1 + (uint32_t)(rng_next(&rng) % 5);
                argv[argc++] = "RING.ADD";
            } else if (rng_next(&rng) % 2) {
                op.weight = 0;
                argv[argc++] = "RING.REMOVE";
            } else {
                op.weight = cur % 5 + 1;   /* another weight */
                argv[argc++] = "RING.WEIGHT";
            }
            argv[argc++] = name;
            if (op.weight > 0) {
                snprintf(wbuf, sizeof(wbuf), "%u", op.weight);
                argv[argc++] = wbuf;
            }
        } else {
            op.kind = OP_SAVE;   /* a snapshot, so some kills land in one */
            argv[argc++] = "SAVE";
        }
        for (size_t i = 0; i < argc; i++)
            argl[i] = strlen(argv[i]);
        L->inflight = op;
        atomic_store(&L->inflight_set, 1);
        rc = rb_conn_command(c, argc, argv, argl, reply, sizeof(reply));
        if (rc == RB_EDAEMON)
            break;   /* killed: this one may or may not have happened */
        if (rc != RB_OK || !loop_reply_ok(&op, reply)) {
            snprintf(L->error, sizeof(L->error), "client %u: %s %s -> rc %d [%.300s]", ci,
                     argv[0], argc > 1 ? argv[1] : "", rc, reply);
            _exit(1);
        }
        if (op.kind == OP_RING)
            L->weight[op.node] = op.weight;
        if (op.kind == OP_ADD || op.kind == OP_MADD)
            next += op.count;
        L->acked[atomic_load(&L->nacked)] = op;
        atomic_fetch_add(&L->nacked, 1);
        atomic_store(&L->inflight_set, 0);
    }
    rb_conn_close(c);
    _exit(0);
}

typedef struct loop_state {
    uint64_t seed;
    loop_range_t *ranges;        /* every acknowledged batch so far */
    size_t nranges, cap, first_of_round;
    uint32_t weight[LOOP_CLIENTS][LOOP_NODES];   /* verified ring */
    uint64_t adds, ring_changes, saves, inflight_ring_applied;
} loop_state_t;

/* Asserts the restarted daemon's state against what was acknowledged:
 * every key ever acknowledged through the reader API, those of the last
 * round also through BF.MEXISTS (and each client's last one through
 * BF.EXISTS); each client's nodes as it last saw them acknowledged, or
 * as its unacknowledged last change would make them. */
static void loop_verify(loop_state_t *st, const loop_box_t *box, unsigned round)
{
    static char keys[256][80], reply[65536];
    const char *argv[258];
    size_t argl[258];
    rb_bloom_t *bf[LOOP_FILTERS] = { NULL };
    rb_node_t nodes[LOOP_CLIENTS * LOOP_NODES + 1];
    uint32_t actual[LOOP_CLIENTS][LOOP_NODES];
    rb_segment_t *seg;
    size_t count;
    rb_conn_t *c;
    int rc;

    ck_assert_int_eq(rb_segment_attach(d.inst, 0, &seg), RB_OK);
    c = rbd_connect(&d);
    for (size_t r = 0; r < st->nranges; r++) {
        const loop_range_t *g = &st->ranges[r];
        int last_round = r >= st->first_of_round;
        if (bf[g->filter] == NULL)
            ck_assert_int_eq(rb_bloom_open(seg, loop_filters[g->filter], 2, &bf[g->filter]),
                             RB_OK);
        for (uint32_t i = 0; i < g->count; i++) {
            size_t len = loop_key(keys[i % 256], sizeof(keys[0]), g->round, g->client,
                                  g->first + i);
            ck_assert_msg(rb_bloom_contains(bf[g->filter], keys[i % 256], len) == 1,
                          "seed %llu, after round %u: acknowledged key %s (filter %s) is "
                          "missing", (unsigned long long)st->seed, round, keys[i % 256],
                          loop_filters[g->filter]);
        }
        if (last_round) {
            /* The same keys through the daemon. */
            size_t argc = 0;
            argv[argc++] = "BF.MEXISTS";
            argv[argc++] = loop_filters[g->filter];
            for (uint32_t i = 0; i < g->count; i++)
                argv[argc++] = keys[i];
            for (size_t i = 0; i < argc; i++)
                argl[i] = strlen(argv[i]);
            ck_assert_int_eq(rb_conn_command(c, argc, argv, argl, reply, sizeof(reply)), RB_OK);
            for (uint32_t i = 0; i < g->count; i++)
                ck_assert_msg(reply[2 * i] == '1', "seed %llu: BF.MEXISTS misses %s",
                              (unsigned long long)st->seed, keys[i]);
        }
    }
    /* Each client's most recently acknowledged add, through BF.EXISTS. */
    for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
        const loop_lane_t *L = &box->lane[ci];
        for (uint32_t k = atomic_load(&L->nacked); k-- > 0;) {
            const loop_op_t *op = &L->acked[k];
            if (op->kind != OP_ADD && op->kind != OP_MADD)
                continue;
            loop_key(keys[0], sizeof(keys[0]), round, ci, op->first + op->count - 1);
            ck_assert_str_eq(rbd_cmd(c, &rc, "BF.EXISTS", loop_filters[op->filter], keys[0],
                                     (const char *)NULL), "1");
            break;
        }
    }
    /* The ring: nothing but the clients' nodes, each as acknowledged (or
     * as the change in flight at the kill would leave it). */
    memset(actual, 0, sizeof(actual));
    ck_assert_int_eq(rb_ring_nodes(seg, nodes, sizeof(nodes) / sizeof(nodes[0]), &count), RB_OK);
    ck_assert_uint_le(count, LOOP_CLIENTS * LOOP_NODES);
    for (size_t i = 0; i < count; i++) {
        unsigned ci, j;
        char tail;
        ck_assert_msg(sscanf(nodes[i].name, "c%u-n%u%c", &ci, &j, &tail) == 2 &&
                      ci < LOOP_CLIENTS && j < LOOP_NODES, "unexpected node %s", nodes[i].name);
        actual[ci][j] = nodes[i].weight;
    }
    for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
        const loop_lane_t *L = &box->lane[ci];
        const loop_op_t *in = atomic_load(&L->inflight_set) ? &L->inflight : NULL;
        for (unsigned j = 0; j < LOOP_NODES; j++) {
            int alt = in != NULL && in->kind == OP_RING && in->node == j;
            ck_assert_msg(actual[ci][j] == L->weight[j] || (alt && actual[ci][j] == in->weight),
                          "seed %llu, after round %u: node c%u-n%u has weight %u, acknowledged "
                          "%u%s", (unsigned long long)st->seed, round, ci, j, actual[ci][j],
                          L->weight[j], alt ? " (or the change in flight)" : "");
            if (alt && actual[ci][j] != L->weight[j])
                st->inflight_ring_applied++;
            st->weight[ci][j] = actual[ci][j];
        }
    }
    {
        /* The daemon's own view (RING.NODES) agrees with the reader's. */
        const char *nodes_cmd = rbd_cmd(c, &rc, "RING.NODES", (const char *)NULL);
        size_t lines = count > 0;
        ck_assert_int_eq(rc, RB_OK);
        for (const char *p = nodes_cmd; *p; p++)
            lines += *p == '\n';
        ck_assert_uint_eq(lines, count * 2);
    }
    for (int f = 0; f < LOOP_FILTERS; f++)
        rb_bloom_close(bf[f]);
    rb_conn_close(c);
    rb_segment_close(seg);
}

/* Adds the round's acknowledged operations to the running totals. */
static void loop_collect(loop_state_t *st, const loop_box_t *box, unsigned round)
{
    st->first_of_round = st->nranges;
    for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
        const loop_lane_t *L = &box->lane[ci];
        uint32_t n = atomic_load(&L->nacked);
        for (uint32_t k = 0; k < n; k++) {
            const loop_op_t *op = &L->acked[k];
            if (op->kind == OP_RING) {
                st->ring_changes++;
                continue;
            }
            if (op->kind == OP_SAVE) {
                st->saves++;
                continue;
            }
            if (st->nranges == st->cap) {
                st->cap = st->cap ? st->cap * 2 : 4096;
                st->ranges = realloc(st->ranges, st->cap * sizeof(*st->ranges));
                ck_assert_ptr_nonnull(st->ranges);
            }
            st->ranges[st->nranges++] = (loop_range_t){ (uint16_t)round, (uint8_t)ci,
                                                        op->filter, op->first, op->count };
            st->adds += op->count;
        }
    }
}

START_TEST(test_faults_sigkill_loop_keeps_every_ack)
{
    const char *env_rounds = getenv("RB_FAULT_ROUNDS"), *env_seed = getenv("RB_FAULT_SEED");
    unsigned rounds = env_rounds ? (unsigned)atoi(env_rounds) : 50, removed = 0;
    loop_box_t *box = mmap(NULL, sizeof(*box), PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    loop_state_t st = { 0 };
    double t0 = now_s(), restart_s = 0;
    uint64_t rng;
    pid_t kids[LOOP_CLIENTS];
    char extra[256];
    rb_conn_t *c;

    ck_assert(box != MAP_FAILED);
    st.seed = env_seed ? strtoull(env_seed, NULL, 10)
                       : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (st.seed == 0)
        st.seed = 1;
    rng = st.seed;
    printf("fault loop: seed %llu (RB_FAULT_SEED=%llu repeats the schedule), %u rounds\n",
           (unsigned long long)st.seed, (unsigned long long)st.seed, rounds);
    fflush(stdout);
    for (unsigned round = 0; round <= rounds; round++) {
        double t = now_s();
        unsigned delay_ms;

        snprintf(extra, sizeof(extra), "appendfsync %s\nsave-seconds 0\nsave-log-bytes 1mb",
                 loop_fsync[round % 3]);
        if (round == 0) {
            rbd_start(&d, extra);
            c = rbd_connect(&d);
            rbd_expect(c, "OK", "BF.RESERVE", "fa", "0.01", "200000");
            rbd_expect(c, "OK", "BF.RESERVE", "fb", "0.01", "1000", "EXPANSION", "2");
            rb_conn_close(c);   /* fc is created by the first add, as RedisBloom does */
        } else {
            rbd_write_conf(&d, extra);
            rbd_launch(&d, NULL);
            restart_s += now_s() - t;
            loop_verify(&st, box, round - 1);
        }
        if (round == rounds)
            break;
        /* Stream from four clients; kill the daemon at a random moment. */
        memset(box, 0, sizeof(*box));
        for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++)
            memcpy(box->lane[ci].weight, st.weight[ci], sizeof(st.weight[ci]));
        for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
            kids[ci] = fork();
            ck_assert_int_ge(kids[ci], 0);
            if (kids[ci] == 0)
                loop_client(box, ci, round, st.seed);
        }
        /* The kill must come after every client connected (a client that
         * finds the daemon dead fails the round): wait for them, however
         * slow a loaded machine makes fork and connect. */
        for (double since = now_s(); atomic_load(&box->ready) < LOOP_CLIENTS;) {
            ck_assert_msg(now_s() - since < 60.0, "seed %llu round %u: clients not connected in 60 s",
                          (unsigned long long)st.seed, round);
            usleep(1000);
        }
        delay_ms = 20 + (unsigned)(rng_next(&rng) % 400);
        usleep(delay_ms * 1000);
        rbd_stop(&d, SIGKILL);
        for (unsigned ci = 0; ci < LOOP_CLIENTS; ci++) {
            int status;
            ck_assert_int_eq(waitpid(kids[ci], &status, 0), kids[ci]);
            ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                          "seed %llu round %u: %s", (unsigned long long)st.seed, round,
                          box->lane[ci].error[0] ? box->lane[ci].error : "client died");
        }
        if (rng_next(&rng) % 3 == 0) {
            ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
            removed++;
        }
        loop_collect(&st, box, round);
    }
    printf("fault loop: %u rounds survived (%u with the segment removed, recovered from "
           "snapshot + log; %d re-attached), %d torn log tails accepted\n",
           rounds, removed, rbd_log_count(&d, "re-attached to the live segment"),
           rbd_log_count(&d, "torn"));
    printf("fault loop: %llu adds acknowledged and verified (every one after every later "
           "restart via the reader API, each round's via BF.MEXISTS), %llu ring changes "
           "verified (%llu unacknowledged ones found applied), %llu snapshots acknowledged\n",
           (unsigned long long)st.adds, (unsigned long long)st.ring_changes,
           (unsigned long long)st.inflight_ring_applied, (unsigned long long)st.saves);
    printf("fault loop: %.1f s in total, %.2f s per restart on average\n", now_s() - t0,
           restart_s / (rounds ? rounds : 1));
    ck_assert(rounds == 0 || st.adds > 0);
    ck_assert(rounds == 0 || st.ring_changes > 0);
    free(st.ranges);
    munmap(box, sizeof(*box));
}
END_TEST

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
                                 "last_save_status:err"));
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

/* ================================================================================ */
/* 4. Faults through the LD_PRELOAD shim                                             */
/* ================================================================================ */

static void state_of_d(char *state, size_t cap, const char *file)
{
    snprintf(state, cap, "%s/state/%s", d.dir, file);
}

/* The snapshot is installed but the new log cannot be renamed over the
 * old one: SAVE fails naming the log, the daemon refuses writes (the
 * installed snapshot names a log that is not there) but keeps answering,
 * no temp file stays, a restart recovers from the new snapshot and skips
 * the old log; SAVE repairs it at once once the fault is gone. */
START_TEST(test_faults_log_rename_failure_after_snapshot)
{
    const char *shim = shim_path();
    char snap[400], logp[400], state[400], reply[1024];
    const char *keys[] = { "a", "b", "c" };
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
    snprintf(reply, sizeof(reply), "%s", rbd_cmd(c, &rc, "BF.ADD", "f", "x", (const char *)NULL));
    ck_assert_int_eq(rc, RB_EREPLY);
    ck_assert(strncmp(reply, "MISCONF", 7) == 0);
    rbd_expect(c, "1", "BF.EXISTS", "f", "a");
    rb_conn_close(c);

    /* Killed like that: the new snapshot holds everything. */
    fault_set("");
    rbd_stop(&d, SIGKILL);
    ck_assert_int_eq(rb_segment_unlink(d.inst), RB_OK);
    relaunch_with_shim(shim);
    ck_assert_int_eq(rbd_log_count(&d, "predates the snapshot"), 1);
    c = rbd_connect(&d);
    rbd_expect(c, "1", "BF.EXISTS", "f", "a");
    rbd_expect(c, "0", "BF.EXISTS", "f", "x");
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
    assert_recovered("f", keys, 3);
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
    fault_set("fdatasync appendonly.rbl EIO\n");
    rbd_expect(c, "1", "BF.ADD", "f", "a");
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

int main(void)
{
    /* Figures reach the log even from a test process that fails. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    return RB_TEST_MAIN("faults",
                        RB_TCASE("loop", 300, NULL, teardown,
                                 test_faults_sigkill_loop_keeps_every_ack),
                        RB_TCASE("disk", 60, NULL, teardown,
                                 test_faults_full_disk_snapshot_fails_cleanly,
                                 test_faults_full_disk_log_refuses_writes_then_recovers),
                        RB_TCASE("shm", 60, NULL, teardown,
                                 test_faults_full_shm_refuses_growth_and_start),
                        RB_TCASE("shim", 60, NULL, teardown,
                                 test_faults_log_rename_failure_after_snapshot,
                                 test_faults_fsync_failure_holds_reply_until_snapshot,
                                 test_faults_everysec_fsync_failure_forces_snapshot,
                                 test_faults_log_outage_does_not_spin));
}
