/*
 * config_rewrite.c - CONFIG REWRITE: the configuration file brought to
 * the settings in force, as Redis rewrites redis.conf.  Every line the
 * operator wrote stays where it is (comments, blank lines, unknown text);
 * a setting's first line gets its current value and its later lines go
 * (the first one decides nothing when the last one wins: the file had
 * them for the same setting); a setting the file does not name but whose
 * value differs from the default is appended under one comment.  Left as
 * they are: the access rules (each acl-user / acl-group line adds rules,
 * so they are the file's alone) and what the command line set (-i, -s,
 * -d, -o: a unit may run many instances from one file, whose instance
 * and paths must not end up in it).  A value is written so that the
 * parser reads it back the same (config_syntax.c), so the new file means
 * the settings in force.  The new text goes to a file of a random name
 * beside the old one (mkstemp), given the old one's owner and mode, made
 * durable and renamed over it: a crash leaves the old file or the new one.
 * Refused: a file that is a symbolic link, in a directory another user can
 * write (who could plant the temporary file or swap the old one).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_syntax.h"
#include "config_table.h"
#include "rbd_config.h"

typedef struct rendered {
    const char *name[RBD_REWRITE_MAX];
    char value[RBD_REWRITE_MAX][4200];
    size_t n;
} rendered_t;

static void collect(const char *name, const char *value, void *arg)
{
    rendered_t *r = arg;

    if (r->n < RBD_REWRITE_MAX) {
        r->name[r->n] = name;
        snprintf(r->value[r->n], sizeof(r->value[0]), "%s", value);
        r->n++;
    }
}

/* What the rewrite leaves to the file: the access rules, and what the
 * command line set. */
static int left_alone(size_t row, const rbd_config_src_t *src)
{
    const setting_t *s = &rbd_settings[row];

    if (s->kind == T_ACL_USER || s->kind == T_ACL_GROUP)
        return 1;
    for (int i = 0; src != NULL && i < src->noverrides; i++) {
        long r = rbd_setting_row(src->overrides[i].key, strlen(src->overrides[i].key));
        if (r == (long)row)
            return 1;
    }
    return 0;
}

/* Whether file may be replaced by a rename: not a symbolic link (the rename
 * would replace the link, not what it names), in a directory that only
 * root and this process's user can change (lib/shm/paths.c's rule, as
 * for the state directory: another user could plant the temporary name,
 * or swap the file between the checks).  0, or -1 with err. */
static int may_replace(const char *file, char *err, size_t errlen)
{
    char why[1024], target[1024];
    struct stat st;
    ssize_t n;

    if (lstat(file, &st) != 0) {
        snprintf(err, errlen, "%s: %s", file, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        n = readlink(file, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
        snprintf(err, errlen, "%s is a symbolic link (to %s): a rewrite replaces the file, "
                 "which would replace the link; start ringbloomd with -c naming the file "
                 "itself", file, target);
        return -1;
    }
    if (rb_trusted_dir(file, RB_DIR_PARENT, 0, (uid_t)-1, NULL, why, sizeof(why)) != RB_OK) {
        snprintf(err, errlen, "%s; CONFIG REWRITE replaces files only where no other user "
                 "can", why);
        return -1;
    }
    return 0;
}

/* A new file beside `file`, its name random (mkstemp: made, never found;
 * nothing planted at a name can be followed or reused), given the owner
 * and mode of the old one (st).  Its descriptor and its name in tmp (cap
 * bytes), or -1 with err (nothing left behind). */
static int make_tmp(const char *file, const struct stat *st, char *tmp, size_t cap, char *err,
                    size_t errlen)
{
    int fd, n = snprintf(tmp, cap, "%s.rewrite.XXXXXX", file);

    if (n < 0 || (size_t)n >= cap) {
        snprintf(err, errlen, "%s: path too long", file);
        return -1;
    }
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "cannot create a file beside %s: %s", file, strerror(errno));
        return -1;
    }
    if ((st->st_uid != geteuid() || st->st_gid != getegid()) &&
        fchown(fd, st->st_uid, st->st_gid) != 0) {
        snprintf(err, errlen, "%s belongs to uid %u gid %u, which uid %u cannot give the new "
                 "file (%s): refusing to change the file's owner", file, (unsigned)st->st_uid,
                 (unsigned)st->st_gid, (unsigned)geteuid(), strerror(errno));
    } else if (fchmod(fd, st->st_mode & 07777) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
    } else {
        return fd;
    }
    close(fd);
    unlink(tmp);
    return -1;
}

