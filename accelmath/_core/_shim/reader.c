/* Reader(checks, pointer, held=None), part of accelmath._core._hostcall: a function of one
 * array x that returns pointer(x) where get(x) == expected for each (get, expected) of the
 * tuple checks, else None. It is a plan's reader of one layout's arrays (see
 * hostcall.reader), made in C: the same checks and the same calls, without an interpreter
 * frame. A get (or pointer) that is a getset or member descriptor (a property of a C type, as
 * an array's shape and dtype are) is read through the descriptor itself; any other is called
 * with x. held, a pair (hold, held_checks), reads an object of x once, h = hold(x) (the
 * memory it points into, say), checks h as checks does x, and returns pointer(h). */
#include "shim.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *checks, *pointer, *hold, *held_checks; /* hold NULL: none */
} Reader;

/* get(x): a new reference, NULL on an error. */
static PyObject *value_of(PyObject *get, PyObject *x) {
    PyTypeObject *kind = Py_TYPE(get);
    if (kind == &PyGetSetDescr_Type || kind == &PyMemberDescr_Type) {
        return kind->tp_descr_get(get, x, (PyObject *)Py_TYPE(x));
    }
    return PyObject_Vectorcall(get, &x, 1, NULL);
}

/* Whether get(x) == expected for each (get, expected) of the tuple checks, in order: 1, 0 at
 * the first that fails, -1 on an error. */
int reader_checks(PyObject *checks, PyObject *x) {
    Py_ssize_t n = PyTuple_GET_SIZE(checks);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *check = PyTuple_GET_ITEM(checks, i); /* (get, expected) */
        PyObject *value = value_of(PyTuple_GET_ITEM(check, 0), x);
        if (value == NULL) {
            return -1;
        }
        int same = PyObject_RichCompareBool(value, PyTuple_GET_ITEM(check, 1), Py_EQ);
        Py_DECREF(value);
        if (same <= 0) {
            return same;
        }
    }
    return 1;
}

/* 0 where checks (a tuple) holds (get, expected) pairs, else -1 with TypeError. */
int reader_checks_valid(PyObject *checks) {
    Py_ssize_t n = PyTuple_GET_SIZE(checks);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *check = PyTuple_GET_ITEM(checks, i);
        if (!PyTuple_Check(check) || PyTuple_GET_SIZE(check) != 2) {
            PyErr_Format(PyExc_TypeError, "reader: check %zd is %R, should be (get, expected)",
                         i, check);
            return -1;
        }
    }
    return 0;
}

static PyObject *reader_call(PyObject *self_, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    Reader *self = (Reader *)self_;
    if (self->checks == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Reader: called after it was cleared");
        return NULL;
    }
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "Reader takes one argument, the array");
        return NULL;
    }
    PyObject *x = args[0];
    int held = reader_checks(self->checks, x);
    if (held <= 0) {
        return held < 0 ? NULL : Py_NewRef(Py_None);
    }
    if (self->hold == NULL) {
        return value_of(self->pointer, x);
    }
    PyObject *h = value_of(self->hold, x);
    if (h == NULL) {
        return NULL;
    }
    held = reader_checks(self->held_checks, h);
    PyObject *result = held <= 0 ? (held < 0 ? NULL : Py_NewRef(Py_None))
                                 : value_of(self->pointer, h);
    Py_DECREF(h);
    return result;
}

static PyObject *reader_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    return guarded(reader_call, " in a Reader call", self, args, nargsf, kwnames);
}

/* Whether get is a descriptor value_of reads, or a callable. */
static int gettable(PyObject *get) {
    PyTypeObject *kind = Py_TYPE(get);
    return kind == &PyGetSetDescr_Type || kind == &PyMemberDescr_Type || PyCallable_Check(get);
}

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"checks", "pointer", "held", NULL};
    PyObject *checks, *pointer, *held = Py_None, *hold = NULL, *held_checks = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|O:Reader", keywords, &PyTuple_Type,
                                     &checks, &pointer, &held)) {
        return NULL;
    }
    if (reader_checks_valid(checks) < 0) {
        return NULL;
    }
    if (!gettable(pointer)) {
        PyErr_Format(PyExc_TypeError, "Reader: pointer %R is neither callable nor a "
                     "descriptor", pointer);
        return NULL;
    }
    if (held != Py_None) {
        if (!PyTuple_Check(held) || PyTuple_GET_SIZE(held) != 2 ||
            !gettable(PyTuple_GET_ITEM(held, 0)) || !PyTuple_Check(PyTuple_GET_ITEM(held, 1))) {
            PyErr_Format(PyExc_TypeError, "Reader: held %R, should be None or (hold, a tuple "
                         "of checks)", held);
            return NULL;
        }
        hold = PyTuple_GET_ITEM(held, 0);
        held_checks = PyTuple_GET_ITEM(held, 1);
        if (reader_checks_valid(held_checks) < 0) {
            return NULL;
        }
    }
    Reader *self = (Reader *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = reader_vectorcall;
    self->checks = Py_NewRef(checks);
    self->pointer = Py_NewRef(pointer);
    self->hold = Py_XNewRef(hold);
    self->held_checks = Py_XNewRef(held_checks);
    return (PyObject *)self;
}

static int reader_traverse(PyObject *self_, visitproc visit, void *arg) {
    Reader *self = (Reader *)self_;
    Py_VISIT(self->checks);
    Py_VISIT(self->pointer);
    Py_VISIT(self->hold);
    Py_VISIT(self->held_checks);
    return 0;
}

static int reader_clear(PyObject *self_) {
    Reader *self = (Reader *)self_;
    Py_CLEAR(self->checks);
    Py_CLEAR(self->pointer);
    Py_CLEAR(self->hold);
    Py_CLEAR(self->held_checks);
    return 0;
}

static void reader_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    reader_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *reader_repr(PyObject *self_) {
    Reader *self = (Reader *)self_;
    if (self->hold != NULL) {
        return PyUnicode_FromFormat("<C reader: %R, then %R of %R, %R>", self->checks,
                                    self->pointer, self->hold, self->held_checks);
    }
    return PyUnicode_FromFormat("<C reader: %R, then %R>", self->checks, self->pointer);
}

PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._core._hostcall.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Reader, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = reader_new,
    .tp_traverse = reader_traverse,
    .tp_clear = reader_clear,
    .tp_dealloc = reader_dealloc,
    .tp_repr = reader_repr,
};
