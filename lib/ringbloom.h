/*
 * ringbloom.h - the one public header of libringbloom.
 *
 * libringbloom shares two hashing structures between the processes of one
 * host through a POSIX shared-memory segment:
 *
 *   - a consistent-hash ring (virtual nodes, integer weights) answering
 *     "which node owns this key?", and
 *   - Bloom filters answering "was this key (maybe) seen before?".
 *
 * One process, the *writer* (normally the daemon ringbloomd), creates the
 * segment and is the only one that changes it.  Any number of *readers* map
 * it read-only (O_RDONLY + PROT_READ) and query it without a system call,
 * allocation or lock; they never wait for the writer (see docs/design.md for
 * the seqlock/latch protocol that makes this safe).
 *
 * Conventions, for every function below unless it says otherwise:
 *   - int-returning functions return 0 (RB_OK) or a positive answer on
 *     success and a negative RB_E* code on failure; rb_strerror() names it.
 *     On failure no state changes and output parameters are unspecified.
 *   - "Reader" functions may be called from any process that attached the
 *     segment, from any number of threads at once on one handle.
 *   - "Writer" functions may only be called by the process that created or
 *     re-opened the segment for writing, from one thread at a time.
 *   - Handles (rb_segment_t, rb_ring_t, rb_bloom_t) are owned by the caller
 *     that obtained them and released with the matching close/free function.
 *   - Keys are arbitrary bytes (NUL and non-UTF-8 bytes included) given as
 *     pointer + length.
 */
#ifndef RINGBLOOM_H
#define RINGBLOOM_H

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

/* A static English description of code; never NULL. */
RB_EXPORT const char *rb_strerror(int code);

/* Any process.  The version of the library linked (RB_VERSION of the
 * header it was built with), e.g. to check it against the header a program
 * was compiled with. */
RB_EXPORT const char *rb_version(void);

/* ------------------------------------------------------------------------ */
/* Segment                                                                  */
/* ------------------------------------------------------------------------ */

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
    uint32_t flags;        /* RB_SEGMENT_HIDDEN */
} rb_segment_opts_t;

/* Create / restore without going live: readers get RB_EBUSY until the
 * writer calls rb_segment_go_live() (e.g. after replaying a log). */
#define RB_SEGMENT_HIDDEN 0x1u

#define RB_DEFAULT_MAX_SIZE    (1ULL << 30)
#define RB_MAX_MAX_SIZE        (1ULL << 40)
#define RB_DEFAULT_MAX_FILTERS 256
#define RB_MAX_FILTERS         65536

/* Any process, pure.  The reservation rb_segment_create makes for a
 * requested max_size (0: RB_DEFAULT_MAX_SIZE): rounded up to whole growth
 * granules of 64 KiB, as the segment's rb_segment_info max_size will say.
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
 * nothing newer to move to).  Mappings it leaves stay valid until
 * rb_segment_close, so other threads need not stop. */
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

/* Where an instance's daemon keeps its socket, pidfile and state.  As root:
 * /run/ringbloom/<instance>.sock|.pid and /var/lib/ringbloom/<instance>.
 * Otherwise: $XDG_RUNTIME_DIR/ringbloom (or /tmp/ringbloom-<uid>) and
 * $XDG_STATE_HOME/ringbloom/<instance> (or ~/.local/state/ringbloom/...). */
typedef struct rb_paths {
    char socket[108];       /* fits sockaddr_un.sun_path */
    char pidfile[4096];
    char state_dir[4096];
} rb_paths_t;

/* Any process.  Fills *out for instance.  RB_EINVAL for a bad name,
 * RB_ERANGE if a path would not fit. */
RB_EXPORT RB_WUR int rb_default_paths(const char *instance, rb_paths_t *out);

/* rb_trusted_dir flags. */
#define RB_DIR_PARENT 0x1u   /* path names a file: judge the directory holding it */

