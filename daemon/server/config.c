/*
 * config.c - the settings of ringbloomd: one table driving the file parser,
 * command-line overrides, CONFIG GET and what a reload may change, so they
 * never disagree; and the one path that builds a configuration from its
 * sources (defaults, file, overrides), at start and on SIGHUP alike.
 *
 * File syntax (redis.conf style, config_syntax.c): one "key value" per
 * line, '#' starts a comment line, values may be double-quoted with
 * redis.conf's escapes; sizes take k/kb/m/mb/g/gb suffixes (1k = 1024).
 * Unknown keys and bad values are errors naming the file and line: a typo
 * never silently falls back to a default.  A value, from the file, the
 * command line or CONFIG SET alike, is one line of text (value_is_text).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "config_syntax.h"
#include "config_table.h"
#include "rbd_config.h"

static int parse_u64(const char *v, uint64_t *out, int sizes)
{
    char *end;
    unsigned long long n;
    uint64_t mult = 1;

    if (!isdigit((unsigned char)v[0]))
        return -1;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (errno != 0)
        return -1;
    if (sizes && *end != '\0') {
        if (strcasecmp(end, "k") == 0 || strcasecmp(end, "kb") == 0)
            mult = 1ULL << 10;
        else if (strcasecmp(end, "m") == 0 || strcasecmp(end, "mb") == 0)
            mult = 1ULL << 20;
        else if (strcasecmp(end, "g") == 0 || strcasecmp(end, "gb") == 0)
            mult = 1ULL << 30;
        else
            return -1;
    } else if (*end != '\0') {
        return -1;
    }
    if (n > UINT64_MAX / mult)
        return -1;
    *out = n * mult;
    return 0;
}

static const setting_t *find(const char *key)
{
    long row = rbd_setting_row(key, strlen(key));

    return row < 0 ? NULL : &rbd_settings[row];
}

/* A value is one line of text: no control character but the tab (a
 * newline or CR would break the file CONFIG REWRITE writes, the log, INFO
 * and syslog into lines of the value's choosing).  0, or -1 with err. */
static int value_is_text(const char *key, const char *value, char *err, size_t errlen)
{
    for (size_t i = 0; value[i] != '\0'; i++) {
        unsigned char ch = (unsigned char)value[i];
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            snprintf(err, errlen, "%s: the value holds a control character (byte 0x%02x at "
                     "offset %zu); a value is one line of printable text", key, ch, i);
            return -1;
        }
    }
    return 0;
}

/* The set_* helpers name the setting as the caller typed it (key). */
static int set_str(const setting_t *s, const char *key, char *field, const char *value,
                   char *err, size_t errlen)
{
    rb_paths_t p;

    if ((strlen(value) == 0 && s->min == 0) || strlen(value) >= s->size) {
        snprintf(err, errlen, "%s: value empty or longer than %zu bytes", key, s->size - 1);
        return -1;
    }
    strcpy(field, value);
    if (strcmp(s->name, "instance") == 0 && rb_default_paths(value, &p) != RB_OK) {
        snprintf(err, errlen, "instance: '%s' is not a valid name (1-64 of A-Z a-z 0-9 _ . -)",
                 value);
        return -1;
    }
    return 0;
}

static int set_mode(const setting_t *s, const char *key, mode_t *field, const char *value,
                    char *err, size_t errlen)
{
    if (strspn(value, "01234567") != strlen(value) || strlen(value) == 0 ||
        strtoul(value, NULL, 8) > 0777) {
        snprintf(err, errlen, "%s: '%s' is not an octal mode like 0660", key, value);
        return -1;
    }
    if (s->max != 0 && (strtoul(value, NULL, 8) & ~s->max) != 0) {
        snprintf(err, errlen, "%s: '%s' lets group or others write; readers map the "
                 "segment read-only and refuse one that others could change "
                 "(use e.g. 0640 or 0644)", key, value);
        return -1;
    }
    *field = (mode_t)strtoul(value, NULL, 8);
    return 0;
}