/* The new text: the file's lines (from r) with the settings in force
 * (now) in place, then those it lacks that differ from the defaults
 * (dflt).  0, or -1 with err (a line the parser would refuse). */
static int write_text(rbd_conf_reader_t *r, FILE *out, const rendered_t *now,
                      const rendered_t *dflt, const rbd_config_src_t *src, char *err,
                      size_t errlen)
{
    unsigned char seen[RBD_REWRITE_MAX] = { 0 };
    int rc, appended = 0;

    while ((rc = rbd_conf_read(r, err, errlen)) > 0) {
        size_t klen;
        const char *k = rbd_conf_key(r->line, &klen);
        long row = k == NULL ? -1 : rbd_setting_row(k, klen);
        if (row < 0 || left_alone((size_t)row, src) || (size_t)row >= now->n) {
            fwrite(r->line, 1, r->len, out);   /* as the operator wrote it */
            if (r->line[r->len - 1] != '\n')
                fputc('\n', out);
            continue;
        }
        if (!seen[row])
            rbd_conf_put(out, now->name[row], now->value[row]);
        seen[row] = 1;
    }
    for (size_t i = 0; rc == 0 && i < now->n; i++) {
        if (seen[i] || left_alone(i, src) || strcmp(now->value[i], dflt->value[i]) == 0)
            continue;
        if (!appended++)
            fputs("\n# Generated by CONFIG REWRITE\n", out);
        rbd_conf_put(out, now->name[i], now->value[i]);
    }
    return rc;
}

/* The directory holding file made durable (the rename in it). */
static void sync_dir(const char *file)
{
    char dir[8192];
    const char *slash = strrchr(file, '/');
    int fd;

    snprintf(dir, sizeof(dir), "%.*s", slash == NULL ? 1 : slash == file ? 1
             : (int)(slash - file), slash == NULL ? "." : file);
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* The new file (out, at tmp; ok: its text is whole) made durable and
 * renamed over file; else removed.  0, or -1 with err. */
static int install(FILE *out, int ok, const char *tmp, const char *file, char *err,
                   size_t errlen)
{
    const char *failed = NULL;

    if (ok && (fflush(out) != 0 || ferror(out) || fsync(fileno(out)) != 0))
        failed = tmp;
    if (fclose(out) != 0 && ok && failed == NULL)
        failed = tmp;
    if (ok && failed == NULL && rename(tmp, file) != 0)
        failed = file;
    if (failed != NULL)
        snprintf(err, errlen, "%s: %s", failed, strerror(errno));
    if (!ok || failed != NULL) {
        unlink(tmp);
        return -1;
    }
    sync_dir(file);
    return 0;
}

int rbd_config_rewrite(const rbd_config_t *c, const rbd_config_src_t *src, char *err,
                       size_t errlen)
{
    static rendered_t now, dflt;
    char tmp[8300];
    rbd_config_t d;
    rbd_conf_reader_t r;
    int fd, ok;
    FILE *out = NULL;

    if (src == NULL || src->file[0] == '\0') {
        snprintf(err, errlen, "The server is running without a config file");
        return -1;
    }
    if (may_replace(src->file, err, errlen) != 0 || rbd_conf_open(&r, src->file, err, errlen) != 0)
        return -1;
    now.n = dflt.n = 0;
    rbd_config_each(c, collect, &now);
    if (rbd_config_defaults(&d, c->instance) != RB_OK) {
        rbd_conf_close(&r);
        snprintf(err, errlen, "cannot compute the defaults");
        return -1;
    }
    rbd_config_each(&d, collect, &dflt);
    if ((fd = make_tmp(src->file, &r.st, tmp, sizeof(tmp), err, errlen)) < 0 ||
        (out = fdopen(fd, "w")) == NULL) {
        if (fd >= 0) {
            snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
        }
        rbd_conf_close(&r);
        return -1;
    }
    ok = write_text(&r, out, &now, &dflt, src, err, errlen) == 0;
    rbd_conf_close(&r);
    return install(out, ok, tmp, src->file, err, errlen);
}
