/*
 * format.h - the shared-memory format: the segment header, the ring copy,
 * the filter directory slot.
 *
 * Everything that lives in the segment is a struct of _Atomic uint64_t words
 * (names ending in _shm_t).  Offsets in shared memory are byte offsets from
 * the segment start, never pointers.  docs/design.md draws the same layout
 * byte by byte; keep the two in step (the _Static_asserts below pin the
 * offsets).  Changing anything here changes RBI_LAYOUT_VERSION, the
 * snapshots (a dump of the segment) and every reader: don't, lightly.
 */
#ifndef RBI_FORMAT_H
#define RBI_FORMAT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "latch.h"
#include "ringbloom.h"

#define RBI_MAGIC          0x314D4C42474E4952ULL /* bytes "RINGBLM1" little-endian */
#define RBI_LAYOUT_VERSION 3u   /* 3: node states in the ring copy (word 11) */
#define RBI_LAYOUT_VERSION_2 2u /* 2: ring point words (owner inside), no owners array;
                                   word 11 is 0, so it reads as 3 without states */
#define RBI_LAYOUT_VERSION_1 1u /* what rb_segment_restore still takes (adopt.c) */
#define RBI_HEADER_SIZE    4096u
#define RBI_ALIGN          64u                   /* heap allocation unit */
#define RBI_GROW_STEP      (64u * 1024u)         /* committed size granule */
#define RBI_HUGE_STEP      (2u * 1024u * 1024u)  /* ... of a huge-page segment: one
                                                    PMD page (x86-64, arm64 4K) */

/* header.flags */
#define RBI_HDR_HUGE       1u   /* back with 2 MiB pages (RB_SEGMENT_HUGE_PAGES) */

enum { RBI_STATE_INIT = 1, RBI_STATE_LIVE = 2, RBI_STATE_RETIRED = 3 };

/* ---- ring latch header, inside the segment header ---------------------- */
typedef struct rb_ring_hdr_shm {
    _Atomic uint64_t seq;          /* latch sequence (latch.h) */
    _Atomic uint64_t copy_off[2];  /* byte offset of copy i, 0 = none yet */
    _Atomic uint64_t copy_cap[2];  /* bytes allocated to copy i */
} rb_ring_hdr_shm_t;

/* ---- segment header, offset 0, RBI_HEADER_SIZE bytes ------------------- */
typedef struct rb_header_shm {
    _Atomic uint64_t magic;           /*   0 RBI_MAGIC */
    _Atomic uint64_t version;         /*   8 RBI_LAYOUT_VERSION */
    _Atomic uint64_t header_size;     /*  16 RBI_HEADER_SIZE */
    _Atomic uint64_t state;           /*  24 RBI_STATE_* */
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
    _Atomic uint64_t flags;           /* 128 RBI_HDR_*, 0 before huge pages */
    _Atomic uint64_t txn_open;        /* 136 1 while the writer applies a unit
                                         that must be kept whole (seg_txn.h);
                                         0 in segments made before it */
    _Atomic uint64_t repl_seq;        /* 144 filter-source nats: the last stream
                                         message applied (seg_repl.h); 0: none */
    _Atomic uint64_t repl_stream;     /* 152 and its stream's identity; 0: none */
    _Atomic uint64_t reserved0[12];   /* 160 */
    rb_ring_hdr_shm_t ring;           /* 256 */
} rb_header_shm_t;

_Static_assert(offsetof(rb_header_shm_t, size) == 48, "header layout");
_Static_assert(offsetof(rb_header_shm_t, dir_offset) == 88, "header layout");
_Static_assert(offsetof(rb_header_shm_t, next_incarnation) == 120, "header layout");
_Static_assert(offsetof(rb_header_shm_t, txn_open) == 136, "header layout");
_Static_assert(offsetof(rb_header_shm_t, repl_seq) == 144, "header layout");
_Static_assert(offsetof(rb_header_shm_t, repl_stream) == 152, "header layout");
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
    _Atomic uint64_t points_w;    /* 80 point words (below) */
    _Atomic uint64_t states_w;    /* 88 the node states (below); 0: none, every
                                     node up (a layout-2 copy; layout 1 had
                                     its owners array here) */
    _Atomic uint64_t index_w;     /* 96 */
    _Atomic uint64_t names_bytes; /* 104 */
    _Atomic uint64_t owners;      /* 112 nodes that own >= 1 point (a ketama
                                     node of small weight may own none) */
    _Atomic uint64_t source_rev;  /* 120 the revision of the ring source
                                     (etcd) this table was built from; 0:
                                     none (a ring kept by this writer) */
    _Atomic uint64_t data[];      /* 128 */
} rb_ring_copy_shm_t;