static int set_number(const setting_t *s, const char *key, void *field, const char *value,
                      char *err, size_t errlen)
{
    uint64_t n;

    if (s->kind == T_I64) {   /* a negative number too (Redis's -1: off) */
        int neg = value[0] == '-';
        if (parse_u64(value + neg, &n, 0) != 0 || n > INT64_MAX ||
            (neg ? -(int64_t)n < (int64_t)s->min : (int64_t)n > (int64_t)s->max)) {
            snprintf(err, errlen, "%s: '%s' is not a number in [%lld, %lld]", key, value,
                     (long long)(int64_t)s->min, (long long)(int64_t)s->max);
            return -1;
        }
        *(int64_t *)field = neg ? -(int64_t)n : (int64_t)n;
        return 0;
    }
    if (parse_u64(value, &n, s->kind == T_SIZE) != 0 || n < s->min || n > s->max) {
        snprintf(err, errlen, "%s: '%s' is not a number in [%llu, %llu]", key, value,
                 (unsigned long long)s->min, (unsigned long long)s->max);
        return -1;
    }
    if (s->kind == T_SIZE)
        *(uint64_t *)field = n;
    else
        *(uint32_t *)field = (uint32_t)n;
    return 0;
}

/* A user (users != 0) or group name, or a numeric id (all digits; it need
 * not have a name): *id, or -1 with the reason in err. */
static int parse_id(const char *key, int users, const char *value, uint32_t *id, char *err,
                    size_t errlen)
{
    char buf[4096];
    struct passwd pw, *pwfound = NULL;
    struct group gr, *grfound = NULL;
    uint64_t n;
    int e;

    if (parse_u64(value, &n, 0) == 0) {
        if (n >= (uint32_t)-1) {
            snprintf(err, errlen, "%s: '%s' is not a %s", key, value, users ? "uid" : "gid");
            return -1;
        }
        *id = (uint32_t)n;
        return 0;
    }
    if (users) {
        e = getpwnam_r(value, &pw, buf, sizeof(buf), &pwfound);
        if (pwfound != NULL)
            *id = pwfound->pw_uid;
    } else {
        e = getgrnam_r(value, &gr, buf, sizeof(buf), &grfound);
        if (grfound != NULL)
            *id = grfound->gr_gid;
    }
    if (pwfound == NULL && grfound == NULL) {
        snprintf(err, errlen, "%s: no %s '%s'%s%s", key, users ? "user" : "group", value,
                 e != 0 ? ": " : "", e != 0 ? strerror(e) : "");
        return -1;
    }
    return 0;
}

static int set_group(const char *key, gid_t *field, const char *value, char *err, size_t errlen)
{
    uint32_t id;

    if (parse_id(key, 0, value, &id, err, errlen) != 0)
        return -1;
    *field = (gid_t)id;
    return 0;
}

/* A list of users or groups (names or numeric ids) separated by spaces or
 * commas, or "none". */
static int set_ids(const char *key, int users, rbd_ids_t *ids, const char *value, char *err,
                   size_t errlen)
{
    char buf[1024], *tok, *save;
    size_t count = 0;

    if (strlen(value) >= sizeof(buf)) {
        snprintf(err, errlen, "%s: the list is longer than %zu bytes", key, sizeof(buf) - 1);
        return -1;
    }
    strcpy(buf, value);
    for (tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
        if (strcmp(tok, "none") == 0)
            continue;
        if (count == RBD_MAX_IDS) {
            snprintf(err, errlen, "%s: more than %d ids", key, RBD_MAX_IDS);
            return -1;
        }
        if (parse_id(key, users, tok, &ids->id[count], err, errlen) != 0)
            return -1;
        count++;
    }
    ids->n = count;
    return 0;
}

/* T_FSYNC, T_BOOL, T_LEVEL, T_LAYOUT, T_SOURCE, T_FSOURCE, T_FACILITY: one of the
 * words of the kind. */
