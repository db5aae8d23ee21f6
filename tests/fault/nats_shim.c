/*
 * nats_shim.c - an LD_PRELOAD library that makes libnats's stream-info
 * answers to ringbloomd look as a server without quorum's do, so
 * check_replica can force what a fault schedule met once in nine runs
 * (issue 41, item 8): a restarted daemon whose first answer came from
 * the one server up.
 *
 * Control: the environment variable RB_NATS_FAULT_CTL names a file read
 * again at every js_GetStreamInfo.  While it holds the word "minority",
 * each answer the real call gives OK is changed before the daemon sees
 * it: no leader, no replica current (as a lone nats-server 2.9 answers:
 * check_nats, "f"), its creation time one second later than the
 * leader's (the replicas' clocks can disagree) and no description (a
 * stale copy of the stream's config).  A missing file means no fault.
 * Each answer changed is reported on stderr (the daemon's log) as
 * "nats_shim: minority answer".
 *
 * Tests only; never installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nats/nats.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim_ctl.h"

typedef natsStatus (*info_fn)(jsStreamInfo **, jsCtx *, const char *, jsOptions *, jsErrCode *);

/* Whether the control file says "minority". */
static int minority(void)
{
    char buf[64];

    return shim_ctl_read("RB_NATS_FAULT_CTL", buf, sizeof(buf)) > 0 &&
           strstr(buf, "minority") != NULL;
}

natsStatus js_GetStreamInfo(jsStreamInfo **si, jsCtx *js, const char *stream, jsOptions *opts,
                            jsErrCode *errCode)
{
    static const char line[] = "nats_shim: minority answer\n";
    info_fn real = (info_fn)dlsym(RTLD_NEXT, "js_GetStreamInfo");
    natsStatus st = real(si, js, stream, opts, errCode);

    if (st != NATS_OK || *si == NULL || !minority())
        return st;
    if ((*si)->Cluster != NULL) {
        free((*si)->Cluster->Leader);
        (*si)->Cluster->Leader = NULL;
        for (int i = 0; i < (*si)->Cluster->ReplicasLen; i++)
            (*si)->Cluster->Replicas[i]->Current = false;
    }
    (*si)->Created += 1000000000;
    if ((*si)->Config != NULL) {
        free((char *)(*si)->Config->Description);
        (*si)->Config->Description = NULL;
    }
    if (write(2, line, sizeof(line) - 1) < 0) {
        /* the log is the test's evidence only */
    }
    return st;
}
