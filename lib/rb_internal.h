/*
 * rb_internal.h - the shared-memory format and the process-local handles.
 *
 * Everything that lives in the segment is a struct of _Atomic uint64_t words
 * (names ending in _shm_t); everything that lives in one process has a plain
 * name.  Offsets in shared memory are byte offsets from the segment start,
 * never pointers.  docs/design.md draws the same layout byte by byte; keep
 * the two in step (the _Static_asserts below pin the offsets).
 */
#ifndef RB_INTERNAL_H
#define RB_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "ringbloom.h"
#include "rb_latch.h"

#define RBI_MAGIC          0x314D4C42474E4952ULL /* bytes "RINGBLM1" little-endian */
#define RBI_LAYOUT_VERSION 1u
#define RBI_HEADER_SIZE    4096u
#define RBI_ALIGN          64u                   /* heap allocation unit */
#define RBI_GROW_STEP      (64u * 1024u)         /* committed size granule */

enum { RBI_STATE_INIT = 1, RBI_STATE_LIVE = 2, RBI_STATE_RETIRED = 3 };

/* A read section gives up after this many overtaking writes (RB_EBUSY).  A
 * retry costs one read section (~100 ns); a write takes microseconds or
 * more, so a reader meets this bound only under a pathological writer. */
#define RBI_READ_RETRIES 100000u

/* ---- ring latch header, inside the segment header ---------------------- */
typedef struct rb_ring_hdr_shm {
    _Atomic uint64_t seq;          /* latch sequence (rb_latch.h) */
    _Atomic uint64_t copy_off[2];  /* byte offset of copy i, 0 = none yet */
    _Atomic uint64_t copy_cap[2];  /* bytes allocated to copy i */
} rb_ring_hdr_shm_t;

/* ---- segment header, offset 0, RBI_HEADER_SIZE bytes -------------------- */
typedef struct rb_header_shm {
    _Atomic uint64_t magic;           /*   0 RBI_MAGIC */
    _Atomic uint64_t version;         /*   8 RBI_LAYOUT_VERSION */
    _Atomic uint64_t header_size;     /*  16 RBI_HEADER_SIZE */
    _Atomic uint64_t state;           /*  24 RB_STATE_* */
    _Atomic uint64_t generation;      /*  32 this segment's generation */
    _Atomic uint64_t next_generation; /*  40 successor when retired */
    _Atomic uint64_t size;            /*  48 committed bytes; only grows */
    _Atomic uint64_t max_size;        /*  56 reserved bytes (readers map this) */
    _Atomic uint64_t writer_pid;      /*  64 */
    _Atomic uint64_t writer_start;    /*  72 unix seconds the writer took over */
    _Atomic uint64_t heartbeat_ms;    /*  80 unix ms, refreshed by the writer */
    _Atomic uint64_t dir_offset;      /*  88 filter directory */
    _Atomic uint64_t dir_slots;       /*  96 */
    _Atomic uint64_t heap_offset;     /* 104 first heap byte */
    _Atomic uint64_t created;         /* 112 unix seconds */
    _Atomic uint64_t next_incarnation;/* 120 filter incarnation counter */
    _Atomic uint64_t reserved0[16];   /* 128 */
    rb_ring_hdr_shm_t ring;           /* 256 */
} rb_header_shm_t;

_Static_assert(offsetof(rb_header_shm_t, ring) == 256, "header layout");
_Static_assert(sizeof(rb_header_shm_t) <= RBI_HEADER_SIZE, "header fits its page");

/* ---- ring copy (one of two), in the heap -------------------------------- */
#define RBI_RING_COPY_MAGIC 0x59504F43474E4952ULL /* "RINGCOPY" */

