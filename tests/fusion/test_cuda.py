"""The CUDA back end: every construct in every dtype is written as a kernel that NVRTC
compiles (no GPU needed), flat and strided; constants are exact; and, on a GPU, each fused
kernel's result matches the NumPy evaluator's on fresh random data, on CuPy, torch and JAX
arrays, broadcast and strided, on the caller's stream."""

import math

import numpy as np
import pytest
from fusion_constructs import CONSTRUCTS, cases, draw

from accelmath._core.gpu.modules import CompileOptions, compile_cuda
from accelmath._core.operand import wrap_operand
from accelmath.fusion import elementwise, frequency, index, trace
from accelmath.fusion._cuda import Layout, _literal, source
from accelmath.fusion._evaluate import Axes, evaluate
from accelmath.fusion._launch import kernel_call

# the largest error of one construct's fused result, in units of the dtype's epsilon times
# the result's largest magnitude: CUDA's exp, log, pow and tanh are within a few ulp of
# NumPy's, and an error in x is carried by pow and exp through |x| up to 2
_ULPS = 64


@pytest.mark.parametrize("name, dtype", cases())
def test_every_construct_compiles(nvrtc, name, dtype):
    fn = CONSTRUCTS[name][0]
    expression = trace(fn, dtype, dtype, 0.5)
    flat = source(expression, Layout(True, 0))
    assert compile_cuda(flat, CompileOptions(arch=(9, 0)))[:4] == b"\x7fELF"
    strided = source(expression, Layout(False, 3))
    assert "struct Dims" in strided and "struct Dims" not in flat
    compile_cuda(strided, CompileOptions(arch=(8, 0)))


@pytest.mark.parametrize("out_dtype", ["float16", "float32", "complex64", "bool"])
def test_index_frequency_and_narrowing_stores_compile(nvrtc, out_dtype):
    e = trace(lambda x, s: x * frequency(0) + index(-1) * s, np.float64, 2.0)
    code = source(e, Layout(True, 2), out_dtype)
    compile_cuda(code, CompileOptions(arch=(9, 0)))


def test_constants_are_written_exactly():
    assert _literal(math.inf, np.dtype("float64")) == "__longlong_as_double((long long)0x7ff0000000000000ULL)"
    assert _literal(-0.0, np.dtype("float64")) == "__longlong_as_double((long long)0x8000000000000000ULL)"
    assert _literal(0.1, np.dtype("float32")) == "__int_as_float(1036831949)"
    assert _literal(-3, np.dtype("int64")) == "((long long)0xfffffffffffffffdULL)"
    assert _literal(-2**63, np.dtype("int64")) == "((long long)0x8000000000000000ULL)"
    assert _literal(True, np.dtype("bool")) == "true"
    assert _literal(1 + 2j, np.dtype("complex64")) == \
        "mk(__int_as_float(1065353216), __int_as_float(1073741824))"
    e = trace(lambda x: x * np.complex64(1 + 2j) + np.complex128(3j), np.complex64)
    compile_cuda(source(e, Layout(True, 0)), CompileOptions(arch=(9, 0)))
    e = trace(lambda x, i: np.where(x > 0, x, -0.0) + (i * -9223372036854775807 - 1),
              np.float64, np.int64)
    compile_cuda(source(e, Layout(True, 0)), CompileOptions(arch=(9, 0)))


def test_the_source_does_not_depend_on_scalar_values_or_sizes():
    fn = lambda x, s: x * s + 1.0  # noqa: E731
    assert source(trace(fn, np.float32, 2.0), Layout(True, 0)) == \
        source(trace(fn, np.float32, 9.0), Layout(True, 0))


def test_a_layout_seen_before_reuses_its_arguments_and_takes_the_new_pointers():
    e = trace(lambda x, y, s: x * y + s, np.float64, np.float64, 2.0)
    rng = np.random.default_rng()

    def call(x, y, out, s=2.0):
        values = [wrap_operand(x), wrap_operand(y), s]
        return kernel_call(e, values, wrap_operand(out), Axes(out.shape))

    x, y, out = rng.standard_normal((3, 5, 4))
    first_layout, first = call(x.T, y[0], out.T)
    x2, y2, out2 = rng.standard_normal((3, 5, 4))
    layout, again = call(x2.T, y2[0], out2.T, 7.0)
    assert layout == first_layout and not layout.flat
    assert again[-1] is first[-1]  # (the Dims struct: made once for the layout)
    assert [a.value for a in again[:3]] == [x2.ctypes.data, y2.ctypes.data, out2.ctypes.data]
    assert again[3].value == 7.0 and again[4].value == 20
    flat_layout, flat = call(x, y, out)  # (another layout: its own arguments)
    assert flat_layout.flat and len(flat) == 5 and flat[-1].value == 20


