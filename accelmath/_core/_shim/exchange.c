/* The DLPack C exchange API (DLPack 1.3), part of accelmath._core._hostcall: an array package
 * that offers it (torch.Tensor.__dlpack_c_exchange_api__, a capsule named
 * "dlpack_exchange_api") describes an array to C code in one call, without a Python object
 * made, and names the current stream of a device. Here:
 *   - ExchangeReader(api, types, layout, checks, fallback): a reader of one layout's arrays
 *     (as Reader is, reader.c), reading the layout through the API;
 *   - exchange_layout(api, x): what the API says of x, as a tuple (tests, and the layouts'
 *     dtype codes);
 *   - ExchangeStream(api, device_type, device_id): the current stream of one device, an int.
 * The declarations below are the standard's (dlpack.h, version 1), the fields this file
 * reads and what precedes them. */
#include "shim.h"

typedef struct {
    int32_t device_type, device_id;
} DLDevice;

typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides; /* strides in elements; NULL: C order */
    uint64_t byte_offset;
} DLTensor;

typedef struct ExchangeHeader {
    uint32_t major, minor;
    struct ExchangeHeader *prev_api;
} ExchangeHeader;

typedef struct {
    ExchangeHeader header;
    void *managed_tensor_allocator;
    void *managed_tensor_from_py_object_no_sync;
    void *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *py_object, DLTensor *out);
    int (*current_work_stream)(int32_t device_type, int32_t device_id, void **stream);
} ExchangeAPI;

#define MAX_DIMS 64

/* The API in capsule, NULL with an error where it is not one this file can use. */
static const ExchangeAPI *api_of(PyObject *capsule) {
    const ExchangeAPI *api = PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
    if (api == NULL) {
        return NULL;
    }
    if (api->header.major != 1 || api->header.minor < 3 ||
        api->dltensor_from_py_object_no_sync == NULL || api->current_work_stream == NULL) {
        PyErr_Format(PyExc_ValueError,
                     "DLPack exchange API %u.%u without the calls accelmath reads "
                     "(it reads version 1.3 and later 1.x)",
                     api->header.major, api->header.minor);
        return NULL;
    }
    return api;
}

/* The API's description of x into *t (0), or -1 with an exception (one of its own where the
 * producer set none). */
static int describe(const ExchangeAPI *api, PyObject *x, DLTensor *t) {
    if (api->dltensor_from_py_object_no_sync(x, t) == 0) {
        return 0;
    }
    if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_RuntimeError, "the DLPack exchange API failed to describe a %s",
                     Py_TYPE(x)->tp_name);
    }
    return -1;
}

/* ExchangeReader: the layout as C values, and the rest of a reader. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    const ExchangeAPI *api;
    PyObject *capsule, *types, *checks, *fallback, *layout;
    DLDataType dtype;
    int32_t device_type, device_id, ndim;
    int64_t shape[MAX_DIMS], strides[MAX_DIMS]; /* strides of axes of length 1 not read */
} ExchangeReader;

/* Whether the API's description t is the reader's layout. */
static int same_layout(ExchangeReader *self, const DLTensor *t) {
    if (t->ndim != self->ndim || t->dtype.code != self->dtype.code ||
        t->dtype.bits != self->dtype.bits || t->dtype.lanes != self->dtype.lanes ||
        t->device.device_type != self->device_type || t->device.device_id != self->device_id) {
        return 0;
    }
    uint64_t c_stride = 1; /* C order's, where the API gives no strides (wraps, unsigned) */
    for (int32_t i = self->ndim - 1; i >= 0; i--) {
        int64_t n = t->shape[i];
        if (n != self->shape[i]) {
            return 0;
        }
        int64_t stride = t->strides != NULL ? t->strides[i] : (int64_t)c_stride;
        if (n != 1 && stride != self->strides[i]) {
            return 0;
        }
        c_stride *= (uint64_t)n;
    }
    return 1;
}

/* Whether x's type is one of the tuple types (by identity: no subclass). */
static int exact_type(PyObject *types, PyObject *x) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++) {
        if ((PyObject *)Py_TYPE(x) == PyTuple_GET_ITEM(types, i)) {
            return 1;
        }
    }
    return 0;
}

