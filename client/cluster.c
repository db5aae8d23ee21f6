/*
 * cluster.c - Redis Cluster's slot map as the ring's: import-cluster reads
 * which master owns each of the 16384 key slots from a cluster node
 * (CLUSTER SHARDS, or CLUSTER SLOTS before Redis 7) and sets the ring to
 * it in one transaction; keyslot prints a key's slot as Redis Cluster
 * computes it (lib/shm/hash.c's rbi_hash_keyslot, the slots ring's too).
 *
 * A ring node of the slots mode is named "ip:port" after its master (the
 * "ip" and "port" CLUSTER SHARDS gives, or its "endpoint" when there is
 * no ip), as Redis names nodes in CLUSTER NODES and -MOVED.  The map is
 * imported only whole: every slot owned by exactly one master, or the
 * import is refused naming the unassigned ranges, since a ring that
 * answers no node for some keys is worse than the ring it replaces.
 *
 * The transaction, in this order: MULTI; RING.MODE slots (unless the ring
 * is in that mode already: a switch drops the slot map); RING.ADD of
 * each master not yet in the ring; RING.SLOTS with every range; RING.REMOVE
 * of each ring node that is no longer a master (after RING.SLOTS, so the
 * node removed owns no slot by then); EXEC.  A refusal while queueing
 * (an unknown command: a daemon without the slots mode) discards it, so
 * nothing changes.  The ring's current members are read from the
 * segment just before; a change by another client in between can make a
 * member fail at EXEC (the others still apply, as in Redis), which is
 * said.  A daemon with `ring-source etcd` is refused before anything is
 * sent: its ring lives in etcd, which keeps no slot map (it refuses
 * RING.SLOTS), so no import could ever apply there.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hash.h"

#define CM_MAX_MASTERS 4096           /* Redis advises at most 1000 nodes */
#define CM_NAME        (RB_NODE_NAME_MAX + 1)

/* The slot map: masters by name, the owner of every slot. */
typedef struct cmap {
    char (*name)[CM_NAME];
    size_t masters;
    int32_t owner[RBI_KEYSLOTS];    /* an index into name[], -1: unassigned */
    const char *host;               /* the node asked, for "" endpoints */
} cmap_t;

/* ---- the map ------------------------------------------------------------- */

/* The index of master "ip:port" (added if new): >= 0, or -1 after saying
 * why in why[]. */
static int master_index(cmap_t *m, const char *ip, long long port, char *why, size_t cap)
{
    char name[CM_NAME];
    int n;

    if (port < 1 || port > 65535) {
        snprintf(why, cap, "a master of port %lld", port);
        return -1;
    }
    n = snprintf(name, sizeof(name), "%s:%lld", ip, port);
    if (n < 0 || (size_t)n >= sizeof(name)) {
        snprintf(why, cap, "a master's address is longer than a ring node's name (%d bytes)",
                 RB_NODE_NAME_MAX);
        return -1;
    }
    for (size_t i = 0; i < m->masters; i++)
        if (strcmp(m->name[i], name) == 0)
            return (int)i;
    if (m->masters == CM_MAX_MASTERS) {
        snprintf(why, cap, "more than %d masters", CM_MAX_MASTERS);
        return -1;
    }
    if (m->masters % 64 == 0) {
        void *p = realloc(m->name, (m->masters + 64) * sizeof(*m->name));
        if (p == NULL) {
            snprintf(why, cap, "out of memory");
            return -1;
        }
        m->name = p;
    }
    memcpy(m->name[m->masters], name, (size_t)n + 1);
    return (int)m->masters++;
}

/* Slots start..end belong to master idx: 0, or -1 after saying why. */
static int assign(cmap_t *m, long long start, long long end, int idx, char *why, size_t cap)
{
    if (start < 0 || end < start || end >= RBI_KEYSLOTS) {
        snprintf(why, cap, "a slot range %lld-%lld outside 0-%u", start, end, RBI_KEYSLOTS - 1);
        return -1;
    }
    for (long long s = start; s <= end; s++) {
        if (m->owner[s] >= 0 && m->owner[s] != idx) {
            snprintf(why, cap, "slot %lld is claimed by both %s and %s", s, m->name[m->owner[s]],
                     m->name[idx]);
            return -1;
        }
        m->owner[s] = idx;
    }
    return 0;
}

