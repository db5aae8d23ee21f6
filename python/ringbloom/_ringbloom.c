/*
 * _ringbloom.c - the C half of the Python package `ringbloom`: the
 * read side of libringbloom (a segment attached read-only, ring lookups,
 * Bloom contains) as Python types, on the public API <ringbloom.h> only.
 *
 * What: three types.  Segment(instance, owner=None, socket=None) attaches
 * an instance's segment the way the library's documentation says a reader
 * must (rb_daemon_uid, then rb_segment_attach_owned: only the daemon's
 * user's object is ever mapped).  Ring(instance_or_segment) answers lookup
 * / lookup_n / nodes / stat; Filter(instance_or_segment, name) answers
 * contains / contains_many / __contains__ / info.  A Ring or Filter given
 * an instance name attaches a Segment of its own and keeps it for its
 * life; given a Segment it shares it.  Plus strerror(code), version(),
 * socket_path(instance) and daemon_uid(instance, socket) (where the
 * daemon listens and whether its directory is trusted, for the
 * pure-Python Client) and the RB_* error codes.
 *
 * Errors: every negative RB_E* code becomes an exception built by
 * ringbloom._errors.from_code(code, message, context) (ringbloom.Error or
 * a subclass, with .code and the rb_strerror text); this module imports
 * that function once, at its own import.
 *
 * Threads: lookups and contains are lock-free library calls, fast enough
 * to keep the GIL (releasing it costs more than a ~100 ns query).
 * contains_many releases it around rb_bloom_contains_many: the keys are
 * first pinned (a tuple of them, bytes/str pointers or Py_buffer views
 * held until the call returns), so no other thread can free or resize a
 * key meanwhile, and the Filter counts the calls in flight so close()
 * refuses (Busy) to free the handle under them.
 *
 * Keys: bytes (and any object with the buffer protocol: bytearray,
 * memoryview) as their bytes; str as its UTF-8 encoding (so "é" and
 * b"\xc3\xa9" are one key, as they are for the CLI and redis-py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <ringbloom.h>

/* ringbloom._errors.from_code, set at module init (a strong reference
 * for the life of the process). */
static PyObject *err_factory;

/* Raises the exception of RB_E* `code`; context (may be NULL) says what
 * was being done ("attach 'default'", "filter 'urls'").  Returns NULL so
 * callers can `return rb_raise(...)`. */
static PyObject *rb_raise(int code, const char *context)
{
    PyObject *exc = PyObject_CallFunction(err_factory, "iss", code, rb_strerror(code),
                                          context ? context : "");
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ---- keys ---------------------------------------------------------------- */

/* A key's bytes: str as UTF-8 (pointer into the str's cached encoding,
 * valid while the str lives), bytes directly, anything else through the
 * buffer protocol into *view (which the caller releases if view->obj is
 * set).  -1 with TypeError for other objects. */
static int key_bytes(PyObject *o, const char **p, Py_ssize_t *n, Py_buffer *view)
{
    view->obj = NULL;
    if (PyBytes_Check(o)) {
        *p = PyBytes_AS_STRING(o);
        *n = PyBytes_GET_SIZE(o);
        return 0;
    }
    if (PyUnicode_Check(o)) {
        *p = PyUnicode_AsUTF8AndSize(o, n);
        return *p ? 0 : -1;
    }
    if (PyObject_CheckBuffer(o)) {
        if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) < 0)
            return -1;
        *p = view->buf;
        *n = view->len;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "a key must be str or bytes, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
}

