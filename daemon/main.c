/*
 * main.c - ringbloomd: start-up, configuration, single-instance lock,
 * recovery, the loop, and a clean shutdown.
 *
 *   ringbloomd [-c FILE] [-f] [-i NAME] [-s SOCKET] [-d DIR] [-o KEY=VALUE]...
 *              [--ignore-corrupt] [-t]
 *
 * With no arguments it serves instance "default" on the embedded defaults
 * (paths from rb_default_paths).  Settings come from the defaults, then the
 * file, then -i/-s/-d/-o, in that order; SIGHUP re-reads them the same way.
 * A relative path (of -c, or of the socket, pidfile or state directory) is
 * taken from the directory ringbloomd was started in, at start and on every
 * SIGHUP alike, although a daemon runs in / (daemon(3)).
 */
#include "config.h"

#include <bsd/libutil.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "rbd.h"

#define MAX_OVERRIDES 64

static char start_dir[4096];   /* the working directory at start */
static char config_file[8192];  /* -c, absolute; "" if none */
static struct {
    char key[64];
    char value[4096];
} overrides[MAX_OVERRIDES];
static int noverrides;

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

static int add_override(const char *key, const char *value)
{
    if (noverrides == MAX_OVERRIDES || strlen(key) >= sizeof(overrides[0].key) ||
        strlen(value) >= sizeof(overrides[0].value)) {
        fprintf(stderr, "ringbloomd: too many or too long overrides\n");
        return -1;
    }
    strcpy(overrides[noverrides].key, key);
    strcpy(overrides[noverrides].value, value);
    noverrides++;
    return 0;
}

/* path (a buffer of cap bytes), made absolute against the directory
 * ringbloomd started in.  0, or -1 with err. */
static int absolute(char *path, size_t cap, const char *what, char *err, size_t errlen)
{
    char buf[8192];
    int n;

    if (path[0] == '/')
        return 0;
    n = snprintf(buf, sizeof(buf), "%s/%s", strcmp(start_dir, "/") == 0 ? "" : start_dir, path);
    if (n < 0 || (size_t)n >= cap) {
        snprintf(err, errlen, "%s: %s made absolute (%s/%s) is too long", what, path, start_dir,
                 path);
        return -1;
    }
    memcpy(path, buf, (size_t)n + 1);
    return 0;
}

/* Builds the configuration: defaults for the instance, the file, the
 * overrides.  The instance (which decides the default paths) may come from
 * an override or from the file, so it is settled first. */
int rbd_load_config(rbd_config_t *cfg, char *err, size_t errlen)
{
    const char *config_path = config_file[0] != '\0' ? config_file : NULL;

    char instance[RB_INSTANCE_MAX + 1] = "default";
    char msg[512];

    if (rbd_config_defaults(cfg, instance) != RB_OK) {
        snprintf(err, errlen, "cannot derive default paths");
        return -1;
    }
    if (config_path != NULL && rbd_config_load(cfg, config_path, err, errlen) != 0)
        return -1;
    snprintf(instance, sizeof(instance), "%s", cfg->instance);
    for (int i = 0; i < noverrides; i++)
        if (strcmp(overrides[i].key, "instance") == 0)
            snprintf(instance, sizeof(instance), "%s", overrides[i].value);
    if (rbd_config_defaults(cfg, instance) != RB_OK) {
        snprintf(err, errlen, "instance '%s' is not a valid name (1-64 of A-Z a-z 0-9 _ . -)",
                 instance);
        return -1;
    }
    if (config_path != NULL && rbd_config_load(cfg, config_path, err, errlen) != 0)
        return -1;
    snprintf(cfg->instance, sizeof(cfg->instance), "%s", instance);
    for (int i = 0; i < noverrides; i++) {
        if (rbd_config_set(cfg, overrides[i].key, overrides[i].value, msg, sizeof(msg)) != 0) {
            snprintf(err, errlen, "%s", msg);
            return -1;
        }
    }
    if (absolute(cfg->socket, sizeof(cfg->socket), "socket", err, errlen) != 0 ||
        absolute(cfg->pidfile, sizeof(cfg->pidfile), "pidfile", err, errlen) != 0 ||
        absolute(cfg->dir, sizeof(cfg->dir), "dir", err, errlen) != 0)
        return -1;
    return rbd_config_check(cfg, err, errlen);
}

static void print_setting(const char *name, const char *value, void *arg)
{
    (void)arg;
    printf("%s %s\n", name, value);
}

