/* accelmath._hostcall: call C functions of integer and pointer arguments that return an int
 * (the cuFFT exec functions of accelmath's hot paths) for a fraction of what a ctypes call
 * costs. Built on first use by accelmath/_core/hostcall.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_ARGS 8

typedef intptr_t W; /* one argument: an integer or a pointer, passed in a register */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    void *address;
    Py_ssize_t nargs;
} Function;

/* None is NULL; integers are taken modulo 2**64, as ctypes takes c_void_p values. */
static int to_word(PyObject *obj, W *word) {
    if (obj == Py_None) {
        *word = 0;
        return 0;
    }
    unsigned long long value = PyLong_AsUnsignedLongLongMask(obj);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) {
        return -1;
    }
    *word = (W)value;
    return 0;
}

static PyObject *function_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    Function *self = (Function *)self_;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n != self->nargs || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_Format(PyExc_TypeError, "this C function takes %zd positional arguments",
                     self->nargs);
        return NULL;
    }
    W a[MAX_ARGS];
    for (Py_ssize_t i = 0; i < n; i++) {
        if (to_word(args[i], &a[i]) < 0) {
            return NULL;
        }
    }
    void *f = self->address;
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    switch (n) {
    case 0: status = ((int (*)(void))f)(); break;
    case 1: status = ((int (*)(W))f)(a[0]); break;
    case 2: status = ((int (*)(W, W))f)(a[0], a[1]); break;
    case 3: status = ((int (*)(W, W, W))f)(a[0], a[1], a[2]); break;
    case 4: status = ((int (*)(W, W, W, W))f)(a[0], a[1], a[2], a[3]); break;
    case 5: status = ((int (*)(W, W, W, W, W))f)(a[0], a[1], a[2], a[3], a[4]); break;
    case 6: status = ((int (*)(W, W, W, W, W, W))f)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7:
        status = ((int (*)(W, W, W, W, W, W, W))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
        break;
    case 8:
        status = ((int (*)(W, W, W, W, W, W, W, W))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                                                      a[7]);
        break;
    }
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(status);
}

static PyObject *function_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"address", "nargs", NULL};
    unsigned long long address;
    Py_ssize_t nargs;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Kn", keywords, &address, &nargs)) {
        return NULL;
    }
    if (address == 0 || nargs < 0 || nargs > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "need a function address and 0 to %d arguments",
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

static PyTypeObject FunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._hostcall.Function",
    .tp_doc = "Function(address, nargs): a C function of nargs integer or pointer arguments "
              "returning int, called with the GIL released.",
    .tp_basicsize = sizeof(Function),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Function, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = function_new,
    .tp_repr = function_repr,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hostcall", "Fast calls of C functions of integer arguments.", -1,
};

PyMODINIT_FUNC PyInit__hostcall(void) {
    if (PyType_Ready(&FunctionType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&FunctionType);
    if (PyModule_AddObject(m, "Function", (PyObject *)&FunctionType) < 0) {
        Py_DECREF(&FunctionType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
