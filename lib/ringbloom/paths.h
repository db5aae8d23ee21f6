/*
 * ringbloom/paths.h - where an instance's daemon keeps its socket, pidfile
 * and state, the rule that judges a directory trusted, and the daemon's
 * uid found from its socket's directory.
 *
 * A part of ringbloom.h: programs include <ringbloom.h>, which includes
 * every part, and its conventions (return codes, who may call, handles,
 * keys) hold here.
 */
#ifndef RINGBLOOM_PATHS_H
#define RINGBLOOM_PATHS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where an instance's daemon keeps its socket, pidfile and state.  As root:
 * the system paths (rb_system_paths).  Otherwise: $XDG_RUNTIME_DIR/ringbloom
 * (or /tmp/ringbloom-<uid> without it); and
 * $XDG_STATE_HOME/ringbloom/<instance>, else
 * ~/.local/state/ringbloom/<instance> if HOME names a directory this user
 * owns, else /tmp/ringbloom-<uid>/state/<instance> (a user without a home
 * directory: a reboot may clear it). */
typedef struct rb_paths {
    char socket[108];       /* fits sockaddr_un.sun_path */
    char pidfile[4096];
    char state_dir[4096];
} rb_paths_t;

/* Any process.  Fills *out for instance (a stat of HOME for a user other
 * than root without XDG_STATE_HOME).  RB_EINVAL for a bad name, RB_ERANGE
 * if a path would not fit. */
RB_EXPORT RB_WUR int rb_default_paths(const char *instance, rb_paths_t *out);

/* Any process.  The system paths of instance, whoever asks:
 * /run/ringbloom/<instance>.sock|.pid and /var/lib/ringbloom/<instance>,
 * root's defaults and where a service manager runs the daemon (as root or
 * as a system user, e.g. `ringbloom`, owning /run/ringbloom).  A client
 * looking an instance up by name tries its own default socket first, then
 * this one (rb_conn_open, the CLI).  RB_EINVAL for a bad name. */
RB_EXPORT RB_WUR int rb_system_paths(const char *instance, rb_paths_t *out);

/* rb_trusted_dir flags. */
#define RB_DIR_PARENT 0x1u   /* path names a file: judge the directory holding it */
#define RB_DIR_VOUCHED 0x2u  /* the last directory may be any user's if the
                                directory holding it is root's and only root
                                can write it (root put it there and chose its
                                owner: /run/ringbloom of user ringbloom) */

/* Any process.  Whether directory `path` is what root or a trusted user
 * made it, so that files in it (a socket, a pidfile, state) are not
 * another user's.  Trusted: root, this process's euid and `also` (another
 * uid, e.g. the daemon's when it runs as someone else; (uid_t)-1: none).
 * The path is walked from "/" one level at a time without following a
 * symlink blindly, and each level is judged by the directory holding it
 * (docs/design.md, "Security review"): under a directory that only trusted
 * users can change, anything goes (a symlink is followed and its target
 * judged the same way, so /var/run -> /run works); under one that others
 * can write, a level must be a real directory of a trusted user and its
 * parent sticky (/tmp); the last directory must belong to a trusted user
 * and be writable by nobody else (with RB_DIR_VOUCHED, the owner of a last
 * directory that root placed counts as trusted for it).
 * create_mode: 0 makes nothing (a client); otherwise missing levels are
 * created with this mode (under the umask) before they are judged (a
 * daemon making its run and state directories).  On success stores the
 * last directory's owner in *owner (if not NULL).  On failure writes a
 * sentence naming the level and the reason to why (cap bytes, if not NULL).
 * Errors: RB_EOWNER (a level fails the rule), RB_ENOENT (a level is
 * missing), RB_EACCES, RB_EINVAL (not a directory, bad flags, a relative
 * path leaving "."), RB_ERANGE (too long or deep, too many symlinks),
 * RB_ENOMEM, RB_ESYS.  Cost: two system calls per level. */
RB_EXPORT RB_WUR int rb_trusted_dir(const char *path, unsigned flags, mode_t create_mode,
                                    uid_t also, uid_t *owner, char *why, size_t cap);

/* Any process.  The uid ringbloomd of `instance` runs as, for
 * rb_segment_attach_owned: the owner of the directory holding its socket,
 * after rb_trusted_dir has judged that directory (trusting root, this
 * process's euid and `also`, with RB_DIR_VOUCHED: also the owner root gave
 * a directory in one only root can write, such as /run/ringbloom).  The
 * socket is socket_path, or else looked up as rb_conn_open looks: the
 * instance's default (rb_default_paths), then, where that directory or
 * the socket in it does not exist, its system one (rb_system_paths); a
 * default directory that fails the rule is reported, not passed over.  A
 * daemon listens only in a directory of its own uid or root that nobody
 * else can write (it refuses to start otherwise), or in one root made for
 * it, so the owner is the daemon's uid, whether the daemon is running or
 * not, and asking costs no connection.  Errors: as rb_trusted_dir;
 * RB_EINVAL for a bad instance name. */
RB_EXPORT RB_WUR int rb_daemon_uid(const char *instance, const char *socket_path, uid_t also,
                                   uid_t *uid, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* RINGBLOOM_PATHS_H */
