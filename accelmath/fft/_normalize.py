"""Argument normalization for the FFT functions (pure, no device access).

The rules are NumPy's (``numpy.fft``): ``n``/``axis`` for one-axis transforms, ``s``/``axes``
for several (an axis given twice is transformed twice, as in NumPy); ``norm`` is a table
lookup; messages quote the bad value and what is allowed. The checks every domain shares
(integers, lengths, axes, ``execution``, ``workers``) live in :mod:`accelmath._core.arguments`.
"""

import math
import sys
import warnings

import numpy

from accelmath._core.arguments import index, normalize_axis
from accelmath._core.callers import outside_stacklevel
from accelmath.errors import InvalidArgumentError, OutOfMemoryError, UnsupportedDTypeError

__all__ = ["NORMS", "check_norm", "scale_factor", "scale_exponent", "swap_norm",
           "normalize_axes", "axis_groups", "warn_deprecated", "data_points_error",
           "complex_dtype", "real_dtype", "transform_dtypes", "LONG_DOUBLES",
           "check_gpu_dtype", "check_size", "too_large_error", "allocation_error"]

NORMS = ("backward", "ortho", "forward")

# norm -> (forward exponent, inverse exponent) of 1/N
_EXPONENT = {"backward": (0, 1), "ortho": (0.5, 0.5), "forward": (1, 0)}
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}

_COMPLEX = {"float16": "complex32", "float32": "complex64", "float64": "complex128",
            "complex32": "complex32", "complex64": "complex64", "complex128": "complex128"}
_REAL = {"complex32": "float16", "complex64": "float32", "complex128": "float64",
         "float16": "float16", "float32": "float32", "float64": "float64"}
_PROMOTED = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}

# NumPy's long double (float128 on x86 Linux; float64 where the platform has none wider):
# computed on the host in its own precision, as numpy.fft and scipy.fft do.
_LONG, _CLONG = numpy.dtype(numpy.longdouble).name, numpy.dtype(numpy.clongdouble).name
LONG_DOUBLES = frozenset({_LONG, _CLONG} - set(_COMPLEX))
_COMPLEX.update({_LONG: _CLONG, _CLONG: _CLONG})
_REAL.update({_LONG: _LONG, _CLONG: _LONG})

_AXES_NONE = ("`axes` should not be `None` if `s` is not `None`: this is deprecated in NumPy "
              "2.0 (the last len(s) axes are transformed); pass axes explicitly")
_S_NONE = ("Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 (a "
           "None means the 1-D transform's default length); pass that length, or -1 for the "
           "input's")


def check_norm(norm):
    """Return the normalized ``norm`` (None means "backward") or raise InvalidArgumentError."""
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in _EXPONENT:
        raise InvalidArgumentError(
            f'Invalid norm value {norm!r}, should be "backward", "ortho" or "forward"')
    return norm


def swap_norm(norm):
    """The norm with its direction swapped (how hfft and ihfft reuse irfft and rfft)."""
    return _SWAP[check_norm(norm)]


def scale_exponent(norm, inverse):
    """The power of 1/N a transform of N points is scaled by: 0, 0.5 or 1."""
    return _EXPONENT[norm][1 if inverse else 0]


def scale_factor(norm, inverse, n):
    """The factor a transform of ``n`` points is multiplied by, or None when it is 1."""
    exponent = _EXPONENT[norm][1 if inverse else 0]
    if exponent == 0 or n == 1:
        return None
    return 1.0 / n if exponent == 1 else 1.0 / math.sqrt(n)


def data_points_error(n, where):
    """The error for a transform of ``n`` < 1 points; ``where`` says which axis and why."""
    return InvalidArgumentError(f"Invalid number of FFT data points ({n}) specified {where}")


def _itemsize(dtype):
    return 4 if dtype == "complex32" else numpy.dtype(dtype).itemsize


def _sizes(kind, shape, axes, s, in_dtype, out_dtype):
    """``(result shape, its bytes, input shape zero-padded to s, its bytes or 0 where s does
    not pad)`` of a ``kind`` transform of an input of ``shape`` to lengths ``s`` (a c2r's: of
    its output)."""
    padded, result = list(shape), list(shape)
    for axis, n in zip(axes, s):
        padded[axis] = result[axis] = n
    if kind == "r2c":
        result[axes[-1]] = s[-1] // 2 + 1
    elif kind == "c2r":
        padded[axes[-1]] = s[-1] // 2 + 1
    pads = any(n > m for n, m in zip(padded, shape))
    # (extents of 0 left out, as NumPy leaves them out of its bound of an array's bytes)
    return (tuple(result), _product(result) * _itemsize(out_dtype), tuple(padded),
            _product(padded) * _itemsize(in_dtype) if pads else 0)