/* A string element's text, or NULL. */
static const char *rv_str(const cli_rv_t *v)
{
    return v != NULL && (v->type == '$' || v->type == '+') ? v->s : NULL;
}

/* An integer element (or a bulk string of digits): 0, or -1. */
static int rv_int(const cli_rv_t *v, long long *out)
{
    char *end;

    if (v != NULL && v->type == ':') {
        *out = v->n;
        return 0;
    }
    if (rv_str(v) == NULL || v->s[0] == '\0')
        return -1;
    *out = strtoll(v->s, &end, 10);
    return *end == '\0' ? 0 : -1;
}

/* The value of key in a RESP2 map (a flat array key, value, ...), or NULL. */
static const cli_rv_t *field(const cli_rv_t *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->count; i += 2)
        if (rv_str(&map->el[i]) != NULL && strcmp(map->el[i].s, key) == 0)
            return &map->el[i + 1];
    return NULL;
}

static int is_map(const cli_rv_t *v)
{
    return v != NULL && v->type == '*' && v->count % 2 == 0;
}

/* A node's address as the ring names it, from its ip (or endpoint): "" is
 * the node asked (Redis: the same endpoint as the connection), "?" or
 * none is unknown.  NULL if unknown. */
static const char *address(const cmap_t *m, const char *ip)
{
    if (ip == NULL || strcmp(ip, "?") == 0)
        return NULL;
    return ip[0] == '\0' ? m->host : ip;
}

/* The master of one shard of CLUSTER SHARDS: its index, or -1 with why;
 * -2 if the shard has none. */
static int shard_master(cmap_t *m, const cli_rv_t *nodes, char *why, size_t cap)
{
    if (nodes == NULL || nodes->type != '*') {
        snprintf(why, cap, "a shard without its nodes");
        return -1;
    }
    for (size_t j = 0; j < nodes->count; j++) {
        const cli_rv_t *nd = &nodes->el[j];
        const char *role, *ip;
        long long port;
        if (!is_map(nd)) {
            snprintf(why, cap, "a shard's node is not a map");
            return -1;
        }
        role = rv_str(field(nd, "role"));
        if (role == NULL || strcmp(role, "master") != 0)
            continue;
        ip = rv_str(field(nd, "ip"));
        if (ip == NULL || ip[0] == '\0')
            ip = rv_str(field(nd, "endpoint"));
        if ((ip = address(m, ip)) == NULL) {
            snprintf(why, cap, "a master with no known address (neither ip nor endpoint)");
            return -1;
        }
        if (rv_int(field(nd, "port"), &port) != 0 && rv_int(field(nd, "tls-port"), &port) != 0) {
            snprintf(why, cap, "master %s without a port", ip);
            return -1;
        }
        return master_index(m, ip, port, why, cap);
    }
    return -2;
}

/* CLUSTER SHARDS (Redis 7): an array of shards, each a map with "slots"
 * (start, end, ... as integers) and "nodes" (maps with role, ip,
 * endpoint, port).  Masters without slots join the ring too. */
static int from_shards(cmap_t *m, const cli_rv_t *top, char *why, size_t cap)
{
    if (top->type != '*') {
        snprintf(why, cap, "CLUSTER SHARDS did not answer an array");
        return -1;
    }
    for (size_t i = 0; i < top->count; i++) {
        const cli_rv_t *sh = &top->el[i], *slots;
        int idx;
        if (!is_map(sh)) {
            snprintf(why, cap, "a shard is not a map");
            return -1;
        }
        slots = field(sh, "slots");
        if (slots == NULL || slots->type != '*' || slots->count % 2 != 0) {
            snprintf(why, cap, "a shard's slots are not a list of ranges");
            return -1;
        }
        if ((idx = shard_master(m, field(sh, "nodes"), why, cap)) == -1)
            return -1;
        if (idx == -2 && slots->count > 0) {
            snprintf(why, cap, "a shard holds slots but has no master (failed, and not yet "
                     "replaced by a failover?)");
            return -1;
        }
        for (size_t k = 0; k < slots->count; k += 2) {
            long long a, b;
            if (rv_int(&slots->el[k], &a) != 0 || rv_int(&slots->el[k + 1], &b) != 0) {
                snprintf(why, cap, "a shard's slot range is not two integers");
                return -1;
            }
            if (assign(m, a, b, idx, why, cap) != 0)
                return -1;
        }
    }
    return 0;
}

