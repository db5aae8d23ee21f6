/*
 * check_huge.c - huge-page segments (RB_SEGMENT_HUGE_PAGES,
 * rb_segment_huge_pages, rb_segment_huge_status): 2 MiB reservation and
 * growth, and, as root, what the kernel really backs them with on a tmpfs
 * mounted huge=always or huge=never, and the message where it refuses;
 * freed space given back in whole 2 MiB pages, none split.
 *
 * The mount tests run in a forked child that enters a private mount
 * namespace (unshare(CLONE_NEWNS), the tree made MS_PRIVATE) and mounts a
 * fresh tmpfs over /dev/shm there: the host's /dev/shm and mount table
 * never see it, and the tmpfs goes with the child.  They skip, saying
 * why, when not root, when the kernel has no transparent huge pages, or
 * when the namespace cannot be made (a container without CAP_SYS_ADMIN).
 */
#include "config.h"   /* _GNU_SOURCE: unshare, CLONE_NEWNS */

#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "rb_test.h"

#define MIB (1024u * 1024u)
#define SKIP 77   /* a child's exit status: the test could not run here */

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

/* Why huge pages cannot be tried here, or NULL. */
static const char *no_thp(void)
{
    char buf[128] = "";
    FILE *f;

    if (geteuid() != 0)
        return "not root (mounting a tmpfs needs CAP_SYS_ADMIN)";
    f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
    if (f == NULL)
        return "no transparent huge pages in this kernel";
    if (fgets(buf, sizeof(buf), f) == NULL)
        buf[0] = '\0';
    fclose(f);
    return strstr(buf, "[deny]") != NULL ? "shmem_enabled is deny" : NULL;
}

/* In the calling (forked) process: a private mount namespace with a fresh
 * tmpfs mounted with `huge` over /dev/shm.  0, or -1 (say why). */
