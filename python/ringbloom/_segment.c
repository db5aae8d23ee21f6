/*
 * _segment.c - ringbloom.Segment: an instance's segment attached
 * read-only, the way the library's documentation says a reader must
 * (rb_daemon_uid, then rb_segment_attach_owned: only the daemon's user's
 * object is ever mapped), and shared by the readers built on it.
 *
 * Segment(instance, owner=None, socket=None): check / refresh / info /
 * filters.  A reader (Ring, Filter, ...) given an instance name attaches a
 * Segment of its own and keeps it for its life (rbpy_segment_of); given a
 * Segment it shares it.
 */
#include "_ringbloom.h"

#include <stdio.h>
#include <sys/stat.h>

/* Where instance's daemon listens, as rb_conn_open and rb_daemon_uid look:
 * the default socket if its directory and socket exist, else the system
 * one if that socket exists, else the default (a connect then fails with
 * "nobody listening").  Pure path computation, no trust check. */
int rbpy_socket_for(const char *instance, char *out, size_t cap)
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

int rbpy_daemon_uid(const char *instance, const char *socket_path, uid_t *uid)
{
    char why[1024], ctx[1200];
    int rc;

    why[0] = '\0';
    rc = rb_daemon_uid(instance, socket_path, (uid_t)-1, uid, why, sizeof(why));
    if (rc == RB_OK)
        return 0;
    snprintf(ctx, sizeof(ctx), "the daemon's uid of instance '%s'%s%s", instance,
             why[0] ? ": " : "", why);
    rbpy_raise(rc, ctx);
    return -1;
}

/* Attaches `instance` pinned to owner (-1: the daemon's uid from its
 * socket's directory, rb_daemon_uid with socket_path, which may be NULL). */
static int segment_init_attach(rbpy_segment_t *self, PyObject *inst, long owner,
                               const char *socket_path)
{
    const char *name;
    Py_ssize_t nlen;
    char ctx[1200];
    uid_t uid;
    int rc;

    if (rbpy_name_arg(inst, &name, &nlen, "instance") < 0)
        return -1;
    if (owner < 0) {
        if (rbpy_daemon_uid(name, socket_path, &uid) < 0)
            return -1;
    } else
        uid = (uid_t)owner;
    rc = rb_segment_attach_owned(name, 0, uid, &self->seg);
    if (rc != RB_OK) {
        snprintf(ctx, sizeof(ctx), "attach instance '%s'", name);
        rbpy_raise(rc, ctx);
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

static int Segment_init(rbpy_segment_t *self, PyObject *args, PyObject *kw)
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

static void Segment_dealloc(rbpy_segment_t *self)
{
    rb_segment_close(self->seg);
    Py_XDECREF(self->instance);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The Segment behind a Ring/Filter argument: a Segment is used as is, an
 * instance name (str/bytes) or None ("default") attaches a new one.
 * Returns a new reference. */
rbpy_segment_t *rbpy_segment_of(PyObject *o, PyObject *owner, PyObject *socket)
{
    if (PyObject_TypeCheck(o, &rbpy_SegmentType)) {
        if (((rbpy_segment_t *)o)->seg == NULL) {
            PyErr_SetString(PyExc_ValueError, "the Segment is not initialised");
            return NULL;
        }
        Py_INCREF(o);
        return (rbpy_segment_t *)o;
    }
    return (rbpy_segment_t *)PyObject_CallFunctionObjArgs((PyObject *)&rbpy_SegmentType, o, owner,
                                                         socket, NULL);
}

static PyObject *Segment_check(rbpy_segment_t *self, PyObject *unused)
{
    int rc = rb_segment_check(self->seg);
    (void)unused;
    if (rc != RB_OK)
        return rbpy_raise(rc, "segment check");
    Py_RETURN_NONE;
}

static PyObject *Segment_refresh(rbpy_segment_t *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(rb_segment_refresh(self->seg) == 1);
}

static PyObject *Segment_info(rbpy_segment_t *self, PyObject *unused)
{
    rb_segment_info_t i;
    int rc = rb_segment_info(self->seg, &i);
    (void)unused;
    if (rc != RB_OK)
        return rbpy_raise(rc, "segment info");
    return Py_BuildValue("{sKsKsKsKsKsKsKsKsIsIsi}", "version", (unsigned long long)i.version,
                         "generation", (unsigned long long)i.generation, "size",
                         (unsigned long long)i.size, "max_size", (unsigned long long)i.max_size,
                         "used", (unsigned long long)i.used, "writer_pid",
                         (unsigned long long)i.writer_pid, "created",
                         (unsigned long long)i.created, "heartbeat_ms",
                         (unsigned long long)i.heartbeat_ms, "filters", (unsigned)i.filters,
                         "max_filters", (unsigned)i.max_filters, "mode", (int)i.mode);
}

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

static PyObject *Segment_filters(rbpy_segment_t *self, PyObject *unused)
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

/* kind(name) -> str: the kind of filter name, from the library's kind
 * table (rb_filter_kind: "bloom", "hyperloglog", "cms", "cuckoo", ...). */
static PyObject *Segment_kind(rbpy_segment_t *self, PyObject *nameo)
{
    const rb_kind_desc_t *k;
    const char *name;
    Py_ssize_t nlen;
    int rc;

    if (rbpy_name_arg(nameo, &name, &nlen, "filter name") < 0)
        return NULL;
    rc = rb_filter_kind(self->seg, name, (size_t)nlen, &k);
    if (rc != RB_OK) {
        rbpy_raise(rc, "kind");
        return NULL;
    }
    return PyUnicode_FromString(k->name);
}

static PyObject *Segment_repr(rbpy_segment_t *self)
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
     "filters() -> list[str]: the names of the live filters, of every kind."},
    {"kind", (PyCFunction)Segment_kind, METH_O,
     "kind(name) -> str: the filter's kind ('bloom', 'hyperloglog', 'cms', 'cuckoo', ...)."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef Segment_members[] = {
    {"instance", T_OBJECT_EX, offsetof(rbpy_segment_t, instance), READONLY, "the instance name"},
    {"owner", T_LONG, offsetof(rbpy_segment_t, owner), READONLY,
     "the uid the segment must belong to (the daemon's)"},
    {NULL, 0, 0, 0, NULL}};

PyTypeObject rbpy_SegmentType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.Segment",
    .tp_basicsize = sizeof(rbpy_segment_t),
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