typedef struct rb_ring_copy_shm {
    _Atomic uint64_t magic;       /*  0 RBI_RING_COPY_MAGIC */
    _Atomic uint64_t version;     /*  8 publish counter */
    _Atomic uint64_t mode;        /* 16 rb_ring_mode_t */
    _Atomic uint64_t replicas;    /* 24 */
    _Atomic uint64_t nnodes;      /* 32 */
    _Atomic uint64_t npoints;     /* 40 */
    _Atomic uint64_t index_bits;  /* 48 buckets = 2^index_bits */
    _Atomic uint64_t words;       /* 56 words used by this copy, header incl. */
    _Atomic uint64_t nodes_w;     /* 64 word offsets, relative to the copy */
    _Atomic uint64_t names_w;     /* 72 */
    _Atomic uint64_t points_w;    /* 80 */
    _Atomic uint64_t owners_w;    /* 88 */
    _Atomic uint64_t index_w;     /* 96 */
    _Atomic uint64_t names_bytes; /* 104 */
    _Atomic uint64_t owners;      /* 112 nodes that own >= 1 point (a ketama
                                     node of small weight may own none) */
    _Atomic uint64_t reserved[1]; /* 120 */
    _Atomic uint64_t data[];      /* 128 */
} rb_ring_copy_shm_t;

#define RBI_RING_COPY_HDR_WORDS (offsetof(rb_ring_copy_shm_t, data) / 8)

/* Node record: two words.  w0 = name byte offset (in names) | name_len << 40,
 * w1 = weight. */
#define RBI_NODE_WORDS 2

/* ---- filter directory slot --------------------------------------------- */
#define RBI_SECRET_BYTES RB_BLOOM_SECRET_BYTES
#define RBI_FILTER_NAME_WORDS ((RB_FILTER_NAME_MAX + 1) / 8)
#define RBI_SECRET_WORDS (RBI_SECRET_BYTES / 8)

enum { RBI_FILTER_FREE = 0, RBI_FILTER_LIVE = 1 };

/* One layer of a filter: its own bit array, sized for its own capacity and
 * error rate.  A scaling filter appends layers; an aging filter rotates
 * them.  Written before nlayers (or gen) publishes it. */
typedef struct rb_layer_shm {
    _Atomic uint64_t array_off;    /*  0 byte offset of the bit array */
    _Atomic uint64_t bits;         /*  8 m, a multiple of 512 */
    _Atomic uint64_t k;            /* 16 probes per key */
    _Atomic uint64_t capacity;     /* 24 keys it was sized for */
    _Atomic uint64_t items;        /* 32 new keys added to this layer */
    _Atomic uint64_t error_bits;   /* 40 its error rate (double bits) */
} rb_layer_shm_t;

typedef struct rb_filter_shm {
    _Atomic uint64_t state;        /*   0 RB_FILTER_* (published last) */
    _Atomic uint64_t incarnation;  /*   8 unique per reserve */
    _Atomic uint64_t gen;          /*  16 bumped when an array is replaced */
    _Atomic uint64_t layout;       /*  24 rb_bloom_layout_t */
    _Atomic uint64_t flags;        /*  32 RB_BLOOM_NONSCALING ... */
    _Atomic uint64_t expansion;    /*  40 capacity factor of each new layer */
    _Atomic uint64_t nlayers;      /*  48 1..RB_BLOOM_MAX_LAYERS */
    _Atomic uint64_t items;        /*  56 new keys, all layers */
    _Atomic uint64_t name_len;     /*  64 */
    _Atomic uint64_t created;      /*  72 unix seconds */
    _Atomic uint64_t capacity;     /*  80 first layer's capacity (as reserved) */
    _Atomic uint64_t error_bits;   /*  88 requested error rate (double bits) */
    _Atomic uint64_t current;      /*  96 aging: the generation taking adds */
    _Atomic uint64_t window;       /* 104 aging: seconds before a rotation */
    _Atomic uint64_t rotations;    /* 112 aging: rotations so far */
    _Atomic uint64_t rotated_at;   /* 120 aging: unix seconds of the last */
    _Atomic uint64_t name[RBI_FILTER_NAME_WORDS];  /* 128 */
    _Atomic uint64_t secret[RBI_SECRET_WORDS];     /* 384 */
    rb_layer_shm_t layer[RB_BLOOM_MAX_LAYERS];    /* 576 */
} rb_filter_shm_t;

_Static_assert(offsetof(rb_filter_shm_t, name) == 128, "slot layout");
_Static_assert(offsetof(rb_filter_shm_t, secret) == 384, "slot layout");
_Static_assert(offsetof(rb_filter_shm_t, layer) == 576, "slot layout");
_Static_assert(sizeof(rb_filter_shm_t) == 576 + 48 * RB_BLOOM_MAX_LAYERS, "slot layout");

/* ---- process-local handles ---------------------------------------------- */

