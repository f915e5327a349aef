"""NumPy's own matmul tests (``MatmulCommon`` and ``TestMatmul`` in
``numpy/_core/tests/test_multiarray.py``, as installed), run with ``numpy.matmul`` replaced by
``accelmath.linalg.matmul``: on the CPU path (NumPy arrays, and torch CPU tensors over the same
memory), and (``gpu``) with every input moved to the GPU as a CuPy array of the same strides and
every result brought back.

``TestMatmul`` takes ``np.matmul`` when its class is made (``matmul = np.matmul``) and again
when its tests run. Both are replaced once NumPy's test module is collected, for that module
alone: its class attribute, and its global ``np`` by a stand-in for NumPy whose ``matmul`` is
accelmath's (accelmath's CPU path computes with ``numpy.matmul`` itself, which stays NumPy's).
The tests run in a pytest process of their own, with the plugin :data:`PLUGIN` loaded by
``-p``.

Dtypes. accelmath's matmul is floating point only, so the loops of ``MatmulCommon`` run over
float16, float32, float64, complex64 and complex128 (NumPy's ``types`` less the integers,
long double and object); bool stays first in the list because NumPy's value tests drop
``types[0]``, taking it to be bool, and test bool apart. Where a test hands matmul bool (or any
other non-floating) operands, the replacement checks that accelmath refuses them with its own
``TypeError`` or ``ValueError``, then lets NumPy compute the value so that the test goes on to
its next floating-point case. The tests that take only object or bool operands are skipped
(:data:`NOT_FLOATING`), as are those whose expectation is NumPy's own casting of ``out=``
(:data:`NUMPY_ONLY`); the calls they would make are tested below, on accelmath's terms.

On the GPU, NumPy's ``out=`` goes in as a CuPy array of its strides (and its values back).

The plugin counts the calls that reach accelmath (by dtype); ``numpy_suites`` writes them
and the outcomes to a JSON file; a failure of any of NumPy's tests fails the test here, naming it.
"""

import json
from pathlib import Path

import numpy as np
import numpy_suites
import pytest

SUITE = Path(np.__file__).parent / "_core" / "tests" / "test_multiarray.py"
CLASS = "TestMatmul"
FLOATING = ("float16", "float32", "float64", "complex64", "complex128")

PLUGIN = '''
"""Replace numpy.matmul by accelmath.linalg.matmul in NumPy's TestMatmul (imported by -p)."""

import json
import os
import types

import numpy
import pytest

import accelmath.errors
import accelmath.linalg

MODE = os.environ["ACCELMATH_NUMPY_SUITE"]  # "numpy", "torch" (CPU tensors) or "cupy"
# bool first: NumPy's value tests loop over types[1:] and test bool apart
TYPES = "?efdFD"
SKIPPED = json.loads(os.environ["ACCELMATH_NUMPY_SUITE_SKIP"])
_calls = {"accelmath": {}, "refused (not floating point)": {}}


def _floating(x):
    return numpy.asarray(x).dtype.kind in "fc"


def _count(kind, *operands):
    key = "@".join(numpy.asarray(x).dtype.name for x in operands)
    _calls[kind][key] = _calls[kind].get(key, 0) + 1


def _to_cupy(x):
    """A CuPy array holding ``x``, with ``x``'s strides where they are positive (a transposed
    or strided view stays one on the GPU)."""
    import cupy

    if x.size == 0 or any(s <= 0 or s % x.itemsize for s in x.strides):
        return cupy.array(x)
    span = sum((n - 1) * s for n, s in zip(x.shape, x.strides)) // x.itemsize + 1
    memory = cupy.zeros(span, x.dtype)
    view = cupy.ndarray(x.shape, x.dtype, memptr=memory.data, strides=x.strides)
    view[...] = cupy.asarray(x.copy())  # (a C-ordered copy, 0-d included)
    return view


def _to_torch(x):
    """A torch CPU tensor over ``x``'s memory (its strides), or over a copy where a stride is
    negative."""
    import torch

    return torch.from_numpy(x if all(s >= 0 for s in x.strides) else x.copy())


def to_package(x):
    """``x`` (array_like) as an array of the suite's package."""
    x = numpy.asarray(x)
    return _to_cupy(x) if MODE == "cupy" else _to_torch(x) if MODE == "torch" else x


def to_numpy(x):
    """A result of the suite's package as NumPy's: a scalar where it is 0-d."""
    if MODE != "numpy":
        x = x.get() if MODE == "cupy" else x.numpy()
        return x[()] if x.ndim == 0 else x
    return x


def _into(x, y, out, kwargs):
    """The product into NumPy's ``out``, through an ``out=`` of the suite's package: on the
    GPU a copy of ``out`` of its strides, on the CPU ``out``'s own memory."""
    target = to_package(out)
    result = accelmath.linalg.matmul(x, y, out=target, **kwargs)
    assert result is target, "accelmath.linalg.matmul did not return out="
    out[...] = to_numpy(target)
    return out


class Matmul:
    """numpy.matmul's signature (out= positional or keyword) on accelmath.linalg.matmul, whose
    third positional argument is ``c``. An instance, not a function, so that the class
    attribute ``TestMatmul.matmul`` does not become a bound method."""

    def __call__(self, a, b, out=None, **kwargs):
        if not (_floating(a) and _floating(b)):
            return self.refused(a, b, out, kwargs)
        _count("accelmath", a, b)
        if MODE == "numpy":
            return accelmath.linalg.matmul(a, b, out=out, **kwargs)
        x, y = to_package(a), to_package(b)
        if out is None:
            return to_numpy(accelmath.linalg.matmul(x, y, **kwargs))
        if not isinstance(out, numpy.ndarray):  # (accelmath's error for it)
            return accelmath.linalg.matmul(x, y, out=out, **kwargs)
        return _into(x, y, out, kwargs)

    @staticmethod
    def refused(a, b, out, kwargs):
        """accelmath must refuse non-floating operands clearly; NumPy's value lets the test go
        on to its next case."""
        _count("refused (not floating point)", a, b)
        try:
            accelmath.linalg.matmul(to_package(a), to_package(b))
        except accelmath.errors.AccelmathError as exc:
            assert isinstance(exc, (TypeError, ValueError)), repr(exc)
        else:
            raise AssertionError(f"accelmath.linalg.matmul took {numpy.asarray(a).dtype} @ "
                                 f"{numpy.asarray(b).dtype} operands (floating point only)")
        return numpy.matmul(a, b, out=out, **kwargs)


class NumpyWithMatmul(types.ModuleType):
    """NumPy, with accelmath's matmul: the global ``np`` of NumPy's test module."""

    matmul = Matmul()

    def __getattr__(self, name):
        return getattr(numpy, name)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.cls is not None and item.cls.__name__ == "TestMatmul":
            item.module.np = NumpyWithMatmul("numpy")
            item.cls.matmul = NumpyWithMatmul.matmul
            item.cls.types = TYPES
            if item.originalname in SKIPPED:
                item.add_marker(pytest.mark.skip(reason=SKIPPED[item.originalname]))


def calls():
    """How many calls reached accelmath, and how many it refused, by operand dtypes."""
    return _calls
'''

