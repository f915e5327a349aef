"""Dense layouts in element strides (accelmath._core.layout), against NumPy's own strides."""

import numpy as np
import pytest

from accelmath._core.layout import axis_order, contiguous_strides, is_dense


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 1, 3), (0, 3)])
def test_contiguous_strides_are_numpy_s(shape):
    a = np.empty(shape, np.float32)
    assert contiguous_strides(shape) == tuple(s // 4 for s in a.strides) or 0 in shape
    f = np.empty(shape, np.float32, order="F")
    order = list(reversed(range(len(shape))))
    assert contiguous_strides(shape, order) == tuple(s // 4 for s in f.strides) or 0 in shape


def test_is_dense():
    assert is_dense((16, 20), (20, 1)) and is_dense((16, 20), (1, 16))
    assert is_dense((3, 1, 4), (4, 99, 1))  # an axis of length 1 addresses nothing
    assert not is_dense((16, 20), (16, 1))  # overlapping
    assert not is_dense((16, 20), (40, 2))  # gaps
    assert not is_dense((16, 20), (-20, 1))  # reversed


def test_axis_order_is_slowest_first_and_stable():
    assert axis_order((1, 12, 4)) == [1, 2, 0]
    assert axis_order((-6, 1)) == [0, 1]
    assert axis_order((1, 1)) == [0, 1]


def test_contiguous_strides():
    assert contiguous_strides(()) == ()
    assert contiguous_strides((3,)) == (1,)
    assert contiguous_strides((2, 0, 4)) == (4, 4, 1)  # (an empty axis steps like one of 1)
