"""``like=``: every public call returns the kind it names, by one rule (results over the same
memory where both kinds are on one side; host and device copies where ``like`` names the
other side); tuples keep their type and their non-array items; a ``like`` that names no kind
is refused, naming it."""

import inspect

import numpy as np
import pytest

import accelmath.fft
import accelmath.fusion
from accelmath import linalg
from accelmath._core.operand.kinds import returned_as
from accelmath.errors import InvalidArgumentError

torch = pytest.importorskip("torch")

# (function, arguments) of every public function that returns arrays
_RNG = np.random.default_rng()
_X = _RNG.standard_normal((6, 8))
_C = _X + 1j * _RNG.standard_normal((6, 8))
_SPD = _X[:, :6].T @ _X[:, :6] + 6 * np.eye(6)
_B = _RNG.standard_normal((6, 2))

_FFT_CALLS = [(getattr(accelmath.fft, name), (_C,)) for name in (
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "hfft", "irfft", "irfft2", "irfftn",
    "hfft2", "hfftn")] + [(getattr(accelmath.fft, name), (_X,)) for name in (
        "rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn", "fftshift", "ifftshift")] + [
    (accelmath.fft.convolve, (_X, _X[:3, :3])), (accelmath.fft.correlate, (_X, _X[:3, :3]))]
_LINALG_CALLS = [
    (linalg.matmul, (_X, _X.T)), (linalg.solve, (_SPD, _B)), (linalg.inv, (_SPD,)),
    (linalg.det, (_SPD,)), (linalg.slogdet, (_SPD,)), (linalg.cholesky, (_SPD,)),
    (linalg.qr, (_X,)), (linalg.eigh, (_SPD,)), (linalg.eigvalsh, (_SPD,)), (linalg.svd, (_X,)),
    (linalg.svdvals, (_X,)), (linalg.lstsq, (_X.T, _X.T[:, :2])), (linalg.cho_factor, (_SPD,)),
    (linalg.lu_factor, (_SPD,)), (linalg.solve_triangular, (np.triu(_SPD), _B))]


def _arrays(result):
    """The arrays of a result (itself, or the arrays of a tuple)."""
    if isinstance(result, tuple):
        return [r for item in result for r in _arrays(item)]
    python_scalar = isinstance(result, (bool, int, float, complex))
    return [] if python_scalar and not isinstance(result, np.generic) else [result]


@pytest.mark.parametrize("function, arguments", _FFT_CALLS + _LINALG_CALLS,
                         ids=lambda v: getattr(v, "__name__", ""))
def test_every_function_returns_the_kind_like_names(function, arguments):
    plain = function(*arguments)
    for like in (torch, "torch", torch.zeros(1)):
        got = function(*arguments, like=like)
        assert type(got) is type(plain) or not isinstance(plain, tuple)
        pairs = list(zip(_arrays(got), _arrays(plain)))
        assert pairs and len(_arrays(got)) == len(_arrays(plain))
        for g, p in pairs:
            assert isinstance(g, torch.Tensor) and g.device.type == "cpu"
            np.testing.assert_array_equal(g.numpy(), np.asarray(p))


def test_plans_and_fused_functions_take_like():
    with accelmath.fft.FFT(_C) as plan:
        assert isinstance(plan.forward(_C, like=torch), torch.Tensor)
        assert isinstance(plan.execute(_C, direction="inverse", like="torch"), torch.Tensor)
    with linalg.Matmul(_X, _X.T) as product:
        assert isinstance(product.execute(like=torch), torch.Tensor)
    with linalg.Cholesky(_SPD) as factor:
        assert isinstance(factor.solve(_B, like=torch), torch.Tensor)
    with accelmath.fft.Convolver(_X[:3, :3], _X.shape) as convolver:
        got = convolver(_X, like=torch)
        np.testing.assert_array_equal(got.numpy(), convolver(_X))
    double = accelmath.fusion.elementwise(lambda x: 2 * x)
    assert isinstance(double(_X, like=torch), torch.Tensor)
    frequencies = accelmath.fft.fftfreq(8, like=torch)
    np.testing.assert_array_equal(frequencies.numpy(), np.fft.fftfreq(8))


def test_every_public_call_documents_like():
    calls = [f for f, _ in _FFT_CALLS + _LINALG_CALLS] + [
        linalg.cho_solve, linalg.lu_solve, accelmath.fft.fftfreq, accelmath.fft.rfftfreq,
        accelmath.fft.FFT.execute, linalg.Matmul.execute, linalg.Cholesky.solve,
        linalg.LU.solve, linalg.QR.solve, accelmath.fft.Convolver.__call__,
        accelmath.fusion.Elementwise.__call__]
    for call in calls:
        assert "like" in inspect.signature(call).parameters, call.__qualname__
        assert "like : str, module or array" in call.__doc__, call.__qualname__


def test_host_results_share_memory_with_the_tensors_made_of_them():
    x = np.arange(6.0)
    tensor = returned_as(x, torch)
    tensor[0] = 7.0
    assert x[0] == 7.0  # (torch.from_numpy: the same memory)
    assert returned_as(tensor, np) is not None and returned_as(x, np) is x


def test_tuples_keep_their_type_and_their_other_items():
    result = linalg.slogdet(_SPD, like=torch)
    assert type(result).__name__ == "SlogdetResult"
    factor, lower = linalg.cho_factor(_SPD, like=torch)
    assert isinstance(factor, torch.Tensor) and lower is False
    assert returned_as((np.ones(2), 3, None, True), torch)[1:] == (3, None, True)