/* CLUSTER SLOTS (Redis 3 to 6, and 7): an array of [start, end, master,
 * replicas...], each node [ip, port, id, ...].  Only masters that own
 * slots are listed. */
static int from_slots(cmap_t *m, const cli_rv_t *top, char *why, size_t cap)
{
    if (top->type != '*') {
        snprintf(why, cap, "CLUSTER SLOTS did not answer an array");
        return -1;
    }
    for (size_t i = 0; i < top->count; i++) {
        const cli_rv_t *e = &top->el[i], *nd;
        const char *ip;
        long long a, b, port;
        int idx;
        if (e->type != '*' || e->count < 3 || rv_int(&e->el[0], &a) != 0 ||
            rv_int(&e->el[1], &b) != 0 || (nd = &e->el[2])->type != '*' || nd->count < 2 ||
            rv_int(&nd->el[1], &port) != 0) {
            snprintf(why, cap, "an entry of CLUSTER SLOTS is not [start, end, [ip, port, ...], "
                     "...]");
            return -1;
        }
        if ((ip = address(m, rv_str(&nd->el[0]))) == NULL) {
            snprintf(why, cap, "the master of slots %lld-%lld has no known address", a, b);
            return -1;
        }
        if ((idx = master_index(m, ip, port, why, cap)) < 0 || assign(m, a, b, idx, why, cap) != 0)
            return -1;
    }
    return 0;
}

/* Every slot owned?  0, or -1 with the unassigned ranges in why. */
static int covered(const cmap_t *m, char *why, size_t cap)
{
    size_t w = 0, runs = 0, slots = 0;

    for (uint32_t s = 0; s < RBI_KEYSLOTS; s++) {
        uint32_t e = s;
        if (m->owner[s] >= 0)
            continue;
        while (e + 1 < RBI_KEYSLOTS && m->owner[e + 1] < 0)
            e++;
        if (runs++ < 8 && w < cap)
            w += (size_t)snprintf(why + w, cap - w, "%s%u-%u", runs > 1 ? ", " : "", s, e);
        slots += e - s + 1;
        s = e;
    }
    if (runs == 0)
        return 0;
    if (runs > 8 && w < cap)
        w += (size_t)snprintf(why + w, cap - w, " and %zu more ranges", runs - 8);
    if (w < cap)
        snprintf(why + w, cap - w, " (%zu of %u slots) are assigned to no master", slots,
                 RBI_KEYSLOTS);
    return -1;
}

/* Reads host:port's slot map into m: EX_YES, or the exit code after
 * saying why on stderr. */
static int read_map(const cli_t *cli, const char *host, const char *port, cmap_t *m)
{
    static const char *const shards[2] = { "CLUSTER", "SHARDS" }, *const slots[2] = { "CLUSTER", "SLOTS" };
    char why[1024];
    cli_redis_t *r;
    cli_rv_t v;
    int ex, from_old = 0;

    if ((ex = cli_redis_open(host, port, cli->timeout_s, &r, why, sizeof(why))) != EX_YES) {
        fprintf(stderr, "ringbloom: import-cluster: %s\n", why);
        return ex;
    }
    ex = cli_redis_call(r, 2, shards, &v, why, sizeof(why));
    /* Before Redis 7 SHARDS is an unknown subcommand: SLOTS says the same. */
    if (ex == EX_YES && v.type == '-' && strstr(v.s, "cluster support disabled") == NULL) {
        cli_rv_free(&v);
        from_old = 1;
        ex = cli_redis_call(r, 2, slots, &v, why, sizeof(why));
    }
    cli_redis_close(r);
    if (ex != EX_YES) {
        fprintf(stderr, "ringbloom: import-cluster: %s\n", why);
        return ex;
    }
    if (v.type == '-') {
        fprintf(stderr, "ringbloom: import-cluster: %s:%s %s: %s\n", host, port,
                strstr(v.s, "cluster support disabled") != NULL ?
                "is not a Redis Cluster node (cluster-enabled no)" : "refused CLUSTER SHARDS and SLOTS",
                v.s);
        cli_rv_free(&v);
        return EX_REFUSED;
    }
    for (uint32_t s = 0; s < RBI_KEYSLOTS; s++)
        m->owner[s] = -1;
    if ((from_old ? from_slots(m, &v, why, sizeof(why)) : from_shards(m, &v, why, sizeof(why))) != 0) {
        fprintf(stderr, "ringbloom: import-cluster: %s:%s: unexpected CLUSTER %s reply: %s\n",
                host, port, from_old ? "SLOTS" : "SHARDS", why);
        ex = EX_FAIL;
    } else if (covered(m, why, sizeof(why)) != 0) {
        fprintf(stderr, "ringbloom: import-cluster: %s:%s: not importing a partial slot map: "
                "slots %s\n", host, port, why);
        ex = EX_FAIL;
    }
    cli_rv_free(&v);
    return ex;
}

