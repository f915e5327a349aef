/* Front(function, learn, table, types, arrays, names, miss, home, functions, codes,
 * operands), part of accelmath._core._hostcall: a public function's commonest calls made from
 * a table of C launchers without entering the interpreter; every other call goes to function.
 *
 * A call f(x0, ..., x{arrays-1}, v...) whose first `arrays` arguments are positional arrays of
 * a type in the set `types`, and whose further arguments (positional, or keywords named in
 * the tuple `names`; positionally at most len(names)) are each an exact int, an exact str,
 * None, or a tuple of exact ints (a bool or a float would equal an int in a dict), has a key:
 *   (self, type(x0), x0.shape, x0.dtype, ..., v..., kwnames or None).
 * Two kinds of keywords hold other values:
 * - one named in the tuple `functions`: a Python function (no defaults) whose code is in the
 *   dict `codes`, `codes[code]` the tuple of global names it reads; its part of the key is
 *   (code, w...), w each value it reads (its closure's cells, then those globals, `miss` for
 *   one absent) as front_parts.c keeps it: numbers, strings and tuples of those by value,
 *   anything else by identity (held by the key);
 * - one named in the tuple `operands`: a tuple of arrays of a type in `types` and exact
 *   ints, floats and complex numbers (fewer than MAX_ARGS), or None, keyed only beside a
 *   function; its part is the tuple of (type, shape, dtype) of each array and the type of
 *   each number, and the tuple itself is passed on to run.
 * Where table[key] is (run, entry, clock), run(x0, ..., t...) is called (t the operand
 * tuples, in the keywords' order): its result is returned
 * (entry[1] = next(clock) first: the plan cache's recency stamp) unless it is `miss`. A key
 * not in the table, or a run that answers `miss`, goes to learn(key, *args, **kwargs),
 * which calls function and may put the key in the table; any other call goes to function
 * itself. Errors of run, learn and function propagate. */
#include "shim.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *function, *learn, *table, *types, *names, *miss, *home;
    PyObject *functions, *codes, *operands;
    PyObject *weakrefs; /* (a function may be referred to weakly) */
    Py_ssize_t arrays;
} Front;