NOT_FLOATING = {name: "object or bool operands only: accelmath's matmul is floating point only"
                for name in ("test_matmul_object", "test_matmul_object_type_scalar",
                             "test_matmul_empty", "test_matmul_exception_multiply",
                             "test_matmul_exception_add", "test_matmul_bool")}
NUMPY_ONLY = {"test_out_arg": "casts the result into an out= of a wider dtype (complex128 for "
                              "a float64 product), where accelmath takes out= of the result's "
                              "dtype only: see test_out_keyword and test_out_of_another_dtype"}


def run_suite(tmp_path, mode):
    """Run NumPy's matmul tests on accelmath (``mode`` "numpy", "torch" or "cupy"); return the
    outcomes: outcome -> test ids, and "calls" (kind -> operand dtypes -> count)."""
    return numpy_suites.run(
        tmp_path, SUITE, [f"{SUITE}::{CLASS}"], "accelmath_numpy_matmul_suite", PLUGIN, mode,
        "matmul", {"ACCELMATH_NUMPY_SUITE_SKIP": json.dumps({**NOT_FLOATING, **NUMPY_ONLY})})


def _check_coverage(outcomes):
    """Only the listed tests were skipped, the rest passed, every floating dtype reached
    accelmath, and bool operands were refused."""
    skipped = {test.split("::")[-1].split("[")[0] for test in outcomes.get("skipped", [])}
    assert skipped <= set(NOT_FLOATING) | set(NUMPY_ONLY), skipped
    passed = outcomes.get("passed", [])
    # 54 tests in NumPy 2.4, less the skipped ones
    assert len(passed) >= 40, passed
    calls = outcomes["calls"]["accelmath"]
    for dtype in FLOATING:
        assert calls.get(f"{dtype}@{dtype}", 0) >= 10, (dtype, calls)
    assert sum(calls.values()) > 300, calls
    assert sum(outcomes["calls"]["refused (not floating point)"].values()) > 20
    return passed


def test_numpy_matmul_suite_on_the_cpu(tmp_path, record_property):
    outcomes = run_suite(tmp_path, "numpy")
    passed = _check_coverage(outcomes)
    record_property("numpy_suite_passed", len(passed))


def test_numpy_matmul_suite_on_torch_cpu_tensors(tmp_path, record_property):
    pytest.importorskip("torch")
    outcomes = run_suite(tmp_path, "torch")
    passed = _check_coverage(outcomes)
    record_property("numpy_suite_passed", len(passed))


@pytest.mark.gpu
def test_numpy_matmul_suite_on_cupy_arrays(tmp_path, record_property):
    pytest.importorskip("cupy")
    outcomes = run_suite(tmp_path, "cupy")
    passed = _check_coverage(outcomes)
    record_property("numpy_suite_passed", len(passed))


# --- the calls of test_out_arg, on accelmath's terms -----------------------------------------

def _operands(xp):
    """Fresh float64 operands of a 5 x 3 by 3 x 2 product, in NumPy and in ``xp``."""
    rng = np.random.default_rng()
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((3, 2))
    return a, b, xp.asarray(a), xp.asarray(b)


def _out_keyword(xp, to_numpy):
    from accelmath.linalg import matmul

    a, b, x, y = _operands(xp)
    out = xp.zeros((5, 2))
    assert matmul(x, y, out=out) is out
    np.testing.assert_allclose(to_numpy(out), a @ b, rtol=1e-12, atol=1e-12)


def _out_of_another_dtype(xp):
    from accelmath.errors import UnsupportedDTypeError
    from accelmath.linalg import matmul

    _, _, x, y = _operands(xp)
    for dtype in ("int32", "float32", "complex128"):
        with pytest.raises(UnsupportedDTypeError, match="out") as info:
            matmul(x, y, out=xp.zeros((5, 2), dtype=dtype))
        assert isinstance(info.value, TypeError)
        assert dtype in str(info.value) and "float64" in str(info.value)


def test_out_keyword():
    _out_keyword(np, np.asarray)


def test_out_of_another_dtype():
    _out_of_another_dtype(np)


@pytest.mark.gpu
def test_out_keyword_on_cupy_arrays(cp):
    _out_keyword(cp, cp.asnumpy)


@pytest.mark.gpu
def test_out_of_another_dtype_on_cupy_arrays(cp):
    _out_of_another_dtype(cp)
