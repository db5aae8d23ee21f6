/*
 * _cbf.c - ringbloom.CountingBloomFilter: a counting Bloom filter of the
 * segment (CBF.RESERVE), read lock-free through its handle (rb_cbf_open,
 * rb_cbf_contains, rb_cbf_contains_many, rb_cbf_count, rb_cbf_info).  The
 * handle rebinds by name if the filter is deleted and made again; a name
 * that holds another kind raises WrongType (RB_EWRONGTYPE).  contains_many
 * releases the GIL as Filter's does (_named.c).
 */
#include "_ringbloom.h"

static int cbf_open(const rb_segment_t *seg, const char *name, size_t len, void **out)
{
    rb_cbf_t *h = NULL;
    int rc = rb_cbf_open(seg, name, len, &h);

    *out = h;
    return rc;
}

static void cbf_close(void *h)
{
    rb_cbf_close(h);
}

static int cbf_contains(const void *h, const void *key, size_t klen)
{
    return rb_cbf_contains(h, key, klen);
}

static int64_t cbf_contains_many(const void *h, const rb_key_t *keys, size_t n, uint8_t *out)
{
    return rb_cbf_contains_many(h, keys, n, out);
}

static const rbpy_kind_t cbf_kind = {"counting Bloom filter", "CountingBloomFilter", cbf_open,
                                     cbf_close, cbf_contains, cbf_contains_many};

static int Cbf_init(rbpy_named_t *self, PyObject *args, PyObject *kw)
{
    return rbpy_named_init(self, args, kw, &cbf_kind);
}

static int cbf_count(rbpy_named_t *self, const void *key, size_t klen, uint64_t *out)
{
    return rb_cbf_count(self->h, key, klen, out);
}

static PyObject *Cbf_count(rbpy_named_t *self, PyObject *key)
{
    return rbpy_named_key_count(self, key, cbf_count);
}

static PyObject *Cbf_info(rbpy_named_t *self, PyObject *unused)
{
    rb_cbf_info_t i;
    int rc;

    (void)unused;
    if (rbpy_named_ready(self) < 0)
        return NULL;
    if ((rc = rb_cbf_info(self->h, &i)) != RB_OK)
        return rbpy_named_raise(self, rc);
    return Py_BuildValue("{sKsKsIsIsKsdsKsKsK}", "bytes", (unsigned long long)i.bytes,
                         "counters", (unsigned long long)i.counters, "k", (unsigned)i.k,
                         "counter_bits", (unsigned)i.counter_bits, "capacity",
                         (unsigned long long)i.capacity, "error_rate", i.error_rate, "items",
                         (unsigned long long)i.items, "deletes", (unsigned long long)i.deletes,
                         "saturated", (unsigned long long)i.saturated);
}

static PyMethodDef Cbf_methods[] = {
    {"contains", (PyCFunction)rbpy_named_contains, METH_O,
     "contains(key) -> bool: True if key (str or bytes) may be present, False if it is not "
     "(never False for a key added and not deleted)."},
    {"contains_many", (PyCFunction)rbpy_named_contains_many, METH_O,
     "contains_many(iterable) -> list[bool]: contains for every key, in one batch "
     "(rb_cbf_contains_many), the GIL released meanwhile."},
    {"count", (PyCFunction)Cbf_count, METH_O,
     "count(key) -> int: the key's smallest counter (CBF.COUNT: at least the times key was "
     "added and not deleted, unless a counter saturated)."},
    {"info", (PyCFunction)Cbf_info, METH_NOARGS,
     "info() -> dict: the filter's figures (rb_cbf_info)."},
    RBPY_NAMED_METHODS};

PyTypeObject rbpy_CbfType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.CountingBloomFilter",
    .tp_basicsize = sizeof(rbpy_named_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CountingBloomFilter(instance, name, owner=None, socket=None): counting Bloom "
              "filter `name` of the instance (CBF.RESERVE), read from shared memory.  "
              "instance may be a Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Cbf_init,
    .tp_dealloc = (destructor)rbpy_named_dealloc,
    .tp_repr = (reprfunc)rbpy_named_repr,
    .tp_methods = Cbf_methods,
    .tp_members = rbpy_named_members,
    .tp_as_sequence = &rbpy_named_as_sequence,
};
