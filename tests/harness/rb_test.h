/*
 * rb_test.h - what every Check suite shares (tests/harness/rb_test.c).
 *
 * A suite's main() is one RB_TEST_MAIN over its TCases, each made by
 * RB_TCASE:
 *
 *     int main(void)
 *     {
 *         return RB_TEST_MAIN("ring",
 *                             RB_TCASE("movement", 60, setup, teardown,
 *                                      test_ring_adding_fifth_node_moves_a_fifth, ...),
 *                             RB_TCASE("errors", 60, setup, teardown, test_ring_bad_input));
 *     }
 *
 * Every shm object a test creates is named "chk<main pid>-<pid>-<n>"
 * (rb_test_instance) and every temp dir "/tmp/rbtest.<main pid>.*", so
 * RB_TEST_MAIN can verify at the end that the suite (its forked test
 * processes included) left nothing in /dev/shm, fail if it did, and
 * remove the temp dirs of tests that died before their teardown.
 */
#ifndef RB_TEST_H
#define RB_TEST_H

#include <check.h>
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

/* The suite's main process (set by rb_test_main). */
extern pid_t rb_test_main_pid;

/* A TCase: its tests (START_TEST names) run in this order, each bounded
 * by timeout seconds (0: Check's default, 4) times rb_test_load_factor()
 * and wrapped in the checked fixture setup / teardown (either may be
 * NULL). */
#define RB_TCASE(name, timeout, setup, teardown, ...)                                    \
    rb_tcase((name), (timeout), (setup), (teardown), __VA_ARGS__, (const TTest *)NULL)
TCase *rb_tcase(const char *name, int timeout, SFun setup, SFun teardown, ...);
/* How much longer than nominal a hang guard waits in this run: 1.5 x the
 * machine's 1-minute load per CPU when first asked (the suite's start),
 * at least 2, at most 10.  Timeouts and the harness's waits are hang
 * guards, never speed checks (benchmarks measure speed): a busy machine
 * only makes them longer.  The sanitizer trees' CK_TIMEOUT_MULTIPLIER
 * comes on top (Check applies it to its timeouts, rbd_wait_ms to the
 * harness's waits). */
double rb_test_load_factor(void);

/* Runs the TCases (TCase *, in this order) as suite `name`; the exit
 * status for main(): 0 only if every test passed and the suite left
 * nothing in /dev/shm. */
#define RB_TEST_MAIN(name, ...) rb_test_main((name), __VA_ARGS__, (TCase *)NULL)
int rb_test_main(const char *name, ...);

/* A fresh instance name, unique across the suite's processes. */
const char *rb_test_instance(char *buf, size_t cap);

/* Deterministic URL-like key i (20-120 bytes) into buf; returns its length
 * (at most cap - 1: a key longer than buf holds is cut short). */
size_t rb_test_key(char *buf, size_t cap, const char *tag, unsigned long i);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t rb_test_now_ms(void);

/* A program the tests start (etcd, nats-server): $env if set (NULL if it
 * is not executable), else the first `name` on PATH; NULL when absent.
 * The path is in a static buffer. */
const char *rb_test_program(const char *env, const char *name);

/* n (<= 16) free loopback TCP ports into ports, bound all at once and then
 * let go (a port another process takes before the caller binds it makes
 * that start fail, said).  0, or -1. */
int rb_test_free_ports(int *ports, int n);

/* Stops the processes pids[0..n) a cluster harness started: SIGKILL to
 * every one first (so none outlives another's reaping), then each reaped
 * and its pid set to 0 (0: not running, skipped). */
void rb_test_kill_procs(pid_t *pids, int n);

/* Removes dir recursively if it is one of the tests' temporary
 * directories ("/tmp/rbtest."...; anything else is left alone), and
 * empties dir. */
void rb_test_remove_tmp_dir(char *dir);

/* The user the access and squatting tests switch to (nobody), uid = gid. */
#define RB_TEST_OTHER_UID 65534

/* In a forked child running as root: drops every group and becomes
 * RB_TEST_OTHER_UID.  0, or -1 if it could not. */
int rb_test_become_other(void);
/* Before a daemon's exec with a library in LD_PRELOAD (the fault shims):
 * under AddressSanitizer the runtime refuses to start when a preloaded
 * library comes before it; the shims intercept nothing ASan needs, so
 * verify_asan_link_order=0 is added to whatever ASAN_OPTIONS the run set
 * (its log_path must survive).  Harmless without ASan. */
void rb_test_asan_allow_preload(void);

/* Runs fn(arg) in a forked child as RB_TEST_OTHER_UID (rb_test_become_other),
 * asserting that it became that user and that fn returned 0.  Needs root. */
void rb_test_as_other(int (*fn)(void *), void *arg);

/* Does what a squatter would: creates segment `inst` (mode 0644, a valid
 * segment) as RB_TEST_OTHER_UID, from a forked child.  Needs root. */
void rb_test_squat_segment(const char *inst);

/* A segment dump (rb_segment_dump) copied out: rb_test_dump_fn is the
 * callback, its arg an rb_test_dump_t; data is 64-byte aligned (as
 * rb_segment_restore wants it), the caller frees it. */
typedef struct rb_test_dump {
    unsigned char *data;
    size_t len;
} rb_test_dump_t;
int rb_test_dump_fn(const void *data, size_t len, void *arg);

#endif /* RB_TEST_H */
