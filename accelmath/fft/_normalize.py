"""Argument normalization for the FFT functions (pure, no device access).

The rules are NumPy's (``numpy.fft``): ``n``/``axis`` for one-axis transforms, ``s``/``axes``
for several; ``norm`` is a table lookup; messages quote the bad value and what is allowed.
"""

import math
import operator

from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError

__all__ = ["NORMS", "check_norm", "scale_factor", "swap_norm", "normalize_axes",
           "complex_dtype", "real_dtype", "transform_dtypes", "EXECUTIONS", "check_execution",
           "check_workers", "index", "length"]

NORMS = ("backward", "ortho", "forward")
EXECUTIONS = ("auto", "cuda", "cpu")

# norm -> (forward exponent, inverse exponent) of 1/N
_EXPONENT = {"backward": (0, 1), "ortho": (0.5, 0.5), "forward": (1, 0)}
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}

_COMPLEX = {"float16": "complex32", "float32": "complex64", "float64": "complex128",
            "complex32": "complex32", "complex64": "complex64", "complex128": "complex128"}
_REAL = {"complex32": "float16", "complex64": "float32", "complex128": "float64",
         "float16": "float16", "float32": "float32", "float64": "float64"}
_PROMOTED = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}


def check_norm(norm):
    """Return the normalized ``norm`` (None means "backward") or raise InvalidArgumentError."""
    if norm is None:
        return "backward"
    if norm not in _EXPONENT:
        raise InvalidArgumentError(
            f'Invalid norm value {norm!r}, should be "backward", "ortho" or "forward"')
    return norm


def check_execution(execution):
    """Validate ``execution`` ("auto", "cuda" or "cpu")."""
    if execution not in EXECUTIONS:
        raise InvalidArgumentError(
            f"Invalid execution {execution!r}, should be \"auto\", \"cuda\" or \"cpu\"")
    return execution


def check_workers(workers):
    """Validate ``workers`` (None, or a nonzero int; negative counts back from all cores)."""
    if workers is None:
        return None
    try:
        count = None if isinstance(workers, bool) else operator.index(workers)
    except TypeError:
        count = None
    if not count:
        raise InvalidArgumentError(
            f"workers must be None or a nonzero integer (negative: counted back from the "
            f"number of CPUs), got {workers!r}")
    return count


def swap_norm(norm):
    """The norm with its direction swapped (how hfft and ihfft reuse irfft and rfft)."""
    return _SWAP[check_norm(norm)]


def scale_factor(norm, inverse, n):
    """The factor a transform of ``n`` points is multiplied by, or None when it is 1."""
    exponent = _EXPONENT[norm][1 if inverse else 0]
    if exponent == 0 or n == 1:
        return None
    return 1.0 / n if exponent == 1 else 1.0 / math.sqrt(n)


def index(value, what):
    """``value`` as an int (anything with ``__index__`` but a bool), or InvalidArgumentError
    naming it."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{what} must be an integer, got {value!r}") from None


def length(n, what="n"):
    """A transform length ``n``: an integer of at least 1, or InvalidArgumentError naming it."""
    n = index(n, what)
    if n < 1:
        raise InvalidArgumentError(f"{what} must be at least 1, got {n}")
    return n


def normalize_axes(shape, s, axes, default_axes=None):
    """Resolve ``s`` and ``axes`` as numpy.fft does.

    Parameters
    ----------
    shape : tuple of int
        The operand's extents.
    s : sequence of int or None
        Transform lengths (None: the operand's extents; -1 for an axis: its extent).
    axes : sequence of int or None
        Axes (None: ``default_axes``, or the last ``len(s)`` axes, or all axes).
    default_axes : tuple or None
        The function's default axes (``(-1,)`` for one-axis functions, ``(-2, -1)`` for 2-D).

    Returns
    -------
    axes : tuple of int
        Non-negative, in the order given.
    s : tuple of int or None
        Lengths, one per axis, or None.
    """
    ndim = len(shape)
    if axes is None:
        if default_axes is not None:
            axes = default_axes
        elif s is not None:
            axes = tuple(range(-len(s), 0))
        else:
            axes = tuple(range(ndim))
    elif isinstance(axes, int) or not hasattr(axes, "__len__"):
        axes = (axes,)
    result = []
    for axis in axes:
        axis = index(axis, "axes")
        if not -ndim <= axis < ndim:
            raise InvalidArgumentError(
                f"axis {axis} is out of bounds for an array of dimension {ndim}")
        axis %= ndim
        if axis in result:
            raise InvalidArgumentError(f"axes={tuple(axes)} repeats axis {axis}")
        result.append(axis)
    if s is not None:
        if isinstance(s, int) or not hasattr(s, "__len__"):
            s = (s,)
        s = tuple(index(v, "s") for v in s)
        if len(s) != len(result):
            raise InvalidArgumentError(
                f"s={s} and axes={tuple(axes)} must have the same length")
        for i, v in enumerate(s):
            if v < 1 and v != -1:
                raise InvalidArgumentError(
                    f"s[{i}] must be at least 1 (or -1: the input's length), got {v}")
        s = tuple(shape[a] if v == -1 else v for v, a in zip(s, result))
    return tuple(result), s


def _lookup(table, promoted, dtype):
    if dtype in _PROMOTED:
        return promoted
    if dtype not in table:
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


def transform_dtypes(kind, dtype, complex32=True):
    """(input dtype, output dtype) a ``kind`` transform computes in, for operands of ``dtype``;
    half precision in single where the package has no ``complex32`` to hold the result (as
    scipy.fft and CuPy compute float16)."""
    if not complex32 and dtype == "float16":
        dtype = "float32"
    if kind == "c2c":
        c = complex_dtype(dtype)
        return c, c
    if kind == "r2c":
        if dtype.startswith("complex"):
            raise UnsupportedDTypeError(
                f"a real-to-complex transform needs real input, got dtype {dtype!r}")
        return real_dtype(dtype), complex_dtype(dtype)
    return complex_dtype(dtype), real_dtype(dtype)
