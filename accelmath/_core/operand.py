"""Wrap any array: pointer, shape, element strides, dtype, device and package.

:func:`wrap_operand` reads an array of NumPy, CuPy, PyTorch, JAX, or anything with
``__cuda_array_interface__`` or ``__dlpack__``, without copying it. Each array type is handled
by an :class:`Adapter` chosen once per Python type (a dictionary lookup afterwards), so the
per-call cost is a few attribute reads. Adapters also allocate results in the caller's package
and report the package's current stream; no package is imported before an array of it is seen.
"""

import contextlib
import ctypes
import functools
import importlib

from accelmath._core.stream import cupy_stream, order_after, resolve_stream
from accelmath.errors import (DeviceMismatchError, InvalidArgumentError, UnsupportedDTypeError,
                              UnsupportedOperandError)

__all__ = ["Operand", "Adapter", "wrap_operand", "adapter_for", "check_mutable",
           "check_same_device", "ITEMSIZE", "device_name"]

# Element sizes of the dtypes accelmath can describe, by NumPy-style name.
ITEMSIZE = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
    "int64": 8, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
    "complex32": 4, "complex64": 8, "complex128": 16,
}

ACCEPTED_KINDS = ("numpy.ndarray, cupy.ndarray, torch.Tensor, jax.Array, or an object with "
                  "__cuda_array_interface__ or __dlpack__")


def device_name(device_id):
    """A readable name of a device id: ``'cpu'`` for None, else ``'cuda:N'``."""
    return "cpu" if device_id is None else f"cuda:{device_id}"


class Operand:
    """An array seen through its layout.

    Attributes
    ----------
    obj : object
        The wrapped array, as given.
    ptr : int
        Address of the first element (0 for host arrays that are never handed to a library).
    shape, strides : tuple of int
        Extents and strides, strides in elements (they may be negative).
    dtype : str
        NumPy-style dtype name (``"complex64"``, ``"bfloat16"``, ...).
    device_id : int or None
        The CUDA device, or None for host memory.
    adapter : Adapter
        The package adapter (``adapter.package`` is ``"numpy"``, ``"cupy"``, ``"torch"``, ...).
    ready : int or None
        A stream (handle) whose work enqueued so far may still be writing the data: work on
        other streams must wait for it (see :func:`~accelmath._core.stream.order_after`).
        Set for the producers of the CUDA array protocols; None for packages that order
        their own streams (the caller's business there, as in the package itself).
    """

    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "device_id", "adapter", "keepalive",
                 "ready")

    def __init__(self, obj, ptr, shape, strides, dtype, device_id, adapter, keepalive=None,
                 ready=None):
        self.obj = obj
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.device_id = device_id
        self.adapter = adapter
        self.keepalive = keepalive
        self.ready = ready

    def wait_ready(self, stream):
        """Make the work enqueued next on ``stream`` (a handle or stream object; None: the
        package's current stream) wait for the work :attr:`ready` names, once."""
        if self.ready is not None:
            order_after(resolve_stream(stream, self), self.ready, self.device_id)
            self.ready = None

    @property
    def package(self):
        """The name of the array package: ``"numpy"``, ``"cupy"``, ``"torch"``, ``"jax"``..."""
        return self.adapter.package

    @property
    def on_device(self):
        """True when the data lives in GPU memory."""
        return self.device_id is not None

    @property
    def itemsize(self):
        """Bytes per element."""
        return ITEMSIZE[self.dtype]

    @property
    def size(self):
        """Number of elements."""
        n = 1
        for extent in self.shape:
            n *= extent
        return n

    def __repr__(self):
        return (f"Operand({self.package}, shape={tuple(self.shape)}, strides={self.strides}, "
                f"dtype={self.dtype}, device={device_name(self.device_id)})")


def _dtype_name(dtype):
    """NumPy-style name of a numpy dtype, or raise UnsupportedDTypeError."""
    name = dtype.name
    if name not in ITEMSIZE:
        raise UnsupportedDTypeError(
            f"unsupported dtype {name!r}; accelmath handles {', '.join(ITEMSIZE)}")
    return name