def test_a_fused_call_remembers_its_checks_with_its_function_per_signature():
    from accelmath.fusion._elementwise import Traced, apply
    from accelmath.linalg import matmul
    from accelmath.linalg._matmul import fused

    rng = np.random.default_rng()
    fn = Traced(lambda y, b: y * b + 1.0)
    for shape in ((4, 5), (4, 5), (6, 5)):
        y, b = rng.standard_normal((2,) + shape)
        got = apply(fn, wrap_operand(y), (), [wrap_operand(b)], None, None, in_place=False)
        np.testing.assert_allclose(got, y * b + 1.0)
    assert len(fn.applied) == 2  # (one per signature of the values)
    epilogue = lambda acc, bias: np.exp(acc) + bias  # noqa: E731  (no native head: one pass)
    for _ in range(2):
        a, w, bias = rng.standard_normal((3, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2)
        np.testing.assert_allclose(matmul(a, w, epilogue=epilogue, epilogue_args=(bias,)),
                                   np.exp(a @ w) + bias)
    assert len(fused._fixed(trace(epilogue, np.float64, np.float64)).applied) == 1


# -- on a GPU -------------------------------------------------------------------------------

def _check(got, expected, dtype):
    eps = np.finfo(np.dtype(dtype)).eps
    expected = np.asarray(expected)
    scale = np.max(np.abs(expected[np.isfinite(expected)]), initial=1.0)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=_ULPS * eps,
                               atol=_ULPS * eps * scale)


@pytest.mark.gpu
@pytest.mark.parametrize("name, dtype", cases())
def test_every_construct_on_cupy_matches_the_evaluator(cp, name, dtype):
    fn = CONSTRUCTS[name][0]
    rng = np.random.default_rng()
    x, y = draw(rng, dtype, (33, 65)), draw(rng, dtype, (65,))
    s = float(rng.uniform(0.5, 2.0))
    expected = evaluate(trace(fn, dtype, dtype, s), [x, y, s])
    got = elementwise(fn)(cp.asarray(x), cp.asarray(y), s)
    assert isinstance(got, cp.ndarray) and got.dtype == expected.dtype
    _check(got.get(), expected, dtype)


@pytest.mark.gpu
def test_strided_broadcast_and_out_on_cupy(cp):
    rng = np.random.default_rng()
    x = draw(rng, "float64", (6, 40))[:, ::3]
    y = draw(rng, "float64", (6, 1))
    fn = lambda a, b, s: np.where(a > b, a * s, b) + index(0) - frequency(1)  # noqa: E731
    f = elementwise(fn)
    expected = evaluate(trace(fn, "float64", "float64", 2.0), [x, y, 2.0])
    _check(f(cp.asarray(x), cp.asarray(y), 2.0).get(), expected, "float64")
    out = cp.zeros((14, 6), cp.float64).T
    assert f(cp.asarray(x), cp.asarray(y), 2.0, out=out) is out
    _check(out.get(), expected, "float64")


@pytest.mark.gpu
def test_new_scalars_and_shapes_reuse_the_kernel(cp, monkeypatch):
    from accelmath.fusion import _launch

    f = elementwise(lambda x, s: x * s)
    f(cp.ones(10), 1.0)
    count = len(_launch._kernels)
    for s, n in ((2.0, 10), (3.0, 1000), (-1.5, 7)):
        assert f(cp.ones(n), s).get().tolist() == [s] * n
    assert len(_launch._kernels) == count


@pytest.mark.gpu
def test_torch_tensors_on_a_side_stream(torch_cuda):
    torch = torch_cuda
    rng = np.random.default_rng()
    x = draw(rng, "float32", (257, 31))
    fn = lambda a, s: np.tanh(a) * s + np.float32(1)  # noqa: E731
    expected = evaluate(trace(fn, "float32", 0.5), [x, 0.5])
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        tx = torch.from_numpy(x).cuda()
        got = elementwise(fn)(tx, 0.5)
    stream.synchronize()
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    _check(got.cpu().numpy(), expected, "float32")


@pytest.mark.gpu
def test_jax_arrays(jax_gpu):
    jnp = jax_gpu.numpy
    rng = np.random.default_rng()
    x = draw(rng, "complex128", (17, 9))
    fn = lambda a: np.exp(a) * np.conj(a)  # noqa: E731
    got = elementwise(fn)(jnp.asarray(x))
    _check(np.asarray(got), evaluate(trace(fn, "complex128"), [x]), "complex128")
