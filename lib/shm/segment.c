/*
 * segment.c - the shared-memory segment: name, create, attach, grow, follow
 * a restarted daemon, retire, dump.  Taking over and restoring, which must
 * also check the contents, are adopt.c's.
 *
 * What: one POSIX shm object per instance ("/ringbloom.<instance>") holding
 * a header page, a fixed filter directory and a heap (ring copies, Bloom
 * bit arrays).  Why this shape: readers map the whole reservation
 * (header.max_size) once, read-only, and the writer grows the object in
 * place with ftruncate + posix_fallocate, so growth never needs a remap and
 * a reader never touches a byte the object does not have (every offset is
 * checked against header.size, which only grows).  Workload: created once
 * per daemon lifetime, attached once per client process.
 *
 * Huge pages (RB_SEGMENT_HUGE_PAGES, rb_segment_huge_pages): header.flags
 * says so; such a segment grows 2 MiB at a time and the writer collapses
 * each new 2 MiB into one page (MADV_COLLAPSE works whatever the tmpfs
 * huge= option; on huge=within_size / always the pages are huge already).
 * Every mapping of 2 MiB or more is 2 MiB-aligned, so readers map those
 * pages with PMD entries without knowing about them.
 *
 * Errors: each function returns an RB_E* code; on failure nothing is left
 * behind (no mapping, no fd, and for create no object in /dev/shm).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "segment.h"
#include "util.h"

#define SHM_PREFIX RBI_SHM_PREFIX

static int shm_name(const char *instance, char *buf, size_t cap)
{
    return rbi_shm_name(instance, "", buf, cap);
}

int rbi_shm_name(const char *instance, const char *suffix, char *buf, size_t cap)
{
    if (!rbi_instance_ok(instance))
        return RB_EINVAL;
    snprintf(buf, cap, "%s%s%s", SHM_PREFIX, instance, suffix);
    return RB_OK;
}


static uint64_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uint64_t)p : 4096u;
}

int rbi_segment_grow_to(rb_segment_t *seg, uint64_t new_size, int back)
{
    rbi_map_t *m = rbi_seg_map(seg);
    rb_header_shm_t *h = rbi_hdr(m);
    uint64_t old = rbi_ld(&h->size), want = new_size;
    int huge = rbi_seg_huge(m);
    int rc;

    new_size = rbi_round_up(want, huge ? RBI_HUGE_STEP : RBI_GROW_STEP);
    /* A reservation that is not whole 2 MiB (huge pages turned on after
     * creation) ends in a partial granule. */
    if (new_size > m->map_len && want <= m->map_len)
        new_size = m->map_len;
    if (new_size <= old)
        return RB_OK;
    if (new_size > m->map_len)
        return RB_ENOSPC;
    if (ftruncate(m->fd, (off_t)new_size) != 0)
        return rbi_errno_code(errno);
    /* Reserve the pages now: on a full /dev/shm a later store would
     * otherwise die of SIGBUS instead of returning an error here. */
    rc = back || huge ? posix_fallocate(m->fd, (off_t)old, (off_t)(new_size - old)) : 0;
    if (rc != 0) {
        if (ftruncate(m->fd, (off_t)old) != 0) {
            /* the object stays larger than size says: harmless, only
             * header.size bounds what readers touch */
        }
        return rbi_errno_code(rc);
    }
    if (huge)
        rbi_huge_collapse(m, old, new_size);
    /* Release: pairs with rbi_seg_size()'s acquire and
     * rbi_segment_check_header's: the bytes exist before any offset below
     * new_size is published, and whoever sees new_size finds the object at
     * least that large. */
    atomic_store_explicit(&h->size, new_size, memory_order_release);
    return RB_OK;
}

/* Where a writer of this host places the directory and the heap for
 * `slots` filters (rbi_segment_make). */
static uint64_t heap_offset_for(uint64_t slots)
{
    return rbi_round_up(RBI_HEADER_SIZE + slots * sizeof(rb_filter_shm_t), page_size());
}

/* What the header's identity words say, checked in this order: RB_OK for
 * a live segment of this layout, else the code attach reports. */
