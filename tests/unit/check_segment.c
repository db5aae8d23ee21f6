/* check_segment.c - create / attach / validate / takeover of segments. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <zlib.h>

#include "rb_test.h"
#include "seg_txn.h"
#include "snap.h"

static char inst[96];
static rb_segment_t *wseg;

static void setup(void)
{
    rb_test_instance(inst, sizeof(inst));
    wseg = NULL;
}

static void teardown(void)
{
    rb_segment_close(wseg);
    rb_segment_unlink(inst);
}

static void create_default(void)
{
    ck_assert_int_eq(rb_segment_create(inst, NULL, &wseg), RB_OK);
}

/* Raw write access to the object, as a corrupting third party would have. */
static rb_header_shm_t *raw_map(int *fd)
{
    char path[160];
    void *p;

    snprintf(path, sizeof(path), "/ringbloom.%s", inst);
    *fd = shm_open(path, O_RDWR, 0);
    ck_assert_int_ge(*fd, 0);
    p = mmap(NULL, RBI_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    ck_assert(p != MAP_FAILED);
    return p;
}

static void raw_unmap(rb_header_shm_t *h, int fd)
{
    munmap(h, RBI_HEADER_SIZE);
    close(fd);
}

static int attach_rc(void)
{
    rb_segment_t *r = NULL;
    int rc = rb_segment_attach(inst, 0, &r);
    rb_segment_close(r);
    return rc;
}

START_TEST(test_segment_create_attach_roundtrip)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 8u << 20, .max_filters = 16 };
    rb_segment_info_t wi, ri;
    rb_segment_t *r;
    struct stat st;
    char path[160];

    umask(077);   /* the mode must be exact regardless of the umask */
    o.mode = 0640;
    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    snprintf(path, sizeof(path), "/dev/shm/ringbloom.%s", inst);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    ck_assert_int_eq(rb_segment_info(wseg, &wi), RB_OK);
    ck_assert_int_eq(rb_segment_info(r, &ri), RB_OK);
    ck_assert_int_eq(wi.writable, 1);
    ck_assert_int_eq(ri.writable, 0);
    ck_assert_uint_eq(ri.version, RBI_LAYOUT_VERSION);
    ck_assert_uint_eq(ri.max_size, 8u << 20);
    ck_assert_uint_eq(ri.max_filters, 16);
    ck_assert_uint_eq(ri.writer_pid, (uint64_t)getpid());
    ck_assert_uint_eq(ri.size, wi.size);
    ck_assert_uint_eq(ri.mode, 0640);
    ck_assert_int_eq(rb_segment_check(r), RB_OK);
    rb_segment_close(r);
}
END_TEST

/* The reservation create makes of a request is what rb_segment_reservation
 * says (whole 64 KiB granules), so a daemon can compare a live segment's
 * max_size with its configuration without knowing the granule. */
START_TEST(test_segment_reservation_is_what_create_makes)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = (8u << 20) + 1, .max_filters = 4 };
    rb_segment_info_t si;

    ck_assert_uint_eq(rb_segment_reservation(0), RB_DEFAULT_MAX_SIZE);
    ck_assert_uint_eq(rb_segment_reservation(1), 65536);
    ck_assert_uint_eq(rb_segment_reservation(65536), 65536);
    ck_assert_uint_eq(rb_segment_reservation(65537), 131072);
    ck_assert_uint_eq(rb_segment_reservation(RB_MAX_MAX_SIZE), RB_MAX_MAX_SIZE);
    ck_assert_uint_eq(rb_segment_reservation(RB_MAX_MAX_SIZE + 1), 0);
    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_segment_info(wseg, &si), RB_OK);
    ck_assert_uint_eq(si.max_size, rb_segment_reservation(o.max_size));
    ck_assert_uint_eq(si.max_size, (8u << 20) + 65536);
}
END_TEST

/* The library says which version it is, and it is the header's. */
START_TEST(test_segment_version_is_the_headers)
{
    char want[32];

    snprintf(want, sizeof(want), "%d.%d.%d", RB_VERSION_MAJOR, RB_VERSION_MINOR,
             RB_VERSION_PATCH);
    ck_assert_str_eq(RB_VERSION, want);
    ck_assert_str_eq(rb_version(), RB_VERSION);
    ck_assert_int_eq(RB_VERSION_NUMBER,
                     (RB_VERSION_MAJOR * 1000 + RB_VERSION_MINOR) * 1000 + RB_VERSION_PATCH);
    ck_assert_str_eq(rb_strerror(RB_ESLOTS),
                     "no free filter slot: the segment holds its maximum number of filters");
}
END_TEST

START_TEST(test_segment_create_existing_is_eexist)
{
    rb_segment_t *again = NULL;

    create_default();
    ck_assert_int_eq(rb_segment_create(inst, NULL, &again), RB_EEXIST);
    ck_assert_ptr_null(again);
}
END_TEST

