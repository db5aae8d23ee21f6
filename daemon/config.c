/*
 * config.c - the settings of ringbloomd, one table driving the file parser,
 * command-line overrides and CONFIG GET, so the three never disagree.
 *
 * File syntax (redis.conf style): one "key value" per line, '#' starts a
 * comment line, values may be double-quoted; sizes take k/kb/m/mb/g/gb
 * suffixes (1k = 1024).  Unknown keys and bad values are errors naming the
 * file and line: a typo never silently falls back to a default.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "rbd_config.h"

typedef enum { T_STR, T_MODE, T_SIZE, T_U32, T_FSYNC, T_BOOL, T_LEVEL, T_RINGMODE,
               T_UIDS, T_GIDS } kind_t;

typedef struct setting {
    const char *name;
    kind_t kind;
    size_t off;
    size_t cap;          /* T_STR: buffer size */
    uint64_t min, max;   /* T_SIZE / T_U32 */
    int reload;          /* may change on SIGHUP */
} setting_t;

#define O(f) offsetof(rbd_config_t, f)
static const setting_t settings[] = {
    { "instance", T_STR, O(instance), sizeof(((rbd_config_t *)0)->instance), 0, 0, 0 },
    { "socket", T_STR, O(socket), sizeof(((rbd_config_t *)0)->socket), 0, 0, 0 },
    { "pidfile", T_STR, O(pidfile), sizeof(((rbd_config_t *)0)->pidfile), 0, 0, 0 },
    { "dir", T_STR, O(dir), sizeof(((rbd_config_t *)0)->dir), 0, 0, 0 },
    { "socket-mode", T_MODE, O(socket_mode), 0, 0, 0, 0 },
    /* T_MODE: max = the bits allowed (0: any).  Readers only read; an
     * object others could write is refused by them (name squatting). */
    { "segment-mode", T_MODE, O(segment_mode), 0, 0, 0755, 0 },
    { "max-memory", T_SIZE, O(max_memory), 0, 1u << 20, RB_MAX_MAX_SIZE, 0 },
    { "max-filters", T_U32, O(max_filters), 0, 1, RB_MAX_FILTERS, 0 },
    { "max-nodes", T_U32, O(max_nodes), 0, 1, RB_RING_MAX_NODES, 1 },
    { "max-clients", T_U32, O(max_clients), 0, 1, 1000000, 1 },
    { "reserved-writer-clients", T_U32, O(reserved_writer_clients), 0, 0, 999999, 1 },
    { "max-key-bytes", T_SIZE, O(max_key_bytes), 0, 1, 512u << 20, 1 },
    { "max-request-bytes", T_SIZE, O(max_request_bytes), 0, 1024, 1u << 30, 1 },
    { "client-output-soft-limit", T_SIZE, O(output_soft_limit), 0, 64u << 10, 1ULL << 40, 1 },
    { "client-output-hard-limit", T_SIZE, O(output_hard_limit), 0, 64u << 10, 1ULL << 40, 1 },
    { "max-client-memory", T_SIZE, O(max_client_memory), 0, 1u << 20, 1ULL << 40, 1 },
    { "timeout", T_U32, O(timeout), 0, 0, 100000000, 1 },
    { "appendfsync", T_FSYNC, O(appendfsync), 0, 0, 0, 1 },
    { "save-seconds", T_U32, O(save_seconds), 0, 0, 100000000, 1 },
    { "save-log-bytes", T_SIZE, O(save_log_bytes), 0, 4096, UINT64_MAX, 1 },
    { "ring-mode", T_RINGMODE, O(ring_mode), 0, 0, 0, 0 },
    { "ring-replicas", T_U32, O(ring_replicas), 0, 1, RB_RING_MAX_REPLICAS, 0 },
    { "allow-write-uid", T_UIDS, O(write_uids), 0, 0, 0, 1 },
    { "allow-write-gid", T_GIDS, O(write_gids), 0, 0, 0, 1 },
    { "loglevel", T_LEVEL, O(loglevel), 0, 0, 0, 1 },
    { "keep-segment", T_BOOL, O(keep_segment), 0, 0, 0, 1 },
    { "load-truncated", T_BOOL, O(load_truncated), 0, 0, 0, 1 },
};
#define NSETTINGS (sizeof(settings) / sizeof(settings[0]))