/* The "name" arguments (instance, filter) as str or bytes, no NUL. */
static int name_arg(PyObject *o, const char **p, Py_ssize_t *n, const char *what)
{
    if (PyUnicode_Check(o))
        *p = PyUnicode_AsUTF8AndSize(o, n);
    else if (PyBytes_Check(o)) {
        *p = PyBytes_AS_STRING(o);
        *n = PyBytes_GET_SIZE(o);
    } else {
        PyErr_Format(PyExc_TypeError, "%s must be str or bytes, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (*p == NULL)
        return -1;
    if ((size_t)*n != strlen(*p)) {
        PyErr_Format(PyExc_ValueError, "%s contains a NUL byte", what);
        return -1;
    }
    return 0;
}

/* A node name (no NUL, at most 255 bytes) as str: UTF-8, with
 * surrogateescape for bytes that are not (they round-trip through
 * .encode("utf-8", "surrogateescape")). */
static PyObject *node_name(const rb_node_t *nd)
{
    return PyUnicode_DecodeUTF8(nd->name, nd->name_len, "surrogateescape");
}

/* ---- Segment -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    rb_segment_t *seg;
    PyObject *instance;  /* str */
    long owner;          /* the uid pinned */
} SegmentObject;

static PyTypeObject SegmentType;

/* Where instance's daemon listens, as rb_conn_open and rb_daemon_uid look:
 * the default socket if its directory and socket exist, else the system
 * one if that socket exists, else the default (a connect then fails with
 * "nobody listening").  Pure path computation, no trust check. */
static int socket_for(const char *instance, char *out, size_t cap)
{
    rb_paths_t d, s;
    struct stat st;
    int rc;

    if ((rc = rb_default_paths(instance, &d)) != RB_OK)
        return rc;
    if (stat(d.socket, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        if (rb_system_paths(instance, &s) == RB_OK && stat(s.socket, &st) == 0 &&
            S_ISSOCK(st.st_mode)) {
            snprintf(out, cap, "%s", s.socket);
            return RB_OK;
        }
    }
    snprintf(out, cap, "%s", d.socket);
    return RB_OK;
}

/* Attaches `instance` pinned to owner (-1: the daemon's uid from its
 * socket's directory, rb_daemon_uid with socket_path, which may be NULL). */
static int segment_init_attach(SegmentObject *self, PyObject *inst, long owner,
                               const char *socket_path)
{
    const char *name;
    Py_ssize_t nlen;
    char why[1024], ctx[1200];
    uid_t uid;
    int rc;

    if (name_arg(inst, &name, &nlen, "instance") < 0)
        return -1;
    if (owner < 0) {
        why[0] = '\0';
        rc = rb_daemon_uid(name, socket_path, (uid_t)-1, &uid, why, sizeof(why));
        if (rc != RB_OK) {
            snprintf(ctx, sizeof(ctx), "the daemon's uid of instance '%s'%s%s", name,
                     why[0] ? ": " : "", why);
            rb_raise(rc, ctx);
            return -1;
        }
    } else
        uid = (uid_t)owner;
    rc = rb_segment_attach_owned(name, 0, uid, &self->seg);
    if (rc != RB_OK) {
        snprintf(ctx, sizeof(ctx), "attach instance '%s'", name);
        rb_raise(rc, ctx);
        return -1;
    }
    self->owner = (long)uid;
    self->instance = PyUnicode_DecodeUTF8(name, nlen, "surrogateescape");
    return self->instance ? 0 : -1;
}

/* The owner= argument: a uid, 0 to (uid_t)-2 ((uid_t)-1 is no uid).  The
 * uid, or -1 with ValueError (negative) or OverflowError (past the last
 * uid: never cut to uid_t's bits, which would pin another user). */
static long owner_arg(PyObject *o)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);

    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow < 0 || (overflow == 0 && v < 0)) {
        PyErr_SetString(PyExc_ValueError, "owner must be a uid (>= 0) or None");
        return -1;
    }
    if (overflow > 0 || (unsigned long long)v >= (unsigned long long)(uid_t)-1) {
        PyErr_Format(PyExc_OverflowError, "owner must be a uid, at most %llu",
                     (unsigned long long)(uid_t)-1 - 1);
        return -1;
    }
    return (long)v;
}

static int Segment_init(SegmentObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"instance", "owner", "socket", NULL};
    PyObject *inst = NULL, *ownero = Py_None, *socko = Py_None, *sockb = NULL;
    const char *sock = NULL;
    long owner = -1;
    int rc;

    if (self->seg != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Segment is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO:Segment", kwlist, &inst, &ownero, &socko))
        return -1;
    if (ownero != Py_None && (owner = owner_arg(ownero)) < 0)
        return -1;
    if (socko != Py_None) {
        if (!PyUnicode_FSConverter(socko, &sockb))
            return -1;
        sock = PyBytes_AS_STRING(sockb);
    }
    if (inst == NULL || inst == Py_None) {
        inst = PyUnicode_FromString("default");
        if (inst == NULL) {
            Py_XDECREF(sockb);
            return -1;
        }
        rc = segment_init_attach(self, inst, owner, sock);
        Py_DECREF(inst);
    } else
        rc = segment_init_attach(self, inst, owner, sock);
    Py_XDECREF(sockb);
    return rc;
}

