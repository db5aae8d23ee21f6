/*
 * main.c - ringbloomd: its arguments, then the order of things: the
 * configuration (config.c), the pidfile and single-instance lock, the
 * detach (ready.c: the parent waits until the daemon serves or says why it
 * cannot), the state directory (aof.c), start-up (recovery.c), the loop
 * (server.c), the final snapshot and a clean shutdown.  A start that fails
 * removes the directories it made (dirs.c).
 *
 *   ringbloomd [-c FILE] [-f] [-i NAME] [-s SOCKET] [-d DIR] [-o KEY=VALUE]...
 *              [--ignore-corrupt] [-t]
 *
 * With no arguments it serves instance "default" on the embedded defaults
 * (paths from rb_default_paths).  Settings come from the defaults, then the
 * file, then -i/-s/-d/-o, in that order; SIGHUP re-reads them the same way.
 * A relative path (of -c, or of a path setting: config_table.c's
 * RBD_SET_PATH rows) is taken from the directory ringbloomd was started
 * in, at start, on every SIGHUP and by CONFIG SET alike, although a daemon
 * runs in / (daemon(3)).
 *
 * The daemon's files, and which may call which: docs/design.md,
 * "ringbloomd".
 */
#include "config.h"

#include <bsd/libutil.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "cmd.h"
#include "config_syntax.h"
#include "dirs.h"
#include "ready.h"
#include "recovery.h"
#include "server.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ringbloomd [options]\n"
            "  -c, --config FILE     read settings from FILE (see ringbloomd.conf)\n"
            "  -f, --foreground      stay in the foreground, log to stderr\n"
            "  -i, --instance NAME   instance name (default: default)\n"
            "  -s, --socket PATH     Unix socket to listen on\n"
            "  -d, --dir PATH        state directory (snapshot and log)\n"
            "  -o, --set KEY=VALUE   any setting, overriding the file\n"
            "      --ignore-corrupt  start even if the snapshot or log is corrupt or they\n"
            "                        do not fit together: what would stop the start is\n"
            "                        discarded, its file kept as FILE.corrupt-TIME\n"
            "  -t, --test-config     check the configuration, print it, and exit\n"
            "  -h, --help            this text\n"
            "  -V, --version         print the version\n");
}

/* What the command line asks for besides the settings (which go to src). */
typedef struct options {
    int foreground, ignore_corrupt, test_only;
} options_t;

static int add_override(rbd_config_src_t *src, const char *key, const char *value)
{
    if (rbd_config_override(src, key, value) != 0) {
        fprintf(stderr, "ringbloomd: too many or too long overrides\n");
        return -1;
    }
    return 0;
}

/* Parses argv: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, rbd_config_src_t *src, options_t *o)
{
    static const struct option longopts[] = {
        { "config", required_argument, NULL, 'c' },
        { "foreground", no_argument, NULL, 'f' },
        { "instance", required_argument, NULL, 'i' },
        { "socket", required_argument, NULL, 's' },
        { "dir", required_argument, NULL, 'd' },
        { "set", required_argument, NULL, 'o' },
        { "ignore-corrupt", no_argument, NULL, 'I' },
        { "test-config", no_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    static const char *const keys[] = { ['i'] = "instance", ['s'] = "socket", ['d'] = "dir" };
    int opt;
    char *eq;

    while ((opt = getopt_long(argc, argv, "c:fi:s:d:o:thV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            if (snprintf(src->file, sizeof(src->file), "%s", optarg) >= (int)sizeof(src->file)) {
                fprintf(stderr, "ringbloomd: -c: path too long\n");
                return 2;
            }
            break;
        case 'f': o->foreground = 1; break;
        case 'i': case 's': case 'd':
            if (add_override(src, keys[opt], optarg) != 0)
                return 2;
            break;
        case 'o':
            eq = strchr(optarg, '=');
            if (eq == NULL) {
                fprintf(stderr, "ringbloomd: -o wants KEY=VALUE, got '%s'\n", optarg);
                return 2;
            }
            *eq = '\0';
            if (add_override(src, optarg, eq + 1) != 0)
                return 2;
            break;
        case 'I': o->ignore_corrupt = 1; break;
        case 't': o->test_only = 1; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("ringbloomd %s\n", PACKAGE_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    return -1;
}

/* -t: each setting as a line of the file would say it (config_syntax.c). */
static void print_setting(const char *name, const char *value, void *arg)
{
    (void)arg;
    rbd_conf_put(stdout, name, value);
}