START_TEST(test_segment_bad_names_and_options)
{
    rb_segment_t *s = NULL;
    rb_segment_opts_t o = { .mode = 01777 };
    char longname[RB_INSTANCE_MAX + 2];

    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    ck_assert_int_eq(rb_segment_create("", NULL, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_create("a/b", NULL, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_create(".hidden", NULL, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_create(longname, NULL, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_attach("a b", 0, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_create(inst, &o, &s), RB_EINVAL);
    o.mode = 0640;
    o.max_filters = RB_MAX_FILTERS + 1;
    ck_assert_int_eq(rb_segment_create(inst, &o, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_attach(inst, 0x80, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_unlink(inst), RB_ENOENT);   /* nothing created */
}
END_TEST

/* Name squatting: modes that let others write are never made, and an
 * object that others could write is not trusted by readers; a reader can
 * pin the owner. */
START_TEST(test_segment_untrusted_modes_and_owner_pin)
{
    rb_segment_opts_t o = { .mode = 0660 };
    rb_segment_t *s = NULL;
    char path[160];
    int fd;

    ck_assert_int_eq(rb_segment_create(inst, &o, &s), RB_EINVAL);
    o.mode = 0642;
    ck_assert_int_eq(rb_segment_create(inst, &o, &s), RB_EINVAL);
    ck_assert_int_eq(rb_segment_unlink(inst), RB_ENOENT);
    o.mode = 0644;
    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_segment_set_mode(wseg, 0664), RB_EINVAL);
    ck_assert_int_eq(attach_rc(), RB_OK);
    /* Someone makes it group-writable behind the writer's back. */
    snprintf(path, sizeof(path), "/ringbloom.%s", inst);
    fd = shm_open(path, O_RDWR, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchmod(fd, 0664), 0);
    ck_assert_int_eq(attach_rc(), RB_EOWNER);
    ck_assert_int_eq(fchmod(fd, 0606), 0);
    ck_assert_int_eq(attach_rc(), RB_EOWNER);
    ck_assert_int_eq(fchmod(fd, 0644), 0);
    close(fd);
    ck_assert_int_eq(attach_rc(), RB_OK);
    ck_assert_int_eq(rb_segment_attach_owned(inst, 0, geteuid(), &s), RB_OK);
    rb_segment_close(s);
    s = NULL;
    ck_assert_int_eq(rb_segment_attach_owned(inst, 0, geteuid() + 1, &s), RB_EOWNER);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(rb_strerror(RB_EOWNER),
                     "not to be trusted: another user owns it, can write it, or could have "
                     "put it there");
}
END_TEST

/* An object another user created under the name (here: a valid segment
 * made by uid 65534) is never taken over by a writer, and a reader that
 * pins the daemon's uid refuses it.  Needs root to switch uid. */
START_TEST(test_segment_writer_refuses_foreign_object)
{
    rb_segment_t *s = NULL;

    if (getuid() != 0) {
        printf("squatting test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    rb_test_squat_segment(inst);
    ck_assert_int_eq(rb_segment_open_writer(inst, &s), RB_EOWNER);
    ck_assert_int_eq(rb_segment_attach_owned(inst, RB_ATTACH_STALE_OK, 0, &s), RB_EOWNER);
    ck_assert_int_eq(rb_segment_attach_owned(inst, RB_ATTACH_STALE_OK, RB_TEST_OTHER_UID, &s),
                     RB_OK);
    rb_segment_close(s);
}
END_TEST

START_TEST(test_segment_attach_missing_is_enoent)
{
    ck_assert_int_eq(attach_rc(), RB_ENOENT);
}
END_TEST

START_TEST(test_segment_attach_bad_magic_is_notours)
{
    int fd;
    rb_header_shm_t *h;

    create_default();
    h = raw_map(&fd);
    rbi_st(&h->magic, 0x0123456789abcdefULL);
    raw_unmap(h, fd);
    ck_assert_int_eq(attach_rc(), RB_ENOTOURS);
}
END_TEST

START_TEST(test_segment_attach_swapped_magic_is_eendian)
{
    int fd;
    rb_header_shm_t *h;

    create_default();
    h = raw_map(&fd);
    rbi_st(&h->magic, __builtin_bswap64(RBI_MAGIC));
    raw_unmap(h, fd);
    ck_assert_int_eq(attach_rc(), RB_EENDIAN);
}
END_TEST

START_TEST(test_segment_attach_wrong_version_is_eversion)
{
    int fd;
    rb_header_shm_t *h;

    create_default();
    h = raw_map(&fd);
    rbi_st(&h->version, RBI_LAYOUT_VERSION + 1);
    raw_unmap(h, fd);
    ck_assert_int_eq(attach_rc(), RB_EVERSION);
}
END_TEST

START_TEST(test_segment_attach_truncated_is_etrunc)
{
    char path[160];
    int fd;

    create_default();
    snprintf(path, sizeof(path), "/ringbloom.%s", inst);
    fd = shm_open(path, O_RDWR, 0);
    ck_assert_int_ge(fd, 0);
    /* Smaller than header.size claims, but still holding the header. */
    ck_assert_int_eq(ftruncate(fd, RBI_HEADER_SIZE * 2), 0);
    ck_assert_int_eq(attach_rc(), RB_ETRUNC);
    /* Smaller than the header itself. */
    ck_assert_int_eq(ftruncate(fd, 100), 0);
    ck_assert_int_eq(attach_rc(), RB_ETRUNC);
    close(fd);
}
END_TEST

START_TEST(test_segment_attach_while_initialising_is_ebusy)
{
    char path[160];
    int fd;

    snprintf(path, sizeof(path), "/ringbloom.%s", inst);
    fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(attach_rc(), RB_EBUSY);          /* size 0 */
    ck_assert_int_eq(ftruncate(fd, 1 << 16), 0);
    ck_assert_int_eq(attach_rc(), RB_EBUSY);          /* magic not yet written */
    close(fd);
}
END_TEST

START_TEST(test_segment_attach_corrupt_directory_is_ecorrupt)
{
    int fd;
    rb_header_shm_t *h;

    create_default();
    h = raw_map(&fd);
    rbi_st(&h->dir_slots, 1ULL << 40);
    raw_unmap(h, fd);
    ck_assert_int_eq(attach_rc(), RB_ECORRUPT);
}
END_TEST

/* Found by fuzz_attach (corpus/fuzz_attach/regress-takeover-dir-offset):
 * a directory moved inside the space before the heap passed the range
 * checks, a restarted writer took the segment over, and its snapshots -
 * which rb_segment_restore must lay out as seg_create does - could not be
 * restored.  Only the layout a writer creates is accepted now. */
START_TEST(test_segment_foreign_layout_is_ecorrupt)
{
    rb_segment_opts_t o = { .max_filters = 4 };
    rb_segment_t *w = NULL;
    rb_header_shm_t *h;
    int fd;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    rb_segment_close(wseg);
    wseg = NULL;
    h = raw_map(&fd);
    /* 4 slots end at 12544, the heap starts at 16384: room to move. */
    rbi_st(&h->dir_offset, RBI_HEADER_SIZE + 256);
    raw_unmap(h, fd);
    ck_assert_int_eq(rb_segment_open_writer(inst, &w), RB_ECORRUPT);
    ck_assert_ptr_null(w);
    ck_assert_int_eq(attach_rc(), RB_ECORRUPT);
    h = raw_map(&fd);
    rbi_st(&h->dir_offset, RBI_HEADER_SIZE);
    rbi_st(&h->heap_offset, rbi_ld(&h->heap_offset) + 4096);
    raw_unmap(h, fd);
    ck_assert_int_eq(rb_segment_open_writer(inst, &w), RB_ECORRUPT);
    h = raw_map(&fd);
    rbi_st(&h->heap_offset, rbi_ld(&h->heap_offset) - 4096);
    raw_unmap(h, fd);
    ck_assert_int_eq(rb_segment_open_writer(inst, &wseg), RB_OK);
}
END_TEST

/* Found by fuzz_attach (corpus/fuzz_attach/regress-zero-length-layer): a
 * live filter whose layer had 0 bits passed the takeover (an empty extent
 * overlaps nothing), the writer's next allocation covered its offset, and
 * its snapshot no longer restored.  A writer now refuses a segment with a
 * live filter that has no layer or a layer a reader would refuse. */
START_TEST(test_segment_takeover_refuses_unsound_layer)
{
    rb_bloom_params_t p = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_segment_t *w = NULL;
    rb_filter_shm_t *f;
    rb_header_shm_t *h;
    unsigned char *base;
    uint64_t heap_off, saved;
    int fd;
    struct {
        size_t field;         /* offset of a word in the slot */
        uint64_t bad;
    } cases[] = {
        { offsetof(rb_filter_shm_t, layer[0].bits), 0 },
        { offsetof(rb_filter_shm_t, layer[0].bits), 511 },
        { offsetof(rb_filter_shm_t, layer[0].k), 0 },
        { offsetof(rb_filter_shm_t, layer[0].k), 65 },
        { offsetof(rb_filter_shm_t, layer[0].array_off), UINT64_MAX - 7 },
        { offsetof(rb_filter_shm_t, nlayers), 0 },
        { offsetof(rb_filter_shm_t, nlayers), RB_BLOOM_MAX_LAYERS + 1 },
    };

    create_default();
    ck_assert_int_eq(rb_bloom_reserve(wseg, "f", 1, &p), RB_OK);
    rb_segment_close(wseg);
    wseg = NULL;
    h = raw_map(&fd);
    heap_off = rbi_ld(&h->heap_offset);
    raw_unmap(h, fd);
    h = raw_map(&fd);
    base = mmap(NULL, heap_off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert(base != MAP_FAILED);
    raw_unmap(h, fd);
    f = (rb_filter_shm_t *)(base + RBI_HEADER_SIZE);   /* the first slot */
    ck_assert_uint_eq(rbi_ld(&f->state), RBI_FILTER_LIVE);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        _Atomic uint64_t *word = (_Atomic uint64_t *)((unsigned char *)f + cases[i].field);
        saved = rbi_ld(word);
        rbi_st(word, cases[i].bad);
        ck_assert_msg(rb_segment_open_writer(inst, &w) == RB_ECORRUPT, "case %zu", i);
        ck_assert_ptr_null(w);
        rbi_st(word, saved);
    }
    munmap(base, heap_off);
    ck_assert_int_eq(rb_segment_open_writer(inst, &wseg), RB_OK);
}
END_TEST

START_TEST(test_segment_retired_is_refused_and_reported)
{
    rb_segment_t *r;

    create_default();
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    ck_assert_int_eq(rb_segment_retire(wseg, 2), RB_OK);
    ck_assert_int_eq(rb_segment_check(r), RB_ERETIRED);
    ck_assert_int_eq(attach_rc(), RB_ERETIRED);
    ck_assert_int_eq(rb_segment_retire(r, 3), RB_EROFS);
    rb_segment_close(r);
}
END_TEST

START_TEST(test_segment_writer_gone_is_egone)
{
    rb_segment_t *r;
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        rb_segment_t *s;
        _exit(rb_segment_create(inst, NULL, &s) == RB_OK ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(attach_rc(), RB_EGONE);
    ck_assert_int_eq(rb_segment_attach(inst, RB_ATTACH_STALE_OK, &r), RB_OK);
    ck_assert_int_eq(rb_segment_check(r), RB_EGONE);
    rb_segment_close(r);
}
END_TEST

/* A reader maps PROT_READ from an O_RDONLY descriptor: a store faults. */
START_TEST(test_segment_reader_store_faults)
{
    rb_segment_t *r;

    create_default();
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    /* Unlink first: this process dies below, before its teardown runs. */
    ck_assert_int_eq(rb_segment_unlink(inst), RB_OK);
    rbi_st(&rbi_hdr(rbi_seg_map(r))->heartbeat_ms, 1);
    ck_abort_msg("store into a read-only mapping did not fault");
}
END_TEST

START_TEST(test_segment_reader_cannot_mprotect_to_write)
{
    rb_segment_t *r;

    create_default();
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    /* The descriptor was opened O_RDONLY, so the kernel refuses. */
    ck_assert_int_eq(mprotect(rbi_seg_map(r)->base, RBI_HEADER_SIZE, PROT_READ | PROT_WRITE), -1);
    ck_assert_int_eq(errno, EACCES);
    rb_segment_close(r);
}
END_TEST

START_TEST(test_segment_growth_past_reservation_is_enospc)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 1u << 20, .max_filters = 4 };
    rb_bloom_params_t big = { .capacity = 10000000, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD };
    rb_bloom_params_t small = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_STANDARD };
    rb_segment_info_t before, after;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_segment_info(wseg, &before), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "big", 3, &big), RB_ENOSPC);
    ck_assert_int_eq(rb_segment_info(wseg, &after), RB_OK);
    ck_assert_uint_eq(after.filters, 0);
    ck_assert_uint_eq(after.size, before.size);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "small", 5, &small), RB_OK);
}
END_TEST

/* Attach must never fail on a healthy segment that is growing (issue #10,
 * item 9: attach took the object's size before it read header.size, so a
 * growth in between looked like a truncated object, RB_ETRUNC).  A child
 * grows segments granule by granule, as reserving filters and adding
 * layers does, each to its reservation and then the next one; the parent
 * attaches to the current one over and over for GROW_SECONDS and at
 * least GROW_MIN_ATTACHES attaches (on a busy machine, until
 * GROW_MAX_SECONDS: then at least GROW_FLOOR, a count a machine ten times
 * slower still reaches, each racing a growth as much as any other).
 * Every attach succeeds, except RB_ENOENT when the child removed the
 * segment the parent was about to open. */
#define GROW_SECONDS 3.0
#define GROW_MAX_SECONDS 20.0
#define GROW_MIN_ATTACHES 100000u
#define GROW_FLOOR 5000u

typedef struct grow_shared {
    _Atomic uint32_t current;   /* generation the child is growing */
    _Atomic uint32_t stop;
} grow_shared_t;

static void grow_name(char *buf, size_t cap, uint32_t gen)
{
    snprintf(buf, cap, "%s.g%u", inst, gen);
}

static void grow_child(grow_shared_t *sh)
{
    rb_segment_opts_t o = { .mode = 0600, .max_size = 4u << 20, .max_filters = 4 };
    rb_segment_t *prev = NULL, *seg;
    char name[128];

    for (uint32_t gen = 1; !atomic_load(&sh->stop); gen++) {
        grow_name(name, sizeof(name), gen);
        if (rb_segment_create(name, &o, &seg) != RB_OK)
            _exit(1);
        atomic_store(&sh->current, gen);
        if (prev != NULL) {
            grow_name(name, sizeof(name), gen - 1);
            rb_segment_close(prev);
            rb_segment_unlink(name);
        }
        while (!atomic_load(&sh->stop) &&
               rbi_segment_grow(seg, rbi_seg_size(rbi_seg_map(seg)) + RBI_GROW_STEP) == RB_OK)
            ;
        prev = seg;
    }
    grow_name(name, sizeof(name), atomic_load(&sh->current));
    rb_segment_close(prev);
    rb_segment_unlink(name);
    _exit(0);
}

START_TEST(test_segment_attach_never_fails_while_growing)
{
    grow_shared_t *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    unsigned long ok = 0, gone = 0, trunc = 0, other = 0;
    struct timespec t0, t;
    double secs;
    uint32_t gens;
    char name[128];
    int status, last_other = RB_OK;
    pid_t pid;

    ck_assert(sh != MAP_FAILED);
    atomic_init(&sh->current, 0);
    atomic_init(&sh->stop, 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        grow_child(sh);
    }
    while (atomic_load(&sh->current) == 0) {
        ck_assert_int_eq(waitpid(pid, &status, WNOHANG), 0);
        usleep(1000);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int i = 0; i < 1000; i++) {
            rb_segment_t *r;
            int rc;
            grow_name(name, sizeof(name), atomic_load(&sh->current));
            rc = rb_segment_attach(name, 0, &r);
            if (rc == RB_OK) {
                rb_segment_close(r);
                ok++;
            } else if (rc == RB_ENOENT) {
                gone++;
            } else if (rc == RB_ETRUNC) {
                trunc++;
            } else {
                other++;
                last_other = rc;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        secs = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
    } while (secs < GROW_SECONDS ||
             (ok + gone + trunc + other < GROW_MIN_ATTACHES && secs < GROW_MAX_SECONDS));
    atomic_store(&sh->stop, 1);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    gens = atomic_load(&sh->current);
    printf("attach while growing: %lu attached, %lu removed meanwhile, %lu RB_ETRUNC, "
           "%lu other errors (generations %u) in %.1f s\n", ok, gone, trunc, other,
           (unsigned)gens, secs);
    fflush(stdout);
    munmap(sh, sizeof(*sh));
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "grower status %d", status);
    ck_assert_msg(trunc == 0 && other == 0, "%lu RB_ETRUNC, %lu other (last: %s) in %lu attaches",
                  trunc, other, rb_strerror(last_other), ok + gone + trunc + other);
    ck_assert_uint_ge(ok, GROW_FLOOR);
    ck_assert_uint_ge(gens, 2);   /* it grew, and moved on */
}
END_TEST

START_TEST(test_segment_takeover_keeps_ring_filters_and_heap)
{
    rb_bloom_params_t p = { .capacity = 20000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_ring_t *ring, *loaded;
    rb_bloom_t *bf;
    rb_node_t a, b;
    char key[160];

    create_default();
    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 50, &ring), RB_OK);
    ck_assert_int_eq(rb_ring_add(ring, "alpha", 5, 1), RB_OK);
    ck_assert_int_eq(rb_ring_add(ring, "beta", 4, 3), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ring, wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "f1", 2, &p), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "f1", 2, &bf), RB_OK);
    for (unsigned long i = 0; i < 5000; i++)
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "t", i)), 0);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_ring_lookup(wseg, "k", 1, &a), RB_OK);
    rb_segment_close(wseg);

    /* A new writer takes over the live segment. */
    ck_assert_int_eq(rb_segment_open_writer(inst, &wseg), RB_OK);
    ck_assert_int_eq(rb_ring_load(wseg, &loaded), RB_OK);
    ck_assert_uint_eq(rb_ring_node_count(loaded), 2);
    ck_assert_uint_eq(rb_ring_point_count(loaded), rb_ring_point_count(ring));
    ck_assert_int_eq(rb_ring_lookup(wseg, "k", 1, &b), RB_OK);
    ck_assert_str_eq(a.name, b.name);
    /* New allocations must not overlap the live filter. */
    ck_assert_int_eq(rb_bloom_reserve(wseg, "f2", 2, &p), RB_OK);
    ck_assert_int_eq(rb_ring_add(loaded, "gamma", 5, 4), RB_OK);
    ck_assert_int_eq(rb_ring_publish(loaded, wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "f1", 2, &bf), RB_OK);
    for (unsigned long i = 0; i < 5000; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), "t", i)), 1);
    rb_bloom_close(bf);
    rb_ring_free(ring);
    rb_ring_free(loaded);
}
END_TEST

