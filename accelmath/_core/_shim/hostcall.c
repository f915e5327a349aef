/* accelmath._core._hostcall: call status-returning C functions of word-sized arguments
 * (integers and pointers, up to 16) for a fraction of what a ctypes call costs, alone
 * (Function, function.c) or after the checks of a plan's execute (Launch, here); Reader
 * (reader.c) reads an array's pointer after the checks of its layout; Front (front.c) makes
 * a public function's commonest calls from a table of launchers. It knows no library:
 * a plan describes its library call as data (the function, its error raiser and its argument
 * slots). Built when accelmath is installed (setup.py, an optional extension); where it is
 * missing, accelmath/_core/hostcall.py calls through ctypes instead. */
#include "shim.h"

/* Launch(slow, calls, inputs, out_readers, allocate, current_stream, local, mask): a plan's
 * execute made in C for its common calls, and slow, the same execute in Python, for the rest.
 *
 * inputs is a tuple of up to MAX_INPUTS (xtype, read, bound) triples, one per operand. For a
 * call f(x0, ..., out=out) with at most len(inputs) positional arguments and no keyword but
 * out, it makes the call in C when all of these hold:
 *   - calls.get(None) is a tuple (func, fail, slots) with func a Function (no entry, as
 *     after the plan was freed and calls cleared: slow);
 *   - each operand xi (a positional argument, or bound where it is left out or None; a
 *     bound None: slow) has type xtype and read(xi) returns its pointer, an int (None: slow);
 *   - out is given and out_readers.get(type(out)) returns its pointer (None: slow), or out
 *     is left out (or None) and allocate is a pair (make, pointer): make() returns out and
 *     pointer(out) its pointer (allocate None: slow);
 *   - no pointer has a bit of mask set;
 *   - local.state exists (AttributeError: slow) and local.state.stream == current_stream().
 * Then it calls func with one argument per entry of slots (a tuple of func.nargs entries):
 * an int is passed as it is; "handle" and "handle1" pass local.state.handles[0] and [1];
 * "in" (or "in0"), "in1", "in2", "in3" the operands' pointers; "out", "stream" and
 * "workspace" out's pointer, the current stream and local.state.workspace (an int address).
 * A nonzero status goes to fail(status), which raises. It returns out. Every other call
 * form, and every call where a check does not hold, goes to slow unchanged; an exception
 * raised by a reader, allocate, current_stream or fail propagates. A slot of another kind,
 * or a slots tuple whose length is not func.nargs, raises TypeError: the plan that made it
 * is wrong. */
#define MAX_INPUTS 4

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *slow, *calls, *inputs, *out_readers, *allocate, *current_stream, *local;
    unsigned long long mask;
} Launch;

enum { SLOT_HANDLE, SLOT_HANDLE1, SLOT_IN, SLOT_IN0, SLOT_IN1, SLOT_IN2, SLOT_IN3, SLOT_OUT,
       SLOT_STREAM, SLOT_WORKSPACE, SLOT_NAMES };
static const char *slot_names[SLOT_NAMES] = {"handle", "handle1", "in", "in0", "in1", "in2",
                                             "in3", "out", "stream", "workspace"};
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
                 "Launch: slot %zd is %R, should be an int or one of 'handle', 'handle1', "
                 "'in', 'in0' to 'in3', 'out', 'stream', 'workspace'",
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

/* local.state.handles[k] as a word (0, -1 on an error). */
static int handle_word(PyObject *state, Py_ssize_t k, W *word) {
    PyObject *handles = PyObject_GetAttr(state, str_handles);
    if (handles == NULL) {
        return -1;
    }
    PyObject *value = PySequence_GetItem(handles, k);
    Py_DECREF(handles);
    if (value == NULL) {
        return -1;
    }
    int done = to_word(value, word);
    Py_DECREF(value);
    return done;
}

/* The operands' pointers into ptrs: 1, 0 where a check does not hold, -1 on an error. */
static int read_inputs(Launch *self, PyObject *const *args, Py_ssize_t nargs, W *ptrs) {
    Py_ssize_t n = PyTuple_GET_SIZE(self->inputs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *input = PyTuple_GET_ITEM(self->inputs, i); /* (xtype, read, bound) */
        PyObject *x = i < nargs ? args[i] : Py_None;
        if (x == Py_None) {
            x = PyTuple_GET_ITEM(input, 2);
        }
        if (x == Py_None || (PyObject *)Py_TYPE(x) != PyTuple_GET_ITEM(input, 0)) {
            return 0;
        }
        int done = read_pointer(PyTuple_GET_ITEM(input, 1), x, &ptrs[i]);
        if (done != 1) {
            return done;
        }
        if ((unsigned long long)ptrs[i] & self->mask) {
            return 0;
        }
    }
    return 1;
}

