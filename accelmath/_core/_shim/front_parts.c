/* The parts of a front's key (front.c), part of accelmath._core._hostcall: the plain values
 * a key holds as they are, the arrays' types (by identity), the values a fused function reads
 * (its part: its code, then each value by value or by identity) and a fused function's
 * operand tuple (each array's type, shape and dtype, each number's type). */
#include "shim.h"

PyObject *front_shape, *front_dtype;

/* Whether obj may be part of a key: an exact int or str, None, or a tuple of exact ints. */
int front_plain(PyObject *obj) {
    if (obj == Py_None || PyLong_CheckExact(obj) || PyUnicode_CheckExact(obj)) {
        return 1;
    }
    if (!PyTuple_CheckExact(obj)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); i++) {
        if (!PyLong_CheckExact(PyTuple_GET_ITEM(obj, i))) {
            return 0;
        }
    }
    return 1;
}

/* Where reading a value for a key raised: 1 with the error cleared where it is an Exception
 * other than MemoryError (the call has no key, and its function meets what it meets), else 0
 * (the error propagates: KeyboardInterrupt, MemoryError...). */
int front_unkeyed_error(void) {
    if (PyErr_ExceptionMatches(PyExc_Exception) && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/* Whether type is one of the set types, by identity (a metaclass of its own hash or
 * comparison is not asked): 1, 0, -1 with an error. */
int front_type(PyObject *types, PyObject *type) {
    PyTypeObject *meta = Py_TYPE(type);
    if (meta->tp_hash != PyType_Type.tp_hash ||
        meta->tp_richcompare != PyType_Type.tp_richcompare) {
        return 0;
    }
    int found = PySet_Contains(types, type);
    return found < 0 && front_unkeyed_error() ? 0 : found;
}

/* A value read by a fused function, as its key holds it (a new reference): an exact int, str
 * or bool, or None, as (type, value); an exact float or complex as (type, its bits...), so
 * that 0.0 and -0.0 differ; an exact tuple as (tuple, its items so read...) (4 deep at most);
 * anything else by identity, (type, id, value). */
static PyObject *read_value(PyObject *v, int depth) {
    PyObject *type = (PyObject *)Py_TYPE(v);
    if (PyLong_CheckExact(v) || PyUnicode_CheckExact(v) || PyBool_Check(v) || v == Py_None) {
        return PyTuple_Pack(2, type, v);
    }
    if (PyFloat_CheckExact(v) || PyComplex_CheckExact(v)) {
        double parts[2] = {0.0, 0.0};
        if (PyFloat_CheckExact(v)) {
            parts[0] = PyFloat_AS_DOUBLE(v);
        } else {
            parts[0] = PyComplex_RealAsDouble(v);
            parts[1] = PyComplex_ImagAsDouble(v);
        }
        unsigned long long bits[2];
        memcpy(bits, parts, sizeof bits);
        return Py_BuildValue("(OKK)", type, bits[0], bits[1]);
    }
    if (PyTuple_CheckExact(v) && depth < 4) {
        Py_ssize_t n = PyTuple_GET_SIZE(v);
        Parts parts;
        if (parts_start(&parts, n + 1) < 0) {
            return NULL;
        }
        parts_add(&parts, Py_NewRef(type));
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *part = read_value(PyTuple_GET_ITEM(v, i), depth + 1);
            if (part == NULL) {
                parts_drop(&parts);
                return NULL;
            }
            parts_add(&parts, part);
        }
        return parts_tuple(&parts);
    }
    PyObject *id = PyLong_FromVoidPtr(v);
    PyObject *item = id == NULL ? NULL : PyTuple_Pack(3, type, id, v);
    Py_XDECREF(id);
    return item;
}

/* A fused function's part of a key (see front.c; a new reference), `codes` the dict of the
 * global names each code reads, `miss` what an absent global reads as: NULL with no error
 * where it has none, NULL with an error where reading it raised an error that propagates. */
PyObject *front_function_part(PyObject *codes, PyObject *miss, PyObject *fn) {
    if (!PyFunction_Check(fn) || PyFunction_GET_DEFAULTS(fn) != NULL ||
        PyFunction_GET_KW_DEFAULTS(fn) != NULL) {
        return NULL;
    }
    /* (held: hashing the code, or comparing a global's name, may run Python that replaces
     * the function's code or empties the table of codes) */
    PyObject *code = Py_NewRef(PyFunction_GET_CODE(fn)), *names, *part = NULL;
    Parts parts;
    parts.items = NULL;
    names = Py_XNewRef(PyDict_GetItemWithError(codes, code));
    if (names == NULL || !PyTuple_CheckExact(names)) {
        goto unkeyed;
    }
    PyObject *closure = PyFunction_GET_CLOSURE(fn); /* (fn holds these two: it is an argument) */
    PyObject *globals = PyFunction_GET_GLOBALS(fn);
    Py_ssize_t cells = closure == NULL ? 0 : PyTuple_GET_SIZE(closure);
    Py_ssize_t n = cells + PyTuple_GET_SIZE(names);
    if (parts_start(&parts, 1 + n) < 0) {
        goto unkeyed;
    }
    parts_add(&parts, Py_NewRef(code));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value;
        if (i < cells) {
            value = PyCell_GET(PyTuple_GET_ITEM(closure, i));
            if (value == NULL) { /* (an empty cell) */
                goto unkeyed;
            }
        } else {
            value = PyDict_GetItemWithError(globals, PyTuple_GET_ITEM(names, i - cells));
            if (value == NULL && PyErr_Occurred()) {
                goto unkeyed;
            }
            value = value == NULL ? miss : value;
        }
        Py_INCREF(value); /* (reading it allocates: a collection's __del__ may rebind it) */
        PyObject *item = read_value(value, 0);
        Py_DECREF(value);
        if (item == NULL) {
            goto unkeyed;
        }
        parts_add(&parts, item);
    }
    part = parts_tuple(&parts); /* (the items taken, or released) */
    if (part == NULL) {
        goto unkeyed;
    }
    Py_DECREF(code);
    Py_DECREF(names);
    return part;
unkeyed:
    Py_DECREF(code);
    Py_XDECREF(names);
    if (parts.items != NULL) {
        parts_drop(&parts);
    }
    if (PyErr_Occurred()) {
        front_unkeyed_error(); /* (cleared, or left to propagate) */
    }
    return NULL;
}

