/*
 * cmd_docs.c - COMMAND DOCS, from one syntax string per command row.
 *
 * What: each row of the command tables carries its arguments as Redis's
 * documentation writes them; this file parses that string into Redis 7's
 * argument tree (name, type, token, optional / multiple, nested arguments
 * of a block or oneof) and answers it as COMMAND DOCS does, which is what
 * redis-cli 7 reads at start for its hints and HELP (cliInitHelp: the
 * summary, since and group of each command, and the arguments it joins
 * back into "key error_rate capacity [EXPANSION expansion] ...").
 *
 * Why a string and not nested tables: a row stays one line of what a user
 * types, and the tree's shape is derived, never kept in step by hand.
 *
 * The syntax, after Redis's docs:
 *   word           a value named word, a string ("key": a key); word:type
 *                  names its type (integer, double, key, string, pattern)
 *   WORD           a keyword (a pure token); a keyword before a value or a
 *                  (group) is that argument's token: "EXPANSION n:integer"
 *   [ ... ]        optional;  ( ... )  required
 *   a b | c        inside brackets: one of the alternatives (a oneof); an
 *                  alternative of several arguments is a block
 *   x...           one or more x
 * Names and tokens are under RBD_DOC_NAME bytes; a command has at most
 * RBD_DOC_MAX_ARGS arguments.
 *
 * Workload: COMMAND DOCS comes once per redis-cli session; the string is
 * parsed into a tree on the stack for each answer, nothing is allocated.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cmd_docs.h"

/* Every command came with the first version; a command added later needs
 * a since of its own in its row. */
#define RBD_DOC_SINCE "0.1.0"

typedef struct parser {
    const char *p;
    rbd_doc_t *doc;
} parser_t;

static const char *const type_names[] = {
    [RBD_DOC_STRING] = "string", [RBD_DOC_INTEGER] = "integer", [RBD_DOC_DOUBLE] = "double",
    [RBD_DOC_KEY] = "key", [RBD_DOC_PATTERN] = "pattern", [RBD_DOC_PURE_TOKEN] = "pure-token",
    [RBD_DOC_BLOCK] = "block", [RBD_DOC_ONEOF] = "oneof",
};

static int alts(parser_t *ps);

static void skip(parser_t *ps)
{
    while (*ps->p == ' ')
        ps->p++;
}

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == ':';
}

/* A fresh argument's index, or -1 when the doc is full. */
static int new_arg(parser_t *ps, rbd_doc_type_t type)
{
    rbd_doc_arg_t *a;

    if (ps->doc->n == RBD_DOC_MAX_ARGS)
        return -1;
    a = &ps->doc->arg[ps->doc->n];
    memset(a, 0, sizeof(*a));
    a->type = type;
    a->child = a->next = -1;
    return (int)ps->doc->n++;
}

/* dst = the len bytes at src, lowered if lower: 0, or -1 if too long. */
static int copy_name(char *dst, const char *src, size_t len, int lower)
{
    if (len == 0 || len >= RBD_DOC_NAME)
        return -1;
    for (size_t i = 0; i < len; i++)
        dst[i] = lower ? (char)tolower((unsigned char)src[i]) : src[i];
    dst[len] = '\0';
    return 0;
}

/* A keyword (upper case first) or a value with its optional :type. */
static int word(parser_t *ps)
{
    const char *w = ps->p, *colon;
    size_t len = 0, t;
    int i, keyword = isupper((unsigned char)*w);

    while (word_char(w[len]))
        len++;
    ps->p += len;
    colon = memchr(w, ':', len);
    if ((i = new_arg(ps, keyword ? RBD_DOC_PURE_TOKEN : RBD_DOC_STRING)) < 0 ||
        copy_name(ps->doc->arg[i].name, w, colon ? (size_t)(colon - w) : len, 1) != 0)
        return -1;
    if (keyword)
        return copy_name(ps->doc->arg[i].token, w, len, 0) == 0 && colon == NULL ? i : -1;
    if (colon == NULL) {
        ps->doc->arg[i].type = strcmp(ps->doc->arg[i].name, "key") == 0 ? RBD_DOC_KEY
                               : RBD_DOC_STRING;
        return i;
    }
    for (t = 0; t <= RBD_DOC_PATTERN; t++)
        if (strlen(type_names[t]) == len - (size_t)(colon + 1 - w) &&
            strncmp(type_names[t], colon + 1, strlen(type_names[t])) == 0)
            break;
    ps->doc->arg[i].type = (rbd_doc_type_t)t;
    return t <= RBD_DOC_PATTERN ? i : -1;
}