START_TEST(test_segment_private_needs_no_name)
{
    rb_segment_t *p;
    rb_segment_info_t info;

    ck_assert_int_eq(rb_segment_create(NULL, NULL, &p), RB_OK);
    ck_assert_int_eq(rb_segment_info(p, &info), RB_OK);
    ck_assert_int_eq(info.writable, 1);
    ck_assert_int_eq(rb_segment_check(p), RB_OK);
    rb_segment_close(p);
}
END_TEST

/* A reader handle follows its instance to a new object: at once when the
 * old one is retired, and after the writer stops heartbeating. */
START_TEST(test_segment_reader_follows_restarted_writer)
{
    rb_bloom_params_t p = { .capacity = 1000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    rb_ring_t *r1, *r2;
    rb_segment_t *reader;
    rb_bloom_t *bf;
    rb_node_t n;

    create_default();
    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 10, &r1), RB_OK);
    ck_assert_int_eq(rb_ring_add(r1, "old", 3, 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r1, wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "f", 1, &p), RB_OK);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &reader), RB_OK);
    ck_assert_int_eq(rb_bloom_open(reader, "f", 1, &bf), RB_OK);
    ck_assert_int_eq(rb_segment_refresh(reader), 0);      /* nothing newer */

    /* A "restarted daemon": old object silent and unlinked, a new one
     * with the same names but other contents. */
    rbi_st(&rbi_hdr(rbi_seg_map(wseg))->heartbeat_ms, rbi_now_ms() - 10 * RBI_STALE_MS);
    rb_segment_close(wseg);
    ck_assert_int_eq(rb_segment_unlink(inst), RB_OK);
    ck_assert_int_eq(rb_segment_create(inst, NULL, &wseg), RB_OK);
    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 10, &r2), RB_OK);
    ck_assert_int_eq(rb_ring_add(r2, "new", 3, 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r2, wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "f", 1, &p), RB_OK);
    {
        rb_bloom_t *wb;
        ck_assert_int_eq(rb_bloom_open(wseg, "f", 1, &wb), RB_OK);
        ck_assert_int_eq(rb_bloom_add(wb, "k", 1), 1);
        rb_bloom_close(wb);
    }
    /* Without being told, lookups move within RBI_POLL_CALLS calls. */
    for (unsigned i = 0; i < 2 * RBI_POLL_CALLS; i++)
        ck_assert_int_eq(rb_ring_lookup(reader, "key", 3, &n), RB_OK);
    ck_assert_str_eq(n.name, "new");
    ck_assert_int_eq(rb_bloom_contains(bf, "k", 1), 1);   /* rebound to the new filter */

    /* Retiring moves a forced refresh at once; a new object must exist. */
    ck_assert_int_eq(rb_segment_retire(wseg, 2), RB_OK);
    ck_assert_int_eq(rb_segment_refresh(reader), 0);      /* same object, retired */
    rb_segment_close(wseg);
    ck_assert_int_eq(rb_segment_unlink(inst), RB_OK);
    ck_assert_int_eq(rb_segment_create(inst, NULL, &wseg), RB_OK);
    ck_assert_int_eq(rb_segment_refresh(reader), 1);
    ck_assert_int_eq(rb_ring_lookup(reader, "key", 3, &n), RB_EEMPTY);
    ck_assert_int_eq(rb_bloom_contains(bf, "k", 1), RB_ENOENT);
    rb_bloom_close(bf);
    rb_segment_close(reader);
    rb_ring_free(r1);
    rb_ring_free(r2);
}
END_TEST

/* Publishes a one-node ring named `node` on the writer wseg. */
static void publish_one(const char *node)
{
    rb_ring_t *r;

    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 10, &r), RB_OK);
    ck_assert_int_eq(rb_ring_add(r, node, strlen(node), 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(r, wseg), RB_OK);
    rb_ring_free(r);
}

/* A reader that named no owner trusts the owner of the object it attached
 * first, and no other: while the daemon is down another user may put an
 * object under the name (/dev/shm is writable by all), and following a
 * restart onto it would feed the reader that user's table and let it kill
 * the reader with SIGBUS by truncating the object.  The handle stays on
 * its mapping until an object of the first owner appears.  Needs root to
 * switch uid. */
START_TEST(test_segment_reader_follows_only_its_first_owner)
{
    rb_segment_t *reader;
    rb_node_t n;

    if (getuid() != 0) {
        printf("squatting test needs root to switch uid; running as uid %u it checks nothing\n",
               (unsigned)getuid());
        return;
    }
    create_default();
    publish_one("daemon");
    ck_assert_int_eq(rb_segment_attach(inst, 0, &reader), RB_OK);
    /* The daemon dies (silent, segment removed); a squatter moves in. */
    rbi_st(&rbi_hdr(rbi_seg_map(wseg))->heartbeat_ms, rbi_now_ms() - 10 * RBI_STALE_MS);
    rb_segment_close(wseg);
    wseg = NULL;
    ck_assert_int_eq(rb_segment_unlink(inst), RB_OK);
    rb_test_squat_segment(inst);
    ck_assert_int_eq(rb_segment_refresh(reader), 0);
    ck_assert_int_eq(rb_ring_lookup(reader, "key", 3, &n), RB_OK);
    ck_assert_str_eq(n.name, "daemon");
    /* The daemon's user (root here) clears it away and restarts. */
    ck_assert_int_eq(rb_segment_unlink(inst), RB_OK);
    create_default();
    publish_one("restarted");
    ck_assert_int_eq(rb_segment_refresh(reader), 1);
    ck_assert_int_eq(rb_ring_lookup(reader, "key", 3, &n), RB_OK);
    ck_assert_str_eq(n.name, "restarted");
    rb_segment_close(reader);
}
END_TEST

START_TEST(test_segment_dump_restore_roundtrip_and_corruption)
{
    rb_bloom_params_t p = { .capacity = 5000, .error_rate = 0.01, .layout = RB_BLOOM_BLOCKED };
    char inst2[96], key[160];
    rb_segment_t *copy, *r;
    rb_ring_t *ring;
    rb_bloom_t *bf;
    rb_node_t a, b;
    rb_test_dump_t d;
    rb_filter_shm_t *f;

    create_default();
    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 40, &ring), RB_OK);
    ck_assert_int_eq(rb_ring_add(ring, "n1", 2, 1), RB_OK);
    ck_assert_int_eq(rb_ring_add(ring, "n2", 2, 2), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ring, wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "seen", 4, &p), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "seen", 4, &bf), RB_OK);
    for (unsigned long i = 0; i < 12000; i++)   /* spills into a second layer */
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "d", i)), 0);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_segment_dump(wseg, rb_test_dump_fn, &d), RB_OK);

    rb_test_instance(inst2, sizeof(inst2));
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, d.len, &copy), RB_OK);
    ck_assert_int_eq(rb_segment_attach(inst2, 0, &r), RB_OK);
    ck_assert_int_eq(rb_bloom_open(r, "seen", 4, &bf), RB_OK);
    for (unsigned long i = 0; i < 12000; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, key, rb_test_key(key, sizeof(key), "d", i)), 1);
    for (unsigned long i = 0; i < 1000; i++) {
        size_t len = rb_test_key(key, sizeof(key), "k", i);
        ck_assert_int_eq(rb_ring_lookup(wseg, key, len, &a), RB_OK);
        ck_assert_int_eq(rb_ring_lookup(r, key, len, &b), RB_OK);
        ck_assert_str_eq(a.name, b.name);
    }
    rb_bloom_close(bf);
    rb_segment_close(r);
    /* The restored segment is a working writer segment too. */
    ck_assert_int_eq(rb_ring_add(ring, "n3", 2, 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ring, copy), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(copy, "more", 4, &p), RB_OK);
    rb_segment_close(copy);
    ck_assert_int_eq(rb_segment_unlink(inst2), RB_OK);

    /* A dump whose filter array overlaps the ring is refused, and leaves
     * nothing behind. */
    f = (rb_filter_shm_t *)(void *)(d.data + RBI_HEADER_SIZE);
    rbi_st(&f->layer[0].array_off, rbi_ld(&((rb_header_shm_t *)(void *)d.data)->ring.copy_off[0]));
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, d.len, &copy), RB_ECORRUPT);
    ck_assert_int_eq(rb_segment_unlink(inst2), RB_ENOENT);
    /* Truncated and foreign dumps. */
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, d.len / 2, &copy), RB_ETRUNC);
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, 100, &copy), RB_ETRUNC);
    memset(d.data, 'x', 8);
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, d.len, &copy), RB_ENOTOURS);
    ck_assert_int_eq(rb_segment_unlink(inst2), RB_ENOENT);
    free(d.data);
    rb_ring_free(ring);
}
END_TEST

