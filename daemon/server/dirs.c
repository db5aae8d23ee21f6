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
 * A refusal keeps its safety and says what to do.  The usual one: root
 * runs `ringbloomd` on a host where the packaged service's directories
 * (/run/ringbloom, /var/lib/ringbloom) belong to its user.  A directory a
 * client would take for that user's (root put it in a directory only root
 * can write, rb_trusted_dir's RB_DIR_VOUCHED) is named as theirs: run the
 * daemon as that user; any refused directory: or choose another with the
 * setting it came from.
 */
#include "config.h"

#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dirs.h"
#include "ringbloom.h"

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
    char user[64], as[64], ignored[8];
    struct passwd *pw;
    size_t used;
    uid_t owner;
    int rc = rb_trusted_dir(path, flags, mode, (uid_t)-1, NULL, err, errlen);

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