static int set_word(const setting_t *s, const char *key, int *field, const char *value,
                    char *err, size_t errlen)
{
    static const char *const expected[] = {
        [T_FSYNC] = "always, everysec or no", [T_BOOL] = "yes or no",
        [T_LEVEL] = "debug, verbose, info, notice or warning",
        [T_LAYOUT] = "blocked, standard or redisbloom", [T_SOURCE] = "local or etcd",
        [T_FSOURCE] = "local or nats",
        [T_FACILITY] = "local0 .. local7, daemon or user",
    };

    for (size_t i = 0; i < rbd_nwords; i++) {
        if (rbd_words[i].kind == s->kind && strcasecmp(value, rbd_words[i].word) == 0) {
            *field = rbd_words[i].value;
            return 0;
        }
    }
    snprintf(err, errlen, "%s: '%s' is not %s", key, value, expected[s->kind]);
    return -1;
}

int rbd_config_set(rbd_config_t *c, const char *key, const char *value, char *err, size_t errlen)
{
    const setting_t *s = find(key);
    void *field;

    if (s == NULL) {
        snprintf(err, errlen, "unknown setting '%s'", key);
        return -1;
    }
    if (value_is_text(key, value, err, errlen) != 0)
        return -1;
    field = (char *)c + s->off;
    switch (s->kind) {
    case T_STR:
        return set_str(s, key, field, value, err, errlen);
    case T_MODE:
        return set_mode(s, key, field, value, err, errlen);
    case T_SIZE:
    case T_U32:
    case T_I64:
        return set_number(s, key, field, value, err, errlen);
    case T_FSYNC:
    case T_BOOL:
    case T_LEVEL:
    case T_LAYOUT:
    case T_SOURCE:
    case T_FSOURCE:
    case T_FACILITY:
        return set_word(s, key, field, value, err, errlen);
    case T_RINGMODE:
        if (rb_ring_mode_parse(value, strlen(value), field) != RB_OK) {
            snprintf(err, errlen, "ring-mode: '%s' is not a ring mode (xxh3, ketama, nginx, seed, "
                     "maglev or slots)", value);
            return -1;
        }
        return 0;
    case T_GROUP:
        return set_group(key, field, value, err, errlen);
    case T_UIDS:
    case T_GIDS:
        return set_ids(key, s->kind == T_UIDS, field, value, err, errlen);
    case T_ACL_USER:
    case T_ACL_GROUP:
        return rbd_acl_parse(field, s->kind == T_ACL_GROUP, key, value, err, errlen);
    }
    return -1;
}

int rbd_config_check(const rbd_config_t *c, char *err, size_t errlen)
{
    if (c->output_hard_limit < c->output_soft_limit) {
        snprintf(err, errlen, "client-output-hard-limit (%llu) is below "
                 "client-output-soft-limit (%llu)", (unsigned long long)c->output_hard_limit,
                 (unsigned long long)c->output_soft_limit);
        return -1;
    }
    /* A request of max-request-bytes may take twice that in its input
     * buffer (it doubles as it grows): a client sending the largest
     * allowed request must fit, or it would always be evicted. */
    if (c->max_client_memory / 2 < c->max_request_bytes) {
        snprintf(err, errlen, "max-client-memory (%llu) must be at least twice "
                 "max-request-bytes (%llu)", (unsigned long long)c->max_client_memory,
                 (unsigned long long)c->max_request_bytes);
        return -1;
    }
    return 0;
}

int rbd_config_load(rbd_config_t *c, const char *path, char *err, size_t errlen)
{
    rbd_conf_reader_t r;
    char msg[512], *key, *value;
    int rc;

    if (rbd_conf_open(&r, path, err, errlen) != 0)
        return -1;
    while ((rc = rbd_conf_next(&r, &key, &value, err, errlen)) > 0) {
        if (rbd_config_set(c, key, value, msg, sizeof(msg)) != 0) {
            snprintf(err, errlen, "%s:%u: %s", path, r.lineno, msg);
            rc = -1;
            break;
        }
    }
    rbd_conf_close(&r);
    return rc;
}