/* Found by fuzz_attach (corpus/fuzz_attach/regress-inactive-copy-cap): a
 * takeover validated only the active ring copy, the next publish reused
 * the inactive one because its capacity word said it was large enough
 * (2^64 - 1, which the heap rebuild had rounded to 0 bytes), and published
 * a copy no reader or restore would accept.  A writer now forgets the
 * inactive copy when it adopts a segment, and the rebuild refuses such a
 * length. */
START_TEST(test_segment_takeover_forgets_inactive_copy)
{
    static const uint64_t bad_caps[] = { UINT64_MAX, 1, 1ULL << 40 };
    char key[64], inst2[96];
    rb_segment_t *w, *copy;
    rb_header_shm_t *h;
    rb_ring_t *ring;
    rb_node_t a, b;
    rb_test_dump_t d;
    unsigned inactive;
    int fd;

    rb_test_instance(inst2, sizeof(inst2));
    create_default();
    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 40, &ring), RB_OK);
    ck_assert_int_eq(rb_ring_add(ring, "n1", 2, 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ring, wseg), RB_OK);
    ck_assert_int_eq(rb_ring_add(ring, "n2", 2, 1), RB_OK);
    ck_assert_int_eq(rb_ring_publish(ring, wseg), RB_OK);   /* both copies exist */
    rb_segment_close(wseg);
    wseg = NULL;
    for (size_t i = 0; i < sizeof(bad_caps) / sizeof(bad_caps[0]); i++) {
        h = raw_map(&fd);
        inactive = (unsigned)(rbi_ld(&h->ring.seq) & 1) ^ 1;
        if (rbi_ld(&h->ring.copy_off[inactive]) == 0)   /* forgotten by the last takeover */
            rbi_st(&h->ring.copy_off[inactive], rbi_ld(&h->heap_offset));
        rbi_st(&h->ring.copy_cap[inactive], bad_caps[i]);
        raw_unmap(h, fd);
        ck_assert_int_eq(rb_segment_open_writer(inst, &w), RB_OK);
        ck_assert_int_eq(rb_ring_add(ring, key, (size_t)snprintf(key, sizeof(key), "m%zu", i), 1),
                         RB_OK);
        ck_assert_int_eq(rb_ring_publish(ring, w), RB_OK);
        ck_assert_int_eq(rb_segment_dump(w, rb_test_dump_fn, &d), RB_OK);
        ck_assert_msg(rb_segment_restore(inst2, NULL, d.data, d.len, &copy) == RB_OK, "cap %zu", i);
        for (unsigned long k = 0; k < 200; k++) {
            size_t len = rb_test_key(key, sizeof(key), "k", k);
            ck_assert_int_eq(rb_ring_lookup(w, key, len, &a), RB_OK);
            ck_assert_int_eq(rb_ring_lookup(copy, key, len, &b), RB_OK);
            ck_assert_str_eq(a.name, b.name);
        }
        rb_segment_close(copy);
        ck_assert_int_eq(rb_segment_unlink(inst2), RB_OK);
        free(d.data);
        rb_segment_close(w);
    }
    rb_ring_free(ring);
}
END_TEST

/* A snapshot survives the change of segment layout: tests/golden/
 * segment-layout1.dump.gz is what rb_segment_dump wrote with layout 1 (the
 * library of commit c252532): a ketama ring of 5 nodes (weights 1-3, one
 * node removed and another added after it, so the order of addition has
 * a gap; published twice, so both copies were in use) and a blocked filter
 * "seen" holding url-0 .. url-499.  segment-layout1.lookups is that
 * library's answer for key-0 .. key-199.  Restored by this library, the
 * ring answers the same, the filter holds its keys, and the restored
 * segment is of this layout (its dump restores again). */
/* The transaction mark (seg_txn.h, header word 136): set and cleared by
 * the writer only, kept by a takeover (the new writer decides what it
 * means), never carried by a dump into a restored segment, and 0 in a new
 * segment. */
START_TEST(test_segment_txn_mark_survives_takeover_not_restore)
{
    char inst2[96];
    rb_segment_t *r, *copy;
    rb_test_dump_t d;

    create_default();
    ck_assert_int_eq(rbi_segment_txn_open(wseg), 0);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    rbi_segment_txn_begin(r);   /* a reader's handle: ignored */
    ck_assert_int_eq(rbi_segment_txn_open(wseg), 0);
    rbi_segment_txn_begin(wseg);
    ck_assert_int_eq(rbi_segment_txn_open(r), 1);
    rbi_segment_txn_end(r);
    ck_assert_int_eq(rbi_segment_txn_open(wseg), 1);

    memset(&d, 0, sizeof(d));
    ck_assert_int_eq(rb_segment_dump(wseg, rb_test_dump_fn, &d), RB_OK);
    rb_test_instance(inst2, sizeof(inst2));
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, d.len, &copy), RB_OK);
    ck_assert_int_eq(rbi_segment_txn_open(copy), 0);
    rb_segment_close(copy);
    rb_segment_unlink(inst2);
    free(d.data);

    rb_segment_close(wseg);   /* the writer goes with the mark set */
    ck_assert_int_eq(rb_segment_open_writer(inst, &wseg), RB_OK);
    ck_assert_int_eq(rbi_segment_txn_open(wseg), 1);
    rbi_segment_txn_end(wseg);
    ck_assert_int_eq(rbi_segment_txn_open(r), 0);
    rb_segment_close(r);
}
END_TEST

/* A restore ends the object where its last live extent ends: a dump
 * whose tail is a deleted filter's free space restores to an object of
 * the live data's size (committed and resident), not the dump's, and
 * the restored writer grows it again as it needs. */
START_TEST(test_segment_restore_drops_the_free_tail)
{
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_bloom_params_t big = { .capacity = 25000000, .error_rate = 0.01,
                              .layout = RB_BLOOM_BLOCKED };
    rb_bloom_params_t small = { .capacity = 20000, .error_rate = 0.01 };
    rb_segment_memory_t mem;
    rb_test_dump_t d = { NULL, 0 };
    rb_segment_t *copy;
    rb_bloom_t *bf;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "keep", 4, &small), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "big", 3, &big), RB_OK);   /* the tail */
    ck_assert_int_eq(rb_bloom_delete(wseg, "big", 3), RB_OK);
    ck_assert_int_eq(rb_segment_dump(wseg, rb_test_dump_fn, &d), RB_OK);
    ck_assert_uint_gt(d.len, 28u << 20);
    ck_assert_int_eq(rb_segment_restore(NULL, NULL, d.data, d.len, &copy), RB_OK);
    ck_assert_int_eq(rb_segment_memory(copy, &mem), RB_OK);
    ck_assert_msg(mem.committed < (4u << 20) && mem.resident <= mem.used + (1u << 20),
                  "restored: %llu committed, %llu resident for %llu live of a %zu-byte dump",
                  (unsigned long long)mem.committed, (unsigned long long)mem.resident,
                  (unsigned long long)mem.used, d.len);
    ck_assert_int_eq(rb_bloom_open(copy, "keep", 4, &bf), RB_OK);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_bloom_reserve(copy, "big", 3, &big), RB_OK);   /* grows again */
    ck_assert_int_eq(rb_bloom_open(copy, "big", 3, &bf), RB_OK);
    ck_assert_int_ge(rb_bloom_add(bf, "x", 1), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "x", 1), 1);
    rb_bloom_close(bf);
    rb_segment_close(copy);
    free(d.data);
}
END_TEST

/* Mappings of this process of inst's object that was removed. */
static int deleted_mappings(const char *name)
{
    char line[512], want[160];
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0;

    ck_assert_ptr_nonnull(f);
    snprintf(want, sizeof(want), "/ringbloom.%s (deleted)", name);
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, want) != NULL;
    fclose(f);
    return n;
}

/* rb_segment_rebuild cuts the free tail of a live segment, readers
 * following: a deleted 32 MiB filter at the end leaves a tail
 * rb_segment_memory reports; the rebuilt object has the live data's
 * size, a new attach maps it before the old one is even retired (the
 * rename put it under the name), a reader attached before moves to it at
 * the retire and answers as before, lets go of the old object's mapping
 * after its grace, and no second object stays behind.
 * Refused for a private segment, a reader, and while a snapshot reads
 * the old object. */
