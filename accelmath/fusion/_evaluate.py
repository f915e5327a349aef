"""The NumPy back end: an :class:`~accelmath.fusion._graph.Expression` evaluated with NumPy,
node by node. It is the CPU path of every fused call and the oracle the GPU back ends are
tested against."""

import numpy

from accelmath.errors import InvalidArgumentError
from accelmath.fusion._graph import OPERATIONS

__all__ = ["Axes", "evaluate", "frequencies", "normalize_axes"]


class Axes:
    """What ``index(axis)`` and ``frequency(axis)`` mean for one call: the element array's
    ``shape``, and for each axis the period ``n`` of its frequencies (``periods``, default
    the axis's length) and whether it holds a real transform's half spectrum (``half``: the
    frequencies are ``rfftfreq(n)``)."""

    __slots__ = ("shape", "periods", "half")

    def __init__(self, shape, periods=None, half=()):
        self.shape = tuple(shape)
        self.periods = tuple(shape) if periods is None else tuple(periods)
        self.half = frozenset(half)


def normalize_axes(expression, ndim):
    """The axes ``expression``'s index and frequency nodes name, made non-negative for
    arrays of ``ndim`` dimensions: ``{as written: normalized}``."""
    axes = {}
    for axis in expression.axes():
        if not -ndim <= axis < ndim:
            raise InvalidArgumentError(
                f"index or frequency of axis {axis}: the element's array has {ndim} "
                f"dimension{'s' if ndim != 1 else ''}")
        axes[axis] = axis % ndim
    return axes


def frequencies(count, period, half, dtype):
    """The first ``count`` frequencies, in cycles per sample, of an axis of period ``period``
    (``rfftfreq`` where ``half``, else ``fftfreq``)."""
    k = numpy.arange(count, dtype=numpy.float64)
    if not half:
        k = numpy.where(k > (period - 1) // 2, k - period, k)
    return (k / period).astype(dtype)


_PYTHON_TYPES = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def _leaf(node, shape, axes, context):
    """An index or frequency node's values, shaped to broadcast along their axis."""
    axis = axes[node.attr]
    count = shape[axis]
    if node.op == "index":
        values = numpy.arange(count, dtype=numpy.int64)
    else:
        values = frequencies(count, context.periods[axis], axis in context.half, node.dtype)
    return values.reshape([count if a == axis else 1 for a in range(len(shape))])


def evaluate(expression, arguments, shape=None, context=None, out=None):
    """``expression`` on NumPy ``arguments`` (arrays and scalars, in the inputs' order).

    Parameters
    ----------
    expression : Expression
    arguments : sequence
        NumPy arrays for the array inputs, Python or NumPy scalars for the scalar ones.
    shape : tuple of int, optional
        The result's shape (default: the arguments' broadcast shape).
    context : Axes, optional
        What index and frequency mean (default: the result's shape, fftfreq periods).
    out : numpy.ndarray, optional
        Where the result is written (of ``shape`` and the expression's dtype).

    Returns
    -------
    numpy.ndarray
        Of ``shape`` and :attr:`Expression.dtype`.
    """
    if shape is None:
        shape = numpy.broadcast_shapes(*(numpy.shape(a) for a in arguments))
    shape = tuple(shape)
    context = context or Axes(shape)
    axes = normalize_axes(expression, len(shape)) if expression.axes() else {}
    values = []
    with numpy.errstate(all="ignore"):  # (once for every node: a where may discard a 1 / 0)
        for node in expression.nodes:
            if node.op == "input":
                value = arguments[node.attr]
                if not node.weak:
                    value = numpy.asarray(value)
                    if value.dtype != node.dtype:
                        value = value.astype(node.dtype)
                    if value.ndim == 0:
                        value = value[()]
            elif node.op == "constant":
                value = node.attr if node.weak else numpy.asarray(node.attr, node.dtype)[()]
            elif node.op in ("index", "frequency"):
                value = _leaf(node, shape, axes, context)
            else:
                arguments_of = [values[a] for a in node.args]
                if node.op == "astype":
                    value = numpy.asarray(arguments_of[0]).astype(node.attr)
                else:
                    value = OPERATIONS[node.op].numpy(*arguments_of)
                if node.weak:  # (a Python scalar, as Python computes it: it stays weak)
                    value = _PYTHON_TYPES[node.dtype.kind](value)
                elif numpy.asarray(value).dtype != node.dtype:
                    value = numpy.asarray(value).astype(node.dtype)
            values.append(value)
    result = values[-1]
    if out is None:
        out = numpy.empty(shape, expression.dtype)
    out[...] = result
    return out
