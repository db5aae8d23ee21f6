/*
 * segwatch.c - keeps the instance's segment reachable by its name and
 * cut to its live data.
 *
 * Readers find the daemon's segment by name in /dev/shm.  Whoever may
 * remove that name (the daemon's user, root, systemd-logind's RemoveIPC=
 * when that user's last session ends, a cleanup script) can do so while
 * the daemon holds the object: the daemon would go on acknowledging writes
 * into an object that no reader can find any more ("no such instance").
 * So once a second (housekeeping) the daemon checks that the name still
 * leads to its object, and if not it republishes: a new object under the
 * name holding the same bytes (rb_segment_restore from a dump, validated
 * like any restore, one generation up), the old object retired so that
 * attached readers move to the new one, and the filter handles that
 * pointed into the old one closed (filters.c reopens them by name when
 * next used).  The ring model holds no
 * segment state and carries on.  Nothing is lost: the dump is taken
 * between two loop turns, where the daemon changes nothing.
 *
 * A name taken by another object (a squatter's, while the daemon's was
 * gone) is removed first if the daemon may (its own user's object, or the
 * daemon is root); otherwise the daemon says so and keeps checking.
 *
 * The same move, made on purpose, cuts the segment down to its live data
 * (shrink): a free tail of at least segment-shrink-bytes that is also at
 * least the live data (so the copy costs no more than it gives back) is
 * dropped by a rebuild (rb_segment_rebuild: the live extents copied into a
 * new object renamed over the name, the old one retired, its readers
 * following, as after a restart).  Freed pages went back to the system
 * already (heap.c: the rebuild waits until nothing is pending, since
 * readers keep the old object mapped for a while, follow.c); the rebuild
 * gives back the rest: the committed size, and with it what a snapshot
 * and a restart cover.
 *
 * Both wait for a second without a snapshot in progress (server.c), which
 * reads the object they replace.
 *
 * Also here, since it applies to whichever object the daemon holds (the
 * one start-up made or re-attached, or a republished one): huge-pages.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "segwatch.h"

#define WATCH_LOG_MS 60000u   /* a republish that keeps failing: one line a minute */
#define SHRINK_RETRY_MS 60000u /* after a rebuild that failed */

typedef struct restore_arg {
    const char *instance;
    const rb_segment_opts_t *opts;
    rb_segment_t *fresh;
    int rc;
} restore_arg_t;

static int restore_into(const void *data, size_t len, void *arg)
{
    restore_arg_t *a = arg;

    a->rc = rb_segment_restore(a->instance, a->opts, data, len, &a->fresh);
    return a->rc == RB_OK ? 0 : -1;
}

/* The options of a new object for the state of seg (whose info is si). */
static void new_opts(rb_segment_opts_t *o, const rb_segment_info_t *si, const rbd_config_t *cfg)
{
    memset(o, 0, sizeof(*o));
    o->mode = cfg->segment_mode;
    o->max_size = si->max_size;
}

/* Moves the daemon from st->seg (whose info is si) to fresh, a new object
 * under the name holding the same state: its group set before readers are
 * sent to it, the old one retired (its readers move to the generation
 * fresh has) and closed with the handles into it. */
static void move_to(rbd_segwatch_t *w, rbd_state_t *st, const rbd_config_t *cfg,
                    const rb_segment_info_t *si, rb_segment_t *fresh)
{
    rb_segment_t *old = st->seg;

    if (rb_segment_set_group(fresh, cfg->segment_group) != RB_OK)
        rbd_log(LOG_WARNING, "could not set the new segment's group to %u",
                (unsigned)cfg->segment_group);
    if (rb_segment_retire(old, si->generation + 1) != RB_OK)
        rbd_log(LOG_WARNING, "could not retire the old segment");
    rbd_filters_close(&st->filters);   /* they point into the old object */
    st->seg = fresh;
    rb_segment_close(old);
    w->huge_ms = 0;   /* INFO's figures were the old object's */
    rbd_segwatch_huge(st->seg, cfg);
}

/* Copies the state into a new object under the name, retires the old
 * one and moves the daemon to the new one.  RB_OK or an error (nothing
 * changed). */
static int republish(rbd_segwatch_t *w, rbd_state_t *st, const rbd_config_t *cfg)
{
    rb_segment_info_t si;
    rb_segment_opts_t o;
    restore_arg_t a;
    rb_segment_t *old = st->seg;
    int rc;

    if ((rc = rb_segment_info(old, &si)) != RB_OK)
        return rc;
    new_opts(&o, &si, cfg);
    a.instance = cfg->instance;
    a.opts = &o;
    a.fresh = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        a.rc = RB_OK;
        rc = rb_segment_dump(old, restore_into, &a);
        if (rc == RB_OK)
            break;
        if (a.rc != RB_OK)
            rc = a.rc;
        /* The name taken by another object is worth a second attempt. */
        if (rc != RB_EEXIST || attempt > 0 || rb_segment_unlink(cfg->instance) != RB_OK)
            return rc;
        rbd_log(LOG_WARNING, "segment /dev/shm/ringbloom.%s was another object (not this "
                "daemon's): removed it", cfg->instance);
    }
    move_to(w, st, cfg, &si, a.fresh);
    w->republished++;
    return RB_OK;
}