/* out's pointer (out given) or a new out and its pointer (out NULL): 1 with *result a new
 * reference, 0 where a check does not hold, -1 on an error. */
static int output(Launch *self, PyObject *out, PyObject **result, W *ptr) {
    if (out != NULL) {
        PyObject *reader = PyDict_GetItemWithError(self->out_readers, (PyObject *)Py_TYPE(out));
        if (reader == NULL) {
            return PyErr_Occurred() ? -1 : 0;
        }
        Py_INCREF(reader);
        int done = read_pointer(reader, out, ptr);
        Py_DECREF(reader);
        if (done == 1) {
            *result = Py_NewRef(out);
        }
        return done;
    }
    if (self->allocate == Py_None) {
        return 0;
    }
    /* (a pair, checked when the Launch was made) */
    PyObject *made = PyObject_CallNoArgs(PyTuple_GET_ITEM(self->allocate, 0));
    if (made == NULL) {
        return -1;
    }
    PyObject *pointer = PyObject_CallOneArg(PyTuple_GET_ITEM(self->allocate, 1), made);
    if (pointer == NULL) {
        Py_DECREF(made);
        return -1;
    }
    int fails = to_word(pointer, ptr) < 0;
    Py_DECREF(pointer);
    if (fails) {
        Py_DECREF(made);
        return -1;
    }
    *result = made;
    return 1;
}

/* The checks, then the call: 1 with *result, 0 where a check does not hold, -1 on an error.
 * out is NULL where the call gave none. */