/* ---- the transaction ------------------------------------------------------- */

/* What the commands are sent to: the daemon, or stdout (--dry-run). */
typedef struct sink {
    const cli_t *cli;
    rb_conn_t *c;               /* NULL: print */
    int ex;                     /* EX_YES until a command fails */
} sink_t;

/* A word as redis-cli reads it back: bare, or quoted with escapes. */
static void print_word(const char *s, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || strchr(".:-_/@[]{}", s[i]) != NULL))
            break;
    if (len > 0 && i == len) {
        fwrite(s, 1, len, stdout);
        return;
    }
    putchar('"');
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            printf("\\x%02x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* Queues (or prints) one command; after a failure, does nothing. */
static void emit(sink_t *k, size_t argc, const char *const *argv, const size_t *argl)
{
    char buf[512];
    int rc;

    if (k->ex != EX_YES)
        return;
    if (k->c == NULL) {
        for (size_t i = 0; i < argc; i++) {
            if (i > 0)
                putchar(' ');
            print_word(argv[i], argl[i]);
        }
        putchar('\n');
        return;
    }
    rc = rb_conn_command(k->c, argc, argv, argl, buf, sizeof(buf));
    if (rc == RB_OK && strcmp(buf, argc == 1 ? "OK" : "QUEUED") == 0)
        return;
    if (rc == RB_OK) {
        fprintf(stderr, "ringbloom: import-cluster: %.*s: unexpected answer '%s'\n",
                (int)argl[0], argv[0], buf);
        k->ex = EX_FAIL;
    } else {
        k->ex = cli_conn_fail(k->cli, k->c, argv[0], rc, 1);
        if (rc == RB_EREPLY && strstr(buf, "unknown command") != NULL)
            fprintf(stderr, "ringbloom: import-cluster: this ringbloomd has no slots ring "
                    "(%s is unknown to it); nothing was changed\n", argv[0]);
    }
}

static void emit_words(sink_t *k, const char *a, const char *b, size_t blen)
{
    const char *argv[2] = { a, b };
    size_t argl[2] = { strlen(a), blen };

    emit(k, b != NULL ? 2 : 1, argv, argl);
}

/* RING.SLOTS start end node ..., one triple per run of slots with one
 * owner, in slot order. */
static void emit_slots(sink_t *k, const cmap_t *m, size_t *ranges)
{
    size_t cap = 1 + 3 * (size_t)RBI_KEYSLOTS, n = 1;
    const char **argv = calloc(cap, sizeof(*argv));
    size_t *argl = calloc(cap, sizeof(*argl));
    char (*num)[8] = calloc(2 * (size_t)RBI_KEYSLOTS, sizeof(*num));
    size_t nn = 0;

    if (argv == NULL || argl == NULL || num == NULL) {
        k->ex = cli_fail(EX_FAIL, "import-cluster", RB_ENOMEM);
    } else {
        argv[0] = "RING.SLOTS";
        argl[0] = 10;
        for (uint32_t s = 0, e; s < RBI_KEYSLOTS; s = e + 1) {
            for (e = s; e + 1 < RBI_KEYSLOTS && m->owner[e + 1] == m->owner[s]; e++)
                ;
            argv[n] = num[nn];
            argl[n++] = (size_t)snprintf(num[nn++], 8, "%u", s);
            argv[n] = num[nn];
            argl[n++] = (size_t)snprintf(num[nn++], 8, "%u", e);
            argv[n] = m->name[m->owner[s]];
            argl[n++] = strlen(m->name[m->owner[s]]);
        }
        *ranges = (n - 1) / 3;
        emit(k, n, argv, argl);
    }
    free(argv);
    free(argl);
    free(num);
}

/* The ring's members now: *nodes (count), and whether it is in the slots
 * mode already (*slots), from the segment.  With --dry-run an instance
 * that cannot be read counts as an empty ring. */
static int ring_members(cli_t *cli, int dry, rb_node_t **nodes, size_t *count, int *slots)
{
    rb_segment_t *seg;
    rb_ring_stat_t st;
    int ex = cli_attach(cli, &seg), rc;

    *nodes = NULL;
    *count = 0;
    *slots = 0;
    if (ex != EX_YES) {
        if (dry)
            fprintf(stderr, "ringbloom: import-cluster: --dry-run: printing the commands for "
                    "an empty ring\n");
        return dry ? EX_YES : ex;
    }
    rc = rb_ring_stat(seg, &st);
    if (rc == RB_OK) {
        *slots = strcmp(rb_ring_mode_name((rb_ring_mode_t)st.mode), "slots") == 0;
        *nodes = calloc(st.nodes ? st.nodes : 1, sizeof(**nodes));
        rc = *nodes ? rb_ring_nodes(seg, *nodes, st.nodes, count) : RB_ENOMEM;
        if (*count > st.nodes)
            *count = st.nodes;
    }
    rb_segment_close(seg);
    return rc == RB_OK ? EX_YES : cli_fail(EX_FAIL, "import-cluster: reading the ring", rc);
}

/* The transaction into k (see the top of the file); *added, *removed,
 * *ranges: what it does. */
static void transaction(sink_t *k, const cmap_t *m, const rb_node_t *ring, size_t nring,
                        int slots, size_t *added, size_t *removed, size_t *ranges)
{
    emit_words(k, "MULTI", NULL, 0);
    /* A switch, even to the mode in force, drops the explicit slot map:
     * a ring in the slots mode keeps its map until RING.SLOTS replaces
     * it, so its readers never see a balanced one meanwhile. */
    if (!slots)
        emit_words(k, "RING.MODE", "slots", 5);
    for (size_t i = 0; i < m->masters; i++) {
        size_t j = 0;
        while (j < nring && strcmp(ring[j].name, m->name[i]) != 0)
            j++;
        if (j == nring) {
            emit_words(k, "RING.ADD", m->name[i], strlen(m->name[i]));
            (*added)++;
        }
    }
    emit_slots(k, m, ranges);
    for (size_t j = 0; j < nring; j++) {
        size_t i = 0;
        while (i < m->masters && strcmp(ring[j].name, m->name[i]) != 0)
            i++;
        if (i == m->masters) {
            emit_words(k, "RING.REMOVE", ring[j].name, ring[j].name_len);
            (*removed)++;
        }
    }
}

/* EXEC: EX_YES, or the exit code after saying why. */
static int exec(sink_t *k)
{
    static const char *const argv[1] = { "EXEC" };
    static const size_t argl[1] = { 4 };
    char *buf;
    int rc;

    if (k->c == NULL) {
        puts("EXEC");
        return EX_YES;
    }
    if ((buf = malloc(65536)) == NULL)
        return cli_fail(EX_FAIL, "import-cluster", RB_ENOMEM);
    rc = rb_conn_command(k->c, 1, argv, argl, buf, 65536);
    free(buf);
    if (rc == RB_OK)
        return EX_YES;
    if (rc == RB_EREPLY && strncmp(rb_conn_error(k->c), "EXECABORT", 9) != 0) {
        fprintf(stderr, "ringbloom: import-cluster: a member of the transaction failed: %s "
                "(the members before and after it were applied; run import-cluster again)\n",
                rb_conn_error(k->c));
        return EX_REFUSED;
    }
    return cli_conn_fail(k->cli, k->c, "import-cluster", rc, 1);
}

/* Whether the daemon on k->c takes its ring from etcd (INFO ring says
 * ring_source:etcd): EX_YES when it does not, else the exit code after
 * saying why nothing was sent. */
static int refuse_etcd(sink_t *k)
{
    static const char *const argv[2] = { "INFO", "ring" };
    static const size_t argl[2] = { 4, 4 };
    char buf[8192];
    const char *at;
    int rc = rb_conn_command(k->c, 2, argv, argl, buf, sizeof(buf));

    if (rc != RB_OK)
        return cli_conn_fail(k->cli, k->c, "import-cluster: INFO", rc, 1);
    if ((at = strstr(buf, "ring_source:etcd")) == NULL || (at != buf && at[-1] != '\n'))
        return EX_YES;
    fprintf(stderr, "ringbloom: import-cluster: this ringbloomd takes its ring from etcd "
            "(ring-source etcd), which keeps no slot map (RING.SLOTS is refused there); "
            "nothing was changed. Import into a ringbloomd with ring-source local, or set "
            "the etcd ring's mode with RING.MODE slots (slots balanced by weight)\n");
    return EX_REFUSED;
}

int cmd_import_cluster(cli_t *cli, int argc, char **argv)
{
    const char *host = NULL, *port = NULL;
    size_t nring = 0, added = 0, removed = 0, ranges = 0;
    rb_node_t *ring = NULL;
    sink_t k = { .cli = cli };
    cmap_t *m;
    int dry = 0, slots = 0, ex;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dry-run") == 0)
            dry = 1;
        else if (host == NULL)
            host = argv[i];
        else if (port == NULL)
            port = argv[i];
        else
            return cli_usage("import-cluster", "unexpected argument '%s'", argv[i]);
    }
    if (port == NULL)
        return cli_usage("import-cluster", "missing PORT");
    if ((m = calloc(1, sizeof(*m))) == NULL)
        return cli_fail(EX_FAIL, "import-cluster", RB_ENOMEM);
    m->host = host;
    /* The daemon first: one that cannot take the map is refused at once. */
    if ((dry || ((ex = cli_connect(cli, &k.c)) == EX_YES && (ex = refuse_etcd(&k)) == EX_YES)) &&
        (ex = read_map(cli, host, port, m)) == EX_YES &&
        (ex = ring_members(cli, dry, &ring, &nring, &slots)) == EX_YES) {
        transaction(&k, m, ring, nring, slots, &added, &removed, &ranges);
        if (k.ex != EX_YES && k.c != NULL) {
            char buf[64];
            static const char *const d[1] = { "DISCARD" };
            static const size_t dl[1] = { 7 };
            /* Best effort: closing the connection discards it too. */
            if (rb_conn_command(k.c, 1, d, dl, buf, sizeof(buf)) != RB_OK)
                buf[0] = '\0';
        }
        ex = k.ex != EX_YES ? k.ex : exec(&k);
    }
    rb_conn_close(k.c);
    if (ex == EX_YES && !dry) {
        if (cli->json)
            cli_json_line(cli_json_obj("masters", cli_json_num("%zu", m->masters),
                                       "ranges", cli_json_num("%zu", ranges),
                                       "added", cli_json_num("%zu", added),
                                       "removed", cli_json_num("%zu", removed), NULL));
        else
            printf("imported %s:%s: %zu masters, %zu slot ranges; ring nodes added: %zu, "
                   "removed: %zu\n", host, port, m->masters, ranges, added, removed);
    }
    free(ring);
    free(m->name);
    free(m);
    return ex;
}

