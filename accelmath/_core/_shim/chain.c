/* Chain(first, pointer, elements, words, nwords, launch, head, parameters, stream, fail,
 *       context_get, context, miss, keep), part of accelmath._core._hostcall: a front's run
 * (front.c) of a call that is a launcher's call followed by one kernel over its result, with
 * further arrays and scalars: a transform and its fused epilogue.
 *
 * chain(x, values=()) reads the values first: element k of the tuple `elements` describes
 * values[k], ("a", read, align, word) for an array (read(v) its address where it has the
 * layout the kernel was made for, else None; the address a multiple of align; written to
 * words[word]) or (code, address) for a number, written at address as code says ('q' an exact
 * int as a long long, 'd' an exact float as a double, 'D' an exact complex as two doubles).
 * Then y = first(x), its address pointer(y) written to words[0] and words[nwords - 1] (the
 * kernel's first input and its result: it runs in place), and the kernel launched:
 * launch(head[0], ..., head[7], stream(), parameters, NULL), launch the address of
 * cuLaunchKernel, the GIL held from the first write to the launch (the driver copies the
 * parameters), so that no other thread writes them meanwhile. It returns y; `miss` where
 * first answers miss, a value does not fit (another count, type or layout, or an int beyond
 * a long long) or the current context (context_get: the address of cuCtxGetCurrent) is not
 * `context`, before anything ran; it raises where a call raises, and where the launch fails
 * (fail(status) raises). `keep` is held (what the addresses point into). */
#include "shim.h"

/* An element, read from its tuple once, when the chain is made. */
typedef struct {
    char code;           /* 'a' an array, else the number's code */
    PyObject *read;      /* an array's reader (borrowed from the elements tuple) */
    uintptr_t align;     /* an array's */
    Py_ssize_t word;     /* an array's */
    void *address;       /* a number's */
} Element;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Element parsed[MAX_ARGS];
    PyObject *first, *pointer, *elements, *stream, *fail, *miss, *keep;
    W *words;
    Py_ssize_t nwords;
    launch_fn launch;
    W head[8];
    void **parameters;
    context_fn context_get;
    void *context;
} Chain;

typedef union {
    long long q;
    double d[2];
} Number;

/* Number v as code says, in *number: 0, 1 where it does not fit, -1 on an error. */
static int number_of(char code, PyObject *v, Number *number) {
    if (code == 'q' && PyLong_CheckExact(v)) {
        int overflow;
        number->q = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) {
            return 1;
        }
        return number->q == -1 && PyErr_Occurred() ? -1 : 0;
    }
    if (code == 'd' && PyFloat_CheckExact(v)) {
        number->d[0] = PyFloat_AS_DOUBLE(v);
        return 0;
    }
    if (code == 'D' && PyComplex_CheckExact(v)) {
        number->d[0] = PyComplex_RealAsDouble(v);
        number->d[1] = PyComplex_ImagAsDouble(v);
        return 0;
    }
    return 1;
}

/* The address read(v) returns, in *address: 0, 1 where it is None or not a multiple of
 * align, -1 on an error. */
static int read_address(PyObject *read, PyObject *v, uintptr_t align, W *address) {
    PyObject *found = PyObject_CallOneArg(read, v);
    if (found == NULL) {
        return -1;
    }
    if (found == Py_None) {
        Py_DECREF(found);
        return 1;
    }
    int failed = to_word(found, address);
    Py_DECREF(found);
    if (failed) {
        return -1;
    }
    return (uintptr_t)*address % align ? 1 : 0;
}

