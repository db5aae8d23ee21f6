/*
 * ringbloom/segment.h - the shared-memory segment: creating it (writer),
 * attaching it (readers, pinned to the daemon's user), taking it over,
 * dumping and restoring it, retiring it, following a restarted daemon,
 * its figures.
 *
 * A part of ringbloom.h: programs include <ringbloom.h>, which includes
 * every part, and its conventions (return codes, who may call, handles,
 * keys) hold here.
 */
#ifndef RINGBLOOM_SEGMENT_H
#define RINGBLOOM_SEGMENT_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Process-local handle on a mapped segment (the shared struct behind it is
 * private to the library and described in docs/design.md). */
typedef struct rb_segment rb_segment_t;

/* Instance names: 1..RB_INSTANCE_MAX bytes of [A-Za-z0-9_.-], not starting
 * with '.'.  The shared-memory object is "/ringbloom.<instance>". */
#define RB_INSTANCE_MAX 64

typedef struct rb_segment_opts {
    mode_t   mode;         /* exact mode of the shm object; 0 -> 0640;
                              no write bits for group or others (readers
                              refuse such objects): RB_EINVAL */
    uint64_t max_size;     /* bytes of address space reserved for growth;
                              0 -> RB_DEFAULT_MAX_SIZE; the committed size
                              starts small and grows on demand */
    uint32_t max_filters;  /* directory slots; 0 -> RB_DEFAULT_MAX_FILTERS */
    uint32_t flags;        /* RB_SEGMENT_HIDDEN, RB_SEGMENT_HUGE_PAGES */
} rb_segment_opts_t;

/* Create / restore without going live: readers get RB_EBUSY until the
 * writer calls rb_segment_go_live() (e.g. after replaying a log). */
#define RB_SEGMENT_HIDDEN 0x1u

/* Back the segment with 2 MiB pages where the kernel allows (as
 * rb_segment_huge_pages does after creation): the reservation is rounded
 * up to whole 2 MiB, the object grows 2 MiB at a time and each new 2 MiB
 * is collapsed into one page.  Creation never fails for want of huge
 * pages: rb_segment_huge_status says whether they back it, and if not why
 * and what fixes it.  Readers need no flag: every mapping of 2 MiB or more
 * is 2 MiB-aligned, so it maps the huge pages the object has. */
#define RB_SEGMENT_HUGE_PAGES 0x2u

#define RB_DEFAULT_MAX_SIZE    (1ULL << 30)
#define RB_MAX_MAX_SIZE        (1ULL << 40)
#define RB_DEFAULT_MAX_FILTERS 256
#define RB_MAX_FILTERS         65536

/* Any process, pure.  The reservation rb_segment_create makes for a
 * requested max_size (0: RB_DEFAULT_MAX_SIZE): rounded up to whole growth
 * granules of 64 KiB, as the segment's rb_segment_info max_size will say
 * (with RB_SEGMENT_HUGE_PAGES create rounds it further, to whole 2 MiB).
 * 0 if max_size exceeds RB_MAX_MAX_SIZE (create refuses it: RB_EINVAL). */
RB_EXPORT uint64_t rb_segment_reservation(uint64_t max_size);

/* Writer.  Creates the shm object of `instance` with O_CREAT|O_EXCL, sets
 * its mode exactly (fchmod, so the umask does not interfere), sizes and
 * initialises it and marks it live.  `opts` may be NULL for defaults.
 * instance == NULL creates a private, anonymous segment (memfd) that only
 * this process (and children forked afterwards) can see: the same ring and
 * Bloom code then runs in-process, e.g. for offline tools and tests.
 * Errors: RB_EINVAL (bad name/options), RB_EEXIST (object exists: see
 * rb_segment_open_writer / rb_segment_unlink), RB_EACCES, RB_ENOSPC,
 * RB_ENOMEM, RB_ESYS.  On error nothing is left in /dev/shm.
 * Cost: a few system calls. */
RB_EXPORT RB_WUR int rb_segment_create(const char *instance,
                                       const rb_segment_opts_t *opts,
                                       rb_segment_t **out);

/* Attach flags. */
#define RB_ATTACH_STALE_OK  0x1u  /* attach even if the writer process is gone
                                     (serve the last published state) */

