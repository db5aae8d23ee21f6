/*
 * _ringbloom.h - what the files of the C extension ringbloom._ringbloom
 * share: the error helper, the key and name arguments, the Segment type
 * every reader attaches through, and the reader of one named structure
 * (a Bloom or cuckoo filter, a sketch, a counter) that the per-kind files
 * build their types on.
 *
 * Files: _ringbloom.c (the module: init, functions, errors), _keys.c (keys
 * and names), _segment.c (Segment), _named.c (the named reader), _ring.c
 * (Ring), _filter.c (Filter: Bloom), _cuckoo.c (CuckooFilter), _cms.c
 * (CountMinSketch), _hll.c (HyperLogLog), _cbf.c (CountingBloomFilter),
 * _tinylfu.c (TinyLFU).  Everything is on the public
 * API <ringbloom.h> only.  Symbols shared between the files are rbpy_*;
 * the extension is built with hidden visibility, so only PyInit__ringbloom
 * leaves the shared object.
 */
#ifndef RBPY_RINGBLOOM_H
#define RBPY_RINGBLOOM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <sys/types.h>

#include <ringbloom.h>

/* ---- errors (_ringbloom.c) ---- */

/* Raises the exception of RB_E* `code` (ringbloom._errors.from_code);
 * context (may be NULL) says what was being done ("attach 'default'",
 * "filter 'urls'").  Returns NULL so callers can `return rbpy_raise(...)`. */
PyObject *rbpy_raise(int code, const char *context);

/* ---- keys and names (_keys.c) ---- */

/* A key's bytes: str as UTF-8 (a pointer into the str's cached encoding,
 * valid while the str lives), bytes directly, anything else through the
 * buffer protocol into *view (which the caller releases if view->obj is
 * set).  -1 with TypeError for other objects. */
int rbpy_key_bytes(PyObject *o, const char **p, Py_ssize_t *n, Py_buffer *view);

/* A "name" argument (instance, filter) as str or bytes, no NUL: 0, or -1
 * with TypeError / ValueError naming `what`. */
int rbpy_name_arg(PyObject *o, const char **p, Py_ssize_t *n, const char *what);

/* A batch of keys pinned for a call without the GIL: a tuple of our own
 * (no other thread can replace or free an item) and the rb_key_t of each,
 * pointing into it (or into views held until rbpy_keys_release). */
typedef struct rbpy_keys {
    PyObject *tuple;
    rb_key_t *kv;
    Py_buffer *views;
    Py_ssize_t n, nviews;
} rbpy_keys_t;

/* Pins the keys of any iterable: 0, or -1 with an exception set (nothing
 * left to release). */
int rbpy_keys_pin(rbpy_keys_t *b, PyObject *iterable);
void rbpy_keys_release(rbpy_keys_t *b);

/* ---- Segment (_segment.c) ---- */

typedef struct {
    PyObject_HEAD
    rb_segment_t *seg;
    PyObject *instance;  /* str */
    long owner;          /* the uid pinned */
} rbpy_segment_t;

extern PyTypeObject rbpy_SegmentType;

/* The Segment behind a reader's argument: a Segment is used as is, an
 * instance name (str/bytes) or None ("default") attaches a new one with
 * owner and socket.  A new reference, or NULL with an exception set. */
rbpy_segment_t *rbpy_segment_of(PyObject *o, PyObject *owner, PyObject *socket);

/* rb_daemon_uid(instance, socket_path) (the owner of the socket's
 * directory, after checking nobody else could have made it): 0, or -1
 * with the exception raised (its context the library's reason). */
int rbpy_daemon_uid(const char *instance, const char *socket_path, uid_t *uid);

/* Where instance's daemon listens, as rb_conn_open and rb_daemon_uid
 * look: RB_OK or an RB_E* code. */
int rbpy_socket_for(const char *instance, char *out, size_t cap);

/* ---- a reader of one named structure (_named.c) ---- */

/* A kind as the extension sees it: what its errors call it, its library
 * handle's open and close, and (membership kinds; else NULL) its lock-free
 * contains and contains_many. */
