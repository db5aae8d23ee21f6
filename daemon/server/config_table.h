/*
 * config_table.h - the rows of ringbloomd's settings (config_table.c),
 * which config.c's parser, renderer and reload read: one row per setting
 * (name, value type, field of rbd_config_t, bounds, whether a reload may
 * change it), the other names a setting answers to, and the words of the
 * settings that take one of a few.
 */
#ifndef RBD_CONFIG_TABLE_H
#define RBD_CONFIG_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef enum { T_STR, T_MODE, T_SIZE, T_U32, T_FSYNC, T_BOOL, T_LEVEL, T_LAYOUT, T_RINGMODE,
               T_UIDS, T_GIDS, T_GROUP, T_SOURCE, T_FSOURCE, T_I64, T_FACILITY, T_ACL_USER,
               T_ACL_GROUP } kind_t;

/* A setting's flags. */
#define RBD_SET_PATH 0x1u    /* T_STR: a path, made absolute against the start
                                directory when set ("" stays "": none) */
#define RBD_SET_SECRET 0x2u  /* its value is shown to nobody: CONFIG GET answers
                                "(redacted)", MONITOR and SLOWLOG hide it in
                                CONFIG SET */

typedef struct setting {
    const char *name;
    kind_t kind;
    size_t off, size;    /* the field in rbd_config_t */
    uint64_t min, max;   /* T_SIZE / T_U32 (T_I64: as int64_t); T_MODE: max = the bits
                            allowed (0: any); T_STR: min 1 = the value may be "" */
    int reload;          /* may change on SIGHUP */
    unsigned flags;      /* RBD_SET_* */
} setting_t;

typedef struct rbd_alias {
    const char *alias, *name;
} rbd_alias_t;

/* The words of the settings that take one of a few (T_FSYNC, T_BOOL,
 * T_LEVEL, T_LAYOUT, T_SOURCE, T_FSOURCE, T_FACILITY): a value's first word is the one CONFIG
 * GET shows. */
typedef struct word {
    kind_t kind;
    const char *word;
    int value;
} word_t;

extern const setting_t rbd_settings[];
extern const size_t rbd_nsettings;
/* Other names of settings, Redis's among them. */
extern const rbd_alias_t rbd_aliases[];
extern const size_t rbd_naliases;
extern const word_t rbd_words[];
extern const size_t rbd_nwords;

/* The row of rbd_settings that key (len bytes, any case; an alias
 * resolved) names, or -1. */
long rbd_setting_row(const char *key, size_t len);

#endif /* RBD_CONFIG_TABLE_H */