def test_jax_arrays():
    jnp = pytest.importorskip("jax.numpy")
    got = accelmath.fft.fft(_C, like=jnp)
    assert type(got).__module__.startswith("jax")
    np.testing.assert_allclose(np.asarray(got), np.fft.fft(_C), rtol=1e-6, atol=1e-6)
    back = accelmath.fft.ifft(got, like="numpy")
    assert isinstance(back, np.ndarray)


def test_a_tensor_that_records_gradients_names_a_place_too():
    got = accelmath.fft.fft(_C, like=torch.zeros(1, requires_grad=True))
    assert isinstance(got, torch.Tensor) and not got.requires_grad


class _FailingInterface:
    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("the producer's own failure")


@pytest.mark.parametrize("like", ["tensorflow", "", 42, 1.5, [1, 2], {"a": 1}, inspect, object(),
                                  np.float64(1.0), b"torch", _FailingInterface()])
def test_a_like_that_names_no_kind_is_refused(like):
    with pytest.raises(InvalidArgumentError, match="like"):
        accelmath.fft.fft(_C, like=like)
    with pytest.raises(InvalidArgumentError, match="like"):
        linalg.inv(_SPD, like=like)


def test_a_like_that_names_no_kind_is_refused_before_any_work():
    out = np.zeros(_C.shape, complex)
    with pytest.raises(InvalidArgumentError, match="like"):
        accelmath.fft.fft(_C, out=out, like="tensorflow")
    product = np.zeros((6, 6))
    with pytest.raises(InvalidArgumentError, match="like"):
        linalg.matmul(_X, _X.T, out=product, like="tensorflow")
    assert not out.any() and not product.any()


# ---- on the GPU: zero-copy views between device kinds, copies across sides ----

def _pointer(x):
    from accelmath._core.operand import wrap_operand

    return wrap_operand(x).ptr


@pytest.mark.gpu
def test_device_results_are_views_of_the_same_memory(cp, torch_cuda, numba_cuda):
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    x = cp.asarray(_C)
    plain = accelmath.fft.fft2(x)
    expected = np.fft.fft2(_C)
    for like, kind in ((torch_cuda, torch_cuda.Tensor), ("numba", DeviceNDArray),
                       (numba_cuda, DeviceNDArray), (torch_cuda.zeros(1, device="cuda"),
                                                     torch_cuda.Tensor)):
        got = returned_as(plain, like)
        assert isinstance(got, kind) and _pointer(got) == _pointer(plain)
    got = accelmath.fft.fft2(x, like=torch_cuda)
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)
    got = accelmath.fft.fft2(numba_cuda.to_device(_C), like=cp)
    assert isinstance(got, cp.ndarray)
    np.testing.assert_allclose(got.get(), expected, rtol=1e-12, atol=1e-12)
    product = linalg.matmul(torch_cuda.from_numpy(_X).cuda(), torch_cuda.from_numpy(_X.T).cuda(),
                            like="numba")
    assert isinstance(product, DeviceNDArray)
    np.testing.assert_allclose(product.copy_to_host(), _X @ _X.T, rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
def test_results_cross_to_the_side_like_names(cp, torch_cuda, numba_cuda):
    expected = np.linalg.inv(_SPD)
    on_host = linalg.inv(cp.asarray(_SPD), like=np)
    assert isinstance(on_host, np.ndarray)
    np.testing.assert_allclose(on_host, expected, rtol=1e-10)
    on_device = linalg.inv(_SPD, like="cupy")  # (computed on the host, copied to the GPU)
    assert isinstance(on_device, cp.ndarray)
    np.testing.assert_allclose(on_device.get(), expected, rtol=1e-10)
    tensor = linalg.inv(_SPD, like=torch_cuda.zeros(1, device="cuda"))
    assert tensor.device.type == "cuda"
    cpu_tensor = linalg.inv(cp.asarray(_SPD), like=torch_cuda.zeros(1))
    assert cpu_tensor.device.type == "cpu"
    np.testing.assert_allclose(cpu_tensor.numpy(), expected, rtol=1e-10)
    numba_result = linalg.inv(_SPD, like=numba_cuda.to_device(np.zeros(1)))
    np.testing.assert_allclose(numba_result.copy_to_host(), expected, rtol=1e-10)


@pytest.mark.gpu
def test_another_producers_arrays_get_the_kind_like_names(cp, numba_cuda):
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    x = cp.asarray(_C)

    class Producer:
        __cuda_array_interface__ = x.__cuda_array_interface__

    default = accelmath.fft.fft(Producer())
    assert isinstance(default, cp.ndarray)  # (the rule: CuPy's, else torch's, else Numba's)
    got = accelmath.fft.fft(Producer(), like="numba")
    assert isinstance(got, DeviceNDArray)
    np.testing.assert_allclose(got.copy_to_host(), np.fft.fft(_C), rtol=1e-12, atol=1e-12)


@pytest.mark.gpu
def test_jax_on_the_gpu(cp, jax_gpu):
    got = accelmath.fft.fft(cp.asarray(_C), like=jax_gpu.numpy)
    assert type(got).__module__.startswith("jax")
    assert next(iter(got.devices())).platform == "gpu"
    np.testing.assert_allclose(np.asarray(got), np.fft.fft(_C), rtol=1e-12, atol=1e-12)