/* The configuration from src, made absolute against the working
 * directory: -1 to go on, else the exit status. */
static int configure(rbd_config_src_t *src, rbd_config_t *cfg)
{
    char err[1024];

    if (getcwd(src->start_dir, sizeof(src->start_dir)) == NULL) {
        fprintf(stderr, "ringbloomd: cannot tell the working directory: %s\n", strerror(errno));
        return 1;
    }
    if (src->file[0] != '\0' &&
        rbd_config_absolute(src, src->file, sizeof(src->file), "-c", err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: %s\n", err);
        return 2;
    }
    if (rbd_config_build(src, cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: %s\n", err);
        return 2;
    }
    return -1;
}

/* The pidfile, locked (one daemon per instance), then daemon(3) unless
 * foreground: the pidfile, or NULL (said on stderr). */
static struct pidfh *become_daemon(const rbd_config_t *cfg, int foreground)
{
    struct pidfh *pfh;
    struct stat st;
    pid_t other;
    char err[1024];

    if (rbd_make_dir(cfg->pidfile, 0, 0755, "pidfile", err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: pidfile %s: %s\n", cfg->pidfile, err);
        return NULL;
    }
    /* pidfile_open truncates and writes whatever is there (a device too);
     * its directory is trusted, so what stat sees is what it opens. */
    if (stat(cfg->pidfile, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "ringbloomd: pidfile %s is not a regular file (a FIFO, socket, device "
                "or directory): choose another path (the setting pidfile)\n", cfg->pidfile);
        return NULL;
    }
    pfh = pidfile_open(cfg->pidfile, 0644, &other);
    if (pfh == NULL) {
        if (errno == EEXIST)
            fprintf(stderr, "ringbloomd: instance '%s' is already running (pid %d, pidfile %s)\n",
                    cfg->instance, (int)other, cfg->pidfile);
        else
            fprintf(stderr, "ringbloomd: cannot open pidfile %s: %s\n", cfg->pidfile,
                    strerror(errno));
        return NULL;
    }
    /* Daemonized, the parent waits here until serve() reports (ready.c). */
    if (rbd_ready_detach(foreground) != 0) {
        fprintf(stderr, "ringbloomd: cannot become a daemon: %s\n", strerror(errno));
        pidfile_remove(pfh);
        return NULL;
    }
    pidfile_write(pfh);
    return pfh;
}

/* ring-source etcd: the thread following etcd, from the revision the
 * recovered table is of (until it publishes, readers have the recovered
 * table). */
static int etcd_start(server_t *s, char *err, size_t errlen)
{
    uint64_t rev = 0;

    if (s->cfg.ring_source != RING_SOURCE_ETCD)
        return 0;
    if (rb_ring_source_revision(s->state.seg, &rev) != RB_OK)
        rev = 0;   /* no table yet: the first revision read is applied */
    if (rbd_source_start(&s->source, &s->cfg, (int64_t)rev, err, errlen) != 0)
        return -1;
    rbd_log(LOG_NOTICE, "ring source: etcd %s, prefix %s, from revision %llu",
            s->cfg.etcd_endpoints, s->cfg.etcd_prefix, (unsigned long long)rev);
    return 0;
}

static void *etcd_obj(server_t *s)
{
    return s->source;
}

static int etcd_fd(const void *o)
{
    return rbd_source_fd(o);
}

static void etcd_stop(server_t *s)
{
    rbd_source_stop(s->source);
    s->source = NULL;
}

/* filter-source nats: the thread following the stream from the position
 * the recovered segment holds (until it applies more, readers have the
 * recovered filters). */
static int nats_start(server_t *s, char *err, size_t errlen)
{
    if (s->cfg.filter_source != FILTER_SOURCE_NATS)
        return 0;
    if (rbd_fsource_start(&s->fsource, &s->cfg, &s->state, err, errlen) != 0)
        return -1;
    rbd_log(LOG_NOTICE, "filter source: NATS %s, stream %s, filters '%s'", s->cfg.nats_servers,
            s->cfg.nats_stream, s->cfg.nats_filters);
    return 0;
}

static void *nats_obj(server_t *s)
{
    return s->fsource;
}

static int nats_fd(const void *o)
{
    return rbd_fsource_fd(o);
}

static void nats_stop(server_t *s)
{
    rbd_fsource_stop(s->fsource);
    s->fsource = NULL;
}

/* The sources of changes made beyond this host, one row each (a new one
 * is a row): started when its setting asks (start leaves obj NULL
 * otherwise), registered as an op sink (it takes the changes it makes
 * elsewhere, sink.h) after the log, its descriptor in the loop's epoll
 * set (readable: it has something for the loop). */
static const struct source_row {
    const char *what;
    const rbd_sink_ops_t *sink;
    int (*start)(server_t *s, char *err, size_t errlen);
    void *(*obj)(server_t *s);
    int (*fd)(const void *obj);
    void (*stop)(server_t *s);
} sources[] = {
    { "the ring source (etcd)", &rbd_source_sink, etcd_start, etcd_obj, etcd_fd, etcd_stop },
    { "the filter source (NATS)", &rbd_fsource_sink, nats_start, nats_obj, nats_fd, nats_stop },
};
#define NSOURCES (sizeof(sources) / sizeof(sources[0]))

static int start_sources(server_t *s, char *err, size_t errlen)
{
    for (size_t i = 0; i < NSOURCES; i++) {
        struct epoll_event ev = { .events = EPOLLIN };
        char why[900];
        void *obj;

        if (sources[i].start(s, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "cannot start %s: %s", sources[i].what, why);
            return -1;
        }
        if ((obj = sources[i].obj(s)) == NULL)
            continue;
        ev.data.fd = sources[i].fd(obj);
        if (rbd_sinks_add(&s->state.sinks, sources[i].sink, obj, ev.data.fd) != 0) {
            snprintf(err, errlen, "cannot start %s: too many op sinks", sources[i].what);
            return -1;
        }
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) != 0) {
            snprintf(err, errlen, "cannot start %s: epoll: %s", sources[i].what,
                     strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Unregisters and stops every source started, the last first. */
static void stop_sources(server_t *s)
{
    for (size_t i = NSOURCES; i-- > 0;) {
        void *obj = sources[i].obj(s);

        if (obj == NULL)
            continue;
        rbd_sinks_remove(&s->state.sinks, obj);
        sources[i].stop(s);
    }
}

/* A state directory that is the default of a user without a home
 * directory (rb_default_paths: /tmp/ringbloom-<uid>/state) is said once at
 * start: a reboot may clear /tmp, and the setting dir moves it. */
static void tmp_state_warning(const rbd_config_t *cfg)
{
    rb_paths_t def;

    if (rb_default_paths(cfg->instance, &def) == RB_OK && strcmp(def.state_dir, cfg->dir) == 0 &&
        strncmp(cfg->dir, "/tmp/", 5) == 0)
        rbd_log(LOG_WARNING, "the state is in %s: this user has no home directory of its own "
                "(HOME=%s), and a reboot may clear /tmp; choose a lasting place with the "
                "setting dir (-d PATH)", cfg->dir, getenv("HOME") ? getenv("HOME") : "unset");
}

/* Start-up, the loop, the final snapshot: the exit status. */
static int serve(server_t *s, int ignore_corrupt)
{
    char err[1024], why[1200];
    int status = 1;

    s->start_ms = rbd_mono_ms();
    /* The op sinks (sink.h), in the order they see an op: the log first. */
    rbd_sinks_init(&s->state.sinks, rbd_server_answer, s);
    (void)rbd_sinks_add(&s->state.sinks, &rbd_sink_log, &s->aof, -1);
    if (rbd_aof_open(&s->aof, s->cfg.dir, s->cfg.appendfsync, err, sizeof(err)) != 0 ||
        rbd_recovery_start(&s->cfg, &s->state, &s->aof, &s->snaps, ignore_corrupt, err,
                           sizeof(err)) != 0) {
        rbd_log(LOG_ERR, "cannot start: %s", err);
        snprintf(why, sizeof(why), "cannot start: %s", err);
        rbd_ready_fail(why);
        return 1;
    }
    /* The files are whole now (the start-up snapshot superseded the log
     * it replayed); from here appendonly decides whether records follow. */
    if (rbd_appendonly_set(&s->snaps, &s->aof, s->state.seg, s->cfg.appendonly, err,
                           sizeof(err)) != 0)
        rbd_log(LOG_WARNING, "appendonly: %s", err);
    s->watch.linked = 1;
    rbd_segwatch_huge(s->state.seg, &s->cfg);
    if (rbd_server_listen(s, err, sizeof(err)) != 0) {
        rbd_log(LOG_ERR, "cannot listen: %s", err);
        snprintf(why, sizeof(why), "cannot listen: %s", err);
        rbd_ready_fail(why);
        return 1;
    }
    if (start_sources(s, err, sizeof(err)) != 0) {
        rbd_log(LOG_ERR, "%s", err);
        snprintf(why, sizeof(why), "%s", err);
        rbd_ready_fail(why);
        return 1;
    }
    rbd_log(LOG_NOTICE, "ringbloomd %s ready: instance '%s', socket %s, state %s, "
            "segment /dev/shm/ringbloom.%s", PACKAGE_VERSION, s->cfg.instance, s->cfg.socket,
            s->cfg.dir, s->cfg.instance);
    snprintf(why, sizeof(why), "serving instance '%s' on %s", s->cfg.instance, s->cfg.socket);
    rbd_ready_ok(why);
    rbd_dirs_keep();   /* from here its directories are the daemon's */
    tmp_state_warning(&s->cfg);
    if (rbd_server_run(s) == 0)
        status = 0;
    rbd_ready_stopping();
    if (s->shutdown_save &&
        rbd_snapshot_save(&s->snaps, &s->aof, s->state.seg, err, sizeof(err)) != 0)
        rbd_log(LOG_WARNING, "final snapshot failed: %s (the log still has every change)", err);
    /* SHUTDOWN NOSAVE: the log has every change; with appendonly no only
     * the segment has those since the last snapshot (kept if keep-segment). */
    if (!s->shutdown_save && !s->aof.enabled && s->aof.changes > 0)
        rbd_log(LOG_WARNING, "SHUTDOWN NOSAVE with appendonly no: %llu changes since the last "
                "snapshot are in the segment only", (unsigned long long)s->aof.changes);
    rbd_snapshot_abandon(&s->snaps);
    stop_sources(s);
    return status;
}

int main(int argc, char **argv)
{
    static rbd_config_src_t src;   /* large: not on the stack */
    static server_t s;
    options_t o = { 0, 0, 0 };
    char err[4200];
    struct pidfh *pfh;
    sigset_t sigs;
    int status;

    rbd_acl_set_known(rbd_cmd_known);   /* before any configuration is read */
    if ((status = parse_args(argc, argv, &src, &o)) >= 0 ||
        (status = configure(&src, &s.cfg)) >= 0)
        return status;
    s.src = &src;
    s.lfd = s.sigfd = s.epfd = s.spare_fd = s.snaps.wakefd = -1;
    if (o.test_only) {
        rbd_config_each(&s.cfg, print_setting, NULL);
        return 0;
    }
    if (rbd_config_check_groups(&s.cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: cannot start: %s\n", err);
        return 1;
    }
    /* Before the detach: a logfile that cannot be opened is said here. */
    s.foreground = o.foreground;
    if (rbd_server_log_setup(&s, -1, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: cannot start: %s\n", err);
        return 1;
    }
    if (!o.foreground && s.cfg.logfile[0] == '\0' && !s.cfg.syslog_enabled)
        fprintf(stderr, "ringbloomd: warning: no logfile and syslog-enabled no: "
                "the daemon's log goes nowhere\n");
    if ((pfh = become_daemon(&s.cfg, o.foreground)) == NULL) {
        rbd_dirs_unmake();
        return 1;
    }
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    status = serve(&s, o.ignore_corrupt);
    rbd_server_close(&s);
    rbd_filters_close(&s.state.filters);
    rbd_sinks_free(&s.state.sinks);
    rbd_aof_close(&s.aof);
    if (s.state.seg != NULL) {
        rb_segment_close(s.state.seg);
        if (!s.cfg.keep_segment)
            rb_segment_unlink(s.cfg.instance);
    }
    rb_ring_free(s.state.ring);
    pidfile_remove(pfh);
    rbd_dirs_unmake();   /* a start that failed: the directories it made */
    rbd_log(LOG_NOTICE, "ringbloomd stopped");
    return status;
}