START_TEST(test_segment_rebuild_cuts_the_tail_readers_follow)
{
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_bloom_params_t big = { .capacity = 25000000, .error_rate = 0.01,
                              .layout = RB_BLOOM_BLOCKED };
    rb_bloom_params_t small = { .capacity = 20000, .error_rate = 0.01 };
    rb_segment_memory_t mem;
    rb_segment_info_t si, ri;
    rb_segment_snap_t *snap;
    rb_segment_t *fresh, *r, *r2, *priv;
    rb_bloom_t *bf;
    struct stat st;
    char path[160];

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "keep", 4, &small), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "keep", 4, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_add(bf, "k1", 2), 1);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "big", 3, &big), RB_OK);   /* the tail */
    ck_assert_int_eq(rb_bloom_delete(wseg, "big", 3), RB_OK);
    ck_assert_int_eq(rb_segment_memory(wseg, &mem), RB_OK);
    ck_assert_uint_gt(mem.tail, 28u << 20);
    ck_assert_uint_le(mem.tail, mem.free);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    ck_assert_uint_eq(rb_segment_memory(r, &mem) == RB_OK ? mem.tail : 1, 0);

    ck_assert_int_eq(rb_segment_rebuild(r, NULL, &fresh), RB_EROFS);
    ck_assert_int_eq(rb_segment_create(NULL, NULL, &priv), RB_OK);
    ck_assert_int_eq(rb_segment_rebuild(priv, NULL, &fresh), RB_EINVAL);
    rb_segment_close(priv);
    ck_assert_int_eq(rb_segment_snap_begin(wseg, &snap), RB_OK);
    ck_assert_int_eq(rb_segment_rebuild(wseg, NULL, &fresh), RB_EBUSY);
    rb_segment_snap_end(snap, NULL);

    ck_assert_int_eq(rb_segment_info(wseg, &si), RB_OK);
    ck_assert_int_eq(rb_segment_rebuild(wseg, NULL, &fresh), RB_OK);
    ck_assert_int_eq(rb_segment_memory(fresh, &mem), RB_OK);
    ck_assert_msg(mem.committed < (4u << 20) && mem.tail < (1u << 20),
                  "rebuilt: %llu committed, tail %llu", (unsigned long long)mem.committed,
                  (unsigned long long)mem.tail);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r2), RB_OK);   /* the new object */
    ck_assert_int_eq(rb_segment_info(r2, &ri), RB_OK);
    ck_assert_uint_eq(ri.generation, si.generation + 1);
    rb_segment_close(r2);
    ck_assert_int_eq(rb_segment_retire(wseg, si.generation + 1), RB_OK);
    rb_segment_close(wseg);
    wseg = fresh;
    ck_assert_int_eq(rb_segment_refresh(r), 1);
    ck_assert_int_eq(rb_segment_info(r, &ri), RB_OK);
    ck_assert_uint_eq(ri.generation, si.generation + 1);
    ck_assert_int_eq(rb_bloom_open(r, "keep", 4, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, "k1", 2), 1);
    /* The reader keeps the old object mapped for its grace (10 s), then
     * lets go of it (follow.c): no mapping of a removed object is left. */
    ck_assert_int_eq(deleted_mappings(inst), 1);
    usleep(10500 * 1000);
    ck_assert_int_eq(rb_segment_refresh(r), 0);
    ck_assert_int_eq(deleted_mappings(inst), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "k1", 2), 1);
    rb_bloom_close(bf);
    rb_segment_close(r);
    snprintf(path, sizeof(path), "/dev/shm/ringbloom.%s~rebuild", inst);
    ck_assert_int_ne(stat(path, &st), 0);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "big", 3, &big), RB_OK);   /* grows again */
}
END_TEST

/* A writer killed inside a rebuild before its rename leaves the new
 * object under its second name (~rebuild).  Every way the instance's next
 * writer takes the name removes it: a takeover and a restore did; a
 * writer that starts from nothing (the segment removed, no snapshot: the
 * log replayed into a new segment) did not, and the object, as large as
 * the segment, stayed in /dev/shm for good. */
START_TEST(test_segment_create_drops_a_rebuild_left_behind)
{
    char path[160];
    struct stat st;
    int fd, left;

    snprintf(path, sizeof(path), "/dev/shm/ringbloom.%s~rebuild", inst);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
    close(fd);
    ck_assert_int_eq(rb_segment_create(inst, NULL, &wseg), RB_OK);
    left = stat(path, &st) == 0;
    if (left)
        unlink(path);   /* nothing of the test stays behind either way */
    ck_assert_msg(!left, "%s left behind by rb_segment_create", path);
}
END_TEST

/* A restore reads the live extents, not the dump: a 64 MiB filter filled
 * and deleted leaves its bytes in the dump (free space is not cleared);
 * with every page of the dump inside the writer's free space made
 * unreadable (PROT_NONE: a read is SIGSEGV), the restore succeeds and
 * answers as the writer did. */
START_TEST(test_segment_restore_reads_the_live_data)
{
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_bloom_params_t big = { .capacity = 55000000, .error_rate = 0.01,
                              .layout = RB_BLOOM_BLOCKED };
    rb_bloom_params_t small = { .capacity = 20000, .error_rate = 0.01 };
    rb_segment_t *copy;
    rb_bloom_t *bf;
    rb_test_dump_t d = { NULL, 0 };
    unsigned char *buf;
    uint64_t hidden = 0;
    char key[64];

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "big", 3, &big), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "big", 3, &bf), RB_OK);
    for (int i = 0; i < 300000; i++)   /* one 64-byte block each: every page touched */
        ck_assert_int_ge(rb_bloom_add(bf, key, (size_t)snprintf(key, sizeof(key), "b%d", i)), 0);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "keep", 4, &small), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "keep", 4, &bf), RB_OK);
    for (int i = 0; i < 2000; i++)
        ck_assert_int_ge(rb_bloom_add(bf, key, (size_t)snprintf(key, sizeof(key), "k%d", i)), 0);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_bloom_delete(wseg, "big", 3), RB_OK);
    ck_assert_int_eq(rb_segment_dump(wseg, rb_test_dump_fn, &d), RB_OK);
    ck_assert_uint_gt(d.len, 64u << 20);
    buf = mmap(NULL, d.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(buf != MAP_FAILED);
    memcpy(buf, d.data, d.len);
    ck_assert_int_eq(wseg->heap.built, 1);
    for (size_t i = 0; i < wseg->heap.n; i++) {
        uint64_t lo = (wseg->heap.free[i].off + 4095) / 4096 * 4096;
        uint64_t hi = (wseg->heap.free[i].off + wseg->heap.free[i].len) / 4096 * 4096;
        if (hi > d.len)
            hi = d.len;
        if (lo < hi) {
            ck_assert_int_eq(mprotect(buf + lo, (size_t)(hi - lo), PROT_NONE), 0);
            hidden += hi - lo;
        }
    }
    ck_assert_uint_gt(hidden, 64u << 20);   /* the deleted filter's pages among them */

    ck_assert_int_eq(rb_segment_restore(NULL, NULL, buf, d.len, &copy), RB_OK);
    {
        /* The restored object holds the live data: the free space is not
         * reserved (the allocator backs an extent before handing it out). */
        rb_segment_memory_t mem;
        ck_assert_int_eq(rb_segment_memory(copy, &mem), RB_OK);
        ck_assert_msg(mem.resident <= mem.used + (1u << 20), "restored: %llu resident for %llu live",
                      (unsigned long long)mem.resident, (unsigned long long)mem.used);
    }
    ck_assert_int_eq(rb_bloom_open(copy, "keep", 4, &bf), RB_OK);
    for (int i = 0; i < 2000; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, key, (size_t)snprintf(key, sizeof(key), "k%d", i)),
                         1);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_bloom_open(copy, "big", 3, &bf), RB_ENOENT);
    /* Space handed out again is backed first: a new filter there works. */
    ck_assert_int_eq(rb_bloom_reserve(copy, "again", 5, &big), RB_OK);
    ck_assert_int_eq(rb_bloom_open(copy, "again", 5, &bf), RB_OK);
    ck_assert_int_ge(rb_bloom_add(bf, "x", 1), 0);
    ck_assert_int_eq(rb_bloom_contains(bf, "x", 1), 1);
    rb_bloom_close(bf);
    rb_segment_close(copy);
    munmap(buf, d.len);
    free(d.data);
}
END_TEST

/* The fuzz_attach seeds (tests/fuzz/corpus/fuzz_attach/) are segments of
 * this layout, so the fuzzer starts past the header checks: a layout bump
 * without new seeds left every seed refused with RB_EVERSION and the
 * target covering 43 edges instead of about a thousand.  Each seed is
 * placed as fuzz_attach places it (padded to its committed size); every
 * seed in the directory must carry this version (the regress-* ones may
 * then be refused for what they test), and the daemon's live segment
 * must attach. */
START_TEST(test_segment_fuzz_seeds_are_this_layout)
{
    const char *src = getenv("srcdir");
    unsigned char *buf = malloc(1 << 20);
    char dir[PATH_MAX], path[PATH_MAX + 256], shm[160];
    int seeds = 0, live = 0;
    struct dirent *e;
    DIR *d;

    ck_assert_ptr_nonnull(buf);
    snprintf(shm, sizeof(shm), "/ringbloom.%s", inst);
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/fuzz_attach", src ? src : ".");
    ck_assert_msg((d = opendir(dir)) != NULL, "%s", dir);
    while ((e = readdir(d)) != NULL) {   /* every seed, a new one too */
        uint64_t version, committed, want;
        rb_segment_t *r = NULL;
        size_t len;
        FILE *f;
        int fd, rc;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        ck_assert_msg((f = fopen(path, "rb")) != NULL, "%s", path);
        len = fread(buf, 1, 1 << 20, f);
        fclose(f);
        ck_assert_uint_ge(len, 56);
        memcpy(&version, buf + 8, 8);
        memcpy(&committed, buf + 48, 8);
        ck_assert_msg(version == RBI_LAYOUT_VERSION, "%s: layout %llu, this library's is %u "
                      "(tests/fuzz/make-corpus.sh makes new seeds)", e->d_name,
                      (unsigned long long)version, (unsigned)RBI_LAYOUT_VERSION);
        want = committed > len && committed <= (64u << 20) ? committed : len;
        ck_assert_int_ge(fd = shm_open(shm, O_RDWR | O_CREAT | O_EXCL, 0600), 0);
        ck_assert_int_eq(ftruncate(fd, (off_t)want), 0);
        ck_assert_int_eq(pwrite(fd, buf, len, 0), (ssize_t)len);
        close(fd);
        rc = rb_segment_attach(inst, RB_ATTACH_STALE_OK, &r);
        printf("fuzz seed %s: layout %llu, attach: %s\n", e->d_name,
               (unsigned long long)version, rb_strerror(rc));
        if (strcmp(e->d_name, "live-segment") == 0) {
            ck_assert_msg(rc == RB_OK, "live-segment: %s", rb_strerror(rc));
            live = 1;
        }
        rb_segment_close(r);
        ck_assert_int_eq(shm_unlink(shm), 0);
        seeds++;
    }
    closedir(d);
    ck_assert_msg(live, "%s: no live-segment", dir);
    ck_assert_int_ge(seeds, 6);   /* the live segment and the five regress-* ones */
    free(buf);
}
END_TEST

