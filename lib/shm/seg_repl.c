/*
 * seg_repl.c - the replicated filters' position (seg_repl.h): two header
 * words, repl_seq (offset 144) and repl_stream (152), kept by the writer
 * and copied by a restore (adopt.c) so a snapshot carries them.  Workload:
 * two stores per stream message applied; two loads per daemon start and
 * per INFO.
 */
#include "config.h"

#include "seg_repl.h"
#include "segment.h"

void rbi_segment_repl_set(rb_segment_t *seg, uint64_t seq, uint64_t stream)
{
    rb_header_shm_t *h;

    if (seg == NULL || !seg->writable)
        return;
    h = rbi_hdr(rbi_seg_map(seg));
    rbi_st(&h->repl_stream, stream);
    rbi_st(&h->repl_seq, seq);
}

void rbi_segment_repl_get(const rb_segment_t *seg, uint64_t *seq, uint64_t *stream)
{
    const rb_header_shm_t *h;

    *seq = *stream = 0;
    if (seg == NULL)
        return;
    h = rbi_hdr(rbi_seg_map(seg));
    *seq = rbi_ld(&h->repl_seq);
    *stream = rbi_ld(&h->repl_stream);
}
