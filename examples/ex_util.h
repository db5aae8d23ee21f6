/*
 * ex_util.h - helpers shared by the examples (see ex_util.c).
 */
#ifndef RB_EX_UTIL_H
#define RB_EX_UTIL_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* The program's name, for messages and temp dirs: set by ex_init at the
 * start of main. */
void ex_init(const char *name);
const char *ex_prog(void);

/* Set by ex_on_signal, which ex_catch_signals installs for SIGINT, SIGTERM
 * and SIGHUP (-1 and a message if it cannot). */
extern volatile sig_atomic_t ex_stop_requested;
void ex_on_signal(int sig);
int ex_catch_signals(void);

double ex_now_s(void);                     /* CLOCK_MONOTONIC seconds */
void ex_sleep_us(long us);
uint64_t ex_splitmix64(uint64_t x);
/* Parses a decimal in min..max into *out; prints why not and returns -1. */
int ex_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* The same for a number in [min, max]. */
int ex_parse_double(const char *opt, const char *s, double min, double max, double *out);
/* In a forked child: default signal dispositions, SIGKILL when the parent
 * dies; -1 if the parent (pid parent) is already gone. */
int ex_child_setup(pid_t parent);

#endif
