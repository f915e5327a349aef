/* accelmath._hostcall: call C functions of integer and pointer arguments that return an int
 * (the cuFFT exec functions of accelmath's hot paths) for a fraction of what a ctypes call
 * costs, alone (Function) or after the checks of a plan's execute (Launch). Built on first
 * use by accelmath/_core/hostcall.py. */
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

static int call_words(void *f, Py_ssize_t n, const W *a);

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
    return PyLong_FromLong(call_words(self->address, n, a));
}

/* The call itself, with the GIL released. */
static int call_words(void *f, Py_ssize_t n, const W *a) {
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
    return status;
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

/* Launch(slow, runs, xtype, read, out_readers, current_stream, local, mask): a plan's
 * execute(x, out=out) checked and made in C, and every other call passed on to slow, the same
 * execute in Python, which also takes over wherever a check below does not hold. The call is
 * made when
 *   - runs[None] is (run, func, fail, code) with func a Function (a freed plan has no runs);
 *   - type(x) is xtype and read(x) is x's pointer (not None);
 *   - out_readers[type(out)] is a reader and it gives out's pointer;
 *   - neither pointer has a bit of mask;
 *   - local.state exists and local.state.stream == current_stream();
 * as func(local.state.handles[0], in_ptr, out_ptr[, code]) (no code where it is None); a
 * nonzero status goes to fail(status), which raises. It returns out. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow, *runs, *xtype, *read, *out_readers, *current_stream, *local;
    unsigned long long mask;
} Launch;

static PyObject *str_out, *str_state, *str_stream, *str_handles;

/* A pointer read by reader(obj): 1 and *ptr, 0 where it gives None, -1 on an error. */
static int read_pointer(PyObject *reader, PyObject *obj, W *ptr) {
    PyObject *value = PyObject_CallOneArg(reader, obj);
    if (value == NULL) {
        return -1;
    }
    int found = value != Py_None;
    if (found && to_word(value, ptr) < 0) {
        found = -1;
    }
    Py_DECREF(value);
    return found;
}

/* The fast path: 1 with *result, 0 where a check does not hold, -1 on an error. */
static int launch_fast(Launch *self, PyObject *x, PyObject *out, PyObject **result) {
    int done = 0;
    PyObject *run = NULL, *reader = NULL, *stream = NULL, *state = NULL, *value = NULL;
    if ((PyObject *)Py_TYPE(x) != self->xtype) {
        return 0;
    }
    run = PyDict_GetItemWithError(self->runs, Py_None);
    if (run == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(run); /* kept while Python code runs below */
    if (!PyTuple_Check(run) || PyTuple_GET_SIZE(run) != 4 ||
        Py_TYPE(PyTuple_GET_ITEM(run, 1)) != &FunctionType) {
        goto end;
    }
    Function *func = (Function *)PyTuple_GET_ITEM(run, 1);
    PyObject *code = PyTuple_GET_ITEM(run, 3);
    Py_ssize_t nargs = code == Py_None ? 3 : 4;
    W a[4] = {0, 0, 0, 0};
    if (func->nargs != nargs || (nargs == 4 && to_word(code, &a[3]) < 0)) {
        done = PyErr_Occurred() ? -1 : 0;
        goto end;
    }
    reader = PyDict_GetItemWithError(self->out_readers, (PyObject *)Py_TYPE(out));
    if (reader == NULL) {
        done = PyErr_Occurred() ? -1 : 0;
        goto end;
    }
    Py_INCREF(reader);
    if ((done = read_pointer(self->read, x, &a[1])) != 1 ||
        (done = read_pointer(reader, out, &a[2])) != 1) {
        goto end;
    }
    done = 0;
    if (((unsigned long long)a[1] | (unsigned long long)a[2]) & self->mask) {
        goto end;
    }
    if ((stream = PyObject_CallNoArgs(self->current_stream)) == NULL) {
        done = -1;
        goto end;
    }
    if ((state = PyObject_GetAttr(self->local, str_state)) == NULL) {
        /* this thread's first run makes its state, in Python */
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
        } else {
            done = -1;
        }
        goto end;
    }
    if ((value = PyObject_GetAttr(state, str_stream)) == NULL) {
        done = -1;
        goto end;
    }
    int same = PyObject_RichCompareBool(value, stream, Py_EQ);
    Py_CLEAR(value);
    if (same != 1) {
        done = same;
        goto end;
    }
    PyObject *handles = PyObject_GetAttr(state, str_handles);
    if (handles == NULL || (value = PySequence_GetItem(handles, 0)) == NULL ||
        to_word(value, &a[0]) < 0) {
        Py_XDECREF(handles);
        done = -1;
        goto end;
    }
    Py_DECREF(handles);
    int status = call_words(func->address, nargs, a);
    if (status) {
        PyObject *raised = PyObject_CallFunction(PyTuple_GET_ITEM(run, 2), "i", status);
        if (raised == NULL) {
            done = -1;
            goto end;
        }
        Py_DECREF(raised);
    }
    *result = Py_NewRef(out);
    done = 1;
end:
    Py_XDECREF(value);
    Py_XDECREF(state);
    Py_XDECREF(stream);
    Py_XDECREF(reader);
    Py_DECREF(run);
    return done;
}

static PyObject *launch_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    Launch *self = (Launch *)self_;
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames != NULL && PyTuple_GET_SIZE(kwnames) == 1 &&
        PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, 0), str_out) == 0) {
        PyObject *result = NULL;
        int done = launch_fast(self, args[0], args[1], &result);
        if (done) {
            return done > 0 ? result : NULL;
        }
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *launch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"slow", "runs", "xtype", "read", "out_readers",
                               "current_stream", "local", "mask", NULL};
    PyObject *slow, *runs, *xtype, *read, *out_readers, *current_stream, *local;
    unsigned long long mask;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOO!OOK", keywords, &slow, &PyDict_Type,
                                     &runs, &xtype, &read, &PyDict_Type, &out_readers,
                                     &current_stream, &local, &mask)) {
        return NULL;
    }
    Launch *self = (Launch *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = launch_vectorcall;
    self->slow = Py_NewRef(slow);
    self->runs = Py_NewRef(runs);
    self->xtype = Py_NewRef(xtype);
    self->read = Py_NewRef(read);
    self->out_readers = Py_NewRef(out_readers);
    self->current_stream = Py_NewRef(current_stream);
    self->local = Py_NewRef(local);
    self->mask = mask;
    return (PyObject *)self;
}