/* An operand tuple's part of a key (see front.c; a new reference), its arrays of a type in
 * the set `types`: NULL with no error where it has none, NULL with an error where reading an
 * array's shape or dtype raised. */
PyObject *front_operands_part(PyObject *types, PyObject *values) {
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    Parts parts;
    if (parts_start(&parts, n) < 0) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(values, i), *item;
        if (PyFloat_CheckExact(v) || PyLong_CheckExact(v) || PyComplex_CheckExact(v)) {
            item = Py_NewRef((PyObject *)Py_TYPE(v));
        } else if (front_type(types, (PyObject *)Py_TYPE(v)) == 1) {
            PyObject *shape = PyObject_GetAttr(v, front_shape);
            PyObject *dtype = shape == NULL ? NULL : PyObject_GetAttr(v, front_dtype);
            item = dtype == NULL ? NULL : PyTuple_Pack(3, (PyObject *)Py_TYPE(v), shape, dtype);
            Py_XDECREF(shape);
            Py_XDECREF(dtype);
            if (item == NULL) {
                parts_drop(&parts);
                return NULL;
            }
        } else {
            parts_drop(&parts);
            return NULL;
        }
        parts_add(&parts, item);
    }
    return parts_tuple(&parts);
}

int parts_start(Parts *parts, Py_ssize_t size) {
    parts->n = 0;
    parts->items = size <= PARTS_SMALL ? parts->small : PyMem_New(PyObject *, size);
    if (parts->items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void parts_free(Parts *parts) {
    if (parts->items != parts->small) {
        PyMem_Free(parts->items);
    }
    parts->items = NULL;
}

PyObject *parts_tuple(Parts *parts) {
    /* (no Python code runs between the tuple's making and its filling) */
    PyObject *tuple = PyTuple_New(parts->n);
    if (tuple == NULL) {
        parts_drop(parts);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < parts->n; i++) {
        PyTuple_SET_ITEM(tuple, i, parts->items[i]);
    }
    parts_free(parts);
    return tuple;
}

void parts_drop(Parts *parts) {
    for (Py_ssize_t i = 0; i < parts->n; i++) {
        Py_DECREF(parts->items[i]);
    }
    parts_free(parts);
}

int front_parts_ready(void) {
    front_shape = PyUnicode_InternFromString("shape");
    front_dtype = front_shape == NULL ? NULL : PyUnicode_InternFromString("dtype");
    return front_dtype == NULL ? -1 : 0;
}
