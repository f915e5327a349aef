"""accelmath.linalg on every kind of operand the GPU takes, one call per function against the
float64 oracle: torch CUDA tensors and JAX GPU arrays, non-contiguous CuPy views, explicit
streams, NumPy operands with ``execution="cuda"``; empty shapes, promotion, the plan cache."""

import numpy as np
import pytest
from closeness import assert_close_dtype

import accelmath.linalg as la

from .gpu_cases import (CASES, DTYPES, CuPy, NumPyBack, c, case, check_case, method_call,
                        method_data, random, residual, spd, well)

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("name", CASES)
def test_packages(package, name, dtype, size):
    """Results of the caller's package (torch: on the input's device; JAX: jax.Array on
    its GPU), of NumPy's shapes and dtypes, equal to the float64 oracle."""
    check_case(name, dtype, size, package)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_packages_scipy_arguments(package, dtype):
    """cho_solve with lower=False and lu_solve with trans=1 on the package's arrays."""
    a, b = spd((3, 5, 5), dtype), random((3, 5, 2), dtype)
    factor, lower = la.cho_factor(package.put(a))
    residual(a, package.get(la.cho_solve((factor, lower), package.put(b))), b, False, dtype)
    a = well((3, 5, 5), dtype)
    factors = la.lu_factor(package.put(a))
    x = package.get(la.lu_solve(factors, package.put(b[0, :, 0]), trans=1))
    residual(np.swapaxes(a, -1, -2), x, b[0, :, 0], True, dtype)


# ---- non-contiguous operands ----

def device_view(cp, host, kind):
    """A CuPy view holding ``host``, not C-contiguous: matrices transposed in memory, every
    other element of a larger array, or negative strides."""
    if kind == "transposed" and host.ndim >= 2:
        dev = cp.asarray(np.ascontiguousarray(np.swapaxes(host, -1, -2))).swapaxes(-1, -2)
    elif kind == "reversed":
        index = (slice(None, None, -1),) * host.ndim
        dev = cp.asarray(np.ascontiguousarray(host[index]))[index]
    else:
        big = np.zeros(tuple(2 * s + 1 for s in host.shape), host.dtype)
        index = tuple(slice(1, 1 + 2 * s, 2) for s in host.shape)
        big[index] = host
        dev = cp.asarray(big)[index]
    np.testing.assert_array_equal(cp.asnumpy(dev), host)
    return dev


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("kind", ["transposed", "stepped", "reversed"])
@pytest.mark.parametrize("name", CASES)
def test_noncontiguous(cp, name, kind, size, dtype):
    """Views as operands give the results of their values, and are left as they were."""
    operands, given = check_case(name, dtype, size, CuPy(cp),
                                 put=lambda a: device_view(cp, a, kind))
    for host, dev in zip(operands, given):
        np.testing.assert_array_equal(cp.asnumpy(dev), host)


@pytest.mark.parametrize("method", ["auto", "small", "cusolver"])
def test_noncontiguous_methods(cupy, method):
    a = well((4, 8, 8), "float64")
    b = random((4, 8, 3), "float64")
    p = spd((4, 8, 8), "float64")
    dev_a = cupy.put(np.ascontiguousarray(np.swapaxes(a, -1, -2))).swapaxes(-1, -2)[::2]
    dev_b = cupy.put(b)[::-2]
    dev_p = cupy.put(p)[1::2, ::-1, ::-1]
    x = cupy.get(la.solve(dev_a, dev_b, method=method))
    assert_close_dtype(x, np.linalg.solve(a[::2], b[::-2]), "float64", 10)
    assert_close_dtype(cupy.get(la.inv(dev_a, method=method)), np.linalg.inv(a[::2]), "float64", 10)
    assert_close_dtype(cupy.get(la.cholesky(dev_p, method=method)),
                       np.linalg.cholesky(p[1::2, ::-1, ::-1]), "float64", 10)


# ---- streams, host data on the GPU, empty shapes, promotion, the plan cache ----

@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("name", CASES)
def test_explicit_stream(cp, name, size, dtype):
    """With stream= a non-blocking stream (the operands written on it), the results are
    right once that stream is synchronized."""
    stream = cp.cuda.Stream(non_blocking=True)

    class OnStream(CuPy):
        def put(self, a):
            with stream:
                return self.cp.asarray(a)

        def get(self, r):
            stream.synchronize()
            return super().get(r)

    check_case(name, dtype, size, OnStream(cp), stream=stream)


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
def test_explicit_stream_without_check(cp, function, dtype):
    """check=False reads nothing back: only the stream's synchronization orders the read."""
    stream = cp.cuda.Stream(non_blocking=True)
    a, b, expected = method_data(function, (200, 8, 8), dtype)
    for method in ("small", "cusolver"):
        with stream:
            dev_a = cp.asarray(a)
            dev_b = None if b is None else cp.asarray(b)
        result = method_call(function, dev_a, dev_b, method, check=False, stream=stream)
        stream.synchronize()
        assert_close_dtype(cp.asnumpy(result), expected, dtype, 10)


@pytest.mark.parametrize("dtype", ["float64", "complex64"])
@pytest.mark.parametrize("name", CASES)
def test_execution_cuda_with_numpy_operands(name, dtype):
    """NumPy operands with execution="cuda": NumPy results equal to the CPU path's."""
    check_case(name, dtype, "small", NumPyBack(), execution="cuda")


