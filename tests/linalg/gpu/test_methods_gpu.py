"""The device strategies of accelmath.linalg (``method=`` "small", "cusolver", "batched" and
"auto") on CuPy arrays: each gives NumPy's result and the others', the backward error of
partial pivoting, the batched routes past the own kernels' reach, and the sizes each method
refuses."""

import numpy as np
import pytest
from closeness import assert_close_dtype

import accelmath.linalg as la
from accelmath.errors import InvalidArgumentError

from .gpu_cases import (DTYPES, METHODS, c, eye_like, method_call, method_data, mT, random, spd,
                        well)

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 8, 17, 32])
@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
def test_methods_agree(cupy, function, n, dtype):
    """A batch of 1000 (rows interchanged for LU): each method gives NumPy's result."""
    a, b, expected = method_data(function, (1000, n, n), dtype)
    dev_a = cupy.put(a)
    dev_b = None if b is None else cupy.put(b)
    results = {}
    for method in METHODS:
        results[method] = cupy.get(method_call(function, dev_a, dev_b, method))
        assert results[method].shape == expected.shape
        assert results[method].dtype == np.dtype(dtype)
        assert_close_dtype(results[method], expected, dtype, 10)
    assert_close_dtype(results["small"], results["cusolver"], dtype, 10)
    if function == "cholesky":
        for method in METHODS:
            upper = cupy.get(la.cholesky(dev_a, upper=True, method=method))
            assert_close_dtype(upper, mT(expected), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [3, 8, 17, 32])
@pytest.mark.parametrize("method", ["small", "cusolver"])
def test_partial_pivoting_backward_error(cupy, method, n, dtype):
    """Plain Gaussian matrices (some ill-conditioned): the residual of each system is at the
    level of the rounding, ||a x - b|| <= 100 n eps ||a|| ||x||."""
    a, b = random((1000, n, n), dtype), random((1000, n, 1), dtype)
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b), method=method))
    r = np.linalg.norm(c(a) @ c(x) - c(b), axis=(-2, -1))
    bound = np.linalg.norm(c(a), axis=(-2, -1)) * np.linalg.norm(c(x), axis=(-2, -1))
    eps = np.finfo(dtype).eps
    assert np.all(r <= 100 * n * eps * bound), np.max(r / bound) / eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [33, 64, 128])
@pytest.mark.parametrize("function", ["solve", "inv", "cholesky"])
def test_batched_routes_agree(cupy, function, n, dtype):
    """Batches past the own kernels' reach: the batched routes (cuBLAS's getrfBatched and
    getrsBatched, cuSOLVER's potrfBatched), which "auto" takes, give NumPy's result and the
    one-matrix-at-a-time route's."""
    a, b, expected = method_data(function, (20, n, n), dtype)
    dev_a = cupy.put(a)
    dev_b = None if b is None else cupy.put(b)
    results = {method: cupy.get(method_call(function, dev_a, dev_b, method))
               for method in ("auto", "batched", "cusolver")}
    for result in results.values():
        assert_close_dtype(result, expected, dtype, 10)
    assert_close_dtype(results["batched"], results["cusolver"], dtype, 10)
    assert_close_dtype(results["auto"], results["batched"], dtype, 1)
    if function == "cholesky":
        assert_close_dtype(cupy.get(la.cholesky(dev_a, upper=True, method="batched")), mT(expected),
                           dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, k", [(40, 1), (64, 3)])
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_batched(cupy, dtype, n, k, lower):
    """cho_solve of a batch (potrsBatched, a column at a time)."""
    a = spd((6, n, n), dtype)
    b = random((6, n, k), dtype)
    factor = la.cho_factor(cupy.put(a), lower=lower)
    x = cupy.get(la.cho_solve(factor, cupy.put(b)))
    assert_close_dtype(x, np.linalg.solve(c(a), c(b)), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(30, 8, 5), (30, 5, 8), (7, 32, 32), (2, 1, 1)])
@pytest.mark.parametrize("method", ["auto", "batched"])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_batched_jacobi(cupy, dtype, shape, method, full_matrices):
    """Batches up to 32 x 32 through gesvdjBatched: a reconstruction, unitary factors,
    NumPy's singular values, descending."""
    a = random(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    u, s, vh = (cupy.get(r) for r in la.svd(cupy.put(a), full_matrices, method=method))
    assert u.shape == shape[:-2] + ((m, m) if full_matrices else (m, k))
    assert vh.shape == shape[:-2] + ((n, n) if full_matrices else (k, n))
    assert_close_dtype((c(u)[..., :, :k] * s[..., None, :]) @ c(vh)[..., :k, :], a, dtype, 10)
    for gram in (mT(c(u)) @ c(u), c(vh) @ mT(c(vh))):
        assert_close_dtype(gram, eye_like(gram), dtype, 10)
    assert_close_dtype(s, np.linalg.svd(c(a), compute_uv=False), dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0)
    values = cupy.get(la.svd(cupy.put(a), compute_uv=False, method=method))
    assert_close_dtype(values, np.linalg.svd(c(a), compute_uv=False), dtype, 10)


def test_svd_batched_refuses_large_matrices(cupy):
    with pytest.raises(InvalidArgumentError, match="at most 32"):
        la.svd(cupy.put(random((2, 33, 4), "float64")), method="batched")


def test_small_method_refuses_large_matrices(cupy):
    a = cupy.put(well((2, 129, 129), "float64"))
    for call in (lambda: la.solve(a, a, method="small"), lambda: la.inv(a, method="small"),
                 lambda: la.cholesky(a, method="small")):
        with pytest.raises(InvalidArgumentError):
            call()


def test_small_method_returns_an_empty_batch_of_large_matrices(cupy):
    # (nothing to compute: no method refuses it, as NumPy returns one)
    a = cupy.put(np.zeros((0, 129, 129)))
    for result in (la.solve(a, a, method="small"), la.inv(a, method="small"),
                   la.cholesky(a, method="small")):
        assert cupy.get(result).shape == (0, 129, 129)


def test_small_method_names_the_largest_order_the_gpu_takes(cupy):
    from accelmath.linalg._kernels import medium as _medium

    if _medium.fits("solve", 128, "complex128", 0):
        pytest.skip("this GPU's blocks take complex128 matrices of 128 rows")
    most = _medium.largest("solve", "complex128", 0)
    a = cupy.put(well((2, most + 1, most + 1), "complex128"))
    with pytest.raises(InvalidArgumentError, match=f"at most {most} rows on this GPU"):
        la.solve(a, a, method="small")
    a = well((2, most, most), "complex128")
    assert_close_dtype(cupy.get(la.inv(cupy.put(a), method="small")), np.linalg.inv(a),
                       "complex128", 10)


def test_small_method_single_matrix(cupy):
    a, b = well((5, 5), "float64"), random((5,), "float64")
    x = cupy.get(la.solve(cupy.put(a), cupy.put(b), method="small"))
    assert_close_dtype(x, np.linalg.solve(a, b), "float64", 10)
