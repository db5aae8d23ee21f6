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
 * err. */
int rbd_make_dir(const char *path, int whole, mode_t mode, char *err, size_t errlen);

#endif /* RBD_DIRS_H */
