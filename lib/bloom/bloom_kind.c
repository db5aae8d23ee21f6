/*
 * bloom_kind.c - the Bloom filter's row of the kind table (kind.h): its
 * names, its layout values, its heap extents and bytes, its delete and
 * its summary.  Kept apart from bloom_read.c and bloom_write.c because the
 * row names functions of both (a row inside either would make the two
 * files call each other).
 */
#include "config.h"

#include "bloom.h"
#include "kind.h"

/* One array per layer, each sound. */
static int kind_extents(const rb_filter_shm_t *f, uint64_t size, rbi_extent_t *out, size_t *n)
{
    uint64_t nl = rbi_bloom_layer_count(f);

    /* A live filter always has a first layer (it goes live after it), in
     * every state a writer can stop in. */
    if (nl == 0)
        return RB_ECORRUPT;
    for (uint64_t l = 0; l < nl; l++) {
        if (!rbi_bloom_layer_sound(f, l, size))
            return RB_ECORRUPT;
        out[l].off = rbi_ld(&f->layer[l].array_off);
        out[l].len = rbi_ld(&f->layer[l].bits) / 8;
    }
    *n = (size_t)nl;
    return RB_OK;
}

static uint64_t kind_heap_bytes(const rb_filter_shm_t *f)
{
    uint64_t bytes = 0;

    for (uint64_t l = 0; l < rbi_ld(&f->nlayers) && l < RB_BLOOM_MAX_LAYERS; l++)
        bytes += rbi_round_up(rbi_ld(&f->layer[l].bits) / 8, RBI_ALIGN);
    return bytes;
}

static int kind_summary(const rb_segment_t *seg, const char *name, size_t len,
                        rb_filter_summary_t *out)
{
    rb_bloom_stat_t st;
    rb_bloom_t *bf;
    int rc = rb_bloom_open(seg, name, len, &bf);

    if (rc != RB_OK)
        return rc;
    rc = rb_bloom_info(bf, &st);
    rb_bloom_close(bf);
    if (rc != RB_OK)
        return rc;
    out->form = (st.flags & RB_BLOOM_AGING)        ? "aging"
                : (st.flags & RB_BLOOM_NONSCALING) ? "non-scaling"
                                                   : "scaling";
    out->layout = st.layout == RB_BLOOM_STANDARD     ? "standard"
                  : st.layout == RB_BLOOM_REDISBLOOM ? "redisbloom"
                                                     : "blocked";
    out->items = st.items;
    out->capacity = st.capacity;
    out->bytes = st.memory;
    out->layers = st.layers;
    out->error_rate = st.error_rate;
    return RB_OK;
}

const rbi_kind_t rbi_kind_bloom = {
    .desc = { "bloom", "MBbloom--" },   /* RedisBloom's type name */
    .layout_first = RB_BLOOM_STANDARD, .layout_last = RB_BLOOM_REDISBLOOM,
    .extents = kind_extents, .heap_bytes = kind_heap_bytes,
    .summary = kind_summary,
};
