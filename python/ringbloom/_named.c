/*
 * _named.c - the reader of one named structure in the segment, the part
 * every kind's type shares (Filter, CuckooFilter, CountMinSketch,
 * HyperLogLog): open a library handle by name on a Segment, close it,
 * raise with the name as context, and the membership calls of the kinds
 * that have them (contains, contains_many).
 *
 * Threads: contains keeps the GIL (a ~100 ns lock-free library call).
 * contains_many releases it around the library's batch: the keys are
 * pinned first (rbpy_keys_pin), and the object counts the calls in flight
 * (busy, changed only under the GIL) so close() refuses (Busy) to free the
 * handle under them; each such call holds a reference, so dealloc never
 * runs with busy > 0.
 */
#include "_ringbloom.h"

#include <stdio.h>
#include <string.h>

int rbpy_named_init(rbpy_named_t *self, PyObject *args, PyObject *kw, const rbpy_kind_t *kind)
{
    static char *kwlist[] = {"instance", "name", "owner", "socket", NULL};
    PyObject *inst, *nameo, *owner = Py_None, *sock = Py_None;
    const char *name;
    Py_ssize_t nlen;
    char fmt[64];
    int rc;

    if (self->h != NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s is already initialised", kind->type);
        return -1;
    }
    self->kind = kind;
    snprintf(fmt, sizeof(fmt), "OO|OO:%s", kind->type);
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &inst, &nameo, &owner, &sock))
        return -1;
    if (rbpy_name_arg(nameo, &name, &nlen, "filter name") < 0)
        return -1;
    Py_CLEAR(self->segment);
    Py_CLEAR(self->name);
    if ((self->segment = rbpy_segment_of(inst, owner, sock)) == NULL)
        return -1;
    snprintf(self->cname, sizeof(self->cname), "%s", name);
    self->clen = strlen(self->cname);
    if ((rc = kind->open(self->segment->seg, name, (size_t)nlen, &self->h)) != RB_OK) {
        self->h = NULL;
        Py_CLEAR(self->segment);
        rbpy_named_raise(self, rc);
        return -1;
    }
    self->name = PyUnicode_DecodeUTF8(name, nlen, "surrogateescape");
    return self->name ? 0 : -1;
}

int rbpy_named_ready(rbpy_named_t *self)
{
    if (self->h == NULL) {
        PyErr_Format(PyExc_ValueError, "the %s is closed",
                     self->kind ? self->kind->type : Py_TYPE(self)->tp_name);
        return -1;
    }
    return 0;
}

PyObject *rbpy_named_raise(rbpy_named_t *self, int code)
{
    char ctx[400];

    snprintf(ctx, sizeof(ctx), "%s '%.300s'", self->kind->what, self->cname);
    return rbpy_raise(code, ctx);
}

PyObject *rbpy_self_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

void rbpy_named_dealloc(rbpy_named_t *self)
{
    if (self->h != NULL)
        self->kind->close(self->h);
    Py_XDECREF(self->segment);
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyObject *rbpy_named_repr(rbpy_named_t *self)
{
    return PyUnicode_FromFormat("<%s %R of %R%s>", Py_TYPE(self)->tp_name,
                                self->name ? self->name : Py_None,
                                self->segment ? self->segment->instance : Py_None,
                                self->h ? "" : " (closed)");
}

PyObject *rbpy_named_close(rbpy_named_t *self, PyObject *unused)
{
    char ctx[120];

    (void)unused;
    if (self->busy > 0) {
        snprintf(ctx, sizeof(ctx), "close: a call of another thread is using the %s",
                 self->kind->what);
        return rbpy_raise(RB_EBUSY, ctx);
    }
    if (self->h != NULL)
        self->kind->close(self->h);
    self->h = NULL;
    Py_CLEAR(self->segment);
    Py_RETURN_NONE;
}

PyObject *rbpy_named_exit(rbpy_named_t *self, PyObject *args)
{
    (void)args;
    return rbpy_named_close(self, NULL);
}

int rbpy_named_sq_contains(rbpy_named_t *self, PyObject *key)
{
    const char *p;
    Py_ssize_t n;
    Py_buffer v;
    int rc;

    if (rbpy_named_ready(self) < 0 || rbpy_key_bytes(key, &p, &n, &v) < 0)
        return -1;
    rc = self->kind->contains(self->h, p, (size_t)n);
    if (v.obj)
        PyBuffer_Release(&v);
    if (rc < 0) {
        rbpy_named_raise(self, rc);
        return -1;
    }
    return rc;
}

PyObject *rbpy_named_contains(rbpy_named_t *self, PyObject *key)
{
    int rc = rbpy_named_sq_contains(self, key);
    return rc < 0 ? NULL : PyBool_FromLong(rc);
}

PyObject *rbpy_named_contains_many(rbpy_named_t *self, PyObject *iterable)
{
    rbpy_keys_t b;
    PyObject *res = NULL;
    uint8_t *out;
    int64_t rc;

    if (rbpy_named_ready(self) < 0 || rbpy_keys_pin(&b, iterable) < 0)
        return NULL;
    if ((out = PyMem_Malloc(b.n ? (size_t)b.n : 1)) == NULL) {
        rbpy_keys_release(&b);
        return PyErr_NoMemory();
    }
    self->busy++;
    Py_INCREF(self);
    Py_BEGIN_ALLOW_THREADS
    rc = self->kind->contains_many(self->h, b.kv, (size_t)b.n, out);
    Py_END_ALLOW_THREADS
    self->busy--;
    Py_DECREF(self);
    if (rc < 0)
        rbpy_named_raise(self, (int)rc);
    else if ((res = PyList_New(b.n)) != NULL)
        for (Py_ssize_t i = 0; i < b.n; i++) {
            PyObject *t = out[i] ? Py_True : Py_False;
            Py_INCREF(t);
            PyList_SET_ITEM(res, i, t);
        }
    PyMem_Free(out);
    rbpy_keys_release(&b);
    return res;
}

PyObject *rbpy_named_key_count(rbpy_named_t *self, PyObject *key, rbpy_key_count_fn fn)
{
    const char *p;
    Py_ssize_t n;
    Py_buffer v;
    uint64_t count;
    int rc;

    if (rbpy_named_ready(self) < 0 || rbpy_key_bytes(key, &p, &n, &v) < 0)
        return NULL;
    rc = fn(self, p, (size_t)n, &count);
    if (v.obj)
        PyBuffer_Release(&v);
    if (rc != RB_OK)
        return rbpy_named_raise(self, rc);
    return PyLong_FromUnsignedLongLong(count);
}

PyMemberDef rbpy_named_members[] = {
    {"name", T_OBJECT_EX, offsetof(rbpy_named_t, name), READONLY, "the structure's name"},
    {"segment", T_OBJECT, offsetof(rbpy_named_t, segment), READONLY,
     "the Segment (None once closed)"},
    {NULL, 0, 0, 0, NULL}};

PySequenceMethods rbpy_named_as_sequence = {
    .sq_contains = (objobjproc)rbpy_named_sq_contains,
};
