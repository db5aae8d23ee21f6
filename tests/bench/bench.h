/*
 * bench.h - what the benchmark's files share: libcrypto's MD5 timed in
 * bench_md5.c (its header cannot share a file with libmd's, which bench.c
 * times), the bulk-load section (bench_bulk.c), the table row that
 * bench.c prints for every section, and the one timed redis-benchmark run
 * of the command sections (bench_run: k and b).
 */
#ifndef RB_BENCH_H
#define RB_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Million MD5s per second of keys[0..n-1] (lengths klen) with libcrypto's
 * MD5(), the first 4 digest bytes taken as ketama does; NAN if the build
 * has no libcrypto (configure did not find it, or --without-libcrypto). */
double bench_md5_libcrypto(char *const *keys, const size_t *klen, int n);

/* One cell of a table row: a contender and its figure. */
typedef struct cell {
    const char *name;
    double value;       /* NAN: not applicable */
    const char *note;
} cell_t;

/* Prints one table row (and its CSV lines): a workload, its baseline
 * cells[baseline], and each contender's figure with its ratio to it. */
void row(const char *section, const char *workload, const char *unit, int higher_better,
         int baseline, const cell_t *cells, int n);

/* Section 9, bulk load (bench_bulk.c): servers started in tmpdir,
 * ringbloomd from daemon_bin (and before_bin beside, if not NULL); at most
 * 3 of reps runs; fewer keys if quick. */
void bench_bulk(const char *tmpdir, const char *daemon_bin, const char *before_bin, int reps,
                int quick);

/* Section h (bench_huge.c): contains_many on a 1 GiB blocked filter in
 * small pages and in 2 MiB pages, printed and appended to csv (may be
 * NULL); reps runs each.  Runs in a private mount namespace (root). */
void bench_huge(int reps, FILE *csv);

/* Section s (bench_sketch.c): the other kinds' reads from shared memory
 * against the same commands over the socket; cuckoo memory per key. */
void bench_sketch(const char *tmpdir, int reps, int quick);

/* For section s (bench_cbf.c): a counting Bloom filter of 10^6 keys at p
 * with bits-bit counters, its bits per key (its measured FPR into *fpr);
 * s3, its FPR against the formula at 4 and 8 bits, reps runs each. */
double bench_cbf_bits(double p, uint32_t bits, double *fpr);
void bench_cbf_fpr(int reps);

/* Section e (bench_fleet.c): ring lookups from a ringbloomd following
 * etcd against a local one with the same membership; skipped without
 * etcd. */
void bench_fleet(const char *tmpdir, int reps);

/* Section n (bench_nats.c): writes to filters replicated through a
 * 3-server NATS JetStream cluster beside local ones on the same daemon
 * (and RedisBloom on one Redis Cluster node, redisbloom: its module;
 * NULL: not run), reads of both through shared memory; skipped without
 * nats-server. */
void bench_nats(const char *tmpdir, const char *redisbloom, int reps, int quick);

/* Section i (bench_idle.c): an idle daemon's CPU with 10^4 filters, and
 * before_bin's (an older ringbloomd; NULL: not run) beside it. */
void bench_idle(const char *before_bin, int reps, int quick);

/* Section a (bench_admit.c): TinyLFU admission by handle beside one
 * count-min estimate by handle, and the by-name calls. */
void bench_admit(int reps, int quick);

/* Section g (bench_replies.c): the nginx module's admit replies through
 * hiredis's reader (lib/conn/resp_read.c) beside the hand-written scanner
 * it replaced; fewer replies if quick. */
void bench_replies(int reps, int quick);

/* Section m (bench_freed.c): a ~250 MB filter filled and deleted beside a
 * filter another process reads: the DEL, the seconds until the object's
 * resident bytes follow the live data, the next snapshot's size; with
 * before_bin (not NULL) the same run of that ringbloomd beside; then a
 * ~500 MB filter moved with cli's dump / restore: the snapshots the
 * restoring daemon writes. */