static void render_ids(char *out, size_t cap, const rbd_ids_t *ids)
{
    size_t w = 0;

    out[0] = '\0';
    for (size_t i = 0; i < ids->n && w < cap; i++)
        w += (size_t)snprintf(out + w, cap - w, "%s%u", i ? " " : "", ids->id[i]);
    if (ids->n == 0)
        snprintf(out, cap, "none");
}

/* Setting s of c as CONFIG GET shows it. */
static void render(const setting_t *s, const rbd_config_t *c, char *v, size_t cap)
{
    const void *field = (const char *)c + s->off;

    switch (s->kind) {
    case T_STR:
        snprintf(v, cap, "%s", (const char *)field);
        break;
    case T_MODE:
        snprintf(v, cap, "0%o", (unsigned)*(const mode_t *)field);
        break;
    case T_SIZE:
        snprintf(v, cap, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case T_U32:
        snprintf(v, cap, "%u", *(const uint32_t *)field);
        break;
    case T_I64:
        snprintf(v, cap, "%lld", (long long)*(const int64_t *)field);
        break;
    case T_FSYNC:
    case T_BOOL:
    case T_LEVEL:
    case T_LAYOUT:
    case T_SOURCE:
    case T_FSOURCE:
    case T_FACILITY:
        for (size_t i = 0; i < rbd_nwords; i++)
            if (rbd_words[i].kind == s->kind && rbd_words[i].value == *(const int *)field) {
                snprintf(v, cap, "%s", rbd_words[i].word);
                break;
            }
        break;
    case T_RINGMODE:
        snprintf(v, cap, "%s", rb_ring_mode_name(*(const rb_ring_mode_t *)field));
        break;
    case T_UIDS:
    case T_GIDS:
        render_ids(v, cap, field);
        break;
    case T_GROUP:
        rbd_acl_group_name(*(const gid_t *)field, v, cap);
        break;
    case T_ACL_USER:
    case T_ACL_GROUP:
        rbd_acl_render(field, s->kind == T_ACL_GROUP, v, cap);
        break;
    }
}

void rbd_config_each(const rbd_config_t *c, void (*fn)(const char *, const char *, void *),
                     void *arg)
{
    char v[4200];

    for (size_t i = 0; i < rbd_nsettings; i++) {
        render(&rbd_settings[i], c, v, sizeof(v));
        fn(rbd_settings[i].name, v, arg);
    }
}

/* 1 if this process may give a file it owns group gid: it is root, or
 * gid is its effective or a supplementary group (chown(2)). */
static int may_chgrp(gid_t gid)
{
    gid_t groups[NGROUPS_MAX + 1];
    int n;

    if (geteuid() == 0 || getegid() == gid)
        return 1;
    n = getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return 1;
    return 0;
}

int rbd_config_check_groups(const rbd_config_t *c, char *err, size_t errlen)
{
    const struct {
        const char *name, *what;
        gid_t gid;
    } g[] = {
        { "unixsocketgroup", "socket", c->socket_group },
        { "segment-group", "segment", c->segment_group },
    };
    char name[256];

    for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) {
        if (may_chgrp(g[i].gid))
            continue;
        rbd_acl_group_name(g[i].gid, name, sizeof(name));
        snprintf(err, errlen, "%s %s: ringbloomd runs as uid %u, which is neither root nor a "
                 "member of group %s (gid %u), so it cannot give its %s that group (add the "
                 "user to the group, or run it as that group)", g[i].name, name,
                 (unsigned)geteuid(), name, (unsigned)g[i].gid, g[i].what);
        return -1;
    }
    return 0;
}

int rbd_config_keep_restart_only(rbd_config_t *fresh, const rbd_config_t *running,
                                 const char **which)
{
    char a[4200], b[4200];
    int changed = 0;

    for (size_t i = 0; i < rbd_nsettings; i++) {
        const setting_t *s = &rbd_settings[i];
        if (s->reload)
            continue;
        render(s, running, a, sizeof(a));
        render(s, fresh, b, sizeof(b));
        if (strcmp(a, b) != 0 && !changed) {
            *which = s->name;
            changed = 1;
        }
        memcpy((char *)fresh + s->off, (const char *)running + s->off, s->size);
    }
    return changed;
}

