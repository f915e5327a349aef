"""NumPy's own tests of its solvers (``numpy/linalg/tests/test_linalg.py``, as installed), run
with ``numpy.linalg``'s functions replaced by accelmath's: on the CPU path, and (``gpu``) with
every input moved to the GPU as a CuPy array and every result brought back.

The functions are replaced before NumPy's test module is imported, in a pytest process of its
own with the plugin :data:`PLUGIN` loaded by ``-p``. Only the classes of :data:`CLASSES` run.
The plugin counts the calls that reach accelmath; ``numpy_suites`` writes them and the
outcomes to a JSON file; a failure of any of NumPy's tests fails the test here, naming it.
"""

from pathlib import Path

import numpy as np
import numpy_suites
import pytest

SUITE = Path(np.__file__).parent / "linalg" / "tests" / "test_linalg.py"

# the classes the issue names (with the Cases classes that hold eigh's and eigvalsh's checks)
CLASSES = ("TestSolve", "TestInv", "TestDet", "TestLstsq", "TestQR", "TestCholesky",
           "TestEigh", "TestEighCases", "TestEigvalsh", "TestEigvalshCases", "TestSVD",
           "TestSVDHermitian")

PLUGIN = '''
"""Replace numpy.linalg's solvers by accelmath.linalg's for this pytest process (imported by
-p, before any test module is collected)."""

import functools
import os

import numpy

from accelmath import linalg

NAMES = ("solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh", "svd",
         "svdvals", "lstsq")
_calls = {}


def _to_gpu(x):
    import cupy

    if isinstance(x, numpy.ndarray) or isinstance(x, list):
        return cupy.asarray(x)
    return x


def _to_host(x):
    import cupy

    if isinstance(x, cupy.ndarray):
        return x.get()
    if isinstance(x, tuple):
        return type(x)(*map(_to_host, x)) if hasattr(x, "_fields") else tuple(map(_to_host, x))
    return x


def _replacement(name):
    function = getattr(linalg, name)
    on_gpu = os.environ["ACCELMATH_NUMPY_SUITE"] == "cupy"

    @functools.wraps(function)
    def call(*args, **kwargs):
        _calls[name] = _calls.get(name, 0) + 1
        if on_gpu:
            return _to_host(function(*map(_to_gpu, args), **kwargs))
        return function(*args, **kwargs)

    return call


for _name in NAMES:
    setattr(numpy.linalg, _name, _replacement(_name))

# On the GPU, four tests check what a CuPy array cannot carry back (an ndarray subclass, a
# NumPy scalar): they are left out. cuSOLVER's single-precision results differ from LAPACK's
# in the last digits, within the backward-error bound (a few n * eps * |a|), so single
# precision is checked to 5 decimals there, not NumPy's 6; determinants, products of the
# pivots, to 4 (-36.00002 for -36 is 4 units in the last place of float32).
GPU_LEFT_OUT = {
    "TestSolve::test_0_size": "checks that an ndarray subclass comes back",
    "TestSolve::test_0_size_k": "checks that an ndarray subclass comes back",
    "TestInv::test_0_size": "checks that an ndarray subclass comes back",
    "TestDet::test_zero": "checks that one matrix's determinant is a NumPy scalar",
}
GPU_SINGLE_DECIMALS = {"TestDet": 4}
GPU_SINGLE_DECIMAL = 5
_assert_almost_equal = {}  # NumPy's test module -> its own assert_almost_equal


def pytest_collection_modifyitems(config, items):
    if os.environ["ACCELMATH_NUMPY_SUITE"] != "cupy":
        return
    left_out = [item for item in items if item.nodeid.split("::", 1)[-1] in GPU_LEFT_OUT]
    items[:] = [item for item in items if item not in left_out]
    config.hook.pytest_deselected(items=left_out)


def pytest_runtest_setup(item):
    if os.environ["ACCELMATH_NUMPY_SUITE"] != "cupy":
        return
    module = item.module
    original = _assert_almost_equal.setdefault(module, module.assert_almost_equal)
    decimal = GPU_SINGLE_DECIMALS.get(item.cls.__name__ if item.cls else "", GPU_SINGLE_DECIMAL)
    module.assert_almost_equal = functools.partial(original, single_decimal=decimal)


def calls():
    """How many calls of each function reached accelmath."""
    return _calls
'''


def run_suite(tmp_path, mode):
    """Run NumPy's solver tests on accelmath (``mode`` "numpy" or "cupy"); return the
    outcomes: outcome -> test ids, and "calls" (function -> count)."""
    return numpy_suites.run(tmp_path, SUITE, [f"{SUITE}::{name}" for name in CLASSES],
                            "accelmath_numpy_linalg_suite", PLUGIN, mode, "linalg")


def _check_coverage(outcomes):
    """Every class ran, and every replaced function was called."""
    passed = outcomes.get("passed", [])
    for name in CLASSES:
        assert any(f"::{name}::" in test for test in passed), f"no test of {name} ran"
    calls = outcomes["calls"]
    missing = [name for name in ("solve", "inv", "det", "slogdet", "cholesky", "qr", "eigh",
                                 "eigvalsh", "svd", "svdvals", "lstsq") if not calls.get(name)]
    assert not missing, f"never called through accelmath: {missing}"
    return passed


def test_numpy_linalg_suite_on_the_cpu(tmp_path, record_property):
    outcomes = run_suite(tmp_path, "numpy")
    passed = _check_coverage(outcomes)
    record_property("numpy_suite_passed", len(passed))
    assert not outcomes.get("skipped")
    assert sum(outcomes["calls"].values()) > 2000


@pytest.mark.gpu
def test_numpy_linalg_suite_on_cupy_arrays(tmp_path, record_property):
    pytest.importorskip("cupy")
    outcomes = run_suite(tmp_path, "cupy")
    assert len(outcomes.get("deselected", [])) == 4  # GPU_LEFT_OUT
    passed = _check_coverage(outcomes)
    record_property("numpy_suite_passed", len(passed))