/* One element: a word or a bracketed group, then "..." if repeated. */
static int element(parser_t *ps)
{
    char open = *ps->p;
    int i;

    if (open == '[' || open == '(') {
        ps->p++;
        i = alts(ps);
        if (i < 0 || *ps->p != (open == '[' ? ']' : ')'))
            return -1;
        ps->p++;
        if (open == '[')
            ps->doc->arg[i].flags |= RBD_DOC_OPTIONAL;
    } else if (word_char(open)) {
        i = word(ps);
    } else {
        return -1;
    }
    if (i >= 0 && strncmp(ps->p, "...", 3) == 0) {
        ps->p += 3;
        ps->doc->arg[i].flags |= RBD_DOC_MULTIPLE;
    }
    return i;
}

/* A block or oneof over the arguments from child on, named after its
 * first argument's token or name (a oneof: its alternatives' names joined
 * by '-', as many as fit). */
static int wrap(parser_t *ps, rbd_doc_type_t type, int child)
{
    rbd_doc_t *d = ps->doc;
    int i = new_arg(ps, type);
    char *name;

    if (i < 0)
        return -1;
    name = d->arg[i].name;
    d->arg[i].child = child;
    if (type == RBD_DOC_BLOCK && d->arg[child].token[0] != '\0')
        return copy_name(name, d->arg[child].token, strlen(d->arg[child].token), 1) == 0 ? i : -1;
    for (int c = child; c >= 0; c = d->arg[c].next) {
        size_t have = strlen(name), add = strlen(d->arg[c].name);
        if (have + (have > 0) + add >= RBD_DOC_NAME || (type == RBD_DOC_BLOCK && have > 0))
            break;
        if (have > 0)
            name[have++] = '-';
        memcpy(name + have, d->arg[c].name, add + 1);
    }
    return i;
}

/* 1 if what follows is a value a keyword before it names: a word in lower
 * case or a (group). */
static int value_follows(parser_t *ps)
{
    skip(ps);
    return *ps->p == '(' || islower((unsigned char)*ps->p);
}

/* Elements up to '|', a closing bracket or the end: the first one's index
 * (the rest linked by next), or -1 if there is none or one is malformed. */
static int sequence(parser_t *ps)
{
    rbd_doc_t *d = ps->doc;
    int first = -1, last = -1, i;

    for (;;) {
        skip(ps);
        if (*ps->p == '\0' || strchr("|])", *ps->p) != NULL)
            return first;
        if ((i = element(ps)) < 0)
            return -1;
        if (d->arg[i].type == RBD_DOC_PURE_TOKEN && d->arg[i].flags == 0 && value_follows(ps)) {
            int v = element(ps);    /* the keyword is v's token; its slot stays unused */
            if (v < 0 || d->arg[v].token[0] != '\0')
                return -1;
            memcpy(d->arg[v].token, d->arg[i].token, sizeof(d->arg[v].token));
            if (d->arg[v].type == RBD_DOC_BLOCK || d->arg[v].type == RBD_DOC_ONEOF)
                memcpy(d->arg[v].name, d->arg[i].name, sizeof(d->arg[v].name));
            i = v;
        }
        if (last >= 0)
            d->arg[last].next = i;
        else
            first = i;
        last = i;
    }
}

/* Alternatives separated by '|': one argument (a block where an
 * alternative has several, a oneof where there are several). */
static int alts(parser_t *ps)
{
    rbd_doc_t *d = ps->doc;
    int first = -1, last = -1, i;

    for (;;) {
        if ((i = sequence(ps)) < 0)
            return -1;
        if (d->arg[i].next >= 0 && (i = wrap(ps, RBD_DOC_BLOCK, i)) < 0)
            return -1;
        if (last >= 0)
            d->arg[last].next = i;
        else
            first = i;
        last = i;
        if (*ps->p != '|')
            break;
        ps->p++;
    }
    return first == last ? first : wrap(ps, RBD_DOC_ONEOF, first);
}

int rbd_doc_parse(const char *syntax, rbd_doc_t *doc)
{
    parser_t ps = { syntax, doc };

    doc->n = 0;
    skip(&ps);
    if (*ps.p == '\0') {
        doc->first = -1;
        return 0;
    }
    doc->first = sequence(&ps);
    return doc->first >= 0 && *ps.p == '\0' ? 0 : -1;
}

