"""Numba's CUDA device arrays (``numba.cuda.to_device``, ``device_array``, ``as_cuda_array``...):
read from the array's own attributes; results allocated by Numba (its current context's memory
manager: an external-memory plugin such as RMM's where one is set), so that a Numba caller gets
Numba arrays back, with or without CuPy and torch installed.

Numba's allocations are not stream-ordered (``cuMemAlloc``, or a plugin's own), so a result
allocated here may be written on any stream at once. Numba has no current stream of its own:
work on its arrays goes to the legacy default stream (the per-thread default stream where
``NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM`` is set), and an array bound to a stream
(``x.bind(stream)``, or made with ``stream=``) is read after that stream's work.
"""

import contextlib

from accelmath._core.layout import contiguous_strides
from accelmath._core.operand.base import Adapter, Layouts
from accelmath._core.operand.protocols import pointer_device
from accelmath._core.operand.record import Operand

__all__ = ["NumbaAdapter"]

_PER_THREAD = 2  # CU_STREAM_PER_THREAD


class NumbaAdapter(Adapter):
    """The adapter of ``numba.cuda``'s ``DeviceNDArray``."""

    package = "numba"

    def __init__(self):
        from numba import cuda
        from numba.cuda.cudadrv.devicearray import DeviceNDArray

        self._cuda = cuda
        self._array_type = DeviceNDArray
        self._layouts = Layouts()
        try:
            from numba.cuda.core import config
        except ImportError:  # (older Numba: the configuration is numba's own)
            from numba.core import config
        self._stream = _PER_THREAD if getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM",
                                              0) else 0

    def wrap(self, x):
        name, strides = self._layouts.lookup(x.dtype, x.strides)
        # (an array bound to a stream: work there may still be writing it)
        ready = int(x.stream) or None
        return Operand(x, self.data_ptr(x), x.shape, strides, name, self._device_of(x), self,
                       ready=ready)

    def _device_of(self, x):
        try:
            return x.gpu_data.context.device.id
        except AttributeError:  # (memory Numba did not allocate: ask the driver)
            device_id = pointer_device(self.data_ptr(x))
            return 0 if device_id is None else device_id

    def layout_key(self, x):
        if x.stream:
            return None  # (bound to a stream: wrapped every time, for its ready stream)
        return x.shape, x.strides, x.dtype, self._device_of(x)

    def data_ptr(self, x):
        return x.device_ctypes_pointer.value or 0

    def reader(self, key, keyed=False):
        shape, strides, dtype, device_id = key
        array_type, device_of = self._array_type, self._device_of

        def read(x):
            if (type(x) is array_type and x.shape == shape and x.strides == strides
                    and x.dtype == dtype and not x.stream and device_of(x) == device_id):
                return x.device_ctypes_pointer.value or 0
            return None

        return read

    def current_stream(self, device_id):
        return self._stream

    @contextlib.contextmanager
    def stream_scope(self, handle, device_id):
        # (Numba allocates in no stream's order: only the device matters)
        if device_id is None:
            yield
            return
        with self._cuda.gpus[device_id]:
            yield

    def empty(self, shape, dtype, device_id):
        if device_id is None:
            import numpy

            return numpy.empty(shape, dtype)
        with self._cuda.gpus[device_id]:
            return self._cuda.device_array(tuple(shape), dtype)

    def empty_strided(self, shape, strides, dtype, device_id):
        if device_id is None:
            return super().empty_strided(shape, strides, dtype, device_id)
        import numpy

        itemsize = numpy.dtype(dtype).itemsize
        shape = tuple(shape)
        with self._cuda.gpus[device_id]:
            if tuple(strides) == contiguous_strides(shape):
                array = self._cuda.device_array(shape, dtype)
            else:  # (dense in another order: Numba allocates the extent the strides span)
                array = self._cuda.device_array(shape, dtype,
                                                strides=tuple(s * itemsize for s in strides))
        return array, self.data_ptr(array)

    def zeros(self, shape, dtype, device_id):
        x = self.empty(shape, dtype, device_id)
        if device_id is None:
            x[...] = 0
            return x
        nbytes = x.size * x.dtype.itemsize
        if nbytes:
            from accelmath.bindings import driver

            with self._cuda.gpus[device_id]:
                driver.lib.memset_d8(self.data_ptr(x), 0, nbytes)
        return x

    def astype(self, x, dtype):
        """``x`` converted to ``dtype``: on the device through CuPy or torch where one is
        installed (read in place, the result handed back as a Numba array), else through the
        host (Numba has no conversion of its own)."""
        from accelmath._core.operand.packages import device_adapter

        adapter = device_adapter()
        if isinstance(adapter, NumbaAdapter):  # (no other package: through the host)
            return self._cuda.to_device(x.copy_to_host().astype(dtype))
        converted = adapter.astype(adapter.from_dlpack(x), dtype)
        if adapter.current_stream(self._device_of(x)) != self._stream:
            self._cuda.synchronize()  # (the conversion done before work on Numba's stream)
        return self._cuda.as_cuda_array(converted)

    def from_dlpack(self, x):
        return self._cuda.as_cuda_array(x)

    def computable(self, x):
        """Numba's device array ``x`` as a CuPy array (else a torch tensor) over its memory:
        Numba has no array operations of its own."""
        from accelmath._core.operand.packages import device_adapter
        from accelmath.errors import UnsupportedOperandError

        if not isinstance(x, self._array_type):
            return x
        adapter = device_adapter()
        if isinstance(adapter, NumbaAdapter):  # (no package to compute with)
            raise UnsupportedOperandError(
                "this step computes on Numba arrays through CuPy or torch (Numba has no array "
                "operations of its own): pip install cupy-cuda12x (or cupy-cuda13x)")
        return adapter.from_dlpack(x)

    def handed_back(self, y):
        return y if isinstance(y, self._array_type) else self._cuda.as_cuda_array(y)

    def to_numpy(self, x):
        if isinstance(x, self._array_type):
            return x.copy_to_host()
        return super().to_numpy(x)

    def from_numpy(self, a, like):
        if like is None or not isinstance(like, self._array_type):
            return self._cuda.to_device(a)
        with self._cuda.gpus[self._device_of(like)]:
            return self._cuda.to_device(a)

    def to_device(self, a):
        """Copy NumPy array ``a`` to the current GPU."""
        return self.from_numpy(a, None)
