/*
 * cmd_ring.c - the RING.* commands: their table and handlers.  Changes go
 * through ops (ops.c: applied to the model, published, logged); reads come
 * from the published ring in the segment, as any reader's.  Each change a
 * client makes is logged once, at notice level, with who made it (the
 * uid and pid of the socket's peer); a replay at start-up does not come
 * here, and the etcd source logs the revisions it applies (ops_ring.c).
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "cmd.h"
#include "ops.h"
#include "ring_mode.h"    /* lib: the mode table's facts (RING.MODE's argument, ...) */
#include "ring_model.h"   /* lib: rbi_ring_points_with */

static int parse_weight(rbd_ctx_t *x, size_t i, uint32_t *w)
{
    long long v;

    if (rbd_cmd_arg_ll(x, i, &v) != 0 || v < 1 || v > RB_RING_MAX_WEIGHT) {
        rbi_resp_error(x->out, "ERR weight must be an integer in [1, %d]", RB_RING_MAX_WEIGHT);
        return -1;
    }
    *w = (uint32_t)v;
    return 0;
}

static int node_name_ok(rbd_ctx_t *x, size_t i)
{
    if (rbd_cmd_arg_name(x, i, "node", RB_NODE_NAME_MAX) != 0)
        return -1;
    if (memchr(x->argv[i], '\0', x->argl[i]) != NULL) {
        rbi_resp_error(x->out, "ERR node name may not contain NUL bytes");
        return -1;
    }
    return 0;
}

/* Logs the change x asked for: its words (bytes outside printable ASCII
 * as \xHH, at most ~200 bytes) and the peer's uid and pid; how: "made"
 * or "sent to etcd". */
static void log_change(const rbd_ctx_t *x, const char *how)
{
    char words[256];
    size_t w = (size_t)snprintf(words, sizeof(words), "%s", x->cmd->name);

    for (size_t i = 1; i < x->argc && w < 200; i++) {
        words[w++] = ' ';
        for (size_t j = 0; j < x->argl[i] && w < 200; j++) {
            unsigned char ch = (unsigned char)x->argv[i][j];
            if (isprint(ch) && ch != '\\')
                words[w++] = (char)ch;
            else
                w += (size_t)snprintf(words + w, sizeof(words) - w, "\\x%02x", ch);
        }
    }
    words[w < sizeof(words) ? w : sizeof(words) - 1] = '\0';
    rbd_log(LOG_NOTICE, "ring change %s: %s%s (uid %u, pid %d)", how, words,
            w >= 200 ? "..." : "", (unsigned)x->c->uid, (int)x->c->pid);
}

/* Runs a ring op and replies OK, or why it failed; a sink may take it
 * (sink.h: with ring-source etcd the source makes it in etcd) and answer
 * later through its ticket, the client's later requests waiting for that
 * (never inside an EXEC: CMD_RING_SOURCE refuses the change when queued). */
static void run(rbd_ctx_t *x, rbd_op_t *op)
{
    /* A change of one node (its name argument 1) names it when it is
     * missing or already there; the old words stay the reply's start. */
    int named = op->type == RBD_OP_RING_ADD || op->type == RBD_OP_RING_REMOVE ||
                op->type == RBD_OP_RING_WEIGHT || op->type == RBD_OP_RING_STATE;
    char q[RBD_QUOTED_CAP];
    int rc;

    op->client = x->c->id;
    rc = rbd_op_run(&x->s->state, &x->s->aof, op);
    if (rc == RBD_OP_DEFERRED) {
        log_change(x, "sent to etcd");
        return;   /* client.c marks the client awaits_reply */
    }
    if (rc == RBD_OP_EREPLY) {
        rbi_resp_error(x->out, "%s", op->why);
    } else if (rc == RB_OK) {
        if (!op->noop)
            log_change(x, "made");
        rbi_resp_simple(x->out, "OK");
    } else if (named && (rc == RB_ENOENT || rc == RB_EEXIST)) {
        rbi_resp_error(x->out, rc == RB_ENOENT ? "ERR no such node %s (RING.NODES lists "
                       "the ring's)" : "ERR node exists: %s (RING.WEIGHT and RING.UP, "
                       "DOWN or DRAIN change it)", rbd_cmd_arg_quoted(x, 1, q, sizeof(q)));
    } else
        rbd_cmd_error(x, op->publish_failed ? RBD_AT_PUBLISH : RBD_AT_NODE, rc);
}

