"""Frequency grids and spectrum shifts (``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift``)."""

import importlib
import numbers
import sys

import numpy

from accelmath._core.arguments import length, normalize_axis
from accelmath._core.operand import device_adapter, wrap_named
from accelmath._core.operand.kinds import returned_as, target_of
from accelmath.errors import InvalidArgumentError, UnsupportedDTypeError
from accelmath.fft._normalize import allocation_error

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _grid(values, like, device):
    if device not in (None, "cpu"):
        raise InvalidArgumentError(
            f'device must be None or "cpu" (NumPy results), got {device!r}; pass like= an '
            "array for a result of its package and device")
    return returned_as(values, like)


def _spacing(d):
    """The sample spacing ``d`` of :func:`fftfreq`: a nonzero number (a NumPy scalar or 0-d
    array too), or InvalidArgumentError."""
    if isinstance(d, numpy.ndarray) and d.ndim == 0:
        d = d[()]
    if not isinstance(d, (numbers.Number, numpy.number)) or d == 0:
        raise InvalidArgumentError(f"d must be a nonzero number (the sample spacing), got {d!r}")
    return d


def _frequencies(function, n, d, count):
    """``function(n, d)`` (NumPy's fftfreq or rfftfreq, of ``count(n)`` results) of ``n``
    and ``d`` checked; a count no array holds, or more memory than there is, named as
    ``n``'s."""
    given, n, d = n, length(n), _spacing(d)
    shape = (count(n),)
    dtype = numpy.result_type(numpy.int64, 1.0 / (n * d))  # (as NumPy computes them)
    nbytes = shape[0] * max(dtype.itemsize, 8)  # (NumPy's int64 indices, then the results)
    if nbytes > sys.maxsize:
        raise allocation_error(f"n = {n}", shape, dtype.name, nbytes, out_of_memory=False)
    try:  # (of n as given: NumPy's grid of a NumPy integer n, a float32 d, is in float64)
        return function(given, d)
    except MemoryError as exc:
        raise allocation_error(f"n = {n}", shape, dtype.name, nbytes) from exc


def fftfreq(n, d=1.0, *, device=None, like=None):
    """Sample frequencies of :func:`fft` (as ``numpy.fft.fftfreq``).

    Parameters
    ----------
    n : int
        Window length.
    d : float
        Sample spacing.
    device : {None, "cpu"}
        As in NumPy: the result is a NumPy array (see ``like``).
    like : str, module or array, optional
        The kind of the result (default: NumPy): a package's name or module (``"cupy"``,
        ``torch``...), or an array of the package and device wanted; see :doc:`/guide/arrays`.

    Examples
    --------
    >>> import accelmath.fft
    >>> accelmath.fft.fftfreq(4, 0.5).tolist()
    [0.0, 0.5, -1.0, -0.5]
    """
    return _grid(_frequencies(numpy.fft.fftfreq, n, d, lambda n: n), like, device)


def rfftfreq(n, d=1.0, *, device=None, like=None):
    """Sample frequencies of :func:`rfft` (as ``numpy.fft.rfftfreq``): the ``n // 2 + 1``
    non-negative ones of :func:`fftfreq`.

    Parameters
    ----------
    n : int
        Window length.
    d : float
        Sample spacing.
    device : {None, "cpu"}
        As in NumPy: the result is a NumPy array (see ``like``).
    like : str, module or array, optional
        The kind of the result (default: NumPy): a package's name or module (``"cupy"``,
        ``torch``...), or an array of the package and device wanted; see :doc:`/guide/arrays`.

    Examples
    --------
    >>> import accelmath.fft
    >>> accelmath.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _grid(_frequencies(numpy.fft.rfftfreq, n, d, lambda n: n // 2 + 1), like, device)


# the packages whose own roll takes (x, shifts, axes), by the module that has it
_ROLL_MODULES = {"numpy": "numpy", "cupy": "cupy", "jax": "jax.numpy", "torch": "torch"}


def _roll(x, inverse, axes):
    """``x`` rolled by half its extent along ``axes`` (all by default; repeats roll again,
    as in NumPy), by its own package's ``roll``."""
    try:
        op = wrap_named(x, "x")  # (array-likes: read as NumPy arrays, op.obj)
    except UnsupportedDTypeError:
        if not isinstance(x, numpy.ndarray):
            raise
        # a NumPy dtype no transform takes (long double results, objects, dates...): a roll
        # reads no value, and NumPy's takes them
        op = None
    package, shape = ("numpy", x.shape) if op is None else (op.package, op.shape)
    if op is not None and package == "numpy":
        x = op.obj  # (an array-like's array)
    ndim = len(shape)
    if ndim == 0 and package == "numpy":  # (numpy.roll fails on 0-d)
        return numpy.array(x, copy=True)
    if axes is None:
        axes = tuple(range(ndim))
    elif not hasattr(axes, "__len__"):
        axes = (axes,)
    axes = tuple(normalize_axis(a, ndim) for a in axes)
    shifts = tuple(-(shape[a] // 2) if inverse else shape[a] // 2 for a in axes)
    if package in _ROLL_MODULES:
        return importlib.import_module(_ROLL_MODULES[package]).roll(x, shifts, axes)
    if op.on_device:  # another producer: rolled by the package that allocates results
        return _roll(device_adapter().from_dlpack(x), inverse, axes)
    return numpy.roll(op.adapter.to_numpy(x), shifts, axes)


def fftshift(x, axes=None, *, like=None):
    """Shift the zero frequency to the center (as ``numpy.fft.fftshift``), any array package.

    Parameters
    ----------
    x : array
        The spectrum: an array of any package, or an array-like.
    axes : int or sequence of int, optional
        The axes to shift (default: all).
    like : str, module or array, optional
        The kind of the result (default: ``x``'s): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Examples
    --------
    >>> import numpy as np
    >>> import accelmath.fft
    >>> accelmath.fft.fftshift(np.arange(5)).tolist()
    [3, 4, 0, 1, 2]
    """
    if like is not None:
        like = target_of(like)
    return returned_as(_roll(x, False, axes), like)


def ifftshift(x, axes=None, *, like=None):
    """The inverse of :func:`fftshift` (as ``numpy.fft.ifftshift``).

    Parameters
    ----------
    x : array
        The centred spectrum: an array of any package, or an array-like.
    axes : int or sequence of int, optional
        The axes to shift (default: all).
    like : str, module or array, optional
        The kind of the result (default: ``x``'s): a package's name or module
        (``"cupy"``, ``torch``...) or an array of it; see :doc:`/guide/arrays`.

    Examples
    --------
    >>> import numpy as np
    >>> import accelmath.fft
    >>> accelmath.fft.ifftshift(np.arange(5)).tolist()
    [2, 3, 4, 0, 1]
    """
    if like is not None:
        like = target_of(like)
    return returned_as(_roll(x, True, axes), like)
