"""Loading a library: through the C library's dlopen, called as a ctypes foreign function
(the interpreter lock released), the same library ctypes would load, and the loader's own
message where it cannot."""

import ctypes
import ctypes.util
import os

import pytest

from accelmath.bindings import _loader


def _libm():
    name = ctypes.util.find_library("m")
    if name is None:
        pytest.skip("no libm to load")
    return name


def test_a_library_loads_and_its_functions_are_called():
    libm = _loader._cdll(_libm())
    libm.cos.restype, libm.cos.argtypes = ctypes.c_double, (ctypes.c_double,)
    assert libm.cos(0.0) == 1.0


def test_a_library_that_does_not_load_says_why():
    with pytest.raises(OSError, match="no-such-library"):
        _loader._cdll("/nonexistent/libno-such-library.so")


def test_the_load_goes_through_a_foreign_call_of_dlopen(monkeypatch):
    # (a ctypes foreign call releases the interpreter lock; ctypes.CDLL's own load holds it,
    # so a warm-up thread's load would stop the caller for its whole length)
    dlopen = _loader._dlopen()
    if dlopen is None:
        pytest.skip("no dlopen to call")
    calls = []

    def recorded(path, mode):
        calls.append((path, mode))
        return dlopen(path, mode)

    monkeypatch.setattr(_loader, "_dlopen", lambda: recorded)
    libm = _loader._cdll(_libm())
    assert calls == [(os.fsencode(_libm()), os.RTLD_NOW | ctypes.DEFAULT_MODE)]
    assert libm._handle == dlopen(os.fsencode(_libm()), os.RTLD_NOW | ctypes.DEFAULT_MODE)


def test_threads_that_bind_and_call_a_function_at_once_do_not_crash():
    # (binding set the types and status check of the function object ctypes caches per
    # name: a second thread's binding freed the status check of a call in flight in the
    # first, and the interpreter crashed when two threads made their first NVRTC compiles)
    import threading

    from accelmath.bindings import nvrtc
    from accelmath.errors import LibraryNotFoundError

    try:
        nvrtc.lib.cdll
    except LibraryNotFoundError:
        pytest.skip("no NVRTC to load")
    lib = _loader.Library("nvrtc", nvrtc.lib.functions.values(), nvrtc.STATUS_NAMES)
    assert lib.bind("compile_program") is not lib.bind("compile_program")
    source = b'extern "C" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }'
    errors = []

    def compile_with(lib, start):
        try:
            start.wait()
            program = ctypes.c_void_p()
            lib.create_program(ctypes.byref(program), source, b"k.cu", 0, None, None)
            lib.compile_program(program, 0, None)
            lib.destroy_program(ctypes.byref(program))
        except Exception as exc:  # (reported below; a crash ends the test run instead)
            errors.append(exc)

    for _ in range(5):
        lib = _loader.Library("nvrtc", nvrtc.lib.functions.values(), nvrtc.STATUS_NAMES)
        start = threading.Barrier(4)
        threads = [threading.Thread(target=compile_with, args=(lib, start)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []


def test_a_load_that_loads_another_library_on_its_thread_does_not_wait_for_itself(
        monkeypatch):
    """Finding a library runs Python (imports, the store's files), which may collect garbage;
    a finalizer run then may make the first call of a driver function, whose library loads on
    the same thread, inside the first load."""
    import threading

    loaded = {}
    monkeypatch.setattr(_loader, "_loaded", loaded)

    def find(name):
        if name == "outer":
            _loader.load_library("inner")  # (what such a finalizer does)
        return (name, f"/{name}.so")

    monkeypatch.setattr(_loader, "_find", find)
    worker = threading.Thread(target=_loader.load_library, args=("outer",), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the inner load waited for the outer one's lock"
    assert loaded == {"outer": ("outer", "/outer.so"), "inner": ("inner", "/inner.so")}
    assert _loader.load_library("outer") == ("outer", "/outer.so")  # (found without the lock)
