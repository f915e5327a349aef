"""accelmath._core.gpu.warmup: the background loading a domain starts at its import."""

import sys

import pytest

from accelmath._core.gpu import warmup


@pytest.fixture
def gpu_package(monkeypatch):
    """A GPU array package counts as imported."""
    monkeypatch.setitem(sys.modules, "cupy", sys.modules.get("cupy") or object())
    monkeypatch.delenv("ACCELMATH_WARMUP", raising=False)


def test_tasks_run_in_order_on_a_thread_of_their_own(gpu_package):
    done = []
    thread = warmup.start("test", lambda: done.append(1), lambda: done.append(2))
    assert thread is not None and not thread.daemon and thread.name == "accelmath-warmup-test"
    thread.join(10)
    assert done == [1, 2]


def test_a_failing_task_stops_the_rest_and_is_logged(gpu_package, caplog):
    done = []

    def fails():
        raise OSError("no such library")

    with caplog.at_level("DEBUG", logger="accelmath"):
        thread = warmup.start("test", fails, lambda: done.append(1))
        thread.join(10)
    assert done == []
    assert "warm-up of test: OSError: no such library" in caplog.text


def test_nothing_starts_without_a_gpu_package(monkeypatch):
    for package in warmup.GPU_PACKAGES:
        monkeypatch.delitem(sys.modules, package, raising=False)
    assert warmup.start("test", pytest.fail) is None


def test_the_switch_turns_it_off(gpu_package, monkeypatch):
    monkeypatch.setenv("ACCELMATH_WARMUP", "0")
    assert warmup.start("test", pytest.fail) is None


def test_load_everything_binds_what_the_library_has():
    class Library:
        functions = {"present": None, "absent": None}
        bound = []

        def __getattr__(self, name):
            if name == "absent":
                raise AttributeError(name)  # (a symbol of another CUDA version)
            self.bound.append(name)
            return name

    library = Library()
    warmup.load_everything(library)
    assert library.bound == ["present"]


def test_device_path_imports_modules_and_loads_libraries(monkeypatch, nvrtc):
    import accelmath.fft
    from accelmath.bindings import _loader

    # (imported afresh here, and afterwards the module every other test holds again: the
    # package's attribute too, which the import sets)
    monkeypatch.delitem(sys.modules, "accelmath.fft._kernels.columns", raising=False)
    monkeypatch.delattr(accelmath.fft, "_columns", raising=False)
    monkeypatch.setattr(_loader, "_loaded", {})
    warmup.device_path(("accelmath.fft._kernels.columns",), ("nvrtc",))()
    assert "accelmath.fft._kernels.columns" in sys.modules
    assert "nvrtc" in _loader._loaded
