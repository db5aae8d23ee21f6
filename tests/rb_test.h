/*
 * rb_test.h - shared helpers of the Check suites (one suite per module).
 *
 * Every shm object a test creates is named "chk<main pid>-<pid>-<n>", so
 * rb_test_run() can verify at the end that the suite (its forked test
 * processes included) left nothing in /dev/shm, and fail if it did.
 */
#ifndef RB_TEST_H
#define RB_TEST_H

#include <check.h>
#include <dirent.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format.h"
#include "heap.h"
#include "latch.h"
#include "ring.h"
#include "segment.h"
#include "util.h"

static pid_t rb_test_main_pid;
static unsigned rb_test_counter;

/* A fresh instance name, unique across the suite's processes. */
static inline const char *rb_test_instance(char *buf, size_t cap)
{
    snprintf(buf, cap, "chk%d-%d-%u", (int)rb_test_main_pid, (int)getpid(),
             rb_test_counter++);
    return buf;
}

/* Deterministic URL-like key i (20-120 bytes) into buf; returns length. */
static inline size_t rb_test_key(char *buf, size_t cap, const char *tag, unsigned long i)
{
    static const char *const hosts[] = { "example.org", "cdn.example.com",
                                         "static.shop.example.net", "a.example" };
    int n = snprintf(buf, cap, "https://%s/%s/%lu/item-%lx?page=%lu", hosts[i % 4], tag,
                     i, i * 2654435761UL, i % 97);
    return (size_t)n;
}

/* The user the access and squatting tests switch to (nobody), uid = gid. */
#define RB_TEST_OTHER_UID 65534

/* In a forked child running as root: drops every group and becomes
 * RB_TEST_OTHER_UID.  0, or -1 if it could not. */
static inline int rb_test_become_other(void)
{
    return setgroups(0, NULL) == 0 && setgid(RB_TEST_OTHER_UID) == 0 &&
                   setuid(RB_TEST_OTHER_UID) == 0
               ? 0
               : -1;
}

/* Does what a squatter would: creates segment `inst` (mode 0644, a valid
 * segment) as RB_TEST_OTHER_UID, from a forked child.  Needs root. */
static inline void rb_test_squat_segment(const char *inst)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rb_segment_opts_t o = { .mode = 0644 };
        rb_segment_t *e;
        if (rb_test_become_other() != 0)
            _exit(10);
        _exit(rb_segment_create(inst, &o, &e) == RB_OK ? 0 : 11);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "squatter status %d", status);
}

/* Removes and counts the suite's leftover shm objects. */
static inline int rb_test_sweep(void)
{
    char prefix[64];
    struct dirent *e;
    int left = 0;
    DIR *d = opendir("/dev/shm");

    if (d == NULL)
        return 0;
    snprintf(prefix, sizeof(prefix), "ringbloom.chk%d-", (int)rb_test_main_pid);
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            char path[512];
            snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
            fprintf(stderr, "leaked shm object: %s\n", path);
            unlink(path);
            left++;
        }
    }
    closedir(d);
    return left;
}

static inline void rb_test_init(void)
{
    rb_test_main_pid = getpid();
}

/* Runs the suite; exit status 0 only if every test passed and nothing was
 * left in /dev/shm. */
static inline int rb_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed, leaked;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    leaked = rb_test_sweep();
    {
        /* Temp dirs of daemons whose test died before its teardown. */
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf /tmp/rbtest.%d.*", (int)rb_test_main_pid);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove /tmp/rbtest.%d.*\n", (int)rb_test_main_pid);
    }
    if (leaked)
        fprintf(stderr, "FAIL: %d shm object(s) left behind\n", leaked);
    return (failed == 0 && leaked == 0) ? 0 : 1;
}

#endif /* RB_TEST_H */
