"""Frequency grids and spectrum shifts (``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift``)."""

import importlib
import operator

import numpy

from accelmath._core.operand import wrap_operand
from accelmath.errors import InvalidArgumentError
from accelmath.fft._normalize import normalize_axes

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _grid(values, like):
    if like is None:
        return values
    op = wrap_operand(like)
    return op.adapter.from_numpy(values, like)


def _length(n):
    try:
        n = operator.index(n)
    except TypeError:
        raise InvalidArgumentError(f"n must be an integer, got {n!r}") from None
    if n < 1:
        raise InvalidArgumentError(f"n must be at least 1, got {n}")
    return n


def fftfreq(n, d=1.0, *, like=None):
    """Sample frequencies of :func:`fft` (as ``numpy.fft.fftfreq``).

    Parameters
    ----------
    n : int
        Window length.
    d : float
        Sample spacing.
    like : array, optional
        Return an array of this array's package and device (default: NumPy).

    Examples
    --------
    >>> import accelmath.fft
    >>> accelmath.fft.fftfreq(4, 0.5).tolist()
    [0.0, 0.5, -1.0, -0.5]
    """
    return _grid(numpy.fft.fftfreq(_length(n), d), like)


def rfftfreq(n, d=1.0, *, like=None):
    """Sample frequencies of :func:`rfft` (as ``numpy.fft.rfftfreq``); see :func:`fftfreq`.

    Examples
    --------
    >>> import accelmath.fft
    >>> accelmath.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    return _grid(numpy.fft.rfftfreq(_length(n), d), like)


def _roll(x, inverse, axes):
    op = wrap_operand(x)
    if axes is None:
        axes = tuple(range(len(op.shape)))
    axes, _ = normalize_axes(len(op.shape), None, axes)
    shifts = tuple(-(op.shape[a] // 2) if inverse else op.shape[a] // 2 for a in axes)
    if op.package == "torch":
        return importlib.import_module("torch").roll(x, shifts, axes)
    if op.package == "jax":
        return importlib.import_module("jax.numpy").roll(x, shifts, axes)
    module = numpy if op.package == "numpy" else importlib.import_module(op.package)
    return module.roll(x, shifts, axes)


def fftshift(x, axes=None):
    """Shift the zero frequency to the center (as ``numpy.fft.fftshift``), any array package.

    Examples
    --------
    >>> import numpy as np
    >>> import accelmath.fft
    >>> accelmath.fft.fftshift(np.arange(5)).tolist()
    [3, 4, 0, 1, 2]
    """
    return _roll(x, False, axes)


def ifftshift(x, axes=None):
    """The inverse of :func:`fftshift` (as ``numpy.fft.ifftshift``).

    Examples
    --------
    >>> import numpy as np
    >>> import accelmath.fft
    >>> accelmath.fft.ifftshift(np.arange(5)).tolist()
    [2, 3, 4, 0, 1]
    """
    return _roll(x, True, axes)
