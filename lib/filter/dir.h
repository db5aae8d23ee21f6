/*
 * dir.h - the filter directory, kind-blind (dir.c): the slots of the
 * segment, the names in them, reading a slot whole under its generation
 * section, finding a name, and the writer's claim / publish / free of a
 * slot through which every kind makes a filter live and deletes it.
 *
 * What a kind adds is in kind.h; a kind's own files never walk the
 * directory themselves: readers resolve a name once (rbi_dir_lookup) and
 * keep the slot in their handle; the writer finds a name in O(1) through
 * an index it keeps beside the segment (private memory, never shared).
 *
 * Invariant D1 (the writer's index): every live slot of the writer's
 * segment is in the index under its name and nothing else is; it holds
 * because a slot becomes live only through rbi_dir_publish and free only
 * through rbi_dir_free, and the index is built from the directory the
 * first time the writer looks a name up.  rbi_dir_find still compares the
 * name it finds (an index entry is a hash and a slot number), so a hash
 * collision costs a probe, never a wrong slot.
 */
#ifndef RBI_DIR_H
#define RBI_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "latch.h"
#include "segment.h"

/* A slot's identity, read whole with its name (rbi_dir_slot_read). */
typedef struct rbi_slot_id {
    uint64_t slot;          /* its index in the directory */
    uint64_t incarnation;   /* unique per reserve */
    uint64_t layout;        /* kind and variant (format.h) */
} rbi_slot_id_t;

/* A filter name: 1 .. RB_FILTER_NAME_MAX bytes, any bytes. */
static inline int rbi_name_ok(const char *name, size_t len)
{
    return name != NULL && len >= 1 && len <= RB_FILTER_NAME_MAX;
}

/* Reader: slot f's name (room for RB_FILTER_NAME_MAX bytes) and, if id is
 * not NULL, its identity, and if secret is not NULL its hash secret
 * (RBI_SECRET_BYTES: only a caller that keeps it pays the copy), read
 * whole inside the slot's generation section:
 * the name length (1..255), 0 if the slot holds no live filter, or
 * RB_EBUSY (it changed RBI_READ_RETRIES times under the read).  A slot can
 * be deleted and reserved again under a reader; the delete publishes the
 * generation before the next filter's words are stored (R1, rbi_dir_free)
 * and the generation never goes back, so a read that saw any new word sees
 * the generation move and is retried: never the name, secret or
 * incarnation of two filters at once.  id->slot is left as it was. */
int rbi_dir_slot_read(const rb_filter_shm_t *f, char *name, rbi_slot_id_t *id,
                      unsigned char *secret);

/* Reader: the slot of live filter name in m, each slot read whole:
 * its index (id filled, id->slot included, if id is not NULL; the secret
 * into secret if it is not NULL), RB_ENOENT
 * or RB_EBUSY.  O(directory): a reader resolves a name once per handle. */
int64_t rbi_dir_lookup(const rbi_map_t *m, const char *name, size_t len, rbi_slot_id_t *id,
                       unsigned char *secret);

/* Reader: binds a handle to name in m, the one rebind of every kind's
 * handle: finds the name (rbi_dir_lookup), refuses a layout of_kind does
 * not accept (RB_EWRONGTYPE), then runs check(m, f, incarnation, arg)
 * inside the slot's generation section: 1 it is the filter found (sound),
 * 0 it changed since the lookup (looked up again), < 0 an error such as
 * RB_ECORRUPT.  RB_OK with *slot and *incarnation set; RB_ENOENT, the
 * check's error, RB_EBUSY.  check NULL takes the slot found as it is: for
 * a handle that lives one call, whose read validates the slot anyway (a
 * by-name call's handle on the stack).  The handle keeps (slot,
 * incarnation) and a read that meets another incarnation in that slot
 * binds again. */
int rbi_dir_bind(const rbi_map_t *m, const char *name, size_t len,
                 int (*of_kind)(uint64_t layout),
                 int (*check)(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc,
                              void *arg),
                 void *arg, uint64_t *slot, uint64_t *incarnation);


/* rbi_dir_bind's check of the filter a lookup found (see there). */
typedef int (*rbi_bind_check_fn)(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc,
                                 void *arg);

/* A reader's handle on a filter by name, the one handle model of the
 * kinds whose handle is (slot, incarnation): the count-min sketch's, the
 * cuckoo filter's and the counting Bloom filter's handle structs begin
 * with one.  A read loads slot and incarnation, reads the slot inside its
 * generation section and, meeting another incarnation there (deleted,
 * made again, another mapping), binds again by name (rbi_named_rebind). */
typedef struct rbi_named {
    const rb_segment_t *seg;
    _Atomic uint64_t slot;          /* where the filter was last found */
    _Atomic uint64_t incarnation;   /* ... and which one it was */
    int (*of_kind)(uint64_t layout);  /* the kind's layouts */
    rbi_bind_check_fn check;        /* the kind's check of a slot found */
    size_t len;
    char name[RB_FILTER_NAME_MAX + 1];
} rbi_named_t;

/* Reader: binds h to its name in m (rbi_dir_bind with h's kind), storing
 * the slot and incarnation found: RB_OK, RB_ENOENT, RB_EWRONGTYPE, the
 * check's error, RB_EBUSY. */
int rbi_named_rebind(const rbi_named_t *h, const rbi_map_t *m);

/* Reader: h names `name` in seg, of the kind of_kind and check (NULL:
 * none, rbi_dir_bind) describe, and is bound: RB_OK, RB_EINVAL (seg NULL, a bad name), or the bind's
 * error (h then names nothing). */