/* Whether name (a keyword's name) is one of the tuple names. */
static int named(PyObject *names, PyObject *name) {
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyTuple_GET_ITEM(names, i) == name) { /* interned, as a rule */
            return 1;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyUnicode_Compare(PyTuple_GET_ITEM(names, i), name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The call's key (a new reference), NULL with no error where the call has none, NULL with
 * an error where reading an array's shape or dtype raised. The operand tuples, borrowed from
 * the call, go to passed[0...] and their count to *npassed. */
static PyObject *key_of(Front *self, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames, PyObject **passed, Py_ssize_t *npassed) {
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    *npassed = 0;
    if (nargs < self->arrays || nargs - self->arrays > PyTuple_GET_SIZE(self->names)) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < self->arrays; i++) {
        if (front_type(self->types, (PyObject *)Py_TYPE(args[i])) != 1) {
            return NULL; /* (an error only where one propagates) */
        }
    }
    for (Py_ssize_t i = self->arrays; i < nargs; i++) {
        if (!front_plain(args[i])) {
            return NULL;
        }
    }
    int hashed = 0; /* (a function given: the key holds values of any type, hashed here) */
    int operands = 0; /* (an operand tuple given: keyed only beside a function) */
    char kinds[MAX_ARGS]; /* per keyword: 0 named, 1 a function, 2 an operand tuple */
    if (nkw >= MAX_ARGS) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i), *v = args[nargs + i];
        if (!PyUnicode_CheckExact(name)) {
            return NULL; /* (a str subclass's names may repeat: the function says so) */
        }
        if (named(self->names, name)) {
            kinds[i] = 0;
            if (!front_plain(v)) {
                return NULL;
            }
        } else if (named(self->functions, name)) {
            kinds[i] = 1;
            hashed |= v != Py_None;
        } else if (named(self->operands, name)) {
            kinds[i] = 2;
            if (v != Py_None && (!PyTuple_CheckExact(v) || PyTuple_GET_SIZE(v) >= MAX_ARGS)) {
                return NULL;
            }
            operands |= v != Py_None;
        } else {
            return NULL;
        }
    }
    if (operands && !hashed) {
        return NULL; /* (its launcher takes the arrays alone) */
    }
    Parts parts;
    if (parts_start(&parts, 1 + 3 * self->arrays + (nargs - self->arrays) + nkw + 1) < 0) {
        return NULL;
    }
    parts_add(&parts, Py_NewRef((PyObject *)self));
    for (Py_ssize_t i = 0; i < self->arrays; i++) {
        PyObject *shape = PyObject_GetAttr(args[i], front_shape);
        PyObject *dtype = shape == NULL ? NULL : PyObject_GetAttr(args[i], front_dtype);
        if (dtype == NULL) {
            Py_XDECREF(shape);
            parts_drop(&parts);
            return NULL;
        }
        parts_add(&parts, Py_NewRef((PyObject *)Py_TYPE(args[i])));
        parts_add(&parts, shape);
        parts_add(&parts, dtype);
    }
    for (Py_ssize_t i = self->arrays; i < nargs + nkw; i++) {
        PyObject *v = args[i], *part;
        int kind = i < nargs || v == Py_None ? 0 : kinds[i - nargs];
        if (kind == 0) {
            part = Py_NewRef(v);
        } else if (kind == 2) {
            part = front_operands_part(self->types, v);
            passed[(*npassed)++] = v;
        } else {
            part = front_function_part(self->codes, self->miss, v);
        }
        if (part == NULL) {
            parts_drop(&parts);
            return NULL; /* (an error where one propagates) */
        }
        parts_add(&parts, part);
    }
    parts_add(&parts, Py_NewRef(kwnames == NULL ? Py_None : kwnames));
    PyObject *key = parts_tuple(&parts);
    if (key == NULL) {
        return NULL;
    }
    if (hashed && PyObject_Hash(key) == -1) { /* (a value read that is not hashable) */
        Py_DECREF(key);
        front_unkeyed_error();
        return NULL;
    }
    return key;
}

/* run(x0, ..., t...) of the table's entry for key (t: the npassed operand tuples): a new
 * reference, NULL with no error where there is none or it answered miss, NULL with an error
 * where it raised. */
static PyObject *run_entry(Front *self, PyObject *key, PyObject *const *args,
                           PyObject *const *passed, Py_ssize_t npassed) {
    PyObject *found = PyDict_GetItemWithError(self->table, key);
    if (found == NULL) {
        return NULL; /* (an error only where a shape or dtype compares with one) */
    }
    if (!PyTuple_CheckExact(found) || PyTuple_GET_SIZE(found) != 3 ||
        !PyList_CheckExact(PyTuple_GET_ITEM(found, 1)) ||
        PyList_GET_SIZE(PyTuple_GET_ITEM(found, 1)) < 2 ||
        !PyIter_Check(PyTuple_GET_ITEM(found, 2))) {
        PyErr_SetString(PyExc_TypeError, "Front: a table entry should be (run, [plan, stamp], "
                                         "clock)");
        return NULL;
    }
    Py_INCREF(found); /* (another thread may empty the table meanwhile) */
    PyObject *all[2 * MAX_ARGS];
    for (Py_ssize_t i = 0; i < self->arrays; i++) {
        all[i] = args[i];
    }
    for (Py_ssize_t i = 0; i < npassed; i++) {
        all[self->arrays + i] = passed[i];
    }
    PyObject *result = PyObject_Vectorcall(PyTuple_GET_ITEM(found, 0), all,
                                           (size_t)(self->arrays + npassed), NULL);
    if (result == self->miss) {
        Py_CLEAR(result);
    } else if (result != NULL) {
        PyObject *stamp = PyIter_Next(PyTuple_GET_ITEM(found, 2));
        if (stamp == NULL) {
            Py_CLEAR(result);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "Front: the clock ran out");
            }
        } else if (PyList_SetItem(PyTuple_GET_ITEM(found, 1), 1, stamp) < 0) {
            Py_CLEAR(result); /* (the run emptied the list; stamp was stolen all the same) */
        }
    }
    Py_DECREF(found);
    return result;
}