/* Any process.  Whether directory `path` is what root or a trusted user
 * made it, so that files in it (a socket, a pidfile, state) are not
 * another user's.  Trusted: root, this process's euid and `also` (another
 * uid, e.g. the daemon's when it runs as someone else; (uid_t)-1: none).
 * The path is walked from "/" one level at a time without following a
 * symlink blindly, and each level is judged by the directory holding it
 * (docs/design.md, "Security review"): under a directory that only trusted
 * users can change, anything goes (a symlink is followed and its target
 * judged the same way, so /var/run -> /run works); under one that others
 * can write, a level must be a real directory of a trusted user and its
 * parent sticky (/tmp); the last directory must belong to a trusted user
 * and be writable by nobody else.
 * create_mode: 0 makes nothing (a client); otherwise missing levels are
 * created with this mode (under the umask) before they are judged (a
 * daemon making its run and state directories).  On success stores the
 * last directory's owner in *owner (if not NULL).  On failure writes a
 * sentence naming the level and the reason to why (cap bytes, if not NULL).
 * Errors: RB_EOWNER (a level fails the rule), RB_ENOENT (a level is
 * missing), RB_EACCES, RB_EINVAL (not a directory, bad flags, a relative
 * path leaving "."), RB_ERANGE (too long or deep, too many symlinks),
 * RB_ENOMEM, RB_ESYS.  Cost: two system calls per level. */
RB_EXPORT RB_WUR int rb_trusted_dir(const char *path, unsigned flags, mode_t create_mode,
                                    uid_t also, uid_t *owner, char *why, size_t cap);

/* Any process.  The uid ringbloomd of `instance` runs as, for
 * rb_segment_attach_owned: the owner of the directory holding its socket
 * (socket_path, or the instance's default, rb_default_paths), after
 * rb_trusted_dir has judged that directory (trusting root, this process's
 * euid and `also`).  A daemon listens only in a directory of its own uid
 * or root that nobody else can write (it refuses to start otherwise), so
 * the owner is the daemon's uid, whether the daemon is running or not, and
 * asking costs no connection.  Errors: as rb_trusted_dir; RB_EINVAL for a
 * bad instance name. */
RB_EXPORT RB_WUR int rb_daemon_uid(const char *instance, const char *socket_path, uid_t also,
                                   uid_t *uid, char *why, size_t cap);

/* ------------------------------------------------------------------------ */
/* Consistent-hash ring                                                     */
/* ------------------------------------------------------------------------ */

typedef enum rb_ring_mode {
    RB_RING_XXH3 = 0,    /* default: XXH3-64 of key and of "name#i", replicas
                            x weight points per node                        */
    RB_RING_KETAMA = 1,  /* libmemcached KETAMA_WEIGHTED, byte-exact: nodes
                            are "host:port" (default port 11211), ~160 MD5
                            points per server by weight share; replicas is
                            not used                                         */
    RB_RING_NGINX = 2,   /* nginx "hash $key consistent", byte-exact: nodes
                            are the upstream's server strings, 160 x weight
                            CRC-32 points; replicas is not used              */
    RB_RING_SEED = 3     /* the teaching document's hash_str ring (64-bit)  */
} rb_ring_mode_t;

/* Any process.  "xxh3", "ketama", "nginx", "seed" for a mode, and back
 * (case-insensitive).  In the compatible modes (ketama, nginx) equal
 * points are ordered by the order nodes were added, which must therefore
 * follow the other side's server list; in the others by node name.
 * rb_ring_mode_name returns "unknown" for a bad value; parse returns
 * RB_EINVAL. */
RB_EXPORT const char *rb_ring_mode_name(rb_ring_mode_t mode);
RB_EXPORT RB_WUR int rb_ring_mode_parse(const char *s, size_t len, rb_ring_mode_t *out);

#define RB_NODE_NAME_MAX     255
#define RB_RING_MAX_NODES    65535
#define RB_RING_MAX_WEIGHT   65535
#define RB_RING_MAX_REPLICAS 4096
#define RB_RING_MAX_POINTS   (1u << 24)
#define RB_RING_DEFAULT_REPLICAS 160

/* A node as a reader sees it; the name is copied out of shared memory and
 * NUL-terminated (names may contain no NUL themselves). */
typedef struct rb_node {
    uint32_t index;     /* position in the ring's node list (sorted by name);
                           valid for the ring version it came from */
    uint32_t weight;
    uint32_t name_len;
    char     name[RB_NODE_NAME_MAX + 1];
    uint64_t version;   /* the ring version (rb_ring_stat) this answer was
                           read from, in the same read section */
} rb_node_t;

/* Writer-side membership model, in process memory.  It holds the nodes and
 * the sorted point table; rb_ring_publish() copies it into a segment. */
typedef struct rb_ring rb_ring_t;