def _product(shape):
    return math.prod(n for n in shape if n)


def allocation_error(argument, shape, dtype, nbytes, out_of_memory=True, besides=""):
    """The error for an argument (``argument``: its name and value, ``"n = 8"``) that asks
    for a ``dtype`` result of ``shape`` (``nbytes`` bytes; ``besides``: what else, in words)
    larger than could be allocated (``out_of_memory``: an OutOfMemoryError) or than an array
    can hold at all (an InvalidArgumentError)."""
    error, why = ((OutOfMemoryError, "more memory than could be allocated") if out_of_memory
                  else (InvalidArgumentError, f"more than an array can hold ({sys.maxsize} "
                                              f"bytes)"))
    return error(f"{argument} asks for a {dtype} result of shape {tuple(shape)}: {nbytes} "
                 f"bytes ({nbytes / 2**30:.1f} GiB){besides}, {why}")


def too_large_error(kind, shape, axes, s, in_dtype, out_dtype, out_of_memory=True):
    """The :func:`allocation_error` of lengths ``s`` (see :func:`check_size`)."""
    result, nbytes, padded, padded_bytes = _sizes(kind, shape, axes, s, in_dtype, out_dtype)
    besides = f" (besides the input zero-padded to {padded})" if padded_bytes else ""
    return allocation_error(f"n or s = {tuple(s)}", result, out_dtype, nbytes, out_of_memory,
                            besides)


def check_size(kind, shape, axes, s, in_dtype, out_dtype):
    """Raise InvalidArgumentError where lengths ``s`` (one per axis of ``axes``; a c2r's: of
    its output) of a ``kind`` transform of an input of ``shape`` ask for an array (the
    result, or the input zero-padded to them) larger than an array can be (``sys.maxsize``
    bytes): no machine could allocate it."""
    _, nbytes, _, padded_bytes = _sizes(kind, shape, axes, s, in_dtype, out_dtype)
    if max(nbytes, padded_bytes) > sys.maxsize:
        raise too_large_error(kind, shape, axes, s, in_dtype, out_dtype, out_of_memory=False)


def normalize_axes(shape, s, axes, default_axes=None, unique=True, halved=False):
    """Resolve ``s`` and ``axes`` as numpy.fft does.

    Parameters
    ----------
    shape : tuple of int
        The operand's extents.
    s : sequence of int or None
        Transform lengths (None: the operand's extents; -1 for an axis: its extent; None for
        an axis, deprecated in NumPy 2: the 1-D transform's default, its extent but where
        ``halved``).
    axes : sequence of int or None
        Axes (None: ``default_axes``, or the last ``len(s)`` axes, or all axes).
    default_axes : tuple or None
        The function's default axes (``(-1,)`` for one-axis functions, ``(-2, -1)`` for 2-D).
    unique : bool
        Refuse an axis given twice (plans); the functions transform it again, as NumPy.
    halved : bool
        A c2r transform's: a None for the last axis means ``2 * (m - 1)``, ``irfft``'s default
        for an input of m points.

    Returns
    -------
    axes : tuple of int
        Non-negative, in the order given.
    s : tuple of int or None
        Lengths, one per axis, or None.

    Examples
    --------
    >>> from accelmath.fft._normalize import normalize_axes
    >>> normalize_axes((4, 6, 8), (-1, 5), (0, -1))
    ((0, 2), (4, 5))
    """
    ndim = len(shape)
    if axes is None:
        if default_axes is not None:
            axes = default_axes
        elif s is not None:
            axes = tuple(range(-_count(s), 0))
        else:
            axes = tuple(range(ndim))
    elif isinstance(axes, int) or not hasattr(axes, "__len__"):
        axes = (axes,)
    result = []
    for axis in axes:
        axis = normalize_axis(axis, ndim, "axis")
        if unique and axis in result:
            raise InvalidArgumentError(f"axes={tuple(axes)} repeats axis {axis}")
        result.append(axis)
    if s is not None:
        if isinstance(s, int) or not hasattr(s, "__len__"):
            s = (s,)
        s = tuple(None if v is None else index(v, "s") for v in s)
        if len(s) != len(result):
            raise InvalidArgumentError(
                f"s={s} and axes={tuple(axes)} must have the same length")
        halve = halved and s[-1] is None
        s = tuple(-1 if v is None else v for v in s)
        for i, (v, a) in enumerate(zip(s, result)):
            if v < 1 and v != -1:
                raise InvalidArgumentError(
                    f"s[{i}] must be at least 1 (or -1: the input's length), got {v}")
            if v == -1 and shape[a] == 0:  # (NumPy raises too: no points to transform)
                raise data_points_error(
                    0, f"by s[{i}] = -1 (the input's length) along axis {a}, which has length 0")
        s = tuple(shape[a] if v == -1 else v for v, a in zip(s, result))
        if halve:  # (at least 1: the transform checks it, as irfft's n)
            s = s[:-1] + (2 * (s[-1] - 1),)
    return tuple(result), s