START_TEST(test_segment_restore_layout1_dump)
{
    const char *dir = getenv("srcdir");
    char path[PATH_MAX], inst2[96], key[64], want[128];
    unsigned char *buf = aligned_alloc(64, 1 << 20);
    rb_segment_t *copy, *again;
    rb_bloom_t *bf;
    rb_node_t n;
    rb_test_dump_t d;
    gzFile gz;
    FILE *f;
    int len, count = 0;

    ck_assert_ptr_nonnull(buf);
    snprintf(path, sizeof(path), "%s/tests/golden/segment-layout1.dump.gz", dir ? dir : ".");
    ck_assert_msg((gz = gzopen(path, "rb")) != NULL, "%s", path);
    len = gzread(gz, buf, 1 << 20);
    gzclose(gz);
    ck_assert_int_eq(len, 131072);
    ck_assert_uint_eq(rbi_ld(&((rb_header_shm_t *)(void *)buf)->version), 1);
    rb_test_instance(inst2, sizeof(inst2));
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, buf, (size_t)len, &copy), RB_OK);
    snprintf(path, sizeof(path), "%s/tests/golden/segment-layout1.lookups", dir ? dir : ".");
    ck_assert_msg((f = fopen(path, "r")) != NULL, "%s", path);
    while (fscanf(f, "%63s %127s", key, want) == 2) {
        ck_assert_int_eq(rb_ring_lookup(copy, key, strlen(key), &n), RB_OK);
        ck_assert_str_eq(n.name, want);
        count++;
    }
    fclose(f);
    ck_assert_int_eq(count, 200);
    ck_assert_int_eq(rb_bloom_open(copy, "seen", 4, &bf), RB_OK);
    for (int i = 0; i < 500; i++)
        ck_assert_int_eq(rb_bloom_contains(bf, key, (size_t)snprintf(key, sizeof(key), "url-%d", i)), 1);
    rb_bloom_close(bf);
    ck_assert_int_eq(rb_segment_dump(copy, rb_test_dump_fn, &d), RB_OK);
    ck_assert_uint_eq(rbi_ld(&((rb_header_shm_t *)(void *)d.data)->version), RBI_LAYOUT_VERSION);
    rb_segment_close(copy);
    ck_assert_int_eq(rb_segment_unlink(inst2), RB_OK);
    ck_assert_int_eq(rb_segment_restore(inst2, NULL, d.data, d.len, &again), RB_OK);
    ck_assert_int_eq(rb_ring_lookup(again, "key-0", 5, &n), RB_OK);
    rb_segment_close(again);
    ck_assert_int_eq(rb_segment_unlink(inst2), RB_OK);
    free(d.data);
    free(buf);
}
END_TEST

/* ---- dumps while the writer goes on (rb_segment_snap_*, snap.h) ------------ */

typedef struct snap_out {
    unsigned char *data;
    size_t len, cap;
    int slow;          /* sleep after each piece, so the writer runs ahead */
    uint64_t holes;    /* bytes passed as holes (rb_segment_snap_dump_sparse) */
    unsigned char *hole;   /* per 4 KiB page of the dump: 1 if a hole (NULL: none kept) */
} snap_out_t;

static int snap_fn(const void *data, size_t len, void *arg)
{
    snap_out_t *o = arg;

    ck_assert_uint_le(len, 1u << 20);
    ck_assert_uint_le(o->len + len, o->cap);
    memcpy(o->data + o->len, data, len);
    o->len += len;
    if (o->slow)
        usleep(3000);
    return 0;
}

/* A hole: zeros in the logical dump, its pages noted. */
static int snap_hole(uint64_t len, void *arg)
{
    snap_out_t *o = arg;

    ck_assert_uint_eq(len % 4096, 0);
    ck_assert_uint_eq(o->len % 4096, 0);
    ck_assert_uint_le(o->len + len, o->cap);
    memset(o->data + o->len, 0, (size_t)len);
    for (uint64_t p = 0; o->hole != NULL && p < len; p += 4096)
        o->hole[(o->len + p) / 4096] = 1;
    o->len += (size_t)len;
    o->holes += len;
    return 0;
}

/* The dump, sparse (holes to snap_hole) when the output keeps a hole map. */
static void *snap_thread(void *arg)
{
    void **a = arg;
    snap_out_t *o = a[1];

    if (o->hole != NULL)
        return (void *)(intptr_t)rb_segment_snap_dump_sparse(a[0], snap_fn, snap_hole, o);
    return (void *)(intptr_t)rb_segment_snap_dump(a[0], snap_fn, o);
}

/* Restores a dump privately and dumps the result (live extents only: the
 * rest of a restored heap is zeros). */
static void restored_dump(const void *data, size_t len, rb_test_dump_t *out)
{
    rb_segment_t *copy;

    ck_assert_int_eq(rb_segment_restore(NULL, NULL, data, len, &copy), RB_OK);
    ck_assert_int_eq(rb_segment_dump(copy, rb_test_dump_fn, out), RB_OK);
    rb_segment_close(copy);
}

/* Every kind of heap store a writer makes: bits (standard, blocked,
 * aging), new layers, arrays replaced by resets and rotations (whose freed
 * space the next allocations reuse), a new filter, ring copies rewritten
 * and moved. */
/* HyperLogLog's stores (hll.c): registers raised by adds and a merge, a
 * counter made (its registers zeroed) and one deleted. */
static void snap_churn_hll(rb_segment_t *seg, int round)
{
    char key[160], name[32];
    rb_key_t e = { key, 0 }, src = { "hll", 3 };

    for (unsigned long i = 0; i < 3000; i++) {
        e.len = rb_test_key(key, sizeof(key), "h", (unsigned long)round * 3000 + i);
        ck_assert_int_ge(rb_hll_add(seg, "hll", 3, &e, 1), 0);
    }
    snprintf(name, sizeof(name), "hll%d", round);
    ck_assert_int_eq(rb_hll_merge(seg, name, strlen(name), &src, 1), RB_OK);
    if (round > 0) {
        snprintf(name, sizeof(name), "hll%d", round - 1);
        ck_assert_int_eq(rb_hll_delete(seg, name, strlen(name)), RB_OK);
    }
}

/* A count-min sketch's changes: in-place counter stores, halvings and a
 * merge (fresh arrays published), into two sketches of one secret made at
 * round 0. */
static void snap_churn_cms(rb_segment_t *seg, int round)
{
    static const unsigned char secret[RB_BLOOM_SECRET_BYTES] = { 7 };
    rb_cms_params_t cp = { .width = 3000, .depth = 4, .aging = 5000, .secret = secret };
    const char *src[1] = { "cms" };
    size_t slen[1] = { 3 };
    char key[160];

    if (round == 0) {
        ck_assert_int_eq(rb_cms_create(seg, "cms", 3, &cp), RB_OK);
        ck_assert_int_eq(rb_cms_create(seg, "cm2", 3, &cp), RB_OK);
    }
    for (unsigned long i = 0; i < 6000; i++) {
        rb_key_t k = { key, rb_test_key(key, sizeof(key), "m", (unsigned long)round * 6000 + i) };
        uint64_t one = 1;
        ck_assert_int_eq(rb_cms_incrby(seg, "cms", 3, &k, &one, 1, NULL), RB_OK);
    }
    ck_assert_int_eq(rb_cms_merge(seg, "cm2", 3, src, slen, 1, NULL), RB_OK);
}

/* A cuckoo filter's changes (cuckoo_write.c): fingerprints stored,
 * moved (a small filter at high load) and deleted, layers added, into a
 * filter made at round 0. */
static void snap_churn_cuckoo(rb_segment_t *seg, int round)
{
    static const unsigned char secret[RB_BLOOM_SECRET_BYTES] = { 9 };
    rb_cuckoo_params_t cp = { .capacity = 1000, .bucket_size = 2, .max_iterations = 50,
                              .expansion = 2, .fp_bits = 12, .secret = secret };
    char key[160];

    if (round == 0)
        ck_assert_int_eq(rb_cuckoo_reserve(seg, "cf", 2, &cp), RB_OK);
    for (unsigned long i = 0; i < 3000; i++) {
        size_t len = rb_test_key(key, sizeof(key), "u", (unsigned long)round * 3000 + i);
        ck_assert_int_eq(rb_cuckoo_add(seg, "cf", 2, key, len, 0), 1);
        if (i % 4 == 0)
            ck_assert_int_eq(rb_cuckoo_del(seg, "cf", 2, key, len), 1);
    }
}

/* A counting Bloom filter's changes (cbf_write.c): counters raised and
 * lowered in place, into a filter made at round 0. */
static void snap_churn_cbf(rb_segment_t *seg, int round)
{
    static const unsigned char secret[RB_BLOOM_SECRET_BYTES] = { 11 };
    rb_cbf_params_t cp = { .capacity = 100000, .error_rate = 0.01, .counter_bits = 4,
                           .secret = secret };
    char key[160];

    if (round == 0)
        ck_assert_int_eq(rb_cbf_reserve(seg, "cbf", 3, &cp), RB_OK);
    for (unsigned long i = 0; i < 3000; i++) {
        size_t len = rb_test_key(key, sizeof(key), "v", (unsigned long)round * 3000 + i);
        ck_assert_int_eq(rb_cbf_add(seg, "cbf", 3, key, len), 1);
        if (i % 4 == 0)
            ck_assert_int_eq(rb_cbf_del(seg, "cbf", 3, key, len), 1);
    }
}

