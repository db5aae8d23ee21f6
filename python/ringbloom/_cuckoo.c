/*
 * _cuckoo.c - ringbloom.CuckooFilter: a cuckoo filter of the segment, read
 * lock-free through its handle (rb_cuckoo_open, rb_cuckoo_contains,
 * rb_cuckoo_contains_many, rb_cuckoo_count, rb_cuckoo_info).  The handle
 * rebinds by name if the filter is deleted and made again; a name that
 * holds another kind raises WrongType (RB_EWRONGTYPE).  contains_many
 * releases the GIL as Filter's does (_named.c).
 */
#include "_ringbloom.h"

static int cuckoo_open(const rb_segment_t *seg, const char *name, size_t len, void **out)
{
    return rb_cuckoo_open(seg, name, len, (rb_cuckoo_t **)out);
}

static void cuckoo_close(void *h)
{
    rb_cuckoo_close(h);
}

static int cuckoo_contains(const void *h, const void *key, size_t klen)
{
    return rb_cuckoo_contains(h, key, klen);
}

static int64_t cuckoo_contains_many(const void *h, const rb_key_t *keys, size_t n, uint8_t *out)
{
    return rb_cuckoo_contains_many(h, keys, n, out);
}

static const rbpy_kind_t cuckoo_kind = {"cuckoo filter", "CuckooFilter", cuckoo_open,
                                        cuckoo_close, cuckoo_contains, cuckoo_contains_many};

static int Cuckoo_init(rbpy_named_t *self, PyObject *args, PyObject *kw)
{
    return rbpy_named_init(self, args, kw, &cuckoo_kind);
}

static int cuckoo_count(rbpy_named_t *self, const void *key, size_t klen, uint64_t *out)
{
    return rb_cuckoo_count(self->h, key, klen, out);
}

static PyObject *Cuckoo_count(rbpy_named_t *self, PyObject *key)
{
    return rbpy_named_key_count(self, key, cuckoo_count);
}

static PyObject *Cuckoo_info(rbpy_named_t *self, PyObject *unused)
{
    rb_cuckoo_info_t i;
    int rc;

    (void)unused;
    if (rbpy_named_ready(self) < 0)
        return NULL;
    if ((rc = rb_cuckoo_info(self->h, &i)) != RB_OK)
        return rbpy_named_raise(self, rc);
    return Py_BuildValue("{sKsKsIsKsKsKsKsIsIsIsI}", "bytes", (unsigned long long)i.bytes,
                         "buckets", (unsigned long long)i.buckets, "layers", (unsigned)i.layers,
                         "items", (unsigned long long)i.items, "deletes",
                         (unsigned long long)i.deletes, "moves", (unsigned long long)i.moves,
                         "capacity", (unsigned long long)i.capacity, "bucket_size",
                         (unsigned)i.bucket_size, "max_iterations", (unsigned)i.max_iterations,
                         "expansion", (unsigned)i.expansion, "fp_bits", (unsigned)i.fp_bits);
}

static PyMethodDef Cuckoo_methods[] = {
    {"contains", (PyCFunction)rbpy_named_contains, METH_O,
     "contains(key) -> bool: True if key (str or bytes) may be present, False if it is not "
     "(never False for a key added and not deleted)."},
    {"contains_many", (PyCFunction)rbpy_named_contains_many, METH_O,
     "contains_many(iterable) -> list[bool]: contains for every key, in one batch "
     "(rb_cuckoo_contains_many), the GIL released meanwhile."},
    {"count", (PyCFunction)Cuckoo_count, METH_O,
     "count(key) -> int: the copies of key's fingerprint (CF.COUNT: at least the times key "
     "was added and not deleted)."},
    {"info", (PyCFunction)Cuckoo_info, METH_NOARGS,
     "info() -> dict: the filter's figures (rb_cuckoo_info)."},
    RBPY_NAMED_METHODS};

PyTypeObject rbpy_CuckooType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.CuckooFilter",
    .tp_basicsize = sizeof(rbpy_named_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CuckooFilter(instance, name, owner=None, socket=None): cuckoo filter `name` "
              "of the instance (CF.RESERVE), read from shared memory.  instance may be a "
              "Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Cuckoo_init,
    .tp_dealloc = (destructor)rbpy_named_dealloc,
    .tp_repr = (reprfunc)rbpy_named_repr,
    .tp_methods = Cuckoo_methods,
    .tp_members = rbpy_named_members,
    .tp_as_sequence = &rbpy_named_as_sequence,
};
