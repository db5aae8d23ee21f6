/*
 * _keys.c - keys and names as the extension takes them from Python.
 *
 * Keys: bytes (and any object with the buffer protocol: bytearray,
 * memoryview) as their bytes; str as its UTF-8 encoding (so "é" and
 * b"\xc3\xa9" are one key, as they are for the CLI and redis-py).  Names
 * (instance, filter): str or bytes without a NUL.  A batch of keys for a
 * call that releases the GIL is pinned first (rbpy_keys_pin): no other
 * thread can free or resize a key while the library reads it.
 */
#include "_ringbloom.h"

#include <string.h>

int rbpy_key_bytes(PyObject *o, const char **p, Py_ssize_t *n, Py_buffer *view)
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

int rbpy_name_arg(PyObject *o, const char **p, Py_ssize_t *n, const char *what)
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

void rbpy_keys_release(rbpy_keys_t *b)
{
    for (Py_ssize_t i = 0; i < b->nviews; i++)
        PyBuffer_Release(&b->views[i]);
    PyMem_Free(b->views);
    PyMem_Free(b->kv);
    Py_XDECREF(b->tuple);
    memset(b, 0, sizeof(*b));
}

int rbpy_keys_pin(rbpy_keys_t *b, PyObject *iterable)
{
    memset(b, 0, sizeof(*b));
    if ((b->tuple = PySequence_Tuple(iterable)) == NULL)
        return -1;
    b->n = PyTuple_GET_SIZE(b->tuple);
    if ((b->kv = PyMem_Malloc(b->n ? (size_t)b->n * sizeof(*b->kv) : 1)) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < b->n; i++) {
        const char *p;
        Py_ssize_t len;
        Py_buffer v;

        if (rbpy_key_bytes(PyTuple_GET_ITEM(b->tuple, i), &p, &len, &v) < 0)
            goto fail;
        if (v.obj) {
            /* Rare (bytearray, memoryview): kept pinned in views[]. */
            if (b->views == NULL &&
                (b->views = PyMem_Calloc((size_t)b->n, sizeof(*b->views))) == NULL) {
                PyBuffer_Release(&v);
                PyErr_NoMemory();
                goto fail;
            }
            b->views[b->nviews++] = v;
        }
        b->kv[i].ptr = p;
        b->kv[i].len = (size_t)len;
    }
    return 0;
fail:
    rbpy_keys_release(b);
    return -1;
}