/* learn(key, *args, **kwargs). */
static PyObject *call_learn(Front *self, PyObject *key, PyObject *const *args,
                            Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject *small[1 + MAX_ARGS];
    PyObject **all = total < MAX_ARGS ? small : PyMem_New(PyObject *, total + 1);
    if (all == NULL) {
        return PyErr_NoMemory();
    }
    all[0] = key;
    for (Py_ssize_t i = 0; i < total; i++) {
        all[i + 1] = args[i];
    }
    PyObject *result = PyObject_Vectorcall(self->learn, all, (size_t)(nargs + 1), kwnames);
    if (all != small) {
        PyMem_Free(all);
    }
    return result;
}

static PyObject *front_call(PyObject *self_, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    Front *self = (Front *)self_;
    if (self->function == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Front: called after it was cleared");
        return NULL;
    }
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), npassed;
    PyObject *passed[MAX_ARGS];
    PyObject *key = key_of(self, args, nargs, kwnames, passed, &npassed);
    if (key == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        return PyObject_Vectorcall(self->function, args, nargsf, kwnames);
    }
    PyObject *result = run_entry(self, key, args, passed, npassed);
    if (result == NULL && !PyErr_Occurred()) {
        result = call_learn(self, key, args, nargs, kwnames);
    }
    Py_DECREF(key);
    return result;
}

static PyObject *front_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    return guarded(front_call, " in a Front call", self, args, nargsf, kwnames);
}

static PyObject *front_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"function", "learn", "table", "types", "arrays", "names", "miss",
                               "home", "functions", "codes", "operands", NULL};
    PyObject *function, *learn, *table, *types, *names, *miss, *home, *functions = NULL,
        *codes = NULL, *operands = NULL;
    Py_ssize_t arrays;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O!nO!OU|O!O!O!:Front", keywords,
                                     &function, &learn, &PyDict_Type, &table, &PySet_Type,
                                     &types, &arrays, &PyTuple_Type, &names, &miss, &home,
                                     &PyTuple_Type, &functions, &PyDict_Type, &codes,
                                     &PyTuple_Type, &operands)) {
        return NULL;
    }
    if (!PyCallable_Check(function) || !PyCallable_Check(learn)) {
        PyErr_SetString(PyExc_TypeError, "Front: function and learn should be callable");
        return NULL;
    }
    if (arrays < 1 || arrays > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "Front: arrays=%zd, should be 1 to %d", arrays,
                     MAX_ARGS);
        return NULL;
    }
    PyObject *empty = PyTuple_New(0), *lists[3];
    if (empty == NULL) {
        return NULL;
    }
    functions = functions == NULL ? empty : functions;
    operands = operands == NULL ? empty : operands;
    lists[0] = names, lists[1] = functions, lists[2] = operands;
    for (int j = 0; j < 3; j++) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(lists[j]); i++) {
            if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(lists[j], i))) {
                PyErr_SetString(PyExc_TypeError,
                                "Front: names, functions and operands should be tuples of str");
                Py_DECREF(empty);
                return NULL;
            }
        }
    }
    if (arrays + PyTuple_GET_SIZE(names) + PyTuple_GET_SIZE(functions) +
            PyTuple_GET_SIZE(operands) >= MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "Front: at most %d arguments in a key", MAX_ARGS - 1);
        Py_DECREF(empty);
        return NULL;
    }
    Front *self = (Front *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->codes = codes == NULL ? PyDict_New() : Py_NewRef(codes);
    }
    if (self == NULL || self->codes == NULL) {
        Py_XDECREF(self);
        Py_DECREF(empty);
        return NULL;
    }
    self->vectorcall = front_vectorcall;
    self->function = Py_NewRef(function);
    self->learn = Py_NewRef(learn);
    self->table = Py_NewRef(table);
    self->types = Py_NewRef(types);
    self->names = Py_NewRef(names);
    self->miss = Py_NewRef(miss);
    self->home = Py_NewRef(home);
    self->functions = Py_NewRef(functions);
    self->operands = Py_NewRef(operands);
    Py_DECREF(empty);
    self->arrays = arrays;
    return (PyObject *)self;
}