void bench_freed(const char *tmpdir, const char *before_bin, const char *cli, int quick);

/* Section r (bench_sparse.c): a snapshot's size on disk, SAVE and a
 * restart with 20 MiB live in a segment that once held ~1 GiB, beside
 * before_bin's (an older ringbloomd; NULL: not run). */
void bench_sparse(const char *tmpdir, const char *before_bin, int reps, int quick);

/* Section w (bench_cliw.c): the CLI's add and info, whole process, beside
 * redis-cli on the daemon's socket (cli_before: an older CLI, or NULL). */
void bench_cli_write(const char *cli, const char *cli_before, int reps, int quick);

/* Section k (bench_cmds.c): PFCOUNT, PFADD and the single-key commands
 * beside redis-server's (and before_bin's, an older ringbloomd, if not
 * NULL), through redis-benchmark; skipped without redis-server. */
void bench_cmds(const char *before_bin, int reps, int quick);
/* One run of `redis-benchmark args` (cmds requests) on the server pid at
 * sock (bench_cmds.c): requests/s into *rps, and requests per second of
 * the server's CPU (every thread's, from schedstat: its capacity when it,
 * not the one redis-benchmark thread beside it, is what limits) into
 * *cap.  Dies if redis-benchmark gives no figure. */
void bench_run(pid_t pid, const char *sock, const char *args, int cmds, double *rps,
               double *cap);

/* Section b (bench_redisbloom.c): the issue 29 table beside RedisBloom
 * (module: its redisbloom.so; NULL: the section says it is skipped). */
void bench_redisbloom(const char *module, int reps, int quick);

void bench_rcache(const char *lib_before, int reps, int quick);

/* Section f (bench_req.c): the clients' requests formatted by the
 * project's encoder and by hiredis, and the library's bulk adds and round
 * trips beside lib_before's (an older libringbloom.so; NULL: not run). */
void bench_req(const char *lib_before, int reps, int quick);

/* bench.c's plumbing, for the sections in other files. */
double bench_now_s(void);                  /* CLOCK_MONOTONIC seconds */
double bench_median(double *v, int n);     /* sorts v */
/* Milliseconds from fork to the reaped exit of argv (stdout to
 * /dev/null); dies unless it exits 0. */
double bench_process_ms(const char *const argv[]);
/* Per-repetition ratios num[r] / den[r]: median, lowest, highest. */
void bench_ratio_spread(const double *num, const double *den, int n, double out[3]);
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* A loopback TCP port free now (the kernel's pick, let go). */
int bench_free_port(void);
/* Starts ringbloomd (--daemon) as instance bench_daemon_instance(name)
 * with the settings extra, pinned to cpu (-1: not), in the run's
 * directory; its socket path into sock; returns once it listens. */
pid_t bench_daemon(const char *name, const char *extra, int cpu, char *sock, size_t cap);
void bench_daemon_instance(const char *name, char *buf, size_t cap);
/* bench_daemon (no pinning) of the ringbloomd at bin (NULL: the one under test). */
pid_t bench_daemon_bin(const char *bin, const char *name, const char *extra, char *sock,
                       size_t cap);
void bench_daemon_stop(pid_t pid);
/* Starts Debian's redis-server (no persistence) on tmpdir/NAME.sock (into
 * sock); returns once it answers.  Stop it with bench_daemon_stop. */
pid_t bench_redis_server(const char *name, char *sock, size_t cap);
/* The same with the arguments extra (NULL-terminated, or NULL) after
 * those: later ones win ("--appendonly", "yes"). */
pid_t bench_redis_server_with(const char *name, const char *const *extra, char *sock,
                              size_t cap);
/* Runs `redis-benchmark -s sock --csv args`; the last line's CSV column
 * col (1 = requests/s, 4 = p50 ms, 6 = p99 ms), NAN if none. */
double bench_redis_benchmark(const char *sock, const char *args, int col);

#endif