static int launch_fast(Launch *self, PyObject *const *args, Py_ssize_t nargs, PyObject *out,
                       PyObject **result) {
    int done = 0;
    PyObject *entry = NULL, *state = NULL, *stream = NULL, *value = NULL, *made = NULL;
    W in_ptrs[MAX_INPUTS] = {0}, out_ptr, stream_word;
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
    if ((done = read_inputs(self, args, nargs, in_ptrs)) != 1) {
        goto end;
    }
    done = 0;
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
    if ((done = output(self, out, &made, &out_ptr)) != 1) {
        goto end;
    }
    done = 0;
    if ((unsigned long long)out_ptr & self->mask) {
        goto end;
    }
    W a[MAX_ARGS];
    for (Py_ssize_t i = 0; i < func->nargs; i++) {
        PyObject *slot = PyTuple_GET_ITEM(slots, i);
        if (PyLong_Check(slot)) {
            done = to_word(slot, &a[i]);
        } else {
            switch (slot_kind(slot, i)) {
            case SLOT_HANDLE: done = handle_word(state, 0, &a[i]); break;
            case SLOT_HANDLE1: done = handle_word(state, 1, &a[i]); break;
            case SLOT_IN: case SLOT_IN0: a[i] = in_ptrs[0]; break;
            case SLOT_IN1: a[i] = in_ptrs[1]; break;
            case SLOT_IN2: a[i] = in_ptrs[2]; break;
            case SLOT_IN3: a[i] = in_ptrs[3]; break;
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
    *result = made;
    made = NULL;
    done = 1;
end:
    Py_XDECREF(made);
    Py_XDECREF(value);
    Py_XDECREF(stream);
    Py_XDECREF(state);
    Py_DECREF(entry);
    return done;
}

static PyObject *launch_call(PyObject *self_, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames) {
    Launch *self = (Launch *)self_;
    if (self->slow == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Launch: called after it was cleared");
        return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *name;
    if (nargs <= PyTuple_GET_SIZE(self->inputs) &&
        (nkw == 0 || (nkw == 1 && ((name = PyTuple_GET_ITEM(kwnames, 0)) == slot_strs[SLOT_OUT] ||
                                   PyUnicode_Compare(name, slot_strs[SLOT_OUT]) == 0)))) {
        PyObject *result = NULL, *out = nkw ? args[nargs] : NULL;
        int done = launch_fast(self, args, nargs, out == Py_None ? NULL : out, &result);
        if (done) {
            return done > 0 ? result : NULL;
        }
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *launch_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames) {
    return guarded(launch_call, " in a Launch call", self, args, nargsf, kwnames);
}

static PyObject *launch_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"slow", "calls", "inputs", "out_readers", "allocate",
                               "current_stream", "local", "mask", NULL};
    PyObject *slow, *calls, *inputs, *out_readers, *allocate, *current_stream, *local;
    unsigned long long mask;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!O!OOOK", keywords, &slow, &PyDict_Type,
                                     &calls, &PyTuple_Type, &inputs, &PyDict_Type,
                                     &out_readers, &allocate, &current_stream, &local, &mask)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(inputs) > MAX_INPUTS) {
        PyErr_Format(PyExc_ValueError, "Launch: %zd inputs, at most %d",
                     PyTuple_GET_SIZE(inputs), MAX_INPUTS);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(inputs); i++) {
        PyObject *input = PyTuple_GET_ITEM(inputs, i);
        if (!PyTuple_Check(input) || PyTuple_GET_SIZE(input) != 3) {
            PyErr_Format(PyExc_TypeError,
                         "Launch: input %zd is %R, should be a tuple (xtype, read, bound)", i,
                         input);
            return NULL;
        }
    }
    if (allocate != Py_None && !(PyTuple_Check(allocate) && PyTuple_GET_SIZE(allocate) == 2)) {
        PyErr_Format(PyExc_TypeError,
                     "Launch: allocate is %R, should be None or a tuple (make, pointer)",
                     allocate);
        return NULL;
    }
    Launch *self = (Launch *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = launch_vectorcall;
    self->slow = Py_NewRef(slow);
    self->calls = Py_NewRef(calls);
    self->inputs = Py_NewRef(inputs);
    self->out_readers = Py_NewRef(out_readers);
    self->allocate = Py_NewRef(allocate);
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
    Py_VISIT(self->inputs);
    Py_VISIT(self->out_readers);
    Py_VISIT(self->allocate);
    Py_VISIT(self->current_stream);
    Py_VISIT(self->local);
    return 0;
}

static int launch_clear(PyObject *self_) {
    Launch *self = (Launch *)self_;
    Py_CLEAR(self->slow);
    Py_CLEAR(self->calls);
    Py_CLEAR(self->inputs);
    Py_CLEAR(self->out_readers);
    Py_CLEAR(self->allocate);
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

static PyMethodDef functions[] = {
    {"exchange_layout", (PyCFunction)(void (*)(void))exchange_layout, METH_FASTCALL,
     "exchange_layout(api, x): (code, bits, lanes, device_type, device_id, shape, strides, "
     "address) of array x, as the DLPack exchange API in capsule api describes it."},
    {NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "accelmath._core._hostcall",
    "Fast calls of status-returning C functions of word-sized arguments.", -1, functions,
};

PyMODINIT_FUNC PyInit__hostcall(void) {
    if (PyType_Ready(&FunctionType) < 0 || PyType_Ready(&LaunchType) < 0 ||
        PyType_Ready(&ReaderType) < 0 || PyType_Ready(&ChainType) < 0 ||
        PyType_Ready(&ExchangeReaderType) < 0 || PyType_Ready(&ExchangeStreamType) < 0 ||
        PyType_Ready(&CapsuleStreamType) < 0 || front_ready() < 0) {
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
        PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddObjectRef(m, "Front", (PyObject *)&FrontType) < 0 ||
        PyModule_AddObjectRef(m, "Chain", (PyObject *)&ChainType) < 0 ||
        PyModule_AddObjectRef(m, "ExchangeReader", (PyObject *)&ExchangeReaderType) < 0 ||
        PyModule_AddObjectRef(m, "ExchangeStream", (PyObject *)&ExchangeStreamType) < 0 ||
        PyModule_AddObjectRef(m, "CapsuleStream", (PyObject *)&CapsuleStreamType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_ARGS", MAX_ARGS) < 0 ||
        PyModule_AddIntConstant(m, "INTERFACE", INTERFACE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *address = PyLong_FromVoidPtr((void *)kernel_call);
    int added = address == NULL ? -1 : PyModule_AddObjectRef(m, "KERNEL_CALL", address);
    Py_XDECREF(address);
    if (added < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
