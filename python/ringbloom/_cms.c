/*
 * _cms.c - ringbloom.CountMinSketch: a count-min sketch of the segment
 * (CMS.INITBYDIM / INITBYPROB, ADMIT.RESERVE's), queried lock-free through
 * its handle (rb_cms_open, rb_cms_estimate: no directory scan per query;
 * the handle rebinds by name if the sketch is made again); info() asks by
 * name (rb_cms_info).  A sketch deleted later answers NotFound; a name
 * that holds another kind, WrongType.
 */
#include "_ringbloom.h"

static int cms_open(const rb_segment_t *seg, const char *name, size_t len, void **out)
{
    rb_cms_t *h = NULL;
    int rc = rb_cms_open(seg, name, len, &h);

    *out = h;
    return rc;
}

static void cms_close(void *h)
{
    rb_cms_close(h);
}

static const rbpy_kind_t cms_kind = {"sketch", "CountMinSketch", cms_open, cms_close, NULL, NULL};

static int Cms_init(rbpy_named_t *self, PyObject *args, PyObject *kw)
{
    return rbpy_named_init(self, args, kw, &cms_kind);
}

static int cms_query(rbpy_named_t *self, const void *key, size_t klen, uint64_t *out)
{
    return rb_cms_estimate(self->h, key, klen, out);
}

static PyObject *Cms_query(rbpy_named_t *self, PyObject *key)
{
    return rbpy_named_key_count(self, key, cms_query);
}

static PyObject *Cms_info(rbpy_named_t *self, PyObject *unused)
{
    rb_cms_info_t i;
    int rc;

    (void)unused;
    if (rbpy_named_ready(self) < 0)
        return NULL;
    if ((rc = rb_cms_info(self->segment->seg, self->cname, self->clen, &i)) != RB_OK)
        return rbpy_named_raise(self, rc);
    return Py_BuildValue("{sIsIsOsKsKsKsKsK}", "width", (unsigned)i.width, "depth",
                         (unsigned)i.depth, "small", i.small ? Py_True : Py_False, "count",
                         (unsigned long long)i.count, "aging", (unsigned long long)i.aging,
                         "since_aging", (unsigned long long)i.since_aging, "agings",
                         (unsigned long long)i.agings, "bytes", (unsigned long long)i.bytes);
}

static PyMethodDef Cms_methods[] = {
    {"query", (PyCFunction)Cms_query, METH_O,
     "query(key) -> int: the estimate of key's count (CMS.QUERY: never below what was added "
     "since the last aging step)."},
    {"info", (PyCFunction)Cms_info, METH_NOARGS,
     "info() -> dict: the sketch's figures (rb_cms_info)."},
    RBPY_NAMED_METHODS};

PyTypeObject rbpy_CmsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ringbloom.CountMinSketch",
    .tp_basicsize = sizeof(rbpy_named_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CountMinSketch(instance, name, owner=None, socket=None): count-min sketch "
              "`name` of the instance, read from shared memory.  instance may be a Segment "
              "to share.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Cms_init,
    .tp_dealloc = (destructor)rbpy_named_dealloc,
    .tp_repr = (reprfunc)rbpy_named_repr,
    .tp_methods = Cms_methods,
    .tp_members = rbpy_named_members,
};
