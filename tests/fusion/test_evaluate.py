"""The NumPy back end: a traced function evaluated node by node equals the function run by
NumPy on the arrays themselves (to a few units in the last place: commutative arguments are
reordered, and NumPy's loops round a broadcast product by its own path); index and frequency are NumPy's aranges and
fftfreq/rfftfreq; the CPU path of elementwise keeps the caller's kind."""

import numpy as np
import pytest
from fusion_constructs import CONSTRUCTS, cases, draw

from accelmath.errors import InvalidArgumentError, UnsupportedOperandError
from accelmath.fusion import elementwise, frequency, index, trace
from accelmath.fusion._evaluate import Axes, evaluate


@pytest.mark.parametrize("name, dtype", cases())
def test_the_evaluator_is_numpy_itself(name, dtype):
    fn = CONSTRUCTS[name][0]
    rng = np.random.default_rng()
    x, y = draw(rng, dtype, (4, 5)), draw(rng, dtype, (5,))
    s = float(rng.uniform(0.5, 2.0))
    with np.errstate(all="ignore"):
        expected = np.broadcast_to(fn(x, y, s), (4, 5))
    got = evaluate(trace(fn, dtype, dtype, s), [x, y, s])
    assert got.dtype == expected.dtype
    eps = np.finfo(dtype).eps
    scale = np.max(np.abs(expected[np.isfinite(expected)]), initial=1.0)
    np.testing.assert_allclose(got, expected, rtol=4 * eps, atol=4 * eps * scale)


@pytest.mark.parametrize("n", [1, 2, 7, 8])
def test_index_and_frequency_along_each_axis(n):
    e = trace(lambda x: x * frequency(0) + index(1) * 1j, np.complex128)
    x = np.ones((n, 3), np.complex128)
    got = evaluate(e, [x])
    np.testing.assert_array_equal(got.real, np.broadcast_to(np.fft.fftfreq(n)[:, None], (n, 3)))
    np.testing.assert_array_equal(got.imag, np.broadcast_to(np.arange(3.0), (n, 3)))
    half = evaluate(trace(lambda x: x * frequency(-1), np.float64), [np.ones((2, n // 2 + 1))],
                    context=Axes((2, n // 2 + 1), periods=(2, n), half=(1,)))
    np.testing.assert_array_equal(half[0], np.fft.rfftfreq(n))
    single = evaluate(trace(lambda x: frequency(0) + x, np.float32), [np.zeros(n, np.float32)])
    assert single.dtype == np.float32


def test_an_axis_outside_the_array_is_named():
    e = trace(lambda x: x * index(2), np.float64)
    with pytest.raises(InvalidArgumentError, match="axis 2: the element's array has 2"):
        evaluate(e, [np.ones((2, 2))])


def test_elementwise_on_numpy_and_torch_cpu_keeps_the_kind():
    torch = pytest.importorskip("torch")
    f = elementwise(lambda x, y, s: np.exp(x) * y + s)
    rng = np.random.default_rng()
    x, y = rng.standard_normal((3, 4)), rng.standard_normal(4)
    expected = np.exp(x) * y + 2.5
    np.testing.assert_allclose(f(x, y, 2.5), expected, rtol=1e-15)
    got = f(torch.from_numpy(x), torch.from_numpy(y), 2.5)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-15)
    out = np.empty((3, 4))
    assert f(x, y, 2.5, out=out) is out
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    assert f([1.0, 2.0], 1.0, 0.0).tolist() == [np.exp(1.0), np.exp(2.0)]


def test_a_fused_function_inside_another_is_part_of_its_expression():
    from accelmath.errors import TraceError
    from accelmath.fusion import relu

    inner = elementwise(lambda x, b: relu(x + b))
    outer = elementwise(lambda x, b, s: inner(x, b) * s)
    rng = np.random.default_rng()
    x, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(outer(x, b, 2.0), np.maximum(x + b, 0) * 2.0, rtol=1e-15)
    alone = elementwise(lambda x, b, s: relu(x + b) * s)
    assert outer.expression(x, b, 2.0).key == alone.expression(x, b, 2.0).key
    with pytest.raises(TraceError, match="takes no out=, stream= or like="):
        elementwise(lambda x: inner(x, 1.0, out=x))(x)


def test_arrays_of_more_axes_than_numpy_broadcasts_are_refused():
    x, f = np.ones((1,) * 33), elementwise(lambda v: v * 2)
    try:
        np.broadcast_shapes(x.shape)
    except RuntimeError:  # (NumPy 2.x: at most 32 axes broadcast)
        with pytest.raises(InvalidArgumentError, match="too many axes"):
            f(x)
    else:
        assert f(x).shape == x.shape


def test_elementwise_refuses_what_it_cannot_run():
    f = elementwise(lambda x, y: x + y)
    with pytest.raises(InvalidArgumentError, match=r"do not broadcast together: argument 0 "
                                                   r"\(3,\), argument 1 \(4,\)"):
        f(np.ones(3), np.ones(4))
    with pytest.raises(InvalidArgumentError, match="element's array; got the scalar 1.0"):
        f(1.0, np.ones(3))
    with pytest.raises(InvalidArgumentError, match="out has shape"):
        f(np.ones(3), np.ones(3), out=np.empty(4))
    with pytest.raises(InvalidArgumentError, match="out has shape"):
        f(np.ones(3), np.ones(3), out=np.empty(3, np.float32))
    with pytest.raises(UnsupportedOperandError, match="argument 1"):
        f(np.ones(3), object())
    with pytest.raises(InvalidArgumentError, match="not callable"):
        elementwise(None)
    with pytest.raises(TypeError, match="stream"):
        f(np.ones(3), np.ones(3), stream="a stream")


def test_jax_and_torch_host_arrays_and_out():
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    x = np.random.default_rng().standard_normal((4, 6))
    got = elementwise(lambda a, s: a * s)(jnp.asarray(x), 2.0)
    assert "jax" in type(got).__module__ or "jaxlib" in type(got).__module__
    np.testing.assert_allclose(np.asarray(got), x * 2)
    t = torch.from_numpy(x)
    out = torch.empty(4, 6, dtype=torch.float64)
    assert elementwise(lambda a: a * 2)(t, out=out) is out
    np.testing.assert_allclose(out.numpy(), x * 2)


def test_a_long_chain_traces_without_recursion():
    def chain(x):
        for _ in range(3000):
            x = x + 1.0
        return x

    assert len(trace(chain, np.float32).nodes) == 3002
    assert elementwise(chain)(np.zeros(2, np.float32)).tolist() == [3000.0, 3000.0]
