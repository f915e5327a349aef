"""The stream beside a call's (accelmath._core.gpu.beside): what fork and join enqueue, one side
stream per thread and device, freed with it (CPU, a stand-in driver); on the GPU, the check
that runs there is covered by tests/linalg/test_finite_gpu.py."""

import threading

import pytest

from accelmath._core.gpu import beside


class _Driver:
    """Records the calls; handles count up from 1."""

    def __init__(self):
        self.calls, self.made = [], 0

    def _make(self, kind, pointer, flags):
        self.made += 1
        pointer._obj.value = self.made
        self.calls.append((kind, self.made, flags))

    def stream_create(self, pointer, flags):
        self._make("stream", pointer, flags)

    def event_create(self, pointer, flags):
        self._make("event", pointer, flags)

    def event_record(self, event, stream):
        self.calls.append(("record", event, stream))

    def stream_wait_event(self, stream, event, flags):
        self.calls.append(("wait", stream, event))

    def event_destroy(self, event):
        self.calls.append(("destroy event", event))

    def stream_destroy(self, stream):
        self.calls.append(("destroy stream", stream))


@pytest.fixture
def fake(monkeypatch):
    from accelmath.bindings import driver

    fake = _Driver()
    for name in ("stream_create", "event_create", "event_record", "stream_wait_event",
                 "event_destroy", "stream_destroy"):
        monkeypatch.setitem(vars(driver.lib), name, getattr(fake, name))
    monkeypatch.setattr(beside, "ensure_context", lambda device_id: None)
    monkeypatch.setattr(beside._local, "sides", {}, raising=False)
    return fake


def test_fork_orders_the_side_stream_after_the_call_and_join_the_call_after_it(fake):
    side = beside.fork(50, 0)
    # a non-blocking stream and two events without timing, made on the first fork
    assert fake.calls[:3] == [("stream", 1, 1), ("event", 2, 2), ("event", 3, 2)]
    assert (side.stream, side.forked, side.joined) == (1, 2, 3)
    assert fake.calls[3:] == [("record", 2, 50), ("wait", 1, 2)]
    del fake.calls[:]
    side.join(50)
    assert fake.calls == [("record", 3, 1), ("wait", 50, 3)]


def test_one_side_stream_per_thread_and_device(fake):
    first = beside.fork(50, 0)
    assert beside.fork(60, 0) is first  # the same thread and device: kept
    assert fake.calls[-2:] == [("record", 2, 60), ("wait", 1, 2)]  # ordered after 60 now
    assert beside.fork(50, 1) is not first
    other = []
    thread = threading.Thread(target=lambda: other.append(beside.fork(50, 0)))
    thread.start()
    thread.join()
    assert other[0] is not first and other[0].stream not in (first.stream,)


def test_a_side_stream_is_destroyed_with_its_holder(fake):
    side = beside.fork(50, 0)
    beside._local.sides.clear()
    del fake.calls[:]
    del side
    assert sorted(fake.calls) == [("destroy event", 2), ("destroy event", 3),
                                  ("destroy stream", 1)]


def test_a_side_stream_made_in_part_is_given_back(fake, monkeypatch):
    # the second event cannot be made: the stream and the first event go back, the error
    # is raised, and no side is kept
    made = fake.event_create

    def event_create(pointer, flags):
        if fake.made == 2:
            raise RuntimeError("CUDA_ERROR_OUT_OF_MEMORY")
        made(pointer, flags)

    from accelmath.bindings import driver

    monkeypatch.setitem(vars(driver.lib), "event_create", event_create)
    with pytest.raises(RuntimeError, match="OUT_OF_MEMORY"):
        beside.fork(50, 0)
    assert fake.calls[-2:] == [("destroy stream", 1), ("destroy event", 2)]
    assert beside._local.sides == {}