int rbi_named_init(rbi_named_t *h, const rb_segment_t *seg, const char *name, size_t len,
                   int (*of_kind)(uint64_t layout), rbi_bind_check_fn check);

/* Reader: a new handle of `size` bytes (a kind's handle struct, beginning
 * with an rbi_named_t, the rest zeroed), made by rbi_named_init: RB_OK
 * (*out, freed with free()), RB_EINVAL, RB_ENOMEM, the bind's error. */
int rbi_named_new(size_t size, const rb_segment_t *seg, const char *name, size_t len,
                  int (*of_kind)(uint64_t layout), rbi_bind_check_fn check, void **out);

/* A kind's reading of its slot inside the slot's generation section: 1
 * and *view filled if f is live filter `inc` (the incarnation the handle
 * holds), 0 if it is not (another filter, or none), or an error such as
 * RB_ECORRUPT (its words fail validation). */
typedef int (*rbi_view_fn)(const rbi_map_t *m, const rb_filter_shm_t *f, uint64_t inc,
                           void *view);

/* What a kind does with the view, inside the same section: RB_OK or an
 * error (returned once the section holds), or RBI_READ_AGAIN to run the
 * whole section again (a re-check of the kind's own failed, such as the
 * cuckoo filter's move sequence). */
#define RBI_READ_AGAIN 2
typedef int (*rbi_use_fn)(const rb_filter_shm_t *f, void *view, void *arg);

/* Reader: the one read loop of every (slot, incarnation) handle: reads
 * h's slot with view_read inside its generation section, runs use on the
 * view in that section, and runs the whole section again while the
 * generation moves (G1 / G2) or use asks (at most RBI_READ_RETRIES times:
 * RB_EBUSY); if the slot no longer holds h's filter (deleted, made again,
 * another mapping), binds h by name once (rbi_named_rebind).  RB_OK,
 * use's error, RB_ENOENT, RB_EWRONGTYPE, RB_ECORRUPT, RB_EBUSY.  No scan
 * and no allocation while the slot holds h's filter.  Inline, so a kind's
 * constant view_read and use are inlined into its read. */
static inline int rbi_named_read(const rbi_named_t *h, rbi_view_fn view_read, void *view,
                                 rbi_use_fn use, void *arg)
{
    const rbi_map_t *m = rbi_reader_map(h->seg);
    int rebound = 0;

    for (uint32_t t = 0; t < RBI_READ_RETRIES; t++) {
        uint64_t i = atomic_load_explicit(&h->slot, memory_order_relaxed);
        uint64_t inc = atomic_load_explicit(&h->incarnation, memory_order_relaxed);
        const rb_filter_shm_t *f;
        uint64_t g;
        int vr, rc = RB_OK;
        if (i >= m->dir_slots)
            i = 0;    /* another mapping, smaller: the incarnation misses */
        f = rbi_dir_slot(m, i);
        g = rbi_gen_read_begin(&f->gen);
        if ((vr = view_read(m, f, inc, view)) == 1)
            rc = use(f, view, arg);
        if (rc == RBI_READ_AGAIN || rbi_gen_read_retry(&f->gen, g)) {
            rbi_read_pause(t);   /* a writer is inside this filter */
            continue;
        }
        if (vr == 1)
            return rc;
        if (vr != 0)
            return vr;
        /* Not (or no longer) h's filter: find its name again, once. */
        if (rebound++)
            return RB_ENOENT;
        if ((rc = rbi_named_rebind(h, m)) != RB_OK)
            return rc;
    }
    return RB_EBUSY;
}

/* Reader: calls fn(name, len, layout, arg) for each live slot of m from
 * slot *cursor on, at most `count` slots (SIZE_MAX: all); *cursor becomes
 * the next slot to visit, 0 when the walk is done.  A slot changing all
 * the time (RB_EBUSY) is skipped.  fn returning non-zero stops the walk
 * with that value (*cursor past the slot it stopped at). */
int rbi_dir_walk(const rbi_map_t *m, uint64_t *cursor, size_t count,
                 int (*fn)(const char *name, size_t len, uint64_t layout, void *arg), void *arg);

/* Writer: the slot holding live filter name in seg, or -1; O(1) through
 * the writer's index (D1).  -1 as well when the index cannot be built
 * (out of memory): then a walk of the directory answers. */
int64_t rbi_dir_find(rb_segment_t *seg, const char *name, size_t len);

/* Writer: the slot of live filter name in seg, if its layout is one
 * of_kind accepts (a kind's writer binding).  RB_EINVAL (seg NULL, a bad
 * name), RB_EROFS, RB_ENOENT, RB_EWRONGTYPE (another kind holds it). */
int rbi_writer_find(rb_segment_t *seg, const char *name, size_t len,
                    int (*of_kind)(uint64_t layout), rb_filter_shm_t **f);

/* Writer: a free slot for a new filter name: RB_OK (*f, its words still
 * the last filter's, its generation kept: R1), RB_EEXIST (name is live),
 * RB_ESLOTS (the directory is full). */
int rbi_dir_claim(rb_segment_t *seg, const char *name, size_t len, rb_filter_shm_t **f);

/* Writer: makes slot f (every word of its filter stored, the name
 * included) live, with a release store readers acquire, and indexes it. */
void rbi_dir_publish(rb_segment_t *seg, rb_filter_shm_t *f);

/* Writer: frees live slot f: stores FREE, publishes its generation (R1:
 * before the caller frees the filter's arrays, so a reader whose section
 * began before sees the generation move and retries into RB_ENOENT), and
 * drops it from the index.  The caller then frees the arrays. */
void rbi_dir_free(rb_segment_t *seg, rb_filter_shm_t *f);

#endif /* RBI_DIR_H */