/* Reader.  Opens the object O_RDONLY and maps it PROT_READ, so the process
 * can never modify it (a store faults with SIGSEGV).  Validates the header:
 * RB_ENOENT (no such instance), RB_EACCES, RB_ENOTOURS (bad magic),
 * RB_EENDIAN, RB_EVERSION, RB_ETRUNC (object smaller than the header says;
 * never for a segment that is merely growing), RB_EBUSY (still being
 * created), RB_ERETIRED, RB_EGONE (writer process no longer exists, unless
 * RB_ATTACH_STALE_OK), RB_ECORRUPT (offsets out of range), RB_EOWNER (the
 * object is writable by group or others: anyone could rewrite what readers
 * trust).
 * Owner: the handle trusts the owner of the object it attached and no
 * other.  When it follows a restarted daemon (rb_segment_refresh, and
 * lookups by themselves) it moves only to an object of that owner, so it
 * never maps one another user put under the name meanwhile.  This matters
 * beyond the table it would read: the owner of an object can shrink it,
 * and a reader touching a page past the end dies of SIGBUS; the daemon
 * never shrinks its segment, other users might.  The first attach itself
 * takes whichever user's object carries the name, which while the daemon
 * is down may be a squatter's: readers that can, should name the daemon's
 * uid with rb_segment_attach_owned.
 * Cost: a few system calls; call once per process, not per query. */
RB_EXPORT RB_WUR int rb_segment_attach(const char *instance, unsigned flags,
                                       rb_segment_t **out);

/* Reader.  rb_segment_attach, and the object (now and whenever the handle
 * follows a restarted daemon to a new one) must be owned by `owner`, the
 * daemon's uid: else RB_EOWNER.  /dev/shm is writable by every user, so
 * while the daemon is down another user could create an object under its
 * name; pinning the owner keeps such a squatter's table out.  The daemon's
 * uid: rb_daemon_uid(), or the application's configuration.  Example:
 *     uid_t uid;
 *     if (rb_daemon_uid("default", NULL, (uid_t)-1, &uid, why, sizeof(why)) == RB_OK)
 *         rc = rb_segment_attach_owned("default", 0, uid, &seg);  */
RB_EXPORT RB_WUR int rb_segment_attach_owned(const char *instance, unsigned flags,
                                             uid_t owner, rb_segment_t **out);

/* Writer.  Re-opens an existing live segment read-write to take over as its
 * writer (a restarted daemon): validates the header, every live filter and
 * the active ring copy (RB_ECORRUPT if anything is out of bounds, overlaps,
 * or is a filter kind this library does not know), records this process as
 * the writer, and rebuilds the free-space map from the live objects.  The
 * inactive ring copy is not read: the next publish rewrites it.
 * A writer holds an exclusive flock on the object for as long as its
 * process lives (create takes it too), so a second writer gets RB_EBUSY.
 * Only an object this process's euid owns is taken over (RB_EOWNER: another
 * user created it, perhaps to feed readers its own table).
 * Errors: as rb_segment_attach, plus RB_ECORRUPT, RB_EBUSY, RB_EOWNER. */
RB_EXPORT RB_WUR int rb_segment_open_writer(const char *instance,
                                            rb_segment_t **out);

/* Writer.  Passes the segment's committed bytes (header, directory, heap)
 * to fn in one call: a snapshot.  The caller must not change the segment
 * meanwhile (a single-threaded daemon trivially does not).  fn returns 0 on
 * success.  Errors: RB_EROFS, RB_ESYS (fn failed). */
RB_EXPORT RB_WUR int rb_segment_dump(const rb_segment_t *seg,
                                     int (*fn)(const void *data, size_t len, void *arg),
                                     void *arg);

/* A dump of the segment as it was at one instant, written by another
 * thread while the writer goes on changing it (a background snapshot).
 * Writer thread, between two changes: rb_segment_snap_begin freezes the
 * state of that instant (it copies the header and directory now, O(max
 * filters); the heap is copied on write: the writer's first store into a
 * page the dump has not reached saves that page first).  Any one thread,
 * once: rb_segment_snap_dump passes the bytes rb_segment_dump would have
 * passed at begin to fn, in order, in pieces of at most 1 MiB, except
 * that heap pages lying wholly inside free space at begin are passed as
 * zero bytes (they are never read: see rb_segment_snap_dump_sparse), while
 * the writer thread keeps changing the segment (no other thread may
 * change it).  Writer thread, after the dump returned (or instead of it):
 * rb_segment_snap_end frees it and tells how many bytes the writer saved
 * (*saved_bytes, if not NULL).  The writer must not close or retire the
 * segment in between.  Memory: at most the dump's size, saved pages being
 * freed as the dump passes them.  Errors: begin RB_EROFS, RB_EBUSY (one in
 * progress), RB_ENOMEM; dump RB_ESYS (fn failed), RB_ENOMEM (a page could
 * not be saved: the dump is incomplete). */
