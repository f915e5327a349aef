"""Memory accelmath owns (accelmath._core.gpu.memory): device workspaces' lifetime and the
choice of pool, and, on a GPU, reading results back through the page-locked buffer."""

import numpy as np
import pytest

from accelmath._core.gpu import memory
from accelmath._core.gpu.memory import Workspace, allocate_workspace
from accelmath.errors import UnsupportedOperandError


def test_an_empty_workspace_needs_no_pool():
    workspace = allocate_workspace(0, 0, 0, "cupy")
    assert (workspace.ptr, workspace.nbytes) == (0, 0)
    workspace.free()


def test_free_releases_once():
    released = []
    workspace = Workspace(1000, 64, release=released.append)
    workspace.free()
    workspace.free()
    assert released == [1000] and workspace.ptr == 0


def test_the_caller_package_pool_comes_first_then_the_others(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "_ALLOCATORS", {
        "cupy": lambda n, d, s: calls.append(("cupy", n, d, s)) or Workspace(1, n),
        "torch": lambda n, d, s: calls.append(("torch", n, d, s)) or Workspace(2, n)})
    monkeypatch.setattr(memory.importlib, "import_module", lambda name: None)
    assert allocate_workspace(64, 1, 9, "torch").ptr == 2
    assert allocate_workspace(64, 1, 9, "jax").ptr == 1
    assert calls == [("torch", 64, 1, 9), ("cupy", 64, 1, 9)]


def test_no_pool_installed_is_a_clear_error(monkeypatch):
    def missing(name):
        raise ImportError(name)

    monkeypatch.setattr(memory.importlib, "import_module", missing)
    with pytest.raises(UnsupportedOperandError, match="need CuPy or PyTorch"):
        allocate_workspace(64, 0, 0, "numpy")


@pytest.mark.gpu
def test_read_back_copies_device_values_of_any_size_on_any_thread(cp):
    import concurrent.futures

    from accelmath._core.gpu.memory import read_back

    stream = cp.cuda.get_current_stream()
    for count in (0, 1, 1000, 100000, 3):  # (the buffer grows, then serves a smaller read)
        values = cp.arange(count, dtype=cp.int32) * 3 - 7
        out = read_back(values.data.ptr, count, np.int32, stream.ptr)
        assert out.dtype == np.int32 and out.shape == (count,)
        np.testing.assert_array_equal(out, values.get())
    values = cp.asarray(np.random.default_rng().standard_normal(257))

    def read():
        cp.cuda.Device(0).use()
        return read_back(values.data.ptr, 257, np.float64, 0)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for out in pool.map(lambda _: read(), range(8)):
            np.testing.assert_array_equal(out, values.get())


@pytest.mark.gpu
def test_read_back_later_gives_the_values_as_they_were_when_enqueued(cp):
    import gc

    from accelmath._core.gpu.memory import read_back_later

    stream = cp.cuda.get_current_stream()
    values = cp.arange(5000, dtype=cp.int32)
    first = read_back_later(values.data.ptr, 5000, np.int32, stream.ptr)
    values *= 2  # (enqueued after the copy: not seen by it)
    second = read_back_later(values.data.ptr, 3, np.int32, stream.ptr)
    dropped = read_back_later(values.data.ptr, 10, np.int32, stream.ptr)
    del dropped  # never waited for: its buffer waits for its copy before it is freed
    gc.collect()
    np.testing.assert_array_equal(first.result(), np.arange(5000))
    np.testing.assert_array_equal(second.result(), [0, 2, 4])
    assert first.result() is first.result()
    assert read_back_later(0, 0, np.float64, stream.ptr).result().shape == (0,)


class _HostDriver:
    """The driver calls of the read backs, on host memory: ``memcpy_async`` copies at once;
    records the calls."""

    def __init__(self):
        import ctypes

        self.ctypes, self.calls, self.blocks, self.events = ctypes, [], {}, 0
        self.fail_copy = False

    def mem_host_alloc(self, pointer, nbytes, flags):
        block = self.ctypes.create_string_buffer(nbytes)
        self.blocks[self.ctypes.addressof(block)] = block
        pointer._obj.value = self.ctypes.addressof(block)
        self.calls.append(("alloc", nbytes))

    def mem_free_host(self, ptr):
        del self.blocks[ptr]
        self.calls.append(("free",))

    def memcpy_async(self, dst, src, nbytes, stream):
        if self.fail_copy:
            raise RuntimeError("copy failed")
        self.ctypes.memmove(dst, src, nbytes)
        self.calls.append(("copy", nbytes, dst in self.blocks))

    def stream_synchronize(self, stream):
        self.calls.append(("sync stream",))

    def event_create(self, pointer, flags):
        self.events += 1
        pointer._obj.value = self.events

    def event_record(self, event, stream):
        self.calls.append(("record", event.value))

    def event_synchronize(self, event):
        self.calls.append(("wait event", event))

    def event_destroy(self, event):
        self.calls.append(("destroy event", event))


@pytest.fixture
def host_driver(monkeypatch):
    from accelmath.bindings import driver

    fake = _HostDriver()
    for name in ("mem_host_alloc", "mem_free_host", "memcpy_async", "stream_synchronize",
                 "event_create", "event_record", "event_synchronize", "event_destroy"):
        monkeypatch.setitem(vars(driver.lib), name, getattr(fake, name))
    monkeypatch.setattr(memory._local, "spares", [], raising=False)
    return fake


def test_read_backs_share_one_pool_of_page_locked_buffers(host_driver):
    values = np.arange(3000, dtype=np.int32)
    np.testing.assert_array_equal(
        memory.read_back(values.ctypes.data, 3000, np.int32, 7), values)
    later = memory.read_back_later(values.ctypes.data, 10, np.int32, 7)
    np.testing.assert_array_equal(later.result(), values[:10])
    assert later.result() is later.result()
    # one buffer, 16 KiB: taken, copied into, waited for, given back, taken again
    assert host_driver.calls[0] == ("alloc", 16384)
    assert [c for c in host_driver.calls if c[0] == "alloc"] == [("alloc", 16384)]
    assert host_driver.calls[1:] == [("copy", 12000, True), ("sync stream",),
                                     ("copy", 40, True), ("record", 1), ("wait event", 1),
                                     ("destroy event", 1)]
    assert len(memory._local.spares) == 1
    wide = np.arange(3000, dtype=np.int64)  # (its own 24,000 bytes: the copy reads them all)
    np.testing.assert_array_equal(
        memory.read_back(wide.ctypes.data, 3000, np.int64, 7), wide)  # larger: a second buffer
    assert [c for c in host_driver.calls if c[0] == "alloc"][-1] == ("alloc", 32768)
    assert len(memory._local.spares) == 2


def test_a_read_back_later_dropped_or_failed_keeps_its_buffer_out_of_reuse(host_driver):
    import gc

    values = np.arange(8, dtype=np.float64)
    dropped = memory.read_back_later(values.ctypes.data, 8, np.float64, 3)
    assert memory._local.spares == []
    del dropped
    gc.collect()  # the buffer waits for its copy, then is freed, never reused
    assert host_driver.calls[-3:] == [("wait event", 1), ("destroy event", 1), ("free",)]
    assert memory._local.spares == []
    host_driver.fail_copy = True
    with pytest.raises(RuntimeError, match="copy failed"):
        memory.read_back_later(values.ctypes.data, 8, np.float64, 3)
    gc.collect()
    assert ("sync stream",) in host_driver.calls[-4:] and memory._local.spares == []
