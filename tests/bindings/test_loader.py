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
