/*
 * _hll.c - ringbloom.HyperLogLog: a HyperLogLog counter of the segment
 * (PFADD's), counted lock-free through its handle (rb_hll_open,
 * rb_hll_card: PFCOUNT's answer), or with others by name (rb_hll_count:
 * PFCOUNT of several keys), and its registers read (rb_hll_registers).  The handle names the counter: deleted and made
 * again, it counts the new one (0 while there is none).
 */
#include "_ringbloom.h"

static int hll_open(const rb_segment_t *seg, const char *name, size_t len, void **out)
{
    return rb_hll_open(seg, name, len, (rb_hll_t **)out);
}

static void hll_close(void *h)
{
    rb_hll_close(h);
}

static const rbpy_kind_t hll_kind = {"counter", "HyperLogLog", hll_open, hll_close, NULL, NULL};

static int Hll_init(rbpy_named_t *self, PyObject *args, PyObject *kw)
{
    return rbpy_named_init(self, args, kw, &hll_kind);
}

/* count(*others): one counter through the handle (rb_hll_card), or the
 * union with the counters named by others (rb_hll_count, as PFCOUNT of
 * several keys: a missing one counts as empty). */
static PyObject *Hll_count(rbpy_named_t *self, PyObject *others)
{
    Py_ssize_t n = PyTuple_GET_SIZE(others), len;
    rb_key_t *names;
    uint64_t card;
    int rc;

    if (rbpy_named_ready(self) < 0)
        return NULL;
    if (n == 0) {
        rc = rb_hll_card(self->h, &card);
        return rc != RB_OK ? rbpy_named_raise(self, rc) : PyLong_FromUnsignedLongLong(card);
    }
    if ((names = PyMem_Malloc((size_t)(n + 1) * sizeof(*names))) == NULL)
        return PyErr_NoMemory();
    names[0].ptr = self->cname;
    names[0].len = self->clen;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *p;

        if (rbpy_name_arg(PyTuple_GET_ITEM(others, i), &p, &len, "counter name") < 0) {
            PyMem_Free(names);
            return NULL;
        }
        names[i + 1].ptr = p;   /* held by the others tuple for the call */
        names[i + 1].len = (size_t)len;
    }
    rc = rb_hll_count(self->segment->seg, names, (size_t)n + 1, &card);
    PyMem_Free(names);
    return rc != RB_OK ? rbpy_named_raise(self, rc) : PyLong_FromUnsignedLongLong(card);
}

static PyObject *Hll_registers(rbpy_named_t *self, PyObject *unused)
{
    PyObject *b;
    int rc;

    (void)unused;
    if (rbpy_named_ready(self) < 0)
        return NULL;
    if ((b = PyBytes_FromStringAndSize(NULL, RB_HLL_REGISTERS)) == NULL)
        return NULL;
    rc = rb_hll_registers(self->segment->seg, self->cname, self->clen,
                          (uint8_t *)PyBytes_AS_STRING(b));
    if (rc < 0) {
        Py_DECREF(b);
        return rbpy_named_raise(self, rc);
    }
    return b;
}

static PyMethodDef Hll_methods[] = {
    {"count", (PyCFunction)Hll_count, METH_VARARGS,
     "count(*others) -> int: the estimated number of distinct elements added (PFCOUNT, "
     "rb_hll_card); with other counters' names, of the union (rb_hll_count; a missing one "
     "counts as empty)."},
    {"registers", (PyCFunction)Hll_registers, METH_NOARGS,
     "registers() -> bytes: the 16384 registers (each 0..51; all 0 while no counter bears "
     "the name)."},
    RBPY_NAMED_METHODS};

PyTypeObject rbpy_HllType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.HyperLogLog",
    .tp_basicsize = sizeof(rbpy_named_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "HyperLogLog(instance, name, owner=None, socket=None): HyperLogLog counter "
              "`name` of the instance (PFADD), read from shared memory.  instance may be a "
              "Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Hll_init,
    .tp_dealloc = (destructor)rbpy_named_dealloc,
    .tp_repr = (reprfunc)rbpy_named_repr,
    .tp_methods = Hll_methods,
    .tp_members = rbpy_named_members,
};
