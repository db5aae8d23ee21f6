/*
 * paths.c - where an instance's socket, pidfile and state live by default,
 * so the daemon and every client agree without configuration, and whether
 * a directory on the way can be trusted.  Root gets the FHS places; other
 * users get the XDG ones (the home directory for the state only when it
 * is a directory of theirs), falling back to a private directory under
 * /tmp keyed by uid.
 *
 * The trust rule (rb_trusted_dir; docs/design.md, "Security review").  A
 * name resolves to what the users who can write the directory holding it
 * put there: in /tmp that is anyone, so another user can make
 * /tmp/ringbloom-<uid> in advance, or a symlink of that name to a
 * directory of theirs, and receive the daemon's socket, pidfile and state
 * or its clients' keys.  So the path is walked one level at a time from
 * "/" (openat with O_NOFOLLOW, fstat of what was opened; nothing is looked
 * up twice by name) and each level is judged by its parent.  Trusted users
 * are root, the caller's euid and one more uid the caller names (a client
 * told the daemon's user).  A parent is *shared* if a user other than
 * those can change it: its owner is not trusted, or group or others may
 * write it.
 *   - Under a parent that is not shared, root or a trusted user put the
 *     level there: any owner is accepted, and a symlink is resolved and
 *     its target walked by the same rule (so /var/run -> /run works).
 *   - Under a shared parent, a level may have been made by anyone: it must
 *     be a real directory (a symlink is refused, not followed) owned by a
 *     trusted user, and the parent must be owned by a trusted user and be
 *     sticky, so that nobody else can rename the level away and put
 *     another in its place after the check (/tmp qualifies).
 *   - The last directory, the one that holds the files, must not be shared
 *     itself: owned by a trusted user, writable by nobody else.
 *   - (V) With RB_DIR_VOUCHED, the owner of the last directory is trusted
 *     for it if the directory holding it is root's and only root can
 *     write it: only root can have made a name there, and only root can
 *     have given what it names to another user, so its owner is the one
 *     root chose (/run/ringbloom, made by systemd for user ringbloom).
 *     Nobody else can rename it away either.  Nothing else changes: a
 *     lookalike in /tmp or in a user's directory is judged as before.
 * A daemon creates missing levels (with the mode it asks for) and then
 * checks them like the rest; a client creates nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringbloom.h"
#include "util.h"


static int fits(int n, size_t cap)
{
    return n >= 0 && (size_t)n < cap;
}

/* 1 if path is absolute and names a directory of uid: a home directory
 * to keep the state under.  A user without one (a system user whose home
 * is /nonexistent, or /var/www of root's; a HOME left from another user
 * by su) gets the /tmp/ringbloom-<uid> fallback instead of a directory it
 * cannot create or write. */
static int own_dir(const char *path, uid_t uid)
{
    struct stat st;

    return path != NULL && path[0] == '/' && stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == uid;
}

int rb_default_paths(const char *instance, rb_paths_t *out)
{
    char run[4096];
    const char *xdg_run = getenv("XDG_RUNTIME_DIR"), *xdg_state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    uid_t uid = geteuid();
    int n;

    if (instance == NULL || out == NULL || !rbi_instance_ok(instance))
        return RB_EINVAL;
    if (uid == 0)
        return rb_system_paths(instance, out);
    /* XDG_RUNTIME_DIR is used as set: one another user could change is
     * refused by the trust rule with its reason, never passed over. */
    if (xdg_run != NULL && xdg_run[0] == '/')
        n = snprintf(run, sizeof(run), "%s/ringbloom", xdg_run);
    else
        n = snprintf(run, sizeof(run), "/tmp/ringbloom-%u", (unsigned)uid);
    if (!fits(n, sizeof(run)) ||
        !fits(snprintf(out->socket, sizeof(out->socket), "%s/%s.sock", run, instance),
              sizeof(out->socket)) ||
        !fits(snprintf(out->pidfile, sizeof(out->pidfile), "%s/%s.pid", run, instance),
              sizeof(out->pidfile)))
        return RB_ERANGE;
    if (xdg_state != NULL && xdg_state[0] == '/')
        n = snprintf(out->state_dir, sizeof(out->state_dir), "%s/ringbloom/%s", xdg_state,
                     instance);
    else if (own_dir(home, uid))
        n = snprintf(out->state_dir, sizeof(out->state_dir), "%s/.local/state/ringbloom/%s",
                     home, instance);
    else
        n = snprintf(out->state_dir, sizeof(out->state_dir), "/tmp/ringbloom-%u/state/%s",
                     (unsigned)uid, instance);
    return fits(n, sizeof(out->state_dir)) ? RB_OK : RB_ERANGE;
}

