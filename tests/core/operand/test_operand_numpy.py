"""NumPy arrays as operands: zero copy, strides in elements, dtypes by name."""

import re

import numpy as np
import pytest

from accelmath._core.operand import adapter_named, wrap_operand
from accelmath._core.operand.base import Layouts
from accelmath.errors import UnsupportedDTypeError, UnsupportedOperandError

rng = np.random.default_rng()


@pytest.mark.parametrize("view", [
    lambda a: a,
    lambda a: a.T,
    lambda a: a[:, ::2],
    lambda a: a[::-1, 1:],
    lambda a: a[1:, ::-3],
    lambda a: a[np.newaxis, :, 2],
])
@pytest.mark.parametrize("dtype", ["float32", "complex128", "int16", "bool"])
def test_views_are_read_in_place(view, dtype):
    x = view(np.zeros((5, 7), dtype))
    op = wrap_operand(x)
    assert op.obj is x and op.package == "numpy" and op.device_id is None
    assert op.ptr == x.ctypes.data
    assert op.shape == x.shape and op.dtype == dtype
    assert op.strides == tuple(s // x.itemsize for s in x.strides)


def test_strides_that_are_not_whole_elements():
    buffer = np.zeros(32, np.uint8)
    x = np.ndarray((3,), np.float32, buffer, strides=(6,))
    with pytest.raises(UnsupportedOperandError,
                       match=r"strides \(6,\) \(bytes\) are not multiples of the 4-byte"):
        wrap_operand(x)


@pytest.mark.parametrize("dtype", [np.float128 if hasattr(np, "float128") else np.longdouble,
                                   "datetime64[s]", "U3", object, [("a", "f4"), ("b", "i4")]])
def test_unsupported_dtypes_are_named(dtype):
    x = np.zeros(3, dtype)
    with pytest.raises(UnsupportedDTypeError, match=re.escape(f"unsupported dtype '{x.dtype.name}'")):
        wrap_operand(x)


def test_layouts_remember_conversions_up_to_a_bound():
    layouts = Layouts()
    dtype = np.dtype("complex64")
    assert layouts.lookup(dtype, (48, 8)) == ("complex64", (6, 1))
    assert layouts.dtypes[dtype][2] == {(48, 8): (6, 1)}
    for i in range(Layouts._MAX + 5):
        layouts.convert(dtype, (8 * (i + 1),))
    assert 0 < len(layouts.dtypes[dtype][2]) <= Layouts._MAX
    assert layouts.lookup(dtype, (-16, 8)) == ("complex64", (-2, 1))


def test_allocation_and_host_conversions():
    adapter = adapter_named("numpy")
    a = adapter.empty((2, 3), "float32", None)
    assert isinstance(a, np.ndarray) and a.shape == (2, 3) and a.dtype == np.float32
    z = adapter.zeros((4,), "complex64", None)
    assert not z.any()
    t, ptr = adapter.empty_strided((3, 4), (1, 3), "float64", None)
    assert wrap_operand(t).strides == (1, 3) and ptr == t.ctypes.data
    x = rng.standard_normal(5)
    assert adapter.to_numpy(x) is x
    assert adapter.from_numpy(x, None) is x
    assert adapter.layout_key(x) is None  # no fast path on the host


def test_a_subclass_is_read_as_numpy_sees_its_memory():
    # (its own shape, dtype or interface may say otherwise: what a device copy would read)
    class Lying(np.ndarray):
        @property
        def shape(self):
            return (1 << 20,)

        @property
        def dtype(self):
            return "float64"

    x = np.arange(8, dtype=np.complex64)
    op = wrap_operand(x.view(Lying))
    assert (op.shape, op.dtype, op.strides, op.ptr) == ((8,), "complex64", (1,), x.ctypes.data)
    assert type(op.obj) is Lying
