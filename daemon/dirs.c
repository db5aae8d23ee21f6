/*
 * dirs.c - the directories ringbloomd puts its files in (pidfile, socket,
 * state): created if missing, and refused if another user owns them.
 *
 * The non-root defaults fall back to /tmp/ringbloom-<uid> when there is no
 * XDG_RUNTIME_DIR, and any configured path may sit in a directory others
 * can write; a directory another user made in advance would let that user
 * read the snapshot and log (keys, filter secrets) or swap the socket.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "rbd.h"

int rbd_make_dir(const char *path, int whole, mode_t mode, char *err, size_t errlen)
{
    char buf[4096];
    size_t n = strlen(path);
    struct stat st;

    if (n == 0 || n >= sizeof(buf)) {
        snprintf(err, errlen, "bad path '%s'", path);
        return -1;
    }
    memcpy(buf, path, n + 1);
    if (!whole) {
        char *slash = strrchr(buf, '/');
        if (slash == NULL)
            snprintf(buf, sizeof(buf), ".");
        else if (slash == buf)
            buf[1] = '\0';
        else
            *slash = '\0';
        n = strlen(buf);
    }
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, mode) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "cannot create directory %s: %s", buf, strerror(errno));
                return -1;
            }
            buf[i] = c;
        }
    }
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory", buf);
        return -1;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        snprintf(err, errlen, "directory %s belongs to uid %u, not to ringbloomd's uid %u or "
                 "root: refusing to use it (another user may have made it to read or replace "
                 "the daemon's files)", buf, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        rbd_log(LOG_WARNING, "directory %s is writable by group or others: while ringbloomd is "
                "down another user could put files or a socket of their own there (use a "
                "directory only the daemon's user can write)", buf);
    return 0;
}
