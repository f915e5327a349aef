"""NumPy's own FFT tests (``numpy/fft/tests/test_pocketfft.py``, as installed), run with
``numpy.fft``'s transforms replaced by accelmath's: on the CPU path, and (``gpu``) with every
input moved to the GPU as a CuPy array and every result brought back.

NumPy's test module takes ``np.fft.fft`` and the rest when it is collected (in its
parametrizations) as well as when its tests run, so the functions are replaced before it is
imported: the tests run in a pytest process of their own, with the plugin :data:`PLUGIN`
loaded by ``-p``. The plugin counts the transforms that reach accelmath;
``numpy_suites`` writes them and the outcomes to a JSON file; a failure of any of NumPy's tests fails the test here, naming it.
"""

from pathlib import Path

import numpy as np
import numpy_suites
import pytest

SUITE = Path(np.__file__).parent / "fft" / "tests" / "test_pocketfft.py"

PLUGIN = '''
"""Replace numpy.fft's transforms by accelmath.fft's for this pytest process (imported by -p,
before any test module is collected)."""

import functools
import os

import numpy
import pytest

import accelmath.fft
from accelmath.fft import _functions, _functions_nd
from accelmath.fft._normalize import LONG_DOUBLES

NAMES = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
         "fftn", "ifftn", "rfftn", "irfftn")
_calls = [0]
_transform = _functions.transform


def _counted(*args, **kwargs):
    _calls[0] += 1
    return _transform(*args, **kwargs)


_functions.transform = _functions_nd.transform = _counted


def _on_gpu(function):
    """``function`` with its input copied to the GPU (CuPy) and its result back: ``out`` as
    NumPy takes it, written from a device result of its shape and dtype."""
    import cupy

    @functools.wraps(function)
    def call(a, *args, out=None, **kwargs):
        a = numpy.asarray(a)
        if a.dtype.name in LONG_DOUBLES:
            pytest.skip("long double has no GPU FFT")
        x = cupy.asarray(a)
        if out is None:
            return cupy.asnumpy(function(x, *args, **kwargs))
        if not isinstance(out, numpy.ndarray):  # (accelmath's error for it)
            return function(x, *args, out=out, **kwargs)
        target = cupy.empty(out.shape, out.dtype)
        function(x, *args, out=target, **kwargs)
        out[...] = cupy.asnumpy(target)
        return out

    return call


for _name in NAMES:
    _function = getattr(accelmath.fft, _name)
    if os.environ["ACCELMATH_NUMPY_SUITE"] == "cupy":
        _function = _on_gpu(_function)
    setattr(numpy.fft, _name, _function)


# NumPy's tests that cannot apply on the GPU: cuFFT rounds a double-precision transform of
# several axes of a Fortran-ordered array otherwise than of a C-ordered one, by more than these
# tests' 5e-15
_NOT_ON_THE_GPU = tuple(f"test_fft_with_order[{name}-F-{dtype}]"
                        for name in ("fft2", "ifft2", "fftn", "ifftn")
                        for dtype in ("float64", "complex128"))


def pytest_collection_modifyitems(items):
    if os.environ["ACCELMATH_NUMPY_SUITE"] == "cupy":
        for item in items:
            if item.name in _NOT_ON_THE_GPU:
                item.add_marker(pytest.mark.skip(reason="cuFFT's rounding differs by layout"))


def calls():
    """How many transforms reached accelmath."""
    return _calls[0]
'''


def run_suite(tmp_path, mode):
    """Run NumPy's FFT tests on accelmath (``mode`` "numpy" or "cupy"); return the outcomes:
    outcome -> test ids, and "calls"."""
    return numpy_suites.run(tmp_path, SUITE, [str(SUITE)], "accelmath_numpy_suite", PLUGIN,
                            mode, "FFT")


def test_numpy_fft_suite_on_the_cpu(tmp_path, record_property):
    outcomes = run_suite(tmp_path, "numpy")
    passed = len(outcomes.get("passed", []))
    record_property("numpy_suite_passed", passed)
    # every test of the suite ran (148 in NumPy 2.4), and through accelmath
    assert passed >= 140 and not outcomes.get("skipped")
    assert outcomes["calls"] > 3000


@pytest.mark.gpu
def test_numpy_fft_suite_on_cupy_arrays(tmp_path, record_property):
    pytest.importorskip("cupy")
    outcomes = run_suite(tmp_path, "cupy")
    passed = len(outcomes.get("passed", []))
    record_property("numpy_suite_passed", passed)
    # (skipped: the layouts above, and long double, which has no GPU FFT)
    assert passed >= 135 and len(outcomes.get("skipped", [])) <= 10
    assert outcomes["calls"] > 3000
