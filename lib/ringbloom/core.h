/*
 * ringbloom/core.h - what every part of the public API rests on: the
 * version, the export macros, the error codes and their texts, and rb_key_t.
 *
 * A part of ringbloom.h: programs include <ringbloom.h>, which includes
 * every part, and its conventions (return codes, who may call, handles,
 * keys) hold here.
 */
#ifndef RINGBLOOM_CORE_H
#define RINGBLOOM_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/* The version of this header.  These three lines are the one place it is
 * written: configure.ac reads them for the package version. */
#define RB_VERSION_MAJOR 0
#define RB_VERSION_MINOR 1
#define RB_VERSION_PATCH 0
/* "major.minor.patch", e.g. "0.1.0". */
#define RB_VERSION RB_VERSION_STR_(RB_VERSION_MAJOR) "." RB_VERSION_STR_(RB_VERSION_MINOR) \
    "." RB_VERSION_STR_(RB_VERSION_PATCH)
#define RB_VERSION_STR_(n) RB_VERSION_STR__(n)
#define RB_VERSION_STR__(n) #n
/* For comparisons in the preprocessor: 0.1.0 is 100, 1.2.3 is 1002003. */
#define RB_VERSION_NUMBER \
    ((RB_VERSION_MAJOR * 1000 + RB_VERSION_MINOR) * 1000 + RB_VERSION_PATCH)

#if defined(__GNUC__)
#define RB_EXPORT __attribute__((visibility("default")))
#define RB_WUR    __attribute__((warn_unused_result))
#else
#define RB_EXPORT
#define RB_WUR
#endif

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

#define RB_OK          0
#define RB_ENOMEM     -1   /* process memory exhausted */
#define RB_EINVAL     -2   /* invalid argument (bad name, NaN, out of range) */
#define RB_ENOENT     -3   /* no such instance, filter or node */
#define RB_EEXIST     -4   /* object already exists */
#define RB_ENOTOURS   -5   /* the object is not a ringbloom segment (magic) */
#define RB_EENDIAN    -6   /* a ringbloom segment of the other byte order */
#define RB_EVERSION   -7   /* a ringbloom segment of another layout version */
#define RB_ETRUNC     -8   /* segment smaller than its header claims */
#define RB_ERETIRED   -9   /* segment retired: the writer moved to a newer one */
#define RB_EGONE     -10   /* the writer process that owns the segment is gone */
#define RB_EBUSY     -11   /* segment still initialising, or a read kept
                              racing the writer past the retry bound */
#define RB_ENOSPC    -12   /* segment reservation or /dev/shm is full */
#define RB_EEMPTY    -13   /* the ring has no nodes */
#define RB_ECORRUPT  -14   /* segment content fails validation */
#define RB_ESYS      -15   /* a system call failed; errno tells which */
#define RB_EACCES    -16   /* permission denied (shm object mode) */
#define RB_ERANGE    -17   /* a limit was exceeded (name length, points...) */
#define RB_EROFS     -18   /* writer function called on a read-only handle */
#define RB_EFULL     -19   /* a non-scaling filter is at capacity */
#define RB_EDAEMON   -20   /* the daemon cannot be reached (socket) */
#define RB_EPROTO    -21   /* the daemon's reply does not parse */
#define RB_EREPLY    -22   /* the daemon replied with an error; see
                              rb_conn_error() for its text */
#define RB_EPERM     -23   /* the daemon refused a mutation (NOPERM) */
#define RB_EOWNER    -24   /* not to be trusted: a shm object owned by
                              another user (a writer's takeover, or a reader's
                              expected owner) or writable by users other
                              than its owner (name squatting); a directory
                              another user made, could replace, or reached
                              through a symlink another user could have
                              put there (rb_trusted_dir) */
#define RB_ETIMEDOUT -25   /* the daemon did not answer within the
                              connection's timeout; a change sent may have
                              been applied */
#define RB_ELAYERS   -26   /* a scaling filter cannot grow: it has
                              RB_BLOOM_MAX_LAYERS layers (reserve it with a
                              larger capacity or expansion) */
#define RB_EPRECISION -27  /* the error rate is below what the filter's
                              layout reaches (blocked: more than
                              RB_BLOOM_BLOCKED_MAX_BPK bits per key would be
                              needed); RB_BLOOM_STANDARD reaches any p */
#define RB_ESLOTS    -28   /* no free filter directory slot: the segment
                              holds max_filters filters already */
#define RB_EWRONGTYPE -29  /* the name holds a filter of another kind (a
                              Bloom filter, not a count-min sketch, say) */

/* A static English description of code; never NULL. */
RB_EXPORT const char *rb_strerror(int code);

/* Any process.  The version of the library linked (RB_VERSION of the
 * header it was built with), e.g. to check it against the header a program
 * was compiled with. */
RB_EXPORT const char *rb_version(void);

/* A key given as pointer + length (arbitrary bytes), as the batch calls
 * (rb_bloom_add_many, rb_bloom_contains_many, rb_conn_bf_add_many) take
 * them. */
typedef struct rb_key {
    const void *ptr;
    size_t      len;
} rb_key_t;

#ifdef __cplusplus
}
#endif
#endif /* RINGBLOOM_CORE_H */
