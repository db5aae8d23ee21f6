/*
 * _ring.c - ringbloom.Ring: the instance's consistent-hash ring read from
 * shared memory, lock-free (rb_ring_lookup, rb_ring_lookup_n,
 * rb_ring_nodes, rb_ring_stat).  Lookups keep the GIL: releasing it costs
 * more than a ~100 ns lookup.
 */
#include "_ringbloom.h"

/* A node name (no NUL, at most 255 bytes) as str: UTF-8, with
 * surrogateescape for bytes that are not (they round-trip through
 * .encode("utf-8", "surrogateescape")). */
static PyObject *node_name(const rb_node_t *nd)
{
    return PyUnicode_DecodeUTF8(nd->name, nd->name_len, "surrogateescape");
}

typedef struct {
    PyObject_HEAD
    rbpy_segment_t *segment;   /* NULL once closed */
} rbpy_ring_t;

static int Ring_init(rbpy_ring_t *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"instance", "owner", "socket", NULL};
    PyObject *inst = Py_None, *owner = Py_None, *sock = Py_None;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO:Ring", kwlist, &inst, &owner, &sock))
        return -1;
    Py_CLEAR(self->segment);
    self->segment = rbpy_segment_of(inst, owner, sock);
    return self->segment ? 0 : -1;
}

static void Ring_dealloc(rbpy_ring_t *self)
{
    Py_XDECREF(self->segment);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ring_ready(rbpy_ring_t *self)
{
    if (self->segment == NULL) {
        PyErr_SetString(PyExc_ValueError, "the Ring is closed");
        return -1;
    }
    return 0;
}

static PyObject *Ring_lookup(rbpy_ring_t *self, PyObject *key)
{
    const char *p;
    Py_ssize_t n;
    Py_buffer v;
    rb_node_t nd;
    int rc;

    if (ring_ready(self) < 0 || rbpy_key_bytes(key, &p, &n, &v) < 0)
        return NULL;
    rc = rb_ring_lookup(self->segment->seg, p, (size_t)n, &nd);
    if (v.obj)
        PyBuffer_Release(&v);
    if (rc != RB_OK)
        return rbpy_raise(rc, "ring lookup");
    return node_name(&nd);
}

static PyObject *Ring_lookup_n(rbpy_ring_t *self, PyObject *args)
{
    PyObject *key, *l = NULL;
    Py_ssize_t want, n;
    const char *p;
    Py_buffer v;
    rb_node_t stack[8], *nd = stack;
    int rc, i;

    if (!PyArg_ParseTuple(args, "On:lookup_n", &key, &want) || ring_ready(self) < 0)
        return NULL;
    if (want < 1 || want > RB_RING_MAX_NODES) {
        PyErr_Format(PyExc_ValueError, "n must be 1..%d", RB_RING_MAX_NODES);
        return NULL;
    }
    if (want > 8 && (nd = PyMem_Malloc((size_t)want * sizeof(*nd))) == NULL)
        return PyErr_NoMemory();
    if (rbpy_key_bytes(key, &p, &n, &v) < 0)
        goto out;
    rc = rb_ring_lookup_n(self->segment->seg, p, (size_t)n, nd, (size_t)want);
    if (v.obj)
        PyBuffer_Release(&v);
    if (rc < 0) {
        rbpy_raise(rc, "ring lookup_n");
        goto out;
    }
    if ((l = PyList_New(rc)) == NULL)
        goto out;
    for (i = 0; i < rc; i++) {
        PyObject *s = node_name(&nd[i]);
        if (s == NULL) {
            Py_CLEAR(l);
            goto out;
        }
        PyList_SET_ITEM(l, i, s);
    }
out:
    if (nd != stack)
        PyMem_Free(nd);
    return l;
}

static PyObject *Ring_nodes(rbpy_ring_t *self, PyObject *unused)
{
    rb_node_t *nd = NULL;
    size_t count = 0, cap = 0, i;
    PyObject *l = NULL;
    int rc;

    (void)unused;
    if (ring_ready(self) < 0)
        return NULL;
    /* The ring may grow between the sizing call and the copy: retry. */
    for (;;) {
        rc = rb_ring_nodes(self->segment->seg, nd, cap, &count);
        if (rc != RB_OK) {
            PyMem_Free(nd);
            return rbpy_raise(rc, "ring nodes");
        }
        if (count <= cap)
            break;
        PyMem_Free(nd);
        cap = count + 16;
        if ((nd = PyMem_Malloc(cap * sizeof(*nd))) == NULL)
            return PyErr_NoMemory();
    }
    if ((l = PyList_New((Py_ssize_t)count)) == NULL)
        goto out;
    for (i = 0; i < count; i++) {
        PyObject *s = node_name(&nd[i]), *t;
        if (s == NULL || (t = Py_BuildValue("(NI)", s, (unsigned)nd[i].weight)) == NULL) {
            Py_CLEAR(l);
            goto out;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, t);
    }
out:
    PyMem_Free(nd);
    return l;
}

static PyObject *Ring_stat(rbpy_ring_t *self, PyObject *unused)
{
    rb_ring_stat_t s;
    int rc;

    (void)unused;
    if (ring_ready(self) < 0)
        return NULL;
    if ((rc = rb_ring_stat(self->segment->seg, &s)) != RB_OK)
        return rbpy_raise(rc, "ring stat");
    return Py_BuildValue("{sKsssIsIsIsIsK}", "version", (unsigned long long)s.version, "mode",
                         rb_ring_mode_name((rb_ring_mode_t)s.mode), "replicas",
                         (unsigned)s.replicas, "nodes", (unsigned)s.nodes, "points",
                         (unsigned)s.points, "index_bits", (unsigned)s.index_bits, "bytes",
                         (unsigned long long)s.bytes);
}

static PyObject *Ring_close(rbpy_ring_t *self, PyObject *unused)
{
    (void)unused;
    Py_CLEAR(self->segment);
    Py_RETURN_NONE;
}

static PyObject *Ring_exit(rbpy_ring_t *self, PyObject *args)
{
    (void)args;
    return Ring_close(self, NULL);
}

static PyMethodDef Ring_methods[] = {
    {"lookup", (PyCFunction)Ring_lookup, METH_O,
     "lookup(key) -> str: the node owning key (str or bytes)."},
    {"lookup_n", (PyCFunction)Ring_lookup_n, METH_VARARGS,
     "lookup_n(key, n) -> list[str]: the first min(n, owners) distinct nodes clockwise."},
    {"nodes", (PyCFunction)Ring_nodes, METH_NOARGS,
     "nodes() -> list[(name, weight)]: the members, sorted by name."},
    {"stat", (PyCFunction)Ring_stat, METH_NOARGS, "stat() -> dict: the ring's figures."},
    {"close", (PyCFunction)Ring_close, METH_NOARGS,
     "close(): drop this Ring's segment reference (detached when none is left)."},
    {"__enter__", rbpy_self_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Ring_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Ring_members[] = {
    {"segment", T_OBJECT, offsetof(rbpy_ring_t, segment), READONLY, "the Segment (None once closed)"},
    {NULL, 0, 0, 0, NULL}};

PyTypeObject rbpy_RingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.Ring",
    .tp_basicsize = sizeof(rbpy_ring_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Ring(instance='default', owner=None, socket=None): the instance's consistent-hash "
              "ring, read from shared memory.  instance may be a Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Ring_init,
    .tp_dealloc = (destructor)Ring_dealloc,
    .tp_methods = Ring_methods,
    .tp_members = Ring_members,
};