static int front_traverse(PyObject *self_, visitproc visit, void *arg) {
    Front *self = (Front *)self_;
    Py_VISIT(self->function);
    Py_VISIT(self->learn);
    Py_VISIT(self->table);
    Py_VISIT(self->types);
    Py_VISIT(self->names);
    Py_VISIT(self->miss);
    Py_VISIT(self->home);
    Py_VISIT(self->functions);
    Py_VISIT(self->codes);
    Py_VISIT(self->operands);
    return 0;
}

static int front_clear(PyObject *self_) {
    Front *self = (Front *)self_;
    Py_CLEAR(self->function);
    Py_CLEAR(self->learn);
    Py_CLEAR(self->table);
    Py_CLEAR(self->types);
    Py_CLEAR(self->names);
    Py_CLEAR(self->miss);
    Py_CLEAR(self->home);
    Py_CLEAR(self->functions);
    Py_CLEAR(self->codes);
    Py_CLEAR(self->operands);
    return 0;
}

static void front_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    if (((Front *)self)->weakrefs != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    front_clear(self);
    Py_TYPE(self)->tp_free(self);
}

/* The function's own attribute (what help(), inspect and the documentation read). */
static PyObject *function_attr(PyObject *self, const char *name) {
    PyObject *function = ((Front *)self)->function;
    if (function == NULL) {
        Py_RETURN_NONE;
    }
    return PyObject_GetAttrString(function, name);
}

static PyObject *front_wrapped(PyObject *self, void *closure) {
    PyObject *function = ((Front *)self)->function;
    return Py_NewRef(function == NULL ? Py_None : function);
}

static PyObject *front_doc(PyObject *self, void *closure) {
    return function_attr(self, "__doc__");
}

static PyObject *front_name(PyObject *self, void *closure) {
    return function_attr(self, "__name__");
}

static PyObject *front_qualname(PyObject *self, void *closure) {
    return function_attr(self, "__qualname__");
}

static PyObject *front_annotations(PyObject *self, void *closure) {
    return function_attr(self, "__annotations__");
}

static PyObject *front_module(PyObject *self, void *closure) {
    PyObject *home = ((Front *)self)->home;
    return Py_NewRef(home == NULL ? Py_None : home);
}

static PyGetSetDef front_getset[] = {
    {"__wrapped__", front_wrapped, NULL, "The Python function behind the front.", NULL},
    {"__doc__", front_doc, NULL, NULL, NULL},
    {"__name__", front_name, NULL, NULL, NULL},
    {"__qualname__", front_qualname, NULL, NULL, NULL},
    {"__module__", front_module, NULL, NULL, NULL},
    {"__annotations__", front_annotations, NULL, NULL, NULL},
    {NULL},
};

/* Pickled by name, as functions are: found again as home.<the function's name>. */
static PyObject *front_reduce(PyObject *self, PyObject *unused) {
    return function_attr(self, "__qualname__");
}

static PyMethodDef front_methods[] = {
    {"__reduce__", front_reduce, METH_NOARGS, NULL},
    {NULL},
};

/* A front is a function: found on a class, it stays itself (as a staticmethod), which also
 * makes inspect.isroutine, and so the documentation tools, take it for one. */
static PyObject *front_get(PyObject *self, PyObject *obj, PyObject *type) {
    return Py_NewRef(self);
}

static PyObject *front_repr(PyObject *self_) {
    Front *self = (Front *)self_;
    return PyUnicode_FromFormat("<front of %R>", self->function);
}

PyTypeObject FrontType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._core._hostcall.Front",
    .tp_basicsize = sizeof(Front),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Front, vectorcall),
    .tp_weaklistoffset = offsetof(Front, weakrefs),
    .tp_call = PyVectorcall_Call,
    .tp_new = front_new,
    .tp_traverse = front_traverse,
    .tp_clear = front_clear,
    .tp_dealloc = front_dealloc,
    .tp_repr = front_repr,
    .tp_getset = front_getset,
    .tp_methods = front_methods,
    .tp_descr_get = front_get,
};

int front_ready(void) {
    return front_parts_ready() < 0 ? -1 : PyType_Ready(&FrontType);
}
