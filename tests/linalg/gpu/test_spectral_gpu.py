"""accelmath.linalg's QR, eigh/eigvalsh and SVD on CuPy arrays, against NumPy in float64 on
fresh random data: reconstructions, unitary factors, the unique parts of the results (|R|, the
values), every mode, the triangle UPLO names, gesvd where gesvdj does not converge."""

import numpy as np
import pytest
from closeness import assert_close_dtype

import accelmath.linalg as la

from .gpu_cases import DTYPES, REAL, c, eye_like, garble, hermitian, matrix, mT, random, wide

pytestmark = pytest.mark.gpu


def householder_q(h, tau):
    """Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^H, from NumPy's raw QR (h transposed)."""
    f = np.swapaxes(c(h), -1, -2)  # (..., m, n), LAPACK's geqrf output
    m, k = f.shape[-2], tau.shape[-1]
    q = np.broadcast_to(np.eye(m, dtype=np.complex128), f.shape[:-2] + (m, m))
    for i in range(k):
        v = np.zeros(f.shape[:-2] + (m,), np.complex128)
        v[..., i] = 1
        v[..., i + 1:] = f[..., i + 1:, i]
        q = q @ (np.eye(m) - c(tau)[..., i, None, None] * v[..., :, None] * v[..., None, :].conj())
    return q


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 6, 4), (2, 4, 6), (50, 30),
                                   (30, 50)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r", "raw"])
def test_qr(cupy, dtype, shape, mode):
    a = matrix(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    r_expected = np.linalg.qr(a.astype(wide(dtype)), "r")  # (..., k, n), unique up to row phases
    result = la.qr(cupy.put(a), mode)
    if mode == "r":
        r = cupy.get(result)
        assert r.shape == batch + (k, n) and r.dtype == np.dtype(dtype)
        assert np.all(np.tril(r, -1) == 0)
        assert_close_dtype(np.abs(r), np.abs(r_expected), dtype, 10)
        return
    if mode == "raw":
        h, tau = cupy.get(result[0]), cupy.get(result[1])
        assert h.shape == batch + (n, m) and tau.shape == batch + (k,)
        assert h.dtype == tau.dtype == np.dtype(dtype)
        r = np.triu(np.swapaxes(h, -1, -2))[..., :k, :]
        assert_close_dtype(householder_q(h, tau)[..., :, :k] @ c(r), a, dtype, 10)
        assert_close_dtype(np.abs(r), np.abs(r_expected), dtype, 10)
        return
    assert type(result).__name__ == "QRResult"
    q, r = cupy.get(result.Q), cupy.get(result.R)
    qcols = m if mode == "complete" else k
    assert q.shape == batch + (m, qcols) and r.shape == batch + (qcols, n)
    assert q.dtype == r.dtype == np.dtype(dtype)
    assert np.all(np.tril(r, -1) == 0)
    assert_close_dtype(c(q) @ c(r), a, dtype, 10)
    assert_close_dtype(mT(c(q)) @ c(q), np.broadcast_to(np.eye(qcols), batch + (qcols, qcols)),
                       dtype, 10)
    assert_close_dtype(np.abs(r[..., :k, :]), np.abs(r_expected), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 6), (4, 5, 5), (40, 40), (2, 33, 33)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_eigvalsh(cupy, dtype, shape, uplo):
    """Only the triangle UPLO names is read: garbage in the other."""
    a = hermitian(shape, dtype)
    given = cupy.put(garble(a, uplo))
    w, v = la.eigh(given, uplo)
    w, v = cupy.get(w), cupy.get(v)
    assert w.shape == shape[:-1] and v.shape == shape
    assert w.dtype == np.dtype(REAL[dtype]) and v.dtype == np.dtype(dtype)
    expected = np.linalg.eigvalsh(a.astype(wide(dtype)))
    assert_close_dtype(w, expected, dtype, 10)
    assert np.all(np.diff(w, axis=-1) >= 0)
    assert_close_dtype((c(v) * w[..., None, :]) @ mT(c(v)), a, dtype, 10)
    assert_close_dtype(mT(c(v)) @ c(v), eye_like(a), dtype, 10)
    values = cupy.get(la.eigvalsh(given, uplo))
    assert values.dtype == np.dtype(REAL[dtype])
    assert_close_dtype(values, expected, dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (3, 6, 4), (2, 4, 6), (50, 30),
                                   (30, 50), (3, 50, 30)])
