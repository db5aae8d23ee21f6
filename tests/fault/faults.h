/*
 * faults.h - what the files of check_faults share (faults.c): the test's
 * daemon and the mounts its teardown undoes, the daemon's log, raw clients
 * whose replies the daemon holds back, and checks on the state directory
 * and on the state recovered after a restart.
 */
#ifndef FAULTS_H
#define FAULTS_H

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

extern rbd_proc_t d;          /* the test's daemon */
extern char mnt[128];         /* a tmpfs this test mounted, or "" */
extern int shm_mounted;       /* a tmpfs over /dev/shm (private namespace) */

/* The TCases' teardown: the daemon, its files and the mounts gone. */
void faults_teardown(void);
/* CLOCK_MONOTONIC seconds. */
double now_s(void);

/* ---- the daemon's log ------------------------------------------------------ */

/* Waits (<= ms) until the log has at least count lines with needle. */
int wait_log(const char *needle, int count, int ms);
/* Asserts that a line of the daemon's log contains every one of the
 * NULL-terminated words, and returns it (static buffer). */
const char *log_line_with(const char *first, ...);

/* ---- raw clients (replies the daemon holds back) ---------------------------- */

/* Sends one command (NULL-terminated words) as a RESP multibulk. */
void raw_send(int fd, ...);
/* Reads until `lines` CRLF-terminated lines arrived or ms passed; returns
 * the bytes read (0: nothing came). */
size_t raw_wait(int fd, char *buf, size_t cap, int lines, int ms);
/* Watches the daemon for 1.5 s (draining fd meanwhile if fd >= 0, counting
 * into *drained) and asserts it used under a tenth of a CPU: no busy loop. */
void assert_no_spin(const char *what, int fd, size_t *drained);

/* ---- the state ---------------------------------------------------------------- */

/* Asserts that the state directory holds no temp file. */
void assert_no_temp_files(const char *state);
/* Kills the daemon, removes its segment, restarts it (so the state comes
 * from the snapshot and the log alone) and asserts that every key of
 * filter is present through the reader API and BF.EXISTS. */
void assert_recovered(const char *filter, const char *const *keys, size_t n);

/* The TCases in files of their own (their main() is check_faults.c's). */
TCase *faults_disk_tcase(void);   /* check_faults_full.c */
TCase *faults_shm_tcase(void);    /* check_faults_full.c */
TCase *faults_shim_tcase(void);   /* check_faults_shim.c */
TCase *faults_memory_tcase(void);  /* check_faults_memory.c */

#endif
