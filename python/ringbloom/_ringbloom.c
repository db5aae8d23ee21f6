/*
 * _ringbloom.c - the module ringbloom._ringbloom, the C half of the
 * Python package `ringbloom`: the read side of libringbloom as Python
 * types, on the public API <ringbloom.h> only.  This file is the module
 * itself: its init (the types, the RB_* codes), its functions and the
 * error helper; each type has a file of its own (_ringbloom.h lists them).
 *
 * What: Segment(instance, owner=None, socket=None) attaches an instance's
 * segment (_segment.c); Ring(instance_or_segment) answers lookup /
 * lookup_n / nodes / stat (_ring.c); one reader per kind, each
 * Kind(instance_or_segment, name): Filter (Bloom: contains /
 * contains_many / `in` / info), CuckooFilter (the same, and count),
 * CountMinSketch (query / info), HyperLogLog (count / registers),
 * CountingBloomFilter (contains / count / info) and TinyLFU (admit).  A
 * reader given an instance name attaches a Segment of its own and keeps it
 * for its life; given a Segment it shares it.  Plus strerror(code),
 * version(), socket_path(instance) and daemon_uid(instance, socket) (where
 * the daemon listens and whether its directory is trusted, for the
 * pure-Python Client) and the RB_* error codes.
 *
 * Errors: every negative RB_E* code becomes an exception built by
 * ringbloom._errors.from_code(code, message, context) (ringbloom.Error or
 * a subclass, with .code and the rb_strerror text); this module imports
 * that function once, at its own import.
 *
 * Threads: lookups and contains are lock-free library calls, fast enough
 * to keep the GIL (releasing it costs more than a ~100 ns query);
 * contains_many releases it (_named.c).  Keys: str as UTF-8, bytes and
 * buffers as their bytes (_keys.c).
 */
#include "_ringbloom.h"

#include <limits.h>

/* ringbloom._errors.from_code, set at module init (a strong reference
 * for the life of the process). */
static PyObject *err_factory;

PyObject *rbpy_raise(int code, const char *context)
{
    PyObject *exc = PyObject_CallFunction(err_factory, "iss", code, rb_strerror(code),
                                          context ? context : "");
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

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
    if (rbpy_name_arg(arg, &name, &nlen, "instance") < 0)
        return NULL;
    if ((rc = rbpy_socket_for(name, path, sizeof(path))) != RB_OK)
        return rbpy_raise(rc, "socket path");
    return PyUnicode_DecodeFSDefault(path);
}

static PyObject *mod_daemon_uid(PyObject *m, PyObject *args)
{
    const char *name, *sock = NULL;
    Py_ssize_t nlen;
    PyObject *inst, *socko = Py_None, *sockb = NULL;
    uid_t uid;
    int rc;

    (void)m;
    if (!PyArg_ParseTuple(args, "O|O:daemon_uid", &inst, &socko) ||
        rbpy_name_arg(inst, &name, &nlen, "instance") < 0)
        return NULL;
    if (socko != Py_None) {
        if (!PyUnicode_FSConverter(socko, &sockb))
            return NULL;
        sock = PyBytes_AS_STRING(sockb);
    }
    rc = rbpy_daemon_uid(name, sock, &uid);
    Py_XDECREF(sockb);
    return rc < 0 ? NULL : PyLong_FromLong((long)uid);
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
    static const struct { const char *name; PyTypeObject *type; } types[] = {
        {"Segment", &rbpy_SegmentType}, {"Ring", &rbpy_RingType}, {"Filter", &rbpy_FilterType},
        {"CuckooFilter", &rbpy_CuckooType}, {"CountMinSketch", &rbpy_CmsType},
        {"HyperLogLog", &rbpy_HllType}, {"CountingBloomFilter", &rbpy_CbfType},
        {"TinyLFU", &rbpy_TinylfuType}};
    PyObject *m, *errs;
    size_t i;

    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (PyType_Ready(types[i].type) < 0)
            return NULL;
    if ((errs = PyImport_ImportModule("ringbloom._errors")) == NULL)
        return NULL;
    err_factory = PyObject_GetAttrString(errs, "from_code");
    Py_DECREF(errs);
    if (err_factory == NULL || (m = PyModule_Create(&module_def)) == NULL)
        return NULL;
    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        Py_INCREF(types[i].type);
        if (PyModule_AddObject(m, types[i].name, (PyObject *)types[i].type) < 0) {
            Py_DECREF(types[i].type);
            goto fail;
        }
    }
    if (PyModule_AddStringConstant(m, "HEADER_VERSION", RB_VERSION) < 0)
        goto fail;
    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (PyModule_AddIntConstant(m, codes[i].name, codes[i].code) < 0)
            goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