class _Layouts:
    """NumPy-style dtypes to ``(name, itemsize, {byte strides: element strides})``.

    Converting byte strides costs more than the rest of a wrap; arrays in a loop repeat the
    same few layouts, so conversions are remembered (a bounded number of them). Adapters read
    ``dtypes`` inline and call :meth:`convert` only for a dtype or strides not seen yet.
    """

    _MAX = 1024

    def __init__(self):
        self.dtypes = {}

    def lookup(self, dtype, byte_strides):
        """``(dtype name, element strides)`` of an array (what :meth:`convert` gives, read from
        what it remembered)."""
        info = self.dtypes.get(dtype)
        strides = None if info is None else info[2].get(byte_strides)
        if strides is None:
            return self.convert(dtype, byte_strides)
        return info[0], strides

    def convert(self, dtype, byte_strides):
        """``(dtype name, element strides)``, remembered for the next arrays of this layout."""
        info = self.dtypes.get(dtype)
        if info is None:
            info = self.dtypes[dtype] = (_dtype_name(dtype), dtype.itemsize, {})
        itemsize, known = info[1], info[2]
        if any(s % itemsize for s in byte_strides):
            raise UnsupportedOperandError(
                f"strides {byte_strides} (bytes) are not multiples of the {itemsize}-byte "
                f"element; accelmath reads arrays of whole-element strides")
        if len(known) >= self._MAX:
            known.clear()
        strides = known[byte_strides] = tuple(s // itemsize for s in byte_strides)
        return info[0], strides


class Adapter:
    """How accelmath reads, allocates and streams the arrays of one package.

    Subclasses implement :meth:`wrap`, :meth:`empty`, :meth:`current_stream` and
    :meth:`to_numpy`/:meth:`from_numpy` for host data.
    """

    package = "generic"
    #: Whether the package has a complex32 dtype (half-precision complex results).
    complex32 = False
    #: Whether results are written into buffers of another package and handed over by
    #: :meth:`finish` once the work that writes them is enqueued (JAX: its arrays are
    #: immutable, so they cannot be ``out=`` either).
    immutable = False

    def wrap(self, x):
        """Return the :class:`Operand` describing ``x``."""
        raise NotImplementedError

    def layout_key(self, x):
        """A cheap key of ``x``'s shape, strides, dtype and device in the package's own terms
        (equal keys mean equal layouts), or None where the package has no such fast path."""
        return None

    def data_ptr(self, x):
        """The address of ``x``'s first element (for arrays whose :meth:`layout_key` matched)."""
        return self.wrap(x).ptr

    def reader(self, key):
        """A function that returns the address of an array's first element when its
        :meth:`layout_key` is ``key``, else None: the check and the read in one call, for
        loops."""
        layout_key, data_ptr = self.layout_key, self.data_ptr
        return lambda x: data_ptr(x) if layout_key(x) == key else None

    def fft_strides(self, kind, shape, strides, dtype, axes, out_shape):
        """The element strides of the result this package's own FFT functions give a device
        array of this layout (``fftn``, ``rfftn`` or ``irfftn`` over ``axes`` for ``kind``
        "c2c", "r2c" or "c2r", with the result's shape ``out_shape``); None where they are not
        known (the default: dense, in the input's axis order)."""
        return None

    def stream_getter(self, device_id):
        """A function of no arguments returning :meth:`current_stream` of ``device_id``."""
        return lambda: self.current_stream(device_id)

    def allocator(self, shape, strides, dtype, device_id):
        """A function of no arguments that allocates ``(array, ptr)`` of the given layout
        (element strides, dense), prepared once for allocations in a loop."""
        return lambda: self.empty_strided(shape, strides, dtype, device_id)

    def empty(self, shape, dtype, device_id):
        """Allocate an uninitialized array of this package (``device_id`` None: host)."""
        raise NotImplementedError

    def empty_strided(self, shape, strides, dtype, device_id):
        """Allocate a dense array with the given element strides; return ``(array, ptr)``."""
        order = sorted(range(len(shape)), key=lambda a: -strides[a])
        dense = self.empty(tuple(shape[a] for a in order), dtype, device_id)
        inverse = sorted(range(len(shape)), key=order.__getitem__)
        array = dense if order == sorted(order) else self.permute(dense, inverse)
        return array, self.wrap(array).ptr

    def from_dlpack(self, x):
        """Import device array ``x`` into this package, zero copy (through DLPack, else
        ``__cuda_array_interface__``)."""
        raise UnsupportedOperandError(f"{self.package} cannot import DLPack capsules")

    def permute(self, x, axes):
        """``x`` with its axes permuted (a view)."""
        return x.transpose(axes)

    def astype(self, x, dtype):
        """``x`` converted to ``dtype`` (a new array of this package)."""
        return x.astype(dtype)

    def finish(self, result, stream, device_id):
        """Turn a result buffer, written by work enqueued on ``stream`` (a handle), into what
        the caller gets back (the buffer itself but for :attr:`immutable` packages)."""
        return result

    def current_stream(self, device_id):
        """The handle of this package's current stream on ``device_id`` (0 if it has none)."""
        return 0

    def stream_scope(self, handle, device_id):
        """A context manager in which the package that allocates this package's device
        results takes stream ``handle`` as its current stream on ``device_id`` (None: the
        current device): what it allocates and runs there follows that stream's order."""
        return _device_adapter().stream_scope(handle, device_id)

    def zeros(self, shape, dtype, device_id):
        """Allocate a zero-filled array of this package."""
        x = self.empty(shape, dtype, device_id)
        x[...] = 0
        return x

    def to_numpy(self, x):
        """A NumPy view (or copy) of host array ``x``."""
        import numpy

        return numpy.asarray(x)

    def from_numpy(self, a, like):
        """Convert NumPy array ``a`` to this package, placed like array ``like``."""
        return a


class NumpyAdapter(Adapter):
    package = "numpy"

    def __init__(self):
        import numpy

        self._np = numpy
        self._layouts = _Layouts()

    def wrap(self, x):
        name, strides = self._layouts.lookup(x.dtype, x.strides)
        return Operand(x, x.__array_interface__["data"][0], x.shape, strides, name, None, self)

    def empty(self, shape, dtype, device_id):
        if device_id is not None:
            return _device_adapter().empty(shape, dtype, device_id)
        return self._np.empty(shape, dtype)

    def to_numpy(self, x):
        return x


class CupyAdapter(Adapter):
    package = "cupy"

    def __init__(self):
        import cupy
        import cupy.cuda.stream

        self._cp = cupy
        get_stream = cupy.cuda.get_current_stream
        self._stream_ptr = getattr(cupy.cuda.stream, "get_current_stream_ptr",
                                   lambda: get_stream().ptr)
        self._layouts = _Layouts()
        self._dtypes = self._layouts.dtypes

    def wrap(self, x):
        # _Layouts.lookup, inlined: this is the wrap of arrays in a GPU loop
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

    def reader(self, key):
        shape, strides, dtype, device_id = key
        if strides == tuple(s * dtype.itemsize for s in _contiguous_strides(shape)) and \
                hasattr(self._cp.ndarray, "_c_contiguous"):
            # C order: CuPy's flag, read without building the strides tuple, says the same
            # (up to the strides of axes of length 1, which address nothing)
            def read(x):
                data = x.data
                if (x._c_contiguous and x.shape == shape and x.dtype is dtype
                        and data.device_id == device_id):
                    return data.ptr
                return None
        else:
            def read(x):
                data = x.data
                if (x.shape == shape and x.strides == strides and x.dtype is dtype
                        and data.device_id == device_id):
                    return data.ptr
                return None

        return read

    def stream_getter(self, device_id):
        return self._stream_ptr

    @contextlib.contextmanager
    def stream_scope(self, handle, device_id):
        cp = self._cp
        if device_id is None:
            device_id = cp.cuda.runtime.getDevice()
        with cp.cuda.Device(device_id), cupy_stream(cp, handle, device_id):
            yield

    def allocator(self, shape, strides, dtype, device_id):
        cp = self._cp
        dtype = cp.dtype(dtype)
        nbytes = dtype.itemsize
        for extent in shape:
            nbytes *= extent
        dense = strides == _contiguous_strides(shape)
        byte_strides = None if dense else tuple(s * dtype.itemsize for s in strides)
        ndarray, alloc, get_device = cp.ndarray, cp.cuda.alloc, cp.cuda.runtime.getDevice

        def allocate():
            if get_device() == device_id:
                memptr = alloc(nbytes)
            else:
                with cp.cuda.Device(device_id):
                    memptr = alloc(nbytes)
            return ndarray(shape, dtype, memptr, byte_strides), memptr.ptr

        return allocate

    def empty(self, shape, dtype, device_id):
        cp = self._cp
        if device_id is None:
            import numpy

            return numpy.empty(shape, dtype)
        if cp.cuda.runtime.getDevice() == device_id:
            return cp.empty(shape, dtype)
        with cp.cuda.Device(device_id):
            return cp.empty(shape, dtype)

    def current_stream(self, device_id):
        return self._stream_ptr()

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
        return self._cp.asarray(a)


class TorchAdapter(Adapter):
    package = "torch"
    complex32 = True

    def __init__(self):
        import torch

        self._torch = torch
        self._to_name = {}
        for name in ITEMSIZE:
            tdtype = getattr(torch, name, None)
            if isinstance(tdtype, torch.dtype):
                self._to_name[tdtype] = name
        self._to_torch = {v: k for k, v in self._to_name.items()}
        self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)

    def wrap(self, x):
        name = self._to_name.get(x.dtype)
        if name is None:
            raise UnsupportedDTypeError(
                f"unsupported dtype {x.dtype}; accelmath handles {', '.join(ITEMSIZE)}")
        if x.is_conj() or x.is_neg():
            # A lazily conjugated or negated view: its memory holds other values. The operand
            # describes a resolved copy (``operand.obj is not x`` tells callers so).
            x = x.resolve_conj().resolve_neg()
        device = x.get_device()
        if not (x.is_cuda if device >= 0 else x.is_cpu):
            raise UnsupportedOperandError(
                f"tensor on device {x.device}; accelmath reads CPU and CUDA tensors")
        # torch.Size is a tuple: kept as it is, saving a conversion per call
        return Operand(x, x.data_ptr(), x.shape, x.stride(), name,
                       None if device < 0 else device, self)

    def layout_key(self, x):
        return x.shape, x.stride(), x.dtype, x.get_device(), x.is_conj(), x.is_neg()

    def data_ptr(self, x):
        return x.data_ptr()

    def fft_strides(self, kind, shape, strides, dtype, axes, out_shape):
        # torch computes a transform over several axes in passes, the last one writing its
        # axes contiguously: a real transform over axes 0 and 1 comes back transposed, and
        # its inverse in C order. Its meta tensors say how.
        torch = self._torch
        try:
            meta = torch.empty_strided(shape, strides, dtype=self._to_torch[dtype],
                                       device="meta")
            if kind == "c2c":
                result = torch.fft.fftn(meta, dim=axes)
            elif kind == "r2c":
                result = torch.fft.rfftn(meta, dim=axes)
            else:
                result = torch.fft.irfftn(meta, s=[out_shape[a] for a in axes], dim=axes)
            return tuple(result.stride())
        except Exception:  # a layout or dtype meta tensors do not take: the default
            return None

    def reader(self, key):
        shape, strides, dtype, device, conj, neg = key
        if conj or neg:
            return super().reader(key)
        # One lazy bit to test: conj on complex tensors; on real ones neg (the imaginary part
        # of a conjugated view), as no public operation sets the other.
        # (the methods taken from the class: a call skips making a bound method)
        tensor = self._torch.Tensor
        lazy = tensor.is_conj if dtype.is_complex else tensor.is_neg
        get_device, data_ptr = tensor.get_device, tensor.data_ptr
        if strides == _contiguous_strides(shape):
            # C order: torch's flag says the same (up to the strides of axes of length 1,
            # which address nothing) for less than the strides tuple costs
            is_contiguous = tensor.is_contiguous

            def read(x):
                if (x.dtype is dtype and x.shape == shape and is_contiguous(x)
                        and get_device(x) == device and not lazy(x)):
                    return data_ptr(x)
                return None
        else:
            stride = tensor.stride

            def read(x):
                if (x.dtype is dtype and x.shape == shape and stride(x) == strides
                        and get_device(x) == device and not lazy(x)):
                    return data_ptr(x)
                return None

        return read

    def stream_scope(self, handle, device_id):
        cuda = self._torch.cuda
        if device_id is None:
            device_id = cuda.current_device()
        stream = (cuda.default_stream(device_id) if handle == 0
                  else cuda.ExternalStream(handle, device=device_id))
        return cuda.stream(stream)

    def stream_getter(self, device_id):
        if self._raw_stream is not None:
            return functools.partial(self._raw_stream, device_id)
        return super().stream_getter(device_id)

    def allocator(self, shape, strides, dtype, device_id):
        empty_strided = self._torch.empty_strided
        tdtype = self._to_torch[dtype]
        device = self._torch.device("cpu" if device_id is None else f"cuda:{device_id}")

        def allocate():
            t = empty_strided(shape, strides, dtype=tdtype, device=device)
            return t, t.data_ptr()

        return allocate

    def empty(self, shape, dtype, device_id):
        device = "cpu" if device_id is None else f"cuda:{device_id}"
        return self._torch.empty(shape, dtype=self._to_torch[dtype], device=device)

    def empty_strided(self, shape, strides, dtype, device_id):
        device = "cpu" if device_id is None else f"cuda:{device_id}"
        t = self._torch.empty_strided(shape, strides, dtype=self._to_torch[dtype], device=device)
        return t, t.data_ptr()

    def permute(self, x, axes):
        return x.permute(axes)

    def from_dlpack(self, x):
        if hasattr(x, "__dlpack__"):
            return self._torch.from_dlpack(x)
        return self._torch.as_tensor(x)  # __cuda_array_interface__ only

    def astype(self, x, dtype):
        return x.to(self._to_torch[dtype])

    def current_stream(self, device_id):
        if self._raw_stream is not None:
            return self._raw_stream(device_id)
        return self._torch.cuda.current_stream(device_id).cuda_stream

    def to_numpy(self, x):
        x = x.detach().resolve_conj().resolve_neg()
        if x.dtype == self._torch.complex32:  # (NumPy has none: single precision)
            x = x.to(self._torch.complex64)
        return x.cpu().numpy()

    def from_numpy(self, a, like):
        return self._torch.from_numpy(a).to(like.device)

    def to_device(self, a):
        """Copy NumPy array ``a`` to the current GPU."""
        return self._torch.from_numpy(a).cuda()