static PyObject *exchange_reader_call(PyObject *self_, PyObject *const *args,
                                      size_t nargsf, PyObject *kwnames) {
    ExchangeReader *self = (ExchangeReader *)self_;
    if (self->types == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ExchangeReader: called after it was cleared");
        return NULL;
    }
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "ExchangeReader takes one argument, the array");
        return NULL;
    }
    PyObject *x = args[0];
    if (!exact_type(self->types, x)) {
        if (self->fallback == Py_None) {
            Py_RETURN_NONE;
        }
        return PyObject_Vectorcall(self->fallback, &x, 1, NULL);
    }
    /* the checks first (they may run Python), then the description: the address returned
     * is the one x has once they ran */
    int held = reader_checks(self->checks, x);
    if (held <= 0) {
        return held < 0 ? NULL : Py_NewRef(Py_None);
    }
    DLTensor t;
    if (describe(self->api, x, &t) < 0) {
        /* an array the API does not describe (a meta tensor, say): the plan's checked path
         * says what is wrong with it */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL;
        }
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (!same_layout(self, &t)) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)t.data + t.byte_offset);
}

static PyObject *exchange_reader_vectorcall(PyObject *self, PyObject *const *args,
                                            size_t nargsf, PyObject *kwnames) {
    return guarded(exchange_reader_call, " in an ExchangeReader call", self, args, nargsf,
                   kwnames);
}

