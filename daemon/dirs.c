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
 * The rule is the library's (rb_trusted_dir, lib/paths.c; docs/design.md,
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
 */
#include "config.h"

#include "dirs.h"
#include "ringbloom.h"

int rbd_make_dir(const char *path, int whole, mode_t mode, char *err, size_t errlen)
{
    return rb_trusted_dir(path, whole ? 0 : RB_DIR_PARENT, mode, (uid_t)-1, NULL, err,
                          errlen) == RB_OK ? 0 : -1;
}
