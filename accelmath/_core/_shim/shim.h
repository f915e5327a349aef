/* The call shim's shared pieces (accelmath._core._hostcall, built from hostcall.c,
 * function.c, reader.c, exchange.c, capsule_stream.c, front.c, front_parts.c,
 * chain.c and kernel_call.c): one machine word per argument, Function (a C function of
 * word arguments, function.c) and the types and functions the files share. */
#ifndef ACCELMATH_HOSTCALL_H
#define ACCELMATH_HOSTCALL_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* the most word arguments of any library call accelmath makes */
#define MAX_ARGS 16
/* The interface the Python side expects (hostcall._INTERFACE): raised with each change to
 * what a type takes or does, so that a build older than the Python code is not used. */
#define INTERFACE 7

typedef intptr_t W; /* one argument: an integer or a pointer, passed as one machine word */

/* The driver's cuLaunchKernel and cuCtxGetCurrent, as chain.c and kernel_call.c call them
 * (a CUfunction and a stream passed as words). */
typedef int (*launch_fn)(W, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, W, void **, void **);
typedef int (*context_fn)(void **);

/* None is NULL; integers are taken modulo 2**64, as ctypes takes c_void_p values. */
static inline int to_word(PyObject *obj, W *word) {
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

/* Function(address, nargs): the C function at address, int f(W, ..., W) of nargs words. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    void *address;
    Py_ssize_t nargs;
} Function;

/* Call f with the n words of a (0 to MAX_ARGS), the GIL released: its status. */
int call_words(void *f, Py_ssize_t n, const W *a);

extern PyTypeObject FunctionType; /* function.c */
extern PyTypeObject ReaderType;   /* reader.c */
extern PyTypeObject FrontType;    /* front.c */
extern PyTypeObject ChainType;    /* chain.c */
extern PyTypeObject ExchangeReaderType, ExchangeStreamType; /* exchange.c */
extern PyTypeObject CapsuleStreamType; /* capsule_stream.c */

/* exchange_layout(api, x), a module function (exchange.c). */
PyObject *exchange_layout(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* A reader's checks (reader.c): whether get(x) == expected for each (get, expected) of the
 * tuple checks (1, 0, -1 on an error); whether a tuple holds such pairs (0, -1 with
 * TypeError). */
int reader_checks(PyObject *checks, PyObject *x);
int reader_checks_valid(PyObject *checks);

/* A kernel launch of word arguments (kernel_call.c): its driver (a KernelDriver's address),
 * the CUfunction, the packed grid and block, the stream, then 11 parameter words. */
int kernel_call(W driver, W function, W grid, W block, W stream, W p0, W p1, W p2, W p3, W p4,
                W p5, W p6, W p7, W p8, W p9, W p10);

/* Ready FrontType and its strings (0, -1 on an error). */
int front_ready(void);

/* The parts of a front's key (front_parts.c): "shape" and "dtype", interned; whether a value
 * is plain (an exact int or str, None, a tuple of exact ints); an error cleared where a
 * call goes unkeyed for it (1) or left to propagate (0); whether a type is one of a set, by
 * identity; a fused function's part and an operand tuple's part (new references, NULL with
 * no error where there is none). */
extern PyObject *front_shape, *front_dtype;
int front_parts_ready(void);
int front_plain(PyObject *obj);
int front_unkeyed_error(void);
int front_type(PyObject *types, PyObject *type);
PyObject *front_function_part(PyObject *codes, PyObject *miss, PyObject *fn);
PyObject *front_operands_part(PyObject *types, PyObject *values);

/* A key's items, read one by one (each read may run Python: a property, a collection's
 * __del__), then made one tuple (parts_tuple) once all are read, so that no Python code meets
 * a tuple with empty items. Up to PARTS_SMALL items on the stack, more on the heap. */
#define PARTS_SMALL 40
typedef struct {
    PyObject **items; /* (new references) */
    Py_ssize_t n;
    PyObject *small[PARTS_SMALL];
} Parts;

/* Room for size items (0, -1 with MemoryError). */
int parts_start(Parts *parts, Py_ssize_t size);
/* Add a new reference (stolen), within the room asked for. */
static inline void parts_add(Parts *parts, PyObject *item) {
    parts->items[parts->n++] = item;
}
/* The tuple of the items (stolen; NULL with an error), or the items released (drop). */
PyObject *parts_tuple(Parts *parts);
void parts_drop(Parts *parts);

/* A call of a type that runs Python (its checks, readers, a table's entries): through
 * Py_EnterRecursiveCall, so that a cycle of calls through no Python frame (a table's entry
 * that is the front itself) raises RecursionError where it would overflow the C stack. */
static inline PyObject *guarded(vectorcallfunc call, const char *where, PyObject *self,
                                PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (Py_EnterRecursiveCall(where)) {
        return NULL;
    }
    PyObject *result = call(self, args, nargsf, kwnames);
    Py_LeaveRecursiveCall();
    return result;
}

#endif
