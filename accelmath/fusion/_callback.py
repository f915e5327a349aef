"""An expression as a cuFFT LTO callback: the source of a load or a store callback and the
ctypes struct of the table it reads.

cuFFT calls a *load* callback for each element it reads of a transform's input and a *store*
callback for each element it writes of the result, with the element's offset in the buffer
and a ``callerInfo`` pointer fixed when the plan was made. accelmath's callbacks read
everything else from a ``Table`` at that pointer, which each execute rewrites where it
changed: the further arrays' addresses and strides, the scalars (the expression's ``Element``
struct, :func:`accelmath.fusion._cuda.element_struct`), for a load the address of the array
the element comes from, and a factor the loaded value is multiplied by (the transform's
normalization, which is linear). So new operands and scalars never re-plan.

The function is C++ (cuFFT finds it by the name it is given; an ``extern "C"`` callback makes
planning fail) with the parameters cuFFT's callback types have. The element's coordinates come
from its offset, the operand being dense in C order.
"""

import ctypes

import numpy

from accelmath.errors import InvalidArgumentError
from accelmath.fusion._cuda import ELEMENT, element_source, element_struct

__all__ = ["LOAD", "STORE", "callback_name", "callback_source", "table_struct"]

LOAD, STORE = "load", "store"
# dtype -> (the name's suffix, cuFFT's element type, the C type accelmath's code uses)
_TYPES = {"complex64": ("Complex", "float2", "c64"),
          "complex128": ("DoubleComplex", "double2", "c128"),
          "float32": ("Real", "float", "float"), "float64": ("DoubleReal", "double", "double")}


def _check(role, dtype):
    if role not in (LOAD, STORE) or dtype not in _TYPES:
        raise InvalidArgumentError(f"no cuFFT {role} callback for {dtype} elements")


def callback_name(role, dtype):
    """The callback function's name: cuFFT's type name for ``role`` and element ``dtype``
    (``cufftJITCallbackLoadComplex``...)."""
    _check(role, dtype)
    return f"cufftJITCallback{role.capitalize()}{_TYPES[dtype][0]}"


def _from_cufft(value, dtype):
    c = _TYPES[dtype][2]
    return f"mk({value}.x, {value}.y)" if c.startswith("c") else value


def _to_cufft(value, dtype):
    kind = _TYPES[dtype][1]
    return f"make_{kind}({value}.x, {value}.y)" if kind.endswith("2") else value


def callback_source(expression, ndim, role, dtype, flat=False, narrow=False):
    """The CUDA C++ of ``expression`` as cuFFT's ``role`` callback (:data:`LOAD` or
    :data:`STORE`) of a transform whose operand there is ``dtype`` and ``ndim``-dimensional.

    The expression's first input is the element (of ``dtype``), and its result must be of
    ``dtype`` too. A load callback reads the element from the table's ``src`` (not from the
    buffer cuFFT reads: a c2r transform may overwrite that one) and multiplies the result by
    the table's ``post``; a store callback writes the result where cuFFT would have written the
    element.
    """
    _check(role, dtype)
    if expression.dtype != numpy.dtype(dtype) or expression.inputs[0].dtype != numpy.dtype(dtype):
        raise InvalidArgumentError(
            f"a {role} callback of {dtype} elements computes {dtype} from {dtype}; this "
            f"expression computes {expression.dtype} from {expression.inputs[0].dtype}")
    _, cufft_type, c = _TYPES[dtype]
    name = callback_name(role, dtype)
    lines = [element_source(expression, ndim, flat=flat, narrow=narrow, internal=True),
             f"struct Table {{ Element e; const {c} *src; double post; }};"]
    if role == LOAD:
        scaled = (f"mk(r.x * ({'float' if c == 'c64' else 'double'})t->post, "
                  f"r.y * ({'float' if c == 'c64' else 'double'})t->post)"
                  if c.startswith("c") else f"r * ({c})t->post")
        lines += [f"__device__ {cufft_type} {name}(void *data, unsigned long long offset, "
                  "void *info, void *shared) {",
                  "  const Table *t = (const Table *)info;",
                  f"  const {c} r = {ELEMENT}(t->src[offset], (long long)offset, t->e);",
                  f"  const {c} s = {scaled};",
                  f"  return {_to_cufft('s', dtype)};",
                  "}"]
    else:
        lines += [f"__device__ void {name}(void *data, unsigned long long offset, "
                  f"{cufft_type} value, void *info, void *shared) {{",
                  "  const Table *t = (const Table *)info;",
                  f"  const {c} r = {ELEMENT}({_from_cufft('value', dtype)}, (long long)offset, "
                  "t->e);",
                  f"  (({cufft_type} *)data)[offset] = {_to_cufft('r', dtype)};",
                  "}"]
    return "\n".join(lines) + "\n"


def table_struct(expression, ndim):
    """The ctypes struct ``Table`` of :func:`callback_source`'s callback: ``e`` (the
    expression's ``Element``), ``src`` (an address) and ``post`` (a double)."""
    return type("Table", (ctypes.Structure,), {"_fields_": [
        ("e", element_struct(expression, ndim)), ("src", ctypes.c_void_p),
        ("post", ctypes.c_double)]})
