"""Small products on accelmath's own kernel (``linalg._matmul.small``): the rule of which
products it takes, its source compiled by NVRTC (no GPU needed), and on the GPU its results
against NumPy in float64 for every layout it takes (odd sizes, transposed and strided views,
a batch, broadcast, alpha), through the stateless function, the plan, out= and other
streams, for CuPy and torch, with the call shim and without."""

import numpy as np
import pytest
from closeness import assert_close_products

from accelmath import linalg
from accelmath._core.gpu import modules
from accelmath.linalg._matmul import problem as problems
from accelmath.linalg._matmul import small


def _spec(a_shape, b_shape, dtype="float32", alpha=1.0, beta=0.0, c=False, epilogue=None,
          allow_tf32=False):
    a, b = np.ones(a_shape, dtype), np.ones(b_shape, dtype)
    c_op = np.ones(np.matmul(a, b).shape, dtype) if c else None
    bias = np.ones(b_shape[-1], dtype) if epilogue == "bias" else None
    p = problems.prepare(a, b, c_op, bias, None, alpha, beta, epilogue, "cpu", allow_tf32)
    spec = problems.spec_of(p, None, 256)
    return spec if c and beta else spec._replace(c=None)


@pytest.mark.parametrize("case, expected", [
    (dict(a_shape=(64, 64), b_shape=(64, 64)), True),
    (dict(a_shape=(128, 1), b_shape=(1, 128)), True),
    (dict(a_shape=(7,), b_shape=(7,)), True),
    (dict(a_shape=(5, 3, 4), b_shape=(4, 2)), True),
    (dict(a_shape=(64, 64), b_shape=(64, 64), dtype="float64"), True),
    (dict(a_shape=(129, 4), b_shape=(4, 4)), False),
    (dict(a_shape=(4, 4), b_shape=(4, 129)), False),
    (dict(a_shape=(128, 128), b_shape=(128, 64)), False),  # (more work than MAX_WORK)
    (dict(a_shape=(2, 3, 4, 4), b_shape=(4, 4)), False),  # (two batch axes)
    (dict(a_shape=(8, 8), b_shape=(8, 8), dtype="float16"), False),
    (dict(a_shape=(8, 8), b_shape=(8, 8), dtype="complex64"), False),
    (dict(a_shape=(8, 8), b_shape=(8, 8), allow_tf32=True), False),
    (dict(a_shape=(8, 8), b_shape=(8, 8), epilogue="bias"), False),
    (dict(a_shape=(8, 8), b_shape=(8, 8), c=True, beta=1.0), False),
    (dict(a_shape=(8, 8), b_shape=(8, 8), alpha=0.0), False),
])
def test_the_rule(case, expected):
    alpha = case.pop("alpha", 1.0)
    assert small.takes(_spec(**case, alpha=alpha), alpha) is expected


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_kernel_compiles(nvrtc, dtype):
    image = modules.compile_cuda(small.SOURCE, modules.CompileOptions(
        arch=(9, 0), extra=(f"-DACCELMATH_{dtype}",)), "small_product.cu")
    assert f"small_product_{dtype}".encode() in image


# --- on the GPU -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compiled():
    """The kernel compiled for device 0, both dtypes, before the tests make plans."""
    from accelmath._core.gpu.device import gpu_available

    if not gpu_available():
        pytest.skip("no GPU")
    for dtype in ("float32", "float64"):
        small.kernel(0, dtype)
    modules.wait_for_compiles()
    assert all(small.kernel(0, d) is not None for d in ("float32", "float64"))
    linalg.clear_cache()