/* Refuses a change that would give the ring more than max-ring-points
 * points (every change rebuilds them all, on the event loop), unless it
 * gives it no more than it has: 0, or replies and returns -1.  name NULL:
 * a mode change (ops, replicas); else node name at `weight`. */
static int points_ok(rbd_ctx_t *x, const rbi_ring_mode_ops_t *ops, const char *name, size_t len,
                     uint32_t weight, uint32_t replicas)
{
    const rb_ring_t *r = x->s->state.ring;
    uint64_t after = rbi_ring_points_with(r, ops, name, len, weight, replicas);

    if (after <= x->s->cfg.max_ring_points || after <= rbi_ring_points_with(r, NULL, NULL, 0, 0, 0))
        return 0;
    rbi_resp_error(x->out, "ERR the ring would have up to %llu points, more than max-ring-points "
                   "(%u)", (unsigned long long)after, x->s->cfg.max_ring_points);
    return -1;
}

static void cmd_ring_add(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_RING_ADD, .name = x->argv[1], .len = x->argl[1],
                    .weight = 1 };

    if (x->argc > 3) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (node_name_ok(x, 1) != 0 || (x->argc == 3 && parse_weight(x, 2, &op.weight) != 0))
        return;
    if (rb_ring_node_count(x->s->state.ring) >= x->s->cfg.max_nodes) {
        rbi_resp_error(x->out, "ERR max number of nodes reached (max-nodes is %u)",
                   x->s->cfg.max_nodes);
        return;
    }
    if (points_ok(x, NULL, op.name, op.len, op.weight, 0) == 0)
        run(x, &op);
}

static void cmd_ring_remove(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_RING_REMOVE, .name = x->argv[1], .len = x->argl[1] };

    if (node_name_ok(x, 1) == 0)
        run(x, &op);
}

static void cmd_ring_weight(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_RING_WEIGHT, .name = x->argv[1], .len = x->argl[1] };

    size_t at;

    if (node_name_ok(x, 1) != 0 || parse_weight(x, 2, &op.weight) != 0)
        return;
    /* A node that is not there: the op says so. */
    if (rbi_ring_node_find(x->s->state.ring, op.name, op.len, &at) &&
        points_ok(x, NULL, op.name, op.len, op.weight, 0) != 0)
        return;
    run(x, &op);
}

/* Whether RING.DOWN of node argv[1] stays within ring-down-max-percent:
 * the nodes not up (down or draining) afterwards are at most that share
 * of the nodes, as Envoy's healthy panic threshold keeps at least half of
 * a cluster in use by default.  Checked here, where every reporter's
 * RING.DOWN arrives (an nginx report, the CLI, a script), never in the op:
 * a replay applies what was logged.  A node already not up, or unknown
 * (the op names it), passes.  1, or 0 and the refusal replied. */
static int down_within_share(rbd_ctx_t *x)
{
    uint32_t pct = x->s->cfg.ring_down_max_percent;
    rb_ring_stat_t st;

    if (pct >= 100 || rb_ring_state(x->s->state.ring, x->argv[1], x->argl[1]) != RB_NODE_UP ||
        rb_ring_stat(x->s->state.seg, &st) != RB_OK)
        return 1;
    if ((uint64_t)(st.down + 1) * 100 <= (uint64_t)pct * st.nodes)
        return 1;
    rbi_resp_error(x->out, "ERR RING.DOWN refused: %u of %u nodes would be down or draining, "
                   "past ring-down-max-percent (%u%%)", st.down + 1, st.nodes, pct);
    return 0;
}

