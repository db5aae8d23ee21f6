/*
 * paths.c - where an instance's socket, pidfile and state live by default,
 * so the daemon and every client agree without configuration.  Root gets
 * the FHS places; other users get the XDG ones, falling back to a private
 * directory under /tmp keyed by uid.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rb_internal.h"

int rb_instance_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > RB_INSTANCE_MAX || s[0] == '.')
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

static int fits(int n, size_t cap)
{
    return n >= 0 && (size_t)n < cap;
}

int rb_default_paths(const char *instance, rb_paths_t *out)
{
    char run[4096];
    const char *xdg_run = getenv("XDG_RUNTIME_DIR"), *xdg_state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    uid_t uid = geteuid();
    int n;

    if (instance == NULL || out == NULL || !rb_instance_ok(instance))
        return RB_EINVAL;
    if (uid == 0)
        n = snprintf(run, sizeof(run), "/run/ringbloom");
    else if (xdg_run != NULL && xdg_run[0] == '/')
        n = snprintf(run, sizeof(run), "%s/ringbloom", xdg_run);
    else
        n = snprintf(run, sizeof(run), "/tmp/ringbloom-%u", (unsigned)uid);
    if (!fits(n, sizeof(run)) ||
        !fits(snprintf(out->socket, sizeof(out->socket), "%s/%s.sock", run, instance),
              sizeof(out->socket)) ||
        !fits(snprintf(out->pidfile, sizeof(out->pidfile), "%s/%s.pid", run, instance),
              sizeof(out->pidfile)))
        return RB_ERANGE;
    if (uid == 0)
        n = snprintf(out->state_dir, sizeof(out->state_dir), "/var/lib/ringbloom/%s", instance);
    else if (xdg_state != NULL && xdg_state[0] == '/')
        n = snprintf(out->state_dir, sizeof(out->state_dir), "%s/ringbloom/%s", xdg_state,
                     instance);
    else if (home != NULL && home[0] == '/')
        n = snprintf(out->state_dir, sizeof(out->state_dir), "%s/.local/state/ringbloom/%s",
                     home, instance);
    else
        n = snprintf(out->state_dir, sizeof(out->state_dir), "/tmp/ringbloom-%u/state/%s",
                     (unsigned)uid, instance);
    return fits(n, sizeof(out->state_dir)) ? RB_OK : RB_ERANGE;
}