typedef struct rbpy_kind {
    const char *what;    /* "filter", "cuckoo filter", "sketch", "counter", ... */
    const char *type;    /* the Python type's name, for messages */
    int (*open)(const rb_segment_t *seg, const char *name, size_t len, void **out);
    void (*close)(void *h);
    int (*contains)(const void *h, const void *key, size_t klen);
    int64_t (*contains_many)(const void *h, const rb_key_t *keys, size_t n, uint8_t *out);
} rbpy_kind_t;

/* The object of every named reader (Filter, CuckooFilter, CountMinSketch,
 * HyperLogLog, CountingBloomFilter, TinyLFU). */
typedef struct {
    PyObject_HEAD
    const rbpy_kind_t *kind;  /* set by rbpy_named_init */
    rbpy_segment_t *segment;
    void *h;             /* the kind's handle; NULL once closed */
    PyObject *name;      /* str */
    char cname[RB_FILTER_NAME_MAX + 1]; /* the name's bytes (no NUL inside) */
    size_t clen;
    long busy;           /* calls running without the GIL (changed under it) */
} rbpy_named_t;

/* tp_init of a named reader: (instance, name, owner=None, socket=None),
 * the handle opened by kind->open. */
int rbpy_named_init(rbpy_named_t *self, PyObject *args, PyObject *kw, const rbpy_kind_t *kind);
/* 0 if open, else -1 with ValueError ("the <type> is closed"). */
int rbpy_named_ready(rbpy_named_t *self);
/* Raises code with the context "<what> '<name>'"; returns NULL. */
PyObject *rbpy_named_raise(rbpy_named_t *self, int code);
/* __enter__ of every reader type: the object itself. */
PyObject *rbpy_self_enter(PyObject *self, PyObject *unused);

/* The slots and methods every named reader's type uses as they are:
 * tp_dealloc (busy is 0 there: a call in flight holds a reference),
 * tp_repr, close() (Busy while another thread's call runs without the
 * GIL), __exit__; and for the membership kinds contains (a method and
 * `in`) and contains_many (list[bool], the GIL released during the
 * library's batch, the keys pinned and busy counted). */
void rbpy_named_dealloc(rbpy_named_t *self);
PyObject *rbpy_named_repr(rbpy_named_t *self);
PyObject *rbpy_named_close(rbpy_named_t *self, PyObject *unused);
PyObject *rbpy_named_exit(rbpy_named_t *self, PyObject *args);
PyObject *rbpy_named_contains(rbpy_named_t *self, PyObject *key);
int rbpy_named_sq_contains(rbpy_named_t *self, PyObject *key);
PyObject *rbpy_named_contains_many(rbpy_named_t *self, PyObject *iterable);

/* A per-key call of a kind that answers a count (CF.COUNT, CMS.QUERY):
 * fn(self, key bytes, &out) -> RB_OK or an RB_E* code.  Returns out as an
 * int, or NULL with the exception raised (TypeError for a bad key, the
 * code's class with the name as context). */
typedef int (*rbpy_key_count_fn)(rbpy_named_t *self, const void *key, size_t klen,
                                 uint64_t *out);
PyObject *rbpy_named_key_count(rbpy_named_t *self, PyObject *key, rbpy_key_count_fn fn);

/* The "name" and "segment" members, the `in` operator of membership
 * kinds, and the method rows every named reader ends its table with. */
extern PyMemberDef rbpy_named_members[];
extern PySequenceMethods rbpy_named_as_sequence;
#define RBPY_NAMED_METHODS                                                              \
    {"close", (PyCFunction)rbpy_named_close, METH_NOARGS,                              \
     "close(): release the handle (Busy while another thread's call runs without the " \
     "GIL)."},                                                                          \
    {"__enter__", rbpy_self_enter, METH_NOARGS, NULL},                                  \
    {"__exit__", (PyCFunction)rbpy_named_exit, METH_VARARGS, NULL},                     \
    {NULL, NULL, 0, NULL}

/* ---- the types the per-kind files define ---- */

extern PyTypeObject rbpy_RingType, rbpy_FilterType, rbpy_CuckooType, rbpy_CmsType,
    rbpy_HllType, rbpy_CbfType, rbpy_TinylfuType;

#endif /* RBPY_RINGBLOOM_H */
