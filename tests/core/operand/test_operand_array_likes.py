"""Array-likes (lists, tuples, scalars) are read as NumPy reads them."""

import numpy as np
import pytest

from accelmath._core.operand import adapter_for, adapter_named, wrap_operand
from accelmath._core.operand.array_likes import is_array_like
from accelmath.errors import InvalidArrayLikeError, UnsupportedDTypeError, UnsupportedOperandError


@pytest.mark.parametrize("x", [
    [1.0, 2.5, -3.0],
    (1, 2, 3),
    [[1, 2, 3], [4, 5, 6]],
    ([1j, 2], [3, 4 - 1j]),
    [[[True, False]]],
    [],
    7,
    -2.5,
    3 - 4j,
    True,
    np.float32(1.5),
    np.complex64(2 - 1j),
    np.int16(-4),
    np.bool_(False),
])
def test_array_likes_become_numpy_operands(x):
    expected = np.asarray(x)
    op = wrap_operand(x)
    assert op.package == "numpy" and op.device_id is None
    assert isinstance(op.obj, np.ndarray) and op.obj is not x
    assert op.shape == expected.shape and op.dtype == expected.dtype.name
    assert op.ptr == op.obj.ctypes.data
    np.testing.assert_array_equal(op.obj, expected)
    np.testing.assert_array_equal(op.adapter.to_numpy(x), expected)
    np.testing.assert_array_equal(op.adapter.to_numpy(op.obj), expected)


def test_each_call_reads_the_list_again():
    x = [1.0, 2.0]
    first = wrap_operand(x)
    x[0] = 5.0
    second = wrap_operand(x)
    assert first.obj[0] == 1.0 and second.obj[0] == 5.0


def test_array_likes_take_no_fast_path():
    x = [1.0, 2.0, 3.0]
    adapter = adapter_for(x)
    assert adapter.package == "numpy"
    assert adapter.layout_key(x) is None
    assert adapter_for((1, 2)).layout_key((1, 2)) is None
    assert adapter_for(2.0).layout_key(2.0) is None
    # NumPy's own arrays keep their adapter
    assert adapter_for(np.zeros(2)) is adapter_named("numpy") is not adapter


@pytest.mark.parametrize("x, dtype", [
    (["a", "b"], "str32"),
    ([object()], "object"),
    ([1, None], "object"),
    ([2 ** 70], "object"),
    (np.str_("abc"), "str96"),
    (np.datetime64("2020-01-01"), "datetime64[D]"),
])
def test_array_likes_of_unsupported_dtypes_name_the_dtype(x, dtype):
    with pytest.raises(UnsupportedDTypeError) as info:
        wrap_operand(x)
    assert f"unsupported dtype {dtype!r}" in str(info.value)
    assert "float64" in str(info.value)  # (and what is allowed)


def test_ragged_lists():
    # (a ValueError, as NumPy's, and still an operand error)
    with pytest.raises(InvalidArrayLikeError,
                       match="NumPy cannot make an array of this list: .*inhomogeneous") as info:
        wrap_operand([[1.0], [2.0, 3.0]])
    assert isinstance(info.value, ValueError) and isinstance(info.value, UnsupportedOperandError)


@pytest.mark.parametrize("error", [KeyError("k"), AttributeError("a"), IndexError("i")])
def test_an_array_method_that_fails_is_an_operand_error(error):
    class Failing:
        def __array__(self, dtype=None, copy=None):
            raise error

    with pytest.raises(UnsupportedOperandError, match=f"Failing: {type(error).__name__}: "
                       ) as info:
        wrap_operand(Failing())
    assert info.value.__cause__ is error


@pytest.mark.parametrize("cls, expected", [
    (list, True), (tuple, True), (int, True), (float, True), (complex, True), (bool, True),
    (np.float64, True), (np.int8, True), (str, False), (bytes, False), (dict, False),
    (set, False), (type(None), False), (np.ndarray, False), (object, False),
])
def test_what_is_an_array_like(cls, expected):
    assert is_array_like(cls) is expected


def test_subclasses_of_list_are_array_likes():
    class Row(list):
        pass

    op = wrap_operand(Row([1.0, 2.0]))
    assert op.package == "numpy" and op.shape == (2,)