/* ---- keyslot ------------------------------------------------------------- */

/* One key's slot: a line (echo: the key, a tab, the slot), or with --json
 * an object, on its own line (echo) or pushed onto array. */
static void keyslot_line(const cli_t *cli, const char *key, size_t len, int echo,
                         json_object *array)
{
    unsigned slot = rbi_hash_keyslot(key, len);

    if (cli->json) {
        json_object *o = cli_json_obj("key", cli_json_text(key, len), "slot",
                                      cli_json_num("%u", slot), NULL);
        if (echo)
            cli_json_line(o);
        else
            cli_json_push(array, o);
    } else if (echo) {
        fwrite(key, 1, len, stdout);
        printf("\t%u\n", slot);
    } else {
        printf("%u\n", slot);
    }
}

int cmd_keyslot(cli_t *cli, int argc, char **argv)
{
    json_object *out = NULL;

    if (argc == 2 && strcmp(argv[1], "-") == 0) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, stdin)) >= 0) {
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                line[--len] = '\0';
            keyslot_line(cli, line, (size_t)len, 1, NULL);
        }
        free(line);
        return EX_YES;
    }
    if (cli->json)
        out = json_object_new_array();
    for (int i = 1; i < argc; i++)
        keyslot_line(cli, argv[i], strlen(argv[i]), 0, out);
    if (cli->json)
        cli_json_line(out);
    return EX_YES;
}
