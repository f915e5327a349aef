/* Function(address, nargs), part of accelmath._core._hostcall: the C function at address,
 * int f(W, ..., W) of nargs words, called from Python for a fraction of what a ctypes call
 * costs; call_words, the call itself, which Launch (hostcall.c) makes too. */
#include "shim.h"

/* The argument lists of 1 to 16 words, as types and as values of a[]. */
#define T1 W
#define T2 T1, W
#define T3 T2, W
#define T4 T3, W
#define T5 T4, W
#define T6 T5, W
#define T7 T6, W
#define T8 T7, W
#define T9 T8, W
#define T10 T9, W
#define T11 T10, W
#define T12 T11, W
#define T13 T12, W
#define T14 T13, W
#define T15 T14, W
#define T16 T15, W
#define A1 a[0]
#define A2 A1, a[1]
#define A3 A2, a[2]
#define A4 A3, a[3]
#define A5 A4, a[4]
#define A6 A5, a[5]
#define A7 A6, a[6]
#define A8 A7, a[7]
#define A9 A8, a[8]
#define A10 A9, a[9]
#define A11 A10, a[10]
#define A12 A11, a[11]
#define A13 A12, a[12]
#define A14 A13, a[13]
#define A15 A14, a[14]
#define A16 A15, a[15]
#define CALL(n) \
    case n: status = ((int (*)(T##n))f)(A##n); break;

/* The call itself, with the GIL released: the library may block (a synchronizing call) and
 * other threads should run meanwhile. The function is called through a pointer of exactly
 * n word arguments, so that the callee finds each where its own prototype expects it. */
int call_words(void *f, Py_ssize_t n, const W *a) {
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    switch (n) {
    case 0: status = ((int (*)(void))f)(); break;
    CALL(1) CALL(2) CALL(3) CALL(4) CALL(5) CALL(6) CALL(7) CALL(8)
    CALL(9) CALL(10) CALL(11) CALL(12) CALL(13) CALL(14) CALL(15) CALL(16)
    }
    Py_END_ALLOW_THREADS
    return status;
}

static PyObject *function_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    Function *self = (Function *)self_;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n != self->nargs || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError,
                     "this C function takes %zd positional arguments, got %zd positional and "
                     "%zd keyword arguments",
                     self->nargs, n, kwnames == NULL ? (Py_ssize_t)0 : PyTuple_GET_SIZE(kwnames));
        return NULL;
    }
    W a[MAX_ARGS];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (to_word(args[i], &a[i]) < 0) {
            return NULL;
        }
    }
    return PyLong_FromLong(call_words(self->address, n, a));
}

static PyObject *function_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"address", "nargs", NULL};
    unsigned long long address;
    Py_ssize_t nargs;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Kn", keywords, &address, &nargs)) {
        return NULL;
    }
    if (address == 0) {
        PyErr_SetString(PyExc_ValueError, "Function: address 0 is NULL, not a C function");
        return NULL;
    }
    if (nargs < 0 || nargs > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "Function: nargs=%zd, should be 0 to %d", nargs,
                     MAX_ARGS);
        return NULL;
    }
    Function *self = (Function *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = function_vectorcall;
    self->address = (void *)(uintptr_t)address;
    self->nargs = nargs;
    return (PyObject *)self;
}

static PyObject *function_repr(PyObject *self_) {
    Function *self = (Function *)self_;
    return PyUnicode_FromFormat("<C function at %p of %zd arguments>", self->address,
                                self->nargs);
}

static PyObject *function_address(PyObject *self, void *closure) {
    return PyLong_FromVoidPtr(((Function *)self)->address);
}

static PyObject *function_nargs(PyObject *self, void *closure) {
    return PyLong_FromSsize_t(((Function *)self)->nargs);
}

static PyGetSetDef function_getset[] = {
    {"address", function_address, NULL, "The C function's address.", NULL},
    {"nargs", function_nargs, NULL, "How many word arguments it takes.", NULL},
    {NULL},
};

PyTypeObject FunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._core._hostcall.Function",
    .tp_doc = "Function(address, nargs): the C function at address, of nargs (0 to 16) "
              "integer or pointer arguments and an int result, called with the GIL released. "
              "Its arguments are ints (taken modulo 2**64) or None (NULL).",
    .tp_basicsize = sizeof(Function),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Function, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = function_new,
    .tp_repr = function_repr,
    .tp_getset = function_getset,
};