/* RING.UP / RING.DOWN / RING.DRAIN node: the state is the command's
 * name after "RING." (rb_node_state_parse). */
static void cmd_ring_state(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_RING_STATE, .name = x->argv[1], .len = x->argl[1] };
    rb_node_state_t st;

    if (rb_node_state_parse(x->argv[0] + 5, x->argl[0] - 5, &st) != RB_OK) {
        rbi_resp_error(x->out, "ERR unknown node state");   /* a table row out of step */
        return;
    }
    op.state = (uint32_t)st;
    if (node_name_ok(x, 1) == 0 && (st != RB_NODE_DOWN || down_within_share(x)))
        run(x, &op);
}

/* The largest maglev table: the largest prime <= 2^24 (RB_RING_MAX_POINTS). */
/* RING.MODE's second argument, as the mode table says (ring_mode.h): a
 * table mode's table size (size_rule; param_ok decides), none for a table
 * mode whose parameter is no size, else the replica count.  0 and *v set,
 * or -1 and the error replied. */
static int parse_mode_arg(rbd_ctx_t *x, const rbi_ring_mode_ops_t *m, long long *v)
{
    if (m->table && m->size_rule == NULL) {
        rbi_resp_error(x->out, "ERR %s mode takes no replicas or table size", m->name);
        return -1;
    }
    if (m->table) {
        if (rbd_cmd_arg_ll(x, 2, v) != 0 || *v < 2 || *v > m->param_max ||
            !m->param_ok((uint32_t)*v)) {
            rbi_resp_error(x->out, "ERR table size must be %s in [2, %u]", m->size_rule,
                           m->param_max);
            return -1;
        }
        return 0;
    }
    if (rbd_cmd_arg_ll(x, 2, v) != 0 || *v < 1 || *v > RB_RING_MAX_REPLICAS) {
        rbi_resp_error(x->out, "ERR replicas must be an integer in [1, %d]", RB_RING_MAX_REPLICAS);
        return -1;
    }
    return 0;
}

/* RING.MODE mode [replicas | table_size]: maglev without a size has an
 * automatic one (op.replicas 0: logged as such, unlike the vnode modes'
 * 0 that keeps the count in force). */
static void cmd_ring_mode(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_RING_MODE };
    rb_ring_mode_t mode;
    long long v;

    if (x->argc > 3) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (rb_ring_mode_parse(x->argv[1], x->argl[1], &mode) != RB_OK) {
        rbi_resp_error(x->out,
                       "ERR unknown ring mode '%.*s' (xxh3, ketama, nginx, seed, maglev or slots)",
                       (int)x->argl[1], x->argv[1]);
        return;
    }
    if (x->argc == 3) {
        if (parse_mode_arg(x, rbi_ring_mode_ops(mode), &v) != 0)
            return;
        op.replicas = (uint32_t)v;
    }
    if (rbi_ring_mode_ops(mode)->size_rule != NULL && op.replicas > x->s->cfg.max_ring_points) {
        rbi_resp_error(x->out, "ERR a table of %u slots is more than max-ring-points (%u)",
                       op.replicas, x->s->cfg.max_ring_points);
        return;
    }
    op.mode = (uint32_t)mode;
    if (points_ok(x, rbi_ring_mode_ops(mode), NULL, 0, 0, op.replicas) == 0)
        run(x, &op);
}

/* RING.SLOTS with no argument: [start, end, node] per run of slots with
 * one owner, read from the published ring as any reader's (its node list
 * and its table read again if a publish came between them). */