int rbd_config_defaults(rbd_config_t *c, const char *instance)
{
    rb_paths_t p;
    int rc;

    memset(c, 0, sizeof(*c));
    if ((rc = rb_default_paths(instance, &p)) != RB_OK)
        return rc;
    snprintf(c->instance, sizeof(c->instance), "%s", instance);
    snprintf(c->socket, sizeof(c->socket), "%s", p.socket);
    snprintf(c->pidfile, sizeof(c->pidfile), "%s", p.pidfile);
    snprintf(c->dir, sizeof(c->dir), "%s", p.state_dir);
    c->socket_mode = 0660;
    c->segment_mode = 0640;
    c->max_memory = RB_DEFAULT_MAX_SIZE;
    c->max_filters = RB_DEFAULT_MAX_FILTERS;
    c->max_nodes = 4096;
    c->max_clients = 1024;
    c->reserved_writer_clients = 16;
    c->max_key_bytes = 64u << 10;
    c->max_request_bytes = 64u << 20;
    c->output_soft_limit = 8u << 20;
    c->output_hard_limit = 64u << 20;
    c->max_client_memory = 1u << 30;
    c->timeout = 0;
    c->appendfsync = FSYNC_EVERYSEC;
    c->save_seconds = 300;
    c->save_log_bytes = 64u << 20;
    c->ring_mode = RB_RING_XXH3;
    c->ring_replicas = RB_RING_DEFAULT_REPLICAS;
    c->write_uids[0] = getuid();
    c->n_write_uids = 1;
    if (getuid() != 0)
        c->write_uids[c->n_write_uids++] = 0;
    c->loglevel = LOG_INFO;
    c->keep_segment = 1;
    c->load_truncated = 1;
    return RB_OK;
}

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

static int parse_ids(const char *v, uint32_t *ids, size_t *n)
{
    char buf[1024], *tok, *save;
    size_t count = 0;

    if (strlen(v) >= sizeof(buf))
        return -1;
    strcpy(buf, v);
    for (tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
        uint64_t id;
        if (strcmp(tok, "none") == 0)
            continue;
        if (parse_u64(tok, &id, 0) != 0 || id > UINT32_MAX - 1 || count == RBD_MAX_IDS)
            return -1;
        ids[count++] = (uint32_t)id;
    }
    *n = count;
    return 0;
}

static const setting_t *find(const char *key)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strcasecmp(settings[i].name, key) == 0)
            return &settings[i];
    return NULL;
}