_Static_assert(offsetof(rb_ring_copy_shm_t, data) == 128, "ring copy layout");

#define RBI_RING_COPY_HDR_WORDS (offsetof(rb_ring_copy_shm_t, data) / 8)

/* Node record: two words, sorted by name.
 *   w0 = name byte offset (in names) | name_len << RBI_NODE_LEN_SHIFT,
 *   w1 = weight | seq << 32 (seq: the order nodes were added, the tie order
 *        of ketama and nginx; rb_ring_load re-adds nodes in it). */
#define RBI_NODE_WORDS     2
#define RBI_NODE_LEN_SHIFT 40
#define RBI_NODE_OFF_MASK  ((1ULL << RBI_NODE_LEN_SHIFT) - 1)

/* The index has 2^b + 1 entries (uint32, two per word): entry j = the
 * first point whose top b bits are >= j.  b = floor(log2(npoints)), at
 * most 16 (the writer's choice: an index that stays in cache), raised until
 * nnodes <= 2^b; readers accept any b in [1, 24] with nnodes <= 2^b.
 *
 * Point word i (npoints of them, sorted by position, then tie order):
 *   (position << b) | owner,
 * the position's low 64 - b bits above the owner's node index (< nnodes
 * <= 2^b).  The position's top b bits are not stored: they are the index
 * bucket the point lies in, so inside one bucket the words sort as the
 * positions, and a key at position h is compared as h << b. */
#define RBI_RING_MAX_INDEX_BITS 24
_Static_assert(RB_RING_MAX_NODES <= (1u << RBI_RING_MAX_INDEX_BITS), "owner fits in b bits");

/* Node states, at word states_w of a copy (in-place sequence, latch.h):
 *   word 0: the sequence q, odd while the writer changes the words below in
 *           the active copy (a state change publishes without a flip: the
 *           points are the same); 0 when the copy is written, so q / 2
 *           counts the state changes since, and the version readers see
 *           is the copy's version + q / 2 (every publish is the next one);
 *   word 1: down | up_owners << 32: nodes not up, and nodes that own >= 1
 *           point and are up (lookup_n's bound);
 *   then ceil(nnodes / 32) words, 2 bits per node (node i: word 2 + i / 32,
 *           bits 2 (i % 32)): rb_node_state_t.
 * A lookup whose owner is not up walks clockwise to the first point of an
 * up node; the states change no point, so a node brought back up owns
 * exactly its keys of before. */
#define RBI_STATES_HDR_WORDS 2
#define RBI_STATES_PER_WORD  32
#define RBI_STATES_WORDS(nnodes) (RBI_STATES_HDR_WORDS + ((nnodes) + 31) / 32)

/* ---- filter directory slot --------------------------------------------- */
#define RBI_SECRET_BYTES RB_BLOOM_SECRET_BYTES
#define RBI_FILTER_NAME_WORDS ((RB_FILTER_NAME_MAX + 1) / 8)
#define RBI_SECRET_WORDS (RBI_SECRET_BYTES / 8)

enum { RBI_FILTER_FREE = 0, RBI_FILTER_LIVE = 1 };