/* An int of a tuple's item i, into *value (0, -1 with an error). */
static int item_int64(PyObject *tuple, Py_ssize_t i, int64_t *value) {
    *value = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    return *value == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *exchange_reader_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"api", "types", "layout", "checks", "fallback", NULL};
    PyObject *capsule, *types, *layout, *checks, *fallback, *shape, *strides;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!O!O:ExchangeReader", keywords,
                                     &capsule, &PyTuple_Type, &types, &PyTuple_Type, &layout,
                                     &PyTuple_Type, &checks, &fallback)) {
        return NULL;
    }
    const ExchangeAPI *api = api_of(capsule);
    if (api == NULL) {
        return NULL;
    }
    unsigned int code, bits, lanes;
    int device_type, device_id;
    if (!PyArg_ParseTuple(layout, "IIIiiO!O!:ExchangeReader layout (code, bits, lanes, "
                          "device_type, device_id, shape, strides)", &code, &bits, &lanes,
                          &device_type, &device_id, &PyTuple_Type, &shape, &PyTuple_Type,
                          &strides)) {
        return NULL;
    }
    if (code > UINT8_MAX || bits > UINT8_MAX || lanes > UINT16_MAX) {
        PyErr_Format(PyExc_ValueError,
                     "ExchangeReader: dtype (%u, %u, %u) out of DLPack's ranges (code and "
                     "bits of 8 bits, lanes of 16)", code, bits, lanes);
        return NULL;
    }
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > MAX_DIMS || PyTuple_GET_SIZE(strides) != ndim) {
        PyErr_Format(PyExc_ValueError,
                     "ExchangeReader: shape %R and strides %R, should be of one length, at "
                     "most %d", shape, strides, MAX_DIMS);
        return NULL;
    }
    if (reader_checks_valid(checks) < 0) {
        return NULL;
    }
    if (fallback != Py_None && !PyCallable_Check(fallback)) {
        PyErr_Format(PyExc_TypeError, "ExchangeReader: fallback %R is not callable", fallback);
        return NULL;
    }
    ExchangeReader *self = (ExchangeReader *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < ndim; i++) {
        if (item_int64(shape, i, &self->shape[i]) < 0 ||
            item_int64(strides, i, &self->strides[i]) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->vectorcall = exchange_reader_vectorcall;
    self->api = api;
    self->dtype.code = (uint8_t)code;
    self->dtype.bits = (uint8_t)bits;
    self->dtype.lanes = (uint16_t)lanes;
    self->device_type = device_type;
    self->device_id = device_id;
    self->ndim = (int32_t)ndim;
    self->capsule = Py_NewRef(capsule);
    self->types = Py_NewRef(types);
    self->layout = Py_NewRef(layout);
    self->checks = Py_NewRef(checks);
    self->fallback = Py_NewRef(fallback);
    return (PyObject *)self;
}

static int exchange_reader_traverse(PyObject *self_, visitproc visit, void *arg) {
    ExchangeReader *self = (ExchangeReader *)self_;
    Py_VISIT(self->capsule);
    Py_VISIT(self->types);
    Py_VISIT(self->layout);
    Py_VISIT(self->checks);
    Py_VISIT(self->fallback);
    return 0;
}

static int exchange_reader_clear(PyObject *self_) {
    ExchangeReader *self = (ExchangeReader *)self_;
    Py_CLEAR(self->capsule);
    Py_CLEAR(self->types);
    Py_CLEAR(self->layout);
    Py_CLEAR(self->checks);
    Py_CLEAR(self->fallback);
    return 0;
}

static void exchange_reader_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    exchange_reader_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *exchange_reader_repr(PyObject *self_) {
    ExchangeReader *self = (ExchangeReader *)self_;
    return PyUnicode_FromFormat("<C exchange reader: %R of %R, then %R; else %R>", self->layout,
                                self->types, self->checks, self->fallback);
}

PyTypeObject ExchangeReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._core._hostcall.ExchangeReader",
    .tp_basicsize = sizeof(ExchangeReader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(ExchangeReader, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = exchange_reader_new,
    .tp_traverse = exchange_reader_traverse,
    .tp_clear = exchange_reader_clear,
    .tp_dealloc = exchange_reader_dealloc,
    .tp_repr = exchange_reader_repr,
};

/* ExchangeStream: a device's current stream, through the API. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    const ExchangeAPI *api;
    PyObject *capsule;
    int32_t device_type, device_id;
} ExchangeStream;

static PyObject *exchange_stream_vectorcall(PyObject *self_, PyObject *const *args,
                                            size_t nargsf, PyObject *kwnames) {
    ExchangeStream *self = (ExchangeStream *)self_;
    if (PyVectorcall_NARGS(nargsf) != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "ExchangeStream takes no arguments");
        return NULL;
    }
    void *stream = NULL;
    if (self->api->current_work_stream(self->device_type, self->device_id, &stream) != 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError,
                            "the DLPack exchange API failed to name the current stream");
        }
        return NULL;
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)stream);
}

static PyObject *exchange_stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"api", "device_type", "device_id", NULL};
    PyObject *capsule;
    int device_type, device_id;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oii:ExchangeStream", keywords, &capsule,
                                     &device_type, &device_id)) {
        return NULL;
    }
    const ExchangeAPI *api = api_of(capsule);
    if (api == NULL) {
        return NULL;
    }
    ExchangeStream *self = (ExchangeStream *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = exchange_stream_vectorcall;
    self->api = api;
    self->capsule = Py_NewRef(capsule);
    self->device_type = device_type;
    self->device_id = device_id;
    return (PyObject *)self;
}

static void exchange_stream_dealloc(PyObject *self) {
    Py_XDECREF(((ExchangeStream *)self)->capsule);
    Py_TYPE(self)->tp_free(self);
}

PyTypeObject ExchangeStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._core._hostcall.ExchangeStream",
    .tp_basicsize = sizeof(ExchangeStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ExchangeStream, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = exchange_stream_new,
    .tp_dealloc = exchange_stream_dealloc,
};

/* exchange_layout(api, x): (code, bits, lanes, device_type, device_id, shape, strides,
 * address) of x as the API describes it, strides None where it gives none (C order). */
PyObject *exchange_layout(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "exchange_layout(api, x) takes two arguments");
        return NULL;
    }
    const ExchangeAPI *api = api_of(args[0]);
    if (api == NULL) {
        return NULL;
    }
    DLTensor t;
    if (describe(api, args[1], &t) < 0) {
        return NULL;
    }
    PyObject *shape = PyTuple_New(t.ndim), *strides = NULL;
    if (shape == NULL) {
        return NULL;
    }
    strides = t.strides == NULL ? Py_NewRef(Py_None) : PyTuple_New(t.ndim);
    for (int32_t i = 0; strides != NULL && i < t.ndim; i++) {
        PyObject *n = PyLong_FromLongLong(t.shape[i]);
        PyObject *s = t.strides == NULL ? NULL : PyLong_FromLongLong(t.strides[i]);
        if (n == NULL || (t.strides != NULL && s == NULL)) {
            Py_XDECREF(n);
            Py_XDECREF(s);
            Py_CLEAR(strides);
            break;
        }
        PyTuple_SET_ITEM(shape, i, n);
        if (s != NULL) {
            PyTuple_SET_ITEM(strides, i, s);
        }
    }
    if (strides == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    return Py_BuildValue("(IIIiiNNK)", (unsigned int)t.dtype.code, (unsigned int)t.dtype.bits,
                         (unsigned int)t.dtype.lanes, (int)t.device.device_type,
                         (int)t.device.device_id, shape, strides,
                         (unsigned long long)(uintptr_t)t.data + t.byte_offset);
}