static int launch_traverse(PyObject *self_, visitproc visit, void *arg) {
    Launch *self = (Launch *)self_;
    Py_VISIT(self->slow);
    Py_VISIT(self->runs);
    Py_VISIT(self->xtype);
    Py_VISIT(self->read);
    Py_VISIT(self->out_readers);
    Py_VISIT(self->current_stream);
    Py_VISIT(self->local);
    return 0;
}

static int launch_clear(PyObject *self_) {
    Launch *self = (Launch *)self_;
    Py_CLEAR(self->slow);
    Py_CLEAR(self->runs);
    Py_CLEAR(self->xtype);
    Py_CLEAR(self->read);
    Py_CLEAR(self->out_readers);
    Py_CLEAR(self->current_stream);
    Py_CLEAR(self->local);
    return 0;
}

static void launch_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    launch_clear(self);
    Py_TYPE(self)->tp_free(self);
}

/* What inspect and help() read: the slow execute's signature and docstring. */
static PyObject *launch_wrapped(PyObject *self, void *closure) {
    PyObject *slow = ((Launch *)self)->slow;
    if (slow == NULL) {
        Py_RETURN_NONE;
    }
    return Py_NewRef(slow);
}

static PyObject *launch_doc(PyObject *self, void *closure) {
    PyObject *slow = ((Launch *)self)->slow;
    if (slow == NULL) {
        Py_RETURN_NONE;
    }
    return PyObject_GetAttrString(slow, "__doc__");
}

static PyGetSetDef launch_getset[] = {
    {"__wrapped__", launch_wrapped, NULL, "The execute in Python that this one passes on to.",
     NULL},
    {"__doc__", launch_doc, NULL, NULL, NULL},
    {NULL},
};

static PyTypeObject LaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._hostcall.Launch",
    .tp_basicsize = sizeof(Launch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Launch, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = launch_new,
    .tp_traverse = launch_traverse,
    .tp_clear = launch_clear,
    .tp_dealloc = launch_dealloc,
    .tp_getset = launch_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_hostcall", "Fast calls of C functions of integer arguments.", -1,
};

PyMODINIT_FUNC PyInit__hostcall(void) {
    if (PyType_Ready(&FunctionType) < 0 || PyType_Ready(&LaunchType) < 0) {
        return NULL;
    }
    if ((str_out = PyUnicode_InternFromString("out")) == NULL ||
        (str_state = PyUnicode_InternFromString("state")) == NULL ||
        (str_stream = PyUnicode_InternFromString("stream")) == NULL ||
        (str_handles = PyUnicode_InternFromString("handles")) == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Function", (PyObject *)&FunctionType) < 0 ||
        PyModule_AddObjectRef(m, "Launch", (PyObject *)&LaunchType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