/* Any process.  A new empty ring: `replicas` virtual nodes per unit of
 * weight (1..RB_RING_MAX_REPLICAS; 0 -> RB_RING_DEFAULT_REPLICAS).
 * Errors: RB_EINVAL, RB_ENOMEM. */
RB_EXPORT RB_WUR int rb_ring_new(rb_ring_mode_t mode, uint32_t replicas,
                                 rb_ring_t **out);
RB_EXPORT void rb_ring_free(rb_ring_t *ring);

/* Any process, one thread per ring.  Adds a node (name: 1..255 bytes, no
 * NUL; weight 1..RB_RING_MAX_WEIGHT) with the mode's points (replicas *
 * weight in xxh3 and seed mode), merged into the sorted table in O(points);
 * in ketama mode every node's share changes, so the table is rebuilt
 * (O(points log points)) when next needed.  Errors: RB_EINVAL, RB_EEXIST,
 * RB_ERANGE (node or point limit), RB_ENOMEM.  Not visible to readers until
 * rb_ring_publish(). */
RB_EXPORT RB_WUR int rb_ring_add(rb_ring_t *ring, const char *name,
                                 size_t len, uint32_t weight);
/* Removes a node and its points, O(points).  RB_ENOENT if unknown. */
RB_EXPORT RB_WUR int rb_ring_remove(rb_ring_t *ring, const char *name,
                                    size_t len);
/* Changes a node's weight (remove + add of its points).  RB_ENOENT, RB_EINVAL,
 * RB_ERANGE. */
RB_EXPORT RB_WUR int rb_ring_set_weight(rb_ring_t *ring, const char *name,
                                        size_t len, uint32_t weight);
/* Switches the model to another mode and/or replica count, regenerating
 * every point (O(points log points)).  replicas 0 keeps the current count.
 * Errors: RB_EINVAL, RB_ERANGE (point limit), RB_ENOMEM; nothing changes
 * on error. */
RB_EXPORT RB_WUR int rb_ring_set_mode(rb_ring_t *ring, rb_ring_mode_t mode, uint32_t replicas);
/* The model's mode and replica count. */
RB_EXPORT rb_ring_mode_t rb_ring_mode(const rb_ring_t *ring);
RB_EXPORT uint32_t rb_ring_replicas(const rb_ring_t *ring);
/* Number of nodes / points in the model. */
RB_EXPORT size_t rb_ring_node_count(const rb_ring_t *ring);
RB_EXPORT size_t rb_ring_point_count(const rb_ring_t *ring);

/* Writer.  Publishes the model into the segment through the two-copy latch:
 * the inactive copy is rewritten while readers keep using the active one,
 * then one flip makes it active, so readers never wait and never see a
 * mixed table.  A copy grows (reallocated in the segment) when the table
 * outgrows it.  Cost: O(points) stores, once.
 * Errors: RB_EROFS, RB_ENOSPC (segment full: nothing changed for readers). */
RB_EXPORT RB_WUR int rb_ring_publish(rb_ring_t *ring, rb_segment_t *seg);

/* Any process.  Rebuilds a membership model from the ring published in
 * seg (used by a restarted writer).  Errors: RB_ECORRUPT, RB_EBUSY, RB_ENOMEM. */
RB_EXPORT RB_WUR int rb_ring_load(const rb_segment_t *seg, rb_ring_t **out);

/* Reader.  The node owning key: the first point clockwise from the key's
 * position (lower bound, wrapping to the first point).  Lock-free; cost: one
 * hash, an index probe and a short search (~2-3 cache lines) plus copying
 * the name.  Returns 0, RB_EEMPTY (no nodes), RB_EBUSY (raced the writer
 * past the retry bound), RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_ring_lookup(const rb_segment_t *seg, const void *key,
                                    size_t len, rb_node_t *out);

/* Reader.  The first min(n, nodes) distinct nodes clockwise from key (a
 * replica / preference list); out[0] is what rb_ring_lookup returns.
 * Returns the number of nodes written (>= 1) or a negative error as
 * rb_ring_lookup.  Cost: O(points walked * n). */
RB_EXPORT RB_WUR int rb_ring_lookup_n(const rb_segment_t *seg, const void *key,
                                      size_t len, rb_node_t *out, size_t n);

