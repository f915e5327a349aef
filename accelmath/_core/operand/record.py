"""The Operand record: an array seen through its layout, and the dtypes it can name."""

from accelmath._core.gpu.stream import order_after, resolve_stream
from accelmath.errors import UnsupportedDTypeError, UnsupportedOperandError

__all__ = ["ITEMSIZE", "ACCEPTED_KINDS", "Operand", "device_name", "unsupported_dtype",
           "unsupported_operand"]

# Element sizes of the dtypes accelmath can describe, by NumPy-style name.
ITEMSIZE = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
    "int64": 8, "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8,
    "complex32": 4, "complex64": 8, "complex128": 16,
}


# What wrap_operand reads, as its errors list it.
ACCEPTED_KINDS = ("numpy.ndarray, cupy.ndarray, torch.Tensor, jax.Array, an object with "
                  "__cuda_array_interface__ or __dlpack__, or an array-like (list, tuple, "
                  "scalar, memoryview, an object with __array__)")


def unsupported_operand(x):
    """The error for an object that is none of :data:`ACCEPTED_KINDS`."""
    cls = type(x)
    return UnsupportedOperandError(f"unsupported operand of type {cls.__module__}."
                                   f"{cls.__qualname__}; expected {ACCEPTED_KINDS}")


def unsupported_dtype(what):
    """The error for an element type outside :data:`ITEMSIZE`; ``what`` names it as the
    array's package does (``'str32'``, ``torch.float8_e4m3fn``, ``'<f16'``...)."""
    return UnsupportedDTypeError(
        f"unsupported dtype {what}; accelmath handles {', '.join(ITEMSIZE)}")


def device_name(device_id):
    """A readable name of a device id: ``'cpu'`` for None, else ``'cuda:N'``.

    Examples
    --------
    >>> from accelmath._core.operand import device_name
    >>> device_name(None), device_name(1)
    ('cpu', 'cuda:1')
    """
    return "cpu" if device_id is None else f"cuda:{device_id}"


class Operand:
    """An array seen through its layout.

    Attributes
    ----------
    obj : object
        The wrapped array: the one given, or the array it was read as (a NumPy array for a
        list, a resolved copy of a lazily conjugated torch view).
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
    keepalive : object or None
        What must live as long as the operand for ``ptr`` to stay valid (a DLPack capsule).
    ready : int or None
        A stream (handle) whose work enqueued so far may still be writing the data: work on
        other streams must wait for it (see :func:`~accelmath._core.gpu.stream.order_after`).
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