int rb_system_paths(const char *instance, rb_paths_t *out)
{
    if (instance == NULL || out == NULL || !rbi_instance_ok(instance))
        return RB_EINVAL;
    /* A valid name (at most RB_INSTANCE_MAX bytes) fits every buffer. */
    snprintf(out->socket, sizeof(out->socket), "/run/ringbloom/%s.sock", instance);
    snprintf(out->pidfile, sizeof(out->pidfile), "/run/ringbloom/%s.pid", instance);
    snprintf(out->state_dir, sizeof(out->state_dir), "/var/lib/ringbloom/%s", instance);
    return RB_OK;
}

/* ---- trusted directories ------------------------------------------------- */

#define TRUST_MAX_LEVELS 128   /* directories deep */
#define TRUST_MAX_LINKS  40    /* symlinks resolved (the kernel's limit) */

typedef struct trust_level {
    int fd;                    /* O_PATH descriptor of the directory */
    struct stat st;
    size_t shown_len;          /* its path is shown[0 .. shown_len) */
} trust_level_t;

typedef struct trust_walk {
    trust_level_t lv[TRUST_MAX_LEVELS];
    int n;                     /* open levels; the walk is at lv[n - 1] */
    char shown[PATH_MAX];      /* the real path of lv[n - 1], for messages */
    uid_t me, also;            /* trusted besides root; also may be -1 */
    uid_t vouched;             /* trusted once the walk is done (V), else -1 */
    char *why;
    size_t cap;
} trust_walk_t;

static int trusted_uid(const trust_walk_t *w, uid_t uid)
{
    return uid == 0 || uid == w->me || (w->also != (uid_t)-1 && uid == w->also) ||
           (w->vouched != (uid_t)-1 && uid == w->vouched);
}

/* 1 if only root can change directory st: root's, no write for group or
 * others. */