int main(int argc, char **argv)
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
    int foreground = 0, ignore_corrupt = 0, test_only = 0, opt, status = 1;
    struct pidfh *pfh;
    pid_t other;
    server_t s;
    sigset_t sigs;
    char err[1024];

    while ((opt = getopt_long(argc, argv, "c:fi:s:d:o:thV", longopts, NULL)) != -1) {
        char *eq;
        switch (opt) {
        case 'c':
            if (snprintf(config_file, sizeof(config_file), "%s", optarg) >=
                (int)sizeof(config_file)) {
                fprintf(stderr, "ringbloomd: -c: path too long\n");
                return 2;
            }
            break;
        case 'f': foreground = 1; break;
        case 'i': if (add_override("instance", optarg) != 0) return 2; break;
        case 's': if (add_override("socket", optarg) != 0) return 2; break;
        case 'd': if (add_override("dir", optarg) != 0) return 2; break;
        case 'o':
            eq = strchr(optarg, '=');
            if (eq == NULL) {
                fprintf(stderr, "ringbloomd: -o wants KEY=VALUE, got '%s'\n", optarg);
                return 2;
            }
            *eq = '\0';
            if (add_override(optarg, eq + 1) != 0)
                return 2;
            break;
        case 'I': ignore_corrupt = 1; break;
        case 't': test_only = 1; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("ringbloomd %s\n", PACKAGE_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (getcwd(start_dir, sizeof(start_dir)) == NULL) {
        fprintf(stderr, "ringbloomd: cannot tell the working directory: %s\n", strerror(errno));
        return 1;
    }
    if (config_file[0] != '\0' &&
        absolute(config_file, sizeof(config_file), "-c", err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: %s\n", err);
        return 2;
    }
    memset(&s, 0, sizeof(s));
    s.lfd = s.sigfd = s.epfd = s.spare_fd = -1;
    s.config_path = config_file[0] != '\0' ? config_file : NULL;
    if (rbd_load_config(&s.cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: %s\n", err);
        return 2;
    }
    if (test_only) {
        rbd_config_each(&s.cfg, print_setting, NULL);
        return 0;
    }

    if (rbd_make_dir(s.cfg.pidfile, 0, 0755, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringbloomd: pidfile %s: %s\n", s.cfg.pidfile, err);
        return 1;
    }
    pfh = pidfile_open(s.cfg.pidfile, 0644, &other);
    if (pfh == NULL) {
        if (errno == EEXIST)
            fprintf(stderr, "ringbloomd: instance '%s' is already running (pid %d, pidfile %s)\n",
                    s.cfg.instance, (int)other, s.cfg.pidfile);
        else
            fprintf(stderr, "ringbloomd: cannot open pidfile %s: %s\n", s.cfg.pidfile,
                    strerror(errno));
        return 1;
    }
    if (!foreground && daemon(0, 0) != 0) {
        fprintf(stderr, "ringbloomd: daemon: %s\n", strerror(errno));
        pidfile_remove(pfh);
        return 1;
    }
    pidfile_write(pfh);
    rbd_log_init(foreground, s.cfg.loglevel);

    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    s.start_ms = rbd_mono_ms();
    if (persist_open(&s, err, sizeof(err)) != 0 ||
        persist_start(&s, ignore_corrupt, err, sizeof(err)) != 0) {
        rbd_log(LOG_ERR, "cannot start: %s", err);
        goto out;
    }
    s.seg_linked = 1;
    if (server_listen(&s, err, sizeof(err)) != 0) {
        rbd_log(LOG_ERR, "cannot listen: %s", err);
        goto out;
    }
    rbd_log(LOG_NOTICE, "ringbloomd %s ready: instance '%s', socket %s, state %s, "
            "segment /dev/shm/ringbloom.%s", PACKAGE_VERSION, s.cfg.instance, s.cfg.socket,
            s.cfg.dir, s.cfg.instance);
    if (server_run(&s) == 0)
        status = 0;
    if (s.shutdown_save) {
        if (persist_snapshot(&s, err, sizeof(err)) != 0) {
            rbd_log(LOG_WARNING, "final snapshot failed: %s (the log still has every change)",
                    err);
        }
    }
out:
    server_close(&s);
    rbd_filters_close(&s);
    persist_close(&s);
    if (s.seg != NULL) {
        rb_segment_close(s.seg);
        if (!s.cfg.keep_segment)
            rb_segment_unlink(s.cfg.instance);
    }
    rb_ring_free(s.ring);
    pidfile_remove(pfh);
    rbd_log(LOG_NOTICE, "ringbloomd stopped");
    return status;
}