@pytest.mark.parametrize("full_matrices", [True, False])
@pytest.mark.parametrize("method", ["auto", "cusolver"])  # (gesvdj, gesvd past 32 x 32)
def test_svd(cupy, dtype, shape, full_matrices, method):
    a = random(shape, dtype)
    m, n = shape[-2:]
    k = min(m, n)
    batch = shape[:-2]
    result = la.svd(cupy.put(a), full_matrices, method=method)
    assert type(result).__name__ == "SVDResult"
    u, s, vh = (cupy.get(r) for r in result)
    assert u.shape == batch + ((m, m) if full_matrices else (m, k))
    assert vh.shape == batch + ((n, n) if full_matrices else (k, n)) and s.shape == batch + (k,)
    assert u.dtype == vh.dtype == np.dtype(dtype) and s.dtype == np.dtype(REAL[dtype])
    assert_close_dtype((c(u)[..., :, :k] * s[..., None, :]) @ c(vh)[..., :k, :], a, dtype, 10)
    for gram in (mT(c(u)) @ c(u), c(vh) @ mT(c(vh))):
        assert_close_dtype(gram, eye_like(gram), dtype, 10)
    expected = np.linalg.svd(c(a), compute_uv=False)
    assert_close_dtype(s, expected, dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0)
    values = cupy.get(la.svd(cupy.put(a), full_matrices, compute_uv=False, method=method))
    assert values.shape == batch + (k,) and values.dtype == np.dtype(REAL[dtype])
    assert_close_dtype(values, expected, dtype, 10)
    assert_close_dtype(cupy.get(la.svdvals(cupy.put(a), method=method)), expected, dtype, 10)
    unchecked = cupy.get(la.svd(cupy.put(a), full_matrices, check=False, method=method).S)
    assert_close_dtype(unchecked, expected, dtype, 10)


def test_svd_runs_gesvd_where_gesvdj_does_not_converge(cupy, monkeypatch):
    from accelmath.linalg._device import spectral as _spectral

    checked = []

    def not_converged(info, count, stream):  # (as cuSOLVER's info codes would say)
        checked.append(count)
        return np.ones(count, np.int32)

    monkeypatch.setattr(_spectral, "read_info", not_converged)
    a = random((3, 40, 30), "float64")
    u, s, vh = (cupy.get(r) for r in la.svd(cupy.put(a), False))
    assert checked == [3]  # gesvdj ran, was checked, and gesvd wrote the results
    assert_close_dtype((u * s[..., None, :]) @ vh, a, "float64", 10)
    assert_close_dtype(s, np.linalg.svd(a, compute_uv=False), "float64", 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 5), (3, 5, 5), (40, 40)])
def test_svd_hermitian(cupy, dtype, shape):
    a = hermitian(shape, dtype)
    u, s, vh = (cupy.get(r) for r in la.svd(cupy.put(a), hermitian=True))
    assert u.shape == vh.shape == shape and s.shape == shape[:-1]
    assert u.dtype == vh.dtype == np.dtype(dtype) and s.dtype == np.dtype(REAL[dtype])
    assert_close_dtype((c(u) * s[..., None, :]) @ c(vh), a, dtype, 10)
    assert_close_dtype(mT(c(u)) @ c(u), eye_like(a), dtype, 10)
    assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)
    expected = np.linalg.svd(c(a), compute_uv=False)
    assert_close_dtype(s, expected, dtype, 10)
    assert_close_dtype(cupy.get(la.svd(cupy.put(a), compute_uv=False, hermitian=True)), expected,
                       dtype, 10)