static int header_identity(const rb_header_shm_t *h)
{
    uint64_t magic = rbi_ld(&h->magic), state;

    if (magic != RBI_MAGIC)   /* 0: its creator has not written it yet */
        return magic == 0 ? RB_EBUSY
               : magic == __builtin_bswap64(RBI_MAGIC) ? RB_EENDIAN : RB_ENOTOURS;
    if (rbi_ld(&h->version) != RBI_LAYOUT_VERSION)
        return RB_EVERSION;
    /* Acquire: pairs with the creator's release store of LIVE
     * (rb_segment_go_live); all header fields below were written before. */
    state = atomic_load_explicit(&h->state, memory_order_acquire);
    if (state != RBI_STATE_LIVE)
        return state == RBI_STATE_INIT ? RB_EBUSY
               : state == RBI_STATE_RETIRED ? RB_ERETIRED : RB_ECORRUPT;
    return rbi_ld(&h->header_size) == RBI_HEADER_SIZE ? RB_OK : RB_ECORRUPT;
}

int rbi_segment_check_header(const rb_header_shm_t *h, int fd, uint64_t len)
{
    uint64_t size, max_size, dir_off, slots, heap_off;
    struct stat st;
    int rc = header_identity(h);

    if (rc != RB_OK)
        return rc;
    /* Acquire: pairs with rbi_segment_grow's release store of size, which
     * follows its ftruncate, so the object is at least this large when the
     * fstat below looks.  The object's size must be taken after this load:
     * taken before (as attach once did), a growth in between made a
     * healthy segment look truncated. */
    size = atomic_load_explicit(&h->size, memory_order_acquire);
    if (fd >= 0) {
        if (fstat(fd, &st) != 0)
            return rbi_errno_code(errno);
        len = (uint64_t)st.st_size;
    }
    max_size = rbi_ld(&h->max_size);
    if (size > len)
        return RB_ETRUNC;
    if (size < RBI_HEADER_SIZE || max_size < size || max_size > RB_MAX_MAX_SIZE)
        return RB_ECORRUPT;
    dir_off = rbi_ld(&h->dir_offset);
    slots = rbi_ld(&h->dir_slots);
    heap_off = rbi_ld(&h->heap_offset);
    /* Only the layout rbi_segment_make makes: a writer that took over
     * another one would write snapshots that rb_segment_restore (which
     * must create that layout) refuses, so its state could not be
     * restored. */
    if (dir_off != RBI_HEADER_SIZE || slots == 0 || slots > RB_MAX_FILTERS ||
        heap_off != heap_offset_for(slots) || heap_off > size)
        return RB_ECORRUPT;
    return RB_OK;
}