def test_empty_as_numpy(cupy):
    for name in ("inv", "det", "cholesky", "eigvalsh", "svdvals"):
        for shape in ((0, 0), (3, 0, 0), (0, 2, 2)):
            a = np.zeros(shape)
            r = cupy.get(getattr(la, name)(cupy.put(a)))
            e = np.asarray(getattr(np.linalg, name)(a))
            assert r.shape == e.shape and r.dtype == e.dtype, (name, shape)
            np.testing.assert_array_equal(r, e)
    for shape in ((0, 0), (3, 0, 0), (0, 2, 2)):
        sign, logabsdet = (cupy.get(r) for r in la.slogdet(cupy.put(np.zeros(shape))))
        expected = np.linalg.slogdet(np.zeros(shape))
        np.testing.assert_array_equal(sign, expected.sign)
        np.testing.assert_array_equal(logabsdet, expected.logabsdet)
        w, v = (cupy.get(r) for r in la.eigh(cupy.put(np.zeros(shape))))
        assert w.shape == shape[:-1] and v.shape == shape
    assert cupy.get(la.solve(cupy.put(np.zeros((2, 0, 0))),
                             cupy.put(np.zeros((2, 0, 3))))).shape == (2, 0, 3)
    assert cupy.get(la.solve(cupy.put(np.zeros((0, 3, 3))),
                             cupy.put(np.zeros(3)))).shape == (0, 3)
    for mode in ("reduced", "complete", "r", "raw"):
        for shape in ((3, 0), (0, 3), (2, 3, 0)):
            r = la.qr(cupy.put(np.zeros(shape)), mode)
            e = np.linalg.qr(np.zeros(shape), mode)
            for ri, ei in zip(r if isinstance(r, tuple) else (r,),
                              e if isinstance(e, tuple) else (e,)):
                ri = cupy.get(ri)
                assert ri.shape == ei.shape, (mode, shape)
                np.testing.assert_array_equal(ri, ei)
    for full_matrices in (True, False):
        for shape in ((3, 0), (0, 3), (2, 3, 0)):
            r = [cupy.get(x) for x in la.svd(cupy.put(np.zeros(shape)), full_matrices)]
            e = np.linalg.svd(np.zeros(shape), full_matrices)
            for ri, ei in zip(r, e):
                assert ri.shape == ei.shape
                np.testing.assert_array_equal(ri, ei)
    factor, lower = la.cho_factor(cupy.put(np.zeros((0, 0))))
    assert cupy.get(factor).shape == (0, 0)
    lu, piv = la.lu_factor(cupy.put(np.zeros((0, 3, 3))))
    assert cupy.get(lu).shape == (0, 3, 3) and cupy.get(piv).shape == (0, 3)
    assert cupy.get(piv).dtype == np.int32
    assert cupy.get(la.lu_solve((lu, piv), cupy.put(np.zeros((0, 3, 2))))).shape == (0, 3, 2)
    assert cupy.get(la.solve_triangular(cupy.put(np.eye(3)),
                                        cupy.put(np.zeros((3, 0))))).shape == (3, 0)


def test_integers_and_mixed_dtypes_promote(cupy):
    rng = np.random.default_rng()
    a = rng.integers(1, 9, (4, 4)) + 20 * np.eye(4, dtype=np.int64)
    b = rng.integers(1, 9, (4,))
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b)))
    assert x.dtype == np.float64
    assert_close_dtype(x, np.linalg.solve(a, b), "float64")
    assert cupy.get(la.det(cupy.put(a))).dtype == np.float64
    a32 = well((4, 4), "float32")
    b64 = random((4,), "complex64")
    x = cupy.get(la.solve(cupy.put(a32), cupy.put(b64)))
    assert x.dtype == np.complex64
    assert_close_dtype(x, np.linalg.solve(c(a32), c(b64)), "complex64", 10)


@pytest.mark.parametrize("name", ["solve", "inv", "det", "cholesky", "qr", "eigh", "svd",
                                  "lu", "cho", "solve_triangular"])
def test_plan_cache_reuses_the_solver(cp, name):
    """A second call of the same shapes is served by the cached solver (cuSOLVER's sizes)."""
    from accelmath.linalg._memo import dispatcher

    operands, call, _ = case(name, "float64", "large")
    given = [cp.asarray(o) for o in operands]
    call(*given)
    before = dispatcher.cache_info()
    call(*given)
    after = dispatcher.cache_info()
    assert after["hits"] > before["hits"]
    assert after["misses"] == before["misses"]


# (last: a plan shared by mistake would write past its workspace)
@pytest.mark.parametrize("first", ["inv", "det", "lu_factor"])
@pytest.mark.parametrize("n, method", [(110, "auto"), (6, "cusolver")])
def test_solve_after_other_lu_calls_of_the_same_sizes(cupy, first, n, method):
    """solve with n right-hand sides after inv, det or lu_factor of the same matrices (one
    cuSOLVER problem size): right results."""
    a, b = well((2, n, n), "float64"), random((2, n, n), "float64")
    dev_a = cupy.put(a)
    getattr(la, first)(dev_a)
    x = cupy.get(la.solve(dev_a, cupy.put(b), method=method))
    assert_close_dtype(x, np.linalg.solve(a, b), "float64", 10)