static int private_shm(const char *huge)
{
    char opts[64];

    snprintf(opts, sizeof(opts), "huge=%s,size=256m,mode=1777", huge);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("rbtest", "/dev/shm", "tmpfs", 0, opts) != 0) {
        fprintf(stderr, "skip: no private mount namespace with a tmpfs huge=%s: %s\n", huge,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* A blocked filter of ~24 MiB in seg, half filled: committed bytes past
 * several 2 MiB granules, written by the writer.  0 or -1. */
static int fill(rb_segment_t *seg, rb_bloom_t **bf)
{
    rb_bloom_params_t p = { .capacity = 20000000, .error_rate = 0.01,
                            .layout = RB_BLOOM_BLOCKED, .flags = RB_BLOOM_NONSCALING };
    char key[160];

    if (rb_bloom_reserve(seg, "f", 1, &p) != RB_OK || rb_bloom_open(seg, "f", 1, bf) != RB_OK)
        return -1;
    for (unsigned long i = 0; i < 200000; i++) {
        size_t n = rb_test_key(key, sizeof(key), "huge", i);
        if (rb_bloom_add(*bf, key, n) < 0)
            return -1;
    }
    return 0;
}

/* Reads every key back through a reader handle (attached like any client:
 * no option): 0 if all are there, -1 if not. */
static int read_back(const char *name, rb_segment_huge_t *rh)
{
    rb_segment_t *r;
    rb_bloom_t *bf;
    char key[160];
    int bad = 0;

    if (rb_segment_attach(name, 0, &r) != RB_OK)
        return -1;
    if (rb_bloom_open(r, "f", 1, &bf) != RB_OK) {
        rb_segment_close(r);
        return -1;
    }
    for (unsigned long i = 0; i < 200000; i++) {
        size_t n = rb_test_key(key, sizeof(key), "huge", i);
        bad |= rb_bloom_contains(bf, key, n) != 1;
    }
    if (rb_segment_huge_status(r, rh) != RB_OK)
        bad = 1;
    rb_bloom_close(bf);
    rb_segment_close(r);
    return bad ? -1 : 0;
}

/* Freed space in a huge-page segment: a deleted ~12 MiB filter gives back
 * its whole 2 MiB pages, and no page is split (every resident byte is
 * still mapped by a 2 MiB page); made again, its pages are 2 MiB ones
 * again.  0, or -1 (printing what differed). */
static int release_check(rb_segment_t *seg)
{
    rb_bloom_params_t p = { .capacity = 10000000, .error_rate = 0.01,
                            .layout = RB_BLOOM_BLOCKED, .flags = RB_BLOOM_NONSCALING };
    rb_bloom_params_t small = { .capacity = 1000, .error_rate = 0.01 };
    rb_segment_memory_t m1, m2, m3;
    rb_segment_huge_t h2, h3;
    int ok;

    /* g lies between f and a small filter: its free run ends inside a
     * 2 MiB page that stays in use. */
    if (rb_bloom_reserve(seg, "g", 1, &p) != RB_OK || rb_bloom_reserve(seg, "s", 1, &small) != RB_OK ||
        rb_segment_memory(seg, &m1) != RB_OK ||
        rb_bloom_delete(seg, "g", 1) != RB_OK || rb_segment_memory(seg, &m2) != RB_OK ||
        rb_segment_huge_status(seg, &h2) != RB_OK || rb_bloom_reserve(seg, "g", 1, &p) != RB_OK ||
        rb_segment_memory(seg, &m3) != RB_OK || rb_segment_huge_status(seg, &h3) != RB_OK)
        return -1;
    fprintf(stderr, "release: resident %llu with g, %llu without (%llu in 2 MiB pages), "
            "%llu with g again (%llu in 2 MiB pages)\n", (unsigned long long)m1.resident,
            (unsigned long long)m2.resident, (unsigned long long)h2.huge_bytes,
            (unsigned long long)m3.resident, (unsigned long long)h3.huge_bytes);
    ok = m2.resident + 8 * MIB <= m1.resident && h2.huge_bytes >= m2.resident &&
         m2.resident % (2 * MIB) == 0 && h3.huge_bytes >= m3.resident && m3.resident >= m1.resident;
    return ok ? 0 : -1;
}

/* The child of a mount test: a segment with the flag on a tmpfs mounted
 * huge=<huge> (with THP disabled for the process if thp_off), filled and
 * read back; then whether the writer's status says what expect_huge says.
 * Exit 0 (as expected), SKIP, or 1 (printing what differed). */
static void huge_child(const char *huge, int thp_off, int expect_huge)
{
    rb_segment_opts_t o = { .max_size = 64 * MIB, .flags = RB_SEGMENT_HUGE_PAGES };
    rb_segment_huge_t h, rh;
    rb_segment_t *seg;
    rb_bloom_t *bf;
    int ok;

    if (private_shm(huge) != 0)
        _exit(SKIP);
    if (thp_off && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
        _exit(SKIP);
    if (rb_segment_create("hugetest", &o, &seg) != RB_OK || fill(seg, &bf) != 0 ||
        rb_segment_huge_status(seg, &h) != RB_OK || read_back("hugetest", &rh) != 0) {
        fprintf(stderr, "huge=%s: the segment does not work\n", huge);
        _exit(1);
    }
    fprintf(stderr, "huge=%s%s: %llu of %llu bytes in 2 MiB pages (reader: %llu), mount %s%s%s\n",
            huge, thp_off ? ", THP disabled" : "", (unsigned long long)h.huge_bytes,
            (unsigned long long)h.committed, (unsigned long long)rh.huge_bytes, h.mount,
            h.why[0] ? ", why: " : "", h.why);
    if (expect_huge)
        ok = h.requested && h.committed % (2 * MIB) == 0 && h.huge_bytes == h.committed &&
             h.why[0] == '\0' && rh.huge_bytes >= 2 * MIB && strstr(h.mount, "/dev/shm");
    else
        /* The clear message: the cause, and the mount with its fix. */
        ok = h.requested && h.huge_bytes == 0 && strstr(h.why, "PR_SET_THP_DISABLE") &&
             strstr(h.why, "huge=never") && strstr(h.why, "remount,huge=within_size /dev/shm");
    if (ok && expect_huge && release_check(seg) != 0) {
        fprintf(stderr, "huge=%s: freed space split a 2 MiB page or stayed\n", huge);
        ok = 0;
    }
    rb_bloom_close(bf);
    rb_segment_close(seg);
    /* A writer taking the segment over (a restarted daemon) maps it in
     * 2 MiB pages again once it asks. */
    if (ok && expect_huge) {
        ok = rb_segment_open_writer("hugetest", &seg) == RB_OK &&
             rb_segment_huge_pages(seg) == RB_OK && rb_segment_huge_status(seg, &h) == RB_OK &&
             h.huge_bytes == h.committed && h.why[0] == '\0';
        if (!ok)
            fprintf(stderr, "huge=%s: taken over: %llu of %llu bytes in 2 MiB pages\n", huge,
                    (unsigned long long)h.huge_bytes, (unsigned long long)h.committed);
        rb_segment_close(seg);
    }
    rb_segment_unlink("hugetest");
    _exit(ok ? 0 : 1);
}

static void run_child(const char *huge, int thp_off, int expect_huge)
{
    const char *why = no_thp();
    pid_t pid;
    int st;

    if (why != NULL) {
        fprintf(stderr, "skip: huge=%s: %s\n", huge, why);
        return;
    }
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        huge_child(huge, thp_off, expect_huge);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == SKIP);
}

/* huge=always: the pages are huge from the start (fallocate); writer and
 * reader map them with PMD entries. */
START_TEST(test_huge_always_mount_is_pmd_mapped)
{
    run_child("always", 0, 1);
}
END_TEST

/* huge=never (Debian's /dev/shm): the writer collapses each 2 MiB. */
START_TEST(test_huge_never_mount_is_collapsed)
{
    run_child("never", 0, 1);
}
END_TEST

/* THP disabled for the process on a huge=never mount: no huge page at all,
 * a message naming the cause, the mount and the fix, and a segment that
 * works with small pages. */
START_TEST(test_huge_refused_says_why_and_works)
{
    run_child("never", 1, 0);
}
END_TEST

/* Without root: the flag's reservation and granule, what a segment made
 * without it reports, and turning it on for a live segment. */
START_TEST(test_huge_flag_rounds_to_2mib)
{
    rb_segment_opts_t o = { .max_size = 5 * MIB + 4096, .flags = RB_SEGMENT_HUGE_PAGES };
    rb_segment_info_t si;
    rb_segment_huge_t h;
    rb_segment_t *r;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_segment_info(wseg, &si), RB_OK);
    ck_assert_uint_eq(si.max_size, 6 * MIB);
    ck_assert_uint_eq(si.size, 2 * MIB);
    ck_assert_int_eq(rb_segment_huge_status(wseg, &h), RB_OK);
    ck_assert_int_eq(h.requested, 1);
    ck_assert_uint_eq(h.committed, 2 * MIB);
    ck_assert_int_eq(rb_segment_attach(inst, 0, &r), RB_OK);
    ck_assert_int_eq(rb_segment_huge_status(r, &h), RB_OK);
    ck_assert_int_eq(h.requested, 1);           /* the header says so */
    ck_assert_str_eq(h.why, "");                /* a reader does not judge */
    ck_assert_int_eq(rb_segment_huge_pages(r), RB_EROFS);
    rb_segment_close(r);
    o.flags = 0x4;
    ck_assert_int_eq(rb_segment_create("x", &o, &r), RB_EINVAL);
}
END_TEST

START_TEST(test_huge_turned_on_for_a_live_segment)
{
    rb_segment_opts_t o = { .max_size = 3 * MIB };
    rb_segment_info_t si;
    rb_segment_huge_t h;

    ck_assert_int_eq(rb_segment_create(inst, &o, &wseg), RB_OK);
    ck_assert_int_eq(rb_segment_huge_status(wseg, &h), RB_OK);
    ck_assert_int_eq(h.requested, 0);
    ck_assert_str_eq(h.why, "");
    ck_assert_uint_eq(h.huge_bytes, 0);
    ck_assert_int_eq(rb_segment_info(wseg, &si), RB_OK);
    ck_assert_uint_lt(si.size, 2 * MIB);
    ck_assert_int_eq(rb_segment_huge_pages(wseg), RB_OK);
    ck_assert_int_eq(rb_segment_info(wseg, &si), RB_OK);
    ck_assert_uint_eq(si.size, 2 * MIB);        /* rounded up to a whole granule */
    ck_assert_uint_eq(si.max_size, 3 * MIB);    /* the reservation stays */
    ck_assert_int_eq(rb_segment_huge_status(wseg, &h), RB_OK);
    ck_assert_int_eq(h.requested, 1);
    /* the last, partial granule of the reservation is grown too */
    ck_assert_int_eq(rbi_segment_grow(wseg, 2 * MIB + 1), RB_OK);
    ck_assert_int_eq(rb_segment_info(wseg, &si), RB_OK);
    ck_assert_uint_eq(si.size, 3 * MIB);
    ck_assert_int_eq(rbi_segment_grow(wseg, 3 * MIB + 1), RB_ENOSPC);
}
END_TEST

int main(void)
{
    return RB_TEST_MAIN("huge",
                        RB_TCASE("flag", 60, setup, teardown,
                                 test_huge_flag_rounds_to_2mib,
                                 test_huge_turned_on_for_a_live_segment),
                        RB_TCASE("mount", 120, NULL, NULL,
                                 test_huge_always_mount_is_pmd_mapped,
                                 test_huge_never_mount_is_collapsed,
                                 test_huge_refused_says_why_and_works));
}
