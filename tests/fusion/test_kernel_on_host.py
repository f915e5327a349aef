"""The fused kernels' CUDA source, compiled as host C++ (g++: ``__global__`` a plain function,
one thread walking every element) and called through ctypes with the very arguments the
launch passes (pointers, scalars, the ``Dims`` struct): every construct and dtype, flat, with a
one-element array and strided with broadcasting, matches the NumPy evaluator. What runs on a
GPU differs only in the launch and CUDA's math library."""

import shutil

import numpy as np
import pytest
from fusion_constructs import CONSTRUCTS, cases, compile_for_host, draw

from accelmath._core.operand import wrap_operand
from accelmath.fusion import frequency, index, trace
from accelmath.fusion._cuda import _PRELUDE, source
from accelmath.fusion._evaluate import Axes, evaluate
from accelmath.fusion._launch import kernel_call

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


VARIANTS = ("flat", "single", "strided", "strided wide")


def _operands(rng, variant, dtype):
    """x, y and the result's shape of a variant (x and y of ``dtype``)."""
    if variant == "flat":
        return draw(rng, dtype, (4, 5)), draw(rng, dtype, (4, 5))
    if variant == "single":
        return draw(rng, dtype, (4, 5)), draw(rng, dtype, (1,))
    return draw(rng, dtype, (5, 4)).T, draw(rng, dtype, (5,))  # (strided, narrow or wide)


def _cases():
    made = []
    for name, dtype in cases():
        for variant in VARIANTS:
            made.append((name, dtype, variant))
    return made


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """Every case's kernel in one host library: ``{(name, dtype, variant): function}``, with
    the inputs each was built for."""
    rng = np.random.default_rng()
    sources, built = {}, {}
    extra = {"index and frequency": (lambda x, y, s: x * frequency(0) + y * index(1) - s,
                                     ("float64", "complex64"))}
    all_cases = _cases() + [(name, d, v) for name, (_, dtypes) in extra.items()
                            for d in dtypes for v in VARIANTS]
    for number, (name, dtype, variant) in enumerate(all_cases):
        fn = CONSTRUCTS[name][0] if name in CONSTRUCTS else extra[name][0]
        x, y = _operands(rng, variant, dtype)
        s = float(rng.uniform(0.5, 2.0))
        expression = trace(fn, dtype, dtype, s)
        expected = evaluate(expression, [x, y, s])
        out = np.zeros((5, 4), expected.dtype).T if variant.startswith("strided") else \
            np.zeros_like(expected)
        values = [wrap_operand(x), wrap_operand(y), s]
        layout, arguments = kernel_call(expression, values, wrap_operand(out), Axes(out.shape))
        if variant.startswith("strided"):
            assert not layout.flat and layout.narrow
            if variant == "strided wide":  # (as for 2^32 elements or more: 64-bit division)
                layout = layout._replace(narrow=False)
        else:
            assert layout.flat and layout.single == ((1,) if variant == "single" else ())
        sources[f"am_case_{number}"] = source(expression, layout)[len(_PRELUDE):]
        built[name, dtype, variant] = (number, arguments, out, expected, (x, y))
    return compile_for_host(sources, tmp_path_factory.mktemp("host_kernels")), built


def _check(got, expected, dtype):
    eps = np.finfo(np.dtype(dtype)).eps
    finite = np.isfinite(expected)
    scale = np.max(np.abs(expected[finite]), initial=1.0)
    np.testing.assert_allclose(got, expected, rtol=64 * eps, atol=64 * eps * scale)


@pytest.mark.parametrize("name, dtype, variant",
                         _cases() + [("index and frequency", d, v)
                                     for d in ("float64", "complex64") for v in VARIANTS])
def test_the_kernel_matches_the_evaluator(library, name, dtype, variant):
    lib, built = library
    number, arguments, out, expected, _ = built[name, dtype, variant]
    function = getattr(lib, f"am_case_{number}")
    function.restype = None
    function(*arguments)
    assert out.dtype == expected.dtype
    _check(out, expected, dtype)