static void Segment_dealloc(SegmentObject *self)
{
    rb_segment_close(self->seg);
    Py_XDECREF(self->instance);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The Segment behind a Ring/Filter argument: a Segment is used as is, an
 * instance name (str/bytes) or None ("default") attaches a new one.
 * Returns a new reference. */
static SegmentObject *segment_of(PyObject *o, PyObject *owner, PyObject *socket)
{
    if (PyObject_TypeCheck(o, &SegmentType)) {
        if (((SegmentObject *)o)->seg == NULL) {
            PyErr_SetString(PyExc_ValueError, "the Segment is not initialised");
            return NULL;
        }
        Py_INCREF(o);
        return (SegmentObject *)o;
    }
    return (SegmentObject *)PyObject_CallFunctionObjArgs((PyObject *)&SegmentType, o, owner,
                                                         socket, NULL);
}

static PyObject *Segment_check(SegmentObject *self, PyObject *unused)
{
    int rc = rb_segment_check(self->seg);
    (void)unused;
    if (rc != RB_OK)
        return rb_raise(rc, "segment check");
    Py_RETURN_NONE;
}

static PyObject *Segment_refresh(SegmentObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(rb_segment_refresh(self->seg) == 1);
}

static PyObject *Segment_filters(SegmentObject *self, PyObject *unused);

static PyObject *Segment_info(SegmentObject *self, PyObject *unused)
{
    rb_segment_info_t i;
    int rc = rb_segment_info(self->seg, &i);
    (void)unused;
    if (rc != RB_OK)
        return rb_raise(rc, "segment info");
    return Py_BuildValue("{sKsKsKsKsKsKsKsKsIsIsi}", "version", (unsigned long long)i.version,
                         "generation", (unsigned long long)i.generation, "size",
                         (unsigned long long)i.size, "max_size", (unsigned long long)i.max_size,
                         "used", (unsigned long long)i.used, "writer_pid",
                         (unsigned long long)i.writer_pid, "created",
                         (unsigned long long)i.created, "heartbeat_ms",
                         (unsigned long long)i.heartbeat_ms, "filters", (unsigned)i.filters,
                         "max_filters", (unsigned)i.max_filters, "mode", (int)i.mode);
}

static PyObject *Segment_repr(SegmentObject *self)
{
    return PyUnicode_FromFormat("<ringbloom.Segment instance=%R owner=%ld>", self->instance,
                                self->owner);
}

static PyMethodDef Segment_methods[] = {
    {"check", (PyCFunction)Segment_check, METH_NOARGS,
     "check(): None if the segment is live; raises Gone (the daemon stopped) or Retired."},
    {"refresh", (PyCFunction)Segment_refresh, METH_NOARGS,
     "refresh() -> bool: follow a restarted daemon now (lookups do it by themselves)."},
    {"info", (PyCFunction)Segment_info, METH_NOARGS, "info() -> dict: rb_segment_info's figures."},
    {"filters", (PyCFunction)Segment_filters, METH_NOARGS,
     "filters() -> list[str]: the names of the live filters."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Segment_members[] = {
    {"instance", T_OBJECT_EX, offsetof(SegmentObject, instance), READONLY, "the instance name"},
    {"owner", T_LONG, offsetof(SegmentObject, owner), READONLY,
     "the uid the segment must belong to (the daemon's)"},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject SegmentType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.Segment",
    .tp_basicsize = sizeof(SegmentObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Segment(instance='default', owner=None, socket=None): an instance's shared "
              "memory, attached read-only and pinned to the daemon's uid (owner, or the owner "
              "of the directory holding its socket).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Segment_init,
    .tp_dealloc = (destructor)Segment_dealloc,
    .tp_repr = (reprfunc)Segment_repr,
    .tp_methods = Segment_methods,
    .tp_members = Segment_members,
};

static int list_one(const char *name, size_t len, void *arg)
{
    PyObject *s = PyUnicode_DecodeUTF8(name, (Py_ssize_t)len, "surrogateescape");
    int rc;
    if (s == NULL)
        return -1;
    rc = PyList_Append((PyObject *)arg, s);
    Py_DECREF(s);
    return rc;
}

static PyObject *Segment_filters(SegmentObject *self, PyObject *unused)
{
    PyObject *l = PyList_New(0);
    (void)unused;
    if (l == NULL)
        return NULL;
    if (rb_bloom_list(self->seg, list_one, l) != 0) {
        Py_DECREF(l);
        return NULL;
    }
    return l;
}

/* ---- Ring ------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    SegmentObject *segment;
} RingObject;

static int Ring_init(RingObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"instance", "owner", "socket", NULL};
    PyObject *inst = Py_None, *owner = Py_None, *sock = Py_None;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO:Ring", kwlist, &inst, &owner, &sock))
        return -1;
    Py_CLEAR(self->segment);
    self->segment = segment_of(inst, owner, sock);
    return self->segment ? 0 : -1;
}

static void Ring_dealloc(RingObject *self)
{
    Py_XDECREF(self->segment);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ring_ready(RingObject *self)
{
    if (self->segment == NULL) {
        PyErr_SetString(PyExc_ValueError, "the Ring is closed");
        return -1;
    }
    return 0;
}

static PyObject *Ring_lookup(RingObject *self, PyObject *key)
{
    const char *p;
    Py_ssize_t n;
    Py_buffer v;
    rb_node_t nd;
    int rc;

    if (ring_ready(self) < 0 || key_bytes(key, &p, &n, &v) < 0)
        return NULL;
    rc = rb_ring_lookup(self->segment->seg, p, (size_t)n, &nd);
    if (v.obj)
        PyBuffer_Release(&v);
    if (rc != RB_OK)
        return rb_raise(rc, "ring lookup");
    return node_name(&nd);
}

static PyObject *Ring_lookup_n(RingObject *self, PyObject *args)
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
    if (key_bytes(key, &p, &n, &v) < 0)
        goto out;
    rc = rb_ring_lookup_n(self->segment->seg, p, (size_t)n, nd, (size_t)want);
    if (v.obj)
        PyBuffer_Release(&v);
    if (rc < 0) {
        rb_raise(rc, "ring lookup_n");
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

static PyObject *Ring_nodes(RingObject *self, PyObject *unused)
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
            return rb_raise(rc, "ring nodes");
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

static PyObject *Ring_stat(RingObject *self, PyObject *unused)
{
    rb_ring_stat_t s;
    int rc;

    (void)unused;
    if (ring_ready(self) < 0)
        return NULL;
    if ((rc = rb_ring_stat(self->segment->seg, &s)) != RB_OK)
        return rb_raise(rc, "ring stat");
    return Py_BuildValue("{sKsssIsIsIsIsK}", "version", (unsigned long long)s.version, "mode",
                         rb_ring_mode_name((rb_ring_mode_t)s.mode), "replicas",
                         (unsigned)s.replicas, "nodes", (unsigned)s.nodes, "points",
                         (unsigned)s.points, "index_bits", (unsigned)s.index_bits, "bytes",
                         (unsigned long long)s.bytes);
}

static PyObject *Ring_close(RingObject *self, PyObject *unused)
{
    (void)unused;
    Py_CLEAR(self->segment);
    Py_RETURN_NONE;
}

static PyObject *self_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *Ring_exit(RingObject *self, PyObject *args)
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
    {"__enter__", self_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Ring_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Ring_members[] = {
    {"segment", T_OBJECT, offsetof(RingObject, segment), READONLY, "the Segment (None once closed)"},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject RingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.Ring",
    .tp_basicsize = sizeof(RingObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Ring(instance='default', owner=None, socket=None): the instance's consistent-hash "
              "ring, read from shared memory.  instance may be a Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Ring_init,
    .tp_dealloc = (destructor)Ring_dealloc,
    .tp_methods = Ring_methods,
    .tp_members = Ring_members,
};

/* ---- Filter ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    SegmentObject *segment;
    rb_bloom_t *bf;
    PyObject *name;   /* str */
    char cname[RB_FILTER_NAME_MAX + 1];  /* the name's bytes, for error contexts */
    long busy;        /* contains_many calls without the GIL (changed under the GIL) */
} FilterObject;

static int Filter_init(FilterObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"instance", "name", "owner", "socket", NULL};
    PyObject *inst, *nameo, *owner = Py_None, *sock = Py_None;
    const char *name;
    Py_ssize_t nlen;
    char ctx[400];
    int rc;

    if (self->bf != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Filter is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO:Filter", kwlist, &inst, &nameo, &owner,
                                     &sock))
        return -1;
    if (name_arg(nameo, &name, &nlen, "filter name") < 0)
        return -1;
    if ((self->segment = segment_of(inst, owner, sock)) == NULL)
        return -1;
    rc = rb_bloom_open(self->segment->seg, name, (size_t)nlen, &self->bf);
    if (rc != RB_OK) {
        self->bf = NULL;
        Py_CLEAR(self->segment);
        snprintf(ctx, sizeof(ctx), "filter '%.300s'", name);
        rb_raise(rc, ctx);
        return -1;
    }
    snprintf(self->cname, sizeof(self->cname), "%s", name);
    self->name = PyUnicode_DecodeUTF8(name, nlen, "surrogateescape");
    return self->name ? 0 : -1;
}

static void Filter_dealloc(FilterObject *self)
{
    /* busy is 0 here: a contains_many in flight holds a reference. */
    rb_bloom_close(self->bf);
    Py_XDECREF(self->segment);
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int filter_ready(FilterObject *self)
{
    if (self->bf == NULL) {
        PyErr_SetString(PyExc_ValueError, "the Filter is closed");
        return -1;
    }
    return 0;
}

/* 1/0, or -1 with an exception set. */
static int filter_contains(FilterObject *self, PyObject *key)
{
    const char *p;
    Py_ssize_t n;
    Py_buffer v;
    char ctx[400];
    int rc;

    if (filter_ready(self) < 0 || key_bytes(key, &p, &n, &v) < 0)
        return -1;
    rc = rb_bloom_contains(self->bf, p, (size_t)n);
    if (v.obj)
        PyBuffer_Release(&v);
    if (rc < 0) {
        snprintf(ctx, sizeof(ctx), "filter '%s'", self->cname);
        rb_raise(rc, ctx);
        return -1;
    }
    return rc;
}

static PyObject *Filter_contains(FilterObject *self, PyObject *key)
{
    int rc = filter_contains(self, key);
    return rc < 0 ? NULL : PyBool_FromLong(rc);
}

static int Filter_sq_contains(FilterObject *self, PyObject *key)
{
    return filter_contains(self, key);
}

static PyObject *Filter_contains_many(FilterObject *self, PyObject *iterable)
{
    PyObject *keys, *res = NULL;
    rb_key_t *kv = NULL;
    uint8_t *out = NULL;
    Py_buffer *views = NULL;
    Py_ssize_t n, i, nviews = 0;
    int64_t rc;
    char ctx[400];

    if (filter_ready(self) < 0)
        return NULL;
    /* A tuple of our own: no other thread can replace or free an item
     * while the GIL is released. */
    if ((keys = PySequence_Tuple(iterable)) == NULL)
        return NULL;
    n = PyTuple_GET_SIZE(keys);
    kv = PyMem_Malloc(n ? (size_t)n * sizeof(*kv) : 1);
    out = PyMem_Malloc(n ? (size_t)n : 1);
    if (kv == NULL || out == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    for (i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(keys, i);
        const char *p;
        Py_ssize_t len;
        Py_buffer v;

        if (key_bytes(o, &p, &len, &v) < 0)
            goto out;
        if (v.obj) {
            /* Rare (bytearray, memoryview): kept pinned in views[]. */
            if (views == NULL && (views = PyMem_Calloc((size_t)n, sizeof(*views))) == NULL) {
                PyBuffer_Release(&v);
                PyErr_NoMemory();
                goto out;
            }
            views[nviews++] = v;
        }
        kv[i].ptr = p;
        kv[i].len = (size_t)len;
    }
    self->busy++;
    Py_INCREF(self);
    Py_BEGIN_ALLOW_THREADS
    rc = rb_bloom_contains_many(self->bf, kv, (size_t)n, out);
    Py_END_ALLOW_THREADS
    self->busy--;
    Py_DECREF(self);
    if (rc < 0) {
        snprintf(ctx, sizeof(ctx), "filter '%s'", self->cname);
        rb_raise((int)rc, ctx);
        goto out;
    }
    if ((res = PyList_New(n)) == NULL)
        goto out;
    for (i = 0; i < n; i++) {
        PyObject *b = out[i] ? Py_True : Py_False;
        Py_INCREF(b);
        PyList_SET_ITEM(res, i, b);
    }
out:
    for (i = 0; i < nviews; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(kv);
    PyMem_Free(out);
    Py_DECREF(keys);
    return res;
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

static PyObject *Filter_info(FilterObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"scan", NULL};
    rb_bloom_stat_t s;
    int scan = 0, rc;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p:info", kwlist, &scan) || filter_ready(self) < 0)
        return NULL;
    rc = scan ? rb_bloom_stat(self->bf, &s) : rb_bloom_info(self->bf, &s);
    if (rc != RB_OK)
        return rb_raise(rc, "filter info");
    return stat_dict(&s);
}

static PyObject *Filter_close(FilterObject *self, PyObject *unused)
{
    (void)unused;
    if (self->busy > 0)
        return rb_raise(RB_EBUSY, "close: a contains_many of another thread is using the filter");
    rb_bloom_close(self->bf);
    self->bf = NULL;
    Py_CLEAR(self->segment);
    Py_RETURN_NONE;
}

static PyObject *Filter_exit(FilterObject *self, PyObject *args)
{
    (void)args;
    return Filter_close(self, NULL);
}

static PyObject *Filter_repr(FilterObject *self)
{
    return PyUnicode_FromFormat("<ringbloom.Filter %R of %R%s>", self->name,
                                self->segment ? self->segment->instance : Py_None,
                                self->bf ? "" : " (closed)");
}

static PyMethodDef Filter_methods[] = {
    {"contains", (PyCFunction)Filter_contains, METH_O,
     "contains(key) -> bool: True if key (str or bytes) may have been added, False if it "
     "certainly was not."},
    {"contains_many", (PyCFunction)Filter_contains_many, METH_O,
     "contains_many(iterable) -> list[bool]: contains for every key, in one batch "
     "(rb_bloom_contains_many), the GIL released meanwhile."},
    {"info", (PyCFunction)(void (*)(void))Filter_info, METH_VARARGS | METH_KEYWORDS,
     "info(scan=False) -> dict: the filter's figures (rb_bloom_info; scan=True: rb_bloom_stat, "
     "which counts set bits, O(bits))."},
    {"close", (PyCFunction)Filter_close, METH_NOARGS,
     "close(): release the handle (Busy while another thread's contains_many runs)."},
    {"__enter__", self_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Filter_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Filter_members[] = {
    {"name", T_OBJECT_EX, offsetof(FilterObject, name), READONLY, "the filter's name"},
    {"segment", T_OBJECT, offsetof(FilterObject, segment), READONLY,
     "the Segment (None once closed)"},
    {NULL, 0, 0, 0, NULL}};

static PySequenceMethods Filter_as_sequence = {
    .sq_contains = (objobjproc)Filter_sq_contains,
};

static PyTypeObject FilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.Filter",
    .tp_basicsize = sizeof(FilterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Filter(instance, name, owner=None, socket=None): Bloom filter `name` of the "
              "instance, read from shared memory.  instance may be a Segment to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Filter_init,
    .tp_dealloc = (destructor)Filter_dealloc,
    .tp_repr = (reprfunc)Filter_repr,
    .tp_methods = Filter_methods,
    .tp_members = Filter_members,
    .tp_as_sequence = &Filter_as_sequence,
};

/* ---- module functions ----------------------------------------------------------- */

static PyObject *mod_strerror(PyObject *m, PyObject *arg)
{
    long code = PyLong_AsLong(arg);
    (void)m;
    if (code == -1 && PyErr_Occurred())
        return NULL;
    if (code < INT_MIN || code > INT_MAX) {
        /* rb_strerror takes an int: never cut a code to another's text */
        PyErr_SetString(PyExc_OverflowError, "an RB_E* code is an int");
        return NULL;
    }
    return PyUnicode_FromString(rb_strerror((int)code));
}

static PyObject *mod_version(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyUnicode_FromString(rb_version());
}

static PyObject *mod_socket_path(PyObject *m, PyObject *arg)
{
    const char *name;
    Py_ssize_t nlen;
    char path[sizeof(((rb_paths_t *)0)->socket)];
    int rc;

    (void)m;
    if (name_arg(arg, &name, &nlen, "instance") < 0)
        return NULL;
    if ((rc = socket_for(name, path, sizeof(path))) != RB_OK)
        return rb_raise(rc, "socket path");
    return PyUnicode_DecodeFSDefault(path);
}

static PyObject *mod_daemon_uid(PyObject *m, PyObject *args)
{
    const char *name, *sock = NULL;
    Py_ssize_t nlen;
    PyObject *inst, *socko = Py_None, *sockb = NULL;
    char why[1024], ctx[1200];
    uid_t uid;
    int rc;

    (void)m;
    if (!PyArg_ParseTuple(args, "O|O:daemon_uid", &inst, &socko) ||
        name_arg(inst, &name, &nlen, "instance") < 0)
        return NULL;
    if (socko != Py_None) {
        if (!PyUnicode_FSConverter(socko, &sockb))
            return NULL;
        sock = PyBytes_AS_STRING(sockb);
    }
    why[0] = '\0';
    rc = rb_daemon_uid(name, sock, (uid_t)-1, &uid, why, sizeof(why));
    Py_XDECREF(sockb);
    if (rc != RB_OK) {
        snprintf(ctx, sizeof(ctx), "the daemon's uid of instance '%s'%s%s", name,
                 why[0] ? ": " : "", why);
        return rb_raise(rc, ctx);
    }
    return PyLong_FromLong((long)uid);
}

static PyMethodDef module_methods[] = {
    {"strerror", mod_strerror, METH_O, "strerror(code) -> str: rb_strerror's text."},
    {"version", mod_version, METH_NOARGS, "version() -> str: the library's version."},
    {"socket_path", mod_socket_path, METH_O,
     "socket_path(instance) -> str: the daemon's socket, looked for as rb_conn_open does."},
    {"daemon_uid", mod_daemon_uid, METH_VARARGS,
     "daemon_uid(instance, socket=None) -> int: rb_daemon_uid (the owner of the socket's "
     "directory, after checking nobody else could have made it)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "ringbloom._ringbloom",
    "libringbloom's readers (the C half of the ringbloom package).", -1, module_methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ringbloom(void)
{
    static const struct { const char *name; int code; } codes[] = {
        {"RB_ENOMEM", RB_ENOMEM}, {"RB_EINVAL", RB_EINVAL}, {"RB_ENOENT", RB_ENOENT},
        {"RB_EEXIST", RB_EEXIST}, {"RB_ENOTOURS", RB_ENOTOURS}, {"RB_EENDIAN", RB_EENDIAN},
        {"RB_EVERSION", RB_EVERSION}, {"RB_ETRUNC", RB_ETRUNC}, {"RB_ERETIRED", RB_ERETIRED},
        {"RB_EGONE", RB_EGONE}, {"RB_EBUSY", RB_EBUSY}, {"RB_ENOSPC", RB_ENOSPC},
        {"RB_EEMPTY", RB_EEMPTY}, {"RB_ECORRUPT", RB_ECORRUPT}, {"RB_ESYS", RB_ESYS},
        {"RB_EACCES", RB_EACCES}, {"RB_ERANGE", RB_ERANGE}, {"RB_EROFS", RB_EROFS},
        {"RB_EFULL", RB_EFULL}, {"RB_EDAEMON", RB_EDAEMON}, {"RB_EPROTO", RB_EPROTO},
        {"RB_EREPLY", RB_EREPLY}, {"RB_EPERM", RB_EPERM}, {"RB_EOWNER", RB_EOWNER},
        {"RB_ETIMEDOUT", RB_ETIMEDOUT}, {"RB_ELAYERS", RB_ELAYERS},
        {"RB_EPRECISION", RB_EPRECISION}, {"RB_ESLOTS", RB_ESLOTS},
        {"RB_EWRONGTYPE", RB_EWRONGTYPE}};
    PyObject *m, *errs;
    size_t i;

    if (PyType_Ready(&SegmentType) < 0 || PyType_Ready(&RingType) < 0 ||
        PyType_Ready(&FilterType) < 0)
        return NULL;
    if ((errs = PyImport_ImportModule("ringbloom._errors")) == NULL)
        return NULL;
    err_factory = PyObject_GetAttrString(errs, "from_code");
    Py_DECREF(errs);
    if (err_factory == NULL || (m = PyModule_Create(&module_def)) == NULL)
        return NULL;
    Py_INCREF(&SegmentType);
    Py_INCREF(&RingType);
    Py_INCREF(&FilterType);
    if (PyModule_AddObject(m, "Segment", (PyObject *)&SegmentType) < 0 ||
        PyModule_AddObject(m, "Ring", (PyObject *)&RingType) < 0 ||
        PyModule_AddObject(m, "Filter", (PyObject *)&FilterType) < 0 ||
        PyModule_AddStringConstant(m, "HEADER_VERSION", RB_VERSION) < 0)
        goto fail;
    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (PyModule_AddIntConstant(m, codes[i].name, codes[i].code) < 0)
            goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
