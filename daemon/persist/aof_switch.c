/*
 * aof_switch.c - appendonly yes|no at start, on SIGHUP and CONFIG SET:
 * whether the log sink (sink_log.c) appends records at all.
 *
 * Invariant:
 *   A1 whatever appendonly was, the files (snapshot + log, P5) hold a
 *      prefix of the acknowledged changes, in order: yes -> no writes
 *      what is pending (or drops it: it is in the segment, as every change
 *      after the switch) and appends nothing more; no -> yes first takes a
 *      snapshot in the foreground (as SAVE), which holds every change made
 *      without the log and starts a fresh log, and only then appends - a
 *      record after a gap of unlogged changes would replay onto a state
 *      that lacks them.  If that snapshot fails the log stays off.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "rbd_log.h"
#include "snapshot.h"

int rbd_appendonly_set(rbd_snapshots_t *sn, rbd_aof_t *aof, rb_segment_t *seg, int on,
                       char *err, size_t errlen)
{
    size_t n;

    if ((on != 0) == (aof->enabled != 0))
        return 0;
    if (!on) {
        if (rbd_aof_disable(aof) != 0) {
            snprintf(err, errlen, "a transaction is being applied");
            return -1;
        }
        rbd_log(LOG_NOTICE, "appendonly no: changes are no longer logged; a restart without "
                "the segment comes back to the last snapshot");
        return 0;
    }
    if (rbd_snapshot_save(sn, aof, seg, err, errlen) != 0) {
        n = strlen(err);
        snprintf(err + n, errlen - n, " (appendonly stays no: the log starts from a snapshot)");
        return -1;
    }
    aof->enabled = 1;
    rbd_log(LOG_NOTICE, "appendonly yes: snapshot saved, changes are logged again");
    return 0;
}
