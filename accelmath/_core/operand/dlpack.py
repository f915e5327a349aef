"""DLPack capsules, read with ctypes: what a ``__dlpack__`` producer hands out.

A capsule named ``"dltensor"`` points at a ``DLManagedTensor``, whose first member is the
``DLTensor`` (dlpack.h) read here. Reading takes nothing over: the producer's deleter still
runs when the capsule goes away, so the capsule must outlive every use of the data.
"""

import ctypes
from typing import NamedTuple

from accelmath._core.layout import contiguous_strides
from accelmath._core.operand.record import unsupported_dtype

__all__ = ["CPU", "CUDA", "CUDA_HOST", "CUDA_MANAGED", "LEGACY_STREAM", "DTYPES", "DLTensor",
           "Tensor", "device_type", "read_capsule"]

# DLDeviceType values accelmath reads: host memory (CPU, pinned CUDA_HOST), device memory
# (CUDA, CUDA_MANAGED)
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13

# The legacy default stream, as the ``stream`` argument of ``__dlpack__`` names it.
LEGACY_STREAM = 1

# DLDataType (code, bits), one lane, to a NumPy-style name
DTYPES = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
          (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
          (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
          (4, 16): "bfloat16", (5, 32): "complex32", (5, 64): "complex64",
          (5, 128): "complex128", (6, 8): "bool"}


class DLTensor(ctypes.Structure):
    """``DLTensor`` of dlpack.h (its ``DLDevice`` and ``DLDataType`` members spelled out)."""

    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class Tensor(NamedTuple):
    """What a capsule describes."""

    #: Address of the first element (the tensor's ``byte_offset`` added).
    ptr: int
    device_type: int
    device_id: int
    shape: tuple
    #: In elements; C order where the capsule gives none.
    strides: tuple
    #: NumPy-style name.
    dtype: str


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def read_capsule(capsule):
    """The :class:`Tensor` a ``"dltensor"`` capsule describes.

    Raises
    ------
    UnsupportedDTypeError
        For an element type accelmath cannot describe (or vectors: more than one lane).
    ValueError
        If ``capsule`` is not a capsule named ``"dltensor"`` (one already consumed is named
        ``"used_dltensor"``), or describes no tensor (a negative extent, no data for its
        elements).

    Examples
    --------
    >>> import numpy as np
    >>> from accelmath._core.operand.dlpack import read_capsule
    >>> t = read_capsule(np.zeros((2, 3), np.float32).T.__dlpack__())
    >>> t.shape, t.strides, t.dtype, t.device_type
    ((3, 2), (1, 3), 'float32', 1)
    """
    t = DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    name = DTYPES.get((t.code, t.bits))
    if name is None or t.lanes != 1:
        raise unsupported_dtype(f"(DLPack code {t.code}, {t.bits} bits, {t.lanes} lanes)")
    if t.ndim < 0 or t.ndim and not t.shape:
        raise ValueError(f"a DLPack tensor of {t.ndim} dimensions and no shape")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if any(n < 0 for n in shape):
        raise ValueError(f"a DLPack tensor of shape {shape}")
    if not t.data and 0 not in shape:  # (its elements would be read from address 0)
        raise ValueError(f"a DLPack tensor of shape {shape} at the null address")
    strides = (tuple(t.strides[i] for i in range(t.ndim)) if t.strides
               else contiguous_strides(shape))
    return Tensor((t.data or 0) + t.byte_offset, t.device_type, t.device_id, shape, strides,
                  name)


def device_type(x):
    """The DLPack device type ``x.__dlpack_device__()`` gives (None where it does not say)."""
    device = getattr(x, "__dlpack_device__", None)
    try:
        return None if device is None else int(device()[0])
    except Exception:  # a producer's own failure: asked again through __dlpack__ itself
        return None
