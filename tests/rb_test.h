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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rb_internal.h"

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