def _random(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _views(xp, rng, dtype):
    """(a, b) pairs of every layout the kernel takes: dense, transposed, strided, batched,
    broadcast, vectors, 1 x 1, odd sizes."""
    r = lambda *shape: xp.asarray(_random(rng, shape, dtype))  # noqa: E731
    return [
        (r(64, 64), r(64, 64)), (r(1, 1), r(1, 1)), (r(17, 33), r(33, 5)),
        (r(128, 3), r(3, 128)), (r(31, 64).T, r(31, 9)), (r(40, 20)[::2, ::3], r(7, 11)),
        (r(6, 9, 5), r(5, 12)), (r(5, 12), r(4, 12, 7)),
        (r(3, 8, 8), r(3, 8, 8).swapaxes(1, 2)),
        (r(9), r(9, 4)), (r(4, 9), r(9)), (r(100), r(100)),
    ]


def _oracle(a, b, to_numpy):
    return to_numpy(a).astype(np.float64) @ to_numpy(b).astype(np.float64)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cupy_products_on_the_kernel(cp, compiled, dtype):
    rng = np.random.default_rng()
    for a, b in _views(cp, rng, dtype):
        expected = _oracle(a, b, cp.asnumpy)
        plan = linalg.Matmul(a, b)
        assert plan._small is not None
        assert_close_products(cp.asnumpy(plan.execute()), expected, dtype, a.shape[-1])
        assert_close_products(cp.asnumpy(linalg.matmul(a, b)), expected, dtype, a.shape[-1])
        assert_close_products(cp.asnumpy(linalg.matmul(a, b, alpha=-2.5)), -2.5 * expected,
                              dtype, a.shape[-1])
        out = cp.full(expected.shape, np.nan, dtype)
        assert plan.execute(out=out) is out
        assert_close_products(cp.asnumpy(out), expected, dtype, a.shape[-1])
        plan.free()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_products_on_the_kernel(torch_cuda, compiled, dtype):
    torch = torch_cuda
    rng = np.random.default_rng()
    to_numpy = lambda t: t.cpu().numpy()  # noqa: E731
    for a, b in _views(_TorchFrom(torch), rng, dtype):
        expected = _oracle(a, b, to_numpy)
        with linalg.Matmul(a, b) as plan:
            assert plan._small is not None
            for _ in range(3):  # (the call shim's calls after the first)
                assert_close_products(to_numpy(plan.execute()), expected, dtype, a.shape[-1])
                assert_close_products(to_numpy(linalg.matmul(a, b)), expected, dtype,
                                      a.shape[-1])
        # new operands each call, of the plan's layout
        a2, b2 = a + 1, b * 2
        assert_close_products(to_numpy(linalg.matmul(a2, b2)), _oracle(a2, b2, to_numpy),
                              dtype, a.shape[-1])


class _TorchFrom:
    def __init__(self, torch):
        self.torch = torch

    def asarray(self, x):
        return self.torch.from_numpy(np.ascontiguousarray(x)).cuda()


@pytest.mark.gpu
def test_other_streams_and_threads(torch_cuda, compiled):
    import threading

    torch = torch_cuda
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    expected = a.double() @ b.double()
    plan = linalg.Matmul(a, b)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for _ in range(3):
            d = plan.execute()
        side.synchronize()
    assert torch.allclose(d.double(), expected, rtol=1e-5, atol=1e-4)
    d = plan.execute(stream=side)
    side.synchronize()
    assert torch.allclose(d.double(), expected, rtol=1e-5, atol=1e-4)
    results = []

    def work():
        for _ in range(50):
            results.append(plan.execute())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()
    assert all(torch.allclose(r.double(), expected, rtol=1e-5, atol=1e-4) for r in results)


@pytest.mark.gpu
def test_a_thread_without_a_current_context(cp, compiled):
    """A launch from a thread whose current context is not the kernel's (none, in a new
    thread) pushes the kernel's for the launch."""
    import ctypes
    import threading

    from accelmath.bindings import driver

    a, b = cp.random.standard_normal((32, 32)), cp.random.standard_normal((32, 32))
    plan = linalg.Matmul(a, b)
    found = {}

    def work():  # (a new thread: no context current until the call sets one)
        ctx = ctypes.c_void_p()
        driver.lib.ctx_get_current(ctypes.byref(ctx))
        found["before"] = ctx.value
        found["d"] = plan.execute()
        cp.cuda.Device(0).synchronize()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert found["before"] is None
    assert cp.allclose(found["d"], a @ b)


@pytest.mark.gpu
def test_switched_off(cp, compiled, monkeypatch):
    monkeypatch.setenv("ACCELMATH_SMALL_PRODUCTS", "0")
    a, b = cp.ones((8, 8), "float32"), cp.ones((8, 8), "float32")
    plan = linalg.Matmul(a, b)
    assert plan._small is None
    assert cp.all(plan.execute() == 8)


@pytest.mark.gpu
def test_alpha_zero_and_nonfinite_operands(cp, compiled):
    """alpha 0 goes to cuBLASLt, which gives what the CPU path gives (0 * inf is NaN); inf
    and NaN propagate on the kernel too."""
    a = cp.ones((8, 8), "float32")
    a[0, 0] = cp.inf
    b = cp.ones((8, 8), "float32")
    expected = linalg.matmul(cp.asnumpy(a), cp.asnumpy(b), alpha=0.0)
    assert np.array_equal(cp.asnumpy(linalg.matmul(a, b, alpha=0.0)), expected, equal_nan=True)
    d = linalg.matmul(a, b)
    assert cp.isinf(d[0]).all() and cp.all(d[1:] == 8)
    a[1, 1] = cp.nan
    assert cp.isnan(linalg.matmul(a, b)[1]).all()


def test_a_kernel_whose_compile_failed_is_given_up(monkeypatch, caplog):
    """A background compile that ended with nothing made: the kernel is not asked for again
    (cuBLASLt runs the products), and the log says so once."""
    from accelmath._core.gpu import modules
    from accelmath.linalg._matmul import small

    class Finished:
        def is_alive(self):
            return False

    monkeypatch.delenv("ACCELMATH_SMALL_PRODUCTS", raising=False)
    monkeypatch.setattr(small, "_failed", set())
    monkeypatch.setattr(small, "_kernels", {})
    monkeypatch.setattr(modules, "device_options", lambda device_id, extra=(): None)
    monkeypatch.setattr(modules, "is_compiled", lambda *args: False)
    started = []
    monkeypatch.setattr(modules, "compile_soon", lambda *args: started.append(1) or Finished())
    assert small.kernel(0, "float32") is None and (0, "float32") in small._failed
    assert small.kernel(0, "float32") is None and started == [1]
    assert "small-product kernel is not used" in caplog.text