static void snap_churn(rb_segment_t *seg, rb_ring_t *ring, int round)
{
    static const char *names[] = { "std", "blk", "age" };
    rb_bloom_params_t p = { .capacity = 3000, .error_rate = 0.01,
                            .layout = RB_BLOOM_BLOCKED };
    char key[160];
    rb_bloom_t *bf;

    for (int f = 0; f < 3; f++) {
        ck_assert_int_eq(rb_bloom_open(seg, names[f], 3, &bf), RB_OK);
        for (unsigned long i = 0; i < 4000; i++)
            ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "c", 
                                                                 (unsigned long)round * 4000 + i)), 0);
        if (f == 1 && round % 2 == 0)
            ck_assert_int_eq(rb_bloom_reset(bf), RB_OK);
        if (f == 2)
            ck_assert_int_eq(rb_bloom_rotate(bf), RB_OK);
        rb_bloom_close(bf);
    }
    if (round > 0) {   /* a delete, whose slot and arrays the reserve below reuses */
        snprintf(key, sizeof(key), "new%d", round - 1);
        ck_assert_int_eq(rb_bloom_delete(seg, key, strlen(key)), RB_OK);
    }
    snprintf(key, sizeof(key), "new%d", round);
    ck_assert_int_eq(rb_bloom_reserve(seg, key, strlen(key), &p), RB_OK);
    snap_churn_hll(seg, round);
    snap_churn_cms(seg, round);
    snap_churn_cuckoo(seg, round);
    snap_churn_cbf(seg, round);
    for (int n = 0; n < 30; n++) {
        snprintf(key, sizeof(key), "node-%d-%d", round, n);
        ck_assert_int_eq(rb_ring_add(ring, key, strlen(key), 1 + (unsigned)n % 3), RB_OK);
        ck_assert_int_eq(rb_ring_publish(ring, seg), RB_OK);
    }
}

/* The dump is the segment at begin, byte for byte, but for its holes (the
 * heap pages free at begin, zeros: rb_segment_snap_dump_sparse passes them
 * to its hole callback), whether the writer's changes all come before the
 * dump reaches their pages (each page saved by the writer), while it runs,
 * or not at all; and it restores to what the whole segment at begin
 * restores to: no hole held anything live. */
START_TEST(test_segment_snap_is_the_state_at_begin)
{
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_bloom_params_t std = { .capacity = 2000, .error_rate = 0.001,
                              .layout = RB_BLOOM_STANDARD };
    rb_bloom_params_t blk = { .capacity = 50000, .error_rate = 0.01,
                              .layout = RB_BLOOM_BLOCKED };
    rb_bloom_params_t age = { .capacity = 20000, .error_rate = 0.01,
                              .layout = RB_BLOOM_BLOCKED, .flags = RB_BLOOM_AGING,
                              .generations = 3 };
    rb_segment_snap_t *snap;
    rb_segment_t *copy;
    rb_ring_t *ring;
    rb_test_dump_t ref;
    snap_out_t out;
    uint64_t saved, holes;
    pthread_t t;
    void *targ[2], *res;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_ring_new(RB_RING_XXH3, 160, &ring), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "std", 3, &std), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "blk", 3, &blk), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "age", 3, &age), RB_OK);
    snap_churn(wseg, ring, 0);

    for (int mode = 0; mode < 3; mode++) {   /* changes before / during / none */
        ck_assert_int_eq(rb_segment_dump(wseg, rb_test_dump_fn, &ref), RB_OK);
        ck_assert_int_eq(rb_segment_snap_begin(wseg, &snap), RB_OK);
        ck_assert_int_eq(rb_segment_snap_begin(wseg, &(rb_segment_snap_t *){ NULL }), RB_EBUSY);
        ck_assert_uint_eq(rb_segment_snap_size(snap), ref.len);
        out.cap = ref.len;
        out.len = 0;
        out.data = malloc(out.cap);
        out.slow = mode == 1;
        out.holes = 0;
        out.hole = mode < 2 ? calloc(ref.len / 4096 + 1, 1) : NULL;   /* mode 2: plain dump */
        ck_assert_ptr_nonnull(out.data);
        if (mode == 0)
            snap_churn(wseg, ring, 1);
        targ[0] = snap;
        targ[1] = &out;
        ck_assert_int_eq(pthread_create(&t, NULL, snap_thread, targ), 0);
        if (mode == 1)
            for (int r = 2; r < 5; r++)
                snap_churn(wseg, ring, r);
        ck_assert_int_eq(pthread_join(t, &res), 0);
        ck_assert_int_eq((int)(intptr_t)res, RB_OK);
        /* Freed arrays (deletes, resets, rotations) and the committed
         * tail leave holes; the sparse dump reports what begin counted
         * (asked before the end frees the snapshot). */
        holes = rb_segment_snap_holes(snap);
        rb_segment_snap_end(snap, &saved);
        ck_assert_uint_eq(out.len, ref.len);
        ck_assert_uint_gt(holes, 0);
        if (out.hole != NULL)
            ck_assert_uint_eq(out.holes, holes);
        for (size_t pg = 0; pg < ref.len / 4096; pg++) {
            int same = memcmp(out.data + pg * 4096, ref.data + pg * 4096, 4096) == 0;
            int zero = out.data[pg * 4096] == 0 &&
                       memcmp(out.data + pg * 4096, out.data + pg * 4096 + 1, 4095) == 0;
            ck_assert_msg(out.hole != NULL ? (out.hole[pg] ? zero : same) : (same || zero),
                          "mode %d: page %zu of the dump differs from the segment at begin",
                          mode, pg);
        }
        {
            rb_test_dump_t a = { NULL, 0 }, b = { NULL, 0 };
            restored_dump(out.data, out.len, &a);
            restored_dump(ref.data, ref.len, &b);
            ck_assert_uint_eq(a.len, b.len);
            ck_assert_msg(memcmp(a.data + RBI_HEADER_SIZE, b.data + RBI_HEADER_SIZE,
                                 a.len - RBI_HEADER_SIZE) == 0, "mode %d: a hole held live "
                          "bytes: the restores differ", mode);
            free(a.data);
            free(b.data);
        }
        free(out.hole);
        if (mode < 2) {
            /* The test can fail: the writer did change the dumped bytes
             * (mode 0: all before the dump began, so every page it stored
             * into was saved; mode 1: some, as the race goes). */
            rb_test_dump_t now;
            if (mode == 0)
                ck_assert_uint_gt(saved, 0);
            ck_assert_int_eq(rb_segment_dump(wseg, rb_test_dump_fn, &now), RB_OK);
            ck_assert(now.len != ref.len || memcmp(now.data, ref.data, ref.len) != 0);
            free(now.data);
        } else {
            ck_assert_uint_eq(saved, 0);
        }
        ck_assert_int_eq(rb_segment_restore(NULL, NULL, out.data, out.len, &copy), RB_OK);
        rb_segment_close(copy);
        free(out.data);
        free(ref.data);
    }
    /* Over: the writer's stores cost nothing more, and a new one begins. */
    ck_assert_ptr_null(wseg->snap);
    ck_assert_int_eq(rb_segment_snap_begin(wseg, &snap), RB_OK);
    rb_segment_snap_end(snap, NULL);
    rb_ring_free(ring);
}
END_TEST

/* The writer's saves come from the pool of pages the dump prepares (snap.c)
 * and, once it is empty, from malloc; the dump hands each pool page back
 * after writing it out: through all of that the dump is still the segment
 * at begin.  A 24 MB filter whose every page the writer stores into while
 * a slow dump runs.  The dump starts after the writer's first 200,000
 * adds (every page, all but surely, saved by then), so the saves exceed
 * what the pool holds whatever the two threads' speeds: with both started
 * together an ASan writer, slower than its dump, made only 4017 saves.
 * (The dump cannot be held back inside its callback instead: the page it
 * is emitting stays BUSY there, and the writer waits for it.) */
START_TEST(test_segment_snap_pool_pages_are_the_frozen_bytes)
{
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_bloom_params_t p = { .capacity = 20000000, .error_rate = 0.01,
                            .layout = RB_BLOOM_BLOCKED };
    rb_segment_snap_t *snap;
    rb_test_dump_t ref;
    snap_out_t out = { 0 };
    uint64_t saved, pooled;
    rb_bloom_t *bf;
    char key[64];
    pthread_t t;
    void *targ[2], *res;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "big", 3, &p), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "big", 3, &bf), RB_OK);
    for (unsigned long i = 0; i < 200000; i++)
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "a", i)), 0);
    ck_assert_int_eq(rb_segment_dump(wseg, rb_test_dump_fn, &ref), RB_OK);
    ck_assert_int_eq(rb_segment_snap_begin(wseg, &snap), RB_OK);
    out.cap = ref.len;
    out.data = malloc(out.cap);
    out.slow = 1;
    out.hole = calloc(ref.len / 4096 + 1, 1);
    ck_assert_ptr_nonnull(out.data);
    targ[0] = snap;
    targ[1] = &out;
    for (unsigned long i = 0; i < 600000; i++) {
        ck_assert_int_ge(rb_bloom_add(bf, key, rb_test_key(key, sizeof(key), "b", i)), 0);
        if (i == 200000)
            ck_assert_int_eq(pthread_create(&t, NULL, snap_thread, targ), 0);
    }
    ck_assert_int_eq(pthread_join(t, &res), 0);
    ck_assert_int_eq((int)(intptr_t)res, RB_OK);
    pooled = rbi_snap_pooled(snap);
    rb_segment_snap_end(snap, &saved);
    printf("pool: %llu of %llu saved pages from the pool\n", (unsigned long long)pooled,
           (unsigned long long)(saved / 4096));
    ck_assert_uint_gt(pooled, 0);                 /* the pool served */
    ck_assert_uint_gt(saved / 4096, 4096);        /* more than it holds at once */
    ck_assert_uint_eq(out.len, ref.len);
    for (size_t pg = 0; pg < ref.len / 4096; pg++)
        ck_assert_msg(out.hole[pg] || memcmp(out.data + pg * 4096, ref.data + pg * 4096,
                                             4096) == 0,
                      "page %zu of the dump differs from the segment at begin", pg);
    rb_bloom_close(bf);
    free(out.hole);
    free(out.data);
    free(ref.data);
}
END_TEST

/* One writer at a time: a second takeover is refused while the first
 * lives (its process holds a lock on the object), in any process. */
START_TEST(test_segment_second_writer_is_refused)
{
    rb_segment_t *other = NULL;
    pid_t pid;
    int status;

    create_default();
    ck_assert_int_eq(rb_segment_open_writer(inst, &other), RB_EBUSY);
    ck_assert_ptr_null(other);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rb_segment_t *o;
        _exit(rb_segment_open_writer(inst, &o) == RB_EBUSY ? 0 : 1);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    rb_segment_close(wseg);      /* the lock goes with the writer */
    ck_assert_int_eq(rb_segment_open_writer(inst, &wseg), RB_OK);
}
END_TEST

/* The object's allocated bytes (tmpfs counts the pages it holds). */
static uint64_t object_bytes(void)
{
    rb_segment_memory_t mem;

    ck_assert_int_eq(rb_segment_memory(wseg, &mem), RB_OK);
    return mem.resident;
}