int rbi_writer_gone(const rb_header_shm_t *h)
{
    uint64_t pid = rbi_ld(&h->writer_pid);

    if (pid == 0 || pid > (uint64_t)INT32_MAX)
        return 1;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static rbi_map_t *map_new(void)
{
    static _Atomic uint64_t next_id = 1;
    rbi_map_t *m = calloc(1, sizeof(*m));

    if (m != NULL) {
        m->id = atomic_fetch_add(&next_id, 1);
        m->fd = -1;
    }
    return m;
}

static void map_free(rbi_map_t *m)
{
    while (m != NULL) {
        rbi_map_t *older = m->older;
        if (m->base != NULL)
            munmap(m->base, m->map_len);
        if (m->fd >= 0)
            close(m->fd);
        free(m);
        m = older;
    }
}

static rb_segment_t *seg_alloc(const char *instance)
{
    rb_segment_t *seg = calloc(1, sizeof(*seg));

    if (seg == NULL)
        return NULL;
    if (instance != NULL)
        strcpy(seg->instance, instance);
    seg->owner = (uid_t)-1;
    pthread_mutex_init(&seg->lock, NULL);
    return seg;
}

static void seg_free(rb_segment_t *seg)
{
    map_free(rbi_seg_map(seg));
    free(seg->heap.free);   /* the free list's storage (segment.h) */
    free(seg->dir_index);   /* one block (dir.c): nothing inside to release */
    pthread_mutex_destroy(&seg->lock);
    free(seg);
}

static int map_identify(rbi_map_t *m)
{
    struct stat st;

    if (fstat(m->fd, &st) != 0)
        return rbi_errno_code(errno);
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    return RB_OK;
}

void rb_segment_go_live(rb_segment_t *seg)
{
    if (seg == NULL || !seg->writable)
        return;
    /* Release: every field written before is visible to a reader that
     * acquires LIVE (header_identity). */
    atomic_store_explicit(&rbi_hdr(rbi_seg_map(seg))->state, RBI_STATE_LIVE, memory_order_release);
}

/* opts with the defaults filled in, checked; *heap_off: where the heap
 * starts for its directory. */
static int create_opts(const rb_segment_opts_t *opts, rb_segment_opts_t *o, uint64_t *heap_off)
{
    if (opts != NULL)
        *o = *opts;
    if (o->mode == 0)
        o->mode = 0640;
    if (o->max_filters == 0)
        o->max_filters = RB_DEFAULT_MAX_FILTERS;
    if ((o->mode & ~(mode_t)0755) != 0 || o->max_filters > RB_MAX_FILTERS ||
        o->max_size > RB_MAX_MAX_SIZE ||
        (o->flags & ~(RB_SEGMENT_HIDDEN | RB_SEGMENT_HUGE_PAGES)) != 0)
        return RB_EINVAL;
    *heap_off = heap_offset_for(o->max_filters);
    o->max_size = rb_segment_reservation(o->max_size);
    if (o->flags & RB_SEGMENT_HUGE_PAGES)   /* RB_MAX_MAX_SIZE is whole 2 MiB */
        o->max_size = rbi_round_up(o->max_size, RBI_HUGE_STEP);
    if (o->max_size < rbi_round_up(*heap_off, RBI_GROW_STEP) + RBI_GROW_STEP)
        return RB_EINVAL;
    return RB_OK;
}

uint64_t rb_segment_reservation(uint64_t max_size)
{
    if (max_size == 0)
        max_size = RB_DEFAULT_MAX_SIZE;
    return max_size > RB_MAX_MAX_SIZE ? 0 : rbi_round_up(max_size, RBI_GROW_STEP);
}

/* Creates the object (name, or a private memfd if NULL) with o's mode,
 * locks it, maps o->max_size bytes and commits the header page.  On
 * failure m->fd >= 0 says the object was created (the caller unlinks it). */
static int create_object(rbi_map_t *m, const char *name, const rb_segment_opts_t *o)
{
    void *base;
    int rc;

    if (name != NULL)
        m->fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    else
        m->fd = memfd_create("ringbloom", MFD_CLOEXEC);
    if (m->fd < 0)
        return rbi_errno_code(errno);
    /* The writer's lock: held for the life of this descriptor (and of the
     * process), so no second writer can take the object over. */
    if (flock(m->fd, LOCK_EX | LOCK_NB) != 0)
        return RB_EBUSY;
    if (fchmod(m->fd, o->mode) != 0)
        return rbi_errno_code(errno);
    if ((rc = map_identify(m)) != RB_OK)
        return rc;
    base = rbi_map_aligned(o->max_size, PROT_READ | PROT_WRITE, m->fd, RBI_HUGE_STEP);
    if (base == MAP_FAILED)
        return rbi_errno_code(errno);
    m->base = base;
    m->map_len = o->max_size;
    m->dir_off = RBI_HEADER_SIZE;
    m->dir_slots = o->max_filters;
    if (ftruncate(m->fd, RBI_HEADER_SIZE) != 0)
        return rbi_errno_code(errno);
    /* The header page is stored to next: reserve it like every later
     * granule (rbi_segment_grow), or a full /dev/shm kills the creator with
     * SIGBUS instead of returning RB_ENOSPC. */
    if ((rc = posix_fallocate(m->fd, 0, RBI_HEADER_SIZE)) != 0)
        return rbi_errno_code(rc);
    rbi_st(&rbi_hdr(m)->size, RBI_HEADER_SIZE);
    if (o->flags & RB_SEGMENT_HUGE_PAGES)
        rbi_huge_mark(m);   /* before the first growth, which is then 2 MiB */
    return RB_OK;
}

/* The header of a new segment, all but its state (INIT until go_live). */
static void header_init(rb_header_shm_t *h, const rb_segment_opts_t *o, uint64_t heap_off,
                        int named)
{
    rbi_st(&h->version, RBI_LAYOUT_VERSION);
    rbi_st(&h->header_size, RBI_HEADER_SIZE);
    rbi_st(&h->state, RBI_STATE_INIT);
    rbi_st(&h->generation, 1);
    rbi_st(&h->max_size, o->max_size);
    rbi_st(&h->writer_pid, named ? (uint64_t)getpid() : 0);
    rbi_st(&h->writer_start, (uint64_t)time(NULL));
    rbi_st(&h->heartbeat_ms, rbi_now_ms());
    rbi_st(&h->dir_offset, RBI_HEADER_SIZE);
    rbi_st(&h->dir_slots, o->max_filters);
    rbi_st(&h->heap_offset, heap_off);
    rbi_st(&h->created, (uint64_t)time(NULL));
    rbi_st(&h->next_incarnation, 1);
    rbi_st(&h->magic, RBI_MAGIC);
}

int rbi_segment_make(const char *instance, const char *suffix, const rb_segment_opts_t *opts,
                     int live, rb_segment_t **out)
{
    char name[RBI_SHM_NAME_MAX];
    rb_segment_opts_t o = { 0, 0, 0, 0 };
    uint64_t heap_off;
    rb_segment_t *seg;
    rbi_map_t *m;
    int rc;

    if (out == NULL)
        return RB_EINVAL;
    if ((rc = create_opts(opts, &o, &heap_off)) != RB_OK)
        return rc;
    if (instance != NULL &&
        (rc = rbi_shm_name(instance, suffix != NULL ? suffix : "", name, sizeof(name))) != RB_OK)
        return rc;
    seg = seg_alloc(instance);
    m = map_new();
    if (seg == NULL || m == NULL) {
        free(m);
        if (seg != NULL)
            seg_free(seg);
        return RB_ENOMEM;
    }
    atomic_store(&seg->map, m);
    seg->writable = 1;
    rc = create_object(m, instance != NULL ? name : NULL, &o);
    if (rc == RB_OK)
        rc = rbi_segment_grow(seg, heap_off + RBI_GROW_STEP);
    if (rc != RB_OK) {
        if (instance != NULL && m->fd >= 0)
            shm_unlink(name);
        seg_free(seg);
        return rc;
    }
    header_init(rbi_hdr(m), &o, heap_off, instance != NULL);
    if (live)
        rb_segment_go_live(seg);
    *out = seg;
    return RB_OK;
}

void rbi_segment_drop_rebuild(const char *instance)
{
    char name[RBI_SHM_NAME_MAX];

    if (instance != NULL &&
        rbi_shm_name(instance, RBI_REBUILD_SUFFIX, name, sizeof(name)) == RB_OK)
        (void)shm_unlink(name);
}

/* The name is this object's now: a rebuild's object that a writer killed
 * before its rename left (the segment itself removed since, so this
 * writer starts from the files, or from nothing) goes too. */
int rb_segment_create(const char *instance, const rb_segment_opts_t *opts,
                      rb_segment_t **out)
{
    int rc = rbi_segment_make(instance, NULL, opts,
                              opts == NULL || !(opts->flags & RB_SEGMENT_HIDDEN), out);

    if (rc == RB_OK)
        rbi_segment_drop_rebuild(instance);
    return rc;
}

int rb_segment_dump(const rb_segment_t *seg, int (*fn)(const void *, size_t, void *), void *arg)
{
    const rbi_map_t *m;

    if (seg == NULL || fn == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    m = rbi_seg_map(seg);
    /* Only the writer changes the segment, and it is here, between two
     * changes: no publish is half-done (the active ring copy is complete,
     * L1) and every live slot is complete, so the bytes are a state. */
    return fn(m->base, rbi_seg_size(m), arg) == 0 ? RB_OK : RB_ESYS;
}

/* Whether the object behind fd may be trusted (name squatting: /dev/shm
 * is writable by every user).  A writer takes over only an object its euid
 * owns; a reader trusts only one that nobody but its owner can write, and,
 * if owner is not (uid_t)-1, whose owner that is. */
static int owner_ok(const struct stat *st, int writable, uid_t owner)
{
    if (writable)
        return st->st_uid == geteuid();
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return 0;
    return owner == (uid_t)-1 || st->st_uid == owner;
}

int rbi_map_open(const char *instance, int writable, const rbi_map_t *skip, uid_t owner,
                    rbi_map_t **out)
{
    char name[sizeof(SHM_PREFIX) + RB_INSTANCE_MAX];
    int prot = PROT_READ | (writable ? PROT_WRITE : 0);
    const rb_header_shm_t *h;
    struct stat st;
    uint64_t max_size;
    rbi_map_t *m;
    void *base;
    int rc;

    if ((rc = shm_name(instance, name, sizeof(name))) != RB_OK)
        return rc;
    m = map_new();
    if (m == NULL)
        return RB_ENOMEM;
    m->fd = shm_open(name, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC, 0);
    if (m->fd < 0) {
        rc = rbi_errno_code(errno);
        goto fail;
    }
    if (fstat(m->fd, &st) != 0) {
        rc = rbi_errno_code(errno);
        goto fail;
    }
    m->dev = st.st_dev;
    m->ino = st.st_ino;
    m->owner = st.st_uid;
    if (!owner_ok(&st, writable, owner)) {
        rc = RB_EOWNER;
        goto fail;
    }
    if (skip != NULL && skip->dev == m->dev && skip->ino == m->ino) {
        rc = RB_EEXIST;
        goto fail;
    }
    if (st.st_size == 0) {
        rc = RB_EBUSY;
        goto fail;
    }
    if ((uint64_t)st.st_size < RBI_HEADER_SIZE) {
        rc = RB_ETRUNC;
        goto fail;
    }
    /* Map the header page alone first: max_size is only known from it.  It
     * stays backed: the object's owner, accepted above, never shrinks it.
     * This size is not compared with header.size: rbi_segment_check_header takes
     * the object's size again, after loading header.size. */
    base = mmap(NULL, RBI_HEADER_SIZE, PROT_READ, MAP_SHARED, m->fd, 0);
    if (base == MAP_FAILED) {
        rc = rbi_errno_code(errno);
        goto fail;
    }
    h = base;
    rc = rbi_segment_check_header(h, m->fd, 0);
    max_size = rbi_ld(&h->max_size);
    munmap(base, RBI_HEADER_SIZE);
    if (rc != RB_OK)
        goto fail;
    base = rbi_map_aligned(max_size, prot, m->fd, RBI_HUGE_STEP);
    if (base == MAP_FAILED) {
        rc = rbi_errno_code(errno);
        goto fail;
    }
    m->base = base;
    m->map_len = max_size;
    if (rbi_seg_huge(m))   /* the writer made the pages; this only asks to map them so */
        (void)madvise(m->base, m->map_len, MADV_HUGEPAGE);
    m->dir_off = rbi_ld(&rbi_hdr(m)->dir_offset);
    m->dir_slots = rbi_ld(&rbi_hdr(m)->dir_slots);
    *out = m;
    return RB_OK;

fail:
    map_free(m);
    return rc;
}

int rb_segment_attach(const char *instance, unsigned flags, rb_segment_t **out)
{
    return rb_segment_attach_owned(instance, flags, (uid_t)-1, out);
}

/* A handle on instance's existing object: a reader's, refused if its
 * writer is gone unless stale_ok, or a writer's, which takes the lock. */
static int seg_open(const char *instance, int writable, uid_t owner, int stale_ok,
                    rb_segment_t **out)
{
    rb_segment_t *seg = NULL;
    rbi_map_t *m;
    int rc = rbi_map_open(instance, writable, NULL, owner, &m);

    if (rc != RB_OK)
        return rc;
    if (writable && flock(m->fd, LOCK_EX | LOCK_NB) != 0)
        rc = RB_EBUSY;   /* a live writer: its process holds the lock until it exits */
    else if (!writable && !stale_ok && rbi_writer_gone(rbi_hdr(m)))
        rc = RB_EGONE;
    else if ((seg = seg_alloc(instance)) == NULL)
        rc = RB_ENOMEM;
    if (rc != RB_OK) {
        map_free(m);
        return rc;
    }
    /* A reader is pinned from now on: the handle follows a restarted
     * daemon only to an object of this owner (seg_poll), never to one
     * another user put under the name while the daemon was down. */
    if (!writable)
        seg->owner = m->owner;
    seg->writable = writable;
    atomic_store(&seg->map, m);
    *out = seg;
    return RB_OK;
}

int rb_segment_attach_owned(const char *instance, unsigned flags, uid_t owner,
                            rb_segment_t **out)
{
    if (instance == NULL || out == NULL || (flags & ~RB_ATTACH_STALE_OK) != 0)
        return RB_EINVAL;
    return seg_open(instance, 0, owner, (flags & RB_ATTACH_STALE_OK) != 0, out);
}

int rbi_segment_open_rw(const char *instance, rb_segment_t **out)
{
    return seg_open(instance, 1, (uid_t)-1, 0, out);
}

void rbi_segment_claim(rb_segment_t *seg)
{
    rb_header_shm_t *h = rbi_hdr(rbi_seg_map(seg));

    rbi_st(&h->writer_pid, (uint64_t)getpid());
    rbi_st(&h->writer_start, (uint64_t)time(NULL));
    rbi_st(&h->heartbeat_ms, rbi_now_ms());
}

void rb_segment_close(rb_segment_t *seg)
{
    if (seg != NULL)
        seg_free(seg);
}

int rb_segment_unlink(const char *instance)
{
    char name[sizeof(SHM_PREFIX) + RB_INSTANCE_MAX];
    int rc;

    if (instance == NULL)
        return RB_EINVAL;
    if ((rc = shm_name(instance, name, sizeof(name))) != RB_OK)
        return rc;
    if (shm_unlink(name) != 0)
        return rbi_errno_code(errno);
    return RB_OK;
}

int rb_segment_retire(rb_segment_t *seg, uint64_t next)
{
    rb_header_shm_t *h;

    if (seg == NULL)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    h = rbi_hdr(rbi_seg_map(seg));
    rbi_st(&h->next_generation, next);
    /* Release: a reader that sees RETIRED also sees next_generation. */
    atomic_store_explicit(&h->state, RBI_STATE_RETIRED, memory_order_release);
    return RB_OK;
}

int rb_segment_set_mode(rb_segment_t *seg, mode_t mode)
{
    if (seg == NULL || (mode & ~(mode_t)0755) != 0)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    return fchmod(rbi_seg_map(seg)->fd, mode) == 0 ? RB_OK : rbi_errno_code(errno);
}

int rb_segment_set_group(rb_segment_t *seg, gid_t gid)
{
    if (seg == NULL || gid == (gid_t)-1)
        return RB_EINVAL;
    if (!seg->writable)
        return RB_EROFS;
    return fchown(rbi_seg_map(seg)->fd, (uid_t)-1, gid) == 0 ? RB_OK : rbi_errno_code(errno);
}

void rb_segment_heartbeat(rb_segment_t *seg)
{
    if (seg != NULL && seg->writable)
        rbi_st(&rbi_hdr(rbi_seg_map(seg))->heartbeat_ms, rbi_now_ms());
}

int rb_segment_linked(const rb_segment_t *seg)
{
    char name[sizeof(SHM_PREFIX) + RB_INSTANCE_MAX];
    const rbi_map_t *m;
    struct stat st;
    int fd, rc;

    if (seg == NULL || seg->instance[0] == '\0')
        return RB_EINVAL;
    if ((rc = shm_name(seg->instance, name, sizeof(name))) != RB_OK)
        return rc;
    fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        /* Gone, or another user's object we may not even open. */
        return errno == ENOENT || errno == EACCES ? 0 : rbi_errno_code(errno);
    rc = fstat(fd, &st) == 0 ? RB_OK : rbi_errno_code(errno);
    close(fd);
    if (rc != RB_OK)
        return rc;
    m = rbi_seg_map(seg);
    return st.st_dev == m->dev && st.st_ino == m->ino;
}