# --- generic producers: __cuda_array_interface__ and __dlpack__ --------------------------

_TYPESTR = {"b1": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
            "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64", "f2": "float16",
            "f4": "float32", "f8": "float64", "c8": "complex64", "c16": "complex128"}

# DLDataType (code, bits) to name
_DLPACK_DTYPE = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
                 (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
                 (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
                 (4, 16): "bfloat16", (5, 32): "complex32", (5, 64): "complex64",
                 (5, 128): "complex128", (6, 8): "bool"}

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_LEGACY_STREAM = 1  # the legacy default stream, as the DLPack protocol names it


def _dlpack_device(x):
    """The DLPack device type of ``x`` (None where it does not say)."""
    device = getattr(x, "__dlpack_device__", None)
    try:
        return None if device is None else int(device()[0])
    except Exception:
        return None


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _contiguous_strides(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _unsupported_dtype(what):
    return UnsupportedDTypeError(
        f"unsupported dtype {what}; accelmath handles {', '.join(ITEMSIZE)}")


class GenericAdapter(Adapter):
    """Any ``__cuda_array_interface__`` or ``__dlpack__`` producer (JAX arrays included).

    Results are allocated with CuPy when it is installed, else with PyTorch, and JAX inputs get
    JAX results back through DLPack.
    """

    def __init__(self, package):
        self.package = package

    def wrap(self, x):
        cai = getattr(x, "__cuda_array_interface__", None)
        if cai is not None:
            return self._wrap_cai(x, cai)
        if hasattr(x, "__dlpack__"):
            return self._wrap_dlpack(x)
        raise UnsupportedOperandError(
            f"unsupported operand of type {type(x).__qualname__}; expected {ACCEPTED_KINDS}")

    def _wrap_cai(self, x, cai):
        typestr = cai["typestr"]
        name = _TYPESTR.get(typestr[1:])
        if name is None:
            raise _unsupported_dtype(repr(typestr))
        shape = tuple(cai["shape"])
        if cai.get("strides") is None:
            strides = _contiguous_strides(shape)
        else:
            itemsize = ITEMSIZE[name]
            strides = tuple(s // itemsize for s in cai["strides"])
        ptr = cai["data"][0] or 0
        # (version 3) work on this stream may still be writing x: the protocol asks consumers
        # to wait for it (1 and 2 are the default streams, as in the driver)
        return Operand(x, ptr, shape, strides, name, _pointer_device(ptr), self,
                       ready=cai.get("stream") or None)

    def _wrap_dlpack(self, x, ordered=False):
        """The operand of a ``__dlpack__`` producer. Unless ``ordered`` (its data known to be
        written), device data is asked for in the order of the legacy default stream, which
        the operand's ``ready`` names."""
        capsule = None
        if not ordered and _dlpack_device(x) in (_DL_CUDA, _DL_CUDA_MANAGED):
            try:
                capsule = x.__dlpack__(stream=_LEGACY_STREAM)
            except TypeError:  # a producer older than the stream argument
                pass
        if capsule is None:
            capsule = x.__dlpack__()
        t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
        name = _DLPACK_DTYPE.get((t.code, t.bits))
        if name is None or t.lanes != 1:
            raise _unsupported_dtype(f"(DLPack code {t.code}, {t.bits} bits, {t.lanes} lanes)")
        shape = tuple(t.shape[i] for i in range(t.ndim))
        strides = (tuple(t.strides[i] for i in range(t.ndim)) if t.strides
                   else _contiguous_strides(shape))
        ready = None
        if t.device_type in (_DL_CUDA, _DL_CUDA_MANAGED):
            device_id = t.device_id
            ready = None if ordered else _LEGACY_STREAM  # (also what no stream argument means)
        elif t.device_type in (_DL_CPU, _DL_CUDA_HOST):
            device_id = None
        else:
            raise UnsupportedOperandError(
                f"operand of type {type(x).__qualname__} lives on DLPack device type "
                f"{t.device_type}; accelmath reads host and CUDA memory")
        # The capsule keeps the producer's memory alive until the operand goes away.
        return Operand(x, (t.data or 0) + t.byte_offset, shape, strides, name, device_id, self,
                       keepalive=capsule, ready=ready)

    def empty(self, shape, dtype, device_id):
        return _device_adapter().empty(shape, dtype, device_id)

    def empty_strided(self, shape, strides, dtype, device_id):
        return _device_adapter().empty_strided(shape, strides, dtype, device_id)

    def zeros(self, shape, dtype, device_id):
        return _device_adapter().zeros(shape, dtype, device_id)

    def astype(self, x, dtype):
        adapter = _device_adapter()
        op = self.wrap(x)
        if op.on_device:
            return adapter.astype(adapter.from_dlpack(x), dtype)
        return self.to_numpy(x).astype(dtype)

    def to_numpy(self, x):
        import numpy

        return numpy.from_dlpack(x) if hasattr(x, "__dlpack__") else numpy.asarray(x)

    def from_numpy(self, a, like):
        return a


class JaxAdapter(GenericAdapter):
    immutable = True

    def __init__(self):
        super().__init__("jax")
        import jax
        import jax.dlpack

        self._jax = jax
        self._from_dlpack = jax.dlpack.from_dlpack

    def wrap(self, x):
        # JAX runs on streams of its own: wait for x before other streams read it.
        x.block_until_ready()
        return self._wrap_dlpack(x, ordered=True)

    def astype(self, x, dtype):
        return x.astype(dtype)

    def finish(self, result, stream, device_id):
        """A JAX array over the result buffer (zero copy, through DLPack). The buffer's
        package hands it over in the order of ``stream``, where the work writing it was
        enqueued: JAX's streams wait for that work before they read it."""
        with self.stream_scope(stream, device_id):
            return self._from_dlpack(result)

    def from_numpy(self, a, like):
        return self._jax.device_put(a, next(iter(like.devices())))


def _pointer_device(ptr):
    """The device of a device pointer (None for host memory)."""
    if not ptr:
        return None
    from accelmath.bindings import driver

    value = ctypes.c_int()
    try:
        driver.lib.pointer_get_attribute(ctypes.byref(value),
                                         driver.POINTER_ATTRIBUTE["device_ordinal"], ptr)
    except Exception:
        return None
    return value.value


_device_adapter_cache = []


def _device_adapter():
    """The adapter that allocates device results for packages that cannot (CuPy, else torch)."""
    if not _device_adapter_cache:
        for name, cls in (("cupy", CupyAdapter), ("torch", TorchAdapter)):
            try:
                importlib.import_module(name)
            except ImportError:
                continue
            _device_adapter_cache.append(cls())
            break
        else:
            raise UnsupportedOperandError(
                "allocating a device result for this operand needs CuPy or PyTorch installed")
    return _device_adapter_cache[0]


class _OperandAdapter(Adapter):
    """Lets an :class:`Operand` stand for its array (for operands built from views)."""

    def wrap(self, x):
        return x


_ADAPTER_BY_PACKAGE = {"numpy": NumpyAdapter, "cupy": CupyAdapter, "torch": TorchAdapter,
                       "jax": JaxAdapter, "jaxlib": JaxAdapter}
_adapters = {Operand: _OperandAdapter()}
_adapter_by_package = {}


def adapter_for(x):
    """The :class:`Adapter` for the type of ``x`` (found once per type)."""
    cls = type(x)
    adapter = _adapters.get(cls)
    if adapter is None:
        package = cls.__module__.partition(".")[0]
        if package in _ADAPTER_BY_PACKAGE:
            adapter = adapter_named(package)
        elif hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__"):
            adapter = GenericAdapter(package)
        else:
            raise UnsupportedOperandError(
                f"unsupported operand of type {cls.__module__}.{cls.__qualname__}; "
                f"expected {ACCEPTED_KINDS}")
        _adapters[cls] = adapter
    return adapter


def adapter_named(package):
    """The :class:`Adapter` of a package of :data:`_ADAPTER_BY_PACKAGE` (one per package)."""
    adapter = _adapter_by_package.get(package)
    if adapter is None:
        try:
            adapter = _adapter_by_package[package] = _ADAPTER_BY_PACKAGE[package]()
        except ImportError:
            raise UnsupportedOperandError(f"package {package!r} is not installed") from None
    return adapter


def wrap_operand(x):
    """Describe array ``x`` as an :class:`Operand` without copying it.

    Parameters
    ----------
    x : array
        A NumPy, CuPy, PyTorch or JAX array, or any object with ``__cuda_array_interface__``
        or ``__dlpack__``.

    Returns
    -------
    Operand

    Raises
    ------
    UnsupportedOperandError
        If ``x`` is not an array accelmath can read (a ``TypeError``).
    UnsupportedDTypeError
        If its element type is not one accelmath can describe (a ``TypeError``).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.operand import wrap_operand
    >>> op = wrap_operand(np.zeros((4, 6), np.complex64)[:, ::2])
    >>> op.shape, op.strides, op.dtype, op.package
    ((4, 3), (6, 2), 'complex64', 'numpy')
    """
    cls = type(x)
    adapter = _adapters.get(cls)
    if adapter is None:
        adapter = adapter_for(x)
    return adapter.wrap(x)


def check_mutable(out, name="out"):
    """Raise InvalidArgumentError if array ``out`` cannot be written in place (JAX)."""
    adapter = adapter_for(out)
    if adapter.immutable:
        raise InvalidArgumentError(
            f"{name} is a {adapter.package} array, which cannot be written in place; leave "
            f"{name} out to get a new one")


def check_same_device(*operands, names=None):
    """Raise DeviceMismatchError unless all operands live on the same device.

    ``names`` gives the argument names used in the message.
    """
    first = operands[0]
    for i, op in enumerate(operands[1:], 1):
        if op.device_id != first.device_id:
            a = names[0] if names else "operand 0"
            b = names[i] if names else f"operand {i}"
            raise DeviceMismatchError(
                f"{b} is on {device_name(op.device_id)} but {a} is on "
                f"{device_name(first.device_id)}; all operands must be on one device")
