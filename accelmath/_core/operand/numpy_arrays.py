"""NumPy arrays: host memory, read through ``__array_interface__``."""

from accelmath._core.operand.base import Adapter, Layouts
from accelmath._core.operand.packages import device_adapter
from accelmath._core.operand.record import Operand

__all__ = ["NumpyAdapter"]


class NumpyAdapter(Adapter):
    """The adapter of ``numpy.ndarray`` (host memory; device results of the NumPy package
    come from :func:`~accelmath._core.operand.device_adapter`)."""

    package = "numpy"

    def __init__(self):
        import numpy

        self._np = numpy
        self._layouts = Layouts()

    def wrap(self, x):
        name, strides = self._layouts.lookup(x.dtype, x.strides)
        return Operand(x, x.__array_interface__["data"][0], x.shape, strides, name, None, self)

    def empty(self, shape, dtype, device_id):
        if device_id is not None:
            return device_adapter().empty(shape, dtype, device_id)
        return self._np.empty(shape, dtype)

    def to_numpy(self, x):
        return x