/* Values of a slot's `layout` word, by kind (kind.c's table claims them):
 *   0 .. 2  the Bloom filter's (rb_bloom_layout_t);
 *   3 .. 15 free;
 *   16      a HyperLogLog counter (hll.c): layer[0].array_off names its
 *           RBI_HLL_BYTES register bytes, items is the count the writer
 *           keeps (H2: estimate | bit 63, or 0), nlayers is 0, the other
 *           Bloom words are 0 (docs/design.md, "HyperLogLog");
 *   17, 18  the count-min sketch's, 32-bit and 4-bit counters (cms_impl.h);
 *   19 .. 21 a cuckoo filter's, 8-, 12- and 16-bit fingerprints
 *           (cuckoo_impl.h: the words it uses, its layers' arrays);
 *   22, 23  a counting Bloom filter's, 4- and 8-bit counters (cbf_impl.h:
 *           the words it uses, its counter array).
 * A Bloom filter call meeting a layout of another kind answers
 * RB_EWRONGTYPE (rbi_layout_other_kind), one of no kind RB_ECORRUPT. */
#define RBI_LAYOUT_HLL 16u
#define RBI_LAYOUT_CMS32 17u
#define RBI_LAYOUT_CMS4 18u
#define RBI_LAYOUT_CF8  19u
#define RBI_LAYOUT_CF12 20u
#define RBI_LAYOUT_CF16 21u
#define RBI_LAYOUT_CBF4 22u
#define RBI_LAYOUT_CBF8 23u
#define RBI_HLL_BYTES  16384u   /* RB_HLL_REGISTERS registers, one byte each */

/* 1 if layout is a known kind's other than the Bloom filter's. */
static inline int rbi_layout_other_kind(uint64_t layout)
{
    return layout >= RBI_LAYOUT_HLL && layout <= RBI_LAYOUT_CBF8;
}

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

/* A directory slot.  The directory, a reader's binding and its read
 * section use only state, incarnation, gen, layout, name_len, name and
 * secret, which every filter kind keeps where they are; the other words
 * are the Bloom filter's, and another kind may use them its own way (the
 * count-min sketch: cms_impl.h; the cuckoo filter: cuckoo_impl.h).  The
 * `layout` word names the kind and its variant: 0 to 2 are the Bloom
 * filter's layouts (rb_bloom_layout_t), 16 HyperLogLog's, 17 and 18 the
 * count-min sketch's (32-bit and 4-bit counters), 19 to 21 the cuckoo
 * filter's (8-, 12-, 16-bit fingerprints), 22 and 23 the counting Bloom
 * filter's (4-, 8-bit counters); other values are free for
 * future kinds, each claiming its
 * values in kind.c's table.  A writer adopting a segment refuses a live slot of a
 * kind it does not know (it could not tell which heap extents it holds). */
typedef struct rb_filter_shm {
    _Atomic uint64_t state;        /*   0 RBI_FILTER_* (published last) */
    _Atomic uint64_t incarnation;  /*   8 unique per reserve */
    rbi_gen_t        gen;          /*  16 generation section (latch.h): bumped
                                          when an array is replaced */
    _Atomic uint64_t layout;       /*  24 kind and variant: rb_bloom_layout_t,
                                          RBI_CMS_LAYOUT* (cms_impl.h),
                                          RBI_LAYOUT_CF* (cuckoo_impl.h),
                                          RBI_LAYOUT_CBF* (cbf_impl.h) */
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
    rb_layer_shm_t layer[RB_BLOOM_MAX_LAYERS];     /* 576 */
} rb_filter_shm_t;

_Static_assert(offsetof(rb_filter_shm_t, gen) == 16, "slot layout");
_Static_assert(offsetof(rb_filter_shm_t, layout) == 24, "slot layout");
_Static_assert(offsetof(rb_filter_shm_t, name_len) == 64, "slot layout");
_Static_assert(offsetof(rb_filter_shm_t, name) == 128, "slot layout");
_Static_assert(offsetof(rb_filter_shm_t, secret) == 384, "slot layout");
_Static_assert(offsetof(rb_filter_shm_t, layer) == 576, "slot layout");
_Static_assert(sizeof(rb_layer_shm_t) == 48, "layer layout");
_Static_assert(sizeof(rb_filter_shm_t) == 576 + 48 * RB_BLOOM_MAX_LAYERS, "slot layout");

#endif /* RBI_FORMAT_H */