/* The argument list from first on, each a map as Redis 7's
 * addReplyCommandArgList writes it. */
static void reply_args(rbi_buf_t *out, const rbd_doc_t *d, int first)
{
    size_t n = 0;

    for (int i = first; i >= 0; i = d->arg[i].next)
        n++;
    rbi_resp_array(out, n);
    for (int i = first; i >= 0; i = d->arg[i].next) {
        const rbd_doc_arg_t *a = &d->arg[i];
        unsigned f = a->flags;
        rbi_resp_map(out, 2 + (a->token[0] != '\0') + (f != 0) + (a->child >= 0));
        rbi_resp_bulk_str(out, "name");
        rbi_resp_bulk_str(out, a->name);
        rbi_resp_bulk_str(out, "type");
        rbi_resp_bulk_str(out, type_names[a->type]);
        if (a->token[0] != '\0') {
            rbi_resp_bulk_str(out, "token");
            rbi_resp_bulk_str(out, a->token);
        }
        if (f != 0) {
            rbi_resp_bulk_str(out, "flags");
            rbi_resp_set(out, ((f & RBD_DOC_OPTIONAL) != 0) + ((f & RBD_DOC_MULTIPLE) != 0));
            if (f & RBD_DOC_OPTIONAL)
                rbi_resp_simple(out, "optional");
            if (f & RBD_DOC_MULTIPLE)
                rbi_resp_simple(out, "multiple");
        }
        if (a->child >= 0) {
            rbi_resp_bulk_str(out, "arguments");
            reply_args(out, d, a->child);
        }
    }
}

/* A command without arguments has no "arguments" field, as in Redis; nor
 * has one whose syntax does not parse (check_cmd.c keeps every row
 * parsing). */
void rbd_doc_reply(rbi_buf_t *out, const rbd_command_t *cmd)
{
    rbd_doc_t doc;
    int args = rbd_doc_parse(cmd->syntax, &doc) == 0 && doc.first >= 0;

    rbi_resp_map(out, 3 + (size_t)args);
    rbi_resp_bulk_str(out, "summary");
    rbi_resp_bulk_str(out, cmd->summary);
    rbi_resp_bulk_str(out, "since");
    rbi_resp_bulk_str(out, RBD_DOC_SINCE);
    rbi_resp_bulk_str(out, "group");
    rbi_resp_bulk_str(out, cmd->group);
    if (args) {
        rbi_resp_bulk_str(out, "arguments");
        reply_args(out, &doc, doc.first);
    }
}

/* ---- ACL categories ------------------------------------------------------------ */

uint32_t rbd_cmd_categories(const rbd_command_t *cmd)
{
    static const struct {
        const char *group;
        uint32_t cats;
    } groups[] = {
        { "bf", ACL_BLOOM }, { "cbf", ACL_BLOOM }, { "cf", ACL_CUCKOO }, { "cms", ACL_CMS },
        { "hyperloglog", ACL_HYPERLOGLOG }, { "ring", ACL_RING }, { "admit", ACL_ADMIT },
        { "generic", ACL_KEYSPACE }, { "connection", ACL_CONNECTION },
        { "transactions", ACL_TRANSACTION },
    };
    uint32_t c = cmd->cats;

    for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
        if (strcmp(cmd->group, groups[i].group) == 0)
            c |= groups[i].cats;
    if (cmd->flags & CMD_WRITE)
        c |= ACL_WRITE;
    if (cmd->flags & CMD_ADMIN)
        c |= ACL_ADMIN | ACL_DANGEROUS;
    c |= (cmd->flags & CMD_FAST) ? ACL_FAST : ACL_SLOW;
    if (!(cmd->flags & (CMD_WRITE | CMD_ADMIN)) && !(c & (ACL_CONNECTION | ACL_TRANSACTION)))
        c |= ACL_READ;
    return c;
}

void rbd_doc_categories(rbi_buf_t *out, uint32_t cats)
{
    char name[40];

    rbi_resp_set(out, (size_t)__builtin_popcount(cats));
    for (unsigned i = 0; i < RBD_ACL_NCATS; i++)
        if (cats & (1u << i)) {
            snprintf(name, sizeof(name), "@%s", rbd_acl_cat_name(i));
            rbi_resp_simple(out, name);
        }
}
