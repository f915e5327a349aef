/* accelmath._core._hostcall: call status-returning C functions of word-sized arguments
 * (integers and pointers, up to 16) for a fraction of what a ctypes call costs, alone
 * (Function) or after the checks of a plan's execute (Launch). It knows no library: a plan
 * describes its library call as data (the function, its error raiser and its argument slots).
 * Built when accelmath is installed (setup.py, an optional extension); where it is missing,
 * accelmath/_core/hostcall.py calls through ctypes instead. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* the most word arguments of any library call accelmath makes */
#define MAX_ARGS 16

typedef intptr_t W; /* one argument: an integer or a pointer, passed as one machine word */

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
static int call_words(void *f, Py_ssize_t n, const W *a) {
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

/* Function(address, nargs): the C function at address, int f(W, ..., W) of nargs words. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    void *address;
    Py_ssize_t nargs;
} Function;

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

static PyTypeObject FunctionType = {
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

/* Launch(slow, calls, xtype, read, out_readers, current_stream, local, mask): a plan's
 * execute made in C for its common call, and slow, the same execute in Python, for the rest.
 *
 * For a call f(x, out=out) (exactly one positional argument and the one keyword out), it
 * makes the call in C when all of these hold:
 *   - calls.get(None) is a tuple (func, fail, slots) with func a Function (no entry, as
 *     after the plan was freed and calls cleared: slow);
 *   - type(x) is xtype and read(x) returns x's pointer, an int (None: slow);
 *   - out_readers.get(type(out)) is a reader and it returns out's pointer (None: slow);
 *   - neither pointer has a bit of mask set;
 *   - local.state exists (AttributeError: slow) and local.state.stream == current_stream().
 * Then it calls func with one argument per entry of slots (a tuple of func.nargs entries):
 * an int is passed as it is; "handle", "in", "out", "stream" and "workspace" pass
 * local.state.handles[0], x's pointer, out's pointer, the current stream and
 * local.state.workspace (an int address). A nonzero status goes to fail(status), which
 * raises. It returns out. Every other call form, and every call where a check does not hold,
 * goes to slow unchanged; an exception raised by a reader, current_stream or fail propagates.
 * A slot of another kind, or a slots tuple whose length is not func.nargs, raises TypeError:
 * the plan that made it is wrong. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow, *calls, *xtype, *read, *out_readers, *current_stream, *local;
    unsigned long long mask;
} Launch;

enum { SLOT_HANDLE, SLOT_IN, SLOT_OUT, SLOT_STREAM, SLOT_WORKSPACE, SLOT_NAMES };
static const char *slot_names[SLOT_NAMES] = {"handle", "in", "out", "stream", "workspace"};
static PyObject *slot_strs[SLOT_NAMES];
static PyObject *str_state, *str_stream, *str_handles, *str_workspace;

/* Which named slot obj is (SLOT_*), or -1 with TypeError. */
static int slot_kind(PyObject *obj, Py_ssize_t index) {
    for (int k = 0; k < SLOT_NAMES; k++) {
        if (obj == slot_strs[k]) { /* the usual case: literals are interned */
            return k;
        }
    }
    if (PyUnicode_Check(obj)) {
        for (int k = 0; k < SLOT_NAMES; k++) {
            if (PyUnicode_Compare(obj, slot_strs[k]) == 0) {
                return k;
            }
        }
    }
    PyErr_Format(PyExc_TypeError,
                 "Launch: slot %zd is %R, should be an int or one of 'handle', 'in', 'out', "
                 "'stream', 'workspace'",
                 index, obj);
    return -1;
}

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

/* The word of attribute name of obj (0 and *word, -1 on an error). */
static int attr_word(PyObject *obj, PyObject *name, W *word) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) {
        return -1;
    }
    int done = to_word(value, word);
    Py_DECREF(value);
    return done;
}

/* local.state.handles[0] as a word (0, -1 on an error). */
static int handle_word(PyObject *state, W *word) {
    PyObject *handles = PyObject_GetAttr(state, str_handles);
    if (handles == NULL) {
        return -1;
    }
    PyObject *value = PySequence_GetItem(handles, 0);
    Py_DECREF(handles);
    if (value == NULL) {
        return -1;
    }
    int done = to_word(value, word);
    Py_DECREF(value);
    return done;
}