static PyObject *chain_call(PyObject *self_, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
    Chain *self = (Chain *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->first == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Chain: called after it was cleared");
        return NULL;
    }
    if (kwnames != NULL || nargs < 1 || nargs > 2 ||
        (nargs == 2 && !PyTuple_CheckExact(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "Chain: takes (x) or (x, values), values a tuple");
        return NULL;
    }
    Py_ssize_t n = nargs == 2 ? PyTuple_GET_SIZE(args[1]) : 0;
    if (n != PyTuple_GET_SIZE(self->elements)) {
        return Py_NewRef(self->miss);
    }
    void *current = NULL;
    if (self->context_get(&current) != 0 || current != self->context) {
        return Py_NewRef(self->miss);
    }
    W addresses[MAX_ARGS];
    Number numbers[MAX_ARGS];
    /* (the elements tuple holds the readers, and self holds it: a reader that clears the
     * chain meanwhile is met by the check after each call) */
    for (Py_ssize_t k = 0; k < n; k++) {
        Element *e = &self->parsed[k];
        PyObject *v = PyTuple_GET_ITEM(args[1], k);
        int failed = e->code == 'a' ? read_address(e->read, v, e->align, &addresses[k])
                                    : number_of(e->code, v, &numbers[k]);
        if (failed || self->first == NULL) {
            if (failed >= 0 && self->first == NULL) {
                PyErr_SetString(PyExc_RuntimeError, "Chain: cleared while it ran");
                failed = -1;
            }
            return failed < 0 ? NULL : Py_NewRef(self->miss);
        }
    }
    PyObject *y = PyObject_CallOneArg(self->first, args[0]);
    if (y == NULL || y == self->miss) {
        return y;
    }
    W address, stream;
    PyObject *pointer = PyObject_CallOneArg(self->pointer, y);
    int failed = pointer == NULL || to_word(pointer, &address) < 0;
    Py_XDECREF(pointer);
    PyObject *stream_obj = failed ? NULL : PyObject_CallNoArgs(self->stream);
    failed = failed || stream_obj == NULL || to_word(stream_obj, &stream) < 0;
    Py_XDECREF(stream_obj);
    if (failed) {
        Py_DECREF(y);
        return NULL;
    }
    /* from here to the launch, no Python code runs: the GIL stays held */
    for (Py_ssize_t k = 0; k < n; k++) {
        Element *e = &self->parsed[k];
        if (e->code == 'a') {
            self->words[e->word] = addresses[k];
        } else {
            memcpy(e->address, &numbers[k], sizeof(Number));
        }
    }
    self->words[0] = address;
    self->words[self->nwords - 1] = address;
    int status = self->launch(self->head[0], (unsigned)self->head[1], (unsigned)self->head[2],
                              (unsigned)self->head[3], (unsigned)self->head[4],
                              (unsigned)self->head[5], (unsigned)self->head[6],
                              (unsigned)self->head[7], stream, self->parameters, NULL);
    if (status != 0) {
        Py_DECREF(y);
        PyObject *raised = PyObject_CallFunction(self->fail, "i", status);
        Py_XDECREF(raised);
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_RuntimeError, "Chain: cuLaunchKernel failed: status %d", status);
        }
        return NULL;
    }
    return y;
}

static PyObject *chain_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    return guarded(chain_call, " in a Chain call", self, args, nargsf, kwnames);
}

