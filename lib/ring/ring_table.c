/*
 * ring_table.c - the writer's model of a table mode's ring (ring_mode.h:
 * maglev, slots): the table as points (slot i at i << RBI_RING_TABLE_SHIFT,
 * its owner's index), made by the mode's fill or taken from an explicit
 * map, and the edits membership changes make to an explicit map.
 *
 * Workload: one table per membership change (every slot may move: the
 * table is rebuilt, O(M) plus the fill), at most 2^24 slots.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ring_model.h"

/* The owners of r's table under ops and param, in a new array (*m slots). */
static int table_owners(const rb_ring_t *r, const rbi_ring_mode_ops_t *ops, uint32_t param,
                        uint32_t **out, uint64_t *m)
{
    uint64_t size = ops->table_size(param, r->nnodes);
    uint32_t *t = malloc((size ? size : 1) * sizeof(*t));
    int rc = RB_OK;

    if (t == NULL)
        return RB_ENOMEM;
    if (r->map != NULL && r->nmap == size)
        memcpy(t, r->map, size * sizeof(*t));
    else if (size != 0)
        rc = ops->fill(r->nodes, r->nnodes, size, t);
    if (rc != RB_OK) {
        free(t);
        return rc;
    }
    *out = t;
    *m = size;
    return RB_OK;
}

int rbi_ring_table_points(const rb_ring_t *r, const rbi_ring_mode_ops_t *ops, uint32_t param,
                          ring_point_t **out, size_t *n)
{
    ring_point_t *p;
    uint32_t *t;
    uint64_t m;
    int rc = table_owners(r, ops, param, &t, &m);

    if (rc != RB_OK)
        return rc;
    p = malloc((m ? m : 1) * sizeof(*p));
    if (p == NULL) {
        free(t);
        return RB_ENOMEM;
    }
    /* Positions are distinct and ascending: the table order already. */
    for (uint64_t i = 0; i < m; i++)
        p[i] = (ring_point_t){ i << RBI_RING_TABLE_SHIFT, t[i], (uint32_t)i };
    free(t);
    *out = p;
    *n = (size_t)m;
    return RB_OK;
}

int rbi_ring_table_make_explicit(rb_ring_t *r)
{
    uint32_t *t;
    uint64_t m;
    int rc;

    if (r->map != NULL)
        return RB_OK;
    rc = table_owners(r, r->ops, r->tparam, &t, &m);
    if (rc != RB_OK)
        return rc;
    r->map = t;
    r->nmap = (size_t)m;
    return RB_OK;
}

void rbi_ring_table_node_added(rb_ring_t *r, size_t at)
{
    for (size_t s = 0; r->map != NULL && s < r->nmap; s++)
        r->map[s] += r->map[s] >= at;
}

/* Drops the explicit map: balanced again (the mode's fill). */
static void drop_map(rb_ring_t *r)
{
    free(r->map);
    r->map = NULL;
    r->nmap = 0;
    r->tparam = 0;
}

void rbi_ring_table_node_removing(rb_ring_t *r, size_t at)
{
    size_t m = r->nmap, first = m;

    if (r->map == NULL)
        return;
    /* A slot it does not own, to start the walk from: its runs are then
     * whole, each ending just before a slot another node owns. */
    for (size_t s = 0; s < m && first == m; s++)
        if (r->map[s] != at)
            first = s;
    if (first == m || r->nnodes <= 1) {
        drop_map(r);
        return;
    }
    /* Walking anticlockwise from there, `heir` is the owner of the
     * nearest slot clockwise that node at does not own. */
    for (size_t k = 0, heir = r->map[first]; k < m; k++) {
        size_t s = (first + m - k) % m;
        if (r->map[s] == at)
            r->map[s] = (uint32_t)heir;
        else
            heir = r->map[s];
    }
    for (size_t s = 0; s < m; s++)
        r->map[s] -= r->map[s] > at;
}