typedef struct rbi_extent {
    uint64_t off, len;
} rbi_extent_t;

/* Free space of the heap, known only to the writer (rebuilt on takeover
 * from the live objects, so it never needs to be in shared memory). */
typedef struct rbi_heap {
    rbi_extent_t *free;   /* sorted by offset, coalesced */
    size_t n, cap;
    uint64_t used;       /* bytes in live allocations */
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
    struct rbi_map *older;    /* replaced mappings, freed at close */
} rbi_map_t;

struct rb_segment {
    _Atomic(rbi_map_t *) map; /* current mapping (a writer's never changes) */
    int writable;
    char instance[RB_INSTANCE_MAX + 1]; /* "" for a private segment */
    rbi_heap_t heap;          /* writer only */
    pthread_mutex_t lock;    /* reader: serialises moving to a new object */
    _Atomic uint64_t next_poll_ms; /* reader: earliest next look for one */
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

void rbi_segment_poll(rb_segment_t *seg);

/* A new zeroed rbi_map_t with a fresh id (segment.c). */
rbi_map_t *rbi_map_new(void);

static inline rbi_map_t *rbi_reader_map(const rb_segment_t *seg)
{
    static _Thread_local uint32_t tick;

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

/* The committed size: every byte below it is backed by the object. */
static inline uint64_t rbi_seg_size(const rbi_map_t *m)
{
    /* Acquire pairs with the writer's release store after growing the
     * object: the grown bytes exist before anyone may read them. */
    return atomic_load_explicit(&rbi_hdr(m)->size, memory_order_acquire);
}

static inline rb_filter_shm_t *rbi_dir_slot(const rbi_map_t *m, uint64_t i)
{
    return (rb_filter_shm_t *)(void *)(m->base + m->dir_off + i * sizeof(rb_filter_shm_t));
}

/* True if [off, off + len) lies inside a committed size `size`, with off
 * 8-byte aligned; safe against overflow for any off/len read from shm. */
static inline int rbi_span_ok(uint64_t size, uint64_t off, uint64_t len)
{
    return (off & 7) == 0 && off <= size && len <= size - off;
}

/* Copy n words out of shared memory with relaxed loads. */
static inline void rbi_copy_out(void *dst, const _Atomic uint64_t *src, size_t nwords)
{
    unsigned char *d = dst;
    for (size_t i = 0; i < nwords; i++) {
        uint64_t w = rbi_ld(&src[i]);
        memcpy(d + 8 * i, &w, 8);
    }
}

/* Copy `bytes` bytes into shared memory words with relaxed stores (the
 * last word zero-padded). */
void rbi_copy_in(_Atomic uint64_t *dst, const void *src, size_t bytes);

/* Writer-only helpers, segment.c / heap.c. */
int rbi_segment_grow(rb_segment_t *seg, uint64_t new_size);
int rbi_heap_alloc(rb_segment_t *seg, uint64_t bytes, uint64_t *off);
void rbi_heap_free(rb_segment_t *seg, uint64_t off, uint64_t bytes);
int rbi_heap_rebuild(rb_segment_t *seg, rbi_extent_t *live, size_t nlive);
void rbi_heap_destroy(rbi_heap_t *heap);
uint64_t rbi_now_ms(void);

/* The RB_E* code for errno value e (segment.c). */
int rbi_errno_code(int e);

/* 1 if s is a valid instance name (paths.c). */
int rbi_instance_ok(const char *s);

/* Live heap objects, for rbi_heap_rebuild: the two ring copies (ring.c,
 * at most 2) and the bit arrays of live filters (bloom.c, at most
 * dir_slots * RB_BLOOM_MAX_LAYERS; RB_ECORRUPT if a live filter has no
 * layer or a layer a reader would refuse). */
void rbi_ring_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n);
int rbi_bloom_extents(const rbi_map_t *m, rbi_extent_t *out, size_t *n);

/* Ring takeover / restore, ring.c: RB_OK if the active copy is sound. */
int rbi_ring_validate(const rb_segment_t *seg);

/* Retries the calling thread's last ring read section needed (tests and
 * benchmarks report the maximum). */
extern _Thread_local uint32_t rbi_ring_last_retries;

static inline uint64_t rbi_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

#endif /* RB_INTERNAL_H */