static int root_only(const struct stat *st)
{
    return st->st_uid == 0 && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* 1 if a user other than the trusted ones can change directory st. */
static int shared_dir(const trust_walk_t *w, const struct stat *st)
{
    return !trusted_uid(w, st->st_uid) || (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

/* The trusted users, for messages: "root", "uid 1000 or root", ... */
static const char *trusted_names(const trust_walk_t *w, char *buf, size_t cap)
{
    if (w->also != (uid_t)-1 && w->also != w->me && w->also != 0)
        snprintf(buf, cap, "uid %u, uid %u or root", (unsigned)w->me, (unsigned)w->also);
    else if (w->me != 0)
        snprintf(buf, cap, "uid %u or root", (unsigned)w->me);
    else
        snprintf(buf, cap, "root");
    return buf;
}

/* The path of name in the directory the walk is at, for messages. */
static const char *child_path(const trust_walk_t *w, const char *name, char *buf, size_t cap)
{
    size_t len = strlen(w->shown);

    /* Truncated only past PATH_MAX, which trust_push refuses. */
    if (snprintf(buf, cap, "%s%s%s", w->shown, len > 0 && w->shown[len - 1] == '/' ? "" : "/",
                 name) < 0)
        buf[0] = '\0';
    return buf;
}

static int trust_fail(trust_walk_t *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int trust_fail(trust_walk_t *w, int code, const char *fmt, ...)
{
    va_list ap;

    if (w->why != NULL && w->cap > 0) {
        va_start(ap, fmt);
        vsnprintf(w->why, w->cap, fmt, ap);
        va_end(ap);
    }
    return code;
}

static void trust_pop(trust_walk_t *w)
{
    close(w->lv[--w->n].fd);
    w->shown[w->n > 0 ? w->lv[w->n - 1].shown_len : 0] = '\0';
}

/* Makes fd (st) the level the walk is at; its path is shown + name (name
 * NULL: shown already is). */
static int trust_push(trust_walk_t *w, int fd, const struct stat *st, const char *name)
{
    char path[PATH_MAX];

    if (name != NULL && (strlen(child_path(w, name, path, sizeof(path))) + 1 >= sizeof(path) ||
                         w->n == TRUST_MAX_LEVELS)) {
        close(fd);
        return trust_fail(w, RB_ERANGE, "%s: path too long or too deep", w->shown);
    }
    if (name != NULL)
        memcpy(w->shown, path, strlen(path) + 1);
    w->lv[w->n].fd = fd;
    w->lv[w->n].st = *st;
    w->lv[w->n].shown_len = strlen(w->shown);
    w->n++;
    return RB_OK;
}

/* Drops every level and starts over at "/" (absolute) or "." (relative). */
static int trust_start(trust_walk_t *w, int absolute)
{
    const char *top = absolute ? "/" : ".";
    struct stat st;
    int fd;

    while (w->n > 0)
        trust_pop(w);
    fd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return trust_fail(w, rbi_errno_code(e), "%s: %s", top, strerror(e));
    }
    snprintf(w->shown, sizeof(w->shown), "%s", top);
    return trust_push(w, fd, &st, NULL);
}

/* One level: name in the directory the walk is at.  Opens it without
 * following a symlink and judges it by the rule above; a symlink it may
 * follow has its target put in front of rest (the components still to
 * walk, in a buffer of cap bytes).  mode != 0: creates it if missing. */
static int trust_step(trust_walk_t *w, const char *name, mode_t mode, char *rest, size_t cap,
                      int *links)
{
    const trust_level_t *parent = &w->lv[w->n - 1];
    int shared = shared_dir(w, &parent->st), fd;
    char path[PATH_MAX], users[64], target[PATH_MAX];
    struct stat st;
    ssize_t len;

    child_path(w, name, path, sizeof(path));
    fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && mode != 0) {
        if (mkdirat(parent->fd, name, mode) != 0 && errno != EEXIST)
            return trust_fail(w, rbi_errno_code(errno), "cannot create directory %s: %s", path,
                              strerror(errno));
        fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return trust_fail(w, rbi_errno_code(e), "%s: %s", path,
                          e == ENOENT ? "no such directory" : strerror(e));
    }
    if (S_ISLNK(st.st_mode) && shared) {
        close(fd);
        return trust_fail(w, RB_EOWNER, "%s is a symbolic link in %s, which users other than "
                          "%s can write: refusing to follow it (another user may have made it "
                          "to redirect the daemon's files or its clients' requests)",
                          path, w->shown, trusted_names(w, users, sizeof(users)));
    }
    if (S_ISLNK(st.st_mode)) {
        /* Made by a trusted user: walk its target by the same rule. */
        len = readlinkat(fd, "", target, sizeof(target));
        close(fd);
        if (len < 0 || (size_t)len >= sizeof(target) || ++*links > TRUST_MAX_LINKS ||
            strlen(rest) + (size_t)len + 2 > cap)
            return trust_fail(w, RB_ERANGE, "%s: %s", path,
                              len < 0 ? strerror(errno) : "symbolic links too long or too many");
        memmove(rest + len + 1, rest, strlen(rest) + 1);
        memcpy(rest, target, (size_t)len);
        rest[len] = '/';
        return target[0] == '/' ? trust_start(w, 1) : RB_OK;
    }
    if (!S_ISDIR(st.st_mode)) {
        close(fd);
        return trust_fail(w, RB_EINVAL, "%s is not a directory", path);
    }
    if (shared && !trusted_uid(w, parent->st.st_uid)) {
        close(fd);
        return trust_fail(w, RB_EOWNER, "%s belongs to uid %u, who could replace %s at any "
                          "time: refusing a path through it", w->shown,
                          (unsigned)parent->st.st_uid, path);
    }
    if (shared && !(parent->st.st_mode & S_ISVTX)) {
        close(fd);
        return trust_fail(w, RB_EOWNER, "%s can be written by group or others and is not "
                          "sticky: they could replace %s at any time", w->shown, path);
    }
    if (shared && !trusted_uid(w, st.st_uid)) {
        close(fd);
        return trust_fail(w, RB_EOWNER, "directory %s belongs to uid %u, not to %s, and "
                          "anyone can create names in %s: refusing it (another user may have "
                          "made it to read or replace what goes in it)", path,
                          (unsigned)st.st_uid, trusted_names(w, users, sizeof(users)),
                          w->shown);
    }
    return trust_push(w, fd, &st, name);
}

int rb_trusted_dir(const char *path, unsigned flags, mode_t create_mode, uid_t also,
                   uid_t *owner, char *why, size_t cap)
{
    char rest[2 * PATH_MAX], name[NAME_MAX + 1], users[64];
    const struct stat *top;
    trust_walk_t *w = NULL;
    int links = 0, rc;

    if (path == NULL || path[0] == '\0' || (flags & ~(RB_DIR_PARENT | RB_DIR_VOUCHED)) != 0)
        rc = RB_EINVAL;
    else if (strlen(path) >= PATH_MAX)
        rc = RB_ERANGE;
    else
        rc = (w = calloc(1, sizeof(*w))) == NULL ? RB_ENOMEM : RB_OK;
    if (rc != RB_OK) {
        if (why != NULL && cap > 0)
            snprintf(why, cap, "directory path '%s': %s", path != NULL ? path : "",
                     rb_strerror(rc));
        return rc;
    }
    w->me = geteuid();
    w->also = also;
    w->vouched = (uid_t)-1;
    w->why = why;
    w->cap = cap;
    snprintf(rest, sizeof(rest), "%s", path);
    if (flags & RB_DIR_PARENT) {
        /* The directory holding the file: drop the last component. */
        size_t end = strlen(rest);
        while (end > 1 && rest[end - 1] == '/')
            end--;
        while (end > 0 && rest[end - 1] != '/')
            end--;
        rest[end] = '\0';
    }
    rc = trust_start(w, path[0] == '/');
    while (rc == RB_OK) {
        size_t skip = strspn(rest, "/"), len = strcspn(rest + skip, "/");
        if (len == 0)
            break;
        if (len > NAME_MAX) {
            rc = trust_fail(w, RB_ERANGE, "%s: a name in it is too long", path);
            break;
        }
        memcpy(name, rest + skip, len);
        name[len] = '\0';
        /* What is left moves to the front: a symlink's target goes before it. */
        memmove(rest, rest + skip + len, strlen(rest + skip + len) + 1);
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0 && w->n > 1)
            trust_pop(w);
        else if (strcmp(name, "..") == 0 && w->shown[0] != '/')
            rc = trust_fail(w, RB_EINVAL, "%s: a relative path may not leave the current "
                            "directory", path);
        else if (strcmp(name, "..") != 0)
            rc = trust_step(w, name, create_mode, rest, sizeof(rest), &links);
    }
    top = &w->lv[w->n > 0 ? w->n - 1 : 0].st;
    if (rc == RB_OK && (flags & RB_DIR_VOUCHED) && w->n > 1 && root_only(&w->lv[w->n - 2].st))
        /* Root placed the last directory and chose its owner (V). */
        w->vouched = top->st_uid;
    if (rc == RB_OK && !trusted_uid(w, top->st_uid))
        rc = trust_fail(w, RB_EOWNER, "directory %s belongs to uid %u, not to %s: refusing to "
                        "use it (its owner could read or replace what is in it)", w->shown,
                        (unsigned)top->st_uid, trusted_names(w, users, sizeof(users)));
    else if (rc == RB_OK && shared_dir(w, top))
        rc = trust_fail(w, RB_EOWNER, "directory %s can be written by group or others: refusing "
                        "to use it (another user could replace what is in it)", w->shown);
    if (rc == RB_OK && owner != NULL)
        *owner = top->st_uid;
    while (w->n > 0)
        trust_pop(w);
    free(w);
    return rc;
}

/* 1 if path names something (lstat succeeds). */
static int exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

int rb_daemon_uid(const char *instance, const char *socket_path, uid_t also, uid_t *uid,
                  char *why, size_t cap)
{
    const unsigned flags = RB_DIR_PARENT | RB_DIR_VOUCHED;
    rb_paths_t def, sys;
    uid_t def_uid, sys_uid;
    int rc, sys_rc;

    if (socket_path != NULL)
        return rb_trusted_dir(socket_path, flags, 0, also, uid, why, cap);
    instance = instance != NULL ? instance : "default";
    if ((rc = rb_default_paths(instance, &def)) != RB_OK ||
        (rc = rb_system_paths(instance, &sys)) != RB_OK)
        return rc;
    rc = rb_trusted_dir(def.socket, flags, 0, also, &def_uid, why, cap);
    if (strcmp(def.socket, sys.socket) != 0 && (rc == RB_OK || rc == RB_ENOENT) &&
        !(rc == RB_OK && exists(def.socket))) {
        /* No default directory, or no socket in it: the system one if its
         * socket is there, or if the default directory is missing too. */
        sys_rc = rb_trusted_dir(sys.socket, flags, 0, also, &sys_uid, why, cap);
        if (sys_rc == RB_OK && (rc == RB_ENOENT || exists(sys.socket))) {
            def_uid = sys_uid;
            rc = RB_OK;
        } else if (rc == RB_ENOENT) {
            rc = sys_rc;
        }
    }
    if (rc == RB_OK && uid != NULL)
        *uid = def_uid;
    return rc;
}