typedef struct rb_ring_stat {
    uint64_t version;    /* publish counter; changes on every publish */
    uint32_t mode;       /* rb_ring_mode_t */
    uint32_t replicas;
    uint32_t nodes;
    uint32_t points;
    uint32_t index_bits; /* buckets = 2^index_bits */
    uint64_t bytes;      /* bytes of one copy of the table */
} rb_ring_stat_t;

/* Reader.  Consistent snapshot of the ring's figures. */
RB_EXPORT RB_WUR int rb_ring_stat(const rb_segment_t *seg, rb_ring_stat_t *out);

/* Reader.  Copies up to cap nodes (sorted by name) into out and stores the
 * total in *count (which may exceed cap).  Consistent snapshot. */
RB_EXPORT RB_WUR int rb_ring_nodes(const rb_segment_t *seg, rb_node_t *out,
                                   size_t cap, size_t *count);

/* ------------------------------------------------------------------------ */
/* Bloom filters                                                            */
/* ------------------------------------------------------------------------ */

typedef enum rb_bloom_layout {
    RB_BLOOM_STANDARD = 0,  /* k probes over the whole array */
    RB_BLOOM_BLOCKED  = 1   /* all k probes in one 64-byte cache line */
} rb_bloom_layout_t;

#define RB_FILTER_NAME_MAX 255
#define RB_BLOOM_MAX_BITS  (1ULL << 40)
#define RB_BLOOM_BLOCKED_MAX_BPK 4096   /* blocked: the most bits per key */

typedef struct rb_bloom_sizing {
    uint64_t bits;    /* m, a multiple of 512 */
    uint32_t k;       /* probes per key, 1..64 */
    uint64_t bytes;   /* m / 8 */
    double   fpr;     /* predicted false-positive rate at capacity, <= p */
} rb_bloom_sizing_t;

/* Any process, pure.  Sizes a filter for capacity n and error rate p
 * (0 < p < 1).  standard: k = round(-log2 p) (at most 64) and the smallest
 * m whose (1 - e^(-kn/m))^k <= p (about -n ln p / (ln 2)^2).  blocked: the
 * smallest m (on a grid of 0.5% steps of bits per key) and best k whose
 * predicted FPR, accounting for the Poisson spread of keys over 512-bit
 * blocks, is <= 0.95 p.  Cost: O(1) standard; blocked about a dozen
 * evaluations of the model (0.1-0.5 ms for p <= 1%, up to ~3.5 ms as p
 * nears 1).
 * Errors: RB_EINVAL (n == 0, p out of range), RB_ERANGE (m would exceed
 * RB_BLOOM_MAX_BITS), RB_EPRECISION (blocked, p below about 1.8e-25: it
 * would need more than RB_BLOOM_BLOCKED_MAX_BPK bits per key). */
RB_EXPORT RB_WUR int rb_bloom_size(uint64_t n, double p, rb_bloom_layout_t layout,
                                   rb_bloom_sizing_t *out);

/* Any process, pure.  The classic estimate (1 - e^(-k n / m))^k. */
RB_EXPORT double rb_bloom_fpr_formula(uint64_t m, uint32_t k, uint64_t n);

#define RB_BLOOM_NONSCALING 0x1u   /* never add layers: RB_EFULL at capacity */
#define RB_BLOOM_OVERFILL   0x2u   /* with NONSCALING: the classic filter that
                                      keeps taking keys past capacity, its FPR
                                      rising as (1 - e^(-kn/m))^k */
#define RB_BLOOM_AGING      0x4u   /* a fixed ring of `generations` layers, each
                                      for `capacity` keys at error p/generations;
                                      adds go to the current one; when it is full
                                      or `window` seconds have passed, the oldest
                                      is cleared and made current.  A key stays
                                      "seen" for generations-1 to generations
                                      windows after its last add (an add of a
                                      key seen only in an older generation
                                      copies it into the current one): a
                                      cache-admission filter */
#define RB_BLOOM_MAX_LAYERS 32
#define RB_BLOOM_DEFAULT_EXPANSION 2
#define RB_BLOOM_MAX_EXPANSION 32768