/* Reserves filter `name` of about `mb` MiB of bits and adds keys spread
 * over all of it, so every page of its array holds set bits. */
static void fill_big(const char *name, unsigned mb)
{
    rb_bloom_params_t p = { .capacity = (uint64_t)mb * 1000000u, .error_rate = 0.05,
                            .layout = RB_BLOOM_BLOCKED };
    rb_bloom_t *bf;
    char key[32];

    ck_assert_int_eq(rb_bloom_reserve(wseg, name, strlen(name), &p), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, name, strlen(name), &bf), RB_OK);
    for (unsigned i = 0; i < 200000; i++) {
        int n = snprintf(key, sizeof(key), "big-%u", i);
        ck_assert_int_ge(rb_bloom_add(bf, key, (size_t)n), 0);
    }
    rb_bloom_close(bf);
}

/* Every key of the small filter still answers 1. */
static void keep_answers(void)
{
    rb_bloom_t *bf;
    char key[32];

    ck_assert_int_eq(rb_bloom_open(wseg, "keep", 4, &bf), RB_OK);
    for (unsigned i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof(key), "keep-%u", i);
        ck_assert_int_eq(rb_bloom_contains(bf, key, (size_t)n), 1);
    }
    rb_bloom_close(bf);
}

/* Freed heap space goes back to the system: after a ~30 MB filter is
 * deleted, the object's allocated bytes come within a few pages per live
 * extent of the live data (before, they stayed at the committed size);
 * the object's size does not change; a delete during a snapshot keeps its
 * pages until rb_segment_trim after the snapshot; freed pages are taken
 * again (and read as zeros) by the next filter. */
START_TEST(test_segment_freed_pages_go_back)
{
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    rb_bloom_params_t small = { .capacity = 1000, .error_rate = 0.01 };
    const uint64_t slack = 1u << 20;   /* partial pages, the ring, the list */
    rb_segment_memory_t mem;
    rb_segment_snap_t *snap;
    rb_bloom_t *bf;
    uint64_t committed;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_bloom_reserve(wseg, "keep", 4, &small), RB_OK);
    ck_assert_int_eq(rb_bloom_open(wseg, "keep", 4, &bf), RB_OK);
    for (unsigned i = 0; i < 1000; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "keep-%u", i);
        ck_assert_int_ge(rb_bloom_add(bf, key, (size_t)n), 0);
    }
    rb_bloom_close(bf);

    fill_big("big", 30);
    ck_assert_int_eq(rb_segment_memory(wseg, &mem), RB_OK);
    ck_assert_uint_gt(mem.used, 20u << 20);
    ck_assert_uint_ge(mem.resident, mem.used - slack);
    committed = mem.committed;
    ck_assert_int_eq(rb_bloom_delete(wseg, "big", 3), RB_OK);
    ck_assert_int_eq(rb_segment_memory(wseg, &mem), RB_OK);
    ck_assert_uint_lt(mem.used, 1u << 20);
    ck_assert_uint_eq(mem.committed, committed);          /* the size stays */
    ck_assert_uint_eq(mem.free, mem.committed - mem.used);
    ck_assert_msg(mem.resident <= mem.used + slack, "resident %llu for %llu live bytes",
                  (unsigned long long)mem.resident, (unsigned long long)mem.used);
    keep_answers();

    /* Taken again: the punched pages come back, zeroed. */
    fill_big("big", 30);
    ck_assert_uint_ge(object_bytes(), 20u << 20);
    ck_assert_int_eq(rb_bloom_open(wseg, "big", 3, &bf), RB_OK);
    ck_assert_int_eq(rb_bloom_contains(bf, "big-7", 5), 1);
    rb_bloom_close(bf);

    /* During a snapshot a delete keeps its pages (S1): they go at the
     * trim after it. */
    ck_assert_int_eq(rb_segment_snap_begin(wseg, &snap), RB_OK);
    ck_assert_int_eq(rb_bloom_delete(wseg, "big", 3), RB_OK);
    ck_assert_int_eq(rb_segment_memory(wseg, &mem), RB_OK);
    ck_assert_uint_gt(mem.unreleased, 20u << 20);
    ck_assert_uint_gt(mem.resident, 20u << 20);
    ck_assert_int_eq(rb_segment_trim(wseg, 1), RB_EBUSY);
    ck_assert_uint_gt(object_bytes(), 20u << 20);
    rb_segment_snap_end(snap, NULL);
    ck_assert_int_eq(rb_segment_trim(wseg, 0), RB_OK);
    ck_assert_int_eq(rb_segment_memory(wseg, &mem), RB_OK);
    ck_assert_uint_eq(mem.unreleased, 0);
    ck_assert_uint_le(mem.resident, mem.used + slack);
    keep_answers();
}
END_TEST

/* A reader's handle: rb_segment_memory works there too (no unreleased),
 * and trimming is the writer's. */
/* A reader reading freed space (a stale section does) faults pages back
 * into the holes; the sweep (rb_segment_trim with sweep 1) gives them
 * back, while a trim without it leaves them (nothing was pending). */
START_TEST(test_segment_sweep_takes_back_reader_faults)
{
    rb_segment_opts_t o = { .max_size = 256u << 20 };
    const uint64_t slack = 1u << 20;
    rb_segment_memory_t mem;
    rb_segment_t *r = NULL;
    const volatile unsigned char *base;
    unsigned sum = 0;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    fill_big("big", 20);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    ck_assert_int_eq(rb_bloom_delete(wseg, "big", 3), RB_OK);
    ck_assert_int_eq(rb_segment_memory(wseg, &mem), RB_OK);
    ck_assert_uint_le(mem.resident, mem.used + slack);
    base = rbi_seg_map(r)->base;
    for (uint64_t at = mem.used; at < mem.committed; at += 4096)
        sum += base[at];
    ck_assert_uint_eq(sum, 0);                      /* holes read as zeros */
    ck_assert_uint_gt(object_bytes(), mem.used + (10u << 20));
    ck_assert_int_eq(rb_segment_trim(wseg, 0), RB_OK);
    ck_assert_uint_gt(object_bytes(), mem.used + (10u << 20));
    ck_assert_int_eq(rb_segment_trim(wseg, 1), RB_OK);
    ck_assert_uint_le(object_bytes(), mem.used + slack);
    rb_segment_close(r);
}
END_TEST

START_TEST(test_segment_memory_on_reader_and_private)
{
    rb_segment_t *r = NULL, *priv = NULL;
    rb_segment_memory_t a, b;

    create_default();
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    ck_assert_int_eq(rb_segment_memory(wseg, &a), RB_OK);
    ck_assert_int_eq(rb_segment_memory(r, &b), RB_OK);
    ck_assert_uint_eq(a.used, b.used);
    ck_assert_uint_eq(a.resident, b.resident);
    ck_assert_uint_gt(b.resident, 0);
    ck_assert_uint_eq(b.unreleased, 0);
    ck_assert_int_eq(rb_segment_trim(r, 1), RB_EROFS);
    ck_assert_int_eq(rb_segment_memory(NULL, &a), RB_EINVAL);
    rb_segment_close(r);
    ck_assert_int_eq(rb_segment_create(NULL, NULL, &priv), RB_OK);
    ck_assert_int_eq(rb_segment_memory(priv, &a), RB_OK);
    ck_assert_uint_gt(a.resident, 0);
    ck_assert_int_eq(rb_segment_trim(priv, 1), RB_OK);
    rb_segment_close(priv);
}
END_TEST

int main(void)
{
    /* A reader's store into its read-only mapping must end in SIGSEGV. */
    TCase *protection = RB_TCASE("protection", 60, setup, teardown,
                                 test_segment_reader_cannot_mprotect_to_write);

    tcase_add_test_raise_signal(protection, test_segment_reader_store_faults, SIGSEGV);
    return RB_TEST_MAIN("segment",
                        RB_TCASE("create", 60, setup, teardown,
                                 test_segment_create_attach_roundtrip,
                                 test_segment_create_existing_is_eexist,
                                 test_segment_reservation_is_what_create_makes,
                                 test_segment_version_is_the_headers,
                                 test_segment_bad_names_and_options,
                                 test_segment_private_needs_no_name),
                        RB_TCASE("trust", 60, setup, teardown,
                                 test_segment_untrusted_modes_and_owner_pin,
                                 test_segment_writer_refuses_foreign_object,
                                 test_segment_reader_follows_only_its_first_owner,
                                 test_segment_second_writer_is_refused),
                        RB_TCASE("attach", 60, setup, teardown,
                                 test_segment_attach_missing_is_enoent,
                                 test_segment_attach_bad_magic_is_notours,
                                 test_segment_attach_swapped_magic_is_eendian,
                                 test_segment_attach_wrong_version_is_eversion,
                                 test_segment_attach_truncated_is_etrunc,
                                 test_segment_attach_while_initialising_is_ebusy,
                                 test_segment_attach_corrupt_directory_is_ecorrupt,
                                 test_segment_foreign_layout_is_ecorrupt,
                                 test_segment_fuzz_seeds_are_this_layout),
                        RB_TCASE("takeover", 60, setup, teardown,
                                 test_segment_takeover_refuses_unsound_layer,
                                 test_segment_takeover_keeps_ring_filters_and_heap,
                                 test_segment_retired_is_refused_and_reported,
                                 test_segment_writer_gone_is_egone,
                                 test_segment_reader_follows_restarted_writer,
                                 test_segment_dump_restore_roundtrip_and_corruption,
                                 test_segment_takeover_forgets_inactive_copy,
                                 test_segment_txn_mark_survives_takeover_not_restore,
                                 test_segment_restore_layout1_dump,
                                 test_segment_restore_reads_the_live_data,
                                 test_segment_restore_drops_the_free_tail,
                                 test_segment_rebuild_cuts_the_tail_readers_follow,
                                 test_segment_create_drops_a_rebuild_left_behind,
                                 test_segment_snap_is_the_state_at_begin,
                                 test_segment_snap_pool_pages_are_the_frozen_bytes),
                        protection,
                        RB_TCASE("release", 120, setup, teardown,
                                 test_segment_freed_pages_go_back,
                                 test_segment_sweep_takes_back_reader_faults,
                                 test_segment_memory_on_reader_and_private),
                        RB_TCASE("growth", 60, setup, teardown,
                                 test_segment_growth_past_reservation_is_enospc,
                                 test_segment_attach_never_fails_while_growing));
}
