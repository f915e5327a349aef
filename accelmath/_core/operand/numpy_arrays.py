"""NumPy arrays: host memory, read through ``__array_interface__``."""

from accelmath._core.operand.base import Adapter, Layouts
from accelmath._core.operand.packages import device_adapter
from accelmath._core.operand.record import Operand
from accelmath.errors import UnsupportedDTypeError

__all__ = ["NumpyAdapter", "numpy_dtype"]


def numpy_dtype(name):
    """The NumPy dtype of accelmath's dtype name ``name``: bfloat16 is ``ml_dtypes``'.

    Examples
    --------
    >>> from accelmath._core.operand.numpy_arrays import numpy_dtype
    >>> numpy_dtype("complex64")
    dtype('complex64')
    """
    import numpy

    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise UnsupportedDTypeError(
                "bfloat16 NumPy arrays are ml_dtypes' (pip install ml_dtypes), or use torch "
                "tensors") from None
        return numpy.dtype(ml_dtypes.bfloat16)
    return numpy.dtype(name)


class NumpyAdapter(Adapter):
    """The adapter of ``numpy.ndarray`` (host memory; device results of the NumPy package
    come from :func:`~accelmath._core.operand.device_adapter`)."""

    package = "numpy"

    def __init__(self):
        import numpy

        self._np = numpy
        self._layouts = Layouts()

    def wrap(self, x):
        # a subclass is read as NumPy sees its memory (a property of its own may say otherwise)
        view = x if x.__class__ is self._np.ndarray else self._np.ndarray.view(x, self._np.ndarray)
        name, strides = self._layouts.lookup(view.dtype, view.strides)
        return Operand(x, view.__array_interface__["data"][0], view.shape, strides, name, None,
                       self)

    def empty(self, shape, dtype, device_id):
        if device_id is not None:
            return device_adapter().empty(shape, dtype, device_id)
        return self._np.empty(shape, numpy_dtype(dtype))

    def to_numpy(self, x):
        return x