int rbd_config_set(rbd_config_t *c, const char *key, const char *value, char *err, size_t errlen)
{
    const setting_t *s = find(key);
    char *base = (char *)c;
    uint64_t n;

    if (s == NULL) {
        snprintf(err, errlen, "unknown setting '%s'", key);
        return -1;
    }
    switch (s->kind) {
    case T_STR:
        if (strlen(value) == 0 || strlen(value) >= s->cap) {
            snprintf(err, errlen, "%s: value empty or longer than %zu bytes", key, s->cap - 1);
            return -1;
        }
        strcpy(base + s->off, value);
        if (strcmp(s->name, "instance") == 0) {
            rb_paths_t p;
            if (rb_default_paths(value, &p) != RB_OK) {
                snprintf(err, errlen, "instance: '%s' is not a valid name "
                         "(1-64 of A-Z a-z 0-9 _ . -)", value);
                return -1;
            }
        }
        return 0;
    case T_MODE:
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
        *(mode_t *)(void *)(base + s->off) = (mode_t)strtoul(value, NULL, 8);
        return 0;
    case T_SIZE:
    case T_U32:
        if (parse_u64(value, &n, s->kind == T_SIZE) != 0 || n < s->min || n > s->max) {
            snprintf(err, errlen, "%s: '%s' is not a number in [%llu, %llu]", key, value,
                     (unsigned long long)s->min, (unsigned long long)s->max);
            return -1;
        }
        if (s->kind == T_SIZE)
            *(uint64_t *)(void *)(base + s->off) = n;
        else
            *(uint32_t *)(void *)(base + s->off) = (uint32_t)n;
        return 0;
    case T_FSYNC:
        if (strcasecmp(value, "always") == 0)
            c->appendfsync = FSYNC_ALWAYS;
        else if (strcasecmp(value, "everysec") == 0)
            c->appendfsync = FSYNC_EVERYSEC;
        else if (strcasecmp(value, "no") == 0)
            c->appendfsync = FSYNC_NO;
        else {
            snprintf(err, errlen, "appendfsync: '%s' is not always, everysec or no", value);
            return -1;
        }
        return 0;
    case T_BOOL:
        if (strcasecmp(value, "yes") == 0)
            *(int *)(void *)(base + s->off) = 1;
        else if (strcasecmp(value, "no") == 0)
            *(int *)(void *)(base + s->off) = 0;
        else {
            snprintf(err, errlen, "%s: '%s' is not yes or no", key, value);
            return -1;
        }
        return 0;
    case T_LEVEL:
        if (strcasecmp(value, "debug") == 0)
            c->loglevel = LOG_DEBUG;
        else if (strcasecmp(value, "info") == 0 || strcasecmp(value, "notice") == 0)
            c->loglevel = LOG_INFO;
        else if (strcasecmp(value, "warning") == 0)
            c->loglevel = LOG_WARNING;
        else {
            snprintf(err, errlen, "loglevel: '%s' is not debug, info or warning", value);
            return -1;
        }
        return 0;
    case T_RINGMODE:
        if (rb_ring_mode_parse(value, strlen(value), &c->ring_mode) != RB_OK) {
            snprintf(err, errlen, "ring-mode: '%s' is not a ring mode (xxh3, ketama, nginx or seed)", value);
            return -1;
        }
        return 0;
    case T_UIDS:
    case T_GIDS:
        if (parse_ids(value, s->kind == T_UIDS ? c->write_uids : c->write_gids,
                      s->kind == T_UIDS ? &c->n_write_uids : &c->n_write_gids) != 0) {
            snprintf(err, errlen, "%s: '%s' is not a list of up to %d numeric ids (or none)",
                     key, value, RBD_MAX_IDS);
            return -1;
        }
        return 0;
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

/* Splits a config line into key and value (value may be "quoted"). */
static int split_line(char *line, char **key, char **value)
{
    char *p = line, *end;

    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0' || *p == '#')
        return 0;
    *key = p;
    while (*p && !isspace((unsigned char)*p))
        p++;
    if (*p)
        *p++ = '\0';
    while (isspace((unsigned char)*p))
        p++;
    end = p + strlen(p);
    while (end > p && isspace((unsigned char)end[-1]))
        *--end = '\0';
    if (*p == '"' && end > p + 1 && end[-1] == '"') {
        end[-1] = '\0';
        p++;
    }
    *value = p;
    return 1;
}

int rbd_config_load(rbd_config_t *c, const char *path, char *err, size_t errlen)
{
    char line[8192], msg[512];
    unsigned lineno = 0;
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char *key, *value;
        lineno++;
        if (strlen(line) == sizeof(line) - 1 && line[sizeof(line) - 2] != '\n') {
            snprintf(err, errlen, "%s:%u: line too long", path, lineno);
            fclose(f);
            return -1;
        }
        if (!split_line(line, &key, &value))
            continue;
        if (rbd_config_set(c, key, value, msg, sizeof(msg)) != 0) {
            snprintf(err, errlen, "%s:%u: %s", path, lineno, msg);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

static void render_ids(char *out, size_t cap, const uint32_t *ids, size_t n)
{
    size_t w = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n && w < cap; i++)
        w += (size_t)snprintf(out + w, cap - w, "%s%u", i ? " " : "", ids[i]);
    if (n == 0)
        snprintf(out, cap, "none");
}

void rbd_config_each(const rbd_config_t *c, void (*fn)(const char *, const char *, void *),
                     void *arg)
{
    const char *base = (const char *)c;
    char v[4200];

    for (size_t i = 0; i < NSETTINGS; i++) {
        const setting_t *s = &settings[i];
        switch (s->kind) {
        case T_STR:
            snprintf(v, sizeof(v), "%s", base + s->off);
            break;
        case T_MODE:
            snprintf(v, sizeof(v), "0%o", (unsigned)*(const mode_t *)(const void *)(base + s->off));
            break;
        case T_SIZE:
            snprintf(v, sizeof(v), "%llu",
                     (unsigned long long)*(const uint64_t *)(const void *)(base + s->off));
            break;
        case T_U32:
            snprintf(v, sizeof(v), "%u", *(const uint32_t *)(const void *)(base + s->off));
            break;
        case T_FSYNC:
            snprintf(v, sizeof(v), "%s", c->appendfsync == FSYNC_ALWAYS ? "always"
                     : c->appendfsync == FSYNC_NO ? "no" : "everysec");
            break;
        case T_BOOL:
            snprintf(v, sizeof(v), "%s", *(const int *)(const void *)(base + s->off) ? "yes" : "no");
            break;
        case T_LEVEL:
            snprintf(v, sizeof(v), "%s", c->loglevel == LOG_DEBUG ? "debug"
                     : c->loglevel == LOG_WARNING ? "warning" : "info");
            break;
        case T_RINGMODE:
            snprintf(v, sizeof(v), "%s", rb_ring_mode_name((rb_ring_mode_t)c->ring_mode));
            break;
        case T_UIDS:
            render_ids(v, sizeof(v), c->write_uids, c->n_write_uids);
            break;
        case T_GIDS:
            render_ids(v, sizeof(v), c->write_gids, c->n_write_gids);
            break;
        }
        fn(s->name, v, arg);
    }
}

typedef struct diff_arg {
    const char *name;
    char value[4200];
    int found;
} diff_arg_t;

static void capture(const char *name, const char *value, void *arg)
{
    diff_arg_t *d = arg;
    if (strcmp(name, d->name) == 0) {
        snprintf(d->value, sizeof(d->value), "%s", value);
        d->found = 1;
    }
}

int rbd_config_needs_restart(const rbd_config_t *a, const rbd_config_t *b, const char **which)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        diff_arg_t da = { settings[i].name, "", 0 }, db = { settings[i].name, "", 0 };
        if (settings[i].reload)
            continue;
        rbd_config_each(a, capture, &da);
        rbd_config_each(b, capture, &db);
        if (strcmp(da.value, db.value) != 0) {
            *which = settings[i].name;
            return 1;
        }
    }
    return 0;
}