typedef struct rb_segment_snap rb_segment_snap_t;
RB_EXPORT RB_WUR int rb_segment_snap_begin(rb_segment_t *seg, rb_segment_snap_t **out);
RB_EXPORT RB_WUR int rb_segment_snap_dump(rb_segment_snap_t *snap,
                                          int (*fn)(const void *data, size_t len, void *arg),
                                          void *arg);
/* As rb_segment_snap_dump, but the heap pages that lay wholly inside free
 * space at begin (holes: nothing live is in them, and a restore does not
 * read them) are not passed to fn: each run of them is passed to hole
 * (its length in bytes, a multiple of 4096) at its place in the stream, so
 * the bytes fn and hole account for, in order, are the dump's length.  A
 * hole's bytes are never read from the segment (freed pages may have been
 * given back to the system); rb_segment_snap_dump passes them to fn as
 * zero bytes, so its dump is this one with every hole filled with zeros.
 * hole == NULL is rb_segment_snap_dump.  hole returns 0 on success.
 * Errors: as rb_segment_snap_dump (RB_ESYS also if hole failed). */
RB_EXPORT RB_WUR int rb_segment_snap_dump_sparse(rb_segment_snap_t *snap,
                                                 int (*fn)(const void *data, size_t len,
                                                           void *arg),
                                                 int (*hole)(uint64_t len, void *arg),
                                                 void *arg);
/* The bytes of the dump that are holes (known at begin). */
RB_EXPORT uint64_t rb_segment_snap_holes(const rb_segment_snap_t *snap);
/* The length of the dump: the committed bytes at begin. */
RB_EXPORT uint64_t rb_segment_snap_size(const rb_segment_snap_t *snap);
RB_EXPORT void rb_segment_snap_end(rb_segment_snap_t *snap, uint64_t *saved_bytes);

/* Writer.  Creates instance's object from a dump (like rb_segment_create,
 * O_EXCL, exact mode) and fills it while readers are still refused
 * (RB_EBUSY), then validates every offset the dump names (heap extents
 * without overlap, every live filter, the active ring copy) and only then
 * makes it live.  The dump's
 * directory size is kept; opts->max_size may raise its reservation.
 * dump must be 8-byte aligned (a mmap of the file is).  instance == NULL
 * restores into a private segment, as rb_segment_create.  Errors: as attach
 * for a bad header (RB_ENOTOURS, RB_EVERSION, ...), RB_ECORRUPT for bad
 * contents (nothing is left behind), RB_EEXIST, RB_ENOSPC. */
RB_EXPORT RB_WUR int rb_segment_restore(const char *instance, const rb_segment_opts_t *opts,
                                        const void *dump, size_t len, rb_segment_t **out);

/* Writer.  Makes a segment created or restored with RB_SEGMENT_HIDDEN
 * visible to readers.  No-op if it is live already. */
RB_EXPORT void rb_segment_go_live(rb_segment_t *seg);

/* Unmaps and frees the handle; the shared object stays (see unlink).
 * Any rb_bloom_t opened on it must be closed first.  NULL is a no-op. */
RB_EXPORT void rb_segment_close(rb_segment_t *seg);

/* Removes the name of instance's shm object; processes that have it mapped
 * keep their mapping.  RB_ENOENT if it does not exist. */
RB_EXPORT int rb_segment_unlink(const char *instance);

/* Writer.  Marks the segment retired in favour of generation `next`:
 * attached readers see RB_ERETIRED from rb_segment_check() and should
 * re-attach; new attaches are refused.  Ring and filters stay readable. */
RB_EXPORT RB_WUR int rb_segment_retire(rb_segment_t *seg, uint64_t next);

/* Writer.  A new object of seg's instance holding seg's state as a
 * restart from a dump would (rb_segment_restore: only the live extents
 * copied, the object cut where the last one ends, so the free tail is
 * gone; one generation up), live and put under the instance's name in
 * place of seg's object in one rename: a reader that opens the name
 * finds one of the two, both complete, never none.  seg is left as it is
 * (mapped, live, its name gone): the caller sets the new object's group
 * (rb_segment_set_group), retires seg in favour of the new generation so
 * that its readers follow (rb_segment_retire), closes it and writes on
 * *out.  Call it between two changes.  It copies the live data (a moment
 * of twice its memory).  A rebuild cut short by the process's death
 * leaves an object under a second name, which the instance's next
 * rebuild, takeover (rb_segment_open_writer) or restore removes.
 * RB_EINVAL (a private segment), RB_EROFS, RB_EBUSY (a snapshot of seg is
 * in progress: it reads seg), RB_ENOSPC, RB_ESYS; seg is unchanged then. */