typedef struct rb_bloom_params {
    uint64_t capacity;          /* n of the first layer, > 0 */
    double   error_rate;        /* p, 0 < p < 1 */
    rb_bloom_layout_t layout;
    uint32_t flags;             /* RB_BLOOM_NONSCALING, RB_BLOOM_OVERFILL,
                                   RB_BLOOM_AGING (alone) */
    uint32_t expansion;         /* scaling: each new layer holds expansion
                                   times the previous capacity; layer i has
                                   error rate p / 2^(i+1), so all together
                                   stay within p (as RedisBloom);
                                   0 -> RB_BLOOM_DEFAULT_EXPANSION */
    const unsigned char *secret;/* NULL: random; else RB_BLOOM_SECRET_BYTES
                                   bytes (a writer replaying its log) */
    uint32_t generations;       /* AGING: 2..RB_BLOOM_MAX_LAYERS; 0 -> 2 */
    uint32_t window;            /* AGING: seconds a generation stays current
                                   (0: rotate only when it is full) */
} rb_bloom_params_t;

#define RB_BLOOM_SECRET_BYTES 192

/* Per-process handle on one filter of a segment. */
typedef struct rb_bloom rb_bloom_t;

/* Writer.  Creates filter `name` (1..255 bytes) with one layer sized by
 * rb_bloom_size() (for p, or p/2 if scaling), a fresh random 192-byte hash
 * secret (arc4random_buf) unless params->secret gives one, and zeroed bits;
 * an aging filter gets its `generations` layers at p/generations each.
 * Readers see it once this returns.  Errors: RB_EROFS, RB_EINVAL,
 * RB_EEXIST, RB_ESLOTS (no free directory slot), RB_ERANGE (a layer would
 * exceed RB_BLOOM_MAX_BITS), RB_EPRECISION (a layer's error rate is below
 * what the layout reaches), RB_ENOSPC. */
RB_EXPORT RB_WUR int rb_bloom_reserve(rb_segment_t *seg, const char *name,
                                      size_t len, const rb_bloom_params_t *params);

/* Reader or writer.  Resolves filter `name` once; later calls use the
 * handle (which caches the immutable parameters and the secret).  The
 * handle must be closed before its segment.  Errors: RB_ENOENT, RB_ENOMEM,
 * RB_ECORRUPT.  Cost: O(directory) on open. */
RB_EXPORT RB_WUR int rb_bloom_open(const rb_segment_t *seg, const char *name,
                                   size_t len, rb_bloom_t **out);
RB_EXPORT void rb_bloom_close(rb_bloom_t *bf);

/* Reader or writer.  Calls fn(name, len, arg) for every live filter, in
 * directory order, until fn returns non-zero (which is then returned).
 * Cost: O(directory). */
RB_EXPORT int rb_bloom_list(const rb_segment_t *seg,
                            int (*fn)(const char *name, size_t len, void *arg), void *arg);

/* Writer.  Test-and-add: if the key may already be in any layer, returns 0
 * and changes nothing; otherwise sets its k bits in the newest layer with
 * atomic fetch-or and returns 1.  Exact, because the writer is the only one
 * setting bits: of many clients adding one key, exactly one is told 1.  A
 * scaling filter whose newest layer is at capacity first gets a new layer
 * (expansion x the capacity, half the error rate), so it grows until memory
 * runs out (RB_ENOSPC) unless it has RB_BLOOM_MAX_LAYERS layers already
 * (RB_ELAYERS: with expansion 1), the new layer would exceed
 * RB_BLOOM_MAX_BITS (RB_ERANGE) or its error rate is below what the
 * layout reaches (RB_EPRECISION); any of these changes nothing.
 * An aging filter writes the key into its current generation whenever it is
 * not there yet, new or not (see RB_BLOOM_AGING), rotating first if that
 * generation is full.
 * Errors: RB_EROFS, RB_ENOENT (filter gone), RB_EFULL (non-scaling filter at
 * capacity), RB_ENOSPC, RB_ELAYERS, RB_ERANGE, RB_EPRECISION. */
RB_EXPORT RB_WUR int rb_bloom_add(rb_bloom_t *bf, const void *key, size_t len);

/* Writer.  Aging filters: clears the oldest generation and makes it the
 * current one.  The cleared generation is swapped for a fresh zeroed
 * array, so readers see either the old state or the new, never a
 * half-cleared one (they retry across the swap).  RB_EINVAL for other
 * filters, RB_EROFS, RB_ENOSPC (no room for the fresh array), RB_ENOENT,
 * RB_ECORRUPT (the filter's layers fail validation: nothing changes). */