/* The checks, then the call: 1 with *result, 0 where a check does not hold, -1 on an error. */
static int launch_fast(Launch *self, PyObject *x, PyObject *out, PyObject **result) {
    int done = 0;
    PyObject *entry = NULL, *reader = NULL, *state = NULL, *stream = NULL, *value = NULL;
    W in_ptr, out_ptr, stream_word;
    if ((PyObject *)Py_TYPE(x) != self->xtype) {
        return 0;
    }
    entry = PyDict_GetItemWithError(self->calls, Py_None);
    if (entry == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(entry); /* kept: the Python code called below may change calls */
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3 ||
        Py_TYPE(PyTuple_GET_ITEM(entry, 0)) != &FunctionType) {
        goto end;
    }
    Function *func = (Function *)PyTuple_GET_ITEM(entry, 0);
    PyObject *slots = PyTuple_GET_ITEM(entry, 2);
    if (!PyTuple_Check(slots) || PyTuple_GET_SIZE(slots) != func->nargs) {
        PyErr_Format(PyExc_TypeError,
                     "Launch: calls[None] has slots %R, should be a tuple of %zd entries, one "
                     "per argument of its C function",
                     slots, func->nargs);
        done = -1;
        goto end;
    }
    reader = PyDict_GetItemWithError(self->out_readers, (PyObject *)Py_TYPE(out));
    if (reader == NULL) {
        done = PyErr_Occurred() ? -1 : 0;
        goto end;
    }
    Py_INCREF(reader);
    if ((done = read_pointer(self->read, x, &in_ptr)) != 1 ||
        (done = read_pointer(reader, out, &out_ptr)) != 1) {
        goto end;
    }
    done = 0;
    if (((unsigned long long)in_ptr | (unsigned long long)out_ptr) & self->mask) {
        goto end;
    }
    if ((state = PyObject_GetAttr(self->local, str_state)) == NULL) {
        /* this thread's first call makes its state, in Python */
        done = PyErr_ExceptionMatches(PyExc_AttributeError) ? 0 : -1;
        if (done == 0) {
            PyErr_Clear();
        }
        goto end;
    }
    if ((stream = PyObject_CallNoArgs(self->current_stream)) == NULL ||
        (value = PyObject_GetAttr(state, str_stream)) == NULL) {
        done = -1;
        goto end;
    }
    /* the handles are set to another stream: slow sets them to this one */
    if ((done = PyObject_RichCompareBool(value, stream, Py_EQ)) != 1 ||
        (done = to_word(stream, &stream_word)) < 0) {
        goto end;
    }
    W a[MAX_ARGS];
    for (Py_ssize_t i = 0; i < func->nargs; i++) {
        PyObject *slot = PyTuple_GET_ITEM(slots, i);
        if (PyLong_Check(slot)) {
            done = to_word(slot, &a[i]);
        } else {
            switch (slot_kind(slot, i)) {
            case SLOT_HANDLE: done = handle_word(state, &a[i]); break;
            case SLOT_IN: a[i] = in_ptr; break;
            case SLOT_OUT: a[i] = out_ptr; break;
            case SLOT_STREAM: a[i] = stream_word; break;
            case SLOT_WORKSPACE: done = attr_word(state, str_workspace, &a[i]); break;
            default: done = -1;
            }
        }
        if (done < 0) {
            goto end;
        }
    }
    int status = call_words(func->address, func->nargs, a);
    if (status) {
        PyObject *raised = PyObject_CallFunction(PyTuple_GET_ITEM(entry, 1), "i", status);
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
    Py_XDECREF(stream);
    Py_XDECREF(state);
    Py_XDECREF(reader);
    Py_DECREF(entry);
    return done;
}

static PyObject *launch_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    Launch *self = (Launch *)self_;
    PyObject *name;
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames != NULL && PyTuple_GET_SIZE(kwnames) == 1 &&
        ((name = PyTuple_GET_ITEM(kwnames, 0)) == slot_strs[SLOT_OUT] ||
         PyUnicode_Compare(name, slot_strs[SLOT_OUT]) == 0)) {
        PyObject *result = NULL;
        int done = launch_fast(self, args[0], args[1], &result);
        if (done) {
            return done > 0 ? result : NULL;
        }
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *launch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"slow", "calls", "xtype", "read", "out_readers",
                               "current_stream", "local", "mask", NULL};
    PyObject *slow, *calls, *xtype, *read, *out_readers, *current_stream, *local;
    unsigned long long mask;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOO!OOK", keywords, &slow, &PyDict_Type,
                                     &calls, &xtype, &read, &PyDict_Type, &out_readers,
                                     &current_stream, &local, &mask)) {
        return NULL;
    }
    Launch *self = (Launch *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = launch_vectorcall;
    self->slow = Py_NewRef(slow);
    self->calls = Py_NewRef(calls);
    self->xtype = Py_NewRef(xtype);
    self->read = Py_NewRef(read);
    self->out_readers = Py_NewRef(out_readers);
    self->current_stream = Py_NewRef(current_stream);
    self->local = Py_NewRef(local);
    self->mask = mask;
    return (PyObject *)self;
}

/* A plan holds its Launch and the Launch's slow holds the plan: a cycle for the collector. */
static int launch_traverse(PyObject *self_, visitproc visit, void *arg) {
    Launch *self = (Launch *)self_;
    Py_VISIT(self->slow);
    Py_VISIT(self->calls);
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
    Py_CLEAR(self->calls);
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

static PyObject *launch_repr(PyObject *self_) {
    PyObject *slow = ((Launch *)self_)->slow;
    if (slow == NULL) {
        return PyUnicode_FromString("<C launch, cleared>");
    }
    return PyUnicode_FromFormat("<C launch of %R>", slow);
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
    .tp_name = "accelmath._core._hostcall.Launch",
    .tp_basicsize = sizeof(Launch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Launch, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = launch_new,
    .tp_traverse = launch_traverse,
    .tp_clear = launch_clear,
    .tp_dealloc = launch_dealloc,
    .tp_repr = launch_repr,
    .tp_getset = launch_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "accelmath._core._hostcall",
    "Fast calls of status-returning C functions of word-sized arguments.", -1,
};

PyMODINIT_FUNC PyInit__hostcall(void) {
    if (PyType_Ready(&FunctionType) < 0 || PyType_Ready(&LaunchType) < 0) {
        return NULL;
    }
    for (int k = 0; k < SLOT_NAMES; k++) {
        if ((slot_strs[k] = PyUnicode_InternFromString(slot_names[k])) == NULL) {
            return NULL;
        }
    }
    if ((str_state = PyUnicode_InternFromString("state")) == NULL ||
        (str_stream = PyUnicode_InternFromString("stream")) == NULL ||
        (str_handles = PyUnicode_InternFromString("handles")) == NULL ||
        (str_workspace = PyUnicode_InternFromString("workspace")) == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Function", (PyObject *)&FunctionType) < 0 ||
        PyModule_AddObjectRef(m, "Launch", (PyObject *)&LaunchType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_ARGS", MAX_ARGS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