def _count(s):
    return 1 if isinstance(s, int) or not hasattr(s, "__len__") else len(s)


def warn_deprecated(s, axes):
    """Warn, as NumPy 2 does, of ``s`` given without ``axes`` and of None values in ``s``
    (DeprecationWarning, pointing at the first caller outside accelmath)."""
    if s is None:
        return
    if axes is None:
        warnings.warn(_AXES_NONE, DeprecationWarning, stacklevel=outside_stacklevel())
    if hasattr(s, "__len__") and any(v is None for v in s):
        warnings.warn(_S_NONE, DeprecationWarning, stacklevel=outside_stacklevel())


def axis_groups(axes):
    """Split ``axes`` into runs of distinct axes, the last run ending with the last axis:
    NumPy transforms an axis given twice twice, one axis after the other from the last, and
    a run of distinct axes is one transform.

    Returns
    -------
    list of slice
        The runs as slices of ``axes``, in order.

    Examples
    --------
    >>> from accelmath.fft._normalize import axis_groups
    >>> axis_groups((0, 1, 0, 2)), axis_groups((1, 2))
    ([slice(0, 1, None), slice(1, 4, None)], [slice(0, 2, None)])
    """
    groups, end, seen = [], len(axes), set()
    for start in range(len(axes) - 1, -1, -1):
        if axes[start] in seen:
            groups.append(slice(start + 1, end))
            end, seen = start + 1, set()
        seen.add(axes[start])
    groups.append(slice(0, end))
    return groups[::-1]


def _lookup(table, promoted, dtype):
    if dtype in _PROMOTED:
        return promoted
    if dtype not in table:
        if dtype == "bfloat16":  # (a float, which no FFT library takes)
            raise UnsupportedDTypeError(
                "unsupported dtype 'bfloat16' for an FFT (neither cuFFT nor NumPy transforms "
                "it); convert to float32 first")
        raise UnsupportedDTypeError(
            f"unsupported dtype {dtype!r} for an FFT; expected a float, complex, integer or bool "
            "dtype")
    return table[dtype]


def complex_dtype(dtype):
    """The complex dtype a transform of ``dtype`` produces (integers promote to complex128)."""
    return _lookup(_COMPLEX, "complex128", dtype)


def real_dtype(dtype):
    """The real dtype that goes with ``dtype`` (integers promote to float64)."""
    return _lookup(_REAL, "float64", dtype)


def transform_dtypes(kind, dtype, complex32=True, name="a"):
    """(input dtype, output dtype) a ``kind`` transform computes in, for operands of ``dtype``;
    half precision in single where the package has no ``complex32`` to hold the result (as
    scipy.fft and CuPy compute float16). ``name``: the operand's argument, in errors."""
    if not complex32 and dtype == "float16":
        dtype = "float32"
    if kind == "c2c":
        c = complex_dtype(dtype)
        return c, c
    if kind == "r2c":
        if dtype.startswith("complex"):
            raise UnsupportedDTypeError(
                f"{name}: a real-to-complex transform needs real input, got dtype {dtype!r}")
        return real_dtype(dtype), complex_dtype(dtype)
    return complex_dtype(dtype), real_dtype(dtype)


def check_gpu_dtype(dtype):
    """Raise UnsupportedDTypeError for a dtype cuFFT has no transform of (long double)."""
    if dtype in LONG_DOUBLES:
        raise UnsupportedDTypeError(
            f"dtype {dtype!r} (long double) has no GPU FFT: cuFFT computes in half, single and "
            f"double precision; convert to float64 or complex128 for the GPU, or compute it on "
            f"the CPU (execution=\"auto\" or \"cpu\")")
