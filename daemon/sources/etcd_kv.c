/*
 * etcd_kv.c - the etcd client's reads and writes (daemon/sources/etcd.h): range
 * in pages at one revision (/v3/kv/range), transactions with one compare
 * (/v3/kv/txn), the guarded write on the prefix's guard key, compaction.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_impl.h"

void rbd_etcd_kvs_free(rbd_etcd_kvs_t *kvs)
{
    for (size_t i = 0; i < kvs->n; i++) {
        free(kvs->kv[i].key);
        free(kvs->kv[i].value);
    }
    free(kvs->kv);
    kvs->kv = NULL;
    kvs->n = 0;
}

/* Appends one kv of a range reply; 0 or an error. */
static int add_kv(rbd_etcd_t *e, rbd_etcd_kvs_t *out, size_t *cap, json_object *kv)
{
    rbd_etcd_kv_t *k;
    if (out->n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        rbd_etcd_kv_t *p = realloc(out->kv, c * sizeof(*p));
        if (!p)
            return RBD_ETCD_ENOMEM;
        out->kv = p;
        *cap = c;
    }
    k = &out->kv[out->n];
    memset(k, 0, sizeof(*k));
    k->key = etcd_rel_key(e, kv, &k->key_len);
    k->value = etcd_unb64(kv, "value", &k->value_len);
    if (!k->key || !k->value) {
        free(k->key);
        free(k->value);
        return etcd_fail(e, RBD_ETCD_EPROTO, "range: a kv with a bad key or value");
    }
    k->create_revision = etcd_int(kv, "create_revision");
    k->mod_revision = etcd_int(kv, "mod_revision");
    out->n++;
    return 0;
}

/* One page of at most limit keys from key `from` (full key, base64 JSON;
 * consumed): appends its kvs, sets *more. */
static int range_page(rbd_etcd_t *e, json_object *from, json_object *end, int64_t rev,
                      size_t limit, rbd_etcd_kvs_t *out, size_t *cap, int *more)
{
    json_object *req = json_object_new_object(), *reply = NULL, *kvs, *m;
    int rc = RBD_ETCD_ENOMEM;

    if (!req || !from || json_object_object_add(req, "key", from) != 0) {
        json_object_put(from);
        json_object_put(req);
        return rc;
    }
    json_object_object_add(req, "range_end", json_object_get(end));
    json_object_object_add(req, "limit", etcd_int_str((int64_t)limit));
    if (rev > 0)
        json_object_object_add(req, "revision", etcd_int_str(rev));
    rc = etcd_call(e, "/v3/kv/range", req, &reply);
    if (rc == 0) {
        if (out->revision == 0)
            out->revision = etcd_revision(reply);
        *more = json_object_object_get_ex(reply, "more", &m) && json_object_get_boolean(m);
        if (json_object_object_get_ex(reply, "kvs", &kvs)) {
            size_t n = json_object_array_length(kvs);
            for (size_t i = 0; i < n && rc == 0; i++)
                rc = add_kv(e, out, cap, json_object_array_get_idx(kvs, i));
            if (n == 0 && *more)
                rc = etcd_fail(e, RBD_ETCD_EPROTO, "range: \"more\" without kvs");
        } else if (*more) {
            rc = etcd_fail(e, RBD_ETCD_EPROTO, "range: \"more\" without kvs");
        }
    }
    json_object_put(req);
    json_object_put(reply);
    return rc;
}

int rbd_etcd_range(rbd_etcd_t *e, const char *sub, int64_t at_revision, rbd_etcd_kvs_t *out)
{
    json_object *end;
    size_t cap = 0, limit = e->page_limit;
    int more = 1, rc = 0;

    memset(out, 0, sizeof(*out));
    if (!sub || at_revision < 0)
        return etcd_fail(e, RBD_ETCD_EINVAL, "range: bad arguments");
    if (!(end = etcd_range_end(e, sub)))
        return RBD_ETCD_ENOMEM;
    while (more && rc == 0) {
        int first = out->n == 0;   /* a first page that is empty ends the range */
        json_object *from;
        more = 0;
        if (first) {
            from = etcd_key(e, sub, strlen(sub));
        } else {
            /* The next page starts just after the last key: key + "\0"
             * (its bytes, a NUL among them). */
            const char *last = out->kv[out->n - 1].key;
            size_t l = out->kv[out->n - 1].key_len;
            char *k = malloc(l + 2);
            from = NULL;
            if (k) {
                memcpy(k, last, l + 1);
                from = etcd_key(e, k, l + 1);
                free(k);
            }
        }
        rc = range_page(e, from, end, first ? at_revision : out->revision, limit, out, &cap,
                        &more);
        if (rc == RBD_ETCD_ETOOBIG && limit > 1) {
            /* Large values (another tool's, under the prefix): the same
             * page again with half the keys, down to one key a page, so
             * that only a single key above max_reply fails the range. */
            limit /= 2;
            rc = 0;
            more = 1;
            continue;
        }
        if (first && at_revision > 0)
            out->revision = at_revision;   /* the header says the latest one */
    }
    json_object_put(end);
    if (rc != 0)
        rbd_etcd_kvs_free(out);
    return rc;
}

/* {"request_put": {key, value}} or {"request_delete_range": {key}}. */
static json_object *txn_op(rbd_etcd_t *e, const rbd_etcd_op_t *op)
{
    json_object *o = json_object_new_object(), *r = json_object_new_object();

    if (!o || !r || !op->key) {
        json_object_put(o);
        json_object_put(r);
        return NULL;
    }
    json_object_object_add(r, "key", etcd_key(e, op->key, strlen(op->key)));
    if (op->value)
        json_object_object_add(r, "value", etcd_b64(op->value, op->value_len));
    json_object_object_add(o, op->value ? "request_put" : "request_delete_range", r);
    return o;
}

