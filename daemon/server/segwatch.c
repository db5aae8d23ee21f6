/*
 * segwatch.c - keeps the instance's segment reachable by its name.
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
 * Also here, since it applies to whichever object the daemon holds (the
 * one start-up made or re-attached, or a republished one): huge-pages.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "segwatch.h"

#define WATCH_LOG_MS 60000u   /* a republish that keeps failing: one line a minute */

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
    memset(&o, 0, sizeof(o));
    o.mode = cfg->segment_mode;
    o.max_size = si.max_size;
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
    /* The new object's group before its readers are sent to it. */
    if (rb_segment_set_group(a.fresh, cfg->segment_group) != RB_OK)
        rbd_log(LOG_WARNING, "could not set the republished segment's group to %u",
                (unsigned)cfg->segment_group);
    /* Readers of the old object see it retired and move to the new one
     * (the generation restore gave it). */
    if (rb_segment_retire(old, si.generation + 1) != RB_OK)
        rbd_log(LOG_WARNING, "could not retire the unlinked segment");
    rbd_filters_close(&st->filters);   /* they point into the old object */
    st->seg = a.fresh;
    rb_segment_close(old);
    w->republished++;
    w->huge_ms = 0;   /* INFO's figures were the old object's */
    rbd_segwatch_huge(st->seg, cfg);
    return RB_OK;
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
