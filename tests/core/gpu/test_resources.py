"""Per-thread handles and per-stream workspaces (accelmath._core.gpu.resources), on fake handles."""

import gc
import threading

import pytest

from accelmath._core.gpu import resources as resources_module
from accelmath._core.gpu.memory import Workspace
from accelmath._core.gpu.resources import STREAMS_KEPT, Resources


class Owner:
    """Stands for a plan: the resources go when it does."""


class Library:
    """A fake library: handles are ints; records what was destroyed and bound."""

    def __init__(self):
        self.next = 100
        self.destroyed = []
        self.bound = []

    def make_handles(self):
        self.next += 1
        return (self.next, None)

    def destroy(self, handle):
        self.destroyed.append(handle)

    def bind(self, handles, stream, workspace):
        self.bound.append((handles, stream, workspace))


@pytest.fixture
def fake_device(monkeypatch):
    """No GPU here: no context to make, and workspaces that record their frees."""
    freed = []
    monkeypatch.setattr(resources_module, "ensure_context", lambda device_id: None)

    def allocate(nbytes, device_id, stream, package):
        workspace = Workspace(1000 + stream, nbytes,
                              release=lambda ptr: freed.append((ptr, nbytes)))
        return workspace

    monkeypatch.setattr(resources_module, "allocate_workspace", allocate)
    return freed


def made(library, nbytes=64):
    owner = Owner()
    res = Resources(owner, library.destroy, 0, "cupy")
    res.configure(library.make_handles, library.bind, nbytes)
    return owner, res


def test_a_thread_takes_the_adopted_handles_then_binds_its_stream(fake_device):
    library = Library()
    owner, res = made(library)
    res.adopt((res.track(7), None))
    state = res.state_on(5)
    assert state.handles == (7, None) and state.stream == 5 and state.workspace == 1005
    assert library.bound == [((7, None), 5, 1005)]
    assert res.state_on(5) is state and len(library.bound) == 1  # bound once per stream
    assert res.held_bytes() == 64


def test_each_thread_has_its_own_handles_and_hands_them_on(fake_device):
    library = Library()
    owner, res = made(library)
    res.adopt((res.track(7), None))
    seen = []

    def run():
        seen.append(res.state_on(3).handles)

    for _ in range(2):  # one after the other: the second thread gets the first's handles
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        gc.collect()
    assert seen == [(7, None), (7, None)]
    main = res.state_on(3).handles  # this thread's own, while no spare is left... or the spare
    assert main == (7, None)
    # a thread that runs while this one holds them gets a new set
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen[-1] == (101, None)
    # the ended threads' workspaces went back to their pool
    assert len(fake_device) >= 2


def test_streams_beyond_the_kept_ones_give_back_the_oldest_workspace(fake_device):
    library = Library()
    grew = []
    owner, res = made(library)
    res.on_grow = lambda: grew.append(1)
    for stream in range(STREAMS_KEPT + 2):
        res.state_on(stream)
    assert res.held_bytes() == 64 * STREAMS_KEPT
    assert [ptr for ptr, _ in fake_device] == [1000, 1001]  # the oldest two, in order
    assert len(grew) == STREAMS_KEPT  # only while the plan's bytes grew
    assert res.state_on(5).workspace == 1005


def test_free_destroys_every_handle_once_and_is_idempotent(fake_device):
    library = Library()
    owner, res = made(library)
    res.adopt((res.track(7), None))
    res.discard((res.track(8),))
    assert library.destroyed == [8]
    res.state_on(1)
    res.free()
    res.free()
    assert sorted(library.destroyed) == [7, 8]
    assert res.held_bytes() == 0


def test_the_owner_going_away_frees_everything(fake_device):
    library = Library()
    owner, res = made(library)
    res.adopt((res.track(9), None))
    res.state_on(2)
    del owner
    gc.collect()
    assert library.destroyed == [9]
    assert (1002, 64) in fake_device


def test_no_workspace_bytes_means_a_null_workspace(monkeypatch):
    monkeypatch.setattr(resources_module, "ensure_context", lambda device_id: None)
    library = Library()
    owner, res = made(library, nbytes=0)
    assert res.state_on(4).workspace == 0 and res.held_bytes() == 0
