"""CuPy's current stream is per device: a plan of one device reads that device's stream."""

from types import SimpleNamespace

import pytest

from accelmath._core.operand.cupy_arrays import CupyAdapter


def _adapter(current_device, streams):
    """A CupyAdapter over a stand-in for ``cupy.cuda``: ``streams`` maps device -> handle."""
    cuda = SimpleNamespace(
        runtime=SimpleNamespace(getDevice=lambda: current_device[0]),
        get_current_stream=lambda device_id=None: SimpleNamespace(
            ptr=streams[current_device[0] if device_id is None else device_id]))
    adapter = CupyAdapter.__new__(CupyAdapter)
    adapter._cp = SimpleNamespace(cuda=cuda)
    adapter._stream_ptr = lambda: streams[current_device[0]]
    adapter._stream_capsule = None  # (CuPy's C function: none in the stand-in)
    adapter._stream_getters = {}
    return adapter


@pytest.mark.parametrize("current", [0, 1])
def test_each_device_reads_its_own_current_stream(current):
    adapter = _adapter([current], {0: 100, 1: 200})
    assert adapter.stream_getter(0)() == 100
    assert adapter.stream_getter(1)() == 200
    assert adapter.current_stream(1) == 200
    assert adapter.current_stream(None) == (100, 200)[current]
    assert adapter.current_stream(1) == 200  # (the getter made by the first call)
    assert set(adapter._stream_getters) == {1, None}


def test_the_getter_follows_a_change_of_current_device():
    device = [0]
    adapter = _adapter(device, {0: 100, 1: 200})
    getter = adapter.stream_getter(1)
    assert getter() == 200
    device[0] = 1
    assert getter() == 200


@pytest.mark.gpu
def test_current_cupy_stream(cp):
    adapter = CupyAdapter()
    getter = adapter.stream_getter(cp.cuda.runtime.getDevice())
    with cp.cuda.Stream() as stream:
        assert getter() == stream.ptr
    assert getter() == cp.cuda.get_current_stream().ptr
