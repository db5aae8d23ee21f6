/*
 * segment.h - the process-local handles on a segment (segment.c): one
 * mapping of one shm object (rbi_map_t), the handle that holds the
 * current mapping (struct rb_segment), and the accessors every reader and
 * writer uses to reach the header and the directory through it.
 */
#ifndef RBI_SEGMENT_H
#define RBI_SEGMENT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "format.h"
#include "ringbloom.h"

/* An extent of the heap: [off, off + len). */
typedef struct rbi_extent {
    uint64_t off, len;
} rbi_extent_t;

/* The writer's free list, kept by the allocator above this file (heap.c,
 * heap.h); the handle owns its memory: seg_free frees `free` with the
 * handle (malloc'd, or NULL). */
typedef struct rbi_heap {
    rbi_extent_t *free;   /* sorted by offset, coalesced */
    size_t n, cap;
    int built;            /* 0 until the first allocation or a rebuild */
    uint64_t unreleased;  /* bytes freed whose pages were not given back
                             yet (a snapshot was in progress, a release ran
                             out of its time, or a rebuild): rb_segment_trim
                             gives them back */
    uint64_t release_at;  /* free runs from this offset on may still hold
                             pages; UINT64_MAX: none */
} rbi_heap_t;

/* One mapping of one shm object.  Immutable once published in a handle;
 * a reader handle that moves to a newer object keeps the old mapping until
 * rb_segment_close, so threads still reading it stay safe. */
typedef struct rbi_map {
    uint64_t id;             /* unique in the process, never reused */
    unsigned char *base;     /* mapping of map_len (= header.max_size) bytes */
    size_t map_len;
    int fd;
    uint64_t dir_off;        /* directory placement, validated at open; the */
    uint64_t dir_slots;      /* writer never changes them afterwards */
    dev_t dev;               /* identity of the object, to notice a new one */
    ino_t ino;
    uid_t owner;             /* the object's owner when it was opened */
    int collapse_err;        /* writer: errno of the last MADV_COLLAPSE that
                                failed (huge pages), 0 if none did */
    struct rbi_map *older;   /* replaced mappings, freed at close */
    uint64_t replaced_ms;    /* reader: when a newer one replaced it */
    int zeroed;              /* reader: its range is zero pages now and its
                                fd closed (follow.c: after a grace) */
} rbi_map_t;

struct rb_segment {
    _Atomic(rbi_map_t *) map; /* current mapping (a writer's never changes) */
    int writable;
    char instance[RB_INSTANCE_MAX + 1]; /* "" for a private segment */
    rbi_heap_t heap;         /* writer only */
    void *dir_index;         /* writer only: dir.c's name index (D1), one
                                malloc'ed block, or NULL */
    rb_segment_snap_t *snap; /* writer only: the dump in progress (snap.h), or NULL */
    pthread_mutex_t lock;    /* reader: serialises moving to a new object */
    _Atomic uint64_t next_poll_ms; /* reader: earliest next look for one */
    _Atomic uint64_t reclaim_ms; /* reader: when a replaced mapping's grace
                                ends (follow.c), 0: none pending */
    uid_t owner;             /* reader: the owner of every object it maps:
                                given at attach, or else the first one's */
};

/* The handle's current mapping.  Readers call rbi_reader_map(), which also
 * notices (cheaply, every RBI_POLL_CALLS calls per thread) a retired
 * segment or a restarted daemon and moves the handle to the live object. */
static inline rbi_map_t *rbi_seg_map(const rb_segment_t *seg)
{
    return atomic_load_explicit(&((rb_segment_t *)seg)->map, memory_order_acquire);
}

#define RBI_POLL_CALLS 1024u    /* calls per thread between liveness looks */
#define RBI_POLL_MS    250u     /* at most one reopen attempt per handle per */
#define RBI_STALE_MS   3000u    /* a heartbeat older than this: writer gone */

/* Moves a reader handle to its instance's live object if the current one
 * is retired or silent (at most every RBI_POLL_MS), and gives back the
 * memory of mappings it replaced long enough ago (follow.c). */
void rbi_segment_poll(rb_segment_t *seg);

static inline rbi_map_t *rbi_reader_map(const rb_segment_t *seg)
{
    /* initial-exec: in the shared library the default model calls
     * __tls_get_addr on every query; a 4-byte variable fits the static TLS
     * surplus glibc keeps for libraries loaded later (dlopen). */
    static _Thread_local uint32_t tick __attribute__((tls_model("initial-exec")));

    if ((++tick % RBI_POLL_CALLS) == 0 && !seg->writable && seg->instance[0] != '\0')
        rbi_segment_poll((rb_segment_t *)seg);
    return rbi_seg_map(seg);
}

static inline rb_header_shm_t *rbi_hdr(const rbi_map_t *m)
{
    return (rb_header_shm_t *)(void *)m->base;
}

/* Word pointer at a byte offset that the caller has bounds-checked. */
static inline _Atomic uint64_t *rbi_word_at(const rbi_map_t *m, uint64_t off)
{
    return (_Atomic uint64_t *)(void *)(m->base + off);
}

/* The committed size: every byte below it is inside the object (free heap
 * pages may be holes, which read as zeros: heap.c). */
static inline uint64_t rbi_seg_size(const rbi_map_t *m)
{
    /* Acquire pairs with rbi_segment_grow's release store after growing
     * the object: the grown bytes exist before anyone may read them. */
    return atomic_load_explicit(&rbi_hdr(m)->size, memory_order_acquire);
}