static void reply_slots(rbd_ctx_t *x)
{
    rb_ring_range_t *rg = malloc(RB_RING_SLOT_COUNT * sizeof(*rg));
    rb_node_t *nodes = NULL;
    rb_ring_stat_t st;
    size_t nn = 0, nr = 0;
    int rc = rg ? RB_EBUSY : RB_ENOMEM;

    for (int t = 0; t < 8 && rc == RB_EBUSY; t++) {
        free(nodes);
        nodes = NULL;
        if ((rc = rb_ring_stat(x->s->state.seg, &st)) != RB_OK)
            break;
        if (!rbi_ring_mode_map_settable(st.mode)) {
            rbi_resp_error(x->out, "ERR the ring is not in slots mode");
            free(rg);
            return;
        }
        nodes = malloc((st.nodes ? st.nodes : 1) * sizeof(*nodes));
        rc = nodes ? rb_ring_nodes(x->s->state.seg, nodes, st.nodes, &nn) : RB_ENOMEM;
        if (rc == RB_OK)
            rc = rb_ring_ranges(x->s->state.seg, rg, RB_RING_SLOT_COUNT, &nr);
        if (rc == RB_OK && (nn > st.nodes || nr > RB_RING_SLOT_COUNT ||
                            (nr > 0 && (nn == 0 || rg[0].version != nodes[0].version))))
            rc = RB_EBUSY;   /* a publish between the reads */
    }
    if (rc != RB_OK) {
        rbd_cmd_error(x, RBD_AT_RING, rc);
    } else {
        rbi_resp_array(x->out, nr);
        for (size_t i = 0; i < nr; i++) {
            rbi_resp_array(x->out, 3);
            rbi_resp_int(x->out, rg[i].start);
            rbi_resp_int(x->out, rg[i].end);
            rbi_resp_bulk(x->out, nodes[rg[i].node].name, nodes[rg[i].node].name_len);
        }
    }
    free(nodes);
    free(rg);
}

/* A slot number argument: 0 and *v, or -1 and the error replied. */
static int parse_slot(rbd_ctx_t *x, size_t i, uint32_t *v)
{
    long long n;

    if (rbd_cmd_arg_ll(x, i, &n) != 0 || n < 0 || n >= RB_RING_SLOT_COUNT) {
        rbi_resp_error(x->out, "ERR slot must be an integer in [0, %d]", RB_RING_SLOT_COUNT - 1);
        return -1;
    }
    *v = (uint32_t)n;
    return 0;
}

/* RING.SLOTS start end node [start end node ...] | BALANCE: all the
 * ranges or none (ops.c puts the model back if one fails). */
static void cmd_ring_slots(rbd_ctx_t *x)
{
    rbd_op_t op = { .type = RBD_OP_RING_SLOTS };
    size_t n = (x->argc - 1) / 3;
    unsigned char *buf;
    rb_key_t *keys;

    if (x->argc == 1) {
        reply_slots(x);
        return;
    }
    if (!rbi_ring_mode_map_settable(rb_ring_mode(x->s->state.ring))) {
        rbi_resp_error(x->out, "ERR the ring is not in slots mode");
        return;
    }
    if (x->argc == 2 && rbd_cmd_arg_is(x, 1, "BALANCE")) {
        run(x, &op);
        return;
    }
    if ((x->argc - 1) % 3 != 0) {
        rbi_resp_error(x->out, "ERR syntax error: RING.SLOTS start end node [start end node ...]");
        return;
    }
    keys = malloc(n * sizeof(*keys));
    buf = malloc(n * (RBD_SLOTS_RANGE_HDR + RB_NODE_NAME_MAX));
    if (keys == NULL || buf == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        size_t a = 1 + 3 * i;
        uint32_t start, end;
        unsigned char *b = buf + i * (RBD_SLOTS_RANGE_HDR + RB_NODE_NAME_MAX);
        if (parse_slot(x, a, &start) != 0 || parse_slot(x, a + 1, &end) != 0 ||
            node_name_ok(x, a + 2) != 0)
            break;
        if (start > end) {
            rbi_resp_error(x->out, "ERR start slot %u is after end slot %u", start, end);
            break;
        }
        keys[i] = (rb_key_t){ b, rbd_slots_range(b, start, end, x->argv[a + 2], x->argl[a + 2]) };
        op.nkeys = i + 1;
    }
    if (n > 0 && op.nkeys == n) {
        op.keys = keys;
        run(x, &op);
    }
    free(keys);
    free(buf);
}