/* The txn request: compare, ops on success, a range of cmp_key on failure. */
static json_object *txn_request(rbd_etcd_t *e, const char *cmp_key, int64_t rev,
                                const rbd_etcd_op_t *ops, size_t n_ops)
{
    json_object *req = json_object_new_object(), *cmp = json_object_new_object();
    json_object *cmps = json_object_new_array(), *succ = json_object_new_array();
    json_object *fail = json_object_new_array(), *rr = json_object_new_object();
    json_object *rng = json_object_new_object();
    int ok = req && cmp && cmps && succ && fail && rr && rng;

    if (ok) {
        /* A key that does not exist compares as all zeros (etcd's
         * applyCompare): create_revision == 0 is "absent". */
        json_object_object_add(cmp, "target", json_object_new_string(rev ? "MOD" : "CREATE"));
        json_object_object_add(cmp, "result", json_object_new_string("EQUAL"));
        json_object_object_add(cmp, "key", etcd_key(e, cmp_key, strlen(cmp_key)));
        json_object_object_add(cmp, rev ? "mod_revision" : "create_revision", etcd_int_str(rev));
        json_object_array_add(cmps, cmp);
        cmp = NULL;
        for (size_t i = 0; i < n_ops && ok; i++) {
            json_object *op = txn_op(e, &ops[i]);
            ok = op && json_object_array_add(succ, op) == 0;
        }
        json_object_object_add(rr, "key", etcd_key(e, cmp_key, strlen(cmp_key)));
        json_object_object_add(rng, "request_range", rr);
        rr = NULL;
        json_object_array_add(fail, rng);
        rng = NULL;
        json_object_object_add(req, "compare", cmps);
        json_object_object_add(req, "success", succ);
        json_object_object_add(req, "failure", fail);
        cmps = succ = fail = NULL;
    }
    json_object_put(cmp);
    json_object_put(cmps);
    json_object_put(succ);
    json_object_put(fail);
    json_object_put(rr);
    json_object_put(rng);
    if (!ok) {
        json_object_put(req);
        return NULL;
    }
    return req;
}

/* The mod_revision of the failure branch's range (0: key absent). */
static int64_t failed_current(json_object *reply)
{
    json_object *rs, *r0, *rr, *kvs;

    if (!json_object_object_get_ex(reply, "responses", &rs) ||
        json_object_array_length(rs) < 1 || !(r0 = json_object_array_get_idx(rs, 0)) ||
        !json_object_object_get_ex(r0, "response_range", &rr) ||
        !json_object_object_get_ex(rr, "kvs", &kvs) || json_object_array_length(kvs) < 1)
        return 0;
    return etcd_int(json_object_array_get_idx(kvs, 0), "mod_revision");
}

int rbd_etcd_txn(rbd_etcd_t *e, const char *cmp_key, int64_t cmp_mod_revision,
                 const rbd_etcd_op_t *ops, size_t n_ops, int64_t *revision, int64_t *current)
{
    json_object *req, *reply = NULL, *s;
    int rc;

    if (!cmp_key || cmp_mod_revision < 0 || (n_ops && !ops))
        return etcd_fail(e, RBD_ETCD_EINVAL, "txn: bad arguments");
    if (!(req = txn_request(e, cmp_key, cmp_mod_revision, ops, n_ops)))
        return RBD_ETCD_ENOMEM;
    rc = etcd_call(e, "/v3/kv/txn", req, &reply);
    if (rc == 0) {
        *revision = etcd_revision(reply);
        /* "succeeded" is left out when false (zero values are omitted). */
        if (!json_object_object_get_ex(reply, "succeeded", &s) || !json_object_get_boolean(s)) {
            int64_t cur = failed_current(reply);
            if (current)
                *current = cur;
            rc = etcd_fail(e, RBD_ETCD_ECONFLICT, "txn: %s's mod_revision is %lld, not %lld",
                           cmp_key, (long long)cur, (long long)cmp_mod_revision);
        }
    }
    json_object_put(req);
    json_object_put(reply);
    return rc;
}

int rbd_etcd_guarded(rbd_etcd_t *e, int64_t seen_revision, const rbd_etcd_op_t *ops,
                     size_t n_ops, int64_t *revision, int64_t *current)
{
    rbd_etcd_op_t *all;
    char v[24];
    int rc;

    if (n_ops > 1000 || (n_ops && !ops) || seen_revision < 0)
        return etcd_fail(e, RBD_ETCD_EINVAL, "guarded: bad arguments");
    if (!(all = malloc((n_ops + 1) * sizeof(*all))))
        return RBD_ETCD_ENOMEM;
    if (n_ops)
        memcpy(all, ops, n_ops * sizeof(*all));
    snprintf(v, sizeof(v), "%lld", (long long)seen_revision);
    all[n_ops] = (rbd_etcd_op_t){ .key = RBD_ETCD_GUARD_KEY, .value = v, .value_len = strlen(v) };
    rc = rbd_etcd_txn(e, RBD_ETCD_GUARD_KEY, seen_revision, all, n_ops + 1, revision, current);
    free(all);
    return rc;
}

int rbd_etcd_compact(rbd_etcd_t *e, int64_t revision)
{
    json_object *req = json_object_new_object(), *reply = NULL;
    int rc = RBD_ETCD_ENOMEM;

    if (req && json_object_object_add(req, "revision", etcd_int_str(revision)) == 0)
        rc = etcd_call(e, "/v3/kv/compaction", req, &reply);
    json_object_put(req);
    json_object_put(reply);
    return rc;
}
