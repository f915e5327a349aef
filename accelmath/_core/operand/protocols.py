"""Producers of the CUDA array protocols: any object with ``__cuda_array_interface__`` or
``__dlpack__``, read without importing its package.

Their device results are allocated by :func:`~accelmath._core.operand.device_adapter` (CuPy
when installed, else PyTorch); host results are NumPy arrays.
"""

import ctypes
import operator
import sys

from accelmath._core.layout import contiguous_strides
from accelmath._core.operand import dlpack
from accelmath._core.operand.base import Adapter, element_strides
from accelmath._core.operand.packages import device_adapter
from accelmath._core.operand.record import ITEMSIZE, Operand, unsupported_dtype, unsupported_operand
from accelmath.errors import NoDeviceError, UnsupportedDTypeError, UnsupportedOperandError

__all__ = ["GenericAdapter", "TYPESTR", "pointer_device", "read_interface"]

# __cuda_array_interface__ typestr, less its byte order, to a NumPy-style name
TYPESTR = {"b1": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
           "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64", "f2": "float16",
           "f4": "float32", "f8": "float64", "c8": "complex64", "c16": "complex128"}
# the typestr byte orders of data the machine reads as it is ("|": single bytes)
_NATIVE_ORDERS = ("|", "=", "<" if sys.byteorder == "little" else ">")
_INTERFACE = ("a dict with 'shape' (a tuple of non-negative ints), 'typestr' (such as '<f8'), "
              "'data' ((pointer, read-only flag)), and optionally 'strides' (None, or one byte "
              "stride per axis) and 'stream' (None, or a stream handle)")


def _type_name(x):
    cls = type(x)
    return f"{cls.__module__}.{cls.__qualname__}"


def _malformed(x, problem):
    """The error for a ``__cuda_array_interface__`` of ``x`` that is not as the protocol says:
    ``problem`` says how."""
    return UnsupportedOperandError(
        f"the __cuda_array_interface__ of {_type_name(x)} {problem}; expected {_INTERFACE}")


def _integers(value, count=None):
    """``value`` as a tuple of ints (``count`` of them, where given), or None."""
    if not isinstance(value, (tuple, list)) or count is not None and len(value) != count:
        return None
    if any(isinstance(v, bool) for v in value):
        return None
    try:
        return tuple(operator.index(v) for v in value)
    except TypeError:
        return None


def read_interface(x, cai):
    """``(dtype name, shape, byte strides or None, pointer, stream or None)`` of ``cai``, the
    ``__cuda_array_interface__`` of ``x``, checked against the protocol (version 3).

    Raises
    ------
    UnsupportedOperandError
        Naming what is wrong with the interface (a missing entry, a shape that is no tuple
        of non-negative ints, a null pointer to elements, a mask...).
    UnsupportedDTypeError
        For a typestr of no dtype accelmath handles, or of the other byte order.
    """
    # the protocol's plain form (tuples of ints, the machine's byte order), read at once:
    # a producer's arrays are read on every call; anything else goes through the checks
    if cai.__class__ is dict:
        shape, typestr, data = cai.get("shape"), cai.get("typestr"), cai.get("data")
        strides, stream = cai.get("strides"), cai.get("stream")
        name = TYPESTR.get(typestr[1:]) if typestr.__class__ is str else None
        if (name is not None and typestr[0] in _NATIVE_ORDERS and shape.__class__ is tuple
                and data.__class__ is tuple and len(data) == 2 and data[0].__class__ is int
                and all(n.__class__ is int and n >= 0 for n in shape)
                and (strides is None or strides.__class__ is tuple
                     and len(strides) == len(shape) and all(n.__class__ is int for n in strides))
                and (stream is None or stream.__class__ is int) and cai.get("mask") is None
                and (data[0] or 0 in shape)):
            return name, shape, strides, data[0], stream or None
    return _read_checked(x, cai)


