/*
 * _filter.c - ringbloom.Filter: a Bloom filter of the segment, read
 * lock-free (rb_bloom_open, rb_bloom_contains, rb_bloom_contains_many,
 * rb_bloom_info / rb_bloom_stat).  contains_many releases the GIL
 * (_named.c says how the keys and the handle stay alive meanwhile).
 */
#include "_ringbloom.h"

static int bloom_open(const rb_segment_t *seg, const char *name, size_t len, void **out)
{
    return rb_bloom_open(seg, name, len, (rb_bloom_t **)out);
}

static void bloom_close(void *h)
{
    rb_bloom_close(h);
}

static int bloom_contains(const void *h, const void *key, size_t klen)
{
    return rb_bloom_contains(h, key, klen);
}

static int64_t bloom_contains_many(const void *h, const rb_key_t *keys, size_t n, uint8_t *out)
{
    return rb_bloom_contains_many(h, keys, n, out);
}

static const rbpy_kind_t bloom_kind = {"filter", "Filter", bloom_open, bloom_close,
                                       bloom_contains, bloom_contains_many};

static int Filter_init(rbpy_named_t *self, PyObject *args, PyObject *kw)
{
    return rbpy_named_init(self, args, kw, &bloom_kind);
}

static PyObject *stat_dict(const rb_bloom_stat_t *s)
{
    return Py_BuildValue("{sssssIsIsIsIsIsKsIsKsKsKsdsKsKsdsdsK}", "name", s->name, "layout",
                         s->layout == RB_BLOOM_BLOCKED      ? "blocked"
                         : s->layout == RB_BLOOM_REDISBLOOM ? "redisbloom"
                                                            : "standard",
                         "flags",
                         (unsigned)s->flags, "expansion", (unsigned)s->expansion, "layers",
                         (unsigned)s->layers, "current", (unsigned)s->current, "window",
                         (unsigned)s->window, "rotations", (unsigned long long)s->rotations, "k",
                         (unsigned)s->k, "bits", (unsigned long long)s->bits, "bytes",
                         (unsigned long long)s->bytes, "capacity",
                         (unsigned long long)s->capacity, "error_rate", s->error_rate, "items",
                         (unsigned long long)s->items, "bits_set",
                         (unsigned long long)s->bits_set, "fill", s->fill, "est_fpr",
                         s->est_fpr, "memory", (unsigned long long)s->memory);
}

static PyObject *Filter_info(rbpy_named_t *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"scan", NULL};
    rb_bloom_stat_t s;
    int scan = 0, rc;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:info", kwlist, &scan) ||
        rbpy_named_ready(self) < 0)
        return NULL;
    rc = scan ? rb_bloom_stat(self->h, &s) : rb_bloom_info(self->h, &s);
    if (rc != RB_OK)
        return rbpy_raise(rc, "filter info");
    return stat_dict(&s);
}

static PyMethodDef Filter_methods[] = {
    {"contains", (PyCFunction)rbpy_named_contains, METH_O,
     "contains(key) -> bool: True if key (str or bytes) may have been added, False if it "
     "certainly was not."},
    {"contains_many", (PyCFunction)rbpy_named_contains_many, METH_O,
     "contains_many(iterable) -> list[bool]: contains for every key, in one batch "
     "(rb_bloom_contains_many), the GIL released meanwhile."},
    {"info", (PyCFunction)(void (*)(void))Filter_info, METH_VARARGS | METH_KEYWORDS,
     "info(scan=False) -> dict: the filter's figures (rb_bloom_info; scan=True: rb_bloom_stat, "
     "which counts set bits, O(bits))."},
    RBPY_NAMED_METHODS};

PyTypeObject rbpy_FilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.Filter",
    .tp_basicsize = sizeof(rbpy_named_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Filter(instance, name, owner=None, socket=None): Bloom filter `name` of the "
              "instance, read from shared memory.  instance may be a Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Filter_init,
    .tp_dealloc = (destructor)rbpy_named_dealloc,
    .tp_repr = (reprfunc)rbpy_named_repr,
    .tp_methods = Filter_methods,
    .tp_members = rbpy_named_members,
    .tp_as_sequence = &rbpy_named_as_sequence,
};
