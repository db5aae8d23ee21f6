/*
 * dirs.c - the directories ringbloomd puts its files in (pidfile, socket,
 * state): created if missing, and refused if another user made them, could
 * replace them, or redirected them.
 *
 * The non-root defaults fall back to /tmp/ringbloom-<uid> when there is no
 * XDG_RUNTIME_DIR, and any configured path may lead through a directory
 * others can write.  There another user can make the directory first, or a
 * symlink of its name to a directory of theirs (stat would follow it), and
 * so read the snapshot and log (keys, filter secrets), replace them, or
 * listen in the daemon's place and receive its clients' keys.
 *
 * The rule is the library's (rb_trusted_dir, lib/shm/paths.c; docs/design.md,
 * "Security review"), shared with the clients that look for the socket.
 * The path is walked level by level from "/" with openat(O_NOFOLLOW), each
 * level judged by the directory holding it.  A level in a directory that
 * only root and the daemon's user can change was made by one of them: any
 * owner, and a symlink there (an administrator's, such as /var/run -> /run)
 * is followed and its target walked the same way.  A level in a directory
 * others can write (/tmp) may be anyone's: it must be a real directory of
 * the daemon's user or root, never a symlink, and that parent must be
 * sticky so nobody can swap it afterwards.  The directory that holds the
 * files must be the daemon's user's (or root's) and writable by nobody
 * else.  Missing levels are created with the caller's mode, then judged
 * like the rest.
 *
 * A start that fails removes the levels it made (rbd_dirs_unmake), so a
 * daemon that could not start leaves no /tmp/ringbloom-<uid> behind.
 *
 * A refusal keeps its safety and says what to do.  The usual one: root
 * runs `ringbloomd` on a host where the packaged service's directories
 * (/run/ringbloom, /var/lib/ringbloom) belong to its user.  A directory a
 * client would take for that user's (root put it in a directory only root
 * can write, rb_trusted_dir's RB_DIR_VOUCHED) is named as theirs: run the
 * daemon as that user; any refused directory: or choose another with the
 * setting it came from.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirs.h"
#include "ringbloom.h"

/* The levels this start made, in the order made (a parent before its
 * children); at most a few per directory (rbd_dirs_unmake). */
#define MADE_MAX 32
static char *made[MADE_MAX];
static size_t nmade;

/* The missing levels of directory dir, the top one first, into miss
 * (copies; at most MADE_MAX): the levels rb_trusted_dir will create. */
static size_t missing_levels(const char *dir, char **miss)
{
    char path[PATH_MAX];
    struct stat st;
    size_t n = 0;

    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
        return 0;
    while (path[0] == '/' && path[1] != '\0' && n < MADE_MAX &&
           lstat(path, &st) != 0 && errno == ENOENT) {
        char *slash = strrchr(path, '/');
        memmove(miss + 1, miss, n * sizeof(*miss));
        if ((miss[0] = strdup(path)) == NULL)
            break;
        n++;
        *(slash == path ? slash + 1 : slash) = '\0';
    }
    return n;
}

/* Records the levels of miss[0 .. n) that exist now as this user's
 * directories (made by the call between), and frees the copies. */
static void record_made(char **miss, size_t n)
{
    struct stat st;

    for (size_t i = 0; i < n; i++) {
        if (nmade < MADE_MAX && lstat(miss[i], &st) == 0 && S_ISDIR(st.st_mode) &&
            st.st_uid == geteuid()) {
            made[nmade++] = miss[i];
            continue;
        }
        free(miss[i]);
    }
}

void rbd_dirs_unmake(void)
{
    while (nmade > 0) {
        char *dir = made[--nmade];
        DIR *d = opendir(dir);
        struct dirent *e;

        /* What this start put there: no directories (a deeper made level
         * went first), so unlinkat refuses nothing else it finds. */
        while (d != NULL && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                (void)unlinkat(dirfd(d), e->d_name, 0);
        if (d != NULL)
            closedir(d);
        (void)rmdir(dir);
        free(dir);
    }
}

void rbd_dirs_keep(void)
{
    while (nmade > 0)
        free(made[--nmade]);
}

/* The option that sets each setting on the command line. */
static const char *option_of(const char *setting)
{
    return strcmp(setting, "socket") == 0 ? "-s PATH"
         : strcmp(setting, "dir") == 0    ? "-d PATH"
                                          : "-o pidfile=PATH";
}

int rbd_make_dir(const char *path, int whole, mode_t mode, const char *setting, char *err,
                 size_t errlen)
{
    unsigned flags = whole ? 0 : RB_DIR_PARENT;
    char user[64], as[64], ignored[8], dir[PATH_MAX], *miss[MADE_MAX];
    const char *slash = strrchr(path, '/');
    struct passwd *pw;
    size_t used, nmiss;
    uid_t owner;
    int rc;

    snprintf(dir, sizeof(dir), "%.*s", whole || slash == NULL ? (int)strlen(path) :
             (int)(slash - path), path);
    nmiss = missing_levels(dir, miss);
    rc = rb_trusted_dir(path, flags, mode, (uid_t)-1, NULL, err, errlen);
    record_made(miss, nmiss);
    if (rc == RB_OK)
        return 0;
    if (rc != RB_EOWNER || (used = strlen(err)) + 1 >= errlen)
        return -1;
    if (rb_trusted_dir(path, flags | RB_DIR_VOUCHED, 0, (uid_t)-1, &owner, ignored,
                       sizeof(ignored)) == RB_OK && owner != geteuid()) {
        /* Root made it this user's: theirs is the daemon that may use it. */
        pw = getpwuid(owner);
        if (pw != NULL) {
            snprintf(user, sizeof(user), "%s", pw->pw_name);
            snprintf(as, sizeof(as), "%s", pw->pw_name);
        } else {
            snprintf(user, sizeof(user), "uid %u", (unsigned)owner);
            snprintf(as, sizeof(as), "#%u", (unsigned)owner);   /* sudo's form of a uid */
        }
        snprintf(err + used, errlen - used, "; root made it %s's (as the ringbloomd service's "
                 "directories are): run ringbloomd as %s (sudo -u %s ringbloomd ...), or "
                 "choose another directory: the setting %s (%s)", user, user, as, setting,
                 option_of(setting));
    } else {
        snprintf(err + used, errlen - used, "; choose another directory: the setting %s (%s)",
                 setting, option_of(setting));
    }
    return -1;
}