def _read_checked(x, cai):
    """:func:`read_interface` of any ``cai``: raises, naming what is wrong."""
    if not isinstance(cai, dict):
        raise _malformed(x, f"is a {type(cai).__name__}, not a dict")
    for key in ("shape", "typestr", "data"):
        if key not in cai:
            raise _malformed(x, f"has no {key!r} entry")
    given, typestr, data = cai["shape"], cai["typestr"], cai["data"]
    shape = _integers(given)
    if shape is None or any(n < 0 for n in shape):
        raise _malformed(x, f"has shape {given!r}")
    if not isinstance(typestr, str) or len(typestr) < 2:
        raise _malformed(x, f"has typestr {typestr!r}")
    name = TYPESTR.get(typestr[1:])
    if name is None:
        raise unsupported_dtype(repr(typestr))
    if typestr[0] not in _NATIVE_ORDERS and ITEMSIZE[name] > 1:
        raise UnsupportedDTypeError(
            f"unsupported dtype {typestr!r}: not this machine's byte order ({sys.byteorder}-"
            f"endian), expected {_NATIVE_ORDERS[2] + typestr[1:]!r}")
    ptr = _integers(data[:1]) if isinstance(data, (tuple, list)) and len(data) == 2 else None
    if ptr is None:
        raise _malformed(x, f"has data {data!r}")
    ptr = ptr[0]
    size = 1
    for n in shape:
        size *= n
    if ptr == 0 and size:
        raise _malformed(x, f"has a null data pointer for {size} elements of shape {shape}")
    given = cai.get("strides")
    strides = None if given is None else _integers(given, len(shape))
    if given is not None and strides is None:
        raise _malformed(x, f"has strides {given!r} for shape {shape}")
    if cai.get("mask") is not None:
        raise _malformed(x, "has a mask: masked arrays are not read")
    stream = cai.get("stream")
    if stream is not None and _integers((stream,)) is None:
        raise _malformed(x, f"has stream {stream!r}")
    return name, shape, strides, ptr, stream or None


def _host_view(x):
    """Whether ``x`` offers its data to the host too (what :meth:`GenericAdapter.to_numpy`
    reads)."""
    return any(hasattr(x, name) for name in ("__dlpack__", "__array_interface__", "__array__"))


def _unknown_pointer(x, ptr):
    """The error for ``__cuda_array_interface__`` data at ``ptr`` that the CUDA driver does
    not know and that ``x`` offers the host no other way: no usable GPU (NoDeviceError), or
    a pointer to no CUDA memory (UnsupportedOperandError)."""
    from accelmath._core.gpu.device import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        return NoDeviceError(
            f"an operand of type {_type_name(x)} has __cuda_array_interface__ (CUDA device "
            f"memory), but no CUDA GPU is usable: {reason}")
    return UnsupportedOperandError(
        f"the __cuda_array_interface__ of {_type_name(x)} has data pointer {ptr:#x}, which is "
        f"no memory the CUDA driver knows (device, managed or registered host memory)")


def pointer_device(ptr):
    """The CUDA device of pointer ``ptr`` (None for host memory, or where the driver does
    not know it)."""
    if not ptr:
        return None
    from accelmath.bindings import driver

    value = ctypes.c_int()
    try:
        driver.lib.pointer_get_attribute(ctypes.byref(value),
                                         driver.POINTER_ATTRIBUTE["device_ordinal"], ptr)
    except Exception:  # no driver, or a pointer it did not allocate: host memory
        return None
    return value.value


def _capsule(x, ordered):
    """The DLPack capsule of producer ``x``: device data asked for in the order of the legacy
    default stream unless ``ordered``."""
    if not ordered and dlpack.device_type(x) in (dlpack.CUDA, dlpack.CUDA_MANAGED):
        try:
            return x.__dlpack__(stream=dlpack.LEGACY_STREAM)
        except TypeError:  # a producer older than the stream argument
            pass
    return x.__dlpack__()