/* Cuts the segment's free tail when it passes the bound (above).  A
 * failure (/dev/shm too full for the copy, say) is logged and tried
 * again after SHRINK_RETRY_MS; nothing changed. */
static void shrink(rbd_segwatch_t *w, rbd_state_t *st, const rbd_config_t *cfg)
{
    rb_segment_memory_t mem;
    rb_segment_info_t si;
    rb_segment_opts_t o;
    rb_segment_t *fresh;
    uint64_t now = rbd_mono_ms(), t0;
    int rc;

    if (cfg->segment_shrink_bytes == 0 || now < w->shrink_after_ms ||
        rb_segment_memory(st->seg, &mem) != RB_OK || mem.tail < cfg->segment_shrink_bytes ||
        mem.tail < mem.used || mem.unreleased > 0 || rb_segment_info(st->seg, &si) != RB_OK)
        return;
    new_opts(&o, &si, cfg);
    t0 = now;
    if ((rc = rb_segment_rebuild(st->seg, &o, &fresh)) != RB_OK) {
        w->shrink_after_ms = now + SHRINK_RETRY_MS;
        rbd_log(LOG_WARNING, "could not cut the segment's %llu free bytes at its end (%s); "
                "trying again in a minute", (unsigned long long)mem.tail, rb_strerror(rc));
        return;
    }
    move_to(w, st, cfg, &si, fresh);
    if (rb_segment_info(st->seg, &si) != RB_OK)
        si.size = mem.committed;
    w->shrunk++;
    w->shrunk_bytes += mem.committed > si.size ? mem.committed - si.size : 0;
    w->last_shrink_ms = rbd_mono_ms() - t0;
    rbd_log(LOG_NOTICE, "segment /dev/shm/ringbloom.%s cut from %llu to %llu bytes "
            "(%llu live) in %llu ms; attached readers follow it", cfg->instance,
            (unsigned long long)mem.committed, (unsigned long long)si.size,
            (unsigned long long)mem.used, (unsigned long long)w->last_shrink_ms);
}

const rb_segment_huge_t *rbd_segwatch_huge_status(rbd_segwatch_t *w, const rb_segment_t *seg)
{
    uint64_t now = rbd_mono_ms();

    if (w->huge_ms == 0 || now - w->huge_ms >= 1000) {
        if (rb_segment_huge_status(seg, &w->huge) != RB_OK)
            return NULL;
        w->huge_ms = now;
    }
    return &w->huge;
}

void rbd_segwatch_huge(rb_segment_t *seg, const rbd_config_t *cfg)
{
    rb_segment_huge_t h;
    int rc;

    if (rb_segment_huge_status(seg, &h) != RB_OK)
        return;
    if (!cfg->huge_pages) {
        if (h.requested)
            rbd_log(LOG_INFO, "the live segment keeps its 2 MiB pages (huge-pages no applies "
                    "when the segment is rebuilt: stop the daemon, remove "
                    "/dev/shm/ringbloom.%s, start it)", cfg->instance);
        return;
    }
    /* Warn and go on: small pages cost lookups time, not correctness, and a
     * daemon that refused to start would cost far more. */
    if ((rc = rb_segment_huge_pages(seg)) != RB_OK) {
        rbd_log(LOG_WARNING, "huge-pages yes: cannot turn 2 MiB pages on for segment "
                "/ringbloom.%s (%s); it works with small pages", cfg->instance,
                rb_strerror(rc));
        return;
    }
    if (rb_segment_huge_status(seg, &h) != RB_OK)
        return;
    if (h.why[0] != '\0')
        rbd_log(LOG_WARNING, "huge-pages yes: segment /ringbloom.%s works with small pages: "
                "%s (INFO memory: segment_huge_bytes)", cfg->instance, h.why);
    else
        rbd_log(LOG_INFO, "segment /ringbloom.%s is in 2 MiB pages (%llu MiB; %s)",
                cfg->instance, (unsigned long long)(h.huge_bytes >> 20), h.mount);
}

void rbd_segwatch_check(rbd_segwatch_t *w, rbd_state_t *st, const rbd_config_t *cfg)
{
    int rc = rb_segment_linked(st->seg);

    if (rc == 1) {
        w->linked = 1;
        shrink(w, st, cfg);
        return;
    }
    if (rc < 0)
        return;   /* could not tell (out of descriptors?): next second */
    w->linked = 0;
    rc = republish(w, st, cfg);
    if (rc == RB_OK) {
        w->linked = 1;
        rbd_log(LOG_WARNING, "segment /dev/shm/ringbloom.%s was removed while in use (not by "
                "this daemon): republished the same state under the name (%llu time(s) so "
                "far); attached readers follow it", cfg->instance,
                (unsigned long long)w->republished);
    } else {
        rbd_log_every(&w->log, WATCH_LOG_MS, LOG_ERR, "segment /dev/shm/ringbloom.%s "
                      "is gone or is another object, and it cannot be republished (%s): "
                      "readers cannot find this daemon's state; if another user made an "
                      "object of that name, remove it", cfg->instance, rb_strerror(rc));
    }
}
