"""Resolving streams (accelmath._core.gpu.stream): handles of every kind of stream object."""

import pytest

from accelmath._core.gpu import stream as stream_module
from accelmath._core.operand import Operand
from accelmath._core.gpu.stream import check_stream, order_after, resolve_stream, stream_handle
from accelmath.errors import UnsupportedOperandError


class Protocol:
    def __cuda_stream__(self):
        return (0, 1234)


class CupyLike:
    ptr = 55


class TorchLike:
    cuda_stream = 66


class IntLike(int):
    pass


@pytest.mark.parametrize("stream, handle", [(0, 0), (7, 7), (Protocol(), 1234), (CupyLike(), 55),
                                            (TorchLike(), 66), (IntLike(9), 9)])
def test_stream_handle(stream, handle):
    assert stream_handle(stream) == handle


@pytest.mark.parametrize("bad", ["0", 1.0, object(), True])
def test_stream_handle_refuses_other_objects(bad):
    with pytest.raises(UnsupportedOperandError, match="stream must be an int handle"):
        stream_handle(bad)
    with pytest.raises(UnsupportedOperandError, match="stream must be an int handle"):
        check_stream(bad)


def test_check_stream_takes_none_and_streams():
    for stream in (None, 0, Protocol(), CupyLike()):
        assert check_stream(stream) is None


class Adapter:
    def current_stream(self, device_id):
        return 100 + device_id


def test_resolve_stream_defaults_to_the_package_current_stream():
    op = Operand(None, 0, (1,), (1,), "float32", 3, Adapter())
    assert resolve_stream(None, op) == 103
    assert resolve_stream(CupyLike(), op) == 55


def test_order_after_a_stream_itself_or_between_default_streams_does_nothing(monkeypatch):
    monkeypatch.setattr(stream_module, "ctypes", None)  # any device call would fail
    order_after(5, 5, 0)
    order_after(0, 1, 0)
    order_after(1, 0, 0)