class GenericAdapter(Adapter):
    """Any ``__cuda_array_interface__`` or ``__dlpack__`` producer (the base of JAX's).

    Parameters
    ----------
    package : str
        The producer's package (the top-level module of its type), as operands report it.
    """

    def __init__(self, package):
        self.package = package

    def wrap(self, x):
        try:
            cai = getattr(x, "__cuda_array_interface__", None)
        except Exception as exc:  # (a property that fails: the producer's own error, chained)
            raise _malformed(x, f"could not be read ({type(exc).__name__}: {exc})") from exc
        if cai is not None:
            return self._wrap_cai(x, cai)
        if hasattr(x, "__dlpack__"):
            return self._wrap_dlpack(x)
        raise unsupported_operand(x)

    def read_only(self, x):
        """Whether ``x``'s ``__cuda_array_interface__`` or ``__array_interface__`` marks its
        data read-only (the second item of ``data``)."""
        for name in ("__cuda_array_interface__", "__array_interface__"):
            try:
                interface = getattr(x, name, None)
            except Exception:  # (a property that fails: read as no interface here)
                continue
            data = interface.get("data") if isinstance(interface, dict) else None
            if isinstance(data, (tuple, list)) and len(data) == 2 and data[1]:
                return True
        return False

    def _wrap_cai(self, x, cai):
        name, shape, strides, ptr, stream = read_interface(x, cai)
        if strides is None:
            strides = contiguous_strides(shape)
        else:
            strides = element_strides(strides, ITEMSIZE[name])
        device_id = pointer_device(ptr)
        if device_id is None and ptr and not _host_view(x):
            raise _unknown_pointer(x, ptr)
        # (version 3) work on this stream may still be writing x: the protocol asks consumers
        # to wait for it (1 and 2 are the default streams, as in the driver)
        return Operand(x, ptr, shape, strides, name, device_id, self, ready=stream)

    def _wrap_dlpack(self, x, ordered=False):
        """The operand of a ``__dlpack__`` producer. Unless ``ordered`` (its data known to be
        written), device data is asked for in the order of the legacy default stream, which
        the operand's ``ready`` names."""
        try:
            capsule = _capsule(x, ordered)
        except (UnsupportedOperandError, NoDeviceError):
            raise
        except Exception as exc:  # (the producer's own failure, chained)
            raise UnsupportedOperandError(
                f"the __dlpack__ of {_type_name(x)} failed: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            t = dlpack.read_capsule(capsule)
        except ValueError as exc:  # (not a capsule, a used one, one that describes nothing)
            raise UnsupportedOperandError(
                f"the __dlpack__ of {_type_name(x)} gave no readable DLPack tensor: {exc}"
            ) from None
        ready = None
        if t.device_type in (dlpack.CUDA, dlpack.CUDA_MANAGED):
            device_id = t.device_id
            ready = None if ordered else dlpack.LEGACY_STREAM  # (also what no stream means)
        elif t.device_type in (dlpack.CPU, dlpack.CUDA_HOST):
            device_id = None
        else:
            raise UnsupportedOperandError(
                f"operand of type {type(x).__qualname__} lives on DLPack device type "
                f"{t.device_type}; accelmath reads host and CUDA memory")
        # The capsule keeps the producer's memory alive until the operand goes away.
        return Operand(x, t.ptr, t.shape, t.strides, t.dtype, device_id, self,
                       keepalive=capsule, ready=ready)

    def empty(self, shape, dtype, device_id):
        return device_adapter().empty(shape, dtype, device_id)

    def empty_strided(self, shape, strides, dtype, device_id):
        return device_adapter().empty_strided(shape, strides, dtype, device_id)

    def allocation(self, shape, strides, dtype, device_id):
        return device_adapter().allocation(shape, strides, dtype, device_id)

    def zeros(self, shape, dtype, device_id):
        return device_adapter().zeros(shape, dtype, device_id)

    def astype(self, x, dtype):
        if self.wrap(x).on_device:
            adapter = device_adapter()
            return adapter.astype(adapter.from_dlpack(x), dtype)
        return self.to_numpy(x).astype(dtype)

    def to_numpy(self, x):
        import numpy

        if hasattr(x, "__dlpack__"):
            return numpy.from_dlpack(x)
        if not _host_view(x):  # (an empty array at no address: the only host data it has)
            op = self.wrap(x)
            return numpy.empty(op.shape, op.dtype)
        return numpy.asarray(x)

    def from_numpy(self, a, like):
        return a
