"""Random expressions, fresh each run: the tracer's dtype is NumPy's, the evaluator's values
are NumPy's own, and the fused kernel's source, compiled as host C++ and called with the
launch's arguments, gives the evaluator's values. The seed is in the test's id, so a failure
repeats with it."""

import shutil

import numpy as np
import pytest
from fusion_constructs import compile_for_host

from accelmath._core.operand import wrap_operand
from accelmath.fusion import gelu, relu, sigmoid, trace
from accelmath.fusion._cuda import _PRELUDE, source
from accelmath.fusion._evaluate import Axes, evaluate
from accelmath.fusion._launch import kernel_call

SEED = int(np.random.default_rng().integers(2**31))
COUNT = 60

_UNARY_ANY = [lambda a: -a, lambda a: abs(a), lambda a: np.exp(a * 0.25), np.tanh,
              lambda a: np.sqrt(abs(a) + 0.5), lambda a: np.log(abs(a) + 0.5), np.sin,
              np.cos, np.conj, np.real, lambda a: a * a]
_UNARY_REAL = [relu, gelu, sigmoid]
_BINARY_ANY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
               lambda a, b: a / (abs(b) + 1.0)]
_BINARY_REAL = [np.maximum, np.minimum, lambda a, b: np.where(a > b, a, b * 0.5),
                lambda a, b: np.where((a < 0.3) | (b >= a), a - b, a)]


def _expression(rng, depth, real):
    """A random function of (x, y, s) as nested closures over the choices made here."""
    if depth == 0 or rng.random() < 0.2:
        leaf = int(rng.integers(4))
        constant = float(rng.choice([0.5, 2.0, -1.5, 3.0]))
        return [lambda x, y, s: x, lambda x, y, s: y, lambda x, y, s: s,
                lambda x, y, s: x * constant][leaf]
    if rng.random() < 0.45:
        pool = _UNARY_ANY + (_UNARY_REAL if real else [])
        op = pool[int(rng.integers(len(pool)))]
        inner = _expression(rng, depth - 1, real)
        return lambda x, y, s: op(inner(x, y, s))
    pool = _BINARY_ANY + (_BINARY_REAL if real else [])
    op = pool[int(rng.integers(len(pool)))]
    left, right = _expression(rng, depth - 1, real), _expression(rng, depth - 1, real)
    return lambda x, y, s: op(left(x, y, s), right(x, y, s))


def _cases():
    rng = np.random.default_rng(SEED)
    made = []
    for number in range(COUNT):
        dtype = str(rng.choice(["float16", "float32", "float64", "complex64", "complex128"]))
        fn = _expression(rng, 4, np.dtype(dtype).kind != "c")
        made.append(pytest.param(number, dtype, fn, id=f"seed{SEED}-{number}-{dtype}"))
    return made


def _tolerance(dtype):
    """A relative error that rounding through a random chain of up to 16 operations (exp,
    products) stays within, and a semantic mistake does not: a million units in the last
    place of single precision, a thousand of double. A chain that starts in single precision
    keeps its error when a double scalar widens it."""
    if dtype == np.float16:  # (rounded to half precision after every operation)
        return 5e-2
    return 1e-4 if dtype in (np.float32, np.complex64) else 1e-12


def _compare(got, expected, dtype, where):
    """``got`` against ``expected`` where the chain stayed in range: where its magnitude is
    below the point where one side may round to infinity and the other not (a random chain of
    squares and exponentials reaches it now and then), the values agree to the tolerance."""
    tolerance = max(_tolerance(np.dtype(dtype)), _tolerance(expected.dtype))
    limit = 1e3 if np.dtype(dtype) == np.float16 else 1e30
    kept = np.isfinite(expected) & (np.abs(expected) < limit)
    scale = np.max(np.abs(expected[kept]), initial=1.0)
    np.testing.assert_allclose(got[kept], expected[kept], rtol=tolerance,
                               atol=tolerance * scale, err_msg=where)


def _draw(rng, dtype, shape):
    values = rng.uniform(-2, 2, shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.uniform(-2, 2, shape)
    return values.astype(dtype)


@pytest.mark.parametrize("number, dtype, fn", _cases())
def test_random_expressions_trace_and_evaluate_as_numpy(number, dtype, fn):
    rng = np.random.default_rng(SEED + number)
    x, y = _draw(rng, dtype, (3, 4)), _draw(rng, dtype, (4,))
    with np.errstate(all="ignore"):
        expected = np.asarray(fn(x, y, 0.75))
    expression = trace(fn, dtype, dtype, 0.75)
    assert expression.dtype == expected.dtype
    got = evaluate(expression, [x, y, 0.75])
    _compare(got, np.broadcast_to(expected, got.shape), dtype, f"seed {SEED}, {number}")


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_random_expressions_run_as_kernels(tmp_path):
    rng = np.random.default_rng(SEED)
    cases, sources = [], {}
    for number, param in enumerate(_cases()):
        _, dtype, fn = param.values
        x, y = _draw(rng, dtype, (5, 6)).T, _draw(rng, dtype, (5,))  # (strided, broadcast)
        expression = trace(fn, dtype, dtype, 0.75)
        expected = evaluate(expression, [x, y, 0.75])
        out = np.zeros((5, 6), expected.dtype).T
        layout, arguments = kernel_call(expression, [wrap_operand(x), wrap_operand(y), 0.75],
                                        wrap_operand(out), Axes(out.shape))
        sources[f"fuzz_{number}"] = source(expression, layout)[len(_PRELUDE):]
        cases.append((number, dtype, arguments, out, expected, (x, y)))  # (x, y kept alive)
    library = compile_for_host(sources, tmp_path)
    for number, dtype, arguments, out, expected, _ in cases:
        function = getattr(library, f"fuzz_{number}")
        function.restype = None
        function(*arguments)
        _compare(out, expected, dtype, f"seed {SEED}, case {number} ({dtype})")
