"""Array-likes: lists, tuples and scalars, read as NumPy reads them (``numpy.asarray``)."""

import array

from accelmath._core.operand.numpy_arrays import NumpyAdapter
from accelmath.errors import InvalidArrayLikeError, UnsupportedOperandError

__all__ = ["ArrayLikeAdapter", "is_array_like"]

# bool is an int. str and bytes are not here: NumPy makes string arrays of them, never what a
# numeric call means, so they are refused as operands rather than as dtypes. A bytearray and
# an array.array are buffers (NumPy reads their elements: uint8 for a bytearray), a range
# a sequence of ints.
_PYTHON_TYPES = (list, tuple, int, float, complex, memoryview, range, bytearray, array.array)


def is_array_like(cls):
    """Whether objects of type ``cls`` are array-likes: lists and tuples (nested or not),
    ranges, Python scalars (int, float, complex, bool), buffers (memoryview, bytearray,
    array.array) and NumPy scalars
    (objects with ``__array__`` of packages accelmath does not know are read so too).

    Examples
    --------
    >>> from accelmath._core.operand.array_likes import is_array_like
    >>> is_array_like(list), is_array_like(bool), is_array_like(str), is_array_like(dict)
    (True, True, False, False)
    """
    import numpy

    return issubclass(cls, _PYTHON_TYPES) or issubclass(cls, numpy.generic)


class ArrayLikeAdapter(NumpyAdapter):
    """Array-likes, read as the new NumPy array ``numpy.asarray`` makes of them: the operand's
    ``obj`` is that array, its package ``"numpy"``.

    They have no layout key (every call converts them again, never taking a fast path made
    for another object), and no result can be written into them (see
    :func:`~accelmath._core.operand.check_mutable`).
    """

    def wrap(self, x):
        try:
            a = self._np.asarray(x)
        except MemoryError:
            raise
        except Exception as exc:
            # ragged nesting, elements NumPy cannot convert (device arrays, tensors that
            # record gradients), or the object's own __array__ failing: the message says
            # which, and its kind ours (the object's own error chained)
            error = (InvalidArrayLikeError if isinstance(exc, ValueError)
                     else UnsupportedOperandError)
            raise error(f"NumPy cannot make an array of this {type(x).__qualname__}: "
                        f"{type(exc).__name__}: {exc}") from exc
        return super().wrap(a)

    def to_numpy(self, x):
        return self._np.asarray(x)
