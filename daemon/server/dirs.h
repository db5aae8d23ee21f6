/*
 * dirs.h - the directories of ringbloomd's files (dirs.c).
 */
#ifndef RBD_DIRS_H
#define RBD_DIRS_H

#include <stddef.h>
#include <sys/types.h>

/* Creates the directory of path (whole = 0: path's parent; 1: path
 * itself) and its missing parents with mode, judging every level by the
 * trust rule (dirs.c): 0, or -1 with the reason, naming the level, in
 * err.  setting names where path comes from ("pidfile", "socket", "dir"):
 * a directory refused as another user's is followed by what to do (run as
 * the user root made it for, or choose another directory by that
 * setting). */
int rbd_make_dir(const char *path, int whole, mode_t mode, const char *setting, char *err,
                 size_t errlen);

/* A start that fails leaves nothing: rbd_make_dir records every level it
 * made (a directory that did not exist before the call and is this
 * user's after it, even when a deeper level then failed), and
 * rbd_dirs_unmake removes them, the deepest first, each with the files
 * this start put in it (a pidfile, a socket, a start-up snapshot and log:
 * nobody else can write in a directory the daemon made with its mode);
 * a directory holding anything else (another directory) stays.  Once the
 * daemon serves, rbd_dirs_keep forgets them: its directories are its
 * own, and a later stop keeps them. */
void rbd_dirs_unmake(void);
void rbd_dirs_keep(void);

#endif /* RBD_DIRS_H */