RB_EXPORT RB_WUR int rb_segment_rebuild(rb_segment_t *seg, const rb_segment_opts_t *opts,
                                        rb_segment_t **out);

/* Reader or writer.  1 if instance's name in /dev/shm still leads to this
 * handle's object, 0 if the name is gone or leads to another object (a
 * writer whose object was unlinked under it should republish its state:
 * rb_segment_dump into rb_segment_restore, then rb_segment_retire the old
 * one so its readers move).  Costs an shm_open and an fstat.  Errors:
 * RB_EINVAL (a private segment has no name), RB_ESYS. */
RB_EXPORT RB_WUR int rb_segment_linked(const rb_segment_t *seg);

/* Writer.  Sets the exact mode of the shm object (fchmod), e.g. when a
 * restarted writer's configuration changed it.  RB_EROFS, RB_EINVAL (write
 * bits for group or others, as rb_segment_create), RB_ESYS. */
RB_EXPORT RB_WUR int rb_segment_set_mode(rb_segment_t *seg, mode_t mode);

/* Writer.  Gives the shm object group gid (fchown on the writer's
 * descriptor, never by name, so it is this object whatever the name now
 * leads to), so that with a mode such as 0640 the group's members attach
 * it; the owner stays the writer's euid, the one readers pin.  The kernel
 * allows it to root and to a member of gid.  Call it before readers are
 * sent to the object (before rb_segment_go_live of a hidden segment, or
 * before retiring the one it replaces).  Errors: RB_EROFS, RB_EINVAL
 * (gid (gid_t)-1), RB_EACCES (not root nor a member of gid), RB_ESYS.
 * Cost: one system call. */
RB_EXPORT RB_WUR int rb_segment_set_group(rb_segment_t *seg, gid_t gid);

/* Writer.  Stores the current time as the writer's heartbeat (cheap). */
RB_EXPORT void rb_segment_heartbeat(rb_segment_t *seg);

/* Reader.  Re-validates the header of an attached segment: 0 if live,
 * RB_ERETIRED, or RB_EGONE if the writer process no longer exists.  Costs
 * one kill(pid, 0) system call; lookups do not call it. */
RB_EXPORT int rb_segment_check(const rb_segment_t *seg);

/* Reader.  Moves the handle to the live object of its instance if the
 * current one was retired or its writer stopped heartbeating and a new
 * object (a restarted daemon's) of the owner the handle trusts exists (see
 * rb_segment_attach: another user's object is never mapped).  Lookups do
 * this by themselves, every 1024 calls per thread, at most every 250 ms per
 * handle; this call does it now.  Returns 1 if the handle moved, 0 if not (still current, or
 * nothing newer to move to).  Mappings it leaves stay mapped, so other
 * threads need not stop: as they were for 10 s (a read section inside one
 * ends long before), then as zero pages, which a read rejects and retries
 * on the current object: the old object's memory is given back then, not
 * at rb_segment_close. */
RB_EXPORT int rb_segment_refresh(rb_segment_t *seg);

typedef struct rb_segment_info {
    uint64_t version;       /* layout version */
    uint64_t generation;    /* segment generation */
    uint64_t size;          /* committed bytes */
    uint64_t max_size;      /* reserved bytes */
    uint64_t used;          /* bytes in use: header and directory, ring
                               copies, filter arrays */
    uint64_t writer_pid;
    uint64_t created;       /* unix seconds */
    uint64_t heartbeat_ms;  /* unix milliseconds of the last heartbeat */
    uint32_t filters;       /* live filters */
    uint32_t max_filters;
    int      writable;      /* 1 for a writer handle */
    mode_t   mode;          /* mode of the shm object */
} rb_segment_info_t;

/* Reader or writer.  Fills *out.  Cost: O(max_filters) loads. */
RB_EXPORT int rb_segment_info(const rb_segment_t *seg, rb_segment_info_t *out);

