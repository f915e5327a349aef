"""The Adapter base class (accelmath._core.operand.base): byte-to-element strides, the
remembered layouts, and allocation in any axis order, on NumPy (the CPU)."""

import numpy as np
import pytest

from accelmath._core.operand import adapter_named
from accelmath._core.operand.base import Layouts, allocating, element_strides
from accelmath.errors import UnsupportedDTypeError, UnsupportedOperandError


def test_element_strides_need_whole_elements():
    assert element_strides((48, 16, -8), 8) == (6, 2, -1)
    with pytest.raises(UnsupportedOperandError, match=r"strides \(12, 4\) .* 8-byte element"):
        element_strides((12, 4), 8)


def test_layouts_remember_conversions_and_refuse_unknown_dtypes():
    layouts = Layouts()
    dtype = np.dtype("complex64")
    assert layouts.lookup(dtype, (64, 8)) == ("complex64", (8, 1))
    assert layouts.dtypes[dtype][2] == {(64, 8): (8, 1)}  # remembered
    assert layouts.lookup(dtype, (64, 8)) == ("complex64", (8, 1))
    layouts._MAX = 2
    layouts.lookup(dtype, (8, 64))
    layouts.lookup(dtype, (16, 8))  # past the bound: the old ones dropped
    assert layouts.dtypes[dtype][2] == {(16, 8): (2, 1)}
    with pytest.raises(UnsupportedDTypeError):
        layouts.lookup(np.dtype("U3"), (12,))


@pytest.mark.parametrize("shape, strides", [((2, 3, 4), (12, 4, 1)), ((2, 3, 4), (1, 2, 6)),
                                            ((2, 3, 4), (3, 1, 6)), ((5,), (1,))])
def test_empty_strided_and_allocation_in_any_axis_order(shape, strides):
    adapter = adapter_named("numpy")
    array, ptr = adapter.empty_strided(shape, strides, "float64", None)
    assert array.shape == shape and tuple(s // 8 for s in array.strides) == strides
    assert ptr == array.__array_interface__["data"][0]
    make, pointer = adapter.allocation(shape, strides, "float64", None)
    first, second = make(), make()
    assert first is not second and first.shape == shape
    assert pointer(first) == first.__array_interface__["data"][0]
    allocate = adapter.allocator(shape, strides, "float64", None)
    array, ptr = allocate()
    assert tuple(s // 8 for s in array.strides) == strides and ptr == pointer(array)


def test_allocating_pairs_an_array_with_its_address():
    made = []
    allocate = allocating(lambda: made.append(object()) or made[-1], lambda x: id(x))
    array, ptr = allocate()
    assert array is made[0] and ptr == id(array)