/* RING.NODES [WITHSTATES]: [name, weight] per node, or [name, weight,
 * state] (the shape of before stays the default). */
static void cmd_ring_nodes(rbd_ctx_t *x)
{
    rb_ring_stat_t st;
    rb_node_t *nodes = NULL;
    size_t count = 0;
    int with = x->argc == 2, rc;

    if (x->argc > 2) {
        rbd_cmd_wrong_arity(x);
        return;
    }
    if (with && !rbd_cmd_arg_is(x, 1, "WITHSTATES")) {
        rbi_resp_error(x->out, "ERR syntax error (RING.NODES [WITHSTATES])");
        return;
    }
    rc = rb_ring_stat(x->s->state.seg, &st);

    if (rc == RB_OK && st.nodes > 0) {
        nodes = malloc(st.nodes * sizeof(*nodes));
        rc = nodes ? rb_ring_nodes(x->s->state.seg, nodes, st.nodes, &count) : RB_ENOMEM;
    }
    if (rc != RB_OK) {
        free(nodes);
        rbd_cmd_error(x, RBD_AT_RING, rc);
        return;
    }
    rbi_resp_array(x->out, count);
    for (size_t i = 0; i < count; i++) {
        rbi_resp_array(x->out, with ? 3 : 2);
        rbi_resp_bulk(x->out, nodes[i].name, nodes[i].name_len);
        rbi_resp_int(x->out, nodes[i].weight);
        if (with)
            rbi_resp_bulk_str(x->out, rb_node_state_name((rb_node_state_t)nodes[i].state));
    }
    free(nodes);
}

static void cmd_ring_get(rbd_ctx_t *x)
{
    rb_node_t n;
    int rc;

    if (rbd_cmd_arg_key(x, 1) != 0)
        return;
    rc = rb_ring_lookup(x->s->state.seg, x->argv[1], x->argl[1], &n);
    if (rc != RB_OK)
        rbd_cmd_error(x, RBD_AT_RING, rc);
    else
        rbi_resp_bulk(x->out, n.name, n.name_len);
}

static void cmd_ring_getn(rbd_ctx_t *x)
{
    size_t have = rb_ring_node_count(x->s->state.ring);
    rb_node_t *nodes;
    long long n;
    int rc;

    if (rbd_cmd_arg_key(x, 1) != 0)
        return;
    if (rbd_cmd_arg_ll(x, 2, &n) != 0 || n < 1 || n > RB_RING_MAX_NODES) {
        rbi_resp_error(x->out, "ERR n must be an integer in [1, %d]", RB_RING_MAX_NODES);
        return;
    }
    /* No more answers than nodes: the reply buffer follows the ring, not
     * the request (n = 65535 on 3 nodes used to reserve ~17 MB). */
    if ((size_t)n > have && have > 0)
        n = (long long)have;
    nodes = malloc((size_t)n * sizeof(*nodes));
    if (nodes == NULL) {
        rbi_resp_error(x->out, "ERR out of memory");
        return;
    }
    rc = rb_ring_lookup_n(x->s->state.seg, x->argv[1], x->argl[1], nodes, (size_t)n);
    if (rc < 0) {
        rbd_cmd_error(x, RBD_AT_RING, rc);
    } else {
        rbi_resp_array(x->out, (size_t)rc);
        for (int i = 0; i < rc; i++)
            rbi_resp_bulk(x->out, nodes[i].name, nodes[i].name_len);
    }
    free(nodes);
}

