/*
 * cmd_docs.h - COMMAND DOCS: a command row's argument syntax (rbd_command_t's
 * syntax, in the words of Redis's documentation) parsed into Redis 7's
 * argument tree, and the doc map redis-cli 7 builds its hints and HELP from.
 */
#ifndef RBD_CMD_DOCS_H
#define RBD_CMD_DOCS_H

#include <stddef.h>

#include "cmd.h"

/* An argument's type, as Redis 7 names it. */
typedef enum rbd_doc_type {
    RBD_DOC_STRING,
    RBD_DOC_INTEGER,
    RBD_DOC_DOUBLE,
    RBD_DOC_KEY,
    RBD_DOC_PATTERN,
    RBD_DOC_PURE_TOKEN,    /* a keyword alone */
    RBD_DOC_BLOCK,         /* its arguments, in order */
    RBD_DOC_ONEOF,         /* one of its arguments */
} rbd_doc_type_t;

#define RBD_DOC_OPTIONAL 0x1u
#define RBD_DOC_MULTIPLE 0x2u

#define RBD_DOC_MAX_ARGS 48    /* arguments of one command, nested ones included */
#define RBD_DOC_NAME 32        /* a name's or token's bytes, NUL included */

typedef struct rbd_doc_arg {
    char name[RBD_DOC_NAME];
    char token[RBD_DOC_NAME];  /* the keyword before the value; "" if none */
    rbd_doc_type_t type;
    unsigned flags;            /* RBD_DOC_* */
    int child;                 /* a block's or oneof's first argument; -1 */
    int next;                  /* the next argument at its level; -1 */
} rbd_doc_arg_t;

typedef struct rbd_doc {
    rbd_doc_arg_t arg[RBD_DOC_MAX_ARGS];
    size_t n;                  /* slots used (a keyword merged into its value keeps one) */
    int first;                 /* the first top-level argument; -1: none */
} rbd_doc_t;

/* Parses syntax (see cmd_docs.c) into doc: 0, or -1 if it is malformed or
 * too big (tests/unit/check_cmd.c parses every row). */
int rbd_doc_parse(const char *syntax, rbd_doc_t *doc);

/* Appends cmd's doc map (summary, since, group, arguments) to out: RESP3
 * maps and sets, or RESP2's flat arrays. */
void rbd_doc_reply(rbi_buf_t *out, const rbd_command_t *cmd);

/* The ACL categories of a command or subcommand row (acl.h's ACL_*), in
 * one place, as Redis's setImplicitACLCategories derives them: the row's
 * own (cats), and from its flags @write (CMD_WRITE), @admin @dangerous
 * (CMD_ADMIN), @fast (CMD_FAST) or else @slow; from its group the data
 * type's (bf and cbf: @bloom, cf: @cuckoo, cms: @cms, hyperloglog, ring,
 * admit), @keyspace (generic), @connection and @transaction; and @read
 * for every command that changes nothing, unless it is a connection's or
 * a transaction's (INFO, TIME, KEYS and ACL WHOAMI are @read here). */
uint32_t rbd_cmd_categories(const rbd_command_t *cmd);

/* Appends the categories' set ("@read", "@fast"...), COMMAND INFO's
 * element 7, to out. */
void rbd_doc_categories(rbi_buf_t *out, uint32_t cats);

#endif /* RBD_CMD_DOCS_H */
