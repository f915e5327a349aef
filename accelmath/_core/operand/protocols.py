"""Producers of the CUDA array protocols: any object with ``__cuda_array_interface__`` or
``__dlpack__``, read without importing its package.

Their device results are allocated by :func:`~accelmath._core.operand.device_adapter` (CuPy
when installed, else PyTorch); host results are NumPy arrays.
"""

import ctypes

from accelmath._core.operand import dlpack
from accelmath._core.layout import contiguous_strides
from accelmath._core.operand.base import Adapter, element_strides
from accelmath._core.operand.packages import device_adapter
from accelmath._core.operand.record import (ITEMSIZE, Operand, unsupported_dtype,
                                            unsupported_operand)
from accelmath.errors import UnsupportedOperandError

__all__ = ["GenericAdapter", "TYPESTR", "pointer_device"]

# __cuda_array_interface__ typestr, less its byte order, to a NumPy-style name
TYPESTR = {"b1": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
           "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64", "f2": "float16",
           "f4": "float32", "f8": "float64", "c8": "complex64", "c16": "complex128"}


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
        cai = getattr(x, "__cuda_array_interface__", None)
        if cai is not None:
            return self._wrap_cai(x, cai)
        if hasattr(x, "__dlpack__"):
            return self._wrap_dlpack(x)
        raise unsupported_operand(x)

    def _wrap_cai(self, x, cai):
        typestr = cai["typestr"]
        name = TYPESTR.get(typestr[1:])
        if name is None:
            raise unsupported_dtype(repr(typestr))
        shape = tuple(cai["shape"])
        if cai.get("strides") is None:
            strides = contiguous_strides(shape)
        else:
            strides = element_strides(cai["strides"], ITEMSIZE[name])
        ptr = cai["data"][0] or 0
        # (version 3) work on this stream may still be writing x: the protocol asks consumers
        # to wait for it (1 and 2 are the default streams, as in the driver)
        return Operand(x, ptr, shape, strides, name, pointer_device(ptr), self,
                       ready=cai.get("stream") or None)

    def _wrap_dlpack(self, x, ordered=False):
        """The operand of a ``__dlpack__`` producer. Unless ``ordered`` (its data known to be
        written), device data is asked for in the order of the legacy default stream, which
        the operand's ``ready`` names."""
        capsule = None
        if not ordered and dlpack.device_type(x) in (dlpack.CUDA, dlpack.CUDA_MANAGED):
            try:
                capsule = x.__dlpack__(stream=dlpack.LEGACY_STREAM)
            except TypeError:  # a producer older than the stream argument
                pass
        if capsule is None:
            capsule = x.__dlpack__()
        t = dlpack.read_capsule(capsule)
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

        return numpy.from_dlpack(x) if hasattr(x, "__dlpack__") else numpy.asarray(x)

    def from_numpy(self, a, like):
        return a
