/*
 * _tinylfu.c - ringbloom.TinyLFU: TinyLFU's admission test on a pair
 * ADMIT.RESERVE made (an aging 4-bit count-min sketch "name" and its
 * doorkeeper Bloom filter "name:dk"), read lock-free through the
 * library's handle (rb_tinylfu_open, rb_tinylfu_admit_h: one section of
 * the sketch for both keys, no directory scan and no allocation per call;
 * the handle rebinds by name if the sketch is made again).  A reader:
 * accesses are recorded through the daemon (ADMIT.TOUCH: Client.admit_touch,
 * or ringbloom.Admission on the pair).  A name that holds another kind
 * raises WrongType; a missing sketch NotFound (a missing doorkeeper holds
 * nothing).
 */
#include "_ringbloom.h"

static int tinylfu_open(const rb_segment_t *seg, const char *name, size_t len, void **out)
{
    return rb_tinylfu_open(seg, name, len, (rb_tinylfu_t **)out);
}

static void tinylfu_close(void *h)
{
    rb_tinylfu_close(h);
}

static const rbpy_kind_t tinylfu_kind = {"TinyLFU pair", "TinyLFU", tinylfu_open, tinylfu_close,
                                         NULL, NULL};

static int Tinylfu_init(rbpy_named_t *self, PyObject *args, PyObject *kw)
{
    return rbpy_named_init(self, args, kw, &tinylfu_kind);
}

/* admit(candidate, victim): rb_tinylfu_admit_h, the GIL kept (a call of a
 * few hundred nanoseconds). */
static PyObject *Tinylfu_admit(rbpy_named_t *self, PyObject *args)
{
    PyObject *co, *vo;
    const char *c, *v;
    Py_ssize_t cn, vn;
    Py_buffer cb, vb;
    int rc, admit = 0;

    if (!PyArg_ParseTuple(args, "OO:admit", &co, &vo) || rbpy_named_ready(self) < 0)
        return NULL;
    if (rbpy_key_bytes(co, &c, &cn, &cb) < 0)
        return NULL;
    if (rbpy_key_bytes(vo, &v, &vn, &vb) < 0) {
        if (cb.obj)
            PyBuffer_Release(&cb);
        return NULL;
    }
    rc = rb_tinylfu_admit_h(self->h, c, (size_t)cn, v, (size_t)vn, &admit);
    if (cb.obj)
        PyBuffer_Release(&cb);
    if (vb.obj)
        PyBuffer_Release(&vb);
    if (rc != RB_OK)
        return rbpy_named_raise(self, rc);
    return PyBool_FromLong(admit);
}

static PyMethodDef Tinylfu_methods[] = {
    {"admit", (PyCFunction)Tinylfu_admit, METH_VARARGS,
     "admit(candidate, victim) -> bool: True iff TinyLFU's estimate of candidate (the "
     "sketch's count, + 1 if the doorkeeper holds it) beats victim's (ADMIT.QUERY's "
     "answer, read from shared memory)."},
    RBPY_NAMED_METHODS};

PyTypeObject rbpy_TinylfuType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.TinyLFU",
    .tp_basicsize = sizeof(rbpy_named_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TinyLFU(instance, name, owner=None, socket=None): the TinyLFU pair `name` "
              "(ADMIT.RESERVE) of the instance, read from shared memory.  instance may be a "
              "Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Tinylfu_init,
    .tp_dealloc = (destructor)rbpy_named_dealloc,
    .tp_repr = (reprfunc)rbpy_named_repr,
    .tp_methods = Tinylfu_methods,
    .tp_members = rbpy_named_members,
};
