/*
 * tsrv.h - a ringbloomd server built in the test's own process, for the
 * suites that run requests through the command table without a socket
 * (check_cmd.c, check_dump.c): a private segment of max_size bytes and
 * max_filters slots, an empty ring, the log in a temporary directory
 * (made by a first snapshot, as at start-up), and one client allowed to
 * write.  Header-only: the suites link the daemon's convenience library
 * (Makefile.am, daemon/librbd.a), which the harness library does not.
 */
#ifndef RB_TEST_TSRV_H
#define RB_TEST_TSRV_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "rb_test.h"
#include "snapshot.h"

typedef struct tsrv {
    server_t s;
    client_t c;
    char dir[64];
    char reply[4096];   /* check_cmd: the last reply, NUL-terminated */
    int flushed;        /* check_cmd: the last request's group commit (0, or -1: held) */
} tsrv_t;

static inline void tsrv_open_sized(tsrv_t *t, const char *instance, uint64_t max_size,
                                   uint32_t max_filters)
{
    rb_segment_opts_t o;
    char err[512];

    memset(t, 0, sizeof(*t));
    snprintf(t->dir, sizeof(t->dir), "/tmp/rbtest.%d.XXXXXX", (int)rb_test_main_pid);
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    ck_assert_int_eq(rbd_config_defaults(&t->s.cfg, instance), RB_OK);
    memset(&o, 0, sizeof(o));
    o.mode = 0600;
    o.max_size = max_size;
    o.max_filters = max_filters;
    ck_assert_int_eq(rb_segment_create(NULL, &o, &t->s.state.seg), RB_OK);
    ck_assert_int_eq(rb_ring_new(t->s.cfg.ring_mode, t->s.cfg.ring_replicas, &t->s.state.ring),
                     RB_OK);
    ck_assert_int_eq(rbd_aof_open(&t->s.aof, t->dir, FSYNC_NO, err, sizeof(err)), 0);
    rbd_sinks_init(&t->s.state.sinks, rbd_server_answer, &t->s);   /* as main.c */
    t->s.apply = rbd_server_apply;   /* as rbd_server_listen: CONFIG SET */
    ck_assert_int_eq(rbd_sinks_add(&t->s.state.sinks, &rbd_sink_log, &t->s.aof, -1), 0);
    ck_assert_int_eq(rbd_snapshot_save(&t->s.snaps, &t->s.aof, t->s.state.seg, err,
                                       sizeof(err)), 0);
    t->c.uid = getuid();
    t->c.who.n = 1;                      /* +@all, as root */
    t->c.who.e[0].set = RBD_ACL_ALL;
}

static inline void tsrv_close(tsrv_t *t)
{
    char path[128];

    rbd_filters_close(&t->s.state.filters);
    rbd_sinks_free(&t->s.state.sinks);
    rbd_aof_close(&t->s.aof);
    rb_segment_close(t->s.state.seg);
    rb_ring_free(t->s.state.ring);
    rbi_buf_free(&t->c.out);
    rbd_observe_free(&t->s.obs);   /* a CONFIG SET may have sized the slow log */
    snprintf(path, sizeof(path), "%s/%s", t->dir, RBD_SNAP_FILE);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s", t->dir, RBD_LOG_FILE);
    unlink(path);
    ck_assert_int_eq(rmdir(t->dir), 0);
}

/* The words from `word` on up to a NULL (at most cap) as a request's
 * argv / argl; returns how many. */
static inline size_t tsrv_words(const char **argv, size_t *argl, size_t cap, const char *word,
                                va_list ap)
{
    size_t n = 0;

    for (const char *w = word; w != NULL && n < cap; w = va_arg(ap, const char *)) {
        argv[n] = w;
        argl[n++] = strlen(w);
    }
    return n;
}

#endif /* RB_TEST_TSRV_H */