int rbd_config_override(rbd_config_src_t *src, const char *key, const char *value)
{
    if (src->noverrides == RBD_MAX_OVERRIDES || strlen(key) >= sizeof(src->overrides[0].key) ||
        strlen(value) >= sizeof(src->overrides[0].value))
        return -1;
    strcpy(src->overrides[src->noverrides].key, key);
    strcpy(src->overrides[src->noverrides].value, value);
    src->noverrides++;
    return 0;
}

int rbd_config_absolute(const rbd_config_src_t *src, char *path, size_t cap, const char *what,
                        char *err, size_t errlen)
{
    const char *dir = strcmp(src->start_dir, "/") == 0 ? "" : src->start_dir;
    char buf[8192];
    int n;

    if (path[0] == '/')
        return value_is_text(what, path, err, errlen);   /* -c's, too */
    n = snprintf(buf, sizeof(buf), "%s/%s", dir, path);
    if (n < 0 || (size_t)n >= cap) {
        snprintf(err, errlen, "%s: %s made absolute (%s/%s) is too long", what, path,
                 src->start_dir, path);
        return -1;
    }
    if (value_is_text(what, buf, err, errlen) != 0)   /* the start directory's name */
        return -1;
    memcpy(path, buf, (size_t)n + 1);
    return 0;
}

int rbd_config_paths(const rbd_config_src_t *src, rbd_config_t *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < rbd_nsettings; i++) {
        const setting_t *s = &rbd_settings[i];
        char *field = (char *)cfg + s->off;
        if ((s->flags & RBD_SET_PATH) && field[0] != '\0' &&
            rbd_config_absolute(src, field, s->size, s->name, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* The instance the sources name: the file's, or the last -i / -o
 * instance= (defaults first, so the file is read once on its own). */
static int settle_instance(const rbd_config_src_t *src, rbd_config_t *cfg, char *instance,
                           size_t cap, char *err, size_t errlen)
{
    const char *file = src->file[0] != '\0' ? src->file : NULL;

    if (rbd_config_defaults(cfg, "default") != RB_OK) {
        snprintf(err, errlen, "cannot derive default paths");
        return -1;
    }
    if (file != NULL && rbd_config_load(cfg, file, err, errlen) != 0)
        return -1;
    snprintf(instance, cap, "%s", cfg->instance);
    for (int i = 0; i < src->noverrides; i++)
        if (strcmp(src->overrides[i].key, "instance") == 0)
            snprintf(instance, cap, "%s", src->overrides[i].value);
    return 0;
}

int rbd_config_build(const rbd_config_src_t *src, rbd_config_t *cfg, char *err, size_t errlen)
{
    const char *file = src->file[0] != '\0' ? src->file : NULL;
    char instance[RB_INSTANCE_MAX + 1], msg[512];

    if (settle_instance(src, cfg, instance, sizeof(instance), err, errlen) != 0)
        return -1;
    if (rbd_config_defaults(cfg, instance) != RB_OK) {
        snprintf(err, errlen, "instance '%s' is not a valid name (1-64 of A-Z a-z 0-9 _ . -)",
                 instance);
        return -1;
    }
    if (file != NULL && rbd_config_load(cfg, file, err, errlen) != 0)
        return -1;
    snprintf(cfg->instance, sizeof(cfg->instance), "%s", instance);
    for (int i = 0; i < src->noverrides; i++) {
        if (rbd_config_set(cfg, src->overrides[i].key, src->overrides[i].value, msg,
                           sizeof(msg)) != 0) {
            snprintf(err, errlen, "%s", msg);
            return -1;
        }
    }
    if (rbd_config_paths(src, cfg, err, errlen) != 0)
        return -1;
    return rbd_config_check(cfg, err, errlen);
}