static PyObject *chain_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"first", "pointer", "elements", "words", "nwords", "launch",
                               "head", "parameters", "stream", "fail", "context_get",
                               "context", "miss", "keep", NULL};
    PyObject *first, *pointer, *elements, *words, *launch, *head, *parameters, *stream, *fail;
    PyObject *context_get, *context, *miss, *keep;
    Py_ssize_t nwords;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!O!nO!O!O!OOO!O!OO:Chain", keywords,
                                     &first, &pointer, &PyTuple_Type, &elements, &PyLong_Type,
                                     &words, &nwords, &PyLong_Type, &launch, &PyTuple_Type,
                                     &head, &PyLong_Type, &parameters, &stream, &fail,
                                     &PyLong_Type, &context_get, &PyLong_Type, &context, &miss,
                                     &keep)) {
        return NULL;
    }
    if (!PyCallable_Check(first) || !PyCallable_Check(pointer) || !PyCallable_Check(stream) ||
        !PyCallable_Check(fail)) {
        PyErr_SetString(PyExc_TypeError, "Chain: first, pointer, stream and fail should be "
                                         "callable");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(elements);
    if (nwords < 2 || nwords > MAX_ARGS + 2 || n > MAX_ARGS || PyTuple_GET_SIZE(head) != 8) {
        PyErr_SetString(PyExc_ValueError, "Chain: 2 to 18 words, at most 16 elements and a head "
                                          "of 8");
        return NULL;
    }
    Element parsed[MAX_ARGS];
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyTuple_GET_ITEM(elements, k);
        const char *code = PyTuple_CheckExact(e) && PyTuple_GET_SIZE(e) >= 2 &&
                           PyUnicode_Check(PyTuple_GET_ITEM(e, 0)) ?
                           PyUnicode_AsUTF8(PyTuple_GET_ITEM(e, 0)) : NULL;
        int ok = code != NULL && strlen(code) == 1;
        memset(&parsed[k], 0, sizeof(Element));
        if (ok && code[0] == 'a') {
            Py_ssize_t align = -1, word = -1;
            if (PyTuple_GET_SIZE(e) == 4 && PyLong_Check(PyTuple_GET_ITEM(e, 2)) &&
                PyLong_Check(PyTuple_GET_ITEM(e, 3))) {
                align = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 2));
                word = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 3));
            }
            ok = PyCallable_Check(PyTuple_GET_ITEM(e, 1)) && align >= 1 && word > 0 &&
                 word < nwords - 1;
            parsed[k] = (Element){'a', PyTuple_GET_ITEM(e, 1), (uintptr_t)align, word, NULL};
        } else if (ok) {
            void *address = PyTuple_GET_SIZE(e) == 2 && PyLong_Check(PyTuple_GET_ITEM(e, 1)) ?
                            PyLong_AsVoidPtr(PyTuple_GET_ITEM(e, 1)) : NULL;
            ok = strchr("qdD", code[0]) != NULL && address != NULL;
            parsed[k] = (Element){code[0], NULL, 0, 0, address};
        }
        if (!ok) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "Chain: an element should be (\"a\", read, align, "
                                             "word) or (code, address), code one of q, d, D");
            return NULL;
        }
    }
    Chain *self = (Chain *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = chain_vectorcall;
    memcpy(self->parsed, parsed, sizeof parsed);
    for (int k = 0; k < 8; k++) {
        if (to_word(PyTuple_GET_ITEM(head, k), &self->head[k]) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->words = (W *)PyLong_AsVoidPtr(words);
    self->nwords = nwords;
    self->launch = (launch_fn)PyLong_AsVoidPtr(launch);
    self->parameters = (void **)PyLong_AsVoidPtr(parameters);
    self->context_get = (context_fn)PyLong_AsVoidPtr(context_get);
    self->context = PyLong_AsVoidPtr(context);
    if (PyErr_Occurred() || self->words == NULL || self->launch == NULL ||
        self->parameters == NULL || self->context_get == NULL) {
        Py_DECREF(self);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "Chain: a null address");
        }
        return NULL;
    }
    self->first = Py_NewRef(first);
    self->pointer = Py_NewRef(pointer);
    self->elements = Py_NewRef(elements);
    self->stream = Py_NewRef(stream);
    self->fail = Py_NewRef(fail);
    self->miss = Py_NewRef(miss);
    self->keep = Py_NewRef(keep);
    return (PyObject *)self;
}

static int chain_traverse(PyObject *self_, visitproc visit, void *arg) {
    Chain *self = (Chain *)self_;
    Py_VISIT(self->first);
    Py_VISIT(self->pointer);
    Py_VISIT(self->elements);
    Py_VISIT(self->stream);
    Py_VISIT(self->fail);
    Py_VISIT(self->miss);
    Py_VISIT(self->keep);
    return 0;
}

static int chain_clear(PyObject *self_) {
    Chain *self = (Chain *)self_;
    Py_CLEAR(self->first);
    Py_CLEAR(self->pointer);
    Py_CLEAR(self->elements);
    Py_CLEAR(self->stream);
    Py_CLEAR(self->fail);
    Py_CLEAR(self->miss);
    Py_CLEAR(self->keep);
    return 0;
}

static void chain_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    chain_clear(self);
    Py_TYPE(self)->tp_free(self);
}

PyTypeObject ChainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._core._hostcall.Chain",
    .tp_basicsize = sizeof(Chain),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Chain, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = chain_new,
    .tp_traverse = chain_traverse,
    .tp_clear = chain_clear,
    .tp_dealloc = chain_dealloc,
};