RB_EXPORT RB_WUR int rb_bloom_rotate(rb_bloom_t *bf);

/* Writer.  Rotates an aging filter whose window has passed at now (unix
 * seconds).  1 if it rotated, 0 if not (not due, no window, not aging). */
RB_EXPORT RB_WUR int rb_bloom_rotate_due(rb_bloom_t *bf, uint64_t now);

/* Writer.  Clears the whole filter the same way (a scaling filter goes
 * back to its first layer).  RB_EROFS, RB_ENOSPC, RB_ENOENT, RB_ECORRUPT
 * (as rb_bloom_rotate). */
RB_EXPORT RB_WUR int rb_bloom_reset(rb_bloom_t *bf);

typedef struct rb_key {
    const void *ptr;
    size_t      len;
} rb_key_t;

/* Writer.  rb_bloom_add for n keys, in order (a key repeated in the batch
 * is new only the first time); out_new[i] = 1/0 if out_new is not NULL.
 * Returns the number of new keys, or a negative error: argument errors
 * change nothing; a full filter (RB_EFULL, RB_ENOSPC, RB_ELAYERS, RB_ERANGE,
 * RB_EPRECISION) stops at the first key that did not fit: keys before it
 * stay added, as their out_new entries say, and it
 * and the keys after it get out_new[i] = RB_BLOOM_NOT_ADDED.  One read
 * section for the batch: much cheaper per key than rb_bloom_add. */
#define RB_BLOOM_NOT_ADDED 0xFF
RB_EXPORT RB_WUR int64_t rb_bloom_add_many(rb_bloom_t *bf, const rb_key_t *keys,
                                           size_t n, uint8_t *out_new);

/* Reader.  1 if the key may have been added, 0 if it certainly was not.
 * Lock-free: up to k relaxed loads per layer (one cache line per layer for
 * blocked), no retry unless the writer replaced a bit array meanwhile.
 * Errors: RB_ENOENT (filter deleted), RB_EBUSY, RB_ECORRUPT. */
RB_EXPORT RB_WUR int rb_bloom_contains(const rb_bloom_t *bf, const void *key,
                                       size_t len);

/* Reader.  rb_bloom_contains for n keys at once: hashes a batch, prefetches
 * every probed cache line, then tests, so memory latencies overlap.
 * out[i] = 1/0.  Returns the number of keys that may be present. */
RB_EXPORT RB_WUR int64_t rb_bloom_contains_many(const rb_bloom_t *bf,
                                                const rb_key_t *keys, size_t n,
                                                uint8_t *out);

typedef struct rb_bloom_stat {
    char     name[RB_FILTER_NAME_MAX + 1];
    uint32_t layout;        /* rb_bloom_layout_t */
    uint32_t flags;         /* RB_BLOOM_NONSCALING, RB_BLOOM_AGING ... */
    uint32_t expansion;
    uint32_t layers;        /* layers (scaling) or generations (aging) */
    uint32_t current;       /* aging: the generation taking adds */
    uint32_t window;        /* aging: seconds per generation */
    uint64_t rotations;     /* aging: rotations so far */
    uint32_t k;             /* probes per key in the first layer */
    uint64_t bits;          /* m, all layers */
    uint64_t bytes;         /* bytes of the bit arrays, all layers */
    uint64_t capacity;      /* keys the layers were sized for, summed */
    double   error_rate;    /* p requested at reserve */
    uint64_t items;         /* adds that were new, all layers */
    uint64_t bits_set;      /* population count, all layers */
    double   fill;          /* bits_set / bits */
    double   est_fpr;       /* false-positive rate estimated from set bits */
    uint64_t memory;        /* bytes the filter holds in the segment: its
                               bit arrays and its directory slot */
} rb_bloom_stat_t;

/* Reader.  Figures of the filter.  bits_set and est_fpr come from a scan of
 * the arrays (cost O(m/64) loads); a layer's estimate is fill^k (standard)
 * or the mean over its blocks of (block fill)^k (blocked), and the filter's
 * is 1 - prod(1 - layer estimate). */
RB_EXPORT RB_WUR int rb_bloom_stat(const rb_bloom_t *bf, rb_bloom_stat_t *out);

/* Reader.  The same figures without the scan, O(layers): bits_set is 0,
 * and fill and est_fpr are predicted from each layer's item count,
 * fill = 1 - e^(-k n/m) and est_fpr = 1 - prod(1 - fill^k).  For servers
 * that must not spend O(m) per request. */
