/*
 * ex_util.c - what the examples share besides a daemon: their name for
 * messages, signal handling, the set-up of a forked child, option parsing
 * and timing helpers.  Not part of the library: examples only.
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "ex_util.h"

volatile sig_atomic_t ex_stop_requested;

static const char *prog = "example";

void ex_init(const char *name)
{
    prog = name;
}

const char *ex_prog(void)
{
    return prog;
}

void ex_on_signal(int sig)
{
    (void)sig;
    ex_stop_requested = 1;
}

double ex_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ex_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

    nanosleep(&ts, NULL);
}

uint64_t ex_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

int ex_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < min || v > max) {
        fprintf(stderr, "%s: %s wants an integer in %" PRIu64 "..%" PRIu64 ", got '%s'\n",
                prog, opt, min, max, s);
        return -1;
    }
    *out = v;
    return 0;
}

int ex_parse_double(const char *opt, const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= min) || !(v <= max)) {
        fprintf(stderr, "%s: %s wants a number in [%g, %g], got '%s'\n", prog, opt, min, max,
                s);
        return -1;
    }
    *out = v;
    return 0;
}

int ex_catch_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = ex_on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGHUP, &sa, NULL) != 0) {
        fprintf(stderr, "%s: sigaction: %s\n", prog, strerror(errno));
        return -1;
    }
    return 0;
}

int ex_child_setup(pid_t parent)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    return getppid() == parent ? 0 : -1;
}
