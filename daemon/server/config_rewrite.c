/*
 * config_rewrite.c - CONFIG REWRITE: the configuration file brought to
 * the settings in force, as Redis rewrites redis.conf, changing only what
 * changed.  A setting whose value in force is what the file (with the
 * command line and the defaults) says keeps its lines as the operator
 * wrote them (its name, "1gb", its quotes: issue 42, item 10); one that
 * changed (CONFIG SET) gets its new value on its first line, under the
 * name that line spells it by (an alias too), and its later lines go (the
 * first one decides nothing when the last one wins: the file had them
 * for the same setting); one the file does not name but that changed is
 * appended under one comment.  A size is written in the largest unit that
 * holds it exactly (2gb, 64mb, 4096).  Every other line stays where it is
 * (comments, blank lines, unknown text).  A file that no longer parses
 * counts every setting as changed.  Left as they are: the access rules
 * (each acl-user / acl-group line adds rules, so they are the file's
 * alone) and what the command line set (-i, -s, -d, -o: a unit may run
 * many instances from one file, whose instance and paths must not end up
 * in it).  A value is written so that the parser reads it back the same
 * (config_syntax.c), so the new file means the settings in force.  The
 * new text goes to a file of a random name beside the old one (mkstemp),
 * given the old one's owner and mode, made durable and renamed over it: a
 * crash leaves the old file or the new one.
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

/* Setting row's line: "name value", a size (its value in bytes) in the
 * largest unit that holds it exactly, as Redis writes memory settings. */
static void put_setting(FILE *out, const char *name, size_t row, const char *value)
{
    static const struct { uint64_t unit; const char *suffix; } units[] = {
        { 1ull << 30, "gb" }, { 1ull << 20, "mb" }, { 1ull << 10, "kb" },
    };
    char *end, human[32];
    unsigned long long n;

    if (rbd_settings[row].kind == T_SIZE && value[0] != '\0') {
        n = strtoull(value, &end, 10);
        for (size_t i = 0; *end == '\0' && n > 0 && i < sizeof(units) / sizeof(units[0]); i++)
            if (n % units[i].unit == 0) {
                snprintf(human, sizeof(human), "%llu%s", n / units[i].unit, units[i].suffix);
                rbd_conf_put(out, name, human);
                return;
            }
    }
    rbd_conf_put(out, name, value);
}

/* The new text: the file's lines (from r), those of each setting whose
 * value in force (now) is what the file says (was) as they are (unless
 * all), the others' first line with the value in force, then the settings
 * the file lacks whose value differs from was.  0, or -1 with err (a line
 * the parser would refuse). */
static int write_text(rbd_conf_reader_t *r, FILE *out, const rendered_t *now,
                      const rendered_t *was, int all, const rbd_config_src_t *src, char *err,
                      size_t errlen)
{
    unsigned char seen[RBD_REWRITE_MAX] = { 0 };
    int rc, appended = 0;

    while ((rc = rbd_conf_read(r, err, errlen)) > 0) {
        size_t klen;
        const char *k = rbd_conf_key(r->line, &klen);
        long row = k == NULL ? -1 : rbd_setting_row(k, klen);
        char name[64];
        if (row < 0 || left_alone((size_t)row, src) || (size_t)row >= now->n ||
            (!all && strcmp(now->value[row], was->value[row]) == 0)) {
            fwrite(r->line, 1, r->len, out);   /* as the operator wrote it */
            if (r->line[r->len - 1] != '\n')
                fputc('\n', out);
            continue;
        }
        /* the name as this line spells it (a known name: under 64 bytes) */
        snprintf(name, sizeof(name), "%.*s", (int)klen, k);
        if (!seen[row])
            put_setting(out, name, (size_t)row, now->value[row]);
        seen[row] = 1;
    }
    for (size_t i = 0; rc == 0 && i < now->n; i++) {
        if (seen[i] || left_alone(i, src) || strcmp(now->value[i], was->value[i]) == 0)
            continue;
        if (!appended++)
            fputs("\n# Generated by CONFIG REWRITE\n", out);
        put_setting(out, now->name[i], i, now->value[i]);
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

/* What the file, the command line and the defaults say now (the start-up
 * path, rbd_config_build), rendered into was: 0.  If the file no longer
 * parses, the defaults, and -1: every line of a setting is then rewritten
 * with its value in force, and what differs from the default appended. */
static int file_says(const rbd_config_src_t *src, const char *instance, rendered_t *was)
{
    static rbd_config_t d;
    char why[512];
    int rc = 0;

    was->n = 0;
    if (rbd_config_build(src, &d, why, sizeof(why)) != 0) {
        rc = -1;
        if (rbd_config_defaults(&d, instance) != RB_OK)
            return -1;   /* an instance the running daemon has: not reached */
    }
    rbd_config_each(&d, collect, was);
    return rc;
}

int rbd_config_rewrite(const rbd_config_t *c, const rbd_config_src_t *src, char *err,
                       size_t errlen)
{
    static rendered_t now, was;
    char tmp[8300];
    rbd_conf_reader_t r;
    int fd, ok, all;
    FILE *out = NULL;

    if (src == NULL || src->file[0] == '\0') {
        snprintf(err, errlen, "The server is running without a config file");
        return -1;
    }
    if (may_replace(src->file, err, errlen) != 0 || rbd_conf_open(&r, src->file, err, errlen) != 0)
        return -1;
    now.n = 0;
    rbd_config_each(c, collect, &now);
    all = file_says(src, c->instance, &was) != 0;
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
    ok = write_text(&r, out, &now, &was, all, src, err, errlen) == 0;
    rbd_conf_close(&r);
    return install(out, ok, tmp, src->file, err, errlen);
}