static inline rb_filter_shm_t *rbi_dir_slot(const rbi_map_t *m, uint64_t i)
{
    return (rb_filter_shm_t *)(void *)(m->base + m->dir_off + i * sizeof(rb_filter_shm_t));
}

/* ---- huge pages (header.flags RBI_HDR_HUGE) ----------------------------- */

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25   /* Linux 6.1; older C libraries lack the name */
#endif

static inline int rbi_seg_huge(const rbi_map_t *m)
{
    return (rbi_ld(&rbi_hdr(m)->flags) & RBI_HDR_HUGE) != 0;
}

/* Writer.  Records m's segment as a huge-page one (readers and a writer
 * taking it over see header.flags) and asks for huge pages on the writer's
 * mapping (MADV_HUGEPAGE: what a tmpfs mounted huge=advise needs for pages
 * that faults allocate; harmless elsewhere). */
static inline void rbi_huge_mark(rbi_map_t *m)
{
    rbi_st(&rbi_hdr(m)->flags, rbi_ld(&rbi_hdr(m)->flags) | RBI_HDR_HUGE);
    (void)madvise(m->base, m->map_len, MADV_HUGEPAGE);
}

/* Writer.  Makes the whole 2 MiB pieces of [from, to) one page each: on a
 * tmpfs mounted huge=never or advise the object's pages are small, since
 * posix_fallocate allocates them outside any mapping; MADV_COLLAPSE copies
 * them into a 2 MiB page whatever the mount says (on huge=within_size or
 * always they are huge already and it only maps them so).  A failure is no
 * error (the bytes are there, in small pages): m->collapse_err keeps its
 * errno for rb_segment_huge_status. */
static inline void rbi_huge_collapse(rbi_map_t *m, uint64_t from, uint64_t to)
{
    from -= from % RBI_HUGE_STEP;
    to -= to % RBI_HUGE_STEP;
    if (to > from)
        m->collapse_err = madvise(m->base + from, to - from, MADV_COLLAPSE) == 0 ? 0 : errno;
}

/* Writer.  Grows the object to at least new_size (rounded up to
 * RBI_GROW_STEP, or RBI_HUGE_STEP within the reservation for a huge-page
 * segment, whose new bytes it then collapses into 2 MiB pages) and
 * publishes the new header.size.  RB_ENOSPC past the
 * reservation, or the errno code of ftruncate / posix_fallocate. */
int rbi_segment_grow_to(rb_segment_t *seg, uint64_t new_size, int back);
static inline int rbi_segment_grow(rb_segment_t *seg, uint64_t new_size)
{
    return rbi_segment_grow_to(seg, new_size, 1);
}
/* back == 0: the same without reserving the new pages (a huge-page
 * segment's are reserved all the same): for a restore (adopt.c), which
 * reserves the pages of the live data it copies and leaves the free space
 * to the allocator, which backs an extent before handing it out. */

/* ---- for follow.c: a reader moving to a newer object --------------------- */

/* Opens and maps instance (writable or not) and validates its header.  If
 * skip is given and the object is that same one (dev, ino), stops early with
 * RB_EEXIST. */
int rbi_map_open(const char *instance, int writable, const rbi_map_t *skip, uid_t owner,
                 rbi_map_t **out);

/* 1 if the writer process the header names no longer exists. */
int rbi_writer_gone(const rb_header_shm_t *h);

/* ---- for adopt.c: a writer adopting contents it did not make ------------ */

/* Creates the object of instance (NULL: private) as rb_segment_create
 * does; it goes live only if `live` (a restore fills it first).  suffix
 * (NULL: none) is appended to the object's name, not to the handle's
 * instance: a rebuild (adopt.c) makes its object under a name no reader
 * looks up and renames it into place. */
int rbi_segment_make(const char *instance, const char *suffix, const rb_segment_opts_t *opts,
                     int live, rb_segment_t **out);

/* A rebuild's object, under a name no reader looks up ('~' is not in an
 * instance name) until it is renamed into place. */
#define RBI_REBUILD_SUFFIX "~rebuild"

/* Removes what a rebuild cut short (its process killed before the rename)
 * left under instance (NULL: nothing).  Only the instance's writer calls
 * it: whoever holds the name (rb_segment_open_writer, a restore or
 * rb_segment_create under it) or a rebuild about to make its object. */
void rbi_segment_drop_rebuild(const char *instance);

/* The shm object names: RBI_SHM_PREFIX instance suffix, the file
 * RBI_SHM_DIR name (glibc's shm_open resolves every name there). */
#define RBI_SHM_PREFIX   "/ringbloom."
#define RBI_SHM_DIR      "/dev/shm"
#define RBI_SHM_NAME_MAX (sizeof(RBI_SHM_PREFIX) + RB_INSTANCE_MAX + 16)

/* Fills buf with instance's object name plus suffix ("" for the
 * object itself).  RB_EINVAL for a bad instance name. */
int rbi_shm_name(const char *instance, const char *suffix, char *buf, size_t cap);

/* Opens, maps read-write and locks instance's existing object, checking its
 * header only (RB_EBUSY: another writer holds the lock). */
int rbi_segment_open_rw(const char *instance, rb_segment_t **out);

/* Records this process as the writer (pid, start, heartbeat). */
void rbi_segment_claim(rb_segment_t *seg);

/* The header checks every attach, takeover and restore share.  The bytes
 * behind h: the object's size by fstat(fd) if fd >= 0, else len (a
 * dump's).  RB_OK or the RB_E* code of the first failed check. */
int rbi_segment_check_header(const rb_header_shm_t *h, int fd, uint64_t len);

#endif /* RBI_SEGMENT_H */
