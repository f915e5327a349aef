"""DLPack capsules read with ctypes: NumPy's own capsules, and capsules made here by hand
(device types, dtypes and layouts NumPy never exports)."""

import ctypes
import re

import numpy as np
import pytest

from accelmath._core.operand import dlpack, wrap_operand
from accelmath._core.operand.dlpack import DLTensor, read_capsule
from accelmath.errors import UnsupportedDTypeError, UnsupportedOperandError

_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class HandMade:
    """A ``"dltensor"`` capsule over a DLTensor built here (no deleter: nothing to free)."""

    def __init__(self, shape, strides=None, code=2, bits=32, lanes=1, device_type=2,
                 device_id=0, data=0x7F0000000000, byte_offset=0):
        ndim = len(shape)
        self.shape = (ctypes.c_int64 * ndim)(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * ndim)(*strides)
        self.tensor = DLTensor(data, device_type, device_id, ndim, code, bits, lanes,
                               ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
                               None if self.strides is None else
                               ctypes.cast(self.strides, ctypes.POINTER(ctypes.c_int64)),
                               byte_offset)
        self.capsule = _new_capsule(ctypes.addressof(self.tensor), b"dltensor", None)

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return self.tensor.device_type, self.tensor.device_id


@pytest.mark.parametrize("view", [lambda a: a, lambda a: a.T, lambda a: a[1:, ::-2],
                                  lambda a: a[2]])
@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64", "float16", "float32",
                                   "float64", "complex64", "complex128", "bool"])
def test_numpy_capsules(view, dtype):
    a = view(np.zeros((4, 6), dtype))
    t = read_capsule(a.__dlpack__())
    assert t.ptr == a.ctypes.data and t.device_type == dlpack.CPU and t.device_id == 0
    assert t.shape == a.shape and t.dtype == dtype
    assert t.strides == tuple(s // a.itemsize for s in a.strides)


def test_capsules_without_strides_are_c_order():
    made = HandMade((2, 3, 5))  # (alive while its capsule is read)
    t = read_capsule(made.capsule)
    assert t.shape == (2, 3, 5) and t.strides == (15, 5, 1)


def test_byte_offset_is_added():
    made = HandMade((4,), strides=(1,), data=4096, byte_offset=16)
    t = read_capsule(made.capsule)
    assert t.ptr == 4096 + 16


@pytest.mark.parametrize("code, bits, name", [(4, 16, "bfloat16"), (5, 32, "complex32"),
                                              (6, 8, "bool"), (1, 8, "uint8")])
def test_dtypes_numpy_does_not_export(code, bits, name):
    made = HandMade((3,), code=code, bits=bits)
    assert read_capsule(made.capsule).dtype == name


@pytest.mark.parametrize("code, bits, lanes, what", [
    (2, 8, 1, "(DLPack code 2, 8 bits, 1 lanes)"),  # float8
    (3, 16, 1, "(DLPack code 3, 16 bits, 1 lanes)"),  # opaque handles
    (2, 32, 4, "(DLPack code 2, 32 bits, 4 lanes)"),  # float4 vectors
])
def test_unsupported_dtypes(code, bits, lanes, what):
    made = HandMade((3,), code=code, bits=bits, lanes=lanes)
    with pytest.raises(UnsupportedDTypeError, match=re.escape(f"unsupported dtype {what}")):
        read_capsule(made.capsule)


def test_not_a_dltensor_capsule():
    with pytest.raises(ValueError):
        read_capsule(object())
    made = HandMade((1,))
    used = _new_capsule(ctypes.addressof(made.tensor), b"used_dltensor", None)
    with pytest.raises(ValueError):
        read_capsule(used)


def test_device_type():
    assert dlpack.device_type(np.zeros(2)) == dlpack.CPU
    assert dlpack.device_type(HandMade((2,), device_type=dlpack.CUDA_MANAGED)) == 13
    assert dlpack.device_type(object()) is None

    class Failing:
        def __dlpack_device__(self):
            raise RuntimeError("no device")

    assert dlpack.device_type(Failing()) is None


@pytest.mark.parametrize("device_type, device_id, expected", [
    (dlpack.CUDA, 3, 3), (dlpack.CUDA_MANAGED, 1, 1), (dlpack.CPU, 0, None),
    (dlpack.CUDA_HOST, 0, None)])
def test_producers_of_hand_made_capsules(device_type, device_id, expected):
    made = HandMade((4, 2), strides=(1, 4), device_type=device_type, device_id=device_id)
    op = wrap_operand(made)
    assert op.device_id == expected and op.shape == (4, 2) and op.strides == (1, 4)
    assert op.ptr == 0x7F0000000000 and op.keepalive is made.capsule
    # device data is read in the order of the legacy default stream, which ready names
    assert op.ready == (dlpack.LEGACY_STREAM if expected is not None else None)


@pytest.mark.parametrize("device_type", [4, 7, 8, 10])  # OpenCL, Vulkan, Metal, ROCm
def test_other_device_types_are_refused(device_type):
    made = HandMade((2,), device_type=device_type)
    with pytest.raises(UnsupportedOperandError,
                       match=f"lives on DLPack device type {device_type}; accelmath reads host "
                             "and CUDA memory"):
        wrap_operand(made)


class _Gives:
    """A producer whose ``__dlpack__`` gives ``value`` as it is."""

    def __init__(self, value):
        self.value = value

    def __dlpack__(self, stream=None):
        return self.value

    def __dlpack_device__(self):
        return (dlpack.CPU, 0)


@pytest.mark.parametrize("made, what", [
    (lambda: 42, "invalid PyCapsule"),
    (lambda: np.arange(3.0).__dlpack__(max_version=(1, 0)), "incorrect name"),  # (versioned)
    (lambda: HandMade((-8,), device_type=1), r"shape \(-8,\)"),
    (lambda: HandMade((8,), device_type=1, data=0), "null address"),
])
def test_a_capsule_that_describes_no_tensor_is_refused_naming_the_producer(made, what):
    value = made()
    capsule = value.capsule if isinstance(value, HandMade) else value
    with pytest.raises(UnsupportedOperandError, match=f"gave no readable DLPack tensor.*{what}"):
        wrap_operand(_Gives(capsule))
    assert read_capsule(HandMade((0,), device_type=1, data=0).capsule).shape == (0,)
