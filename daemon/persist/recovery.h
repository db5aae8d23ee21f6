/*
 * recovery.h - ringbloomd's start-up: the state brought back (recovery.c).
 */
#ifndef RBD_RECOVERY_H
#define RBD_RECOVERY_H

#include <stddef.h>

#include "aof.h"
#include "rbd_config.h"
#include "snapshot.h"
#include "state.h"

/* Brings up st's segment and ring: re-attach to a live segment, or restore
 * snapshot + log (aof's directory) into a new one; then the start-up
 * snapshot.  ignore_corrupt: whatever would refuse the start is discarded
 * instead - its file moved aside to <file>.corrupt-<time>, never without
 * that copy - and the log says what was discarded.  0, or -1 with err
 * (nothing half-loaded is left in /dev/shm). */
int rbd_recovery_start(const rbd_config_t *cfg, rbd_state_t *st, rbd_aof_t *aof,
                       rbd_snapshots_t *sn, int ignore_corrupt, char *err, size_t errlen);

#endif /* RBD_RECOVERY_H */
