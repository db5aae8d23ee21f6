/*
 * util.c - what every file of the library may call: the error texts
 * (rb_strerror), the library's version (rb_version), the clock, the errno mapping, the instance-name rule and
 * copying bytes into shared words.  It calls nothing else of the library.
 */
#include "config.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>

#include "ringbloom.h"
#include "util.h"

const char *rb_strerror(int code)
{
    switch (code) {
    case RB_OK:       return "success";
    case RB_ENOMEM:   return "out of memory";
    case RB_EINVAL:   return "invalid argument";
    case RB_ENOENT:   return "no such instance, filter or node";
    case RB_EEXIST:   return "already exists";
    case RB_ENOTOURS: return "not a ringbloom segment (bad magic)";
    case RB_EENDIAN:  return "ringbloom segment of the other byte order";
    case RB_EVERSION: return "ringbloom segment layout version mismatch";
    case RB_ETRUNC:   return "segment truncated: smaller than its header claims";
    case RB_ERETIRED: return "segment retired: the daemon moved to a newer generation";
    case RB_EGONE:    return "the daemon that owns the segment is gone";
    case RB_EBUSY:    return "segment busy: being initialised, or a read kept racing the writer";
    case RB_ENOSPC:   return "no space: segment reservation or /dev/shm is full";
    case RB_EEMPTY:   return "the ring has no nodes";
    case RB_ECORRUPT: return "segment content is corrupt";
    case RB_ESYS:     return "system call failed";
    case RB_EACCES:   return "permission denied";
    case RB_ERANGE:   return "limit exceeded";
    case RB_EROFS:    return "read-only handle: only the writer may change the segment";
    case RB_EFULL:    return "non-scaling filter is full";
    case RB_EDAEMON:  return "cannot reach the daemon (is ringbloomd running?)";
    case RB_EPROTO:   return "unexpected reply from the daemon";
    case RB_EREPLY:   return "the daemon replied with an error";
    case RB_EPERM:    return "the daemon refused: no permission for this change";
    case RB_EOWNER:   return "not to be trusted: another user owns it, can write it, "
                             "or could have put it there";
    case RB_ETIMEDOUT: return "the daemon did not answer in time (a change sent may "
                              "have been applied)";
    case RB_ELAYERS:  return "scaling filter has its maximum number of layers";
    case RB_EPRECISION: return "error rate below what the filter's layout can reach";
    case RB_ESLOTS:   return "no free filter slot: the segment holds its maximum number of filters";
    case RB_EWRONGTYPE: return "the name holds a filter of another kind";
    default:          return "unknown error";
    }
}

const char *rb_version(void)
{
    return RB_VERSION;
}

int rbi_errno_code(int e)
{
    switch (e) {
    case ENOENT: return RB_ENOENT;
    case EEXIST: return RB_EEXIST;
    case EACCES:
    case EPERM:  return RB_EACCES;
    case ENOSPC: return RB_ENOSPC;
    case ENOMEM: return RB_ENOMEM;
    case EINVAL:
    case ENAMETOOLONG: return RB_EINVAL;
    default:     return RB_ESYS;
    }
}

uint64_t rbi_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void rbi_copy_in(_Atomic uint64_t *dst, const void *src, size_t bytes)
{
    const unsigned char *s = src;
    size_t i;

    for (i = 0; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        rbi_st(&dst[i / 8], w);
    }
    if (i < bytes) {
        uint64_t w = 0;
        memcpy(&w, s + i, bytes - i);
        rbi_st(&dst[i / 8], w);
    }
}

int rbi_instance_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > RB_INSTANCE_MAX || s[0] == '.')
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

void *rbi_map_aligned(size_t len, int prot, int fd, size_t align)
{
    size_t span = len + align;
    unsigned char *raw, *al;

    if (len < align)
        return mmap(NULL, len, prot, MAP_SHARED, fd, 0);
    raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
        return MAP_FAILED;
    al = raw + (align - (uintptr_t)raw % align) % align;
    if (mmap(al, len, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        int e = errno;
        munmap(raw, span);
        errno = e;
        return MAP_FAILED;
    }
    if (al > raw)
        munmap(raw, (size_t)(al - raw));
    if (al + len < raw + span)
        munmap(al + len, (size_t)(raw + span - (al + len)));
    return al;
}