RB_EXPORT RB_WUR int rb_bloom_info(const rb_bloom_t *bf, rb_bloom_stat_t *out);

/* ------------------------------------------------------------------------ */
/* Write path: a connection to the daemon                                   */
/* ------------------------------------------------------------------------ */

/* A blocking RESP2 connection to ringbloomd over its Unix socket.  Every
 * change goes through the daemon (the single writer); reads should use the
 * segment instead.  One thread at a time per connection. */
typedef struct rb_conn rb_conn_t;

/* Any process.  Connects to socket_path, or, if it is NULL, to the default
 * socket of instance (rb_default_paths; NULL instance = "default"), whose
 * directory must first pass rb_trusted_dir (RB_EOWNER: the default may be
 * /tmp/ringbloom-<uid>, which another user could have made; rb_daemon_uid
 * gives the reason).  An explicit socket_path is the caller's
 * configuration and is used as given (check it with rb_daemon_uid).
 * timeout_ms bounds every later send/receive (0 -> 10 s).  Errors:
 * RB_EINVAL, RB_EOWNER, RB_EDAEMON (nobody listening; errno says why),
 * RB_ENOMEM. */
RB_EXPORT RB_WUR int rb_conn_open(const char *instance, const char *socket_path,
                                  unsigned timeout_ms, rb_conn_t **out);
RB_EXPORT void rb_conn_close(rb_conn_t *c);

/* The text of the last error reply (RB_EREPLY / RB_EPERM), or "". */
RB_EXPORT const char *rb_conn_error(const rb_conn_t *c);

/* Every call below sends and then waits for the reply: RB_EDAEMON if the
 * connection broke, RB_ETIMEDOUT if the daemon did not answer within the
 * timeout (a change may have been applied all the same); either way the
 * connection is unusable afterwards. */

/* Ring mutations: RING.ADD / RING.REMOVE / RING.WEIGHT.  0, or RB_EREPLY
 * (e.g. "ERR node exists"), RB_EPERM, RB_EDAEMON, RB_ETIMEDOUT, RB_EPROTO. */
RB_EXPORT RB_WUR int rb_conn_ring_add(rb_conn_t *c, const char *name, size_t len,
                                      uint32_t weight);
RB_EXPORT RB_WUR int rb_conn_ring_remove(rb_conn_t *c, const char *name, size_t len);
RB_EXPORT RB_WUR int rb_conn_ring_weight(rb_conn_t *c, const char *name, size_t len,
                                         uint32_t weight);

/* BF.RESERVE with p's capacity, error rate, layout and flags: NONSCALING,
 * or EXPANSION (scaling), or AGING with its window and GENERATIONS.
 * RB_EINVAL, with nothing sent, for RB_BLOOM_OVERFILL: no command creates
 * such a filter.  The secret is the daemon's choice (p->secret is not
 * sent).  Errors otherwise as rb_conn_ring_add. */
RB_EXPORT RB_WUR int rb_conn_bf_reserve(rb_conn_t *c, const char *name, size_t len,
                                        const rb_bloom_params_t *p);

/* BF.ADD: 1 if the key was new (this caller is the one that added it), 0
 * if it was (maybe) present, or an error. */
RB_EXPORT RB_WUR int rb_conn_bf_add(rb_conn_t *c, const char *filter, size_t flen,
                                    const void *key, size_t klen);

/* Adds n keys with pipelined BF.MADD batches (several in flight).
 * out_new[i] = 1 if key i was new; returns the number of new keys.  On an
 * error the keys of the batches already answered stay added. */
RB_EXPORT RB_WUR int64_t rb_conn_bf_add_many(rb_conn_t *c, const char *filter, size_t flen,
                                             const rb_key_t *keys, size_t n, uint8_t *out_new);

/* Sends one command (argv/argl: argc arguments) and returns its reply
 * rendered as text into buf (cap bytes, NUL-terminated, truncated if
 * needed): integers and strings as is, nil as "(nil)", arrays one element
 * per line.  Returns 0, or RB_EREPLY with the error text in buf. */
RB_EXPORT RB_WUR int rb_conn_command(rb_conn_t *c, size_t argc, const char *const *argv,
                                     const size_t *argl, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* RINGBLOOM_H */
