/* CapsuleStream(capsule, device_id), part of accelmath._core._hostcall: a function of no
 * arguments that returns the current stream of one device, an int, from one call of a
 * package's C function intptr_t f(int device_id). The capsule holds f and is named by that
 * signature, "intptr_t (int)", as Cython names the C functions a module exports in its
 * __pyx_capi__ (CuPy's cupy_backends.cuda.stream.get_stream_ptr is one): a capsule of any
 * other signature is refused when the CapsuleStream is made. An error f raises propagates. */
#include "shim.h"

#define SIGNATURE "intptr_t (int)"

typedef intptr_t (*stream_fn)(int);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    stream_fn get;
    PyObject *capsule;
    int device_id;
} CapsuleStream;

static PyObject *capsule_stream_vectorcall(PyObject *self_, PyObject *const *args,
                                           size_t nargsf, PyObject *kwnames) {
    CapsuleStream *self = (CapsuleStream *)self_;
    if (PyVectorcall_NARGS(nargsf) != 0 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "CapsuleStream takes no arguments");
        return NULL;
    }
    intptr_t stream = self->get(self->device_id);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)stream);
}

static PyObject *capsule_stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"capsule", "device_id", NULL};
    PyObject *capsule;
    int device_id;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi:CapsuleStream", keywords, &capsule,
                                     &device_id)) {
        return NULL;
    }
    if (!PyCapsule_IsValid(capsule, SIGNATURE)) {
        PyErr_Format(PyExc_ValueError,
                     "CapsuleStream: %R is not a capsule of a C function " SIGNATURE, capsule);
        return NULL;
    }
    stream_fn get = (stream_fn)PyCapsule_GetPointer(capsule, SIGNATURE);
    if (get == NULL) {
        return NULL;
    }
    CapsuleStream *self = (CapsuleStream *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = capsule_stream_vectorcall;
    self->get = get;
    self->capsule = Py_NewRef(capsule);
    self->device_id = device_id;
    return (PyObject *)self;
}

static void capsule_stream_dealloc(PyObject *self) {
    Py_XDECREF(((CapsuleStream *)self)->capsule);
    Py_TYPE(self)->tp_free(self);
}

PyTypeObject CapsuleStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "accelmath._core._hostcall.CapsuleStream",
    .tp_basicsize = sizeof(CapsuleStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(CapsuleStream, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = capsule_stream_new,
    .tp_dealloc = capsule_stream_dealloc,
};