static void cmd_ring_info(rbd_ctx_t *x)
{
    rb_ring_stat_t st;
    uint64_t rev;
    int rc = rb_ring_stat(x->s->state.seg, &st);

    if (rc != RB_OK) {
        rbd_cmd_error(x, RBD_AT_RING, rc);
        return;
    }
    rbi_resp_map(x->out, x->s->source != NULL ? 9 : 7);
    rbi_resp_simple(x->out, "Mode");
    rbi_resp_bulk_str(x->out, rb_ring_mode_name(rb_ring_mode(x->s->state.ring)));
    rbi_resp_simple(x->out, "Replicas");
    rbi_resp_int(x->out, rb_ring_replicas(x->s->state.ring));
    rbi_resp_simple(x->out, "Nodes");
    rbi_resp_int(x->out, st.nodes);
    rbi_resp_simple(x->out, "Nodes not up");
    rbi_resp_int(x->out, st.down);
    rbi_resp_simple(x->out, "Points");
    rbi_resp_int(x->out, st.points);
    rbi_resp_simple(x->out, "Version");
    rbi_resp_int(x->out, (long long)st.version);
    rbi_resp_simple(x->out, "Bytes per copy");
    rbi_resp_int(x->out, (long long)st.bytes);
    if (x->s->source == NULL)
        return;   /* a local ring: RING.INFO as it always was */
    rbi_resp_simple(x->out, "Source");
    rbi_resp_bulk_str(x->out, "etcd");
    rbi_resp_simple(x->out, "Source revision");
    rbi_resp_int(x->out, rb_ring_source_revision(x->s->state.seg, &rev) == RB_OK
                             ? (long long)rev : 0);
}

const rbd_command_t rbd_cmd_ring_table[] = {
    RBD_COMMAND("RING.ADD", -2, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_add, "ring",
                "Adds a node to the ring",
                "node [weight:integer]"),
    RBD_COMMAND("RING.REMOVE", 2, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_remove, "ring",
                "Removes a node from the ring",
                "node"),
    RBD_COMMAND("RING.WEIGHT", 3, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_weight, "ring",
                "Changes a node's weight",
                "node weight:integer"),
    RBD_COMMAND("RING.MODE", -2, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_mode, "ring",
                "Changes the ring's hash mode and replicas (maglev: its table size)",
                "(XXH3|KETAMA|NGINX|SEED|MAGLEV|SLOTS) [replicas:integer]"),
    RBD_COMMAND("RING.SLOTS", -1, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_slots, "ring",
                "Assigns slots to nodes or balances them (slots mode); lists them",
                "[BALANCE | (start:integer end:integer node)...]"),
    RBD_COMMAND("RING.DOWN", 2, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_state, "ring",
                "Marks a node down: its keys go to the next node clockwise",
                "node"),
    RBD_COMMAND("RING.UP", 2, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_state, "ring",
                "Marks a node up: it owns its keys again",
                "node"),
    RBD_COMMAND("RING.DRAIN", 2, CMD_WRITE | CMD_RING_SOURCE, cmd_ring_state, "ring",
                "Marks a node draining: new keys avoid it",
                "node"),
    RBD_COMMAND("RING.NODES", -1, 0, cmd_ring_nodes, "ring",
                "Returns the ring's nodes, weights and, with WITHSTATES, states",
                "[WITHSTATES]"),
    RBD_COMMAND("RING.GET", 2, CMD_FAST, cmd_ring_get, "ring",
                "Returns the node that owns a key",
                "key:string"),
    RBD_COMMAND("RING.GETN", 3, CMD_FAST, cmd_ring_getn, "ring",
                "Returns the first n distinct nodes that own a key",
                "key:string n:integer"),
    RBD_COMMAND("RING.INFO", 1, 0, cmd_ring_info, "ring",
                "Describes the published ring",
                ""),
    RBD_COMMAND_END,
};
