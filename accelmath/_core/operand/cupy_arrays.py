"""CuPy arrays: device memory, read from the array's own attributes; results allocated from
CuPy's memory pool in the order of its current stream."""

import contextlib
import operator
import types

from accelmath._core import hostcall
from accelmath._core.gpu.stream import cupy_stream
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand.base import Adapter, Layouts
from accelmath._core.operand.record import Operand

__all__ = ["CupyAdapter"]

_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)


def _stream_capsule():
    """CuPy's C function of a device id that returns its current stream (a capsule, from the
    C functions its ``cupy_backends.cuda.stream`` exports), or None."""
    try:
        import cupy_backends.cuda.stream as backend
    except ImportError:
        return None
    exported = getattr(backend, "__pyx_capi__", None)
    return exported.get("get_stream_ptr") if isinstance(exported, dict) else None


class CupyAdapter(Adapter):
    """The adapter of ``cupy.ndarray``."""

    package = "cupy"

    def __init__(self):
        import cupy
        import cupy.cuda.stream

        self._cp = cupy
        get_stream = cupy.cuda.get_current_stream
        self._stream_ptr = getattr(cupy.cuda.stream, "get_current_stream_ptr",
                                   lambda: get_stream().ptr)
        self._stream_capsule = _stream_capsule()
        self._layouts = Layouts()
        self._dtypes = self._layouts.dtypes
        self._stream_getters = {}  # device id -> stream_getter(device id), made once

    def wrap(self, x):
        # Layouts.lookup, inlined: this is the wrap of arrays in a GPU loop
        info = self._dtypes.get(x.dtype)
        byte_strides = x.strides
        strides = None if info is None else info[2].get(byte_strides)
        if strides is None:
            name, strides = self._layouts.convert(x.dtype, byte_strides)
        else:
            name = info[0]
        data = x.data
        return Operand(x, data.ptr, x.shape, strides, name, data.device_id, self)

    def layout_key(self, x):
        return x.shape, x.strides, x.dtype, x.data.device_id

    def data_ptr(self, x):
        return x.data.ptr

    def reader(self, key, keyed=False):
        shape, strides, dtype, device_id = key
        ndarray = self._cp.ndarray
        # C order: CuPy's flag, read without building the strides tuple, says the same (up to
        # the strides of axes of length 1, which address nothing). Read in C (the call
        # shim's Reader): the array's own descriptors, then its memory pointer's, x.data
        # read once for its device and its address. keyed: the dtype and shape were found
        # equal already.
        flag = getattr(ndarray, "_c_contiguous", None)
        if not isinstance(flag, _DESCRIPTORS):
            flag = operator.attrgetter("_c_contiguous") if flag is not None else None
        contiguous = strides == tuple(s * dtype.itemsize for s in contiguous_strides(shape))
        memory = self._cp.cuda.MemoryPointer
        data, ptr, device = (getattr(ndarray, "data", None), getattr(memory, "ptr", None),
                             getattr(memory, "device_id", None))
        if not all(isinstance(d, _DESCRIPTORS) for d in (data, ptr, device)):
            data, ptr, device = (operator.attrgetter("data"), operator.attrgetter("ptr"),
                                 operator.attrgetter("device_id"))
        return hostcall.reader(
            [(flag, True) if contiguous and flag is not None else (ndarray.strides, strides),
             *([] if keyed else [(ndarray.shape, shape), (ndarray.dtype, dtype)])],
            ptr, held=(data, [(device, device_id)]))

    def stream_getter(self, device_id):
        # CuPy keeps a current stream per device. Its C function of a device id
        # (cupy_backends' get_stream_ptr) names it in one call; else the one of the current
        # device is the cheap read, another device's is asked for by its id.
        if device_id is not None:
            current = hostcall.capsule_stream(self._stream_capsule, device_id)
            if current is not None:
                return current
        current_ptr, get_device = self._stream_ptr, self._cp.cuda.runtime.getDevice
        get_stream = self._cp.cuda.get_current_stream

        def current_stream():
            if device_id is None or get_device() == device_id:
                return current_ptr()
            return get_stream(device_id).ptr

        return current_stream

    @contextlib.contextmanager
    def stream_scope(self, handle, device_id):
        cp = self._cp
        if device_id is None:
            device_id = cp.cuda.runtime.getDevice()
        with cp.cuda.Device(device_id), cupy_stream(cp, handle, device_id):
            yield

    def allocation(self, shape, strides, dtype, device_id):
        cp = self._cp
        dtype = cp.dtype(dtype)
        nbytes = dtype.itemsize
        for extent in shape:
            nbytes *= extent
        dense = strides == contiguous_strides(shape)
        byte_strides = None if dense else tuple(s * dtype.itemsize for s in strides)
        ndarray, alloc, get_device = cp.ndarray, cp.cuda.alloc, cp.cuda.runtime.getDevice

        def make():
            if get_device() == device_id:
                return ndarray(shape, dtype, alloc(nbytes), byte_strides)
            with cp.cuda.Device(device_id):
                return ndarray(shape, dtype, alloc(nbytes), byte_strides)

        return make, operator.attrgetter("data.ptr")

    def empty(self, shape, dtype, device_id):
        cp = self._cp
        if device_id is None:
            import numpy

            return numpy.empty(shape, dtype)
        if cp.cuda.runtime.getDevice() == device_id:
            return cp.empty(shape, dtype)
        with cp.cuda.Device(device_id):
            return cp.empty(shape, dtype)

    def empty_strided(self, shape, strides, dtype, device_id):
        if device_id is not None and tuple(strides) == contiguous_strides(shape):
            array = self.empty(shape, dtype, device_id)  # (C order: no permutation to undo)
            return array, array.data.ptr
        return super().empty_strided(shape, strides, dtype, device_id)

    def current_stream(self, device_id):
        getter = self._stream_getters.get(device_id)
        if getter is None:
            getter = self._stream_getters[device_id] = self.stream_getter(device_id)
        return getter()

    def from_dlpack(self, x):
        if hasattr(x, "__dlpack__"):
            return self._cp.from_dlpack(x)
        return self._cp.asarray(x)  # __cuda_array_interface__ only

    def to_numpy(self, x):
        return x.get() if isinstance(x, self._cp.ndarray) else super().to_numpy(x)

    def to_device(self, a):
        """Copy NumPy array ``a`` to the current GPU."""
        return self._cp.asarray(a)

    def from_numpy(self, a, like):
        if isinstance(like, self._cp.ndarray):  # (on like's device, whichever is current)
            with like.device:
                return self._cp.asarray(a)
        return self._cp.asarray(a)