typedef struct rb_segment_memory {
    uint64_t used;          /* live bytes: rb_segment_info's used (header and
                               directory, ring copies, filter arrays) */
    uint64_t committed;     /* the object's size (header.size) */
    uint64_t reserved;      /* the mapping's size (max_size): address space,
                               not memory */
    uint64_t free;          /* committed bytes no live data uses */
    uint64_t resident;      /* bytes of the object in memory now (its
                               allocated blocks: fstat st_blocks * 512) */
    uint64_t unreleased;    /* writer: bytes freed during a snapshot whose
                               pages rb_segment_trim has not given back yet;
                               0 for a reader */
    uint64_t tail;          /* writer: the free bytes at the object's end,
                               past its last live extent: what
                               rb_segment_rebuild cuts; 0 for a reader */
} rb_segment_memory_t;

/* Reader or writer.  Fills *out: what the segment holds (used), what its
 * object takes from /dev/shm (resident) and what lies between.  Freed heap
 * space goes back to the system (the writer punches its whole pages out of
 * the object, keeping its size), so resident follows used: it exceeds it
 * by the partial pages around live extents, by pages a reader's fault put
 * back until the next sweep, by `unreleased`, and in a huge-page segment
 * by the free parts of 2 MiB pages still partly used.  RB_EINVAL.  Cost:
 * rb_segment_info's and one fstat. */
RB_EXPORT int rb_segment_memory(const rb_segment_t *seg, rb_segment_memory_t *out);

/* Writer.  Gives back to the system the pages of freed heap space that are
 * still in memory: with sweep 0 what is pending (freed while a snapshot was
 * in progress, or more than one free could give back in its time), with
 * sweep 1 the whole pages of every free run (also those a reader's read
 * fault put back into a hole).  Whole 2 MiB pieces only in a huge-page
 * segment.  The object's size and every mapping stay: a reader still
 * inside freed space reads zeros and retries.  One call works about 10 ms
 * at most (a release costs about 0.3 ms per MB) and the next goes on where
 * it stopped: a daemon calls it every second (sweep 1 every ten), so a
 * freed GB is back within a few seconds and no call holds its loop long.
 * RB_OK, RB_EINVAL, RB_EROFS, RB_EBUSY (a snapshot is in progress: the
 * pages stay pending). */
RB_EXPORT int rb_segment_trim(rb_segment_t *seg, int sweep);

/* Writer.  Turns huge pages on for a live segment, as if it had been
 * created with RB_SEGMENT_HUGE_PAGES (on one that has them, collapses
 * again whatever is not in 2 MiB pages, e.g. after taking it over): the committed size is rounded up to
 * whole 2 MiB (within the reservation), every committed 2 MiB is collapsed
 * into one page (madvise MADV_COLLAPSE, Linux 6.1; on a tmpfs mounted
 * huge=within_size or huge=always the pages are huge already) and later
 * growth is by 2 MiB.  The segment is recorded as a huge-page one (readers
 * and a restarted writer see it).  A daemon uses this when its
 * configuration asks for huge pages on a segment made without them.
 * RB_OK (also when the kernel gave no huge page: see
 * rb_segment_huge_status), RB_EROFS, RB_ENOSPC (growing to 2 MiB failed:
 * nothing changed). */
RB_EXPORT RB_WUR int rb_segment_huge_pages(rb_segment_t *seg);

typedef struct rb_segment_huge {
    int      requested;     /* 1: the segment is a huge-page one */
    uint64_t committed;     /* committed bytes (header.size) */
    uint64_t huge_bytes;    /* bytes of this handle's mapping mapped by 2 MiB
                               pages now (ShmemPmdMapped + FilePmdMapped in
                               /proc/self/smaps); a reader counts only what it
                               has touched, the writer every collapsed byte */
    char     mount[64];     /* the filesystem holding the object, with its
                               huge= option: "tmpfs /dev/shm huge=never",
                               "shmem (internal)" for a private segment */
    char     why[512];      /* writer, if requested: "" when huge_bytes covers
                               every whole committed 2 MiB, else why the pages
                               are small and the fix; "" for a reader */
} rb_segment_huge_t;

/* Reader or writer.  Fills *out.  Cost: reads /proc/self/smaps and
 * /proc/self/mountinfo (tens of microseconds to a millisecond): for INFO
 * and start-up messages, not for every call. */
RB_EXPORT int rb_segment_huge_status(const rb_segment_t *seg, rb_segment_huge_t *out);

#ifdef __cplusplus
}
#endif
#endif /* RINGBLOOM_SEGMENT_H */
