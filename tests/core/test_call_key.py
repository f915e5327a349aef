"""What a call key holds of each argument (accelmath._core.call_key)."""

import numpy as np
import pytest

from accelmath._core import call_key


def test_plain_values_only():
    assert call_key.plain(None) and call_key.plain(()) and call_key.plain((1, -2))
    for value in [(1.0,), (True,), [1], 1, "1", (np.int64(1),)]:
        assert not call_key.plain(value)


def test_numpy_layout_is_shape_and_dtype_with_byte_order():
    x = np.ones((2, 3))
    read = call_key.layout_reader(x)
    assert read is call_key.LAYOUT_READERS[np.ndarray]
    assert read(x) == read(np.zeros((3, 2)).T.copy()) == ((2, 3), np.dtype("float64"))
    assert read(x.astype(">f8")) != read(x)


def test_what_is_not_an_array_has_no_reader():
    assert call_key.layout_reader(object()) is None
    assert call_key.device_reader(object()) is None


def test_torch_cpu_tensors_that_record_gradients_have_no_key():
    torch = pytest.importorskip("torch")
    t = torch.ones(3)
    read = call_key.layout_reader(t)
    assert read(t) == (torch.Size([3]), torch.float32)
    assert read(torch.ones(3, requires_grad=True)) is None


def test_host_arrays_have_no_address_key():
    key, addresses = ["f"], []
    assert not call_key.read_keys([np.ones(2)], key, addresses)
    key, addresses = [], []
    assert call_key.read_keys([None, None], key, addresses)
    assert key == [None, None] and addresses == [0, 0]
