"""The host execution of accelmath.linalg._cpu: NumPy's results where nothing fails, the
failing matrix located, check=False results (NaN only where a matrix failed), SciPy's
functions over broadcast and zero-size batches."""

import numpy as np
import pytest
import scipy.linalg

from accelmath.errors import LinAlgError
from accelmath.linalg import _cpu


def _batch(rng, shape):
    return rng.standard_normal(shape) + 4 * np.eye(shape[-1])


def test_results_are_numpys_exactly():
    rng = np.random.default_rng()
    a = _batch(rng, (3, 4, 4))
    b = rng.standard_normal((3, 4, 2))
    np.testing.assert_array_equal(_cpu.solve(a, b, check=True), np.linalg.solve(a, b))
    np.testing.assert_array_equal(_cpu.inv(a, check=True), np.linalg.inv(a))
    h = a + np.swapaxes(a, -1, -2)
    for ours, numpys in zip(_cpu.eigh(h, uplo="U", check=True), np.linalg.eigh(h, "U")):
        np.testing.assert_array_equal(ours, numpys)


@pytest.mark.parametrize("function, failure, message", [
    (lambda a, check: _cpu.inv(a, check=check), np.zeros((3, 3)), "Singular matrix"),
    (lambda a, check: _cpu.solve(a, np.ones(3), check=check), np.ones((3, 3)),
     "Singular matrix"),
    (lambda a, check: _cpu.cholesky(a, upper=True, check=check), -np.eye(3),
     "Matrix is not positive definite"),
    (lambda a, check: _cpu.cho_factor(a, lower=False, check_finite=True, check=check),
     -np.eye(3), "Matrix is not positive definite"),
    (lambda a, check: _cpu.lu_factor(a, check_finite=True, check=check)[0], np.zeros((3, 3)),
     "Singular matrix")])
def test_a_failed_matrix_is_located(function, failure, message):
    rng = np.random.default_rng()
    a = _batch(rng, (2, 3, 3, 3))
    a = a @ np.swapaxes(a, -1, -2)  # positive definite
    a[1, 1] = failure
    a[1, 2] = failure
    with pytest.raises(LinAlgError, match=message) as e:
        function(a, True)
    assert e.value.index == (1, 1)
    result = function(a, False)
    assert np.isnan(result[1, 1]).all() and np.isnan(result[1, 2]).all()
    good = np.ones(result.shape[:2], bool)
    good[1, 1:] = False
    assert np.isfinite(result[good]).all()
    expected = function(a[good], True)
    np.testing.assert_allclose(result[good], expected, rtol=1e-12)


def test_check_false_eigh_keeps_both_results():
    a = np.eye(3)[None].repeat(2, axis=0)
    w, v = _cpu.eigh(a, uplo="L", check=False)
    assert w.shape == (2, 3) and v.shape == (2, 3, 3)


def test_lu_factor_pivots_are_scipys():
    rng = np.random.default_rng()
    a = rng.standard_normal((2, 5, 5)).astype(np.complex64)
    lu, piv = _cpu.lu_factor(a, check_finite=True, check=True)
    assert lu.dtype == np.complex64 and piv.dtype == np.int32
    for i in range(2):
        elu, epiv = scipy.linalg.lu_factor(a[i])
        np.testing.assert_array_equal(piv[i], epiv)
        np.testing.assert_array_equal(lu[i], elu)


@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6), (2, 3, 4, 4)])
def test_lu_factor_has_scipys_layout(shape):
    a = np.random.default_rng().standard_normal(shape)
    lu, _ = _cpu.lu_factor(a, check_finite=True, check=True)
    for index in np.ndindex(shape[:-2]):  # each matrix as SciPy factors it alone
        expected = scipy.linalg.lu_factor(a[index])[0]
        assert lu[index].strides == expected.strides and expected.flags.f_contiguous
        np.testing.assert_array_equal(lu[index], expected)
    # the matrices one after another, in C order over the batch
    assert lu.strides[:-2] == tuple(s * shape[-2] * shape[-1]
                                    for s in np.empty(shape[:-2], lu.dtype).strides)


def test_scipy_functions_broadcast_and_zero_size_batches():
    rng = np.random.default_rng()
    a = _batch(rng, (3, 1, 4, 4))
    b = rng.standard_normal((5, 4, 2))
    x = _cpu.solve_triangular(a, b, trans=0, lower=True, unit_diagonal=False,
                              check_finite=True)
    assert x.shape == (3, 5, 4, 2)
    np.testing.assert_allclose(np.tril(a) @ x, np.broadcast_to(b, x.shape), atol=1e-12)
    assert _cpu.lu_solve(np.zeros((0, 4, 4)), np.zeros((0, 4), np.int32), np.ones(4), trans=0,
                         check_finite=True).shape == (0, 4)
    assert _cpu.cho_solve(np.zeros((0, 4, 4)), np.ones((4, 1)), lower=True,
                          check_finite=True).shape == (0, 4, 1)


def test_lstsq_failure_is_an_accelmath_error(monkeypatch):
    # (NaN and Inf are refused before LAPACK: a failure of its SVD, made here)
    def fail(*args, **options):
        raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares")

    monkeypatch.setattr(_cpu._numpy, "lstsq", fail)
    with pytest.raises(LinAlgError, match="SVD did not converge in Linear Least Squares"):
        _cpu.lstsq(np.ones((3, 2)), np.ones(3), rcond=None)
