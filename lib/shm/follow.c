/*
 * follow.c - a reader handle following its instance: rb_segment_check,
 * rb_segment_refresh and the poll rbi_reader_map makes now and then
 * (rbi_segment_poll), which move the handle to the live object when the
 * current one is retired (a republish, a rebuild) or its writer stopped
 * heartbeating (a restart); and the memory of the objects it left given
 * back after a grace.
 *
 * A move publishes the new mapping (seg->map, release) and keeps the old
 * one in the chain (rbi_map_t.older): a thread that loaded the old pointer
 * may still be inside a read section there.  Such a section lasts micro-
 * to milliseconds, so RBI_RECLAIM_MS (10 s) after the move the old mapping
 * is replaced in place by anonymous zero pages (mmap MAP_FIXED over the
 * same range, read-only) and its descriptor closed: the range stays mapped
 * (a thread stalled there longer reads zeros, never faults), and the
 * unlinked object's memory is freed once the writer and every reader have
 * let go of it.  Zeros are one of the contents a read may already meet (a
 * punched hole, heap.c) and reject: a slot reads not live, a moved
 * generation fails its re-check, and the next section loads the current
 * mapping.  Without this, every long-lived reader would pin the live data
 * of each object it followed away from (a restart, each shrink) until
 * rb_segment_close.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "segment.h"

#define RBI_RECLAIM_MS 10000u   /* a replaced mapping's grace */

int rb_segment_check(const rb_segment_t *seg)
{
    const rb_header_shm_t *h;
    uint64_t state;

    if (seg == NULL)
        return RB_EINVAL;
    h = rbi_hdr(rbi_seg_map(seg));
    state = atomic_load_explicit(&h->state, memory_order_acquire);
    if (state == RBI_STATE_RETIRED)
        return RB_ERETIRED;
    if (state != RBI_STATE_LIVE)
        return RB_ECORRUPT;
    if (seg->instance[0] != '\0' && rbi_writer_gone(h))
        return RB_EGONE;
    return RB_OK;
}

static uint64_t coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Under seg->lock: replaces the mappings replaced at least RBI_RECLAIM_MS
 * ago with zero pages and closes their descriptors; sets the time of the
 * next one due (0: none). */
static void reclaim(rb_segment_t *seg, uint64_t now)
{
    uint64_t next = 0;

    for (rbi_map_t *m = rbi_seg_map(seg)->older; m != NULL; m = m->older) {
        if (m->zeroed)
            continue;
        if (now < m->replaced_ms + RBI_RECLAIM_MS) {
            next = next == 0 || m->replaced_ms + RBI_RECLAIM_MS < next ?
                   m->replaced_ms + RBI_RECLAIM_MS : next;
            continue;
        }
        if (mmap(m->base, m->map_len, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS |
                 MAP_NORESERVE, -1, 0) == MAP_FAILED) {
            next = now + RBI_RECLAIM_MS;   /* try again later */
            continue;
        }
        if (m->fd >= 0)
            close(m->fd);
        m->fd = -1;
        m->zeroed = 1;
    }
    atomic_store_explicit(&seg->reclaim_ms, next, memory_order_relaxed);
}

/* Moves seg to a newer object if the current one is retired or silent.
 * force: ignore the rate limit.  Returns 1 if it moved.  Also gives back
 * the replaced mappings whose grace is over. */
static int seg_poll(rb_segment_t *seg, int force)
{
    rbi_map_t *cur = rbi_seg_map(seg), *next;
    const rb_header_shm_t *h = rbi_hdr(cur);
    uint64_t now = coarse_ms(), hb, due;
    int moved = 0;

    if (seg->writable || seg->instance[0] == '\0')
        return 0;
    due = atomic_load_explicit(&seg->reclaim_ms, memory_order_relaxed);
    if (due != 0 && now >= due) {
        pthread_mutex_lock(&seg->lock);
        reclaim(seg, now);
        pthread_mutex_unlock(&seg->lock);
    }
    hb = rbi_ld(&h->heartbeat_ms);
    if (atomic_load_explicit(&h->state, memory_order_acquire) == RBI_STATE_LIVE &&
        (hb > now || now - hb < RBI_STALE_MS))
        return 0;
    if (!force && now < atomic_load_explicit(&seg->next_poll_ms, memory_order_relaxed))
        return 0;
    pthread_mutex_lock(&seg->lock);
    atomic_store_explicit(&seg->next_poll_ms, now + RBI_POLL_MS, memory_order_relaxed);
    if (rbi_seg_map(seg) == cur &&
        rbi_map_open(seg->instance, 0, cur, seg->owner, &next) == RB_OK) {
        next->older = cur;
        cur->replaced_ms = now;
        if (atomic_load_explicit(&seg->reclaim_ms, memory_order_relaxed) == 0)
            atomic_store_explicit(&seg->reclaim_ms, now + RBI_RECLAIM_MS,
                                  memory_order_relaxed);
        /* Release: threads that load the new map see it fully set up. */
        atomic_store_explicit(&seg->map, next, memory_order_release);
        moved = 1;
    }
    pthread_mutex_unlock(&seg->lock);
    return moved;
}

void rbi_segment_poll(rb_segment_t *seg)
{
    seg_poll(seg, 0);
}

int rb_segment_refresh(rb_segment_t *seg)
{
    if (seg == NULL)
        return RB_EINVAL;
    return seg_poll(seg, 1);
}
